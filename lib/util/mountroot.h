/*
 * mountroot.h: the root of the tensorfs mount a path lies on, for the
 * tools that talk to a mount through its /.tensorfs directory.
 */
#ifndef TFS_MOUNTROOT_H
#define TFS_MOUNTROOT_H

#include <stddef.h>

/*
 * The root of the tensorfs mount that holds path (any file or directory
 * on it), into root: path's real path, then each parent on the same file
 * system (same st_dev, as df finds a path's file system); the highest of
 * them holding a .tensorfs directory, which only a tensorfs mount's root
 * does.  0, -ENOENT if none does (not on a tensorfs), -ENAMETOOLONG if
 * it does not fit in len, or -errno of realpath()/stat() of path.
 */
int tfs_mount_root(const char *path, char *root, size_t len);

#endif
