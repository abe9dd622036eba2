/*
 * fs.c: the file system: POSIX operations, the data path, commits.
 *
 * State and locks.  The tree (meta.c), the allocator (alloc.c) and the
 * running transaction are guarded by fs->lock, held only for in-memory
 * work.  File data I/O is done without it, under the inode's io_lock:
 * shared for reads, exclusive for writes, truncate and fallocate, so a
 * read never sees blocks that a truncate is giving away.  Journal I/O is
 * serialised by fs->jlock.  Lock order: io_lock, jlock, lock.
 *
 * The running transaction.  Every change appends the records that
 * replay it (format.h) to fs->txn while it holds fs->lock, so the
 * transaction always turns the last committed state into the current
 * one.  Attribute-only changes (size, times, modes) just mark the inode
 * dirty; its INODE record is written once, at commit.  A commit takes
 * the records and the dirty inodes, writes them as one journal
 * transaction and flushes the device; when the journal is full, or a
 * record could not be queued (ENOMEM), or an earlier commit failed, the
 * whole tree is checkpointed instead.
 *
 * Ordered data.  A write puts its data on the device first (in place for
 * blocks the file already has, into newly allocated blocks otherwise)
 * and only then, under fs->lock, maps the new blocks and queues their
 * EXTENT records; a commit flushes the device before writing the
 * transaction.  So metadata on the device never points at blocks whose
 * data is not there: after a crash a file shows its own bytes or zeros,
 * never a former file's.  For the same reason blocks freed by a
 * transaction are reused only after it is committed (the pending list):
 * until then the committed state may still give them to their old file.
 *
 * Zeros past EOF.  On the device, the bytes of a file's last block past
 * its size are always zero: writes zero them in the block they write,
 * truncate zeroes the tail of the new last block.  So growing a file
 * (truncate, a write further on) never uncovers old bytes.
 *
 * Inode lifetime: an inode is freed when its link count and open count
 * are both zero; numbers are never reused, so the kernel's stale numbers
 * find nothing (ENOENT).  After a crash, inodes with no links (open but
 * unlinked at the time) are freed at mount.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "cache.h"
#include "format.h"
#include "io.h"
#include "journal.h"
#include "meta.h"
#include "tensor.h"
#include "units.h"

#define BS		TFS_BLOCK_SIZE
#define MAX_FILE_SIZE	(1ull << 56)
#define META_RESERVE	(64u << 10)	/* checkpoint slot headroom */
#define TXN_KICK	(4u << 20)	/* commit early past this size */
#define MAX_LINKS	65000u
#define NO_TAG		UINT64_MAX	/* release_pending(): nothing */
#define VXATTR_EXTENTS	"user.tensorfs.extents"
#define VXATTR_CACHED	"user.tensorfs.cached"
#define TFS_XATTR_DTYPE	"user.tensor.dtype"
#define TFS_XATTR_SHAPE	"user.tensor.shape"

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
	size_t cs;			/* cache chunk size */
	struct tfs_fs_opts opts;
	uint64_t data_start, data_blocks;
	uint64_t replayed;

	/* running transaction (lock) */
	struct tfs_buf txn;
	uint64_t txn_nrec;
	uint64_t *dirty;
	size_t ndirty, capdirty;
	int need_ckpt;
	uint64_t tag;			/* current transaction's tag */
	struct pending *pend;
	size_t npend, cappend;
	uint64_t pend_blocks;
	uint64_t data_writes;		/* since the last flush */
	uint64_t wb_errors;		/* write-backs that failed */
	uint64_t app_read_bytes, app_write_bytes;	/* atomics */

	/* commit thread */
	pthread_t thr;
	int thr_started, stop;
	pthread_cond_t cond;
	unsigned int interval_ms;
};

static int open_cache(struct tfs_fs *fs, char *err, size_t errlen);
_Static_assert(TFS_FS_ROOT == TFS_ROOT_INO, "fs.h and format.h disagree");

/* ===== small helpers ===== */

static struct tfs_timespec now(void)
{
	struct timespec ts;
	struct tfs_timespec t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t.sec = ts.tv_sec;
	t.nsec = (uint32_t)ts.tv_nsec;
	return t;
}

/* Queue a record's result: a record that could not be queued makes the
 * next commit a checkpoint, which needs no records. */
static void rec(struct tfs_fs *fs, int rc)
{
	if (rc)
		fs->need_ckpt = 1;
	else
		fs->txn_nrec++;
	if (fs->txn.len > TXN_KICK)
		pthread_cond_signal(&fs->cond);
}

static void mark_dirty(struct tfs_fs *fs, struct tfs_inode *ip)
{
	if (ip->dirty)
		return;
	if (fs->ndirty == fs->capdirty) {
		size_t nc = fs->capdirty ? fs->capdirty * 2 : 256;
		uint64_t *nd = realloc(fs->dirty, nc * sizeof(*nd));

		if (!nd) {
			fs->need_ckpt = 1;
			return;
		}
		fs->dirty = nd;
		fs->capdirty = nc;
	}
	fs->dirty[fs->ndirty++] = ip->a.ino;
	ip->dirty = 1;
}

static void touch(struct tfs_fs *fs, struct tfs_inode *ip, int mtime)
{
	ip->a.ctime = now();
	if (mtime)
		ip->a.mtime = ip->a.ctime;
	mark_dirty(fs, ip);
}

static int meta_room(struct tfs_fs *fs, uint64_t more)
{
	uint64_t cap = tfs_journal_slot_bytes(&fs->j);

	if (tfs_meta_bytes(fs->m) + more + META_RESERVE > cap)
		return -ENOSPC;
	return 0;
}

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

/* ===== freed blocks ===== */

struct freectx {
	struct tfs_fs *fs;
	uint64_t keep, keep_len;	/* blocks being remapped, not freed */
};

static void pend_add(struct tfs_fs *fs, uint64_t pblk, uint64_t len)
{
	if (!len)
		return;
	if (fs->npend == fs->cappend) {
		size_t nc = fs->cappend ? fs->cappend * 2 : 64;
		struct pending *np = realloc(fs->pend, nc * sizeof(*np));

		if (!np) {
			/*
			 * No memory to remember them: the blocks stay used
			 * until the next mount rebuilds free space from the
			 * extent maps.  Lost space, never lost data.
			 */
			return;
		}
		fs->pend = np;
		fs->cappend = nc;
	}
	fs->pend[fs->npend].pblk = pblk;
	fs->pend[fs->npend].len = len;
	fs->pend[fs->npend].tag = fs->tag;
	fs->npend++;
	fs->pend_blocks += len;
}

static void on_freed(uint64_t pblk, uint64_t len, void *arg)
{
	struct freectx *c = arg;
	uint64_t end = pblk + len, kend = c->keep + c->keep_len;

	if (c->keep_len && pblk < kend && c->keep < end) {
		/* remapped in place (unwritten -> written): keep the overlap */
		if (pblk < c->keep)
			pend_add(c->fs, pblk, c->keep - pblk);
		if (end > kend)
			pend_add(c->fs, kend, end - kend);
		return;
	}
	pend_add(c->fs, pblk, len);
}

/* Give the allocator the blocks of every transaction up to 'tag'. */
static void pend_release(struct tfs_fs *fs, uint64_t tag)
{
	size_t j = 0;

	for (size_t i = 0; i < fs->npend; i++) {
		struct pending *p = &fs->pend[i];

		if (p->tag <= tag) {
			if (tfs_alloc_put(fs->alloc, p->pblk, p->len) == 0)
				fs->pend_blocks -= p->len;
			else
				fs->pend_blocks -= p->len;
		} else {
			fs->pend[j++] = *p;
		}
	}
	fs->npend = j;
}

/* ===== commit ===== */

static void txn_reset(struct tfs_fs *fs)
{
	fs->txn.len = 0;
	fs->txn_nrec = 0;
	for (size_t i = 0; i < fs->ndirty; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, fs->dirty[i]);

		if (ip)
			ip->dirty = 0;
	}
	fs->ndirty = 0;
}

/*
 * Checkpoint under fs->lock (and jlock): everything in memory becomes
 * the new committed state.  The blocks freed up to *tag may be reused
 * once release_pending() says so.
 */
static int checkpoint_locked(struct tfs_fs *fs, uint32_t flags,
			     uint64_t *tag)
{
	int rc;

	*tag = fs->tag++;
	rc = tfs_journal_checkpoint(&fs->j, fs->m, flags);
	if (rc) {
		*tag = NO_TAG;
		fs->need_ckpt = 1;
		return rc;
	}
	txn_reset(fs);
	fs->need_ckpt = 0;
	fs->data_writes = 0;
	return 0;
}

