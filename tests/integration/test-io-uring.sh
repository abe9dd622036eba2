#!/bin/bash
# Description: -o io_uring=on|auto|off with enable_uring N and Y (on refuses, naming it; -o beats
# the config); stats, stats.json, metrics, log agree; over io_uring: parallel writers exact, prompt
# unmount, remount ro/rw, SIGKILL gives ENOTCONN at once and fsync'd data kept, the error state,
# cold whole-chunk reads straight into the request's buffer
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_mount8_ns "$@"
tfs_need python3 dd sha256sum truncate mountpoint
# every mount here names its transport (-o io_uring=..., which beats the
# config file TFS_TEST_IO_URING makes lib.sh write), and some must be
# over /dev/fuse: tfs_mount's check of the transport would refuse them
TFS_TEST_IO_URING=""
PARAM=/sys/module/fuse/parameters/enable_uring
MiB=1048576
tfs_mkimg 256M
tfs_mount8_path

# ----- helpers -----

# up MODE [OPTS]: mount with -o io_uring=MODE[,OPTS], this mount's log
# alone in $WORK/daemon.log, once its INIT line is there; CONN is the
# connection's number in /sys/fs/fuse/connections
up() {
	: >"$WORK/daemon.log"
	tfs_mount -o "io_uring=$1${2:+,$2}"
	CONN=$(mountpoint -d "$MNT" | cut -d: -f2)
	tfs_wait_for 5 grep -q "FUSE protocol" "$WORK/daemon.log" ||
		tfs_fail "io_uring=$1: expected the log's INIT line, got '$(cat "$WORK/daemon.log")'"
}

# st KEY: KEY's value in .tensorfs/stats
st() { awk -v k="$1" '$1 == k { print $2 }' "$MNT/.tensorfs/stats"; }

# transport: io_uring or dev_fuse, as .tensorfs/stats says (fuse_io_uring)
transport() { [ "$(st fuse_io_uring)" = 1 ] && echo io_uring || echo dev_fuse; }

# consistent WHAT TRANSPORT: .tensorfs/stats says TRANSPORT
# (fuse_io_uring), stats.json and metrics say the same of the transport
# and the features, and the log's INIT line agrees
consistent() {
	local _what=$1 _want=$2
	tfs_eq "$_what: transport" "$_want" "$(transport)"
	cp "$MNT/.tensorfs/stats" "$WORK/c.stats" &&
		cp "$MNT/.tensorfs/stats.json" "$WORK/c.json" &&
		cp "$MNT/.tensorfs/metrics" "$WORK/c.metrics" ||
		tfs_fail "$_what: cannot read .tensorfs"
	python3 - "$WORK/c.stats" "$WORK/c.json" "$WORK/c.metrics" >"$WORK/c.out" 2>&1 <<'PY' ||
import json, re, sys
s = dict(l.split(None, 1) for l in open(sys.argv[1]) if l.startswith("fuse_"))
s = {k: v.strip() for k, v in s.items()}
j = json.load(open(sys.argv[2]))
m = {}
for l in open(sys.argv[3]):
    r = re.match(r'tensorfs_(fuse_\w+) (\S+)$', l)
    if r:
        m[r.group(1)] = r.group(2)
bad = []
for k in ("fuse_io_uring", "fuse_uring_requests", "fuse_handle_killpriv_v2",
          "fuse_direct_io_allow_mmap", "fuse_over_io_uring", "fuse_parallel_direct_writes"):
    if k not in s:
        bad.append("stats has no %s" % k)
feats = [k for k in s if k != "fuse_uring_requests"]
for k in s:
    if k not in j:
        bad.append("stats.json has no %s" % k)
for k in feats:
    if k in j and str(j[k]) != s[k]:
        bad.append("%s: stats %s, stats.json %s" % (k, s[k], j[k]))
    if m.get(k) != s[k]:
        bad.append("%s: stats %s, metrics %s" % (k, s[k], m.get(k)))
if s.get("fuse_io_uring") == "1" and s.get("fuse_over_io_uring") != "1":
    bad.append("transport io_uring, but fuse_over_io_uring %s" % s.get("fuse_over_io_uring"))
# a counter read three times in that order (each read is requests too)
try:
    a, b, c = int(s["fuse_uring_requests"]), int(j["fuse_uring_requests"]), int(m["fuse_uring_requests_total"])
    if not a <= b <= c:
        bad.append("uring requests: stats %d, then stats.json %d, then metrics %d" % (a, b, c))
except (KeyError, TypeError, ValueError) as e:
    bad.append("uring requests: %r" % e)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
		tfs_fail "$_what: stats, stats.json and metrics disagree: $(cat "$WORK/c.out")"
	if [ "$_want" = io_uring ]; then
		grep -q "requests over io_uring (" "$WORK/daemon.log" ||
			tfs_fail "$_what: expected the log to say 'requests over io_uring', got '$(cat "$WORK/daemon.log")'"
	else
		grep -q "over /dev/fuse, not io_uring: ." "$WORK/daemon.log" ||
			tfs_fail "$_what: expected the log to say why not io_uring, got '$(cat "$WORK/daemon.log")'"
	fi
	[ "$(st fuse_handle_killpriv_v2)" = "$(grep -c 'negotiated: [^;]*handle_killpriv_v2' "$WORK/daemon.log")" ] ||
		tfs_fail "$_what: fuse_handle_killpriv_v2 $(st fuse_handle_killpriv_v2), the log says '$(cat "$WORK/daemon.log")'"
}

