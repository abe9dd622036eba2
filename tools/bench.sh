#!/bin/bash
# bench.sh: tensorfs against its own backing disk, in one run.
#
# Usage: tools/bench.sh [OPTIONS]
#
# Runs fio (ioengine=io_uring, bs=1M, iodepth=8, numjobs=1, one file of
# SIZE, sequential write and then read of it) on five targets that all
# live in one new directory, so on one disk:
#
#   a) raw    a plain file in that directory, on the host file system
#             that holds the tensorfs image (the backing image file
#             itself), O_DIRECT (direct=1);
#   b) ext4   a file on a loop-mounted ext4 image in that directory,
#             O_DIRECT.  Needs root; skipped with a message otherwise;
#   c) tfs    a file on tensorfs mounted from an image in that
#             directory: O_DIRECT write on a fresh mount, then an
#             O_DIRECT read after a remount (tensorfs's RAM cache empty,
#             so the data comes from the device);
#   d) tfs    the same O_DIRECT read again: the file fits in max_in_cpu,
#             so this is the re-read from tensorfs's RAM cache;
#   e) tfs    buffered (direct=0) write and read of a second file, for
#             information.
#
# Every write job ends with an fsync (end_fsync=1), counted in its time,
# so written data has reached the disk.  As root, "sync" and
# "echo 3 > /proc/sys/vm/drop_caches" run before every read job but d)
# (which is meant to find tensorfs's cache).
# Not as root, caches are not dropped, and the output says so.
#
# It prints a table: each test, MB/s (10^6 bytes/s, from fio's bw_bytes),
# the ratio to the raw backing and to ext4 in the same direction (write
# to write, read to read); then the date, kernel, CPUs, fio version, the
# backing device and the exact fio command lines.  Progress messages go
# to stderr.  Everything it made (mounts, loop device, daemon, images) is
# removed on every exit path, Ctrl-C included.  The defaults (1G, three
# runs) take about a minute and a half on 2 cores.
#
# Options:
#   --size SIZE    size of each test file (default 1G).  Suffixes K, M, G,
#                  T (powers of 1024; also KiB..TiB) or KB..TB (powers of
#                  1000); at least 16M.  The disk needs about 2.5 x SIZE
#                  free.
#   --dir DIR      make the temporary directory holding every image and
#                  file under DIR (default /var/tmp).  DIR chooses the
#                  disk under test.
#   --bin DIR      directory holding tensorfs and mkfs.tensorfs (default:
#                  $TFS_BIN, else build/bin of this source tree, else PATH)
#   -o KEY=VALUE   a tensorfs setting for the mount (tensorfs -o), e.g.
#                  -o max_threads=8; may be repeated
#   --repeat N     run the whole sequence a) to e) N times (default 3)
#                  and report each test's median, with every run's
#                  figure beside it: a virtual disk's speed can swing by
#                  half from one run to the next
#   --json         print a machine-readable summary (JSON) on stdout
#                  instead of the table; the table then goes to stderr
#   --no-ext4      skip b)
#   --loop-buffered  mount the ext4 image with plain "mount -o loop"
#                  (the loop device then reads and writes the image
#                  through the host page cache).  By default the loop
#                  device is attached with "losetup --direct-io=on", so
#                  that ext4, like tensorfs, reaches its image with
#                  O_DIRECT.
#   -h, --help     this text
#
# Needs fio, python3 (to read fio's JSON), fusermount3, and for b)
# mkfs.ext4, losetup and mount; tools/install-deps.sh installs them.
#
# Exit status: 0 when every test ran (b skipped counts as ran), 1 on a
# failure (a tool missing, a mount or an fio job failed, not enough
# space), 2 on a usage error.
#
# Example:
#   sudo tools/bench.sh --bin build/bin
#   sudo tools/bench.sh --size 4G --dir /mnt/nvme --json > bench.json

set -u

top=$(cd "$(dirname "$0")/.." && pwd)
prog=bench.sh

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
}
usage_error() {
	printf '%s: %s\nTry "%s --help".\n' "$prog" "$1" "$0" >&2
	exit 2
}
log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ===== arguments =====

