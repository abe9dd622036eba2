/*
 * inode.c: what the file system keeps of an inode besides its data: how
 * long it lives, its access time, and its stale mark.
 *
 * Lifetime.  An inode lives while it has a link, an open handle
 * (tfs_open(), tfs_inode_hold()) or a lookup reference of the kernel
 * (ip->nlookup: tfs_lookup_ref() for each entry the kernel was given,
 * tfs_forget() when it drops them); it is freed when all three are zero
 * (tfs_inode_maybe_free()): its blocks go to the pending list and its
 * cached chunks are forgotten.  So a file or directory that lost its
 * last name keeps working through the kernel's inode (fstat of an open
 * descriptor, an O_PATH one, a directory's cwd) until the kernel forgets
 * it.  nlookup is 30 bits; a count that would pass that sticks at the
 * maximum and the inode then lives until unmount: never freed early.
 * At close nobody holds lookups any more: tfs_inode_forget_all() frees
 * what only they kept.  After a crash, inodes with no links (open or
 * looked up but unlinked at the time) are freed at mount (fs.c).
 *
 * Access time (tfs_file_note_read(), tfs_dir_note_read()): a read moves
 * it as the mount's policy says (relatime, strictatime, noatime; never
 * read-only or in the error state), as the kernel's atime_needs_update()
 * does; the change rides with the next commit, never a write of its own.
 *
 * Stale mark (tfs_mark_stale(), tfs_take_stale()): a caller that keeps
 * file data in a cache of its own (the daemon: the kernel's page cache)
 * learns at the next open that the data changed where that cache did not
 * see it.
 */
#include "fs_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* ===== inode lifetime ===== */

static void free_inode(struct tfs_fs *fs, struct tfs_inode *ip)
{
	struct freectx c = { fs, 0, 0 };

	/* write-backs still in flight finish before tfs_txn_release_pending()
	 * lets anyone reuse these blocks */
	if (fs->cache)
		tfs_cache_forget(fs->cache, ip->a.ino);
	for (size_t i = 0; i < ip->map.n; i++)
		tfs_txn_freed(ip->map.ext[i].pblk, ip->map.ext[i].len, &c);
	tfs_txn_rec(fs, tfs_rec_put_free(&fs->txn, ip->a.ino));
	ip->dirty = 0;
	tfs_meta_remove(fs->m, ip);
}

void tfs_inode_maybe_free(struct tfs_fs *fs, struct tfs_inode *ip)
{
	/* a file system opened for inspection changes nothing */
	if (fs->opts.readonly || fs->opts.no_recover)
		return;
	if (ip->a.nlink == 0 && ip->opens == 0 && ip->nlookup == 0 &&
	    ip->a.ino != TFS_ROOT_INO)
		free_inode(fs, ip);
}

#define NLOOKUP_MAX 0x3fffffffu /* ip->nlookup's 30 bits: sticky */

int tfs_lookup_ref(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip)
		rc = -ENOENT; /* freed since it was looked up */
	else if (ip->nlookup < NLOOKUP_MAX)
		ip->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static void forget_locked(struct tfs_fs *fs, uint64_t ino, uint64_t n)
{
	struct tfs_inode *ip = tfs_meta_get(fs->m, ino);

	if (!ip || ip->nlookup == NLOOKUP_MAX)
		return; /* gone already, or sticky */
	ip->nlookup = n < ip->nlookup ? ip->nlookup - (uint32_t)n : 0;
	tfs_inode_maybe_free(fs, ip);
}

void tfs_forget(struct tfs_fs *fs, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&fs->lock);
	forget_locked(fs, ino, n);
	pthread_mutex_unlock(&fs->lock);
}

void tfs_forget_many(struct tfs_fs *fs, const struct tfs_forget_one *v,
		     size_t n)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < n; i++)
		forget_locked(fs, v[i].ino, v[i].nlookup);
	pthread_mutex_unlock(&fs->lock);
}

static int forget_one(struct tfs_inode *ip, void *arg)
{
	struct tfs_fs *fs = arg;

	ip->nlookup = 0;
	/* removing the inode the walk is at is allowed (meta.h) */
	tfs_inode_maybe_free(fs, ip);
	return 0;
}

void tfs_inode_forget_all(struct tfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	tfs_meta_each(fs->m, forget_one, fs);
	pthread_mutex_unlock(&fs->lock);
}

/*
 * The data path's state of an inode, in ip->priv from its first
 * reference to its last (ip->opens: open handles and tfs_inode_hold()),
 * NULL without references.  Whoever takes the io_lock holds a reference,
 * so the lock is never destroyed under a user.
 */
struct inode_state {
	pthread_rwlock_t io_lock;
};

/* Take a reference.  Caller holds fs->lock. */
int tfs_inode_ref_get(struct tfs_inode *ip)
{
	if (ip->opens == 0) {
		struct inode_state *st = malloc(sizeof(*st));

		if (!st)
			return -ENOMEM;
		pthread_rwlock_init(&st->io_lock, NULL);
		ip->priv = st;
	}
	ip->opens++;
	return 0;
}

