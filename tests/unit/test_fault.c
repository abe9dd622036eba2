/*
 * test_fault.c: the fault device of lib/io.h (test builds only).
 * Description: operations are counted per kind, failed ones included;
 * the nth operation fails once (transient) or from then on (persistent)
 * with the errno asked for; with the volatile cache a power cut loses
 * the writes no flush covered, keeps or loses each block on a seeded
 * coin (so multi-block writes tear), or loses what a failed flush should
 * have covered, and never touches flushed ones;
 * a failed flush covers nothing; after a cut every operation is -EIO;
 * cuts triggered by the nth operation, by time and by the kth flush after
 * a failure; concurrent writers and flushes; the settings from the
 * environment (TFS_FAULT), a bad value refused, and a cut there ending
 * the process with TFS_FAULT_CUT_STATUS.  On a set of three members: a
 * cut that loses one member's unflushed writes and not the others', a
 * flush that fails on one member (the others' writes flushed, the
 * failure charged to that member and named), and a member whose reads
 * and writes fail while the others' go on.
 *
 * The whole file needs a build with -DTFS_TEST_HOOKS=ON (CMakeLists.txt
 * registers it as a skip otherwise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "io.h"
#include "testimg.h"

#define IMG_BYTES (16 * MiB)
#define BLK	  4096u

struct fix {
	char path[64];
	struct tfs_dev *d;
	uint8_t *b; /* 64 blocks, aligned */
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f || img_make(f->path, IMG_BYTES))
		return -1;
	f->b = tfs_io_alloc(64 * BLK);
	if (!f->b || tfs_dev_open(f->path, 0, &f->d)) {
		unlink(f->path);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	tfs_dev_close(f->d);
	unlink(f->path);
	tfs_io_free(f->b);
	free(f);
	tfs_io_thread_exit();
	return 0;
}

/* Write nblk blocks of value v at block blk through the device. */
static int put(struct fix *f, uint64_t blk, unsigned int nblk, uint8_t v)
{
	memset(f->b, v, nblk * BLK);
	return tfs_dev_write(f->d, f->b, nblk * BLK, blk * BLK);
}

/* The first byte of block blk as the image file holds it. */
static uint8_t on_image(struct fix *f, uint64_t blk)
{
	uint8_t c = 0xee;

	assert_int_equal(img_pread(f->path, blk * BLK, &c, 1), 0);
	return c;
}

static void set(struct fix *f, const struct tfs_fault *fl)
{
	assert_int_equal(tfs_dev_fault_set(f->d, fl), 0);
}

static void test_fault_counts_operations_by_kind(void **state)
{
	struct fix *f = *state;
	struct tfs_fault none = { 0 };
	struct tfs_fault_ops o;
	struct tfs_iov v[2] = { { f->b, BLK, 0 },
				{ f->b + BLK, BLK, 8 * BLK } };

	set(f, &none);
	assert_int_equal(put(f, 1, 4, 1), 0);
	assert_int_equal(tfs_dev_writev(f->d, v, 2), 0); /* one op */
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), 0);
	assert_int_equal(tfs_dev_readv(f->d, v, 2), 0);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	/* past the end: refused by the engine, still an operation */
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, IMG_BYTES), -EIO);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.writes, 2);
	assert_int_equal(o.reads, 4);
	assert_int_equal(o.flushes, 1);
	assert_int_equal(o.total, 7);
	assert_int_equal(o.failed, 0);
	assert_int_equal(o.cut, 0);
	/* setting again starts from zero */
	set(f, &none);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.total, 0);
	/* at_close gets the last counters, for what a close issues */
	none.at_close = &o;
	set(f, &none);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	tfs_dev_close(f->d);
	f->d = NULL;
	assert_int_equal(o.flushes, 1);
	assert_int_equal(o.total, 1);
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
}

