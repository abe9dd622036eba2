#!/bin/bash
# NAME
#   bench.sh - tensorfs against ext4 and the raw disk, on what users run
#
# SYNOPSIS
#   sudo tools/bench.sh [--quick] [--bin DIR] [--out DIR] [--tmpfs]
#                       [--transports dev,uring] [OPTIONS]
#
# DESCRIPTION
#   Measures, in one run, three kinds of target that all live in one new
#   directory (--dir), so on one disk (with --tmpfs, all in /dev/shm):
#
#     raw   plain files in that directory, on the host file system that
#           holds the images below;
#     ext4  ext4 on a loop device attached with "losetup --direct-io=on" to
#           an image file in that directory (so ext4, like tensorfs,
#           reaches its image with O_DIRECT, not through the host's page
#           cache);
#     tfs   tensorfs mounted (tensorfs -f) from an image file in that
#           directory, its requests over /dev/fuse (-o io_uring=off);
#     tfs-uring
#           with --transports uring: tensorfs from an image file of its
#           own, its requests over FUSE over io_uring (-o io_uring=on).
#           Each transport listed is a target of its own, mounted beside
#           the others.
#
#   Every step runs on the targets in turn, raw, ext4, tfs (tfs-uring),
#   and the whole sequence is repeated (--repeat), so the runs interleave
#   (A B C A B C ...) and a disk that changes speed over time moves all
#   of them alike.  Each figure is the median of the repeats, with the
#   min-max beside it.
#
#   With --tmpfs every backing is in RAM (/dev/shm): the raw files, the
#   ext4 image under its direct-I/O loop device and the tensorfs images.
#   No disk is in the way, so the figures are the ceiling of each file
#   system's own path (for tensorfs: the daemon and FUSE), not of a disk;
#   a "cold" read of the raw file is then a read from RAM.
#
#   Before every cold read: sync, tensorfs is unmounted and mounted again
#   (its RAM cache starts empty) and "echo 3 > /proc/sys/vm/drop_caches"
#   empties the kernel's caches.  A warm read (tensorfs targets only)
#   follows a cold one with the kernel's caches dropped again but the
#   mount kept, so the data comes from tensorfs's own RAM cache.
#
# TESTS
#   a  fio, 1 MiB sequential O_DIRECT write (end_fsync=1) and cold read,
#      ioengine=io_uring, queue depth 1, 8 and 32 (--quick: 1)
#   b  fio, buffered (ioengine=psync, what write(2) users do) 1 MiB
#      sequential write ending with fsync, and a cold read
#   c  fio, buffered 4 KiB sequential write ending with fsync, and a cold
#      4 KiB random read (psync; at most 10 s of it)
#   d  mmap: sequential write (ftruncate, mmap MAP_SHARED, copy 1 MiB at a
#      time, msync, fsync) and cold read of a SIZE file
#      (tools/bench/clients.py, stdlib only)
#   e  real clients, Debian's python3-numpy and python3-torch: np.save and
#      np.load; np.memmap write + flush, and read; torch.save and
#      torch.load of a state dict of 16 float32 tensors; the safetensors
#      layout (8-byte header length, JSON header, raw bytes) written and
#      read back as safetensors does (mmap, copy each tensor); every write
#      ends with fsync; reads cold, and on tensorfs also warm
#   f  DeepSpeed's async_io pattern through libaio (the project's dsaio
#      client, tests/integration/dsaio.c: O_DIRECT, 1 MiB requests, no
#      fsync, as DeepSpeed does) writing and cold-reading files, queue depth
#      8 and 32, 1 and 4 threads per file (--quick: 8, 1)
#   g  metadata: create, then (cold) stat, then unlink of 20,000 empty files
#      in one directory; then 20,000 files of 4 KiB written (open, write,
#      close) and read back cold (open, read, close); files a second
#   h  CPU seconds per GB moved (10^9 bytes) for every test that moves
#      bytes (see CPU ACCOUNTING); for each tensorfs target also GB moved
#      per daemon CPU second ("GB/s/core": bytes / the daemon's utime +
#      stime over the run), the speed one core of daemon would sustain
#   i  the daemon's peak resident memory (VmHWM, read from /proc before
#      each unmount) against its bound: max_in_cpu + buffer_count x
#      buffer_size + 64 MiB + TFS_META_BYTES_PER_FILE per file
#
#   MB/s is 10^6 bytes/s: fio's own bandwidth (its job runtime, end_fsync
#   included) for a to c; the timed section of the client for d, e and g
#   (see tools/bench/clients.py: the file's open to its close, fsync
#   included); dsaio's own time for f.
#
# CPU ACCOUNTING
#   For each run: the client's utime + stime (fio's own usr_cpu + sys_cpu
#   over its job, so not its start-up; dsaio's from getrusage of the
#   waited process; a Python client's own getrusage around its timed
#   section, so interpreter start and imports are not counted), plus, on
#   a tensorfs target, its daemon's utime + stime over the run from
#   /proc/PID/stat (every thread: FUSE workers, io_uring workers),
#   plus, on every target, the utime + stime of all kernel threads
#   (kthreadd and its children, from /proc/*/stat) over the run.  The
#   loop device has no thread of its own in current kernels: its work runs
#   in unbound kworkers, so it is counted there, with jbd2, writeback
#   flushers and the rest.  Not counted: a kernel thread that starts and
#   ends within a run, and interrupt-context work (charged to whoever ran).
#   Kernel threads also work for other programs on the machine: run it on
#   a quiet machine (the load average at start and end is recorded).
#   GB/s/core counts the daemon's CPU alone: bytes moved / 10^9 over the
#   daemon's utime + stime, the median of the runs' ratios (a run whose
#   daemon took less than a clock tick, as --quick's can, gives none).
#
# OPTIONS
#   --quick        a smoke run: 16 MiB files, 1 MiB for c, 2 x 8 MiB for
#                  f, 200 files for g, queue depth 1 only (f: 8, one
#                  thread), one repeat.  Figures from it mean nothing.
#   --bin DIR      directory of tensorfs and mkfs.tensorfs (default:
#                  $TFS_BIN, else build/bin of this tree, else PATH)
#   --testbin DIR  directory of the dsaio client (default: $TFS_TESTBIN,
#                  else DIR/../testbin; else it is compiled from
#                  tests/integration/dsaio.c with cc -laio)
#   --out DIR      where to write the results (created; default
#                  ./bench-YYYYmmdd-HHMMSS)
#   --dir DIR      make the temporary directory holding every image and
#                  file under DIR (default /var/tmp): DIR chooses the disk
#   --tmpfs        put every backing on /dev/shm (a tmpfs) instead of
#                  --dir's disk: the raw files, the ext4 image (under a
#                  loop device that must be direct-io: tmpfs takes
#                  O_DIRECT from Linux 6.6) and the tensorfs images, to
#                  measure each path at RAM speed.  Refused, naming what
#                  to lower, when the backings (each image can fill up to
#                  3 x SIZE + 1 GiB), the daemons' memory bound and the
#                  client's copy would not fit in /dev/shm's free space
#                  or in the memory available.  Not with --dir.
#   --transports LIST
#                  the FUSE transports to measure tensorfs over, each a
#                  target of its own, among dev (/dev/fuse read and write:
#                  target tfs, -o io_uring=off) and uring (FUSE over
#                  io_uring: target tfs-uring, -o io_uring=on); default
#                  dev.  uring needs the kernel's
#                  /sys/module/fuse/parameters/enable_uring: when it is N
#                  it is set to Y for the run and back to N at the end;
#                  when it is missing or cannot be set, tfs-uring is
#                  skipped, saying why.  A tensorfs without the io_uring
#                  option cannot mount tfs-uring (the run stops, saying
#                  so); tfs is then mounted without -o io_uring=off,
#                  /dev/fuse being all such a tensorfs has.
#   --size SIZE    file size for a, b, d, e (default 1G; K, M, G suffixes
#                  are powers of 1024; at least 1M)
#   --repeat N     repeats (default 3; --quick 1)
#   --only LIST    run only these groups, e.g. --only a,e (default all:
#                  a,b,c,d,e,f,g; h and i come with them)
#   -o KEY=VALUE   a tensorfs setting for every mount (tensorfs -o), e.g.
#                  -o max_in_cpu=4GiB; may be repeated
#   --prime SIZE   before each read, on every target, write SIZE of zeros
#                  to a file on a tmpfs of the run's own and delete it
#                  (default 0: not done), so that the memory the read
#                  takes (page cache, tensorfs's cache, the client's) is
#                  memory the machine has just used.  For virtual machines
#                  that give free memory back to their host (free page
#                  reporting, ballooning): there a page used again is
#                  faulted in by the host, and that cost lands on whoever
#                  first writes it: tensorfs's daemon, which copies each
#                  reply into the page cache, but the host itself for ext4
#                  and the raw file, whose pages the disk's DMA fills.
#                  Three times --size covers the page cache, tensorfs's
#                  cache and the client's copy.  See
#                  tools/bench/profiles/page-cache-host-memory.txt.
#   -h, --help     this text
#
# OUTPUT
#   The table on stdout: for each test, unit, the median (min-max) of the
#   raw file, ext4 and each tensorfs target, each tensorfs target's ratio
#   to raw and to ext4 ("x raw", "x ext4"; with two tensorfs targets each
#   column is headed by the target's name: "tfs x raw", "tfs-uring x
#   raw"), CPU s/GB of every target, each tensorfs target's CPU ratio to
#   ext4 ("cpu x ext4") and its GB/s per daemon core ("GB/s/core", rows
#   that move bytes); then VmHWM, date, commit (of the script's tree), the
#   binaries (--version, checksum, build time), kernel, load, what a
#   first touch of fresh memory cost at the start and the end (seconds
#   per GiB, 256 MiB of anonymous memory: every mount's daemon fills
#   fresh memory, and where the host of a virtual machine takes back
#   what its guest frees this cost moves the write and cold read
#   figures), the transports measured or skipped.  In --out DIR:
#   results.json (every run's figures and CPU parts, the medians, the
#   commands, the machine), table.txt, commands.txt (every command run,
#   the temporary directory written $WORK), ratios.png (gnuplot; skipped
#   with a message when gnuplot is missing), ratios.dat, and runs/ (each
#   run's raw record: fio's JSON, the clients' output).  Progress goes to
#   stderr, each line with the seconds since the start.
#   tools/bench/markdown.py OUT/results.json prints the table as Markdown.
#
# REQUIREMENTS
#   root (it drops caches, attaches a loop device, mounts ext4); fio,
#   python3, losetup, mkfs.ext4, fusermount3; python3-numpy and
#   python3-torch for e (a python3 that imports them is looked for:
#   /usr/bin/python3 first); gnuplot for the plot; libaio for f.
#   tools/install-deps.sh installs them all.  Free space under --dir:
#   it asks for (1 + the number of tensorfs targets) x (3 x SIZE + 1
#   GiB), the images' size; they are sparse and use less.  --tmpfs needs
#   Linux 6.6 or later (O_DIRECT on tmpfs); --transports uring a kernel
#   with FUSE over io_uring (Linux 6.14 or later, CONFIG_FUSE_IO_URING)
#   and a tensorfs that has -o io_uring.
#
#   Everything it made (mounts, the loop device, the daemons, the images,
#   with --tmpfs its directory in /dev/shm; enable_uring turned back off)
#   is removed on every exit path, a failure or Ctrl-C included.
#
# EXIT STATUS
#   0 done; 1 a failure (not root, a tool missing, a mount, a run or a
#   check of the data read back failed); 2 a usage error.
#
# EXAMPLES
#   sudo tools/bench.sh --bin build/rel/bin --out /tmp/bench
#   sudo tools/bench.sh --quick
#   sudo tools/bench.sh --only a,f --size 4G --dir /mnt/nvme
#   sudo tools/bench.sh --tmpfs --transports dev,uring --size 512M

