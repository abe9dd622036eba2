#!/bin/bash
# Description: tensorfs-stat prints a header and one line per interval that shows a write moving through the mount (application and device MB/s), --json gives the same as JSON lines, --members a line per device of a set of three, each showing its share of the writes, with its path, and a path that is not a tensorfs mount or a bad interval is refused with exit 1 or 2
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 dd
STAT="$TFS_BIN/tensorfs-stat"
tfs_setup 2G -o max_in_cpu=64MiB -o buffer_count=4 -o buffer_size=1MiB

# 3 lines, half a second apart, while 400 MiB are written with O_DIRECT
(sleep 0.2; dd if=/dev/zero of="$MNT/x" bs=1M count=400 oflag=direct status=none) &
writer=$!
"$STAT" "$MNT" 0.5 3 >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; tfs_fail "tensorfs-stat exited $?"; }
wait "$writer" || tfs_fail "the writer failed"
head -2 "$WORK/out" | grep -q "hit%" || tfs_fail "no header: $(head -2 "$WORK/out")"
tfs_eq "lines after the header" 3 "$(tail -n +3 "$WORK/out" | wc -l)"
# some line shows the writes (app write MB/s, column 2)
awk 'NR > 2 && $2 > 0 {found = 1} END {exit !found}' "$WORK/out" ||
	tfs_fail "no line shows application writes: $(cat "$WORK/out")"

"$STAT" --json "$MNT" 0.2 2 >"$WORK/json" || tfs_fail "tensorfs-stat --json failed"
python3 - "$WORK/json" <<'PY' || tfs_fail "--json lines are not JSON with the fields"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 2:
    sys.exit(f"{len(lines)} lines, expected 2")
for l in lines:
    d = json.loads(l)
    for k in ("app_read_mb_s", "app_write_mb_s", "dev_read_mb_s", "dev_write_mb_s",
              "cache_hit_pct", "cache_bytes", "cache_limit_bytes", "dirty_bytes",
              "pool_busy", "pool_total", "inflight", "pool_waits"):
        if k not in d:
            sys.exit(f"no {k} in {l}")
    if d["cache_limit_bytes"] != 64 << 20:
        sys.exit(f"cache_limit_bytes {d['cache_limit_bytes']}")
PY

# while a writer keeps the 4 MiB pool full: the cache column (clean data)
# never passes max_in_cpu, whatever is dirty beside it, and an interval
# whose writes waited shows the pool in use on average, even if it had
# drained by the interval's end
(dd if=/dev/zero of="$MNT/z" bs=1M count=1200 oflag=direct status=none) &
writer=$!
"$STAT" --json "$MNT" 0.2 6 >"$WORK/json" || tfs_fail "tensorfs-stat --json failed"
wait "$writer" || tfs_fail "the writer failed"
python3 - "$WORK/json" <<'PY' || tfs_fail "tensorfs-stat during writes: $(cat "$WORK/json")"
import json, sys
waited = 0
for l in open(sys.argv[1]).read().splitlines():
    d = json.loads(l)
    if d["cache_clean_bytes"] > d["cache_limit_bytes"]:
        sys.exit(f"clean cache {d['cache_clean_bytes']} over its limit {d['cache_limit_bytes']}")
    if not 0 <= d["pool_busy_avg"] <= d["pool_total"]:
        sys.exit(f"pool_busy_avg {d['pool_busy_avg']} outside 0..{d['pool_total']}")
    if d["pool_waits"] > 0:
        waited += 1
        if d["pool_busy_avg"] <= 0:
            sys.exit(f"writes waited for the pool, but its average use is 0: {l}")
if not waited:
    sys.exit("no interval had writes waiting for the 4 MiB pool")
PY

