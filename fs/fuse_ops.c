/*
 * fuse_ops.c: part of the FUSE daemon, the adapter between the kernel's
 * FUSE requests and lib/ calls.  This file holds the request handlers
 * (op_*), their reply helpers and the fuse_lowlevel_ops table.
 *
 * Every handler is thin: it turns the FUSE request into one tfs_*() call
 * and the result into one reply; the sign of an error flips only here
 * (fuse_reply_err(req, -rc)).  All file system logic is in lib/; the
 * virtual /.tensorfs directory is in statedir.c.
 */
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "fs.h"
#include "inval.h"
#include "statedir.h"
#include "transport.h"
#include "uring.h"
#include "fuse_abi.h"

/* ===== open files ===== */

/*
 * An open regular file (one open() of it, shared by its dup()s): what it
 * has heard of failed write-backs, so that each open file hears of each
 * failure once, as on Linux (lib/include/fs.h, tfs_wb_sample()).  Kept
 * in fi->fh from open to release; the kernel hands fi->fh back with
 * every write, flush, fsync and release of that open file.
 */
struct openfile {
	uint64_t ino;
	uint32_t wb_seen;
	int rw;	    /* opened O_RDWR: counted in dm->rw */
	int direct; /* FOPEN_DIRECT_IO: its writes bypass the page cache */
};

/*
 * The inodes open read-write (O_RDWR), with how many open files each:
 * only such a file can be mapped shared and writable, and stores through
 * such a map sit in the kernel's page cache, unseen by the daemon, until
 * written back.  A copy the daemon makes (op_copy_file_range) would miss
 * them where the kernel does not write the source's range back before a
 * FUSE_COPY_FILE_RANGE: older kernels did that only with the writeback
 * cache, which tensorfs does not use (a 2024 fix, taken into stable
 * kernels, does it always; this machine's 6.18 does).  So a source open
 * read-write is left to the kernel's own copy through its page cache,
 * whatever the kernel.  A map keeps its file open until munmap(), so the
 * count covers maps that outlive close().  Few inodes are open read-write
 * at once: a list, searched whole, under dm->rw.mu.
 */
static int rw_find(const struct tfs_daemon *dm, uint64_t ino)
{
	for (size_t i = 0; i < dm->rw.n; i++)
		if (dm->rw.v[i].ino == ino)
			return (int)i;
	return -1;
}

static int rw_add(struct tfs_daemon *dm, uint64_t ino)
{
	int i, rc = 0;

	pthread_mutex_lock(&dm->rw.mu);
	i = rw_find(dm, ino);
	if (i >= 0) {
		dm->rw.v[i].n++;
	} else if (dm->rw.n == dm->rw.cap) {
		size_t cap = dm->rw.cap ? 2 * dm->rw.cap : 16;
		void *v = realloc(dm->rw.v, cap * sizeof(*dm->rw.v));

		if (v) {
			dm->rw.v = v;
			dm->rw.cap = cap;
		}
		rc = v ? 0 : -ENOMEM;
	}
	if (i < 0 && !rc) {
		dm->rw.v[dm->rw.n].ino = ino;
		dm->rw.v[dm->rw.n++].n = 1;
	}
	pthread_mutex_unlock(&dm->rw.mu);
	return rc;
}

static void rw_del(struct tfs_daemon *dm, uint64_t ino)
{
	int i;

	pthread_mutex_lock(&dm->rw.mu);
	i = rw_find(dm, ino);
	if (i >= 0 && --dm->rw.v[i].n == 0)
		dm->rw.v[i] = dm->rw.v[--dm->rw.n];
	pthread_mutex_unlock(&dm->rw.mu);
}

static int rw_open(struct tfs_daemon *dm, uint64_t ino)
{
	int i;

	pthread_mutex_lock(&dm->rw.mu);
	i = rw_find(dm, ino);
	pthread_mutex_unlock(&dm->rw.mu);
	return i >= 0;
}

static int openfile_new(struct tfs_daemon *dm, uint64_t ino,
			struct fuse_file_info *fi)
{
	struct openfile *of = malloc(sizeof(*of));

	if (!of)
		return -ENOMEM;
	of->ino = ino;
	of->direct = 0;
	of->wb_seen = tfs_wb_sample(dm->fs, ino);
	of->rw = (fi->flags & O_ACCMODE) == O_RDWR;
	if (of->rw && rw_add(dm, ino)) {
		free(of);
		return -ENOMEM;
	}
	fi->fh = (uint64_t)(uintptr_t)of;
	return 0;
}

static uint32_t *openfile_wb(struct fuse_file_info *fi)
{
	struct openfile *of = fi ? (struct openfile *)(uintptr_t)fi->fh : NULL;

	return of ? &of->wb_seen : NULL;
}

static int openfile_direct(struct fuse_file_info *fi)
{
	struct openfile *of = fi ? (struct openfile *)(uintptr_t)fi->fh : NULL;

	return of && of->direct;
}

static void openfile_free(struct tfs_daemon *dm, struct fuse_file_info *fi)
{
	struct openfile *of = (struct openfile *)(uintptr_t)fi->fh;

	if (of && of->rw)
		rw_del(dm, of->ino);
	free(of);
	fi->fh = 0;
}

/* ===== replies ===== */

/*
 * Every reply that gives the kernel an entry of the file system comes
 * here: lookup, mknod, mkdir, symlink, link, and create (fi not NULL,
 * the file opened).  Each takes one lookup reference (tfs_lookup_ref()),
 * which the kernel gives back with FORGET (op_forget()): an inode that
 * loses its last name lives while the kernel knows it.  The reference is
 * taken before the reply, so a FORGET cannot come first, and dropped
 * again if the kernel did not take the reply (an interrupted request).
 * rc != 0 replies the error; an inode freed between the lookup and here
 * replies ENOENT, as a lookup just after the unlink would have.
 */
