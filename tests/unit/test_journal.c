/*
 * test_journal.c: format, load (recovery), commit and checkpoint.
 * Description: on a 64 MiB image file, transactions committed with
 * tfs_journal_commit() come back at load; a torn last transaction is
 * dropped quietly, damage followed by later transactions is -EUCLEAN;
 * checkpoints go to newly allocated blocks and switch superblock copies,
 * giving back the blocks no copy names any more (J10), so that a crash (or a
 * lost superblock write) at any point leaves one complete state; the
 * load errors (-EINVAL, -EUCLEAN, -EPROTO) come with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc32c.h"
#include "format.h"
#include "io.h"
#include "journal.h"
#include "meta.h"
#include "testimg.h"

#define IMG_BYTES (64 * MiB)

struct fix {
	char path[64];
	struct tfs_dev *d;
	struct tfs_journal j;
	struct tfs_meta *m;
	struct tfs_alloc *a; /* the data area; checkpoints take from it */
	int loaded;
	uint64_t used; /* data blocks the committed extents map */
	uint64_t pblk; /* next made-up data block */
	char err[256];
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f || img_make(f->path, IMG_BYTES))
		return -1;
	if (tfs_dev_open(f->path, 0, &f->d) ||
	    tfs_journal_format(f->d, IMG_BYTES, 1000, 1000)) {
		unlink(f->path);
		return -1;
	}
	*state = f;
	return 0;
}

static void unload(struct fix *f)
{
	if (f->loaded)
		tfs_journal_release(&f->j);
	f->loaded = 0;
	tfs_alloc_free(f->a);
	f->a = NULL;
	tfs_meta_free(f->m);
	f->m = NULL;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	unload(f);
	tfs_dev_close(f->d);
	unlink(f->path);
	free(f);
	tfs_io_thread_exit();
	return 0;
}

/* (Re)load the journal into a fresh tree; returns tfs_journal_load(). */
static int load(struct fix *f)
{
	int rc;

	unload(f);
	f->m = tfs_meta_new();
	assert_non_null(f->m);
	f->err[0] = '\0';
	rc = tfs_journal_load(&f->j, f->d, f->m, 0, f->err, sizeof(f->err));
	f->loaded = rc == 0;
	if (rc)
		return rc;
	/* J10: the extents here are made up (no data), only the
	 * checkpoints' blocks are held */
	f->a = tfs_alloc_new(f->j.sb.data_start,
			     f->j.sb.dev_blocks - f->j.sb.data_start);
	assert_non_null(f->a);
	return tfs_journal_hold(&f->j, f->a, f->err, sizeof(f->err));
}

/* Load as a mount does: then mark the file system in use (not CLEAN). */
static void mount(struct fix *f)
{
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
}

/*
 * Commit a transaction that creates regular file ino named name in the
 * root, mapping 'blocks' data blocks, plus 'pad' bytes of xattr on it to
 * make it longer.  Returns the journal offset it went to, or -errno.
 */
static int64_t commit_file_pad(struct fix *f, uint64_t ino, const char *name,
			       uint64_t blocks, size_t pad)
{
	struct tfs_buf b = { 0 };
	struct tfs_attr a = { 0 };
	uint64_t nrec = 2, off = f->j.head;
	int rc;

	a.ino = ino;
	a.mode = S_IFREG | 0644;
	a.nlink = 1;
	a.size = blocks * TFS_BLOCK_SIZE;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	assert_int_equal(
	    tfs_rec_put_link(&b, TFS_ROOT_INO, ino, name, strlen(name)), 0);
	if (blocks) {
		uint64_t start = f->j.sb.data_start + f->pblk;

		assert_int_equal(
		    tfs_rec_put_extent(&b, ino, 0, start, blocks, 0), 0);
		nrec++;
	}
	while (pad) {
		size_t n = pad < 60000 ? pad : 60000;
		char xn[32];
		uint8_t *v = malloc(n);

		assert_non_null(v);
		memset(v, 0x77, n);
		snprintf(xn, sizeof(xn), "user.pad%zu", pad);
		assert_int_equal(
		    tfs_rec_put_xattr(&b, ino, xn, strlen(xn), v, n), 0);
		free(v);
		nrec++;
		pad -= n;
	}
	rc = tfs_journal_commit(&f->j, b.p, b.len, nrec, ino + 1,
				f->used + blocks, 0);
	tfs_buf_release(&b);
	if (rc)
		return rc;
	f->used += blocks;
	f->pblk += blocks;
	return (int64_t)off;
}

static int64_t commit_file(struct fix *f, uint64_t ino, const char *name)
{
	return commit_file_pad(f, ino, name, 1, 0);
}

/* Device offset of journal byte off. */
static uint64_t jdev(const struct fix *f, uint64_t off)
{
	return f->j.sb.journal_start * TFS_BLOCK_SIZE + off;
}

static struct tfs_inode *root(const struct fix *f)
{
	return tfs_meta_get(f->m, TFS_ROOT_INO);
}

static int has(const struct fix *f, const char *name)
{
	return tfs_dir_lookup(root(f), name, strlen(name)) != NULL;
}

/* ===== format ===== */

