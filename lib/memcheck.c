/*
 * memcheck.c: read MemAvailable, the cgroup limit and RLIMIT_MEMLOCK,
 * and say in numbers why a budget does not fit.  A budget is the cache,
 * the write-back pool, the metadata tree (files x TFS_META_BYTES_PER_FILE
 * with headroom, see memcheck.h) and a fixed overhead; sums saturate, so
 * an absurd configuration never wraps into a small one.
 */
#include "memcheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "meta.h"
#include "units.h"

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64];
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return errno ? -errno : -EIO;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	if (!strncmp(buf, "max", 3)) {
		*v = UINT64_MAX;
		return 0;
	}
	*v = strtoull(buf, NULL, 10);
	return 0;
}

int tfs_mem_limits(struct tfs_mem_limits *l)
{
	char line[512];
	struct rlimit rl;
	FILE *f;

	memset(l, 0, sizeof(*l));
	l->mem_available = UINT64_MAX;
	l->cgroup_free = UINT64_MAX;
	l->memlock = UINT64_MAX;
	f = fopen("/proc/meminfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				l->mem_available = (uint64_t)kb * 1024;
		}
		fclose(f);
	}
	/* cgroup v2: one line "0::/path" */
	f = fopen("/proc/self/cgroup", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char path[600];
			uint64_t max = UINT64_MAX, cur = 0;

			if (strncmp(line, "0::", 3))
				continue;
			line[strcspn(line, "\n")] = '\0';
			snprintf(l->cgroup, sizeof(l->cgroup), "%s", line + 3);
			snprintf(path, sizeof(path),
				 "/sys/fs/cgroup%s/memory.max", l->cgroup);
			if (read_u64(path, &max) || max == UINT64_MAX)
				continue;
			snprintf(path, sizeof(path),
				 "/sys/fs/cgroup%s/memory.current", l->cgroup);
			/* unreadable usage: count the whole limit as free */
			if (read_u64(path, &cur))
				cur = 0;
			l->cgroup_free = max > cur ? max - cur : 0;
		}
		fclose(f);
	}
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		l->memlock = rl.rlim_cur;
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

uint64_t tfs_mem_meta_bytes(uint64_t files)
{
	uint64_t grow = files / 4, n;

	if (grow < TFS_MEM_HEADROOM_FILES)
		grow = TFS_MEM_HEADROOM_FILES;
	n = add_sat(files, grow);
	if (n > UINT64_MAX / TFS_META_BYTES_PER_FILE)
		return UINT64_MAX;
	return n * TFS_META_BYTES_PER_FILE;
}

/* How a message names the keys: the cache's and the pool's, a note on
 * their unit ("" or "; sizes in elements of ..."), pin_memory's, and
 * what to lower. */
struct terms {
	const char *cache, *pool, *unit, *pin, *lower;
};

/* The check of tfs_mem_check() and tfs_mem_check_config(). */
static int check(const struct tfs_mem_limits *l, uint64_t cache, uint64_t pool,
		 uint64_t files, int pinned, uint64_t spare,
		 const struct terms *t, char *err, size_t errlen)
{
	char a[32], b[32], c[32], d[32], e[32];
	uint64_t meta = tfs_mem_meta_bytes(files);
	uint64_t need = add_sat(add_sat(add_sat(cache, pool), meta), spare);
	uint64_t pinned_need = add_sat(cache, pool);
	uint64_t avail = l->mem_available;
	const char *what = "MemAvailable";

	if (l->cgroup_free < avail) {
		avail = l->cgroup_free;
		what = "the cgroup's memory.max less its usage";
	}
	if (need > avail) {
		snprintf(err, errlen,
			 "the cache (%s: %s) plus the write-back pool (%s: %s) "
			 "plus the metadata of %llu files (%s, %u bytes each "
			 "with room to grow) plus %s for the daemon and the "
			 "cache's index need more "
			 "than the %s available (%s)%s; lower %s, or set "
			 "memory_check = false to mount anyway",
			 t->cache, tfs_format_size(cache, a, sizeof(a)),
			 t->pool, tfs_format_size(pool, b, sizeof(b)),
			 (unsigned long long)files,
			 tfs_format_size(meta, e, sizeof(e)),
			 TFS_META_BYTES_PER_FILE,
			 tfs_format_size(spare, c, sizeof(c)),
			 tfs_format_size(avail, d, sizeof(d)), what, t->unit,
			 t->lower);
		return -ENOMEM;
	}
	if (pinned && pinned_need > l->memlock) {
		snprintf(err, errlen,
			 "%s locks the cache (%s: %s) and the write-back pool "
			 "(%s: %s), but RLIMIT_MEMLOCK (ulimit -l) is %s%s; "
			 "lower %s, raise the limit, or set pin_memory = false",
			 t->pin, t->cache, tfs_format_size(cache, a, sizeof(a)),
			 t->pool, tfs_format_size(pool, b, sizeof(b)),
			 tfs_format_size(l->memlock, c, sizeof(c)), t->unit,
			 t->lower);
		return -EPERM;
	}
	return 0;
}

