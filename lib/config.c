/*
 * config.c: parse, validate and print the settings of config.h's table.
 *
 * inih does the INI syntax; each (section, key, value) it reports is
 * looked up in the table and parsed by the key's type.  inih does not
 * tell the handler its line (Debian builds it without
 * INI_HANDLER_LINENO), so the loader feeds inih through
 * ini_parse_stream() with a reader that counts the lines it hands out
 * (from the file, or from a buffer through fmemopen(), so that both
 * take the same path and a buffer behaves exactly as a file of its bytes):
 * when the handler runs, the count is the line of the key.  The handler
 * keeps the first error only and remembers the line of every key it set,
 * so that once the whole file is read, a contradiction between two keys
 * (tfs_config_validate's checks) is reported at the line of the later.
 *
 * Values are parsed by type:
 *   BOOL   true/false, yes/no, on/off, 1/0, any case
 *   UINT   tfs_parse_size() without a suffix: 8, 1e8, 1.5e9
 *   SIZE   tfs_parse_size(): 4096, 1MiB, 64K, 1e6
 *   ELEMS  UINT in elements, or SIZE (a suffix) in bytes: TFS_CFG_BYTES
 *   DTYPE  a name of dtypes[] below
 *   ENUM   a word of the key's unit, "none|cpu|nvme"; the index is stored
 *   STR    the text as inih hands it over (trimmed), < TFS_CFG_STR_MAX
 *   REAL   a finite decimal number, strtod() syntax
 * and then checked against the key's bounds.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "units.h"

static const struct tfs_cfg_key keys[] = {
#define X(sec, nm, ty, df, mn, mx, un, us, dc)                                 \
	{                                                                      \
		#sec,	      #nm,                                             \
		TFS_CFG_##ty, df,                                              \
		mn,	      mx,                                              \
		un,	      TFS_CFG_##us,                                    \
		dc,	      offsetof(struct tfs_config, sec##_##nm)          \
	},
	TFS_CONFIG_KEYS
#undef X
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

_Static_assert(NKEYS == TFS_CFG_NKEYS, "config.h's key count is the table's");

const struct tfs_cfg_key *tfs_config_keys(size_t *n)
{
	*n = NKEYS;
	return keys;
}

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	{ "fp16", 2 },	   { "bf16", 2 },     { "fp32", 4 },  { "fp64", 8 },
	{ "fp8_e4m3", 1 }, { "fp8_e5m2", 1 }, { "int8", 1 },  { "uint8", 1 },
	{ "int16", 2 },	   { "int32", 4 },    { "int64", 8 }, { "bool", 1 },
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

uint64_t tfs_config_elems(const struct tfs_config *c, uint64_t v)
{
	size_t es = tfs_dtype_size((unsigned)c->offload_param_dtype);

	if (!(v & TFS_CFG_BYTES))
		return v;
	return es ? (v & ~TFS_CFG_BYTES) / es : 0;
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

static void *field(struct tfs_config *c, const struct tfs_cfg_key *k)
{
	return (char *)c + k->offset;
}

static const void *cfield(const struct tfs_config *c,
			  const struct tfs_cfg_key *k)
{
	return (const char *)c + k->offset;
}

/* The numeric value of a key that is neither STR nor REAL. */
static uint64_t uval(const struct tfs_config *c, const struct tfs_cfg_key *k)
{
	uint64_t v;

	memcpy(&v, cfield(c, k), sizeof(v));
	return v;
}

/* ===== enumerations ===== */

/* The index of word in the '|'-separated list, or -1. */
static int enum_lookup(const char *list, const char *word)
{
	size_t wl = strlen(word);
	int i = 0;

	for (const char *p = list;; i++) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == wl && !strncasecmp(p, word, n))
			return i;
		if (!bar)
			return -1;
		p = bar + 1;
	}
}

/* Word i of the '|'-separated list into buf ("?" if there is none). */
static char *enum_name(const char *list, uint64_t i, char *buf, size_t len)
{
	const char *p = list;

	for (uint64_t j = 0; j < i && p; j++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	if (!p) {
		snprintf(buf, len, "?");
		return buf;
	}
	snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
	return buf;
}

/* "none, cpu or nvme" for a message */
static char *enum_choices(const char *list, char *buf, size_t len)
{
	size_t n = 0, words = 1;

	for (const char *p = list; *p; p++)
		words += *p == '|';
	buf[0] = '\0';
	for (size_t i = 0; i < words && n < len; i++) {
		char w[32];

		enum_name(list, i, w, sizeof(w));
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      i == 0	       ? ""
				      : i + 1 == words ? " or "
						       : ", ",
				      w);
	}
	return buf;
}

