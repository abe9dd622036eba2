/*
 * test_ioerr.c: every device error and power cut during a workload leaves
 * a file system that mounts, checks clean and keeps what was fsync'd, as
 * SQLite's I/O error tests do it.
 * Description: a fixed workload on the library (files created, written,
 * fsync'd, renamed, renamed over, unlinked, truncated shorter and longer,
 * xattrs set, large xattrs rewritten until the journal is full and a
 * checkpoint is written, a sync, files left unsynced, close) runs once on
 * the fault device to count the device operations it issues, close
 * included.  Then, on a fresh image each time, for every n up to that
 * count:
 *   eio-once        the nth operation fails with EIO, once
 *   eio-cut         the nth fails with EIO and every later one does too;
 *                   the power is cut at the next flush
 *   cut             the power is cut at the nth operation
 *   eio-once-cut    the nth fails with EIO once; the power is cut at the
 *                   next flush after it (a failed flush, then a crash):
 *                   what was written before the failure is lost, what
 *                   came after on a coin per block
 *   enospc-once     the nth write fails with ENOSPC, once
 * with the volatile cache (lib/io.h: unflushed writes are lost or kept
 * block by block at a cut).  The workload goes on through errors, as an
 * application would, and records which files an fsync returned 0 for,
 * with what name, contents and xattr.  Then the image is opened again on
 * a healthy device, and:
 *   1. it opens (recovery included);
 *   2. tfs_check() finds nothing (tensorfs-fsck would exit 0);
 *   3. every file whose last fsync returned 0 and that was not touched
 *      since has exactly that name, size, contents and xattr;
 *   4. no file holds bytes nobody wrote to it: each byte is zero or a
 *      byte some write put at that offset of that file, and no name
 *      appears that the workload never made.
 * The same on a set of three members (16 KiB stripes, so the files and
 * checkpoints spread over all), with faults on one member:
 *   set-eio-once-member-1  the nth read or write touching member 1
 *                   fails with EIO, once
 *   set-flush-cut-2 the nth flush fails on member 2 only (the others
 *                   flushed), and the power is cut at the next flush:
 *                   member 2's writes since its last good flush are lost
 *   set-cut-member-1  the power is cut at the nth operation and only
 *                   member 1 loses unflushed writes (the other drives'
 *                   caches had landed)
 * The two bugs of issue 10 are among these runs: a flush failing right
 * after a journal transaction was written (eio-once on the flush that
 * ends a commit, then the workload's later fsyncs succeed), and a failed
 * superblock flush followed by a power cut (eio-once-cut on the flush
 * after a checkpoint's superblock write).
 *
 * Under ASan (ten times slower) cut and eio-cut take every other n
 * each, so that the test stays near two minutes there.
 *
 * Every failing run is reported (mode, n, the kind of operation hit and
 * the workload step it hit during, what broke); the test fails at the end
 * if any did.  TFS_IOERR_WIDE=1 adds seeds (other mixes of a cut, other
 * coins), cuts at the 2nd and 3rd flush after a failure, and persistent
 * ENOSPC;
 * TFS_IOERR_ONLY=MODE:N runs one case (to debug it).
 *
 * Needs a build with -DTFS_TEST_HOOKS=ON (registered as a skip without).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "fs.h"
#include "fs_internal.h"
#include "io.h"
#include "mkfs.h"
#include "testimg.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define IMG_BYTES (64 * MiB) /* the smallest: a 3 MiB journal */
#define NOBJ	  12
#define MAXNAMES  4
#define MAXSEEDS  64
#define MAXF	  (320 * 1024) /* largest file of the workload */
#define BIGX	  60000	       /* the xattrs that fill the journal */

/* ===== the model ===== */

/* A file of the workload: what it is now and what the last fsync that
 * returned 0 promised. */
struct obj {
	uint64_t ino;  /* 0: never created */
	int live;      /* has its name now */
	int unknown;   /* an operation on it failed: contents unknown */
	int dirty;     /* changed since the last good fsync */
	char name[24]; /* its name now ... */
	uint64_t dir;  /* ... in this directory */
	uint8_t *data; /* its contents now (MAXF bytes) */
	size_t *used;  /* how much of data was ever written */
	size_t size;
	uint32_t xseed; /* value of user.v (0: none) */
	/* the promise of the last good fsync */
	int synced;
	char sname[24];
	uint64_t sdir;
	uint8_t *sdata;
	size_t ssize;
	uint32_t sxseed;
	/* every name it had and every pattern written to it */
	char names[MAXNAMES][24];
	uint64_t dirs[MAXNAMES];
	int nnames;
	uint32_t seeds[MAXSEEDS];
	int nseeds;
};

struct model {
	struct tfs_fs *fs;
	uint64_t dir; /* "d", or the root if mkdir failed */
	struct obj o[NOBJ];
	uint32_t next_seed;
	const char *step;	    /* what the workload is doing */
	const char *first_err_step; /* where the first error came */
	uint64_t sb_writes; /* superblock writes (checkpoints) before close */
	int errors;
	uint8_t *buf; /* MAXF bytes */
};

