/*
 * fs.h: the tensorfs file system, as a library.
 *
 * This is the API the FUSE daemon (fs/) and the tools (tools/) are built
 * on.  It speaks inode numbers and POSIX semantics, never FUSE: every
 * function returns 0 (or a byte count) on success and -errno on failure,
 * with the errno POSIX specifies for the case.  Permission checks are the
 * caller's (the daemon mounts with default_permissions, so the kernel
 * makes them); ownership of new inodes comes from the caller's uid/gid.
 *
 * Thread safety: every function may be called from many threads at once.
 * Metadata changes take one lock for a few microseconds; file data I/O
 * runs outside it, under a per-inode reader/writer lock.
 *
 * Durability: changes live in memory and are committed to the device's
 * journal every commit interval (default 5 s), on tfs_fsync() and at
 * tfs_fs_close().  A change returns only once it is visible to every
 * later call; tfs_fsync() returns once it is on the device.
 */
#ifndef TFS_FS_H
#define TFS_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "counters.h"

struct tfs_fs;

/* Inode number of the root directory (FUSE's FUSE_ROOT_ID too). */
#define TFS_FS_ROOT 1u

struct tfs_fs_opts {
	unsigned int commit_interval_ms; /* 0: default 5000 */
	int readonly;			 /* open read-only (fsck) */
	int no_lock;			 /* do not flock the device */
	int adopt_member;		 /* (fsck) a set member that lost
						   both superblock copies is
						   found by elimination
						   (set.h's TFS_SET_ADOPT) */
	int repair_refs;		 /* (fsck -y) shared-block counts
						   below the extents mapping
						   the blocks are set to them,
						   not refused */
	int no_recover;			 /* load only: no orphan cleanup,
						   no checkpoint (fsck -n) */
	int no_replay;			 /* readonly only: the last
						   checkpoint as it is, the
						   journal after it not
						   replayed (norecovery) */
	int atime;			 /* TFS_ATIME_*: when reads
						   update atime */
	int nodiratime;			 /* listing a directory never
						   updates its atime */
	int discard;			 /* discard freed blocks online
						   (-o discard) */

	/* the data path (config.h's [offload_param] and [aio]) */
	uint64_t cache_bytes;	  /* clean data in RAM; 0: none */
	uint64_t pool_bytes;	  /* dirty data in RAM; 0: 16 chunks */
	size_t block_size;	  /* device request, cache chunk; 0: 1 MiB */
	unsigned int queue_depth; /* requests in flight per thread; 0: 8 */
	unsigned int io_threads;  /* write-back threads; 0: 1 */
	int pin;		  /* mlock the cache and pool */
	int single_submit;	  /* one request per submit call */
	int no_overlap;		  /* submit a batch, wait for all of it */
	/* Where errors no caller sees go (failed write-backs); may be NULL.
	 * Called from any thread. */
	void (*log)(const char *msg);
	/* Told of bytes [off, off + len) of ino that changed where a cache
	 * of the caller's (the kernel's pages) did not see it: a failed
	 * write-back dropped the data written, which that cache may still
	 * hold.  May be NULL.  Called from any thread, with no lock of the
	 * file system held; must not wait for the caller's requests. */
	void (*changed)(void *arg, uint64_t ino, uint64_t off, uint64_t len);
	void *changed_arg;
};

/*
 * Access times, as the mount options of the same names: a read moves a
 * file's atime (tfs_file_note_read())
 *   TFS_ATIME_RELATIME  (0, the default) only when atime is not after
 *                       mtime or ctime, or is a day old: atime still says
 *                       whether a file was read since it last changed,
 *                       for about one metadata update a day per file
 *   TFS_ATIME_NOATIME   never
 *   TFS_ATIME_STRICT    on every read
 */
#define TFS_ATIME_RELATIME 0
#define TFS_ATIME_NOATIME  1
#define TFS_ATIME_STRICT   2

