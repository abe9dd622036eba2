#!/bin/bash
# Description: fsync, fdatasync, syncfs, O_SYNC and O_DSYNC writes succeed on files, directories and unlinked files (xfs_io, sync FILE, dd conv=fsync/fdatasync, oflag=sync/dsync), and the data is what was written, also after a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need xfs_io sync dd cmp
tfs_setup 512M

mib=1048576
"$TFS_SYS" pattern $((16 * mib)) 4 >"$WORK/ref" || tfs_fail "cannot make the reference"

# ----- xfs_io fsync and fdatasync -----

xfs_io -f -c "pwrite -S 0x61 0 1M" -c fsync -c "pwrite -S 0x62 1M 1M" -c fdatasync "$MNT/x" >/dev/null ||
	tfs_fail "xfs_io pwrite + fsync + pwrite + fdatasync failed"
{ head -c "$mib" /dev/zero | tr '\0' a && head -c "$mib" /dev/zero | tr '\0' b; } >"$WORK/x.ref"
cmp "$WORK/x.ref" "$MNT/x" || tfs_fail "data after fsync and fdatasync differs"
xfs_io -r -c fsync -c fdatasync "$MNT/x" || tfs_fail "fsync and fdatasync on a read-only descriptor failed"
xfs_io -c "truncate 5000" -c fsync "$MNT/x" || tfs_fail "fsync after ftruncate failed"
tfs_eq "size after ftruncate + fsync" 5000 "$(stat -c %s "$MNT/x")"
xfs_io -f -c fsync "$MNT/empty" || tfs_fail "fsync of a new empty file failed"

# an O_SYNC descriptor (O_DSYNC is dd oflag=dsync below)
xfs_io -f -s -c "pwrite -S 0x63 0 64k" "$MNT/osync" >/dev/null || tfs_fail "O_SYNC pwrite failed"
head -c 65536 /dev/zero | tr '\0' c | cmp - "$MNT/osync" || tfs_fail "O_SYNC data differs"

# ----- sync(1): fsync, fdatasync, syncfs, and a directory -----

cp "$WORK/ref" "$MNT/s" || tfs_fail "cp failed"
sync "$MNT/s" || tfs_fail "sync FILE (fsync) failed"
sync -d "$MNT/s" || tfs_fail "sync -d FILE (fdatasync) failed"
sync -f "$MNT/s" || tfs_fail "sync -f FILE (syncfs) failed"
mkdir "$MNT/dir" || tfs_fail "mkdir failed"
touch "$MNT/dir/entry" || tfs_fail "touch failed"
sync "$MNT/dir" || tfs_fail "sync DIR (fsync of a directory) failed"
sync "$MNT" || tfs_fail "sync of the root directory failed"
cmp "$WORK/ref" "$MNT/s" || tfs_fail "data after sync differs"

# ----- dd -----

dd if="$WORK/ref" of="$MNT/dd1" bs=1M conv=fsync 2>/dev/null || tfs_fail "dd conv=fsync failed"
dd if="$WORK/ref" of="$MNT/dd2" bs=1M conv=fdatasync 2>/dev/null || tfs_fail "dd conv=fdatasync failed"
dd if="$WORK/ref" of="$MNT/dd3" bs=64K oflag=sync 2>/dev/null || tfs_fail "dd oflag=sync failed"
dd if="$WORK/ref" of="$MNT/dd4" bs=4K count=1024 oflag=dsync 2>/dev/null || tfs_fail "dd oflag=dsync failed"
for i in 1 2 3; do
	cmp "$WORK/ref" "$MNT/dd$i" || tfs_fail "dd$i differs"
done
cmp -n $((4 * mib)) "$WORK/ref" "$MNT/dd4" || tfs_fail "dd4 differs"
tfs_eq "size of dd4" $((4 * mib)) "$(stat -c %s "$MNT/dd4")"

# ----- fsync of an unlinked open file -----

exec 3>"$MNT/unl" || tfs_fail "cannot open a new file on fd 3"
rm "$MNT/unl" || tfs_fail "rm failed"
printf 'x' >&3 || tfs_fail "write to the unlinked file failed"
# xfs_io inherits fd 3 and reopens the unlinked file through /proc
xfs_io -c fsync -c fdatasync "/proc/self/fd/3" || tfs_fail "fsync of an unlinked open file failed"
exec 3>&-

# ----- after a remount -----

tfs_umount
tfs_mount
tfs_eq "size of x after remount" 5000 "$(stat -c %s "$MNT/x")"
cmp -n 5000 "$WORK/x.ref" "$MNT/x" || tfs_fail "x differs after remount"
for i in 1 2 3; do
	cmp "$WORK/ref" "$MNT/dd$i" || tfs_fail "dd$i differs after remount"
done
cmp "$WORK/ref" "$MNT/s" || tfs_fail "s differs after remount"
[ -e "$MNT/dir/entry" ] || tfs_fail "entry of a synced directory is gone after remount"

tfs_umount
tfs_fsck_clean
tfs_pass
