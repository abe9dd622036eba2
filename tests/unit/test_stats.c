/*
 * test_stats.c: a mount's counters and their renderings (lib/stats.h).
 * Description: the text, JSON and Prometheus renderings each carry every
 * counter once with its value and type, each member's too, and
 * tfs_stats_get() reads counters that move by what a file system was
 * asked to do.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs.h"
#include "journal.h"
#include "stats.h"
#include "testimg.h"

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_stats_renderings_carry_every_counter(void **state)
{
	struct tfs_stats s;
	char *text, *json, *prom;
	size_t n = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.cache_hits = 7;
	s.dirty_bytes = 123456789012ull;
	s.dev_latency_ns = 1500000000ull;
	s.dev_latency_max_ns = 250000ull;
	s.pool_total = 5;
#define X(name, type, help) n++;
	TFS_STATS
#undef X
	text = tfs_stats_render(&s, TFS_STATS_TEXT);
	json = tfs_stats_render(&s, TFS_STATS_JSON);
	prom = tfs_stats_render(&s, TFS_STATS_PROM);
	assert_non_null(text);
	assert_non_null(json);
	assert_non_null(prom);
	/* one line per counter, and the members' count */
	assert_int_equal(count(text, "\n"), n + 1);
	assert_non_null(strstr(text, "\nmembers 0\n"));
	assert_non_null(strstr(text, "cache_hits 7\n"));
	assert_non_null(strstr(text, "dirty_bytes 123456789012\n"));
	assert_int_equal(strncmp(text, "app_read_bytes 0\n", 17), 0);
	/* JSON: an object, every name once, values as numbers */
	assert_int_equal(json[0], '{');
	assert_non_null(strstr(json, "\"cache_hits\": 7"));
	assert_non_null(strstr(json, "\"dirty_bytes\": 123456789012"));
	assert_int_equal(count(json, "\":"), n + 1);
	assert_int_equal(count(json, ","), n);
	assert_non_null(strstr(json, "\"members\": [\n  ]"));
	assert_non_null(strstr(json, "\n}\n"));
	/* Prometheus: HELP, TYPE and a sample for each */
	/* ... and the members' gauge and each member counter, sample-less */
	n += 1;
#define X(name, type, help) n++;
	TFS_MEMBER_STATS
#undef X
	assert_int_equal(count(prom, "# HELP tensorfs_"), n);
	assert_int_equal(count(prom, "# TYPE tensorfs_"), n);
	assert_non_null(strstr(prom,
			       "# TYPE tensorfs_cache_hits_total counter\n"
			       "tensorfs_cache_hits_total 7\n"));
	assert_non_null(strstr(prom, "# TYPE tensorfs_dirty_bytes gauge\n"));
	/* base units: seconds, not nanoseconds */
	assert_non_null(strstr(prom, "tensorfs_dev_latency_seconds_total "
				     "1.500000000\n"));
	assert_non_null(strstr(prom, "# TYPE tensorfs_dev_latency_max_seconds "
				     "gauge\ntensorfs_dev_latency_max_seconds "
				     "0.000250000\n"));
	/* a gauge is never named *_total */
	assert_non_null(strstr(prom, "# TYPE tensorfs_pool_chunks gauge\n"
				     "tensorfs_pool_chunks 5\n"));
	assert_null(strstr(prom, "_ns"));
	for (const char *t = strstr(prom, "# TYPE "); t;
	     t = strstr(t + 1, "# TYPE ")) {
		const char *sp = strchr(t + 7, ' ');
		int total = sp - t - 7 > 6 && !strncmp(sp - 6, "_total", 6);

		assert_int_equal(total, !strncmp(sp + 1, "counter\n", 8));
	}
	free(text);
	free(json);
	free(prom);
}

/* Each member once in each rendering, its device name kept whole and
 * escaped where the format asks. */
