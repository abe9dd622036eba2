/*
 * mkfs.h: format a device or an image file as tensorfs (the engine of
 * mkfs.tensorfs).
 */
#ifndef TFS_MKFS_H
#define TFS_MKFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What mkfs is asked to do. */
struct tfs_mkfs_opts {
	uint64_t size; /* bytes (rounded down to blocks); 0: all of it */
	int force;     /* overwrite a file system; format part of an image */
	uid_t uid;     /* owner of the root directory */
	gid_t gid;
	uint64_t stripe; /* bytes of a stripe unit on a set; 0: 1 MiB */
};

/* What mkfs made. */
struct tfs_mkfs_info {
	uint64_t size;	     /* bytes formatted */
	uint64_t data_bytes; /* of which the data area: file data and
				   the checkpoints, which grow in it */
	uint64_t meta_bytes; /* and the fixed metadata: superblocks and
				   journal */
};

/*
 * Format the block device or image file at path as an empty tensorfs
 * whose root directory is owned by o->uid:o->gid.
 *
 * With o->size, a missing path is created as a sparse image file of that
 * size and a smaller image is extended; an image or device larger than
 * o->size is formatted in its first o->size bytes only with o->force.
 * Without o->force, a block device that already holds a tensorfs, or
 * anything libblkid knows (a file system, a partition table, a RAID or
 * LVM member, swap, an encrypted volume), is refused, and so is an image file that holds
 * anything (st_size and st_blocks both nonzero), the message naming what
 * it seems to be (a torch.save checkpoint, a .npy or safetensors file,
 * a zip, gzip, ext2/3/4 or XFS image, a tensorfs, or data); an empty or
 * wholly sparse file is formatted.  A device in use (mounted) is always
 * refused.  The minimum size is tfs_mkfs_limits()'s min_size.
 *
 * Returns 0 with what was made in *info, or -errno with a sentence for
 * the user in err (no program name, no newline; truncated to errlen):
 * -EBUSY in use, -EEXIST a file system or data is there or the image is
 * larger than o->size (give force), -ENOSPC too small, -ENOTBLK neither
 * a block device nor a regular file, or the error of the system call
 * that failed.  An image file created here is removed again on failure.
 * The device is opened with an exclusive lock while this runs.
 */
int tfs_mkfs(const char *path, const struct tfs_mkfs_opts *o,
	     struct tfs_mkfs_info *info, char *err, size_t errlen);

/*
 * The same for a set of n members (1..64), devices or images in any
 * mix, each prepared, checked and sized as tfs_mkfs() does one (o->size
 * is each image's size), formatted as one file system whose data is
 * striped over them in o->stripe units.  The first path holds the
 * journal.  *info adds up every member.  More errors: -EINVAL for a
 * count or stripe unit out of range, -EEXIST for a path given twice.
 * The images created here are removed again on failure.
 */
int tfs_mkfs_set(const char *const *paths, unsigned int n,
		 const struct tfs_mkfs_opts *o, struct tfs_mkfs_info *info,
		 char *err, size_t errlen);

/* The sizes mkfs works with, for help texts: read back from the layout
 * code itself, so that what they say is what tfs_mkfs() does. */
struct tfs_mkfs_limits {
	uint64_t min_size;	   /* bytes: the smallest file system */
	uint64_t journal_fraction; /* the journal is 1/journal_fraction
				      of the device, */
	uint64_t journal_min;	   /* at least this many bytes */
	uint64_t journal_max;	   /* and at most this many */
	uint64_t member_min;	   /* bytes: the smallest member past the
				      first of a set */
	unsigned int set_max;	   /* members a set has at most */
	uint64_t stripe_max;	   /* bytes: the largest stripe unit */
};

/* Fill *l.  Thread safe; takes microseconds. */
void tfs_mkfs_limits(struct tfs_mkfs_limits *l);

/* The bytes of journal tfs_mkfs() gives a file system of size bytes;
 * 0 below the minimum size.  Thread safe. */
uint64_t tfs_mkfs_journal_bytes(uint64_t size);

#endif