/*
 * Give the allocator the blocks freed by committed transactions up to
 * tag.  A write-back that mapped such a block before it was freed may
 * still be writing to it: wait for those first (the barrier), so a new
 * owner's data is never overwritten by an old one's.  Caller holds
 * neither lock (the write-back needs fs->lock to finish).
 */
static void release_pending(struct tfs_fs *fs, uint64_t tag)
{
	if (tag == NO_TAG)
		return;
	if (fs->cache)
		tfs_cache_barrier(fs->cache);
	pthread_mutex_lock(&fs->lock);
	pend_release(fs, tag);
	pthread_mutex_unlock(&fs->lock);
}

/* Commit the running transaction.  Caller holds jlock, not lock. */
static int fs_commit(struct tfs_fs *fs)
{
	struct tfs_buf t;
	uint64_t nrec, tag, next_ino, used;
	int rc;

	pthread_mutex_lock(&fs->lock);
	if (fs->need_ckpt) {
		rc = checkpoint_locked(fs, 0, &tag);
		pthread_mutex_unlock(&fs->lock);
		release_pending(fs, tag);
		return rc;
	}
	for (size_t i = 0; i < fs->ndirty; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, fs->dirty[i]);

		if (!ip || !ip->dirty)
			continue;
		ip->dirty = 0;
		/* after a failure the checkpoint below covers the rest */
		if (fs->need_ckpt)
			continue;
		if (tfs_rec_put_inode(&fs->txn, &ip->a))
			fs->need_ckpt = 1;
		else
			fs->txn_nrec++;
	}
	fs->ndirty = 0;
	if (fs->need_ckpt) {
		rc = checkpoint_locked(fs, 0, &tag);
		pthread_mutex_unlock(&fs->lock);
		release_pending(fs, tag);
		return rc;
	}
	if (fs->txn_nrec == 0 && fs->data_writes == 0) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	t = fs->txn;
	nrec = fs->txn_nrec;
	memset(&fs->txn, 0, sizeof(fs->txn));
	fs->txn_nrec = 0;
	fs->data_writes = 0;
	tag = fs->tag++;
	next_ino = tfs_meta_next_ino(fs->m);
	used = tfs_meta_used_blocks(fs->m);
	pthread_mutex_unlock(&fs->lock);

	if (nrec)
		rc = tfs_journal_commit(&fs->j, t.p, t.len, nrec, next_ino,
					used, 1);
	else
		rc = tfs_dev_flush(fs->dev);
	tfs_buf_release(&t);

	pthread_mutex_lock(&fs->lock);
	if (rc == -ENOSPC || rc == -ENOMEM) {
		/* no room in the journal: the checkpoint includes t */
		rc = checkpoint_locked(fs, 0, &tag);
	} else if (rc) {
		fs->need_ckpt = 1;
		tag = NO_TAG;
	}
	pthread_mutex_unlock(&fs->lock);
	release_pending(fs, tag);
	return rc;
}

static int commit(struct tfs_fs *fs)
{
	int rc;

	pthread_mutex_lock(&fs->jlock);
	rc = fs_commit(fs);
	pthread_mutex_unlock(&fs->jlock);
	return rc;
}

int tfs_fs_sync(struct tfs_fs *fs)
{
	if (fs->opts.readonly)
		return 0;
	tfs_cache_sync_all(fs->cache);
	return commit(fs);
}

static void *commit_thread(void *arg)
{
	struct tfs_fs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += fs->interval_ms / 1000;
		ts.tv_nsec += (long)(fs->interval_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		/* a kick sent while we were committing is not lost */
		if (fs->txn.len <= TXN_KICK)
			pthread_cond_timedwait(&fs->cond, &fs->lock, &ts);
		if (fs->stop)
			break;
		pthread_mutex_unlock(&fs->lock);
		/* errors stay in need_ckpt; the next fsync reports them */
		(void)commit(fs);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* ===== open and close ===== */

static int drop_orphan(struct tfs_inode *ip, void *arg)
{
	struct tfs_inode **list = arg;

	if (ip->a.nlink == 0 && ip->a.ino != TFS_ROOT_INO) {
		ip->dnext = *list;
		*list = ip;
	}
	return 0;
}

struct build {
	struct tfs_fs *fs;
	char *err;
	size_t errlen;
};

static int mark_extents(struct tfs_inode *ip, void *arg)
{
	struct build *b = arg;

	for (size_t i = 0; i < ip->map.n; i++) {
		struct tfs_extent *e = &ip->map.ext[i];

		if (tfs_alloc_mark_used(b->fs->alloc, e->pblk, e->len)) {
			tfs_say(b->err, b->errlen,
			    "extent of inode %llu (device blocks %llu..%llu) "
			    "overlaps another or lies outside the data area; "
			    "run tensorfs-fsck",
			    (unsigned long long)ip->a.ino,
			    (unsigned long long)e->pblk,
			    (unsigned long long)(e->pblk + e->len - 1));
			return -EUCLEAN;
		}
	}
	return 0;
}

int tfs_fs_open(const char *path, const struct tfs_fs_opts *o,
		struct tfs_fs **out, char *err, size_t errlen)
{
	struct tfs_fs *fs;
	struct tfs_inode *orphans = NULL;
	struct build b;
	int rc, dflags = 0;
	uint64_t norphans = 0;

	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (o)
		fs->opts = *o;
	fs->interval_ms = fs->opts.commit_interval_ms ?
				  fs->opts.commit_interval_ms : 5000;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->jlock, NULL);
	pthread_cond_init(&fs->cond, NULL);
	if (fs->opts.readonly)
		dflags |= TFS_DEV_RDONLY;
	if (fs->opts.no_lock)
		dflags |= TFS_DEV_NOLOCK;
	rc = tfs_dev_open(path, dflags, &fs->dev);
	if (rc) {
		if (rc == -EBUSY)
			tfs_say(err, errlen, "'%s' is in use: mounted by tensorfs "
					 "or opened by another tool",
			    path);
		else
			tfs_say(err, errlen, "cannot open '%s': %s", path,
			    strerror(-rc));
		goto fail;
	}
	fs->m = tfs_meta_new();
	if (!fs->m) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = tfs_journal_load(&fs->j, fs->dev, fs->m, err, errlen);
	if (rc)
		goto fail_dev;
	fs->replayed = fs->j.replayed;
	fs->data_start = fs->j.sb.data_start;
	fs->data_blocks = fs->j.sb.dev_blocks - fs->data_start;

	if (!fs->opts.readonly && !fs->opts.no_recover) {
		tfs_meta_each(fs->m, drop_orphan, &orphans);
		while (orphans) {
			struct tfs_inode *next = orphans->dnext;

			tfs_meta_remove(fs->m, orphans);
			orphans = next;
			norphans++;
		}
	}
	fs->alloc = tfs_alloc_new(fs->data_start, fs->data_blocks);
	if (!fs->alloc) {
		rc = -ENOMEM;
		goto fail_journal;
	}
	b.fs = fs;
	b.err = err;
	b.errlen = errlen;
	rc = tfs_meta_each(fs->m, mark_extents, &b);
	if (rc)
		goto fail_journal;
	if (!fs->opts.readonly) {
		/* Recovery ends with a checkpoint, so that the replayed state
		 * is the committed one and the journal starts empty. */
		uint64_t tag = NO_TAG;

		pthread_mutex_lock(&fs->jlock);
		pthread_mutex_lock(&fs->lock);
		if (fs->replayed || norphans || !(fs->j.sb.flags & TFS_SB_CLEAN))
			rc = checkpoint_locked(fs, 0, &tag);
		else
			rc = tfs_journal_set_flags(&fs->j, 0);
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_unlock(&fs->jlock);
		release_pending(fs, tag);
		if (rc) {
			tfs_say(err, errlen, "cannot write to '%s': %s", path,
			    strerror(-rc));
			goto fail_journal;
		}
	}
	rc = open_cache(fs, err, errlen);
	if (rc)
		goto fail_journal;
	*out = fs;
	return 0;

fail_journal:
	tfs_journal_release(&fs->j);
fail_dev:
	tfs_dev_close(fs->dev);
	fs->dev = NULL;
fail:
	tfs_cache_free(fs->cache);
	tfs_alloc_free(fs->alloc);
	tfs_meta_free(fs->m);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->jlock);
	pthread_cond_destroy(&fs->cond);
	free(fs);
	return rc;
}