/*
 * Open the file system on the device at path: load and, after a crash,
 * recover it (replay the journal, free orphaned inodes, write a fresh
 * checkpoint).  On failure returns -errno and a sentence for people in
 * err, which never names path (the caller does, once: "PROG: PATH:
 * ERR"): -EINVAL not a tensorfs; -EBUSY in use (err names the mount
 * point holding it and how to unmount it, or the process that has it
 * open); -ENOTBLK neither a block device nor a regular file; -EUCLEAN
 * corrupted; -ENOENT, -EACCES ...  With opts.no_replay and not
 * opts.readonly: -EINVAL.  Caller closes with tfs_fs_close().
 */
/*
 * The memory the file data cache of o takes beside its cache_bytes and
 * pool_bytes: a record, sector bitmaps and table slots per block_size
 * chunk (up to 250 bytes: 0.02% of the cache at 1 MiB chunks, 6% at
 * 4 KiB).  A mount's memory check counts it with them.
 */
uint64_t tfs_fs_cache_index_bytes(const struct tfs_fs_opts *o);

int tfs_fs_open(const char *path, const struct tfs_fs_opts *o,
		struct tfs_fs **out, char *err, size_t errlen);
/* Start the background commit thread.  Call after any fork(). */
int tfs_fs_start(struct tfs_fs *fs);
/* Drop the calling thread's device ring before fork(): a child must not
 * share its parent's io_uring.  Between tfs_fs_open() and fork(), in the
 * thread that opened the file system; the next request makes a new one. */
void tfs_fs_prepare_fork(void);
/* Flush everything, write a clean checkpoint, close.  Returns 0 or the
 * first error of the final flush (the file system is closed either way);
 * in the error state writes nothing and returns its error.  Accepts
 * NULL. */
int tfs_fs_close(struct tfs_fs *fs);
/* Commit all metadata and flush the device.  In the error state returns
 * its error (-EIO mostly). */
int tfs_fs_sync(struct tfs_fs *fs);

/*
 * Discard (trim) the free space no state on the device still refers to,
 * as FITRIM does for fstrim(8): commits, writes the checkpoints that
 * make the blocks freed so far safe to discard (journal.c's J11), then
 * punches them out of an image file or discards them on a block device.
 * Only the blocks in bytes [start, start + len) of the device are
 * discarded (len past the end: to the end), in free pieces there of at
 * least minlen bytes.  Blocks discarded before (and not used since) are
 * not discarded again.  *bytes gets the bytes discarded.  Returns 0;
 * -EINVAL, as ext4 and xfs, when start is at or past the end of the
 * file system, len is under a block or minlen is over the file system's
 * size; -EOPNOTSUPP when the device cannot discard, -EROFS read-only,
 * the error state's error, or -errno of the device.  Thread safe; takes
 * the journal lock.
 */
int tfs_fs_trim(struct tfs_fs *fs, uint64_t start, uint64_t len,
		uint64_t minlen, uint64_t *bytes);

/*
 * The error state (as ext4's errors=remount-ro).  A device error that
 * leaves it unknown what the device holds (a failed flush, a failed
 * superblock write), or the image file deleted or truncated under the
 * mount, stops all writing of metadata for good, so the device keeps
 * the last committed state and mounts again.  Then every change (create,
 * write, truncate, rename, link, unlink, setattr, setxattr, fallocate,
 * open with O_TRUNC) fails with -EROFS, reads keep working, tfs_fsync(),
 * tfs_fs_sync() and tfs_fs_close() return the error (-errno of the
 * cause: -EIO for a changed device), and the cause is logged once
 * through opts.log.  A failed write-back of file data is not a reason:
 * it is returned to the file (tfs_write()).
 *
 * tfs_fs_error(): 0 outside the error state; in it, its -errno, and a
 * sentence saying why (NUL-terminated, cut to len) in buf (may be NULL).
 */
int tfs_fs_error(struct tfs_fs *fs, char *buf, size_t len);

