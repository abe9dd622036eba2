/*
 * deepspeed.h: a DeepSpeed ds_config.json, read as tensorfs-plan reads it.
 *
 * The keys that matter to the plan (zero_optimization.stage,
 * .offload_param, .offload_optimizer, .sub_group_size, the top-level aio,
 * fp16/bf16.enabled) are set in a struct tfs_config through
 * tfs_config_set(), so that a JSON value is parsed exactly as the same
 * key of an INI file; a value that cannot be used (a negative size, a
 * device DeepSpeed does not know) is refused, naming the key; what
 * DeepSpeed would stop on later or ignore becomes a problem of a struct
 * tfs_plan; an "auto" becomes a note saying who fills it in and with
 * what.
 */
#ifndef TFS_DEEPSPEED_H
#define TFS_DEEPSPEED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "plan.h"

#define TFS_DEEPSPEED_MAX_NOTES 24

/* An "auto" (or otherwise substituted) value and who decides it. */
struct tfs_deepspeed_note {
	char key[64];
	char value[48];
	char how[256];
};

/* Reading a ds_config.json: what the caller gives, what comes out. */
struct tfs_deepspeed {
	/* in, borrowed */
	const char *name;     /* the file, for messages */
	struct tfs_config *c; /* the keys it sets are set here */
	struct tfs_plan *p;   /* its problems are added here */
	uint64_t hidden;      /* hidden_size of the model, 0 unknown */
	int dtype_given;      /* leave offload_param.dtype alone */
	unsigned int version; /* DeepSpeed's, as tfs_plan_facts.ds_version;
				 0: TFS_PLAN_DS_NEWEST */
	/* out */
	unsigned int stage; /* zero_optimization.stage, 0 if absent */
	struct tfs_deepspeed_note notes[TFS_DEEPSPEED_MAX_NOTES];
	size_t nnotes;
};

/*
 * Read the ds_config.json in json (len bytes, no NUL needed; borrowed)
 * into ds: ds->name, ds->c, ds->p (borrowed, not freed), ds->hidden and
 * ds->dtype_given are set by the caller; ds->stage and ds->notes are
 * filled; keys are set in *ds->c and problems added to ds->p.  Returns 0
 * (what DeepSpeed would stop on or ignore is in ds->p, not in the
 * return); -EINVAL if it is not JSON or its top level not an object (err
 * says where, as "name:line:column: ..."), not a DeepSpeed config (an
 * object with keys, none of them DeepSpeed's), has a stage other than 0
 * to 3, or has values that cannot be used: a negative count or size, a
 * device other than "none", "cpu" and "nvme", an array or object where a
 * value belongs, an offload section that is not an object, "auto" in aio
 * (err has one line per value, "name: key.path: value is not ...", every
 * one of them; *ds->c and ds->p then hold a partial reading, not to be
 * planned); or another -errno for a bug (err says what).
 * Notes are appended after ds->nnotes (0 in a zeroed ds); past
 * TFS_DEEPSPEED_MAX_NOTES they are dropped.  Not thread-safe on the same
 * ds, c or p.
 */
int tfs_deepspeed_read(struct tfs_deepspeed *ds, const char *json, size_t len,
		       char *err, size_t errlen);

/* The same from a stream (open for reading; the caller closes it). */
int tfs_deepspeed_read_file(struct tfs_deepspeed *ds, FILE *f, char *err,
			    size_t errlen);

#endif
