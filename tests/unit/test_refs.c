/*
 * test_refs.c: the table of shared blocks' counts (lib/refs.c).
 *
 * The module is compiled into this test (#include "refs.c") so that
 * malloc() and realloc() can be made to fail and "a failed call changes
 * nothing" be tested.
 *
 * test_refs_random_ops_match_block_model drives a table with thousands
 * of random increments, decrements and sets, some without memory, and
 * compares every block's count, every report and the table's invariants
 * with an array holding each block's count.  TFS_TEST_SEED=<n> in the
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

static int fail_alloc;

static void *maybe_malloc(size_t n)
{
	return fail_alloc ? NULL : malloc(n);
}

static void *maybe_realloc(void *p, size_t n)
{
	return fail_alloc ? NULL : realloc(p, n);
}

#define malloc	maybe_malloc
#define realloc maybe_realloc
#include "refs.c"
#include "testrng.h"
#undef malloc
#undef realloc

/* ===== helpers ===== */

struct report {
	uint64_t start[256], len[256];
	uint32_t count[256];
	int n;
};

static void log_report(uint64_t start, uint64_t len, uint32_t count, void *arg)
{
	struct report *r = arg;

	assert_true(r->n < 256);
	r->start[r->n] = start;
	r->len[r->n] = len;
	r->count[r->n] = count;
	r->n++;
}

/* The table must hold exactly these (start, len, count) triples. */
static void assert_table(const struct tfs_refs *t, size_t n, const uint64_t *q)
{
	assert_int_equal(tfs_refs_check(t), 0);
	assert_int_equal(tfs_refs_count(t), n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t->r[i].start, q[3 * i]);
		assert_int_equal(t->r[i].len, q[3 * i + 1]);
		assert_int_equal(t->r[i].count, q[3 * i + 2]);
	}
}

/* ===== tests ===== */

static void test_refs_empty_table_counts_one(void **state)
{
	struct tfs_refs t;
	uint64_t run;

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_get(&t, 7, &run), 1);
	assert_int_equal(run, UINT64_MAX - 7);
	assert_false(tfs_refs_any(&t, 0, UINT64_MAX));
	assert_int_equal(tfs_refs_extra(&t), 0);
	assert_int_equal(tfs_refs_ram(&t), 0);
	tfs_refs_release(&t);
}

static void test_refs_inc_then_dec_frees_once(void **state)
{
	struct tfs_refs t;
	struct report r = { 0 };
	uint64_t run;

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_inc(&t, 100, 10, log_report, &r), 0);
	assert_table(&t, 1, (uint64_t[]){ 100, 10, 2 });
	assert_int_equal(r.n, 1);
	assert_int_equal(r.count[0], 2);
	assert_int_equal(tfs_refs_extra(&t), 10);
	assert_int_equal(tfs_refs_get(&t, 95, &run), 1);
	assert_int_equal(run, 5);
	assert_int_equal(tfs_refs_get(&t, 104, &run), 2);
	assert_int_equal(run, 6);
	assert_true(tfs_refs_any(&t, 90, 11));
	assert_false(tfs_refs_any(&t, 90, 10));
	assert_false(tfs_refs_any(&t, 110, 5));

	/* one owner gives the middle back: the rest stays shared */
	r.n = 0;
	assert_int_equal(tfs_refs_dec(&t, 103, 2, log_report, &r), 0);
	assert_table(&t, 2, (uint64_t[]){ 100, 3, 2, 105, 5, 2 });
	assert_int_equal(r.n, 1);
	assert_int_equal(r.start[0], 103);
	assert_int_equal(r.count[0], 1);

	/* the other owner of the middle: free now */
	r.n = 0;
	assert_int_equal(tfs_refs_dec(&t, 102, 4, log_report, &r), 0);
	assert_table(&t, 2, (uint64_t[]){ 100, 2, 2, 106, 4, 2 });
	assert_int_equal(r.n, 3);
	assert_int_equal(r.start[0], 102);
	assert_int_equal(r.count[0], 1);
	assert_int_equal(r.start[1], 103);
	assert_int_equal(r.len[1], 2);
	assert_int_equal(r.count[1], 0);
	assert_int_equal(r.start[2], 105);
	assert_int_equal(r.count[2], 1);
	tfs_refs_release(&t);
}

