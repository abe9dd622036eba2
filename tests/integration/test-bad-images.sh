#!/bin/bash
# Description: garbage, truncated, empty, wrong-magic and bit-flipped images: clear errors, never a crash or a hang
#
# A good image is made first (a marker file and crashwriter files, cleanly
# unmounted).  Each bad image is a copy of it, damaged, or something that
# never was a tensorfs.  For each, tensorfs -f and tensorfs in daemon mode
# must exit 1 with a message (the contract's words where it has some),
# tensorfs-fsck must exit 4 or 8 (8 where there is no tensorfs at all),
# under timeout 30, never dying of a signal or hanging, and neither may
# change the image; tensorfs-fsck -y must not write to something that is
# not a tensorfs, and when it says it repaired an image, that image must be
# clean and mount.  Flipping one bit in each superblock copy must be refused;
# random bit flips in the first 64 KiB may be survivable, but then tensorfs
# and fsck must agree and the mount must work.  A bit flipped in only one
# superblock copy must still mount (the other copy is used), and flipping
# the older copy must lose nothing.  tensorfs-fsck usage errors exit 16.
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
mkdir "$CASE"
tfs_expect_mount_refused "a directory as the image: tensorfs -f" "$CASE" "$MNT"
tfs_expect_exit 8 "a directory as the image: tensorfs-fsck" "$FSCK" "$CASE"
tfs_expect_exit 8 "a directory as the image: tensorfs-fsck -y" "$FSCK" -y "$CASE"

# ===== a damaged tensorfs =====

fresh
printf BADMAGIC | dd of="$CASE" bs=1 seek=0 conv=notrunc status=none
printf BADMAGIC | dd of="$CASE" bs=1 seek=4096 conv=notrunc status=none
refused "wrong magic in both superblocks" "4|8" "not a tensorfs"
repair "wrong magic in both superblocks" "1|4|8"

for size in 1M 100M; do
	fresh
	truncate -s "$size" "$CASE"
	refused "image truncated to $size" "4|8"
	repair "image truncated to $size" "1|4|8"
done

for trial in 1 2 3; do
	fresh
	FLIPPED=""
	flip_nonzero 0 4096
	flip_nonzero 4096 4096
	refused "one bit flipped in each superblock copy (trial $trial, bytes$FLIPPED)" "4|8"
	repair "one bit flipped in each superblock copy (trial $trial)" "1|4|8"
done

for trial in 1 2; do
	fresh
	FLIPPED=""
	flip_nonzero 0 4096
	flip_nonzero 4096 4096
	for _ in $(seq 14); do flip_any 8192 $((65536 - 8192)); done
	refused "16 bits flipped in the first 64 KiB, both superblocks among them (trial $trial, bytes$FLIPPED)" "4|8"
	repair "16 bits flipped in the first 64 KiB (trial $trial)" "1|4|8"
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

gen() { od -An -tu8 -j $(($1 * 4096 + 16)) -N 8 "$GOOD" | tr -d ' '; }
tfs_log "superblock generations of the good image (format.h offset 16): copy 0: $(gen 0), copy 1: $(gen 1)"
kept=""
for copy in 0 1; do
	fresh
	FLIPPED=""
	flip_nonzero $((copy * 4096)) 4096
	what="one bit flipped in superblock copy $copy only (byte$FLIPPED)"
	tfs_expect_exit "0|4" "$what: tensorfs-fsck" "$FSCK" "$CASE"
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
done
[ -n "$kept" ] || tfs_fail "one superblock copy damaged: expected the flip of the older copy to lose nothing, got data lost with either copy damaged"

# ===== tensorfs-fsck usage errors =====

tfs_expect_exit 16 "tensorfs-fsck without arguments" "$FSCK"
[ -s "$WORK/err" ] || tfs_fail "tensorfs-fsck without arguments: expected a message on stderr, got none"
tfs_expect_exit 16 "tensorfs-fsck with an unknown option" "$FSCK" -Z "$GOOD"
[ -s "$WORK/err" ] || tfs_fail "tensorfs-fsck -Z: expected a message on stderr, got none"
tfs_expect_exit 16 "tensorfs-fsck with two devices" "$FSCK" "$GOOD" "$GOOD"

# ===== nothing left behind =====

tfs_expect_unmounted "after all the bad images" "$MNT"
! grep -qF " $WORK/" /proc/self/mounts || tfs_fail "after all the bad images: expected no mount under $WORK, got one"
left=$(pgrep -f -- "$WORK/")
[ -z "$left" ] || tfs_fail "after all the bad images: expected no daemon left, got pids $left"

tfs_pass
