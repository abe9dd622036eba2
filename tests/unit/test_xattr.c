/*
 * test_xattr.c: extended attributes (lib/xattr.c).
 * Description: create/replace semantics, list and limits, the values
 * user.tensor.dtype and user.tensor.shape accept, and xattrs surviving a
 * crash after a sync.
 */

#include "testfs.h"

/* ===== xattrs ===== */

static void test_fs_xattr_create_replace_semantics(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "f");
	char buf[16];

	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.a", "1", 1, TFS_XATTR_CREATE), 0);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.a", "2", 1, TFS_XATTR_CREATE),
	    -EEXIST);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.b", "2", 1, TFS_XATTR_REPLACE),
	    -ENODATA);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.b", buf, sizeof(buf)),
			 -ENODATA);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.a", buf, sizeof(buf)),
			 1);
	assert_memory_equal(buf, "1", 1);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.a", "22", 2, TFS_XATTR_REPLACE), 0);
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
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.c", "z", 1, TFS_XATTR_CREATE), 0);
	/* an empty value is a value */
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.e", "", 0, TFS_XATTR_CREATE), 0);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.e", buf, sizeof(buf)),
			 0);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.e", "", 0, TFS_XATTR_CREATE),
	    -EEXIST);
}

static void test_fs_tensor_xattrs_take_only_dtypes_and_shapes(void **state)
{
	struct fx *f = *state;
	uint64_t ino = mk(f->fs, TFS_ROOT_INO, "t");
	char v[32];

	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.dtype", "fp8_e4m3", 8, 0), 0);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.dtype", "bf16\n", 5, 0), 0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.tensor.shape",
				      "(4096, 1024)", 12, 0),
			 0);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.dtype", "fp99", 4, 0),
	    -EINVAL);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.dtype", "", 0, 0), -EINVAL);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.dtype", "fp16\0x", 6, 0),
	    -EINVAL);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.shape", "4,x", 3, 0),
	    -EINVAL);
	/* the refused values changed nothing */
	assert_int_equal(
	    tfs_getxattr(f->fs, ino, "user.tensor.dtype", v, sizeof(v)), 5);
	assert_memory_equal(v, "bf16\n", 5);
	/* other user attributes are free-form */
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensor.note", "fp99", 4, 0), 0);
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
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.big", big, TFS_XATTR_VALUE_MAX, 0),
	    0);
	assert_int_equal(tfs_setxattr(f->fs, ino, "user.big", big,
				      TFS_XATTR_VALUE_MAX + 1, 0),
			 -E2BIG);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.big", got, sizeof(got)),
			 TFS_XATTR_VALUE_MAX);
	assert_memory_equal(got, big, TFS_XATTR_VALUE_MAX);
	/* namespaces the file system does not keep */
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "system.posix_acl_access", "v", 1, 0),
	    -EOPNOTSUPP);
	/* got and removed alike (not ENODATA: tools stop asking) */
	assert_int_equal(tfs_getxattr(f->fs, ino, "system.posix_acl_access",
				      got, sizeof(got)),
			 -EOPNOTSUPP);
	assert_int_equal(
	    tfs_removexattr(f->fs, ino, "system.posix_acl_default"),
	    -EOPNOTSUPP);
	assert_int_equal(
	    tfs_setxattr(f->fs, ino, "user.tensorfs.extents", "1", 1, 0),
	    -EPERM);
	assert_int_equal(tfs_removexattr(f->fs, ino, "user.tensorfs.extents"),
			 -EPERM);
	assert_int_equal(
	    tfs_getxattr(f->fs, ino, "user.tensorfs.extents", got, sizeof(got)),
	    1);
	assert_int_equal(got[0], '0');
	assert_int_equal(tfs_getxattr(f->fs, TFS_ROOT_INO,
				      "user.tensorfs.extents", got,
				      sizeof(got)),
			 -ENODATA);
	/* directories, symlinks and special files have xattrs too */
	assert_int_equal(tfs_symlink(f->fs, TFS_ROOT_INO, "l", "t", 0, 0, &st),
			 0);
	assert_int_equal(tfs_setxattr(f->fs, st.st_ino, "user.l", "s", 1, 0),
			 0);
	assert_int_equal(tfs_setxattr(f->fs, TFS_ROOT_INO, "user.r", "d", 1, 0),
			 0);
	assert_int_equal(tfs_getxattr(f->fs, st.st_ino, "user.l", got, 1), 1);
	reopen(f);
	assert_int_equal(tfs_getxattr(f->fs, ino, "user.big", got, sizeof(got)),
			 TFS_XATTR_VALUE_MAX);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fs_xattr_create_replace_semantics),
		T(test_fs_tensor_xattrs_take_only_dtypes_and_shapes),
		T(test_fs_xattr_list_and_limits),
		T(test_fs_xattrs_survive_crash_after_sync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
