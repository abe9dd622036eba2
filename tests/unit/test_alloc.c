/*
 * test_alloc.c: the free-space allocator (lib/alloc.c).
 *
 * The module is compiled into this test (#include "alloc.c") rather than
 * linked from libtfs, for two reasons: malloc() can be made to fail, to
 * test what happens without memory, and the tests can reach the tree to
 * break an invariant on purpose and see tfs_alloc_check() notice.
 *
 * test_alloc_random_ops_match_bitmap_model drives the allocator with
 * thousands of random operations and compares every result, and the
 * whole free space after each step, with a bitmap that implements the
 * placement rules of alloc.h by brute force.  TFS_TEST_SEED=<n> in the
 * environment replays another sequence.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int fail_malloc;

static void *maybe_malloc(size_t n)
{
	return fail_malloc ? NULL : malloc(n);
}

#define malloc maybe_malloc
#include "alloc.c"
#include "testrng.h"
#undef malloc

#define GAP_MAX 4096u /* 16 MiB of 4 KiB blocks */

/* ===== helpers ===== */

struct ext_list {
	uint64_t start[64], count[64];
	int n;
	int stop_after; /* walk callback returns 1 after this many */
};

static int collect(uint64_t start, uint64_t count, void *arg)
{
	struct ext_list *l = arg;

	if (l->n < 64) {
		l->start[l->n] = start;
		l->count[l->n] = count;
	}
	l->n++;
	return l->stop_after && l->n >= l->stop_after;
}

static void assert_extents(struct tfs_alloc *a, int n, const uint64_t *se)
{
	struct ext_list l = { .n = 0 };
	uint64_t blocks = 0;
	int i;

	assert_int_equal(tfs_alloc_check(a), 0);
	assert_int_equal(tfs_alloc_walk(a, collect, &l), 0);
	assert_int_equal(l.n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(l.start[i], se[2 * i]);
		assert_int_equal(l.count[i], se[2 * i + 1]);
		blocks += se[2 * i + 1];
	}
	assert_int_equal(tfs_alloc_free_extents(a), n);
	assert_int_equal(tfs_alloc_free_blocks(a), blocks);
}

static void get_ok(struct tfs_alloc *a, uint64_t goal, uint64_t want,
		   uint64_t start, uint64_t count)
{
	uint64_t s = 0, n = want;

	assert_int_equal(tfs_alloc_get(a, goal, &s, &n), 0);
	assert_int_equal(s, start);
	assert_int_equal(n, count);
}

/* ===== construction ===== */

static void test_alloc_new_is_all_free(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(100, 1000);
	const uint64_t want[] = { 100, 1000 };

	(void)state;
	assert_non_null(a);
	assert_extents(a, 1, want);
	assert_int_equal(tfs_alloc_largest(a), 1000);
	tfs_alloc_free(a);
	tfs_alloc_free(NULL);
}

/* Allocation inside a range (a member of a set): from the goal when it
 * is free and inside, else the first fit, else the first free extent,
 * never past the range's end; -ENOSPC when the range has nothing. */
static void test_alloc_get_in_keeps_to_its_range(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 3000);
	uint64_t s, n;

	(void)state;
	assert_non_null(a);
	/* ranges [0, 1000), [1000, 2000), [2000, 3000); used: 1000..1099 */
	assert_int_equal(tfs_alloc_mark_used(a, 1000, 100), 0);
	n = 50;
	assert_int_equal(tfs_alloc_get_in(a, 1000, 2000, UINT64_MAX, &s, &n),
			 0);
	assert_int_equal(s, 1100);
	assert_int_equal(n, 50);
	/* a goal inside and free: from there, cut at the range's end */
	n = 500;
	assert_int_equal(tfs_alloc_get_in(a, 1000, 2000, 1800, &s, &n), 0);
	assert_int_equal(s, 1800);
	assert_int_equal(n, 200);
	/* a goal outside the range is ignored */
	n = 10;
	assert_int_equal(tfs_alloc_get_in(a, 2000, 3000, 5, &s, &n), 0);
	assert_int_equal(s, 2000);
	/* no run of 700 left in [1000, 2000): the first free extent, partly */
	n = 700;
	assert_int_equal(tfs_alloc_get_in(a, 1000, 2000, UINT64_MAX, &s, &n),
			 0);
	assert_int_equal(s, 1150);
	assert_int_equal(n, 650);
	n = 1;
	assert_int_equal(tfs_alloc_get_in(a, 1000, 2000, UINT64_MAX, &s, &n),
			 -ENOSPC);
	assert_int_equal(tfs_alloc_get_in(a, 2000, 2000, UINT64_MAX, &s, &n),
			 -EINVAL);
	n = 0;
	assert_int_equal(tfs_alloc_get_in(a, 0, 1000, UINT64_MAX, &s, &n),
			 -EINVAL);
	/* the other ranges are untouched */
	assert_int_equal(tfs_alloc_free_blocks(a), 1000 + 990);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

