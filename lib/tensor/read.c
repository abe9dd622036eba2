/*
 * read.c: the one door into tensor files (read.h).
 *
 * The first 16 bytes decide (tfs_tensor_probe()): the .npy magic, a
 * safetensors header length followed by '{', a zip archive's "PK\3\4",
 * the legacy torch.save magic, or none of them (raw elements).  A .npy
 * or .safetensors header is read whole, up to its bound, and parsed from
 * memory (tensor.c).  A zip archive is opened once here (zip.c) and
 * offered to torch.save's reader, which answers -ENOENT when it holds no
 * DIR/data.pkl, then to np.savez's, which answers -ENOENT when it holds
 * no NAME.npy: so the two readers never call each other, and a zip of
 * neither kind is named as such.  A legacy torch.save file goes to
 * torch.c whole.
 */
#include "read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npz.h"
#include "torch.h"
#include "units.h"

static int read_zip(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		    size_t max_header, struct tfs_tensor_list **out,
		    enum tfs_tensor_format *fmt, char *err, size_t errlen)
{
	struct tfs_zip *z = NULL;
	int rc = tfs_zip_open(rd, ctx, file_size, &z, err, errlen);

	if (rc)
		return rc;
	rc = tfs_torch_parse_zip(z, rd, ctx, max_header, out, err, errlen);
	if (rc == -ENOENT) {
		*fmt = TFS_TENSOR_NPZ;
		rc = tfs_npz_parse(z, rd, ctx, out, err, errlen);
	}
	if (rc == -ENOENT) {
		*fmt = TFS_TENSOR_TORCH;
		rc = tfs_invalid(err, errlen,
				 "a zip archive with neither one "
				 "DIR/data.pkl (torch.save) nor NAME.npy "
				 "entries (np.savez)");
	}
	tfs_zip_free(z);
	return rc;
}

/* A .npy or .safetensors header of hlen bytes, read whole and parsed. */
static int read_header(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		       uint64_t hlen, size_t max_header, int fmt,
		       struct tfs_tensor_list **out, char *err, size_t errlen)
{
	uint64_t cap = max_header ? max_header
		       : fmt == TFS_TENSOR_NPY
			   ? TFS_TENSOR_NPY_MAX_HEADER
			   : TFS_TENSOR_SAFETENSORS_MAX_HEADER;
	const char *what = fmt == TFS_TENSOR_NPY ? ".npy" : ".safetensors";
	unsigned char *buf;
	int rc;

	if (hlen > file_size)
		hlen = file_size; /* the parser says truncated */
	if (hlen > cap) {
		char c[32];

		tfs_invalid(err, errlen,
			    "the %s header claims %llu bytes; headers are read "
			    "up to %s",
			    what, (unsigned long long)hlen,
			    tfs_format_size(cap, c, sizeof(c)));
		return -E2BIG;
	}
	buf = malloc(hlen ? (size_t)hlen : 1);
	if (!buf)
		return -ENOMEM;
	rc = tfs_zip_read_exact(rd, ctx, buf, (size_t)hlen, 0);
	if (!rc)
		rc = tfs_tensor_parse(buf, (size_t)hlen, file_size, out, err,
				      errlen);
	free(buf);
	return rc;
}

int tfs_tensor_read(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		    size_t max_header, struct tfs_tensor_list **out,
		    enum tfs_tensor_format *format, char *err, size_t errlen)
{
	static const unsigned char npy_magic[6] = { 0x93, 'N', 'U',
						    'M',  'P', 'Y' };
	unsigned char head[16];
	size_t n = file_size < sizeof(head) ? (size_t)file_size : sizeof(head);
	enum tfs_tensor_format fmt, dummy;
	uint64_t hlen = 0;
	int rc;

	*out = NULL;
	if (!format)
		format = &dummy;
	*format = TFS_TENSOR_RAW;
	rc = tfs_zip_read_exact(rd, ctx, head, n, 0);
	if (rc)
		return rc;
	fmt = tfs_tensor_probe(head, n, &hlen);
	*format = fmt;
	switch (fmt) {
	case TFS_TENSOR_RAW:
		/* .npy's magic without the 10 bytes of its preamble: a
		 * damaged file, not bare elements */
		if (n >= 6 && !memcmp(head, npy_magic, 6)) {
			*format = TFS_TENSOR_NPY;
			return tfs_invalid(err, errlen,
					   "truncated .npy header: %zu bytes, "
					   "where the preamble alone takes 10",
					   n);
		}
		return 0;
	case TFS_TENSOR_NPY:
	case TFS_TENSOR_SAFETENSORS:
		return read_header(rd, ctx, file_size, hlen, max_header, fmt,
				   out, err, errlen);
	case TFS_TENSOR_TORCH:
		if (tfs_torch_is_legacy(head, n))
			return tfs_torch_parse_legacy(
			    rd, ctx, file_size, max_header, out, err, errlen);
		return read_zip(rd, ctx, file_size, max_header, out, format,
				err, errlen);
	case TFS_TENSOR_NPZ:
		break;
	}
	return tfs_invalid(err, errlen, "no reader for this format");
}
