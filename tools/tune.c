/*
 * tune.c: the tuner of tensorfs-plan --measure (see tune.h).
 *
 * The starting point is the plan's recommendation for the configuration
 * (DeepSpeed's failures fixed, the node within its RAM), so that every
 * candidate differs from a configuration that runs by the values being
 * tuned only.  The measuring scale is fixed for the whole run: parameter
 * tensors of the largest swapped partition (or one parameter buffer),
 * optimizer states of the largest sub-group, each at most 64 MiB and less
 * if the buffers of the largest candidate would pass the memory cap; the
 * rates of sequential O_DIRECT transfers of that size are those of the
 * full ones.  Each stage measures the values of one key around the best
 * so far and keeps its best; a candidate measured before is not measured
 * again, except the three fastest, which are measured a second time at
 * the end (confirm()), so that the choice rests on two runs apart in
 * time.  The best is the fastest that fits; among those within 3% of
 * it, the one that pins least: a few percent are not worth memory a
 * training process may need.
 */
#include "tune.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "mountroot.h"
#include "units.h"

#define MIB	     (1ull << 20)
#define SCALE_MAX    (64 * MIB)
#define SCALE_MIN    MIB
#define CLOSE_PCT    3	/* within this of the fastest: take less memory */
#define PLANNED	     17 /* measurements a run makes, about */
#define CONFIRM	     3	/* the fastest measured again at the end */
#define HEADROOM_PCT 90 /* as the plan: a node past this does not fit */
#define STAGE_MAX    6

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t round4k(uint64_t v)
{
	v &= ~4095ull;
	return v < SCALE_MIN ? SCALE_MIN : v;
}

/* The file system under dir, by name; tensorfs when it has .tensorfs. */
static void fs_name(const char *dir, char *buf, size_t len)
{
	struct statfs sf;
	char root[4096];

	snprintf(buf, len, "unknown");
	if (statfs(dir, &sf))
		return;
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		snprintf(buf, len, "ext4");
		return;
	case 0x58465342:
		snprintf(buf, len, "xfs");
		return;
	case 0x01021994:
		snprintf(buf, len, "tmpfs");
		return;
	case 0x9123683E:
		snprintf(buf, len, "btrfs");
		return;
	case 0x65735546:
		break;
	default:
		snprintf(buf, len, "0x%lx", (unsigned long)sf.f_type);
		return;
	}
	snprintf(buf, len, "%s",
		 tfs_mount_root(dir, root, sizeof(root)) ? "fuse" : "tensorfs");
}

/* The plan's price of a candidate: memory per node, and whether it fits. */
static void price(struct tfs_tune_cand *k, const struct tfs_plan_facts *f,
		  struct tfs_plan *p)
{
	tfs_plan_init(p);
	if (tfs_plan_compute(&k->c, f, p)) {
		k->fits = 0;
		return;
	}
	k->pinned = p->node_pinned;
	k->pageable = p->node_pageable;
	k->fits = p->severity != TFS_PLAN_FAIL &&
		  (!f->ram ||
		   (k->pinned + k->pageable) / HEADROOM_PCT <= f->ram / 100);
}

static int same(const struct tfs_measure_cfg *a,
		const struct tfs_measure_cfg *b)
{
	return a->block_size == b->block_size &&
	       a->queue_depth == b->queue_depth && a->threads == b->threads &&
	       a->param_buffers == b->param_buffers && a->pin == b->pin;
}

/* The measurement that stands for configuration c at the run's scale. */
static void cfg_of(const struct tfs_config *c, const struct tfs_measure_cfg *s,
		   struct tfs_measure_cfg *m)
{
	*m = *s;
	m->block_size = c->aio_block_size;
	m->queue_depth = (unsigned int)c->aio_queue_depth;
	m->threads = (unsigned int)(c->aio_intra_op_parallelism
					? c->aio_intra_op_parallelism
					: 1);
	m->param_buffers = (unsigned int)c->offload_param_buffer_count;
	if (!m->param_buffers)
		m->param_buffers = 1;
	if (m->param_buffers > 64)
		m->param_buffers = 64;
	m->pin = c->offload_param_pin_memory != 0;
}

