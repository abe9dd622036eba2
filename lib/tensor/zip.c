/*
 * zip.c: the directory of a zip archive (zip.h says which records are
 * read, byte by byte), and the inflating of a deflated entry.
 *
 * tfs_zip_open() finds the end of central directory record in the last
 * 64 KiB + 22 bytes, follows a ZIP64 locator if there is one, reads the
 * whole central directory at once (at most TFS_ZIP_MAX_DIRECTORY bytes),
 * then each entry's local header, for the length of its name and extra
 * field, which put the data where it is.  Every offset and size is
 * checked against the file before it is used: an entry's data lies
 * inside the file or the archive is refused.  Entries are kept sorted by
 * name for tfs_zip_find(); names are copied.
 *
 * tfs_zip_inflate() is zlib's raw inflate (no zlib or gzip wrapper, as
 * zip stores deflate streams) over TFS_ZIP_INFLATE_CHUNK pieces: it reads
 * no more than the entry's compressed size, stops at max bytes out, and
 * for a whole entry checks that the stream ends exactly at the size and
 * CRC-32 the directory gives; a stream that would make more is refused
 * as soon as it does, so a small entry cannot expand past its size.
 */
#include "zip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "units.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD    0x06054b50u
#define SIG_EOCD64  0x06064b50u
#define SIG_LOCATOR 0x07064b50u

#define EOCD_LEN    22
#define LOCATOR_LEN 20
#define EOCD64_LEN  56
#define CENTRAL_LEN 46
#define LOCAL_LEN   30
#define MAX_COMMENT 65535

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

int tfs_zip_read_exact(tfs_zip_read_fn rd, void *ctx, void *buf, size_t len,
		       uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = rd(ctx, (char *)buf + done, len - done, off + done);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EINVAL;
		done += (size_t)n;
	}
	return 0;
}

ssize_t tfs_zip_read_mem(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct tfs_zip_mem *m = ctx;

	if (off >= m->len)
		return 0;
	if (len > m->len - off)
		len = (size_t)(m->len - off);
	memcpy(buf, (const char *)m->buf + off, len);
	return (ssize_t)len;
}

/* ===== the end of central directory ===== */

struct dir {
	uint64_t count, size, offset;
};

/* The EOCD, searched backwards from the end; then ZIP64's, if any. */
static int find_dir(tfs_zip_read_fn rd, void *ctx, uint64_t fsize,
		    struct dir *d, char *err, size_t errlen)
{
	size_t tail = fsize < EOCD_LEN + MAX_COMMENT ? (size_t)fsize
						     : EOCD_LEN + MAX_COMMENT;
	unsigned char *b, *e = NULL, l[EOCD64_LEN];
	uint64_t at = 0;
	int rc;

	if (fsize < EOCD_LEN)
		return tfs_invalid(err, errlen,
				   "%llu bytes are too few for a zip "
				   "archive",
				   (unsigned long long)fsize);
	b = malloc(tail);
	if (!b)
		return -ENOMEM;
	rc = tfs_zip_read_exact(rd, ctx, b, tail, fsize - tail);
	if (rc)
		goto out;
	for (size_t i = tail - EOCD_LEN + 1; i-- > 0;)
		if (le(b + i, 4) == SIG_EOCD &&
		    i + EOCD_LEN + le(b + i + 20, 2) == tail) {
			e = b + i;
			at = fsize - tail + i;
			break;
		}
	if (!e) {
		rc = tfs_invalid(err, errlen,
				 "no end of central directory record: "
				 "not a zip archive, or a truncated one");
		goto out;
	}
	d->count = le(e + 10, 2);
	d->size = le(e + 12, 4);
	d->offset = le(e + 16, 4);
	if (at >= LOCATOR_LEN &&
	    !tfs_zip_read_exact(rd, ctx, l, LOCATOR_LEN, at - LOCATOR_LEN) &&
	    le(l, 4) == SIG_LOCATOR) {
		uint64_t off = le(l + 8, 8);

		if (off > at - LOCATOR_LEN ||
		    at - LOCATOR_LEN - off < EOCD64_LEN ||
		    tfs_zip_read_exact(rd, ctx, l, EOCD64_LEN, off) ||
		    le(l, 4) != SIG_EOCD64) {
			rc = tfs_invalid(err, errlen,
					 "a ZIP64 locator points to no "
					 "ZIP64 end of central directory");
			goto out;
		}
		d->count = le(l + 32, 8);
		d->size = le(l + 40, 8);
		d->offset = le(l + 48, 8);
	}
	if (d->offset > fsize || d->size > fsize - d->offset)
		rc = tfs_invalid(
		    err, errlen,
		    "the central directory (%llu bytes at %llu) lies "
		    "past the end of the file",
		    (unsigned long long)d->size, (unsigned long long)d->offset);
	else if (d->size > TFS_ZIP_MAX_DIRECTORY ||
		 d->count > TFS_ZIP_MAX_ENTRIES)
		rc = tfs_invalid(
		    err, errlen,
		    "the central directory holds %llu entries in %llu "
		    "bytes, more than the %u entries or %u MiB read",
		    (unsigned long long)d->count, (unsigned long long)d->size,
		    TFS_ZIP_MAX_ENTRIES, TFS_ZIP_MAX_DIRECTORY >> 20);
out:
	free(b);
	return rc;
}

