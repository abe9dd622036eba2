/*
 * refs.c: how many extents map each shared device block (refs.h).
 *
 * The ranges live in one array sorted by start.  A change to
 * [start, end) rewrites the window of ranges it touches: it cuts the
 * window into pieces at every range edge and at start and end (the parts
 * of edge ranges outside [start, end) keep their count), gives each
 * piece inside its new count, merges touching pieces of equal count
 * (with the neighbours outside the window too) and puts the result back
 * in place of the window with one memmove.  Everything that can fail
 * (the pieces' array, the table's growth) is done before the table or
 * the caller sees a change, so a failed call changes nothing.
 *
 * Cost: O(log n) to find the window, plus the ranges in it, plus a
 * memmove of the ranges after it when the window's range count changes.
 * Clones add their extents in file order, mostly at the end of what a
 * file already shares; the table holds ranges, not blocks, so a 100 GiB
 * clone of files written contiguously is a few ranges per file.
 */
#include "refs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum op {
	OP_INC,
	OP_DEC,
	OP_SET
};

/* A piece of the window: blocks [start, start + len), count before and
 * after (1: not in the table), and whether it lies inside the change. */
struct piece {
	uint64_t start, len;
	uint32_t old, neu;
	int inside;
};

void tfs_refs_init(struct tfs_refs *t)
{
	memset(t, 0, sizeof(*t));
}

void tfs_refs_release(struct tfs_refs *t)
{
	free(t->r);
	tfs_refs_init(t);
}

static uint64_t rend(const struct tfs_ref *r)
{
	return r->start + r->len;
}

/* Index of the first range ending after b (n if none). */
static size_t first_after(const struct tfs_refs *t, uint64_t b)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rend(&t->r[mid]) <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t tfs_refs_get(const struct tfs_refs *t, uint64_t b, uint64_t *run)
{
	size_t i = first_after(t, b);

	if (i < t->n && t->r[i].start <= b) {
		if (run)
			*run = rend(&t->r[i]) - b;
		return t->r[i].count;
	}
	if (run)
		*run = i < t->n ? t->r[i].start - b : UINT64_MAX - b;
	return 1;
}

int tfs_refs_any(const struct tfs_refs *t, uint64_t start, uint64_t len)
{
	size_t i;

	if (!t->n || !len)
		return 0;
	i = first_after(t, start);
	return i < t->n &&
	       (t->r[i].start <= start || t->r[i].start - start < len);
}

static void add_piece(struct piece *p, size_t *np, uint64_t start, uint64_t len,
		      uint32_t old, int inside)
{
	if (len)
		p[(*np)++] = (struct piece){ start, len, old, old, inside };
}

