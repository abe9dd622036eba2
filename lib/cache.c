/*
 * cache.c: the RAM cache and the write-back pool (see cache.h).
 *
 * The arena is one anonymous mapping of nchunks x chunk_size bytes;
 * chunk i always uses bytes [i * chunk_size, (i + 1) * chunk_size), so a
 * chunk struct and its memory are found from one another.  Chunks in use
 * are in a hash table keyed by (ino, idx), and on a list of their inode's
 * chunks, whose head an open-addressing table keyed by ino holds: what
 * one file has in the cache (fsync, truncate, unlink, its stats) is found
 * in the time of its own chunks, not of the arena's, which at a large
 * max_in_cpu is tens of thousands.
 *
 * A chunk is in one state, moved under c->mu:
 *
 *   FREE  --read miss-->  CLEAN  --write-->  WAIT  --ready-->  READY
 *     ^                    ^  |                                  |
 *     |                    |  '--evicted (LRU)--> FREE           |
 *     |                    '-------- written back ----  FLUSH <--'
 *     '----------------- write-back failed (data dropped) ---'
 *
 * FREE chunks are on the free list, CLEAN ones on the LRU list (oldest
 * first), WAIT and READY on lists of their own (oldest first); FLUSH
 * chunks are owned by a flusher.  nclean counts CLEAN chunks, ndirty WAIT,
 * READY and FLUSH ones; ndirty <= pool_chunks always, and a writer that
 * would pass it waits.  Since nclean + ndirty <= nchunks, a chunk for
 * dirty data is always free or evictable unless readers pin every clean
 * one for a moment.
 *
 * Pins and flags.  wrefs and rrefs count writers and readers copying
 * into or out of a chunk without the lock.  A flusher takes only chunks
 * with no writer; a writer waits while a chunk is FLUSH; nobody evicts a
 * pinned chunk.  FILLING marks a chunk whose sectors are being read from
 * the device: others wait for it.  DEAD marks a chunk dropped from the
 * hash while busy (tfs_cache_forget): whoever unpins it last frees it.
 *
 * Ordering for fsync: each chunk remembers the sequence number of the
 * write that made it dirty (dirty_seq).  tfs_cache_sync() reads the
 * current sequence S and waits until no chunk of the inode is dirty with
 * dirty_seq <= S.  Writes cannot change a chunk while it is written back,
 * so a chunk that comes back clean holds nothing older than its flush.
 *
 * Invariants, checked by tfs_cache_check() (cache_check()):
 *   - each chunk is on exactly the list of its state: FREE on the free
 *     list, CLEAN on lru, WAIT on wait, READY on ready, FLUSH on none;
 *     nclean = lru.n, ndirty = wait.n + ready.n + FLUSH chunks, and
 *     ndirty <= pool_chunks, nclean + ndirty <= nchunks;
 *   - the free list holds the chunks used and given back, then, in index
 *     order, every chunk from 'fresh' on (never used);
 *   - a chunk in use is in the hash under (ino, idx) and on its inode's
 *     list unless DEAD; a DEAD one is CLEAN or FLUSH, out of both and busy
 *     (its last unpin frees it); a FREE one is nowhere, with no pins,
 *     flags or data; every inode's list is found from its slot in the
 *     inode table, holds only its chunks, and no slot is empty;
 *   - FILLING only with a pin (the filler's); no writer of a FLUSH chunk;
 *   - nvalid and ndirty count the bitmaps' bits, dirty sectors are valid,
 *     valid_sect and dirty_sect are their sums; dirty sectors only in a
 *     dirty state (or DEAD); a WAIT chunk nobody writes has some;
 *   - the wait list is in write order (dirty_seq rising).
 *
 * Built with TFS_CHECKS=1, the cache checks itself (under mu) each time
 * it lets go of mu, by unlocking or waiting, i.e. after each transition
 * and before anyone else can see it: the counters and bounds in O(1), and
 * in full each chunk moved by set_state() since the last check.  A full
 * walk of the arena, O(nchunks + hash size), runs at the points that are
 * O(nchunks) anyway (a sync of everything, free), when more than
 * CHECK_MOVED chunks moved at once, and every nchunks/CHECK_SHARE-th
 * check otherwise, so that its amortised cost stays CHECK_SHARE chunks'
 * worth per unlock however large the arena.  Measured (gcc -O2): a full
 * walk takes about 90 ns a chunk, 90 us for 1000 chunks of 1 MiB, so a
 * check costs about 1.5 us amortised, against the tens of microseconds of
 * a FUSE request; a walk after every transition would cost the 90 us.
 * A broken invariant aborts with the name of the function that let go
 * of mu.
 */
#include "cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "units.h"

enum {
	C_FREE,
	C_CLEAN,
	C_WAIT,
	C_READY,
	C_FLUSH
};

#define F_FILLING 0x1
#define F_DEAD	  0x2

#define CHECK_MOVED 8  /* moved chunks checked one by one */
#define CHECK_SHARE 16 /* chunks' worth of full walk per check */

struct chunk {
	struct chunk *hnext;	     /* hash chain */
	struct chunk *inext, *iprev; /* the chunks of its inode */
	struct chunk *prev, *next;   /* state list */
	uint64_t ino, idx;
	uint64_t dirty_seq;
	uint64_t dirty_at; /* ms, monotonic */
	uint32_t rrefs, wrefs;
	uint32_t nvalid, ndirty; /* sectors */
	uint8_t state, flags;
	uint64_t *valid, *dirty; /* bitmaps of words words */
};

struct list {
	struct chunk head; /* sentinel: head.next is oldest */
	size_t n;
};

struct flusher;

/* A slot of the inode table: ino 0 (no inode has it) marks it empty. */
struct ino_slot {
	uint64_t ino;
	struct chunk *head;
};

struct tfs_cache {
	pthread_mutex_t mu;
	pthread_cond_t cv_work; /* flushers: something to do */
	pthread_cond_t cv_done; /* a chunk stopped being busy, was
					   written back or dropped */
	struct tfs_cache_opts o;
	const struct tfs_cache_ops *ops;
	void *ctx;

	uint8_t *arena;
	size_t arena_bytes;
	int pinned;
	unsigned int nsect, words;
	size_t nchunks;
	struct chunk *chunks;
	uint64_t *bits;
	struct chunk **hash;
	size_t hmask;
	struct ino_slot *inos; /* linear probing, at most half full */
	size_t imask;
	struct chunk *free; /* singly linked through next */
	struct list lru, wait, ready;
	size_t nclean, ndirty;
	uint64_t seq;	       /* writes that dirtied a chunk */
	unsigned int pressure; /* writers waiting for space */
	int inl_busy;	       /* a thread flushes inline */

	/* prefaulting: chunks [0, fresh) have been used, [0, populated)
	 * have their pages; the populate thread keeps ahead chunks ahead */
	size_t fresh, populated, ahead;
	pthread_t populate_thr;
	int populate_started;
	pthread_cond_t cv_populate;

	/* flushers */
	pthread_t *thr;
	unsigned int nthr;
	struct flusher *fl;
	uint64_t *ticket; /* per flusher: batch in progress */
	uint64_t batch_seq;
	int stop;