/* The model's buffers, made once (allocations are slow under ASan). */
struct bufs {
	uint8_t *buf;
	uint8_t *data[NOBJ], *sdata[NOBJ];
	size_t used[NOBJ]; /* bytes of data[] a run may have written */
};

static void bufs_init(struct bufs *b)
{
	b->buf = malloc(MAXF);
	assert_non_null(b->buf);
	for (int i = 0; i < NOBJ; i++) {
		b->data[i] = calloc(1, MAXF);
		b->sdata[i] = malloc(MAXF);
		assert_non_null(b->data[i]);
		assert_non_null(b->sdata[i]);
	}
}

static void bufs_free(struct bufs *b)
{
	for (int i = 0; i < NOBJ; i++) {
		free(b->data[i]);
		free(b->sdata[i]);
	}
	free(b->buf);
}

static void model_init(struct model *m, struct tfs_fs *fs, struct bufs *b)
{
	memset(m, 0, sizeof(*m));
	m->fs = fs;
	m->dir = TFS_FS_ROOT;
	m->next_seed = 1;
	m->buf = b->buf;
	for (int i = 0; i < NOBJ; i++) {
		m->o[i].data = b->data[i];
		m->o[i].used = &b->used[i];
		m->o[i].sdata = b->sdata[i];
		/* what the last run used of it */
		memset(m->o[i].data, 0, b->used[i]);
		b->used[i] = 0;
	}
}

/*
 * Whether the power is off: nothing more reaches the device, so the rest
 * of the workload can change nothing the checks could see.  Stopping
 * there halves the time of the runs with a cut.
 */
static int cut(struct model *m)
{
	struct tfs_fault_ops ops;

	tfs_dev_fault_ops(m->fs->dev, &ops);
	return ops.cut;
}

/* An operation's result: an error marks the objects it touched unknown. */
static int result(struct model *m, int rc, struct obj *a, struct obj *b)
{
	if (rc >= 0)
		return 0;
	if (!m->errors++)
		m->first_err_step = m->step;
	if (a)
		a->unknown = 1;
	if (b)
		b->unknown = 1;
	return rc;
}

static void add_name(struct obj *o, uint64_t dir, const char *name)
{
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->dir = dir;
	if (o->nnames < MAXNAMES) {
		snprintf(o->names[o->nnames], sizeof(o->names[0]), "%s", name);
		o->dirs[o->nnames++] = dir;
	}
}

static void w_create(struct model *m, int i, uint64_t dir, const char *name)
{
	struct obj *o = &m->o[i];
	struct stat st;
	int rc;

	if (cut(m))
		return;

	add_name(o, dir, name);
	rc = tfs_mknod(m->fs, dir, name, S_IFREG | 0644, 0, 1000, 1000, &st);
	if (!result(m, rc, o, NULL)) {
		o->ino = st.st_ino;
		o->live = 1;
	}
	o->dirty = 1;
}

static void w_write(struct model *m, int i, uint64_t off, size_t len)
{
	struct obj *o = &m->o[i];
	uint32_t seed = m->next_seed++;
	ssize_t n;

	if (cut(m))
		return;

	if (!o->live)
		return;
	assert_true(off + len <= MAXF);
	fill_pat(m->buf, len, off, seed);
	if (o->nseeds < MAXSEEDS)
		o->seeds[o->nseeds++] = seed;
	o->dirty = 1;
	n = tfs_write(m->fs, o->ino, m->buf, len, off, NULL);
	if (result(m, n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO, o, NULL))
		return;
	memcpy(o->data + off, m->buf, len);
	if (off + len > o->size)
		o->size = off + len;
	if (o->size > *o->used)
		*o->used = o->size;
}

static void w_truncate(struct model *m, int i, size_t size)
{
	struct obj *o = &m->o[i];
	struct stat in = { 0 };
	int rc;

	if (cut(m))
		return;

	if (!o->live)
		return;
	assert_true(size <= MAXF);
	o->dirty = 1;
	in.st_size = (off_t)size;
	rc = tfs_setattr(m->fs, o->ino, &in, TFS_SET_SIZE, NULL);
	if (result(m, rc, o, NULL))
		return;
	if (size < o->size)
		memset(o->data + size, 0, o->size - size);
	o->size = size;
}

static void w_fsync(struct model *m, int i)
{
	struct obj *o = &m->o[i];

	if (cut(m))
		return;

	if (!o->live)
		return;
	if (result(m, tfs_fsync(m->fs, o->ino, 0, NULL), o, NULL) || o->unknown)
		return;
	o->synced = 1;
	o->dirty = 0;
	memcpy(o->sname, o->name, sizeof(o->sname));
	o->sdir = o->dir;
	memcpy(o->sdata, o->data, o->size);
	o->ssize = o->size;
	o->sxseed = o->xseed;
}