# refused WHAT WORD... [-- ARGS...]: tensorfs -f ARGS must exit 1 with a
# message holding every WORD, and leave no mount
refused() {
	local _what=$1 _w=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		_w+=("$1")
		shift
	done
	shift
	tfs_try_mount "$IMG" "$MNT" "$@"
	case $TFS_RC in
	mounted) tfs_fail "$_what: expected exit 1, got a live mount" ;;
	hang) tfs_fail "$_what: expected exit 1, got no exit within 30 s (hang)" ;;
	1) ;;
	*) tfs_fail "$_what: expected exit 1, got $TFS_RC: $(cat "$WORK/err")" ;;
	esac
	tfs_expect_words "$_what" "$WORK/err" "${_w[@]}"
	tfs_expect_unmounted "$_what" "$MNT"
}

# within SECONDS CMD...: run CMD (output in $WORK/within.out), its status
# in WITHIN_RC, or "hang" if it still runs after SECONDS: then the
# connection is aborted, so that nothing waits for ever
within() {
	local _n=$(($1 * 20)) _p _
	shift
	"$@" >"$WORK/within.out" 2>&1 &
	_p=$!
	for _ in $(seq "$_n"); do
		if ! kill -0 "$_p" 2>/dev/null; then
			wait "$_p"
			WITHIN_RC=$?
			return 0
		fi
		sleep 0.05
	done
	WITHIN_RC=hang
	echo 1 >"/sys/fs/fuse/connections/$CONN/abort" 2>/dev/null
	kill -KILL "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
}

# ms_since T0: milliseconds since T0 (date +%s%N)
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# ----- a kernel without FUSE over io_uring -----

if [ ! -e "$PARAM" ]; then
	refused "io_uring=on on a kernel without it" enable_uring -- -o io_uring=on
	up auto
	consistent "io_uring=auto on a kernel without it" dev_fuse
	grep -q "not io_uring: .*enable_uring" "$WORK/daemon.log" ||
		tfs_fail "io_uring=auto: expected the log to name enable_uring, got '$(cat "$WORK/daemon.log")'"
	tfs_umount
	tfs_skip "this kernel has no FUSE over io_uring ($PARAM is missing): io_uring=on refused, auto used /dev/fuse"
fi
WAS=$(cat "$PARAM") || tfs_fail "cannot read $PARAM"
tfs_at_exit "echo '$WAS' >'$PARAM'"
echo N >"$PARAM" 2>/dev/null || tfs_skip "cannot write $PARAM (not root?)"
tfs_log "enable_uring was $WAS (restored at exit)"

# config files: [mount] io_uring, which -o io_uring overrides
printf '[mount]\nio_uring = on\n' >"$WORK/on.ini"
printf '[mount]\nio_uring = off\n' >"$WORK/off.ini"
CONFIG=$TENSORFS_CONFIG

# ----- enable_uring N: on refuses, auto falls back -----

