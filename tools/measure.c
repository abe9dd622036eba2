/*
 * measure.c: DeepSpeed's swap pattern, timed (see measure.h).
 *
 * A handle of intra_op_parallelism threads lives as long as one
 * measurement, each thread with its aio context of queue_depth entries
 * (DeepSpeed's deepspeed_aio_thread_t).  The main thread hands them a
 * batch of requests, a tensor each (file, buffer, read or write), and
 * waits: thread t moves slice t of every request of the batch (the
 * tensor cut into equal slices, whole 4 KiB blocks, the last thread
 * taking the rest), in block_size pieces with up to queue_depth in
 * flight, refilled as each completes (overlap_events).  The time of a
 * batch is charged to reading or writing; the rates are bytes over that
 * time.  Files are written once, untimed, before the first step, so that
 * reads find data and writes overwrite, as swap files do from the second
 * step on.
 */
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

#define ALIGN	    4096u
#define MAX_THREADS 64u
#define MAX_QD	    1024u
#define MAX_BATCH   64u
#define OPT_READS   4 /* fp32 weights, gradients, exp_avg, exp_avg_sq */
#define OPT_WRITES  3

struct req {
	int fd;
	uint8_t *buf;
	uint64_t len;
	int write;
};

struct handle {
	const struct tfs_measure_cfg *m;
	pthread_t th[MAX_THREADS];
	io_context_t ctx[MAX_THREADS];
	unsigned int nth;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	struct req batch[MAX_BATCH];
	unsigned int nbatch;
	unsigned long gen; /* batches handed out */
	unsigned int busy; /* threads still on the batch */
	int quit;
	int error; /* the first -errno of a batch */
	char what[160];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t tfs_measure_memory(const struct tfs_measure_cfg *m)
{
	return (uint64_t)m->param_buffers * m->param_bytes +
	       (uint64_t)OPT_READS * m->opt_bytes;
}

uint64_t tfs_measure_files(const struct tfs_measure_cfg *m)
{
	return (uint64_t)m->param_files * m->param_bytes +
	       (uint64_t)m->subgroups * OPT_READS * m->opt_bytes;
}

/* Slice t of n of len bytes: whole blocks of ALIGN, the last the rest. */
static void slice(uint64_t len, unsigned int t, unsigned int n, uint64_t *off,
		  uint64_t *size)
{
	uint64_t each = len / n / ALIGN * ALIGN;

	*off = each * t;
	*size = t + 1 == n ? len - *off : each;
}

/* Thread t's part of the batch: every request's slice t. */
static int move(struct handle *h, unsigned int t)
{
	const struct tfs_measure_cfg *m = h->m;
	struct iocb cbs[MAX_QD], *ptr[MAX_QD];
	struct io_event ev[MAX_QD];
	unsigned int inflight = 0, r = 0;
	uint64_t pos = 0, end = 0;
	int started = 0;

	memset(cbs, 0, m->queue_depth * sizeof(cbs[0]));
	for (;;) {
		/* top up to queue_depth from the next pieces */
		while (inflight < m->queue_depth) {
			uint64_t off, size, n;
			struct iocb *cb;
			const struct req *q;

			if (!started || pos >= end) {
				if (started)
					r++;
				while (r < h->nbatch) {
					slice(h->batch[r].len, t, h->nth, &off,
					      &size);
					if (size)
						break;
					r++;
				}
				if (r >= h->nbatch)
					break;
				started = 1;
				pos = off;
				end = off + size;
			}
			q = &h->batch[r];
			n = end - pos < m->block_size ? end - pos
						      : m->block_size;
			/* a free slot: the iocbs are used in turn */
			cb = NULL;
			for (unsigned int i = 0; i < m->queue_depth; i++)
				if (!cbs[i].data) {
					cb = &cbs[i];
					break;
				}
			if (q->write)
				io_prep_pwrite(cb, q->fd, q->buf + pos, n,
					       (long long)pos);
			else
				io_prep_pread(cb, q->fd, q->buf + pos, n,
					      (long long)pos);
			cb->data = (void *)(uintptr_t)(n | 1); /* in use */
			ptr[0] = cb;
			int rc = io_submit(h->ctx[t], 1, ptr);

			if (rc != 1) {
				cb->data = NULL;
				return rc < 0 ? rc : -EIO;
			}
			inflight++;
			pos += n;
		}
		if (!inflight)
			return 0;
		int got = io_getevents(h->ctx[t], 1, inflight, ev, NULL);

		if (got < 0) {
			if (got == -EINTR)
				continue;
			return got;
		}
		for (int i = 0; i < got; i++) {
			struct iocb *cb = ev[i].obj;
			uint64_t want = (uint64_t)(uintptr_t)cb->data & ~1ull;

			cb->data = NULL;
			inflight--;
			if ((long)ev[i].res < 0)
				return (int)(long)ev[i].res;
			if (ev[i].res != want)
				return -EIO; /* short */
		}
	}
}

static void *thread_main(void *arg)
{
	struct handle *h = ((void **)arg)[0];
	unsigned int t = (unsigned int)(uintptr_t)((void **)arg)[1];
	unsigned long seen = 0;

	free(arg);
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->quit && h->gen == seen)
			pthread_cond_wait(&h->go, &h->mu);
		if (h->quit)
			break;
		seen = h->gen;
		pthread_mutex_unlock(&h->mu);
		int rc = move(h, t);

