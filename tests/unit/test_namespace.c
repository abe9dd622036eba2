/*
 * test_namespace.c: names, directories and attributes (lib/namespace.c).
 * Description: every operation of the namespace (lookup, mknod, mkdir,
 * symlink, link, unlink, rmdir, rename, readdir, setattr, statfs) and the
 * errno POSIX specifies for its failures; link counts and their limits;
 * attributes of new inodes.
 */

#include "fs_internal.h"
#include "testfs.h"

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
	assert_int_equal(e.v[1].ino, TFS_ROOT_INO); /* the root's ".." */
	ents_free(&e);
	assert_int_equal(tfs_fs_replayed(f->fs), 0);
}

static void test_fs_mknod_lookup_getattr(void **state)
{
	struct fx *f = *state;
	struct stat st, st2;

	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "f", 0640, 0, 1001, 1002, &st), 0);
	assert_true(st.st_ino > TFS_ROOT_INO);
	assert_int_equal(st.st_mode, S_IFREG | 0640); /* no type: regular */
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
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "f", 0644, 0, 0, 0, &st2), -EEXIST);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "f", 0755, 0, 0, &st2),
			 -EEXIST);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "f", "x", 0, 0, &st2),
			 -EEXIST);
	/* the out stat may be NULL */
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "g", 0644, 0, 0, 0, NULL), 0);
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
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, n255, 0644, 0, 0, 0, &st), 0);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, n255, &st), 0);
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, n256, 0644, 0, 0, 0, &st),
	    -ENAMETOOLONG);
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, n256, 0755, 0, 0, &st),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, n256, &st),
			 -ENAMETOOLONG);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, n256), -ENAMETOOLONG);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO, n256, 0),
	    -ENAMETOOLONG);
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
	assert_int_equal(tfs_write(f->fs, 9999, buf, 1, 0, NULL), -ENOENT);
	assert_int_equal(tfs_fallocate(f->fs, 9999, 0, 0, 1), -ENOENT);
	assert_int_equal(tfs_opendir(f->fs, 9999), -ENOENT);
	assert_int_equal(tfs_readdir(f->fs, 9999, 0, fill, NULL), -ENOENT);
	assert_int_equal(tfs_link(f->fs, 9999, TFS_ROOT_INO, "l", &st),
			 -ENOENT);
	assert_int_equal(tfs_setxattr(f->fs, 9999, "user.a", "", 0, 0),
			 -ENOENT);
	assert_int_equal(tfs_getxattr(f->fs, 9999, "user.a", buf, 16), -ENOENT);
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

/* What open_by_handle_at() needs: a file handle's directory is found
 * by looking up "." and ".." (FUSE sends them with export support). */
static void test_fs_lookup_of_dot_and_dotdot(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t e = mkd(f->fs, d, "e");
	uint64_t file = mk(f->fs, d, "file");
	struct stat st;

	assert_int_equal(tfs_lookup(f->fs, e, ".", &st), 0);
	assert_int_equal(st.st_ino, e);
	assert_int_equal(tfs_lookup(f->fs, e, "..", &st), 0);
	assert_int_equal(st.st_ino, d);
	assert_int_equal(tfs_lookup(f->fs, d, "..", &st), 0);
	assert_int_equal(st.st_ino, TFS_ROOT_INO);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "..", &st), 0);
	assert_int_equal(st.st_ino, TFS_ROOT_INO);
	assert_int_equal(tfs_lookup(f->fs, file, ".", &st), -ENOTDIR);
	/* moved: ".." follows */
	assert_int_equal(tfs_rename(f->fs, d, "e", TFS_ROOT_INO, "e", 0), 0);
	assert_int_equal(tfs_lookup(f->fs, e, "..", &st), 0);
	assert_int_equal(st.st_ino, TFS_ROOT_INO);
}

