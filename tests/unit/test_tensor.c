/*
 * test_tensor.c: element types, shapes and .npy/.safetensors headers
 * (lib/tensor/tensor.c).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "tensor.h"

/* ===== helpers ===== */

static void same_value(double got, double want, const char *what)
{
	if (isnan(want)) {
		if (!isnan(got))
			fail_msg("%s: got %.17g, not NaN", what, got);
		return;
	}
	if (got != want || signbit(got) != signbit(want))
		fail_msg("%s: got %.17g, not %.17g", what, got, want);
}

#define FP16(b, v) same_value(tfs_tensor_fp16_to_double(b), v, "fp16 " #b)
#define BF16(b, v) same_value(tfs_tensor_bf16_to_double(b), v, "bf16 " #b)
#define E4M3(b, v) same_value(tfs_tensor_e4m3_to_double(b), v, "e4m3 " #b)
#define E5M2(b, v) same_value(tfs_tensor_e5m2_to_double(b), v, "e5m2 " #b)

/* ===== minifloats ===== */

static void test_tensor_fp16_decodes_known_bit_patterns(void **state)
{
	(void)state;
	FP16(0x3c00, 1.0);
	FP16(0xbc00, -1.0);
	FP16(0x0001, ldexp(1, -24));	/* smallest subnormal */
	FP16(0x03ff, ldexp(1023, -24)); /* largest subnormal */
	FP16(0x0400, ldexp(1, -14));	/* smallest normal */
	FP16(0x7bff, 65504.0);
	FP16(0x7c00, INFINITY);
	FP16(0xfc00, -INFINITY);
	FP16(0x7e00, NAN);
	FP16(0x7c01, NAN);
	FP16(0x0000, 0.0);
	FP16(0x8000, -0.0);
	FP16(0x3555, 0.333251953125);
	FP16(0xc000, -2.0);
}

static void test_tensor_bf16_decodes_known_bit_patterns(void **state)
{
	(void)state;
	BF16(0x3f80, 1.0);
	BF16(0xbf80, -1.0);
	BF16(0x0001, ldexp(1, -133));
	BF16(0x0080, ldexp(1, -126));
	BF16(0x7f7f, ldexp(255, 120)); /* 3.3895e38 */
	BF16(0x7f80, INFINITY);
	BF16(0xff80, -INFINITY);
	BF16(0x7fc0, NAN);
	BF16(0x8000, -0.0);
	BF16(0x4049, 3.140625);
}

static void test_tensor_e4m3_decodes_known_bit_patterns(void **state)
{
	(void)state;
	E4M3(0x7e, 448.0);
	E4M3(0xfe, -448.0);
	E4M3(0x01, ldexp(1, -9));
	E4M3(0x07, ldexp(7, -9));
	E4M3(0x08, ldexp(1, -6));
	E4M3(0x38, 1.0);
	E4M3(0x78, 256.0); /* the top exponent is a number in E4M3FN */
	E4M3(0x7f, NAN);
	E4M3(0xff, NAN);
	E4M3(0x80, -0.0);
}

static void test_tensor_e5m2_decodes_known_bit_patterns(void **state)
{
	(void)state;
	E5M2(0x7b, 57344.0);
	E5M2(0x7c, INFINITY);
	E5M2(0xfc, -INFINITY);
	E5M2(0x7d, NAN);
	E5M2(0x7f, NAN);
	E5M2(0x01, ldexp(1, -16));
	E5M2(0x04, ldexp(1, -14));
	E5M2(0x3c, 1.0);
	E5M2(0x80, -0.0);
}

static void test_tensor_every_minifloat_survives_encode_decode(void **state)
{
	static const struct {
		int dt;
		unsigned int n;
	} f[] = { { TFS_TENSOR_FP16, 65536 },
		  { TFS_TENSOR_BF16, 65536 },
		  { TFS_TENSOR_FP8_E4M3, 256 },
		  { TFS_TENSOR_FP8_E5M2, 256 } };
	unsigned char b[2], back[2];

	(void)state;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		for (unsigned int i = 0; i < f[k].n; i++) {
			double v;

			b[0] = (unsigned char)i;
			b[1] = (unsigned char)(i >> 8);
			v = tfs_tensor_to_double(f[k].dt, b);
			assert_int_equal(
			    tfs_tensor_from_double(f[k].dt, v, back), 0);
			if (isnan(v)) {
				assert_true(
				    isnan(tfs_tensor_to_double(f[k].dt, back)));
				continue;
			}
			if (memcmp(b, back, tfs_tensor_dtype_size(f[k].dt)))
				fail_msg("%s 0x%x (%.17g) encodes as 0x%x",
					 tfs_tensor_dtype_name(f[k].dt), i, v,
					 back[0] | back[1] << 8);
		}
	}
}

static double rounded(int dt, double v)
{
	unsigned char b[8];

	assert_int_equal(tfs_tensor_from_double(dt, v, b), 0);
	return tfs_tensor_to_double(dt, b);
}

