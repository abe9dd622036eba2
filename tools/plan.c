/*
 * plan.c: tensorfs-plan, what a DeepSpeed NVMe offload configuration
 * costs and whether it will run, before it runs.
 *
 * The inputs become one struct tfs_config: the defaults, then -c
 * FILE.ini, then --deepspeed ds_config.json (its zero_optimization.
 * offload_param, .offload_optimizer, .sub_group_size, .stage, the
 * top-level aio and the fp16/bf16 flags, each set through
 * tfs_config_set() so that a JSON value is parsed exactly as the same
 * key of an INI file; --deepspeed-version says which DeepSpeed reads
 * it), then --dtype.  The model gives N and the largest parameter
 * (--params and --largest-param), or its tensors: --model reads the
 * weights (lib/plan/model.c) or a config.json, whose tensors
 * tfs_plan_llama_tensors() lists; with them the plan's sub-groups and
 * parameter buffers are exact.  The machine gives RAM (MemTotal),
 * RLIMIT_MEMLOCK (not binding with CAP_IPC_LOCK) and NVMe space.  lib/plan/deepspeed.c reads the ds_config.json,
 * lib/plan/plan.c does the arithmetic; this file reads the rest, explains
 * what was read (the "auto" values, keys DeepSpeed would reject) and
 * prints the result as text or JSON (jansson).
 *
 * A value that cannot be used stops it before any plan is made, naming
 * the file and the key: a bad INI value (tfs_config_load()), a negative
 * size or a device DeepSpeed does not know in the ds_config.json
 * (tfs_deepspeed_read(), which lists every one), a size of the model's
 * config.json that is not a whole number above 0 (read_model()).
 *
 * Exit status, as every tensorfs program: 0 success, 1 failure or
 * refusal, 2 usage error.  Here 0 means the configuration fits (warnings
 * may be printed: like a compiler's, they do not fail it, unless
 * --strict), 1 that it will fail (DeepSpeed stops, or the node runs out
 * of memory), that an input cannot be read or parsed or holds a bad
 * value, or that the output cannot be written; 2 a bad command line.
 * The verdict ("fits", "warnings", "will fail") is printed, and is in
 * the JSON beside exit_code.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "closeout.h"
#include "config.h"
#include "deepspeed.h"
#include "memcheck.h"
#include "model.h"
#include "plan.h"
#include "tune.h"
#include "units.h"

static const char *prog = "tensorfs-plan";

/* 0 success and 1 failure are EXIT_SUCCESS and EXIT_FAILURE */
#define EXIT_USAGE 2