static void test_fs_mknod_special_files(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t fifo, chr, sock, reg;

	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "fifo", S_IFIFO | 0600,
				   0, 0, 0, &st),
			 0);
	fifo = st.st_ino;
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "chr", S_IFCHR | 0600,
				   makedev(1, 3), 0, 0, &st),
			 0);
	chr = st.st_ino;
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "blk", S_IFBLK | 0600,
				   makedev(8, 1), 0, 0, &st),
			 0);
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "sock", S_IFSOCK | 0600,
				   0, 0, 0, &st),
			 0);
	sock = st.st_ino;
	assert_true(S_ISSOCK(st.st_mode));
	/* a regular file has no device number */
	assert_int_equal(tfs_mknod(f->fs, TFS_ROOT_INO, "reg", S_IFREG | 0600,
				   makedev(1, 3), 0, 0, &st),
			 0);
	reg = st.st_ino;
	assert_int_equal(st.st_rdev, 0);
	/* directories and symlinks have their own calls */
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "d", S_IFDIR | 0755, 0, 0, 0, &st),
	    -EINVAL);
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "l", S_IFLNK | 0777, 0, 0, 0, &st),
	    -EINVAL);
	assert_false(exists(f->fs, TFS_ROOT_INO, "d"));
	reopen(f);
	assert_true(S_ISFIFO(st_of(f->fs, fifo).st_mode));
	assert_int_equal(st_of(f->fs, chr).st_rdev, makedev(1, 3));
	assert_true(S_ISSOCK(st_of(f->fs, sock).st_mode));
	assert_int_equal(st_of(f->fs, reg).st_rdev, 0);
	assert_int_equal(
	    st_of(f->fs, ino_of(f->fs, TFS_ROOT_INO, "blk")).st_rdev,
	    makedev(8, 1));
}

