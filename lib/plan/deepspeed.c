/*
 * deepspeed.c: a ds_config.json as DeepSpeed 0.16 would read it, for
 * tensorfs-plan.
 *
 * The file is parsed whole (jansson); read_root() walks it once:
 * zero_optimization (its stage, offload_param, offload_optimizer,
 * sub_group_size), the top-level aio, then fp16/bf16 for the dtype.  Each
 * value goes through set_from_json(), which turns it into the text an
 * INI file would hold and hands it to tfs_config_set(), so JSON and INI
 * agree on every key.
 *
 * A value that cannot be used (a negative buffer_size, a device other
 * than DeepSpeed's "none", "cpu" and "nvme", an array where a number
 * belongs, an offload section that is not an object) is refused: it
 * would otherwise leave the default in place, and the plan would be made
 * for a configuration nobody wrote.  refuse() adds one line to err naming
 * the file and the key, the reading goes on so that one run lists them
 * all, and the read returns -EINVAL.  So is a file that is not a
 * DeepSpeed config: not JSON, not an object, an object none of whose keys
 * DeepSpeed knows (a model's config.json given by mistake), or a ZeRO
 * stage that is not 0 to 3.  What DeepSpeed would read but then stop on
 * or ignore (a key it does not know, fp16 and bf16 together, a number
 * written as a string) becomes a problem of the plan instead
 * (TFS_PLAN_FAIL if DeepSpeed would stop, WARN if it would ignore it),
 * where the plan can say what to write instead.  The key lists are
 * DeepSpeed's, version by version; each says where it comes from.
 */
#include "deepspeed.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "units.h"

static void note(struct tfs_deepspeed *ds, const char *key, const char *value,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void note(struct tfs_deepspeed *ds, const char *key, const char *value,
		 const char *fmt, ...)
{
	struct tfs_deepspeed_note *n;
	va_list ap;

	if (ds->nnotes == TFS_DEEPSPEED_MAX_NOTES)
		return;
	n = &ds->notes[ds->nnotes++];
	snprintf(n->key, sizeof(n->key), "%s", key);
	snprintf(n->value, sizeof(n->value), "%s", value);
	va_start(ap, fmt);
	vsnprintf(n->how, sizeof(n->how), fmt, ap);
	va_end(ap);
}

/* A count in DeepSpeed's notation, no unit. */
static int parse_count(const char *s, uint64_t *out)
{
	int suffix = 0;

	return tfs_parse_size(s, out, &suffix) || suffix ? -EINVAL : 0;
}

/* A JSON scalar as the INI would write it into buf; 0, or -1 if it is
 * not a scalar.  *is_string tells whether it was a JSON string. */
static int scalar(const json_t *v, char *buf, size_t len, int *is_string)
{
	double d;

	*is_string = 0;
	if (json_is_string(v)) {
		*is_string = 1;
		snprintf(buf, len, "%s", json_string_value(v));
	} else if (json_is_integer(v)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		if (d >= 0 && d < 9.2e18 && d == (double)(uint64_t)d)
			snprintf(buf, len, "%llu", (unsigned long long)d);
		else
			snprintf(buf, len, "%.17g", d);
	} else if (json_is_boolean(v)) {
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	} else {
		return -1;
	}
	return 0;
}

/* ===== the ds_config.json ===== */

/* zero_optimization's fields in DeepSpeed 0.16.5 (runtime/zero/config.py
 * DeepSpeedZeroConfig, names and aliases; populate_by_name), which
 * rejects any other key (DeepSpeedConfigModel: extra="forbid"). */
static const char *const zero_fields[] = {
	"stage",
	"contiguous_gradients",
	"reduce_scatter",
	"reduce_bucket_size",
	"use_multi_rank_bucket_allreduce",
	"allgather_partitions",
	"allgather_bucket_size",
	"overlap_comm",
	"load_from_fp32_weights",
	"elastic_checkpoint",
	"offload_param",
	"offload_optimizer",
	"sub_group_size",
	"cpu_offload_param",
	"cpu_offload_use_pin_memory",
	"cpu_offload",
	"prefetch_bucket_size",
	"stage3_prefetch_bucket_size",
	"param_persistence_threshold",
	"stage3_param_persistence_threshold",
	"model_persistence_threshold",
	"stage3_model_persistence_threshold",
	"max_live_parameters",
	"stage3_max_live_parameters",
	"max_reuse_distance",
	"stage3_max_reuse_distance",
	"gather_16bit_weights_on_model_save",
	"stage3_gather_16bit_weights_on_model_save",
	"module_granularity_threshold",
	"stage3_module_granularity_threshold",
	"use_all_reduce_for_fetch_params",
	"stage3_use_all_reduce_for_fetch_params",
	"stage3_gather_fp16_weights_on_model_save",
	"ignore_unused_parameters",
	"legacy_stage1",
	"round_robin_gradients",
	"zero_hpz_partition_size",
	"zero_quantized_weights",
	"zero_quantized_nontrainable_weights",
	"zero_quantized_gradients",
	"zeropp_loco_param",
	"mics_shard_size",
	"mics_hierarchical_params_gather",
	"memory_efficient_linear",
	"pipeline_loading_checkpoint",
	"override_module_apply",
	"log_trace_cache_warnings",
	NULL
};

/* offload_config.py: DeepSpeedZeroOffloadParamConfig and
 * DeepSpeedZeroOffloadOptimizerConfig, also extra="forbid" */
static const char *const param_fields[] = {
	"device",     "nvme_path", "buffer_count", "buffer_size", "max_in_cpu",
	"pin_memory", NULL
};
static const char *const optim_fields[] = {
	"device",     "nvme_path",     "buffer_count",
	"pin_memory", "pipeline_read", "pipeline_write",
	"fast_init",  "ratio",	       NULL
};
/* swap_tensor/aio_config.py get_aio_config reads these only */
static const char *const aio_fields[] = { "block_size",
					  "queue_depth",
					  "intra_op_parallelism",
					  "single_submit",
					  "overlap_events",
					  "use_gds",
					  NULL };

static int in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return 1;
	return 0;
}

