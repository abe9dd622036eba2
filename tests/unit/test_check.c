/*
 * test_check.c: the consistency check of lib/check.h (tensorfs-fsck).
 * Description: a healthy file system, fresh or recovered after a crash,
 * has no findings; each kind of damage, made in memory through
 * tfs_fs_meta()/tfs_meta_get(), is reported with a line that names it,
 * repaired with TFS_CHECK_REPAIR, written by the next sync, and a second
 * check then finds nothing.  Extents that overlap, written to the device
 * that way, make loading fail; tfs_check_extents() names their inodes.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "check.h"
#include "fs.h"
#include "fs_internal.h"
#include "meta.h"
#include "testimg.h"

struct fx {
	char path[64], copy[64];
	struct tfs_fs *fs, *fs2;
	char err[512];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || img_make(f->path, 128 * MiB))
		return -1;
	if (img_format(f->path, 128 * MiB) ||
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err))) {
		unlink(f->path);
		return -1;
	}
	*state = f;
	return 0;
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

static void reopen(struct fx *f)
{
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	if (tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)))
		fail_msg("reopen: %s", f->err);
}

static struct tfs_fs *crash(struct fx *f)
{
	tfs_fs_close(f->fs2);
	f->fs2 = NULL;
	if (f->copy[0])
		unlink(f->copy);
	assert_int_equal(img_copy(f->path, f->copy), 0);
	if (tfs_fs_open(f->copy, NULL, &f->fs2, f->err, sizeof(f->err)))
		fail_msg("open after crash: %s", f->err);
	return f->fs2;
}

/* Run the check; returns what it printed (caller frees). */
static char *check(struct tfs_fs *fs, int flags, struct tfs_check_result *res)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	assert_int_equal(tfs_check(fs, flags, out, res), 0);
	fclose(out);
	return text;
}

static void assert_clean(struct tfs_fs *fs)
{
	struct tfs_check_result res;
	char *text = check(fs, 0, &res);

	if (res.errors)
		fail_msg("%llu errors:\n%s", (unsigned long long)res.errors,
			 text);
	assert_string_equal(text, "");
	free(text);
}

static void assert_has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in:\n%s", what, text);
}

static uint64_t mk(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	assert_int_equal(tfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &st),
			 0);
	return st.st_ino;
}

static uint64_t mkd(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	assert_int_equal(tfs_mkdir(fs, dir, name, 0755, 0, 0, &st), 0);
	return st.st_ino;
}

static void wr(struct tfs_fs *fs, uint64_t ino, size_t len, uint64_t off)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	fill_pat(b, len, off, 1);
	assert_int_equal(tfs_write(fs, ino, b, len, off, NULL), (ssize_t)len);
	free(b);
}

static struct tfs_inode *inode(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip = tfs_meta_get(tfs_fs_meta(fs), ino);

	assert_non_null(ip);
	return ip;
}

static uint64_t ino_of(struct tfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	assert_int_equal(tfs_lookup(fs, dir, name, &st), 0);
	return st.st_ino;
}

static struct stat st_of(struct tfs_fs *fs, uint64_t ino)
{
	struct stat st;

	assert_int_equal(tfs_getattr(fs, ino, &st), 0);
	return st;
}

/* A tree with a bit of everything. */
static void populate(struct tfs_fs *fs)
{
	uint64_t d = mkd(fs, TFS_ROOT_INO, "d"), e = mkd(fs, d, "e");
	uint64_t a = mk(fs, d, "f"), b = mk(fs, e, "g");
	struct stat st;

	wr(fs, a, 10000, 0);
	wr(fs, b, 4096, 0);
	wr(fs, b, 4096, 65536); /* two extents */
	assert_int_equal(tfs_link(fs, a, TFS_ROOT_INO, "hard", &st), 0);
	assert_int_equal(tfs_symlink(fs, e, "l", "../f", 0, 0, &st), 0);
	assert_int_equal(
	    tfs_mknod(fs, TFS_ROOT_INO, "p", S_IFIFO | 0600, 0, 0, 0, &st), 0);
	assert_int_equal(tfs_fallocate(fs, a, 0, MiB, MiB), 0);
}

