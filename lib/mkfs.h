/*
 * mkfs.h: format a device or an image file as tensorfs.
 */
#ifndef TFS_MKFS_H
#define TFS_MKFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What mkfs is asked to do. */
struct tfs_mkfs_opts {
	uint64_t size;	/* bytes (rounded down to blocks); 0: all of it */
	int force;	/* overwrite a file system; format part of an image */
	uid_t uid;	/* owner of the root directory */
	gid_t gid;
};

/* What mkfs made. */
struct tfs_mkfs_info {
	uint64_t size;		/* bytes formatted */
	uint64_t data_bytes;	/* of which the data area */
	uint64_t meta_bytes;	/* and the metadata: journal, checkpoints */
};

int tfs_mkfs(const char *path, const struct tfs_mkfs_opts *o,
	     struct tfs_mkfs_info *info, char *err, size_t errlen);

#endif
