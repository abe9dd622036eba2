/*
 * mkfs.c: format a device or an image file (see mkfs.h), for
 * mkfs.tensorfs.
 *
 * Refuses, unless force, to overwrite what is there: a block device
 * that holds a tensorfs, or anything libblkid recognises (a file system,
 * a partition table, a RAID or LVM member, swap, an encrypted volume:
 * what mkfs.ext4 asks about), or an image file that holds anything at
 * all (a file with no blocks allocated, empty or
 * sparse, holds nothing); the refusal names what the first bytes look
 * like, so that "mkfs.tensorfs model.pt" says it is a checkpoint before
 * it is gone.  Always refuses a device in use (a tensorfs mount holds an
 * exclusive lock on its device; a block device mounted by the kernel
 * cannot be opened O_EXCL).  With a size it creates or extends a sparse
 * image file; formatting writes only the superblocks, a first journal
 * block and a small checkpoint (tfs_journal_format()), so any size takes
 * milliseconds.  The order of the checks is the order of the messages a
 * user sees: size, path, open, what is there, fit.
 *
 * How big the journal is, tfs_layout() (format.c) alone decides;
 * tfs_mkfs_limits() reads its rule back from it for --help, so the help
 * cannot say another.
 */
#include "mkfs.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "io.h"
#include "journal.h"
#include "read.h"
#include "tensor.h"
#include "torch.h"
#include "units.h"

/* ===== the layout's rule ===== */

static uint64_t journal_blocks(uint64_t dev_blocks)
{
	struct tfs_super s;

	if (tfs_layout(dev_blocks, &s))
		return 0;
	return s.journal_blocks;
}

uint64_t tfs_mkfs_journal_bytes(uint64_t size)
{
	return journal_blocks(size / TFS_BLOCK_SIZE) * TFS_BLOCK_SIZE;
}

void tfs_mkfs_limits(struct tfs_mkfs_limits *l)
{
	uint64_t min_blocks = TFS_MIN_DEVICE_BYTES / TFS_BLOCK_SIZE;
	uint64_t max_blocks = UINT64_MAX / TFS_BLOCK_SIZE;
	uint64_t jmin = journal_blocks(min_blocks);
	uint64_t lo = min_blocks, hi = max_blocks, mid;

	l->min_size = TFS_MIN_DEVICE_BYTES;
	l->member_min = TFS_MIN_MEMBER_BYTES;
	l->set_max = TFS_SET_MAX;
	l->stripe_max = (uint64_t)TFS_STRIPE_MAX * TFS_BLOCK_SIZE;
	l->journal_min = jmin * TFS_BLOCK_SIZE;
	l->journal_max = journal_blocks(max_blocks) * TFS_BLOCK_SIZE;
	/*
	 * Between the two the journal is dev_blocks / fraction, rounded
	 * down: the smallest device whose journal passes the minimum is
	 * (jmin + 1) * fraction blocks.  Found by bisection, on the
	 * function itself, rather than copied from it.
	 */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (journal_blocks(mid) > jmin)
			hi = mid;
		else
			lo = mid + 1;
	}
	l->journal_fraction = lo / (jmin + 1);
}

/* ===== what is there ===== */

/* Bytes read of a regular file to recognise it: both superblock copies
 * of a tensorfs, and the ext2/3/4 magic at byte 1080. */
#define PROBE_BYTES (2 * TFS_BLOCK_SIZE)

/* What file system, if any, the first n bytes show; NULL if none. */
static const char *fs_signature(const uint8_t *b, size_t n)
{
	if ((n >= 8 && !memcmp(b, TFS_MAGIC, 8)) ||
	    (n >= TFS_BLOCK_SIZE + 8 &&
	     !memcmp(b + TFS_BLOCK_SIZE, TFS_MAGIC, 8)))
		return "a tensorfs file system";
	if (n >= 1082 && b[1080] == 0x53 && b[1081] == 0xef)
		return "an ext2/3/4 file system";
	if (n >= 4 && !memcmp(b, "XFSB", 4))
		return "an XFS file system";
	return NULL;
}

/* What file system, if any, member m's first blocks show. */
static const char *signature(struct tfs_dev *d, unsigned int m)
{
	uint8_t *b = tfs_io_alloc(PROBE_BYTES);
	const char *what = NULL;

	if (!b)
		return NULL;
	if (tfs_dev_member_size(d, m) >= PROBE_BYTES &&
	    !tfs_dev_read(d, b, PROBE_BYTES, tfs_dev_off(m, 0)))
		what = fs_signature(b, PROBE_BYTES);
	tfs_io_free(b);
	return what;
}