static void test_tensor_encode_rounds_to_nearest_even(void **state)
{
	(void)state;
	/* ties to even */
	same_value(rounded(TFS_TENSOR_FP16, 1 + ldexp(1, -11)), 1.0,
		   "fp16 tie down");
	same_value(rounded(TFS_TENSOR_FP16, 1 + 3 * ldexp(1, -11)),
		   1 + ldexp(1, -9), "fp16 tie up");
	same_value(rounded(TFS_TENSOR_FP16, 65504), 65504, "fp16 max");
	same_value(rounded(TFS_TENSOR_FP16, 65519.99), 65504,
		   "fp16 below max tie");
	same_value(rounded(TFS_TENSOR_FP16, 65520), INFINITY, "fp16 overflow");
	same_value(rounded(TFS_TENSOR_FP16, ldexp(1, -25)), 0.0,
		   "fp16 underflow tie");
	same_value(rounded(TFS_TENSOR_FP16, ldexp(3, -26)), ldexp(1, -24),
		   "fp16 to min subnormal");
	same_value(rounded(TFS_TENSOR_FP16, -ldexp(1, -30)), -0.0, "fp16 -0");
	/* a subnormal rounding up into the normals */
	same_value(rounded(TFS_TENSOR_FP16, ldexp(1, -14) - ldexp(1, -26)),
		   ldexp(1, -14), "fp16 subnormal carry");
	same_value(rounded(TFS_TENSOR_BF16, 1.00390625), 1.0, "bf16 tie down");
	same_value(rounded(TFS_TENSOR_FP8_E4M3, 464), 448, "e4m3 tie to 448");
	same_value(rounded(TFS_TENSOR_FP8_E4M3, 465), NAN,
		   "e4m3 overflow is NaN");
	same_value(rounded(TFS_TENSOR_FP8_E4M3, INFINITY), NAN,
		   "e4m3 inf is NaN");
	same_value(rounded(TFS_TENSOR_FP8_E5M2, 61440), INFINITY,
		   "e5m2 overflow");
	same_value(rounded(TFS_TENSOR_FP8_E5M2, 61439), 57344, "e5m2 max");
	assert_int_equal(tfs_tensor_from_double(TFS_TENSOR_INT8, 1, NULL),
			 -EINVAL);
}

/* ===== shortest digits ===== */

static void shortest(int dt, double v, const char *want, int want_exp)
{
	char d[32];
	int e = 99, n = tfs_tensor_shortest(dt, v, d, sizeof(d), &e);

	if (n < 0 || strcmp(d, want) || e != want_exp)
		fail_msg("%s %.17g: got %d '%s' e%d, not '%s' e%d",
			 tfs_tensor_dtype_name(dt), v, n, n < 0 ? "" : d, e,
			 want, want_exp);
	assert_int_equal((size_t)n, strlen(want));
}

static void test_tensor_shortest_matches_python_repr(void **state)
{
	(void)state;
	shortest(TFS_TENSOR_FP64, 0.1, "1", -1);
	shortest(TFS_TENSOR_FP64, 1.0 / 3, "3333333333333333", -1);
	shortest(TFS_TENSOR_FP64, 123.456, "123456", 2);
	shortest(TFS_TENSOR_FP64, 5e-324, "5", -324);
	shortest(TFS_TENSOR_FP64, 1.7976931348623157e308, "17976931348623157",
		 308);
	shortest(TFS_TENSOR_FP64, -0.0, "0", 0);
	shortest(TFS_TENSOR_FP32, (float)0.1, "1", -1);
	shortest(TFS_TENSOR_FP32, 16777216.0, "16777216", 7);
	shortest(TFS_TENSOR_FP32, (float)3.14159265, "31415927", 0);
	shortest(TFS_TENSOR_FP32, ldexp(1, -149), "1", -45);
	shortest(TFS_TENSOR_FP16, tfs_tensor_fp16_to_double(0x2e66), "1", -1);
	shortest(TFS_TENSOR_FP16, 65504, "655", 4);
	shortest(TFS_TENSOR_FP16, ldexp(1, -24), "6", -8);
	shortest(TFS_TENSOR_BF16, 3.140625, "314", 0);
	shortest(TFS_TENSOR_FP8_E4M3, 448, "45", 2);
	shortest(TFS_TENSOR_FP8_E5M2, 57344, "6", 4);
	assert_int_equal(tfs_tensor_shortest(TFS_TENSOR_INT32, 1,
					     (char[32]){ 0 }, 32, &(int){ 0 }),
			 -EINVAL);
	assert_int_equal(tfs_tensor_shortest(TFS_TENSOR_FP32, NAN,
					     (char[32]){ 0 }, 32, &(int){ 0 }),
			 -EINVAL);
}

/* Every finite value of the small formats: the digits read back, and one
 * digit fewer does not. */
static void test_tensor_shortest_is_shortest_for_every_small_float(void **state)
{
	static const int dts[] = { TFS_TENSOR_FP16, TFS_TENSOR_BF16,
				   TFS_TENSOR_FP8_E4M3, TFS_TENSOR_FP8_E5M2 };
	char d[32], s[64];
	unsigned char b[2], r[2];
	int e, n;

	(void)state;
	for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
		unsigned int count =
		    tfs_tensor_dtype_size(dts[k]) == 2 ? 65536 : 256;

		for (unsigned int i = 0; i < count; i++) {
			double v, back;

			b[0] = (unsigned char)i;
			b[1] = (unsigned char)(i >> 8);
			v = tfs_tensor_to_double(dts[k], b);
			if (!isfinite(v))
				continue;
			n = tfs_tensor_shortest(dts[k], v, d, sizeof(d), &e);
			assert_true(n >= 1 && n <= 17);
			snprintf(s, sizeof(s), "%c.%se%d", d[0], d + 1, e);
			tfs_tensor_from_double(dts[k], strtod(s, NULL), r);
			back = tfs_tensor_to_double(dts[k], r);
			if (back != fabs(v))
				fail_msg(
				    "%s 0x%x = %.17g: '%s' reads back as %.17g",
				    tfs_tensor_dtype_name(dts[k]), i, v, s,
				    back);
			if (n > 1) {
				snprintf(s, sizeof(s), "%.*e", n - 2, fabs(v));
				tfs_tensor_from_double(dts[k], strtod(s, NULL),
						       r);
				if (tfs_tensor_to_double(dts[k], r) == fabs(v))
					fail_msg("%s 0x%x: '%s' is shorter "
						 "than %d digits",
						 tfs_tensor_dtype_name(dts[k]),
						 i, s, n);
			}
		}
	}
}

