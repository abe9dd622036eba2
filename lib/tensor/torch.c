/*
 * torch.c: the tensors of a torch.save file (torch.h says the format).
 *
 * tfs_torch_parse_zip() finds, in a zip archive read.c opened (zip.c),
 * the one PREFIX/data.pkl, reads it whole and hands it to pickle.c, then walks
 * the tree of values from the root, building each tensor's name from the
 * path.  A _rebuild_tensor_v2 call becomes a struct tfs_tensor: dtype
 * from the storage class, shape and strides from its arguments, and the
 * bytes from the entry PREFIX/data/KEY, which must hold every element
 * the strides reach.  The walk is bounded: TFS_TORCH_MAX_DEPTH levels
 * (the tree may be cyclic) and a budget of visits proportional to the
 * number of values (a shared value is walked once per path to it, and
 * paths can multiply).
 *
 * A file of the legacy format (torch.h) is a run of pickles read one
 * after another with tfs_pickle_load_part(), each in a window of the
 * file that doubles until its STOP is inside; then the storages, each
 * found after the one before it from its element count and the element
 * size of its class (which the main pickle's persistent ids name), so
 * an unknown class stops the reading of the storages after it.  A
 * tensor's storage is then looked up by key in that table instead of in
 * the archive; the walk is the same.
 */
#include "torch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "units.h"

#define TFS_TORCH_MAX_DEPTH 100
#define MAX_NAME	    4096

/* ===== storage classes ===== */

static const struct {
	const char *cls;   /* after "torch." */
	const char *dtype; /* torch's name, after "torch." */
	int tfs;	   /* -1: listed with its size, not decoded */
	size_t size;	   /* bytes per element, where tfs is -1 */
} storages[] = {
	{ "DoubleStorage", "float64", TFS_TENSOR_FP64, 0 },
	{ "FloatStorage", "float32", TFS_TENSOR_FP32, 0 },
	{ "HalfStorage", "float16", TFS_TENSOR_FP16, 0 },
	{ "BFloat16Storage", "bfloat16", TFS_TENSOR_BF16, 0 },
	{ "Float8_e4m3fnStorage", "float8_e4m3fn", TFS_TENSOR_FP8_E4M3, 0 },
	{ "Float8_e5m2Storage", "float8_e5m2", TFS_TENSOR_FP8_E5M2, 0 },
	{ "LongStorage", "int64", TFS_TENSOR_INT64, 0 },
	{ "IntStorage", "int32", TFS_TENSOR_INT32, 0 },
	{ "ShortStorage", "int16", TFS_TENSOR_INT16, 0 },
	{ "CharStorage", "int8", TFS_TENSOR_INT8, 0 },
	{ "ByteStorage", "uint8", TFS_TENSOR_UINT8, 0 },
	{ "UInt16Storage", "uint16", TFS_TENSOR_UINT16, 0 },
	{ "UInt32Storage", "uint32", TFS_TENSOR_UINT32, 0 },
	{ "UInt64Storage", "uint64", TFS_TENSOR_UINT64, 0 },
	{ "BoolStorage", "bool", TFS_TENSOR_BOOL, 0 },
	{ "UntypedStorage", "uint8", TFS_TENSOR_UINT8, 0 },
	{ "ComplexFloatStorage", "complex64", -1, 8 },
	{ "ComplexDoubleStorage", "complex128", -1, 16 },
	{ "ComplexHalfStorage", "complex32", -1, 4 },
};

/* The index in storages[] of class cls ("torch.FloatStorage"), or -1. */
static int storage_class(const char *cls)
{
	for (size_t i = 0; i < sizeof(storages) / sizeof(storages[0]); i++)
		if (!strncmp(cls, "torch.", 6) &&
		    !strcmp(cls + 6, storages[i].cls))
			return (int)i;
	return -1;
}

/* Bytes per element of storages[c], 0 for c < 0 (a class not known). */
static size_t class_esize(int c)
{
	if (c < 0)
		return 0;
	return storages[c].tfs < 0 ? storages[c].size
				   : tfs_tensor_dtype_size(storages[c].tfs);
}