/* Index of a candidate like c, adding it if new; -1 if full. */
static int add(struct tfs_tune *t, const struct tfs_config *c,
	       const struct tfs_measure_cfg *scale,
	       const struct tfs_plan_facts *f, struct tfs_plan *p)
{
	struct tfs_tune_cand *k;
	struct tfs_measure_cfg m;

	cfg_of(c, scale, &m);
	for (size_t i = 0; i < t->n; i++)
		if (same(&t->cand[i].m, &m) &&
		    t->cand[i].c.offload_param_buffer_size ==
			c->offload_param_buffer_size)
			return (int)i;
	if (t->n == TFS_TUNE_MAX)
		return -1;
	k = &t->cand[t->n];
	memset(k, 0, sizeof(*k));
	k->c = *c;
	k->m = m;
	price(k, f, p);
	return (int)t->n++;
}

/* The better of two measured candidates by the rule atop the file. */
static int better(const struct tfs_tune *t, int a, int b)
{
	const struct tfs_tune_cand *x, *y;
	double fast;

	if (a < 0)
		return b;
	if (b < 0)
		return a;
	x = &t->cand[a];
	y = &t->cand[b];
	fast = x->r.gbs > y->r.gbs ? x->r.gbs : y->r.gbs;
	if (x->r.gbs * 100 >= fast * (100 - CLOSE_PCT) &&
	    y->r.gbs * 100 >= fast * (100 - CLOSE_PCT)) {
		if (x->pinned != y->pinned)
			return x->pinned < y->pinned ? a : b;
		if (x->pinned + x->pageable != y->pinned + y->pageable)
			return x->pinned + x->pageable < y->pinned + y->pageable
				   ? a
				   : b;
	}
	return x->r.gbs >= y->r.gbs ? a : b;
}

static void config_name(const struct tfs_tune_cand *k, char *buf, size_t len)
{
	char bs[32];

	snprintf(buf, len,
		 "block_size %s, queue_depth %u, %u thread%s, buffer_count "
		 "%u, %s",
		 tfs_format_size(k->m.block_size, bs, sizeof(bs)),
		 k->m.queue_depth, k->m.threads, k->m.threads == 1 ? "" : "s",
		 k->m.param_buffers, k->m.pin ? "pinned" : "not pinned");
}

/* Add a second measurement b of the same candidate to a. */
static void merge(struct tfs_measure_result *a,
		  const struct tfs_measure_result *b)
{
	a->read_bytes += b->read_bytes;
	a->write_bytes += b->write_bytes;
	a->read_seconds += b->read_seconds;
	a->write_seconds += b->write_seconds;
	a->seconds += b->seconds;
	a->steps += b->steps;
	a->read_gbs = a->read_seconds > 0
			  ? (double)a->read_bytes / a->read_seconds / 1e9
			  : 0;
	a->write_gbs = a->write_seconds > 0
			   ? (double)a->write_bytes / a->write_seconds / 1e9
			   : 0;
	a->gbs = a->seconds > 0 ? (double)(a->read_bytes + a->write_bytes) /
				      a->seconds / 1e9
				: 0;
}

/* Measure the fastest CONFIRM fitting candidates once more, in turn, so
 * that the choice rests on two runs each, apart in time: this machine's
 * disk may swing by a third from one second to the next. */
static void confirm(struct tfs_tune *t, double slice, double t0, FILE *progress)
{
	int top[CONFIRM], n = 0;
	char name[160], err[512];

	for (int k = 0; k < CONFIRM; k++) {
		int best = -1;

		for (size_t i = 0; i < t->n; i++) {
			int taken = 0;

			for (int j = 0; j < n; j++)
				taken |= top[j] == (int)i;
			if (taken || !t->cand[i].measured || !t->cand[i].fits)
				continue;
			if (best < 0 || t->cand[i].r.gbs > t->cand[best].r.gbs)
				best = (int)i;
		}
		if (best < 0)
			break;
		top[n++] = best;
	}
	for (int j = 0; j < n; j++) {
		struct tfs_tune_cand *k = &t->cand[top[j]];
		struct tfs_measure_result r;

		if (now() - t0 >= t->budget)
			return;
		config_name(k, name, sizeof(name));
		if (progress) {
			fprintf(progress,
				"tensorfs-plan: measuring again: %s ...", name);
			fflush(progress);
		}
		if (tfs_measure_run(t->dir, &k->m, slice, &r, err,
				    sizeof(err))) {
			if (progress)
				fprintf(progress, " failed: %s\n", err);
			continue;
		}
		merge(&k->r, &r);
		k->twice = 1;
		if (progress)
			fprintf(progress, " %.2f GB/s, %.2f over both runs\n",
				r.gbs, k->r.gbs);
	}
}