static void test_fault_nth_write_fails_once(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .fail_kinds = TFS_FAULT_WRITE, .fail_nth = 3 };
	struct tfs_fault_ops o;

	set(f, &fl);
	assert_int_equal(put(f, 1, 1, 1), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0); /* not counted */
	assert_int_equal(put(f, 2, 1, 2), 0);
	assert_int_equal(put(f, 3, 1, 3), -EIO);
	assert_int_equal(put(f, 4, 1, 4), 0);
	assert_int_equal(put(f, 3, 1, 5), 0);
	assert_int_equal(on_image(f, 3), 5);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.failed, 1);
	assert_int_equal(o.writes, 5);
}

static void test_fault_failed_write_transfers_nothing(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .fail_kinds = TFS_FAULT_ANY,
				.fail_nth = 2,
				.fail_err = ENOSPC };

	assert_int_equal(put(f, 10, 8, 0x11), 0);
	set(f, &fl);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), 0);
	assert_int_equal(put(f, 10, 8, 0x22), -ENOSPC);
	for (unsigned int i = 0; i < 8; i++)
		assert_int_equal(on_image(f, 10 + i), 0x11);
}

static void test_fault_persistent_failure_fails_every_later_one(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .fail_kinds = TFS_FAULT_FLUSH | TFS_FAULT_READ,
				.fail_nth = 2,
				.fail_persist = 1 };
	struct tfs_fault_ops o;

	set(f, &fl);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(put(f, 1, 1, 1), 0); /* writes not counted */
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), -EIO);
	assert_int_equal(tfs_dev_flush(f->d), -EIO);
	assert_int_equal(put(f, 1, 1, 2), 0);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), -EIO);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.failed, 3);
	/* cleared by new settings */
	set(f, NULL);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), 0);
}

static void test_fault_powercut_loses_unflushed_writes(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1 };
	struct tfs_fault_ops o;

	assert_int_equal(put(f, 0, 8, 0x10), 0); /* before: on the medium */
	set(f, &fl);
	assert_int_equal(put(f, 0, 2, 0x21), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(put(f, 1, 2, 0x32), 0); /* block 1 again, and 2 */
	assert_int_equal(put(f, 2, 1, 0x33), 0);
	assert_int_equal(put(f, 5, 1, 0x35), 0);
	/* reads see the newest contents, as from the disk's cache */
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 2 * BLK), 0);
	assert_int_equal(f->b[0], 0x33);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.unflushed, 3);
	/* seed % 4 == 0: every unflushed block is lost */
	assert_int_equal(tfs_dev_powercut(f->d, 4), 3);
	assert_int_equal(on_image(f, 0), 0x21);
	assert_int_equal(on_image(f, 1), 0x21); /* its flushed contents */
	assert_int_equal(on_image(f, 2), 0x10);
	assert_int_equal(on_image(f, 3), 0x10);
	assert_int_equal(on_image(f, 5), 0x10);
	/* the power is off: nothing more happens */
	assert_int_equal(put(f, 3, 1, 0x44), -EIO);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, 0), -EIO);
	assert_int_equal(tfs_dev_flush(f->d), -EIO);
	assert_int_equal(on_image(f, 3), 0x10);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.cut, 1);
	assert_int_equal(o.unflushed, 0);
	/* a second cut changes nothing */
	assert_int_equal(tfs_dev_powercut(f->d, 6), 0);
}

static void test_fault_powercut_may_keep_unflushed_writes(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1 };

	set(f, &fl);
	assert_int_equal(put(f, 0, 4, 0x21), 0);
	/* seed % 4 == 1: every unflushed block landed */
	assert_int_equal(tfs_dev_powercut(f->d, 5), 0);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(on_image(f, i), 0x21);
}

static void test_fault_powercut_tears_multiblock_writes(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1 };
	unsigned int kept[2] = { 0, 0 }, flips = 0;

	/* seeds 2 and 3 mod 4: a coin per block; 64 blocks show both sides,
	 * and the same seed gives the same outcome */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(put(f, 0, 64, 0x01), 0);
		set(f, &fl);
		assert_int_equal(put(f, 0, 64, 0x02), 0);
		assert_true(tfs_dev_powercut(f->d, 42) > 0);
		for (unsigned int i = 0; i < 64; i++) {
			uint8_t c = on_image(f, i);

			assert_true(c == 1 || c == 2);
			if (c == 2)
				kept[round]++;
			if (i && c != on_image(f, i - 1))
				flips++;
		}
		set(f, NULL);
	}
	assert_true(kept[0] > 0 && kept[0] < 64);
	assert_int_equal(kept[0], kept[1]);
	assert_true(flips > 0);
}