		pthread_mutex_lock(&h->mu);
		if (rc && !h->error)
			h->error = rc;
		if (!--h->busy)
			pthread_cond_signal(&h->done);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Hand the batch to the threads and wait; its seconds into *sec. */
static int run_batch(struct handle *h, double *sec)
{
	double t0 = now();
	int rc;

	pthread_mutex_lock(&h->mu);
	h->busy = h->nth;
	h->error = 0;
	h->gen++;
	pthread_cond_broadcast(&h->go);
	while (h->busy)
		pthread_cond_wait(&h->done, &h->mu);
	rc = h->error;
	pthread_mutex_unlock(&h->mu);
	*sec += now() - t0;
	return rc;
}

static void handle_stop(struct handle *h, unsigned int started)
{
	pthread_mutex_lock(&h->mu);
	h->quit = 1;
	pthread_cond_broadcast(&h->go);
	pthread_mutex_unlock(&h->mu);
	for (unsigned int t = 0; t < started; t++)
		pthread_join(h->th[t], NULL);
	for (unsigned int t = 0; t < h->nth; t++)
		if (h->ctx[t])
			io_destroy(h->ctx[t]);
}

static int handle_start(struct handle *h, const struct tfs_measure_cfg *m,
			unsigned int *started)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->m = m;
	h->nth = m->threads;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->go, NULL);
	pthread_cond_init(&h->done, NULL);
	*started = 0;
	for (unsigned int t = 0; t < h->nth; t++) {
		rc = io_setup((int)m->queue_depth, &h->ctx[t]);
		if (rc < 0)
			return rc;
	}
	for (unsigned int t = 0; t < h->nth; t++) {
		void **arg = malloc(2 * sizeof(*arg));

		if (!arg)
			return -ENOMEM;
		arg[0] = h;
		arg[1] = (void *)(uintptr_t)t;
		rc = pthread_create(&h->th[t], NULL, thread_main, arg);
		if (rc) {
			free(arg);
			return -rc;
		}
		(*started)++;
	}
	return 0;
}

/* The path of file i: <i>_param.tensor.swp for parameters, as DeepSpeed
 * names them, <g>.<s>.tensor.swp for state s of optimizer sub-group g. */
static void file_path(const char *sub, const struct tfs_measure_cfg *m,
		      unsigned int i, char *path, size_t len)
{
	if (i < m->param_files)
		snprintf(path, len, "%s/%u_param.tensor.swp", sub, i);
	else
		snprintf(path, len, "%s/%u.%u.tensor.swp", sub,
			 (i - m->param_files) / OPT_READS,
			 (i - m->param_files) % OPT_READS);
}

static int open_files(const char *sub, const struct tfs_measure_cfg *m,
		      int *fds, unsigned int n, char *err, size_t errlen)
{
	char path[4200];

	for (unsigned int i = 0; i < n; i++) {
		file_path(sub, m, i, path, sizeof(path));
		fds[i] =
		    open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
		if (fds[i] < 0)
			return tfs_say_rc(err, errlen, -errno,
					  "%s: cannot open with O_DIRECT: %s",
					  path, strerror(errno));
	}
	return 0;
}

