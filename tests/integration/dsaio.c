/*
 * dsaio.c: a client that does to files exactly what DeepSpeed's async_io op
 * (csrc/aio: deepspeed_py_io_handle, deepspeed_aio_thread, cpu_op_desc_t,
 * deepspeed_aio_common) does when it swaps tensors to NVMe, and checks
 * every result DeepSpeed ignores.
 *
 *   dsaio write  DIR NFILES FILE_BYTES [OPTIONS]
 *   dsaio read   DIR NFILES FILE_BYTES [OPTIONS]
 *   dsaio verify DIR NFILES FILE_BYTES [OPTIONS]
 *
 * The files are DIR/<i>_param.tensor.swp, i = 0 .. NFILES-1, as DeepSpeed's
 * partitioned parameter swapper names them.  Their content is
 * pattern(SEED, i, X) at offset X: byte X % 8, little-endian, of the 64-bit
 * word tfs_pattern_word(key(SEED, i), X / 8) (tfs_test_pattern.h), so a byte of another
 * file, another seed or another offset never passes for the right one.
 *
 * What DeepSpeed does, and so what this does:
 *  - libaio (io_queue_init, io_prep_pwrite/io_prep_pread, io_submit,
 *    io_getevents); one aio context of queue-depth entries per I/O thread,
 *    the threads and contexts living as long as the handle (the process);
 *  - every request opens the file: open(O_WRONLY|O_CREAT|O_DIRECT, 0600),
 *    without O_TRUNC, to write, and stat() then open(O_RDONLY|O_DIRECT) to
 *    read; the descriptor is closed once every thread has finished with it;
 *  - the tensor buffer (FILE_BYTES long to write) is split into P equal
 *    slices, P = intra_op_parallelism (--threads); thread T moves slice T
 *    at file offset T x slice through the ONE shared descriptor, in
 *    block-size requests from the slice start, the last one shorter, with
 *    queue-depth requests in flight (refilled as each completes; with
 *    --sequential, DeepSpeed's overlap_events=false, a batch of queue-depth
 *    requests is submitted and all of it reaped before the next);
 *  - the buffers are aligned to 1 KiB only (AIO_ALIGNED_BYTES): each is
 *    1 KiB-aligned and deliberately NOT 4 KiB-aligned; FILE_BYTES must be a
 *    multiple of 1024 x P (the swapper's numel alignment), so the slices of
 *    P > 1 threads start inside 4 KiB blocks and threads writing
 *    neighbouring slices share those blocks;
 *  - to read, the buffer is longer than the file: FILE_BYTES rounded up to
 *    a multiple of --read-align (default: the block size), cut into P
 *    slices as above, so the requests near the end run past end of file
 *    and complete short (or with 0);
 *  - several files can be in flight at once (--files-in-flight N, like
 *    async_pwrite of N tensors and then wait()): each thread works through
 *    the files in order, and the file whose threads have all finished is
 *    closed and checked while the threads go on with the next ones;
 *  - no fsync, ftruncate, fallocate or mmap, ever.
 *
 * What DeepSpeed does not do, and this does:
 *  - every completion is checked: a write must return its length; a read
 *    must return min(length, max(0, st_size - offset)); a negative result,
 *    a short or long one, res2 != 0 or an event for an unknown iocb fails;
 *  - write: once a file's descriptor is closed, stat() must report
 *    st_size == FILE_BYTES at once;
 *  - read: stat() must report st_size == FILE_BYTES; every byte read must
 *    be the pattern, and the bytes of the buffer past end of file must be
 *    untouched (they are poisoned before the read) or zero (a kernel file
 *    system such as ext4 zeroes the rest of the last block): never data;
 *  - verify: read, and then what DeepSpeed's validate=True does: read the
 *    file again with plain buffered read() and compare, so the page-cache
 *    path must agree with the O_DIRECT one; read() must return exactly
 *    st_size bytes.
 *
 * Exit 0 when everything checks, 1 with one line per failure on stderr
 * (file, offset, expected against got, or the errno), 2 on a usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libaio.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "tfs_test_pattern.h"

#define EXIT_FAIL  1
#define EXIT_USAGE 2

#define DS_ALIGN	1024u	   /* AIO_ALIGNED_BYTES */
#define DS_POISON	0xa5u	   /* read buffers before the read */
#define DS_CHUNK	(1u << 20) /* verification and read() unit */
#define DS_MAX_FAILURES 50	   /* lines printed; the rest counted */
#define DS_SUFFIX	"_param.tensor.swp"

