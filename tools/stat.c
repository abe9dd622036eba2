/*
 * stat.c: tensorfs-stat, what a mount is doing, a line per interval (like
 * vmstat).
 *
 * It reads MOUNTPOINT/.tensorfs/stats ("name value" lines, lib/stats.h)
 * every INTERVAL seconds and prints the change: application and device
 * MB/s, the cache's hit rate, what the cache and the pool hold, requests
 * in flight and writers that waited; with --members, the same of each
 * device of the set.  It needs nothing but that file, so it runs as any
 * user who can read the mount.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "closeout.h"
#include "mountroot.h"
#include "stats.h"

static void usage(FILE *f)
{
	fputs(
	    "Usage: tensorfs-stat [--json] [--members] MOUNTPOINT [INTERVAL [COUNT]]\n"
	    "\n"
	    "Show what a tensorfs mount is doing, one line per INTERVAL seconds (default\n"
	    "1; fractions allowed), COUNT lines (default: until interrupted; without\n"
	    "INTERVAL, one line over one second), as vmstat does:\n"
	    "\n"
	    "  app r/w    MB/s applications read and wrote (10^6 bytes/s)\n"
	    "  dev r/w    MB/s read from and written to the device\n"
	    "  hit%       reads served from tensorfs's RAM cache, of all reads\n"
	    "  cache      MiB of clean file data in RAM / the cache's limit\n"
	    "             (max_in_cpu), which it does not pass; dirty data is\n"
	    "             the pool's, beside it\n"
	    "  dirty      MiB in the write-back pool not yet on the device\n"
	    "  pool       write-back chunks in use, on average over the interval /\n"
	    "             in the pool\n"
	    "  inflt      device requests in flight\n"
	    "  waits      writes that found the pool full in the interval and\n"
	    "             waited for a chunk to be written back; the pool may have\n"
	    "             drained by the interval's end, its average shows how full\n"
	    "             it ran\n"
	    "\n"
	    "With --members, each interval shows instead a line per device of the\n"
	    "file system's set (one for a single device), so a slow or failing drive\n"
	    "stands out:\n"
	    "\n"
	    "  member     its number in the set, from 1 (1 holds the journal)\n"
	    "  rd/wr MB/s read from and written to that device\n"
	    "  reads/s, writ/s  requests it completed per second\n"
	    "  inflt      its requests in flight now\n"
	    "  lat ms     mean time a request took in the interval, submit to completion\n"
	    "  errors     requests it failed in the interval\n"
	    "  free GiB   free space on it\n"
	    "  device     its path\n"
	    "\n"
	    "A header is printed again every screenful.  The counters come from\n"
	    "MOUNTPOINT/.tensorfs/stats.  MOUNTPOINT may be any path on the mount\n"
	    "(/local_nvme/zero_stage_3): as df does, the mount that holds it is used.\n"
	    "\n"
	    "Options:\n"
	    "  --json      one JSON object per line, with the same fields, for scripts\n"
	    "  -m, --members  a line per device of the set, as above\n"
	    "  -h, --help  print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "Exit status: 0 when done, 1 if MOUNTPOINT is not a tensorfs mount (or its\n"
	    "counters cannot be read) or the output cannot be written, 2 on a usage\n"
	    "error.\n",
	    f);
}

/* The members' device names, from stats.json (the text has numbers
 * only). */
static char *devname[TFS_STATS_MEMBERS];

