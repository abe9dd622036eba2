#!/bin/bash
# Description: garbage, truncated, empty, wrong-magic and bit-flipped images, a damaged checkpoint and overlapping extents: clear errors, never a crash or a hang
#
# A good image is made first (a marker file and crashwriter files, cleanly
# unmounted).  Each bad image is a copy of it, damaged, or something that
# never was a tensorfs.  For each, tensorfs -f and tensorfs in daemon mode
# must exit 1 with a message (the contract's words where it has some),
# tensorfs-fsck must exit 4 or 8 (8 where there is no tensorfs at all),
# under timeout 30, never dying of a signal or hanging, and neither may
# change the image; tensorfs-fsck -y must not write to something that is
# not a tensorfs, nor to what it cannot repair, and when it says it
# repaired an image, that image must be clean and mount.  Flipping one bit
# in each superblock copy must be refused, and so must checkpoint offsets
# near 2^63 that wrap onto the real ones; random bit flips in the first
# 64 KiB may be survivable, but then tensorfs and fsck must agree and the
# mount must work.  A bit flipped in only one superblock copy must still
# mount (the other copy is used), and flipping the older copy must lose
# nothing; tensorfs-fsck must find it (exit 4), tensorfs-fsck -y must
# repair it (exit 1, both copies valid again) and a second tensorfs-fsck
# find nothing (exit 0).  A bit flipped in the active checkpoint (found
# through the superblock's map, format.h) fails its checksum; load falls
# back to the older superblock copy and its checkpoint (lib/journal.c J8;
# J10 kept its blocks): the mount works and says so, tensorfs-fsck finds
# it (exit 4) and -y repairs it (exit 1).  With the older checkpoint
# damaged as well there is nothing to load (refused; tensorfs-fsck and -y
# exit 4, image unchanged).  Map pieces near 2^63 are refused (J10).
# Two files mapping the same block (a checkpoint rewritten with valid
# checksums) are refused too; tensorfs-fsck names both inodes, says it
# cannot repair that and exits 4.  tensorfs-fsck usage errors exit 16.
# No mount and no daemon is left behind.  TFS_SEED picks the bits.
. "$(dirname "$0")/lib.sh"

tfs_need timeout od dd cmp sha256sum fusermount3 mountpoint pgrep truncate xargs

CW="$TFS_TESTBIN/crashwriter"
[ -x "$CW" ] || tfs_fail "crashwriter: expected it built in '$TFS_TESTBIN', got no executable"
SEED=${TFS_SEED:-$(($(date +%s) % 1000000))}
RANDOM=$SEED
tfs_log "seed $SEED (rerun with TFS_SEED=$SEED)"

# ===== the good image =====

tfs_mkimg 256M
tfs_at_exit tfs_kill_strays
tfs_mount
head -c 1000000 /dev/urandom >"$WORK/marker"
cp "$WORK/marker" "$MNT/marker" || tfs_fail "cp to the good image: expected success, got failure"
"$CW" "$MNT/cw" "$WORK/manifest" 2 "$SEED" >"$WORK/crashwriter.log" 2>&1 &
cw=$!
sleep 1.5
kill -0 "$cw" 2>/dev/null || { cat "$WORK/crashwriter.log" >&2; tfs_fail "crashwriter on the good image: expected it running, got it exited"; }
kill -KILL "$cw"
wait "$cw" 2>/dev/null
tfs_umount
tfs_fsck_clean
GOOD="$WORK/good.img"
mv "$IMG" "$GOOD"
CASE="$WORK/case.img"
IMG=$CASE

# fresh: $CASE is a copy of the good image
fresh() {
	rm -rf "$CASE"
	cp --sparse=always "$GOOD" "$CASE" || tfs_fail "copying the good image: expected success, got failure"
}

# flip OFFSET BIT: flip one bit of $CASE
flip() {
	local _b
	_b=$(od -An -tu1 -j "$1" -N 1 "$CASE" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((_b ^ (1 << $2))))" |
		dd of="$CASE" bs=1 seek="$1" conv=notrunc status=none
}