static void test_alloc_new_rejects_range_past_2_64(void **state)
{
	(void)state;
	errno = 0;
	assert_null(tfs_alloc_new(UINT64_MAX - 5, 10));
	assert_int_equal(errno, EINVAL);
	/* UINT64_MAX itself must stay out of range: it means "no goal". */
	assert_null(tfs_alloc_new(1, UINT64_MAX));
}

static void test_alloc_empty_range_has_no_space(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(7, 0);
	uint64_t s, n = 1;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), -ENOSPC);
	assert_int_equal(tfs_alloc_largest(a), 0);
	assert_int_equal(tfs_alloc_put(a, 7, 1), -EINVAL);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

/* ===== tfs_alloc_get ===== */

static void test_alloc_zero_count_is_rejected(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t all[] = { 0, 100 };
	uint64_t s = 12345, n = 0;

	(void)state;
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), -EINVAL);
	assert_int_equal(s, 12345);
	assert_int_equal(n, 0);
	assert_extents(a, 1, all);
	/* The cursor did not move either: the next run starts at 0. */
	get_ok(a, UINT64_MAX, 1, 0, 1);
	tfs_alloc_free(a);
}

static void test_alloc_goal_extends_contiguously(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100000);
	uint64_t end = 0;
	int i;

	(void)state;
	get_ok(a, UINT64_MAX, 8, 0, 8);
	end = 8;
	/* Another writer starts between the requests: the first file still
	 * grows in place. */
	get_ok(a, UINT64_MAX, 8, 8 + 8 * 16, 8);
	for (i = 0; i < 10; i++) {
		get_ok(a, end, 8, end, 8);
		end += 8;
	}
	tfs_alloc_free(a);
}

static void test_alloc_goal_run_stops_at_used_block(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 500, 10), 0);
	get_ok(a, 490, 100, 490, 10);
	/* Asking from the start of an extent takes its front. */
	get_ok(a, 0, 5, 0, 5);
	tfs_alloc_free(a);
}

static void test_alloc_goal_does_not_move_cursor(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100000);

	(void)state;
	get_ok(a, 5000, 10, 5000, 10);
	get_ok(a, UINT64_MAX, 10, 0, 10);
	tfs_alloc_free(a);
}

static void test_alloc_used_goal_starts_at_cursor(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100000);

	(void)state;
	get_ok(a, UINT64_MAX, 10, 0, 10); /* cursor -> 10 + 160 */
	get_ok(a, 5, 10, 170, 10);	  /* 5 is used */
	tfs_alloc_free(a);
}

static void test_alloc_goal_outside_range_is_ignored(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(1000, 1000);

	(void)state;
	get_ok(a, 10, 4, 1000, 4);
	get_ok(a, 2000, 4, 1000 + 4 + 64, 4);
	get_ok(a, UINT64_MAX - 1, 4, 1000 + 4 + 64 + 4 + 64, 4);
	tfs_alloc_free(a);
}

static void test_alloc_concurrent_streams_start_apart(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1 << 20);
	uint64_t a_end, b_start, b_end;
	int i;

	(void)state;
	get_ok(a, UINT64_MAX, 256, 0, 256);
	a_end = 256;
	b_start = 256 + GAP_MAX;
	get_ok(a, UINT64_MAX, 256, b_start, 256);
	b_end = b_start + 256;
	/* Interleaved growth: each stream stays one run, stream A fills
	 * exactly the gap in front of B. */
	for (i = 0; i < (int)(GAP_MAX / 256); i++) {
		get_ok(a, a_end, 256, a_end, 256);
		a_end += 256;
		get_ok(a, b_end, 256, b_end, 256);
		b_end += 256;
	}
	assert_int_equal(a_end, b_start);
	/* A is blocked by B now; its next run is a new one, after B's gap. */
	get_ok(a, a_end, 256, b_start + 256 + GAP_MAX, 256);
	tfs_alloc_free(a);
}

static void test_alloc_small_requests_leave_small_gaps(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100000);

	(void)state;
	get_ok(a, UINT64_MAX, 1, 0, 1);
	get_ok(a, UINT64_MAX, 2, 17, 2);
	get_ok(a, UINT64_MAX, 1, 17 + 2 + 32, 1);
	tfs_alloc_free(a);
}

static void test_alloc_gap_is_capped_at_16_mib(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1 << 20);

	(void)state;
	get_ok(a, UINT64_MAX, 1000, 0, 1000);
	get_ok(a, UINT64_MAX, 1000, 1000 + GAP_MAX, 1000);
	/* Nothing holds that much: all of the largest extent, from its
	 * start. */
	get_ok(a, UINT64_MAX, UINT64_MAX, 2000 + GAP_MAX,
	       (1 << 20) - 2000 - GAP_MAX);
	tfs_alloc_free(a);
}

