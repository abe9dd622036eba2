/*
 * units.h: sizes as people write them, parsed and printed.
 */
#ifndef TFS_UNITS_H
#define TFS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse a byte size: a decimal integer or DeepSpeed notation ("1e8",
 * "2.5e9", must be a whole number), optionally followed by a suffix:
 * K, M, G, T, P (powers of 1024, as in dd and truncate), KiB, MiB, GiB,
 * TiB, PiB (the same), or KB, MB, GB, TB, PB (powers of 1000).  Suffixes
 * are case-insensitive; "B" alone means bytes; spaces between number and
 * suffix are allowed.  Returns 0, -EINVAL (not a size) or -ERANGE (does
 * not fit in 64 bits).  *has_suffix (may be NULL) tells whether a unit
 * suffix was given, so a caller can read a bare number as elements.
 * Leading and trailing spaces are ignored; on failure *out and
 * *has_suffix are left alone.
 */
int tfs_parse_size(const char *s, uint64_t *out, int *has_suffix);

/* Format bytes as "1.5 GiB", "512 MiB", "4096 B" into buf; returns buf.
 * Below 10 KiB in bytes, otherwise in the largest binary unit, whole or
 * rounded to one decimal.  Truncates to len; 16 bytes always suffice. */
char *tfs_format_size(uint64_t bytes, char *buf, size_t len);

/* Format a count as DeepSpeed writes it: 1000000000 as "1e9", 8750000000
 * as "8.75e9"; below a million, or with more than three significant
 * digits, as the plain number.  Returns buf; 32 bytes always suffice. */
char *tfs_format_count(uint64_t v, char *buf, size_t len);

/* Levenshtein distance between a and b, for "did you mean" (99 for
 * strings of 63 characters or more). */
size_t tfs_edit_distance(const char *a, const char *b);

/* printf into err (len bytes), for the messages lib/ hands back to
 * people; err may be NULL or len 0. */
void tfs_say(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tfs_say(), then return rc: for a failure and its -errno at once. */
int tfs_say_rc(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* tfs_say(), then return -EINVAL: for parsers, which fail with it. */
int tfs_invalid(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
