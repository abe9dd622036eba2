/*
 * snap.c: a snapshot of a tree, consistent as of one moment
 * (tfs_snapshot()).
 *
 * The tree under src is made again under dst_parent: every directory,
 * symlink and special file anew, with its mode, owner, times and
 * xattrs, and every regular file as a clone (file.c's tfs_file_share():
 * its blocks shared, journal.c's J12).  Nothing is copied, so a
 * snapshot of any size costs metadata only.
 *
 * One moment for all of it.  The regular files of the tree are held
 * and their io_locks taken shared, in inode order (as every taker of
 * two io_locks does), so no writer changes any of them while the
 * snapshot is made; each one's dirty data is written back; then, under
 * fs->lock, the tree is walked once more and made anew in one go, so
 * the namespace too is that of one moment.  Files made in the tree
 * between the first walk and the lock (not held, so possibly with data
 * not written back) send it round again, up to a few times.  Writers
 * wait for the time the metadata takes, which grows with the files'
 * number, not their size.
 * The new tree's records go into the running transaction, which is
 * committed before tfs_snapshot() returns.
 *
 * Hard links inside the tree become files of their own (each a clone),
 * as cp -r makes them.
 */
#include "fs_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SNAP_TRIES 4

/* One inode of the tree: its new parent is the new inode of the entry
 * at index 'up' (-1: dst_parent). */
struct node {
	uint64_t ino;
	long up;
	char *name;
};

struct walk {
	struct node *v;
	size_t n, cap;
	uint64_t *files; /* regular files, sorted, unique */
	size_t nfiles, capfiles;
};

static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].name);
	free(w->v);
	free(w->files);
	memset(w, 0, sizeof(*w));
}

static int add_node(struct walk *w, uint64_t ino, long up, const char *name)
{
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 64;
		struct node *n = realloc(w->v, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->v = n;
		w->cap = nc;
	}
	w->v[w->n].name = strdup(name);
	if (!w->v[w->n].name)
		return -ENOMEM;
	w->v[w->n].ino = ino;
	w->v[w->n].up = up;
	w->n++;
	return 0;
}

static int add_file(struct walk *w, uint64_t ino)
{
	if (w->nfiles == w->capfiles) {
		size_t nc = w->capfiles ? w->capfiles * 2 : 64;
		uint64_t *n = realloc(w->files, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->files = n;
		w->capfiles = nc;
	}
	w->files[w->nfiles++] = ino;
	return 0;
}

static int by_ino(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The tree at src, breadth first (a directory before what it holds),
 * and its regular files.  Caller holds fs->lock.
 */
static int walk_tree(struct tfs_fs *fs, uint64_t src, const char *name,
		     struct walk *w)
{
	struct tfs_inode *ip = tfs_meta_get(fs->m, src);
	int rc;

	if (!ip)
		return -ENOENT;
	rc = add_node(w, src, -1, name);
	for (size_t i = 0; i < w->n && !rc; i++) {
		struct tfs_inode *dp = tfs_meta_get(fs->m, w->v[i].ino);
		struct tfs_dirent *e;
		uint64_t c = 0;

		if (S_ISREG(dp->a.mode))
			rc = add_file(w, dp->a.ino);
		if (!S_ISDIR(dp->a.mode))
			continue;
		while (!rc && (e = tfs_dir_next(dp, c))) {
			c = e->cookie;
			rc = add_node(w, e->ino, (long)i, e->name);
		}
	}
	if (!rc && w->nfiles) {
		size_t k = 1;

		qsort(w->files, w->nfiles, sizeof(*w->files), by_ino);
		for (size_t i = 1; i < w->nfiles; i++) /* hard links */
			if (w->files[i] != w->files[k - 1])
				w->files[k++] = w->files[i];
		w->nfiles = k;
	}
	return rc;
}

/* Whether dir lies inside the tree at top (or is it).  fs->lock. */
static int inside(struct tfs_fs *fs, uint64_t dir, uint64_t top)
{
	for (int depth = 0; depth < 4096; depth++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, dir);

		if (dir == top)
			return 1;
		if (!ip || dir == TFS_ROOT_INO)
			return 0;
		dir = ip->a.parent;
	}
	return 1; /* deeper than any tree: refuse rather than loop */
}

/* Copy the attributes and xattrs of from to to (a new inode), journaled
 * with the next commit.  Caller holds fs->lock. */
static int copy_attrs(struct tfs_fs *fs, struct tfs_inode *from,
		      struct tfs_inode *to)
{
	to->a.mode = from->a.mode;
	to->a.uid = from->a.uid;
	to->a.gid = from->a.gid;
	to->a.atime = from->a.atime;
	to->a.mtime = from->a.mtime;
	to->a.rdev = from->a.rdev;
	if (S_ISREG(from->a.mode))
		to->a.size = from->a.size;
	for (uint32_t k = 0; k < from->nxattrs; k++) {
		struct tfs_xattr *x = &from->xattrs[k];
		int rc = tfs_txn_room(fs, tfs_rec_size_xattr(x->nlen, x->vlen));

		if (!rc)
			rc = tfs_xattr_set(fs->m, to, x->name, x->nlen,
					   x->value, x->vlen);
		if (rc)
			return rc;
		tfs_txn_rec(fs, tfs_rec_put_xattr(&fs->txn, to->a.ino, x->name,
						  x->nlen, x->value, x->vlen));
	}
	tfs_txn_mark_dirty(fs, to);
	return 0;
}

/* Make the tree w describes under dst_parent.  Caller holds fs->lock
 * and the io_locks of w's files. */
static int make_tree(struct tfs_fs *fs, const struct walk *w,
		     uint64_t dst_parent, struct stat *top,
		     struct tfs_snap_stats *out)
{
	uint64_t *made = calloc(w->n, sizeof(*made));
	int rc = made ? 0 : -ENOMEM;

	for (size_t i = 0; i < w->n && !rc; i++) {
		const struct node *nd = &w->v[i];
		struct tfs_inode *from = tfs_meta_get(fs->m, nd->ino), *to;
		uint64_t parent = nd->up < 0 ? dst_parent : made[nd->up];
		mode_t mode = from->a.mode;
		struct stat st;

		rc =
		    tfs_ns_make(fs, parent, nd->name,
				S_ISREG(mode) ? S_IFREG | (mode & 07777) : mode,
				(dev_t)from->a.rdev, from->a.uid, from->a.gid,
				S_ISLNK(mode) ? from->symlink : NULL, &st);
		if (rc)
			break;
		made[i] = (uint64_t)st.st_ino;
		to = tfs_meta_get(fs->m, made[i]);
		if (S_ISREG(mode) && from->a.size) {
			uint64_t blocks = (from->a.size + BS - 1) / BS;

			rc = tfs_file_share(fs, from, 0, to, 0, blocks);
			if (!rc)
				out->shared_bytes += from->a.size;
		}
		if (!rc)
			rc = copy_attrs(fs, from, to);
		if (i == 0 && !rc)
			*top = st;
		if (S_ISDIR(mode))
			out->dirs++;
		else if (S_ISREG(mode))
			out->files++;
		else
			out->others++;
	}
	free(made);
	return rc;
}

static void unlock_files(struct tfs_fs *fs, struct tfs_inode **held, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		pthread_rwlock_unlock(tfs_inode_io_lock(held[i]));
		tfs_inode_unhold(fs, held[i]);
	}
}

