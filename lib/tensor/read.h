/*
 * read.h: the one door into tensor files.  tfs_tensor_read() probes the
 * first bytes of a file and hands it to the reader of its format: .npy
 * and .safetensors headers (tensor.h), torch.save files of either format
 * (torch.h), np.savez archives (npz.h).  Callers (the user.tensor.*
 * xattrs, tensorfs-cat, the fuzz targets) go through it, and the
 * readers do not call one another.
 */
#ifndef TFS_TENSOR_READ_H
#define TFS_TENSOR_READ_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"
#include "zip.h"

/* The largest .npy header read when the caller sets no bound (numpy's
 * np.load itself stops at 10,000 bytes unless told otherwise). */
#define TFS_TENSOR_NPY_MAX_HEADER (64u << 20)

/*
 * The tensors of the file of file_size bytes that rd reads (with ctx).
 * max_header bounds the bytes of a header read (a .npy or .safetensors
 * header, a torch.save pickle); 0: each format's own bound
 * (TFS_TENSOR_NPY_MAX_HEADER, TFS_TENSOR_SAFETENSORS_MAX_HEADER,
 * TFS_TORCH_MAX_PICKLE).  *format (may be NULL) gets what the file
 * looks like, also on failure: TFS_TENSOR_RAW, _NPY, _SAFETENSORS,
 * _TORCH (a zip archive or a legacy torch.save file until read) or
 * _NPZ.
 *
 * Returns 0 with *out (caller frees with tfs_tensor_list_free()), or
 * NULL for a file of no format known (bare elements); else *out is NULL
 * and it returns -EINVAL (a damaged or truncated header: err says what,
 * lowercase, no file name), -E2BIG (a header over max_header), -ENOMEM
 * or rd's -errno.  Any bytes are safe to pass.  Thread safe.
 */
int tfs_tensor_read(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		    size_t max_header, struct tfs_tensor_list **out,
		    enum tfs_tensor_format *format, char *err, size_t errlen);

#endif
