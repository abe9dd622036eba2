#!/bin/bash
# NAME
#   clone.sh - copies inside a mount: clones (format 4) against tensorfs's
#   copy in the daemon (format 3) and cp on the backing file system
#
# SYNOPSIS
#   sudo tools/bench/clone.sh [--dir DIR] [--sizes LIST] [--repeat N]
#                             [--bin DIR] [--out DIR]
#
# DESCRIPTION
#   For each size S (GiB) of --sizes (default 1,10), a file of S GiB is
#   written once on each of three targets in DIR (default
#   /var/tmp/tfs-clone-bench; its file system is the "host" row, ext4 on
#   this machine's disk):
#     host      a directory of DIR
#     tfs4      a tensorfs image of format 4 in DIR, mounted: cp clones
#     tfs3      the same image made format 3 (the superblocks' version
#               number changed): cp copies in the daemon
#   Then, --repeat times (default 3), interleaved: the kernel's caches
#   dropped, `cp SRC DST` timed on each, the space it took (df's used
#   blocks before and after, synced), the daemon's CPU seconds (utime +
#   stime of its threads from /proc/PID/stat) on tensorfs, then DST
#   removed.  After that, on tfs4, the first writes into a fresh clone
#   against the same writes into a file nobody shares: 1 GiB of 1 MiB
#   O_DIRECT writes (dd oflag=direct conv=notrunc,fsync), and 2000
#   writes of 100 bytes at 1000 bytes into random blocks of the first
#   GiB (a clone's block is read and written first), then fsync, timed.
#
#   The figures go to OUT/table.txt (default ./bench-clone), with the
#   commands, the binaries' build time and the load before and after.
#   Needs root (drop_caches, FUSE), python3, dd.
set -u
DIR=/var/tmp/tfs-clone-bench
SIZES=1,10
REPEAT=3
BIN=build/rel/bin
OUT=bench-clone
while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--bin) BIN=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "clone.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "clone.sh: needs root (drop_caches, FUSE)" >&2; exit 1; }
for p in tensorfs mkfs.tensorfs; do
	[ -x "$BIN/$p" ] || { echo "clone.sh: no $BIN/$p; build first (cmake --build build/rel)" >&2; exit 1; }
done
mkdir -p "$OUT" "$DIR" || exit 1
T="$OUT/table.txt"
: >"$T"
say() { echo "$*" | tee -a "$T"; }
MNT4="$DIR/m4" MNT3="$DIR/m3"
cleanup() {
	for m in "$MNT4" "$MNT3"; do mountpoint -q "$m" && fusermount3 -u "$m"; done
	rm -rf "${DIR:?}/host" "$DIR"/img4 "$DIR"/img3 "$DIR/chunk"
}
trap cleanup EXIT
say "# clone.sh $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
say "# binaries: $BIN, built $(date -u -r "$BIN/tensorfs" '+%Y-%m-%d %H:%M UTC'); DIR $DIR on $(findmnt -no FSTYPE -T "$DIR")"
say "# $0 --dir $DIR --sizes $SIZES --repeat $REPEAT --bin $BIN --out $OUT"

# make_v3 IMG: the superblock copies' version 4 -> 3, CRC-32C redone
make_v3() {
	python3 - "$1" <<'PY'
import struct, sys
def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return c ^ 0xffffffff
with open(sys.argv[1], "r+b") as f:
    for off in (0, 4096):
        f.seek(off)
        b = bytearray(f.read(4096))
        if b[:8] != b"tensorfs" or struct.unpack_from("<I", b, 8)[0] != 4:
            continue
        struct.pack_into("<I", b, 8, 3)
        struct.pack_into("<I", b, 4092, crc32c(b[:4092]))
        f.seek(off)
        f.write(b)
PY
}
daemon_cpu() { # PID: utime + stime in seconds
	awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}
