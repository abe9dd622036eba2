#!/bin/bash
# Description: DeepSpeed's async_io swap pattern (libaio, O_DIRECT, no O_TRUNC, 1 KiB-aligned buffers, 1 MiB requests 8 deep, lengths not 4 KiB multiples, P threads writing slices of one fd, reads running past end of file) on 2 x 64 files of about 64 MiB: every completion full, st_size right at close, every byte right, again after a remount, after an in-place rewrite and after a second remount; fsck clean
#
# dsaio (dsaio.c) does what DeepSpeed's aio handle does to a swap file and
# checks every completion, size and byte that DeepSpeed never checks:
#  - set p1: 64 files of 64 MiB - 3 KiB written by one thread, so the last
#    request of each file is 1 MiB - 3 KiB and ends inside a 4 KiB block;
#  - set p4: 64 files of 64 MiB - 4 KiB written by 4 threads (P = 4,
#    queue depth 8) through one descriptor; a length must be a multiple of
#    1024 x P, so each slice is 16 MiB - 1 KiB and neighbouring threads
#    write the two halves of the 4 KiB blocks where their slices meet, at
#    the same time, into an empty file (every write extends it);
#  - reads use a buffer rounded up to 1 MiB, so the last request of each
#    file runs past end of file and must complete short, with the buffer
#    past end of file left alone; verify also rereads through the page
#    cache, as DeepSpeed's validate=True does.
# Then: unmount, mount, verify both sets (they come from the device, not
# the page cache); rewrite set p4 in place with another seed, 4 files in
# flight (DeepSpeed reopens a swap file without O_TRUNC); verify it and
# that set p1 is untouched; unmount, mount, verify p4's new content; fsck.
# The image is sparse: 10 GiB, about 8 GiB of it written.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

DSAIO="$TFS_TESTBIN/dsaio"
[ -x "$DSAIO" ] || tfs_fail "no dsaio helper at '$DSAIO'"

NFILES=64
MIB=1048576
SIZE1=$((64 * MIB - 3072))	# P = 1: a multiple of 1 KiB, not of 4 KiB
SIZE4=$((64 * MIB - 4096))	# P = 4: a multiple of 4 KiB; slices are not
[ $((SIZE1 % 4096)) != 0 ] || tfs_fail "set p1 length $SIZE1 is a multiple of 4096"
[ $(((SIZE4 / 4) % 4096)) != 0 ] || tfs_fail "set p4 slice $((SIZE4 / 4)) is a multiple of 4096"

tfs_setup 10G

# ds WHAT ARGS...: run dsaio ARGS; fail with its report unless it exits 0
ds() {
	local _what=$1 _rc
	shift
	"$DSAIO" "$@" >"$WORK/ds.out" 2>"$WORK/ds.err"
	_rc=$?
	if [ "$_rc" != 0 ]; then
		cat "$WORK/ds.out" "$WORK/ds.err" >&2
		tfs_fail "$_what: dsaio $1 exited $_rc, expected 0"
	fi
	tfs_log "$_what (${SECONDS}s): $(cat "$WORK/ds.out")"
}

P1=(--threads 1 --queue-depth 8 --block-size 1M)
P4=(--threads 4 --queue-depth 8 --block-size 1M)

# the names DeepSpeed gives swap files; nothing else in the directory
check_listing() {
	local _d=$1 _n
	_n=$(find "$MNT/$_d" -mindepth 1 -maxdepth 1 -name '*_param.tensor.swp' -type f | wc -l)
	tfs_eq "swap files in $_d ($2)" "$NFILES" "$_n"
	tfs_eq "entries in $_d ($2)" "$NFILES" "$(find "$MNT/$_d" -mindepth 1 -maxdepth 1 | wc -l)"
}

mkdir "$MNT/p1" "$MNT/p4" || tfs_fail "mkdir of the swap directories failed"

ds "write set p1" write "$MNT/p1" "$NFILES" "$SIZE1" "${P1[@]}" --seed 1
ds "write set p4" write "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 4
ds "verify set p1" verify "$MNT/p1" "$NFILES" "$SIZE1" "${P1[@]}" --seed 1
ds "verify set p4" verify "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 4
check_listing p1 "after writing"
check_listing p4 "after writing"

tfs_umount
tfs_mount
check_listing p1 "after a remount"
check_listing p4 "after a remount"
ds "read set p1 after a remount" read "$MNT/p1" "$NFILES" "$SIZE1" "${P1[@]}" --seed 1 --files-in-flight 2
ds "read set p4 after a remount" read "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 4 --files-in-flight 2

# rewrite in place: same length, other content, no O_TRUNC
ds "rewrite set p4" write "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 44 --files-in-flight 4
ds "verify rewritten set p4" verify "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 44
ds "read set p1 after the rewrite of p4" read "$MNT/p1" "$NFILES" "$SIZE1" "${P1[@]}" --seed 1
check_listing p4 "after the rewrite"

tfs_umount
tfs_mount
ds "read rewritten set p4 after a remount" read "$MNT/p4" "$NFILES" "$SIZE4" "${P4[@]}" --seed 44
tfs_umount
tfs_fsck_clean
tfs_log "total ${SECONDS}s"
tfs_pass
