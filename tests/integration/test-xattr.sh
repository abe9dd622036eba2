#!/bin/bash
# Description: extended attributes: set, get, list, replace, remove; binary, empty, 4000-byte and many values; XATTR_CREATE (EEXIST) and XATTR_REPLACE (ENODATA); ENODATA, ERANGE, E2BIG; attributes on directories; the virtual user.tensorfs.extents is readable but never listed; everything persists across a remount; user.tensor.dtype and user.tensor.shape accept only real dtypes and shapes (EINVAL otherwise)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need getfattr setfattr od
export LC_ALL=C
tfs_setup 512M

f="$MNT/f"
: >"$f" || tfs_fail "cannot create a file"
val() { getfattr --absolute-names -n "$1" --only-values "$f"; }
names() { "$TFS_SYS" listxattr "$1" | sort | tr '\n' ' ' | sed 's/ $//'; }

tfs_eq "attributes of a new file" "" "$(names "$f")"
tfs_eq "getfattr -d of a new file" "" "$(getfattr --absolute-names -d "$f" 2>&1)"

# ----- set, get, list, replace, remove -----

setfattr -n user.a -v hello "$f" || tfs_fail "setfattr user.a failed"
tfs_eq "value of user.a" hello "$(val user.a)"
tfs_eq "size of user.a" 5 "$("$TFS_SYS" xattr-size "$f" user.a)"
setfattr -n user.a -v hi "$f" || tfs_fail "replacing user.a failed"
tfs_eq "user.a replaced by a shorter value" hi "$(val user.a)"
tfs_eq "size of the shorter value" 2 "$("$TFS_SYS" xattr-size "$f" user.a)"
setfattr -n user.bin -v 0x00010203fffe00 "$f" || tfs_fail "setfattr of a binary value failed"
tfs_eq "binary value (hex)" "user.bin=0x00010203fffe00" "$(getfattr --absolute-names -n user.bin -e hex "$f" 2>/dev/null | grep '^user.bin=')"
tfs_eq "binary value size" 7 "$("$TFS_SYS" xattr-size "$f" user.bin)"
setfattr -n user.empty "$f" || tfs_fail "setfattr of an empty value failed"
tfs_eq "size of an empty value" 0 "$("$TFS_SYS" xattr-size "$f" user.empty)"
tfs_eq "names listed" "user.a user.bin user.empty" "$(names "$f")"
dump=$(cd "$MNT" && getfattr -d f 2>/dev/null | grep -v '^#' | grep .)
tfs_eq "getfattr -d" "$(printf 'user.a="hi"\nuser.bin=0sAAECA//+AA==\nuser.empty=""')" "$dump"
setfattr -x user.a "$f" || tfs_fail "setfattr -x failed"
tfs_errno ENODATA getxattr "$f" user.a
tfs_eq "names after removing user.a" "user.bin user.empty" "$(names "$f")"

# ----- the flags and the errors -----

tfs_errno OK setxattr "$f" user.new v1 create
tfs_errno EEXIST setxattr "$f" user.new v2 create
tfs_eq "value after a refused XATTR_CREATE" v1 "$(val user.new)"
tfs_errno OK setxattr "$f" user.new v3 replace
tfs_eq "value after XATTR_REPLACE" v3 "$(val user.new)"
tfs_errno ENODATA setxattr "$f" user.nope x replace
tfs_errno ENODATA getxattr "$f" user.nope
tfs_errno ENODATA getxattr "$f" user.missing
tfs_errno ENODATA removexattr "$f" user.missing
tfs_errno ENODATA xattr-size "$f" user.missing
# no POSIX ACLs: system.* is not supported, got or removed (a set with a
# malformed value is refused by the kernel first), as on
# ext4 without ACLs (so ls -l asks once per mount, not once per file)
tfs_errno EOPNOTSUPP getxattr "$f" system.posix_acl_access
tfs_errno EOPNOTSUPP removexattr "$f" system.posix_acl_access
tfs_errno OK getxattr "$f" user.new 2
tfs_errno ERANGE getxattr "$f" user.new 1
tfs_errno ENOENT getxattr "$MNT/missing" user.new
long=$(head -c 256 /dev/zero | tr '\0' n)
tfs_errno ERANGE setxattr "$f" "user.${long:5}" x
tfs_errno E2BIG setxattr "$f" user.huge "$(head -c 65537 /dev/zero | tr '\0' v)"
getfattr --absolute-names -n user.nope "$f" >/dev/null 2>&1 && tfs_fail "getfattr of a missing attribute succeeded"

# ----- a 4000-byte value and 100 attributes -----

