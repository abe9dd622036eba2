# lib.sh: shared helpers of the integration tests.  Source it from a test:
#
#   . "$(dirname "$0")/lib.sh"
#   tfs_setup 256M          # temp dir, image of that size formatted, mounted
#   ... test against "$MNT" ...
#   tfs_pass                # or tfs_fail "message"; tfs_skip "reason"
#
# Each test runs in its own temporary directory; the mount is unmounted and
# the directory removed on every exit path, failure included.
#
# Environment (set by ctest; defaults work from a build tree):
#   TFS_BIN   directory holding tensorfs, mkfs.tensorfs, tensorfs-fsck
#   TFS_TESTBIN directory holding the C test helpers (tests/integration/*.c)

set -u

TFS_BIN=${TFS_BIN:-$(pwd)}
TFS_TESTBIN=${TFS_TESTBIN:-$TFS_BIN}
MKFS="$TFS_BIN/mkfs.tensorfs"
TENSORFS="$TFS_BIN/tensorfs"
FSCK="$TFS_BIN/tensorfs-fsck"
TEST_NAME=$(basename "$0" .sh)

WORK=""
IMG=""
MNT=""
DAEMON_PID=""

tfs_log() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }

tfs_cleanup() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT" 2>/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DAEMON_PID" 2>/dev/null
	fi
	[ -n "$WORK" ] && rm -rf "$WORK"
}
trap tfs_cleanup EXIT
trap 'exit 1' INT TERM HUP

tfs_fail() { tfs_log "FAIL: $*"; exit 1; }
tfs_skip() { tfs_log "SKIP: $*"; exit 77; }
tfs_pass() { tfs_log "PASS"; exit 0; }

# tfs_need CMD...: skip the test when a tool is missing
tfs_need() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || tfs_skip "needs $c"
	done
}

# tfs_mkimg SIZE: make a work dir and format $IMG of SIZE
tfs_mkimg() {
	[ -e /dev/fuse ] || tfs_skip "no /dev/fuse"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")
	IMG="$WORK/dev.img"
	MNT="$WORK/mnt"
	mkdir "$MNT"
	"$MKFS" -s "$1" "$IMG" >"$WORK/mkfs.log" 2>&1 || {
		cat "$WORK/mkfs.log" >&2
		tfs_fail "mkfs.tensorfs -s $1 failed"
	}
}

# tfs_mount [ARGS...]: mount $IMG on $MNT in the foreground daemon mode
# (tensorfs -f) in the background, wait until the mount is live, and set
# DAEMON_PID.  Extra ARGS go before DEVICE.
tfs_mount() {
	"$TENSORFS" -f "$@" "$IMG" "$MNT" >>"$WORK/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 100); do
		if mountpoint -q "$MNT"; then return 0; fi
		kill -0 "$DAEMON_PID" 2>/dev/null || {
			cat "$WORK/daemon.log" >&2
			DAEMON_PID=""
			tfs_fail "tensorfs exited before mounting"
		}
		sleep 0.05
	done
	cat "$WORK/daemon.log" >&2
	tfs_fail "mount did not appear within 5 s"
}

# tfs_umount: unmount cleanly and wait for the daemon to exit 0
tfs_umount() {
	fusermount3 -u "$MNT" || tfs_fail "fusermount3 -u failed"
	if [ -n "$DAEMON_PID" ]; then
		wait "$DAEMON_PID"
		rc=$?
		DAEMON_PID=""
		[ "$rc" = 0 ] || { cat "$WORK/daemon.log" >&2; tfs_fail "daemon exited $rc after unmount"; }
	fi
}

# tfs_kill9: SIGKILL the daemon, as a crash would, and drop the dead mount
tfs_kill9() {
	kill -KILL "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=""
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
}

# tfs_fsck_clean: tensorfs-fsck must report a clean file system (exit 0)
tfs_fsck_clean() {
	"$FSCK" "$IMG" >"$WORK/fsck.log" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { cat "$WORK/fsck.log" >&2; tfs_fail "fsck exit $rc, expected 0"; }
}

# tfs_setup SIZE [MOUNT-ARGS...]: mkimg + mount
tfs_setup() {
	sz=$1
	shift
	tfs_mkimg "$sz"
	tfs_mount "$@"
}
