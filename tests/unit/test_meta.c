/*
 * test_meta.c: the in-memory tree of lib/meta.h.
 * Description: the inode table, directory entries and their readdir
 * cookies, xattrs, symlinks and extents; that tfs_meta_bytes() is always
 * exactly what tfs_meta_write_records() produces; that the records it
 * writes rebuild the same tree through tfs_meta_apply(); and that apply
 * refuses records that do not fit the tree with -EUCLEAN; and what the
 * tree costs in RAM: tfs_meta_ram() is exact (mallinfo2 agrees), freed
 * inodes and entries are reused, and a million files stay within
 * TFS_META_BYTES_PER_FILE each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <malloc.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "format.h"
#include "meta.h"

static struct tfs_attr attr(uint64_t ino, uint32_t mode)
{
	struct tfs_attr a = { 0 };

	a.ino = ino;
	a.mode = mode;
	a.uid = 1000;
	a.gid = 100;
	a.nlink = S_ISDIR(mode) ? 2 : 1;
	a.mtime.sec = (int64_t)ino;
	a.parent = S_ISDIR(mode) ? TFS_ROOT_INO : 0;
	return a;
}

static struct tfs_meta *new_with_root(void)
{
	struct tfs_meta *m = tfs_meta_new();
	struct tfs_attr a = attr(TFS_ROOT_INO, S_IFDIR | 0755);

	assert_non_null(m);
	assert_non_null(tfs_meta_add(m, &a));
	return m;
}

/* ===== flush sinks for tfs_meta_write_records() ===== */

struct sink {
	struct tfs_buf all; /* everything flushed, in order */
	int calls;
	int fail_at; /* fail the n-th call (1-based), 0 never */
};

static int sink_flush(struct tfs_buf *b, void *arg)
{
	struct sink *s = arg;

	s->calls++;
	if (s->fail_at && s->calls == s->fail_at)
		return -EIO;
	if (tfs_buf_reserve(&s->all, b->len))
		return -ENOMEM;
	memcpy(s->all.p + s->all.len, b->p, b->len);
	s->all.len += b->len;
	b->len = 0;
	return 0;
}

/* Write m's records into s->all (the tail left in b included). */
static int write_all(struct tfs_meta *m, struct sink *s, size_t chunk,
		     uint64_t *nrec)
{
	struct tfs_buf b = { 0 };
	int rc = tfs_meta_write_records(m, &b, chunk, sink_flush, s, nrec);

	if (!rc && b.len) {
		s->fail_at = 0;
		rc = sink_flush(&b, s);
	}
	tfs_buf_release(&b);
	return rc;
}

/* The checkpoint tfs_meta_write_records() would make has exactly
 * tfs_meta_bytes() bytes (header included). */
static void assert_bytes_exact(struct tfs_meta *m)
{
	struct sink s = { 0 };
	uint64_t nrec = 0;

	assert_int_equal(write_all(m, &s, 1 << 16, &nrec), 0);
	assert_int_equal(tfs_meta_bytes(m), TFS_HDR_SIZE + s.all.len);
	tfs_buf_release(&s.all);
}

static void freed_sum(uint64_t pblk, uint64_t len, void *arg)
{
	uint64_t *sum = arg;

	(void)pblk;
	*sum += len;
}

/* ===== inode table ===== */

static void test_meta_new_is_empty(void **state)
{
	struct tfs_meta *m = tfs_meta_new();

	(void)state;
	assert_non_null(m);
	assert_int_equal(tfs_meta_inodes(m), 0);
	assert_int_equal(tfs_meta_used_blocks(m), 0);
	assert_int_equal(tfs_meta_bytes(m), TFS_HDR_SIZE);
	assert_int_equal(tfs_meta_next_ino(m), TFS_ROOT_INO + 1);
	assert_null(tfs_meta_get(m, TFS_ROOT_INO));
	tfs_meta_free(m);
	tfs_meta_free(NULL);
}