static void test_fs_mkdir_rmdir_link_counts(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t d, e;

	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, "d", S_IFREG | 0750,
				   1000, 1000, &st),
			 0);
	d = st.st_ino;
	/* mode has only the permission bits: always a directory */
	assert_int_equal(st.st_mode, S_IFDIR | 0750);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(st_of(f->fs, TFS_ROOT_INO).st_nlink, 3);
	e = mkd(f->fs, d, "e");
	assert_int_equal(st_of(f->fs, d).st_nlink, 3);
	assert_int_equal(st_of(f->fs, e).st_nlink, 2);
	mk(f->fs, d, "file"); /* files do not count */
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
				     1000, 1000, &st),
			 0);
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
	assert_int_equal(
	    tfs_symlink(f->fs, TFS_ROOT_INO, "empty", "", 0, 0, &st), -ENOENT);
	memset(t4095, 'p', TFS_SYMLINK_MAX);
	t4095[TFS_SYMLINK_MAX] = '\0';
	memset(t4096, 'q', TFS_SYMLINK_MAX + 1);
	t4096[TFS_SYMLINK_MAX + 1] = '\0';
	assert_int_equal(
	    tfs_symlink(f->fs, TFS_ROOT_INO, "long", t4095, 0, 0, &st), 0);
	assert_int_equal(st.st_size, TFS_SYMLINK_MAX);
	assert_int_equal(
	    tfs_symlink(f->fs, TFS_ROOT_INO, "toolong", t4096, 0, 0, &st),
	    -ENAMETOOLONG);
	assert_false(exists(f->fs, TFS_ROOT_INO, "toolong"));
	reopen(f);
	assert_int_equal(tfs_readlink(f->fs, l, buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "target/path", 11);
	assert_int_equal(tfs_readlink(f->fs,
				      ino_of(f->fs, TFS_ROOT_INO, "long"), buf,
				      sizeof(buf)),
			 TFS_SYMLINK_MAX);
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

/* ===== setattr ===== */

static void test_fs_setattr_changes_and_errors(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct stat in = { 0 }, out, st;
	struct timespec t0;

	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "t", 0, 0, &st),
			 0);
	in.st_mode = S_IFDIR | 04711; /* the type bits are ignored */
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
	assert_int_equal(
	    tfs_setattr(f->fs, file, &in,
			TFS_SET_ATIME | TFS_SET_MTIME | TFS_SET_CTIME, &out),
	    0);
	assert_int_equal(out.st_atim.tv_sec, 1000);
	assert_int_equal(out.st_atim.tv_nsec, 111);
	assert_int_equal(out.st_mtim.tv_sec, 2000);
	assert_int_equal(out.st_mtim.tv_nsec, 222);
	assert_int_equal(out.st_ctim.tv_sec, 3000);
	assert_int_equal(out.st_ctim.tv_nsec, 333);
	/* _NOW means now; a change without SET_CTIME sets ctime to now */
	clock_gettime(CLOCK_REALTIME, &t0);
	assert_int_equal(tfs_setattr(f->fs, file, &in,
				     TFS_SET_ATIME_NOW | TFS_SET_MTIME_NOW,
				     &out),
			 0);
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
				     &in, TFS_SET_SIZE, NULL),
			 -EINVAL);
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
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO, "b", 0), 0);
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
	assert_int_equal(
	    tfs_rename(f->fs, d2, "y", TFS_ROOT_INO, "z", TFS_RENAME_NOREPLACE),
	    0);
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
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a"),
		 b = mk(f->fs, TFS_ROOT_INO, "b");
	uint64_t c = mk(f->fs, TFS_ROOT_INO, "c");
	struct stat st;

	wr_pat(f->fs, a, 8192, 0, 1);
	wr_pat(f->fs, b, 8192, 0, 2);
	wr_pat(f->fs, c, 8192, 0, 3);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO, "b", 0), 0);
	assert_int_equal(ino_of(f->fs, TFS_ROOT_INO, "b"), a);
	assert_int_equal(tfs_getattr(f->fs, b, &st), -ENOENT);
	assert_int_equal(bfree(f->fs), free0 - 4);
	/* a replaced file that is open lives until its release */
	assert_int_equal(tfs_open(f->fs, c, O_RDONLY), 0);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "b", TFS_ROOT_INO, "c", 0), 0);
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
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "top", TFS_ROOT_INO, "top2", 0), 0);
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
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "nope", TFS_ROOT_INO, "x", 0),
	    -ENOENT);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "d", TFS_ROOT_INO, "file", 0),
	    -ENOTDIR);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO, "d", 0),
	    -EISDIR);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "d", TFS_ROOT_INO, "full", 0),
	    -ENOTEMPTY);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "other", TFS_RENAME_NOREPLACE),
			 -EEXIST);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "missing", TFS_RENAME_EXCHANGE),
			 -ENOENT);
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO,
				    "other",
				    TFS_RENAME_NOREPLACE | TFS_RENAME_EXCHANGE),
			 -EINVAL);
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "file", TFS_ROOT_INO, "other", 0x8),
	    -EINVAL);
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
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", c, "x", TFS_RENAME_NOREPLACE),
	    -EINVAL);
	assert_int_equal(tfs_rename(f->fs, a, "b", c, "x", 0), -EINVAL);
	/* exchanging a directory with one inside it, either way round */
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", b, "c", TFS_RENAME_EXCHANGE),
	    -EINVAL);
	assert_int_equal(
	    tfs_rename(f->fs, b, "c", TFS_ROOT_INO, "a", TFS_RENAME_EXCHANGE),
	    -EINVAL);
	assert_same_tree(f->fs, before);
	/* a name onto itself is fine and changes nothing */
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO, "a", 0), 0);
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
	uint64_t p = mk(f->fs, TFS_ROOT_INO, "p"),
		 q = mk(f->fs, TFS_ROOT_INO, "q");
	char *want;

	wr_pat(f->fs, file, 5000, 0, 1);
	mk(f->fs, dir, "inner");
	assert_int_equal(st_of(f->fs, d1).st_nlink, 2);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 3);
	/* a file and a directory in different parents trade places */
	assert_int_equal(
	    tfs_rename(f->fs, d1, "file", d2, "dir", TFS_RENAME_EXCHANGE), 0);
	assert_int_equal(ino_of(f->fs, d1, "file"), dir);
	assert_int_equal(ino_of(f->fs, d2, "dir"), file);
	assert_int_equal(dotdot(f->fs, dir), d1);
	assert_int_equal(st_of(f->fs, d1).st_nlink, 3);
	assert_int_equal(st_of(f->fs, d2).st_nlink, 2);
	assert_true(exists(f->fs, dir, "inner"));
	assert_pat(f->fs, file, 5000, 0, 1);
	/* two files in one directory */
	assert_int_equal(tfs_rename(f->fs, TFS_ROOT_INO, "p", TFS_ROOT_INO, "q",
				    TFS_RENAME_EXCHANGE),
			 0);
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
	assert_int_equal(
	    tfs_rename(f->fs, TFS_ROOT_INO, "a", TFS_ROOT_INO, "b", 0), 0);
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
		assert_int_equal(
		    tfs_readdir(f->fs, d, e.v[i].cookie, fill, &part), 0);
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
	enum {
		N = 100000
	};
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
				seen[next_odd] = 2; /* never to be listed */
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

