/*
 * tensor.c: element types, shapes and .npy/.safetensors headers.
 *
 * Element types.  One table, dtypes[], holds each dtype's names, size and
 * kind; tfs_tensor_dtype_lookup() searches it and an alias table (numpy
 * typestrs, PyTorch names).  The names of tensorfs.ini's dtype key
 * (config.c) are a subset and mean the same sizes; test_tensor checks
 * that.
 *
 * Floats.  fp16, bf16 and both fp8 formats are "minifloats": a sign, E
 * exponent bits with bias B and M mantissa bits.  mini_decode() turns
 * the bits into a double with ldexp(), which is exact since every such
 * value has at most 11 significant bits and an exponent well inside a
 * double's: a subnormal is m x 2^(1-B-M), a normal (2^M + m) x
 * 2^(e-B-M).  The formats differ only in what the top exponent means:
 * IEEE style (fp16, bf16, e5m2) makes it inf (m = 0) or NaN; "FN" style
 * (e4m3fn) keeps it for numbers and calls only S.1111.111 NaN.
 * mini_encode() rounds a double the other way, to nearest, ties to even,
 * by scaling the value so that the format's quantum at its exponent is 1
 * and calling rint().  fp32 and fp64 are the host's own (IEEE 754,
 * little-endian files read byte by byte, so any host order works).
 *
 * Shortest digits.  tfs_tensor_shortest() finds the fewest significant
 * digits p whose correctly rounded decimal (printf's %.*e, exact in
 * glibc) reads back as the same value of the dtype: strtod() for fp64,
 * strtof() for fp32, strtod() then mini_encode() for the minifloats (the
 * double rounding is harmless there: a decimal of at most 6 digits can
 * not fall within a double's rounding error of a minifloat's midpoint
 * without being on it).  At a power of two the gap below is half the gap
 * above, so the p-digit neighbour above the nearest may read back when
 * the nearest does not; it is tried too.
 *
 * Headers.  The byte layouts are in tensor.h.  The .npy header is a
 * Python dict literal, read by a small recursive-descent reader that
 * takes only what numpy writes (strings, True/False, tuples of
 * integers); the .safetensors header is JSON, read by jansson with
 * duplicate keys rejected.  Both parsers check every length and offset
 * against the bytes given before reading them and every product against
 * overflow, so that any bytes give a list or -EINVAL, never a crash.
 */
#include "tensor.h"
#include "units.h"
#include "torch.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ===== element types ===== */

static const struct {
	const char *name, *numpy, *safetensors, *typestr;
	size_t size;
	enum tfs_tensor_kind kind;
} dtypes[TFS_TENSOR_NDTYPES] = {
	[TFS_TENSOR_FP64] = { "fp64", "float64", "F64", "f8", 8,
			      TFS_TENSOR_FLOAT },
	[TFS_TENSOR_FP32] = { "fp32", "float32", "F32", "f4", 4,
			      TFS_TENSOR_FLOAT },
	[TFS_TENSOR_FP16] = { "fp16", "float16", "F16", "f2", 2,
			      TFS_TENSOR_FLOAT },
	[TFS_TENSOR_BF16] = { "bf16", "bfloat16", "BF16", NULL, 2,
			      TFS_TENSOR_FLOAT },
	[TFS_TENSOR_FP8_E4M3] = { "fp8_e4m3", "float8_e4m3fn", "F8_E4M3", NULL,
				  1, TFS_TENSOR_FLOAT },
	[TFS_TENSOR_FP8_E5M2] = { "fp8_e5m2", "float8_e5m2", "F8_E5M2", NULL, 1,
				  TFS_TENSOR_FLOAT },
	[TFS_TENSOR_INT8] = { "int8", "int8", "I8", "i1", 1,
			      TFS_TENSOR_SIGNED },
	[TFS_TENSOR_INT16] = { "int16", "int16", "I16", "i2", 2,
			       TFS_TENSOR_SIGNED },
	[TFS_TENSOR_INT32] = { "int32", "int32", "I32", "i4", 4,
			       TFS_TENSOR_SIGNED },
	[TFS_TENSOR_INT64] = { "int64", "int64", "I64", "i8", 8,
			       TFS_TENSOR_SIGNED },
	[TFS_TENSOR_UINT8] = { "uint8", "uint8", "U8", "u1", 1,
			       TFS_TENSOR_UNSIGNED },
	[TFS_TENSOR_UINT16] = { "uint16", "uint16", "U16", "u2", 2,
				TFS_TENSOR_UNSIGNED },
	[TFS_TENSOR_UINT32] = { "uint32", "uint32", "U32", "u4", 4,
				TFS_TENSOR_UNSIGNED },
	[TFS_TENSOR_UINT64] = { "uint64", "uint64", "U64", "u8", 8,
				TFS_TENSOR_UNSIGNED },
	[TFS_TENSOR_BOOL] = { "bool", "bool", "BOOL", "b1", 1,
			      TFS_TENSOR_BOOLEAN },
};

/* Other names people write, PyTorch's mostly. */
static const struct {
	const char *name;
	int dtype;
} aliases[] = {
	{ "double", TFS_TENSOR_FP64 },	 { "float", TFS_TENSOR_FP32 },
	{ "half", TFS_TENSOR_FP16 },	 { "float8_e4m3", TFS_TENSOR_FP8_E4M3 },
	{ "e4m3", TFS_TENSOR_FP8_E4M3 }, { "e5m2", TFS_TENSOR_FP8_E5M2 },
	{ "long", TFS_TENSOR_INT64 },	 { "int", TFS_TENSOR_INT32 },
	{ "short", TFS_TENSOR_INT16 },	 { "bool_", TFS_TENSOR_BOOL },
	{ "f16", TFS_TENSOR_FP16 },	 { "f32", TFS_TENSOR_FP32 },
	{ "f64", TFS_TENSOR_FP64 },
};

static int valid(int dt)
{
	return dt >= 0 && dt < TFS_TENSOR_NDTYPES;
}

