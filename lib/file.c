/*
 * file.c: file data: open, release, read, write, truncate, fallocate,
 * fsync, and the device side of the cache (cache.c calls back here to
 * fill, read and write back chunks).  How long an inode lives, its
 * atime and its stale mark are inode.c's.
 *
 * Locks.  File data I/O is done without fs->lock, under the inode's
 * io_lock: shared for reads, exclusive for writes, truncate and
 * fallocate, so a read never sees blocks that a truncate is giving away.
 * fs->lock is taken only for the in-memory work (the extent map, the
 * size).  A thread doing I/O holds a reference (tfs_inode_hold(), or an
 * open), so the inode lives while it works.
 *
 * Ordered data.  A write first gives the blocks it covers a place on the
 * device (holes become unwritten extents: ENOSPC now, never at
 * write-back), then copies the data into the cache's pool.  The
 * write-back puts the data on the device and only then, under fs->lock,
 * maps the unwritten blocks written and queues their EXTENT records; a
 * commit flushes the device before writing the transaction.  So after a
 * crash a file shows its own bytes or zeros, never a former file's.
 *
 * Write-back errors, as Linux's errseq_t reports them.  A failed
 * write-back cannot keep its data (the cache drops it); it counts
 * ip->wb_seq up, keeps its errno in ip->wb_errno and sets ip->wb_unseen.
 * Each open file keeps the count it last heard (tfs_wb_sample() at open)
 * and hears the error once, at its next write, fsync or flush, when the
 * count has moved: every open file hears of it, not just the first to
 * ask, so no writer's fsync() returns 0 over data that was lost.  A
 * failure nobody has heard yet is also told to the next file opened
 * (its sample starts one behind), and to callers with no open file.
 *
 * Zeros past EOF.  On the device, the bytes of a file's last block past
 * its size are always zero: writes zero them in the block they write,
 * truncate zeroes the tail of the new last block.  So growing a file
 * (truncate, a write further on) never uncovers old bytes.
 *
 * Shared blocks (format version 4, journal.c's J12).  tfs_copy_range()
 * over whole blocks clones: with both files' dirty data written back
 * and both io_locks held, the destination's extents are mapped onto the
 * source's device blocks and their counts go up, in one transaction, so
 * the clone is whole or absent after a crash.  Every path that writes
 * file blocks (tfs_write(), which buffered, O_DIRECT and mmap writes all
 * reach, and the zeroing of truncate and punch) first gives the blocks
 * it touches that are shared blocks of their own (own_blocks()): the
 * bytes that stay are copied, the blocks the write fills whole are
 * mapped unwritten.  A write-back therefore never writes a shared block,
 * and the cache never needs to know about sharing.  If the write then
 * fails to reach the cache (a device read error filling its first or
 * last block), its whole blocks read as zeros, as if written with them.
 */
#include "fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_SIZE (1ull << 56)
#define WB_ERRNO_MAX  0xfffu   /* ip->wb_errno's 12 bits */
#define WB_SEQ_MASK   0x7ffffu /* ip->wb_seq's 19 bits */

/* ===== file data ===== */

/* A piece of a block range: mapped (written or unwritten), a hole, or
 * blocks newly allocated for it. */
enum {
	SEG_HOLE,
	SEG_WRITTEN,
	SEG_UNWRITTEN,
	SEG_NEW
};

struct seg {
	uint64_t lblk, pblk, len;
	int kind;
};

struct segs {
	struct seg *s;
	size_t n, cap;
};

static int segs_add(struct segs *v, uint64_t lblk, uint64_t pblk, uint64_t len,
		    int kind)
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
		int kind = !mapped			 ? SEG_HOLE
			   : e.flags & TFS_EXT_UNWRITTEN ? SEG_UNWRITTEN
							 : SEG_WRITTEN;
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

/*
 * Up to *cnt new blocks for file blocks lblk.. of ip, from goal if it is
 * free.  On a set (format.h) a file's blocks go to the members in turn,
 * stripe_blocks at a time: stripe k of inode ino to member (k + ino) mod
 * n, continuing the same member's previous stripe of the file where it
 * can; a member with no room left passes the stripe to the next one that
 * has some.  So a run never crosses a stripe unit.  Caller holds
 * fs->lock.
 */
