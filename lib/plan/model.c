/*
 * model.c: a model's parameter tensors from its weights files.
 *
 * Each file is read through lib/tensor's tfs_tensor_read() (headers and
 * pickles only, never the data), its float tensors gathered as entries
 * (name, elements, where the data lies), tied duplicates dropped, the
 * entries put in the order model.h describes, and each given the step of
 * its module: consecutive entries with the same name up to the last '.'
 * share one.  An index .json is read with jansson, bounded to
 * MAX_INDEX bytes, and names its shards by plain file names beside it.
 */
#include "model.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read.h"
#include "tensor.h"
#include "units.h"

#define MAX_INDEX  (64u << 20) /* bytes of an index .json */
#define MAX_SHARDS 100000

struct entry {
	char *name;
	uint64_t numel;
	uint64_t offset, nbytes; /* in its file: tied tensors share both */
	size_t file;		 /* which file of the model */
	size_t seq;		 /* its place as read */
	int dup;
};

struct entries {
	struct entry *e;
	size_t n, cap;
};

int tfs_plan_natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			const char *x = a, *y = b;
			size_t lx, ly;
			int c;

			while (*x == '0' && x[1] >= '0' && x[1] <= '9')
				x++;
			while (*y == '0' && y[1] >= '0' && y[1] <= '9')
				y++;
			for (a = x; *a >= '0' && *a <= '9'; a++)
				;
			for (b = y; *b >= '0' && *b <= '9'; b++)
				;
			lx = (size_t)(a - x);
			ly = (size_t)(b - y);
			if (lx != ly)
				return lx < ly ? -1 : 1;
			c = memcmp(x, y, lx);
			if (c)
				return c;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int by_name(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	int c = tfs_plan_natural_cmp(a->name, b->name);

	return c ? c : a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_place(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;

	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	if (a->nbytes != b->nbytes)
		return a->nbytes < b->nbytes ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_seq(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;

	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void entries_free(struct entries *es)
{
	for (size_t i = 0; i < es->n; i++)
		free(es->e[i].name);
	free(es->e);
	es->e = NULL;
	es->n = es->cap = 0;
}

static int entries_add(struct entries *es, const struct tfs_tensor *t,
		       uint64_t numel, size_t file)
{
	struct entry *e;

	if (es->n == es->cap) {
		size_t cap = es->cap ? 2 * es->cap : 256;

		e = realloc(es->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		es->e = e;
		es->cap = cap;
	}
	e = &es->e[es->n];
	e->name = strdup(t->name ? t->name : "");
	if (!e->name)
		return -ENOMEM;
	e->numel = numel;
	e->offset = t->deflated ? t->zip.at : t->offset;
	e->nbytes = t->nbytes;
	e->file = file;
	e->seq = es->n;
	e->dup = 0;
	es->n++;
	return 0;
}

static ssize_t pread_fn(void *ctx, void *buf, size_t len, uint64_t off)
{
	ssize_t r;

	do
		r = pread(*(int *)ctx, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

/* The tensors of one weights file into *out; err names path. */
static int read_list(const char *path, struct tfs_tensor_list **out,
		     enum tfs_tensor_format *fmt, char *err, size_t errlen)
{
	char why[256] = "";
	struct stat st;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tfs_say_rc(err, errlen, -errno, "%s: cannot open: %s",
				  path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		close(fd);
		return tfs_say_rc(err, errlen, rc, "%s: not a file of weights",
				  path);
	}
	rc = tfs_tensor_read(pread_fn, &fd, (uint64_t)st.st_size, 0, out, fmt,
			     why, sizeof(why));
	close(fd);
	if (rc == -ENOMEM)
		return tfs_say_rc(err, errlen, rc, "%s: out of memory", path);
	if (rc == -E2BIG)
		return tfs_say_rc(
		    err, errlen, -EINVAL,
		    "%s: its header is larger than tensorfs reads", path);
	if (rc < 0 && rc != -EINVAL)
		return tfs_say_rc(err, errlen, rc, "%s: cannot read: %s", path,
				  strerror(-rc));
	if (rc < 0)
		return tfs_say_rc(err, errlen, -EINVAL, "%s: %s", path, why);
	if (!*out)
		return tfs_say_rc(
		    err, errlen, -EINVAL,
		    "%s: not a torch.save, .safetensors or index .json "
		    "file of weights",
		    path);
	return 0;
}

/* Whether a tensor is a parameter the plan counts: a float, and its
 * element count into *numel. */
static int counted(const struct tfs_tensor *t, uint64_t *numel)
{
	if (t->dtype < 0 || tfs_tensor_dtype_kind(t->dtype) != TFS_TENSOR_FLOAT)
		return 0;
	return tfs_tensor_shape_count(&t->shape, numel) == 0 && *numel > 0;
}

/* Add the counted tensors of list (file number file) whose names want()
 * accepts (NULL: all). */
static int add_list(struct entries *es, const struct tfs_tensor_list *l,
		    size_t file, const json_t *map, const char *shard,
		    size_t *skipped)
{
	uint64_t numel;
	int rc;

	for (size_t i = 0; i < l->count; i++) {
		const struct tfs_tensor *t = &l->tensors[i];

		if (map) {
			const json_t *v = json_object_get(map, t->name);

			if (!json_is_string(v) ||
			    strcmp(json_string_value(v), shard))
				continue; /* another shard's, or none's */
		}
		if (!counted(t, &numel)) {
			(*skipped)++;
			continue;
		}
		rc = entries_add(es, t, numel, file);
		if (rc)
			return rc;
	}
	return 0;
}

/* Read the whole of a small file (an index); *len its size. */
static char *slurp(const char *path, size_t *len, char *err, size_t errlen,
		   int *rc)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f) {
		*rc = tfs_say_rc(err, errlen, -errno, "%s: cannot open: %s",
				 path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		*rc = tfs_say_rc(err, errlen, -EINVAL,
				 "%s: cannot read its size", path);
		fclose(f);
		return NULL;
	}
	if ((unsigned long)n > MAX_INDEX) {
		*rc = tfs_say_rc(err, errlen, -EINVAL,
				 "%s: over %u MiB; an index .json is smaller",
				 path, MAX_INDEX >> 20);
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (!buf) {
		*rc =
		    tfs_say_rc(err, errlen, -ENOMEM, "%s: out of memory", path);
		fclose(f);
		return NULL;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		*rc = tfs_say_rc(err, errlen, -EIO, "%s: cannot read", path);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The first byte that is not white space is '{'. */
static int looks_json(const char *path)
{
	unsigned char b[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b));
	close(fd);
	/* a .safetensors header length may start with the byte '{' */
	if (n > 0 && tfs_tensor_probe(b, (size_t)n, NULL) != TFS_TENSOR_RAW)
		return 0;
	for (ssize_t i = 0; i < n; i++) {
		if (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')
			continue;
		return b[i] == '{';
	}
	return 0;
}

/* A shard name of an index: a plain file name. */
static int plain_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* The shards of an index, each read once, in the order first named. */
static int read_index(const char *path, struct entries *es,
		      struct tfs_plan_model *m, char *err, size_t errlen)
{
	json_t *root, *map, *v;
	json_error_t je;
	const char *name, *slash = strrchr(path, '/');
	const char **shards = NULL;
	size_t len = 0, nshards = 0,
	       dir = slash ? (size_t)(slash - path + 1) : 0;
	char *buf, *file = NULL;
	int rc = 0;

	buf = slurp(path, &len, err, errlen, &rc);
	if (!buf)
		return rc;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!root)
		return tfs_say_rc(err, errlen, -EINVAL,
				  "%s:%d:%d: invalid JSON: %s", path, je.line,
				  je.column, je.text);
	map = json_object_get(root, "weight_map");
	if (!json_is_object(root) || !map) {
		json_decref(root);
		return -EMEDIUMTYPE;
	}
	if (!json_is_object(map) || !json_object_size(map)) {
		rc = tfs_say_rc(
		    err, errlen, -EINVAL,
		    "%s: weight_map is not an object of tensor names "
		    "and shard files",
		    path);
		goto out;
	}
	json_object_foreach(map, name, v)
	{
		size_t i;

		if (!json_is_string(v) || !plain_name(json_string_value(v))) {
			rc = tfs_say_rc(
			    err, errlen, -EINVAL,
			    "%s: weight_map[\"%.64s\"] is not the name of "
			    "a shard file beside the index",
			    path, name);
			goto out;
		}
		for (i = 0; i < nshards; i++)
			if (!strcmp(shards[i], json_string_value(v)))
				break;
		if (i < nshards)
			continue;
		if (nshards == MAX_SHARDS) {
			rc = tfs_say_rc(err, errlen, -EINVAL,
					"%s: more than %u shards", path,
					MAX_SHARDS);
			goto out;
		}
		if (!(nshards & (nshards + 1))) {
			const char **n =
			    realloc(shards, 2 * (nshards + 1) * sizeof(*n));

			if (!n) {
				rc = tfs_say_rc(err, errlen, -ENOMEM,
						"%s: out of memory", path);
				goto out;
			}
			shards = n;
		}
		shards[nshards++] = json_string_value(v);
	}
	for (size_t i = 0; i < nshards; i++) {
		struct tfs_tensor_list *l;
		enum tfs_tensor_format fmt;

		free(file);
		file = malloc(dir + strlen(shards[i]) + 1);
		if (!file) {
			rc = tfs_say_rc(err, errlen, -ENOMEM,
					"%s: out of memory", path);
			goto out;
		}
		memcpy(file, path, dir);
		strcpy(file + dir, shards[i]);
		rc = read_list(file, &l, &fmt, err, errlen);
		if (rc)
			goto out;
		rc = add_list(es, l, i, map, shards[i], &m->skipped);
		tfs_tensor_list_free(l);
		if (rc) {
			tfs_say_rc(err, errlen, rc, "%s: out of memory", file);
			goto out;
		}
		m->files++;
	}
	/* every name of the map was found in its shard (or was no float) */
	if (es->n + m->skipped < json_object_size(map)) {
		json_object_foreach(map, name, v)
		{
			size_t i;

			for (i = 0; i < es->n; i++)
				if (!strcmp(es->e[i].name, name))
					break;
			if (i == es->n) {
				rc = tfs_say_rc(
				    err, errlen, -EINVAL,
				    "%s: weight_map names \"%.64s\" in "
				    "%s, which does not hold it",
				    path, name, json_string_value(v));
				goto out;
			}
		}
	}
	m->format = "index";
out:
	free(file);
	free(shards);
	json_decref(root);
	return rc;
}

/* Drop the second and later tensors on one storage at one offset. */
static void drop_tied(struct entries *es, size_t *skipped)
{
	if (es->n < 2)
		return;
	qsort(es->e, es->n, sizeof(*es->e), by_place);
	for (size_t i = 1; i < es->n; i++)
		if (es->e[i].file == es->e[i - 1].file &&
		    es->e[i].offset == es->e[i - 1].offset &&
		    es->e[i].nbytes == es->e[i - 1].nbytes && es->e[i].nbytes) {
			es->e[i].dup = 1;
			(*skipped)++;
		}
	qsort(es->e, es->n, sizeof(*es->e), by_seq);
}

/* Length of the module part of a name: up to its last '.'. */
static size_t module_len(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot ? (size_t)(dot - name) : 0;
}

int tfs_plan_no_decay(const char *name)
{
	char low[512];
	size_t n = strlen(name), i;
	const char *c;

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (i = 0; i < n; i++)
		low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32
								 : name[i]);
	low[n] = '\0';
	if (strstr(low, "bias") || strstr(low, "layernorm") ||
	    strstr(low, "rmsnorm"))
		return 1;
	for (c = low; c; c = strchr(c, '.') ? strchr(c, '.') + 1 : NULL) {
		size_t len = strcspn(c, ".");

		if ((len == 4 && !strncmp(c, "norm", 4)) ||
		    (len > 5 && !strncmp(c + len - 5, "_norm", 5)) ||
		    (len >= 3 && c[0] == 'l' && c[1] == 'n' &&
		     (c[2] == '_' || (c[2] >= '0' && c[2] <= '9'))))
			return 1;
	}
	return 0;
}

int tfs_plan_model_read(const char *path, unsigned int flags,
			struct tfs_plan_model *m, char *err, size_t errlen)
{
	struct entries es = { 0 };
	struct tfs_tensor_list *l = NULL;
	enum tfs_tensor_format fmt = TFS_TENSOR_RAW;
	const char *prev = NULL;
	size_t k = 0, plen = 0;
	uint32_t step = 0;
	int rc;

	memset(m, 0, sizeof(*m));
	if (looks_json(path)) {
		rc = read_index(path, &es, m, err, errlen);
		if (rc)
			goto out;
	} else {
		rc = read_list(path, &l, &fmt, err, errlen);
		if (rc)
			goto out;
		if (fmt != TFS_TENSOR_TORCH && fmt != TFS_TENSOR_SAFETENSORS) {
			rc = tfs_say_rc(
			    err, errlen, -EINVAL,
			    "%s: a %s file holds arrays, not a model's "
			    "weights; give a torch.save state_dict, a "
			    ".safetensors file or an index .json",
			    path, fmt == TFS_TENSOR_NPZ ? ".npz" : ".npy");
			goto out;
		}
		rc = add_list(&es, l, 0, NULL, NULL, &m->skipped);
		if (rc) {
			tfs_say_rc(err, errlen, rc, "%s: out of memory", path);
			goto out;
		}
		m->files = 1;
		m->format =
		    fmt == TFS_TENSOR_TORCH ? "torch.save" : "safetensors";
		m->model_order = fmt == TFS_TENSOR_TORCH;
	}
	drop_tied(&es, &m->skipped);
	if (!m->model_order && es.n > 1)
		qsort(es.e, es.n, sizeof(*es.e), by_name);
	m->tensors = calloc(es.n ? es.n : 1, sizeof(*m->tensors));
	if (!m->tensors) {
		rc =
		    tfs_say_rc(err, errlen, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < es.n; i++) {
		size_t len;

		if (es.e[i].dup)
			continue;
		len = module_len(es.e[i].name);
		if (prev && (len != plen || memcmp(prev, es.e[i].name, len)))
			step++;
		prev = es.e[i].name;
		plen = len;
		m->tensors[k].numel = es.e[i].numel;
		m->tensors[k].step = step;
		m->tensors[k].group = (flags & TFS_PLAN_MODEL_TRAINER_GROUPS) &&
				      tfs_plan_no_decay(es.e[i].name);
		m->params += es.e[i].numel;
		if (es.e[i].numel > m->largest)
			m->largest = es.e[i].numel;
		k++;
	}
	m->ntensors = k;
	if (!k)
		rc = tfs_say_rc(
		    err, errlen, -EINVAL,
		    "%s: holds no floating-point tensor to plan for", path);
out:
	tfs_tensor_list_free(l);
	entries_free(&es);
	if (rc)
		tfs_plan_model_free(m);
	return rc;
}

void tfs_plan_model_free(struct tfs_plan_model *m)
{
	free(m->tensors);
	m->tensors = NULL;
	m->ntensors = 0;
}
