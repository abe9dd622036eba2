#!/bin/bash
# NAME
#   sets.sh - several drives per mount: a tensorfs set of N members
#   against N raw files at once
#
# SYNOPSIS
#   sudo tools/bench/sets.sh [--tmpfs | --dir DIR] [--members LIST]
#                            [--size SIZE] [--repeat N] [OPTIONS]
#
# DESCRIPTION
#   For each repeat, for each N of --members in turn (the runs interleave,
#   so a disk that changes speed moves all of them alike):
#     raw    N files in the backing directory, one fio job each, all at
#            once (one fio, group_reporting: the aggregate): sequential
#            write of SIZE each (end_fsync=1), then read.
#     fuse   with --tmpfs: the same N files written through libfuse's
#            passthrough_ll example (Debian's libfuse3-dev ships its
#            source; built here with cc, over /dev/fuse, as it comes):
#            the same fio write, and the ds pattern's write.  The
#            thinnest FUSE daemon there is: what any FUSE file system
#            pays over the raw files at RAM speed (a copy into the
#            daemon's buffer, a round trip per request).  Writes only:
#            its reads read into a buffer allocated per request, slower
#            than a file system need be; and not on a disk, where its
#            O_DIRECT writes from an unaligned buffer fail (EINVAL).
#            Skipped, with a warning, without the source or a compiler.
#     large  on a set of N images, allocated whole first (fallocate: a
#            drive's blocks need no allocation; fio allocates the raw
#            files before it starts), mkfs.tensorfs -f IMG1 ... IMGN;
#            tensorfs -f IMG1:...:IMGN MNT): one file of N x SIZE, one fio
#            job at queue depth 8 x N: write (end_fsync=1), remount, read.
#     many   N fio jobs, each writing 16 files of its own one after
#            another (SIZE / 16 each), then remount and read them.
#     ds     largest N only: DeepSpeed's swap pattern (dsaio, from
#            tests/integration/dsaio.c: libaio, O_DIRECT, 1 MiB requests,
#            one thread, queue depth 8 x N, no fsync), 8 files of 256 MiB
#            written then read, on the raw directory and (remounting
#            between) on the set.
#   fio: O_DIRECT, 1 MiB, ioengine=io_uring, QD8 per file or member,
#   fio's default preallocation (as tools/bench.sh).  Every mount first
#   writes a --warm file (end_fsync=1) and removes it: on some virtual
#   machines the daemon's fresh memory costs seconds per GiB on first
#   touch (tools/bench/profiles/sets-first-look.txt).  Reads follow a new
#   mount, so the daemon's cache does not hold the file; O_DIRECT keeps
#   the kernel's page cache out.
#
#   Each run: bytes, wall seconds, MB/s (10^6 bytes/s: fio's aggregate
#   bandwidth, end_fsync included; dsaio's own MiB/s); on tensorfs also
#   the daemon's CPU seconds over the run (utime + stime of all threads,
#   /proc/PID/stat), hence CPU s/GB (10^9 bytes) and GB/s per daemon core
#   (GB / daemon CPU s), and each member's du after the run, to show the
#   striping (freed blocks are not discarded: du counts them too).
#
# OPTIONS
#   --tmpfs          images, raw files and mount point in /dev/shm
#   --dir DIR        make the backing directory under DIR (default
#                    /var/tmp: the disk); not with --tmpfs
#   --members LIST   set sizes to measure (default 1,2,4)
#   --size SIZE      bytes per member (per raw file) per test, a multiple
#                    of 16M; K, M, G: powers of 1024 (default 1G)
#   --repeat N       repeats (default 3)
#   --warm SIZE      written and removed on every mount (default 3G; 0: no)
#   --bin DIR        tensorfs, mkfs.tensorfs (default build/rel/bin)
#   --testbin DIR    dsaio (default build/rel/testbin; else ds is skipped)
#   --transport dev|uring
#                    uring: FUSE over io_uring (-o io_uring=on), default
#                    when /sys/module/fuse/parameters/enable_uring exists
#                    (set to Y for the run, restored at exit); dev:
#                    /dev/fuse (-o io_uring=off)
#   --out DIR        results (default a new /tmp/sets-DATE-XXXX)
#   --quick          smoke test: --size 32M, --warm 64M, ds 8 x 4 MiB, one
#                    repeat (unless given); its figures mean nothing
#   -h, --help       this text
#
# OUTPUT
#   In --out: results.json (an object per run: repeat, members, target
#   raw|tensorfs, test, rw, bytes, wall_s, mb_s, daemon_cpu_s, and
#   member_bytes); table.txt (also printed: per N, test and rw, median
#   (min-max) MB/s of raw and tensorfs, their ratio, the fuse run's
#   ratio to raw, median CPU s/GB and GB/s per tensorfs daemon core); meta.txt (date, kernel, CPUs, load at start
#   and end, git describe, backing file system, transport, command line);
#   runs/ (fio JSON, dsaio, tensorfs and warm-up output); progress.log.
#
# REQUIREMENTS
#   root, fio, python3 (stdlib), fusermount3, findmnt; Linux 6.6+ for
#   --tmpfs.  It refuses to start without room for the largest set (N
#   images of max(SIZE, ds/N) + warm/N, + 25% + 512 MiB each) or
#   the raw files, or without 5 GiB of memory (the daemon 4, 1 spare;
#   with --tmpfs plus the backing).  Every exit, a failure or Ctrl-C
#   included, unmounts, stops the daemon, removes images and raw files
#   and restores enable_uring.  Exit: 0 done, 1 failure, 2 usage error.
#
# EXAMPLES
#   sudo tools/bench/sets.sh --quick --tmpfs --members 1,2
#   sudo tools/bench/sets.sh --dir /mnt/nvme --members 1,2,4 --size 2G

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=sets.sh
MIB=$((1024 * 1024))
OUT="" RUNS=""

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; }
usage_error() { printf '%s: %s\nTry "%s --help".\n' "$prog" "$1" "$0" >&2; exit 2; }
log() { # to stderr, and to progress.log once there is one
	local l="$prog: [${SECONDS}s] $*"
	printf '%s\n' "$l" >&2
	[ -z "$RUNS" ] || printf '%s\n' "$l" >>"$OUT/progress.log"
}
die() { log "error: $*"; exit 1; }
size_of() { # TEXT: bytes (K, M, G: powers of 1024), or fail
	[[ $1 =~ ^([0-9]{1,12})([KMG]?)(i?B)?$ ]] || return 1
	local m=1
	case ${BASH_REMATCH[2]} in K) m=1024 ;; M) m=$MIB ;; G) m=$((1024 * MIB)) ;; esac
	echo $((BASH_REMATCH[1] * m))
}

