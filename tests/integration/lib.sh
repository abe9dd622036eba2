# shellcheck shell=bash
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
#   TFS_TEST_DEADLINE seconds after which the hang breaker ends the test
#             (below ctest's TIMEOUT; unset or 0: none)
#
# The hang breaker.  A test that hangs on a mount (a daemon that stops
# answering) leaves its readers in uninterruptible sleep, which ctest's
# TIMEOUT cannot end: the whole run would wait for ever.  Past
# TFS_TEST_DEADLINE a watchdog aborts the FUSE connections of the test's
# mounts (fusectl), SIGKILLs the processes naming its work directories
# (its daemons), detaches the mounts, then ends the test, which fails.
#
# Sanitized builds (TFS_SANITIZE): every program a test runs, the daemon
# above all, writes its sanitizer reports to $WORK/sanitizer.<pid> (a
# mount's stderr may be gone, and a report must not be): any such file
# fails the test when it exits, whatever else it said.

set -u

TFS_BIN=${TFS_BIN:-$(pwd)}
TFS_TESTBIN=${TFS_TESTBIN:-$TFS_BIN}
MKFS="$TFS_BIN/mkfs.tensorfs"
TENSORFS="$TFS_BIN/tensorfs"
FSCK="$TFS_BIN/tensorfs-fsck"
TEST_NAME=$(basename "$0" .sh)
# the daemon reads /etc/tensorfs/tensorfs.ini without -c: not in tests,
# whatever this machine's holds (test-config sets it where it tests it).
# TFS_TEST_IO_URING=on (or off) makes it one that says [mount] io_uring,
# so that every daemon a test starts, mount(8)'s too, carries requests
# that way: tools/test.sh runs the suite over /dev/fuse and io_uring.
TFS_URING_INI=""
if [ -n "${TFS_TEST_IO_URING:-}" ]; then
	TFS_URING_INI=$(mktemp "${TMPDIR:-/tmp}/tfs-uring.XXXXXX") || exit 1
	printf '[mount]\nio_uring = %s\n' "$TFS_TEST_IO_URING" >"$TFS_URING_INI"
	export TENSORFS_CONFIG=$TFS_URING_INI
else
	export TENSORFS_CONFIG=/nonexistent/tensorfs.ini
fi

WORK=""
IMG=""
MNT=""
DAEMON_PID=""

tfs_log() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }

# tfs_mounted DIR: DIR is a mount point, also one whose daemon died (a
# sanitizer aborted it, say), where mountpoint(1) fails: stat gets ENOTCONN
tfs_mounted() {
	mountpoint -q "$1" 2>/dev/null ||
		awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}

tfs_cleanup() {
	local _san=""
	# a signal now (the hang breaker's SIGTERM) would end the cleanup
	trap '' INT TERM HUP
	tfs_watchdog_off
	if [ -n "$MNT" ] && tfs_mounted "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DAEMON_PID" 2>/dev/null
	fi
	tfs_sanitizer_reports || _san=1
	[ -n "$WORK" ] && rm -rf "$WORK"
	[ -n "$TFS_URING_INI" ] && rm -f "$TFS_URING_INI"
	[ -z "$_san" ] || exit 1
}
trap tfs_cleanup EXIT
trap 'exit 1' INT TERM HUP

# tfs_mounts_of_test: the mount points under this test's work directories
# (${TMPDIR:-/tmp}/tfs-$TEST_NAME.*), with their device numbers: "0:53 /tmp/..."
tfs_mounts_of_test() {
	awk -v p="${TMPDIR:-/tmp}/tfs-$TEST_NAME." \
		'index($5, p) == 1 { print $3, $5 }' /proc/self/mountinfo
}