/* A warning of the last load, or NULL: that it fell back to the older
 * superblock copy because the newer one's checkpoint is damaged
 * (changes committed after the older one may be missing).  Also logged
 * through opts.log at open.  Borrowed, valid until tfs_fs_close(). */
const char *tfs_fs_load_note(const struct tfs_fs *fs);

/* Whether the last load replayed a journal (the file system had not been
 * unmounted cleanly), and how many transactions; with opts.no_replay,
 * how many it left unreplayed (tfs_fs_not_replayed()). */
uint64_t tfs_fs_replayed(const struct tfs_fs *fs);
uint64_t tfs_fs_not_replayed(const struct tfs_fs *fs);

/* Whether the last load found the file system not unmounted cleanly
 * (its superblock without CLEAN): a read-only open (opts.readonly) then
 * shows the journal replayed in memory only, and its orphans unfreed;
 * a read-only mount refuses it (recovery needs a read-write open). */
int tfs_fs_needs_recovery(const struct tfs_fs *fs);

/*
 * Read-only at run time, as ext4's remount,ro.  tfs_fs_set_readonly(fs,
 * 1) writes everything back, commits and writes a checkpoint marked
 * clean (as tfs_fs_close() does), so the device holds a clean file
 * system when it returns 0; from its start every change fails with
 * -EROFS, and commits (the thread's, tfs_fsync(), tfs_fs_sync()) write
 * nothing.  tfs_fs_set_readonly(fs, 0) makes it writable again: -EROFS
 * if the device was opened read-only (opts.readonly), the error state's
 * error in it.  In the error state turning read-only writes nothing and
 * returns 0.  tfs_fs_close() of a read-only file system still writes a
 * final clean checkpoint unless opened read-only.  Thread safe; the
 * caller makes sure no change is in flight (the kernel does, for a
 * remount: it refuses remount,ro while a file is open for writing).
 *
 * tfs_fs_is_readonly(): 1 if changes fail with -EROFS for being
 * read-only (opened so or turned so), else 0.
 */
int tfs_fs_set_readonly(struct tfs_fs *fs, int ro);
int tfs_fs_is_readonly(struct tfs_fs *fs);

/* ===== names ===== */

/* The entry name of directory parent: -ENOENT if there is none.  "."
 * is parent itself, ".." its parent (the root's is the root): -ENOENT
 * for a removed directory's. */
int tfs_lookup(struct tfs_fs *fs, uint64_t parent, const char *name,
	       struct stat *st);

/*
 * The kernel's lookup references (FUSE's nlookup).  An inode that lost
 * its last name lives while it is open or the kernel holds a lookup
 * reference to it, so fstat() of an open descriptor, an O_PATH one or a
 * removed current directory keeps working; it is freed, with its
 * blocks, when the last of both goes.  A FUSE daemon calls
 * tfs_lookup_ref() once for every reply that gives the kernel an entry
 * (lookup, create, mknod, mkdir, symlink, link; also of "." and ".."),
 * before the reply, and tfs_forget() with the count of each forget (or
 * tfs_forget_many() for a batch), and again for a reply the kernel did
 * not take.  tfs_lookup_ref() returns -ENOENT when ino is gone (freed
 * since it was looked up: reply ENOENT).  tfs_forget() of an unknown
 * inode, or with more than it holds, drops what there is.  Callers that
 * never call tfs_lookup_ref() (tools) need not call tfs_forget().
 */
int tfs_lookup_ref(struct tfs_fs *fs, uint64_t ino);
void tfs_forget(struct tfs_fs *fs, uint64_t ino, uint64_t nlookup);
struct tfs_forget_one {
	uint64_t ino, nlookup;
};
void tfs_forget_many(struct tfs_fs *fs, const struct tfs_forget_one *v,
		     size_t n);
int tfs_getattr(struct tfs_fs *fs, uint64_t ino, struct stat *st);