/* ===== elements ===== */

static void test_tensor_integers_read_little_endian(void **state)
{
	const unsigned char i16[] = { 0xff, 0x7f }, m16[] = { 0x00, 0x80 };
	const unsigned char i64[] = { 0, 0, 0, 0, 0, 0, 0, 0x80 };
	const unsigned char u64[] = { 0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff };
	const unsigned char f32[] = { 0x00, 0x00, 0x80, 0x3f };
	const unsigned char f64[] = { 0, 0, 0, 0, 0, 0, 0xf0, 0xbf };
	const unsigned char two = 2, m1 = 0xff;

	(void)state;
	assert_int_equal(tfs_tensor_to_int64(TFS_TENSOR_INT16, i16), 32767);
	assert_int_equal(tfs_tensor_to_int64(TFS_TENSOR_INT16, m16), -32768);
	assert_true(tfs_tensor_to_int64(TFS_TENSOR_INT64, i64) == INT64_MIN);
	assert_true(tfs_tensor_to_uint64(TFS_TENSOR_UINT64, u64) == UINT64_MAX);
	assert_int_equal(tfs_tensor_to_int64(TFS_TENSOR_INT8, &m1), -1);
	assert_int_equal(tfs_tensor_to_int64(TFS_TENSOR_UINT8, &m1), 255);
	assert_int_equal(tfs_tensor_to_int64(TFS_TENSOR_BOOL, &two), 1);
	same_value(tfs_tensor_to_double(TFS_TENSOR_FP32, f32), 1.0, "fp32 1");
	same_value(tfs_tensor_to_double(TFS_TENSOR_FP64, f64), -1.0, "fp64 -1");
	same_value(tfs_tensor_to_double(TFS_TENSOR_INT16, m16), -32768,
		   "int16 as double");
}