int tfs_mem_check(const struct tfs_mem_limits *l, uint64_t cache, uint64_t pool,
		  uint64_t files, int pinned, uint64_t spare, char *err,
		  size_t errlen)
{
	const struct terms t = {
		"max_in_cpu",
		"buffer_count x buffer_size",
		"",
		"pin_memory",
		pool > cache ? "buffer_size or buffer_count (the pool is the "
			       "larger part), or max_in_cpu"
			     : "max_in_cpu (the cache is the larger part), "
			       "or buffer_size or buffer_count",
	};

	return check(l, cache, pool, files, pinned, spare, &t, err, errlen);
}

/* k of [offload_param] described, tfs_config_describe(), into buf */
static char *describe(const struct tfs_config *c, const char *name, char *buf,
		      size_t len)
{
	return tfs_config_describe(c, tfs_config_key("offload_param", name),
				   buf, len);
}

int tfs_mem_check_config(const struct tfs_mem_limits *l,
			 const struct tfs_config *c, uint64_t files,
			 uint64_t spare, char *err, size_t errlen)
{
	enum {
		LEN = 2 * TFS_CFG_STR_MAX
	};
	uint64_t cache = tfs_config_cache_bytes(c);
	uint64_t pool = tfs_config_pool_bytes(c);
	int pinned = (int)c->offload_param_pin_memory;
	char *buf = malloc(6 * LEN), *count, *size, *pool_t, *unit, *pin;
	struct terms t;
	int rc;

	if (!buf)
		return tfs_mem_check(l, cache, pool, files, pinned, spare, err,
				     errlen);
	t.cache = describe(c, "max_in_cpu", buf, LEN);
	count = describe(c, "buffer_count", buf + LEN, LEN);
	size = describe(c, "buffer_size", buf + 2 * LEN, LEN);
	pool_t = buf + 3 * LEN;
	snprintf(pool_t, LEN, "%.*s x %.*s", LEN / 2 - 2, count, LEN / 2 - 2,
		 size);
	t.pool = pool_t;
	/* dtype counts only when a size is given in elements */
	unit = buf + 4 * LEN;
	unit[0] = '\0';
	if (!(c->offload_param_max_in_cpu & TFS_CFG_BYTES) ||
	    !(c->offload_param_buffer_size & TFS_CFG_BYTES)) {
		memcpy(unit, "; elements of ", 15);
		describe(c, "dtype", unit + 14, LEN - 14);
	}
	t.unit = unit;
	pin = describe(c, "pin_memory", buf + 5 * LEN, LEN);
	t.pin = pin;
	t.lower = pool > cache ? "offload_param.buffer_size or buffer_count "
				 "(the pool is the larger part), or "
				 "max_in_cpu"
			       : "offload_param.max_in_cpu (the cache is the "
				 "larger part), or buffer_size or buffer_count";
	rc = check(l, cache, pool, files, pinned, spare, &t, err, errlen);
	free(buf);
	return rc;
}
