/*
 * test_io.c: device access through io_uring (lib/io.h).
 * Description: open and its errors (locking, file types, read-only),
 * reads and writes split into pieces and batched, reads past the end
 * (-EIO, also when the file shrinks under us), write fault injection
 * (by call and by environment), short completions resubmitted, the
 * submit modes (single_submit, overlap), counters with latency, one
 * ring per thread, and sets of several members (routing, per-member
 * counters and flushes, open errors naming the member).
 *
 * The fault injection tests need a build with -DTFS_TEST_HOOKS=ON; in
 * any other they are reported as skipped.
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
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "io.h"
#include "testimg.h"

#define IMG_BYTES (16 * MiB)

struct fix {
	char path[64];
	struct tfs_dev *d;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f || img_make(f->path, IMG_BYTES))
		return -1;
	if (tfs_dev_open(f->path, 0, &f->d)) {
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
	free(f);
	tfs_io_thread_exit();
	return 0;
}

/* A test that needs the fault injection hooks, in a build without them. */
#define SKIP_WITHOUT_TEST_HOOKS(name)                                          \
	static void name(void **state)                                         \
	{                                                                      \
		(void)state;                                                   \
		print_message("needs a build with -DTFS_TEST_HOOKS=ON\n");     \
		skip();                                                        \
	}

static void *xalloc(size_t len)
{
	void *p = tfs_io_alloc(len);

	assert_non_null(p);
	return p;
}

static void test_io_alloc_is_block_aligned(void **state)
{
	(void)state;
	for (size_t len = 0; len <= 3 * 4096; len += 1000) {
		void *p = xalloc(len);

		assert_int_equal((uintptr_t)p % TFS_BLOCK_SIZE, 0);
		tfs_io_free(p);
	}
	tfs_io_free(NULL);
}

static void test_io_size_is_rounded_down_to_blocks(void **state)
{
	char path[64];
	struct tfs_dev *d;

	(void)state;
	assert_int_equal(img_make(path, MiB + 100), 0);
	assert_int_equal(tfs_dev_open(path, 0, &d), 0);
	assert_int_equal(tfs_dev_size(d), MiB);
	assert_int_equal(tfs_dev_is_blockdev(d), 0);
	tfs_dev_close(d);
	tfs_dev_close(NULL);
	unlink(path);
}

static void test_io_open_errors(void **state)
{
	struct tfs_dev *d = NULL;

	(void)state;
	assert_int_equal(tfs_dev_open("/tmp/tfs-ut-does-not-exist", 0, &d),
			 -ENOENT);
	assert_int_equal(tfs_dev_open("/tmp", 0, &d), -ENOTBLK);
	assert_int_equal(tfs_dev_open("/dev/null", 0, &d), -ENOTBLK);
	assert_null(d);
}

static void test_io_second_open_is_ebusy(void **state)
{
	struct fix *f = *state;
	struct tfs_dev *d2 = NULL;

	assert_int_equal(tfs_dev_open(f->path, 0, &d2), -EBUSY);
	assert_int_equal(tfs_dev_open(f->path, TFS_DEV_RDONLY, &d2), -EBUSY);
	/* without the lock (tests, fsck -n of an image) it opens */
	assert_int_equal(tfs_dev_open(f->path, TFS_DEV_NOLOCK, &d2), 0);
	tfs_dev_close(d2);
	/* once the holder closes, the lock is free again */
	tfs_dev_close(f->d);
	f->d = NULL;
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
}

static void test_io_write_read_roundtrip(void **state)
{
	struct fix *f = *state;
	size_t len = 3 * MiB + 8 * 4096;
	uint8_t *w = xalloc(len), *r = xalloc(len);

	fill_pat(w, len, 0, 1);
	assert_int_equal(tfs_dev_write(f->d, w, len, 4096), 0);
	memset(r, 0, len);
	assert_int_equal(tfs_dev_read(f->d, r, len, 4096), 0);
	assert_memory_equal(r, w, len);
	/* the bytes are where the offsets say, seen from outside too */
	assert_int_equal(img_pread(f->path, 4096 + 12345, r, 100), 0);
	assert_memory_equal(r, w + 12345, 100);
	/* a zero-length request is a no-op */
	assert_int_equal(tfs_dev_read(f->d, r, 0, 0), 0);
	assert_int_equal(tfs_dev_write(f->d, w, 0, 0), 0);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	tfs_io_free(w);
	tfs_io_free(r);
}