/* ===== the walk ===== */

/* A storage of the legacy format: where its bytes are in the file. */
struct legacy_storage {
	const char *key; /* borrowed from the keys pickle */
	const char *cls; /* borrowed from the main pickle */
	uint64_t offset, bytes;
};

struct legacy {
	struct legacy_storage *s; /* sorted by key */
	size_t n;
};

struct walk {
	struct tfs_tensor_list *l;
	const struct tfs_zip *z;
	const struct legacy *lg;
	const char *prefix;
	int big_endian;
	uint64_t budget;
	char name[MAX_NAME];
	char *err;
	size_t errlen;
};

static int walk(struct walk *w, const struct tfs_pickle_value *v, size_t nlen,
		unsigned int depth);

static int is_global(const struct tfs_pickle_value *v, const char *name)
{
	return v && v->type == TFS_PICKLE_GLOBAL && !strcmp(v->s, name);
}

/* A non-negative int into *out: 0, or -1. */
static int get_u64(const struct tfs_pickle_value *v, uint64_t *out)
{
	if (!v || v->type != TFS_PICKLE_INT || v->i < 0)
		return -1;
	*out = (uint64_t)v->i;
	return 0;
}

/* A tuple of non-negative ints into a[], *n of them. */
static int get_dims(const struct tfs_pickle_value *v, uint64_t *a,
		    unsigned int *n)
{
	if (!v || (v->type != TFS_PICKLE_TUPLE && v->type != TFS_PICKLE_LIST) ||
	    v->n > TFS_TENSOR_MAX_DIMS)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (get_u64(v->items[i], &a[i]))
			return -1;
	*n = (unsigned int)v->n;
	return 0;
}

/* Storage pid ('storage', torch.XStorage, KEY, location, numel) into
 * t->dtype, t->dtype_name, *key and *numel. */
static int storage_of(struct walk *w, const struct tfs_pickle_value *sv,
		      struct tfs_tensor *t, const char **key, uint64_t *numel,
		      size_t *es)
{
	const struct tfs_pickle_value *pid, *cls;
	int c;

	if (!sv || sv->type != TFS_PICKLE_PERSID)
		return tfs_invalid(w->err, w->errlen,
				   "tensor '%s' has no storage", w->name);
	pid = sv->items[0];
	if (pid->type != TFS_PICKLE_TUPLE || pid->n < 5 ||
	    pid->items[0]->type != TFS_PICKLE_STR ||
	    strcmp(pid->items[0]->s, "storage") ||
	    pid->items[1]->type != TFS_PICKLE_GLOBAL ||
	    pid->items[2]->type != TFS_PICKLE_STR ||
	    get_u64(pid->items[4], numel))
		return tfs_invalid(
		    w->err, w->errlen,
		    "the storage of tensor '%s' is no ('storage', "
		    "class, key, location, numel)",
		    w->name);
	if (pid->n > 5 && pid->items[5]->type != TFS_PICKLE_NONE)
		return tfs_invalid(w->err, w->errlen,
				   "the storage of tensor '%s' is a view of "
				   "another storage (PyTorch before 1.0 saved "
				   "those), which tensorfs does not read",
				   w->name);
	cls = pid->items[1];
	*key = pid->items[2]->s;
	c = storage_class(cls->s);
	*es = class_esize(c);
	t->dtype = c < 0 ? -1 : storages[c].tfs;
	if (c >= 0)
		snprintf(t->dtype_name, sizeof(t->dtype_name), "%s",
			 storages[c].dtype);
	else /* the class, as a name to show */
		snprintf(t->dtype_name, sizeof(t->dtype_name), "%s",
			 strncmp(cls->s, "torch.", 6) ? cls->s : cls->s + 6);
	return 0;
}

/* The strides of t, dropped when they are C order's; span: the elements
 * from the first reached to the last, plus one (0 when empty). */
