/*
 * test_plan.c: lib/plan/plan.c's formulas against hand-computed cases.
 * Description: DeepSpeed's host memory per rank and node, NVMe space,
 * the failures it would meet and the recommended values; every expected
 * number is worked out in the comment above it.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "fs.h"
#include "memcheck.h"
#include "meta.h"
#include "model.h"
#include "plan.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)

static struct tfs_plan *plan;

static int setup(void **state)
{
	(void)state;
	plan = malloc(sizeof(*plan));
	return plan ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(plan);
	return 0;
}

/* The ZeRO-Infinity NVMe config of DeepSpeed's config-json page: both
 * offloads on nvme, pin_memory, every count at DeepSpeed's default, bf16. */
static void zero3_nvme(struct tfs_config *c)
{
	char err[256];

	tfs_config_defaults(c);
	assert_int_equal(
	    tfs_config_set(c, "offload_param.device", "nvme", err, sizeof(err)),
	    0);
	assert_int_equal(tfs_config_set(c, "offload_param.nvme_path",
					"/local_nvme", err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(c, "offload_optimizer.device", "nvme",
					err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(c, "offload_optimizer.nvme_path",
					"/local_nvme", err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(c, "offload_param.pin_memory", "true",
					err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(c, "offload_optimizer.pin_memory",
					"true", err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(c, "dtype", "bf16", err, sizeof(err)),
			 0);
}

static struct tfs_plan_facts node8(uint64_t params)
{
	struct tfs_plan_facts f = {
		.params = params,
		.ranks = 8,
		.nodes = 1,
		.stage = 3,
		.ram = 256 * GIB,
		.memlock = UINT64_MAX,
	};

	return f;
}

/* The item called name among p's DeepSpeed items, or NULL. */
/* The cache index of a mount with this cache and pool, in 1 MiB chunks. */
static uint64_t index_of(double cache, double pool)
{
	struct tfs_fs_opts o = { .cache_bytes = (uint64_t)cache,
				 .pool_bytes = (uint64_t)pool,
				 .block_size = 1u << 20 };

	return tfs_fs_cache_index_bytes(&o);
}

static const struct tfs_plan_item *find_item(const struct tfs_plan *p,
					     const char *name)
{
	for (size_t i = 0; i < p->nds; i++)
		if (!strcmp(p->ds[i].name, name))
			return &p->ds[i];
	return NULL;
}

/* The first problem whose text holds s, or NULL. */
static const struct tfs_plan_problem *find_problem(const struct tfs_plan *p,
						   const char *s)
{
	for (size_t i = 0; i < p->nproblems; i++)
		if (strstr(p->problems[i].text, s))
			return &p->problems[i];
	return NULL;
}

static const struct tfs_plan_rec *find_rec(const struct tfs_plan *p,
					   const char *key)
{
	for (size_t i = 0; i < p->nrecs; i++)
		if (!strcmp(p->recs[i].key, key))
			return &p->recs[i];
	return NULL;
}

/* ===== the model ===== */

static void test_plan_counts_llama_2_7b_exactly(void **state)
{
	/* H 4096, L 32, I 11008, V 32000, 32 heads of 128, untied:
	 * layer = 4 x 4096^2 (67108864) + 3 x 4096 x 11008 (135266304)
	 *       + 2 x 4096 = 202383360; x 32 = 6476267520
	 * + 2 x 32000 x 4096 (262144000) + 4096 = 6738415616, the published
	 * count; largest: the embedding, 32000 x 4096 = 131072000 */
	struct tfs_plan_shape s = { 4096, 32, 11008, 32000, 32, 32, 0, 0 };
	uint64_t n, big;

	(void)state;
	assert_int_equal(tfs_plan_count_params(&s, &n, &big), 0);
	assert_int_equal(n, 6738415616ull);
	assert_int_equal(big, 131072000ull);
}

static void test_plan_counts_grouped_query_attention(void **state)
{
	/* Llama 2 70B: H 8192, L 80, I 28672, V 32000, 64 heads, 8 kv heads
	 * of 128: q and o 8192^2 each (134217728), k and v 8192 x 1024 each
	 * (16777216), MLP 3 x 8192 x 28672 (704643072), norms 16384:
	 * layer 855654400, x 80 = 68452352000; + 2 x 262144000 + 8192 =
	 * 68976648192.  Largest: the embedding 262144000 (> 8192 x 28672). */
	struct tfs_plan_shape s = { 8192, 80, 28672, 32000, 64, 8, 0, 0 };
	/* Llama 3 8B: H 4096, L 32, I 14336, V 128256, 32/8 heads: layer =
	 * 2 x 16777216 + 2 x 4194304 + 176160768 + 8192 = 218112000, x 32 =
	 * 6979584000, + 2 x 525336576 + 4096 = 8030261248 */
	struct tfs_plan_shape l3 = { 4096, 32, 14336, 128256, 32, 8, 0, 0 };
	uint64_t n, big;

	(void)state;
	assert_int_equal(tfs_plan_count_params(&s, &n, &big), 0);
	assert_int_equal(n, 68976648192ull);
	assert_int_equal(big, 262144000ull);
	assert_int_equal(tfs_plan_count_params(&l3, &n, &big), 0);
	assert_int_equal(n, 8030261248ull);
	assert_int_equal(big, 525336576ull);
}

static void test_plan_tied_embeddings_count_once(void **state)
{
	/* the 7B shape tied: 6738415616 - 131072000 = 6607343616 */
	struct tfs_plan_shape s = { 4096, 32, 11008, 32000, 32, 32, 0, 1 };
	struct tfs_plan_shape bad = { 4096, 32, 11008, 32000, 0, 0, 0, 0 };
	struct tfs_plan_shape odd = { 4096, 32, 11008, 32000, 3, 0, 0, 0 };
	uint64_t n, big;

	(void)state;
	assert_int_equal(tfs_plan_count_params(&s, &n, &big), 0);
	assert_int_equal(n, 6607343616ull);
	assert_int_equal(tfs_plan_count_params(&bad, &n, &big), -EINVAL);
	assert_int_equal(tfs_plan_count_params(&odd, &n, &big), -EINVAL);
	odd.head_dim = 128; /* 3 heads of 128 project 4096 to 384 */
	assert_int_equal(tfs_plan_count_params(&odd, &n, &big), 0);
}

/* ===== host memory ===== */

static void test_plan_7b_on_8_ranks_fits_with_every_item_exact(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	const struct tfs_plan_item *it;

	(void)state;
	zero3_nvme(&c);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* P = 7e9 / 8 = 875000000; bf16, E = 2 */
	assert_int_equal(plan->per_rank, 875000000ull);
	assert_int_equal(plan->elem, 2);
	/* S = 1e9 >= P: one sub-group, G = P */
	assert_int_equal(plan->largest_subgroup, 875000000ull);
	/* pool: 1e8 aligned to 1024 / 2 = 512 elements: 195313 x 512 =
	 * 100000256; x 5 buffers x 2 B = 1000002560, pinned */
	it = find_item(plan, "parameter swap pool");
	assert_non_null(it);
	assert_int_equal(it->pinned, 1000002560ull);
	assert_int_equal(it->pageable, 0);
	/* in RAM: min(1e9, 8.75e8) x 2 = 1750000000, pinned */
	it = find_item(plan, "parameters kept in RAM");
	assert_int_equal(it->pinned, 1750000000ull);
	/* P <= max_in_cpu: no sub-group on NVMe, no reuse buffer */
	assert_false(plan->subgroups_on_nvme);
	assert_null(find_item(plan, "fp16 buffer for NVMe sub-groups"));
	/* gradient partitions: 8.75e8 x 2 B, pinned (optimizer pin_memory) */
	it = find_item(plan, "gradient partitions");
	assert_int_equal(it->pinned, 1750000000ull);
	/* optimizer pool: G aligned to 256 fp32 elements: 3417969 x 256 =
	 * 875000064; x 4 buffers x 4 B = 14000001024 */
	it = find_item(plan, "optimizer swap pool");
	assert_int_equal(it->pinned, 14000001024ull);
	/* fp32 gradient buffer: G x 4 = 3500000000, pageable */
	it = find_item(plan, "fp32 gradient buffer");
	assert_int_equal(it->pageable, 3500000000ull);
	assert_int_equal(it->pinned, 0);
	/* per rank: 1000002560 + 1750000000 + 1750000000 + 14000001024 */
	assert_int_equal(plan->rank_pinned, 18500003584ull);
	assert_int_equal(plan->rank_pageable, 3500000000ull);
	/* tensorfs, pinned: cache 1e9 x 2 + pool 5 x 1e8 x 2 = 3e9;
	 * pageable: 64 MiB and the metadata of DeepSpeed's files, per rank
	 * 7000 parameter tensors (N / 1e6: largest parameter unknown), 3
	 * optimizer files for the one sub-group and 7000 gradient pieces:
	 * 8 x 14003 = 112024 files, + 25% = 140030 */
	assert_int_equal(plan->files, 112024);
	it = &plan->tfs[3];
	assert_string_equal(it->name, "tensorfs metadata");
	assert_int_equal(it->pageable, 140030ull * TFS_META_BYTES_PER_FILE);
	assert_int_equal(it->pinned, 0);
	assert_non_null(strstr(it->formula, "112024 files + 25%"));
	assert_int_equal(plan->tfs_pinned, 3000000000ull);
	/* overhead: 64 MiB and the cache's index, 1907 + 953 chunks of 1
	 * MiB, a couple of hundred bytes each */
	it = &plan->tfs[2];
	assert_int_equal(it->pageable, 64 * MIB + index_of(2e9, 1e9));
	assert_true(index_of(2e9, 1e9) > 2860 * 150 &&
		    index_of(2e9, 1e9) < 2860 * 300);
	assert_non_null(strstr(it->formula, "of cache index (1 MiB chunks)"));
	assert_int_equal(plan->tfs_pageable,
			 64 * MIB + index_of(2e9, 1e9) +
			     140030ull * TFS_META_BYTES_PER_FILE);
	/* node: 8 x 18500003584 + 3e9; 8 x 3.5e9 + the mount's pageable */
	assert_int_equal(plan->node_pinned, 151000028672ull);
	assert_int_equal(plan->node_pageable,
			 28000000000ull + plan->tfs_pageable);
	/* NVMe: 8 x 8.75e8 x 2 and 8 x 8.75e8 x 16 */
	assert_int_equal(plan->nvme_params, 14000000000ull);
	assert_int_equal(plan->nvme_optimizer, 112000000000ull);
	/* 179 GB of 256 GiB (274.9 GB), under 90%; without the model's
	 * tensors the parameter buffers cannot be counted: a warning */
	assert_int_equal(plan->severity, TFS_PLAN_WARN);
	assert_non_null(find_problem(plan, "largest parameter is unknown"));
	assert_int_equal(
	    find_problem(plan, "buffer_count = 5 is not checked")->severity,
	    TFS_PLAN_WARN);
}

static void test_plan_70b_on_8_ranks_pins_more_than_ram(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(70000000000ull);
	const struct tfs_plan_item *it;
	const struct tfs_plan_rec *r;

	(void)state;
	zero3_nvme(&c);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* P = 8.75e9 > S = 1e9, largest parameter unknown: G = S */
	assert_int_equal(plan->per_rank, 8750000000ull);
	assert_int_equal(plan->largest_subgroup, 1000000000ull);
	/* P > max_in_cpu: sub-groups on NVMe, and DeepSpeed reserves a
	 * buffer of the sub-group's full parameters: min(1e9 x 8, 7e10) =
	 * 8e9 elements (a multiple of 512) x 2 B = 16e9 */
	assert_true(plan->subgroups_on_nvme);
	it = find_item(plan, "fp16 buffer for NVMe sub-groups");
	assert_non_null(it);
	assert_int_equal(it->pinned, 16000000000ull);
	/* in RAM: 1e9 x 2; gradient partitions 8.75e9 x 2 = 17.5e9;
	 * optimizer pool 4 x 1e9 x 4 = 16e9 (1e9 is a multiple of 256) */
	assert_int_equal(find_item(plan, "parameters kept in RAM")->pinned,
			 2000000000ull);
	assert_int_equal(find_item(plan, "gradient partitions")->pinned,
			 17500000000ull);
	assert_int_equal(find_item(plan, "optimizer swap pool")->pinned,
			 16000000000ull);
	/* rank: 1000002560 + 2e9 + 16e9 + 17.5e9 + 16e9 = 52500002560;
	 * node: x 8 + 3e9 = 423000020480 pinned, over 256 GiB */
	assert_int_equal(plan->rank_pinned, 52500002560ull);
	assert_int_equal(plan->node_pinned, 423000020480ull);
	assert_int_equal(plan->severity, TFS_PLAN_FAIL);
	assert_non_null(find_problem(plan, "pinned host memory per node"));
	/* recommended: sub_group_size 5e8 leaves 295e9 pinned, too much;
	 * 2e8 gives reuse 1.6e9 x 2 = 3.2e9, optimizer pool 2e8 x 16 =
	 * 3.2e9, fp32 gradients 0.8e9: rank pinned 1000002560 + 2e9 + 3.2e9
	 * + 17.5e9 + 3.2e9 = 26900002560, node 215200020480 + 3e9 pinned,
	 * 6.4e9 + 64 MiB pageable: 224.67e9 < 90% of 256 GiB (247.39e9) */
	r = find_rec(plan, "zero_optimization.sub_group_size");
	assert_non_null(r);
	assert_true(r->changed);
	assert_string_equal(r->value, "2e8");
	assert_string_equal(r->current, "1e9");
	assert_int_equal(plan->rec_node_pinned, 218200020480ull);
	/* files: 8 x (70000 + 3 x 44 sub-groups of 2e8 + 70000) = 1121056,
	 * + 25% = 1401320 */
	assert_int_equal(plan->rec_node_pageable,
			 6400000000ull + 64 * MIB + index_of(2e9, 1e9) +
			     1401320ull * TFS_META_BYTES_PER_FILE);
	/* fits the RAM; the parameter buffers stay unchecked */
	assert_int_equal(plan->rec_severity, TFS_PLAN_WARN);
}

static void test_plan_counts_files_from_the_largest_parameter(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(6738415616ull); /* Llama 2 7B */
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.device", "cpu",
					err, sizeof(err)),
			 0);
	f.largest_param = 131072000; /* the embedding, 32000 x 4096 */
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* parameter files only: 8 x ceil(N / largest) = 8 x 52 = 416
	 * tensors per rank (the model has 291), 8 ranks */
	assert_int_equal(plan->files, 3328);
	/* few files: the headroom of TFS_MEM_HEADROOM_FILES counts */
	assert_int_equal(plan->tfs[3].pageable,
			 (3328ull + TFS_MEM_HEADROOM_FILES) *
			     TFS_META_BYTES_PER_FILE);
	assert_non_null(strstr(plan->tfs[3].formula, "3328 files + 16384"));
	/* nothing on NVMe, no files */
	assert_int_equal(
	    tfs_config_set(&c, "offload_param.device", "cpu", err, sizeof(err)),
	    0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->files, 0);
	assert_int_equal(plan->tfs[3].pageable, tfs_mem_meta_bytes(0));
}

static void test_plan_aligns_to_intra_op_parallelism(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "intra_op_parallelism", "4", err, sizeof(err)),
	    0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* 1024 x 4 / 2 = 2048 elements: 1e8 -> 48829 x 2048 = 100001792;
	 * x 5 x 2 B = 1000017920 */
	assert_int_equal(find_item(plan, "parameter swap pool")->pinned,
			 1000017920ull);
	/* fp32: 1024 x 4 / 4 = 1024: 8.75e8 -> 854493 x 1024 = 875000832;
	 * x 4 x 4 B = 14000013312 */
	assert_int_equal(find_item(plan, "optimizer swap pool")->pinned,
			 14000013312ull);
}

static void test_plan_cpu_offload_holds_everything_in_ram(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "offload_param.device", "cpu", err, sizeof(err)),
	    0);
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.device", "cpu",
					err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* fp16: all P = 8.75e8 x 2 pinned; no swap pools */
	assert_null(find_item(plan, "parameter swap pool"));
	assert_null(find_item(plan, "optimizer swap pool"));
	assert_int_equal(find_item(plan, "parameters kept in RAM")->pinned,
			 1750000000ull);
	/* optimizer state 12 x 8.75e8 = 10.5e9 pageable, fp32 gradients
	 * 4 x 8.75e8 = 3.5e9 pageable (pin_memory false), gradient
	 * partitions 1.75e9 pageable, fp32 gradient buffer 3.5e9 */
	assert_int_equal(find_item(plan, "optimizer state in RAM")->pageable,
			 10500000000ull);
	assert_int_equal(find_item(plan, "fp32 gradients in RAM")->pageable,
			 3500000000ull);
	assert_int_equal(plan->rank_pageable, 10500000000ull + 3500000000ull +
						  1750000000ull +
						  3500000000ull);
	assert_int_equal(plan->nvme_params + plan->nvme_optimizer, 0);
}