# flip_nonzero START LEN: flip a random bit of a random non-zero byte of
# $CASE in [START, START + LEN): a byte in use, so inside the checksummed part
flip_nonzero() {
	local _offs _off
	mapfile -t _offs < <(od -An -v -tu1 -w1 -j "$1" -N "$2" "$CASE" |
		awk -v base="$1" '$1 != 0 { print base + NR - 1 }')
	[ "${#_offs[@]}" -gt 0 ] || tfs_fail "bytes $1..+$2 of a good image: expected some non-zero (a superblock), got all zeros"
	_off=${_offs[$(((RANDOM * 32768 + RANDOM) % ${#_offs[@]}))]}
	flip "$_off" $((RANDOM % 8))
	FLIPPED="$FLIPPED $_off"
}

# flip_any START LEN: flip a random bit of a random byte in [START, START + LEN)
flip_any() {
	local _off
	_off=$(($1 + (RANDOM * 32768 + RANDOM) % $2))
	flip "$_off" $((RANDOM % 8))
	FLIPPED="$FLIPPED $_off"
}

# le OFFSET BYTES, put_le OFFSET BYTES VALUE, crc32c OFFSET LEN: lib.sh's
# tfs_le, tfs_put_le and tfs_crc32c on $CASE
le() { tfs_le "$CASE" "$@"; }
put_le() { tfs_put_le "$CASE" "$@"; }
crc32c() { tfs_crc32c "$CASE" "$@"; }

# locate: the current superblock of $CASE and its checkpoint (format.h):
# SB (byte offset of the valid copy with the higher generation; both are
# valid here), GEN (its generation), CKPT (byte offset of the checkpoint,
# one piece in so small a tree), CKPT_LEN
locate() {
	SB=0
	[ "$(le 4112 8)" -gt "$(le 16 8)" ] && SB=4096
	GEN=$(le $((SB + 16)) 8)
	tfs_eq "map pieces of the good image's checkpoint" 1 "$(le $((SB + 60)) 4)"
	CKPT=$(($(le $((SB + 128)) 8) * 4096))
	CKPT_LEN=$(le $((SB + 64)) 8)
	[ "$CKPT_LEN" -gt 64 ] || tfs_fail "checkpoint of a good image: expected more than its 64-byte header, got $CKPT_LEN bytes"
}

# reseal: after a change inside the checkpoint, store its new CRC in the
# current superblock and that superblock's own CRC, as a write would
reseal() {
	put_le $((SB + 72)) 4 "$(crc32c "$CKPT" "$CKPT_LEN")"
	put_le $((SB + 4092)) 4 "$(crc32c "$SB" 4092)"
}

# usable WHAT: the mounted $CASE lists, reads, and takes a new file
usable() {
	ls -laR "$MNT" >/dev/null 2>"$WORK/ls.err" ||
		tfs_fail "$1: ls -laR: expected success, got '$(head -c 300 "$WORK/ls.err")'"
	find "$MNT" -type f -print0 | xargs -0 -r cat >/dev/null 2>"$WORK/cat.err" ||
		tfs_fail "$1: reading every file: expected success, got '$(head -c 300 "$WORK/cat.err")'"
	head -c 100000 /dev/urandom >"$WORK/probe"
	cp "$WORK/probe" "$MNT/probe" && cmp "$WORK/probe" "$MNT/probe" ||
		tfs_fail "$1: writing a new file: expected it to read back exactly, got failure"
	rm "$MNT/probe"
}

# refused WHAT FSCK_CODES [WORD...]: tensorfs (-f and daemon mode) exits 1
# with every WORD and tensorfs-fsck exits one of FSCK_CODES; none of them
# changes $CASE
refused() {
	local _what=$1 _codes=$2 _sum
	shift 2
	_sum=$(sha256sum <"$CASE")
	tfs_expect_mount_refused "$_what: tensorfs -f" "$CASE" "$MNT" "$@"
	tfs_expect_exit 1 "$_what: tensorfs (daemon mode)" "$TENSORFS" "$CASE" "$MNT"
	[ -s "$WORK/err" ] || tfs_fail "$_what: tensorfs (daemon mode): expected a message on stderr, got none"
	tfs_expect_words "$_what: tensorfs (daemon mode)" "$WORK/err" "$@"
	tfs_expect_unmounted "$_what: tensorfs (daemon mode)" "$MNT"
	tfs_eq "$_what: sha256 of the image after the refused mounts" "$_sum" "$(sha256sum <"$CASE")"
	tfs_expect_exit "$_codes" "$_what: tensorfs-fsck" "$FSCK" "$CASE"
	[ -s "$WORK/out" ] || [ -s "$WORK/err" ] || tfs_fail "$_what: tensorfs-fsck: expected a message, got none"
	tfs_eq "$_what: sha256 of the image after tensorfs-fsck" "$_sum" "$(sha256sum <"$CASE")"
}

# not_repaired WHAT CODES: tensorfs-fsck -y exits one of CODES and leaves
# $CASE as it was (it is no tensorfs: nothing there to repair)
not_repaired() {
	local _sum
	_sum=$(sha256sum <"$CASE")
	tfs_expect_exit "$2" "$1: tensorfs-fsck -y" "$FSCK" -y "$CASE"
	tfs_eq "$1: sha256 of the image after tensorfs-fsck -y" "$_sum" "$(sha256sum <"$CASE")"
}

# repair WHAT CODES: tensorfs-fsck -y exits one of CODES; if it says clean
# or repaired (0, 1), the image is then clean and mounts
repair() {
	tfs_expect_exit "$2" "$1: tensorfs-fsck -y" "$FSCK" -y "$CASE"
	case $TFS_RC in
	0 | 1)
		tfs_expect_exit 0 "$1: tensorfs-fsck after 'tensorfs-fsck -y' exited $TFS_RC" "$FSCK" "$CASE"
		tfs_mount
		usable "$1, repaired by tensorfs-fsck -y"
		tfs_umount
		tfs_fsck_clean
		;;
	esac
}

# ===== the good image: clean, verbose, mounts with everything in it =====

fresh
tfs_expect_exit 0 "good image: tensorfs-fsck" "$FSCK" "$CASE"
tfs_expect_exit 0 "good image: tensorfs-fsck -v" "$FSCK" -v "$CASE"
[ -s "$WORK/out" ] || [ -s "$WORK/err" ] || tfs_fail "good image: tensorfs-fsck -v: expected a report, got no output"
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "good image: marker: expected its bytes, got others"
"$CW" --verify "$MNT/cw" "$WORK/manifest" >"$WORK/verify.log" 2>&1 ||
	{ cat "$WORK/verify.log" >&2; tfs_fail "good image: crashwriter --verify: expected exit 0, got failure"; }
tfs_umount

# ===== never a tensorfs =====

rm -f "$CASE"
: >"$CASE"
refused "zero-size image" 8
not_repaired "zero-size image" 8

rm -f "$CASE"
truncate -s 256M "$CASE"
refused "all-zero image" 8 "not a tensorfs" mkfs.tensorfs
not_repaired "all-zero image" 8

rm -f "$CASE"
dd if=/dev/urandom of="$CASE" bs=1M count=128 status=none
refused "random garbage" "4|8" "not a tensorfs" mkfs.tensorfs
not_repaired "random garbage" "4|8"

rm -f "$CASE"
tfs_expect_mount_refused "missing image: tensorfs -f" "$CASE" "$MNT" case.img
tfs_expect_exit 8 "missing image: tensorfs-fsck" "$FSCK" "$CASE"
[ -s "$WORK/err" ] || tfs_fail "missing image: tensorfs-fsck: expected a message on stderr, got none"
# the image named once ("PROG: IMG: cannot open it: ..."), not
# "tensorfs-fsck: IMG: cannot open 'IMG': ..."
named_once() {
	[ "$(grep -oF -- "$CASE" "$WORK/err" | wc -l)" = 1 ] ||
		tfs_fail "$1: expected the image named once, got '$(cat "$WORK/err")'"
}
named_once "missing image: tensorfs-fsck"
tfs_expect_exit 8 "missing image: tensorfs-fsck -n" "$FSCK" -n "$CASE"
named_once "missing image: tensorfs-fsck -n"
mkdir "$CASE"
tfs_expect_mount_refused "a directory as the image: tensorfs -f" "$CASE" "$MNT"
named_once "a directory as the image: tensorfs -f"
tfs_expect_exit 8 "a directory as the image: tensorfs-fsck" "$FSCK" "$CASE"
named_once "a directory as the image: tensorfs-fsck"
tfs_expect_exit 8 "a directory as the image: tensorfs-fsck -y" "$FSCK" -y "$CASE"
named_once "a directory as the image: tensorfs-fsck -y"
# Regression: a directory, a FIFO or a character device got ENOTBLK's
# "Block device required"; it is what mkfs.tensorfs says, the device
# named once by the caller
rmdir "$CASE"
for kind in directory fifo /dev/zero; do
	case $kind in
	directory) mkdir "$CASE"; dev=$CASE ;;
	fifo) mkfifo "$CASE"; dev=$CASE ;;
	*) dev=$kind ;;
	esac
	tfs_expect_mount_refused "$kind as the image: tensorfs -f" "$dev" "$MNT" \
		"$dev: neither a block device nor a regular file"
	tfs_expect_exit 1 "$kind as the image: tensorfs (daemon mode)" "$TENSORFS" "$dev" "$MNT"
	tfs_expect_words "$kind as the image: tensorfs (daemon mode)" "$WORK/err" \
		"$dev: neither a block device nor a regular file"
	tfs_expect_exit 8 "$kind as the image: tensorfs-fsck" "$FSCK" "$dev"
	tfs_expect_words "$kind as the image: tensorfs-fsck" "$WORK/err" \
		"tensorfs-fsck: $dev: neither a block device nor a regular file"
	! grep -qi "block device required" "$WORK/err" ||
		tfs_fail "$kind as the image: expected mkfs's words, got '$(cat "$WORK/err")'"
	rm -rf "$CASE"
done
mkdir "$CASE"

# ===== a damaged tensorfs =====

fresh
printf BADMAGIC | dd of="$CASE" bs=1 seek=0 conv=notrunc status=none
printf BADMAGIC | dd of="$CASE" bs=1 seek=4096 conv=notrunc status=none
refused "wrong magic in both superblocks" 8 "not a tensorfs"
not_repaired "wrong magic in both superblocks" 8

for size in 1M 100M; do
	fresh
	truncate -s "$size" "$CASE"
	refused "image truncated to $size" 4 truncated
	not_repaired "image truncated to $size" 4
done

for trial in 1 2 3; do
	fresh
	FLIPPED=""
	flip_nonzero 0 4096
	flip_nonzero 4096 4096
	refused "one bit flipped in each superblock copy (trial $trial, bytes$FLIPPED)" "4|8"
	not_repaired "one bit flipped in each superblock copy (trial $trial)" "4|8"
done

# offsets near 2^63, in both copies, checksums fixed: journal_blocks,
# data_start and the checkpoint's first map piece + 2^63, so that every
# sum and byte offset wraps around 2^64 onto the real one.  The layout
# check once added without overflow: fsck passed it and it mounted.
fresh
for sb in 0 4096; do
	for off in 40 48 128; do
		put_le $((sb + off)) 8 $(($(le $((sb + off)) 8) + (1 << 63)))
	done
	put_le $((sb + 4092)) 4 "$(crc32c "$sb" 4092)"
done
what="offsets near 2^63 in both superblock copies"
refused "$what" "4|8" "superblock" "layout"
tfs_expect_words "$what: tensorfs-fsck" "$WORK/err" "superblock" "layout"
not_repaired "$what" "4|8"
# J10: only the map piece: its start + 2^63, its length 2^63 + its own,
# so that its end wraps onto the real one
fresh
for sb in 0 4096; do
	put_le $((sb + 128)) 8 $(($(le $((sb + 128)) 8) + (1 << 63)))
	put_le $((sb + 136)) 8 $(($(le $((sb + 136)) 8) + (1 << 63)))
	put_le $((sb + 4092)) 4 "$(crc32c "$sb" 4092)"
done
what="a checkpoint map piece near 2^63 in both superblock copies"
refused "$what" "4|8" "superblock" "layout"
not_repaired "$what" "4|8"

# an image of format version 2 (one device, before sets of members), as
# an older mkfs.tensorfs made it: it is clean, mounts with everything in
# it, takes changes, and stays version 2
fresh
tfs_to_format 2 "$CASE"
[ "$(le 8 4)" = 2 ] || [ "$(le 4104 4)" = 2 ] || tfs_fail "version 2 image: expected a superblock copy rewritten, got none"
tfs_expect_exit 0 "version 2 image: tensorfs-fsck" "$FSCK" "$CASE"
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "version 2 image: marker: expected its bytes, got others"
usable "version 2 image"
tfs_umount
tfs_fsck_clean
for sb in 0 4096; do
	v=$(le $((sb + 8)) 4)
	[ "$v" = 2 ] || [ "$v" = 0 ] || tfs_fail "version 2 image: superblock at $sb after a mount: expected version 2, got $v"
done

# an image of format version 3 (a set, before shared blocks): the same
# layout; it mounts, takes changes, stays version 3, and its copies copy
fresh
tfs_to_format 3 "$CASE"
[ "$(le 8 4)" = 3 ] || [ "$(le 4104 4)" = 3 ] || tfs_fail "version 3 image: expected a superblock copy rewritten, got none"
tfs_expect_exit 0 "version 3 image: tensorfs-fsck" "$FSCK" "$CASE"
tfs_mount
cmp "$WORK/marker" "$MNT/marker" || tfs_fail "version 3 image: marker: expected its bytes, got others"
usable "version 3 image"
cp "$MNT/marker" "$MNT/marker.copy" || tfs_fail "version 3 image: cp failed"
cmp "$MNT/marker" "$MNT/marker.copy" || tfs_fail "version 3 image: the copy differs"
tfs_eq "version 3 image: clone_bytes after a cp" 0 "$(awk '$1 == "clone_bytes" {print $2}' "$MNT/.tensorfs/stats")"
tfs_umount
tfs_fsck_clean
for sb in 0 4096; do
	v=$(le $((sb + 8)) 4)
	[ "$v" = 3 ] || [ "$v" = 0 ] || tfs_fail "version 3 image: superblock at $sb after a mount: expected version 3, got $v"
done

# an image of format version 1 (fixed checkpoint slots): refused, saying
# what to do; version 5, from the future, too
for v in 1 5; do
	fresh
	for sb in 0 4096; do
		put_le $((sb + 8)) 4 "$v"
		put_le $((sb + 4092)) 4 "$(crc32c "$sb" 4092)"
	done
	what="format version $v in both superblock copies"
	if [ "$v" = 1 ]; then
		refused "$what" "4|8" "older mkfs.tensorfs" "recreate it with mkfs.tensorfs"
	else
		refused "$what" "4|8" "version 5" "newer tensorfs"
	fi
	not_repaired "$what" "4|8"
done

for trial in 1 2; do
	fresh
	FLIPPED=""
	flip_nonzero 0 4096
	flip_nonzero 4096 4096
	for _ in $(seq 14); do flip_any 8192 $((65536 - 8192)); done
	refused "16 bits flipped in the first 64 KiB, both superblocks among them (trial $trial, bytes$FLIPPED)" "4|8"
	not_repaired "16 bits flipped in the first 64 KiB (trial $trial)" "4|8"
done

# random bits anywhere in the first 64 KiB: perhaps in unused space or in
# one copy of something kept twice, so the image may still mount; then
# tensorfs and tensorfs-fsck must agree and the mount must work
for trial in 1 2 3 4 5; do
	fresh
	FLIPPED=""
	for _ in $(seq 8); do flip_any 0 65536; done
	what="8 random bits flipped in the first 64 KiB (trial $trial, bytes$FLIPPED)"
	sum=$(sha256sum <"$CASE")
	tfs_expect_exit "0|4|8" "$what: tensorfs-fsck" "$FSCK" "$CASE"
	fsck_rc=$TFS_RC
	tfs_eq "$what: sha256 of the image after tensorfs-fsck" "$sum" "$(sha256sum <"$CASE")"
	tfs_try_mount "$CASE" "$MNT"
	mount_rc=$TFS_RC
	case $mount_rc in
	hang) tfs_fail "$what: tensorfs -f: expected exit 1 or a mount, got no exit within 30 s (hang)" ;;
	mounted | 1) ;;
	*) cat "$WORK/err" >&2; tfs_fail "$what: tensorfs -f: expected exit 1 or a mount, got exit $mount_rc" ;;
	esac
	! grep -qE 'Sanitizer|runtime error:' "$WORK/err" || tfs_fail "$what: tensorfs -f: expected no sanitizer report, got one"
	tfs_expect_unmounted "$what" "$MNT"
	tfs_log "$what: fsck exit $fsck_rc, mount: $mount_rc"
	if [ "$mount_rc" = mounted ]; then
		tfs_mount
		usable "$what"
		tfs_umount
		tfs_fsck_clean
	else
		[ -s "$WORK/err" ] || tfs_fail "$what: tensorfs -f: expected a message on stderr, got none"
		[ "$fsck_rc" != 0 ] || tfs_fail "$what: tensorfs-fsck said clean (exit 0), but tensorfs refused to mount it"
		repair "$what" "1|4|8"
	fi
