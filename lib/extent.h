/*
 * extent.h: the extent map of one file.
 *
 * A map is a set of non-overlapping extents, each mapping the file blocks
 * [lblk, lblk + len) to the device blocks [pblk, pblk + len).  An extent
 * may be UNWRITTEN: its blocks belong to the file (fallocate) but read as
 * zeros until written.  Blocks not covered by an extent are holes.
 * Adjacent extents contiguous in both file and device space with equal
 * flags are always merged, so a file written sequentially into
 * contiguous space is one extent.
 *
 * Blocks are 4 KiB units.  Not thread safe: the owner serialises.
 */
#ifndef TFS_EXTENT_H
#define TFS_EXTENT_H

#include <stdint.h>
#include <stddef.h>

#define TFS_EXT_UNWRITTEN 0x1u

struct tfs_extent {
	uint64_t lblk;	/* first file block */
	uint64_t pblk;	/* first device block */
	uint64_t len;	/* blocks, >= 1 */
	uint32_t flags; /* TFS_EXT_* */
};

/* An extent map, embedded by its owner (in every inode: 16 bytes).
 * Zero-initialised is empty and holds no memory; the first extent takes
 * an array of one, which doubles as it fills. */
struct tfs_extmap {
	struct tfs_extent *ext; /* sorted by lblk, owned (malloc) */
	uint32_t n, cap;
};

void tfs_extmap_init(struct tfs_extmap *m);
void tfs_extmap_release(struct tfs_extmap *m);

/*
 * Find what maps file block 'lblk'.  Returns 1 and fills *out with the
 * extent clipped to start at lblk if it is mapped; returns 0 and sets
 * out->len to the number of hole blocks before the next extent (UINT64_MAX
 * - lblk if none) and out->pblk = 0 if it is a hole.
 */
int tfs_extmap_lookup(const struct tfs_extmap *m, uint64_t lblk,
		      struct tfs_extent *out);

/*
 * Map [lblk, lblk + len) to [pblk, pblk + len) with 'flags', replacing
 * whatever mapped any part of that range.  The device ranges that were
 * replaced are reported through 'freed' (may be NULL) so the caller can
 * release them; a range is reported only once, in ascending lblk order.
 * Device blocks inside [pblk, pblk + len) are not reported: they stay
 * with the file (an UNWRITTEN extent written in place).  'freed' runs
 * before the map changes and must not use the map.
 * Returns 0, -EINVAL (len is 0, a range wraps past 2^64 or flags has
 * unknown bits; map unchanged) or -ENOMEM (map unchanged).
 */
int tfs_extmap_set(struct tfs_extmap *m, uint64_t lblk, uint64_t pblk,
		   uint64_t len, uint32_t flags,
		   void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		   void *arg);

/*
 * Unmap [lblk, lblk + len) (len = UINT64_MAX - lblk, or more: to the end);
 * the device ranges it held are reported through 'freed' as for
 * tfs_extmap_set().  Returns 0 or -ENOMEM (a split needed memory; map
 * unchanged).
 */
int tfs_extmap_punch(struct tfs_extmap *m, uint64_t lblk, uint64_t len,
		     void (*freed)(uint64_t pblk, uint64_t len, void *arg),
		     void *arg);

/* Number of extents, and blocks mapped (written and unwritten).  A map
 * holds at most UINT32_MAX extents: set and punch fail with -ENOMEM
 * beyond. */
size_t tfs_extmap_count(const struct tfs_extmap *m);
uint64_t tfs_extmap_blocks(const struct tfs_extmap *m);

/* Check ordering, no overlap, len >= 1, merged neighbours. 0 or -EUCLEAN. */
int tfs_extmap_check(const struct tfs_extmap *m);

#endif