static int strides(struct walk *w, struct tfs_tensor *t, const uint64_t *st,
		   uint64_t *span)
{
	uint64_t count = 1, want = 1, last = 0, p;
	int c_order = 1;

	for (unsigned int a = t->shape.ndim; a-- > 0;) {
		uint64_t d = t->shape.dim[a];

		if (d != 1 && st[a] != want)
			c_order = 0;
		if (d && __builtin_mul_overflow(want, d, &want))
			want = UINT64_MAX; /* then no later stride matches */
		if (__builtin_mul_overflow(count, d, &count) ||
		    (d && (__builtin_mul_overflow(d - 1, st[a], &p) ||
			   __builtin_add_overflow(last, p, &last))))
			return tfs_invalid(w->err, w->errlen,
					   "tensor '%s': its shape and strides "
					   "overflow",
					   w->name);
	}
	*span = count ? last + 1 : 0;
	if (c_order || !count)
		return 0;
	t->stride = malloc(t->shape.ndim * sizeof(*t->stride));
	if (!t->stride)
		return -ENOMEM;
	memcpy(t->stride, st, t->shape.ndim * sizeof(*st));
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct legacy_storage *)a)->key,
		      ((const struct legacy_storage *)b)->key);
}

static const struct legacy_storage *legacy_find(const struct legacy *lg,
						const char *key)
{
	struct legacy_storage k = { .key = key };

	return lg->n ? bsearch(&k, lg->s, lg->n, sizeof(k), by_key) : NULL;
}

/* Where the storage KEY's bytes are, and that they hold the span. */
static int place(struct walk *w, struct tfs_tensor *t, const char *key,
		 uint64_t numel, size_t es, uint64_t soff, uint64_t span)
{
	uint64_t need, start = 0, have = UINT64_MAX;
	char ename[MAX_NAME];
	const struct tfs_zip_entry *e;

	if (w->z) {
		snprintf(ename, sizeof(ename), "%sdata/%s", w->prefix, key);
		e = tfs_zip_find(w->z, ename);
		if (!e)
			return tfs_invalid(
			    w->err, w->errlen,
			    "tensor '%s': its storage '%s' is not in "
			    "the archive",
			    w->name, ename);
		if (!e->stored)
			return tfs_invalid(w->err, w->errlen,
					   "tensor '%s': its storage '%s' is "
					   "compressed; torch.save stores them "
					   "uncompressed",
					   w->name, ename);
		start = e->offset;
		have = e->size;
	} else if (w->lg) {
		const struct legacy_storage *ls = legacy_find(w->lg, key);

		if (!ls || !ls->offset)
			return tfs_invalid(w->err, w->errlen,
					   "tensor '%s': its storage '%s' is "
					   "not in the file's list of storages",
					   w->name, key);
		start = ls->offset;
		have = ls->bytes;
	}
	if (!es) { /* a class not known: only where it starts */
		t->offset = start;
		return 0;
	}
	if (__builtin_add_overflow(soff, span, &need) || need > numel ||
	    __builtin_mul_overflow(numel, es, &numel) || numel > have)
		return tfs_invalid(
		    w->err, w->errlen,
		    "tensor '%s' reaches past its storage (offset "
		    "%llu, %llu elements, in a storage of %llu "
		    "bytes)",
		    w->name, (unsigned long long)soff, (unsigned long long)span,
		    (unsigned long long)have);
	t->offset = start + soff * es;
	t->nbytes = span * es;
	return 0;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, ...). */