#define TFS_SET_MODE	  0x01
#define TFS_SET_UID	  0x02
#define TFS_SET_GID	  0x04
#define TFS_SET_SIZE	  0x08
#define TFS_SET_ATIME	  0x10
#define TFS_SET_MTIME	  0x20
#define TFS_SET_ATIME_NOW 0x40
#define TFS_SET_MTIME_NOW 0x80
#define TFS_SET_CTIME	  0x100
/* Change the attributes named by 'set' to those in *in; *out (may be NULL)
 * gets the result. */
int tfs_setattr(struct tfs_fs *fs, uint64_t ino, const struct stat *in, int set,
		struct stat *out);
#define TFS_KILL_SUIDGID                                                       \
	0x1			 /* a write or truncation by a caller
				       without CAP_FSETID */
#define TFS_KILL_CHOWN	     0x2 /* a change of owner or group */
#define TFS_KILL_NEED_GROUPS 2	 /* tfs_kill_privs(): ask again with all */
/*
 * Drop what a change takes from a regular file when the daemon, not the
 * kernel, clears privileges (FUSE_HANDLE_KILLPRIV_V2), before the write,
 * truncation or chown it is for: security.capability always; with how
 * TFS_KILL_SUIDGID or TFS_KILL_CHOWN, S_ISUID, and S_ISGID if S_IXGRP;
 * with TFS_KILL_SUIDGID also S_ISGID without S_IXGRP when the file's
 * group is none of the caller's groups[0..ngroups).  Those are complete
 * if all_groups; if not, and that decides, nothing is done and
 * TFS_KILL_NEED_GROUPS is returned: call again with them all.  1 when
 * something was dropped, 0 when nothing was, or -errno.
 */
int tfs_kill_privs(struct tfs_fs *fs, uint64_t ino, int how,
		   const gid_t *groups, size_t ngroups, int all_groups);

/* Create a regular file, fifo, socket or device node (mode has the type;
 * S_IFREG if none).  -EEXIST if the name is taken. */
int tfs_mknod(struct tfs_fs *fs, uint64_t parent, const char *name, mode_t mode,
	      dev_t rdev, uid_t uid, gid_t gid, struct stat *st);
int tfs_mkdir(struct tfs_fs *fs, uint64_t parent, const char *name, mode_t mode,
	      uid_t uid, gid_t gid, struct stat *st);
int tfs_symlink(struct tfs_fs *fs, uint64_t parent, const char *name,
		const char *target, uid_t uid, gid_t gid, struct stat *st);
/* Copy the target into buf (not NUL-terminated); returns its length, or
 * -ERANGE if buf is too small. */
ssize_t tfs_readlink(struct tfs_fs *fs, uint64_t ino, char *buf, size_t len);
int tfs_link(struct tfs_fs *fs, uint64_t ino, uint64_t newparent,
	     const char *newname, struct stat *st);
int tfs_unlink(struct tfs_fs *fs, uint64_t parent, const char *name);
int tfs_rmdir(struct tfs_fs *fs, uint64_t parent, const char *name);

#define TFS_RENAME_NOREPLACE 0x1 /* RENAME_NOREPLACE */
#define TFS_RENAME_EXCHANGE  0x2 /* RENAME_EXCHANGE */
#define TFS_RENAME_WHITEOUT  0x4 /* RENAME_WHITEOUT */
/*
 * rename(2) with renameat2()'s flags.  A rename within one directory
 * keeps the entry's place in the readdir order.  TFS_RENAME_WHITEOUT
 * (overlayfs's upper layer) leaves at the old name, in the same change, a
 * whiteout: a character device 0:0, mode 0, owned by uid:gid (tfs_rename():
 * 0:0); not with TFS_RENAME_EXCHANGE (-EINVAL).
 */
int tfs_rename(struct tfs_fs *fs, uint64_t parent, const char *name,
	       uint64_t newparent, const char *newname, unsigned int flags);
