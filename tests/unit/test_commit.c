/*
 * test_commit.c: the running transaction and its commits (lib/commit.c).
 * Description: durability: what tfs_fs_sync() or tfs_fsync(, NULL) committed
 * survives a crash (simulated by copying the image while the file system
 * is open and opening the copy), what was not committed is gone; the
 * commit thread commits on its own and early for big transactions; freed
 * blocks are not reused before their commit; a full journal becomes a
 * checkpoint; a failed journal write is reported; a failed flush puts
 * the file system in the error state (journal.c's J7) and leaves an
 * image that mounts with everything fsync'd before it; a discard never
 * hits a block the older superblock copy's state maps (J11); the blocks
 * of replaced checkpoints are discarded once J11 allows; a checkpoint
 * racing a trim on a full device waits for the piece being discarded.
 */

#include "testfs.h"

#include "fs_internal.h" /* the device, to fail its flushes */

/* ===== durability ===== */

/* Protects J1, J2, J4. */
static void test_fs_crash_keeps_what_was_synced(void **state)
{
	struct fx *f = *state;
	uint64_t d, g;
	char *want;
	struct stat st;
	struct tfs_fs *c;

	make_sample_tree(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "dir");
	assert_int_equal(tfs_rename(f->fs, d, "file", TFS_ROOT_INO, "moved", 0),
			 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "hard"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	/* after the sync: new names only (an overwrite of synced data
	 * would reach the device in place, as documented) */
	g = mk(f->fs, TFS_ROOT_INO, "unsynced");
	wr_pat(f->fs, g, 100000, 0, 5);
	mkd(f->fs, d, "newdir");
	assert_int_equal(
	    tfs_symlink(f->fs, TFS_ROOT_INO, "newlink", "x", 0, 0, &st), 0);
	assert_int_equal(
	    tfs_setxattr(f->fs, TFS_ROOT_INO, "user.late", "v", 1, 0), 0);
	c = crash(f);
	assert_true(tfs_fs_replayed(c) >= 1);
	assert_false(exists(c, TFS_ROOT_INO, "unsynced"));
	assert_false(exists(c, d, "newdir"));
	assert_same_tree(c, want);
	assert_fsck_clean(c);
	/* recovery made a checkpoint: crash right after it, same state */
	c = crash(f);
	assert_same_tree(c, want);
	/* the live file system still has everything */
	assert_true(exists(f->fs, TFS_ROOT_INO, "unsynced"));
	assert_pat(f->fs, g, 100000, 0, 5);
	free(want);
}

/* Protects J2. */
static void test_fs_crash_without_any_sync_is_the_formatted_state(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs_info info;
	struct tfs_fs *c;
	struct ents e;

	wr_pat(f->fs, ino, 10000, 0, 1);
	c = crash(f);
	list(c, TFS_ROOT_INO, 0, &e);
	assert_int_equal(e.n, 2);
	ents_free(&e);
	tfs_fs_get_info(c, &info);
	assert_int_equal(not_file_data(c), info.data_blocks);
	assert_int_equal(info.inodes, 1);
	assert_fsck_clean(c);
}

/* Protects J1, J2. */
static void test_fs_fsync_makes_changes_durable(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;

	wr_pat(f->fs, ino, 300000, 12345, 6);
	assert_int_equal(tfs_fsync(f->fs, ino, 1, NULL), 0);
	c = crash(f);
	assert_int_equal(ino_of(c, TFS_ROOT_INO, "f"), ino);
	assert_int_equal(st_of(c, ino).st_size, 312345);
	assert_zero(c, ino, 12345, 0);
	assert_pat(c, ino, 300000, 12345, 6);
	/* an fsync with nothing to do is fine */
	assert_int_equal(tfs_fsync(f->fs, ino, 0, NULL), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
}

static void test_fs_commit_thread_commits_on_its_own(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	uint64_t ino;
	int found = 0;

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	o.commit_interval_ms = 20;
	assert_int_equal(
	    tfs_fs_open(f->path, &o, &f->fs, f->err, sizeof(f->err)), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0); /* once is enough */
	ino = mk(f->fs, TFS_ROOT_INO, "auto");
	wr_pat(f->fs, ino, 50000, 0, 2);
	/* a copy taken at any moment may catch a commit half-written:
	 * it must open all the same; the data, written back after a
	 * while, and its size reach the device without an fsync */
	for (int i = 0; i < 100 && !found; i++) {
		struct tfs_fs *c;

		usleep(30000);
		c = crash(f);
		found = exists(c, TFS_ROOT_INO, "auto") &&
			st_of(c, ino).st_size == 50000 &&
			has_pat(c, ino, 50000, 0, 2);
	}
	assert_true(found);
	assert_pat(f->fs2, ino, 50000, 0, 2);
}

/* Protects J6. */
static void test_fs_freed_blocks_are_not_reused_before_commit(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b, u;
	struct tfs_fs *c;

	wr_pat(f->fs, a, 4 * MiB, 0, 1);
	u = mk(f->fs, TFS_ROOT_INO, "u");
	wr_pat(f->fs, u, 2 * MiB, 0, 3);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* truncate and unlink, then write new data; no sync */
	assert_int_equal(set_size(f->fs, a, 0), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "u"), 0);
	b = mk(f->fs, TFS_ROOT_INO, "b");
	wr_pat(f->fs, b, 6 * MiB, 0, 2);
	c = crash(f);
	/* the committed state still has a and u, with their own bytes */
	assert_int_equal(st_of(c, a).st_size, 4 * MiB);
	assert_pat(c, a, 4 * MiB, 0, 1);
	assert_int_equal(ino_of(c, TFS_ROOT_INO, "u"), u);
	assert_pat(c, u, 2 * MiB, 0, 3);
	assert_false(exists(c, TFS_ROOT_INO, "b"));
	assert_fsck_clean(c);
}

/* Protects J6. */
static void
test_fs_freed_blocks_reused_on_a_full_device_after_commit(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b, filler, left;
	struct tfs_fs *c;
	struct stat st;

	wr_pat(f->fs, a, 4 * MiB, 0, 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* leave 2 MiB available (J10: beyond the checkpoint's reserve) */
	filler = mk(f->fs, TFS_ROOT_INO, "filler");
	left = bavail(f->fs) - 512;
	wr_pat(f->fs, filler, (size_t)left * 4096, 0, 9);
	assert_int_equal(bavail(f->fs), 512);
	/* 6 MiB fit only in a's blocks: the write must commit a's
	 * truncate before it can reuse them */
	assert_int_equal(set_size(f->fs, a, 0), 0);
	b = mk(f->fs, TFS_ROOT_INO, "b");
	wr_pat(f->fs, b, 6 * MiB, 0, 2);
	c = crash(f);
	st = st_of(c, a);
	if (st.st_size) /* never a's size with b's bytes */
		assert_pat(c, a, (size_t)st.st_size, 0, 1);
	assert_int_equal(st.st_size, 0);
	assert_fsck_clean(c);
	assert_pat(f->fs, b, 6 * MiB, 0, 2);
}

/* Protects J3, J4. */
static void test_fs_journal_full_checkpoints_and_survives_crash(void **state)
{
	struct fx *f = *state;
	static uint8_t v[16384], got[16384];
	struct tfs_fs_info i0, i1;
	enum {
		ROUNDS = 400
	};
	struct tfs_fs *c;
	char name[32];

	tfs_fs_get_info(f->fs, &i0);
	for (int r = 0; r < ROUNDS; r++) {
		memset(v, r & 0xff, sizeof(v));
		assert_int_equal(tfs_setxattr(f->fs, TFS_ROOT_INO, "user.v", v,
					      sizeof(v), 0),
				 0);
		snprintf(name, sizeof(name), "r%d", r);
		mk(f->fs, TFS_ROOT_INO, name);
		assert_int_equal(tfs_fs_sync(f->fs), 0);
	}
	/* 400 x 20 KiB is more than the 3 MiB journal: it checkpointed */
	tfs_fs_get_info(f->fs, &i1);
	assert_true(i1.generation >= i0.generation + 2);
	c = crash(f);
	assert_int_equal(
	    tfs_getxattr(c, TFS_ROOT_INO, "user.v", got, sizeof(got)),
	    sizeof(got));
	assert_int_equal(got[0], (ROUNDS - 1) & 0xff);
	assert_int_equal(got[sizeof(got) - 1], (ROUNDS - 1) & 0xff);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(name, sizeof(name), "r%d", r);
		assert_true(exists(c, TFS_ROOT_INO, name));
	}
	assert_fsck_clean(c);
}

/* ===== I/O errors ===== */

/* Protects J3, J7 (a failed write is retried, never applied half). */
static void
test_fs_journal_write_error_is_reported_and_state_survives(void **state)
{
	struct fx *f = *state;
	uint64_t keep = mk(f->fs, TFS_ROOT_INO, "keep");
	struct stat st;
	char *want;

	wr_pat(f->fs, keep, 10000, 0, 2);
	want = snapshot(f->fs);
	/* everything past the superblocks fails: journal, checkpoints */
	reopen_failing_from(f, 2 * TFS_BLOCK_SIZE);
	mk(f->fs, TFS_ROOT_INO, "lost");
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	/* the error sticks until a commit works */
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	assert_int_equal(tfs_fsync(f->fs, keep, 0, NULL), -EIO);
	/* the live state is intact */
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "lost", &st), 0);
	assert_int_equal(tfs_fs_close(f->fs), -EIO);
	f->fs = NULL;
	/* the device still has the last committed state */
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	assert_false(exists(f->fs, TFS_ROOT_INO, "lost"));
	assert_same_tree(f->fs, want);
	assert_fsck_clean(f->fs);
	free(want);
}