static int rebuild_tensor(struct walk *w, const struct tfs_pickle_value *args)
{
	uint64_t st[TFS_TENSOR_MAX_DIMS], soff, numel = 0, span = 0;
	unsigned int nst = 0;
	const char *key = "";
	struct tfs_tensor *t;
	size_t es = 0;
	int rc;

	if (args->n < 4 || get_u64(args->items[1], &soff))
		return tfs_invalid(
		    w->err, w->errlen,
		    "tensor '%s' is rebuilt from no (storage, offset, "
		    "size, stride)",
		    w->name);
	t = tfs_tensor_list_add(w->l, w->name);
	if (!t)
		return -ENOMEM;
	t->big_endian = w->big_endian;
	rc = storage_of(w, args->items[0], t, &key, &numel, &es);
	if (rc)
		return rc;
	if (get_dims(args->items[2], t->shape.dim, &t->shape.ndim) ||
	    get_dims(args->items[3], st, &nst) || nst != t->shape.ndim)
		return tfs_invalid(
		    w->err, w->errlen,
		    "tensor '%s' has no size and stride of as many "
		    "dimensions",
		    w->name);
	rc = strides(w, t, st, &span);
	return rc ? rc : place(w, t, key, numel, es, soff, span);
}

/* A call: a tensor, a parameter (the tensor it wraps), or another
 * object, whose arguments and state are walked for tensors. */
static int walk_call(struct walk *w, const struct tfs_pickle_value *fn,
		     const struct tfs_pickle_value *args,
		     const struct tfs_pickle_value *state, size_t nlen,
		     unsigned int depth)
{
	int rc = 0;

	if (depth > TFS_TORCH_MAX_DEPTH)
		return tfs_invalid(w->err, w->errlen,
				   "'%s' is nested more than %d deep", w->name,
				   TFS_TORCH_MAX_DEPTH);
	if (is_global(fn, "torch._utils._rebuild_tensor_v2") ||
	    is_global(fn, "torch._utils._rebuild_tensor"))
		return rebuild_tensor(w, args);
	if ((is_global(fn, "torch._utils._rebuild_parameter") ||
	     is_global(fn, "torch._utils._rebuild_parameter_with_state")) &&
	    args->n >= 1)
		return walk(w, args->items[0], nlen, depth + 1);
	/* _rebuild_from_type_v2(func, type, args, state): func(*args) */
	if (is_global(fn, "torch._tensor._rebuild_from_type_v2") &&
	    args->n >= 3 && args->items[2]->type == TFS_PICKLE_TUPLE)
		return walk_call(w, args->items[0], args->items[2], NULL, nlen,
				 depth + 1);
	if (fn->type == TFS_PICKLE_GLOBAL && !strncmp(fn->s, "torch.", 6) &&
	    strstr(fn->s, "_rebuild"))
		return tfs_invalid(
		    w->err, w->errlen,
		    "'%s' is saved by %s, which tensorfs does not "
		    "read (quantized, sparse or on a device other "
		    "than the CPU?)",
		    w->name, fn->s);
	for (size_t i = 0; !rc && i < args->n; i++) {
		int n = snprintf(w->name + nlen, MAX_NAME - nlen, "%s%zu",
				 nlen ? "." : "", i);

		rc = (size_t)n >= MAX_NAME - nlen
			 ? tfs_invalid(w->err, w->errlen,
				       "a name is longer than %d", MAX_NAME)
			 : walk(w, args->items[i], nlen + (size_t)n, depth + 1);
		w->name[nlen] = '\0';
	}
	return rc || !state ? rc : walk(w, state, nlen, depth + 1);
}

/* One child named key (its text) under the current name. */
static int walk_child(struct walk *w, const struct tfs_pickle_value *key,
		      const struct tfs_pickle_value *v, size_t nlen,
		      unsigned int depth)
{
	int n, rc;

	switch (key->type) {
	case TFS_PICKLE_STR:
		n = snprintf(w->name + nlen, MAX_NAME - nlen, "%s%s",
			     nlen ? "." : "", key->s);
		break;
	case TFS_PICKLE_INT:
		n = snprintf(w->name + nlen, MAX_NAME - nlen, "%s%lld",
			     nlen ? "." : "", (long long)key->i);
		break;
	default:
		n = snprintf(w->name + nlen, MAX_NAME - nlen, "%s?",
			     nlen ? "." : "");
		break;
	}
	if ((size_t)n >= MAX_NAME - nlen)
		rc = tfs_invalid(w->err, w->errlen, "a name is longer than %d",
				 MAX_NAME);
	else
		rc = walk(w, v, nlen + (size_t)n, depth + 1);
	w->name[nlen] = '\0';
	return rc;
}