int tfs_rename2(struct tfs_fs *fs, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned int flags,
		uid_t uid, gid_t gid);

/*
 * readdir: call fill for the entries after 'cookie' (0: from the start;
 * "." and ".." first), each with the cookie to resume after it, until
 * fill returns non-zero (its buffer is full) or the end.  Returns 0 or
 * -errno.  fill runs under the metadata lock: it must only copy.
 */
typedef int (*tfs_fill_fn)(void *arg, const char *name, uint64_t ino,
			   mode_t type, uint64_t next_cookie);
int tfs_readdir(struct tfs_fs *fs, uint64_t ino, uint64_t cookie,
		tfs_fill_fn fill, void *arg);
/* -ENOTDIR unless ino is a directory. */
int tfs_opendir(struct tfs_fs *fs, uint64_t ino);

int tfs_statfs(struct tfs_fs *fs, struct statvfs *sv);

/* ===== file data ===== */

/* Open ino (flags as open(2): O_TRUNC truncates; O_DIRECTORY: -ENOTDIR
 * unless a directory, which is how a directory is opened).  Every
 * successful tfs_open() is paired with one tfs_release(); an unlinked
 * file's data lives until its last release (and lookup reference). */
int tfs_open(struct tfs_fs *fs, uint64_t ino, int flags);
int tfs_release(struct tfs_fs *fs, uint64_t ino);

/*
 * Data path.  A write is copied into the write-back pool and returns:
 * its blocks are allocated (ENOSPC now, not later) and st_size shows it;
 * the pool writes it back in the background, waiting writers when full.
 * Reads are served from RAM where the data is cached.  tfs_flush() (each
 * close) starts the write-back of a file, tfs_fsync() waits for it.
 *
 * A write-back that fails is logged, its data is dropped, and it is
 * reported as Linux reports it (errseq): each open file (what one open()
 * made, shared by its dup()s) hears of it once, at its next tfs_write(),
 * tfs_fsync() or tfs_flush(), whichever comes first; every open file
 * hears, not only the first to ask; and a failure no open file has heard
 * of yet is told to the next one opened.  An open file keeps what it has
 * heard in a uint32_t, set by tfs_wb_sample() when it is opened and
 * passed as wb_seen to each of those calls.  wb_seen NULL: a caller with
 * no open file, who hears a failure nobody has heard yet.
 */
uint32_t tfs_wb_sample(struct tfs_fs *fs, uint64_t ino);

/*
 * For a caller that keeps file data in a cache of its own (the daemon:
 * the kernel's page cache, kept from one open of a file to the next),
 * which must drop what it holds of a file whose data changed where that
 * cache did not see it.  tfs_mark_stale() notes such a change (the
 * daemon: a write that bypassed the page cache); a failed write-back
 * notes one too, as the data it dropped may still sit in that cache.
 * tfs_take_stale() returns 1 if a change was noted since it last
 * returned 1, else 0 (also for no such inode), and forgets it.
 */
void tfs_mark_stale(struct tfs_fs *fs, uint64_t ino);
int tfs_take_stale(struct tfs_fs *fs, uint64_t ino);

/* Read up to len bytes at off into buf: returns the bytes read, short
 * at end of file, 0 past it. */
ssize_t tfs_read(struct tfs_fs *fs, uint64_t ino, void *buf, size_t len,
		 uint64_t off);
/*
 * As tfs_read(), for a buffer that is where the bytes must end up (a
 * reply's): a whole cache chunk that is not in the cache is read from the
 * device straight into buf, around the cache (no copy when buf is
 * 4096-aligned and the chunk whole blocks; nothing filled or evicted);
 * other pieces come through the cache.  For large reads of data read
 * once: the cache keeps what was written and what small reads fill.
 * room (>= len) is what buf holds: a read a few bytes short of a whole
 * chunk may fill it up to the chunk's end (tfs_cache_read_into()).
 */
ssize_t tfs_read_around(struct tfs_fs *fs, uint64_t ino, void *buf, size_t len,
			size_t room, uint64_t off);