static void test_tensor_dtype_lookup_takes_every_spelling(void **state)
{
	static const struct {
		const char *name;
		int dt;
	} t[] = {
		{ "fp16", TFS_TENSOR_FP16 },
		{ "<f2", TFS_TENSOR_FP16 },
		{ "F16", TFS_TENSOR_FP16 },
		{ "float16", TFS_TENSOR_FP16 },
		{ "torch.float16", TFS_TENSOR_FP16 },
		{ "half", TFS_TENSOR_FP16 },
		{ "BF16", TFS_TENSOR_BF16 },
		{ "bfloat16", TFS_TENSOR_BF16 },
		{ "F8_E4M3", TFS_TENSOR_FP8_E4M3 },
		{ "float8_e4m3fn", TFS_TENSOR_FP8_E4M3 },
		{ "F8_E5M2", TFS_TENSOR_FP8_E5M2 },
		{ "fp8_e5m2", TFS_TENSOR_FP8_E5M2 },
		{ "I64", TFS_TENSOR_INT64 },
		{ "<i8", TFS_TENSOR_INT64 },
		{ "long", TFS_TENSOR_INT64 },
		{ "BOOL", TFS_TENSOR_BOOL },
		{ "|b1", TFS_TENSOR_BOOL },
		{ "U8", TFS_TENSOR_UINT8 },
		{ "|u1", TFS_TENSOR_UINT8 },
		{ "<f4", TFS_TENSOR_FP32 },
		{ "float", TFS_TENSOR_FP32 },
		{ "f8", TFS_TENSOR_FP64 },
		{ "double", TFS_TENSOR_FP64 },
		{ "|i1", TFS_TENSOR_INT8 },
		{ "=i4", TFS_TENSOR_INT32 },
		{ "U64", TFS_TENSOR_UINT64 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (tfs_tensor_dtype_lookup(t[i].name) != t[i].dt)
			fail_msg("'%s' looks up as %d, not %d", t[i].name,
				 tfs_tensor_dtype_lookup(t[i].name), t[i].dt);
	assert_int_equal(tfs_tensor_dtype_lookup(">f4"), -EINVAL);
	assert_int_equal(tfs_tensor_dtype_lookup("<c8"), -EINVAL);
	assert_int_equal(tfs_tensor_dtype_lookup("fp13"), -EINVAL);
	assert_int_equal(tfs_tensor_dtype_lookup(""), -EINVAL);
	assert_string_equal(tfs_tensor_dtype_numpy(TFS_TENSOR_FP8_E4M3),
			    "float8_e4m3fn");
	assert_string_equal(tfs_tensor_dtype_safetensors(TFS_TENSOR_BF16),
			    "BF16");
	assert_string_equal(tfs_tensor_dtype_name(99), "?");
	assert_int_equal(tfs_tensor_dtype_size(-1), 0);
}

/* tensorfs.ini's dtype names (config.c) mean the same here. */
static void test_tensor_dtypes_agree_with_the_config_table(void **state)
{
	(void)state;
	for (unsigned int i = 0; tfs_dtype_size(i); i++) {
		int dt = tfs_tensor_dtype_lookup(tfs_dtype_name(i));

		if (dt < 0)
			fail_msg("config dtype '%s' unknown here",
				 tfs_dtype_name(i));
		assert_string_equal(tfs_tensor_dtype_name(dt),
				    tfs_dtype_name(i));
		assert_int_equal(tfs_tensor_dtype_size(dt), tfs_dtype_size(i));
	}
}

/* ===== shapes ===== */

static void shape_is(const char *s, unsigned int ndim, ...)
{
	struct tfs_tensor_shape sh;
	va_list ap;

	if (tfs_tensor_shape_parse(s, &sh))
		fail_msg("'%s' did not parse", s);
	if (sh.ndim != ndim)
		fail_msg("'%s': %u dimensions, not %u", s, sh.ndim, ndim);
	va_start(ap, ndim);
	for (unsigned int i = 0; i < ndim; i++)
		assert_true(sh.dim[i] == va_arg(ap, uint64_t));
	va_end(ap);
}

static void test_tensor_shape_parses_plain_and_python_forms(void **state)
{
	(void)state;
	shape_is("4096,1024", 2, (uint64_t)4096, (uint64_t)1024);
	shape_is("(4096, 1024)", 2, (uint64_t)4096, (uint64_t)1024);
	shape_is(" [4096 , 1024] ", 2, (uint64_t)4096, (uint64_t)1024);
	shape_is("(3,)", 1, (uint64_t)3);
	shape_is("7", 1, (uint64_t)7);
	shape_is("2,0,3", 3, (uint64_t)2, (uint64_t)0, (uint64_t)3);
	shape_is("()", 0);
	shape_is("", 0);
	shape_is("18446744073709551615", 1, UINT64_MAX);
}

static void test_tensor_shape_rejects_malformed(void **state)
{
	static const char *const bad[] = {
		"4096,,1024",
		"-1",
		"abc",
		"4096,1024)",
		"(4096,1024",
		"1.5",
		"4096 1024",
		",",
		"(,)",
		"4096,",
		"18446744073709551616",
		"[3)",
		"(3,))",
		"3x4",
	};
	struct tfs_tensor_shape sh;
	char many[400] = "1";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (tfs_tensor_shape_parse(bad[i], &sh) != -EINVAL)
			fail_msg("'%s' parsed", bad[i]);
	for (int i = 1; i <= TFS_TENSOR_MAX_DIMS; i++)
		strcat(many, ",1");
	assert_int_equal(tfs_tensor_shape_parse(many, &sh), -E2BIG);
}

static void test_tensor_shape_formats_and_parses_back(void **state)
{
	struct tfs_tensor_shape sh, back;
	char buf[64];

	(void)state;
	assert_int_equal(tfs_tensor_shape_parse("(4096, 1024)", &sh), 0);
	assert_string_equal(tfs_tensor_shape_format(&sh, 0, buf, sizeof(buf)),
			    "4096,1024");
	assert_string_equal(tfs_tensor_shape_format(&sh, 1, buf, sizeof(buf)),
			    "(4096, 1024)");
	assert_int_equal(tfs_tensor_shape_parse(buf, &back), 0);
	assert_int_equal(back.ndim, 2);
	assert_int_equal(tfs_tensor_shape_parse("3", &sh), 0);
	assert_string_equal(tfs_tensor_shape_format(&sh, 1, buf, sizeof(buf)),
			    "(3,)");
	assert_int_equal(tfs_tensor_shape_parse("()", &sh), 0);
	assert_string_equal(tfs_tensor_shape_format(&sh, 0, buf, sizeof(buf)),
			    "()");
	assert_string_equal(tfs_tensor_shape_format(&sh, 1, buf, sizeof(buf)),
			    "()");
	assert_int_equal(tfs_tensor_shape_parse("1,2,3", &sh), 0);
	assert_string_equal(tfs_tensor_shape_format(&sh, 0, buf, 4),
			    "1,2"); /* truncated */
}

static void test_tensor_shape_check_compares_with_bytes(void **state)
{
	struct tfs_tensor_shape sh;
	uint64_t n;
	char err[256];

	(void)state;
	assert_int_equal(tfs_tensor_shape_parse("4096,1024", &sh), 0);
	assert_int_equal(tfs_tensor_shape_count(&sh, &n), 0);
	assert_true(n == 4194304);
	assert_int_equal(tfs_tensor_shape_check(&sh, TFS_TENSOR_FP16, 8388608,
						err, sizeof(err)),
			 0);
	assert_int_equal(tfs_tensor_shape_check(&sh, TFS_TENSOR_FP16, 8388607,
						err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "needs 8388608 bytes"));
	assert_non_null(strstr(err, "8388607"));
	assert_non_null(strstr(err, "not a whole number"));
	assert_int_equal(tfs_tensor_shape_parse("()", &sh), 0);
	assert_int_equal(
	    tfs_tensor_shape_check(&sh, TFS_TENSOR_FP64, 8, NULL, 0), 0);
	assert_int_equal(tfs_tensor_shape_parse("4294967296,4294967296", &sh),
			 0);
	assert_int_equal(tfs_tensor_shape_count(&sh, &n), -EOVERFLOW);
	assert_int_equal(
	    tfs_tensor_shape_check(&sh, TFS_TENSOR_FP16, 0, err, sizeof(err)),
	    -EINVAL);
}

/* ===== .npy ===== */

/* A .npy header as numpy writes it, for the dict d, into buf; returns its
 * length (data starts there). */
static size_t npy(unsigned char *buf, int major, const char *d)
{
	size_t pre = major == 1 ? 10 : 12, n = strlen(d), h = n + 1;

	while ((pre + h) % 64)
		h++;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	buf[8] = (unsigned char)h;
	buf[9] = (unsigned char)(h >> 8);
	if (major > 1)
		buf[10] = buf[11] = 0;
	memcpy(buf + pre, d, n);
	memset(buf + pre + n, ' ', h - n - 1);
	buf[pre + h - 1] = '\n';
	return pre + h;
}

static struct tfs_tensor_list *npy_ok(int major, const char *d, uint64_t data)
{
	unsigned char buf[1024];
	struct tfs_tensor_list *l = NULL;
	char err[256] = "";
	size_t n = npy(buf, major, d);
	uint64_t hl = 0;

	assert_int_equal(tfs_tensor_probe(buf, n, &hl), TFS_TENSOR_NPY);
	assert_true(hl == n);
	if (tfs_tensor_parse(buf, n, n + data, &l, err, sizeof(err)))
		fail_msg("%s: %s", d, err);
	assert_int_equal(l->format, TFS_TENSOR_NPY);
	assert_int_equal(l->count, 1);
	assert_true(l->tensors[0].offset == n);
	assert_true(l->tensors[0].nbytes == data);
	return l;
}

static void test_tensor_npy_versions_1_2_3_parse(void **state)
{
	struct tfs_tensor_list *l;

	(void)state;
	for (int v = 1; v <= 3; v++) {
		l = npy_ok(v,
			   "{'descr': '<f4', 'fortran_order': False, 'shape': "
			   "(3, 4), }",
			   48);
		assert_int_equal(l->tensors[0].dtype, TFS_TENSOR_FP32);
		assert_string_equal(l->tensors[0].dtype_name, "<f4");
		assert_int_equal(l->tensors[0].shape.ndim, 2);
		assert_int_equal(l->tensors[0].shape.dim[0], 3);
		assert_int_equal(l->tensors[0].shape.dim[1], 4);
		assert_int_equal(l->tensors[0].fortran_order, 0);
		assert_string_equal(l->tensors[0].name, "");
		assert_true(l->data_offset == (v == 1 ? 128u : 128u));
		tfs_tensor_list_free(l);
	}
}

static void test_tensor_npy_reads_order_scalars_and_byte_order(void **state)
{
	struct tfs_tensor_list *l;

	(void)state;
	l = npy_ok(1,
		   "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }",
		   48);
	assert_int_equal(l->tensors[0].fortran_order, 1);
	assert_int_equal(l->tensors[0].dtype, TFS_TENSOR_INT64);
	tfs_tensor_list_free(l);
	l = npy_ok(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
		   8);
	assert_int_equal(l->tensors[0].shape.ndim, 0);
	tfs_tensor_list_free(l);
	l = npy_ok(
	    1, "{'descr': '>f2', 'fortran_order': False, 'shape': (5,), }", 10);
	assert_int_equal(l->tensors[0].big_endian, 1);
	assert_int_equal(l->tensors[0].dtype, TFS_TENSOR_FP16);
	tfs_tensor_list_free(l);
	l = npy_ok(
	    1, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 7), }",
	    0);
	assert_int_equal(l->tensors[0].dtype, TFS_TENSOR_BOOL);
	tfs_tensor_list_free(l);
	/* key order is free, double quotes and Python 2 longs are Python */
	l = npy_ok(1,
		   "{\"shape\": (2L, 2L), \"fortran_order\": False, \"descr\": "
		   "\"|u1\"}",
		   4);
	assert_int_equal(l->tensors[0].dtype, TFS_TENSOR_UINT8);
	tfs_tensor_list_free(l);
}

