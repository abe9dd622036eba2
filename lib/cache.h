/*
 * cache.h: file data in RAM: a cache of clean data bounded by max_in_cpu,
 * and a write-back pool of dirty data bounded by buffer_count x
 * buffer_size, in one arena of equal chunks.
 *
 * File data is cached in chunks of chunk_size bytes (aio.block_size): chunk
 * idx of inode ino holds the file's bytes [idx * chunk_size, (idx + 1) *
 * chunk_size).  Each chunk tracks, per 4 KiB sector, whether its bytes are
 * valid (hold the file's data) and dirty (not yet on the device).
 *
 * Memory.  The arena is allocated once, at tfs_cache_new(): cache_chunks +
 * pool_chunks chunks, touched only as they are first used, and mlocked
 * whole when pinned.  At most pool_chunks chunks are dirty at once (a
 * writer that needs one more waits for write-back: it never fails); at
 * most cache_chunks hold clean data (least recently used evicted first).
 * So the cache's memory never exceeds the arena.
 *
 * Write-back.  Flusher threads (one io_uring each, in the callbacks) take
 * dirty chunks that are ready, up to 'batch' at a time, and hand them to
 * ops->write.  A chunk is ready when it is wholly dirty, when it has been
 * dirty for expire_ms, when its file is synced or closed, or when writers
 * wait for pool space.  While a chunk is being written, writers to it
 * wait; readers do not.
 *
 * Thread safety: every function may be called from any thread.  Writes,
 * drops and reads of one inode are serialised by the caller (the file
 * system's per-inode lock: writers exclusive, readers shared); the cache
 * serialises everything else.  Callbacks run without any cache lock.
 */
#ifndef TFS_CACHE_H
#define TFS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"

struct tfs_cache;

#define TFS_SECTOR 4096u
/* The largest chunk (aio.block_size's bound): its sector bitmaps fit in
 * TFS_CACHE_MAX_WORDS words, kept on the stack where a chunk's is copied. */
#define TFS_CACHE_MAX_CHUNK (64u << 20)
#define TFS_CACHE_MAX_WORDS (TFS_CACHE_MAX_CHUNK / TFS_SECTOR / 64)

/* One chunk handed to ops->write. */
struct tfs_cache_io {
	uint64_t ino, idx;
	void *buf;	       /* chunk_size bytes, borrowed for the call */
	const uint64_t *dirty; /* bitmap of the sectors to write */
	int result;	       /* set by ops->write: 0 or -errno */
};

struct tfs_cache_ops {
	/*
	 * Read the sectors set in 'want' (a bitmap of nsect bits) of chunk
	 * (ino, idx) from the device into buf (sector s at s * 4096); zeros
	 * where the file has no data.  0 or -errno.
	 */
	int (*fill)(void *ctx, uint64_t ino, uint64_t idx, void *buf,
		    const uint64_t *want, unsigned int nsect);
	/* Write each io's dirty sectors to the device; set each result. */
	void (*write)(void *ctx, struct tfs_cache_io *ios, int n);
	/* Read len bytes of ino at off straight from the device, when the
	 * cache has no room for them or is read around.  0 or -errno. */
	int (*read_direct)(void *ctx, uint64_t ino, uint64_t off, void *dst,
			   size_t len);
	/* Optional: called first on each flusher thread, with the arena
	 * (e.g. to register it with the thread's io_uring). */
	void (*thread_init)(void *ctx, void *arena, size_t len);
};

struct tfs_cache_opts {
	size_t chunk_size;	/* a multiple of 4096 */
	size_t cache_chunks;	/* clean data budget, in chunks */
	size_t pool_chunks;	/* dirty data budget, at least 1 */
	unsigned int flushers;	/* write-back threads, at least 1 */
	unsigned int batch;	/* chunks per ops->write call */
	unsigned int expire_ms; /* write back partly dirty chunks
					   after this long (0: 1000) */
	int pin;		/* mlock the arena at start */
};

/*
 * Make a cache (its arena reserved, not yet touched).  On failure returns
 * -errno with a sentence in err.
 * Caller frees with tfs_cache_free().  ops and ctx are borrowed for the
 * cache's life.
 */
int tfs_cache_new(const struct tfs_cache_opts *o,
		  const struct tfs_cache_ops *ops, void *ctx,
		  struct tfs_cache **out, char *err, size_t errlen);
/* Pin the arena (opts.pin) and start the flusher threads: after any
 * fork(), which keeps neither.  0 or -errno (mlock's: -ENOMEM or -EPERM
 * past RLIMIT_MEMLOCK). */
int tfs_cache_start(struct tfs_cache *c);
/* The bytes tfs_cache_new() allocates for nchunks chunks of chunk_size
 * beside the arena (each chunk's record and sector bitmaps, the hash and
 * inode tables), which a memory budget counts with the arena. */
uint64_t tfs_cache_index_bytes(size_t chunk_size, size_t nchunks);
/* Stop the flushers and free everything; dirty data that was not synced
 * is lost, so call tfs_cache_sync_all() first.  Accepts NULL. */
void tfs_cache_free(struct tfs_cache *c);