static void test_meta_add_get_remove(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_attr a = attr(10, S_IFREG | 0644);
	struct tfs_inode *ip;

	(void)state;
	ip = tfs_meta_add(m, &a);
	assert_non_null(ip);
	assert_ptr_equal(tfs_meta_get(m, 10), ip);
	assert_int_equal(ip->a.mode, S_IFREG | 0644);
	assert_null(ip->dir);
	assert_int_equal(tfs_meta_inodes(m), 2);
	/* numbers above the counter move it on */
	assert_int_equal(tfs_meta_next_ino(m), 11);
	/* a taken number or 0 is refused */
	assert_null(tfs_meta_add(m, &a));
	a.ino = 0;
	assert_null(tfs_meta_add(m, &a));
	assert_int_equal(tfs_meta_inodes(m), 2);
	tfs_meta_remove(m, ip);
	assert_null(tfs_meta_get(m, 10));
	assert_int_equal(tfs_meta_inodes(m), 1);
	/* numbers are not given back */
	assert_int_equal(tfs_meta_next_ino(m), 11);
	tfs_meta_set_next_ino(m, 500);
	assert_int_equal(tfs_meta_next_ino(m), 500);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

static int count_each(struct tfs_inode *ip, void *arg)
{
	uint64_t *n = arg;

	(void)ip;
	(*n)++;
	return 0;
}

static int stop_at_three(struct tfs_inode *ip, void *arg)
{
	uint64_t *n = arg;

	(void)ip;
	return ++(*n) == 3 ? 42 : 0;
}

static void test_meta_table_grows_and_finds_every_inode(void **state)
{
	struct tfs_meta *m = new_with_root();
	uint64_t n = 0;

	(void)state;
	for (uint64_t i = 2; i < 20000; i++) {
		struct tfs_attr a = attr(i * 7, S_IFREG | 0600);

		assert_non_null(tfs_meta_add(m, &a));
	}
	assert_int_equal(tfs_meta_inodes(m), 19999);
	for (uint64_t i = 2; i < 20000; i++) {
		struct tfs_inode *ip = tfs_meta_get(m, i * 7);

		assert_non_null(ip);
		assert_int_equal(ip->a.ino, i * 7);
	}
	assert_null(tfs_meta_get(m, 15));
	assert_int_equal(tfs_meta_each(m, count_each, &n), 0);
	assert_int_equal(n, 19999);
	n = 0;
	assert_int_equal(tfs_meta_each(m, stop_at_three, &n), 42);
	assert_int_equal(n, 3);
	tfs_meta_free(m);
}

/* ===== directories ===== */

static void test_meta_dir_add_lookup_remove(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO), *f;
	struct tfs_attr a = attr(2, S_IFREG | 0644);
	struct tfs_dirent *e;

	(void)state;
	f = tfs_meta_add(m, &a);
	assert_non_null(f);
	assert_int_equal(tfs_dir_add(m, root, "file", 4, 2), 0);
	assert_int_equal(tfs_dir_add(m, root, "file", 4, 2), -EEXIST);
	/* lookups compare the length too */
	assert_null(tfs_dir_lookup(root, "fil", 3));
	assert_null(tfs_dir_lookup(root, "files", 5));
	e = tfs_dir_lookup(root, "file", 4);
	assert_non_null(e);
	assert_int_equal(e->ino, 2);
	assert_int_equal(e->len, 4);
	assert_string_equal(e->name, "file");
	assert_int_equal(tfs_dir_count(root), 1);
	/* a name is bytes: one that is not NUL-terminated in the caller */
	assert_int_equal(tfs_dir_add(m, root, "file2xyz", 5, 2), 0);
	assert_non_null(tfs_dir_lookup(root, "file2", 5));
	assert_int_equal(tfs_dir_count(root), 2);
	/* not a directory */
	assert_int_equal(tfs_dir_add(m, f, "x", 1, 1), -ENOTDIR);
	assert_int_equal(tfs_dir_remove(m, f, "x", 1), -ENOTDIR);
	assert_null(tfs_dir_lookup(f, "x", 1));
	assert_int_equal(tfs_dir_count(f), 0);
	assert_null(tfs_dir_next(f, 0));
	assert_bytes_exact(m);
	assert_int_equal(tfs_dir_remove(m, root, "nope", 4), -ENOENT);
	assert_int_equal(tfs_dir_remove(m, root, "file", 4), 0);
	assert_int_equal(tfs_dir_remove(m, root, "file", 4), -ENOENT);
	assert_null(tfs_dir_lookup(root, "file", 4));
	assert_int_equal(tfs_dir_count(root), 1);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

static void test_meta_dir_many_entries_hash_grows(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);
	char name[32];

	(void)state;
	for (int i = 0; i < 30000; i++) {
		int n = snprintf(name, sizeof(name), "entry-%d", i);

		assert_int_equal(
		    tfs_dir_add(m, root, name, (size_t)n, (uint64_t)i + 100),
		    0);
	}
	assert_int_equal(tfs_dir_count(root), 30000);
	for (int i = 0; i < 30000; i++) {
		int n = snprintf(name, sizeof(name), "entry-%d", i);
		struct tfs_dirent *e = tfs_dir_lookup(root, name, (size_t)n);

		assert_non_null(e);
		assert_int_equal(e->ino, (uint64_t)i + 100);
	}
	tfs_meta_free(m);
}

static void test_meta_readdir_cookies_start_after_dot_entries(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);
	struct tfs_dirent *e;

	(void)state;
	assert_null(tfs_dir_next(root, 0));
	assert_int_equal(tfs_dir_add(m, root, "a", 1, 5), 0);
	assert_int_equal(tfs_dir_add(m, root, "b", 1, 6), 0);
	/* cookies 1 and 2 are "." and ".."; entries start above them */
	e = tfs_dir_next(root, 0);
	assert_non_null(e);
	assert_string_equal(e->name, "a");
	assert_true(e->cookie > 2);
	assert_ptr_equal(tfs_dir_next(root, 2), e);
	e = tfs_dir_next(root, e->cookie);
	assert_non_null(e);
	assert_string_equal(e->name, "b");
	assert_null(tfs_dir_next(root, e->cookie));
	assert_null(tfs_dir_next(root, UINT64_MAX));
	tfs_meta_free(m);
}

#define NENT 3000