static void reply_entry(fuse_req_t req, int rc, const struct stat *st,
			struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct fuse_entry_param e;

	if (!rc)
		rc = tfs_lookup_ref(dm->fs, st->st_ino);
	if (rc) {
		if (fi) {
			tfs_release(dm->fs, st->st_ino);
			openfile_free(dm, fi);
		}
		fuse_reply_err(req, -rc);
		return;
	}
	/*
	 * e.generation stays 0 for every inode: the library never gives an
	 * inode number out twice (it counts up, and the count is committed
	 * with the inodes), so (number, 0) names one inode for good, and a
	 * file handle (open_by_handle_at()) stays valid across remounts and
	 * turns ESTALE once its file is gone.  The one exception is a
	 * crash, which forgets numbers given to files it also forgets.
	 */
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.attr = *st;
	e.attr_timeout = dm->attr_timeout;
	e.entry_timeout = dm->attr_timeout;
	if (fi)
		rc = fuse_reply_create(req, &e, fi);
	else
		rc = fuse_reply_entry(req, &e);
	if (rc == -ENOENT) {
		/* the caller was interrupted: the kernel has nothing */
		tfs_forget(dm->fs, st->st_ino, 1);
		if (fi) {
			tfs_release(dm->fs, st->st_ino);
			openfile_free(dm, fi);
		}
	}
}

/*
 * How a file opened with O_DIRECT is served; measured in the commit that
 * wrote this, and summed up in tensorfs(8), MEMORY.
 *
 * FOPEN_DIRECT_IO (fi->direct_io) sends every read and write to us, and
 * FOPEN_PARALLEL_DIRECT_WRITES (kernel 6.2) lets the kernel run the
 * O_DIRECT writes to one file that do not extend it under a shared inode
 * lock; lib/ still writes to one file one write at a time (its io_lock),
 * so what runs in parallel is the requests' travel.  But
 * the kernel refuses MAP_SHARED on an FOPEN_DIRECT_IO file (ENODEV)
 * unless the connection negotiated FUSE_DIRECT_IO_ALLOW_MMAP (kernel
 * 6.6).  libfuse 3.14 can send neither; transport.c adds both to the
 * replies.  So:
 *
 *  - with FUSE_DIRECT_IO_ALLOW_MMAP negotiated, every O_DIRECT open is
 *    FOPEN_DIRECT_IO with parallel writes;
 *  - else a write-only O_DIRECT open (DeepSpeed's swap writes) is
 *    FOPEN_DIRECT_IO with parallel writes: mmap() needs a descriptor
 *    open for reading, so it never maps;
 *  - else (O_RDONLY or O_RDWR with O_DIRECT) the open is a page-cache open
 *    like any other: the kernel serves O_DIRECT itself, sending each read
 *    or write to us as it comes (fuse_direct_IO(), asynchronous for
 *    io_uring and libaio) after writing back, and before dropping, the
 *    cached pages of its range, as ext4 does, so that MAP_SHARED works and
 *    the map, O_DIRECT I/O and other processes see the same bytes.  Its
 *    writes to one file hold the inode lock exclusively while they are
 *    submitted, as FOPEN_DIRECT_IO without parallel writes does, and each
 *    also costs a getxattr("security.capability") round trip to us under
 *    that lock (file_remove_privs()), which FOPEN_DIRECT_IO writes skip:
 *    with four writers on one file, ~1 s more CPU per GB in the writers.
 *
 * The kernel's cached pages of a file outlive its close, as on any local
 * file system, so a file read again is read from them (FOPEN_KEEP_CACHE;
 * without it every open drops them all, under every other reader of the
 * file too).  They stay right because the kernel updates or drops them
 * for the changes it makes through them (buffered writes, truncation),
 * and the daemon drops them for the changes made behind them before it
 * answers the request that made the change (inval.c): O_DIRECT writes,
 * copy_file_range(), fallocate() that changes bytes, and a failed
 * write-back whose data the daemon no longer has.  So a reader sees the
 * new bytes from then on, also one that held the file open all along.
 * Such a change also marks the inode (tfs_mark_stale()), and the next
 * open of it drops all its pages (keep_cache 0).
 *
 * Access times: a read the kernel serves from its pages never reaches
 * us, and FUSE leaves atime to the daemon.  So an open for reading also
 * drops the pages when its next read must move the atime (relatime: the
 * first read after a change, or a day on; strictatime: every open; never
 * with noatime): the read comes to us and moves it.  With
 * relatime a file read again and again is read from the pages after its
 * first read since it last changed.
 */
static void set_open_flags(struct tfs_daemon *dm, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct openfile *of = (struct openfile *)(uintptr_t)fi->fh;
	int stale = tfs_take_stale(dm->fs, ino);

	fi->direct_io =
	    (fi->flags & O_DIRECT) &&
	    ((fi->flags & O_ACCMODE) == O_WRONLY || dm->direct_io_allow_mmap);
	if (fi->direct_io && dm->parallel_dio)
		tfs_req_open_flags(FOPEN_PARALLEL_DIRECT_WRITES);
	/* an FOPEN_DIRECT_IO open drops the pages; so
	 * does an open for reading whose next read must move the atime,
	 * which only a read that reaches us can do */
	fi->keep_cache = !fi->direct_io && !stale &&
			 ((fi->flags & O_ACCMODE) == O_WRONLY ||
			  !tfs_atime_due(dm->fs, ino));
	of->direct = fi->direct_io;
	/*
	 * A read-only open writes nothing, so its close() has nothing to
	 * start writing back and no error to report: the kernel skips the
	 * FLUSH round trip (FOPEN_NOFLUSH, Linux 5.16); as on Linux, a
	 * reader hears of a failed write-back at its fsync(), not its close().
	 */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
}

