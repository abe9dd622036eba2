/*
 * fs_internal.h: what the five parts of the file system share (fs.c,
 * namespace.c, file.c, xattr.c, commit.c) and what lib/check.c needs.
 * Private to lib/: nothing outside it includes this.
 *
 * Locks, and their order:
 *
 *     inode io_lock  ->  fs->jlock  ->  fs->lock  ->  the cache's locks
 *
 *   (a clone takes two io_locks: the lower inode number's first)
 *
 *   fs->lock   the tree (meta.c), the allocator, the running transaction
 *              and the pending list; held only for in-memory work, but
 *              for a checkpoint, which writes the tree under it.
 *   fs->jlock  journal I/O (commits, checkpoints); serialises them.
 *   io_lock    per inode: shared for reads, exclusive for writes,
 *              truncate and fallocate (file.c).
 *   errlock    the error state's sentence; a leaf, taken under any of
 *              the others.
 *
 * The cache calls back into file.c (fill, write-back) with its own
 * locks dropped, so the callbacks may take fs->lock.  The cache's
 * barrier (tfs_txn_release_pending()) waits for write-backs, which take
 * fs->lock: it is called with neither fs lock held.
 */
#ifndef TFS_FS_INTERNAL_H
#define TFS_FS_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "cache.h"
#include "format.h"
#include "fs.h"
#include "io.h"
#include "journal.h"
#include "meta.h"

#define BS	     TFS_BLOCK_SIZE
#define META_RESERVE (64u << 10) /* headroom of the checkpoint reserve */
#define NO_TAG	     UINT64_MAX	 /* tfs_txn_release_pending(): nothing */

struct pending {
	uint64_t pblk, len, tag;
};

struct tfs_fs {
	pthread_mutex_t lock;
	pthread_mutex_t jlock;
	struct tfs_dev *dev;
	struct tfs_journal j;
	struct tfs_meta *m;
	struct tfs_alloc *alloc;
	struct tfs_cache *cache;
	size_t cs; /* cache chunk size */
	struct tfs_fs_opts opts;
	uint64_t data_start, data_blocks;
	uint64_t replayed;

	/* running transaction (lock) */
	struct tfs_buf txn;
	uint64_t txn_nrec;
	uint64_t *dirty;
	size_t ndirty, capdirty;
	int need_ckpt;
	uint64_t tag; /* current transaction's tag */
	struct pending *pend;
	size_t npend, cappend;
	uint64_t pend_blocks;
	uint64_t data_writes;			  /* since the last flush */
	uint64_t wb_errors;			  /* write-backs that failed */
	uint64_t app_read_bytes, app_write_bytes; /* atomics */
	uint64_t copy_bytes;			  /* atomic */
	uint64_t clone_bytes; /* shared by copies, not copied; atomic */
	/* discard (commit.c): -errno that stopped it (-EOPNOTSUPP ...), and
	 * bytes discarded; under lock */
	int discard_err;
	uint64_t discarded_bytes;

	/*
	 * The error state (journal.c's J7), like ext4's errors=remount-ro:
	 * once set, never cleared.  error is -errno (read with atomics,
	 * without a lock); errmsg says why (errlock).
	 */
	pthread_mutex_t errlock;
	int error;
	char errmsg[1024];
	int watch_fd[TFS_SET_MAX]; /* each member that is an image (O_PATH)
				      for fstat, or -1 */

	/*
	 * Read-only at run time (tfs_fs_set_readonly(), a remount,ro):
	 * changes fail with EROFS and commits do nothing.  An atomic, set
	 * and cleared under jlock.  opts.readonly is the other read-only:
	 * the device itself opened O_RDONLY, for good.
	 */
	int ro;
	int dirty_at_load;   /* the loaded superblock was not CLEAN */
	uint64_t refs_wrong; /* shared-block counts load set right (J12) */
	char *path;	     /* the device's path, for messages */

	/* commit thread */
	pthread_t thr;
	int thr_started, stop;
	pthread_cond_t cond;
	unsigned int interval_ms;
};

struct freectx {
	struct tfs_fs *fs;
	uint64_t keep, keep_len; /* blocks being remapped, not freed */
};

/* fs.c, for lib/check.c */

/* The tree and the allocator, borrowed; call only with no other thread
 * using fs (fsck). */
struct tfs_meta *tfs_fs_meta(struct tfs_fs *fs);
struct tfs_alloc *tfs_fs_alloc(struct tfs_fs *fs);
/* The tree was changed behind the journal's back: the next sync writes a
 * checkpoint of all of it. */
void tfs_fs_mark_changed(struct tfs_fs *fs);

/*
 * Enter the error state (J7), once: rc (-errno) and a sentence saying
 * why, logged through opts.log.  Later calls change nothing.  Any
 * thread, any locks held.
 */