used_kib() { sync -f "$1"; df -k --output=used "$1" | tail -1; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

head -c $((1 << 30)) /dev/urandom >"$DIR/chunk" || exit 1
IFS=, read -r -a sizes <<<"$SIZES"
for s in "${sizes[@]}"; do
	img=$((2 * s + 2))
	"$BIN/mkfs.tensorfs" -q -f -s "${img}G" "$DIR/img4" || exit 1
	"$BIN/mkfs.tensorfs" -q -f -s "${img}G" "$DIR/img3" || exit 1
	make_v3 "$DIR/img3"
	mkdir -p "$MNT4" "$MNT3" "$DIR/host"
	"$BIN/tensorfs" -f "$DIR/img4" "$MNT4" 2>>"$OUT/daemon.log" & P4=$!
	"$BIN/tensorfs" -f "$DIR/img3" "$MNT3" 2>>"$OUT/daemon.log" & P3=$!
	for _ in $(seq 200); do mountpoint -q "$MNT4" && mountpoint -q "$MNT3" && break; sleep 0.1; done
	for d in "$DIR/host" "$MNT4" "$MNT3"; do
		for _ in $(seq "$s"); do cat "$DIR/chunk"; done >"$d/src" || exit 1
		sync -f "$d"
	done
	say ""
	say "## ${s} GiB"
	say "target  repeat  cp_s  space_MiB  daemon_cpu_s"
	for r in $(seq "$REPEAT"); do
		for t in host tfs4 tfs3; do
			case $t in host) d=$DIR/host p= ;; tfs4) d=$MNT4 p=$P4 ;; tfs3) d=$MNT3 p=$P3 ;; esac
			drop
			u0=$(used_kib "$d")
			c0=0; [ -n "$p" ] && c0=$(daemon_cpu "$p")
			t0=$(date +%s.%N)
			cp "$d/src" "$d/dst" || exit 1
			t1=$(date +%s.%N)
			c1=0; [ -n "$p" ] && c1=$(daemon_cpu "$p")
			u1=$(used_kib "$d")
			say "$(awk -v t="$t" -v r="$r" -v a="$t0" -v b="$t1" -v u0="$u0" -v u1="$u1" -v c0="$c0" -v c1="$c1" \
				'BEGIN {printf "%-6s  %6s  %6.3f  %9.1f  %12.2f", t, r, b - a, (u1 - u0) / 1024, c1 - c0}')"
			cmp -s "$d/src" "$d/dst" || say "  ($t: the copy differs!)"
			rm -f "$d/dst"
			sync -f "$d"
		done
	done
	# first writes into a clone, against a file nobody shares
	fresh_clone() { rm -f "$MNT4/clone"; cp "$MNT4/src" "$MNT4/clone"; sync -f "$MNT4"; }
	cat "$DIR/chunk" >"$MNT4/plain"
	sync -f "$MNT4"
	say "first writes on tfs4: target  1MiB_direct_MB/s  100B_writes_per_s"
	for r in $(seq "$REPEAT"); do
		for f in clone plain; do
			[ "$f" = clone ] && fresh_clone
			drop
			mbs=$(dd if="$DIR/chunk" of="$MNT4/$f" bs=1M count=1024 oflag=direct conv=notrunc,fsync 2>&1 |
				awk '/copied/ {print $(NF-1) " " $NF}')
			[ "$f" = clone ] && fresh_clone
			drop
			ops=$(python3 - "$MNT4/$f" <<'PY'
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
rng = random.Random(1)
t = time.monotonic()
for _ in range(2000):
    os.pwrite(fd, b"x" * 100, rng.randrange(0, 1 << 18) * 4096 + 1000)
os.fsync(fd)
print(f"{2000 / (time.monotonic() - t):.0f}")
PY
)
			say "  $(printf '%-6s  r%s  %s  %s' "$f" "$r" "$mbs" "$ops")"
		done
	done
	fusermount3 -u "$MNT4"; fusermount3 -u "$MNT3"
	wait "$P4" "$P3"
	rm -rf "${DIR:?}/host" "$DIR/img4" "$DIR/img3"
done
say ""
say "# end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
