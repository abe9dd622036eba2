/*
 * config.h: tensorfs settings, declared once.
 *
 * TFS_CONFIG_KEYS is the one table of every key: its section, name,
 * type, default, bounds, unit, reader and meaning.  The struct, the
 * defaults, the INI parser, validation, --print-config and the
 * documentation's key list are all generated from it, so they cannot
 * disagree.
 *
 * X(section, name, type, default, min, max, unit, use, doc)
 *   type: BOOL (true/false, yes/no, on/off, 1/0), UINT (a whole number,
 *   DeepSpeed notation 1e8 or 1.5e9 allowed, no byte suffix), SIZE
 *   (bytes: 4096, 1MiB, 64K), ELEMS (a plain number counts elements of
 *   [offload_param] dtype, as in DeepSpeed; with a byte suffix it is
 *   bytes), DTYPE (a tensor type name), ENUM (one of the words the unit
 *   lists, "none|cpu|nvme"), STR (any text, a path), REAL (a decimal
 *   fraction such as 0.3).  min and max bound UINT, SIZE and REAL values,
 *   and ELEMS values given in elements.
 *   use: TFS, the mount reads it (and tensorfs-plan too); DS, only
 *   DeepSpeed has it: tensorfs accepts it under DeepSpeed's section and
 *   name so one file can describe both, and tensorfs-plan reads it.  The
 *   doc of every DS key starts with "DeepSpeed only".
 *
 * The sections and names are DeepSpeed's: [offload_param] and
 * [offload_optimizer] are zero_optimization.offload_param and
 * .offload_optimizer of a ds_config.json, [zero_optimization] holds its
 * other keys, [aio] is its top-level "aio".  Defaults are DeepSpeed's
 * (deepspeed/runtime/zero/offload_config.py, zero/config.py,
 * swap_tensor/constants.py).
 */
#ifndef TFS_CONFIG_H
#define TFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where DeepSpeed offloads; ENUM keys hold the index of the word. */
#define TFS_CFG_DEVICES "none|cpu|nvme"
enum tfs_offload_device {
	TFS_DEVICE_NONE,
	TFS_DEVICE_CPU,
	TFS_DEVICE_NVME
};

/* [mount] io_uring: the index of the word is enum tfs_uring_mode's */
#define TFS_CFG_URING "auto|on|off"

#define TFS_DS_ONLY "DeepSpeed only: tensorfs reads it for tensorfs-plan.  "