/* clang-format off: the text as --help prints it */
static void usage(FILE *f)
{
	fputs(
	    "Usage: tensorfs-plan [-c FILE.ini] [--deepspeed ds_config.json]\n"
	    "                     (--params N | --model FILE) [OPTIONS]\n"
	    "\n"
	    "Explain a DeepSpeed ZeRO offload configuration before it runs: the host\n"
	    "memory DeepSpeed takes per rank and per node, pinned and pageable, item\n"
	    "by item with its formula; the memory of the tensorfs mount; the NVMe\n"
	    "space the swap files need; the errors DeepSpeed would stop with later\n"
	    "(a parameter larger than buffer_size, fast_init with small buffers, too\n"
	    "few optimizer buffers, more pinned memory than RAM) and why; and\n"
	    "recommended values that fit, each with its reason.\n"
	    "\n"
	    "Inputs (later ones override earlier ones):\n"
	    "  -c FILE.ini          a tensorfs.ini: [offload_param], [offload_optimizer],\n"
	    "                       [zero_optimization] and [aio] keys, DeepSpeed's\n"
	    "                       names and units (see tensorfs --print-config)\n"
	    "  --deepspeed FILE     a ds_config.json: zero_optimization.stage,\n"
	    "                       .offload_param, .offload_optimizer, .sub_group_size,\n"
	    "                       the top-level aio and fp16/bf16.enabled; numbers may\n"
	    "                       be 1e8, \"1e8\" or \"auto\" (the value Hugging Face's\n"
	    "                       Trainer or DeepSpeed substitutes is shown).  Without\n"
	    "                       it ZeRO stage 3 is assumed.  FILE - is standard\n"
	    "                       input (for one of --deepspeed and --model)\n"
	    "  --params N           the model's parameters: 7e9, 13e9, 70000000000\n"
	    "  --model FILE         the model's layers, which give the exact optimizer\n"
	    "                       sub-groups and the parameter swap buffers DeepSpeed\n"
	    "                       holds at once: its weights (a torch.save state_dict,\n"
	    "                       a .safetensors file, or a sharded checkpoint's index\n"
	    "                       .json with its shards beside it; float tensors only,\n"
	    "                       tied ones once) or a Hugging Face config.json, whose\n"
	    "                       parameters are counted as V*H*(tied ? 1 : 2) +\n"
	    "                       L*(H*q + 2*H*kv + q*H + 3*H*I + 2*H) + H, with H\n"
	    "                       hidden_size, L num_hidden_layers, I intermediate_size,\n"
	    "                       V vocab_size, q = heads*d, kv = num_key_value_heads*d,\n"
	    "                       d = head_dim or H/heads (Llama, Mistral, Qwen2: gated\n"
	    "                       MLP, RMSNorm); absent tie_word_embeddings means true,\n"
	    "                       as in transformers' PretrainedConfig.  --params or\n"
	    "                       --largest-param, if given too, win, and the plan uses\n"
	    "                       bounds; FILE - is standard input (a config.json)\n"
	    "  --largest-param N    elements of the largest parameter (e.g. the\n"
	    "                       embedding, vocab_size*hidden_size), to check\n"
	    "                       buffer_size; --model supplies it\n"
	    "  --dtype TYPE         model dtype: bf16, fp16, fp32 (default: from the\n"
	    "                       ds_config's fp16/bf16, else the INI's dtype)\n"
	    "  --param-groups one|trainer\n"
	    "                       the optimizer's param groups, which DeepSpeed\n"
	    "                       forms sub-groups within: one (default: an\n"
	    "                       optimizer on model.parameters()) or trainer\n"
	    "                       (Hugging Face's Trainer: biases and norm weights\n"
	    "                       without weight decay, in a second group)\n"
	    "  --deepspeed-version V\n"
	    "                       the DeepSpeed the ds_config is for, 0.14.0 or later\n"
	    "                       (default 0.16.5): 0.16.3 and older read\n"
	    "                       aio.thread_count and ignore intra_op_parallelism,\n"
	    "                       0.16.4 and later the other way round; keys newer\n"
	    "                       than V are refused as V refuses them\n"
	    "\n"
	    "The machine:\n"
	    "  --ranks N            ranks (GPUs) per node (default 1)\n"
	    "  --nodes N            nodes; the world size is ranks x nodes (default 1)\n"
	    "  --ram SIZE           host memory per node (default: this machine's\n"
	    "                       MemTotal), e.g. 256G, 512GiB\n"
	    "  --nvme SIZE          space under nvme_path per node (default: unknown,\n"
	    "                       not checked)\n"
	    "  --drives N           NVMe drives the mount is striped over (a set,\n"
	    "                       DEV1:DEV2:...; default 1): aio.queue_depth and\n"
	    "                       the write-back pool are sized for all of them\n"
	    "  --memlock SIZE       RLIMIT_MEMLOCK of the ranks, or 'unlimited'\n"
	    "                       (default: this process's, as ulimit -l shows, and\n"
	    "                       not binding when it runs as root: CAP_IPC_LOCK)\n"
	    "\n"
	    "Measuring (the tuner):\n"
	    "  --measure DIR        run DeepSpeed's swap pattern in DIR (the nvme_path:\n"
	    "                       a tensorfs mount, or a directory on ext4 or xfs)\n"
	    "                       for candidate values, one key at a time from the\n"
	    "                       recommended ones: aio.block_size, queue_depth,\n"
	    "                       intra_op_parallelism, offload_param.buffer_count,\n"
	    "                       pin_memory; then buffer_size, priced, not timed (the\n"
	    "                       smallest DeepSpeed takes moves the same bytes);\n"
	    "                       parameter tensors read buffer_count at\n"
	    "                       a time and written back, each optimizer sub-group's\n"
	    "                       four states read and three written, through libaio\n"
	    "                       and O_DIRECT as DeepSpeed does; progress on stderr.\n"
	    "                       Prints GB/s and host memory per node (pinned and\n"
	    "                       pageable) of each, the fastest that fits the node's\n"
	    "                       memory (of those within 3% of it, the one that pins\n"
	    "                       least) with the reason, and the ds_config.json keys\n"
	    "                       and the tensorfs.ini to paste.  Its files go in a\n"
	    "                       directory of their own in DIR, removed at the end\n"
	    "  --budget SECONDS     about how long to measure (default 120)\n"
	    "  --measure-memory SIZE\n"
	    "                       the buffers it may allocate, at most (default 1G;\n"
	    "                       it says how much it uses): tensors are moved at a\n"
	    "                       scale of at most 64 MiB each, smaller to fit this\n"
	    "\n"
	    "Output:\n"
	    "  --json               print the same as one JSON object\n"
	    "  --strict             exit 1 on warnings too (for CI gates)\n"
	    "  --full               print the equivalent tensorfs.ini in full, with\n"
	    "                       comments, instead of only the keys that differ\n"
	    "                       from the defaults\n"
	    "  -h, --help           print this help and exit\n"
	    "  -V, --version        print the version and exit\n"
	    "\n"
	    "Sizes take K, M, G, T (powers of 1024, also KiB...TiB) or KB, MB, GB, TB\n"
	    "(powers of 1000).  Counts take DeepSpeed's notation: 1e9, 1.5e9.\n"
	    "\n"
	    "Host memory is counted per rank as DeepSpeed 0.16 allocates it: the\n"
	    "parameter swap pool (buffer_count x buffer_size x dtype), parameters\n"
	    "kept in RAM (min(max_in_cpu, parameters per rank) x dtype), the fp16\n"
	    "buffer for NVMe sub-groups, the gradient partitions, the optimizer swap\n"
	    "pool (optimizer buffer_count x sub-group x 4 B) and the fp32 gradient\n"
	    "buffer, or the optimizer state itself when offloaded to cpu; the\n"
	    "tensorfs mount adds its cache (max_in_cpu), its pool and 64 MiB per\n"
	    "node.  NVMe holds dtype x N of parameters and 16 B x N of optimizer\n"
	    "state (fp32 weights, exp_avg, exp_avg_sq, fp32 gradients) per node's\n"
	    "share.  A node over 90% of its RAM is a warning, over 100% a failure.\n"
	    "\n"
	    "Exit status (0 success, 1 failure or refusal, 2 usage error):\n"
	    "  0   the configuration fits; warnings may be printed (--strict: exit 1)\n"
	    "  1   it will fail (DeepSpeed stops, or the node runs out of memory);\n"
	    "      or an input cannot be read or parsed (a missing file, invalid\n"
	    "      JSON with line:column, a bad INI key or value with file:line, a\n"
	    "      config.json without the sizes) or holds a bad value (a negative\n"
	    "      buffer_size, device \"gpu\"), named with its file and key; or the\n"
	    "      output cannot be written\n"
	    "  2   usage error: unknown option, missing --params/--model, bad number\n"
	    "      or version\n"
	    "\n"
	    "Examples:\n"
	    "  tensorfs-plan --deepspeed ds_config.json --params 70e9 --ranks 8\n"
	    "  tensorfs-plan -c /etc/tensorfs/tensorfs.ini --model config.json \\\n"
	    "        --ram 512G --json\n"
	    "  tensorfs-plan --deepspeed ds_config.json --deepspeed-version 0.14.5 \\\n"
	    "        --model model.safetensors.index.json\n"
	    "  tensorfs-plan --deepspeed ds_config.json --model config.json \\\n"
	    "        --measure /local_nvme --budget 120\n",
	    f);
}
/* clang-format on */

/* die(CODE, FMT, ...): tfs_die() as this program, with the hint of
 * --help after a usage error */
#define die(code, ...) tfs_die(prog, code, (code) == EXIT_USAGE, __VA_ARGS__)

/* ===== what was read, to explain ===== */

struct input {
	struct tfs_config c;
	struct tfs_plan_facts f;
	const char *ini, *ds, *model;
	uint64_t hidden; /* from --model, for "auto" values */
	int dtype_given;
	int ram_given;
	struct tfs_deepspeed dsr;	 /* what --deepspeed said */
	struct tfs_plan_model weights;	 /* --model's tensors, if weights */
	struct tfs_plan_tensor *tensors; /* --model's, or NULL */
	size_t ntensors;
	const char *tensors_from; /* "config.json", "torch.save", ... */
	int trainer_groups;	  /* --param-groups trainer */
	struct tfs_plan *p;	  /* problems of the inputs go here first */
};

/* ===== numbers and files ===== */