/* ===== parsing one value ===== */

static int parse_bool(const char *v, uint64_t *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_real(const char *v, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (end == v || errno || !isfinite(d))
		return -EINVAL;
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end)
		return -EINVAL;
	*out = d;
	return 0;
}

/* Parse v as k's type into dst (k's field); -EINVAL with a reason in err.
 * dst is left alone on failure. */
static int parse_value(const struct tfs_cfg_key *k, const char *v, void *dst,
		       char *err, size_t len)
{
	char choices[128];
	int has_suffix = 0, rc;
	uint64_t u;
	double d;

	switch (k->type) {
	case TFS_CFG_BOOL:
		if (parse_bool(v, &u)) {
			tfs_say(err, len,
				"%s.%s = '%s' is not a boolean; use true "
				"or false",
				k->section, k->name, v);
			return -EINVAL;
		}
		memcpy(dst, &u, sizeof(u));
		return 0;
	case TFS_CFG_DTYPE:
		rc = tfs_dtype_lookup(v);
		if (rc < 0) {
			tfs_say(err, len,
				"%s.%s = '%s' is not a tensor type; use one "
				"of fp16, bf16, fp32, fp64, fp8_e4m3, "
				"fp8_e5m2, int8, uint8, int16, int32, "
				"int64, bool",
				k->section, k->name, v);
			return -EINVAL;
		}
		u = (uint64_t)rc;
		memcpy(dst, &u, sizeof(u));
		return 0;
	case TFS_CFG_ENUM:
		rc = enum_lookup(k->unit, v);
		if (rc < 0) {
			tfs_say(
			    err, len,
			    "%s.%s = '%s' is not one of its values; use "
			    "%s",
			    k->section, k->name, v,
			    enum_choices(k->unit, choices, sizeof(choices)));
			return -EINVAL;
		}
		u = (uint64_t)rc;
		memcpy(dst, &u, sizeof(u));
		return 0;
	case TFS_CFG_STR:
		if (strlen(v) >= TFS_CFG_STR_MAX) {
			tfs_say(err, len,
				"%s.%s is longer than %d characters; use a "
				"shorter path",
				k->section, k->name, TFS_CFG_STR_MAX - 1);
			return -EINVAL;
		}
		strcpy(dst, v);
		return 0;
	case TFS_CFG_REAL:
		if (parse_real(v, &d)) {
			tfs_say(err, len,
				"%s.%s = '%s' is not a number (e.g. 0.5)",
				k->section, k->name, v);
			return -EINVAL;
		}
		if (d < (double)k->min || d > (double)k->max) {
			tfs_say(err, len,
				"%s.%s = '%s' is out of range; it must be "
				"between %llu and %llu",
				k->section, k->name, v,
				(unsigned long long)k->min,
				(unsigned long long)k->max);
			return -EINVAL;
		}
		memcpy(dst, &d, sizeof(d));
		return 0;
	case TFS_CFG_UINT:
	case TFS_CFG_SIZE:
	case TFS_CFG_ELEMS:
		break;
	}
	rc = tfs_parse_size(v, &u, &has_suffix);
	if (rc == -ERANGE) {
		tfs_say(err, len,
			"%s.%s = '%s' is too large; it must be at most "
			"%llu %s",
			k->section, k->name, v, (unsigned long long)k->max,
			k->unit);
		return -EINVAL;
	}
	if (!rc && k->type == TFS_CFG_ELEMS && has_suffix) {
		if (u & TFS_CFG_BYTES) {
			tfs_say(err, len, "%s.%s = '%s' is too large",
				k->section, k->name, v);
			return -EINVAL;
		}
		u |= TFS_CFG_BYTES;
		memcpy(dst, &u, sizeof(u));
		return 0;
	}
	if (rc || (k->type == TFS_CFG_UINT && has_suffix)) {
		tfs_say(
		    err, len, "%s.%s = '%s' is not %s", k->section, k->name, v,
		    k->type == TFS_CFG_UINT ? "a whole number (e.g. 8 or 1e8)"
		    : k->type == TFS_CFG_ELEMS
			? "a number of elements (e.g. 1e8) "
			  "or of bytes (e.g. 256MiB)"
			: "a size (e.g. 1048576 or 1MiB)");
		return -EINVAL;
	}
	if (u < k->min || u > k->max) {
		tfs_say(err, len,
			"%s.%s = '%s' is out of range; it must be "
			"between %llu and %llu %s",
			k->section, k->name, v, (unsigned long long)k->min,
			(unsigned long long)k->max, k->unit);
		return -EINVAL;
	}
	memcpy(dst, &u, sizeof(u));
	return 0;
}