#define TFS_CONFIG_KEYS                                                         \
	X(offload_param, device, ENUM, "none", 0, 0, TFS_CFG_DEVICES, DS,       \
	  TFS_DS_ONLY                                                           \
	  "Where DeepSpeed keeps parameter partitions between "                 \
	  "uses (ZeRO stage 3 only): none keeps them on the GPU; cpu in "       \
	  "pinned host memory, all of them; nvme in files under nvme_path, "    \
	  "max_in_cpu elements of them in pinned host memory, the rest "        \
	  "read through buffer_count buffers of buffer_size.")                  \
	X(offload_param, nvme_path, STR, "", 0, 0, "path", DS,                  \
	  TFS_DS_ONLY                                                           \
	  "Directory DeepSpeed writes parameter swap files "                    \
	  "under (zero_stage_3/<dtype>params/rank<R>/, emptied at start); "     \
	  "set it to the tensorfs mount point.  Required with device = "        \
	  "nvme.")                                                              \
	X(offload_param, max_in_cpu, ELEMS, "1e9", 0, UINT64_MAX >> 2,          \
	  "elements", TFS,                                                      \
	  "RAM cache of file data, in elements of dtype (1e9 x fp16 = 2 GB); "  \
	  "a number with a byte suffix (16GiB) is bytes.  Clean data stays "    \
	  "in RAM up to this budget, least recently used evicted first; it "    \
	  "is never exceeded.  0: no cache, every read goes to the device.  "   \
	  "Costs up to this much memory, allocated as it fills.  In "           \
	  "DeepSpeed: parameter elements per rank kept in one pinned host "     \
	  "buffer instead of on NVMe.")                                         \
	X(offload_param, buffer_count, UINT, "5", 1, 1u << 20, "count", TFS,    \
	  "Write-back buffers.  Writes are copied into them, acknowledged, "    \
	  "and written to the device in the background; when all are full "     \
	  "writers wait, they never fail.  Pool memory = buffer_count x "       \
	  "buffer_size, allocated at mount (and pinned with pin_memory).  "     \
	  "With several drives the pool feeds them all: keep it at least "      \
	  "drives x queue_depth x block_size x intra_op_parallelism (4 x 8 x "  \
	  "1 MiB = 32 MiB), far below the default; more only absorbs bursts.  " \
	  "In DeepSpeed: pinned parameter swap buffers per rank.")              \
	X(offload_param, buffer_size, ELEMS, "1e8", 1, UINT64_MAX >> 2,         \
	  "elements", TFS,                                                      \
	  "Size of one write-back buffer, in elements of dtype (1e8 x fp16 = "  \
	  "200 MB), or bytes with a suffix.  Defaults: 5 x 1e8 x 2 B = 1 GB "   \
	  "of pool.  In DeepSpeed: one parameter swap buffer, which must be "   \
	  "larger than the largest parameter partition.")                       \
	X(offload_param, pin_memory, BOOL, "false", 0, 1, "bool", TFS,          \
	  "Lock the cache and the write-back pool in RAM (mlock) and "          \
	  "register them with io_uring, saving a page walk per I/O.  Pinned "   \
	  "memory counts against RLIMIT_MEMLOCK (ulimit -l); the mount "        \
	  "refuses a cache plus pool larger than that limit.  In DeepSpeed: "   \
	  "pins parameter partitions "                                          \
	  "as zero.Init creates them in host memory; its max_in_cpu buffer "    \
	  "is pinned either way.")                                              \
	X(offload_param, dtype, DTYPE, "fp16", 0, 0, "type", TFS,               \
	  "Element type that max_in_cpu and buffer_size count (tensorfs's "     \
	  "own key; DeepSpeed takes it from its fp16/bf16 sections): fp16, "    \
	  "bf16, fp32, fp64, fp8_e4m3, fp8_e5m2, int8, uint8, int16, int32, "   \
	  "int64, bool.")                                                       \
	X(offload_optimizer, device, ENUM, "none", 0, 0, TFS_CFG_DEVICES, DS,   \
	  TFS_DS_ONLY                                                           \
	  "Where DeepSpeed keeps the optimizer state (fp32 "                    \
	  "master weights, Adam's exp_avg and exp_avg_sq, fp32 gradients: 16 "  \
	  "B per parameter per rank): none on the GPU; cpu in host memory; "    \
	  "nvme in files under nvme_path, swapped in one sub-group at a "       \
	  "time (ZeRO stage 3; stages 1 and 2 treat nvme as cpu).  The step "   \
	  "runs on the CPU either way.")                                        \
	X(offload_optimizer, nvme_path, STR, "", 0, 0, "path", DS,              \
	  TFS_DS_ONLY                                                           \
	  "Directory DeepSpeed writes optimizer swap files "                    \
	  "under (zero_stage_3/optimizer/rank<R>/, never cleaned); set it to "  \
	  "the tensorfs mount point.  Required with device = nvme.")            \
	X(offload_optimizer, pin_memory, BOOL, "false", 0, 1, "bool", DS,       \
	  TFS_DS_ONLY                                                           \
	  "Pins the gradient partitions DeepSpeed keeps in host "               \
	  "memory whenever the optimizer is offloaded (one element of dtype "   \
	  "per parameter per rank), and with device = cpu the fp32 "            \
	  "gradients too.  The NVMe swap buffers are pinned either way.")       \
	X(offload_optimizer, buffer_count, UINT, "4", 0, 1u << 20, "count",     \
	  DS,                                                                   \
	  TFS_DS_ONLY                                                           \
	  "Pinned fp32 swap buffers, each the size of the "                     \
	  "largest sub-group: buffer_count x sub_group_size x 4 B per rank.  "  \
	  "A sub-group's step needs one per state: 4 for Adam (fp32 "           \
	  "parameter, gradient, exp_avg, exp_avg_sq); pipeline_read and "       \
	  "pipeline_write each hold 4 more at once.")                           \
	X(offload_optimizer, fast_init, BOOL, "false", 0, 1, "bool", DS,        \
	  TFS_DS_ONLY                                                           \
	  "Build the NVMe optimizer state by reading the fp16 "                 \
	  "parameter files through the parameter swap buffers in batches, "     \
	  "instead of one sub-group at a time through an unpinned buffer.  "    \
	  "Faster, but every offload_param buffer must hold the largest "       \
	  "sub-group (buffer_size >= sub_group_size), else DeepSpeed stops "    \
	  "with 'numel of fp16 buffers ... is too small'.")                     \
	X(offload_optimizer, pipeline_read, BOOL, "false", 0, 1, "bool", DS,    \
	  TFS_DS_ONLY                                                           \
	  "Read the next sub-group's optimizer state while the "                \
	  "current one steps (needs 4 more buffer_count for Adam).")            \
	X(offload_optimizer, pipeline_write, BOOL, "false", 0, 1, "bool", DS,   \
	  TFS_DS_ONLY                                                           \
	  "Write the previous sub-group's optimizer state while "               \
	  "the current one steps (needs 4 more buffer_count for Adam).")        \
	X(offload_optimizer, ratio, REAL, "1", 0, 1, "fraction", DS,            \
	  TFS_DS_ONLY                                                           \
	  "Share of the sub-groups whose optimizer step runs on "               \
	  "the CPU (ZeRO stage 3); the rest step on the GPU.  tensorfs-plan "   \
	  "counts every sub-group as offloaded, an upper bound.")               \
	X(zero_optimization, sub_group_size, UINT, "1e9", 0, UINT64_MAX >> 2,   \
	  "elements", DS,                                                       \
	  TFS_DS_ONLY                                                           \
	  "Parameters per optimizer sub-group: the optimizer "                  \
	  "steps, and with offload_optimizer nvme swaps, one sub-group at a "   \
	  "time, so the optimizer swap pool (x 4 B x buffer_count), the fp32 "  \
	  "gradient buffer (x 4 B) and, when parameters live on NVMe, a "       \
	  "pinned fp16 buffer all scale with it.  Lower it (1e8) when the "     \
	  "optimizer step runs out of host memory.")                            \
	X(zero_optimization, stage3_max_live_parameters, UINT, "1e9", 0,        \
	  UINT64_MAX >> 2, "elements", DS,                                      \
	  TFS_DS_ONLY                                                           \
	  "Gathered parameter elements beyond which ZeRO-3 stops "              \
	  "prefetching (partitioned_param_coordinator.py).  It bounds the "     \
	  "prefetch, not the parameters kept gathered for reuse, so it does "   \
	  "not lower the parameter swap buffers DeepSpeed needs.")              \
	X(zero_optimization, stage3_prefetch_bucket_size, UINT, "5e7", 0,       \
	  UINT64_MAX >> 2, "elements", DS,                                      \
	  TFS_DS_ONLY                                                           \
	  "Parameter elements ZeRO-3 gathers ahead of use at a "                \
	  "time; NVMe parameters are read ahead only into free swap "           \
	  "buffers.")                                                           \
	X(zero_optimization, stage3_param_persistence_threshold, UINT, "1e5",   \
	  0, UINT64_MAX >> 2, "elements", DS,                                   \
	  TFS_DS_ONLY                                                           \
	  "Parameters of at most this many elements stay gathered "             \
	  "for the whole run and give their swap buffer back once read.")       \
	X(zero_optimization, stage3_max_reuse_distance, UINT, "1e9", 0,         \
	  UINT64_MAX >> 2, "elements", DS,                                      \
	  TFS_DS_ONLY                                                           \
	  "A parameter used again within this many elements of other "          \
	  "parameters stays gathered, and with offload_param nvme keeps its "   \
	  "swap buffer: the last layers of the forward pass all do, so this "   \
	  "decides how many parameter buffers DeepSpeed needs (tensorfs-plan "  \
	  "--model counts them).")                                              \
	X(aio, block_size, SIZE, "1MiB", 4096, 64u << 20, "bytes", TFS,         \
	  "Size of one device request, and of the unit the cache and the "      \
	  "write-back pool work in.  A multiple of 4 KiB.  In DeepSpeed: "      \
	  "tensors smaller than max(1 MiB, block_size) are never swapped.")     \
	X(aio, queue_depth, UINT, "8", 1, 256, "count", TFS,                    \
	  "Device requests in flight per I/O thread on each drive: a set of "   \
	  "N drives keeps up to N x queue_depth in flight, and each "           \
	  "write-back batch takes queue_depth x N blocks of the pool.  8 "      \
	  "keeps an NVMe drive busy with 1 MiB requests; raise it for "         \
	  "smaller block_size.")                                                \
	X(aio, intra_op_parallelism, UINT, "1", 1, 64, "count", TFS,            \
	  "I/O threads writing back, each with its own io_uring.  The old "     \
	  "name thread_count is accepted with a warning (DeepSpeed ignores "    \
	  "it).  In DeepSpeed: threads per request; swap lengths are "          \
	  "rounded up to 1024 x this many bytes.")                              \
	X(aio, single_submit, BOOL, "false", 0, 1, "bool", TFS,                 \
	  "Submit each request on its own instead of in batches.")              \
	X(aio, overlap_events, BOOL, "true", 0, 1, "bool", TFS,                 \
	  "Keep the queue topped up as requests complete, instead of "          \
	  "submitting a batch and waiting for all of it.")                      \
	X(aio, use_gds, BOOL, "false", 0, 1, "bool", DS,                        \
	  TFS_DS_ONLY                                                           \
	  "GPUDirect Storage: DeepSpeed allocates the parameter "               \
	  "swap buffers in GPU memory instead of pinned host memory and "       \
	  "reads the files with cuFile (NVIDIA GPUs only).")                    \
	X(mount, memory_check, BOOL, "true", 0, 1, "bool", TFS,                 \
	  "Refuse to mount when the cache and the pool do not fit in "          \
	  "available memory (MemAvailable and the cgroup's memory.max), or "    \
	  "with pin_memory they exceed RLIMIT_MEMLOCK.  false mounts anyway.")  \
	X(mount, commit_interval_ms, UINT, "5000", 10, 3600000, "ms", TFS,      \
	  "How often metadata changes are committed to the journal.  A "        \
	  "crash loses at most this much of the work that was not "             \
	  "fsync'd; fsync() always commits at once.  Costs no memory.")         \
	X(mount, attr_timeout_ms, UINT, "60000", 0, 3600000, "ms", TFS,         \
	  "How long the kernel may cache names and attributes.  Only this "     \
	  "mount changes its files, so longer is safe; 0 asks every time.")     \
	X(mount, max_threads, UINT, "16", 1, 1024, "count", TFS,                \
	  "FUSE worker threads, each serving one request at a time.  Each "     \
	  "costs a 1 MiB request buffer and a 1 MiB I/O buffer.")               \
	X(mount, io_uring, ENUM, "auto", 0, 0, TFS_CFG_URING, TFS,              \
	  "How FUSE requests travel: auto carries them over io_uring where "    \
	  "the kernel allows it (Linux 6.14+, with "                            \
	  "/sys/module/fuse/parameters/enable_uring on; see tensorfs(8)) "      \
	  "and over /dev/fuse otherwise, saying why in the log; on "            \
	  "refuses to mount without it; off always uses /dev/fuse.  io_uring "  \
	  "costs one 1 MiB buffer per worker thread, at least one per CPU.")    \
	X(mount, read_ahead_kb, UINT, "4096", 0, 1048576, "KiB", TFS,           \
	  "Kernel readahead for buffered reads of this mount, set in "          \
	  "/sys/class/bdi when mounted as root (the kernel's default is 128). " \
	  "Readahead pages are kernel page cache, not tensorfs memory.  A "     \
	  "cold sequential reader keeps up to this much in 1 MiB reads in "     \
	  "flight; a page fault on a mapping reads this much around it (the "   \
	  "first hundred faults of a random reader too).  0 leaves the "        \
	  "kernel's value.")                                                    \
	X(mount, bdi_max_ratio, UINT, "40", 0, 100, "percent", TFS,             \
	  "Share of the kernel's dirty page limit that buffered writes and "    \
	  "mmap of this mount may use before writers are throttled, set in "    \
	  "/sys/class/bdi as root; FUSE mounts start at 1.  That page cache "   \
	  "is kernel memory, outside tensorfs's own bound.  0 leaves the "      \
	  "kernel's value.")                                                    \
	X(mount, discard, BOOL, "false", 0, 1, "bool", TFS,                     \
	  "Discard freed blocks as files are deleted: holes punched in an "     \
	  "image file (it shrinks), BLKDISCARD on a device, within a few "      \
	  "commit intervals, once no state a crash could load still uses "      \
	  "them.  -o discard sets it.  fstrim MOUNTPOINT does the same on "     \
	  "demand.")                                                            \
	X(mount, log, STR, "", 0, 0, "path", TFS,                               \
	  "Where the daemon logs once in the background: syslog (which must "   \
	  "accept messages at mount time), or a file.  "                        \
	  "Empty: syslog if /dev/log accepts messages, else the file "          \
	  "/var/log/tensorfs/DEVICE.log (root) or "                             \
	  "$XDG_STATE_HOME/tensorfs/DEVICE.log (other users; "                  \
	  "~/.local/state by default), DEVICE the device's base name.  With "   \
	  "-f messages go to the terminal (and to this, if set).")