# ===== arguments =====
TMPFS=0 PARENT="" MEMBERS=1,2,4 SIZE_ARG="" REPEAT="" WARM_ARG="" QUICK=0 TRANSPORT=""
BIN=$top/build/rel/bin TESTBIN=$top/build/rel/testbin
CMDLINE="$0$(printf ' %q' "$@")"
while [ $# -gt 0 ]; do
	case $1 in
	--tmpfs) TMPFS=1; shift; continue ;;
	--quick) QUICK=1; shift; continue ;;
	-h|--help) usage; exit 0 ;;
	--dir|--members|--size|--repeat|--warm|--bin|--testbin|--transport|--out)
		[ $# -ge 2 ] || usage_error "$1 needs a value" ;;
	*) usage_error "unknown argument '$1'" ;;
	esac
	case $1 in
	--dir) PARENT=$2 ;; --members) MEMBERS=$2 ;; --size) SIZE_ARG=$2 ;;
	--repeat) REPEAT=$2 ;; --warm) WARM_ARG=$2 ;; --bin) BIN=$2 ;;
	--testbin) TESTBIN=$2 ;; --transport) TRANSPORT=$2 ;; --out) OUT=$2 ;;
	esac
	shift 2
done
[ "$TMPFS" = 0 ] || [ -z "$PARENT" ] || usage_error "--tmpfs and --dir exclude each other"
[ "$TMPFS" = 0 ] || PARENT=/dev/shm
: "${PARENT:=/var/tmp}"
if [ "$QUICK" = 1 ]; then
	: "${SIZE_ARG:=32M}" "${WARM_ARG:=64M}" "${REPEAT:=1}"; DS_FILES=8 DS_BYTES=$((4 * MIB))