static void test_journal_format_then_load_gives_empty_root(void **state)
{
	struct fix *f = *state;
	struct tfs_inode *r;
	struct tfs_super sb;
	int copy = 0;

	assert_int_equal(load(f), 0);
	r = root(f);
	assert_non_null(r);
	assert_int_equal(r->a.mode, S_IFDIR | 0755);
	assert_int_equal(r->a.uid, 1000);
	assert_int_equal(r->a.gid, 1000);
	assert_int_equal(r->a.nlink, 2);
	assert_int_equal(r->a.parent, TFS_ROOT_INO);
	assert_true(r->a.mtime.sec > 1600000000);
	assert_int_equal(tfs_dir_count(r), 0);
	assert_int_equal(tfs_meta_inodes(f->m), 1);
	assert_int_equal(tfs_meta_used_blocks(f->m), 0);
	assert_int_equal(f->j.replayed, 0);
	assert_int_equal(f->j.head, 0);
	assert_int_equal(f->j.sb.flags, TFS_SB_CLEAN);
	/* J10: the first checkpoint is one block at the data area's start */
	assert_int_equal(f->j.sb.npieces, 1);
	assert_int_equal(f->j.sb.map[0].start, f->j.sb.data_start);
	assert_int_equal(f->j.sb.map[0].len, 1);
	assert_int_equal(tfs_journal_held_blocks(&f->j), 1);
	assert_int_equal(tfs_alloc_free_blocks(f->a),
			 f->j.sb.dev_blocks - f->j.sb.data_start - 1);
	assert_int_equal(f->j.sb.dev_blocks, IMG_BYTES / TFS_BLOCK_SIZE);
	assert_int_equal(f->j.sb.ckpt_seq, f->j.seq);
	assert_int_equal(tfs_journal_free(&f->j),
			 f->j.sb.journal_blocks * TFS_BLOCK_SIZE);
	/* both superblock copies are valid from the start */
	{
		uint8_t b[2][TFS_BLOCK_SIZE];
		struct tfs_super s0, s1;

		assert_int_equal(img_pread(f->path, 0, b, sizeof(b)), 0);
		assert_int_equal(tfs_super_decode(b[0], &s0), 0);
		assert_int_equal(tfs_super_decode(b[1], &s1), 0);
		assert_true(tfs_super_same_ckpt(&s0, &s1));
		assert_int_equal(s0.ckpt_crc, s1.ckpt_crc);
		assert_memory_equal(s0.uuid, s1.uuid, 16);
		/* the copy (generation & 1) holds that generation */
		assert_int_equal(s0.generation & 1, 0);
		assert_int_equal(s1.generation & 1, 1);
	}
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(sb.generation, f->j.sb.generation);
}

static void test_journal_format_rejects_small_device(void **state)
{
	char path[64];
	struct tfs_dev *d;

	(void)state;
	assert_int_equal(img_make(path, 32 * MiB), 0);
	assert_int_equal(tfs_dev_open(path, 0, &d), 0);
	assert_int_equal(tfs_journal_format(d, 32 * MiB, 0, 0), -ENOSPC);
	tfs_dev_close(d);
	unlink(path);
}

static void test_journal_format_uses_only_the_bytes_asked(void **state)
{
	char path[64];
	struct fix g = { 0 };

	(void)state;
	assert_int_equal(img_make(path, 100 * MiB), 0);
	strcpy(g.path, path);
	assert_int_equal(tfs_dev_open(path, 0, &g.d), 0);
	assert_int_equal(tfs_journal_format(g.d, 70 * MiB, 0, 0), 0);
	assert_int_equal(load(&g), 0);
	assert_int_equal(g.j.sb.dev_blocks, 70 * MiB / TFS_BLOCK_SIZE);
	unload(&g);
	/* more than the device has: the device's size */
	assert_int_equal(tfs_journal_format(g.d, 1ull << 40, 0, 0), 0);
	assert_int_equal(load(&g), 0);
	assert_int_equal(g.j.sb.dev_blocks, 100 * MiB / TFS_BLOCK_SIZE);
	unload(&g);
	tfs_dev_close(g.d);
	unlink(path);
}

/* ===== load errors ===== */

static void test_journal_load_rejects_non_tensorfs(void **state)
{
	struct fix *f = *state;
	uint8_t zero[2 * TFS_BLOCK_SIZE] = { 0 };
	char path[64];
	struct fix g = { 0 };

	assert_int_equal(img_pwrite(f->path, 0, zero, sizeof(zero)), 0);
	assert_int_equal(load(f), -EINVAL);
	assert_non_null(strstr(f->err, "not a tensorfs"));
	assert_non_null(strstr(f->err, "mkfs.tensorfs"));
	/* too small to hold a superblock at all, whole blocks or not (a
	 * 3000-byte file is no "0 bytes", what the device layer rounds it
	 * down to) */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(img_make(path, i ? 3000 : 4096), 0);
		assert_int_equal(tfs_dev_open(path, 0, &g.d), 0);
		assert_int_equal(load(&g), -EINVAL);
		assert_non_null(strstr(g.err, "not a tensorfs"));
		assert_non_null(strstr(g.err, "under 8 KiB"));
		unload(&g);
		tfs_dev_close(g.d);
		unlink(path);
	}
}

/* Protects J8 (the device is as big as the file system). */
static void test_journal_load_rejects_truncated_image(void **state)
{
	struct fix *f = *state;

	tfs_dev_close(f->d);
	assert_int_equal(truncate(f->path, IMG_BYTES - MiB), 0);
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "truncated"));
}

static void test_journal_unknown_version_is_eproto(void **state)
{
	struct fix *f = *state;
	uint8_t b[TFS_BLOCK_SIZE];

	for (int c = 0; c < 2; c++) {
		assert_int_equal(img_pread(f->path,
					   (uint64_t)c * TFS_BLOCK_SIZE, b,
					   sizeof(b)),
				 0);
		tfs_put32(b + 8, TFS_VERSION + 1);
		tfs_put32(b + 4092, tfs_crc32c(0, b, 4092));
		assert_int_equal(img_pwrite(f->path,
					    (uint64_t)c * TFS_BLOCK_SIZE, b,
					    sizeof(b)),
				 0);
	}
	assert_int_equal(load(f), -EPROTO);
	assert_non_null(strstr(f->err, "version"));
	assert_non_null(strstr(f->err, "use a newer tensorfs"));
}

/* Format version 1 (fixed checkpoint slots): refused, saying what to do;
 * its slot fields are never read as a map. */
static void test_journal_version_1_is_refused_with_what_to_do(void **state)
{
	struct fix *f = *state;
	uint8_t b[TFS_BLOCK_SIZE];

	for (int c = 0; c < 2; c++) {
		assert_int_equal(img_pread(f->path,
					   (uint64_t)c * TFS_BLOCK_SIZE, b,
					   sizeof(b)),
				 0);
		tfs_put32(b + 8, 1);
		tfs_put32(b + 4092, tfs_crc32c(0, b, 4092));
		assert_int_equal(img_pwrite(f->path,
					    (uint64_t)c * TFS_BLOCK_SIZE, b,
					    sizeof(b)),
				 0);
	}
	assert_int_equal(load(f), -EPROTO);
	assert_non_null(strstr(f->err, "made by an older mkfs.tensorfs"));
	assert_non_null(strstr(f->err, "recreate it with mkfs.tensorfs"));
}

/* Protects J8. */
static void test_journal_both_superblocks_corrupt_is_euclean(void **state)
{
	struct fix *f = *state;

	assert_int_equal(img_flip(f->path, 200), 0);
	assert_int_equal(img_flip(f->path, TFS_BLOCK_SIZE + 300), 0);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "superblock"));
}