static void test_plan_stage_2_treats_nvme_as_cpu(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);

	(void)state;
	zero3_nvme(&c);
	f.stage = 2;
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* only the CPU optimizer: 12 x P pageable, 4 x P pinned */
	assert_int_equal(plan->nds, 2);
	assert_int_equal(plan->rank_pageable, 10500000000ull);
	assert_int_equal(plan->rank_pinned, 3500000000ull);
	assert_int_equal(plan->nvme_optimizer, 0);
	assert_non_null(find_problem(plan, "treats offload_optimizer nvme as "
					   "cpu"));
	assert_non_null(find_problem(plan, "works with ZeRO stage 3 only"));
	assert_int_equal(plan->severity, TFS_PLAN_WARN);
}

/* ===== what DeepSpeed would stop with ===== */

static void test_plan_buffer_size_below_largest_partition_fails(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(6738415616ull);
	const struct tfs_plan_problem *pr;
	const struct tfs_plan_rec *r;
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "buffer_size", "1e7", err, sizeof(err)), 0);
	f.ranks = 1;
	f.largest_param = 131072000;
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	/* one rank: the embedding's partition is all of it, 131072000 >=
	 * 1e7, and 262 MB >= min_aio (1 MiB): swapped, does not fit */
	assert_int_equal(plan->largest_partition, 131072000ull);
	pr = find_problem(plan, "More elements 131072000 than buffer size "
				"10000000");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_FAIL);
	assert_string_equal(pr->key, "offload_param.buffer_size");
	/* recommended: the next of 1, 1.2, 1.5, 2, ... x 10^k above it */
	r = find_rec(plan, "offload_param.buffer_size");
	assert_string_equal(r->value, "1.5e8");
	assert_true(r->changed);
}