void tfs_fs_fail(struct tfs_fs *fs, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 0, or -EROFS in the error state or read-only (opened so, or turned so
 * by tfs_fs_set_readonly()): every change starts with it. */
static inline int tfs_fs_may_change(struct tfs_fs *fs)
{
	if (__atomic_load_n(&fs->error, __ATOMIC_ACQUIRE) ||
	    fs->opts.readonly || __atomic_load_n(&fs->ro, __ATOMIC_ACQUIRE))
		return -EROFS;
	return 0;
}

/* The error of the error state, 0 outside it (fsync, sync, close). */
static inline int tfs_fs_failed(struct tfs_fs *fs)
{
	return __atomic_load_n(&fs->error, __ATOMIC_ACQUIRE);
}

/*
 * Has the image file been deleted or truncated under the mount?  Then
 * enter the error state, naming the cause; returns fs's error (0: all
 * is well).  A block device is not checked.  Any locks held.
 */
int tfs_fs_check_device(struct tfs_fs *fs);

/* commit.c */
struct tfs_timespec tfs_fs_now(void);
void tfs_txn_rec(struct tfs_fs *fs, int rc);
void tfs_txn_mark_dirty(struct tfs_fs *fs, struct tfs_inode *ip);
void tfs_txn_touch(struct tfs_fs *fs, struct tfs_inode *ip, int mtime);
/*
 * J10: the free data space must hold the next checkpoint.  Blocks it
 * takes for a tree 'more' bytes larger (META_RESERVE of headroom
 * included); 0 or -ENOSPC for a change that adds 'more' bytes of
 * metadata (and allocates 'blocks' data blocks); the data blocks left
 * beyond the reserve, counting those freed but not yet committed (for
 * statfs).  Under fs->lock.
 */
uint64_t tfs_txn_reserve(struct tfs_fs *fs, uint64_t more);
int tfs_txn_room(struct tfs_fs *fs, uint64_t more);
int tfs_txn_room_data(struct tfs_fs *fs, uint64_t blocks, uint64_t more);
/* J10: whether the next checkpoint, 'more' bytes larger, still fits in
 * TFS_MAP_MAX pieces of the free space (checked after an allocation,
 * which is undone on -ENOSPC). */
int tfs_txn_ckpt_fits(struct tfs_fs *fs, uint64_t more);
uint64_t tfs_txn_avail(struct tfs_fs *fs);
void tfs_txn_freed(uint64_t pblk, uint64_t len, void *arg);
int tfs_txn_checkpoint_locked(struct tfs_fs *fs, uint32_t flags, uint64_t *tag);
void tfs_txn_release_pending(struct tfs_fs *fs, uint64_t tag);
int tfs_txn_commit_jlocked(struct tfs_fs *fs);
int tfs_txn_commit(struct tfs_fs *fs);
int tfs_txn_discard(struct tfs_fs *fs, uint64_t lo, uint64_t hi,
		    uint64_t minlen, uint64_t max_ns, uint64_t *bytes);
void *tfs_txn_thread(void *arg);

/* inode.c */
void tfs_inode_maybe_free(struct tfs_fs *fs, struct tfs_inode *ip);
/* Take or drop an open handle's reference (ip->opens, and the io_lock's
 * state with the first).  Caller holds fs->lock; ref_get: 0 or -ENOMEM;
 * the last ref_put of an unlinked inode frees it. */
int tfs_inode_ref_get(struct tfs_inode *ip);
void tfs_inode_ref_put(struct tfs_fs *fs, struct tfs_inode *ip);
/* A reference that keeps the inode ino alive, and its io_lock, without
 * fs->lock: NULL with *rc -ENOENT or -ENOMEM. */
struct tfs_inode *tfs_inode_hold(struct tfs_fs *fs, uint64_t ino, int *rc);
void tfs_inode_unhold(struct tfs_fs *fs, struct tfs_inode *ip);
/* The inode's data I/O lock: shared for reads, exclusive for writes,
 * truncate and fallocate.  Only while holding a reference. */
pthread_rwlock_t *tfs_inode_io_lock(struct tfs_inode *ip);
/* Free the data path's state of every inode (close, with files still
 * open). */
void tfs_inode_drop_all(struct tfs_fs *fs);
/* Drop every lookup reference and free the inodes only they kept (close:
 * the kernel is gone).  Takes fs->lock. */
void tfs_inode_forget_all(struct tfs_fs *fs);

/* file.c */
int tfs_file_open_cache(struct tfs_fs *fs, char *err, size_t errlen);
int tfs_file_truncate(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t size);
/* Map blocks [bout, bout + n) of out onto the device blocks of
 * [bin, bin + n) of in (a clone: journal.c's J12).  Caller holds
 * fs->lock and both io_locks (none for an inode nobody else knows yet),
 * and has written back both files' dirty data. */
int tfs_file_share(struct tfs_fs *fs, struct tfs_inode *in, uint64_t bin,
		   struct tfs_inode *out, uint64_t bout, uint64_t n);

/* namespace.c */
/* Create an inode named name in directory parent, as mknod, mkdir and
 * symlink do (target: a symlink's); *st gets its attributes.  Caller
 * holds fs->lock. */
int tfs_ns_make(struct tfs_fs *fs, uint64_t parent, const char *name,
		mode_t mode, dev_t rdev, uid_t uid, gid_t gid,
		const char *target, struct stat *st);

#endif