/* A count in DeepSpeed's notation, no unit. */
static int parse_count(const char *s, uint64_t *out)
{
	int suffix = 0;

	return tfs_parse_size(s, out, &suffix) || suffix ? -EINVAL : 0;
}

static uint64_t count_arg(const char *opt, const char *s, uint64_t min)
{
	uint64_t v;

	if (parse_count(s, &v) || v < min)
		die(EXIT_USAGE, "%s '%s' is not a whole number%s (e.g. 8, 7e9)",
		    opt, s, min ? " above 0" : "");
	return v;
}

static uint64_t size_arg(const char *opt, const char *s)
{
	uint64_t v;

	if (tfs_parse_size(s, &v, NULL) || !v)
		die(EXIT_USAGE, "%s '%s' is not a size (e.g. 256G, 512GiB)",
		    opt, s);
	return v;
}

/* MemTotal of this machine, or 0. */
static uint64_t mem_total(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* Open an input file for reading ("-": standard input, once), or exit
 * 1 saying why (2 for "-" twice): fopen() opens a directory, whose read
 * then fails as "end of file". */
static FILE *open_input(const char *path, const char *what)
{
	static const char *stdin_for;
	struct stat st;
	FILE *f;

	if (!strcmp(path, "-")) {
		if (stdin_for)
			die(EXIT_USAGE,
			    "%s '-': standard input is the %s "
			    "already; give one of them as a file",
			    what, stdin_for);
		stdin_for = what;
		return stdin;
	}
	f = fopen(path, "r");

	if (!f)
		die(EXIT_FAILURE, "%s '%s': cannot open: %s", what, path,
		    strerror(errno));
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
		die(EXIT_FAILURE, "%s '%s' is a directory; give the file", what,
		    path);
	return f;
}

/* Load a JSON file or exit 1 saying where it is wrong. */
static json_t *load_json(const char *path, const char *what)
{
	json_error_t e;
	json_t *j;
	FILE *f = open_input(path, what);

	j = json_loadf(f, 0, &e);
	fclose(f);
	if (!j)
		die(EXIT_FAILURE, "%s:%d:%d: invalid JSON: %s; fix the file",
		    path, e.line, e.column, e.text);
	if (!json_is_object(j))
		die(EXIT_FAILURE,
		    "%s: the top level is not a JSON object; give "
		    "a %s",
		    path, what);
	return j;
}

/* --deepspeed: read in->ds into in, or exit 1 with why (each refused
 * value on a line of its own). */
static void read_deepspeed(struct input *in)
{
	struct tfs_deepspeed *ds = &in->dsr;
	char err[4096];
	FILE *f = open_input(in->ds, "DeepSpeed config");
	const char *line, *nl;
	int rc;

	ds->name = in->ds;
	ds->c = &in->c;
	ds->p = in->p;
	ds->hidden = in->hidden;
	ds->dtype_given = in->dtype_given;
	ds->version = in->f.ds_version;
	rc = tfs_deepspeed_read_file(ds, f, err, sizeof(err));
	fclose(f);
	if (rc) {
		/* every refused value, each on a line of its own */
		for (line = err; (nl = strchr(line, '\n')); line = nl + 1)
			fprintf(stderr, "%s: %.*s\n", prog, (int)(nl - line),
				line);
		die(EXIT_FAILURE, "%s", line);
	}
	in->f.stage = ds->stage;
}

/* ===== the model's config.json ===== */

/* A count of o that only a warning reads: 0 if absent or not one. */
static uint64_t model_count(const json_t *o, const char *name)
{
	const json_t *v = json_object_get(o, name);

	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	return 0;
}

/* A size of the model (hidden_size, num_hidden_layers, ...): 0 if absent
 * or null.  Exits 1 naming the key (after at: "" or "text_config.") if
 * it is anything but a whole number above 0 (a string, a fraction, a
 * negative number): counting with the key left out would only say that
 * the sizes are missing. */
static uint64_t model_uint(const struct input *in, const json_t *o,
			   const char *at, const char *name)
{
	const json_t *v = json_object_get(o, name);
	char *text;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	die(EXIT_FAILURE, "%s: %s%s: %.48s%s is not a whole number%s; %s",
	    in->model, at, name, text ? text : "(a value)",
	    text && strlen(text) > 48 ? "..." : "",
	    json_is_integer(v) ? " above 0" : "",
	    json_is_string(v) ? "write the number without quotes"
			      : "fix the file");
}

static void read_model(struct input *in, uint64_t *params, uint64_t *largest)
{
	json_t *root = load_json(in->model, "Hugging Face config.json");
	const json_t *o = root, *tied;
	struct tfs_plan_shape s = { 0 };
	const char *at = "";
	int rc;

	/* multimodal configs keep the language model in text_config */
	if (!json_object_get(o, "hidden_size") &&
	    json_is_object(json_object_get(o, "text_config"))) {
		o = json_object_get(o, "text_config");
		at = "text_config.";
	}
	s.hidden = model_uint(in, o, at, "hidden_size");
	s.layers = model_uint(in, o, at, "num_hidden_layers");
	s.intermediate = model_uint(in, o, at, "intermediate_size");
	s.vocab = model_uint(in, o, at, "vocab_size");
	s.heads = model_uint(in, o, at, "num_attention_heads");
	s.kv_heads = model_uint(in, o, at, "num_key_value_heads");
	s.head_dim = model_uint(in, o, at, "head_dim");
	tied = json_object_get(root, "tie_word_embeddings");
	if (!tied)
		tied = json_object_get(o, "tie_word_embeddings");
	s.tied = tied ? json_is_true(tied) : 1;
	rc = tfs_plan_count_params(&s, params, largest);
	if (rc)
		die(EXIT_FAILURE,
		    "%s: cannot count the parameters: it needs "
		    "hidden_size, num_hidden_layers, intermediate_size, "
		    "vocab_size and num_attention_heads (dividing hidden_size "
		    "unless head_dim is given); give --params N instead",
		    in->model);
	in->hidden = s.hidden;
	if (!model_count(o, "num_local_experts") &&
	    !model_count(o, "num_experts")) {
		rc = tfs_plan_llama_tensors(&s, in->trainer_groups,
					    &in->tensors, &in->ntensors);
		if (rc == -ENOMEM)
			die(EXIT_FAILURE, "out of memory");
		if (!rc)
			in->tensors_from = "config.json";
	}
	if (model_count(o, "num_local_experts") ||
	    model_count(o, "num_experts"))
		tfs_plan_add(in->p, TFS_PLAN_WARN, "",
			     "%s: a mixture of "
			     "experts; the count (%llu) has one MLP per layer, "
			     "not one per expert; give --params with the real "
			     "total",
			     in->model, (unsigned long long)*params);
	json_decref(root);
}

/* --model: a weights file or an index (tfs_plan_model_read()), else a
 * config.json (read_model()).  Exits 1 on one that cannot be read. */
static void read_weights_or_config(struct input *in, uint64_t *params,
				   uint64_t *largest)
{
	char err[1024];
	int rc;

	if (!strcmp(in->model, "-")) {
		read_model(in, params, largest);
		return;
	}
	fclose(open_input(in->model, "model")); /* exits if it cannot */
	rc = tfs_plan_model_read(
	    in->model, in->trainer_groups ? TFS_PLAN_MODEL_TRAINER_GROUPS : 0,
	    &in->weights, err, sizeof(err));
	if (rc == -EMEDIUMTYPE) {
		read_model(in, params, largest);
		return;
	}
	if (rc)
		die(EXIT_FAILURE, "--model %s", err);
	in->tensors = in->weights.tensors;
	in->ntensors = in->weights.ntensors;
	in->tensors_from = in->weights.format;
	*params = in->weights.params;
	*largest = in->weights.largest;
}

/* Whether this process holds CAP_IPC_LOCK (root has it), which
 * RLIMIT_MEMLOCK does not bind. */
static int ipc_lock_capable(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 14) & 1; /* CAP_IPC_LOCK */
}