enum tfs_cfg_type {
	TFS_CFG_BOOL,
	TFS_CFG_UINT,
	TFS_CFG_SIZE,
	TFS_CFG_ELEMS,
	TFS_CFG_DTYPE,
	TFS_CFG_ENUM,
	TFS_CFG_STR,
	TFS_CFG_REAL
};

/* Who reads a key: the mount, or only DeepSpeed (and tensorfs-plan). */
enum tfs_cfg_use {
	TFS_CFG_TFS,
	TFS_CFG_DS
};

/* An ELEMS value with this bit set was given in bytes. */
#define TFS_CFG_BYTES (1ull << 63)

/* The longest STR value, with its terminating NUL. */
#define TFS_CFG_STR_MAX 512

/* The C type of each key type's field. */
#define TFS_CFG_FIELD_BOOL(n)  uint64_t n;
#define TFS_CFG_FIELD_UINT(n)  uint64_t n;
#define TFS_CFG_FIELD_SIZE(n)  uint64_t n;
#define TFS_CFG_FIELD_ELEMS(n) uint64_t n;
#define TFS_CFG_FIELD_DTYPE(n) uint64_t n;
#define TFS_CFG_FIELD_ENUM(n)  uint64_t n;
#define TFS_CFG_FIELD_STR(n)   char n[TFS_CFG_STR_MAX];
#define TFS_CFG_FIELD_REAL(n)  double n;