SIZE_ARG=1G
PARENT=/var/tmp
BIN=""
JSON=0
REPEAT=3
DO_EXT4=1
LOOP_DIO=1
TFS_OPTS=()

while [ $# -gt 0 ]; do
	case "$1" in
	--size) [ $# -ge 2 ] || usage_error "--size needs a value"
		SIZE_ARG=$2; shift 2 ;;
	--size=*) SIZE_ARG=${1#--size=}; shift ;;
	--dir) [ $# -ge 2 ] || usage_error "--dir needs a value"
		PARENT=$2; shift 2 ;;
	--dir=*) PARENT=${1#--dir=}; shift ;;
	--bin) [ $# -ge 2 ] || usage_error "--bin needs a value"
		BIN=$2; shift 2 ;;
	--bin=*) BIN=${1#--bin=}; shift ;;
	-o) [ $# -ge 2 ] || usage_error "-o needs KEY=VALUE"
		case "$2" in *=*) ;; *) usage_error "-o needs KEY=VALUE, not '$2'" ;; esac
		TFS_OPTS+=(-o "$2"); shift 2 ;;
	--json) JSON=1; shift ;;
	--repeat) [ $# -ge 2 ] || usage_error "--repeat needs a number"
		REPEAT=$2; shift 2 ;;
	--repeat=*) REPEAT=${1#--repeat=}; shift ;;
	--no-ext4) DO_EXT4=0; shift ;;
	--loop-buffered) LOOP_DIO=0; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage_error "unknown argument '$1'" ;;
	esac
done