static int alloc_run(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t lblk,
		     uint64_t goal, uint64_t *start, uint64_t *cnt)
{
	const struct tfs_super *sb = &fs->j.sb;
	uint32_t n = sb->nmembers, m;
	uint64_t su = sb->stripe_blocks, k = lblk / su;
	int rc = -ENOSPC;

	if (n <= 1)
		return tfs_alloc_get(fs->alloc, goal, start, cnt);
	if (*cnt > su - lblk % su)
		*cnt = su - lblk % su;
	m = (uint32_t)((k + ip->a.ino) % n);
	/* at a stripe's start: where this member's last stripe of it ends */
	if (lblk % su == 0 && k >= n)
		goal = goal_for(ip, (k - n + 1) * su);
	for (uint32_t i = 0; i < n && rc == -ENOSPC; i++, m = (m + 1) % n) {
		uint64_t lo = (uint64_t)m << TFS_MEMBER_BITS;
		uint64_t want = *cnt;

		rc = tfs_alloc_get_in(fs->alloc, lo,
				      lo + (1ull << TFS_MEMBER_BITS), goal,
				      start, &want);
		if (!rc)
			*cnt = want;
	}
	return rc;
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

			rc = alloc_run(fs, ip, s.lblk, goal, &start, &cnt);
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
 * tfs_read_pin() returns when it copies. */
enum {
	TB_DEV,
	TB_OUT,
	TB_N
};

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
static int read_blocks(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t first,
		       uint64_t n, const uint64_t *want, uint8_t *buf)
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
	if (rc) /* past the end of an image truncated under us? */
		tfs_fs_check_device(fs);
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
	/* whole blocks into memory the device can take: no bounce */
	if (off % BS == 0 && len % BS == 0 && (uintptr_t)dst % BS == 0)
		return read_blocks(fs, ip, first, n, NULL, dst);
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
				rc = -EIO; /* the write allocated them */
			else
				rc = wbatch_add(
				    w, (uint8_t *)io->buf + (b - base) * BS, b,
				    s->pblk + (b - s->lblk), e - b,
				    s->kind == SEG_UNWRITTEN, i);
			b = e;
		}
	}
	free(v.s);
	return rc;
}

static void log_error(struct tfs_fs *fs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

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
	char where[TFS_WHERE_LEN];
	int rc;

	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < n; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, ios[i].ino);

		if (ip) /* else the file is gone: nothing to keep */
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
				ios[i].result = tfs_dev_writev(
				    fs->dev, w.iov + k, (int)(e - k));
			k = e;
		}
	}
	pthread_mutex_lock(&fs->lock);
	for (int i = 0; i < n; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, ios[i].ino);

		if (!ios[i].result || !ip)
			continue;
		fs->wb_errors++;
		ip->wb_errno = (uint32_t)-ios[i].result & WB_ERRNO_MAX;
		ip->wb_seq = (ip->wb_seq + 1) & WB_SEQ_MASK;
		ip->wb_unseen = 1;
		ip->stale = 1; /* a cache of the caller may hold the data */
		log_error(fs,
			  "write-back of inode %llu bytes %llu..%llu "
			  "failed%s: %s; the next write, fsync or close of "
			  "the file reports it",
			  (unsigned long long)ios[i].ino,
			  (unsigned long long)(ios[i].idx * fs->cs),
			  (unsigned long long)((ios[i].idx + 1) * fs->cs - 1),
			  tfs_dev_failure_where(fs->dev, where, sizeof(where)),
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
				 tfs_txn_freed, &c)) {
			/* no memory for the map: the next commit is a
			 * checkpoint, which fails loudly */
			fs->need_ckpt = 1;
			continue;
		}
		tfs_txn_rec(fs, tfs_rec_put_extent(&fs->txn, ip->a.ino, r->lblk,
						   r->pblk, r->len, 0));
	}
	if (w.n)
		fs->data_writes++;
	pthread_mutex_unlock(&fs->lock);
	free(w.iov);
	free(w.run);
	/* the failed chunks' data is gone, but the caller may still hold
	 * it: tell it (ip->stale covers its next open only) */
	for (int i = 0; i < n && fs->opts.changed; i++)
		if (ios[i].result)
			fs->opts.changed(fs->opts.changed_arg, ios[i].ino,
					 ios[i].idx * fs->cs, fs->cs);
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
		log_error(fs,
			  "cannot register the pinned pool with io_uring "
			  "(%s); writing back without fixed buffers",
			  strerror(-rc));
}

/* The cache's chunk size and its clean and dirty budgets, in chunks, for
 * the settings o. */
static void cache_geometry(const struct tfs_fs_opts *o,
			   struct tfs_cache_opts *co)
{
	co->chunk_size = o->block_size ? o->block_size : 1u << 20;
	co->cache_chunks = (size_t)(o->cache_bytes / co->chunk_size);
	co->pool_chunks =
	    o->pool_bytes ? (size_t)(o->pool_bytes / co->chunk_size) : 16;
	if (!co->pool_chunks)
		co->pool_chunks = 1;
}

uint64_t tfs_fs_cache_index_bytes(const struct tfs_fs_opts *o)
{
	struct tfs_cache_opts co = { 0 };

	cache_geometry(o, &co);
	return tfs_cache_index_bytes(co.chunk_size,
				     co.cache_chunks + co.pool_chunks);
}

int tfs_file_open_cache(struct tfs_fs *fs, char *err, size_t errlen)
{
	static const struct tfs_cache_ops ops = {
		.fill = cb_fill,
		.write = cb_write,
		.read_direct = cb_read_direct,
		.thread_init = cb_thread_init,
	};
	const struct tfs_fs_opts *o = &fs->opts;
	struct tfs_cache_opts co = { 0 };
	unsigned int qd;

	cache_geometry(o, &co);
	fs->cs = co.chunk_size;
	co.flushers = o->io_threads ? o->io_threads : 1;
	qd = o->queue_depth ? o->queue_depth : 8;
	/* queue_depth on each member: a batch spreads over all of them
	 * (stripes), so it takes queue_depth chunks per member */
	co.batch = qd * tfs_dev_members(fs->dev);
	co.pin = o->pin;
	tfs_dev_set_queue(fs->dev, fs->cs, qd);
	tfs_dev_set_submit(fs->dev, o->single_submit, !o->no_overlap);
	return tfs_cache_new(&co, &ops, fs, &fs->cache, err, errlen);
}

