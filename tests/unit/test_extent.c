/*
 * test_extent.c: the extent map of one file (lib/extent.c).
 *
 * The module is compiled into this test (#include "extent.c") rather than
 * linked from libtfs, so that realloc() can be made to fail and the
 * "-ENOMEM leaves the map unchanged" promise be tested.
 *
 * test_extent_random_ops_match_block_model drives a map with thousands of
 * random sets and punches, some of them without memory, and compares each
 * lookup, each freed report and the extent count with an array holding
 * the device block of every file block.  TFS_TEST_SEED=<n> in the
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

static int fail_realloc;

static void *maybe_realloc(void *p, size_t n)
{
	return fail_realloc ? NULL : realloc(p, n);
}

#define realloc maybe_realloc
#include "extent.c"
#include "testrng.h"
#undef realloc

#define UNW TFS_EXT_UNWRITTEN

/* ===== helpers ===== */

struct freed_log {
	uint64_t pblk[64], len[64];
	int n;
};

static void log_freed(uint64_t pblk, uint64_t len, void *arg)
{
	struct freed_log *l = arg;

	assert_true(l->n < 64);
	l->pblk[l->n] = pblk;
	l->len[l->n] = len;
	l->n++;
}

/* The map must hold exactly these (lblk, pblk, len, flags) quadruples. */
static void assert_map(const struct tfs_extmap *m, size_t n, const uint64_t *q)
{
	uint64_t blocks = 0;
	size_t i;

	assert_int_equal(tfs_extmap_check(m), 0);
	assert_int_equal(tfs_extmap_count(m), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(m->ext[i].lblk, q[4 * i]);
		assert_int_equal(m->ext[i].pblk, q[4 * i + 1]);
		assert_int_equal(m->ext[i].len, q[4 * i + 2]);
		assert_int_equal(m->ext[i].flags, q[4 * i + 3]);
		blocks += q[4 * i + 2];
	}
	assert_int_equal(tfs_extmap_blocks(m), blocks);
}

static void assert_freed(const struct freed_log *l, int n, const uint64_t *r)
{
	int i;

	assert_int_equal(l->n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(l->pblk[i], r[2 * i]);
		assert_int_equal(l->len[i], r[2 * i + 1]);
	}
}

static void set_ok(struct tfs_extmap *m, uint64_t lblk, uint64_t pblk,
		   uint64_t len, uint32_t flags, struct freed_log *l)
{
	assert_int_equal(
	    tfs_extmap_set(m, lblk, pblk, len, flags, l ? log_freed : NULL, l),
	    0);
}

/* ===== lookup ===== */

static void test_extent_empty_map_is_one_hole(void **state)
{
	struct tfs_extmap m = { 0 };
	struct tfs_extent e;

	(void)state;
	assert_int_equal(tfs_extmap_lookup(&m, 0, &e), 0);
	assert_int_equal(e.lblk, 0);
	assert_int_equal(e.pblk, 0);
	assert_int_equal(e.len, UINT64_MAX);
	assert_int_equal(tfs_extmap_lookup(&m, 5, &e), 0);
	assert_int_equal(e.len, UINT64_MAX - 5);
	assert_int_equal(tfs_extmap_count(&m), 0);
	assert_int_equal(tfs_extmap_blocks(&m), 0);
	assert_int_equal(tfs_extmap_check(&m), 0);
	tfs_extmap_release(&m);
}

static void test_extent_lookup_clips_to_block(void **state)
{
	struct tfs_extmap m;
	struct tfs_extent e;

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 10, 100, 20, UNW, NULL);
	assert_int_equal(tfs_extmap_lookup(&m, 15, &e), 1);
	assert_int_equal(e.lblk, 15);
	assert_int_equal(e.pblk, 105);
	assert_int_equal(e.len, 15);
	assert_int_equal(e.flags, UNW);
	assert_int_equal(tfs_extmap_lookup(&m, 10, &e), 1);
	assert_int_equal(e.pblk, 100);
	assert_int_equal(e.len, 20);
	assert_int_equal(tfs_extmap_lookup(&m, 29, &e), 1);
	assert_int_equal(e.len, 1);
	tfs_extmap_release(&m);
}