/* ===== the entries ===== */

/* The ZIP64 extra field of a central header: replace the fields that
 * are 0xffffffff, in the order size, compressed size, offset. */
static int zip64_extra(const unsigned char *x, size_t xlen, uint64_t *size,
		       uint64_t *csize, uint64_t *lho)
{
	while (xlen >= 4) {
		size_t id = (size_t)le(x, 2), n = (size_t)le(x + 2, 2);
		uint64_t *f[3] = { size, csize, lho };
		size_t at = 4;

		if (n > xlen - 4)
			return -1;
		if (id == 1) {
			for (int k = 0; k < 3; k++) {
				if (*f[k] != 0xffffffffu)
					continue;
				if (at + 8 > 4 + n)
					return -1;
				*f[k] = le(x + at, 8);
				at += 8;
			}
			return 0;
		}
		x += 4 + n;
		xlen -= 4 + n;
	}
	return 0;
}

/* One central directory header at c (room bytes left) into e; its
 * length into *used. */
static int read_entry(tfs_zip_read_fn rd, void *ctx, uint64_t fsize,
		      const unsigned char *c, size_t room,
		      struct tfs_zip_entry *e, size_t *used, char *err,
		      size_t errlen)
{
	size_t nlen, xlen, clen;
	uint64_t size, csize, lho;
	unsigned char l[LOCAL_LEN];
	int rc;

	if (room < CENTRAL_LEN || le(c, 4) != SIG_CENTRAL)
		return tfs_invalid(err, errlen,
				   "the central directory is malformed "
				   "(no entry header where one should be)");
	nlen = (size_t)le(c + 28, 2);
	xlen = (size_t)le(c + 30, 2);
	clen = (size_t)le(c + 32, 2);
	if (CENTRAL_LEN + nlen + xlen + clen > room)
		return tfs_invalid(err, errlen,
				   "the central directory is truncated");
	*used = CENTRAL_LEN + nlen + xlen + clen;
	csize = le(c + 20, 4);
	size = le(c + 24, 4);
	lho = le(c + 42, 4);
	if (zip64_extra(c + CENTRAL_LEN + nlen, xlen, &size, &csize, &lho))
		return tfs_invalid(err, errlen,
				   "a ZIP64 extra field is malformed");
	e->name = strndup((const char *)c + CENTRAL_LEN, nlen);
	if (!e->name)
		return -ENOMEM;
	if (memchr(c + CENTRAL_LEN, '\0', nlen))
		return tfs_invalid(err, errlen,
				   "an entry name holds a NUL byte");
	e->size = size;
	e->csize = csize;
	e->crc = (uint32_t)le(c + 16, 4);
	e->stored = le(c + 10, 2) == 0 && !(le(c + 8, 2) & 1) && size == csize;
	e->deflated = le(c + 10, 2) == 8 && !(le(c + 8, 2) & 1);
	if (lho > fsize || fsize - lho < LOCAL_LEN)
		return tfs_invalid(err, errlen,
				   "entry '%s' starts past the end of "
				   "the file",
				   e->name);
	rc = tfs_zip_read_exact(rd, ctx, l, LOCAL_LEN, lho);
	if (rc)
		return rc == -EINVAL ? tfs_invalid(err, errlen,
						   "cannot read the "
						   "local header of '%s'",
						   e->name)
				     : rc;
	if (le(l, 4) != SIG_LOCAL)
		return tfs_invalid(err, errlen,
				   "entry '%s' has no local header", e->name);
	e->offset = lho + LOCAL_LEN + le(l + 26, 2) + le(l + 28, 2);
	if (e->offset > fsize || csize > fsize - e->offset)
		return tfs_invalid(
		    err, errlen,
		    "the data of entry '%s' (%llu bytes) lies past the "
		    "end of the file",
		    e->name, (unsigned long long)csize);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tfs_zip_entry *)a)->name,
		      ((const struct tfs_zip_entry *)b)->name);
}

