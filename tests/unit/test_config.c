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
	assert_int_equal(c.mount_attr_timeout_ms, 60000);
	for (size_t i = 0; i < n; i++)
		assert_non_null(k[i].doc);
}

static void test_config_reads_values_and_deepspeed_notation(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c,
			      "; comment\n[mount]\ncommit_interval_ms = 2e3\n"
			      "max_threads=4\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.mount_commit_interval_ms, 2000);
	assert_int_equal(c.mount_max_threads, 4);
}

static void test_config_unknown_key_names_line_and_suggests(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    load(&c, "[mount]\nmax_threads = 4\ncommit_intervl_ms = 5\n", err,
		 sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, ":3: "));
	assert_non_null(strstr(err, "commit_intervl_ms"));
	assert_non_null(strstr(err, "did you mean 'commit_interval_ms'"));
}

static void test_config_unknown_section_suggests(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    load(&c, "[mont]\nmax_threads = 4\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: unknown section [mont]"));
	assert_non_null(strstr(err, "[mount]"));
}

static void test_config_rejects_malformed_and_out_of_range(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    load(&c, "[mount]\nmax_threads = lots\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(
	    err, ":2: mount.max_threads = 'lots' is not a whole number"));
	assert_int_equal(
	    load(&c, "[mount]\nmax_threads = 0\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(
	    load(&c, "[mount]\nmax_threads = 4MiB\n", err, sizeof(err)),
	    -EINVAL);
	assert_int_equal(
	    load(&c, "[mount]\nthis line is not ini\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, ":2: "));
}

static void test_config_missing_file_is_an_error(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_load(&c, "/nonexistent/x.ini", err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.ini: cannot open"));
}

/* The nearest setting to a misspelt -o key, with or without section. */
static void test_config_nearest(void **state)
{
	(void)state;
	assert_string_equal(tfs_config_nearest("commit_intervl_ms"),
			    "commit_interval_ms");
	assert_string_equal(tfs_config_nearest("aio.queue_dept"),
			    "queue_depth");
	assert_null(tfs_config_nearest("fsname"));
	assert_null(tfs_config_nearest("allow_other"));
}

/* fopen() opens a directory and reading it fails: that was read as an
 * empty file, the defaults */
static void test_config_directory_is_refused(void **state)
{
	struct tfs_config c;
	char err[512] = "", dir[64];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tfs-test-config-XXXXXX");
	assert_non_null(mkdtemp(dir));
	tfs_config_defaults(&c);
	assert_int_equal(tfs_config_load(&c, dir, err, sizeof(err)), -EISDIR);
	rmdir(dir);
	assert_non_null(strstr(err, "is a directory; give an INI file"));
	assert_non_null(strstr(err, dir));
}

/* A character device reads as text: /dev/null is an empty file (the
 * defaults), /dev/zero a NUL byte on line 1, refused without reading on
 * for ever */
static void test_config_character_devices_read_as_text(void **state)
{
	struct tfs_config c, d;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	tfs_config_defaults(&d);
	assert_int_equal(tfs_config_load(&c, "/dev/null", err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, d.mount_max_threads);
	assert_int_equal(tfs_config_load(&c, "/dev/zero", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "/dev/zero:1: a NUL byte: not a text "
				    "file; give an INI file"));
}

static void test_config_set_overrides_by_name_or_section(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "max_threads", "8", err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 8);
	assert_int_equal(
	    tfs_config_set(&c, "mount.max_threads", "9", err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 9);
	assert_int_equal(
	    tfs_config_set(&c, "max_thread", "9", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "did you mean 'max_threads'"));
	assert_true(tfs_config_is_key("attr_timeout_ms"));
	assert_false(tfs_config_is_key("allow_other"));
}

static void test_config_deepspeed_keys_default_to_deepspeed(void **state)
{
	struct tfs_config c;
	size_t n;
	const struct tfs_cfg_key *k = tfs_config_keys(&n);

	(void)state;
	tfs_config_defaults(&c);
	/* offload_config.py, zero/config.py, swap_tensor/constants.py */
	assert_int_equal(c.offload_param_device, TFS_DEVICE_NONE);
	assert_string_equal(c.offload_param_nvme_path, "");
	assert_int_equal(c.offload_optimizer_device, TFS_DEVICE_NONE);
	assert_int_equal(c.offload_optimizer_buffer_count, 4);
	assert_int_equal(c.offload_optimizer_fast_init, 0);
	assert_int_equal(c.offload_optimizer_pipeline_read, 0);
	assert_int_equal(c.offload_optimizer_pipeline_write, 0);
	assert_true(c.offload_optimizer_ratio == 1.0);
	assert_int_equal(c.zero_optimization_sub_group_size, 1000000000ull);
	assert_int_equal(c.aio_use_gds, 0);
	assert_int_equal(c.flags, 0);
	/* every DeepSpeed-only key says so first */
	for (size_t i = 0; i < n; i++) {
		if (k[i].use == TFS_CFG_DS)
			assert_memory_equal(k[i].doc,
					    "DeepSpeed only: tensorfs "
					    "reads it for tensorfs-plan",
					    51);
		else
			assert_null(strstr(k[i].doc, "DeepSpeed only"));
	}
	assert_non_null(tfs_config_key("zero_optimization", "sub_group_size"));
	assert_null(tfs_config_key("offload_optimizer", "buffer_size"));
}

static void test_config_reads_every_deepspeed_key(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c,
			      "[offload_param]\n"
			      "device = nvme\n"
			      "nvme_path = /local_nvme\n"
			      "pin_memory = true\n"
			      "buffer_count = 5\n"
			      "buffer_size = 1e8\n"
			      "max_in_cpu = 1e9\n"
			      "[offload_optimizer]\n"
			      "device = NVMe\n"
			      "nvme_path = /local_nvme\n"
			      "pin_memory = yes\n"
			      "buffer_count = 8\n"
			      "fast_init = off\n"
			      "pipeline_read = on\n"
			      "pipeline_write = 1\n"
			      "ratio = 0.3\n"
			      "[zero_optimization]\n"
			      "sub_group_size = 1.5e9\n"
			      "[aio]\n"
			      "block_size = 262144\n"
			      "queue_depth = 32\n"
			      "intra_op_parallelism = 2\n"
			      "single_submit = false\n"
			      "overlap_events = true\n"
			      "use_gds = no\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.offload_param_device, TFS_DEVICE_NVME);
	assert_string_equal(c.offload_param_nvme_path, "/local_nvme");
	assert_int_equal(c.offload_param_pin_memory, 1);
	assert_int_equal(c.offload_optimizer_device, TFS_DEVICE_NVME);
	assert_int_equal(c.offload_optimizer_pin_memory, 1);
	assert_int_equal(c.offload_optimizer_buffer_count, 8);
	assert_int_equal(c.offload_optimizer_fast_init, 0);
	assert_int_equal(c.offload_optimizer_pipeline_read, 1);
	assert_int_equal(c.offload_optimizer_pipeline_write, 1);
	assert_true(c.offload_optimizer_ratio == 0.3);
	assert_int_equal(c.zero_optimization_sub_group_size, 1500000000ull);
	assert_int_equal(c.aio_block_size, 262144);
	assert_int_equal(c.aio_queue_depth, 32);
	assert_int_equal(c.aio_intra_op_parallelism, 2);
	assert_int_equal(c.aio_use_gds, 0);
	assert_string_equal(c.warnings, "");
}

static void test_config_numbers_in_deepspeed_notation_and_suffixes(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	/* DeepSpeed notation, whole values only */
	assert_int_equal(load(&c,
			      "[offload_param]\nbuffer_size = 5e8\n"
			      "max_in_cpu = 1.5e9\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.offload_param_buffer_size, 500000000ull);
	assert_int_equal(c.offload_param_max_in_cpu, 1500000000ull);
	assert_int_equal(load(&c, "[offload_param]\nbuffer_size = 1.5e0\n", err,
			      sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2: offload_param.buffer_size = '1.5e0' "
				    "is not a number of elements"));
	/* a byte suffix makes an element count bytes: K M G T, KiB..TiB */
	assert_int_equal(load(&c,
			      "[offload_param]\nbuffer_size = 256MiB\n"
			      "max_in_cpu = 2T\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.offload_param_buffer_size,
			 TFS_CFG_BYTES | (256ull << 20));
	assert_int_equal(c.offload_param_max_in_cpu,
			 TFS_CFG_BYTES | (2ull << 40));
	assert_int_equal(tfs_config_cache_bytes(&c), 2ull << 40);
	assert_int_equal(load(&c,
			      "[offload_param]\nmax_in_cpu = 64K\n"
			      "[aio]\nblock_size = 4KiB\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.offload_param_max_in_cpu, TFS_CFG_BYTES | 65536);
	assert_int_equal(c.aio_block_size, 4096);
	assert_int_equal(load(&c, "[aio]\nblock_size = 1G\n", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2: aio.block_size = '1G' is out of "
				    "range; it must be between 4096 and "));
	/* counts take no unit, and must fit */
	assert_int_equal(load(&c, "[zero_optimization]\nsub_group_size = 1G\n",
			      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "is not a whole number (e.g. 8 or 1e8)"));
	assert_int_equal(load(&c,
			      "[zero_optimization]\nsub_group_size = 1e30\n",
			      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "sub_group_size = '1e30' is too large"));
	/* element counts in bytes read back as elements of dtype */
	assert_int_equal(load(&c,
			      "[offload_param]\ndtype = fp32\n"
			      "buffer_size = 4MiB\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_elems(&c, c.offload_param_buffer_size),
			 1048576);
}

static void test_config_booleans_in_every_spelling(void **state)
{
	static const char *const yes[] = { "true", "TRUE", "yes", "On", "1" };
	static const char *const no[] = { "false", "False", "no", "OFF", "0" };
	struct tfs_config c;
	char err[512] = "", text[128];

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		snprintf(text, sizeof(text),
			 "[offload_optimizer]\n"
			 "fast_init = %s\n",
			 yes[i]);
		assert_int_equal(load(&c, text, err, sizeof(err)), 0);
		assert_int_equal(c.offload_optimizer_fast_init, 1);
		snprintf(text, sizeof(text),
			 "[offload_optimizer]\n"
			 "fast_init = %s\n",
			 no[i]);
		assert_int_equal(load(&c, text, err, sizeof(err)), 0);
		assert_int_equal(c.offload_optimizer_fast_init, 0);
	}
	assert_int_equal(load(&c, "[aio]\nuse_gds = maybe\n", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2: aio.use_gds = 'maybe' is not a "
				    "boolean; use true or false"));
}

static void test_config_enum_string_and_fraction_values(void **state)
{
	struct tfs_config c;
	char err[512] = "", text[700];

	(void)state;
	assert_int_equal(
	    load(&c, "[offload_param]\ndevice = disk\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err,
			       ":2: offload_param.device = 'disk' is not "
			       "one of its values; use none, cpu or nvme"));
	assert_int_equal(
	    load(&c, "[offload_optimizer]\nratio = 1.5\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "offload_optimizer.ratio = '1.5' is out of "
				    "range; it must be between 0 and 1"));
	assert_int_equal(
	    load(&c, "[offload_optimizer]\nratio = most\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "offload_optimizer.ratio = 'most' is not a "
				    "number"));
	assert_int_equal(
	    load(&c, "[offload_optimizer]\nratio = nan\n", err, sizeof(err)),
	    -EINVAL);
	/* a path as long as an INI line allows (inih reads 199 characters
	 * a line), one longer, and one longer than a value may be */
	snprintf(text, sizeof(text), "[offload_param]\nnvme_path = /%0*d\n",
		 199 - 13, 0);
	assert_int_equal(load(&c, text, err, sizeof(err)), 0);
	assert_int_equal(strlen(c.offload_param_nvme_path), 199 - 12);
	snprintf(text, sizeof(text),
		 "[offload_param]\nnvme_path = /%0*d\n"
		 "buffer_count = 0\n",
		 199 - 12, 0);
	assert_int_equal(load(&c, text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: line longer than 199 characters"));
	memset(text, 'x', TFS_CFG_STR_MAX);
	text[TFS_CFG_STR_MAX] = '\0';
	assert_int_equal(tfs_config_set(&c, "offload_param.nvme_path", text,
					err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "offload_param.nvme_path is longer than "
				    "511 characters"));
}

static void test_config_key_in_the_wrong_section_names_the_right(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	/* DeepSpeed's optimizer offload has no buffer_size */
	assert_int_equal(load(&c,
			      "[offload_optimizer]\nbuffer_count = 4\n"
			      "buffer_size = 1e8\n",
			      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":3: unknown key 'buffer_size' in "
				    "[offload_optimizer]; it belongs in "
				    "[offload_param]"));
	assert_int_equal(load(&c, "[offload_optimizer]\nsub_group_size = 1e9\n",
			      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "it belongs in [zero_optimization]"));
	/* a misspelling is matched within its section first */
	assert_int_equal(load(&c, "[offload_optimizer]\npipline_read = true\n",
			      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "unknown key 'pipline_read' in "
				    "[offload_optimizer]; did you mean "
				    "'pipeline_read'?"));
	assert_int_equal(
	    load(&c, "[aio]\nsub_group_sise = 1\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "did you mean 'sub_group_size' in "
				    "[zero_optimization]?"));
	assert_int_equal(
	    load(&c, "[offload_optimiser]\ndevice = nvme\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, ":2: unknown section [offload_optimiser]; "
				    "did you mean [offload_optimizer]?"));
}

static void test_config_thread_count_warns_with_file_and_line(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c,
			      "; DeepSpeed's docs still show it\n\n[aio]\n"
			      "thread_count = 4\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.aio_intra_op_parallelism, 4);
	assert_true(c.flags & TFS_CFG_F_THREAD_COUNT);
	assert_non_null(strstr(c.warnings, ":4: [aio] thread_count is the old "
					   "name of intra_op_parallelism"));
	tfs_config_defaults(&c);
	assert_int_equal(
	    tfs_config_set(&c, "thread_count", "3", err, sizeof(err)), 0);
	assert_int_equal(c.aio_intra_op_parallelism, 3);
	assert_non_null(strstr(c.warnings, "-o thread_count: thread_count is "
					   "the old name"));
	assert_true(tfs_config_is_key("thread_count"));
}

static void test_config_contradiction_names_the_later_line(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load(&c, "[aio]\nqueue_depth = 8\nblock_size = 6000\n",
			      err, sizeof(err)),
			 -EDOM);
	assert_non_null(strstr(err, ":3: aio.block_size = 6000 from "));
	assert_non_null(strstr(err, ":3 is not a multiple of 4 KiB (4096)"));
	/* the whole file was read */
	assert_int_equal(c.aio_queue_depth, 8);
	assert_int_equal(load(&c,
			      "[offload_param]\nbuffer_count = 1\n"
			      "buffer_size = 1MiB\n\n[aio]\n"
			      "block_size = 1MiB\n",
			      err, sizeof(err)),
			 -EDOM);
	assert_non_null(strstr(err, ":6: the write-back pool, buffer_count x "
				    "buffer_size = 1048576 bytes, holds fewer "
				    "than two blocks of aio.block_size"));
	/* the same from defaults and -o is tfs_config_validate()'s */
	tfs_config_defaults(&c);
	assert_int_equal(tfs_config_validate(&c, err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_config_set(&c, "buffer_count", "1", err, sizeof(err)), 0);
	assert_int_equal(
	    tfs_config_set(&c, "buffer_size", "1MiB", err, sizeof(err)), 0);
	assert_int_equal(tfs_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raise buffer_size or lower block_size"));
	assert_int_equal(
	    tfs_config_set(&c, "block_size", "8200", err, sizeof(err)), 0);
	assert_int_equal(tfs_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "aio.block_size = 8200 from -o "
				    "block_size=8200 is not a multiple"));
}

/* Regression: -o offload_param.buffer_size=1 was blamed on the ini file
 * read before it; a contradiction names each key, its value and where
 * that came from. */
static void
test_config_contradiction_names_where_each_value_came_from(void **state)
{
	static const char ini[] = "[offload_param]\nbuffer_count = 4\n";
	struct tfs_config c;
	char err[1024] = "", buf[256];

	(void)state;
	tfs_config_defaults(&c);
	assert_int_equal(tfs_config_load_buffer(&c, "site.ini", ini,
						sizeof(ini) - 1, err,
						sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(&c, "offload_param.buffer_size", "1",
					err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "offload_param.buffer_size = 1 from -o "
				    "offload_param.buffer_size=1"));
	assert_non_null(strstr(err, "offload_param.buffer_count = 4 from "
				    "site.ini:2"));
	assert_non_null(strstr(err, "aio.block_size = 1MiB by default"));
	assert_non_null(strstr(err, "offload_param.dtype = fp16 by default"));
	assert_non_null(strstr(err, "raise buffer_size or lower block_size"));
	/* the origins, one by one */
	assert_string_equal(
	    tfs_config_origin(&c,
			      tfs_config_key("offload_param", "buffer_size"),
			      buf, sizeof(buf)),
	    "-o offload_param.buffer_size=1");
	assert_string_equal(
	    tfs_config_origin(&c,
			      tfs_config_key("offload_param", "buffer_count"),
			      buf, sizeof(buf)),
	    "site.ini:2");
	assert_string_equal(
	    tfs_config_origin(&c, tfs_config_key("aio", "block_size"), buf,
			      sizeof(buf)),
	    "default");
	assert_true(tfs_config_from_set(
	    &c, tfs_config_key("offload_param", "buffer_size")));
	/* a long -o value is cut, not overrun */
	memset(buf, 'a', 200);
	buf[200] = '\0';
	assert_int_equal(tfs_config_set(&c, "log", buf, err, sizeof(err)), 0);
	tfs_config_origin(&c, tfs_config_key("mount", "log"), buf, sizeof(buf));
	assert_int_equal(strlen(buf), 3 + TFS_CFG_FROM_SET_MAX - 1);
	assert_non_null(strstr(buf, "..."));
}

static void test_config_counts_lines_past_long_lines(void **state)
{
	struct tfs_config c;
	char err[512] = "", text[1200];

	(void)state;
	/* inih reads 199 characters a line: a comment of exactly that
	 * much is one line, and the error two lines on is on line 3 */
	snprintf(text, sizeof(text), "; %0197d\n[aio]\nqueue_depth = 0\n", 0);
	assert_int_equal(load(&c, text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":3: aio.queue_depth = '0' is out of "
				    "range"));
	/* one character more and inih would read the rest as a line of its
	 * own; it is refused where it is */
	snprintf(text, sizeof(text), "; %0198d\n[aio]\nqueue_depth = 0\n", 0);
	assert_int_equal(load(&c, text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":1: line longer than 199 characters"));
}

static void test_config_plain_name_means_the_mounts_key(void **state)
{
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&c);
	/* buffer_count is in [offload_param] and [offload_optimizer]; -o
	 * buffer_count=2 is the mount's pool */
	assert_int_equal(
	    tfs_config_set(&c, "buffer_count", "2", err, sizeof(err)), 0);
	assert_int_equal(c.offload_param_buffer_count, 2);
	assert_int_equal(c.offload_optimizer_buffer_count, 4);
	assert_int_equal(
	    tfs_config_set(&c, "pin_memory", "true", err, sizeof(err)), 0);
	assert_int_equal(c.offload_param_pin_memory, 1);
	assert_int_equal(c.offload_optimizer_pin_memory, 0);
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.buffer_count",
					"8", err, sizeof(err)),
			 0);
	assert_int_equal(c.offload_optimizer_buffer_count, 8);
	/* device is DeepSpeed's in both: say which */
	assert_int_equal(tfs_config_set(&c, "device", "nvme", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'device' is in more than one section; "
				    "write section.device"));
	assert_int_equal(
	    tfs_config_set(&c, "offload_param.device", "cpu", err, sizeof(err)),
	    0);
	assert_int_equal(c.offload_param_device, TFS_DEVICE_CPU);
	assert_int_equal(
	    tfs_config_set(&c, "sub_group_size", "1e8", err, sizeof(err)), 0);
	assert_int_equal(c.zero_optimization_sub_group_size, 100000000);
}

static void test_config_formats_each_type_as_the_ini_writes_it(void **state)
{
	struct tfs_config c;
	char err[512] = "", buf[64], *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	tfs_config_defaults(&c);
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("offload_param", "max_in_cpu"),
			      buf, sizeof(buf)),
	    "1e9");
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("aio", "block_size"), buf,
			      sizeof(buf)),
	    "1MiB");
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("offload_param", "device"),
			      buf, sizeof(buf)),
	    "none");
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("offload_optimizer", "ratio"),
			      buf, sizeof(buf)),
	    "1");
	assert_int_equal(
	    tfs_config_set(&c, "sub_group_size", "8.75e9", err, sizeof(err)),
	    0);
	assert_int_equal(tfs_config_set(&c, "offload_optimizer.ratio", "0.3",
					err, sizeof(err)),
			 0);
	assert_int_equal(tfs_config_set(&c, "offload_param.device", "nvme", err,
					sizeof(err)),
			 0);
	assert_int_equal(
	    tfs_config_set(&c, "max_in_cpu", "16GiB", err, sizeof(err)), 0);
	assert_string_equal(
	    tfs_config_format(
		&c, tfs_config_key("zero_optimization", "sub_group_size"), buf,
		sizeof(buf)),
	    "8.75e9");
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("offload_optimizer", "ratio"),
			      buf, sizeof(buf)),
	    "0.3");
	assert_string_equal(
	    tfs_config_format(&c, tfs_config_key("offload_param", "max_in_cpu"),
			      buf, sizeof(buf)),
	    "16GiB");
	f = open_memstream(&out, &len);
	tfs_config_print_changed(&c, f);
	fclose(f);
	assert_string_equal(out, "[offload_param]\ndevice = nvme\n"
				 "max_in_cpu = 16GiB\n\n[offload_optimizer]\n"
				 "ratio = 0.3\n\n[zero_optimization]\n"
				 "sub_group_size = 8.75e9\n");
	free(out);
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
	c.offload_param_device = TFS_DEVICE_NVME;
	strcpy(c.offload_param_nvme_path, "/local nvme/with spaces");
	c.offload_optimizer_ratio = 0.25;
	c.zero_optimization_sub_group_size = 1500000000;
	tfs_config_print(&c, f);
	fclose(f);
	assert_int_equal(load(&d, buf, err, sizeof(err)), 0);
	/* the values; where they came from differs (set here, read there) */
	assert_memory_equal(&c, &d, offsetof(struct tfs_config, from_line));
	free(buf);
}