	/* counters (mu) */
	uint64_t hits, misses, read_around, evictions, pool_waits;
	uint64_t pool_ms, pool_t; /* ndirty summed over each ms; last change */
	uint64_t valid_sect, dirty_sect;
	uint64_t flushed_bytes, flush_errors;

	/* TFS_CHECKS: chunks moved since the last check (more than
	 * CHECK_MOVED: all of them), and checks since the last full one */
	struct chunk *moved[CHECK_MOVED];
	size_t nmoved;
	size_t checks;
};

/* ===== small helpers ===== */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t *chunk_buf(struct tfs_cache *c, struct chunk *ch)
{
	return c->arena + (size_t)(ch - c->chunks) * c->o.chunk_size;
}

static int bit_get(const uint64_t *b, unsigned int i)
{
	return (int)((b[i / 64] >> (i % 64)) & 1);
}

static void bit_set(uint64_t *b, unsigned int i)
{
	b[i / 64] |= 1ull << (i % 64);
}

static void list_init(struct list *l)
{
	l->head.next = l->head.prev = &l->head;
	l->n = 0;
}

static void list_add_tail(struct list *l, struct chunk *ch)
{
	ch->prev = l->head.prev;
	ch->next = &l->head;
	l->head.prev->next = ch;
	l->head.prev = ch;
	l->n++;
}

static void list_del(struct list *l, struct chunk *ch)
{
	ch->prev->next = ch->next;
	ch->next->prev = ch->prev;
	ch->next = ch->prev = NULL;
	l->n--;
}

/* The list a chunk of this state lives on, or NULL. */
static struct list *list_of(struct tfs_cache *c, int state)
{
	switch (state) {
	case C_CLEAN:
		return &c->lru;
	case C_WAIT:
		return &c->wait;
	case C_READY:
		return &c->ready;
	default:
		return NULL;
	}
}

/* Add the pool's use since its last change to pool_ms (under mu). */
static void pool_tick(struct tfs_cache *c)
{
	uint64_t t = now_ms();

	c->pool_ms += c->ndirty * (t - c->pool_t);
	c->pool_t = t;
}

static void set_state(struct tfs_cache *c, struct chunk *ch, int state)
{
	struct list *from = list_of(c, ch->state), *to = list_of(c, state);
	int was_dirty = ch->state >= C_WAIT, dirty = state >= C_WAIT;

	if (was_dirty != dirty)
		pool_tick(c);

	if (from)
		list_del(from, ch);
	if (ch->state == C_CLEAN)
		c->nclean--;
	if (was_dirty && !dirty)
		c->ndirty--;
	if (state == C_CLEAN)
		c->nclean++;
	if (dirty && !was_dirty)
		c->ndirty++;
	ch->state = (uint8_t)state;
	if (to)
		list_add_tail(to, ch);
#if defined(TFS_CHECKS) && TFS_CHECKS
	if (c->nmoved < CHECK_MOVED)
		c->moved[c->nmoved] = ch;
	if (c->nmoved <= CHECK_MOVED)
		c->nmoved++;
#endif
}

static size_t hash_of(struct tfs_cache *c, uint64_t ino, uint64_t idx)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ idx * 0xc2b2ae3d27d4eb4full;

	return (size_t)((h ^ (h >> 29)) & c->hmask);
}

static struct chunk *lookup(struct tfs_cache *c, uint64_t ino, uint64_t idx)
{
	struct chunk *ch = c->hash[hash_of(c, ino, idx)];

	while (ch && (ch->ino != ino || ch->idx != idx))
		ch = ch->hnext;
	return ch;
}

static size_t ino_home(struct tfs_cache *c, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull;

	return (size_t)((h ^ (h >> 31)) & c->imask);
}

/* The slot of ino in the inode table, or NULL if it has no chunk. */
static struct ino_slot *ino_find(struct tfs_cache *c, uint64_t ino)
{
	for (size_t i = ino_home(c, ino);; i = (i + 1) & c->imask) {
		if (c->inos[i].ino == ino)
			return &c->inos[i];
		if (!c->inos[i].ino)
			return NULL;
	}
}

/* The first of ino's chunks in the hash (then ->inext), or NULL. */
static struct chunk *ino_first(struct tfs_cache *c, uint64_t ino)
{
	struct ino_slot *s = ino_find(c, ino);

	return s ? s->head : NULL;
}

/* Empty slot s, moving later slots of the same probe run back into the
 * gap, so that every inode stays reachable from its home slot. */
static void ino_slot_clear(struct tfs_cache *c, struct ino_slot *s)
{
	size_t i = (size_t)(s - c->inos), j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & c->imask;
		if (!c->inos[j].ino)
			break;
		k = ino_home(c, c->inos[j].ino);
		/* slot j may move to i if its home is not in (i, j] */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			c->inos[i] = c->inos[j];
			i = j;
		}
	}
	c->inos[i].ino = 0;
	c->inos[i].head = NULL;
}

/* Put ch in the hash and on its inode's list.  The table has a slot for
 * every chunk and as many again, so a free one is always found. */
static void hash_insert(struct tfs_cache *c, struct chunk *ch)
{
	size_t h = hash_of(c, ch->ino, ch->idx), i = ino_home(c, ch->ino);

	ch->hnext = c->hash[h];
	c->hash[h] = ch;
	while (c->inos[i].ino && c->inos[i].ino != ch->ino)
		i = (i + 1) & c->imask;
	c->inos[i].ino = ch->ino;
	ch->iprev = NULL;
	ch->inext = c->inos[i].head;
	if (ch->inext)
		ch->inext->iprev = ch;
	c->inos[i].head = ch;
}

static void hash_remove(struct tfs_cache *c, struct chunk *ch)
{
	struct chunk **pp = &c->hash[hash_of(c, ch->ino, ch->idx)];

	while (*pp && *pp != ch)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = ch->hnext;
	ch->hnext = NULL;
	if (ch->inext)
		ch->inext->iprev = ch->iprev;
	if (ch->iprev) {
		ch->iprev->inext = ch->inext;
	} else {
		struct ino_slot *s = ino_find(c, ch->ino);

		if (s && s->head == ch) {
			s->head = ch->inext;
			if (!s->head)
				ino_slot_clear(c, s);
		}
	}
	ch->inext = ch->iprev = NULL;
}

static int busy(const struct chunk *ch)
{
	return ch->rrefs || ch->wrefs || (ch->flags & F_FILLING) ||
	       ch->state == C_FLUSH;
}

/* ===== invariants ===== */

/* Is ch on the hash chain of its (ino, idx)? */
static int in_hash(struct tfs_cache *c, const struct chunk *ch)
{
	size_t n = 0;

	for (struct chunk *p = c->hash[hash_of(c, ch->ino, ch->idx)];
	     p && n <= c->nchunks; p = p->hnext, n++)
		if (p == ch)
			return 1;
	return 0;
}