static void test_meta_readdir_cookies_survive_removal(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);
	static int seen[2 * NENT], removed[2 * NENT];
	struct tfs_dirent *e;
	uint64_t cookie = 0, last = 0;
	char name[32];
	int steps = 0, added = NENT;

	(void)state;
	memset(seen, 0, sizeof(seen));
	memset(removed, 0, sizeof(removed));
	for (int i = 0; i < NENT; i++) {
		int n = snprintf(name, sizeof(name), "%d", i);

		assert_int_equal(
		    tfs_dir_add(m, root, name, (size_t)n, (uint64_t)i + 10), 0);
	}
	/*
	 * Walk the directory one entry at a time, resuming from the cookie
	 * only (as readdir does between calls), and between steps remove
	 * entries behind and ahead of the walk (enough to make the slot
	 * array compact itself) and add new ones.
	 */
	while ((e = tfs_dir_next(root, cookie))) {
		int i = atoi(e->name);

		assert_true(e->cookie > last);
		last = cookie = e->cookie;
		assert_false(removed[i]);
		seen[i]++;
		steps++;
		if (steps % 3 == 0 && i + 1 < added) {
			/* remove the next one ahead */
			for (int k = i + 1; k < added; k++) {
				int n = snprintf(name, sizeof(name), "%d", k);

				if (removed[k])
					continue;
				assert_int_equal(
				    tfs_dir_remove(m, root, name, (size_t)n),
				    0);
				removed[k] = 1;
				break;
			}
		}
		if (steps % 2 == 0 && i >= 1) {
			/* remove one behind (already seen) */
			int n = snprintf(name, sizeof(name), "%d", i - 1);

			if (!removed[i - 1]) {
				assert_int_equal(
				    tfs_dir_remove(m, root, name, (size_t)n),
				    0);
				removed[i - 1] = 1;
			}
		}
		if (steps % 5 == 0 && added < 2 * NENT) {
			int n = snprintf(name, sizeof(name), "%d", added);

			assert_int_equal(tfs_dir_add(m, root, name, (size_t)n,
						     (uint64_t)added + 10),
					 0);
			added++;
		}
	}
	/* every entry that was there all along was seen exactly once, and
	 * entries added during the walk were seen too (they come last) */
	for (int i = 0; i < added; i++) {
		if (removed[i] && !seen[i])
			continue;
		assert_int_equal(seen[i], 1);
	}
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

static void test_meta_dir_rename_keeps_cookie_and_accounts(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO), *f;
	struct tfs_attr a = attr(2, S_IFREG | 0644);
	struct tfs_dirent *e;
	char name[300];
	uint64_t cookie;

	(void)state;
	f = tfs_meta_add(m, &a);
	assert_non_null(f);
	assert_int_equal(tfs_dir_add(m, root, "a", 1, 2), 0);
	assert_int_equal(tfs_dir_add(m, root, "b", 1, 2), 0);
	assert_int_equal(tfs_dir_add(m, root, "c", 1, 2), 0);
	cookie = tfs_dir_lookup(root, "b", 1)->cookie;
	/* in place, to a longer name, many times: tombstones get reindexed */
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(name, sizeof(name), "b-%d", i);
		int o = i ? snprintf(name + 100, 100, "b-%d", i - 1) : 1;

		assert_int_equal(tfs_dir_rename(m, root, i ? name + 100 : "b",
						(size_t)o, name, (size_t)n),
				 0);
		assert_bytes_exact(m);
	}
	e = tfs_dir_lookup(root, "b-999", 5);
	assert_non_null(e);
	assert_int_equal(e->cookie, cookie);
	assert_int_equal(e->ino, 2);
	assert_null(tfs_dir_lookup(root, "b", 1));
	assert_int_equal(tfs_dir_count(root), 3);
	/* readdir order: a, b-999, c */
	e = tfs_dir_next(root, 0);
	assert_string_equal(e->name, "a");
	e = tfs_dir_next(root, e->cookie);
	assert_string_equal(e->name, "b-999");
	e = tfs_dir_next(root, e->cookie);
	assert_string_equal(e->name, "c");
	assert_null(tfs_dir_next(root, e->cookie));
	/* errors leave the directory as it was */
	assert_int_equal(tfs_dir_rename(m, root, "nope", 4, "x", 1), -ENOENT);
	assert_int_equal(tfs_dir_rename(m, root, "a", 1, "c", 1), -EEXIST);
	memset(name, 'n', 256);
	assert_int_equal(tfs_dir_rename(m, root, "a", 1, name, 256),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_dir_rename(m, f, "a", 1, "x", 1), -ENOTDIR);
	assert_non_null(tfs_dir_lookup(root, "a", 1));
	assert_non_null(tfs_dir_lookup(root, "c", 1));
	assert_int_equal(tfs_dir_count(root), 3);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