/* ===== statfs and a full checkpoint slot ===== */

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
	/* J10: the checkpoint's blocks are used; those the next one needs
	 * (its size plus 64 KiB) are free but not available */
	assert_int_equal(sv.f_bfree, info.data_blocks - info.ckpt_blocks);
	assert_true(sv.f_bavail < sv.f_bfree);
	assert_true(sv.f_bavail >= sv.f_bfree - 3 * 17);
	assert_int_equal(sv.f_namemax, 255);
	assert_true(sv.f_ffree > 1000);
	assert_int_equal(sv.f_files, sv.f_ffree + 1);
	ino = mk(f->fs, TFS_ROOT_INO, "f");
	wr_pat(f->fs, ino, MiB, 0, 1);
	assert_int_equal(tfs_statfs(f->fs, &sv2), 0);
	assert_int_equal(sv2.f_bfree, sv.f_bfree - 256);
	assert_true(sv2.f_ffree < sv.f_ffree);
	/* inodes are what the available blocks hold at 156 bytes each */
	assert_int_equal(sv2.f_ffree, sv2.f_bavail * 4096 / 156);
	assert_int_equal(sv2.f_files, sv2.f_ffree + 2);
}

static void test_fs_metadata_full_is_enospc(void **state)
{
	struct fx *f = *state;
	char name[256];
	struct stat st;
	int n = 0, rc;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "keep");
	static char big[16384];

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
	/* the name that did not fit (J10: room is counted in blocks, so
	 * entries as long as it) */
	assert_int_equal(tfs_mkdir(f->fs, TFS_ROOT_INO, name, 0755, 0, 0, &st),
			 -ENOSPC);
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, name, "t", 0, 0, &st),
			 -ENOSPC);
	assert_int_equal(
	    tfs_setxattr(f->fs, file, "user.big", big, sizeof(big), 0),
	    -ENOSPC);
	assert_false(exists(f->fs, TFS_ROOT_INO, name));
	/* what was made is committed and reloads */
	reopen(f);
	/* deleting gives the room back (a hundred entries: some blocks) */
	for (int i = 0; i < 100; i++) {
		snprintf(name + 240, 16, "%06d", i);
		assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, name), 0);
	}
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "x", 0644, 0, 0, 0, &st), 0);
	reopen(f);
	assert_true(exists(f->fs, TFS_ROOT_INO, "x"));
	snprintf(name + 240, 16, "%06d", n - 1);
	assert_true(exists(f->fs, TFS_ROOT_INO, name));
	assert_fsck_clean(f->fs);
}

/* ===== attributes of new inodes ===== */