static void test_alloc_cursor_wraps_around(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);

	(void)state;
	get_ok(a, UINT64_MAX, 50, 0, 50);   /* cursor 850 */
	get_ok(a, UINT64_MAX, 50, 850, 50); /* past the end: cursor 0 */
	get_ok(a, UINT64_MAX, 50, 50, 50);
	tfs_alloc_free(a);
}

static void test_alloc_wraps_to_fit_before_cursor(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);
	const uint64_t left[] = { 10, 160 };

	(void)state;
	get_ok(a, UINT64_MAX, 10, 0, 10); /* cursor 170 */
	assert_int_equal(tfs_alloc_mark_used(a, 170, 830), 0);
	assert_extents(a, 1, left);
	get_ok(a, UINT64_MAX, 10, 10, 10);
	tfs_alloc_free(a);
}

static void test_alloc_skips_extents_too_small_after_cursor(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);

	(void)state;
	/* Free: [0,100) [105,110) [120,140) [150,1000) */
	assert_int_equal(tfs_alloc_mark_used(a, 100, 5), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 110, 10), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 140, 10), 0);
	get_ok(a, UINT64_MAX, 10, 0, 10);   /* cursor 170 */
	get_ok(a, UINT64_MAX, 90, 170, 90); /* cursor 1000 -> 0 */
	/* From 0: [10,100) fits 10, the first fit wins over later ones. */
	get_ok(a, UINT64_MAX, 10, 10, 10); /* cursor 180 */
	assert_int_equal(tfs_alloc_mark_used(a, 20, 80), 0);
	/* Free: [105,110) [120,140) [150,170) [260,1000); from cursor 180
	 * to the end, then [105,110) is too small and [120,140) fits. */
	assert_int_equal(tfs_alloc_mark_used(a, 260, 740), 0);
	get_ok(a, UINT64_MAX, 15, 120, 15);
	tfs_alloc_free(a);
}

static void test_alloc_falls_back_to_largest_extent(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 30);
	const uint64_t left[] = { 0, 3, 14, 5 };

	(void)state;
	/* Free: [0,3) [4,11) [14,19), everything else used. */
	assert_int_equal(tfs_alloc_mark_used(a, 3, 1), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 11, 3), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 19, 11), 0);
	assert_int_equal(tfs_alloc_largest(a), 7);
	get_ok(a, UINT64_MAX, 10, 4, 7);
	assert_extents(a, 2, left);
	assert_int_equal(tfs_alloc_largest(a), 5);
	tfs_alloc_free(a);
}

static void test_alloc_full_returns_enospc(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 64);
	uint64_t s, n = UINT64_MAX;

	(void)state;
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), 0);
	assert_int_equal(s, 0);
	assert_int_equal(n, 64);
	n = 1;
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), -ENOSPC);
	assert_int_equal(tfs_alloc_get(a, 3, &s, &n), -ENOSPC);
	assert_int_equal(tfs_alloc_free_blocks(a), 0);
	assert_int_equal(tfs_alloc_free_extents(a), 0);
	assert_int_equal(tfs_alloc_largest(a), 0);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

/* ===== tfs_alloc_put ===== */

static void test_alloc_put_merges_neighbours(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t two[] = { 10, 10, 30, 10 };
	const uint64_t both[] = { 10, 30 };
	const uint64_t right[] = { 10, 35 };
	const uint64_t left[] = { 5, 40 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 0, 100), 0);
	assert_int_equal(tfs_alloc_put(a, 10, 10), 0);
	assert_int_equal(tfs_alloc_put(a, 30, 10), 0);
	assert_extents(a, 2, two);
	assert_int_equal(tfs_alloc_put(a, 20, 10), 0);
	assert_extents(a, 1, both);
	assert_int_equal(tfs_alloc_put(a, 40, 5), 0);
	assert_extents(a, 1, right);
	assert_int_equal(tfs_alloc_put(a, 5, 5), 0);
	assert_extents(a, 1, left);
	tfs_alloc_free(a);
}

static void test_alloc_double_free_is_rejected(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t before[] = { 0, 10, 20, 10, 50, 50 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 10, 10), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 30, 20), 0);
	assert_extents(a, 3, before);
	assert_int_equal(tfs_alloc_put(a, 20, 10), -EINVAL); /* all free */
	assert_int_equal(tfs_alloc_put(a, 25, 10), -EINVAL); /* tail used */
	assert_int_equal(tfs_alloc_put(a, 5, 10), -EINVAL);  /* head used */
	assert_int_equal(tfs_alloc_put(a, 10, 40), -EINVAL); /* spans one */
	assert_int_equal(tfs_alloc_put(a, 45, 6), -EINVAL);  /* last free */
	assert_extents(a, 3, before);
	tfs_alloc_free(a);
}