static void test_stats_render_each_member(void **state)
{
	struct tfs_stats s;
	char *text, *json, *prom;
	size_t n = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.members = 2;
	s.member[0].device = "/dev/nvme0n1";
	s.member[0].write_bytes = 1048576;
	s.member[0].latency_ns = 2500000000ull;
	s.member[1].device = "/img/a \"b\"\\c\nd";
	s.member[1].errors = 3;
	s.member[1].free_bytes = 4096;
#define X(name, type, help) n++;
	TFS_MEMBER_STATS
#undef X
	text = tfs_stats_render(&s, TFS_STATS_TEXT);
	json = tfs_stats_render(&s, TFS_STATS_JSON);
	prom = tfs_stats_render(&s, TFS_STATS_PROM);
	assert_non_null(text);
	assert_non_null(json);
	assert_non_null(prom);
	assert_non_null(strstr(text, "members 2\nmember1_read_bytes 0\n"
				     "member1_write_bytes 1048576\n"));
	assert_non_null(strstr(text, "member2_errors 3\n"));
	assert_non_null(strstr(text, "member2_free_bytes 4096\n"));
	/* numbers only: the names are in the other two */
	assert_null(strstr(text, "nvme0n1"));
	assert_int_equal(count(text, "member2_"), n);
	assert_non_null(strstr(json, "\"members\": [\n    {\"device\": "
				     "\"/dev/nvme0n1\", \"read_bytes\": 0, "
				     "\"write_bytes\": 1048576"));
	assert_non_null(strstr(json, "{\"device\": \"/img/a \\\"b\\\"\\\\c"
				     "\\u000ad\""));
	assert_non_null(strstr(json, "\"errors\": 3"));
	assert_non_null(strstr(prom, "tensorfs_members 2\n"));
	assert_non_null(strstr(
	    prom,
	    "# TYPE tensorfs_member_write_bytes_total counter\n"
	    "tensorfs_member_write_bytes_total{member=\"1\",device=\"/dev/"
	    "nvme0n1\"} 1048576\n"
	    "tensorfs_member_write_bytes_total{member=\"2\",device=\"/img/"
	    "a \\\"b\\\"\\\\c\\nd\"} 0\n"));
	assert_non_null(strstr(prom, "tensorfs_member_latency_seconds_total{"
				     "member=\"1\",device=\"/dev/nvme0n1\"} "
				     "2.500000000\n"));
	assert_non_null(
	    strstr(prom, "# TYPE tensorfs_member_free_bytes gauge\n"));
	free(text);
	free(json);
	free(prom);
}

static void test_stats_counters_move_with_the_file_system(void **state)
{
	char path[64], err[256];
	struct tfs_fs *fs;
	struct tfs_stats a, b;
	uint64_t ram0;
	struct stat st;
	static uint8_t buf[3 * 4096 + 17];

	(void)state;
	assert_int_equal(img_make(path, 64 * MiB), 0);
	assert_int_equal(img_format(path, 64 * MiB), 0);
	assert_int_equal(tfs_fs_open(path, NULL, &fs, err, sizeof(err)), 0);
	tfs_stats_get(fs, &a);
	assert_true(a.fs_bytes > 0 && a.fs_bytes <= 64 * MiB);
	assert_true(a.fs_free_bytes <= a.fs_bytes);
	assert_true(a.pool_total > 0);
	assert_int_equal(a.inodes, 1);
	assert_true(a.meta_ram_bytes > 0);
	ram0 = a.meta_ram_bytes;
	assert_int_equal(
	    tfs_mknod(fs, TFS_FS_ROOT, "f", S_IFREG | 0644, 0, 0, 0, &st), 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(tfs_write(fs, st.st_ino, buf, sizeof(buf), 100, NULL),
			 (ssize_t)sizeof(buf));
	tfs_stats_get(fs, &b);
	assert_int_equal(b.app_write_bytes - a.app_write_bytes, sizeof(buf));
	assert_true(b.dirty_bytes > 0);
	assert_int_equal(b.inodes, 2);
	assert_int_equal(tfs_fsync(fs, st.st_ino, 0, NULL), 0);
	assert_int_equal(tfs_read(fs, st.st_ino, buf, sizeof(buf), 100),
			 (ssize_t)sizeof(buf));
	tfs_stats_get(fs, &a);
	assert_int_equal(a.dirty_bytes, 0);
	assert_true(a.dev_write_bytes - b.dev_write_bytes >= sizeof(buf));
	assert_true(a.writeback_bytes >= sizeof(buf));
	assert_int_equal(a.app_read_bytes, sizeof(buf));
	/* the file's extent array is the tree's first malloc since open
	 * (its inode and entry came from the pool's first block) */
	assert_true(a.meta_ram_bytes > ram0);
	assert_true(a.fs_free_bytes < b.fs_bytes);
	/* one device: a set of one, which did it all */
	assert_int_equal(a.members, 1);
	assert_string_equal(a.member[0].device, path);
	assert_int_equal(a.member[0].write_bytes, a.dev_write_bytes);
	assert_int_equal(a.member[0].read_bytes, a.dev_read_bytes);
	assert_int_equal(a.member[0].size_bytes, 64 * MiB);
	assert_int_equal(a.member[0].free_bytes, a.fs_free_bytes);
	assert_int_equal(tfs_fs_close(fs), 0);
	unlink(path);
	tfs_io_thread_exit();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_renderings_carry_every_counter),
		cmocka_unit_test(test_stats_render_each_member),
		cmocka_unit_test(test_stats_counters_move_with_the_file_system),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