static void remove_files(const char *sub, const struct tfs_measure_cfg *m,
			 unsigned int n)
{
	char path[4200];

	for (unsigned int i = 0; i < n; i++) {
		file_path(sub, m, i, path, sizeof(path));
		unlink(path);
	}
	rmdir(sub);
}

/* Every parameter tensor read (write 0) or written, buffer_count at a
 * time; the seconds into *sec, the bytes into *bytes. */
static int param_pass(struct handle *h, const struct tfs_measure_cfg *m,
		      int *fds, uint8_t **pbuf, int write, double *sec,
		      uint64_t *bytes)
{
	int rc;

	for (unsigned int i = 0; i < m->param_files; i += m->param_buffers) {
		h->nbatch = 0;
		for (unsigned int k = 0;
		     k < m->param_buffers && i + k < m->param_files; k++)
			h->batch[h->nbatch++] =
			    (struct req){ fds[i + k], pbuf[k], m->param_bytes,
					  write };
		rc = run_batch(h, sec);
		if (rc)
			return rc;
		*bytes += (uint64_t)h->nbatch * m->param_bytes;
	}
	return 0;
}

/* One ZeRO-3 step's I/O; the times and bytes added to *r. */
static int step(struct handle *h, const struct tfs_measure_cfg *m, int *fds,
		uint8_t **pbuf, uint8_t **obuf, double *rsec, double *wsec,
		struct tfs_measure_result *r)
{
	int rc;

	/* forward and backward: every parameter read */
	for (int pass = 0; pass < 2; pass++) {
		rc = param_pass(h, m, fds, pbuf, 0, rsec, &r->read_bytes);
		if (rc)
			return rc;
	}
	/* the optimizer: each sub-group's four states in, three out */
	for (unsigned int g = 0; g < m->subgroups; g++) {
		int *f = fds + m->param_files + g * OPT_READS;

		h->nbatch = OPT_READS;
		for (unsigned int s = 0; s < OPT_READS; s++)
			h->batch[s] =
			    (struct req){ f[s], obuf[s], m->opt_bytes, 0 };
		rc = run_batch(h, rsec);
		if (rc)
			return rc;
		r->read_bytes += (uint64_t)OPT_READS * m->opt_bytes;
		h->nbatch = OPT_WRITES;
		for (unsigned int s = 0; s < OPT_WRITES; s++)
			h->batch[s] =
			    (struct req){ f[s], obuf[s], m->opt_bytes, 1 };
		rc = run_batch(h, wsec);
		if (rc)
			return rc;
		r->write_bytes += (uint64_t)OPT_WRITES * m->opt_bytes;
	}
	/* the updated parameters written out */
	return param_pass(h, m, fds, pbuf, 1, wsec, &r->write_bytes);
}

/* Write every file once, untimed. */
static int fill(struct handle *h, const struct tfs_measure_cfg *m, int *fds,
		unsigned int n, uint8_t **pbuf, uint8_t **obuf)
{
	double sec = 0;
	int rc;

	for (unsigned int i = 0; i < n; i++) {
		h->nbatch = 1;
		h->batch[0] = (struct req){
			fds[i], i < m->param_files ? pbuf[0] : obuf[0],
			i < m->param_files ? m->param_bytes : m->opt_bytes, 1
		};
		rc = run_batch(h, &sec);
		if (rc)
			return rc;
	}
	return 0;
}

static int valid(const struct tfs_measure_cfg *m)
{
	return m->block_size && !(m->block_size % ALIGN) && m->queue_depth &&
	       m->queue_depth <= MAX_QD && m->threads &&
	       m->threads <= MAX_THREADS && m->param_buffers &&
	       m->param_buffers <= MAX_BATCH &&
	       m->param_files >= m->param_buffers && m->param_files <= 4096 &&
	       m->param_bytes && !(m->param_bytes % ALIGN) && m->subgroups &&
	       m->subgroups <= 64 && m->opt_bytes && !(m->opt_bytes % ALIGN);
}

/* Allocate (and with pin, lock) n buffers of len bytes. */
static int buffers(uint8_t **b, unsigned int n, uint64_t len, int pin)
{
	for (unsigned int i = 0; i < n; i++) {
		if (posix_memalign((void **)&b[i], ALIGN, len))
			return -ENOMEM;
		memset(b[i], (int)(0x5a + i), len);
		if (pin && mlock(b[i], len))
			return -errno;
	}
	return 0;
}