static void test_alloc_put_outside_range_is_rejected(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(100, 100);
	const uint64_t none[] = { 0, 0 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 100, 100), 0);
	assert_int_equal(tfs_alloc_put(a, 99, 2), -EINVAL);
	assert_int_equal(tfs_alloc_put(a, 199, 2), -EINVAL);
	assert_int_equal(tfs_alloc_put(a, 200, 1), -EINVAL);
	assert_int_equal(tfs_alloc_put(a, 150, 0), -EINVAL);
	assert_int_equal(tfs_alloc_put(a, 150, UINT64_MAX), -EINVAL);
	assert_extents(a, 0, none);
	tfs_alloc_free(a);
}

/* ===== tfs_alloc_mark_used ===== */

static void test_alloc_mark_used_splits_extent(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t split[] = { 0, 40, 50, 50 };
	const uint64_t trimmed[] = { 1, 39, 50, 49 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 40, 10), 0);
	assert_extents(a, 2, split);
	assert_int_equal(tfs_alloc_mark_used(a, 0, 1), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 99, 1), 0);
	assert_extents(a, 2, trimmed);
	tfs_alloc_free(a);
}

static void test_alloc_mark_used_twice_is_rejected(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t split[] = { 0, 40, 50, 50 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 40, 10), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 40, 10), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 45, 1), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 35, 10), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 49, 2), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 0, 0), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 99, 2), -EINVAL);
	assert_int_equal(tfs_alloc_mark_used(a, 100, 1), -EINVAL);
	assert_extents(a, 2, split);
	tfs_alloc_free(a);
}

/* ===== tfs_alloc_walk ===== */

static void test_alloc_walk_visits_extents_in_order(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);
	struct ext_list l = { .n = 0 };
	int i;

	(void)state;
	/* Used blocks in descending order, so the tree is not built in
	 * the order the walk reports. */
	for (i = 9; i >= 0; i--)
		assert_int_equal(tfs_alloc_mark_used(a, 100 * i + 50, 1), 0);
	assert_int_equal(tfs_alloc_walk(a, collect, &l), 0);
	assert_int_equal(l.n, 11);
	for (i = 1; i < l.n; i++)
		assert_true(l.start[i - 1] + l.count[i - 1] < l.start[i]);
	tfs_alloc_free(a);
}

static void test_alloc_walk_stops_at_nonzero(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);
	struct ext_list l = { .n = 0, .stop_after = 3 };
	int i;

	(void)state;
	for (i = 0; i < 10; i++)
		assert_int_equal(tfs_alloc_mark_used(a, 100 * i + 50, 1), 0);
	assert_int_equal(tfs_alloc_walk(a, collect, &l), 1);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.start[2], 151);
	tfs_alloc_free(a);
}

/* ===== tfs_alloc_check ===== */

static void test_alloc_check_detects_broken_invariants(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	struct fext *e;

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 40, 10), 0);
	assert_int_equal(tfs_alloc_check(a), 0);

	/* Touching extents left unmerged. */
	e = find_le(a->root, 0);
	e->len = 50;
	a->nblocks += 10;
	tree_touch(a->root, 0);
	assert_int_equal(tfs_alloc_check(a), -EUCLEAN);
	e->len = 40;
	a->nblocks -= 10;
	tree_touch(a->root, 0);
	assert_int_equal(tfs_alloc_check(a), 0);

	/* Counters that do not add up. */
	a->nblocks++;
	assert_int_equal(tfs_alloc_check(a), -EUCLEAN);
	a->nblocks--;
	a->next++;
	assert_int_equal(tfs_alloc_check(a), -EUCLEAN);
	a->next--;

	/* A stale subtree maximum. */
	a->root->max++;
	assert_int_equal(tfs_alloc_check(a), -EUCLEAN);
	a->root->max--;

	/* A cursor out of range. */
	a->cursor = 100;
	assert_int_equal(tfs_alloc_check(a), -EUCLEAN);
	a->cursor = 0;
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

static void test_alloc_many_extents_stay_balanced(void **state)
{
	enum {
		N = 1 << 13
	};
	struct tfs_alloc *a = tfs_alloc_new(0, 2 * N);
	uint64_t i, s, n;

	(void)state;
	/* Every odd block used: N one-block extents. */
	for (i = 1; i < 2 * N; i += 2)
		assert_int_equal(tfs_alloc_mark_used(a, i, 1), 0);
	assert_int_equal(tfs_alloc_free_extents(a), N);
	/* AVL height bound: < 1.45 log2(N + 2). */
	assert_true(a->root->h <= 19);
	assert_int_equal(tfs_alloc_largest(a), 1);

	/* Freeing odd blocks from the top merges everything back. */
	for (i = 2 * N - 1; i > 2 * N / 2; i -= 2)
		assert_int_equal(tfs_alloc_put(a, i, 1), 0);
	assert_int_equal(tfs_alloc_largest(a), N);
	/* The one extent that holds 100 is found among N / 2 small ones. */
	n = 100;
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), 0);
	assert_int_equal(s, N);
	assert_int_equal(n, 100);
	assert_true(a->root->h <= 19);
	tfs_alloc_free(a);
}

/* ===== without memory ===== */

