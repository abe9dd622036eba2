/*
 * plan.h: what a DeepSpeed offload configuration costs, before it runs.
 *
 * From a struct tfs_config (the [offload_param], [offload_optimizer],
 * [zero_optimization] and [aio] keys, DeepSpeed's names and meanings) and
 * the facts of a model and a machine, tfs_plan_compute() works out the
 * host memory DeepSpeed takes per rank and per node, pinned and pageable,
 * item by item; the memory of the tensorfs mount; the NVMe space; the
 * errors DeepSpeed would stop with later and the warnings worth reading;
 * and recommended values that fit, each with its reason.  plan.c says
 * which DeepSpeed function each formula comes from.
 *
 * Nothing here does I/O: the caller reads the machine (MemTotal,
 * RLIMIT_MEMLOCK) and the inputs, and prints the result.
 */
#ifndef TFS_PLAN_H
#define TFS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/*
 * A parameter tensor of the model.  A list of them is given in the order
 * the model registers its parameters (named_parameters()), which is the
 * order DeepSpeed forms its optimizer sub-groups in.
 */
struct tfs_plan_tensor {
	uint64_t numel; /* elements of the whole parameter, > 0 */
	uint32_t step;	/* its module's place in the forward pass, from 0;
			   the tensors of one module share it */
	uint32_t group; /* its optimizer param group, from 0 */
};

/* The model and the machine. */
struct tfs_plan_facts {
	uint64_t params;	/* N: the model's parameters, > 0 */
	uint64_t largest_param; /* elements of its largest parameter, 0 unknown */
	unsigned int ranks;	/* ranks (GPUs) per node, > 0 */
	unsigned int nodes;	/* nodes, > 0; world size = ranks x nodes */
	unsigned int drives;	/* NVMe drives in the mount's set; 0: 1 */
	unsigned int stage;	/* ZeRO stage 0..3 */
	uint64_t ram;		/* host memory per node, bytes; 0 unknown */
	uint64_t nvme;		/* space under nvme_path per node; 0 unknown */
	uint64_t memlock;   /* RLIMIT_MEMLOCK, bytes; UINT64_MAX unlimited */
	int memlock_exempt; /* DeepSpeed runs with CAP_IPC_LOCK (as root):
			       RLIMIT_MEMLOCK does not bind its pinning */
	/* the model's parameter tensors, or NULL: then params and
	 * largest_param are all that is known, and G is a bound; with
	 * them params and largest_param are ignored */
	const struct tfs_plan_tensor *tensors;
	size_t ntensors;
	/* DeepSpeed's version, 10000 x major + 100 x minor + patch
	 * (1405 is 0.14.5); 0: TFS_PLAN_DS_NEWEST */
	unsigned int ds_version;
};

/* The newest DeepSpeed whose code the plan follows, and the oldest. */
#define TFS_PLAN_DS_NEWEST 1605
#define TFS_PLAN_DS_OLDEST 1400

/*
 * Parse a DeepSpeed version ("0.14.5", "0.16", "v0.16.4", "0.16.4+cu12")
 * into *v (10000 x major + 100 x minor + patch).  Returns 0, -EINVAL if
 * it is not one, or -ERANGE if it is older than TFS_PLAN_DS_OLDEST or
 * has a part above 99.
 */
int tfs_plan_ds_version(const char *s, unsigned int *v);

/* The shape of a Hugging Face decoder-only transformer (config.json). */
struct tfs_plan_shape {
	uint64_t hidden;       /* hidden_size */
	uint64_t layers;       /* num_hidden_layers */
	uint64_t intermediate; /* intermediate_size */
	uint64_t vocab;	       /* vocab_size */
	uint64_t heads;	       /* num_attention_heads */
	uint64_t kv_heads;     /* num_key_value_heads; 0: heads */
	uint64_t head_dim;     /* head_dim; 0: hidden / heads */
	int tied;	       /* tie_word_embeddings */
};

/*
 * Parameters of a Llama-style model (gated MLP, RMSNorm, no biases):
 *
 *   d = head_dim, q = heads x d, kv = kv_heads x d
 *   layer = H x q + 2 x H x kv + q x H     (q, k, v, o projections)
 *         + 3 x H x I                      (gate, up, down)
 *         + 2 x H                          (two RMSNorm weights)
 *   N = V x H  +  (tied ? 0 : V x H)  +  L x layer  +  H (final norm)
 *
 * and the largest single parameter, max(V x H, H x I, q x H).  Exact for
 * Llama 2 and 3, Mistral, Qwen2 without its q/k/v biases.  Returns 0, or
 * -EINVAL if a size is missing or heads do not divide hidden, -ERANGE on
 * overflow.
 */
int tfs_plan_count_params(const struct tfs_plan_shape *s, uint64_t *params,
			  uint64_t *largest);

