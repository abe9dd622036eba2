/*
 * mkfs.c: format a device or an image file (see mkfs.h), for
 * mkfs.tensorfs.
 *
 * Refuses, unless force, to overwrite a device that holds a tensorfs or
 * another known file system; always refuses one that is in use (a
 * tensorfs mount holds an exclusive lock on its device; a block device
 * mounted by the kernel cannot be opened O_EXCL).  With a size it creates
 * or extends a sparse image file; formatting writes only the superblocks,
 * a first journal block and a small checkpoint (tfs_journal_format()),
 * so any size takes milliseconds.  The order of the checks is the order
 * of the messages a user sees: size, path, open, what is there, fit.
 */
#include "mkfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "io.h"
#include "journal.h"
#include "units.h"

/* What file system, if any, the first blocks show. */
static const char *signature(struct tfs_dev *d)
{
	uint8_t *b = tfs_io_alloc(2 * TFS_BLOCK_SIZE);
	const char *what = NULL;

	if (!b)
		return NULL;
	if (tfs_dev_size(d) >= 2 * TFS_BLOCK_SIZE &&
	    !tfs_dev_read(d, b, 2 * TFS_BLOCK_SIZE, 0)) {
		if (!memcmp(b, TFS_MAGIC, 8) ||
		    !memcmp(b + TFS_BLOCK_SIZE, TFS_MAGIC, 8))
			what = "a tensorfs file system";
		else if (b[1080] == 0x53 && b[1081] == 0xef)
			what = "an ext2/3/4 file system";
		else if (!memcmp(b, "XFSB", 4))
			what = "an XFS file system";
	}
	tfs_io_free(b);
	return what;
}

/*
 * The file at path must be a block device or a regular file; with a
 * size, a missing one is created as an empty image (*created = 1).
 */
static int prepare_path(const char *path, uint64_t size, int *created,
			char *err, size_t errlen)
{
	struct stat st;
	int fd, e;

	if (stat(path, &st) == 0) {
		if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
			return 0;
		snprintf(err, errlen, "'%s' is neither a block device nor a "
			 "regular file", path);
		return -ENOTBLK;
	}
	e = errno;
	if (e != ENOENT || !size) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(e),
			 e == ENOENT ? "; give -s SIZE to create an image file"
				     : "");
		return -e;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "cannot create '%s': %s", path,
			 strerror(e));
		return -e;
	}
	close(fd);
	*created = 1;
	return 0;
}

static int open_device(const char *path, struct tfs_dev **d, char *err,
		       size_t errlen)
{
	int rc = tfs_dev_open(path, 0, d);

	if (rc == -EBUSY)
		snprintf(err, errlen, "'%s' is in use (mounted by tensorfs or "
			 "another file system); unmount it first", path);
	else if (rc)
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 strerror(-rc));
	return rc;
}

/*
 * How much of the device to format: *size if given (an image file is
 * extended to it; a device or an image larger than it only with force),
 * else all of it; at least the minimum.
 */
static int fit_size(struct tfs_dev *d, const char *path, int force,
		    uint64_t *size, char *err, size_t errlen)
{
	uint64_t have = tfs_dev_size(d);
	char h1[32], h2[32], h3[32];
	int rc;

	if (!*size) {
		*size = have;
	} else if (tfs_dev_is_blockdev(d)) {
		if (*size > have) {
			snprintf(err, errlen, "-s %s is larger than the device "
				 "'%s' (%s)",
				 tfs_format_size(*size, h1, sizeof(h1)), path,
				 tfs_format_size(have, h2, sizeof(h2)));
			return -ENOSPC;
		}
	} else if (*size > have) {
		rc = tfs_dev_extend(d, *size);
		if (rc) {
			snprintf(err, errlen, "cannot extend '%s' to %s: %s",
				 path, tfs_format_size(*size, h1, sizeof(h1)),
				 strerror(-rc));
			return rc;
		}
	} else if (*size < have && !force) {
		snprintf(err, errlen, "'%s' is %s, larger than -s %s; use -f "
			 "to format only the first %s", path,
			 tfs_format_size(have, h1, sizeof(h1)),
			 tfs_format_size(*size, h2, sizeof(h2)),
			 tfs_format_size(*size, h3, sizeof(h3)));
		return -EEXIST;
	}
	if (*size < TFS_MIN_DEVICE_BYTES) {
		snprintf(err, errlen, "'%s' is too small (%s); the minimum is "
			 "64 MiB", path,
			 tfs_format_size(*size, h1, sizeof(h1)));
		return -ENOSPC;
	}
	return 0;
}

int tfs_mkfs(const char *path, const struct tfs_mkfs_opts *o,
	     struct tfs_mkfs_info *info, char *err, size_t errlen)
{
	uint64_t size = o->size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	struct tfs_dev *d = NULL;
	struct tfs_super lay;
	const char *what;
	int created = 0, rc;
	char h1[32];

	/* o->size, not size: -s 1K rounds down to 0, "no size given" */
	if (o->size && size < TFS_MIN_DEVICE_BYTES) {
		snprintf(err, errlen, "%s: %s is too small; the minimum is "
			 "64 MiB", path,
			 tfs_format_size(o->size, h1, sizeof(h1)));
		return -ENOSPC;
	}
	rc = prepare_path(path, size, &created, err, errlen);
	if (rc)
		return rc;
	rc = open_device(path, &d, err, errlen);
	if (rc)
		goto out_unlink;
	if (!created && !o->force && (what = signature(d))) {
		snprintf(err, errlen, "'%s' already contains %s; use -f to "
			 "overwrite it (everything on it is lost)", path, what);
		rc = -EEXIST;
		goto out_close;
	}
	rc = fit_size(d, path, o->force, &size, err, errlen);
	if (rc)
		goto out_close;
	/* The file system records its size: with -f and a smaller -s, it
	 * uses only the first 'size' bytes. */
	rc = tfs_journal_format(d, size, o->uid, o->gid);
	if (rc) {
		snprintf(err, errlen, "formatting '%s' failed: %s", path,
			 strerror(-rc));
		goto out_close;
	}
	tfs_layout(size / TFS_BLOCK_SIZE, &lay);
	info->size = size;
	info->data_bytes = (lay.dev_blocks - lay.data_start) * TFS_BLOCK_SIZE;
	info->meta_bytes = lay.data_start * TFS_BLOCK_SIZE;
out_close:
	tfs_dev_close(d);
out_unlink:
	if (rc && created)
		unlink(path);
	return rc;
}