static int walk(struct walk *w, const struct tfs_pickle_value *v, size_t nlen,
		unsigned int depth)
{
	int rc = 0;

	if (depth > TFS_TORCH_MAX_DEPTH)
		return tfs_invalid(w->err, w->errlen,
				   "'%s' is nested more than %d deep", w->name,
				   TFS_TORCH_MAX_DEPTH);
	if (!w->budget--)
		return tfs_invalid(
		    w->err, w->errlen,
		    "the saved structure refers to its values too "
		    "many times over");
	switch (v->type) {
	case TFS_PICKLE_DICT:
		for (size_t i = 0; !rc && i + 1 < v->n; i += 2)
			rc = walk_child(w, v->items[i], v->items[i + 1], nlen,
					depth);
		return rc;
	case TFS_PICKLE_LIST:
	case TFS_PICKLE_TUPLE:
		for (size_t i = 0; !rc && i < v->n; i++) {
			struct tfs_pickle_value k = { .type = TFS_PICKLE_INT,
						      .i = (int64_t)i };

			rc = walk_child(w, &k, v->items[i], nlen, depth);
		}
		return rc;
	case TFS_PICKLE_CALL:
		return walk_call(w, v->items[0], v->items[1], v->items[2], nlen,
				 depth);
	default:
		return 0;
	}
}

/* ===== the archive ===== */

/* The tensors of the loaded pickle p, their storages in z under prefix
 * or in lg (or, neither given, unchecked). */
static int walk_pickle(const struct tfs_pickle *p, const struct tfs_zip *z,
		       const char *prefix, const struct legacy *lg,
		       int big_endian, struct tfs_tensor_list **out, char *err,
		       size_t errlen)
{
	struct walk *w = NULL;
	int rc;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->l = tfs_tensor_list_new(TFS_TENSOR_TORCH))) {
		rc = -ENOMEM;
		goto out;
	}
	w->z = z;
	w->lg = lg;
	w->prefix = prefix;
	w->big_endian = big_endian;
	w->budget = 4 * (uint64_t)p->nall + 1024;
	w->err = err;
	w->errlen = errlen;
	rc = walk(w, p->root, 0, 0);
	if (!rc) {
		*out = w->l;
		w->l = NULL;
	}
out:
	if (rc == -ENOMEM)
		tfs_say(err, errlen, "out of memory");
	if (w)
		tfs_tensor_list_free(w->l);
	free(w);
	return rc;
}

static int parse_pickle(const void *pkl, size_t len, const struct tfs_zip *z,
			const char *prefix, int big_endian,
			struct tfs_tensor_list **out, char *err, size_t errlen)
{
	struct tfs_pickle *p = NULL;
	int rc;

	*out = NULL;
	rc = tfs_pickle_load(pkl, len, &p, err, errlen);
	if (!rc)
		rc = walk_pickle(p, z, prefix, NULL, big_endian, out, err,
				 errlen);
	tfs_pickle_free(p);
	return rc;
}

int tfs_torch_parse_pickle(const void *pkl, size_t len, const struct tfs_zip *z,
			   const char *prefix, struct tfs_tensor_list **out,
			   char *err, size_t errlen)
{
	return parse_pickle(pkl, len, z, prefix ? prefix : "", 0, out, err,
			    errlen);
}

/* The one PREFIX/data.pkl of z into *pkl, its prefix into prefix. */
static const struct tfs_zip_entry *find_pickle(const struct tfs_zip *z,
					       char *prefix, size_t len)
{
	const struct tfs_zip_entry *found = NULL;

	for (size_t i = 0; i < z->count; i++) {
		const char *n = z->entries[i].name, *slash = strchr(n, '/');

		if (!slash || strcmp(slash, "/data.pkl"))
			continue;
		if (found || (size_t)(slash - n) + 2 > len)
			return NULL;
		found = &z->entries[i];
		snprintf(prefix, len, "%.*s/", (int)(slash - n), n);
	}
	return found;
}