/*
 * The parameter tensors of the same model, in the order
 * LlamaForCausalLM registers them (embed_tokens; per layer q, k, v, o,
 * gate, up, down, then the two norms; the final norm; lm_head unless
 * tied), each with its module's place in the forward pass (the input
 * norm first in a layer, then q, k, v, o, the second norm, gate, up,
 * down), all in param group 0, or with trainer the norms in group 1, as
 * Hugging Face's Trainer groups them.  Returns 0 with *out (free() it) and *n,
 * or the errors of tfs_plan_count_params(), or -ENOMEM.
 */
int tfs_plan_llama_tensors(const struct tfs_plan_shape *s, int trainer,
			   struct tfs_plan_tensor **out, size_t *n);

/* One item of host memory, per rank (DeepSpeed) or per node (tensorfs). */
struct tfs_plan_item {
	const char *name;   /* "parameter swap pool", static */
	const char *source; /* the DeepSpeed or tensorfs code, static */
	char formula[160];  /* "5 x align(1e8) x 2 B" */
	uint64_t pinned, pageable;
};

enum tfs_plan_severity {
	TFS_PLAN_FITS,
	TFS_PLAN_WARN,
	TFS_PLAN_FAIL
};

struct tfs_plan_problem {
	enum tfs_plan_severity severity; /* FITS: a note */
	char key[48];	/* "offload_param.buffer_size", or "" */
	char text[640]; /* what, why, what to do; lowercase */
};

struct tfs_plan_rec {
	char key[48];	/* "zero_optimization.sub_group_size" */
	char value[40]; /* as the INI writes it */
	char current[40];
	int changed;
	char reason[320];
};

#define TFS_PLAN_MAX_ITEMS    8
#define TFS_PLAN_MAX_PROBLEMS 24
#define TFS_PLAN_MAX_RECS     12

struct tfs_plan {
	/* derived facts */
	uint64_t world;		    /* ranks x nodes */
	size_t elem;		    /* bytes of the model dtype */
	uint64_t per_rank;	    /* P = ceil(N / world) */
	uint64_t largest_partition; /* ceil(largest / world), 0 unknown */
	uint64_t largest_subgroup;  /* G, elements */
	int exact;		    /* G and the rest from the tensors */
	uint64_t subgroups;	    /* optimizer sub-groups per rank */
	uint64_t fp16_reuse;	    /* elements of the fp16 reuse buffer */
	uint64_t swapped;	    /* parameter tensors on NVMe per rank */
	uint64_t param_buffers;	    /* parameter swap buffers held at once
				       (0: unknown without the tensors) */
	uint64_t kept;		    /* of those, kept for reuse */
	uint64_t in_cpu;	    /* parameter elements held in RAM */
	int subgroups_on_nvme;	    /* some sub-group's params on NVMe */

	/* DeepSpeed, per rank */
	struct tfs_plan_item ds[TFS_PLAN_MAX_ITEMS];
	size_t nds;
	uint64_t rank_pinned, rank_pageable;
	/* tensorfs, per node: cache, pool, overhead, metadata */
	struct tfs_plan_item tfs[4];
	uint64_t files; /* files DeepSpeed creates per node */
	uint64_t tfs_pinned, tfs_pageable;
	/* per node: ranks x DeepSpeed + tensorfs */
	uint64_t node_pinned, node_pageable;

	/* NVMe, per node */
	uint64_t nvme_params, nvme_optimizer;

	struct tfs_plan_problem problems[TFS_PLAN_MAX_PROBLEMS];
	size_t nproblems;
	struct tfs_plan_rec recs[TFS_PLAN_MAX_RECS];
	size_t nrecs;
	struct tfs_config recommended; /* c with the recommended values */
	uint64_t rec_node_pinned, rec_node_pageable; /* with them */
	enum tfs_plan_severity rec_severity;	     /* with them */

	enum tfs_plan_severity severity; /* the worst problem */
};

/* Clear p; then problems found in the inputs may be added before
 * tfs_plan_compute(), which keeps them. */
void tfs_plan_init(struct tfs_plan *p);

/* Add a problem (printf-style text); raises p->severity.  Problems past
 * TFS_PLAN_MAX_PROBLEMS are counted in the severity but not kept. */
void tfs_plan_add(struct tfs_plan *p, enum tfs_plan_severity s, const char *key,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Fill p from the configuration and the facts (c and f are borrowed).
 * Returns 0, or -EINVAL if the facts are unusable (no parameters, no
 * ranks, no nodes, an unknown dtype).  Not thread-safe on the same p.
 */
int tfs_plan_compute(const struct tfs_config *c, const struct tfs_plan_facts *f,
		     struct tfs_plan *p);

/* "fits", "warnings", "will fail" */
const char *tfs_plan_verdict(enum tfs_plan_severity s);

#endif