static void test_plan_buffer_size_equal_to_partition_fails(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(6738415616ull);

	(void)state;
	zero3_nvme(&c);
	/* get_buffer asserts numel < buffer_size: 8 x 1e8 over 8 ranks is a
	 * partition of exactly 1e8, which fails; 8e8 - 8 one less fits */
	f.largest_param = 800000000;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "More elements 100000000"));
	f.largest_param = 800000000 - 8;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_null(find_problem(plan, "More elements"));
}

static void test_plan_small_partitions_are_never_swapped(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(6738415616ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "buffer_size", "1000", err, sizeof(err)), 0);
	/* a partition of 4e5 x 2 B = 800 KB < 1 MiB stays in RAM */
	f.largest_param = 3200000;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_null(find_problem(plan, "More elements"));
}

static void test_plan_fast_init_with_small_buffers_fails(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(70000000000ull);
	const struct tfs_plan_problem *pr;
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "fast_init", "true", err, sizeof(err)), 0);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	/* sub-groups on NVMe; a buffer holds align(1e8) = 100000256 fp16
	 * elements, the largest sub-group align(1e9, 256) = 1e9 */
	pr = find_problem(plan, "too small for initializing fp32 params "
				"1000000000");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_FAIL);
	assert_string_equal(
	    find_rec(plan, "offload_optimizer.fast_init")->value, "false");
	/* with every parameter in RAM no sub-group is read from NVMe, and
	 * fast_init has nothing to do: 7e9 over 8 ranks */
	f.params = 7000000000ull;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_null(find_problem(plan, "too small for initializing"));
}