/* ===== the two failed-flush bugs (issue: one failed flush) ===== */

static int log_calls;
static char log_last[1024];

static void count_log(const char *msg)
{
	log_calls++;
	snprintf(log_last, sizeof(log_last), "%s", msg);
}

/* Reopen f->fs logging into log_last. */
static void reopen_logging(struct fx *f)
{
	struct tfs_fs_opts o = { 0 };

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	o.log = count_log;
	log_calls = 0;
	log_last[0] = '\0';
	assert_int_equal(
	    tfs_fs_open(f->path, &o, &f->fs, f->err, sizeof(f->err)), 0);
}

/*
 * Found 1, as the issue reproduced it: the flush right after a journal
 * transaction fails.  It was: fsync EIO, the next fsync 0, and an image
 * that neither mounted nor repaired ("journal transaction N does not
 * apply to the tree").  Now (J3, J7): that fsync and every later one
 * fail, changes fail with EROFS, reads work, close writes nothing and
 * fails, and the image mounts, fsck-clean, with the fsync'd bytes.
 */
static void
test_failed_flush_after_journal_transaction_keeps_image_mountable(void **state)
{
	struct fx *f = *state;
	uint64_t keep, late;
	struct stat st;
	char why[256];
	int rc;

	reopen_logging(f);
	keep = mk(f->fs, TFS_ROOT_INO, "keep");
	wr_pat(f->fs, keep, 300000, 0, 1);
	assert_int_equal(tfs_fsync(f->fs, keep, 0, NULL), 0);
	late = mk(f->fs, TFS_ROOT_INO, "late");
	wr_pat(f->fs, late, 100000, 0, 2);
	/* the data flush before the transaction passes, the one after fails */
	tfs_dev_fail_flushes(f->fs->dev, 1, 1);
	assert_int_equal(tfs_fsync(f->fs, late, 0, NULL), -EIO);
	assert_int_equal(tfs_fs_error(f->fs, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "flush after a journal transaction"));
	assert_int_equal(log_calls, 1);
	assert_non_null(strstr(log_last, "no more changes"));
	/* J7: the error state */
	assert_int_equal(tfs_fsync(f->fs, keep, 0, NULL), -EIO);
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "new", S_IFREG | 0644, 0, 0, 0, &st),
	    -EROFS);
	assert_int_equal(tfs_write(f->fs, keep, "x", 1, 0, NULL), -EROFS);
	assert_int_equal(set_size(f->fs, keep, 0), -EROFS);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "keep"), -EROFS);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "keep", TFS_ROOT_INO, "k2", 0),
	    -EROFS);
	assert_int_equal(tfs_setxattr(f->fs, keep, "user.a", "1", 1, 0),
			 -EROFS);
	assert_int_equal(tfs_open(f->fs, keep, O_WRONLY | O_TRUNC), -EROFS);
	assert_pat(f->fs, keep, 300000, 0, 1);
	assert_int_equal(log_calls, 1); /* logged once */
	rc = tfs_fs_close(f->fs);
	f->fs = NULL;
	assert_int_equal(rc, -EIO);
	assert_int_equal(log_calls, 2);
	assert_non_null(strstr(log_last, "final checkpoint was not written"));
	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)), 0);
	assert_fsck_clean(f->fs);
	assert_pat(f->fs, keep, 300000, 0, 1);
	/* the transaction reached the device before its flush failed */
	assert_pat(f->fs, ino_of(f->fs, TFS_ROOT_INO, "late"), 100000, 0, 2);
}