"$TFS_SYS" pattern 4000 9 >"$WORK/big.ref" || tfs_fail "cannot make the value"
hex=$(od -An -tx1 -v "$WORK/big.ref" | tr -d ' \n')
setfattr -n user.big -v "0x$hex" "$f" || tfs_fail "setfattr of a 4000-byte value failed"
tfs_eq "size of the 4000-byte value" 4000 "$("$TFS_SYS" xattr-size "$f" user.big)"
val user.big | cmp - "$WORK/big.ref" || tfs_fail "the 4000-byte value reads back wrong"
mkdir "$MNT/sub" || tfs_fail "mkdir failed"
for i in $(seq -w 0 99); do
	setfattr -n "user.k$i" -v "value-$i" "$MNT/sub" || tfs_fail "setfattr user.k$i on a directory failed"
done
check_many() {
	tfs_eq "number of attributes on the directory ($1)" 100 "$("$TFS_SYS" listxattr "$MNT/sub" | wc -l)"
	for i in $(seq -w 0 99); do
		tfs_eq "user.k$i ($1)" "value-$i" "$(getfattr --absolute-names -n "user.k$i" --only-values "$MNT/sub")"
	done
}
check_many "after setting"
setfattr -x user.k50 "$MNT/sub" || tfs_fail "removing one of 100 attributes failed"
tfs_errno ENODATA getxattr "$MNT/sub" user.k50
setfattr -n user.k50 -v value-50 "$MNT/sub" || tfs_fail "setting it again failed"

# ----- the virtual extent count -----

tfs_eq "user.tensorfs.extents of an empty file" 0 "$(val user.tensorfs.extents)"
xfs_io -f -c "pwrite 0 4096" -c fsync "$MNT/data" >/dev/null || tfs_fail "xfs_io pwrite failed"
tfs_eq "user.tensorfs.extents of a one-block file" 1 "$(getfattr --absolute-names -n user.tensorfs.extents --only-values "$MNT/data")"
case " $(names "$f") $(names "$MNT/data") " in
*tensorfs*) tfs_fail "listxattr lists the virtual user.tensorfs.extents" ;;
esac
getfattr --absolute-names -d "$MNT/data" 2>/dev/null | grep -q tensorfs && tfs_fail "getfattr -d shows user.tensorfs.extents"

# removing a file with attributes frees them (fsck checks at the end)
setfattr -n user.gone -v "0x$hex" "$MNT/data" || tfs_fail "setfattr failed"
rm "$MNT/data" || tfs_fail "rm failed"

# ----- tensor metadata: only real dtypes and shapes are kept -----
setfattr -n user.tensor.dtype -v bf16 "$f" || tfs_fail "setting user.tensor.dtype = bf16 failed"
setfattr -n user.tensor.shape -v "4096,1024" "$f" || tfs_fail "setting user.tensor.shape failed"
tfs_eq "user.tensor.dtype" bf16 "$(val user.tensor.dtype)"
for bad in fp99 "" complex64; do
	setfattr -n user.tensor.dtype -v "$bad" "$f" 2>"$WORK/err" &&
		tfs_fail "user.tensor.dtype = '$bad' was accepted"
	grep -q "Invalid argument" "$WORK/err" || tfs_fail "user.tensor.dtype = '$bad': expected EINVAL, got '$(cat "$WORK/err")'"
done
setfattr -n user.tensor.shape -v "4096,x" "$f" 2>"$WORK/err" && tfs_fail "user.tensor.shape = '4096,x' was accepted"
grep -q "Invalid argument" "$WORK/err" || tfs_fail "user.tensor.shape = '4096,x': expected EINVAL"
tfs_eq "user.tensor.dtype after refused values" bf16 "$(val user.tensor.dtype)"
setfattr -x user.tensor.dtype "$f" && setfattr -x user.tensor.shape "$f" ||
	tfs_fail "removing the tensor attributes failed"

# ----- after a remount -----

tfs_umount
tfs_mount
tfs_eq "names after remount" "user.big user.bin user.empty user.new" "$(names "$f")"
tfs_eq "user.new after remount" v3 "$(val user.new)"
tfs_eq "binary value after remount" "user.bin=0x00010203fffe00" "$(getfattr --absolute-names -n user.bin -e hex "$f" 2>/dev/null | grep '^user.bin=')"
val user.big | cmp - "$WORK/big.ref" || tfs_fail "the 4000-byte value differs after remount"
tfs_eq "size of the empty value after remount" 0 "$("$TFS_SYS" xattr-size "$f" user.empty)"
check_many "after remount"

tfs_umount
tfs_fsck_clean
tfs_pass
