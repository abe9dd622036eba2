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
 * Fault injection for tests (failing writes and flushes, short
 * transfers, the fault device of io.h) is io_fault.c's, built only with
 * TFS_TEST_HOOKS; the engine calls its hooks (io_internal.h), which are
 * empty inline functions in a release build.
 */
#include "io_internal.h"

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

/* ===== per-thread rings ===== */

#define REG_PIECE (1ull << 30) /* the kernel's limit for one fixed buffer */

struct thread_ring {
	struct io_uring ring;
	int ok;
	uint8_t *reg; /* registered (fixed) buffers, or NULL */
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
		d->size =
		    (uint64_t)st.st_size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	}
	rc = tfs_io_faults_init(d);
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
	tfs_io_faults_release(d);
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
		d->queue_depth =
		    queue_depth < RING_ENTRIES ? queue_depth : RING_ENTRIES;
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
int tfs_io_discard_raw(struct tfs_dev *d, uint64_t off, uint64_t len)
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

int tfs_dev_discard(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	if ((off | len) & (TFS_BLOCK_SIZE - 1) || len > d->size ||
	    off > d->size - len)
		return -EINVAL;
#ifdef TFS_TEST_HOOKS
	tfs_io_discard_wait(d);
	if (d->fault)
		return tfs_io_fault_discard(d, off, len);
#endif
	return tfs_io_discard_raw(d, off, len);
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
	uint64_t t0; /* submitted, ns */
};

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
	if (len > TFS_BLOCK_SIZE && tfs_io_take_short(d))
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
	p->t0 = tfs_io_now_ns();
	tfs_io_count(&d->st_submitted, 1);
	tfs_io_count(&d->st_inflight, 1);
}

/* A piece's request completed: its latency into the counters. */
static void completed(struct tfs_dev *d, struct piece *p)
{
	uint64_t lat = tfs_io_now_ns() - p->t0;
	uint64_t max = __atomic_load_n(&d->st_lat_max_ns, __ATOMIC_RELAXED);

	__atomic_fetch_sub(&d->st_inflight, 1, __ATOMIC_RELAXED);
	tfs_io_count(&d->st_lat_ns, lat);
	while (lat > max &&
	       !__atomic_compare_exchange_n(&d->st_lat_max_ns, &max, lat, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A batch in flight: its pieces and how far along they are. */
struct batch {
	struct tfs_dev *d;
	struct io_uring *ring; /* the calling thread's */
	int write;
	struct piece *pc;
	size_t npc;	       /* pieces */
	size_t next;	       /* the next piece to submit */
	size_t done;	       /* pieces finished, well or not */
	unsigned int inflight; /* requests in the kernel */
	int err;	       /* the first error; then only drain */
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
		if (write && (err = tfs_io_injected_write_error(d, v[i].off,
								v[i].len))) {
			tfs_io_count(&d->st_err, 1);
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
				struct piece *np =
				    realloc(b->pc, nc * sizeof(*np));

				if (!np) {
					free(b->pc);
					b->pc = NULL;
					return -ENOMEM;
				}
				b->pc = np;
				cap = nc;
			}
			b->pc[b->npc].buf = (uint8_t *)v[i].buf + o;
			b->pc[b->npc].len =
			    v[i].len - o < bs ? v[i].len - o : bs;
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
	while (!b->err && b->next < b->npc && b->inflight < b->d->queue_depth) {
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
		res = 0; /* retry the whole piece */
	if (res < 0) {
		b->err = b->err ? b->err : res;
		tfs_io_count(&d->st_err, 1);
		b->done++;
		return;
	}
	if (res == 0 && !b->write && p->len) {
		/* a read at the end of the file: no data */
		b->err = b->err ? b->err : -EIO;
		b->done++;
		return;
	}
	tfs_io_count(b->write ? &d->st_wbytes : &d->st_rbytes, (uint64_t)res);
	p->buf += res;
	p->off += (uint64_t)res;
	p->len -= (size_t)res;
	if (!p->len) {
		tfs_io_count(b->write ? &d->st_writes : &d->st_reads, 1);
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
int tfs_io_rw_raw(struct tfs_dev *d, int write, const struct tfs_iov *v, int n)
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

static int dev_rw(struct tfs_dev *d, int write, const struct tfs_iov *v, int n)
{
#ifdef TFS_TEST_HOOKS
	if (d->fault)
		return tfs_io_fault_rw(d, write, v, n);
#endif
	return tfs_io_rw_raw(d, write, v, n);
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

int tfs_dev_write(struct tfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	struct tfs_iov v = { (void *)buf, len, off };

	return dev_rw(d, 1, &v, 1);
}

int tfs_io_flush_raw(struct tfs_dev *d)
{
	struct io_uring *ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int rc = 0;

	rc = tfs_io_injected_flush_error(d);
	if (rc) {
		tfs_io_count(&d->st_flush, 1);
		tfs_io_count(&d->st_err, 1);
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
	tfs_io_count(&d->st_flush, 1);
	if (rc < 0)
		tfs_io_count(&d->st_err, 1);
	return rc < 0 ? rc : 0;
}

int tfs_dev_flush(struct tfs_dev *d)
{
#ifdef TFS_TEST_HOOKS
	if (d->fault)
		return tfs_io_fault_flush(d);
#endif
	return tfs_io_flush_raw(d);
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
		iov[i].iov_len = len - (size_t)i * REG_PIECE < REG_PIECE
				     ? len - (size_t)i * REG_PIECE
				     : REG_PIECE;
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
	s->latency_max_ns =
	    __atomic_load_n(&d->st_lat_max_ns, __ATOMIC_RELAXED);
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
