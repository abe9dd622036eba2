/*
 * counters.h: the counters the library keeps of its device and its cache.
 *
 * Plain structs of numbers, filled by tfs_fs_get_stats() (fs.h) for the
 * daemon's state files and tools; io.c and cache.c keep them up to date
 * with relaxed atomics, so a snapshot is not one instant but each field
 * is exact.
 */
#ifndef TFS_COUNTERS_H
#define TFS_COUNTERS_H

#include <stdint.h>

/* The device: bytes and requests completed.  submitted
 * counts requests (pieces of at most block_size) sent to the kernel,
 * latency_ns their summed submit-to-completion time. */
struct tfs_dev_stats {
	uint64_t reads, writes, read_bytes, write_bytes, flushes, errors;
	uint64_t submitted, inflight, latency_ns, latency_max_ns;
	uint64_t inflight_max; /* the most in flight at once since mount */
};

/* The cache and the write-back pool. */
struct tfs_cache_stats {
	uint64_t hits, misses; /* chunk lookups by reads */
	uint64_t read_around;  /* misses read around the cache */
	uint64_t evictions;
	uint64_t cached_bytes; /* valid data in RAM, clean or dirty */
	uint64_t clean_bytes;  /* clean chunks x chunk_size: <= cache_limit */
	uint64_t cache_limit;  /* cache_chunks x chunk_size */
	uint64_t dirty_bytes;
	uint64_t pool_busy, pool_total; /* dirty chunks / pool_chunks */
	uint64_t pool_waits;		/* writers that waited for space */
	uint64_t pool_chunk_ns;		/* pool_busy x time, chunk-ns */
	uint64_t flushed_bytes, flush_errors;
	uint64_t arena_bytes;
};

#endif