/* Whether PREFIX/byteorder says "big". */
static int big_endian(tfs_zip_read_fn rd, void *ctx, const struct tfs_zip *z,
		      const char *prefix)
{
	char name[MAX_NAME + 16], b[8] = "";
	const struct tfs_zip_entry *e;

	snprintf(name, sizeof(name), "%sbyteorder", prefix);
	e = tfs_zip_find(z, name);
	if (!e || !e->stored || e->size != 3)
		return 0;
	return rd(ctx, b, 3, e->offset) == 3 && !memcmp(b, "big", 3);
}

/* ===== the legacy format ===== */

/*
 * pickle.dumps(0x1950a86a20f9469cfc6c, protocol=P), torch's magic, as
 * torch.save(..., pickle_protocol=P) writes it: PROTO P, for P >= 4 a
 * FRAME of its 13 bytes, LONG1 of 10 bytes, STOP.  The pickle reader
 * keeps no 80-bit ints, so it is matched byte by byte.
 */
#define LEGACY_MAGIC_MAX 24
#define LEGACY_VERSION	 1001
#define LEGACY_WINDOW	 (64u << 10)

/* The magic of protocol p into m: its length, 0 for no such protocol. */
static size_t legacy_magic(unsigned char p, unsigned char *m)
{
	static const unsigned char frame[9] = { 0x95, 0x0d };
	static const unsigned char value[13] = { 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
						 0x46, 0xf9, 0x20, 0x6a, 0xa8,
						 0x50, 0x19, 0x2e };
	size_t n = 0;

	if (p < 2 || p > 5)
		return 0;
	m[n++] = 0x80;
	m[n++] = p;
	if (p >= 4) {
		memcpy(m + n, frame, sizeof(frame));
		n += sizeof(frame);
	}
	memcpy(m + n, value, sizeof(value));
	return n + sizeof(value);
}

/* The length of the magic buf[0..len) starts with, whole; 0 if none. */
static size_t legacy_magic_len(const unsigned char *b, size_t len)
{
	unsigned char m[LEGACY_MAGIC_MAX];
	size_t n = len >= 2 && b[0] == 0x80 ? legacy_magic(b[1], m) : 0;

	return n && len >= n && !memcmp(b, m, n) ? n : 0;
}

int tfs_torch_is_legacy(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	unsigned char m[LEGACY_MAGIC_MAX];
	size_t n = len >= 15 && b[0] == 0x80 ? legacy_magic(b[1], m) : 0;

	return n && !memcmp(b, m, len < n ? len : n);
}

/* The pickle at *at (what it is: for errors) into *p, *at moved past
 * it; at most max bytes of it are read. */
static int read_pickle(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
		       size_t max, uint64_t *at, const char *what,
		       struct tfs_pickle **p, char *err, size_t errlen)
{
	uint64_t rest = file_size - *at;
	size_t left = rest > max ? max : (size_t)rest, win = LEGACY_WINDOW;
	size_t used = 0;
	unsigned char *b = NULL;
	int rc;

	for (;;) {
		size_t n = win < left ? win : left;
		unsigned char *nb = realloc(b, n ? n : 1);

		if (!nb) {
			rc = -ENOMEM;
			break;
		}
		b = nb;
		rc = tfs_zip_read_exact(rd, ctx, b, n, *at);
		if (rc)
			break;
		rc = tfs_pickle_load_part(b, n, p, &used, err, errlen);
		if (rc != -ENODATA || n == left)
			break;
		win = win > left / 2 ? left : win * 2;
	}
	free(b);
	if (rc == -ENODATA && rest > max) {
		tfs_invalid(err, errlen,
			    "the %s pickle is longer than the %zu bytes read",
			    what, max);
		return -E2BIG;
	}
	if (rc == -ENODATA || rc == -EINVAL) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err ? err : "");
		return tfs_invalid(err, errlen, "the %s pickle: %s", what, why);
	}
	if (!rc)
		*at += used;
	return rc;
}