static void test_io_small_pieces_and_shallow_queue(void **state)
{
	struct fix *f = *state;
	size_t len = MiB;
	uint8_t *w = xalloc(len), *r = xalloc(len);
	struct tfs_dev_stats s0, s1;

	/* one block per piece, one in flight: 256 requests */
	tfs_dev_set_queue(f->d, 4096, 1);
	fill_pat(w, len, 0, 2);
	tfs_dev_get_stats(f->d, &s0);
	assert_int_equal(tfs_dev_write(f->d, w, len, 2 * MiB), 0);
	tfs_dev_get_stats(f->d, &s1);
	assert_int_equal(s1.writes - s0.writes, 256);
	assert_int_equal(s1.write_bytes - s0.write_bytes, len);
	/* odd piece size (rounded down to blocks), deep queue (capped) */
	tfs_dev_set_queue(f->d, 3 * 4096 + 100, 1000);
	memset(r, 0, len);
	assert_int_equal(tfs_dev_read(f->d, r, len, 2 * MiB), 0);
	assert_memory_equal(r, w, len);
	tfs_dev_get_stats(f->d, &s0);
	assert_int_equal(s0.reads - s1.reads,
			 (len + 3 * 4096 - 1) / (3 * 4096));
	assert_int_equal(s0.read_bytes - s1.read_bytes, len);
	/* nonsense settings are ignored */
	tfs_dev_set_queue(f->d, 100, 0);
	assert_int_equal(tfs_dev_read(f->d, r, len, 2 * MiB), 0);
	assert_memory_equal(r, w, len);
	tfs_io_free(w);
	tfs_io_free(r);
}

#ifdef TFS_TEST_HOOKS
static void test_io_short_completions_are_resubmitted(void **state)
{
	struct fix *f = *state;
	size_t len = 4 * MiB;
	uint8_t *w = xalloc(len), *r = xalloc(len);
	struct tfs_dev_stats s0, s1;

	tfs_dev_set_queue(f->d, MiB, 4);
	fill_pat(w, len, 0, 7);
	tfs_dev_get_stats(f->d, &s0);
	/* every 1 MiB request comes back with half: the rest is sent again */
	tfs_dev_short_transfers(f->d, 4);
	assert_int_equal(tfs_dev_write(f->d, w, len, MiB), 0);
	tfs_dev_get_stats(f->d, &s1);
	assert_int_equal(s1.writes - s0.writes, 4);
	assert_int_equal(s1.submitted - s0.submitted, 8);
	assert_int_equal(s1.write_bytes - s0.write_bytes, len);
	tfs_dev_short_transfers(f->d, 3);
	memset(r, 0, len);
	assert_int_equal(tfs_dev_read(f->d, r, len, MiB), 0);
	assert_memory_equal(r, w, len);
	tfs_dev_get_stats(f->d, &s0);
	assert_int_equal(s0.reads - s1.reads, 4);
	assert_int_equal(s0.submitted - s1.submitted, 7);
	/* and the bytes are on the image where they belong */
	assert_int_equal(img_pread(f->path, MiB + 3 * MiB + 5, r, 4096), 0);
	assert_memory_equal(r, w + 3 * MiB + 5, 4096);
	tfs_io_free(w);
	tfs_io_free(r);
}
#else
SKIP_WITHOUT_TEST_HOOKS(test_io_short_completions_are_resubmitted)
#endif