static void test_meta_readdir_after_mass_removal_compacts(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);
	struct tfs_dirent *e;
	uint64_t cookie = 0, n = 0;
	char name[32];

	(void)state;
	for (int i = 0; i < 1000; i++) {
		int k = snprintf(name, sizeof(name), "f%d", i);

		assert_int_equal(tfs_dir_add(m, root, name, (size_t)k, 7), 0);
	}
	for (int i = 0; i < 1000; i++) {
		int k = snprintf(name, sizeof(name), "f%d", i);

		if (i % 10)
			assert_int_equal(
			    tfs_dir_remove(m, root, name, (size_t)k), 0);
	}
	assert_int_equal(tfs_dir_count(root), 100);
	while ((e = tfs_dir_next(root, cookie))) {
		int i = atoi(e->name + 1);

		assert_int_equal(i % 10, 0);
		cookie = e->cookie;
		n++;
	}
	assert_int_equal(n, 100);
	/* a cookie from before the removal still resumes in order */
	e = tfs_dir_next(root, 3 + 55);
	assert_non_null(e);
	assert_string_equal(e->name, "f60");
	tfs_meta_free(m);
}

/* ===== extents ===== */

static void test_meta_map_counts_used_blocks_and_bytes(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_attr a = attr(2, S_IFREG | 0644);
	struct tfs_inode *ip = tfs_meta_add(m, &a);
	uint64_t freed = 0;

	(void)state;
	assert_non_null(ip);
	assert_int_equal(tfs_meta_map(m, ip, 0, 1000, 10, 0, freed_sum, &freed),
			 0);
	assert_int_equal(tfs_meta_used_blocks(m), 10);
	assert_int_equal(freed, 0);
	assert_int_equal(tfs_meta_map(m, ip, 20, 2000, 5, TFS_EXT_UNWRITTEN,
				      freed_sum, &freed),
			 0);
	assert_int_equal(tfs_meta_used_blocks(m), 15);
	assert_bytes_exact(m);
	/* remapping blocks 5..9 elsewhere releases the old ones */
	assert_int_equal(tfs_meta_map(m, ip, 5, 3000, 5, 0, freed_sum, &freed),
			 0);
	assert_int_equal(freed, 5);
	assert_int_equal(tfs_meta_used_blocks(m), 15);
	assert_bytes_exact(m);
	freed = 0;
	assert_int_equal(tfs_meta_unmap(m, ip, 3, 20, freed_sum, &freed), 0);
	assert_int_equal(freed, 2 + 5 + 3); /* 3..4, 5..9, 20..22 */
	assert_int_equal(tfs_meta_used_blocks(m), 5);
	assert_bytes_exact(m);
	freed = 0;
	assert_int_equal(
	    tfs_meta_unmap(m, ip, 0, UINT64_MAX, freed_sum, &freed), 0);
	assert_int_equal(freed, 3 + 2); /* 0..2, 23..24 */
	assert_int_equal(tfs_meta_used_blocks(m), 0);
	assert_bytes_exact(m);
	/* removing an inode takes its blocks out of the count */
	assert_int_equal(tfs_meta_map(m, ip, 0, 9000, 8, 0, NULL, NULL), 0);
	assert_int_equal(tfs_meta_used_blocks(m), 8);
	tfs_meta_remove(m, ip);
	assert_int_equal(tfs_meta_used_blocks(m), 0);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

/* ===== xattrs and symlinks ===== */

static void test_meta_xattr_set_replace_delete(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);
	struct tfs_xattr *x;

	(void)state;
	assert_null(tfs_xattr_find(root, "user.a"));
	assert_int_equal(tfs_xattr_set(m, root, "user.a", 6, "one", 3), 0);
	assert_int_equal(tfs_xattr_set(m, root, "user.b", 6, "", 0), 0);
	assert_bytes_exact(m);
	x = tfs_xattr_find(root, "user.a");
	assert_non_null(x);
	assert_int_equal(x->vlen, 3);
	assert_memory_equal(x->value, "one", 3);
	assert_int_equal(x->nlen, 6);
	/* set again replaces: still one xattr of that name */
	assert_int_equal(tfs_xattr_set(m, root, "user.a", 6, "three", 5), 0);
	assert_int_equal(root->nxattrs, 2);
	x = tfs_xattr_find(root, "user.a");
	assert_int_equal(x->vlen, 5);
	assert_memory_equal(x->value, "three", 5);
	assert_bytes_exact(m);
	x = tfs_xattr_find(root, "user.b");
	assert_non_null(x);
	assert_int_equal(x->vlen, 0);
	/* names are compared whole */
	assert_null(tfs_xattr_find(root, "user."));
	assert_int_equal(tfs_xattr_del(m, root, "user.", 5), -ENODATA);
	assert_int_equal(tfs_xattr_del(m, root, "user.a", 6), 0);
	assert_int_equal(tfs_xattr_del(m, root, "user.a", 6), -ENODATA);
	assert_null(tfs_xattr_find(root, "user.a"));
	assert_non_null(tfs_xattr_find(root, "user.b"));
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

static void test_meta_symlink_target_replaced(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_attr a = attr(3, S_IFLNK | 0777);
	struct tfs_inode *ip = tfs_meta_add(m, &a);

	(void)state;
	assert_non_null(ip);
	assert_int_equal(tfs_meta_set_symlink(m, ip, "/some/where", 11), 0);
	assert_string_equal(ip->symlink, "/some/where");
	assert_bytes_exact(m);
	assert_int_equal(tfs_meta_set_symlink(m, ip, "abcdef", 3), 0);
	assert_string_equal(ip->symlink, "abc");
	assert_bytes_exact(m);
	tfs_meta_remove(m, ip);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

/* ===== records ===== */

/* A tree with one of everything. */
static struct tfs_meta *sample_tree(void)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO), *d, *f, *l;
	struct tfs_attr a;
	static uint8_t big[TFS_XATTR_VALUE_MAX];
	char name[64];

	memset(big, 0xab, sizeof(big));
	a = attr(2, S_IFDIR | 0700);
	d = tfs_meta_add(m, &a);
	assert_int_equal(tfs_dir_add(m, root, "dir", 3, 2), 0);
	root->a.nlink = 3;
	a = attr(3, S_IFREG | 0644);
	a.size = 5 * 4096 + 17;
	a.nlink = 2;
	f = tfs_meta_add(m, &a);
	assert_int_equal(tfs_dir_add(m, root, "file", 4, 3), 0);
	assert_int_equal(tfs_dir_add(m, d, "hardlink", 8, 3), 0);
	assert_int_equal(tfs_meta_map(m, f, 0, 5000, 2, 0, NULL, NULL), 0);
	assert_int_equal(
	    tfs_meta_map(m, f, 4, 6000, 2, TFS_EXT_UNWRITTEN, NULL, NULL), 0);
	assert_int_equal(tfs_xattr_set(m, f, "user.big", 8, big, sizeof(big)),
			 0);
	assert_int_equal(tfs_xattr_set(m, f, "user.small", 10, "v", 1), 0);
	a = attr(4, S_IFLNK | 0777);
	l = tfs_meta_add(m, &a);
	assert_int_equal(tfs_meta_set_symlink(m, l, "../file", 7), 0);
	assert_int_equal(tfs_dir_add(m, d, "link", 4, 4), 0);
	a = attr(5, S_IFIFO | 0600);
	a.rdev = 0;
	assert_non_null(tfs_meta_add(m, &a));
	assert_int_equal(tfs_dir_add(m, d, "fifo", 4, 5), 0);
	/* many files with extents, to make several flushes */
	for (uint64_t i = 100; i < 2100; i++) {
		struct tfs_inode *ip;
		int n = snprintf(name, sizeof(name), "many-%llu",
				 (unsigned long long)i);

		a = attr(i, S_IFREG | 0640);
		a.size = 4096;
		ip = tfs_meta_add(m, &a);
		assert_non_null(ip);
		assert_int_equal(
		    tfs_meta_map(m, ip, 0, 10000 + i, 1, 0, NULL, NULL), 0);
		assert_int_equal(tfs_dir_add(m, d, name, (size_t)n, i), 0);
	}
	/* an unlinked (orphan) inode is part of the tree too */
	a = attr(9000, S_IFREG | 0600);
	a.nlink = 0;
	assert_non_null(tfs_meta_add(m, &a));
	tfs_meta_set_next_ino(m, 12345);
	return m;
}