/* Protects J9. */
static void test_check_clean_fs_has_no_errors(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	char *text;

	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 0);
	assert_int_equal(res.dirs, 1);
	assert_int_equal(res.files, 0);
	free(text);
	populate(f->fs);
	text = check(f->fs, 0, &res);
	assert_string_equal(text, "");
	assert_int_equal(res.errors, 0);
	assert_int_equal(res.repaired, 0);
	assert_int_equal(res.orphans, 0);
	assert_int_equal(res.files, 2);
	assert_int_equal(res.dirs, 3);
	assert_int_equal(res.symlinks, 1);
	assert_int_equal(res.others, 1);
	assert_int_equal(res.extents, 2 + 2);
	free(text);
	reopen(f);
	assert_clean(f->fs);
}

static void test_check_repair_of_a_clean_fs_changes_nothing(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	struct tfs_fs_info i0, i1;
	char *text;

	populate(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	tfs_fs_get_info(f->fs, &i0);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.errors, 0);
	assert_int_equal(res.repaired, 0);
	free(text);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	tfs_fs_get_info(f->fs, &i1);
	assert_int_equal(i1.generation, i0.generation); /* no checkpoint */
}

static void
test_check_open_unlinked_file_is_an_orphan_not_an_error(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	char *text;

	wr(f->fs, ino, 8192, 0);
	assert_int_equal(tfs_open(f->fs, ino, O_RDONLY), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 0);
	assert_int_equal(res.orphans, 1);
	free(text);
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_clean(f->fs);
}

/* Protects J6. */
static void test_check_counts_freed_uncommitted_blocks_as_free(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");

	wr(f->fs, ino, MiB, 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	/* freed, but not reusable until the next commit: still free space,
	 * as tfs_statfs() and tfs_fs_get_info() count it */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_clean(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_clean(f->fs);
}

/* Open f->path with opts; the error text in f->err. */
static int open_with(struct fx *f, const struct tfs_fs_opts *o)
{
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	return tfs_fs_open(f->path, o, &f->fs, f->err, sizeof(f->err));
}

/* Protects J12: counts above the extents are set right at mount; counts
 * below them refuse the mount, and fsck -y sets them. */
static void test_check_shared_block_counts(void **state)
{
	struct fx *f = *state;
	struct tfs_fs_opts repair = { .repair_refs = 1 };
	struct tfs_check_result res;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a");
	uint64_t b = mk(f->fs, TFS_ROOT_INO, "b");
	uint64_t c = mk(f->fs, TFS_ROOT_INO, "c"), pblk;
	char *text;

	wr(f->fs, a, 3 * 4096, 0);
	assert_int_equal(tfs_copy_range(f->fs, a, 0, b, 0, 3 * 4096, NULL),
			 3 * 4096);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	pblk = inode(f->fs, a)->map.ext[0].pblk;
	assert_int_equal(inode(f->fs, b)->map.ext[0].pblk, pblk);
	assert_int_equal(
	    tfs_refs_get(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, NULL), 2);
	assert_clean(f->fs);

	/* one too many: found at mount, set right, said by the check */
	assert_int_equal(
	    tfs_refs_set(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, 3, 3), 0);
	tfs_fs_mark_changed(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	reopen(f);
	assert_int_equal(
	    tfs_refs_get(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, NULL), 2);
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "1 shared-block counts disagreed");
	free(text);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	reopen(f);
	assert_clean(f->fs);

	/* one too few: a third file on the blocks, the count left at 2 */
	assert_int_equal(tfs_copy_range(f->fs, a, 0, c, 0, 3 * 4096, NULL),
			 3 * 4096);
	assert_int_equal(
	    tfs_refs_set(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, 3, 2), 0);
	tfs_fs_mark_changed(f->fs);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(open_with(f, NULL), -EUCLEAN);
	assert_has(f->err, "run tensorfs-fsck -y");
	assert_int_equal(open_with(f, &repair), 0);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.errors, 1);
	assert_int_equal(res.repaired, 1);
	assert_has(text, "set to them");
	free(text);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	reopen(f);
	assert_int_equal(
	    tfs_refs_get(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, NULL), 3);
	assert_clean(f->fs);
	/* two of the three gone: the last one owns the blocks alone */
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "a"), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "b"), 0);
	assert_int_equal(
	    tfs_refs_get(tfs_meta_refs(tfs_fs_meta(f->fs)), pblk, NULL), 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	reopen(f);
	assert_clean(f->fs);
}