/*
 * A read without a copy: the bytes stay where they are, in the cache,
 * pinned until tfs_read_unpin().  iov[0..niov) are borrowed: they point
 * into the cache or, when the read could not be pinned (more than
 * TFS_PIN_PIECES cache chunks, or no room in the cache), into a buffer
 * of the calling thread, valid until its next call into this library.
 * The other fields are the library's.
 */
#define TFS_PIN_PIECES 16
struct tfs_read_pin {
	struct iovec iov[TFS_PIN_PIECES];
	int niov;
	void *ip;
	void *ref[TFS_PIN_PIECES];
	unsigned int nref;
};
/*
 * Read up to len bytes at off as tfs_read() does, into p: returns the
 * bytes read (short at end of file, 0 past it) or -errno.  On success
 * the caller must call tfs_read_unpin(fs, p) once it is done with
 * p->iov, soon and on the same thread: until then the file cannot be
 * written or truncated.  On error nothing is held.
 */
ssize_t tfs_read_pin(struct tfs_fs *fs, uint64_t ino, size_t len, uint64_t off,
		     struct tfs_read_pin *p);
/* Let go of what tfs_read_pin() holds; p->iov is invalid after. */
void tfs_read_unpin(struct tfs_fs *fs, struct tfs_read_pin *p);
/*
 * A read of ino returned n (bytes, 0 at end of file, or -errno: then
 * nothing happens): move its atime as opts.atime says.  The change rides
 * with the next commit: no I/O, one short hold of the metadata lock,
 * nothing in the error state or on a read-only file system.  Leaves the
 * calling thread's tfs_read_pin() buffer valid.
 */
void tfs_file_note_read(struct tfs_fs *fs, uint64_t ino, ssize_t n);
/* Would a read of ino now move its atime (as tfs_file_note_read())?  1 or
 * 0; 0 also for no such inode. */
int tfs_atime_due(struct tfs_fs *fs, uint64_t ino);
/* Change the atime policy (TFS_ATIME_*) of a mounted file system, as a
 * remount would; any thread. */
void tfs_fs_set_atime(struct tfs_fs *fs, int atime);
/*
 * A listing of directory ino was read (readdir): move its atime as the
 * policy says, as tfs_file_note_read() for a file, unless directories'
 * atimes are off (nodiratime: tfs_fs_set_diratime(fs, 0), also the
 * opts.nodiratime of the open).  Any thread.
 */
void tfs_dir_note_read(struct tfs_fs *fs, uint64_t ino);
void tfs_fs_set_diratime(struct tfs_fs *fs, int on);

/* Write len bytes at off: returns len (never a short write) or -errno
 * (-ENOSPC, -EFBIG, -EIO ...). */
ssize_t tfs_write(struct tfs_fs *fs, uint64_t ino, const void *buf, size_t len,
		  uint64_t off, uint32_t *wb_seen);
/*
 * copy_file_range(2) inside the file system: copy up to len bytes of
 * ino_in from off_in to ino_out at off_out.  On a file system of format
 * version 4, when both offsets lie at the same place in a block, the
 * whole blocks of the range are shared, not copied (a clone: the
 * destination maps the source's device blocks, and the first write to
 * either gives the writer blocks of its own), up to TFS_CLONE_MAX bytes
 * a call; the partial blocks at either end, and everything on older
 * formats, are copied as tfs_read() then tfs_write() would, a piece of
 * at most 1 MiB at a time, at most TFS_COPY_MAX bytes a call.  Returns
 * the bytes copied (fewer than len at the source's end of file or at
 * those limits, 0 at or past its end) or, when nothing was copied,
 * -errno as tfs_read() and tfs_write() (wb_seen as for tfs_write() on
 * ino_out).  A copy of data is not atomic (other writers may change
 * either range meanwhile, as on ext4); a clone is, against writers of
 * either file.  ino_in may be ino_out (the ranges must not overlap; the
 * kernel checks).
 */