static void test_io_submit_modes_move_the_same_bytes(void **state)
{
	struct fix *f = *state;
	size_t len = 3 * MiB + 4096;
	uint8_t *w = xalloc(len), *r = xalloc(len);
	struct tfs_dev_stats s0, s1;

	tfs_dev_set_queue(f->d, 256 * 1024, 8);
	for (int mode = 0; mode < 4; mode++) {
		/* single_submit on or off, overlap on or off */
		tfs_dev_set_submit(f->d, mode & 1, !(mode & 2));
		fill_pat(w, len, 0, 20 + (unsigned)mode);
		tfs_dev_get_stats(f->d, &s0);
		assert_int_equal(tfs_dev_write(f->d, w, len, 8 * MiB), 0);
		memset(r, 0, len);
		assert_int_equal(tfs_dev_read(f->d, r, len, 8 * MiB), 0);
		assert_memory_equal(r, w, len);
		tfs_dev_get_stats(f->d, &s1);
		/* 13 requests each way, every one timed */
		assert_int_equal(s1.submitted - s0.submitted, 26);
		assert_int_equal(s1.inflight, 0);
		assert_true(s1.latency_ns > s0.latency_ns);
		assert_true(s1.latency_max_ns > 0);
		assert_true(s1.latency_max_ns <= s1.latency_ns);
	}
	tfs_dev_set_submit(f->d, 0, 1);
	tfs_io_free(w);
	tfs_io_free(r);
}

static void test_io_batches_scatter_and_gather(void **state)
{
	struct fix *f = *state;
	enum {
		N = 40
	};
	struct tfs_iov v[N];
	uint8_t *w = xalloc(N * 8192), *r = xalloc(N * 8192);

	tfs_dev_set_queue(f->d, 4096, 4);
	fill_pat(w, N * 8192, 0, 3);
	for (int i = 0; i < N; i++) {
		/* pieces in reverse order and apart on the device */
		v[i].buf = w + i * 8192;
		v[i].len = 8192;
		v[i].off = (uint64_t)(N - i) * 65536;
	}
	assert_int_equal(tfs_dev_writev(f->d, v, N), 0);
	memset(r, 0, N * 8192);
	for (int i = 0; i < N; i++)
		v[i].buf = r + i * 8192;
	assert_int_equal(tfs_dev_readv(f->d, v, N), 0);
	assert_memory_equal(r, w, N * 8192);
	/* one piece at a time agrees */
	assert_int_equal(tfs_dev_read(f->d, r, 8192, 65536), 0);
	assert_memory_equal(r, w + (N - 1) * 8192, 8192);
	assert_int_equal(tfs_dev_readv(f->d, v, 0), 0);
	tfs_io_free(w);
	tfs_io_free(r);
}

static void test_io_short_reads_past_end_are_eio(void **state)
{
	struct fix *f = *state;
	uint8_t *b = xalloc(2 * MiB);
	uint64_t size = tfs_dev_size(f->d);
	struct tfs_iov v[2] = { { b, 4096, 0 },
				{ b + 4096, 8192, size - 4096 } };

	assert_int_equal(size, IMG_BYTES);
	assert_int_equal(tfs_dev_read(f->d, b, 4096, size - 4096), 0);
	assert_int_equal(tfs_dev_read(f->d, b, 8192, size - 4096), -EIO);
	assert_int_equal(tfs_dev_read(f->d, b, 4096, size), -EIO);
	assert_int_equal(tfs_dev_read(f->d, b, 4096, 1ull << 40), -EIO);
	assert_int_equal(tfs_dev_write(f->d, b, 8192, size - 4096), -EIO);
	/* one piece of a batch past the end fails the batch */
	assert_int_equal(tfs_dev_readv(f->d, v, 2), -EIO);

	/*
	 * The image shrinks behind our back (another program truncates
	 * it): a read that reaches past the new end gets a short read and
	 * then end of file from the kernel, which must be -EIO too, not a
	 * success with stale bytes or a hang.
	 */
	assert_int_equal(truncate(f->path, 4 * MiB + 4096), 0);
	tfs_dev_set_queue(f->d, MiB, 8);
	assert_int_equal(tfs_dev_read(f->d, b, MiB, 3 * MiB), 0);
	assert_int_equal(tfs_dev_read(f->d, b, 2 * MiB, 3 * MiB), -EIO);
	assert_int_equal(tfs_dev_read(f->d, b, 4096, 8 * MiB), -EIO);
	tfs_io_free(b);
}

