#!/bin/bash
# Description: the daemon's messages reach the user: with -f the recovery notice and write-back errors land on stderr; daemonised with -o log=FILE they land in FILE (the recovery notice on the terminal too); daemonised with no /dev/log and no log setting (a private mount namespace hiding /dev/log and /var/log) they land in /var/log/tensorfs/DEVICE.log; daemonised with a syslog daemon listening on /dev/log (a listener of the test's own, in a private mount namespace) they reach it as tensorfs[PID] with the daemon facility; a log file that cannot be opened, or log=syslog with nothing listening, stops the mount with a message naming it
. "$(dirname "$0")/lib.sh"

tfs_need python3 sha256sum pgrep
MiB=1048576

# crash_after_change: a change committed (fsync'd), then SIGKILL: the
# next mount replays the journal
crash_after_change() {
	tfs_mount
	echo "$1" >"$MNT/$1"
	sync "$MNT/$1" || tfs_fail "fsync of $1 failed"
	tfs_kill9
	tfs_wait_unlocked 5 || tfs_fail "image still locked after SIGKILL"
}

# wait_daemon_gone: the daemonised tensorfs of this test has exited
wait_daemon_gone() {
	for _ in $(seq 100); do
		pgrep -f -- "^$TENSORFS .*$IMG" >/dev/null || return 0
		sleep 0.1
	done
	tfs_fail "the daemon did not exit within 10 s of the unmount"
}

RECOVERED='recovered [0-9]+ journal transactions after an unclean shutdown'

# ----- -f: stderr -----

tfs_mkimg 256M
tfs_at_exit tfs_kill_strays
crash_after_change a
: >"$WORK/daemon.log"
tfs_mount
grep -qE "$RECOVERED" "$WORK/daemon.log" ||
	tfs_fail "-f: expected the recovery notice on stderr, got: $(cat "$WORK/daemon.log")"
tfs_umount

# ----- daemonised, -o log=FILE -----

crash_after_change b
"$TENSORFS" -o log="$WORK/tfs.log" "$IMG" "$MNT" >"$WORK/term.out" 2>"$WORK/term.err" ||
	{ cat "$WORK/term.err" >&2; tfs_fail "daemonised mount with -o log=FILE failed"; }
mountpoint -q "$MNT" || tfs_fail "daemonised mount: $MNT is not mounted"
grep -qE "$RECOVERED" "$WORK/term.err" ||
	tfs_fail "while the terminal is attached: expected the recovery notice on it, got: $(cat "$WORK/term.err")"
grep -qE "$RECOVERED" "$WORK/tfs.log" ||
	tfs_fail "-o log=FILE: expected the recovery notice in the file, got: $(cat "$WORK/tfs.log")"
grep -q "mounted on $MNT" "$WORK/tfs.log" ||
	tfs_fail "-o log=FILE: expected a line saying it mounted, got: $(cat "$WORK/tfs.log")"
[ "$(cat "$MNT/b")" = b ] || tfs_fail "b lost after the crash"
fusermount3 -u "$MNT" || tfs_fail "fusermount3 -u failed"
wait_daemon_gone
tfs_fsck_clean

# write-back errors, daemonised: they reach the file
if "$TENSORFS" --version | grep -q "built with test hooks"; then
	# fail every write in the data area (the superblocks and the journal
	# sit below it; checkpoints, in it, fail too: lib/journal.c J10)
	journal_mib=$("$MKFS" -f -s 256M "$IMG" | sed -n 's/.*, \([0-9]*\)\.0 MiB for the journal.*/\1/p')
	[ -n "$journal_mib" ] || tfs_fail "cannot tell the journal's size from mkfs.tensorfs's output"
	: >"$WORK/tfs.log"
	TFS_FAULT_WRITE_EIO_FROM=$((journal_mib * MiB + 8192)) "$TENSORFS" -o log="$WORK/tfs.log" "$IMG" "$MNT" ||
		tfs_fail "mount for the write-back error failed"
	python3 - "$MNT/w" <<'PY' || tfs_fail "the failed write-back did not reach fsync as EIO"
import errno, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"x" * 65536)
try:
    os.fsync(fd)
except OSError as e:
    sys.exit(0 if e.errno == errno.EIO else 1)
sys.exit(1)
PY
	fusermount3 -u "$MNT" 2>/dev/null
	wait_daemon_gone
	grep -q "write-back of inode" "$WORK/tfs.log" ||
		tfs_fail "daemonised: expected the write-back error in the log file, got: $(cat "$WORK/tfs.log")"
	"$MKFS" -f -s 256M "$IMG" >/dev/null || tfs_fail "mkfs failed"
else
	tfs_log "write-back errors skipped: tensorfs is built without -DTFS_TEST_HOOKS=ON"
fi

# ----- a log file that cannot be opened -----

"$TENSORFS" -o log="$WORK/no/such/dir/x.log" "$IMG" "$MNT" 2>"$WORK/term.err" &&
	tfs_fail "-o log=FILE in a missing directory: expected the mount refused"
grep -q "cannot open the log file '$WORK/no/such/dir/x.log'" "$WORK/term.err" ||
	tfs_fail "-o log=FILE in a missing directory: expected a message naming it, got: $(cat "$WORK/term.err")"
