/*
 * cat.c: tensorfs-cat, the values of a tensor in a file, as numpy
 * prints them, or their statistics.
 *
 * What the bytes are comes, field by field, from the first source that
 * has it: the flags (--dtype, --shape, --offset), the extended
 * attributes user.tensor.dtype and user.tensor.shape, the file's own
 * header (.npy, or the --tensor of a .safetensors file, parsed by
 * lib/tensor/tensor.c, or of a torch.save file, by lib/tensor/torch.c,
 * whose tensors may be strided views: elements are then reached through
 * the strides).  --offset means "raw": no header is read.  A header's
 * shape goes with its dtype only; without a shape the tensor is 1-D.
 * The shape must account for every byte of the data, or exit 1.
 *
 * Values.  numpy's repr (numpy/_core/arrayprint.py, numpy 2.2 and
 * later, the defaults: precision 8, floatmode 'maxprec', no suppress,
 * threshold 1000, edgeitems 3, linewidth 75) is followed step by step:
 * which elements are shown (_leading_trailing: the first and last 3 of
 * every axis longer than 6 once the tensor has more than 1000), one
 * format for them all (FloatingFormat.fillFormat: scientific when the
 * largest magnitude is >= 1e8 or the largest/smallest ratio is > 1000
 * or the smallest is < 1e-4; each value's shortest unique digits in its
 * own dtype, at most 8 after the point; common padding) and the line
 * wrapping of _formatArray.  Only the shown elements are read, by
 * index, so a 10 GiB tensor prints at once.
 *
 * Statistics.  One pass in blocks of 1 MiB, constant memory: each block
 * is decoded into doubles, its finite values' mean and sum of squared
 * deviations computed in two passes over the block, and the block merged
 * into the running totals with Chan et al.'s pairwise update (the
 * block-wise form of Welford's method), which stays accurate over
 * billions of elements.  Holes of a sparse file (SEEK_DATA/SEEK_HOLE)
 * are counted as zeros without being read.  min, max, mean and std are
 * over the finite values; NaN and infinities are counted apart.
 *
 * --stats DIR walks a tree and checks each file in a child process (a
 * data error exits, and must end that file's check only), streaming one
 * line per tensor: memory stays that of one file's check.
 *
 * Exit status: 0 done, 1 a data error (a file that cannot be read, a
 * malformed header, a shape that disagrees with the data, an unknown
 * --tensor), 2 a usage error, 3 (--stats DIR) a NaN or Inf found.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "closeout.h"
#include "npz.h"
#include "read.h"
#include "tensor.h"
#include "units.h"

#define EXIT_DATA  1
#define EXIT_USAGE 2

#define BLOCK	  (1u << 20) /* bytes read at once */
#define THRESHOLD 1000	     /* numpy: summarise above this many */
#define EDGE	  3	     /* numpy: items shown at each end */
#define LINEWIDTH 75	     /* numpy's linewidth */
#define PRECISION 8	     /* numpy's precision */
#define MAX_SHOWN (1u << 20) /* elements a print may show */

static const char *prog = "tensorfs-cat";

/* clang-format off: the text as --help prints it */
static void usage(FILE *f)
{
	fputs(
	    "Usage: tensorfs-cat [OPTIONS] FILE\n"
	    "       tensorfs-cat --stats [--json] DIR\n"
	    "\n"
	    "Print the tensor in FILE as numpy prints it (repr of an ndarray: "
	    "nested\n"
	    "brackets by shape, the first and last 3 items of each dimension "
	    "with\n"
	    "'...' between them once there are more than 1000 elements, the "
	    "shortest\n"
	    "digits that tell each value apart in its own dtype, at most 8 "
	    "after the\n"
	    "point), or, with --stats, its statistics.  FILE is any file, on "
	    "a\n"
	    "tensorfs mount or not: a .npy file, an .npz file (np.savez or\n"
	    "np.savez_compressed), a .safetensors file, a torch.save file "
	    "(the zip\n"
	    "format of PyTorch 1.6 and later, or the legacy one; read without "
	    "running\n"
	    "it) or raw elements.  FILE - is standard input.  Input that "
	    "cannot seek\n"
	    "(a pipe), and an array np.savez_compressed deflated, is first "
	    "copied\n"
	    "whole (inflated) into an unnamed temporary file under $TMPDIR "
	    "(/tmp);\n"
	    "anything else is read where it lies.\n"
	    "\n"
	    "Options:\n"
	    "  -d, --dtype TYPE   element type: fp64, fp32, fp16, bf16, "
	    "fp8_e4m3\n"
	    "                     (OCP E4M3FN), fp8_e5m2, int8, int16, int32, "
	    "int64,\n"
	    "                     uint8, uint16, uint32, uint64, bool; numpy's "
	    "and\n"
	    "                     safetensors' names work too (float16, '<f2', "
	    "F16,\n"
	    "                     BF16, F8_E4M3, I64, U8, BOOL)\n"
	    "  -s, --shape S      dimensions, e.g. 4096,1024 or '(4096, "
	    "1024)'; ()\n"
	    "                     is a scalar.  Default: one dimension, as "
	    "many\n"
	    "                     elements as the data holds\n"
	    "  -o, --offset N     the data starts at byte N (4096, 4K, 1MiB); "
	    "the\n"
	    "                     file is then read as raw elements, its "
	    "header is\n"
	    "                     ignored\n"
	    "  -t, --tensor NAME  the tensor NAME of a .safetensors file, the "
	    "array\n"
	    "                     NAME of an .npz file (arr_0 for np.savez's "
	    "first\n"
	    "                     positional array), or the tensor of a "
	    "torch.save\n"
	    "                     file, where NAME is its path in the saved\n"
	    "                     structure: model.layers.0.weight, "
	    "state.0.exp_avg\n"
	    "      --stats        print count, min, max, mean, std (of the "
	    "finite\n"
	    "                     values; std as numpy's, ddof 0) and the "
	    "number of\n"
	    "                     NaN, infinite and zero elements, reading the "
	    "data\n"
	    "                     once in 1 MiB blocks (holes of sparse files "
	    "are\n"
	    "                     counted as zeros without reading them)\n"
	    "      --json         print one JSON object instead: dtype, "
	    "shape,\n"
	    "                     offset, and the values as nested lists "
	    "(floats\n"
	    "                     exact, NaN and infinities as the strings "
	    "\"nan\",\n"
	    "                     \"inf\", \"-inf\", items left out as "
	    "\"...\"), or\n"
	    "                     the statistics, or the list of tensors\n"
	    "  -h, --help         print this help and exit\n"
	    "  -V, --version      print the version and exit\n"
	    "\n"
	    "Where the dtype and shape come from, each from the first that has "
	    "it:\n"
	    "  1. --dtype and --shape\n"
	    "  2. the extended attributes user.tensor.dtype and "
	    "user.tensor.shape\n"
	    "     (setfattr -n user.tensor.dtype -v bf16 FILE), in the syntax "
	    "of the\n"
	    "     options\n"
	    "  3. the file's header: a .npy file's, or with --tensor NAME the\n"
	    "     .safetensors, .npz or torch.save entry of NAME.  A header's "
	    "shape\n"
	    "     is used only with the header's dtype\n"
	    "  4. for a raw file in DeepSpeed's ZeRO-3 swap tree, its "
	    "directory:\n"
	    "     zero_stage_3/bfloat16params/rankN/*.swp is bf16, "
	    "float16params fp16,\n"
	    "     float32params and optimizer fp32\n"
	    "Without a dtype from any of them tensorfs-cat stops and asks for\n"
	    "--dtype.  The data is what follows the header (--offset: what "
	    "follows\n"
	    "byte N), all of it: a shape that needs more or fewer bytes is an "
	    "error.\n"
	    "\n"
	    "A .safetensors, .npz or torch.save file without --tensor is "
	    "listed: each\n"
	    "tensor's name, dtype, shape, offset and size in bytes, and the\n"
	    "__metadata__; with --stats, each tensor's statistics follow its "
	    "line.\n"
	    "\n"
	    "--stats DIR checks every regular file under DIR (recursively, "
	    "in name\n"
	    "order, not following symbolic links): one line per tensor, "
	    "FILE or\n"
	    "FILE:NAME for files of several, with dtype, shape, min, max, "
	    "mean and the\n"
	    "NaN and infinity counts (--json: one object per line), then a "
	    "summary\n"
	    "on stderr.  Files of no known dtype are skipped.  It answers "
	    "\"which\n"
	    "tensor went NaN?\" over a checkpoint or DeepSpeed's swap tree.\n"
	    "\n"
	    "Values are printed as numpy 2.2 and later print them, shape= "
	    "included\n"
	    "for a summarised array (numpy 1.x leaves it out); bf16 and fp8 "
	    "as\n"
	    "ml_dtypes names them (bfloat16, float8_e4m3fn, float8_e5m2).  "
	    "Files are\n"
	    "little-endian, as .safetensors and numpy on x86 and ARM write "
	    "them; a\n"
	    "big-endian .npy ('>f4') is byte-swapped.\n"
	    "\n"
	    "Exit status:\n"
	    "  0  the tensor was printed\n"
	    "  1  a data error: FILE cannot be read, its header is malformed, "
	    "the\n"
	    "     shape disagrees with the size of the data, no tensor NAME, "
	    "the\n"
	    "     output cannot be written\n"
	    "  2  a usage error: an unknown option, dtype or shape syntax, or "
	    "no\n"
	    "     dtype known for FILE\n"
	    "  3  --stats DIR: some tensor holds a NaN or an infinity (1 when "
	    "none\n"
	    "     does but a file could not be read)\n"
	    "\n"
	    "Examples:\n"
	    "  tensorfs-cat weights.npy\n"
	    "  tensorfs-cat --stats model.safetensors\n"
	    "  tensorfs-cat -t model.embed_tokens.weight model.safetensors\n"
	    "  tensorfs-cat -t optimizer.state.0.exp_avg checkpoint.pt\n"
	    "  tensorfs-cat -t grads activations.npz\n"
	    "  tensorfs-cat --stats /local_nvme/zero_stage_3 || echo diverged\n"
	    "  tensorfs-cat --dtype bf16 --shape 4096,1024 "
	    "/mnt/tensorfs/param.swp\n",
	    f);
}
/* clang-format on */