static void
test_plan_optimizer_buffer_count_below_adam_states_fails(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.buffer_count",
					"3", err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "assert pinned_buffers is not "
					   "None"));
	assert_string_equal(
	    find_rec(plan, "offload_optimizer.buffer_count")->value, "4");
	/* pipelined both ways: 4 x (1 + 1 + 1) = 12 */
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.buffer_count",
					"8", err, sizeof(err)),
			 0);
	assert_int_equal(
	    tfs_config_set(&c, "pipeline_read", "on", err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_config_set(&c, "pipeline_write", "yes", err, sizeof(err)), 0);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "ran out of swap buffers"));
	assert_string_equal(
	    find_rec(plan, "offload_optimizer.buffer_count")->value, "12");
}

static void test_plan_thread_count_is_a_warning(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	const struct tfs_plan_problem *pr;
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "thread_count", "2", err, sizeof(err)), 0);
	assert_int_equal(c.aio_intra_op_parallelism, 2);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	pr = find_problem(plan, "thread_count is ignored by DeepSpeed");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_WARN);
	assert_int_equal(plan->severity, TFS_PLAN_WARN);
	assert_non_null(strstr(pr->text, "intra_op_parallelism = 2"));
}

static void test_plan_missing_nvme_path_fails(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "offload_param.nvme_path", "", err, sizeof(err)),
	    0);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "offload_param.device = nvme "
					   "without nvme_path"));
	assert_int_equal(plan->severity, TFS_PLAN_FAIL);
}