refused "io_uring=on with enable_uring N" enable_uring "echo Y" -- -o io_uring=on
export TENSORFS_CONFIG=$WORK/on.ini
refused "[mount] io_uring = on with enable_uring N" enable_uring "echo Y"
up auto
export TENSORFS_CONFIG=$CONFIG
consistent "io_uring=auto (over a config's on) with enable_uring N" dev_fuse
grep -q "not io_uring: .*enable_uring is N" "$WORK/daemon.log" ||
	tfs_fail "io_uring=auto with enable_uring N: expected the log to say enable_uring is N, got '$(cat "$WORK/daemon.log")'"
dd if=/dev/urandom of="$MNT/n" bs=1M count=4 conv=fsync status=none || tfs_fail "write over /dev/fuse failed"
tfs_eq "io_uring requests over /dev/fuse" 0 "$(st fuse_uring_requests)"
tfs_umount

# ----- enable_uring Y -----

echo Y >"$PARAM" || tfs_fail "cannot write Y to $PARAM"
up auto
consistent "io_uring=auto with enable_uring Y" io_uring
tfs_eq "fuse_over_io_uring" 1 "$(st fuse_over_io_uring)"
r0=$(st fuse_uring_requests)
dd if=/dev/urandom of="$MNT/grow" bs=1M count=8 conv=fsync status=none || tfs_fail "write of grow failed"
r1=$(st fuse_uring_requests)
[ "$r1" -ge $((r0 + 8)) ] || tfs_fail "fuse_uring_requests after an 8 MiB write: expected at least $((r0 + 8)), got $r1 (from $r0)"
dd if="$MNT/grow" of=/dev/null bs=1M iflag=direct status=none || tfs_fail "O_DIRECT read of grow failed"
r2=$(st fuse_uring_requests)
[ "$r2" -ge $((r1 + 8)) ] || tfs_fail "fuse_uring_requests after an 8 MiB read: expected at least $((r1 + 8)), got $r2 (from $r1)"
cmp -s "$MNT/n" <(dd if="$MNT/n" bs=1M iflag=direct status=none) || tfs_fail "n reads back differently buffered and O_DIRECT"
sha256sum <"$MNT/n" >"$WORK/n.sha" || tfs_fail "read of n failed"

# parallel writers: two O_DIRECT and two buffered, each its own file,
# and four O_DIRECT into distinct quarters of one file (not extending it:
# FOPEN_PARALLEL_DIRECT_WRITES lets the kernel send them together)
for i in 1 2 3 4; do
	head -c $((8 * MiB)) /dev/urandom >"$WORK/src$i" || tfs_fail "cannot make src$i"
done
cat "$WORK"/src[1-4] | sha256sum >"$WORK/shared.sha"
mkdir "$MNT/p" || tfs_fail "mkdir p failed"
truncate -s $((32 * MiB)) "$MNT/p/shared" || tfs_fail "truncate shared failed"
pids=()
dd if="$WORK/src1" of="$MNT/p/d1" bs=1M oflag=direct conv=fsync status=none 2>"$WORK/w1" &
pids+=($!)
dd if="$WORK/src2" of="$MNT/p/d2" bs=256K oflag=direct conv=fsync status=none 2>"$WORK/w2" &
pids+=($!)
dd if="$WORK/src3" of="$MNT/p/b3" bs=64K conv=fsync status=none 2>"$WORK/w3" &
pids+=($!)
dd if="$WORK/src4" of="$MNT/p/b4" bs=1M conv=fsync status=none 2>"$WORK/w4" &
pids+=($!)
for i in 1 2 3 4; do
	dd if="$WORK/src$i" of="$MNT/p/shared" bs=1M seek=$((8 * (i - 1))) oflag=direct conv=notrunc,fsync status=none 2>"$WORK/s$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || tfs_fail "a parallel writer failed: $(cat "$WORK"/w[1-4] "$WORK"/s[1-4])"
done
# check_data WHAT: every file written so far reads back exact
check_data() {
	local _f
	for _f in d1:src1 d2:src2 b3:src3 b4:src4; do
		cmp -s "$MNT/p/${_f%%:*}" "$WORK/${_f#*:}" || tfs_fail "$1: p/${_f%%:*} differs from what was written"
	done
	tfs_eq "$1: sha256 of p/shared" "$(cat "$WORK/shared.sha")" "$(sha256sum <"$MNT/p/shared")"
	tfs_eq "$1: sha256 of n" "$(cat "$WORK/n.sha")" "$(sha256sum <"$MNT/n")"
}
check_data "parallel writers, before unmount"
consistent "after the writers" io_uring

