/*
 * plan.c: DeepSpeed's host memory, NVMe space and failure modes for a
 * configuration, computed from DeepSpeed's own code.
 *
 * Read from microsoft/DeepSpeed 0.16.5 (commit 38327e0).  Notation, per
 * rank unless said otherwise:
 *
 *   N   the model's parameters          W   world size = ranks x nodes
 *   E   bytes of the model dtype (fp16/bf16 2, fp32 4; engine.py
 *       get_data_types: fp16 or bf16 if enabled, else fp32)
 *   P   parameter elements per rank = ceil(N / W): ZeRO-3 splits every
 *       parameter into W equal partitions, the last padded
 *       (partition_parameters.py _partition_param)
 *   L   largest parameter partition = ceil(largest parameter / W)
 *   S   sub_group_size                  B   offload_param.buffer_size
 *   G   largest sub-group: stage3.py _create_fp16_sub_groups keeps one
 *       sub-group when S >= P, else closes a sub-group once its
 *       partitions reach S, so G = P if S >= P, else min(P, S + L - 1)
 *       (S when L is unknown)
 *   a(n, e) n rounded up to a multiple of 1024 x intra_op_parallelism / e
 *       elements: swap lengths are aligned to AIO_ALIGNED_BYTES = 1024
 *       per thread (swap_tensor/utils.py; _io_aligned_numel in
 *       partitioned_param_swapper.py and optimizer_utils.py)
 *   min_aio = max(1 MiB, block_size): smaller tensors are never swapped
 *       (swappable_tensor in both swappers)
 *
 * Host memory per rank, ZeRO stage 3:
 *
 *   parameter swap pool   offload_param nvme: pinned
 *       buffer_count x a(B, E) x E
 *       partitioned_param_swapper.py AsyncPartitionedParameterSwapper.
 *       _configure_aio: one pinned tensor of aligned_elements_per_buffer x
 *       param_buffer_count; in GPU memory instead with aio.use_gds
 *   parameters in RAM     offload_param cpu: P x E; nvme: min(max_in_cpu,
 *       P) x E; pinned whatever pin_memory says: stage3.py
 *       _create_param_groups_fp16_flat_cpu_memory calls
 *       get_accelerator().pin_memory() unconditionally
 *   fp16 reuse buffer     offload_param nvme and P > max_in_cpu (some
 *       sub-group has no place in that buffer): pinned a(min(W x G, N),
 *       E) x E.  stage3.py _create_fp16_partitions_with_defragmentation
 *       passes reserve_partitioned_swap_space() the ds_numel of each
 *       parameter of the largest sub-group, which is the full parameter,
 *       not its partition: W times the sub-group
 *   gradient partitions   offload_optimizer cpu or nvme: P x E (the grad
 *       accumulation dtype is the model dtype under ZeRO), pinned iff
 *       offload_optimizer.pin_memory: stage3.py _setup_for_real_optimizer,
 *       grad_partitions_flat_buffer on self.device = cpu
 *   optimizer swap pool   offload_optimizer nvme: pinned
 *       buffer_count x a(G, 4) x 4 (fp32): optimizer_utils.py
 *       OptimizerSwapper.__init__ -> utils.py SwapBufferManager, with
 *       largest_numel = max(fp16_partitioned_groups_flat_numel) from
 *       stage3.py _configure_tensor_swapping
 *   fp32 gradient buffer  offload_optimizer cpu or nvme: pageable G x 4:
 *       stage3.py initialize_optimizer_states, gradient_buffer
 *   optimizer state       offload_optimizer cpu: pageable 12 x P (fp32
 *       master weights, Adam's exp_avg and exp_avg_sq, stage3.py
 *       _create_fp32_partitions and the optimizer), and fp32 gradients 4 x
 *       P, pinned iff pin_memory (initialize_optimizer_states,
 *       subgroup_gradient_buffer)
 *
 * Stages 1 and 2 offload only the optimizer, and treat nvme as cpu
 * (stage_1_and_2.py: cpu_offload = device != none): 12 x P pageable and
 * 4 x P of gradients, pinned iff pin_memory.  Transient buffers (the
 * unpinned fp32 sub-group of a fast_init = false start, the fp16 model
 * before zero.Init partitions it) and the small partitions never swapped
 * are left out.
 *
 * The tensorfs mount, per node, run with the same keys: cache max_in_cpu
 * x E, pool buffer_count x buffer_size x E, both pinned with pin_memory
 * (memcheck.c tfs_mem_check), 64 MiB of overhead (fs/main.c
 * MOUNT_SPARE) and the cache's index (fs.h tfs_fs_cache_index_bytes: a
 * record and table slots per aio.block_size chunk of the cache and the
 * pool), and the metadata of the files DeepSpeed creates
 * (memcheck.c tfs_mem_meta_bytes: TFS_META_BYTES_PER_FILE each, plus
 * headroom).  Those files, per rank, estimated from the facts: one per
 * parameter tensor with offload_param nvme (the swapper's
 * <param id>_param.tensor.swp); with offload_optimizer nvme three per
 * sub-group (fp32 master, exp_avg, exp_avg_sq) and the gradient pieces,
 * at most one per parameter tensor.  The number of parameter tensors is
 * not a fact: it is taken as 8 x N / largest parameter (Llama 2 7B has
 * 291 tensors, 8 x 52 = 416 here; 70B 723, 8 x 263), or N / 1e6 when the
 * largest parameter is unknown.  At 320 bytes a file, even the
 * overestimate is a few MiB.
 *
 * NVMe per node (ranks x per rank): parameter files P x E with
 * offload_param nvme (zero_stage_3/<dtype>params/rank<R>/, one per
 * swappable partition), optimizer files 16 x P with offload_optimizer
 * nvme: fp32 master, exp_avg, exp_avg_sq (<id>.tensor.swp,
 * optimizer_utils.py OptimizerStateSwapInfo) and fp32 gradients
 * (<id>_gradient_<off>_<len>.tensor.swp, stage3.py
 * partition_grads -> swap_out_gradients of grad_buffer.float()).
 *
 * Failures DeepSpeed meets later, each checked here with its message:
 * a swappable partition not smaller than B ("More elements ... than
 * buffer size", partitioned_param_swapper.py get_buffer asserts numel <
 * elements_per_buffer); fast_init with a(B, E) < a(G, 4) while
 * sub-groups live on NVMe ("numel of fp16 buffers ... is too small",
 * optimizer_utils.py _initialize_from_swapped_fp16_params); an optimizer
 * buffer_count below 4 per sub-group step (Adam: fp32 parameter,
 * exp_avg, exp_avg_sq, gradient; partitioned_optimizer_swapper.py
 * swap_in_optimizer_state asserts the allocation), or below 4 x (1 +
 * pipeline_read + pipeline_write) when pipelined (pipelined_optimizer_
 * swapper.py holds the read-ahead and the write-behind sub-group's
 * buffers at once: "ran out of swap buffers").
 *
 * Recommendations start from the configuration, fix what fails, then,
 * while the node needs more than 90% of its RAM, move a cpu offload to
 * nvme, lower sub_group_size to 1e8, lower max_in_cpu, and lower
 * sub_group_size further, re-evaluating after each step.
 */
#include "plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "memcheck.h"
#include "units.h"

#define AIO_ALIGNED_BYTES 1024	       /* swap_tensor/utils.py */
#define MIN_AIO_BYTES	  (1ull << 20) /* swap_tensor/utils.py */
#define ADAM_STATES	  4  /* fp32 param, exp_avg, exp_avg_sq, gradient */
#define OPT_NVME_BYTES	  16 /* those four in fp32, per element */
#define OPT_CPU_BYTES	  12 /* fp32 param, exp_avg, exp_avg_sq */
#define TFS_OVERHEAD	  (64ull << 20) /* fs/main.c MOUNT_SPARE */
#define HEADROOM_PCT	  90 /* beyond this share of RAM: a warning */

/* ===== arithmetic ===== */

static uint64_t mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* n elements of e bytes rounded up to DeepSpeed's swap alignment */
static uint64_t aligned(uint64_t n, size_t e, uint64_t intra_op)
{
	uint64_t a = AIO_ALIGNED_BYTES * intra_op / e;

	if (!a)
		a = 1;
	return mul(ceil_div(n, a), a);
}

static char *num(uint64_t v, char *buf, size_t len)
{
	return tfs_format_count(v, buf, len);
}

static char *sz(uint64_t v, char *buf, size_t len)
{
	return tfs_format_size(v, buf, len);
}

/* ===== the model ===== */

int tfs_plan_count_params(const struct tfs_plan_shape *s, uint64_t *params,
			  uint64_t *largest)
{
	uint64_t H = s->hidden, V = s->vocab, I = s->intermediate;
	uint64_t kvh = s->kv_heads ? s->kv_heads : s->heads, d, q, kv;
	unsigned __int128 layer, n, big;

	if (!H || !s->layers || !I || !V || !s->heads)
		return -EINVAL;
	if (s->head_dim) {
		d = s->head_dim;
	} else {
		if (H % s->heads)
			return -EINVAL;
		d = H / s->heads;
	}
	q = s->heads * d;
	kv = kvh * d;
	layer = (unsigned __int128)H * q + 2 * (unsigned __int128)H * kv +
		(unsigned __int128)q * H + 3 * (unsigned __int128)H * I + 2 * H;
	n = (unsigned __int128)V * H * (s->tied ? 1 : 2) + layer * s->layers +
	    H;
	big = (unsigned __int128)V * H;
	if ((unsigned __int128)H * I > big)
		big = (unsigned __int128)H * I;
	if ((unsigned __int128)H * q > big)
		big = (unsigned __int128)H * q;
	if (n > UINT64_MAX)
		return -ERANGE;
	*params = (uint64_t)n;
	*largest = (uint64_t)big;
	return 0;
}