/* One chunk's own invariants (see the top of the file).  0 or -EUCLEAN. */
static int check_chunk(struct tfs_cache *c, struct chunk *ch)
{
	int dead = ch->flags & F_DEAD, listed;
	uint32_t nv = 0, nd = 0;
	uint64_t tail = c->nsect % 64 ? ~0ull << (c->nsect % 64) : 0;

	if (ch->state > C_FLUSH || (ch->flags & ~(F_FILLING | F_DEAD)))
		return -EUCLEAN;
	for (unsigned int w = 0; w < c->words; w++) {
		if (ch->dirty[w] & ~ch->valid[w])
			return -EUCLEAN;
		nv += (uint32_t)__builtin_popcountll(ch->valid[w]);
		nd += (uint32_t)__builtin_popcountll(ch->dirty[w]);
	}
	if (nv != ch->nvalid || nd != ch->ndirty ||
	    (ch->valid[c->words - 1] & tail))
		return -EUCLEAN;
	if (ch->state == C_FREE)
		return ch->flags || ch->rrefs || ch->wrefs || ch->nvalid ||
			       ch->prev || ch->inext || ch->iprev ||
			       in_hash(c, ch)
			   ? -EUCLEAN
			   : 0;
	listed = ch->prev && ch->next && ch->prev->next == ch &&
		 ch->next->prev == ch;
	if (ch->state == C_FLUSH ? ch->prev || ch->next : !listed)
		return -EUCLEAN;
	if (dead ? in_hash(c, ch) || ch->inext || ch->iprev || !busy(ch) ||
		       (ch->state != C_CLEAN && ch->state != C_FLUSH)
		 : lookup(c, ch->ino, ch->idx) != ch ||
		       (ch->iprev ? ch->iprev->inext != ch
				  : ino_first(c, ch->ino) != ch))
		return -EUCLEAN;
	if (((ch->flags & F_FILLING) && !ch->rrefs && !ch->wrefs) ||
	    (ch->state == C_FLUSH && ch->wrefs))
		return -EUCLEAN;
	if ((ch->ndirty && ch->state < C_WAIT && !dead) ||
	    (ch->state == C_WAIT && !ch->ndirty && !ch->wrefs) ||
	    (ch->state >= C_WAIT && ch->dirty_seq > c->seq))
		return -EUCLEAN;
	return 0;
}

/* The counters against the lists and the bounds, in O(1). */
static int check_counts(struct tfs_cache *c)
{
	if (c->nclean != c->lru.n || c->wait.n + c->ready.n > c->ndirty ||
	    c->ndirty > c->o.pool_chunks ||
	    c->nclean + c->ndirty > c->nchunks || c->fresh > c->nchunks ||
	    c->dirty_sect > c->valid_sect)
		return -EUCLEAN;
	return 0;
}

/* Walk list l: every chunk in state, linked both ways, l->n of them; the
 * wait list in write order. */
static int check_list(struct tfs_cache *c, struct list *l, int state)
{
	struct chunk *prev = &l->head, *ch = l->head.next;
	size_t n = 0;

	for (; ch != &l->head; prev = ch, ch = ch->next) {
		if (!ch || n++ >= c->nchunks || ch->state != state ||
		    ch->prev != prev)
			return -EUCLEAN;
		if (state == C_WAIT && prev != &l->head &&
		    prev->dirty_seq >= ch->dirty_seq)
			return -EUCLEAN;
	}
	return l->head.prev == prev && n == l->n ? 0 : -EUCLEAN;
}

/* The free list: nfree FREE chunks, those from 'fresh' on last and in
 * index order. */
static int check_free(struct tfs_cache *c, size_t nfree)
{
	size_t n = 0, expect = c->fresh;

	for (struct chunk *ch = c->free; ch; ch = ch->next) {
		size_t i = (size_t)(ch - c->chunks);

		if (n++ >= c->nchunks || ch->state != C_FREE)
			return -EUCLEAN;
		if (i >= c->fresh ? i != expect++ : expect != c->fresh)
			return -EUCLEAN;
	}
	return n == nfree && expect == c->nchunks ? 0 : -EUCLEAN;
}

/* Every chunk, list and hash chain, and the sums: O(nchunks + hash). */
static int check_all(struct tfs_cache *c)
{
	size_t count[C_FLUSH + 1] = { 0 }, hashed = 0, n = 0;
	uint64_t vs = 0, ds = 0;

	for (size_t i = 0; i < c->nchunks; i++) {
		struct chunk *ch = &c->chunks[i];

		if (check_chunk(c, ch))
			return -EUCLEAN;
		count[ch->state]++;
		vs += ch->nvalid;
		ds += ch->ndirty;
		if (ch->state != C_FREE && !(ch->flags & F_DEAD))
			hashed++;
	}
	if (count[C_CLEAN] != c->nclean || vs != c->valid_sect ||
	    ds != c->dirty_sect ||
	    count[C_WAIT] + count[C_READY] + count[C_FLUSH] != c->ndirty)
		return -EUCLEAN;
	if (check_list(c, &c->lru, C_CLEAN) ||
	    check_list(c, &c->wait, C_WAIT) ||
	    check_list(c, &c->ready, C_READY) || check_free(c, count[C_FREE]))
		return -EUCLEAN;
	for (size_t h = 0; h <= c->hmask; h++)
		for (struct chunk *ch = c->hash[h]; ch; ch = ch->hnext)
			if (n++ >= hashed || hash_of(c, ch->ino, ch->idx) != h)
				return -EUCLEAN;
	if (n != hashed)
		return -EUCLEAN;
	/* the inode lists hold the hashed chunks, each once */
	n = 0;
	for (size_t i = 0; i <= c->imask; i++) {
		struct ino_slot *s = &c->inos[i];
		struct chunk *prev = NULL;

		if (!s->ino)
			continue;
		if (!s->head || ino_find(c, s->ino) != s)
			return -EUCLEAN;
		for (struct chunk *ch = s->head; ch; prev = ch, ch = ch->inext)
			if (n++ >= hashed || ch->ino != s->ino ||
			    ch->iprev != prev || ch->state == C_FREE ||
			    (ch->flags & F_DEAD))
				return -EUCLEAN;
	}
	return n == hashed ? 0 : -EUCLEAN;
}

/* Caller holds mu.  full: walk everything; else the counters, the chunks
 * moved since the last check, and everything once in a while. */
static int cache_check(struct tfs_cache *c, int full)
{
	size_t every = c->nchunks / CHECK_SHARE ? c->nchunks / CHECK_SHARE : 1;
	int rc = check_counts(c);

	if (++c->checks >= every || c->nmoved > CHECK_MOVED)
		full = 1;
	for (size_t i = 0; !rc && !full && i < c->nmoved; i++)
		rc = check_chunk(c, c->moved[i]);
	if (!rc && full) {
		c->checks = 0;
		rc = check_all(c);
	}
	c->nmoved = 0;
	return rc;
}