else
	: "${SIZE_ARG:=1G}" "${WARM_ARG:=3G}" "${REPEAT:=3}"; DS_FILES=8 DS_BYTES=$((256 * MIB))
fi
DS_TOTAL=$((DS_FILES * DS_BYTES))
SIZE=$(size_of "$SIZE_ARG") || usage_error "invalid --size '$SIZE_ARG' (e.g. 1G, 512M)"
if [ "$SIZE" -lt $((16 * MIB)) ] || [ $((SIZE % (16 * MIB))) != 0 ]; then
	usage_error "--size must be a multiple of 16M (16 files of whole MiBs), not '$SIZE_ARG'"
fi
WARM=$(size_of "$WARM_ARG") || usage_error "invalid --warm '$WARM_ARG' (e.g. 3G, 0)"
[ $((WARM % MIB)) = 0 ] || usage_error "--warm must be a whole number of MiB"
[[ $REPEAT =~ ^[1-9][0-9]{0,2}$ ]] || usage_error "--repeat must be a number from 1 to 999"
[[ $MEMBERS =~ ^[1-9][0-9]?(,[1-9][0-9]?)*$ ]] || usage_error "--members must be like 1,2,4, not '$MEMBERS'"
IFS=, read -r -a NLIST <<<"$MEMBERS"
NMAX=0
for n in "${NLIST[@]}"; do
	[ "$n" -le 64 ] || usage_error "a set has at most 64 members, not $n"
	[ "$n" -le "$NMAX" ] || NMAX=$n
done
URING_PARAM=/sys/module/fuse/parameters/enable_uring
[ -n "$TRANSPORT" ] || { TRANSPORT=dev; [ ! -e "$URING_PARAM" ] || TRANSPORT=uring; }
case $TRANSPORT in uring) IOU=on ;; dev) IOU=off ;;
*) usage_error "--transport must be dev or uring, not '$TRANSPORT'" ;; esac

# ===== what it needs =====
[ "$(id -u)" = 0 ] || die "run it as root (it mounts, and sets $URING_PARAM)"
for c in fio python3 fusermount3 findmnt mountpoint; do
	command -v "$c" >/dev/null || die "'$c' is missing (tools/install-deps.sh installs it)"
done
TENSORFS=$BIN/tensorfs MKFS=$BIN/mkfs.tensorfs DSAIO=$TESTBIN/dsaio DS_SKIP=""
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c PT_SKIP=""
[ "$TMPFS" = 1 ] || PT_SKIP="not without --tmpfs"
[ -n "$PT_SKIP" ] || [ -r "$PT_SRC" ] || PT_SKIP="no $PT_SRC (apt-get install libfuse3-dev)"
[ -n "$PT_SKIP" ] || command -v cc >/dev/null || PT_SKIP="no C compiler (cc)"
[ -x "$TENSORFS" ] || die "no tensorfs in '$BIN' (build the tree, or give --bin)"
[ -x "$MKFS" ] || die "no mkfs.tensorfs in '$BIN' (build the tree, or give --bin)"
[ -x "$DSAIO" ] || DS_SKIP="no dsaio in '$TESTBIN' (build the tree, or give --testbin)"
[ -d "$PARENT" ] || die "'$PARENT' is not a directory"
[ "$TRANSPORT" = dev ] || [ -e "$URING_PARAM" ] ||
	die "--transport uring: no $URING_PARAM (this kernel has no FUSE over io_uring); use --transport dev"

