#!/bin/bash
# Description: lib.sh's hang breaker ends a test whose daemon stops
# answering: an inner run of this test, with a deadline of 20 s, mounts an
# image, stops its daemon (SIGSTOP) and reads the mount with O_DIRECT, which
# hangs; past the deadline its mount is broken, its processes killed and
# it fails, with no mount, process or work directory left behind
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ -n "${TFS_HANG_INNER:-}" ]; then
	tfs_setup 64M
	head -c 1M /dev/urandom >"$MNT/f" && sync "$MNT/f" ||
		tfs_fail "cannot write $MNT/f"
	kill -STOP "$DAEMON_PID" || tfs_fail "cannot stop the daemon"
	tfs_log "daemon stopped; reading the mount"
	dd if="$MNT/f" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &&
		tfs_log "INNER-READ: the read of a stopped daemon's mount returned data"
	exit 3
fi

[ -e /dev/fuse ] || tfs_skip "no /dev/fuse"
out=$(mktemp "${TMPDIR:-/tmp}/hang-breaker.XXXXXX") || tfs_fail "mktemp"
tfs_at_exit "rm -f '$out'"
t0=$(date +%s)
TFS_HANG_INNER=1 TFS_TEST_DEADLINE=20 timeout 300 bash "$0" >"$out" 2>&1
rc=$?
t1=$(date +%s)
cat "$out" >&2
[ "$rc" != 124 ] || tfs_fail "the inner test was not ended by its hang breaker within 300 s"
[ "$rc" != 0 ] || tfs_fail "the inner test passed; it must fail when it hangs"
grep -q "daemon stopped" "$out" || tfs_fail "the inner test did not get as far as the hang"
grep -q "INNER-READ" "$out" && tfs_fail "the inner read did not hang: nothing to break"
grep -q "HANG: still running" "$out" || tfs_fail "the hang breaker did not say it fired"
[ $((t1 - t0)) -lt 120 ] || tfs_fail "the inner test took $((t1 - t0)) s to end (deadline 20 s)"
left=$(awk -v p="${TMPDIR:-/tmp}/tfs-$TEST_NAME." 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo)
[ -z "$left" ] || tfs_fail "mounts left behind: $left"
sleep 1
left=$(pgrep -af -- "${TMPDIR:-/tmp}/tfs-$TEST_NAME\\." || true)
[ -z "$left" ] || tfs_fail "processes left behind: $left"
left=$(ls -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME."* 2>/dev/null || true)
[ -z "$left" ] || tfs_fail "work directories left behind: $left"
tfs_log "the inner test ended $((t1 - t0)) s after it started (deadline 20 s), rc $rc"
tfs_pass
