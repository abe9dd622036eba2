/*
 * io.h: the backing device, read and written through io_uring.
 *
 * A tfs_dev is a block device or an image file opened with O_DIRECT (an
 * image on a file system without O_DIRECT, such as tmpfs, falls back to
 * buffered I/O with a flush on every sync).  All offsets, lengths and
 * buffer addresses given here must be multiples of TFS_BLOCK_SIZE (4096):
 * callers bounce unaligned data through aligned buffers.
 *
 * Each calling thread gets its own io_uring on first use, so threads never
 * contend for a ring; a request is split into block_size pieces with up to
 * queue_depth in flight, and short completions are resubmitted for the
 * rest.  All functions are thread safe and synchronous.
 */
#ifndef TFS_IO_H
#define TFS_IO_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"

struct tfs_dev;

#define TFS_DEV_RDONLY	0x1	/* open read-only (fsck without -y) */
#define TFS_DEV_NOLOCK	0x2	/* do not take the exclusive lock */

/*
 * Open the device at path.  Unless TFS_DEV_NOLOCK, takes an exclusive
 * flock on it (and, for a block device, opens it O_EXCL, which fails if
 * the kernel has it mounted), so two mounts, or mkfs or fsck of a mounted
 * device, cannot happen: -EBUSY then.  Returns 0 and *out (caller frees
 * with tfs_dev_close()), or -errno.
 */
int tfs_dev_open(const char *path, int flags, struct tfs_dev **out);
void tfs_dev_close(struct tfs_dev *d);	/* accepts NULL */

/* Size in bytes, rounded down to whole blocks. */
uint64_t tfs_dev_size(const struct tfs_dev *d);
int tfs_dev_is_blockdev(const struct tfs_dev *d);

/* Request size and depth of each thread's ring (defaults 1 MiB, 8). */
void tfs_dev_set_queue(struct tfs_dev *d, size_t block_size,
		       unsigned int queue_depth);

/* A piece of a batch: len bytes at device offset off from/to buf. */
struct tfs_iov {
	void *buf;
	size_t len;
	uint64_t off;
};

/*
 * Read or write every piece of the batch, all in flight together.  Returns
 * 0 when all of it was transferred, or the first error as -errno (-EIO for
 * a read past the end of the device).
 */
int tfs_dev_readv(struct tfs_dev *d, const struct tfs_iov *v, int n);
int tfs_dev_writev(struct tfs_dev *d, const struct tfs_iov *v, int n);
int tfs_dev_read(struct tfs_dev *d, void *buf, size_t len, uint64_t off);
int tfs_dev_write(struct tfs_dev *d, const void *buf, size_t len,
		  uint64_t off);

/* Make everything written so far durable (fdatasync through the ring). */
int tfs_dev_flush(struct tfs_dev *d);

/* Grow an image file to size bytes (sparse); -ENOTTY on a block device. */
int tfs_dev_extend(struct tfs_dev *d, uint64_t size);

/* How requests are submitted: single_submit enters the kernel once per
 * request; overlap (the default) refills the queue as each completes,
 * else a batch of queue_depth is submitted and waited for whole. */
void tfs_dev_set_submit(struct tfs_dev *d, int single_submit, int overlap);

/* Counters (counters.h), read with relaxed atomics. */
void tfs_dev_get_stats(const struct tfs_dev *d, struct tfs_dev_stats *s);

/* Tear down the calling thread's ring (before fork(): a child must not
 * share its parent's ring).  The next request makes a new one. */
void tfs_io_thread_exit(void);

/*
 * Register [base, base + len) as the calling thread's io_uring fixed
 * buffers: its requests on that memory then skip pinning pages per I/O.
 * The memory should be locked (mlock) and outlive the thread.  0, or
 * -errno (-EBUSY if already registered, -ENOMEM past RLIMIT_MEMLOCK).
 */
int tfs_io_register(void *base, size_t len);

/* Aligned memory for device I/O: caller frees with tfs_io_free(). */
void *tfs_io_alloc(size_t len);
void tfs_io_free(void *p);

#ifdef TFS_TEST_HOOKS
/*
 * Fault injection, for tests only: compiled in with the build option
 * -DTFS_TEST_HOOKS=ON (which defines TFS_TEST_HOOKS), never in a release
 * build.  Test code that calls these is guarded by #ifdef TFS_TEST_HOOKS
 * and skips without them.
 */

/*
 * Fail every write at or after device offset 'from' with -err (0 turns
 * it off).  Also set from the environment at open:
 * TFS_FAULT_WRITE_EIO_FROM=<byte offset>.
 */
void tfs_dev_fail_writes(struct tfs_dev *d, uint64_t from, int err);

/* The next n requests longer than a block ask the kernel for half their
 * length, so they complete short and the rest must be resubmitted. */
void tfs_dev_short_transfers(struct tfs_dev *d, uint64_t n);

/* Let the next 'skip' flushes through, then fail the n after them with
 * -EIO without flushing (a disk whose cache flush failed).  Not thread
 * safe: set it while no other thread flushes. */
void tfs_dev_fail_flushes(struct tfs_dev *d, uint64_t skip, uint64_t n);
#endif

#endif
