#!/bin/bash
# Description: tools/setup.sh --device A --device B on two loop devices
# (sparse images): it formats them as one set, mounts it (a file written
# there lands on both), and prints the set's fstab line (tensorfs#A:B, type
# fuse, x-systemd.requires= of each member, pass 0), which findmnt --verify
# passes and mount(8) mounts; run again, unmounted, it keeps the set and
# its data, and mounted, it leaves the mount alone; tensorfs-fsck of the
# set is clean.  A set with a device that holds ext4 is refused (exit 1)
# and the ext4 and the other device are left as they were.  One --device
# still gets the device's line (fuse.tensorfs, pass 2), and --image the
# image's (tensorfs-fsck@ of its path, pass 0).  Usage errors exit 2,
# naming the device, before anything is installed: a --device
# given twice, also under another name, --image or --size with --device,
# a device that does not exist or is no block device, ':' in a member's
# name, --device without a value.
#
# setup.sh installs tensorfs in /usr/local and writes /etc/tensorfs,
# /etc/tmpfiles.d and enable_uring: it runs here in a mount namespace of
# its own (tfs_mount8_ns), where /etc and /usr/local are overlays whose
# writes go to the work directory and enable_uring is a file of it, with
# TFS_SETUP_BUILD naming this build (no packages, no build).  Nothing of
# it reaches the host, the real /etc/fstab included.  Skips without loop
# devices or overlayfs.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_mount8_ns "$@"
tfs_need losetup cmp du mkfs.ext4 e2fsck wipefs systemd-escape
[ "$(id -u)" = 0 ] || tfs_skip "loop devices and setup.sh need root"
top=$(cd "$(dirname "$0")/../.." && pwd)
SETUP="$top/tools/setup.sh"
tfs_mkimg 64M
MNT1="$WORK/mnt1"
mkdir "$MNT1"

# ----- the namespace: what setup.sh writes stays in $WORK -----
PARAM=/sys/module/fuse/parameters/enable_uring
OVERLAYS=""
LOOPS=""
# at exit: setup.sh's mounts and daemons, then the loop devices, then the
# overlays (lib.sh then unmounts $MNT and removes $WORK)
# shellcheck disable=SC2016 # expanded at exit
tfs_at_exit 'for m in "$MNT" "$MNT1"; do tfs_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }; done
tfs_kill_strays
for l in $LOOPS; do losetup -d "$l"; done
for o in $OVERLAYS; do umount -l "$o"; done'
for d in /etc /usr/local; do
	n=$(basename "$d")
	mkdir -p "$WORK/ov/$n/up" "$WORK/ov/$n/work"
	mount -t overlay overlay -o "lowerdir=$d,upperdir=$WORK/ov/$n/up,workdir=$WORK/ov/$n/work" "$d" ||
		tfs_skip "cannot put an overlay on $d (overlayfs): setup.sh would write to the real one"
	OVERLAYS="$d $OVERLAYS"
done
if [ -e "$PARAM" ]; then
	cat "$PARAM" >"$WORK/enable_uring" || tfs_fail "cannot read $PARAM"
	mount --bind "$WORK/enable_uring" "$PARAM" || tfs_skip "cannot bind a file over $PARAM"
	OVERLAYS="$PARAM $OVERLAYS"
fi
export TFS_SETUP_BUILD="$TFS_BIN/.."

# attach SIZE: set LOOP to a new loop device over a sparse image of SIZE
# in $WORK, its image in LOOP_IMG
attach() {
	LOOP_IMG="$WORK/loop$(($(echo "$LOOPS" | wc -w) + 1)).img"
	truncate -s "$1" "$LOOP_IMG" || tfs_fail "truncate -s $1 $LOOP_IMG failed"
	LOOP=$(losetup -f --show "$LOOP_IMG" 2>"$WORK/losetup.err") ||
		tfs_skip "no loop device: $(cat "$WORK/losetup.err")"
	LOOPS="$LOOPS $LOOP"
	[ -b "$LOOP" ] || tfs_skip "'$LOOP' is not a block device"
}
attach 128M
A=$LOOP A_IMG=$LOOP_IMG
attach 128M
B=$LOOP B_IMG=$LOOP_IMG
attach 128M
X=$LOOP

# daemon_of DIR: the pid of the daemon serving DIR, started by setup.sh
# (/usr/local/bin/tensorfs ...) or by mount(8) (tensorfs ...)
daemon_of() {
	pgrep -f -- "tensorfs .* $1( |\$)" | head -1
}