/* "memberI_FIELD value" into s: 1 if the line was one, else 0. */
static int read_member(struct tfs_stats *s, const char *name, const char *val)
{
	struct tfs_member_stats *ms;
	unsigned int i;
	int at = 0;

	if (sscanf(name, "member%u_%n", &i, &at) != 1 || !at || i < 1 ||
	    i > TFS_STATS_MEMBERS)
		return 0;
	ms = &s->member[i - 1];
	name += at;
#define X(field, type, help)                                                   \
	if (!strcmp(name, #field)) {                                           \
		ms->field = strtoull(val, NULL, 10);                           \
		return 1;                                                      \
	}
	TFS_MEMBER_STATS
#undef X
	return 0;
}

/* The members' device names from stats.json next to the stats file at
 * path (its "members" array, in member order); names it cannot read
 * stay NULL. */
static void read_devices(const char *path)
{
	char json[4096 + 16];
	json_t *root, *members, *m;
	size_t i;

	snprintf(json, sizeof(json), "%s.json", path);
	root = json_load_file(json, 0, NULL);
	members = json_object_get(root, "members");
	json_array_foreach(members, i, m)
	{
		const char *name =
		    json_string_value(json_object_get(m, "device"));

		if (i >= TFS_STATS_MEMBERS)
			break;
		free(devname[i]);
		devname[i] = name ? strdup(name) : NULL;
	}
	json_decref(root);
}

/* Read MOUNT/.tensorfs/stats ("name value" lines) into *s.  0 or
 * -errno; -EINVAL if it holds none of the counters. */
static int read_stats(const char *path, struct tfs_stats *s)
{
	char *line = NULL, *val;
	size_t cap = 0;
	ssize_t len;
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -errno;
	memset(s, 0, sizeof(*s));
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		val = strchr(line, ' ');
		if (!val)
			continue;
		*val++ = '\0';
#define X(field, type, help)                                                   \
	if (!strcmp(line, #field)) {                                           \
		s->field = strtoull(val, NULL, 10);                            \
		n++;                                                           \
		continue;                                                      \
	}
		TFS_STATS
#undef X
		if (!strcmp(line, "members"))
			s->members = (unsigned int)strtoul(val, NULL, 10);
		else
			read_member(s, line, val);
	}
	free(line);
	fclose(f);
	if (s->members > TFS_STATS_MEMBERS)
		s->members = TFS_STATS_MEMBERS;
	return n ? 0 : -EINVAL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int screen_rows(void)
{
	struct winsize w;

	if (isatty(STDOUT_FILENO) &&
	    ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 4)
		return w.ws_row - 2;
	return 20;
}

#define D(field) ((double)(b->field - a->field))

static void print_line(const struct tfs_stats *a, const struct tfs_stats *b,
		       double dt, int json)
{
	double rd = D(cache_hits) + D(cache_misses);
	double pool = D(pool_chunk_ns) / dt / 1e9; /* chunks in use, mean */
	double hit = rd > 0 ? 100.0 * D(cache_hits) / rd : NAN;
	double mib = 1048576.0;

	if (json) {
		char h[16] = "null"; /* no reads in the interval */

		if (!isnan(hit))
			snprintf(h, sizeof(h), "%.1f", hit);
		printf(
		    "{\"app_read_mb_s\": %.1f, \"app_write_mb_s\": %.1f, "
		    "\"dev_read_mb_s\": %.1f, \"dev_write_mb_s\": %.1f, "
		    "\"cache_hit_pct\": %s, \"cache_bytes\": %llu, "
		    "\"cache_clean_bytes\": %llu, "
		    "\"cache_limit_bytes\": %llu, \"dirty_bytes\": %llu, "
		    "\"pool_busy\": %llu, \"pool_busy_avg\": %.2f, "
		    "\"pool_total\": %llu, "
		    "\"inflight\": %llu, \"pool_waits\": %llu, "
		    "\"interval_s\": %.3f}\n",
		    D(app_read_bytes) / dt / 1e6, D(app_write_bytes) / dt / 1e6,
		    D(dev_read_bytes) / dt / 1e6, D(dev_write_bytes) / dt / 1e6,
		    h, (unsigned long long)b->cache_bytes,
		    (unsigned long long)b->cache_clean_bytes,
		    (unsigned long long)b->cache_limit_bytes,
		    (unsigned long long)b->dirty_bytes,
		    (unsigned long long)b->pool_busy,
		    D(pool_chunk_ns) / dt / 1e9,
		    (unsigned long long)b->pool_total,
		    (unsigned long long)b->dev_inflight,
		    (unsigned long long)(b->pool_waits - a->pool_waits), dt);
	} else {
		char h[8];

		if (isnan(hit))
			snprintf(h, sizeof(h), "-");
		else
			snprintf(h, sizeof(h), "%.0f", hit);
		printf(
		    "%7.0f %7.0f %7.0f %7.0f %5s %7.0f/%-7.0f %7.0f "
		    "%5.*f/%-5llu %5llu %6llu\n",
		    D(app_read_bytes) / dt / 1e6, D(app_write_bytes) / dt / 1e6,
		    D(dev_read_bytes) / dt / 1e6, D(dev_write_bytes) / dt / 1e6,
		    h, (double)b->cache_clean_bytes / mib,
		    (double)b->cache_limit_bytes / mib,
		    (double)b->dirty_bytes / mib, pool < 99.95 ? 1 : 0, pool,
		    (unsigned long long)b->pool_total,
		    (unsigned long long)b->dev_inflight,
		    (unsigned long long)(b->pool_waits - a->pool_waits));
	}
	fflush(stdout);
}

#define MD(field) ((double)(mb->field - ma->field))

/* One line per member: what each drive of the set did in the interval. */
static void print_members(const struct tfs_stats *a, const struct tfs_stats *b,
			  double dt, int json)
{
	double gib = 1073741824.0;

	if (json)
		printf("{\"interval_s\": %.3f, \"members\": [", dt);
	else
		printf("%6s %7s %7s %7s %7s %5s %7s %6s %9s  %s\n", "member",
		       "rd MB/s", "wr MB/s", "reads/s", "writ/s", "inflt",
		       "lat ms", "errors", "free GiB", "device");
	for (unsigned int i = 0; i < b->members; i++) {
		const struct tfs_member_stats *ma = &a->member[i];
		const struct tfs_member_stats *mb = &b->member[i];
		double n = MD(reads) + MD(writes);
		double lat = n > 0 ? MD(latency_ns) / n / 1e6 : NAN;

		if (i >= a->members) /* not in the first reading */
			ma = mb;
		if (json) {
			char l[32] = "null"; /* no requests in the interval */

			if (!isnan(lat))
				snprintf(l, sizeof(l), "%.3f", lat);
			printf("%s{\"member\": %u, \"device\": ", i ? ", " : "",
			       i + 1);
			tfs_stats_json_string(stdout, devname[i]);
			printf(", \"read_mb_s\": %.1f, \"write_mb_s\": %.1f, "
			       "\"reads_s\": %.1f, \"writes_s\": %.1f, "
			       "\"inflight\": %llu, \"latency_ms\": %s, "
			       "\"errors\": %llu, \"free_bytes\": %llu, "
			       "\"size_bytes\": %llu}",
			       MD(read_bytes) / dt / 1e6,
			       MD(write_bytes) / dt / 1e6, MD(reads) / dt,
			       MD(writes) / dt,
			       (unsigned long long)mb->inflight, l,
			       (unsigned long long)(mb->errors - ma->errors),
			       (unsigned long long)mb->free_bytes,
			       (unsigned long long)mb->size_bytes);
		} else {
			char l[16] = "-";

			if (!isnan(lat))
				snprintf(l, sizeof(l), "%.2f", lat);
			printf(
			    "%6u %7.0f %7.0f %7.0f %7.0f %5llu %7s %6llu %9.1f  "
			    "%s\n",
			    i + 1, MD(read_bytes) / dt / 1e6,
			    MD(write_bytes) / dt / 1e6, MD(reads) / dt,
			    MD(writes) / dt, (unsigned long long)mb->inflight,
			    l, (unsigned long long)(mb->errors - ma->errors),
			    (double)mb->free_bytes / gib,
			    devname[i] ? devname[i] : "?");
		}
	}
	puts(json ? "]}" : "");
	fflush(stdout);
}

static void header(void)
{
	printf("%-15s %-15s %5s %-15s %7s %-11s %5s %6s\n", "---app MB/s---",
	       "---dev MB/s---", "", "---cache MiB---", "", "", "", "");
	printf("%7s %7s %7s %7s %5s %15s %7s %11s %5s %6s\n", "read", "write",
	       "read", "write", "hit%", "used/limit", "dirty", "pool", "inflt",
	       "waits");
}

/* A positive number of seconds, or -1. */
static double seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		return -1;
	return v;
}

/* parse_args() returns GO_ON, or the status main() exits with. */
#define GO_ON (-1)

/* What the command line asked for. */
struct args {
	const char *mount; /* MOUNTPOINT */
	double interval;   /* seconds between lines */
	long count;	   /* lines to print; -1: until interrupted */
	int json;	   /* --json */
	int members;	   /* --members */
};

static int parse_args(int argc, char **argv, struct args *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "members", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->interval = 1;
	o->count = -1;
	while ((c = getopt_long(argc, argv, "mhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = 1;
			break;
		case 'm':
			o->members = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tensorfs-stat %s\n", TFS_VERSION_STRING);
			return 0;
		default:
			fputs("Try 'tensorfs-stat --help' for more "
			      "information.\n",
			      stderr);
			return 2;
		}
	}
	if (argc - optind < 1 || argc - optind > 3) {
		fprintf(stderr,
			"tensorfs-stat: %s\nUsage: tensorfs-stat "
			"[--json] [--members] MOUNTPOINT [INTERVAL [COUNT]]\n",
			argc - optind < 1 ? "missing MOUNTPOINT"
					  : "too many arguments");
		return 2;
	}
	o->mount = argv[optind];
	if (argc - optind == 1) {
		o->count = 1;
		return GO_ON;
	}
	o->interval = seconds(argv[optind + 1]);
	if (o->interval < 0) {
		fprintf(stderr,
			"tensorfs-stat: interval '%s' is not a "
			"number of seconds above 0 and at most 86400 (e.g. 1 "
			"or 0.5)\n",
			argv[optind + 1]);
		return 2;
	}
	if (argc - optind == 3) {
		char *end;

		o->count = strtol(argv[optind + 2], &end, 10);
		if (*end || end == argv[optind + 2] || o->count < 1) {
			fprintf(stderr,
				"tensorfs-stat: count '%s' is not a "
				"whole number of lines\n",
				argv[optind + 2]);
			return 2;
		}
	}
	return GO_ON;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s,
			       (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/*
 * A line per interval from the counters in path, starting from *a (read
 * just before), with a header every screenful.  0, or 1 when the file
 * cannot be read any more.
 */
static int watch(const char *path, struct tfs_stats *a, const struct args *o)
{
	int rows = screen_rows(), line = 0, rc;
	double t0 = now_s(), t1;
	long count = o->count;
	struct tfs_stats b;

	while (count < 0 || count-- > 0) {
		sleep_s(o->interval);
		rc = read_stats(path, &b);
		t1 = now_s();
		if (rc) {
			fprintf(stderr,
				"tensorfs-stat: cannot read %s: %s; "
				"was it unmounted?\n",
				path, strerror(-rc));
			return 1;
		}
		if (o->members) {
			print_members(a, &b, t1 - t0, o->json);
		} else {
			if (!o->json && line++ % rows == 0)
				header();
			print_line(a, &b, t1 - t0, o->json);
		}
		*a = b;
		t0 = t1;
	}
	return 0;
}

/*
 * The counters of the mount that holds dir (its root found as df finds
 * a path's file system), so "tensorfs-stat /local_nvme/zero_stage_3"
 * works too, read into *a; the file read (or, off a tensorfs, dir's own
 * .tensorfs/stats, whose error tells why) is left in path.  0 or -errno.
 */
static int find_stats(const char *dir, char *path, size_t len,
		      struct tfs_stats *a)
{
	char root[4096];

	if (tfs_mount_root(dir, root, sizeof(root)))
		snprintf(root, sizeof(root), "%s", dir);
	if ((size_t)snprintf(path, len, "%s/.tensorfs/stats", root) >= len)
		return -ENAMETOOLONG;
	return read_stats(path, a);
}

int main(int argc, char **argv)
{
	struct args o = { 0 };
	struct tfs_stats a;
	char path[4096];
	int rc;

	tfs_closeout("tensorfs-stat", 1);
	rc = parse_args(argc, argv, &o);
	if (rc != GO_ON)
		return rc;
	rc = find_stats(o.mount, path, sizeof(path), &a);
	if (rc) {
		fprintf(stderr,
			"tensorfs-stat: '%s' is not a tensorfs mount "
			"(cannot read %s: %s)\n",
			o.mount, path, strerror(-rc));
		return 1;
	}
	if (o.members)
		read_devices(path);
	return watch(path, &a, &o);
}