int tfs_cache_check(struct tfs_cache *c)
{
	int rc;

	pthread_mutex_lock(&c->mu);
	rc = cache_check(c, 1);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

#if defined(TFS_CHECKS) && TFS_CHECKS
static void cache_assert_ok(struct tfs_cache *c, int full, const char *fn)
{
	if (cache_check(c, full) == 0)
		return;
	fprintf(
	    stderr,
	    "tensorfs: cache invariants broken in %s(); this is a bug, please report it\n",
	    fn);
	abort();
}
#define CACHE_CHECKED(c, full) cache_assert_ok((c), (full), __func__)
#else
#define CACHE_CHECKED(c, full) ((void)0)
#endif

/* Let go of mu.  Every unlock and wait goes through these, so that a
 * checked build sees the cache as others are about to; macros, so that
 * a report names the function that let go. */
#define cache_unlock(c)                                                        \
	do {                                                                   \
		CACHE_CHECKED((c), 0);                                         \
		pthread_mutex_unlock(&(c)->mu);                                \
	} while (0)
#define cache_wait(c, cv)                                                      \
	do {                                                                   \
		CACHE_CHECKED((c), 0);                                         \
		pthread_cond_wait((cv), &(c)->mu);                             \
	} while (0)

/* Return a chunk to the free list, whatever it held. */
static void release(struct tfs_cache *c, struct chunk *ch)
{
	if (!(ch->flags & F_DEAD))
		hash_remove(c, ch);
	set_state(c, ch, C_FREE);
	c->valid_sect -= ch->nvalid;
	c->dirty_sect -= ch->ndirty;
	memset(ch->valid, 0, c->words * sizeof(uint64_t));
	memset(ch->dirty, 0, c->words * sizeof(uint64_t));
	ch->nvalid = ch->ndirty = 0;
	ch->flags = 0;
	ch->next = c->free;
	c->free = ch;
}

static struct chunk *pop_free(struct tfs_cache *c)
{
	struct chunk *ch = c->free;

	if (ch) {
		c->free = ch->next;
		ch->next = NULL;
		/* never-used chunks leave the free list in index order,
		 * after every chunk that was used and given back */
		if ((size_t)(ch - c->chunks) == c->fresh) {
			c->fresh++;
			if (c->populated < c->fresh + c->ahead)
				pthread_cond_signal(&c->cv_populate);
		}
	}
	return ch;
}

/* Evict the least recently used clean chunk that nobody holds, and hand
 * it over (off every list).  NULL if there is none. */
static struct chunk *evict_lru(struct tfs_cache *c)
{
	for (struct chunk *ch = c->lru.head.next; ch != &c->lru.head;
	     ch = ch->next) {
		if (busy(ch))
			continue;
		release(c, ch);
		c->evictions++;
		return pop_free(c);
	}
	return NULL;
}

/* A chunk for clean data, within the cache budget; NULL if none. */
static struct chunk *take_clean(struct tfs_cache *c)
{
	struct chunk *ch = NULL;

	if (!c->o.cache_chunks)
		return NULL;
	if (c->nclean < c->o.cache_chunks)
		ch = pop_free(c);
	return ch ? ch : evict_lru(c);
}

/* Evict clean chunks past the budget (those not in use). */
static void trim(struct tfs_cache *c)
{
	struct chunk *ch = c->lru.head.next;

	while (c->nclean > c->o.cache_chunks && ch != &c->lru.head) {
		struct chunk *next = ch->next;

		if (!busy(ch)) {
			release(c, ch);
			c->evictions++;
		}
		ch = next;
	}
}

static void use(struct tfs_cache *c, struct chunk *ch, uint64_t ino,
		uint64_t idx, int state)
{
	ch->ino = ino;
	ch->idx = idx;
	ch->flags = 0;
	ch->rrefs = ch->wrefs = 0;
	ch->state = C_FREE;
	hash_insert(c, ch);
	set_state(c, ch, state);
}

static void make_dirty(struct tfs_cache *c, struct chunk *ch)
{
	ch->dirty_seq = ++c->seq;
	ch->dirty_at = now_ms();
	set_state(c, ch, C_WAIT);
}

/* Unpin; the last one out of a dead chunk frees it. */
static void unpin(struct tfs_cache *c, struct chunk *ch, int writer)
{
	if (writer)
		ch->wrefs--;
	else
		ch->rrefs--;
	if (busy(ch))
		return;
	if (ch->flags & F_DEAD)
		release(c, ch);
	else if (ch->state == C_CLEAN && c->nclean > c->o.cache_chunks)
		trim(c);
	else if (ch->state == C_READY)
		pthread_cond_signal(&c->cv_work);
	pthread_cond_broadcast(&c->cv_done);
}

/* Fill the sectors in want (none of them valid) through ops->fill, with
 * the chunk marked FILLING and the lock dropped.  Caller pins ch. */
static int fill(struct tfs_cache *c, struct chunk *ch, uint64_t *want)
{
	int rc;

	ch->flags |= F_FILLING;
	cache_unlock(c);
	rc = c->ops->fill(c->ctx, ch->ino, ch->idx, chunk_buf(c, ch), want,
			  c->nsect);
	pthread_mutex_lock(&c->mu);
	ch->flags &= (uint8_t)~F_FILLING;
	if (!rc) {
		for (unsigned int w = 0; w < c->words; w++) {
			uint64_t add = want[w] & ~ch->valid[w];

			ch->valid[w] |= add;
			ch->nvalid += (uint32_t)__builtin_popcountll(add);
			c->valid_sect += (uint64_t)__builtin_popcountll(add);
		}
	}
	pthread_cond_broadcast(&c->cv_done);
	return rc;
}

/* ===== write-back ===== */

/*
 * Move ino's waiting chunks (all of them if ino is 0) to the ready list,
 * and wake the flushers if any moved.  Only then: a chunk already READY
 * woke them when it became so or when its last writer let go (unpin()),
 * and a close() of a file with nothing waiting (every close of a file
 * just created or only read) would otherwise wake every flusher for
 * nothing, two wake-ups a create (flush and release), about a third of
 * the daemon's CPU time in a loop of creates.
 */
static void promote(struct tfs_cache *c, uint64_t ino)
{
	struct chunk *ch = c->wait.head.next;
	int moved = 0;

	while (ch != &c->wait.head) {
		struct chunk *next = ch->next;

		if (!ino || ch->ino == ino) {
			set_state(c, ch, C_READY);
			moved = 1;
		}
		ch = next;
	}
	if (moved)
		pthread_cond_broadcast(&c->cv_work);
}

/* Promote chunks that waited long enough, or, under pressure, the oldest
 * ones.  Returns ms until the next one expires (or a default). */
static unsigned int promote_due(struct tfs_cache *c)
{
	uint64_t t = now_ms();
	unsigned int exp = c->o.expire_ms;

	while (c->wait.n) {
		struct chunk *ch = c->wait.head.next;

		if (t - ch->dirty_at < exp &&
		    !(c->pressure && c->ready.n < c->o.batch))
			return (unsigned int)(exp - (t - ch->dirty_at));
		set_state(c, ch, C_READY);
	}
	return exp;
}

struct flusher {
	struct tfs_cache *c;
	unsigned int id;
	struct tfs_cache_io *ios;
	struct chunk **chs;
};

/*
 * Take up to batch ready chunks nobody is writing to, write them back
 * through ops->write with the lock dropped, and settle them: clean, or
 * on failure dropped.  Caller holds mu.  Returns the chunks taken.
 */
static int flush_batch(struct tfs_cache *c, struct flusher *f)
{
	struct tfs_cache_io *ios = f->ios;
	struct chunk **chs = f->chs, *ch, *next;
	int n = 0;

	for (ch = c->ready.head.next;
	     ch != &c->ready.head && n < (int)c->o.batch; ch = next) {
		next = ch->next;
		if (ch->wrefs || (ch->flags & F_FILLING))
			continue; /* its unpin wakes us */
		set_state(c, ch, C_FLUSH);
		chs[n] = ch;
		ios[n].ino = ch->ino;
		ios[n].idx = ch->idx;
		ios[n].buf = chunk_buf(c, ch);
		ios[n].dirty = ch->dirty;
		ios[n].result = 0;
		n++;
	}
	if (!n)
		return 0;
	c->ticket[f->id] = ++c->batch_seq;
	cache_unlock(c);
	c->ops->write(c->ctx, ios, n);
	pthread_mutex_lock(&c->mu);
	c->ticket[f->id] = 0;
	for (int i = 0; i < n; i++) {
		ch = chs[i];
		if (ios[i].result) {
			/* the file system recorded the error for the file;
			 * the data cannot be kept */
			c->flush_errors++;
			if (ch->rrefs || ch->wrefs || (ch->flags & F_FILLING)) {
				/* a reader still copies or fills it: out
				 * of sight now, its last unpin frees it */
				if (!(ch->flags & F_DEAD))
					hash_remove(c, ch);
				ch->flags |= F_DEAD;
				set_state(c, ch, C_CLEAN);
				continue;
			}
			release(c, ch);
			continue;
		}
		c->flushed_bytes += (uint64_t)ch->ndirty * TFS_SECTOR;
		c->dirty_sect -= ch->ndirty;
		ch->ndirty = 0;
		memset(ch->dirty, 0, c->words * sizeof(uint64_t));
		set_state(c, ch, C_CLEAN);
		if ((ch->flags & F_DEAD) && !busy(ch))
			release(c, ch);
	}
	trim(c);
	pthread_cond_broadcast(&c->cv_done);
	return n;
}

/*
 * Before tfs_cache_start() there are no flusher threads: a thread that
 * must wait for write-back does it itself, one at a time.  Caller holds
 * mu.  Returns 1 if it wrote (or someone else is writing) something.
 */
static int flush_inline(struct tfs_cache *c)
{
	int n;

	if (c->nthr)
		return 0;
	if (c->inl_busy) {
		cache_wait(c, &c->cv_done);
		return 1;
	}
	c->inl_busy = 1;
	promote_due(c);
	n = flush_batch(c, &c->fl[c->o.flushers]);
	c->inl_busy = 0;
	pthread_cond_broadcast(&c->cv_done);
	return n > 0;
}

static void *flusher_main(void *arg)
{
	struct flusher *f = arg;
	struct tfs_cache *c = f->c;

	if (c->ops->thread_init)
		c->ops->thread_init(c->ctx, c->arena, c->arena_bytes);
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		unsigned int due = promote_due(c);
		struct timespec ts;

		if (flush_batch(c, f))
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += due / 1000;
		ts.tv_nsec += (long)(due % 1000 + 1) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		CACHE_CHECKED(c, 0);
		pthread_cond_timedwait(&c->cv_work, &c->mu, &ts);
	}
	cache_unlock(c);
	return NULL;
}

