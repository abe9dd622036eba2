/*
 * testfs.h: the fixture and helpers the file system's unit tests share
 * (test_fs.c, test_namespace.c, test_file.c, test_xattr.c,
 * test_commit.c): a fresh image per test, crash copies, shorthands for
 * creating, writing and checking files, directory listings and tree
 * snapshots.  Everything is static inline, as in testimg.h, so that each
 * test executable takes what it uses.
 */
#ifndef TFS_TESTFS_H
#define TFS_TESTFS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "crc32c.h"
#include "fs.h"
#include "io.h"
#include "meta.h"
#include "testimg.h"

/* ===== fixture ===== */

struct fx {
	char path[64];	    /* the image */
	char copy[64];	    /* a crash copy of it, if made */
	struct tfs_fs *fs;  /* open on path */
	struct tfs_fs *fs2; /* open on copy */
	char err[512];
};

static inline int setup_sized(void **state, uint64_t bytes)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || img_make(f->path, bytes))
		return -1;
	if (img_format(f->path, bytes) ||
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err))) {
		fprintf(stderr, "setup: %s\n", f->err);
		unlink(f->path);
		return -1;
	}
	*state = f;
	return 0;
}

static inline int setup(void **state)
{
	return setup_sized(state, 128 * MiB);
}

static inline int setup_small(void **state)
{
	return setup_sized(state, 64 * MiB);
}

static inline int setup_big(void **state)
{
	return setup_sized(state, 4 * GiB);
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	tfs_fs_close(f->fs2);
	tfs_fs_close(f->fs);
	if (f->copy[0])
		unlink(f->copy);
	unlink(f->path);
	free(f);
	tfs_io_thread_exit();
	return 0;
}

/* Close and open again (a clean unmount and mount). */
static inline void reopen(struct fx *f)
{
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	f->err[0] = '\0';
	if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
		fail_msg("reopen: %s", f->err);
}

/*
 * A crash now: copy the image as it is on the device (f->fs stays open
 * and is closed by teardown; it never touches the copy) and open the
 * copy as f->fs2, which recovers it.
 */
static inline struct tfs_fs *crash(struct fx *f)
{
	int rc;

	tfs_fs_close(f->fs2);
	f->fs2 = NULL;
	if (f->copy[0])
		unlink(f->copy);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	f->err[0] = '\0';
	rc = tfs_fs_open(f->copy, NULL, &f->fs2, f->err, sizeof(f->err));
	if (rc)
		fail_msg("open after crash: %d %s", rc, f->err);
	return f->fs2;
}

/* ===== helpers ===== */

static inline uint64_t mk(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 1000, 1000, &st);

	if (rc)
		fail_msg("mknod '%s': %d", name, rc);
	return st.st_ino;
}

static inline uint64_t mkd(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_mkdir(fs, dir, name, 0755, 1000, 1000, &st);

	if (rc)
		fail_msg("mkdir '%s': %d", name, rc);
	return st.st_ino;
}

static inline void wr(struct tfs_fs *fs, uint64_t ino, const void *buf,
		      size_t len, uint64_t off)
{
	ssize_t n = tfs_write(fs, ino, buf, len, off, NULL);

	if (n != (ssize_t)len)
		fail_msg("write %zu at %llu: %zd", len, (unsigned long long)off,
			 n);
}

/* Write len bytes of pattern seed at off. */
static inline void wr_pat(struct tfs_fs *fs, uint64_t ino, size_t len,
			  uint64_t off, unsigned int seed)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	fill_pat(b, len, off, seed);
	wr(fs, ino, b, len, off);
	free(b);
}

/* Whether bytes [off, off + len) of ino hold pattern seed. */
static inline int has_pat(struct tfs_fs *fs, uint64_t ino, size_t len,
			  uint64_t off, unsigned int seed)
{
	uint8_t *b = malloc(len), *w = malloc(len);
	int ok;

	assert_non_null(b);
	assert_non_null(w);
	fill_pat(w, len, off, seed);
	ok = tfs_read(fs, ino, b, len, off) == (ssize_t)len &&
	     !memcmp(b, w, len);
	free(b);
	free(w);
	return ok;
}

