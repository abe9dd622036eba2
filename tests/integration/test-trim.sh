#!/bin/bash
# Description: freed space goes back to the device: an image's allocated size falls after deletes with fstrim and with -o discard (and not without either), kept files stay exact; fstrim's range is honoured and bad ranges refused (EINVAL) as on ext4; SIGKILL and power cuts (fault device) right after deletes with -o discard leave a file system that fsck finds clean with every fsync'd file intact
#
# Protects lib/journal.c's J11 (a discard never hits a block a loadable
# state maps) together with J1..J10 under discards: the crash rounds run
# crashwriter --all-ops (unlinks, truncates, renames among the writes) on
# a mount that discards every 50 ms commit tick.
#
# TFS_TRIM_ROUNDS (default 8) crash rounds of each kind, TFS_SEED (default
# from the clock) from the environment; the seed is logged.
. "$(dirname "$0")/lib.sh"

tfs_need fstrim du sha256sum fusermount3 mountpoint flock
MiB=1048576
CW="$TFS_TESTBIN/crashwriter"
[ -x "$CW" ] || tfs_fail "crashwriter: expected it built in '$TFS_TESTBIN', got no executable"
ROUNDS=${TFS_TRIM_ROUNDS:-8}
SEED=${TFS_SEED:-$(($(date +%s) % 1000000))}
RANDOM=$SEED
tfs_log "seed $SEED (rerun with TFS_SEED=$SEED), $ROUNDS crash rounds of each kind"

# allocated KiB of the image file (st_blocks, what du counts)
alloc_kib() { du -k "$IMG" | cut -f1; }

# write_files N PREFIX: N files of 16 MiB, patterns seeded by their number
write_files() {
	for i in $(seq "$1"); do
		"$TFS_SYS" pattern $((16 * MiB)) "$i" >"$MNT/$2$i" || tfs_fail "writing $2$i failed"
	done
	sync "$MNT/$2"* || tfs_fail "fsync of $2* failed"
}

# fell_by KIB BEFORE: the image's allocated size is at least KIB below BEFORE
fell_by() { [ "$(alloc_kib)" -le $(($2 - $1)) ]; }

# ----- fstrim -----

tfs_setup 256M -o commit_interval_ms=100
write_files 4 f
full=$(alloc_kib)
[ "$full" -ge $((64 * 1024)) ] || tfs_fail "image after writing 64 MiB: expected >= 65536 KiB allocated, got $full"
rm "$MNT/f1" "$MNT/f2" "$MNT/f3"
sleep 0.5
[ "$(alloc_kib)" -gt $((full - 8 * 1024)) ] ||
	tfs_fail "without discard or fstrim: expected the image to keep its blocks ($full KiB), got $(alloc_kib) KiB"
fstrim -v "$MNT" >"$WORK/fstrim.out" 2>&1 || { cat "$WORK/fstrim.out" >&2; tfs_fail "fstrim $MNT failed"; }
tfs_log "fstrim: $(cat "$WORK/fstrim.out"); image $full -> $(alloc_kib) KiB"
fell_by $((46 * 1024)) "$full" ||
	tfs_fail "after deleting 48 MiB and fstrim: expected the image below $((full - 46 * 1024)) KiB, got $(alloc_kib) KiB"
grep -qE '\(([1-9][0-9]*) bytes\) trimmed' "$WORK/fstrim.out" ||
	tfs_fail "fstrim -v: expected a non-zero count of bytes trimmed, got '$(cat "$WORK/fstrim.out")'"