static void test_io_offset_overflow_is_eio(void **state)
{
	struct fix *f = *state;
	uint8_t *b = xalloc(8192);
	uint64_t off = UINT64_MAX & ~(uint64_t)(TFS_BLOCK_SIZE - 1);

	/* off + len wraps around to a small number: still past the end */
	assert_int_equal(tfs_dev_read(f->d, b, 8192, off), -EIO);
	assert_int_equal(tfs_dev_write(f->d, b, 8192, off), -EIO);
	tfs_io_free(b);
}

#ifdef TFS_TEST_HOOKS
static void test_io_injected_write_error_is_returned(void **state)
{
	struct fix *f = *state;
	uint8_t *b = xalloc(8192), *r = xalloc(8192);
	struct tfs_dev_stats s0, s1;

	fill_pat(b, 8192, 0, 4);
	assert_int_equal(tfs_dev_write(f->d, b, 8192, MiB), 0);
	tfs_dev_fail_writes(f->d, MiB, EIO);
	tfs_dev_get_stats(f->d, &s0);
	/* before 'from': fine; at, after, or reaching past it: the error */
	assert_int_equal(tfs_dev_write(f->d, b, 4096, MiB - 4096), 0);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, MiB), -EIO);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, 2 * MiB), -EIO);
	assert_int_equal(tfs_dev_write(f->d, b, 8192, MiB - 4096), -EIO);
	tfs_dev_get_stats(f->d, &s1);
	assert_int_equal(s1.errors - s0.errors, 3);
	/* nothing was written by a failed request */
	memset(r, 0, 8192);
	assert_int_equal(tfs_dev_read(f->d, r, 8192, MiB), 0);
	assert_memory_equal(r, b, 8192);
	/* reads are not affected; another errno is passed through */
	tfs_dev_fail_writes(f->d, 0, ENOSPC);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, 0), -ENOSPC);
	assert_int_equal(tfs_dev_read(f->d, r, 4096, 0), 0);
	/* err 0 turns it off */
	tfs_dev_fail_writes(f->d, 0, 0);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, MiB), 0);
	tfs_io_free(b);
	tfs_io_free(r);
}

static void test_io_fault_from_environment(void **state)
{
	struct fix *f = *state;
	struct tfs_dev *d;
	uint8_t *b = xalloc(4096);

	memset(b, 1, 4096);
	tfs_dev_close(f->d);
	f->d = NULL;
	assert_int_equal(setenv("TFS_FAULT_WRITE_EIO_FROM", "0x2000", 1), 0);
	assert_int_equal(tfs_dev_open(f->path, 0, &d), 0);
	unsetenv("TFS_FAULT_WRITE_EIO_FROM");
	assert_int_equal(tfs_dev_write(d, b, 4096, 4096), 0);
	assert_int_equal(tfs_dev_write(d, b, 4096, 8192), -EIO);
	tfs_dev_close(d);
	/* an empty value is off */
	assert_int_equal(setenv("TFS_FAULT_WRITE_EIO_FROM", "", 1), 0);
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
	unsetenv("TFS_FAULT_WRITE_EIO_FROM");
	assert_int_equal(tfs_dev_write(f->d, b, 4096, 8192), 0);
	tfs_io_free(b);
}
#else
SKIP_WITHOUT_TEST_HOOKS(test_io_injected_write_error_is_returned)
SKIP_WITHOUT_TEST_HOOKS(test_io_fault_from_environment)
#endif

static void test_io_readonly_device_refuses_writes(void **state)
{
	struct fix *f = *state;
	struct tfs_dev *d;
	uint8_t *b = xalloc(4096);

	memset(b, 7, 4096);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, 0), 0);
	tfs_dev_close(f->d);
	f->d = NULL;
	assert_int_equal(tfs_dev_open(f->path, TFS_DEV_RDONLY, &d), 0);
	assert_int_equal(tfs_dev_read(d, b, 4096, 0), 0);
	assert_int_equal(b[100], 7);
	assert_true(tfs_dev_write(d, b, 4096, 0) < 0);
	tfs_dev_close(d);
	assert_int_equal(tfs_dev_open(f->path, 0, &f->d), 0);
	tfs_io_free(b);
}