/*
 * Found 2: a checkpoint's superblock flush fails, the superblock never
 * reaches the medium, the mount goes on, then the power is cut.  It
 * was: the next checkpoint overwrote the slot the on-disk superblock
 * named, and the tree was lost.  Now (J5, J7) nothing more is written.
 */
static void
test_failed_superblock_flush_then_power_cut_keeps_fsynced_file(void **state)
{
	struct fx *f = *state;
	static uint8_t old[2][TFS_BLOCK_SIZE];
	uint64_t keep;
	int rc;

	keep = mk(f->fs, TFS_ROOT_INO, "keep");
	wr_pat(f->fs, keep, 300000, 0, 1);
	assert_int_equal(tfs_fsync(f->fs, keep, 0, NULL), 0);
	assert_int_equal(img_pread(f->path, 0, old, sizeof(old)), 0);
	/* a checkpoint: its own flush passes, the superblock's fails */
	tfs_fs_mark_changed(f->fs);
	tfs_dev_fail_flushes(f->fs->dev, 1, 1);
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	/* the device's cache lost the superblock */
	assert_int_equal(img_pwrite(f->path, 0, old, sizeof(old)), 0);
	/* the mount goes on as best it can, then unmounts */
	(void)tfs_mknod(f->fs, TFS_ROOT_INO, "later", S_IFREG | 0644, 0, 0, 0,
			NULL);
	tfs_fs_mark_changed(f->fs);
	(void)tfs_fs_sync(f->fs);
	rc = tfs_fs_close(f->fs);
	f->fs = NULL;
	assert_int_equal(rc, -EIO);
	/* power cut: no superblock written since reached the medium */
	assert_int_equal(img_pwrite(f->path, 0, old, sizeof(old)), 0);
	if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
		fail_msg("open after the power cut: %s", f->err);
	assert_fsck_clean(f->fs);
	assert_pat(f->fs, keep, 300000, 0, 1);
}

