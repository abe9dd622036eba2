/*
 * test_fs.c: the file system's lifecycle (lib/fs.c): open, close, load
 * and recovery.
 * Description: what was written survives a close and an open; info and
 * extent counts; a damaged checkpoint or superblock is reported or
 * survived as documented; open errors; a read-only open writes nothing;
 * inodes left without links by a crash are freed at the next open (and
 * kept with no_recover); an image truncated or deleted under the open
 * file system puts it in the error state (journal.c's J7) at the next
 * commit; turned read-only while open (a remount,ro), changes fail with
 * EROFS, the device holds a clean file system and nothing is written
 * until it is writable again.  On a set: data striped over the members,
 * what is not the set refused, and write-back that keeps queue_depth
 * writes in flight on each member.
 */

#include "fs_internal.h"
#include "mkfs.h"
#include "testfs.h"

/* ===== recovery ===== */

/* Protects J9d. */
static void test_fs_unlinked_open_file_is_freed_after_crash(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = not_file_data(f->fs);
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;
	struct stat st;

	wr_pat(f->fs, ino, MiB, 0, 4);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* the crash happens while the file is still open */
	c = crash(f);
	assert_true(tfs_fs_replayed(c) > 0);
	assert_int_equal(tfs_getattr(c, ino, &st), -ENOENT);
	assert_int_equal(not_file_data(c), free0);
	assert_fsck_clean(c);
	/* and the space is really free: the whole data area can be used */
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(not_file_data(f->fs), free0);
}

/* ===== inspection ===== */

static void test_fs_info_and_extent_count(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_info info;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), gen;
	char num[32];
	int zero = 1;

	tfs_fs_get_info(f->fs, &info);
	assert_int_equal(info.dev_bytes, 128 * MiB);
	assert_true(info.data_blocks > 100 * MiB / 4096);
	assert_true(info.data_blocks < 128 * MiB / 4096);
	/* J10: the checkpoint is one block of the data area (both
	 * superblock copies name it after a mount) */
	assert_int_equal(info.ckpt_blocks, 1);
	assert_int_equal(info.free_blocks, info.data_blocks - 1);
	assert_int_equal(info.free_extents, 1);
	assert_int_equal(info.inodes, 2);
	assert_true(info.meta_bytes > 0);
	assert_true(info.meta_capacity > info.meta_bytes);
	assert_true(info.journal_bytes > 0);
	assert_true(info.generation > 0);
	for (int i = 0; i < 16; i++)
		zero &= info.uuid[i] == 0;
	assert_false(zero);
	gen = info.generation;
	/* written in order: one extent */
	for (int i = 0; i < 16; i++)
		wr_pat(f->fs, ino, 65536, (uint64_t)i * 65536, 1);
	assert_int_equal(tfs_extent_count(f->fs, ino), 1);
	assert_int_equal(
	    tfs_getxattr(f->fs, ino, "user.tensorfs.extents", num, sizeof(num)),
	    1);
	assert_memory_equal(num, "1", 1);
	assert_int_equal(
	    tfs_getxattr(f->fs, ino, "user.tensorfs.extents", NULL, 0), 1);
	assert_int_equal(tfs_extent_count(f->fs, TFS_ROOT_INO), 0);
	tfs_fs_get_info(f->fs, &info);
	assert_int_equal(info.free_blocks + info.ckpt_blocks,
			 info.data_blocks - 256);
	reopen(f);
	tfs_fs_get_info(f->fs, &info);
	assert_true(info.generation > gen);
	assert_int_equal(tfs_extent_count(f->fs, ino), 1);
}

/* ===== close and open ===== */

static void test_fs_persists_across_close_and_open(void **state)
{
	struct fx *f = *state;
	char *want;

	make_sample_tree(f->fs);
	want = snapshot(f->fs);
	reopen(f);
	assert_int_equal(tfs_fs_replayed(f->fs), 0);
	assert_same_tree(f->fs, want);
	/* and again, with nothing changed in between */
	reopen(f);
	assert_same_tree(f->fs, want);
	assert_fsck_clean(f->fs);
	free(want);
}

/* ===== damaged images ===== */