set -u

top=$(cd "$(dirname "$0")/.." && pwd)
helpers=$top/tools/bench
prog=bench.sh

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; }
usage_error() {
	printf '%s: %s\nTry "%s --help".\n' "$prog" "$1" "$0" >&2
	exit 2
}
log() { printf '%s: [%ss] %s\n' "$prog" "$SECONDS" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ===== arguments =====

QUICK=0
BIN=""
TESTBIN=""
OUT=""
PARENT=/var/tmp
SIZE_ARG=""
REPEAT=""
ONLY=a,b,c,d,e,f,g
PRIME_ARG=0
TFS_OPTS=()
TMPFS=0
DIR_GIVEN=0
TRANSPORTS=dev

ARGS_GIVEN=$(printf ' %q' "$@")
need_val() { [ "$2" -ge 2 ] || usage_error "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1; shift ;;
	--bin) need_val "$1" $#; BIN=$2; shift 2 ;;
	--bin=*) BIN=${1#*=}; shift ;;
	--testbin) need_val "$1" $#; TESTBIN=$2; shift 2 ;;
	--testbin=*) TESTBIN=${1#*=}; shift ;;
	--out) need_val "$1" $#; OUT=$2; shift 2 ;;
	--out=*) OUT=${1#*=}; shift ;;
	--dir) need_val "$1" $#; PARENT=$2; DIR_GIVEN=1; shift 2 ;;
	--dir=*) PARENT=${1#*=}; DIR_GIVEN=1; shift ;;
	--tmpfs) TMPFS=1; shift ;;
	--transports) need_val "$1" $#; TRANSPORTS=$2; shift 2 ;;
	--transports=*) TRANSPORTS=${1#*=}; shift ;;
	--size) need_val "$1" $#; SIZE_ARG=$2; shift 2 ;;
	--size=*) SIZE_ARG=${1#*=}; shift ;;
	--repeat) need_val "$1" $#; REPEAT=$2; shift 2 ;;
	--repeat=*) REPEAT=${1#*=}; shift ;;
	--only) need_val "$1" $#; ONLY=$2; shift 2 ;;
	--only=*) ONLY=${1#*=}; shift ;;
	--prime) need_val "$1" $#; PRIME_ARG=$2; shift 2 ;;
	--prime=*) PRIME_ARG=${1#*=}; shift ;;
	-o) need_val "$1" $#
		case "$2" in *=*) ;; *) usage_error "-o needs KEY=VALUE, not '$2'" ;; esac
		TFS_OPTS+=(-o "$2"); shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage_error "unknown argument '$1'" ;;
	esac
done

MIB=$((1024 * 1024))
# parse_size TEXT: bytes, or fail
parse_size() {
	local num unit mult
	num=$(printf '%s' "$1" | sed -n 's/^\([0-9][0-9]*\).*$/\1/p')
	[ -n "$num" ] && [ ${#num} -le 12 ] || return 1
	unit=${1#"$num"}
	case "$unit" in
	""|B) mult=1 ;;
	K|k|KiB) mult=1024 ;;
	M|m|MiB) mult=$MIB ;;
	G|g|GiB) mult=$((1024 * MIB)) ;;
	*) return 1 ;;
	esac
	echo $((num * mult))
}

