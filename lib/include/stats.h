/*
 * stats.h: a mount's counters as text for people and programs.
 *
 * The file system's counters (tfs_fs_get_stats(), tfs_fs_get_info()) are
 * listed once, in TFS_STATS below, with a name, a Prometheus type and a
 * line of help; the three renderings all come from that list:
 *
 *   TFS_STATS_TEXT  "name value" per line, like /proc/vmstat
 *   TFS_STATS_JSON  one object {"name": value, ...}
 *   TFS_STATS_PROM  Prometheus text format, names prefixed "tensorfs_",
 *                   for node_exporter's textfile collector
 *
 * The text and JSON names are the list's, stable for scripts.  The
 * Prometheus names follow its conventions (promtool check metrics), by
 * rules rather than a second list, so a counter added here needs nothing
 * more: a counter gets "_total"; a name ending in "_ns" ends in "_seconds"
 * instead, its value divided by 10^9 (base units); a gauge named
 * "*_total" or "*_busy", which would read as a counter or lack a unit,
 * counts chunks and is named "*_chunks" / "*_busy_chunks"
 * (pool_total -> tensorfs_pool_chunks).  A help text names no unit the
 * Prometheus name changes.
 *
 * Each member of the set of devices (one for a single device) has the
 * counters of TFS_MEMBER_STATS, after the mount's own:
 *
 *   text   "members N", then per member "memberI_NAME value" (numbers
 *          only, as every line of the text: the device names are in the
 *          other two)
 *   JSON   "members": [{"device": PATH, "NAME": value, ...}, ...]
 *   Prometheus  tensorfs_member_NAME{member="I",device="PATH"} value,
 *          named by the same rules, with a gauge tensorfs_members
 *
 * I counts from 1, as every message names members (set.c); member 1
 * holds the journal.
 */
#ifndef TFS_STATS_H
#define TFS_STATS_H

#include <stdint.h>
#include <stdio.h>

struct tfs_fs;

/* X(name, type, help): type is counter or gauge. */
#define TFS_STATS                                                              \
	X(app_read_bytes, counter, "Bytes applications read")                  \
	X(app_write_bytes, counter, "Bytes applications wrote")                \
	X(copy_bytes, counter,                                                 \
	  "Bytes copy_file_range copied inside the file system")               \
	X(clone_bytes, counter,                                                \
	  "Bytes copy_file_range shared with its source (clones), not copied") \
	X(cache_hits, counter, "Reads of a chunk found in the RAM cache")      \
	X(cache_misses, counter, "Reads of a chunk not in the RAM cache")      \
	X(cache_read_around, counter,                                          \
	  "Whole chunks read from the device straight into a reply")           \
	X(cache_evictions, counter, "Clean chunks evicted from the cache")     \
	X(cache_bytes, gauge, "File data held in RAM, clean or dirty")         \
	X(cache_limit_bytes, gauge, "The clean cache's budget (max_in_cpu)")   \
	X(cache_clean_bytes, gauge,                                            \
	  "Clean file data in RAM, in whole chunks: at most max_in_cpu")       \
	X(dirty_bytes, gauge, "Data in RAM not yet on the device")             \
	X(pool_busy, gauge, "Write-back chunks holding dirty data")            \
	X(pool_total, gauge, "Write-back chunks in the pool")                  \
	X(pool_waits, counter, "Writes that waited for a full pool")           \
	X(pool_chunk_ns, counter,                                              \
	  "Write-back chunks in use times how long: chunk-nanoseconds")        \
	X(writeback_bytes, counter, "Bytes written back to the device")        \
	X(writeback_errors, counter, "Write-backs the device failed")          \
	X(dev_reads, counter, "Device read requests completed")                \
	X(dev_writes, counter, "Device write requests completed")              \
	X(dev_read_bytes, counter, "Bytes read from the device")               \
	X(dev_write_bytes, counter, "Bytes written to the device")             \
	X(dev_flushes, counter, "Device cache flushes")                        \
	X(dev_errors, counter, "Device requests that failed")                  \
	X(dev_submitted, counter, "Device requests submitted")                 \
	X(dev_inflight, gauge, "Device requests in flight")                    \
	X(dev_latency_ns, counter, "Sum of device request latencies")          \
	X(dev_latency_max_ns, gauge, "Longest device request latency")         \
	X(arena_bytes, gauge, "Memory reserved for the cache and the pool")    \
	X(fs_bytes, gauge, "Size of the file system")                          \
	X(fs_free_bytes, gauge, "Free space")                                  \
	X(inodes, gauge, "Files, directories and other inodes")                \
	X(meta_ram_bytes, gauge,                                               \
	  "RAM the metadata tree holds: inodes, entries, extents, tables")

/* Per member: X(name, type, help) as above. */
#define TFS_MEMBER_STATS                                                       \
	X(read_bytes, counter, "Bytes read from the member")                   \
	X(write_bytes, counter, "Bytes written to the member")                 \
	X(reads, counter, "Read requests the member completed")                \
	X(writes, counter, "Write requests the member completed")              \
	X(flushes, counter, "Cache flushes of the member")                     \
	X(errors, counter, "Requests the member failed")                       \
	X(inflight, gauge, "Requests in flight on the member")                 \
	X(inflight_max, gauge,                                                 \
	  "The most requests in flight on the member at once")                 \
	X(latency_ns, counter, "Sum of the member's request latencies")        \
	X(latency_max_ns, gauge, "Longest request latency of the member")      \
	X(size_bytes, gauge, "Size of the member")                             \
	X(free_bytes, gauge, "Free space on the member")

/* The most members a struct tfs_stats carries (format.h's TFS_SET_MAX). */
#define TFS_STATS_MEMBERS 64

struct tfs_member_stats {
	const char *device; /* borrowed: the file system's, or the caller's */
#define X(name, type, help) uint64_t name;
	TFS_MEMBER_STATS
#undef X
};

struct tfs_stats {
#define X(name, type, help) uint64_t name;
	TFS_STATS
#undef X
	unsigned int members; /* entries of member[] in use */
	struct tfs_member_stats member[TFS_STATS_MEMBERS];
};

/* Read every counter of fs now. */
void tfs_stats_get(struct tfs_fs *fs, struct tfs_stats *s);

enum tfs_stats_format {
	TFS_STATS_TEXT,
	TFS_STATS_JSON,
	TFS_STATS_PROM
};

/* s rendered in format f: a NUL-terminated string the caller frees with
 * free(), or NULL without memory. */
char *tfs_stats_render(const struct tfs_stats *s, enum tfs_stats_format f);

/* s as a JSON string, quotes included, escaped as RFC 8259 asks. */
void tfs_stats_json_string(FILE *m, const char *s);

#endif