/* Protects J2, J8. */
static void test_fs_corrupt_checkpoint_fails_open_with_euclean(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	static struct tfs_super sb, older;
	uint64_t mid, hdr, old100;
	int copy = 0;

	make_sample_tree(f->fs);
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(img_super_copy(f->path, copy ^ 1, &older), 0);
	mid = img_ckpt_off(&sb, sb.ckpt_len / 2);
	hdr = img_ckpt_off(&sb, 9);
	old100 = img_ckpt_off(&older, 100);
	/* J8: the older copy's checkpoint too, or load falls back to it */
	assert_int_equal(img_flip(f->path, old100), 0);
	assert_int_equal(img_flip(f->path, mid), 0);
	f->err[0] = '\0';
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &fs, f->err, sizeof(f->err)), -EUCLEAN);
	assert_null(fs);
	assert_non_null(strstr(f->err, "checkpoint"));
	assert_non_null(strstr(f->err, "corrupted"));
	/* its header, too */
	assert_int_equal(img_flip(f->path, mid), 0);
	assert_int_equal(img_flip(f->path, hdr), 0);
	f->err[0] = '\0';
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &fs, f->err, sizeof(f->err)), -EUCLEAN);
	assert_non_null(strstr(f->err, "checkpoint"));
	/* repaired by hand, it opens again (the failed opens wrote nothing) */
	assert_int_equal(img_flip(f->path, hdr), 0);
	assert_int_equal(img_flip(f->path, old100), 0);
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	assert_true(exists(f->fs, TFS_ROOT_INO, "dir"));
}

/* Protects J8. */
static void test_fs_one_corrupt_superblock_still_opens(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	char *want;

	make_sample_tree(f->fs);
	want = snapshot(f->fs);
	/* an idle mount after the change, so that both superblock copies
	 * describe this tree */
	reopen(f);
	for (int c = 0; c < 2; c++) {
		assert_int_equal(tfs_fs_close(f->fs), 0);
		f->fs = NULL;
		assert_int_equal(
		    img_flip(f->path, (uint64_t)c * TFS_BLOCK_SIZE + 100), 0);
		if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
			fail_msg("superblock copy %d bad: %s", c, f->err);
		assert_same_tree(f->fs, want);
		/* the open rewrote a copy; an idle remount rewrites both */
		reopen(f);
	}
	/* both bad */
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_flip(f->path, 100), 0);
	assert_int_equal(img_flip(f->path, TFS_BLOCK_SIZE + 100), 0);
	f->err[0] = '\0';
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &fs, f->err, sizeof(f->err)), -EUCLEAN);
	assert_non_null(strstr(f->err, "superblock"));
	free(want);
}

static void test_fs_open_errors(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	struct tfs_fs_opts o = { 0 };
	char path[64];

	assert_int_equal(tfs_fs_open("/tmp/tfs-ut-no-such-image", NULL, &fs,
				     f->err, sizeof(f->err)),
			 -ENOENT);
	assert_non_null(strstr(f->err, "cannot open"));
	/* the caller names the device: the sentence never does */
	assert_null(strstr(f->err, "tfs-ut-no-such-image"));
	/* in use by the fixture's open */
	f->err[0] = '\0';
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &fs, f->err, sizeof(f->err)), -EBUSY);
	assert_non_null(strstr(f->err, "in use"));
	assert_null(strstr(f->err, f->path));
	/* not mounted: the process that has it open named (this one) */
	assert_non_null(strstr(f->err, "has it open"));
	assert_null(strstr(f->err, "opened by another tool"));
	/* a directory, as mkfs says it: not ENOTBLK's "Block device
	 * required", and without the path */
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open("/tmp", NULL, &fs, f->err, sizeof(f->err)),
			 -ENOTBLK);
	assert_string_equal(f->err, "neither a block device nor a regular "
				    "file");
	/* read-only without the lock is fine (fsck -n of a live image) */
	o.readonly = 1;
	o.no_lock = 1;
	assert_int_equal(tfs_fs_open(f->path, &o, &fs, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_close(fs), 0);
	/* not a tensorfs */
	assert_int_equal(img_make(path, 64 * MiB), 0);
	fs = NULL;
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(path, NULL, &fs, f->err, sizeof(f->err)),
			 -EINVAL);
	assert_null(fs);
	assert_non_null(strstr(f->err, "not a tensorfs"));
	/* no room for a message is fine too */
	assert_int_equal(tfs_fs_open(path, NULL, &fs, NULL, 0), -EINVAL);
	unlink(path);
	assert_int_equal(tfs_fs_close(NULL), 0);
}

/* CRC of a whole file, to see that nothing was written to it. */
static uint32_t file_crc(const char *path)
{
	static uint8_t buf[1 << 20];
	int fd = open(path, O_RDONLY);
	uint32_t crc = 0;
	ssize_t n;

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = tfs_crc32c(crc, buf, (size_t)n);
	close(fd);
	return crc;
}