member_bytes() { # N: the size (-s) of each image of a set of N
	local d=$((DS_TOTAL / $1)) b
	[ "$d" -gt "$SIZE" ] || d=$SIZE
	b=$(((d + (WARM + $1 - 1) / $1) * 5 / 4 + 512 * MIB))
	echo $(((b + MIB - 1) / MIB * MIB))
}
# the images are allocated whole; raw files and a set never coexist
NEED=$((NMAX * SIZE > DS_TOTAL ? NMAX * SIZE : DS_TOTAL))
for n in "${NLIST[@]}"; do
	b=$((n * $(member_bytes "$n")))
	[ "$b" -le "$NEED" ] || NEED=$b
done
NEED_MIB=$((NEED / MIB + 256))
FREE_MIB=$(($(df -B1 --output=avail "$PARENT" | tail -1) / MIB))
[ "$FREE_MIB" -ge "$NEED_MIB" ] ||
	die "'$PARENT' has $FREE_MIB MiB free; this run can use $NEED_MIB MiB (the largest set's images: $(($(member_bytes "$NMAX") / MIB)) MiB each): lower --size, --warm or --members"
MEM_MIB=$((5 * 1024 + TMPFS * NEED_MIB))
AVAIL_MEM=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
[ "${AVAIL_MEM:-0}" -ge "$MEM_MIB" ] ||
	die "${AVAIL_MEM:-?} MiB of memory available; this run needs $MEM_MIB MiB (4 GiB for the daemon, 1 GiB spare, with --tmpfs the backing): lower --size, --warm or --members"

# ===== the work directory, the results, the clean-up =====
[ -n "$OUT" ] || OUT=$(mktemp -d "/tmp/sets-$(date +%Y%m%d-%H%M%S)-XXXX") || die "cannot make a directory in /tmp"
mkdir -p "$OUT/runs" || die "cannot make '$OUT/runs'"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "$PARENT/tfs-sets.XXXXXX") || die "cannot make a directory in '$PARENT'"
MNT=$WORK/mnt RAW=$WORK/raw PT=$WORK/pt RUNS=$OUT/runs.tsv
CHILD="" DPID="" URING_OLD="" REPORTED=0
: >"$RUNS"
mkdir -p "$MNT" "$RAW" "$PT"

cleanup() {
	local rc=$? i
	trap '' INT TERM
	[ -z "$CHILD" ] || ! kill -0 "$CHILD" 2>/dev/null || { kill -TERM "$CHILD"; wait "$CHILD"; }
	for i in "$MNT" "$PT"; do
		! mountpoint -q "$i" || fusermount3 -u "$i" || { sleep 1; fusermount3 -u "$i"; } ||
			{ log "fusermount3 -u failed: umount -l $i"; umount -l "$i"; }
	done
	if [ -n "$DPID" ]; then # it exits once it has written everything
		for i in $(seq 600); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		kill -TERM "$DPID" 2>/dev/null && sleep 2 && kill -KILL "$DPID" 2>/dev/null
		wait "$DPID"
	fi
	rm -rf --one-file-system "$WORK"
	[ -z "$URING_OLD" ] || echo "$URING_OLD" >"$URING_PARAM" || log "warning: cannot restore $URING_PARAM to $URING_OLD"
	printf 'load at end: %s\nend: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u '+%F %T UTC')" >>"$OUT/meta.txt"
	[ "$REPORTED" = 1 ] || [ ! -s "$RUNS" ] || { log "stopped early: the table has the runs done"; report; }
	log "results in $OUT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$TRANSPORT" = uring ] && [ "$(cat "$URING_PARAM")" != Y ]; then
	URING_OLD=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM" || { URING_OLD=""; die "cannot set $URING_PARAM to Y"; }
