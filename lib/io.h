/*
 * io.h: the backing device, read and written through io_uring.
 *
 * A tfs_dev is a set of members, each a block device or an image file
 * opened with O_DIRECT (an image on a file system without O_DIRECT, such
 * as tmpfs, falls back to buffered I/O with a flush on every sync).  A
 * device offset names its member in its top bits (TFS_MEMBER_SHIFT) and
 * the byte inside that member in the rest, so a one-member set has the
 * offsets of a plain device.  All offsets, lengths and buffer addresses
 * given here must be multiples of TFS_BLOCK_SIZE (4096), and each piece
 * of a request must lie inside one member: callers bounce unaligned data
 * through aligned buffers.
 *
 * Each calling thread gets its own io_uring on first use, so threads never
 * contend for a ring; a request is split into block_size pieces with up to
 * queue_depth in flight on each member, and short completions are
 * resubmitted for the rest.  All functions are thread safe and
 * synchronous.
 */
#ifndef TFS_IO_H
#define TFS_IO_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "format.h"

struct tfs_dev;

/* Where a device offset keeps its member: the bits above a block
 * number's TFS_MEMBER_BITS (format.h), so that a pblk x 4096 is the
 * device offset of that block; a member holds up to 4 PiB. */
#define TFS_MEMBER_SHIFT (TFS_MEMBER_BITS + TFS_BLOCK_SHIFT)
#define TFS_LOCAL_MASK	 ((1ull << TFS_MEMBER_SHIFT) - 1)
#define TFS_MEMBER_MAX	 TFS_SET_MAX

/* The device offset of byte local of member m, and back. */
static inline uint64_t tfs_dev_off(unsigned int m, uint64_t local)
{
	return (uint64_t)m << TFS_MEMBER_SHIFT | local;
}
static inline unsigned int tfs_off_member(uint64_t off)
{
	return (unsigned int)(off >> TFS_MEMBER_SHIFT);
}
static inline uint64_t tfs_off_local(uint64_t off)
{
	return off & TFS_LOCAL_MASK;
}

#define TFS_DEV_RDONLY 0x1 /* open read-only (fsck without -y) */
#define TFS_DEV_NOLOCK 0x2 /* do not take the exclusive lock */

/*
 * Open the device at path.  Unless TFS_DEV_NOLOCK, takes an exclusive
 * flock on it (and, for a block device, opens it O_EXCL, which fails if
 * the kernel has it mounted), so two mounts, or mkfs or fsck of a mounted
 * device, cannot happen: -EBUSY then.  Returns 0 and *out (caller frees
 * with tfs_dev_close()), or -errno.
 */
int tfs_dev_open(const char *path, int flags, struct tfs_dev **out);
/*
 * Open n paths (1..TFS_MEMBER_MAX) as members 0..n-1 of one device, each
 * as tfs_dev_open() opens one.  On failure *bad gets the index of the
 * path at fault (-1: none, such as -ENOMEM): -EINVAL if n is out of
 * range, -EEXIST if a path names the same file or device as one before
 * it, -EFBIG if a member is larger than 2^TFS_MEMBER_SHIFT bytes.
 */
int tfs_dev_open_set(const char *const *paths, unsigned int n, int flags,
		     struct tfs_dev **out, int *bad);
void tfs_dev_close(struct tfs_dev *d); /* accepts NULL */
/* Put the members in another order: member i becomes the one that was
 * member order[i] (a permutation of 0..n-1: else -EINVAL, nothing
 * changed).  Before any I/O: offsets change meaning. */
int tfs_dev_reorder(struct tfs_dev *d, const unsigned int *order);

/* Member 0's size in bytes, rounded down to whole blocks (the whole
 * device of a one-member set). */
uint64_t tfs_dev_size(const struct tfs_dev *d);
int tfs_dev_is_blockdev(const struct tfs_dev *d);
/* Members, and each one's size (as above), kind and path as opened. */
unsigned int tfs_dev_members(const struct tfs_dev *d);
uint64_t tfs_dev_member_size(const struct tfs_dev *d, unsigned int m);
int tfs_dev_member_is_blockdev(const struct tfs_dev *d, unsigned int m);
const char *tfs_dev_member_path(const struct tfs_dev *d, unsigned int m);
/* The member of the last error returned, or -1 if none failed yet. */
int tfs_dev_failed_member(const struct tfs_dev *d);
/* For a message about the last error: " on member M (PATH)" in buf (M
 * counting from 1, as messages do) when d is a set of several and a
 * member failed, else "".  Returns buf; long paths are cut at
 * TFS_WHERE_LEN. */
#define TFS_WHERE_LEN 512
const char *tfs_dev_failure_where(const struct tfs_dev *d, char *buf,
				  size_t len);