static int apply_stream(struct tfs_meta *m, const uint8_t *p, size_t len,
			uint64_t *n)
{
	struct tfs_rec r;
	size_t pos = 0;
	int rc;

	*n = 0;
	while ((rc = tfs_rec_next(p, len, &pos, &r)) == 1) {
		rc = tfs_meta_apply(m, &r, NULL, NULL);
		if (rc)
			return rc;
		(*n)++;
	}
	return rc;
}

struct cmp {
	struct tfs_meta *other;
};

/* Every inode of the first tree equals its twin in the other. */
static int cmp_inode(struct tfs_inode *ip, void *arg)
{
	struct cmp *c = arg;
	struct tfs_inode *jp = tfs_meta_get(c->other, ip->a.ino);
	struct tfs_dirent *e = NULL;
	uint64_t cookie = 0;

	assert_non_null(jp);
	assert_memory_equal(&ip->a.ino, &jp->a.ino, sizeof(ip->a.ino));
	assert_int_equal(ip->a.mode, jp->a.mode);
	assert_int_equal(ip->a.uid, jp->a.uid);
	assert_int_equal(ip->a.gid, jp->a.gid);
	assert_int_equal(ip->a.nlink, jp->a.nlink);
	assert_int_equal(ip->a.size, jp->a.size);
	assert_true(ip->a.mtime.sec == jp->a.mtime.sec);
	assert_int_equal(ip->a.rdev, jp->a.rdev);
	assert_int_equal(ip->a.parent, jp->a.parent);
	assert_int_equal(ip->map.n, jp->map.n);
	for (size_t i = 0; i < ip->map.n; i++) {
		assert_int_equal(ip->map.ext[i].lblk, jp->map.ext[i].lblk);
		assert_int_equal(ip->map.ext[i].pblk, jp->map.ext[i].pblk);
		assert_int_equal(ip->map.ext[i].len, jp->map.ext[i].len);
		assert_int_equal(ip->map.ext[i].flags, jp->map.ext[i].flags);
	}
	assert_int_equal(ip->nxattrs, jp->nxattrs);
	for (size_t i = 0; i < ip->nxattrs; i++) {
		struct tfs_xattr *x = tfs_xattr_find(jp, ip->xattrs[i].name);

		assert_non_null(x);
		assert_int_equal(x->vlen, ip->xattrs[i].vlen);
		assert_memory_equal(x->value, ip->xattrs[i].value, x->vlen);
	}
	if (ip->symlink)
		assert_string_equal(ip->symlink, jp->symlink);
	else
		assert_null(jp->symlink);
	assert_int_equal(tfs_dir_count(ip), tfs_dir_count(jp));
	while ((e = tfs_dir_next(ip, cookie))) {
		struct tfs_dirent *f = tfs_dir_lookup(jp, e->name, e->len);

		cookie = e->cookie;
		assert_non_null(f);
		assert_int_equal(f->ino, e->ino);
	}
	return 0;
}