/* Take away the spare node and make malloc() fail. */
static void starve(struct tfs_alloc *a)
{
	free(a->spare);
	a->spare = NULL;
	fail_malloc = 1;
}

static void test_alloc_put_without_memory_changes_nothing(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t none[] = { 0, 0 };
	const uint64_t one[] = { 10, 20 };

	(void)state;
	assert_int_equal(tfs_alloc_mark_used(a, 0, 100), 0);
	assert_int_equal(tfs_alloc_put(a, 10, 10), 0);
	starve(a);
	/* A new free extent needs a node... */
	assert_int_equal(tfs_alloc_put(a, 50, 10), -ENOMEM);
	/* ...growing one does not. */
	assert_int_equal(tfs_alloc_put(a, 20, 10), 0);
	assert_extents(a, 1, one);
	fail_malloc = 0;
	assert_int_equal(tfs_alloc_mark_used(a, 10, 20), 0);
	assert_extents(a, 0, none);
	tfs_alloc_free(a);
}

static void test_alloc_mark_used_without_memory_changes_nothing(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	const uint64_t all[] = { 0, 100 };
	const uint64_t trimmed[] = { 10, 80 };

	(void)state;
	starve(a);
	assert_int_equal(tfs_alloc_mark_used(a, 40, 10), -ENOMEM);
	assert_extents(a, 1, all);
	assert_int_equal(tfs_alloc_mark_used(a, 0, 10), 0);
	assert_int_equal(tfs_alloc_mark_used(a, 90, 10), 0);
	assert_extents(a, 1, trimmed);
	fail_malloc = 0;
	tfs_alloc_free(a);
}

static void test_alloc_get_without_memory_avoids_splitting(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 1000);
	const uint64_t left[] = { 20, 980 };

	(void)state;
	get_ok(a, UINT64_MAX, 10, 0, 10); /* cursor 170 */
	starve(a);
	/* The goal and the cursor are inside [10,1000): taking a run there
	 * would split it, so the run comes from the extent's front. */
	get_ok(a, 500, 10, 10, 10);
	assert_extents(a, 1, left);
	/* A goal run that reaches the extent's end needs no node. */
	get_ok(a, 990, 100, 990, 10);
	fail_malloc = 0;
	/* With memory, goals are honoured again. */
	get_ok(a, 500, 10, 500, 10);
	tfs_alloc_free(a);
}

/* ===== random operations against a bitmap ===== */

#define M_FIRST 1000u
#define M_COUNT 3000u
#define M_END	(M_FIRST + M_COUNT)

struct model {
	uint8_t used[M_COUNT];
	uint64_t cursor;
};

static int m_is_free(const struct model *m, uint64_t b)
{
	return b >= M_FIRST && b < M_END && !m->used[b - M_FIRST];
}

static uint64_t m_run(const struct model *m, uint64_t b)
{
	uint64_t n = 0;

	while (m_is_free(m, b + n))
		n++;
	return n;
}

static void m_set(struct model *m, uint64_t s, uint64_t n, uint8_t used)
{
	while (n--)
		m->used[s++ - M_FIRST] = used;
}

/* The rules of alloc.h, by brute force. */
static int m_get(struct model *m, uint64_t goal, uint64_t *start,
		 uint64_t *count)
{
	uint64_t want = *count, b, len, s = 0, n = 0, gap;
	uint64_t after = 0, from_first = 0, big_s = 0, big_n = 0;

	if (!want)
		return -EINVAL;
	if (m_is_free(m, goal)) {
		s = goal;
		n = m_run(m, goal);
		n = n < want ? n : want;
		goto out;
	}
	for (b = M_FIRST; b < M_END; b += len ? len : 1) {
		len = m_run(m, b);
		if (!len)
			continue;
		if (len > big_n) {
			big_s = b;
			big_n = len;
		}
		if (len >= want && b >= m->cursor && !after)
			after = b;
		if (len >= want && !from_first)
			from_first = b;
	}
	if (!big_n)
		return -ENOSPC;
	if (m_run(m, m->cursor) >= want) {
		s = m->cursor;
		n = want;
	} else if (after || from_first) {
		s = after ? after : from_first;
		n = want;
	} else {
		s = big_s;
		n = big_n;
	}
	gap = want < GAP_MAX / 16 ? want * 16 : GAP_MAX;
	m->cursor = gap >= M_END - (s + n) ? M_FIRST : s + n + gap;
out:
	m_set(m, s, n, 1);
	*start = s;
	*count = n;
	return 0;
}

static int m_range_is(const struct model *m, uint64_t s, uint64_t n, int free)
{
	uint64_t i;

	if (!n || s < M_FIRST || s >= M_END || n > M_END - s)
		return 0;
	for (i = 0; i < n; i++)
		if (m_is_free(m, s + i) != free)
			return 0;
	return 1;
}

struct m_walk {
	const struct model *m;
	uint64_t pos; /* next block the walk should reach */
	int bad;
};