/* ===== early commits ===== */

/* Queue more than 4 MiB of records (the early-commit size of fs.c). */
static void big_burst(struct tfs_fs *fs)
{
	static uint8_t v[60000];
	char name[32];

	memset(v, 0x42, sizeof(v));
	for (int i = 0; i < 80; i++) {
		uint64_t ino;

		snprintf(name, sizeof(name), "x%d", i);
		ino = mk(fs, TFS_ROOT_INO, name);
		assert_int_equal(
		    tfs_setxattr(fs, ino, "user.v", v, sizeof(v), 0), 0);
	}
}

/* Open with a commit interval that never comes in a test. */
static void reopen_with_long_interval(struct fx *f)
{
	struct tfs_fs_opts o = { 0 };

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	o.commit_interval_ms = 600000;
	assert_int_equal(
	    tfs_fs_open(f->path, &o, &f->fs, f->err, sizeof(f->err)), 0);
}

/* Is x0 committed?  Polls crash copies for up to two seconds. */
static int burst_committed(struct fx *f)
{
	for (int i = 0; i < 100; i++) {
		usleep(20000);
		if (exists(crash(f), TFS_ROOT_INO, "x0"))
			return 1;
	}
	return 0;
}

static void test_fs_big_transaction_commits_before_the_interval(void **state)
{
	struct fx *f = *state;

	reopen_with_long_interval(f);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	usleep(200000); /* the commit thread is waiting now */
	big_burst(f->fs);
	assert_true(burst_committed(f));
}

