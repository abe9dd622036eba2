#!/bin/bash
# Description: power cuts under concurrent writers (buffered, O_DIRECT, shared mmap, truncates, renames, clones, unlinks, fsyncs), 200 rounds: unflushed writes lost or kept block by block, fsck clean, fsync'd files exact, no foreign bytes
#
# The daemon runs on the fault device of lib/io.h (a build with
# -DTFS_TEST_HOOKS=ON; otherwise this is a skip): TFS_FAULT="volatile,..."
# gives it a disk with a volatile write cache, and the power is cut at a
# random device operation (or after a random time, whichever comes
# first).  At the cut every block written since the last flush either
# reached the image or did not, each on a seeded coin (or all lost, or all
# kept), and the daemon ends at once with status 86.  Unlike
# test-crash-loop.sh, which copies nothing but also never loses a write
# the kernel was given, this sees a flush that is missing or in the wrong
# place.
#
# Each round, on the same 256 MiB image: mount on the fault device, run
# crashwriter --all-ops (2 threads, 12 MiB each) until the power is cut (a cut during
# the mount itself counts too), drop the dead mount; then
# tensorfs-fsck must exit 0, a normal mount must come up, crashwriter
# --verify must pass (every file fsync'd and not changed since is exactly
# as recorded, every byte of every file is its own pattern or zero: see
# crashwriter.c), and every 10th round the fsync'd files are checked
# again with sha256sum.
#
# TFS_POWERCUT_ROUNDS (default 200) and TFS_SEED (default: from the clock)
# come from the environment; the seed is logged to rerun a failure.  On a
# failure the image, the manifest and the daemon's log are kept in
# ${TMPDIR:-/tmp}.
. "$(dirname "$0")/lib.sh"

tfs_need fusermount3 mountpoint sha256sum stat awk flock

"$TENSORFS" --version | grep -q "built with test hooks" ||
	tfs_skip "needs tensorfs built with -DTFS_TEST_HOOKS=ON (the fault device)"
CW="$TFS_TESTBIN/crashwriter"
[ -x "$CW" ] || tfs_fail "crashwriter: expected it built in '$TFS_TESTBIN', got no executable"
ROUNDS=${TFS_POWERCUT_ROUNDS:-200}
SEED=${TFS_SEED:-$(($(date +%s) % 1000000))}
RANDOM=$SEED
CUT_STATUS=86		# TFS_FAULT_CUT_STATUS in lib/io.h
tfs_log "seed $SEED (rerun with TFS_SEED=$SEED), $ROUNDS rounds"

tfs_mkimg 256M
# TFS_POWERCUT_MEMBERS=N (test-set-powercut.sh): the same rounds on a set
# of N images of 96 MiB (lib/set.h) mounted as one, whose unflushed
# blocks are lost or kept on every member alike, or, in every other
# round, on one member only (lose_member=)
[ "${TFS_POWERCUT_MEMBERS:-1}" -le 1 ] || tfs_mkset "$TFS_POWERCUT_MEMBERS" 96M
MANIFEST="$WORK/manifest"
CW_PID=""

keep_evidence() {
	_st=$?
	[ -n "$CW_PID" ] && kill -KILL "$CW_PID" 2>/dev/null && wait "$CW_PID" 2>/dev/null
	case $_st in 0 | 77) return 0 ;; esac
	[ -n "$IMG" ] && [ -f "$IMG" ] || return 0
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	[ -n "$DAEMON_PID" ] && tfs_wait_gone "$DAEMON_PID" 10
	_keep="${TMPDIR:-/tmp}/tfs-powercut-seed$SEED"
	cp --sparse=always "$IMG" "$_keep.img" && cp "$MANIFEST" "$_keep.manifest" &&
		cp "$WORK/daemon.log" "$_keep.daemon.log" &&
		tfs_log "kept the image, the manifest and the daemon's log as $_keep.*"
}
tfs_at_exit keep_evidence