/*
 * A chunk's first use costs a page fault and a cleared page per 4 KiB,
 * on the writer's thread: in a first pass over the arena that is most of
 * a write's time.  This thread instead gives pages to the never-used
 * chunks just ahead of the writers, so memory still grows only as the
 * cache fills.  The window is POPULATE_AHEAD, or the pool if smaller:
 * a pool's worth, as it was, cleared up to a GiB more than a stream
 * used (2.9 GB resident after a 2 GiB write with the default 953 MiB
 * pool), and clearing is most of a first write's cost.  MADV_POPULATE_WRITE (Linux
 * 5.14) is safe while a writer uses the same pages; without it, nothing
 * is prefaulted.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define POPULATE_STEP  (32u << 20)
#define POPULATE_AHEAD (64u << 20)

static void *populate_main(void *arg)
{
	struct tfs_cache *c = arg;
	size_t step = POPULATE_STEP / c->o.chunk_size;

	if (!step)
		step = 1;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		size_t goal = c->fresh + c->ahead, from, n;

		if (goal > c->nchunks)
			goal = c->nchunks;
		if (c->populated >= goal) {
			cache_wait(c, &c->cv_populate);
			continue;
		}
		from = c->populated;
		n = goal - from < step ? goal - from : step;
		c->populated += n;
		cache_unlock(c);
		if (madvise(c->arena + from * c->o.chunk_size,
			    n * c->o.chunk_size, MADV_POPULATE_WRITE) < 0 &&
		    (errno == EINVAL || errno == ENOMEM)) {
			pthread_mutex_lock(&c->mu);
			break; /* an old kernel, or no memory: stop trying */
		}
		pthread_mutex_lock(&c->mu);
	}
	cache_unlock(c);
	return NULL;
}

/* ===== life ===== */

/* Slots of the hash and inode tables for n chunks: a power of two, at
 * least twice n, so that each table is at most half full. */
static size_t table_slots(size_t n)
{
	size_t slots = 1;

	while (slots < n * 2)
		slots <<= 1;
	return slots;
}

uint64_t tfs_cache_index_bytes(size_t chunk_size, size_t nchunks)
{
	size_t words = (chunk_size / TFS_SECTOR + 63) / 64;

	return (uint64_t)nchunks *
		   (sizeof(struct chunk) + 2 * words * sizeof(uint64_t)) +
	       (uint64_t)table_slots(nchunks) *
		   (sizeof(struct chunk *) + sizeof(struct ino_slot));
}

int tfs_cache_new(const struct tfs_cache_opts *o,
		  const struct tfs_cache_ops *ops, void *ctx,
		  struct tfs_cache **out, char *err, size_t errlen)
{
	struct tfs_cache *c;
	char a[32];
	size_t hsize;
	int rc = -ENOMEM;