# parse_size TEXT: print the size in bytes (mkfs.tensorfs's syntax)
parse_size() {
	local num unit mult
	num=$(printf '%s' "$1" | sed -n 's/^\([0-9][0-9]*\).*$/\1/p')
	[ -n "$num" ] || return 1
	unit=${1#"$num"}
	case "$unit" in
	""|B) mult=1 ;;
	K|k|KiB) mult=1024 ;;
	M|m|MiB) mult=$((1024 ** 2)) ;;
	G|g|GiB) mult=$((1024 ** 3)) ;;
	T|t|TiB) mult=$((1024 ** 4)) ;;
	KB|kB) mult=1000 ;;
	MB) mult=$((1000 ** 2)) ;;
	GB) mult=$((1000 ** 3)) ;;
	TB) mult=$((1000 ** 4)) ;;
	*) return 1 ;;
	esac
	[ ${#num} -le 15 ] || return 1
	echo $((num * mult))
}

SIZE=$(parse_size "$SIZE_ARG") || usage_error "invalid --size '$SIZE_ARG'; give bytes or a size like 1G"
MIB=$((1024 * 1024))
[ "$SIZE" -ge $((16 * MIB)) ] || usage_error "--size must be at least 16M"
# whole 1 MiB blocks, as every job uses bs=1M
SIZE=$((SIZE / MIB * MIB))
[ -d "$PARENT" ] || usage_error "--dir '$PARENT' is not a directory"

# ===== tools =====

if [ -z "$BIN" ]; then
	if [ -n "${TFS_BIN:-}" ]; then
		BIN=$TFS_BIN
	elif [ -x "$top/build/bin/tensorfs" ]; then
		BIN=$top/build/bin
	elif command -v tensorfs >/dev/null 2>&1; then
		BIN=$(dirname "$(command -v tensorfs)")
	fi
fi
TENSORFS=$BIN/tensorfs
MKFS=$BIN/mkfs.tensorfs
if [ -z "$BIN" ] || [ ! -x "$TENSORFS" ] || [ ! -x "$MKFS" ]; then
	die "tensorfs and mkfs.tensorfs not found${BIN:+ in $BIN}; build them (cmake -S . -B build && cmake --build build) or pass --bin DIR"
fi
for c in fio python3 fusermount3 mountpoint; do
	command -v "$c" >/dev/null 2>&1 || die "needs $c; run tools/install-deps.sh"
done
python3 -c 'import json' 2>/dev/null || die "python3 cannot import json"
[ -e /dev/fuse ] || die "no /dev/fuse"

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1
EXT4_SKIP=""
if [ "$DO_EXT4" = 0 ]; then
	EXT4_SKIP="skipped (--no-ext4)"
elif [ "$IS_ROOT" = 0 ]; then
	EXT4_SKIP="skipped: mounting an ext4 image needs root"
else
	for c in mkfs.ext4 losetup mount umount; do
		command -v "$c" >/dev/null 2>&1 ||
			{ EXT4_SKIP="skipped: $c not found"; break; }
	done
fi
[ -n "$EXT4_SKIP" ] && log "ext4: $EXT4_SKIP"

# ===== clean-up, on every exit path =====

WORK=""
TFS_MNT=""
TFS_PID=""
EXT4_MNT=""
LOOPDEV=""

stop_tensorfs() {
	if [ -n "$TFS_MNT" ] && mountpoint -q "$TFS_MNT" 2>/dev/null; then
		fusermount3 -u "$TFS_MNT" 2>/dev/null ||
			umount -l "$TFS_MNT" 2>/dev/null
	fi
	if [ -n "$TFS_PID" ]; then
		# unmounting makes the daemon write everything and exit
		local i
		for i in $(seq 300); do
			kill -0 "$TFS_PID" 2>/dev/null || break
			[ "$i" = 300 ] && { kill -TERM "$TFS_PID" 2>/dev/null; sleep 1; kill -KILL "$TFS_PID" 2>/dev/null; }
			sleep 0.1
		done
		wait "$TFS_PID" 2>/dev/null
	fi
	TFS_PID=""
	TFS_MNT=""
}

stop_ext4() {
	if [ -n "$EXT4_MNT" ] && mountpoint -q "$EXT4_MNT" 2>/dev/null; then
		umount "$EXT4_MNT" 2>/dev/null || umount -l "$EXT4_MNT" 2>/dev/null
	fi
	EXT4_MNT=""
	if [ -n "$LOOPDEV" ]; then
		losetup -d "$LOOPDEV" 2>/dev/null
		LOOPDEV=""
	fi
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop_tensorfs
	stop_ext4
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		# never follow into a mount that could not be unmounted
		rm -rf --one-file-system "$WORK" 2>/dev/null ||
			log "warning: could not remove all of $WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM HUP

WORK=$(mktemp -d "$PARENT/tensorfs-bench.XXXXXX") || die "cannot make a directory under '$PARENT'"
WORK=$(cd "$WORK" && pwd -P)

# free space: tensorfs holds two files at the end (c/d and e), plus slack
need_kib=$(( (SIZE * 5 / 2 + 256 * MIB) / 1024 ))
avail_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
if [ -z "$avail_kib" ] || [ "$avail_kib" -lt "$need_kib" ]; then
	die "$WORK has ${avail_kib:-?} KiB free; size $SIZE_ARG needs about $need_kib KiB"
fi

BACKING_DEV=$(findmnt -n -o SOURCE --target "$WORK" 2>/dev/null ||
	df -P "$WORK" | awk 'NR == 2 { print $1 }')
BACKING_FSTYPE=$(findmnt -n -o FSTYPE --target "$WORK" 2>/dev/null ||
	stat -f -c %T "$WORK" 2>/dev/null || echo unknown)

# ===== fio =====

FIO_COMMON=(--ioengine=io_uring --bs=1M --iodepth=8 --numjobs=1 --size="$SIZE")
MANIFEST=$WORK/manifest.tsv
: >"$MANIFEST"
DROPPED=1

drop_caches() {
	sync
	if [ "$IS_ROOT" = 1 ]; then
		echo 3 >/proc/sys/vm/drop_caches || die "cannot drop caches"
	else
		DROPPED=0
	fi
}

# record ID LABEL DIR [JSON] [COMMAND]: one line of the manifest
record() {
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" "${5:-}" >>"$MANIFEST"
}

# fio_job ID LABEL RW DIRECT FILE [EXTRA...]: run one fio job, keep its JSON
fio_job() {
	local id=$1 label=$2 rw=$3 direct=$4 file=$5 out cmd
	shift 5
	out=$WORK/$id.$REP.json
	local args=(fio --name="$id" --filename="$file" --rw="$rw"
		--direct="$direct" "${FIO_COMMON[@]}" "$@"
		--output-format=json --output="$out")
	[ "$rw" = write ] && args+=(--end_fsync=1)
	cmd=$(printf '%q ' "${args[@]}")
	cmd=${cmd% }
	log "$id: $label"
	"${args[@]}" >"$WORK/$id.$REP.log" 2>&1 || {
		cat "$WORK/$id.$REP.log" >&2
		die "fio failed in $id: $cmd"
	}
	record "$id" "$label" "$rw" "$out" "$cmd"
}

# write_read PREFIX NAME DIRECT FILE: sequential write, drop caches, read
write_read() {
	local mode=O_DIRECT
	[ "$3" = 0 ] && mode=buffered
	fio_job "$1-write" "$2 write $mode" write "$3" "$4"
	drop_caches
	fio_job "$1-read" "$2 read $mode" read "$3" "$4"
}

case "$REPEAT" in
''|*[!0-9]*|0) usage_error "--repeat needs a whole number of at least 1, not '$REPEAT'" ;;
esac
START=$(date +%s)

run_all() {
	# a) the host file system, next to the images
	log "a) raw backing file in $WORK ($BACKING_DEV, $BACKING_FSTYPE)"
	write_read raw "a) raw backing" 1 "$WORK/raw.dat"
	rm -f "$WORK/raw.dat"

	# b) ext4 on a loop device over an image file in the same directory
	EXT4_MODE=""
	if [ -z "$EXT4_SKIP" ]; then
		img=$WORK/ext4.img
		# room for the file, the journal and metadata
		truncate -s $((SIZE + SIZE / 4 + 128 * MIB)) "$img" || die "cannot make $img"
		mkfs.ext4 -q -F "$img" >"$WORK/mkfs.ext4.log" 2>&1 || {
			cat "$WORK/mkfs.ext4.log" >&2; die "mkfs.ext4 failed"; }
		mkdir -p "$WORK/ext4"
		if [ "$LOOP_DIO" = 1 ]; then
			LOOPDEV=$(losetup --find --show --direct-io=on "$img") ||
				die "losetup --direct-io=on failed; try --loop-buffered"
			EXT4_MNT=$WORK/ext4
			mount -t ext4 "$LOOPDEV" "$EXT4_MNT" || die "cannot mount $LOOPDEV"
		else
			EXT4_MNT=$WORK/ext4
			mount -o loop "$img" "$EXT4_MNT" || die "mount -o loop $img failed"
			LOOPDEV=""	# umount detaches it
		fi
		dev=$(findmnt -n -o SOURCE "$EXT4_MNT" 2>/dev/null)
		dio=$(cat "/sys/block/${dev#/dev/}/loop/dio" 2>/dev/null || echo '?')
		EXT4_MODE="loop device $dev, dio=$dio"
		log "b) ext4 on $EXT4_MODE"
		write_read ext4 "b) ext4" 1 "$EXT4_MNT/ext4.dat"
		stop_ext4
		rm -f "$img"
	else
		record ext4-write "b) ext4 write O_DIRECT" skip "" "$EXT4_SKIP"
		record ext4-read "b) ext4 read O_DIRECT" skip "" "$EXT4_SKIP"
	fi

	# c), d), e) tensorfs on an image file in the same directory
	TFS_IMG=$WORK/tensorfs.img
	rm -f "$TFS_IMG"
	"$MKFS" -q -s $((SIZE * 2 + SIZE / 4 + 256 * MIB)) "$TFS_IMG" >"$WORK/mkfs.log" 2>&1 || {
		cat "$WORK/mkfs.log" >&2; die "mkfs.tensorfs failed"; }
	mkdir -p "$WORK/tfs"
	rm -f "$WORK/tensorfs.log"
	TFS_CMD=$(printf '%q ' "$TENSORFS" -f "${TFS_OPTS[@]}" "$TFS_IMG" "$WORK/tfs")
	TFS_CMD=${TFS_CMD% }
	start_tensorfs() {
		"$TENSORFS" -f "${TFS_OPTS[@]}" "$TFS_IMG" "$WORK/tfs" >>"$WORK/tensorfs.log" 2>&1 &
		TFS_PID=$!
		TFS_MNT=$WORK/tfs
		for _ in $(seq 100); do
			mountpoint -q "$TFS_MNT" && break
			kill -0 "$TFS_PID" 2>/dev/null || {
				cat "$WORK/tensorfs.log" >&2; TFS_PID=""; die "tensorfs exited before mounting"; }
			sleep 0.1
		done
		mountpoint -q "$TFS_MNT" || die "tensorfs did not mount within 10 s"
	}
	start_tensorfs
	log "tensorfs mounted: $TFS_CMD"

	# c) O_DIRECT write on a fresh mount; the read after a remount, so it
	# comes from the device (tensorfs's RAM cache starts empty)
	fio_job tfs-write "c) tensorfs write O_DIRECT" write 1 "$TFS_MNT/direct.dat"
	stop_tensorfs
	drop_caches
	start_tensorfs
	fio_job tfs-read "c) tensorfs read O_DIRECT (cold)" read 1 "$TFS_MNT/direct.dat"

	# d) the same O_DIRECT read again: the file fits in max_in_cpu, so it comes
	# from tensorfs's RAM cache (O_DIRECT bypasses only the kernel's)
	fio_job tfs-reread "d) tensorfs re-read O_DIRECT (cached)" read 1 \
		"$TFS_MNT/direct.dat"

	write_read tfs-buf "e) tensorfs" 0 "$TFS_MNT/buffered.dat"

	stop_tensorfs
}

for REP in $(seq "$REPEAT"); do
	log "run $REP of $REPEAT"
	run_all
done
grep -i -E 'error|warn' "$WORK/tensorfs.log" >&2 || true
END=$(date +%s)

# ===== report =====

REV=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
export B_DATE B_KERNEL B_CPUS B_CPU_MODEL B_FIO B_REV B_DIR B_DEV B_FSTYPE \
	B_SIZE B_SIZE_ARG B_DROPPED B_EXT4_MODE B_TFS_CMD B_ELAPSED B_JSON B_IS_ROOT \
	B_REPEAT
B_DATE=$(date -u '+%Y-%m-%dT%H:%M:%SZ')
B_KERNEL=$(uname -srm)
B_CPUS=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
B_CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
B_FIO=$(fio --version 2>/dev/null)
B_REV=$REV
B_DIR=$WORK
B_DEV=$BACKING_DEV
B_FSTYPE=$BACKING_FSTYPE
B_SIZE=$SIZE
B_SIZE_ARG=$SIZE_ARG
B_DROPPED=$DROPPED
B_EXT4_MODE=${EXT4_MODE:-$EXT4_SKIP}
B_TFS_CMD=$TFS_CMD
B_ELAPSED=$((END - START))
B_JSON=$JSON
B_REPEAT=$REPEAT
B_IS_ROOT=$IS_ROOT

REPORT_PY=$WORK/report.py
cat >"$REPORT_PY" <<'PY'
import json, os, sys

env = os.environ
rows = []
for line in open(sys.argv[1]):
    tid, label, rw, path, cmd = line.rstrip("\n").split("\t")
    row = {"id": tid, "test": label, "rw": rw, "command": cmd or None}
    if rw == "skip":
        row.update(rw=tid.split("-")[-1], skipped=cmd, command=None,
                   mb_s=None, bw_bytes=None, runtime_ms=None)
    else:
        with open(path) as f:
            job = json.load(f)["jobs"][0]
        if job.get("error"):
            sys.exit("fio job %s reported error %s" % (tid, job["error"]))
        side = job[rw]
        row.update(skipped=None, bw_bytes=side["bw_bytes"],
                   mb_s=side["bw_bytes"] / 1e6, runtime_ms=side["runtime"],
                   io_bytes=side["io_bytes"])
    rows.append(row)

# one row per test: the median of its runs, every run kept
def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

grouped = {}
for r in rows:
    g = grouped.get(r["id"])
    if g is None:
        g = grouped[r["id"]] = dict(r, runs_mb_s=[])
    if r["bw_bytes"] is not None:
        g["runs_mb_s"].append(round(r["mb_s"]))
        g.setdefault("_bws", []).append(r["bw_bytes"])
rows = []
for g in grouped.values():
    if g.get("_bws"):
        g["bw_bytes"] = median(g.pop("_bws"))
        g["mb_s"] = g["bw_bytes"] / 1e6
        g.pop("runtime_ms", None)
        g.pop("io_bytes", None)
    rows.append(g)

def bw(tid):
    for r in rows:
        if r["id"] == tid:
            return r["bw_bytes"]
    return None

for r in rows:
    for ref in ("raw", "ext4"):
        base = bw("%s-%s" % (ref, r["rw"]))
        r["ratio_" + ref] = (r["bw_bytes"] / base
                             if base and r["bw_bytes"] is not None else None)

meta = {
    "date": env["B_DATE"],
    "kernel": env["B_KERNEL"],
    "cpus": int(env["B_CPUS"]),
    "cpu_model": env["B_CPU_MODEL"],
    "fio": env["B_FIO"],
    "tensorfs_rev": env["B_REV"],
    "dir": env["B_DIR"],
    "backing_device": env["B_DEV"],
    "backing_fstype": env["B_FSTYPE"],
    "size_bytes": int(env["B_SIZE"]),
    "size": env["B_SIZE_ARG"],
    "caches_dropped": env["B_DROPPED"] == "1",
    "ext4": env["B_EXT4_MODE"],
    "tensorfs_mount": env["B_TFS_CMD"],
    "elapsed_s": int(env["B_ELAPSED"]),
    "repeat": int(env["B_REPEAT"]),
    "units": "MB/s = 10^6 bytes/s (fio bw_bytes); ratios are to the same "
             "direction (write/read) of the raw backing and of ext4",
}

if env["B_JSON"] == "1":
    json.dump({"meta": meta, "tests": rows}, sys.stdout, indent=2)
    print()
    sys.exit(0)

def ratio(x):
    return "%.2f" % x if x is not None else "-"

w = max(len(r["test"]) for r in rows)
print("%-*s  %9s  %7s  %7s  %s" % (w, "test", "MB/s", "x raw", "x ext4",
                                   "runs (MB/s)"))
print("%s  %s  %s  %s  %s" % ("-" * w, "-" * 9, "-" * 7, "-" * 7, "-" * 11))
for r in rows:
    if r["skipped"]:
        print("%-*s  %9s  %7s  %7s  (%s)" % (w, r["test"], "-", "-", "-",
                                            r["skipped"]))
    else:
        print("%-*s  %9.0f  %7s  %7s  %s" % (
            w, r["test"], r["mb_s"], ratio(r["ratio_raw"]),
            ratio(r["ratio_ext4"]),
            " ".join(str(x) for x in r["runs_mb_s"])))
print()
print("MB/s = 10^6 bytes/s, the median of %d runs; ratios of medians, to the"
      % meta["repeat"])
print("same direction (write/read).")
print("writes end with an fsync (end_fsync=1), counted in their time.")
if not meta["caches_dropped"]:
    print("NOT root: page caches were not dropped before the reads.")
print()
print("date:     %s" % meta["date"])
print("kernel:   %s" % meta["kernel"])
print("CPUs:     %d (%s)" % (meta["cpus"], meta["cpu_model"] or "?"))
print("fio:      %s" % meta["fio"])
print("tensorfs: %s, %s" % (meta["tensorfs_rev"], meta["tensorfs_mount"]))
print("disk:     %s (%s) under %s" % (meta["backing_device"],
                                      meta["backing_fstype"], meta["dir"]))
print("ext4:     %s" % meta["ext4"])
print("size:     %s (%d bytes) per file; total %d s" % (
    meta["size"], meta["size_bytes"], meta["elapsed_s"]))
print()
print("fio command lines:")
for r in rows:
    if r["command"]:
        print("  " + r["command"])
PY

# the table on stdout, or with --json the summary on stdout, table on stderr
B_JSON=0 python3 "$REPORT_PY" "$MANIFEST" >"$WORK/table.txt" ||
	die "cannot read fio's results"
if [ "$JSON" = 1 ]; then
	B_JSON=1 python3 "$REPORT_PY" "$MANIFEST" >"$WORK/summary.json" ||
		die "cannot read fio's results"
	cat "$WORK/table.txt" >&2
	cat "$WORK/summary.json"
else
	cat "$WORK/table.txt"
fi
exit 0