if [ "$QUICK" = 1 ]; then
	SIZE=$((16 * MIB)); SMALL=$((1 * MIB)); DS_FILES=2; DS_BYTES=$((8 * MIB))
	META_N=200; QDS=(1); DS_QDS=(8); DS_THREADS=(1); RR_RUNTIME=""
	: "${REPEAT:=1}"
else
	SIZE=$((1024 * MIB)); SMALL=$((256 * MIB)); DS_FILES=4; DS_BYTES=$((256 * MIB))
	META_N=20000; QDS=(1 8 32); DS_QDS=(8 32); DS_THREADS=(1 4); RR_RUNTIME=10
	: "${REPEAT:=3}"
fi
if [ -n "$SIZE_ARG" ]; then
	SIZE=$(parse_size "$SIZE_ARG") || usage_error "invalid --size '$SIZE_ARG'; give a size like 1G or 512M"
	SIZE=$((SIZE / MIB * MIB))
	[ "$SIZE" -ge "$MIB" ] || usage_error "--size must be at least 1M"
	[ "$SMALL" -le "$SIZE" ] || SMALL=$SIZE
	[ "$DS_BYTES" -le "$SIZE" ] || DS_BYTES=$SIZE
fi
PRIME=$(parse_size "$PRIME_ARG") || usage_error "invalid --prime '$PRIME_ARG'; give a size like 3G, or 0"
PRIME_MIB=$((PRIME / MIB))
[ "$PRIME" = 0 ] || [ "$PRIME_MIB" -ge 1 ] || usage_error "--prime must be 0 or at least 1M, not '$PRIME_ARG'"
case "$REPEAT" in
''|*[!0-9]*|0) usage_error "--repeat needs a whole number of at least 1, not '$REPEAT'" ;;
esac
GROUPS_ON=" "
for g in ${ONLY//,/ }; do
	case "$g" in
	[abcdefg]) GROUPS_ON="$GROUPS_ON$g " ;;
	*) usage_error "--only takes groups among a,b,c,d,e,f,g, not '$g'" ;;
	esac
done
on() { case "$GROUPS_ON" in *" $1 "*) return 0 ;; esac; return 1; }
TRANSPORTS_ON=" "
for tr in ${TRANSPORTS//,/ }; do
	case "$tr" in
	dev|uring) ;;
	*) usage_error "--transports takes transports among dev,uring, not '$tr'" ;;
	esac
	case "$TRANSPORTS_ON" in *" $tr "*) usage_error "--transports names '$tr' twice" ;; esac
	TRANSPORTS_ON="$TRANSPORTS_ON$tr "
done
[ "$TRANSPORTS_ON" != " " ] || usage_error "--transports needs at least one of dev,uring"
if [ "$TMPFS" = 1 ]; then
	[ "$DIR_GIVEN" = 0 ] || usage_error "--tmpfs puts everything on /dev/shm: give --tmpfs or --dir, not both"
	PARENT=/dev/shm
	[ -d "$PARENT" ] || usage_error "--tmpfs: there is no /dev/shm"
fi
[ -d "$PARENT" ] || usage_error "--dir '$PARENT' is not a directory"

# ===== tools =====

[ "$(id -u)" = 0 ] || die "must run as root: it drops the kernel's caches, attaches a loop device and mounts ext4; run: sudo $0$ARGS_GIVEN"
command -v fio >/dev/null 2>&1 || die "fio not found; install it (apt-get install fio, or tools/install-deps.sh)"
for c in python3 fusermount3 mountpoint losetup mkfs.ext4 mount umount findmnt; do
	command -v "$c" >/dev/null 2>&1 || die "$c not found; run tools/install-deps.sh"
done
[ -e /dev/fuse ] || die "no /dev/fuse; load the fuse module (modprobe fuse)"
if [ -z "$BIN" ]; then
	if [ -n "${TFS_BIN:-}" ]; then BIN=$TFS_BIN
	elif [ -x "$top/build/bin/tensorfs" ]; then BIN=$top/build/bin
	elif command -v tensorfs >/dev/null 2>&1; then BIN=$(dirname "$(command -v tensorfs)")
	fi
fi
TENSORFS=$BIN/tensorfs
MKFS=$BIN/mkfs.tensorfs
if [ -z "$BIN" ] || [ ! -x "$TENSORFS" ] || [ ! -x "$MKFS" ]; then
	die "tensorfs and mkfs.tensorfs not found${BIN:+ in $BIN}; build them (cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel) and pass --bin build/rel/bin"
fi
BIN=$(cd "$BIN" && pwd)
# find_py MODULE: a python3 that has MODULE (Debian's first: a pyenv
# python3 ahead in PATH may lack python3-numpy and python3-torch, and its
# shim costs half a second a start)
find_py() {
	local p
	for p in /usr/bin/python3 python3; do
		if command -v "$p" >/dev/null 2>&1 && "$p" -c "import importlib.util, sys
sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; then
			command -v "$p"; return 0
		fi
	done
	return 1
}
PY=$(find_py json) || die "no working python3"
# mem_bound CONFIG NFILES: the daemon's memory bound in KiB, a tab and
# how it is made: cache + pool + 64 MiB + per-file metadata + the cache's
# index (at most 250 B per block_size chunk, fs.h), from a configuration
# as tensorfs prints it; nothing when CONFIG is unreadable
mem_bound() {
	"$PY" - "$1" "$top/lib/include/memcheck.h" "$2" <<'PY'
import re, sys
sizes = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "fp8_e4m3": 1,
         "fp8_e5m2": 1, "int8": 1, "uint8": 1, "int16": 2, "int32": 4,
         "int64": 8, "bool": 1}
try:
    cfg = {}
    # the first of a key's sections is the mount's ([offload_param]); a
    # later one ([offload_optimizer]) is DeepSpeed's only
    for k, v in re.findall(r"^(\w+)\s*=\s*(\S*)", open(sys.argv[1]).read(), re.M):
        cfg.setdefault(k, v)
except OSError:
    sys.exit(0)
def size(v, dt):
    m = re.fullmatch(r"([0-9.eE+]+)\s*([KMGT]?)(i?)B?", v)
    if not m:
        raise SystemExit(0)
    n = float(m.group(1))
    if m.group(2) or v.endswith("B"):
        base = 1024 if m.group(3) else 1000
        return int(n * base ** " KMGT".index(m.group(2) or " "))
    return int(n * sizes.get(dt, 2))
dt = cfg.get("dtype", "fp16")
cache = size(cfg.get("max_in_cpu", "0"), dt)
pool = int(cfg.get("buffer_count", "0")) * size(cfg.get("buffer_size", "0"), dt)
per_file = 320
try:
    m = re.search(r"TFS_META_BYTES_PER_FILE\s+(\d+)", open(sys.argv[2]).read())
    per_file = int(m.group(1)) if m else per_file
except OSError:
    pass
files = int(sys.argv[3]) + 16
bs = size(cfg.get("block_size", "1MiB"), dt) or 2**20
chunks = cache // bs + max(pool // bs, 1)
kb = (cache + pool + 64 * 2**20 + files * per_file + chunks * 250) // 1024
print("%d\tmax_in_cpu %d + pool %d + 64 MiB + %d files x %d B + index %d chunks x 250 B"
      % (kb, cache, pool, files, per_file, chunks))