static void
test_fs_big_transaction_queued_before_start_commits_early(void **state)
{
	struct fx *f = *state;

	/*
	 * The records pass the early-commit size while the commit thread
	 * is not waiting (here: not yet started; in use: busy with the
	 * previous commit, or not yet scheduled).  It must still commit
	 * them early, not only at the next interval.
	 */
	reopen_with_long_interval(f);
	big_burst(f->fs);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	assert_true(burst_committed(f));
}

/* ===== discard (J11) ===== */

/* A checkpoint now, as one that the journal filling up would write. */
static void checkpoint(struct tfs_fs *fs)
{
	tfs_fs_mark_changed(fs);
	assert_int_equal(tfs_fs_sync(fs), 0);
}

/*
 * A copy of the image whose newest checkpoint is damaged, opened as
 * f->fs2: the load falls back to the older superblock copy (J8).
 */
static struct tfs_fs *fallback_copy(struct fx *f)
{
	struct tfs_super sb = { 0 };
	int copy;

	tfs_fs_close(f->fs2);
	f->fs2 = NULL;
	if (f->copy[0])
		unlink(f->copy);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	assert_int_equal(img_super(f->copy, &sb, &copy), 0);
	assert_int_equal(img_flip(f->copy, img_ckpt_off(&sb, sb.ckpt_len / 2)),
			 0);
	if (tfs_fs_open(f->copy, NULL, &f->fs2, f->err, sizeof(f->err)))
		fail_msg("open of the damaged copy: %s", f->err);
	assert_non_null(tfs_fs_load_note(f->fs2));
	return f->fs2;
}

/*
 * Protects J11: a file deleted after checkpoint C1 and committed, then
 * checkpoint C2 and a transaction that overwrites the deletion's place
 * in the journal: C1 is the state the older superblock copy loads, and
 * it still has the file, so its blocks must not be discarded yet.  One
 * checkpoint more and they are, and the older copy (C2) no longer has
 * the file.
 */
static void test_discard_spares_blocks_the_older_copy_maps(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = f->fs, *old;
	uint64_t a, bytes = 0;

	a = mk(fs, TFS_FS_ROOT, "a");
	wr_pat(fs, a, 1 << 20, 0, 7);
	assert_int_equal(tfs_fsync(fs, a, 0, NULL), 0);
	checkpoint(fs); /* C1: has a */
	assert_int_equal(tfs_unlink(fs, TFS_FS_ROOT, "a"), 0);
	assert_int_equal(tfs_fs_sync(fs), 0); /* T1 frees a's blocks */
	checkpoint(fs);			      /* C2 */
	mk(fs, TFS_FS_ROOT, "b");
	assert_int_equal(tfs_fs_sync(fs), 0); /* over T1 in the journal */

	/* what is ready goes (the free space of the mount), a's does not */
	assert_int_equal(tfs_txn_discard(fs, 0, UINT64_MAX, 1, 0, &bytes), 0);
	old = fallback_copy(f);
	assert_false(exists(old, TFS_FS_ROOT, "b"));
	a = ino_of(old, TFS_FS_ROOT, "a");
	assert_pat(old, a, 1 << 20, 0, 7);
	assert_fsck_clean(old);

	/* C3: C2, without a, is the older state now; a's blocks go */
	checkpoint(fs);
	bytes = 0;
	assert_int_equal(tfs_txn_discard(fs, 0, UINT64_MAX, 1, 0, &bytes), 0);
	assert_true(bytes >= 1 << 20);
	old = fallback_copy(f);
	assert_false(exists(old, TFS_FS_ROOT, "a"));
	assert_true(exists(old, TFS_FS_ROOT, "b"));
	assert_fsck_clean(old);
}

/* tfs_fs_trim() writes the checkpoints itself: a file deleted just now
 * is discarded at once, and the image's allocated size falls. */