static void test_plan_block_size_not_4k_fails_as_the_mount_would(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "block_size", "6000", err, sizeof(err)), 0);
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "is not a multiple of 4 KiB"));
	assert_int_equal(plan->severity, TFS_PLAN_FAIL);
	assert_string_equal(find_rec(plan, "aio.block_size")->value, "1MiB");
	assert_int_equal(plan->rec_severity, TFS_PLAN_WARN); /* unchecked */
}

static void test_plan_memlock_below_pinned(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);

	(void)state;
	zero3_nvme(&c);
	/* DeepSpeed pins 18.5e9 per rank, tensorfs 3e9: both over 1 GiB */
	f.memlock = GIB;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_int_equal(find_problem(plan, "DeepSpeed pins")->severity,
			 TFS_PLAN_WARN);
	assert_int_equal(find_problem(plan, "mount refuses to start")->severity,
			 TFS_PLAN_FAIL);
	assert_string_equal(find_rec(plan, "offload_param.pin_memory")->value,
			    "false");
}

static void test_plan_nvme_capacity(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);

	(void)state;
	zero3_nvme(&c);
	/* needs 14e9 + 112e9 = 126e9 */
	f.nvme = 100000000000ull;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_int_equal(find_problem(plan, "swap files need")->severity,
			 TFS_PLAN_FAIL);
	f.nvme = 130000000000ull; /* 97%: a warning */
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_int_equal(find_problem(plan, "swap files need")->severity,
			 TFS_PLAN_WARN);
	f.nvme = 1000000000000ull;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_null(find_problem(plan, "swap files need"));
}

static void test_plan_sub_group_bound_uses_largest_partition(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(70000000000ull);

	(void)state;
	zero3_nvme(&c);
	/* S = 1e9 < P: a sub-group closes once it reaches S, so it can
	 * overshoot by one partition less one element: 1e9 + 32768000 - 1
	 * with a largest parameter of 262144000 over 8 ranks */
	f.largest_param = 262144000;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_int_equal(plan->largest_partition, 32768000ull);
	assert_int_equal(plan->largest_subgroup, 1032767999ull);
}

static void test_plan_inputs_problems_are_kept(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);

	(void)state;
	zero3_nvme(&c);
	tfs_plan_init(plan);
	tfs_plan_add(plan, TFS_PLAN_FAIL, "aio", "aio is inside %s",
		     "zero_optimization");
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_non_null(find_problem(plan, "aio is inside zero_optimization"));
	assert_int_equal(plan->severity, TFS_PLAN_FAIL);
	assert_string_equal(tfs_plan_verdict(plan->severity), "will fail");
}

static void test_plan_rejects_unusable_facts(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);

	(void)state;
	tfs_config_defaults(&c);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), -EINVAL);
	f = node8(7);
	f.ranks = 0;
	assert_int_equal(tfs_plan_compute(&c, &f, plan), -EINVAL);
}

/* ===== the model's tensors ===== */

/*
 * The model of the measured ZeRO-3 run (deepspeed-offload.md): 6 x
 * Linear(1024, 1024) + GELU, then Linear(1024, 16), bf16; in the order
 * of named_parameters(), each Linear a module of its own.
 */
static size_t linear_stack(struct tfs_plan_tensor *t)
{
	size_t n = 0;

	for (uint32_t i = 0; i < 6; i++) {
		t[n++] = (struct tfs_plan_tensor){ 1048576, i, 0 };
		t[n++] = (struct tfs_plan_tensor){ 1024, i, 0 };
	}
	t[n++] = (struct tfs_plan_tensor){ 16384, 6, 0 };
	t[n++] = (struct tfs_plan_tensor){ 16, 6, 0 };
	return n;
}

/* The run's ds_config: both offloads on nvme, sub_group_size 2e6,
 * stage3_max_live_parameters 2,097,152, prefetch bucket 1,048,576,
 * persistence threshold 0; parameter buffers of 2e6 elements. */
static void measured_run(struct tfs_config *c, const char *buffers)
{
	static const char *const kv[][2] = {
		{ "sub_group_size", "2e6" },
		{ "stage3_max_live_parameters", "2097152" },
		{ "stage3_prefetch_bucket_size", "1048576" },
		{ "stage3_param_persistence_threshold", "0" },
		{ "offload_param.buffer_size", "2e6" },
		{ "offload_param.max_in_cpu", "1e6" },
		{ "offload_param.pin_memory", "false" },
		{ "offload_optimizer.pin_memory", "false" },
	};
	char err[256];

	zero3_nvme(c);
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		assert_int_equal(
		    tfs_config_set(c, kv[i][0], kv[i][1], err, sizeof(err)), 0);
	assert_int_equal(tfs_config_set(c, "offload_param.buffer_count",
					buffers, err, sizeof(err)),
			 0);
}