/*
 * offload_param.buffer_size, priced and not timed: DeepSpeed reads and
 * writes whole partitions whatever the buffer around them
 * (partitioned_param_swapper.py swap_in moves partition_numel
 * elements), so a smaller buffer moves the same bytes and pins less.
 * The smallest DeepSpeed accepts is above the largest swapped partition
 * (get_buffer asserts numel < buffer_size): that candidate is the best
 * so far with it, and the best's rates.
 */
static void shrink_buffers(struct tfs_tune *t, int cur, uint64_t lpart,
			   const struct tfs_measure_cfg *scale,
			   const struct tfs_plan_facts *f, struct tfs_plan *p,
			   FILE *progress)
{
	struct tfs_config v;
	uint64_t want = (lpart / 1024 + 1) * 1024;
	int i;

	if (!lpart || cur < 0 || !t->cand[cur].measured ||
	    t->cand[cur].c.offload_param_device != TFS_DEVICE_NVME ||
	    tfs_config_elems(&t->cand[cur].c,
			     t->cand[cur].c.offload_param_buffer_size) <= want)
		return;
	v = t->cand[cur].c;
	v.offload_param_buffer_size = want; /* elements */
	i = add(t, &v, scale, f, p);
	if (i < 0 || t->cand[i].measured)
		return;
	t->cand[i].r = t->cand[cur].r;
	t->cand[i].measured = 1;
	t->cand[i].twice = t->cand[cur].twice;
	t->cand[i].derived = 1;
	snprintf(t->cand[i].why, sizeof(t->cand[i].why),
		 "buffer_size %llu, the smallest DeepSpeed takes: not timed, "
		 "as it moves whole partitions whatever the buffer; the rates "
		 "are those of the same values with buffer_size as given",
		 (unsigned long long)want);
	if (progress)
		fprintf(
		    progress,
		    "tensorfs-plan: buffer_size %llu moves the same bytes "
		    "as buffer_size %llu and pins less: priced, not timed\n",
		    (unsigned long long)want,
		    (unsigned long long)tfs_config_elems(
			&t->cand[cur].c,
			t->cand[cur].c.offload_param_buffer_size));
}

/* Measure candidate i unless done; returns 0, or the -errno of a run
 * that failed (the candidate says why). */
static int measure(struct tfs_tune *t, int i, double slice, double t0,
		   FILE *progress)
{
	struct tfs_tune_cand *k = &t->cand[i];
	char name[160], err[512];
	int rc;

	if (k->measured || k->why[0])
		return 0;
	config_name(k, name, sizeof(name));
	if (now() - t0 >= t->budget) {
		snprintf(k->why, sizeof(k->why),
			 "not measured: the time budget ran out");
		return 0;
	}
	if (!k->fits && t->base != i) {
		snprintf(k->why, sizeof(k->why),
			 "not measured: the plan says it fails, or the node's "
			 "RAM cannot hold it");
		if (progress)
			fprintf(progress, "tensorfs-plan: skip %s: %s\n", name,
				k->why + 14);
		return 0;
	}
	if (progress) {
		fprintf(progress,
			"tensorfs-plan: measuring %d of about %d: %s ...",
			i + 1, PLANNED, name);
		fflush(progress);
	}
	rc = tfs_measure_run(t->dir, &k->m, slice, &k->r, err, sizeof(err));
	if (rc) {
		snprintf(k->why, sizeof(k->why), "failed: %s", err);
		if (progress)
			fprintf(progress, " %s\n", k->why);
		return rc;
	}
	k->measured = 1;
	if (progress)
		fprintf(progress, " %.2f GB/s (read %.2f, write %.2f)\n",
			k->r.gbs, k->r.read_gbs, k->r.write_gbs);
	return 0;
}

