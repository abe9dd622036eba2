/*
 * test_config.c: the settings table, the INI parser and -o overrides.
 * Description: every parse path of lib/config.c and its error message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#include <cmocka.h>

#include "config.h"

static char path[64];

/* Write text to a fresh temporary INI file; returns its path. */
static const char *ini(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/tfs-test-config-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static int load(struct tfs_config *c, const char *text, char *err, size_t n)
{
	int rc;

	tfs_config_defaults(c);
	rc = tfs_config_load(c, ini(text), err, n);
	unlink(path);
	return rc;
}

static void test_config_defaults_come_from_the_table(void **state)
{
	struct tfs_config c;
	size_t n;
	const struct tfs_cfg_key *k = tfs_config_keys(&n);

	(void)state;
	assert_true(n >= 3);
	tfs_config_defaults(&c);
	assert_int_equal(c.mount_commit_interval_ms, 5000);
	assert_int_equal(c.mount_attr_timeout_ms, 1000);
	for (size_t i = 0; i < n; i++)
		assert_non_null(k[i].doc);
}

static void test_config_reads_values_and_deepspeed_notation(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, "; comment\n[mount]\ncommit_interval_ms = 2e3\n"
				  "max_threads=4\n", err, sizeof(err)), 0);
	assert_int_equal(c.mount_commit_interval_ms, 2000);
	assert_int_equal(c.mount_max_threads, 4);
}

static void test_config_unknown_key_names_line_and_suggests(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, "[mount]\nmax_threads = 4\ncommit_intervl_ms = 5\n",
			      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":3: "));
	assert_non_null(strstr(err, "commit_intervl_ms"));
	assert_non_null(strstr(err, "did you mean 'commit_interval_ms'"));
}

static void test_config_unknown_section_suggests(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, "[mont]\nmax_threads = 4\n", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2: unknown section [mont]"));
	assert_non_null(strstr(err, "[mount]"));
}

static void test_config_rejects_malformed_and_out_of_range(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, "[mount]\nmax_threads = lots\n", err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: mount.max_threads = 'lots' is not a whole number"));
	assert_int_equal(load(&c, "[mount]\nmax_threads = 0\n", err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(load(&c, "[mount]\nmax_threads = 4MiB\n", err,
			      sizeof(err)), -EINVAL);
	assert_int_equal(load(&c, "[mount]\nthis line is not ini\n", err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: "));
}

static void test_config_missing_file_is_an_error(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(tfs_config_load(&c, "/nonexistent/x.ini", err,
					 sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.ini: cannot open"));
}

static void test_config_set_overrides_by_name_or_section(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(tfs_config_set(&c, "max_threads", "8", err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 8);
	assert_int_equal(tfs_config_set(&c, "mount.max_threads", "9", err,
					sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 9);
	assert_int_equal(tfs_config_set(&c, "max_thread", "9", err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "did you mean 'max_threads'"));
	assert_true(tfs_config_is_key("attr_timeout_ms"));
	assert_false(tfs_config_is_key("allow_other"));
}

static void test_config_print_reads_back_the_same(void **state)
{
	struct tfs_config c, d;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	tfs_config_defaults(&c);
	c.mount_max_threads = 3;
	tfs_config_print(&c, f);
	fclose(f);
	assert_int_equal(load(&d, buf, err, sizeof(err)), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_defaults_come_from_the_table),
		cmocka_unit_test(test_config_reads_values_and_deepspeed_notation),
		cmocka_unit_test(test_config_unknown_key_names_line_and_suggests),
		cmocka_unit_test(test_config_unknown_section_suggests),
		cmocka_unit_test(test_config_rejects_malformed_and_out_of_range),
		cmocka_unit_test(test_config_missing_file_is_an_error),
		cmocka_unit_test(test_config_set_overrides_by_name_or_section),
		cmocka_unit_test(test_config_print_reads_back_the_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