# tfs_break_hang: what the watchdog does past the deadline (see the top)
tfs_break_hang() {
	local _dev _mp _conn=/sys/fs/fuse/connections _dirs
	tfs_log "HANG: still running after TFS_TEST_DEADLINE=$TFS_TEST_DEADLINE s; breaking its mounts"
	grep -q " $_conn fusectl " /proc/mounts ||
		mount -t fusectl fusectl "$_conn" 2>/dev/null || true
	tfs_mounts_of_test | while read -r _dev _mp; do
		tfs_log "HANG: aborting the FUSE connection of $_mp"
		[ -w "$_conn/${_dev#0:}/abort" ] && echo 1 >"$_conn/${_dev#0:}/abort"
	done
	_dirs=$(ls -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME."* 2>/dev/null)
	for _d in $_dirs; do
		pkill -KILL -f -- "$_d/" 2>/dev/null
	done
	tfs_mounts_of_test | while read -r _dev _mp; do
		umount -l "$_mp" 2>/dev/null
	done
	kill -TERM "$$" 2>/dev/null
	for _ in $(seq 20); do
		sleep 0.5
		kill -0 "$$" 2>/dev/null || return 0
	done
	tfs_log "HANG: the test did not end on SIGTERM; SIGKILL"
	kill -KILL "$$" 2>/dev/null
}

# the watchdog: a subshell that sleeps in steps of a second, so that it
# ends soon after the test does, however the test ends
TFS_WATCHDOG=""
if [ "${TFS_TEST_DEADLINE:-0}" -gt 0 ] 2>/dev/null; then
	(
		trap - EXIT INT TERM HUP
		_t=0
		while [ "$_t" -lt "$TFS_TEST_DEADLINE" ]; do
			sleep 1
			kill -0 "$$" 2>/dev/null || exit 0
			_t=$((_t + 1))
		done
		tfs_break_hang
	) &
	TFS_WATCHDOG=$!
fi

# tfs_watchdog_off: end the watchdog (at exit, and before an exec)
tfs_watchdog_off() {
	[ -n "$TFS_WATCHDOG" ] || return 0
	pkill -P "$TFS_WATCHDOG" 2>/dev/null
	kill "$TFS_WATCHDOG" 2>/dev/null
	TFS_WATCHDOG=""
}

# tfs_sanitizer_logs: send sanitizer reports to $WORK/sanitizer.<pid>
# (ASAN_OPTIONS and the like, kept as given, with log_path added; programs
# built without sanitizers ignore them)
tfs_sanitizer_logs() {
	local _v _o="log_path=$WORK/sanitizer"
	for _v in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
		export "$_v=${!_v:+${!_v}:}$_o"
	done
}

# tfs_sanitizer_reports: 1, after printing them, if there are reports in
# $WORK (called at exit, once the daemon is gone)
tfs_sanitizer_reports() {
	local _f _found=""
	[ -n "$WORK" ] || return 0
	for _f in "$WORK"/sanitizer.*; do
		[ -e "$_f" ] || continue
		cat "$_f" >&2
		_found=1
	done
	[ -z "$_found" ] && return 0
	tfs_log "FAIL: sanitizer reports above ($(cd "$WORK" && echo sanitizer.*))"
	return 1
}

tfs_fail() { tfs_log "FAIL: $*"; exit 1; }
tfs_skip() { tfs_log "SKIP: $*"; exit 77; }
tfs_pass() { tfs_log "PASS"; exit 0; }

# tfs_need CMD...: skip the test when a tool is missing
tfs_need() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || tfs_skip "needs $c"
	done
}

# tfs_need_numpy: set PY to a python3 that has numpy (a pyenv python3
# first in PATH may have none, Debian's has python3-numpy), or skip
tfs_need_numpy() {
	local _p
	PY=""
	for _p in python3 /usr/bin/python3; do
		if command -v "$_p" >/dev/null 2>&1 && "$_p" -c 'import numpy' 2>/dev/null; then
			# shellcheck disable=SC2034 # for the test that sourced this
			PY=$_p
			return 0
		fi
	done
	tfs_skip "needs python3 with numpy (apt-get install python3-numpy)"
}

# tfs_need_torch: set TORCH_PY to a python3 that has torch (Debian's
# python3-torch, which tools/install-deps.sh installs), or skip when none
# can be found
tfs_need_torch() {
	local _p
	TORCH_PY=""
	for _p in /usr/bin/python3 python3; do
		if command -v "$_p" >/dev/null 2>&1 && "$_p" -c 'import torch' 2>/dev/null; then
			# shellcheck disable=SC2034 # for the test that sourced this
			TORCH_PY=$_p
			return 0
		fi
	done
	tfs_skip "needs python3 with torch (apt-get install python3-torch, or tools/install-deps.sh)"
}