/* J8: both checkpoints damaged is -EUCLEAN, naming both copies. */
static void test_journal_corrupt_checkpoint_is_euclean(void **state)
{
	struct fix *f = *state;
	struct tfs_super sb, older;
	int copy = 0;
	char want[96];

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_int_equal(load(f), 0); /* commit does not touch f->m */
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, TFS_SB_CLEAN), 0);
	unload(f);
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(img_super_copy(f->path, copy ^ 1, &older), 0);
	/* J10: two checkpoints, on different blocks */
	assert_false(tfs_super_same_ckpt(&sb, &older));
	assert_true(sb.map[0].start != older.map[0].start);
	/* a byte in the middle of the records of each */
	assert_int_equal(img_flip(f->path, img_ckpt_off(&sb, sb.ckpt_len / 2)),
			 0);
	assert_int_equal(img_flip(f->path, img_ckpt_off(&older, 100)), 0);
	assert_int_equal(load(f), -EUCLEAN);
	snprintf(want, sizeof(want),
		 "checkpoint of superblock generation %llu "
		 "is corrupted",
		 (unsigned long long)sb.generation);
	assert_non_null(strstr(f->err, want));
	snprintf(want, sizeof(want),
		 "older superblock copy's (generation "
		 "%llu)",
		 (unsigned long long)older.generation);
	assert_non_null(strstr(f->err, want));
	assert_int_equal(img_flip(f->path, img_ckpt_off(&older, 100)), 0);
	/* bytes of the last block past the checkpoint's length do not
	 * matter */
	assert_int_equal(img_flip(f->path, img_ckpt_off(&sb, sb.ckpt_len / 2)),
			 0);
	assert_true(sb.ckpt_len % TFS_BLOCK_SIZE != 0);
	assert_int_equal(img_flip(f->path, img_ckpt_off(&sb, sb.ckpt_len)), 0);
	assert_int_equal(load(f), 0);
	assert_true(has(f, "a"));
}

/* Protects J2, J9. */
static void
test_journal_transaction_that_does_not_apply_is_euclean(void **state)
{
	struct fix *f = *state;
	struct tfs_buf b = { 0 };

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	/* a valid transaction (good CRC) linking a missing inode */
	assert_int_equal(tfs_rec_put_link(&b, TFS_ROOT_INO, 99, "ghost", 5), 0);
	assert_int_equal(
	    tfs_journal_commit(&f->j, b.p, b.len, 1, 100, f->used, 0), 0);
	tfs_buf_release(&b);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "does not apply"));
}

/* Protects J2. */
static void test_journal_record_count_mismatch_is_euclean(void **state)
{
	struct fix *f = *state;
	struct tfs_buf b = { 0 };
	struct tfs_attr a = { 0 };

	mount(f);
	a.ino = 2;
	a.mode = S_IFREG;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	assert_int_equal(tfs_journal_commit(&f->j, b.p, b.len, 2, 3, 0, 0), 0);
	tfs_buf_release(&b);
	assert_int_equal(load(f), -EUCLEAN);
}

/* Protects J2, J6. */
static void test_journal_used_blocks_mismatch_is_euclean(void **state)
{
	struct fix *f = *state;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	f->used += 5; /* the next header claims 5 blocks too many */
	assert_true(commit_file(f, 3, "b") >= 0);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "blocks"));
}

/* ===== replay ===== */

/* TFS_JLOAD_NO_REPLAY (a mount's ro,norecovery): the checkpoint as it
 * is, the transactions after it counted, not applied. */
static void test_journal_no_replay_counts_and_leaves_the_tree(void **state)
{
	struct fix *f = *state;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_true(commit_file(f, 3, "b") >= 0);
	unload(f);
	f->m = tfs_meta_new();
	assert_non_null(f->m);
	assert_int_equal(tfs_journal_load(&f->j, f->d, f->m,
					  TFS_JLOAD_NO_REPLAY, f->err,
					  sizeof(f->err)),
			 0);
	f->loaded = 1;
	assert_int_equal(f->j.skipped, 2);
	assert_int_equal(f->j.replayed, 0);
	assert_null(tfs_meta_get(f->m, 2));
	assert_null(tfs_meta_get(f->m, 3));
	/* and a normal load still replays both */
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 2);
	assert_non_null(tfs_meta_get(f->m, 3));
}

/* Rewrite both superblock copies (a copy never written is left alone)
 * through edit. */
static void edit_supers(struct fix *f, void (*edit)(struct tfs_super *))
{
	uint8_t b[TFS_BLOCK_SIZE];
	struct tfs_super sb;

	for (int c = 0; c < 2; c++) {
		assert_int_equal(img_pread(f->path,
					   (uint64_t)c * TFS_BLOCK_SIZE, b,
					   sizeof(b)),
				 0);
		if (tfs_super_decode(b, &sb))
			continue;
		edit(&sb);
		tfs_super_encode(&sb, b);
		assert_int_equal(img_pwrite(f->path,
					    (uint64_t)c * TFS_BLOCK_SIZE, b,
					    sizeof(b)),
				 0);
	}
}

/* Format version 2 (one device, no member fields), as an older
 * mkfs.tensorfs left it. */
static void to_version2(struct tfs_super *sb)
{
	sb->version = TFS_VERSION_V2;
}

/* Member 0 of a set of two whose member 2 is not given. */
static void to_set_of_two(struct tfs_super *sb)
{
	sb->nmembers = 2;
	sb->member_blocks[1] = 4096;
}

/* A version-2 file system keeps loading, committing and checkpointing,
 * and stays version 2 (item 5 of sets: no "recreate it"). */
static void test_journal_version2_stays_version2(void **state)
{
	struct fix *f = *state;
	uint8_t b[TFS_BLOCK_SIZE];

	edit_supers(f, to_version2);
	mount(f);
	assert_int_equal(f->j.sb.version, 2);
	assert_int_equal(f->j.sb.nmembers, 1);
	assert_int_equal(commit_file(f, 2, "a"), 0);
	/* the tree as replayed (commits here do not change f->m) */
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(commit_file(f, 3, "b"), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, TFS_SB_CLEAN), 0);
	for (int c = 0; c < 2; c++) {
		assert_int_equal(img_pread(f->path,
					   (uint64_t)c * TFS_BLOCK_SIZE, b,
					   sizeof(b)),
				 0);
		assert_int_equal(tfs_super_version(b), 2);
	}
	assert_int_equal(load(f), 0);
	assert_true(has(f, "a") && has(f, "b"));
}

