/*
 * io.c: the backing device through io_uring.
 *
 * Design: the device is a set of members (io.h), each with its own file
 * descriptor, size, counters and "dirty" flag.  One io_uring per thread
 * serves every member: it is created on the thread's first request and
 * torn down when the thread exits (a pthread key destructor).  A request
 * is cut into pieces of at most block_size bytes, each inside one
 * member; each member has its own queue of up to queue_depth pieces in
 * flight, so a request striped over several members keeps all of them
 * busy; each completion either ends its piece, or (a short transfer)
 * resubmits the rest of it, or (an error) marks the request failed while
 * the pieces in flight drain.  A write marks its members dirty before it
 * is issued; a flush takes the marks and issues one fdatasync per marked
 * member (and member 0), all in flight together, and marks again a
 * member whose flush failed.  Nothing is shared between threads but the
 * members' descriptors, marks and counters, so there is no lock here.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "format.h"

#define RING_ENTRIES 256u
#define QD_MAX	     64u /* requests in flight per member */
/*
 * A flush's completion carries its member with FLUSH_TAG set: a batch
 * that meets one (a flush whose submission failed, issued by a later
 * call) skips it.
 */
#define FLUSH_TAG 1u

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

/* Open path as member m: as tfs_dev_open() describes. */
static int member_open(struct tfs_member *m, const char *path, int flags)
{
	struct stat st;
	int oflags = (flags & TFS_DEV_RDONLY) ? O_RDONLY : O_RDWR;
	int rc = 0;

	m->fd = -1;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		m->blockdev = 1;
		if (!(flags & TFS_DEV_NOLOCK))
			oflags |= O_EXCL;
	} else if (!S_ISREG(st.st_mode)) {
		return -ENOTBLK;
	}
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	m->fd = open(path, oflags | O_DIRECT | O_CLOEXEC);
	if (m->fd >= 0)
		m->direct = 1;
	else if (errno == EINVAL)
		m->fd = open(path, oflags | O_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	if (!(flags & TFS_DEV_NOLOCK)) {
		/*
		 * A daemon that was just killed may hold the lock a little
		 * longer: the kernel drops its file only when its io_uring,
		 * torn down asynchronously, lets go.  Wait up to a second.
		 */
		for (int tries = 0;; tries++) {
			if (flock(m->fd, LOCK_EX | LOCK_NB) == 0)
				break;
			if (errno != EWOULDBLOCK || tries == 50)
				return errno == EWOULDBLOCK ? -EBUSY : -errno;
			usleep(20000);
		}
	}
	if (m->blockdev) {
		uint64_t bytes;

		if (ioctl(m->fd, BLKGETSIZE64, &bytes) < 0)
			return -errno;
		m->size = bytes & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	} else {
		m->size =
		    (uint64_t)st.st_size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	}
	if (m->size > TFS_LOCAL_MASK + 1)
		rc = -EFBIG;
	return rc;
}

/* Whether the file that path names is also behind one of m[0..n). */
static int same_as_before(const struct tfs_member *m, unsigned int n,
			  const char *path)
{
	struct stat a, b;

	if (stat(path, &a) < 0)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		if (fstat(m[i].fd, &b) < 0)
			continue;
		if (S_ISBLK(a.st_mode)
			? S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev
			: a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return 1;
	}
	return 0;
}

int tfs_dev_open_set(const char *const *paths, unsigned int n, int flags,
		     struct tfs_dev **out, int *bad)
{
	struct tfs_dev *d;
	int rc = 0;

	*bad = -1;
	if (n < 1 || n > TFS_MEMBER_MAX)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->mem = calloc(n, sizeof(*d->mem));
	if (!d->mem) {
		free(d);
		return -ENOMEM;
	}
	d->block_size = 1u << 20;
	d->queue_depth = 8;
	d->overlap = 1;
	d->failed_member = -1;
	for (unsigned int i = 0; i < n; i++) {
		/* named before its lock, which the first open holds */
		d->nmem = i + 1;
		if (same_as_before(d->mem, i, paths[i])) {
			d->mem[i].fd = -1;
			rc = -EEXIST;
		} else {
			rc = member_open(&d->mem[i], paths[i], flags);
		}
		if (rc) {
			*bad = (int)i;
			goto fail;
		}
	}
	rc = tfs_io_faults_init(d);
	if (rc)
		goto fail;
	*out = d;
	return 0;

fail:
	for (unsigned int i = 0; i < d->nmem; i++) {
		if (d->mem[i].fd >= 0)
			close(d->mem[i].fd);
		free(d->mem[i].path);
	}
	free(d->mem);
	free(d);
	return rc;
}