# tfs_mkimg SIZE: make a work dir and format $IMG of SIZE
tfs_mkimg() {
	[ -e /dev/fuse ] || tfs_skip "no /dev/fuse"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")
	tfs_sanitizer_logs
	IMG="$WORK/dev.img"
	MNT="$WORK/mnt"
	mkdir "$MNT"
	"$MKFS" -s "$1" "$IMG" >"$WORK/mkfs.log" 2>&1 || {
		cat "$WORK/mkfs.log" >&2
		tfs_fail "mkfs.tensorfs -s $1 failed"
	}
}

# tfs_mkset N SIZE: format N images of SIZE in $WORK as one set
# (lib/set.h) and make $IMG name it (DEV1:DEV2:...)
tfs_mkset() {
	local _m _members=()
	for _m in $(seq "$1"); do _members+=("$WORK/m$_m.img"); done
	"$MKFS" -q -s "$2" "${_members[@]}" >"$WORK/mkfs.log" 2>&1 || {
		cat "$WORK/mkfs.log" >&2
		tfs_fail "mkfs.tensorfs of a set of $1 images of $2 failed"
	}
	IMG=$(
		IFS=:
		echo "${_members[*]}"
	)
	tfs_log "on a set of $1 members: $IMG"
}

# tfs_mount [ARGS...]: mount $IMG on $MNT in the foreground daemon mode
# (tensorfs -f) in the background, wait until the mount is live, and set
# DAEMON_PID.  Extra ARGS go before DEVICE.  A daemon that exits fails at
# once; one that neither mounts nor exits, after 30 s: the daemon built
# with ASan and the invariant checks (TFS_CHECKS) takes about 4 s to mount
# a tree of 8,000 files on an idle 2-core machine, more under load.
# tfs_check_transport MNT: with TFS_TEST_IO_URING=on, fail unless the
# mount at MNT really carries its requests over io_uring.
tfs_check_transport() {
	[ "${TFS_TEST_IO_URING:-}" = on ] || return 0
	grep -qx 'fuse_io_uring 1' "$1/.tensorfs/stats" ||
		tfs_fail "TFS_TEST_IO_URING=on, but $1 does not use io_uring: $(grep fuse_ "$1/.tensorfs/stats" | tr '\n' ' ')"
}

tfs_mount() {
	"$TENSORFS" -f "$@" "$IMG" "$MNT" >>"$WORK/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 600); do
		if mountpoint -q "$MNT"; then
			tfs_check_transport "$MNT"
			return 0
		fi
		kill -0 "$DAEMON_PID" 2>/dev/null || {
			cat "$WORK/daemon.log" >&2
			DAEMON_PID=""
			tfs_fail "tensorfs exited before mounting"
		}
		sleep 0.05
	done
	cat "$WORK/daemon.log" >&2
	tfs_fail "mount did not appear within 30 s"
}

# tfs_umount: unmount cleanly and wait for the daemon to exit 0.  EBUSY
# is retried for 5 s: a process outside the test (a scan of /tmp, say) may
# hold the mount for a moment; then the holders are named
tfs_umount() {
	local _i
	for _i in $(seq 50); do
		fusermount3 -u "$MNT" 2>"$WORK/umount.err" && break
		grep -q "busy" "$WORK/umount.err" && [ "$_i" -lt 50 ] || {
			cat "$WORK/umount.err" >&2
			fuser -vm "$MNT" >&2 2>&1 || true
			tfs_fail "fusermount3 -u failed"
		}
		sleep 0.1
	done
	if [ -n "$DAEMON_PID" ]; then
		wait "$DAEMON_PID"
		rc=$?
		DAEMON_PID=""
		[ "$rc" = 0 ] || { cat "$WORK/daemon.log" >&2; tfs_fail "daemon exited $rc after unmount"; }
	fi
	tfs_uring_errors
}