int tfs_tensor_dtype_lookup(const char *name)
{
	const char *s = name;

	if (!s)
		return -EINVAL;
	if (!strncasecmp(s, "torch.", 6))
		s += 6;
	else if (!strncasecmp(s, "np.", 3))
		s += 3;
	else if (!strncasecmp(s, "numpy.", 6))
		s += 6;
	for (int i = 0; i < TFS_TENSOR_NDTYPES; i++)
		if (!strcasecmp(s, dtypes[i].name) ||
		    !strcasecmp(s, dtypes[i].numpy) ||
		    !strcasecmp(s, dtypes[i].safetensors))
			return i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(s, aliases[i].name))
			return aliases[i].dtype;
	/* a numpy typestr: byte order (optional), kind and size */
	if (*s == '<' || *s == '|' || *s == '=')
		s++;
	for (int i = 0; i < TFS_TENSOR_NDTYPES; i++)
		if (dtypes[i].typestr && !strcmp(s, dtypes[i].typestr))
			return i;
	return -EINVAL;
}

const char *tfs_tensor_dtype_name(int dt)
{
	return valid(dt) ? dtypes[dt].name : "?";
}

const char *tfs_tensor_dtype_numpy(int dt)
{
	return valid(dt) ? dtypes[dt].numpy : "?";
}

const char *tfs_tensor_dtype_safetensors(int dt)
{
	return valid(dt) ? dtypes[dt].safetensors : "?";
}

size_t tfs_tensor_dtype_size(int dt)
{
	return valid(dt) ? dtypes[dt].size : 0;
}

enum tfs_tensor_kind tfs_tensor_dtype_kind(int dt)
{
	return valid(dt) ? dtypes[dt].kind : TFS_TENSOR_UNSIGNED;
}

/* ===== minifloats ===== */

enum style {
	IEEE,
	FN
};

struct mini {
	int ebits, mbits, bias;
	enum style style;
};

static const struct mini fp16 = { 5, 10, 15, IEEE };
static const struct mini bf16 = { 8, 7, 127, IEEE };
static const struct mini e4m3 = { 4, 3, 7, FN };
static const struct mini e5m2 = { 5, 2, 15, IEEE };

static double mini_decode(uint32_t bits, const struct mini *f)
{
	uint32_t emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
	uint32_t e = (bits >> f->mbits) & emax, m = bits & mmax;
	int neg = (bits >> (f->ebits + f->mbits)) & 1;
	double v;

	if (f->style == IEEE && e == emax)
		v = m ? NAN : INFINITY;
	else if (f->style == FN && e == emax && m == mmax)
		v = NAN;
	else if (e == 0)
		v = ldexp((double)m, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)(m | (1u << f->mbits)),
			  (int)e - f->bias - f->mbits);
	return neg ? -v : v;
}

static uint32_t mini_encode(double v, const struct mini *f)
{
	uint32_t emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
	uint32_t sign = signbit(v) ? 1u << (f->ebits + f->mbits) : 0;
	uint32_t nan = f->style == IEEE
			   ? emax << f->mbits | 1u << (f->mbits - 1)
			   : emax << f->mbits | mmax;
	uint32_t inf = f->style == IEEE ? emax << f->mbits : nan;
	int emin = 1 - f->bias, e, biased;
	double a = fabs(v), r;
	uint32_t mant;

	if (isnan(v))
		return sign | nan;
	if (isinf(a))
		return sign | inf;
	if (a == 0)
		return sign;
	frexp(a, &e);
	e--; /* a = 1.x * 2^e */
	if (e < emin)
		e = emin; /* the subnormals' quantum */
	if (e > 1024)
		return sign | inf;
	/* the quantum at exponent e is 1 after scaling; rint() rounds to
	 * nearest even in the default rounding mode */
	r = rint(ldexp(a, f->mbits - e));
	mant = (uint32_t)r;
	if (mant >> (f->mbits + 1)) { /* rounded up to the next binade */
		mant >>= 1;
		e++;
	}
	if (!(mant >> f->mbits)) /* subnormal, or zero */
		return sign | mant;
	biased = e + f->bias;
	if (f->style == IEEE && biased >= (int)emax)
		return sign | inf;
	if (f->style == FN && (biased > (int)emax ||
			       (biased == (int)emax && (mant & mmax) == mmax)))
		return sign | nan;
	return sign | (uint32_t)biased << f->mbits | (mant & mmax);
}

double tfs_tensor_fp16_to_double(uint16_t bits)
{
	return mini_decode(bits, &fp16);
}

double tfs_tensor_bf16_to_double(uint16_t bits)
{
	return mini_decode(bits, &bf16);
}

double tfs_tensor_e4m3_to_double(uint8_t bits)
{
	return mini_decode(bits, &e4m3);
}

double tfs_tensor_e5m2_to_double(uint8_t bits)
{
	return mini_decode(bits, &e5m2);
}

/* ===== elements ===== */