/* Protects J9c. */
static void test_check_repairs_link_count(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	uint64_t ino;
	char *text;

	populate(f->fs);
	ino = ino_of(f->fs, TFS_ROOT_INO, "hard");
	assert_int_equal(st_of(f->fs, ino).st_nlink, 2);
	inode(f->fs, ino)->a.nlink = 5;
	/* found, not repaired */
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_int_equal(res.repaired, 0);
	assert_has(text, "link count 5, should be 2");
	free(text);
	assert_int_equal(inode(f->fs, ino)->a.nlink, 5);
	/* repaired */
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.errors, 1);
	assert_int_equal(res.repaired, 1);
	free(text);
	assert_int_equal(st_of(f->fs, ino).st_nlink, 2);
	assert_clean(f->fs);
	/* the repair reaches the device with the next sync */
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(st_of(crash(f), ino).st_nlink, 2);
	assert_clean(f->fs2);
	reopen(f);
	assert_int_equal(st_of(f->fs, ino).st_nlink, 2);
	assert_clean(f->fs);
}

/* Protects J9c. */
static void test_check_repairs_directory_and_root_link_counts(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	uint64_t d;
	char *text;

	populate(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "d");
	inode(f->fs, d)->a.nlink = 2; /* has one subdirectory */
	inode(f->fs, TFS_ROOT_INO)->a.nlink = 7;
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.errors, 2);
	assert_int_equal(res.repaired, 2);
	assert_has(text, "link count 2, should be 3");
	assert_has(text, "root directory: link count 7, should be 3");
	free(text);
	assert_int_equal(st_of(f->fs, d).st_nlink, 3);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	assert_clean(f->fs);
	reopen(f);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	assert_clean(f->fs);
}

/* Protects J9a. */
static void test_check_removes_entry_naming_a_missing_inode(void **state)
{
	struct fx *f = *state;
	struct tfs_meta *m = tfs_fs_meta(f->fs);
	struct tfs_check_result res;
	struct stat st;
	char *text;

	populate(f->fs);
	assert_int_equal(
	    tfs_dir_add(m, inode(f->fs, TFS_ROOT_INO), "ghost", 5, 999999), 0);
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "'ghost'");
	assert_has(text, "missing inode 999999");
	free(text);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.repaired, 1);
	free(text);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "ghost", &st),
			 -ENOENT);
	assert_clean(f->fs);
	reopen(f);
	assert_clean(f->fs);
}

/* Protects J9d. */
static void test_check_moves_unreachable_file_to_lost_found(void **state)
{
	struct fx *f = *state;
	struct tfs_meta *m = tfs_fs_meta(f->fs);
	struct tfs_check_result res;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "lonely"), lf;
	char *text, name[32];
	uint8_t buf[16];

	wr(f->fs, ino, 5000, 0);
	/* its only entry disappears, its link count stays 1 */
	assert_int_equal(
	    tfs_dir_remove(m, inode(f->fs, TFS_ROOT_INO), "lonely", 6), 0);
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "not reachable from the root");
	free(text);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.repaired, 1);
	free(text);
	lf = ino_of(f->fs, TFS_ROOT_INO, "lost+found");
	assert_true(S_ISDIR(st_of(f->fs, lf).st_mode));
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
	assert_int_equal(ino_of(f->fs, lf, name), ino);
	assert_int_equal(st_of(f->fs, ino).st_nlink, 1);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	assert_clean(f->fs);
	reopen(f);
	lf = ino_of(f->fs, TFS_ROOT_INO, "lost+found");
	assert_int_equal(ino_of(f->fs, lf, name), ino);
	assert_int_equal(tfs_read(f->fs, ino, buf, sizeof(buf), 0),
			 sizeof(buf));
	assert_clean(f->fs);
}