# tfs_uring_errors: fail if an io_uring queue of a daemon of this test
# stopped serving on an error of its own (uring.c logs it)
tfs_uring_errors() {
	[ -f "$WORK/daemon.log" ] || return 0
	if grep -q 'io_uring queue [0-9]*: .*its requests stop' "$WORK/daemon.log"; then
		grep 'io_uring queue' "$WORK/daemon.log" >&2
		tfs_fail "an io_uring queue of the daemon stopped on an error"
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

# ----- helpers for the POSIX-behaviour tests -----

# the syscall helper built from tfs_sys.c (see its header for the commands)
TFS_SYS="$TFS_TESTBIN/tfs_sys"

# tfs_eq WHAT EXPECTED ACTUAL: fail unless ACTUAL is EXPECTED
tfs_eq() {
	[ "$2" = "$3" ] || tfs_fail "$1: expected '$2', got '$3'"
}

# tfs_errno EXPECTED CMD ARGS...: run the tfs_sys probe CMD and fail unless
# it prints EXPECTED, which is OK or an errno name such as EEXIST
tfs_errno() {
	_want=$1
	shift
	_got=$("$TFS_SYS" "$@" 2>&1)
	[ "$_got" = "$_want" ] || tfs_fail "tfs_sys $*: expected $_want, got '$_got'"
}

# tfs_free_bytes: free bytes of the mounted file system (f_bfree * f_frsize)
tfs_free_bytes() {
	read -r _free _frsize < <(stat -f -c '%f %S' "$MNT") || return 1
	echo $((_free * _frsize))
}

# tfs_used_bytes: bytes the mounted file system uses, after a sync of it
# ((f_blocks - f_bfree) * f_frsize): a shared block counts once
tfs_used_bytes() {
	sync -f "$MNT" || return 1
	read -r _blocks _free _frsize < <(stat -f -c '%b %f %S' "$MNT") || return 1
	echo $(((_blocks - _free) * _frsize))
}

# tfs_wait_for SECONDS CMD...: rerun CMD every 0.1 s until it succeeds;
# return 1 when it still fails after SECONDS (the kernel sends FUSE
# RELEASE and FORGET asynchronously, so freed space can show up late)
tfs_wait_for() {
	_tries=$(($1 * 10))
	shift
	until "$@"; do
		_tries=$((_tries - 1))
		[ "$_tries" -gt 0 ] || return 1
		sleep 0.1
	done
}

# ----- helpers for the lifecycle and robustness tests -----

# tfs_at_exit CMD: eval CMD on exit, before the standard cleanup; for the
# extra mounts, daemons or loop devices a test makes itself
TFS_AT_EXIT=""
tfs_at_exit() {
	TFS_AT_EXIT="$TFS_AT_EXIT$1
"
	trap 'trap "" INT TERM HUP; eval "$TFS_AT_EXIT"; tfs_cleanup' EXIT
}

# tfs_kill_strays: SIGTERM, then SIGKILL, every process whose command line
# names this test's work directory (daemons started without -f)
tfs_kill_strays() {
	local _p
	[ -n "$WORK" ] || return 0
	_p=$(pgrep -f -- "$WORK/") || return 0
	kill -TERM $_p 2>/dev/null
	sleep 0.5
	_p=$(pgrep -f -- "$WORK/") && kill -KILL $_p 2>/dev/null
	return 0
}

# tfs_expect_exit CODES WHAT CMD...: run CMD under timeout 30 (stdout in
# $WORK/out, stderr in $WORK/err, exit code in TFS_RC) and fail unless it
# exits with one of CODES ("0", "4|8").  A hang, a death by a signal or a
# sanitizer report fails whatever CODES says.
tfs_expect_exit() {
	local _codes=$1 _what=$2
	shift 2
	timeout -k 5 30 "$@" >"$WORK/out" 2>"$WORK/err"
	TFS_RC=$?
	[ "$TFS_RC" != 124 ] || tfs_fail "$_what: expected exit $_codes, got no exit within 30 s (hang)"
	if grep -qE 'Sanitizer|runtime error:' "$WORK/err"; then
		cat "$WORK/err" >&2
		tfs_fail "$_what: expected exit $_codes, got a sanitizer report"
	fi
	if [ "$TFS_RC" -ge 128 ]; then
		cat "$WORK/err" >&2
		tfs_fail "$_what: expected exit $_codes, got death by signal $((TFS_RC - 128))"
	fi
	case "|$_codes|" in
	*"|$TFS_RC|"*) ;;
	*)
		cat "$WORK/out" "$WORK/err" >&2
		tfs_fail "$_what: expected exit $_codes, got $TFS_RC"
		;;
	esac
}

# tfs_expect_words WHAT FILE WORD...: FILE holds every WORD (ignoring case)
tfs_expect_words() {
	local _what=$1 _f=$2 _w
	shift 2
	for _w in "$@"; do
		grep -qiF -- "$_w" "$_f" ||
			tfs_fail "$_what: expected '$_w' in the message, got '$(head -c 500 "$_f")'"
	done
}