/* What tfs_snapshot() made. */
struct tfs_snap_stats {
	uint64_t dirs, files, others; /* others: symlinks, fifos, devices */
	uint64_t shared_bytes;	      /* file bytes shared, not copied */
};
/*
 * A snapshot: make the tree at src (a directory, or a single file) again
 * as 'name' in directory dst_parent, as of one moment: directories,
 * symlinks and special files anew with the same mode, owner, times and
 * xattrs; regular files as clones (their blocks shared, as
 * tfs_copy_range() shares them; hard links inside the tree become files
 * of their own).  Writers of the tree's files wait while it is made.
 * The new tree is on the device when this returns.  0 with *st the new
 * top's attributes and *out what was made, or -errno: -EOPNOTSUPP
 * (format before 4), -EEXIST (name taken), -EINVAL (dst_parent inside
 * src), -ENOENT, -ENOTDIR, -ENOSPC, -EROFS, -EBUSY (the tree kept
 * changing; try again).  On an error after the first inode, what was
 * made stays (*out counts it) and can be removed.
 */
int tfs_snapshot(struct tfs_fs *fs, uint64_t src, uint64_t dst_parent,
		 const char *name, struct stat *st, struct tfs_snap_stats *out);

#define TFS_COPY_MAX  (64u << 20)
#define TFS_CLONE_MAX (1u << 30)
ssize_t tfs_copy_range(struct tfs_fs *fs, uint64_t ino_in, uint64_t off_in,
		       uint64_t ino_out, uint64_t off_out, size_t len,
		       uint32_t *wb_seen);
int tfs_fsync(struct tfs_fs *fs, uint64_t ino, int datasync, uint32_t *wb_seen);
/* A close of a file descriptor: start writing the file back; 0 or the
 * error of an earlier write-back. */
int tfs_flush(struct tfs_fs *fs, uint64_t ino, uint32_t *wb_seen);
/* mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE;
 * others -EOPNOTSUPP. */
int tfs_fallocate(struct tfs_fs *fs, uint64_t ino, int mode, uint64_t off,
		  uint64_t len);
/*
 * lseek(2)'s SEEK_DATA (hole 0) and SEEK_HOLE (hole 1): in *out the first
 * offset at or after off that holds data, or that lies in a hole (the end
 * of the file counts as one).  Data is every block with a place on the
 * device: written, placed by a write whose data is still in the pool, or
 * fallocated (reads as zeros, reported as data, as is safe); a hole is a
 * block without one, never written or punched.  Block-sized: a hole is
 * seen only where it covers whole blocks.  -ENXIO at or past the end of
 * the file, and for SEEK_DATA in a hole that runs to it; -EISDIR,
 * -EINVAL for what is not a regular file, -ENOENT.
 */
int tfs_seek(struct tfs_fs *fs, uint64_t ino, uint64_t off, int hole,
	     uint64_t *out);

/* ===== xattrs ===== */

#define TFS_XATTR_CREATE  0x1 /* XATTR_CREATE */
#define TFS_XATTR_REPLACE 0x2 /* XATTR_REPLACE */
int tfs_setxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		 const void *value, size_t size, int flags);
/* size 0: return the value's size; else copy it, -ERANGE if too small. */
ssize_t tfs_getxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		     void *value, size_t size);
ssize_t tfs_listxattr(struct tfs_fs *fs, uint64_t ino, char *list, size_t size);
int tfs_removexattr(struct tfs_fs *fs, uint64_t ino, const char *name);

/* ===== inspection (fsck, tools) ===== */

