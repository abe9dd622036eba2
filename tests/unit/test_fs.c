/*
 * test_fs.c: the POSIX file system API of lib/fs.h on inode numbers.
 * Description: every operation and the errno POSIX specifies for its
 * failures; the data path (unaligned writes, holes, truncate, fallocate,
 * punch, ENOSPC); durability: what tfs_fs_sync() committed survives a
 * crash (simulated by copying the image while the file system is open
 * and opening the copy), what was not committed is gone, and a damaged
 * checkpoint or superblock is reported or survived as documented.
 */
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
	char path[64];		/* the image */
	char copy[64];		/* a crash copy of it, if made */
	struct tfs_fs *fs;	/* open on path */
	struct tfs_fs *fs2;	/* open on copy */
	char err[512];
};

static int setup_sized(void **state, uint64_t bytes)
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

static int setup(void **state)
{
	return setup_sized(state, 128 * MiB);
}

static int setup_small(void **state)
{
	return setup_sized(state, 64 * MiB);
}

static int setup_big(void **state)
{
	return setup_sized(state, 4 * GiB);
}

static int teardown(void **state)
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
static void reopen(struct fx *f)
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
static struct tfs_fs *crash(struct fx *f)
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

static uint64_t mk(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 1000, 1000, &st);

	if (rc)
		fail_msg("mknod '%s': %d", name, rc);
	return st.st_ino;
}

static uint64_t mkd(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_mkdir(fs, dir, name, 0755, 1000, 1000, &st);

	if (rc)
		fail_msg("mkdir '%s': %d", name, rc);
	return st.st_ino;
}

static void wr(struct tfs_fs *fs, uint64_t ino, const void *buf, size_t len,
	       uint64_t off)
{
	ssize_t n = tfs_write(fs, ino, buf, len, off);

	if (n != (ssize_t)len)
		fail_msg("write %zu at %llu: %zd", len,
			 (unsigned long long)off, n);
}

/* Write len bytes of pattern seed at off. */
static void wr_pat(struct tfs_fs *fs, uint64_t ino, size_t len, uint64_t off,
		   unsigned int seed)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	fill_pat(b, len, off, seed);
	wr(fs, ino, b, len, off);
	free(b);
}

/* Whether bytes [off, off + len) of ino hold pattern seed. */
static int has_pat(struct tfs_fs *fs, uint64_t ino, size_t len,
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
static void assert_pat(struct tfs_fs *fs, uint64_t ino, size_t len,
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

static void assert_zero(struct tfs_fs *fs, uint64_t ino, size_t len,
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

static struct stat st_of(struct tfs_fs *fs, uint64_t ino)
{
	struct stat st;
	int rc = tfs_getattr(fs, ino, &st);

	if (rc)
		fail_msg("getattr %llu: %d", (unsigned long long)ino, rc);
	return st;
}

static uint64_t ino_of(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int rc = tfs_lookup(fs, dir, name, &st);

	if (rc)
		fail_msg("lookup '%s': %d", name, rc);
	return st.st_ino;
}

static int exists(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	return tfs_lookup(fs, dir, name, &st) == 0;
}

static uint64_t bfree(struct tfs_fs *fs)
{
	struct statvfs sv;

	assert_int_equal(tfs_statfs(fs, &sv), 0);
	return sv.f_bfree;
}

static int set_size(struct tfs_fs *fs, uint64_t ino, off_t size)
{
	struct stat in = { 0 };

	in.st_size = size;
	return tfs_setattr(fs, ino, &in, TFS_SET_SIZE, NULL);
}

/* tfs_check() finds nothing wrong. */
static void assert_fsck_clean(struct tfs_fs *fs)
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
	size_t limit;		/* stop after this many in one call (0: no) */
	size_t got;		/* in this call */
};

static int fill(void *arg, const char *name, uint64_t ino, mode_t type,
		uint64_t cookie)
{
	struct ents *e = arg;

	if (e->limit && e->got == e->limit)
		return 1;	/* full: this entry is not taken */
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

static void ents_free(struct ents *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* The whole listing of dir, read 'page' entries per call. */
static void list(struct tfs_fs *fs, uint64_t dir, size_t page, struct ents *e)
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

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
		      ((const struct ent *)b)->name);
}

/* ===== tree snapshots: everything stat, read and xattrs show ===== */

struct snap {
	char *s;
	size_t len, cap;
};

static void snap_add(struct snap *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void snap_add(struct snap *s, const char *fmt, ...)
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

static uint32_t content_crc(struct tfs_fs *fs, uint64_t ino, uint64_t size)
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

static void snap_xattrs(struct tfs_fs *fs, uint64_t ino, struct snap *s)
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

static void snap_inode(struct tfs_fs *fs, uint64_t ino, const char *path,
		       struct snap *s)
{
	struct stat st = st_of(fs, ino);

	snap_add(s, "%s ino=%llu mode=%o nlink=%lu uid=%u gid=%u size=%lld "
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

static void snap_dir(struct tfs_fs *fs, uint64_t dir, const char *path,
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

static char *snapshot(struct tfs_fs *fs)
{
	struct snap s = { 0 };

	snap_inode(fs, TFS_ROOT_INO, "", &s);
	snap_dir(fs, TFS_ROOT_INO, "", &s);
	return s.s;
}

static void assert_same_tree(struct tfs_fs *fs, const char *want)
{
	char *got = snapshot(fs);

	assert_string_equal(got, want);
	free(got);
}

/* A tree with one of most things, for persistence tests. */
static void make_sample_tree(struct tfs_fs *fs)
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
	assert_int_equal(tfs_symlink(fs, TFS_ROOT_INO, "link", "dir/file",
				     1000, 1000, &st), 0);
	assert_int_equal(tfs_mknod(fs, e, "fifo", S_IFIFO | 0600, 0, 1, 2,
				   &st), 0);
	assert_int_equal(tfs_mknod(fs, e, "chr", S_IFCHR | 0600,
				   makedev(4, 5), 0, 0, &st), 0);
	assert_int_equal(tfs_link(fs, f, TFS_ROOT_INO, "hard", &st), 0);
	assert_int_equal(tfs_setxattr(fs, f, "user.one", "1", 1, 0), 0);
	assert_int_equal(tfs_setxattr(fs, d, "user.dir", "dd", 2, 0), 0);
	assert_int_equal(tfs_setxattr(fs, f, "user.empty", "", 0, 0), 0);
	in.st_mode = 0600;
	in.st_uid = 7;
	in.st_mtim.tv_sec = 1234567890;
	in.st_mtim.tv_nsec = 5;
	assert_int_equal(tfs_setattr(fs, g, &in, TFS_SET_MODE | TFS_SET_UID |
					       TFS_SET_MTIME, NULL), 0);
	assert_int_equal(set_size(fs, g, 50000), 0);
}

/* ===== names ===== */

static void test_fs_fresh_root_attrs(void **state)
{
	struct fx *f = *state;
	struct stat st = st_of(f->fs, TFS_ROOT_INO);
	struct ents e;

	assert_int_equal(st.st_ino, TFS_ROOT_INO);
	assert_int_equal(st.st_mode, S_IFDIR | 0755);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 1000);
	list(f->fs, TFS_ROOT_INO, 0, &e);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.v[1].ino, TFS_ROOT_INO);	/* the root's ".." */
	ents_free(&e);
	assert_int_equal(tfs_fs_replayed(f->fs), 0);
}

static void test_fs_mknod_lookup_getattr(void **state)
{
	struct fx *f = *state;
	struct stat st, st2;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "f", 0640, 0, 1001,
				   1002, &st), 0);
	assert_true(st.st_ino > TFS_ROOT_INO);
	assert_int_equal(st.st_mode, S_IFREG | 0640);	/* no type: regular */
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_uid, 1001);
	assert_int_equal(st.st_gid, 1002);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "f", &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);
	assert_int_equal(tfs_getattr(f->fs, st.st_ino, &st2), 0);
	assert_int_equal(st2.st_mode, S_IFREG | 0640);
	/* a taken name, whatever is being made */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "f", 0644, 0, 0, 0,
				   &st2), -EEXIST);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "f", 0755, 0, 0, &st2),
			 -EEXIST);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "f", "x", 0, 0,
				     &st2), -EEXIST);
	/* the out stat may be NULL */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "g", 0644, 0, 0, 0,
				   NULL), 0);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 2);
}

static void test_fs_name_and_inode_errors(void **state)
{
	struct fx *f = *state;
	char n255[256], n256[257];
	struct stat st;
	char buf[16];
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");

	memset(n255, 'a', 255);
	n255[255] = '\0';
	memset(n256, 'b', 256);
	n256[256] = '\0';
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "nope", &st), -ENOENT);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, n255, 0644, 0, 0, 0,
				   &st), 0);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, n255, &st), 0);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, n256, 0644, 0, 0, 0,
				   &st), -ENAMETOOLONG);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, n256, 0755, 0, 0, &st),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, n256, &st),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, n256), -ENAMETOOLONG);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    n256, 0), -ENAMETOOLONG);
	assert_int_equal(tfs_link(f->fs, file, TFS_ROOT_INO, n256, &st),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "", 0644, 0, 0, 0, &st),
			 -ENOENT);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "", &st), -ENOENT);
	/* a parent that is not a directory, or not there */
	assert_int_equal(tfs_mknod(f->fs, file, "x", 0644, 0, 0, 0, &st),
			 -ENOTDIR);
	assert_int_equal(tfs_lookup(f->fs, file, "x", &st), -ENOTDIR);
	assert_int_equal(tfs_mkdir(f->fs, 9999, "x", 0755, 0, 0, &st), -ENOENT);
	assert_int_equal(tfs_lookup(f->fs, 9999, "x", &st), -ENOENT);
	/* an inode number that names nothing */
	assert_int_equal(tfs_getattr(f->fs, 9999, &st), -ENOENT);
	assert_int_equal(tfs_getattr(f->fs, 0, &st), -ENOENT);
	assert_int_equal(tfs_setattr(f->fs, 9999, &st, TFS_SET_MODE, NULL),
			 -ENOENT);
	assert_int_equal(tfs_readlink(f->fs, 9999, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tfs_open(f->fs, 9999, O_RDONLY), -ENOENT);
	assert_int_equal(tfs_read(f->fs, 9999, buf, 1, 0), -ENOENT);
	assert_int_equal(tfs_write(f->fs, 9999, buf, 1, 0), -ENOENT);
	assert_int_equal(tfs_fallocate(f->fs, 9999, 0, 0, 1), -ENOENT);
	assert_int_equal(tfs_opendir(f->fs, 9999), -ENOENT);
	assert_int_equal(tfs_readdir(f->fs, 9999, 0, fill, NULL), -ENOENT);
	assert_int_equal(tfs_link(f->fs, 9999, TFS_ROOT_INO, "l", &st),
			 -ENOENT);
	assert_int_equal(tfs_setxattr(f->fs, 9999, "user.a", "", 0, 0),
			 -ENOENT);
	assert_int_equal(tfs_getxattr(f->fs, 9999, "user.a", buf, 16),
			 -ENOENT);
	assert_int_equal(tfs_listxattr(f->fs, 9999, buf, 16), -ENOENT);
	assert_int_equal(tfs_removexattr(f->fs, 9999, "user.a"), -ENOENT);
	assert_int_equal(tfs_extent_count(f->fs, 9999), -ENOENT);
	assert_int_equal(tfs_release(f->fs, 9999), 0);
}

static void test_fs_dot_and_dotdot_cannot_be_created(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");
	struct stat st;
	int rc[5];

	/*
	 * "." and ".." exist in every directory (readdir shows them): a
	 * new entry by those names is EEXIST, never a real entry, which
	 * the on-disk format cannot even hold (format.h: a LINK name of "."
	 * or ".." is -EUCLEAN at load).
	 */
	rc[0] = tfs_mknod(f->fs, TFS_ROOT_INO, ".", 0644, 0, 0, 0, &st);
	rc[1] = tfs_mkdir(f->fs, TFS_ROOT_INO, "..", 0755, 0, 0, &st);
	rc[2] = tfs_symlink(f->fs, TFS_ROOT_INO, ".", "x", 0, 0, &st);
	rc[3] = tfs_link(f->fs, file, TFS_ROOT_INO, "..", &st);
	rc[4] = tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO, ".", 0);
	/* whatever happened, the file system must still mount */
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	f->err[0] = '\0';
	if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
		fail_msg("cannot open after creating '.' or '..': %s", f->err);
	assert_int_equal(rc[0], -EEXIST);
	assert_int_equal(rc[1], -EEXIST);
	assert_int_equal(rc[2], -EEXIST);
	assert_int_equal(rc[3], -EEXIST);
	assert_true(rc[4] == -EINVAL || rc[4] == -EBUSY || rc[4] == -EEXIST);
}

