#!/bin/bash
# Description: /.tensorfs holds stats, stats.json, metrics (Prometheus) and config, read with cat; counters move by exactly what applications read and write; the files report the size of their content (cp, Python's read(), wc -c work); the directory is read-only (EROFS, EEXIST), unlisted, and takes no space
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 dd getfattr setfattr
MiB=1048576
tfs_setup 1G -o max_in_cpu=64MiB
S="$MNT/.tensorfs"

# stat NAME: a counter's value from .tensorfs/stats
stat_of() { awk -v k="$1" '$1 == k {print $2}' "$S/stats"; }

# ----- the files -----
[ -d "$S" ] || tfs_fail ".tensorfs is not a directory at the mount root"
tfs_eq "files in .tensorfs" "config metrics stats stats.json" "$(ls "$S" | tr '\n' ' ' | sed 's/ $//')"
find "$MNT" -mindepth 1 -maxdepth 1 -name .tensorfs | grep -q . && tfs_fail "readdir of the root lists .tensorfs"

python3 - "$S" "$IMG" <<'PY' || tfs_fail "the stats files do not agree with each other or their formats"
import json, re, sys
d = sys.argv[1]
text = {}
for line in open(f"{d}/stats"):
    name, value = line.split()
    text[name] = int(value)
js = json.load(open(f"{d}/stats.json"))
# each member's object flattened into the text's memberI_NAME
devices = []
for i, m in enumerate(js.pop("members")):
    devices.append(m.pop("device"))
    js.update({f"member{i + 1}_{k}": v for k, v in m.items()})
js["members"] = len(devices)
if devices != [sys.argv[2]]:
    sys.exit(f"stats.json: members {devices}, mounted from {sys.argv[2]}")
if sorted(js) != sorted(text):
    sys.exit("stats and stats.json name different counters")
for name, v in js.items():
    if not isinstance(v, int) or v < 0:
        sys.exit(f"stats.json: {name} is {v!r}")
seen, helped, typed = set(), set(), set()
samples = 0
for line in open(f"{d}/metrics"):
    line = line.rstrip("\n")
    m = re.fullmatch(r"# HELP (tensorfs_[a-z0-9_]+) \S.*", line)
    if m:
        helped.add(m.group(1)); continue
    m = re.fullmatch(r"# TYPE (tensorfs_[a-z0-9_]+) (counter|gauge)", line)
    if m:
        typed.add(m.group(1)); continue
    m = re.fullmatch(r'(tensorfs_[a-z0-9_]+)(\{member="([0-9]+)",device="([^"]*)"\})? ([0-9]+(\.[0-9]+)?)', line)
    if not m:
        sys.exit(f"metrics: not Prometheus text format: {line!r}")
    if m.group(2) and m.group(4) != sys.argv[2]:
        sys.exit(f"metrics: device {m.group(4)!r}, mounted from {sys.argv[2]}")
    seen.add(m.group(1))
    samples += 1
# the Prometheus names, by the rules of lib/include/stats.h
def prom(n):
    counter = n in typed_counter
    if n.endswith("_ns"):
        return n[:-3] + "_seconds" + ("_total" if counter else "")
    if not counter and n.endswith("_total"):
        return n[:-6] + "_chunks"
    if not counter and n.endswith("_busy"):
        return n + "_chunks"
    return n + ("_total" if counter else "")
typed_counter = set()
for line in open(f"{d}/metrics"):
    m = re.fullmatch(r"# TYPE tensorfs_([a-z0-9_]+) counter\n", line)
    if m:
        typed_counter.add(re.sub(r"(_seconds)?_total$", "", m.group(1)))
# a member's counters are one metric, labelled with the member
names = {re.sub(r"^member[0-9]+_", "member_", n) for n in text}
typed_counter = {n for n in names if re.sub(r"_ns$", "", n) in typed_counter}
want = {"tensorfs_" + prom(n) for n in names}
if seen != want or helped != want or typed != want or samples != len(text):
    sys.exit(f"metrics: samples, HELP and TYPE lines do not cover every counter once: {sorted(seen ^ want)}")
for n in ("pool_total", "cache_limit_bytes", "fs_bytes"):
    if text[n] <= 0:
        sys.exit(f"{n} is {text[n]}")
if text["cache_limit_bytes"] != 64 << 20:
    sys.exit(f"cache_limit_bytes {text['cache_limit_bytes']}, mounted with 64 MiB")
PY
diff <("$TENSORFS" -o max_in_cpu=64MiB --print-config) "$S/config" >&2 ||
	tfs_fail ".tensorfs/config is not the effective configuration"