done

# ===== one superblock copy damaged: the other one is used =====

# found WHAT COPY: tensorfs-fsck finds superblock copy COPY damaged (exit 4)
# and changes nothing
found() {
	local _sum
	_sum=$(sha256sum <"$CASE")
	tfs_expect_exit 4 "$1: tensorfs-fsck" "$FSCK" "$CASE"
	tfs_expect_words "$1: tensorfs-fsck" "$WORK/out" "superblock copy $2 is damaged"
	tfs_eq "$1: sha256 of the image after tensorfs-fsck" "$_sum" "$(sha256sum <"$CASE")"
}

# fixed WHAT COPY: tensorfs-fsck -y repairs it (exit 1, saying so), then
# tensorfs-fsck finds nothing (exit 0) and both copies are valid
fixed() {
	tfs_expect_exit 1 "$1: tensorfs-fsck -y" "$FSCK" -y "$CASE"
	tfs_expect_words "$1: tensorfs-fsck -y" "$WORK/out" "superblock copy $2 repaired" "1 errors, 1 repaired"
	tfs_expect_exit 0 "$1: tensorfs-fsck after tensorfs-fsck -y" "$FSCK" "$CASE"
	tfs_expect_exit 0 "$1: tensorfs-fsck -y after tensorfs-fsck -y" "$FSCK" -y "$CASE"
}

