/*
 * io.c: the backing device through io_uring.
 *
 * Design: one io_uring per thread, created on the thread's first request
 * and torn down when the thread exits (a pthread key destructor).  A
 * request is cut into pieces of at most block_size bytes; up to
 * queue_depth pieces are in flight at once; each completion either ends
 * its piece, or (a short transfer) resubmits the rest of it, or (an
 * error) marks the request failed while the pieces in flight drain.
 * Nothing is shared between threads but the device's file descriptor and
 * its counters, so there is no lock here.
 *
 * Fault injection for tests (failing writes, short transfers, and the
 * fault device of io.h: a volatile write cache with power cuts, the nth
 * operation failing) exists only in a build with TFS_TEST_HOOKS; without
 * it the hooks below are empty and the compiler drops them.
 *
 * The fault device (test builds only) wraps the engine: tfs_dev_readv(),
 * _writev() and _flush() first ask fault_op() whether the operation
 * proceeds, fails, or cuts the power.  Its bookkeeping is under
 * fault_state.mu; with the volatile cache, writes also hold fault_state.rw
 * shared from before their blocks' old contents are saved (the undo log,
 * a hash of block number to old contents) until they complete, and a
 * flush or a cut holds it exclusive, so a flush covers exactly the writes
 * that completed before it and a cut sees no write half issued.  Lock
 * order: rw before mu.  States: powered -> cut [tfs_dev_powercut()];
 * cut -> powered only by tfs_dev_fault_set().
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "format.h"

#define RING_ENTRIES 64u

#ifdef TFS_TEST_HOOKS
struct fault_state;
#endif

struct tfs_dev {
	int fd;
	int blockdev;
	int direct;		/* opened with O_DIRECT */
	uint64_t size;
	size_t block_size;
	unsigned int queue_depth;
	int single_submit;	/* one request per submit call */
	int overlap;		/* refill the queue as requests complete */
#ifdef TFS_TEST_HOOKS
	uint64_t fail_from;	/* fault injection; UINT64_MAX = off */
	int fail_err;
	uint64_t short_left;	/* requests still to cut short (tests) */
	uint64_t discard_ms;	/* each discard waits this long first */
	uint64_t flush_skip;	/* flushes to let through, then ... */
	uint64_t flush_fail;	/* ... flushes to fail with -EIO (tests) */
	struct fault_state *fault;	/* the fault device, or NULL */
#endif
	uint64_t st_reads, st_writes, st_rbytes, st_wbytes, st_flush, st_err;
	uint64_t st_submitted, st_inflight, st_lat_ns, st_lat_max_ns;
};

/* ===== per-thread rings ===== */

#define REG_PIECE (1ull << 30)	/* the kernel's limit for one fixed buffer */

struct thread_ring {
	struct io_uring ring;
	int ok;
	uint8_t *reg;		/* registered (fixed) buffers, or NULL */
	size_t reg_len;
};

static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_destroy(void *p)
{
	struct thread_ring *t = p;

	if (t->ok)
		io_uring_queue_exit(&t->ring);
	free(t);
}

static void ring_key_init(void)
{
	(void)pthread_key_create(&ring_key, ring_destroy);
}

static struct thread_ring *this_ring(void)
{
	pthread_once(&ring_once, ring_key_init);
	return pthread_getspecific(ring_key);
}

static struct io_uring *thread_ring(int *err)
{
	struct thread_ring *t;
	int rc;

	pthread_once(&ring_once, ring_key_init);
	t = pthread_getspecific(ring_key);
	if (t)
		return &t->ring;
	t = calloc(1, sizeof(*t));
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	rc = io_uring_queue_init(RING_ENTRIES, &t->ring, 0);
	if (rc < 0) {
		free(t);
		*err = rc;
		return NULL;
	}
	t->ok = 1;
	pthread_setspecific(ring_key, t);
	return &t->ring;
}

void tfs_io_thread_exit(void)
{
	struct thread_ring *t;

	pthread_once(&ring_once, ring_key_init);
	t = pthread_getspecific(ring_key);
	if (!t)
		return;
	pthread_setspecific(ring_key, NULL);
	ring_destroy(t);
}

/* ===== test hooks ===== */

#ifdef TFS_TEST_HOOKS
static int fault_from_env(struct tfs_dev *d, const char *env);
static void fault_close(struct tfs_dev *d);

/* At open: no faults, or those the environment asks for. */
static int faults_init(struct tfs_dev *d)
{
	const char *env = getenv("TFS_FAULT_WRITE_EIO_FROM");

	d->fail_from = UINT64_MAX;
	if (env && *env) {
		d->fail_from = strtoull(env, NULL, 0);
		d->fail_err = EIO;
	}
	env = getenv("TFS_FAULT");
	return env && *env ? fault_from_env(d, env) : 0;
}

static void faults_release(struct tfs_dev *d)
{
	fault_close(d);
}

void tfs_dev_short_transfers(struct tfs_dev *d, uint64_t n)
{
	__atomic_store_n(&d->short_left, n, __ATOMIC_RELAXED);
}

void tfs_dev_slow_discards(struct tfs_dev *d, uint64_t ms)
{
	__atomic_store_n(&d->discard_ms, ms, __ATOMIC_RELAXED);
}