/* Do bytes [off, off + len) of ino hold pattern seed? */
static inline void assert_pat(struct tfs_fs *fs, uint64_t ino, size_t len,
			      uint64_t off, unsigned int seed)
{
	uint8_t *b = malloc(len), *w = malloc(len);

	assert_non_null(b);
	assert_non_null(w);
	fill_pat(w, len, off, seed);
	assert_int_equal(tfs_read(fs, ino, b, len, off), (ssize_t)len);
	assert_memory_equal(b, w, len);
	free(b);
	free(w);
}

static inline void assert_zero(struct tfs_fs *fs, uint64_t ino, size_t len,
			       uint64_t off)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	memset(b, 0x55, len);
	assert_int_equal(tfs_read(fs, ino, b, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (b[i])
			fail_msg("byte %llu is %u, not 0",
				 (unsigned long long)(off + i), b[i]);
	free(b);
}

static inline struct stat st_of(struct tfs_fs *fs, uint64_t ino)
{
	struct stat st;
	int rc = tfs_getattr(fs, ino, &st);

	if (rc)
		fail_msg("getattr %llu: %d", (unsigned long long)ino, rc);
	return st;
}

static inline uint64_t ino_of(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_lookup(fs, dir, name, &st);

	if (rc)
		fail_msg("lookup '%s': %d", name, rc);
	return st.st_ino;
}

static inline int exists(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	return tfs_lookup(fs, dir, name, &st) == 0;
}

static inline uint64_t bfree(struct tfs_fs *fs)
{
	struct statvfs sv;

	assert_int_equal(tfs_statfs(fs, &sv), 0);
	return sv.f_bfree;
}

/* Data blocks no file holds: free or held by checkpoints, which (J10)
 * may be one or two, as the superblock copies name them. */
static inline uint64_t not_file_data(struct tfs_fs *fs)
{
	struct tfs_fs_info info;

	tfs_fs_get_info(fs, &info);
	return info.free_blocks + info.ckpt_blocks;
}

/* Blocks a file may still take: free ones minus the next checkpoint's
 * reserve (journal.c's J10). */
static inline uint64_t bavail(struct tfs_fs *fs)
{
	struct statvfs sv;

	assert_int_equal(tfs_statfs(fs, &sv), 0);
	return sv.f_bavail;
}

static inline int set_size(struct tfs_fs *fs, uint64_t ino, off_t size)
{
	struct stat in = { 0 };

	in.st_size = size;
	return tfs_setattr(fs, ino, &in, TFS_SET_SIZE, NULL);
}

/* tfs_check() finds nothing wrong. */
static inline void assert_fsck_clean(struct tfs_fs *fs)
{
	struct tfs_check_result res;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	assert_int_equal(tfs_check(fs, 0, out, &res), 0);
	fclose(out);
	if (res.errors)
		fail_msg("fsck found %llu errors:\n%s",
			 (unsigned long long)res.errors, text);
	free(text);
}

/* ===== directory listings ===== */

struct ent {
	char *name;
	uint64_t ino, cookie;
	mode_t type;
};

struct ents {
	struct ent *v;
	size_t n, cap;
	size_t limit; /* stop after this many in one call (0: no) */
	size_t got;   /* in this call */
};

static inline int fill(void *arg, const char *name, uint64_t ino, mode_t type,
		       uint64_t cookie)
{
	struct ents *e = arg;

	if (e->limit && e->got == e->limit)
		return 1; /* full: this entry is not taken */
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 64;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		assert_non_null(e->v);
	}
	e->v[e->n].name = strdup(name);
	e->v[e->n].ino = ino;
	e->v[e->n].cookie = cookie;
	e->v[e->n].type = type;
	e->n++;
	e->got++;
	return 0;
}

static inline void ents_free(struct ents *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* The whole listing of dir, read 'page' entries per call. */
static inline void list(struct tfs_fs *fs, uint64_t dir, size_t page,
			struct ents *e)
{
	uint64_t cookie = 0;

	memset(e, 0, sizeof(*e));
	e->limit = page;
	for (;;) {
		size_t before = e->n;

		e->got = 0;
		assert_int_equal(tfs_readdir(fs, dir, cookie, fill, e), 0);
		if (e->n == before)
			break;
		cookie = e->v[e->n - 1].cookie;
		if (!page)
			break;
	}
}

static inline int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
		      ((const struct ent *)b)->name);
}