/* Each extent the allocator reports must be a maximal free run. */
static int m_walk_cb(uint64_t start, uint64_t count, void *arg)
{
	struct m_walk *w = arg;
	uint64_t b;

	for (b = w->pos; b < start; b++)
		if (m_is_free(w->m, b))
			w->bad = 1;
	if (m_run(w->m, start) != count || m_is_free(w->m, start - 1))
		w->bad = 1;
	w->pos = start + count;
	return w->bad;
}

static void compare_with_model(struct tfs_alloc *a, const struct model *m)
{
	struct m_walk w = { .m = m, .pos = M_FIRST };
	uint64_t b, len, blocks = 0, extents = 0, big = 0;

	assert_int_equal(tfs_alloc_check(a), 0);
	for (b = M_FIRST; b < M_END; b += len ? len : 1) {
		len = m_run(m, b);
		if (len) {
			blocks += len;
			extents++;
			big = len > big ? len : big;
		}
	}
	assert_int_equal(tfs_alloc_free_blocks(a), blocks);
	assert_int_equal(tfs_alloc_free_extents(a), extents);
	assert_int_equal(tfs_alloc_largest(a), big);
	assert_int_equal(tfs_alloc_walk(a, m_walk_cb, &w), 0);
	for (b = w.pos; b < M_END; b++)
		assert_false(m_is_free(m, b));
}

/* A random block, now and then just outside the range. */
static uint64_t random_block(void)
{
	return M_FIRST - 8 + tfs_rng_below(M_COUNT + 16);
}

static void test_alloc_random_ops_match_bitmap_model(void **state)
{
	static struct model m;
	struct tfs_alloc *a = tfs_alloc_new(M_FIRST, M_COUNT);
	uint64_t ends[8] = { 0 }, s, n, s2, n2, want, goal;
	int i, rc, rc2, op;

	(void)state;
	tfs_rng_seed(20240611);
	memset(&m, 0, sizeof(m));
	m.cursor = M_FIRST;
	for (i = 0; i < 20000; i++) {
		op = (int)tfs_rng_below(100);
		if (op < 45) {
			switch (tfs_rng_below(4)) {
			case 0:
				goal = UINT64_MAX;
				break;
			case 1:
				goal = random_block();
				break;
			default: /* a file growing */
				goal = ends[tfs_rng_below(8)];
				break;
			}
			want = tfs_rng_below(100) ? 1 + tfs_rng_below(64) : 0;
			if (!tfs_rng_below(20))
				want = 1 + tfs_rng_below(2 * M_COUNT);
			n = n2 = want;
			s = s2 = 0;
			rc = tfs_alloc_get(a, goal, &s, &n);
			rc2 = m_get(&m, goal, &s2, &n2);
			assert_int_equal(rc, rc2);
			if (!rc) {
				assert_int_equal(s, s2);
				assert_int_equal(n, n2);
				ends[tfs_rng_below(8)] = s + n;
			}
		} else if (op < 80) {
			/* Mostly valid puts of part of a used run. */
			s = random_block();
			n = 1 + tfs_rng_below(40);
			if (tfs_rng_below(4)) {
				while (m_is_free(&m, s) && s < M_END)
					s++;
				for (n2 = 0; n2 < n && s + n2 < M_END &&
					     !m_is_free(&m, s + n2);
				     n2++)
					;
				if (n2)
					n = n2;
			}
			rc2 = m_range_is(&m, s, n, 0) ? 0 : -EINVAL;
			rc = tfs_alloc_put(a, s, n);
			assert_int_equal(rc, rc2);
			if (!rc)
				m_set(&m, s, n, 0);
		} else if (op < 97) {
			/* Mostly valid claims of part of a free run. */
			s = random_block();
			n = 1 + tfs_rng_below(40);
			if (tfs_rng_below(2) && m_is_free(&m, s)) {
				n2 = m_run(&m, s);
				n = n < n2 ? n : n2;
			}
			rc2 = m_range_is(&m, s, n, 1) ? 0 : -EINVAL;
			rc = tfs_alloc_mark_used(a, s, n);
			assert_int_equal(rc, rc2);
			if (!rc)
				m_set(&m, s, n, 1);
		} else {
			/* Free everything now and then, so the allocator
			 * also sees long runs and an empty tree refilled. */
			for (s = M_FIRST; s < M_END; s += n ? n : 1) {
				for (n = 0;
				     s + n < M_END && !m_is_free(&m, s + n);
				     n++)
					;
				if (n) {
					assert_int_equal(tfs_alloc_put(a, s, n),
							 0);
					m_set(&m, s, n, 0);
				}
			}
		}
		compare_with_model(a, &m);
	}
	tfs_alloc_free(a);
}

/* ===== discard tracking ===== */

/* Take every ready extent; return the blocks taken, each put back. */
static uint64_t take_all_ready(struct tfs_alloc *a)
{
	uint64_t s, n, total = 0;

	while (tfs_alloc_take_discard(a, 0, UINT64_MAX, 1, UINT64_MAX, &s,
				      &n) == 1) {
		total += n;
		assert_int_equal(tfs_alloc_put(a, s, n), 0);
	}
	return total;
}