/* One member of a set given alone, or a set missing a member: refused,
 * naming what to give. */
static void test_journal_set_member_alone_is_refused(void **state)
{
	struct fix *f = *state;

	edit_supers(f, to_set_of_two);
	assert_int_equal(load(f), -EINVAL);
	assert_non_null(strstr(f->err, "set of 2 devices and 1 was given"));
	assert_non_null(strstr(f->err, "DEV1:DEV2"));
}

/* Protects J2. */
static void test_journal_replays_committed_transactions(void **state)
{
	struct fix *f = *state;
	uint64_t seq0, head;

	mount(f);
	seq0 = f->j.seq;
	assert_int_equal(commit_file(f, 2, "a"), 0);
	assert_int_equal(commit_file(f, 3, "b"), TFS_BLOCK_SIZE);
	assert_int_equal(commit_file_pad(f, 4, "c", 3, 10000),
			 2 * TFS_BLOCK_SIZE);
	head = f->j.head;
	assert_int_equal(head, 2 * TFS_BLOCK_SIZE + 3 * TFS_BLOCK_SIZE);
	assert_int_equal(f->j.seq, seq0 + 3);

	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 3);
	assert_int_equal(f->j.head, head);
	assert_int_equal(f->j.seq, seq0 + 3);
	assert_true(has(f, "a") && has(f, "b") && has(f, "c"));
	assert_int_equal(tfs_meta_used_blocks(f->m), 5);
	assert_int_equal(tfs_meta_get(f->m, 4)->nxattrs, 1);
	assert_true(tfs_meta_next_ino(f->m) >= 5);
	/* commits go on after the replayed ones */
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(commit_file(f, 5, "d"), (int64_t)head);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 4);
	assert_true(has(f, "d"));
}

static void test_journal_next_ino_comes_from_the_headers(void **state)
{
	struct fix *f = *state;
	struct tfs_buf b = { 0 };
	struct tfs_attr a = { 0 };

	mount(f);
	a.ino = 2;
	a.mode = S_IFREG;
	a.nlink = 0;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	/* inode 2 was made, numbers up to 4999 were given out and freed */
	assert_int_equal(tfs_journal_commit(&f->j, b.p, b.len, 1, 5000, 0, 1),
			 0);
	tfs_buf_release(&b);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_meta_next_ino(f->m), 5000);
	/* and from the checkpoint header */
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_meta_next_ino(f->m), 5000);
}

/* Protects J2. */
static void test_journal_ignores_torn_tail(void **state)
{
	struct fix *f = *state;
	int64_t off;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_true(commit_file(f, 3, "b") >= 0);
	off = commit_file(f, 4, "c");
	assert_true(off >= 0);
	/* the last write was torn: one byte of its payload is wrong */
	assert_int_equal(img_flip(f->path, jdev(f, (uint64_t)off) + 100), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 2);
	assert_true(has(f, "a") && has(f, "b"));
	assert_false(has(f, "c"));
	assert_int_equal(tfs_meta_used_blocks(f->m), 2);
	/* the next commit takes the torn one's place */
	assert_int_equal(f->j.head, (uint64_t)off);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	f->used = 2;
	assert_int_equal(commit_file(f, 5, "e"), off);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 3);
	assert_true(has(f, "e"));
	assert_false(has(f, "c"));
}

/* Protects J2. */
static void test_journal_ignores_torn_multiblock_tail(void **state)
{
	struct fix *f = *state;
	uint8_t zero[TFS_BLOCK_SIZE] = { 0 };
	int64_t off;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	off = commit_file_pad(f, 3, "big", 1, 5 * TFS_BLOCK_SIZE);
	assert_true(off >= 0);
	assert_int_equal(f->j.head - (uint64_t)off, 6 * TFS_BLOCK_SIZE);
	/* only the first blocks reached the device: the rest is zeros */
	assert_int_equal(img_pwrite(f->path,
				    jdev(f, f->j.head) - TFS_BLOCK_SIZE, zero,
				    sizeof(zero)),
			 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "a"));
	assert_false(has(f, "big"));
}

/* Protects J2. */
static void test_journal_detects_corruption_in_the_middle(void **state)
{
	struct fix *f = *state;
	int64_t off;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	off = commit_file(f, 3, "b");
	assert_true(off >= 0);
	assert_true(commit_file(f, 4, "c") >= 0);
	assert_true(commit_file(f, 5, "d") >= 0);
	/* damage to transaction 2 of 4: committed work would be lost */
	assert_int_equal(img_flip(f->path, jdev(f, (uint64_t)off) + 70), 0);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "journal is corrupted"));
	/* a damaged header (its seq) is caught the same way */
	assert_int_equal(img_flip(f->path, jdev(f, (uint64_t)off) + 70), 0);
	assert_int_equal(img_flip(f->path, jdev(f, (uint64_t)off) + 8), 0);
	assert_int_equal(load(f), -EUCLEAN);
	assert_non_null(strstr(f->err, "journal is corrupted"));
}

static void test_journal_large_transaction_beyond_scratch_buffer(void **state)
{
	struct fix *f = *state;
	struct tfs_buf b = { 0 };
	uint64_t n = 0;
	char name[32];

	mount(f);
	/* 1.5 MiB of records: more than the 1 MiB scratch buffer */
	for (uint64_t ino = 2; b.len < 3 * MiB / 2; ino++) {
		struct tfs_attr a = { 0 };
		int k = snprintf(name, sizeof(name), "f%llu",
				 (unsigned long long)ino);

		a.ino = ino;
		a.mode = S_IFREG | 0600;
		a.nlink = 1;
		assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
		assert_int_equal(
		    tfs_rec_put_link(&b, TFS_ROOT_INO, ino, name, (size_t)k),
		    0);
		n++;
	}
	assert_int_equal(
	    tfs_journal_commit(&f->j, b.p, b.len, 2 * n, n + 2, 0, 1), 0);
	tfs_buf_release(&b);
	assert_true(commit_file(f, n + 2, "after") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 2);
	assert_int_equal(tfs_dir_count(root(f)), n + 1);
	assert_true(has(f, "f2") && has(f, "after"));
}

