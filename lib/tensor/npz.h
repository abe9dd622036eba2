/*
 * npz.h: the arrays of an .npz file (np.savez), read in place.
 *
 * ----- the format (numpy/lib/_npyio_impl.py _savez, numpy 1.x and 2.x) -----
 *
 * A zip archive (zip.h) with one entry NAME.npy per array, a whole .npy
 * file (magic, header, data), NAME the keyword of np.savez(file, NAME=a)
 * or arr_0, arr_1, ... for positional arrays.  np.savez stores the
 * entries (method 0) and writes ZIP64 fields for every entry
 * (force_zip64), so an array is read where it lies in the file, as a
 * .safetensors file's; np.savez_compressed deflates them, and then only
 * the first bytes of each entry are inflated, for its .npy header (the
 * array is marked deflated; a reader inflates the entry to read it).
 * np.load() reads only entries ending in ".npy" as arrays, and so does
 * this.
 */
#ifndef TFS_NPZ_H
#define TFS_NPZ_H

#include "tensor.h"
#include "zip.h"

/* The largest .npy header read in an entry (numpy's own np.load refuses
 * headers over 10,000 bytes by default). */
#define TFS_NPZ_MAX_HEADER (1u << 20)

/*
 * The arrays of the zip archive z that rd reads (with ctx): on success
 * returns 0 and *out (format TFS_TENSOR_NPZ, caller frees with
 * tfs_tensor_list_free()), in the order of the file (np.savez's, as
 * np.load(f).files lists them), each array named by its entry without
 * ".npy", its offset in the file (a deflated one: in its inflated entry,
 * see struct tfs_tensor); an array of a dtype not decoded (strings,
 * objects, complex) has dtype -1 and its descr as dtype_name ("<U2",
 * "|O").  Else *out is NULL and returns -ENOENT (no NAME.npy entry: not
 * an .npz file; err is untouched), -EINVAL (an entry compressed other
 * than by deflate, or malformed: err says what, lowercase, no file
 * name), -ENOMEM or the -errno of rd.  Any bytes are safe to pass.
 * Thread safe.
 */
int tfs_npz_parse(const struct tfs_zip *z, tfs_zip_read_fn rd, void *ctx,
		  struct tfs_tensor_list **out, char *err, size_t errlen);

/*
 * The whole entry of the deflated array t (t->deflated, from
 * tfs_npz_parse() of the archive rd reads), inflated into sink: the .npy
 * file whose data lies at t->offset.  Returns as tfs_zip_inflate() with
 * the whole entry (its size and CRC-32 checked), err naming the array.
 */
int tfs_npz_inflate(const struct tfs_tensor *t, tfs_zip_read_fn rd, void *ctx,
		    tfs_zip_sink_fn sink, void *sctx, char *err, size_t errlen);

#endif