static uint64_t le(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

double tfs_tensor_to_double(int dt, const void *p)
{
	uint64_t u;
	double d;
	float f;

	switch (dt) {
	case TFS_TENSOR_FP64:
		u = le(p, 8);
		memcpy(&d, &u, 8);
		return d;
	case TFS_TENSOR_FP32: {
		uint32_t w = (uint32_t)le(p, 4);

		memcpy(&f, &w, 4);
		return f;
	}
	case TFS_TENSOR_FP16:
		return mini_decode((uint32_t)le(p, 2), &fp16);
	case TFS_TENSOR_BF16:
		return mini_decode((uint32_t)le(p, 2), &bf16);
	case TFS_TENSOR_FP8_E4M3:
		return mini_decode(*(const unsigned char *)p, &e4m3);
	case TFS_TENSOR_FP8_E5M2:
		return mini_decode(*(const unsigned char *)p, &e5m2);
	case TFS_TENSOR_UINT8:
	case TFS_TENSOR_UINT16:
	case TFS_TENSOR_UINT32:
	case TFS_TENSOR_UINT64:
		return (double)tfs_tensor_to_uint64(dt, p);
	default:
		return (double)tfs_tensor_to_int64(dt, p);
	}
}

int64_t tfs_tensor_to_int64(int dt, const void *p)
{
	switch (dt) {
	case TFS_TENSOR_INT8:
		return (int8_t)le(p, 1);
	case TFS_TENSOR_INT16:
		return (int16_t)le(p, 2);
	case TFS_TENSOR_INT32:
		return (int32_t)le(p, 4);
	case TFS_TENSOR_INT64:
		return (int64_t)le(p, 8);
	case TFS_TENSOR_BOOL:
		return *(const unsigned char *)p != 0;
	default:
		return (int64_t)tfs_tensor_to_uint64(dt, p);
	}
}

uint64_t tfs_tensor_to_uint64(int dt, const void *p)
{
	switch (dt) {
	case TFS_TENSOR_UINT8:
	case TFS_TENSOR_UINT16:
	case TFS_TENSOR_UINT32:
	case TFS_TENSOR_UINT64:
		return le(p, dtypes[dt].size);
	case TFS_TENSOR_INT8:
	case TFS_TENSOR_INT16:
	case TFS_TENSOR_INT32:
	case TFS_TENSOR_INT64:
	case TFS_TENSOR_BOOL:
		return (uint64_t)tfs_tensor_to_int64(dt, p);
	default:
		return (uint64_t)tfs_tensor_to_double(dt, p);
	}
}

static void put_le(void *out, uint64_t v, size_t n)
{
	unsigned char *b = out;

	for (size_t i = 0; i < n; i++, v >>= 8)
		b[i] = (unsigned char)v;
}

int tfs_tensor_from_double(int dt, double v, void *out)
{
	uint64_t u;
	uint32_t w;
	float f;

	switch (dt) {
	case TFS_TENSOR_FP64:
		memcpy(&u, &v, 8);
		put_le(out, u, 8);
		return 0;
	case TFS_TENSOR_FP32:
		f = (float)v;
		memcpy(&w, &f, 4);
		put_le(out, w, 4);
		return 0;
	case TFS_TENSOR_FP16:
		put_le(out, mini_encode(v, &fp16), 2);
		return 0;
	case TFS_TENSOR_BF16:
		put_le(out, mini_encode(v, &bf16), 2);
		return 0;
	case TFS_TENSOR_FP8_E4M3:
		put_le(out, mini_encode(v, &e4m3), 1);
		return 0;
	case TFS_TENSOR_FP8_E5M2:
		put_le(out, mini_encode(v, &e5m2), 1);
		return 0;
	default:
		return -EINVAL;
	}
}

/* ===== shortest digits ===== */

/* Whether the decimal s reads back as a in dtype dt. */
static int reads_back(int dt, const char *s, double a)
{
	unsigned char b[8];

	switch (dt) {
	case TFS_TENSOR_FP64:
		return strtod(s, NULL) == a;
	case TFS_TENSOR_FP32:
		return (double)strtof(s, NULL) == a;
	default:
		tfs_tensor_from_double(dt, strtod(s, NULL), b);
		return tfs_tensor_to_double(dt, b) == a;
	}
}

/* Split "d.ddde[+-]xx" (or "de[+-]xx") into its digits and exponent. */
static int split_sci(const char *s, char *digits, int *exp10)
{
	int n = 0;

	for (; *s && *s != 'e'; s++)
		if (isdigit((unsigned char)*s))
			digits[n++] = *s;
	digits[n] = '\0';
	*exp10 = *s ? atoi(s + 1) : 0;
	return n;
}

int tfs_tensor_shortest(int dt, double v, char *digits, size_t len, int *exp10)
{
	char buf[48], alt[48], best[48], d[24];
	double a = fabs(v);
	int e, n;

	if (!valid(dt) || dtypes[dt].kind != TFS_TENSOR_FLOAT || !isfinite(v) ||
	    len < 18)
		return -EINVAL;
	if (a == 0) {
		strcpy(digits, "0");
		*exp10 = 0;
		return 1;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, a);
		if (reads_back(dt, buf, a))
			return split_sci(buf, digits, exp10);
		/* the p-digit neighbours of the nearest: one above may be
		 * inside the wider gap above a power of two (or one below,
		 * the other way round) */
		n = split_sci(buf, d, &e);
		best[0] = '\0';
		for (int dir = -1; dir <= 1; dir += 2) {
			unsigned long long m = strtoull(d, NULL, 10);
			unsigned long long lo = 1, hi;

			for (int i = 1; i < n; i++)
				lo *= 10;
			hi = lo * 10;
			m = dir < 0 ? m - 1 : m + 1;
			if (m < lo || m >= hi)
				continue;
			snprintf(alt, sizeof(alt), "%llue%d", m, e - (n - 1));
			if (reads_back(dt, alt, a) &&
			    (!best[0] || fabs(strtod(alt, NULL) - a) <
					     fabs(strtod(best, NULL) - a)))
				snprintf(best, sizeof(best), "%s", alt);
		}
		if (best[0]) {
			char *x = strchr(best, 'e');

			*x = '\0';
			snprintf(digits, len, "%s", best);
			*exp10 = atoi(x + 1) + n - 1;
			return n;
		}
	}
	/* 17 digits always read back as the double they came from */
	snprintf(buf, sizeof(buf), "%.16e", a);
	return split_sci(buf, digits, exp10);
}

/* ===== shapes ===== */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A decimal digit string into *v: 0 or -EINVAL (none, or overflow). */
static int parse_u64(const char **pp, uint64_t *v)
{
	const char *p = *pp;
	uint64_t r = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if (__builtin_mul_overflow(r, 10, &r) ||
		    __builtin_add_overflow(r, (uint64_t)(*p - '0'), &r))
			return -EINVAL;
	*pp = p;
	*v = r;
	return 0;
}

