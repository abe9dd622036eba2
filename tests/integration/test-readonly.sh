#!/bin/bash
# Description: -o ro opens the device read-only (O_RDONLY), serves reads, refuses every change with EROFS, writes nothing to the image, cannot be remounted rw, refuses an image that needs recovery (saying to mount read-write or run tensorfs-fsck) without touching it, and mounts an immutable image (chattr +i)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum setfattr getfattr
tfs_setup 128M

# ----- some content, written read-write -----
mkdir "$MNT/d" || tfs_fail "mkdir failed"
head -c 3000000 /dev/urandom >"$WORK/data"
cp "$WORK/data" "$MNT/d/data" || tfs_fail "cp failed"
ln -s d/data "$MNT/link" || tfs_fail "ln -s failed"
setfattr -n user.tensor.dtype -v float16 "$MNT/d/data" || tfs_fail "setfattr failed"
tfs_umount
tfs_fsck_clean
img_sum=$(sha256sum <"$IMG")

# ----- read-only -----
tfs_mount -o ro
grep -q " $MNT fuse.tensorfs ro," /proc/mounts || tfs_fail "expected a ro mount in /proc/mounts, got: $(grep " $MNT " /proc/mounts)"
# the daemon's descriptor of the image is O_RDONLY
flags=""
for fd in /proc/"$DAEMON_PID"/fd/*; do
	[ "$(readlink "$fd")" = "$IMG" ] || continue
	flags=$(awk '$1 == "flags:" { print $2 }' /proc/"$DAEMON_PID"/fdinfo/"${fd##*/}")
	[ $((8#$flags & 3)) = 0 ] || tfs_fail "image descriptor $fd: expected O_RDONLY, got flags $flags"
done
[ -n "$flags" ] || tfs_fail "the daemon has no descriptor of $IMG"
# reads
cmp "$WORK/data" "$MNT/d/data" || tfs_fail "read of d/data: expected the data written, got other bytes"
tfs_eq "readlink" d/data "$(readlink "$MNT/link")"
tfs_eq "getfattr" float16 "$(getfattr --only-values -n user.tensor.dtype "$MNT/d/data")"
grep -q . "$MNT/.tensorfs/stats" || tfs_fail "cannot read .tensorfs/stats on a ro mount"
# every change: EROFS
expect_erofs() {	# WHAT CMD...
	local what=$1
	shift
	if "$@" 2>"$WORK/err"; then tfs_fail "$what on a ro mount: expected EROFS, got success"; fi
	grep -q "Read-only file system" "$WORK/err" || tfs_fail "$what on a ro mount: expected EROFS, got '$(cat "$WORK/err")'"
}
expect_erofs "create" sh -c "echo x >'$MNT/new'"
expect_erofs "overwrite" sh -c "echo x >'$MNT/d/data'"
expect_erofs "append" sh -c "echo x >>'$MNT/d/data'"
expect_erofs "mkdir" mkdir "$MNT/e"
expect_erofs "rm" rm "$MNT/d/data"
expect_erofs "rmdir" rmdir "$MNT/d"
expect_erofs "mv" mv "$MNT/link" "$MNT/link2"
expect_erofs "ln" ln "$MNT/d/data" "$MNT/hard"
expect_erofs "ln -s" ln -s x "$MNT/sym"
expect_erofs "chmod" chmod 600 "$MNT/d/data"
expect_erofs "touch" touch "$MNT/d/data"
expect_erofs "truncate" truncate -s 0 "$MNT/d/data"
expect_erofs "fallocate" fallocate -l 1M "$MNT/d/data"
expect_erofs "setfattr" setfattr -n user.a -v b "$MNT/d/data"
# and it stays read-only: remount,rw cannot open the device for writing
tfs_expect_exit 1 "tensorfs -o remount,rw of a ro mount" "$TENSORFS" -o remount,rw "$IMG" "$MNT"
tfs_expect_words "remount,rw of a ro mount" "$WORK/err" "read-only" "without ro"
expect_erofs "create after a refused remount,rw" sh -c "echo x >'$MNT/new'"
tfs_umount
tfs_eq "image after a ro mount (nothing written)" "$img_sum" "$(sha256sum <"$IMG")"

# ----- an image that needs recovery is refused, and left as it is -----
tfs_mount
echo more >"$MNT/more" && sync "$MNT/more" || tfs_fail "write before the crash failed"
tfs_kill9
tfs_wait_unlocked || tfs_fail "the image is still locked after the crash"
img_sum=$(sha256sum <"$IMG")
tfs_try_mount "$IMG" "$MNT" -o ro
tfs_eq "ro mount of an image that needs recovery: exit" 1 "$TFS_RC"
tfs_expect_words "ro mount of an image that needs recovery" "$WORK/err" "needs recovery" "read-write" "tensorfs-fsck"
tfs_expect_unmounted "ro mount of an image that needs recovery" "$MNT"
tfs_eq "image after a refused ro mount" "$img_sum" "$(sha256sum <"$IMG")"
# recovered read-write, it mounts read-only
tfs_mount
tfs_umount
tfs_mount -o ro
tfs_eq "file fsync'd before the crash, on the ro mount" more "$(cat "$MNT/more")"
tfs_umount

# ----- an immutable image -----
chattr +i "$IMG" 2>"$WORK/chattr.err" || tfs_skip "chattr +i unsupported here: $(cat "$WORK/chattr.err")"
tfs_at_exit "chattr -i '$IMG' 2>/dev/null"
img_sum=$(sha256sum <"$IMG")
tfs_expect_mount_refused "rw mount of an immutable image" "$IMG" "$MNT" "$IMG" "not permitted"
tfs_mount -o ro
cmp "$WORK/data" "$MNT/d/data" || tfs_fail "read of an immutable image: expected the data, got other bytes"
expect_erofs "create on an immutable image" sh -c "echo x >'$MNT/new2'"
tfs_umount
tfs_eq "immutable image after a ro mount" "$img_sum" "$(sha256sum <"$IMG")"
chattr -i "$IMG" || tfs_fail "chattr -i failed"
tfs_fsck_clean
tfs_pass