static void state_free(struct tfs_inode *ip)
{
	struct inode_state *st = ip->priv;

	if (!st)
		return;
	pthread_rwlock_destroy(&st->io_lock);
	free(st);
	ip->priv = NULL;
}

/* Drop a reference; the last one of an unlinked inode frees it.  Caller
 * holds fs->lock. */
void tfs_inode_ref_put(struct tfs_fs *fs, struct tfs_inode *ip)
{
	if (--ip->opens == 0)
		state_free(ip);
	tfs_inode_maybe_free(fs, ip);
}

pthread_rwlock_t *tfs_inode_io_lock(struct tfs_inode *ip)
{
	return &((struct inode_state *)ip->priv)->io_lock;
}

static int drop_state(struct tfs_inode *ip, void *arg)
{
	(void)arg;
	state_free(ip);
	return 0;
}

void tfs_inode_drop_all(struct tfs_fs *fs)
{
	tfs_meta_each(fs->m, drop_state, NULL);
}

/* Take and drop a reference that keeps ip alive without fs->lock. */
struct tfs_inode *tfs_inode_hold(struct tfs_fs *fs, uint64_t ino, int *rc)
{
	struct tfs_inode *ip;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip)
		*rc = -ENOENT;
	else if ((*rc = tfs_inode_ref_get(ip)))
		ip = NULL;
	pthread_mutex_unlock(&fs->lock);
	return ip;
}

void tfs_inode_unhold(struct tfs_fs *fs, struct tfs_inode *ip)
{
	pthread_mutex_lock(&fs->lock);
	tfs_inode_ref_put(fs, ip);
	pthread_mutex_unlock(&fs->lock);
}

/* ===== atime ===== */

static int ts_before_eq(struct tfs_timespec a, struct tfs_timespec b)
{
	return a.sec < b.sec || (a.sec == b.sec && a.nsec <= b.nsec);
}

/* Does a read at 'now' move ip's atime?  As the kernel's
 * atime_needs_update() and relatime_need_update(). */
static int atime_due(int policy, const struct tfs_inode *ip,
		     struct tfs_timespec now)
{
	const struct tfs_attr *a = &ip->a;

	if (a->atime.sec == now.sec && a->atime.nsec == now.nsec)
		return 0;
	if (policy == TFS_ATIME_STRICT)
		return 1;
	return ts_before_eq(a->atime, a->mtime) ||
	       ts_before_eq(a->atime, a->ctime) ||
	       now.sec - a->atime.sec >= 24 * 60 * 60;
}

void tfs_fs_set_atime(struct tfs_fs *fs, int atime)
{
	__atomic_store_n(&fs->opts.atime, atime, __ATOMIC_RELAXED);
}

/* The atime policy reads follow now: TFS_ATIME_NOATIME also when none
 * may move an atime (a read-only or failed file system). */
static int atime_policy(struct tfs_fs *fs)
{
	int policy = __atomic_load_n(&fs->opts.atime, __ATOMIC_RELAXED);

	return tfs_fs_is_readonly(fs) || tfs_fs_failed(fs) ? TFS_ATIME_NOATIME
							   : policy;
}

int tfs_atime_due(struct tfs_fs *fs, uint64_t ino)
{
	int policy = atime_policy(fs);
	struct tfs_inode *ip;
	int due = 0;

	if (policy == TFS_ATIME_NOATIME)
		return 0;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		due = atime_due(policy, ip, tfs_fs_now());
	pthread_mutex_unlock(&fs->lock);
	return due;
}

void tfs_fs_set_diratime(struct tfs_fs *fs, int on)
{
	__atomic_store_n(&fs->opts.nodiratime, !on, __ATOMIC_RELAXED);
}

void tfs_dir_note_read(struct tfs_fs *fs, uint64_t ino)
{
	if (__atomic_load_n(&fs->opts.nodiratime, __ATOMIC_RELAXED))
		return;
	tfs_file_note_read(fs, ino, 0);
}

void tfs_file_note_read(struct tfs_fs *fs, uint64_t ino, ssize_t n)
{
	int policy = atime_policy(fs);
	struct tfs_timespec now;
	struct tfs_inode *ip;

	if (n < 0 || policy == TFS_ATIME_NOATIME)
		return;
	now = tfs_fs_now();
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip && atime_due(policy, ip, now)) {
		/* no ctime change, no record now: the inode is written
		 * with the next commit, whenever that is */
		ip->a.atime = now;
		tfs_txn_mark_dirty(fs, ip);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* ===== stale mark ===== */

void tfs_mark_stale(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		ip->stale = 1;
	pthread_mutex_unlock(&fs->lock);
}

int tfs_take_stale(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	int stale = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip) {
		stale = ip->stale;
		ip->stale = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return stale;
}