/* Request size, and requests in flight on each member from each
 * thread's ring (defaults 1 MiB, 8). */
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
int tfs_dev_write(struct tfs_dev *d, const void *buf, size_t len, uint64_t off);

/*
 * Make everything written so far durable: an fdatasync, through the
 * ring, of member 0 and of every other member written or discarded since
 * its last flush, all in flight together.  A member whose flush fails
 * stays to be flushed again; the first error is returned.
 */
int tfs_dev_flush(struct tfs_dev *d);

/*
 * Discard [off, off + len): the device may forget those bytes.  An image
 * file gets a hole punched (fallocate PUNCH_HOLE | KEEP_SIZE: its size
 * stays, its allocated blocks shrink); a block device gets BLKDISCARD.
 * Afterwards the range reads as zeros from an image and as zeros or its
 * old contents from a device: callers discard only blocks no state on the
 * device refers to (journal.c, J11).  Not ordered against writes in flight
 * to the range; like a write, durable only after tfs_dev_flush().  Returns
 * 0, -EOPNOTSUPP when the device or the file system under the image
 * cannot discard, or -errno.
 */
int tfs_dev_discard(struct tfs_dev *d, uint64_t off, uint64_t len);

/* Grow member m, an image file, to size bytes (sparse); -ENOTTY on a
 * block device. */
int tfs_dev_extend(struct tfs_dev *d, unsigned int m, uint64_t size);

/* How requests are submitted: single_submit enters the kernel once per
 * request; overlap (the default) refills the queue as each completes,
 * else a batch of queue_depth is submitted and waited for whole. */
void tfs_dev_set_submit(struct tfs_dev *d, int single_submit, int overlap);

/* Counters (counters.h), read with relaxed atomics: of the whole set
 * (the sums; the largest latency), and of member m. */
void tfs_dev_get_stats(const struct tfs_dev *d, struct tfs_dev_stats *s);
void tfs_dev_member_stats(const struct tfs_dev *d, unsigned int m,
			  struct tfs_dev_stats *s);

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

/* Make every discard wait ms milliseconds before it is issued (0: not),
 * so that a test can act while one is in flight.  Any thread. */
void tfs_dev_slow_discards(struct tfs_dev *d, uint64_t ms);

/* While hold is set, every write (tfs_dev_write(), tfs_dev_writev())
 * waits before it is issued, so that a test can keep a write-back in
 * flight while others pile up; 0 lets them all go.  Any thread. */
void tfs_dev_hold_writes(struct tfs_dev *d, int hold);
/* The writes waiting in that hold now. */
unsigned int tfs_dev_writes_held(struct tfs_dev *d);

/* Let the next 'skip' flushes through, then fail the n after them with
 * -EIO without flushing (a disk whose cache flush failed).  Not thread
 * safe: set it while no other thread flushes. */
void tfs_dev_fail_flushes(struct tfs_dev *d, uint64_t skip, uint64_t n);

/*
 * The fault device: a disk with a volatile write cache, a power switch
 * and operations that fail on demand.
 *
 * Operations.  Each call of tfs_dev_read(), _readv(), _write(), _writev()
 * or _flush() is one operation of its kind (TFS_FAULT_READ, _WRITE,
 * _FLUSH), however many pieces it is cut into.  They are counted from the
 * last tfs_dev_fault_set() (or from open), failed ones included, so a
 * test can first run a workload to count what it issues, then fail each
 * of those operations in turn.
 *
 * Volatile cache.  With volatile_cache set, a write that no flush has
 * covered yet is not on the medium: the device keeps the previous
 * contents of every 4 KiB block written since the last successful flush
 * (an undo log, in memory bounded by what is written between flushes).
 * A successful tfs_dev_flush() empties the log; it does not fdatasync
 * the image file, since the host does not lose power, only the simulated
 * disk does.  Reads see the newest contents, as from a disk's cache.
 * Writes and flushes do not overlap: a flush waits for the writes in
 * flight and covers exactly those that completed before it.
 *
 * Power cut.  At a cut (tfs_dev_powercut(), or cut_nth, cut_after_ms,
 * cut_flush_after_fail below) each block in the undo log, chosen with a
 * PRNG seeded by seed, either reached the medium (keeps its new
 * contents) or did not (gets its old contents back): unflushed writes
 * may be lost, any of them may have landed early, and a multi-block
 * write may be torn.  seed % 4 picks the mix: 0 every block is lost,
 * 1 every block landed, 2 each block on a coin toss, 3 the blocks written
 * before the last injected failure are lost (what a failed flush should
 * have covered never reached the medium) and the others on a coin toss.  After the
 * cut every operation fails with -EIO and nothing more reaches the
 * image; with cut_exit the process ends at once instead, with
 * _exit(TFS_FAULT_CUT_STATUS), as a machine losing power does.  A cut
 * triggered by an operation happens instead of that operation.
 *
 * Failures.  The fail_nth operation counted over fail_kinds fails with
 * -fail_err (EIO, ENOSPC, ...) before anything is issued; with
 * fail_persist every later one of those kinds fails too (SQLite's
 * "transient" and "persistent" I/O errors).  A failed flush keeps the
 * undo log: what it should have covered may still be lost at a cut.
 *
 * Members of a set.  With fail_members, only operations touching those
 * members count towards fail_nth (a read or write with a piece on one;
 * every flush, which covers every member), and the failure is charged
 * to the first of them (its error counter, tfs_dev_failed_member()).  A
 * flush that fails so fails on those members only: the blocks of the
 * others leave the undo log as flushed, theirs stay.  With lose_members,
 * a cut takes back only those members' unflushed blocks: the caches of
 * the other drives had landed.
 *
 * The environment sets the same at open, for the daemon:
 *   TFS_FAULT="volatile,seed=S,cut=[KINDS:]N,cut_ms=T,cut_after_fail=K,
 *              fail=KINDS:N[:ERR][:persist],fail_member=M[+M...],
 *              lose_member=M[+M...],slow=KINDS:MS"
 * any subset, comma separated; KINDS is read, write, flush or any, or
 * several joined with '+' (write+flush); ERR is EIO (the default),
 * ENOSPC or a number; cut= counts any kind by default.  A cut set from
 * the environment always ends the process (cut_exit).  A value that does
 * not parse makes tfs_dev_open() fail with -EINVAL.
 * slow= makes each operation of KINDS wait MS milliseconds before it is
 * issued, as a slow or busy device would (a window for signals and races).
 * Examples: "volatile,cut=500,seed=7" loses power at the 500th operation;
 * "fail=flush:1" fails the first flush once (set through the API after
 * open: struct tfs_fault f = { .fail_kinds = TFS_FAULT_FLUSH,
 * .fail_nth = 1, .fail_err = EIO }).
 */