static void test_refs_touching_equal_ranges_merge(void **state)
{
	struct tfs_refs t;

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_inc(&t, 10, 5, NULL, NULL), 0);
	assert_int_equal(tfs_refs_inc(&t, 20, 5, NULL, NULL), 0);
	assert_int_equal(tfs_refs_inc(&t, 15, 5, NULL, NULL), 0);
	assert_table(&t, 1, (uint64_t[]){ 10, 15, 2 });
	/* a third owner of the middle splits it, a fourth of the rest... */
	assert_int_equal(tfs_refs_inc(&t, 12, 3, NULL, NULL), 0);
	assert_table(&t, 3, (uint64_t[]){ 10, 2, 2, 12, 3, 3, 15, 10, 2 });
	/* ...and setting the same count merges again */
	assert_int_equal(tfs_refs_set(&t, 12, 3, 2), 0);
	assert_table(&t, 1, (uint64_t[]){ 10, 15, 2 });
	assert_int_equal(tfs_refs_set(&t, 0, 100, 1), 0);
	assert_table(&t, 0, NULL);
	assert_int_equal(tfs_refs_extra(&t), 0);
	tfs_refs_release(&t);
}

static void test_refs_inc_over_gaps_and_ranges(void **state)
{
	struct tfs_refs t;
	struct report r = { 0 };

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_set(&t, 10, 10, 3), 0);
	assert_int_equal(tfs_refs_set(&t, 30, 10, 2), 0);
	assert_int_equal(tfs_refs_inc(&t, 5, 40, log_report, &r), 0);
	assert_table(
	    &t, 5,
	    (uint64_t[]){ 5, 5, 2, 10, 10, 4, 20, 10, 2, 30, 10, 3, 40, 5, 2 });
	/* reports: 5..10 -> 2, 10..20 -> 4, 20..30 -> 2, 30..40 -> 3,
	 * 40..45 -> 2 */
	assert_int_equal(r.n, 5);
	assert_int_equal(r.count[1], 4);
	assert_int_equal(r.start[4], 40);
	assert_int_equal(r.count[4], 2);
	assert_int_equal(tfs_refs_extra(&t), 5 + 30 + 10 + 10 * 2 + 5);
	tfs_refs_release(&t);
}

static void test_refs_invalid_and_overflow_change_nothing(void **state)
{
	struct tfs_refs t;
	struct report r = { 0 };

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_inc(&t, 5, 0, log_report, &r), -EINVAL);
	assert_int_equal(tfs_refs_inc(&t, UINT64_MAX - 1, 5, log_report, &r),
			 -EINVAL);
	assert_int_equal(tfs_refs_dec(&t, 5, 0, log_report, &r), -EINVAL);
	assert_int_equal(tfs_refs_set(&t, 10, 5, UINT32_MAX), 0);
	assert_int_equal(tfs_refs_inc(&t, 0, 20, log_report, &r), -EOVERFLOW);
	assert_int_equal(r.n, 0);
	assert_table(&t, 1, (uint64_t[]){ 10, 5, UINT32_MAX });
	tfs_refs_release(&t);
}

static void test_refs_without_memory_change_nothing(void **state)
{
	struct tfs_refs t;
	struct report r = { 0 };

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_inc(&t, 0, 100, NULL, NULL), 0);
	fail_alloc = 1;
	assert_int_equal(tfs_refs_dec(&t, 40, 10, log_report, &r), -ENOMEM);
	assert_int_equal(tfs_refs_inc(&t, 40, 10, log_report, &r), -ENOMEM);
	assert_int_equal(tfs_refs_set(&t, 40, 10, 5), -ENOMEM);
	/* nothing shared there: a decrement needs no memory */
	assert_int_equal(tfs_refs_dec(&t, 200, 10, log_report, &r), 0);
	fail_alloc = 0;
	assert_int_equal(r.n, 1);
	assert_int_equal(r.count[0], 0);
	assert_table(&t, 1, (uint64_t[]){ 0, 100, 2 });
	tfs_refs_release(&t);
}