/* flags: what loading saw besides values */
#define TFS_CFG_F_THREAD_COUNT 1u /* [aio] thread_count was given */
/* a ds_config.json gave intra_op_parallelism to a DeepSpeed that reads
 * thread_count (0.16.3 and older): DeepSpeed runs with 1 thread */
#define TFS_CFG_F_DS_ONE_THREAD 2u

/* Each key's index in table order, and their number. */
enum {
#define X(sec, name, type, def, min, max, unit, use, doc)                      \
	TFS_CFG_KEY_##sec##_##name,
	TFS_CONFIG_KEYS
#undef X
	    TFS_CFG_NKEYS
};

/* from_line[] of a key tfs_config_set() set (from_set[] holds the text) */
#define TFS_CFG_FROM_SET UINT32_MAX

/* The longest "KEY=VALUE" from_set[] keeps, with its NUL; longer is cut
 * and ends in "..." */
#define TFS_CFG_FROM_SET_MAX 128

struct tfs_config {
#define X(sec, name, type, def, min, max, unit, use, doc)                      \
	TFS_CFG_FIELD_##type(sec##_##name)
	TFS_CONFIG_KEYS
#undef X
	unsigned int flags; /* TFS_CFG_F_* */
	char warnings[512]; /* "FILE:LINE: ..." per deprecated name, one per line */
	/* where each value came from, for messages (tfs_config_origin()):
	 * 0 the default, a line of from_file, or TFS_CFG_FROM_SET */
	uint32_t from_line[TFS_CFG_NKEYS];
	char from_file[1024]; /* the file tfs_config_load() read last */
	char from_set[TFS_CFG_NKEYS][TFS_CFG_FROM_SET_MAX]; /* "KEY=VALUE" */
};

