/*
 * test_torch.c: torch.save files (lib/tensor/torch.c), their zip
 * directory (zip.c) and their pickle (pickle.c), and np.savez files
 * (npz.c), against the fixtures of tests/data/torch and tests/data/npz,
 * which PyTorch and numpy wrote (gen.py in each; *.legacy.pt in the
 * format before PyTorch 1.6), against legacy files built here byte by
 * byte, and against hostile bytes.
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

#include "npz.h"
#include "pickle.h"
#include "read.h"
#include "torch.h"
#include "zip.h"

#define DATA	 TFS_TEST_DATA "/torch/"
#define NPZ_DATA TFS_TEST_DATA "/npz/"

/* ===== helpers ===== */

static unsigned char *slurp_in(const char *dir, const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	unsigned char *b;
	long n;

	snprintf(path, sizeof(path), "%s%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static unsigned char *slurp(const char *name, size_t *len)
{
	return slurp_in(DATA, name, len);
}

static int parse_mem(const unsigned char *b, size_t len,
		     struct tfs_tensor_list **l, char *err, size_t errlen)
{
	struct tfs_zip_mem m = { b, len };

	return tfs_tensor_read(tfs_zip_read_mem, &m, len, 0, l, NULL, err,
			       errlen);
}

/* Element i (flat, C order) of t in the file b, through its strides. */
static double element(const unsigned char *b, const struct tfs_tensor *t,
		      uint64_t i)
{
	size_t es = tfs_tensor_dtype_size(t->dtype);
	uint64_t at = 0, stride = 1;

	for (unsigned int a = t->shape.ndim; a-- > 0;) {
		uint64_t idx = i % t->shape.dim[a];

		i /= t->shape.dim[a];
		at += idx * (t->stride ? t->stride[a] : stride);
		stride *= t->shape.dim[a];
	}
	return tfs_tensor_to_double(t->dtype, b + t->offset + at * es);
}

/* ===== the fixtures, against what torch.load saw ===== */

/* One line of expected.txt against the parsed file. */
static void check_line(char *line, const unsigned char *b,
		       const struct tfs_tensor_list *l)
{
	char *save = NULL, *name, *dtype, *shape, *strides, *tok;
	const struct tfs_tensor *t;
	char buf[256];
	uint64_t i = 0;

	strtok_r(line, " \n", &save); /* the file */
	name = strtok_r(NULL, " \n", &save);
	dtype = strtok_r(NULL, " \n", &save);
	shape = strtok_r(NULL, " \n", &save);
	strides = strtok_r(NULL, " \n", &save);
	strtok_r(NULL, " \n", &save); /* the storage offset */
	t = tfs_tensor_list_find(l, strcmp(name, "-") ? name : "");
	if (!t)
		fail_msg("no tensor '%s'", name);
	assert_string_equal(t->dtype_name, dtype);
	tfs_tensor_shape_format(&t->shape, 0, buf, sizeof(buf));
	assert_string_equal(buf, shape);
	if (t->stride) {
		struct tfs_tensor_shape s = { .ndim = t->shape.ndim };

		memcpy(s.dim, t->stride, s.ndim * sizeof(s.dim[0]));
		tfs_tensor_shape_format(&s, 0, buf, sizeof(buf));
		assert_string_equal(buf, strides);
	}
	while ((tok = strtok_r(NULL, " \n", &save))) {
		double want = strtod(tok, NULL), got = element(b, t, i++);

		if (!(got == want || (isnan(got) && isnan(want))))
			fail_msg("%s[%llu]: %.17g, torch %.17g", name,
				 (unsigned long long)i - 1, got, want);
	}
}

static void test_torch_fixtures_read_as_torch_load_reads_them(void **state)
{
	size_t elen, n = 0;
	unsigned char *exp = slurp("expected.txt", &elen);
	char *save = NULL, *line;

	(void)state;
	exp[elen] = '\0';
	for (line = strtok_r((char *)exp, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), n++) {
		char file[64], err[256];
		size_t len;
		unsigned char *b;
		struct tfs_tensor_list *l = NULL;

		assert_int_equal(sscanf(line, "%63s", file), 1);
		b = slurp(file, &len);
		if (parse_mem(b, len, &l, err, sizeof(err)))
			fail_msg("%s: %s", file, err);
		assert_int_equal(l->format, TFS_TENSOR_TORCH);
		check_line(line, b, l);
		tfs_tensor_list_free(l);
		free(b);
	}
	assert_true(n >= 20);
	free(exp);
}

static void test_torch_lists_tensors_in_saved_order_with_views(void **state)
{
	size_t len;
	unsigned char *b = slurp("views.pt", &len);
	struct tfs_tensor_list *l = NULL;
	char err[256];
	const struct tfs_tensor *base, *row, *t, *rep;

	(void)state;
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), 0);
	assert_int_equal(l->count, 5);
	assert_string_equal(l->tensors[0].name, "base");
	assert_string_equal(l->tensors[4].name, "rep");
	base = tfs_tensor_list_find(l, "base");
	row = tfs_tensor_list_find(l, "row");
	t = tfs_tensor_list_find(l, "t");
	rep = tfs_tensor_list_find(l, "rep");
	/* one storage: the row starts 4 elements in, the transpose at 0 */
	assert_int_equal(row->offset, base->offset + 16);
	assert_int_equal(t->offset, base->offset);
	assert_null(base->stride);
	assert_null(row->stride);
	assert_non_null(t->stride);
	assert_int_equal(t->nbytes, 48);
	assert_int_equal(rep->stride[0], 0);
	assert_int_equal(rep->nbytes, 16);
	tfs_tensor_list_free(l);
	free(b);
}

