#!/bin/bash
# Description: signals while data is still on its way to a slow device: after umount has returned, the daemon is still writing the pool back and SIGTERM, SIGINT and SIGHUP (a shutdown's kill of every process) do not stop it: it exits 0 and every byte is there; SIGTERM to a mounted daemon with a pool full of dirty data, then SIGTERM again while it writes, ends in a clean file system with every byte (the slow device needs a build with -DTFS_TEST_HOOKS=ON, else this is a skip)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum dd
MiB=1048576

"$TENSORFS" --version | grep -q "built with test hooks" ||
	tfs_skip "the slow device (TFS_FAULT=slow=...) is only in a build with -DTFS_TEST_HOOKS=ON"

# every device write waits 150 ms; a pool of eight 1 MiB buffers, so
# writers wait for it and up to 8 MiB are dirty at any time
SLOW="slow=write:150"
OPTS="max_in_cpu=32MiB,buffer_count=8,buffer_size=1MiB,block_size=1MiB"

# write_files TAG: files $TAG.0 .. $TAG.5 of 2 MiB and odd bytes each,
# without fsync; their sums in $WORK/$TAG.sums
write_files() {
	local i
	: >"$WORK/$1.sums"
	for i in 0 1 2 3 4 5; do
		"$TFS_SYS" pattern $((2 * MiB + i * 4099)) "$((70 + i))" >"$MNT/$1.$i" ||
			tfs_fail "writing $1.$i failed"
		echo "$(sha256sum <"$MNT/$1.$i" | cut -d' ' -f1) $1.$i" >>"$WORK/$1.sums"
	done
}

check_files() { # TAG WHEN
	local sum name
	while read -r sum name; do
		[ "$(sha256sum <"$MNT/$name" | cut -d' ' -f1)" = "$sum" ] ||
			tfs_fail "$name differs $2"
	done <"$WORK/$1.sums"
}

alive() { kill -0 "$1" 2>/dev/null; }

# ----- after umount: the final write-back ignores a shutdown's signals -----

tfs_mkimg 256M
TFS_FAULT=$SLOW tfs_mount -o "$OPTS"
write_files a
pid=$DAEMON_PID
t0=$(date +%s%N)
fusermount3 -u "$MNT" || tfs_fail "fusermount3 -u failed"
mountpoint -q "$MNT" && tfs_fail "still mounted after fusermount3 -u returned"
alive "$pid" ||
	tfs_fail "the daemon had already exited when umount returned: no write-back left to test (is the device slow? $SLOW)"
tfs_log "umount returned after $((($(date +%s%N) - t0) / 1000000)) ms, the daemon still writing back"
for sig in TERM INT HUP; do
	kill -s "$sig" "$pid" 2>/dev/null
	sleep 0.1
done
alive "$pid" || tfs_log "the daemon finished within the signals' 0.3 s"
wait "$pid"
rc=$?
DAEMON_PID=""
tfs_eq "exit code of a daemon sent SIGTERM, SIGINT and SIGHUP during its final write-back" 0 "$rc"
tfs_fsck_clean
tfs_mount
check_files a "after a final write-back that was sent signals"
tfs_umount

# ----- mounted: SIGTERM with a full pool, then SIGTERM again -----

TFS_FAULT=$SLOW tfs_mount -o "$OPTS"
write_files b
pid=$DAEMON_PID
kill -TERM "$pid"
sleep 0.2
alive "$pid" && kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
DAEMON_PID=""
tfs_eq "exit code of a mounted daemon sent SIGTERM twice while writing back" 0 "$rc"
tfs_expect_unmounted "tensorfs -f after SIGTERM" "$MNT"
tfs_fsck_clean
tfs_mount
check_files a "after the second mount's SIGTERM"
check_files b "after SIGTERM with a full pool"
tfs_umount
tfs_fsck_clean

tfs_pass