int tfs_dev_open(const char *path, int flags, struct tfs_dev **out)
{
	int bad;

	return tfs_dev_open_set(&path, 1, flags, out, &bad);
}

void tfs_dev_close(struct tfs_dev *d)
{
	if (!d)
		return;
	tfs_io_faults_release(d);
	for (unsigned int i = 0; i < d->nmem; i++) {
		close(d->mem[i].fd);
		free(d->mem[i].path);
	}
	free(d->mem);
	free(d);
}

int tfs_dev_reorder(struct tfs_dev *d, const unsigned int *order)
{
	struct tfs_member *m;
	uint64_t seen = 0;

	for (unsigned int i = 0; i < d->nmem; i++) {
		if (order[i] >= d->nmem || seen >> order[i] & 1)
			return -EINVAL;
		seen |= 1ull << order[i];
	}
	m = calloc(d->nmem, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (unsigned int i = 0; i < d->nmem; i++)
		m[i] = d->mem[order[i]];
	free(d->mem);
	d->mem = m;
	return 0;
}

uint64_t tfs_dev_size(const struct tfs_dev *d)
{
	return d->mem[0].size;
}

int tfs_dev_is_blockdev(const struct tfs_dev *d)
{
	return d->mem[0].blockdev;
}

unsigned int tfs_dev_members(const struct tfs_dev *d)
{
	return d->nmem;
}

uint64_t tfs_dev_member_size(const struct tfs_dev *d, unsigned int m)
{
	return m < d->nmem ? d->mem[m].size : 0;
}

int tfs_dev_member_is_blockdev(const struct tfs_dev *d, unsigned int m)
{
	return m < d->nmem && d->mem[m].blockdev;
}

const char *tfs_dev_member_path(const struct tfs_dev *d, unsigned int m)
{
	return m < d->nmem ? d->mem[m].path : NULL;
}

int tfs_dev_failed_member(const struct tfs_dev *d)
{
	return __atomic_load_n(&d->failed_member, __ATOMIC_RELAXED);
}

const char *tfs_dev_failure_where(const struct tfs_dev *d, char *buf,
				  size_t len)
{
	int m = tfs_dev_failed_member(d);

	if (!len)
		return buf;
	buf[0] = '\0';
	if (d->nmem > 1 && m >= 0 && (unsigned int)m < d->nmem)
		snprintf(buf, len, " on member %d (%s)", m + 1, d->mem[m].path);
	return buf;
}

void tfs_dev_set_queue(struct tfs_dev *d, size_t block_size,
		       unsigned int queue_depth)
{
	if (block_size >= TFS_BLOCK_SIZE)
		d->block_size = block_size & ~(size_t)(TFS_BLOCK_SIZE - 1);
	if (queue_depth >= 1)
		d->queue_depth = queue_depth < QD_MAX ? queue_depth : QD_MAX;
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
	uint64_t local = 0;
	struct tfs_member *m = tfs_io_member(d, off, &local);

	if (!m)
		return -EINVAL;
	__atomic_store_n(&m->dirty, 1, __ATOMIC_RELAXED);
	if (m->blockdev) {
		uint64_t range[2] = { local, len };

		if (ioctl(m->fd, BLKDISCARD, range) < 0)
			return errno == EINVAL || errno == ENOTTY ? -EOPNOTSUPP
								  : -errno;
		return 0;
	}
	if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)local, (off_t)len) < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

int tfs_dev_discard(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	if ((off | len) & (TFS_BLOCK_SIZE - 1) || !tfs_io_inside(d, off, len))
		return -EINVAL;
#ifdef TFS_TEST_HOOKS
	tfs_io_discard_wait(d);
	if (d->fault)
		return tfs_io_fault_discard(d, off, len);
#endif
	return tfs_io_discard_raw(d, off, len);
}