gen() { od -An -tu8 -j $(($1 * 4096 + 16)) -N 8 "$GOOD" | tr -d ' '; }
tfs_log "superblock generations of the good image (format.h offset 16): copy 0: $(gen 0), copy 1: $(gen 1)"
DAMAGED="$WORK/damaged.img"
kept=""
for copy in 0 1; do
	fresh
	FLIPPED=""
	flip_nonzero $((copy * 4096)) 4096
	what="one bit flipped in superblock copy $copy only (byte$FLIPPED)"
	found "$what" "$copy"
	cp --sparse=always "$CASE" "$DAMAGED"
	tfs_log "$what: mounting it (must work)"
	tfs_mount
	usable "$what"
	if cmp -s "$WORK/marker" "$MNT/marker" &&
		"$CW" --verify "$MNT/cw" "$WORK/manifest" >"$WORK/verify.log" 2>&1; then
		kept="$kept $copy"
		tfs_log "$what: mounted with everything intact"
	else
		tfs_log "$what: mounted an older state ($(tail -1 "$WORK/verify.log"))"
	fi
	tfs_umount
	tfs_fsck_clean

	# the same damage, repaired by tensorfs-fsck -y instead of a mount
	# (a mount rewrites a superblock too)
	mv "$DAMAGED" "$CASE"
	fixed "$what" "$copy"
	tfs_mount
	usable "$what, repaired by tensorfs-fsck -y"
	case " $kept " in
	*" $copy "*)
		cmp "$WORK/marker" "$MNT/marker" ||
			tfs_fail "$what, repaired by tensorfs-fsck -y: marker: expected its bytes, got others"
		"$CW" --verify "$MNT/cw" "$WORK/manifest" >"$WORK/verify.log" 2>&1 ||
			{ cat "$WORK/verify.log" >&2; tfs_fail "$what, repaired by tensorfs-fsck -y: crashwriter --verify: expected exit 0 (as mounted unrepaired), got failure"; }
		;;
	esac
	tfs_umount
	tfs_fsck_clean