int tfs_tensor_shape_parse(const char *s, struct tfs_tensor_shape *out)
{
	const char *p = skip_ws(s);
	char close = 0;
	uint64_t v;

	out->ndim = 0;
	if (*p == '(' || *p == '[') {
		close = *p == '(' ? ')' : ']';
		p = skip_ws(p + 1);
		if (*p == close)
			return *skip_ws(p + 1) ? -EINVAL : 0;
	} else if (!*p) {
		return 0;
	}
	for (;;) {
		if (parse_u64(&p, &v))
			return -EINVAL;
		if (out->ndim == TFS_TENSOR_MAX_DIMS)
			return -E2BIG;
		out->dim[out->ndim++] = v;
		p = skip_ws(p);
		if (*p != ',')
			break;
		p = skip_ws(p + 1);
		if (close && *p == close)
			break; /* "(3,)" */
	}
	if (close) {
		if (*p != close)
			return -EINVAL;
		p++;
	}
	return *skip_ws(p) ? -EINVAL : 0;
}

char *tfs_tensor_shape_format(const struct tfs_tensor_shape *s, int python,
			      char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!s->ndim || python)
		n += (size_t)snprintf(buf, len, "(");
	for (unsigned int i = 0; i < s->ndim && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu",
				      i ? (python ? ", " : ",") : "",
				      (unsigned long long)s->dim[i]);
	if (n < len && python && s->ndim == 1)
		n += (size_t)snprintf(buf + n, len - n, ",");
	if (n < len && (!s->ndim || python))
		snprintf(buf + n, len - n, ")");
	return buf;
}

int tfs_tensor_shape_count(const struct tfs_tensor_shape *s, uint64_t *count)
{
	uint64_t c = 1;

	for (unsigned int i = 0; i < s->ndim; i++)
		if (__builtin_mul_overflow(c, s->dim[i], &c))
			return -EOVERFLOW;
	*count = c;
	return 0;
}

int tfs_tensor_shape_check(const struct tfs_tensor_shape *s, int dt,
			   uint64_t bytes, char *err, size_t len)
{
	char sh[64];
	size_t es = tfs_tensor_dtype_size(dt);
	uint64_t count, need;

	tfs_tensor_shape_format(s, 0, sh, sizeof(sh));
	if (!es) {
		tfs_say(err, len, "dtype %d is not a tensor type", dt);
		return -EINVAL;
	}
	if (tfs_tensor_shape_count(s, &count) ||
	    __builtin_mul_overflow(count, (uint64_t)es, &need)) {
		tfs_say(err, len, "shape %s has more bytes than fit in 64 bits",
			sh);
		return -EINVAL;
	}
	if (need != bytes) {
		tfs_say(
		    err, len,
		    "shape %s of %s needs %llu bytes (%llu elements of %zu), "
		    "but there are %llu bytes of data%s",
		    sh, dtypes[dt].name, (unsigned long long)need,
		    (unsigned long long)count, es, (unsigned long long)bytes,
		    bytes % es ? ", not a whole number of elements" : "");
		return -EINVAL;
	}
	return 0;
}

/* ===== tensor lists ===== */

struct tfs_tensor_list *tfs_tensor_list_new(enum tfs_tensor_format format)
{
	struct tfs_tensor_list *l = calloc(1, sizeof(*l));

	if (l)
		l->format = format;
	return l;
}

void tfs_tensor_list_free(struct tfs_tensor_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++) {
		free(l->tensors[i].name);
		free(l->tensors[i].stride);
	}
	for (size_t i = 0; i < 2 * l->nmeta; i++)
		free(l->meta[i]);
	free(l->tensors);
	free(l->meta);
	free(l);
}

struct tfs_tensor *tfs_tensor_list_add(struct tfs_tensor_list *l,
				       const char *name)
{
	struct tfs_tensor *t;
	size_t n = l->count;

	/* capacity 4, then doubling: grow when n is 0 or a power of 2 >= 4 */
	if (n == 0 || (n >= 4 && !(n & (n - 1)))) {
		t = realloc(l->tensors, (n ? 2 * n : 4) * sizeof(*t));
		if (!t)
			return NULL;
		l->tensors = t;
	}
	t = &l->tensors[l->count];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	if (!t->name)
		return NULL;
	l->count++;
	return t;
}

const struct tfs_tensor *tfs_tensor_list_find(const struct tfs_tensor_list *l,
					      const char *name)
{
	for (size_t i = 0; l && i < l->count; i++)
		if (!strcmp(l->tensors[i].name, name))
			return &l->tensors[i];
	return NULL;
}

static int by_offset(const void *a, const void *b)
{
	const struct tfs_tensor *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->nbytes != y->nbytes)
		return x->nbytes < y->nbytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* ===== probing ===== */

static const unsigned char npy_magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

enum tfs_tensor_format tfs_tensor_probe(const void *buf, size_t len,
					uint64_t *header_len)
{
	const unsigned char *b = buf;
	uint64_t n;

	if (len >= 10 && !memcmp(b, npy_magic, 6)) {
		if (b[6] == 1)
			n = 10 + le(b + 8, 2);
		else if (len >= 12)
			n = 12 + le(b + 8, 4);
		else
			n = 12;
		if (header_len)
			*header_len = n;
		return TFS_TENSOR_NPY;
	}
	if ((len >= 4 && !memcmp(b, "PK\3\4", 4)) ||
	    tfs_torch_is_legacy(b, len)) {
		if (header_len)
			*header_len = 0;
		return TFS_TENSOR_TORCH;
	}
	/* a length, then '{' and a key, '}' or a space: safetensors' JSON
	 * (however long the file is: a short one is a truncated header) */
	if (len >= 10 && b[8] == '{' && strchr("\"} \t\r\n", b[9]) && b[9]) {
		n = le(b, 8);
		if (n >= 2 && n <= TFS_TENSOR_SAFETENSORS_MAX_HEADER) {
			if (header_len)
				*header_len = n + 8;
			return TFS_TENSOR_SAFETENSORS;
		}
	}
	return TFS_TENSOR_RAW;
}

/* ===== .npy ===== */

/* A cursor over the header dict. */
struct lit {
	const char *p, *end;
};