int tfs_dev_extend(struct tfs_dev *d, unsigned int m, uint64_t size)
{
	if (m >= d->nmem)
		return -EINVAL;
	if (d->mem[m].blockdev)
		return -ENOTTY;
	if (size > TFS_LOCAL_MASK + 1)
		return -EFBIG;
	if (ftruncate(d->mem[m].fd, (off_t)size) < 0)
		return -errno;
	d->mem[m].size = size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	return 0;
}

/* ===== the I/O engine ===== */

struct piece {
	uint8_t *buf;
	size_t len;
	uint64_t off; /* inside its member */
	struct tfs_member *m;
	uint64_t t0; /* submitted, ns */
};

/* Raise *max to v if v is larger (relaxed: a counter, not a lock). */
static void raise_max(uint64_t *max, uint64_t v)
{
	uint64_t m = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > m && !__atomic_compare_exchange_n(
			    max, &m, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
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
	int fd = p->m->fd;
	int fi;

	/* fault injection: ask for half, as a short transfer would give */
	if (len > TFS_BLOCK_SIZE && tfs_io_take_short(d))
		len = len / 2 & ~(size_t)(TFS_BLOCK_SIZE - 1);
	fi = fixed_index(this_ring(), p->buf, len);

	if (fi >= 0 && write)
		io_uring_prep_write_fixed(sqe, fd, p->buf, (unsigned)len,
					  p->off, fi);
	else if (fi >= 0)
		io_uring_prep_read_fixed(sqe, fd, p->buf, (unsigned)len, p->off,
					 fi);
	else if (write)
		io_uring_prep_write(sqe, fd, p->buf, (unsigned)len, p->off);
	else
		io_uring_prep_read(sqe, fd, p->buf, (unsigned)len, p->off);
	io_uring_sqe_set_data(sqe, p);
	p->t0 = tfs_io_now_ns();
	tfs_io_count(&p->m->st.submitted, 1);
	raise_max(&p->m->st.inflight_max,
		  __atomic_add_fetch(&p->m->st.inflight, 1, __ATOMIC_RELAXED));
}

/* A piece's request completed: its latency into the counters. */
static void completed(struct piece *p)
{
	struct tfs_member_counters *st = &p->m->st;
	uint64_t lat = tfs_io_now_ns() - p->t0;

	__atomic_fetch_sub(&st->inflight, 1, __ATOMIC_RELAXED);
	tfs_io_count(&st->lat_ns, lat);
	raise_max(&st->lat_max_ns, lat);
}

/*
 * A batch in flight: its pieces and how far along they are.  Each member
 * has its own queue: up to queue_depth of its pieces are in flight, in
 * order, whatever the other members' pieces are doing.
 */
struct batch {
	struct tfs_dev *d;
	struct io_uring *ring; /* the calling thread's */
	int write;
	struct piece *pc;
	size_t npc;	       /* pieces */
	size_t done;	       /* pieces finished, well or not */
	unsigned int inflight; /* requests in the kernel */
	int err;	       /* the first error; then only drain */
	size_t *next;	       /* per member: its next piece to submit */
	unsigned int *mflight; /* per member: its requests in the kernel */
	size_t one_next;       /* next and mflight of a one-member set */
	unsigned int one_flight;
};

/* Every piece inside one member, and no injected write error: 0, or
 * -errno. */
static int check_batch(struct tfs_dev *d, int write, const struct tfs_iov *v,
		       int n)
{
	int err;

	for (int i = 0; i < n; i++) {
		if (!tfs_io_inside(d, v[i].off, v[i].len))
			return -EIO;
		if (write && (err = tfs_io_injected_write_error(d, v[i].off,
								v[i].len))) {
			uint64_t local = 0;

			tfs_io_error(d, tfs_io_member(d, v[i].off, &local));
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
		uint64_t local = 0;
		struct tfs_member *m = tfs_io_member(b->d, v[i].off, &local);

		for (size_t o = 0; o < v[i].len; o += bs) {
			if (b->npc == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct piece *np =
				    realloc(b->pc, nc * sizeof(*np));

				if (!np)
					return -ENOMEM;
				b->pc = np;
				cap = nc;
			}
			b->pc[b->npc].buf = (uint8_t *)v[i].buf + o;
			b->pc[b->npc].len =
			    v[i].len - o < bs ? v[i].len - o : bs;
			b->pc[b->npc].off = local + o;
			b->pc[b->npc].m = m;
			b->npc++;
		}
	}
	return 0;
}

/* Per-member queues: a one-member set's live in the batch itself. */
static int queues_init(struct batch *b)
{
	unsigned int n = b->d->nmem;

	if (n == 1) {
		b->next = &b->one_next;
		b->mflight = &b->one_flight;
		return 0;
	}
	b->next = calloc(n, sizeof(*b->next));
	b->mflight = calloc(n, sizeof(*b->mflight));
	return b->next && b->mflight ? 0 : -ENOMEM;
}

static void queues_release(struct batch *b)
{
	if (b->next != &b->one_next) {
		free(b->next);
		free(b->mflight);
	}
}

/* Submit pieces until each member has queue_depth in flight or has none
 * left, or the ring is full; none after an error. */
static void fill_queue(struct batch *b)
{
	struct tfs_dev *d = b->d;

	for (unsigned int m = 0; m < d->nmem && !b->err; m++) {
		size_t *next = &b->next[m];

		while (b->mflight[m] < d->queue_depth) {
			struct io_uring_sqe *sqe;

			while (*next < b->npc && b->pc[*next].m != &d->mem[m])
				(*next)++;
			if (*next == b->npc)
				break;
			sqe = io_uring_get_sqe(b->ring);
			if (!sqe)
				return;
			prep(sqe, d, b->write, &b->pc[(*next)++]);
			b->inflight++;
			b->mflight[m]++;
			if (d->single_submit)
				io_uring_submit(b->ring);
		}
	}
}

/*
 * A piece's request completed with res: the piece is done, or failed, or
 * (a short transfer) the rest of it is submitted again.
 */
static void complete_piece(struct batch *b, struct piece *p, int res)
{
	struct tfs_dev *d = b->d;
	struct tfs_member_counters *st = &p->m->st;
	struct io_uring_sqe *sqe;

	b->inflight--;
	b->mflight[p->m - d->mem]--;
	completed(p);
	if (res == -EINTR || res == -EAGAIN)
		res = 0; /* retry the whole piece */
	if (res < 0) {
		b->err = b->err ? b->err : res;
		tfs_io_error(d, p->m);
		b->done++;
		return;
	}
	if (res == 0 && !b->write && p->len) {
		/* a read at the end of the file: no data */
		b->err = b->err ? b->err : -EIO;
		b->done++;
		return;
	}
	tfs_io_count(b->write ? &st->wbytes : &st->rbytes, (uint64_t)res);
	p->buf += res;
	p->off += (uint64_t)res;
	p->len -= (size_t)res;
	if (!p->len) {
		tfs_io_count(b->write ? &st->writes : &st->reads, 1);
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
	b->mflight[p->m - d->mem]++;
}

/*
 * Cut the batch into pieces of at most block_size, then keep up to
 * queue_depth in flight on each member until all are done: topped up as
 * each completes (overlap), or refilled only once all are back.
 * single_submit enters the kernel once per request instead of once per
 * batch.
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
	rc = queues_init(&b);
	if (!rc)
		rc = cut_pieces(&b, v, n);
	if (rc)
		goto out;
	if (write)
		for (size_t i = 0; i < b.npc; i++)
			if (!__atomic_load_n(&b.pc[i].m->dirty,
					     __ATOMIC_RELAXED))
				__atomic_store_n(&b.pc[i].m->dirty, 1,
						 __ATOMIC_RELAXED);
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
			if ((uintptr_t)p & FLUSH_TAG)
				continue; /* a stray flush: tfs_io_flush_raw() */
			complete_piece(&b, p, res);
		}
	}
	rc = b.err;
out:
	free(b.pc);
	queues_release(&b);
	return rc;
}