done
[ -n "$kept" ] || tfs_fail "one superblock copy damaged: expected the flip of the older copy to lose nothing, got data lost with either copy damaged"

# the audit's reproduction: bit 0 of byte 20 (the generation) of copy 0,
# then -p, fsck(8)'s spelling of -y
fresh
flip 20 0
found "bit 0 of byte 20 flipped in superblock copy 0" 0
tfs_expect_exit 1 "bit 0 of byte 20 flipped in superblock copy 0: tensorfs-fsck -p" "$FSCK" -p "$CASE"
tfs_expect_exit 0 "bit 0 of byte 20 flipped in superblock copy 0: tensorfs-fsck after -p" "$FSCK" "$CASE"
[ "$(od -An -tu8 -j 16 -N 8 "$CASE" | tr -d ' ')" -lt 4294967296 ] ||
	tfs_fail "superblock copy 0 after tensorfs-fsck -p: expected a rewritten generation, got the flipped one"
tfs_mount
usable "bit 0 of byte 20 flipped in superblock copy 0, repaired by tensorfs-fsck -p"
case " $kept " in
*" 0 "*) cmp "$WORK/marker" "$MNT/marker" || tfs_fail "superblock copy 0 repaired by tensorfs-fsck -p: marker: expected its bytes (as mounted unrepaired), got others" ;;
esac
tfs_umount
tfs_fsck_clean