# unmount: the daemon exits 0, at once
t0=$(date +%s%N)
tfs_umount
ms=$(ms_since "$t0")
[ "$ms" -lt 5000 ] || tfs_fail "unmount over io_uring: expected the daemon gone within 5 s, took $ms ms"
tfs_log "unmount over io_uring: the daemon exited 0 after $ms ms"

# on, over a config file saying off
export TENSORFS_CONFIG=$WORK/off.ini
up on
export TENSORFS_CONFIG=$CONFIG
consistent "io_uring=on (over a config's off) with enable_uring Y" io_uring
# a cold read of whole chunks (1 MiB, O_DIRECT) goes from the device
# straight into the request's buffer, around the cache: exact bytes, and
# cache_read_around counts each chunk
a0=$(st cache_read_around)
dd if="$MNT/p/d2" bs=1M iflag=direct status=none | cmp -s - "$WORK/src2" ||
	tfs_fail "a cold O_DIRECT read of p/d2 over io_uring differs from what was written"
a1=$(st cache_read_around)
[ "$a1" -ge $((a0 + 8)) ] ||
	tfs_fail "a cold 8 MiB O_DIRECT read over io_uring: expected 8 chunks read around the cache, cache_read_around went $a0 -> $a1"
# the same from a buffer aligned to 1 KiB and not to a page, as
# DeepSpeed's are: the kernel cuts each 1 MiB read 1 KiB short of its
# chunk, and that piece still goes around the cache, whole
python3 - "$MNT/p/d2" "$WORK/d2.kib" <<'PY' || tfs_fail "a 1 KiB-aligned O_DIRECT read of p/d2 over io_uring: expected it to read, got the error above"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
area = mmap.mmap(-1, 2 << 20)
buf = memoryview(area)[1024:1024 + (1 << 20)]
with open(sys.argv[2], "wb") as out:
    off = 0
    while True:
        n = os.preadv(fd, [buf], off)
        if n == 0:
            break
        out.write(buf[:n])
        off += n
os.close(fd)
PY
cmp -s "$WORK/d2.kib" "$WORK/src2" ||
	tfs_fail "a 1 KiB-aligned O_DIRECT read of p/d2 over io_uring differs from what was written"
a2=$(st cache_read_around)
[ "$a2" -ge $((a1 + 8)) ] ||
	tfs_fail "a 1 KiB-aligned 8 MiB O_DIRECT read over io_uring: expected 8 chunks read around the cache, cache_read_around went $a1 -> $a2"
check_data "parallel writers, after a remount"

# remount,ro and rw (mount(8), through mount.fuse3): the same daemon,
# none started, still over io_uring
DPID=$DAEMON_PID
mount -o remount,ro "$MNT" >"$WORK/rout" 2>&1 || tfs_fail "remount,ro over io_uring failed: $(cat "$WORK/rout")"
{ echo x >"$MNT/ro-probe"; } 2>"$WORK/err" && tfs_fail "a write on the ro mount succeeded"
grep -q "Read-only file system" "$WORK/err" || tfs_fail "a write on the ro mount: expected EROFS, got '$(cat "$WORK/err")'"
r0=$(st fuse_uring_requests)
check_data "remounted ro"
[ "$(st fuse_uring_requests)" -gt "$r0" ] || tfs_fail "remounted ro: requests no longer come over io_uring"
mount -o remount,rw "$MNT" >"$WORK/rout" 2>&1 || tfs_fail "remount,rw over io_uring failed: $(cat "$WORK/rout")"
dd if=/dev/urandom of="$MNT/k" bs=1M count=4 conv=fsync status=none || tfs_fail "a write after remount,rw failed"
sha256sum <"$MNT/k" >"$WORK/k.sha"
consistent "after remount,ro and rw" io_uring
tfs_eq "daemons of the mount after the remounts" "$DPID" "$(pgrep -f -- " $MNT\$" | tr '\n' ' ' | sed 's/ $//')"