static void test_meta_write_records_then_apply_rebuilds_tree(void **state)
{
	struct tfs_meta *m = sample_tree(), *n = tfs_meta_new();
	struct sink s = { 0 };
	struct cmp c;
	uint64_t nrec = 0, applied = 0;

	(void)state;
	assert_non_null(n);
	assert_bytes_exact(m);
	/* a small chunk: many flushes, records larger than the chunk */
	assert_int_equal(write_all(m, &s, 4096, &nrec), 0);
	assert_true(s.calls > 10);
	assert_int_equal(TFS_HDR_SIZE + s.all.len, tfs_meta_bytes(m));
	assert_int_equal(apply_stream(n, s.all.p, s.all.len, &applied), 0);
	assert_int_equal(applied, nrec);
	assert_int_equal(tfs_meta_inodes(n), tfs_meta_inodes(m));
	assert_int_equal(tfs_meta_used_blocks(n), tfs_meta_used_blocks(m));
	assert_int_equal(tfs_meta_bytes(n), tfs_meta_bytes(m));
	/* the counter is in the checkpoint header, not in the records */
	assert_true(tfs_meta_next_ino(n) <= tfs_meta_next_ino(m));
	c.other = n;
	tfs_meta_each(m, cmp_inode, &c);
	c.other = m;
	tfs_meta_each(n, cmp_inode, &c);
	tfs_buf_release(&s.all);
	tfs_meta_free(m);
	tfs_meta_free(n);
}

static void test_meta_write_records_stops_at_flush_error(void **state)
{
	struct tfs_meta *m = sample_tree();
	struct tfs_buf b = { 0 };
	struct sink s = { 0 };
	uint64_t nrec = 0;

	(void)state;
	s.fail_at = 3;
	assert_int_equal(
	    tfs_meta_write_records(m, &b, 4096, sink_flush, &s, &nrec), -EIO);
	assert_int_equal(s.calls, 3);
	tfs_buf_release(&b);
	tfs_buf_release(&s.all);
	tfs_meta_free(m);
}

/* Apply one record built by put() to m. */
static int apply_one(struct tfs_meta *m, struct tfs_buf *b)
{
	struct tfs_rec r;
	size_t pos = 0;
	int rc = tfs_rec_next(b->p, b->len, &pos, &r);

	assert_int_equal(rc, 1);
	rc = tfs_meta_apply(m, &r, NULL, NULL);
	b->len = 0;
	return rc;
}

static void test_meta_apply_builds_and_changes(void **state)
{
	struct tfs_meta *m = tfs_meta_new();
	struct tfs_buf b = { 0 };
	struct tfs_attr a = attr(TFS_ROOT_INO, S_IFDIR | 0755);
	struct tfs_inode *root, *f;
	uint64_t freed = 0;
	struct tfs_rec r;
	size_t pos;

	(void)state;
	tfs_rec_put_inode(&b, &a);
	assert_int_equal(apply_one(m, &b), 0);
	root = tfs_meta_get(m, TFS_ROOT_INO);
	assert_non_null(root);
	assert_non_null(root->dir);
	a = attr(2, S_IFREG | 0644);
	tfs_rec_put_inode(&b, &a);
	assert_int_equal(apply_one(m, &b), 0);
	tfs_rec_put_link(&b, 1, 2, "f", 1);
	assert_int_equal(apply_one(m, &b), 0);
	assert_non_null(tfs_dir_lookup(root, "f", 1));
	/* INODE on an existing inode sets all its attributes */
	a.size = 999;
	a.mode = S_IFREG | 0600;
	tfs_rec_put_inode(&b, &a);
	assert_int_equal(apply_one(m, &b), 0);
	f = tfs_meta_get(m, 2);
	assert_int_equal(f->a.size, 999);
	assert_int_equal(f->a.mode, S_IFREG | 0600);
	tfs_rec_put_extent(&b, 2, 0, 100, 4, 0);
	assert_int_equal(apply_one(m, &b), 0);
	assert_int_equal(tfs_meta_used_blocks(m), 4);
	tfs_rec_put_punch(&b, 2, 1, 2);
	assert_int_equal(apply_one(m, &b), 0);
	assert_int_equal(tfs_meta_used_blocks(m), 2);
	tfs_rec_put_xattr(&b, 2, "user.x", 6, "val", 3);
	assert_int_equal(apply_one(m, &b), 0);
	assert_non_null(tfs_xattr_find(f, "user.x"));
	tfs_rec_put_xattr_del(&b, 2, "user.x", 6);
	assert_int_equal(apply_one(m, &b), 0);
	assert_null(tfs_xattr_find(f, "user.x"));
	tfs_rec_put_unlink(&b, 1, "f", 1);
	assert_int_equal(apply_one(m, &b), 0);
	assert_null(tfs_dir_lookup(root, "f", 1));
	/* FREE hands the file's extents to 'freed' */
	tfs_rec_put_free(&b, 2);
	pos = 0;
	assert_int_equal(tfs_rec_next(b.p, b.len, &pos, &r), 1);
	assert_int_equal(tfs_meta_apply(m, &r, freed_sum, &freed), 0);
	b.len = 0;
	assert_int_equal(freed, 2);
	assert_null(tfs_meta_get(m, 2));
	assert_int_equal(tfs_meta_used_blocks(m), 0);
	assert_bytes_exact(m);
	tfs_buf_release(&b);
	tfs_meta_free(m);
}

