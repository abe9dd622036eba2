/*
 * config.h: tensorfs settings, declared once.
 *
 * TFS_CONFIG_KEYS is the one table of every key: its section, name,
 * type, default, bounds, unit and meaning.  The struct, the defaults,
 * the INI parser, validation, --print-config and the documentation's key
 * list are all generated from it, so they cannot disagree.
 *
 * X(section, name, type, default, min, max, unit, doc)
 *   type: BOOL (true/false, yes/no, on/off, 1/0), UINT (a whole number,
 *   DeepSpeed notation 1e8 allowed), SIZE (bytes: 4096, 1MiB, 64K),
 *   ELEMS (a plain number counts elements of [offload_param] dtype, as in
 *   DeepSpeed; with a byte suffix it is bytes), DTYPE (a tensor type
 *   name).  min and max bound UINT and SIZE values, and ELEMS values
 *   given in elements.
 */
#ifndef TFS_CONFIG_H
#define TFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TFS_CONFIG_KEYS                                                      \
	X(offload_param, max_in_cpu, ELEMS, "1e9", 0, UINT64_MAX >> 2,        \
	  "elements",                                                          \
	  "RAM cache of file data, in elements of dtype (1e9 x fp16 = 2 GB); " \
	  "a number with a byte suffix (16GiB) is bytes.  Clean data stays "   \
	  "in RAM up to this budget, least recently used evicted first; it "   \
	  "is never exceeded.  0: no cache, every read goes to the device.  "  \
	  "Costs up to this much memory, allocated as it fills.")             \
	X(offload_param, buffer_count, UINT, "5", 1, 1u << 20, "count",        \
	  "Write-back buffers.  Writes are copied into them, acknowledged, "   \
	  "and written to the device in the background; when all are full "    \
	  "writers wait, they never fail.  Pool memory = buffer_count x "      \
	  "buffer_size, allocated at mount (and pinned with pin_memory).")    \
	X(offload_param, buffer_size, ELEMS, "1e8", 1, UINT64_MAX >> 2,        \
	  "elements",                                                          \
	  "Size of one write-back buffer, in elements of dtype (1e8 x fp16 = " \
	  "200 MB), or bytes with a suffix.  Defaults: 5 x 1e8 x 2 B = 1 GB "  \
	  "of pool.")                                                          \
	X(offload_param, pin_memory, BOOL, "false", 0, 1, "bool",              \
	  "Lock the write-back pool in RAM (mlock) and register it with "      \
	  "io_uring, saving a page walk per I/O.  Pinned memory counts "       \
	  "against RLIMIT_MEMLOCK (ulimit -l); the mount refuses a pool "      \
	  "larger than that limit.")                                           \
	X(offload_param, dtype, DTYPE, "fp16", 0, 0, "type",                   \
	  "Element type that max_in_cpu and buffer_size count (tensorfs's "    \
	  "own key; DeepSpeed takes it from its fp16/bf16 sections): fp16, "   \
	  "bf16, fp32, fp64, fp8_e4m3, fp8_e5m2, int8, uint8, int16, int32, "  \
	  "int64, bool.")                                                      \
	X(aio, block_size, SIZE, "1MiB", 4096, 64u << 20, "bytes",             \
	  "Size of one device request, and of the unit the cache and the "     \
	  "write-back pool work in.  A multiple of 4 KiB.")                    \
	X(aio, queue_depth, UINT, "8", 1, 256, "count",                        \
	  "Device requests in flight per I/O thread.")                         \
	X(aio, intra_op_parallelism, UINT, "1", 1, 64, "count",                \
	  "I/O threads writing back, each with its own io_uring.  The old "    \
	  "name thread_count is accepted with a warning.")                     \
	X(aio, single_submit, BOOL, "false", 0, 1, "bool",                     \
	  "Submit each request on its own instead of in batches.")             \
	X(aio, overlap_events, BOOL, "true", 0, 1, "bool",                     \
	  "Keep the queue topped up as requests complete, instead of "         \
	  "submitting a batch and waiting for all of it.")                     \
	X(mount, memory_check, BOOL, "true", 0, 1, "bool",                     \
	  "Refuse to mount when the cache and the pool do not fit in "         \
	  "available memory (MemAvailable and the cgroup's memory.max), or "   \
	  "the pinned pool exceeds RLIMIT_MEMLOCK.  false mounts anyway.")     \
	X(mount, commit_interval_ms, UINT, "5000", 10, 3600000, "ms",          \
	  "How often metadata changes are committed to the journal.  A "      \
	  "crash loses at most this much of the work that was not "           \
	  "fsync'd; fsync() always commits at once.  Costs no memory.")       \
	X(mount, attr_timeout_ms, UINT, "1000", 0, 3600000, "ms",             \
	  "How long the kernel may cache names and attributes.  Only this "   \
	  "mount changes its files, so longer is safe; 0 asks every time.")   \
	X(mount, max_threads, UINT, "16", 1, 1024, "count",                   \
	  "FUSE worker threads, each serving one request at a time.  Each "   \
	  "costs a 1 MiB request buffer and a 1 MiB I/O buffer.")              \
	X(mount, read_ahead_kb, UINT, "4096", 0, 1048576, "KiB",              \
	  "Kernel readahead for buffered reads of this mount, set in "         \
	  "/sys/class/bdi when mounted as root (the kernel's default is 128). " \
	  "Readahead pages are kernel page cache, not tensorfs memory.  0 "    \
	  "leaves the kernel's value.")                                       \
	X(mount, bdi_max_ratio, UINT, "40", 0, 100, "percent",                 \
	  "Share of the kernel's dirty page limit that buffered writes and "   \
	  "mmap of this mount may use before writers are throttled, set in "  \
	  "/sys/class/bdi as root; FUSE mounts start at 1.  That page cache "  \
	  "is kernel memory, outside tensorfs's own bound.  0 leaves the "     \
	  "kernel's value.")