/* Append one tensor to the list being built. */
static void put(struct tfs_plan_tensor *t, size_t *n, uint64_t numel,
		uint32_t step, uint32_t group)
{
	t[*n].numel = numel;
	t[*n].step = step;
	t[*n].group = group;
	(*n)++;
}

int tfs_plan_llama_tensors(const struct tfs_plan_shape *s, int trainer,
			   struct tfs_plan_tensor **out, size_t *n)
{
	uint32_t norm = trainer ? 1 : 0;
	uint64_t H = s->hidden, V = s->vocab, I = s->intermediate, N, big;
	uint64_t kvh = s->kv_heads ? s->kv_heads : s->heads, d, q, kv;
	struct tfs_plan_tensor *t;
	size_t k = 0, cap;
	uint32_t base;
	int rc = tfs_plan_count_params(s, &N, &big);

	if (rc)
		return rc;
	if (s->layers > (UINT32_MAX - 3) / 9)
		return -ERANGE;
	d = s->head_dim ? s->head_dim : H / s->heads;
	q = s->heads * d;
	kv = kvh * d;
	cap = 3 + 9 * (size_t)s->layers;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	put(t, &k, V * H, 0, 0); /* model.embed_tokens */
	for (uint64_t l = 0; l < s->layers; l++) {
		base = 1 + 9 * (uint32_t)l;
		put(t, &k, q * H, base + 1, 0);	 /* self_attn.q_proj */
		put(t, &k, kv * H, base + 2, 0); /* k_proj */
		put(t, &k, kv * H, base + 3, 0); /* v_proj */
		put(t, &k, H * q, base + 4, 0);	 /* o_proj */
		put(t, &k, I * H, base + 6, 0);	 /* mlp.gate_proj */
		put(t, &k, I * H, base + 7, 0);	 /* up_proj */
		put(t, &k, H * I, base + 8, 0);	 /* down_proj */
		put(t, &k, H, base, norm);	 /* input_layernorm */
		put(t, &k, H, base + 5, norm);	 /* post_attention_layernorm */
	}
	base = 1 + 9 * (uint32_t)s->layers;
	put(t, &k, H, base, norm); /* model.norm */
	if (!s->tied)
		put(t, &k, V * H, base + 1, 0); /* lm_head */
	*out = t;
	*n = k;
	return 0;
}

int tfs_plan_ds_version(const char *s, unsigned int *v)
{
	unsigned long part[3] = { 0, 0, 0 };
	const char *p = s;
	char *end;
	int i;

	if (*p == 'v' || *p == 'V')
		p++;
	for (i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		part[i] = strtoul(p, &end, 10);
		p = end;
		if (part[i] > 99)
			return -ERANGE;
		if (*p != '.')
			break;
		p++;
	}
	if (i == 3 || (*p && *p != '+' && *p != '-' && *p != 'r' && *p != 'a' &&
		       *p != 'b' && *p != 'd'))
		return -EINVAL; /* four parts, or junk after the number */
	if (i == 0)
		return -EINVAL; /* "0": a version needs its minor */
	*v = (unsigned int)(part[0] * 10000 + part[1] * 100 + part[2]);
	if (*v < TFS_PLAN_DS_OLDEST)
		return -ERANGE;
	return 0;
}

/* ===== problems ===== */

void tfs_plan_init(struct tfs_plan *p)
{
	memset(p, 0, sizeof(*p));
}

void tfs_plan_add(struct tfs_plan *p, enum tfs_plan_severity s, const char *key,
		  const char *fmt, ...)
{
	struct tfs_plan_problem *pr;
	va_list ap;

	if (s > p->severity)
		p->severity = s;
	if (p->nproblems == TFS_PLAN_MAX_PROBLEMS)
		return;
	pr = &p->problems[p->nproblems++];
	pr->severity = s;
	snprintf(pr->key, sizeof(pr->key), "%s", key ? key : "");
	va_start(ap, fmt);
	vsnprintf(pr->text, sizeof(pr->text), fmt, ap);
	va_end(ap);
}

const char *tfs_plan_verdict(enum tfs_plan_severity s)
{
	return s == TFS_PLAN_FITS   ? "fits"
	       : s == TFS_PLAN_WARN ? "warnings"
				    : "will fail";
}

/* DeepSpeed's version as the facts give it. */
static unsigned int ds_version(const struct tfs_plan_facts *f)
{
	return f->ds_version ? f->ds_version : TFS_PLAN_DS_NEWEST;
}

/* ===== the footprint ===== */

/* What DeepSpeed does with a configuration, once the stage is known. */
struct mode {
	int pdev, odev;	     /* effective devices */
	uint64_t B;	     /* buffer_size in elements */
	uint64_t max_in_cpu; /* in elements */
	uint64_t intra;
	uint64_t min_aio;
};

static void mode_of(const struct tfs_config *c, const struct tfs_plan_facts *f,
		    struct mode *m)
{
	m->pdev =
	    f->stage == 3 ? (int)c->offload_param_device : TFS_DEVICE_NONE;
	m->odev =
	    f->stage == 0 ? TFS_DEVICE_NONE : (int)c->offload_optimizer_device;
	if (f->stage != 3 && m->odev == TFS_DEVICE_NVME)
		m->odev = TFS_DEVICE_CPU; /* stage_1_and_2.py */
	m->B = tfs_config_elems(c, c->offload_param_buffer_size);
	m->max_in_cpu = tfs_config_elems(c, c->offload_param_max_in_cpu);
	m->intra =
	    c->aio_intra_op_parallelism && !(c->flags & TFS_CFG_F_DS_ONE_THREAD)
		? c->aio_intra_op_parallelism
		: 1;
	m->min_aio = c->aio_block_size > MIN_AIO_BYTES ? c->aio_block_size
						       : MIN_AIO_BYTES;
}

static struct tfs_plan_item *item(struct tfs_plan *p, const char *name,
				  const char *source)
{
	struct tfs_plan_item *it = &p->ds[p->nds++];

	it->name = name;
	it->source = source;
	return it;
}

/* The facts derived from the configuration: world, P, G, what stays in
 * RAM. */
static void derive(const struct tfs_config *c, const struct tfs_plan_facts *f,
		   const struct mode *m, struct tfs_plan *p)
{
	uint64_t S = c->zero_optimization_sub_group_size;

	p->elem = tfs_dtype_size((unsigned)c->offload_param_dtype);
	p->world = (uint64_t)f->ranks * f->nodes;
	p->per_rank = ceil_div(f->params, p->world);
	p->largest_partition =
	    f->largest_param ? ceil_div(f->largest_param, p->world) : 0;
	if (S >= p->per_rank)
		p->largest_subgroup = p->per_rank;
	else
		p->largest_subgroup = min64(
		    p->per_rank,
		    (S ? S : 1) +
			(p->largest_partition ? p->largest_partition - 1 : 0));
	p->subgroups = ceil_div(p->per_rank, S ? S : 1);
	p->in_cpu = m->pdev == TFS_DEVICE_CPU ? p->per_rank
		    : m->pdev == TFS_DEVICE_NVME
			? min64(m->max_in_cpu, p->per_rank)
			: 0;
	p->subgroups_on_nvme =
	    m->pdev == TFS_DEVICE_NVME && p->per_rank > m->max_in_cpu;
}

/*
 * The same from the model's tensors, exactly (f->tensors): P is the sum
 * of the partitions; the sub-groups are formed as stage3.py
 * _create_fp16_sub_groups forms them, per param group in the tensors'
 * order, a sub-group closing once its partitions reach S; G is the
 * largest (the first of equals); the fp16 reuse buffer holds the whole
 * parameters of that sub-group, each aligned
 * (reserve_partitioned_swap_space).  With offload_param nvme the
 * sub-groups that fit in each group's share of max_in_cpu, in order,
 * stay in RAM (_create_param_groups_fp16_flat_cpu_memory and the loop
 * after it); cpu[i] is set for their tensors.
 */
static void derive_tensors(const struct tfs_config *c,
			   const struct tfs_plan_facts *f, const struct mode *m,
			   struct tfs_plan *p, unsigned char *cpu)
{
	uint64_t S = c->zero_optimization_sub_group_size, W = p->world;
	uint64_t agg = 0, gnum, flat, off, cur, fp16;
	uint32_t groups = 0;
	size_t i, first;