static void lit_ws(struct lit *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int lit_peek(struct lit *c)
{
	lit_ws(c);
	return c->p < c->end ? (unsigned char)*c->p : -1;
}

/* A quoted string, no escapes, into buf: 0, or -1. */
static int lit_string(struct lit *c, char *buf, size_t len)
{
	char q;
	size_t n = 0;

	if (lit_peek(c) != '\'' && lit_peek(c) != '"')
		return -1;
	q = *c->p++;
	for (; c->p < c->end && *c->p != q; c->p++) {
		if (*c->p == '\\' || *c->p == '\n' || n + 1 >= len)
			return -1;
		buf[n++] = *c->p;
	}
	if (c->p == c->end)
		return -1;
	c->p++;
	buf[n] = '\0';
	return 0;
}

static int lit_word(struct lit *c, const char *w)
{
	size_t n = strlen(w);

	if (lit_peek(c) < 0 || (size_t)(c->end - c->p) < n ||
	    memcmp(c->p, w, n))
		return 0;
	if ((size_t)(c->end - c->p) > n &&
	    (isalnum((unsigned char)c->p[n]) || c->p[n] == '_'))
		return 0;
	c->p += n;
	return 1;
}

/* A tuple of non-negative integers (Python 2's 3L too): 0, -1 (not a
 * tuple of integers), -E2BIG. */
static int lit_tuple(struct lit *c, struct tfs_tensor_shape *s)
{
	uint64_t v;

	s->ndim = 0;
	if (lit_peek(c) != '(')
		return -1;
	c->p++;
	for (;;) {
		int ch = lit_peek(c);

		if (ch == ')')
			break;
		if (ch < 0 || !isdigit(ch))
			return -1;
		v = 0;
		while (c->p < c->end && isdigit((unsigned char)*c->p)) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(*c->p - '0'),
						   &v))
				return -1;
			c->p++;
		}
		if (c->p < c->end && (*c->p == 'L' || *c->p == 'l'))
			c->p++;
		if (s->ndim == TFS_TENSOR_MAX_DIMS)
			return -E2BIG;
		s->dim[s->ndim++] = v;
		ch = lit_peek(c);
		if (ch == ',') {
			c->p++;
			continue;
		}
		if (ch != ')')
			return -1;
		/* (3) is the number 3 in Python, not a tuple */
		if (s->ndim == 1)
			return -1;
	}
	c->p++;
	return 0;
}

/* The dtype of a descr: 0 with *dt, big-endian flag; -ENOTSUP. */
static int npy_descr(const char *descr, int *dt, int *big)
{
	char s[24];

	*big = descr[0] == '>';
	snprintf(s, sizeof(s), "%s", descr);
	if (*big)
		s[0] = '<';
	/* typestrs only: "float32" is no descr */
	if (s[0] != '<' && s[0] != '|' && s[0] != '=')
		return -ENOTSUP;
	*dt = tfs_tensor_dtype_lookup(s);
	return *dt < 0 ? -ENOTSUP : 0;
}

/* What a .npy header's dict says. */
struct npy_header {
	char descr[24];
	struct tfs_tensor_shape shape;
	int have_descr, have_fortran, have_shape, fortran;
};

/* The magic, the version and the header's length: *start is where the
 * dict begins, *hlen its length.  0, or -EINVAL with err. */
static int npy_preamble(const unsigned char *b, size_t len, uint64_t *hlen,
			uint64_t *start, char *err, size_t errlen)
{
	if (len < 10 || memcmp(b, npy_magic, 6)) {
		tfs_say(err, errlen,
			"not a .npy file: it does not begin with "
			"\\x93NUMPY");
		return -EINVAL;
	}
	if (b[6] < 1 || b[6] > 3 || b[7] != 0) {
		tfs_say(err, errlen,
			".npy format version %u.%u is not one of 1.0, 2.0, 3.0",
			b[6], b[7]);
		return -EINVAL;
	}
	if (b[6] == 1) {
		*hlen = le(b + 8, 2);
		*start = 10;
	} else {
		if (len < 12) {
			tfs_say(err, errlen, "truncated .npy header: %zu bytes",
				len);
			return -EINVAL;
		}
		*hlen = le(b + 8, 4);
		*start = 12;
	}
	if (*hlen > len - *start) {
		tfs_say(
		    err, errlen,
		    "truncated .npy header: it says %llu bytes, %llu are there",
		    (unsigned long long)*hlen,
		    (unsigned long long)(len - *start));
		return -EINVAL;
	}
	return 0;
}

/* The value of key, c just past its colon, into h: 0, -EINVAL or
 * -ENOTSUP with err. */
static int npy_value(struct lit *c, const char *key, struct npy_header *h,
		     char *err, size_t errlen)
{
	if (!strcmp(key, "descr") && !h->have_descr) {
		if (lit_peek(c) == '[') {
			tfs_say(err, errlen,
				"the .npy file holds a structured "
				"array; only plain dtypes are "
				"supported");
			return -ENOTSUP;
		}
		if (lit_string(c, h->descr, sizeof(h->descr))) {
			tfs_say(err, errlen,
				"the .npy header's descr is not "
				"a string");
			return -EINVAL;
		}
		h->have_descr = 1;
	} else if (!strcmp(key, "fortran_order") && !h->have_fortran) {
		if (lit_word(c, "True"))
			h->fortran = 1;
		else if (!lit_word(c, "False")) {
			tfs_say(err, errlen,
				"the .npy header's fortran_order "
				"is not True or False");
			return -EINVAL;
		}
		h->have_fortran = 1;
	} else if (!strcmp(key, "shape") && !h->have_shape) {
		int r = lit_tuple(c, &h->shape);

		if (r) {
			if (r == -E2BIG)
				tfs_say(err, errlen,
					"the .npy shape has more "
					"than %d dimensions",
					TFS_TENSOR_MAX_DIMS);
			else
				tfs_say(err, errlen,
					"the .npy header's shape "
					"is not a tuple of "
					"integers");
			return -EINVAL;
		}
		h->have_shape = 1;
	} else {
		tfs_say(err, errlen,
			"the .npy header has key '%s' %s; "
			"expected descr, fortran_order, shape",
			key,
			strcmp(key, "descr") && strcmp(key, "fortran_order") &&
				strcmp(key, "shape")
			    ? "that numpy does not write"
			    : "twice");
		return -EINVAL;
	}
	return 0;
}