/* ===== reads and writes ===== */

/*
 * Hold ino for a read of up to *len bytes at off: ip held and its
 * io_lock shared (no truncate shrinks it meanwhile), *len cut at the end
 * of the file, *eof its size.  NULL with *rc set if ino cannot be read;
 * *len 0 past its end.
 */
static struct tfs_inode *read_begin(struct tfs_fs *fs, uint64_t ino,
				    size_t *len, uint64_t off, uint64_t *eof,
				    ssize_t *rc)
{
	struct tfs_inode *ip;
	int err = 0;

	ip = tfs_inode_hold(fs, ino, &err);
	if (!ip) {
		*rc = err;
		return NULL;
	}
	pthread_rwlock_rdlock(tfs_inode_io_lock(ip));
	pthread_mutex_lock(&fs->lock);
	*rc = 0;
	if (S_ISDIR(ip->a.mode))
		*rc = -EISDIR;
	else if (!S_ISREG(ip->a.mode))
		*rc = -EINVAL;
	else if (off >= ip->a.size)
		*len = 0;
	else if (*len > ip->a.size - off)
		*len = (size_t)(ip->a.size - off);
	*eof = ip->a.size;
	pthread_mutex_unlock(&fs->lock);
	if (*rc) {
		pthread_rwlock_unlock(tfs_inode_io_lock(ip));
		tfs_inode_unhold(fs, ip);
		return NULL;
	}
	return ip;
}

static void read_end(struct tfs_fs *fs, struct tfs_inode *ip)
{
	pthread_rwlock_unlock(tfs_inode_io_lock(ip));
	tfs_inode_unhold(fs, ip);
}

/* tfs_read() and tfs_read_around(): the inode held for the read, the
 * bytes from the cache (tfs_cache_read(), or with room bytes writable at
 * buf tfs_cache_read_into()). */
static ssize_t read_through(struct tfs_fs *fs, uint64_t ino, void *buf,
			    size_t len, size_t room, uint64_t off)
{
	ssize_t rc;
	uint64_t eof;
	struct tfs_inode *ip = read_begin(fs, ino, &len, off, &eof, &rc);

	if (!ip)
		return rc;
	if (len && room)
		rc = tfs_cache_read_into(fs->cache, ino, off, buf, len,
					 room > len ? room : len, eof);
	else if (len)
		rc = tfs_cache_read(fs->cache, ino, off, buf, len, eof);
	if (!rc) {
		rc = (ssize_t)len;
		__atomic_fetch_add(&fs->app_read_bytes, len, __ATOMIC_RELAXED);
	}
	read_end(fs, ip);
	return rc;
}

ssize_t tfs_read(struct tfs_fs *fs, uint64_t ino, void *buf, size_t len,
		 uint64_t off)
{
	return read_through(fs, ino, buf, len, 0, off);
}

ssize_t tfs_read_around(struct tfs_fs *fs, uint64_t ino, void *buf, size_t len,
			size_t room, uint64_t off)
{
	return read_through(fs, ino, buf, len, room ? room : len, off);
}

ssize_t tfs_read_pin(struct tfs_fs *fs, uint64_t ino, size_t len, uint64_t off,
		     struct tfs_read_pin *p)
{
	struct tfs_cache_piece pc[TFS_PIN_PIECES];
	struct tfs_inode *ip;
	uint64_t eof;
	ssize_t rc;
	int n;

	p->niov = 0;
	p->nref = 0;
	p->ip = NULL;
	ip = read_begin(fs, ino, &len, off, &eof, &rc);
	if (!ip)
		return rc;
	if (len == 0)
		goto out;
	n = tfs_cache_pin(fs->cache, ino, off, len, eof, pc, TFS_PIN_PIECES);
	if (n >= 0) {
		for (int i = 0; i < n; i++) {
			p->iov[i].iov_base = (void *)(uintptr_t)pc[i].data;
			p->iov[i].iov_len = pc[i].len;
			p->ref[i] = pc[i].ref;
		}
		p->niov = n;
		p->nref = (unsigned int)n;
	} else if (n == -E2BIG || n == -ENOBUFS) {
		/* too many chunks, or no room in the cache: a copy */
		uint8_t *b = tbuf_get(TB_OUT, len);

		rc = b ? tfs_cache_read(fs->cache, ino, off, b, len, eof)
		       : -ENOMEM;
		p->iov[0].iov_base = b;
		p->iov[0].iov_len = len;
		p->niov = 1;
	} else {
		rc = n;
	}
	if (rc) {
		if (p->nref) /* not reached: a pin fails whole */
			tfs_cache_unpin(fs->cache, p->ref, p->nref);
		p->niov = 0;
		p->nref = 0;
		read_end(fs, ip);
		return rc;
	}
out:
	__atomic_fetch_add(&fs->app_read_bytes, len, __ATOMIC_RELAXED);
	p->ip = ip;
	return (ssize_t)len;
}