#define TFS_FAULT_READ	0x1u
#define TFS_FAULT_WRITE 0x2u
#define TFS_FAULT_FLUSH 0x4u
#define TFS_FAULT_ANY	0x7u

/* The exit status of a process whose device lost power (cut_exit). */
#define TFS_FAULT_CUT_STATUS 86

/* Operations counted since the last tfs_dev_fault_set() or open. */
struct tfs_fault_ops {
	uint64_t reads, writes, flushes, total;
	uint64_t failed;       /* injected failures so far */
	unsigned int hit_kind; /* of the first one failed or cut */
	uint64_t unflushed;    /* blocks in the undo log now */
	int cut;	       /* the power is off */
};

struct tfs_fault {
	int volatile_cache;	 /* keep an undo log of unflushed writes */
	unsigned int fail_kinds; /* kinds counted for fail_nth; 0: none */
	uint64_t fail_nth;	 /* 1-based; 0: no failure */
	int fail_err;		 /* positive errno; 0 means EIO */
	int fail_persist;	 /* and every later one of fail_kinds */
	unsigned int cut_kinds;	 /* kinds counted for cut_nth; 0: any */
	uint64_t cut_nth;	 /* power cut instead of this op; 0: no */
	uint64_t cut_after_ms;	 /* cut at the first op this long after
					   tfs_dev_fault_set(); 0: no */
	uint64_t cut_flush_after_fail;	/* cut instead of the kth flush after
					   the injected failure; 0: no */
	uint64_t fail_members;		/* bit m: fail_nth counts only the
					   operations touching member m,
					   and blames it; 0: any */
	uint64_t lose_members;		/* bit m: at a cut, only member m's
					   unflushed writes may be lost, the
					   others' landed; 0: every member */
	uint64_t seed;			/* for the cut */
	int cut_exit;			/* a cut ends the process */
	unsigned int slow_kinds;	/* each operation of these kinds */
	uint64_t slow_ms;		/* waits this long first (a slow
					   device); 0: no wait */
	struct tfs_fault_ops *at_close; /* borrowed: gets the counters when
					   the device is closed (may be NULL) */
};

/*
 * Replace the fault settings of d (NULL: none) and zero the operation
 * counters; the power comes back on if it was cut.  Turning the volatile
 * cache off counts what it held as landed.  Returns 0 or -ENOMEM.  Not
 * to be called while other threads use d.
 */
int tfs_dev_fault_set(struct tfs_dev *d, const struct tfs_fault *f);
/* The counters (any thread). */
void tfs_dev_fault_ops(struct tfs_dev *d, struct tfs_fault_ops *ops);
/*
 * Cut the power now (see above; seed picks what of the undo log landed).
 * Waits for writes in flight.  Returns the number of blocks whose old
 * contents were put back, or -errno if putting one back failed.
 */
int tfs_dev_powercut(struct tfs_dev *d, uint64_t seed);
#endif

#endif