# SIGKILL: the mount answers ENOTCONN at once, umount works, nothing lost
# that was fsync'd.  The first request may meet the connection still up
# (io_uring releases the daemon's rings after it is gone) and be ended by
# its abort: ECONNABORTED; the next ones find it down: ENOTCONN
dd if=/dev/urandom of="$MNT/unsynced" bs=1M count=4 status=none
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=""
t0=$(date +%s%N)
within 2 stat "$MNT/k"
[ "$WITHIN_RC" != hang ] || tfs_fail "stat after SIGKILL of the daemon: expected ENOTCONN, got no answer within 2 s (aborted)"
first=$(sed -n 's/.*: \(Transport endpoint is not connected\|Software caused connection abort\)$/\1/p' "$WORK/within.out")
[ -n "$first" ] ||
	tfs_fail "stat after SIGKILL of the daemon: expected ENOTCONN (or ECONNABORTED), got exit $WITHIN_RC: $(cat "$WORK/within.out")"
within 2 stat "$MNT/k"
[ "$WITHIN_RC" != hang ] || tfs_fail "a second stat after SIGKILL of the daemon: expected ENOTCONN, got no answer within 2 s (aborted)"
grep -q "Transport endpoint is not connected" "$WORK/within.out" ||
	tfs_fail "a second stat after SIGKILL of the daemon: expected ENOTCONN, got exit $WITHIN_RC: $(cat "$WORK/within.out")"
tfs_log "SIGKILL: '$first', then ENOTCONN, $(ms_since "$t0") ms after it"
within 5 umount "$MNT"
[ "$WITHIN_RC" = 0 ] || tfs_fail "umount of the dead mount: expected exit 0, got $WITHIN_RC: $(cat "$WORK/within.out")"
tfs_mounted "$MNT" && tfs_fail "umount of the dead mount: it is still in /proc/mounts"
tfs_wait_unlocked 5 || tfs_fail "the image's flock is still held 5 s after the daemon's end"
tfs_fsck_clean
up on
consistent "io_uring=on after SIGKILL" io_uring
tfs_eq "sha256 of k (fsync'd before SIGKILL)" "$(cat "$WORK/k.sha")" "$(sha256sum <"$MNT/k")"
check_data "after SIGKILL"
tfs_umount

# off, with enable_uring Y: /dev/fuse
up off
consistent "io_uring=off with enable_uring Y" dev_fuse
grep -q "not io_uring: io_uring=off" "$WORK/daemon.log" ||
	tfs_fail "io_uring=off: expected the log to say io_uring=off was asked for, got '$(cat "$WORK/daemon.log")'"
tfs_eq "fuse_over_io_uring with io_uring=off" 0 "$(st fuse_over_io_uring)"
check_data "over /dev/fuse"
tfs_eq "io_uring requests with io_uring=off" 0 "$(st fuse_uring_requests)"
tfs_umount
tfs_fsck_clean

# the error state over io_uring (as test-device-changed): the image cut
# short under the mount; changes fail with EROFS, fsync with EIO, reads
# work, and the daemon's exit says so
up on commit_interval_ms=200
cp "$WORK/src1" "$MNT/synced" && sync "$MNT/synced" || tfs_fail "write of synced failed"
truncate -s 64M "$IMG"
tfs_wait_for 5 grep -q "^error_reason .*truncated" "$MNT/.tensorfs/stats" ||
	tfs_fail "error state over io_uring: .tensorfs/stats names no error: $(grep error "$MNT/.tensorfs/stats")"
tfs_eq "error state: transport" io_uring "$(transport)"
out=$(python3 -c 'import os, sys
for what, fn in (("create", lambda: os.close(os.open(sys.argv[1] + "/new", os.O_WRONLY | os.O_CREAT, 0o644))),
                 ("fsync", lambda: os.fsync(os.open(sys.argv[1] + "/synced", os.O_RDONLY)))):
    try:
        fn()
        print(what, "OK")
    except OSError as e:
        print(what, os.strerror(e.errno))' "$MNT")
tfs_eq "error state over io_uring: create, fsync" "create Read-only file system
fsync Input/output error" "$out"
cmp -s "$MNT/synced" "$WORK/src1" || tfs_fail "error state over io_uring: synced reads back wrong"
t0=$(date +%s%N)
fusermount3 -u "$MNT" || tfs_fail "error state: fusermount3 -u failed"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=""
[ "$rc" != 0 ] || tfs_fail "error state over io_uring: expected the daemon to exit non-zero, got 0"
grep -q "closed in the error state" "$WORK/daemon.log" ||
	tfs_fail "error state over io_uring: no word of it at unmount: $(cat "$WORK/daemon.log")"
tfs_log "error state over io_uring: the daemon exited $rc, $(ms_since "$t0") ms after unmount"
tfs_pass