# setup CODES WHAT ARGS...: tools/setup.sh ARGS under sh, as a user runs it
setup() {
	local _codes=$1 _what=$2
	shift 2
	tfs_log "setup.sh $*"
	sh "$SETUP" "$@" >"$WORK/out" 2>"$WORK/err"
	TFS_RC=$?
	case "|$_codes|" in
	*"|$TFS_RC|"*) ;;
	*)
		cat "$WORK/out" "$WORK/err" >&2
		tfs_fail "$_what: expected exit $_codes, got $TFS_RC"
		;;
	esac
}

# ----- usage errors: exit 2, the device named, nothing installed -----
# usage WHAT WORDS... -- ARGS...
usage() {
	local _what=$1 _words=()
	shift
	while [ "$1" != -- ]; do _words+=("$1"); shift; done
	shift
	setup 2 "$_what" "$@"
	tfs_expect_words "$_what" "$WORK/err" "${_words[@]}"
	tfs_expect_unmounted "$_what" "$MNT"
}
ln -s "$A" "$WORK/a-link"
ln -s "$B" "$WORK/b:colon"
touch "$WORK/plain-file"
usage "a device given twice" "$A" "twice" -- --device "$A" --device "$B" --device "$A" --mount "$MNT"
usage "a device given twice under another name" "$A" "$WORK/a-link" "same device" -- \
	--device "$A" --device "$WORK/a-link" --mount "$MNT"
usage "--image with --device" "--image" "--device" -- --device "$A" --image "$WORK/x.img" --mount "$MNT"
usage "--device with --image" "--image" "--device" -- --image "$WORK/x.img" --device "$A" --device "$B" --mount "$MNT"
usage "--size with --device" "--size" -- --device "$A" --device "$B" --size 1G --mount "$MNT"
usage "a device that does not exist" "$WORK/nvme9n9" "no such device" -- \
	--device "$A" --device "$WORK/nvme9n9" --mount "$MNT"
usage "a device that is a plain file" "$WORK/plain-file" "not a block device" -- \
	--device "$WORK/plain-file" --device "$B" --mount "$MNT"
usage "':' in a member's name" "$WORK/b:colon" "':'" -- --device "$A" --device "$WORK/b:colon" --mount "$MNT"
usage "--device without a value" "--device" -- --device "$A" --device
made=$(find "$WORK/ov/local/up" "$WORK/ov/etc/up" -mindepth 1 | head -3)
[ -z "$made" ] || tfs_fail "setup.sh with a usage error: expected nothing installed, got $made"
[ ! -e "$WORK/x.img" ] || tfs_fail "setup.sh with a usage error: expected no image made, got $WORK/x.img"

# ----- a set with a device that holds ext4: refused, both left as they were -----
mkfs.ext4 -q -F "$X" || tfs_fail "mkfs.ext4 $X failed"
setup 1 "setup.sh of a set with an ext4 device" --device "$A" --device "$X" --mount "$MNT"
tfs_expect_words "setup.sh of a set with an ext4 device" "$WORK/err" "$X" "-f"
tfs_expect_unmounted "setup.sh of a set with an ext4 device" "$MNT"
e2fsck -fn "$X" >"$WORK/e2fsck.log" 2>&1 || { cat "$WORK/e2fsck.log" >&2; tfs_fail "the ext4 setup.sh refused: expected e2fsck clean, got errors"; }
tfs_expect_exit 8 "tensorfs-fsck of the device set up with the ext4 one" "$FSCK" "$A"
wipefs -q -a "$X" || tfs_fail "wipefs $X failed"

# ----- a set of two devices: formatted, mounted, data on both -----
du_a0=$(du -k "$A_IMG" | cut -f1)
du_b0=$(du -k "$B_IMG" | cut -f1)
setup 0 "setup.sh --device A --device B" --device "$B" --device "$A" --mount "$MNT"
IMG="$B:$A"
tfs_mounted "$MNT" || tfs_fail "setup.sh --device A --device B: expected a mount on $MNT, got none: $(cat "$WORK/out")"
src=$(awk -v m="$MNT" '$2 == m { print $1, $3 }' /proc/mounts)
case $src in
"$A:$B fuse.tensorfs" | "$B:$A fuse.tensorfs") ;;
*) tfs_fail "setup.sh's mount: expected the source $B:$A (or $A:$B) and the type fuse.tensorfs, got '$src'" ;;
esac
tfs_expect_words "setup.sh of a set" "$WORK/out" "mounted on $MNT"
[ "$(cat "$WORK/enable_uring" 2>/dev/null || echo Y)" = Y ] ||
	tfs_fail "setup.sh: expected enable_uring turned on (in this test's copy), got $(cat "$WORK/enable_uring")"
# the fstab line, the last line setup.sh prints
line=$(tail -n 1 "$WORK/out")
tfs_eq "setup.sh's fstab line of a set" \
	"tensorfs#$B:$A  $MNT  fuse  defaults,nofail,x-systemd.requires=$B,x-systemd.requires=$A  0  0" "$line"
