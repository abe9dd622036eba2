/*
 * torch.h: the tensors of a torch.save file, read without running it.
 *
 * ----- the format (torch/serialization.py _save, PyTorch 1.6 and later) -----
 *
 * A zip archive (zip.h) of stored entries under one directory, PREFIX,
 * the file's base name without extension ("archive" when saved to a
 * file object):
 *   PREFIX/data.pkl     the saved object, pickled (protocol 2)
 *   PREFIX/data/KEY     one entry per storage, its bytes as they are in
 *                       memory: little-endian unless PREFIX/byteorder
 *                       says "big"
 *   PREFIX/version      "3" (PyTorch 1.13), PREFIX/byteorder (2.x),
 *                       PREFIX/.data/serialization_id (2.x)
 * In data.pkl a tensor is a call of torch._utils._rebuild_tensor_v2
 * (storage, storage_offset, size, stride, requires_grad, hooks[,
 * metadata]) and its storage the persistent id ('storage',
 * torch.FloatStorage, KEY, location, numel); an nn.Parameter wraps it in
 * _rebuild_parameter(tensor, requires_grad, hooks).  A tensor is named by
 * its path in the saved structure: dict keys (str, or int as decimal)
 * and list or tuple indices joined with '.': "model.layers.0.weight",
 * "state.0.exp_avg".  A tensor saved alone is named "".
 *
 * ----- the legacy format (PyTorch before 1.6, and later with
 *       torch.save(..., _use_new_zipfile_serialization=False)) -----
 *
 * Five pickles (protocol 2, or pickle_protocol's) one after another,
 * then the storages:
 *   the magic number 0x1950a86a20f9469cfc6c (15 bytes, or 24 with
 *     pickle_protocol 4 or 5),
 *   the format version, 1001,
 *   the system information, a dict (byte order, sizes of C types),
 *   the saved object, as data.pkl above, its storages' persistent ids
 *     ('storage', torch.FloatStorage, KEY, location, numel, None),
 *   the list of storage KEYs, in the order of the storages that follow;
 * then each storage: its element count (8 bytes, little-endian) and its
 * elements (little-endian).  A storage's place follows from the sizes
 * of all before it.  The sixth item of a persistent id, not None, made
 * the storage a view of another (PyTorch before 1.0): not read.
 *
 * The pickle is read by pickle.c, which never imports or calls
 * anything; any other object in it (an argparse.Namespace, DeepSpeed's
 * enums) is kept as the name of its class, and tensors inside it are
 * still found.
 */
#ifndef TFS_TORCH_H
#define TFS_TORCH_H

#include "tensor.h"
#include "zip.h"

/* The largest data.pkl read. */
#define TFS_TORCH_MAX_PICKLE (256u << 20)

/* Whether buf[0..len) starts as a legacy torch.save file does, as far
 * as it goes (15 bytes or more; 16 decide). */
int tfs_torch_is_legacy(const void *buf, size_t len);

/*
 * The tensors of a torch.save file; read.c's tfs_tensor_read() says
 * which reader a file goes to.  tfs_torch_parse_zip(): of the zip
 * archive z (opened on what rd reads, with ctx), the one DIR/data.pkl
 * and its DIR/data/KEY storages; -ENOENT, err untouched, when there is
 * no DIR/data.pkl (not a torch.save archive).  tfs_torch_parse_legacy():
 * of the legacy format, file_size bytes that rd reads.  Each reads at
 * most max_pickle bytes of data.pkl, or of each pickle of the legacy
 * format (0: TFS_TORCH_MAX_PICKLE).  On success returns 0 and *out
 * (format TFS_TENSOR_TORCH; caller frees with tfs_tensor_list_free()):
 * each tensor with its storage's offset in the file, its strides when
 * not C-contiguous, and dtype -1 (dtype_name the storage class) for a
 * dtype not decoded.  Otherwise *out is NULL and returns -EINVAL
 * (malformed: err says what, lowercase, no file name), -E2BIG (a pickle
 * larger than max_pickle, or too many values in it), -ENOMEM or the
 * -errno of rd.  Any bytes are safe to pass.  Thread safe.
 */
int tfs_torch_parse_zip(const struct tfs_zip *z, tfs_zip_read_fn rd, void *ctx,
			size_t max_pickle, struct tfs_tensor_list **out,
			char *err, size_t errlen);
int tfs_torch_parse_legacy(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
			   size_t max_pickle, struct tfs_tensor_list **out,
			   char *err, size_t errlen);

/*
 * The tensors of the pickle pkl[0..len), their storages looked up in z
 * under prefix ("archive/"; z NULL: offsets relative to each storage,
 * sizes unchecked).  Returns as tfs_torch_parse_zip().
 */
int tfs_torch_parse_pickle(const void *pkl, size_t len, const struct tfs_zip *z,
			   const char *prefix, struct tfs_tensor_list **out,
			   char *err, size_t errlen);

#endif
