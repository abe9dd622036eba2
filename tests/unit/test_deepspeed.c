/*
 * test_deepspeed.c: the ds_config.json reader (lib/plan/deepspeed.c).
 * Description: published DeepSpeed and Hugging Face configs read into the
 * same settings as tensorfs-plan prints; malformed JSON, wrong types and
 * "auto" values become errors, problems or notes as the tool reports
 * them; a file that is not a DeepSpeed config (a model's config.json, a
 * JSON object of other keys), a stage that is not 0 to 3 and a value that
 * cannot be used (a negative size, a device DeepSpeed does not know) are
 * errors naming the file and the key, every one of them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "deepspeed.h"
#include "plan.h"

#define DATA TFS_TEST_DATA "/deepspeed/"

struct fixture {
	struct tfs_config c;
	struct tfs_plan p;
	struct tfs_deepspeed ds;
	char err[1024];
};

static struct fixture *fixture_new(void)
{
	struct fixture *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	tfs_config_defaults(&x->c);
	tfs_plan_init(&x->p);
	x->ds.name = "ds.json";
	x->ds.c = &x->c;
	x->ds.p = &x->p;
	return x;
}

static int setup(void **state)
{
	*state = fixture_new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static int read_str(struct fixture *x, const char *json)
{
	x->err[0] = '\0';
	return tfs_deepspeed_read(&x->ds, json, strlen(json), x->err,
				  sizeof(x->err));
}

static int read_path(struct fixture *x, const char *path)
{
	FILE *f = fopen(path, "r");
	int rc;

	assert_non_null(f);
	x->ds.name = path;
	rc = tfs_deepspeed_read_file(&x->ds, f, x->err, sizeof(x->err));
	fclose(f);
	return rc;
}

/* The whole file in a malloc'd buffer; *len gets its size. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static const char *setting(const struct fixture *x, const char *sec,
			   const char *name, char *buf, size_t len)
{
	const struct tfs_cfg_key *k = tfs_config_key(sec, name);

	assert_non_null(k);
	return tfs_config_format(&x->c, k, buf, len);
}

static void assert_setting(const struct fixture *x, const char *sec,
			   const char *name, const char *want)
{
	char buf[TFS_CFG_STR_MAX];

	assert_string_equal(setting(x, sec, name, buf, sizeof(buf)), want);
}

/* The first problem whose key is key, or NULL. */
static const struct tfs_plan_problem *problem(const struct fixture *x,
					      const char *key)
{
	for (size_t i = 0; i < x->p.nproblems; i++)
		if (!strcmp(x->p.problems[i].key, key))
			return &x->p.problems[i];
	return NULL;
}

/* The first problem whose text has s, or NULL. */
static const struct tfs_plan_problem *problem_with(const struct fixture *x,
						   const char *s)
{
	for (size_t i = 0; i < x->p.nproblems; i++)
		if (strstr(x->p.problems[i].text, s))
			return &x->p.problems[i];
	return NULL;
}

static const struct tfs_deepspeed_note *note_of(const struct fixture *x,
						const char *key)
{
	for (size_t i = 0; i < x->ds.nnotes; i++)
		if (!strcmp(x->ds.notes[i].key, key))
			return &x->ds.notes[i];
	return NULL;
}

/* ===== published configs ===== */

static void test_deepspeed_reads_config_json_example(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_path(x, DATA "deepspeed-config-json-nvme.json"),
			 0);
	assert_int_equal(x->ds.stage, 3);
	assert_int_equal(x->p.nproblems, 0);
	assert_int_equal(x->ds.nnotes, 0);
	assert_setting(x, "offload_param", "device", "nvme");
	assert_setting(x, "offload_param", "nvme_path", "/local_nvme");
	assert_setting(x, "offload_param", "pin_memory", "true");
	assert_setting(x, "offload_param", "buffer_count", "5");
	assert_setting(x, "offload_param", "buffer_size", "1e8");
	assert_setting(x, "offload_param", "max_in_cpu", "1e9");
	assert_setting(x, "offload_param", "dtype", "bf16");
	assert_setting(x, "offload_optimizer", "device", "nvme");
	assert_setting(x, "offload_optimizer", "buffer_count", "4");
	assert_setting(x, "zero_optimization", "sub_group_size", "1e9");
	assert_setting(x, "aio", "block_size", "1MiB");
	assert_setting(x, "aio", "queue_depth", "8");
}