/* ===== loading from a buffer ===== */

static int load_buffer(struct tfs_config *c, const char *buf, size_t len,
		       char *err, size_t n)
{
	tfs_config_defaults(c);
	return tfs_config_load_buffer(c, "buf.ini", buf, len, err, n);
}

/* A buffer reads as a file of the same bytes: same settings, same
 * message but for the name. */
static void test_config_buffer_reads_as_a_file_of_its_bytes(void **state)
{
	static const char *const texts[] = {
		"; comment\n[mount]\ncommit_interval_ms = 2e3\nmax_threads=4\n",
		"[mount]\nmax_threads = 4\ncommit_intervl_ms = 5\n",
		"[mont]\nmax_threads = 4\n",
		"[mount]\nthis line is not ini\n",
		"[aio]\nqueue_depth = 8\nblock_size = 6000\n",
		"[aio]\nthread_count = 2\n",
		"",
		"[offload_param]\nbuffer_size = 1e7",
	};
	struct tfs_config a, b;
	char ea[512], eb[512], *colon;
	const struct tfs_cfg_key *keys;
	char va[TFS_CFG_STR_MAX], vb[TFS_CFG_STR_MAX];
	size_t nkeys;
	int ra, rb;

	(void)state;
	keys = tfs_config_keys(&nkeys);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		ea[0] = eb[0] = '\0';
		ra = load(&a, texts[i], ea, sizeof(ea));
		rb =
		    load_buffer(&b, texts[i], strlen(texts[i]), eb, sizeof(eb));
		assert_int_equal(ra, rb);
		if (ra) {
			/* "FILE:LINE: ... from FILE:LINE ..." vs
			 * "buf.ini:LINE: ... from buf.ini:LINE ..." */
			char want[1024], *at, *w = want;
			size_t flen;

			colon = strchr(ea, ':');
			assert_non_null(colon);
			flen = (size_t)(colon - ea);
			for (at = ea; *at;) {
				if (!strncmp(at, ea, flen) && at[flen] == ':') {
					w += sprintf(w, "buf.ini");
					at += flen;
				} else {
					*w++ = *at++;
				}
			}
			*w = '\0';
			assert_string_equal(want, eb);
		}
		for (size_t k = 0; k < nkeys; k++)
			assert_string_equal(
			    tfs_config_format(&a, &keys[k], va, sizeof(va)),
			    tfs_config_format(&b, &keys[k], vb, sizeof(vb)));
		assert_int_equal(a.flags, b.flags);
	}
}

