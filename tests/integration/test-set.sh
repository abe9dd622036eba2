#!/bin/bash
# Description: one file system over three devices (a set, lib/set.h):
# mkfs.tensorfs of three images, mounted as A:B:C in any order; a 200 MiB
# file and a directory of small files, written with shell tools, read back
# exactly after a remount in another order; tensorfs-fsck of the set
# clean; data on every member; refused with the device named: a member
# missing, one alone, a copy of one, a member of another set, a path given
# twice, an empty name, a path that does not exist; mkfs refuses --stripe
# of one device and a path given twice.  A set of a block device (a loop
# device over a sparse image, with direct I/O where losetup can) and an
# image file: a 100 MiB file written with cp lands on both, tensorfs-fsck
# is clean, and it reads back exactly after a remount in the other order
# (that part skipped, saying so, without losetup)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp du
tfs_mkimg 64M
tfs_at_exit tfs_kill_strays
A=$WORK/a.img
B=$WORK/b.img
C=$WORK/c.img

tfs_expect_exit 0 "mkfs.tensorfs -s 96M --stripe 256K A B C" "$MKFS" -s 96M --stripe 256K "$A" "$B" "$C"
tfs_expect_words "mkfs.tensorfs of a set" "$WORK/out" "set of 3 devices" "$A:"

# mounted in an order of its own, written, unmounted, checked
IMG="$B:$C:$A"
tfs_mount
grep -q "^$A:$B:$C \|^$B:$C:$A " /proc/mounts || tfs_fail "mount of the set: expected its members as the source in /proc/mounts, got '$(grep "$MNT" /proc/mounts)'"
head -c 200M /dev/urandom >"$WORK/src"
cp "$WORK/src" "$MNT/big" || tfs_fail "cp of 200 MiB to the set: expected success, got failure"
mkdir "$MNT/d" || tfs_fail "mkdir on the set failed"
for i in $(seq 50); do echo "small $i" >"$MNT/d/$i" || tfs_fail "writing d/$i failed"; done
tfs_umount
tfs_fsck_clean
used=$(($(du -k "$B" | cut -f1) + $(du -k "$C" | cut -f1)))
[ "$used" -gt 100000 ] || tfs_fail "a 200 MiB file on a set of three 96 MiB members: expected more than 100 MB on members 2 and 3, got $used KiB"

IMG="$C:$A:$B"
tfs_mount
cmp "$WORK/src" "$MNT/big" || tfs_fail "the 200 MiB file after a remount in another order: expected its bytes, got others"
for i in $(seq 50); do
	tfs_eq "d/$i after a remount" "small $i" "$(cat "$MNT/d/$i")"
done
tfs_umount

# ----- what is not the whole set: refused, naming the device -----
tfs_expect_mount_refused "a member missing" "$A:$B" "$MNT" "member 3" "missing"
tfs_expect_mount_refused "member 2 alone" "$B" "$MNT" "member 2 of a set of 3"
tfs_expect_mount_refused "member 1 alone" "$A" "$MNT" "set of 3 devices and 1 was given"
cp --sparse=always "$B" "$WORK/b-copy.img" || tfs_fail "copying member 2 failed"
tfs_expect_mount_refused "a copy of member 2 given too" "$A:$B:$C:$WORK/b-copy.img" "$MNT" "both member 2" "copy" "b-copy.img"
tfs_expect_mount_refused "member 2 given twice" "$A:$B:$C:$B" "$MNT" "given twice" "$B"
tfs_expect_exit 0 "mkfs.tensorfs of another set" "$MKFS" -q -s 96M "$WORK/x.img" "$WORK/y.img" "$WORK/z.img"
tfs_expect_mount_refused "a member of another set" "$A:$WORK/y.img:$C" "$MNT" "another tensorfs" "y.img"
tfs_expect_mount_refused "an empty name" "$A::$B:$C" "$MNT" "empty device name"
tfs_expect_mount_refused "a member that does not exist" "$A:$WORK/nope.img:$C" "$MNT" "nope.img" "No such file"
tfs_expect_exit "4|8" "tensorfs-fsck of a set missing a member" "$FSCK" "$A:$B"
tfs_expect_words "tensorfs-fsck of a set missing a member" "$WORK/err" "missing"