static void test_fs_mknod_special_files(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t fifo, chr, sock, reg;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "fifo", S_IFIFO | 0600,
				   0, 0, 0, &st), 0);
	fifo = st.st_ino;
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "chr", S_IFCHR | 0600,
				   makedev(1, 3), 0, 0, &st), 0);
	chr = st.st_ino;
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "blk", S_IFBLK | 0600,
				   makedev(8, 1), 0, 0, &st), 0);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "sock",
				   S_IFSOCK | 0600, 0, 0, 0, &st), 0);
	sock = st.st_ino;
	assert_true(S_ISSOCK(st.st_mode));
	/* a regular file has no device number */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "reg", S_IFREG | 0600,
				   makedev(1, 3), 0, 0, &st), 0);
	reg = st.st_ino;
	assert_int_equal(st.st_rdev, 0);
	/* directories and symlinks have their own calls */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "d", S_IFDIR | 0755, 0,
				   0, 0, &st), -EINVAL);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "l", S_IFLNK | 0777, 0,
				   0, 0, &st), -EINVAL);
	assert_false(exists(f->fs, TFS_ROOT_INO, "d"));
	reopen(f);
	assert_true(S_ISFIFO(st_of(f->fs, fifo).st_mode));
	assert_int_equal(st_of(f->fs, chr).st_rdev, makedev(1, 3));
	assert_true(S_ISSOCK(st_of(f->fs, sock).st_mode));
	assert_int_equal(st_of(f->fs, reg).st_rdev, 0);
	assert_int_equal(st_of(f->fs, ino_of(f->fs, TFS_ROOT_INO, "blk"))
				 .st_rdev, makedev(8, 1));
}

static void test_fs_mkdir_rmdir_link_counts(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t d, e;

	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "d", S_IFREG | 0750,
				   1000, 1000, &st), 0);
	d = st.st_ino;
	/* mode has only the permission bits: always a directory */
	assert_int_equal(st.st_mode, S_IFDIR | 0750);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	e = mkd(f->fs, d, "e");
	assert_int_equal(st_of(f->fs, d).st_nlink, 3);
	assert_int_equal(st_of(f->fs, e).st_nlink, 2);
	mk(f->fs, d, "file");		/* files do not count */
	assert_int_equal(st_of(f->fs, d).st_nlink, 3);
	assert_int_equal(tfs_opendir(f->fs, d), 0);
	assert_int_equal(tfs_rmdir(f->fs, d, "e"), 0);
	assert_int_equal(st_of(f->fs, d).st_nlink, 2);
	assert_int_equal(tfs_getattr(f->fs, e, &st), -ENOENT);
	assert_int_equal(tfs_unlink(f->fs, d, "file"), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 2);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "d", &st), -ENOENT);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
	reopen(f);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 2);
	assert_fsck_clean(f->fs);
}

static void test_fs_rmdir_and_unlink_errors(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");

	mk(f->fs, d, "inside");
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), -ENOTEMPTY);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "file"), -ENOTDIR);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "d"), -EISDIR);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "nope"), -ENOENT);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "nope"), -ENOENT);
	assert_int_equal(tfs_unlink(f->fs, file, "x"), -ENOTDIR);
	assert_int_equal(tfs_rmdir(f->fs, 9999, "x"), -ENOENT);
	/* nothing changed */
	assert_true(exists(f->fs, TFS_ROOT_INO, "d"));
	assert_true(exists(f->fs, d, "inside"));
	assert_int_equal(st_of(f->fs, file).st_nlink, 1);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
}

static void test_fs_create_in_removed_directory_is_enoent(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");
	struct stat st;
	struct ents e;

	/* a process still has the directory open (its cwd, say) */
	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	assert_int_equal(st_of(f->fs, d).st_nlink, 0);
	assert_int_equal(tfs_mknod(f->fs, d, "x", 0644, 0, 0, 0, &st), -ENOENT);
	assert_int_equal(tfs_mkdir(f->fs, d, "y", 0755, 0, 0, &st), -ENOENT);
	assert_int_equal(tfs_symlink(f->fs, d, "z", "t", 0, 0, &st), -ENOENT);
	assert_int_equal(tfs_link(f->fs, file, d, "w", &st), -ENOENT);
	list(f->fs, d, 0, &e);
	assert_int_equal(e.n, 2);
	ents_free(&e);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 2);
}

static void test_fs_symlink_readlink(void **state)
{
	struct fx *f = *state;
	char t4095[TFS_SYMLINK_MAX + 1], t4096[TFS_SYMLINK_MAX + 2];
	char buf[TFS_SYMLINK_MAX + 1];
	struct stat st;
	uint64_t l, file = mk(f->fs, TFS_ROOT_INO, "file");

	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "target/path",
				     1000, 1000, &st), 0);
	l = st.st_ino;
	assert_int_equal(st.st_mode, S_IFLNK | 0777);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(tfs_readlink(f->fs, l, buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "target/path", 11);
	assert_int_equal(tfs_readlink(f->fs, l, buf, 11), 11);
	assert_int_equal(tfs_readlink(f->fs, l, buf, 10), -ERANGE);
	assert_int_equal(tfs_readlink(f->fs, file, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(tfs_readlink(f->fs, TFS_ROOT_INO, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(tfs_read(f->fs, l, buf, 1, 0), -EINVAL);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "empty", "", 0, 0,
				     &st), -ENOENT);
	memset(t4095, 'p', TFS_SYMLINK_MAX);
	t4095[TFS_SYMLINK_MAX] = '\0';
	memset(t4096, 'q', TFS_SYMLINK_MAX + 1);
	t4096[TFS_SYMLINK_MAX + 1] = '\0';
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "long", t4095, 0, 0,
				     &st), 0);
	assert_int_equal(st.st_size, TFS_SYMLINK_MAX);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "toolong", t4096, 0,
				     0, &st), -ENAMETOOLONG);
	assert_false(exists(f->fs, TFS_ROOT_INO, "toolong"));
	reopen(f);
	assert_int_equal(tfs_readlink(f->fs, l, buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "target/path", 11);
	assert_int_equal(tfs_readlink(f->fs, ino_of(f->fs, TFS_ROOT_INO,
						      "long"),
				      buf, sizeof(buf)), TFS_SYMLINK_MAX);
	assert_memory_equal(buf, t4095, TFS_SYMLINK_MAX);
}

static void test_fs_link_counts_and_errors(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct stat st;

	wr_pat(f->fs, file, 10000, 0, 9);
	assert_int_equal(tfs_link(f->fs, file, d, "other", &st), 0);
	assert_int_equal(st.st_ino, file);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(ino_of(f->fs, d, "other"), file);
	assert_int_equal(tfs_link(f->fs, d, TFS_ROOT_INO, "dlink", &st),
			 -EPERM);
	assert_int_equal(tfs_link(f->fs, file, d, "other", &st), -EEXIST);
	assert_int_equal(tfs_link(f->fs, file, file, "x", &st), -ENOTDIR);
	assert_int_equal(tfs_link(f->fs, file, 9999, "x", &st), -ENOENT);
	assert_int_equal(st_of(f->fs, file).st_nlink, 2);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "file"), 0);
	assert_int_equal(st_of(f->fs, file).st_nlink, 1);
	assert_pat(f->fs, file, 10000, 0, 9);
	reopen(f);
	assert_int_equal(st_of(f->fs, file).st_nlink, 1);
	assert_pat(f->fs, file, 10000, 0, 9);
	assert_int_equal(tfs_unlink(f->fs, d, "other"), 0);
	assert_int_equal(tfs_getattr(f->fs, file, &st), -ENOENT);
	/* an unlinked file cannot get a new name */
	file = mk(f->fs, TFS_ROOT_INO, "again");
	assert_int_equal(tfs_open(f->fs, file, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "again"), 0);
	assert_int_equal(tfs_link(f->fs, file, TFS_ROOT_INO, "back", &st),
			 -ENOENT);
	assert_int_equal(tfs_release(f->fs, file), 0);
	assert_fsck_clean(f->fs);
}

/* ===== file data ===== */

/* A file and a model of what it must contain. */
struct model {
	uint8_t *b;
	uint64_t size, cap;
};

static void model_write(struct model *m, const uint8_t *buf, size_t len,
			uint64_t off)
{
	assert_true(off + len <= m->cap);
	memcpy(m->b + off, buf, len);
	if (off + len > m->size)
		m->size = off + len;
}

static void model_truncate(struct model *m, uint64_t size)
{
	assert_true(size <= m->cap);
	if (size < m->size)
		memset(m->b + size, 0, m->size - size);
	m->size = size;
}

static void assert_model(struct tfs_fs *fs, uint64_t ino,
			 const struct model *m)
{
	uint8_t *b = malloc(m->size + 1);

	assert_non_null(b);
	assert_int_equal(st_of(fs, ino).st_size, m->size);
	assert_int_equal(tfs_read(fs, ino, b, m->size + 1, 0),
			 (ssize_t)m->size);
	for (uint64_t i = 0; i < m->size; i++)
		if (b[i] != m->b[i])
			fail_msg("byte %llu is %u, should be %u",
				 (unsigned long long)i, b[i], m->b[i]);
	free(b);
}

static void test_fs_write_read_unaligned(void **state)
{
	struct fx *f = *state;
	static const struct { uint64_t off; size_t len; } w[] = {
		{ 0, 1 }, { 1, 4094 }, { 4095, 2 }, { 5000, 10000 },
		{ 3 * 4096 - 7, 2 * 4096 + 14 }, { 100000, 1 },
		{ 150000, 50000 }, { 8191, 1 }, { 4096, 4096 },
		{ 99999, 3 }, { 0, 200001 },
	};
	struct model m = { calloc(1, 256 * 1024), 0, 256 * 1024 };
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[300000];

	assert_non_null(m.b);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_pat(buf, w[i].len, w[i].off, (unsigned int)i + 10);
		wr(f->fs, ino, buf, w[i].len, w[i].off);
		model_write(&m, buf, w[i].len, w[i].off);
		assert_model(f->fs, ino, &m);
		/* reads at odd places agree too */
		for (uint64_t o = 1; o < m.size; o += 7777) {
			size_t n = m.size - o < 5000 ? (size_t)(m.size - o)
						     : 5000;

			assert_int_equal(tfs_read(f->fs, ino, buf, 5000, o),
					 (ssize_t)n);
			assert_memory_equal(buf, m.b + o, n);
		}
	}
	reopen(f);
	assert_model(f->fs, ino, &m);
	free(m.b);
}

/* xorshift64*: reproducible random numbers */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void test_fs_random_writes_and_truncates_match_a_model(void **state)
{
	struct fx *f = *state;
	struct model m = { calloc(1, 3 * MiB), 0, 3 * MiB };
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), seed = 42;
	static uint8_t buf[80000];

	assert_non_null(m.b);
	for (int i = 0; i < 400; i++) {
		uint64_t r = rnd(&seed);

		if (r % 13 == 0) {
			uint64_t size = rnd(&seed) % (2 * MiB);

			assert_int_equal(set_size(f->fs, ino, (off_t)size), 0);
			model_truncate(&m, size);
		} else {
			uint64_t off = rnd(&seed) % (2 * MiB);
			size_t len = 1 + rnd(&seed) % sizeof(buf);

			fill_pat(buf, len, off, (unsigned int)i);
			wr(f->fs, ino, buf, len, off);
			model_write(&m, buf, len, off);
		}
		if (i % 50 == 0)
			assert_model(f->fs, ino, &m);
	}
	assert_model(f->fs, ino, &m);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_model(crash(f), ino, &m);
	reopen(f);
	assert_model(f->fs, ino, &m);
	assert_fsck_clean(f->fs);
	free(m.b);
}

static void test_fs_write_past_eof_leaves_a_zero_hole(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8];
	struct stat st;

	wr(f->fs, ino, "abc", 3, 0);
	wr(f->fs, ino, "xyz", 3, 100000);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 100003);
	/* only the two blocks written take space */
	assert_int_equal(st.st_blocks, 2 * (4096 / 512));
	assert_int_equal(tfs_read(f->fs, ino, buf, 3, 0), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_zero(f->fs, ino, 100000 - 3, 3);
	assert_int_equal(tfs_read(f->fs, ino, buf, 8, 100000), 3);
	assert_memory_equal(buf, "xyz", 3);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
}

static void test_fs_read_at_and_past_eof(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8192];
	const void *p = NULL;

	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 0), 0);
	wr_pat(f->fs, ino, 10000, 0, 5);
	assert_int_equal(tfs_read(f->fs, ino, buf, 5000, 9000), 1000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 10000), 0);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 1ull << 40), 0);
	assert_int_equal(tfs_read(f->fs, ino, buf, 0, 0), 0);
	/* the zero-copy read hands out the same bytes */
	assert_int_equal(tfs_read_ref(f->fs, ino, 3000, 4000, &p), 3000);
	assert_non_null(p);
	fill_pat(buf, 3000, 4000, 5);
	assert_memory_equal(p, buf, 3000);
	assert_int_equal(tfs_read_ref(f->fs, ino, 100, 10000, &p), 0);
}