static int dev_rw(struct tfs_dev *d, int write, const struct tfs_iov *v, int n)
{
#ifdef TFS_TEST_HOOKS
	if (write)
		tfs_io_write_hold(d);
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

/* Member m's flush ended with res: counted; a failed one stays dirty. */
static int flushed(struct tfs_dev *d, struct tfs_member *m, int res)
{
	tfs_io_count(&m->st.flush, 1);
	if (res >= 0)
		return 0;
	__atomic_store_n(&m->dirty, 1, __ATOMIC_RELAXED);
	tfs_io_error(d, m);
	return res;
}

int tfs_io_flush_raw(struct tfs_dev *d)
{
	struct tfs_member *pending[TFS_MEMBER_MAX];
	struct io_uring *ring;
	struct io_uring_cqe *cqe;
	unsigned int want = 0;
	int rc, err = 0;

	rc = tfs_io_injected_flush_error(d);
	if (rc) {
		tfs_io_count(&d->mem[0].st.flush, 1);
		tfs_io_error(d, &d->mem[0]);
		return -rc;
	}
	ring = thread_ring(&rc);
	if (!ring)
		return rc;
	for (unsigned int i = 0; i < d->nmem; i++) {
		struct tfs_member *m = &d->mem[i];
		struct io_uring_sqe *sqe;

		if (!__atomic_exchange_n(&m->dirty, 0, __ATOMIC_RELAXED) && i)
			continue;
		sqe = io_uring_get_sqe(ring);
		if (!sqe) {
			rc = flushed(d, m, fdatasync(m->fd) < 0 ? -errno : 0);
			err = err ? err : rc;
			continue;
		}
		io_uring_prep_fsync(sqe, m->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data(sqe, (void *)((uintptr_t)m | FLUSH_TAG));
		pending[want++] = m;
	}
	do {
		rc = io_uring_submit_and_wait(ring, want);
	} while (rc == -EINTR);
	if (rc < 0) {
		/* the ring refused them: flush without it */
		for (unsigned int i = 0; i < want; i++) {
			int r = fdatasync(pending[i]->fd) < 0 ? -errno : 0;

			r = flushed(d, pending[i], r);
			err = err ? err : r;
		}
		return err;
	}
	while (want) {
		rc = io_uring_wait_cqe(ring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return rc;
		rc = flushed(
		    d,
		    (struct tfs_member *)((uintptr_t)io_uring_cqe_get_data(cqe) &
					  ~(uintptr_t)FLUSH_TAG),
		    cqe->res);
		io_uring_cqe_seen(ring, cqe);
		err = err ? err : rc;
		want--;
	}
	return err;
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

void tfs_dev_member_stats(const struct tfs_dev *d, unsigned int m,
			  struct tfs_dev_stats *s)
{
	const struct tfs_member_counters *st;

	memset(s, 0, sizeof(*s));
	if (m >= d->nmem)
		return;
	st = &d->mem[m].st;
	s->reads = __atomic_load_n(&st->reads, __ATOMIC_RELAXED);
	s->writes = __atomic_load_n(&st->writes, __ATOMIC_RELAXED);
	s->read_bytes = __atomic_load_n(&st->rbytes, __ATOMIC_RELAXED);
	s->write_bytes = __atomic_load_n(&st->wbytes, __ATOMIC_RELAXED);
	s->flushes = __atomic_load_n(&st->flush, __ATOMIC_RELAXED);
	s->errors = __atomic_load_n(&st->err, __ATOMIC_RELAXED);
	s->submitted = __atomic_load_n(&st->submitted, __ATOMIC_RELAXED);
	s->inflight = __atomic_load_n(&st->inflight, __ATOMIC_RELAXED);
	s->latency_ns = __atomic_load_n(&st->lat_ns, __ATOMIC_RELAXED);
	s->latency_max_ns = __atomic_load_n(&st->lat_max_ns, __ATOMIC_RELAXED);
	s->inflight_max = __atomic_load_n(&st->inflight_max, __ATOMIC_RELAXED);
}

void tfs_dev_get_stats(const struct tfs_dev *d, struct tfs_dev_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int i = 0; i < d->nmem; i++) {
		struct tfs_dev_stats m;

		tfs_dev_member_stats(d, i, &m);
		s->reads += m.reads;
		s->writes += m.writes;
		s->read_bytes += m.read_bytes;
		s->write_bytes += m.write_bytes;
		s->flushes += m.flushes;
		s->errors += m.errors;
		s->submitted += m.submitted;
		s->inflight += m.inflight;
		s->latency_ns += m.latency_ns;
		if (m.latency_max_ns > s->latency_max_ns)
			s->latency_max_ns = m.latency_max_ns;
		s->inflight_max += m.inflight_max; /* a bound: not at once */
	}
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
