/*
 * refs.h: how many extents map each shared device block.
 *
 * A clone (tfs_copy_range() over whole blocks) makes two files' extents
 * map the same device blocks.  The table keeps, for every block mapped
 * by more than one extent, that count; a block it does not name is
 * mapped once or is free.  So a file system that never clones keeps an
 * empty table, and a block is free only when its count would drop below
 * one.
 *
 * The table is a set of non-overlapping ranges of device blocks, each
 * with one count >= 2, sorted by start; touching ranges with equal
 * counts are always merged, so a cloned extent is one range however many
 * times it was cloned.
 *
 * The changing calls report every piece of the range they were given
 * with the count it has after the change (fn(start, len, count, arg), in
 * block order), so the caller can journal it (format.h's REFCOUNT
 * record) and, for a count of 0 after tfs_refs_dec(), free the blocks.
 * A call that fails changes nothing and reports nothing.
 *
 * Not thread safe: the owner (meta.c's tree, under the file system's
 * metadata lock) serialises.
 */
#ifndef TFS_REFS_H
#define TFS_REFS_H

#include <stddef.h>
#include <stdint.h>

struct tfs_ref {
	uint64_t start, len;
	uint32_t count; /* >= 2 */
};

/* Zero-initialised is empty and holds no memory. */
struct tfs_refs {
	struct tfs_ref *r; /* sorted by start, owned (malloc) */
	size_t n, cap;
	uint64_t extra; /* sum of len x (count - 1): blocks mapped twice */
};

typedef void (*tfs_refs_fn)(uint64_t start, uint64_t len, uint32_t count,
			    void *arg);

void tfs_refs_init(struct tfs_refs *t);
void tfs_refs_release(struct tfs_refs *t);

/*
 * The count of block b (1 for a block the table does not name) and, in
 * *run (may be NULL), how many blocks from b on have that same count
 * (UINT64_MAX - b when no shared range follows).
 */
uint32_t tfs_refs_get(const struct tfs_refs *t, uint64_t b, uint64_t *run);
/* Whether any block of [start, start + len) is shared. */
int tfs_refs_any(const struct tfs_refs *t, uint64_t start, uint64_t len);

/*
 * One more extent maps [start, start + len), every block of which is
 * already mapped: each count goes up by one.  0, -EINVAL (len 0 or the
 * range wraps), -EOVERFLOW (a count would pass UINT32_MAX) or -ENOMEM.
 */
int tfs_refs_inc(struct tfs_refs *t, uint64_t start, uint64_t len,
		 tfs_refs_fn fn, void *arg);
/*
 * One extent fewer maps [start, start + len): each count goes down by
 * one; the pieces reported with count 0 were mapped once and are free
 * now.  0, -EINVAL or -ENOMEM (splitting a range needs memory).
 */
int tfs_refs_dec(struct tfs_refs *t, uint64_t start, uint64_t len,
		 tfs_refs_fn fn, void *arg);
/* Set the count of every block of the range (0 and 1 remove it from the
 * table), as a REFCOUNT record or a repair says.  0, -EINVAL, -ENOMEM. */
int tfs_refs_set(struct tfs_refs *t, uint64_t start, uint64_t len,
		 uint32_t count);

/* Ranges in the table; blocks mapped more than once, counted as many
 * times as they are mapped beyond the first. */
size_t tfs_refs_count(const struct tfs_refs *t);
uint64_t tfs_refs_extra(const struct tfs_refs *t);
/* Bytes of RAM the table holds. */
size_t tfs_refs_ram(const struct tfs_refs *t);

/* Call fn for every range in block order; stops on a non-zero return,
 * which it returns. */
int tfs_refs_walk(const struct tfs_refs *t,
		  int (*fn)(uint64_t start, uint64_t len, uint32_t count,
			    void *arg),
		  void *arg);

/* Ordering, no overlap, counts >= 2, len >= 1, touching equal ranges
 * merged, extra adding up: 0 or -EUCLEAN. */
int tfs_refs_check(const struct tfs_refs *t);

#endif