static void test_plan_sub_groups_as_deepspeed_forms_them(void **state)
{
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);
	const struct tfs_plan_item *it;

	(void)state;
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	measured_run(&c, "6");
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->per_rank, 6314000);
	/* w0 b0 w1 = 2,098,176 >= 2e6 closes the first; b1 w2 b2 w3 =
	 * 2,099,200 the second, b3 w4 b4 w5 the third (as large: the first
	 * of equals counts), b5 w6 b6 = 17,424 the last: the run's real
	 * largest sub-group, against the bound 2e6 + 1048576 - 1 */
	assert_true(plan->exact);
	assert_int_equal(plan->subgroups, 4);
	assert_int_equal(plan->largest_subgroup, 2099200);
	/* 4 x 2,099,200 x 4 B; the fp16 buffer the whole b1 w2 b2 w3,
	 * each a multiple of 512 elements already: 2,099,200 x 2 B */
	it = find_item(plan, "optimizer swap pool");
	assert_int_equal(it->pinned, 4ull * 2099200 * 4);
	it = find_item(plan, "fp16 buffer for NVMe sub-groups");
	assert_non_null(it);
	assert_int_equal(it->pinned, 2099200ull * 2);
	/* every weight (2 MiB) is swapped, biases and the 32 KiB w6 are not;
	 * the model is far below stage3_max_reuse_distance (1e9), so all six
	 * stay gathered into the backward pass: 6 buffers, and 6 fit */
	assert_int_equal(plan->swapped, 6);
	assert_int_equal(plan->param_buffers, 6);
	assert_int_equal(plan->kept, 6);
	assert_null(find_problem(plan, "Not enough buffers"));
	assert_null(find_problem(plan, "is not checked"));
	assert_string_equal(find_rec(plan, "offload_param.buffer_count")->value,
			    "6");
}

/* The run's buffer_count 3 and 4 failed with "Not enough buffers 0 for
 * swapping 1", where the bound-based plan said "(keep)". */
static void test_plan_too_few_param_buffers_fail(void **state)
{
	static const char *const counts[] = { "3", "4", "5" };
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);
	const struct tfs_plan_problem *pr;
	const struct tfs_plan_rec *r;

	(void)state;
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	for (size_t i = 0; i < 3; i++) {
		measured_run(&c, counts[i]);
		tfs_plan_init(plan);
		assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
		pr =
		    find_problem(plan, "'Not enough buffers 0 for swapping 1'");
		assert_non_null(pr);
		assert_int_equal(pr->severity, TFS_PLAN_FAIL);
		assert_string_equal(pr->key, "offload_param.buffer_count");
		assert_int_equal(plan->severity, TFS_PLAN_FAIL);
		r = find_rec(plan, "offload_param.buffer_count");
		assert_string_equal(r->value, "6");
		assert_string_equal(r->current, counts[i]);
		assert_true(r->changed);
		assert_int_equal(plan->rec_severity, TFS_PLAN_FITS);
	}
}