static void test_fs_readonly_open_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	struct tfs_fs *ro;
	uint32_t crc;
	char *want;

	make_sample_tree(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	/* an image that needs recovery */
	assert_int_equal(img_copy(f->path, f->copy), 0);
	crc = file_crc(f->copy);
	o.readonly = 1;
	assert_int_equal(tfs_fs_open(f->copy, &o, &ro, f->err, sizeof(f->err)),
			 0);
	assert_true(tfs_fs_replayed(ro) > 0);
	assert_same_tree(ro, want);
	assert_int_equal(tfs_fs_sync(ro), 0);
	assert_int_equal(tfs_fs_start(ro), 0);
	assert_int_equal(tfs_fs_close(ro), 0);
	assert_int_equal(file_crc(f->copy), crc);
	free(want);
}

static void test_fs_readonly_open_says_it_needs_recovery(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	struct tfs_fs *ro;
	struct stat st;

	o.readonly = 1;
	/* cleanly closed: no recovery needed */
	tfs_fs_close(f->fs);
	f->fs = NULL;
	assert_int_equal(tfs_fs_open(f->path, &o, &ro, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_needs_recovery(ro), 0);
	assert_int_equal(tfs_fs_is_readonly(ro), 1);
	assert_int_equal(tfs_mkdir(ro, TFS_ROOT_INO, "d", 0755, 0, 0, &st),
			 -EROFS);
	/* opened read-only, it cannot turn writable */
	assert_int_equal(tfs_fs_set_readonly(ro, 0), -EROFS);
	assert_int_equal(tfs_fs_close(ro), 0);
	/* in use (not closed): a copy of it needs recovery */
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	mk(f->fs, TFS_ROOT_INO, "f");
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	assert_int_equal(tfs_fs_open(f->copy, &o, &ro, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_needs_recovery(ro), 1);
	assert_int_equal(tfs_fs_close(ro), 0);
}

static void test_fs_set_readonly_commits_clean_and_refuses_changes(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs_opts o = { 0 };
	struct tfs_fs *c;
	struct stat st;
	uint32_t crc;
	char *want;

	wr_pat(f->fs, ino, MiB, 0, 7);
	want = snapshot(f->fs);
	assert_int_equal(tfs_fs_is_readonly(f->fs), 0);
	assert_int_equal(tfs_fs_set_readonly(f->fs, 1), 0);
	assert_int_equal(tfs_fs_is_readonly(f->fs), 1);
	/* every change fails, reads work */
	assert_int_equal(tfs_write(f->fs, ino, "x", 1, 0, NULL), -EROFS);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "d", 0755, 0, 0, &st),
			 -EROFS);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), -EROFS);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR | O_TRUNC), -EROFS);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.a", "b", 1, 0), -EROFS);
	/* reads move no atime while read-only (strictatime would) */
	tfs_fs_set_atime(f->fs, TFS_ATIME_STRICT);
	tfs_file_note_read(f->fs, ino, 1);
	tfs_fs_set_atime(f->fs, TFS_ATIME_RELATIME);
	assert_same_tree(f->fs, want);
	/* the device holds it all, clean: a copy needs no recovery */
	assert_int_equal(img_copy(f->path, f->copy), 0);
	o.readonly = 1;
	assert_int_equal(tfs_fs_open(f->copy, &o, &c, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_needs_recovery(c), 0);
	assert_int_equal(tfs_fs_replayed(c), 0);
	assert_same_tree(c, want);
	assert_int_equal(tfs_fs_close(c), 0);
	/* read-only, sync and fsync write nothing */
	crc = file_crc(f->path);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(file_crc(f->path), crc);
	/* writable again: in use, changes work and persist */
	assert_int_equal(tfs_fs_set_readonly(f->fs, 0), 0);
	assert_int_equal(tfs_fs_is_readonly(f->fs), 0);
	mkd(f->fs, TFS_ROOT_INO, "d");
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	unlink(f->copy);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	assert_int_equal(tfs_fs_open(f->copy, &o, &c, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_needs_recovery(c), 1);
	assert_int_equal(st_of(c, TFS_ROOT_INO).st_nlink, 3);
	assert_int_equal(tfs_fs_close(c), 0);
	free(want);
}

static void test_fs_no_recover_keeps_orphans(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	struct tfs_check_result res;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;
	struct stat st;
	FILE *out = fopen("/dev/null", "w");

	assert_non_null(out);
	wr_pat(f->fs, ino, 8192, 0, 1);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	o.readonly = 1;
	o.no_recover = 1;
	assert_int_equal(tfs_fs_open(f->copy, &o, &c, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(st_of(c, ino).st_nlink, 0);
	assert_int_equal(tfs_check(c, 0, out, &res), 0);
	assert_int_equal(res.orphans, 1);
	assert_int_equal(res.errors, 0);
	assert_int_equal(tfs_fs_close(c), 0);
	/* a normal open frees it */
	c = crash(f);
	assert_int_equal(tfs_getattr(c, ino, &st), -ENOENT);
	fclose(out);
	assert_int_equal(tfs_release(f->fs, ino), 0);
}

/* ===== recovery of removed directories ===== */

/* Protects J9d. */
static void test_fs_removed_open_directory_is_freed_after_crash(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct tfs_fs *c;
	struct stat st;

	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	c = crash(f);
	assert_int_equal(tfs_getattr(c, d, &st), -ENOENT);
	assert_int_equal(st_of(c, TFS_ROOT_INO).st_nlink, 2);
	assert_fsck_clean(c);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
}

/* ===== the device changed under the file system (J7) ===== */

/* Protects J7. */
static void test_fs_image_truncated_while_open_is_the_error_state(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	char why[256];
	struct stat st;
	int rc;

	wr_pat(f->fs, ino, 100000, 0, 1);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(tfs_fs_error(f->fs, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(truncate(f->path, 64 * MiB), 0);
	wr_pat(f->fs, ino, 1000, 0, 2); /* before the next commit: taken */
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), -EIO);
	assert_int_equal(tfs_fs_error(f->fs, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "truncated to 67108864 bytes"));
	assert_int_equal(tfs_write(f->fs, ino, "x", 1, 0, NULL), -EROFS);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "d", 0755, 0, 0, &st),
			 -EROFS);
	rc = tfs_fs_close(f->fs);
	f->fs = NULL;
	assert_int_equal(rc, -EIO);
}

/* Protects J7. */
static void test_fs_image_deleted_while_open_is_the_error_state(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	char why[256];
	int rc;

	wr_pat(f->fs, ino, 100000, 0, 1);
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	assert_int_equal(tfs_fs_error(f->fs, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "deleted"));
	/* reads still work: the data can be copied out */
	assert_pat(f->fs, ino, 100000, 0, 1);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.a", "1", 1, 0), -EROFS);
	rc = tfs_fs_close(f->fs);
	f->fs = NULL;
	assert_int_equal(rc, -EIO);
}

/* ===== sets of several devices ===== */

struct set3 {
	char p[3][64];
	const char *paths[3];
	char spec[1024];
};

/* Three images of 64, 32 and 48 MiB formatted as one set. */
static void set3_make(struct set3 *s, struct tfs_mkfs_info *info)
{
	static const uint64_t mib[3] = { 64, 32, 48 };
	struct tfs_mkfs_opts o = { 0 };
	char err[256] = "";

	for (int i = 0; i < 3; i++) {
		assert_int_equal(img_make(s->p[i], mib[i] * MiB), 0);
		s->paths[i] = s->p[i];
	}
	if (tfs_mkfs_set(s->paths, 3, &o, info, err, sizeof(err)))
		fail_msg("mkfs of a set: %s", err);
}

static void set3_drop(struct set3 *s)
{
	for (int i = 0; i < 3; i++)
		unlink(s->p[i]);
}

/* The members named by idx ("201": members 2, 0, 1), joined by ':', in
 * s->spec. */
static void set3_spec(struct set3 *s, const char *idx)
{
	size_t k = 0;

	s->spec[0] = '\0';
	for (const char *c = idx; *c && k + 80 < sizeof(s->spec); c++) {
		if (k)
			s->spec[k++] = ':';
		strcpy(s->spec + k, s->p[*c - '0']);
		k += strlen(s->p[*c - '0']);
	}
}

/* Open the members named by idx, with the default options. */
static int set3_open(struct set3 *s, const char *idx, struct tfs_fs **fs,
		     char *err, size_t errlen)
{
	set3_spec(s, idx);
	err[0] = '\0';
	return tfs_fs_open(s->spec, NULL, fs, err, errlen);
}

/* Bytes an image file holds on its host (not its sparse size). */
static uint64_t img_used(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* Each member's info is its own, in set order whatever the order the
 * set was opened in, and the members add up to the file system. */
static void assert_members_add_up(struct tfs_fs *fs, const struct set3 *s)
{
	static const uint64_t mib[3] = { 64, 32, 48 };
	struct tfs_member_info mi;
	struct tfs_fs_stats st;
	struct tfs_fs_info fi;
	uint64_t free = 0, wr = 0, data = 0;

	tfs_fs_get_stats(fs, &st);
	tfs_fs_get_info(fs, &fi);
	assert_int_equal(tfs_fs_members(fs), 3);
	for (unsigned int m = 0; m < 3; m++) {
		assert_int_equal(tfs_fs_member_info(fs, m, &mi), 0);
		assert_string_equal(mi.path, s->p[m]);
		assert_int_equal(mi.blockdev, 0);
		assert_int_equal(mi.size_bytes, mib[m] * MiB);
		assert_true(mi.free_bytes < mi.data_bytes);
		assert_true(mi.dev.write_bytes > 20 * MiB);
		free += mi.free_bytes;
		wr += mi.dev.write_bytes;
		data += mi.data_bytes;
	}
	assert_int_equal(tfs_fs_member_info(fs, 3, &mi), -EINVAL);
	assert_int_equal(free, fi.free_blocks * TFS_BLOCK_SIZE);
	assert_int_equal(data, fi.data_blocks * TFS_BLOCK_SIZE);
	assert_int_equal(wr, st.dev.write_bytes);
}

static void test_fs_set_spreads_data_over_its_members(void **state)
{
	struct set3 s;
	struct tfs_mkfs_info info;
	struct tfs_fs_info fi;
	struct tfs_fs *fs = NULL;
	char err[512];
	uint64_t ino;

	(void)state;
	set3_make(&s, &info);
	assert_int_equal(info.size, 144 * MiB);
	/* any order opens it */
	if (set3_open(&s, "201", &fs, err, sizeof(err)))
		fail_msg("open of the set: %s", err);
	tfs_fs_get_info(fs, &fi);
	assert_int_equal(fi.data_blocks * TFS_BLOCK_SIZE, info.data_bytes);
	/* more than member 0 holds */
	ino = mk(fs, TFS_ROOT_INO, "big");
	wr_pat(fs, ino, 100 * MiB, 0, 7);
	assert_int_equal(tfs_fsync(fs, ino, 0, NULL), 0);
	assert_members_add_up(fs, &s);
	assert_int_equal(tfs_fs_close(fs), 0);
	/* striped: every member holds a good part of it (member 2, of 32
	 * MiB, fills up and passes its stripes on) */
	for (int i = 0; i < 3; i++)
		if (img_used(s.p[i]) < 25 * MiB)
			fail_msg("member %d holds %llu bytes of a 100 MiB file "
				 "striped over 3",
				 i + 1, (unsigned long long)img_used(s.p[i]));
	if (set3_open(&s, "120", &fs, err, sizeof(err)))
		fail_msg("open of the set in another order: %s", err);
	assert_pat(fs, ino, 100 * MiB, 0, 7);
	assert_fsck_clean(fs);
	assert_int_equal(tfs_fs_close(fs), 0);
	set3_drop(&s);
}

static void test_fs_set_refuses_what_is_not_the_set(void **state)
{
	struct set3 s, t;
	struct tfs_mkfs_info info;
	struct tfs_fs *fs = NULL;
	char err[512], copy[64], spec[1024];

	(void)state;
	set3_make(&s, &info);
	/* a member missing, or given alone */
	assert_int_equal(set3_open(&s, "01", &fs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "member 3 of the set's 3 is missing"));
	assert_int_equal(set3_open(&s, "12", &fs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "member 1 of the set"));
	assert_int_equal(set3_open(&s, "0", &fs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "set of 3 devices and 1 was given"));
	assert_int_equal(set3_open(&s, "2", &fs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "member 3 of a set of 3"));
	/* the same member twice: one path twice, or a copy of it */
	assert_int_equal(set3_open(&s, "0121", &fs, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "given twice"));
	assert_non_null(strstr(err, s.p[1]));
	assert_int_equal(img_copy(s.p[1], copy), 0);
	snprintf(spec, sizeof(spec), "%s:%s:%s:%s", s.p[0], s.p[1], s.p[2],
		 copy);
	assert_int_equal(tfs_fs_open(spec, NULL, &fs, err, sizeof(err)),
			 -EEXIST);
	assert_non_null(strstr(err, "both member 2"));
	unlink(copy);
	/* a member of another set */
	set3_make(&t, &info);
	snprintf(spec, sizeof(spec), "%s:%s:%s", s.p[0], t.p[1], s.p[2]);
	assert_int_equal(tfs_fs_open(spec, NULL, &fs, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "belongs to another tensorfs"));
	assert_non_null(strstr(err, t.p[1]));
	/* an empty name */
	snprintf(spec, sizeof(spec), "%s::%s", s.p[0], s.p[1]);
	assert_int_equal(tfs_fs_open(spec, NULL, &fs, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "empty device name"));
	assert_null(fs);
	/* and the set itself still opens */
	if (set3_open(&s, "012", &fs, err, sizeof(err)))
		fail_msg("open of the set: %s", err);
	assert_int_equal(tfs_fs_close(fs), 0);
	set3_drop(&t);
	set3_drop(&s);
}

/*
 * queue_depth applies on each member: a write-back batch takes
 * queue_depth chunks per member, so each drive has that many writes in
 * flight.  The first write-back is held on the device while twelve more
 * whole chunks (four a member) become ready; let go, the flusher takes
 * them in batches, and every member must have had 2 writes in flight at
 * once (with a batch of queue_depth in all, 2 chunks for 3 members, each
 * had 1).
 */
static void
test_fs_set_write_back_keeps_queue_depth_on_each_member(void **state)
{
#ifdef TFS_TEST_HOOKS
	struct tfs_fs_opts o = { .queue_depth = 2,
				 .io_threads = 1,
				 .pool_bytes = 32 * MiB,
				 .cache_bytes = 32 * MiB,
				 .commit_interval_ms = 600000 };
	struct tfs_member_info mi;
	struct tfs_mkfs_info info;
	struct tfs_fs *fs = NULL;
	struct set3 s;
	char err[512];
	uint64_t ino;

	(void)state;
	set3_make(&s, &info);
	set3_spec(&s, "012");
	if (tfs_fs_open(s.spec, &o, &fs, err, sizeof(err)))
		fail_msg("open of the set: %s", err);
	assert_int_equal(tfs_fs_start(fs), 0);
	ino = mk(fs, TFS_ROOT_INO, "f");
	tfs_dev_hold_writes(fs->dev, 1);
	wr_pat(fs, ino, MiB, 0, 3); /* wholly dirty: the flusher takes it */
	for (int i = 0; i < 10000 && !tfs_dev_writes_held(fs->dev); i++)
		usleep(1000);
	assert_int_equal(tfs_dev_writes_held(fs->dev), 1);
	wr_pat(fs, ino, 12 * MiB, MiB, 3);
	tfs_dev_hold_writes(fs->dev, 0);
	assert_int_equal(tfs_fsync(fs, ino, 0, NULL), 0);
	for (unsigned int m = 0; m < 3; m++) {
		assert_int_equal(tfs_fs_member_info(fs, m, &mi), 0);
		if (mi.dev.inflight_max != 2)
			fail_msg("member %u: %llu writes in flight at most, "
				 "expected queue_depth 2",
				 m + 1,
				 (unsigned long long)mi.dev.inflight_max);
	}
	assert_pat(fs, ino, 13 * MiB, 0, 3);
	assert_int_equal(tfs_fs_close(fs), 0);
	set3_drop(&s);
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_unlinked_open_file_is_freed_after_crash),
		T(test_fs_info_and_extent_count),
		T(test_fs_persists_across_close_and_open),
		T(test_fs_corrupt_checkpoint_fails_open_with_euclean),
		T(test_fs_one_corrupt_superblock_still_opens),
		T(test_fs_open_errors),
		T(test_fs_readonly_open_writes_nothing),
		T(test_fs_readonly_open_says_it_needs_recovery),
		T(test_fs_set_readonly_commits_clean_and_refuses_changes),
		T(test_fs_no_recover_keeps_orphans),
		T(test_fs_removed_open_directory_is_freed_after_crash),
		T(test_fs_image_truncated_while_open_is_the_error_state),
		T(test_fs_image_deleted_while_open_is_the_error_state),
		cmocka_unit_test(test_fs_set_spreads_data_over_its_members),
		cmocka_unit_test(test_fs_set_refuses_what_is_not_the_set),
		cmocka_unit_test(
		    test_fs_set_write_back_keeps_queue_depth_on_each_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
