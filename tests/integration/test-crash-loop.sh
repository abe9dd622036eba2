#!/bin/bash
# Description: SIGKILL of the daemon under 4 writer threads, 20 times: fsck clean, fsync'd files exact, no foreign bytes
#
# Each iteration, on the same 2 GiB image: start crashwriter (4 threads)
# on the mount, let it run a random 0.2 .. 2.0 s, SIGKILL the daemon and
# the writer, then tensorfs-fsck must exit 0 (journal replay is normal
# recovery), the next mount must come up by itself, and crashwriter
# --verify must pass: every file fsync'd and not changed since has exactly
# its recorded size and SHA-256, and every 4 KiB block of every file is its
# own pattern or zeros (see crashwriter.c).  The fsync'd files are checked
# a second time with stat and sha256sum, from the manifest, in shell.
# Afterwards everything is deleted: the free space must return to what a
# fresh image had, and writing most of it must succeed.
#
# TFS_CRASH_ITERS (default 20) and TFS_SEED (default: from the clock) are
# read from the environment; the seed is logged to rerun a failure.  On
# any failure the image and the manifest are kept in ${TMPDIR:-/tmp}.
#
# Protects (lib/journal.c's crash protocol): J1 (no foreign bytes in a
# file), J2 and J3 (replay after any crash point), J4 (checkpoints at
# journal-full and recovery), J6 (free space returns, no block shared),
# J9 (fsck clean).  A SIGKILL keeps every write the kernel accepted, so
# this cannot see a missing flush; the fault-injecting device's tests do.
. "$(dirname "$0")/lib.sh"

tfs_need fusermount3 mountpoint sha256sum stat awk dd flock

CW="$TFS_TESTBIN/crashwriter"
[ -x "$CW" ] || tfs_fail "crashwriter: expected it built in '$TFS_TESTBIN', got no executable"
ITERS=${TFS_CRASH_ITERS:-20}
SEED=${TFS_SEED:-$(($(date +%s) % 1000000))}
RANDOM=$SEED
tfs_log "seed $SEED (rerun with TFS_SEED=$SEED), $ITERS iterations"

tfs_mkimg 2G
# TFS_CRASH_MEMBERS=N (test-set-crash-loop.sh): the same on a set of N
# images of 768 MiB (lib/set.h) mounted as one; the refill at the end then
# fills every member, so full members pass their stripes on
[ "${TFS_CRASH_MEMBERS:-1}" -le 1 ] || tfs_mkset "$TFS_CRASH_MEMBERS" 768M
MANIFEST="$WORK/manifest"
CW_PID=""

# on a failure: stop the writer, unmount, keep the image and the manifest
keep_evidence() {
	_st=$?
	[ -n "$CW_PID" ] && kill -KILL "$CW_PID" 2>/dev/null && wait "$CW_PID" 2>/dev/null
	case $_st in 0 | 77) return 0 ;; esac
	[ -n "$IMG" ] && [ -f "$IMG" ] || return 0
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	[ -n "$DAEMON_PID" ] && tfs_wait_gone "$DAEMON_PID" 10
	_keep="${TMPDIR:-/tmp}/tfs-crash-loop-seed$SEED"
	cp --sparse=always "$IMG" "$_keep.img" && cp "$MANIFEST" "$_keep.manifest" &&
		tfs_log "kept the image and the manifest as $_keep.img and $_keep.manifest"
}
tfs_at_exit keep_evidence

tfs_mount
free0=$(tfs_free_bytes)
t_start=$(date +%s)

for i in $(seq "$ITERS"); do
	"$CW" "$MNT/cw" "$MANIFEST" 4 $((SEED * 100 + i)) >>"$WORK/crashwriter.log" 2>&1 &
	CW_PID=$!
	ms=$((200 + RANDOM % 1801))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -0 "$CW_PID" 2>/dev/null || {
		tail -20 "$WORK/crashwriter.log" >&2
		tfs_fail "iteration $i: expected crashwriter running until the crash, got it exited (errors above)"
	}
	# the daemon first, so the writer is cut off mid-request
	kill -KILL "$DAEMON_PID"
	kill -KILL "$CW_PID"
	wait "$CW_PID" 2>/dev/null
	CW_PID=""
	tfs_kill9
	tfs_check_after_crash "iteration $i (SIGKILL after $ms ms)" "$MANIFEST"
	tfs_manifest_check "$MANIFEST" "$MNT/cw" || {
		head -20 "$WORK/manifest-check.bad" >&2
		tfs_fail "iteration $i: fsync'd files checked with sha256sum: expected all exact, got the differences above"
	}
	tfs_log "iteration $i: crash after $ms ms; lock gone after $TFS_UNLOCK_MS ms; fsck clean; $(tail -1 "$WORK/verify.log" | sed "s/^crashwriter: verify '[^']*': //")"
done
tfs_log "$ITERS crashes in $(($(date +%s) - t_start)) s"

# ===== the space of everything deleted comes back =====

rm -rf "${MNT:?}/cw" || tfs_fail "rm -rf of the crashwriter files: expected success, got failure"
tfs_umount
tfs_fsck_clean
tfs_mount
free1=$(tfs_free_bytes)
slack=$((16 * 1024 * 1024))
[ "$free1" -ge $((free0 - slack)) ] ||
	tfs_fail "free space after deleting everything: expected at least $free0 - 16 MiB (as fresh), got $free1"
count=$(((free1 - 64 * 1024 * 1024) / 1048576))
dd if=/dev/urandom of="$MNT/fill" bs=1M count="$count" conv=fsync status=none 2>"$WORK/dd.err" ||
	tfs_fail "writing $count MiB into the freed space: expected success, got '$(cat "$WORK/dd.err")'"
tfs_eq "size of the refill" $((count * 1048576)) "$(stat -c %s "$MNT/fill")"
rm -f "$MNT/fill"
tfs_umount
tfs_fsck_clean

tfs_pass