	p->exact = 1;
	p->per_rank = p->largest_partition = p->largest_subgroup = 0;
	p->subgroups = p->fp16_reuse = 0;
	p->subgroups_on_nvme = 0;
	for (i = 0; i < f->ntensors; i++) {
		uint64_t part = ceil_div(f->tensors[i].numel, W);

		p->per_rank = add(p->per_rank, part);
		if (part > p->largest_partition)
			p->largest_partition = part;
		if (f->tensors[i].group >= groups)
			groups = f->tensors[i].group + 1;
	}
	for (uint32_t g = 0; g < groups; g++) {
		gnum = 0;
		for (i = 0; i < f->ntensors; i++)
			if (f->tensors[i].group == g)
				gnum =
				    add(gnum, ceil_div(f->tensors[i].numel, W));
		if (!gnum)
			continue;
		flat = gnum;
		if (m->pdev == TFS_DEVICE_NVME &&
		    add(agg, gnum) > m->max_in_cpu)
			flat = m->max_in_cpu > agg ? m->max_in_cpu - agg : 0;
		agg = add(agg, gnum);
		off = cur = fp16 = 0;
		first = SIZE_MAX;
		for (i = 0; i < f->ntensors; i++) {
			if (f->tensors[i].group != g)
				continue;
			if (first == SIZE_MAX)
				first = i;
			cur = add(cur, ceil_div(f->tensors[i].numel, W));
			fp16 = add(fp16, aligned(f->tensors[i].numel, p->elem,
						 m->intra));
			/* the last of the group closes it too */
			size_t next = i + 1;

			while (next < f->ntensors &&
			       f->tensors[next].group != g)
				next++;
			int last = next == f->ntensors;

			if (!(S >= gnum ? last : cur >= S || last))
				continue;
			p->subgroups++;
			if (cur > p->largest_subgroup) {
				p->largest_subgroup = cur;
				p->fp16_reuse = fp16;
			}
			if (m->pdev == TFS_DEVICE_NVME &&
			    add(off, cur) <= flat) {
				for (size_t j = first; j <= i; j++)
					if (f->tensors[j].group == g)
						cpu[j] = 1;
			} else if (m->pdev == TFS_DEVICE_NVME) {
				p->subgroups_on_nvme = 1;
			}
			off = add(off, cur);
			cur = fp16 = 0;
			first = SIZE_MAX;
		}
	}
	p->in_cpu = m->pdev == TFS_DEVICE_CPU ? p->per_rank
		    : m->pdev == TFS_DEVICE_NVME
			? min64(m->max_in_cpu, p->per_rank)
			: 0;
}

/*
 * The parameter swap buffers DeepSpeed holds at once, once the first
 * step has recorded the module trace (partitioned_param_coordinator.py).
 * A parameter on NVMe (not in RAM by max_in_cpu, its partition at least
 * min_aio bytes: swappable_tensor) takes a buffer when its module is
 * fetched (_ensure_availability_of_partitioned_params -> swap_in) and
 * gives it back when it is partitioned again (_partition_param ->
 * remove_partition_and_release_buffers).  After its module's forward,
 * release_sub_module -> __params_to_release keeps a parameter whose
 * next use comes within stage3_max_reuse_distance elements of the
 * parameters of the modules traced in between: for the use of module
 * s in the backward pass, twice the elements of the modules after s.  A
 * parameter of at most stage3_param_persistence_threshold elements
 * persists, and its buffer goes back once it is gathered.  NVMe
 * prefetch (__prefetch_nvme_param_partitions) takes free buffers only,
 * in trace order, and stage3_max_live_parameters and
 * stage3_prefetch_bucket_size bound the all-gather prefetch, so neither
 * adds to the need.  The buffers held on fetching module s are those
 * kept from the modules before it and its own:
 *
 *   need = max over s of (sum over u < s of kept(u)) + swapped(s)
 *
 * A model whose modules run once each in the forward pass is assumed
 * (no activation checkpointing, no module called twice).  Sets
 * p->param_buffers, p->kept and p->swapped; 0 or -ENOMEM.
 */
static int count_param_buffers(const struct tfs_config *c,
			       const struct tfs_plan_facts *f,
			       const struct mode *m, struct tfs_plan *p,
			       const unsigned char *cpu)
{
	uint64_t R = c->zero_optimization_stage3_max_reuse_distance;
	uint64_t T = c->zero_optimization_stage3_param_persistence_threshold;
	uint64_t *at, *sw, after = 0, held = 0, need = 0, kept = 0;
	size_t n = 0, i;

	p->param_buffers = p->kept = p->swapped = 0;
	if (m->pdev != TFS_DEVICE_NVME)
		return 0;
	for (i = 0; i < f->ntensors; i++)
		if ((size_t)f->tensors[i].step + 1 > n)
			n = (size_t)f->tensors[i].step + 1;
	at = calloc(n, sizeof(*at));
	sw = calloc(n, sizeof(*sw));
	if (!at || !sw) {
		free(at);
		free(sw);
		return -ENOMEM;
	}
	for (i = 0; i < f->ntensors; i++) {
		const struct tfs_plan_tensor *t = &f->tensors[i];
		uint64_t part = ceil_div(t->numel, p->world);

		at[t->step] = add(at[t->step], t->numel);
		if (cpu[i] || mul(part, p->elem) < m->min_aio)
			continue;
		p->swapped++;
		if (t->numel > T)
			sw[t->step]++;
	}
	/* after: the elements of the modules after s, walked backwards,
	 * so each kept(u) is known before the need at s is taken */
	for (size_t s = n; s-- > 0;) {
		sw[s] |= (uint64_t)(mul(2, after) < R) << 63; /* kept */
		after = add(after, at[s]);
	}
	for (size_t s = 0; s < n; s++) {
		uint64_t own = sw[s] & ~(1ull << 63);

		if (held + own > need)
			need = held + own;
		if (sw[s] >> 63) {
			held += own;
			kept += own;
		}
	}
	p->param_buffers = need;
	p->kept = kept;
	free(at);
	free(sw);
	return 0;
}

/* DeepSpeed's items for the parameters, per rank. */
static void param_items(const struct tfs_config *c,
			const struct tfs_plan_facts *f, const struct mode *m,
			struct tfs_plan *p)
{
	struct tfs_plan_item *it;
	uint64_t v, full;
	char a[48], b[48], g[48];
	size_t E = p->elem;

	num(p->largest_subgroup, g, sizeof(g));
	if (m->pdev == TFS_DEVICE_NVME) {
		it = item(p, "parameter swap pool",
			  "partitioned_param_swapper.py _configure_aio");
		v = mul(mul(c->offload_param_buffer_count,
			    aligned(m->B, E, m->intra)),
			E);
		snprintf(it->formula, sizeof(it->formula),
			 "buffer_count %llu x align(buffer_size %s) x %zu B%s",
			 (unsigned long long)c->offload_param_buffer_count,
			 num(m->B, a, sizeof(a)), E,
			 c->aio_use_gds ? " (GPU memory: use_gds)" : "");
		if (!c->aio_use_gds)
			it->pinned = v;
	}
	if (m->pdev != TFS_DEVICE_NONE) {
		it =
		    item(p, "parameters kept in RAM",
			 "stage3.py _create_param_groups_fp16_flat_cpu_memory");
		it->pinned = mul(p->in_cpu, E);
		if (m->pdev == TFS_DEVICE_CPU)
			snprintf(it->formula, sizeof(it->formula),
				 "all P %s x %zu B",
				 num(p->per_rank, a, sizeof(a)), E);
		else
			snprintf(it->formula, sizeof(it->formula),
				 "min(max_in_cpu %s, P %s) x %zu B",
				 num(m->max_in_cpu, a, sizeof(a)),
				 num(p->per_rank, b, sizeof(b)), E);
	}
	if (p->subgroups_on_nvme) {
		it = item(p, "fp16 buffer for NVMe sub-groups",
			  "stage3.py _create_fp16_partitions_with_"
			  "defragmentation, reserve_partitioned_swap_space");
		if (p->exact) {
			it->pinned = mul(p->fp16_reuse, E);
			snprintf(it->formula, sizeof(it->formula),
				 "the whole parameters of the largest "
				 "sub-group, each aligned: %s x %zu B",
				 num(p->fp16_reuse, a, sizeof(a)), E);
		} else {
			full = min64(mul(p->largest_subgroup, p->world),
				     f->params);
			it->pinned = mul(aligned(full, E, m->intra), E);
			snprintf(it->formula, sizeof(it->formula),
				 "align(G %s x world %llu, full parameters) x "
				 "%zu B",
				 g, (unsigned long long)p->world, E);
		}
	}
}

/* DeepSpeed's items for the gradients and the optimizer, per rank. */
static void optimizer_items(const struct tfs_config *c,
			    const struct tfs_plan_facts *f,
			    const struct mode *m, struct tfs_plan *p)
{
	struct tfs_plan_item *it;
	uint64_t v, opt_pool;
	char a[48], g[48];
	size_t E = p->elem;

	num(p->largest_subgroup, g, sizeof(g));
	if (f->stage == 3 && m->odev != TFS_DEVICE_NONE) {
		it = item(p, "gradient partitions",
			  "stage3.py _setup_for_real_optimizer, "
			  "grad_partitions_flat_buffer");
		v = mul(p->per_rank, E);
		if (c->offload_optimizer_pin_memory)
			it->pinned = v;
		else
			it->pageable = v;
		snprintf(it->formula, sizeof(it->formula), "P %s x %zu B%s",
			 num(p->per_rank, a, sizeof(a)), E,
			 c->offload_optimizer_pin_memory ? ", pin_memory" : "");
	}
	if (f->stage == 3 && m->odev == TFS_DEVICE_NVME) {
		it = item(p, "optimizer swap pool",
			  "optimizer_utils.py OptimizerSwapper, "
			  "SwapBufferManager");
		opt_pool = mul(mul(c->offload_optimizer_buffer_count,
				   aligned(p->largest_subgroup, 4, m->intra)),
			       4);
		it->pinned = opt_pool;
		snprintf(it->formula, sizeof(it->formula),
			 "buffer_count %llu x align(G %s) x 4 B",
			 (unsigned long long)c->offload_optimizer_buffer_count,
			 g);
	}
	if (f->stage == 3 && m->odev != TFS_DEVICE_NONE) {
		it = item(p, "fp32 gradient buffer",
			  "stage3.py initialize_optimizer_states");
		it->pageable = mul(p->largest_subgroup, 4);
		snprintf(it->formula, sizeof(it->formula), "G %s x 4 B", g);
	}
	if (m->odev == TFS_DEVICE_CPU) {
		it = item(p, "optimizer state in RAM",
			  f->stage == 3 ? "stage3.py _create_fp32_partitions"
					: "stage_1_and_2.py");
		it->pageable = mul(p->per_rank, OPT_CPU_BYTES);
		snprintf(it->formula, sizeof(it->formula),
			 "P %s x 12 B (fp32 weights, exp_avg, exp_avg_sq)",
			 num(p->per_rank, a, sizeof(a)));
		it =
		    item(p, "fp32 gradients in RAM",
			 f->stage == 3 ? "stage3.py initialize_optimizer_states"
				       : "stage_1_and_2.py");
		v = mul(p->per_rank, 4);
		if (c->offload_optimizer_pin_memory)
			it->pinned = v;
		else
			it->pageable = v;
		snprintf(it->formula, sizeof(it->formula), "P %s x 4 B%s",
			 num(p->per_rank, a, sizeof(a)),
			 c->offload_optimizer_pin_memory ? ", pin_memory" : "");
	}
}