/* A close(2) of the file: its write-back starts (here, is done). */
static void w_flush(struct model *m, int i)
{
	struct obj *o = &m->o[i];

	if (cut(m))
		return;

	if (o->live)
		result(m, tfs_flush(m->fs, o->ino, NULL), o, NULL);
}

/* user.v of o: 16 bytes of pattern seed */
static void xval(uint8_t *v, size_t len, uint32_t seed)
{
	fill_pat(v, len, 0, seed);
}

static void w_setxattr(struct model *m, int i, const char *name, size_t len)
{
	struct obj *o = &m->o[i];
	uint32_t seed = m->next_seed++;
	int rc;

	if (cut(m))
		return;

	if (!o->live)
		return;
	if (len > 16)
		memset(m->buf, (int)(seed & 0xff), len); /* cheap: unchecked */
	else
		xval(m->buf, len, seed);
	o->dirty = 1;
	rc = tfs_setxattr(m->fs, o->ino, name, m->buf, len, 0);
	if (!result(m, rc, o, NULL) && !strcmp(name, "user.v"))
		o->xseed = seed;
}

static void w_unlink(struct model *m, int i)
{
	struct obj *o = &m->o[i];

	if (cut(m))
		return;

	if (!o->live)
		return;
	o->dirty = 1;
	if (!result(m, tfs_unlink(m->fs, o->dir, o->name), o, NULL))
		o->live = 0;
}

/* Rename object i to dir/name, replacing whatever is there. */
static void w_rename(struct model *m, int i, uint64_t dir, const char *name)
{
	struct obj *o = &m->o[i], *victim = NULL;
	int rc;

	if (cut(m))
		return;

	if (!o->live)
		return;
	for (int k = 0; k < NOBJ; k++)
		if (k != i && m->o[k].live && m->o[k].dir == dir &&
		    !strcmp(m->o[k].name, name))
			victim = &m->o[k];
	o->dirty = 1;
	if (victim)
		victim->dirty = 1;
	rc = tfs_rename(m->fs, o->dir, o->name, dir, name, 0);
	if (result(m, rc, o, victim))
		return;
	add_name(o, dir, name);
	if (victim)
		victim->live = 0;
}

/*
 * The workload.  Objects: 0..6 and 9 files, 7 "x" carries the large
 * xattrs, 8 is never fsync'd.
 */
static void workload(struct model *m)
{
	struct tfs_fs_info info;
	uint64_t gen;
	struct stat st;
	uint64_t root = TFS_FS_ROOT;

	m->step = "mkdir";
	if (!result(m, tfs_mkdir(m->fs, root, "d", 0755, 1000, 1000, &st), NULL,
		    NULL))
		m->dir = st.st_ino;

	m->step = "create and write";
	w_create(m, 0, root, "f0");
	w_create(m, 1, m->dir, "f1");
	w_create(m, 2, root, "f2");
	w_create(m, 3, m->dir, "f3");
	w_create(m, 4, root, "f4");
	w_create(m, 5, m->dir, "f5");
	w_write(m, 0, 0, 100000);
	w_write(m, 1, 0, 4096);
	w_write(m, 2, 4096, 8192);
	w_write(m, 3, 1234, 200000);
	w_write(m, 4, 0, 1000);
	w_write(m, 5, 0, 65536);

	m->step = "first fsyncs";
	w_fsync(m, 0);
	w_fsync(m, 1);
	w_fsync(m, 3);

	m->step = "xattr";
	w_setxattr(m, 4, "user.v", 16);
	w_fsync(m, 4);

	m->step = "rename, unlink";
	w_rename(m, 1, root, "g1");
	w_fsync(m, 1);
	w_unlink(m, 2);

	m->step = "truncate";
	w_truncate(m, 3, 50000);
	w_fsync(m, 3);
	w_truncate(m, 3, 300000);
	w_write(m, 3, 290000, 1000);
	w_fsync(m, 3);

	m->step = "overwrite";
	w_write(m, 0, 50000, 5000);
	w_fsync(m, 0);

	m->step = "more files";
	w_create(m, 6, m->dir, "f6");
	w_write(m, 6, 0, 20000);
	w_fsync(m, 6);
	w_setxattr(m, 6, "user.v", 16);

	m->step = "sync";
	result(m, tfs_fs_sync(m->fs), NULL, NULL);

	/* written back at once (a close(2)), committed by a later fsync of
	 * another file */
	m->step = "unsynced changes";
	w_create(m, 8, root, "tail");
	w_write(m, 8, 0, 12288);
	w_write(m, 6, 20000, 4096);
	w_truncate(m, 4, 2000);
	w_flush(m, 8);
	w_flush(m, 6);

	/*
	 * Rewritten large xattrs fill the 3 MiB journal until a checkpoint
	 * empties it (the superblock generation moves).
	 */
	m->step = "journal full";
	w_create(m, 7, root, "x");
	tfs_fs_get_info(m->fs, &info);
	gen = info.generation;
	for (int k = 0; k < 96 && info.generation == gen; k++) {
		w_setxattr(m, 7, "user.big", BIGX);
		if (k % 4 == 3)
			w_fsync(m, 7);
		if (k == 30) {
			m->step = "journal full, a file in between";
			w_write(m, 4, 1000, 3000);
			w_fsync(m, 4);
			m->step = "journal full";
		}
		tfs_fs_get_info(m->fs, &info);
	}

	/*
	 * The first transaction after the checkpoint is at the start of
	 * the journal; if the flush after it fails, the next fsync makes a
	 * checkpoint, and nothing is committed after it before close
	 * (issue 10's first bug: the transaction must not be replayed on
	 * top of the checkpoint that holds it, which would create "late"
	 * twice and take f5 back to its older size).
	 */
	m->step = "first transaction after the checkpoint";
	w_create(m, 9, root, "late");
	w_write(m, 5, 65536, 10000);
	w_fsync(m, 5);
	m->step = "truncate, rename over, fsync";
	w_truncate(m, 5, 70000);
	w_rename(m, 5, root, "f0"); /* over f0 */
	w_fsync(m, 5);
	m->step = "close";
}