# ===== the checkpoint: the tree, checksummed, two kept (J2, J8, J10) =====

fresh
locate
# the older copy's checkpoint, another one: the good image was unmounted
# with a final checkpoint, so its older superblock names the one before
OLD_CKPT=$(($(le $(((SB ^ 4096) + 128)) 8) * 4096))
[ "$OLD_CKPT" != "$CKPT" ] || tfs_fail "good image: both superblock copies name the checkpoint at byte $CKPT, expected two"
tfs_log "good image: superblock copy $((SB / 4096)) is current (generation $GEN), checkpoint at byte $CKPT, $CKPT_LEN bytes; the older at byte $OLD_CKPT"
for part in header records; do
	fresh
	FLIPPED=""
	if [ "$part" = header ]; then
		flip_nonzero "$CKPT" 64
	else
		flip_any $((CKPT + 64)) $((CKPT_LEN - 64))
	fi
	what="one bit flipped in the checkpoint's $part (byte$FLIPPED)"
	# J8: the older copy and its checkpoint instead, said out loud
	tfs_expect_exit 4 "$what: tensorfs-fsck" "$FSCK" "$CASE"
	tfs_expect_words "$what: tensorfs-fsck" "$WORK/out" "checkpoint of superblock generation $GEN is corrupted" "using the older copy"
	tfs_mount
	usable "$what, the older copy mounted"
	tfs_umount
	tfs_expect_words "$what: tensorfs -f" "$WORK/daemon.log" "using the older copy"
	: >"$WORK/daemon.log"
	tfs_fsck_clean	# the mount's checkpoint replaced the damaged one
	fresh
	flip_nonzero "$CKPT" 64
	repair "$what" 1
	# both checkpoints damaged: nothing to load
	fresh
	FLIPPED=""
	flip_nonzero "$CKPT" 64
	flip_nonzero "$OLD_CKPT" 64
	what="one bit flipped in each checkpoint's header (byte$FLIPPED)"
	refused "$what" 4 "checkpoint" "corrupted"
	tfs_expect_words "$what: tensorfs-fsck" "$WORK/err" "checkpoint of superblock generation $GEN is corrupted" "older superblock copy's"
	not_repaired "$what" 4
	tfs_expect_words "$what: tensorfs-fsck -y" "$WORK/err" "checkpoint"