/* Files DeepSpeed creates on the mount per node (see the top of the file). */
static uint64_t deepspeed_files(const struct tfs_config *c,
				const struct tfs_plan_facts *f,
				const struct mode *m, const struct tfs_plan *p)
{
	uint64_t tensors, per_rank = 0, S = c->zero_optimization_sub_group_size;

	if (p->exact)
		tensors = f->ntensors;
	else
		tensors = f->largest_param
			      ? mul(8, ceil_div(f->params, f->largest_param))
			      : ceil_div(f->params, 1000000);
	if (m->pdev == TFS_DEVICE_NVME)
		per_rank = add(per_rank, p->exact ? p->swapped : tensors);
	if (f->stage == 3 && m->odev == TFS_DEVICE_NVME)
		per_rank =
		    add(per_rank,
			add(mul(3, p->exact ? p->subgroups
					    : ceil_div(p->per_rank, S ? S : 1)),
			    tensors));
	return mul(per_rank, f->ranks);
}

/* The tensorfs mount's items, per node, with the same keys. */
static void mount_items(const struct tfs_config *c,
			const struct tfs_plan_facts *f, const struct mode *m,
			struct tfs_plan *p)
{
	uint64_t v;
	char a[48];
	size_t E = p->elem;

	p->tfs[0].name = "tensorfs cache";
	p->tfs[0].source = "max_in_cpu, lib/cache.c";
	p->tfs[1].name = "tensorfs write-back pool";
	p->tfs[1].source = "buffer_count x buffer_size, lib/cache.c";
	p->tfs[2].name = "tensorfs overhead";
	p->tfs[2].source = "fs/main.c MOUNT_SPARE, lib/cache.c index";
	p->tfs[3].name = "tensorfs metadata";
	p->tfs[3].source = "lib/memcheck.c tfs_mem_meta_bytes";
	v = tfs_config_cache_bytes(c);
	if (c->offload_param_max_in_cpu & TFS_CFG_BYTES)
		snprintf(p->tfs[0].formula, sizeof(p->tfs[0].formula),
			 "max_in_cpu %s", sz(v, a, sizeof(a)));
	else
		snprintf(p->tfs[0].formula, sizeof(p->tfs[0].formula),
			 "max_in_cpu %s x %zu B",
			 num(c->offload_param_max_in_cpu, a, sizeof(a)), E);
	p->tfs[0].pinned = c->offload_param_pin_memory ? v : 0;
	p->tfs[0].pageable = c->offload_param_pin_memory ? 0 : v;
	v = tfs_config_pool_bytes(c);
	if (c->offload_param_buffer_size & TFS_CFG_BYTES)
		snprintf(p->tfs[1].formula, sizeof(p->tfs[1].formula),
			 "buffer_count %llu x buffer_size %s",
			 (unsigned long long)c->offload_param_buffer_count,
			 sz(tfs_config_bytes(c, c->offload_param_buffer_size),
			    a, sizeof(a)));
	else
		snprintf(p->tfs[1].formula, sizeof(p->tfs[1].formula),
			 "buffer_count %llu x buffer_size %s x %zu B",
			 (unsigned long long)c->offload_param_buffer_count,
			 num(c->offload_param_buffer_size, a, sizeof(a)), E);
	p->tfs[1].pinned = c->offload_param_pin_memory ? v : 0;
	p->tfs[1].pageable = c->offload_param_pin_memory ? 0 : v;
	{
		struct tfs_fs_opts fo = { .cache_bytes =
					      tfs_config_cache_bytes(c),
					  .pool_bytes = v,
					  .block_size =
					      (size_t)c->aio_block_size };
		uint64_t ix = tfs_fs_cache_index_bytes(&fo);
		char b[48];

		snprintf(p->tfs[2].formula, sizeof(p->tfs[2].formula),
			 "64 MiB + %s of cache index (%s chunks)",
			 sz(ix, a, sizeof(a)),
			 sz(c->aio_block_size, b, sizeof(b)));
		p->tfs[2].pinned = 0;
		p->tfs[2].pageable = TFS_OVERHEAD + ix;
	}
	p->files = deepspeed_files(c, f, m, p);
	snprintf(p->tfs[3].formula, sizeof(p->tfs[3].formula),
		 "(%s files + %s) x %u B", num(p->files, a, sizeof(a)),
		 p->files / 4 > TFS_MEM_HEADROOM_FILES ? "25%" : "16384",
		 TFS_META_BYTES_PER_FILE);
	p->tfs[3].pinned = 0;
	p->tfs[3].pageable = tfs_mem_meta_bytes(p->files);
	p->tfs_pinned = add(p->tfs[0].pinned, p->tfs[1].pinned);
	p->tfs_pageable = add(add(add(p->tfs[0].pageable, p->tfs[1].pageable),
				  p->tfs[2].pageable),
			      p->tfs[3].pageable);
}

static int footprint(const struct tfs_config *c, const struct tfs_plan_facts *f,
		     struct tfs_plan *p)
{
	struct mode m;
	size_t E = tfs_dtype_size((unsigned)c->offload_param_dtype);

	if ((!f->params && !f->ntensors) || !f->ranks || !f->nodes || !E ||
	    f->stage > 3)
		return -EINVAL;
	for (size_t i = 0; i < f->ntensors; i++)
		if (!f->tensors[i].numel || f->tensors[i].step >= f->ntensors)
			return -EINVAL;
	mode_of(c, f, &m);
	derive(c, f, &m, p);
	if (f->ntensors) {
		unsigned char *cpu = calloc(f->ntensors, 1);
		int rc;

		if (!cpu)
			return -ENOMEM;
		derive_tensors(c, f, &m, p, cpu);
		rc = count_param_buffers(c, f, &m, p, cpu);
		free(cpu);
		if (rc)
			return rc;
	}
	p->nds = 0;
	param_items(c, f, &m, p);
	optimizer_items(c, f, &m, p);
	p->rank_pinned = p->rank_pageable = 0;
	for (size_t i = 0; i < p->nds; i++) {
		p->rank_pinned = add(p->rank_pinned, p->ds[i].pinned);
		p->rank_pageable = add(p->rank_pageable, p->ds[i].pageable);
	}

	mount_items(c, f, &m, p);

	p->node_pinned = add(mul(p->rank_pinned, f->ranks), p->tfs_pinned);
	p->node_pageable =
	    add(mul(p->rank_pageable, f->ranks), p->tfs_pageable);

	p->nvme_params =
	    m.pdev == TFS_DEVICE_NVME ? mul(mul(p->per_rank, E), f->ranks) : 0;
	p->nvme_optimizer =
	    f->stage == 3 && m.odev == TFS_DEVICE_NVME
		? mul(mul(p->per_rank, OPT_NVME_BYTES), f->ranks)
		: 0;
	return 0;
}

/* ===== what fails, what to read ===== */

/* Optimizer swap buffers a sub-group step holds at once. */
static uint64_t opt_buffers_needed(const struct tfs_config *c)
{
	return ADAM_STATES * (1 + (c->offload_optimizer_pipeline_read != 0) +
			      (c->offload_optimizer_pipeline_write != 0));
}

/* fast_init's fp16 buffers (parameter swap buffers) are too small */
static int fast_init_fails(const struct tfs_config *c, const struct mode *m,
			   const struct tfs_plan *p, unsigned stage)
{
	return stage == 3 && m->odev == TFS_DEVICE_NVME &&
	       c->offload_optimizer_fast_init && p->subgroups_on_nvme &&
	       aligned(m->B, p->elem, m->intra) <
		   aligned(p->largest_subgroup, 4, m->intra);
}

/* The largest partition is swapped and does not fit a buffer. */
static int partition_too_big(const struct mode *m, const struct tfs_plan *p)
{
	return m->pdev == TFS_DEVICE_NVME && p->largest_partition &&
	       mul(p->largest_partition, p->elem) >= m->min_aio &&
	       p->largest_partition >= m->B;
}