/* ===== text output ===== */

/* Print text wrapped at 79 columns: the first line after lead, the
 * others after indent. */
static void wrap2(FILE *f, const char *lead, const char *indent,
		  const char *text)
{
	size_t col = strlen(lead), start = col;
	const char *p = text;

	fputs(lead, f);
	while (*p) {
		size_t w = strcspn(p, " ");

		if (col > start && col + 1 + w > 79) {
			fprintf(f, "\n%s", indent);
			col = start = strlen(indent);
		} else if (col > start) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, w, f);
		col += w;
		p += w;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

static void wrap(FILE *f, const char *indent, const char *text)
{
	wrap2(f, indent, indent, text);
}

static const char *cell(uint64_t v, char *buf, size_t len)
{
	if (!v)
		return "-";
	return tfs_format_size(v, buf, len);
}

static void item_row(const struct tfs_plan_item *it)
{
	char a[48], b[48], line[512];

	printf("  %-38s %11s %11s\n", it->name, cell(it->pinned, a, sizeof(a)),
	       cell(it->pageable, b, sizeof(b)));
	snprintf(line, sizeof(line), "= %s", it->formula);
	wrap(stdout, "      ", line);
}

static void sum_row(const char *name, uint64_t pinned, uint64_t pageable)
{
	char a[48], b[48];

	printf("  %-38s %11s %11s\n", name, cell(pinned, a, sizeof(a)),
	       cell(pageable, b, sizeof(b)));
}

static char *dev_name(uint64_t d, char *buf, size_t len)
{
	const struct tfs_cfg_key *k = tfs_config_key("offload_param", "device");
	struct tfs_config c;

	memset(&c, 0, sizeof(c));
	c.offload_param_device = d;
	return tfs_config_format(&c, k, buf, len);
}

/* The ini text: keys that differ from the defaults, or all of it. */
static char *ini_text(const struct tfs_config *c, int full)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die(EXIT_FAILURE, "out of memory");
	if (full)
		tfs_config_print(c, f);
	else
		tfs_config_print_changed(c, f);
	fclose(f);
	return buf;
}

static const char *const sev_name[] = { "note", "warning", "error" };

/* The exit status of a plan: 1 if it will fail, or with --strict if it
 * has warnings; else 0. */
static int plan_exit(const struct tfs_plan *p, int strict)
{
	if (p->severity == TFS_PLAN_FAIL ||
	    (strict && p->severity == TFS_PLAN_WARN))
		return EXIT_FAILURE;
	return EXIT_SUCCESS;
}

/* The first lines: the model, the inputs, the machine. */
static void text_inputs(const struct input *in, const struct tfs_plan *p)
{
	const struct tfs_plan_facts *f = &in->f;
	char a[48], b[48], d[48], e[48], line[1024];

	printf("tensorfs-plan: %s parameters, %s (%zu B), %u rank%s x %u "
	       "node%s (world %llu): %s per rank\n",
	       tfs_format_count(f->params, a, sizeof(a)),
	       tfs_dtype_name((unsigned)in->c.offload_param_dtype), p->elem,
	       f->ranks, f->ranks == 1 ? "" : "s", f->nodes,
	       f->nodes == 1 ? "" : "s", (unsigned long long)p->world,
	       tfs_format_count(p->per_rank, b, sizeof(b)));
	snprintf(line, sizeof(line),
		 "inputs: %s%s%s%s; ZeRO stage %u%s; "
		 "offload_param %s, offload_optimizer %s",
		 in->ini ? in->ini : "", in->ini && in->ds ? " + " : "",
		 in->ds ? in->ds : "", !in->ini && !in->ds ? "defaults" : "",
		 f->stage, in->ds ? "" : " (assumed)",
		 dev_name(in->c.offload_param_device, d, sizeof(d)),
		 dev_name(in->c.offload_optimizer_device, e, sizeof(e)));
	wrap2(stdout, "", "  ", line);
	snprintf(line, sizeof(line),
		 "machine: RAM %s per node%s, "
		 "RLIMIT_MEMLOCK %s, NVMe %s",
		 f->ram ? tfs_format_size(f->ram, a, sizeof(a)) : "unknown",
		 in->ram_given ? "" : " (MemTotal)",
		 f->memlock == UINT64_MAX
		     ? "unlimited"
		     : tfs_format_size(f->memlock, b, sizeof(b)),
		 f->nvme ? tfs_format_size(f->nvme, d, sizeof(d))
			 : "not given (--nvme)");
	wrap2(stdout, "", "  ", line);
	if (p->exact) {
		snprintf(line, sizeof(line),
			 "model: %zu parameter tensor%s from %s (%s%s); "
			 "largest partition %llu per rank; %llu optimizer "
			 "sub-group%s, the largest %llu elements (exact)",
			 f->ntensors, f->ntensors == 1 ? "" : "s", in->model,
			 in->tensors_from,
			 in->weights.ntensors && !in->weights.model_order
			     ? ", in name order"
			     : "",
			 (unsigned long long)p->largest_partition,
			 (unsigned long long)p->subgroups,
			 p->subgroups == 1 ? "" : "s",
			 (unsigned long long)p->largest_subgroup);
		wrap2(stdout, "", "  ", line);
		if (p->param_buffers) {
			snprintf(line, sizeof(line),
				 "parameter swap buffers DeepSpeed holds at "
				 "once: %llu (%llu of %llu NVMe parameters "
				 "kept for the backward pass)",
				 (unsigned long long)p->param_buffers,
				 (unsigned long long)p->kept,
				 (unsigned long long)p->swapped);
			wrap2(stdout, "", "  ", line);
		}
	} else if (p->largest_partition) {
		snprintf(line, sizeof(line),
			 "largest parameter %llu elements, "
			 "partition %llu per rank; largest sub-group at most "
			 "%llu (a bound: give --model for the exact one)",
			 (unsigned long long)f->largest_param,
			 (unsigned long long)p->largest_partition,
			 (unsigned long long)p->largest_subgroup);
		wrap2(stdout, "", "  ", line);
	}
}

