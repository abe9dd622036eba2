/*
 * io_internal.h: what io.c (the engine) and io_fault.c (the fault
 * injection of test builds) share: the device's struct, the engine's
 * raw operations, and the hooks the engine calls.  Private to lib/.
 *
 * Without TFS_TEST_HOOKS, io_fault.c is not built and the hooks below
 * are empty inline functions the compiler drops.
 */
#ifndef TFS_IO_INTERNAL_H
#define TFS_IO_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "io.h"

#ifdef TFS_TEST_HOOKS
struct fault_state;
#endif

/* Counters of one member, read with relaxed atomics. */
struct tfs_member_counters {
	uint64_t reads, writes, rbytes, wbytes, flush, err;
	uint64_t submitted, inflight, lat_ns, lat_max_ns;
	uint64_t inflight_max; /* the most inflight has been */
};

/* One member of the set: a block device or an image file. */
struct tfs_member {
	int fd;
	int blockdev;
	int direct; /* opened with O_DIRECT */
	uint64_t size;
	char *path;
	int dirty; /* written or discarded since its last flush (atomic) */
	struct tfs_member_counters st;
};

struct tfs_dev {
	struct tfs_member *mem;
	unsigned int nmem;
	size_t block_size;
	unsigned int queue_depth; /* requests in flight per member */
	int single_submit;	  /* one request per submit call */
	int overlap;		  /* refill the queue as requests complete */
	int failed_member;	  /* of the last error (atomic), or -1 */
#ifdef TFS_TEST_HOOKS
	uint64_t fail_from; /* fault injection; UINT64_MAX = off */
	int fail_err;
	uint64_t short_left;	 /* requests still to cut short (tests) */
	uint64_t discard_ms;	 /* each discard waits this long first */
	pthread_mutex_t hold_mu; /* tfs_dev_hold_writes(): */
	pthread_cond_t hold_cv;
	int hold;		   /* writes wait while set */
	unsigned int held;	   /* writes waiting */
	uint64_t flush_skip;	   /* flushes to let through, then ... */
	uint64_t flush_fail;	   /* ... flushes to fail with -EIO (tests) */
	struct fault_state *fault; /* the fault device, or NULL */
#endif
};

/* The member that device offset off falls in, or NULL if none does;
 * *local gets the offset inside it. */
static inline struct tfs_member *tfs_io_member(const struct tfs_dev *d,
					       uint64_t off, uint64_t *local)
{
	uint64_t m = off >> TFS_MEMBER_SHIFT;

	if (m >= d->nmem)
		return NULL;
	*local = off & TFS_LOCAL_MASK;
	return &d->mem[m];
}

/* Whether [off, off + len) lies inside one member (no wrap-around). */
static inline int tfs_io_inside(const struct tfs_dev *d, uint64_t off,
				uint64_t len)
{
	uint64_t local;
	const struct tfs_member *m = tfs_io_member(d, off, &local);

	return m && len <= m->size && local <= m->size - len;
}

static inline void tfs_io_count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* An error on member m: counted, and remembered for messages. */
static inline void tfs_io_error(struct tfs_dev *d, struct tfs_member *m)
{
	tfs_io_count(&m->st.err, 1);
	__atomic_store_n(&d->failed_member, (int)(m - d->mem),
			 __ATOMIC_RELAXED);
}

static inline uint64_t tfs_io_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The engine itself, without faults (io.c). */
int tfs_io_rw_raw(struct tfs_dev *d, int write, const struct tfs_iov *v, int n);
int tfs_io_flush_raw(struct tfs_dev *d);
int tfs_io_discard_raw(struct tfs_dev *d, uint64_t off, uint64_t len);

#ifdef TFS_TEST_HOOKS
/* io_fault.c: the faults of the environment at open (TFS_FAULT,
 * TFS_FAULT_WRITE_EIO_FROM): 0 or -errno; and their release at close */
int tfs_io_faults_init(struct tfs_dev *d);
void tfs_io_faults_release(struct tfs_dev *d);
/* the errno a write of [off, off + len), or this flush, is to fail
 * with, or 0; whether to cut this request short; a discard's wait */
int tfs_io_injected_write_error(const struct tfs_dev *d, uint64_t off,
				size_t len);
int tfs_io_injected_flush_error(struct tfs_dev *d);
int tfs_io_take_short(struct tfs_dev *d);
void tfs_io_discard_wait(struct tfs_dev *d);
/* a write's wait while tfs_dev_hold_writes() holds them */
void tfs_io_write_hold(struct tfs_dev *d);
/* the fault device's operations, when d->fault is set */
int tfs_io_fault_rw(struct tfs_dev *d, int write, const struct tfs_iov *v,
		    int n);
int tfs_io_fault_flush(struct tfs_dev *d);
int tfs_io_fault_discard(struct tfs_dev *d, uint64_t off, uint64_t len);
#else
static inline int tfs_io_faults_init(struct tfs_dev *d)
{
	(void)d;
	return 0;
}

static inline void tfs_io_faults_release(struct tfs_dev *d)
{
	(void)d;
}

static inline int tfs_io_injected_write_error(const struct tfs_dev *d,
					      uint64_t off, size_t len)
{
	(void)d;
	(void)off;
	(void)len;
	return 0;
}

static inline int tfs_io_injected_flush_error(struct tfs_dev *d)
{
	(void)d;
	return 0;
}

static inline int tfs_io_take_short(struct tfs_dev *d)
{
	(void)d;
	return 0;
}
#endif

#endif