static void test_trim_discards_a_file_deleted_just_now(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = f->fs;
	uint64_t a, bytes = 0;
	struct stat st0, st1;

	a = mk(fs, TFS_FS_ROOT, "a");
	wr_pat(fs, a, 4 << 20, 0, 9);
	assert_int_equal(tfs_fsync(fs, a, 0, NULL), 0);
	assert_int_equal(stat(f->path, &st0), 0);
	assert_int_equal(tfs_unlink(fs, TFS_FS_ROOT, "a"), 0);
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, 0, &bytes), 0);
	assert_true(bytes >= 4 << 20);
	assert_int_equal(stat(f->path, &st1), 0);
	assert_true(st1.st_blocks * 512 + (4 << 20) <=
		    st0.st_blocks * 512 + (64 << 10));
	/* nothing left but the blocks of the checkpoints the first trim
	 * replaced (J10: checkpoints move; J11: freed blocks like others) */
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, 0, &bytes), 0);
	assert_true(bytes <= 4 * BS);
	assert_fsck_clean(fs);
	assert_fsck_clean(crash(f));
}

/* FITRIM's range, as ext4 and xfs take it (xfstests generic/260 and
 * 288): a start at or past the end, a length under a block and a minlen
 * over the size are EINVAL; only the range is trimmed, and the bytes
 * come back; a free piece shorter than minlen is left. */
static void test_trim_keeps_to_its_range(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = f->fs;
	struct tfs_fs_info info;
	uint64_t bytes = 7, size, total = 0;

	tfs_fs_get_info(fs, &info);
	size = info.dev_bytes;
	assert_int_equal(tfs_fs_trim(fs, size, 1 << 20, 0, &bytes), -EINVAL);
	assert_int_equal(bytes, 0);
	assert_int_equal(tfs_fs_trim(fs, UINT64_MAX, 1 << 20, 0, &bytes),
			 -EINVAL);
	assert_int_equal(tfs_fs_trim(fs, UINT64_MAX, UINT64_MAX, 0, &bytes),
			 -EINVAL);
	assert_int_equal(tfs_fs_trim(fs, 0, 0, 0, &bytes), -EINVAL);
	assert_int_equal(tfs_fs_trim(fs, 0, 100, 0, &bytes), -EINVAL);
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, size + 1, &bytes),
			 -EINVAL);
	/* one block's range trims at most that block */
	assert_int_equal(tfs_fs_trim(fs, size / 2, BS, 0, &bytes), 0);
	assert_true(bytes <= BS);
	total += bytes;
	/* a range of 1 MiB from the middle, with start + len past 2^64 in
	 * a second call: the end of the file system */
	assert_int_equal(tfs_fs_trim(fs, size / 2 + BS, 1 << 20, 0, &bytes), 0);
	assert_true(bytes <= 1 << 20);
	total += bytes;
	/* no free piece is a whole file system long */
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, size, &bytes), 0);
	assert_int_equal(bytes, 0);
	assert_int_equal(tfs_fs_trim(fs, BS, UINT64_MAX, 0, &bytes), 0);
	total += bytes;
	/* the free space of a fresh file system, in all: at most its size,
	 * at least half (generic/260's own check) */
	assert_true(total <= size);
	assert_true(total >= size / 2);
	/* and nothing twice */
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, 0, &bytes), 0);
	assert_true(bytes <= 4 * BS);
	assert_fsck_clean(fs);
}

/* Whether the image has no data in [off, off + len): a discard there
 * punched a hole, the image's blocks are gone. */
static int img_is_hole(const char *path, uint64_t off, uint64_t len)
{
	int fd = open(path, O_RDONLY);
	off_t d;

	assert_true(fd >= 0);
	d = lseek(fd, (off_t)off, SEEK_DATA);
	close(fd);
	return (d < 0 && errno == ENXIO) ||
	       (d >= 0 && (uint64_t)d >= off + len);
}

/* Whether block b is in the checkpoint sb names. */
static int in_map(const struct tfs_super *sb, uint64_t b)
{
	for (uint32_t i = 0; i < sb->npieces; i++)
		if (b >= sb->map[i].start &&
		    b < sb->map[i].start + sb->map[i].len)
			return 1;
	return 0;
}

/* The blocks of old's checkpoint that neither superblock copy of the
 * image names now, and of those the ones that are holes (discarded). */
