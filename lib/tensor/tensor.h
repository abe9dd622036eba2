/*
 * tensor.h: tensors as they lie in files, element types, shapes and the
 * headers of .npy and .safetensors files, read from memory.
 *
 * Nothing here does I/O: the caller reads the bytes (the first ones of a
 * file for tfs_tensor_probe(), then the whole header) and hands them
 * over.  All functions are thread safe; none keeps a pointer to its
 * arguments.
 *
 * ----- .npy, versions 1.0, 2.0 and 3.0 (numpy/lib/format.py) -----
 *
 *   0  6  magic "\x93NUMPY"
 *   6  1  major version: 1, 2 or 3
 *   7  1  minor version: 0
 *   8  2  v1: header length HLEN, little-endian u16 (data at 10 + HLEN)
 *   8  4  v2, v3: HLEN, little-endian u32 (data at 12 + HLEN)
 *  10/12  HLEN bytes of a Python dict literal, latin-1 (v3: UTF-8),
 *         padded with spaces and ended by '\n' so that the data is
 *         64-byte aligned:
 *           {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 *         descr: byte order ('<' little, '>' big, '|' not applicable,
 *         '=' native), kind ('f' float, 'i' signed, 'u' unsigned, 'b'
 *         bool) and size in bytes; exactly these three keys
 *   then   the elements, C order (last index fastest) or, with
 *          fortran_order True, Fortran order (first index fastest)
 *
 * ----- .safetensors (huggingface/safetensors, docs "Format") -----
 *
 *   0  8  N, the JSON header's length, little-endian u64 (<= 100 MB)
 *   8  N  a UTF-8 JSON object, possibly padded with trailing spaces:
 *           {"__metadata__": {"key": "value", ...},        (optional)
 *            "name": {"dtype": "F16", "shape": [4096, 1024],
 *                     "data_offsets": [BEGIN, END]}, ...}
 *         dtype: BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32
 *         F32 F64 I64 U64 (others exist: listed, not decoded)
 *   8+N   the byte buffer; a tensor's data is [8+N+BEGIN, 8+N+END),
 *         little-endian, C order, END - BEGIN = elements x element size
 */
#ifndef TFS_TENSOR_H
#define TFS_TENSOR_H

#include <stddef.h>
#include <stdint.h>

/* ===== element types ===== */

enum tfs_tensor_dtype {
	TFS_TENSOR_FP64,
	TFS_TENSOR_FP32,
	TFS_TENSOR_FP16,
	TFS_TENSOR_BF16,
	TFS_TENSOR_FP8_E4M3, /* OCP E4M3FN: no inf, NaN S.1111.111, max 448 */
	TFS_TENSOR_FP8_E5M2, /* IEEE-like: inf S.11111.00, NaN, max 57344 */
	TFS_TENSOR_INT8,
	TFS_TENSOR_INT16,
	TFS_TENSOR_INT32,
	TFS_TENSOR_INT64,
	TFS_TENSOR_UINT8,
	TFS_TENSOR_UINT16,
	TFS_TENSOR_UINT32,
	TFS_TENSOR_UINT64,
	TFS_TENSOR_BOOL,
	TFS_TENSOR_NDTYPES
};

/* What the bits of an element are. */
enum tfs_tensor_kind {
	TFS_TENSOR_FLOAT,
	TFS_TENSOR_SIGNED,
	TFS_TENSOR_UNSIGNED,
	TFS_TENSOR_BOOLEAN
};

/*
 * The dtype a name stands for, or -EINVAL.  Case-insensitive; takes
 * tensorfs's names (fp16, bf16, fp8_e4m3, int64, uint8, bool: those of
 * tensorfs.ini's dtype), numpy's (float16, bfloat16, float8_e4m3fn,
 * float8_e5m2, int64, bool_) and typestrs ('<f2', '|u1', 'f4', '=i8';
 * a '>' big-endian typestr is -EINVAL), PyTorch's (torch.float16, half,
 * float, double, long, int, short) and safetensors' (F16, BF16, F8_E4M3,
 * F8_E5M2, I64, U8, BOOL).
 */
int tfs_tensor_dtype_lookup(const char *name);

/* tensorfs's name ("fp16"), numpy's ("float16", also for bf16 and fp8:
 * "bfloat16", as ml_dtypes names them) and safetensors' ("F16"); "?"
 * for a dtype out of range.  Static strings. */
const char *tfs_tensor_dtype_name(int dtype);
const char *tfs_tensor_dtype_numpy(int dtype);
const char *tfs_tensor_dtype_safetensors(int dtype);
/* Bytes per element, 0 for a dtype out of range. */
size_t tfs_tensor_dtype_size(int dtype);
enum tfs_tensor_kind tfs_tensor_dtype_kind(int dtype);

/* ===== elements ===== */

/*
 * One element at p (little-endian, any alignment) as a double.  Exact
 * for every float dtype, subnormals, signed zeros and infinities
 * included (a NaN stays a NaN, with its sign), and for integers up to
 * 2^53; larger int64 and uint64 values are rounded.  bool is 0 or 1
 * (any non-zero byte is true).
 */