/* A discard's wait (tfs_dev_slow_discards()). */
static void discard_wait(struct tfs_dev *d)
{
	uint64_t ms = __atomic_load_n(&d->discard_ms, __ATOMIC_RELAXED);
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)(ms % 1000) * 1000000L };

	if (ms)
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
}

void tfs_dev_fail_writes(struct tfs_dev *d, uint64_t from, int err)
{
	d->fail_from = err ? from : UINT64_MAX;
	d->fail_err = err;
}

/* The errno a write of [off, off + len) is to fail with, or 0. */
static int injected_write_error(const struct tfs_dev *d, uint64_t off,
				size_t len)
{
	return d->fail_err && off + len > d->fail_from ? d->fail_err : 0;
}

void tfs_dev_fail_flushes(struct tfs_dev *d, uint64_t skip, uint64_t n)
{
	d->flush_skip = skip;
	d->flush_fail = n;
}

/* The errno this flush is to fail with (tfs_dev_fail_flushes()), or 0. */
static int injected_flush_error(struct tfs_dev *d)
{
	if (d->flush_skip) {
		d->flush_skip--;
		return 0;
	}
	if (d->flush_fail) {
		d->flush_fail--;
		return EIO;
	}
	return 0;
}

/* Whether to cut this request short (tfs_dev_short_transfers()). */
static int take_short(struct tfs_dev *d)
{
	uint64_t n = __atomic_load_n(&d->short_left, __ATOMIC_RELAXED);

	while (n && !__atomic_compare_exchange_n(&d->short_left, &n, n - 1, 1,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
		;
	return n != 0;
}
#else
static int faults_init(struct tfs_dev *d)
{
	(void)d;
	return 0;
}

static void faults_release(struct tfs_dev *d)
{
	(void)d;
}

static int injected_write_error(const struct tfs_dev *d, uint64_t off,
				size_t len)
{
	(void)d;
	(void)off;
	(void)len;
	return 0;
}

static int take_short(struct tfs_dev *d)
{
	(void)d;
	return 0;
}

static int injected_flush_error(struct tfs_dev *d)
{
	(void)d;
	return 0;
}
#endif

/* ===== open and close ===== */

int tfs_dev_open(const char *path, int flags, struct tfs_dev **out)
{
	struct tfs_dev *d;
	struct stat st;
	int oflags = (flags & TFS_DEV_RDONLY) ? O_RDONLY : O_RDWR;
	int rc = 0;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = -1;
	d->block_size = 1u << 20;
	d->queue_depth = 8;
	d->overlap = 1;
	if (stat(path, &st) < 0) {
		rc = -errno;
		goto out_free;
	}
	if (S_ISBLK(st.st_mode)) {
		d->blockdev = 1;
		if (!(flags & TFS_DEV_NOLOCK))
			oflags |= O_EXCL;
	} else if (!S_ISREG(st.st_mode)) {
		rc = -ENOTBLK;
		goto out_free;
	}
	d->fd = open(path, oflags | O_DIRECT | O_CLOEXEC);
	if (d->fd >= 0) {
		d->direct = 1;
	} else if (errno == EINVAL) {
		d->fd = open(path, oflags | O_CLOEXEC);
	}
	if (d->fd < 0) {
		rc = -errno;
		goto out_free;
	}
	if (!(flags & TFS_DEV_NOLOCK)) {
		/*
		 * A daemon that was just killed may hold the lock a little
		 * longer: the kernel drops its file only when its io_uring,
		 * torn down asynchronously, lets go.  Wait up to a second.
		 */
		for (int tries = 0;; tries++) {
			if (flock(d->fd, LOCK_EX | LOCK_NB) == 0)
				break;
			if (errno != EWOULDBLOCK || tries == 50) {
				rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
				goto out_close;
			}
			usleep(20000);
		}
	}
	if (d->blockdev) {
		uint64_t bytes;

		if (ioctl(d->fd, BLKGETSIZE64, &bytes) < 0) {
			rc = -errno;
			goto out_close;
		}
		d->size = bytes & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	} else {
		d->size = (uint64_t)st.st_size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	}
	rc = faults_init(d);
	if (rc)
		goto out_close;
	*out = d;
	return 0;

out_close:
	close(d->fd);
out_free:
	free(d);
	return rc;
}

void tfs_dev_close(struct tfs_dev *d)
{
	if (!d)
		return;
	faults_release(d);
	close(d->fd);
	free(d);
}

uint64_t tfs_dev_size(const struct tfs_dev *d)
{
	return d->size;
}

int tfs_dev_is_blockdev(const struct tfs_dev *d)
{
	return d->blockdev;
}

void tfs_dev_set_queue(struct tfs_dev *d, size_t block_size,
		       unsigned int queue_depth)
{
	if (block_size >= TFS_BLOCK_SIZE)
		d->block_size = block_size & ~(size_t)(TFS_BLOCK_SIZE - 1);
	if (queue_depth >= 1)
		d->queue_depth = queue_depth < RING_ENTRIES ? queue_depth
							    : RING_ENTRIES;
}

void tfs_dev_set_submit(struct tfs_dev *d, int single_submit, int overlap)
{
	d->single_submit = single_submit;
	d->overlap = overlap;
}

/*
 * Discard without the fault device: a hole punched in an image, or
 * BLKDISCARD on a block device.  Plain syscalls: discards are rare and
 * large, and io_uring in liburing 2.3 has no discard for a block device.
 */
static int dev_discard_io(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	if (d->blockdev) {
		uint64_t range[2] = { off, len };

		if (ioctl(d->fd, BLKDISCARD, range) < 0)
			return errno == EINVAL || errno == ENOTTY ? -EOPNOTSUPP
								  : -errno;
		return 0;
	}
	if (fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

#ifdef TFS_TEST_HOOKS
static int fault_discard(struct tfs_dev *d, uint64_t off, uint64_t len);
#endif

int tfs_dev_discard(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	if ((off | len) & (TFS_BLOCK_SIZE - 1) || len > d->size ||
	    off > d->size - len)
		return -EINVAL;
#ifdef TFS_TEST_HOOKS
	discard_wait(d);
	if (d->fault)
		return fault_discard(d, off, len);
#endif
	return dev_discard_io(d, off, len);
}

int tfs_dev_extend(struct tfs_dev *d, uint64_t size)
{
	if (d->blockdev)
		return -ENOTTY;
	if (ftruncate(d->fd, (off_t)size) < 0)
		return -errno;
	d->size = size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	return 0;
}

/* ===== the I/O engine ===== */

struct piece {
	uint8_t *buf;
	size_t len;
	uint64_t off;
	uint64_t t0;		/* submitted, ns */
};

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The fixed buffer index that holds all of [buf, buf + len), or -1. */
static int fixed_index(const struct thread_ring *t, const uint8_t *buf,
		       size_t len)
{
	size_t o;

	if (!t || !t->reg || buf < t->reg || buf + len > t->reg + t->reg_len)
		return -1;
	o = (size_t)(buf - t->reg);
	if (o / REG_PIECE != (o + len - 1) / REG_PIECE)
		return -1;
	return (int)(o / REG_PIECE);
}

static void prep(struct io_uring_sqe *sqe, struct tfs_dev *d, int write,
		 struct piece *p)
{
	size_t len = p->len;
	int fi;

	/* fault injection: ask for half, as a short transfer would give */
	if (len > TFS_BLOCK_SIZE && take_short(d))
		len = len / 2 & ~(size_t)(TFS_BLOCK_SIZE - 1);
	fi = fixed_index(this_ring(), p->buf, len);

	if (fi >= 0 && write)
		io_uring_prep_write_fixed(sqe, d->fd, p->buf, (unsigned)len,
					  p->off, fi);
	else if (fi >= 0)
		io_uring_prep_read_fixed(sqe, d->fd, p->buf, (unsigned)len,
					 p->off, fi);
	else if (write)
		io_uring_prep_write(sqe, d->fd, p->buf, (unsigned)len, p->off);
	else
		io_uring_prep_read(sqe, d->fd, p->buf, (unsigned)len, p->off);
	io_uring_sqe_set_data(sqe, p);
	p->t0 = now_ns();
	count(&d->st_submitted, 1);
	count(&d->st_inflight, 1);
}

/* A piece's request completed: its latency into the counters. */
static void completed(struct tfs_dev *d, struct piece *p)
{
	uint64_t lat = now_ns() - p->t0;
	uint64_t max = __atomic_load_n(&d->st_lat_max_ns, __ATOMIC_RELAXED);

	__atomic_fetch_sub(&d->st_inflight, 1, __ATOMIC_RELAXED);
	count(&d->st_lat_ns, lat);
	while (lat > max &&
	       !__atomic_compare_exchange_n(&d->st_lat_max_ns, &max, lat, 1,
					    __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/* A batch in flight: its pieces and how far along they are. */
struct batch {
	struct tfs_dev *d;
	struct io_uring *ring;	/* the calling thread's */
	int write;
	struct piece *pc;
	size_t npc;		/* pieces */
	size_t next;		/* the next piece to submit */
	size_t done;		/* pieces finished, well or not */
	unsigned int inflight;	/* requests in the kernel */
	int err;		/* the first error; then only drain */
};

/* Every piece inside the device, and no injected write error: 0, or
 * -errno. */
static int check_batch(struct tfs_dev *d, int write, const struct tfs_iov *v,
		       int n)
{
	int err;

	for (int i = 0; i < n; i++) {
		/* written so that off + len cannot wrap around */
		if (v[i].len > d->size || v[i].off > d->size - v[i].len)
			return -EIO;
		if (write && (err = injected_write_error(d, v[i].off,
							  v[i].len))) {
			count(&d->st_err, 1);
			return -err;
		}
	}
	return 0;
}

/* Cut each of the n pieces of v at block_size into b->pc: 0, or -ENOMEM. */
static int cut_pieces(struct batch *b, const struct tfs_iov *v, int n)
{
	size_t bs = b->d->block_size, cap = 0;

	for (int i = 0; i < n; i++) {
		for (size_t o = 0; o < v[i].len; o += bs) {
			if (b->npc == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct piece *np = realloc(b->pc,
							   nc * sizeof(*np));

				if (!np) {
					free(b->pc);
					b->pc = NULL;
					return -ENOMEM;
				}
				b->pc = np;
				cap = nc;
			}
			b->pc[b->npc].buf = (uint8_t *)v[i].buf + o;
			b->pc[b->npc].len = v[i].len - o < bs ? v[i].len - o
							      : bs;
			b->pc[b->npc].off = v[i].off + o;
			b->npc++;
		}
	}
	return 0;
}

/* Submit pieces until queue_depth are in flight or the ring is full;
 * none after an error. */
static void fill_queue(struct batch *b)
{
	while (!b->err && b->next < b->npc &&
	       b->inflight < b->d->queue_depth) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(b->ring);

		if (!sqe)
			break;
		prep(sqe, b->d, b->write, &b->pc[b->next++]);
		b->inflight++;
		if (b->d->single_submit)
			io_uring_submit(b->ring);
	}
}

/*
 * A piece's request completed with res: the piece is done, or failed, or
 * (a short transfer) the rest of it is submitted again.
 */
static void complete_piece(struct batch *b, struct piece *p, int res)
{
	struct tfs_dev *d = b->d;
	struct io_uring_sqe *sqe;

	b->inflight--;
	completed(d, p);
	if (res == -EINTR || res == -EAGAIN)
		res = 0;	/* retry the whole piece */
	if (res < 0) {
		b->err = b->err ? b->err : res;
		count(&d->st_err, 1);
		b->done++;
		return;
	}
	if (res == 0 && !b->write && p->len) {
		/* a read at the end of the file: no data */
		b->err = b->err ? b->err : -EIO;
		b->done++;
		return;
	}
	count(b->write ? &d->st_wbytes : &d->st_rbytes, (uint64_t)res);
	p->buf += res;
	p->off += (uint64_t)res;
	p->len -= (size_t)res;
	if (!p->len) {
		count(b->write ? &d->st_writes : &d->st_reads, 1);
		b->done++;
		return;
	}
	if (b->err) {
		b->done++;
		return;
	}
	/* short transfer: resubmit the rest */
	sqe = io_uring_get_sqe(b->ring);
	if (!sqe) {
		io_uring_submit(b->ring);
		sqe = io_uring_get_sqe(b->ring);
	}
	if (!sqe) {
		b->err = -EBUSY;
		b->done++;
		return;
	}
	prep(sqe, d, b->write, p);
	b->inflight++;
}

/*
 * Cut the batch into pieces of at most block_size, then keep up to
 * queue_depth in flight until all are done: topped up as each completes
 * (overlap), or refilled only once all are back.  single_submit enters
 * the kernel once per request instead of once per batch.
 */
static int dev_rw_io(struct tfs_dev *d, int write, const struct tfs_iov *v,
		     int n)
{
	struct batch b = { .d = d, .write = write };
	struct io_uring_cqe *cqe;
	int rc;

	rc = check_batch(d, write, v, n);
	if (rc)
		return rc;
	b.ring = thread_ring(&rc);
	if (!b.ring)
		return rc;
	rc = cut_pieces(&b, v, n);
	if (rc)
		return rc;
	while (b.done < b.npc) {
		if (d->overlap || b.inflight == 0)
			fill_queue(&b);
		if (b.err && !b.inflight)
			break;
		rc = io_uring_submit_and_wait(b.ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN) {
			b.err = b.err ? b.err : rc;
			if (!b.inflight)
				break;
		}
		while (io_uring_peek_cqe(b.ring, &cqe) == 0) {
			struct piece *p = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(b.ring, cqe);
			complete_piece(&b, p, res);
		}
	}
	free(b.pc);
	return b.err;
}

/* ===== the fault device (test builds) ===== */

#ifdef TFS_TEST_HOOKS
static int dev_flush_io(struct tfs_dev *d);

/* One 4 KiB block written since the last flush, with its old contents. */
struct undo {
	uint64_t blk;
	uint64_t failed;	/* injected failures before it was written */
	uint8_t *old;		/* TFS_BLOCK_SIZE bytes, in a slab */
};

struct fault_state {
	pthread_mutex_t mu;	/* everything below */
	pthread_rwlock_t rw;	/* writes shared; flush and cut exclusive */
	struct tfs_fault f;
	uint64_t n[3];		/* operations of each kind since set */
	uint64_t failed;
	unsigned int hit_kind;	/* of the first failed or cut operation */
	int fail_hit;		/* the fail_nth operation has failed */
	uint64_t flushes_after_fail;
	int dead;		/* the power is off */
	uint64_t t0_ns;		/* when the settings were made */
	struct undo *log;	/* the undo log */
	size_t nlog, caplog;
	uint8_t **slab;		/* the old contents, UNDO_SLAB blocks each, */
	size_t nslab, capslab;	/* kept for reuse until closed */
	size_t slab_cur, slab_used;	/* the slab in use, its blocks used */
	size_t *idx;		/* hash of blk: index into log + 1, 0 empty */
	size_t capidx;		/* a power of two, at least twice nlog */
};

static unsigned int kind_index(unsigned int kind)
{
	return kind == TFS_FAULT_READ ? 0 : kind == TFS_FAULT_WRITE ? 1 : 2;
}

/* Operations of the kinds in mask so far. */
static uint64_t ops_of(const struct fault_state *s, unsigned int mask)
{
	uint64_t c = 0;

	for (unsigned int i = 0; i < 3; i++)
		if (mask & (1u << i))
			c += s->n[i];
	return c;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ----- the undo log ----- */

static size_t undo_slot(const struct fault_state *s, uint64_t blk)
{
	uint64_t x = blk;

	return (size_t)splitmix(&x) & (s->capidx - 1);
}

static struct undo *undo_find(const struct fault_state *s, uint64_t blk)
{
	if (!s->capidx)
		return NULL;
	for (size_t i = undo_slot(s, blk);; i = (i + 1) & (s->capidx - 1)) {
		if (!s->idx[i])
			return NULL;
		if (s->log[s->idx[i] - 1].blk == blk)
			return &s->log[s->idx[i] - 1];
	}
}

static void undo_index(struct fault_state *s, size_t at)
{
	size_t i = undo_slot(s, s->log[at].blk);

	while (s->idx[i])
		i = (i + 1) & (s->capidx - 1);
	s->idx[i] = at + 1;
}

/* Add blk with its old contents (from undo_block()): 0 or -ENOMEM. */
static int undo_add(struct fault_state *s, uint64_t blk, uint8_t *old)
{
	if (s->nlog == s->caplog) {
		size_t nc = s->caplog ? s->caplog * 2 : 256;
		struct undo *nl = realloc(s->log, nc * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		s->log = nl;
		s->caplog = nc;
	}
	if (2 * (s->nlog + 1) > s->capidx) {
		size_t nc = s->capidx ? s->capidx * 2 : 1024;
		size_t *ni = calloc(nc, sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		free(s->idx);
		s->idx = ni;
		s->capidx = nc;
		for (size_t i = 0; i < s->nlog; i++)
			undo_index(s, i);
	}
	s->log[s->nlog].blk = blk;
	s->log[s->nlog].failed = s->failed;
	s->log[s->nlog].old = old;
	undo_index(s, s->nlog++);
	return 0;
}

#define UNDO_SLAB 64u	/* blocks per allocation */

/* Room for one block's old contents: NULL when out of memory. */
static uint8_t *undo_block(struct fault_state *s)
{
	if (s->slab_used == UNDO_SLAB) {
		s->slab_cur++;
		s->slab_used = 0;
	}
	if (s->slab_cur == s->nslab) {
		uint8_t *p;

		if (s->nslab == s->capslab) {
			size_t nc = s->capslab ? s->capslab * 2 : 16;
			uint8_t **ns = realloc(s->slab, nc * sizeof(*ns));

			if (!ns)
				return NULL;
			s->slab = ns;
			s->capslab = nc;
		}
		p = malloc(UNDO_SLAB * TFS_BLOCK_SIZE);
		if (!p)
			return NULL;
		s->slab[s->nslab++] = p;
	}
	return s->slab[s->slab_cur] + s->slab_used++ * TFS_BLOCK_SIZE;
}

/* Empty the log; its memory stays for the next writes. */
static void undo_clear(struct fault_state *s)
{
	s->slab_cur = 0;
	s->slab_used = 0;
	s->nlog = 0;
	if (s->idx)
		memset(s->idx, 0, s->capidx * sizeof(*s->idx));
}

/* Read blocks [b, b + n) of the image into buf (zeros past its end). */
static int undo_read(struct tfs_dev *d, uint8_t *buf, uint64_t b, size_t n)
{
	size_t len = n * TFS_BLOCK_SIZE, done = 0;

	while (done < len) {
		ssize_t got = pread(d->fd, buf + done, len - done,
				    (off_t)(b * TFS_BLOCK_SIZE + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	memset(buf + done, 0, len - done);
	return 0;
}

#define UNDO_RUN 256u	/* blocks read at once */

/*
 * Save the old contents of every block of the batch not yet in the undo
 * log, before the batch is written.  Caller holds rw shared and mu.
 * Pieces outside the device are left to the engine to refuse.
 */
static int undo_capture(struct tfs_dev *d, struct fault_state *s,
			const struct tfs_iov *v, int n)
{
	uint8_t *run = NULL;
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		uint64_t b, end;

		if (v[i].len > d->size || v[i].off > d->size - v[i].len)
			continue;
		b = v[i].off / TFS_BLOCK_SIZE;
		end = (v[i].off + v[i].len + TFS_BLOCK_SIZE - 1) /
		      TFS_BLOCK_SIZE;
		while (b < end && !rc) {
			size_t k = 0;

			if (undo_find(s, b)) {
				b++;
				continue;
			}
			/* a run of blocks not yet saved, read in one go */
			while (b + k < end && k < UNDO_RUN &&
			       !undo_find(s, b + k))
				k++;
			if (!run)
				run = tfs_io_alloc(UNDO_RUN * TFS_BLOCK_SIZE);
			rc = run ? undo_read(d, run, b, k) : -ENOMEM;
			for (size_t j = 0; j < k && !rc; j++) {
				uint8_t *old = undo_block(s);

				if (!old || undo_add(s, b + j, old)) {
					rc = -ENOMEM;
					break;
				}
				memcpy(old, run + j * TFS_BLOCK_SIZE,
				       TFS_BLOCK_SIZE);
			}
			b += k;
		}
	}
	tfs_io_free(run);
	return rc;
}

/* ----- settings ----- */

static void fault_free(struct fault_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nslab; i++)
		free(s->slab[i]);
	free(s->slab);
	free(s->log);
	free(s->idx);
	pthread_rwlock_destroy(&s->rw);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* At tfs_dev_close(): the counters to at_close, then free. */
static void fault_close(struct tfs_dev *d)
{
	if (d->fault && d->fault->f.at_close)
		tfs_dev_fault_ops(d, d->fault->f.at_close);
	fault_free(d->fault);
}

int tfs_dev_fault_set(struct tfs_dev *d, const struct tfs_fault *f)
{
	struct fault_state *s = d->fault;

	if (!f) {
		d->fault = NULL;
		fault_free(s);
		return 0;
	}
	if (!s) {
		pthread_rwlockattr_t a;

		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		pthread_mutex_init(&s->mu, NULL);
		/* a flush waiting for the writes in flight goes before new
		 * writes, so a steady stream of them cannot starve it */
		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(
			&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->rw, &a);
		pthread_rwlockattr_destroy(&a);
	}
	if (!f->volatile_cache)
		undo_clear(s);
	s->f = *f;
	if (!s->f.fail_err)
		s->f.fail_err = EIO;
	if (!s->f.cut_kinds)
		s->f.cut_kinds = TFS_FAULT_ANY;
	memset(s->n, 0, sizeof(s->n));
	s->failed = 0;
	s->hit_kind = 0;
	s->fail_hit = 0;
	s->flushes_after_fail = 0;
	s->dead = 0;
	s->t0_ns = now_ns();
	d->fault = s;
	return 0;
}

void tfs_dev_fault_ops(struct tfs_dev *d, struct tfs_fault_ops *ops)
{
	struct fault_state *s = d->fault;

	memset(ops, 0, sizeof(*ops));
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	ops->reads = s->n[0];
	ops->writes = s->n[1];
	ops->flushes = s->n[2];
	ops->total = s->n[0] + s->n[1] + s->n[2];
	ops->failed = s->failed;
	ops->hit_kind = s->hit_kind;
	ops->unflushed = s->nlog;
	ops->cut = s->dead;
	pthread_mutex_unlock(&s->mu);
}

/* ----- the power cut ----- */

/* Cut the power.  Caller holds rw exclusive and mu. */
static int cut_locked(struct tfs_dev *d, struct fault_state *s, uint64_t seed)
{
	uint64_t x = seed;
	unsigned int mix = (unsigned int)(seed % 4);
	int rc = 0, restored = 0;
	uint8_t *bounce;

	if (s->dead)
		return 0;
	/* aligned, for an image opened with O_DIRECT */
	bounce = tfs_io_alloc(TFS_BLOCK_SIZE);
	if (!bounce)
		rc = -ENOMEM;
	for (size_t i = 0; i < s->nlog && bounce; i++) {
		struct undo *u = &s->log[i];
		int lost = mix == 0 ? 1 : mix == 1 ? 0 :
			   mix == 3 && u->failed < s->failed ? 1 :
			   (int)(splitmix(&x) & 1);

		if (!lost)
			continue;
		memcpy(bounce, u->old, TFS_BLOCK_SIZE);
		if (pwrite(d->fd, bounce, TFS_BLOCK_SIZE,
			   (off_t)(u->blk * TFS_BLOCK_SIZE)) != TFS_BLOCK_SIZE)
			rc = rc ? rc : -EIO;
		restored++;
	}
	tfs_io_free(bounce);
	undo_clear(s);
	s->dead = 1;
	if (s->f.cut_exit)
		_exit(TFS_FAULT_CUT_STATUS);
	return rc ? rc : restored;
}

int tfs_dev_powercut(struct tfs_dev *d, uint64_t seed)
{
	struct fault_state *s = d->fault;
	int rc;

	if (!s) {
		struct tfs_fault none = { 0 };

		rc = tfs_dev_fault_set(d, &none);
		if (rc)
			return rc;
		s = d->fault;
	}
	pthread_rwlock_wrlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = cut_locked(d, s, seed);
	pthread_mutex_unlock(&s->mu);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/* ----- operations ----- */

/*
 * Count an operation of this kind and decide its fate: 0 it goes ahead,
 * -errno it fails (injected, or the power is off).  A cut it triggers
 * happens here, instead of the operation.  Caller holds no lock.
 */
static int fault_op(struct tfs_dev *d, unsigned int kind)
{
	struct fault_state *s = d->fault;
	const struct tfs_fault *f = &s->f;
	uint64_t slow_ms = 0;
	int rc = 0, cut = 0;

	pthread_mutex_lock(&s->mu);
	if (s->dead) {
		rc = -EIO;
		goto out;
	}
	s->n[kind_index(kind)]++;
	if (f->cut_nth && (f->cut_kinds & kind) &&
	    ops_of(s, f->cut_kinds) == f->cut_nth)
		cut = 1;
	if (f->cut_after_ms && now_ns() - s->t0_ns >= f->cut_after_ms * 1000000)
		cut = 1;
	if (f->cut_flush_after_fail && s->fail_hit && kind == TFS_FAULT_FLUSH &&
	    ++s->flushes_after_fail == f->cut_flush_after_fail)
		cut = 1;
	if (!cut && f->fail_nth && (f->fail_kinds & kind)) {
		uint64_t c = ops_of(s, f->fail_kinds);

		if (c == f->fail_nth || (f->fail_persist && c > f->fail_nth)) {
			if (!s->hit_kind)
				s->hit_kind = kind;
			rc = -f->fail_err;
			s->failed++;
			s->fail_hit = 1;
		}
	}
	if (cut && !s->hit_kind)
		s->hit_kind = kind;
	if (!rc && !cut && (f->slow_kinds & kind))
		slow_ms = f->slow_ms;
out:
	pthread_mutex_unlock(&s->mu);
	if (slow_ms) {
		struct timespec ts = { (time_t)(slow_ms / 1000),
				       (long)(slow_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (cut) {
		pthread_rwlock_wrlock(&s->rw);
		pthread_mutex_lock(&s->mu);
		cut_locked(d, s, f->seed);
		pthread_mutex_unlock(&s->mu);
		pthread_rwlock_unlock(&s->rw);
		rc = -EIO;
	}
	if (rc)
		count(&d->st_err, 1);
	return rc;
}

static int fault_rw(struct tfs_dev *d, int write, const struct tfs_iov *v,
		    int n)
{
	struct fault_state *s = d->fault;
	int rc;

	rc = fault_op(d, write ? TFS_FAULT_WRITE : TFS_FAULT_READ);
	if (rc)
		return rc;
	if (!write || !s->f.volatile_cache)
		return dev_rw_io(d, write, v, n);
	pthread_rwlock_rdlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = s->dead ? -EIO : undo_capture(d, s, v, n);
	pthread_mutex_unlock(&s->mu);
	if (!rc)
		rc = dev_rw_io(d, write, v, n);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/*
 * A discard is a write of zeros to the fault device: one write
 * operation, and with the volatile cache its blocks' old contents go to
 * the undo log first, so a power cut before the next flush may bring
 * them back, as a disk's cache may lose a discard.
 */
static int fault_discard(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	struct fault_state *s = d->fault;
	struct tfs_iov v = { NULL, (size_t)len, off };
	int rc;

	rc = fault_op(d, TFS_FAULT_WRITE);
	if (rc)
		return rc;
	if (!s->f.volatile_cache)
		return dev_discard_io(d, off, len);
	pthread_rwlock_rdlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = s->dead ? -EIO : undo_capture(d, s, &v, 1);
	pthread_mutex_unlock(&s->mu);
	if (!rc)
		rc = dev_discard_io(d, off, len);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

static int fault_flush(struct tfs_dev *d)
{
	struct fault_state *s = d->fault;
	int rc;

	rc = fault_op(d, TFS_FAULT_FLUSH);
	if (rc)
		return rc;
	if (!s->f.volatile_cache)
		return dev_flush_io(d);
	/* the simulated disk's cache: only the undo log is emptied */
	pthread_rwlock_wrlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	if (s->dead) {
		rc = -EIO;
	} else {
		undo_clear(s);
		count(&d->st_flush, 1);
	}
	pthread_mutex_unlock(&s->mu);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/* ----- the environment ----- */

/* KINDS ("write", "read+flush", "any") into *mask: the rest of s, or
 * NULL if it does not parse. */
static const char *parse_kinds(const char *s, unsigned int *mask)
{
	static const struct {
		const char *name;
		unsigned int mask;
	} k[] = { { "read", TFS_FAULT_READ }, { "write", TFS_FAULT_WRITE },
		  { "flush", TFS_FAULT_FLUSH }, { "any", TFS_FAULT_ANY } };

	*mask = 0;
	for (;;) {
		size_t i;

		for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
			size_t l = strlen(k[i].name);

			if (!strncmp(s, k[i].name, l)) {
				*mask |= k[i].mask;
				s += l;
				break;
			}
		}
		if (i == sizeof(k) / sizeof(k[0]))
			return NULL;
		if (*s != '+')
			return s;
		s++;
	}
}

/* A number ending at a ',', ':' or the end: 0, or -EINVAL. */
static int parse_num(const char **s, uint64_t *out)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(*s, &end, 0);
	if (errno || (*end && *end != ',' && *end != ':'))
		return -EINVAL;
	*s = end;
	return 0;
}

/* "fail=KINDS:N[:ERR][:persist]" after the '=' */
static int parse_fail(const char *s, struct tfs_fault *f, const char **rest)
{
	s = parse_kinds(s, &f->fail_kinds);
	if (!s || *s++ != ':' || parse_num(&s, &f->fail_nth))
		return -EINVAL;
	while (*s == ':') {
		uint64_t e;

		s++;
		if (!strncmp(s, "persist", 7)) {
			f->fail_persist = 1;
			s += 7;
		} else if (!strncmp(s, "EIO", 3)) {
			f->fail_err = EIO;
			s += 3;
		} else if (!strncmp(s, "ENOSPC", 6)) {
			f->fail_err = ENOSPC;
			s += 6;
		} else if (!parse_num(&s, &e) && e > 0 && e < 4096) {
			f->fail_err = (int)e;
		} else {
			return -EINVAL;
		}
	}
	*rest = s;
	return 0;
}

static int fault_from_env(struct tfs_dev *d, const char *env)
{
	struct tfs_fault f = { .cut_exit = 1 };
	const char *s = env;
	int rc = 0;

	while (!rc && *s) {
		if (!strncmp(s, "volatile", 8)) {
			f.volatile_cache = 1;
			s += 8;
		} else if (!strncmp(s, "seed=", 5)) {
			s += 5;
			rc = parse_num(&s, &f.seed);
		} else if (!strncmp(s, "cut_ms=", 7)) {
			s += 7;
			rc = parse_num(&s, &f.cut_after_ms);
		} else if (!strncmp(s, "cut_after_fail=", 15)) {
			s += 15;
			rc = parse_num(&s, &f.cut_flush_after_fail);
		} else if (!strncmp(s, "cut=", 4)) {
			s += 4;
			if (*s < '0' || *s > '9') {
				s = parse_kinds(s, &f.cut_kinds);
				if (!s || *s != ':')
					return -EINVAL;
				s++;
			}
			if (!rc)
				rc = parse_num(&s, &f.cut_nth);
		} else if (!strncmp(s, "fail=", 5)) {
			rc = parse_fail(s + 5, &f, &s);
		} else if (!strncmp(s, "slow=", 5)) {
			s = parse_kinds(s + 5, &f.slow_kinds);
			if (!s || *s++ != ':')
				return -EINVAL;
			rc = parse_num(&s, &f.slow_ms);
		} else {
			rc = -EINVAL;
		}
		if (!rc && *s == ',')
			s++;
		else if (!rc && *s)
			rc = -EINVAL;
	}
	if (!rc)
		rc = tfs_dev_fault_set(d, &f);
	return rc;
}
#endif

static int dev_rw(struct tfs_dev *d, int write, const struct tfs_iov *v,
		  int n)
{
#ifdef TFS_TEST_HOOKS
	if (d->fault)
		return fault_rw(d, write, v, n);
#endif
	return dev_rw_io(d, write, v, n);
}

int tfs_dev_readv(struct tfs_dev *d, const struct tfs_iov *v, int n)
{
	return dev_rw(d, 0, v, n);
}

int tfs_dev_writev(struct tfs_dev *d, const struct tfs_iov *v, int n)
{
	return dev_rw(d, 1, v, n);
}

int tfs_dev_read(struct tfs_dev *d, void *buf, size_t len, uint64_t off)
{
	struct tfs_iov v = { buf, len, off };

	return dev_rw(d, 0, &v, 1);
}

int tfs_dev_write(struct tfs_dev *d, const void *buf, size_t len,
		  uint64_t off)
{
	struct tfs_iov v = { (void *)buf, len, off };

	return dev_rw(d, 1, &v, 1);
}

static int dev_flush_io(struct tfs_dev *d)
{
	struct io_uring *ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int rc = 0;

	rc = injected_flush_error(d);
	if (rc) {
		count(&d->st_flush, 1);
		count(&d->st_err, 1);
		return -rc;
	}
	ring = thread_ring(&rc);
	if (!ring)
		return rc;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return fdatasync(d->fd) < 0 ? -errno : 0;
	io_uring_prep_fsync(sqe, d->fd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data(sqe, NULL);
	do {
		rc = io_uring_submit_and_wait(ring, 1);
	} while (rc == -EINTR);
	if (rc < 0)
		return rc;
	rc = io_uring_wait_cqe(ring, &cqe);
	if (rc < 0)
		return rc;
	rc = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	count(&d->st_flush, 1);
	if (rc < 0)
		count(&d->st_err, 1);
	return rc < 0 ? rc : 0;
}

int tfs_dev_flush(struct tfs_dev *d)
{
#ifdef TFS_TEST_HOOKS
	if (d->fault)
		return fault_flush(d);
#endif
	return dev_flush_io(d);
}

int tfs_io_register(void *base, size_t len)
{
	struct thread_ring *t;
	struct iovec *iov;
	unsigned int n = (unsigned int)((len + REG_PIECE - 1) / REG_PIECE);
	int rc = 0;

	if (!thread_ring(&rc))
		return rc;
	t = this_ring();
	if (t->reg)
		return -EBUSY;
	iov = calloc(n, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		iov[i].iov_base = (uint8_t *)base + (size_t)i * REG_PIECE;
		iov[i].iov_len = len - (size_t)i * REG_PIECE < REG_PIECE ?
					 len - (size_t)i * REG_PIECE : REG_PIECE;
	}
	rc = io_uring_register_buffers(&t->ring, iov, n);
	free(iov);
	if (rc < 0)
		return rc;
	t->reg = base;
	t->reg_len = len;
	return 0;
}

void tfs_dev_get_stats(const struct tfs_dev *d, struct tfs_dev_stats *s)
{
	s->reads = __atomic_load_n(&d->st_reads, __ATOMIC_RELAXED);
	s->writes = __atomic_load_n(&d->st_writes, __ATOMIC_RELAXED);
	s->read_bytes = __atomic_load_n(&d->st_rbytes, __ATOMIC_RELAXED);
	s->write_bytes = __atomic_load_n(&d->st_wbytes, __ATOMIC_RELAXED);
	s->flushes = __atomic_load_n(&d->st_flush, __ATOMIC_RELAXED);
	s->errors = __atomic_load_n(&d->st_err, __ATOMIC_RELAXED);
	s->submitted = __atomic_load_n(&d->st_submitted, __ATOMIC_RELAXED);
	s->inflight = __atomic_load_n(&d->st_inflight, __ATOMIC_RELAXED);
	s->latency_ns = __atomic_load_n(&d->st_lat_ns, __ATOMIC_RELAXED);
	s->latency_max_ns = __atomic_load_n(&d->st_lat_max_ns,
					    __ATOMIC_RELAXED);
}

void *tfs_io_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, TFS_BLOCK_SIZE, len ? len : TFS_BLOCK_SIZE))
		return NULL;
	return p;
}

void tfs_io_free(void *p)
{
	free(p);
}
