/*
 * alloc.c: the free-space allocator of the data area.
 *
 * The free space of [first, end) is a set of free extents held in an AVL
 * tree keyed by extent start.  Every node also caches the largest extent
 * length in its subtree ('max'), which turns the two questions the
 * allocator asks into one descent each:
 *
 *   - which free extent holds block b?        find_le(): largest start <= b
 *   - the first extent at or after p that
 *     holds n blocks?                          first_fit(): prune on 'max'
 *
 * so every public function is O(log n) in the number of free extents.
 *
 * Invariants (tfs_alloc_check() verifies them all):
 *   - extents lie inside [first, end), have len >= 1 and are ordered by
 *     start with at least one used block between neighbours: touching free
 *     extents are always merged, so the tree holds the fewest extents that
 *     describe the free space;
 *   - every node's 'h' is its AVL height and its subtrees differ in height
 *     by at most one; every node's 'max' is the largest len below it;
 *   - 'nblocks' and 'next' are the sum of the lengths and the node count;
 *   - first <= cursor < end (cursor == first when the range is empty).
 *
 * Shrinking an extent from either side moves its start forward or its end
 * back but never past a neighbour, so the tree's order survives edits in
 * place; only 'max' has to be refreshed on the path from the root
 * (tree_touch()).  A node is inserted only when an allocation or a
 * mark_used splits an extent in two, or a put lands away from every free
 * neighbour.
 *
 * Memory: splitting an extent needs a node, and tfs_alloc_get() has no
 * -ENOMEM to return.  The allocator therefore keeps one spare node,
 * refilled before each operation and by nodes that merges retire.  When
 * malloc() fails and no spare is left, tfs_alloc_get() only hands out runs
 * that start or end at an extent's edge (which never split) and may ignore
 * the goal or the cursor to do so; tfs_alloc_put() and
 * tfs_alloc_mark_used() return -ENOMEM and change nothing when they would
 * have needed the node.
 *
 * Placement: a goal inside a free extent is honoured exactly, so a file
 * that grows by asking for the block after its last one stays contiguous.
 * New runs start at the rotating cursor, which each new run pushes past
 * itself plus a gap of min(16 * requested, 16 MiB): two files written at
 * once start that far apart and each can grow into the gap behind it
 * through its goal.  The gap scales with the request so that small files
 * are still packed closely.
 *
 * Discard tracking (tfs_alloc_track_discard()).  Free blocks that may
 * hold data some state on the device still refers to are kept in three
 * sets, each a free-extent tree of its own (struct tfs_alloc without
 * tracking, used as a set: "free" there means "in the set"):
 *
 *   age[0]  freed since the last durable checkpoint (and, at mount, all
 *           the free space: the older superblock's state may use it)
 *   age[1]  freed before the last durable checkpoint, after the one before
 *   age[2]  ready: free since at least two durable checkpoints
 *
 * tfs_alloc_put_freed() adds to age[0]; tfs_alloc_age(), called once per
 * durable checkpoint, moves age[1] into age[2] and age[0] into age[1];
 * tfs_alloc_take_discard() hands out a ready extent, taken out of the free
 * space while it is discarded.  Every handout (tfs_alloc_get(),
 * tfs_alloc_mark_used()) removes its blocks from all three sets, so a set
 * holds only blocks free ever since they entered it: a block freed,
 * reused and freed again starts its wait anew.  Journal.c's J11 says why
 * two checkpoints.  Invariants: the sets are disjoint and inside the free
 * space.  Memory running out never makes a set claim too much: a removal
 * that would need a node drops the whole extent from the set instead, an
 * addition that cannot get one is not made (space not discarded, data
 * never lost).
 *
 * Built with TFS_CHECKS=1, every modifying function checks the invariants
 * before it returns and aborts when they are broken.
 */
#include "alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define TFS_ALLOC_BLOCK_SIZE 4096u
/* The largest gap left after a new run: 16 MiB worth of blocks. */
#define TFS_ALLOC_GAP_MAX ((16u << 20) / TFS_ALLOC_BLOCK_SIZE)
/* The gap is this many times the request, up to TFS_ALLOC_GAP_MAX. */
#define TFS_ALLOC_GAP_FACTOR 16u