/* The buffer and the stream reader agree, key by key. */
static void test_deepspeed_buffer_and_file_read_alike(void **state)
{
	static const char *const files[] = {
		"deepspeed-config-json-nvme.json",
		"deepspeed-zero3-infinity-nvme.json",
		"hf-zero3-nvme-auto.json",
		"thread-count-small-buffer.json",
	};
	const struct tfs_cfg_key *keys;
	char path[512], a[TFS_CFG_STR_MAX], b[TFS_CFG_STR_MAX];
	struct fixture *x, *y;
	size_t nkeys, len;
	char *buf;

	(void)state;
	keys = tfs_config_keys(&nkeys);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", DATA, files[i]);
		x = fixture_new();
		y = fixture_new();
		assert_non_null(x);
		assert_non_null(y);
		assert_int_equal(read_path(y, path), 0);
		buf = slurp(path, &len);
		x->ds.name = path;
		assert_int_equal(tfs_deepspeed_read(&x->ds, buf, len, x->err,
						    sizeof(x->err)),
				 0);
		free(buf);
		assert_int_equal(x->ds.stage, y->ds.stage);
		assert_int_equal(x->ds.nnotes, y->ds.nnotes);
		for (size_t n = 0; n < x->ds.nnotes; n++)
			assert_string_equal(x->ds.notes[n].how,
					    y->ds.notes[n].how);
		assert_int_equal(x->p.nproblems, y->p.nproblems);
		for (size_t n = 0; n < x->p.nproblems; n++)
			assert_string_equal(x->p.problems[n].text,
					    y->p.problems[n].text);
		for (size_t k = 0; k < nkeys; k++)
			assert_string_equal(
			    tfs_config_format(&x->c, &keys[k], a, sizeof(a)),
			    tfs_config_format(&y->c, &keys[k], b, sizeof(b)));
		free(x);
		free(y);
	}
}

/* Hugging Face's NVMe example: "auto" everywhere, and aio inside
 * zero_optimization, which DeepSpeed rejects. */
static void
test_deepspeed_hf_example_notes_auto_and_fails_nested_aio(void **state)
{
	struct fixture *x = *state;
	const struct tfs_deepspeed_note *n;
	const struct tfs_plan_problem *pr;

	x->ds.hidden = 4096;
	assert_int_equal(read_path(x, DATA "hf-zero3-nvme-auto.json"), 0);
	assert_int_equal(x->ds.stage, 3);
	pr = problem(x, "aio");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_FAIL);
	assert_non_null(strstr(pr->text, "move \"aio\" to the top level"));
	assert_int_equal(x->p.severity, TFS_PLAN_FAIL);
	/* the nested aio is not read: the defaults stay */
	assert_setting(x, "aio", "block_size", "1MiB");

	n = note_of(x, "zero_optimization.reduce_bucket_size");
	assert_non_null(n);
	assert_string_equal(n->value, "16777216"); /* 4096 x 4096 */
	n = note_of(x, "zero_optimization.stage3_prefetch_bucket_size");
	assert_non_null(n);
	assert_string_equal(n->value, "15099494"); /* 0.9 x 4096^2 */
	n = note_of(x, "zero_optimization.stage3_param_persistence_threshold");
	assert_non_null(n);
	assert_string_equal(n->value, "40960");
	/* fp16.enabled "auto": a 2-byte dtype assumed, bf16 */
	n = note_of(x, "fp16.enabled");
	assert_non_null(n);
	assert_string_equal(n->value, "bf16 assumed");
	assert_setting(x, "offload_param", "dtype", "bf16");
}

static void test_deepspeed_auto_without_model_names_formula(void **state)
{
	struct fixture *x = *state;
	const struct tfs_deepspeed_note *n;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"reduce_bucket_size\": \"auto\", "
				     "\"stage3_max_live_parameters\": "
				     "\"auto\"}}"),
			 0);
	n = note_of(x, "zero_optimization.reduce_bucket_size");
	assert_non_null(n);
	assert_string_equal(n->value, "hidden_size-based");
	assert_non_null(strstr(n->how, "give --model to see it"));
	assert_non_null(strstr(n->how, "the default 5e8"));
	n = note_of(x, "zero_optimization.stage3_max_live_parameters");
	assert_non_null(n);
	assert_string_equal(n->value, "1e9");
	assert_int_equal(x->p.nproblems, 0);
}

/* ===== not JSON, not an object ===== */

