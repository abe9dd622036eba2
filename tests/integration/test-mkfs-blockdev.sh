#!/bin/bash
# Description: mkfs.tensorfs and tensorfs on a block device; a mounted block device is refused
#
# Uses loop devices (root only; skips without them).  A loop device stands
# in for /dev/nvme0n1: mkfs.tensorfs formats it without -s, tensorfs-fsck
# checks it, tensorfs mounts it and keeps a file.  mkfs.tensorfs must refuse
# a block device that is mounted, by tensorfs (its flock) or by the kernel
# (an ext4 on a second loop device), and the ext4 once unmounted, without
# -f, and must refuse a small one; the refused devices are left as they
# were.  tensorfs and tensorfs-fsck call
# the ext4 device not a tensorfs.  What libblkid recognises (a GPT
# partition table, a swap area) is refused without -f, named as blkid
# names it, and left; bytes of no format are formatted, as mkfs.ext4
# formats them.
. "$(dirname "$0")/lib.sh"

tfs_need losetup mkfs.ext4 e2fsck mountpoint fusermount3 cmp sha256sum
[ "$(id -u)" = 0 ] || tfs_skip "loop devices need root"

tfs_mkimg 128M

LOOPS=""
tfs_at_exit 'mountpoint -q "$WORK/ext" 2>/dev/null && umount "$WORK/ext"; for l in $LOOPS; do losetup -d "$l"; done'

# attach FILE: set LOOP to a loop device now backing FILE
attach() {
	LOOP=$(losetup -f --show "$1" 2>"$WORK/losetup.err") || return 1
	LOOPS="$LOOPS $LOOP"
}

truncate -s 128M "$WORK/blk.img"
attach "$WORK/blk.img" || tfs_skip "no loop device: $(cat "$WORK/losetup.err")"
BLK=$LOOP
[ -b "$BLK" ] || tfs_skip "'$BLK' is not a block device"

# ===== format, check and mount a block device =====

tfs_expect_exit 0 "mkfs.tensorfs on block device $BLK" "$MKFS" "$BLK"
tfs_expect_exit 0 "tensorfs-fsck on block device $BLK" "$FSCK" "$BLK"
tfs_expect_exit 1 "mkfs.tensorfs again on a formatted block device" "$MKFS" "$BLK"
tfs_expect_words "mkfs.tensorfs again on a formatted block device" "$WORK/err" already -f

SAVED_IMG=$IMG
IMG=$BLK
tfs_mount
head -c 2000000 /dev/urandom >"$WORK/data"
cp "$WORK/data" "$MNT/data" || tfs_fail "cp to the block-device mount: expected success, got failure"

# mounted by tensorfs: refused even with -f, and the mount goes on
tfs_expect_exit 1 "mkfs.tensorfs -f on $BLK mounted by tensorfs" "$MKFS" -f "$BLK"
tfs_expect_some_word "mkfs.tensorfs -f on a tensorfs-mounted block device" "$WORK/err" "in use" mounted
cmp "$WORK/data" "$MNT/data" || tfs_fail "data after a refused mkfs: expected intact, got other bytes"
tfs_umount
tfs_fsck_clean
tfs_mount
cmp "$WORK/data" "$MNT/data" || tfs_fail "data on the block device after remount: expected intact, got other bytes"
tfs_umount
IMG=$SAVED_IMG

# ===== a block device mounted by the kernel (ext4) =====

truncate -s 128M "$WORK/ext4.img"
mkfs.ext4 -q -F "$WORK/ext4.img" || tfs_fail "mkfs.ext4 failed"
attach "$WORK/ext4.img" || tfs_skip "no second loop device: $(cat "$WORK/losetup.err")"
EXT=$LOOP
mkdir "$WORK/ext"
mount -t ext4 "$EXT" "$WORK/ext" || tfs_skip "cannot mount ext4 on $EXT"
cp "$WORK/data" "$WORK/ext/data" || tfs_fail "cp to ext4 failed"
sync
for opts in "-f" "-f -q" ""; do
	# shellcheck disable=SC2086
	tfs_expect_exit 1 "mkfs.tensorfs $opts on $EXT mounted as ext4" "$MKFS" $opts "$EXT"
	tfs_expect_some_word "mkfs.tensorfs $opts on a mounted ext4 block device" "$WORK/err" "in use" mounted
done
umount "$WORK/ext" || tfs_fail "umount ext4 failed"
# unmounted, it is refused for the file system it holds (not as an image
# file's data), without -f
for opts in "" "-q"; do
	# shellcheck disable=SC2086
	tfs_expect_exit 1 "mkfs.tensorfs $opts on the unmounted ext4 $EXT" "$MKFS" $opts "$EXT"
	tfs_expect_words "mkfs.tensorfs $opts on an unmounted ext4 block device" "$WORK/err" \
		"already contains an ext2/3/4 file system" -f