/* "; did you mean 'x'?" for the nearest of list, or "" */
static const char *nearest(const char *const *list, const char *name, char *buf,
			   size_t len)
{
	const char *best = NULL;
	size_t bd = 4;

	for (; *list; list++) {
		size_t d = tfs_edit_distance(name, *list);

		if (d < bd) {
			bd = d;
			best = *list;
		}
	}
	buf[0] = '\0';
	if (best)
		snprintf(buf, len, "; did you mean '%s'?", best);
	return buf;
}

/* DeepSpeed's default of a zero_optimization key, for "auto". */
static const char *zero_default(const char *name)
{
	static const struct {
		const char *name, *def;
	} d[] = {
		{ "reduce_bucket_size", "5e8" },
		{ "allgather_bucket_size", "5e8" },
		{ "stage3_prefetch_bucket_size", "5e7" },
		{ "prefetch_bucket_size", "5e7" },
		{ "stage3_param_persistence_threshold", "1e5" },
		{ "param_persistence_threshold", "1e5" },
		{ "stage3_max_live_parameters", "1e9" },
		{ "max_live_parameters", "1e9" },
		{ "stage3_max_reuse_distance", "1e9" },
		{ "max_reuse_distance", "1e9" },
		{ "sub_group_size", "1e9" },
	};

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (!strcmp(d[i].name, name))
			return d[i].def;
	return NULL;
}

/* A zero_optimization key that Hugging Face's Trainer fills from the
 * model's hidden_size (transformers integrations/deepspeed.py
 * HfTrainerDeepSpeedConfig.trainer_config_finalize). */
static void hf_auto(struct tfs_deepspeed *ds, const char *name)
{
	uint64_t h = ds->hidden, v = 0;
	const char *formula = NULL;
	char key[64], val[48], why[160];

	snprintf(key, sizeof(key), "zero_optimization.%s", name);
	if (!strcmp(name, "reduce_bucket_size")) {
		v = h * h;
		formula = "hidden_size x hidden_size";
	} else if (!strcmp(name, "stage3_prefetch_bucket_size")) {
		v = h * h / 10 * 9 + h * h % 10 * 9 / 10;
		formula = "0.9 x hidden_size x hidden_size (ZeRO-3)";
	} else if (!strcmp(name, "stage3_param_persistence_threshold")) {
		v = 10 * h;
		formula = "10 x hidden_size (ZeRO-3)";
	}
	if (formula && h) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
		if (tfs_config_key("zero_optimization", name))
			(void)tfs_config_set(ds->c, key, val, why, sizeof(why));
		note(ds, key, val,
		     "Hugging Face's Trainer writes %s, hidden_size "
		     "%llu from --model",
		     formula, (unsigned long long)h);
	} else if (formula) {
		note(ds, key, "hidden_size-based",
		     "Hugging Face's Trainer "
		     "writes %s (give --model to see it); under plain "
		     "DeepSpeed, which drops \"auto\", the default %s",
		     formula, zero_default(name));
	} else {
		note(ds, key,
		     zero_default(name) ? zero_default(name)
					: "DeepSpeed's default",
		     "neither Hugging Face's Trainer "
		     "nor Accelerate fills it; DeepSpeed's config drops "
		     "\"auto\" (DeepSpeedConfigModel.__init__) and uses its "
		     "default");
	}
}