static void old_ckpt_blocks(const char *path, const struct tfs_super *old,
			    uint64_t *gone, uint64_t *holes)
{
	struct tfs_super cur = { 0 }, other = { 0 };
	int copy = 0;

	assert_int_equal(img_super(path, &cur, &copy), 0);
	assert_int_equal(img_super_copy(path, copy ^ 1, &other), 0);
	*gone = *holes = 0;
	for (uint32_t i = 0; i < old->npieces; i++)
		for (uint64_t b = old->map[i].start;
		     b < old->map[i].start + old->map[i].len; b++) {
			if (in_map(&cur, b) || in_map(&other, b))
				continue;
			(*gone)++;
			*holes += img_is_hole(path, b * BS, BS);
		}
}

/*
 * J10 with J11: a checkpoint that others replaced gives its blocks back
 * as freed blocks (release_map()), which a trim discards once the two
 * durable checkpoints J11 asks for have passed; never while a superblock
 * copy names it (J11: the older copy's state).  Were they given back as
 * plain free space, no trim would ever discard them.
 */
static void test_trim_discards_replaced_checkpoints(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = f->fs;
	struct tfs_super c0 = { 0 }, sb = { 0 };
	uint64_t a, bytes = 0, gone = 0, holes = 0;
	int copy = 0, i;

	/* a tree of some size, so that its checkpoint takes blocks */
	for (i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file-with-a-longish-name-%d", i);
		a = mk(fs, TFS_FS_ROOT, name);
		wr_pat(fs, a, 4096, 0, (unsigned int)i);
	}
	assert_int_equal(tfs_fs_sync(fs), 0);
	/* what is ready now (the mount's free space) goes first */
	assert_int_equal(tfs_fs_trim(fs, 0, UINT64_MAX, 0, &bytes), 0);
	checkpoint(fs);
	assert_int_equal(img_super(f->path, &c0, &copy), 0);
	assert_true(c0.npieces > 0);
	for (uint32_t p = 0; p < c0.npieces; p++)
		assert_false(img_is_hole(f->path, c0.map[p].start * BS,
					 c0.map[p].len * BS));
	/* one checkpoint later c0 is the older copy's: nothing of it goes */
	checkpoint(fs);
	bytes = 0;
	assert_int_equal(tfs_txn_discard(fs, 0, UINT64_MAX, 1, 0, &bytes), 0);
	old_ckpt_blocks(f->path, &c0, &gone, &holes);
	assert_int_equal(gone, 0);
	/* then no copy names it; two durable checkpoints more and its
	 * blocks are discarded (none of them reused: checkpoints move on) */
	for (i = 0; i < 4 && !holes; i++) {
		checkpoint(fs);
		bytes = 0;
		assert_int_equal(
		    tfs_txn_discard(fs, 0, UINT64_MAX, 1, 0, &bytes), 0);
		old_ckpt_blocks(f->path, &c0, &gone, &holes);
		print_message("checkpoint %d after c0's last: %llu of its %llu "
			      "blocks discarded, %llu bytes in all\n",
			      i + 1, (unsigned long long)holes,
			      (unsigned long long)gone,
			      (unsigned long long)bytes);
	}
	assert_true(gone > 0);
	assert_int_equal(holes, gone);
	assert_true(bytes >= holes * BS);
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_false(tfs_super_same_ckpt(&sb, &c0));
	assert_fsck_clean(fs);
	assert_fsck_clean(crash(f));
}

#ifndef NFILES
#define NFILES 2000
#endif
#ifndef NCKPT
#define NCKPT 2
#endif
#ifdef TFS_TEST_HOOKS
struct discarder {
	struct tfs_fs *fs;
	uint64_t bytes;
	int rc;
};