static void test_alloc_freed_blocks_ready_after_two_checkpoints(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(100, 1000);
	uint64_t s, n = 50;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_track_discard(a), 0);
	/* at mount all the free space waits: the older copy may map it */
	assert_int_equal(tfs_alloc_discard_waiting(a), 1000);
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &s, &n), 0);
	assert_int_equal(tfs_alloc_discard_waiting(a), 950);
	assert_int_equal(tfs_alloc_put_freed(a, s, n), 0);
	assert_int_equal(tfs_alloc_discard_waiting(a), 1000);
	assert_int_equal(take_all_ready(a), 0);
	tfs_alloc_age(a);
	assert_int_equal(take_all_ready(a), 0);
	assert_int_equal(tfs_alloc_discard_waiting(a), 1000);
	tfs_alloc_age(a);
	assert_int_equal(tfs_alloc_discard_waiting(a), 0);
	assert_int_equal(tfs_alloc_discard_ready(a), 1000);
	assert_int_equal(take_all_ready(a), 1000);
	/* discarded once: given back untracked, never discarded again */
	tfs_alloc_age(a);
	tfs_alloc_age(a);
	assert_int_equal(take_all_ready(a), 0);
	assert_int_equal(tfs_alloc_free_blocks(a), 1000);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

static void test_alloc_reused_block_restarts_its_wait(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	uint64_t s, n = 10, s2, n2 = 10;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_mark_used(a, 0, 100), 0);
	assert_int_equal(tfs_alloc_track_discard(a), 0);
	assert_int_equal(tfs_alloc_put_freed(a, 20, 10), 0);
	tfs_alloc_age(a);
	/* handed out again one checkpoint later, freed again */
	assert_int_equal(tfs_alloc_get(a, 20, &s, &n), 0);
	assert_int_equal(s, 20);
	assert_int_equal(tfs_alloc_discard_waiting(a), 0);
	assert_int_equal(tfs_alloc_put_freed(a, 20, 10), 0);
	tfs_alloc_age(a);
	/* the first wait would have ended here: the second has not */
	assert_int_equal(take_all_ready(a), 0);
	tfs_alloc_age(a);
	assert_int_equal(tfs_alloc_discard_ready(a), 10);
	/* a ready block handed out is no longer ready */
	assert_int_equal(tfs_alloc_get(a, 25, &s2, &n2), 0);
	assert_int_equal(s2, 25);
	assert_int_equal(n2, 5);
	assert_int_equal(tfs_alloc_discard_ready(a), 5);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

static void test_alloc_discard_takes_blocks_out_of_free_space(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 64);
	uint64_t s = 0, n = 0, g, c = 8;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_track_discard(a), 0);
	tfs_alloc_age(a);
	tfs_alloc_age(a);
	assert_int_equal(
	    tfs_alloc_take_discard(a, 0, UINT64_MAX, 1, 16, &s, &n), 1);
	assert_int_equal(s, 0);
	assert_int_equal(n, 16);
	/* while it is discarded nobody gets it */
	assert_int_equal(tfs_alloc_free_blocks(a), 48);
	assert_int_equal(tfs_alloc_get(a, 0, &g, &c), 0);
	assert_true(g >= 16);
	assert_int_equal(tfs_alloc_put(a, g, c), 0);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	/* the 8 handed out and the 16 discarded are no longer ready */
	assert_int_equal(tfs_alloc_discard_ready(a), 40);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

/* A window and a minimum length: only ready blocks inside [lo, hi), in
 * pieces there at least minlen long, in block order; a piece from inside
 * an extent splits it. */
static void test_alloc_discard_keeps_to_its_window(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	uint64_t s = 0, n = 0, g = 0, c = 5;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_track_discard(a), 0);
	tfs_alloc_age(a);
	tfs_alloc_age(a);
	/* free and ready: [0, 100); take [20, 25) out: [0,20) [25,100) */
	assert_int_equal(tfs_alloc_mark_used(a, 20, 5), 0);
	assert_int_equal(tfs_alloc_discard_ready(a), 95);
	/* [10, 30): the piece [10, 20) comes first, then [25, 30) */
	assert_int_equal(tfs_alloc_take_discard(a, 10, 30, 1, 100, &s, &n), 1);
	assert_int_equal(s, 10);
	assert_int_equal(n, 10);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	assert_int_equal(tfs_alloc_take_discard(a, 10, 30, 1, 100, &s, &n), 1);
	assert_int_equal(s, 25);
	assert_int_equal(n, 5);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	assert_int_equal(tfs_alloc_take_discard(a, 10, 30, 1, 100, &s, &n), 0);
	/* ready now: [0, 10) and [30, 100); minlen 11 skips the first */
	assert_int_equal(tfs_alloc_discard_ready(a), 80);
	assert_int_equal(tfs_alloc_take_discard(a, 0, 100, 11, 3, &s, &n), 1);
	assert_int_equal(s, 30);
	assert_int_equal(n, 3);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	/* a minlen no piece in the window reaches */
	assert_int_equal(tfs_alloc_take_discard(a, 0, 40, 11, 100, &s, &n), 0);
	/* the middle of [33, 100): a split, and nobody gets it meanwhile */
	assert_int_equal(tfs_alloc_take_discard(a, 50, 60, 1, 100, &s, &n), 1);
	assert_int_equal(s, 50);
	assert_int_equal(n, 10);
	assert_int_equal(tfs_alloc_get(a, 50, &g, &c), 0);
	assert_true(g + c <= 50 || g >= 60);
	assert_int_equal(tfs_alloc_put(a, g, c), 0);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