/* Protects J2, J4. */
static void test_journal_commit_when_full_is_enospc(void **state)
{
	struct fix *f = *state;
	uint64_t jbytes, head;
	int count = 0, rc;

	mount(f);
	jbytes = f->j.sb.journal_blocks * TFS_BLOCK_SIZE;
	for (;;) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", count);
		head = f->j.head;
		rc = (int)commit_file_pad(f, 2 + (uint64_t)count, name, 0,
					  200000);
		if (rc < 0)
			break;
		count++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(count > 5);
	/* nothing moved: the transaction was not written */
	assert_int_equal(f->j.head, head);
	assert_int_equal(tfs_journal_free(&f->j), jbytes - head);
	assert_true(tfs_journal_free(&f->j) < 200000 + 2 * TFS_BLOCK_SIZE);
	/* a small one still fits */
	if (tfs_journal_free(&f->j) >= TFS_BLOCK_SIZE)
		assert_true(commit_file_pad(f, 1000, "small", 0, 0) >= 0);
	assert_int_equal(load(f), 0);
	assert_true(f->j.replayed >= (uint64_t)count);
	assert_int_equal(tfs_dir_count(root(f)), f->j.replayed);
	/* a checkpoint empties the journal */
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(tfs_journal_free(&f->j), jbytes);
}

/* ===== checkpoints ===== */

/* Protects J3, J4. */
static void test_journal_checkpoint_takes_new_blocks(void **state)
{
	struct fix *f = *state;
	uint64_t gen, seq, free0;
	struct tfs_super sb;
	static struct tfs_super first, second, third;
	int copy = 0;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_true(commit_file(f, 3, "b") >= 0);
	assert_true(commit_file(f, 4, "c") >= 0);
	assert_int_equal(load(f), 0);
	gen = f->j.sb.generation;
	seq = f->j.seq;
	first = f->j.sb;
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	/* J10: new blocks, the old checkpoint's still held by the other
	 * superblock copy */
	assert_false(tfs_super_same_ckpt(&f->j.sb, &first));
	assert_int_equal(tfs_journal_held_blocks(&f->j),
			 tfs_super_map_blocks(&first) +
			     tfs_super_map_blocks(&f->j.sb));
	assert_int_equal(f->j.sb.generation, gen + 1);
	/* J3: a number of its own, above every transaction before it */
	assert_int_equal(f->j.sb.ckpt_seq, seq + 1);
	assert_int_equal(f->j.seq, seq + 1);
	assert_int_equal(f->j.head, 0);
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_true(tfs_super_same_ckpt(&sb, &f->j.sb));
	assert_int_equal(sb.generation, gen + 1);
	assert_int_equal(copy, (int)((gen + 1) & 1));

	/* the checkpoint alone holds the tree now */
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 0);
	assert_true(has(f, "a") && has(f, "b") && has(f, "c"));
	assert_int_equal(tfs_meta_used_blocks(f->m), 3);

	/* new transactions overwrite the old ones from the start; the old
	 * ones further on have lower seqs: neither replayed nor taken for
	 * damage */
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(commit_file(f, 5, "d"), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "d") && has(f, "a"));

	/* J10: both copies name the second checkpoint (set_flags wrote the
	 * other): a third one takes new blocks and frees none; a fourth
	 * replaces the copy naming the second, whose blocks go back */
	second = f->j.sb;
	free0 = tfs_alloc_free_blocks(f->a);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	third = f->j.sb;
	assert_false(tfs_super_same_ckpt(&third, &second));
	assert_int_equal(tfs_alloc_free_blocks(f->a),
			 free0 - tfs_super_map_blocks(&third));
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, TFS_SB_CLEAN), 0);
	assert_int_equal(tfs_alloc_free_blocks(f->a),
			 free0 - tfs_super_map_blocks(&third) -
			     tfs_super_map_blocks(&f->j.sb) +
			     tfs_super_map_blocks(&second));
	assert_int_equal(tfs_journal_held_blocks(&f->j),
			 tfs_super_map_blocks(&third) +
			     tfs_super_map_blocks(&f->j.sb));
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.sb.flags, TFS_SB_CLEAN);
	assert_int_equal(f->j.replayed, 0);
	assert_int_equal(tfs_dir_count(root(f)), 4);
}

static void test_journal_checkpoint_larger_than_a_chunk(void **state)
{
	struct fix *f = *state;
	struct tfs_inode *r;
	char name[32];

	mount(f);
	r = root(f);
	/* about 2.6 MiB of records: written in several 1 MiB pieces */
	for (uint64_t ino = 2; ino < 20002; ino++) {
		struct tfs_attr a = { 0 };
		struct tfs_inode *ip;
		int k = snprintf(name, sizeof(name), "file-%llu",
				 (unsigned long long)ino);

		a.ino = ino;
		a.mode = S_IFREG | 0644;
		a.nlink = 1;
		a.size = 4096;
		ip = tfs_meta_add(f->m, &a);
		assert_non_null(ip);
		assert_int_equal(tfs_dir_add(f->m, r, name, (size_t)k, ino), 0);
		assert_int_equal(tfs_meta_map(f->m, ip, 0,
					      f->j.sb.data_start + ino, 1, 0,
					      NULL, NULL),
				 0);
	}
	assert_true(tfs_meta_bytes(f->m) > 2 * MiB);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(f->j.sb.ckpt_len, tfs_meta_bytes(f->m));
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_meta_inodes(f->m), 20001);
	assert_int_equal(tfs_meta_used_blocks(f->m), 20000);
	assert_int_equal(tfs_dir_count(root(f)), 20000);
	assert_true(has(f, "file-2") && has(f, "file-20001"));
	assert_int_equal(tfs_meta_get(f->m, 12345)->map.ext[0].pblk,
			 f->j.sb.data_start + 12345);
}

/* Take every free block of the allocator but 'keep' single blocks,
 * every other one (so no two are adjacent). */
static void fill_alloc(struct fix *f, uint64_t keep)
{
	uint64_t start, n, first = UINT64_MAX;

	for (;;) {
		n = UINT64_MAX >> 1;
		if (tfs_alloc_get(f->a, UINT64_MAX, &start, &n))
			break;
		if (first == UINT64_MAX && n >= 2 * keep)
			first = start;
	}
	assert_true(first != UINT64_MAX || keep == 0);
	for (uint64_t i = 0; i < keep; i++)
		assert_int_equal(tfs_alloc_put(f->a, first + 2 * i, 1), 0);
	assert_int_equal(tfs_alloc_free_blocks(f->a), keep);
}