struct fext {
	uint64_t start;
	uint64_t len;
	uint64_t max; /* largest len in this subtree */
	struct fext *l, *r;
	int h; /* AVL height, a leaf is 1 */
};

struct tfs_alloc {
	struct fext *root;
	struct fext *spare;	  /* one node kept for the next split */
	uint64_t first, end;	  /* the managed range [first, end) */
	uint64_t cursor;	  /* where the next new run is looked for */
	uint64_t nblocks;	  /* free blocks */
	uint64_t next;		  /* free extents */
	struct tfs_alloc *age[3]; /* discard tracking, or all NULL */
};

#define AGES  3
#define READY 2 /* age[READY]: may be discarded */

#if defined(TFS_CHECKS) && TFS_CHECKS
static void alloc_assert_ok(const struct tfs_alloc *a, const char *fn)
{
	/*
	 * A full check is O(n): on big trees check one change in n/1024,
	 * so the amortised cost stays O(1024) and a mount of many files
	 * stays quick in checked builds.  The count is per thread, not a
	 * data race: allocators of two file systems in one process (the
	 * unit tests) change at once under different locks.
	 */
	static _Thread_local unsigned long calls;
	unsigned long every =
	    a->next > 4096 ? (unsigned long)(a->next / 1024) : 1;

	if (++calls % every)
		return;
	if (tfs_alloc_check(a) == 0)
		return;
	fprintf(
	    stderr,
	    "tensorfs: allocator invariants broken after %s(); this is a bug, please report it\n",
	    fn);
	abort();
}
#define ALLOC_CHECKED(a) alloc_assert_ok((a), __func__)
#else
#define ALLOC_CHECKED(a) ((void)0)
#endif

/* ===== AVL tree ===== */

static int height(const struct fext *t)
{
	return t ? t->h : 0;
}

static uint64_t subtree_max(const struct fext *t)
{
	return t ? t->max : 0;
}

static uint64_t fext_end(const struct fext *t)
{
	return t->start + t->len;
}

/* Recompute h and max of t from its children. */
static void update(struct fext *t)
{
	int hl = height(t->l), hr = height(t->r);
	uint64_t m = t->len;

	t->h = (hl > hr ? hl : hr) + 1;
	if (subtree_max(t->l) > m)
		m = subtree_max(t->l);
	if (subtree_max(t->r) > m)
		m = subtree_max(t->r);
	t->max = m;
}

static struct fext *rotate_right(struct fext *t)
{
	struct fext *l = t->l;

	t->l = l->r;
	l->r = t;
	update(t);
	update(l);
	return l;
}

static struct fext *rotate_left(struct fext *t)
{
	struct fext *r = t->r;

	t->r = r->l;
	r->l = t;
	update(t);
	update(r);
	return r;
}

/* Restore the AVL balance at t after one of its subtrees changed height by
 * one; returns the new root of the subtree. */
static struct fext *rebalance(struct fext *t)
{
	int bf;

	update(t);
	bf = height(t->l) - height(t->r);
	if (bf > 1) {
		if (height(t->l->l) < height(t->l->r))
			t->l = rotate_left(t->l);
		return rotate_right(t);
	}
	if (bf < -1) {
		if (height(t->r->r) < height(t->r->l))
			t->r = rotate_right(t->r);
		return rotate_left(t);
	}
	return t;
}

static struct fext *tree_insert(struct fext *t, struct fext *n)
{
	if (!t) {
		n->l = n->r = NULL;
		update(n);
		return n;
	}
	if (n->start < t->start)
		t->l = tree_insert(t->l, n);
	else
		t->r = tree_insert(t->r, n);
	return rebalance(t);
}

/* Unlink the leftmost node of t into *min; returns the new subtree. */
static struct fext *tree_unlink_min(struct fext *t, struct fext **min)
{
	if (!t->l) {
		*min = t;
		return t->r;
	}
	t->l = tree_unlink_min(t->l, min);
	return rebalance(t);
}

/* Unlink the node with 'start', which must be in t; the caller still holds
 * the node.  Returns the new subtree. */
static struct fext *tree_remove(struct fext *t, uint64_t start)
{
	struct fext *succ;

	if (start < t->start) {
		t->l = tree_remove(t->l, start);
	} else if (start > t->start) {
		t->r = tree_remove(t->r, start);
	} else {
		if (!t->r)
			return t->l;
		t->r = tree_unlink_min(t->r, &succ);
		succ->l = t->l;
		succ->r = t->r;
		t = succ;
	}
	return rebalance(t);
}