struct tfs_fs_info {
	uint64_t dev_bytes;    /* size of the file system */
	uint64_t block_size;   /* bytes of the blocks counted below */
	uint64_t data_blocks;  /* blocks of the data area */
	uint64_t free_blocks;  /* of those, free */
	uint64_t free_extents; /* pieces the free space is in */
	uint64_t inodes;
	uint64_t meta_bytes;	 /* what a checkpoint takes */
	uint64_t meta_capacity;	 /* what a checkpoint may grow to: its
					   size plus the free blocks beyond
					   the checkpoint reserve */
	uint64_t ckpt_blocks;	 /* data blocks the checkpoints of the
					   two superblock copies hold */
	uint64_t meta_ram_bytes; /* RAM the tree holds: tfs_meta_ram() */
	uint64_t journal_bytes;
	uint64_t generation; /* superblock generation */
	uint8_t uuid[16];
	uint32_t format; /* on-disk format version: 2, 3, or
			    TFS_FS_FORMAT (tfs_fs_upgrade()) */
};
void tfs_fs_get_info(struct tfs_fs *fs, struct tfs_fs_info *info);

/* Counters of the data path (for stats files and tools). */
struct tfs_fs_stats {
	struct tfs_cache_stats cache;
	struct tfs_dev_stats dev;
	uint64_t app_read_bytes, app_write_bytes;
	uint64_t copy_bytes;  /* tfs_copy_range(), also in the two above */
	uint64_t clone_bytes; /* tfs_copy_range() shared, not copied */
};
void tfs_fs_get_stats(struct tfs_fs *fs, struct tfs_fs_stats *s);

/* One member of the file system's set of devices (a single device is a
 * set of one): where it is, its space and its device counters, so a slow
 * or failing drive can be told apart. */
struct tfs_member_info {
	const char *path;	  /* as opened; valid while fs is open */
	int blockdev;		  /* 1: a block device, 0: an image file */
	uint64_t size_bytes;	  /* the member's size, as the set records it */
	uint64_t data_bytes;	  /* of it, the data area */
	uint64_t free_bytes;	  /* of that, free now; blocks a commit freed
				   wait for it (not counted) */
	struct tfs_dev_stats dev; /* its share of tfs_fs_stats.dev */
};
/* The number of members (1..TFS_SET_MAX). */
unsigned int tfs_fs_members(struct tfs_fs *fs);
/* Member m's info into *mi: 0, or -EINVAL past the last member. */
int tfs_fs_member_info(struct tfs_fs *fs, unsigned int m,
		       struct tfs_member_info *mi);

/* Number of extents of a regular file; -errno. */
int64_t tfs_extent_count(struct tfs_fs *fs, uint64_t ino);

/* ===== repair (fsck) ===== */

/* Write both superblock copies afresh, each with a checkpoint of the
 * whole tree: a damaged copy (tfs_check_supers()) is replaced by a good
 * one.  Returns 0 or the first error.  Call with no other thread using
 * fs, on a file system opened read-write. */
int tfs_fs_rewrite_superblocks(struct tfs_fs *fs);

/* Write both superblock copies of every member past the first afresh,
 * from the first's record of the set, as mkfs wrote them, and flush
 * (they hold nothing else: journal.c's J12).  0 or -errno. */
int tfs_fs_rewrite_member_supers(struct tfs_fs *fs);

/*
 * Upgrade a file system of an earlier format (2: one device; 3: a set
 * without shared blocks) in place to the format this build writes (4),
 * whose files may share blocks (clones).  The layouts are the same:
 * only the superblocks change.  A set's other members' superblocks
 * first (flushed; no mount reads their version), then both copies of
 * the first member's, with a checkpoint each (as
 * tfs_fs_rewrite_superblocks()): a crash leaves the old format or the
 * new, and a second run after one in the old finishes it.  *from
 * gets the format found.  0 (also when it is already the current one),
 * -EROFS opened read-only, or -errno of a write, after which the file
 * system is still valid in one format or the other.  Call with no other
 * thread using fs.
 */
int tfs_fs_upgrade(struct tfs_fs *fs, uint32_t *from);
/* The format this build writes (format.h's TFS_VERSION). */
#define TFS_FS_FORMAT 4u

#endif