# tfs_expect_some_word WHAT FILE WORD...: FILE holds at least one WORD
tfs_expect_some_word() {
	local _what=$1 _f=$2 _w
	shift 2
	for _w in "$@"; do
		grep -qiF -- "$_w" "$_f" && return 0
	done
	tfs_fail "$_what: expected one of$(printf " '%s'" "$@") in the message, got '$(head -c 500 "$_f")'"
}

# tfs_wait_gone PID [SECONDS]: wait (10 s by default) for a process that is
# not a child of this shell to exit; return 1 if it is still there
tfs_wait_gone() {
	local _
	for _ in $(seq $((${2:-10} * 10))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# tfs_expect_unmounted WHAT DIR: fail (after unmounting it) if DIR is a mount
tfs_expect_unmounted() {
	if mountpoint -q "$2" 2>/dev/null; then
		fusermount3 -u "$2" 2>/dev/null || umount -l "$2" 2>/dev/null
		tfs_fail "$1: expected '$2' not to be mounted, got a mount left behind"
	fi
}

# tfs_try_mount DEVICE MOUNTPOINT [ARGS...]: run "tensorfs -f ARGS DEVICE
# MOUNTPOINT", for a mount that should fail.  Sets TFS_RC to its exit code,
# or to "mounted" if the mount came up (it is unmounted again at once), or
# to "hang" if it neither mounted nor exited within 30 s; its stdout and
# stderr are in $WORK/out and $WORK/err.
tfs_try_mount() {
	local _dev=$1 _mp=$2 _pid _
	shift 2
	"$TENSORFS" -f "$@" "$_dev" "$_mp" >"$WORK/out" 2>"$WORK/err" &
	_pid=$!
	TFS_RC=hang
	for _ in $(seq 300); do
		if mountpoint -q "$_mp" 2>/dev/null; then
			TFS_RC=mounted
			break
		fi
		if ! kill -0 "$_pid" 2>/dev/null; then
			wait "$_pid"
			TFS_RC=$?
			return 0
		fi
		sleep 0.1
	done
	fusermount3 -u "$_mp" 2>/dev/null || umount -l "$_mp" 2>/dev/null
	kill -TERM "$_pid" 2>/dev/null
	tfs_wait_gone "$_pid" 5 || kill -KILL "$_pid" 2>/dev/null
	wait "$_pid" 2>/dev/null
	return 0
}

# tfs_expect_mount_refused WHAT DEVICE MOUNTPOINT [WORD...]: "tensorfs -f
# DEVICE MOUNTPOINT" must exit 1 with a message on stderr holding every
# WORD, without a crash, a hang, a sanitizer report or a mount left behind
tfs_expect_mount_refused() {
	local _what=$1 _dev=$2 _mp=$3
	shift 3
	tfs_try_mount "$_dev" "$_mp"
	case $TFS_RC in
	mounted) tfs_fail "$_what: expected exit 1, got a live mount" ;;
	hang) tfs_fail "$_what: expected exit 1, got no exit within 30 s (hang)" ;;
	esac
	if grep -qE 'Sanitizer|runtime error:' "$WORK/err"; then
		cat "$WORK/err" >&2
		tfs_fail "$_what: expected exit 1, got a sanitizer report"
	fi
	[ "$TFS_RC" -lt 128 ] || tfs_fail "$_what: expected exit 1, got death by signal $((TFS_RC - 128))"
	[ "$TFS_RC" = 1 ] || { cat "$WORK/err" >&2; tfs_fail "$_what: expected exit 1, got $TFS_RC"; }
	[ -s "$WORK/err" ] || tfs_fail "$_what: expected a message on stderr, got none"
	tfs_expect_words "$_what" "$WORK/err" "$@"
	tfs_expect_unmounted "$_what" "$_mp"
}

# tfs_unlocked DEVICE: nothing holds the flock on DEVICE, or on any
# member of a set DEV1:DEV2:... (lib/set.h)
tfs_unlocked() {
	local _rest=$1 _m
	if [ -e "$1" ]; then
		flock -n -x "$1" true 2>/dev/null
		return
	fi
	while [ -n "$_rest" ]; do
		_m=${_rest%%:*}
		flock -n -x "$_m" true 2>/dev/null || return 1
		case $_rest in
		*:*) _rest=${_rest#*:} ;;
		*) _rest="" ;;
		esac
	done
}