/* ===== the checks after reopening ===== */

struct report {
	char text[2048];
	size_t len;
};

static void say(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->len + 2 >= sizeof(r->text))
		return;
	va_start(ap, fmt);
	r->len += (size_t)vsnprintf(r->text + r->len, sizeof(r->text) - r->len,
				    fmt, ap);
	va_end(ap);
	if (r->len >= sizeof(r->text))
		r->len = sizeof(r->text) - 1;
}

/* The fsync'd objects are exactly as promised. */
static void check_synced(struct tfs_fs *fs, struct model *m, struct report *r)
{
	uint8_t v[16], w[16];

	for (int i = 0; i < NOBJ; i++) {
		struct obj *o = &m->o[i];
		struct stat st;
		ssize_t n;

		if (!o->synced || o->dirty || o->unknown)
			continue;
		if (tfs_lookup(fs, o->sdir, o->sname, &st)) {
			say(r, "'%s' fsync'd but missing; ", o->sname);
			continue;
		}
		if ((size_t)st.st_size != o->ssize) {
			say(r, "'%s' fsync'd with %zu bytes, has %lld; ",
			    o->sname, o->ssize, (long long)st.st_size);
			continue;
		}
		n = tfs_read(fs, st.st_ino, m->buf, o->ssize, 0);
		if (n != (ssize_t)o->ssize ||
		    memcmp(m->buf, o->sdata, o->ssize)) {
			say(r, "'%s' fsync'd but its bytes differ (read %zd); ",
			    o->sname, n);
			continue;
		}
		if (!o->sxseed)
			continue;
		xval(w, sizeof(w), o->sxseed);
		n = tfs_getxattr(fs, st.st_ino, "user.v", v, sizeof(v));
		if (n != (ssize_t)sizeof(v) || memcmp(v, w, sizeof(v)))
			say(r, "'%s' fsync'd with user.v, has %s; ", o->sname,
			    n < 0 ? "none" : "another value");
	}
}

/* Whether byte b at off of a file named dir/name is one somebody wrote. */
static int byte_ok(const struct model *m, uint64_t dir, const char *name,
		   uint64_t off, uint8_t b)
{
	if (b == 0)
		return 1;
	for (int i = 0; i < NOBJ; i++) {
		const struct obj *o = &m->o[i];
		int named = 0;

		for (int k = 0; k < o->nnames && !named; k++)
			named = o->dirs[k] == dir && !strcmp(o->names[k], name);
		if (!named)
			continue;
		for (int k = 0; k < o->nseeds; k++)
			if (pat(off, o->seeds[k]) == b)
				return 1;
	}
	return 0;
}

static int known_name(const struct model *m, uint64_t dir, const char *name)
{
	for (int i = 0; i < NOBJ; i++)
		for (int k = 0; k < m->o[i].nnames; k++)
			if (m->o[i].dirs[k] == dir &&
			    !strcmp(m->o[i].names[k], name))
				return 1;
	return 0;
}

struct listing {
	char names[32][32];
	int n;
};

static int collect(void *arg, const char *name, uint64_t ino, mode_t type,
		   uint64_t cookie)
{
	struct listing *l = arg;

	(void)ino;
	(void)type;
	(void)cookie;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n < 32)
		snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", name);
	return 0;
}

/* No file holds a byte nobody wrote; no name nobody made. */
static void check_foreign(struct tfs_fs *fs, struct model *m, uint64_t dir,
			  struct report *r)
{
	struct listing l = { .n = 0 };