/* ===== hostile bytes ===== */

/* Every prefix of b, and a one-byte change at every step-th byte, end in
 * a list whose tensors lie inside the bytes, or in an error, never a
 * crash (ASan checks the reads). */
/* Memory that tfs_zip_inflate() fills, up to cap bytes. */
struct grow {
	unsigned char *p;
	size_t len, cap;
};

static int grow_sink(void *sctx, const void *buf, size_t len)
{
	struct grow *g = sctx;

	if (len > g->cap - g->len)
		return -E2BIG;
	memcpy(g->p + g->len, buf, len);
	g->len += len;
	return 0;
}

/* The deflated entry of array t of the archive b, inflated whole into
 * g (cap bytes): tfs_zip_inflate()'s return. */
static int inflate_array(const unsigned char *b, size_t len,
			 const struct tfs_tensor *t, struct grow *g, char *err,
			 size_t errlen)
{
	struct tfs_zip_mem m = { b, len };

	g->len = 0;
	return tfs_npz_inflate(t, tfs_zip_read_mem, &m, grow_sink, g, err,
			       errlen);
}

static void survives_truncation_and_bit_flips(const unsigned char *b,
					      size_t len, size_t step)
{
	static unsigned char out[1 << 16];
	struct grow g = { out, 0, sizeof(out) };
	unsigned char *c = malloc(len);
	char err[256];

	assert_non_null(c);
	for (size_t n = 0; n <= len; n++) {
		struct tfs_tensor_list *l = NULL;
		unsigned char *p = malloc(n ? n : 1);

		memcpy(p, b, n);
		if (!parse_mem(p, n, &l, err, sizeof(err)))
			tfs_tensor_list_free(l);
		else
			assert_null(l);
		free(p);
	}
	for (size_t i = 0; i < len; i += step) {
		struct tfs_tensor_list *l = NULL;

		memcpy(c, b, len);
		c[i] ^= (unsigned char)(0x5a + i);
		/* a flipped magic number makes it raw bytes: no list */
		if (parse_mem(c, len, &l, err, sizeof(err)) || !l)
			continue;
		for (size_t k = 0; k < l->count; k++) {
			const struct tfs_tensor *t = &l->tensors[k];

			if (t->deflated) {
				/* within the entry; the entry in the file;
				 * inflating it ends, whatever it says */
				assert_true(t->offset + t->nbytes <=
					    t->zip.size);
				assert_true(t->zip.at + t->zip.csize <= len);
				(void)inflate_array(c, len, t, &g, err,
						    sizeof(err));
			} else if (!t->stride) {
				assert_true(t->offset + t->nbytes <= len);
			}
		}
		tfs_tensor_list_free(l);
	}
	free(c);
}

