#!/bin/bash
# Description: tensorfs-fsck --upgrade turns a format-2 image (one device) and a format-3 set, as earlier versions made them, into format 4 in place: every byte kept, both superblock copies of every member rewritten, fsck clean, copies clone afterwards, a second run changes nothing; refused with -n, and not done while the check finds errors
#
# An image with files is made and unmounted, then its superblocks are
# made to say format 2 (lib.sh's tfs_to_format, as test-bad-images does
# to show such images still mount).  Before the upgrade a cp copies its
# bytes (clone_bytes stays 0); after it a cp clones (clone_bytes grows)
# and tensorfs-snap snapshots (before: refused, naming the upgrade), and
# the files are the ones written.  A superblock copy damaged before
# the upgrade is an error the upgrade waits for: tensorfs-fsck --upgrade
# exits 4 and writes nothing; -y --upgrade repairs it (exit 1) and still
# does not upgrade; the next --upgrade does.  A set of 2 members made to
# say format 3 is upgraded as a whole, the second member's superblocks
# included.  With the fault device (a build with -DTFS_TEST_HOOKS=ON),
# the power is cut at each write or flush of an upgrade in turn, losing
# any mix of the unflushed writes: each time the image must be of format
# 2 or 4, fsck-clean, with every file, and a second --upgrade finishes.
. "$(dirname "$0")/lib.sh"

tfs_need od dd cmp cp
SNAP="$TFS_BIN/tensorfs-snap"
[ -x "$SNAP" ] || tfs_fail "no tensorfs-snap in $TFS_BIN"

# versions FILE: the version of both superblock copies (format.h offset 8)
versions() { echo "$(tfs_le "$1" 8 4) $(tfs_le "$1" 4104 4)"; }

# fill: files on the mount, and their copies in $WORK/src
fill() {
	mkdir -p "$WORK/src/d"
	head -c 3000000 /dev/urandom >"$WORK/src/big"
	head -c 5000 /dev/urandom >"$WORK/src/d/small"
	cp -r "$WORK/src/." "$MNT/" || tfs_fail "cp to the mount failed"
}

# same WHAT: the mount holds what fill() wrote
same() {
	cmp "$WORK/src/big" "$MNT/big" && cmp "$WORK/src/d/small" "$MNT/d/small" ||
		tfs_fail "$1: expected the files written before, got other bytes"
}

clone_bytes() { awk '$1 == "clone_bytes" { print $2 }' "$MNT/.tensorfs/stats"; }

# upgraded WHAT FROM: run tensorfs-fsck --upgrade on $IMG, which must
# upgrade it from format FROM, then check the result through a mount
upgraded() {
	tfs_expect_exit 0 "$1: tensorfs-fsck --upgrade" "$FSCK" --upgrade "$IMG"
	tfs_expect_words "$1: tensorfs-fsck --upgrade" "$WORK/out" \
		"upgraded from format $2 to format 4"
	tfs_fsck_clean
	"$FSCK" -v "$IMG" >"$WORK/out" 2>&1
	tfs_expect_words "$1: tensorfs-fsck -v after it" "$WORK/out" "format 4;"
	tfs_mount
	same "$1, upgraded"
	cp "$MNT/big" "$MNT/big.clone" || tfs_fail "$1: cp after the upgrade failed"
	cmp "$MNT/big" "$MNT/big.clone" || tfs_fail "$1: the copy after the upgrade differs"
	[ "$(clone_bytes)" -gt 0 ] ||
		tfs_fail "$1: expected the cp after the upgrade to clone (clone_bytes > 0), got clone_bytes $(clone_bytes)"
	tfs_expect_exit 0 "$1: tensorfs-snap after the upgrade" "$SNAP" "$MNT/d" "$MNT/d.snap"
	cmp "$MNT/d/small" "$MNT/d.snap/small" || tfs_fail "$1: the snapshot after the upgrade differs"
	tfs_umount
	tfs_fsck_clean
	tfs_expect_exit 0 "$1: tensorfs-fsck --upgrade again" "$FSCK" --upgrade "$IMG"
	tfs_expect_words "$1: tensorfs-fsck --upgrade again" "$WORK/out" \
		"already of format 4" "nothing to upgrade"
}

# powercuts WHAT V FILE...: for n = 1, 2, ...: each FILE back to FILE.good
# (format 4, after fill()), made to say format V, and tensorfs-fsck
# --upgrade on $IMG with the power cut at its nth write or flush, any mix
# of the unflushed writes lost (seed n); until an upgrade ends before its
# nth.  Each time $IMG is of format V or 4 (its first FILE's superblock
# copies), fsck-clean, with every file, and a second --upgrade ends in 4.
powercuts() {
	local what=$1 v=$2 n=0 f vv cut_rc
	shift 2
	if ! "$TENSORFS" --version | grep -q "built with test hooks"; then
		tfs_log "$what: power cuts skipped: needs a build with -DTFS_TEST_HOOKS=ON (the fault device)"
		return 0
	fi
	while :; do
		n=$((n + 1))
		[ "$n" -le 200 ] || tfs_fail "$what: the upgrade still not done after 200 writes and flushes"
		for f in "$@"; do
			cp --sparse=always "$f.good" "$f" || tfs_fail "cannot copy $f.good"
		done
		tfs_to_format "$v" "$@"
		TFS_FAULT="volatile,seed=$n,cut=write+flush:$n" \
			"$FSCK" --upgrade "$IMG" >"$WORK/out" 2>"$WORK/err"
		cut_rc=$?
		[ "$cut_rc" = 0 ] || [ "$cut_rc" = 86 ] || { # 86: TFS_FAULT_CUT_STATUS
			cat "$WORK/out" "$WORK/err" >&2
			tfs_fail "$what: power cut at write or flush $n of an upgrade: expected exit 0 or 86, got $cut_rc"
		}
		vv=$(tfs_le "$1" 8 4)/$(tfs_le "$1" 4104 4)
		case $vv in "$v/$v" | "$v/4" | "4/$v" | 4/4) ;;
		*) tfs_fail "$what: power cut at write or flush $n of an upgrade: expected superblock versions $v or 4, got $vv" ;;
		esac
		tfs_fsck_clean
		tfs_mount
		same "$what: power cut at write or flush $n of an upgrade (versions $vv)"
		tfs_umount
		[ "$cut_rc" = 0 ] && break # done before its nth
		tfs_expect_exit 0 "$what: power cut at write or flush $n, then tensorfs-fsck --upgrade" "$FSCK" --upgrade "$IMG"
		for f in "$@"; do
			tfs_eq "$what: power cut at write or flush $n, upgraded again: superblock versions of $f" "4 4" "$(versions "$f")"
		done
	done
	tfs_log "$what: a power cut at each of the $((n - 1)) writes and flushes of an upgrade"
}