void tfs_read_unpin(struct tfs_fs *fs, struct tfs_read_pin *p)
{
	if (!p->ip)
		return;
	tfs_cache_unpin(fs->cache, p->ref, p->nref);
	read_end(fs, p->ip);
	p->ip = NULL;
	p->nref = 0;
	p->niov = 0;
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
	if (!rc) {
		uint64_t holes = 0;

		for (size_t i = 0; i < v.n; i++)
			if (v.s[i].kind == SEG_HOLE)
				holes += v.s[i].len;
		/* J10: the next checkpoint keeps its room */
		rc = tfs_txn_room_data(fs, holes,
				       (v.n + 2) * TFS_REC_SIZE_EXTENT);
	}
	if (!rc)
		rc = allocate_holes(fs, ip, &v);
	/* J10: and the next checkpoint still fits the map's pieces */
	if (!rc && tfs_txn_ckpt_fits(fs, (v.n + 2) * TFS_REC_SIZE_EXTENT)) {
		unallocate(fs, &v);
		for (size_t i = 0; i < v.n; i++)
			if (v.s[i].kind == SEG_NEW)
				v.s[i].kind = SEG_HOLE;
		rc = -ENOSPC;
	}
	if (rc == -ENOSPC && !retried && pending_blocks(fs)) {
		pthread_mutex_unlock(&fs->lock);
		retried = 1;
		tfs_txn_commit(fs);
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
		tfs_txn_rec(fs, tfs_rec_put_extent(&fs->txn, ip->a.ino, s->lblk,
						   s->pblk, s->len,
						   TFS_EXT_UNWRITTEN));
	}
	pthread_mutex_unlock(&fs->lock);
	free(v.s);
	return rc;
}

/*
 * The error of a failed write-back that the open file whose count is
 * *seen (NULL: a caller with no open file) has not heard yet, or 0; it
 * has heard it after.  Caller holds fs->lock.
 */
static int wb_check(struct tfs_inode *ip, uint32_t *seen)
{
	if (seen ? *seen == ip->wb_seq : !ip->wb_unseen)
		return 0;
	if (seen)
		*seen = ip->wb_seq;
	ip->wb_unseen = 0;
	return ip->wb_errno ? -(int)ip->wb_errno : -EIO;
}

static int take_wb_err(struct tfs_fs *fs, uint64_t ino, uint32_t *seen)
{
	struct tfs_inode *ip;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		rc = wb_check(ip, seen);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

uint32_t tfs_wb_sample(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	uint32_t s = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip)
		s = (ip->wb_seq - ip->wb_unseen) & WB_SEQ_MASK;
	pthread_mutex_unlock(&fs->lock);
	return s;
}

/* ===== shared blocks: copy-on-write and clones ===== */

/* tfs_refs_inc()'s report: the new count goes into the transaction. */
static void ref_rec(uint64_t pblk, uint64_t len, uint32_t count, void *arg)
{
	struct tfs_fs *fs = arg;

	tfs_txn_rec(fs, tfs_rec_put_refcount(&fs->txn, pblk, len, count));
}

/* A piece of a file on shared blocks, and the blocks it moves to. */
struct cow {
	uint64_t lblk, oldp, newp, len;
};

struct cows {
	struct cow *c;
	size_t n, cap;
};

static int cows_add(struct cows *v, struct cow c)
{
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 8;
		struct cow *n = realloc(v->c, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->c = n;
		v->cap = nc;
	}
	v->c[v->n++] = c;
	return 0;
}

static void cows_give_back(struct tfs_fs *fs, struct cows *v, size_t from)
{
	for (size_t i = from; i < v->n; i++)
		if (v->c[i].newp)
			tfs_alloc_put(fs->alloc, v->c[i].newp, v->c[i].len);
}

/*
 * The shared blocks among [first, first + n) of ip, each given new
 * blocks of its own in v.  Caller holds fs->lock.  -ENOSPC leaves
 * nothing allocated.
 */