static void check_memory(const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	uint64_t total = add(p->node_pinned, p->node_pageable);
	char a[48], b[48], d[48], e[48];

	if (!f->ram)
		return;
	if (p->node_pinned > f->ram) {
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "",
		    "pinned host memory per node "
		    "(%s: %u ranks x %s of DeepSpeed plus %s of "
		    "tensorfs) exceeds the %s of RAM; pinned pages "
		    "cannot be swapped, so the allocation fails or the "
		    "OOM killer ends a rank (DeepSpeed issues #3000, "
		    "#4867); apply the recommended values below",
		    sz(p->node_pinned, a, sizeof(a)), f->ranks,
		    sz(p->rank_pinned, b, sizeof(b)),
		    sz(p->tfs_pinned, d, sizeof(d)), sz(f->ram, e, sizeof(e)));
	} else if (total > f->ram) {
		tfs_plan_add(p, TFS_PLAN_FAIL, "",
			     "host memory per node (%s, of "
			     "which %s pinned) exceeds the %s of RAM; the OOM "
			     "killer ends a rank once the optimizer state is "
			     "built; apply the recommended values below",
			     sz(total, a, sizeof(a)),
			     sz(p->node_pinned, b, sizeof(b)),
			     sz(f->ram, d, sizeof(d)));
	} else if (total / HEADROOM_PCT > f->ram / 100) {
		tfs_plan_add(p, TFS_PLAN_WARN, "",
			     "host memory per node (%s) is "
			     "more than %d%% of the %s of RAM; the model load, "
			     "data loaders and page cache need the rest; apply "
			     "the recommended values below",
			     sz(total, a, sizeof(a)), HEADROOM_PCT,
			     sz(f->ram, b, sizeof(b)));
	}
	if (f->memlock != UINT64_MAX && p->rank_pinned > f->memlock &&
	    f->memlock_exempt)
		tfs_plan_add(p, TFS_PLAN_FITS, "",
			     "DeepSpeed pins %s per rank, above RLIMIT_MEMLOCK "
			     "(%s), but runs here with CAP_IPC_LOCK (as root), "
			     "which the limit does not bind; run as another "
			     "user it would: raise the limit there (ulimit -l "
			     "unlimited)",
			     sz(p->rank_pinned, a, sizeof(a)),
			     sz(f->memlock, b, sizeof(b)));
	else if (f->memlock != UINT64_MAX && p->rank_pinned > f->memlock)
		tfs_plan_add(p, TFS_PLAN_WARN, "",
			     "DeepSpeed pins %s per rank but "
			     "RLIMIT_MEMLOCK (ulimit -l) is %s; CUDA's pinned "
			     "allocations are not always charged to it, other "
			     "accelerators' are; raise the limit (ulimit -l "
			     "unlimited) or lower the pinned items above",
			     sz(p->rank_pinned, a, sizeof(a)),
			     sz(f->memlock, b, sizeof(b)));
	if (f->memlock != UINT64_MAX && p->tfs_pinned > f->memlock)
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_param.pin_memory",
		    "pin_memory locks the tensorfs cache and pool (%s) "
		    "but RLIMIT_MEMLOCK is %s, so the mount refuses "
		    "to start; raise the limit or set pin_memory = "
		    "false",
		    sz(p->tfs_pinned, a, sizeof(a)),
		    sz(f->memlock, b, sizeof(b)));
}

/* Whether a caller already reported a failure of key (with its file and
 * line, say). */
static int reported(const struct tfs_plan *p, const char *key)
{
	for (size_t i = 0; i < p->nproblems; i++)
		if (p->problems[i].severity == TFS_PLAN_FAIL &&
		    !strcmp(p->problems[i].key, key))
			return 1;
	return 0;
}

/* What the mount refuses, and the old name of intra_op_parallelism. */
static void check_keys(const struct tfs_config *c,
		       const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	char msg[400];
	const char *key;

	key = c->aio_block_size % 4096 ? "aio.block_size"
				       : "offload_param.buffer_size";
	if (tfs_config_validate(c, msg, sizeof(msg)) && !reported(p, key))
		tfs_plan_add(p, TFS_PLAN_FAIL, key,
			     "the tensorfs mount "
			     "refuses this: %s",
			     msg);
	if ((c->flags & TFS_CFG_F_THREAD_COUNT) && ds_version(f) >= 1604)
		tfs_plan_add(
		    p, TFS_PLAN_WARN, "aio.thread_count",
		    "aio.thread_count is ignored by DeepSpeed: "
		    "get_aio_config() (swap_tensor/aio_config.py) reads "
		    "block_size, queue_depth, intra_op_parallelism, "
		    "single_submit, overlap_events and use_gds only, "
		    "so DeepSpeed runs with its default of 1 thread per "
		    "request (tensorfs reads the old name as "
		    "intra_op_parallelism); write intra_op_parallelism "
		    "= %llu instead",
		    (unsigned long long)c->aio_intra_op_parallelism);
}

/* Devices the stage ignores, NVMe without a path. */
static void check_devices(const struct tfs_config *c,
			  const struct tfs_plan_facts *f, const struct mode *m,
			  struct tfs_plan *p)
{
	if (f->stage == 0 && (c->offload_param_device != TFS_DEVICE_NONE ||
			      c->offload_optimizer_device != TFS_DEVICE_NONE))
		tfs_plan_add(p, TFS_PLAN_WARN, "zero_optimization.stage",
			     "ZeRO is off (stage 0), so DeepSpeed offloads "
			     "nothing; use stage 3 to offload to NVMe");
	else if (f->stage != 3 && c->offload_param_device != TFS_DEVICE_NONE)
		tfs_plan_add(p, TFS_PLAN_WARN, "offload_param.device",
			     "offload_param works with ZeRO stage 3 only; at "
			     "stage %u DeepSpeed keeps the parameters on the "
			     "GPU; use stage 3 to offload them",
			     f->stage);
	if (f->stage && f->stage != 3 &&
	    c->offload_optimizer_device == TFS_DEVICE_NVME)
		tfs_plan_add(
		    p, TFS_PLAN_WARN, "offload_optimizer.device",
		    "at stage %u DeepSpeed treats offload_optimizer "
		    "nvme as cpu (stage_1_and_2.py: cpu_offload = "
		    "device != none): the optimizer state stays in host "
		    "memory and nothing reaches nvme_path; use stage 3 "
		    "to swap it to NVMe",
		    f->stage);
	if (m->pdev == TFS_DEVICE_NVME && !c->offload_param_nvme_path[0])
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_param.nvme_path",
		    "offload_param.device = nvme without nvme_path: "
		    "DeepSpeed joins None into a path "
		    "(partitioned_param_swapper.py _configure_aio) and "
		    "stops with a TypeError; set nvme_path to the "
		    "tensorfs mount point");
	if (f->stage == 3 && m->odev == TFS_DEVICE_NVME &&
	    !c->offload_optimizer_nvme_path[0])
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_optimizer.nvme_path",
		    "offload_optimizer.device = nvme without nvme_path: "
		    "DeepSpeed joins None into a path (stage3.py "
		    "_configure_tensor_swapping) and stops with a "
		    "TypeError; set nvme_path to the tensorfs mount "
		    "point");
}

/* The parameter swap buffers against the largest partition and, with
 * fast_init, the largest sub-group. */
static void check_param_buffers(const struct tfs_config *c,
				const struct tfs_plan_facts *f,
				const struct mode *m, struct tfs_plan *p)
{
	char a[48], b[48];

	if (partition_too_big(m, p))
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_param.buffer_size",
		    "offload_param.buffer_size = %s elements is not "
		    "larger than the largest parameter partition (%s "
		    "elements: the largest parameter over %llu rank%s); "
		    "DeepSpeed stops at start-up with 'More elements %llu "
		    "than buffer size %llu' (partitioned_param_swapper.py "
		    "get_buffer requires numel < buffer_size); raise "
		    "buffer_size above it",
		    num(m->B, a, sizeof(a)),
		    num(p->largest_partition, b, sizeof(b)),
		    (unsigned long long)p->world, p->world == 1 ? "" : "s",
		    (unsigned long long)p->largest_partition,
		    (unsigned long long)m->B);
	else if (m->pdev == TFS_DEVICE_NVME && !p->largest_partition)
		tfs_plan_add(p, TFS_PLAN_FITS, "offload_param.buffer_size",
			     "the largest parameter is unknown, so buffer_size "
			     "(%s) is not checked against it; DeepSpeed needs "
			     "every parameter partition smaller than "
			     "buffer_size; give --model or --largest-param",
			     num(m->B, a, sizeof(a)));
	if (m->pdev == TFS_DEVICE_NVME && p->exact &&
	    c->offload_param_buffer_count < p->param_buffers)
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_param.buffer_count",
		    "offload_param.buffer_count = %llu is below the %llu "
		    "parameter swap buffers DeepSpeed holds at once: %llu "
		    "parameters of the model's last layers are used again "
		    "in the backward pass within stage3_max_reuse_distance "
		    "(%s elements), so they stay gathered, each in its "
		    "buffer, while the next ones are read; from the second "
		    "step on DeepSpeed stops with 'Not enough buffers 0 for "
		    "swapping 1' (partitioned_param_swapper.py swap_in); "
		    "raise buffer_count to %llu, or lower "
		    "stage3_max_reuse_distance",
		    (unsigned long long)c->offload_param_buffer_count,
		    (unsigned long long)p->param_buffers,
		    (unsigned long long)p->kept,
		    num(c->zero_optimization_stage3_max_reuse_distance, a,
			sizeof(a)),
		    (unsigned long long)p->param_buffers);
	else if (m->pdev == TFS_DEVICE_NVME && !p->exact)
		tfs_plan_add(
		    p, TFS_PLAN_WARN, "offload_param.buffer_count",
		    "offload_param.buffer_count = %llu is not checked: "
		    "DeepSpeed keeps the parameters of the last layers "
		    "within stage3_max_reuse_distance (%s elements) "
		    "gathered, each in its swap buffer, and stops with "
		    "'Not enough buffers 0 for swapping 1' when they "
		    "outnumber buffer_count; how many they are depends on "
		    "the model's layers: give --model (a config.json or "
		    "the weights) to count them",
		    (unsigned long long)c->offload_param_buffer_count,
		    num(c->zero_optimization_stage3_max_reuse_distance, a,
			sizeof(a)));
	if (fast_init_fails(c, m, p, f->stage))
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "offload_optimizer.fast_init",
		    "fast_init reads the fp16 parameters of each NVMe "
		    "sub-group through one parameter swap buffer, but "
		    "a buffer holds %s elements and the largest "
		    "sub-group %s; DeepSpeed stops with 'numel of fp16 "
		    "buffers [...] is too small for initializing fp32 "
		    "params %llu' (optimizer_utils.py "
		    "_initialize_from_swapped_fp16_params); set "
		    "fast_init = false, or buffer_size >= sub_group_size",
		    num(aligned(m->B, p->elem, m->intra), a, sizeof(a)),
		    num(p->largest_subgroup, b, sizeof(b)),
		    (unsigned long long)aligned(p->largest_subgroup, 4,
						m->intra));
}