double tfs_tensor_to_double(int dtype, const void *p);
/* An integer or bool element exactly; uint64 values above INT64_MAX
 * wrap in _to_int64, use _to_uint64. */
int64_t tfs_tensor_to_int64(int dtype, const void *p);
uint64_t tfs_tensor_to_uint64(int dtype, const void *p);

/* The decoders behind tfs_tensor_to_double(), by bit pattern. */
double tfs_tensor_fp16_to_double(uint16_t bits);
double tfs_tensor_bf16_to_double(uint16_t bits);
double tfs_tensor_e4m3_to_double(uint8_t bits);
double tfs_tensor_e5m2_to_double(uint8_t bits);

/*
 * v rounded to the nearest value of a float dtype (ties to even), stored
 * little-endian at out (tfs_tensor_dtype_size() bytes).  Out of range
 * values become inf, or NaN for fp8_e4m3, which has no inf.  Returns 0,
 * or -EINVAL for a dtype that is not a float.
 */
int tfs_tensor_from_double(int dtype, double v, void *out);

/*
 * The shortest decimal that reads back as v in a float dtype (as
 * numpy's and Python's repr choose it: the fewest significant digits,
 * and of those the nearest to v): its digits, without sign or point,
 * into digits ("15" for 1.5e-3), and the decimal exponent of the first
 * digit into *exp10 (-3), so that |v| = d.ddd x 10^exp10.  Zero is "0"
 * with exponent 0.  v must be finite and a value of dtype.  Returns the
 * number of digits (1..17), or -EINVAL (not a float dtype, not finite,
 * len below 18).
 */
int tfs_tensor_shortest(int dtype, double v, char *digits, size_t len,
			int *exp10);

/* ===== shapes ===== */

#define TFS_TENSOR_MAX_DIMS 64 /* as numpy 2's NPY_MAXDIMS */

struct tfs_tensor_shape {
	unsigned int ndim; /* 0: a scalar, one element */
	uint64_t dim[TFS_TENSOR_MAX_DIMS];
};

/*
 * Parse "4096,1024", "(4096, 1024)", "[4096, 1024]", "(3,)"; "" and
 * "()" are a scalar.  Spaces are allowed between the tokens.  Returns 0,
 * -EINVAL (not a shape; *out is then unspecified) or -E2BIG (more than
 * TFS_TENSOR_MAX_DIMS dimensions).
 */
int tfs_tensor_shape_parse(const char *s, struct tfs_tensor_shape *out);

/* Format as "4096,1024" (a scalar as "()"), which parses back; python
 * != 0 formats as Python does, "(4096, 1024)", "(3,)".  Truncates to
 * len; returns buf. */
char *tfs_tensor_shape_format(const struct tfs_tensor_shape *s, int python,
			      char *buf, size_t len);

/* The number of elements into *count: 0 or -EOVERFLOW. */
int tfs_tensor_shape_count(const struct tfs_tensor_shape *s, uint64_t *count);

/*
 * Whether shape s of dtype takes exactly bytes bytes.  Returns 0, or
 * -EINVAL with a sentence in err (may be NULL) saying how many bytes the
 * shape needs and how many there are, or that the bytes are no whole
 * number of elements.
 */
int tfs_tensor_shape_check(const struct tfs_tensor_shape *s, int dtype,
			   uint64_t bytes, char *err, size_t len);

/* ===== file headers ===== */

enum tfs_tensor_format {
	TFS_TENSOR_RAW, /* no header known: the file is bare elements */
	TFS_TENSOR_NPY,
	TFS_TENSOR_SAFETENSORS,
	TFS_TENSOR_TORCH, /* a torch.save file: torch.h reads it */
	TFS_TENSOR_NPZ	  /* an np.savez zip archive: npz.h reads it */
};

/* A tensor of a file. */
struct tfs_tensor {
	char *name; /* the safetensors key, the torch.save path
		       ("state.0.exp_avg"), the .npz array's name; "" for
		       a .npy file */
	int dtype;  /* enum tfs_tensor_dtype, or -1: not one we decode */
	char dtype_name[24]; /* as the header spells it: "<f4", "BF16" */
	struct tfs_tensor_shape shape;
	int fortran_order; /* .npy: elements in Fortran order */
	int big_endian;	   /* .npy: a '>' descr; bytes need swapping */
	uint64_t offset;   /* of the first byte of data, in the file */
	uint64_t nbytes;   /* bytes of data (strided: from the first
			      element to the last) */
	uint64_t *stride;  /* torch: strides in elements, ndim of them;
			      NULL when C-contiguous */
	/* an .npz array that np.savez_compressed deflated: offset and
	 * nbytes are then within its entry's inflated bytes, and zip says
	 * where the entry lies in the file (at: its compressed data), for
	 * tfs_zip_inflate() */
	int deflated;
	struct {
		uint64_t at, csize, size;
		uint32_t crc;
	} zip;
};