static void test_torch_survives_truncation_and_bit_flips(void **state)
{
	static const char *const files[] = { "state_dict.pt",
					     "state_dict.legacy.pt",
					     "state_dict.legacy-p4.pt" };

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		size_t len;
		unsigned char *b = slurp(files[i], &len);

		survives_truncation_and_bit_flips(b, len, 3);
		free(b);
	}
}

static int pickle_err(const char *pkl, size_t len, char *err, size_t errlen)
{
	struct tfs_tensor_list *l = NULL;
	int rc = tfs_torch_parse_pickle(pkl, len, NULL, "", &l, err, errlen);

	tfs_tensor_list_free(l);
	return rc;
}

static void test_pickle_never_calls_what_it_names(void **state)
{
	/* os.system('true'): a GLOBAL and a REDUCE, kept as data */
	static const char sys_call[] = "\x80\x02"
				       "cos\nsystem\n"
				       "X\x04\x00\x00\x00true\x85R.";
	char err[256];

	(void)state;
	assert_int_equal(
	    pickle_err(sys_call, sizeof(sys_call) - 1, err, sizeof(err)), 0);
}

static void test_pickle_refuses_opcodes_torch_does_not_write(void **state)
{
	static const struct {
		const char *pkl;
		const char *word;
	} bad[] = {
		{ "\x80\x02(ios\nsystem\n.", "INST" },
		{ "\x80\x02I1\n.", "INT (protocol 0)" },
		{ "\x80\x02\x82\x01.", "EXT1" },
		{ "\x80\x02\xff.", "0xff" },
		{ "\x80\x02]q\x01h\x05.", "never PUT" },
		{ "\x80\x02]r\xff\xff\xff\x7f.", "beyond" },
		{ "\x80\x02K\x01", "truncated" },
		{ "\x80\x02(K\x01K\x02.", "not one" },
		{ "\x80\x02X\xff\xff\xff\x7f.", "past the end" },
		{ "\x80\x02K\x01K\x02s.", "on no dict" },
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(pickle_err(bad[i].pkl, strlen(bad[i].pkl), err,
					    sizeof(err)),
				 -EINVAL);
		if (!strstr(err, bad[i].word))
			fail_msg("case %zu: '%s' lacks '%s'", i, err,
				 bad[i].word);
	}
}

static void test_pickle_bounds_cycles_and_depth(void **state)
{
	/* a list appended to itself: walked to the depth limit, no further */
	static const char cycle[] = "\x80\x02]q\x00h\x00"
				    "a.";
	char err[256], *deep;
	size_t n = 0;

	(void)state;
	assert_int_equal(pickle_err(cycle, sizeof(cycle) - 1, err, sizeof(err)),
			 -EINVAL);
	if (!strstr(err, "nested"))
		fail_msg("%s", err);
	/* 1000 lists in lists */
	deep = malloc(4000);
	deep[n++] = '\x80';
	deep[n++] = 2;
	for (int i = 0; i < 1000; i++)
		deep[n++] = ']';
	for (int i = 0; i < 999; i++)
		deep[n++] = 'a';
	deep[n++] = '.';
	assert_int_equal(pickle_err(deep, n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested"));
	free(deep);
}

static void test_torch_refuses_a_view_past_its_storage(void **state)
{
	size_t len;
	unsigned char *b = slurp("tensor.pt", &len);
	struct tfs_tensor_list *l = NULL;
	char err[256];
	unsigned char *p;

	(void)state;
	/* the storage holds 4 elements: claim 5 rows in the size tuple */
	p = memmem(b, len, "K\x02K\x02\x86", 5);
	assert_non_null(p);
	p[1] = 5;
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "past its storage"));
	assert_null(l);
	free(b);
}

/* ===== the legacy format, built byte by byte ===== */

struct bytes {
	unsigned char *p;
	size_t n;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->n + n);
	assert_non_null(b->p);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* a string literal, without its NUL */
#define PUT(b, lit) put(b, lit, sizeof(lit) - 1)

/* BINUNICODE s */
static void put_str(struct bytes *b, const char *s, size_t n)
{
	unsigned char h[5] = { 'X', (unsigned char)n, (unsigned char)(n >> 8),
			       (unsigned char)(n >> 16), 0 };

	put(b, h, 5);
	put(b, s, n);
}

