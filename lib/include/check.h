/*
 * check.h: the consistency check behind tensorfs-fsck.
 *
 * Loading a file system already verifies what checksums can (superblock,
 * checkpoint, journal transactions) and that no two extents claim one
 * block (the allocator refuses).  tfs_check() verifies the rest: every
 * entry names a live inode, every directory has exactly one entry and
 * its ".." is right, link counts, reachability from the root, each
 * extent map's order, and that the blocks of files and checkpoints plus
 * free space are the data area.
 * When loading fails because extents overlap, tfs_check_extents() says
 * which inodes share which blocks.  These are the invariants J6, J9 and
 * J10 of the crash protocol (lib/journal.c); each check names its own.
 */
#ifndef TFS_CHECK_H
#define TFS_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "fs.h"

struct tfs_check_result {
	uint64_t errors;   /* problems found */
	uint64_t repaired; /* of those, repaired */
	uint64_t orphans;  /* unlinked inodes, freed at next mount */
	uint64_t files, dirs, symlinks, others;
	uint64_t extents; /* in all regular files */
};

#define TFS_CHECK_REPAIR  0x1 /* fix what can be fixed (fs opened rw) */
#define TFS_CHECK_VERBOSE 0x2 /* list every file with its extents */

/*
 * Check fs, which no other thread may use meanwhile.  Findings go to
 * out, one line each.  With TFS_CHECK_REPAIR the fixes are made in
 * memory and the file system is told its tree changed: the caller then
 * syncs or closes fs to write them.  Returns 0 or -ENOMEM.
 */
int tfs_check(struct tfs_fs *fs, int flags, FILE *out,
	      struct tfs_check_result *res);

/*
 * For a file system that tfs_fs_open() refused with -EUCLEAN: load the
 * metadata of the device at path read-only (superblock, checkpoint,
 * journal, as a mount does, without the allocator that refused it) and
 * compare every extent of every inode by device block.  Each block range
 * that two extents share, and each extent outside the data area, goes to
 * out as one line naming the inodes and device blocks (at most 1000
 * lines, then a count).  Returns the number of such conflicts (0: the
 * extents are not what is wrong), or -errno with a sentence in err when
 * the metadata cannot be loaded at all.
 */
int tfs_check_extents(const char *path, FILE *out, char *err, size_t errlen);

/*
 * Read both superblock copies of the device at path (read-only, without
 * the lock, so before tfs_fs_open(): opening for repair writes a
 * superblock and would hide a damaged copy).  *bad gets bit i set for
 * each copy i that does not decode (a mount survives one).  Returns 0 or
 * -errno when the device cannot be read.
 */
int tfs_check_supers(const char *path, int *bad);

/*
 * The same for the members of a set past the first (which hold nothing
 * else): *bad gets bit m set for each member m (from 0) with a copy that
 * does not decode as that member's; one that lost both is found by
 * elimination (set.h's TFS_SET_ADOPT).  0, or -errno when the set
 * cannot be opened or read.
 */
int tfs_check_member_supers(const char *path, uint64_t *bad);

#endif