fi
cat >"$OUT/meta.txt" <<META
date: $(date -u '+%F %T UTC')
command: $CMDLINE
kernel: $(uname -r)
cpus: $(nproc)
load at start: $(cut -d' ' -f1-3 /proc/loadavg)
git: $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?')
tensorfs: $("$TENSORFS" -V 2>&1 | head -1)
fio: $(fio --version)
backing: $(findmnt -n -o TARGET,SOURCE,FSTYPE,OPTIONS -T "$WORK" | head -1)
transport: $TRANSPORT (tensorfs -o io_uring=$IOU; enable_uring $(cat "$URING_PARAM" 2>/dev/null || echo absent))
members: $MEMBERS; per member per test: $SIZE bytes; warm-up: $WARM bytes; repeats: $REPEAT
ds: $DS_FILES files x $DS_BYTES bytes, on $NMAX members${DS_SKIP:+ (skipped: $DS_SKIP)}
fuse: ${PT_SKIP:-$PT_SRC, $(dpkg-query -W -f '${Package} ${Version}' libfuse3-dev 2>/dev/null), over /dev/fuse}
META
log "backing directory $WORK, results in $OUT"
[ -z "$DS_SKIP" ] || log "warning: ds skipped: $DS_SKIP"
if [ -z "$PT_SKIP" ]; then
	PT_BIN=$OUT/passthrough_ll
	read -r -a PT_FLAGS < <(pkg-config --cflags --libs fuse3 2>/dev/null)
	cc -O2 -o "$PT_BIN" "$PT_SRC" "${PT_FLAGS[@]}" >"$OUT/runs/passthrough_ll.cc.log" 2>&1 ||
		PT_SKIP="passthrough_ll did not build (see $OUT/runs/passthrough_ll.cc.log)"
fi
[ -z "$PT_SKIP" ] || [ "$TMPFS" = 0 ] || log "warning: fuse skipped: $PT_SKIP"