head -c 48M /dev/urandom >"$WORK/src"
cp "$WORK/src" "$MNT/big" || tfs_fail "cp of 48 MiB to setup.sh's set failed"
sync "$MNT/big" || tfs_fail "sync of the file on setup.sh's set failed"
DPID=$(daemon_of "$MNT")
[ -n "$DPID" ] || tfs_fail "no daemon serving $MNT"

# mounted: run again, it leaves the mount alone
setup 0 "setup.sh run again while mounted" --device "$A" --device "$B" --mount "$MNT"
tfs_expect_words "setup.sh run again while mounted" "$WORK/out" "already mounted"
tfs_eq "daemon after setup.sh ran again" "$DPID" "$(daemon_of "$MNT")"
umount "$MNT" || tfs_fail "umount $MNT failed"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"
tfs_fsck_clean
while read -r name img du0; do
	grown=$(($(du -k "$img" | cut -f1) - du0))
	[ "$grown" -gt 8192 ] ||
		tfs_fail "a 48 MiB file on a set of two: expected more than 8 MiB written to member $name, got $grown KiB"
done <<EOF
A $A_IMG $du_a0
B $B_IMG $du_b0
EOF

# unmounted: run again, the set and its file kept
setup 0 "setup.sh run again on the set" --device "$A" --device "$B" --mount "$MNT"
tfs_expect_words "setup.sh run again on the set" "$WORK/out" "holds tensorfs already"
cmp "$WORK/src" "$MNT/big" || tfs_fail "the file after setup.sh ran again: expected its bytes, got others"
DPID=$(daemon_of "$MNT")
umount "$MNT" || tfs_fail "umount $MNT failed"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"

# ----- the fstab line: findmnt --verify passes it, mount(8) mounts it -----
printf '%s\n' "$line" >"$WORK/fstab"
# its summary: "0 parse errors, 0 errors, N warnings", or "Success, no
# errors or warnings detected"
if ! findmnt --verify --tab-file "$WORK/fstab" >"$WORK/verify" 2>&1 ||
	! grep -Eq "^(0 parse errors, 0 errors|Success, no errors)" "$WORK/verify"; then
	cat "$WORK/verify" >&2
	tfs_fail "findmnt --verify of setup.sh's line of a set: errors"
fi
mount -T "$WORK/fstab" "$MNT" >"$WORK/mount.out" 2>&1 ||
	{ cat "$WORK/mount.out" >&2; tfs_fail "mount -T fstab $MNT with setup.sh's line of a set failed"; }
tfs_wait_for 10 mountpoint -q "$MNT" || tfs_fail "mount -T fstab: no mount on $MNT"
cmp "$WORK/src" "$MNT/big" || tfs_fail "the file mounted by setup.sh's fstab line: expected its bytes, got others"
DPID=$(daemon_of "$MNT")
umount "$MNT" || tfs_fail "umount $MNT failed"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"
tfs_fsck_clean

# ----- one device: the device's line, as before -----
setup 0 "setup.sh --device X" --device "$X" --mount "$MNT1"
tfs_mounted "$MNT1" || tfs_fail "setup.sh --device X: expected a mount on $MNT1, got none"
tfs_eq "setup.sh's fstab line of one device" \
	"$X  $MNT1  fuse.tensorfs  defaults,nofail,x-systemd.requires=$X  0  2" "$(tail -n 1 "$WORK/out")"
DPID=$(daemon_of "$MNT1")
umount "$MNT1" || tfs_fail "umount $MNT1 failed"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"
tfs_expect_exit 0 "tensorfs-fsck of the device setup.sh formatted" "$FSCK" "$X"

# ----- an image file: the image's line, as before -----
setup 0 "setup.sh --image FILE --size 64M" --image "$WORK/x.img" --size 64M --mount "$MNT1"
tfs_mounted "$MNT1" || tfs_fail "setup.sh --image: expected a mount on $MNT1, got none"
tfs_eq "setup.sh's fstab line of an image" \
	"$WORK/x.img  $MNT1  fuse.tensorfs  defaults,nofail,x-systemd.requires-mounts-for=$WORK,x-systemd.requires=tensorfs-fsck@$(systemd-escape --path "$WORK/x.img").service  0  0" \
	"$(tail -n 1 "$WORK/out")"
DPID=$(daemon_of "$MNT1")
umount "$MNT1" || tfs_fail "umount $MNT1 failed"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"
tfs_expect_exit 0 "tensorfs-fsck of the image setup.sh made" "$FSCK" "$WORK/x.img"
tfs_pass