/* The class of each storage, from the persistent ids of obj: sorted
 * by key into *lg (bytes and offset still 0). */
static int legacy_classes(const struct tfs_pickle *obj, struct legacy *lg)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < obj->nall; i++)
		n += obj->all[i]->type == TFS_PICKLE_PERSID;
	lg->s = calloc(n ? n : 1, sizeof(*lg->s));
	if (!lg->s)
		return -ENOMEM;
	lg->n = 0;
	for (size_t i = 0; i < obj->nall; i++) {
		const struct tfs_pickle_value *v = obj->all[i], *pid;

		if (v->type != TFS_PICKLE_PERSID)
			continue;
		pid = v->items[0];
		if (pid->type != TFS_PICKLE_TUPLE || pid->n < 3 ||
		    pid->items[1]->type != TFS_PICKLE_GLOBAL ||
		    pid->items[2]->type != TFS_PICKLE_STR)
			continue; /* walk() says what is wrong with it */
		lg->s[lg->n].key = pid->items[2]->s;
		lg->s[lg->n++].cls = pid->items[1]->s;
	}
	qsort(lg->s, lg->n, sizeof(*lg->s), by_key);
	for (size_t i = 0; i < lg->n; i++) /* one entry a key: the first */
		if (!k || strcmp(lg->s[k - 1].key, lg->s[i].key))
			lg->s[k++] = lg->s[i];
	lg->n = k;
	return 0;
}

/* The element size of the storage class cls ("torch.FloatStorage"), 0
 * if not known. */
static size_t class_size(const char *cls)
{
	return class_esize(storage_class(cls));
}

/* Where each storage of keys lies, from *at on: its element count (8
 * bytes, little-endian), then its elements. */
static int legacy_place(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
			uint64_t at, const struct tfs_pickle_value *keys,
			struct legacy *lg, char *err, size_t errlen)
{
	if (keys->type != TFS_PICKLE_LIST && keys->type != TFS_PICKLE_TUPLE)
		return tfs_invalid(err, errlen,
				   "the list of storage keys is no list");
	for (size_t i = 0; i < keys->n; i++) {
		const struct tfs_pickle_value *k = keys->items[i];
		struct legacy_storage *ls;
		unsigned char b[8];
		uint64_t numel = 0, bytes, end;
		size_t es;

		if (k->type != TFS_PICKLE_STR)
			return tfs_invalid(err, errlen,
					   "storage key %zu is no string", i);
		ls = (struct legacy_storage *)legacy_find(lg, k->s);
		if (!ls)
			return tfs_invalid(err, errlen,
					   "storage '%s' is listed, but no "
					   "tensor refers to it",
					   k->s);
		es = class_size(ls->cls);
		if (!es)
			return tfs_invalid(
			    err, errlen,
			    "storage '%s' is a %s, whose element "
			    "size tensorfs does not know, so the "
			    "storages after it cannot be found",
			    k->s, ls->cls);
		if (ls->offset)
			return tfs_invalid(
			    err, errlen, "storage '%s' is listed twice", k->s);
		if (at > file_size || file_size - at < 8 ||
		    tfs_zip_read_exact(rd, ctx, b, 8, at))
			return tfs_invalid(err, errlen,
					   "storage '%s' is truncated", k->s);
		for (unsigned int j = 8; j-- > 0;)
			numel = numel << 8 | b[j];
		if (__builtin_mul_overflow(numel, es, &bytes) ||
		    __builtin_add_overflow(at + 8, bytes, &end) ||
		    end > file_size)
			return tfs_invalid(err, errlen,
					   "storage '%s' (%llu elements) runs "
					   "past the end of the file",
					   k->s, (unsigned long long)numel);
		ls->offset = at + 8;
		ls->bytes = bytes;
		at = end;
	}
	return 0;
}

/* A legacy torch.save file: magic, version, system info, the object,
 * the storage keys, the storages. */