int tfs_fs_start(struct tfs_fs *fs)
{
	int rc;

	if (fs->opts.readonly || fs->thr_started)
		return 0;
	rc = tfs_cache_start(fs->cache);
	if (rc)
		return rc;
	rc = pthread_create(&fs->thr, NULL, commit_thread, fs);
	if (rc)
		return -rc;
	fs->thr_started = 1;
	return 0;
}

uint64_t tfs_fs_replayed(const struct tfs_fs *fs)
{
	return fs->replayed;
}

int tfs_fs_close(struct tfs_fs *fs)
{
	int rc = 0;

	if (!fs)
		return 0;
	if (!fs->opts.readonly)
		tfs_cache_sync_all(fs->cache);
	if (fs->thr_started) {
		pthread_mutex_lock(&fs->lock);
		fs->stop = 1;
		pthread_cond_signal(&fs->cond);
		pthread_mutex_unlock(&fs->lock);
		pthread_join(fs->thr, NULL);
	}
	if (!fs->opts.readonly) {
		pthread_mutex_lock(&fs->jlock);
		/*
		 * Commit to the journal first: should the superblock of the
		 * final checkpoint ever be unreadable, the previous one plus
		 * the journal still hold everything.
		 */
		uint64_t tag;

		(void)fs_commit(fs);
		pthread_mutex_lock(&fs->lock);
		rc = checkpoint_locked(fs, TFS_SB_CLEAN, &tag);
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_unlock(&fs->jlock);
	}
	tfs_cache_free(fs->cache);
	tfs_journal_release(&fs->j);
	tfs_dev_close(fs->dev);
	tfs_alloc_free(fs->alloc);
	tfs_meta_free(fs->m);
	tfs_buf_release(&fs->txn);
	free(fs->dirty);
	free(fs->pend);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->jlock);
	pthread_cond_destroy(&fs->cond);
	free(fs);
	return rc;
}

void tfs_fs_get_info(struct tfs_fs *fs, struct tfs_fs_info *info)
{
	pthread_mutex_lock(&fs->lock);
	memset(info, 0, sizeof(*info));
	info->dev_bytes = fs->j.sb.dev_blocks * BS;
	info->data_blocks = fs->data_blocks;
	info->free_blocks = tfs_alloc_free_blocks(fs->alloc) + fs->pend_blocks;
	info->free_extents = tfs_alloc_free_extents(fs->alloc);
	info->inodes = tfs_meta_inodes(fs->m);
	info->meta_bytes = tfs_meta_bytes(fs->m);
	info->meta_capacity = tfs_journal_slot_bytes(&fs->j);
	info->journal_bytes = fs->j.sb.journal_blocks * BS;
	info->generation = fs->j.sb.generation;
	memcpy(info->uuid, fs->j.sb.uuid, 16);
	pthread_mutex_unlock(&fs->lock);
}

struct tfs_meta *tfs_fs_meta(struct tfs_fs *fs)
{
	return fs->m;
}

struct tfs_alloc *tfs_fs_alloc(struct tfs_fs *fs)
{
	return fs->alloc;
}

void tfs_fs_mark_changed(struct tfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->need_ckpt = 1;
	pthread_mutex_unlock(&fs->lock);
}

/* ===== inode lifetime ===== */

static void free_inode(struct tfs_fs *fs, struct tfs_inode *ip)
{
	struct freectx c = { fs, 0, 0 };

	/* write-backs still in flight finish before release_pending()
	 * lets anyone reuse these blocks */
	if (fs->cache)
		tfs_cache_forget(fs->cache, ip->a.ino);
	for (size_t i = 0; i < ip->map.n; i++)
		on_freed(ip->map.ext[i].pblk, ip->map.ext[i].len, &c);
	rec(fs, tfs_rec_put_free(&fs->txn, ip->a.ino));
	ip->dirty = 0;
	tfs_meta_remove(fs->m, ip);
}

static void maybe_free(struct tfs_fs *fs, struct tfs_inode *ip)
{
	/* a file system opened for inspection changes nothing */
	if (fs->opts.readonly || fs->opts.no_recover)
		return;
	if (ip->a.nlink == 0 && ip->opens == 0)
		free_inode(fs, ip);
}

/* Take and drop a reference that keeps ip alive without fs->lock. */
static struct tfs_inode *hold(struct tfs_fs *fs, uint64_t ino, int *rc)
{
	struct tfs_inode *ip;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		ip->opens++;
	else
		*rc = -ENOENT;
	pthread_mutex_unlock(&fs->lock);
	return ip;
}

static void unhold(struct tfs_fs *fs, struct tfs_inode *ip)
{
	pthread_mutex_lock(&fs->lock);
	ip->opens--;
	maybe_free(fs, ip);
	pthread_mutex_unlock(&fs->lock);
}

/* ===== names ===== */