/* Whether the files of a and b are the same set. */
static int same_files(const struct walk *a, const struct walk *b)
{
	return a->nfiles == b->nfiles &&
	       !memcmp(a->files, b->files, a->nfiles * sizeof(*a->files));
}

int tfs_snapshot(struct tfs_fs *fs, uint64_t src, uint64_t dst_parent,
		 const char *name, struct stat *st, struct tfs_snap_stats *out)
{
	struct walk w = { 0 }, again = { 0 };
	struct tfs_inode **held = NULL;
	size_t nheld = 0;
	int rc, tries = 0;

	memset(out, 0, sizeof(*out));
	rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	if (fs->j.sb.version != TFS_VERSION)
		return -EOPNOTSUPP; /* no shared blocks before format 4 */
retry:
	pthread_mutex_lock(&fs->lock);
	rc = walk_tree(fs, src, name, &w);
	if (!rc && inside(fs, dst_parent, src))
		rc = -EINVAL; /* into itself */
	pthread_mutex_unlock(&fs->lock);
	if (!rc) {
		held = calloc(w.nfiles ? w.nfiles : 1, sizeof(*held));
		if (!held)
			rc = -ENOMEM;
	}
	/* every file's writers out, lowest inode first; its data down */
	for (size_t i = 0; i < w.nfiles && !rc; i++) {
		struct tfs_inode *ip = tfs_inode_hold(fs, w.files[i], &rc);

		if (!ip) {
			rc = rc == -ENOENT ? -EAGAIN : rc; /* gone: again */
			break;
		}
		held[nheld++] = ip;
		pthread_rwlock_rdlock(tfs_inode_io_lock(ip));
		tfs_cache_sync(fs->cache, ip->a.ino);
	}
	if (!rc) {
		pthread_mutex_lock(&fs->lock);
		rc = walk_tree(fs, src, name, &again);
		if (!rc && !same_files(&w, &again))
			rc = -EAGAIN; /* files came or went meanwhile */
		if (!rc)
			rc = make_tree(fs, &again, dst_parent, st, out);
		pthread_mutex_unlock(&fs->lock);
	}
	unlock_files(fs, held, nheld);
	free(held);
	held = NULL;
	nheld = 0;
	walk_free(&w);
	walk_free(&again);
	if (rc == -EAGAIN && ++tries < SNAP_TRIES) {
		memset(out, 0, sizeof(*out));
		goto retry;
	}
	if (rc == -EAGAIN)
		rc = -EBUSY;
	/* made, or made in part: on the device either way */
	if (out->dirs + out->files + out->others) {
		int crc = tfs_txn_commit(fs);

		if (!rc)
			rc = crc;
	}
	return rc;
}
