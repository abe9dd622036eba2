/*
 * alloc.h: the free-space allocator of the data area.
 *
 * The allocator keeps the free extents of a range of device blocks
 * [first, first + count) in memory.  Nothing of it is stored on the device:
 * at mount the file system starts with everything free and marks the blocks
 * of every file's extents used (tfs_alloc_mark_used()), so free space is
 * always exactly the complement of the extent maps.
 *
 * Blocks are device block numbers (4 KiB units).  All functions are O(log n)
 * in the number of free extents.  A tfs_alloc is not thread safe: the caller
 * serialises access (the file system holds its metadata lock).
 */
#ifndef TFS_ALLOC_H
#define TFS_ALLOC_H

#include <stdint.h>

struct tfs_alloc;

/* A new allocator with [first, first + count) all free; NULL with errno
 * ENOMEM, or EINVAL if first + count does not fit in 64 bits (UINT64_MAX
 * must stay outside: it means "no goal").  Caller frees with
 * tfs_alloc_free(). */
struct tfs_alloc *tfs_alloc_new(uint64_t first, uint64_t count);
void tfs_alloc_free(struct tfs_alloc *a); /* accepts NULL */

/*
 * Allocate up to *count contiguous blocks.
 *
 * If 'goal' is a free block, the run starts exactly at 'goal' and extends
 * as far as it is free (a file growing sequentially stays contiguous).
 * Otherwise a new run starts at the first free extent, at or after the
 * allocator's rotating cursor (wrapping around), that holds *count blocks,
 * or failing that at the largest free extent; the cursor then moves past
 * the run plus a gap of min(*count * 16, 16 MiB worth of blocks) so that
 * concurrent sequential writers start apart and stay contiguous.
 * Pass goal = UINT64_MAX for "no goal".  (Only when memory has run out,
 * so that a free extent cannot be split, may the goal or the cursor be
 * passed over for a run at the edge of a free extent.)
 *
 * On success returns 0, sets *start and sets *count to the blocks given
 * (1 <= *count <= requested).  Returns -ENOSPC when nothing is free,
 * -EINVAL when *count is 0.
 */
int tfs_alloc_get(struct tfs_alloc *a, uint64_t goal, uint64_t *start,
		  uint64_t *count);

/*
 * As tfs_alloc_get(), inside blocks [lo, hi) only (a member of a set):
 * from 'goal' if it is free and inside, else from the first free extent
 * at or after lo that holds *count blocks, else from the first free
 * extent there is at or after lo; never past hi.  The cursor does not
 * move.  -ENOSPC when nothing in the range is free, -EINVAL when *count
 * is 0 or lo >= hi.
 */
int tfs_alloc_get_in(struct tfs_alloc *a, uint64_t lo, uint64_t hi,
		     uint64_t goal, uint64_t *start, uint64_t *count);

/* Return [start, start + count) to the free space, merging with neighbours.
 * Returns -EINVAL (and changes nothing) if any block of it is already free
 * or outside the allocator's range, or if count is 0; -ENOMEM (and changes
 * nothing) if it touches no free extent and memory for a new one ran out. */
int tfs_alloc_put(struct tfs_alloc *a, uint64_t start, uint64_t count);

/* Mark [start, start + count) used (at mount, for extents read from the
 * device).  Returns -EINVAL (and changes nothing) if any block of it is
 * not free or outside the range: two files claiming one block; -ENOMEM
 * (and changes nothing) if it splits a free extent and memory ran out. */
int tfs_alloc_mark_used(struct tfs_alloc *a, uint64_t start, uint64_t count);

/* Free blocks in all. */
uint64_t tfs_alloc_free_blocks(const struct tfs_alloc *a);
/* Free blocks inside [lo, hi) (a member of a set): O(log n) plus the
 * free extents in the range. */
uint64_t tfs_alloc_free_in(const struct tfs_alloc *a, uint64_t lo, uint64_t hi);
/* Number of free extents (for tests and fsck -v). */
uint64_t tfs_alloc_free_extents(const struct tfs_alloc *a);
/* Length of the largest free extent. */
uint64_t tfs_alloc_largest(const struct tfs_alloc *a);

/* Call fn for every free extent in ascending order; stops and returns fn's
 * value when it is non-zero.  fn must not modify the allocator. */
int tfs_alloc_walk(const struct tfs_alloc *a,
		   int (*fn)(uint64_t start, uint64_t count, void *arg),
		   void *arg);

/*
 * Discard tracking: which free blocks may be discarded (alloc.c has the
 * design, journal.c's J11 the rule).  tfs_alloc_track_discard() starts it,
 * with all the free space counted as just freed: 0 or -ENOMEM.  Then:
 *
 *   tfs_alloc_put_freed()  as tfs_alloc_put(), for blocks a durable
 *                          commit freed: they wait for two checkpoints
 *   tfs_alloc_age()        a checkpoint is durable: the blocks freed
 *                          before the one before it become ready
 *   tfs_alloc_take_discard()  take up to max blocks of the first ready
 *                          extent, in block order, whose part inside
 *                          blocks [lo, hi) is at least minlen long (0
 *                          counts as 1), out of the free space: that
 *                          part's start in *start, its length (at most
 *                          max) in *count.  1, or 0 when none is ready,
 *                          or -ENOMEM (the blocks then stay free, not
 *                          discarded).  The caller discards them and
 *                          gives them back with tfs_alloc_put(), which
 *                          does not track them
 *
 * Blocks handed out by tfs_alloc_get() or tfs_alloc_mark_used() stop
 * waiting.  Without tracking, put_freed is put and the rest do nothing.
 */
int tfs_alloc_track_discard(struct tfs_alloc *a);
int tfs_alloc_put_freed(struct tfs_alloc *a, uint64_t start, uint64_t count);
void tfs_alloc_age(struct tfs_alloc *a);
int tfs_alloc_take_discard(struct tfs_alloc *a, uint64_t lo, uint64_t hi,
			   uint64_t minlen, uint64_t max, uint64_t *start,
			   uint64_t *count);
/* Blocks waiting for a checkpoint (not ready yet), and ready ones. */
uint64_t tfs_alloc_discard_waiting(const struct tfs_alloc *a);
uint64_t tfs_alloc_discard_ready(const struct tfs_alloc *a);

/* Check the internal invariants (ordering, no adjacent free extents left
 * unmerged, counts add up).  Returns 0 or -EUCLEAN. Debug builds call it
 * after every change. */
int tfs_alloc_check(const struct tfs_alloc *a);

#endif