/*
 * Copy len bytes at byte offset off of inode ino into the cache, as dirty
 * data.  Waits while the pool is full.  0, or -errno from ops->fill (a
 * sector only partly written is first read from the device).
 */
int tfs_cache_write(struct tfs_cache *c, uint64_t ino, uint64_t off,
		    const void *src, size_t len);
/*
 * Copy len bytes at off of ino out, from the cache or, filling it, from
 * the device.  A chunk that misses is filled whole, as reads tend to go
 * on, but not past eof, the file's size in bytes (UINT64_MAX: no limit),
 * which the caller keeps from shrinking meanwhile: a 4 KiB file, or a
 * file's last chunk, costs no read or clearing of the rest of the chunk.
 * 0 or -errno.
 */
int tfs_cache_read(struct tfs_cache *c, uint64_t ino, uint64_t off, void *dst,
		   size_t len, uint64_t eof);
/*
 * As tfs_cache_read(), but a whole chunk (or a chunk's bytes up to eof)
 * that is not in the cache is read from the device straight into dst
 * through ops->read_direct: no fill, no eviction, no copy when dst suits
 * the device (see read_direct).  For a reader whose buffer is where the
 * bytes must end up anyway, and who reads large pieces once; other
 * pieces go through the cache as tfs_cache_read()'s do.  The caller
 * keeps writers of ino out meanwhile: a chunk made dirty after the
 * lookup would be read around.
 */
int tfs_cache_read_around(struct tfs_cache *c, uint64_t ino, uint64_t off,
			  void *dst, size_t len, uint64_t eof);
/*
 * As tfs_cache_read_around(), with room bytes writable at dst (room >=
 * len): a read of a chunk's first len bytes that ends inside its last
 * block (or the block of eof), as a reader's buffer aligned to less than
 * a page makes the kernel cut a chunk-sized read, is read as the whole
 * chunk when room holds it, so that it goes around the cache too; the
 * bytes past len in dst are then the file's, not the caller's concern.
 */
int tfs_cache_read_into(struct tfs_cache *c, uint64_t ino, uint64_t off,
			void *dst, size_t len, size_t room, uint64_t eof);

/*
 * Zero-copy reads.  One piece of a pinned read: len bytes at data, in
 * cache memory that stays as it is (no eviction, no reuse) until
 * tfs_cache_unpin(); ref is the cache's.  Writers may still change the
 * bytes meanwhile, as they may during a tfs_cache_read() copy.
 */
struct tfs_cache_piece {
	const void *data;
	size_t len;
	void *ref;
};
/*
 * Pin bytes [off, off + len) of ino in the cache, filling them from the
 * device as tfs_cache_read() does (eof alike), one piece per chunk, into
 * pc (max pieces).  Returns the number of pieces (0 for len 0), or -E2BIG (more
 * than max chunks), -ENOBUFS (no room in the cache for them: use
 * tfs_cache_read()), or -errno from ops->fill; on error nothing stays
 * pinned.  The caller must tfs_cache_unpin() soon: a pinned chunk holds
 * up truncation and cannot be evicted.
 */
int tfs_cache_pin(struct tfs_cache *c, uint64_t ino, uint64_t off, size_t len,
		  uint64_t eof, struct tfs_cache_piece *pc, unsigned int max);
/* Unpin what tfs_cache_pin() pinned: refs[i] is its pc[i].ref. */
void tfs_cache_unpin(struct tfs_cache *c, void *const *refs, unsigned int n);

/* Write back ino's dirty data and wait for it: returns once every write
 * to ino that returned before this call is through ops->write. */
void tfs_cache_sync(struct tfs_cache *c, uint64_t ino);
/* Start writing back ino's dirty data, without waiting (close). */
void tfs_cache_start_flush(struct tfs_cache *c, uint64_t ino);
/* Write back everything and wait. */
void tfs_cache_sync_all(struct tfs_cache *c);
/*
 * Drop chunks [from, to) of ino, dirty or not, after any write-back in
 * progress ends (truncate, hole punching).  The caller keeps writers and
 * readers of ino out.
 */
void tfs_cache_drop(struct tfs_cache *c, uint64_t ino, uint64_t from,
		    uint64_t to);
/* Drop every chunk of ino without waiting (its inode is gone). */
void tfs_cache_forget(struct tfs_cache *c, uint64_t ino);
/*
 * Wait until every ops->write call in progress when this was called has
 * returned: blocks freed before the call can then be reused safely.
 */
void tfs_cache_barrier(struct tfs_cache *c);

/*
 * Check the cache's invariants (each chunk on the list of its state,
 * counters equal to the lists' lengths and within the budgets, flags
 * consistent with states, hash membership, write order of the waiting
 * chunks; see cache.c).  0 or -EUCLEAN.  Takes the cache's lock; O(number
 * of chunks).  Builds with TFS_CHECKS call it by themselves as the cache
 * changes, and abort when it fails.
 */
int tfs_cache_check(struct tfs_cache *c);

/* Bytes of ino held in RAM. */
uint64_t tfs_cache_bytes_of(struct tfs_cache *c, uint64_t ino);

/* Counters (counters.h). */
void tfs_cache_get_stats(struct tfs_cache *c, struct tfs_cache_stats *s);

#endif