/* Protects J9d. */
static void test_check_moves_unreachable_directory_to_lost_found(void **state)
{
	struct fx *f = *state;
	struct tfs_meta *m = tfs_fs_meta(f->fs);
	struct tfs_check_result res;
	uint64_t d, e, lf;
	char *text, name[32];

	populate(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "d");
	e = ino_of(f->fs, d, "e");
	assert_int_equal(tfs_dir_remove(m, inode(f->fs, TFS_ROOT_INO), "d", 1),
			 0);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_true(res.errors >= 1);
	assert_true(res.repaired >= 1);
	assert_has(text, "(directory) is not reachable");
	free(text);
	lf = ino_of(f->fs, TFS_ROOT_INO, "lost+found");
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)d);
	assert_int_equal(ino_of(f->fs, lf, name), d);
	assert_int_equal(inode(f->fs, d)->a.parent, lf);
	assert_int_equal(ino_of(f->fs, d, "e"), e);
	assert_int_equal(st_of(f->fs, lf).st_nlink, 3);
	/* one pass repaired everything */
	assert_clean(f->fs);
	reopen(f);
	assert_clean(f->fs);
}

/* Protects J9b. */
static void test_check_repairs_wrong_dotdot(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	uint64_t d, e;
	char *text;

	populate(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "d");
	e = ino_of(f->fs, d, "e");
	inode(f->fs, e)->a.parent = TFS_ROOT_INO;
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "'..' is 1");
	free(text);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_int_equal(res.repaired, 1);
	free(text);
	assert_int_equal(inode(f->fs, e)->a.parent, d);
	assert_clean(f->fs);
	reopen(f);
	assert_int_equal(inode(f->fs, e)->a.parent, d);
	assert_clean(f->fs);
}

/* Protects J9b. */
static void test_check_removes_second_entry_of_a_directory(void **state)
{
	struct fx *f = *state;
	struct tfs_meta *m = tfs_fs_meta(f->fs);
	struct tfs_check_result res;
	struct stat st;
	uint64_t d;
	char *text;

	populate(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "d");
	/* a hard link to a directory, made behind the file system's back */
	assert_int_equal(
	    tfs_dir_add(m, inode(f->fs, TFS_ROOT_INO), "alias", 5, d), 0);
	text = check(f->fs, 0, &res);
	assert_has(text, "second entry 'alias'");
	free(text);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_true(res.repaired >= 1);
	free(text);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "alias", &st),
			 -ENOENT);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "d"), d);
	/* the root has two subdirectories again: d and nothing else */
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	assert_clean(f->fs);
	reopen(f);
	assert_clean(f->fs);
}

/* Protects J9a. */
static void test_check_removes_entry_naming_the_root(void **state)
{
	struct fx *f = *state;
	struct tfs_meta *m = tfs_fs_meta(f->fs);
	struct tfs_check_result res;
	struct stat st;
	uint64_t d;
	char *text;

	populate(f->fs);
	d = ino_of(f->fs, TFS_ROOT_INO, "d");
	assert_int_equal(
	    tfs_dir_add(m, inode(f->fs, d), "loop", 4, TFS_ROOT_INO), 0);
	text = check(f->fs, 0, &res);
	assert_has(text, "names the root directory");
	free(text);
	text = check(f->fs, TFS_CHECK_REPAIR, &res);
	assert_true(res.repaired >= 1);
	free(text);
	assert_int_equal(tfs_lookup(f->fs, d, "loop", &st), -ENOENT);
	/* d has one subdirectory, e */
	assert_int_equal(st_of(f->fs, d).st_nlink, 3);
	assert_clean(f->fs);
	reopen(f);
	assert_clean(f->fs);
}

