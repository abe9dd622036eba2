/*
 * units.c: sizes as people write them, parsed and printed.
 *
 * Parsing is exact and never touches floating point: "2.5e9" and "1.5G"
 * are whole numbers of bytes and must come out as such, while a double
 * would round large values and "1.5e0" would quietly become 1.
 *
 * The grammar (spaces: any isspace() character):
 *
 *	size     := spaces number spaces [suffix] spaces
 *	number   := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]
 *	suffix   := 'B' | 'K' 'M' 'G' 'T' 'P' [ 'iB' | 'B' ]   (any case)
 *
 * The number is read as a digit string D with a decimal exponent X, the
 * value being D * 10^X: leading zeros are dropped, trailing zeros move
 * into X, so D never ends in 0.  A suffix adds 3k to X (powers of 1000)
 * or a factor 2^B (powers of 1024).  Then:
 *
 *   - X >= 0: the value is D * 10^X * 2^B, computed with overflow checks;
 *   - X < 0, n = -X: D * 2^B / (2^n * 5^n).  D does not end in 0, so it
 *     is not divisible by both 2 and 5; the value is whole exactly when
 *     n <= B and 5^n divides D, and is then (D / 5^n) * 2^(B - n).
 *     Since B <= 50, at most 50 divisions of D by 5 are needed, done
 *     digit by digit so D may be longer than 64 bits.
 *
 * D is kept in a buffer of TFS_UNITS_MAX_DIGITS digits: a whole value below
 * 2^64 has D < 2^64 * 5^50, fewer than 56 digits, so a longer D is
 * -ERANGE (or -EINVAL when it cannot be whole at all).
 *
 * Counts print in DeepSpeed's notation when that is exact and short
 * ("1e9", "8.75e9"), so what tensorfs prints reads back the same.
 *
 * Formatting picks the largest binary unit not above the value, from 10 KiB
 * on (below that, bytes are short enough to print exactly), and prints a
 * whole count of units as such ("512 MiB") and anything else rounded to one
 * decimal ("1.5 GiB", "1.0 GiB" for a hair under 1 GiB).
 */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#define TFS_UNITS_MAX_DIGITS 64
/* Exponents beyond this overflow or underflow any D we accept anyway;
 * saturating keeps the arithmetic on X safe. */
#define TFS_UNITS_MAX_EXP 1000000

struct suffix {
	const char *name; /* lower case */
	unsigned shift;	  /* times 2^shift */
	unsigned dec;	  /* times 10^dec */
};

static const struct suffix suffixes[] = {
	{ "b", 0, 0 },	  { "k", 10, 0 },   { "kib", 10, 0 }, { "kb", 0, 3 },
	{ "m", 20, 0 },	  { "mib", 20, 0 }, { "mb", 0, 6 },   { "g", 30, 0 },
	{ "gib", 30, 0 }, { "gb", 0, 9 },   { "t", 40, 0 },   { "tib", 40, 0 },
	{ "tb", 0, 12 },  { "p", 50, 0 },   { "pib", 50, 0 }, { "pb", 0, 15 },
};

struct decimal {
	uint8_t d[TFS_UNITS_MAX_DIGITS]; /* D, most significant first */
	size_t n;
	int too_long;  /* D had more digits than d[] holds */
	int64_t exp;   /* X */
	int64_t zeros; /* zeros seen after D's last non-zero digit */
};

static const char *skip_spaces(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* Append one mantissa digit to D. */
static void push_digit(struct decimal *v, int c)
{
	if (c == 0) {
		/* Leading zeros are nothing; others wait to see whether a
		 * non-zero digit follows. */
		if (v->n || v->too_long)
			v->zeros++;
		return;
	}
	if (v->too_long ||
	    (uint64_t)v->zeros + 1 > TFS_UNITS_MAX_DIGITS - v->n) {
		v->too_long = 1;
		/* The digits are lost but their weight still counts. */
		v->exp += v->zeros + 1;
		v->zeros = 0;
		return;
	}
	while (v->zeros) {
		v->d[v->n++] = 0;
		v->zeros--;
	}
	v->d[v->n++] = (uint8_t)c;
}

/* Divide D by 5 in place; returns the remainder. */
static unsigned div5(struct decimal *v)
{
	unsigned rem = 0, cur;
	size_t i, k = 0;

	for (i = 0; i < v->n; i++) {
		cur = rem * 10 + v->d[i];
		rem = cur % 5;
		if (k || cur / 5)
			v->d[k++] = (uint8_t)(cur / 5);
	}
	v->n = k;
	return rem;
}

/* D as an integer: 0 or -ERANGE. */
static int to_u64(const struct decimal *v, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < v->n; i++) {
		if (x > (UINT64_MAX - v->d[i]) / 10)
			return -ERANGE;
		x = x * 10 + v->d[i];
	}
	*out = x;
	return 0;
}