static void test_fault_failed_flush_covers_nothing(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1,
				.fail_kinds = TFS_FAULT_FLUSH,
				.fail_nth = 1 };

	set(f, &fl);
	assert_int_equal(put(f, 7, 1, 0x77), 0);
	assert_int_equal(tfs_dev_flush(f->d), -EIO);
	assert_int_equal(tfs_dev_powercut(f->d, 0), 1);
	assert_int_equal(on_image(f, 7), 0);
}

static void test_fault_cut_loses_what_a_failed_flush_covered(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1,
				.fail_kinds = TFS_FAULT_FLUSH,
				.fail_nth = 1 };
	unsigned int kept = 0;

	set(f, &fl);
	assert_int_equal(put(f, 100, 4, 0x11), 0);
	assert_int_equal(tfs_dev_flush(f->d), -EIO);
	assert_int_equal(put(f, 0, 64, 0x22), 0);
	/* seed % 4 == 3: before the failure lost, after it a coin */
	assert_true(tfs_dev_powercut(f->d, 7) >= 4);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(on_image(f, 100 + i), 0);
	for (unsigned int i = 0; i < 64; i++)
		kept += on_image(f, i) == 0x22;
	assert_true(kept > 0 && kept < 64);
}

static void test_fault_cut_at_nth_operation(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1, .cut_nth = 4, .seed = 0 };
	struct tfs_fault_ops o;

	set(f, &fl);
	assert_int_equal(put(f, 1, 1, 1), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(put(f, 2, 1, 2), 0);
	/* the 4th: the cut, instead of the write */
	assert_int_equal(put(f, 3, 1, 3), -EIO);
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.cut, 1);
	assert_int_equal(o.hit_kind, TFS_FAULT_WRITE);
	assert_int_equal(on_image(f, 1), 1);
	assert_int_equal(on_image(f, 2), 0);
	assert_int_equal(on_image(f, 3), 0);
	/* cut_kinds counts only those */
	fl.cut_kinds = TFS_FAULT_FLUSH;
	fl.cut_nth = 2;
	set(f, &fl);
	assert_int_equal(put(f, 4, 1, 4), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(put(f, 5, 1, 5), 0);
	assert_int_equal(put(f, 6, 1, 6), 0);
	assert_int_equal(tfs_dev_flush(f->d), -EIO);
	assert_int_equal(on_image(f, 4), 4);
	assert_int_equal(on_image(f, 5), 0);
	assert_int_equal(on_image(f, 6), 0);
}

static void test_fault_cut_at_kth_flush_after_failure(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1,
				.fail_kinds = TFS_FAULT_FLUSH,
				.fail_nth = 2,
				.cut_flush_after_fail = 2,
				.seed = 0 };
	struct tfs_fault_ops o;

	set(f, &fl);
	assert_int_equal(put(f, 1, 1, 1), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	assert_int_equal(put(f, 2, 1, 2), 0);
	assert_int_equal(tfs_dev_flush(f->d), -EIO); /* the failure */
	assert_int_equal(put(f, 3, 1, 3), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0); /* 1st after it */
	assert_int_equal(put(f, 4, 1, 4), 0);
	assert_int_equal(tfs_dev_flush(f->d), -EIO); /* 2nd: the cut */
	tfs_dev_fault_ops(f->d, &o);
	assert_int_equal(o.cut, 1);
	assert_int_equal(o.failed, 1);
	assert_int_equal(o.hit_kind, TFS_FAULT_FLUSH);
	assert_int_equal(on_image(f, 2), 2);
	assert_int_equal(on_image(f, 3), 3);
	assert_int_equal(on_image(f, 4), 0);
}