static void test_fs_write_and_read_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), fifo;
	uint8_t buf[16] = { 0 };
	struct stat st;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "fifo", S_IFIFO | 0600,
				   0, 0, 0, &st), 0);
	fifo = st.st_ino;
	assert_int_equal(tfs_write(f->fs, TFS_ROOT_INO, buf, 1, 0), -EISDIR);
	assert_int_equal(tfs_read(f->fs, TFS_ROOT_INO, buf, 1, 0), -EISDIR);
	assert_int_equal(tfs_write(f->fs, fifo, buf, 1, 0), -EINVAL);
	assert_int_equal(tfs_read(f->fs, fifo, buf, 1, 0), -EINVAL);
	/* past the largest file size, or wrapping around */
	assert_int_equal(tfs_write(f->fs, ino, buf, 16, (1ull << 56) - 8),
			 -EFBIG);
	assert_int_equal(tfs_write(f->fs, ino, buf, 16, UINT64_MAX - 4),
			 -EFBIG);
	assert_int_equal(tfs_write(f->fs, ino, buf, 0, 12345), 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	/* the last byte below the limit is fine */
	assert_int_equal(tfs_write(f->fs, ino, buf, 1, (1ull << 56) - 1), 1);
	assert_int_equal(st_of(f->fs, ino).st_size, 1ull << 56);
}

static void test_fs_truncate_zeroes_tail(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[10000];

	memset(buf, 0xaa, sizeof(buf));
	wr(f->fs, ino, buf, sizeof(buf), 0);
	assert_int_equal(set_size(f->fs, ino, 5000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 5000);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 2 * 8);
	/* growing again shows zeros, not the old bytes */
	assert_int_equal(set_size(f->fs, ino, 20000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 20000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 5000, 0), 5000);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(buf[i], 0xaa);
	assert_zero(f->fs, ino, 15000, 5000);
	/* to a block boundary and back */
	assert_int_equal(set_size(f->fs, ino, 4096), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 8);
	assert_int_equal(set_size(f->fs, ino, 9000), 0);
	assert_zero(f->fs, ino, 9000 - 4096, 4096);
	reopen(f);
	assert_int_equal(st_of(f->fs, ino).st_size, 9000);
	assert_int_equal(tfs_read(f->fs, ino, buf, 4096, 0), 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0xaa);
	assert_zero(f->fs, ino, 9000 - 4096, 4096);
	/* truncate to 0 */
	assert_int_equal(set_size(f->fs, ino, 0), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 0);
	assert_int_equal(tfs_extent_count(f->fs, ino), 0);
}

static void test_fs_truncate_then_write_beyond_keeps_zeros(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[8192];

	memset(buf, 0xff, sizeof(buf));
	wr(f->fs, ino, buf, sizeof(buf), 0);
	assert_int_equal(set_size(f->fs, ino, 100), 0);
	wr(f->fs, ino, "x", 1, 8000);
	assert_int_equal(st_of(f->fs, ino).st_size, 8001);
	assert_int_equal(tfs_read(f->fs, ino, buf, 100, 0), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(buf[i], 0xff);
	assert_zero(f->fs, ino, 8000 - 100, 100);
	assert_int_equal(tfs_read(f->fs, ino, buf, 10, 8000), 1);
	assert_int_equal(buf[0], 'x');
	/* the same through a write in the block of the old end of file */
	assert_int_equal(set_size(f->fs, ino, 50), 0);
	wr(f->fs, ino, "y", 1, 60);
	assert_zero(f->fs, ino, 10, 50);
}

static void test_fs_truncate_frees_blocks(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t free0 = bfree(f->fs);

	wr_pat(f->fs, ino, 4 * MiB, 0, 1);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 4 * MiB / 512);
	assert_int_equal(bfree(f->fs), free0 - 1024);
	assert_int_equal(set_size(f->fs, ino, MiB + 1), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (MiB + 4096) / 512);
	assert_int_equal(bfree(f->fs), free0 - 257);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(bfree(f->fs), free0 - 257);
	assert_pat(f->fs, ino, MiB + 1, 0, 1);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0 - 257);
}

static void test_fs_setattr_changes_and_errors(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct stat in = { 0 }, out, st;
	struct timespec t0;

	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "t", 0, 0, &st),
			 0);
	in.st_mode = S_IFDIR | 04711;	/* the type bits are ignored */
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_MODE, &out), 0);
	assert_int_equal(out.st_mode, S_IFREG | 04711);
	in.st_mode = 0700;
	assert_int_equal(tfs_setattr(f->fs, d, &in, TFS_SET_MODE, &out), 0);
	assert_int_equal(out.st_mode, S_IFDIR | 0700);
	in.st_uid = 123;
	in.st_gid = 456;
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_UID, &out), 0);
	assert_int_equal(out.st_uid, 123);
	assert_int_equal(out.st_gid, 1000);
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_GID, &out), 0);
	assert_int_equal(out.st_gid, 456);
	in.st_atim.tv_sec = 1000;
	in.st_atim.tv_nsec = 111;
	in.st_mtim.tv_sec = 2000;
	in.st_mtim.tv_nsec = 222;
	in.st_ctim.tv_sec = 3000;
	in.st_ctim.tv_nsec = 333;
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_ATIME |
			 TFS_SET_MTIME | TFS_SET_CTIME, &out), 0);
	assert_int_equal(out.st_atim.tv_sec, 1000);
	assert_int_equal(out.st_atim.tv_nsec, 111);
	assert_int_equal(out.st_mtim.tv_sec, 2000);
	assert_int_equal(out.st_mtim.tv_nsec, 222);
	assert_int_equal(out.st_ctim.tv_sec, 3000);
	assert_int_equal(out.st_ctim.tv_nsec, 333);
	/* _NOW means now; a change without SET_CTIME sets ctime to now */
	clock_gettime(CLOCK_REALTIME, &t0);
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_ATIME_NOW |
			 TFS_SET_MTIME_NOW, &out), 0);
	assert_true(out.st_atim.tv_sec >= t0.tv_sec);
	assert_true(out.st_mtim.tv_sec >= t0.tv_sec);
	assert_true(out.st_ctim.tv_sec >= t0.tv_sec);
	reopen(f);
	st = st_of(f->fs, file);
	assert_int_equal(st.st_mode, S_IFREG | 04711);
	assert_int_equal(st.st_uid, 123);
	assert_int_equal(st.st_gid, 456);
	assert_int_equal(st_of(f->fs, d).st_mode, S_IFDIR | 0700);
	/* size errors */
	in.st_size = 10;
	assert_int_equal(tfs_setattr(f->fs, d, &in, TFS_SET_SIZE, NULL),
			 -EISDIR);
	assert_int_equal(tfs_setattr(f->fs, ino_of(f->fs, TFS_ROOT_INO, "l"),
				     &in, TFS_SET_SIZE, NULL), -EINVAL);
	in.st_size = -1;
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_SIZE, NULL),
			 -EINVAL);
	in.st_size = (off_t)(1ull << 56) + 1;
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_SIZE, NULL),
			 -EFBIG);
	assert_int_equal(st_of(f->fs, file).st_size, 0);
	in.st_size = (off_t)(1ull << 56);
	assert_int_equal(tfs_setattr(f->fs, file, &in, TFS_SET_SIZE, &out), 0);
	assert_int_equal(out.st_size, 1ull << 56);
	assert_int_equal(out.st_blocks, 0);
}

static void test_fs_open_trunc_and_open_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");

	wr_pat(f->fs, ino, 10000, 0, 1);
	/* read-only opens never truncate */
	assert_int_equal(tfs_open(f->fs, ino, O_RDONLY | O_TRUNC), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 10000);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(tfs_open(f->fs, ino, O_WRONLY | O_TRUNC), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 0);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	wr_pat(f->fs, ino, 100, 0, 1);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 100);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	/* directories open read-only only */
	assert_int_equal(tfs_open(f->fs, d, O_WRONLY), -EISDIR);
	assert_int_equal(tfs_open(f->fs, d, O_RDWR), -EISDIR);
	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_opendir(f->fs, d), 0);
	assert_int_equal(tfs_opendir(f->fs, ino), -ENOTDIR);
	/* a release without an open is harmless */
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 100);
}

static void test_fs_unlink_open_file_keeps_data_until_release(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs), ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct stat st;

	wr_pat(f->fs, ino, 100000, 0, 4);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_open(f->fs, ino, O_RDONLY), 0);	/* twice */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "f", &st), -ENOENT);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(st.st_size, 100000);
	assert_pat(f->fs, ino, 100000, 0, 4);
	/* it can still be written, truncated and synced */
	wr_pat(f->fs, ino, 50000, 100000, 4);
	assert_pat(f->fs, ino, 150000, 0, 4);
	assert_int_equal(set_size(f->fs, ino, 120000), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_pat(f->fs, ino, 120000, 0, 4);
	/* a new file of the same name is another file */
	assert_true(mk(f->fs, TFS_ROOT_INO, "f") != ino);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(st_of(f->fs, ino).st_nlink, 0);
	assert_pat(f->fs, ino, 120000, 0, 4);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	/* the last release frees it */
	assert_int_equal(tfs_getattr(f->fs, ino, &st), -ENOENT);
	assert_int_equal(tfs_read(f->fs, ino, &st, 1, 0), -ENOENT);
	assert_int_equal(bfree(f->fs), free0);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0);
	assert_int_equal(tfs_getattr(f->fs, ino, &st), -ENOENT);
	assert_fsck_clean(f->fs);
}

static void test_fs_unlinked_open_file_is_freed_after_crash(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs), ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;
	struct stat st;

	wr_pat(f->fs, ino, MiB, 0, 4);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* the crash happens while the file is still open */
	c = crash(f);
	assert_true(tfs_fs_replayed(c) > 0);
	assert_int_equal(tfs_getattr(c, ino, &st), -ENOENT);
	assert_int_equal(bfree(c), free0);
	assert_fsck_clean(c);
	/* and the space is really free: the whole data area can be used */
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_int_equal(bfree(f->fs), free0);
}

/* ===== rename ===== */

static void test_fs_rename_within_and_across_directories(void **state)
{
	struct fx *f = *state;
	uint64_t d1 = mkd(f->fs, TFS_ROOT_INO, "d1");
	uint64_t d2 = mkd(f->fs, TFS_ROOT_INO, "d2");
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), x = mk(f->fs, d1, "x");
	struct stat in = { 0 };
	struct stat st;

	wr_pat(f->fs, x, 5000, 0, 8);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO,
				    "b", 0), 0);
	assert_false(exists(f->fs, TFS_ROOT_INO, "a"));
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "b"), a);
	/* across directories; the parents' times change */
	in.st_mtim.tv_sec = 1000;
	assert_int_equal(tfs_setattr(f->fs, d1, &in, TFS_SET_MTIME, NULL), 0);
	assert_int_equal(tfs_setattr(f->fs, d2, &in, TFS_SET_MTIME, NULL), 0);
	assert_int_equal(tfs_rename(f->fs, d1, "x", d2, "y", 0), 0);
	assert_false(exists(f->fs, d1, "x"));
	assert_int_equal(ino_of(f->fs, d2, "y"), x);
	assert_true(st_of(f->fs, d1).st_mtim.tv_sec > 1000);
	assert_true(st_of(f->fs, d2).st_mtim.tv_sec > 1000);
	st = st_of(f->fs, x);
	assert_int_equal(st.st_nlink, 1);
	assert_pat(f->fs, x, 5000, 0, 8);
	/* with RENAME_NOREPLACE to a free name */
	assert_int_equal(tfs_rename(f->fs, d2, "y", TFS_ROOT_INO, "z",
				    TFS_RENAME_NOREPLACE), 0);
	reopen(f);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "z"), x);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "b"), a);
	assert_false(exists(f->fs, d2, "y"));
	assert_pat(f->fs, x, 5000, 0, 8);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_over_existing_file_replaces_it(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs);
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b = mk(f->fs, TFS_ROOT_INO,
							  "b");
	uint64_t c = mk(f->fs, TFS_ROOT_INO, "c");
	struct stat st;

	wr_pat(f->fs, a, 8192, 0, 1);
	wr_pat(f->fs, b, 8192, 0, 2);
	wr_pat(f->fs, c, 8192, 0, 3);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO,
				    "b", 0), 0);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "b"), a);
	assert_int_equal(tfs_getattr(f->fs, b, &st), -ENOENT);
	assert_int_equal(bfree(f->fs), free0 - 4);
	/* a replaced file that is open lives until its release */
	assert_int_equal(tfs_open(f->fs, c, O_RDONLY), 0);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "b", TFS_ROOT_INO,
				    "c", 0), 0);
	assert_int_equal(st_of(f->fs, c).st_nlink, 0);
	assert_pat(f->fs, c, 8192, 0, 3);
	assert_int_equal(tfs_release(f->fs, c), 0);
	assert_int_equal(tfs_getattr(f->fs, c, &st), -ENOENT);
	assert_int_equal(bfree(f->fs), free0 - 2);
	reopen(f);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "c"), a);
	assert_pat(f->fs, a, 8192, 0, 1);
	assert_int_equal(bfree(f->fs), free0 - 2);
	assert_fsck_clean(f->fs);
}

