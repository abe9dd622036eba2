/*
 * namespace.c: names, directories and attributes: lookup, create, link,
 * unlink, rename, readdir, getattr, setattr, statfs.
 *
 * Every operation here is in-memory work under fs->lock: it checks the
 * POSIX rules, changes the tree (meta.c), queues the records that replay
 * the change (commit.c) and returns; nothing here waits on the device,
 * except a setattr of the size, which truncates (file.c) before taking
 * fs->lock.  A change that would not fit a checkpoint fails with ENOSPC
 * before anything is changed, so an operation either happens whole or
 * not at all.
 *
 * Inode numbers are never reused, so the kernel's stale numbers find
 * nothing (ENOENT).  A directory's link count is 2 plus its
 * subdirectories; a removed directory or a file's last name dropped
 * leaves an inode with no links, freed once nobody has it open and the
 * kernel has forgotten it (tfs_inode_maybe_free(), file.c).  A directory
 * removed while a lookup or create was under way, or while open, has
 * nlink 0: nothing is created in it.
 *
 * A rename within one directory renames the entry in place
 * (tfs_dir_rename()): it keeps its readdir cookie, so a scan that renames
 * the entries it reads ends.  RENAME_WHITEOUT makes its whiteout (a 0:0
 * character device) at the old name under the same lock and in the same
 * transaction, after checking that both fit.
 */
#include "fs_internal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#define MAX_LINKS 65000u

/* A name for an entry: -EEXIST for "." and "..", which always exist
 * (the kernel never sends them; the library may be called with them). */
