/*
 * config.c: parse, validate and print the settings of config.h's table.
 *
 * inih does the INI syntax; each (section, key, value) it reports is
 * looked up in the table and parsed by the key's type.  inih's handler
 * is not told its line number, but ini_parse() returns the line of the
 * first handler that failed, so the handler keeps the first message and
 * the loader prefixes it with FILE:LINE.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

static const struct tfs_cfg_key keys[] = {
#define X(sec, nm, ty, df, mn, mx, un, dc)                                   \
	{ #sec, #nm, TFS_CFG_##ty, df, mn, mx, un, dc,                        \
	  offsetof(struct tfs_config, sec##_##nm) },
	TFS_CONFIG_KEYS
#undef X
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

const struct tfs_cfg_key *tfs_config_keys(size_t *n)
{
	*n = NKEYS;
	return keys;
}

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	{ "fp16", 2 }, { "bf16", 2 }, { "fp32", 4 }, { "fp64", 8 },
	{ "fp8_e4m3", 1 }, { "fp8_e5m2", 1 }, { "int8", 1 }, { "uint8", 1 },
	{ "int16", 2 }, { "int32", 4 }, { "int64", 8 }, { "bool", 1 },
};

#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *tfs_dtype_name(unsigned int i)
{
	return i < NDTYPES ? dtypes[i].name : "?";
}

size_t tfs_dtype_size(unsigned int i)
{
	return i < NDTYPES ? dtypes[i].size : 0;
}

int tfs_dtype_lookup(const char *name)
{
	for (unsigned int i = 0; i < NDTYPES; i++)
		if (!strcasecmp(dtypes[i].name, name))
			return (int)i;
	return -EINVAL;
}

/* a * b, or UINT64_MAX if that does not fit */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t tfs_config_bytes(const struct tfs_config *c, uint64_t v)
{
	if (v & TFS_CFG_BYTES)
		return v & ~TFS_CFG_BYTES;
	return mul_sat(v, tfs_dtype_size((unsigned)c->offload_param_dtype));
}

uint64_t tfs_config_cache_bytes(const struct tfs_config *c)
{
	return tfs_config_bytes(c, c->offload_param_max_in_cpu);
}

uint64_t tfs_config_pool_bytes(const struct tfs_config *c)
{
	return mul_sat(c->offload_param_buffer_count,
		       tfs_config_bytes(c, c->offload_param_buffer_size));
}

static uint64_t *field(struct tfs_config *c, const struct tfs_cfg_key *k)
{
	return (uint64_t *)((char *)c + k->offset);
}

static void say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* Parse v as k's type into *out; -EINVAL with a reason in err. */
static int parse_value(const struct tfs_cfg_key *k, const char *v,
		       uint64_t *out, char *err, size_t len)
{
	int has_suffix = 0, rc;

	if (k->type == TFS_CFG_BOOL) {
		if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
		    !strcasecmp(v, "on") || !strcmp(v, "1")) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(v, "false") || !strcasecmp(v, "no") ||
		    !strcasecmp(v, "off") || !strcmp(v, "0")) {
			*out = 0;
			return 0;
		}
		say(err, len, "%s.%s = '%s' is not a boolean; use true or "
			      "false", k->section, k->name, v);
		return -EINVAL;
	}
	if (k->type == TFS_CFG_DTYPE) {
		rc = tfs_dtype_lookup(v);
		if (rc < 0) {
			say(err, len, "%s.%s = '%s' is not a tensor type; use one "
				      "of fp16, bf16, fp32, fp64, fp8_e4m3, "
				      "fp8_e5m2, int8, uint8, int16, int32, "
				      "int64, bool", k->section, k->name, v);
			return -EINVAL;
		}
		*out = (uint64_t)rc;
		return 0;
	}
	rc = tfs_parse_size(v, out, &has_suffix);
	if (!rc && k->type == TFS_CFG_ELEMS && has_suffix) {
		if (*out & TFS_CFG_BYTES) {
			say(err, len, "%s.%s = '%s' is too large", k->section,
			    k->name, v);
			return -EINVAL;
		}
		*out |= TFS_CFG_BYTES;
		return 0;
	}
	if (rc || (k->type == TFS_CFG_UINT && has_suffix)) {
		say(err, len, "%s.%s = '%s' is not %s", k->section, k->name, v,
		    k->type == TFS_CFG_UINT ? "a whole number (e.g. 8 or 1e8)" :
		    k->type == TFS_CFG_ELEMS ? "a number of elements (e.g. 1e8) "
					       "or of bytes (e.g. 256MiB)"
					     : "a size (e.g. 1048576 or 1MiB)");
		return -EINVAL;
	}
	if (*out < k->min || *out > k->max) {
		say(err, len, "%s.%s = '%s' is out of range; it must be "
			      "between %llu and %llu %s", k->section, k->name,
		    v, (unsigned long long)k->min, (unsigned long long)k->max,
		    k->unit);
		return -EINVAL;
	}
	return 0;
}