	if (tfs_readdir(fs, dir, 0, collect, &l)) {
		say(r, "readdir of %llu fails; ", (unsigned long long)dir);
		return;
	}
	for (int i = 0; i < l.n; i++) {
		const char *name = l.names[i];
		struct stat st;
		ssize_t n;

		if (tfs_lookup(fs, dir, name, &st)) {
			say(r, "'%s' listed but not found; ", name);
			continue;
		}
		if (S_ISDIR(st.st_mode) && dir == TFS_FS_ROOT &&
		    !strcmp(name, "d"))
			continue;
		if (!known_name(m, dir, name) || !S_ISREG(st.st_mode)) {
			say(r, "'%s' appeared, nobody made it; ", name);
			continue;
		}
		if (st.st_size > MAXF) {
			say(r, "'%s' has %lld bytes, more than written; ", name,
			    (long long)st.st_size);
			continue;
		}
		n = tfs_read(fs, st.st_ino, m->buf, (size_t)st.st_size, 0);
		if (n != st.st_size) {
			say(r, "'%s' reads %zd of %lld bytes; ", name, n,
			    (long long)st.st_size);
			continue;
		}
		for (uint64_t off = 0; off < (uint64_t)n; off++) {
			if (!byte_ok(m, dir, name, off, m->buf[off])) {
				say(r,
				    "'%s' byte %llu is %u, which nobody "
				    "wrote there; ",
				    name, (unsigned long long)off, m->buf[off]);
				break;
			}
		}
	}
}

/* ===== one run ===== */

enum mode {
	EIO_ONCE,
	EIO_CUT,
	CUT,
	EIO_ONCE_CUT,
	ENOSPC_ONCE,
	SET_EIO_ONCE,	  /* on a set of 3: reads and writes of member 1 */
	SET_FLUSH_CUT,	  /* a flush fails on member 2, a cut follows */
	SET_CUT_MEMBER_1, /* a cut that loses member 1's writes only */
	NMODES
};

static const char *const mode_name[NMODES] = {
	"eio-once",	   "eio-cut",	       "cut",
	"eio-once-cut",	   "enospc-once",      "set-eio-once-member-1",
	"set-flush-cut-2", "set-cut-member-1",
};

#define SET_N 3 /* members of the set the set-* modes run on */

struct ctx {
	const char *dir; /* where the images go */
	int set;	 /* a set of SET_N members, not one image */
	char member[SET_N][64];
	char path[SET_N * 65]; /* the image, or the set's members joined */
	uint64_t member_writes[SET_N]; /* of the last run, before close */
	int wide;
	unsigned int failures, runs;
	uint64_t last_sb_writes;
	struct bufs bufs;
	struct tfs_fs_opts opts;
};

static const char *kind_name(unsigned int k)
{
	return k == TFS_FAULT_READ    ? "read"
	       : k == TFS_FAULT_WRITE ? "write"
	       : k == TFS_FAULT_FLUSH ? "flush"
				      : "none";
}

/* The fault of this run.  k: the flush after the failure to cut at. */
static struct tfs_fault fault_of(enum mode md, uint64_t n, uint64_t seed,
				 uint64_t k, int persist_enospc)
{
	struct tfs_fault f = { .volatile_cache = 1, .seed = seed };

	switch (md) {
	case EIO_ONCE:
		f.fail_kinds = TFS_FAULT_ANY;
		f.fail_nth = n;
		break;
	case EIO_CUT:
		f.fail_kinds = TFS_FAULT_ANY;
		f.fail_nth = n;
		f.fail_persist = 1;
		f.fail_err = persist_enospc ? ENOSPC : EIO;
		f.cut_flush_after_fail = 1;
		break;
	case CUT:
		f.cut_nth = n;
		break;
	case EIO_ONCE_CUT:
		f.fail_kinds = TFS_FAULT_ANY;
		f.fail_nth = n;
		f.cut_flush_after_fail = k;
		break;
	case ENOSPC_ONCE:
		f.fail_kinds = TFS_FAULT_WRITE;
		f.fail_nth = n;
		f.fail_err = ENOSPC;
		break;
	case SET_EIO_ONCE:
		f.fail_kinds = TFS_FAULT_READ | TFS_FAULT_WRITE;
		f.fail_members = 1u << 1;
		f.fail_nth = n;
		break;
	case SET_FLUSH_CUT:
		/* the others flushed; member 2's writes since its last
		 * good flush are lost at the cut (seed % 4 == 3) */
		f.fail_kinds = TFS_FAULT_FLUSH;
		f.fail_members = 1u << 2;
		f.fail_nth = n;
		f.cut_flush_after_fail = k;
		break;
	case SET_CUT_MEMBER_1:
		f.cut_nth = n;
		f.lose_members = 1u << 1;
		break;
	default:
		break;
	}
	return f;
}

/*
 * Images go to /dev/shm when it has room: the runs are many and short,
 * and on a busy disk they would wait for it more than they compute.
 */