static void test_fault_cut_after_time(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1, .cut_after_ms = 50 };
	struct timespec t0, t1;
	int rc, n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	set(f, &fl);
	while ((rc = put(f, 1, 1, 1)) == 0 && n < 10000) {
		usleep(1000);
		n++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(rc, -EIO);
	/* not before the time, and then at the next operation */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L +
			(t1.tv_nsec - t0.tv_nsec) >=
		    50000000L);
	assert_true(n >= 1);
	assert_int_equal(on_image(f, 1), 0);
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 +
	       (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

static void test_fault_slow_operations_wait(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .slow_kinds = TFS_FAULT_WRITE, .slow_ms = 80 };
	struct timespec t0;

	set(f, &fl);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(put(f, 1, 1, 5), 0);
	assert_true(ms_since(&t0) >= 80);
	assert_int_equal(on_image(f, 1), 5); /* slow, and then done */
	/* a read is not a write: it does not wait */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tfs_dev_read(f->d, f->b, BLK, BLK), 0);
	assert_true(ms_since(&t0) < 80);
	assert_int_equal(f->b[0], 5);
}

/* ----- concurrency ----- */

struct racer {
	struct tfs_dev *d;
	unsigned int id;
	uint8_t flushed; /* the last version a successful flush covered */
};

static void *race(void *arg)
{
	struct racer *r = arg;
	uint8_t *b = tfs_io_alloc(2 * BLK);

	for (unsigned int v = 1; v < 200; v++) {
		memset(b, (int)v, 2 * BLK);
		if (tfs_dev_write(r->d, b, 2 * BLK, (uint64_t)r->id * 2 * BLK))
			break;
		if (v % 3 == 0) {
			if (tfs_dev_flush(r->d))
				break;
			r->flushed = (uint8_t)v;
		}
	}
	tfs_io_free(b);
	tfs_io_thread_exit();
	return NULL;
}

static void test_fault_flush_covers_writes_of_all_threads(void **state)
{
	struct fix *f = *state;
	struct tfs_fault fl = { .volatile_cache = 1 };
	struct racer r[6];
	pthread_t t[6];

	set(f, &fl);
	for (unsigned int i = 0; i < 6; i++) {
		r[i] = (struct racer){ f->d, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (unsigned int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	/* every block lost that can be: what remains is what the last
	 * flush of any thread covered, never older than its own last one */
	assert_true(tfs_dev_powercut(f->d, 0) >= 0);
	for (unsigned int i = 0; i < 6; i++) {
		uint8_t a = on_image(f, 2 * i), b = on_image(f, 2 * i + 1);

		assert_int_equal(a, b);
		assert_true(a >= r[i].flushed);
		assert_true(r[i].flushed >= 198);
	}
}

/* ----- the environment ----- */

static void test_fault_settings_from_environment(void **state)
{
	struct fix *f = *state;
	struct tfs_dev *d;
	struct tfs_fault_ops o;

	tfs_dev_close(f->d);
	f->d = NULL;
	assert_int_equal(setenv("TFS_FAULT",
				"volatile,fail=write+flush:2:ENOSPC:persist",
				1),
			 0);
	assert_int_equal(tfs_dev_open(f->path, 0, &d), 0);
	unsetenv("TFS_FAULT");
	memset(f->b, 9, BLK);
	assert_int_equal(tfs_dev_write(d, f->b, BLK, 0), 0);
	assert_int_equal(tfs_dev_flush(d), -ENOSPC);
	assert_int_equal(tfs_dev_write(d, f->b, BLK, 0), -ENOSPC);
	assert_int_equal(tfs_dev_read(d, f->b, BLK, 0), 0);
	tfs_dev_fault_ops(d, &o);
	assert_int_equal(o.unflushed, 1);
	assert_int_equal(o.failed, 2);
	tfs_dev_close(d);

	/* what does not parse is refused, not ignored */
	static const char *const bad[] = {
		"volatil",	  "fail=write",	       "fail=write:x",
		"fail=disk:1",	  "fail=write:1:EFOO", "cut=",
		"cut=write",	  "seed=1,,x",	       "cut_ms=1s",
		"slow=write",	  "slow=write:",       "slow=disk:5",
		"slow=write:5ms", "fail_member=",      "fail_member=1+",
		"lose_member=64", "lose_member=x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(setenv("TFS_FAULT", bad[i], 1), 0);
		d = NULL;
		if (tfs_dev_open(f->path, 0, &d) != -EINVAL)
			fail_msg("TFS_FAULT='%s': expected -EINVAL", bad[i]);
		unsetenv("TFS_FAULT");
	}
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
}

static void test_fault_cut_from_environment_ends_the_process(void **state)
{
	struct fix *f = *state;
	pid_t pid;
	int st;

	tfs_dev_close(f->d);
	f->d = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct tfs_dev *d;
		uint8_t *b = tfs_io_alloc(BLK);

		setenv("TFS_FAULT", "volatile,cut=write:3,seed=0", 1);
		if (!b || tfs_dev_open(f->path, 0, &d))
			_exit(1);
		memset(b, 0x5a, BLK);
		(void)tfs_dev_write(d, b, BLK, 0);
		(void)tfs_dev_flush(d);
		(void)tfs_dev_write(d, b, BLK, BLK);
		(void)tfs_dev_write(d, b, BLK, 2 * BLK); /* the cut */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), TFS_FAULT_CUT_STATUS);
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
	assert_int_equal(on_image(f, 0), 0x5a);
	assert_int_equal(on_image(f, 1), 0);
	assert_int_equal(on_image(f, 2), 0);
}

/* ===== the members of a set ===== */

/* A set of three images, opened as one device. */
struct fix3 {
	char path[3][64];
	struct tfs_dev *d;
	uint8_t *b;
};

static void set3_open(struct fix3 *f)
{
	const char *p[3];
	int bad;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(img_make(f->path[i], IMG_BYTES), 0);
		p[i] = f->path[i];
	}
	assert_int_equal(tfs_dev_open_set(p, 3, 0, &f->d, &bad), 0);
	f->b = tfs_io_alloc(BLK);
	assert_non_null(f->b);
}