# mount_faulty FAULT: start the daemon on the fault device; returns 0 once
# mounted, 1 if the daemon ended first (TFS_RC: its exit status)
mount_faulty() {
	TFS_FAULT=$1 "$TENSORFS" -f "$IMG" "$MNT" >>"$WORK/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 1200); do
		mountpoint -q "$MNT" && return 0
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			TFS_RC=$?
			DAEMON_PID=""
			return 1
		fi
		sleep 0.025
	done
	tfs_fail "mount on the fault device did not appear within 30 s"
}

# wait_cut SECONDS: wait for the daemon to end; TFS_RC: its status, or
# "alive" if it still runs after SECONDS
wait_cut() {
	TFS_RC=alive
	for _ in $(seq $(($1 * 20))); do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			TFS_RC=$?
			DAEMON_PID=""
			return 0
		fi
		sleep 0.05
	done
}

t_start=$(date +%s)
cuts_in_mount=0
for i in $(seq "$ROUNDS"); do
	# the cut: at a device operation between 1 and ~3000 (log-uniform:
	# the mount, the first writes, later ones) or after 0.1 .. 1 s
	ops=$(((1 << (RANDOM % 11)) + RANDOM % 1000))
	ms=$((100 + RANDOM % 900))
	fault="volatile,seed=$((SEED * 1000 + i)),cut=$ops,cut_ms=$ms"
	# on a set, every other round only one member's cache loses power
	# (its unflushed writes may be lost; the others' landed)
	[ "$((i % 2))" = 0 ] && [ "${TFS_POWERCUT_MEMBERS:-1}" -gt 1 ] &&
		fault="$fault,lose_member=$((i / 2 % TFS_POWERCUT_MEMBERS))"
	echo "=== round $i: TFS_FAULT=$fault" >>"$WORK/daemon.log"
	if mount_faulty "$fault"; then
		# 12 MiB per thread: short rounds, little to verify
		CRASHWRITER_BUDGET_MIB=12 "$CW" --all-ops "$MNT/cw" "$MANIFEST" 2 $((SEED * 100 + i)) >>"$WORK/crashwriter.log" 2>&1 &
		CW_PID=$!
		wait_cut 10
		if [ "$TFS_RC" = alive ]; then
			tail -5 "$WORK/crashwriter.log" >&2
			tfs_fail "round $i ($fault): expected the power cut within 10 s, got the daemon still running"
		fi
		# (a writer in a shared map of the dead mount gets SIGBUS)
		kill -KILL "$CW_PID" 2>/dev/null
		wait "$CW_PID" 2>/dev/null
		CW_PID=""
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	else
		cuts_in_mount=$((cuts_in_mount + 1))
	fi
	[ "$TFS_RC" = "$CUT_STATUS" ] || {
		tail -20 "$WORK/daemon.log" >&2
		tfs_fail "round $i ($fault): expected the daemon to end by the power cut (status $CUT_STATUS), got status $TFS_RC"
	}
	tfs_check_after_crash "round $i ($fault)" "$MANIFEST"
	# the same again in shell, every 10th round (crashwriter --verify
	# has checked the SHA-256 of each already)
	if [ $((i % 10)) = 0 ] || [ "$i" = "$ROUNDS" ]; then
		tfs_manifest_check "$MANIFEST" "$MNT/cw" || {
			head -20 "$WORK/manifest-check.bad" >&2
			tfs_fail "round $i ($fault): fsync'd files checked with sha256sum: expected all exact, got the differences above"
		}
	fi
	tfs_umount
	tfs_log "round $i: $fault: $(tail -1 "$WORK/verify.log" | sed "s/^crashwriter: verify '[^']*': //")"
done
tfs_log "$ROUNDS power cuts ($cuts_in_mount during the mount) in $(($(date +%s) - t_start)) s"
tfs_fsck_clean
tfs_pass