/* Tensor types: name and element size; index is what DTYPE keys hold. */
const char *tfs_dtype_name(unsigned int index);
size_t tfs_dtype_size(unsigned int index); /* 0 if unknown */
int tfs_dtype_lookup(const char *name);	   /* index, or -EINVAL */

/* An ELEMS value in bytes, with the configured element size (saturating
 * at UINT64_MAX). */
uint64_t tfs_config_bytes(const struct tfs_config *c, uint64_t elems_value);
/* An ELEMS value in elements of the configured dtype: as given, or the
 * bytes divided by the element size (rounded down). */
uint64_t tfs_config_elems(const struct tfs_config *c, uint64_t elems_value);
/* The RAM cache budget (max_in_cpu) and the write-back pool (buffer_count
 * x buffer_size), in bytes, saturating. */
uint64_t tfs_config_cache_bytes(const struct tfs_config *c);
uint64_t tfs_config_pool_bytes(const struct tfs_config *c);

/*
 * Check combinations no single key can: block_size a multiple of 4 KiB,
 * a pool of at least two blocks.  0, or -EINVAL with err naming each key
 * involved with its value and where it came from (tfs_config_origin())
 * and saying which to change.  tfs_config_load() runs the same checks on
 * what the file set, and names the file and line.
 */
int tfs_config_validate(const struct tfs_config *c, char *err, size_t errlen);