# ----- counters move by what applications do -----
w0=$(stat_of app_write_bytes)
d0=$(stat_of dev_write_bytes)
"$TFS_SYS" pattern $((6 * MiB + 12345)) 3 | dd of="$MNT/f" bs=1M iflag=fullblock conv=fsync status=none ||
	tfs_fail "cannot write f"
tfs_eq "app_write_bytes after writing 6 MiB + 12345 bytes" $((w0 + 6 * MiB + 12345)) "$(stat_of app_write_bytes)"
d1=$(stat_of dev_write_bytes)
[ $((d1 - d0)) -ge $((6 * MiB + 12345)) ] ||
	tfs_fail "dev_write_bytes grew by $((d1 - d0)) after an fsync'd write of $((6 * MiB + 12345))"
r0=$(stat_of app_read_bytes)
h0=$(stat_of cache_hits)
dd if="$MNT/f" of=/dev/null bs=1M iflag=direct status=none || tfs_fail "cannot read f"
tfs_eq "app_read_bytes after an O_DIRECT read of f" $((r0 + 6 * MiB + 12345)) "$(stat_of app_read_bytes)"
[ "$(stat_of cache_hits)" -gt "$h0" ] || tfs_fail "reading a file just written found nothing in the cache"
tfs_eq "dirty bytes after fsync" 0 "$(stat_of dirty_bytes)"

# ----- read-only, and no space -----
expect_fail() {	# WHAT ERRNO-TEXT COMMAND...
	local what=$1 want=$2
	shift 2
	"$@" 2>"$WORK/err" && tfs_fail "$what: succeeded"
	grep -q "$want" "$WORK/err" || tfs_fail "$what: expected '$want', got '$(cat "$WORK/err")'"
}
expect_fail "write to stats" "Read-only file system" sh -c "echo x > '$S/stats'"
expect_fail "create in .tensorfs" "Read-only file system" touch "$S/new"
expect_fail "remove stats" "Read-only file system" rm -f "$S/stats"
expect_fail "mkdir .tensorfs" "File exists" mkdir "$MNT/.tensorfs"
expect_fail "rmdir .tensorfs" "Read-only file system" rmdir "$S"
expect_fail "rename into .tensorfs" "Read-only file system" mv "$MNT/f" "$S/f"
expect_fail "rename .tensorfs" "Read-only file system" mv "$S" "$MNT/other"
expect_fail "setfattr on stats" "Read-only file system" setfattr -n user.x -v 1 "$S/stats"
getfattr -d "$S/stats" >/dev/null 2>&1 || tfs_fail "getfattr on stats failed"

# ----- sizes: st_size is the length of the content, so tools that trust
# it read it whole: cp, Python's read(), wc -c, and fstat of an open file
for name in stats stats.json metrics config; do
	size=$(stat -c %s "$S/$name")
	[ "$size" -gt 0 ] || tfs_fail "$name: st_size is $size"
	cp "$S/$name" "$WORK/$name.copy" || tfs_fail "cp $name failed"
	[ -s "$WORK/$name.copy" ] || tfs_fail "cp of $name copied nothing"
	python3 - "$S/$name" <<'PY' || tfs_fail "$name: read through Python does not match st_size"
import os, sys
p = sys.argv[1]
with open(p, "rb") as f:
    st = os.fstat(f.fileno())
    data = f.read()
    if len(data) != st.st_size or not data:
        sys.exit(f"{p}: read {len(data)} bytes, fstat says {st.st_size}")
# os.read of exactly st_size bytes, as tools that trust it do: all of it
fd = os.open(p, os.O_RDONLY)
n = os.fstat(fd).st_size
data = os.read(fd, n)
rest = os.read(fd, 65536)
os.close(fd)
if len(data) != n or rest:
    sys.exit(f"{p}: {len(data)} bytes in st_size {n}, {len(rest)} past it")
PY
	# wc -c takes st_size for a regular file
	n=$(wc -c <"$S/$name")
	[ "$n" -gt 0 ] || tfs_fail "wc -c $name: $n"
done
tfs_eq "config copied by cp" "$(cat "$S/config")" "$(cat "$WORK/config.copy")"

rm -f "$MNT/f"
tfs_umount
tfs_mount -o max_in_cpu=64MiB
used1=$(df -P "$MNT" | awk 'NR == 2 {print $3}')
cat "$S"/* >/dev/null
tfs_eq "space used after reading every .tensorfs file" "$used1" "$(df -P "$MNT" | awk 'NR == 2 {print $3}')"
tfs_umount
tfs_fsck_clean
tfs_pass