void tfs_config_defaults(struct tfs_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++)
		parse_value(&keys[i], keys[i].def, field(c, &keys[i]), NULL, 0);
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins)
					   : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

/* The nearest section (section_only) or key name to s. */
static const char *nearest(const char *s, int section_only)
{
	const char *best = NULL;
	size_t bd = 4;

	for (size_t i = 0; i < NKEYS; i++) {
		const char *cand = section_only ? keys[i].section : keys[i].name;
		size_t d = distance(s, cand);

		if (d < bd) {
			bd = d;
			best = cand;
		}
	}
	return best;
}

static int section_known(const char *s)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].section, s))
			return 1;
	return 0;
}

static const struct tfs_cfg_key *find(const char *sec, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].section, sec) && !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

struct load {
	struct tfs_config *c;
	char *err;
	size_t len;
	int failed;
};

static int on_key(void *user, const char *sec, const char *name,
		  const char *value)
{
	struct load *l = user;
	const struct tfs_cfg_key *k;
	const char *near;
	char msg[512];

	if (l->failed)
		return 1;	/* keep the first error only */
	if (!strcmp(sec, "aio") && !strcmp(name, "thread_count")) {
		/* DeepSpeed's old name, which its code now ignores */
		size_t used = strlen(l->c->warnings);

		snprintf(l->c->warnings + used, sizeof(l->c->warnings) - used,
			 "[aio] thread_count is the old name of "
			 "intra_op_parallelism (DeepSpeed ignores it); "
			 "tensorfs reads it as intra_op_parallelism = %s\n",
			 value);
		name = "intra_op_parallelism";
	}
	if (!section_known(sec)) {
		near = nearest(sec, 1);
		snprintf(msg, sizeof(msg), "unknown section [%s]%s%s%s", sec,
			 near ? "; did you mean [" : "", near ? near : "",
			 near ? "]?" : "");
		goto fail;
	}
	k = find(sec, name);
	if (!k) {
		near = nearest(name, 0);
		snprintf(msg, sizeof(msg), "unknown key '%s' in [%s]%s%s%s",
			 name, sec, near ? "; did you mean '" : "",
			 near ? near : "", near ? "'?" : "");
		goto fail;
	}
	if (parse_value(k, value, field(l->c, k), msg, sizeof(msg)))
		goto fail;
	return 1;
fail:
	say(l->err, l->len, "%s", msg);
	l->failed = 1;
	return 0;
}

int tfs_config_load(struct tfs_config *c, const char *path, char *err,
		    size_t errlen)
{
	struct load l = { c, NULL, 0, 0 };
	char msg[512] = "";
	int line;

	l.err = msg;
	l.len = sizeof(msg);
	line = ini_parse(path, on_key, &l);
	if (line == -1) {
		say(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return errno ? -errno : -ENOENT;
	}
	if (line == -2) {
		say(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (line > 0) {
		if (!l.failed)
			snprintf(msg, sizeof(msg), "syntax error: expected "
				 "[section] or key = value");
		say(err, errlen, "%s:%d: %s", path, line, msg);
		return -EINVAL;
	}
	return 0;
}

int tfs_config_is_key(const char *key)
{
	const char *dot = strchr(key, '.');

	for (size_t i = 0; i < NKEYS; i++) {
		if (dot) {
			size_t sl = (size_t)(dot - key);

			if (strlen(keys[i].section) == sl &&
			    !strncmp(keys[i].section, key, sl) &&
			    !strcmp(keys[i].name, dot + 1))
				return 1;
		} else if (!strcmp(keys[i].name, key)) {
			return 1;
		}
	}
	return 0;
}

int tfs_config_set(struct tfs_config *c, const char *key, const char *value,
		   char *err, size_t errlen)
{
	const struct tfs_cfg_key *k = NULL;
	const char *dot = strchr(key, '.'), *near;
	int matches = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		int hit;

		if (dot) {
			size_t sl = (size_t)(dot - key);

			hit = strlen(keys[i].section) == sl &&
			      !strncmp(keys[i].section, key, sl) &&
			      !strcmp(keys[i].name, dot + 1);
		} else {
			hit = !strcmp(keys[i].name, key);
		}
		if (hit) {
			k = &keys[i];
			matches++;
		}
	}
	if (matches > 1) {
		say(err, errlen, "'%s' is in more than one section; write "
				 "section.%s", key, key);
		return -EINVAL;
	}
	if (!k) {
		near = nearest(dot ? dot + 1 : key, 0);
		say(err, errlen, "unknown setting '%s'%s%s%s", key,
		    near ? "; did you mean '" : "", near ? near : "",
		    near ? "'?" : "");
		return -ENOENT;
	}
	return parse_value(k, value, field(c, k), err, errlen);
}

/* Print doc as '; ' comment lines of at most 76 columns. */
static void print_doc(FILE *f, const char *doc)
{
	const char *p = doc;

	while (*p) {
		const char *end = p, *brk = NULL;

		while (*end && end - p < 74) {
			if (*end == ' ')
				brk = end;
			end++;
		}
		if (*end && brk)
			end = brk;
		fprintf(f, "; %.*s\n", (int)(end - p), p);
		p = *end == ' ' ? end + 1 : end;
	}
}

/* A size written exactly, in the largest binary unit that divides it. */
static const char *exact_size(uint64_t v, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)v,
		 u ? unit[u] : "");
	return buf;
}