static void test_deepspeed_invalid_json_says_line_and_column(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\n  \"zero_optimization\": {,}\n}"),
			 -EINVAL);
	assert_non_null(strstr(x->err, "ds.json:2:"));
	assert_non_null(strstr(x->err, "invalid JSON"));
	assert_non_null(strstr(x->err, "fix the file"));
	assert_int_equal(x->p.nproblems, 0);
}

static void test_deepspeed_empty_input_is_invalid_json(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, ""), -EINVAL);
	assert_string_equal(x->err, "ds.json:1:0: invalid JSON: '[' or '{' "
				    "expected near end of file; fix the file");
}

static void test_deepspeed_top_level_array_is_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "[{\"zero_optimization\": {}}]"), -EINVAL);
	assert_string_equal(x->err, "ds.json: the top level is not a JSON "
				    "object; give a DeepSpeed config");
}

static void test_deepspeed_trailing_bytes_are_invalid_json(void **state)
{
	struct fixture *x = *state;
	static const char buf[] = "{\"a\": 1}\0junk";

	assert_int_equal(tfs_deepspeed_read(&x->ds, buf, sizeof(buf) - 1,
					    x->err, sizeof(x->err)),
			 -EINVAL);
	assert_non_null(strstr(x->err, "invalid JSON"));
}

/* Current behaviour: a directory opens, reads as an empty file and is
 * reported as invalid JSON, not as "is a directory". */
static void test_deepspeed_directory_reads_as_empty(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_path(x, TFS_TEST_DATA "/deepspeed"), -EINVAL);
	assert_non_null(strstr(x->err, ":1:0: invalid JSON: '[' or '{' "
				       "expected near end of file"));
}

/* ===== wrong types ===== */

static void test_deepspeed_zero_optimization_not_an_object(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"zero_optimization\": 5}"), -EINVAL);
	assert_string_equal(x->err, "ds.json: zero_optimization is not an "
				    "object; DeepSpeed rejects it; write "
				    "{\"stage\": 3, ...}");
	assert_int_equal(read_str(x, "{\"zero_optimization\": null}"), -EINVAL);
	assert_non_null(strstr(x->err, "is not an object"));
}

static void test_deepspeed_zero_optimization_true_is_stage_1(void **state)
{
	struct fixture *x = *state;
	const struct tfs_plan_problem *pr;

	assert_int_equal(read_str(x, "{\"zero_optimization\": true}"), 0);
	assert_int_equal(x->ds.stage, 1);
	pr = problem(x, "zero_optimization.stage");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_WARN);
	assert_non_null(strstr(pr->text, "deprecated form"));
}

static void test_deepspeed_offload_not_an_object(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
			"\"offload_optimizer\": 7, \"offload_param\": null}}"),
	    -EINVAL);
	/* null is DeepSpeed's None, the default: not refused */
	assert_string_equal(x->err, "ds.json: zero_optimization."
				    "offload_optimizer is not an object; "
				    "DeepSpeed's config rejects it; write "
				    "{\"device\": \"nvme\", ...}");
}

static void test_deepspeed_array_value_is_not_a_single_value(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"buffer_count\": "
				     "[5], \"pin_memory\": {}}}}"),
			 -EINVAL);
	assert_string_equal(x->err,
			    "ds.json: zero_optimization.offload_param."
			    "buffer_count is not a single value; DeepSpeed's "
			    "config rejects it; write a number\n"
			    "ds.json: zero_optimization.offload_param."
			    "pin_memory is not a single value; DeepSpeed's "
			    "config rejects it; write a true or false");
}

/* A value the settings refuse says why in the JSON's terms: the path
 * and the value as written, not the INI's "section.name = 'value'". */
static void test_deepspeed_bad_value_fails_with_config_message(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"buffer_size\": "
				     "0}}}"),
			 -EINVAL);
	assert_string_equal(x->err, "ds.json: zero_optimization.offload_param."
				    "buffer_size: 0 is out of range; it must "
				    "be between 1 and 4611686018427387903 "
				    "elements");
	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"pin_memory\": "
				     "\"maybe\"}}}"),
			 -EINVAL);
	assert_string_equal(x->err, "ds.json: zero_optimization.offload_param."
				    "pin_memory: \"maybe\" is not a boolean; "
				    "use true or false");
}

/* Regression: a negative buffer_size was a problem of a plan made with
 * the default, 1e8, as if the file had said nothing. */