/* Enough optimizer swap buffers for an Adam step, pipelined or not. */
static void check_optimizer_buffers(const struct tfs_config *c,
				    const struct tfs_plan_facts *f,
				    const struct mode *m, struct tfs_plan *p)
{
	uint64_t need = opt_buffers_needed(c);

	if (f->stage == 3 && m->odev == TFS_DEVICE_NVME &&
	    c->offload_optimizer_buffer_count < need) {
		if (need == ADAM_STATES)
			tfs_plan_add(
			    p, TFS_PLAN_FAIL, "offload_optimizer.buffer_count",
			    "offload_optimizer.buffer_count = %llu is "
			    "below the 4 buffers an Adam sub-group step "
			    "holds (fp32 parameter, exp_avg, exp_avg_sq, "
			    "gradient); DeepSpeed fails 'assert "
			    "pinned_buffers is not None' in "
			    "partitioned_optimizer_swapper.py "
			    "swap_in_optimizer_state at the second step; "
			    "set buffer_count = 4",
			    (unsigned long long)
				c->offload_optimizer_buffer_count);
		else
			tfs_plan_add(
			    p, TFS_PLAN_FAIL, "offload_optimizer.buffer_count",
			    "offload_optimizer.buffer_count = %llu is "
			    "below the %llu buffers a pipelined Adam "
			    "step holds (4 for the sub-group stepping, "
			    "4 for the one read ahead with "
			    "pipeline_read, 4 for the one written "
			    "behind with pipeline_write); DeepSpeed "
			    "stops with 'PipelinedOptimizerSwapper ran "
			    "out of swap buffers, try increasing "
			    "'buffer_count''; set buffer_count = %llu",
			    (unsigned long long)
				c->offload_optimizer_buffer_count,
			    (unsigned long long)need, (unsigned long long)need);
	}
}

/* The swap files against the space under nvme_path. */
static void check_nvme(const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	char a[48], b[48];
	uint64_t nvme;

	nvme = add(p->nvme_params, p->nvme_optimizer);
	if (f->nvme && nvme > f->nvme)
		tfs_plan_add(
		    p, TFS_PLAN_FAIL, "",
		    "DeepSpeed's swap files need %s "
		    "per node but nvme_path has %s; the first swap-out "
		    "that does not fit fails; use a larger device or "
		    "more nodes",
		    sz(nvme, a, sizeof(a)), sz(f->nvme, b, sizeof(b)));
	else if (f->nvme && nvme / HEADROOM_PCT > f->nvme / 100)
		tfs_plan_add(
		    p, TFS_PLAN_WARN, "",
		    "DeepSpeed's swap files need %s "
		    "per node, more than %d%% of the %s under nvme_path; "
		    "checkpoints and the file system's own metadata "
		    "need room too",
		    sz(nvme, a, sizeof(a)), HEADROOM_PCT,
		    sz(f->nvme, b, sizeof(b)));
}

/* Notes: GPU memory with use_gds, a ratio below 1, nothing offloaded. */
static void check_notes(const struct tfs_config *c, const struct mode *m,
			struct tfs_plan *p)
{
	char d[48];

	if (m->pdev == TFS_DEVICE_NVME && c->aio_use_gds)
		tfs_plan_add(
		    p, TFS_PLAN_FITS, "aio.use_gds",
		    "use_gds puts the parameter swap pool in GPU memory "
		    "(%s per GPU), not in host memory",
		    sz(mul(mul(c->offload_param_buffer_count,
			       aligned(m->B, p->elem, m->intra)),
			   p->elem),
		       d, sizeof(d)));
	if (m->odev != TFS_DEVICE_NONE && c->offload_optimizer_ratio < 1.0)
		tfs_plan_add(
		    p, TFS_PLAN_FITS, "offload_optimizer.ratio",
		    "ratio = %g steps part of the sub-groups on the GPU; "
		    "the host memory above counts all of them, an upper "
		    "bound",
		    c->offload_optimizer_ratio);
	if (c->offload_param_device == TFS_DEVICE_NONE &&
	    c->offload_optimizer_device == TFS_DEVICE_NONE)
		tfs_plan_add(
		    p, TFS_PLAN_FITS, "",
		    "offload_param.device and "
		    "offload_optimizer.device are none (DeepSpeed's "
		    "default), so DeepSpeed offloads nothing; set them "
		    "to nvme, or pass the run's ds_config.json with "
		    "--deepspeed");
}

static void check(const struct tfs_config *c, const struct tfs_plan_facts *f,
		  struct tfs_plan *p)
{
	struct mode m;

	mode_of(c, f, &m);
	check_keys(c, f, p);
	check_devices(c, f, &m, p);
	check_param_buffers(c, f, &m, p);
	check_optimizer_buffers(c, f, &m, p);
	check_memory(f, p);
	check_nvme(f, p);
	check_notes(c, &m, p);
}

/* ===== recommendations ===== */

struct rec_state {
	struct tfs_config r;
	char reason[TFS_PLAN_MAX_RECS][320];
	const char *key[TFS_PLAN_MAX_RECS];
	size_t n;
};

/* Record why key changed (the last reason wins). */
static void because(struct rec_state *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void because(struct rec_state *s, const char *key, const char *fmt, ...)
{
	size_t i;
	va_list ap;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->key[i], key))
			break;
	if (i == s->n) {
		if (s->n == TFS_PLAN_MAX_RECS)
			return;
		s->key[s->n++] = key;
	}
	va_start(ap, fmt);
	vsnprintf(s->reason[i], sizeof(s->reason[i]), fmt, ap);
	va_end(ap);
}

/* Evaluate a candidate: its footprint and problems into t. */
static enum tfs_plan_severity assess(const struct tfs_config *c,
				     const struct tfs_plan_facts *f,
				     struct tfs_plan *t)
{
	tfs_plan_init(t);
	if (footprint(c, f, t))
		return TFS_PLAN_FAIL;
	check(c, f, t);
	return t->severity;
}

static uint64_t total(const struct tfs_plan *t)
{
	return add(t->node_pinned, t->node_pageable);
}

static int fits(const struct tfs_plan_facts *f, const struct tfs_plan *t)
{
	return !f->ram || total(t) / HEADROOM_PCT <= f->ram / 100;
}

/* The smallest "k x 10^e" (k in 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8) above n. */
static uint64_t round_above(uint64_t n)
{
	static const unsigned steps[] = {
		10, 12, 15, 20, 25, 30, 40, 50, 60, 80
	};
	uint64_t scale = 1;

	while (scale <= n / 100)
		scale *= 10;
	for (;;) {
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
			if (mul(steps[i], scale) > n)
				return mul(steps[i], scale);
		scale *= 10;
	}
}

static void fix_failures(const struct tfs_plan_facts *f, struct rec_state *s,
			 struct tfs_plan *t)
{
	struct tfs_config *r = &s->r;
	char a[48], b[48];
	uint64_t need;
	struct mode m;