static void test_io_extend_grows_the_image(void **state)
{
	struct fix *f = *state;
	uint8_t *b = xalloc(4096);
	struct stat st;

	assert_int_equal(tfs_dev_read(f->d, b, 4096, IMG_BYTES), -EIO);
	assert_int_equal(tfs_dev_extend(f->d, 0, IMG_BYTES + MiB + 10), 0);
	assert_int_equal(tfs_dev_size(f->d), IMG_BYTES + MiB);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, IMG_BYTES + MiB + 10);
	memset(b, 9, 4096);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, IMG_BYTES), 0);
	assert_int_equal(tfs_dev_read(f->d, b, 4096, IMG_BYTES + MiB - 4096),
			 0);
	assert_int_equal(b[0], 0);
	tfs_io_free(b);
}

struct worker {
	struct tfs_dev *d;
	int id;
	int rc;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t len = 256 * 1024;
	uint8_t *b = tfs_io_alloc(len), *r = tfs_io_alloc(len);
	uint64_t base = (uint64_t)w->id * MiB;

	w->rc = !b || !r ? -ENOMEM : 0;
	for (int round = 0; round < 20 && !w->rc; round++) {
		uint64_t off = base + (uint64_t)(round % 4) * len;

		fill_pat(b, len, off, (unsigned int)round);
		w->rc = tfs_dev_write(w->d, b, len, off);
		if (!w->rc)
			w->rc = tfs_dev_read(w->d, r, len, off);
		if (!w->rc && memcmp(b, r, len))
			w->rc = -EILSEQ;
		if (!w->rc && round % 5 == 4)
			w->rc = tfs_dev_flush(w->d);
	}
	tfs_io_free(b);
	tfs_io_free(r);
	return NULL; /* the thread's ring goes with it */
}