static int cow_plan(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t first,
		    uint64_t n, struct cows *v)
{
	struct tfs_refs *refs = tfs_meta_refs(fs->m);
	struct segs sg = { 0 };
	uint64_t need = 0;
	int rc = map_range(ip, first, n, &sg);

	for (size_t i = 0; i < sg.n && !rc; i++) {
		struct seg *s = &sg.s[i];

		for (uint64_t b = s->lblk; b < s->lblk + s->len && !rc;) {
			uint64_t run, k, p = s->pblk + (b - s->lblk);
			uint32_t cnt;

			if (s->kind != SEG_WRITTEN)
				break;
			cnt = tfs_refs_get(refs, p, &run);
			k = run < s->lblk + s->len - b ? run
						       : s->lblk + s->len - b;
			if (cnt > 1) {
				rc = cows_add(v, (struct cow){ b, p, 0, k });
				need += k;
			}
			b += k;
		}
	}
	free(sg.s);
	if (rc || !v->n)
		return rc;
	/* J10: up to three extents a piece (the copied blocks at its ends) */
	rc = tfs_txn_room_data(fs, need, (3 * v->n + 2) * TFS_REC_SIZE_EXTENT);
	for (size_t i = 0; i < v->n && !rc; i++) {
		struct cow *c = &v->c[i];
		uint64_t start, cnt = c->len;

		rc = alloc_run(fs, ip, c->lblk, goal_for(ip, c->lblk), &start,
			       &cnt);
		if (rc)
			break;
		if (cnt < c->len) {
			/* the rest of the piece gets blocks of its own */
			struct cow rest = { c->lblk + cnt, c->oldp + cnt, 0,
					    c->len - cnt };

			c->len = cnt;
			rc = cows_add(v, rest);
			c = &v->c[i]; /* v may have moved */
			if (rc) {
				tfs_alloc_put(fs->alloc, start, cnt);
				break;
			}
		}
		c->newp = start;
	}
	if (!rc && tfs_txn_ckpt_fits(fs, (3 * v->n + 2) * TFS_REC_SIZE_EXTENT))
		rc = -ENOSPC;
	if (rc) {
		cows_give_back(fs, v, 0);
		v->n = 0;
	}
	return rc;
}

/* Map blocks lblk.. of ip to new blocks pblk.. with flags, in place of
 * the shared ones (J12: their counts go down).  Caller holds fs->lock. */
static int cow_map(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t lblk,
		   uint64_t pblk, uint64_t len, uint32_t flags)
{
	struct freectx fc = { fs, 0, 0 };
	int rc =
	    tfs_meta_map(fs->m, ip, lblk, pblk, len, flags, tfs_txn_freed, &fc);

	if (!rc)
		tfs_txn_rec(fs, tfs_rec_put_extent(&fs->txn, ip->a.ino, lblk,
						   pblk, len, flags));
	return rc;
}

/*
 * Copy-on-write, before blocks [first, first + n) of ip are written:
 * each block that other extents share gets a block of its own, so the
 * write never reaches a block another file (or another part of this
 * one) still maps.  The blocks whose old bytes partly stay (keep: 1 the
 * first block, 2 the last) are copied to their new place first and
 * mapped written; the others are mapped unwritten, since the write
 * fills them whole (until its write-back they read as zeros from the
 * device, as a new file's blocks do: the cache holds the data).  A
 * file system that shares nothing pays one test.  Caller holds ip's
 * io_lock exclusively.
 */