int tfs_lookup(struct tfs_fs *fs, uint64_t parent, const char *name,
	       struct stat *st)
{
	struct tfs_inode *dp, *ip;
	struct tfs_dirent *e;
	size_t len;
	int rc = check_name(name, &len);

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

/* Create an inode named name in dp.  Caller holds fs->lock. */
static int make_inode(struct tfs_fs *fs, uint64_t parent, const char *name,
		      mode_t mode, dev_t rdev, uid_t uid, gid_t gid,
		      const char *target, struct stat *st)
{
	struct tfs_inode *dp, *ip;
	struct tfs_attr a = { 0 };
	size_t len, tlen = target ? strlen(target) : 0;
	int rc = check_name(name, &len);

	if (rc)
		return rc;
	dp = get_dir(fs, parent, &rc);
	if (!dp)
		return rc;
	if (dp->a.nlink == 0)
		return -ENOENT;		/* removed while we looked */
	if (tfs_dir_lookup(dp, name, len))
		return -EEXIST;
	if (S_ISDIR(mode) && dp->a.nlink >= MAX_LINKS)
		return -EMLINK;
	if (target && (tlen == 0 || tlen > TFS_SYMLINK_MAX))
		return tlen ? -ENAMETOOLONG : -ENOENT;
	rc = meta_room(fs, TFS_REC_SIZE_INODE + tfs_rec_size_link(len) +
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
	a.atime = a.mtime = a.ctime = now();
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
	rec(fs, tfs_rec_put_inode(&fs->txn, &ip->a));
	if (target)
		rec(fs, tfs_rec_put_symlink(&fs->txn, a.ino, target, tlen));
	rec(fs, tfs_rec_put_link(&fs->txn, parent, a.ino, name, len));
	if (S_ISDIR(mode))
		dp->a.nlink++;
	touch(fs, dp, 1);
	fill_stat(ip, st);
	return 0;
}

int tfs_mknod(struct tfs_fs *fs, uint64_t parent, const char *name,
	      mode_t mode, dev_t rdev, uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if (!S_ISREG(mode))
		;			/* fifos, sockets, devices: metadata */
	else
		rdev = 0;
	pthread_mutex_lock(&fs->lock);
	rc = make_inode(fs, parent, name, mode, rdev, uid, gid, NULL, st);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_mkdir(struct tfs_fs *fs, uint64_t parent, const char *name,
	      mode_t mode, uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = make_inode(fs, parent, name, S_IFDIR | (mode & 07777), 0, uid,
			gid, NULL, st);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_symlink(struct tfs_fs *fs, uint64_t parent, const char *name,
		const char *target, uid_t uid, gid_t gid, struct stat *st)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = make_inode(fs, parent, name, S_IFLNK | 0777, 0, uid, gid, target,
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
	rc = meta_room(fs, tfs_rec_size_link(len));
	if (rc)
		goto out;
	rc = tfs_dir_add(fs->m, dp, newname, len, ino);
	if (rc)
		goto out;
	rec(fs, tfs_rec_put_link(&fs->txn, newparent, ino, newname, len));
	ip->a.nlink++;
	touch(fs, ip, 0);
	touch(fs, dp, 1);
	fill_stat(ip, st);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Remove entry name (inode ip) from dp and drop the link it held. */
static void drop_entry(struct tfs_fs *fs, struct tfs_inode *dp,
		       const char *name, size_t len, struct tfs_inode *ip)
{
	tfs_dir_remove(fs->m, dp, name, len);
	rec(fs, tfs_rec_put_unlink(&fs->txn, dp->a.ino, name, len));
	if (S_ISDIR(ip->a.mode)) {
		ip->a.nlink = 0;
		dp->a.nlink--;
	} else {
		ip->a.nlink--;
	}
	touch(fs, ip, 0);
	touch(fs, dp, 1);
	maybe_free(fs, ip);
}

static int remove_name(struct tfs_fs *fs, uint64_t parent, const char *name,
		       int dir)
{
	struct tfs_inode *dp, *ip;
	struct tfs_dirent *e;
	size_t len;
	int rc = check_name(name, &len);

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
	mark_dirty(fs, ip);
}

int tfs_rename(struct tfs_fs *fs, uint64_t parent, const char *name,
	       uint64_t newparent, const char *newname, unsigned int flags)
{
	struct tfs_inode *sp, *dp, *sip, *dip;
	struct tfs_dirent *se, *de;
	size_t slen, dlen;
	int rc;

	if (flags & ~(TFS_RENAME_NOREPLACE | TFS_RENAME_EXCHANGE) ||
	    (flags & TFS_RENAME_NOREPLACE && flags & TFS_RENAME_EXCHANGE))
		return -EINVAL;
	rc = check_name(name, &slen);
	if (!rc)
		rc = check_name(newname, &dlen);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	sp = get_dir(fs, parent, &rc);
	dp = sp ? get_dir(fs, newparent, &rc) : NULL;
	if (!dp)
		goto out;
	if (dp->a.nlink == 0) {
		rc = -ENOENT;		/* removed while open */
		goto out;
	}
	se = tfs_dir_lookup(sp, name, slen);
	sip = se ? tfs_meta_get(fs->m, se->ino) : NULL;
	if (!sip) {
		rc = -ENOENT;
		goto out;
	}
	de = tfs_dir_lookup(dp, newname, dlen);
	dip = de ? tfs_meta_get(fs->m, de->ino) : NULL;
	if (flags & TFS_RENAME_EXCHANGE && !dip) {
		rc = -ENOENT;
		goto out;
	}
	if (flags & TFS_RENAME_NOREPLACE && dip) {
		rc = -EEXIST;
		goto out;
	}
	if (sip == dip)
		goto out;		/* same file: nothing to do (POSIX) */
	if (S_ISDIR(sip->a.mode) && is_ancestor(fs, sip, dp)) {
		rc = -EINVAL;
		goto out;
	}
	if (flags & TFS_RENAME_EXCHANGE) {
		if (S_ISDIR(dip->a.mode) && is_ancestor(fs, dip, sp)) {
			rc = -EINVAL;
			goto out;
		}
		if (slen != dlen) {
			rc = meta_room(fs, dlen > slen ? dlen - slen
						       : slen - dlen);
			if (rc)
				goto out;
		}
		/* the two entries swap inodes; the names stay */
		se->ino = dip->a.ino;
		de->ino = sip->a.ino;
		rec(fs, tfs_rec_put_unlink(&fs->txn, parent, name, slen));
		rec(fs, tfs_rec_put_unlink(&fs->txn, newparent, newname, dlen));
		rec(fs, tfs_rec_put_link(&fs->txn, parent, dip->a.ino, name,
					 slen));
		rec(fs, tfs_rec_put_link(&fs->txn, newparent, sip->a.ino,
					 newname, dlen));
		reparent(fs, sip, sp, dp);
		reparent(fs, dip, dp, sp);
		touch(fs, sip, 0);
		touch(fs, dip, 0);
		touch(fs, sp, 1);
		touch(fs, dp, 1);
		goto out;
	}
	if (dip) {
		if (S_ISDIR(sip->a.mode) && !S_ISDIR(dip->a.mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		if (!S_ISDIR(sip->a.mode) && S_ISDIR(dip->a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (S_ISDIR(dip->a.mode) && tfs_dir_count(dip)) {
			rc = -ENOTEMPTY;
			goto out;
		}
	} else {
		rc = meta_room(fs, tfs_rec_size_link(dlen));
		if (rc)
			goto out;
		if (S_ISDIR(sip->a.mode) && sp != dp &&
		    dp->a.nlink >= MAX_LINKS) {
			rc = -EMLINK;
			goto out;
		}
	}
	{
		uint64_t ino = sip->a.ino;

		if (dip)
			drop_entry(fs, dp, newname, dlen, dip);
		tfs_dir_remove(fs->m, sp, name, slen);
		rec(fs, tfs_rec_put_unlink(&fs->txn, parent, name, slen));
		rc = tfs_dir_add(fs->m, dp, newname, dlen, ino);
		if (rc) {
			/* cannot happen after meta_room unless ENOMEM: put it
			 * back where it was */
			if (tfs_dir_add(fs->m, sp, name, slen, ino) == 0)
				rec(fs, tfs_rec_put_link(&fs->txn, parent, ino,
							 name, slen));
			goto out;
		}
		rec(fs, tfs_rec_put_link(&fs->txn, newparent, ino, newname,
					 dlen));
		reparent(fs, sip, sp, dp);
		touch(fs, sip, 0);
		touch(fs, sp, 1);
		touch(fs, dp, 1);
	}
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
	uint64_t cap, used, per = TFS_REC_SIZE_INODE + tfs_rec_size_link(32);

	pthread_mutex_lock(&fs->lock);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = BS;
	sv->f_frsize = BS;
	sv->f_blocks = fs->data_blocks;
	/* blocks freed but not yet committed are as good as free: an
	 * allocation that needs them commits first */
	sv->f_bfree = tfs_alloc_free_blocks(fs->alloc) + fs->pend_blocks;
	sv->f_bavail = sv->f_bfree;
	cap = tfs_journal_slot_bytes(&fs->j);
	used = tfs_meta_bytes(fs->m) + META_RESERVE;
	sv->f_ffree = used < cap ? (cap - used) / per : 0;
	sv->f_favail = sv->f_ffree;
	sv->f_files = tfs_meta_inodes(fs->m) + sv->f_ffree;
	sv->f_namemax = TFS_NAME_MAX;
	memcpy(&sv->f_fsid, fs->j.sb.uuid, sizeof(sv->f_fsid));
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* ===== file data ===== */

/* A piece of a block range: mapped (written or unwritten), a hole, or
 * blocks newly allocated for it. */
enum { SEG_HOLE, SEG_WRITTEN, SEG_UNWRITTEN, SEG_NEW };

struct seg {
	uint64_t lblk, pblk, len;
	int kind;
};

struct segs {
	struct seg *s;
	size_t n, cap;
};

static int segs_add(struct segs *v, uint64_t lblk, uint64_t pblk,
		    uint64_t len, int kind)
{
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 8;
		struct seg *ns = realloc(v->s, nc * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		v->s = ns;
		v->cap = nc;
	}
	v->s[v->n].lblk = lblk;
	v->s[v->n].pblk = pblk;
	v->s[v->n].len = len;
	v->s[v->n].kind = kind;
	v->n++;
	return 0;
}

/* Describe blocks [first, first + n) of ip.  Caller holds fs->lock. */
static int map_range(struct tfs_inode *ip, uint64_t first, uint64_t n,
		     struct segs *v)
{
	uint64_t b = first, end = first + n;

	while (b < end) {
		struct tfs_extent e;
		int mapped = tfs_extmap_lookup(&ip->map, b, &e);
		uint64_t len = e.len < end - b ? e.len : end - b;
		int kind = !mapped ? SEG_HOLE :
			   e.flags & TFS_EXT_UNWRITTEN ? SEG_UNWRITTEN :
							 SEG_WRITTEN;
		int rc = segs_add(v, b, mapped ? e.pblk : 0, len, kind);

		if (rc)
			return rc;
		b += len;
	}
	return 0;
}

/* Where the block after lblk - 1 would continue contiguously. */
static uint64_t goal_for(struct tfs_inode *ip, uint64_t lblk)
{
	struct tfs_extent e;

	if (lblk && tfs_extmap_lookup(&ip->map, lblk - 1, &e))
		return e.pblk + 1;
	return UINT64_MAX;
}

/* Return the blocks of SEG_NEW pieces to the allocator. */
static void unallocate(struct tfs_fs *fs, struct segs *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->s[i].kind == SEG_NEW)
			tfs_alloc_put(fs->alloc, v->s[i].pblk, v->s[i].len);
}

/*
 * Replace the holes in v with newly allocated blocks (SEG_NEW pieces,
 * possibly several per hole), or with unwritten... (kind stays NEW; the
 * caller chooses the flags).  Caller holds fs->lock.  -ENOSPC leaves v
 * with nothing allocated.
 */
static int allocate_holes(struct tfs_fs *fs, struct tfs_inode *ip,
			  struct segs *v)
{
	struct segs out = { 0 };
	uint64_t goal = UINT64_MAX;
	int rc = 0;

	for (size_t i = 0; i < v->n && !rc; i++) {
		struct seg s = v->s[i];

		if (s.kind != SEG_HOLE) {
			rc = segs_add(&out, s.lblk, s.pblk, s.len, s.kind);
			goal = s.kind == SEG_HOLE ? UINT64_MAX : s.pblk + s.len;
			continue;
		}
		if (goal == UINT64_MAX)
			goal = goal_for(ip, s.lblk);
		while (s.len && !rc) {
			uint64_t start, cnt = s.len;

			rc = tfs_alloc_get(fs->alloc, goal, &start, &cnt);
			if (rc)
				break;
			rc = segs_add(&out, s.lblk, start, cnt, SEG_NEW);
			if (rc) {
				tfs_alloc_put(fs->alloc, start, cnt);
				break;
			}
			s.lblk += cnt;
			s.len -= cnt;
			goal = start + cnt;
		}
	}
	if (rc) {
		unallocate(fs, &out);
		free(out.s);
		return rc;
	}
	free(v->s);
	*v = out;
	return 0;
}

/* Is allocation worth a retry after a commit frees pending blocks? */
static int pending_blocks(struct tfs_fs *fs)
{
	return fs->npend != 0;
}

/* ===== per-thread buffers ===== */

/* Aligned buffers of the calling thread: TB_DEV for device I/O that
 * cannot go straight to the caller's memory, TB_OUT for what
 * tfs_read_ref() returns. */
enum { TB_DEV, TB_OUT, TB_N };

static pthread_key_t tbuf_key;
static pthread_once_t tbuf_once = PTHREAD_ONCE_INIT;

struct tbuf {
	void *p[TB_N];
	size_t len[TB_N];
};

static void tbuf_free(void *arg)
{
	struct tbuf *b = arg;

	for (int i = 0; i < TB_N; i++)
		tfs_io_free(b->p[i]);
	free(b);
}

static void tbuf_init(void)
{
	(void)pthread_key_create(&tbuf_key, tbuf_free);
}

static uint8_t *tbuf_get(int which, size_t len)
{
	struct tbuf *b;

	pthread_once(&tbuf_once, tbuf_init);
	b = pthread_getspecific(tbuf_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		pthread_setspecific(tbuf_key, b);
	}
	if (b->len[which] < len) {
		void *p = tfs_io_alloc(len);

		if (!p)
			return NULL;
		tfs_io_free(b->p[which]);
		b->p[which] = p;
		b->len[which] = len;
	}
	return b->p[which];
}

/* ===== the device side of the cache ===== */

static int bit(const uint64_t *b, uint64_t i)
{
	return (int)((b[i / 64] >> (i % 64)) & 1);
}

/*
 * Read blocks [first, first + n) of ip into buf (block first at offset
 * 0), only those set in want (bit i: block first + i; NULL: all); zeros
 * where the file has no written data.  Caller holds ip's io_lock, so no
 * truncate gives the blocks away meanwhile.
 */
static int read_blocks(struct tfs_fs *fs, struct tfs_inode *ip,
		       uint64_t first, uint64_t n, const uint64_t *want,
		       uint8_t *buf)
{
	struct segs v = { 0 };
	struct tfs_iov iov[64];
	int niov = 0, rc;

	pthread_mutex_lock(&fs->lock);
	rc = map_range(ip, first, n, &v);
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < v.n && !rc; i++) {
		struct seg *s = &v.s[i];
		uint64_t b = s->lblk, end = s->lblk + s->len;

		while (b < end && !rc) {
			uint64_t e = b + 1;
			uint8_t *p = buf + (b - first) * BS;

			if (want && !bit(want, b - first)) {
				b++;
				continue;
			}
			while (e < end && (!want || bit(want, e - first)))
				e++;
			if (s->kind != SEG_WRITTEN) {
				memset(p, 0, (e - b) * BS);
			} else {
				iov[niov].buf = p;
				iov[niov].len = (e - b) * BS;
				iov[niov].off = (s->pblk + (b - s->lblk)) * BS;
				if (++niov == 64) {
					rc = tfs_dev_readv(fs->dev, iov, niov);
					niov = 0;
				}
			}
			b = e;
		}
	}
	if (!rc && niov)
		rc = tfs_dev_readv(fs->dev, iov, niov);
	free(v.s);
	return rc;
}

static struct tfs_inode *get_inode(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	pthread_mutex_unlock(&fs->lock);
	return ip;
}

/* Cache callback: fill sectors of a chunk (the caller holds the inode). */
static int cb_fill(void *ctx, uint64_t ino, uint64_t idx, void *buf,
		   const uint64_t *want, unsigned int nsect)
{
	struct tfs_fs *fs = ctx;
	struct tfs_inode *ip = get_inode(fs, ino);

	if (!ip)
		return -ESTALE;
	return read_blocks(fs, ip, idx * (fs->cs / BS), nsect, want, buf);
}

/* Cache callback: a read the cache has no room for. */
static int cb_read_direct(void *ctx, uint64_t ino, uint64_t off, void *dst,
			  size_t len)
{
	struct tfs_fs *fs = ctx;
	struct tfs_inode *ip = get_inode(fs, ino);
	uint64_t first = off / BS, n = (off + len + BS - 1) / BS - first;
	uint8_t *b;
	int rc;

	if (!ip)
		return -ESTALE;
	b = tbuf_get(TB_DEV, n * BS);
	if (!b)
		return -ENOMEM;
	rc = read_blocks(fs, ip, first, n, NULL, b);
	if (!rc)
		memcpy(dst, b + off % BS, len);
	return rc;
}

/* One run of dirty blocks of a chunk, where it goes on the device. */
struct wrun {
	uint64_t lblk, pblk, len;
	int unwritten, io;
};

struct wbatch {
	struct tfs_iov *iov;
	struct wrun *run;
	size_t n, cap;
};

static int wbatch_add(struct wbatch *w, uint8_t *buf, uint64_t lblk,
		      uint64_t pblk, uint64_t len, int unwritten, int io)
{
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 64;
		struct tfs_iov *ni = realloc(w->iov, nc * sizeof(*ni));
		struct wrun *nr;

		if (!ni)
			return -ENOMEM;
		w->iov = ni;
		nr = realloc(w->run, nc * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		w->run = nr;
		w->cap = nc;
	}
	w->iov[w->n] = (struct tfs_iov){ buf, len * BS, pblk * BS };
	w->run[w->n] = (struct wrun){ lblk, pblk, len, unwritten, io };
	w->n++;
	return 0;
}

/* The runs of io's dirty blocks, mapped.  Caller holds fs->lock. */
static int map_dirty(struct tfs_fs *fs, struct tfs_inode *ip,
		     struct tfs_cache_io *io, int i, struct wbatch *w)
{
	uint64_t spc = fs->cs / BS, base = io->idx * spc;
	struct segs v = { 0 };
	int rc = map_range(ip, base, spc, &v);

	for (size_t k = 0; k < v.n && !rc; k++) {
		struct seg *s = &v.s[k];
		uint64_t b = s->lblk, end = s->lblk + s->len;

		while (b < end && !rc) {
			uint64_t e = b + 1;

			if (!bit(io->dirty, b - base)) {
				b++;
				continue;
			}
			while (e < end && bit(io->dirty, e - base))
				e++;
			if (s->kind == SEG_HOLE)
				rc = -EIO;	/* the write allocated them */
			else
				rc = wbatch_add(w, (uint8_t *)io->buf +
						   (b - base) * BS, b,
						s->pblk + (b - s->lblk), e - b,
						s->kind == SEG_UNWRITTEN, i);
			b = e;
		}
	}
	free(v.s);
	return rc;
}

static void log_error(struct tfs_fs *fs, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!fs->opts.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->opts.log(msg);
}

/*
 * Cache callback, on a flusher thread: write the dirty blocks of a batch
 * of chunks in one go (up to queue_depth requests in flight), then map
 * the blocks that were unwritten as written.  A failed chunk's error is
 * kept on its inode for the next write, fsync or close to return.
 */
static void cb_write(void *ctx, struct tfs_cache_io *ios, int n)
{
	struct tfs_fs *fs = ctx;
	struct wbatch w = { 0 };
	int rc;

	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < n; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, ios[i].ino);

		if (ip)	/* else the file is gone: nothing to keep */
			ios[i].result = map_dirty(fs, ip, &ios[i], i, &w);
	}
	pthread_mutex_unlock(&fs->lock);
	rc = tfs_dev_writev(fs->dev, w.iov, (int)w.n);
	if (rc) {
		/* which chunks failed?  try each on its own */
		for (size_t k = 0; k < w.n;) {
			size_t e = k;
			int i = w.run[k].io;

			while (e < w.n && w.run[e].io == i)
				e++;
			if (!ios[i].result)
				ios[i].result = tfs_dev_writev(fs->dev,
							       w.iov + k,
							       (int)(e - k));
			k = e;
		}
	}
	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < n; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, ios[i].ino);

		if (!ios[i].result || !ip)
			continue;
		fs->wb_errors++;
		if (!ip->wb_err)
			ip->wb_err = ios[i].result;
		log_error(fs, "write-back of inode %llu bytes %llu..%llu "
			      "failed: %s; the next write, fsync or close of "
			      "the file reports it",
			  (unsigned long long)ios[i].ino,
			  (unsigned long long)(ios[i].idx * fs->cs),
			  (unsigned long long)((ios[i].idx + 1) * fs->cs - 1),
			  strerror(-ios[i].result));
	}
	for (size_t k = 0; k < w.n; k++) {
		struct wrun *r = &w.run[k];
		struct tfs_inode *ip;
		struct freectx c = { fs, r->pblk, r->len };

		if (ios[r->io].result || !r->unwritten)
			continue;
		ip = tfs_meta_get(fs->m, ios[r->io].ino);
		if (!ip)
			continue;
		if (tfs_meta_map(fs->m, ip, r->lblk, r->pblk, r->len, 0,
				 on_freed, &c)) {
			/* no memory for the map: the next commit is a
			 * checkpoint, which fails loudly */
			fs->need_ckpt = 1;
			continue;
		}
		rec(fs, tfs_rec_put_extent(&fs->txn, ip->a.ino, r->lblk,
					   r->pblk, r->len, 0));
	}
	if (w.n)
		fs->data_writes++;
	pthread_mutex_unlock(&fs->lock);
	free(w.iov);
	free(w.run);
}

/* Cache callback, first thing on each flusher thread: with pin_memory,
 * the (locked) arena becomes the thread's io_uring fixed buffers. */
static void cb_thread_init(void *ctx, void *arena, size_t len)
{
	struct tfs_fs *fs = ctx;
	int rc;

	if (!fs->opts.pin)
		return;
	rc = tfs_io_register(arena, len);
	if (rc)
		log_error(fs, "cannot register the pinned pool with io_uring "
			      "(%s); writing back without fixed buffers",
			  strerror(-rc));
}

static int open_cache(struct tfs_fs *fs, char *err, size_t errlen)
{
	static const struct tfs_cache_ops ops = {
		.fill = cb_fill,
		.write = cb_write,
		.read_direct = cb_read_direct,
		.thread_init = cb_thread_init,
	};
	const struct tfs_fs_opts *o = &fs->opts;
	struct tfs_cache_opts co = { 0 };

	fs->cs = o->block_size ? o->block_size : 1u << 20;
	co.chunk_size = fs->cs;
	co.cache_chunks = (size_t)(o->cache_bytes / fs->cs);
	co.pool_chunks = o->pool_bytes ? (size_t)(o->pool_bytes / fs->cs) : 16;
	if (!co.pool_chunks)
		co.pool_chunks = 1;
	co.flushers = o->io_threads ? o->io_threads : 1;
	co.batch = o->queue_depth ? o->queue_depth : 8;
	co.pin = o->pin;
	tfs_dev_set_queue(fs->dev, fs->cs, co.batch);
	tfs_dev_set_submit(fs->dev, o->single_submit, !o->no_overlap);
	return tfs_cache_new(&co, &ops, fs, &fs->cache, err, errlen);
}

/* ===== reads and writes ===== */

/* Read into buf, or (buf NULL) into this thread's buffer, returned in
 * *data. */
static ssize_t do_read(struct tfs_fs *fs, uint64_t ino, void *buf,
		       size_t len, uint64_t off, const void **data)
{
	struct tfs_inode *ip;
	ssize_t rc = 0;
	int err = 0;

	ip = hold(fs, ino, &err);
	if (!ip)
		return err;
	pthread_rwlock_rdlock(&ip->io_lock);
	pthread_mutex_lock(&fs->lock);
	if (S_ISDIR(ip->a.mode))
		rc = -EISDIR;
	else if (!S_ISREG(ip->a.mode))
		rc = -EINVAL;
	else if (off >= ip->a.size)
		len = 0;
	else if (len > ip->a.size - off)
		len = (size_t)(ip->a.size - off);
	pthread_mutex_unlock(&fs->lock);
	if (rc || len == 0)
		goto out;
	if (!buf) {
		buf = tbuf_get(TB_OUT, len);
		if (!buf) {
			rc = -ENOMEM;
			goto out;
		}
		*data = buf;
	}
	rc = tfs_cache_read(fs->cache, ino, off, buf, len);
	if (!rc) {
		rc = (ssize_t)len;
		__atomic_fetch_add(&fs->app_read_bytes, len, __ATOMIC_RELAXED);
	}
out:
	pthread_rwlock_unlock(&ip->io_lock);
	unhold(fs, ip);
	return rc;
}

ssize_t tfs_read(struct tfs_fs *fs, uint64_t ino, void *buf, size_t len,
		 uint64_t off)
{
	return do_read(fs, ino, buf, len, off, NULL);
}

ssize_t tfs_read_ref(struct tfs_fs *fs, uint64_t ino, size_t len,
		     uint64_t off, const void **data)
{
	return do_read(fs, ino, NULL, len, off, data);
}

/*
 * Give blocks [first, first + n) of ip that are holes newly allocated,
 * unwritten blocks (they read as zeros until written back), so that
 * data the cache accepts always has its place on the device: a full
 * device fails the write with ENOSPC, never the write-back.
 */
static int alloc_unwritten(struct tfs_fs *fs, struct tfs_inode *ip,
			   uint64_t first, uint64_t n)
{
	struct segs v = { 0 };
	int rc, retried = 0;

again:
	pthread_mutex_lock(&fs->lock);
	v.n = 0;
	rc = map_range(ip, first, n, &v);
	if (!rc)
		rc = meta_room(fs, (v.n + 2) * TFS_REC_SIZE_EXTENT);
	if (!rc)
		rc = allocate_holes(fs, ip, &v);
	if (rc == -ENOSPC && !retried && pending_blocks(fs)) {
		pthread_mutex_unlock(&fs->lock);
		retried = 1;
		commit(fs);
		goto again;
	}
	for (size_t i = 0; i < v.n && !rc; i++) {
		struct seg *s = &v.s[i];

		if (s->kind != SEG_NEW)
			continue;
		if (tfs_meta_map(fs->m, ip, s->lblk, s->pblk, s->len,
				 TFS_EXT_UNWRITTEN, NULL, NULL)) {
			/* give back this piece and the ones after it */
			for (size_t j = i; j < v.n; j++)
				if (v.s[j].kind == SEG_NEW)
					tfs_alloc_put(fs->alloc, v.s[j].pblk,
						      v.s[j].len);
			rc = -ENOMEM;
			break;
		}
		rec(fs, tfs_rec_put_extent(&fs->txn, ip->a.ino, s->lblk,
					   s->pblk, s->len, TFS_EXT_UNWRITTEN));
	}
	pthread_mutex_unlock(&fs->lock);
	free(v.s);
	return rc;
}

/* The error a failed write-back left on ip, once. */
static int take_wb_err(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip) {
		rc = ip->wb_err;
		ip->wb_err = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t tfs_write(struct tfs_fs *fs, uint64_t ino, const void *buf,
		  size_t len, uint64_t off)
{
	struct tfs_inode *ip;
	uint64_t end = off + len;
	int rc = 0;

	if (len == 0)
		return 0;
	if (end > MAX_FILE_SIZE || end < off)
		return -EFBIG;
	ip = hold(fs, ino, &rc);
	if (!ip)
		return rc;
	pthread_rwlock_wrlock(&ip->io_lock);
	pthread_mutex_lock(&fs->lock);
	if (!S_ISREG(ip->a.mode)) {
		rc = S_ISDIR(ip->a.mode) ? -EISDIR : -EINVAL;
	} else if (ip->wb_err) {
		rc = ip->wb_err;
		ip->wb_err = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	if (!rc)
		rc = alloc_unwritten(fs, ip, off / BS, (end - 1) / BS - off / BS + 1);
	if (!rc)
		rc = tfs_cache_write(fs->cache, ino, off, buf, len);
	if (!rc) {
		pthread_mutex_lock(&fs->lock);
		if (end > ip->a.size)
			ip->a.size = end;
		touch(fs, ip, 1);
		pthread_mutex_unlock(&fs->lock);
		__atomic_fetch_add(&fs->app_write_bytes, len, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&ip->io_lock);
	unhold(fs, ip);
	return rc ? rc : (ssize_t)len;
}

/* Zero bytes [from, to) of file block lblk on the device, if the block
 * holds data.  Caller holds io_lock exclusively. */
static int zero_in_block(struct tfs_fs *fs, struct tfs_inode *ip,
			 uint64_t lblk, size_t from, size_t to)
{
	struct tfs_extent e;
	uint8_t *b;
	int mapped, rc;

	pthread_mutex_lock(&fs->lock);
	mapped = tfs_extmap_lookup(&ip->map, lblk, &e);
	pthread_mutex_unlock(&fs->lock);
	if (!mapped || e.flags & TFS_EXT_UNWRITTEN)
		return 0;
	b = tbuf_get(TB_DEV, BS);
	if (!b)
		return -ENOMEM;
	rc = tfs_dev_read(fs->dev, b, BS, e.pblk * BS);
	if (rc)
		return rc;
	memset(b + from, 0, to - from);
	return tfs_dev_write(fs->dev, b, BS, e.pblk * BS);
}

/* Truncate ip to size.  Caller holds a reference and io_lock (write). */
static int do_truncate(struct tfs_fs *fs, struct tfs_inode *ip,
		       uint64_t size)
{
	uint64_t old, keep;
	int rc = 0;

	if (size > MAX_FILE_SIZE)
		return -EFBIG;
	pthread_mutex_lock(&fs->lock);
	old = ip->a.size;
	pthread_mutex_unlock(&fs->lock);
	if (size < old) {
		/* the device is the truth below: put the new last chunk's
		 * dirty data there, drop the cache from it on */
		if (size % fs->cs)
			tfs_cache_sync(fs->cache, ip->a.ino);
		tfs_cache_drop(fs->cache, ip->a.ino, size / fs->cs,
			       UINT64_MAX);
	}
	if (size < old && size % BS) {
		rc = zero_in_block(fs, ip, size / BS, size % BS, BS);
		if (rc)
			return rc;
	}
	pthread_mutex_lock(&fs->lock);
	if (size < old) {
		struct freectx c = { fs, 0, 0 };

		keep = (size + BS - 1) / BS;
		if (tfs_extmap_count(&ip->map)) {
			rc = tfs_meta_unmap(fs->m, ip, keep, UINT64_MAX - keep,
					    on_freed, &c);
			if (!rc)
				rec(fs, tfs_rec_put_punch(&fs->txn, ip->a.ino,
							  keep,
							  UINT64_MAX - keep));
		}
	}
	if (!rc) {
		ip->a.size = size;
		touch(fs, ip, 1);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_setattr(struct tfs_fs *fs, uint64_t ino, const struct stat *in,
		int set, struct stat *out)
{
	struct tfs_inode *ip;
	int rc = 0;

	ip = hold(fs, ino, &rc);
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
		pthread_rwlock_wrlock(&ip->io_lock);
		rc = do_truncate(fs, ip, (uint64_t)in->st_size);
		pthread_rwlock_unlock(&ip->io_lock);
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
			ip->a.atime = now();
		} else {
			ip->a.atime.sec = in->st_atim.tv_sec;
			ip->a.atime.nsec = (uint32_t)in->st_atim.tv_nsec;
		}
	}
	if (set & (TFS_SET_MTIME | TFS_SET_MTIME_NOW)) {
		if (set & TFS_SET_MTIME_NOW) {
			ip->a.mtime = now();
		} else {
			ip->a.mtime.sec = in->st_mtim.tv_sec;
			ip->a.mtime.nsec = (uint32_t)in->st_mtim.tv_nsec;
		}
	}
	ip->a.ctime = now();
	if (set & TFS_SET_CTIME) {
		ip->a.ctime.sec = in->st_ctim.tv_sec;
		ip->a.ctime.nsec = (uint32_t)in->st_ctim.tv_nsec;
	}
	mark_dirty(fs, ip);
	fill_stat(ip, out);
	pthread_mutex_unlock(&fs->lock);
out:
	unhold(fs, ip);
	return rc;
}

int tfs_open(struct tfs_fs *fs, uint64_t ino, int flags)
{
	struct tfs_inode *ip;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
	} else if (S_ISDIR(ip->a.mode) && (flags & O_ACCMODE) != O_RDONLY) {
		rc = -EISDIR;
	} else {
		ip->opens++;
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc || !(flags & O_TRUNC) || (flags & O_ACCMODE) == O_RDONLY ||
	    !S_ISREG(ip->a.mode))
		return rc;
	pthread_rwlock_wrlock(&ip->io_lock);
	rc = do_truncate(fs, ip, 0);
	pthread_rwlock_unlock(&ip->io_lock);
	if (rc)
		tfs_release(fs, ino);
	return rc;
}

int tfs_flush(struct tfs_fs *fs, uint64_t ino)
{
	if (!fs->opts.readonly)
		tfs_cache_start_flush(fs->cache, ino);
	return take_wb_err(fs, ino);
}

int tfs_release(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;

	if (!fs->opts.readonly)
		tfs_cache_start_flush(fs->cache, ino);
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip && ip->opens) {
		ip->opens--;
		maybe_free(fs, ip);
	}
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int tfs_fsync(struct tfs_fs *fs, uint64_t ino, int datasync)
{
	int rc, wb;

	(void)datasync;
	if (fs->opts.readonly)
		return 0;
	/* the file's data to the device, then one journal commit makes
	 * its metadata (and all else) durable */
	tfs_cache_sync(fs->cache, ino);
	rc = commit(fs);
	wb = take_wb_err(fs, ino);
	return wb ? wb : rc;
}

static int do_allocate(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t off,
		       uint64_t len, int keep_size)
{
	uint64_t first = off / BS, end = off + len;
	int rc = alloc_unwritten(fs, ip, first, (end + BS - 1) / BS - first);

	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	if (!keep_size && end > ip->a.size)
		ip->a.size = end;
	touch(fs, ip, !keep_size);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

static int do_punch(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t off,
		    uint64_t len)
{
	uint64_t end = off + len, size, a, z;
	int rc = 0;

	tfs_cache_sync(fs->cache, ip->a.ino);
	tfs_cache_drop(fs->cache, ip->a.ino, off / fs->cs,
		       (off + len - 1) / fs->cs + 1);
	pthread_mutex_lock(&fs->lock);
	size = ip->a.size;
	pthread_mutex_unlock(&fs->lock);
	if (end > size)
		end = size;	/* past EOF there is nothing to zero */
	if (off >= end)
		goto punch;
	a = off / BS;
	z = (end - 1) / BS;
	if (a == z) {
		if (off % BS || end % BS)
			rc = zero_in_block(fs, ip, a, off % BS,
					   end % BS ? end % BS : BS);
	} else {
		if (off % BS)
			rc = zero_in_block(fs, ip, a, off % BS, BS);
		if (!rc && end % BS)
			rc = zero_in_block(fs, ip, z, 0, end % BS);
	}
	if (rc)
		return rc;
punch:
	a = (off + BS - 1) / BS;
	z = (off + len) / BS;	/* whole blocks [a, z) go */
	if (z > a) {
		struct freectx c = { fs, 0, 0 };

		pthread_mutex_lock(&fs->lock);
		rc = tfs_meta_unmap(fs->m, ip, a, z - a, on_freed, &c);
		if (!rc) {
			rec(fs, tfs_rec_put_punch(&fs->txn, ip->a.ino, a,
						  z - a));
			touch(fs, ip, 1);
		}
		pthread_mutex_unlock(&fs->lock);
	}
	return rc;
}

int tfs_fallocate(struct tfs_fs *fs, uint64_t ino, int mode, uint64_t off,
		  uint64_t len)
{
	struct tfs_inode *ip;
	int rc = 0;

	if (len == 0)
		return -EINVAL;
	if (off + len > MAX_FILE_SIZE || off + len < off)
		return -EFBIG;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	ip = hold(fs, ino, &rc);
	if (!ip)
		return rc;
	if (!S_ISREG(ip->a.mode)) {
		rc = S_ISDIR(ip->a.mode) ? -EISDIR : -ENODEV;
		goto out;
	}
	pthread_rwlock_wrlock(&ip->io_lock);
	if (mode & FALLOC_FL_PUNCH_HOLE)
		rc = do_punch(fs, ip, off, len);
	else
		rc = do_allocate(fs, ip, off, len,
				 !!(mode & FALLOC_FL_KEEP_SIZE));
	pthread_rwlock_unlock(&ip->io_lock);
out:
	unhold(fs, ip);
	return rc;
}

void tfs_fs_get_stats(struct tfs_fs *fs, struct tfs_fs_stats *s)
{
	memset(s, 0, sizeof(*s));
	tfs_cache_get_stats(fs->cache, &s->cache);
	tfs_dev_get_stats(fs->dev, &s->dev);
	s->app_read_bytes = __atomic_load_n(&fs->app_read_bytes,
					    __ATOMIC_RELAXED);
	s->app_write_bytes = __atomic_load_n(&fs->app_write_bytes,
					     __ATOMIC_RELAXED);
}

int64_t tfs_extent_count(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	int64_t n;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	n = ip ? (int64_t)tfs_extmap_count(&ip->map) : -ENOENT;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* ===== xattrs ===== */

static int vxattr(const char *name)
{
	return !strncmp(name, "user.tensorfs.", 14);
}

/*
 * user.tensor.dtype and user.tensor.shape describe a file's tensor to
 * tensorfs-cat and other readers: a value that is not a dtype or a shape
 * is refused (EINVAL) rather than kept to mislead them.  A trailing
 * newline (echo -n forgotten) is allowed.
 */
static int check_tensor_xattr(const char *name, const void *value,
			      size_t size)
{
	struct tfs_tensor_shape shape;
	char v[256];
	int dtype = !strcmp(name, TFS_XATTR_DTYPE);

	if (!dtype && strcmp(name, TFS_XATTR_SHAPE))
		return 0;
	if (size >= sizeof(v) || memchr(value, '\0', size))
		return -EINVAL;
	memcpy(v, value, size);
	v[size] = '\0';
	if (size && v[size - 1] == '\n')
		v[size - 1] = '\0';
	if (dtype)
		return tfs_tensor_dtype_lookup(v) < 0 ? -EINVAL : 0;
	return tfs_tensor_shape_parse(v, &shape) ? -EINVAL : 0;
}

int tfs_setxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		 const void *value, size_t size, int flags)
{
	struct tfs_inode *ip;
	struct tfs_xattr *x;
	size_t nlen = strlen(name);
	int rc = 0;

	if (nlen == 0 || nlen > TFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (size > TFS_XATTR_VALUE_MAX)
		return -E2BIG;
	if (!strncmp(name, "system.", 7))
		return -EOPNOTSUPP;
	if (vxattr(name))
		return -EPERM;
	rc = check_tensor_xattr(name, value, size);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	x = tfs_xattr_find(ip, name);
	if (x && flags & TFS_XATTR_CREATE) {
		rc = -EEXIST;
		goto out;
	}
	if (!x && flags & TFS_XATTR_REPLACE) {
		rc = -ENODATA;
		goto out;
	}
	if (!x || size > x->vlen) {
		rc = meta_room(fs, tfs_rec_size_xattr(nlen, size) -
					   (x ? tfs_rec_size_xattr(nlen, x->vlen)
					      : 0));
		if (rc)
			goto out;
	}
	rc = tfs_xattr_set(fs->m, ip, name, nlen, value, size);
	if (rc)
		goto out;
	rec(fs, tfs_rec_put_xattr(&fs->txn, ino, name, nlen, value, size));
	touch(fs, ip, 0);
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static ssize_t copy_out(void *dst, size_t size, const void *src, size_t len)
{
	if (size == 0)
		return (ssize_t)len;
	if (len > size)
		return -ERANGE;
	memcpy(dst, src, len);
	return (ssize_t)len;
}

/* The largest header read to answer user.tensor.* (safetensors headers
 * of big checkpoints run to a few MiB). */
#define HEADER_XATTR_MAX (16u << 20)

/*
 * user.tensor.dtype (shape 0) or user.tensor.shape (shape 1) of a file
 * that has none set, from its .npy or .safetensors header: the tensor's
 * dtype or shape ("4096,1024"); for a .safetensors file of several
 * tensors, one "name: value" line per tensor.  NULL when the file has no
 * such header.  Caller frees.
 */
static char *header_xattr(struct tfs_fs *fs, uint64_t ino, uint64_t fsize,
			  int shape)
{
	uint8_t head[16];
	uint64_t need = 0;
	struct tfs_tensor_list *l = NULL;
	char *buf = NULL, *out = NULL, err[128];
	size_t len = 0;
	FILE *m;
	ssize_t n = tfs_read(fs, ino, head, sizeof(head), 0);

	if (n < 10 || tfs_tensor_probe(head, (size_t)n, &need) ==
			      TFS_TENSOR_RAW ||
	    need > HEADER_XATTR_MAX || need > fsize)
		return NULL;
	buf = malloc(need);
	if (!buf || tfs_read(fs, ino, buf, need, 0) != (ssize_t)need ||
	    tfs_tensor_parse(buf, need, fsize, &l, err, sizeof(err)))
		goto out;
	m = open_memstream(&out, &len);
	if (!m)
		goto out;
	for (size_t i = 0; i < l->count; i++) {
		const struct tfs_tensor *t = &l->tensors[i];
		char v[256];

		if (shape)
			tfs_tensor_shape_format(&t->shape, 0, v, sizeof(v));
		else
			snprintf(v, sizeof(v), "%s", t->dtype >= 0 ?
				 tfs_tensor_dtype_name(t->dtype) : t->dtype_name);
		if (l->count == 1)
			fputs(v, m);
		else
			fprintf(m, "%s%s: %s", i ? "\n" : "", t->name, v);
	}
	if (fclose(m)) {
		free(out);
		out = NULL;
	}
out:
	tfs_tensor_list_free(l);
	free(buf);
	return out;
}

ssize_t tfs_getxattr(struct tfs_fs *fs, uint64_t ino, const char *name,
		     void *value, size_t size)
{
	struct tfs_inode *ip;
	struct tfs_xattr *x;
	ssize_t rc;
	char num[32];

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
	} else if (!strcmp(name, VXATTR_EXTENTS) && S_ISREG(ip->a.mode)) {
		int n = snprintf(num, sizeof(num), "%zu",
				 tfs_extmap_count(&ip->map));

		rc = copy_out(value, size, num, (size_t)n);
	} else if (!strcmp(name, VXATTR_CACHED) && S_ISREG(ip->a.mode)) {
		/* lock order: fs->lock, then the cache's */
		int n = snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)tfs_cache_bytes_of(
					 fs->cache, ino));

		rc = copy_out(value, size, num, (size_t)n);
	} else if ((x = tfs_xattr_find(ip, name))) {
		rc = copy_out(value, size, x->value, x->vlen);
	} else if (S_ISREG(ip->a.mode) && (!strcmp(name, TFS_XATTR_DTYPE) ||
					   !strcmp(name, TFS_XATTR_SHAPE))) {
		uint64_t fsize = ip->a.size;
		char *v;

		/* not set: read from the file's own header, without the
		 * lock (reading takes the file's locks) */
		pthread_mutex_unlock(&fs->lock);
		v = header_xattr(fs, ino, fsize, !strcmp(name, TFS_XATTR_SHAPE));
		rc = v ? copy_out(value, size, v, strlen(v)) : -ENODATA;
		free(v);
		return rc;
	} else {
		rc = -ENODATA;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t tfs_listxattr(struct tfs_fs *fs, uint64_t ino, char *list,
		      size_t size)
{
	struct tfs_inode *ip;
	size_t need = 0, pos = 0;
	ssize_t rc;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < ip->nxattrs; i++)
		need += ip->xattrs[i].nlen + 1;
	if (size == 0) {
		rc = (ssize_t)need;
		goto out;
	}
	if (need > size) {
		rc = -ERANGE;
		goto out;
	}
	for (size_t i = 0; i < ip->nxattrs; i++) {
		memcpy(list + pos, ip->xattrs[i].name, ip->xattrs[i].nlen + 1);
		pos += ip->xattrs[i].nlen + 1;
	}
	rc = (ssize_t)need;
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int tfs_removexattr(struct tfs_fs *fs, uint64_t ino, const char *name)
{
	struct tfs_inode *ip;
	size_t nlen = strlen(name);
	int rc;

	if (vxattr(name))
		return -EPERM;
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
		goto out;
	}
	rc = tfs_xattr_del(fs->m, ip, name, nlen);
	if (!rc) {
		rec(fs, tfs_rec_put_xattr_del(&fs->txn, ino, name, nlen));
		touch(fs, ip, 0);
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
