#!/bin/bash
# Description: tools/bench.sh --quick (tiny files, one repeat; --prime) runs every group, a to g with h's CPU per GB and i's VmHWM, on the raw file, ext4 on a loop device and tensorfs, and writes the table (GB/s per daemon core too), results.json and ratios.png; a mount that fails half-way, and Ctrl-C during the clients (and of a --tmpfs run, in /dev/shm), leave no mount, loop device or image behind; bad arguments are refused. It asserts no speed: the benchmark is a tool.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
set -e

[ "$(id -u)" = 0 ] || tfs_skip "bench.sh needs root (drop_caches, a loop device, an ext4 mount)"
tfs_need fio losetup mkfs.ext4 fusermount3 timeout
tfs_need_numpy
tfs_need_torch
[ -e /dev/fuse ] || tfs_skip "no /dev/fuse"

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=$TOP/tools/bench.sh
[ -x "$BENCH" ] || tfs_fail "no executable '$BENCH'"
# on a disk: the benchmark needs O_DIRECT, which tmpfs (a common /tmp)
# refuses before Linux 6.6
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tfs-$TEST_NAME.XXXXXX")
[ -d "$WORK" ] || tfs_fail "mktemp -d failed"
dd if=/dev/zero of="$WORK/odirect" bs=4096 count=1 oflag=direct status=none 2>/dev/null ||
	tfs_skip "no O_DIRECT in '$WORK' (tmpfs?); set TMPDIR to a directory on a disk"
rm -f "$WORK/odirect"
OUT=$WORK/out

# leftovers WHAT: fail if a mount, a loop device or a temporary
# directory of bench.sh is left under $WORK
leftovers() {
	local _m
	_m=$(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts)
	[ -z "$_m" ] || tfs_fail "$1: still mounted: $_m"
	_m=$(losetup -a 2>/dev/null | grep -F "$WORK/" || true)
	[ -z "$_m" ] || tfs_fail "$1: loop device left: $_m"
	_m=$(find "$WORK" -maxdepth 1 -name 'tensorfs-bench.*' | head -n 1)
	[ -z "$_m" ] || tfs_fail "$1: temporary directory left: $_m"
}

# ----- usage errors: exit 2, nothing made -----
set +e
"$BENCH" --only a,z >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status of --only a,z" 2 "$rc"
grep -q "'z'" "$WORK/err" || tfs_fail "--only a,z: the error does not name 'z': $(cat "$WORK/err")"
set +e
"$BENCH" --prime 3x >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status of --prime 3x" 2 "$rc"
grep -q -- "--prime '3x'" "$WORK/err" || tfs_fail "--prime 3x: the error does not name it: $(cat "$WORK/err")"
set +e
"$BENCH" --transports dev,fuse >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status of --transports dev,fuse" 2 "$rc"
grep -q "'fuse'" "$WORK/err" || tfs_fail "--transports dev,fuse: the error does not name 'fuse': $(cat "$WORK/err")"
set +e
"$BENCH" --tmpfs --dir "$WORK" >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status of --tmpfs with --dir" 2 "$rc"
"$BENCH" --help | grep -q 'CPU ACCOUNTING' || tfs_fail "--help has no CPU ACCOUNTING section"

# ----- a mount that fails after ext4 is up: everything undone -----
set +e
"$BENCH" --quick --bin "$TFS_BIN" --out "$WORK/bad" --dir "$WORK" \
	-o no_such_key=1 >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status with a refused tensorfs option" 1 "$rc"
grep -q 'tensorfs exited before mounting' "$WORK/err" ||
	tfs_fail "no clear error for a refused mount: $(cat "$WORK/err")"
leftovers "after a failed mount"

# ----- Ctrl-C in the middle of the clients (e): everything undone -----
# (timeout sends SIGINT to bench.sh alone, as a terminal's Ctrl-C would
# reach it and its children alike; wherever it lands, nothing may stay,
# --prime's tmpfs included; 50 repeats keep the run longer than the
# timeout on a fast machine)
set +e
timeout -s INT 4 "$BENCH" --quick --only e --repeat 50 --prime 8M --bin "$TFS_BIN" --out "$WORK/int" \
	--dir "$WORK" >/dev/null 2>"$WORK/err"
rc=$?
set -e
tfs_eq "exit status of an interrupted run (timeout's)" 124 "$rc"
grep -q 'interrupted' "$WORK/err" || tfs_fail "an interrupted run does not say so: $(cat "$WORK/err")"
leftovers "after Ctrl-C"

