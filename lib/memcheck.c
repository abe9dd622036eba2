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
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max",
				 l->cgroup);
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

int tfs_mem_check(const struct tfs_mem_limits *l, uint64_t cache,
		  uint64_t pool, uint64_t files, int pinned, uint64_t spare,
		  char *err, size_t errlen)
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
			 "the cache (max_in_cpu: %s) plus the write-back pool "
			 "(buffer_count x buffer_size: %s) plus the metadata "
			 "of %llu files (%s, %u bytes each with room to grow) "
			 "plus %s of overhead need more than the %s available "
			 "(%s); lower max_in_cpu or buffer_count, or set "
			 "memory_check = false to mount anyway",
			 tfs_format_size(cache, a, sizeof(a)),
			 tfs_format_size(pool, b, sizeof(b)),
			 (unsigned long long)files,
			 tfs_format_size(meta, e, sizeof(e)),
			 TFS_META_BYTES_PER_FILE,
			 tfs_format_size(spare, c, sizeof(c)),
			 tfs_format_size(avail, d, sizeof(d)), what);
		return -ENOMEM;
	}
	if (pinned && pinned_need > l->memlock) {
		snprintf(err, errlen,
			 "pin_memory locks the cache (max_in_cpu: %s) and the "
			 "write-back pool (buffer_count x buffer_size: %s), but "
			 "RLIMIT_MEMLOCK (ulimit -l) is %s; lower them, raise "
			 "the limit, or set pin_memory = false",
			 tfs_format_size(cache, a, sizeof(a)),
			 tfs_format_size(pool, b, sizeof(b)),
			 tfs_format_size(l->memlock, c, sizeof(c)));
		return -EPERM;
	}
	return 0;
}
