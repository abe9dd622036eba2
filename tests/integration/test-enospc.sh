#!/bin/bash
# Description: a full device gives ENOSPC, stays consistent, and deleting gives the space back
#
# On a 128 MiB image: dd of random data until "No space left on device";
# the bytes written read back exactly, before and after a remount; fsck is
# clean; the same amount can be written again after rm (after a remount
# and within one mount), and after deleting it all the device fills to the
# same size again.  fsync on the full device works, and a SIGKILL there
# recovers with the fsync'd files intact.  Then, on a fresh 64 MiB image,
# many small files until ENOSPC (of data or metadata space, whichever runs
# out first): the error is ENOSPC, every file created before it is intact,
# before and after a remount, deleting some lets new ones be created, and
# deleting them all frees the space for one big file of 90% of it again.
. "$(dirname "$0")/lib.sh"

tfs_need dd cmp stat find sort xargs sha256sum fusermount3 sync flock

MIB=1048576
tfs_setup 128M
head -c $((160 * MIB)) /dev/urandom >"$WORK/src"

# fill NAME: dd the random source into NAME until the device is full; its
# size goes to FILLED
fill() {
	tfs_expect_exit 1 "dd into '$1' until the device is full" \
		dd if="$WORK/src" of="$MNT/$1" bs=1M conv=fsync
	tfs_expect_words "dd into '$1' until the device is full" "$WORK/err" "No space left on device"
	FILLED=$(stat -c %s "$MNT/$1")
}

# put NAME BYTES [SYNC]: write BYTES of the random source into NAME, with
# conv=fsync unless SYNC is "nosync"; must succeed
put() {
	local _conv=conv=fsync
	[ "${3:-}" = nosync ] && _conv=conv=notrunc
	tfs_expect_exit 0 "writing $2 bytes into '$1'" \
		dd if="$WORK/src" of="$MNT/$1" bs=1M count="$2" iflag=count_bytes "$_conv"
	cmp -n "$2" "$WORK/src" "$MNT/$1" || tfs_fail "'$1' read back: expected the $2 bytes written, got others"
	tfs_eq "size of '$1'" "$2" "$(stat -c %s "$MNT/$1")"
}

# free_at_least BYTES: wait (up to 10 s: the kernel forgets unlinked inodes
# asynchronously) until the file system reports BYTES free
free_at_least() {
	_enough() { [ "$(tfs_free_bytes)" -ge "$1" ]; }
	tfs_wait_for 10 _enough "$1" ||
		tfs_fail "free space after rm: expected at least $1 bytes within 10 s, got $(tfs_free_bytes)"
}

# ===== one big file until ENOSPC =====

avail=$(tfs_free_bytes)
fill fill
W=$FILLED
tfs_log "free before: $avail bytes; written until ENOSPC: $W bytes"
[ "$W" -ge $((avail * 9 / 10)) ] ||
	tfs_fail "bytes written until ENOSPC: expected at least 90% of the $avail free, got $W"
cmp -n "$W" "$WORK/src" "$MNT/fill" || tfs_fail "the full file read back: expected the bytes written, got others"
ls -la "$MNT" >/dev/null || tfs_fail "ls of the full file system: expected success, got failure"
tfs_umount
tfs_fsck_clean

tfs_mount
tfs_eq "size of the full file after remount" "$W" "$(stat -c %s "$MNT/fill")"
cmp -n "$W" "$WORK/src" "$MNT/fill" || tfs_fail "the full file after remount: expected the bytes written, got others"
rm "$MNT/fill" || tfs_fail "rm on a full file system: expected success, got failure"
free_at_least "$W"
put again "$W"
rm "$MNT/again"
free_at_least "$W"
put third "$W"
rm "$MNT/third"
free_at_least "$W"
fill refill
W2=$FILLED
[ "$W2" -ge $((W - MIB)) ] ||
	tfs_fail "filling again after deleting everything: expected about $W bytes (space given back), got $W2"
cmp -n "$W2" "$WORK/src" "$MNT/refill" || tfs_fail "the refill read back: expected the bytes written, got others"
tfs_umount
tfs_fsck_clean

# ===== fsync on a full device, then SIGKILL =====