done

# ===== two files mapping one block =====

# a new file system with files a (two blocks) and b (one block); b's
# EXTENT record (format.h: type 5; ino, lblk, pblk ...) in the checkpoint
# is made to point into a's blocks and the checksums are made to match
rm -f "$CASE"
"$MKFS" -s 256M "$CASE" >"$WORK/mkfs.log" 2>&1 || { cat "$WORK/mkfs.log" >&2; tfs_fail "mkfs.tensorfs for the overlap image failed"; }
tfs_mount
head -c 8192 /dev/urandom >"$MNT/a"
head -c 4096 /dev/urandom >"$MNT/b"
tfs_umount
tfs_fsck_clean
locate
exts=()
pos=64
while [ "$pos" -lt "$CKPT_LEN" ]; do
	type=$(le $((CKPT + pos)) 4)
	blen=$(le $((CKPT + pos + 4)) 4)
	[ "$type" = 5 ] && exts+=("$((CKPT + pos + 8))")
	pos=$((pos + 8 + blen))
done
[ "${#exts[@]}" = 2 ] || tfs_fail "checkpoint of two one-extent files: expected 2 EXTENT records, got ${#exts[@]}"
ino_a=$(le "${exts[0]}" 8)
ino_b=$(le "${exts[1]}" 8)
[ "$(le $((exts[0] + 24)) 8)" = 2 ] || { ino_a=$ino_b; ino_b=$(le "${exts[0]}" 8); exts=("${exts[1]}" "${exts[0]}"); }
[ "$(le $((exts[0] + 24)) 8)" = 2 ] || tfs_fail "checkpoint of files a (8 KiB) and b (4 KiB): expected an EXTENT of 2 blocks, got none"
put_le $((exts[1] + 16)) 8 $(($(le $((exts[0] + 16)) 8) + 1))
reseal
what="files a (inode $ino_a) and b (inode $ino_b) mapping one block"
refused "$what" 4 "overlaps"
tfs_expect_words "$what: tensorfs-fsck" "$WORK/out" "inodes $ino_a and $ino_b both map device block"
tfs_expect_words "$what: tensorfs-fsck" "$WORK/err" "overlapping extents" "cannot repair"
! grep -qF "run tensorfs-fsck" "$WORK/out" "$WORK/err" || tfs_fail "$what: tensorfs-fsck: expected no advice to run itself, got '$(cat "$WORK/err")'"
not_repaired "$what" 4
tfs_expect_words "$what: tensorfs-fsck -y" "$WORK/err" "overlapping extents" "cannot repair"
# Regression: run as fsck.tensorfs (as fsck(8) runs it), every message,
# lib's findings included, says fsck.tensorfs, never tensorfs-fsck
FSCK_T="$TFS_BIN/fsck.tensorfs"
tfs_expect_exit 4 "$what: fsck.tensorfs" "$FSCK_T" "$CASE"
tfs_expect_words "$what: fsck.tensorfs" "$WORK/out" "fsck.tensorfs: inodes $ino_a and $ino_b both map device block"
tfs_expect_words "$what: fsck.tensorfs" "$WORK/err" "fsck.tensorfs: $CASE: the file system has overlapping" \
	"which fsck.tensorfs cannot repair"