/*
 * Before a write, a truncation or a chown, on a connection that took
 * FUSE_HANDLE_KILLPRIV_V2 over from the kernel: drop what the kernel
 * would (tfs_kill_privs()), asking for the caller's groups only when they
 * decide (setgid without group execute), and make the kernel forget the
 * attributes it holds when the mode changed and the reply does not carry
 * them (inval).  how: TFS_KILL_CHOWN for a chown, else 0; the request's
 * KILL_SUIDGID flag adds TFS_KILL_SUIDGID.  0 or -errno.
 */
static int kill_privs(struct tfs_daemon *dm, fuse_req_t req, fuse_ino_t ino,
		      int how, int inval)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t one = c->gid, *g = NULL;
	int rc, n;

	if (!dm->killpriv_v2)
		return 0;
	if (!how && tfs_req_kill_suidgid())
		how = TFS_KILL_SUIDGID;
	rc = tfs_kill_privs(dm->fs, ino, how, &one, 1, 0);
	if (rc == TFS_KILL_NEED_GROUPS) {
		n = fuse_req_getgroups(req, 0, NULL);
		g = malloc(sizeof(*g) * (size_t)(n > 0 ? n + 1 : 1));
		if (!g)
			return -ENOMEM;
		g[0] = c->gid;
		n = n > 0 ? fuse_req_getgroups(req, n, g + 1) : 0;
		/* a caller whose groups cannot be read: its gid alone */
		rc = tfs_kill_privs(dm->fs, ino, how, g,
				    n > 0 ? (size_t)n + 1 : 1, 1);
		free(g);
	}
	if (rc == 1 && inval)
		tfs_inval_attr(dm->inval, ino);
	return rc < 0 ? rc : 0;
}

/* ===== handlers ===== */

/* Fail a request that would change /.tensorfs or what is in it. */
#define DENY_STATEDIR(req, parent, name, creating)                             \
	do {                                                                   \
		int deny_ = tfs_statedir_deny((parent), (name), (creating));   \
		if (deny_) {                                                   \
			fuse_reply_err((req), deny_);                          \
			return;                                                \
		}                                                              \
	} while (0)

static void op_init(void *data, struct fuse_conn_info *conn)
{
	struct tfs_daemon *dm = data;

	conn->max_write = 1u << 20;
	conn->max_read = 0;
	/* the kernel offers what tune_bdi() set; ask for all of it */
	if (dm->cfg.mount_read_ahead_kb)
		conn->max_readahead =
		    (unsigned)dm->cfg.mount_read_ahead_kb * 1024;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want |=
	    conn->capable & (FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_ASYNC_DIO |
			     FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_ASYNC_READ |
			     FUSE_CAP_EXPORT_SUPPORT);
	/* readdirplus for every batch of a listing, not only the first
	 * (READDIRPLUS_AUTO): "ls -l" reads all names before it stats any */
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	/* the kernel clears setuid bits on write; we do not */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* HANDLE_KILLPRIV_V2, DIRECT_IO_ALLOW_MMAP and io_uring, which
	 * libfuse 3.14 does not know, are added to the reply by
	 * transport.c */
}

static void op_destroy(void *data)
{
	(void)data;
	/* tfs_fs_close() after the loop does the final flush */
}

/*
 * "." and ".." of ino, which the kernel asks for with export support
 * (FUSE_CAP_EXPORT_SUPPORT): "." to find an inode it has forgotten by
 * its number (open_by_handle_at(), an NFS export), ".." a directory's
 * parent.  As tfs_statedir_lookup(): 1 with *st for a /.tensorfs inode,
 * 0 with *st for the file system's, or -errno (-ESTALE: no such inode,
 * what the kernel says of a handle of a deleted file).
 */
static int lookup_dots(struct tfs_daemon *dm, fuse_ino_t ino, const char *name,
		       struct stat *st)
{
	int rc;

	if (tfs_statedir_is(ino)) {
		if (name[1] == '.') /* "..": the root, for the directory */
			return tfs_statedir_is_dir(ino)
				   ? tfs_getattr(dm->fs, TFS_FS_ROOT, st)
				   : -ENOTDIR;
		rc = tfs_statedir_getattr(&dm->statedir, ino, st);
		return rc ? rc : 1;
	}
	/* "." of any inode, not only a directory's: a handle names files */
	rc = name[1] == '.' ? tfs_lookup(dm->fs, ino, name, st)
			    : tfs_getattr(dm->fs, ino, st);
	return rc == -ENOENT ? -ESTALE : rc;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int dots = !strcmp(name, ".") || !strcmp(name, "..");
	struct stat st;
	int rc;

	if (dots)
		rc = lookup_dots(dm, parent, name, &st);
	else
		rc = tfs_statedir_lookup(&dm->statedir, parent, name, &st);
	if (rc > 0) {
		/* attributes not cached: a /.tensorfs file's size changes */
		struct fuse_entry_param e = { .ino = st.st_ino, .attr = st };

		e.entry_timeout = dm->attr_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc == 0 && !dots)
		rc = tfs_lookup(dm->fs, parent, name, &st);