static void test_meta_apply_rejects_records_that_do_not_fit(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_buf b = { 0 };
	struct tfs_attr a;
	struct tfs_inode *root = tfs_meta_get(m, TFS_ROOT_INO);

	(void)state;
	a = attr(2, S_IFREG | 0644);
	assert_non_null(tfs_meta_add(m, &a));
	a = attr(3, S_IFDIR | 0755);
	assert_non_null(tfs_meta_add(m, &a));
	a = attr(4, S_IFLNK | 0777);
	assert_non_null(tfs_meta_add(m, &a));
	assert_int_equal(tfs_dir_add(m, root, "f", 1, 2), 0);
	assert_int_equal(tfs_dir_add(m, tfs_meta_get(m, 3), "inner", 5, 2), 0);

	/* records about an inode that does not exist */
	tfs_rec_put_free(&b, 77);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_extent(&b, 77, 0, 1, 1, 0);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_xattr(&b, 77, "user.a", 6, "", 0);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_link(&b, 77, 2, "x", 1); /* no such dir */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_link(&b, 1, 77, "x", 1); /* no such child */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_unlink(&b, 77, "f", 1);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	/* records that do not fit the inode's type */
	tfs_rec_put_link(&b, 2, 4, "x", 1); /* into a file */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_link(&b, 3, 1, "root", 4); /* naming the root */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_link(&b, 1, 4, "f", 1); /* name taken */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_unlink(&b, 1, "nope", 4); /* no such entry */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_extent(&b, 3, 0, 1, 1, 0); /* on a directory */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_extent(&b, 4, 0, 1, 1, 0); /* on a symlink */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_extent(&b, 2, UINT64_MAX - 1, 1, 5, 0); /* wraps */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_punch(&b, 3, 0, 1);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_symlink(&b, 2, "t", 1); /* not a symlink */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_xattr_del(&b, 2, "user.none", 9);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_free(&b, TFS_ROOT_INO);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	tfs_rec_put_free(&b, 3); /* not empty */
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	a = attr(2, S_IFDIR | 0755); /* type change */
	tfs_rec_put_inode(&b, &a);
	assert_int_equal(apply_one(m, &b), -EUCLEAN);
	/* nothing of it changed the tree */
	assert_int_equal(tfs_meta_inodes(m), 4);
	assert_int_equal(tfs_dir_count(root), 1);
	assert_int_equal(tfs_meta_used_blocks(m), 0);
	assert_true(S_ISREG(tfs_meta_get(m, 2)->a.mode));
	assert_bytes_exact(m);
	tfs_buf_release(&b);
	tfs_meta_free(m);
}

static void test_meta_remove_directory_accounts_its_entries(void **state)
{
	struct tfs_meta *m = new_with_root();
	struct tfs_attr a = attr(2, S_IFDIR | 0755);
	struct tfs_inode *d = tfs_meta_add(m, &a);

	(void)state;
	assert_int_equal(tfs_dir_add(m, d, "a", 1, 5), 0);
	assert_int_equal(tfs_dir_add(m, d, "bb", 2, 6), 0);
	assert_int_equal(tfs_dir_remove(m, d, "a", 1), 0);
	assert_int_equal(tfs_xattr_set(m, d, "user.q", 6, "zz", 2), 0);
	tfs_meta_remove(m, d);
	assert_int_equal(tfs_meta_bytes(m), TFS_HDR_SIZE + TFS_REC_SIZE_INODE);
	assert_bytes_exact(m);
	tfs_meta_free(m);
}