/*
 * A legacy torch.save file of {"pad": 'x' * pad, "t": tensor([1.5, -2.0])}
 * whose storage is of class cls with the view item view[0..viewlen) ("N"
 * for None),
 * and whose storage data holds numel elements of 4 bytes (only 2 given).
 */
static struct bytes legacy_file(size_t pad, const char *cls, const char *view,
				size_t viewlen, uint64_t numel)
{
	static const unsigned char magic[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c,
					       0xfc, 0x9c, 0x46, 0xf9, 0x20,
					       0x6a, 0xa8, 0x50, 0x19, 0x2e };
	static const float data[2] = { 1.5f, -2.0f };
	struct bytes b = { NULL, 0 };
	char *x = malloc(pad + 1);
	unsigned char n[8];

	assert_non_null(x);
	memset(x, 'x', pad);
	put(&b, magic, sizeof(magic));
	PUT(&b, "\x80\x02M\xe9\x03."); /* 1001 */
	PUT(&b, "\x80\x02}.");	       /* system info */
	PUT(&b, "\x80\x02}(");	       /* the object */
	put_str(&b, "pad", 3);
	put_str(&b, x, pad);
	put_str(&b, "t", 1);
	PUT(&b, "ctorch._utils\n_rebuild_tensor_v2\n((");
	put_str(&b, "storage", 7);
	PUT(&b, "c");
	put(&b, cls, strlen(cls));
	put_str(&b, "0", 1);
	put_str(&b, "cpu", 3);
	PUT(&b, "K\x02");
	put(&b, view, viewlen);
	PUT(&b, "tQK\x00K\x02\x85K\x01\x85\x89}tRu.");
	PUT(&b, "\x80\x02]"); /* the keys */
	put_str(&b, "0", 1);
	PUT(&b, "a.");
	for (int i = 0; i < 8; i++)
		n[i] = (unsigned char)(numel >> (8 * i));
	put(&b, n, 8);
	put(&b, data, sizeof(data));
	free(x);
	return b;
}

static int parse_legacy(struct bytes b, size_t max_pickle,
			struct tfs_tensor_list **l, char *err, size_t errlen)
{
	struct tfs_zip_mem m = { b.p, b.n };

	/* the legacy reader itself: through tfs_tensor_read() a file cut
	 * inside the magic number is raw bytes, not a broken file */
	return tfs_torch_parse_legacy(tfs_zip_read_mem, &m, b.n, max_pickle, l,
				      err, errlen);
}