static void test_fs_setgid_directory_passes_its_group_on(void **state)
{
	struct fx *f = *state;
	struct stat st;
	uint64_t d;

	assert_int_equal(
	    tfs_mkdir(f->fs, TFS_ROOT_INO, "g", 02775, 1000, 500, &st), 0);
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
	assert_int_equal(
	    tfs_mknod(f->fs, TFS_ROOT_INO, "plain", 0644, 0, 1001, 600, &st),
	    0);
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
	assert_int_equal(
	    tfs_setattr(f->fs, d, &in,
			TFS_SET_ATIME | TFS_SET_MTIME | TFS_SET_CTIME, NULL),
	    0);
	assert_int_equal(
	    tfs_setattr(f->fs, ino, &in,
			TFS_SET_ATIME | TFS_SET_MTIME | TFS_SET_CTIME, NULL),
	    0);
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
	assert_int_equal(
	    tfs_setattr(f->fs, ino, &in, TFS_SET_MTIME | TFS_SET_CTIME, NULL),
	    0);
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

/* ===== removed directories, limits ===== */

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

/* ===== lookup references, in-place renames, whiteouts, atime ===== */

static uint64_t orphans(struct tfs_fs *fs)
{
	struct tfs_check_result res;
	FILE *out = fopen("/dev/null", "w");

	assert_non_null(out);
	assert_int_equal(tfs_check(fs, 0, out, &res), 0);
	fclose(out);
	return res.orphans;
}

static void test_fs_lookup_ref_keeps_unlinked_file_and_dir(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	uint64_t free0;
	struct stat st;
	struct ents e;

	wr_pat(f->fs, file, 1 << 20, 0, 5);
	assert_int_equal(tfs_fsync(f->fs, file, 0, NULL), 0);
	free0 = bfree(f->fs);
	/* the kernel looked both up twice */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tfs_lookup_ref(f->fs, file), 0);
		assert_int_equal(tfs_lookup_ref(f->fs, d), 0);
	}
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	assert_int_equal(tfs_getattr(f->fs, file, &st), 0);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(st.st_size, 1 << 20);
	assert_pat(f->fs, file, 1 << 20, 0, 5);
	assert_int_equal(tfs_getattr(f->fs, d, &st), 0);
	assert_int_equal(st.st_nlink, 0);
	assert_true(S_ISDIR(st.st_mode));
	list(f->fs, d, 0, &e);
	assert_int_equal(e.n, 2); /* "." and ".." */
	ents_free(&e);
	assert_int_equal(tfs_mknod(f->fs, d, "x", 0644, 0, 0, 0, &st), -ENOENT);
	assert_true(bfree(f->fs) < free0 + 256);
	/* one of two forgotten: still there */
	tfs_forget(f->fs, file, 1);
	tfs_forget(f->fs, d, 1);
	assert_int_equal(tfs_getattr(f->fs, file, &st), 0);
	assert_int_equal(tfs_getattr(f->fs, d, &st), 0);
	/* an open outlives the last lookup, and the other way round */
	assert_int_equal(tfs_open(f->fs, file, O_RDONLY), 0);
	tfs_forget(f->fs, file, 1);
	assert_int_equal(tfs_getattr(f->fs, file, &st), 0);
	assert_int_equal(tfs_release(f->fs, file), 0);
	assert_int_equal(tfs_getattr(f->fs, file, &st), -ENOENT);
	assert_int_equal(tfs_open(f->fs, d, O_RDONLY | O_DIRECTORY), 0);
	tfs_forget(f->fs, d, 5); /* more than it has: all */
	assert_int_equal(tfs_getattr(f->fs, d, &st), 0);
	assert_int_equal(tfs_release(f->fs, d), 0);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
	/* gone for good: no new references, forgets change nothing */
	assert_int_equal(tfs_lookup_ref(f->fs, file), -ENOENT);
	tfs_forget(f->fs, file, 1);
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_true(bfree(f->fs) >= free0 + (1 << 20) / 4096);
	assert_int_equal(orphans(f->fs), 0);
	assert_fsck_clean(f->fs);
}

