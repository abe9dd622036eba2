/*
 * tune.h: tensorfs-plan --measure, the tuner: which aio and buffer
 * values make DeepSpeed's offload fastest on this machine, within the
 * memory it has.
 *
 * From the configuration and the plan's facts, it measures candidates
 * (measure.h) one value at a time: aio.block_size, then queue_depth,
 * then intra_op_parallelism, then offload_param.buffer_count, then
 * pin_memory, each stage starting from the best so far, within a time
 * budget; prices each candidate with the plan (host memory per node,
 * pinned and pageable); and recommends the fastest that fits, with the
 * reason.  Progress goes to a stream as it runs.
 */
#ifndef TFS_TUNE_H
#define TFS_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config.h"
#include "measure.h"
#include "plan.h"

#define TFS_TUNE_MAX 24

struct tfs_tune_cand {
	struct tfs_config c;	  /* the settings it stands for */
	struct tfs_measure_cfg m; /* what was run */
	struct tfs_measure_result r;
	int measured;		   /* r is valid */
	int twice;		   /* r is over two runs */
	int derived;		   /* r is another's: buffer_size only */
	char why[600];		   /* not measured, or failed: why */
	uint64_t pinned, pageable; /* per node, by the plan */
	int fits;		   /* the plan: no failure, within RAM */
};

struct tfs_tune {
	const char *dir;
	char fs[32];	 /* the file system measured: ext4, tensorfs... */
	double budget;	 /* seconds */
	double elapsed;	 /* seconds it took */
	uint64_t memory; /* bytes of buffers the measurement uses, at most */
	uint64_t files;	 /* bytes of files it writes, at most */
	struct tfs_tune_cand cand[TFS_TUNE_MAX];
	size_t n;
	int base; /* the configuration as given */
	int best; /* the recommendation, or -1 */
	char reason[400];
	unsigned int ds_version;
};

/*
 * Measure under dir for about budget seconds, with at most mem_cap
 * bytes of buffers, from configuration c and facts f (borrowed), and
 * fill *t (its dir borrowed).  Progress lines go to progress (may be
 * NULL).  Returns 0 (t->best may be -1 when nothing fits), or -errno
 * when nothing could be measured at all (err says why).
 */
int tfs_tune_run(const char *dir, double budget, uint64_t mem_cap,
		 const struct tfs_config *c, const struct tfs_plan_facts *f,
		 FILE *progress, struct tfs_tune *t, char *err, size_t errlen);

/* The results as text: a table, the recommendation and its reason, the
 * ds_config.json fragment and the tensorfs.ini to paste. */
void tfs_tune_print(const struct tfs_tune *t, FILE *out);

/* The same as a JSON object (new reference). */
json_t *tfs_tune_json(const struct tfs_tune *t);

#endif