mountpoint -q "$MNT" && tfs_fail "mounted despite a bad log file"

# ----- daemonised, no /dev/log: the default file -----

if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
	tfs_log "the default log file skipped: needs root and unshare(1) for a private mount namespace"
	tfs_pass
fi
crash_after_change c
# In a private mount namespace: a tmpfs over /var/log (this machine's logs
# stay untouched) and /dev/log made a dead end (a device node where the
# socket was), so the daemon cannot reach syslog; it must pick
# /var/log/tensorfs/dev.img.log.  What it wrote is copied out to $WORK.
unshare -m --propagation private bash -s "$TENSORFS" "$IMG" "$MNT" "$WORK" <<'NS' || tfs_fail "the run in a private mount namespace failed (above)"
set -eu
tensorfs=$1 img=$2 mnt=$3 work=$4
mount -t tmpfs tfs-test-log /var/log
if [ -e /dev/log ] || [ -L /dev/log ]; then
	mount --bind /dev/null /dev/log
fi
"$tensorfs" "$img" "$mnt" 2>"$work/ns.err"
echo c2 >"$mnt/c2"
sync "$mnt/c2"
fusermount3 -u "$mnt"
for _ in $(seq 100); do
	pgrep -f -- "^$tensorfs $img" >/dev/null || break
	sleep 0.1
done
cp /var/log/tensorfs/dev.img.log "$work/default.log"
NS
grep -qE "$RECOVERED" "$WORK/default.log" ||
	tfs_fail "no /dev/log: expected the recovery notice in /var/log/tensorfs/dev.img.log, got: $(cat "$WORK/default.log")"
grep -qE "$RECOVERED" "$WORK/ns.err" ||
	tfs_fail "no /dev/log: expected the recovery notice on the terminal too, got: $(cat "$WORK/ns.err")"
tfs_fsck_clean

# ----- daemonised, a syslog daemon listening: syslog -----

crash_after_change d
# In a private mount namespace: a /dev of the test's own (a tmpfs with
# the device nodes the daemon needs) bound over /dev, where a listener of
# this test reads /dev/log as a syslog daemon would (the machine's /dev
# and syslog stay untouched).  First log=syslog with nothing listening
# must stop the mount; then, with the listener, the daemonised mount
# must log there, as "tensorfs[PID]" with the daemon facility.
unshare -m --propagation private bash -s "$TENSORFS" "$IMG" "$MNT" "$WORK" <<'NS' || tfs_fail "the run in a private mount namespace failed (above)"
set -eu
tensorfs=$1 img=$2 mnt=$3 work=$4
mkdir -p "$work/dev"
mount -t tmpfs tfs-test-dev "$work/dev"
for n in fuse null zero full random urandom tty; do
	[ -e "/dev/$n" ] && cp -a "/dev/$n" "$work/dev/$n"
done
mount --bind "$work/dev" /dev
if "$tensorfs" -o log=syslog "$img" "$mnt" 2>"$work/nosyslog.err"; then
	echo "log=syslog with nothing on /dev/log: expected the mount refused" >&2
	fusermount3 -u "$mnt"
	exit 1
fi
# the listener: each message as "FACILITY SEVERITY TEXT"; gone after 60 s
python3 - "$work/syslog.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
s.settimeout(60)
with open(sys.argv[1], "w") as out:
    print("ready", file=out, flush=True)
    try:
        while True:
            m = s.recv(65536).decode(errors="replace")
            pri, _, rest = m[1:].partition(">")
            print(int(pri) >> 3, int(pri) & 7, rest, file=out, flush=True)
    except socket.timeout:
        pass
PY
listener=$!
for _ in $(seq 100); do
	grep -q ready "$work/syslog.out" 2>/dev/null && break
	sleep 0.1
done
"$tensorfs" "$img" "$mnt" 2>"$work/syslog.err"
echo d2 >"$mnt/d2"
sync "$mnt/d2"
fusermount3 -u "$mnt"
for _ in $(seq 100); do
	pgrep -f -- "^$tensorfs $img" >/dev/null || break
	sleep 0.1
done
kill "$listener" 2>/dev/null || true
wait "$listener" 2>/dev/null || true
NS
grep -q "log=syslog, but /dev/log does not accept messages" "$WORK/nosyslog.err" ||
	tfs_fail "log=syslog with nothing listening: expected a message saying so, got: $(cat "$WORK/nosyslog.err")"
# LOG_DAEMON is facility 3
grep -qE "^3 [0-7] .*tensorfs\[[0-9]+\]: .*$RECOVERED" "$WORK/syslog.out" ||
	tfs_fail "syslog: expected the recovery notice from tensorfs[PID], facility daemon, got: $(cat "$WORK/syslog.out")"
grep -qE "^3 [0-7] .*tensorfs\[[0-9]+\]: .*mounted on $MNT" "$WORK/syslog.out" ||
	tfs_fail "syslog: expected a line saying it mounted, got: $(cat "$WORK/syslog.out")"
grep -qE "$RECOVERED" "$WORK/syslog.err" ||
	tfs_fail "syslog: expected the recovery notice on the terminal too, got: $(cat "$WORK/syslog.err")"
tfs_fsck_clean
tfs_pass