# tfs_wait_unlocked [SECONDS]: wait (5 s by default) until nothing holds the
# flock on $IMG; return 1 if something still does.  A daemon killed with
# SIGKILL can hold its device's flock for some ms after it is reaped (the
# kernel may drop the last reference to the open file asynchronously, as
# when it tears down an io_uring), so a test that runs fsck or mounts again
# right after tfs_kill9 calls this first.  Sets TFS_UNLOCK_MS.
tfs_wait_unlocked() {
	local _t0 _
	_t0=$(date +%s%N)
	for _ in $(seq $((${1:-5} * 100))); do
		if tfs_unlocked "$IMG"; then
			# shellcheck disable=SC2034 # for the test that sourced this
			TFS_UNLOCK_MS=$((($(date +%s%N) - _t0) / 1000000))
			return 0
		fi
		sleep 0.01
	done
	return 1
}

# ----- helpers for the crash tests (crashwriter.c) -----

# tfs_manifest_check MANIFEST DIR: the files a crashwriter manifest says
# were fsync'd (its last line for them is "NAME SIZE SHA256"), checked in
# DIR with stat and sha256sum.  Differences go to $WORK/manifest-check.bad,
# one line each; returns 1 if there are any.
tfs_manifest_check() {
	local _m=$1 _d=$2 name size sha f got
	# a last line without its newline does not count (as in crashwriter.c)
	if [ -z "$(tail -c 1 "$_m")" ]; then cat "$_m"; else sed '$d' "$_m"; fi |
		awk '$1 != "#" { if (NF == 3) st[$1] = $2 " " $3; else delete st[$1] }
		     END { for (n in st) print n, st[n] }' >"$WORK/manifest-check.expected"
	while read -r name size sha; do
		f="$_d/$name"
		[ -f "$f" ] || { echo "'$name': missing, but fsync'd with size $size"; continue; }
		got=$(stat -c %s "$f")
		[ "$got" = "$size" ] || { echo "'$name': size $got, but fsync'd with size $size"; continue; }
		got=$(sha256sum <"$f" | cut -d' ' -f1)
		[ "$got" = "$sha" ] || echo "'$name': sha256 $got, but fsync'd with $sha"
	done <"$WORK/manifest-check.expected" >"$WORK/manifest-check.bad"
	[ ! -s "$WORK/manifest-check.bad" ]
}

# tfs_check_after_crash WHAT MANIFEST [tfs_mount options]: after the
# daemon of $IMG ended without unmounting (SIGKILL, a power cut of the
# fault device): its mount is gone, the image's flock is released within
# 5 s, tensorfs-fsck exits 0, and, mounted again (and left mounted),
# crashwriter --verify finds every file MANIFEST says was fsync'd exact.
# WHAT names the round in failures.
tfs_check_after_crash() {
	local _what=$1 _man=$2 _rc
	shift 2
	mountpoint -q "$MNT" && tfs_fail "$_what: expected the dead mount gone, got it still mounted"
	tfs_wait_unlocked 5 ||
		tfs_fail "$_what: expected the image's flock released within 5 s of the daemon's end, got it held"
	"$FSCK" "$IMG" >"$WORK/fsck.log" 2>&1
	_rc=$?
	[ "$_rc" = 0 ] || {
		cat "$WORK/fsck.log" >&2
		tfs_fail "$_what: tensorfs-fsck after the crash: expected exit 0, got $_rc"
	}
	tfs_mount "$@"
	"$TFS_TESTBIN/crashwriter" --verify "$MNT/cw" "$_man" >"$WORK/verify.log" 2>&1
	_rc=$?
	[ "$_rc" = 0 ] || {
		cat "$WORK/verify.log" >&2
		tfs_fail "$_what: crashwriter --verify: expected exit 0, got $_rc"
	}
}

# ----- helpers for the tests of mount(8) and umount(8) -----

# tfs_mount8_ns "$@": rerun the calling test in a private mount namespace
# (unshare -m), so that it may run mount(8) for real: mount(8) gives its
# helpers a fixed PATH (login.defs' ENV_SUPATH, /usr/local/sbin first), so
# mount.fuse3 finds "tensorfs" there, and tfs_mount8_path puts this
# build's there, in the namespace only.  Skips without unshare.  Call it
# first, before tfs_mkimg.
tfs_mount8_ns() {
	[ -n "${TFS_MOUNT8_NS:-}" ] && return 0
	tfs_need unshare mount umount mount.fuse3 findmnt
	unshare -m --propagation private true 2>/dev/null ||
		tfs_skip "cannot make a mount namespace (unshare -m)"
	# exec runs no EXIT trap: the rerun writes its own config file
	[ -z "$TFS_URING_INI" ] || rm -f "$TFS_URING_INI"
	tfs_watchdog_off
	TFS_MOUNT8_NS=1 exec unshare -m --propagation private bash "$0" "$@"
}