enum tfs_cfg_type {
	TFS_CFG_BOOL, TFS_CFG_UINT, TFS_CFG_SIZE, TFS_CFG_ELEMS, TFS_CFG_DTYPE
};

/* An ELEMS value with this bit set was given in bytes. */
#define TFS_CFG_BYTES (1ull << 63)

struct tfs_config {
#define X(sec, name, type, def, min, max, unit, doc) uint64_t sec##_##name;
	TFS_CONFIG_KEYS
#undef X
	char warnings[512];	/* e.g. deprecated names, one per line */
};

/* Tensor types: name and element size; index is what DTYPE keys hold. */
const char *tfs_dtype_name(unsigned int index);
size_t tfs_dtype_size(unsigned int index);	/* 0 if unknown */
int tfs_dtype_lookup(const char *name);		/* index, or -EINVAL */

/* An ELEMS value in bytes, with the configured element size (saturating
 * at UINT64_MAX). */
uint64_t tfs_config_bytes(const struct tfs_config *c, uint64_t elems_value);
/* The RAM cache budget (max_in_cpu) and the write-back pool (buffer_count
 * x buffer_size), in bytes, saturating. */
uint64_t tfs_config_cache_bytes(const struct tfs_config *c);
uint64_t tfs_config_pool_bytes(const struct tfs_config *c);

/*
 * Check combinations no single key can: block_size a multiple of 4 KiB,
 * a pool of at least two blocks.  0, or -EINVAL with err saying which
 * keys to change.
 */
int tfs_config_validate(const struct tfs_config *c, char *err, size_t errlen);

/* A key of the table, for tools that list or document them. */
struct tfs_cfg_key {
	const char *section, *name;
	enum tfs_cfg_type type;
	const char *def;
	uint64_t min, max;
	const char *unit, *doc;
	size_t offset;
};

/* All keys, in table order; *n gets their number. */
const struct tfs_cfg_key *tfs_config_keys(size_t *n);

/* Set every key to its default. */
void tfs_config_defaults(struct tfs_config *c);

/*
 * Read an INI file over c.  Returns 0, or -EINVAL with err holding
 * "FILE:LINE: what is wrong; what to do" (an unknown section or key gets
 * the nearest known name suggested), or -errno if the file cannot be read.
 */
int tfs_config_load(struct tfs_config *c, const char *path, char *err,
		    size_t errlen);

/*
 * Set one key from "section.name" or a plain "name" that only one section
 * has (as -o name=value).  Returns 0, -ENOENT for an unknown key (err then
 * suggests the nearest), -EINVAL for a bad value (err says why).
 */
int tfs_config_set(struct tfs_config *c, const char *key, const char *value,
		   char *err, size_t errlen);

/* Whether key names a setting (for splitting -o between us and FUSE). */
int tfs_config_is_key(const char *key);

/* Print the effective configuration as an INI file, with comments. */
void tfs_config_print(const struct tfs_config *c, FILE *f);

#endif