! grep -qF tensorfs-fsck "$WORK/out" "$WORK/err" ||
	tfs_fail "$what: fsck.tensorfs: expected no 'tensorfs-fsck' in its messages, got '$(cat "$WORK/out" "$WORK/err")'"

# ===== tensorfs-fsck usage errors =====

tfs_expect_exit 16 "tensorfs-fsck without arguments" "$FSCK"
[ -s "$WORK/err" ] || tfs_fail "tensorfs-fsck without arguments: expected a message on stderr, got none"
tfs_expect_exit 16 "tensorfs-fsck with an unknown option" "$FSCK" -Z "$GOOD"
[ -s "$WORK/err" ] || tfs_fail "tensorfs-fsck -Z: expected a message on stderr, got none"
tfs_expect_exit 16 "tensorfs-fsck with two devices" "$FSCK" "$GOOD" "$GOOD"
tfs_expect_exit 0 "tensorfs-fsck --help" "$FSCK" --help
for opt in -y -n -v -p -a --help; do
	grep -qE -- "(^|[ ,])$opt([ ,]|\$)" "$WORK/out" || tfs_fail "tensorfs-fsck --help: expected option $opt documented, got '$(cat "$WORK/out")'"
done
tfs_expect_words "tensorfs-fsck --help" "$WORK/out" "0 no errors" "1 errors were found and all" "4 errors left" "8 operational error" "16 usage error"
tfs_expect_exit 0 "tensorfs-fsck -a on the good image" "$FSCK" -a "$GOOD"
# fsck.tensorfs: the same codes (fsck(8)'s: usage 16), its own name
for args in "" "-Z $GOOD" "$GOOD $GOOD" "-C x $GOOD"; do
	# shellcheck disable=SC2086 # the words are the arguments
	tfs_expect_exit 16 "fsck.tensorfs $args" "$FSCK_T" $args
	tfs_expect_words "fsck.tensorfs $args" "$WORK/err" "fsck.tensorfs"
	! grep -qF tensorfs-fsck "$WORK/err" ||
		tfs_fail "fsck.tensorfs $args: expected its own name only, got '$(cat "$WORK/err")'"
done
tfs_expect_exit 0 "fsck.tensorfs --help" "$FSCK_T" --help
tfs_expect_words "fsck.tensorfs --help" "$WORK/out" "Usage: fsck.tensorfs" "16 usage error"

# ===== nothing left behind =====

tfs_expect_unmounted "after all the bad images" "$MNT"
! grep -qF " $WORK/" /proc/self/mounts || tfs_fail "after all the bad images: expected no mount under $WORK, got one"
left=$(pgrep -f -- "$WORK/")
[ -z "$left" ] || tfs_fail "after all the bad images: expected no daemon left, got pids $left"

tfs_pass