static void test_negative_buffer_size_is_refused(void **state)
{
	static const char *const values[] = { "-5", "\"-5\"", "-5.0" };
	static const char *const shown[] = { "-5", "\"-5\"", "-5" };
	struct fixture *x = *state;
	char json[256], want[256];

	for (size_t i = 0; i < 3; i++) {
		snprintf(json, sizeof(json),
			 "{\"zero_optimization\": {\"stage\": 3, "
			 "\"offload_param\": {\"device\": \"nvme\", "
			 "\"buffer_size\": %s}}}",
			 values[i]);
		tfs_plan_init(&x->p);
		assert_int_equal(read_str(x, json), -EINVAL);
		snprintf(want, sizeof(want),
			 "ds.json: zero_optimization.offload_param."
			 "buffer_size: %s is not a size above 0; DeepSpeed's "
			 "default is 1e8",
			 shown[i]);
		assert_string_equal(x->err, want);
		assert_int_equal(x->p.nproblems, 0);
	}
}

/* Every negative count is refused, with the least it may be. */
static void test_deepspeed_negative_counts_are_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
			"\"offload_optimizer\": {\"buffer_count\": -1}, "
			"\"sub_group_size\": -1e9}, "
			"\"aio\": {\"queue_depth\": -8}}"),
	    -EINVAL);
	assert_string_equal(
	    x->err,
	    "ds.json: zero_optimization.offload_optimizer.buffer_count: -1 "
	    "is not a whole number of 0 or more; DeepSpeed's default is 4\n"
	    "ds.json: zero_optimization.sub_group_size: -1000000000 is not a "
	    "whole number of 0 or more; DeepSpeed's default is 1e9\n"
	    "ds.json: aio.queue_depth: -8 is not a whole number above 0; "
	    "DeepSpeed's default is 8");
}

/* Regression: device "gpu" was a problem of a plan made with device
 * none.  DeepSpeed's OffloadDeviceEnum has none, cpu and nvme only. */
static void test_offload_device_gpu_is_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"device\": "
				     "\"gpu\"}, \"offload_optimizer\": "
				     "{\"device\": \"disk\"}}}"),
			 -EINVAL);
	assert_string_equal(x->err,
			    "ds.json: zero_optimization.offload_param.device: "
			    "\"gpu\" is not a device DeepSpeed offloads to; "
			    "write \"nvme\", \"cpu\" or \"none\" (none "
			    "keeps it on the GPU)\n"
			    "ds.json: zero_optimization.offload_optimizer."
			    "device: \"disk\" is not a device DeepSpeed "
			    "offloads to; write \"nvme\", \"cpu\" or "
			    "\"none\" (none keeps it on the GPU)");
	assert_int_equal(x->p.nproblems, 0);
}

/* DeepSpeed's enum is case-sensitive, and not a number; the INI's
 * reading is not, so the JSON is checked against DeepSpeed's. */
static void test_deepspeed_device_is_lower_case_and_a_string(void **state)
{
	static const char *const ok[] = { "none", "cpu", "nvme" };
	struct fixture *x = *state;
	char json[160];

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"device\": "
				     "\"NVMe\"}, \"offload_optimizer\": "
				     "{\"device\": 2}}}"),
			 -EINVAL);
	assert_string_equal(x->err,
			    "ds.json: zero_optimization.offload_param.device: "
			    "\"NVMe\" is not a device DeepSpeed offloads to: "
			    "its names are lower case; write \"nvme\"\n"
			    "ds.json: zero_optimization.offload_optimizer."
			    "device: 2 is not a device DeepSpeed offloads to; "
			    "write \"nvme\", \"cpu\" or \"none\" (none "
			    "keeps it on the GPU)");
	for (size_t i = 0; i < 3; i++) {
		snprintf(json, sizeof(json),
			 "{\"zero_optimization\": {\"stage\": 3, "
			 "\"offload_param\": {\"device\": \"%s\"}}}",
			 ok[i]);
		assert_int_equal(read_str(x, json), 0);
		assert_setting(x, "offload_param", "device", ok[i]);
	}
}

/* A path longer than a setting holds is refused, not cut short. */
static void test_deepspeed_overlong_nvme_path_is_refused(void **state)
{
	struct fixture *x = *state;
	char json[TFS_CFG_STR_MAX + 128], path[TFS_CFG_STR_MAX + 1];

	memset(path, 'a', TFS_CFG_STR_MAX);
	path[0] = '/';
	path[TFS_CFG_STR_MAX] = '\0';
	snprintf(json, sizeof(json),
		 "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": "
		 "{\"nvme_path\": \"%s\"}}}",
		 path);
	assert_int_equal(read_str(x, json), -EINVAL);
	assert_non_null(strstr(x->err, "ds.json: zero_optimization."
				       "offload_param.nvme_path: "
				       "offload_param.nvme_path is longer "
				       "than 511 characters"));
	path[TFS_CFG_STR_MAX - 1] = '\0'; /* 511: fits */
	snprintf(json, sizeof(json),
		 "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": "
		 "{\"nvme_path\": \"%s\"}}}",
		 path);
	assert_int_equal(read_str(x, json), 0);
	assert_setting(x, "offload_param", "nvme_path", path);
}