/* Protects J4, J10: a checkpoint that the free space cannot hold, or
 * not in TFS_MAP_MAX pieces, is -ENOSPC and changes nothing. */
static void test_journal_checkpoint_too_big_is_enospc(void **state)
{
	struct fix *f = *state;
	struct tfs_inode *r;
	uint64_t gen, need;
	struct tfs_super sb;
	int copy = 0;

	mount(f);
	assert_true(commit_file(f, 2, "kept") >= 0);
	assert_int_equal(load(f), 0);
	gen = f->j.sb.generation;
	r = root(f);
	for (uint64_t ino = 10;
	     tfs_meta_bytes(f->m) <= (TFS_MAP_MAX + 1) * TFS_BLOCK_SIZE;
	     ino++) {
		struct tfs_attr a = { 0 };
		char name[32];
		int k = snprintf(name, sizeof(name), "n%llu",
				 (unsigned long long)ino);

		a.ino = ino;
		a.mode = S_IFREG;
		a.nlink = 1;
		assert_non_null(tfs_meta_add(f->m, &a));
		assert_int_equal(tfs_dir_add(f->m, r, name, (size_t)k, ino), 0);
	}
	need = tfs_journal_ckpt_blocks(tfs_meta_bytes(f->m));
	/* enough blocks, but in more than TFS_MAP_MAX pieces */
	fill_alloc(f, need);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), -ENOSPC);
	assert_int_equal(tfs_alloc_free_blocks(f->a), need);
	/* not enough blocks, one piece */
	assert_int_equal(tfs_alloc_put(f->a, f->j.sb.dev_blocks - need, need),
			 0);
	fill_alloc(f, 0);
	assert_int_equal(
	    tfs_alloc_put(f->a, f->j.sb.dev_blocks - need + 1, need - 1), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), -ENOSPC);
	assert_int_equal(tfs_alloc_free_blocks(f->a), need - 1);
	/* the superblock did not move */
	assert_int_equal(f->j.sb.generation, gen);
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(sb.generation, gen);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_dir_count(root(f)), 1);
	assert_true(has(f, "kept"));
	/* TFS_MAP_MAX pieces are fine */
	fill_alloc(f, TFS_MAP_MAX);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(f->j.sb.npieces, 1);
	assert_int_equal(load(f), 0);
	assert_true(has(f, "kept"));
}

/* The two superblock copies, for putting back. */
static void save_supers(const struct fix *f, uint8_t b[2][TFS_BLOCK_SIZE])
{
	assert_int_equal(img_pread(f->path, 0, b, 2 * TFS_BLOCK_SIZE), 0);
}

static void restore_supers(const struct fix *f, uint8_t b[2][TFS_BLOCK_SIZE])
{
	assert_int_equal(img_pwrite(f->path, 0, b, 2 * TFS_BLOCK_SIZE), 0);
}

/* Protects J4, J5. */
static void
test_journal_lost_superblock_write_keeps_previous_state(void **state)
{
	struct fix *f = *state;
	static uint8_t old[2][TFS_BLOCK_SIZE];
	static struct tfs_super before;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_true(commit_file(f, 3, "b") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	before = f->j.sb;
	save_supers(f, old);
	/*
	 * A crash after the checkpoint reached its new blocks but before
	 * its superblock did: the old superblock still names the old
	 * checkpoint and the journal after it, both untouched.
	 */
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	restore_supers(f, old);
	assert_int_equal(load(f), 0);
	assert_true(tfs_super_same_ckpt(&f->j.sb, &before));
	assert_int_equal(f->j.replayed, 2);
	assert_true(has(f, "a") && has(f, "b"));
}

/* Protects J4, J8. */
static void test_journal_torn_superblock_falls_back_to_other_copy(void **state)
{
	struct fix *f = *state;
	struct tfs_super sb;
	uint64_t gen;
	int copy = 0;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_true(commit_file(f, 3, "b") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	gen = f->j.sb.generation;
	unload(f);
	/* the newest copy (the checkpoint's) is torn */
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(sb.generation, gen);
	assert_int_equal(
	    img_flip(f->path, (uint64_t)copy * TFS_BLOCK_SIZE + 90), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.sb.generation, gen - 1);
	assert_false(tfs_super_same_ckpt(&f->j.sb, &sb));
	assert_int_equal(f->j.replayed, 2);
	assert_true(has(f, "a") && has(f, "b"));
	unload(f);
	/* the older copy torn instead: the newest is used */
	assert_int_equal(
	    img_flip(f->path, (uint64_t)copy * TFS_BLOCK_SIZE + 90), 0);
	assert_int_equal(
	    img_flip(f->path, (uint64_t)(copy ^ 1) * TFS_BLOCK_SIZE + 90), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.sb.generation, gen);
	assert_true(tfs_super_same_ckpt(&f->j.sb, &sb));
	assert_int_equal(f->j.replayed, 0);
	assert_true(has(f, "a") && has(f, "b"));
}

/* Protects J4, J7 (a failed checkpoint write is retried), J10 (its
 * blocks go back). */
static void
test_journal_failed_checkpoint_write_keeps_previous_state(void **state)
{
	struct fix *f = *state;
	static struct tfs_super before;
	uint64_t gen, free0;
	int rc;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	gen = f->j.sb.generation;
	before = f->j.sb;
	free0 = tfs_alloc_free_blocks(f->a);
	/* the device fails in the data area, where checkpoints go */
	tfs_dev_fail_writes(f->d, f->j.sb.data_start * TFS_BLOCK_SIZE, EIO);
	rc = tfs_journal_checkpoint(&f->j, f->m, 0);
	tfs_dev_fail_writes(f->d, 0, 0);
	assert_int_equal(rc, -EIO);
	assert_int_equal(f->j.sb.generation, gen);
	assert_true(tfs_super_same_ckpt(&f->j.sb, &before));
	assert_int_equal(tfs_alloc_free_blocks(f->a), free0);
	/* retried: it works */
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 0);
	assert_true(has(f, "a"));
	/* a failed write without a retry: the old state, with its journal */
	assert_true(commit_file(f, 3, "b") >= 0);
	assert_int_equal(load(f), 0);
	before = f->j.sb;
	tfs_dev_fail_writes(f->d, f->j.sb.data_start * TFS_BLOCK_SIZE, EIO);
	rc = tfs_journal_checkpoint(&f->j, f->m, 0);
	tfs_dev_fail_writes(f->d, 0, 0);
	assert_int_equal(rc, -EIO);
	assert_int_equal(load(f), 0);
	assert_true(tfs_super_same_ckpt(&f->j.sb, &before));
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "a"));
}

