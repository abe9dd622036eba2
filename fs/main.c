/*
 * main.c: the tensorfs daemon, a FUSE low-level adapter over lib/fs.h.
 *
 * Every handler is thin: it turns the FUSE request into one tfs_*() call
 * and the result into one reply; the sign of an error flips only here
 * (fuse_reply_err(req, -rc)).  All file system logic is in lib/.
 *
 * Start-up order matters: the device is opened and checked, and the
 * mount point validated, before anything is mounted, so every error is
 * printed on the terminal with a non-zero exit.  Then the FUSE session is
 * mounted, the process daemonises (unless -f) and only then are threads
 * started (fork keeps only the calling thread).  On SIGTERM, SIGINT or
 * an unmount (fusermount3 -u) the session loop ends and tfs_fs_close()
 * writes everything and a clean checkpoint before the process exits.
 */
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "fs.h"
#include "io.h"
#include "memcheck.h"
#include "statedir.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

static struct tfs_fs *g_fs;
static struct tfs_config g_cfg;
static double TIMEOUT = 1.0;	/* [mount] attr_timeout_ms, in seconds */
static int g_foreground;

static void logmsg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (g_foreground) {
		fputs("tensorfs: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(prio, fmt, ap);
	}
	va_end(ap);
}

static void log_fs(const char *msg)
{
	logmsg(LOG_ERR, "%s", msg);
}

/*
 * The data path's settings, and whether they fit this machine: the cache
 * and the pool must fit in available memory with MOUNT_SPARE to spare,
 * and a pinned arena in RLIMIT_MEMLOCK.  0, or 1 with a message.
 */
#define MOUNT_SPARE (64ull << 20)