PY
}
# one client process runs every step of d, e and g (clients.py --serve),
# so numpy and torch are imported once: the python3 that has the most
HAVE_NP=0
HAVE_TORCH=0
if PY_CLIENT=$(find_py torch) && "$PY_CLIENT" -c 'import numpy' 2>/dev/null; then
	HAVE_NP=1; HAVE_TORCH=1
elif PY_CLIENT=$(find_py numpy); then
	HAVE_NP=1
	log "warning: no python3 with torch (apt-get install python3-torch): torch steps skipped"
else
	PY_CLIENT=$PY
	log "warning: no python3 with numpy (apt-get install python3-numpy): numpy and torch steps skipped"
fi
GNUPLOT=$(command -v gnuplot 2>/dev/null) || GNUPLOT=""
[ -n "$GNUPLOT" ] || log "warning: gnuplot not found (apt-get install gnuplot-nox): no ratios.png"

OUT=${OUT:-$PWD/bench-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" || die "cannot make the output directory '$OUT'"
OUT=$(cd "$OUT" && pwd)

# ===== clean-up, on every exit path =====

WORK=""
EXT4_MNT=""
LOOPDEV=""
PRIME_MNT=""
MANIFEST=""
SERVER_PID=""
# the tensorfs targets (tfs, tfs-uring), each mounted at $WORK/TARGET
# from $WORK/TARGET.img; TFS_PIDS: the running daemon of each;
# TFS_IOU: its -o io_uring value (empty: the option is not passed)
TFS_TARGETS=()
declare -A TFS_PIDS=() TFS_IOU=()
# enable_uring's value before this run turned it on (restored at exit)
URING_PARAM=/sys/module/fuse/parameters/enable_uring
URING_RESTORE=""

# stop_tensorfs TARGET: unmount it and wait for its daemon to exit
stop_tensorfs() {
	local t=$1 i hwm pid=${TFS_PIDS[$1]:-} mnt=""
	[ -n "$WORK" ] && mnt=$WORK/$1
	if [ -n "$pid" ] && [ -n "$MANIFEST" ]; then
		hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status" 2>/dev/null)
		[ -n "$hwm" ] && printf 'hwm\t%s\t%s\t%s\n' "$pid" "$hwm" "$t" >>"$MANIFEST"
	fi
	if [ -n "$mnt" ] && mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	if [ -n "$pid" ]; then
		# unmounting makes the daemon write everything back and exit
		for i in $(seq 600); do
			kill -0 "$pid" 2>/dev/null || break
			if [ "$i" = 600 ]; then
				log "warning: tensorfs $pid ($t) still running 60 s after unmount; killing it"
				kill -TERM "$pid" 2>/dev/null; sleep 1; kill -KILL "$pid" 2>/dev/null
			fi
			sleep 0.1
		done
		wait "$pid" 2>/dev/null
	fi
	TFS_PIDS[$t]=""
}
stop_all_tensorfs() {
	local t
	for t in "${TFS_TARGETS[@]}"; do stop_tensorfs "$t"; done
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$?
	# nothing may stop the clean-up half-way: not a second Ctrl-C, nor
	# the second SIGINT timeout(1) sends (to the command, then to its
	# process group), which killed it here mid-way and left mounts
	trap - EXIT
	trap '' INT TERM HUP
	set +u
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	stop_all_tensorfs
	if [ -n "$URING_RESTORE" ]; then
		{ echo "$URING_RESTORE" >"$URING_PARAM"; } 2>/dev/null ||
			log "warning: could not set $URING_PARAM back to $URING_RESTORE"
	fi
	if [ -n "$EXT4_MNT" ] && mountpoint -q "$EXT4_MNT" 2>/dev/null; then
		umount "$EXT4_MNT" 2>/dev/null || umount -l "$EXT4_MNT" 2>/dev/null
	fi
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	if [ -n "$PRIME_MNT" ] && mountpoint -q "$PRIME_MNT" 2>/dev/null; then
		umount "$PRIME_MNT" 2>/dev/null || umount -l "$PRIME_MNT" 2>/dev/null
	fi
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		# never follow into a mount that could not be unmounted
		rm -rf --one-file-system "$WORK" 2>/dev/null ||
			log "warning: could not remove all of '$WORK'"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# ===== the transports: a tensorfs target each =====

# uring_ready: whether the kernel serves FUSE over io_uring, turning it on
# for this run (back off at exit) when it is off and can be turned on;
# else false, with the reason in URING_WHY
URING_WHY=""
uring_ready() {
	local v
	if [ ! -e "$URING_PARAM" ]; then
		URING_WHY="this kernel ($(uname -r)) has no FUSE over io_uring: no $URING_PARAM (it needs Linux 6.14 or later built with CONFIG_FUSE_IO_URING)"
		return 1
	fi
	v=$(cat "$URING_PARAM" 2>/dev/null)
	case "$v" in Y|y|1) return 0 ;; esac
	if { echo Y >"$URING_PARAM"; } 2>/dev/null && [ "$(cat "$URING_PARAM" 2>/dev/null)" = Y ]; then
		URING_RESTORE=$v
		log "FUSE over io_uring was off ($URING_PARAM = $v): turned on for this run, off again at its end"
		return 0
	fi
	URING_WHY="the kernel's FUSE over io_uring is off ($URING_PARAM = ${v:-?}) and cannot be turned on"
	return 1
}
TRANSPORTS_TEXT=""
for tr in $TRANSPORTS_ON; do
	case "$tr" in
	dev)
		TFS_TARGETS+=(tfs); TFS_IOU[tfs]=off
		TRANSPORTS_TEXT="$TRANSPORTS_TEXT, dev (tfs: /dev/fuse, -o io_uring=off)" ;;
	uring)
		if uring_ready; then
			TFS_TARGETS+=(tfs-uring); TFS_IOU[tfs-uring]=on
			TRANSPORTS_TEXT="$TRANSPORTS_TEXT, uring (tfs-uring: FUSE over io_uring, -o io_uring=on)"
		else
			log "warning: --transports uring: tfs-uring skipped: $URING_WHY"
			TRANSPORTS_TEXT="$TRANSPORTS_TEXT, uring skipped ($URING_WHY)"
		fi ;;
	esac
