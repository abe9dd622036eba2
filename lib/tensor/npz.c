/*
 * npz.c: the arrays of an .npz file (npz.h has the format).
 *
 * Each NAME.npy entry is a .npy file inside the archive: its first bytes
 * go through tfs_tensor_probe() for the header's length, the header
 * through tfs_tensor_parse_npy_any() with the entry's size as the file size
 * (so the data must fill the entry exactly), and the array's offset is
 * moved from the entry's start to the file's.  Only headers are read,
 * never data.  A deflated entry (np.savez_compressed) is read through
 * tfs_zip_inflate() as far as its header: the array keeps its offset in
 * the inflated entry and is marked deflated, with where the entry lies.
 */
#include "npz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

#define SUFFIX	   ".npy"
#define SUFFIX_LEN 4

static int is_array(const struct tfs_zip_entry *e)
{
	size_t n = strlen(e->name);

	return n > SUFFIX_LEN && !strcmp(e->name + n - SUFFIX_LEN, SUFFIX);
}

/* Memory that tfs_zip_inflate() fills. */
struct fill {
	unsigned char *p;
	size_t len;
};

static int fill_sink(void *sctx, const void *buf, size_t len)
{
	struct fill *f = sctx;

	memcpy(f->p + f->len, buf, len);
	f->len += len;
	return 0;
}

/* entry_head() failed and err says why */
#define SAID 1

/* The first n bytes of entry e into buf: read in place, or inflated.
 * 0, SAID, -EINVAL (the entry is shorter) or -errno. */
static int entry_head(const struct tfs_zip_entry *e, tfs_zip_read_fn rd,
		      void *ctx, void *buf, size_t n, char *err, size_t errlen)
{
	struct fill f = { buf, 0 };
	int rc;

	if (!e->deflated)
		return tfs_zip_read_exact(rd, ctx, buf, n, e->offset);
	rc = tfs_zip_inflate(rd, ctx, e, n, fill_sink, &f, err, errlen);
	if (rc == -EINVAL)
		return SAID;
	return !rc && f.len != n ? -EINVAL : rc;
}

/* The array of entry e into l, named name. */
static int add_array(struct tfs_tensor_list *l, const struct tfs_zip_entry *e,
		     const char *name, tfs_zip_read_fn rd, void *ctx, char *err,
		     size_t errlen)
{
	unsigned char head[16], *buf;
	size_t n = e->size < sizeof(head) ? (size_t)e->size : sizeof(head);
	struct tfs_tensor_list *one = NULL;
	struct tfs_tensor *t;
	uint64_t hlen = 0;
	char why[256] = "";
	int rc;

	if (!e->stored && !e->deflated)
		return tfs_invalid(err, errlen,
				   "'%s' is compressed by a method other "
				   "than deflate (np.savez_compressed's), or "
				   "encrypted",
				   e->name);
	rc = entry_head(e, rd, ctx, head, n, err, errlen);
	if (rc == SAID)
		return -EINVAL;
	if (rc)
		return rc == -EINVAL ? tfs_invalid(err, errlen,
						   "'%s' is truncated", e->name)
				     : rc;
	if (tfs_tensor_probe(head, n, &hlen) != TFS_TENSOR_NPY)
		return tfs_invalid(err, errlen, "'%s' is not a .npy file",
				   e->name);
	if (hlen > TFS_NPZ_MAX_HEADER || hlen > e->size)
		return tfs_invalid(err, errlen,
				   "'%s': its .npy header claims %llu bytes "
				   "(the entry has %llu, at most %u are read)",
				   e->name, (unsigned long long)hlen,
				   (unsigned long long)e->size,
				   TFS_NPZ_MAX_HEADER);
	buf = malloc((size_t)hlen);
	if (!buf)
		return -ENOMEM;
	rc = entry_head(e, rd, ctx, buf, (size_t)hlen, err, errlen);
	if (rc == SAID) {
		rc = -EINVAL;
	} else if (rc == -EINVAL) {
		tfs_invalid(err, errlen, "'%s' is truncated", e->name);
	} else if (!rc) {
		rc = tfs_tensor_parse_npy_any(buf, (size_t)hlen, e->size, &one,
					      why, sizeof(why));
		if (rc == -EINVAL)
			tfs_invalid(err, errlen, "'%s': %s", e->name, why);
	}
	free(buf);
	if (rc)
		return rc;
	t = tfs_tensor_list_add(l, name);
	if (t) {
		char *keep = t->name;

		*t = one->tensors[0]; /* name "", stride NULL: nothing owned */
		t->name = keep;
		if (e->deflated) {
			t->deflated = 1;
			t->zip.at = e->offset;
			t->zip.csize = e->csize;
			t->zip.size = e->size;
			t->zip.crc = e->crc;
		} else {
			t->offset += e->offset;
		}
	}
	tfs_tensor_list_free(one);
	return t ? 0 : -ENOMEM;
}

/* Where an array's bytes lie in the file. */
static uint64_t file_pos(const struct tfs_tensor *t)
{
	return t->deflated ? t->zip.at : t->offset;
}

/* Data order, which is np.savez's order (np.load(f).files). */
static int by_offset(const void *a, const void *b)
{
	uint64_t x = file_pos(a), y = file_pos(b);

	return x < y ? -1 : x > y;
}

int tfs_npz_parse(const struct tfs_zip *z, tfs_zip_read_fn rd, void *ctx,
		  struct tfs_tensor_list **out, char *err, size_t errlen)
{
	struct tfs_tensor_list *l;
	size_t arrays = 0;
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < z->count; i++)
		arrays += is_array(&z->entries[i]);
	if (!arrays)
		return -ENOENT;
	l = tfs_tensor_list_new(TFS_TENSOR_NPZ);
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < z->count && !rc; i++) {
		const struct tfs_zip_entry *e = &z->entries[i];
		size_t n = strlen(e->name) - SUFFIX_LEN;
		char *name;

		if (!is_array(e))
			continue;
		name = strndup(e->name, n);
		if (!name) {
			rc = -ENOMEM;
			break;
		}
		rc = add_array(l, e, name, rd, ctx, err, errlen);
		free(name);
	}
	if (rc) {
		if (rc == -ENOMEM)
			tfs_say(err, errlen, "out of memory");
		tfs_tensor_list_free(l);
		return rc;
	}
	qsort(l->tensors, l->count, sizeof(*l->tensors), by_offset);
	*out = l;
	return 0;
}

int tfs_npz_inflate(const struct tfs_tensor *t, tfs_zip_read_fn rd, void *ctx,
		    tfs_zip_sink_fn sink, void *sctx, char *err, size_t errlen)
{
	struct tfs_zip_entry e = {
		.name = t->name,
		.offset = t->zip.at,
		.size = t->zip.size,
		.csize = t->zip.csize,
		.crc = t->zip.crc,
		.deflated = t->deflated,
	};

	return tfs_zip_inflate(rd, ctx, &e, UINT64_MAX, sink, sctx, err,
			       errlen);
}
