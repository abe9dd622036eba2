/*
 * io_fault.c: fault injection for the tests, built only with
 * TFS_TEST_HOOKS (never in a release): failing writes and flushes,
 * short transfers, slow discards, and the fault device of io.h, a disk
 * with a volatile write cache, a power switch and an nth operation that
 * fails.  As SQLite keeps its fault VFS in test_vfs.c, the engine (io.c)
 * knows only the hooks of io_internal.h.
 *
 * The fault device wraps the engine: tfs_dev_readv(), _writev() and
 * _flush() first ask fault_op() whether the operation proceeds, fails,
 * or cuts the power.  Its bookkeeping is under fault_state.mu; with the
 * volatile cache, writes also hold fault_state.rw shared from before
 * their blocks' old contents are saved (the undo log, a hash of block
 * number to old contents) until they complete, and a flush or a cut
 * holds it exclusive, so a flush covers exactly the writes that
 * completed before it and a cut sees no write half issued.  Lock order:
 * rw before mu.  States: powered -> cut [tfs_dev_powercut()]; cut ->
 * powered only by tfs_dev_fault_set().
 */
#include "io_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"

/* ===== test hooks ===== */
static int fault_from_env(struct tfs_dev *d, const char *env);
static void fault_close(struct tfs_dev *d);

/* At open: no faults, or those the environment asks for. */
int tfs_io_faults_init(struct tfs_dev *d)
{
	const char *env = getenv("TFS_FAULT_WRITE_EIO_FROM");

	pthread_mutex_init(&d->hold_mu, NULL);
	pthread_cond_init(&d->hold_cv, NULL);
	d->fail_from = UINT64_MAX;
	if (env && *env) {
		d->fail_from = strtoull(env, NULL, 0);
		d->fail_err = EIO;
	}
	env = getenv("TFS_FAULT");
	return env && *env ? fault_from_env(d, env) : 0;
}

void tfs_io_faults_release(struct tfs_dev *d)
{
	fault_close(d);
	pthread_cond_destroy(&d->hold_cv);
	pthread_mutex_destroy(&d->hold_mu);
}

void tfs_dev_short_transfers(struct tfs_dev *d, uint64_t n)
{
	__atomic_store_n(&d->short_left, n, __ATOMIC_RELAXED);
}

void tfs_dev_slow_discards(struct tfs_dev *d, uint64_t ms)
{
	__atomic_store_n(&d->discard_ms, ms, __ATOMIC_RELAXED);
}

/* A discard's wait (tfs_dev_slow_discards()). */
void tfs_io_discard_wait(struct tfs_dev *d)
{
	uint64_t ms = __atomic_load_n(&d->discard_ms, __ATOMIC_RELAXED);
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)(ms % 1000) * 1000000L };

	if (ms)
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
}

void tfs_dev_hold_writes(struct tfs_dev *d, int hold)
{
	pthread_mutex_lock(&d->hold_mu);
	d->hold = hold;
	pthread_cond_broadcast(&d->hold_cv);
	pthread_mutex_unlock(&d->hold_mu);
}

unsigned int tfs_dev_writes_held(struct tfs_dev *d)
{
	unsigned int n;

	pthread_mutex_lock(&d->hold_mu);
	n = d->held;
	pthread_mutex_unlock(&d->hold_mu);
	return n;
}

void tfs_io_write_hold(struct tfs_dev *d)
{
	pthread_mutex_lock(&d->hold_mu);
	while (d->hold) {
		d->held++;
		pthread_cond_wait(&d->hold_cv, &d->hold_mu);
		d->held--;
	}
	pthread_mutex_unlock(&d->hold_mu);
}

void tfs_dev_fail_writes(struct tfs_dev *d, uint64_t from, int err)
{
	d->fail_from = err ? from : UINT64_MAX;
	d->fail_err = err;
}

/* The errno a write of [off, off + len) is to fail with, or 0. */
int tfs_io_injected_write_error(const struct tfs_dev *d, uint64_t off,
				size_t len)
{
	return d->fail_err && off + len > d->fail_from ? d->fail_err : 0;
}