/* 1000000000 as DeepSpeed writes it, 1e9; other numbers as they are. */
static const char *deepspeed_number(uint64_t v, char *buf, size_t len)
{
	uint64_t m = v;
	int e = 0;

	while (m && m % 10 == 0) {
		m /= 10;
		e++;
	}
	if (v >= 1000000 && m < 1000)
		snprintf(buf, len, "%llue%d", (unsigned long long)m, e);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

int tfs_config_validate(const struct tfs_config *c, char *err, size_t errlen)
{
	uint64_t bs = c->aio_block_size;
	uint64_t pool = tfs_config_pool_bytes(c);

	if (bs % 4096) {
		say(err, errlen, "aio.block_size = %llu is not a multiple of "
				 "4 KiB (4096); device I/O is 4 KiB aligned",
		    (unsigned long long)bs);
		return -EINVAL;
	}
	if (pool / bs < 2) {
		say(err, errlen, "the write-back pool (buffer_count x "
				 "buffer_size = %llu bytes) holds fewer than "
				 "two aio.block_size blocks of %llu; raise "
				 "buffer_size or lower block_size",
		    (unsigned long long)pool, (unsigned long long)bs);
		return -EINVAL;
	}
	return 0;
}

void tfs_config_print(const struct tfs_config *c, FILE *f)
{
	const char *sec = NULL;
	char buf[32];

	fprintf(f, "; tensorfs configuration: each key with its meaning, unit and\n"
		   "; default.  Pass it to tensorfs with -c FILE.ini.\n");
	for (size_t i = 0; i < NKEYS; i++) {
		const struct tfs_cfg_key *k = &keys[i];
		uint64_t v = *(const uint64_t *)((const char *)c + k->offset);

		if (!sec || strcmp(sec, k->section)) {
			sec = k->section;
			fprintf(f, "\n[%s]\n", sec);
		}
		fputc('\n', f);
		print_doc(f, k->doc);
		fprintf(f, "; unit: %s; default: %s\n", k->unit, k->def);
		if (k->type == TFS_CFG_BOOL)
			fprintf(f, "%s = %s\n", k->name, v ? "true" : "false");
		else if (k->type == TFS_CFG_DTYPE)
			fprintf(f, "%s = %s\n", k->name,
				tfs_dtype_name((unsigned)v));
		else if (k->type == TFS_CFG_ELEMS && v & TFS_CFG_BYTES)
			fprintf(f, "%s = %s\n", k->name,
				exact_size(v & ~TFS_CFG_BYTES, buf, sizeof(buf)));
		else if (k->type == TFS_CFG_ELEMS)
			fprintf(f, "%s = %s\n", k->name,
				deepspeed_number(v, buf, sizeof(buf)));
		else if (k->type == TFS_CFG_SIZE)
			fprintf(f, "%s = %s\n", k->name,
				exact_size(v, buf, sizeof(buf)));
		else
			fprintf(f, "%s = %llu\n", k->name, (unsigned long long)v);
	}
}