/* The "auto" and substituted values of the ds_config.json. */
static void text_notes(const struct input *in)
{
	char line[1024];

	if (in->dsr.nnotes) {
		printf("\n\"auto\" and substituted values:\n");
		for (size_t i = 0; i < in->dsr.nnotes; i++) {
			snprintf(line, sizeof(line), "%s = %s: %s",
				 in->dsr.notes[i].key, in->dsr.notes[i].value,
				 in->dsr.notes[i].how);
			wrap2(stdout, "  ", "    ", line);
		}
	}
}

/* The host memory table, DeepSpeed's then the mount's. */
static void text_memory(const struct tfs_plan_facts *f,
			const struct tfs_plan *p)
{
	char a[48], b[48], d[48], e[48], line[1024];
	uint64_t tot = p->node_pinned + p->node_pageable;

	printf("\n%-40s %11s %11s\n", "host memory", "pinned", "pageable");
	if (p->nds) {
		printf("DeepSpeed, per rank:\n");
		for (size_t i = 0; i < p->nds; i++)
			item_row(&p->ds[i]);
		sum_row("per rank", p->rank_pinned, p->rank_pageable);
		snprintf(line, sizeof(line), "per node (%u rank%s)", f->ranks,
			 f->ranks == 1 ? "" : "s");
		sum_row(line, p->rank_pinned * f->ranks,
			p->rank_pageable * f->ranks);
	} else {
		printf("DeepSpeed: nothing offloaded to host memory\n");
	}
	printf("tensorfs mount, per node (bounds it never passes):\n");
	for (size_t i = 0; i < sizeof(p->tfs) / sizeof(p->tfs[0]); i++)
		item_row(&p->tfs[i]);
	wrap(stdout, "    ",
	     "(a run fills the cache and the pool only with the data it "
	     "moves, and the overhead is a reserve: the mount's resident "
	     "memory stays below these, often well below)");
	sum_row("node total", p->node_pinned, p->node_pageable);
	if (f->ram)
		snprintf(line, sizeof(line),
			 "= %s of %s RAM (%llu%%); pinned "
			 "per rank %s, RLIMIT_MEMLOCK %s",
			 tfs_format_size(tot, a, sizeof(a)),
			 tfs_format_size(f->ram, b, sizeof(b)),
			 (unsigned long long)(tot / (f->ram / 100 ? f->ram / 100
								  : 1)),
			 tfs_format_size(p->rank_pinned, d, sizeof(d)),
			 f->memlock == UINT64_MAX
			     ? "unlimited"
			     : tfs_format_size(f->memlock, e, sizeof(e)));
	else
		snprintf(line, sizeof(line), "= %s; RAM unknown",
			 tfs_format_size(tot, a, sizeof(a)));
	wrap(stdout, "    ", line);
}

/* The NVMe space of the swap files. */
static void text_nvme(const struct tfs_plan_facts *f, const struct tfs_plan *p)
{
	char a[48], b[48], d[48], e[48], line[1024];
	uint64_t nv;

	nv = p->nvme_params + p->nvme_optimizer;
	if (nv) {
		size_t n = (size_t)snprintf(line, sizeof(line),
					    "NVMe space per node:");

		if (p->nvme_params)
			n += (size_t)snprintf(
			    line + n, sizeof(line) - n,
			    " %s of parameter files (P x %zu B x %u "
			    "rank%s)%s",
			    tfs_format_size(p->nvme_params, a, sizeof(a)),
			    p->elem, f->ranks, f->ranks == 1 ? "" : "s",
			    p->nvme_optimizer ? " +" : "");
		if (p->nvme_optimizer)
			n += (size_t)snprintf(
			    line + n, sizeof(line) - n,
			    " %s of optimizer files (P x 16 B x %u rank%s)",
			    tfs_format_size(p->nvme_optimizer, b, sizeof(b)),
			    f->ranks, f->ranks == 1 ? "" : "s");
		snprintf(line + n, sizeof(line) - n, " = %s%s%s",
			 tfs_format_size(nv, d, sizeof(d)),
			 f->nvme ? " of " : "; capacity not given (--nvme)",
			 f->nvme ? tfs_format_size(f->nvme, e, sizeof(e)) : "");
		printf("\n");
		wrap2(stdout, "", "  ", line);
	} else {
		printf("\nNVMe space: nothing swapped to NVMe\n");
	}
}

/* Problems, recommended values and the verdict (strict: --strict). */
static void text_advice(const struct tfs_plan_facts *f,
			const struct tfs_plan *p, int strict)
{
	char a[48], b[48], d[48], e[48], line[1024];

	printf("\nproblems:%s\n", p->nproblems ? "" : " none");
	for (size_t i = 0; i < p->nproblems; i++) {
		snprintf(line, sizeof(line), "%s: %s",
			 sev_name[p->problems[i].severity],
			 p->problems[i].text);
		wrap2(stdout, "  ", "    ", line);
	}

	printf("\nrecommended values:%s\n", p->nrecs ? "" : " none");
	for (size_t i = 0; i < p->nrecs; i++) {
		const struct tfs_plan_rec *r = &p->recs[i];

		if (r->changed)
			printf("  %s = %s  (now %s)\n", r->key, r->value,
			       *r->current ? r->current : "empty");
		else
			printf("  %s = %s  (keep)\n", r->key, r->value);
		wrap(stdout, "      ", r->reason);
	}
	snprintf(line, sizeof(line),
		 "with the recommended values: %s pinned "
		 "+ %s pageable = %s per node%s%s: %s",
		 tfs_format_size(p->rec_node_pinned, a, sizeof(a)),
		 tfs_format_size(p->rec_node_pageable, b, sizeof(b)),
		 tfs_format_size(p->rec_node_pinned + p->rec_node_pageable, d,
				 sizeof(d)),
		 f->ram ? " of " : "",
		 f->ram ? tfs_format_size(f->ram, e, sizeof(e)) : "",
		 tfs_plan_verdict(p->rec_severity));
	wrap2(stdout, "", "  ", line);
	printf("\nverdict: %s (exit %d%s)\n", tfs_plan_verdict(p->severity),
	       plan_exit(p, strict),
	       strict && p->severity == TFS_PLAN_WARN ? ", --strict" : "");
}