static int parse_legacy(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
			size_t max_pickle, struct tfs_tensor_list **out,
			char *err, size_t errlen)
{
	static const char *const what[] = { "version", "system information",
					    "saved object's", "storage keys'" };
	struct tfs_pickle *p[4] = { NULL };
	struct legacy lg = { NULL, 0 };
	unsigned char magic[LEGACY_MAGIC_MAX];
	uint64_t at = file_size < sizeof(magic) ? file_size : sizeof(magic);
	int rc = 0;

	rc = tfs_zip_read_exact(rd, ctx, magic, (size_t)at, 0);
	if (rc)
		return rc;
	at = legacy_magic_len(magic, (size_t)at);
	if (!at)
		return tfs_invalid(err, errlen,
				   "the legacy torch.save magic number is cut "
				   "short");

	for (unsigned int i = 0; !rc && i < 4; i++)
		rc = read_pickle(rd, ctx, file_size, max_pickle, &at, what[i],
				 &p[i], err, errlen);
	if (rc)
		goto out;
	if (p[0]->root->type != TFS_PICKLE_INT ||
	    p[0]->root->i != LEGACY_VERSION) {
		rc = tfs_invalid(err, errlen,
				 "a legacy torch.save file of a version "
				 "other than %d",
				 LEGACY_VERSION);
		goto out;
	}
	rc = legacy_classes(p[2], &lg);
	if (!rc)
		rc = legacy_place(rd, ctx, file_size, at, p[3]->root, &lg, err,
				  errlen);
	if (!rc)
		rc = walk_pickle(p[2], NULL, "", &lg, 0, out, err, errlen);
out:
	if (rc == -ENOMEM)
		tfs_say(err, errlen, "out of memory");
	free(lg.s);
	for (unsigned int i = 0; i < 4; i++)
		tfs_pickle_free(p[i]);
	return rc;
}

/* ===== the zip format ===== */

int tfs_torch_parse_zip(const struct tfs_zip *z, tfs_zip_read_fn rd, void *ctx,
			size_t max_pickle, struct tfs_tensor_list **out,
			char *err, size_t errlen)
{
	const struct tfs_zip_entry *e;
	char prefix[MAX_NAME];
	unsigned char *pkl = NULL;
	size_t done = 0;
	int rc;

	*out = NULL;
	if (!max_pickle)
		max_pickle = TFS_TORCH_MAX_PICKLE;
	e = find_pickle(z, prefix, sizeof(prefix));
	if (!e)
		return -ENOENT;
	if (!e->stored)
		return tfs_invalid(err, errlen,
				   "'%s' is compressed; torch.save stores it "
				   "uncompressed",
				   e->name);
	if (e->size > max_pickle) {
		tfs_invalid(err, errlen,
			    "'%s' is %llu bytes, more than the %zu read",
			    e->name, (unsigned long long)e->size, max_pickle);
		return -E2BIG;
	}
	pkl = malloc(e->size ? (size_t)e->size : 1);
	if (!pkl)
		return -ENOMEM;
	while (done < e->size) {
		ssize_t n = rd(ctx, pkl + done, (size_t)e->size - done,
			       e->offset + done);

		if (n <= 0) {
			rc = n ? (int)n
			       : tfs_invalid(err, errlen, "'%s' is truncated",
					     e->name);
			goto out;
		}
		done += (size_t)n;
	}
	rc = parse_pickle(pkl, (size_t)e->size, z, prefix,
			  big_endian(rd, ctx, z, prefix), out, err, errlen);
out:
	free(pkl);
	return rc;
}

int tfs_torch_parse_legacy(tfs_zip_read_fn rd, void *ctx, uint64_t file_size,
			   size_t max_pickle, struct tfs_tensor_list **out,
			   char *err, size_t errlen)
{
	*out = NULL;
	return parse_legacy(rd, ctx, file_size,
			    max_pickle ? max_pickle : TFS_TORCH_MAX_PICKLE, out,
			    err, errlen);
}