static const char *image_dir(void)
{
	struct statvfs sv;

	if (!statvfs("/dev/shm", &sv) &&
	    (uint64_t)sv.f_bavail * sv.f_frsize >= 4 * IMG_BYTES &&
	    !access("/dev/shm", W_OK))
		return "/dev/shm";
	return "/tmp";
}

/* A fresh sparse image in dir, formatted; its name into path. */
static int make_image(const char *dir, char *path);

/* A fresh set of SET_N sparse images in dir, formatted as one with
 * 16 KiB stripes, so that the workload's files spread over them. */
static int make_set(struct ctx *c)
{
	struct tfs_mkfs_opts o = { .stripe = 16 * 1024 };
	struct tfs_mkfs_info info;
	const char *p[SET_N];
	char err[256];
	size_t k = 0;
	int rc = 0;

	for (int i = 0; i < SET_N; i++) {
		int fd;

		snprintf(c->member[i], sizeof(c->member[i]),
			 "%s/tfs-ioerr-XXXXXX", c->dir);
		fd = mkstemp(c->member[i]);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)IMG_BYTES))
			rc = -errno;
		close(fd);
		p[i] = c->member[i];
		k += (size_t)snprintf(c->path + k, sizeof(c->path) - k, "%s%s",
				      i ? ":" : "", c->member[i]);
	}
	if (!rc)
		rc = tfs_mkfs_set(p, SET_N, &o, &info, err, sizeof(err));
	if (rc)
		for (int i = 0; i < SET_N; i++)
			unlink(c->member[i]);
	return rc;
}

static int make_image(const char *dir, char *path)
{
	int fd, rc;

	snprintf(path, 64, "%s/tfs-ioerr-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	rc = ftruncate(fd, (off_t)IMG_BYTES) ? -errno : 0;
	close(fd);
	if (!rc)
		rc = img_format(path, IMG_BYTES);
	if (rc)
		unlink(path);
	return rc;
}

/*
 * Run the workload on a fresh image with fault fl, then check
 * it.  Returns 0, or 1 with what broke reported.  *ops gets the counters
 * (close included).
 */
static int run(struct ctx *c, const char *label, struct tfs_fault fl,
	       struct tfs_fault_ops *ops)
{
	struct tfs_fs *fs = NULL;
	struct tfs_check_result res;
	struct model m;
	struct report r = { .len = 0 };
	char err[256] = "";
	struct tfs_fs_info info;
	uint64_t gen;
	int rc;

	c->runs++;
	assert_int_equal(c->set ? make_set(c) : make_image(c->dir, c->path), 0);
	if (tfs_fs_open(c->path, &c->opts, &fs, err, sizeof(err)))
		fail_msg("open of a fresh image: %s", err);
	fl.at_close = ops;
	assert_int_equal(tfs_dev_fault_set(fs->dev, &fl), 0);
	model_init(&m, fs, &c->bufs);
	tfs_fs_get_info(fs, &info);
	gen = info.generation;
	workload(&m);
	tfs_fs_get_info(fs, &info);
	m.sb_writes = info.generation - gen;
	for (unsigned int i = 0; c->set && i < SET_N; i++) {
		struct tfs_member_info mi;

		assert_int_equal(tfs_fs_members(fs), SET_N);
		assert_int_equal(tfs_fs_member_info(fs, i, &mi), 0);
		c->member_writes[i] = mi.dev.writes;
	}
	(void)tfs_fs_close(fs); /* errors are allowed */
	fs = NULL;

	rc = tfs_fs_open(c->path, &c->opts, &fs, err, sizeof(err));
	if (rc) {
		say(&r, "does not open again: %s", err);
		goto out;
	}
	m.fs = fs;
	{
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		assert_non_null(out);
		assert_int_equal(tfs_check(fs, 0, out, &res), 0);
		fclose(out);
		if (res.errors)
			say(&r, "fsck finds %llu errors: %.300s; ",
			    (unsigned long long)res.errors, text);
		free(text);
	}
	check_synced(fs, &m, &r);
	check_foreign(fs, &m, TFS_FS_ROOT, &r);
	if (m.dir != TFS_FS_ROOT) {
		struct stat st;

		/* "d" may be lost with all in it, if nothing was fsync'd */
		if (!tfs_lookup(fs, TFS_FS_ROOT, "d", &st)) {
			if (st.st_ino != m.dir)
				say(&r, "'d' is inode %llu, was %llu; ",
				    (unsigned long long)st.st_ino,
				    (unsigned long long)m.dir);
			else
				check_foreign(fs, &m, m.dir, &r);
		}
	}
out:
	if (fs && tfs_fs_close(fs) && !r.len)
		say(&r, "close after the check fails");

	if (getenv("TFS_IOERR_VERBOSE"))
		print_message("run %s: hit a %s, first error during '%s'%s\n",
			      label, kind_name(ops->hit_kind),
			      m.first_err_step ? m.first_err_step : "-",
			      r.len ? "" : ": fine");
	if (r.len) {
		print_message("FAIL %s (hit a %s, first error during '%s'): "
			      "%s\n",
			      label, kind_name(ops->hit_kind),
			      m.first_err_step ? m.first_err_step : "-",
			      r.text);
		c->failures++;
	}
	c->last_sb_writes = m.sb_writes;
	if (c->set)
		for (int i = 0; i < SET_N; i++)
			unlink(c->member[i]);
	else
		unlink(c->path);
	return r.len ? 1 : 0;
}

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	const char *w = getenv("TFS_IOERR_WIDE");

	/*
	 * Every device opened here (the template's, the check's) is a
	 * volatile one that never loses power: the same bytes as a plain
	 * device, without an fdatasync of the image for each flush.
	 */
	if (!getenv("TFS_FAULT"))
		setenv("TFS_FAULT", "volatile", 1);
	if (!c)
		return -1;
	c->dir = image_dir();
	c->wide = w && *w && strcmp(w, "0");
	bufs_init(&c->bufs);
	/* a small pool in small chunks: less to allocate per run */
	c->opts.block_size = 64 * 1024;
	c->opts.pool_bytes = MiB;
	*state = c;
	return 0;
}