/*
 * What libblkid finds on the block device at path, as a noun phrase in
 * what (what its superblock and partition probes name; the first found
 * of a partition table, a file system, or another signature): 1 found,
 * 0 nothing, -errno if it could not look (the device is already open, so
 * that is rare, and refused: formatting what was not looked at is not
 * what -f's absence means).
 */
static int blkid_kind(const char *path, char *what, size_t len)
{
	const char *type = NULL, *usage = NULL, *pt = NULL;
	blkid_probe pr = NULL;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		rc = -ENOMEM;
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
						  BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	rc = blkid_do_safeprobe(pr);
	if (rc == 1) { /* nothing */
		rc = 0;
		goto out;
	}
	if (rc == -2) { /* signatures that contradict each other */
		snprintf(what, len, "signatures of more than one kind");
		rc = 1;
		goto out;
	}
	if (rc < 0) {
		rc = -EIO;
		goto out;
	}
	blkid_probe_lookup_value(pr, "PTTYPE", &pt, NULL);
	blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
	blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
	if (pt)
		snprintf(what, len, "a partition table (%s)", pt);
	else if (type && !strcmp(type, "swap"))
		snprintf(what, len, "a swap area");
	else if (type && usage && !strcmp(usage, "filesystem"))
		snprintf(what, len, "a %s file system", type);
	else if (type && usage && !strcmp(usage, "raid"))
		snprintf(what, len, "a RAID or volume member (%s)", type);
	else if (type && usage && !strcmp(usage, "crypto"))
		snprintf(what, len, "an encrypted volume (%s)", type);
	else
		snprintf(what, len, "a %s signature", type ? type : "known");
	rc = 1;
out:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
	return rc;
}

static ssize_t read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(*(int *)ctx, buf, len, (off_t)off);

	return n < 0 ? -errno : n;
}

/* Whether the zip archive fd holds (size bytes) reads as a torch.save
 * checkpoint through the one door into tensor files (lib/tensor/read.h);
 * an np.savez archive, or a zip of neither, is not. */
static int zip_is_torch(int fd, uint64_t size)
{
	struct tfs_tensor_list *l = NULL;
	enum tfs_tensor_format fmt = TFS_TENSOR_RAW;
	char err[128];
	int rc =
	    tfs_tensor_read(read_at, &fd, size, 0, &l, &fmt, err, sizeof(err));

	tfs_tensor_list_free(l);
	return !rc && fmt == TFS_TENSOR_TORCH;
}

/*
 * What the regular file fd (size bytes), whose first n bytes are b,
 * seems to hold, as a noun phrase for a message; "a tensorfs file
 * system" for one mkfs made.
 */
static const char *file_kind(int fd, uint64_t size, const uint8_t *b, size_t n)
{
	static const uint8_t gzip[] = { 0x1f, 0x8b };
	const char *fs = fs_signature(b, n);

	if (fs && !strcmp(fs, "a tensorfs file system"))
		return fs;
	if (fs)
		return !strcmp(fs, "an XFS file system")
			   ? "an XFS file system image"
			   : "an ext2/3/4 file system image";
	if (n >= 2 && !memcmp(b, gzip, 2))
		return "gzip data";
	if (n >= 4 && !memcmp(b, "PK\5\6", 4))
		return "a zip archive";
	switch (tfs_tensor_probe(b, n, NULL)) {
	case TFS_TENSOR_NPY:
		return "a NumPy .npy array";
	case TFS_TENSOR_SAFETENSORS:
		return "a safetensors file";
	case TFS_TENSOR_TORCH:
		if (tfs_torch_is_legacy(b, n))
			return "a torch.save checkpoint";
		return zip_is_torch(fd, size) ? "a torch.save checkpoint"
					      : "a zip archive";
	default:
		return "data of no format mkfs knows";
	}
}

static int zeros(const uint8_t *b, size_t n)
{
	while (n && !b[n - 1])
		n--;
	return n == 0;
}

/*
 * Whether the image file at path may be formatted without force: 0 if
 * it holds nothing (no bytes, or no blocks allocated: sparse), else
 * -EEXIST with what it holds in err.  A tensorfs is refused as on a
 * block device; anything else "holds data".  (No blocks is tested
 * rather than all zeros: reading a 100 GiB image to the end is not
 * what a user waits for; an fallocate()d or zero-filled file needs -f.)
 */