static void test_extent_lookup_reports_hole_length_to_next_extent(void **state)
{
	struct tfs_extmap m;
	struct tfs_extent e;

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 10, 100, 5, 0, NULL);
	set_ok(&m, 30, 200, 10, 0, NULL);
	assert_int_equal(tfs_extmap_lookup(&m, 0, &e), 0);
	assert_int_equal(e.lblk, 0);
	assert_int_equal(e.len, 10);
	assert_int_equal(e.pblk, 0);
	assert_int_equal(tfs_extmap_lookup(&m, 15, &e), 0);
	assert_int_equal(e.len, 15);
	assert_int_equal(tfs_extmap_lookup(&m, 40, &e), 0);
	assert_int_equal(e.len, UINT64_MAX - 40);
	tfs_extmap_release(&m);
}

/* ===== merging ===== */

static void test_extent_adjacent_extents_merge(void **state)
{
	struct tfs_extmap m;
	const uint64_t one[] = { 0, 100, 20, 0 };
	const uint64_t two[] = { 0, 100, 20, 0, 20, 500, 10, 0 };
	const uint64_t gap[] = { 0, 100, 10, 0, 20, 120, 10, 0 };
	const uint64_t bridged[] = { 0, 100, 30, 0 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 10, 110, 10, 0, NULL);
	assert_map(&m, 1, one);
	/* Touching in the file but not on the device: two extents. */
	set_ok(&m, 20, 500, 10, 0, NULL);
	assert_map(&m, 2, two);
	tfs_extmap_release(&m);

	/* Filling the hole between two extents that line up makes one. */
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 20, 120, 10, 0, NULL);
	assert_map(&m, 2, gap);
	set_ok(&m, 10, 110, 10, 0, NULL);
	assert_map(&m, 1, bridged);
	tfs_extmap_release(&m);
}

static void test_extent_merges_with_following_extent(void **state)
{
	struct tfs_extmap m;
	const uint64_t one[] = { 0, 100, 20, 0 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 10, 110, 10, 0, NULL);
	set_ok(&m, 0, 100, 10, 0, NULL);
	assert_map(&m, 1, one);
	tfs_extmap_release(&m);
}

static void test_extent_different_flags_do_not_merge(void **state)
{
	struct tfs_extmap m;
	const uint64_t two[] = { 0, 100, 10, 0, 10, 110, 10, UNW };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 10, 110, 10, UNW, NULL);
	assert_map(&m, 2, two);
	tfs_extmap_release(&m);
}

static void test_extent_sequential_appends_stay_one_extent(void **state)
{
	struct tfs_extmap m;
	const uint64_t one[] = { 0, 5000, 1000, 0 };
	uint64_t i;

	(void)state;
	tfs_extmap_init(&m);
	for (i = 0; i < 1000; i++)
		set_ok(&m, i, 5000 + i, 1, 0, NULL);
	assert_map(&m, 1, one);
	tfs_extmap_release(&m);
}

/* ===== set ===== */

static void test_extent_set_splits_overlapped_extent(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t three[] = {
		0, 100, 40, 0, 40, 1000, 10, 0, 50, 150, 50, 0,
	};
	const uint64_t freed[] = { 140, 10 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 100, 0, NULL);
	set_ok(&m, 40, 1000, 10, 0, &l);
	assert_map(&m, 3, three);
	assert_freed(&l, 1, freed);
	tfs_extmap_release(&m);
}

static void test_extent_set_replaces_several_extents(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t after[] = {
		0, 100, 5, 0, 5, 900, 40, UNW, 45, 305, 5, 0,
	};
	/* In file order: the tail of the first, all of the second, the
	 * head of the third. */
	const uint64_t freed[] = { 105, 5, 200, 10, 300, 5 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 20, 200, 10, UNW, NULL);
	set_ok(&m, 40, 300, 10, 0, NULL);
	set_ok(&m, 5, 900, 40, UNW, &l);
	assert_map(&m, 3, after);
	assert_freed(&l, 3, freed);
	tfs_extmap_release(&m);
}