/* --measure's results, when it ran. */
static const struct tfs_tune *tune;

static void print_text(const struct input *in, const struct tfs_plan *p,
		       int full, int strict)
{
	char *ini;

	text_inputs(in, p);
	text_notes(in);
	ini = ini_text(&in->c, full);
	printf("\nequivalent tensorfs.ini (%s):\n",
	       full ? "every key"
		    : "keys that differ from the defaults; "
		      "--full prints all");
	fputs(*ini ? ini : "(all defaults)\n", stdout);
	free(ini);

	text_memory(&in->f, p);
	text_nvme(&in->f, p);
	if (tune)
		tfs_tune_print(tune, stdout);
	text_advice(&in->f, p, strict);
}

/* ===== JSON output ===== */

static json_t *bytes_json(uint64_t v)
{
	return json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v));
}

static json_t *item_json(const struct tfs_plan_item *it)
{
	return json_pack("{s:s, s:o, s:o, s:s, s:s}", "name", it->name,
			 "pinned", bytes_json(it->pinned), "pageable",
			 bytes_json(it->pageable), "formula", it->formula,
			 "source", it->source);
}

static json_t *pair_json(uint64_t pinned, uint64_t pageable)
{
	return json_pack("{s:o, s:o, s:o}", "pinned", bytes_json(pinned),
			 "pageable", bytes_json(pageable), "total",
			 bytes_json(pinned + pageable));
}

/* The model, the machine and the inputs, into o. */
static void json_inputs(json_t *o, const struct input *in,
			const struct tfs_plan *p)
{
	const struct tfs_plan_facts *f = &in->f;

	json_object_set_new(
	    o, "model",
	    json_pack("{s:o, s:s, s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:o}",
		      "params", bytes_json(f->params), "dtype",
		      tfs_dtype_name((unsigned)in->c.offload_param_dtype),
		      "bytes_per_param", (int)p->elem, "ranks_per_node",
		      (int)f->ranks, "nodes", (int)f->nodes, "world_size",
		      bytes_json(p->world), "params_per_rank",
		      bytes_json(p->per_rank), "largest_param",
		      f->largest_param ? bytes_json(f->largest_param)
				       : json_null(),
		      "largest_partition",
		      p->largest_partition ? bytes_json(p->largest_partition)
					   : json_null(),
		      "largest_sub_group", bytes_json(p->largest_subgroup)));
	json_t *mo = json_object_get(o, "model");

	json_object_set_new(mo, "largest_sub_group_exact",
			    json_boolean(p->exact));
	json_object_set_new(mo, "sub_groups", bytes_json(p->subgroups));
	json_object_set_new(mo, "tensors",
			    p->exact ? bytes_json(f->ntensors) : json_null());
	json_object_set_new(mo, "param_swap_buffers_needed",
			    p->param_buffers ? bytes_json(p->param_buffers)
					     : json_null());
	json_object_set_new(
	    mo, "deepspeed_version",
	    json_sprintf("0.%u.%u",
			 (f->ds_version ? f->ds_version : TFS_PLAN_DS_NEWEST) /
			     100 % 100,
			 (f->ds_version ? f->ds_version : TFS_PLAN_DS_NEWEST) %
			     100));
	json_object_set_new(
	    o, "machine",
	    json_pack("{s:o, s:o, s:o, s:i}", "ram",
		      f->ram ? bytes_json(f->ram) : json_null(), "memlock",
		      f->memlock == UINT64_MAX ? json_string("unlimited")
					       : bytes_json(f->memlock),
		      "nvme", f->nvme ? bytes_json(f->nvme) : json_null(),
		      "drives", (int)(f->drives ? f->drives : 1)));
	json_object_set_new(
	    o, "inputs",
	    json_pack("{s:o, s:o, s:o, s:i}", "ini",
		      in->ini ? json_string(in->ini) : json_null(), "deepspeed",
		      in->ds ? json_string(in->ds) : json_null(), "model",
		      in->model ? json_string(in->model) : json_null(),
		      "zero_stage", (int)f->stage));
}

/* The "auto" values, every setting and the equivalent INI, into o. */
static void json_config(json_t *o, const struct input *in, int full)
{
	json_t *a, *settings = json_object();
	char buf[TFS_CFG_STR_MAX], *ini, key[96];
	const struct tfs_cfg_key *keys;
	size_t n;

	a = json_array();
	for (size_t i = 0; i < in->dsr.nnotes; i++)
		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:s}", "key", in->dsr.notes[i].key,
				 "value", in->dsr.notes[i].value, "how",
				 in->dsr.notes[i].how));
	json_object_set_new(o, "auto", a);

	keys = tfs_config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s.%s", keys[i].section,
			 keys[i].name);
		json_object_set_new(settings, key,
				    json_string(tfs_config_format(
					&in->c, &keys[i], buf, sizeof(buf))));
	}
	json_object_set_new(o, "settings", settings);
	ini = ini_text(&in->c, full);
	json_object_set_new(o, "ini", json_string(ini));
	free(ini);
}

/* Host memory, DeepSpeed's and the mount's, and NVMe space, into o. */
static void json_memory(json_t *o, const struct tfs_plan_facts *f,
			const struct tfs_plan *p)
{
	json_t *a;

	a = json_array();
	for (size_t i = 0; i < p->nds; i++)
		json_array_append_new(a, item_json(&p->ds[i]));
	json_object_set_new(o, "deepspeed_per_rank", a);
	json_object_set_new(o, "deepspeed_rank_total",
			    pair_json(p->rank_pinned, p->rank_pageable));
	json_object_set_new(
	    o, "deepspeed_node_total",
	    pair_json(p->rank_pinned * f->ranks, p->rank_pageable * f->ranks));
	a = json_array();
	for (size_t i = 0; i < sizeof(p->tfs) / sizeof(p->tfs[0]); i++)
		json_array_append_new(a, item_json(&p->tfs[i]));
	json_object_set_new(o, "tensorfs_per_node", a);
	json_object_set_new(o, "node_total",
			    pair_json(p->node_pinned, p->node_pageable));
	json_object_set_new(
	    o, "nvme_per_node",
	    json_pack("{s:o, s:o, s:o}", "params", bytes_json(p->nvme_params),
		      "optimizer", bytes_json(p->nvme_optimizer), "total",
		      bytes_json(p->nvme_params + p->nvme_optimizer)));
}