static void test_plan_reuse_distance_decides_the_buffers(void **state)
{
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);
	char err[256];

	(void)state;
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	measured_run(&c, "6");
	/* kept iff twice the elements of the later modules are below R:
	 * after Linear 5: 16,400; 4: 1,066,000; 3: 2,115,600; 2: 3,165,200.
	 * R = 5e6 keeps Linears 3, 4, 5 (x2 = 4.2e6 < 5e6), not 2: on
	 * fetching Linear 5, Linears 3 and 4 are held: 3 buffers */
	assert_int_equal(tfs_config_set(&c, "stage3_max_reuse_distance", "5e6",
					err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->param_buffers, 3);
	assert_int_equal(plan->kept, 3);
	/* R = 0 releases every parameter after use: one at a time */
	assert_int_equal(tfs_config_set(&c, "stage3_max_reuse_distance", "0",
					err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->param_buffers, 1);
	assert_int_equal(plan->kept, 0);
	/* parameters up to the persistence threshold give their buffer back
	 * once gathered: none is held */
	assert_int_equal(tfs_config_set(&c, "stage3_max_reuse_distance", "1e9",
					err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(&c,
					"stage3_param_persistence_threshold",
					"2e6", err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->param_buffers, 0);
	assert_int_equal(plan->swapped, 6);
	/* on 2 ranks a weight's partition is 1 MiB, still swapped; on 4 it
	 * is 512 KiB, below min_aio: nothing is swapped */
	assert_int_equal(tfs_config_set(&c,
					"stage3_param_persistence_threshold",
					"0", err, sizeof(err)),
			 0);
	f.ranks = 4;
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->swapped, 0);
	assert_int_equal(plan->param_buffers, 0);
}

/* max_in_cpu keeps the first sub-groups that fit in RAM: their tensors
 * are not on NVMe and take no buffer. */
static void test_plan_max_in_cpu_keeps_whole_sub_groups(void **state)
{
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);
	char err[256];

	(void)state;
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	measured_run(&c, "6");
	/* 4.2e6 holds the first two sub-groups (2,098,176 + 2,099,200 =
	 * 4,197,376): w0 w1 w2 w3 stay in RAM, w4 w5 are swapped */
	assert_int_equal(tfs_config_set(&c, "offload_param.max_in_cpu", "4.2e6",
					err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->swapped, 2);
	assert_int_equal(plan->param_buffers, 2);
	assert_true(plan->subgroups_on_nvme);
	/* all of it: no sub-group on NVMe, no fp16 buffer */
	assert_int_equal(tfs_config_set(&c, "offload_param.max_in_cpu", "1e9",
					err, sizeof(err)),
			 0);
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->swapped, 0);
	assert_false(plan->subgroups_on_nvme);
	assert_null(find_item(plan, "fp16 buffer for NVMe sub-groups"));
}

static void test_plan_llama_tensors_sum_to_the_count(void **state)
{
	struct tfs_plan_shape s = {
		.hidden = 4096,
		.layers = 32,
		.intermediate = 11008,
		.vocab = 32000,
		.heads = 32,
	};
	struct tfs_plan_tensor *t;
	uint64_t n, big, sum = 0, max = 0;
	size_t k;

	(void)state;
	for (int tied = 0; tied < 2; tied++) {
		s.tied = tied;
		assert_int_equal(tfs_plan_count_params(&s, &n, &big), 0);
		assert_int_equal(tfs_plan_llama_tensors(&s, 0, &t, &k), 0);
		/* Llama 2 7B has 291 tensors, 290 with tied embeddings */
		assert_int_equal(k, tied ? 290 : 291);
		sum = max = 0;
		for (size_t i = 0; i < k; i++) {
			sum += t[i].numel;
			if (t[i].numel > max)
				max = t[i].numel;
			assert_true(t[i].step < k);
		}
		assert_int_equal(sum, n);
		assert_int_equal(max, big);
		/* the input norm runs first in layer 0, q_proj after it */
		assert_int_equal(t[1].step, 2);
		assert_int_equal(t[8].step, 1);
		free(t);
	}
}

static void test_plan_deepspeed_versions(void **state)
{
	unsigned int v = 0;

	(void)state;
	assert_int_equal(tfs_plan_ds_version("0.14.5", &v), 0);
	assert_int_equal(v, 1405);
	assert_int_equal(tfs_plan_ds_version("v0.16.4", &v), 0);
	assert_int_equal(v, 1604);
	assert_int_equal(tfs_plan_ds_version("0.16", &v), 0);
	assert_int_equal(v, 1600);
	assert_int_equal(tfs_plan_ds_version("0.16.4+cu121", &v), 0);
	assert_int_equal(v, 1604);
	assert_int_equal(tfs_plan_ds_version("0.13.1", &v), -ERANGE);
	assert_int_equal(tfs_plan_ds_version("0.16.100", &v), -ERANGE);
	assert_int_equal(tfs_plan_ds_version("0", &v), -EINVAL);
	assert_int_equal(tfs_plan_ds_version("0.16.4.1", &v), -EINVAL);
	assert_int_equal(tfs_plan_ds_version("latest", &v), -EINVAL);
	assert_int_equal(tfs_plan_ds_version("", &v), -EINVAL);
}

/* thread_count is DeepSpeed's name up to 0.16.3: no warning there. */
static void test_plan_thread_count_is_right_before_0_16_4(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);
	char err[256];

	(void)state;
	zero3_nvme(&c);
	assert_int_equal(
	    tfs_config_set(&c, "thread_count", "2", err, sizeof(err)), 0);
	f.ds_version = 1405;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_null(find_problem(plan, "thread_count is ignored"));
	f.ds_version = 1604;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_non_null(find_problem(plan, "thread_count is ignored"));
}

/* As root, DeepSpeed pins past RLIMIT_MEMLOCK: a note, not a warning;
 * the mount's own refusal stays. */
static void test_plan_memlock_does_not_bind_root(void **state)
{
	struct tfs_config c;
	struct tfs_plan_facts f = node8(7000000000ull);

	(void)state;
	zero3_nvme(&c);
	f.memlock = GIB;
	f.memlock_exempt = 1;
	tfs_plan_init(plan);
	tfs_plan_compute(&c, &f, plan);
	assert_int_equal(find_problem(plan, "CAP_IPC_LOCK")->severity,
			 TFS_PLAN_FITS);
	assert_int_equal(find_problem(plan, "mount refuses to start")->severity,
			 TFS_PLAN_FAIL);
}

/*
 * deepspeed-offload.md: the plan of the same run from --params alone was
 * 16.1, 23.4 and 28.8 MiB of pinned memory above the measured run in its
 * three configurations, all of it the bound on the largest sub-group
 * (3,048,575 against the real 2,099,200) in the optimizer pool and the
 * fp16 buffer; with the real one "the formulas are exact".  So the exact
 * plan must sit that far below the bound's: 4 optimizer buffers with the
 * parameters' sub-groups on NVMe, 6 likewise, and 8 with max_in_cpu
 * holding them all (no fp16 buffer).  Within 0.2 MiB: the figures are
 * rounded to 0.1 MiB, and the run pinned 115 KB the plan leaves out.
 */
static void test_plan_exact_minus_bound_is_the_measured_gap(void **state)
{
	static const struct {
		const char *opt_buffers, *max_in_cpu;
		double gap_mib;
	} run[] = {
		{ "4", "1e6", 16.1 },
		{ "6", "1e6", 23.4 },
		{ "8", "1e8", 28.8 },
	};
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0), g;
	uint64_t bound, exact;
	char err[256];

	(void)state;
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	g = f;
	g.tensors = NULL;
	g.ntensors = 0;
	g.params = 6314000;
	g.largest_param = 1048576;
	for (size_t i = 0; i < 3; i++) {
		measured_run(&c, "6");
		assert_int_equal(
		    tfs_config_set(&c, "offload_optimizer.buffer_count",
				   run[i].opt_buffers, err, sizeof(err)),
		    0);
		assert_int_equal(tfs_config_set(&c, "offload_param.max_in_cpu",
						run[i].max_in_cpu, err,
						sizeof(err)),
				 0);
		tfs_plan_init(plan);
		assert_int_equal(tfs_plan_compute(&c, &g, plan), 0);
		assert_int_equal(plan->largest_subgroup, 3048575);
		bound = plan->rank_pinned;
		tfs_plan_init(plan);
		assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
		exact = plan->rank_pinned;
		assert_true(bound > exact);
		assert_true(fabs((double)(bound - exact) / MIB -
				 run[i].gap_mib) <= 0.2);
	}
}

