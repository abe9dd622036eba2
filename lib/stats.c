/*
 * stats.c: read a mount's counters into one flat struct and render it
 * (see stats.h).  Everything comes from the TFS_STATS list, so a counter
 * added there appears in all three formats at once.  The renderings are
 * built with open_memstream; values are plain decimal integers, except
 * Prometheus's seconds (prom_name() holds its naming rules, stats.h says
 * them).
 */
#include "stats.h"

#include <stddef.h>
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
	s->clone_bytes = f.clone_bytes;
	s->cache_hits = f.cache.hits;
	s->cache_misses = f.cache.misses;
	s->cache_read_around = f.cache.read_around;
	s->cache_evictions = f.cache.evictions;
	s->cache_bytes = f.cache.cached_bytes;
	s->cache_limit_bytes = f.cache.cache_limit;
	s->cache_clean_bytes = f.cache.clean_bytes;
	s->dirty_bytes = f.cache.dirty_bytes;
	s->pool_busy = f.cache.pool_busy;
	s->pool_total = f.cache.pool_total;
	s->pool_waits = f.cache.pool_waits;
	s->pool_chunk_ns = f.cache.pool_chunk_ns;
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
	s->members = tfs_fs_members(fs);
	if (s->members > TFS_STATS_MEMBERS)
		s->members = TFS_STATS_MEMBERS;
	for (unsigned int i = 0; i < s->members; i++) {
		struct tfs_member_stats *ms = &s->member[i];
		struct tfs_member_info mi;

		tfs_fs_member_info(fs, i, &mi);
		ms->device = mi.path;
		ms->read_bytes = mi.dev.read_bytes;
		ms->write_bytes = mi.dev.write_bytes;
		ms->reads = mi.dev.reads;
		ms->writes = mi.dev.writes;
		ms->flushes = mi.dev.flushes;
		ms->errors = mi.dev.errors;
		ms->inflight = mi.dev.inflight;
		ms->inflight_max = mi.dev.inflight_max;
		ms->latency_ns = mi.dev.latency_ns;
		ms->latency_max_ns = mi.dev.latency_max_ns;
		ms->size_bytes = mi.size_bytes;
		ms->free_bytes = mi.free_bytes;
	}
}

void tfs_stats_json_string(FILE *m, const char *s)
{
	fputc('"', m);
	for (const char *c = s ? s : ""; *c; c++)
		if (*c == '"' || *c == '\\')
			fprintf(m, "\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			fprintf(m, "\\u%04x", *c);
		else
			fputc(*c, m);
	fputc('"', m);
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

/* A sample's value: seconds from nanoseconds if nanos. */
static void prom_value(FILE *m, uint64_t v, int nanos)
{
	if (nanos)
		fprintf(m, " %llu.%09llu\n",
			(unsigned long long)(v / 1000000000u),
			(unsigned long long)(v % 1000000000u));
	else
		fprintf(m, " %llu\n", (unsigned long long)v);
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
	fprintf(m, "tensorfs_%s", pn);
	prom_value(m, v, nanos);
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void prom_label(FILE *m, const char *s)
{
	for (const char *c = s ? s : ""; *c; c++)
		if (*c == '"' || *c == '\\')
			fprintf(m, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", m);
		else
			fputc(*c, m);
}

/* Metric name (member_NAME), one sample per member, labelled. */
static void prom_members(FILE *m, const struct tfs_stats *s, const char *name,
			 const char *type, const char *help, size_t field)
{
	char full[96], pn[128];
	int nanos;

	snprintf(full, sizeof(full), "member_%s", name);
	prom_name(full, type, pn, sizeof(pn), &nanos);
	fprintf(m, "# HELP tensorfs_%s %s\n# TYPE tensorfs_%s %s\n", pn, help,
		pn, type);
	for (unsigned int i = 0; i < s->members; i++) {
		const struct tfs_member_stats *ms = &s->member[i];
		uint64_t v;

		memcpy(&v, (const char *)ms + field, sizeof(v));
		fprintf(m, "tensorfs_%s{member=\"%u\",device=\"", pn, i + 1);
		prom_label(m, ms->device);
		fputs("\"}", m);
		prom_value(m, v, nanos);
	}
}

/* The members' counters in format f (stats.h says how). */
static void render_members(FILE *m, const struct tfs_stats *s,
			   enum tfs_stats_format f)
{
	const char *sep = "";

	switch (f) {
	case TFS_STATS_TEXT:
		fprintf(m, "members %u\n", s->members);
		for (unsigned int i = 0; i < s->members; i++) {
			const struct tfs_member_stats *ms = &s->member[i];

#define X(name, type, help)                                                    \
	fprintf(m, "member%u_%s %llu\n", i + 1, #name,                         \
		(unsigned long long)ms->name);
			TFS_MEMBER_STATS
#undef X
		}
		break;
	case TFS_STATS_JSON:
		fputs(",\n  \"members\": [", m);
		for (unsigned int i = 0; i < s->members; i++) {
			const struct tfs_member_stats *ms = &s->member[i];

			fprintf(m, "%s\n    {\"device\": ", sep);
			tfs_stats_json_string(m, ms->device);
#define X(name, type, help)                                                    \
	fprintf(m, ", \"%s\": %llu", #name, (unsigned long long)ms->name);
			TFS_MEMBER_STATS
#undef X
			fputc('}', m);
			sep = ",";
		}
		fputs("\n  ]", m);
		break;
	case TFS_STATS_PROM:
		prom_metric(m, "members", "gauge",
			    "Devices in the file system's set", s->members);
#define X(name, type, help)                                                    \
	prom_members(m, s, #name, #type, help,                                 \
		     offsetof(struct tfs_member_stats, name));
		TFS_MEMBER_STATS
#undef X
		break;
	}
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
	render_members(m, s, f);
	if (f == TFS_STATS_JSON)
		fputs("\n}\n", m);
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return buf;
}