# ----- Ctrl-C of a --tmpfs run: nothing left in /dev/shm either -----
# (tmpfs takes O_DIRECT from Linux 6.6; before, --tmpfs refuses to run;
# a machine short of memory refuses it too, saying "--tmpfs:")
if dd if=/dev/zero of=/dev/shm/tfs-bench-probe.$$ bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	rm -f /dev/shm/tfs-bench-probe.$$
	shm_before=$(find /dev/shm -maxdepth 1 -name 'tensorfs-bench.*' | sort)
	set +e
	timeout -s INT 4 "$BENCH" --quick --only a --repeat 50 --tmpfs --bin "$TFS_BIN" --out "$WORK/shm" \
		>/dev/null 2>"$WORK/err"
	rc=$?
	set -e
	case "$rc" in
	124) grep -q 'interrupted' "$WORK/err" || tfs_fail "an interrupted --tmpfs run does not say so: $(cat "$WORK/err")" ;;
	1) grep -q -- '--tmpfs:' "$WORK/err" || tfs_fail "--tmpfs failed: $(cat "$WORK/err")"
		tfs_log "--tmpfs refused here: $(grep -- '--tmpfs:' "$WORK/err")" ;;
	*) tfs_fail "exit status of an interrupted --tmpfs run: $rc: $(cat "$WORK/err")" ;;
	esac
	shm_after=$(find /dev/shm -maxdepth 1 -name 'tensorfs-bench.*' | sort)
	[ "$shm_after" = "$shm_before" ] || tfs_fail "--tmpfs left in /dev/shm: $shm_after"
	_m=$(awk 'index($2, "/dev/shm/tensorfs-bench.") == 1 { print $2 }' /proc/mounts)
	[ -z "$_m" ] || tfs_fail "--tmpfs: still mounted: $_m"
	_m=$(losetup -a 2>/dev/null | grep -F /dev/shm/tensorfs-bench. || true)
	[ -z "$_m" ] || tfs_fail "--tmpfs: loop device left: $_m"
fi

# ----- the smoke run (with --prime: a tmpfs used before each read) -----
t0=$SECONDS
set +e
"$BENCH" --quick --prime 8M --bin "$TFS_BIN" --testbin "$TFS_TESTBIN" --out "$OUT" \
	--dir "$WORK" >"$WORK/table" 2>"$WORK/err"
rc=$?
set -e
if [ "$rc" != 0 ]; then
	cat "$WORK/err" >&2
	tfs_fail "bench.sh --quick exited $rc"
fi
tfs_log "bench.sh --quick took $((SECONDS - t0)) s"
leftovers "after the run"

for f in results.json table.txt ratios.dat; do
	[ -s "$OUT/$f" ] || tfs_fail "no $OUT/$f"
done
cmp -s "$WORK/table" "$OUT/table.txt" || tfs_fail "the table printed differs from table.txt"
if command -v gnuplot >/dev/null 2>&1; then
	[ "$(head -c 8 "$OUT/ratios.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		tfs_fail "ratios.png is not a PNG"
fi
# the table: a row of every group, the memory line, the load
for g in a b c d e f g; do
	grep -q "^$g  " "$WORK/table" || tfs_fail "no row of group $g in the table"
done
grep -q '^i  daemon VmHWM: [0-9]* kB' "$WORK/table" || tfs_fail "no VmHWM line in the table"
head -n 1 "$WORK/table" | grep -q 'GB/s/core' || tfs_fail "no GB/s/core column in the table"
grep -q '^load_start: ' "$WORK/table" || tfs_fail "no load average in the table"
grep -q '^sizes: .*--prime 8 MiB before each read' "$WORK/table" ||
	tfs_fail "the table does not say --prime was used: $(grep '^sizes' "$WORK/table")"

# the JSON: every group, every target with a positive figure, CPU per GB
# for a, b, e, the VmHWM under its bound, the load at start and end
"$PY" - "$OUT/results.json" <<'PY' || tfs_fail "results.json is incomplete (above)"
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
groups = {t["group"] for t in r["tests"]}
for g in "abcdefg":
    if g not in groups:
        bad.append("no test of group %s" % g)
for t in r["tests"]:
    want = ("tfs",) if t["id"].endswith("-warm") else ("raw", "ext4", "tfs")
    for tg in want:
        d = t["targets"].get(tg)
        if not d or not d.get("runs") or not d.get("median") or d["median"] <= 0:
            bad.append("%s: no figure on %s" % (t["id"], tg))
            continue
        # 0 is a figure: --quick's tiny files can take less than a tick
        if t["group"] in "abe" and d.get("cpu_s_per_gb") is None:
            bad.append("%s: no CPU per GB on %s" % (t["id"], tg))
    if t["x_ext4"] is None or t["x_raw"] is None:
        bad.append("%s: no ratio" % t["id"])
    if "gb_s_per_daemon_core" not in t["targets"]["tfs"]:
        bad.append("%s: no GB/s per daemon core" % t["id"])
    if t["group"] in "abe" and t["targets"]["tfs"]["runs"][0].get("daemon_cpu_s") is None:
        bad.append("%s: no daemon CPU time" % t["id"])
m = r["memory"]
if not m["vmhwm_kb_max"] or not m["bound_kb"] or not m["within_bound"]:
    bad.append("memory: %s" % m)
for k in ("load_start", "load_end", "commit", "binaries", "date"):
    if not r["meta"].get(k):
        bad.append("meta has no %s" % k)
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
tfs_pass