	if (!o->chunk_size || o->chunk_size % TFS_SECTOR ||
	    o->chunk_size > TFS_CACHE_MAX_CHUNK || !o->pool_chunks ||
	    !o->flushers || !o->batch)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->o = *o;
	if (!c->o.expire_ms)
		c->o.expire_ms = 1000;
	c->ops = ops;
	c->ctx = ctx;
	c->nsect = (unsigned int)(o->chunk_size / TFS_SECTOR);
	c->words = (c->nsect + 63) / 64;
	c->nchunks = o->cache_chunks + o->pool_chunks;
	c->pool_t = now_ms();
	c->ahead = POPULATE_AHEAD / o->chunk_size;
	if (c->ahead > o->pool_chunks)
		c->ahead = o->pool_chunks;
	if (!c->ahead)
		c->ahead = 1;
	if (c->nchunks < o->pool_chunks ||
	    c->nchunks > SIZE_MAX / o->chunk_size) {
		snprintf(err, errlen,
			 "the cache and the pool are too large "
			 "for this machine's address space");
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv_work, NULL);
	pthread_cond_init(&c->cv_done, NULL);
	pthread_cond_init(&c->cv_populate, NULL);
	list_init(&c->lru);
	list_init(&c->wait);
	list_init(&c->ready);
	hsize = table_slots(c->nchunks);
	c->hmask = hsize - 1;
	c->hash = calloc(hsize, sizeof(*c->hash));
	c->imask = hsize - 1;
	c->inos = calloc(hsize, sizeof(*c->inos));
	c->chunks = calloc(c->nchunks, sizeof(*c->chunks));
	c->bits = calloc(c->nchunks * 2 * c->words, sizeof(uint64_t));
	if (!c->hash || !c->inos || !c->chunks || !c->bits) {
		snprintf(err, errlen, "no memory for the cache's index");
		goto fail;
	}
	c->arena_bytes = c->nchunks * o->chunk_size;
	c->arena = mmap(NULL, c->arena_bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->arena == MAP_FAILED) {
		rc = -errno;
		c->arena = NULL;
		snprintf(err, errlen,
			 "cannot reserve %s for the cache and "
			 "the pool: %s",
			 tfs_format_size(c->arena_bytes, a, sizeof(a)),
			 strerror(-rc));
		goto fail;
	}
	c->ticket = calloc(o->flushers + 1, sizeof(*c->ticket));
	c->fl = calloc(o->flushers + 1, sizeof(*c->fl));
	if (!c->ticket || !c->fl) {
		snprintf(err, errlen, "no memory for the write-back threads");
		goto fail;
	}
	for (unsigned int i = 0; i <= o->flushers; i++) {
		c->fl[i].c = c;
		c->fl[i].id = i;
		c->fl[i].ios = calloc(o->batch, sizeof(*c->fl[i].ios));
		c->fl[i].chs = calloc(o->batch, sizeof(*c->fl[i].chs));
		if (!c->fl[i].ios || !c->fl[i].chs) {
			snprintf(err, errlen,
				 "no memory for the write-back "
				 "threads");
			goto fail;
		}
	}
	for (size_t i = c->nchunks; i-- > 0;) {
		struct chunk *ch = &c->chunks[i];

		ch->valid = c->bits + i * 2 * c->words;
		ch->dirty = ch->valid + c->words;
		ch->next = c->free;
		c->free = ch;
	}
	*out = c;
	return 0;
fail:
	tfs_cache_free(c);
	return rc;
}

int tfs_cache_start(struct tfs_cache *c)
{
	if (c->thr)
		return 0;
	/* here, not at tfs_cache_new(): fork() does not pass locks on */
	if (c->o.pin && !c->pinned) {
		if (mlock(c->arena, c->arena_bytes) < 0)
			return -errno;
		c->pinned = 1;
	}
	c->thr = calloc(c->o.flushers, sizeof(*c->thr));
	if (!c->thr)
		return -ENOMEM;
	if (!c->pinned &&
	    pthread_create(&c->populate_thr, NULL, populate_main, c) == 0)
		c->populate_started = 1;
	for (unsigned int i = 0; i < c->o.flushers; i++) {
		int rc =
		    pthread_create(&c->thr[i], NULL, flusher_main, &c->fl[i]);

		if (rc)
			return -rc;
		c->nthr++;
	}
	return 0;
}

void tfs_cache_free(struct tfs_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	/* dirty data left now is dropped: the owner synced what it needs */
	while (c->wait.n)
		release(c, c->wait.head.next);
	while (c->ready.n)
		release(c, c->ready.head.next);
	pthread_cond_broadcast(&c->cv_work);
	pthread_cond_broadcast(&c->cv_populate);
	CACHE_CHECKED(c, 1);
	cache_unlock(c);
	for (unsigned int i = 0; i < c->nthr; i++)
		pthread_join(c->thr[i], NULL);
	if (c->populate_started)
		pthread_join(c->populate_thr, NULL);
	if (c->arena)
		munmap(c->arena, c->arena_bytes);
	for (unsigned int i = 0; c->fl && i <= c->o.flushers; i++) {
		free(c->fl[i].ios);
		free(c->fl[i].chs);
	}
	free(c->fl);
	free(c->thr);
	free(c->ticket);
	free(c->hash);
	free(c->inos);
	free(c->chunks);
	free(c->bits);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv_work);
	pthread_cond_destroy(&c->cv_done);
	pthread_cond_destroy(&c->cv_populate);
	free(c);
}

/* ===== data ===== */

/* Write n bytes at coff of one chunk. */
static int write_chunk(struct tfs_cache *c, uint64_t ino, uint64_t idx,
		       size_t coff, uint8_t *src, size_t n, uint64_t eof)
{
	unsigned int s0 = (unsigned int)(coff / TFS_SECTOR);
	unsigned int s1 = (unsigned int)((coff + n - 1) / TFS_SECTOR);
	uint64_t want[TFS_CACHE_MAX_WORDS];
	struct chunk *ch;
	int rc = 0, need = 0, waited = 0;

	(void)eof; /* a write fills only the partial sectors it covers */
	pthread_mutex_lock(&c->mu);
again:
	ch = lookup(c, ino, idx);
	if (ch && (ch->state == C_FLUSH || (ch->flags & F_FILLING))) {
		cache_wait(c, &c->cv_done);
		goto again;
	}
	if (!ch || ch->state == C_CLEAN) {
		if (c->ndirty >= c->o.pool_chunks) {
			if (!waited++) /* once, not at every wakeup */
				c->pool_waits++;
			c->pressure++;
			pthread_cond_broadcast(&c->cv_work);
			if (!flush_inline(c))
				cache_wait(c, &c->cv_done);
			c->pressure--;
			goto again;
		}
		if (!ch) {
			ch = pop_free(c);
			if (!ch)
				ch = evict_lru(c);
			if (!ch) {
				/* readers pin every clean chunk: a moment */
				cache_wait(c, &c->cv_done);
				goto again;
			}
			use(c, ch, ino, idx, C_FREE);
		}
		make_dirty(c, ch);
	}
	/* ch is set: every path that leaves it NULL goes again */
	/* cppcheck-suppress nullPointerRedundantCheck */
	ch->wrefs++;
	memset(want, 0, sizeof(want));
	if (coff % TFS_SECTOR && !bit_get(ch->valid, s0)) {
		bit_set(want, s0);
		need = 1;
	}
	if ((coff + n) % TFS_SECTOR && !bit_get(ch->valid, s1)) {
		bit_set(want, s1);
		need = 1;
	}
	if (need) {
		rc = fill(c, ch, want);
		if (rc)
			goto out_unpin;
	}
	cache_unlock(c);
	memcpy(chunk_buf(c, ch) + coff, src, n);
	pthread_mutex_lock(&c->mu);
	for (unsigned int s = s0; s <= s1; s++) {
		if (!bit_get(ch->valid, s)) {
			bit_set(ch->valid, s);
			ch->nvalid++;
			c->valid_sect++;
		}
		if (!bit_get(ch->dirty, s)) {
			bit_set(ch->dirty, s);
			ch->ndirty++;
			c->dirty_sect++;
		}
	}
	if (ch->ndirty == c->nsect && ch->state == C_WAIT) {
		set_state(c, ch, C_READY);
		pthread_cond_signal(&c->cv_work);
	}
out_unpin:
	if (rc && ch->ndirty == 0 && ch->state == C_WAIT)
		set_state(c, ch, C_CLEAN); /* nothing written: give back */
	unpin(c, ch, 1);
	if (rc && ch->state == C_CLEAN && !ch->nvalid && !busy(ch))
		release(c, ch);
	cache_unlock(c);
	return rc;
}