static int change(struct tfs_refs *t, uint64_t start, uint64_t len, enum op op,
		  uint32_t val, tfs_refs_fn fn, void *arg)
{
	uint64_t end = start + len, pos = start;
	size_t i0, i1, np = 0, nout = 0, need;
	struct piece *p;
	struct tfs_ref *out;
	int64_t dextra = 0;

	if (!len || end < start)
		return -EINVAL;
	i0 = first_after(t, start);
	i1 = i0;
	while (i1 < t->n && t->r[i1].start < end)
		i1++;
	/* every range of the window gives a gap before it and its inside
	 * part; the first and the last a part outside; one gap at the end */
	p = malloc((2 * (i1 - i0) + 3) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t i = i0; i < i1; i++) {
		const struct tfs_ref *r = &t->r[i];
		uint64_t rs = r->start, re = rend(r);

		if (rs < start)
			add_piece(p, &np, rs, start - rs, r->count, 0);
		if (rs > pos)
			add_piece(p, &np, pos, rs - pos, 1, 1);
		rs = rs > start ? rs : start;
		add_piece(p, &np, rs, (re < end ? re : end) - rs, r->count, 1);
		if (re > end)
			add_piece(p, &np, end, re - end, r->count, 0);
		pos = re < end ? re : end;
	}
	if (pos < end)
		add_piece(p, &np, pos, end - pos, 1, 1);

	for (size_t k = 0; k < np; k++) {
		struct piece *q = &p[k];

		if (!q->inside)
			continue;
		switch (op) {
		case OP_INC:
			if (q->old == UINT32_MAX) {
				free(p);
				return -EOVERFLOW;
			}
			q->neu = q->old + 1;
			break;
		case OP_DEC:
			q->neu = q->old - 1; /* 1 -> 0: free */
			break;
		case OP_SET:
			q->neu = val;
			break;
		}
	}
	/* the window's new ranges, merged with each other */
	out = malloc((np + 1) * sizeof(*out));
	if (!out) {
		free(p);
		return -ENOMEM;
	}
	for (size_t k = 0; k < np; k++) {
		const struct piece *q = &p[k];
		struct tfs_ref *last = nout ? &out[nout - 1] : NULL;

		if (q->neu < 2)
			continue;
		if (last && rend(last) == q->start && last->count == q->neu)
			last->len += q->len;
		else
			out[nout++] =
			    (struct tfs_ref){ q->start, q->len, q->neu };
	}
	need = t->n - (i1 - i0) + nout;
	if (need > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		struct tfs_ref *nr;

		while (nc < need)
			nc *= 2;
		nr = realloc(t->r, nc * sizeof(*nr));
		if (!nr) {
			free(out);
			free(p);
			return -ENOMEM;
		}
		t->r = nr;
		t->cap = nc;
	}
	/* from here on nothing fails */
	memmove(t->r + i0 + nout, t->r + i1, (t->n - i1) * sizeof(*t->r));
	memcpy(t->r + i0, out, nout * sizeof(*out));
	t->n = need;
	/* the seams with the neighbours outside the window */
	if (nout && i0 + nout < t->n) {
		struct tfs_ref *a = &t->r[i0 + nout - 1], *b = a + 1;

		if (rend(a) == b->start && a->count == b->count) {
			a->len += b->len;
			memmove(b, b + 1,
				(t->n - (i0 + nout + 1)) * sizeof(*b));
			t->n--;
		}
	}
	if (i0 && i0 < t->n) {
		struct tfs_ref *a = &t->r[i0 - 1], *b = a + 1;

		if (rend(a) == b->start && a->count == b->count) {
			a->len += b->len;
			memmove(b, b + 1, (t->n - (i0 + 1)) * sizeof(*b));
			t->n--;
		}
	}
	for (size_t k = 0; k < np; k++) {
		const struct piece *q = &p[k];
		uint64_t o = q->old >= 2 ? q->old - 1 : 0;
		uint64_t n = q->neu >= 2 ? q->neu - 1 : 0;

		dextra += (int64_t)((n - o) * q->len);
		if (q->inside && fn && op != OP_SET)
			fn(q->start, q->len, q->neu, arg);
	}
	t->extra += (uint64_t)dextra;
	free(out);
	free(p);
	return 0;
}

int tfs_refs_inc(struct tfs_refs *t, uint64_t start, uint64_t len,
		 tfs_refs_fn fn, void *arg)
{
	return change(t, start, len, OP_INC, 0, fn, arg);
}

int tfs_refs_dec(struct tfs_refs *t, uint64_t start, uint64_t len,
		 tfs_refs_fn fn, void *arg)
{
	/* nothing shared there: every block was mapped once (no memory) */
	if (len && start + len > start && !tfs_refs_any(t, start, len)) {
		if (fn)
			fn(start, len, 0, arg);
		return 0;
	}
	return change(t, start, len, OP_DEC, 0, fn, arg);
}

int tfs_refs_set(struct tfs_refs *t, uint64_t start, uint64_t len,
		 uint32_t count)
{
	return change(t, start, len, OP_SET, count, NULL, NULL);
}

size_t tfs_refs_count(const struct tfs_refs *t)
{
	return t->n;
}

uint64_t tfs_refs_extra(const struct tfs_refs *t)
{
	return t->extra;
}

size_t tfs_refs_ram(const struct tfs_refs *t)
{
	return t->cap * sizeof(*t->r);
}

int tfs_refs_walk(const struct tfs_refs *t,
		  int (*fn)(uint64_t start, uint64_t len, uint32_t count,
			    void *arg),
		  void *arg)
{
	for (size_t i = 0; i < t->n; i++) {
		int rc = fn(t->r[i].start, t->r[i].len, t->r[i].count, arg);

		if (rc)
			return rc;
	}
	return 0;
}

int tfs_refs_check(const struct tfs_refs *t)
{
	uint64_t extra = 0;

	if (t->n > t->cap || (t->n && !t->r))
		return -EUCLEAN;
	for (size_t i = 0; i < t->n; i++) {
		const struct tfs_ref *r = &t->r[i];

		if (r->len == 0 || r->count < 2 || rend(r) < r->start)
			return -EUCLEAN;
		if (i && (rend(&t->r[i - 1]) > r->start ||
			  (rend(&t->r[i - 1]) == r->start &&
			   t->r[i - 1].count == r->count)))
			return -EUCLEAN;
		extra += r->len * (r->count - 1);
	}
	return extra == t->extra ? 0 : -EUCLEAN;
}