	if (rc == -ENOENT) {
		/* a negative entry the kernel may cache */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = 0;
		fuse_reply_entry(req, &e);
		return;
	}
	/* "." and ".." too, through the one reply of found entries: each
	 * is a lookup the kernel will FORGET */
	reply_entry(req, rc, &st, NULL);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	if (!tfs_statedir_is(ino))
		tfs_forget(dm->fs, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct tfs_forget_one v[64];
	size_t n = 0;

	/* one lock per batch of up to 64 (the kernel sends up to 16) */
	for (size_t i = 0; i < count; i++) {
		if (tfs_statedir_is(forgets[i].ino))
			continue;
		v[n].ino = forgets[i].ino;
		v[n].nlookup = forgets[i].nlookup;
		if (++n == sizeof(v) / sizeof(v[0])) {
			tfs_forget_many(dm->fs, v, n);
			n = 0;
		}
	}
	tfs_forget_many(dm->fs, v, n);
	fuse_reply_none(req);
}

static size_t statefile_len(const struct fuse_file_info *fi);

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct stat st;
	int rc;

	if (!tfs_statedir_is(ino)) {
		rc = tfs_getattr(dm->fs, ino, &st);
		if (rc)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_attr(req, &st, dm->attr_timeout);
		return;
	}
	/* a /.tensorfs file's size changes as it is rendered: never
	 * cached, and fstat of an open one is its snapshot's */
	rc = tfs_statedir_getattr(&dm->statedir, ino, &st);
	if (!rc && fi && S_ISREG(st.st_mode))
		st.st_size = (off_t)statefile_len(fi);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, 0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct stat st;
	int set = 0, rc;