static void test_extent_writing_unwritten_extent_frees_nothing(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t three[] = {
		0, 100, 20, UNW, 20, 120, 10, 0, 30, 130, 70, UNW,
	};
	const uint64_t one[] = { 0, 100, 100, UNW };
	const uint64_t written[] = { 0, 100, 100, 0 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 100, UNW, NULL);
	set_ok(&m, 20, 120, 10, 0, &l);
	assert_map(&m, 3, three);
	assert_int_equal(l.n, 0);
	/* Setting a range back to what it was merges the pieces again. */
	set_ok(&m, 20, 120, 10, UNW, &l);
	assert_map(&m, 1, one);
	set_ok(&m, 0, 100, 100, 0, &l);
	assert_map(&m, 1, written);
	assert_int_equal(l.n, 0);
	tfs_extmap_release(&m);
}

static void test_extent_remap_frees_only_blocks_left_behind(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t moved[] = { 0, 105, 10, 0 };
	const uint64_t freed_head[] = { 100, 5 };
	const uint64_t freed_tail[] = { 110, 5 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 0, 105, 10, 0, &l);
	assert_map(&m, 1, moved);
	assert_freed(&l, 1, freed_head);
	l.n = 0;
	set_ok(&m, 0, 100, 10, 0, &l);
	assert_freed(&l, 1, freed_tail);
	tfs_extmap_release(&m);
}