# errors
"$STAT" "$WORK" 2>"$WORK/err"
tfs_eq "exit status for a directory that is not a mount" 1 $?
grep -q "not a tensorfs mount" "$WORK/err" || tfs_fail "message: $(cat "$WORK/err")"
"$STAT" "$MNT" abc 2>/dev/null
tfs_eq "exit status for a bad interval" 2 $?
"$STAT" "$MNT" 0 2>"$WORK/err"
tfs_eq "exit status for interval 0" 2 $?
tfs_expect_words "interval 0" "$WORK/err" "'0'" "above 0"
# any path on the mount finds its counters, as df finds a file system
mkdir -p "$MNT/sub/dir" && echo x >"$MNT/sub/dir/f" || tfs_fail "cannot make files on the mount"
for p in "$MNT/sub/dir" "$MNT/sub/dir/f" "$MNT/sub/../sub"; do
	"$STAT" --json "$p" 0.1 1 >"$WORK/out" 2>"$WORK/err" ||
		tfs_fail "tensorfs-stat $p: expected exit 0, got $? ($(cat "$WORK/err"))"
	grep -Eq '"pool_total": [1-9]' "$WORK/out" || tfs_fail "tensorfs-stat $p: no JSON line: $(cat "$WORK/out")"
done
# a directory of a user's named .tensorfs deeper in the tree is not the
# mount's: the counters are the root's
mkdir -p "$MNT/sub/.tensorfs" && echo "app_write_bytes 1" >"$MNT/sub/.tensorfs/stats" ||
	tfs_fail "cannot make a .tensorfs directory under $MNT/sub"
"$STAT" --json "$MNT/sub/dir" 0.1 1 >"$WORK/out" 2>"$WORK/err" ||
	tfs_fail "tensorfs-stat under a user's .tensorfs: expected exit 0, got $? ($(cat "$WORK/err"))"
grep -Eq '"pool_total": [1-9]' "$WORK/out" ||
	tfs_fail "tensorfs-stat under a user's .tensorfs: expected the mount's counters, got: $(cat "$WORK/out")"
# ... but never leaves the file system it starts on
"$STAT" "$WORK" 0.1 1 >/dev/null 2>&1
tfs_eq "exit status for a directory beside the mount" 1 $?
"$STAT" 2>/dev/null
tfs_eq "exit status without MOUNTPOINT" 2 $?
# the rest of the convention (tensorfs-stat(1) EXIT STATUS): usage 2
"$STAT" --bogus "$MNT" 2>/dev/null
tfs_eq "exit status for an unknown option" 2 $?
"$STAT" "$MNT" 1 2 3 2>/dev/null
tfs_eq "exit status for too many operands" 2 $?
"$STAT" "$MNT" 0.1 many 2>/dev/null
tfs_eq "exit status for a bad COUNT" 2 $?
"$STAT" --help | grep -q "Exit status" || tfs_fail "--help has no exit status section"
tfs_umount

# ----- --members: a line per device of a set -----
tfs_mkset 3 256M
tfs_mount
(sleep 0.2; dd if=/dev/zero of="$MNT/y" bs=1M count=300 oflag=direct status=none) &
writer=$!
"$STAT" --members "$MNT" 0.5 2 >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; tfs_fail "tensorfs-stat --members exited $?"; }
wait "$writer" || tfs_fail "the writer failed"
tfs_eq "lines of tensorfs-stat --members, 2 intervals of a header and 3 members" 8 "$(grep -c . "$WORK/out")"
for m in 1 2 3; do
	# member number (from 1), 8 numbers, the device
	grep -Eq "^ +$m .* $WORK/m$m.img\$" "$WORK/out" ||
		tfs_fail "tensorfs-stat --members: no line for member $m, $WORK/m$m.img: $(cat "$WORK/out")"
	# the striped writes reach every member (write MB/s, column 3)
	awk -v m=$m '$1 == m && $3 > 0 {found = 1} END {exit !found}' "$WORK/out" ||
		tfs_fail "tensorfs-stat --members: member $m shows no writes: $(cat "$WORK/out")"
done
"$STAT" --json --members "$MNT" 0.2 1 >"$WORK/json" || tfs_fail "tensorfs-stat --json --members failed"
python3 - "$WORK/json" "$IMG" <<'PY' || tfs_fail "--json --members: not JSON with every member: $(cat "$WORK/json")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
devs = [m["device"] for m in d["members"]]
if devs != sys.argv[2].split(":"):
    sys.exit(f"devices {devs}")
for m in d["members"]:
    for k in ("read_mb_s", "write_mb_s", "reads_s", "writes_s", "inflight",
              "latency_ms", "errors", "free_bytes", "size_bytes"):
        if k not in m:
            sys.exit(f"no {k} in {m}")
    if m["size_bytes"] != 256 << 20 or not 0 < m["free_bytes"] < m["size_bytes"]:
        sys.exit(f"sizes {m}")
PY
tfs_umount
tfs_pass