/* Apply to m the records commit_file() commits: a file named name. */
static void apply_file(struct tfs_meta *m, uint64_t ino, const char *name)
{
	struct tfs_buf b = { 0 };
	struct tfs_attr a = { 0 };
	struct tfs_rec r;
	size_t pos = 0;

	a.ino = ino;
	a.mode = S_IFREG | 0644;
	a.nlink = 1;
	assert_int_equal(tfs_rec_put_inode(&b, &a), 0);
	assert_int_equal(
	    tfs_rec_put_link(&b, TFS_ROOT_INO, ino, name, strlen(name)), 0);
	while (tfs_rec_next(b.p, b.len, &pos, &r) == 1)
		assert_int_equal(tfs_meta_apply(m, &r, NULL, NULL), 0);
	tfs_buf_release(&b);
}

/*
 * J3, J7: a transaction whose write failed burns its seq and fills the
 * journal (part of it may be on the device); the retry is a checkpoint
 * past that seq, so replay never sees the failed one.
 */
static void test_journal_commit_io_error_is_returned_and_retried(void **state)
{
	struct fix *f = *state;
	uint64_t seq;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	seq = f->j.seq;
	tfs_dev_fail_writes(f->d, jdev(f, 0), EIO);
	assert_int_equal(commit_file(f, 3, "b"), -EIO);
	tfs_dev_fail_writes(f->d, 0, 0);
	assert_int_equal(f->j.seq, seq + 1);
	assert_int_equal(tfs_journal_free(&f->j), 0);
	assert_int_equal(f->j.err, 0); /* a write error is retried */
	/* no transaction may follow one whose end is unknown */
	assert_int_equal(commit_file(f, 4, "c"), -ENOSPC);
	/* the retry: a checkpoint of the tree with b, past b's seq */
	apply_file(f->m, 3, "b");
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_true(f->j.sb.ckpt_seq > seq);
	assert_int_equal(commit_file(f, 4, "c"), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "a") && has(f, "b") && has(f, "c"));
}

/* ===== the two failed-flush bugs (issue: one failed flush) ===== */

/*
 * Found 1: on an idle file system (journal empty) a transaction is
 * written, its flush fails.  It was: fsync EIO, the next commit a
 * checkpoint holding the transaction but recording its seq with an
 * empty journal, so load replayed it a second time ("journal transaction
 * N does not apply to the tree").  Now (J3, J7) the seq is burnt and the
 * journal stops; whatever of it reached the device, the image loads.
 */
static void
test_failed_flush_after_transaction_leaves_mountable_image(void **state)
{
	struct fix *f = *state;
	int rc;

	mount(f);
	assert_int_equal(f->j.head, 0);
	tfs_dev_fail_flushes(f->d, 0, 1);
	assert_int_equal(commit_file_pad(f, 2, "a", 0, 0), -EIO);
	assert_int_equal(f->j.err, -EIO);
	assert_non_null(strstr(f->j.why, "flush after a journal transaction"));
	/* what a mount does next: a checkpoint of a tree holding "a" */
	apply_file(f->m, 2, "a");
	rc = tfs_journal_checkpoint(&f->j, f->m, 0);
	/* J7: stopped, nothing written */
	assert_int_equal(rc, -EIO);
	assert_int_equal(commit_file(f, 3, "b"), -EIO);
	assert_int_equal(tfs_journal_set_flags(&f->j, TFS_SB_CLEAN), -EIO);
	/* the transaction reached the device here: replayed once */
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "a"));
	assert_int_equal(tfs_dir_count(root(f)), 1);
	/* and the image works on */
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 0);
	assert_true(has(f, "a"));
}

/*
 * Found 2: a checkpoint's superblock flush fails, and that superblock
 * never reaches the medium.  It was: the next checkpoint went to the
 * slot the on-disk superblock still named, and after a power cut load
 * found it corrupted and the file committed before any fault lost.  Now
 * (J5, J7) nothing more is written.
 */
static void
test_failed_superblock_flush_then_power_cut_keeps_the_tree(void **state)
{
	struct fix *f = *state;
	static uint8_t old[2][TFS_BLOCK_SIZE];

	mount(f);
	assert_true(commit_file(f, 2, "kept") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	save_supers(f, old);
	/* the checkpoint's flush passes, the superblock's fails */
	tfs_dev_fail_flushes(f->d, 1, 1);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), -EIO);
	assert_non_null(strstr(f->j.why, "superblock"));
	/* the device's cache lost the superblock write */
	restore_supers(f, old);
	/* the mount goes on: a new file, a commit, a checkpoint */
	apply_file(f->m, 3, "later");
	(void)commit_file(f, 3, "later");
	(void)tfs_journal_checkpoint(&f->j, f->m, 0);
	/* power cut: the superblock of that checkpoint is lost too */
	restore_supers(f, old);
	assert_int_equal(load(f), 0);
	assert_true(has(f, "kept"));
	assert_int_equal(f->j.note[0], '\0');
}

/* ===== J8: the older superblock copy ===== */

/* Flip a byte of the records of the checkpoint the newest copy names. */
static struct tfs_super damage_newest_checkpoint(struct fix *f)
{
	struct tfs_super sb;
	int copy = 0;

	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(img_flip(f->path, img_ckpt_off(&sb, sb.ckpt_len / 2)),
			 0);
	return sb;
}

static void
test_journal_falls_back_to_older_copy_when_checkpoint_damaged(void **state)
{
	struct fix *f = *state;
	struct tfs_super sb;

	mount(f);
	assert_true(commit_file(f, 2, "a") >= 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	/* the new epoch's first transaction overwrites a's */
	assert_int_equal(commit_file(f, 3, "b"), 0);
	unload(f);
	sb = damage_newest_checkpoint(f);
	assert_int_equal(load(f), 0);
	assert_false(tfs_super_same_ckpt(&f->j.sb, &sb));
	assert_int_equal(f->j.sb.generation, sb.generation - 1);
	assert_non_null(strstr(f->j.note, "using the older copy"));
	assert_non_null(strstr(f->j.note, "corrupted"));
	/* the older state, consistent: b's epoch is not replayed onto it,
	 * nor taken for damage in the middle */
	assert_false(has(f, "b"));
	assert_int_equal(f->j.replayed, 0);
	/* the next checkpoint replaces the damaged one, the superblock
	 * the damaged copy */
	apply_file(f->m, 4, "c");
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, TFS_SB_CLEAN), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.note[0], '\0');
	assert_true(has(f, "c"));
}