static int check_name(const char *name, size_t *len)
{
	*len = strlen(name);
	if (*len == 0)
		return -ENOENT;
	if (*len > TFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (strchr(name, '/'))
		return -EINVAL;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EEXIST;
	return 0;
}

static void fill_stat(const struct tfs_inode *ip, struct stat *st)
{
	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	st->st_ino = ip->a.ino;
	st->st_mode = ip->a.mode;
	st->st_nlink = ip->a.nlink;
	st->st_uid = ip->a.uid;
	st->st_gid = ip->a.gid;
	st->st_rdev = ip->a.rdev;
	st->st_size = (off_t)ip->a.size;
	st->st_blksize = 1 << 20;
	st->st_blocks = (blkcnt_t)(tfs_extmap_blocks(&ip->map) * (BS / 512));
	if (S_ISDIR(ip->a.mode))
		st->st_blocks = BS / 512;
	st->st_atim.tv_sec = ip->a.atime.sec;
	st->st_atim.tv_nsec = ip->a.atime.nsec;
	st->st_mtim.tv_sec = ip->a.mtime.sec;
	st->st_mtim.tv_nsec = ip->a.mtime.nsec;
	st->st_ctim.tv_sec = ip->a.ctime.sec;
	st->st_ctim.tv_nsec = ip->a.ctime.nsec;
}

static struct tfs_inode *get_dir(struct tfs_fs *fs, uint64_t ino, int *rc)
{
	struct tfs_inode *ip = tfs_meta_get(fs->m, ino);

	if (!ip)
		*rc = -ENOENT;
	else if (!S_ISDIR(ip->a.mode))
		*rc = -ENOTDIR;
	else
		return ip;
	return NULL;
}

/* ===== names ===== */

int tfs_lookup(struct tfs_fs *fs, uint64_t parent, const char *name,
	       struct stat *st)
{
	struct tfs_inode *dp, *ip;
	struct tfs_dirent *e;
	size_t len;
	int rc = check_name(name, &len), dots = rc == -EEXIST;

	if (rc && !dots)
		return rc;
	rc = 0;
	pthread_mutex_lock(&fs->lock);
	dp = get_dir(fs, parent, &rc);
	if (!dp)
		goto out;
	/* "." and "..": what a file handle's directory is found by */
	if (dots && len == 1) {
		ip = dp;
	} else if (dots) {
		ip = tfs_meta_get(fs->m, dp->a.ino == TFS_ROOT_INO
					     ? TFS_ROOT_INO
					     : dp->a.parent);
	} else {
		e = tfs_dir_lookup(dp, name, len);
		ip = e ? tfs_meta_get(fs->m, e->ino) : NULL;
	}
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	fill_stat(ip, st);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_getattr(struct tfs_fs *fs, uint64_t ino, struct stat *st)
{
	struct tfs_inode *ip;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		fill_stat(ip, st);
	else
		rc = -ENOENT;
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Create an inode named name in directory parent (fs_internal.h). */
int tfs_ns_make(struct tfs_fs *fs, uint64_t parent, const char *name,
		mode_t mode, dev_t rdev, uid_t uid, gid_t gid,
		const char *target, struct stat *st)
{
	struct tfs_inode *dp, *ip;
	struct tfs_attr a = { 0 };
	size_t len, tlen = target ? strlen(target) : 0;
	int rc = check_name(name, &len);

	if (!rc)
		rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	dp = get_dir(fs, parent, &rc);
	if (!dp)
		return rc;
	if (dp->a.nlink == 0)
		return -ENOENT; /* removed while we looked */
	if (tfs_dir_lookup(dp, name, len))
		return -EEXIST;
	if (S_ISDIR(mode) && dp->a.nlink >= MAX_LINKS)
		return -EMLINK;
	if (target && (tlen == 0 || tlen > TFS_SYMLINK_MAX))
		return tlen ? -ENAMETOOLONG : -ENOENT;
	rc = tfs_txn_room(fs, TFS_REC_SIZE_INODE + tfs_rec_size_link(len) +
				  (target ? tfs_rec_size_symlink(tlen) : 0));
	if (rc)
		return rc;
	a.ino = tfs_meta_next_ino(fs->m);
	a.mode = (uint32_t)mode;
	a.uid = uid;
	a.gid = gid;
	if (dp->a.mode & S_ISGID) {
		/* BSD group semantics in a setgid directory */
		a.gid = dp->a.gid;
		if (S_ISDIR(mode))
			a.mode |= S_ISGID;
	}
	a.nlink = S_ISDIR(mode) ? 2 : 1;
	a.rdev = rdev;
	a.parent = S_ISDIR(mode) ? parent : 0;
	a.atime = a.mtime = a.ctime = tfs_fs_now();
	ip = tfs_meta_add(fs->m, &a);
	if (!ip)
		return -ENOMEM;
	if (target && tfs_meta_set_symlink(fs->m, ip, target, tlen)) {
		tfs_meta_remove(fs->m, ip);
		return -ENOMEM;
	}
	ip->a.size = tlen;
	rc = tfs_dir_add(fs->m, dp, name, len, a.ino);
	if (rc) {
		tfs_meta_remove(fs->m, ip);
		return rc;
	}
	tfs_txn_rec(fs, tfs_rec_put_inode(&fs->txn, &ip->a));
	if (target)
		tfs_txn_rec(fs,
			    tfs_rec_put_symlink(&fs->txn, a.ino, target, tlen));
	tfs_txn_rec(fs, tfs_rec_put_link(&fs->txn, parent, a.ino, name, len));
	if (S_ISDIR(mode))
		dp->a.nlink++;
	tfs_txn_touch(fs, dp, 1);
	fill_stat(ip, st);
	return 0;
}

int tfs_mknod(struct tfs_fs *fs, uint64_t parent, const char *name, mode_t mode,
	      dev_t rdev, uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if (!S_ISREG(mode))
		; /* fifos, sockets, devices: metadata */
	else
		rdev = 0;
	pthread_mutex_lock(&fs->lock);
	rc = tfs_ns_make(fs, parent, name, mode, rdev, uid, gid, NULL, st);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_mkdir(struct tfs_fs *fs, uint64_t parent, const char *name, mode_t mode,
	      uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = tfs_ns_make(fs, parent, name, S_IFDIR | (mode & 07777), 0, uid,
			 gid, NULL, st);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_symlink(struct tfs_fs *fs, uint64_t parent, const char *name,
		const char *target, uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = tfs_ns_make(fs, parent, name, S_IFLNK | 0777, 0, uid, gid, target,
			 st);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t tfs_readlink(struct tfs_fs *fs, uint64_t ino, char *buf, size_t len)
{
	struct tfs_inode *ip;
	ssize_t rc;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
	} else if (!ip->symlink) {
		rc = -EINVAL;
	} else {
		size_t n = strlen(ip->symlink);

		if (n > len) {
			rc = -ERANGE;
		} else {
			memcpy(buf, ip->symlink, n);
			rc = (ssize_t)n;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_link(struct tfs_fs *fs, uint64_t ino, uint64_t newparent,
	     const char *newname, struct stat *st)
{
	struct tfs_inode *ip, *dp;
	size_t len;
	int rc = check_name(newname, &len);

	if (!rc)
		rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	dp = get_dir(fs, newparent, &rc);
	if (!dp)
		goto out;
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	if (S_ISDIR(ip->a.mode)) {
		rc = -EPERM;
		goto out;
	}
	if (ip->a.nlink == 0 || dp->a.nlink == 0) {
		rc = -ENOENT;
		goto out;
	}
	if (ip->a.nlink >= MAX_LINKS) {
		rc = -EMLINK;
		goto out;
	}
	if (tfs_dir_lookup(dp, newname, len)) {
		rc = -EEXIST;
		goto out;
	}
	rc = tfs_txn_room(fs, tfs_rec_size_link(len));
	if (rc)
		goto out;
	rc = tfs_dir_add(fs->m, dp, newname, len, ino);
	if (rc)
		goto out;
	tfs_txn_rec(fs,
		    tfs_rec_put_link(&fs->txn, newparent, ino, newname, len));
	ip->a.nlink++;
	tfs_txn_touch(fs, ip, 0);
	tfs_txn_touch(fs, dp, 1);
	fill_stat(ip, st);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Remove entry name (inode ip) from dp and drop the link it held. */
static void drop_link(struct tfs_fs *fs, struct tfs_inode *dp,
		      struct tfs_inode *ip);

static void drop_entry(struct tfs_fs *fs, struct tfs_inode *dp,
		       const char *name, size_t len, struct tfs_inode *ip)
{
	tfs_dir_remove(fs->m, dp, name, len);
	tfs_txn_rec(fs, tfs_rec_put_unlink(&fs->txn, dp->a.ino, name, len));
	drop_link(fs, dp, ip);
}

/* ip lost its name in dp (entry and record already done): the counts. */
static void drop_link(struct tfs_fs *fs, struct tfs_inode *dp,
		      struct tfs_inode *ip)
{
	if (S_ISDIR(ip->a.mode)) {
		ip->a.nlink = 0;
		dp->a.nlink--;
	} else {
		ip->a.nlink--;
	}
	tfs_txn_touch(fs, ip, 0);
	tfs_txn_touch(fs, dp, 1);
	tfs_inode_maybe_free(fs, ip);
}

static int remove_name(struct tfs_fs *fs, uint64_t parent, const char *name,
		       int dir)
{
	struct tfs_inode *dp, *ip;
	struct tfs_dirent *e;
	size_t len;
	int rc = check_name(name, &len);

	if (!rc)
		rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	dp = get_dir(fs, parent, &rc);
	if (!dp)
		goto out;
	e = tfs_dir_lookup(dp, name, len);
	ip = e ? tfs_meta_get(fs->m, e->ino) : NULL;
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	if (dir && !S_ISDIR(ip->a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!dir && S_ISDIR(ip->a.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (dir && tfs_dir_count(ip)) {
		rc = -ENOTEMPTY;
		goto out;
	}
	drop_entry(fs, dp, name, len, ip);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_unlink(struct tfs_fs *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, 0);
}

int tfs_rmdir(struct tfs_fs *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, 1);
}

/* Is dir 'anc' the directory 'ip' or one of its ancestors? */
static int is_ancestor(struct tfs_fs *fs, struct tfs_inode *anc,
		       struct tfs_inode *ip)
{
	for (int depth = 0; ip && depth < 1 << 20; depth++) {
		if (ip == anc)
			return 1;
		if (ip->a.ino == TFS_ROOT_INO)
			return 0;
		ip = tfs_meta_get(fs->m, ip->a.parent);
	}
	return 0;
}

/* A directory moved from sp to dp: its ".." changes. */
static void reparent(struct tfs_fs *fs, struct tfs_inode *ip,
		     struct tfs_inode *sp, struct tfs_inode *dp)
{
	if (!S_ISDIR(ip->a.mode) || sp == dp)
		return;
	sp->a.nlink--;
	dp->a.nlink++;
	ip->a.parent = dp->a.ino;
	tfs_txn_mark_dirty(fs, ip);
}

/* One side of a rename: a directory, a name in it, what the name names
 * (e and ip NULL: nothing). */
struct side {
	struct tfs_inode *dp;
	const char *name;
	size_t len;
	struct tfs_dirent *e;
	struct tfs_inode *ip;
};

/* Look both sides up: the source must exist, the target may not. */
static int rename_lookup(struct tfs_fs *fs, uint64_t parent, uint64_t newparent,
			 struct side *s, struct side *d)
{
	int rc = 0;

	s->dp = get_dir(fs, parent, &rc);
	d->dp = s->dp ? get_dir(fs, newparent, &rc) : NULL;
	if (!d->dp)
		return rc;
	if (d->dp->a.nlink == 0)
		return -ENOENT; /* removed while open */
	s->e = tfs_dir_lookup(s->dp, s->name, s->len);
	s->ip = s->e ? tfs_meta_get(fs->m, s->e->ino) : NULL;
	if (!s->ip)
		return -ENOENT;
	d->e = tfs_dir_lookup(d->dp, d->name, d->len);
	d->ip = d->e ? tfs_meta_get(fs->m, d->e->ino) : NULL;
	return 0;
}

/* RENAME_EXCHANGE: the two entries swap inodes; the names stay. */
static int rename_exchange(struct tfs_fs *fs, struct side *s, struct side *d)
{
	uint64_t parent = s->dp->a.ino, newparent = d->dp->a.ino;
	int rc;

	if (S_ISDIR(d->ip->a.mode) && is_ancestor(fs, d->ip, s->dp))
		return -EINVAL;
	if (s->len != d->len) {
		rc = tfs_txn_room(fs, d->len > s->len ? d->len - s->len
						      : s->len - d->len);
		if (rc)
			return rc;
	}
	s->e->ino = d->ip->a.ino;
	d->e->ino = s->ip->a.ino;
	tfs_txn_rec(fs, tfs_rec_put_unlink(&fs->txn, parent, s->name, s->len));
	tfs_txn_rec(fs,
		    tfs_rec_put_unlink(&fs->txn, newparent, d->name, d->len));
	tfs_txn_rec(fs, tfs_rec_put_link(&fs->txn, parent, d->ip->a.ino,
					 s->name, s->len));
	tfs_txn_rec(fs, tfs_rec_put_link(&fs->txn, newparent, s->ip->a.ino,
					 d->name, d->len));
	reparent(fs, s->ip, s->dp, d->dp);
	reparent(fs, d->ip, d->dp, s->dp);
	tfs_txn_touch(fs, s->ip, 0);
	tfs_txn_touch(fs, d->ip, 0);
	tfs_txn_touch(fs, s->dp, 1);
	tfs_txn_touch(fs, d->dp, 1);
	return 0;
}

/*
 * A plain rename: the entry moves to the new name, replacing what that
 * named.  Replacing, as ext4 does, the target's entry is pointed at the
 * moved inode and the source's entry goes: nothing is allocated, so
 * nothing can fail once the target is dropped (dropping it and then
 * adding the new entry could fail with ENOMEM when the directory's
 * tables must grow, and lose the target of a rename that failed).  The
 * moved entry then has the target's readdir cookie.  Otherwise, within
 * one directory the entry keeps its cookie (tfs_dir_rename), so a scan
 * that runs meanwhile neither sees it twice nor never ends; across
 * directories it is added to the new one before it leaves the old.
 */
static int rename_move(struct tfs_fs *fs, struct side *s, struct side *d)
{
	uint64_t parent = s->dp->a.ino, newparent = d->dp->a.ino;
	uint64_t ino = s->ip->a.ino;
	int rc;

	if (d->ip) {
		if (S_ISDIR(s->ip->a.mode) && !S_ISDIR(d->ip->a.mode))
			return -ENOTDIR;
		if (!S_ISDIR(s->ip->a.mode) && S_ISDIR(d->ip->a.mode))
			return -EISDIR;
		if (S_ISDIR(d->ip->a.mode) && tfs_dir_count(d->ip))
			return -ENOTEMPTY;
		d->e->ino = ino;
		tfs_txn_rec(fs, tfs_rec_put_unlink(&fs->txn, newparent, d->name,
						   d->len));
		drop_link(fs, d->dp, d->ip);
		tfs_dir_remove(fs->m, s->dp, s->name, s->len);
	} else {
		rc = tfs_txn_room(fs, tfs_rec_size_link(d->len));
		if (rc)
			return rc;
		if (S_ISDIR(s->ip->a.mode) && s->dp != d->dp &&
		    d->dp->a.nlink >= MAX_LINKS)
			return -EMLINK;
		if (s->dp == d->dp) {
			rc = tfs_dir_rename(fs->m, s->dp, s->name, s->len,
					    d->name, d->len);
			if (rc)
				return rc;
		} else {
			rc = tfs_dir_add(fs->m, d->dp, d->name, d->len, ino);
			if (rc)
				return rc;
			tfs_dir_remove(fs->m, s->dp, s->name, s->len);
		}
	}
	tfs_txn_rec(fs, tfs_rec_put_unlink(&fs->txn, parent, s->name, s->len));
	tfs_txn_rec(
	    fs, tfs_rec_put_link(&fs->txn, newparent, ino, d->name, d->len));
	reparent(fs, s->ip, s->dp, d->dp);
	tfs_txn_touch(fs, s->ip, 0);
	tfs_txn_touch(fs, s->dp, 1);
	tfs_txn_touch(fs, d->dp, 1);
	return 0;
}

int tfs_rename(struct tfs_fs *fs, uint64_t parent, const char *name,
	       uint64_t newparent, const char *newname, unsigned int flags)
{
	return tfs_rename2(fs, parent, name, newparent, newname, flags, 0, 0);
}

int tfs_rename2(struct tfs_fs *fs, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned int flags,
		uid_t uid, gid_t gid)
{
	struct side s = { .name = name }, d = { .name = newname };
	int rc;

	if (flags & ~(TFS_RENAME_NOREPLACE | TFS_RENAME_EXCHANGE |
		      TFS_RENAME_WHITEOUT) ||
	    (flags & TFS_RENAME_EXCHANGE &&
	     flags & (TFS_RENAME_NOREPLACE | TFS_RENAME_WHITEOUT)))
		return -EINVAL;
	rc = check_name(name, &s.len);
	if (!rc)
		rc = check_name(newname, &d.len);
	if (!rc)
		rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = rename_lookup(fs, parent, newparent, &s, &d);
	if (rc)
		goto out;
	if (flags & TFS_RENAME_EXCHANGE && !d.ip) {
		rc = -ENOENT;
		goto out;
	}
	if (flags & TFS_RENAME_NOREPLACE && d.ip) {
		rc = -EEXIST;
		goto out;
	}
	if (s.ip == d.ip)
		goto out; /* same file: nothing to do (POSIX) */
	if (S_ISDIR(s.ip->a.mode) && is_ancestor(fs, s.ip, d.dp)) {
		rc = -EINVAL;
		goto out;
	}
	/* the whiteout must fit, or the rename would happen without it */
	if (flags & TFS_RENAME_WHITEOUT) {
		rc = tfs_txn_room(fs, TFS_REC_SIZE_INODE +
					  tfs_rec_size_link(s.len) +
					  tfs_rec_size_link(d.len));
		if (rc)
			goto out;
	}
	if (flags & TFS_RENAME_EXCHANGE)
		rc = rename_exchange(fs, &s, &d);
	else
		rc = rename_move(fs, &s, &d);
	if (!rc && flags & TFS_RENAME_WHITEOUT)
		rc = tfs_ns_make(fs, parent, name, S_IFCHR | 0, makedev(0, 0),
				 uid, gid, NULL, NULL);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_opendir(struct tfs_fs *fs, uint64_t ino)
{
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	get_dir(fs, ino, &rc);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_readdir(struct tfs_fs *fs, uint64_t ino, uint64_t cookie,
		tfs_fill_fn fill, void *arg)
{
	struct tfs_inode *dp, *ip;
	struct tfs_dirent *e;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	dp = get_dir(fs, ino, &rc);
	if (!dp)
		goto out;
	if (cookie < 1 && fill(arg, ".", dp->a.ino, S_IFDIR, 1))
		goto out;
	if (cookie < 2 && fill(arg, "..", dp->a.parent, S_IFDIR, 2))
		goto out;
	for (e = tfs_dir_next(dp, cookie < 2 ? 2 : cookie); e;
	     e = tfs_dir_next(dp, e->cookie)) {
		ip = tfs_meta_get(fs->m, e->ino);
		if (fill(arg, e->name, e->ino, ip ? ip->a.mode & S_IFMT : 0,
			 e->cookie))
			break;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_statfs(struct tfs_fs *fs, struct statvfs *sv)
{
	uint64_t avail, per = TFS_REC_SIZE_INODE + tfs_rec_size_link(32);

	pthread_mutex_lock(&fs->lock);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = BS;
	sv->f_frsize = BS;
	sv->f_blocks = fs->data_blocks;
	/* blocks freed but not yet committed are as good as free: an
	 * allocation that needs them commits first.  Checkpoints live in
	 * the data area (journal.c's J10): the blocks they hold are used,
	 * those the next one needs are free but not available, and the
	 * available blocks are what files and inodes (a 32-byte name each)
	 * may still take, so both run out together. */
	sv->f_bfree = tfs_alloc_free_blocks(fs->alloc) + fs->pend_blocks;
	avail = tfs_txn_avail(fs);
	sv->f_bavail = avail;
	sv->f_ffree = avail * BS / per;
	sv->f_favail = sv->f_ffree;
	sv->f_files = tfs_meta_inodes(fs->m) + sv->f_ffree;
	sv->f_namemax = TFS_NAME_MAX;
	memcpy(&sv->f_fsid, fs->j.sb.uuid, sizeof(sv->f_fsid));
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int tfs_setattr(struct tfs_fs *fs, uint64_t ino, const struct stat *in, int set,
		struct stat *out)
{
	struct tfs_inode *ip;
	int rc = tfs_fs_may_change(fs); /* J7 */

	if (rc)
		return rc;
	ip = tfs_inode_hold(fs, ino, &rc);
	if (!ip)
		return rc;
	if (set & TFS_SET_SIZE) {
		if (S_ISDIR(ip->a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(ip->a.mode)) {
			rc = -EINVAL;
			goto out;
		}
		if (in->st_size < 0) {
			rc = -EINVAL;
			goto out;
		}
		pthread_rwlock_wrlock(tfs_inode_io_lock(ip));
		rc = tfs_file_truncate(fs, ip, (uint64_t)in->st_size);
		pthread_rwlock_unlock(tfs_inode_io_lock(ip));
		if (rc)
			goto out;
	}
	pthread_mutex_lock(&fs->lock);
	if (set & TFS_SET_MODE)
		ip->a.mode = (ip->a.mode & S_IFMT) | (in->st_mode & 07777);
	if (set & TFS_SET_UID)
		ip->a.uid = in->st_uid;
	if (set & TFS_SET_GID)
		ip->a.gid = in->st_gid;
	if (set & (TFS_SET_ATIME | TFS_SET_ATIME_NOW)) {
		if (set & TFS_SET_ATIME_NOW) {
			ip->a.atime = tfs_fs_now();
		} else {
			ip->a.atime.sec = in->st_atim.tv_sec;
			ip->a.atime.nsec = (uint32_t)in->st_atim.tv_nsec;
		}
	}
	if (set & (TFS_SET_MTIME | TFS_SET_MTIME_NOW)) {
		if (set & TFS_SET_MTIME_NOW) {
			ip->a.mtime = tfs_fs_now();
		} else {
			ip->a.mtime.sec = in->st_mtim.tv_sec;
			ip->a.mtime.nsec = (uint32_t)in->st_mtim.tv_nsec;
		}
	}
	ip->a.ctime = tfs_fs_now();
	if (set & TFS_SET_CTIME) {
		ip->a.ctime.sec = in->st_ctim.tv_sec;
		ip->a.ctime.nsec = (uint32_t)in->st_ctim.tv_nsec;
	}
	tfs_txn_mark_dirty(fs, ip);
	fill_stat(ip, out);
	pthread_mutex_unlock(&fs->lock);
out:
	tfs_inode_unhold(fs, ip);
	return rc;
}

/*
 * What the kernel does to a file on a write, a truncation or a chown when
 * the daemon negotiated FUSE_HANDLE_KILLPRIV_V2 and so took the job over
 * (fs.h, tfs_kill_privs()).  As Linux's should_remove_suid() and
 * setattr_should_drop_sgid(): setgid without group execute marks
 * mandatory locking, and stays unless a caller without CAP_FSETID
 * outside the file's group writes or truncates.
 */
int tfs_kill_privs(struct tfs_fs *fs, uint64_t ino, int how,
		   const gid_t *groups, size_t ngroups, int all_groups)
{
	static const char cap[] = "security.capability";
	struct tfs_inode *ip;
	uint32_t mode;
	int rc = 0, has_cap;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	if (!S_ISREG(ip->a.mode))
		goto out;
	mode = ip->a.mode;
	if (how & (TFS_KILL_SUIDGID | TFS_KILL_CHOWN)) {
		mode &= ~(uint32_t)S_ISUID;
		if (mode & S_IXGRP)
			mode &= ~(uint32_t)S_ISGID;
	}
	if ((how & TFS_KILL_SUIDGID) && (mode & S_ISGID)) {
		int in = 0;

		for (size_t i = 0; i < ngroups && !in; i++)
			in = groups[i] == ip->a.gid;
		if (!in && !all_groups) {
			rc = TFS_KILL_NEED_GROUPS;
			goto out;
		}
		if (!in)
			mode &= ~(uint32_t)S_ISGID;
	}
	has_cap = ip->nxattrs && tfs_xattr_find(ip, cap);
	if (mode == ip->a.mode && !has_cap)
		goto out;
	rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		goto out;
	if (has_cap && !tfs_xattr_del(fs->m, ip, cap, sizeof(cap) - 1))
		tfs_txn_rec(fs, tfs_rec_put_xattr_del(&fs->txn, ino, cap,
						      sizeof(cap) - 1));
	ip->a.mode = mode;
	tfs_txn_touch(fs, ip, 0);
	rc = 1;
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