static void test_alloc_discard_without_memory_forgets_not_claims(void **state)
{
	struct tfs_alloc *a = tfs_alloc_new(0, 100);
	uint64_t s = 0, n = 0;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tfs_alloc_track_discard(a), 0);
	tfs_alloc_age(a);
	tfs_alloc_age(a);
	/* free [0, 100), ready [10, 100) */
	assert_int_equal(
	    tfs_alloc_take_discard(a, 0, UINT64_MAX, 1, 10, &s, &n), 1);
	assert_int_equal(tfs_alloc_put(a, s, n), 0);
	assert_int_equal(tfs_alloc_discard_ready(a), 90);
	/* a block from the middle, with a node for the free space's split
	 * but none for the ready set's: the set drops the whole extent */
	if (!a->spare)
		a->spare = malloc(sizeof(*a->spare));
	free(a->age[READY]->spare);
	a->age[READY]->spare = NULL;
	fail_malloc = 1;
	n = 1;
	assert_int_equal(tfs_alloc_get(a, 50, &s, &n), 0);
	fail_malloc = 0;
	assert_int_equal(s, 50);
	assert_int_equal(tfs_alloc_discard_ready(a), 0);
	assert_int_equal(tfs_alloc_check(a), 0);
	tfs_alloc_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_new_is_all_free),
		cmocka_unit_test(test_alloc_new_rejects_range_past_2_64),
		cmocka_unit_test(test_alloc_empty_range_has_no_space),
		cmocka_unit_test(test_alloc_zero_count_is_rejected),
		cmocka_unit_test(test_alloc_goal_extends_contiguously),
		cmocka_unit_test(test_alloc_goal_run_stops_at_used_block),
		cmocka_unit_test(test_alloc_goal_does_not_move_cursor),
		cmocka_unit_test(test_alloc_used_goal_starts_at_cursor),
		cmocka_unit_test(test_alloc_goal_outside_range_is_ignored),
		cmocka_unit_test(test_alloc_concurrent_streams_start_apart),
		cmocka_unit_test(test_alloc_small_requests_leave_small_gaps),
		cmocka_unit_test(test_alloc_gap_is_capped_at_16_mib),
		cmocka_unit_test(test_alloc_cursor_wraps_around),
		cmocka_unit_test(test_alloc_wraps_to_fit_before_cursor),
		cmocka_unit_test(
		    test_alloc_skips_extents_too_small_after_cursor),
		cmocka_unit_test(test_alloc_falls_back_to_largest_extent),
		cmocka_unit_test(test_alloc_full_returns_enospc),
		cmocka_unit_test(test_alloc_put_merges_neighbours),
		cmocka_unit_test(test_alloc_double_free_is_rejected),
		cmocka_unit_test(test_alloc_put_outside_range_is_rejected),
		cmocka_unit_test(test_alloc_mark_used_splits_extent),
		cmocka_unit_test(test_alloc_mark_used_twice_is_rejected),
		cmocka_unit_test(test_alloc_walk_visits_extents_in_order),
		cmocka_unit_test(test_alloc_walk_stops_at_nonzero),
		cmocka_unit_test(test_alloc_check_detects_broken_invariants),
		cmocka_unit_test(test_alloc_many_extents_stay_balanced),
		cmocka_unit_test(test_alloc_put_without_memory_changes_nothing),
		cmocka_unit_test(
		    test_alloc_mark_used_without_memory_changes_nothing),
		cmocka_unit_test(
		    test_alloc_get_without_memory_avoids_splitting),
		cmocka_unit_test(test_alloc_random_ops_match_bitmap_model),
		cmocka_unit_test(
		    test_alloc_freed_blocks_ready_after_two_checkpoints),
		cmocka_unit_test(test_alloc_reused_block_restarts_its_wait),
		cmocka_unit_test(
		    test_alloc_discard_takes_blocks_out_of_free_space),
		cmocka_unit_test(test_alloc_discard_keeps_to_its_window),
		cmocka_unit_test(test_alloc_get_in_keeps_to_its_range),
		cmocka_unit_test(
		    test_alloc_discard_without_memory_forgets_not_claims),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