static void npy_bad(const char *d, uint64_t data, int want, const char *word)
{
	unsigned char buf[1024];
	struct tfs_tensor_list *l = (void *)1;
	char err[256] = "";
	size_t n = npy(buf, 1, d);
	int rc = tfs_tensor_parse_npy(buf, n, n + data, &l, err, sizeof(err));

	if (rc != want)
		fail_msg("%s: got %d, not %d (%s)", d, rc, want, err);
	assert_null(l);
	if (!strstr(err, word))
		fail_msg("%s: '%s' lacks '%s'", d, err, word);
}

static void test_tensor_npy_rejects_each_malformed_header(void **state)
{
	(void)state;
	npy_bad("{'descr': '<f4', 'fortran_order': False}", 0, -EINVAL,
		"lacks 'shape'");
	npy_bad("{'fortran_order': False, 'shape': (3,)}", 12, -EINVAL,
		"lacks 'descr'");
	npy_bad("{'descr': '<f4', 'shape': (3,)}", 12, -EINVAL,
		"lacks 'fortran_order'");
	npy_bad(
	    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
	    12, -EINVAL, "'x'");
	npy_bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
		"'shape': (3,)}",
		12, -EINVAL, "twice");
	npy_bad("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", 12,
		-EINVAL, "fortran_order");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12,
		-EINVAL, "not a tuple");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", 12,
		-EINVAL, "not a tuple");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}", 12,
		-EINVAL, "not a tuple");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,) 'x'}",
		12, -EINVAL, "malformed");
	npy_bad("{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}", 12,
		-EINVAL, "malformed");
	npy_bad("{'descr': <f4, 'fortran_order': False, 'shape': (3,)}", 12,
		-EINVAL, "descr");
	npy_bad("['descr', '<f4']", 12, -EINVAL, "not a Python dict");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x", 12,
		-EINVAL, "after its dict");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12,
		-EINVAL, "malformed");
	/* the data does not fill the file, or overruns it */
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
		40, -EINVAL, "needs 48 bytes");
	npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
		52, -EINVAL, "needs 48 bytes");
	npy_bad("{'descr': '<f8', 'fortran_order': False, 'shape': "
		"(4294967296, 4294967296), }",
		0, -EINVAL, "too large");
	/* valid, but not a dtype tensorfs decodes */
	npy_bad("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24,
		-ENOTSUP, "'<c8' is not supported");
	npy_bad("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 24,
		-ENOTSUP, "not supported");
	npy_bad("{'descr': 'float32', 'fortran_order': False, 'shape': (3,), }",
		12, -ENOTSUP, "not supported");
	npy_bad("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': "
		"(3,), }",
		12, -ENOTSUP, "structured");
}