static void test_refs_check_detects_broken_invariants(void **state)
{
	struct tfs_refs t;

	(void)state;
	tfs_refs_init(&t);
	assert_int_equal(tfs_refs_set(&t, 10, 5, 2), 0);
	assert_int_equal(tfs_refs_set(&t, 20, 5, 3), 0);
	assert_int_equal(tfs_refs_check(&t), 0);
	t.r[1].start = 12; /* overlaps */
	assert_int_equal(tfs_refs_check(&t), -EUCLEAN);
	t.r[1].start = 15; /* touches with another count: fine */
	assert_int_equal(tfs_refs_check(&t), 0);
	t.r[1].count = 2; /* touches with the same count: unmerged */
	assert_int_equal(tfs_refs_check(&t), -EUCLEAN);
	t.r[1].count = 1;
	assert_int_equal(tfs_refs_check(&t), -EUCLEAN);
	t.r[1].count = 3;
	t.extra++;
	assert_int_equal(tfs_refs_check(&t), -EUCLEAN);
	tfs_refs_release(&t);
}

/* ===== random operations against a model ===== */

#define M_BLOCKS 512

static void test_refs_random_ops_match_block_model(void **state)
{
	static uint32_t model[M_BLOCKS + 64];
	struct tfs_refs t;

	(void)state;
	tfs_rng_seed(4242);
	tfs_refs_init(&t);
	for (size_t i = 0; i < M_BLOCKS + 64; i++)
		model[i] = 1;
	for (int step = 0; step < 20000; step++) {
		uint64_t s = tfs_rng() % M_BLOCKS, len = 1 + tfs_rng() % 40,
			 run;
		int op = (int)(tfs_rng() % 5), rc;
		struct report r = { 0 };
		uint64_t extra = 0;

		fail_alloc = tfs_rng() % 16 == 0;
		if (op <= 1) {
			rc = tfs_refs_inc(&t, s, len, log_report, &r);
		} else if (op <= 3) {
			rc = tfs_refs_dec(&t, s, len, log_report, &r);
		} else {
			uint32_t c = (uint32_t)(tfs_rng() % 4);

			rc = tfs_refs_set(&t, s, len, c);
			if (!rc)
				for (uint64_t b = s; b < s + len; b++)
					model[b] = c < 2 ? 1 : c;
		}
		fail_alloc = 0;
		if (rc) {
			assert_int_equal(rc, -ENOMEM);
			assert_int_equal(r.n, 0);
		} else if (op <= 3) {
			uint64_t b = s;

			for (int k = 0; k < r.n; k++) {
				assert_int_equal(r.start[k], b);
				b += r.len[k];
			}
			assert_int_equal(b, s + len);
			for (int k = 0; k < r.n; k++)
				for (uint64_t x = r.start[k];
				     x < r.start[k] + r.len[k]; x++) {
					model[x] = op <= 1 ? model[x] + 1
							   : model[x] - 1;
					assert_int_equal(r.count[k], model[x]);
					if (model[x] == 0)
						model[x] = 1; /* free */
				}
		}
		assert_int_equal(tfs_refs_check(&t), 0);
		for (uint64_t b = 0; b < M_BLOCKS + 64; b += run) {
			uint32_t c = tfs_refs_get(&t, b, &run);

			for (uint64_t x = b; x < b + run && x < M_BLOCKS + 64;
			     x++) {
				assert_int_equal(c, model[x] ? model[x] : 1);
				extra += c - 1;
			}
		}
		assert_int_equal(extra, tfs_refs_extra(&t));
	}
	tfs_refs_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refs_empty_table_counts_one),
		cmocka_unit_test(test_refs_inc_then_dec_frees_once),
		cmocka_unit_test(test_refs_touching_equal_ranges_merge),
		cmocka_unit_test(test_refs_inc_over_gaps_and_ranges),
		cmocka_unit_test(test_refs_invalid_and_overflow_change_nothing),
		cmocka_unit_test(test_refs_without_memory_change_nothing),
		cmocka_unit_test(test_refs_check_detects_broken_invariants),
		cmocka_unit_test(test_refs_random_ops_match_block_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
