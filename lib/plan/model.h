/*
 * model.h: a model's parameter tensors read from its weights, for the
 * plan's exact sub-groups and parameter buffers.
 *
 * A torch.save state_dict (either format), a .safetensors file, or the
 * index .json of a sharded checkpoint (its "weight_map", whose shards,
 * .safetensors or torch.save, sit beside it) gives the shape of every
 * parameter.  Only floating-point tensors count (an integer buffer such
 * as BatchNorm's num_batches_tracked does not); tensors of a torch.save
 * file that share one storage at one offset (tied weights) count once.
 * A torch.save state_dict keeps the model's order; a .safetensors file
 * and an index keep their names sorted, so their tensors are put in
 * natural name order ("layers.2" before "layers.10"), which is the
 * model's order of its layers but not always of the tensors in a layer.
 * The module of a tensor is its name up to the last '.'; modules take
 * their forward step in the order they first appear.
 *
 * The readers here open files; the parsing is lib/tensor's (fuzzed
 * there) and jansson's.  Not thread-safe on the same struct.
 */
#ifndef TFS_PLAN_MODEL_H
#define TFS_PLAN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct tfs_plan_model {
	struct tfs_plan_tensor *tensors; /* in the order the plan takes */
	size_t ntensors;
	uint64_t params;    /* their elements */
	uint64_t largest;   /* the largest one's */
	size_t skipped;	    /* tensors left out: not float, or shared */
	size_t files;	    /* files read (shards of an index: several) */
	int model_order;    /* the files keep the model's order (torch.save) */
	const char *format; /* "torch.save", "safetensors", "index" */
};

/* Split the tensors into the two param groups of Hugging Face's Trainer
 * (tfs_plan_no_decay()), instead of one. */
#define TFS_PLAN_MODEL_TRAINER_GROUPS 1u

/*
 * Read the weights at path into *m (zeroed first; tfs_plan_model_free()
 * it), flags TFS_PLAN_MODEL_*.  Returns 0; -EMEDIUMTYPE if path is a JSON file without a
 * "weight_map" (a config.json: the caller reads it); -EINVAL (not a
 * weights file we read, a damaged header, no float tensor, an index
 * naming a shard that is missing or lacks a tensor: err says what and
 * where), -ENOMEM, or an open or read -errno (err names the file).
 */
int tfs_plan_model_read(const char *path, unsigned int flags,
			struct tfs_plan_model *m, char *err, size_t errlen);

/*
 * Whether Hugging Face's Trainer puts the parameter called name in its
 * group without weight decay (Trainer.get_decay_parameter_names in
 * transformers 4.46 and later: a name with "bias", "layernorm" or
 * "rmsnorm" in it, a component "norm" or ending in "_norm"; and, for the
 * LayerNorm modules older versions find by type, a component starting
 * "ln_" or "ln" and a digit, as GPT-2's ln_1 and ln_f), case-insensitive.
 */
int tfs_plan_no_decay(const char *name);

void tfs_plan_model_free(struct tfs_plan_model *m);

/*
 * Order "a.2.w" before "a.10.w": strcmp(), but runs of digits compare
 * as numbers.  For qsort() through a wrapper, and the tests.
 */
int tfs_plan_natural_cmp(const char *a, const char *b);

#endif