static void test_torch_reads_the_legacy_format(void **state)
{
	/* a saved object of 200 KiB: read in a window that grows */
	struct bytes b = legacy_file(200000, "torch\nFloatStorage\n", "N", 1,
				     2),
		     b2;
	struct tfs_tensor_list *l = NULL;
	const struct tfs_tensor *t;
	char err[256];
	float v[2];

	(void)state;
	assert_int_equal(tfs_tensor_probe(b.p, 16, NULL), TFS_TENSOR_TORCH);
	if (parse_legacy(b, 0, &l, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(l->count, 1);
	t = &l->tensors[0];
	assert_string_equal(t->name, "t");
	assert_int_equal(t->dtype, TFS_TENSOR_FP32);
	assert_int_equal(t->nbytes, 8);
	assert_int_equal(t->offset, b.n - 8);
	memcpy(v, b.p + t->offset, sizeof(v));
	assert_true(v[0] == 1.5f && v[1] == -2.0f);
	tfs_tensor_list_free(l);

	/* a class listed with its size but not decoded (torch.chalf: 4
	 * bytes an element) is listed, placed by its element size */
	b2 = legacy_file(10, "torch\nComplexHalfStorage\n", "N", 1, 2);
	if (parse_legacy(b2, 0, &l, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(l->count, 1);
	t = &l->tensors[0];
	assert_int_equal(t->dtype, -1);
	assert_string_equal(t->dtype_name, "complex32");
	assert_int_equal(t->nbytes, 8);
	assert_int_equal(t->offset, b2.n - 8);
	tfs_tensor_list_free(l);
	free(b2.p);

	/* the object's pickle longer than the bytes a caller lets it read */
	assert_int_equal(parse_legacy(b, 100000, &l, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "longer than the 100000 bytes"));
	assert_null(l);
	free(b.p);
}

static void test_torch_refuses_broken_legacy_files(void **state)
{
	static const struct {
		const char *cls, *view;
		size_t viewlen;
		uint64_t numel;
		const char *word;
	} bad[] = {
		/* a storage view (PyTorch before 1.0) */
		{ "torch\nFloatStorage\n",
		  "X\x01\x00\x00\x00"
		  "1K\x00K\x08\x87",
		  11, 2, "view of another storage" },
		/* a class of unknown element size: nothing after it is found */
		{ "torch\nQUInt4x2Storage\n", "N", 1, 2, "element size" },
		/* more elements than the file holds */
		{ "torch\nFloatStorage\n", "N", 1, 3, "past the end" },
		{ "torch\nFloatStorage\n", "N", 1, UINT64_MAX / 2,
		  "past the end" },
		/* fewer than the tensor reaches */
		{ "torch\nFloatStorage\n", "N", 1, 1, "past its storage" },
	};
	struct tfs_tensor_list *l = NULL;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bytes b = legacy_file(3, bad[i].cls, bad[i].view,
					     bad[i].viewlen, bad[i].numel);

		err[0] = '\0';
		assert_int_equal(parse_legacy(b, 0, &l, err, sizeof(err)),
				 -EINVAL);
		assert_null(l);
		if (!strstr(err, bad[i].word))
			fail_msg("case %zu: '%s' lacks '%s'", i, err,
				 bad[i].word);
		/* and cut anywhere, it is refused, never misread */
		for (size_t n = 0; n < b.n; n++) {
			struct bytes c = { b.p, n };

			if (!parse_legacy(c, 0, &l, err, sizeof(err)))
				fail_msg("case %zu cut at %zu: read", i, n);
		}
		free(b.p);
	}
}

static void test_pickle_load_part_says_where_it_ends(void **state)
{
	static const char two[] = "\x80\x02K\x07.\x80\x02]K\x01"
				  "a.";
	struct tfs_pickle *p = NULL;
	size_t used = 0;
	char err[128];

	(void)state;
	assert_int_equal(tfs_pickle_load_part(two, sizeof(two) - 1, &p, &used,
					      err, sizeof(err)),
			 0);
	assert_int_equal(used, 5);
	assert_int_equal(p->root->i, 7);
	tfs_pickle_free(p);
	assert_int_equal(tfs_pickle_load_part(two + 5, sizeof(two) - 6, &p,
					      &used, err, sizeof(err)),
			 0);
	assert_int_equal(used, sizeof(two) - 6);
	tfs_pickle_free(p);
	/* cut short: more bytes may finish it */
	for (size_t n = 0; n < 5; n++)
		assert_int_equal(
		    tfs_pickle_load_part(two, n, &p, &used, err, sizeof(err)),
		    -ENODATA);
	assert_int_equal(tfs_pickle_load_part("\x80\x02X\x09\x00\x00\x00"
					      "ab",
					      9, &p, &used, err, sizeof(err)),
			 -ENODATA);
	assert_int_equal(tfs_pickle_load_part("\x80\x02"
					      "ctorch\n_reb",
					      13, &p, &used, err, sizeof(err)),
			 -ENODATA);
	/* and wrong, which no more bytes can mend */
	assert_int_equal(tfs_pickle_load_part("\x80\x02\xff", 3, &p, &used, err,
					      sizeof(err)),
			 -EINVAL);
	/* tfs_pickle_load() says -EINVAL for both */
	assert_int_equal(tfs_pickle_load(two, 3, &p, err, sizeof(err)),
			 -EINVAL);
	assert_null(p);
}

/* ===== np.savez files ===== */

/* The arrays of tests/data/npz/arrays.npz (gen.py), by name, as numpy
 * wrote them: dtypes, shapes, order, byte order and values in place. */
static void test_npz_lists_arrays_as_numpy_saved_them(void **state)
{
	size_t len;
	unsigned char *b = slurp_in(NPZ_DATA, "arrays.npz", &len);
	struct tfs_tensor_list *l = NULL;
	const struct tfs_tensor *t;
	char err[256];
	int32_t be;

	(void)state;
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), 0);
	assert_int_equal(l->format, TFS_TENSOR_NPZ);
	assert_int_equal(l->count, 6);
	/* in the file's order, np.savez's: keywords, then arr_0 */
	assert_string_equal(l->tensors[0].name, "fortran");
	assert_string_equal(l->tensors[4].name, "words");
	assert_string_equal(l->tensors[5].name, "arr_0");
	t = tfs_tensor_list_find(l, "arr_0");
	assert_int_equal(t->dtype, TFS_TENSOR_FP32);
	assert_int_equal(t->shape.ndim, 2);
	assert_int_equal(t->shape.dim[0], 2);
	assert_int_equal(t->shape.dim[1], 3);
	assert_int_equal(t->nbytes, 24);
	assert_true(t->offset + t->nbytes <= len);
	for (int i = 0; i < 6; i++) {
		const unsigned char *p = b + t->offset + 4 * i;

		assert_true(tfs_tensor_to_double(t->dtype, p) == i);
	}
	t = tfs_tensor_list_find(l, "fortran");
	assert_int_equal(t->dtype, TFS_TENSOR_FP64);
	assert_true(t->fortran_order);
	/* column-major: (0,0) (1,0) (0,1) ... = 0 3 1 4 2 5 */
	assert_true(tfs_tensor_to_double(t->dtype, b + t->offset + 8) == 3.0);
	t = tfs_tensor_list_find(l, "big_endian");
	assert_int_equal(t->dtype, TFS_TENSOR_INT32);
	assert_true(t->big_endian);
	memcpy(&be, b + t->offset + 4 * 4, 4);
	assert_int_equal(__builtin_bswap32((uint32_t)be), 4);
	t = tfs_tensor_list_find(l, "half");
	assert_int_equal(t->dtype, TFS_TENSOR_FP16);
	assert_true(isnan(tfs_tensor_to_double(t->dtype, b + t->offset + 4)));
	t = tfs_tensor_list_find(l, "scalar");
	assert_int_equal(t->shape.ndim, 0);
	assert_true(tfs_tensor_to_double(t->dtype, b + t->offset) == 0.25);
	/* strings: listed with numpy's descr, not decoded */
	t = tfs_tensor_list_find(l, "words");
	assert_int_equal(t->dtype, -1);
	assert_string_equal(t->dtype_name, "<U2");
	assert_int_equal(t->shape.dim[0], 2);
	tfs_tensor_list_free(l);
	free(b);
}

/* np.savez_compressed deflates its entries: the header is read through
 * the inflate, the array is marked deflated with its entry, and the
 * entry inflates to the .npy file numpy wrote (x = np.arange(4)); a
 * flipped bit of the deflate data or a wrong CRC is refused, naming the
 * entry; another compression method is refused, saying so. */
static void test_npz_reads_compressed(void **state)
{
	static unsigned char out[4096];
	struct grow g = { out, 0, sizeof(out) };
	size_t len;
	unsigned char *b = slurp_in(NPZ_DATA, "packed.npz", &len);
	struct tfs_tensor_list *l = NULL;
	const struct tfs_tensor *t;
	char err[256] = "";
	int64_t v[4];

	(void)state;
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), 0);
	assert_int_equal(l->format, TFS_TENSOR_NPZ);
	assert_int_equal(l->count, 1);
	t = &l->tensors[0];
	assert_string_equal(t->name, "x");
	assert_int_equal(t->dtype, TFS_TENSOR_INT64);
	assert_int_equal(t->shape.ndim, 1);
	assert_int_equal(t->shape.dim[0], 4);
	assert_int_equal(t->deflated, 1);
	assert_int_equal(t->nbytes, 32);
	assert_int_equal(t->offset + t->nbytes, t->zip.size);
	assert_true(t->zip.csize < t->zip.size);
	assert_true(t->zip.at + t->zip.csize <= len);
	assert_int_equal(inflate_array(b, len, t, &g, err, sizeof(err)), 0);
	assert_int_equal(g.len, t->zip.size);
	assert_memory_equal(out, "\x93NUMPY", 6);
	memcpy(v, out + t->offset, sizeof(v));
	for (int i = 0; i < 4; i++)
		assert_int_equal(v[i], i);
	/* the stream's last byte flipped, then a CRC that is not its own */
	b[t->zip.at + t->zip.csize - 1] ^= 0x55;
	assert_int_equal(inflate_array(b, len, t, &g, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'x'"));
	b[t->zip.at + t->zip.csize - 1] ^= 0x55;
	{
		struct tfs_tensor u = *t;

		u.zip.crc ^= 1;
		assert_int_equal(
		    inflate_array(b, len, &u, &g, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "CRC-32"));
		u = *t;
		u.zip.size -= 1; /* the stream makes more than that */
		assert_int_equal(
		    inflate_array(b, len, &u, &g, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "inflates to more"));
	}
	tfs_tensor_list_free(l);
	free(b);
}

/* An entry compressed by another method (bzip2, 12) is refused, saying
 * so; a zip archive that is neither torch.save's nor np.savez's is named
 * as such. */
static void test_npz_refuses_other_methods_and_foreign_archives(void **state)
{
	size_t len;
	unsigned char *b = slurp_in(NPZ_DATA, "packed.npz", &len);
	struct tfs_tensor_list *l = NULL;
	char err[256];

	(void)state;
	for (size_t i = 0; i + 12 <= len; i++) /* central header: method */
		if (!memcmp(b + i, "PK\x01\x02", 4))
			b[i + 10] = 12;
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), -EINVAL);
	assert_null(l);
	assert_non_null(strstr(err, "other than deflate"));
	free(b);
	/* arrays.npz with every ".npy" renamed ".npz": no array entry left */
	b = slurp_in(NPZ_DATA, "arrays.npz", &len);
	for (size_t i = 0; i + 4 <= len; i++)
		if (!memcmp(b + i, ".npy", 4))
			b[i + 3] = 'z';
	assert_int_equal(parse_mem(b, len, &l, err, sizeof(err)), -EINVAL);
	assert_null(l);
	assert_non_null(strstr(err, "nor NAME.npy entries (np.savez)"));
	free(b);
}