# tfs_mount8_path: in the namespace of tfs_mount8_ns, /usr/local/sbin
# holds only this build's tensorfs (after tfs_mkimg)
tfs_mount8_path() {
	[ -n "${TFS_MOUNT8_NS:-}" ] || tfs_fail "tfs_mount8_path outside tfs_mount8_ns"
	[ -d /usr/local/sbin ] || tfs_skip "no /usr/local/sbin to put tensorfs in"
	mkdir "$WORK/sbin" && ln -s "$TENSORFS" "$WORK/sbin/tensorfs" ||
		tfs_fail "cannot make $WORK/sbin"
	mount --bind "$WORK/sbin" /usr/local/sbin || tfs_skip "cannot bind-mount /usr/local/sbin"
	tfs_at_exit "tfs_kill_strays; umount /usr/local/sbin 2>/dev/null"
}

# tfs_daemon_of DIR: the pid of the daemon serving the mount on DIR (one
# started by mount(8), daemonised), or nothing
tfs_daemon_of() {
	pgrep -f -- "^tensorfs .* $1( |\$)" | head -1
}

# ===== the bytes of an image (format.h), for tests that edit them =====

# tfs_le FILE OFFSET BYTES: the little-endian unsigned integer (4 or 8
# bytes) at OFFSET of FILE
tfs_le() { od -An -tu"$3" -j "$2" -N "$3" "$1" | tr -d ' '; }

# tfs_put_le FILE OFFSET BYTES VALUE: write VALUE there, little-endian
tfs_put_le() {
	local _i _s=""
	for ((_i = 0; _i < $3; _i++)); do
		_s="$_s$(printf '\\%03o' $((($4 >> (8 * _i)) & 255)))"
	done
	# shellcheck disable=SC2059
	printf "$_s" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# tfs_crc32c FILE OFFSET LEN: the CRC-32C (crc32c.h) of those bytes
TFS_CRC_T=()
tfs_crc32c() {
	local _i _j _c _b
	if [ "${#TFS_CRC_T[@]}" != 256 ]; then
		for ((_i = 0; _i < 256; _i++)); do
			_c=$_i
			for ((_j = 0; _j < 8; _j++)); do
				_c=$(((_c >> 1) ^ (_c & 1 ? 0x82F63B78 : 0)))
			done
			TFS_CRC_T[_i]=$_c
		done
	fi
	_c=0xFFFFFFFF
	for _b in $(od -An -v -tu1 -j "$2" -N "$3" "$1"); do
		_c=$((TFS_CRC_T[(_c ^ _b) & 255] ^ (_c >> 8)))
	done
	echo $((_c ^ 0xFFFFFFFF))
}

# tfs_super_crc FILE SB: give the superblock copy at byte SB of FILE its
# checksum again (bytes 4092..4095: CRC-32C of 0..4091) after an edit
tfs_super_crc() { tfs_put_le "$1" $(($2 + 4092)) 4 "$(tfs_crc32c "$1" "$2" 4092)"; }

# tfs_to_format V FILE...: make each FILE (a member of a format-4 file
# system: both superblock copies, those that are version 4) say format V
# as an earlier mkfs.tensorfs wrote it: 3 is the same layout; 2 (one
# device) has no member count, stripe unit or member table
tfs_to_format() {
	local _v=$1 _f _sb
	shift
	for _f in "$@"; do
		for _sb in 0 4096; do
			[ "$(tfs_le "$_f" $((_sb + 8)) 4)" = 4 ] || continue
			tfs_put_le "$_f" $((_sb + 8)) 4 "$_v"
			if [ "$_v" = 2 ]; then
				tfs_put_le "$_f" $((_sb + 120)) 8 0
				tfs_put_le "$_f" $((_sb + 3552)) 8 0
			fi
			tfs_super_crc "$_f" "$_sb"
		done
	done
}