static int own_blocks(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t first,
		      uint64_t n, int keep)
{
	uint64_t last = first + n - 1;
	struct cows v = { 0 };
	int rc, retried = 0;

again:
	pthread_mutex_lock(&fs->lock);
	if (!tfs_refs_count(tfs_meta_refs(fs->m))) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	v.n = 0;
	rc = cow_plan(fs, ip, first, n, &v);
	if (rc == -ENOSPC && !retried && pending_blocks(fs)) {
		pthread_mutex_unlock(&fs->lock);
		retried = 1;
		tfs_txn_commit(fs);
		goto again;
	}
	pthread_mutex_unlock(&fs->lock);
	/* the old bytes that stay, copied outside the lock */
	for (size_t i = 0; i < v.n && !rc; i++) {
		struct cow *c = &v.c[i];
		uint64_t b[2] = { first, last };

		for (int k = 0; k < 2 && !rc; k++) {
			uint8_t *buf;

			if (!(keep & (1 << k)) || b[k] < c->lblk ||
			    b[k] >= c->lblk + c->len)
				continue;
			if (k && first == last && (keep & 1))
				continue; /* the one block, copied already */
			buf = tbuf_get(TB_DEV, BS);
			rc = buf ? tfs_dev_read(fs->dev, buf, BS,
						(c->oldp + b[k] - c->lblk) * BS)
				 : -ENOMEM;
			if (!rc)
				rc = tfs_dev_write(fs->dev, buf, BS,
						   (c->newp + b[k] - c->lblk) *
						       BS);
		}
	}
	pthread_mutex_lock(&fs->lock);
	if (rc)
		cows_give_back(fs, &v, 0); /* a copy failed: nothing mapped */
	for (size_t i = 0; i < v.n && !rc; i++) {
		struct cow *c = &v.c[i];
		uint64_t end = c->lblk + c->len;

		/* pieces of equal flags: copied blocks written */
		for (uint64_t b = c->lblk; b < end && !rc;) {
			int copied = ((keep & 1) && b == first) ||
				     ((keep & 2) && b == last);
			uint64_t e = b + 1;

			if (!copied)
				while (e < end && !((keep & 2) && e == last))
					e++;
			rc = cow_map(fs, ip, b, c->newp + (b - c->lblk), e - b,
				     copied ? 0 : TFS_EXT_UNWRITTEN);
			if (rc) {
				/* the blocks of this piece not mapped yet,
				 * and every later piece, go back */
				tfs_alloc_put(fs->alloc,
					      c->newp + (b - c->lblk), end - b);
				c->newp = 0;
				cows_give_back(fs, &v, i + 1);
			}
			b = e;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	free(v.c);
	return rc;
}

ssize_t tfs_write(struct tfs_fs *fs, uint64_t ino, const void *buf, size_t len,
		  uint64_t off, uint32_t *wb_seen)
{
	struct tfs_inode *ip;
	uint64_t end = off + len;
	int rc = 0;

	if (len == 0)
		return 0;
	if (end > MAX_FILE_SIZE || end < off)
		return -EFBIG;
	rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	ip = tfs_inode_hold(fs, ino, &rc);
	if (!ip)
		return rc;
	pthread_rwlock_wrlock(tfs_inode_io_lock(ip));
	pthread_mutex_lock(&fs->lock);
	if (!S_ISREG(ip->a.mode)) {
		rc = S_ISDIR(ip->a.mode) ? -EISDIR : -EINVAL;
	} else {
		rc = wb_check(ip, wb_seen);
	}
	pthread_mutex_unlock(&fs->lock);
	if (!rc)
		rc = own_blocks(fs, ip, off / BS, (end - 1) / BS - off / BS + 1,
				(off % BS ? 1 : 0) | (end % BS ? 2 : 0));
	if (!rc)
		rc = alloc_unwritten(fs, ip, off / BS,
				     (end - 1) / BS - off / BS + 1);
	if (!rc)
		rc = tfs_cache_write(fs->cache, ino, off, buf, len);
	if (!rc) {
		pthread_mutex_lock(&fs->lock);
		if (end > ip->a.size)
			ip->a.size = end;
		tfs_txn_touch(fs, ip, 1);
		pthread_mutex_unlock(&fs->lock);
		__atomic_fetch_add(&fs->app_write_bytes, len, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(tfs_inode_io_lock(ip));
	tfs_inode_unhold(fs, ip);
	return rc ? rc : (ssize_t)len;
}

/* The bytes of a copy, through the cache: a piece of at most 1 MiB at a
 * time, at most TFS_COPY_MAX in all. */
static ssize_t copy_bytes(struct tfs_fs *fs, uint64_t ino_in, uint64_t off_in,
			  uint64_t ino_out, uint64_t off_out, size_t len,
			  uint32_t *wb_seen)
{
	size_t piece = 1u << 20, done = 0;
	ssize_t rc = 0;
	uint8_t *b;

	if (len > TFS_COPY_MAX)
		len = TFS_COPY_MAX;
	if (len < piece)
		piece = len ? len : 1;
	b = tbuf_get(TB_OUT, piece);
	if (!b)
		return -ENOMEM;
	while (done < len) {
		size_t want = len - done < piece ? len - done : piece;
		ssize_t n = tfs_read(fs, ino_in, b, want, off_in + done);

		if (n <= 0) {
			rc = n;
			break;
		}
		rc = tfs_write(fs, ino_out, b, (size_t)n, off_out + done,
			       wb_seen);
		if (rc < 0)
			break;
		done += (size_t)n;
		if ((size_t)n < want)
			break; /* the source's end */
	}
	__atomic_fetch_add(&fs->copy_bytes, done, __ATOMIC_RELAXED);
	return done ? (ssize_t)done : rc;
}

/*
 * Map blocks [bout, bout + n) of out onto the device blocks that
 * [bin, bin + n) of in maps (J12: each one's count one up, in the same
 * transaction as the extents); what out had there is unmapped first,
 * and in's holes and unwritten blocks become holes of out.  Caller
 * holds fs->lock and both io_locks, and has written back both files.
 */
int tfs_file_share(struct tfs_fs *fs, struct tfs_inode *in, uint64_t bin,
		   struct tfs_inode *out, uint64_t bout, uint64_t n)
{
	struct tfs_refs *refs = tfs_meta_refs(fs->m);
	struct freectx fc = { fs, 0, 0 };
	struct segs v = { 0 };
	int rc = map_range(in, bin, n, &v);

	if (!rc)
		rc = tfs_txn_room(fs, (v.n + 1) * (TFS_REC_SIZE_EXTENT +
						   2 * TFS_REC_SIZE_REFCOUNT));
	if (!rc)
		rc = tfs_meta_unmap(fs->m, out, bout, n, tfs_txn_freed, &fc);
	if (!rc)
		tfs_txn_rec(fs,
			    tfs_rec_put_punch(&fs->txn, out->a.ino, bout, n));
	for (size_t i = 0; i < v.n && !rc; i++) {
		struct seg *s = &v.s[i];
		uint64_t at = bout + (s->lblk - bin);

		if (s->kind != SEG_WRITTEN)
			continue;
		rc = tfs_refs_inc(refs, s->pblk, s->len, ref_rec, fs);
		if (rc)
			break;
		rc = tfs_meta_map(fs->m, out, at, s->pblk, s->len, 0, NULL,
				  NULL);
		if (rc) {
			tfs_txn_freed(s->pblk, s->len, &fc); /* count back */
			break;
		}
		tfs_txn_rec(fs, tfs_rec_put_extent(&fs->txn, out->a.ino, at,
						   s->pblk, s->len, 0));
	}
	free(v.s);
	return rc;
}

/* A clone of n whole blocks: [bin, ..) of ino_in onto [bout, ..) of
 * ino_out.  0 or -errno. */
static int clone_blocks(struct tfs_fs *fs, uint64_t ino_in, uint64_t bin,
			uint64_t ino_out, uint64_t bout, uint64_t n)
{
	struct tfs_inode *in, *out;
	pthread_rwlock_t *lin, *lout;
	int rc = tfs_fs_may_change(fs); /* J7 */

	if (rc)
		return rc;
	in = tfs_inode_hold(fs, ino_in, &rc);
	if (!in)
		return rc;
	out = ino_out == ino_in ? in : tfs_inode_hold(fs, ino_out, &rc);
	if (!out) {
		tfs_inode_unhold(fs, in);
		return rc;
	}
	/* two io_locks: the lower inode number first */
	lin = tfs_inode_io_lock(in);
	lout = tfs_inode_io_lock(out);
	if (in == out) {
		pthread_rwlock_wrlock(lout);
	} else if (ino_in < ino_out) {
		pthread_rwlock_rdlock(lin);
		pthread_rwlock_wrlock(lout);
	} else {
		pthread_rwlock_wrlock(lout);
		pthread_rwlock_rdlock(lin);
	}
	pthread_mutex_lock(&fs->lock);
	if (S_ISDIR(in->a.mode) || S_ISDIR(out->a.mode))
		rc = -EISDIR;
	else if (!S_ISREG(in->a.mode) || !S_ISREG(out->a.mode))
		rc = -EINVAL;
	else if (in == out && bin < bout + n && bout < bin + n)
		rc = -EINVAL; /* overlapping ranges of one file */
	pthread_mutex_unlock(&fs->lock);
	if (!rc) {
		/* the device is the truth for both ranges from here on */
		tfs_cache_sync(fs->cache, ino_in);
		if (out != in)
			tfs_cache_sync(fs->cache, ino_out);
		tfs_cache_drop(fs->cache, ino_out, bout * BS / fs->cs,
			       ((bout + n) * BS - 1) / fs->cs + 1);
		pthread_mutex_lock(&fs->lock);
		rc = tfs_file_share(fs, in, bin, out, bout, n);
		if (!rc) {
			if ((bout + n) * BS > out->a.size)
				out->a.size = (bout + n) * BS;
			tfs_txn_touch(fs, out, 1);
		}
		pthread_mutex_unlock(&fs->lock);
	}
	if (in != out)
		pthread_rwlock_unlock(lin);
	pthread_rwlock_unlock(lout);
	if (out != in)
		tfs_inode_unhold(fs, out);
	tfs_inode_unhold(fs, in);
	return rc;
}

ssize_t tfs_copy_range(struct tfs_fs *fs, uint64_t ino_in, uint64_t off_in,
		       uint64_t ino_out, uint64_t off_out, size_t len,
		       uint32_t *wb_seen)
{
	uint64_t size = 0, head, mid;
	struct tfs_inode *ip;
	ssize_t n = 0;
	int rc;

	if (fs->j.sb.version != TFS_VERSION || off_in % BS != off_out % BS ||
	    len < BS)
		return copy_bytes(fs, ino_in, off_in, ino_out, off_out, len,
				  wb_seen);
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino_in);
	if (ip)
		size = ip->a.size;
	pthread_mutex_unlock(&fs->lock);
	if (off_in >= size)
		return copy_bytes(fs, ino_in, off_in, ino_out, off_out, len,
				  wb_seen); /* its errors, or 0 */
	if (len > size - off_in)
		len = size - off_in;
	head = (BS - off_in % BS) % BS;
	if (len < head + BS)
		return copy_bytes(fs, ino_in, off_in, ino_out, off_out, len,
				  wb_seen);
	mid = (len - head) / BS * BS;
	if (mid > TFS_CLONE_MAX)
		mid = TFS_CLONE_MAX;
	if (head) {
		n = copy_bytes(fs, ino_in, off_in, ino_out, off_out, head,
			       wb_seen);
		if (n < (ssize_t)head)
			return n;
	}
	rc = clone_blocks(fs, ino_in, (off_in + head) / BS, ino_out,
			  (off_out + head) / BS, mid / BS);
	if (rc)
		return head ? (ssize_t)head : rc;
	__atomic_fetch_add(&fs->clone_bytes, mid, __ATOMIC_RELAXED);
	if (head + mid == len || mid == TFS_CLONE_MAX)
		return (ssize_t)(head + mid);
	n = copy_bytes(fs, ino_in, off_in + head + mid, ino_out,
		       off_out + head + mid, len - head - mid, wb_seen);
	return (ssize_t)(head + mid) + (n > 0 ? n : 0);
}

/* Zero bytes [from, to) of file block lblk on the device, if the block
 * holds data.  Caller holds io_lock exclusively. */
static int zero_in_block(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t lblk,
			 size_t from, size_t to)
{
	struct tfs_extent e;
	uint8_t *b;
	int mapped, rc;

	rc = own_blocks(fs, ip, lblk, 1, 1); /* the bytes kept are copied */
	if (rc)
		return rc;
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
int tfs_file_truncate(struct tfs_fs *fs, struct tfs_inode *ip, uint64_t size)
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
		tfs_cache_drop(fs->cache, ip->a.ino, size / fs->cs, UINT64_MAX);
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
					    tfs_txn_freed, &c);
			if (!rc)
				tfs_txn_rec(fs, tfs_rec_put_punch(
						    &fs->txn, ip->a.ino, keep,
						    UINT64_MAX - keep));
		}
	}
	if (!rc) {
		ip->a.size = size;
		tfs_txn_touch(fs, ip, 1);
	}
	pthread_mutex_unlock(&fs->lock);
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
	} else if (!S_ISDIR(ip->a.mode) && (flags & O_DIRECTORY)) {
		rc = -ENOTDIR;
	} else {
		rc = tfs_inode_ref_get(ip);
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc || !(flags & O_TRUNC) || (flags & O_ACCMODE) == O_RDONLY ||
	    !S_ISREG(ip->a.mode))
		return rc;
	rc = tfs_fs_may_change(fs); /* J7 */
	pthread_rwlock_wrlock(tfs_inode_io_lock(ip));
	if (!rc)
		rc = tfs_file_truncate(fs, ip, 0);
	pthread_rwlock_unlock(tfs_inode_io_lock(ip));
	if (rc)
		tfs_release(fs, ino);
	return rc;
}