static void test_deepspeed_quoted_number_warns(void **state)
{
	struct fixture *x = *state;
	const struct tfs_plan_problem *pr;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"buffer_size\": "
				     "\"2e8\"}}}"),
			 0);
	pr = problem(x, "offload_param.buffer_size");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_WARN);
	assert_setting(x, "offload_param", "buffer_size", "2e8");
}

static void test_deepspeed_unknown_key_suggests_nearest(void **state)
{
	struct fixture *x = *state;
	const struct tfs_plan_problem *pr;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"bufer_size\": 1}, "
				     "\"sub_grup_size\": 1}}"),
			 0);
	pr = problem_with(x, "offload_param.bufer_size is not a key");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_FAIL);
	assert_non_null(strstr(pr->text, "did you mean 'buffer_size'?"));
	pr = problem_with(x, "zero_optimization.sub_grup_size is not a key");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_WARN);
}

/* A stage out of range is an error of the input, not a plan for stage 0. */
static void test_deepspeed_stage_out_of_range_is_an_error(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 4}}"),
			 -EINVAL);
	assert_non_null(strstr(x->err, "zero_optimization.stage = 4 is not "
				       "0, 1, 2 or 3"));
}

static void test_deepspeed_stage_three_as_word_is_an_error(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": \"three\"}}"),
	    -EINVAL);
	assert_non_null(strstr(x->err, "stage = \"three\" is not 0, 1, 2 "
				       "or 3"));
	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": [3]}}"), -EINVAL);
	assert_non_null(strstr(x->err, "stage is not a number"));
}

/* The stage as a string of digits is read as the number. */
static void test_deepspeed_stage_as_string_number(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": \"2\"}}"), 0);
	assert_int_equal(x->ds.stage, 2);
}

/* A Hugging Face model config.json passed as the DeepSpeed config is
 * refused, and the message says where it belongs. */
static void test_deepspeed_model_config_json_is_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_path(x, DATA "llama-2-7b-config.json"), -EINVAL);
	assert_non_null(strstr(x->err, "Hugging Face model config.json"));
	assert_non_null(strstr(x->err, "--model"));
}

/* Any other object with none of DeepSpeed's keys: refused; an empty one
 * is DeepSpeed's defaults. */
static void test_deepspeed_foreign_json_is_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"name\": \"x\", \"zero\": 3}"),
			 -EINVAL);
	assert_non_null(strstr(x->err, "not a DeepSpeed config"));
	assert_int_equal(read_str(x, "{\"train_batch_size\": 8}"), 0);
}

/* ===== "auto" ===== */

static void test_deepspeed_stage_auto_is_0_with_note(void **state)
{
	struct fixture *x = *state;
	const struct tfs_deepspeed_note *n;

	assert_int_equal(
	    read_str(x, "{\"zero_optimization\": {\"stage\": \"auto\"}}"), 0);
	assert_int_equal(x->ds.stage, 0);
	n = note_of(x, "zero_optimization.stage");
	assert_non_null(n);
	assert_string_equal(n->value, "0");
	assert_int_equal(x->p.nproblems, 0);
}

static void test_deepspeed_offload_auto_keeps_default(void **state)
{
	struct fixture *x = *state;
	const struct tfs_deepspeed_note *n;

	assert_int_equal(read_str(x, "{\"zero_optimization\": {\"stage\": 3, "
				     "\"offload_param\": {\"buffer_size\": "
				     "\"auto\"}}}"),
			 0);
	n = note_of(x, "zero_optimization.offload_param.buffer_size");
	assert_non_null(n);
	assert_string_equal(n->value, "1e8");
	assert_setting(x, "offload_param", "buffer_size", "1e8");
	assert_int_equal(x->p.nproblems, 0);
}

static void test_deepspeed_aio_auto_is_refused(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"aio\": {\"block_size\": \"auto\"}}"),
			 -EINVAL);
	assert_non_null(strstr(x->err, "ds.json: aio.block_size is \"auto\""));
	assert_non_null(strstr(x->err, "write a number"));
	assert_int_equal(x->p.nproblems, 0);
}

