#!/bin/bash
# Description: the backing image truncated, or deleted, while mounted (also
# an image that is member 2 or 3 of a set, named in the error) puts
# the mount in its error state (lib/journal.c J7) at the next commit: the
# log and .tensorfs/stats name the cause, changes fail (EROFS) and fsync
# fails (EIO), reads still work, and the daemon exits non-zero at unmount,
# never a silent 0.  Protects J7.
. "$(dirname "$0")/lib.sh"
tfs_need python3

tfs_mkimg 256M

# wait_error WHAT: .tensorfs/stats shows the error state naming WHAT
# within 5 s, with no fsync or other call from us: the commit thread's
# next commit (every 200 ms here) found it
wait_error() {
	for _ in $(seq 50); do
		grep -q "^error_reason .*$1" "$MNT/.tensorfs/stats" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$MNT/.tensorfs/stats" >&2
	tfs_fail "$1: .tensorfs/stats shows no error naming it"
}

# check_error_state WHAT: what the error state promises
check_error_state() {
	wait_error "$1"
	grep -q "^error 5$" "$MNT/.tensorfs/stats" ||
		tfs_fail "$1: stats has no 'error 5' (EIO)"
	grep -q "^tensorfs_error 5$" "$MNT/.tensorfs/metrics" ||
		tfs_fail "$1: metrics has no tensorfs_error 5 (EIO)"
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if j["error"] == 5 and sys.argv[2] in j["error_reason"] else 1)' \
		"$MNT/.tensorfs/stats.json" "$1" ||
		tfs_fail "$1: stats.json has no error naming it"
	grep -q "$1" "$WORK/daemon.log" || {
		cat "$WORK/daemon.log" >&2
		tfs_fail "$1: the log does not name the cause"
	}
	# changes fail: EROFS
	out=$(python3 -c 'import os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    print("OK")
except OSError as e:
    print(os.strerror(e.errno))' "$MNT/new") 
	tfs_eq "$1: create" "Read-only file system" "$out"
	out=$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.pwrite(fd, b"x", 0)
    os.fsync(fd)
    print("OK")
except OSError as e:
    print(os.strerror(e.errno))' "$MNT/synced")
	tfs_eq "$1: write" "Read-only file system" "$out"
	out=$(python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.fsync(fd)
    print("OK")
except OSError as e:
    print(os.strerror(e.errno))' "$MNT/synced")
	tfs_eq "$1: fsync" "Input/output error" "$out"
	# reads work: the data can still be copied out
	cmp -s "$MNT/synced" "$WORK/synced" || tfs_fail "$1: cannot read back"
}

# unmount_fails WHAT: the daemon exits non-zero and says why
unmount_fails() {
	fusermount3 -u "$MNT" || tfs_fail "$1: fusermount3 -u failed"
	wait "$DAEMON_PID"
	rc=$?
	DAEMON_PID=""
	[ "$rc" != 0 ] || {
		cat "$WORK/daemon.log" >&2
		tfs_fail "$1: daemon exited 0 after unmount"
	}
	grep -q "closed in the error state" "$WORK/daemon.log" || {
		cat "$WORK/daemon.log" >&2
		tfs_fail "$1: no word of the error state at unmount"
	}
}

head -c 3000000 /dev/urandom >"$WORK/synced"

# round 1: truncated while mounted
tfs_mount -o commit_interval_ms=200
cp "$WORK/synced" "$MNT/synced" && sync "$MNT/synced" || tfs_fail "first write"
truncate -s 64M "$IMG"
check_error_state "truncated"
unmount_fails "truncated"

# round 2: deleted while mounted
rm -f "$IMG"
: >"$WORK/daemon.log"
"$MKFS" -s 256M "$IMG" >"$WORK/mkfs.log" 2>&1 || tfs_fail "mkfs"
tfs_mount -o commit_interval_ms=200
cp "$WORK/synced" "$MNT/synced" && sync "$MNT/synced" || tfs_fail "first write"
rm "$IMG"
check_error_state "deleted"
unmount_fails "deleted"

# rounds 3 and 4: a member of a set other than the first (which holds
# the journal) truncated, then deleted; the error names it
tfs_mkset 3 96M
: >"$WORK/daemon.log"
tfs_mount -o commit_interval_ms=200
cp "$WORK/synced" "$MNT/synced" && sync "$MNT/synced" || tfs_fail "first write to the set"
truncate -s 64M "$WORK/m2.img"
check_error_state "image of member 2 ($WORK/m2.img) was truncated"
unmount_fails "member 2 truncated"
rm -f "$WORK"/m?.img
tfs_mkset 3 96M
: >"$WORK/daemon.log"
tfs_mount -o commit_interval_ms=200
cp "$WORK/synced" "$MNT/synced" && sync "$MNT/synced" || tfs_fail "first write to the set"
rm "$WORK/m3.img"
check_error_state "image of member 3 ($WORK/m3.img) was deleted"
unmount_fails "member 3 deleted"

tfs_pass