void tfs_dev_fail_flushes(struct tfs_dev *d, uint64_t skip, uint64_t n)
{
	d->flush_skip = skip;
	d->flush_fail = n;
}

/* The errno this flush is to fail with (tfs_dev_fail_flushes()), or 0. */
int tfs_io_injected_flush_error(struct tfs_dev *d)
{
	if (d->flush_skip) {
		d->flush_skip--;
		return 0;
	}
	if (d->flush_fail) {
		d->flush_fail--;
		return EIO;
	}
	return 0;
}

/* Whether to cut this request short (tfs_dev_short_transfers()). */
int tfs_io_take_short(struct tfs_dev *d)
{
	uint64_t n = __atomic_load_n(&d->short_left, __ATOMIC_RELAXED);

	while (n &&
	       !__atomic_compare_exchange_n(&d->short_left, &n, n - 1, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return n != 0;
}

/* One 4 KiB block written since the last flush, with its old contents. */
struct undo {
	uint64_t blk;
	uint64_t failed; /* injected failures before it was written */
	uint8_t *old;	 /* TFS_BLOCK_SIZE bytes, in a slab */
};

struct fault_state {
	pthread_mutex_t mu;  /* everything below */
	pthread_rwlock_t rw; /* writes shared; flush and cut exclusive */
	struct tfs_fault f;
	uint64_t n[3];	    /* operations of each kind since set */
	uint64_t nfail_ops; /* of fail_kinds on fail_members since set */
	uint64_t failed;
	unsigned int hit_kind; /* of the first failed or cut operation */
	int fail_hit;	       /* the fail_nth operation has failed */
	uint64_t flushes_after_fail;
	int dead;	  /* the power is off */
	uint64_t t0_ns;	  /* when the settings were made */
	struct undo *log; /* the undo log */
	size_t nlog, caplog;
	uint8_t **slab;	       /* the old contents, UNDO_SLAB blocks each, */
	size_t nslab, capslab; /* kept for reuse until closed */
	size_t slab_cur, slab_used; /* the slab in use, its blocks used */
	size_t *idx;   /* hash of blk: index into log + 1, 0 empty */
	size_t capidx; /* a power of two, at least twice nlog */
};

static unsigned int kind_index(unsigned int kind)
{
	return kind == TFS_FAULT_READ ? 0 : kind == TFS_FAULT_WRITE ? 1 : 2;
}

/* Operations of the kinds in mask so far. */
static uint64_t ops_of(const struct fault_state *s, unsigned int mask)
{
	uint64_t c = 0;

	for (unsigned int i = 0; i < 3; i++)
		if (mask & (1u << i))
			c += s->n[i];
	return c;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ----- the undo log ----- */

static size_t undo_slot(const struct fault_state *s, uint64_t blk)
{
	uint64_t x = blk;

	return (size_t)splitmix(&x) & (s->capidx - 1);
}

static struct undo *undo_find(const struct fault_state *s, uint64_t blk)
{
	if (!s->capidx)
		return NULL;
	for (size_t i = undo_slot(s, blk);; i = (i + 1) & (s->capidx - 1)) {
		if (!s->idx[i])
			return NULL;
		if (s->log[s->idx[i] - 1].blk == blk)
			return &s->log[s->idx[i] - 1];
	}
}

static void undo_index(struct fault_state *s, size_t at)
{
	size_t i = undo_slot(s, s->log[at].blk);

	while (s->idx[i])
		i = (i + 1) & (s->capidx - 1);
	s->idx[i] = at + 1;
}

/* Add blk with its old contents (from undo_block()): 0 or -ENOMEM. */
static int undo_add(struct fault_state *s, uint64_t blk, uint8_t *old)
{
	if (s->nlog == s->caplog) {
		size_t nc = s->caplog ? s->caplog * 2 : 256;
		struct undo *nl = realloc(s->log, nc * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		s->log = nl;
		s->caplog = nc;
	}
	if (2 * (s->nlog + 1) > s->capidx) {
		size_t nc = s->capidx ? s->capidx * 2 : 1024;
		size_t *ni = calloc(nc, sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		free(s->idx);
		s->idx = ni;
		s->capidx = nc;
		for (size_t i = 0; i < s->nlog; i++)
			undo_index(s, i);
	}
	s->log[s->nlog].blk = blk;
	s->log[s->nlog].failed = s->failed;
	s->log[s->nlog].old = old;
	undo_index(s, s->nlog++);
	return 0;
}

#define UNDO_SLAB 64u /* blocks per allocation */

/* Room for one block's old contents: NULL when out of memory. */
static uint8_t *undo_block(struct fault_state *s)
{
	if (s->slab_used == UNDO_SLAB) {
		s->slab_cur++;
		s->slab_used = 0;
	}
	if (s->slab_cur == s->nslab) {
		uint8_t *p;

		if (s->nslab == s->capslab) {
			size_t nc = s->capslab ? s->capslab * 2 : 16;
			uint8_t **ns = realloc(s->slab, nc * sizeof(*ns));

			if (!ns)
				return NULL;
			s->slab = ns;
			s->capslab = nc;
		}
		p = malloc(UNDO_SLAB * TFS_BLOCK_SIZE);
		if (!p)
			return NULL;
		s->slab[s->nslab++] = p;
	}
	return s->slab[s->slab_cur] + s->slab_used++ * TFS_BLOCK_SIZE;
}

/* Empty the log; its memory stays for the next writes. */
static void undo_clear(struct fault_state *s)
{
	s->slab_cur = 0;
	s->slab_used = 0;
	s->nlog = 0;
	if (s->idx)
		memset(s->idx, 0, s->capidx * sizeof(*s->idx));
}

/* Read blocks [b, b + n) of the image into buf (zeros past its end). */
static int undo_read(struct tfs_dev *d, uint8_t *buf, uint64_t b, size_t n)
{
	size_t len = n * TFS_BLOCK_SIZE, done = 0;
	uint64_t local = 0;
	struct tfs_member *m = tfs_io_member(d, b * TFS_BLOCK_SIZE, &local);

	if (!m)
		return -EIO;
	while (done < len) {
		ssize_t got =
		    pread(m->fd, buf + done, len - done, (off_t)(local + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	memset(buf + done, 0, len - done);
	return 0;
}

#define UNDO_RUN 256u /* blocks read at once */

/*
 * Save the old contents of every block of the batch not yet in the undo
 * log, before the batch is written.  Caller holds rw shared and mu.
 * Pieces outside the device are left to the engine to refuse.
 */
static int undo_capture(struct tfs_dev *d, struct fault_state *s,
			const struct tfs_iov *v, int n)
{
	uint8_t *run = NULL;
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		uint64_t b, end;

		if (!tfs_io_inside(d, v[i].off, v[i].len))
			continue;
		b = v[i].off / TFS_BLOCK_SIZE;
		end =
		    (v[i].off + v[i].len + TFS_BLOCK_SIZE - 1) / TFS_BLOCK_SIZE;
		while (b < end && !rc) {
			size_t k = 0;

			if (undo_find(s, b)) {
				b++;
				continue;
			}
			/* a run of blocks not yet saved, read in one go */
			while (b + k < end && k < UNDO_RUN &&
			       !undo_find(s, b + k))
				k++;
			if (!run)
				run = tfs_io_alloc(UNDO_RUN * TFS_BLOCK_SIZE);
			rc = run ? undo_read(d, run, b, k) : -ENOMEM;
			for (size_t j = 0; j < k && !rc; j++) {
				uint8_t *old = undo_block(s);

				if (!old || undo_add(s, b + j, old)) {
					rc = -ENOMEM;
					break;
				}
				memcpy(old, run + j * TFS_BLOCK_SIZE,
				       TFS_BLOCK_SIZE);
			}
			b += k;
		}
	}
	tfs_io_free(run);
	return rc;
}

/* ----- settings ----- */

static void fault_free(struct fault_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nslab; i++)
		free(s->slab[i]);
	free(s->slab);
	free(s->log);
	free(s->idx);
	pthread_rwlock_destroy(&s->rw);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* At tfs_dev_close(): the counters to at_close, then free. */
static void fault_close(struct tfs_dev *d)
{
	if (d->fault && d->fault->f.at_close)
		tfs_dev_fault_ops(d, d->fault->f.at_close);
	fault_free(d->fault);
}

int tfs_dev_fault_set(struct tfs_dev *d, const struct tfs_fault *f)
{
	struct fault_state *s = d->fault;

	if (!f) {
		d->fault = NULL;
		fault_free(s);
		return 0;
	}
	if (!s) {
		pthread_rwlockattr_t a;

		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		pthread_mutex_init(&s->mu, NULL);
		/* a flush waiting for the writes in flight goes before new
		 * writes, so a steady stream of them cannot starve it */
		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(
		    &a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->rw, &a);
		pthread_rwlockattr_destroy(&a);
	}
	if (!f->volatile_cache)
		undo_clear(s);
	s->f = *f;
	if (!s->f.fail_err)
		s->f.fail_err = EIO;
	if (!s->f.cut_kinds)
		s->f.cut_kinds = TFS_FAULT_ANY;
	memset(s->n, 0, sizeof(s->n));
	s->nfail_ops = 0;
	s->failed = 0;
	s->hit_kind = 0;
	s->fail_hit = 0;
	s->flushes_after_fail = 0;
	s->dead = 0;
	s->t0_ns = tfs_io_now_ns();
	d->fault = s;
	return 0;
}

void tfs_dev_fault_ops(struct tfs_dev *d, struct tfs_fault_ops *ops)
{
	struct fault_state *s = d->fault;

	memset(ops, 0, sizeof(*ops));
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	ops->reads = s->n[0];
	ops->writes = s->n[1];
	ops->flushes = s->n[2];
	ops->total = s->n[0] + s->n[1] + s->n[2];
	ops->failed = s->failed;
	ops->hit_kind = s->hit_kind;
	ops->unflushed = s->nlog;
	ops->cut = s->dead;
	pthread_mutex_unlock(&s->mu);
}

/* Whether member m is in mask (bit m; an empty mask holds every one). */
static int in_mask(uint64_t mask, unsigned int m)
{
	return !mask || (m < 64 && (mask >> m & 1));
}

/* The members the n pieces of v touch, as a mask (bit m: member m). */
static uint64_t members_of(const struct tfs_dev *d, const struct tfs_iov *v,
			   int n)
{
	uint64_t mask = 0;

	for (int i = 0; i < n; i++) {
		uint64_t m = v[i].off >> TFS_MEMBER_SHIFT;

		if (m < d->nmem && m < 64)
			mask |= 1ull << m;
	}
	return mask;
}

/* All members of d, as a mask: a flush covers each it must. */
static uint64_t all_members(const struct tfs_dev *d)
{
	return d->nmem >= 64 ? ~0ull : (1ull << d->nmem) - 1;
}

/*
 * After a flush that failed on the members of mask: the others flushed,
 * so their blocks leave the undo log; those of mask stay, as what the
 * failed flush should have covered, and those members stay dirty.
 * Caller holds rw exclusive and mu.
 */
static void undo_keep(struct tfs_dev *d, struct fault_state *s, uint64_t mask)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nlog; i++) {
		uint64_t m = s->log[i].blk * TFS_BLOCK_SIZE >> TFS_MEMBER_SHIFT;

		if (in_mask(mask, (unsigned int)m))
			s->log[k++] = s->log[i];
	}
	s->nlog = k;
	if (s->idx)
		memset(s->idx, 0, s->capidx * sizeof(*s->idx));
	for (size_t i = 0; i < s->nlog; i++)
		undo_index(s, i);
	for (unsigned int m = 0; m < d->nmem; m++)
		if (in_mask(mask, m))
			__atomic_store_n(&d->mem[m].dirty, 1, __ATOMIC_RELAXED);
}

/* ----- the power cut ----- */

/* Cut the power.  Caller holds rw exclusive and mu. */
static int cut_locked(struct tfs_dev *d, struct fault_state *s, uint64_t seed)
{
	uint64_t x = seed;
	unsigned int mix = (unsigned int)(seed % 4);
	int rc = 0, restored = 0;
	uint8_t *bounce;
	struct tfs_member *m;
	uint64_t local = 0;

	if (s->dead)
		return 0;
	/* aligned, for an image opened with O_DIRECT */
	bounce = tfs_io_alloc(TFS_BLOCK_SIZE);
	if (!bounce)
		rc = -ENOMEM;
	for (size_t i = 0; i < s->nlog && bounce; i++) {
		struct undo *u = &s->log[i];
		int lost = mix == 0   ? 1
			   : mix == 1 ? 0
			   : mix == 3 && u->failed < s->failed
			       ? 1
			       : (int)(splitmix(&x) & 1);

		m = tfs_io_member(d, u->blk * TFS_BLOCK_SIZE, &local);
		if (m &&
		    !in_mask(s->f.lose_members, (unsigned int)(m - d->mem)))
			continue; /* a member whose cache kept power */
		if (!lost)
			continue;
		memcpy(bounce, u->old, TFS_BLOCK_SIZE);
		if (!m || pwrite(m->fd, bounce, TFS_BLOCK_SIZE, (off_t)local) !=
			      TFS_BLOCK_SIZE)
			rc = rc ? rc : -EIO;
		restored++;
	}
	tfs_io_free(bounce);
	undo_clear(s);
	s->dead = 1;
	if (s->f.cut_exit)
		_exit(TFS_FAULT_CUT_STATUS);
	return rc ? rc : restored;
}

int tfs_dev_powercut(struct tfs_dev *d, uint64_t seed)
{
	struct fault_state *s = d->fault;
	int rc;

	if (!s) {
		struct tfs_fault none = { 0 };

		rc = tfs_dev_fault_set(d, &none);
		if (rc)
			return rc;
		s = d->fault;
	}
	pthread_rwlock_wrlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = cut_locked(d, s, seed);
	pthread_mutex_unlock(&s->mu);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/* ----- operations ----- */

/*
 * Count an operation of this kind and decide its fate: 0 it goes ahead,
 * -errno it fails (injected, or the power is off).  A cut it triggers
 * happens here, instead of the operation.  Caller holds no lock.
 */
static int fault_op(struct tfs_dev *d, unsigned int kind, uint64_t touched,
		    int *injected)
{
	struct fault_state *s = d->fault;
	const struct tfs_fault *f = &s->f;
	uint64_t slow_ms = 0, blame = touched;
	int rc = 0, cut = 0;

	pthread_mutex_lock(&s->mu);
	if (s->dead) {
		rc = -EIO;
		goto out;
	}
	s->n[kind_index(kind)]++;
	if (f->cut_nth && (f->cut_kinds & kind) &&
	    ops_of(s, f->cut_kinds) == f->cut_nth)
		cut = 1;
	if (f->cut_after_ms &&
	    tfs_io_now_ns() - s->t0_ns >= f->cut_after_ms * 1000000)
		cut = 1;
	if (f->cut_flush_after_fail && s->fail_hit && kind == TFS_FAULT_FLUSH &&
	    ++s->flushes_after_fail == f->cut_flush_after_fail)
		cut = 1;
	if (!cut && f->fail_nth && (f->fail_kinds & kind) &&
	    (!f->fail_members || (touched & f->fail_members))) {
		uint64_t c = ++s->nfail_ops;

		if (c == f->fail_nth || (f->fail_persist && c > f->fail_nth)) {
			if (!s->hit_kind)
				s->hit_kind = kind;
			rc = -f->fail_err;
			s->failed++;
			s->fail_hit = 1;
			if (f->fail_members)
				blame = touched & f->fail_members;
			*injected = 1;
		}
	}
	if (cut && !s->hit_kind)
		s->hit_kind = kind;
	if (!rc && !cut && (f->slow_kinds & kind))
		slow_ms = f->slow_ms;
out:
	pthread_mutex_unlock(&s->mu);
	if (slow_ms) {
		struct timespec ts = { (time_t)(slow_ms / 1000),
				       (long)(slow_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (cut) {
		pthread_rwlock_wrlock(&s->rw);
		pthread_mutex_lock(&s->mu);
		cut_locked(d, s, f->seed);
		pthread_mutex_unlock(&s->mu);
		pthread_rwlock_unlock(&s->rw);
		rc = -EIO;
	}
	if (rc) /* charged to the first member at fault */
		tfs_io_error(d, &d->mem[blame ? __builtin_ctzll(blame) : 0]);
	return rc;
}

int tfs_io_fault_rw(struct tfs_dev *d, int write, const struct tfs_iov *v,
		    int n)
{
	struct fault_state *s = d->fault;
	int rc, injected = 0;

	rc = fault_op(d, write ? TFS_FAULT_WRITE : TFS_FAULT_READ,
		      members_of(d, v, n), &injected);
	if (rc)
		return rc;
	if (!write || !s->f.volatile_cache)
		return tfs_io_rw_raw(d, write, v, n);
	pthread_rwlock_rdlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = s->dead ? -EIO : undo_capture(d, s, v, n);
	pthread_mutex_unlock(&s->mu);
	if (!rc)
		rc = tfs_io_rw_raw(d, write, v, n);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/*
 * A discard is a write of zeros to the fault device: one write
 * operation, and with the volatile cache its blocks' old contents go to
 * the undo log first, so a power cut before the next flush may bring
 * them back, as a disk's cache may lose a discard.
 */
int tfs_io_fault_discard(struct tfs_dev *d, uint64_t off, uint64_t len)
{
	struct fault_state *s = d->fault;
	struct tfs_iov v = { NULL, (size_t)len, off };
	int rc, injected = 0;

	rc = fault_op(d, TFS_FAULT_WRITE, members_of(d, &v, 1), &injected);
	if (rc)
		return rc;
	if (!s->f.volatile_cache)
		return tfs_io_discard_raw(d, off, len);
	pthread_rwlock_rdlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	rc = s->dead ? -EIO : undo_capture(d, s, &v, 1);
	pthread_mutex_unlock(&s->mu);
	if (!rc)
		rc = tfs_io_discard_raw(d, off, len);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

int tfs_io_fault_flush(struct tfs_dev *d)
{
	struct fault_state *s = d->fault;
	int rc, injected = 0;

	rc = fault_op(d, TFS_FAULT_FLUSH, all_members(d), &injected);
	if (rc && injected && s->f.fail_members && s->f.volatile_cache) {
		/* it failed on those members only: the others flushed */
		pthread_rwlock_wrlock(&s->rw);
		pthread_mutex_lock(&s->mu);
		if (!s->dead)
			undo_keep(d, s, s->f.fail_members);
		pthread_mutex_unlock(&s->mu);
		pthread_rwlock_unlock(&s->rw);
	}
	if (rc)
		return rc;
	if (!s->f.volatile_cache)
		return tfs_io_flush_raw(d);
	/* the simulated disk's cache: only the undo log is emptied */
	pthread_rwlock_wrlock(&s->rw);
	pthread_mutex_lock(&s->mu);
	if (s->dead) {
		rc = -EIO;
	} else {
		undo_clear(s);
		tfs_io_count(&d->mem[0].st.flush, 1);
	}
	pthread_mutex_unlock(&s->mu);
	pthread_rwlock_unlock(&s->rw);
	return rc;
}

/* ----- the environment ----- */

/* KINDS ("write", "read+flush", "any") into *mask: the rest of s, or
 * NULL if it does not parse. */
static const char *parse_kinds(const char *s, unsigned int *mask)
{
	static const struct {
		const char *name;
		unsigned int mask;
	} k[] = { { "read", TFS_FAULT_READ },
		  { "write", TFS_FAULT_WRITE },
		  { "flush", TFS_FAULT_FLUSH },
		  { "any", TFS_FAULT_ANY } };

	*mask = 0;
	for (;;) {
		size_t i;

		for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
			size_t l = strlen(k[i].name);

			if (!strncmp(s, k[i].name, l)) {
				*mask |= k[i].mask;
				s += l;
				break;
			}
		}
		if (i == sizeof(k) / sizeof(k[0]))
			return NULL;
		if (*s != '+')
			return s;
		s++;
	}
}

/* A number ending at one of the characters of stops or the end: 0, or
 * -EINVAL. */
static int parse_num_in(const char **s, uint64_t *out, const char *stops)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(*s, &end, 0);
	if (errno || (*end && !strchr(stops, *end)))
		return -EINVAL;
	*s = end;
	return 0;
}

/* A number ending at a ',', ':' or the end: 0, or -EINVAL. */
static int parse_num(const char **s, uint64_t *out)
{
	return parse_num_in(s, out, ",:");
}

/* Member numbers joined with '+' ("1+2") into a mask: 0, or -EINVAL. */
static int parse_members(const char **s, uint64_t *mask)
{
	uint64_t m;

	*mask = 0;
	for (;;) {
		if (parse_num_in(s, &m, "+,") || m >= 64)
			return -EINVAL;
		*mask |= 1ull << m;
		if (**s != '+')
			return 0;
		(*s)++;
	}
}

/* "fail=KINDS:N[:ERR][:persist]" after the '=' */
static int parse_fail(const char *s, struct tfs_fault *f, const char **rest)
{
	s = parse_kinds(s, &f->fail_kinds);
	if (!s || *s++ != ':' || parse_num(&s, &f->fail_nth))
		return -EINVAL;
	while (*s == ':') {
		uint64_t e;

		s++;
		if (!strncmp(s, "persist", 7)) {
			f->fail_persist = 1;
			s += 7;
		} else if (!strncmp(s, "EIO", 3)) {
			f->fail_err = EIO;
			s += 3;
		} else if (!strncmp(s, "ENOSPC", 6)) {
			f->fail_err = ENOSPC;
			s += 6;
		} else if (!parse_num(&s, &e) && e > 0 && e < 4096) {
			f->fail_err = (int)e;
		} else {
			return -EINVAL;
		}
	}
	*rest = s;
	return 0;
}

static int fault_from_env(struct tfs_dev *d, const char *env)
{
	struct tfs_fault f = { .cut_exit = 1 };
	const char *s = env;
	int rc = 0;

	while (!rc && *s) {
		if (!strncmp(s, "volatile", 8)) {
			f.volatile_cache = 1;
			s += 8;
		} else if (!strncmp(s, "seed=", 5)) {
			s += 5;
			rc = parse_num(&s, &f.seed);
		} else if (!strncmp(s, "cut_ms=", 7)) {
			s += 7;
			rc = parse_num(&s, &f.cut_after_ms);
		} else if (!strncmp(s, "cut_after_fail=", 15)) {
			s += 15;
			rc = parse_num(&s, &f.cut_flush_after_fail);
		} else if (!strncmp(s, "cut=", 4)) {
			s += 4;
			if (*s < '0' || *s > '9') {
				s = parse_kinds(s, &f.cut_kinds);
				if (!s || *s != ':')
					return -EINVAL;
				s++;
			}
			if (!rc)
				rc = parse_num(&s, &f.cut_nth);
		} else if (!strncmp(s, "fail=", 5)) {
			rc = parse_fail(s + 5, &f, &s);
		} else if (!strncmp(s, "fail_member=", 12)) {
			s += 12;
			rc = parse_members(&s, &f.fail_members);
		} else if (!strncmp(s, "lose_member=", 12)) {
			s += 12;
			rc = parse_members(&s, &f.lose_members);
		} else if (!strncmp(s, "slow=", 5)) {
			s = parse_kinds(s + 5, &f.slow_kinds);
			if (!s || *s++ != ':')
				return -EINVAL;
			rc = parse_num(&s, &f.slow_ms);
		} else {
			rc = -EINVAL;
		}
		if (!rc && *s == ',')
			s++;
		else if (!rc && *s)
			rc = -EINVAL;
	}
	if (!rc)
		rc = tfs_dev_fault_set(d, &f);
	return rc;
}
