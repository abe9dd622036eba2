/*
 * statedir.h: part of the FUSE daemon (the adapter between the kernel's
 * FUSE requests and lib/ calls): the mount's state as read-only files in
 * /.tensorfs/.
 *
 *   .tensorfs/stats       "name value" per line (lib/stats.h)
 *   .tensorfs/stats.json  the same as one JSON object
 *   .tensorfs/metrics     Prometheus text format
 *   .tensorfs/config      the effective configuration, as an INI file
 *
 * The directory lives in the FUSE layer only: its inode numbers are above
 * any the file system gives out, readdir of the root does not list it
 * (so find, du and cp -r do not walk into it), it holds no blocks, and
 * every change in or to it fails with EROFS.  Each open renders the file
 * anew, so a reader sees one consistent snapshot.  A file's st_size is
 * the truthful length of its content: of a rendering made for the stat
 * call (a file not open), or of the open file's snapshot (fstat; the
 * daemon answers those with an attribute timeout of 0 so the kernel asks),
 * so that tools that trust st_size (wc -c, Python's read()) read it all.
 */
#ifndef TFS_STATEDIR_H
#define TFS_STATEDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "fs.h"

#define TFS_STATEDIR_NAME ".tensorfs"

/* tensorfs's own ioctls on /.tensorfs: tfs_ioctl.h */
#include "tfs_ioctl.h"

struct tfs_config;
struct tfs_transport;

/* What the virtual inodes' attributes show: the root's owner, the mount
 * time, and what the files' sizes are rendered from.  Part of the
 * daemon's state; set once before the session starts, read-only after,
 * so readers need no lock. */
struct tfs_statedir {
	uid_t uid;
	gid_t gid;
	time_t born;
	struct tfs_fs *fs;	      /* borrowed */
	const struct tfs_config *cfg; /* borrowed */
	/* what the connection negotiated (transport.c), shown after the
	 * counters; set before the session starts, or NULL */
	const struct tfs_transport *transport;
};

/* Fill *sd with the owner uid:gid, the time now, and the file system and
 * configuration the files render (both outlive sd's use). */
void tfs_statedir_init(struct tfs_statedir *sd, struct tfs_fs *fs,
		       const struct tfs_config *cfg, uid_t uid, gid_t gid);
/* Whether ino is the directory or one of its files. */
int tfs_statedir_is(uint64_t ino);
/* Whether ino is the directory itself. */
int tfs_statedir_is_dir(uint64_t ino);
/* Lookup of name in parent: 1 with *st if it is the directory or one of
 * its files, -ENOENT for another name inside it, 0 if not ours. */
int tfs_statedir_lookup(const struct tfs_statedir *sd, uint64_t parent,
			const char *name, struct stat *st);
/* Attributes of a virtual inode, a file's size that of its content
 * rendered now: 0, or -ENOENT (-ENOMEM if it cannot be rendered). */
int tfs_statedir_getattr(const struct tfs_statedir *sd, uint64_t ino,
			 struct stat *st);
/* Whether making, removing or renaming name in parent touches the
 * directory: the errno to fail with (EROFS, or EEXIST to create it), or
 * 0. */
int tfs_statedir_deny(uint64_t parent, const char *name, int creating);
/* The directory's entries after cookie, as tfs_readdir() gives them. */
int tfs_statedir_readdir(uint64_t cookie, tfs_fill_fn fill, void *arg);
/* A file's content now: malloc'd (caller frees), length in *len; NULL
 * with -errno in *len's place returned through rc. */
char *tfs_statedir_render(const struct tfs_statedir *sd, uint64_t ino,
			  size_t *len, int *rc);

#endif