static void test_fs_linked_inode_outlives_its_lookups(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");
	struct tfs_forget_one v[2] = { { file, 3 }, { 999999, 1 } };
	struct stat st;

	assert_int_equal(tfs_link(f->fs, file, TFS_ROOT_INO, "g", &st), 0);
	assert_int_equal(tfs_lookup_ref(f->fs, file), 0);
	assert_int_equal(tfs_lookup_ref(f->fs, file), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	tfs_forget_many(f->fs, v, 2); /* an unknown inode is ignored */
	assert_int_equal(tfs_getattr(f->fs, file, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "g"), 0);
	assert_int_equal(tfs_getattr(f->fs, file, &st), -ENOENT);
	/* the root is never freed, whatever the kernel forgets */
	tfs_forget(f->fs, TFS_ROOT_INO, 1);
	assert_int_equal(tfs_getattr(f->fs, TFS_ROOT_INO, &st), 0);
}

static void test_fs_close_frees_what_only_lookups_kept(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct stat st;

	wr_pat(f->fs, file, 65536, 0, 9);
	assert_int_equal(tfs_lookup_ref(f->fs, file), 0);
	assert_int_equal(tfs_lookup_ref(f->fs, d), 0);
	assert_int_equal(tfs_unlink(f->fs, TFS_ROOT_INO, "f"), 0);
	assert_int_equal(tfs_rmdir(f->fs, TFS_ROOT_INO, "d"), 0);
	/* a crash now: the next mount frees both */
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_int_equal(tfs_getattr(crash(f), file, &st), -ENOENT);
	assert_int_equal(tfs_getattr(f->fs2, d, &st), -ENOENT);
	assert_int_equal(orphans(f->fs2), 0);
	assert_fsck_clean(f->fs2);
	/* a clean close frees them before its checkpoint */
	reopen(f);
	assert_int_equal(tfs_getattr(f->fs, file, &st), -ENOENT);
	assert_int_equal(tfs_getattr(f->fs, d, &st), -ENOENT);
	assert_int_equal(tfs_fs_replayed(f->fs), 0);
	assert_int_equal(orphans(f->fs), 0);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_in_place_keeps_readdir_position(void **state)
{
	struct fx *f = *state;
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct ents e, e2;
	char name[32];
	size_t n = 0;

	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		mk(f->fs, d, name);
	}
	list(f->fs, d, 0, &e);
	/* a scan, a page of one at a time, renaming each entry it gets to
	 * a longer name and back, and every third one away for good */
	memset(&e2, 0, sizeof(e2));
	e2.limit = 1;
	for (uint64_t cookie = 0;;) {
		size_t before = e2.n;
		char *nm;

		e2.got = 0;
		assert_int_equal(tfs_readdir(f->fs, d, cookie, fill, &e2), 0);
		if (e2.n == before)
			break;
		assert_true(++n < 200); /* it ends */
		cookie = e2.v[e2.n - 1].cookie;
		nm = e2.v[e2.n - 1].name;
		if (nm[0] == '.')
			continue;
		snprintf(name, sizeof(name), "%s.renamed-with-a-long-name", nm);
		assert_int_equal(tfs_rename(f->fs, d, nm, d, name, 0), 0);
		if (atoi(nm + 1) % 3)
			assert_int_equal(tfs_rename(f->fs, d, name, d, nm, 0),
					 0);
	}
	assert_int_equal(e2.n, 52);
	for (size_t i = 0; i < e.n; i++) {
		assert_int_equal(e2.v[i].cookie, e.v[i].cookie);
		assert_int_equal(e2.v[i].ino, e.v[i].ino);
	}
	ents_free(&e);
	ents_free(&e2);
	/* lookups find the new names, and the tree is sound */
	assert_true(exists(f->fs, d, "f01"));
	assert_false(exists(f->fs, d, "f03"));
	assert_true(exists(f->fs, d, "f03.renamed-with-a-long-name"));
	assert_fsck_clean(f->fs);
	reopen(f);
	list(f->fs, d, 0, &e);
	assert_int_equal(e.n, 52);
	ents_free(&e);
	assert_fsck_clean(f->fs);
}

static void test_fs_rename_whiteout(void **state)
{
	struct fx *f = *state;
	uint64_t a = mk(f->fs, TFS_ROOT_INO, "a");
	uint64_t d = mkd(f->fs, TFS_ROOT_INO, "d");
	struct stat st;

	assert_int_equal(tfs_rename2(f->fs, TFS_ROOT_INO, "a", d, "b",
				     TFS_RENAME_WHITEOUT, 1234, 5678),
			 0);
	assert_int_equal(ino_of(f->fs, d, "b"), a);
	assert_int_equal(tfs_lookup(f->fs, TFS_ROOT_INO, "a", &st), 0);
	assert_int_equal(st.st_mode, S_IFCHR);
	assert_int_equal(st.st_rdev, 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(tfs_rename2(f->fs, d, "b", TFS_ROOT_INO, "x",
				     TFS_RENAME_WHITEOUT | TFS_RENAME_EXCHANGE,
				     0, 0),
			 -EINVAL);
	assert_int_equal(tfs_rename2(f->fs, d, "b", TFS_ROOT_INO, "a",
				     TFS_RENAME_WHITEOUT | TFS_RENAME_NOREPLACE,
				     0, 0),
			 -EEXIST);
	assert_int_equal(tfs_rename2(f->fs, d, "nope", TFS_ROOT_INO, "y",
				     TFS_RENAME_WHITEOUT, 0, 0),
			 -ENOENT);
	assert_false(exists(f->fs, d, "nope"));
	assert_int_equal(tfs_fs_sync(f->fs), 0);
	assert_fsck_clean(crash(f));
	assert_int_equal(tfs_lookup(f->fs2, TFS_ROOT_INO, "a", &st), 0);
	assert_int_equal(st.st_mode, S_IFCHR);
}

static struct timespec ago(time_t s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec -= s;
	return ts;
}

/* Set ip's atime, mtime and ctime to that many seconds ago. */
static void set_times(struct tfs_fs *fs, uint64_t ino, time_t a, time_t m,
		      time_t c)
{
	struct stat in = { 0 };

	in.st_atim = ago(a);
	in.st_mtim = ago(m);
	in.st_ctim = ago(c);
	assert_int_equal(
	    tfs_setattr(fs, ino, &in,
			TFS_SET_ATIME | TFS_SET_MTIME | TFS_SET_CTIME, NULL),
	    0);
}

/* Does a read move ino's atime?  tfs_atime_due() must have said so. */
static int atime_moves(struct tfs_fs *fs, uint64_t ino)
{
	struct stat before = st_of(fs, ino), after;
	int due = tfs_atime_due(fs, ino), moved;

	tfs_file_note_read(fs, ino, 1);
	after = st_of(fs, ino);
	moved = before.st_atim.tv_sec != after.st_atim.tv_sec ||
		before.st_atim.tv_nsec != after.st_atim.tv_nsec;
	assert_int_equal(due, moved);
	return moved;
}

static void test_fs_reads_move_atime_as_relatime(void **state)
{
	struct fx *f = *state;
	uint64_t file = mk(f->fs, TFS_ROOT_INO, "f");

	/* relatime, the default */
	set_times(f->fs, file, 3600, 7200, 7200); /* read since changed */
	assert_false(atime_moves(f->fs, file));
	set_times(f->fs, file, 7200, 3600, 7200); /* mtime newer */
	assert_true(atime_moves(f->fs, file));
	set_times(f->fs, file, 7200, 7200, 3600); /* ctime newer */
	assert_true(atime_moves(f->fs, file));
	set_times(f->fs, file, 2 * 86400, 3 * 86400, 3 * 86400);
	assert_true(atime_moves(f->fs, file)); /* a day old */
	/* a failed read moves nothing */
	set_times(f->fs, file, 7200, 3600, 3600);
	tfs_file_note_read(f->fs, file, -EIO);
	assert_int_equal(st_of(f->fs, file).st_atim.tv_sec, ago(7200).tv_sec);
	/* noatime, strictatime */
	tfs_fs_set_atime(f->fs, TFS_ATIME_NOATIME);
	assert_false(atime_moves(f->fs, file));
	tfs_fs_set_atime(f->fs, TFS_ATIME_STRICT);
	set_times(f->fs, file, 3600, 7200, 7200);
	assert_true(atime_moves(f->fs, file));
	tfs_file_note_read(f->fs, 999999, 1); /* unknown: nothing */
	assert_int_equal(tfs_atime_due(f->fs, 999999), 0);
	/* committed with the rest, without its own commit */
	tfs_fs_set_atime(f->fs, TFS_ATIME_RELATIME);
	set_times(f->fs, file, 7200, 3600, 3600);
	assert_true(atime_moves(f->fs, file));
	{
		struct stat want = st_of(f->fs, file), got;

		assert_int_equal(tfs_fs_sync(f->fs), 0);
		got = st_of(crash(f), file);
		assert_int_equal(got.st_atim.tv_sec, want.st_atim.tv_sec);
		assert_int_equal(got.st_atim.tv_nsec, want.st_atim.tv_nsec);
	}
}

/*
 * A rename over an existing name when memory runs out: the target's
 * entry is reused, so the rename needs no allocation and cannot fail
 * half-way.  Dropping the target first and then adding the new entry
 * failed with ENOMEM when the directory's tables had to grow (b holds 8
 * entries, its first table's size: a dropped entry leaves a hole there),
 * and the target was gone.
 */
static void test_fs_replacing_rename_allocates_nothing(void **state)
{
#ifdef TFS_TEST_HOOKS
	struct fx *f = *state;
	uint64_t a = mkd(f->fs, TFS_ROOT_INO, "a");
	uint64_t b = mkd(f->fs, TFS_ROOT_INO, "b");
	uint64_t src = mk(f->fs, a, "src"), tgt = mk(f->fs, b, "target");
	uint64_t c, s2;
	char name[16];
	struct stat st;

	/* b and c hold 8 entries each: their first tables are full */
	for (int i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		mk(f->fs, b, name);
	}
	c = mkd(f->fs, TFS_ROOT_INO, "c");
	s2 = mk(f->fs, c, "s2");
	for (int i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		mk(f->fs, c, name);
	}
	tfs_meta_fail_allocs(tfs_fs_meta(f->fs), 1);
	/* across directories, and within one */
	assert_int_equal(tfs_rename(f->fs, a, "src", b, "target", 0), 0);
	assert_int_equal(tfs_rename(f->fs, c, "s2", c, "c0", 0), 0);
	tfs_meta_fail_allocs(tfs_fs_meta(f->fs), 0);

	assert_int_equal(tfs_lookup(f->fs, b, "target", &st), 0);
	assert_int_equal(st.st_ino, src);
	assert_int_equal(tfs_lookup(f->fs, c, "c0", &st), 0);
	assert_int_equal(st.st_ino, s2);
	assert_false(exists(f->fs, a, "src"));
	assert_false(exists(f->fs, c, "s2"));
	assert_int_equal(tfs_getattr(f->fs, tgt, &st), -ENOENT);
	assert_fsck_clean(f->fs);
	reopen(f);
	assert_int_equal(tfs_lookup(f->fs, b, "target", &st), 0);
	assert_int_equal(st.st_ino, src);
	assert_int_equal(tfs_lookup(f->fs, c, "c0", &st), 0);
	assert_int_equal(st.st_ino, s2);
	assert_false(exists(f->fs, c, "s2"));
	assert_fsck_clean(f->fs);
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_fresh_root_attrs),
		T(test_fs_mknod_lookup_getattr),
		T(test_fs_name_and_inode_errors),
		T(test_fs_dot_and_dotdot_cannot_be_created),
		T(test_fs_lookup_of_dot_and_dotdot),
		T(test_fs_mknod_special_files),
		T(test_fs_mkdir_rmdir_link_counts),
		T(test_fs_rmdir_and_unlink_errors),
		T(test_fs_create_in_removed_directory_is_enoent),
		T(test_fs_symlink_readlink),
		T(test_fs_link_counts_and_errors),
		T(test_fs_setattr_changes_and_errors),
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
		TS(test_fs_metadata_full_is_enospc),
		T(test_fs_setgid_directory_passes_its_group_on),
		T(test_fs_inode_numbers_are_never_reused),
		T(test_fs_times_change_on_write_and_create),
		T(test_fs_rename_into_removed_directory_is_enoent),
		T(test_fs_link_count_limit_is_emlink),
		TB(test_fs_subdirectory_limit_is_emlink),
		T(test_fs_lookup_ref_keeps_unlinked_file_and_dir),
		T(test_fs_linked_inode_outlives_its_lookups),
		T(test_fs_close_frees_what_only_lookups_kept),
		T(test_fs_rename_in_place_keeps_readdir_position),
		T(test_fs_rename_whiteout),
		T(test_fs_replacing_rename_allocates_nothing),
		T(test_fs_reads_move_atime_as_relatime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