# ----- mkfs.tensorfs refusals -----
tfs_expect_exit 2 "mkfs.tensorfs --stripe of one device" "$MKFS" --stripe 1M "$WORK/one.img"
tfs_expect_words "mkfs.tensorfs --stripe of one device" "$WORK/err" "--stripe"
tfs_expect_exit 2 "mkfs.tensorfs --stripe 3K" "$MKFS" --stripe 3K "$WORK/p.img" "$WORK/q.img"
tfs_expect_exit 1 "mkfs.tensorfs of one path twice" "$MKFS" -f -s 96M "$WORK/p.img" "$WORK/p.img"
tfs_expect_words "mkfs.tensorfs of one path twice" "$WORK/err" "given twice"
[ ! -e "$WORK/one.img" ] || tfs_fail "mkfs.tensorfs refused with exit 2: expected no image made, got $WORK/one.img"

# ----- a block device and an image file in one set -----
if ! command -v losetup >/dev/null 2>&1; then
	tfs_log "SKIP of its last part: no losetup, so a set of a block device and an image file is not tested"
else
	truncate -s 160M "$WORK/loop.img" || tfs_fail "truncate of $WORK/loop.img failed"
	# direct I/O where the loop driver takes it (as a drive does O_DIRECT)
	LOOP=$(losetup -f --show --direct-io=on "$WORK/loop.img" 2>"$WORK/losetup.err") ||
		LOOP=$(losetup -f --show "$WORK/loop.img" 2>>"$WORK/losetup.err") ||
		tfs_fail "losetup of $WORK/loop.img: expected a loop device, got: $(cat "$WORK/losetup.err")"
	tfs_at_exit "losetup -d '$LOOP' 2>/dev/null"
	[ -b "$LOOP" ] || tfs_fail "losetup gave '$LOOP', which is not a block device"
	tfs_log "a set of $LOOP (direct I/O: $(losetup -n -O DIO "$LOOP" | tr -d ' ')) and an image file"
	MIX=$WORK/mix.img
	tfs_expect_exit 0 "mkfs.tensorfs of a loop device and an image file" "$MKFS" -s 160M "$LOOP" "$MIX"
	tfs_expect_words "mkfs.tensorfs of a loop device and an image file" "$WORK/out" "set of 2 devices" "$LOOP"
	du_loop=$(du -k "$WORK/loop.img" | cut -f1)
	du_mix=$(du -k "$MIX" | cut -f1)
	IMG="$LOOP:$MIX"
	tfs_mount
	head -c 100M /dev/urandom >"$WORK/src100"
	cp "$WORK/src100" "$MNT/big100" || tfs_fail "cp of 100 MiB to the set of a loop device and an image: expected success, got failure"
	tfs_umount
	tfs_fsck_clean
	# each member holds about half of the file (1 MiB stripes)
	for m in "$LOOP $WORK/loop.img $du_loop" "$MIX $MIX $du_mix"; do
		read -r name file du0 <<<"$m"
		grown=$(($(du -k "$file" | cut -f1) - du0))
		[ "$grown" -gt 30000 ] ||
			tfs_fail "a 100 MiB file on a set of a loop device and an image: expected more than 30 MB written to $name, got $grown KiB"
	done
	IMG="$MIX:$LOOP"
	tfs_mount
	cmp "$WORK/src100" "$MNT/big100" ||
		tfs_fail "the 100 MiB file on a loop device and an image, after a remount in the other order: expected its bytes, got others"
	tfs_umount
	tfs_fsck_clean
	rm -f "$WORK/src100"
fi

# and the set still mounts
IMG="$A:$B:$C"
tfs_mount
cmp "$WORK/src" "$MNT/big" || tfs_fail "the 200 MiB file at the end: expected its bytes, got others"
tfs_umount
tfs_fsck_clean

tfs_pass