	(void)fi;
	DENY_STATEDIR(req, ino, NULL, 0);
	if (to_set & FUSE_SET_ATTR_MODE)
		set |= TFS_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID)
		set |= TFS_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID)
		set |= TFS_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)
		set |= TFS_SET_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME)
		set |= TFS_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME)
		set |= TFS_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		set |= TFS_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		set |= TFS_SET_MTIME_NOW;
	if (to_set & FUSE_SET_ATTR_CTIME)
		set |= TFS_SET_CTIME;
	/* a truncation or a chown takes privileges (tfs_kill_privs()) */
	rc = set & (TFS_SET_UID | TFS_SET_GID)
		 ? kill_privs(dm, req, ino, TFS_KILL_CHOWN, 0)
	     : set & TFS_SET_SIZE ? kill_privs(dm, req, ino, 0, 0)
				  : 0;
	if (!rc)
		rc = tfs_setattr(dm->fs, ino, attr, set, &st);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, dm->attr_timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	char buf[PATH_MAX + 1];
	ssize_t n = tfs_statedir_is(ino)
			? -EINVAL
			: tfs_readlink(dm->fs, ino, buf, sizeof(buf) - 1);

	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mknod(dm->fs, parent, name, mode, rdev, c->uid, c->gid, &st);

	reply_entry(req, rc, &st, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mkdir(dm->fs, parent, name, mode, c->uid, c->gid, &st);

	reply_entry(req, rc, &st, NULL);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	DENY_STATEDIR(req, parent, name, 0);
	fuse_reply_err(req, -tfs_unlink(dm->fs, parent, name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	DENY_STATEDIR(req, parent, name, 0);
	fuse_reply_err(req, -tfs_rmdir(dm->fs, parent, name));
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_symlink(dm->fs, parent, name, link, c->uid, c->gid, &st);

	reply_entry(req, rc, &st, NULL);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	unsigned int f = 0;

	DENY_STATEDIR(req, parent, name, 0);
	DENY_STATEDIR(req, newparent, newname, 0);
	if (flags & RENAME_NOREPLACE)
		f |= TFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= TFS_RENAME_EXCHANGE;
	if (flags & RENAME_WHITEOUT)
		f |= TFS_RENAME_WHITEOUT;
	if (flags &
	    ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* the whiteout is the caller's, as a mknod's node would be */
	fuse_reply_err(req, -tfs_rename2(dm->fs, parent, name, newparent,
					 newname, f, c->uid, c->gid));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, ino, NULL, 0);
	DENY_STATEDIR(req, newparent, newname, 1);
	rc = tfs_link(dm->fs, ino, newparent, newname, &st);

	reply_entry(req, rc, &st, NULL);
}

/* A /.tensorfs file opened: its content rendered now, kept in fi->fh. */
struct statefile {
	char *buf;
	size_t len;
};

/* The length of an open /.tensorfs file's snapshot. */
static size_t statefile_len(const struct fuse_file_info *fi)
{
	return ((const struct statefile *)(uintptr_t)fi->fh)->len;
}

static void open_statefile(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct statefile *f;
	int rc;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	f->buf = tfs_statedir_render(&dm->statedir, ino, &f->len, &rc);
	if (!f->buf) {
		free(f);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->direct_io = 1; /* st_size may be stale: reads must reach us */
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		free(f->buf);
		free(f);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int rc;

	if (tfs_statedir_is(ino)) {
		open_statefile(req, ino, fi);
		return;
	}
	rc = fi->flags & O_TRUNC ? kill_privs(dm, req, ino, 0, 1) : 0;
	if (!rc)
		rc = tfs_open(dm->fs, ino, fi->flags);
	if (!rc) {
		rc = openfile_new(dm, ino, fi);
		if (rc)
			tfs_release(dm->fs, ino);
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	set_open_flags(dm, ino, fi);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* the caller was interrupted */
		tfs_release(dm->fs, ino);
		openfile_free(dm, fi);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc, opened = 0;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mknod(dm->fs, parent, name, S_IFREG | (mode & 07777), 0,
		       c->uid, c->gid, &st);
	if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
		/* created by someone else since the kernel looked: open it */
		rc = tfs_lookup(dm->fs, parent, name, &st);
		if (!rc && S_ISDIR(st.st_mode))
			rc = -EISDIR;
		if (!rc && (fi->flags & O_TRUNC))
			rc = kill_privs(dm, req, st.st_ino, 0, 1);
		if (!rc)
			rc = tfs_open(dm->fs, st.st_ino, fi->flags);
		opened = !rc;
		if (!rc)
			rc = tfs_getattr(dm->fs, st.st_ino, &st);
	} else if (!rc) {
		rc = tfs_open(dm->fs, st.st_ino, fi->flags & ~O_TRUNC);
		opened = !rc;
	}
	if (!rc)
		rc = openfile_new(dm, st.st_ino, fi);
	if (rc) {
		if (opened)
			tfs_release(dm->fs, st.st_ino);
		fuse_reply_err(req, -rc);
		return;
	}
	set_open_flags(dm, st.st_ino, fi);
	reply_entry(req, 0, &st, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct tfs_read_pin pin;
	size_t cap = 0;
	void *room;
	ssize_t n;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (tfs_statedir_is(ino)) {
		struct statefile *f = (struct statefile *)(uintptr_t)fi->fh;
		size_t o = (size_t)off < f->len ? (size_t)off : f->len;

		fuse_reply_buf(req, f->buf + o,
			       size < f->len - o ? size : f->len - o);
		return;
	}
	/* over io_uring the reply's data goes straight into the request's
	 * buffer, and what misses the cache whole is read there from the
	 * device, around the cache: one copy by the kernel into the
	 * reader's pages, none by the daemon */
	room = tfs_uring_reply_room(&cap);
	if (room && size <= cap) {
		n = tfs_read_around(dm->fs, ino, room, size, cap,
				    (uint64_t)off);
		tfs_file_note_read(dm->fs, ino, n);
		if (n < 0)
			fuse_reply_err(req, (int)-n);
		else
			fuse_reply_buf(req, room, (size_t)n);
		return;
	}
	/* over /dev/fuse the reply is written from the cache's memory,
	 * pinned meanwhile: the kernel's copy into the reader's pages is
	 * the only one */
	n = tfs_read_pin(dm->fs, ino, size, (uint64_t)off, &pin);
	tfs_file_note_read(dm->fs, ino, n); /* before a stat can see it */
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fuse_reply_iov(req, pin.iov, pin.niov);
	tfs_read_unpin(dm->fs, &pin);
}

/*
 * Answer rc (0 or -errno) to a flush or fsync, which report failed
 * write-backs.  The data of a failed write-back is gone, and the file's
 * bytes are what the device has; the kernel's pages may still hold the
 * lost ones.  lib/ has the invalidator drop those pages when the
 * write-back fails (fs_changed() in fuse_main.c); this reply waits until
 * that is done (the invalidator keeps order) and drops the whole file's
 * for good measure, so that no reader sees the lost bytes once the
 * writer hears of the failure.
 */
static void reply_wb_err(struct tfs_daemon *dm, fuse_req_t req, fuse_ino_t ino,
			 int rc)
{
	if (rc)
		tfs_inval_reply_err(dm->inval, req, ino, 0, 0, -rc);
	else
		fuse_reply_err(req, 0);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	ssize_t n;

	DENY_STATEDIR(req, ino, NULL, 0);
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!fi->writepage) {
		int rc = kill_privs(dm, req, ino, 0, 1);

		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
	n = tfs_write(dm->fs, ino, buf, size, (uint64_t)off, openfile_wb(fi));
	if (n > 0 && openfile_direct(fi))
		tfs_mark_stale(dm->fs, ino); /* after it: set_open_flags() */
	if (n == -ENOSPC || n == -EROFS) {
		fuse_reply_err(req, (int)-n);
	} else if (n < 0) {
		tfs_daemon_log(LOG_ERR, "write of inode %llu failed: %s",
			       (unsigned long long)ino, strerror((int)-n));
		/* a buffered writer holds its pages locked until this
		 * answer: the drop of the lost bytes must not wait for it */
		tfs_inval_range(dm->inval, ino, 0, 0);
		fuse_reply_err(req, (int)-n);
	} else if (n > 0 && (fi->flags & O_DIRECT) && !fi->writepage) {
		/* a direct write, which the kernel's pages did not see:
		 * they go before it is answered (inval.c) */
		tfs_inval_reply_write(dm->inval, req, ino, (uint64_t)off,
				      (uint64_t)n, (size_t)n);
	} else {
		fuse_reply_write(req, (size_t)n);
	}
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int rc = 0;

	/* each close(): start the write-back, report an earlier failure */
	if (!tfs_statedir_is(ino))
		rc = tfs_flush(dm->fs, ino, openfile_wb(fi));
	reply_wb_err(dm, req, ino, rc);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	if (tfs_statedir_is(ino)) {
		struct statefile *f = (struct statefile *)(uintptr_t)fi->fh;

		free(f->buf);
		free(f);
		fuse_reply_err(req, 0);
		return;
	}
	openfile_free(dm, fi);
	fuse_reply_err(req, -tfs_release(dm->fs, ino));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int rc = tfs_statedir_is(ino)
		     ? 0
		     : tfs_fsync(dm->fs, ino, datasync, openfile_wb(fi));

	if (rc)
		tfs_daemon_log(LOG_ERR, "fsync of inode %llu failed: %s",
			       (unsigned long long)ino, strerror(-rc));
	reply_wb_err(dm, req, ino, rc);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	/* a reference, as an open file has: a directory removed while open
	 * lives until releasedir */
	int rc = tfs_statedir_is(ino)
		     ? 0
		     : tfs_open(dm->fs, ino, O_RDONLY | O_DIRECTORY);

	if (!rc && tfs_statedir_is(ino)) {
		struct stat st;

		tfs_statedir_getattr(&dm->statedir, ino, &st);
		rc = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_open(req, fi) == -ENOENT && !tfs_statedir_is(ino))
		tfs_release(dm->fs, ino); /* the caller was interrupted */
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, pos;
};

static int fill_dir(void *arg, const char *name, uint64_t ino, mode_t type,
		    uint64_t next)
{
	struct dirbuf *d = arg;
	struct stat st;
	size_t n;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = type;
	n = fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos, name,
			      &st, (off_t)next);
	if (n > d->size - d->pos)
		return 1;
	d->pos += n;
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct dirbuf d = { req, NULL, size, 0 };
	int rc;

	(void)fi;
	d.buf = malloc(size ? size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_statedir_is(ino))
		rc = tfs_statedir_readdir(off < 0 ? 0 : (uint64_t)off, fill_dir,
					  &d);
	else
		rc = tfs_readdir(dm->fs, ino, off < 0 ? 0 : (uint64_t)off,
				 fill_dir, &d);
	if (!rc && !tfs_statedir_is(ino))
		tfs_dir_note_read(dm->fs, ino); /* before a stat can see it */
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	free(d.buf);
}

/*
 * readdirplus: the entries with their attributes, so that "ls -l", find
 * and du of a directory of N files cost N / (about 25) requests, not N
 * lookups.  Every entry given except "." and ".." is a lookup the kernel
 * will FORGET, so each takes a lookup reference before the reply, and
 * gives it back if the reply does not reach the kernel.  The names are
 * collected first (tfs_readdir()'s callback runs under the metadata
 * lock) and looked up after: one removed in between is left out, one
 * replaced is given as it is now.
 */
struct plus_name {
	uint64_t ino, next; /* the entry's inode; cookie to resume after it */
	char *name;
};

struct plusbuf {
	fuse_req_t req;
	size_t size, need; /* reply size allowed, needed so far */
	struct plus_name *v;
	size_t n, cap;
};

static int collect_dir(void *arg, const char *name, uint64_t ino, mode_t type,
		       uint64_t next)
{
	struct plusbuf *d = arg;
	size_t len = fuse_add_direntry_plus(d->req, NULL, 0, name, NULL, 0);

	(void)type;
	if (d->need + len > d->size)
		return 1;
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 32;
		struct plus_name *nv = realloc(d->v, nc * sizeof(*nv));

		if (!nv)
			return 1; /* a shorter reply: the kernel asks again */
		d->v = nv;
		d->cap = nc;
	}
	d->v[d->n].name = strdup(name);
	if (!d->v[d->n].name)
		return 1;
	d->v[d->n].ino = ino;
	d->v[d->n].next = next;
	d->n++;
	d->need += len;
	return 0;
}

/* The entry n of dir for readdirplus: 1 with *e filled and a lookup
 * reference taken, 0 to give it with no attributes ("." and "..": the
 * kernel counts no lookup of them), -errno to leave it out. */
static int plus_entry(struct tfs_daemon *dm, fuse_ino_t dir,
		      const struct plus_name *n, struct fuse_entry_param *e)
{
	const char *name = n->name;
	int rc;

	memset(e, 0, sizeof(*e));
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		e->attr.st_ino = n->ino; /* d_ino; ino 0: no entry */
		e->attr.st_mode = S_IFDIR;
		return 0;
	}
	rc = tfs_statedir_lookup(&dm->statedir, dir, name, &e->attr);
	if (rc > 0) {
		/* as op_lookup(): attributes not cached, no reference */
		e->ino = e->attr.st_ino;
		e->entry_timeout = dm->attr_timeout;
		return 1;
	}
	if (rc == 0)
		rc = tfs_lookup(dm->fs, dir, name, &e->attr);
	if (!rc)
		rc = tfs_lookup_ref(dm->fs, e->attr.st_ino);
	if (rc)
		return rc;
	e->ino = e->attr.st_ino;
	e->attr_timeout = dm->attr_timeout;
	e->entry_timeout = dm->attr_timeout;
	return 1;
}

static void forget_refs(struct tfs_daemon *dm, const uint64_t *ino, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!tfs_statedir_is(ino[i]))
			tfs_forget(dm->fs, ino[i], 1);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct plusbuf d = { req, size, 0, NULL, 0, 0 };
	uint64_t cookie = off < 0 ? 0 : (uint64_t)off, *refs = NULL;
	size_t pos = 0, nref = 0;
	char *buf = NULL;
	int rc;

	(void)fi;
	if (tfs_statedir_is(ino))
		rc = tfs_statedir_readdir(cookie, collect_dir, &d);
	else
		rc = tfs_readdir(dm->fs, ino, cookie, collect_dir, &d);
	if (!rc && !tfs_statedir_is(ino))
		tfs_dir_note_read(dm->fs, ino); /* as op_readdir() */
	if (!rc && d.n) {
		buf = malloc(size);
		refs = calloc(d.n, sizeof(*refs));
		if (!buf || !refs)
			rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < d.n; i++) {
		struct fuse_entry_param e;
		int got = plus_entry(dm, ino, &d.v[i], &e);
		size_t len;

		if (got < 0)
			continue;
		len =
		    fuse_add_direntry_plus(req, buf + pos, size - pos,
					   d.v[i].name, &e, (off_t)d.v[i].next);
		if (len > size - pos) { /* not reached: sized above */
			if (got)
				forget_refs(dm, &e.ino, 1);
			break;
		}
		pos += len;
		if (got)
			refs[nref++] = e.ino;
	}
	for (size_t i = 0; i < d.n; i++)
		free(d.v[i].name);
	free(d.v);
	if (rc) {
		forget_refs(dm, refs, nref);
		fuse_reply_err(req, -rc);
	} else if (fuse_reply_buf(req, buf, pos) == -ENOENT) {
		/* interrupted: the kernel took none of them */
		forget_refs(dm, refs, nref);
	}
	free(refs);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	(void)fi;
	fuse_reply_err(req,
		       tfs_statedir_is(ino) ? 0 : -tfs_release(dm->fs, ino));
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	(void)fi;
	fuse_reply_err(req, tfs_statedir_is(ino)
				? 0
				: -tfs_fsync(dm->fs, ino, datasync, NULL));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct statvfs sv;

	(void)ino;
	tfs_statfs(dm->fs, &sv);
	fuse_reply_statfs(req, &sv);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int f = 0;

	DENY_STATEDIR(req, ino, NULL, 0);
	if (flags & XATTR_CREATE)
		f |= TFS_XATTR_CREATE;
	if (flags & XATTR_REPLACE)
		f |= TFS_XATTR_REPLACE;
	fuse_reply_err(req, -tfs_setxattr(dm->fs, ino, name, value, size, f));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = tfs_statedir_is(ino) ? -ENODATA
				 : tfs_getxattr(dm->fs, ino, name, buf, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = tfs_statedir_is(ino) ? 0 : tfs_listxattr(dm->fs, ino, buf, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);

	DENY_STATEDIR(req, ino, NULL, 0);
	fuse_reply_err(req, -tfs_removexattr(dm->fs, ino, name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int rc;

	(void)fi;
	DENY_STATEDIR(req, ino, NULL, 0);
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = tfs_fallocate(dm->fs, ino, mode, (uint64_t)offset,
			   (uint64_t)length);
	if (rc || !(mode & ~FALLOC_FL_KEEP_SIZE)) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* bytes changed (a hole, zeros): the kernel drops its pages of
	 * the range after the reply; we do before it too (inval.c) */
	tfs_mark_stale(dm->fs, ino);
	tfs_inval_reply_err(dm->inval, req, ino, (uint64_t)offset,
			    (uint64_t)length, 0);
}

/*
 * copy_file_range(2) between two files of the mount (cp does it): the
 * daemon copies from its cache, and the data never crosses /dev/fuse.
 * The kernel has written back the destination range's pages mapped dirty
 * first and drops its cached pages after.  A source open read-write
 * (its maps may hold stores the daemon has not seen: rw_find())
 * and a file of /.tensorfs are answered EOPNOTSUPP, which makes the
 * kernel copy that one through its page cache itself; never ENOSYS,
 * which would turn copy_file_range off for the whole mount.
 */
static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	ssize_t n;

	(void)fi_in;
	if (tfs_statedir_is(ino_in) || tfs_statedir_is(ino_out) ||
	    rw_open(dm, ino_in)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off_in < 0 || off_out < 0 || flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	n = tfs_copy_range(dm->fs, ino_in, (uint64_t)off_in, ino_out,
			   (uint64_t)off_out, len, openfile_wb(fi_out));
	tfs_file_note_read(dm->fs, ino_in, n);
	if (n > 0) {
		tfs_mark_stale(dm->fs, ino_out); /* as op_fallocate() */
		tfs_inval_reply_write(dm->inval, req, ino_out,
				      (uint64_t)off_out, (uint64_t)n,
				      (size_t)n);
	} else if (n < 0) {
		fuse_reply_err(req, (int)-n);
	} else {
		fuse_reply_write(req, 0);
	}
}

/*
 * lseek(2)'s SEEK_DATA and SEEK_HOLE (the kernel does the other whences
 * itself): tfs_seek().  A file some process holds open read-write may
 * have stores in a shared map that the daemon has not seen, over what it
 * knows as a hole, and the kernel does not write them back first: for
 * it, and for the files of /.tensorfs, the whole file is data, as on a
 * file system without holes.  Never ENOSYS, which would turn FUSE_LSEEK
 * off for the whole mount.
 */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int state = tfs_statedir_is(ino);
	uint64_t pos = 0;
	struct stat st;
	int rc;

	(void)fi;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off < 0) {
		/* no data or hole there: as ext4, xfs, and the kernel's
		 * own answer for FUSE file systems without FUSE_LSEEK */
		fuse_reply_err(req, ENXIO);
		return;
	}
	if (state || rw_open(dm, ino)) {
		rc = state ? tfs_statedir_getattr(&dm->statedir, ino, &st)
			   : tfs_getattr(dm->fs, ino, &st);
		if (!rc && off >= st.st_size)
			rc = -ENXIO;
		if (!rc)
			pos = whence == SEEK_DATA ? (uint64_t)off
						  : (uint64_t)st.st_size;
	} else {
		rc = tfs_seek(dm->fs, ino, (uint64_t)off, whence == SEEK_HOLE,
			      &pos);
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

/* TFS_IOC_SET_ATIME: the policy an int in in_buf names.  Replies. */
static void state_set_atime(fuse_req_t req, const void *in_buf, size_t in_bufsz)
{
	static const char *const name[] = {
		[TFS_ATIME_RELATIME] = "relatime",
		[TFS_ATIME_NOATIME] = "noatime",
		[TFS_ATIME_STRICT] = "strictatime",
	};
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int atime;

	if (in_bufsz < sizeof(atime)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&atime, in_buf, sizeof(atime));
	if (atime != TFS_ATIME_RELATIME && atime != TFS_ATIME_NOATIME &&
	    atime != TFS_ATIME_STRICT) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	tfs_fs_set_atime(dm->fs, atime);
	tfs_daemon_log(LOG_NOTICE, "remounted %s", name[atime]);
	fuse_reply_ioctl(req, 0, NULL, 0);
}

/* TFS_IOC_SET_DIRATIME: 1 diratime, 0 nodiratime, an int.  Replies. */
static void state_set_diratime(fuse_req_t req, const void *in_buf,
			       size_t in_bufsz)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	int on;

	if (in_bufsz < sizeof(on)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&on, in_buf, sizeof(on));
	if (on != 0 && on != 1) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	tfs_fs_set_diratime(dm->fs, on);
	tfs_daemon_log(LOG_NOTICE, "remounted %s",
		       on ? "diratime" : "nodiratime");
	fuse_reply_ioctl(req, 0, NULL, 0);
}

/*
 * TFS_IOC_SNAPSHOT (tensorfs-snap): tfs_snapshot() of the tree at
 * a.src as a.name in a.dst_parent; what was made goes back in the same
 * struct.  The new tree's parent's attributes change (links, times):
 * the kernel's cached ones are dropped.  Replies.
 */
static void state_snapshot(fuse_req_t req, const void *in_buf, size_t in_bufsz)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	struct tfs_snap_stats s;
	struct tfs_ioc_snap a;
	struct stat st;
	int rc;

	if (in_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&a, in_buf, sizeof(a));
	if (!memchr(a.name, '\0', sizeof(a.name)) || tfs_statedir_is(a.src) ||
	    tfs_statedir_is(a.dst_parent)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = tfs_snapshot(dm->fs, a.src, a.dst_parent, a.name, &st, &s);
	if (s.dirs + s.files + s.others)
		tfs_inval_attr(dm->inval, a.dst_parent);
	if (rc) {
		tfs_daemon_log(
		    LOG_WARNING, "snapshot of inode %llu as '%s': %s",
		    (unsigned long long)a.src, a.name, strerror(-rc));
		fuse_reply_err(req, -rc);
		return;
	}
	a.dirs = s.dirs;
	a.files = s.files;
	a.others = s.others;
	a.bytes = s.shared_bytes;
	fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

/*
 * tensorfs's own ioctls, on /.tensorfs (statedir.h): remount,ro,
 * remount,rw and the atime options of a remount.  Only root or the
 * daemon's user may send them (an open of the directory needs only read
 * permission).  Replies itself.
 */
static void state_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
			const void *in_buf, size_t in_bufsz)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	int rc, ro = cmd == TFS_IOC_SET_RO;

	if (!tfs_statedir_is_dir(ino) ||
	    (cmd != TFS_IOC_SET_RO && cmd != TFS_IOC_SET_RW &&
	     cmd != TFS_IOC_SET_ATIME && cmd != TFS_IOC_SET_DIRATIME &&
	     cmd != TFS_IOC_SNAPSHOT)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (c->uid != 0 && c->uid != geteuid()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (cmd == TFS_IOC_SET_ATIME) {
		state_set_atime(req, in_buf, in_bufsz);
		return;
	}
	if (cmd == TFS_IOC_SET_DIRATIME) {
		state_set_diratime(req, in_buf, in_bufsz);
		return;
	}
	if (cmd == TFS_IOC_SNAPSHOT) {
		state_snapshot(req, in_buf, in_bufsz);
		return;
	}
	rc = tfs_fs_set_readonly(dm->fs, ro);
	if (rc)
		tfs_daemon_log(LOG_ERR, "remount %s failed: %s",
			       ro ? "ro" : "rw", strerror(-rc));
	else
		tfs_daemon_log(LOG_NOTICE, "remounted %s",
			       ro ? "read-only: everything is written back and "
				    "the file system is clean"
				  : "read-write");
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

/*
 * FITRIM, from fstrim(8): the kernel passes it on as an ioctl on the
 * directory fstrim opened (FUSE_IOCTL_DIR), with struct fstrim_range in
 * and out: the free space in [start, start + len), in free pieces of at
 * least minlen bytes, is trimmed (tfs_fs_trim(), which refuses ranges
 * as ext4 does); range.len comes back as the bytes discarded.  As ext4
 * asks for CAP_SYS_ADMIN, only root or the user who mounted may ask.
 */
static void op_fitrim(fuse_req_t req, const void *in_buf, size_t in_bufsz,
		      size_t out_bufsz)
{
	struct tfs_daemon *dm = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fstrim_range r;
	uint64_t bytes = 0;
	int rc;

	if (in_bufsz < sizeof(r) || out_bufsz < sizeof(r)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (ctx->uid != 0 && ctx->uid != getuid()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	memcpy(&r, in_buf, sizeof(r));
	rc = tfs_fs_trim(dm->fs, r.start, r.len, r.minlen, &bytes);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	tfs_daemon_log(LOG_INFO, "trimmed %llu bytes",
		       (unsigned long long)bytes);
	r.len = bytes;
	fuse_reply_ioctl(req, 0, &r, sizeof(r));
}

/* The ioctl command's type changed with the API (fuse_lowlevel.h). */
#if FUSE_USE_VERSION < 35
typedef int ioctl_cmd;
#else
typedef unsigned int ioctl_cmd;
#endif

/* ioctls: tensorfs's own on /.tensorfs, and FITRIM; 32-bit callers on a
 * 64-bit daemon get ENOTTY for FITRIM. */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, ioctl_cmd cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)arg;
	(void)fi;
	if (tfs_statedir_is(ino)) {
		state_ioctl(req, ino, (unsigned int)cmd, in_buf, in_bufsz);
		return;
	}
	if (!(flags & FUSE_IOCTL_COMPAT) && (unsigned int)cmd == FITRIM) {
		op_fitrim(req, in_buf, in_bufsz, out_bufsz);
		return;
	}
	fuse_reply_err(req, ENOTTY);
}

const struct fuse_lowlevel_ops tfs_daemon_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
	.ioctl = op_ioctl,
};