/* Problems, recommended values, the verdict and the exit status, into
 * o: "verdict" says fits, warnings or will fail whatever "strict" is,
 * "exit_code" is the status tensorfs-plan exits with. */
static void json_advice(json_t *o, const struct tfs_plan *p, int strict)
{
	json_t *a;

	a = json_array();
	for (size_t i = 0; i < p->nproblems; i++)
		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:s}", "severity",
				 sev_name[p->problems[i].severity], "key",
				 p->problems[i].key, "message",
				 p->problems[i].text));
	json_object_set_new(o, "problems", a);

	a = json_array();
	for (size_t i = 0; i < p->nrecs; i++)
		json_array_append_new(
		    a,
		    json_pack("{s:s, s:s, s:s, s:b, s:s}", "key",
			      p->recs[i].key, "value", p->recs[i].value,
			      "current", p->recs[i].current, "changed",
			      p->recs[i].changed, "reason", p->recs[i].reason));
	json_object_set_new(o, "recommended", a);
	json_object_set_new(
	    o, "with_recommended",
	    json_pack("{s:o, s:s}", "node_total",
		      pair_json(p->rec_node_pinned, p->rec_node_pageable),
		      "verdict", tfs_plan_verdict(p->rec_severity)));
	json_object_set_new(o, "verdict",
			    json_string(tfs_plan_verdict(p->severity)));
	json_object_set_new(o, "strict", json_boolean(strict));
	json_object_set_new(o, "exit_code", json_integer(plan_exit(p, strict)));
}

static void print_json(const struct input *in, const struct tfs_plan *p,
		       int full, int strict)
{
	json_t *o = json_object();

	json_inputs(o, in, p);
	json_config(o, in, full);
	json_memory(o, &in->f, p);
	if (tune)
		json_object_set_new(o, "measure", tfs_tune_json(tune));
	json_advice(o, p, strict);
	if (json_dumpf(o, stdout, JSON_INDENT(2)) ||
	    fputc('\n', stdout) == EOF) {
		tfs_closeout_said();
		die(EXIT_FAILURE, "cannot write the output");
	}
	json_decref(o);
}

/* ===== main ===== */

/* The command line, beyond what goes straight into struct input. */
struct args {
	const char *dtype, *params_arg;
	uint64_t params, largest_arg;
	int json, full, strict, memlock_given;
	const char *measure;  /* --measure DIR */
	double budget;	      /* --budget seconds */
	uint64_t measure_mem; /* --measure-memory bytes, 0: 1 GiB */
};