/* The ".." entry readdir gives for dir. */
static uint64_t dotdot(struct tfs_fs *fs, uint64_t dir)
{
	struct ents e;
	uint64_t ino;

	list(fs, dir, 0, &e);
	assert_true(e.n >= 2);
	assert_string_equal(e.v[1].name, "..");
	ino = e.v[1].ino;
	ents_free(&e);
	return ino;
}

static void test_fs_rename_directory_updates_dotdot_and_links(void **state)
{
	struct fx *f = *state;
	uint64_t d1 = mkd(f->fs, TFS_ROOT_INO, "d1");
	uint64_t d2 = mkd(f->fs, TFS_ROOT_INO, "d2");
	uint64_t sub = mkd(f->fs, d1, "sub"), empty = mkd(f->fs, d2, "empty");
	struct stat st;

	mk(f->fs, sub, "file");
	assert_int_equal(st_of(f->fs, d1).st_nlink, 3);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 3);
	assert_int_equal(dotdot(f->fs, sub), d1);
	/* onto an empty directory, which goes */
	assert_int_equal(tfs_rename(f->fs, d1, "sub", d2, "empty", 0), 0);
	assert_int_equal(tfs_getattr(f->fs, empty, &st), -ENOENT);
	assert_int_equal(ino_of(f->fs, d2, "empty"), sub);
	assert_int_equal(dotdot(f->fs, sub), d2);
	assert_int_equal(st_of(f->fs, d1).st_nlink, 2);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 3);
	assert_int_equal(st_of(f->fs, sub).st_nlink, 2);
	/* to a new name in the root */
	assert_int_equal(tfs_rename(f->fs, d2, "empty", TFS_ROOT_INO, "top", 0),
			 0);
	assert_int_equal(dotdot(f->fs, sub), TFS_ROOT_INO);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 2);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 5);
	/* within one directory the counts stay */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "top", TFS_ROOT_INO,
				    "top2", 0), 0);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 5);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(dotdot(crash(f), sub), TFS_ROOT_INO);
	assert_fsck_clean(f->fs2);
	reopen(f);
	assert_int_equal(dotdot(f->fs, sub), TFS_ROOT_INO);
	assert_true(exists(f->fs, sub, "file"));
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 5);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_errors(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t full = mkd(f->fs, TFS_ROOT_INO, "full");
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");

	mk(f->fs, full, "inside");
	mk(f->fs, TFS_ROOT_INO, "other");
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "nope", TFS_ROOT_INO,
				    "x", 0), -ENOENT);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "d", TFS_ROOT_INO,
				    "file", 0), -ENOTDIR);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "d", 0), -EISDIR);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "d", TFS_ROOT_INO,
				    "full", 0), -ENOTEMPTY);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "other", TFS_RENAME_NOREPLACE), -EEXIST);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "missing", TFS_RENAME_EXCHANGE), -ENOENT);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "other", TFS_RENAME_NOREPLACE |
					     TFS_RENAME_EXCHANGE), -EINVAL);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "other", 0x4), -EINVAL);
	assert_int_equal(tfs_rename(f->fs, file, "x", TFS_ROOT_INO, "y", 0),
			 -ENOTDIR);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", file, "y", 0),
			 -ENOTDIR);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", 9999, "y", 0),
			 -ENOENT);
	assert_int_equal(tfs_rename(f->fs, 9999, "file", TFS_ROOT_INO, "y", 0),
			 -ENOENT);
	/* nothing moved */
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "file"), file);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "d"), d);
	assert_true(exists(f->fs, full, "inside"));
	assert_true(exists(f->fs, TFS_ROOT_INO, "other"));
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 4);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_into_own_subdir_is_einval(void **state)
{
	struct fx *f = *state;
	uint64_t a = mkd(f->fs, TFS_ROOT_INO, "a");
	uint64_t b = mkd(f->fs, a, "b"), c = mkd(f->fs, b, "c");
	char *before = snapshot(f->fs);

	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", a, "x", 0),
			 -EINVAL);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", c, "x", 0),
			 -EINVAL);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", b, "c", 0),
			 -EINVAL);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", c, "x",
				    TFS_RENAME_NOREPLACE), -EINVAL);
	assert_int_equal(tfs_rename(f->fs, a, "b", c, "x", 0), -EINVAL);
	/* exchanging a directory with one inside it, either way round */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", b, "c",
				    TFS_RENAME_EXCHANGE), -EINVAL);
	assert_int_equal(tfs_rename(f->fs, b, "c", TFS_ROOT_INO, "a",
				    TFS_RENAME_EXCHANGE), -EINVAL);
	assert_same_tree(f->fs, before);
	/* a name onto itself is fine and changes nothing */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO, "a",
				    0), 0);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "a"), a);
	free(before);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_exchange(void **state)
{
	struct fx *f = *state;
	uint64_t d1 = mkd(f->fs, TFS_ROOT_INO, "d1");
	uint64_t d2 = mkd(f->fs, TFS_ROOT_INO, "d2");
	uint64_t file = mk(f->fs, d1, "file"), dir = mkd(f->fs, d2, "dir");
	uint64_t p = mk(f->fs, TFS_ROOT_INO, "p"), q = mk(f->fs, TFS_ROOT_INO,
							  "q");
	char *want;

	wr_pat(f->fs, file, 5000, 0, 1);
	mk(f->fs, dir, "inner");
	assert_int_equal(st_of(f->fs, d1).st_nlink, 2);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 3);
	/* a file and a directory in different parents trade places */
	assert_int_equal(tfs_rename(f->fs, d1, "file", d2, "dir",
				    TFS_RENAME_EXCHANGE), 0);
	assert_int_equal(ino_of(f->fs, d1, "file"), dir);
	assert_int_equal(ino_of(f->fs, d2, "dir"), file);
	assert_int_equal(dotdot(f->fs, dir), d1);
	assert_int_equal(st_of(f->fs, d1).st_nlink, 3);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 2);
	assert_true(exists(f->fs, dir, "inner"));
	assert_pat(f->fs, file, 5000, 0, 1);
	/* two files in one directory */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "p", TFS_ROOT_INO, "q",
				    TFS_RENAME_EXCHANGE), 0);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "p"), q);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "q"), p);
	assert_int_equal(st_of(f->fs, p).st_nlink, 1);
	assert_fsck_clean(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	assert_same_tree(crash(f), want);
	assert_fsck_clean(f->fs2);
	reopen(f);
	assert_same_tree(f->fs, want);
	free(want);
}

static void test_fs_rename_between_hard_links_is_a_noop(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a");
	struct stat st;

	assert_int_equal(tfs_link(f->fs, a, TFS_ROOT_INO, "b", &st), 0);
	/* POSIX: both names of one file: do nothing, succeed */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO,
				    "b", 0), 0);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "a"), a);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "b"), a);
	assert_int_equal(st_of(f->fs, a).st_nlink, 2);
	assert_fsck_clean(f->fs);
}

/* ===== readdir ===== */

static void test_fs_readdir_dots_cookies_and_errors(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t a = mk(f->fs, d, "a");
	struct ents e, part;
	struct stat st;

	assert_int_equal(tfs_symlink(f->fs, d, "l", "a", 0, 0, &st), 0);
	mkd(f->fs, d, "sub");
	assert_int_equal(tfs_mknod(f->fs, d, "p", S_IFIFO | 0600, 0, 0, 0, &st),
			 0);
	list(f->fs, d, 0, &e);
	assert_int_equal(e.n, 6);
	assert_string_equal(e.v[0].name, ".");
	assert_int_equal(e.v[0].ino, d);
	assert_int_equal(e.v[0].type, S_IFDIR);
	assert_string_equal(e.v[1].name, "..");
	assert_int_equal(e.v[1].ino, TFS_ROOT_INO);
	assert_string_equal(e.v[2].name, "a");
	assert_int_equal(e.v[2].ino, a);
	assert_int_equal(e.v[2].type, S_IFREG);
	assert_int_equal(e.v[3].type, S_IFLNK);
	assert_int_equal(e.v[4].type, S_IFDIR);
	assert_int_equal(e.v[5].type, S_IFIFO);
	/* cookies grow; each resumes right after its entry */
	for (size_t i = 0; i < e.n; i++) {
		if (i)
			assert_true(e.v[i].cookie > e.v[i - 1].cookie);
		memset(&part, 0, sizeof(part));
		assert_int_equal(tfs_readdir(f->fs, d, e.v[i].cookie, fill,
					     &part), 0);
		assert_int_equal(part.n, e.n - i - 1);
		if (part.n)
			assert_string_equal(part.v[0].name, e.v[i + 1].name);
		ents_free(&part);
	}
	/* a full buffer stops the listing; the refused entry comes next */
	memset(&part, 0, sizeof(part));
	part.limit = 3;
	assert_int_equal(tfs_readdir(f->fs, d, 0, fill, &part), 0);
	assert_int_equal(part.n, 3);
	part.got = 0;
	assert_int_equal(tfs_readdir(f->fs, d, part.v[2].cookie, fill, &part),
			 0);
	assert_int_equal(part.n, 6);
	assert_string_equal(part.v[3].name, "l");
	ents_free(&part);
	/* paging by one gives the same */
	list(f->fs, d, 1, &part);
	assert_int_equal(part.n, e.n);
	for (size_t i = 0; i < e.n; i++)
		assert_string_equal(part.v[i].name, e.v[i].name);
	ents_free(&part);
	ents_free(&e);
	assert_int_equal(tfs_readdir(f->fs, a, 0, fill, &part), -ENOTDIR);
	assert_int_equal(tfs_opendir(f->fs, a), -ENOTDIR);
}

static void test_fs_readdir_100k(void **state)
{
	struct fx *f = *state;
	enum { N = 100000 };
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "big"), cookie = 0;
	static unsigned char seen[N];
	struct ents e;
	char name[32];
	size_t total = 0, removed = 0;
	int next_odd = 1;

	for (int i = 0; i < N; i++) {
		struct stat st;

		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(tfs_mknod(f->fs, d, name, 0644, 0, 0, 0, &st),
				 0);
	}
	assert_int_equal(st_of(f->fs, d).st_nlink, 2);
	/*
	 * Read it in pages of 1000 as the kernel would, and meanwhile
	 * remove every other entry of the pages to come: each entry left
	 * is listed exactly once, no removed one is.
	 */
	memset(seen, 0, sizeof(seen));
	memset(&e, 0, sizeof(e));
	e.limit = 1000;
	for (;;) {
		e.got = 0;
		assert_int_equal(tfs_readdir(f->fs, d, cookie, fill, &e), 0);
		if (!e.n)
			break;
		for (size_t k = 0; k < e.n; k++) {
			int i;

			if (e.v[k].name[0] == '.')
				continue;
			i = atoi(e.v[k].name + 1);
			assert_true(i >= 0 && i < N);
			assert_int_equal(seen[i], 0);
			seen[i] = 1;
			total++;
		}
		cookie = e.v[e.n - 1].cookie;
		/* remove the next 500 odd-numbered names, listed or not */
		for (int k = 0; k < 500 && next_odd < N; k++, next_odd += 2) {
			snprintf(name, sizeof(name), "f%d", next_odd);
			assert_int_equal(tfs_unlink(f->fs, d, name), 0);
			if (!seen[next_odd])
				seen[next_odd] = 2;	/* never to be listed */
			removed++;
		}
		ents_free(&e);
		e.limit = 1000;
	}
	for (int i = 0; i < N; i++)
		if (i % 2 == 0)
			assert_int_equal(seen[i], 1);
	assert_int_equal(removed, N / 2);
	(void)total;
	reopen(f);
	list(f->fs, d, 5000, &e);
	assert_int_equal(e.n, 2 + N / 2);
	memset(seen, 0, sizeof(seen));
	for (size_t k = 2; k < e.n; k++) {
		int i = atoi(e.v[k].name + 1);

		assert_int_equal(i % 2, 0);
		assert_int_equal(seen[i], 0);
		seen[i] = 1;
	}
	ents_free(&e);
}

/* ===== space ===== */

static void test_fs_statfs_counts(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_info info;
	struct statvfs sv, sv2;
	uint64_t ino;

	tfs_fs_get_info(f->fs, &info);
	assert_int_equal(tfs_statfs(f->fs, &sv), 0);
	assert_int_equal(sv.f_bsize, 4096);
	assert_int_equal(sv.f_frsize, 4096);
	assert_int_equal(sv.f_blocks, info.data_blocks);
	assert_int_equal(sv.f_bfree, info.data_blocks);
	assert_int_equal(sv.f_bavail, sv.f_bfree);
	assert_int_equal(sv.f_namemax, 255);
	assert_true(sv.f_ffree > 1000);
	assert_int_equal(sv.f_files, sv.f_ffree + 1);
	ino = mk(f->fs, TFS_ROOT_INO, "f");
	wr_pat(f->fs, ino, MiB, 0, 1);
	assert_int_equal(tfs_statfs(f->fs, &sv2), 0);
	assert_int_equal(sv2.f_bfree, sv.f_bfree - 256);
	assert_true(sv2.f_ffree < sv.f_ffree);
	assert_int_equal(sv2.f_files, sv2.f_ffree + 2);
}