int tfs_tune_run(const char *dir, double budget, uint64_t mem_cap,
		 const struct tfs_config *c, const struct tfs_plan_facts *f,
		 FILE *progress, struct tfs_tune *t, char *err, size_t errlen)
{
	static const uint64_t blocks[] = { 256 << 10, 1 << 20, 4 << 20 };
	static const unsigned int depths[] = { 4, 8, 16, 32 };
	static const unsigned int threads[] = { 1, 2, 4 };
	struct tfs_plan *p = malloc(sizeof(*p));
	struct tfs_measure_cfg scale = { 0 };
	struct tfs_config base, v;
	uint64_t pb, ob, need, counts[3], lpart;
	double t0 = now(), slice;
	int cur, best, any = 0, lastrc = 0;
	size_t nc;

	memset(t, 0, sizeof(*t));
	t->dir = dir;
	t->budget = budget;
	t->best = t->base = -1;
	t->ds_version = f->ds_version;
	fs_name(dir, t->fs, sizeof(t->fs));
	if (!p)
		return -ENOMEM;
	/* the base: the plan's recommendation for c */
	tfs_plan_init(p);
	if (tfs_plan_compute(c, f, p)) {
		free(p);
		snprintf(err, errlen, "cannot plan for these facts");
		return -EINVAL;
	}
	base = p->recommended;
	need = p->param_buffers ? p->param_buffers : 1;
	lpart = p->swapped ? p->largest_partition : 0;
	/* the scale */
	pb = p->largest_partition && p->swapped
		 ? p->largest_partition * p->elem
		 : tfs_config_elems(&base, base.offload_param_buffer_size) *
		       p->elem;
	ob = p->largest_subgroup * 4;
	if (pb > SCALE_MAX)
		pb = SCALE_MAX;
	if (ob > SCALE_MAX)
		ob = SCALE_MAX;
	counts[0] = need > base.offload_param_buffer_count
			? need
			: base.offload_param_buffer_count;
	counts[1] = counts[0] + (counts[0] + 1) / 2;
	counts[2] = 2 * counts[0];
	for (int i = 0; i < 3; i++)
		if (counts[i] > 64)
			counts[i] = 64;
	while ((counts[2] * pb + 4 * ob > mem_cap) &&
	       (pb > SCALE_MIN || ob > SCALE_MIN)) {
		if (pb >= ob && pb > SCALE_MIN)
			pb /= 2;
		else
			ob /= 2;
	}
	scale.param_bytes = round4k(pb);
	scale.opt_bytes = round4k(ob);
	scale.param_files = (unsigned int)(2 * counts[2]);
	scale.subgroups = 2;
	t->memory = counts[2] * scale.param_bytes + 4 * scale.opt_bytes;
	t->files = (uint64_t)scale.param_files * scale.param_bytes +
		   8 * scale.opt_bytes;
	slice = budget / PLANNED;

	cur = t->base = add(t, &base, &scale, f, p);
	if (progress)
		fprintf(progress,
			"tensorfs-plan: measuring DeepSpeed's swap pattern in "
			"%s (%s) for about %.0f s: %llu MiB of buffers at "
			"most, %llu MiB of files\n",
			dir, t->fs, budget,
			(unsigned long long)(t->memory / MIB),
			(unsigned long long)(t->files / MIB));
	lastrc = measure(t, cur, slice, t0, progress);
	any |= t->cand[cur].measured;
	for (int stage = 0; stage < 5; stage++) {
		int ids[STAGE_MAX];

		nc = 0;
		best = t->cand[cur].measured ? cur : -1;
		for (int j = 0; j < STAGE_MAX; j++) {
			v = t->cand[cur].c;
			if (stage == 0 && j < 3)
				v.aio_block_size = blocks[j];
			else if (stage == 1 && j < 4)
				v.aio_queue_depth = depths[j];
			else if (stage == 2 && j < 3)
				v.aio_intra_op_parallelism = threads[j];
			else if (stage == 3 && j < 3 &&
				 base.offload_param_device == TFS_DEVICE_NVME)
				v.offload_param_buffer_count = counts[j];
			else if (stage == 4 && j < 2) {
				v.offload_param_pin_memory = j;
				v.offload_optimizer_pin_memory = j;
			} else
				continue;
			int i = add(t, &v, &scale, f, p);

			if (i >= 0)
				ids[nc++] = i;
		}
		for (size_t j = 0; j < nc; j++) {
			int rc = measure(t, ids[j], slice, t0, progress);

			if (rc)
				lastrc = rc;
			if (t->cand[ids[j]].measured) {
				any = 1;
				if (t->cand[ids[j]].fits)
					best = better(t, best, ids[j]);
			}
		}
		if (best >= 0)
			cur = best;
	}
	confirm(t, slice, t0, progress);
	/* the smallest buffers for the best over everything measured */
	best = -1;
	for (size_t i = 0; i < t->n; i++)
		if (t->cand[i].measured && t->cand[i].fits)
			best = better(t, best, (int)i);
	shrink_buffers(t, best, lpart, &scale, f, p, progress);
	t->elapsed = now() - t0;
	free(p);
	if (!any) {
		snprintf(err, errlen, "%s: nothing could be measured: %s", dir,
			 t->cand[t->base].why);
		return lastrc ? lastrc : -EIO;
	}
	/* the best over everything measured */
	best = -1;
	for (size_t i = 0; i < t->n; i++)
		if (t->cand[i].measured && t->cand[i].fits)
			best = better(t, best, (int)i);
	t->best = best;
	if (best >= 0) {
		const struct tfs_tune_cand *b = &t->cand[best];
		const struct tfs_tune_cand *g = &t->cand[t->base];
		double fastest = 0;
		size_t nm = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->cand[i].measured && t->cand[i].fits) {
				nm++;
				if (t->cand[i].r.gbs > fastest)
					fastest = t->cand[i].r.gbs;
			}
		snprintf(t->reason, sizeof(t->reason),
			 "%.2f GB/s, %s of the %zu measured that fit the "
			 "node's memory%s%s",
			 b->r.gbs,
			 b->r.gbs >= fastest ? "the fastest"
					     : "within 3% of the fastest",
			 nm,
			 b->r.gbs < fastest ? ", and it pins the least of those"
					    : "",
			 g->measured && best != t->base
			     ? "; the configuration as given measured "
			     : "");
		if (g->measured && best != t->base) {
			size_t l = strlen(t->reason);

			snprintf(t->reason + l, sizeof(t->reason) - l,
				 "%.2f GB/s", g->r.gbs);
		}
	}
	return 0;
}