void tfs_config_defaults(struct tfs_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++)
		parse_value(&keys[i], keys[i].def, field(c, &keys[i]), NULL, 0);
}

/* ===== names ===== */

/* The nearest section name to s, or NULL if none is close. */
static const char *nearest_section(const char *s)
{
	const char *best = NULL;
	size_t bd = 4;

	for (size_t i = 0; i < NKEYS; i++) {
		size_t d = tfs_edit_distance(s, keys[i].section);

		if (d < bd) {
			bd = d;
			best = keys[i].section;
		}
	}
	return best;
}

/* The key nearest to name: in section sec if one is close (sec may be
 * NULL), else in any section.  NULL if none is close. */
static const struct tfs_cfg_key *nearest_key(const char *sec, const char *name)
{
	const struct tfs_cfg_key *best = NULL;
	size_t bd = 4;

	for (int pass = sec ? 0 : 1; pass < 2 && !best; pass++) {
		for (size_t i = 0; i < NKEYS; i++) {
			size_t d;

			if (pass == 0 && (!sec || strcmp(keys[i].section, sec)))
				continue;
			d = tfs_edit_distance(name, keys[i].name);
			if (d < bd) {
				bd = d;
				best = &keys[i];
			}
		}
	}
	return best;
}

/* "; did you mean 'x'?" or "; did you mean 'x' in [s]?" into buf */
static const char *suggest(const char *sec, const char *name, char *buf,
			   size_t len)
{
	const struct tfs_cfg_key *k = nearest_key(sec, name);

	buf[0] = '\0';
	if (k && (!sec || !strcmp(k->section, sec)))
		snprintf(buf, len, "; did you mean '%s'?", k->name);
	else if (k)
		snprintf(buf, len, "; did you mean '%s' in [%s]?", k->name,
			 k->section);
	return buf;
}

static int section_known(const char *s)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].section, s))
			return 1;
	return 0;
}

const struct tfs_cfg_key *tfs_config_key(const char *sec, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].section, sec) &&
		    !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* A section other than sec that has a key called name, or NULL. */
static const char *other_section(const char *sec, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].section, sec) && !strcmp(keys[i].name, name))
			return keys[i].section;
	return NULL;
}

/* ===== contradictions ===== */

/*
 * The checks of tfs_config_validate().  On failure *a and *b (*b may be
 * NULL) get the keys whose values contradict, so that the loader can name
 * the line of the later one.
 */
static int check(const struct tfs_config *c, char *err, size_t errlen,
		 const struct tfs_cfg_key **a, const struct tfs_cfg_key **b)
{
	const struct tfs_cfg_key *kbs = &keys[TFS_CFG_KEY_aio_block_size];
	const struct tfs_cfg_key *kbc =
	    &keys[TFS_CFG_KEY_offload_param_buffer_count];
	const struct tfs_cfg_key *kbz =
	    &keys[TFS_CFG_KEY_offload_param_buffer_size];
	const struct tfs_cfg_key *kdt = &keys[TFS_CFG_KEY_offload_param_dtype];
	char d1[2 * TFS_CFG_STR_MAX], d2[2 * TFS_CFG_STR_MAX];
	char d3[2 * TFS_CFG_STR_MAX], d4[2 * TFS_CFG_STR_MAX];
	uint64_t bs = c->aio_block_size;
	uint64_t pool = tfs_config_pool_bytes(c);

	*a = *b = NULL;
	if (bs % 4096) {
		tfs_say(err, errlen,
			"%s is not a multiple of 4 KiB (4096); "
			"device I/O is 4 KiB aligned, so use a "
			"multiple such as 1MiB",
			tfs_config_describe(c, kbs, d1, sizeof(d1)));
		*a = kbs;
		return -EINVAL;
	}
	if (bs && pool / bs < 2) {
		/* buffer_size in elements counts them in dtype's size */
		d4[0] = '\0';
		if (!(c->offload_param_buffer_size & TFS_CFG_BYTES))
			snprintf(d4, sizeof(d4), ", %.*s", (int)sizeof(d4) - 3,
				 tfs_config_describe(c, kdt, d3, sizeof(d3)));
		tfs_say(err, errlen,
			"the write-back pool, buffer_count x "
			"buffer_size = %llu bytes, holds fewer than "
			"two blocks of aio.block_size (%s, %s%s, %s); "
			"raise buffer_size or lower block_size",
			(unsigned long long)pool,
			tfs_config_describe(c, kbc, d1, sizeof(d1)),
			tfs_config_describe(c, kbz, d2, sizeof(d2)), d4,
			tfs_config_describe(c, kbs, d3, sizeof(d3)));
		*a = kbz;
		*b = kbs;
		return -EINVAL;
	}
	return 0;
}