	footprint(r, f, t);
	mode_of(r, f, &m);
	if (r->aio_block_size % 4096) {
		r->aio_block_size = 1u << 20;
		because(
		    s, "aio.block_size",
		    "a multiple of 4 KiB, as the "
		    "tensorfs mount requires; 1 MiB is DeepSpeed's default");
	}
	if (tfs_config_validate(r, NULL, 0)) {
		uint64_t bs = 4096, pool = tfs_config_pool_bytes(r);

		while (bs * 2 <= pool / 2 && bs < (1u << 20))
			bs *= 2;
		r->aio_block_size = bs;
		because(s, "aio.block_size",
			"the write-back pool (%s) must "
			"hold two blocks",
			sz(pool, a, sizeof(a)));
	}
	if ((r->flags & TFS_CFG_F_THREAD_COUNT) && ds_version(f) >= 1604) {
		r->flags &= ~TFS_CFG_F_THREAD_COUNT;
		because(s, "aio.intra_op_parallelism",
			"the name DeepSpeed "
			"reads; it ignores thread_count");
	}
	if (m.pdev == TFS_DEVICE_NVME && !r->offload_param_nvme_path[0]) {
		snprintf(r->offload_param_nvme_path,
			 sizeof(r->offload_param_nvme_path), "%s",
			 r->offload_optimizer_nvme_path[0]
			     ? r->offload_optimizer_nvme_path
			     : "/local_nvme");
		because(s, "offload_param.nvme_path",
			"required with device = "
			"nvme: the tensorfs mount point");
	}
	if (f->stage == 3 && m.odev == TFS_DEVICE_NVME &&
	    !r->offload_optimizer_nvme_path[0]) {
		snprintf(r->offload_optimizer_nvme_path,
			 sizeof(r->offload_optimizer_nvme_path), "%s",
			 r->offload_param_nvme_path[0]
			     ? r->offload_param_nvme_path
			     : "/local_nvme");
		because(s, "offload_optimizer.nvme_path",
			"required with "
			"device = nvme: the tensorfs mount point");
	}
	if (partition_too_big(&m, t)) {
		r->offload_param_buffer_size =
		    round_above(t->largest_partition);
		because(s, "offload_param.buffer_size",
			"above the largest "
			"parameter partition (%s elements), which DeepSpeed "
			"requires of every swapped partition",
			num(t->largest_partition, a, sizeof(a)));
		footprint(r, f, t);
		mode_of(r, f, &m);
	}
	if (m.pdev == TFS_DEVICE_NVME && t->exact &&
	    r->offload_param_buffer_count < t->param_buffers) {
		r->offload_param_buffer_count = t->param_buffers;
		because(s, "offload_param.buffer_count",
			"DeepSpeed holds %llu parameter swap buffers at once: "
			"%llu parameters of the last layers stay gathered "
			"for reuse within stage3_max_reuse_distance",
			(unsigned long long)t->param_buffers,
			(unsigned long long)t->kept);
		footprint(r, f, t);
		mode_of(r, f, &m);
	}
	if (fast_init_fails(r, &m, t, f->stage)) {
		r->offload_optimizer_fast_init = 0;
		because(s, "offload_optimizer.fast_init",
			"with fast_init every "
			"parameter buffer (%s elements) must hold a sub-group "
			"(%s); without it the start is slower and needs no "
			"extra memory",
			num(m.B, a, sizeof(a)),
			num(t->largest_subgroup, b, sizeof(b)));
	}
	if (f->memlock != UINT64_MAX && r->offload_param_pin_memory &&
	    t->tfs_pinned > f->memlock) {
		r->offload_param_pin_memory = 0;
		because(s, "offload_param.pin_memory",
			"RLIMIT_MEMLOCK (%s) is "
			"below what the tensorfs mount would lock (%s), and "
			"the mount refuses that",
			sz(f->memlock, a, sizeof(a)),
			sz(t->tfs_pinned, b, sizeof(b)));
	}
	need = opt_buffers_needed(r);
	if (f->stage == 3 && m.odev == TFS_DEVICE_NVME &&
	    r->offload_optimizer_buffer_count < need) {
		r->offload_optimizer_buffer_count = need;
		because(s, "offload_optimizer.buffer_count",
			"an Adam sub-group "
			"step holds 4 buffers%s",
			need > ADAM_STATES ? ", and 4 more for each of "
					     "pipeline_read and pipeline_write"
					   : "");
	}
}

/* With stage 3, the optimizer state from host memory to NVMe, if that
 * lowers the node's total. */
static void optimizer_to_nvme(const struct tfs_plan_facts *f,
			      struct rec_state *s, struct tfs_plan *t)
{
	struct tfs_config *r = &s->r, keep;
	uint64_t before;

	if (f->stage == 3 && r->offload_optimizer_device == TFS_DEVICE_CPU) {
		keep = *r;
		r->offload_optimizer_device = TFS_DEVICE_NVME;
		before = total(t);
		assess(r, f, t);
		if (total(t) < before) {
			if (!r->offload_optimizer_nvme_path[0]) {
				snprintf(r->offload_optimizer_nvme_path,
					 sizeof(r->offload_optimizer_nvme_path),
					 "%s",
					 r->offload_param_nvme_path[0]
					     ? r->offload_param_nvme_path
					     : "/local_nvme");
				because(s, "offload_optimizer.nvme_path",
					"required with device = nvme: the "
					"tensorfs mount point");
			}
			because(s, "offload_optimizer.device",
				"in host memory "
				"the optimizer state takes 16 B per parameter "
				"per rank; on NVMe only its swap pool stays");
		} else {
			*r = keep;
		}
	}
}

/* With stage 3, the parameters from host memory to NVMe, if the node
 * does not fit yet and that lowers its total. */
static void params_to_nvme(const struct tfs_plan_facts *f, struct rec_state *s,
			   struct tfs_plan *t)
{
	struct tfs_config *r = &s->r, keep;
	uint64_t before;

	if (f->stage == 3 && r->offload_param_device == TFS_DEVICE_CPU &&
	    !fits(f, t)) {
		keep = *r;
		r->offload_param_device = TFS_DEVICE_NVME;
		before = total(t);
		assess(r, f, t);
		if (total(t) < before) {
			if (!r->offload_param_nvme_path[0]) {
				snprintf(r->offload_param_nvme_path,
					 sizeof(r->offload_param_nvme_path),
					 "%s",
					 r->offload_optimizer_nvme_path[0]
					     ? r->offload_optimizer_nvme_path
					     : "/local_nvme");
				because(
				    s, "offload_param.nvme_path",
				    "required "
				    "with device = nvme: the tensorfs mount "
				    "point");
			}
			because(s, "offload_param.device",
				"keeps max_in_cpu "
				"parameter elements in RAM instead of all");
		} else {
			*r = keep;
		}
	}
}

/* Smaller sub-groups until the node fits: pass 0 down to 1e8, pass 1
 * below. */
static void shrink_sub_groups(const struct tfs_plan_facts *f,
			      struct rec_state *s, struct tfs_plan *t, int pass)
{
	static const uint64_t sub_groups[] = { 500000000, 200000000, 100000000,
					       50000000,  20000000,  10000000 };
	struct tfs_config *r = &s->r;
	char a[48], b[48];
	uint64_t before;

	for (size_t i = 0;
	     i < sizeof(sub_groups) / sizeof(sub_groups[0]) && !fits(f, t);
	     i++) {
		uint64_t old = r->zero_optimization_sub_group_size;

		if ((pass == 0) != (sub_groups[i] >= 100000000) ||
		    sub_groups[i] >= old ||
		    r->offload_optimizer_device == TFS_DEVICE_NONE)
			continue;
		before = total(t);
		r->zero_optimization_sub_group_size = sub_groups[i];
		assess(r, f, t);
		if (total(t) >= before) {
			r->zero_optimization_sub_group_size = old;
			assess(r, f, t);
			continue;
		}
		because(s, "zero_optimization.sub_group_size",
			"the "
			"optimizer swap pool, the fp32 gradient buffer "
			"and the fp16 reuse buffer scale with it; the "
			"node then needs %s of %s RAM",
			sz(total(t), a, sizeof(a)), sz(f->ram, b, sizeof(b)));
	}
}

/* A smaller max_in_cpu until the node fits. */
static void shrink_max_in_cpu(const struct tfs_plan_facts *f,
			      struct rec_state *s, struct tfs_plan *t)
{
	static const uint64_t in_cpu[] = { 500000000, 200000000, 100000000, 0 };
	struct tfs_config *r = &s->r;
	char a[48], b[48];
	uint64_t before;

	for (size_t i = 0;
	     !fits(f, t) && i < sizeof(in_cpu) / sizeof(in_cpu[0]); i++) {
		uint64_t old = r->offload_param_max_in_cpu;

		if (r->offload_param_device != TFS_DEVICE_NVME ||
		    in_cpu[i] >= tfs_config_elems(r, old))
			continue;
		before = total(t);
		r->offload_param_max_in_cpu = in_cpu[i];
		assess(r, f, t);
		if (total(t) >= before) {
			r->offload_param_max_in_cpu = old;
			assess(r, f, t);
			continue;
		}
		because(s, "offload_param.max_in_cpu",
			"fewer parameters "
			"in pinned RAM (and a smaller tensorfs cache); "
			"the node then needs %s of %s RAM",
			sz(total(t), a, sizeof(a)), sz(f->ram, b, sizeof(b)));
	}
}

/* Lower memory until the node fits, in the order the file comment says. */
static void fit_memory(const struct tfs_plan_facts *f, struct rec_state *s,
		       struct tfs_plan *t)
{
	assess(&s->r, f, t);
	if (fits(f, t))
		return;
	optimizer_to_nvme(f, s, t);
	params_to_nvme(f, s, t);
	for (int pass = 0; pass < 2 && !fits(f, t); pass++) {
		/* pass 0: sub-groups down to 1e8, then max_in_cpu;
		 * pass 1: sub-groups below 1e8 */
		shrink_sub_groups(f, s, t, pass);
		if (pass == 0)
			shrink_max_in_cpu(f, s, t);
	}
}

/*
 * Several drives.  DeepSpeed keeps queue_depth requests of block_size in
 * flight per thread (intra_op_parallelism); the mount stripes them over
 * the drives, so each drive sees queue_depth x threads / drives.  An NVMe
 * drive needs about PER_DRIVE_QD 1 MiB requests in flight to stream, and
 * tensorfs's own write-back keeps queue_depth on each (file.c), from a
 * pool that must hold drives x queue_depth x threads blocks to do so.
 */