static const char *yes(int v)
{
	return v ? "yes" : "no";
}

/* The keys the tuner sets, as a ds_config.json fragment. */
static json_t *ds_fragment(const struct tfs_tune *t, const struct tfs_config *c)
{
	unsigned int v = t->ds_version ? t->ds_version : TFS_PLAN_DS_NEWEST;
	json_t *aio =
	    json_pack("{s:I, s:I}", "block_size", (json_int_t)c->aio_block_size,
		      "queue_depth", (json_int_t)c->aio_queue_depth);

	json_object_set_new(
	    aio, v < 1604 ? "thread_count" : "intra_op_parallelism",
	    json_integer((json_int_t)c->aio_intra_op_parallelism));
	return json_pack(
	    "{s:{s:{s:I, s:I, s:b}, s:{s:b}}, s:o}", "zero_optimization",
	    "offload_param", "buffer_count",
	    (json_int_t)c->offload_param_buffer_count, "buffer_size",
	    (json_int_t)tfs_config_elems(c, c->offload_param_buffer_size),
	    "pin_memory", (int)c->offload_param_pin_memory, "offload_optimizer",
	    "pin_memory", (int)c->offload_optimizer_pin_memory, "aio", aio);
}

static char *ini_of(const struct tfs_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	tfs_config_print_changed(c, f);
	fclose(f);
	return buf;
}