tfs_mount
rm "$MNT/refill"
free_at_least "$W"
half=$((W / 2))
put half "$half" nosync
fill rest
R=$FILLED
tfs_expect_exit 0 "sync (fsync) of two files on the full device" sync "$MNT/half" "$MNT/rest"
tfs_kill9
tfs_wait_unlocked 5 || tfs_fail "after SIGKILL: expected the image's flock released within 5 s, got it held"
tfs_fsck_clean
tfs_mount
tfs_eq "size of the fsync'd 'half' after SIGKILL" "$half" "$(stat -c %s "$MNT/half")"
tfs_eq "size of the fsync'd 'rest' after SIGKILL" "$R" "$(stat -c %s "$MNT/rest")"
cmp -n "$half" "$WORK/src" "$MNT/half" || tfs_fail "the fsync'd 'half' after SIGKILL: expected its bytes, got others"
cmp -n "$R" "$WORK/src" "$MNT/rest" || tfs_fail "the fsync'd 'rest' after SIGKILL: expected its bytes, got others"
rm "$MNT/half" "$MNT/rest"
free_at_least "$W"
put after-crash "$W"
tfs_umount
tfs_fsck_clean

# ===== many small files until ENOSPC =====

# on a fresh image of the 64 MiB minimum, to keep the file count (and the
# time) moderate
IMG="$WORK/small.img"
tfs_expect_exit 0 "mkfs.tensorfs -q -s 64M" "$MKFS" -q -s 64M "$IMG"
tfs_mount
avail=$(tfs_free_bytes)
LIMIT=300000
n=0
: >"$WORK/small.err"
while [ "$n" -lt "$LIMIT" ]; do
	d="$MNT/small/d$((n / 1000))"
	if [ $((n % 1000)) = 0 ]; then
		mkdir -p "$d" 2>>"$WORK/small.err" || break
	fi
	printf '%-2999s\n' "f$n" 2>>"$WORK/small.err" >"$d/f$n" || break
	n=$((n + 1))
done
[ "$n" -lt "$LIMIT" ] || tfs_fail "small files: expected ENOSPC, got $LIMIT files of 3000 bytes on a 64 MiB device"
tfs_log "small files: $n created before ENOSPC; statfs: $(stat -f -c '%f blocks free, %a available' "$MNT")"
[ "$n" -ge 1000 ] || tfs_fail "small files: expected at least 1000 before ENOSPC, got $n ($(cat "$WORK/small.err"))"
tfs_expect_words "small files until the device is full" "$WORK/small.err" "No space left on device"

# check_small WHAT COUNT: COUNT complete small files, each holding its own name
check_small() {
	find "$MNT/small" -type f -size 3000c -print0 | sort -z >"$WORK/small.list"
	tfs_eq "$1: number of complete small files" "$2" "$(tr -cd '\0' <"$WORK/small.list" | wc -c)"
	want=$(while IFS= read -r -d '' p; do printf '%-2999s\n' "${p##*/}"; done <"$WORK/small.list" | sha256sum)
	got=$(xargs -0 cat <"$WORK/small.list" | sha256sum)
	tfs_eq "$1: sha256 of all small files' contents" "$want" "$got"
}
check_small "small files at ENOSPC" "$n"

# the file that hit ENOSPC (if it was created) is incomplete; drop it
rm -f "$MNT/small/d$((n / 1000))/f$n"
for k in $(seq 0 9); do
	rm "$MNT/small/d0/f$k" || tfs_fail "rm of a small file on a full device: expected success, got failure"
done
_created() {
	for k in 0 1 2 3 4; do
		printf '%-2999s\n' "g$k" 2>/dev/null >"$MNT/small/d0/g$k" || return 1
	done
}
tfs_wait_for 10 _created || tfs_fail "creating 5 small files after deleting 10: expected success within 10 s, got ENOSPC"
check_small "small files after deleting 10 and creating 5" $((n - 5))
tfs_umount
tfs_fsck_clean

tfs_mount
check_small "small files after remount" $((n - 5))
rm -rf "${MNT:?}/small" || tfs_fail "rm -rf of the small files: expected success, got failure"
tfs_umount
tfs_fsck_clean
tfs_mount
put big-after-small "$((avail * 9 / 10))"
tfs_umount
tfs_fsck_clean

tfs_pass