done
TRANSPORTS_TEXT=${TRANSPORTS_TEXT#, }
[ ${#TFS_TARGETS[@]} -gt 0 ] || die "no tensorfs target left to measure: $TRANSPORTS_TEXT; run with --transports dev"
NT=${#TFS_TARGETS[@]}

WORK=$(mktemp -d "$PARENT/tensorfs-bench.XXXXXX") || die "cannot make a directory under '$PARENT'"
WORK=$(cd "$WORK" && pwd -P)
RES=$OUT/runs
rm -rf "${RES:?}"
mkdir -p "$RES" || die "cannot make '$RES'"
MANIFEST=$WORK/manifest.tsv
: >"$MANIFEST"

# the raw target and both loop device and tensorfs reach the disk with
# O_DIRECT: tmpfs, for one, refuses it before Linux 6.6
if ! dd if=/dev/zero of="$WORK/odirect.probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	[ "$TMPFS" = 0 ] ||
		die "--tmpfs: /dev/shm refuses O_DIRECT on this kernel ($(uname -r)); tmpfs takes it from Linux 6.6: run without --tmpfs"
	die "the file system of '$PARENT' does not support O_DIRECT (tmpfs?); pick a directory on a disk with --dir"
fi
rm -f "$WORK/odirect.probe"

IMG_BYTES=$((SIZE * 3 + 1024 * MIB))
if [ "$TMPFS" = 0 ]; then
	need_kib=$((IMG_BYTES * (1 + NT) / 1024))
	avail_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
	if [ -z "$avail_kib" ] || [ "$avail_kib" -lt "$need_kib" ]; then
		die "'$WORK' has ${avail_kib:-?} KiB free; this run needs about $need_kib KiB (lower --size or pick another --dir)"
	fi
else
	# in RAM, the images are sparse but can fill: ext4 reuses freed blocks
	# wherever they are and the loop device passes no discard, tensorfs
	# punches no hole without -o discard; so count them full, and the
	# raw target's largest step (a file of SIZE, f's files, g's 4 KiB
	# files), the daemons' memory bound, the client's copy of a file
	# (np.load, torch.load: up to 2 x SIZE) and --prime
	fstype=$(stat -f -c %T "$WORK" 2>/dev/null)
	[ "$fstype" = tmpfs ] || die "--tmpfs: /dev/shm is not a tmpfs here (${fstype:-?}); run without --tmpfs"
	raw_mib=$((SIZE / MIB))
	[ $((DS_FILES * DS_BYTES / MIB)) -le "$raw_mib" ] || raw_mib=$((DS_FILES * DS_BYTES / MIB))
	[ $((META_N * 4096 / MIB)) -le "$raw_mib" ] || raw_mib=$((META_N * 4096 / MIB))
	raw_mib=$((raw_mib + 64))
	img_mib=$((IMG_BYTES / MIB))
	shm_mib=$((raw_mib + (1 + NT) * img_mib))
	shm_free_mib=$(df -Pk "$WORK" | awk 'NR == 2 { print int($4 / 1024) }')
	lower="lower --size (now $((SIZE / MIB)) MiB; each image is 3 x SIZE + 1 GiB)"
	[ "$NT" = 1 ] || lower="$lower or list fewer --transports"
	if [ -z "$shm_free_mib" ] || [ "$shm_free_mib" -lt "$shm_mib" ]; then
		die "--tmpfs: the backings can take $shm_mib MiB of /dev/shm (raw files $raw_mib MiB, the ext4 image and $NT tensorfs image(s) of $img_mib MiB each, sparse but they can fill), and it has ${shm_free_mib:-?} MiB free: $lower"
	fi
	"$TENSORFS" "${TFS_OPTS[@]}" --print-config >"$WORK/tfs.print-config" 2>"$WORK/print-config.log" ||
		{ cat "$WORK/print-config.log" >&2; die "tensorfs --print-config failed (above): the daemons' memory bound is unknown"; }
	bound_kib=$(mem_bound "$WORK/tfs.print-config" "$META_N" | cut -f1)
	case "$bound_kib" in
	''|*[!0-9]*) die "--tmpfs: cannot work out the daemon's memory bound from tensorfs --print-config" ;;
	esac
	bound_mib=$((bound_kib / 1024 + 1))
	mem_mib=$((shm_mib + NT * bound_mib + 2 * SIZE / MIB + PRIME_MIB + 512))
	avail_mib=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
	if [ -z "$avail_mib" ] || [ "$avail_mib" -lt "$mem_mib" ]; then
		die "--tmpfs: this run can take $mem_mib MiB of memory (the backings on /dev/shm $shm_mib MiB, $NT daemon(s) of up to $bound_mib MiB each, the client's 2 x SIZE, --prime $PRIME_MIB MiB, 512 MiB to spare), and ${avail_mib:-?} MiB are available: $lower, or the daemon's cache (-o max_in_cpu=...)"
	fi
	log "--tmpfs: every backing in /dev/shm, up to $shm_mib MiB of it; up to $mem_mib MiB of memory in all"
fi

if [ "$PRIME_MIB" -gt 0 ]; then
	avail_mib=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
	[ -z "$avail_mib" ] || [ "$PRIME_MIB" -le $((avail_mib / 2)) ] ||
		die "--prime $PRIME_ARG is more than half of the $avail_mib MiB of memory available; give less"
	mkdir -p "$WORK/prime"
	mount -t tmpfs -o "size=$((PRIME_MIB + 1))m,mode=700" tmpfs "$WORK/prime" ||
		die "cannot mount a tmpfs for --prime on '$WORK/prime'"
	PRIME_MNT=$WORK/prime
	log "--prime: $PRIME_MIB MiB of memory used and given back before each read"
fi

# ===== the targets =====

mkdir -p "$WORK/raw"

log "ext4: mkfs on an image of $((IMG_BYTES / MIB)) MiB, loop device with direct I/O"
truncate -s "$IMG_BYTES" "$WORK/ext4.img" || die "cannot make '$WORK/ext4.img'"
mkfs.ext4 -q -F "$WORK/ext4.img" >"$WORK/mkfs.ext4.log" 2>&1 ||
	{ cat "$WORK/mkfs.ext4.log" >&2; die "mkfs.ext4 failed"; }
if ! LOOPDEV=$(losetup --find --show --direct-io=on "$WORK/ext4.img"); then
	[ "$TMPFS" = 0 ] ||
		die "--tmpfs: losetup --direct-io=on over an image in /dev/shm failed: this kernel's loop device cannot do direct I/O to tmpfs; run without --tmpfs"
	die "losetup --direct-io=on failed (the host file system of --dir must support O_DIRECT)"
fi
mkdir -p "$WORK/ext4"
EXT4_MNT=$WORK/ext4
mount -t ext4 "$LOOPDEV" "$EXT4_MNT" || die "cannot mount $LOOPDEV on '$EXT4_MNT'"
LOOP_DIO=$(cat "/sys/block/${LOOPDEV#/dev/}/loop/dio" 2>/dev/null || echo '?')
if [ "$LOOP_DIO" != 1 ]; then
	# on tmpfs, buffered loop I/O would copy every block once more in RAM
	[ "$TMPFS" = 0 ] ||
		die "--tmpfs: $LOOPDEV over /dev/shm reports dio=$LOOP_DIO: this kernel's loop device cannot do direct I/O to tmpfs, and ext4 would go through the page cache twice; run without --tmpfs"
	log "warning: $LOOPDEV reports dio=$LOOP_DIO: the kernel fell back to buffered loop I/O"
fi

# tfs_cmd TARGET: its tensorfs command line (image and mount point named)
tfs_cmd() {
	local c opt=()
	[ -z "${TFS_IOU[$1]:-}" ] || opt=(-o "io_uring=${TFS_IOU[$1]}")
	c=$(printf '%q ' "$TENSORFS" -f "${TFS_OPTS[@]}" "${opt[@]}" IMAGE MOUNTPOINT)
	echo "${c% }"
}
for t in "${TFS_TARGETS[@]}"; do
	log "tensorfs: mkfs on an image of $((IMG_BYTES / MIB)) MiB ($t)"
	"$MKFS" -q -s "$IMG_BYTES" "$WORK/$t.img" >"$WORK/mkfs.log" 2>&1 ||
		{ cat "$WORK/mkfs.log" >&2; die "mkfs.tensorfs failed"; }
	mkdir -p "$WORK/$t"
done

# try_start_tensorfs TARGET: mount it; false if the daemon exited first
try_start_tensorfs() {
	local t=$1 i pid opt=()
	[ -z "${TFS_IOU[$t]:-}" ] || opt=(-o "io_uring=${TFS_IOU[$t]}")
	"$TENSORFS" -f "${TFS_OPTS[@]}" "${opt[@]}" "$WORK/$t.img" "$WORK/$t" >>"$WORK/$t.log" 2>&1 &
	pid=$!
	TFS_PIDS[$t]=$pid
	for i in $(seq 200); do
		mountpoint -q "$WORK/$t" && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			TFS_PIDS[$t]=""
			return 1
		fi
		[ "$i" = 200 ] || sleep 0.05
	done
	die "tensorfs did not mount $t within 10 s: $(tfs_cmd "$t")"
}
# tensorfs_failed TARGET: stop the run, TARGET's daemon having exited
# before it mounted
tensorfs_failed() {
	cat "$WORK/$1.log" >&2
	if [ "${TFS_IOU[$1]:-}" = on ]; then
		die "tensorfs exited before mounting $1 over FUSE over io_uring (its log above says why): $(tfs_cmd "$1")
  $URING_PARAM is $(cat "$URING_PARAM" 2>/dev/null || echo missing) now.  A tensorfs that has -o io_uring refuses io_uring=on when the kernel does not serve it (enable_uring N: something may have turned it off during the run); one built before rejects the option (unknown option).  Run with --transports dev, or --bin a tensorfs that has -o io_uring"
	fi
	die "tensorfs exited before mounting $1: $(tfs_cmd "$1")"
}
# start_tensorfs TARGET: mount it, or stop the run saying why
start_tensorfs() { try_start_tensorfs "$1" || tensorfs_failed "$1"; }
start_all_tensorfs() {
	local t
	for t in "${TFS_TARGETS[@]}"; do start_tensorfs "$t"; done
}
# the first mounts; a tensorfs without -o io_uring (before FUSE over
# io_uring) has /dev/fuse only: tfs is mounted without io_uring=off then
for t in "${TFS_TARGETS[@]}"; do
	try_start_tensorfs "$t" && continue
	if [ "$t" != tfs ] || ! grep -q 'io_uring' "$WORK/tfs.log"; then tensorfs_failed "$t"; fi
	why=$(grep -m 1 'io_uring' "$WORK/tfs.log")
	TFS_IOU[tfs]=""
	try_start_tensorfs tfs || tensorfs_failed tfs
	log "warning: this tensorfs does not know -o io_uring ($why): tfs is mounted without it, over /dev/fuse, all that tensorfs has"
	TRANSPORTS_TEXT=${TRANSPORTS_TEXT/"-o io_uring=off"/"a tensorfs without -o io_uring"}
	: >"$WORK/tfs.log"
done
# what each mount says it runs over (.tensorfs/stats, fuse_io_uring: 1
# io_uring, 0 /dev/fuse; nothing from a tensorfs before FUSE over io_uring)
said=""
for t in "${TFS_TARGETS[@]}"; do
	tr=$(awk '$1 == "fuse_io_uring" { print $2 == 1 ? "io_uring" : "dev_fuse" }' \
		"$WORK/$t/.tensorfs/stats" 2>/dev/null)
	case "${TFS_IOU[$t]:-}:$tr" in
	on:io_uring|off:dev_fuse|:dev_fuse|*:) ;;
	*) die "$t: its .tensorfs/stats says it runs over $tr, not the transport this mount is for: $(tfs_cmd "$t")" ;;
	esac
	said="$said, $t ${tr:-?}"
done
TRANSPORTS_TEXT="$TRANSPORTS_TEXT; the mounts say:${said#,}"
cp "$WORK/${TFS_TARGETS[0]}/.tensorfs/config" "$WORK/tfs.config" 2>/dev/null ||
	log "warning: no .tensorfs/config on the mount: the memory bound is unknown"

# dir_of TARGET: the directory the runs on TARGET use
dir_of() {
	case "$1" in
	raw) echo "$WORK/raw" ;;
	ext4) echo "$EXT4_MNT/b" ;;
	tfs|tfs-*) echo "$WORK/$1/b" ;;
	esac
}
TARGETS=(raw ext4 "${TFS_TARGETS[@]}")
for t in "${TARGETS[@]}"; do mkdir -p "$(dir_of "$t")" || die "cannot make a directory on $t"; done
# the targets for report.py: ID KIND LABEL (the label heads its column
# when there is one tensorfs target)
printf 'target\traw\traw\traw file\ntarget\text4\text4\text4\n' >>"$MANIFEST"
for t in "${TFS_TARGETS[@]}"; do
	case "$t" in
	tfs) printf 'target\ttfs\ttensorfs\ttensorfs\n' ;;
	*) printf 'target\t%s\ttensorfs\ttensorfs %s\n' "$t" "${t#tfs-}" ;;
	esac