static void test_io_threads_each_get_a_ring(void **state)
{
	struct fix *f = *state;
	enum {
		T = 6
	};
	pthread_t t[T];
	struct worker w[T];
	struct tfs_dev_stats s;

	for (int i = 0; i < T; i++) {
		w[i].d = f->d;
		w[i].id = i;
		w[i].rc = -1;
		assert_int_equal(
		    pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	tfs_dev_get_stats(f->d, &s);
	assert_true(s.write_bytes >= T * 20ull * 256 * 1024);
	assert_true(s.flushes >= T * 4);
	assert_int_equal(s.errors, 0);
}

static void test_io_thread_exit_then_next_request_works(void **state)
{
	struct fix *f = *state;
	uint8_t *b = xalloc(4096);

	memset(b, 3, 4096);
	assert_int_equal(tfs_dev_write(f->d, b, 4096, 0), 0);
	tfs_io_thread_exit();
	tfs_io_thread_exit(); /* no ring: harmless */
	assert_int_equal(tfs_dev_read(f->d, b, 4096, 0), 0);
	assert_int_equal(b[4095], 3);
	assert_int_equal(tfs_dev_flush(f->d), 0);
	tfs_io_free(b);
}

/* ----- sets of several members ----- */

#define SET_N 3

struct set {
	char path[SET_N][64];
	const char *paths[SET_N];
	struct tfs_dev *d;
};

/* Members of 8, 12 and 4 MiB (sizes may differ). */
static void set_make(struct set *s)
{
	static const uint64_t mib[SET_N] = { 8, 12, 4 };
	int bad = 99;

	for (int i = 0; i < SET_N; i++) {
		assert_int_equal(img_make(s->path[i], mib[i] * MiB), 0);
		s->paths[i] = s->path[i];
	}
	assert_int_equal(tfs_dev_open_set(s->paths, SET_N, 0, &s->d, &bad), 0);
	assert_int_equal(bad, -1);
}

static void set_drop(struct set *s)
{
	tfs_dev_close(s->d);
	for (int i = 0; i < SET_N; i++)
		unlink(s->path[i]);
}

static void test_io_set_routes_each_piece_to_its_member(void **state)
{
	struct set s;
	size_t len = 2 * MiB + 4096;
	uint8_t *w = xalloc(3 * len), *r = xalloc(3 * len);
	struct tfs_iov v[SET_N];
	struct tfs_dev_stats all, m;

	(void)state;
	set_make(&s);
	assert_int_equal(tfs_dev_members(s.d), SET_N);
	assert_int_equal(tfs_dev_member_size(s.d, 1), 12 * MiB);
	assert_int_equal(tfs_dev_member_size(s.d, 2), 4 * MiB);
	assert_int_equal(tfs_dev_member_size(s.d, 3), 0);
	assert_int_equal(tfs_dev_size(s.d), 8 * MiB);
	assert_string_equal(tfs_dev_member_path(s.d, 1), s.path[1]);
	assert_null(tfs_dev_member_path(s.d, 3));
	assert_int_equal(tfs_dev_failed_member(s.d), -1);
	/* one batch over all three members, the last piece at its end */
	fill_pat(w, 3 * len, 0, 7);
	for (int i = 0; i < SET_N; i++) {
		v[i].buf = w + (size_t)i * len;
		v[i].len = len;
		v[i].off = tfs_dev_off((unsigned)i, i == 2 ? 4 * MiB - len
							   : (uint64_t)i * MiB);
	}
	tfs_dev_set_queue(s.d, 256 * 1024, 2);
	assert_int_equal(tfs_dev_writev(s.d, v, SET_N), 0);
	for (int i = 0; i < SET_N; i++)
		v[i].buf = r + (size_t)i * len;
	memset(r, 0, 3 * len);
	assert_int_equal(tfs_dev_readv(s.d, v, SET_N), 0);
	assert_memory_equal(r, w, 3 * len);
	/* seen from outside: each member's bytes at its own offset */
	for (int i = 0; i < SET_N; i++) {
		assert_int_equal(img_pread(s.path[i],
					   tfs_off_local(v[i].off) + 4095, r,
					   100),
				 0);
		assert_memory_equal(r, w + (size_t)i * len + 4095, 100);
		tfs_dev_member_stats(s.d, (unsigned)i, &m);
		assert_int_equal(m.write_bytes, len);
		assert_int_equal(m.read_bytes, len);
		assert_int_equal(m.writes, 9); /* 256 KiB pieces */
		assert_int_equal(m.inflight, 0);
	}
	tfs_dev_get_stats(s.d, &all);
	assert_int_equal(all.write_bytes, 3 * len);
	assert_int_equal(all.writes, 27);
	/* a piece past its member's end, or in no member: -EIO */
	assert_int_equal(
	    tfs_dev_read(s.d, r, 8192, tfs_dev_off(2, 4 * MiB - 4096)), -EIO);
	assert_int_equal(tfs_dev_read(s.d, r, 4096, tfs_dev_off(3, 0)), -EIO);
	assert_int_equal(tfs_dev_discard(s.d, tfs_dev_off(3, 0), 4096),
			 -EINVAL);
	assert_int_equal(tfs_dev_discard(s.d, tfs_dev_off(1, 0), MiB), 0);
	assert_int_equal(img_pread(s.path[1], 4096, r, 4096), 0);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(r[i], 0);
	set_drop(&s);
	tfs_io_free(w);
	tfs_io_free(r);
}

static void test_io_set_flushes_only_written_members(void **state)
{
	struct set s;
	uint8_t *w = xalloc(4096);
	struct tfs_dev_stats m[SET_N];

	(void)state;
	set_make(&s);
	memset(w, 0xab, 4096);
	assert_int_equal(tfs_dev_write(s.d, w, 4096, tfs_dev_off(2, 0)), 0);
	assert_int_equal(tfs_dev_flush(s.d), 0);
	/* member 0 (the journal's) always, member 2 because it was written */
	for (unsigned int i = 0; i < SET_N; i++)
		tfs_dev_member_stats(s.d, i, &m[i]);
	assert_int_equal(m[0].flushes, 1);
	assert_int_equal(m[1].flushes, 0);
	assert_int_equal(m[2].flushes, 1);
	assert_int_equal(tfs_dev_flush(s.d), 0);
	for (unsigned int i = 0; i < SET_N; i++)
		tfs_dev_member_stats(s.d, i, &m[i]);
	assert_int_equal(m[0].flushes, 2);
	assert_int_equal(m[2].flushes, 1);
	/* a discard is a write: member 1 is flushed after one */
	assert_int_equal(tfs_dev_discard(s.d, tfs_dev_off(1, 0), 4096), 0);
	assert_int_equal(tfs_dev_flush(s.d), 0);
	tfs_dev_member_stats(s.d, 1, &m[1]);
	assert_int_equal(m[1].flushes, 1);
	set_drop(&s);
	tfs_io_free(w);
}

static void test_io_set_open_names_the_bad_member(void **state)
{
	struct set s;
	struct tfs_dev *d = NULL;
	const char *p[SET_N];
	int bad = 99;

	(void)state;
	set_make(&s);
	tfs_dev_close(s.d);
	/* the same file twice */
	p[0] = s.path[0];
	p[1] = s.path[1];
	p[2] = s.path[0];
	assert_int_equal(tfs_dev_open_set(p, SET_N, 0, &d, &bad), -EEXIST);
	assert_int_equal(bad, 2);
	/* a member that is missing, or not a file or block device */
	p[2] = "/tmp/tfs-ut-does-not-exist";
	assert_int_equal(tfs_dev_open_set(p, SET_N, 0, &d, &bad), -ENOENT);
	assert_int_equal(bad, 2);
	p[1] = "/dev/null";
	assert_int_equal(tfs_dev_open_set(p, SET_N, 0, &d, &bad), -ENOTBLK);
	assert_int_equal(bad, 1);
	assert_int_equal(tfs_dev_open_set(p, 0, 0, &d, &bad), -EINVAL);
	assert_int_equal(bad, -1);
	assert_null(d);
	/* every member locked: a second open of the set, or of one member */
	assert_int_equal(tfs_dev_open_set(s.paths, SET_N, 0, &s.d, &bad), 0);
	assert_int_equal(tfs_dev_open(s.path[2], 0, &d), -EBUSY);
	assert_null(d);
	/* an order that is not a permutation is refused, nothing moved */
	{
		static const unsigned int twice[SET_N] = { 1, 1, 0 };
		static const unsigned int past[SET_N] = { 0, 1, SET_N };
		static const unsigned int turn[SET_N] = { 2, 0, 1 };

		assert_int_equal(tfs_dev_reorder(s.d, twice), -EINVAL);
		assert_int_equal(tfs_dev_reorder(s.d, past), -EINVAL);
		for (unsigned int i = 0; i < SET_N; i++)
			assert_string_equal(tfs_dev_member_path(s.d, i),
					    s.path[i]);
		assert_int_equal(tfs_dev_reorder(s.d, turn), 0);
		for (unsigned int i = 0; i < SET_N; i++)
			assert_string_equal(tfs_dev_member_path(s.d, i),
					    s.path[turn[i]]);
	}
	set_drop(&s);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_io_alloc_is_block_aligned),
		cmocka_unit_test(test_io_size_is_rounded_down_to_blocks),
		cmocka_unit_test(test_io_open_errors),
		T(test_io_second_open_is_ebusy),
		T(test_io_write_read_roundtrip),
		T(test_io_small_pieces_and_shallow_queue),
		T(test_io_short_completions_are_resubmitted),
		T(test_io_submit_modes_move_the_same_bytes),
		T(test_io_batches_scatter_and_gather),
		T(test_io_short_reads_past_end_are_eio),
		T(test_io_offset_overflow_is_eio),
		T(test_io_injected_write_error_is_returned),
		T(test_io_fault_from_environment),
		T(test_io_readonly_device_refuses_writes),
		T(test_io_extend_grows_the_image),
		T(test_io_threads_each_get_a_ring),
		T(test_io_thread_exit_then_next_request_works),
		cmocka_unit_test(test_io_set_routes_each_piece_to_its_member),
		cmocka_unit_test(test_io_set_flushes_only_written_members),
		cmocka_unit_test(test_io_set_open_names_the_bad_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