static void test_fs_info_and_extent_count(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_info info;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), gen;
	char num[32];
	int zero = 1;

	tfs_fs_get_info(f->fs, &info);
	assert_int_equal(info.dev_bytes, 128 * MiB);
	assert_true(info.data_blocks > 100 * MiB / 4096);
	assert_true(info.data_blocks < 128 * MiB / 4096);
	assert_int_equal(info.free_blocks, info.data_blocks);
	assert_int_equal(info.free_extents, 1);
	assert_int_equal(info.inodes, 2);
	assert_true(info.meta_bytes > 0);
	assert_true(info.meta_capacity > info.meta_bytes);
	assert_true(info.journal_bytes > 0);
	assert_true(info.generation > 0);
	for (int i = 0; i < 16; i++)
		zero &= info.uuid[i] == 0;
	assert_false(zero);
	gen = info.generation;
	/* written in order: one extent */
	for (int i = 0; i < 16; i++)
		wr_pat(f->fs, ino, 65536, (uint64_t)i * 65536, 1);
	assert_int_equal(tfs_extent_count(f->fs, ino), 1);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.tensorfs.extents", num,
				      sizeof(num)), 1);
	assert_memory_equal(num, "1", 1);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.tensorfs.extents", NULL,
				      0), 1);
	assert_int_equal(tfs_extent_count(f->fs, TFS_ROOT_INO), 0);
	tfs_fs_get_info(f->fs, &info);
	assert_int_equal(info.free_blocks, info.data_blocks - 256);
	reopen(f);
	tfs_fs_get_info(f->fs, &info);
	assert_true(info.generation > gen);
	assert_int_equal(tfs_extent_count(f->fs, ino), 1);
}

/* Write 1 MiB pieces to a new file until the device is full. */
static uint64_t fill_device(struct tfs_fs *fs, const char *name,
			    uint64_t *ino)
{
	static uint8_t buf[MiB];
	uint64_t n = 0;
	ssize_t rc;

	*ino = mk(fs, TFS_ROOT_INO, name);
	memset(buf, 0x3c, sizeof(buf));
	while ((rc = tfs_write(fs, *ino, buf, sizeof(buf), n * MiB)) ==
	       (ssize_t)sizeof(buf))
		n++;
	assert_int_equal(rc, -ENOSPC);
	return n;
}

static void test_fs_enospc_then_free_then_write_again(void **state)
{
	struct fx *f = *state;
	uint64_t free0 = bfree(f->fs), big, again, n, n2;
	static uint8_t buf[MiB];
	struct stat st;

	n = fill_device(f->fs, "big", &big);
	assert_true(n >= 40);
	/* a failed write changes nothing: no short write, no size change */
	st = st_of(f->fs, big);
	assert_int_equal(st.st_size, n * MiB);
	assert_int_equal(st.st_blocks, n * MiB / 512);
	assert_true(bfree(f->fs) < 256);
	assert_int_equal(tfs_fallocate(f->fs, big, 0, n * MiB, MiB), -ENOSPC);
	assert_int_equal(st_of(f->fs, big).st_size, n * MiB);
	/* the last blocks can still be used by a write that fits */
	if (bfree(f->fs)) {
		uint64_t left = bfree(f->fs);

		wr_pat(f->fs, big, (size_t)left * 4096, n * MiB, 7);
		assert_int_equal(bfree(f->fs), 0);
		assert_int_equal(tfs_write(f->fs, big, buf, 1,
					   (n * MiB) + left * 4096), -ENOSPC);
		assert_pat(f->fs, big, (size_t)left * 4096, n * MiB, 7);
	}
	/* free it (uncommitted): the next write must find the space */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "big"), 0);
	assert_int_equal(bfree(f->fs), free0);
	again = mk(f->fs, TFS_ROOT_INO, "again");
	memset(buf, 0x11, sizeof(buf));
	assert_int_equal(tfs_write(f->fs, again, buf, sizeof(buf), 0),
			 (ssize_t)sizeof(buf));
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "again"), 0);
	n2 = fill_device(f->fs, "big2", &big);
	assert_int_equal(n2, n);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "big2"), 0);
	reopen(f);
	assert_int_equal(bfree(f->fs), free0);
	assert_fsck_clean(f->fs);
}

static void test_fs_metadata_full_is_enospc(void **state)
{
	struct fx *f = *state;
	char name[256];
	struct stat st;
	int n = 0, rc;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "keep");

	/* long names fill the checkpoint slot fast */
	memset(name, 'n', 250);
	for (;;) {
		snprintf(name + 240, 16, "%06d", n);
		rc = tfs_mknod(f->fs, TFS_ROOT_INO, name, 0644, 0, 0, 0, &st);
		if (rc)
			break;
		n++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 1000);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "d", 0755, 0, 0, &st),
			 -ENOSPC);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "t", 0, 0, &st),
			 -ENOSPC);
	assert_int_equal(tfs_setxattr(f->fs, file, "user.big", name, 250, 0),
			 -ENOSPC);
	assert_false(exists(f->fs, TFS_ROOT_INO, "d"));
	/* what was made is committed and reloads */
	reopen(f);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "x", 0644, 0, 0, 0,
				   &st), -ENOSPC);
	snprintf(name + 240, 16, "%06d", 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, name), 0);
	snprintf(name + 240, 16, "%06d", 1);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, name), 0);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "x", 0644, 0, 0, 0,
				   &st), 0);
	reopen(f);
	assert_true(exists(f->fs, TFS_ROOT_INO, "x"));
	snprintf(name + 240, 16, "%06d", n - 1);
	assert_true(exists(f->fs, TFS_ROOT_INO, name));
	assert_fsck_clean(f->fs);
}

/* ===== durability ===== */

static void test_fs_persists_across_close_and_open(void **state)
{
	struct fx *f = *state;
	char *want;

	make_sample_tree(f->fs);
	want = snapshot(f->fs);
	reopen(f);
	assert_int_equal(tfs_fs_replayed(f->fs), 0);
	assert_same_tree(f->fs, want);
	/* and again, with nothing changed in between */
	reopen(f);
	assert_same_tree(f->fs, want);
	assert_fsck_clean(f->fs);
	free(want);
}

static void test_fs_crash_keeps_what_was_synced(void **state)
{
	struct fx *f = *state;
	uint64_t d, g;
	char *want;
	struct stat st;
	struct tfs_fs *c;

	make_sample_tree(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "dir");
	assert_int_equal(tfs_rename(f->fs, d, "file", TFS_ROOT_INO, "moved",
				    0), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "hard"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	/* after the sync: new names only (an overwrite of synced data
	 * would reach the device in place, as documented) */
	g = mk(f->fs, TFS_ROOT_INO, "unsynced");
	wr_pat(f->fs, g, 100000, 0, 5);
	mkd(f->fs, d, "newdir");
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "newlink", "x", 0, 0,
				     &st), 0);
	assert_int_equal(tfs_setxattr(f->fs, TFS_ROOT_INO, "user.late", "v", 1,
				      0), 0);
	c = crash(f);
	assert_true(tfs_fs_replayed(c) >= 1);
	assert_false(exists(c, TFS_ROOT_INO, "unsynced"));
	assert_false(exists(c, d, "newdir"));
	assert_same_tree(c, want);
	assert_fsck_clean(c);
	/* recovery made a checkpoint: crash right after it, same state */
	c = crash(f);
	assert_same_tree(c, want);
	/* the live file system still has everything */
	assert_true(exists(f->fs, TFS_ROOT_INO, "unsynced"));
	assert_pat(f->fs, g, 100000, 0, 5);
	free(want);
}

static void test_fs_crash_without_any_sync_is_the_formatted_state(
	void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs_info info;
	struct tfs_fs *c;
	struct ents e;

	wr_pat(f->fs, ino, 10000, 0, 1);
	c = crash(f);
	list(c, TFS_ROOT_INO, 0, &e);
	assert_int_equal(e.n, 2);
	ents_free(&e);
	tfs_fs_get_info(c, &info);
	assert_int_equal(bfree(c), info.data_blocks);
	assert_int_equal(info.inodes, 1);
	assert_fsck_clean(c);
}

static void test_fs_fsync_makes_changes_durable(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;

	wr_pat(f->fs, ino, 300000, 12345, 6);
	assert_int_equal(tfs_fsync(f->fs, ino, 1), 0);
	c = crash(f);
	assert_int_equal(ino_of(c, TFS_ROOT_INO, "f"), ino);
	assert_int_equal(st_of(c, ino).st_size, 312345);
	assert_zero(c, ino, 12345, 0);
	assert_pat(c, ino, 300000, 12345, 6);
	/* an fsync with nothing to do is fine */
	assert_int_equal(tfs_fsync(f->fs, ino, 0), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
}

static void test_fs_commit_thread_commits_on_its_own(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	uint64_t ino;
	int found = 0;

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	o.commit_interval_ms = 20;
	assert_int_equal(tfs_fs_open(f->path, &o, &f->fs, f->err,
				     sizeof(f->err)), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0);	/* once is enough */
	ino = mk(f->fs, TFS_ROOT_INO, "auto");
	wr_pat(f->fs, ino, 50000, 0, 2);
	/* a copy taken at any moment may catch a commit half-written:
	 * it must open all the same; the data, written back after a
	 * while, and its size reach the device without an fsync */
	for (int i = 0; i < 100 && !found; i++) {
		struct tfs_fs *c;

		usleep(30000);
		c = crash(f);
		found = exists(c, TFS_ROOT_INO, "auto") &&
			st_of(c, ino).st_size == 50000 &&
			has_pat(c, ino, 50000, 0, 2);
	}
	assert_true(found);
	assert_pat(f->fs2, ino, 50000, 0, 2);
}

static void test_fs_freed_blocks_are_not_reused_before_commit(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b, u;
	struct tfs_fs *c;

	wr_pat(f->fs, a, 4 * MiB, 0, 1);
	u = mk(f->fs, TFS_ROOT_INO, "u");
	wr_pat(f->fs, u, 2 * MiB, 0, 3);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* truncate and unlink, then write new data; no sync */
	assert_int_equal(set_size(f->fs, a, 0), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "u"), 0);
	b = mk(f->fs, TFS_ROOT_INO, "b");
	wr_pat(f->fs, b, 6 * MiB, 0, 2);
	c = crash(f);
	/* the committed state still has a and u, with their own bytes */
	assert_int_equal(st_of(c, a).st_size, 4 * MiB);
	assert_pat(c, a, 4 * MiB, 0, 1);
	assert_int_equal(ino_of(c, TFS_ROOT_INO, "u"), u);
	assert_pat(c, u, 2 * MiB, 0, 3);
	assert_false(exists(c, TFS_ROOT_INO, "b"));
	assert_fsck_clean(c);
}

static void test_fs_freed_blocks_reused_on_a_full_device_after_commit(
	void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b, filler, left;
	struct tfs_fs *c;
	struct stat st;

	wr_pat(f->fs, a, 4 * MiB, 0, 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* leave 2 MiB free */
	filler = mk(f->fs, TFS_ROOT_INO, "filler");
	left = bfree(f->fs) - 512;
	wr_pat(f->fs, filler, (size_t)left * 4096, 0, 9);
	assert_int_equal(bfree(f->fs), 512);
	/* 6 MiB fit only in a's blocks: the write must commit a's
	 * truncate before it can reuse them */
	assert_int_equal(set_size(f->fs, a, 0), 0);
	b = mk(f->fs, TFS_ROOT_INO, "b");
	wr_pat(f->fs, b, 6 * MiB, 0, 2);
	c = crash(f);
	st = st_of(c, a);
	if (st.st_size)		/* never a's size with b's bytes */
		assert_pat(c, a, (size_t)st.st_size, 0, 1);
	assert_int_equal(st.st_size, 0);
	assert_fsck_clean(c);
	assert_pat(f->fs, b, 6 * MiB, 0, 2);
}

static void test_fs_journal_full_checkpoints_and_survives_crash(void **state)
{
	struct fx *f = *state;
	static uint8_t v[16384], got[16384];
	struct tfs_fs_info i0, i1;
	enum { ROUNDS = 400 };
	struct tfs_fs *c;
	char name[32];

	tfs_fs_get_info(f->fs, &i0);
	for (int r = 0; r < ROUNDS; r++) {
		memset(v, r & 0xff, sizeof(v));
		assert_int_equal(tfs_setxattr(f->fs, TFS_ROOT_INO, "user.v", v,
					      sizeof(v), 0), 0);
		snprintf(name, sizeof(name), "r%d", r);
		mk(f->fs, TFS_ROOT_INO, name);
		assert_int_equal(tfs_fs_sync(f->fs), 0);
	}
	/* 400 x 20 KiB is more than the 3 MiB journal: it checkpointed */
	tfs_fs_get_info(f->fs, &i1);
	assert_true(i1.generation >= i0.generation + 2);
	c = crash(f);
	assert_int_equal(tfs_getxattr(c, TFS_ROOT_INO, "user.v", got,
				      sizeof(got)), sizeof(got));
	assert_int_equal(got[0], (ROUNDS - 1) & 0xff);
	assert_int_equal(got[sizeof(got) - 1], (ROUNDS - 1) & 0xff);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(name, sizeof(name), "r%d", r);
		assert_true(exists(c, TFS_ROOT_INO, name));
	}
	assert_fsck_clean(c);
}