done >>"$MANIFEST"

# ===== the dsaio client =====

DSAIO=""
DSAIO_SKIP=""
if on f; then
	for d in "$TESTBIN" "${TFS_TESTBIN:-}" "$BIN/../testbin"; do
		if [ -n "$d" ] && [ -x "$d/dsaio" ]; then DSAIO=$(cd "$d" && pwd)/dsaio; break; fi
	done
	if [ -z "$DSAIO" ]; then
		if command -v cc >/dev/null 2>&1 &&
			cc -O2 -pthread -o "$WORK/dsaio" "$top/tests/integration/dsaio.c" -laio >"$WORK/cc.log" 2>&1; then
			DSAIO=$WORK/dsaio
		else
			DSAIO_SKIP="no dsaio client (build the tree, or install libaio-dev and a C compiler)"
			log "warning: f skipped: $DSAIO_SKIP"
		fi
	fi
fi

# ===== running and recording =====

REP=0
declare -A DEFINED=()

# deftest ID GROUP UNIT LABEL: a row of the table, in the order defined
deftest() {
	[ -n "${DEFINED[$1]:-}" ] && return 0
	DEFINED[$1]=1
	printf 'test\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$MANIFEST"
}
skip_run() { printf 'skip\t%s\t%s\t%s\n' "$1" "$2" "$3" >>"$MANIFEST"; }

pid_of() { echo "${TFS_PIDS[$1]:-}"; }

# cold: what comes before a cold read: the data on the disk, tensorfs's
# RAM cache empty (a new mount), the kernel's caches empty
cold() {
	sync
	stop_all_tensorfs
	start_all_tensorfs
	echo 3 >/proc/sys/vm/drop_caches || die "cannot drop caches"
}
# prime: with --prime, use PRIME_MIB of memory and give it back, right
# before a read (see --prime)
prime() {
	[ "$PRIME_MIB" -gt 0 ] || return 0
	dd if=/dev/zero of="$PRIME_MNT/x" bs=1M count="$PRIME_MIB" status=none ||
		die "--prime: cannot write $PRIME_MIB MiB to the tmpfs '$PRIME_MNT' (too little free memory?)"
	rm -f "$PRIME_MNT/x"
}
# warm: the kernel's caches empty, tensorfs's kept
warm() {
	sync
	echo 3 >/proc/sys/vm/drop_caches || die "cannot drop caches"
}

