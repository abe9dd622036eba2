/*
 * set.h: find the members of a device set and open them in order.
 *
 * A file system on several devices (format.h: a set of members) is
 * named by its members joined with ':' (bcachefs's form): "A:B:C", in
 * any order.  Each member's superblock says which member it is; the set
 * is opened with its members in that order, so that device offsets
 * (io.h) name the right one.
 */
#ifndef TFS_SET_H
#define TFS_SET_H

#include <stddef.h>

#include "io.h"

/*
 * Open the set spec names: one path (also when the whole of spec, ':'
 * included, names a file or device), or paths joined with ':'.  flags
 * as tfs_dev_open()'s.  Several paths are ordered by the member index
 * their superblocks carry, and refused, with a sentence naming the
 * device and what to do in err (no newline), when one has no tensorfs
 * superblock (-EINVAL), belongs to another file system (-EINVAL), is
 * the same member as another (a copy: -EEXIST), when members are
 * missing or too many are given (-EINVAL), or when a member's size is
 * not what the set recorded (-EUCLEAN).  One path is opened as it is:
 * the journal's load checks that it is a whole set.  Returns 0 and
 * *out, or -errno.
 */
int tfs_set_open(const char *spec, int flags, struct tfs_dev **out, char *err,
		 size_t errlen);

/*
 * A flag for tfs_set_open() (beside io.h's TFS_DEV_*), for tensorfs-fsck:
 * when exactly one path given holds no valid superblock copy and exactly
 * one member is missing, of that path's size (at most, for a block
 * device), that path is
 * taken as that member (its superblocks were damaged; the journal's
 * member, the first, is never adopted so).  Without it, the refusal says
 * so and names the repair.
 */
#define TFS_SET_ADOPT 0x100

#endif
