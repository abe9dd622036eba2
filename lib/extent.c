/*
 * extent.c: the extent map of one file.
 *
 * The map is an array of extents sorted by lblk.  Files here are large
 * tensors written in long sequential runs, so a map holds few extents and
 * a sorted array beats a tree: lookups are one binary search over
 * contiguous memory, and a change moves only the tail of the array.
 *
 * Invariants (tfs_extmap_check() verifies them all):
 *   - n <= cap; ext[0..n) is sorted by lblk and no two extents overlap;
 *   - every extent has len >= 1, neither [lblk, lblk + len) nor
 *     [pblk, pblk + len) wraps past 2^64, and flags has only known bits;
 *   - no two neighbours are mergeable: touching in file space, contiguous
 *     in device space and with equal flags.  Hence a file written
 *     sequentially into contiguous space is a single extent.
 *
 * Every change (set and punch) is the same splice, done by replace():
 *   1. find the run ext[lo, hi) that overlaps [lblk, end);
 *   2. build its replacement, at most three extents: the part of ext[lo]
 *      before lblk, the new extent (set only), the part of ext[hi - 1]
 *      after end; merge them with each other and with ext[lo - 1] and
 *      ext[hi] where they touch;
 *   3. make room for the result (the only step that can fail, so -ENOMEM
 *      leaves the map as it was);
 *   4. report the device blocks that left the file, in lblk order, then
 *      splice the replacement in with one memmove.
 * The freed callback therefore runs before the array changes and must not
 * use the map.
 *
 * A set that maps a range onto device blocks it already held (turning an
 * UNWRITTEN extent written, say) does not report those blocks: only device
 * blocks the file no longer holds are freed, i.e. the replaced blocks minus
 * [pblk, pblk + len).
 *
 * Built with TFS_CHECKS=1, set and punch check the invariants before they
 * return and abort when they are broken.
 */
#include "extent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFS_EXT_KNOWN_FLAGS TFS_EXT_UNWRITTEN

typedef void (*freed_fn)(uint64_t pblk, uint64_t len, void *arg);

#if defined(TFS_CHECKS) && TFS_CHECKS
static void extmap_assert_ok(const struct tfs_extmap *m, const char *fn)
{
	/* as in alloc.c: amortise the O(n) check on big maps */
	static _Thread_local unsigned long calls;
	unsigned long every = m->n > 4096 ? (unsigned long)(m->n / 1024) : 1;

	if (++calls % every)
		return;
	if (tfs_extmap_check(m) == 0)
		return;
	fprintf(
	    stderr,
	    "tensorfs: extent map invariants broken after %s(); this is a bug, please report it\n",
	    fn);
	abort();
}
#define EXTMAP_CHECKED(m) extmap_assert_ok((m), __func__)
#else
#define EXTMAP_CHECKED(m) ((void)0)
#endif

void tfs_extmap_init(struct tfs_extmap *m)
{
	m->ext = NULL;
	m->n = m->cap = 0;
}

void tfs_extmap_release(struct tfs_extmap *m)
{
	free(m->ext);
	tfs_extmap_init(m);
}

static uint64_t ext_end(const struct tfs_extent *e)
{
	return e->lblk + e->len;
}

static int mergeable(const struct tfs_extent *a, const struct tfs_extent *b)
{
	return ext_end(a) == b->lblk && a->pblk + a->len == b->pblk &&
	       a->flags == b->flags;
}

/* Index of the first extent ending after lblk: the one holding lblk, or
 * the first one after it. */