/* The header's dict, from c to its end (b for byte offsets in
 * messages), into h: 0, -EINVAL or -ENOTSUP with err. */
static int npy_dict(struct lit *c, const unsigned char *b, struct npy_header *h,
		    char *err, size_t errlen)
{
	char key[32];
	int rc;

	if (lit_peek(c) != '{') {
		tfs_say(err, errlen, "the .npy header is not a Python dict");
		return -EINVAL;
	}
	c->p++;
	while (lit_peek(c) != '}') {
		if (lit_string(c, key, sizeof(key)) || lit_peek(c) != ':') {
			tfs_say(err, errlen,
				"the .npy header dict is malformed at "
				"byte %td",
				c->p - (const char *)b);
			return -EINVAL;
		}
		c->p++;
		rc = npy_value(c, key, h, err, errlen);
		if (rc)
			return rc;
		if (lit_peek(c) == ',')
			c->p++;
		else if (lit_peek(c) != '}') {
			tfs_say(err, errlen,
				"the .npy header dict is malformed at "
				"byte %td",
				c->p - (const char *)b);
			return -EINVAL;
		}
	}
	c->p++;
	lit_ws(c);
	while (c->p < c->end && *c->p == '\0') /* some writers pad with NULs */
		c->p++;
	if (c->p != c->end) {
		tfs_say(err, errlen,
			"the .npy header has bytes after its dict");
		return -EINVAL;
	}
	if (!h->have_descr || !h->have_fortran || !h->have_shape) {
		tfs_say(err, errlen, "the .npy header lacks '%s'",
			!h->have_descr	   ? "descr"
			: !h->have_fortran ? "fortran_order"
					   : "shape");
		return -EINVAL;
	}
	return 0;
}

/* any: a dtype not decoded is no error but a tensor of dtype -1 (its
 * descr as dtype_name, all the data after the header). */
static int parse_npy(const void *buf, size_t len, uint64_t file_size, int any,
		     struct tfs_tensor_list **out, char *err, size_t errlen)
{
	const unsigned char *b = buf;
	struct tfs_tensor_list *l = NULL;
	struct tfs_tensor *t;
	struct npy_header h = { 0 };
	char sh[64];
	int rc, dt = -1, big = 0;
	uint64_t hlen, start, count, nbytes;
	struct lit c;

	*out = NULL;
	rc = npy_preamble(b, len, &hlen, &start, err, errlen);
	if (rc)
		goto out;
	c.p = (const char *)b + start;
	c.end = c.p + hlen;
	rc = npy_dict(&c, b, &h, err, errlen);
	if (rc)
		goto out;
	rc = npy_descr(h.descr, &dt, &big);
	if (rc && any && file_size != UINT64_MAX) {
		rc = -ENOMEM;
		l = tfs_tensor_list_new(TFS_TENSOR_NPY);
		if (!l || !(t = tfs_tensor_list_add(l, "")))
			goto out;
		t->dtype = -1;
		snprintf(t->dtype_name, sizeof(t->dtype_name), "%s", h.descr);
		t->shape = h.shape;
		t->offset = start + hlen;
		t->nbytes = file_size > t->offset ? file_size - t->offset : 0;
		l->data_offset = t->offset;
		*out = l;
		return 0;
	}
	if (rc) {
		tfs_say(err, errlen,
			"the .npy dtype '%s' is not supported; "
			"tensorfs reads bool, int, uint and float",
			h.descr);
		goto out;
	}
	rc = -EINVAL;
	tfs_tensor_shape_format(&h.shape, 1, sh, sizeof(sh));
	if (tfs_tensor_shape_count(&h.shape, &count) ||
	    __builtin_mul_overflow(count, (uint64_t)dtypes[dt].size, &nbytes) ||
	    nbytes > UINT64_MAX - start - hlen) {
		tfs_say(err, errlen, "the .npy shape %s is too large", sh);
		goto out;
	}
	if (file_size != UINT64_MAX && start + hlen + nbytes != file_size) {
		tfs_say(
		    err, errlen,
		    "the .npy header's shape %s of '%s' needs %llu bytes of "
		    "data "
		    "after the %llu-byte header, but the file has %llu",
		    sh, h.descr, (unsigned long long)nbytes,
		    (unsigned long long)(start + hlen),
		    file_size > start + hlen
			? (unsigned long long)(file_size - start - hlen)
			: 0ULL);
		goto out;
	}
	rc = -ENOMEM;
	l = tfs_tensor_list_new(TFS_TENSOR_NPY);
	if (!l || !(t = tfs_tensor_list_add(l, "")))
		goto out;
	t->dtype = dt;
	snprintf(t->dtype_name, sizeof(t->dtype_name), "%s", h.descr);
	t->shape = h.shape;
	t->fortran_order = h.fortran;
	t->big_endian = big && dtypes[dt].size > 1;
	t->offset = start + hlen;
	t->nbytes = nbytes;
	l->data_offset = start + hlen;
	*out = l;
	l = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		tfs_say(err, errlen, "out of memory");
	tfs_tensor_list_free(l);
	return rc;
}

int tfs_tensor_parse_npy(const void *buf, size_t len, uint64_t file_size,
			 struct tfs_tensor_list **out, char *err, size_t errlen)
{
	return parse_npy(buf, len, file_size, 0, out, err, errlen);
}

int tfs_tensor_parse_npy_any(const void *buf, size_t len, uint64_t file_size,
			     struct tfs_tensor_list **out, char *err,
			     size_t errlen)
{
	return parse_npy(buf, len, file_size, 1, out, err, errlen);
}

/* ===== .safetensors ===== */