static void set3_close(struct fix3 *f)
{
	tfs_dev_close(f->d);
	for (int i = 0; i < 3; i++)
		unlink(f->path[i]);
	tfs_io_free(f->b);
	tfs_io_thread_exit();
}

/* Block blk of member m written with v through the set. */
static int put3(struct fix3 *f, unsigned int m, uint64_t blk, uint8_t v)
{
	memset(f->b, v, BLK);
	return tfs_dev_write(f->d, f->b, BLK, tfs_dev_off(m, blk * BLK));
}

/* The first byte of block blk of member m as its image holds it. */
static uint8_t on_member(struct fix3 *f, unsigned int m, uint64_t blk)
{
	uint8_t c = 0xee;

	assert_int_equal(img_pread(f->path[m], blk * BLK, &c, 1), 0);
	return c;
}

static void test_fault_cut_loses_only_the_members_asked(void **state)
{
	struct tfs_fault fl = { .volatile_cache = 1, .lose_members = 1u << 1 };
	struct fix3 f;

	(void)state;
	set3_open(&f);
	assert_int_equal(tfs_dev_fault_set(f.d, &fl), 0);
	for (unsigned int m = 0; m < 3; m++)
		assert_int_equal(put3(&f, m, 5, (uint8_t)(0x10 + m)), 0);
	/* seed 0 loses every unflushed block, but of member 1 only */
	assert_int_equal(tfs_dev_powercut(f.d, 0), 1);
	assert_int_equal(on_member(&f, 0, 5), 0x10);
	assert_int_equal(on_member(&f, 1, 5), 0);
	assert_int_equal(on_member(&f, 2, 5), 0x12);
	set3_close(&f);
}