/* Read the number at *pp into v; 0 or -EINVAL. */
static int parse_number(const char **pp, struct decimal *v)
{
	const char *p = *pp;
	int64_t frac = 0, e = 0;
	int neg = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		push_digit(v, *p - '0');
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			push_digit(v, *p - '0');
			frac++;
		}
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++)
			if (e < TFS_UNITS_MAX_EXP)
				e = e * 10 + (*p - '0');
	}
	/* Trailing zeros of D (pending in v->zeros) move into X. */
	v->exp += v->zeros - frac + (neg ? -e : e);
	v->zeros = 0;
	*pp = p;
	return 0;
}

/* Read an optional suffix at *pp; 0 or -EINVAL (unknown unit). */
static int parse_suffix(const char **pp, const struct suffix **out)
{
	const char *p = *pp;
	char name[4];
	size_t n = 0, i;

	*out = NULL;
	while (isalpha((unsigned char)*p)) {
		if (n == sizeof(name) - 1)
			return -EINVAL;
		name[n++] = (char)tolower((unsigned char)*p++);
	}
	if (!n)
		return 0;
	name[n] = '\0';
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (!strcmp(name, suffixes[i].name)) {
			*out = &suffixes[i];
			*pp = p;
			return 0;
		}
	}
	return -EINVAL;
}

/* D * 10^X * 2^shift, if whole and below 2^64. */
static int evaluate(struct decimal *v, unsigned shift, uint64_t *out)
{
	uint64_t x;
	int64_t n;
	int rc;

	if (!v->n && !v->too_long) {
		*out = 0;
		return 0;
	}
	if (v->exp >= 0) {
		if (v->too_long)
			return -ERANGE;
		rc = to_u64(v, &x);
		if (rc)
			return rc;
		for (n = v->exp; n > 0; n--) {
			if (x > UINT64_MAX / 10)
				return -ERANGE;
			x *= 10;
		}
	} else {
		n = -v->exp;
		if (n > (int64_t)shift)
			return -EINVAL; /* see the top of the file */
		if (v->too_long)
			return -ERANGE;
		shift -= (unsigned)n;
		for (; n > 0; n--)
			if (div5(v))
				return -EINVAL;
		rc = to_u64(v, &x);
		if (rc)
			return rc;
	}
	if (shift && x > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = x << shift;
	return 0;
}

int tfs_parse_size(const char *s, uint64_t *out, int *has_suffix)
{
	struct decimal v = { .n = 0 };
	const struct suffix *suf;
	const char *p = skip_spaces(s);
	uint64_t x;
	int rc;

	rc = parse_number(&p, &v);
	if (rc)
		goto out;
	p = skip_spaces(p);
	rc = parse_suffix(&p, &suf);
	if (rc)
		goto out;
	p = skip_spaces(p);
	if (*p) {
		rc = -EINVAL;
		goto out;
	}
	if (suf)
		v.exp += suf->dec;
	rc = evaluate(&v, suf ? suf->shift : 0, &x);
	if (rc)
		goto out;
	*out = x;
	if (has_suffix)
		*has_suffix = suf != NULL;
out:
	return rc;
}

char *tfs_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
	};
	uint64_t whole, rem, tenths;
	unsigned i = 0, sh;

	if (!len)
		goto out;
	if (bytes < 10 * 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		goto out;
	}
	while (i < 6 && bytes >> (10 * (i + 1)))
		i++;
	sh = 10 * i;
	whole = bytes >> sh;
	rem = bytes & ((UINT64_C(1) << sh) - 1);
	if (!rem) {
		snprintf(buf, len, "%" PRIu64 " %s", whole, units[i]);
		goto out;
	}
	/* rem < 2^60, so rem * 10 + 2^59 cannot overflow. */
	tenths = (rem * 10 + (UINT64_C(1) << (sh - 1))) >> sh;
	if (tenths == 10) {
		whole++;
		tenths = 0;
		if (whole == 1024 && i < 6) {
			whole = 1;
			i++;
		}
	}
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", whole, tenths,
		 units[i]);
out:
	return buf;
}

char *tfs_format_count(uint64_t v, char *buf, size_t len)
{
	uint64_t m = v;
	char d[21];
	int e = 0, n;

	while (m && m % 10 == 0) {
		m /= 10;
		e++;
	}
	if (v < 1000000 || m >= 1000) {
		snprintf(buf, len, "%" PRIu64, v);
		return buf;
	}
	n = snprintf(d, sizeof(d), "%" PRIu64, m);
	if (n == 1)
		snprintf(buf, len, "%se%d", d, e);
	else
		snprintf(buf, len, "%c.%se%d", d[0], d + 1, e + n - 1);
	return buf;
}

size_t tfs_edit_distance(const char *a, const char *b)
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

void tfs_say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int tfs_say_rc(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int tfs_invalid(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}