/* A JSON integer >= 0 into *v: 0, or -1. */
static int json_u64(const json_t *j, uint64_t *v)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return -1;
	*v = (uint64_t)json_integer_value(j);
	return 0;
}

static int st_metadata(struct tfs_tensor_list *l, json_t *m, char *err,
		       size_t errlen)
{
	const char *k;
	json_t *v;
	size_t n = json_object_size(m);

	if (!json_is_object(m)) {
		tfs_say(err, errlen, "__metadata__ is not a JSON object");
		return -EINVAL;
	}
	l->meta = calloc(2 * n + 1, sizeof(char *));
	if (!l->meta)
		return -ENOMEM;
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v)) {
			tfs_say(err, errlen,
				"__metadata__ '%s' is not a string; "
				"safetensors metadata maps strings to "
				"strings",
				k);
			return -EINVAL;
		}
		l->meta[2 * l->nmeta] = strdup(k);
		l->meta[2 * l->nmeta + 1] = strdup(json_string_value(v));
		l->nmeta++;
		if (!l->meta[2 * l->nmeta - 2] || !l->meta[2 * l->nmeta - 1])
			return -ENOMEM;
	}
	return 0;
}

/* The fields of tensor entry v: an object with dtype, shape and
 * data_offsets [*begin, *end] within the data_len bytes of data, and no
 * more dimensions than we keep.  0, or -EINVAL with err. */
static int st_entry(const char *name, json_t *v, uint64_t data_len,
		    uint64_t *begin, uint64_t *end, char *err, size_t errlen)
{
	json_t *dt = json_object_get(v, "dtype");
	json_t *shape = json_object_get(v, "shape");
	json_t *offs = json_object_get(v, "data_offsets");

	if (!json_is_object(v) || !json_is_string(dt) ||
	    !json_is_array(shape) || !json_is_array(offs)) {
		tfs_say(err, errlen,
			"tensor '%s' is not an object with dtype, shape "
			"and data_offsets",
			name);
		return -EINVAL;
	}
	if (json_array_size(offs) != 2 ||
	    json_u64(json_array_get(offs, 0), begin) ||
	    json_u64(json_array_get(offs, 1), end) || *begin > *end) {
		tfs_say(err, errlen,
			"tensor '%s': data_offsets is not [begin, end] "
			"with 0 <= begin <= end",
			name);
		return -EINVAL;
	}
	if (*end > data_len) {
		tfs_say(err, errlen,
			"tensor '%s' ends at byte %llu of the data, "
			"past its end at %llu (file truncated?)",
			name, (unsigned long long)*end,
			(unsigned long long)data_len);
		return -EINVAL;
	}
	if (json_array_size(shape) > TFS_TENSOR_MAX_DIMS) {
		tfs_say(err, errlen, "tensor '%s' has more than %d dimensions",
			name, TFS_TENSOR_MAX_DIMS);
		return -EINVAL;
	}
	return 0;
}

/* Whether t's shape and dtype fill data_offsets [begin, end] exactly.
 * 0, or -EINVAL with err. */
static int st_size(const struct tfs_tensor *t, const char *name, uint64_t begin,
		   uint64_t end, char *err, size_t errlen)
{
	uint64_t count, need;
	char sh[64];

	tfs_tensor_shape_format(&t->shape, 0, sh, sizeof(sh));
	if (tfs_tensor_shape_count(&t->shape, &count)) {
		tfs_say(err, errlen, "tensor '%s': shape %s is too large", name,
			sh);
		return -EINVAL;
	}
	if (t->dtype < 0)
		return 0; /* listed, not decoded: its size cannot be checked */
	if (__builtin_mul_overflow(count, (uint64_t)dtypes[t->dtype].size,
				   &need)) {
		tfs_say(err, errlen, "tensor '%s': shape %s is too large", name,
			sh);
		return -EINVAL;
	}
	if (need != t->nbytes) {
		tfs_say(err, errlen,
			"tensor '%s': shape %s of %s needs %llu bytes, but "
			"data_offsets [%llu, %llu] hold %llu",
			name, sh, dtypes[t->dtype].safetensors,
			(unsigned long long)need, (unsigned long long)begin,
			(unsigned long long)end, (unsigned long long)t->nbytes);
		return -EINVAL;
	}
	return 0;
}

static int st_tensor(struct tfs_tensor_list *l, const char *name, json_t *v,
		     uint64_t data_start, uint64_t data_len, char *err,
		     size_t errlen)
{
	json_t *dt = json_object_get(v, "dtype");
	json_t *shape = json_object_get(v, "shape");
	struct tfs_tensor *t;
	uint64_t begin, end;
	size_t i;
	json_t *d;
	int rc;

	rc = st_entry(name, v, data_len, &begin, &end, err, errlen);
	if (rc)
		return rc;
	t = tfs_tensor_list_add(l, name);
	if (!t)
		return -ENOMEM;
	json_array_foreach(shape, i, d)
	{
		if (json_u64(d, &t->shape.dim[i])) {
			tfs_say(err, errlen,
				"tensor '%s': shape is not a list of "
				"integers >= 0",
				name);
			return -EINVAL;
		}
	}
	t->shape.ndim = (unsigned int)json_array_size(shape);
	snprintf(t->dtype_name, sizeof(t->dtype_name), "%s",
		 json_string_value(dt));
	t->dtype = -1;
	for (int k = 0; k < TFS_TENSOR_NDTYPES; k++)
		if (!strcmp(json_string_value(dt), dtypes[k].safetensors))
			t->dtype = k;
	t->offset = data_start + begin;
	t->nbytes = end - begin;
	return st_size(t, name, begin, end, err, errlen);
}

/* The 8-byte header length *n and the checks it allows: within the
 * limit, within buf and the file, the start of a JSON object.  0, or
 * -EINVAL with err. */