static void *discarder(void *arg)
{
	struct discarder *d = arg;

	d->rc = tfs_txn_discard(d->fs, 0, UINT64_MAX, 1, 0, &d->bytes);
	return NULL;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
#endif

/*
 * J10 with J11: a piece being discarded is out of the free space, and the
 * free space of a full device is the next checkpoint's reserve.  So a
 * checkpoint waits (tfs_txn_discard() holds jlock) while a piece is out:
 * were it to run then, it would find its blocks missing and fail with
 * ENOSPC.  Each discard is made slow (300 ms) so that the checkpoint
 * surely comes while a piece is out; the test checks that the piece out
 * left less free space than the checkpoint takes, or it would prove
 * nothing.
 */
static void test_checkpoint_waits_for_a_discard_on_a_full_device(void **state)
{
#ifdef TFS_TEST_HOOKS
	struct fx *f = *state;
	struct tfs_fs *fs = f->fs;
	struct discarder d = { .fs = fs };
	uint64_t filler, left, ready, free_blocks, need, out_free, t0;
	pthread_t t;
	int rc;

	/* a tree of some size: its checkpoints take blocks */
	for (int i = 0; i < 2000; i++) {
		char name[64];

		snprintf(name, sizeof(name), "a-file-with-a-longer-name-%05d",
			 i);
		mk(fs, TFS_FS_ROOT, name);
	}
	/* full: no block left beyond the checkpoint's reserve */
	filler = mk(fs, TFS_FS_ROOT, "filler");
	left = bavail(fs);
	wr_pat(fs, filler, (size_t)left * 4096, 0, 9);
	assert_int_equal(tfs_fsync(fs, filler, 0, NULL), 0);
	assert_int_equal(bavail(fs), 0);
	/* J11: the free space waits two checkpoints, then it is ready; the
	 * second checkpoint leaves it almost all ready, in one piece */
	checkpoint(fs);
	checkpoint(fs);
	pthread_mutex_lock(&fs->lock);
	ready = tfs_alloc_discard_ready(fs->alloc);
	free_blocks = tfs_alloc_free_blocks(fs->alloc);
	need = tfs_journal_ckpt_blocks(tfs_meta_bytes(fs->m));
	pthread_mutex_unlock(&fs->lock);
	print_message("free %llu blocks, %llu of them ready to discard; a "
		      "checkpoint takes %llu\n",
		      (unsigned long long)free_blocks,
		      (unsigned long long)ready, (unsigned long long)need);

	tfs_dev_slow_discards(fs->dev, 300);
	t0 = ms_now();
	assert_int_equal(pthread_create(&t, NULL, discarder, &d), 0);
	usleep(100 * 1000); /* the discarder's first piece is out */
	pthread_mutex_lock(&fs->lock);
	out_free = tfs_alloc_free_blocks(fs->alloc);
	pthread_mutex_unlock(&fs->lock);
	tfs_fs_mark_changed(fs);
	rc = tfs_fs_sync(fs);
	t0 = ms_now() - t0;
	assert_int_equal(pthread_join(t, NULL), 0);
	tfs_dev_slow_discards(fs->dev, 0);
	/* so little was left that the checkpoint could not be written then */
	print_message("free while the piece was out: %llu blocks\n",
		      (unsigned long long)out_free);
	assert_true(out_free < need);
	assert_int_equal(rc, 0);
	assert_int_equal(d.rc, 0);
	/* it waited for the piece to come back */
	assert_true(t0 >= 300);
	assert_true(d.bytes > 0);
	assert_int_equal(tfs_fs_failed(fs), 0);
	assert_pat(fs, filler, (size_t)left * 4096, 0, 9);
	assert_fsck_clean(fs);
	assert_fsck_clean(crash(f));
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_crash_keeps_what_was_synced),
		T(test_fs_crash_without_any_sync_is_the_formatted_state),
		T(test_fs_fsync_makes_changes_durable),
		T(test_fs_commit_thread_commits_on_its_own),
		TS(test_fs_freed_blocks_are_not_reused_before_commit),
		TS(test_fs_freed_blocks_reused_on_a_full_device_after_commit),
		TS(test_fs_journal_full_checkpoints_and_survives_crash),
		T(test_fs_journal_write_error_is_reported_and_state_survives),
		T(test_failed_flush_after_journal_transaction_keeps_image_mountable),
		T(test_failed_superblock_flush_then_power_cut_keeps_fsynced_file),
		T(test_discard_spares_blocks_the_older_copy_maps),
		T(test_trim_discards_a_file_deleted_just_now),
		T(test_trim_keeps_to_its_range),
		T(test_trim_discards_replaced_checkpoints),
		TS(test_checkpoint_waits_for_a_discard_on_a_full_device),
		TB(test_fs_big_transaction_commits_before_the_interval),
		TB(test_fs_big_transaction_queued_before_start_commits_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