/* Protects J9e. */
static void test_check_reports_extent_map_out_of_order(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	struct tfs_inode *ip;
	struct tfs_extent t;
	uint64_t g;
	char *text;

	populate(f->fs);
	g = ino_of(f->fs, ino_of(f->fs, ino_of(f->fs, TFS_ROOT_INO, "d"), "e"),
		   "g");
	ip = inode(f->fs, g);
	assert_int_equal(ip->map.n, 2);
	t = ip->map.ext[0];
	ip->map.ext[0] = ip->map.ext[1];
	ip->map.ext[1] = t;
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "extent map out of order");
	free(text);
	ip->map.ext[1] = ip->map.ext[0];
	ip->map.ext[0] = t;
	assert_clean(f->fs);
}

/* Protects J9f. */
static void test_check_reports_symlink_without_target(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	struct tfs_inode *ip;
	char *text, *saved;

	populate(f->fs);
	ip = inode(f->fs,
		   ino_of(f->fs,
			  ino_of(f->fs, ino_of(f->fs, TFS_ROOT_INO, "d"), "e"),
			  "l"));
	saved = ip->symlink;
	ip->symlink = NULL;
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "has no target");
	free(text);
	ip->symlink = saved;
	assert_clean(f->fs);
}

/* Protects J6. */
static void test_check_reports_leaked_space(void **state)
{
	struct fx *f = *state;
	struct tfs_alloc *a = tfs_fs_alloc(f->fs);
	struct tfs_check_result res;
	uint64_t start, count = 10;
	char *text;

	populate(f->fs);
	/* blocks taken from the free space that no file maps */
	assert_int_equal(tfs_alloc_get(a, UINT64_MAX, &start, &count), 0);
	text = check(f->fs, 0, &res);
	assert_int_equal(res.errors, 1);
	assert_has(text, "space does not add up");
	free(text);
	assert_int_equal(tfs_alloc_put(a, start, count), 0);
	assert_clean(f->fs);
}

static void test_check_verbose_lists_files_with_extents(void **state)
{
	struct fx *f = *state;
	struct tfs_check_result res;
	char *text;

	populate(f->fs);
	text = check(f->fs, TFS_CHECK_VERBOSE, &res);
	assert_int_equal(res.errors, 0);
	assert_has(text, "files:\n");
	assert_has(text, "  /d/f  size 2097152  extents 2\n");
	assert_has(text, "  /d/e/g  size 69632  extents 2\n");
	assert_has(text, "  /hard  size 2097152");
	free(text);
}

/* Protects J2, J9. */
static void test_check_after_crash_recovery_is_clean(void **state)
{
	struct fx *f = *state;
	uint64_t ino;

	populate(f->fs);
	ino = mk(f->fs, TFS_ROOT_INO, "open-unlinked");
	wr(f->fs, ino, 100000, 0);
	assert_int_equal(tfs_open(f->fs, ino, O_RDWR), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "open-unlinked"), 0);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "d", TFS_ROOT_INO, "d2", 0), 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	mk(f->fs, TFS_ROOT_INO, "unsynced");
	assert_clean(crash(f));
	assert_int_equal(tfs_release(f->fs, ino), 0);
	assert_clean(f->fs);
}

/* Run tfs_check_extents(); returns what it printed (caller frees). */
static char *check_extents(struct fx *f, int *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	*n = tfs_check_extents(f->path, out, f->err, sizeof(f->err));
	fclose(out);
	return text;
}

static void test_check_extents_of_a_good_fs_finds_nothing(void **state)
{
	struct fx *f = *state;
	char *text;
	int n;

	populate(f->fs);
	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	text = check_extents(f, &n);
	assert_int_equal(n, 0);
	assert_string_equal(text, "");
	free(text);
}