static int st_preamble(const unsigned char *b, size_t len, uint64_t file_size,
		       uint64_t *n, char *err, size_t errlen)
{
	if (len < 8) {
		tfs_say(err, errlen,
			"truncated .safetensors file: %zu bytes, the "
			"header length alone is 8",
			len);
		return -EINVAL;
	}
	*n = le(b, 8);
	if (*n > TFS_TENSOR_SAFETENSORS_MAX_HEADER) {
		tfs_say(err, errlen,
			"the .safetensors header length %llu exceeds "
			"the limit of 100 MB",
			(unsigned long long)*n);
		return -EINVAL;
	}
	if (*n > len - 8 || (file_size != UINT64_MAX && *n + 8 > file_size)) {
		uint64_t have = len;

		if (file_size < have)
			have = file_size;
		tfs_say(err, errlen,
			"truncated .safetensors header: it says %llu "
			"bytes, %llu are there",
			(unsigned long long)*n,
			(unsigned long long)(have > 8 ? have - 8 : 0));
		return -EINVAL;
	}
	if (*n < 2 || b[8] != '{') {
		tfs_say(err, errlen,
			"the .safetensors header does not begin with "
			"'{'");
		return -EINVAL;
	}
	return 0;
}

/* Sort l's tensors by offset; -EINVAL with err if two overlap. */
static int st_no_overlap(struct tfs_tensor_list *l, char *err, size_t errlen)
{
	if (l->count > 1)
		qsort(l->tensors, l->count, sizeof(*l->tensors), by_offset);
	for (size_t i = 1; i < l->count; i++) {
		const struct tfs_tensor *a = &l->tensors[i - 1],
					*c = &l->tensors[i];

		if (c->offset < a->offset + a->nbytes) {
			tfs_say(err, errlen,
				"tensors '%s' and '%s' overlap in the "
				"data",
				a->name, c->name);
			return -EINVAL;
		}
	}
	return 0;
}

int tfs_tensor_parse_safetensors(const void *buf, size_t len,
				 uint64_t file_size,
				 struct tfs_tensor_list **out, char *err,
				 size_t errlen)
{
	const unsigned char *b = buf;
	struct tfs_tensor_list *l = NULL;
	json_t *root = NULL, *v;
	json_error_t je;
	const char *k;
	uint64_t n, data_len;
	int rc;

	*out = NULL;
	rc = st_preamble(b, len, file_size, &n, err, errlen);
	if (rc)
		goto out;
	rc = -EINVAL;
	data_len = file_size == UINT64_MAX ? UINT64_MAX : file_size - 8 - n;
	root = json_loadb((const char *)b + 8, n, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		tfs_say(err, errlen,
			"the .safetensors header is not valid JSON: "
			"%s at byte %d",
			je.text, je.position);
		goto out;
	}
	if (!json_is_object(root)) {
		tfs_say(err, errlen,
			"the .safetensors header is not a JSON object");
		goto out;
	}
	rc = -ENOMEM;
	l = tfs_tensor_list_new(TFS_TENSOR_SAFETENSORS);
	if (!l)
		goto out;
	l->data_offset = 8 + n;
	json_object_foreach(root, k, v)
	{
		if (!strcmp(k, "__metadata__"))
			rc = st_metadata(l, v, err, errlen);
		else
			rc = st_tensor(l, k, v, 8 + n, data_len, err, errlen);
		if (rc)
			goto out;
	}
	rc = st_no_overlap(l, err, errlen);
	if (rc)
		goto out;
	*out = l;
	l = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		tfs_say(err, errlen, "out of memory");
	json_decref(root);
	tfs_tensor_list_free(l);
	return rc;
}

int tfs_tensor_parse(const void *buf, size_t len, uint64_t file_size,
		     struct tfs_tensor_list **out, char *err, size_t errlen)
{
	switch (tfs_tensor_probe(buf, len, NULL)) {
	case TFS_TENSOR_NPY:
		return tfs_tensor_parse_npy(buf, len, file_size, out, err,
					    errlen);
	case TFS_TENSOR_SAFETENSORS:
		return tfs_tensor_parse_safetensors(buf, len, file_size, out,
						    err, errlen);
	default:
		*out = NULL;
		tfs_say(err, errlen,
			"neither a .npy nor a .safetensors header");
		return -EINVAL;
	}
}

/* ===== DeepSpeed's swap files ===== */

/* The component of path before the one that starts at end (the path's
 * end: the last), as [*start, returned end); NULL when none. */
static const char *prev_component(const char *path, const char *end,
				  const char **start)
{
	const char *p = end;

	while (p > path && p[-1] == '/')
		p--;
	if (p == path)
		return NULL;
	end = p;
	while (p > path && p[-1] != '/')
		p--;
	*start = p;
	return end;
}

static int component_is(const char *s, const char *e, const char *word)
{
	return (size_t)(e - s) == strlen(word) &&
	       !strncmp(s, word, (size_t)(e - s));
}

int tfs_tensor_deepspeed_dtype(const char *path)
{
	static const struct {
		const char *dir;
		int dtype;
	} dirs[] = {
		{ "float16params", TFS_TENSOR_FP16 },
		{ "bfloat16params", TFS_TENSOR_BF16 },
		{ "float32params", TFS_TENSOR_FP32 },
		{ "optimizer", TFS_TENSOR_FP32 },
	};
	const char *s, *e = path + strlen(path);
	size_t n = strlen(path);

	if (n < 4 || strcmp(path + n - 4, ".swp"))
		return -ENOENT;
	e = prev_component(path, e, &s); /* the file */
	if (!e || !(e = prev_component(path, s, &s)))
		return -ENOENT;
	if ((size_t)(e - s) > 4 && !strncmp(s, "rank", 4) &&
	    strspn(s + 4, "0123456789") == (size_t)(e - s - 4) &&
	    !(e = prev_component(path, s, &s)))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		const char *ps, *pe;

		if (!component_is(s, e, dirs[i].dir))
			continue;
		pe = prev_component(path, s, &ps);
		return pe && component_is(ps, pe, "zero_stage_3")
			   ? dirs[i].dtype
			   : -ENOENT;
	}
	return -ENOENT;
}