int tfs_config_validate(const struct tfs_config *c, char *err, size_t errlen)
{
	const struct tfs_cfg_key *a, *b;

	return check(c, err, errlen, &a, &b);
}

/* ===== loading a file ===== */

struct load {
	struct tfs_config *c;
	const char *path;
	FILE *f;
	int line;	   /* of the text last handed to inih */
	int at_line_start; /* the next text read starts a new line */
	int failed;
	int err_line;
	char msg[512];
	int key_line[NKEYS]; /* where the file set each key, or 0 */
};

/* inih's reader: a line at a time, counting lines.  inih (INI_MAX_LINE
 * 200 in Debian) would take a longer line as two, the value cut short
 * and the rest a line of its own, so such a line is an error here; so is
 * a NUL byte (not a text file: /dev/zero would never end) and a read
 * error.  After the first error it ends the file, which load_stream()
 * then reports. */
static char *read_line(char *str, int num, void *stream)
{
	struct load *l = stream;
	int n = 0, ch = EOF;

	if (l->failed || num < 2)
		return NULL;
	while (n < num - 1 && (ch = getc(l->f)) != EOF) {
		if (ch == '\0')
			break;
		str[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	str[n] = '\0';
	if (l->at_line_start)
		l->line++;
	l->at_line_start = 1;
	if (ch == '\0') {
		snprintf(l->msg, sizeof(l->msg),
			 "a NUL byte: not a text "
			 "file; give an INI file");
		goto fail;
	}
	if (ch == EOF && ferror(l->f)) {
		snprintf(l->msg, sizeof(l->msg),
			 "cannot read: %s; give an "
			 "INI file",
			 strerror(errno ? errno : EIO));
		goto fail;
	}
	if (n == 0)
		return NULL; /* end of file */
	if (ch == '\n' || ch == EOF)
		return str;
	ch = getc(l->f);
	if (ch == '\n' || ch == EOF)
		return str; /* it just fits */
	ungetc(ch, l->f);
	l->at_line_start = 0;
	snprintf(l->msg, sizeof(l->msg),
		 "line longer than %d characters; "
		 "shorten it (for a long nvme_path, a symbolic link)",
		 num - 1);
fail:
	l->failed = 1;
	l->err_line = l->line;
	return NULL;
}

static void warn(struct tfs_config *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct tfs_config *c, const char *fmt, ...)
{
	size_t used = strlen(c->warnings);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->warnings + used, sizeof(c->warnings) - used, fmt, ap);
	va_end(ap);
}

static int on_key(void *user, const char *sec, const char *name,
		  const char *value)
{
	struct load *l = user;
	const struct tfs_cfg_key *k;
	const char *other;
	char near[128];

	if (l->failed)
		return 1; /* keep the first error only */
	if (!strcmp(sec, "aio") && !strcmp(name, "thread_count")) {
		/* DeepSpeed's old name, which its code now ignores */
		warn(l->c,
		     "%s:%d: [aio] thread_count is the old name of "
		     "intra_op_parallelism (DeepSpeed ignores it); tensorfs "
		     "reads it as intra_op_parallelism = %s\n",
		     l->path, l->line, value);
		l->c->flags |= TFS_CFG_F_THREAD_COUNT;
		name = "intra_op_parallelism";
	}
	if (!section_known(sec)) {
		const char *ns = nearest_section(sec);

		snprintf(l->msg, sizeof(l->msg), "unknown section [%s]%s%s%s",
			 sec, ns ? "; did you mean [" : "", ns ? ns : "",
			 ns ? "]?" : "");
		goto fail;
	}
	k = tfs_config_key(sec, name);
	if (!k) {
		other = other_section(sec, name);
		if (other)
			snprintf(l->msg, sizeof(l->msg),
				 "unknown key '%s' in "
				 "[%s]; it belongs in [%s]",
				 name, sec, other);
		else
			snprintf(l->msg, sizeof(l->msg),
				 "unknown key '%s' in "
				 "[%s]%s",
				 name, sec,
				 suggest(sec, name, near, sizeof(near)));
		goto fail;
	}
	if (parse_value(k, value, field(l->c, k), l->msg, sizeof(l->msg)))
		goto fail;
	l->key_line[k - keys] = l->line;
	l->c->from_line[k - keys] = (uint32_t)l->line;
	return 1;
fail:
	l->failed = 1;
	l->err_line = l->line;
	return 0;
}

/* Read the INI text in f over c; name is what messages call it.  The
 * one code path of tfs_config_load() and tfs_config_load_buffer(). */
static int load_stream(struct tfs_config *c, const char *name, FILE *f,
		       char *err, size_t errlen)
{
	static struct load zero;
	struct load *l = malloc(sizeof(*l));
	const struct tfs_cfg_key *a, *b;
	int line, rc = 0, at;

	if (!l) {
		tfs_say(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	*l = zero;
	l->c = c;
	l->path = name;
	snprintf(c->from_file, sizeof(c->from_file), "%s", name);
	l->at_line_start = 1;
	l->f = f;
	line = ini_parse_stream(read_line, l, on_key, l);
	if (line == -2) {
		tfs_say(err, errlen, "%s: out of memory", name);
		rc = -ENOMEM;
		goto out;
	}
	if (l->failed) {
		tfs_say(err, errlen, "%s:%d: %s", name, l->err_line, l->msg);
		rc = -EINVAL;
		goto out;
	}
	if (line > 0) {
		tfs_say(err, errlen,
			"%s:%d: syntax error: expected [section] or "
			"key = value",
			name, line);
		rc = -EINVAL;
		goto out;
	}
	/* a contradiction among what this file set is this file's error;
	 * one that involves only defaults is left to the caller's
	 * tfs_config_validate() after its overrides */
	if (check(c, l->msg, sizeof(l->msg), &a, &b)) {
		at = a ? l->key_line[a - keys] : 0;
		if (b && l->key_line[b - keys] > at)
			at = l->key_line[b - keys];
		if (at) {
			tfs_say(err, errlen, "%s:%d: %s", name, at, l->msg);
			rc = -EDOM;
		}
	}
out:
	free(l);
	return rc;
}

int tfs_config_load(struct tfs_config *c, const char *path, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	int rc;

	if (!f) {
		rc = errno ? -errno : -ENOENT;
		tfs_say(err, errlen, "%s: cannot open: %s", path,
			strerror(-rc));
		return rc;
	}
	/* fopen() opens a directory, and reading it then fails (EISDIR):
	 * without this check it would read as an empty file, the defaults */
	if (fstat(fileno(f), &st)) {
		rc = -errno;
		tfs_say(err, errlen, "%s: cannot stat: %s", path,
			strerror(-rc));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		tfs_say(err, errlen, "'%s' is a directory; give an INI file",
			path);
		goto out;
	}
	/* a pipe (-c <(...)), /dev/stdin or /dev/null reads as text; a
	 * block device is no INI file */
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
	    !S_ISCHR(st.st_mode)) {
		rc = -EINVAL;
		tfs_say(err, errlen,
			"'%s' is not a regular file; give an INI "
			"file",
			path);
		goto out;
	}
	rc = load_stream(c, path, f, err, errlen);
out:
	fclose(f);
	return rc;
}

int tfs_config_load_buffer(struct tfs_config *c, const char *name,
			   const char *buf, size_t len, char *err,
			   size_t errlen)
{
	/* read-only: fmemopen() does not write to buf in "r" mode */
	FILE *f = fmemopen((void *)buf, len, "r");
	int rc;

	if (!f) {
		tfs_say(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	rc = load_stream(c, name, f, err, errlen);
	fclose(f);
	return rc;
}

/* ===== -o overrides ===== */

/* Remember that k was set by "-o given=value" (cut, ending in "...",
 * if longer than from_set[] holds). */
static void set_by_option(struct tfs_config *c, const struct tfs_cfg_key *k,
			  const char *given, const char *value)
{
	char *to = c->from_set[k - keys];
	size_t n = sizeof(c->from_set[0]);

	if ((size_t)snprintf(to, n, "%s=%s", given, value) >= n)
		memcpy(to + n - 4, "...", 4);
	c->from_line[k - keys] = TFS_CFG_FROM_SET;
}

/* Whether key ("name" or "section.name") names k. */
static int names(const char *key, const struct tfs_cfg_key *k)
{
	const char *dot = strchr(key, '.');
	size_t sl;

	if (!dot)
		return !strcmp(k->name, key);
	sl = (size_t)(dot - key);
	return strlen(k->section) == sl && !strncmp(k->section, key, sl) &&
	       !strcmp(k->name, dot + 1);
}

int tfs_config_is_key(const char *key)
{
	if (!strcmp(key, "thread_count") || !strcmp(key, "aio.thread_count"))
		return 1;
	for (size_t i = 0; i < NKEYS; i++)
		if (names(key, &keys[i]))
			return 1;
	return 0;
}

const char *tfs_config_nearest(const char *key)
{
	const char *dot = strchr(key, '.');
	const struct tfs_cfg_key *k = nearest_key(NULL, dot ? dot + 1 : key);

	return k ? k->name : NULL;
}

int tfs_config_set(struct tfs_config *c, const char *key, const char *value,
		   char *err, size_t errlen)
{
	const struct tfs_cfg_key *k = NULL, *mount = NULL;
	const char *dot = strchr(key, '.'), *given = key;
	char near[128];
	int matches = 0, mounts = 0, rc;

	if (!strcmp(key, "thread_count") || !strcmp(key, "aio.thread_count")) {
		warn(c,
		     "-o %s: thread_count is the old name of "
		     "intra_op_parallelism (DeepSpeed ignores it); tensorfs "
		     "reads it as intra_op_parallelism = %s\n",
		     key, value);
		c->flags |= TFS_CFG_F_THREAD_COUNT;
		key = "aio.intra_op_parallelism";
		dot = strchr(key, '.');
	}
	for (size_t i = 0; i < NKEYS; i++) {
		if (!names(key, &keys[i]))
			continue;
		k = &keys[i];
		matches++;
		if (k->use == TFS_CFG_TFS) {
			mount = k;
			mounts++;
		}
	}
	if (matches > 1 && mounts == 1) {
		k = mount; /* the plain name means the mount's key */
	} else if (matches > 1) {
		tfs_say(err, errlen,
			"'%s' is in more than one section; write "
			"section.%s",
			key, key);
		return -EINVAL;
	}
	if (!k) {
		tfs_say(err, errlen, "unknown setting '%s'%s", key,
			suggest(NULL, dot ? dot + 1 : key, near, sizeof(near)));
		return -ENOENT;
	}
	rc = parse_value(k, value, field(c, k), err, errlen);
	if (!rc)
		set_by_option(c, k, given, value);
	return rc;
}

/* ===== printing ===== */

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
		/* a break after a sentence leaves a space behind */
		while (end > p && end[-1] == ' ')
			end--;
		fprintf(f, "; %.*s\n", (int)(end - p), p);
		p = end;
		while (*p == ' ')
			p++;
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
	snprintf(buf, len, "%llu%s", (unsigned long long)v, u ? unit[u] : "");
	return buf;
}

char *tfs_config_format(const struct tfs_config *c, const struct tfs_cfg_key *k,
			char *buf, size_t len)
{
	uint64_t v = 0;
	double d;

	if (k->type != TFS_CFG_STR && k->type != TFS_CFG_REAL)
		v = uval(c, k);
	switch (k->type) {
	case TFS_CFG_BOOL:
		snprintf(buf, len, "%s", v ? "true" : "false");
		break;
	case TFS_CFG_DTYPE:
		snprintf(buf, len, "%s", tfs_dtype_name((unsigned)v));
		break;
	case TFS_CFG_ENUM:
		enum_name(k->unit, v, buf, len);
		break;
	case TFS_CFG_STR:
		snprintf(buf, len, "%s", (const char *)cfield(c, k));
		break;
	case TFS_CFG_REAL:
		memcpy(&d, cfield(c, k), sizeof(d));
		snprintf(buf, len, "%.17g", d);
		/* the shortest form that reads back the same */
		for (int p = 1; p <= 17; p++) {
			char t[40];

			snprintf(t, sizeof(t), "%.*g", p, d);
			if (strtod(t, NULL) == d) {
				snprintf(buf, len, "%s", t);
				break;
			}
		}
		break;
	case TFS_CFG_ELEMS:
		if (v & TFS_CFG_BYTES)
			exact_size(v & ~TFS_CFG_BYTES, buf, len);
		else
			tfs_format_count(v, buf, len);
		break;
	case TFS_CFG_SIZE:
		exact_size(v, buf, len);
		break;
	case TFS_CFG_UINT:
		if (!strcmp(k->unit, "elements"))
			tfs_format_count(v, buf, len);
		else
			snprintf(buf, len, "%llu", (unsigned long long)v);
		break;
	}
	return buf;
}

char *tfs_config_origin(const struct tfs_config *c, const struct tfs_cfg_key *k,
			char *buf, size_t len)
{
	uint32_t line = c->from_line[k - keys];

	if (line == TFS_CFG_FROM_SET)
		snprintf(buf, len, "-o %s", c->from_set[k - keys]);
	else if (line)
		snprintf(buf, len, "%s:%u", c->from_file, line);
	else
		snprintf(buf, len, "default");
	return buf;
}

char *tfs_config_describe(const struct tfs_config *c,
			  const struct tfs_cfg_key *k, char *buf, size_t len)
{
	char v[TFS_CFG_STR_MAX], from[sizeof(c->from_file) + 16];

	tfs_config_format(c, k, v, sizeof(v));
	if (!c->from_line[k - keys])
		snprintf(buf, len, "%s.%s = %s by default", k->section, k->name,
			 v);
	else
		snprintf(buf, len, "%s.%s = %s from %s", k->section, k->name, v,
			 tfs_config_origin(c, k, from, sizeof(from)));
	return buf;
}

int tfs_config_from_set(const struct tfs_config *c, const struct tfs_cfg_key *k)
{
	return c->from_line[k - keys] == TFS_CFG_FROM_SET;
}

int tfs_config_changed(const struct tfs_config *c, const struct tfs_cfg_key *k)
{
	struct tfs_config *d = malloc(sizeof(*d));
	int changed;

	if (!d)
		return 1;
	memset(d, 0, sizeof(*d));
	parse_value(k, k->def, field(d, k), NULL, 0);
	if (k->type == TFS_CFG_STR)
		changed = strcmp(cfield(c, k), cfield(d, k)) != 0;
	else if (k->type == TFS_CFG_REAL)
		changed = memcmp(cfield(c, k), cfield(d, k), sizeof(double));
	else
		changed = uval(c, k) != uval(d, k);
	free(d);
	return changed;
}

void tfs_config_print(const struct tfs_config *c, FILE *f)
{
	const char *sec = NULL;
	char buf[TFS_CFG_STR_MAX];

	fprintf(
	    f,
	    "; tensorfs configuration: each key with its meaning, unit and\n"
	    "; default.  Pass it to tensorfs with -c FILE.ini.  Keys marked\n"
	    "; \"DeepSpeed only\" do not change the mount; they let one file\n"
	    "; describe the DeepSpeed run for tensorfs-plan.\n");
	for (size_t i = 0; i < NKEYS; i++) {
		const struct tfs_cfg_key *k = &keys[i];

		if (!sec || strcmp(sec, k->section)) {
			sec = k->section;
			fprintf(f, "\n[%s]\n", sec);
		}
		fputc('\n', f);
		print_doc(f, k->doc);
		fprintf(f, "; unit: %s; default: %s\n", k->unit,
			*k->def ? k->def : "(empty)");
		tfs_config_format(c, k, buf, sizeof(buf));
		fprintf(f, "%s =%s%s\n", k->name, *buf ? " " : "", buf);
	}
}

void tfs_config_print_changed(const struct tfs_config *c, FILE *f)
{
	const char *sec = NULL;
	char buf[TFS_CFG_STR_MAX];

	for (size_t i = 0; i < NKEYS; i++) {
		const struct tfs_cfg_key *k = &keys[i];

		if (!tfs_config_changed(c, k))
			continue;
		if (!sec || strcmp(sec, k->section)) {
			fprintf(f, "%s[%s]\n", sec ? "\n" : "", k->section);
			sec = k->section;
		}
		tfs_config_format(c, k, buf, sizeof(buf));
		fprintf(f, "%s =%s%s\n", k->name, *buf ? " " : "", buf);
	}
}