static void test_plan_trainer_groups(void **state)
{
	static const struct {
		const char *name;
		int no_decay;
	} names[] = {
		{ "model.layers.0.input_layernorm.weight", 1 },
		{ "model.layers.0.post_attention_layernorm.weight", 1 },
		{ "model.norm.weight", 1 },
		{ "model.layers.0.self_attn.q_proj.weight", 0 },
		{ "lm_head.weight", 0 },
		{ "transformer.h.0.ln_1.weight", 1 },
		{ "transformer.ln_f.bias", 1 },
		{ "encoder.layer.3.attention.output.LayerNorm.weight", 1 },
		{ "decoder.final_layer_norm.weight", 1 },
		{ "0.bias", 1 },
		{ "0.weight", 0 },
		{ "knowledge.weight", 0 },
		{ "normalizer.weight", 0 },
	};
	struct tfs_plan_tensor t[16];
	struct tfs_config c;
	struct tfs_plan_facts f = node8(0);

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (tfs_plan_no_decay(names[i].name) != names[i].no_decay)
			fail_msg("%s: expected %d", names[i].name,
				 names[i].no_decay);
	}
	/* the Trainer's groups of the measured run's model: the weights
	 * (w0 w1 = 2,097,152 close the first sub-group, and so on, w6
	 * alone), then the biases (6,160 elements, one sub-group) */
	f.ranks = 1;
	f.ntensors = linear_stack(t);
	f.tensors = t;
	for (size_t i = 0; i < f.ntensors; i++)
		t[i].group = t[i].numel <= 1024 || t[i].numel == 16;
	measured_run(&c, "6");
	tfs_plan_init(plan);
	assert_int_equal(tfs_plan_compute(&c, &f, plan), 0);
	assert_int_equal(plan->subgroups, 5);
	assert_int_equal(plan->largest_subgroup, 2097152);
	/* Llama with trainer groups: the 2L + 1 norms in group 1 */
	{
		struct tfs_plan_shape s = { .hidden = 64,
					    .layers = 2,
					    .intermediate = 128,
					    .vocab = 100,
					    .heads = 4 };
		struct tfs_plan_tensor *l;
		size_t k, ones = 0;

		assert_int_equal(tfs_plan_llama_tensors(&s, 1, &l, &k), 0);
		for (size_t i = 0; i < k; i++)
			ones += l[i].group;
		assert_int_equal(ones, 5);
		free(l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_counts_llama_2_7b_exactly),
		cmocka_unit_test(test_plan_counts_grouped_query_attention),
		cmocka_unit_test(test_plan_tied_embeddings_count_once),
		cmocka_unit_test(
		    test_plan_7b_on_8_ranks_fits_with_every_item_exact),
		cmocka_unit_test(test_plan_70b_on_8_ranks_pins_more_than_ram),
		cmocka_unit_test(
		    test_plan_counts_files_from_the_largest_parameter),
		cmocka_unit_test(test_plan_aligns_to_intra_op_parallelism),
		cmocka_unit_test(test_plan_cpu_offload_holds_everything_in_ram),
		cmocka_unit_test(test_plan_stage_2_treats_nvme_as_cpu),
		cmocka_unit_test(
		    test_plan_buffer_size_below_largest_partition_fails),
		cmocka_unit_test(
		    test_plan_buffer_size_equal_to_partition_fails),
		cmocka_unit_test(test_plan_small_partitions_are_never_swapped),
		cmocka_unit_test(test_plan_fast_init_with_small_buffers_fails),
		cmocka_unit_test(
		    test_plan_optimizer_buffer_count_below_adam_states_fails),
		cmocka_unit_test(test_plan_thread_count_is_a_warning),
		cmocka_unit_test(test_plan_missing_nvme_path_fails),
		cmocka_unit_test(
		    test_plan_block_size_not_4k_fails_as_the_mount_would),
		cmocka_unit_test(test_plan_memlock_below_pinned),
		cmocka_unit_test(test_plan_nvme_capacity),
		cmocka_unit_test(
		    test_plan_sub_group_bound_uses_largest_partition),
		cmocka_unit_test(test_plan_inputs_problems_are_kept),
		cmocka_unit_test(test_plan_rejects_unusable_facts),
		cmocka_unit_test(test_plan_sub_groups_as_deepspeed_forms_them),
		cmocka_unit_test(test_plan_too_few_param_buffers_fail),
		cmocka_unit_test(test_plan_reuse_distance_decides_the_buffers),
		cmocka_unit_test(test_plan_max_in_cpu_keeps_whole_sub_groups),
		cmocka_unit_test(test_plan_llama_tensors_sum_to_the_count),
		cmocka_unit_test(test_plan_deepspeed_versions),
		cmocka_unit_test(test_plan_thread_count_is_right_before_0_16_4),
		cmocka_unit_test(test_plan_memlock_does_not_bind_root),
		cmocka_unit_test(
		    test_plan_exact_minus_bound_is_the_measured_gap),
		cmocka_unit_test(test_plan_trainer_groups),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