static void test_tensor_npy_rejects_bad_preamble(void **state)
{
	unsigned char buf[1024];
	struct tfs_tensor_list *l;
	char err[256];
	size_t n =
	    npy(buf, 1,
		"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");

	(void)state;
	buf[6] = 4;
	assert_int_equal(
	    tfs_tensor_parse_npy(buf, n, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "version 4.0"));
	buf[6] = 1;
	buf[7] = 1;
	assert_int_equal(
	    tfs_tensor_parse_npy(buf, n, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	buf[7] = 0;
	assert_int_equal(
	    tfs_tensor_parse_npy(buf, n - 1, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(
	    tfs_tensor_parse_npy(buf, 9, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	buf[0] = 0x92;
	assert_int_equal(
	    tfs_tensor_parse_npy(buf, n, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "not a .npy file"));
	assert_int_equal(tfs_tensor_probe(buf, n, NULL), TFS_TENSOR_RAW);
}

/* ===== .safetensors ===== */

static size_t st(unsigned char *buf, const char *json, size_t pad)
{
	size_t n = strlen(json) + pad;

	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, json, strlen(json));
	memset(buf + 8 + strlen(json), ' ', pad);
	return 8 + n;
}

static const char st_good[] =
    "{\"__metadata__\": {\"format\": \"pt\"},"
    " \"b\": {\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [24, "
    "36]},"
    " \"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, "
    "24]},"
    " \"s\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [36, 44]},"
    " \"e\": {\"dtype\": \"F8_E4M3\", \"shape\": [0], \"data_offsets\": [44, "
    "44]}}";

static void test_tensor_safetensors_header_parses(void **state)
{
	unsigned char buf[1024];
	struct tfs_tensor_list *l;
	const struct tfs_tensor *t;
	char err[256] = "";
	size_t n = st(buf, st_good, 5);
	uint64_t hl = 0;

	(void)state;
	assert_int_equal(tfs_tensor_probe(buf, 16, &hl),
			 TFS_TENSOR_SAFETENSORS);
	assert_true(hl == n);
	if (tfs_tensor_parse(buf, n, n + 44, &l, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(l->format, TFS_TENSOR_SAFETENSORS);
	assert_true(l->data_offset == n);
	assert_int_equal(l->count, 4);
	/* in the order of the data */
	assert_string_equal(l->tensors[0].name, "a");
	assert_string_equal(l->tensors[1].name, "b");
	assert_string_equal(l->tensors[2].name, "s");
	assert_string_equal(l->tensors[3].name, "e");
	t = tfs_tensor_list_find(l, "b");
	assert_non_null(t);
	assert_int_equal(t->dtype, TFS_TENSOR_BF16);
	assert_true(t->offset == n + 24);
	assert_true(t->nbytes == 12);
	assert_int_equal(t->shape.ndim, 2);
	t = tfs_tensor_list_find(l, "s");
	assert_int_equal(t->shape.ndim, 0);
	assert_null(tfs_tensor_list_find(l, "c"));
	assert_int_equal(l->nmeta, 1);
	assert_string_equal(l->meta[0], "format");
	assert_string_equal(l->meta[1], "pt");
	tfs_tensor_list_free(l);
	/* the file size unknown */
	assert_int_equal(tfs_tensor_parse_safetensors(buf, n, UINT64_MAX, &l,
						      err, sizeof(err)),
			 0);
	tfs_tensor_list_free(l);
	tfs_tensor_list_free(NULL);
}

static void
test_tensor_safetensors_lists_dtypes_it_does_not_decode(void **state)
{
	unsigned char buf[512];
	struct tfs_tensor_list *l;
	char err[256] = "";
	size_t n = st(buf,
		      "{\"x\": {\"dtype\": \"F4\", \"shape\": [4],"
		      " \"data_offsets\": [0, 2]}}",
		      0);

	(void)state;
	assert_int_equal(
	    tfs_tensor_parse_safetensors(buf, n, n + 2, &l, err, sizeof(err)),
	    0);
	assert_int_equal(l->tensors[0].dtype, -1);
	assert_string_equal(l->tensors[0].dtype_name, "F4");
	tfs_tensor_list_free(l);
}

static void st_bad(const char *json, uint64_t data, const char *word)
{
	unsigned char buf[1024];
	struct tfs_tensor_list *l = (void *)1;
	char err[256] = "";
	size_t n = st(buf, json, 0);
	int rc = tfs_tensor_parse_safetensors(buf, n, n + data, &l, err,
					      sizeof(err));

	if (rc != -EINVAL)
		fail_msg("%s: got %d, not -EINVAL", json, rc);
	assert_null(l);
	if (!strstr(err, word))
		fail_msg("%s: '%s' lacks '%s'", json, err, word);
}

static void test_tensor_safetensors_rejects_each_malformed_header(void **state)
{
	(void)state;
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, 8]",
	       8, "not valid JSON");
	st_bad("[1, 2]", 0, "does not begin with '{'");
	st_bad("{\"a\": 1}", 0, "not an object with dtype");
	st_bad("{\"a\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
	       "not an object");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[8, 0]}}",
	       8, "begin <= end");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0]}}",
	       8, "data_offsets");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, -8]}}",
	       8, "data_offsets");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2.0], "
	       "\"data_offsets\": [0, 8]}}",
	       8, "shape is not a list");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], "
	       "\"data_offsets\": [0, 8]}}",
	       8, "shape is not a list");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": "
	       "[0, 8]}}",
	       8, "needs 12 bytes");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, 8]}}",
	       4, "past its end");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, 8]},"
	       " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[4, 12]}}",
	       12, "overlap");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, 8]},"
	       " \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
	       "[0, 8]}}",
	       8, "duplicate");
	st_bad("{\"__metadata__\": {\"a\": 1}}", 0, "not a string");
	st_bad("{\"__metadata__\": [1]}", 0, "not a JSON object");
	st_bad(
	    "{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296],"
	    " \"data_offsets\": [0, 8]}}",
	    8, "too large");
	st_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\":"
	       " [0, 99999999999999999999]}}",
	       8, "not valid JSON");
}