static int data_path_opts(struct tfs_fs_opts *fo)
{
	struct tfs_mem_limits lim;
	char err[1024];

	fo->cache_bytes = tfs_config_cache_bytes(&g_cfg);
	fo->pool_bytes = tfs_config_pool_bytes(&g_cfg);
	fo->block_size = (size_t)g_cfg.aio_block_size;
	fo->queue_depth = (unsigned)g_cfg.aio_queue_depth;
	fo->io_threads = (unsigned)g_cfg.aio_intra_op_parallelism;
	fo->pin = (int)g_cfg.offload_param_pin_memory;
	fo->single_submit = (int)g_cfg.aio_single_submit;
	fo->no_overlap = !g_cfg.aio_overlap_events;
	fo->log = log_fs;
	if (!g_cfg.mount_memory_check)
		return 0;
	tfs_mem_limits(&lim);
	if (tfs_mem_check(&lim, fo->cache_bytes, fo->pool_bytes, fo->pin,
			  MOUNT_SPARE, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	return 0;
}

/* ===== replies ===== */

static void reply_entry(fuse_req_t req, int rc, const struct stat *st)
{
	struct fuse_entry_param e;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.attr = *st;
	e.attr_timeout = TIMEOUT;
	e.entry_timeout = TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void set_open_flags(struct fuse_file_info *fi)
{
	/* O_DIRECT callers get direct I/O; others the page cache, where
	 * shared writable mmap works */
	fi->direct_io = (fi->flags & O_DIRECT) ? 1 : 0;
	fi->keep_cache = 0;
}

/* ===== handlers ===== */

/* Fail a request that would change /.tensorfs or what is in it. */
#define DENY_STATEDIR(req, parent, name, creating)                           \
	do {                                                                 \
		int deny_ = tfs_statedir_deny((parent), (name), (creating));  \
		if (deny_) {                                                 \
			fuse_reply_err((req), deny_);                        \
			return;                                              \
		}                                                            \
	} while (0)

static void op_init(void *data, struct fuse_conn_info *conn)
{
	(void)data;
	conn->max_write = 1u << 20;
	conn->max_read = 0;
	/* the kernel offers what tune_bdi() set; ask for all of it */
	if (g_cfg.mount_read_ahead_kb)
		conn->max_readahead = (unsigned)g_cfg.mount_read_ahead_kb * 1024;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want |= conn->capable & (FUSE_CAP_ATOMIC_O_TRUNC |
				       FUSE_CAP_ASYNC_DIO |
				       FUSE_CAP_PARALLEL_DIROPS |
				       FUSE_CAP_ASYNC_READ);
	/* the kernel clears setuid bits on write; we do not */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static void op_destroy(void *data)
{
	(void)data;
	/* tfs_fs_close() after the loop does the final flush */
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct stat st;
	int rc = tfs_statedir_lookup(parent, name, &st);

	if (rc > 0) {
		reply_entry(req, 0, &st);
		return;
	}
	if (rc == 0)
		rc = tfs_lookup(g_fs, parent, name, &st);

	if (rc == -ENOENT) {
		/* a negative entry the kernel may cache */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = 0;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, rc, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;
	int rc = tfs_statedir_is(ino) ? tfs_statedir_getattr(ino, &st)
				       : tfs_getattr(g_fs, ino, &st);

	(void)fi;
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
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
	rc = tfs_setattr(g_fs, ino, attr, set, &st);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = tfs_statedir_is(ino) ? -EINVAL :
		    tfs_readlink(g_fs, ino, buf, sizeof(buf) - 1);

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
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mknod(g_fs, parent, name, mode, rdev, c->uid, c->gid, &st);

	reply_entry(req, rc, &st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mkdir(g_fs, parent, name, mode, c->uid, c->gid, &st);

	reply_entry(req, rc, &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	DENY_STATEDIR(req, parent, name, 0);
	fuse_reply_err(req, -tfs_unlink(g_fs, parent, name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	DENY_STATEDIR(req, parent, name, 0);
	fuse_reply_err(req, -tfs_rmdir(g_fs, parent, name));
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_symlink(g_fs, parent, name, link, c->uid, c->gid, &st);

	reply_entry(req, rc, &st);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	unsigned int f = 0;

	DENY_STATEDIR(req, parent, name, 0);
	DENY_STATEDIR(req, newparent, newname, 0);
	if (flags & RENAME_NOREPLACE)
		f |= TFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= TFS_RENAME_EXCHANGE;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -tfs_rename(g_fs, parent, name, newparent,
					newname, f));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct stat st;
	int rc;

	DENY_STATEDIR(req, ino, NULL, 0);
	DENY_STATEDIR(req, newparent, newname, 1);
	rc = tfs_link(g_fs, ino, newparent, newname, &st);

	reply_entry(req, rc, &st);
}

/* A /.tensorfs file opened: its content rendered now, kept in fi->fh. */
struct statefile {
	char *buf;
	size_t len;
};

static void open_statefile(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
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
	f->buf = tfs_statedir_render(g_fs, &g_cfg, ino, &f->len, &rc);
	if (!f->buf) {
		free(f);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->direct_io = 1;	/* st_size is 0: reads must reach us */
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		free(f->buf);
		free(f);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino,
		    struct fuse_file_info *fi)
{
	int rc;

	if (tfs_statedir_is(ino)) {
		open_statefile(req, ino, fi);
		return;
	}
	rc = tfs_open(g_fs, ino, fi->flags);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	set_open_flags(fi);
	if (fuse_reply_open(req, fi) == -ENOENT)
		tfs_release(g_fs, ino);	/* the caller was interrupted */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct stat st;
	int rc;

	DENY_STATEDIR(req, parent, name, 1);
	rc = tfs_mknod(g_fs, parent, name, S_IFREG | (mode & 07777), 0,
		       c->uid, c->gid, &st);
	if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
		/* created by someone else since the kernel looked: open it */
		rc = tfs_lookup(g_fs, parent, name, &st);
		if (!rc && S_ISDIR(st.st_mode))
			rc = -EISDIR;
		if (!rc)
			rc = tfs_open(g_fs, st.st_ino, fi->flags);
		if (!rc)
			rc = tfs_getattr(g_fs, st.st_ino, &st);
	} else if (!rc) {
		rc = tfs_open(g_fs, st.st_ino, fi->flags & ~O_TRUNC);
	}
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = st.st_ino;
	e.attr = st;
	e.attr_timeout = TIMEOUT;
	e.entry_timeout = TIMEOUT;
	set_open_flags(fi);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		tfs_release(g_fs, st.st_ino);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const void *data;
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
	n = tfs_read_ref(g_fs, ino, size, (uint64_t)off, &data);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, n ? data : NULL, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	(void)fi;
	DENY_STATEDIR(req, ino, NULL, 0);
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	n = tfs_write(g_fs, ino, buf, size, (uint64_t)off);
	if (n < 0) {
		if (n != -ENOSPC)
			logmsg(LOG_ERR, "write of inode %llu failed: %s",
			       (unsigned long long)ino, strerror((int)-n));
		fuse_reply_err(req, (int)-n);
	} else {
		fuse_reply_write(req, (size_t)n);
	}
}

static void op_flush(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	/* each close(): start the write-back, report an earlier failure */
	(void)fi;
	fuse_reply_err(req, tfs_statedir_is(ino) ? 0 : -tfs_flush(g_fs, ino));
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	if (tfs_statedir_is(ino)) {
		struct statefile *f = (struct statefile *)(uintptr_t)fi->fh;

		free(f->buf);
		free(f);
		fuse_reply_err(req, 0);
		return;
	}
	fuse_reply_err(req, -tfs_release(g_fs, ino));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	int rc = tfs_statedir_is(ino) ? 0 : tfs_fsync(g_fs, ino, datasync);

	(void)fi;
	if (rc)
		logmsg(LOG_ERR, "fsync of inode %llu failed: %s",
		       (unsigned long long)ino, strerror(-rc));
	fuse_reply_err(req, -rc);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	int rc = tfs_statedir_is(ino) ? 0 : tfs_opendir(g_fs, ino);

	if (!rc && tfs_statedir_is(ino)) {
		struct stat st;

		tfs_statedir_getattr(ino, &st);
		rc = S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_open(req, fi);
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
	struct dirbuf d = { req, NULL, size, 0 };
	int rc;

	(void)fi;
	d.buf = malloc(size ? size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (tfs_statedir_is(ino))
		rc = tfs_statedir_readdir(off < 0 ? 0 : (uint64_t)off,
					  fill_dir, &d);
	else
		rc = tfs_readdir(g_fs, ino, off < 0 ? 0 : (uint64_t)off,
				 fill_dir, &d);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	free(d.buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, tfs_statedir_is(ino) ? 0 :
					       -tfs_fsync(g_fs, ino, datasync));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	tfs_statfs(g_fs, &sv);
	fuse_reply_statfs(req, &sv);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	int f = 0;

	DENY_STATEDIR(req, ino, NULL, 0);
	if (flags & XATTR_CREATE)
		f |= TFS_XATTR_CREATE;
	if (flags & XATTR_REPLACE)
		f |= TFS_XATTR_REPLACE;
	fuse_reply_err(req, -tfs_setxattr(g_fs, ino, name, value, size, f));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = tfs_statedir_is(ino) ? -ENODATA :
				   tfs_getxattr(g_fs, ino, name, buf, size);
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
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = tfs_statedir_is(ino) ? 0 : tfs_listxattr(g_fs, ino, buf, size);
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
	DENY_STATEDIR(req, ino, NULL, 0);
	fuse_reply_err(req, -tfs_removexattr(g_fs, ino, name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	DENY_STATEDIR(req, ino, NULL, 0);
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -tfs_fallocate(g_fs, ino, mode, (uint64_t)offset,
					   (uint64_t)length));
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
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
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
};

/* ===== kernel tuning ===== */

/*
 * Raise the mount's readahead and dirty-page share (as root).  The bdi is
 * found through /proc/self/mountinfo: stat() of the mount point would
 * ask this daemon, which does not serve requests yet.
 */
static void tune_bdi(const char *mnt)
{
	char line[8192], dev[64] = "", path[128];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char d[64], m[4096];

		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %63s %*s %4095s", d, m) == 2 &&
		    !strcmp(m, mnt))
			snprintf(dev, sizeof(dev), "%s", d);
	}
	fclose(f);
	if (!*dev)
		return;
	for (int i = 0; i < 2; i++) {
		uint64_t v = i ? g_cfg.mount_bdi_max_ratio
			       : g_cfg.mount_read_ahead_kb;
		const char *knob = i ? "max_ratio" : "read_ahead_kb";

		if (!v)
			continue;
		snprintf(path, sizeof(path), "/sys/class/bdi/%s/%s", dev, knob);
		f = fopen(path, "w");
		if (f) {
			int ok = fprintf(f, "%llu\n", (unsigned long long)v) > 0;

			if (fclose(f) == 0 && ok)
				continue;
		}
		if (geteuid() == 0)
			logmsg(LOG_WARNING, "cannot set %s to %llu: %s", path,
			       (unsigned long long)v, strerror(errno));
	}
}

/* ===== command line ===== */

/*
 * Take the settings (key=value with a known key) out of a -o list into
 * g_cfg and leave the FUSE options in *opts (NULL if none are left).
 */
static int split_options(char **opts, char *err, size_t errlen)
{
	char *rest = malloc(strlen(*opts) + 1), *tok, *save = NULL;
	size_t pos = 0;
	int rc = 0;

	if (!rest)
		return -ENOMEM;
	for (tok = strtok_r(*opts, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (eq) {
			*eq = '\0';
			if (tfs_config_is_key(tok)) {
				rc = tfs_config_set(&g_cfg, tok, eq + 1, err,
						    errlen);
				continue;
			}
			*eq = '=';
		}
		pos += (size_t)sprintf(rest + pos, "%s%s", pos ? "," : "", tok);
	}
	free(*opts);
	if (rc || pos == 0) {
		free(rest);
		*opts = NULL;
		return rc;
	}
	*opts = rest;
	return 0;
}

static void usage(FILE *f)
{
	fputs(
"Usage: tensorfs [-c FILE.ini] [-o OPT[,OPT...]] [-f] [-d] DEVICE MOUNTPOINT\n"
"\n"
"Mount the tensorfs file system on DEVICE (an NVMe block device or an image\n"
"file made with mkfs.tensorfs) at MOUNTPOINT, e.g. /local_nvme.  Tensors are\n"
"offloaded by writing files there; point DeepSpeed's nvme_path at it.\n"
"\n"
"Options:\n"
"  -c FILE.ini  read settings from FILE.ini (see conf/tensorfs.ini and\n"
"               tensorfs.ini(5)); a bad key or value stops the mount\n"
"  -o OPT,...   mount options: a setting as key=value or section.key=value\n"
"               overrides the file (-o commit_interval_ms=1000); others go\n"
"               to FUSE: allow_other (the default when run as root), ro, and\n"
"               the rest of mount.fuse3(8)\n"
"  --print-config  print the effective configuration (defaults, -c, -o) as\n"
"               an INI file and exit\n"
"  -f           stay in the foreground; log to stderr instead of syslog\n"
"  -d           debug: print every FUSE request (implies -f)\n"
"  -h, --help   print this help and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Unmount with 'fusermount3 -u MOUNTPOINT' (or umount as root), or send the\n"
"daemon SIGTERM: both write all data and leave a clean file system.\n"
"\n"
"Exit status: 0 after a clean unmount, 1 on an error (the message says what\n"
"to do), 2 on a usage or configuration error.\n", f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "print-config", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *cfg = NULL;
	struct tfs_fs_opts fo = { 0 };
	char dev[PATH_MAX], mnt[PATH_MAX], err[512] = "", fsname[PATH_MAX + 128];
	const char *conf = NULL;
	int debug = 0, c, rc, ret = 1, print_config = 0;
	struct stat st;
	char *fuseopts = NULL;

	while ((c = getopt_long(argc, argv, "c:o:fdhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf = optarg;
			break;
		case 'o':
			if (fuseopts) {
				char *n = malloc(strlen(fuseopts) + strlen(optarg) + 2);

				if (!n)
					return 1;
				sprintf(n, "%s,%s", fuseopts, optarg);
				free(fuseopts);
				fuseopts = n;
			} else {
				fuseopts = strdup(optarg);
			}
			break;
		case 'f':
			g_foreground = 1;
			break;
		case 'd':
			debug = 1;
			g_foreground = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'P':
			print_config = 1;
			break;
		case 'V':
			printf("tensorfs %s (libfuse %d)\n", TFS_VERSION_STRING,
			       fuse_version());
			return 0;
		default:
			fputs("Try 'tensorfs --help' for more information.\n",
			      stderr);
			return 2;
		}
	}
	tfs_config_defaults(&g_cfg);
	if (conf && tfs_config_load(&g_cfg, conf, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 2;
	}
	if (fuseopts && split_options(&fuseopts, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: -o %s\n", err);
		return 2;
	}
	if (g_cfg.warnings[0])
		fprintf(stderr, "tensorfs: %s", g_cfg.warnings);
	if (tfs_config_validate(&g_cfg, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s%s%s\n", conf ? conf : "",
			conf ? ": " : "", err);
		return 2;
	}
	if (print_config) {
		tfs_config_print(&g_cfg, stdout);
		return 0;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "tensorfs: %s\n"
			"Usage: tensorfs [-c FILE.ini] [-o OPT,...] [-f] [-d] "
			"DEVICE MOUNTPOINT\n"
			"Try 'tensorfs --help' for more information.\n",
			argc - optind < 2 ? "missing DEVICE or MOUNTPOINT"
					  : "too many arguments");
		return 2;
	}
	fo.commit_interval_ms = (unsigned)g_cfg.mount_commit_interval_ms;
	TIMEOUT = (double)g_cfg.mount_attr_timeout_ms / 1000.0;
	if (!realpath(argv[optind], dev)) {
		fprintf(stderr, "tensorfs: device '%s': %s\n", argv[optind],
			strerror(errno));
		return 1;
	}
	if (stat(argv[optind + 1], &st) < 0) {
		fprintf(stderr, "tensorfs: mount point '%s' does not exist; "
			"create it with mkdir -p %s\n",
			argv[optind + 1], argv[optind + 1]);
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tensorfs: mount point '%s' is not a "
			"directory\n", argv[optind + 1]);
		return 1;
	}
	if (!realpath(argv[optind + 1], mnt)) {
		fprintf(stderr, "tensorfs: mount point '%s': %s\n",
			argv[optind + 1], strerror(errno));
		return 1;
	}

	if (data_path_opts(&fo))
		return 1;
	rc = tfs_fs_open(dev, &fo, &g_fs, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorfs: %s: %s\n", dev, err);
		return 1;
	}
	{
		struct stat root;

		if (tfs_getattr(g_fs, TFS_FS_ROOT, &root) == 0)
			tfs_statedir_init(root.st_uid, root.st_gid);
		else
			tfs_statedir_init(0, 0);
	}
	if (tfs_fs_replayed(g_fs))
		logmsg(LOG_NOTICE, "%s: recovered %llu journal transactions "
		       "after an unclean shutdown", dev,
		       (unsigned long long)tfs_fs_replayed(g_fs));

	snprintf(fsname, sizeof(fsname),
		 "fsname=tensorfs:%s,subtype=tensorfs,default_permissions%s",
		 dev, geteuid() == 0 ? ",allow_other" : "");
	if (fuse_opt_add_arg(&args, "tensorfs") ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, fsname) ||
	    (fuseopts && (fuse_opt_add_arg(&args, "-o") ||
			  fuse_opt_add_arg(&args, fuseopts))) ||
	    (debug && fuse_opt_add_arg(&args, "-d"))) {
		fprintf(stderr, "tensorfs: out of memory\n");
		goto out_fs;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se) {
		fprintf(stderr, "tensorfs: bad mount options '%s'; see "
			"mount.fuse3(8)\n", fuseopts ? fuseopts : "");
		ret = 2;
		goto out_fs;
	}
	if (fuse_set_signal_handlers(se)) {
		fprintf(stderr, "tensorfs: cannot set signal handlers\n");
		goto out_session;
	}
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "tensorfs: cannot mount on '%s' (is /dev/fuse "
			"there, and fusermount3 installed?)\n", mnt);
		goto out_signals;
	}
	tune_bdi(mnt);
	/* fork keeps only this thread: no ring may cross it */
	tfs_io_thread_exit();
	if (fuse_daemonize(g_foreground)) {
		logmsg(LOG_ERR, "cannot daemonise");
		goto out_unmount;
	}
	if (!g_foreground)
		openlog("tensorfs", LOG_PID, LOG_DAEMON);
	/* Reclaim must not wait on us while we write for it. */
	(void)prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	rc = tfs_fs_start(g_fs);
	if (rc) {
		logmsg(LOG_ERR, "cannot start: %s", strerror(-rc));
		goto out_unmount;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, (unsigned)g_cfg.mount_max_threads);
	fuse_loop_cfg_set_idle_threads(cfg,
				       (unsigned)(g_cfg.mount_max_threads + 1) / 2);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	ret = rc < 0 ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	rc = tfs_fs_close(g_fs);
	if (rc) {
		logmsg(LOG_ERR, "%s: final write failed: %s; run "
		       "tensorfs-fsck %s", dev, strerror(-rc), dev);
		ret = 1;
	}
	fuse_opt_free_args(&args);
	free(fuseopts);
	return ret;
}