static int check_image(const char *path, char *err, size_t errlen)
{
	uint8_t b[PROBE_BYTES];
	const char *what;
	struct stat st;
	size_t n = 0;
	ssize_t r;
	char h1[32];
	int fd, rc = -EEXIST;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot read '%s': %s", path,
			 strerror(-rc));
		goto out;
	}
	if (st.st_size == 0) {
		rc = 0;
		goto out;
	}
	while (n < sizeof(b)) {
		r = pread(fd, b + n, sizeof(b) - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	/* no blocks: a hole, unless the bytes are inline in the inode (as
	 * ext4's inline_data keeps a small file's), which reads as such */
	if (st.st_blocks == 0 && zeros(b, n)) {
		rc = 0;
		goto out;
	}
	what = file_kind(fd, (uint64_t)st.st_size, b, n);
	if (!strcmp(what, "a tensorfs file system"))
		snprintf(err, errlen,
			 "'%s' already contains %s; use -f to "
			 "overwrite it (everything on it is lost)",
			 path, what);
	else
		snprintf(err, errlen,
			 "%s: holds data (%s, %s); formatting it "
			 "would destroy it: give another path, or -f to "
			 "overwrite it",
			 path, what,
			 tfs_format_size((uint64_t)st.st_size, h1, sizeof(h1)));
out:
	if (fd >= 0)
		close(fd);
	return rc;
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
		snprintf(err, errlen,
			 "%s: neither a block device nor a "
			 "regular file",
			 path);
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

static int open_devices(const char *const *paths, unsigned int n,
			struct tfs_dev **d, char *err, size_t errlen)
{
	int bad = -1;
	int rc = tfs_dev_open_set(paths, n, 0, d, &bad);
	const char *path = bad >= 0 ? paths[bad] : paths[0];

	if (rc == -EBUSY)
		snprintf(err, errlen,
			 "'%s' is in use (mounted by tensorfs or "
			 "another file system); unmount it first",
			 path);
	else if (rc == -EEXIST)
		snprintf(err, errlen,
			 "'%s' is given twice (it names the same file or "
			 "device as another one given)",
			 path);
	else if (rc)
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 strerror(-rc));
	return rc;
}

/*
 * How much of member m to format: *size if given (an image file is
 * extended to it; a device or an image larger than it only with force),
 * else all of it; at least min bytes.
 */
static int fit_size(struct tfs_dev *d, unsigned int m, const char *path,
		    int force, uint64_t min, uint64_t *size, char *err,
		    size_t errlen)
{
	uint64_t have = tfs_dev_member_size(d, m);
	char h1[32], h2[32], h3[32];
	int rc;

	if (!*size) {
		*size = have;
	} else if (tfs_dev_member_is_blockdev(d, m)) {
		if (*size > have) {
			snprintf(err, errlen,
				 "-s %s is larger than the device "
				 "'%s' (%s)",
				 tfs_format_size(*size, h1, sizeof(h1)), path,
				 tfs_format_size(have, h2, sizeof(h2)));
			return -ENOSPC;
		}
	} else if (*size > have) {
		rc = tfs_dev_extend(d, m, *size);
		if (rc) {
			snprintf(err, errlen, "cannot extend '%s' to %s: %s",
				 path, tfs_format_size(*size, h1, sizeof(h1)),
				 strerror(-rc));
			return rc;
		}
	} else if (*size < have && !force) {
		snprintf(err, errlen,
			 "'%s' is %s, larger than -s %s; use -f "
			 "to format only the first %s",
			 path, tfs_format_size(have, h1, sizeof(h1)),
			 tfs_format_size(*size, h2, sizeof(h2)),
			 tfs_format_size(*size, h3, sizeof(h3)));
		return -EEXIST;
	}
	if (*size < min) {
		snprintf(err, errlen,
			 "'%s' is too small (%s); the minimum is "
			 "%s",
			 path, tfs_format_size(*size, h1, sizeof(h1)),
			 tfs_format_size(min, h2, sizeof(h2)));
		return -ENOSPC;
	}
	return 0;
}

/* Refuse to format member m, path, if it holds something, unless
 * force or it was just created. */
static int check_member(struct tfs_dev *d, unsigned int m, const char *path,
			int force, int created, char *err, size_t errlen)
{
	const char *what;
	char kind[96];
	int rc;

	if (created || force)
		return 0;
	if (!tfs_dev_member_is_blockdev(d, m))
		return check_image(path, err, errlen);
	what = signature(d, m);
	if (!what) {
		rc = blkid_kind(path, kind, sizeof(kind));
		if (rc < 0) {
			snprintf(err, errlen,
				 "cannot tell what '%s' holds (libblkid: %s); "
				 "use -f to format it all the same",
				 path, strerror(-rc));
			return rc;
		}
		what = rc ? kind : NULL;
	}
	if (!what)
		return 0;
	snprintf(err, errlen,
		 "'%s' already contains %s; use -f to "
		 "overwrite it (everything on it is lost)",
		 path, what);
	return -EEXIST;
}

int tfs_mkfs(const char *path, const struct tfs_mkfs_opts *o,
	     struct tfs_mkfs_info *info, char *err, size_t errlen)
{
	return tfs_mkfs_set(&path, 1, o, info, err, errlen);
}

int tfs_mkfs_set(const char *const *paths, unsigned int n,
		 const struct tfs_mkfs_opts *o, struct tfs_mkfs_info *info,
		 char *err, size_t errlen)
{
	uint64_t size = o->size & ~(uint64_t)(TFS_BLOCK_SIZE - 1);
	uint64_t sizes[TFS_SET_MAX];
	int created[TFS_SET_MAX] = { 0 };
	struct tfs_dev *d = NULL;
	struct tfs_super lay;
	uint32_t stripe = (uint32_t)(o->stripe / TFS_BLOCK_SIZE);
	int rc = 0;
	char h1[32], h2[32];

	if (n < 1 || n > TFS_SET_MAX) {
		snprintf(err, errlen, "%u devices given; a set has 1 to %u", n,
			 TFS_SET_MAX);
		return -EINVAL;
	}
	if (o->stripe && (o->stripe % TFS_BLOCK_SIZE || !stripe ||
			  stripe > TFS_STRIPE_MAX)) {
		snprintf(
		    err, errlen,
		    "stripe unit %s: give a multiple of 4 KiB from 4 "
		    "KiB to %s",
		    tfs_format_size(o->stripe, h1, sizeof(h1)),
		    tfs_format_size((uint64_t)TFS_STRIPE_MAX * TFS_BLOCK_SIZE,
				    h2, sizeof(h2)));
		return -EINVAL;
	}
	/* o->size, not size: -s 1K rounds down to 0, "no size given" */
	if (o->size && size < TFS_MIN_DEVICE_BYTES) {
		snprintf(err, errlen,
			 "%s: %s is too small; the minimum is "
			 "%s",
			 paths[0], tfs_format_size(o->size, h1, sizeof(h1)),
			 tfs_format_size(TFS_MIN_DEVICE_BYTES, h2, sizeof(h2)));
		return -ENOSPC;
	}
	for (unsigned int i = 0; i < n && !rc; i++)
		rc = prepare_path(paths[i], size, &created[i], err, errlen);
	if (!rc)
		rc = open_devices(paths, n, &d, err, errlen);
	for (unsigned int i = 0; i < n && !rc; i++)
		rc = check_member(d, i, paths[i], o->force, created[i], err,
				  errlen);
	for (unsigned int i = 0; i < n && !rc; i++) {
		sizes[i] = size;
		rc = fit_size(d, i, paths[i], o->force,
			      i ? TFS_MIN_MEMBER_BYTES : TFS_MIN_DEVICE_BYTES,
			      &sizes[i], err, errlen);
	}
	/* The file system records each member's size: with -f and a
	 * smaller -s, it uses only the first 'size' bytes of each. */
	if (!rc) {
		rc = tfs_journal_format_set(d, sizes, stripe, o->uid, o->gid);
		if (rc)
			snprintf(err, errlen, "formatting '%s' failed: %s",
				 paths[0], strerror(-rc));
	}
	if (!rc) {
		tfs_layout(sizes[0] / TFS_BLOCK_SIZE, &lay);
		info->size = sizes[0];
		info->data_bytes =
		    (lay.dev_blocks - lay.data_start) * TFS_BLOCK_SIZE;
		info->meta_bytes = lay.data_start * TFS_BLOCK_SIZE;
		for (unsigned int i = 1; i < n; i++) {
			uint64_t b = sizes[i] / TFS_BLOCK_SIZE;

			info->size += sizes[i];
			info->data_bytes +=
			    (b - TFS_MEMBER_DATA_START) * TFS_BLOCK_SIZE;
			info->meta_bytes +=
			    (uint64_t)TFS_MEMBER_DATA_START * TFS_BLOCK_SIZE;
		}
	}
	tfs_dev_close(d);
	for (unsigned int i = 0; i < n; i++)
		if (rc && created[i])
			unlink(paths[i]);
	return rc;
}