/* A flush that fails on member 1 puts the file system in the error
 * state, and the reason names the member and its device. */
static void test_ioerr_set_failed_flush_names_the_member(void **state)
{
	struct ctx *c = *state;
	struct tfs_fault fl = { .volatile_cache = 1,
				.fail_kinds = TFS_FAULT_FLUSH,
				.fail_nth = 1,
				.fail_persist = 1,
				.fail_members = 1u << 1 };
	struct tfs_check_result res;
	struct tfs_fs *fs = NULL;
	char err[256], why[1024], want[128];
	static uint8_t buf[256 * 1024];
	struct stat st;

	assert_int_equal(make_set(c), 0);
	if (tfs_fs_open(c->path, &c->opts, &fs, err, sizeof(err)))
		fail_msg("open of a fresh set: %s", err);
	assert_int_equal(tfs_dev_fault_set(fs->dev, &fl), 0);
	assert_int_equal(
	    tfs_mknod(fs, TFS_FS_ROOT, "f", S_IFREG | 0644, 0, 0, 0, &st), 0);
	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(tfs_write(fs, st.st_ino, buf, sizeof(buf), 0, NULL),
			 (ssize_t)sizeof(buf));
	assert_int_equal(tfs_fsync(fs, st.st_ino, 0, NULL), -EIO);
	assert_int_equal(tfs_fs_error(fs, why, sizeof(why)), -EIO);
	snprintf(want, sizeof(want), "on member 2 (%s)", c->member[1]);
	if (!strstr(why, want))
		fail_msg("the error state says '%s', not '%s'", why, want);
	(void)tfs_fs_close(fs);
	/* what the set holds is a consistent file system */
	if (tfs_fs_open(c->path, &c->opts, &fs, err, sizeof(err)))
		fail_msg("open after the failure: %s", err);
	assert_int_equal(tfs_check(fs, 0, NULL, &res), 0);
	assert_int_equal(res.errors, 0);
	assert_int_equal(tfs_fs_close(fs), 0);
	for (int i = 0; i < SET_N; i++)
		unlink(c->member[i]);
}

static int setup_set(void **state)
{
	int rc = setup(state);

	if (!rc)
		((struct ctx *)*state)->set = 1;
	return rc;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	bufs_free(&c->bufs);
	free(c);
	tfs_io_thread_exit();
	return 0;
}

/* Run one mode for every n; returns the failures. */
static unsigned int sweep(struct ctx *c, enum mode md, uint64_t count)
{
	unsigned int before = c->failures;
	const char *only = getenv("TFS_IOERR_ONLY");
	int once = md == EIO_ONCE || md == ENOSPC_ONCE || md == SET_EIO_ONCE;
	int after_fail = md == EIO_ONCE_CUT || md == SET_FLUSH_CUT;
	uint64_t seeds = c->wide && !once ? 4 : 1;
	uint64_t ks = c->wide && after_fail ? 3 : 1;
	int hit = 1;

	for (uint64_t n = 1; n <= count && hit; n++) {
		/* under a sanitizer, cut and eio-cut take every other n each,
		 * unless wide: together they still cover every n; the set's
		 * modes every other and every third */
		if (SANITIZED && !c->wide &&
		    ((md == CUT && n % 2) || (md == EIO_CUT && n % 2 == 0) ||
		     (md == SET_EIO_ONCE && n % 2 == 0) ||
		     (md == SET_CUT_MEMBER_1 && n % 3)))
			continue;
		for (uint64_t s = 0; s < seeds; s++) {
			for (uint64_t k = 1; k <= ks; k++) {
				struct tfs_fault_ops ops;
				/*
				 * After a failure: what it should have
				 * covered is lost, the rest on a coin
				 * (io.h: seed % 4 == 3); wider, the plain
				 * coin and other coins too.
				 */
				uint64_t seed =
				    after_fail
					? 4 * (n + 1000 * (s / 2)) + 3 - (s % 2)
					: n + s;
				char label[96];

				int l = snprintf(label, sizeof(label),
						 "%s:%llu", mode_name[md],
						 (unsigned long long)n);

				if (!once)
					l += snprintf(label + l,
						      sizeof(label) - (size_t)l,
						      " seed %llu",
						      (unsigned long long)seed);
				if (after_fail)
					snprintf(label + l,
						 sizeof(label) - (size_t)l,
						 " cut at flush %llu after",
						 (unsigned long long)k);
				if (only) {
					char want[64];

					snprintf(want, sizeof(want), "%s:%llu",
						 mode_name[md],
						 (unsigned long long)n);
					if (strcmp(only, want))
						continue;
				}
				run(c, label,
				    fault_of(md, n, seed, k,
					     c->wide && (n & 1)),
				    &ops);
				/* counted over one member's operations, the
				 * nth may be past the last: then no later
				 * one is reached either */
				if (md == SET_EIO_ONCE && !ops.failed)
					hit = 0;
			}
		}
	}
	return c->failures - before;
}

