/*
 * testimg.h: image files for the unit tests of journal, io, fs and check.
 *
 * An image is a sparse file under /tmp made with mkstemp() and
 * ftruncate(); the test that makes one removes it in its teardown.  A
 * crash is simulated by copying the image while the file system is still
 * open (after tfs_fs_sync(), or without it) and opening the copy: the
 * copy holds exactly what reached the device, as after a power cut.
 *
 * Everything here is static inline so that each test executable takes
 * only what it uses, without -Wmissing-prototypes or unused warnings.
 */
#ifndef TFS_TESTIMG_H
#define TFS_TESTIMG_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "io.h"
#include "journal.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* Make an empty sparse file of 'bytes' bytes; path gets its name
 * (at least 32 bytes).  Returns 0 or -errno. */
static inline int img_make(char *path, uint64_t bytes)
{
	int fd;

	strcpy(path, "/tmp/tfs-ut-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes) < 0) {
		int rc = -errno;

		close(fd);
		unlink(path);
		return rc;
	}
	close(fd);
	return 0;
}

/* Format the image at path with tfs_journal_format() (root 1000:1000). */
static inline int img_format(const char *path, uint64_t bytes)
{
	struct tfs_dev *d;
	int rc = tfs_dev_open(path, 0, &d);

	if (rc)
		return rc;
	rc = tfs_journal_format(d, bytes, 1000, 1000);
	tfs_dev_close(d);
	return rc;
}

static inline int img_pread(const char *path, uint64_t off, void *buf,
			    size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static inline int img_pwrite(const char *path, uint64_t off, const void *buf,
			     size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)off);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Invert the bits of the byte at off. */
static inline int img_flip(const char *path, uint64_t off)
{
	uint8_t c;
	int rc = img_pread(path, off, &c, 1);

	if (rc)
		return rc;
	c ^= 0xff;
	return img_pwrite(path, off, &c, 1);
}

/*
 * Copy the image src to a new temporary file (its name into dst): only
 * the data parts of the sparse source are copied, the holes stay holes.
 */
static inline int img_copy(const char *src, char *dst)
{
	int in = open(src, O_RDONLY), out = -1, rc = 0;
	struct stat st;
	static char buf[1 << 20];
	off_t pos = 0;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || img_make(dst, (uint64_t)st.st_size)) {
		close(in);
		return -EIO;
	}
	out = open(dst, O_WRONLY);
	if (out < 0) {
		close(in);
		unlink(dst);
		return -EIO;
	}
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;

		if (data < 0)
			break; /* only a hole is left */
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		for (off_t o = data; o < hole;) {
			size_t n = (size_t)(hole - o) < sizeof(buf)
				       ? (size_t)(hole - o)
				       : sizeof(buf);
			ssize_t r = pread(in, buf, n, o);

			if (r <= 0 || pwrite(out, buf, (size_t)r, o) != r) {
				rc = -EIO;
				goto out;
			}
			o += r;
		}
		pos = hole;
	}
out:
	close(in);
	close(out);
	if (rc)
		unlink(dst);
	return rc;
}

/*
 * Read both superblock copies of the image; *sb gets the current one
 * (the valid copy with the higher generation) and *copy its index.
 */
static inline int img_super(const char *path, struct tfs_super *sb, int *copy)
{
	uint8_t b[2][TFS_BLOCK_SIZE];
	struct tfs_super s[2];
	int rc[2];

	if (img_pread(path, 0, b, sizeof(b)))
		return -EIO;
	rc[0] = tfs_super_decode(b[0], &s[0]);
	rc[1] = tfs_super_decode(b[1], &s[1]);
	if (rc[0] && rc[1])
		return rc[0];
	if (!rc[0] && (rc[1] || s[0].generation >= s[1].generation)) {
		*sb = s[0];
		*copy = 0;
	} else {
		*sb = s[1];
		*copy = 1;
	}
	return 0;
}

/* Decode superblock copy 'copy' of the image. */
static inline int img_super_copy(const char *path, int copy,
				 struct tfs_super *sb)
{
	uint8_t b[TFS_BLOCK_SIZE];

	if (img_pread(path, (uint64_t)copy * TFS_BLOCK_SIZE, b, sizeof(b)))
		return -EIO;
	return tfs_super_decode(b, sb);
}

/* Device byte offset of byte pos of the checkpoint sb names (its map). */
static inline uint64_t img_ckpt_off(const struct tfs_super *sb, uint64_t pos)
{
	for (uint32_t i = 0; i < sb->npieces; i++) {
		if (pos < sb->map[i].len * TFS_BLOCK_SIZE)
			return sb->map[i].start * TFS_BLOCK_SIZE + pos;
		pos -= sb->map[i].len * TFS_BLOCK_SIZE;
	}
	return UINT64_MAX;
}

/* A byte pattern that differs per offset and per seed. */
static inline uint8_t pat(uint64_t off, unsigned int seed)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull;

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17) ^ (x >> 41));
}

static inline void fill_pat(uint8_t *p, size_t len, uint64_t off,
			    unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(off + i, seed);
}

#endif