int tfs_flush(struct tfs_fs *fs, uint64_t ino, uint32_t *wb_seen)
{
	if (!fs->opts.readonly)
		tfs_cache_start_flush(fs->cache, ino);
	return take_wb_err(fs, ino, wb_seen);
}

int tfs_release(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;

	if (!fs->opts.readonly)
		tfs_cache_start_flush(fs->cache, ino);
	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (ip && ip->opens)
		tfs_inode_ref_put(fs, ip);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int tfs_fsync(struct tfs_fs *fs, uint64_t ino, int datasync, uint32_t *wb_seen)
{
	int rc, wb;

	(void)datasync;
	if (fs->opts.readonly) /* remounted read-only after a failure? */
		return take_wb_err(fs, ino, wb_seen);
	if (tfs_fs_failed(fs)) /* J7: nothing is made durable any more */
		return tfs_fs_failed(fs);
	/* the file's data to the device, then one journal commit makes
	 * its metadata (and all else) durable */
	tfs_cache_sync(fs->cache, ino);
	rc = tfs_txn_commit(fs);
	wb = take_wb_err(fs, ino, wb_seen);
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
	tfs_txn_touch(fs, ip, !keep_size);
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
		end = size; /* past EOF there is nothing to zero */
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
	z = (off + len) / BS; /* whole blocks [a, z) go */
	if (z > a) {
		struct freectx c = { fs, 0, 0 };

		pthread_mutex_lock(&fs->lock);
		rc = tfs_meta_unmap(fs->m, ip, a, z - a, tfs_txn_freed, &c);
		if (!rc) {
			tfs_txn_rec(fs, tfs_rec_put_punch(&fs->txn, ip->a.ino,
							  a, z - a));
			tfs_txn_touch(fs, ip, 1);
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
	rc = tfs_fs_may_change(fs); /* J7 */
	if (rc)
		return rc;
	ip = tfs_inode_hold(fs, ino, &rc);
	if (!ip)
		return rc;
	if (!S_ISREG(ip->a.mode)) {
		rc = S_ISDIR(ip->a.mode) ? -EISDIR : -ENODEV;
		goto out;
	}
	pthread_rwlock_wrlock(tfs_inode_io_lock(ip));
	if (mode & FALLOC_FL_PUNCH_HOLE)
		rc = do_punch(fs, ip, off, len);
	else
		rc = do_allocate(fs, ip, off, len,
				 !!(mode & FALLOC_FL_KEEP_SIZE));
	pthread_rwlock_unlock(tfs_inode_io_lock(ip));
out:
	tfs_inode_unhold(fs, ip);
	return rc;
}

int tfs_seek(struct tfs_fs *fs, uint64_t ino, uint64_t off, int hole,
	     uint64_t *out)
{
	struct tfs_inode *ip;
	uint64_t b, end;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	if (!ip) {
		rc = -ENOENT;
	} else if (!S_ISREG(ip->a.mode)) {
		rc = S_ISDIR(ip->a.mode) ? -EISDIR : -EINVAL;
	} else if (off >= ip->a.size) {
		rc = -ENXIO;
	} else {
		/* the first block at or after off that is what we look for:
		 * mapped (written, or placed and not yet written back) for
		 * data, unmapped for a hole */
		end = (ip->a.size + BS - 1) / BS;
		for (b = off / BS; b < end;) {
			struct tfs_extent e;

			if (tfs_extmap_lookup(&ip->map, b, &e) != !!hole)
				break;
			b = e.len < end - b ? b + e.len : end;
		}
		if (b < end)
			*out = b * BS > off ? b * BS : off;
		else if (hole)
			*out = ip->a.size; /* the hole at the end */
		else
			rc = -ENXIO; /* a hole up to the end */
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