void tfs_tune_print(const struct tfs_tune *t, FILE *out)
{
	char a[32], b[32], bs[32];

	fprintf(out,
		"\nmeasured in %s (%s): %zu candidate%s in %.0f s of a %.0f s "
		"budget, at a scale of %u parameter tensors of %llu MiB and "
		"%u optimizer sub-groups of 4 x %llu MiB\n",
		t->dir, t->fs, t->n, t->n == 1 ? "" : "s", t->elapsed,
		t->budget, t->cand[0].m.param_files,
		(unsigned long long)(t->cand[0].m.param_bytes / MIB),
		t->cand[0].m.subgroups,
		(unsigned long long)(t->cand[0].m.opt_bytes / MIB));
	fprintf(out, "%-8s %4s %3s %4s %4s %7s %6s %6s %12s %12s\n", "block",
		"qd", "thr", "bufs", "pin", "GB/s", "read", "write",
		"pinned/node", "pageable/node");
	for (size_t i = 0; i < t->n; i++) {
		const struct tfs_tune_cand *k = &t->cand[i];

		fprintf(out, "%-8s %4u %3u %4u %4s ",
			tfs_format_size(k->m.block_size, bs, sizeof(bs)),
			k->m.queue_depth, k->m.threads, k->m.param_buffers,
			yes(k->m.pin));
		if (k->measured)
			fprintf(out, "%7.2f %6.2f %6.2f ", k->r.gbs,
				k->r.read_gbs, k->r.write_gbs);
		else
			fprintf(out, "%7s %6s %6s ", "-", "-", "-");
		fprintf(out, "%12s %12s%s%s%s%s\n",
			tfs_format_size(k->pinned, a, sizeof(a)),
			tfs_format_size(k->pageable, b, sizeof(b)),
			(int)i == t->base ? "  as given" : "",
			(int)i == t->best ? "  <- recommended" : "",
			k->twice ? "  (2 runs)" : "",
			k->why[0] ? ""
			: k->fits ? ""
				  : "  does not fit");
		if (k->why[0])
			fprintf(out, "%53s%s\n", "", k->why);
	}
	if (t->best < 0) {
		fprintf(out, "\nno candidate that fits the node's memory could "
			     "be measured; see the plan's problems above\n");
		return;
	}
	const struct tfs_tune_cand *k = &t->cand[t->best];
	json_t *frag = ds_fragment(t, &k->c);
	char *js = json_dumps(frag, JSON_INDENT(2));
	char *ini = ini_of(&k->c);

	fprintf(out,
		"\nrecommended: block_size %s, queue_depth %u, %u thread%s, "
		"offload_param.buffer_count %u, buffer_size %llu, pin_memory "
		"%s\n  because: %s\n",
		tfs_format_size(k->m.block_size, bs, sizeof(bs)),
		k->m.queue_depth, k->m.threads, k->m.threads == 1 ? "" : "s",
		k->m.param_buffers,
		(unsigned long long)tfs_config_elems(
		    &k->c, k->c.offload_param_buffer_size),
		k->m.pin ? "true" : "false", t->reason);
	fprintf(out, "\nds_config.json, the keys to set in yours:\n%s\n",
		js ? js : "{}");
	fprintf(out, "\ntensorfs.ini (keys that differ from the defaults):\n%s",
		ini && *ini ? ini : "(all defaults)\n");
	free(js);
	free(ini);
	json_decref(frag);
}

json_t *tfs_tune_json(const struct tfs_tune *t)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "dir", json_string(t->dir));
	json_object_set_new(o, "file_system", json_string(t->fs));
	json_object_set_new(o, "budget_s", json_real(t->budget));
	json_object_set_new(o, "elapsed_s", json_real(t->elapsed));
	json_object_set_new(o, "memory_bytes",
			    json_integer((json_int_t)t->memory));
	json_object_set_new(o, "file_bytes",
			    json_integer((json_int_t)t->files));
	for (size_t i = 0; i < t->n; i++) {
		const struct tfs_tune_cand *k = &t->cand[i];
		json_t *e = json_pack(
		    "{s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:b, s:b, s:b}",
		    "block_size", (json_int_t)k->m.block_size, "queue_depth",
		    (json_int_t)k->m.queue_depth, "threads",
		    (json_int_t)k->m.threads, "buffer_count",
		    (json_int_t)k->m.param_buffers, "buffer_size",
		    (json_int_t)tfs_config_elems(
			&k->c, k->c.offload_param_buffer_size),
		    "pin_memory", k->m.pin, "pinned_bytes",
		    (json_int_t)k->pinned, "pageable_bytes",
		    (json_int_t)k->pageable, "fits", k->fits, "as_given",
		    (int)i == t->base, "recommended", (int)i == t->best);

		if (k->measured) {
			json_object_set_new(e, "gb_s", json_real(k->r.gbs));
			json_object_set_new(e, "read_gb_s",
					    json_real(k->r.read_gbs));
			json_object_set_new(e, "write_gb_s",
					    json_real(k->r.write_gbs));
			json_object_set_new(e, "measured_twice",
					    json_boolean(k->twice));
			if (k->derived)
				json_object_set_new(e, "why",
						    json_string(k->why));
			json_object_set_new(e, "steps",
					    json_integer(k->r.steps));
		} else {
			json_object_set_new(e, "gb_s", json_null());
			json_object_set_new(e, "why", json_string(k->why));
		}
		json_array_append_new(a, e);
	}
	json_object_set_new(o, "candidates", a);
	if (t->best >= 0) {
		char *ini = ini_of(&t->cand[t->best].c);

		json_object_set_new(o, "reason", json_string(t->reason));
		json_object_set_new(o, "ds_config",
				    ds_fragment(t, &t->cand[t->best].c));
		json_object_set_new(o, "ini", json_string(ini ? ini : ""));
		free(ini);
	} else {
		json_object_set_new(o, "ds_config", json_null());
	}
	return o;
}