/* Add a line to err (after those already there) saying why a value is
 * refused; returns -EINVAL.  A line that does not fit is cut short. */
static int refuse(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
	size_t n = errlen ? strnlen(err, errlen) : 0;
	va_list ap;

	if (n + 2 < errlen) {
		if (n)
			err[n++] = '\n';
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Whether a JSON number, or a string holding one, is below 0. */
static int negative(const json_t *v, const char *text)
{
	if (json_is_integer(v))
		return json_integer_value(v) < 0;
	if (json_is_real(v))
		return json_real_value(v) < 0;
	text += strspn(text, " \t");
	return json_is_string(v) && *text == '-';
}

/* A negative count or size at path: refused with the least it may be
 * and DeepSpeed's default (in bytes for a size, as the JSON writes it). */
static int refuse_negative(struct tfs_deepspeed *ds, const char *path,
			   const struct tfs_cfg_key *k, const char *shown,
			   char *err, size_t errlen)
{
	char least[48], def[48];
	uint64_t u;

	if (k->min == 0)
		snprintf(least, sizeof(least), "of 0 or more");
	else if (k->min == 1)
		snprintf(least, sizeof(least), "above 0");
	else
		snprintf(least, sizeof(least), "of at least %llu",
			 (unsigned long long)k->min);
	if (k->type == TFS_CFG_SIZE && !tfs_parse_size(k->def, &u, NULL))
		snprintf(def, sizeof(def), "%llu", (unsigned long long)u);
	else
		snprintf(def, sizeof(def), "%s", k->def);
	return refuse(
	    err, errlen, "%s: %s: %s is not a %s %s; DeepSpeed's default is %s",
	    ds->name, path, shown,
	    k->type == TFS_CFG_UINT ? "whole number" : "size", least, def);
}

/* offload_param.device and offload_optimizer.device: DeepSpeed's
 * OffloadDeviceEnum (offload_config.py) takes "none", "cpu" and "nvme",
 * as strings and in lower case only (a pydantic str Enum). */
static int check_device(struct tfs_deepspeed *ds, const char *path,
			const char *text, int is_string, const char *shown,
			char *err, size_t errlen)
{
	static const char *const devices[] = { "none", "cpu", "nvme" };

	for (size_t i = 0; i < 3; i++) {
		if (is_string && !strcmp(text, devices[i]))
			return 0;
		if (is_string && !strcasecmp(text, devices[i]))
			return refuse(err, errlen,
				      "%s: %s: %s is not a device DeepSpeed "
				      "offloads to: its names are lower case; "
				      "write \"%s\"",
				      ds->name, path, shown, devices[i]);
	}
	return refuse(err, errlen,
		      "%s: %s: %s is not a device DeepSpeed offloads to; "
		      "write \"nvme\", \"cpu\" or \"none\" (none keeps it on "
		      "the GPU)",
		      ds->name, path, shown);
}

/* Set section.name of the config from a JSON value found at path: 0, or
 * -EINVAL if the value is refused (a line of err says why). */
static int set_from_json(struct tfs_deepspeed *ds, const char *path,
			 const char *section, const char *name, const json_t *v,
			 char *err, size_t errlen)
{
	/* one more than a setting holds, so that a longer one is refused,
	 * not cut */
	char key[96], buf[TFS_CFG_STR_MAX + 1], why[512], def[48];
	char shown[TFS_CFG_STR_MAX + 8], prefix[TFS_CFG_STR_MAX + 128];
	const struct tfs_cfg_key *k = tfs_config_key(section, name);
	int is_string;

	if (!k)
		return 0;
	snprintf(key, sizeof(key), "%s.%s", section, name);
	if (json_is_null(v))
		return 0; /* Optional, None: the default */
	if (scalar(v, buf, sizeof(buf), &is_string))
		return refuse(err, errlen,
			      "%s: %s is not a single value; DeepSpeed's "
			      "config rejects it; write a %s",
			      ds->name, path,
			      k->type == TFS_CFG_BOOL ? "true or false"
			      : k->type == TFS_CFG_STR ||
				      k->type == TFS_CFG_ENUM
				  ? "string"
				  : "number");
	if (is_string && !strcmp(buf, "auto")) {
		if (!strcmp(section, "aio"))
			return refuse(err, errlen,
				      "%s: %s is \"auto\", but DeepSpeed reads "
				      "aio with get_scalar_param() "
				      "(aio_config.py), which keeps the string "
				      "and hands it to the aio op, and nothing "
				      "fills it in; write a number",
				      ds->name, path);
		note(ds, path, tfs_config_format(ds->c, k, def, sizeof(def)),
		     "neither Hugging Face's Trainer nor Accelerate fills it; "
		     "DeepSpeed's config drops \"auto\" "
		     "(DeepSpeedConfigModel.__init__) and uses its default");
		return 0;
	}
	snprintf(shown, sizeof(shown), is_string ? "\"%s\"" : "%s", buf);
	if (k->type == TFS_CFG_ENUM && !strcmp(k->unit, TFS_CFG_DEVICES))
		if (check_device(ds, path, buf, is_string, shown, err, errlen))
			return -EINVAL;
	if ((k->type == TFS_CFG_UINT || k->type == TFS_CFG_SIZE ||
	     k->type == TFS_CFG_ELEMS) &&
	    negative(v, buf))
		return refuse_negative(ds, path, k, shown, err, errlen);
	if (tfs_config_set(ds->c, key, buf, why, sizeof(why))) {
		/* "section.name = 'value' is ...": the path and the value as
		 * the JSON writes them say it better */
		snprintf(prefix, sizeof(prefix), "%s = '%s' ", key, buf);
		return refuse(err, errlen, "%s: %s: %s%s", ds->name, path,
			      strncmp(why, prefix, strlen(prefix)) ? "" : shown,
			      strncmp(why, prefix, strlen(prefix))
				  ? why
				  : why + strlen(prefix) - 1);
	}
	if (is_string && k->type != TFS_CFG_STR && k->type != TFS_CFG_ENUM &&
	    k->type != TFS_CFG_BOOL)
		tfs_plan_add(ds->p, TFS_PLAN_WARN, key,
			     "%s: %s is the string "
			     "\"%s\"; tensorfs-plan reads it as a number, but "
			     "DeepSpeed's pydantic config parses integer "
			     "strings only and may reject it; write %s without "
			     "quotes",
			     ds->name, path, buf, buf);
	return 0;
}

/* Report the keys of obj (at path) that DeepSpeed does not know. */
static void unknown_keys(struct tfs_deepspeed *ds, const json_t *obj,
			 const char *path, const char *const *fields,
			 enum tfs_plan_severity sev, const char *why)
{
	const char *name;
	json_t *v;
	char near[96];

	json_object_foreach((json_t *)obj, name, v)
	{
		if (in_list(fields, name))
			continue;
		(void)v;
		tfs_plan_add(ds->p, sev, "",
			     "%s: %s.%s is not a key DeepSpeed "
			     "knows%s; %s",
			     ds->name, path, name,
			     nearest(fields, name, near, sizeof(near)), why);
	}
}

/* zero_optimization.offload_param or .offload_optimizer: 0, or -EINVAL
 * if a value of it is refused (err says which). */
static int read_offload(struct tfs_deepspeed *ds, const json_t *zero,
			const char *section, const char *const *fields,
			char *err, size_t errlen)
{
	const json_t *o = json_object_get(zero, section), *v;
	char path[96];
	int rc = 0;

	if (!o || json_is_null(o))
		return 0;
	snprintf(path, sizeof(path), "zero_optimization.%s", section);
	if (!json_is_object(o))
		return refuse(err, errlen,
			      "%s: %s is not an object; DeepSpeed's config "
			      "rejects it; write {\"device\": \"nvme\", ...}",
			      ds->name, path);
	for (const char *const *f = fields; *f; f++) {
		v = json_object_get(o, *f);
		if (!v)
			continue;
		snprintf(path, sizeof(path), "zero_optimization.%s.%s", section,
			 *f);
		if (set_from_json(ds, path, section, *f, v, err, errlen))
			rc = -EINVAL;
	}
	snprintf(path, sizeof(path), "zero_optimization.%s", section);
	unknown_keys(ds, o, path, fields, TFS_PLAN_FAIL,
		     "DeepSpeed's config "
		     "model forbids unknown keys (extra=\"forbid\") and stops "
		     "with 'Extra inputs are not permitted'; remove it or fix "
		     "its name");
	return rc;
}

/* fp16.enabled or bf16.enabled: 1 true, 0 false or absent, -1 "auto" */
static int enabled(const json_t *root, const char *section)
{
	const json_t *s = json_object_get(root, section), *e;

	if (!json_is_object(s))
		return 0;
	e = json_object_get(s, "enabled");
	if (json_is_string(e) && !strcmp(json_string_value(e), "auto"))
		return -1;
	return json_is_true(e);
}

/* zero_optimization if it is an object, else NULL; ds->stage is what
 * its absence or a deprecated boolean means.  Any other value is refused:
 * *rc = -EINVAL and a line of err says so. */
static json_t *zero_section(struct tfs_deepspeed *ds, json_t *root, int *rc,
			    char *err, size_t errlen)
{
	json_t *zero;

	zero = json_object_get(root, "zero_optimization");
	ds->stage = 0; /* DeepSpeed's default: ZeRO off */
	if (json_is_boolean(zero)) {
		/* the deprecated form (zero/config.py read_zero_config_
		 * deprecated): true is stage 1 */
		ds->stage = json_is_true(zero);
		tfs_plan_add(ds->p, TFS_PLAN_WARN, "zero_optimization.stage",
			     "%s: zero_optimization is %s, a deprecated form "
			     "DeepSpeed reads as stage %u; write {\"stage\": "
			     "3, ...}",
			     ds->name, json_is_true(zero) ? "true" : "false",
			     ds->stage);
		zero = NULL;
	} else if (zero && !json_is_object(zero)) {
		*rc = refuse(err, errlen,
			     "%s: zero_optimization is not an object; "
			     "DeepSpeed rejects it; write {\"stage\": 3, ...}",
			     ds->name);
		zero = NULL;
	}
	return zero;
}

/* zero_optimization.stage, unless "auto" (DeepSpeed's default, 0): 0,
 * or -EINVAL if it is not 0, 1, 2 or 3 (err says so). */
static int read_stage(struct tfs_deepspeed *ds, const json_t *zero, char *err,
		      size_t errlen)
{
	const json_t *v = json_object_get(zero, "stage");
	char buf[64];
	int is_string = 0;
	uint64_t s;

	if (!v)
		return 0;
	if (scalar(v, buf, sizeof(buf), &is_string)) {
		tfs_say(err, errlen,
			"%s: zero_optimization.stage is not a number; "
			"DeepSpeed rejects it: write 0, 1, 2 or 3",
			ds->name);
		return -EINVAL;
	}
	if (is_string && !strcmp(buf, "auto")) {
		ds->stage = 0;
		note(ds, "zero_optimization.stage", "0",
		     "DeepSpeed "
		     "drops \"auto\" and uses its default, 0 (ZeRO "
		     "off); write 3");
		return 0;
	}
	if (parse_count(buf, &s) || s > 3) {
		tfs_say(err, errlen,
			"%s: zero_optimization.stage = %s%s%s is not 0, 1, 2 "
			"or 3; DeepSpeed rejects it: write the number (3 to "
			"offload parameters to NVMe)",
			ds->name, is_string ? "\"" : "", buf,
			is_string ? "\"" : "");
		return -EINVAL;
	}
	ds->stage = (unsigned)s;
	return 0;
}

/* The ZeRO-3 keys of the parameter buffer rule, by either of the names
 * DeepSpeed takes (the stage3_ alias or the field: populate_by_name);
 * "auto" is hf_auto()'s.  0, or -EINVAL for a refused value. */
static int read_stage3(struct tfs_deepspeed *ds, const json_t *zero, char *err,
		       size_t errlen)
{
	static const char *const keys[] = {
		"max_live_parameters",
		"prefetch_bucket_size",
		"param_persistence_threshold",
		"max_reuse_distance",
	};
	char alias[64], path[96];
	const char *name;
	json_t *v;
	int rc = 0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(alias, sizeof(alias), "stage3_%s", keys[i]);
		name = alias;
		v = json_object_get(zero, alias);
		if (!v) {
			name = keys[i];
			v = json_object_get(zero, keys[i]);
		}
		if (!v || (json_is_string(v) &&
			   !strcmp(json_string_value(v), "auto")))
			continue;
		snprintf(path, sizeof(path), "zero_optimization.%s", name);
		if (set_from_json(ds, path, "zero_optimization", alias, v, err,
				  errlen))
			rc = -EINVAL;
	}
	return rc;
}

/* DeepSpeed's version, the newest if not given. */
static unsigned int version(const struct tfs_deepspeed *ds)
{
	return ds->version ? ds->version : TFS_PLAN_DS_NEWEST;
}

/* What DeepSpeed's pydantic says of a key it does not know: 0.14 builds
 * its config on pydantic 1's API (deepspeed/pydantic_v1.py), 0.15.0 on
 * pydantic 2 (runtime/config_utils.py DeepSpeedConfigModel). */
static const char *extra_error(const struct tfs_deepspeed *ds)
{
	return version(ds) < 1500 ? "extra fields not permitted"
				  : "Extra inputs are not permitted";
}

/* zero_optimization keys newer than some DeepSpeed releases
 * (runtime/zero/config.py at each tag). */
static void check_since(struct tfs_deepspeed *ds, const json_t *zero)
{
	static const struct {
		const char *name;
		unsigned int since;
	} k[] = {
		{ "module_granularity_threshold", 1600 },
		{ "stage3_module_granularity_threshold", 1600 },
		{ "zeropp_loco_param", 1602 },
		{ "log_trace_cache_warnings", 1604 },
	};
	unsigned int v = version(ds);

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (v < k[i].since && json_object_get(zero, k[i].name))
			tfs_plan_add(
			    ds->p, TFS_PLAN_FAIL, "",
			    "%s: zero_optimization.%s arrived in DeepSpeed "
			    "0.%u.%u; %u.%u.%u forbids unknown keys and stops "
			    "with '%s'; remove it, or give the version you "
			    "run with --deepspeed-version",
			    ds->name, k[i].name, k[i].since / 100 % 100,
			    k[i].since % 100, v / 10000, v / 100 % 100, v % 100,
			    extra_error(ds));
}

/* The zero_optimization object: its stage, offloads and sub-group, the
 * "auto" values Hugging Face fills in, the keys DeepSpeed forbids.  0, or
 * -EINVAL for a bad stage or a refused value (err says why). */
static int read_zero(struct tfs_deepspeed *ds, json_t *zero, char *err,
		     size_t errlen)
{
	const char *name;
	char why[256];
	json_t *v;
	int rc = 0;

	if (read_stage(ds, zero, err, errlen))
		return -EINVAL;
	if (read_offload(ds, zero, "offload_param", param_fields, err, errlen))
		rc = -EINVAL;
	if (read_offload(ds, zero, "offload_optimizer", optim_fields, err,
			 errlen))
		rc = -EINVAL;
	v = json_object_get(zero, "sub_group_size");
	if (v && set_from_json(ds, "zero_optimization.sub_group_size",
			       "zero_optimization", "sub_group_size", v, err,
			       errlen))
		rc = -EINVAL;
	if (read_stage3(ds, zero, err, errlen))
		rc = -EINVAL;
	json_object_foreach(zero, name, v)
	{
		if (json_is_string(v) &&
		    !strcmp(json_string_value(v), "auto") &&
		    strcmp(name, "sub_group_size") && strcmp(name, "stage"))
			hf_auto(ds, name);
	}
	if (json_object_get(zero, "aio"))
		tfs_plan_add(ds->p, TFS_PLAN_FAIL, "aio",
			     "%s: aio is "
			     "inside zero_optimization, where "
			     "DeepSpeedZeroConfig forbids unknown keys: "
			     "DeepSpeed stops with 'Extra inputs are not "
			     "permitted' (DeepSpeed issue #2721; the "
			     "Hugging Face DeepSpeed guide's NVMe "
			     "example has it there); move \"aio\" to the "
			     "top level, beside zero_optimization",
			     ds->name);
	json_object_del(zero, "aio"); /* reported above */
	snprintf(why, sizeof(why),
		 "DeepSpeed's config forbids unknown keys "
		 "(extra=\"forbid\"), so unless your DeepSpeed is newer "
		 "than 0.16 and has it, it stops with '%s'",
		 extra_error(ds));
	unknown_keys(ds, zero, "zero_optimization", zero_fields, TFS_PLAN_WARN,
		     why);
	check_since(ds, zero);
	return rc;
}

/* The top-level aio object: 0, or -EINVAL if a value of it is refused
 * (err says which). */
static int read_aio(struct tfs_deepspeed *ds, const json_t *root, char *err,
		    size_t errlen)
{
	const char *name;
	json_t *v, *aio;
	int rc = 0;

	aio = json_object_get(root, "aio");
	if (json_is_object(aio) && version(ds) < 1604) {
		/* 0.16.3 and older read thread_count and not its new name
		 * (aio_config.py get_aio_config; renamed in 0.16.4) */
		v = json_object_get(aio, "thread_count");
		if (v && set_from_json(ds, "aio.thread_count", "aio",
				       "intra_op_parallelism", v, err, errlen))
			rc = -EINVAL;
		if (!v && json_object_get(aio, "intra_op_parallelism")) {
			ds->c->flags |= TFS_CFG_F_DS_ONE_THREAD;
			tfs_plan_add(
			    ds->p, TFS_PLAN_WARN, "aio.intra_op_parallelism",
			    "%s: aio.intra_op_parallelism is ignored by "
			    "DeepSpeed %u.%u.%u, which reads thread_count "
			    "(swap_tensor/aio_config.py get_aio_config; the "
			    "new name arrived in 0.16.4), so it runs with 1 "
			    "thread per request; write \"thread_count\" "
			    "instead",
			    ds->name, version(ds) / 10000,
			    version(ds) / 100 % 100, version(ds) % 100);
		}
	} else if (json_is_object(aio)) {
		/* tensorfs reads the old name as intra_op_parallelism, as
		 * in an INI file; DeepSpeed ignores it (the plan says so) */
		v = json_object_get(aio, "thread_count");
		if (v && !json_object_get(aio, "intra_op_parallelism") &&
		    set_from_json(ds, "aio.thread_count", "aio",
				  "intra_op_parallelism", v, err, errlen))
			rc = -EINVAL;
		if (v)
			ds->c->flags |= TFS_CFG_F_THREAD_COUNT;
	}
	if (json_is_object(aio)) {
		if (version(ds) < 1500 && json_object_get(aio, "use_gds"))
			tfs_plan_add(ds->p, TFS_PLAN_WARN, "aio.use_gds",
				     "%s: aio.use_gds arrived in DeepSpeed "
				     "0.15.0; older ones ignore it and swap "
				     "through pinned host memory",
				     ds->name);
		for (const char *const *f = aio_fields; *f; f++) {
			char path[64];

			v = json_object_get(aio, *f);
			if (!v)
				continue;
			if (!strcmp(*f, "intra_op_parallelism") &&
			    version(ds) < 1604)
				continue; /* ignored there: said above */
			snprintf(path, sizeof(path), "aio.%s", *f);
			if (set_from_json(ds, path, "aio", *f, v, err, errlen))
				rc = -EINVAL;
		}
		json_object_foreach(aio, name, v)
		{
			char near[96];

			if (in_list(aio_fields, name) ||
			    !strcmp(name, "thread_count"))
				continue;
			(void)v;
			tfs_plan_add(
			    ds->p, TFS_PLAN_WARN, "",
			    "%s: aio.%s is "
			    "ignored by DeepSpeed: get_aio_config() "
			    "reads only its six keys%s",
			    ds->name, name,
			    nearest(aio_fields, name, near, sizeof(near)));
		}
	}
	return rc;
}

/* The model dtype from fp16/bf16 (engine.py get_data_types), unless
 * given. */
static int read_dtype(struct tfs_deepspeed *ds, const json_t *root, char *err,
		      size_t errlen)
{
	int fp16, bf16, rc = 0;

	fp16 = enabled(root, "fp16");
	bf16 = enabled(root, "bf16");
	if (!bf16)
		bf16 = enabled(root, "bfloat16");
	if (!ds->dtype_given) {
		const char *dt = bf16 == 1		      ? "bf16"
				 : fp16 == 1		      ? "fp16"
				 : (bf16 == -1 || fp16 == -1) ? "bf16"
							      : "fp32";

		rc = tfs_config_set(ds->c, "offload_param.dtype", dt, err,
				    errlen);
		if (rc)
			return rc == -EINVAL ? -EPROTO : rc; /* a bug */
		if (bf16 == -1 || fp16 == -1)
			note(
			    ds, bf16 == -1 ? "bf16.enabled" : "fp16.enabled",
			    "bf16 assumed",
			    "Hugging Face's Trainer sets it "
			    "from --bf16/--fp16 (neither: fp32); tensorfs-plan "
			    "assumes a 2-byte dtype; give --dtype to choose");
	}
	if (fp16 == 1 && bf16 == 1)
		tfs_plan_add(
		    ds->p, TFS_PLAN_FAIL, "",
		    "%s: fp16 and bf16 are "
		    "both enabled; DeepSpeed asserts 'bfloat16 and fp16 "
		    "modes cannot be simultaneously enabled'; enable "
		    "one",
		    ds->name);
	return rc;
}

/* Top-level keys of a ds_config.json in DeepSpeed 0.16 (runtime/config.py
 * and the configs of its features), to tell one from another JSON file. */
static const char *const top_fields[] = {
	"train_batch_size",
	"train_micro_batch_size_per_gpu",
	"gradient_accumulation_steps",
	"optimizer",
	"scheduler",
	"fp16",
	"bf16",
	"bfloat16",
	"amp",
	"zero_optimization",
	"aio",
	"gradient_clipping",
	"steps_per_print",
	"wall_clock_breakdown",
	"activation_checkpointing",
	"flops_profiler",
	"tensorboard",
	"wandb",
	"csv_monitor",
	"comet",
	"comms_logger",
	"zero_allow_untested_optimizer",
	"zero_force_ds_cpu_optimizer",
	"prescale_gradients",
	"gradient_predivide_factor",
	"sparse_gradients",
	"communication_data_type",
	"seq_parallel_communication_data_type",
	"dump_state",
	"memory_breakdown",
	"checkpoint",
	"data_types",
	"elasticity",
	"pipeline",
	"sparse_attention",
	"data_efficiency",
	"curriculum_learning",
	"compression_training",
	"autotuning",
	"nebula",
	"disable_allgather",
	"graph_harvesting",
	"compile",
	"torch_autocast",
	"weight_quantization",
	"hybrid_engine",
	"eigenvalue",
	"progressive_layer_drop",
	"quantize_training",
	"timers",
	"use_data_before_expert_parallelism",
	"monitor_config",
	"dataloader_drop_last",
	NULL,
};

/* -EINVAL (err says what it looks like) if root has keys but none is
 * DeepSpeed's: the wrong file, a model's config.json most often. */
static int is_deepspeed(const struct tfs_deepspeed *ds, const json_t *root,
			char *err, size_t errlen)
{
	const char *name;
	json_t *v;

	if (json_object_size(root) == 0)
		return 0;
	json_object_foreach((json_t *)root, name, v)
	{
		(void)v;
		if (in_list(top_fields, name))
			return 0;
	}
	if (json_object_get(root, "architectures") ||
	    json_object_get(root, "model_type"))
		tfs_say(err, errlen,
			"%s: this is a Hugging Face model config.json, not a "
			"DeepSpeed config (it has none of DeepSpeed's keys, "
			"such as zero_optimization); give it with --model, "
			"and the ds_config.json with --deepspeed",
			ds->name);
	else
		tfs_say(err, errlen,
			"%s: not a DeepSpeed config: none of its keys is one "
			"DeepSpeed reads (zero_optimization, "
			"train_batch_size, fp16, bf16, aio, ...); give the "
			"ds_config.json",
			ds->name);
	return -EINVAL;
}

/* Read the parsed ds_config.json root (an object) into ds. */
static int read_root(struct tfs_deepspeed *ds, json_t *root, char *err,
		     size_t errlen)
{
	json_t *zero;
	int rc = 0;

	if (is_deepspeed(ds, root, err, errlen))
		return -EINVAL;
	zero = zero_section(ds, root, &rc, err, errlen);
	if (zero && read_zero(ds, zero, err, errlen))
		rc = -EINVAL;
	if (read_aio(ds, root, err, errlen))
		rc = -EINVAL;
	if (rc)
		return rc; /* err lists every refused value */
	return read_dtype(ds, root, err, errlen);
}

/* Read what json_load*() returned (NULL: e says why) and free it. */
static int read_loaded(struct tfs_deepspeed *ds, json_t *root,
		       const json_error_t *e, char *err, size_t errlen)
{
	int rc;

	if (errlen)
		err[0] = '\0'; /* refuse() appends */
	if (!root) {
		tfs_say(err, errlen, "%s:%d:%d: invalid JSON: %s; fix the file",
			ds->name, e->line, e->column, e->text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		tfs_say(err, errlen,
			"%s: the top level is not a JSON object; give "
			"a %s",
			ds->name, "DeepSpeed config");
		rc = -EINVAL;
	} else {
		rc = read_root(ds, root, err, errlen);
	}
	json_decref(root);
	return rc;
}

int tfs_deepspeed_read(struct tfs_deepspeed *ds, const char *json, size_t len,
		       char *err, size_t errlen)
{
	json_error_t e;

	return read_loaded(ds, json_loadb(json, len, 0, &e), &e, err, errlen);
}

int tfs_deepspeed_read_file(struct tfs_deepspeed *ds, FILE *f, char *err,
			    size_t errlen)
{
	json_error_t e;

	return read_loaded(ds, json_loadf(f, 0, &e), &e, err, errlen);
}