# ===== measuring =====
CLK=$(getconf CLK_TCK)
ticks() { # PID: utime + stime in ticks (fields 14, 15; the comm may hold spaces)
	local s f
	s=$(<"/proc/$1/stat") || return 1
	read -r -a f <<<"${s##*) }"
	echo $((f[11] + f[12]))
}
# measured LOG CMD...: CMD, its output to LOG, in the background (a signal
# then stops the script at once, and the trap runs with the script's own
# output), timed, with the daemon's CPU when one is up: sets WALL, CPU
measured() {
	local log=$1 t0 t1 c0="" c1 rc
	shift
	[ -z "$DPID" ] || c0=$(ticks "$DPID")
	t0=$EPOCHREALTIME
	"$@" >"$log" 2>&1 &
	CHILD=$!
	wait "$CHILD"; rc=$?
	t1=$EPOCHREALTIME CHILD=""
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') CPU=null
	if [ -n "$c0" ]; then
		c1=$(ticks "$DPID") || die "the tensorfs daemon died during: $*"
		CPU=$(awk -v t=$((c1 - c0)) -v h="$CLK" 'BEGIN { printf "%.2f", t / h }')
	fi
	return $rc
}
record() { # REP N TARGET TEST RW: the last run, a line of runs.tsv
	local du=-
	[ "$3" != tensorfs ] || du=$(du -B1 "${IMGS[@]}" | cut -f1 | paste -sd,)
	printf '%s\t' "$@" "$BYTES" "$MBS" "$WALL" "$CPU" >>"$RUNS"
	printf '%s\n' "$du" >>"$RUNS"
	log "  $3 N=$2 $4 $5: $MBS MB/s, $WALL s, daemon CPU $CPU s"
}
fio_run() { # ID ARGS...: fio, O_DIRECT 1 MiB io_uring; sets BYTES, MBS
	local id=$1 j=$OUT/runs/$1.fio.json
	shift
	measured "$OUT/runs/$id.log" fio --ioengine=io_uring --direct=1 --bs=1M \
		--clocksource=clock_gettime --group_reporting --output-format=json --output="$j" "$@" ||
		{ cat "$OUT/runs/$id.log" >&2; die "fio failed ($id): fio $*"; }
	MBS=""
	read -r BYTES MBS < <(python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
k = "write" if j["write"]["io_bytes"] else "read"
print(j[k]["io_bytes"], "%.0f" % (j[k]["bw_bytes"] / 1e6))' "$j")
	[ -n "$MBS" ] || die "no figures in $j"
}
ds_run() { # ID write|read DIR N: dsaio; sets BYTES, MBS (from its MiB/s)
	local l=$OUT/runs/$1.dsaio.log
	measured "$l" "$DSAIO" "$2" "$3" "$DS_FILES" "$DS_BYTES" --threads 1 \
		--queue-depth $((8 * $4)) --block-size 1M || { cat "$l" >&2; die "dsaio failed ($1): see $l"; }
	BYTES=$DS_TOTAL
	MBS=$(sed -n 's/.* \([0-9.]*\) MiB\/s;.*/\1/p' "$l" | awk '{ printf "%.0f", $1 * 1.048576 }')
	[ -n "$MBS" ] || die "no MiB/s in $l"
}

# ===== the set: mount (and warm up), unmount =====
MOUNTS=0
wait_mounted() { # DIR LOG WHAT: wait for the daemon DPID to mount DIR
	local i
	for i in $(seq 200); do
		mountpoint -q "$1" && return 0
		if ! kill -0 "$DPID" 2>/dev/null; then
			wait "$DPID"; DPID=""; cat "$2" >&2
			die "$3 exited before mounting $1 (its output: $2)"
		fi
		sleep 0.05
	done
	die "$3 did not mount $1 within 10 s"
}
mount_set() { # ID: mount IMGS on MNT (tensorfs -f in the background)
	local said spec
	spec=$(IFS=:; echo "${IMGS[*]}")
	MOUNTS=$((MOUNTS + 1))
	"$TENSORFS" -f -o "io_uring=$IOU" "$spec" "$MNT" >>"$OUT/runs/$1.tensorfs.log" 2>&1 &
	DPID=$!
	wait_mounted "$MNT" "$OUT/runs/$1.tensorfs.log" "$TENSORFS -f -o io_uring=$IOU $spec"
	[ "$(cat "/proc/$DPID/comm")" = tensorfs ] || die "pid $DPID is not the tensorfs daemon"
	said=$(awk '$1 == "fuse_io_uring" { print $2 == 1 ? "on" : "off" }' "$MNT/.tensorfs/stats")
	[ "$said" = "$IOU" ] || die "the mount says fuse_io_uring ${said:-?}, not io_uring=$IOU"
	[ "$WARM" -gt 0 ] || return 0
	measured "$OUT/runs/$1.warm$MOUNTS.log" fio --name=warm --filename="$MNT/warm" \
		--rw=write --size="$WARM" --ioengine=io_uring --direct=1 --bs=1M \
		--iodepth=$((8 * N)) --end_fsync=1 --clocksource=clock_gettime ||
		die "the warm-up write failed: see $OUT/runs/$1.warm$MOUNTS.log"
	rm -f "$MNT/warm"
	log "  warm-up of $((WARM / MIB)) MiB: $WALL s, daemon CPU $CPU s"
}
umount_set() { # and wait for the daemon, which exits once all is written
	local i
	fusermount3 -u "$MNT" || { sleep 1; fusermount3 -u "$MNT"; } || die "cannot unmount $MNT"
	for i in $(seq 1200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$DPID" 2>/dev/null && die "the daemon (pid $DPID) has not exited 60 s after its unmount"
	wait "$DPID" || die "the daemon exited with status $? (see $OUT/runs/*.tensorfs.log)"
	DPID=""
}
remount() { umount_set; mount_set "$1"; }

# ===== one repeat of one N =====
raw_runs() { # REP N
	local id=r$1-n$2-raw a=(--name=raw --directory="$RAW" --numjobs="$2" --size="$SIZE" --iodepth=8)
	fio_run "$id-w" "${a[@]}" --rw=write --end_fsync=1; record "$1" "$2" raw files write
	fio_run "$id-r" "${a[@]}" --rw=read; record "$1" "$2" raw files read
	rm -rf "${RAW:?}"/*
	[ "$2" = "$NMAX" ] && [ -z "$DS_SKIP" ] || return 0
	ds_run "$id-ds-w" write "$RAW" "$2"; record "$1" "$2" raw ds write
	ds_run "$id-ds-r" read "$RAW" "$2"; record "$1" "$2" raw ds read
	rm -rf "${RAW:?}"/*
}
pt_runs() { # REP N: raw_runs's writes through passthrough_ll over RAW
	local id=r$1-n$2-fuse a=(--name=fuse --directory="$PT" --numjobs="$2" --size="$SIZE" --iodepth=8)
	[ -z "$PT_SKIP" ] || return 0
	"$PT_BIN" -f -o source="$RAW" "$PT" >"$OUT/runs/$id.log" 2>&1 &
	DPID=$!
	wait_mounted "$PT" "$OUT/runs/$id.log" "passthrough_ll"
	fio_run "$id-w" "${a[@]}" --rw=write --end_fsync=1; record "$1" "$2" fuse files write
	rm -rf "${PT:?}"/*
	if [ "$2" = "$NMAX" ] && [ -z "$DS_SKIP" ]; then
		ds_run "$id-ds-w" write "$PT" "$2"; record "$1" "$2" fuse ds write
		rm -rf "${PT:?}"/*
	fi
	fusermount3 -u "$PT" || die "cannot unmount $PT"
	wait "$DPID"
	DPID=""
}
tfs_pair() { # REP ID TEST FIO-ARGS...: write, remount, read, on the set
	local r=$1 id=$2 t=$3
	shift 3
	fio_run "$id-$t-w" --name="$t" "$@" --rw=write --end_fsync=1; record "$r" "$N" tensorfs "$t" write
	remount "$id"
	fio_run "$id-$t-r" --name="$t" "$@" --rw=read; record "$r" "$N" tensorfs "$t" read
}
tfs_runs() { # REP N
	local r=$1 i id=r$1-n$2-tfs
	N=$2 IMGS=()
	for i in $(seq "$N"); do IMGS+=("$WORK/m$i.img"); done
	# allocated whole, as a drive's blocks are (and as fio allocates the
	# raw files before it starts): a sparse image would pay the backing
	# file system's allocation of each block on its first write, in the
	# daemon's time (on tmpfs a page cleared, ~1 GB/s on some VMs)
	for i in "${IMGS[@]}"; do
		fallocate -l "$(member_bytes "$N")" "$i" || die "cannot allocate $(member_bytes "$N") bytes for '$i'"
	done
	"$MKFS" -q -f -s "$(member_bytes "$N")" "${IMGS[@]}" >"$OUT/runs/$id.mkfs.log" 2>&1 ||
		{ cat "$OUT/runs/$id.mkfs.log" >&2; die "mkfs.tensorfs -q -f -s $(member_bytes "$N") ${IMGS[*]} failed"; }
	mount_set "$id"
	tfs_pair "$r" "$id" large --filename="$MNT/large" --size=$((N * SIZE)) --iodepth=$((8 * N))
	rm -f "$MNT/large"
	mkdir "$MNT/many"
	tfs_pair "$r" "$id" many --directory="$MNT/many" --numjobs="$N" --nrfiles=16 \
		--file_service_type=sequential --size="$SIZE" --iodepth=8
	rm -rf "$MNT/many"
	if [ "$N" = "$NMAX" ] && [ -z "$DS_SKIP" ]; then
		mkdir "$MNT/ds"
		ds_run "$id-ds-w" write "$MNT/ds" "$N"; record "$r" "$N" tensorfs ds write
		remount "$id"
		ds_run "$id-ds-r" read "$MNT/ds" "$N"; record "$r" "$N" tensorfs ds read
	fi
	umount_set
	rm -f "${IMGS[@]}"
}

# ===== the report: results.json, table.txt =====
report() {
	REPORTED=1
	python3 - "$RUNS" "$OUT/results.json" <<'PY' | tee "$OUT/table.txt"
import json, statistics as st, sys
runs = []
for line in open(sys.argv[1]):
    r, n, t, test, rw, b, mbs, wall, cpu, du = line.rstrip("\n").split("\t")
    o = dict(repeat=int(r), members=int(n), target=t, test=test, rw=rw, bytes=int(b), wall_s=float(wall),
             mb_s=float(mbs), daemon_cpu_s=None if cpu == "null" else float(cpu))
    if du != "-":
        o["member_bytes"] = [int(x) for x in du.split(",")]
    runs.append(o)
json.dump(runs, open(sys.argv[2], "w"), indent=1)
def sel(t, n, test, rw):
    return [o for o in runs if (o["target"], o["members"], o["test"], o["rw"]) == (t, n, test, rw)]
def mmm(v):
    return "%.0f (%.0f-%.0f)" % (st.median(v), min(v), max(v)) if v else "-"
def med(v):
    return "%.2f" % st.median(v) if v else "-"
fmt = "%-3s %-6s %-6s %-22s %-22s %6s %6s %9s %9s"
print(fmt % ("N", "test", "rw", "raw MB/s", "tensorfs MB/s", "x raw", "fuse", "CPU s/GB", "GB/s/core"))
keys = {(o["members"], t, o["rw"]) for o in runs for t in ([o["test"]] if o["test"] != "files" else ["large", "many"])}
for n, test, rw in sorted(keys, key=lambda k: (k[0], ["large", "many", "ds"].index(k[1]), k[2] == "read")):
    tf = sel("tensorfs", n, test, rw)
    raw = [o["mb_s"] for o in sel("raw", n, "ds" if test == "ds" else "files", rw)]
    v = [o["mb_s"] for o in tf]
    x = [st.median(v) / st.median(raw)] if v and raw and st.median(raw) else []
    pt = [o["mb_s"] for o in sel("fuse", n, "ds" if test == "ds" else "files", rw)]
    ptx = [st.median(pt) / st.median(raw)] if pt and raw and st.median(raw) else []
    cpu = [o["daemon_cpu_s"] / (o["bytes"] / 1e9) for o in tf if o["daemon_cpu_s"] is not None]
    core = [o["bytes"] / 1e9 / o["daemon_cpu_s"] for o in tf if o["daemon_cpu_s"]]
    print(fmt % (n, test, rw, mmm(raw), mmm(v), med(x), med(ptx), med(cpu), med(core)))
print("""
raw: N files at once, one fio job each (ds rows: dsaio on the raw directory).
x raw: tensorfs median / raw median.  MB/s: 10^6 bytes/s, median (min-max).
fuse (--tmpfs): the raw writes through libfuse's passthrough_ll, its median / raw.
CPU s/GB, GB/s/core: the tensorfs daemon's utime + stime; medians.
Each member's du (MiB) after the last run on each set:""")
for n in sorted({o["members"] for o in runs if "member_bytes" in o}):
    o = [o for o in runs if o["members"] == n and "member_bytes" in o][-1]
    print("  N=%d, after %s %s: %s" % (n, o["test"], o["rw"], " ".join(str(b >> 20) for b in o["member_bytes"])))
PY
}

# ===== the runs =====
log "members $MEMBERS, $((SIZE / MIB)) MiB per member per test, warm-up $((WARM / MIB)) MiB, $REPEAT repeat(s), transport $TRANSPORT"
for rep in $(seq "$REPEAT"); do
	for n in "${NLIST[@]}"; do
		log "repeat $rep, $n member(s): raw"
		raw_runs "$rep" "$n"
		[ -n "$PT_SKIP" ] || log "repeat $rep, $n member(s): the raw files through passthrough_ll"
		pt_runs "$rep" "$n"
		log "repeat $rep, $n member(s): tensorfs"
		tfs_runs "$rep" "$n"
	done
done
report