static void test_fault_flush_fails_on_one_member(void **state)
{
	struct tfs_fault fl = { .volatile_cache = 1,
				.fail_kinds = TFS_FAULT_FLUSH | TFS_FAULT_WRITE,
				.fail_nth = 1,
				.fail_members = 1u << 2 };
	struct tfs_dev_stats st;
	struct fix3 f;
	char where[TFS_WHERE_LEN];

	(void)state;
	set3_open(&f);
	assert_int_equal(tfs_dev_failed_member(f.d), -1);
	assert_int_equal(tfs_dev_fault_set(f.d, &fl), 0);
	/* writes to members 0 and 1 do not count towards fail_nth */
	assert_int_equal(put3(&f, 0, 9, 0xa0), 0);
	assert_int_equal(put3(&f, 1, 9, 0xa1), 0);
	/* the flush is the first operation touching member 2: it fails
	 * there, and the others' writes were flushed */
	assert_int_equal(tfs_dev_flush(f.d), -EIO);
	assert_int_equal(tfs_dev_failed_member(f.d), 2);
	tfs_dev_member_stats(f.d, 2, &st);
	assert_int_equal(st.errors, 1);
	tfs_dev_member_stats(f.d, 0, &st);
	assert_int_equal(st.errors, 0);
	tfs_dev_failure_where(f.d, where, sizeof(where));
	assert_non_null(strstr(where, "member 3"));
	assert_non_null(strstr(where, f.path[2]));
	/* now member 2 takes a write; a cut after it loses it alone */
	assert_int_equal(put3(&f, 2, 9, 0xa2), 0);
	assert_int_equal(put3(&f, 0, 10, 0xb0), 0);
	fl.fail_nth = 0;
	fl.lose_members = 1u << 2;
	assert_int_equal(tfs_dev_fault_set(f.d, &fl), 0); /* keeps the log */
	assert_int_equal(tfs_dev_powercut(f.d, 0), 1);
	assert_int_equal(on_member(&f, 0, 9), 0xa0);
	assert_int_equal(on_member(&f, 1, 9), 0xa1);
	assert_int_equal(on_member(&f, 0, 10), 0xb0);
	assert_int_equal(on_member(&f, 2, 9), 0);
	set3_close(&f);
}

static void test_fault_member_eio_blames_the_member(void **state)
{
	struct tfs_fault fl = { .fail_kinds = TFS_FAULT_READ | TFS_FAULT_WRITE,
				.fail_nth = 2,
				.fail_persist = 1,
				.fail_members = 1u << 1 };
	struct tfs_dev_stats st;
	struct fix3 f;

	(void)state;
	set3_open(&f);
	assert_int_equal(tfs_dev_fault_set(f.d, &fl), 0);
	assert_int_equal(put3(&f, 1, 3, 1), 0); /* the first: passes */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(put3(&f, 0, 3, 2), 0);
		assert_int_equal(put3(&f, 2, 3, 2), 0);
		assert_int_equal(put3(&f, 1, 3, 2), -EIO);
		assert_int_equal(
		    tfs_dev_read(f.d, f.b, BLK, tfs_dev_off(1, 3 * BLK)), -EIO);
	}
	assert_int_equal(tfs_dev_failed_member(f.d), 1);
	tfs_dev_member_stats(f.d, 1, &st);
	assert_int_equal(st.errors, 10);
	assert_int_equal(on_member(&f, 1, 3), 1);
	assert_int_equal(on_member(&f, 2, 3), 2);
	set3_close(&f);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fault_counts_operations_by_kind),
		T(test_fault_nth_write_fails_once),
		T(test_fault_failed_write_transfers_nothing),
		T(test_fault_persistent_failure_fails_every_later_one),
		T(test_fault_powercut_loses_unflushed_writes),
		T(test_fault_powercut_may_keep_unflushed_writes),
		T(test_fault_powercut_tears_multiblock_writes),
		T(test_fault_failed_flush_covers_nothing),
		T(test_fault_cut_loses_what_a_failed_flush_covered),
		T(test_fault_cut_at_nth_operation),
		T(test_fault_cut_at_kth_flush_after_failure),
		T(test_fault_cut_after_time),
		cmocka_unit_test(test_fault_cut_loses_only_the_members_asked),
		cmocka_unit_test(test_fault_flush_fails_on_one_member),
		cmocka_unit_test(test_fault_member_eio_blames_the_member),
		T(test_fault_slow_operations_wait),
		T(test_fault_flush_covers_writes_of_all_threads),
		T(test_fault_settings_from_environment),
		T(test_fault_cut_from_environment_ends_the_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
