/*
 * commit.c: the running transaction, its commit, checkpoints, and the
 * blocks freed meanwhile.
 *
 * The running transaction.  Every change appends the records that
 * replay it (format.h) to fs->txn while it holds fs->lock
 * (tfs_txn_rec()), so the transaction always turns the last committed
 * state into the current one.  Attribute-only changes (size, times,
 * modes) just mark the inode dirty (tfs_txn_mark_dirty()); its INODE
 * record is written once, at commit.  A commit (tfs_txn_commit(), every
 * commit interval on tfs_txn_thread(), on fsync and at close) takes the
 * records and the dirty inodes, writes them as one journal transaction
 * and flushes the device; when the journal is full, or a record could
 * not be queued (ENOMEM: need_ckpt), or an earlier commit failed, the
 * whole tree is checkpointed instead.  A change after which the free
 * space could not hold the next checkpoint fails with ENOSPC first
 * (tfs_txn_room(), journal.c's J10): checkpoints take their blocks from
 * the data area.
 *
 * Ordered data.  A commit flushes the device before writing the
 * transaction, so metadata on the device never points at blocks whose
 * data is not there.  For the same reason blocks freed by a transaction
 * are reused only after it is committed (the pending list, tagged with
 * the transaction): until then the committed state may still give them
 * to their old file.  tfs_txn_release_pending() hands them to the
 * allocator, after a cache barrier so no write-back still in flight to
 * a freed block lands on its new owner's data.
 *
 * Discard.  The blocks a durable commit frees go to the allocator as
 * freed (tfs_alloc_put_freed()), each durable checkpoint ages them, and
 * those two checkpoints old may be discarded (journal.c's J11):
 * tfs_txn_discard() takes them out of the free space a piece at a time,
 * discards, gives them back.  With -o discard the commit thread does
 * that on each tick, and writes a checkpoint when the blocks waiting for
 * one are no fewer than the checkpoint's own; tfs_fs_trim() (FITRIM,
 * fstrim) commits, writes the two checkpoints, and discards what is
 * ready in the range it is given.
 *
 * Errors.  A failed transaction write makes the next commit a
 * checkpoint (journal.c's J3: the transaction's seq is burnt).  A failed
 * flush or superblock write stops the journal (J7); the first commit or
 * checkpoint that sees it puts the file system in the error state
 * (tfs_fs_fail()), and from then on commits write nothing and return
 * the error.  Each commit first checks that the image was neither
 * deleted nor truncated under the mount (tfs_fs_check_device()).
 *
 * Locks: the transaction and the pending list are under fs->lock;
 * journal I/O under fs->jlock, taken before fs->lock and held across
 * the write (tfs_txn_commit_jlocked() drops fs->lock for the I/O).
 */
#include "fs_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TXN_KICK (4u << 20) /* commit early past this size */

/* ===== small helpers ===== */

struct tfs_timespec tfs_fs_now(void)
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
void tfs_txn_rec(struct tfs_fs *fs, int rc)
{
	if (rc)
		fs->need_ckpt = 1;
	else
		fs->txn_nrec++;
	if (fs->txn.len > TXN_KICK)
		pthread_cond_signal(&fs->cond);
}

void tfs_txn_mark_dirty(struct tfs_fs *fs, struct tfs_inode *ip)
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

void tfs_txn_touch(struct tfs_fs *fs, struct tfs_inode *ip, int mtime)
{
	ip->a.ctime = tfs_fs_now();
	if (mtime)
		ip->a.mtime = ip->a.ctime;
	tfs_txn_mark_dirty(fs, ip);
}

/* ===== J10: room for the next checkpoint ===== */

uint64_t tfs_txn_reserve(struct tfs_fs *fs, uint64_t more)
{
	return tfs_journal_ckpt_need(
	    &fs->j, tfs_journal_ckpt_blocks(tfs_meta_bytes(fs->m) + more +
					    META_RESERVE));
}