/* ===== RAM ===== */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Heap bytes in use, as glibc counts them (0 under ASan's allocator). */
static uint64_t heap_used(void)
{
#ifdef UNDER_ASAN
	return 0;
#else
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#endif
}

/* n regular files of one extent under root, with names of 32 bytes */
#define FILE_NAME "param_%07llu_tensor.swp.0000000"
static void add_files(struct tfs_meta *m, struct tfs_inode *root, uint64_t n,
		      uint64_t first_ino)
{
	char name[64];

	for (uint64_t i = 0; i < n; i++) {
		struct tfs_attr a = attr(first_ino + i, S_IFREG | 0644);
		struct tfs_inode *ip = tfs_meta_add(m, &a);
		int len = snprintf(name, sizeof(name), FILE_NAME,
				   (unsigned long long)i);

		assert_non_null(ip);
		assert_int_equal(len, 32);
		assert_int_equal(
		    tfs_meta_map(m, ip, 0, 1000 + 4 * i, 4, 0, NULL, NULL), 0);
		assert_int_equal(tfs_dir_add(m, root, name, (size_t)len, a.ino),
				 0);
	}
}

static void test_meta_ram_per_file_is_bounded(void **state)
{
	const uint64_t n = 1000000;
	uint64_t heap0, ram0, ram, heap, again;
	struct tfs_meta *m;
	struct tfs_inode *root;
	char name[64];

	(void)state;
	heap0 = heap_used();
	m = new_with_root();
	root = tfs_meta_get(m, TFS_ROOT_INO);
	ram0 = tfs_meta_ram(m);
	add_files(m, root, n, 100);
	ram = tfs_meta_ram(m) - ram0;
	print_message("meta: %llu files of one extent and a 32-byte name: "
		      "%.1f bytes each (TFS_META_BYTES_PER_FILE %u)\n",
		      (unsigned long long)n, (double)ram / (double)n,
		      TFS_META_BYTES_PER_FILE);
	heap = heap_used() - heap0;
	assert_true(ram <= n * TFS_META_BYTES_PER_FILE);
	/* the counter is what malloc holds for the tree: within 0.1% (the
	 * big tables are mmapped, which glibc counts in whole pages) */
	print_message("meta: tfs_meta_ram %llu, mallinfo2 %llu\n",
		      (unsigned long long)tfs_meta_ram(m),
		      (unsigned long long)heap);
	if (heap)
		assert_true(heap - tfs_meta_ram(m) < heap / 1000 ||
			    tfs_meta_ram(m) - heap < heap / 1000);
	/* removing them all and adding them again reuses the pool: the
	 * tree holds no more than at its peak */
	for (uint64_t i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), FILE_NAME,
				   (unsigned long long)i);

		assert_int_equal(tfs_dir_remove(m, root, name, (size_t)len), 0);
		tfs_meta_remove(m, tfs_meta_get(m, 100 + i));
	}
	assert_int_equal(tfs_meta_inodes(m), 1);
	assert_true(tfs_meta_ram(m) <= ram0 + ram);
	add_files(m, root, n, 100 + n);
	again = tfs_meta_ram(m) - ram0;
	assert_true(again <= ram + ram / 20);
	tfs_meta_free(m);
}

static int remove_odd(struct tfs_inode *ip, void *arg)
{
	struct tfs_meta *m = arg;

	if (ip->a.ino != TFS_ROOT_INO && (ip->a.ino & 1))
		tfs_meta_remove(m, ip);
	return 0;
}

static int count_inode(struct tfs_inode *ip, void *arg)
{
	(void)ip;
	++*(uint64_t *)arg;
	return 0;
}

static void test_meta_each_may_remove_the_inode_it_visits(void **state)
{
	struct tfs_meta *m = new_with_root();
	uint64_t seen = 0;

	(void)state;
	for (uint64_t ino = 2; ino < 5002; ino++) {
		struct tfs_attr a = attr(ino, S_IFREG | 0600);

		assert_non_null(tfs_meta_add(m, &a));
	}
	assert_int_equal(tfs_meta_each(m, remove_odd, m), 0);
	assert_int_equal(tfs_meta_inodes(m), 1 + 2500);
	assert_int_equal(tfs_meta_each(m, count_inode, &seen), 0);
	assert_int_equal(seen, 1 + 2500);
	for (uint64_t ino = 2; ino < 5002; ino++)
		if (ino & 1)
			assert_null(tfs_meta_get(m, ino));
		else
			assert_non_null(tfs_meta_get(m, ino));
	tfs_meta_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta_new_is_empty),
		cmocka_unit_test(test_meta_add_get_remove),
		cmocka_unit_test(test_meta_table_grows_and_finds_every_inode),
		cmocka_unit_test(test_meta_dir_add_lookup_remove),
		cmocka_unit_test(test_meta_dir_many_entries_hash_grows),
		cmocka_unit_test(
		    test_meta_readdir_cookies_start_after_dot_entries),
		cmocka_unit_test(test_meta_readdir_cookies_survive_removal),
		cmocka_unit_test(test_meta_readdir_after_mass_removal_compacts),
		cmocka_unit_test(test_meta_map_counts_used_blocks_and_bytes),
		cmocka_unit_test(test_meta_xattr_set_replace_delete),
		cmocka_unit_test(test_meta_symlink_target_replaced),
		cmocka_unit_test(
		    test_meta_write_records_then_apply_rebuilds_tree),
		cmocka_unit_test(test_meta_write_records_stops_at_flush_error),
		cmocka_unit_test(test_meta_apply_builds_and_changes),
		cmocka_unit_test(
		    test_meta_apply_rejects_records_that_do_not_fit),
		cmocka_unit_test(
		    test_meta_remove_directory_accounts_its_entries),
		cmocka_unit_test(test_meta_ram_per_file_is_bounded),
		cmocka_unit_test(test_meta_each_may_remove_the_inode_it_visits),
		cmocka_unit_test(
		    test_meta_dir_rename_keeps_cookie_and_accounts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