static void test_extent_set_invalid_is_rejected(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t one[] = { 0, 100, 10, 0 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	assert_int_equal(tfs_extmap_set(&m, 0, 5, 0, 0, log_freed, &l),
			 -EINVAL);
	assert_int_equal(
	    tfs_extmap_set(&m, UINT64_MAX - 1, 5, 2, 0, log_freed, &l),
	    -EINVAL);
	assert_int_equal(
	    tfs_extmap_set(&m, 0, UINT64_MAX - 1, 2, 0, log_freed, &l),
	    -EINVAL);
	assert_int_equal(tfs_extmap_set(&m, 0, 5, 2, 0x80, log_freed, &l),
			 -EINVAL);
	assert_map(&m, 1, one);
	assert_int_equal(l.n, 0);
	/* The last file block is usable. */
	set_ok(&m, UINT64_MAX - 1, 7, 1, 0, NULL);
	assert_int_equal(tfs_extmap_count(&m), 2);
	tfs_extmap_release(&m);
}

/* ===== punch ===== */

static void test_extent_punch_reports_freed_ranges(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t split[] = { 0, 100, 10, 0, 30, 130, 70, 0 };
	const uint64_t freed_one[] = { 110, 20 };
	const uint64_t left[] = { 0, 100, 5, 0, 95, 195, 5, 0 };
	const uint64_t freed_many[] = { 105, 5, 130, 65 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 100, 0, NULL);
	assert_int_equal(tfs_extmap_punch(&m, 10, 20, log_freed, &l), 0);
	assert_map(&m, 2, split);
	assert_freed(&l, 1, freed_one);
	l.n = 0;
	/* Across the hole it just made: only mapped blocks are reported. */
	assert_int_equal(tfs_extmap_punch(&m, 5, 90, log_freed, &l), 0);
	assert_map(&m, 2, left);
	assert_freed(&l, 2, freed_many);
	tfs_extmap_release(&m);
}

static void test_extent_punch_to_end(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t head[] = { 0, 100, 50, 0 };
	const uint64_t freed[] = { 150, 50, 1000, 10 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 100, 0, NULL);
	set_ok(&m, 1000, 1000, 10, 0, NULL);
	assert_int_equal(
	    tfs_extmap_punch(&m, 50, UINT64_MAX - 50, log_freed, &l), 0);
	assert_map(&m, 1, head);
	assert_freed(&l, 2, freed);
	/* A length past the end means the same. */
	assert_int_equal(tfs_extmap_punch(&m, 0, UINT64_MAX, NULL, NULL), 0);
	assert_map(&m, 0, NULL);
	tfs_extmap_release(&m);
}

static void test_extent_punch_of_hole_changes_nothing(void **state)
{
	struct tfs_extmap m;
	struct freed_log l = { .n = 0 };
	const uint64_t two[] = { 0, 100, 10, 0, 20, 300, 10, 0 };

	(void)state;
	tfs_extmap_init(&m);
	set_ok(&m, 0, 100, 10, 0, NULL);
	set_ok(&m, 20, 300, 10, 0, NULL);
	assert_int_equal(tfs_extmap_punch(&m, 10, 10, log_freed, &l), 0);
	assert_int_equal(tfs_extmap_punch(&m, 40, 100, log_freed, &l), 0);
	assert_int_equal(tfs_extmap_punch(&m, 5, 0, log_freed, &l), 0);
	assert_map(&m, 2, two);
	assert_int_equal(l.n, 0);
	tfs_extmap_release(&m);
}

/* ===== without memory ===== */

/* Fill m with n unmergeable one-block extents at even file blocks. */
static void fill_even(struct tfs_extmap *m, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		set_ok(m, 2 * i, 1000 + 10 * i, 1, 0, NULL);
}

static void test_extent_set_without_memory_leaves_map_unchanged(void **state)
{
	struct tfs_extmap m;
	struct tfs_extent before[8];
	struct freed_log l = { .n = 0 };

	(void)state;
	tfs_extmap_init(&m);
	fill_even(&m, 7);
	set_ok(&m, 20, 500, 10, 0, NULL);
	assert_int_equal(m.cap, 8); /* full: any growth reallocates */
	memcpy(before, m.ext, sizeof(before));
	fail_realloc = 1;
	/* Filling a hole needs a ninth slot... */
	assert_int_equal(tfs_extmap_set(&m, 1, 5000, 1, UNW, log_freed, &l),
			 -ENOMEM);
	/* ...and splitting an extent two more. */
	assert_int_equal(tfs_extmap_set(&m, 25, 6000, 2, UNW, log_freed, &l),
			 -ENOMEM);
	assert_int_equal(m.n, 8);
	assert_memory_equal(m.ext, before, sizeof(before));
	assert_int_equal(l.n, 0);
	/* Replacing one extent by one needs no memory. */
	assert_int_equal(tfs_extmap_set(&m, 4, 7000, 1, 0, log_freed, &l), 0);
	assert_int_equal(l.n, 1);
	fail_realloc = 0;
	assert_int_equal(tfs_extmap_check(&m), 0);
	tfs_extmap_release(&m);
}

static void test_extent_punch_without_memory_leaves_map_unchanged(void **state)
{
	struct tfs_extmap m;
	struct tfs_extent before[4];
	struct freed_log l = { .n = 0 };

	(void)state;
	tfs_extmap_init(&m);
	fill_even(&m, 3);
	set_ok(&m, 100, 500, 10, 0, NULL);
	assert_int_equal(m.cap, 4); /* full: any growth reallocates */
	memcpy(before, m.ext, sizeof(before));
	fail_realloc = 1;
	assert_int_equal(tfs_extmap_punch(&m, 102, 2, log_freed, &l), -ENOMEM);
	assert_int_equal(m.n, 4);
	assert_memory_equal(m.ext, before, sizeof(before));
	assert_int_equal(l.n, 0);
	/* Trimming an end needs no memory. */
	assert_int_equal(tfs_extmap_punch(&m, 108, 2, log_freed, &l), 0);
	assert_int_equal(l.n, 1);
	fail_realloc = 0;
	tfs_extmap_release(&m);
}

/* ===== check ===== */

static void test_extent_check_detects_broken_invariants(void **state)
{
	struct tfs_extent e[2] = {
		{ .lblk = 0, .pblk = 100, .len = 10, .flags = 0 },
		{ .lblk = 20, .pblk = 500, .len = 10, .flags = 0 },
	};
	struct tfs_extmap m = { .ext = e, .n = 2, .cap = 2 };

	(void)state;
	assert_int_equal(tfs_extmap_check(&m), 0);
	e[1].lblk = 5; /* overlap */
	assert_int_equal(tfs_extmap_check(&m), -EUCLEAN);
	e[1].lblk = 10;
	e[1].pblk = 110; /* should have been merged */
	assert_int_equal(tfs_extmap_check(&m), -EUCLEAN);
	e[1].pblk = 500;
	assert_int_equal(tfs_extmap_check(&m), 0);
	e[0].len = 0;
	assert_int_equal(tfs_extmap_check(&m), -EUCLEAN);
	e[0].len = 10;
	e[1].flags = 0x40;
	assert_int_equal(tfs_extmap_check(&m), -EUCLEAN);
	e[1].flags = 0;
	m.n = 3; /* more extents than room */
	assert_int_equal(tfs_extmap_check(&m), -EUCLEAN);
}

/* ===== random operations against a block array ===== */

#define M_BLOCKS 1024u
#define M_LOOK	 (M_BLOCKS + 4)

struct model {
	uint8_t mapped[M_BLOCKS];
	uint32_t flags[M_BLOCKS];
	uint64_t pblk[M_BLOCKS];
};

struct block_log {
	uint64_t b[M_BLOCKS];
	size_t n;
};

static void log_blocks(uint64_t pblk, uint64_t len, void *arg)
{
	struct block_log *l = arg;

	assert_true(len >= 1);
	while (len--) {
		assert_true(l->n < M_BLOCKS);
		l->b[l->n++] = pblk++;
	}
}

static void compare_with_model(const struct tfs_extmap *m,
			       const struct model *md)
{
	struct tfs_extent e;
	uint64_t l, k, blocks = 0;
	size_t extents = 0;
	int mapped;

	assert_int_equal(tfs_extmap_check(m), 0);
	for (l = 0; l < M_LOOK; l++) {
		mapped = l < M_BLOCKS && md->mapped[l];
		assert_int_equal(tfs_extmap_lookup(m, l, &e), mapped);
		assert_int_equal(e.lblk, l);
		if (mapped) {
			/* The extent runs as far as the model's blocks
			 * continue on the device. */
			for (k = 1; l + k < M_BLOCKS && md->mapped[l + k] &&
				    md->pblk[l + k] == md->pblk[l] + k &&
				    md->flags[l + k] == md->flags[l];
			     k++)
				;
			assert_int_equal(e.pblk, md->pblk[l]);
			assert_int_equal(e.flags, md->flags[l]);
			assert_int_equal(e.len, k);
			blocks++;
			if (!l || !md->mapped[l - 1] ||
			    md->pblk[l - 1] + 1 != md->pblk[l] ||
			    md->flags[l - 1] != md->flags[l])
				extents++;
		} else {
			for (k = 0; l + k < M_BLOCKS && !md->mapped[l + k]; k++)
				;
			if (l + k >= M_BLOCKS)
				k = UINT64_MAX - l;
			assert_int_equal(e.pblk, 0);
			assert_int_equal(e.len, k);
		}
	}
	assert_int_equal(tfs_extmap_count(m), extents);
	assert_int_equal(tfs_extmap_blocks(m), blocks);
}

static void test_extent_random_ops_match_block_model(void **state)
{
	static struct model md;
	static struct block_log got, want;
	static struct tfs_extent before[M_BLOCKS];
	struct tfs_extmap m;
	uint64_t lblk, len, pblk, next_p = 10000, l, end;
	size_t n_before;
	uint32_t flags;
	int i, rc, is_set;

	(void)state;
	tfs_rng_seed(4242);
	memset(&md, 0, sizeof(md));
	tfs_extmap_init(&m);
	for (i = 0; i < 10000; i++) {
		is_set = tfs_rng_below(100) < 65;
		lblk = tfs_rng_below(is_set ? M_BLOCKS : M_BLOCKS + 8);
		len = 1 + tfs_rng_below(tfs_rng_below(4) ? 16 : 200);
		pblk = 0;
		flags = tfs_rng_below(3) ? 0 : UNW;
		if (is_set) {
			if (len > M_BLOCKS - lblk)
				len = M_BLOCKS - lblk;
			switch (tfs_rng_below(10)) {
			case 0:
			case 1: /* continue the file's previous block */
				if (lblk && md.mapped[lblk - 1]) {
					pblk = md.pblk[lblk - 1] + 1;
					flags = md.flags[lblk - 1];
					break;
				}
				/* fall through */
			case 2:
			case 3: /* same blocks: a write to UNWRITTEN */
				if (md.mapped[lblk]) {
					pblk = md.pblk[lblk];
					break;
				}
				/* fall through */
			case 4: /* any blocks, overlapping old ones */
				pblk = 9000 + tfs_rng_below(4000);
				break;
			default: /* fresh, sometimes after the last */
				pblk = next_p;
				next_p += len + tfs_rng_below(2);
				break;
			}
		} else {
			switch (tfs_rng_below(8)) {
			case 0:
				len = UINT64_MAX - lblk;
				break;
			case 1:
				len = UINT64_MAX;
				break;
			case 2:
				len = 0;
				break;
			}
		}
		end = len > M_BLOCKS - (lblk < M_BLOCKS ? lblk : M_BLOCKS)
			  ? M_BLOCKS
			  : lblk + len;

		/* What the model says leaves the file. */
		want.n = 0;
		for (l = lblk; l < end; l++) {
			if (!md.mapped[l])
				continue;
			if (is_set && md.pblk[l] >= pblk &&
			    md.pblk[l] < pblk + len)
				continue;
			want.b[want.n++] = md.pblk[l];
		}

		fail_realloc = !tfs_rng_below(8);
		n_before = m.n;
		if (n_before)
			memcpy(before, m.ext, n_before * sizeof(before[0]));
		got.n = 0;
		if (is_set)
			rc = tfs_extmap_set(&m, lblk, pblk, len, flags,
					    log_blocks, &got);
		else
			rc = tfs_extmap_punch(&m, lblk, len, log_blocks, &got);
		fail_realloc = 0;

		if (rc == -ENOMEM) {
			assert_int_equal(m.n, n_before);
			if (n_before)
				assert_memory_equal(m.ext, before,
						    n_before * sizeof(*before));
			assert_int_equal(got.n, 0);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(got.n, want.n);
		assert_memory_equal(got.b, want.b, want.n * sizeof(want.b[0]));
		for (l = lblk; l < end; l++) {
			md.mapped[l] = is_set;
			md.pblk[l] = is_set ? pblk + (l - lblk) : 0;
			md.flags[l] = is_set ? flags : 0;
		}
		compare_with_model(&m, &md);
	}
	tfs_extmap_release(&m);
	assert_null(m.ext);
	assert_int_equal(m.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extent_empty_map_is_one_hole),
		cmocka_unit_test(test_extent_lookup_clips_to_block),
		cmocka_unit_test(
		    test_extent_lookup_reports_hole_length_to_next_extent),
		cmocka_unit_test(test_extent_adjacent_extents_merge),
		cmocka_unit_test(test_extent_merges_with_following_extent),
		cmocka_unit_test(test_extent_different_flags_do_not_merge),
		cmocka_unit_test(
		    test_extent_sequential_appends_stay_one_extent),
		cmocka_unit_test(test_extent_set_splits_overlapped_extent),
		cmocka_unit_test(test_extent_set_replaces_several_extents),
		cmocka_unit_test(
		    test_extent_writing_unwritten_extent_frees_nothing),
		cmocka_unit_test(
		    test_extent_remap_frees_only_blocks_left_behind),
		cmocka_unit_test(test_extent_set_invalid_is_rejected),
		cmocka_unit_test(test_extent_punch_reports_freed_ranges),
		cmocka_unit_test(test_extent_punch_to_end),
		cmocka_unit_test(test_extent_punch_of_hole_changes_nothing),
		cmocka_unit_test(
		    test_extent_set_without_memory_leaves_map_unchanged),
		cmocka_unit_test(
		    test_extent_punch_without_memory_leaves_map_unchanged),
		cmocka_unit_test(test_extent_check_detects_broken_invariants),
		cmocka_unit_test(test_extent_random_ops_match_block_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