/* ===== tree snapshots: everything stat, read and xattrs show ===== */

struct snap {
	char *s;
	size_t len, cap;
};

static inline void snap_add(struct snap *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void snap_add(struct snap *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(s->s ? s->s + s->len : NULL,
			      s->s ? s->cap - s->len : 0, fmt, ap);
		va_end(ap);
		assert_true(n >= 0);
		if (s->s && s->len + (size_t)n < s->cap)
			break;
		s->cap = (s->cap + (size_t)n + 1) * 2;
		s->s = realloc(s->s, s->cap);
		assert_non_null(s->s);
		if (s->len == 0)
			s->s[0] = '\0';
	}
	s->len += (size_t)n;
}

static inline uint32_t content_crc(struct tfs_fs *fs, uint64_t ino,
				   uint64_t size)
{
	static uint8_t buf[1 << 20];
	uint32_t crc = 0;

	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		ssize_t n = tfs_read(fs, ino, buf, sizeof(buf), off);

		assert_true(n > 0);
		crc = tfs_crc32c(crc, buf, (size_t)n);
	}
	return crc;
}

static inline void snap_xattrs(struct tfs_fs *fs, uint64_t ino, struct snap *s)
{
	char list_buf[8192], *names[64];
	ssize_t n = tfs_listxattr(fs, ino, list_buf, sizeof(list_buf));
	size_t k = 0;

	assert_true(n >= 0);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list_buf + i) + 1)
		names[k++] = list_buf + i;
	/* in name order, whatever order they are kept in */
	for (size_t i = 0; i < k; i++)
		for (size_t j = i + 1; j < k; j++)
			if (strcmp(names[j], names[i]) < 0) {
				char *t = names[i];

				names[i] = names[j];
				names[j] = t;
			}
	for (size_t i = 0; i < k; i++) {
		static uint8_t v[TFS_XATTR_VALUE_MAX];
		ssize_t vl = tfs_getxattr(fs, ino, names[i], v, sizeof(v));

		assert_true(vl >= 0);
		snap_add(s, " %s=%zd:%08x", names[i], vl,
			 tfs_crc32c(0, v, (size_t)vl));
	}
}

static inline void snap_inode(struct tfs_fs *fs, uint64_t ino, const char *path,
			      struct snap *s)
{
	struct stat st = st_of(fs, ino);

	snap_add(s,
		 "%s ino=%llu mode=%o nlink=%lu uid=%u gid=%u size=%lld "
		 "blocks=%lld rdev=%llu a=%lld.%ld m=%lld.%ld c=%lld.%ld",
		 path, (unsigned long long)ino, st.st_mode,
		 (unsigned long)st.st_nlink, st.st_uid, st.st_gid,
		 (long long)st.st_size, (long long)st.st_blocks,
		 (unsigned long long)st.st_rdev, (long long)st.st_atim.tv_sec,
		 st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
		 st.st_ctim.tv_nsec);
	if (S_ISREG(st.st_mode))
		snap_add(s, " data=%08x",
			 content_crc(fs, ino, (uint64_t)st.st_size));
	if (S_ISLNK(st.st_mode)) {
		char t[TFS_SYMLINK_MAX + 1];
		ssize_t n = tfs_readlink(fs, ino, t, sizeof(t) - 1);

		assert_true(n > 0);
		t[n] = '\0';
		snap_add(s, " target=%s", t);
	}
	snap_xattrs(fs, ino, s);
	snap_add(s, "\n");
}

static inline void snap_dir(struct tfs_fs *fs, uint64_t dir, const char *path,
			    struct snap *s)
{
	struct ents e;