static void test_npz_survives_truncation_and_bit_flips(void **state)
{
	size_t len;
	unsigned char *b = slurp_in(NPZ_DATA, "arrays.npz", &len);

	(void)state;
	survives_truncation_and_bit_flips(b, len, 1);
	free(b);
	b = slurp_in(NPZ_DATA, "packed.npz", &len);
	survives_truncation_and_bit_flips(b, len, 1);
	free(b);
}

static void test_zip_refuses_what_is_no_archive(void **state)
{
	static const unsigned char junk[64] = "PK\3\4 not really";
	struct tfs_zip_mem m = { junk, sizeof(junk) };
	struct tfs_zip *z = NULL;
	char err[256];

	(void)state;
	assert_int_equal(tfs_zip_open(tfs_zip_read_mem, &m, sizeof(junk), &z,
				      err, sizeof(err)),
			 -EINVAL);
	assert_null(z);
	assert_non_null(strstr(err, "end of central directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_torch_fixtures_read_as_torch_load_reads_them),
		cmocka_unit_test(
		    test_torch_lists_tensors_in_saved_order_with_views),
		cmocka_unit_test(test_torch_survives_truncation_and_bit_flips),
		cmocka_unit_test(test_pickle_never_calls_what_it_names),
		cmocka_unit_test(
		    test_pickle_refuses_opcodes_torch_does_not_write),
		cmocka_unit_test(test_pickle_bounds_cycles_and_depth),
		cmocka_unit_test(test_torch_refuses_a_view_past_its_storage),
		cmocka_unit_test(test_torch_reads_the_legacy_format),
		cmocka_unit_test(test_torch_refuses_broken_legacy_files),
		cmocka_unit_test(test_pickle_load_part_says_where_it_ends),
		cmocka_unit_test(test_zip_refuses_what_is_no_archive),
		cmocka_unit_test(test_npz_lists_arrays_as_numpy_saved_them),
		cmocka_unit_test(test_npz_reads_compressed),
		cmocka_unit_test(
		    test_npz_refuses_other_methods_and_foreign_archives),
		cmocka_unit_test(test_npz_survives_truncation_and_bit_flips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