# record ID TARGET KIND FILE FIO_JSON CMD...: a run for report.py, and its
# command line (with the temporary directory shown as $WORK) for
# commands.txt
record() {
	local id=$1 t=$2 kind=$3 file=$4 fj=$5 cmd
	shift 5
	cmd=$(printf '%q ' "$@")
	cmd=${cmd% }
	# shellcheck disable=SC2016  # a literal $WORK, $OUT in the text
	cmd=${cmd//"$WORK"/'$WORK'}
	# shellcheck disable=SC2016
	cmd=${cmd//"$RES"/'$OUT/runs'}
	printf 'run\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$t" "$REP" "$kind" \
		"$file" "$fj" "$cmd" >>"$MANIFEST"
	printf '%s\n' "$cmd" >>"$WORK/commands.txt"
}

# fio_run ID TARGET FILE ARGS...: one fio job, measured
fio_run() {
	local id=$1 t=$2 file=$3 base
	shift 3
	base=$RES/$id.$t.$REP
	# clock_gettime: fio's default clock calibrates the TSC first, a
	# third of a second of CPU for every job
	local args=(fio --name="$id" --filename="$file" --numjobs=1
		--clocksource=clock_gettime "$@" --output-format=json
		--output="$base.fio.json")
	log "run $REP: $id on $t"
	if ! "$PY" "$helpers/measure.py" run --out "$base.measure.json" \
		--daemon "$(pid_of "$t")" -- "${args[@]}" >"$base.log" 2>&1; then
		cat "$base.log" >&2
		die "fio failed ($id on $t): $(printf '%q ' "${args[@]}")"
	fi
	record "$id" "$t" fio "$base.measure.json" "$base.fio.json" "${args[@]}"
}

# the client process (clients.py --serve), its stdin and stdout in CLIENT
# (bash unsets CLIENT_PID when it ends: keep the pid for the clean-up)
coproc CLIENT { exec "$PY_CLIENT" "$helpers/clients.py" --serve 2>>"$WORK/clients.log"; }
SERVER_PID=$CLIENT_PID

# client_run ID TARGET OP PATH SIZE: one clients.py step, measured
client_run() {
	local id=$1 t=$2 base line
	shift 2
	base=$RES/$id.$t.$REP
	log "run $REP: $id on $t"
	local in=${CLIENT[1]:-} out=${CLIENT[0]:-}
	if [ -z "$in" ] || [ -z "$out" ] ||
		! printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(pid_of "$t")" 1>&"$in" ||
		! IFS= read -r line <&"$out"; then
		cat "$WORK/clients.log" >&2
		die "the client process (clients.py --serve) died during $id on $t"
	fi
	case "$line" in
	'{"error"'*) die "client failed ($id on $t): clients.py $*: $line" ;;
	esac
	printf '%s\n' "$line" >"$base.client.json"
	record "$id" "$t" client "$base.client.json" "" "$PY_CLIENT" tools/bench/clients.py "$@"
}

# dsaio_run ID TARGET ARGS...: one dsaio run, measured
dsaio_run() {
	local id=$1 t=$2 base
	shift 2
	base=$RES/$id.$t.$REP
	log "run $REP: $id on $t"
	if ! "$PY" "$helpers/measure.py" run --capture --out "$base.measure.json" \
		--daemon "$(pid_of "$t")" -- "$DSAIO" "$@" >"$base.log" 2>&1; then
		cat "$base.log" >&2
		die "dsaio failed ($id on $t): dsaio $*"
	fi
	record "$id" "$t" dsaio "$base.measure.json" "" dsaio "$@"
}

clean_dirs() {
	local t d
	for t in "${TARGETS[@]}"; do
		d=$(dir_of "$t")
		rm -rf --one-file-system "${d:?}"
		mkdir -p "$d" || die "cannot make '$d'"
	done
}

# fio_pair WID RID LABELW LABELR UNIT WRITEARGS -- READARGS: write on each
# target, cold, read on each target
fio_pair() {
	local wid=$1 rid=$2 group=$3 lw=$4 lr=$5 t w=() r=()
	shift 5
	while [ $# -gt 0 ] && [ "$1" != -- ]; do w+=("$1"); shift; done
	shift
	r=("$@")
	deftest "$wid" "$group" MB/s "$lw"
	deftest "$rid" "$group" MB/s "$lr"
	for t in "${TARGETS[@]}"; do fio_run "$wid" "$t" "$(dir_of "$t")/$wid.dat" "${w[@]}"; done
	cold
	for t in "${TARGETS[@]}"; do prime; fio_run "$rid" "$t" "$(dir_of "$t")/$wid.dat" "${r[@]}"; done
	clean_dirs
}

# client_pair WID RID GROUP LABELW LABELR HAVE WOP ROP FILE WARM: the same
# with clients.py, when HAVE is 1 (the client has the module it needs);
# WARM=1 adds a warm read on tensorfs
client_pair() {
	local wid=$1 rid=$2 group=$3 lw=$4 lr=$5 have=$6 wop=$7 rop=$8 f=$9 warm=${10} t
	deftest "$wid" "$group" MB/s "$lw"
	deftest "$rid" "$group" MB/s "$lr (cold)"
	[ "$warm" = 1 ] && deftest "$rid-warm" "$group" MB/s "$lr (tensorfs warm)"
	if [ "$have" != 1 ]; then
		for t in "${TARGETS[@]}"; do
			skip_run "$wid" "$t" "no python3 with the module"
			skip_run "$rid" "$t" "no python3 with the module"
		done
		if [ "$warm" = 1 ]; then
			for t in "${TFS_TARGETS[@]}"; do skip_run "$rid-warm" "$t" "no python3 with the module"; done
		fi
		return 0
	fi
	for t in "${TARGETS[@]}"; do client_run "$wid" "$t" "$wop" "$(dir_of "$t")/$f" "$SIZE"; done
	cold
	for t in "${TARGETS[@]}"; do prime; client_run "$rid" "$t" "$rop" "$(dir_of "$t")/$f" "$SIZE"; done
	if [ "$warm" = 1 ]; then
		warm
		for t in "${TFS_TARGETS[@]}"; do
			prime
			client_run "$rid-warm" "$t" "$rop" "$(dir_of "$t")/$f" "$SIZE"
		done
	fi
	clean_dirs
}

B1M=(--bs=1M --size="$SIZE")
run_once() {
	local qd t th id rr=()
	if on a; then
		for qd in "${QDS[@]}"; do
			fio_pair "a-dw-qd$qd" "a-dr-qd$qd" a \
				"O_DIRECT 1M seq write, io_uring QD$qd" \
				"O_DIRECT 1M seq read cold, io_uring QD$qd" \
				--rw=write --direct=1 --ioengine=io_uring --iodepth="$qd" "${B1M[@]}" --end_fsync=1 -- \
				--rw=read --direct=1 --ioengine=io_uring --iodepth="$qd" "${B1M[@]}"
		done
	fi
	if on b; then
		fio_pair b-bw b-br b "buffered 1M seq write + fsync" "buffered 1M seq read cold" \
			--rw=write --direct=0 --ioengine=psync "${B1M[@]}" --end_fsync=1 -- \
			--rw=read --direct=0 --ioengine=psync "${B1M[@]}"
	fi
	if on c; then
		[ -n "$RR_RUNTIME" ] && rr=(--runtime="$RR_RUNTIME")
		fio_pair c-4kw c-4kr c "buffered 4K seq write + fsync" "buffered 4K random read cold" \
			--rw=write --direct=0 --ioengine=psync --bs=4k --size="$SMALL" --end_fsync=1 -- \
			--rw=randread --direct=0 --ioengine=psync --bs=4k --size="$SMALL" "${rr[@]}"
	fi
	if on d; then
		client_pair d-mw d-mr d "mmap seq write + msync, fsync" "mmap seq read" \
			1 mmap-write mmap-read mmap.dat 0
	fi
	if on e; then
		client_pair e-npsave e-npload e "np.save + fsync" "np.load" \
			"$HAVE_NP" np-save np-load a.npy 1
		client_pair e-mmw e-mmr e "np.memmap write + flush, fsync" "np.memmap read" \
			"$HAVE_NP" memmap-write memmap-read m.bin 1
		client_pair e-tsave e-tload e "torch.save state dict + fsync" "torch.load" \
			"$HAVE_TORCH" torch-save torch-load sd.pt 1
		client_pair e-stw e-str e "safetensors layout write + fsync" "safetensors layout read (mmap)" \
			"$HAVE_NP" st-write st-read t.safetensors 1
	fi
	if on f; then
		for qd in "${DS_QDS[@]}"; do
			for th in "${DS_THREADS[@]}"; do
				id="f-qd$qd-t$th"
				deftest "$id-w" f MB/s "DeepSpeed aio write, QD$qd, $th thread(s)/file"
				deftest "$id-r" f MB/s "DeepSpeed aio read cold, QD$qd, $th thread(s)/file"
				if [ -n "$DSAIO_SKIP" ]; then
					for t in "${TARGETS[@]}"; do skip_run "$id-w" "$t" "$DSAIO_SKIP"; skip_run "$id-r" "$t" "$DSAIO_SKIP"; done
					continue
				fi
				for t in "${TARGETS[@]}"; do
					dsaio_run "$id-w" "$t" write "$(dir_of "$t")" "$DS_FILES" "$DS_BYTES" \
						--threads "$th" --queue-depth "$qd" --block-size 1M
				done
				cold
				for t in "${TARGETS[@]}"; do
					prime
					dsaio_run "$id-r" "$t" read "$(dir_of "$t")" "$DS_FILES" "$DS_BYTES" \
						--threads "$th" --queue-depth "$qd" --block-size 1M
				done
				clean_dirs
			done
		done
	fi
	if on g; then
		deftest g-create g ops/s "create $META_N files"
		deftest g-stat g ops/s "stat $META_N files (cold)"
		deftest g-unlink g ops/s "unlink $META_N files"
		for t in "${TARGETS[@]}"; do client_run g-create "$t" meta-create "$(dir_of "$t")/meta" "$META_N"; done
		cold
		for t in "${TARGETS[@]}"; do prime; client_run g-stat "$t" meta-stat "$(dir_of "$t")/meta" "$META_N"; done
		for t in "${TARGETS[@]}"; do client_run g-unlink "$t" meta-unlink "$(dir_of "$t")/meta" "$META_N"; done
		deftest g-swrite g ops/s "write $META_N files of 4 KiB"
		deftest g-sread g ops/s "read $META_N files of 4 KiB (cold)"
		for t in "${TARGETS[@]}"; do client_run g-swrite "$t" small-write "$(dir_of "$t")/small" "$META_N"; done
		cold
		for t in "${TARGETS[@]}"; do prime; client_run g-sread "$t" small-read "$(dir_of "$t")/small" "$META_N"; done
		clean_dirs
	fi
}

meta() { printf 'meta\t%s\t%s\n' "$1" "$2" >>"$MANIFEST"; }
# the commit of this tree when the run starts; the binaries of --bin are
# named apart (meta binaries: their version, checksum and build time)
COMMIT=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	COMMIT="$COMMIT (with uncommitted changes)"
fi
# seconds a GiB of fresh anonymous memory costs to touch, and to touch
# again (what a new daemon pays for its cache and pool)
first_touch() {
	python3 - <<'PY' 2>/dev/null || echo "not measured (python3 failed)"
import mmap, time
n = 256 << 20
m = mmap.mmap(-1, n)
t = time.monotonic()
for o in range(0, n, 4096):
    m[o] = 1
a = time.monotonic() - t
t = time.monotonic()
for o in range(0, n, 4096):
    m[o] = 2
b = time.monotonic() - t
print("%.2f s/GiB, touched again %.2f s/GiB" % (a * 4, b * 4))
PY
}
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta first_touch_start "$(first_touch)"
START=$(date +%s)
for REP in $(seq "$REPEAT"); do
	log "repeat $REP of $REPEAT"
	run_once
done
END=$(date +%s)
meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
meta first_touch_end "$(first_touch)"
stop_all_tensorfs
for t in "${TFS_TARGETS[@]}"; do
	if grep -i -E 'error|warn' "$WORK/$t.log" >&2; then
		log "warning: the daemon of $t logged the lines above"
	fi
done

# ===== report =====

# the memory bound: cache + pool + 64 MiB + per-file metadata, from the
# mount's effective configuration
BOUND=$(mem_bound "$WORK/tfs.config" "$META_N")
meta hwm_bound_kb "${BOUND%%	*}"
meta hwm_bound_text "${BOUND#*	}"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta commit "$COMMIT"
# what ran: the script's tree (above) need not be what --bin was built from
meta binaries "${BIN#"$top"/}/tensorfs: $("$BIN/tensorfs" --version 2>/dev/null | head -n 1), sha256 $(sha256sum <"$BIN/tensorfs" | cut -c1-12), built $(date -u -r "$BIN/tensorfs" '+%Y-%m-%d %H:%M UTC')"
meta kernel "$(uname -srm)"
meta cpus "$(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
meta disk "$(findmnt -n -o SOURCE,FSTYPE --target "$WORK" | head -n 1 | tr -s ' ') under $PARENT$([ "$TMPFS" = 1 ] && echo " (--tmpfs: every backing in RAM)")"
meta ext4 "$LOOPDEV, dio=$LOOP_DIO"
mounts=""
for t in "${TFS_TARGETS[@]}"; do mounts="$mounts; $t: $(tfs_cmd "$t")"; done
meta tensorfs_mount "${mounts#; }"
meta transports "$TRANSPORTS_TEXT"
meta fio "$(fio --version)"
meta python "$PY_CLIENT (numpy $HAVE_NP, torch $HAVE_TORCH)"
meta sizes "files $SIZE B (a b d e), $SMALL B (c), f $DS_FILES x $DS_BYTES B, g $META_N files; repeat $REPEAT$([ "$QUICK" = 1 ] && echo ", --quick")$([ "$PRIME_MIB" -gt 0 ] && echo ", --prime $PRIME_MIB MiB before each read")$([ "$TMPFS" = 1 ] && echo ", --tmpfs")"
meta repeat "$REPEAT"
meta elapsed_s "$((END - START))"
meta cpu_accounting "client utime+stime (getrusage) + tensorfs daemon utime+stime (/proc/PID/stat, all threads) + all kernel threads' utime+stime (/proc/*/stat of kthreadd's children: kworkers, which do the loop device's work, jbd2, flushers), over each run"

awk '!seen[$0]++' "$WORK/commands.txt" >"$OUT/commands.txt" 2>/dev/null
"$PY" "$helpers/report.py" "$MANIFEST" "$OUT" || die "cannot build the report from the runs in '$RES'"
if [ -n "$GNUPLOT" ]; then
	"$GNUPLOT" -e "datafile='$OUT/ratios.dat'; outfile='$OUT/ratios.png'; ncols=$((1 + 2 * NT)); subtitle='$COMMIT, $(date -u +%Y-%m-%d), load $(cut -d' ' -f1 /proc/loadavg)'" \
		"$helpers/ratios.gp" 2>"$WORK/gnuplot.log" ||
		{ cat "$WORK/gnuplot.log" >&2; die "gnuplot failed"; }
fi
log "results in $OUT (results.json, table.txt${GNUPLOT:+, ratios.png})"
exit 0