done
e2fsck -fn "$EXT" >"$WORK/e2fsck.log" 2>&1 || {
	cat "$WORK/e2fsck.log" >&2
	tfs_fail "ext4 after refused mkfs.tensorfs runs: expected e2fsck clean, got errors"
}
mount -t ext4 "$EXT" "$WORK/ext" || tfs_fail "remount ext4 failed"
cmp "$WORK/data" "$WORK/ext/data" || tfs_fail "ext4 file after refused mkfs.tensorfs: expected intact, got other bytes"
umount "$WORK/ext"

# ===== a block device below the minimum =====

truncate -s 32M "$WORK/tiny.img"
attach "$WORK/tiny.img" || tfs_skip "no third loop device: $(cat "$WORK/losetup.err")"
TINY=$LOOP
tfs_expect_exit 1 "mkfs.tensorfs on a 32 MiB block device" "$MKFS" "$TINY"
tfs_expect_words "mkfs.tensorfs on a 32 MiB block device" "$WORK/err" "too small" minimum

# ===== what libblkid recognises: a partition table, a swap area =====

truncate -s 128M "$WORK/other.img"
attach "$WORK/other.img" || tfs_skip "no fourth loop device: $(cat "$WORK/losetup.err")"
OTHER=$LOOP
if command -v sfdisk >/dev/null; then
	printf 'label: gpt\n,64M\n,\n' | sfdisk -q "$OTHER" >"$WORK/sfdisk.log" 2>&1 ||
		tfs_fail "sfdisk on $OTHER failed: $(cat "$WORK/sfdisk.log")"
	sha256sum <"$OTHER" >"$WORK/gpt.sum"
	tfs_expect_exit 1 "mkfs.tensorfs on $OTHER holding a GPT" "$MKFS" "$OTHER"
	tfs_expect_words "mkfs.tensorfs on a block device holding a GPT" "$WORK/err" \
		"$OTHER" "partition table (gpt)" -f
	sha256sum <"$OTHER" | cmp -s - "$WORK/gpt.sum" ||
		tfs_fail "a GPT device after a refused mkfs: expected the same bytes, got others"
else
	echo "test-mkfs-blockdev: no sfdisk; the partition table case is not run" >&2
fi
mkswap -f "$OTHER" >/dev/null 2>&1 || tfs_fail "mkswap on $OTHER failed"
tfs_expect_exit 1 "mkfs.tensorfs on swap $OTHER" "$MKFS" "$OTHER"
tfs_expect_words "mkfs.tensorfs on a block device holding swap" "$WORK/err" "$OTHER" "swap area" -f
[ "$(blkid -p -o value -s TYPE "$OTHER")" = swap ] ||
	tfs_fail "swap after a refused mkfs: expected blkid to see swap, got '$(blkid -p -o value -s TYPE "$OTHER")'"
tfs_expect_exit 0 "mkfs.tensorfs -f on swap $OTHER" "$MKFS" -q -f "$OTHER"
tfs_expect_exit 0 "tensorfs-fsck of $OTHER formatted over swap" "$FSCK" "$OTHER"
# bytes of no format: formatted without -f, as mkfs.ext4 does
yes 'no format at all' | head -c 4M | dd of="$OTHER" bs=1M conv=fsync status=none ||
	tfs_fail "writing bytes of no format to $OTHER failed"
[ -z "$(blkid -p -o export "$OTHER")" ] ||
	tfs_fail "bytes of no format: expected blkid to name nothing, got '$(blkid -p -o export "$OTHER")'"
tfs_expect_exit 0 "mkfs.tensorfs on $OTHER holding bytes of no format" "$MKFS" -q "$OTHER"
tfs_expect_exit 0 "tensorfs-fsck of $OTHER formatted over bytes of no format" "$FSCK" "$OTHER"

# ===== tensorfs on a block device that holds another file system =====

tfs_try_mount "$EXT" "$MNT"
tfs_eq "tensorfs -f on an ext4 block device: exit" 1 "$TFS_RC"
tfs_expect_words "tensorfs on an ext4 block device" "$WORK/err" "not a tensorfs" mkfs.tensorfs
tfs_expect_unmounted "tensorfs on an ext4 block device" "$MNT"
tfs_expect_exit 8 "tensorfs-fsck on an ext4 block device" "$FSCK" "$EXT"
tfs_expect_exit 8 "tensorfs-fsck -y on an ext4 block device" "$FSCK" -y "$EXT"
e2fsck -fn "$EXT" >"$WORK/e2fsck.log" 2>&1 || {
	cat "$WORK/e2fsck.log" >&2
	tfs_fail "ext4 after tensorfs and tensorfs-fsck -y tried it: expected e2fsck clean, got errors"
}

tfs_pass