/*
 * J3: two checkpoints with no transaction between them still take
 * different seqs, so after a fallback to the first, the transactions
 * written after the second (whose tree may differ: orphans dropped,
 * fsck repairs) are never replayed onto it.
 */
static void test_journal_fallback_never_replays_a_newer_epoch(void **state)
{
	struct fix *f = *state;

	mount(f);
	/* the second checkpoint's tree has "d", which no transaction made */
	apply_file(f->m, 2, "d");
	assert_int_equal(tfs_journal_checkpoint(&f->j, f->m, 0), 0);
	assert_int_equal(commit_file(f, 3, "e"), 0);
	unload(f);
	damage_newest_checkpoint(f);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 0);
	assert_false(has(f, "d") || has(f, "e"));
}

/* Protects J4. */
static void test_journal_set_flags_alternates_copies(void **state)
{
	struct fix *f = *state;
	uint8_t b[2][TFS_BLOCK_SIZE];
	struct tfs_super s0, s1;
	uint64_t gen;

	assert_int_equal(load(f), 0);
	gen = f->j.sb.generation;
	assert_int_equal(tfs_journal_set_flags(&f->j, 0), 0);
	assert_int_equal(f->j.sb.generation, gen + 1);
	assert_int_equal(img_pread(f->path, 0, b, sizeof(b)), 0);
	assert_int_equal(tfs_super_decode(b[0], &s0), 0);
	assert_int_equal(tfs_super_decode(b[1], &s1), 0);
	/* the new generation went to its copy, the other one is intact */
	if ((gen + 1) & 1) {
		assert_int_equal(s1.generation, gen + 1);
		assert_int_equal(s1.flags, 0);
		assert_int_equal(s0.generation, gen);
		assert_int_equal(s0.flags, TFS_SB_CLEAN);
	} else {
		assert_int_equal(s0.generation, gen + 1);
		assert_int_equal(s1.generation, gen);
	}
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.sb.flags, 0);
	assert_int_equal(f->j.sb.generation, gen + 1);
}

/* ===== reformatting a used image ===== */

/*
 * mkfs over an image that held a file system with a busy journal: the
 * new file system starts its transactions at seq 1 again, and must not
 * replay, or mistake for damage, the old one's transactions that are
 * still in the journal area.
 */
static void fill_old_journal(struct fix *f)
{
	mount(f);
	assert_int_equal(commit_file(f, 2, "old1"), 0);
	assert_true(commit_file(f, 3, "old2") >= 0);
	assert_true(commit_file(f, 4, "old3") >= 0);
	assert_true(commit_file(f, 5, "old4") >= 0);
	assert_true(commit_file(f, 6, "old5") >= 0);
	unload(f);
	f->used = f->pblk = 0;
	assert_int_equal(tfs_journal_format(f->d, IMG_BYTES, 0, 0), 0);
	mount(f);
	assert_int_equal(tfs_dir_count(root(f)), 0);
}

/* Protects J3. */
static void test_journal_reformat_does_not_replay_old_transactions(void **state)
{
	struct fix *f = *state;

	fill_old_journal(f);
	/* the new file system's first transaction, the same size as the
	 * old one's; then a crash (no checkpoint) */
	assert_int_equal(commit_file(f, 2, "new1"), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "new1"));
	assert_false(has(f, "old2"));
	assert_int_equal(tfs_dir_count(root(f)), 1);
}

/* Protects J2, J3. */
static void test_journal_reformat_then_crash_is_not_corruption(void **state)
{
	struct fix *f = *state;

	fill_old_journal(f);
	/* a first transaction of two blocks, then a crash */
	assert_int_equal(commit_file_pad(f, 2, "new1", 0, 5000), 0);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->j.replayed, 1);
	assert_true(has(f, "new1"));
	assert_int_equal(tfs_dir_count(root(f)), 1);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_journal_format_then_load_gives_empty_root),
		cmocka_unit_test(test_journal_format_rejects_small_device),
		cmocka_unit_test(test_journal_format_uses_only_the_bytes_asked),
		T(test_journal_load_rejects_non_tensorfs),
		T(test_journal_load_rejects_truncated_image),
		T(test_journal_unknown_version_is_eproto),
		T(test_journal_version_1_is_refused_with_what_to_do),
		T(test_journal_both_superblocks_corrupt_is_euclean),
		T(test_journal_corrupt_checkpoint_is_euclean),
		T(test_journal_transaction_that_does_not_apply_is_euclean),
		T(test_journal_record_count_mismatch_is_euclean),
		T(test_journal_used_blocks_mismatch_is_euclean),
		T(test_journal_replays_committed_transactions),
		T(test_journal_version2_stays_version2),
		T(test_journal_set_member_alone_is_refused),
		T(test_journal_no_replay_counts_and_leaves_the_tree),
		T(test_journal_next_ino_comes_from_the_headers),
		T(test_journal_ignores_torn_tail),
		T(test_journal_ignores_torn_multiblock_tail),
		T(test_journal_detects_corruption_in_the_middle),
		T(test_journal_large_transaction_beyond_scratch_buffer),
		T(test_journal_commit_when_full_is_enospc),
		T(test_journal_checkpoint_takes_new_blocks),
		T(test_journal_checkpoint_larger_than_a_chunk),
		T(test_journal_checkpoint_too_big_is_enospc),
		T(test_journal_lost_superblock_write_keeps_previous_state),
		T(test_journal_torn_superblock_falls_back_to_other_copy),
		T(test_journal_failed_checkpoint_write_keeps_previous_state),
		T(test_journal_commit_io_error_is_returned_and_retried),
		T(test_failed_flush_after_transaction_leaves_mountable_image),
		T(test_failed_superblock_flush_then_power_cut_keeps_the_tree),
		T(test_journal_falls_back_to_older_copy_when_checkpoint_damaged),
		T(test_journal_fallback_never_replays_a_newer_epoch),
		T(test_journal_set_flags_alternates_copies),
		T(test_journal_reformat_does_not_replay_old_transactions),
		T(test_journal_reformat_then_crash_is_not_corruption),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