static void free_buffers(uint8_t **b, unsigned int n, uint64_t len, int pin)
{
	for (unsigned int i = 0; i < n; i++) {
		if (b[i] && pin)
			munlock(b[i], len);
		free(b[i]);
	}
}

int tfs_measure_run(const char *dir, const struct tfs_measure_cfg *m,
		    double seconds, struct tfs_measure_result *r, char *err,
		    size_t errlen)
{
	unsigned int n = m->param_files + m->subgroups * OPT_READS, started = 0;
	uint8_t *pbuf[MAX_BATCH] = { 0 }, *obuf[OPT_READS] = { 0 };
	double rsec = 0, wsec = 0, t0;
	char sub[4096];
	struct handle *h = NULL;
	int *fds = NULL, rc;

	memset(r, 0, sizeof(*r));
	if (!valid(m))
		return tfs_say_rc(err, errlen, -EINVAL,
				  "measurement values out of range");
	if (snprintf(sub, sizeof(sub), "%s/.tensorfs-measure.XXXXXX", dir) >=
	    (int)sizeof(sub))
		return tfs_say_rc(err, errlen, -ENAMETOOLONG,
				  "%s: path too long", dir);
	if (!mkdtemp(sub))
		return tfs_say_rc(err, errlen, -errno,
				  "%s: cannot make a directory: %s", dir,
				  strerror(errno));
	fds = malloc(n * sizeof(*fds));
	h = malloc(sizeof(*h));
	if (!fds || !h) {
		rc = tfs_say_rc(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned int i = 0; i < n; i++)
		fds[i] = -1;
	rc = buffers(pbuf, m->param_buffers, m->param_bytes, m->pin);
	if (!rc)
		rc = buffers(obuf, OPT_READS, m->opt_bytes, m->pin);
	if (rc) {
		rc = tfs_say_rc(
		    err, errlen, rc, "cannot %s %llu MiB of buffers: %s%s",
		    m->pin ? "lock" : "allocate",
		    (unsigned long long)(tfs_measure_memory(m) >> 20),
		    strerror(-rc),
		    m->pin ? " (RLIMIT_MEMLOCK: ulimit -l)" : "");
		goto out;
	}
	rc = open_files(sub, m, fds, n, err, errlen);
	if (rc)
		goto out;
	rc = handle_start(h, m, &started);
	if (rc) {
		tfs_say_rc(err, errlen, rc,
			   "cannot start %u aio threads of depth %u: %s",
			   m->threads, m->queue_depth, strerror(-rc));
		handle_stop(h, started);
		goto out;
	}
	rc = fill(h, m, fds, n, pbuf, obuf);
	t0 = now();
	while (!rc && (!r->steps || now() - t0 < seconds)) {
		rc = step(h, m, fds, pbuf, obuf, &rsec, &wsec, r);
		if (!rc)
			r->steps++;
	}
	handle_stop(h, started);
	if (rc) {
		tfs_say_rc(err, errlen, rc, "%s: %s", sub,
			   rc == -EIO
			       ? "a request completed short (input/output "
				 "error)"
			       : strerror(-rc));
		goto out;
	}
	r->seconds = rsec + wsec;
	r->read_seconds = rsec;
	r->write_seconds = wsec;
	r->read_gbs = rsec > 0 ? (double)r->read_bytes / rsec / 1e9 : 0;
	r->write_gbs = wsec > 0 ? (double)r->write_bytes / wsec / 1e9 : 0;
	r->gbs = r->seconds > 0 ? (double)(r->read_bytes + r->write_bytes) /
				      r->seconds / 1e9
				: 0;
out:
	if (fds)
		for (unsigned int i = 0; i < n; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	remove_files(sub, m, n);
	free_buffers(pbuf, m->param_buffers, m->param_bytes, m->pin);
	free_buffers(obuf, OPT_READS, m->opt_bytes, m->pin);
	if (h) {
		pthread_mutex_destroy(&h->mu);
		pthread_cond_destroy(&h->go);
		pthread_cond_destroy(&h->done);
	}
	free(h);
	free(fds);
	return rc;
}
