/*
 * measure.h: DeepSpeed's NVMe swap pattern, timed on a directory, for
 * tensorfs-plan --measure.
 *
 * One measurement runs what a ZeRO-3 step does to nvme_path with one set
 * of aio and buffer values: the parameter tensors read back buffer_count
 * at a time (forward and backward pass) and written once (after the
 * step), and the optimizer's read-modify-write of each sub-group (its
 * fp32 weights, gradients, exp_avg and exp_avg_sq read into four buffers,
 * then written back), through kernel AIO (libaio) and O_DIRECT with
 * intra_op_parallelism threads, each its own aio context of queue_depth
 * requests of block_size, as DeepSpeed's async_io op does.  The files
 * live in a directory of their own under the one measured and are
 * removed at the end.  The tensors are moved at a measuring scale (bytes
 * given in the struct): the buffers it allocates, and nothing else of
 * size, are tfs_measure_memory().
 */
#ifndef TFS_MEASURE_H
#define TFS_MEASURE_H

#include <stddef.h>
#include <stdint.h>

struct tfs_measure_cfg {
	uint64_t block_size;	    /* aio.block_size, a multiple of 4 KiB */
	unsigned int queue_depth;   /* aio.queue_depth */
	unsigned int threads;	    /* intra_op_parallelism (thread_count) */
	unsigned int param_buffers; /* parameter tensors swapped in at once */
	unsigned int param_files;   /* parameter tensors in all (>= buffers) */
	uint64_t param_bytes;	/* one parameter tensor, a multiple of 4 KiB */
	unsigned int subgroups; /* optimizer sub-groups stepped */
	uint64_t opt_bytes;	/* one optimizer state of a sub-group, idem */
	int pin;		/* mlock the buffers (pin_memory) */
};

struct tfs_measure_result {
	double gbs, read_gbs, write_gbs; /* 10^9 bytes per second */
	double seconds;			 /* of timed I/O */
	double read_seconds, write_seconds;
	uint64_t read_bytes, write_bytes;
	unsigned int steps; /* steps run */
};

/* The bytes of buffers tfs_measure_run() allocates for m. */
uint64_t tfs_measure_memory(const struct tfs_measure_cfg *m);

/* The bytes of files it writes under the directory. */
uint64_t tfs_measure_files(const struct tfs_measure_cfg *m);

/*
 * Run steps of the pattern in a new directory under dir until seconds
 * have passed (one step at least), and remove it.  Returns 0 with *r;
 * -EINVAL (a value out of range), -EPERM or -ENOMEM when pin cannot lock
 * the buffers (RLIMIT_MEMLOCK), or an I/O -errno; err says what and
 * where, lowercase.  A request that completes short is an error (-EIO):
 * DeepSpeed would not notice it, a measurement must.
 */
int tfs_measure_run(const char *dir, const struct tfs_measure_cfg *m,
		    double seconds, struct tfs_measure_result *r, char *err,
		    size_t errlen);

#endif