/* The counting run: no fault, nothing to report but the count. */
static struct tfs_fault_ops count_ops(struct ctx *c)
{
	struct tfs_fault none = { .volatile_cache = 1 };
	struct tfs_fault_ops ops;

	c->last_sb_writes = 0;
	if (run(c, "no fault", none, &ops))
		fail_msg("the workload fails its own checks without a fault");
	/* else the journal-full part does not do what it is there for */
	if (c->last_sb_writes < 1)
		fail_msg("the workload wrote no checkpoint before close");
	print_message(
	    "the workload issues %llu device operations: %llu "
	    "reads, %llu writes, %llu flushes; %llu superblock "
	    "writes before close\n",
	    (unsigned long long)ops.total, (unsigned long long)ops.reads,
	    (unsigned long long)ops.writes, (unsigned long long)ops.flushes,
	    (unsigned long long)c->last_sb_writes);
	assert_true(ops.total > 20);
	for (unsigned int i = 0; c->set && i < SET_N; i++) {
		print_message("member %u: %llu writes\n", i,
			      (unsigned long long)c->member_writes[i]);
		/* else the faults of one member would test nothing */
		if (!c->member_writes[i])
			fail_msg("the workload wrote nothing to member %u", i);
	}
	return ops;
}

static void sweep_test(void **state, enum mode md)
{
	struct ctx *c = *state;
	struct tfs_fault_ops ops = count_ops(c);
	uint64_t count = md == ENOSPC_ONCE     ? ops.writes
			 : md == SET_FLUSH_CUT ? ops.flushes
					       : ops.total;
	unsigned int runs0 = c->runs;
	unsigned int bad = sweep(c, md, count);

	print_message("%s: %u of %u runs failed\n", mode_name[md], bad,
		      c->runs - runs0);
	if (bad)
		fail_msg("%s: %u runs left a damaged file system (above)",
			 mode_name[md], bad);
}

static void test_ioerr_eio_once_at_every_operation(void **state)
{
	sweep_test(state, EIO_ONCE);
}

static void test_ioerr_persistent_eio_then_powercut(void **state)
{
	sweep_test(state, EIO_CUT);
}

static void test_ioerr_powercut_at_every_operation(void **state)
{
	sweep_test(state, CUT);
}

static void test_ioerr_eio_once_then_powercut_at_next_flush(void **state)
{
	sweep_test(state, EIO_ONCE_CUT);
}

static void test_ioerr_enospc_once_at_every_write(void **state)
{
	sweep_test(state, ENOSPC_ONCE);
}

static void test_ioerr_set_eio_once_on_one_member(void **state)
{
	sweep_test(state, SET_EIO_ONCE);
}

static void test_ioerr_set_flush_fails_on_one_member_then_powercut(void **state)
{
	sweep_test(state, SET_FLUSH_CUT);
}

static void test_ioerr_set_powercut_loses_one_members_writes(void **state)
{
	sweep_test(state, SET_CUT_MEMBER_1);
}

#define T(name)	   cmocka_unit_test_setup_teardown(name, setup, teardown)
#define TSET(name) cmocka_unit_test_setup_teardown(name, setup_set, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_ioerr_eio_once_at_every_operation),
		T(test_ioerr_persistent_eio_then_powercut),
		T(test_ioerr_powercut_at_every_operation),
		T(test_ioerr_eio_once_then_powercut_at_next_flush),
		T(test_ioerr_enospc_once_at_every_write),
		TSET(test_ioerr_set_failed_flush_names_the_member),
		TSET(test_ioerr_set_eio_once_on_one_member),
		TSET(test_ioerr_set_flush_fails_on_one_member_then_powercut),
		TSET(test_ioerr_set_powercut_loses_one_members_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