/* ===== damaged images ===== */

static void test_fs_corrupt_checkpoint_fails_open_with_euclean(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	struct tfs_super sb;
	uint64_t base;
	int copy;

	make_sample_tree(f->fs);
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	base = sb.ckpt_start[sb.slot] * TFS_BLOCK_SIZE;
	assert_int_equal(img_flip(f->path, base + sb.ckpt_len / 2), 0);
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(f->path, NULL, &fs, f->err,
				     sizeof(f->err)), -EUCLEAN);
	assert_null(fs);
	assert_non_null(strstr(f->err, "checkpoint"));
	assert_non_null(strstr(f->err, "corrupted"));
	/* its header, too */
	assert_int_equal(img_flip(f->path, base + sb.ckpt_len / 2), 0);
	assert_int_equal(img_flip(f->path, base + 9), 0);
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(f->path, NULL, &fs, f->err,
				     sizeof(f->err)), -EUCLEAN);
	assert_non_null(strstr(f->err, "checkpoint"));
	/* repaired by hand, it opens again (the failed opens wrote nothing) */
	assert_int_equal(img_flip(f->path, base + 9), 0);
	assert_int_equal(tfs_fs_open(f->path, NULL, &f->fs, f->err,
				     sizeof(f->err)), 0);
	assert_true(exists(f->fs, TFS_ROOT_INO, "dir"));
}

static void test_fs_one_corrupt_superblock_still_opens(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	char *want;

	make_sample_tree(f->fs);
	want = snapshot(f->fs);
	/* an idle mount after the change, so that both superblock copies
	 * describe this tree */
	reopen(f);
	for (int c = 0; c < 2; c++) {
		assert_int_equal(tfs_fs_close(f->fs), 0);
		f->fs = NULL;
		assert_int_equal(img_flip(f->path, (uint64_t)c * TFS_BLOCK_SIZE +
							   100), 0);
		if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
			fail_msg("superblock copy %d bad: %s", c, f->err);
		assert_same_tree(f->fs, want);
		/* the open rewrote a copy; an idle remount rewrites both */
		reopen(f);
	}
	/* both bad */
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_flip(f->path, 100), 0);
	assert_int_equal(img_flip(f->path, TFS_BLOCK_SIZE + 100), 0);
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(f->path, NULL, &fs, f->err,
				     sizeof(f->err)), -EUCLEAN);
	assert_non_null(strstr(f->err, "superblock"));
	free(want);
}

static void test_fs_open_errors(void **state)
{
	struct fx *f = *state;
	struct tfs_fs *fs = NULL;
	struct tfs_fs_opts o = { 0 };
	char path[64];

	assert_int_equal(tfs_fs_open("/tmp/tfs-ut-no-such-image", NULL, &fs,
				     f->err, sizeof(f->err)), -ENOENT);
	assert_non_null(strstr(f->err, "/tmp/tfs-ut-no-such-image"));
	/* in use by the fixture's open */
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(f->path, NULL, &fs, f->err,
				     sizeof(f->err)), -EBUSY);
	assert_non_null(strstr(f->err, "in use"));
	/* read-only without the lock is fine (fsck -n of a live image) */
	o.readonly = 1;
	o.no_lock = 1;
	assert_int_equal(tfs_fs_open(f->path, &o, &fs, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(tfs_fs_close(fs), 0);
	/* not a tensorfs */
	assert_int_equal(img_make(path, 64 * MiB), 0);
	fs = NULL;
	f->err[0] = '\0';
	assert_int_equal(tfs_fs_open(path, NULL, &fs, f->err, sizeof(f->err)),
			 -EINVAL);
	assert_null(fs);
	assert_non_null(strstr(f->err, "not a tensorfs"));
	/* no room for a message is fine too */
	assert_int_equal(tfs_fs_open(path, NULL, &fs, NULL, 0), -EINVAL);
	unlink(path);
	assert_int_equal(tfs_fs_close(NULL), 0);
}

/* CRC of a whole file, to see that nothing was written to it. */
static uint32_t file_crc(const char *path)
{
	static uint8_t buf[1 << 20];
	int fd = open(path, O_RDONLY);
	uint32_t crc = 0;
	ssize_t n;

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = tfs_crc32c(crc, buf, (size_t)n);
	close(fd);
	return crc;
}

static void test_fs_readonly_open_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	struct tfs_fs *ro;
	uint32_t crc;
	char *want;

	make_sample_tree(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	/* an image that needs recovery */
	assert_int_equal(img_copy(f->path, f->copy), 0);
	crc = file_crc(f->copy);
	o.readonly = 1;
	assert_int_equal(tfs_fs_open(f->copy, &o, &ro, f->err, sizeof(f->err)),
			 0);
	assert_true(tfs_fs_replayed(ro) > 0);
	assert_same_tree(ro, want);
	assert_int_equal(tfs_fs_sync(ro), 0);
	assert_int_equal(tfs_fs_start(ro), 0);
	assert_int_equal(tfs_fs_close(ro), 0);
	assert_int_equal(file_crc(f->copy), crc);
	free(want);
}

static void test_fs_no_recover_keeps_orphans(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	struct tfs_check_result res;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;
	struct stat st;
	FILE *out = fopen("/dev/null", "w");

	assert_non_null(out);
	wr_pat(f->fs, ino, 8192, 0, 1);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	o.readonly = 1;
	o.no_recover = 1;
	assert_int_equal(tfs_fs_open(f->copy, &o, &c, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(st_of(c, ino).st_nlink, 0);
	assert_int_equal(tfs_check(c, 0, out, &res), 0);
	assert_int_equal(res.orphans, 1);
	assert_int_equal(res.errors, 0);
	assert_int_equal(tfs_fs_close(c), 0);
	/* a normal open frees it */
	c = crash(f);
	assert_int_equal(tfs_getattr(c, ino, &st), -ENOENT);
	fclose(out);
	assert_int_equal(tfs_release(f->fs, ino), 0);
}

/* ===== fallocate ===== */

static void test_fs_fallocate_unwritten_reads_zero(void **state)
{
	struct fx *f = *state;
	uint64_t old = mk(f->fs, TFS_ROOT_INO, "old"), ino;
	struct stat st;
	char *want;

	/* garbage in free blocks: the new file must not show it */
	wr_pat(f->fs, old, 4 * MiB, 0, 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "old"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	ino = mk(f->fs, TFS_ROOT_INO, "new");
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 4 * MiB), 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 4 * MiB);
	assert_int_equal(st.st_blocks, 4 * MiB / 512);
	assert_zero(f->fs, ino, 4 * MiB, 0);
	/* a write in the middle: the rest of its block and of the file
	 * still read as zeros */
	wr(f->fs, ino, "hello", 5, 5000);
	assert_zero(f->fs, ino, 5000, 0);
	assert_zero(f->fs, ino, 4 * MiB - 5005, 5005);
	/* once written back, its block alone is written */
	assert_int_equal(tfs_fsync(f->fs, ino, 0), 0);
	assert_int_equal(tfs_extent_count(f->fs, ino), 3);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 4 * MiB / 512);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	assert_same_tree(crash(f), want);
	reopen(f);
	assert_same_tree(f->fs, want);
	assert_zero(f->fs, ino, 4 * MiB - 5005, 5005);
	free(want);
	assert_fsck_clean(f->fs);
}

static void test_fs_fallocate_keep_size_and_existing_data(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	uint8_t buf[256];
	struct stat st;

	wr_pat(f->fs, ino, 100, 0, 1);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_KEEP_SIZE, 0, MiB),
			 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 100);
	assert_int_equal(st.st_blocks, MiB / 512);
	assert_int_equal(tfs_read(f->fs, ino, buf, sizeof(buf), 0), 100);
	assert_pat(f->fs, ino, 100, 0, 1);
	/* growing into the preallocation shows zeros */
	assert_int_equal(set_size(f->fs, ino, 500000), 0);
	assert_pat(f->fs, ino, 100, 0, 1);
	assert_zero(f->fs, ino, 500000 - 100, 100);
	assert_int_equal(st_of(f->fs, ino).st_blocks, MiB / 512);
	/* allocating over data keeps the data */
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 2 * MiB), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 2 * MiB);
	assert_pat(f->fs, ino, 100, 0, 1);
	assert_zero(f->fs, ino, 2 * MiB - 100, 100);
	/* an unaligned range covers every block it touches */
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_KEEP_SIZE,
				       3 * MiB - 1, 2), 0);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (2 * MiB + 8192) / 512);
	reopen(f);
	assert_int_equal(st_of(f->fs, ino).st_size, 2 * MiB);
	assert_int_equal(st_of(f->fs, ino).st_blocks, (2 * MiB + 8192) / 512);
	assert_pat(f->fs, ino, 100, 0, 1);
}

static void test_fs_fallocate_errors(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), fifo;
	struct stat st;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "p", S_IFIFO | 0600, 0,
				   0, 0, &st), 0);
	fifo = st.st_ino;
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, 0), -EINVAL);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_COLLAPSE_RANGE, 0,
				       4096), -EOPNOTSUPP);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_ZERO_RANGE, 0,
				       4096), -EOPNOTSUPP);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_INSERT_RANGE, 0,
				       4096), -EOPNOTSUPP);
	assert_int_equal(tfs_fallocate(f->fs, ino, FALLOC_FL_PUNCH_HOLE, 0,
				       4096), -EOPNOTSUPP);
	assert_int_equal(tfs_fallocate(f->fs, TFS_ROOT_INO, 0, 0, 4096),
			 -EISDIR);
	assert_int_equal(tfs_fallocate(f->fs, fifo, 0, 0, 4096), -ENODEV);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, UINT64_MAX - 10, 100),
			 -EFBIG);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 1ull << 56, 1), -EFBIG);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
}

static void test_fs_punch_hole(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	const int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	uint64_t free0;
	char *want;

	wr_pat(f->fs, ino, 65536, 0, 3);
	free0 = bfree(f->fs);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128);
	/* [5000, 25000): whole blocks 2..5 go, the edges are zeroed */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 5000, 20000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 65536);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 4 * 8);
	assert_int_equal(bfree(f->fs), free0 + 4);
	assert_pat(f->fs, ino, 5000, 0, 3);
	assert_zero(f->fs, ino, 20000, 5000);
	assert_pat(f->fs, ino, 65536 - 25000, 25000, 3);
	/* inside one block */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 30000, 10), 0);
	assert_zero(f->fs, ino, 10, 30000);
	assert_pat(f->fs, ino, 30000 - 25000, 25000, 3);
	assert_pat(f->fs, ino, 65536 - 30010, 30010, 3);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 4 * 8);
	/* reaching past the end of file: size stays */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 60000, 100000), 0);
	assert_int_equal(st_of(f->fs, ino).st_size, 65536);
	assert_zero(f->fs, ino, 65536 - 60000, 60000);
	assert_int_equal(st_of(f->fs, ino).st_blocks, 128 - 5 * 8);
	/* entirely past it: nothing to do */
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, MiB, 4096), 0);
	/* the hole can be written again */
	wr(f->fs, ino, "new", 3, 10000);
	assert_zero(f->fs, ino, 10000 - 5000, 5000);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	want = snapshot(f->fs);
	assert_same_tree(crash(f), want);
	reopen(f);
	assert_same_tree(f->fs, want);
	free(want);
	assert_fsck_clean(f->fs);
}

static void test_fs_punch_hole_in_unwritten_extent(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f"), free0;
	const int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;

	free0 = bfree(f->fs);
	assert_int_equal(tfs_fallocate(f->fs, ino, 0, 0, MiB), 0);
	assert_int_equal(tfs_fallocate(f->fs, ino, mode, 4096, 8192), 0);
	assert_int_equal(bfree(f->fs), free0 - 254);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
	assert_zero(f->fs, ino, MiB, 0);
	reopen(f);
	assert_int_equal(tfs_extent_count(f->fs, ino), 2);
	assert_zero(f->fs, ino, MiB, 0);
}

/* ===== xattrs ===== */