static void test_config_buffer_errors_name_it_and_the_line(void **state)
{
	static const char text[] = "[mount]\nmax_threads = lots\n";
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(load_buffer(&c, text, strlen(text), err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "buf.ini:2: mount.max_threads = 'lots' is "
				 "not a whole number (e.g. 8 or 1e8)");
}

/* Only len bytes are read: no NUL is needed, and what follows is not
 * seen. */
static void test_config_buffer_reads_only_len_bytes(void **state)
{
	static const char text[] = "[mount]\nmax_threads = 4\nbogus";
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    load_buffer(&c, text, strlen(text) - 5, err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 4);
	/* nor a newline at the end of the last line */
	assert_int_equal(
	    load_buffer(&c, text, strlen(text) - 6, err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, 4);
	assert_int_equal(load_buffer(&c, text, strlen(text), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "buf.ini:3: "));
}

static void test_config_empty_buffer_keeps_the_defaults(void **state)
{
	struct tfs_config c, d;
	char err[512] = "";

	(void)state;
	tfs_config_defaults(&d);
	assert_int_equal(load_buffer(&c, "", 0, err, sizeof(err)), 0);
	assert_int_equal(c.mount_max_threads, d.mount_max_threads);
	assert_int_equal(c.offload_param_buffer_size,
			 d.offload_param_buffer_size);
	assert_string_equal(c.warnings, "");
}

/* A NUL byte is no INI text: an error naming its line, not a line cut
 * short (and /dev/zero, all NULs, ends at once). */
static void test_config_nul_byte_is_not_text(void **state)
{
	static const char text[] = "[mount]\nmax_threads = 4\0junk\n";
	struct tfs_config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    load_buffer(&c, text, sizeof(text) - 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "buf.ini:2: a NUL byte: not a text file"));
}

static void test_config_buffer_long_line_and_contradiction(void **state)
{
	struct tfs_config c;
	char err[512] = "", text[1200];

	(void)state;
	snprintf(text, sizeof(text), "; %0198d\n[aio]\nqueue_depth = 0\n", 0);
	assert_int_equal(load_buffer(&c, text, strlen(text), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "buf.ini:1: line longer than 199 "
				    "characters"));
	snprintf(text, sizeof(text),
		 "[aio]\nqueue_depth = 8\nblock_size = "
		 "6000\n");
	assert_int_equal(load_buffer(&c, text, strlen(text), err, sizeof(err)),
			 -EDOM);
	assert_non_null(strstr(err, "buf.ini:3: aio.block_size = 6000 from "
				    "buf.ini:3 is not a multiple of 4 KiB "
				    "(4096)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_defaults_come_from_the_table),
		cmocka_unit_test(
		    test_config_reads_values_and_deepspeed_notation),
		cmocka_unit_test(
		    test_config_unknown_key_names_line_and_suggests),
		cmocka_unit_test(test_config_unknown_section_suggests),
		cmocka_unit_test(
		    test_config_rejects_malformed_and_out_of_range),
		cmocka_unit_test(test_config_missing_file_is_an_error),
		cmocka_unit_test(test_config_directory_is_refused),
		cmocka_unit_test(test_config_character_devices_read_as_text),
		cmocka_unit_test(test_config_nearest),
		cmocka_unit_test(test_config_set_overrides_by_name_or_section),
		cmocka_unit_test(
		    test_config_deepspeed_keys_default_to_deepspeed),
		cmocka_unit_test(test_config_reads_every_deepspeed_key),
		cmocka_unit_test(
		    test_config_numbers_in_deepspeed_notation_and_suffixes),
		cmocka_unit_test(test_config_booleans_in_every_spelling),
		cmocka_unit_test(test_config_enum_string_and_fraction_values),
		cmocka_unit_test(
		    test_config_key_in_the_wrong_section_names_the_right),
		cmocka_unit_test(
		    test_config_thread_count_warns_with_file_and_line),
		cmocka_unit_test(
		    test_config_contradiction_names_the_later_line),
		cmocka_unit_test(test_config_counts_lines_past_long_lines),
		cmocka_unit_test(test_config_plain_name_means_the_mounts_key),
		cmocka_unit_test(
		    test_config_formats_each_type_as_the_ini_writes_it),
		cmocka_unit_test(test_config_print_reads_back_the_same),
		cmocka_unit_test(
		    test_config_buffer_reads_as_a_file_of_its_bytes),
		cmocka_unit_test(
		    test_config_buffer_errors_name_it_and_the_line),
		cmocka_unit_test(test_config_buffer_reads_only_len_bytes),
		cmocka_unit_test(test_config_empty_buffer_keeps_the_defaults),
		cmocka_unit_test(test_config_nul_byte_is_not_text),
		cmocka_unit_test(
		    test_config_buffer_long_line_and_contradiction),
		cmocka_unit_test(
		    test_config_contradiction_names_where_each_value_came_from),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