/* The TFS_MAP_MAX largest free extents, as a min-heap of their lengths,
 * and their sum. */
struct top {
	uint64_t len[TFS_MAP_MAX];
	unsigned int n;
	uint64_t sum;
};

static void top_sift(struct top *t, unsigned int i)
{
	for (;;) {
		unsigned int l = 2 * i + 1, r = l + 1, m = i;
		uint64_t x;

		if (l < t->n && t->len[l] < t->len[m])
			m = l;
		if (r < t->n && t->len[r] < t->len[m])
			m = r;
		if (m == i)
			return;
		x = t->len[i];
		t->len[i] = t->len[m];
		t->len[m] = x;
		i = m;
	}
}

static int top_add(uint64_t start, uint64_t count, void *arg)
{
	struct top *t = arg;

	(void)start;
	if (t->n < TFS_MAP_MAX) {
		unsigned int i = t->n++;

		t->len[i] = count;
		t->sum += count;
		/* sift up to the heap's root */
		while (i > 0) {
			unsigned int up = (i - 1) / 2;
			uint64_t x = t->len[i];

			if (t->len[up] <= x)
				break;
			t->len[i] = t->len[up];
			t->len[up] = x;
			i = up;
		}
	} else if (count > t->len[0]) {
		t->sum += count - t->len[0];
		t->len[0] = count;
		top_sift(t, 0);
	}
	return 0;
}

/* Blocks the TFS_MAP_MAX largest free extents hold, at least 'enough'
 * (then perhaps fewer than they hold: the walk is skipped). */
static uint64_t top_blocks(struct tfs_fs *fs, uint64_t enough)
{
	struct top *t;
	uint64_t sum;

	if (tfs_alloc_largest(fs->alloc) >= enough)
		return enough;
	t = calloc(1, sizeof(*t));
	if (!t)
		return 0;
	tfs_alloc_walk(fs->alloc, top_add, t);
	sum = t->sum;
	free(t);
	return sum;
}

int tfs_txn_ckpt_fits(struct tfs_fs *fs, uint64_t more)
{
	uint64_t need = tfs_txn_reserve(fs, more);

	return top_blocks(fs, need) >= need ? 0 : -ENOSPC;
}

int tfs_txn_room_data(struct tfs_fs *fs, uint64_t blocks, uint64_t more)
{
	uint64_t need = tfs_txn_reserve(fs, more);

	if (blocks > UINT64_MAX - need ||
	    tfs_alloc_free_blocks(fs->alloc) < blocks + need)
		return -ENOSPC;
	/* a change without blocks: its checkpoint must fit the map now */
	return blocks ? 0 : tfs_txn_ckpt_fits(fs, more);
}

int tfs_txn_room(struct tfs_fs *fs, uint64_t more)
{
	return tfs_txn_room_data(fs, 0, more);
}

uint64_t tfs_txn_avail(struct tfs_fs *fs)
{
	uint64_t free = tfs_alloc_free_blocks(fs->alloc) + fs->pend_blocks;
	uint64_t need = tfs_txn_reserve(fs, 0), top;

	if (free <= need)
		return 0;
	/* free space the map could not use is not available either */
	top = top_blocks(fs, free);
	if (top < need)
		return 0;
	return top - need < free - need ? top - need : free - need;
}

/* ===== freed blocks ===== */

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

/* A piece of an unmapped range, with the extents left mapping it: none
 * (pending, free once the transaction is durable) or some (J12: the
 * count goes into the transaction). */
static void unref(uint64_t pblk, uint64_t len, uint32_t count, void *arg)
{
	struct tfs_fs *fs = arg;

	if (count == 0)
		pend_add(fs, pblk, len);
	else
		tfs_txn_rec(fs,
			    tfs_rec_put_refcount(&fs->txn, pblk, len, count));
}