/* A key of the table, for tools that list or document them. */
struct tfs_cfg_key {
	const char *section, *name;
	enum tfs_cfg_type type;
	const char *def;
	uint64_t min, max;
	const char *unit;
	enum tfs_cfg_use use;
	const char *doc;
	size_t offset;
};

/* All keys, in table order; *n gets their number.  Borrowed, static. */
const struct tfs_cfg_key *tfs_config_keys(size_t *n);

/* The key "section.name", or NULL. */
const struct tfs_cfg_key *tfs_config_key(const char *section, const char *name);

/*
 * k's value in c as the INI file would write it ("1e8", "256MiB", "nvme",
 * "true") into buf; returns buf.  Truncates to len.
 */
char *tfs_config_format(const struct tfs_config *c, const struct tfs_cfg_key *k,
			char *buf, size_t len);

/*
 * Where k's value in c came from, for a message, into buf: "FILE:LINE"
 * (tfs_config_load(); FILE the file it read last), "-o KEY=VALUE" as
 * tfs_config_set() was given it (the daemon's -o), or "default".
 * Returns buf.
 */
char *tfs_config_origin(const struct tfs_config *c, const struct tfs_cfg_key *k,
			char *buf, size_t len);

/* k's value and where it came from, for a message, into buf:
 * "offload_param.buffer_size = 1 from -o offload_param.buffer_size=1",
 * "aio.block_size = 1MiB from tensorfs.ini:12",
 * "offload_param.buffer_count = 5 by default".  Returns buf. */
char *tfs_config_describe(const struct tfs_config *c,
			  const struct tfs_cfg_key *k, char *buf, size_t len);

/* Whether the value of k came from tfs_config_set() (-o). */
int tfs_config_from_set(const struct tfs_config *c,
			const struct tfs_cfg_key *k);

/* Whether k's value in c differs from its default. */
int tfs_config_changed(const struct tfs_config *c, const struct tfs_cfg_key *k);

/* Set every key to its default. */
void tfs_config_defaults(struct tfs_config *c);

/*
 * Read an INI file over c.  Returns 0; -EINVAL with err holding
 * "FILE:LINE: what is wrong; what to do" (an unknown section or key gets
 * the nearest known name suggested, a key in the wrong section the right
 * one), c then partly read; -EDOM when every value is good but two the
 * file set contradict each other (tfs_config_validate's checks), err
 * naming the line of the later one and c holding the whole file; or
 * -errno if the file cannot be read.  Deprecated names are appended to
 * c->warnings as "FILE:LINE: ...\n".  Each key the file sets is
 * remembered as set there (tfs_config_origin()).
 */
int tfs_config_load(struct tfs_config *c, const char *path, char *err,
		    size_t errlen);

/*
 * The same from len bytes of INI text at buf (borrowed, no NUL needed),
 * read exactly as a file of those bytes; name stands for FILE in the
 * messages.  Returns what tfs_config_load() does, -ENOMEM if the buffer
 * cannot be opened as a stream.  For tests and fuzzing.
 */
int tfs_config_load_buffer(struct tfs_config *c, const char *name,
			   const char *buf, size_t len, char *err,
			   size_t errlen);

/*
 * Set one key from "section.name" or a plain "name" (as -o name=value).
 * A plain name that several sections have means the one the mount reads
 * ([offload_param] buffer_count, not [offload_optimizer]'s); the others
 * need section.name.  Returns 0, -ENOENT for an unknown key (err then
 * suggests the nearest), -EINVAL for a bad value (err says why).  A key
 * set is remembered as set by "-o KEY=VALUE" (tfs_config_origin()).
 */
int tfs_config_set(struct tfs_config *c, const char *key, const char *value,
		   char *err, size_t errlen);

/* Whether key names a setting (for splitting -o between us and FUSE). */
int tfs_config_is_key(const char *key);

/* The name of the setting nearest to key ("name" or "section.name"; by
 * edit distance, as the INI parser suggests), or NULL if none is close. */
const char *tfs_config_nearest(const char *key);

/* Print the effective configuration as an INI file, with comments. */
void tfs_config_print(const struct tfs_config *c, FILE *f);

/* Print only the keys that differ from their defaults, without comments,
 * as an INI file ("" if none differ). */
void tfs_config_print_changed(const struct tfs_config *c, FILE *f);

#endif