int tfs_zip_open(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		 struct tfs_zip **out, char *err, size_t errlen)
{
	struct dir d = { 0 };
	struct tfs_zip *z = NULL;
	unsigned char *c = NULL;
	size_t at = 0;
	int rc;

	*out = NULL;
	rc = find_dir(rd, ctx, file_size, &d, err, errlen);
	if (rc)
		return rc;
	/* each entry takes CENTRAL_LEN bytes at least */
	if (d.count > d.size / CENTRAL_LEN)
		return tfs_invalid(
		    err, errlen,
		    "the central directory claims %llu entries in "
		    "%llu bytes",
		    (unsigned long long)d.count, (unsigned long long)d.size);
	z = calloc(1, sizeof(*z));
	c = malloc(d.size ? (size_t)d.size : 1);
	if (z)
		z->entries =
		    calloc(d.count ? (size_t)d.count : 1, sizeof(*z->entries));
	if (!z || !c || !z->entries) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = tfs_zip_read_exact(rd, ctx, c, (size_t)d.size, d.offset);
	if (rc)
		goto out_free;
	for (; z->count < d.count; z->count++) {
		size_t used = 0;

		rc = read_entry(rd, ctx, file_size, c + at, (size_t)d.size - at,
				&z->entries[z->count], &used, err, errlen);
		if (rc) {
			z->count++; /* its name, if any, is freed */
			goto out_free;
		}
		at += used;
	}
	qsort(z->entries, z->count, sizeof(*z->entries), by_name);
	for (size_t i = 1; i < z->count; i++)
		if (!strcmp(z->entries[i - 1].name, z->entries[i].name)) {
			rc = tfs_invalid(err, errlen,
					 "entry '%s' is in the archive "
					 "twice",
					 z->entries[i].name);
			goto out_free;
		}
	*out = z;
	z = NULL;
out_free:
	free(c);
	tfs_zip_free(z);
	return rc;
}

const struct tfs_zip_entry *tfs_zip_find(const struct tfs_zip *z,
					 const char *name)
{
	struct tfs_zip_entry key = { .name = (char *)name };

	if (!z || !z->count)
		return NULL;
	return bsearch(&key, z->entries, z->count, sizeof(key), by_name);
}

void tfs_zip_free(struct tfs_zip *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->count; i++)
		free(z->entries[i].name);
	free(z->entries);
	free(z);
}

/* ===== inflating ===== */

int tfs_zip_inflate(tfs_zip_read_fn rd, void *ctx,
		    const struct tfs_zip_entry *e, uint64_t max,
		    tfs_zip_sink_fn sink, void *sctx, char *err, size_t errlen)
{
	const size_t chunk = TFS_ZIP_INFLATE_CHUNK;
	z_stream zs;
	unsigned char *in = NULL, *out = NULL;
	uint64_t got = 0, done = 0; /* compressed read, inflated out */
	uLong crc = crc32(0L, Z_NULL, 0);
	int whole = max >= e->size, zrc = Z_OK, rc = 0;

	if (!e->deflated)
		return tfs_invalid(err, errlen, "'%s' is not deflated",
				   e->name);
	if (whole)
		max = e->size;
	memset(&zs, 0, sizeof(zs));
	in = malloc(chunk);
	out = malloc(chunk);
	if (!in || !out || inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
		free(in);
		free(out);
		return -ENOMEM;
	}
	while (done < max || (whole && zrc != Z_STREAM_END)) {
		size_t made, give;

		if (zs.avail_in == 0) {
			size_t n = e->csize - got < chunk
				       ? (size_t)(e->csize - got)
				       : chunk;

			if (n == 0) {
				rc = tfs_invalid(err, errlen,
						 "'%s' is truncated (its "
						 "deflate stream ends early)",
						 e->name);
				break;
			}
			rc =
			    tfs_zip_read_exact(rd, ctx, in, n, e->offset + got);
			if (rc) {
				if (rc == -EINVAL)
					rc = tfs_invalid(err, errlen,
							 "'%s' is truncated",
							 e->name);
				break;
			}
			got += n;
			zs.next_in = in;
			zs.avail_in = (uInt)n;
		}
		zs.next_out = out;
		zs.avail_out = (uInt)chunk;
		zrc = inflate(&zs, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR) {
			rc = zrc == Z_MEM_ERROR
				 ? -ENOMEM
				 : tfs_invalid(err, errlen,
					       "'%s' is corrupt (%s)", e->name,
					       zs.msg ? zs.msg
						      : "bad deflate data");
			break;
		}
		made = chunk - zs.avail_out;
		if (made > e->size - done) {
			rc = tfs_invalid(err, errlen,
					 "'%s' inflates to more than the %llu "
					 "bytes the archive gives",
					 e->name, (unsigned long long)e->size);
			break;
		}
		give = made < max - done ? made : (size_t)(max - done);
		crc = crc32(crc, out, (uInt)made);
		if (give) {
			rc = sink(sctx, out, give);
			if (rc)
				break;
		}
		done += made;
		if (zrc == Z_STREAM_END && done < e->size) {
			rc = tfs_invalid(err, errlen,
					 "'%s' inflates to %llu bytes, not "
					 "the %llu the archive gives",
					 e->name, (unsigned long long)done,
					 (unsigned long long)e->size);
			break;
		}
	}
	if (!rc && whole && crc != e->crc)
		rc = tfs_invalid(err, errlen,
				 "'%s' is corrupt (its CRC-32 is %08lx, the "
				 "archive gives %08x)",
				 e->name, (unsigned long)crc, (unsigned)e->crc);
	inflateEnd(&zs);
	free(in);
	free(out);
	return rc;
}