/* One extent fewer maps [pblk, pblk + len). */
static void release(struct tfs_fs *fs, uint64_t pblk, uint64_t len)
{
	if (!len)
		return;
	/*
	 * No memory to split a shared range: every count stays one too
	 * high, so the blocks stay used until the next mount counts the
	 * extents again (fs.c's recount()).  Lost space, never lost data.
	 */
	(void)tfs_refs_dec(tfs_meta_refs(fs->m), pblk, len, unref, fs);
}

void tfs_txn_freed(uint64_t pblk, uint64_t len, void *arg)
{
	struct freectx *c = arg;
	uint64_t end = pblk + len, kend = c->keep + c->keep_len;

	if (c->keep_len && pblk < kend && c->keep < end) {
		/* remapped in place (unwritten -> written): keep the overlap */
		if (pblk < c->keep)
			release(c->fs, pblk, c->keep - pblk);
		if (end > kend)
			release(c->fs, kend, end - kend);
		return;
	}
	release(c->fs, pblk, len);
}

/* Give the allocator the blocks of every transaction up to 'tag'. */
static void pend_release(struct tfs_fs *fs, uint64_t tag)
{
	size_t j = 0;

	for (size_t i = 0; i < fs->npend; i++) {
		struct pending *p = &fs->pend[i];

		if (p->tag <= tag) {
			/* J11: they wait for two checkpoints to be discarded */
			if (tfs_alloc_put_freed(fs->alloc, p->pblk, p->len) ==
			    0)
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

/* J7: the journal stopped: the file system enters the error state. */
static int journal_stopped(struct tfs_fs *fs, int rc)
{
	if (fs->j.err)
		tfs_fs_fail(fs, fs->j.err, "%s", fs->j.why);
	return rc;
}

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
 * once tfs_txn_release_pending() says so.
 */
int tfs_txn_checkpoint_locked(struct tfs_fs *fs, uint32_t flags, uint64_t *tag)
{
	int rc;

	*tag = NO_TAG;
	if (tfs_fs_failed(fs))
		return tfs_fs_failed(fs);
	*tag = fs->tag++;
	rc = tfs_journal_checkpoint(&fs->j, fs->m, flags);
	if (rc) {
		*tag = NO_TAG;
		fs->need_ckpt = 1;
		return journal_stopped(fs, rc);
	}
	txn_reset(fs);
	fs->need_ckpt = 0;
	fs->data_writes = 0;
	/* J11: durable, so the blocks freed before the previous one are no
	 * longer in any state load can reach */
	tfs_alloc_age(fs->alloc);
	return 0;
}

/*
 * Give the allocator the blocks freed by committed transactions up to
 * tag.  A write-back that mapped such a block before it was freed may
 * still be writing to it: wait for those first (the barrier), so a new
 * owner's data is never overwritten by an old one's.  Caller holds
 * neither lock (the write-back needs fs->lock to finish).
 */
void tfs_txn_release_pending(struct tfs_fs *fs, uint64_t tag)
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
int tfs_txn_commit_jlocked(struct tfs_fs *fs)
{
	struct tfs_buf t;
	uint64_t nrec, tag, next_ino, used;
	int rc;

	/* item of J7: the image changed under the mount */
	rc = tfs_fs_check_device(fs);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	if (fs->need_ckpt) {
		rc = tfs_txn_checkpoint_locked(fs, 0, &tag);
		pthread_mutex_unlock(&fs->lock);
		tfs_txn_release_pending(fs, tag);
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
		rc = tfs_txn_checkpoint_locked(fs, 0, &tag);
		pthread_mutex_unlock(&fs->lock);
		tfs_txn_release_pending(fs, tag);
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

	/* J1: flush the data first (flush_first), then the transaction */
	if (nrec)
		rc = tfs_journal_commit(&fs->j, t.p, t.len, nrec, next_ino,
					used, 1);
	else
		rc = tfs_journal_flush(&fs->j, "file data");
	tfs_buf_release(&t);
	journal_stopped(fs, rc);

	pthread_mutex_lock(&fs->lock);
	if (rc == -ENOSPC || rc == -ENOMEM) {
		/* no room in the journal: the checkpoint includes t */
		rc = tfs_txn_checkpoint_locked(fs, 0, &tag);
	} else if (rc) {
		fs->need_ckpt = 1;
		tag = NO_TAG;
	}
	pthread_mutex_unlock(&fs->lock);
	tfs_txn_release_pending(fs, tag);
	return rc;
}

int tfs_txn_commit(struct tfs_fs *fs)
{
	int rc;

	pthread_mutex_lock(&fs->jlock);
	/* read-only: tfs_fs_set_readonly() committed everything (under
	 * jlock) when it turned so; what changes after (an unlinked file's
	 * last close frees it) waits for read-write or tfs_fs_close() */
	rc = __atomic_load_n(&fs->ro, __ATOMIC_ACQUIRE)
		 ? 0
		 : tfs_txn_commit_jlocked(fs);
	pthread_mutex_unlock(&fs->jlock);
	return rc;
}

/* ===== discard ===== */

#define DISCARD_CHUNK	((64ull << 20) / BS) /* blocks out at once */
#define DISCARD_TICK_NS 1000000000ull	     /* per commit interval */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A checkpoint that moves the freed blocks one step towards discard
 * (J11), as any checkpoint does.  Caller holds jlock.
 */
static int age_checkpoint(struct tfs_fs *fs)
{
	uint64_t tag;
	int rc;

	rc = tfs_fs_check_device(fs);
	if (rc)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = tfs_txn_checkpoint_locked(fs, 0, &tag);
	pthread_mutex_unlock(&fs->lock);
	tfs_txn_release_pending(fs, tag);
	return rc;
}

/*
 * Discard the blocks that are ready (J11), a piece at a time: each piece
 * is taken out of the free space while it is discarded, so no write can
 * land on it meanwhile, then given back.  Each piece is out under jlock,
 * so no checkpoint runs while it is: a checkpoint takes its blocks from
 * the free space and its reserve (J10) counts the piece as free.  Stops
 * after max_ns (0: when none is left).  Only ready blocks in [lo, hi),
 * in free pieces at least minlen blocks long there, are discarded.  The
 * first error stops discarding for the mount and is logged once
 * (-EOPNOTSUPP: the device cannot).  Caller holds no lock.
 */
int tfs_txn_discard(struct tfs_fs *fs, uint64_t lo, uint64_t hi,
		    uint64_t minlen, uint64_t max_ns, uint64_t *bytes)
{
	uint64_t t0 = mono_ns(), s = 0, n = 0;
	int rc = 0, got;

	for (;;) {
		pthread_mutex_lock(&fs->jlock);
		pthread_mutex_lock(&fs->lock);
		rc = fs->discard_err ? fs->discard_err : tfs_fs_failed(fs);
		got = rc ? 0
			 : tfs_alloc_take_discard(fs->alloc, lo, hi, minlen,
						  DISCARD_CHUNK, &s, &n);
		pthread_mutex_unlock(&fs->lock);
		if (got <= 0) {
			pthread_mutex_unlock(&fs->jlock);
			if (got == 0)
				break;
			continue; /* no memory: those stay free as they are */
		}
		rc = tfs_dev_discard(fs->dev, s * BS, n * BS);
		pthread_mutex_lock(&fs->lock);
		/* no memory for the extent: lost space until the next mount */
		(void)tfs_alloc_put(fs->alloc, s, n);
		if (rc && !fs->discard_err)
			fs->discard_err = rc;
		else if (!rc)
			fs->discarded_bytes += n * BS;
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_unlock(&fs->jlock);
		if (rc) {
			if (fs->opts.log) {
				char msg[512];

				snprintf(
				    msg, sizeof(msg),
				    "%s: discard stopped: "
				    "%s; freed blocks stay allocated on the "
				    "device",
				    fs->path,
				    rc == -EOPNOTSUPP
					? "the device cannot discard"
					: strerror(-rc));
				fs->opts.log(msg);
			}
			break;
		}
		*bytes += n * BS;
		if (max_ns && mono_ns() - t0 >= max_ns)
			break;
	}
	return rc;
}

/*
 * -o discard, on each tick of the commit thread: discard what is ready,
 * and when enough waits for a checkpoint (no less than the checkpoint
 * writes, so discarding never costs more writes than it gives back
 * space), write one.
 */
static void discard_tick(struct tfs_fs *fs)
{
	uint64_t waiting, meta, bytes = 0;
	int stop;

	pthread_mutex_lock(&fs->lock);
	waiting = tfs_alloc_discard_waiting(fs->alloc);
	meta = tfs_meta_bytes(fs->m);
	stop = fs->discard_err || tfs_fs_failed(fs);
	pthread_mutex_unlock(&fs->lock);
	/* remounted read-only: nothing is written, discards wait too */
	if (stop || tfs_fs_is_readonly(fs))
		return;
	if (waiting && waiting * BS >= meta) {
		pthread_mutex_lock(&fs->jlock);
		if (!tfs_fs_is_readonly(fs)) /* it turns so under jlock */
			(void)age_checkpoint(fs);
		pthread_mutex_unlock(&fs->jlock);
	}
	(void)tfs_txn_discard(fs, 0, UINT64_MAX, 1, DISCARD_TICK_NS, &bytes);
}

int tfs_fs_trim(struct tfs_fs *fs, uint64_t start, uint64_t len,
		uint64_t minlen, uint64_t *bytes)
{
	uint64_t size = fs->j.sb.dev_blocks * BS, lo, hi, minblk;
	int rc;

	*bytes = 0;
	/* what ext4 and xfs refuse (xfstests generic/260, generic/288) */
	if (start >= size || len < BS || minlen > size)
		return -EINVAL;
	lo = start / BS;
	hi = len / BS > fs->j.sb.dev_blocks - lo ? fs->j.sb.dev_blocks
						 : lo + len / BS;
	/* a set's other members lie above member 0's blocks (format.h): a
	 * range to the end of member 0 goes on over all of them */
	if (fs->j.sb.nmembers > 1 && hi == fs->j.sb.dev_blocks)
		hi = UINT64_MAX;
	minblk = minlen ? (minlen + BS - 1) / BS : 1;
	if (tfs_fs_is_readonly(fs)) /* as ext4 answers FITRIM on ro */
		return -EROFS;
	pthread_mutex_lock(&fs->lock);
	rc = fs->discard_err ? fs->discard_err : tfs_fs_failed(fs);
	pthread_mutex_unlock(&fs->lock);
	if (rc)
		return rc;
	/*
	 * J11: the commit hands the blocks freed so far to the allocator,
	 * two checkpoints make them ready.  Fewer when nothing waits.
	 */
	pthread_mutex_lock(&fs->jlock);
	rc = tfs_fs_is_readonly(fs) ? -EROFS : tfs_txn_commit_jlocked(fs);
	for (int i = 0; i < 2 && !rc; i++) {
		uint64_t waiting;

		pthread_mutex_lock(&fs->lock);
		waiting = tfs_alloc_discard_waiting(fs->alloc);
		pthread_mutex_unlock(&fs->lock);
		if (!waiting)
			break;
		rc = age_checkpoint(fs);
	}
	pthread_mutex_unlock(&fs->jlock);
	if (!rc)
		rc = tfs_txn_discard(fs, lo, hi, minblk, 0, bytes);
	return rc;
}

void *tfs_txn_thread(void *arg)
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
		(void)tfs_txn_commit(fs);
		if (fs->opts.discard)
			discard_tick(fs);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}