#define PER_DRIVE_QD 8u

static uint64_t drives_of(const struct tfs_plan_facts *f)
{
	return f->drives ? f->drives : 1;
}

/* The requests in flight that keep every drive at PER_DRIVE_QD. */
static uint64_t qd_for_drives(const struct tfs_config *c,
			      const struct tfs_plan_facts *f)
{
	uint64_t th =
	    c->aio_intra_op_parallelism ? c->aio_intra_op_parallelism : 1;
	uint64_t q = (PER_DRIVE_QD * drives_of(f) + th - 1) / th;

	return q > 256 ? 256 : q;
}

static void fit_drives(const struct tfs_plan_facts *f, struct rec_state *s)
{
	struct tfs_config *r = &s->r;
	uint64_t want = qd_for_drives(r, f);

	if (drives_of(f) < 2 || r->aio_queue_depth >= want)
		return;
	r->aio_queue_depth = want;
	because(s, "aio.queue_depth",
		"%llu requests in flight per thread (x %llu thread%s) keep "
		"each of the %llu drives at %u, as an NVMe drive needs: "
		"DeepSpeed's requests spread over the drives by stripes, and "
		"tensorfs writes back queue_depth on each",
		(unsigned long long)want,
		(unsigned long long)r->aio_intra_op_parallelism,
		r->aio_intra_op_parallelism == 1 ? "" : "s",
		(unsigned long long)drives_of(f), PER_DRIVE_QD);
}

/* What the drives need of the configuration as given. */
static void check_drives(const struct tfs_config *c,
			 const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	uint64_t n = drives_of(f), th = c->aio_intra_op_parallelism;
	uint64_t flight = n * c->aio_queue_depth * (th ? th : 1);
	uint64_t pool = tfs_config_pool_bytes(c);
	char a[48], b[48];

	if (n < 2)
		return;
	if (c->aio_queue_depth < qd_for_drives(c, f))
		tfs_plan_add(
		    p, TFS_PLAN_WARN, "aio.queue_depth",
		    "queue_depth %llu x %llu thread(s) over %llu "
		    "drives leaves each with %.1f requests in flight; "
		    "NVMe streams at about %u: set queue_depth = %llu",
		    (unsigned long long)c->aio_queue_depth,
		    (unsigned long long)(th ? th : 1), (unsigned long long)n,
		    (double)c->aio_queue_depth * (double)(th ? th : 1) /
			(double)n,
		    PER_DRIVE_QD, (unsigned long long)qd_for_drives(c, f));
	if (pool / c->aio_block_size < flight)
		tfs_plan_add(p, TFS_PLAN_WARN, "offload_param.buffer_count",
			     "the write-back pool (%s) holds fewer blocks than "
			     "%llu drives x queue_depth %llu x %llu thread(s) "
			     "of %s: write-back cannot keep every drive busy; "
			     "raise buffer_count or buffer_size",
			     sz(pool, a, sizeof(a)), (unsigned long long)n,
			     (unsigned long long)c->aio_queue_depth,
			     (unsigned long long)(th ? th : 1),
			     sz(c->aio_block_size, b, sizeof(b)));
}

/* Add key's row to p->recs: the recommended value, and why. */
static void row(struct tfs_plan *p, const struct tfs_config *c,
		const struct rec_state *s, const char *key, const char *keep)
{
	char sec[64], *dot;
	const struct tfs_cfg_key *k;
	struct tfs_plan_rec *rc;
	size_t i;

	snprintf(sec, sizeof(sec), "%s", key);
	dot = strchr(sec, '.');
	if (!dot || p->nrecs == TFS_PLAN_MAX_RECS)
		return;
	*dot = '\0';
	k = tfs_config_key(sec, dot + 1);
	if (!k)
		return;
	rc = &p->recs[p->nrecs];
	tfs_config_format(&s->r, k, rc->value, sizeof(rc->value));
	tfs_config_format(c, k, rc->current, sizeof(rc->current));
	rc->changed = strcmp(rc->value, rc->current) != 0;
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->key[i], key))
			break;
	if (i < s->n)
		snprintf(rc->reason, sizeof(rc->reason), "%s", s->reason[i]);
	else if (keep)
		snprintf(rc->reason, sizeof(rc->reason), "%s", keep);
	else
		return; /* nothing to say: leave it out */
	snprintf(rc->key, sizeof(rc->key), "%s", key);
	p->nrecs++;
}

static void recommend(const struct tfs_config *c,
		      const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	struct rec_state *s = calloc(1, sizeof(*s));
	struct tfs_plan *t = malloc(sizeof(*t));
	char keep[320], a[48], b[48], d[48];
	struct mode m;

	if (!s || !t)
		goto out;
	s->r = *c;
	tfs_plan_init(t);
	fix_failures(f, s, t);
	fit_memory(f, s, t);
	fix_failures(f, s, t); /* what a move to nvme may have brought */
	fit_drives(f, s);
	p->rec_severity = assess(&s->r, f, t);
	p->rec_node_pinned = t->node_pinned;
	p->rec_node_pageable = t->node_pageable;
	p->recommended = s->r;

	/* the rows: each key that matters here, changed or not */
	mode_of(&s->r, f, &m);
	if (m.pdev != TFS_DEVICE_NONE) {
		row(p, c, s, "offload_param.device", NULL);
		row(p, c, s, "offload_param.nvme_path", NULL);
	}
	if (m.pdev == TFS_DEVICE_NVME) {
		if (t->largest_partition)
			snprintf(keep, sizeof(keep),
				 "larger than the largest "
				 "parameter partition (%s elements), as "
				 "DeepSpeed requires",
				 num(t->largest_partition, a, sizeof(a)));
		else
			snprintf(
			    keep, sizeof(keep),
			    "must be larger than the "
			    "largest parameter partition, which is unknown "
			    "(give --model or --largest-param)");
		row(p, c, s, "offload_param.buffer_size", keep);
		if (t->exact && !t->swapped)
			snprintf(keep, sizeof(keep),
				 "%s pinned per rank, and none in use: every "
				 "parameter stays in RAM (max_in_cpu) or is "
				 "too small to swap",
				 sz(t->ds[0].pinned, a, sizeof(a)));
		else if (t->exact)
			snprintf(keep, sizeof(keep),
				 "%s pinned per rank; DeepSpeed holds %llu at "
				 "once (%llu kept for the backward pass)",
				 sz(t->ds[0].pinned, a, sizeof(a)),
				 (unsigned long long)t->param_buffers,
				 (unsigned long long)t->kept);
		else
			snprintf(keep, sizeof(keep),
				 "%s pinned per rank; not checked: how many "
				 "DeepSpeed holds at once depends on the "
				 "model's layers (give --model)",
				 sz(t->ds[0].pinned, a, sizeof(a)));
		row(p, c, s, "offload_param.buffer_count", keep);
		if (t->in_cpu >= t->per_rank)
			snprintf(keep, sizeof(keep),
				 "all %s parameter elements "
				 "per rank stay in pinned RAM (%s); NVMe holds "
				 "their files only",
				 num(t->per_rank, a, sizeof(a)),
				 sz(mul(t->in_cpu, t->elem), d, sizeof(d)));
		else
			snprintf(keep, sizeof(keep),
				 "keeps %s of the %s "
				 "parameter elements per rank in pinned RAM "
				 "(%s); the rest are read from NVMe",
				 num(t->in_cpu, a, sizeof(a)),
				 num(t->per_rank, b, sizeof(b)),
				 sz(mul(t->in_cpu, t->elem), d, sizeof(d)));
		row(p, c, s, "offload_param.max_in_cpu", keep);
	}
	if (m.odev != TFS_DEVICE_NONE) {
		row(p, c, s, "offload_optimizer.device", NULL);
		row(p, c, s, "offload_optimizer.nvme_path", NULL);
		snprintf(keep, sizeof(keep),
			 "largest sub-group %s%s elements "
			 "per rank; the optimizer's host buffers scale with it",
			 t->largest_subgroup < t->per_rank && !t->exact
			     ? "at most "
			     : "",
			 num(t->largest_subgroup, a, sizeof(a)));
		row(p, c, s, "zero_optimization.sub_group_size", keep);
	}
	if (m.odev == TFS_DEVICE_NVME && f->stage == 3) {
		snprintf(keep, sizeof(keep),
			 "an Adam sub-group step holds "
			 "%llu buffers",
			 (unsigned long long)opt_buffers_needed(&s->r));
		row(p, c, s, "offload_optimizer.buffer_count", keep);
		row(p, c, s, "offload_optimizer.fast_init", NULL);
	}
	row(p, c, s, "offload_param.pin_memory", NULL);
	row(p, c, s, "aio.block_size", NULL);
	if (drives_of(f) > 1) {
		snprintf(keep, sizeof(keep),
			 "%llu requests in flight per thread keep each of "
			 "the %llu drives at %u or more",
			 (unsigned long long)s->r.aio_queue_depth,
			 (unsigned long long)drives_of(f), PER_DRIVE_QD);
		row(p, c, s, "aio.queue_depth", keep);
	}
	row(p, c, s, "aio.intra_op_parallelism", NULL);
out:
	free(s);
	free(t);
}

int tfs_plan_compute(const struct tfs_config *c, const struct tfs_plan_facts *f,
		     struct tfs_plan *p)
{
	int rc = footprint(c, f, p);

	if (rc)
		return rc;
	check(c, f, p);
	check_drives(c, f, p);
	recommend(c, f, p);
	return 0;
}
