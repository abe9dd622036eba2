/*
 * stats.c: read a mount's counters into one flat struct and render it
 * (see stats.h).  Everything comes from the TFS_STATS list, so a counter
 * added there appears in all three formats at once.  The renderings are
 * built with open_memstream; values are plain decimal integers, except
 * Prometheus's seconds (prom_name() holds its naming rules, stats.h says
 * them).
 */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

void tfs_stats_get(struct tfs_fs *fs, struct tfs_stats *s)
{
	struct tfs_fs_stats f;
	struct tfs_fs_info info;

	tfs_fs_get_stats(fs, &f);
	tfs_fs_get_info(fs, &info);
	memset(s, 0, sizeof(*s));
	s->app_read_bytes = f.app_read_bytes;
	s->app_write_bytes = f.app_write_bytes;
	s->copy_bytes = f.copy_bytes;
	s->cache_hits = f.cache.hits;
	s->cache_misses = f.cache.misses;
	s->cache_read_around = f.cache.read_around;
	s->cache_evictions = f.cache.evictions;
	s->cache_bytes = f.cache.cached_bytes;
	s->cache_limit_bytes = f.cache.cache_limit;
	s->dirty_bytes = f.cache.dirty_bytes;
	s->pool_busy = f.cache.pool_busy;
	s->pool_total = f.cache.pool_total;
	s->pool_waits = f.cache.pool_waits;
	s->writeback_bytes = f.cache.flushed_bytes;
	s->writeback_errors = f.cache.flush_errors;
	s->dev_reads = f.dev.reads;
	s->dev_writes = f.dev.writes;
	s->dev_read_bytes = f.dev.read_bytes;
	s->dev_write_bytes = f.dev.write_bytes;
	s->dev_flushes = f.dev.flushes;
	s->dev_errors = f.dev.errors;
	s->dev_submitted = f.dev.submitted;
	s->dev_inflight = f.dev.inflight;
	s->dev_latency_ns = f.dev.latency_ns;
	s->dev_latency_max_ns = f.dev.latency_max_ns;
	s->arena_bytes = f.cache.arena_bytes;
	s->fs_bytes = info.data_blocks * 4096;
	s->fs_free_bytes = info.free_blocks * 4096;
	s->inodes = info.inodes;
	s->meta_ram_bytes = info.meta_ram_bytes;
}

/* Whether name ends with suffix. */
static int ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n >= k && !strcmp(name + n - k, suffix);
}

/*
 * The Prometheus name of counter name (of type "counter" or "gauge"),
 * without the "tensorfs_" prefix, into buf; *nanos set if its value is in
 * nanoseconds, which Prometheus wants in seconds.
 */
static const char *prom_name(const char *name, const char *type, char *buf,
			     size_t len, int *nanos)
{
	size_t n = strlen(name);
	int counter = !strcmp(type, "counter");

	*nanos = ends_with(name, "_ns");
	if (*nanos)
		snprintf(buf, len, "%.*s_seconds%s", (int)(n - 3), name,
			 counter ? "_total" : "");
	else if (!counter && ends_with(name, "_total"))
		snprintf(buf, len, "%.*s_chunks", (int)(n - 6), name);
	else if (!counter && ends_with(name, "_busy"))
		snprintf(buf, len, "%s_chunks", name);
	else
		snprintf(buf, len, "%s%s", name, counter ? "_total" : "");
	return buf;
}

/* One metric in Prometheus text format. */
static void prom_metric(FILE *m, const char *name, const char *type,
			const char *help, uint64_t v)
{
	char pn[128];
	int nanos;

	prom_name(name, type, pn, sizeof(pn), &nanos);
	fprintf(m, "# HELP tensorfs_%s %s\n# TYPE tensorfs_%s %s\n", pn, help,
		pn, type);
	if (nanos)
		fprintf(m, "tensorfs_%s %llu.%09llu\n", pn,
			(unsigned long long)(v / 1000000000u),
			(unsigned long long)(v % 1000000000u));
	else
		fprintf(m, "tensorfs_%s %llu\n", pn, (unsigned long long)v);
}

char *tfs_stats_render(const struct tfs_stats *s, enum tfs_stats_format f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	const char *sep = "";

	if (!m)
		return NULL;
	if (f == TFS_STATS_JSON)
		fputc('{', m);
#define X(name, type, help)                                                    \
	switch (f) {                                                           \
	case TFS_STATS_TEXT:                                                   \
		fprintf(m, "%s %llu\n", #name, (unsigned long long)s->name);   \
		break;                                                         \
	case TFS_STATS_JSON:                                                   \
		fprintf(m, "%s\n  \"%s\": %llu", sep, #name,                   \
			(unsigned long long)s->name);                          \
		sep = ",";                                                     \
		break;                                                         \
	case TFS_STATS_PROM:                                                   \
		prom_metric(m, #name, #type, help, s->name);                   \
		break;                                                         \
	}
	TFS_STATS
#undef X
	if (f == TFS_STATS_JSON)
		fputs("\n}\n", m);
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return buf;
}