# ===== one device, format 2 =====

tfs_mkimg 128M
tfs_at_exit tfs_kill_strays
tfs_mount
fill
tfs_umount
cp --sparse=always "$IMG" "$IMG.good" || tfs_fail "cannot copy the image"
tfs_to_format 2 "$IMG"
tfs_eq "format 2 image: superblock versions" "2 2" "$(versions "$IMG")"

# the usage error first: nothing may be written
tfs_expect_exit 16 "tensorfs-fsck -n --upgrade" "$FSCK" -n --upgrade "$IMG"
tfs_expect_words "tensorfs-fsck -n --upgrade" "$WORK/err" "--upgrade" "-n"
tfs_expect_exit 16 "tensorfs-fsck --upgrade -y -n" "$FSCK" --upgrade -y -n "$IMG"
tfs_eq "format 2 image after the usage errors: superblock versions" "2 2" "$(versions "$IMG")"

# before: it mounts as format 2, and a cp copies
tfs_fsck_clean
"$FSCK" -v "$IMG" >"$WORK/out" 2>&1
tfs_expect_words "format 2 image: tensorfs-fsck -v" "$WORK/out" "format 2;"
tfs_mount
same "format 2 image"
cp "$MNT/big" "$MNT/big.copy" || tfs_fail "format 2 image: cp failed"
tfs_eq "format 2 image: clone_bytes after a cp" 0 "$(clone_bytes)"
tfs_expect_exit 1 "format 2 image: tensorfs-snap" "$SNAP" "$MNT/d" "$MNT/d.snap"
tfs_expect_words "format 2 image: tensorfs-snap" "$WORK/err" "cannot share blocks" "tensorfs-fsck --upgrade"
rm "$MNT/big.copy" || tfs_fail "format 2 image: rm failed"
tfs_umount

upgraded "format 2 image" 2
tfs_eq "format 2 image, upgraded: superblock versions" "4 4" "$(versions "$IMG")"
powercuts "format 2 image" 2 "$IMG"

# ===== a damaged superblock copy: repaired first, upgraded after =====

cp --sparse=always "$IMG.good" "$IMG" || tfs_fail "cannot copy the image"
tfs_to_format 2 "$IMG"
# the copy with the lower generation (format.h offset 16): its last
# write time, inside its checksum, changed
if [ "$(tfs_le "$IMG" 16 8)" -lt "$(tfs_le "$IMG" 4112 8)" ]; then old=0; else old=4096; fi
tfs_put_le "$IMG" $((old + 112)) 8 12345
tfs_expect_exit 4 "a damaged superblock copy: tensorfs-fsck --upgrade" "$FSCK" --upgrade "$IMG"
tfs_expect_words "a damaged superblock copy: tensorfs-fsck --upgrade" "$WORK/out" "not upgraded" "-y"
tfs_eq "a damaged superblock copy: the good copy's version after --upgrade" 2 \
	"$(tfs_le "$IMG" $((4096 - old + 8)) 4)"
tfs_expect_exit 1 "a damaged superblock copy: tensorfs-fsck -y --upgrade" "$FSCK" -y --upgrade "$IMG"
tfs_expect_words "a damaged superblock copy: tensorfs-fsck -y --upgrade" "$WORK/out" "not upgraded" "run it again"
tfs_eq "a damaged superblock copy, repaired: superblock versions" "2 2" "$(versions "$IMG")"
upgraded "a repaired format 2 image" 2

# ===== a set of 2 members, format 3 =====

tfs_mkset 2 96M
rm -rf "$WORK/src"
tfs_mount
fill
tfs_umount
cp --sparse=always "$WORK/m1.img" "$WORK/m1.img.good" && cp --sparse=always "$WORK/m2.img" "$WORK/m2.img.good" ||
	tfs_fail "cannot copy the set's images"
tfs_to_format 3 "$WORK/m1.img" "$WORK/m2.img"
tfs_eq "format 3 set: member 1's superblock versions" "3 3" "$(versions "$WORK/m1.img")"
tfs_eq "format 3 set: member 2's superblock versions" "3 3" "$(versions "$WORK/m2.img")"
tfs_fsck_clean
upgraded "format 3 set" 3
tfs_eq "format 3 set, upgraded: member 1's superblock versions" "4 4" "$(versions "$WORK/m1.img")"
tfs_eq "format 3 set, upgraded: member 2's superblock versions" "4 4" "$(versions "$WORK/m2.img")"
powercuts "format 3 set" 3 "$WORK/m1.img" "$WORK/m2.img"

tfs_pass