static size_t first_ending_after(const struct tfs_extmap *m, uint64_t lblk)
{
	size_t lo = 0, hi = m->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ext_end(&m->ext[mid]) <= lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first extent starting at or after lblk. */
static size_t first_starting_from(const struct tfs_extmap *m, uint64_t lblk)
{
	size_t lo = 0, hi = m->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->ext[mid].lblk < lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Make room for 'need' extents: 0 or -ENOMEM, the map unchanged. */
static int reserve(struct tfs_extmap *m, size_t need)
{
	struct tfs_extent *p;
	size_t cap;

	if (need <= m->cap)
		return 0;
	if (need > UINT32_MAX)
		return -ENOMEM;
	/* most files here are one extent: start with room for one */
	cap = m->cap ? m->cap : 1;
	while (cap < need)
		cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
	p = realloc(m->ext, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->ext = p;
	m->cap = cap;
	return 0;
}

int tfs_extmap_lookup(const struct tfs_extmap *m, uint64_t lblk,
		      struct tfs_extent *out)
{
	size_t i = first_ending_after(m, lblk);
	const struct tfs_extent *e = i < m->n ? &m->ext[i] : NULL;
	uint64_t off;

	out->lblk = lblk;
	if (e && e->lblk <= lblk) {
		off = lblk - e->lblk;
		out->pblk = e->pblk + off;
		out->len = e->len - off;
		out->flags = e->flags;
		return 1;
	}
	out->pblk = 0;
	out->len = e ? e->lblk - lblk : UINT64_MAX - lblk;
	out->flags = 0;
	return 0;
}

/* Report [pblk, pblk + len) as freed, less the device blocks 'keep' maps:
 * those stay with the file. */
static void report_freed(uint64_t pblk, uint64_t len,
			 const struct tfs_extent *keep, freed_fn freed,
			 void *arg)
{
	uint64_t end = pblk + len, keep_end;

	if (!keep || end <= keep->pblk || pblk >= keep->pblk + keep->len) {
		freed(pblk, len, arg);
		return;
	}
	keep_end = keep->pblk + keep->len;
	if (pblk < keep->pblk)
		freed(pblk, keep->pblk - pblk, arg);
	if (end > keep_end)
		freed(keep_end, end - keep_end, arg);
}

/*
 * Replace whatever maps [lblk, end) by 'nw' (NULL: by a hole), as the top
 * of the file describes.  Returns 0 or -ENOMEM (map unchanged).
 */
static int replace(struct tfs_extmap *m, uint64_t lblk, uint64_t end,
		   const struct tfs_extent *nw, freed_fn freed, void *arg)
{
	struct tfs_extent rep[3], *e;
	size_t ov_lo, ov_hi, lo, hi, nrep = 0, k, i;
	uint64_t from, to;
	int rc = 0;

	ov_lo = lo = first_ending_after(m, lblk);
	ov_hi = hi = first_starting_from(m, end);

	if (lo == hi && !nw)
		goto out; /* punching a hole: nothing to do */
	if (lo < hi && m->ext[lo].lblk < lblk) {
		rep[nrep] = m->ext[lo];
		rep[nrep].len = lblk - m->ext[lo].lblk;
		nrep++;
	}
	if (nw)
		rep[nrep++] = *nw;
	if (lo < hi && ext_end(&m->ext[hi - 1]) > end) {
		e = &m->ext[hi - 1];
		rep[nrep].lblk = end;
		rep[nrep].pblk = e->pblk + (end - e->lblk);
		rep[nrep].len = ext_end(e) - end;
		rep[nrep].flags = e->flags;
		nrep++;
	}

	/* Merge: setting a range to what it already maps restores one
	 * extent, and sequential appends grow the previous one. */
	for (k = 0, i = 0; i < nrep; i++) {
		if (k && mergeable(&rep[k - 1], &rep[i]))
			rep[k - 1].len += rep[i].len;
		else
			rep[k++] = rep[i];
	}
	nrep = k;
	if (nrep && lo > 0 && mergeable(&m->ext[lo - 1], &rep[0])) {
		lo--;
		rep[0].lblk = m->ext[lo].lblk;
		rep[0].pblk = m->ext[lo].pblk;
		rep[0].len += m->ext[lo].len;
	}
	if (nrep && hi < m->n && mergeable(&rep[nrep - 1], &m->ext[hi])) {
		rep[nrep - 1].len += m->ext[hi].len;
		hi++;
	}

	rc = reserve(m, m->n - (hi - lo) + nrep);
	if (rc)
		goto out;

	for (i = ov_lo; freed && i < ov_hi; i++) {
		e = &m->ext[i];
		from = e->lblk > lblk ? e->lblk : lblk;
		to = ext_end(e) < end ? ext_end(e) : end;
		report_freed(e->pblk + (from - e->lblk), to - from, nw, freed,
			     arg);
	}

	memmove(&m->ext[lo + nrep], &m->ext[hi],
		(m->n - hi) * sizeof(m->ext[0]));
	memcpy(&m->ext[lo], rep, nrep * sizeof(rep[0]));
	m->n = m->n - (hi - lo) + nrep;
out:
	return rc;
}

int tfs_extmap_set(struct tfs_extmap *m, uint64_t lblk, uint64_t pblk,
		   uint64_t len, uint32_t flags, freed_fn freed, void *arg)
{
	struct tfs_extent nw = {
		.lblk = lblk,
		.pblk = pblk,
		.len = len,
		.flags = flags,
	};
	int rc;

	if (!len || len > UINT64_MAX - lblk || len > UINT64_MAX - pblk ||
	    (flags & ~TFS_EXT_KNOWN_FLAGS)) {
		rc = -EINVAL;
		goto out;
	}
	rc = replace(m, lblk, lblk + len, &nw, freed, arg);
out:
	EXTMAP_CHECKED(m);
	return rc;
}

int tfs_extmap_punch(struct tfs_extmap *m, uint64_t lblk, uint64_t len,
		     freed_fn freed, void *arg)
{
	int rc = 0;

	/* Anything reaching past the last block means "to the end". */
	if (len > UINT64_MAX - lblk)
		len = UINT64_MAX - lblk;
	if (len)
		rc = replace(m, lblk, lblk + len, NULL, freed, arg);
	EXTMAP_CHECKED(m);
	return rc;
}

size_t tfs_extmap_count(const struct tfs_extmap *m)
{
	return m->n;
}

uint64_t tfs_extmap_blocks(const struct tfs_extmap *m)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < m->n; i++)
		sum += m->ext[i].len;
	return sum;
}

int tfs_extmap_check(const struct tfs_extmap *m)
{
	const struct tfs_extent *e, *prev = NULL;
	size_t i;

	if (m->n > m->cap || (m->n && !m->ext))
		return -EUCLEAN;
	for (i = 0; i < m->n; i++, prev = e) {
		e = &m->ext[i];
		if (!e->len || e->len > UINT64_MAX - e->lblk ||
		    e->len > UINT64_MAX - e->pblk ||
		    (e->flags & ~TFS_EXT_KNOWN_FLAGS))
			return -EUCLEAN;
		if (prev && (ext_end(prev) > e->lblk || mergeable(prev, e)))
			return -EUCLEAN;
	}
	return 0;
}