static void test_deepspeed_bf16_auto_assumes_bf16(void **state)
{
	struct fixture *x = *state;
	const struct tfs_deepspeed_note *n;

	assert_int_equal(read_str(x, "{\"bf16\": {\"enabled\": \"auto\"}}"), 0);
	assert_setting(x, "offload_param", "dtype", "bf16");
	n = note_of(x, "bf16.enabled");
	assert_non_null(n);
	assert_string_equal(n->value, "bf16 assumed");
}

/* ===== dtype and aio ===== */

static void test_deepspeed_no_precision_section_is_fp32(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{}"), 0);
	assert_int_equal(x->ds.stage, 0);
	assert_setting(x, "offload_param", "dtype", "fp32");
}

static void test_deepspeed_given_dtype_is_kept(void **state)
{
	struct fixture *x = *state;

	x->ds.dtype_given = 1;
	assert_int_equal(read_str(x, "{\"bf16\": {\"enabled\": true}}"), 0);
	assert_setting(x, "offload_param", "dtype", "fp16"); /* default */
}

static void test_deepspeed_fp16_and_bf16_together_fail(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(read_str(x, "{\"fp16\": {\"enabled\": true}, "
				     "\"bf16\": {\"enabled\": true}}"),
			 0);
	assert_setting(x, "offload_param", "dtype", "bf16");
	assert_non_null(problem_with(x, "fp16 and bf16 are both enabled"));
	assert_int_equal(x->p.severity, TFS_PLAN_FAIL);
}

static void test_deepspeed_aio_thread_count_sets_parallelism(void **state)
{
	struct fixture *x = *state;
	const struct tfs_plan_problem *pr;

	assert_int_equal(read_str(x, "{\"aio\": {\"thread_count\": 4, "
				     "\"queue_depth\": 16, \"bogus\": 1}}"),
			 0);
	assert_setting(x, "aio", "intra_op_parallelism", "4");
	assert_setting(x, "aio", "queue_depth", "16");
	assert_true(x->c.flags & TFS_CFG_F_THREAD_COUNT);
	pr = problem_with(x, "aio.bogus is ignored by DeepSpeed");
	assert_non_null(pr);
	assert_int_equal(pr->severity, TFS_PLAN_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_deepspeed_reads_config_json_example),
		T(test_deepspeed_buffer_and_file_read_alike),
		T(test_deepspeed_hf_example_notes_auto_and_fails_nested_aio),
		T(test_deepspeed_auto_without_model_names_formula),
		T(test_deepspeed_invalid_json_says_line_and_column),
		T(test_deepspeed_empty_input_is_invalid_json),
		T(test_deepspeed_top_level_array_is_refused),
		T(test_deepspeed_trailing_bytes_are_invalid_json),
		T(test_deepspeed_directory_reads_as_empty),
		T(test_deepspeed_zero_optimization_not_an_object),
		T(test_deepspeed_zero_optimization_true_is_stage_1),
		T(test_deepspeed_offload_not_an_object),
		T(test_deepspeed_array_value_is_not_a_single_value),
		T(test_deepspeed_bad_value_fails_with_config_message),
		T(test_negative_buffer_size_is_refused),
		T(test_deepspeed_negative_counts_are_refused),
		T(test_offload_device_gpu_is_refused),
		T(test_deepspeed_device_is_lower_case_and_a_string),
		T(test_deepspeed_overlong_nvme_path_is_refused),
		T(test_deepspeed_quoted_number_warns),
		T(test_deepspeed_unknown_key_suggests_nearest),
		T(test_deepspeed_stage_out_of_range_is_an_error),
		T(test_deepspeed_stage_three_as_word_is_an_error),
		T(test_deepspeed_stage_as_string_number),
		T(test_deepspeed_foreign_json_is_refused),
		T(test_deepspeed_model_config_json_is_refused),
		T(test_deepspeed_stage_auto_is_0_with_note),
		T(test_deepspeed_offload_auto_keeps_default),
		T(test_deepspeed_aio_auto_is_refused),
		T(test_deepspeed_bf16_auto_assumes_bf16),
		T(test_deepspeed_no_precision_section_is_fp32),
		T(test_deepspeed_given_dtype_is_kept),
		T(test_deepspeed_fp16_and_bf16_together_fail),
		T(test_deepspeed_aio_thread_count_sets_parallelism),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