	list(fs, dir, 0, &e);
	assert_true(e.n >= 2);
	assert_string_equal(e.v[0].name, ".");
	assert_string_equal(e.v[1].name, "..");
	snap_add(s, "%s/.. -> %llu\n", path, (unsigned long long)e.v[1].ino);
	qsort(e.v + 2, e.n - 2, sizeof(*e.v), cmp_ent);
	for (size_t i = 2; i < e.n; i++) {
		char sub[4096];

		snprintf(sub, sizeof(sub), "%s/%s", path, e.v[i].name);
		assert_int_equal(ino_of(fs, dir, e.v[i].name), e.v[i].ino);
		snap_inode(fs, e.v[i].ino, sub, s);
		if (e.v[i].type == S_IFDIR)
			snap_dir(fs, e.v[i].ino, sub, s);
	}
	ents_free(&e);
}

static inline char *snapshot(struct tfs_fs *fs)
{
	struct snap s = { 0 };

	snap_inode(fs, TFS_ROOT_INO, "", &s);
	snap_dir(fs, TFS_ROOT_INO, "", &s);
	return s.s;
}

static inline void assert_same_tree(struct tfs_fs *fs, const char *want)
{
	char *got = snapshot(fs);

	assert_string_equal(got, want);
	free(got);
}

/* A tree with one of most things, for persistence tests. */
static inline void make_sample_tree(struct tfs_fs *fs)
{
	struct stat st;
	uint64_t d, e, f, g, h;
	struct stat in = { 0 };

	d = mkd(fs, TFS_ROOT_INO, "dir");
	e = mkd(fs, d, "sub");
	f = mk(fs, d, "file");
	wr_pat(fs, f, 300000, 0, 1);
	/* a second file written in between makes several extents */
	g = mk(fs, e, "interleaved");
	for (int i = 0; i < 8; i++) {
		wr_pat(fs, g, 8192, (uint64_t)i * 8192, 2);
		wr_pat(fs, f, 4096, 300000 + (uint64_t)i * 4096, 1);
	}
	h = mk(fs, TFS_ROOT_INO, "sparse");
	wr_pat(fs, h, 100, 10 * MiB, 3);
	assert_int_equal(tfs_fallocate(fs, h, 0, MiB, MiB), 0);
	assert_int_equal(
	    tfs_symlink(fs, TFS_ROOT_INO, "link", "dir/file", 1000, 1000, &st),
	    0);
	assert_int_equal(tfs_mknod(fs, e, "fifo", S_IFIFO | 0600, 0, 1, 2, &st),
			 0);
	assert_int_equal(
	    tfs_mknod(fs, e, "chr", S_IFCHR | 0600, makedev(4, 5), 0, 0, &st),
	    0);
	assert_int_equal(tfs_link(fs, f, TFS_ROOT_INO, "hard", &st), 0);
	assert_int_equal(tfs_setxattr(fs, f, "user.one", "1", 1, 0), 0);
	assert_int_equal(tfs_setxattr(fs, d, "user.dir", "dd", 2, 0), 0);
	assert_int_equal(tfs_setxattr(fs, f, "user.empty", "", 0, 0), 0);
	in.st_mode = 0600;
	in.st_uid = 7;
	in.st_mtim.tv_sec = 1234567890;
	in.st_mtim.tv_nsec = 5;
	assert_int_equal(tfs_setattr(fs, g, &in,
				     TFS_SET_MODE | TFS_SET_UID | TFS_SET_MTIME,
				     NULL),
			 0);
	assert_int_equal(set_size(fs, g, 50000), 0);
}

/* ===== I/O errors ===== */

/* Reopen f->fs with writes failing from device offset 'from' on. */
static inline void reopen_failing_from(struct fx *f, uint64_t from)
{
	char v[32];

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)from);
	assert_int_equal(setenv("TFS_FAULT_WRITE_EIO_FROM", v, 1), 0);
	if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err))) {
		unsetenv("TFS_FAULT_WRITE_EIO_FROM");
		fail_msg("open with faults: %s", f->err);
	}
	unsetenv("TFS_FAULT_WRITE_EIO_FROM");
}

#define T(name)	 cmocka_unit_test_setup_teardown(name, setup, teardown)
#define TS(name) cmocka_unit_test_setup_teardown(name, setup_small, teardown)
#define TB(name) cmocka_unit_test_setup_teardown(name, setup_big, teardown)

#endif