/* Protects J6. */
static void test_check_extents_names_inodes_sharing_blocks(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"),
		 b = mk(f->fs, TFS_ROOT_INO, "b");
	struct tfs_inode *ia, *ib;
	char *text, want[160];
	int n;

	wr(f->fs, a, 8192, 0);
	wr(f->fs, b, 4096, 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	ia = inode(f->fs, a);
	ib = inode(f->fs, b);
	assert_int_equal(ia->map.n, 1);
	assert_int_equal(ib->map.n, 1);
	/* b's block becomes a's second block: what the checkpoint holds */
	ib->map.ext[0].pblk = ia->map.ext[0].pblk + 1;
	tfs_fs_mark_changed(f->fs);
	tfs_fs_close(f->fs);
	f->fs = NULL;

	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)),
	    -EUCLEAN);
	f->fs = NULL;
	text = check_extents(f, &n);
	assert_int_equal(n, 1);
	snprintf(want, sizeof(want),
		 "inodes %llu and %llu both map device "
		 "block",
		 (unsigned long long)a, (unsigned long long)b);
	assert_has(text, want);
	free(text);
}

/* Protects J9e. */
static void test_check_extents_reports_extent_outside_data_area(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a");
	char *text, want[80];
	int n;

	wr(f->fs, a, 4096, 0);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	inode(f->fs, a)->map.ext[0].pblk = 1; /* the superblock */
	tfs_fs_mark_changed(f->fs);
	tfs_fs_close(f->fs);
	f->fs = NULL;

	assert_int_equal(
	    tfs_fs_open(f->path, NULL, &f->fs, f->err, sizeof(f->err)),
	    -EUCLEAN);
	f->fs = NULL;
	text = check_extents(f, &n);
	assert_int_equal(n, 1);
	snprintf(want, sizeof(want), "inode %llu: ", (unsigned long long)a);
	assert_has(text, want);
	assert_has(text, "outside the data area");
	free(text);
}

/* Protects J2, J8. */
static void test_check_extents_of_a_damaged_checkpoint_fails(void **state)
{
	struct fx *f = *state;
	static struct tfs_super sb, older;
	char *text;
	int n, copy = 0;

	assert_int_equal(tfs_fs_close(f->fs), 0);
	f->fs = NULL;
	assert_int_equal(img_super(f->path, &sb, &copy), 0);
	assert_int_equal(img_super_copy(f->path, copy ^ 1, &older), 0);
	assert_int_equal(img_flip(f->path, img_ckpt_off(&sb, 8)), 0);
	/* J8: and the older copy's, or load falls back to it */
	assert_int_equal(img_flip(f->path, img_ckpt_off(&older, 8)), 0);
	text = check_extents(f, &n);
	assert_int_equal(n, -EUCLEAN);
	assert_has(f->err, "checkpoint");
	assert_string_equal(text, "");
	free(text);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_check_clean_fs_has_no_errors),
		T(test_check_repair_of_a_clean_fs_changes_nothing),
		T(test_check_open_unlinked_file_is_an_orphan_not_an_error),
		T(test_check_counts_freed_uncommitted_blocks_as_free),
		T(test_check_shared_block_counts),
		T(test_check_repairs_link_count),
		T(test_check_repairs_directory_and_root_link_counts),
		T(test_check_removes_entry_naming_a_missing_inode),
		T(test_check_moves_unreachable_file_to_lost_found),
		T(test_check_moves_unreachable_directory_to_lost_found),
		T(test_check_repairs_wrong_dotdot),
		T(test_check_removes_second_entry_of_a_directory),
		T(test_check_removes_entry_naming_the_root),
		T(test_check_reports_extent_map_out_of_order),
		T(test_check_reports_symlink_without_target),
		T(test_check_reports_leaked_space),
		T(test_check_verbose_lists_files_with_extents),
		T(test_check_after_crash_recovery_is_clean),
		T(test_check_extents_of_a_good_fs_finds_nothing),
		T(test_check_extents_names_inodes_sharing_blocks),
		T(test_check_extents_reports_extent_outside_data_area),
		T(test_check_extents_of_a_damaged_checkpoint_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