static void test_fs_xattr_create_replace_semantics(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	char buf[16];

	assert_int_equal(tfs_setxattr(f->fs, ino, "user.a", "1", 1,
				      TFS_XATTR_CREATE), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.a", "2", 1,
				      TFS_XATTR_CREATE), -EEXIST);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.b", "2", 1,
				      TFS_XATTR_REPLACE), -ENODATA);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.b", buf, sizeof(buf)),
			 -ENODATA);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.a", buf, sizeof(buf)),
			 1);
	assert_memory_equal(buf, "1", 1);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.a", "22", 2,
				      TFS_XATTR_REPLACE), 0);
	/* size 0 asks for the size; too small a buffer is ERANGE */
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.a", NULL, 0), 2);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.a", buf, 1), -ERANGE);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.a", buf, 2), 2);
	assert_memory_equal(buf, "22", 2);
	/* flags 0: create or replace */
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.c", "x", 1, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.c", "yy", 2, 0), 0);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.c", buf, sizeof(buf)),
			 2);
	assert_int_equal(tfs_removexattr(f->fs, ino, "user.c"), 0);
	assert_int_equal(tfs_removexattr(f->fs, ino, "user.c"), -ENODATA);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.c", buf, sizeof(buf)),
			 -ENODATA);
	/* a removed one can be created again */
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.c", "z", 1,
				      TFS_XATTR_CREATE), 0);
	/* an empty value is a value */
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.e", "", 0,
				      TFS_XATTR_CREATE), 0);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.e", buf, sizeof(buf)),
			 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.e", "", 0,
				      TFS_XATTR_CREATE), -EEXIST);
}

static void test_fs_tensor_xattrs_take_only_dtypes_and_shapes(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "t");
	char v[32];

	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.dtype", "fp8_e4m3",
				      8, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.dtype", "bf16\n",
				      5, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.shape",
				      "(4096, 1024)", 12, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.dtype", "fp99",
				      4, 0), -EINVAL);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.dtype", "", 0,
				      0), -EINVAL);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.dtype",
				      "fp16\0x", 6, 0), -EINVAL);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.shape", "4,x",
				      3, 0), -EINVAL);
	/* the refused values changed nothing */
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.tensor.dtype", v,
				      sizeof(v)), 5);
	assert_memory_equal(v, "bf16\n", 5);
	/* other user attributes are free-form */
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.note", "fp99",
				      4, 0), 0);
}

static void test_fs_xattr_list_and_limits(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	static uint8_t big[TFS_XATTR_VALUE_MAX + 1], got[TFS_XATTR_VALUE_MAX];
	char list_buf[1024], n255[262], n256[263];
	struct stat st;

	assert_int_equal(tfs_listxattr(f->fs, ino, NULL, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.x", "1", 1, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.yy", "2", 1, 0), 0);
	assert_int_equal(tfs_listxattr(f->fs, ino, NULL, 0), 7 + 8);
	assert_int_equal(tfs_listxattr(f->fs, ino, list_buf, 14), -ERANGE);
	assert_int_equal(tfs_listxattr(f->fs, ino, list_buf, sizeof(list_buf)),
			 15);
	assert_true((!memcmp(list_buf, "user.x\0user.yy\0", 15)) ||
		    (!memcmp(list_buf, "user.yy\0user.x\0", 15)));
	/* name lengths: 255 bytes is the limit, empty is not a name */
	memset(n255, 'n', sizeof(n255));
	memcpy(n255, "user.", 5);
	n255[255] = '\0';
	memcpy(n256, n255, 255);
	n256[255] = 'm';
	n256[256] = '\0';
	assert_int_equal(tfs_setxattr(f->fs, ino, n255, "v", 1, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, n256, "v", 1, 0), -ERANGE);
	assert_int_equal(tfs_setxattr(f->fs, ino, "", "v", 1, 0), -ERANGE);
	/* value size: 64 KiB is the limit */
	memset(big, 0xab, sizeof(big));
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.big", big,
				      TFS_XATTR_VALUE_MAX, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.big", big,
				      TFS_XATTR_VALUE_MAX + 1, 0), -E2BIG);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.big", got,
				      sizeof(got)), TFS_XATTR_VALUE_MAX);
	assert_memory_equal(got, big, TFS_XATTR_VALUE_MAX);
	/* namespaces the file system does not keep */
	assert_int_equal(tfs_setxattr(f->fs, ino, "system.posix_acl_access",
				      "v", 1, 0), -EOPNOTSUPP);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensorfs.extents", "1",
				      1, 0), -EPERM);
	assert_int_equal(tfs_removexattr(f->fs, ino, "user.tensorfs.extents"),
			 -EPERM);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.tensorfs.extents", got,
				      sizeof(got)), 1);
	assert_int_equal(got[0], '0');
	assert_int_equal(tfs_getxattr(f->fs, TFS_ROOT_INO,
				      "user.tensorfs.extents", got,
				      sizeof(got)), -ENODATA);
	/* directories, symlinks and special files have xattrs too */
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "t", 0, 0, &st),
			 0);
	assert_int_equal(tfs_setxattr(f->fs, st.st_ino, "user.l", "s", 1, 0),
			 0);
	assert_int_equal(tfs_setxattr(f->fs, TFS_ROOT_INO, "user.r", "d", 1,
				      0), 0);
	assert_int_equal(tfs_getxattr(f->fs, st.st_ino, "user.l", got, 1), 1);
	reopen(f);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.big", got,
				      sizeof(got)), TFS_XATTR_VALUE_MAX);
	assert_memory_equal(got, big, TFS_XATTR_VALUE_MAX);
	assert_int_equal(tfs_getxattr(f->fs, ino, n255, got, sizeof(got)), 1);
	assert_int_equal(tfs_getxattr(f->fs, TFS_ROOT_INO, "user.r", got, 1),
			 1);
}

static void test_fs_xattrs_survive_crash_after_sync(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_fs *c;
	char buf[16];

	assert_int_equal(tfs_setxattr(f->fs, ino, "user.keep", "k", 1, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.gone", "g", 1, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.changed", "1", 1, 0),
			 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_removexattr(f->fs, ino, "user.gone"), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.changed", "2", 1, 0),
			 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.late", "l", 1, 0), 0);
	c = crash(f);
	assert_int_equal(tfs_getxattr(c, ino, "user.keep", buf, 16), 1);
	assert_int_equal(tfs_getxattr(c, ino, "user.gone", buf, 16), -ENODATA);
	assert_int_equal(tfs_getxattr(c, ino, "user.changed", buf, 16), 1);
	assert_int_equal(buf[0], '2');
	assert_int_equal(tfs_getxattr(c, ino, "user.late", buf, 16), -ENODATA);
}

/* ===== I/O errors ===== */

/* Reopen f->fs with writes failing from device offset 'from' on. */
static void reopen_failing_from(struct fx *f, uint64_t from)
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

static void test_fs_write_back_error_reaches_fsync_and_next_write(void **state)
{
	struct fx *f = *state;
	struct tfs_super sb;
	uint64_t ino, old;
	int copy;

	old = mk(f->fs, TFS_ROOT_INO, "old");
	wr_pat(f->fs, old, 8192, 0, 1);
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(tfs_fs_open(f->path, NULL, &f->fs, f->err,
				     sizeof(f->err)), 0);
	/* the data area fails; metadata (below it) is fine */
	reopen_failing_from(f, sb.data_start * TFS_BLOCK_SIZE);
	ino = mk(f->fs, TFS_ROOT_INO, "f");
	/* the write is taken into the pool; its write-back fails, and
	 * fsync says so, once */
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0), 3);
	assert_int_equal(st_of(f->fs, ino).st_size, 3);
	assert_int_equal(tfs_fsync(f->fs, ino, 0), -EIO);
	assert_int_equal(tfs_fsync(f->fs, ino, 0), 0);
	/* what never reached the device is not shown: zeros */
	assert_zero(f->fs, ino, 3, 0);
	/* an overwrite that fails to reach the device: the next write
	 * reports it, and the old data stays */
	assert_int_equal(tfs_write(f->fs, old, "xyz", 3, 8192), 3);
	tfs_fs_sync(f->fs);
	assert_int_equal(tfs_write(f->fs, old, "xyz", 3, 0), -EIO);
	assert_int_equal(tfs_flush(f->fs, old), 0);
	assert_pat(f->fs, old, 8192, 0, 1);
	/* a close reports it too */
	assert_int_equal(tfs_write(f->fs, ino, "abc", 3, 0), 3);
	tfs_fs_sync(f->fs);
	assert_int_equal(tfs_flush(f->fs, ino), -EIO);
	reopen(f);
	/* without faults it all works again */
	wr(f->fs, ino, "abc", 3, 0);
	assert_int_equal(tfs_fsync(f->fs, ino, 0), 0);
	assert_pat(f->fs, old, 8192, 0, 1);
	assert_fsck_clean(f->fs);
}

static void test_fs_journal_write_error_is_reported_and_state_survives(
	void **state)
{
	struct fx *f = *state;
	uint64_t keep = mk(f->fs, TFS_ROOT_INO, "keep");
	struct stat st;
	char *want;

	wr_pat(f->fs, keep, 10000, 0, 2);
	want = snapshot(f->fs);
	/* everything past the superblocks fails: journal, checkpoints */
	reopen_failing_from(f, 2 * TFS_BLOCK_SIZE);
	mk(f->fs, TFS_ROOT_INO, "lost");
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	/* the error sticks until a commit works */
	assert_int_equal(tfs_fs_sync(f->fs), -EIO);
	assert_int_equal(tfs_fsync(f->fs, keep, 0), -EIO);
	/* the live state is intact */
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "lost", &st), 0);
	assert_int_equal(tfs_fs_close(f->fs), -EIO);
	f->fs = NULL;
	/* the device still has the last committed state */
	assert_int_equal(tfs_fs_open(f->path, NULL, &f->fs, f->err,
				     sizeof(f->err)), 0);
	assert_false(exists(f->fs, TFS_ROOT_INO, "lost"));
	assert_same_tree(f->fs, want);
	assert_fsck_clean(f->fs);
	free(want);
}

/* ===== threads ===== */

struct writer {
	struct tfs_fs *fs;
	uint64_t ino;
	struct model m;
	unsigned int seed;
	int rc;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t s = w->seed * 7919ull + 1;
	uint8_t *buf = malloc(65536), *rb = malloc(65536);

	for (int i = 0; i < 150 && !w->rc && buf && rb; i++) {
		uint64_t off = rnd(&s) % (MiB - 65536);
		size_t len = 1 + rnd(&s) % 65536;
		ssize_t n;

		fill_pat(buf, len, off, w->seed + (unsigned int)i);
		n = tfs_write(w->fs, w->ino, buf, len, off);
		if (n != (ssize_t)len) {
			w->rc = (int)n;
			break;
		}
		memcpy(w->m.b + off, buf, len);
		if (off + len > w->m.size)
			w->m.size = off + len;
		off = rnd(&s) % w->m.size;
		len = (size_t)(w->m.size - off < 65536 ? w->m.size - off
						       : 65536);
		n = tfs_read(w->fs, w->ino, rb, len, off);
		if (n != (ssize_t)len || memcmp(rb, w->m.b + off, len))
			w->rc = -EILSEQ;
		if (i % 40 == 0 && tfs_fsync(w->fs, w->ino, 0))
			w->rc = -EIO;
	}
	free(buf);
	free(rb);
	return NULL;
}

struct churner {
	struct tfs_fs *fs;
	uint64_t dir;
	int rc;
};

static void *churn_main(void *arg)
{
	struct churner *c = arg;
	char name[32];

	for (int i = 0; i < 2000 && !c->rc; i++) {
		struct stat st;
		struct statvfs sv;
		struct ents e;

		snprintf(name, sizeof(name), "c%d", i);
		c->rc = tfs_mknod(c->fs, c->dir, name, 0644, 0, 0, 0, &st);
		if (!c->rc && i % 2)
			c->rc = tfs_unlink(c->fs, c->dir, name);
		if (!c->rc && i % 100 == 0) {
			c->rc = tfs_statfs(c->fs, &sv);
			memset(&e, 0, sizeof(e));
			if (!c->rc)
				c->rc = tfs_readdir(c->fs, c->dir, 0, fill, &e);
			ents_free(&e);
		}
	}
	return NULL;
}

static void test_fs_concurrent_writers_and_namespace_changes(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts o = { 0 };
	enum { W = 4 };
	struct writer w[W];
	struct churner ch;
	pthread_t t[W + 1];
	char name[16];

	assert_int_equal(tfs_fs_close(f->fs), 0);
	o.commit_interval_ms = 10;
	assert_int_equal(tfs_fs_open(f->path, &o, &f->fs, f->err,
				     sizeof(f->err)), 0);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	for (int i = 0; i < W; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		w[i].fs = f->fs;
		w[i].ino = mk(f->fs, TFS_ROOT_INO, name);
		w[i].m.b = calloc(1, MiB);
		w[i].m.size = 0;
		w[i].m.cap = MiB;
		w[i].seed = (unsigned int)i + 1;
		w[i].rc = 0;
		assert_non_null(w[i].m.b);
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]),
				 0);
	}
	ch.fs = f->fs;
	ch.dir = mkd(f->fs, TFS_ROOT_INO, "churn");
	ch.rc = 0;
	assert_int_equal(pthread_create(&t[W], NULL, churn_main, &ch), 0);
	for (int i = 0; i <= W; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(ch.rc, 0);
	for (int i = 0; i < W; i++) {
		assert_int_equal(w[i].rc, 0);
		assert_model(f->fs, w[i].ino, &w[i].m);
	}
	reopen(f);
	for (int i = 0; i < W; i++) {
		assert_model(f->fs, w[i].ino, &w[i].m);
		free(w[i].m.b);
	}
	assert_true(exists(f->fs, ino_of(f->fs, TFS_ROOT_INO, "churn"),
			   "c1998"));
	assert_false(exists(f->fs, ino_of(f->fs, TFS_ROOT_INO, "churn"),
			    "c1999"));
	assert_fsck_clean(f->fs);
}