/* Call fn for each chunk's piece of bytes [off, off + len) of ino; eof
 * is passed on (reads fill ahead up to it). */
static int each_chunk(struct tfs_cache *c, uint64_t ino, uint64_t off,
		      uint8_t *p, size_t len, uint64_t eof,
		      int (*fn)(struct tfs_cache *c, uint64_t ino, uint64_t idx,
				size_t coff, uint8_t *p, size_t n,
				uint64_t eof))
{
	size_t cs = c->o.chunk_size;

	while (len) {
		size_t coff = (size_t)(off % cs);
		size_t n = cs - coff < len ? cs - coff : len;
		int rc = fn(c, ino, off / cs, coff, p, n, eof);

		if (rc)
			return rc;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int tfs_cache_write(struct tfs_cache *c, uint64_t ino, uint64_t off,
		    const void *src, size_t len)
{
	/* write_chunk only reads through its pointer */
	return each_chunk(c, ino, off, (uint8_t *)(uintptr_t)src, len,
			  UINT64_MAX, write_chunk);
}

/* Sectors of chunk idx before eof (bytes; rounded up), at most nsect. */
static unsigned int fill_limit(const struct tfs_cache *c, uint64_t idx,
			       uint64_t eof)
{
	uint64_t start = idx * c->o.chunk_size;

	if (eof <= start)
		return 0;
	if (eof - start >= c->o.chunk_size)
		return c->nsect;
	return (unsigned int)((eof - start + TFS_SECTOR - 1) / TFS_SECTOR);
}

/*
 * Find chunk idx of ino with sectors [s0, s1] valid, filling it from the
 * device if they are not, and return it pinned for reading (rrefs) in
 * *out, the lock released.  1 if the cache has no room for it (every
 * clean chunk pinned, or no cache budget): the caller reads around the
 * cache.  0, or -errno from ops->fill.
 */
static int get_chunk(struct tfs_cache *c, uint64_t ino, uint64_t idx,
		     unsigned int s0, unsigned int s1, uint64_t eof,
		     struct chunk **out)
{
	uint64_t want[TFS_CACHE_MAX_WORDS];
	struct chunk *ch;
	int rc = 0, missing = 0;

	pthread_mutex_lock(&c->mu);
again:
	ch = lookup(c, ino, idx);
	if (ch && (ch->flags & F_FILLING)) {
		cache_wait(c, &c->cv_done);
		goto again;
	}
	if (!ch) {
		ch = take_clean(c);
		if (!ch) {
			c->misses++;
			cache_unlock(c);
			return 1;
		}
		use(c, ch, ino, idx, C_CLEAN);
	}
	for (unsigned int s = s0; s <= s1 && !missing; s++)
		missing = !bit_get(ch->valid, s);
	ch->rrefs++;
	if (missing) {
		c->misses++;
		/* fill on to the chunk's end, reads tend to go on, but not
		 * past the end of the file, nor before s0: the 1 KiB rest
		 * of each of DeepSpeed's 1 MiB reads (tfs_cache_read_into())
		 * reads its last block, not the whole chunk again */
		unsigned int lim = fill_limit(c, idx, eof);

		if (lim <= s1)
			lim = s1 + 1;
		for (unsigned int w = 0; w < c->words; w++) {
			unsigned int first = w * 64;
			uint64_t m = ~0ull;

			if (lim <= first)
				m = 0;
			else if (lim - first < 64)
				m = (1ull << (lim - first)) - 1;
			if (s0 >= first + 64)
				m = 0;
			else if (s0 > first)
				m &= ~((1ull << (s0 - first)) - 1);
			want[w] = ~ch->valid[w] & m;
		}
		rc = fill(c, ch, want);
		if (rc) {
			unpin(c, ch, 0);
			if (ch->state == C_CLEAN && !ch->nvalid && !busy(ch))
				release(c, ch);
			cache_unlock(c);
			return rc;
		}
	} else {
		c->hits++;
	}
	if (ch->state == C_CLEAN) { /* most recently used */
		list_del(&c->lru, ch);
		list_add_tail(&c->lru, ch);
	}
	cache_unlock(c);
	*out = ch;
	return 0;
}

static void put_chunk(struct tfs_cache *c, struct chunk *ch)
{
	pthread_mutex_lock(&c->mu);
	unpin(c, ch, 0);
	cache_unlock(c);
}

/* Read n bytes at coff of one chunk. */
static int read_chunk(struct tfs_cache *c, uint64_t ino, uint64_t idx,
		      size_t coff, uint8_t *dst, size_t n, uint64_t eof)
{
	struct chunk *ch;
	int rc =
	    get_chunk(c, ino, idx, (unsigned int)(coff / TFS_SECTOR),
		      (unsigned int)((coff + n - 1) / TFS_SECTOR), eof, &ch);

	if (rc == 1)
		return c->ops->read_direct(
		    c->ctx, ino, idx * c->o.chunk_size + coff, dst, n);
	if (rc)
		return rc;
	memcpy(dst, chunk_buf(c, ch) + coff, n);
	put_chunk(c, ch);
	return 0;
}

int tfs_cache_read(struct tfs_cache *c, uint64_t ino, uint64_t off, void *dst,
		   size_t len, uint64_t eof)
{
	return each_chunk(c, ino, off, dst, len, eof, read_chunk);
}

/* Read n bytes at coff of one chunk around the cache if they are the
 * whole chunk (up to eof) and it holds none of them. */
static int read_chunk_around(struct tfs_cache *c, uint64_t ino, uint64_t idx,
			     size_t coff, uint8_t *dst, size_t n, uint64_t eof)
{
	uint64_t start = idx * c->o.chunk_size;
	struct chunk *ch;

	if (coff || (n < c->o.chunk_size && start + n < eof))
		return read_chunk(c, ino, idx, coff, dst, n, eof);
	pthread_mutex_lock(&c->mu);
	ch = lookup(c, ino, idx);
	if (!ch) {
		c->misses++;
		c->read_around++;
	}
	cache_unlock(c);
	if (ch) /* it may hold dirty bytes: through the cache */
		return read_chunk(c, ino, idx, coff, dst, n, eof);
	/* no chunk: none can be made dirty meanwhile, as the caller
	 * keeps writers of ino out (cache.h) */
	return c->ops->read_direct(c->ctx, ino, start, dst, n);
}

int tfs_cache_read_around(struct tfs_cache *c, uint64_t ino, uint64_t off,
			  void *dst, size_t len, uint64_t eof)
{
	return each_chunk(c, ino, off, dst, len, eof, read_chunk_around);
}

int tfs_cache_read_into(struct tfs_cache *c, uint64_t ino, uint64_t off,
			void *dst, size_t len, size_t room, uint64_t eof)
{
	size_t cs = c->o.chunk_size, whole;

	/*
	 * DeepSpeed's buffers are aligned to 1 KiB, not to a page: the
	 * kernel cuts each 1 MiB O_DIRECT read of theirs at 256 pages, into
	 * a piece 1 KiB short of its chunk's end and a 1 KiB rest.  Read
	 * the first piece as its whole chunk, around the cache; the rest
	 * then fills one block of the cache (get_chunk() fills from the
	 * block read on).
	 */
	if (off % cs == 0 && len && len < cs && off < eof) {
		whole = eof - off < cs ? (size_t)(eof - off) : cs;
		if (len < whole && whole <= room &&
		    (len + TFS_SECTOR - 1) / TFS_SECTOR ==
			(whole + TFS_SECTOR - 1) / TFS_SECTOR)
			return each_chunk(c, ino, off, dst, whole, eof,
					  read_chunk_around);
	}
	return each_chunk(c, ino, off, dst, len, eof, read_chunk_around);
}

int tfs_cache_pin(struct tfs_cache *c, uint64_t ino, uint64_t off, size_t len,
		  uint64_t eof, struct tfs_cache_piece *pc, unsigned int max)
{
	size_t cs = c->o.chunk_size;
	unsigned int n = 0;
	int rc = 0;

	if (len == 0)
		return 0;
	if ((off + len - 1) / cs - off / cs >= max)
		return -E2BIG;
	while (len) {
		size_t coff = (size_t)(off % cs);
		size_t k = cs - coff < len ? cs - coff : len;
		struct chunk *ch;

		rc = get_chunk(
		    c, ino, off / cs, (unsigned int)(coff / TFS_SECTOR),
		    (unsigned int)((coff + k - 1) / TFS_SECTOR), eof, &ch);
		if (rc == 1)
			rc = -ENOBUFS;
		if (rc)
			break;
		pc[n].data = chunk_buf(c, ch) + coff;
		pc[n].len = k;
		pc[n].ref = ch;
		n++;
		off += k;
		len -= k;
	}
	if (rc) {
		if (n) {
			pthread_mutex_lock(&c->mu);
			for (unsigned int i = 0; i < n; i++)
				unpin(c, pc[i].ref, 0);
			cache_unlock(c);
		}
		return rc;
	}
	return (int)n;
}

void tfs_cache_unpin(struct tfs_cache *c, void *const *refs, unsigned int n)
{
	if (!n)
		return;
	pthread_mutex_lock(&c->mu);
	for (unsigned int i = 0; i < n; i++)
		unpin(c, refs[i], 0);
	cache_unlock(c);
}

/* ===== sync and drop =====
 *
 * The scans below look at chunks [0, fresh) only: those from 'fresh' on
 * were never used (FREE, the free list's invariant), so until the arena
 * has been used once, an unlink or an fsync costs the chunks used so
 * far, not the whole arena (about 12% of the daemon's time per unlink
 * with a 3 GB arena, tools/bench/profiles/metadata.txt). */

/* Is a chunk of ino (any if 0) dirty since a write numbered <= seq? */
static int dirty_since(struct tfs_cache *c, uint64_t ino, uint64_t seq)
{
	if (ino) {
		for (struct chunk *ch = ino_first(c, ino); ch; ch = ch->inext)
			if (ch->state >= C_WAIT && ch->dirty_seq <= seq)
				return 1;
		return 0;
	}
	for (size_t i = 0; i < c->fresh; i++) {
		struct chunk *ch = &c->chunks[i];

		if (ch->state >= C_WAIT && !(ch->flags & F_DEAD) &&
		    ch->dirty_seq <= seq)
			return 1;
	}
	return 0;
}

static void sync_ino(struct tfs_cache *c, uint64_t ino)
{
	uint64_t seq;

	pthread_mutex_lock(&c->mu);
	seq = c->seq;
	promote(c, ino);
	while (dirty_since(c, ino, seq)) {
		promote(c, ino); /* chunks a writer held back */
		if (!flush_inline(c))
			cache_wait(c, &c->cv_done);
	}
	CACHE_CHECKED(c, !ino);
	cache_unlock(c);
}

void tfs_cache_sync(struct tfs_cache *c, uint64_t ino)
{
	if (ino)
		sync_ino(c, ino);
}

void tfs_cache_sync_all(struct tfs_cache *c)
{
	sync_ino(c, 0);
}

void tfs_cache_start_flush(struct tfs_cache *c, uint64_t ino)
{
	pthread_mutex_lock(&c->mu);
	promote(c, ino);
	cache_unlock(c);
}

void tfs_cache_drop(struct tfs_cache *c, uint64_t ino, uint64_t from,
		    uint64_t to)
{
	struct chunk *ch, *next;

	pthread_mutex_lock(&c->mu);
again:
	for (ch = ino_first(c, ino); ch; ch = next) {
		next = ch->inext;
		if (ch->idx < from || ch->idx >= to)
			continue;
		if (busy(ch)) {
			cache_wait(c, &c->cv_done);
			goto again;
		}
		release(c, ch);
	}
	pthread_cond_broadcast(&c->cv_done);
	CACHE_CHECKED(c, 0);
	cache_unlock(c);
}

void tfs_cache_forget(struct tfs_cache *c, uint64_t ino)
{
	struct chunk *ch, *next;

	pthread_mutex_lock(&c->mu);
	for (ch = ino_first(c, ino); ch; ch = next) {
		next = ch->inext;
		if (!busy(ch)) {
			release(c, ch);
			continue;
		}
		hash_remove(c, ch);
		ch->flags |= F_DEAD;
		if (ch->state == C_WAIT || ch->state == C_READY)
			set_state(c, ch, C_CLEAN); /* nothing to write */
	}
	pthread_cond_broadcast(&c->cv_done);
	CACHE_CHECKED(c, 0);
	cache_unlock(c);
}

void tfs_cache_barrier(struct tfs_cache *c)
{
	uint64_t seq;

	pthread_mutex_lock(&c->mu);
	seq = c->batch_seq;
	for (;;) {
		int wait = 0;

		for (unsigned int i = 0; i <= c->o.flushers; i++)
			if (c->ticket[i] && c->ticket[i] <= seq)
				wait = 1;
		if (!wait)
			break;
		cache_wait(c, &c->cv_done);
	}
	cache_unlock(c);
}

uint64_t tfs_cache_bytes_of(struct tfs_cache *c, uint64_t ino)
{
	uint64_t n = 0;

	pthread_mutex_lock(&c->mu);
	for (struct chunk *ch = ino_first(c, ino); ch; ch = ch->inext)
		n += ch->nvalid;
	cache_unlock(c);
	return n * TFS_SECTOR;
}

void tfs_cache_get_stats(struct tfs_cache *c, struct tfs_cache_stats *s)
{
	pthread_mutex_lock(&c->mu);
	s->hits = c->hits;
	s->misses = c->misses;
	s->read_around = c->read_around;
	s->evictions = c->evictions;
	s->cached_bytes = c->valid_sect * TFS_SECTOR;
	s->clean_bytes = (uint64_t)c->nclean * c->o.chunk_size;
	pool_tick(c);
	s->pool_chunk_ns = c->pool_ms * 1000000;
	s->cache_limit = (uint64_t)c->o.cache_chunks * c->o.chunk_size;
	s->dirty_bytes = c->dirty_sect * TFS_SECTOR;
	s->pool_busy = c->ndirty;
	s->pool_total = c->o.pool_chunks;
	s->pool_waits = c->pool_waits;
	s->flushed_bytes = c->flushed_bytes;
	s->flush_errors = c->flush_errors;
	s->arena_bytes = c->arena_bytes;
	cache_unlock(c);
}
