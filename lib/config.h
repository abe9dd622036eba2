/*
 * config.h: tensorfs settings, declared once.
 *
 * TFS_CONFIG_KEYS is the one table of every key: its section, name,
 * type, default, bounds, unit and meaning.  The struct, the defaults,
 * the INI parser, validation, --print-config and the documentation's key
 * list are all generated from it, so they cannot disagree.
 *
 * X(section, name, type, default, min, max, unit, doc)
 *   type: BOOL (true/false, yes/no, on/off, 1/0), UINT (a whole number,
 *   DeepSpeed notation 1e8 allowed), SIZE (bytes: 4096, 1MiB, 64K).
 */
#ifndef TFS_CONFIG_H
#define TFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TFS_CONFIG_KEYS                                                      \
	X(mount, commit_interval_ms, UINT, "5000", 10, 3600000, "ms",          \
	  "How often metadata changes are committed to the journal.  A "      \
	  "crash loses at most this much of the work that was not "           \
	  "fsync'd; fsync() always commits at once.  Costs no memory.")       \
	X(mount, attr_timeout_ms, UINT, "1000", 0, 3600000, "ms",             \
	  "How long the kernel may cache names and attributes.  Only this "   \
	  "mount changes its files, so longer is safe; 0 asks every time.")   \
	X(mount, max_threads, UINT, "16", 1, 1024, "count",                   \
	  "FUSE worker threads, each serving one request at a time.  Each "   \
	  "costs a 1 MiB request buffer and a 1 MiB I/O buffer.")              \
	X(mount, read_ahead_kb, UINT, "4096", 0, 1048576, "KiB",              \
	  "Kernel readahead for buffered reads of this mount, set in "         \
	  "/sys/class/bdi when mounted as root (the kernel's default is 128). " \
	  "Readahead pages are kernel page cache, not tensorfs memory.  0 "    \
	  "leaves the kernel's value.")                                       \
	X(mount, bdi_max_ratio, UINT, "40", 0, 100, "percent",                 \
	  "Share of the kernel's dirty page limit that buffered writes and "   \
	  "mmap of this mount may use before writers are throttled, set in "  \
	  "/sys/class/bdi as root; FUSE mounts start at 1.  That page cache "  \
	  "is kernel memory, outside tensorfs's own bound.  0 leaves the "     \
	  "kernel's value.")

enum tfs_cfg_type { TFS_CFG_BOOL, TFS_CFG_UINT, TFS_CFG_SIZE };

struct tfs_config {
#define X(sec, name, type, def, min, max, unit, doc) uint64_t sec##_##name;
	TFS_CONFIG_KEYS
#undef X
};

/* A key of the table, for tools that list or document them. */
struct tfs_cfg_key {
	const char *section, *name;
	enum tfs_cfg_type type;
	const char *def;
	uint64_t min, max;
	const char *unit, *doc;
	size_t offset;
};

/* All keys, in table order; *n gets their number. */
const struct tfs_cfg_key *tfs_config_keys(size_t *n);

/* Set every key to its default. */
void tfs_config_defaults(struct tfs_config *c);

/*
 * Read an INI file over c.  Returns 0, or -EINVAL with err holding
 * "FILE:LINE: what is wrong; what to do" (an unknown section or key gets
 * the nearest known name suggested), or -errno if the file cannot be read.
 */
int tfs_config_load(struct tfs_config *c, const char *path, char *err,
		    size_t errlen);

/*
 * Set one key from "section.name" or a plain "name" that only one section
 * has (as -o name=value).  Returns 0, -ENOENT for an unknown key (err then
 * suggests the nearest), -EINVAL for a bad value (err says why).
 */
int tfs_config_set(struct tfs_config *c, const char *key, const char *value,
		   char *err, size_t errlen);

/* Whether key names a setting (for splitting -o between us and FUSE). */
int tfs_config_is_key(const char *key);

/* Print the effective configuration as an INI file, with comments. */
void tfs_config_print(const struct tfs_config *c, FILE *f);

#endif