/* ===== attributes of new inodes ===== */

static void test_fs_setgid_directory_passes_its_group_on(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t d;

	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "g", 02775, 1000, 500,
				   &st), 0);
	d = st.st_ino;
	assert_int_equal(st.st_mode, S_IFDIR | 02775);
	assert_int_equal(tfs_mknod(f->fs, d, "file", 0644, 0, 1001, 600, &st),
			 0);
	assert_int_equal(st.st_gid, 500);
	assert_int_equal(st.st_uid, 1001);
	assert_int_equal(st.st_mode & S_ISGID, 0);
	assert_int_equal(tfs_mkdir(f->fs, d, "sub", 0755, 1001, 600, &st), 0);
	assert_int_equal(st.st_gid, 500);
	assert_int_equal(st.st_mode & S_ISGID, S_ISGID);
	/* without setgid, the caller's group */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "plain", 0644, 0, 1001,
				   600, &st), 0);
	assert_int_equal(st.st_gid, 600);
}

static void test_fs_inode_numbers_are_never_reused(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"), b, c;
	struct stat st;

	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "a"), 0);
	b = mk(f->fs, TFS_ROOT_INO, "b");
	assert_true(b > a);
	assert_int_equal(tfs_getattr(f->fs, a, &st), -ENOENT);
	reopen(f);
	c = mk(f->fs, TFS_ROOT_INO, "c");
	assert_true(c > b);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "c"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* also across a crash */
	assert_true(mk(crash(f), TFS_ROOT_INO, "d") > c);
	assert_int_equal(tfs_getattr(f->fs2, a, &st), -ENOENT);
}

static void test_fs_times_change_on_write_and_create(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d"), ino = mk(f->fs, d, "f");
	struct stat in = { 0 }, st;

	in.st_atim.tv_sec = in.st_mtim.tv_sec = in.st_ctim.tv_sec = 1000;
	assert_int_equal(tfs_setattr(f->fs, d, &in, TFS_SET_ATIME |
			 TFS_SET_MTIME | TFS_SET_CTIME, NULL), 0);
	assert_int_equal(tfs_setattr(f->fs, ino, &in, TFS_SET_ATIME |
			 TFS_SET_MTIME | TFS_SET_CTIME, NULL), 0);
	/* a write changes the file's mtime and ctime, not its atime */
	wr(f->fs, ino, "x", 1, 0);
	st = st_of(f->fs, ino);
	assert_true(st.st_mtim.tv_sec > 1000);
	assert_true(st.st_ctim.tv_sec > 1000);
	assert_int_equal(st.st_atim.tv_sec, 1000);
	assert_int_equal(st_of(f->fs, d).st_mtim.tv_sec, 1000);
	/* a new entry changes the directory's */
	mk(f->fs, d, "g");
	st = st_of(f->fs, d);
	assert_true(st.st_mtim.tv_sec > 1000);
	assert_true(st.st_ctim.tv_sec > 1000);
	/* a link changes the file's ctime only */
	assert_int_equal(tfs_setattr(f->fs, ino, &in, TFS_SET_MTIME |
			 TFS_SET_CTIME, NULL), 0);
	assert_int_equal(tfs_link(f->fs, ino, TFS_ROOT_INO, "l", &st), 0);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_mtim.tv_sec, 1000);
	assert_true(st.st_ctim.tv_sec > 1000);
	/* and they are kept */
	reopen(f);
	st = st_of(f->fs, ino);
	assert_int_equal(st.st_mtim.tv_sec, 1000);
	assert_int_equal(st.st_atim.tv_sec, 1000);
}

/* ===== removed directories, limits, early commits ===== */

static void test_fs_rename_into_removed_directory_is_enoent(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");
	struct stat st;
	int rc;

	/* d is removed while still open (a process's cwd) */
	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	/* like mknod and link into it, a rename into it is ENOENT */
	rc = tfs_rename(f->fs, TFS_ROOT_INO, "file", d, "x", 0);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* whatever happened, the committed state must mount and be sound */
	crash(f);
	assert_fsck_clean(f->fs2);
	assert_fsck_clean(f->fs);
	assert_int_equal(rc, -ENOENT);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "file"), file);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
}

static void test_fs_removed_open_directory_is_freed_after_crash(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct tfs_fs *c;
	struct stat st;

	assert_int_equal(tfs_open(f->fs, d, O_RDONLY), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	c = crash(f);
	assert_int_equal(tfs_getattr(c, d, &st), -ENOENT);
	assert_int_equal(st_of(c, TFS_ROOT_INO).st_nlink, 2);
	assert_fsck_clean(c);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
}

static void test_fs_link_count_limit_is_emlink(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "file");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "links");
	char name[32];
	struct stat st;
	int n = 1, rc;

	for (;;) {
		snprintf(name, sizeof(name), "l%d", n);
		rc = tfs_link(f->fs, file, d, name, &st);
		if (rc)
			break;
		n++;
	}
	assert_int_equal(rc, -EMLINK);
	assert_int_equal(n, 65000);
	assert_int_equal(st_of(f->fs, file).st_nlink, 65000);
	/* one fewer, and there is room for one more */
	assert_int_equal(tfs_unlink(f->fs, d, "l1"), 0);
	assert_int_equal(tfs_link(f->fs, file, d, "again", &st), 0);
	assert_int_equal(st.st_nlink, 65000);
}

static void test_fs_subdirectory_limit_is_emlink(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t other = mkd(f->fs, TFS_ROOT_INO, "other");
	char name[32];
	struct stat st;
	int n = 0, rc;

	for (;;) {
		snprintf(name, sizeof(name), "s%d", n);
		rc = tfs_mkdir(f->fs, d, name, 0755, 0, 0, &st);
		if (rc)
			break;
		n++;
	}
	assert_int_equal(rc, -EMLINK);
	assert_int_equal(st_of(f->fs, d).st_nlink, 65000);
	assert_int_equal(n, 65000 - 2);
	/* a directory cannot move in either; a file can */
	mkd(f->fs, other, "mover");
	assert_int_equal(tfs_rename(f->fs, other, "mover", d, "mover", 0),
			 -EMLINK);
	assert_true(exists(f->fs, other, "mover"));
	assert_int_equal(tfs_mknod(f->fs, d, "file", 0644, 0, 0, 0, &st), 0);
	/* within the directory itself a rename is fine */
	assert_int_equal(tfs_rename(f->fs, d, "s0", d, "renamed", 0), 0);
	assert_int_equal(st_of(f->fs, d).st_nlink, 65000);
}

/* Queue more than 4 MiB of records (the early-commit size of fs.c). */
static void big_burst(struct tfs_fs *fs)
{
	static uint8_t v[60000];
	char name[32];

	memset(v, 0x42, sizeof(v));
	for (int i = 0; i < 80; i++) {
		uint64_t ino;

		snprintf(name, sizeof(name), "x%d", i);
		ino = mk(fs, TFS_ROOT_INO, name);
		assert_int_equal(tfs_setxattr(fs, ino, "user.v", v, sizeof(v),
					      0), 0);
	}
}

/* Open with a commit interval that never comes in a test. */
static void reopen_with_long_interval(struct fx *f)
{
	struct tfs_fs_opts o = { 0 };

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	o.commit_interval_ms = 600000;
	assert_int_equal(tfs_fs_open(f->path, &o, &f->fs, f->err,
				     sizeof(f->err)), 0);
}

/* Is x0 committed?  Polls crash copies for up to two seconds. */
static int burst_committed(struct fx *f)
{
	for (int i = 0; i < 100; i++) {
		usleep(20000);
		if (exists(crash(f), TFS_ROOT_INO, "x0"))
			return 1;
	}
	return 0;
}

static void test_fs_big_transaction_commits_before_the_interval(void **state)
{
	struct fx *f = *state;

	reopen_with_long_interval(f);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	usleep(200000);		/* the commit thread is waiting now */
	big_burst(f->fs);
	assert_true(burst_committed(f));
}

static void test_fs_big_transaction_queued_before_start_commits_early(
	void **state)
{
	struct fx *f = *state;

	/*
	 * The records pass the early-commit size while the commit thread
	 * is not waiting (here: not yet started; in use: busy with the
	 * previous commit, or not yet scheduled).  It must still commit
	 * them early, not only at the next interval.
	 */
	reopen_with_long_interval(f);
	big_burst(f->fs);
	assert_int_equal(tfs_fs_start(f->fs), 0);
	assert_true(burst_committed(f));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
#define TS(name) cmocka_unit_test_setup_teardown(name, setup_small, teardown)
#define TB(name) cmocka_unit_test_setup_teardown(name, setup_big, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_fresh_root_attrs),
		T(test_fs_mknod_lookup_getattr),
		T(test_fs_name_and_inode_errors),
		T(test_fs_dot_and_dotdot_cannot_be_created),
		T(test_fs_mknod_special_files),
		T(test_fs_mkdir_rmdir_link_counts),
		T(test_fs_rmdir_and_unlink_errors),
		T(test_fs_create_in_removed_directory_is_enoent),
		T(test_fs_symlink_readlink),
		T(test_fs_link_counts_and_errors),
		T(test_fs_write_read_unaligned),
		T(test_fs_random_writes_and_truncates_match_a_model),
		T(test_fs_write_past_eof_leaves_a_zero_hole),
		T(test_fs_read_at_and_past_eof),
		T(test_fs_write_and_read_errors),
		T(test_fs_truncate_zeroes_tail),
		T(test_fs_truncate_then_write_beyond_keeps_zeros),
		T(test_fs_truncate_frees_blocks),
		T(test_fs_setattr_changes_and_errors),
		T(test_fs_open_trunc_and_open_errors),
		T(test_fs_unlink_open_file_keeps_data_until_release),
		T(test_fs_unlinked_open_file_is_freed_after_crash),
		T(test_fs_rename_within_and_across_directories),
		T(test_fs_rename_over_existing_file_replaces_it),
		T(test_fs_rename_directory_updates_dotdot_and_links),
		T(test_fs_rename_errors),
		T(test_fs_rename_into_own_subdir_is_einval),
		T(test_fs_rename_exchange),
		T(test_fs_rename_between_hard_links_is_a_noop),
		T(test_fs_readdir_dots_cookies_and_errors),
		TB(test_fs_readdir_100k),
		T(test_fs_statfs_counts),
		T(test_fs_info_and_extent_count),
		TS(test_fs_enospc_then_free_then_write_again),
		TS(test_fs_metadata_full_is_enospc),
		T(test_fs_persists_across_close_and_open),
		T(test_fs_crash_keeps_what_was_synced),
		T(test_fs_crash_without_any_sync_is_the_formatted_state),
		T(test_fs_fsync_makes_changes_durable),
		T(test_fs_commit_thread_commits_on_its_own),
		TS(test_fs_freed_blocks_are_not_reused_before_commit),
		TS(test_fs_freed_blocks_reused_on_a_full_device_after_commit),
		TS(test_fs_journal_full_checkpoints_and_survives_crash),
		T(test_fs_corrupt_checkpoint_fails_open_with_euclean),
		T(test_fs_one_corrupt_superblock_still_opens),
		T(test_fs_open_errors),
		T(test_fs_readonly_open_writes_nothing),
		T(test_fs_no_recover_keeps_orphans),
		T(test_fs_fallocate_unwritten_reads_zero),
		T(test_fs_fallocate_keep_size_and_existing_data),
		T(test_fs_fallocate_errors),
		T(test_fs_punch_hole),
		T(test_fs_punch_hole_in_unwritten_extent),
		T(test_fs_xattr_create_replace_semantics),
		T(test_fs_tensor_xattrs_take_only_dtypes_and_shapes),
		T(test_fs_xattr_list_and_limits),
		T(test_fs_xattrs_survive_crash_after_sync),
		T(test_fs_write_back_error_reaches_fsync_and_next_write),
		T(test_fs_journal_write_error_is_reported_and_state_survives),
		T(test_fs_concurrent_writers_and_namespace_changes),
		T(test_fs_setgid_directory_passes_its_group_on),
		T(test_fs_inode_numbers_are_never_reused),
		T(test_fs_times_change_on_write_and_create),
		T(test_fs_rename_into_removed_directory_is_enoent),
		T(test_fs_removed_open_directory_is_freed_after_crash),
		T(test_fs_link_count_limit_is_emlink),
		TB(test_fs_subdirectory_limit_is_emlink),
		TB(test_fs_big_transaction_commits_before_the_interval),
		TB(test_fs_big_transaction_queued_before_start_commits_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