/* The long options; the short ones are -c, -h and -V. */
enum {
	O_DS = 256,
	O_PARAMS,
	O_MODEL,
	O_LARGEST,
	O_DTYPE,
	O_RANKS,
	O_NODES,
	O_DRIVES,
	O_RAM,
	O_NVME,
	O_MEMLOCK,
	O_JSON,
	O_FULL,
	O_STRICT,
	O_DSVER,
	O_MEASURE,
	O_BUDGET,
	O_MEASURE_MEM,
	O_GROUPS
};
static const struct option longopts[] = {
	{ "deepspeed", required_argument, NULL, O_DS },
	{ "params", required_argument, NULL, O_PARAMS },
	{ "model", required_argument, NULL, O_MODEL },
	{ "largest-param", required_argument, NULL, O_LARGEST },
	{ "dtype", required_argument, NULL, O_DTYPE },
	{ "ranks", required_argument, NULL, O_RANKS },
	{ "nodes", required_argument, NULL, O_NODES },
	{ "drives", required_argument, NULL, O_DRIVES },
	{ "ram", required_argument, NULL, O_RAM },
	{ "nvme", required_argument, NULL, O_NVME },
	{ "memlock", required_argument, NULL, O_MEMLOCK },
	{ "json", no_argument, NULL, O_JSON },
	{ "full", no_argument, NULL, O_FULL },
	{ "strict", no_argument, NULL, O_STRICT },
	{ "deepspeed-version", required_argument, NULL, O_DSVER },
	{ "measure", required_argument, NULL, O_MEASURE },
	{ "budget", required_argument, NULL, O_BUDGET },
	{ "measure-memory", required_argument, NULL, O_MEASURE_MEM },
	{ "param-groups", required_argument, NULL, O_GROUPS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Parse the options into in and a; exits on --help, --version and
 * usage errors. */
static void parse_args(int argc, char **argv, struct input *in, struct args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "c:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			in->ini = optarg;
			break;
		case O_DS:
			in->ds = optarg;
			break;
		case O_PARAMS:
			a->params_arg = optarg;
			a->params = count_arg("--params", optarg, 1);
			break;
		case O_MODEL:
			in->model = optarg;
			break;
		case O_LARGEST:
			a->largest_arg =
			    count_arg("--largest-param", optarg, 1);
			break;
		case O_DTYPE:
			a->dtype = optarg;
			if (tfs_dtype_lookup(a->dtype) < 0)
				die(EXIT_USAGE,
				    "--dtype '%s' is not a tensor "
				    "type; use bf16, fp16 or fp32",
				    a->dtype);
			in->dtype_given = 1;
			break;
		case O_RANKS:
			in->f.ranks = (unsigned)count_arg("--ranks", optarg, 1);
			if (in->f.ranks > 4096)
				die(EXIT_USAGE, "--ranks %s: at most 4096",
				    optarg);
			break;
		case O_NODES:
			in->f.nodes = (unsigned)count_arg("--nodes", optarg, 1);
			if (in->f.nodes > 1000000)
				die(EXIT_USAGE, "--nodes %s: at most 1e6",
				    optarg);
			break;
		case O_DRIVES:
			in->f.drives =
			    (unsigned)count_arg("--drives", optarg, 1);
			if (in->f.drives > 64)
				die(EXIT_USAGE,
				    "--drives %s: a tensorfs set has at most "
				    "64 members",
				    optarg);
			break;
		case O_RAM:
			in->f.ram = size_arg("--ram", optarg);
			in->ram_given = 1;
			break;
		case O_NVME:
			in->f.nvme = size_arg("--nvme", optarg);
			break;
		case O_MEMLOCK:
			in->f.memlock = strcasecmp(optarg, "unlimited")
					    ? size_arg("--memlock", optarg)
					    : UINT64_MAX;
			a->memlock_given = 1;
			break;
		case O_JSON:
			a->json = 1;
			break;
		case O_FULL:
			a->full = 1;
			break;
		case O_STRICT:
			a->strict = 1;
			break;
		case O_GROUPS:
			if (!strcmp(optarg, "one"))
				in->trainer_groups = 0;
			else if (!strcmp(optarg, "trainer"))
				in->trainer_groups = 1;
			else
				die(EXIT_USAGE,
				    "--param-groups '%s': one (the optimizer "
				    "built on model.parameters()) or trainer "
				    "(Hugging Face's Trainer: weight decay or "
				    "not)",
				    optarg);
			break;
		case O_MEASURE:
			a->measure = optarg;
			break;
		case O_BUDGET: {
			char *end;

			errno = 0;
			a->budget = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(a->budget >= 1) || a->budget > 86400)
				die(EXIT_USAGE,
				    "--budget '%s' is not a number of seconds "
				    "from 1 to 86400",
				    optarg);
			break;
		}
		case O_MEASURE_MEM:
			a->measure_mem = size_arg("--measure-memory", optarg);
			if (a->measure_mem < (16ull << 20))
				die(EXIT_USAGE,
				    "--measure-memory %s: at least 16M",
				    optarg);
			break;
		case O_DSVER:
			switch (
			    tfs_plan_ds_version(optarg, &in->f.ds_version)) {
			case 0:
				break;
			case -ERANGE:
				die(EXIT_USAGE,
				    "--deepspeed-version %s: tensorfs-plan "
				    "knows DeepSpeed 0.14.0 to 0.16.5",
				    optarg);
			default:
				die(EXIT_USAGE,
				    "--deepspeed-version '%s' is not a "
				    "version (e.g. 0.14.5, 0.16.4)",
				    optarg);
			}
			if (in->f.ds_version > TFS_PLAN_DS_NEWEST)
				tfs_plan_add(
				    in->p, TFS_PLAN_FITS, "",
				    "DeepSpeed %s is newer than 0.16.5, the "
				    "newest whose code tensorfs-plan follows; "
				    "it plans as for 0.16.5",
				    optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("tensorfs-plan %s\n", TFS_VERSION_STRING);
			exit(0);
		default:
			fprintf(stderr,
				"Try '%s --help' for more information.\n",
				prog);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		die(EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
	if ((a->budget || a->measure_mem) && !a->measure)
		die(EXIT_USAGE, "--budget and --measure-memory go with "
				"--measure DIR");
	if (!a->params_arg && !in->model)
		die(EXIT_USAGE,
		    "give the model's size: --params N (e.g. 7e9) or "
		    "--model FILE (a config.json or the weights)");
}

/* -c, --model, --params, --largest-param, --deepspeed and --dtype, in
 * that order, into in; exits on an input that cannot be used. */
static void read_inputs(struct input *in, struct args *a)
{
	uint64_t largest = 0;
	char err[1024];
	int rc;

	if (in->ini) {
		rc = tfs_config_load(&in->c, in->ini, err, sizeof(err));
		if (rc == -EDOM) /* well-formed, but will not mount */
			tfs_plan_add(in->p, TFS_PLAN_FAIL,
				     strstr(err, "aio.block_size =")
					 ? "aio.block_size"
					 : "offload_param.buffer_size",
				     "%s; the "
				     "tensorfs mount refuses it",
				     err);
		else if (rc) /* cannot be read, or a bad key or value */
			die(EXIT_FAILURE, "%s", err);
	}
	if (in->model)
		read_weights_or_config(in, &a->params, &largest);
	if (a->params_arg)
		a->params = count_arg("--params", a->params_arg, 1);
	if (a->largest_arg)
		largest = a->largest_arg;
	if (in->ds)
		read_deepspeed(in);
	if (a->dtype && tfs_config_set(&in->c, "offload_param.dtype", a->dtype,
				       err, sizeof(err)))
		die(EXIT_USAGE, "--dtype: %s", err);
	in->f.params = a->params;
	in->f.largest_param = largest;
	if (in->tensors && !a->params_arg && !a->largest_arg) {
		in->f.tensors = in->tensors;
		in->f.ntensors = in->ntensors;
	}
}

int main(int argc, char **argv)
{
	static struct input in;
	struct tfs_mem_limits lim;
	struct args a = { 0 };
	int rc;

	tfs_closeout("tensorfs-plan", EXIT_FAILURE);
	tfs_config_defaults(&in.c);
	in.f.ranks = 1;
	in.f.drives = 1;
	in.f.nodes = 1;
	in.f.stage = 3;
	in.f.memlock = UINT64_MAX;
	in.p = malloc(sizeof(*in.p));
	if (!in.p)
		die(EXIT_FAILURE, "out of memory");
	tfs_plan_init(in.p);

	parse_args(argc, argv, &in, &a);
	if (!in.ram_given)
		in.f.ram = mem_total();
	if (!a.memlock_given && !tfs_mem_limits(&lim))
		in.f.memlock = lim.memlock;
	in.f.memlock_exempt = !a.memlock_given && ipc_lock_capable();
	read_inputs(&in, &a);

	if (tfs_plan_compute(&in.c, &in.f, in.p))
		die(EXIT_FAILURE,
		    "cannot plan for these facts (params %llu, "
		    "ranks %u, nodes %u)",
		    (unsigned long long)a.params, in.f.ranks, in.f.nodes);
	if (a.measure) {
		static struct tfs_tune t;
		char err[1024];
		struct stat st;

		if (stat(a.measure, &st) || !S_ISDIR(st.st_mode))
			die(EXIT_FAILURE,
			    "--measure %s: not a directory; give the "
			    "nvme_path DeepSpeed will use (a tensorfs mount, "
			    "or a directory on ext4 or xfs)",
			    a.measure);
		if (tfs_tune_run(a.measure, a.budget ? a.budget : 120,
				 a.measure_mem ? a.measure_mem : 1ull << 30,
				 &in.c, &in.f, stderr, &t, err, sizeof(err)))
			die(EXIT_FAILURE, "--measure %s", err);
		tune = &t;
	}
	if (a.json)
		print_json(&in, in.p, a.full, a.strict);
	else
		print_text(&in, in.p, a.full, a.strict);
	if (fflush(stdout)) {
		tfs_closeout_said();
		die(EXIT_FAILURE, "cannot write the output: %s",
		    strerror(errno));
	}
	rc = plan_exit(in.p, a.strict);
	free(in.p);
	if (in.weights.tensors)
		tfs_plan_model_free(&in.weights);
	else
		free(in.tensors);
	return rc;
}