enum mode {
	MODE_WRITE,
	MODE_READ,
	MODE_VERIFY
};

struct opts {
	enum mode mode;
	const char *dir;
	uint64_t nfiles;
	uint64_t file_bytes;
	uint64_t block_size;
	unsigned int queue_depth;
	unsigned int threads;
	uint64_t seed;
	int sequential;
	int single_submit;
	unsigned int in_flight;
	uint64_t read_align;
	unsigned int timeout;
};

static struct opts o = {
	.block_size = 1u << 20,
	.queue_depth = 8,
	.threads = 1,
	.seed = 1,
	.in_flight = 1,
	.timeout = 120,
};

/* ===== failures ===== */

static pthread_mutex_t g_fail_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long g_failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g_fail_lock);
	if (++g_failures <= DS_MAX_FAILURES) {
		fputs("dsaio: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&g_fail_lock);
}

/* an error the run cannot go on after (no memory, no aio context) */
_Noreturn static void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

_Noreturn static void fatal(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g_fail_lock);
	fputs("dsaio: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(EXIT_FAIL);
}

/* ===== the pattern ===== */

static uint64_t file_key(uint64_t idx)
{
	return tfs_mix64(tfs_mix64(o.seed ^ 0x6473616966696c65ull) +
			 (idx + 1) * 0xd1b54a32d192ed03ull);
}

/* buf[0 .. len) = pattern of the file with this key, from offset off */
static void pattern_fill(uint64_t key, uint64_t off, unsigned char *buf,
			 size_t len)
{
	size_t i = 0;
	uint64_t w, le;

	for (; i < len && (off + i) % 8; i++) /* head */
		buf[i] = (unsigned char)(tfs_pattern_word(key, (off + i) / 8) >>
					 (8 * ((off + i) % 8)));
	for (w = (off + i) / 8; len - i >= 8; i += 8, w++) {
		le = htole64(tfs_pattern_word(key, w));
		memcpy(buf + i, &le, 8);
	}
	for (; i < len; i++) /* tail */
		buf[i] = (unsigned char)(tfs_pattern_word(key, w) >>
					 (8 * ((off + i) % 8)));
}

/*
 * Compare got[0 .. len), the file's bytes from offset off, with the
 * pattern; *scratch holds DS_CHUNK bytes.  Returns the number of differing
 * bytes and describes them in *d.
 */
struct diff {
	uint64_t bad, first, last;
	unsigned char want, got;  /* at first */
	int all_zero, all_poison; /* of the differing bytes */
};

static void diff_init(struct diff *d)
{
	memset(d, 0, sizeof(*d));
	d->all_zero = d->all_poison = 1;
}

static void compare(uint64_t key, uint64_t off, const unsigned char *got,
		    size_t len, unsigned char *scratch, struct diff *d)
{
	size_t done, i;

	for (done = 0; done < len; done += DS_CHUNK) {
		size_t n = len - done < DS_CHUNK ? len - done : DS_CHUNK;
		const unsigned char *g = got + done;

		pattern_fill(key, off + done, scratch, n);
		if (!memcmp(g, scratch, n))
			continue;
		for (i = 0; i < n; i++) {
			if (g[i] == scratch[i])
				continue;
			if (!d->bad) {
				d->first = off + done + i;
				d->want = scratch[i];
				d->got = g[i];
			}
			d->bad++;
			d->last = off + done + i;
			if (g[i])
				d->all_zero = 0;
			if (g[i] != DS_POISON)
				d->all_poison = 0;
		}
	}
}

static void report_diff(const char *path, const char *how, const struct diff *d)
{
	fail("%s: %s: %" PRIu64 " bytes differ in [%" PRIu64 ", %" PRIu64
	     "]: first at offset %" PRIu64 " (4 KiB block %" PRIu64
	     " + %" PRIu64 "): expected 0x%02x, got 0x%02x%s",
	     path, how, d->bad, d->first, d->last, d->first, d->first / 4096,
	     d->first % 4096, d->want, d->got,
	     d->all_zero     ? " (every differing byte is zero)"
	     : d->all_poison ? " (every differing byte is the poison: not "
			       "filled by the read)"
			     : "");
}

/* ===== buffers ===== */

/* len bytes, 1 KiB-aligned and not 4 KiB-aligned, as DeepSpeed's pinned
 * tensors may be; *raw is what to free() */
static unsigned char *buf_alloc(size_t len, void **raw)
{
	unsigned char *p;
	int rc = posix_memalign(raw, DS_ALIGN, len + DS_ALIGN);

	if (rc)
		fatal("cannot allocate a buffer of %zu bytes: %s", len,
		      strerror(rc));
	p = *raw;
	if ((uintptr_t)p % 4096 == 0)
		p += DS_ALIGN;
	return p;
}

/* ===== one file's request, shared by every thread ===== */

struct op {
	uint64_t idx;
	char path[PATH_MAX];
	int fd; /* -1: open failed, the threads skip it */
	int read;
	unsigned char *buf; /* the tensor buffer */
	void *raw;
	uint64_t buf_bytes; /* whole buffer; a slice is buf_bytes / P */
	uint64_t eof;	    /* reads: st_size, what completions must honour */
	unsigned int done;  /* threads finished with it */
};

static struct op *g_ops;  /* o.in_flight slots; op s is in slot s % N */
static uint64_t g_queued; /* ops published: 0 .. g_queued-1 */
static int g_quit;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER;

/* ===== the I/O threads (deepspeed_aio_thread_t) ===== */

struct worker {
	unsigned int tid;
	pthread_t th;
	io_context_t ctx;
	struct iocb *iocbs; /* queue_depth of them */
	struct iocb **ptrs; /* submission list */
	struct io_event *events;
	long *expect; /* per iocb: the result it must complete with */
	unsigned int *free_slots;
	unsigned int nfree;
};

struct slice {
	struct op *op;
	uint64_t start; /* file offset, = buffer offset */
	uint64_t len;
	uint64_t nblocks, next;
	unsigned int pending;
	int stop; /* a submit failed: reap, submit no more */
};

static void prep_block(struct worker *w, struct slice *s, unsigned int slot)
{
	struct iocb *cb = &w->iocbs[slot];
	uint64_t off = s->next * o.block_size;
	uint64_t len =
	    s->len - off < o.block_size ? s->len - off : o.block_size;
	uint64_t fo = s->start + off;

	if (s->op->read) {
		io_prep_pread(cb, s->op->fd, s->op->buf + fo, len,
			      (long long)fo);
		w->expect[slot] = fo >= s->op->eof ? 0
				  : s->op->eof - fo < len
				      ? (long)(s->op->eof - fo)
				      : (long)len;
	} else {
		io_prep_pwrite(cb, s->op->fd, s->op->buf + fo, len,
			       (long long)fo);
		w->expect[slot] = (long)len;
	}
	s->next++;
}

/* submit ptrs[0 .. n); returns how many went in */
static unsigned int submit(struct worker *w, struct slice *s, unsigned int n)
{
	unsigned int in = 0;

	while (in < n) {
		long k = o.single_submit ? 1 : (long)(n - in);
		int rc = io_submit(w->ctx, k, w->ptrs + in);

		if (rc == -EINTR || rc == -EAGAIN)
			continue;
		if (rc <= 0) {
			struct iocb *cb = w->ptrs[in];

			fail("%s: thread %u: io_submit of %s at offset %lld "
			     "length %lu: %s",
			     s->op->path, w->tid,
			     s->op->read ? "pread" : "pwrite", cb->u.c.offset,
			     cb->u.c.nbytes,
			     rc ? strerror(-rc) : "submitted nothing");
			s->stop = 1;
			break;
		}
		in += (unsigned int)rc;
	}
	/* slots of the iocbs that did not go in are free again */
	for (unsigned int i = in; i < n; i++)
		w->free_slots[w->nfree++] =
		    (unsigned int)(w->ptrs[i] - w->iocbs);
	return in;
}

/* reap at least min_nr completions and check each */
static void reap(struct worker *w, struct slice *s, long min_nr)
{
	struct timespec ts = { .tv_sec = o.timeout };
	int got, i;

	do
		got = io_getevents(w->ctx, min_nr, s->pending, w->events, &ts);
	while (got == -EINTR);
	if (got < 0)
		fatal("%s: thread %u: io_getevents: %s", s->op->path, w->tid,
		      strerror(-got));
	if (got < min_nr)
		fatal("%s: thread %u: %u requests in flight, %d completed in "
		      "%u s (hang)",
		      s->op->path, w->tid, s->pending, got, o.timeout);
	for (i = 0; i < got; i++) {
		struct io_event *ev = &w->events[i];
		struct iocb *cb = ev->obj;
		long res = (long)ev->res;
		unsigned int slot;

		if (cb < w->iocbs || cb >= w->iocbs + o.queue_depth)
			fatal("%s: thread %u: completion for an iocb never "
			      "submitted (%p)",
			      s->op->path, w->tid, (void *)cb);
		slot = (unsigned int)(cb - w->iocbs);
		if (res < 0)
			fail("%s: thread %u: %s at offset %lld length %lu: %s "
			     "(expected %ld bytes)",
			     s->op->path, w->tid,
			     s->op->read ? "pread" : "pwrite", cb->u.c.offset,
			     cb->u.c.nbytes, strerror((int)-res),
			     w->expect[slot]);
		else if (res != w->expect[slot])
			fail("%s: thread %u: %s at offset %lld length %lu "
			     "returned %ld bytes, expected %ld%s",
			     s->op->path, w->tid,
			     s->op->read ? "pread" : "pwrite", cb->u.c.offset,
			     cb->u.c.nbytes, res, w->expect[slot],
			     s->op->read ? "" : " (short write)");
		if (ev->res2)
			fail("%s: thread %u: %s at offset %lld: res2 %lu, "
			     "expected 0",
			     s->op->path, w->tid,
			     s->op->read ? "pread" : "pwrite", cb->u.c.offset,
			     (unsigned long)ev->res2);
		w->free_slots[w->nfree++] = slot;
		s->pending--;
	}
}

/* do_aio_operation_overlap: keep queue_depth requests in flight */
static void run_overlap(struct worker *w, struct slice *s)
{
	for (;;) {
		unsigned int n = 0;

		while (!s->stop && s->next < s->nblocks &&
		       s->pending + n < o.queue_depth) {
			unsigned int slot = w->free_slots[--w->nfree];

			prep_block(w, s, slot);
			w->ptrs[n++] = &w->iocbs[slot];
		}
		if (n)
			s->pending += submit(w, s, n);
		if (!s->pending)
			break;
		reap(w, s, 1);
	}
}

/* do_aio_operation_sequential: a batch of queue_depth, reap all of it */
static void run_sequential(struct worker *w, struct slice *s)
{
	while (!s->stop && s->next < s->nblocks) {
		unsigned int n = 0;

		while (s->next < s->nblocks && n < o.queue_depth) {
			unsigned int slot = w->free_slots[--w->nfree];

			prep_block(w, s, slot);
			w->ptrs[n++] = &w->iocbs[slot];
		}
		s->pending += submit(w, s, n);
		while (s->pending)
			reap(w, s, s->pending);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t seq = 0;

	for (;;) {
		struct op *op;
		struct slice s;

		pthread_mutex_lock(&g_lock);
		while (seq >= g_queued && !g_quit)
			pthread_cond_wait(&g_work, &g_lock);
		if (seq >= g_queued) {
			pthread_mutex_unlock(&g_lock);
			return NULL;
		}
		op = &g_ops[seq % o.in_flight];
		pthread_mutex_unlock(&g_lock);

		if (op->fd >= 0) {
			memset(&s, 0, sizeof(s));
			s.op = op;
			s.len = op->buf_bytes / o.threads;
			s.start = s.len * w->tid;
			s.nblocks = (s.len + o.block_size - 1) / o.block_size;
			if (o.sequential)
				run_sequential(w, &s);
			else
				run_overlap(w, &s);
		}

		pthread_mutex_lock(&g_lock);
		op->done++;
		pthread_cond_broadcast(&g_done);
		pthread_mutex_unlock(&g_lock);
		seq++;
	}
}

static struct worker *start_workers(void)
{
	struct worker *ws = calloc(o.threads, sizeof(*ws));
	unsigned int t, i;
	int rc;

	if (!ws)
		fatal("out of memory");
	for (t = 0; t < o.threads; t++) {
		struct worker *w = &ws[t];

		w->tid = t;
		rc = io_queue_init((int)o.queue_depth, &w->ctx);
		if (rc)
			fatal("io_queue_init(%u) for thread %u: %s",
			      o.queue_depth, t, strerror(-rc));
		w->iocbs = calloc(o.queue_depth, sizeof(*w->iocbs));
		w->ptrs = calloc(o.queue_depth, sizeof(*w->ptrs));
		w->events = calloc(o.queue_depth, sizeof(*w->events));
		w->expect = calloc(o.queue_depth, sizeof(*w->expect));
		w->free_slots = calloc(o.queue_depth, sizeof(*w->free_slots));
		if (!w->iocbs || !w->ptrs || !w->events || !w->expect ||
		    !w->free_slots)
			fatal("out of memory");
		for (i = 0; i < o.queue_depth; i++)
			w->free_slots[i] = o.queue_depth - 1 - i;
		w->nfree = o.queue_depth;
		rc = pthread_create(&w->th, NULL, worker_main, w);
		if (rc)
			fatal("pthread_create: %s", strerror(rc));
	}
	return ws;
}

static void stop_workers(struct worker *ws)
{
	unsigned int t;

	pthread_mutex_lock(&g_lock);
	g_quit = 1;
	pthread_cond_broadcast(&g_work);
	pthread_mutex_unlock(&g_lock);
	for (t = 0; t < o.threads; t++) {
		pthread_join(ws[t].th, NULL);
		io_queue_release(ws[t].ctx);
		free(ws[t].iocbs);
		free(ws[t].ptrs);
		free(ws[t].events);
		free(ws[t].expect);
		free(ws[t].free_slots);
	}
	free(ws);
}

/* ===== the main thread: open, schedule, wait, close, check ===== */

static void file_path(struct op *op, uint64_t idx)
{
	op->idx = idx;
	snprintf(op->path, sizeof(op->path), "%s/%" PRIu64 DS_SUFFIX, o.dir,
		 idx);
}

static void publish(uint64_t seq)
{
	pthread_mutex_lock(&g_lock);
	g_queued = seq + 1;
	pthread_cond_broadcast(&g_work);
	pthread_mutex_unlock(&g_lock);
}

static void wait_op(struct op *op)
{
	pthread_mutex_lock(&g_lock);
	while (op->done < o.threads)
		pthread_cond_wait(&g_done, &g_lock);
	pthread_mutex_unlock(&g_lock);
}

/* deepspeed_io_handle_t::pwrite: open, hand to every thread */
static void prepare_write(struct op *op, uint64_t idx)
{
	file_path(op, idx);
	op->read = 0;
	op->done = 0;
	op->buf_bytes = o.file_bytes;
	pattern_fill(file_key(idx), 0, op->buf, o.file_bytes);
	op->fd = open(op->path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
	if (op->fd < 0)
		fail("%s: open(O_WRONLY|O_CREAT|O_DIRECT): %s", op->path,
		     strerror(errno));
}

static void finish_write(struct op *op)
{
	struct stat st;

	wait_op(op);
	if (op->fd < 0)
		return;
	if (close(op->fd))
		fail("%s: close after writing: %s", op->path, strerror(errno));
	if (stat(op->path, &st))
		fail("%s: stat after writing: %s", op->path, strerror(errno));
	else if ((uint64_t)st.st_size != o.file_bytes)
		fail("%s: st_size %lld right after the writes completed and "
		     "the file was closed, expected %" PRIu64,
		     op->path, (long long)st.st_size, o.file_bytes);
}

static uint64_t read_buf_bytes(void)
{
	uint64_t a = o.read_align, n;

	n = (o.file_bytes + a - 1) / a * a;
	/* DeepSpeed refuses a buffer its threads cannot split evenly */
	while (n % ((uint64_t)DS_ALIGN * o.threads))
		n += a;
	return n;
}

/* deepspeed_io_handle_t::pread: stat, open, hand to every thread */
static void prepare_read(struct op *op, uint64_t idx)
{
	struct stat st;

	file_path(op, idx);
	op->read = 1;
	op->done = 0;
	op->buf_bytes = read_buf_bytes();
	op->fd = -1;
	memset(op->buf, DS_POISON, op->buf_bytes);
	if (stat(op->path, &st)) {
		fail("%s: stat before reading: %s", op->path, strerror(errno));
		return;
	}
	op->eof = (uint64_t)st.st_size;
	if (op->eof != o.file_bytes)
		fail("%s: st_size %" PRIu64 ", expected %" PRIu64, op->path,
		     op->eof, o.file_bytes);
	op->fd = open(op->path, O_RDONLY | O_DIRECT);
	if (op->fd < 0)
		fail("%s: open(O_RDONLY|O_DIRECT): %s", op->path,
		     strerror(errno));
}

/* DeepSpeed's validate: the file again through plain read() */
static void validate_buffered(struct op *op, unsigned char *chunk,
			      unsigned char *scratch)
{
	struct diff d;
	uint64_t key = file_key(op->idx), off = 0;
	int fd = open(op->path, O_RDONLY);

	if (fd < 0) {
		fail("%s: open(O_RDONLY) to validate: %s", op->path,
		     strerror(errno));
		return;
	}
	diff_init(&d);
	for (;;) {
		ssize_t n = read(fd, chunk, DS_CHUNK);

		if (n < 0) {
			fail("%s: buffered read() at offset %" PRIu64 ": %s",
			     op->path, off, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		compare(key, off, chunk, (size_t)n, scratch, &d);
		off += (uint64_t)n;
	}
	if (d.bad)
		report_diff(op->path, "buffered read() after the O_DIRECT read",
			    &d);
	if (off != op->eof)
		fail("%s: buffered read() returned %" PRIu64 " bytes in all "
		     "before end of file, but st_size is %" PRIu64,
		     op->path, off, op->eof);
	close(fd);
}

static void finish_read(struct op *op, unsigned char *chunk,
			unsigned char *scratch)
{
	struct diff d;
	uint64_t n, i, first = 0, changed = 0;

	wait_op(op);
	if (op->fd < 0)
		return;
	if (close(op->fd))
		fail("%s: close after reading: %s", op->path, strerror(errno));
	/* the bytes of the file */
	n = op->eof < o.file_bytes ? op->eof : o.file_bytes;
	diff_init(&d);
	compare(file_key(op->idx), 0, op->buf, n, scratch, &d);
	if (d.bad)
		report_diff(op->path, "O_DIRECT aio read", &d);
	/* the buffer past end of file: no data may land there.  Zeros may:
	 * a kernel file system zeroes the rest of the last block (ext4 does) */
	for (i = op->eof; i < op->buf_bytes; i++)
		if (op->buf[i] != DS_POISON && op->buf[i] && !changed++)
			first = i;
	if (changed)
		fail("%s: O_DIRECT aio read: %" PRIu64 " bytes of the buffer "
		     "past end of file (%" PRIu64 ") got data, first at "
		     "offset %" PRIu64 " (0x%02x), expected them untouched "
		     "(0x%02x) or zero",
		     op->path, changed, op->eof, first, op->buf[first],
		     DS_POISON);
	if (o.mode == MODE_VERIFY)
		validate_buffered(op, chunk, scratch);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(void)
{
	static const char *names[] = { "write", "read", "verify" };
	unsigned char *chunk = NULL, *scratch;
	struct worker *ws;
	uint64_t s, bytes, i;
	unsigned int nops;
	double t0, t;

	nops = o.nfiles < o.in_flight ? (unsigned int)o.nfiles : o.in_flight;
	o.in_flight = nops;
	g_ops = calloc(nops, sizeof(*g_ops));
	scratch = malloc(DS_CHUNK);
	if (o.mode == MODE_VERIFY)
		chunk = malloc(DS_CHUNK);
	if (!g_ops || !scratch || (o.mode == MODE_VERIFY && !chunk))
		fatal("out of memory");
	bytes = o.mode == MODE_WRITE ? o.file_bytes : read_buf_bytes();
	for (i = 0; i < nops; i++)
		g_ops[i].buf = buf_alloc(bytes, &g_ops[i].raw);

	ws = start_workers();
	t0 = now();
	for (s = 0; s < o.nfiles + nops; s++) {
		if (s >= nops) { /* the oldest file in flight is done */
			struct op *old = &g_ops[(s - nops) % nops];

			if (o.mode == MODE_WRITE)
				finish_write(old);
			else
				finish_read(old, chunk, scratch);
		}
		if (s < o.nfiles) {
			struct op *op = &g_ops[s % nops];

			if (o.mode == MODE_WRITE)
				prepare_write(op, s);
			else
				prepare_read(op, s);
			publish(s);
		}
	}
	t = now() - t0;
	stop_workers(ws);

	for (i = 0; i < nops; i++)
		free(g_ops[i].raw);
	free(g_ops);
	free(scratch);
	free(chunk);

	if (g_failures > DS_MAX_FAILURES)
		fprintf(stderr, "dsaio: %lu more failures\n",
			g_failures - DS_MAX_FAILURES);
	printf("dsaio: %s %s: %" PRIu64 " files x %" PRIu64 " bytes, %u "
	       "threads, queue depth %u, block %" PRIu64 "%s: %.2f s, %.0f "
	       "MiB/s; %lu failures\n",
	       names[o.mode], o.dir, o.nfiles, o.file_bytes, o.threads,
	       o.queue_depth, o.block_size, o.sequential ? ", sequential" : "",
	       t,
	       (double)(o.nfiles * o.file_bytes) / (1 << 20) / (t > 0 ? t : 1),
	       g_failures);
	return g_failures ? EXIT_FAIL : 0;
}

/* ===== command line ===== */

static void usage(FILE *fp)
{
	fprintf(
	    fp,
	    "usage: dsaio write|read|verify DIR NFILES FILE_BYTES [OPTIONS]\n"
	    "\n"
	    "Do to DIR/<i>_param.tensor.swp (i = 0 .. NFILES-1) what DeepSpeed's\n"
	    "async_io op does when it swaps tensors of FILE_BYTES to NVMe (libaio,\n"
	    "O_DIRECT, no O_TRUNC, P threads writing slices of one descriptor), and\n"
	    "check every completion, every size and every byte.\n"
	    "\n"
	    "  write    create or overwrite the files with the pattern of SEED; after\n"
	    "           each file is closed, its st_size must be FILE_BYTES\n"
	    "  read     read them back with DeepSpeed's read pattern (stat, open\n"
	    "           O_DIRECT, a buffer rounded up past end of file) and check\n"
	    "           every completion length and every byte against SEED\n"
	    "  verify   read, then read each file again with plain read() and check\n"
	    "           it too (DeepSpeed's validate=True)\n"
	    "\n"
	    "FILE_BYTES must be a multiple of 1024 x P.  Sizes take a K, M or G\n"
	    "suffix (powers of 1024).\n"
	    "\n"
	    "options:\n"
	    "  --block-size N       bytes per request; a multiple of 1024 (default 1M)\n"
	    "  --queue-depth N      requests in flight per thread (default 8)\n"
	    "  --threads P          intra_op_parallelism: threads per file (default 1)\n"
	    "  --seed S             content seed (default 1)\n"
	    "  --sequential         overlap_events=false: submit queue-depth requests,\n"
	    "                       reap all of them, repeat\n"
	    "  --single-submit      one io_submit() per request\n"
	    "  --files-in-flight N  schedule N files before waiting for the first, as\n"
	    "                       async_pwrite/async_pread then wait() (default 1)\n"
	    "  --read-align N       round the read buffer up to a multiple of N\n"
	    "                       (default: the block size; 1024 for no overrun)\n"
	    "  --timeout SEC        fail when requests do not complete in SEC seconds\n"
	    "                       (default 120)\n"
	    "  --help               this text\n"
	    "\n"
	    "Exit status: 0 all checked, 1 a failure (one line each on stderr: file,\n"
	    "offset, expected against got, or the errno), 2 a usage error.\n");
}

/* a size with an optional K/M/G suffix; 0 on error */
static int parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;
	unsigned int shift = 0;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	}
	if (*end || (shift && x > (UINT64_MAX >> shift)))
		return 0;
	*v = (uint64_t)x << shift;
	return 1;
}

static int bad_arg(const char *what, const char *val, const char *why)
{
	fprintf(stderr, "dsaio: %s '%s' %s; see --help\n", what, val, why);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	const char *pos[4];
	unsigned int npos = 0;
	uint64_t v;
	int i;

	o.read_align = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--sequential")) {
			o.sequential = 1;
			continue;
		}
		if (!strcmp(a, "--single-submit")) {
			o.single_submit = 1;
			continue;
		}
		if (a[0] == '-' && a[1] == '-') {
			if (!val) {
				fprintf(stderr,
					"dsaio: option '%s' needs a "
					"value; see --help\n",
					a);
				return EXIT_USAGE;
			}
			if (!parse_size(val, &v))
				return bad_arg(a, val, "is not a number");
			i++;
			if (!strcmp(a, "--block-size")) {
				if (!v || v % DS_ALIGN || v > (1u << 30))
					return bad_arg(
					    a, val,
					    "is not a "
					    "multiple of 1024 up to 1G");
				o.block_size = v;
			} else if (!strcmp(a, "--queue-depth")) {
				if (!v || v > 4096)
					return bad_arg(a, val,
						       "is not 1..4096");
				o.queue_depth = (unsigned int)v;
			} else if (!strcmp(a, "--threads")) {
				if (!v || v > 64)
					return bad_arg(a, val, "is not 1..64");
				o.threads = (unsigned int)v;
			} else if (!strcmp(a, "--seed")) {
				o.seed = v;
			} else if (!strcmp(a, "--files-in-flight")) {
				if (!v || v > 64)
					return bad_arg(a, val, "is not 1..64");
				o.in_flight = (unsigned int)v;
			} else if (!strcmp(a, "--read-align")) {
				if (!v || v % DS_ALIGN || v > (1u << 30))
					return bad_arg(
					    a, val,
					    "is not a "
					    "multiple of 1024 up to 1G");
				o.read_align = v;
			} else if (!strcmp(a, "--timeout")) {
				if (!v || v > 86400)
					return bad_arg(a, val,
						       "is not 1..86400");
				o.timeout = (unsigned int)v;
			} else {
				fprintf(stderr,
					"dsaio: unknown option '%s'; "
					"see --help\n",
					a);
				return EXIT_USAGE;
			}
			continue;
		}
		if (npos == 4) {
			fprintf(stderr,
				"dsaio: unexpected argument '%s'; see "
				"--help\n",
				a);
			return EXIT_USAGE;
		}
		pos[npos++] = a;
	}
	if (npos != 4) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(pos[0], "write"))
		o.mode = MODE_WRITE;
	else if (!strcmp(pos[0], "read"))
		o.mode = MODE_READ;
	else if (!strcmp(pos[0], "verify"))
		o.mode = MODE_VERIFY;
	else
		return bad_arg("command", pos[0],
			       "is not write, read or verify");
	o.dir = pos[1];
	if (!parse_size(pos[2], &o.nfiles) || !o.nfiles || o.nfiles > 1000000)
		return bad_arg("NFILES", pos[2], "is not 1..1000000");
	if (!parse_size(pos[3], &o.file_bytes) || !o.file_bytes ||
	    o.file_bytes > (1ull << 40))
		return bad_arg("FILE_BYTES", pos[3], "is not 1..1T");
	if (o.file_bytes % ((uint64_t)DS_ALIGN * o.threads)) {
		fprintf(stderr,
			"dsaio: FILE_BYTES %" PRIu64 " is not a "
			"multiple of 1024 x %u threads; see --help\n",
			o.file_bytes, o.threads);
		return EXIT_USAGE;
	}
	if (!o.read_align)
		o.read_align = o.block_size;
	return run();
}
