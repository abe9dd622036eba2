/*
 * zip.h: the directory of a zip archive, as torch.save and np.savez write
 * one: where each entry's bytes lie in the file, read in place when they
 * are stored uncompressed, inflated when they are deflated
 * (np.savez_compressed).
 *
 * PyTorch's writer (caffe2/serialize/inline_container.cc, on miniz)
 * stores every record (method 0) and pads the local header's extra field
 * so that the data is 64-byte aligned; past 4 GiB it writes ZIP64
 * fields.  This reader reads only the central directory and the local
 * headers, through a callback, never the data: a tensor is then read in
 * place, by offset, as one of a .safetensors file.  tfs_zip_inflate()
 * streams a deflated entry's bytes out (zlib), checked against the size
 * and the CRC-32 the directory gives.
 *
 * ----- the records read (APPNOTE.TXT 6.3, little-endian) -----
 *
 * end of central directory (EOCD), the last 22 + comment bytes:
 *   0 4 0x06054b50   10 2 entries   12 4 directory size
 *  16 4 directory offset   20 2 comment length
 * ZIP64 EOCD locator, the 20 bytes before the EOCD:
 *   0 4 0x07064b50    8 8 offset of the ZIP64 EOCD
 * ZIP64 EOCD:
 *   0 4 0x06064b50   32 8 entries   40 8 directory size
 *  48 8 directory offset
 * central directory header, one per entry:
 *   0 4 0x02014b50    8 2 flags   10 2 method   16 4 CRC-32
 *  20 4 compressed size   24 4 size   28 2 name length   30 2 extra
 *   length   32 2 comment length   42 4 local header offset   46 name,
 *   extra, comment
 *   (a 0xffffffff size or offset is in the extra field 0x0001: size,
 *   compressed size, offset, 8 bytes each, those that overflowed)
 * local header:
 *   0 4 0x04034b50   26 2 name length   28 2 extra length   30 name,
 *   extra, then the data
 *
 * Thread safety: a struct tfs_zip is read-only once opened; any number
 * of threads may look entries up in it.
 */
#ifndef TFS_ZIP_H
#define TFS_ZIP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Read len bytes at off of the file into buf: the number of bytes read
 * (fewer only at the end of the file), or -errno.
 */
typedef ssize_t (*tfs_zip_read_fn)(void *ctx, void *buf, size_t len,
				   uint64_t off);

struct tfs_zip_entry {
	char *name;
	uint64_t offset; /* of the first byte of data, in the file */
	uint64_t size;	 /* bytes of data (uncompressed) */
	uint64_t csize;	 /* bytes of data in the file */
	uint32_t crc;	 /* CRC-32 of the uncompressed data */
	int stored;	 /* 1: stored as is: the data is read in place */
	int deflated;	 /* 1: deflated (method 8), not encrypted */
};

struct tfs_zip {
	size_t count;
	struct tfs_zip_entry *entries; /* by name */
};

/* The most entries and the largest central directory accepted. */
#define TFS_ZIP_MAX_ENTRIES   (1u << 20)
#define TFS_ZIP_MAX_DIRECTORY (64u << 20)

/*
 * Read the directory of the zip archive of file_size bytes that rd reads
 * (with ctx).  On success returns 0 and *out (caller frees with
 * tfs_zip_free()); else *out is NULL and returns -EINVAL (not a zip
 * archive, or malformed: err says what, lowercase, no file name),
 * -ENOMEM, or the -errno of rd.  Any bytes are safe to pass.
 */
int tfs_zip_open(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		 struct tfs_zip **out, char *err, size_t errlen);

/* The entry named name, borrowed from z, or NULL. */
const struct tfs_zip_entry *tfs_zip_find(const struct tfs_zip *z,
					 const char *name);

/* Free z; NULL is a no-op. */
void tfs_zip_free(struct tfs_zip *z);

/* Exactly len bytes at off through rd: 0, -EINVAL (past the end of the
 * file) or rd's -errno. */
int tfs_zip_read_exact(tfs_zip_read_fn rd, void *ctx, void *buf, size_t len,
		       uint64_t off);

/*
 * Where tfs_zip_inflate() hands each piece of inflated data, in order:
 * 0 to go on, or a nonzero value that stops it and that it returns.
 */
typedef int (*tfs_zip_sink_fn)(void *sctx, const void *buf, size_t len);

/*
 * Inflate the deflated entry e of the archive rd reads, handing its
 * first min(max, e->size) bytes to sink, in pieces of at most
 * TFS_ZIP_INFLATE_CHUNK.  With max >= e->size the whole entry must
 * inflate to exactly e->size bytes whose CRC-32 is e->crc.  Returns 0,
 * -EINVAL (not deflated, or corrupt: err says what, lowercase, naming
 * the entry), -ENOMEM, rd's -errno or sink's return.  Any bytes are
 * safe to pass; memory used is bounded (two chunks and zlib's window).
 */
#define TFS_ZIP_INFLATE_CHUNK (256u << 10)
int tfs_zip_inflate(tfs_zip_read_fn rd, void *ctx,
		    const struct tfs_zip_entry *e, uint64_t max,
		    tfs_zip_sink_fn sink, void *sctx, char *err, size_t errlen);

/* A tfs_zip_read_fn over memory: ctx points to a struct tfs_zip_mem. */
struct tfs_zip_mem {
	const void *buf;
	size_t len;
};
ssize_t tfs_zip_read_mem(void *ctx, void *buf, size_t len, uint64_t off);

#endif