/* A file's tensors.  A plain struct the caller reads (as struct
 * tfs_config), freed with tfs_tensor_list_free(). */
struct tfs_tensor_list {
	enum tfs_tensor_format format;
	uint64_t data_offset; /* where the header ends and the data begins */
	size_t count;
	struct tfs_tensor *tensors; /* by offset, then name; torch: in
				       the order of the saved structure */
	size_t nmeta;
	char **meta; /* __metadata__: key meta[2i], value meta[2i + 1] */
};

/* The largest safetensors header accepted, as the safetensors crate's
 * MAX_HEADER_SIZE. */
#define TFS_TENSOR_SAFETENSORS_MAX_HEADER 100000000u

/*
 * What the first len bytes of a file are: TFS_TENSOR_NPY (the magic),
 * TFS_TENSOR_SAFETENSORS (a header length up to the limit, then '{' and
 * '"', '}' or a space), TFS_TENSOR_TORCH (a zip archive's "PK\3\4",
 * torch.save's or np.savez's, or the legacy torch.save format's magic:
 * *header_len is 0), else
 * TFS_TENSOR_RAW.  For a header, *header_len
 * (may be NULL) is the number of bytes from the start of the file that
 * the parser needs; a file shorter than that has a truncated header.
 * 16 bytes are enough to decide; fewer than 10 can only say raw.
 */
enum tfs_tensor_format tfs_tensor_probe(const void *buf, size_t len,
					uint64_t *header_len);

/*
 * Parse the header of a .npy or a .safetensors file: buf holds the
 * file's first len bytes (at least the *header_len of
 * tfs_tensor_probe()).  With file_size known (not UINT64_MAX), the data
 * is checked to lie within the file (.npy: to fill it exactly).  On
 * success returns 0 and *out (caller frees with tfs_tensor_list_free());
 * on failure *out is NULL and returns -EINVAL (malformed or truncated:
 * err says what is wrong, lowercase, no file name) or -ENOMEM;
 * tfs_tensor_parse_npy() returns -ENOTSUP for a valid header of a dtype
 * it does not decode (complex, strings, structured).  Any bytes are
 * safe to pass.
 */
int tfs_tensor_parse_npy(const void *buf, size_t len, uint64_t file_size,
			 struct tfs_tensor_list **out, char *err,
			 size_t errlen);
/* As tfs_tensor_parse_npy(), but a valid header of a dtype not decoded
 * (with file_size known) is a tensor of dtype -1: dtype_name its descr
 * ("<U5", "|O"), its shape, all the bytes after the header as nbytes. */
int tfs_tensor_parse_npy_any(const void *buf, size_t len, uint64_t file_size,
			     struct tfs_tensor_list **out, char *err,
			     size_t errlen);
int tfs_tensor_parse_safetensors(const void *buf, size_t len,
				 uint64_t file_size,
				 struct tfs_tensor_list **out, char *err,
				 size_t errlen);
/* Probe, then the parser of that format; -EINVAL for raw bytes. */
int tfs_tensor_parse(const void *buf, size_t len, uint64_t file_size,
		     struct tfs_tensor_list **out, char *err, size_t errlen);

/* For the parsers of other formats (torch.c): a new empty list (NULL
 * when out of memory), and a new zeroed tensor at its end named name
 * (copied), borrowed until the next tfs_tensor_list_add(), or NULL. */
struct tfs_tensor_list *tfs_tensor_list_new(enum tfs_tensor_format format);
struct tfs_tensor *tfs_tensor_list_add(struct tfs_tensor_list *l,
				       const char *name);

/* The tensor named name, borrowed from l, or NULL. */
const struct tfs_tensor *tfs_tensor_list_find(const struct tfs_tensor_list *l,
					      const char *name);

/* ===== DeepSpeed's swap files ===== */

/*
 * The dtype of a DeepSpeed ZeRO-3 swap file, from its path, or -ENOENT.
 * DeepSpeed writes raw elements and names their dtype in the directory:
 *   NVME/zero_stage_3/{float16,bfloat16,float32}params/rankN/ID_param.tensor.swp
 *     (deepspeed/runtime/swap_tensor/partitioned_param_swapper.py,
 *     AsyncPartitionedParameterSwapper._configure_aio: the folder is
 *     f'{torch_dtype_string}params', str(self.dtype) without "torch.")
 *   NVME/zero_stage_3/optimizer/rankN/...swp: fp32
 *     (optimizer_utils.py, OptimizerSwapper.__init__: the folder
 *     'optimizer' of the fp32 partitions and their optimizer state)
 * The rankN level is optional (DeepSpeed before 0.6 had none).  path
 * should be absolute (realpath()); the file name must end in ".swp".
 */
int tfs_tensor_deepspeed_dtype(const char *path);

/* Free a list and everything in it; NULL is a no-op. */
void tfs_tensor_list_free(struct tfs_tensor_list *l);

#endif