static void test_tensor_safetensors_rejects_bad_lengths(void **state)
{
	unsigned char buf[512];
	struct tfs_tensor_list *l;
	char err[256];
	size_t n = st(buf, "{}", 0);

	(void)state;
	assert_int_equal(
	    tfs_tensor_parse_safetensors(buf, n, n, &l, err, sizeof(err)), 0);
	assert_int_equal(l->count, 0);
	tfs_tensor_list_free(l);
	assert_int_equal(tfs_tensor_parse_safetensors(buf, n - 1, UINT64_MAX,
						      &l, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(tfs_tensor_parse_safetensors(buf, 7, UINT64_MAX, &l,
						      err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    tfs_tensor_parse_safetensors(buf, n, n - 1, &l, err, sizeof(err)),
	    -EINVAL);
	buf[5] = 1; /* a header length of 2^40 */
	assert_int_equal(tfs_tensor_parse_safetensors(buf, n, UINT64_MAX, &l,
						      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "exceeds the limit"));
	assert_int_equal(tfs_tensor_probe(buf, n, NULL), TFS_TENSOR_RAW);
	assert_int_equal(
	    tfs_tensor_parse(buf, n, UINT64_MAX, &l, err, sizeof(err)),
	    -EINVAL);
	assert_null(l);
}

/* ===== garbage ===== */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Parse len bytes copied to a buffer of exactly that size (so that ASan
 * sees any read past it); a success must describe data in the file. */
static void parse_any(const unsigned char *src, size_t len, uint64_t file_size)
{
	unsigned char *b = malloc(len ? len : 1);
	struct tfs_tensor_list *l = NULL;
	char err[256] = "";
	int rc;

	assert_non_null(b);
	memcpy(b, src, len);
	for (int which = 0; which < 3; which++) {
		rc = which == 0	  ? tfs_tensor_parse_npy(b, len, file_size, &l,
							 err, sizeof(err))
		     : which == 1 ? tfs_tensor_parse_safetensors(
					b, len, file_size, &l, err, sizeof(err))
				  : tfs_tensor_parse(b, len, file_size, &l, err,
						     sizeof(err));
		if (rc) {
			assert_true(rc == -EINVAL || rc == -ENOTSUP);
			assert_null(l);
			assert_true(err[0] != '\0');
			continue;
		}
		for (size_t i = 0; i < l->count; i++) {
			const struct tfs_tensor *t = &l->tensors[i];

			assert_true(t->offset >= l->data_offset);
			if (file_size != UINT64_MAX)
				assert_true(t->nbytes <= file_size &&
					    t->offset <= file_size - t->nbytes);
		}
		tfs_tensor_list_free(l);
		l = NULL;
	}
	free(b);
}

static void test_tensor_parsers_survive_random_bytes(void **state)
{
	unsigned char buf[1024];

	(void)state;
	for (int i = 0; i < 3000; i++) {
		size_t len = rnd() % sizeof(buf);

		for (size_t k = 0; k < len; k++)
			buf[k] = (unsigned char)rnd();
		/* a plausible start now and then, to get past the magic */
		if (i % 3 == 1 && len >= 12)
			memcpy(buf, "\x93NUMPY\x01\x00", 8);
		if (i % 3 == 2 && len >= 9) {
			memset(buf, 0, 8);
			buf[0] = (unsigned char)(rnd() % len);
			buf[8] = '{';
		}
		parse_any(buf, len, rnd() % 2 ? UINT64_MAX : len + rnd() % 64);
	}
}

static void test_tensor_parsers_survive_truncation_and_bit_flips(void **state)
{
	unsigned char good[2][1024], buf[1024];
	size_t n[2];

	(void)state;
	n[0] =
	    npy(good[0], 1,
		"{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }");
	n[1] = st(good[1], st_good, 3);
	for (int g = 0; g < 2; g++) {
		uint64_t data = g ? 44 : 24;

		for (size_t len = 0; len <= n[g]; len++)
			parse_any(good[g], len, n[g] + data);
		for (int i = 0; i < 4000; i++) {
			memcpy(buf, good[g], n[g]);
			for (int f = 1 + (int)(rnd() % 3); f > 0; f--) {
				size_t at = rnd() % n[g];

				if (rnd() % 2)
					buf[at] ^=
					    (unsigned char)(1u << (rnd() % 8));
				else
					buf[at] =
					    "{}[](),:'\"0123456789-eE .\\"[rnd() %
									   26];
			}
			parse_any(buf, n[g],
				  rnd() % 4 ? n[g] + data : UINT64_MAX);
		}
	}
}

static void
test_tensor_deepspeed_dtype_comes_from_the_swap_directory(void **state)
{
	(void)state;
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype(
		"/nvme/zero_stage_3/bfloat16params/rank0/12_param.tensor.swp"),
	    TFS_TENSOR_BF16);
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype(
		"/nvme/zero_stage_3/float16params/rank17/3_param.tensor.swp"),
	    TFS_TENSOR_FP16);
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype(
		"/nvme/zero_stage_3/float16params/3_param.tensor.swp"),
	    TFS_TENSOR_FP16);
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype(
		"/x/zero_stage_3/optimizer/rank3/optimizer_state_and_gradient.swp"),
	    TFS_TENSOR_FP32);
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype(
		"zero_stage_3//float32params//rank0//1_param.tensor.swp"),
	    TFS_TENSOR_FP32);
	/* not DeepSpeed's: no zero_stage_3, no .swp, another folder */
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype("/nvme/bfloat16params/rank0/1.swp"),
	    -ENOENT);
	assert_int_equal(tfs_tensor_deepspeed_dtype(
			     "/nvme/zero_stage_3/bfloat16params/rank0/1.bin"),
			 -ENOENT);
	assert_int_equal(tfs_tensor_deepspeed_dtype(
			     "/nvme/zero_stage_3/float8params/rank0/1.swp"),
			 -ENOENT);
	assert_int_equal(
	    tfs_tensor_deepspeed_dtype("/nvme/zero_stage_3/rank0/1.swp"),
	    -ENOENT);
	assert_int_equal(tfs_tensor_deepspeed_dtype(".swp"), -ENOENT);
	assert_int_equal(tfs_tensor_deepspeed_dtype("/"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_tensor_deepspeed_dtype_comes_from_the_swap_directory),
		cmocka_unit_test(test_tensor_fp16_decodes_known_bit_patterns),
		cmocka_unit_test(test_tensor_bf16_decodes_known_bit_patterns),
		cmocka_unit_test(test_tensor_e4m3_decodes_known_bit_patterns),
		cmocka_unit_test(test_tensor_e5m2_decodes_known_bit_patterns),
		cmocka_unit_test(
		    test_tensor_every_minifloat_survives_encode_decode),
		cmocka_unit_test(test_tensor_encode_rounds_to_nearest_even),
		cmocka_unit_test(test_tensor_shortest_matches_python_repr),
		cmocka_unit_test(
		    test_tensor_shortest_is_shortest_for_every_small_float),
		cmocka_unit_test(test_tensor_integers_read_little_endian),
		cmocka_unit_test(test_tensor_dtype_lookup_takes_every_spelling),
		cmocka_unit_test(
		    test_tensor_dtypes_agree_with_the_config_table),
		cmocka_unit_test(
		    test_tensor_shape_parses_plain_and_python_forms),
		cmocka_unit_test(test_tensor_shape_rejects_malformed),
		cmocka_unit_test(test_tensor_shape_formats_and_parses_back),
		cmocka_unit_test(test_tensor_shape_check_compares_with_bytes),
		cmocka_unit_test(test_tensor_npy_versions_1_2_3_parse),
		cmocka_unit_test(
		    test_tensor_npy_reads_order_scalars_and_byte_order),
		cmocka_unit_test(test_tensor_npy_rejects_each_malformed_header),
		cmocka_unit_test(test_tensor_npy_rejects_bad_preamble),
		cmocka_unit_test(test_tensor_safetensors_header_parses),
		cmocka_unit_test(
		    test_tensor_safetensors_lists_dtypes_it_does_not_decode),
		cmocka_unit_test(
		    test_tensor_safetensors_rejects_each_malformed_header),
		cmocka_unit_test(test_tensor_safetensors_rejects_bad_lengths),
		cmocka_unit_test(test_tensor_parsers_survive_random_bytes),
		cmocka_unit_test(
		    test_tensor_parsers_survive_truncation_and_bit_flips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