/* die(CODE, FMT, ...): tfs_die() as this program, with the hint of
 * --help after a usage error */
#define die(code, ...) tfs_die(prog, code, (code) == EXIT_USAGE, __VA_ARGS__)

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die(EXIT_DATA, "out of memory (%zu bytes)", n);
	return p;
}

/* $TMPDIR, or /tmp. */
static const char *tmp_dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

/* An unnamed temporary file in tmp_dir(), or -1 with errno. */
static int tmp_file(void)
{
	const char *dir = tmp_dir();
	char tmpl[PATH_MAX];
	int t;

	t = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (t < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
		/* a file system without O_TMPFILE: named, then unlinked */
		snprintf(tmpl, sizeof(tmpl), "%s/tensorfs-cat.XXXXXX", dir);
		t = mkostemp(tmpl, O_CLOEXEC);
		if (t >= 0)
			unlink(tmpl);
	}
	return t;
}

/* All of len bytes at buf to fd, or -1 with errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	for (size_t o = 0; o < len;) {
		ssize_t w = write(fd, (const char *)buf + o, len - o);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		o += (size_t)w;
	}
	return 0;
}

/* ===== strings ===== */

struct sb {
	char *s;
	size_t len, cap;
};

static void sb_addn(struct sb *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->s = realloc(b->s, cap);
		if (!b->s)
			die(EXIT_DATA, "out of memory");
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_add(struct sb *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

static void sb_spaces(struct sb *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_addn(b, " ", 1);
}

/* ===== the file ===== */

/* What is read, and where each part of it came from. */
struct src {
	const char *path;
	int fd;
	uint64_t file_size;
	int dtype;
	const char *dtype_from; /* "--dtype", "the user.tensor.dtype attribute" */
	struct tfs_tensor_shape shape;
	const char *shape_from; /* NULL: one dimension, derived */
	int fortran, swap;
	const uint64_t *stride; /* torch: element strides, or NULL */
	int format;		/* of the header: enum tfs_tensor_format */
	uint64_t offset, nbytes, count;
	const char *name; /* the safetensors tensor, or NULL */
};

/* Read exactly len bytes at off, or exit 1 saying why. */
static void read_at(const struct src *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(s->fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die(EXIT_DATA, "'%s': cannot read at byte %llu: %s",
			    s->path, (unsigned long long)(off + done),
			    strerror(errno));
		if (r == 0)
			die(EXIT_DATA,
			    "'%s': ends at byte %llu, before the %llu bytes "
			    "it had when opened; is it being written?",
			    s->path, (unsigned long long)(off + done),
			    (unsigned long long)s->file_size);
		done += (size_t)r;
	}
}

/* An xattr as a trimmed string into buf: 1, or 0 if there is none. */
static int get_xattr(const struct src *s, const char *name, char *buf,
		     size_t len)
{
	ssize_t n = fgetxattr(s->fd, name, buf, len - 1);

	if (n < 0) {
		if (errno == ERANGE)
			die(EXIT_DATA,
			    "'%s': attribute %s is longer than %zu "
			    "bytes; fix it with setfattr",
			    s->path, name, len - 1);
		return 0; /* ENODATA, ENOTSUP: none */
	}
	while (n > 0 &&
	       (buf[n - 1] == '\0' || buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 1;
}

/* ===== reading elements by index ===== */

struct reader {
	const struct src *s;
	size_t es;
	unsigned char *buf;
	uint64_t at, len; /* bytes of the data in buf: [at, at + len) */
	unsigned char tmp[8];
};

/* Element i of the data (flat, in file order), little-endian. */
static const unsigned char *elem_at(struct reader *r, uint64_t i)
{
	uint64_t off = i * r->es;
	const unsigned char *p;

	if (!r->buf)
		r->buf = xmalloc(BLOCK);
	if (off < r->at || off + r->es > r->at + r->len) {
		r->at = off / BLOCK * BLOCK;
		r->len =
		    r->s->nbytes - r->at < BLOCK ? r->s->nbytes - r->at : BLOCK;
		read_at(r->s, r->buf, (size_t)r->len, r->s->offset + r->at);
	}
	p = r->buf + (off - r->at);
	/* dtypes are at most 8 bytes (complex types are not decoded) */
	if (!r->s->swap || r->es > sizeof(r->tmp))
		return p;
	for (size_t k = 0; k < r->es; k++)
		r->tmp[k] = p[r->es - 1 - k];
	return r->tmp;
}

/* ===== numbers as text ===== */

/* An element, decoded once. */
struct val {
	double d;  /* floats; ints too, for JSON and statistics */
	int64_t i; /* ints and bool exactly (uint64 as its bits) */
};

static struct val decode(int dt, const unsigned char *p)
{
	struct val v;

	v.d = tfs_tensor_to_double(dt, p);
	v.i = tfs_tensor_dtype_kind(dt) == TFS_TENSOR_FLOAT
		  ? 0
		  : tfs_tensor_to_int64(dt, p);
	return v;
}

static int is_unsigned(int dt)
{
	return tfs_tensor_dtype_kind(dt) == TFS_TENSOR_UNSIGNED;
}

/* An integer element as text. */
static void int_text(int dt, int64_t i, char *buf, size_t len)
{
	if (is_unsigned(dt))
		snprintf(buf, len, "%llu", (unsigned long long)(uint64_t)i);
	else
		snprintf(buf, len, "%lld", (long long)i);
}

/*
 * A finite value as Python's repr writes a float, with the shortest
 * digits of dtype: "0.1", "448.0", "1e-05", "1.5e+16".
 */
static void py_repr(int dt, double v, char *buf, size_t len)
{
	char d[24], *o = buf;
	int e, n = tfs_tensor_shortest(dt, v, d, sizeof(d), &e);

	if (n < 0) {
		snprintf(buf, len, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
		return;
	}
	if (len < 40) {
		buf[0] = '\0';
		return;
	}
	if (signbit(v))
		*o++ = '-';
	if (e >= -4 && e < 16) {
		if (e < 0) {
			o += sprintf(o, "0.");
			for (int k = -1; k > e; k--)
				*o++ = '0';
			o += sprintf(o, "%s", d);
		} else if (n <= e + 1) {
			/* every integer digit, as numpy's scalars print */
			o += sprintf(o, "%.0f.0", fabs(v));
		} else {
			o += sprintf(o, "%.*s.%s", e + 1, d, d + e + 1);
		}
		*o = '\0';
	} else {
		*o++ = d[0];
		if (n > 1)
			o += sprintf(o, ".%s", d + 1);
		sprintf(o, "e%c%02d", e < 0 ? '-' : '+', abs(e));
	}
}

/* ===== numpy's element formats ===== */

struct fmt {
	int dt;
	enum tfs_tensor_kind kind;
	/* floats */
	int exp_format, pad_left, pad_right, precision, exp_size;
	/* integers: width; bool: width of True (4 or 5) */
	int width;
};

/* The positional text of finite v with at most cap digits after the
 * point, trailing zeros trimmed ("1.", "0.25", "-3.14159265"): integer
 * part (with sign) into ip, fraction (without point) into fp. */
static void positional(int dt, double v, int cap, char *ip, char *fp)
{
	char d[24], buf[400], *dot;
	int e, n = tfs_tensor_shortest(dt, v, d, sizeof(d), &e);
	int frac = n - 1 - e > 0 ? n - 1 - e : 0;
	char *o = ip;

	if (signbit(v))
		*o++ = '-';
	if (frac > cap) {
		size_t k;

		snprintf(buf, sizeof(buf), "%.*f", cap, fabs(v));
		dot = strchr(buf, '.');
		*dot = '\0';
		strcpy(o, buf);
		for (k = strlen(dot + 1); k > 0 && dot[k] == '0'; k--)
			;
		memcpy(fp, dot + 1, k);
		fp[k] = '\0';
		return;
	}
	if (n <= e + 1) {
		/* Dragon4 prints every integer digit, the exact ones
		 * (87599216., not 87599220.) */
		snprintf(o, 400 - (size_t)(o - ip), "%.0f", fabs(v));
		fp[0] = '\0';
	} else if (e >= 0) {
		memcpy(o, d, (size_t)e + 1);
		o[e + 1] = '\0';
		strcpy(fp, d + e + 1);
	} else {
		strcpy(o, "0");
		o = fp;
		for (int k = -1; k > e; k--)
			*o++ = '0';
		strcpy(o, d);
	}
}

/* The scientific text of finite v: with prec < 0 the shortest digits
 * (at most 8 after the point, trailing zeros trimmed), else exactly prec
 * digits after the point unless the shortest has exactly that many.
 * Mantissa's first digit (with sign) into ip, its fraction into fp,
 * exponent into *exp. */
static void scientific(int dt, double v, int prec, char *ip, char *fp, int *exp)
{
	char d[24], buf[64], *dot, *ep;
	int e, n = tfs_tensor_shortest(dt, v, d, sizeof(d), &e);
	char *o = ip;

	if (signbit(v))
		*o++ = '-';
	if ((prec < 0 && n - 1 <= PRECISION) || n - 1 == prec) {
		*o++ = d[0];
		*o = '\0';
		strcpy(fp, d + 1);
		*exp = e;
		return;
	}
	snprintf(buf, sizeof(buf), "%.*e", prec < 0 ? PRECISION : prec,
		 fabs(v));
	ep = strchr(buf, 'e');
	*exp = atoi(ep + 1);
	*ep = '\0';
	dot = strchr(buf, '.');
	*o++ = buf[0];
	*o = '\0';
	strcpy(fp, dot ? dot + 1 : "");
	if (prec < 0) {
		size_t k = strlen(fp);

		while (k > 0 && fp[k - 1] == '0')
			k--;
		fp[k] = '\0';
	}
}

/* v rounded to dtype, for comparisons numpy makes in the dtype. */
static double in_dtype(int dt, double v)
{
	unsigned char b[8];

	if (tfs_tensor_from_double(dt, v, b))
		return v;
	return tfs_tensor_to_double(dt, b);
}

static int digits10(int v)
{
	int n = 1;

	for (v = abs(v); v >= 10; v /= 10)
		n++;
	return n;
}

/* Integers: the width of the widest. */
static void fmt_setup_int(struct fmt *f, int dt, const struct val *v, size_t n)
{
	char a[32];

	for (size_t k = 0; k < n; k++) {
		int w;

		int_text(dt, v[k].i, a, sizeof(a));
		w = (int)strlen(a);
		if (w > f->width)
			f->width = w;
	}
}

/* Floats: positional or scientific, and the padding, as numpy's
 * FloatingFormat.fillFormat works them out. */
static void fmt_setup_float(struct fmt *f, int dt, const struct val *v,
			    size_t n)
{
	double max = 0, min = INFINITY;
	size_t finite = 0;
	int neginf = 0, nonfinite = 0;
	char ip[400], fp[400];
	int e;

	for (size_t k = 0; k < n; k++) {
		double a = fabs(v[k].d);

		if (!isfinite(v[k].d)) {
			nonfinite = 1;
			neginf |= isinf(v[k].d) && v[k].d < 0;
			continue;
		}
		finite++;
		if (a == 0)
			continue;
		if (a > max)
			max = a;
		if (a < min)
			min = a;
	}
	if (max > 0 && (max >= in_dtype(dt, 1e8) || min < in_dtype(dt, 1e-4) ||
			in_dtype(dt, max / min) > in_dtype(dt, 1000.)))
		f->exp_format = 1;
	if (!finite) {
		f->pad_left = f->pad_right = 0;
	} else if (f->exp_format) {
		f->exp_size = 2;
		for (size_t k = 0; k < n; k++) {
			if (!isfinite(v[k].d))
				continue;
			scientific(dt, v[k].d, -1, ip, fp, &e);
			if ((int)strlen(fp) > f->precision)
				f->precision = (int)strlen(fp);
			if ((int)strlen(ip) > f->pad_left)
				f->pad_left = (int)strlen(ip);
			if (digits10(e) > f->exp_size)
				f->exp_size = digits10(e);
		}
		f->pad_right = f->exp_size + 2 + f->precision;
	} else {
		for (size_t k = 0; k < n; k++) {
			if (!isfinite(v[k].d))
				continue;
			positional(dt, v[k].d, PRECISION, ip, fp);
			if ((int)strlen(ip) > f->pad_left)
				f->pad_left = (int)strlen(ip);
			if ((int)strlen(fp) > f->pad_right)
				f->pad_right = (int)strlen(fp);
		}
	}
	if (nonfinite) {
		int off = f->pad_right + 1;

		if (3 - off > f->pad_left)
			f->pad_left = 3 - off;
		if (3 + neginf - off > f->pad_left)
			f->pad_left = 3 + neginf - off;
	}
}

/* numpy's _get_format_function for the shown values v[0..n). */
static void fmt_setup(struct fmt *f, int dt, const struct val *v, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->dt = dt;
	f->kind = tfs_tensor_dtype_kind(dt);
	if (f->kind == TFS_TENSOR_BOOLEAN) {
		f->width = 5;
		return;
	}
	if (f->kind != TFS_TENSOR_FLOAT)
		fmt_setup_int(f, dt, v, n);
	else
		fmt_setup_float(f, dt, v, n);
}

/* One element as the format prints it. */
static void fmt_elem(const struct fmt *f, const struct val *v, int zero_d,
		     struct sb *out)
{
	char ip[400], fp[400], buf[64];
	int e;

	switch (f->kind) {
	case TFS_TENSOR_BOOLEAN:
		sb_add(out, v->i ? (zero_d ? "True" : " True") : "False");
		return;
	case TFS_TENSOR_SIGNED:
	case TFS_TENSOR_UNSIGNED:
		int_text(f->dt, v->i, ip, sizeof(ip));
		sb_spaces(out, (size_t)(f->width - (int)strlen(ip)));
		sb_add(out, ip);
		return;
	case TFS_TENSOR_FLOAT:
		break;
	}
	if (!isfinite(v->d)) {
		const char *t = isnan(v->d) ? "nan" : v->d < 0 ? "-inf" : "inf";
		int w = f->pad_left + f->pad_right + 1 - (int)strlen(t);

		sb_spaces(out, w > 0 ? (size_t)w : 0);
		sb_add(out, t);
		return;
	}
	if (f->exp_format) {
		scientific(f->dt, v->d, f->precision, ip, fp, &e);
		sb_spaces(out, (size_t)(f->pad_left - (int)strlen(ip)));
		sb_add(out, ip);
		sb_add(out, ".");
		sb_add(out, fp);
		snprintf(buf, sizeof(buf), "e%c%0*d", e < 0 ? '-' : '+',
			 f->exp_size, abs(e));
		sb_add(out, buf);
		return;
	}
	positional(f->dt, v->d, PRECISION, ip, fp);
	sb_spaces(out, (size_t)(f->pad_left - (int)strlen(ip)));
	sb_add(out, ip);
	sb_add(out, ".");
	sb_add(out, fp);
	sb_spaces(out, (size_t)(f->pad_right - (int)strlen(fp)));
}

/* ===== the shown elements ===== */

/* The elements numpy shows: per axis the first and last EDGE indices
 * when summarised and longer than 2 x EDGE, else all; densely, in C
 * order of the shown dimensions. */
struct shown {
	const struct src *s;
	int summarise;
	uint64_t dim[TFS_TENSOR_MAX_DIMS];    /* shown per axis */
	uint64_t stride[TFS_TENSOR_MAX_DIMS]; /* in v[] */
	uint64_t n;
	struct val *v;
};

static int cut(const struct shown *sh, unsigned int axis)
{
	return sh->summarise && sh->s->shape.dim[axis] > 2 * EDGE;
}

static void shown_read(struct shown *sh, const struct src *s)
{
	const struct tfs_tensor_shape *shape = &s->shape;
	uint64_t fstride[TFS_TENSOR_MAX_DIMS], idx[TFS_TENSOR_MAX_DIMS];
	struct reader r = { .s = s, .es = tfs_tensor_dtype_size(s->dtype) };
	unsigned int nd = shape->ndim;

	memset(sh, 0, sizeof(*sh));
	sh->s = s;
	sh->summarise = s->count > THRESHOLD;
	sh->n = 1;
	for (unsigned int a = 0; a < nd; a++) {
		sh->dim[a] = cut(sh, a) ? 2 * EDGE : shape->dim[a];
		if (__builtin_mul_overflow(sh->n, sh->dim[a], &sh->n) ||
		    sh->n > MAX_SHOWN)
			die(EXIT_DATA,
			    "'%s': %u dimensions show more than %u elements "
			    "even summarised; use --stats, or --shape with "
			    "fewer dimensions",
			    s->path, nd, MAX_SHOWN);
	}
	for (unsigned int a = nd; a-- > 0;)
		sh->stride[a] =
		    a + 1 < nd ? sh->stride[a + 1] * sh->dim[a + 1] : 1;
	/* strides of the file's elements: C order, Fortran's, or torch's */
	for (unsigned int a = 0; a < nd; a++) {
		unsigned int b = s->fortran ? a : nd - 1 - a;
		unsigned int prev = s->fortran ? b - 1 : b + 1;

		fstride[b] = a ? fstride[prev] * shape->dim[prev] : 1;
	}
	if (s->stride)
		memcpy(fstride, s->stride, nd * sizeof(fstride[0]));
	sh->v = xmalloc((size_t)(sh->n ? sh->n : 1) * sizeof(*sh->v));
	if (!s->count)
		sh->n = 0;
	for (uint64_t k = 0; k < sh->n; k++) {
		uint64_t at = 0, rest = k;

		for (unsigned int a = 0; a < nd; a++) {
			idx[a] = rest / sh->stride[a];
			rest %= sh->stride[a];
			if (cut(sh, a) && idx[a] >= EDGE)
				idx[a] = shape->dim[a] - 2 * EDGE + idx[a];
			at += idx[a] * fstride[a];
		}
		sh->v[k] = decode(s->dtype, elem_at(&r, at));
	}
	free(r.buf);
}

/* ===== numpy's repr ===== */

struct pr {
	const struct shown *sh;
	struct fmt f;
};

/* _extendLine: add word to line, wrapping at width */
static void extend(struct sb *s, struct sb *line, const char *word,
		   size_t width, size_t hang)
{
	if (line->len + strlen(word) > width && line->len > hang) {
		size_t n = line->len;

		while (n > 0 && line->s[n - 1] == ' ')
			n--;
		sb_addn(s, line->s, n);
		sb_add(s, "\n");
		line->len = 0;
		sb_spaces(line, hang);
	}
	sb_add(line, word);
}

/* _formatArray's recurser over axis, at base in the shown elements,
 * with a hanging indent of hang spaces and width columns; appends to
 * out. */
static void recurse(const struct pr *p, unsigned int axis, uint64_t base,
		    size_t hang, size_t width, struct sb *out)
{
	const struct shown *sh = p->sh;
	unsigned int left = sh->s->shape.ndim - axis;
	uint64_t n = sh->dim[axis];
	int summary = cut(sh, axis);
	struct sb s = { 0 }, line = { 0 }, word = { 0 };

	if (!left) {
		fmt_elem(&p->f, &sh->v[base], sh->s->shape.ndim == 0, out);
		return;
	}
	if (left == 1) {
		sb_spaces(&line, hang);
		for (uint64_t k = 0; k < n; k++) {
			word.len = 0;
			sb_add(&word, "");
			fmt_elem(&p->f, &sh->v[base + k], 0, &word);
			extend(&s, &line, word.s, width - 1, hang);
			if (k + 1 < n)
				sb_add(&line, ", ");
			if (summary && k + 1 == EDGE) {
				extend(&s, &line, "...", width - 1, hang);
				sb_add(&line, ", ");
			}
		}
		sb_addn(&s, line.s ? line.s : "", line.len);
	} else {
		for (uint64_t k = 0; k < n; k++) {
			sb_spaces(&s, hang);
			recurse(p, axis + 1, base + k * sh->stride[axis],
				hang + 1, width - 1, &s);
			if (k + 1 < n) {
				sb_add(&s, ",");
				for (unsigned int j = 1; j < left; j++)
					sb_add(&s, "\n");
			}
			if (summary && k + 1 == EDGE) {
				sb_spaces(&s, hang);
				sb_add(&s, "...,");
				for (unsigned int j = 1; j < left; j++)
					sb_add(&s, "\n");
			}
		}
	}
	sb_add(out, "[");
	if (s.len > hang)
		sb_addn(out, s.s + hang, s.len - hang);
	sb_add(out, "]");
	free(s.s);
	free(line.s);
	free(word.s);
}

static int dtype_implied(int dt)
{
	return dt == TFS_TENSOR_FP64 || dt == TFS_TENSOR_INT64 ||
	       dt == TFS_TENSOR_BOOL;
}

/* numpy's _array_repr_implementation */
static void print_repr(const struct src *s)
{
	struct shown sh;
	struct pr p;
	struct sb out = { 0 }, extra = { 0 };
	char shape[1400], buf[1500];
	const char *nl;
	size_t last;

	shown_read(&sh, s);
	p.sh = &sh;
	fmt_setup(&p.f, s->dtype, sh.v, sh.n);
	sb_add(&out, "array(");
	if (!s->count)
		sb_add(&out, "[]");
	else
		recurse(&p, 0, 0, strlen("array(") + 1, LINEWIDTH - 1, &out);
	tfs_tensor_shape_format(&s->shape, 1, shape, sizeof(shape));
	if ((!s->count && !(s->shape.ndim == 1 && s->shape.dim[0] == 0)) ||
	    sh.summarise) {
		snprintf(buf, sizeof(buf), "shape=%s", shape);
		sb_add(&extra, buf);
	}
	if (!dtype_implied(s->dtype) || !s->count) {
		snprintf(buf, sizeof(buf), "%sdtype=%s", extra.len ? ", " : "",
			 tfs_tensor_dtype_numpy(s->dtype));
		sb_add(&extra, buf);
	}
	if (!extra.len) {
		printf("%s)\n", out.s);
	} else {
		sb_add(&out, ",");
		nl = strrchr(out.s, '\n');
		last = out.len - (nl ? (size_t)(nl - out.s) + 1 : 0);
		printf("%s%s%s)\n", out.s,
		       last + extra.len + 1 + 1 > LINEWIDTH ? "\n      " : " ",
		       extra.s);
	}
	free(out.s);
	free(extra.s);
	free(sh.v);
}

/* ===== JSON ===== */

static json_t *json_num(int dt, const struct val *v)
{
	if (tfs_tensor_dtype_kind(dt) == TFS_TENSOR_BOOLEAN)
		return json_boolean(v->i);
	if (tfs_tensor_dtype_kind(dt) == TFS_TENSOR_SIGNED)
		return json_integer(v->i);
	if (is_unsigned(dt)) {
		char b[32];

		if (v->i >= 0)
			return json_integer(v->i);
		int_text(dt, v->i, b, sizeof(b));
		return json_string(b); /* above 2^63: exact as a string */
	}
	if (isnan(v->d))
		return json_string("nan");
	if (isinf(v->d))
		return json_string(v->d < 0 ? "-inf" : "inf");
	return json_real(v->d); /* %.17g: reads back as the same double */
}

static json_t *json_values(const struct shown *sh, unsigned int axis,
			   uint64_t base)
{
	json_t *a;

	if (axis == sh->s->shape.ndim)
		return json_num(sh->s->dtype, &sh->v[base]);
	a = json_array();
	for (uint64_t k = 0; k < sh->dim[axis]; k++) {
		json_array_append_new(
		    a, json_values(sh, axis + 1, base + k * sh->stride[axis]));
		if (cut(sh, axis) && k + 1 == EDGE)
			json_array_append_new(a, json_string("..."));
	}
	return a;
}

static json_t *json_shape(const struct tfs_tensor_shape *s)
{
	json_t *a = json_array();

	for (unsigned int i = 0; i < s->ndim; i++)
		json_array_append_new(a, json_integer((json_int_t)s->dim[i]));
	return a;
}

/* Print j (compact: values; indented: the rest) and free it. */
static void json_print(json_t *j, int compact)
{
	char *t = json_dumps(j, (compact ? JSON_COMPACT : JSON_INDENT(2)) |
				    JSON_REAL_PRECISION(17));

	if (!t)
		die(EXIT_DATA, "out of memory");
	puts(t);
	free(t);
	json_decref(j);
}

static json_t *json_src(const struct src *s)
{
	json_t *j = json_object();

	json_object_set_new(j, "file", json_string(s->path));
	if (s->name)
		json_object_set_new(j, "tensor", json_string(s->name));
	json_object_set_new(j, "dtype",
			    json_string(tfs_tensor_dtype_name(s->dtype)));
	json_object_set_new(j, "shape", json_shape(&s->shape));
	json_object_set_new(j, "offset", json_integer((json_int_t)s->offset));
	json_object_set_new(j, "nbytes", json_integer((json_int_t)s->nbytes));
	return j;
}

static void print_json_values(const struct src *s)
{
	struct shown sh;
	json_t *j = json_src(s);

	shown_read(&sh, s);
	json_object_set_new(j, "summarised", json_boolean(sh.summarise));
	json_object_set_new(j, "values",
			    s->count ? json_values(&sh, 0, 0) : json_array());
	free(sh.v);
	json_print(j, 1);
}

/* ===== statistics ===== */

struct stats {
	uint64_t count, finite, nan, inf, zeros;
	double mean, m2; /* of the finite values */
	double min, max;
	int64_t imin, imax; /* integers exactly (uint64 as bits) */
	int have_int;	    /* imin and imax are set */
};

static void stats_init(struct stats *st)
{
	memset(st, 0, sizeof(*st));
	st->min = INFINITY;
	st->max = -INFINITY;
}

/* Merge a block of n finite values with mean m and sum of squared
 * deviations m2 (Chan, Golub, LeVeque 1979). */
static void merge(struct stats *st, uint64_t n, double m, double m2)
{
	double na = (double)st->finite, nb = (double)n, d = m - st->mean;

	if (!n)
		return;
	st->finite += n;
	st->mean += d * nb / (na + nb);
	st->m2 += m2 + d * d * na * nb / (na + nb);
}

static void int_minmax(struct stats *st, int dt, int64_t v)
{
	int lt, gt;

	if (!st->have_int) {
		st->imin = st->imax = v;
		st->have_int = 1;
		return;
	}
	lt = is_unsigned(dt) ? (uint64_t)v < (uint64_t)st->imin : v < st->imin;
	gt = is_unsigned(dt) ? (uint64_t)v > (uint64_t)st->imax : v > st->imax;
	if (lt)
		st->imin = v;
	if (gt)
		st->imax = v;
}

/* n zero elements (a hole) */
static void stats_zeros(struct stats *st, int dt, uint64_t n)
{
	if (!n)
		return;
	st->count += n;
	st->zeros += n;
	if (st->min > 0)
		st->min = 0;
	if (st->max < 0)
		st->max = 0;
	int_minmax(st, dt, 0);
	merge(st, n, 0, 0);
}

/* Lookup tables for the 8- and 16-bit floats, built on first use. */
static double *table_for(int dt)
{
	static double *t[TFS_TENSOR_NDTYPES];
	size_t es = tfs_tensor_dtype_size(dt), n = (size_t)1 << (8 * es);

	if (!t[dt]) {
		t[dt] = xmalloc(n * sizeof(double));
		for (size_t i = 0; i < n; i++) {
			unsigned char b[2] = { (unsigned char)i,
					       (unsigned char)(i >> 8) };

			t[dt][i] = tfs_tensor_to_double(dt, b);
		}
	}
	return t[dt];
}

/* One block of n elements at p; x is scratch for n doubles. */
static void stats_block(struct stats *st, int dt, const unsigned char *p,
			size_t n, double *x)
{
	size_t es = tfs_tensor_dtype_size(dt), m = 0;
	int fl = tfs_tensor_dtype_kind(dt) == TFS_TENSOR_FLOAT;
	double sum = 0, m2 = 0, mean;

	if (fl && es <= 2) {
		const double *t = table_for(dt);

		for (size_t i = 0; i < n; i++)
			x[i] = t[es == 1 ? p[i]
					 : (unsigned)(p[2 * i] | p[2 * i + 1]
								     << 8)];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	} else if (dt == TFS_TENSOR_FP32) {
		for (size_t i = 0; i < n; i++) {
			float f;

			memcpy(&f, p + 4 * i, 4);
			x[i] = f;
		}
	} else if (dt == TFS_TENSOR_FP64) {
		memcpy(x, p, n * 8);
#endif
	} else if (fl) {
		for (size_t i = 0; i < n; i++)
			x[i] = tfs_tensor_to_double(dt, p + es * i);
	} else {
		for (size_t i = 0; i < n; i++) {
			int64_t v = tfs_tensor_to_int64(dt, p + es * i);

			int_minmax(st, dt, v);
			x[i] =
			    is_unsigned(dt) ? (double)(uint64_t)v : (double)v;
		}
	}
	st->count += n;
	for (size_t i = 0; i < n; i++) {
		double v = x[i];

		if (v == 0)
			st->zeros++;
		if (isnan(v)) {
			st->nan++;
			continue;
		}
		if (isinf(v)) {
			st->inf++;
			continue;
		}
		if (v < st->min)
			st->min = v;
		if (v > st->max)
			st->max = v;
		sum += v;
		x[m++] = v;
	}
	if (!m)
		return;
	mean = sum / (double)m;
	for (size_t i = 0; i < m; i++)
		m2 += (x[i] - mean) * (x[i] - mean);
	merge(st, m, mean, m2);
}

static void swap_block(unsigned char *p, size_t n, size_t es)
{
	for (size_t i = 0; i < n; i++, p += es)
		for (size_t a = 0, b = es - 1; a < b; a++, b--) {
			unsigned char t = p[a];

			p[a] = p[b];
			p[b] = t;
		}
}

/*
 * Whether the strides reach each element of the data once (a tensor
 * permuted, e.g. transposed, but dense): then the statistics, which do
 * not depend on the order, may read the data in file order.
 */
static int dense(const struct src *s)
{
	uint64_t want = 1, done = 0;

	for (unsigned int k = 0; k < s->shape.ndim; k++) {
		unsigned int best = TFS_TENSOR_MAX_DIMS;

		for (unsigned int a = 0; a < s->shape.ndim; a++)
			if (!(done >> a & 1) && s->shape.dim[a] > 1 &&
			    (best == TFS_TENSOR_MAX_DIMS ||
			     s->stride[a] < s->stride[best]))
				best = a;
		if (best == TFS_TENSOR_MAX_DIMS)
			break;
		if (s->stride[best] != want)
			return 0;
		want *= s->shape.dim[best];
		done |= (uint64_t)1 << best;
	}
	return 1;
}

/* The statistics of a view with gaps or repeats: element by element,
 * in C order, through the reader's 1 MiB window. */
static void compute_stats_strided(const struct src *s, struct stats *st)
{
	size_t es = tfs_tensor_dtype_size(s->dtype), n = 0, cap = BLOCK / es;
	unsigned char *buf = xmalloc(BLOCK);
	double *x = xmalloc(cap * sizeof(double));
	struct reader r = { .s = s, .es = es };
	uint64_t idx[TFS_TENSOR_MAX_DIMS] = { 0 }, at = 0;

	stats_init(st);
	for (uint64_t k = 0; k < s->count; k++) {
		memcpy(buf + n * es, elem_at(&r, at), es);
		if (++n == cap) {
			stats_block(st, s->dtype, buf, n, x);
			n = 0;
		}
		for (unsigned int a = s->shape.ndim; a-- > 0;) {
			at += s->stride[a];
			if (++idx[a] < s->shape.dim[a])
				break;
			at -= s->stride[a] * s->shape.dim[a];
			idx[a] = 0;
		}
	}
	if (n)
		stats_block(st, s->dtype, buf, n, x);
	free(r.buf);
	free(buf);
	free(x);
}

static void compute_stats(const struct src *s, struct stats *st)
{
	size_t es = tfs_tensor_dtype_size(s->dtype);
	unsigned char *buf;
	double *x;
	uint64_t rel = 0, data_end = 0;
	int holes = 1;

	if (s->stride && !dense(s)) {
		compute_stats_strided(s, st);
		return;
	}
	buf = xmalloc(BLOCK);
	x = xmalloc(BLOCK / es * sizeof(double));
	stats_init(st);
#ifdef POSIX_FADV_SEQUENTIAL
	posix_fadvise(s->fd, (off_t)s->offset, (off_t)s->nbytes,
		      POSIX_FADV_SEQUENTIAL);
#endif
	while (rel < s->nbytes) {
		uint64_t len =
		    s->nbytes - rel < BLOCK ? s->nbytes - rel : BLOCK;

		if (holes && rel >= data_end) {
			off_t d =
			    lseek(s->fd, (off_t)(s->offset + rel), SEEK_DATA);
			off_t h;

			if (d < 0 && errno == ENXIO)
				d = (off_t)(s->offset + s->nbytes);
			if (d < 0) {
				holes = 0; /* not supported here: read all */
				continue;
			}
			if ((uint64_t)d > s->offset + rel) {
				uint64_t end = (uint64_t)d - s->offset;
				uint64_t n =
				    ((end < s->nbytes ? end : s->nbytes) -
				     rel) /
				    es;

				stats_zeros(st, s->dtype, n);
				rel += n * es;
				if (n)
					continue;
			}
			h = lseek(s->fd, (off_t)(s->offset + rel), SEEK_HOLE);
			data_end = h < 0 ? UINT64_MAX : (uint64_t)h - s->offset;
			if (data_end < rel + es)
				data_end = rel + es;
		}
		if (holes && data_end - rel < len)
			len = (data_end - rel + es - 1) / es * es;
		read_at(s, buf, (size_t)len, s->offset + rel);
		if (s->swap)
			swap_block(buf, (size_t)(len / es), es);
		stats_block(st, s->dtype, buf, (size_t)(len / es), x);
		rel += len;
	}
	free(buf);
	free(x);
}

/* A statistic as text: minimum and maximum exact, in the dtype. */
static void stat_text(const struct src *s, const struct stats *st, int which,
		      char *buf, size_t len)
{
	int dt = s->dtype;
	int kind = tfs_tensor_dtype_kind(dt);

	if (!st->finite) {
		snprintf(buf, len, which < 2 ? "-" : "nan");
		return;
	}
	switch (which) {
	case 0:
	case 1:
		if (kind == TFS_TENSOR_BOOLEAN)
			snprintf(buf, len, "%s",
				 (which ? st->imax : st->imin) ? "True"
							       : "False");
		else if (kind != TFS_TENSOR_FLOAT)
			int_text(dt, which ? st->imax : st->imin, buf, len);
		else
			py_repr(dt, which ? st->max : st->min, buf, len);
		return;
	case 2:
		py_repr(TFS_TENSOR_FP64, st->mean, buf, len);
		return;
	default:
		py_repr(TFS_TENSOR_FP64, sqrt(st->m2 / (double)st->finite), buf,
			len);
		return;
	}
}

static json_t *json_stat(const struct src *s, const struct stats *st, int which)
{
	int kind = tfs_tensor_dtype_kind(s->dtype);
	struct val v = { 0 };

	if (!st->finite)
		return json_null();
	if (which < 2 && kind != TFS_TENSOR_FLOAT) {
		v.i = which ? st->imax : st->imin;
		return json_num(s->dtype, &v);
	}
	return json_real(which == 0   ? st->min
			 : which == 1 ? st->max
			 : which == 2 ? st->mean
				      : sqrt(st->m2 / (double)st->finite));
}

static const char *const stat_names[] = { "min", "max", "mean", "std" };

static json_t *json_stats(const struct src *s, const struct stats *st)
{
	json_t *j = json_object();

	json_object_set_new(j, "count", json_integer((json_int_t)st->count));
	json_object_set_new(j, "finite", json_integer((json_int_t)st->finite));
	for (int k = 0; k < 4; k++)
		json_object_set_new(j, stat_names[k], json_stat(s, st, k));
	json_object_set_new(j, "nan", json_integer((json_int_t)st->nan));
	json_object_set_new(j, "inf", json_integer((json_int_t)st->inf));
	json_object_set_new(j, "zeros", json_integer((json_int_t)st->zeros));
	return j;
}

static void print_stats(const struct src *s, const struct stats *st,
			const char *indent)
{
	char buf[64], shape[1400];

	printf("%sdtype  %s\n", indent, tfs_tensor_dtype_name(s->dtype));
	printf("%sshape  %s\n", indent,
	       tfs_tensor_shape_format(&s->shape, 1, shape, sizeof(shape)));
	printf("%scount  %llu\n", indent, (unsigned long long)st->count);
	for (int k = 0; k < 4; k++) {
		stat_text(s, st, k, buf, sizeof(buf));
		printf("%s%-5s  %s\n", indent, stat_names[k], buf);
	}
	printf("%snan    %llu\n", indent, (unsigned long long)st->nan);
	printf("%sinf    %llu\n", indent, (unsigned long long)st->inf);
	printf("%szeros  %llu\n", indent, (unsigned long long)st->zeros);
}

/* ===== working out what the bytes are ===== */

struct opts {
	const char *dtype, *shape, *tensor;
	uint64_t offset;
	int offset_given, stats, json;
};

/* The shape's agreement with the data, or exit 1 saying what to fix. */
static void check_shape(struct src *s)
{
	char err[512];
	size_t es = tfs_tensor_dtype_size(s->dtype);

	if (!s->shape_from) {
		if (s->nbytes % es)
			die(EXIT_DATA,
			    "'%s': the %llu bytes of data%s are not a whole "
			    "number of %s elements (%zu bytes each); check "
			    "--dtype or --offset",
			    s->path, (unsigned long long)s->nbytes,
			    s->offset ? " after the offset" : "",
			    tfs_tensor_dtype_name(s->dtype), es);
		s->shape.ndim = 1;
		s->shape.dim[0] = s->nbytes / es;
	}
	if (s->stride) {
		/* the header checked that the strides stay in the data */
		tfs_tensor_shape_count(&s->shape, &s->count);
		return;
	}
	if (tfs_tensor_shape_check(&s->shape, s->dtype, s->nbytes, err,
				   sizeof(err)))
		die(EXIT_DATA,
		    "'%s': %s (the shape from %s, the dtype from "
		    "%s, the data from byte %llu); give a --shape "
		    "and --dtype that match",
		    s->path, err, s->shape_from ? s->shape_from : "the size",
		    s->dtype_from, (unsigned long long)s->offset);
	tfs_tensor_shape_count(&s->shape, &s->count);
}

/* The dtype name, or exit with code: what is "--dtype" or "'FILE':
 * user.tensor.dtype". */
static int parse_dtype_or(int code, const char *what, const char *name)
{
	int dt = tfs_tensor_dtype_lookup(name);

	if (dt < 0)
		die(code,
		    "%s '%s' is not a tensor type; use fp64, fp32, fp16, "
		    "bf16, fp8_e4m3, fp8_e5m2, int8, int16, int32, int64, "
		    "uint8, uint16, uint32, uint64 or bool",
		    what, name);
	return dt;
}

static void parse_shape_or(int code, const char *what, const char *text,
			   struct tfs_tensor_shape *out)
{
	int rc = tfs_tensor_shape_parse(text, out);

	if (rc == -E2BIG)
		die(code, "%s '%s' has more than %d dimensions", what, text,
		    TFS_TENSOR_MAX_DIMS);
	if (rc)
		die(code,
		    "%s '%s' is not a shape; write it as 4096,1024 or "
		    "'(4096, 1024)'",
		    what, text);
}

/* tfs_zip_read_fn over s's file. */
static ssize_t pread_fn(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct src *s = ctx;
	ssize_t r;

	do
		r = pread(s->fd, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static int sink_fd(void *sctx, const void *buf, size_t len)
{
	return write_all(*(const int *)sctx, buf, len) ? -errno : 0;
}

/*
 * A deflated .npz array (np.savez_compressed) is read from its entry
 * inflated whole into an unnamed temporary file, checked against the
 * entry's size and CRC-32: s reads that file from now on (s->fd),
 * s->offset and s->nbytes being within the entry already.  Returns the
 * file s read before, for the caller to switch back to; exits 1.
 */
static int use_inflated(struct src *s, const struct tfs_tensor *t)
{
	char err[512] = "", h1[32], h2[32];
	struct statvfs vs;
	int fd, was = s->fd, rc;

	if (!statvfs(tmp_dir(), &vs) &&
	    (uint64_t)vs.f_bavail * vs.f_frsize < t->zip.size)
		die(EXIT_DATA,
		    "'%s': array '%s' inflates to %s, more than "
		    "the %s free in %s; set TMPDIR to a larger file system",
		    s->path, t->name,
		    tfs_format_size(t->zip.size, h1, sizeof(h1)),
		    tfs_format_size((uint64_t)vs.f_bavail * vs.f_frsize, h2,
				    sizeof(h2)),
		    tmp_dir());
	fd = tmp_file();
	if (fd < 0)
		die(EXIT_DATA,
		    "'%s': no temporary file can be made in %s to "
		    "inflate array '%s' into: %s; set TMPDIR",
		    s->path, tmp_dir(), t->name, strerror(errno));
	rc = tfs_npz_inflate(t, pread_fn, s, sink_fd, &fd, err, sizeof(err));
	if (rc == -EINVAL)
		die(EXIT_DATA, "'%s': %s", s->path, err);
	if (rc)
		die(EXIT_DATA, "'%s': cannot inflate array '%s' into %s: %s",
		    s->path, t->name, tmp_dir(), strerror(-rc));
	s->fd = fd;
	return was;
}

/* The header of s, parsed, or NULL for raw bytes; exits 1 if broken. */
static struct tfs_tensor_list *read_header(const struct src *s)
{
	struct tfs_tensor_list *l = NULL;
	enum tfs_tensor_format fmt;
	char err[512] = "";
	int rc;

	rc = tfs_tensor_read(pread_fn, (void *)s, s->file_size, 0, &l, &fmt,
			     err, sizeof(err));
	if (rc == -ENOMEM)
		die(EXIT_DATA, "out of memory");
	if (rc && !err[0])
		die(EXIT_DATA, "'%s': cannot read it: %s", s->path,
		    strerror(-rc));
	if (rc)
		die(EXIT_DATA,
		    "'%s': %s; is it a %s file? (--offset N reads it as raw "
		    "elements)",
		    s->path, err,
		    fmt == TFS_TENSOR_NPY	    ? ".npy"
		    : fmt == TFS_TENSOR_SAFETENSORS ? ".safetensors"
		    : fmt == TFS_TENSOR_NPZ	    ? "np.savez"
						    : "torch.save or np.savez");
	return l;
}

/* "; did you mean 'x'?" for the tensor nearest name, or "". */
static void nearest_tensor(const struct tfs_tensor_list *l, const char *name,
			   char *buf, size_t len)
{
	const char *best = NULL;
	size_t bd = 4;

	buf[0] = '\0';
	for (size_t i = 0; i < l->count; i++) {
		size_t d = tfs_edit_distance(name, l->tensors[i].name);

		if (d < bd) {
			bd = d;
			best = l->tensors[i].name;
		}
	}
	if (best)
		snprintf(buf, len, "; did you mean '%s'?", best);
}

static int same_shape(const struct tfs_tensor_shape *a,
		      const struct tfs_tensor_shape *b)
{
	return a->ndim == b->ndim &&
	       !memcmp(a->dim, b->dim, a->ndim * sizeof(a->dim[0]));
}

/* Apply the tensor t of a header to s, under the flags and xattrs. */
static void from_header(struct src *s, const struct tfs_tensor *t,
			const char *what)
{
	if (t->dtype < 0 && s->dtype < 0)
		die(EXIT_DATA,
		    "'%s': %s has dtype '%s', which tensorfs-cat "
		    "does not decode",
		    s->path, what, t->dtype_name);
	if (s->dtype < 0) {
		s->dtype = t->dtype;
		s->dtype_from = what;
	}
	if (s->shape_from && s->dtype == t->dtype &&
	    (t->fortran_order || t->stride) &&
	    !same_shape(&s->shape, &t->shape) && s->shape_from[0] != '-') {
		/* an attribute's shape cannot reorder Fortran-ordered or
		 * strided elements: the header's shape and order win */
		fprintf(stderr,
			"%s: '%s': ignoring %s, which disagrees with %s "
			"in %s\n",
			prog, s->path, s->shape_from, what,
			t->stride ? "strides" : "Fortran order");
		s->shape_from = NULL;
	}
	if (!s->shape_from && s->dtype == t->dtype) {
		s->shape = t->shape;
		s->shape_from = what;
	}
	/* the header's order goes with its shape, however it came: a
	 * tensorfs mount answers user.tensor.shape from the header */
	if (s->dtype == t->dtype && same_shape(&s->shape, &t->shape)) {
		s->fortran = t->fortran_order;
		s->stride = t->stride;
	}
	if (t->stride && !s->stride)
		die(EXIT_USAGE,
		    "'%s': %s is strided (a view): its --dtype and --shape "
		    "cannot differ from the saved ones",
		    s->path, what);
	s->swap = t->big_endian && s->dtype == t->dtype;
	s->offset = t->offset;
	s->nbytes = t->nbytes;
	if (t->deflated)
		close(use_inflated(s, t));
}

/* The statistics of tensor t of a file of several, as its header has
 * it (s reads the file; a deflated array is inflated aside first). */
static void tensor_stats(struct src *s, const struct tfs_tensor *t,
			 struct stats *st)
{
	int was = -1;

	s->dtype = t->dtype;
	s->shape = t->shape;
	s->stride = t->stride;
	s->offset = t->offset;
	s->nbytes = t->nbytes;
	s->swap = t->big_endian;
	tfs_tensor_shape_count(&t->shape, &s->count);
	if (t->deflated)
		was = use_inflated(s, t);
	compute_stats(s, st);
	if (was >= 0) {
		close(s->fd);
		s->fd = was;
	}
}

/* ===== the listing of a .safetensors file ===== */

/* The widths of the name, dtype and shape columns. */
static void column_widths(const struct tfs_tensor_list *l, size_t *wn,
			  size_t *wd, size_t *ws)
{
	char shape[1400];

	*wn = 4;
	*wd = 5;
	*ws = 5;
	for (size_t i = 0; i < l->count; i++) {
		const struct tfs_tensor *t = &l->tensors[i];
		size_t n;

		if (strlen(t->name) > *wn)
			*wn = strlen(t->name);
		if (strlen(t->dtype_name) > *wd)
			*wd = strlen(t->dtype_name);
		n = strlen(tfs_tensor_shape_format(&t->shape, 1, shape,
						   sizeof(shape)));
		if (n > *ws)
			*ws = n;
	}
}

/* The names of a listed format: in --json's "format", the key of a
 * tensor's own dtype name, and in messages. */
static const struct {
	const char *json, *dtype_key, *what;
} listed[] = {
	[TFS_TENSOR_SAFETENSORS] = { "safetensors", "safetensors_dtype",
				     ".safetensors" },
	[TFS_TENSOR_TORCH] = { "torch", "torch_dtype", "torch.save" },
	[TFS_TENSOR_NPZ] = { "npz", "npy_dtype", ".npz" },
};

/* The listing's JSON object, with an empty "tensors" array in *arr. */
static json_t *list_json(const struct src *s, const struct tfs_tensor_list *l,
			 json_t **arr)
{
	json_t *j = json_object(), *meta;

	json_object_set_new(j, "file", json_string(s->path));
	json_object_set_new(j, "format", json_string(listed[l->format].json));
	json_object_set_new(j, "data_offset",
			    json_integer((json_int_t)l->data_offset));
	meta = json_object();
	for (size_t i = 0; i < l->nmeta; i++)
		json_object_set_new(meta, l->meta[2 * i],
				    json_string(l->meta[2 * i + 1]));
	json_object_set_new(j, "metadata", meta);
	*arr = json_array();
	json_object_set_new(j, "tensors", *arr);
	return j;
}

/* One tensor of the listing as JSON; st NULL for no statistics. */
static json_t *tensor_json(const struct src *s, const struct tfs_tensor *t,
			   const struct stats *st)
{
	json_t *e = json_object();

	json_object_set_new(e, "name", json_string(t->name));
	json_object_set_new(e, "dtype",
			    json_string(t->dtype >= 0
					    ? tfs_tensor_dtype_name(t->dtype)
					    : t->dtype_name));
	json_object_set_new(e, listed[s->format].dtype_key,
			    json_string(t->dtype_name));
	if (t->stride) {
		json_t *a = json_array();

		for (unsigned int i = 0; i < t->shape.ndim; i++)
			json_array_append_new(
			    a, json_integer((json_int_t)t->stride[i]));
		json_object_set_new(e, "strides", a);
	}
	json_object_set_new(e, "shape", json_shape(&t->shape));
	json_object_set_new(e, "offset", json_integer((json_int_t)t->offset));
	if (t->deflated) /* offset is within the inflated entry */
		json_object_set_new(e, "deflated", json_true());
	json_object_set_new(e, "nbytes", json_integer((json_int_t)t->nbytes));
	if (st)
		json_object_set_new(e, "stats", json_stats(s, st));
	return e;
}

static void list_tensors(struct src *s, const struct tfs_tensor_list *l,
			 const struct opts *o)
{
	size_t wn, wd, ws;
	char shape[1400];
	json_t *j = NULL, *arr = NULL;

	column_widths(l, &wn, &wd, &ws);
	if (o->json) {
		j = list_json(s, l, &arr);
	} else {
		if (l->format == TFS_TENSOR_TORCH)
			printf("%s: torch.save file, %zu tensor%s\n", s->path,
			       l->count, l->count == 1 ? "" : "s");
		else if (l->format == TFS_TENSOR_NPZ)
			printf("%s: np.savez%s file, %zu array%s\n", s->path,
			       l->count && l->tensors[0].deflated
				   ? "_compressed"
				   : "",
			       l->count, l->count == 1 ? "" : "s");
		else
			printf("%s: %zu tensor%s, data at byte %llu\n", s->path,
			       l->count, l->count == 1 ? "" : "s",
			       (unsigned long long)l->data_offset);
		for (size_t i = 0; i < l->nmeta; i++)
			printf("__metadata__ %s = %s\n", l->meta[2 * i],
			       l->meta[2 * i + 1]);
		printf("%-*s  %-*s  %-*s  %12s  %12s\n", (int)wn, "NAME",
		       (int)wd, "DTYPE", (int)ws, "SHAPE", "OFFSET", "BYTES");
	}
	for (size_t i = 0; i < l->count; i++) {
		const struct tfs_tensor *t = &l->tensors[i];
		struct stats st;
		int dostats = o->stats && t->dtype >= 0;

		if (dostats)
			tensor_stats(s, t, &st);
		tfs_tensor_shape_format(&t->shape, 1, shape, sizeof(shape));
		if (o->json) {
			json_array_append_new(
			    arr, tensor_json(s, t, dostats ? &st : NULL));
			continue;
		}
		if (t->deflated) /* no offset in the file */
			printf("%-*s  %-*s  %-*s  %12s  %12llu", (int)wn,
			       t->name, (int)wd, t->dtype_name, (int)ws, shape,
			       "deflated", (unsigned long long)t->nbytes);
		else
			printf("%-*s  %-*s  %-*s  %12llu  %12llu", (int)wn,
			       t->name, (int)wd, t->dtype_name, (int)ws, shape,
			       (unsigned long long)t->offset,
			       (unsigned long long)t->nbytes);
		if (t->stride) {
			struct tfs_tensor_shape st_ = { .ndim = t->shape.ndim };

			memcpy(st_.dim, t->stride,
			       t->shape.ndim * sizeof(st_.dim[0]));
			printf("  strides %s",
			       tfs_tensor_shape_format(&st_, 1, shape,
						       sizeof(shape)));
		}
		putchar('\n');
		if (dostats) {
			print_stats(s, &st, "    ");
		} else if (o->stats) {
			printf("    (dtype %s is not decoded: no statistics)\n",
			       t->dtype_name);
		}
	}
	if (j)
		json_print(j, 0);
	else if (!o->stats && l->count)
		printf("(print one with --tensor NAME)\n");
}

/* ===== main ===== */

/* Whether a file is listed rather than printed without --tensor: a
 * .safetensors or .npz file, a torch.save file unless it is one tensor
 * saved alone. */
static int lists(const struct tfs_tensor_list *l)
{
	if (l->format == TFS_TENSOR_TORCH)
		return l->count != 1 || l->tensors[0].name[0];
	return l->format == TFS_TENSOR_SAFETENSORS ||
	       l->format == TFS_TENSOR_NPZ;
}

/* The long options; the short ones are the same letters and -h, -V. */
enum {
	O_STATS = 256,
	O_JSON
};
static const struct option longopts[] = {
	{ "dtype", required_argument, NULL, 'd' },
	{ "shape", required_argument, NULL, 's' },
	{ "offset", required_argument, NULL, 'o' },
	{ "tensor", required_argument, NULL, 't' },
	{ "stats", no_argument, NULL, O_STATS },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Parse the options into o (--shape into s->shape) and set s->path;
 * exits on --help, --version and usage errors. */
static void parse_args(int argc, char **argv, struct opts *o, struct src *s)
{
	int c;

	while ((c = getopt_long(argc, argv, "d:s:o:t:hV", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'd':
			o->dtype = optarg;
			parse_dtype_or(EXIT_USAGE, "--dtype", optarg);
			break;
		case 's':
			o->shape = optarg;
			parse_shape_or(EXIT_USAGE, "--shape", optarg,
				       &s->shape);
			break;
		case 'o':
			if (tfs_parse_size(optarg, &o->offset, NULL))
				die(EXIT_USAGE,
				    "--offset '%s' is not a byte "
				    "offset (e.g. 128, 4K, 1MiB)",
				    optarg);
			o->offset_given = 1;
			break;
		case 't':
			o->tensor = optarg;
			break;
		case O_STATS:
			o->stats = 1;
			break;
		case O_JSON:
			o->json = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("tensorfs-cat %s\n", TFS_VERSION_STRING);
			exit(0);
		default: /* getopt said which */
			fprintf(stderr,
				"Try '%s --help' for more "
				"information.\n",
				prog);
			exit(EXIT_USAGE);
		}
	}
	if (optind + 1 != argc)
		die(EXIT_USAGE,
		    optind == argc ? "no FILE given" : "one FILE at a time");
	s->path = argv[optind];
}

/*
 * Copy all of fd (a pipe) into an unnamed temporary file and return
 * that, its size in *size, or exit 1: the parsers seek, a pipe cannot.
 * On disk, not in memory: a checkpoint may be larger than RAM.
 */
static int spool(const char *path, int fd, uint64_t *size)
{
	const char *dir = tmp_dir();
	size_t cap = 1u << 20;
	char *buf;
	int t;

	t = tmp_file();
	if (t < 0)
		die(EXIT_DATA,
		    "'%s' cannot seek, and no temporary file can be "
		    "made in %s to copy it into: %s; set TMPDIR",
		    path, dir, strerror(errno));
	buf = xmalloc(cap);
	*size = 0;
	for (;;) {
		ssize_t n = read(fd, buf, cap);

		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_DATA, "'%s': cannot read: %s", path,
			    strerror(errno));
		}
		if (write_all(t, buf, (size_t)n))
			die(EXIT_DATA,
			    "'%s': cannot copy it into a temporary "
			    "file in %s: %s; set TMPDIR",
			    path, dir, strerror(errno));
		*size += (uint64_t)n;
	}
	free(buf);
	return t;
}

/* Open s->path ("-": standard input) and find its size, or exit 1. */
static void open_src(struct src *s)
{
	struct stat sb;

	if (!strcmp(s->path, "-"))
		s->fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	else
		s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		die(EXIT_DATA, "'%s': cannot open: %s", s->path,
		    strerror(errno));
	if (fstat(s->fd, &sb))
		die(EXIT_DATA, "'%s': cannot stat: %s", s->path,
		    strerror(errno));
	if (S_ISDIR(sb.st_mode))
		die(EXIT_DATA,
		    "'%s' is a directory; give a file, or --stats to check "
		    "every tensor under it",
		    s->path);
	if (S_ISREG(sb.st_mode)) {
		s->file_size = (uint64_t)sb.st_size;
	} else {
		off_t end = lseek(s->fd, 0, SEEK_END);

		if (end < 0 && errno == ESPIPE) {
			int t = spool(s->path, s->fd, &s->file_size);

			close(s->fd);
			s->fd = t;
			return;
		}
		if (end < 0)
			die(EXIT_DATA, "'%s': cannot find its size: %s",
			    s->path, strerror(errno));
		s->file_size = (uint64_t)end;
	}
}

/* Whether an attribute's value is a tensorfs mount's listing of a file
 * of several tensors, one "name: value" line each, rather than one
 * dtype or shape (which never holds a colon). */
static int is_listing(const char *v)
{
	return strchr(v, ':') != NULL;
}

/* Sources 1 and 2 of the dtype and shape: the flags, then the extended
 * attributes, whose shape goes with their dtype. */
static void from_flags_and_xattrs(struct src *s, const struct opts *o)
{
	char xa[1024], what[PATH_MAX + 64];
	int xdt = -1;

	if (o->dtype) {
		s->dtype = tfs_tensor_dtype_lookup(o->dtype);
		s->dtype_from = "--dtype";
	}
	if (o->shape)
		s->shape_from = "--shape";
	snprintf(what, sizeof(what), "'%s': user.tensor.dtype", s->path);
	/* a listing ("name: dtype" lines) is what a tensorfs mount
	 * answers for a file of several tensors: the header says more */
	if (get_xattr(s, "user.tensor.dtype", xa, sizeof(xa)) &&
	    !is_listing(xa))
		xdt = parse_dtype_or(EXIT_DATA, what, xa);
	if (s->dtype < 0 && xdt >= 0) {
		s->dtype = xdt;
		s->dtype_from = "the user.tensor.dtype attribute";
	}
	snprintf(what, sizeof(what), "'%s': user.tensor.shape", s->path);
	if (!s->shape_from &&
	    get_xattr(s, "user.tensor.shape", xa, sizeof(xa)) &&
	    !is_listing(xa) && (xdt < 0 || xdt == s->dtype)) {
		parse_shape_or(EXIT_DATA, what, xa, &s->shape);
		s->shape_from = "the user.tensor.shape attribute";
	}
}

/* Source 3: the header, unless --offset says the file is raw.  Returns
 * the header's tensors, NULL for raw data; caller frees. */
static struct tfs_tensor_list *from_offset_or_header(struct src *s,
						     const struct opts *o)
{
	struct tfs_tensor_list *l = NULL;

	if (o->offset_given) {
		if (o->tensor)
			die(EXIT_USAGE, "--tensor and --offset exclude each "
					"other: --offset reads raw elements");
		if (o->offset > s->file_size)
			die(EXIT_DATA,
			    "'%s': --offset %llu is past its end at "
			    "%llu bytes",
			    s->path, (unsigned long long)o->offset,
			    (unsigned long long)s->file_size);
		s->offset = o->offset;
		s->nbytes = s->file_size - o->offset;
	} else {
		l = read_header(s);
		s->nbytes = s->file_size;
	}
	return l;
}

/* Source 4, for raw files: the dtype DeepSpeed's swap directories
 * name (tfs_tensor_deepspeed_dtype() says which, from DeepSpeed's
 * code). */
static void deepspeed_dtype(struct src *s)
{
	static char from[96];
	char *real = realpath(s->path, NULL);
	int dt = real ? tfs_tensor_deepspeed_dtype(real) : -ENOENT;

	if (dt >= 0) {
		const char *dir = strstr(real, "/zero_stage_3/") + 14;

		snprintf(from, sizeof(from),
			 "DeepSpeed's swap directory '%.*s'",
			 (int)(strchr(dir, '/') - dir), dir);
		s->dtype = dt;
		s->dtype_from = from;
	}
	free(real);
}

/* The tensor to print: --tensor of a .safetensors, .npz or torch.save
 * file, the one of a .npy file, or the raw data; exits if --tensor does
 * not fit the file or nothing gives a dtype. */
static void pick_tensor(struct src *s, const struct opts *o,
			const struct tfs_tensor_list *l)
{
	char near[160], what[PATH_MAX + 64];

	if (l && (l->format == TFS_TENSOR_SAFETENSORS ||
		  l->format == TFS_TENSOR_NPZ ||
		  (l->format == TFS_TENSOR_TORCH && o->tensor))) {
		const struct tfs_tensor *t = tfs_tensor_list_find(l, o->tensor);

		if (!t) {
			nearest_tensor(l, o->tensor, near, sizeof(near));
			die(EXIT_DATA,
			    "'%s' has no tensor '%s'%s (run without "
			    "--tensor to list them)",
			    s->path, o->tensor, near);
		}
		snprintf(what, sizeof(what), "the %s entry '%s'",
			 listed[l->format].what, t->name);
		s->name = t->name;
		from_header(s, t, what);
	} else if (l && l->format == TFS_TENSOR_TORCH) {
		from_header(s, &l->tensors[0], "the torch.save tensor");
	} else if (l) {
		if (o->tensor)
			die(EXIT_USAGE,
			    "'%s' is a .npy file, which holds one "
			    "tensor: leave out --tensor",
			    s->path);
		from_header(s, &l->tensors[0], "the .npy header");
	} else if (!o->tensor && s->dtype < 0) {
		deepspeed_dtype(s);
	} else if (o->tensor) {
		die(EXIT_USAGE,
		    "'%s' is no .safetensors, .npz or torch.save file; "
		    "--tensor names a tensor in one",
		    s->path);
	}
	if (s->dtype < 0)
		die(EXIT_USAGE,
		    "'%s' has no .npy, .safetensors or torch.save header "
		    "and no "
		    "user.tensor.dtype attribute; give its element "
		    "type with --dtype (fp32, fp16, bf16, ...)",
		    s->path);
}

/* The values, their statistics, as text or JSON. */
static void print_tensor(const struct src *s, const struct opts *o)
{
	if (o->stats) {
		struct stats st;

		compute_stats(s, &st);
		if (o->json) {
			json_t *j = json_src(s);

			json_object_set_new(j, "stats", json_stats(s, &st));
			json_print(j, 0);
		} else {
			print_stats(s, &st, "");
		}
	} else if (o->json) {
		print_json_values(s);
	} else {
		print_repr(s);
	}
}

/* ===== --stats over a tree ===== */

/* The exit codes of a child that checked one file. */
#define EXIT_NONFINITE 3 /* some tensor holds a NaN or an infinity */
#define EXIT_SKIPPED   4 /* no dtype known: not a tensor file */

/* One tensor's line: text or a JSON object; 1 if it holds NaN or Inf. */
static int stats_line(const struct src *s, const struct stats *st,
		      const char *name, const struct opts *o)
{
	char shape[1400], a[64], b[64], m[64];

	if (o->json) {
		json_t *j = json_src(s);

		if (name && !s->name)
			json_object_set_new(j, "tensor", json_string(name));
		json_object_set_new(j, "stats", json_stats(s, st));
		json_print(j, 1);
	} else {
		stat_text(s, st, 0, a, sizeof(a));
		stat_text(s, st, 1, b, sizeof(b));
		stat_text(s, st, 2, m, sizeof(m));
		printf(
		    "%s%s%s  %s  %s  min %s  max %s  mean %s  nan %llu  "
		    "inf %llu\n",
		    s->path, name ? ":" : "", name ? name : "",
		    tfs_tensor_dtype_name(s->dtype),
		    tfs_tensor_shape_format(&s->shape, 1, shape, sizeof(shape)),
		    a, b, m, (unsigned long long)st->nan,
		    (unsigned long long)st->inf);
	}
	return st->nan || st->inf;
}

/* In a child: the statistics of every tensor of one file, a line each;
 * exits 0, EXIT_NONFINITE, EXIT_SKIPPED or as die() does. */
static void stats_file(const char *path, const struct opts *o)
{
	struct src s = { .path = path, .dtype = -1 };
	struct tfs_tensor_list *l;
	struct stats st;
	int bad = 0;

	open_src(&s);
	from_flags_and_xattrs(&s, o);
	l = from_offset_or_header(&s, o);
	s.format = l ? (int)l->format : TFS_TENSOR_RAW;
	if (l && lists(l)) {
		for (size_t i = 0; i < l->count; i++) {
			const struct tfs_tensor *t = &l->tensors[i];

			if (t->dtype < 0)
				continue;
			tensor_stats(&s, t, &st);
			bad |= stats_line(&s, &st, t->name, o);
		}
	} else {
		if (!l && s.dtype < 0)
			deepspeed_dtype(&s);
		if (!l && s.dtype < 0)
			exit(EXIT_SKIPPED);
		pick_tensor(&s, o, l);
		check_shape(&s);
		compute_stats(&s, &st);
		bad = stats_line(&s, &st, NULL, o);
	}
	if (fflush(stdout) || ferror(stdout)) {
		tfs_closeout_said();
		die(EXIT_DATA, "cannot write the output: %s", strerror(errno));
	}
	exit(bad ? EXIT_NONFINITE : 0);
}

struct tree {
	const struct opts *o;
	unsigned long files, nonfinite, skipped, failed;
};

/* Check one file in a child process, so that a broken file ends its
 * own check only (tensorfs-cat exits on a data error). */
static void tree_file(struct tree *tr, const char *path)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die(EXIT_DATA, "cannot fork: %s", strerror(errno));
	if (pid == 0)
		stats_file(path, tr->o);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die(EXIT_DATA, "cannot wait: %s", strerror(errno));
	tr->files++;
	if (!WIFEXITED(status))
		tr->failed++;
	else if (WEXITSTATUS(status) == EXIT_NONFINITE)
		tr->nonfinite++;
	else if (WEXITSTATUS(status) == EXIT_SKIPPED)
		tr->skipped++;
	else if (WEXITSTATUS(status))
		tr->failed++;
}

/* Every regular file under dir, in name order; symbolic links are not
 * followed.  Memory: one directory's names per level. */
static void tree_walk(struct tree *tr, const char *dir, unsigned int depth)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	if (n < 0) {
		fprintf(stderr, "%s: '%s': cannot read the directory: %s\n",
			prog, dir, strerror(errno));
		tr->failed++;
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *e = names[i]->d_name;
		char *path;
		struct stat sb;

		if (!strcmp(e, ".") || !strcmp(e, "..") ||
		    asprintf(&path, "%s%s%s", dir,
			     dir[strlen(dir) - 1] == '/' ? "" : "/", e) < 0) {
			free(names[i]);
			continue;
		}
		if (lstat(path, &sb)) {
			tr->failed++;
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth < 256)
				tree_walk(tr, path, depth + 1);
		} else if (S_ISREG(sb.st_mode)) {
			tree_file(tr, path);
		}
		free(path);
		free(names[i]);
	}
	free(names);
}

/* --stats DIR: exits 3 when a tensor holds NaN or Inf, else 1 when a
 * file could not be checked, else 0. */
static void stats_tree(const char *dir, const struct opts *o)
{
	struct tree tr = { .o = o };

	if (o->dtype || o->shape || o->offset_given || o->tensor)
		die(EXIT_USAGE, "--stats DIR takes no --dtype, --shape, "
				"--offset or --tensor: each file says what it "
				"holds");
	tree_walk(&tr, dir, 0);
	fflush(stdout);
	fprintf(stderr,
		"%s: %lu file%s checked: %lu with NaN or Inf, %lu not "
		"readable, %lu skipped (raw, no dtype known)\n",
		prog, tr.files, tr.files == 1 ? "" : "s", tr.nonfinite,
		tr.failed, tr.skipped);
	exit(tr.nonfinite ? EXIT_NONFINITE : tr.failed ? EXIT_DATA : 0);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct src s = { 0 };
	struct tfs_tensor_list *l;
	struct stat sb;

	tfs_closeout(prog, EXIT_DATA);
	parse_args(argc, argv, &o, &s);
	s.dtype = -1;
	if (o.stats && !stat(s.path, &sb) && S_ISDIR(sb.st_mode))
		stats_tree(s.path, &o);
	open_src(&s);
	from_flags_and_xattrs(&s, &o);
	l = from_offset_or_header(&s, &o);
	s.format = l ? (int)l->format : TFS_TENSOR_RAW;
	if (l && !o.tensor && lists(l)) {
		list_tensors(&s, l, &o);
		goto out;
	}
	pick_tensor(&s, &o, l);
	check_shape(&s);
	print_tensor(&s, &o);
out:
	tfs_tensor_list_free(l);
	close(s.fd);
	if (fflush(stdout) || ferror(stdout)) {
		tfs_closeout_said();
		die(EXIT_DATA, "cannot write the output: %s", strerror(errno));
	}
	return 0;
}