/* A node on the path to 'start' changed its len (or its start, without
 * passing a neighbour): refresh max along that path. */
static void tree_touch(struct fext *t, uint64_t start)
{
	if (start < t->start)
		tree_touch(t->l, start);
	else if (start > t->start)
		tree_touch(t->r, start);
	update(t);
}

/* The extent with the largest start <= b, or NULL. */
static struct fext *find_le(struct fext *t, uint64_t b)
{
	struct fext *best = NULL;

	while (t) {
		if (t->start <= b) {
			best = t;
			t = t->r;
		} else {
			t = t->l;
		}
	}
	return best;
}

/* The extent with the smallest start > b, or NULL. */
static struct fext *find_gt(struct fext *t, uint64_t b)
{
	struct fext *best = NULL;

	while (t) {
		if (t->start > b) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

/*
 * The first extent with start >= p and len >= n, or NULL.  Along the path
 * towards p, right subtrees hold only starts >= p, and there 'max' says
 * at once whether a fit exists and leads straight to the leftmost one, so
 * the search stays O(height).
 */
static struct fext *first_fit(struct fext *t, uint64_t p, uint64_t n)
{
	struct fext *r;

	if (!t || t->max < n)
		return NULL;
	if (t->start < p)
		return first_fit(t->r, p, n);
	r = first_fit(t->l, p, n);
	if (r)
		return r;
	if (t->len >= n)
		return t;
	return first_fit(t->r, p, n);
}

/* The lowest-starting of the largest extents; t must not be empty. */
static struct fext *largest(struct fext *t)
{
	for (;;) {
		if (t->l && t->l->max == t->max)
			t = t->l;
		else if (t->len == t->max)
			return t;
		else
			t = t->r;
	}
}

static void tree_free(struct fext *t)
{
	if (!t)
		return;
	tree_free(t->l);
	tree_free(t->r);
	free(t);
}

/* ===== nodes ===== */

/* Make sure a spare node exists: 0 or -ENOMEM. */
static int reserve_node(struct tfs_alloc *a)
{
	if (!a->spare)
		a->spare = malloc(sizeof(*a->spare));
	return a->spare ? 0 : -ENOMEM;
}

static struct fext *take_node(struct tfs_alloc *a)
{
	struct fext *n = a->spare;

	a->spare = NULL;
	return n;
}

/* Keep a retired node as the spare, so the next split cannot fail. */
static void drop_node(struct tfs_alloc *a, struct fext *n)
{
	if (a->spare)
		free(n);
	else
		a->spare = n;
}

/* ===== carving runs out of extents ===== */

/* Taking [s, s + n) out of e leaves a piece on both sides. */
static int needs_split(const struct fext *e, uint64_t s, uint64_t n)
{
	return s > e->start && s + n < fext_end(e);
}

static int can_carve(const struct tfs_alloc *a, const struct fext *e,
		     uint64_t s, uint64_t n)
{
	return !needs_split(e, s, n) || a->spare;
}

/* Mark [s, s + n), which lies inside e, used.  A split takes the spare,
 * which the caller made sure of (can_carve()). */
static void carve(struct tfs_alloc *a, struct fext *e, uint64_t s, uint64_t n)
{
	uint64_t end = s + n, e_end = fext_end(e);
	struct fext *tail;

	if (s == e->start && end == e_end) {
		a->root = tree_remove(a->root, e->start);
		drop_node(a, e);
		a->next--;
	} else if (s == e->start) {
		e->start = end;
		e->len = e_end - end;
		tree_touch(a->root, e->start);
	} else if (end == e_end) {
		e->len -= n;
		tree_touch(a->root, e->start);
	} else {
		tail = take_node(a);
		tail->start = end;
		tail->len = e_end - end;
		e->len = s - e->start;
		tree_touch(a->root, e->start);
		a->root = tree_insert(a->root, tail);
		a->next++;
	}
	a->nblocks -= n;
}

/* Is [start, start + count) a non-empty range inside the allocator's? */
static int in_range(const struct tfs_alloc *a, uint64_t start, uint64_t count)
{
	return count && start >= a->first && start < a->end &&
	       count <= a->end - start;
}

static void untrack(struct tfs_alloc *a, uint64_t start, uint64_t count);

/* ===== public ===== */

struct tfs_alloc *tfs_alloc_new(uint64_t first, uint64_t count)
{
	struct tfs_alloc *a = NULL;
	struct fext *n;

	/* UINT64_MAX must stay outside the range: it means "no goal". */
	if (count > UINT64_MAX - first) {
		errno = EINVAL;
		goto out;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		goto out;
	a->first = a->cursor = first;
	a->end = first + count;
	if (count) {
		n = malloc(sizeof(*n));
		if (!n)
			goto out_free;
		n->start = first;
		n->len = count;
		a->root = tree_insert(NULL, n);
		a->nblocks = count;
		a->next = 1;
	}
	ALLOC_CHECKED(a);
	goto out;

out_free:
	free(a);
	a = NULL;
out:
	return a;
}

void tfs_alloc_free(struct tfs_alloc *a)
{
	if (!a)
		return;
	for (int i = 0; i < AGES; i++)
		tfs_alloc_free(a->age[i]);
	tree_free(a->root);
	free(a->spare);
	free(a);
}

/* Move the cursor past a new run ending at run_end plus the gap. */
static void advance_cursor(struct tfs_alloc *a, uint64_t run_end, uint64_t want)
{
	uint64_t gap = TFS_ALLOC_GAP_MAX;

	if (want < TFS_ALLOC_GAP_MAX / TFS_ALLOC_GAP_FACTOR)
		gap = want * TFS_ALLOC_GAP_FACTOR;
	if (gap >= a->end - run_end)
		a->cursor = a->first;
	else
		a->cursor = run_end + gap;
}

/*
 * Choose where a run without a usable goal goes: at the cursor if the
 * extent holding it has 'want' blocks from there on; else the first extent
 * after the cursor that holds 'want'; else the first one from the start of
 * the range (the wrap); else all of the largest extent.
 */
static struct fext *place_new_run(const struct tfs_alloc *a, uint64_t want,
				  uint64_t *s, uint64_t *n)
{
	struct fext *e;

	e = find_le(a->root, a->cursor);
	if (e && a->cursor - e->start < e->len &&
	    fext_end(e) - a->cursor >= want &&
	    can_carve(a, e, a->cursor, want)) {
		*s = a->cursor;
		*n = want;
		return e;
	}
	e = first_fit(a->root, a->cursor, want);
	if (!e)
		e = first_fit(a->root, a->first, want);
	if (e) {
		*s = e->start;
		*n = want;
		return e;
	}
	e = largest(a->root);
	*s = e->start;
	*n = e->len;
	return e;
}

/* Carve up to want blocks from goal, not past hi, if goal is free (and
 * the carve needs no node memory can't give): 1 with the run in *s, *n;
 * else 0, nothing changed. */
static int take_goal(struct tfs_alloc *a, uint64_t goal, uint64_t hi,
		     uint64_t want, uint64_t *s, uint64_t *n)
{
	struct fext *e = find_le(a->root, goal);

	if (!e || goal - e->start >= e->len || goal >= hi)
		return 0;
	*s = goal;
	*n = fext_end(e) - goal;
	if (*n > hi - goal)
		*n = hi - goal;
	if (*n > want)
		*n = want;
	if (!can_carve(a, e, *s, *n))
		return 0;
	carve(a, e, *s, *n);
	return 1;
}

int tfs_alloc_get(struct tfs_alloc *a, uint64_t goal, uint64_t *start,
		  uint64_t *count)
{
	uint64_t want = *count, s, n;
	struct fext *e;
	int rc = 0;

	if (!want) {
		rc = -EINVAL;
		goto out;
	}
	if (!a->root) {
		rc = -ENOSPC;
		goto out;
	}
	/* Failure only narrows the choice (can_carve()), see the top. */
	(void)reserve_node(a);

	if (take_goal(a, goal, UINT64_MAX, want, &s, &n))
		goto out_done;
	e = place_new_run(a, want, &s, &n);
	carve(a, e, s, n);
	advance_cursor(a, s + n, want);

out_done:
	untrack(a, s, n);
	*start = s;
	*count = n;
out:
	ALLOC_CHECKED(a);
	return rc;
}

int tfs_alloc_get_in(struct tfs_alloc *a, uint64_t lo, uint64_t hi,
		     uint64_t goal, uint64_t *start, uint64_t *count)
{
	uint64_t want = *count, s, n;
	struct fext *e;
	int rc = 0;

	if (!want || lo >= hi) {
		rc = -EINVAL;
		goto out;
	}
	if (!a->root) {
		rc = -ENOSPC;
		goto out;
	}
	(void)reserve_node(a);
	if (goal >= lo && take_goal(a, goal, hi, want, &s, &n))
		goto out_done;
	/* the first free extent of the range that holds it all, else the
	 * first there is: carved at its start, which never splits it */
	e = first_fit(a->root, lo, want);
	if (!e || e->start >= hi)
		e = first_fit(a->root, lo, 1);
	if (!e || e->start >= hi) {
		rc = -ENOSPC;
		goto out;
	}
	s = e->start;
	n = e->len < want ? e->len : want;
	n = n < hi - s ? n : hi - s;
	carve(a, e, s, n);
out_done:
	untrack(a, s, n);
	*start = s;
	*count = n;
out:
	ALLOC_CHECKED(a);
	return rc;
}

int tfs_alloc_put(struct tfs_alloc *a, uint64_t start, uint64_t count)
{
	struct fext *prev, *next, *n;
	uint64_t end;
	int join_prev, join_next;
	int rc = 0;

	if (!in_range(a, start, count)) {
		rc = -EINVAL;
		goto out;
	}
	end = start + count;
	prev = find_le(a->root, start);
	next = find_gt(a->root, start);
	if ((prev && start - prev->start < prev->len) ||
	    (next && next->start < end)) {
		rc = -EINVAL; /* some of it is free already */
		goto out;
	}
	join_prev = prev && fext_end(prev) == start;
	join_next = next && next->start == end;

	if (join_prev && join_next) {
		prev->len += count + next->len;
		a->root = tree_remove(a->root, next->start);
		drop_node(a, next);
		tree_touch(a->root, prev->start);
		a->next--;
	} else if (join_prev) {
		prev->len += count;
		tree_touch(a->root, prev->start);
	} else if (join_next) {
		next->start = start;
		next->len += count;
		tree_touch(a->root, next->start);
	} else {
		rc = reserve_node(a);
		if (rc)
			goto out;
		n = take_node(a);
		n->start = start;
		n->len = count;
		a->root = tree_insert(a->root, n);
		a->next++;
	}
	a->nblocks += count;
out:
	ALLOC_CHECKED(a);
	return rc;
}

int tfs_alloc_mark_used(struct tfs_alloc *a, uint64_t start, uint64_t count)
{
	struct fext *e;
	int rc = 0;

	if (!in_range(a, start, count)) {
		rc = -EINVAL;
		goto out;
	}
	e = find_le(a->root, start);
	if (!e || start - e->start >= e->len || count > fext_end(e) - start) {
		rc = -EINVAL; /* some of it is used already */
		goto out;
	}
	if (needs_split(e, start, count)) {
		rc = reserve_node(a);
		if (rc)
			goto out;
	}
	carve(a, e, start, count);
	untrack(a, start, count);
out:
	ALLOC_CHECKED(a);
	return rc;
}

uint64_t tfs_alloc_free_blocks(const struct tfs_alloc *a)
{
	return a->nblocks;
}

uint64_t tfs_alloc_free_extents(const struct tfs_alloc *a)
{
	return a->next;
}

uint64_t tfs_alloc_largest(const struct tfs_alloc *a)
{
	return subtree_max(a->root);
}

static int walk(const struct fext *t,
		int (*fn)(uint64_t start, uint64_t count, void *arg), void *arg)
{
	int rc;

	if (!t)
		return 0;
	rc = walk(t->l, fn, arg);
	if (!rc)
		rc = fn(t->start, t->len, arg);
	if (!rc)
		rc = walk(t->r, fn, arg);
	return rc;
}

int tfs_alloc_walk(const struct tfs_alloc *a,
		   int (*fn)(uint64_t start, uint64_t count, void *arg),
		   void *arg)
{
	return walk(a->root, fn, arg);
}

/* Free blocks of subtree t inside [lo, hi): the subtrees wholly on one
 * side of the range are skipped. */
static uint64_t free_in(const struct fext *t, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0;

	while (t) {
		if (t->start >= hi) {
			t = t->l;
			continue;
		}
		if (t->start + t->len <= lo) {
			t = t->r;
			continue;
		}
		n += (t->start + t->len < hi ? t->start + t->len : hi) -
		     (t->start > lo ? t->start : lo);
		n += free_in(t->l, lo, hi);
		t = t->r;
	}
	return n;
}

uint64_t tfs_alloc_free_in(const struct tfs_alloc *a, uint64_t lo, uint64_t hi)
{
	return lo < hi ? free_in(a->root, lo, hi) : 0;
}

/* ===== discard tracking ===== */

/* An empty set over the same range as a (no tracking of its own). */
static struct tfs_alloc *set_new(const struct tfs_alloc *a)
{
	struct tfs_alloc *set = calloc(1, sizeof(*set));

	if (set) {
		set->first = set->cursor = a->first;
		set->end = a->end;
	}
	return set;
}

static void set_clear(struct tfs_alloc *set)
{
	tree_free(set->root);
	set->root = NULL;
	set->nblocks = set->next = 0;
}

/* Take [start, start + count) out of set, whatever part of it is there.
 * Without a node for a split the whole extent leaves the set. */
static void set_remove(struct tfs_alloc *set, uint64_t start, uint64_t count)
{
	uint64_t pos = start, end = start + count;

	for (;;) {
		struct fext *e = find_le(set->root, pos);
		uint64_t s, n;

		if (!e || fext_end(e) <= pos)
			e = find_gt(set->root, pos);
		if (!e || e->start >= end)
			break;
		s = e->start > pos ? e->start : pos;
		n = (fext_end(e) < end ? fext_end(e) : end) - s;
		pos = s + n;
		if (needs_split(e, s, n) && reserve_node(set)) {
			s = e->start;
			n = e->len;
		}
		carve(set, e, s, n);
	}
}

static void untrack(struct tfs_alloc *a, uint64_t start, uint64_t count)
{
	if (!a->age[0])
		return;
	for (int i = 0; i < AGES; i++)
		set_remove(a->age[i], start, count);
}

static int add_fn(uint64_t start, uint64_t count, void *arg)
{
	/* no node: that extent is just not discarded */
	(void)tfs_alloc_put(arg, start, count);
	return 0;
}

int tfs_alloc_track_discard(struct tfs_alloc *a)
{
	int rc = 0;

	if (a->age[0])
		return 0;
	for (int i = 0; i < AGES; i++) {
		a->age[i] = set_new(a);
		if (!a->age[i])
			rc = -ENOMEM;
	}
	if (rc) {
		for (int i = 0; i < AGES; i++) {
			tfs_alloc_free(a->age[i]);
			a->age[i] = NULL;
		}
		return rc;
	}
	/* the state the older superblock copy holds may use any of it */
	(void)tfs_alloc_walk(a, add_fn, a->age[0]);
	ALLOC_CHECKED(a);
	return 0;
}

int tfs_alloc_put_freed(struct tfs_alloc *a, uint64_t start, uint64_t count)
{
	int rc = tfs_alloc_put(a, start, count);

	if (!rc && a->age[0])
		(void)tfs_alloc_put(a->age[0], start, count);
	ALLOC_CHECKED(a);
	return rc;
}

void tfs_alloc_age(struct tfs_alloc *a)
{
	struct tfs_alloc *old = a->age[1];

	if (!old)
		return;
	(void)tfs_alloc_walk(old, add_fn, a->age[READY]);
	set_clear(old);
	a->age[1] = a->age[0];
	a->age[0] = old;
	ALLOC_CHECKED(a);
}

/*
 * The ready extent, in block order, with the first piece of it inside
 * [lo, hi) at least minlen long: its node, and that piece in *s, *n.
 * NULL when none.  Descends left of any node that may have one, so the
 * walk is in order; a subtree whose 'max' is under minlen has none.
 */
static struct fext *first_ready(struct fext *t, uint64_t lo, uint64_t hi,
				uint64_t minlen, uint64_t *s, uint64_t *n)
{
	struct fext *e;
	uint64_t a, b;

	if (!t || t->max < minlen)
		return NULL;
	if (t->start > lo) {
		e = first_ready(t->l, lo, hi, minlen, s, n);
		if (e)
			return e;
	}
	if (t->start >= hi)
		return NULL;
	a = t->start > lo ? t->start : lo;
	b = fext_end(t) < hi ? fext_end(t) : hi;
	if (b > a && b - a >= minlen) {
		*s = a;
		*n = b - a;
		return t;
	}
	return first_ready(t->r, lo, hi, minlen, s, n);
}

int tfs_alloc_take_discard(struct tfs_alloc *a, uint64_t lo, uint64_t hi,
			   uint64_t minlen, uint64_t max, uint64_t *start,
			   uint64_t *count)
{
	struct tfs_alloc *ready = a->age[READY];
	struct fext *e;
	uint64_t s, n;
	int rc;

	if (!ready || !max)
		return 0;
	e = first_ready(ready->root, lo, hi, minlen ? minlen : 1, &s, &n);
	if (!e)
		return 0;
	if (n > max)
		n = max;
	/* a piece from inside the extent splits it: a node first */
	if (!can_carve(ready, e, s, n) && reserve_node(ready))
		return -ENOMEM;
	*start = s;
	*count = n;
	carve(ready, e, s, n);
	rc = tfs_alloc_mark_used(a, s, n);
	ALLOC_CHECKED(a);
	return rc ? rc : 1;
}

uint64_t tfs_alloc_discard_waiting(const struct tfs_alloc *a)
{
	return a->age[0] ? a->age[0]->nblocks + a->age[1]->nblocks : 0;
}

uint64_t tfs_alloc_discard_ready(const struct tfs_alloc *a)
{
	return a->age[0] ? a->age[READY]->nblocks : 0;
}

/* ===== invariants ===== */

struct check_state {
	const struct tfs_alloc *a;
	const struct fext *prev; /* in-order predecessor */
	uint64_t blocks, extents;
};

static int check_tree(const struct fext *t, struct check_state *cs)
{
	const struct tfs_alloc *a = cs->a;
	int hl, hr;
	uint64_t m;

	if (!t)
		return 0;
	if (check_tree(t->l, cs))
		return -EUCLEAN;

	if (!t->len || t->start < a->first || t->start >= a->end ||
	    t->len > a->end - t->start)
		return -EUCLEAN;
	/* Strictly after the predecessor's end: touching extents merge. */
	if (cs->prev && fext_end(cs->prev) >= t->start)
		return -EUCLEAN;
	hl = height(t->l);
	hr = height(t->r);
	if (t->h != (hl > hr ? hl : hr) + 1 || hl - hr > 1 || hr - hl > 1)
		return -EUCLEAN;
	m = t->len;
	if (subtree_max(t->l) > m)
		m = subtree_max(t->l);
	if (subtree_max(t->r) > m)
		m = subtree_max(t->r);
	if (t->max != m)
		return -EUCLEAN;
	cs->prev = t;
	cs->blocks += t->len;
	cs->extents++;

	return check_tree(t->r, cs);
}

/* A discard set's extent: inside the free space, in no other set. */
struct set_check {
	const struct tfs_alloc *a;
	int self;
};

static int set_extent_ok(uint64_t start, uint64_t count, void *arg)
{
	const struct set_check *sc = arg;
	const struct fext *e = find_le(sc->a->root, start);

	if (!e || start - e->start >= e->len || count > fext_end(e) - start)
		return -EUCLEAN;
	for (int i = 0; i < AGES; i++) {
		const struct tfs_alloc *o = sc->a->age[i];

		if (i == sc->self)
			continue;
		e = find_le(o->root, start + count - 1);
		if (e && fext_end(e) > start)
			return -EUCLEAN;
	}
	return 0;
}

int tfs_alloc_check(const struct tfs_alloc *a)
{
	struct check_state cs = { .a = a };

	if (a->first > a->end || a->cursor < a->first ||
	    (a->cursor >= a->end && a->cursor != a->first))
		return -EUCLEAN;
	if (check_tree(a->root, &cs))
		return -EUCLEAN;
	if (cs.blocks != a->nblocks || cs.extents != a->next)
		return -EUCLEAN;
	for (int i = 0; a->age[0] && i < AGES; i++) {
		struct set_check sc = { a, i };

		if (tfs_alloc_check(a->age[i]) ||
		    tfs_alloc_walk(a->age[i], set_extent_ok, &sc))
			return -EUCLEAN;
	}
	return 0;
}