cmp <("$TFS_SYS" pattern $((16 * MiB)) 4) "$MNT/f4" || tfs_fail "f4 differs after fstrim"
# a second fstrim finds nothing left but the blocks of the checkpoints
# the first one replaced (lib/journal.c J10: checkpoints move), a few KiB
fstrim -v "$MNT" >"$WORK/fstrim.out" 2>&1 || tfs_fail "second fstrim failed"
again=$(sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p' "$WORK/fstrim.out")
[ -n "$again" ] && [ "$again" -le 65536 ] ||
	tfs_fail "second fstrim: expected at most 64 KiB trimmed, got '$(cat "$WORK/fstrim.out")'"
tfs_umount
tfs_fsck_clean
# and after a remount the kept file is still exact
tfs_mount
cmp <("$TFS_SYS" pattern $((16 * MiB)) 4) "$MNT/f4" || tfs_fail "f4 differs after fstrim and a remount"
rm "$MNT/f4"
tfs_umount

# ----- fstrim's range (xfstests generic/260, generic/288) -----

"$MKFS" -f -s 256M "$IMG" >"$WORK/mkfs.log" 2>&1 || tfs_fail "mkfs.tensorfs -f of the image failed"
tfs_mount
size=$((256 * MiB))
# refused as ext4 and xfs refuse them: a start at or past the end (2^64-1
# too, with and without a length), a length of 0 or under a block
for args in "-o $size" "-o $((size * 2)) -l 1M" "-o 18446744073709551615" \
	"-o 18446744073709551615 -l 1M" "-o 0 -l 0" "-o 0 -l 100"; do
	# shellcheck disable=SC2086 # the arguments are words
	if fstrim $args "$MNT" 2>"$WORK/fstrim.err"; then
		tfs_fail "fstrim $args: expected a refusal (EINVAL), it succeeded"
	fi
	grep -q "Invalid argument" "$WORK/fstrim.err" ||
		tfs_fail "fstrim $args: expected 'Invalid argument', got '$(cat "$WORK/fstrim.err")'"
done
# trimmed bytes stay inside the range, and a fresh file system has at
# least half its size to trim (generic/260's own test of overflow)
trimmed() { fstrim -v "$@" "$MNT" | sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p'; }
t1=$(trimmed -o $((128 * MiB)) -l 1M)
[ -n "$t1" ] && [ "$t1" -le "$MiB" ] ||
	tfs_fail "fstrim -o 128M -l 1M: expected at most 1 MiB trimmed, got '$t1'"
t2=$(trimmed -o 10M -m $((250 * MiB)))
[ "$t2" = 0 ] || tfs_fail "fstrim -m 250M (no free piece that long): expected 0 bytes, got '$t2'"
t3=$(trimmed -o 10M -l $((size * 4)))
[ -n "$t3" ] && [ "$t3" -ge $((size / 2 - 10 * MiB)) ] && [ "$t3" -le "$size" ] ||
	tfs_fail "fstrim -o 10M -l past the end: expected half to all of the free space after 10 MiB trimmed, got '$t3'"
t4=$(trimmed)
[ -n "$t4" ] && [ "$t4" -le $((10 * MiB + 65536)) ] ||
	tfs_fail "fstrim of all after -o 10M: expected at most the first 10 MiB left, got '$t4'"
tfs_umount
tfs_fsck_clean

# ----- -o discard -----

tfs_mount -o discard,commit_interval_ms=100
write_files 3 d
full=$(alloc_kib)
rm "$MNT/d1" "$MNT/d2"
tfs_wait_for 10 fell_by $((30 * 1024)) "$full" ||
	tfs_fail "-o discard: expected the image below $((full - 30 * 1024)) KiB within 10 s of deleting 32 MiB, got $(alloc_kib) KiB"
tfs_log "-o discard: image $full -> $(alloc_kib) KiB after deleting 32 MiB"
cmp <("$TFS_SYS" pattern $((16 * MiB)) 3) "$MNT/d3" || tfs_fail "d3 differs with -o discard"
tfs_umount
tfs_fsck_clean
tfs_mount
cmp <("$TFS_SYS" pattern $((16 * MiB)) 3) "$MNT/d3" || tfs_fail "d3 differs after a remount"
rm "$MNT/d3"
tfs_umount

# ----- crashes right after deletes, with -o discard -----

MANIFEST="$WORK/manifest"
CW_PID=""
stop_writer() {
	[ -n "$CW_PID" ] && kill -KILL "$CW_PID" 2>/dev/null && wait "$CW_PID" 2>/dev/null
	CW_PID=""
}
tfs_at_exit stop_writer

# check_after_crash WHAT: fsck clean, a normal mount, fsync'd files exact
check_after_crash() {
	tfs_wait_unlocked 5 || tfs_fail "$1: the image is still locked 5 s after the daemon's end"
	"$FSCK" -n "$IMG" >"$WORK/fsck.log" 2>&1 || {
		cat "$WORK/fsck.log" >&2
		tfs_fail "$1: tensorfs-fsck -n: expected exit 0, got $?"
	}
	tfs_mount -o discard,commit_interval_ms=50
	"$CW" --verify "$MNT/cw" "$MANIFEST" >"$WORK/verify.log" 2>&1 || {
		cat "$WORK/verify.log" >&2
		tfs_fail "$1: crashwriter --verify: expected every fsync'd file exact"
	}
	tfs_umount
}

for r in $(seq "$ROUNDS"); do
	tfs_mount -o discard,commit_interval_ms=50
	CRASHWRITER_BUDGET_MIB=12 "$CW" --all-ops "$MNT/cw" "$MANIFEST" 2 $((SEED * 100 + r)) >>"$WORK/crashwriter.log" 2>&1 &
	CW_PID=$!
	sleep "0.$((3 + RANDOM % 7))"
	tfs_kill9
	stop_writer
	check_after_crash "SIGKILL round $r"
done
tfs_log "$ROUNDS SIGKILL rounds with -o discard: fsck clean, fsync'd files exact"

if ! "$TENSORFS" --version | grep -q "built with test hooks"; then
	tfs_log "power cuts skipped: tensorfs is built without -DTFS_TEST_HOOKS=ON"
	tfs_pass
fi
CUT_STATUS=86		# TFS_FAULT_CUT_STATUS in lib/io.h
mounted_or_gone() { mountpoint -q "$MNT" || ! kill -0 "$DAEMON_PID" 2>/dev/null; }
for r in $(seq "$ROUNDS"); do
	# a volatile write cache that loses or keeps unflushed blocks, discards
	# included, and the power cut after 0.3 .. 1.2 s
	fault="volatile,seed=$((SEED * 1000 + r)),cut_ms=$((300 + RANDOM % 900))"
	echo "=== round $r: TFS_FAULT=$fault" >>"$WORK/daemon.log"
	TFS_FAULT=$fault "$TENSORFS" -f -o discard,commit_interval_ms=50 "$IMG" "$MNT" >>"$WORK/daemon.log" 2>&1 &
	DAEMON_PID=$!
	# mounted, or already cut (the cut may come before the mount)
	tfs_wait_for 30 mounted_or_gone ||
		tfs_fail "power cut round $r: no mount within 30 s"
	if mountpoint -q "$MNT"; then
		CRASHWRITER_BUDGET_MIB=12 "$CW" --all-ops "$MNT/cw" "$MANIFEST" 2 $((SEED * 200 + r)) >>"$WORK/crashwriter.log" 2>&1 &
		CW_PID=$!
	fi
	for _ in $(seq 200); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$DAEMON_PID" 2>/dev/null && tfs_fail "power cut round $r ($fault): the daemon still runs after 10 s"
	wait "$DAEMON_PID"
	rc=$?
	DAEMON_PID=""
	stop_writer
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	[ "$rc" = "$CUT_STATUS" ] || {
		tail -20 "$WORK/daemon.log" >&2
		tfs_fail "power cut round $r ($fault): expected exit status $CUT_STATUS, got $rc"
	}
	check_after_crash "power cut round $r ($fault)"
done
tfs_log "$ROUNDS power cuts with -o discard: fsck clean, fsync'd files exact"
tfs_fsck_clean
tfs_pass
