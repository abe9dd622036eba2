#!/bin/bash
# Description: lseek(2)'s SEEK_DATA and SEEK_HOLE on a mount say where a
# file's data and holes are, in whole 4 KiB blocks, the end of the file
# counting as a hole and ENXIO at and past it and before 0: a file made sparse by
# writes further on, truncate and punched holes (fallocate -p), with
# fallocated blocks counted as data; every byte that is not zero lies in
# what SEEK_DATA reports; cp of such a file out of the mount keeps its
# holes (cp asks SEEK_DATA and SEEK_HOLE) and its bytes.  A file held
# open read-write answers as one without holes (its shared maps may hold
# stores the daemon has not seen), and stores through such a map are
# data once the map is closed; the files of /.tensorfs answer too.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 cp cmp stat fallocate
tfs_setup 256M

B=4096
python3 - "$MNT/sparse" <<'PY' || tfs_fail "making the sparse file"
import os, sys
B = 4096
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, b"a" * 2 * B, 0)               # blocks 0-1
os.pwrite(fd, b"b" * 100, 5 * B + 7)         # block 5
os.pwrite(fd, b"c" * 3 * B, 40 * B)          # blocks 40-42
os.ftruncate(fd, 64 * B + 123)               # a hole to the end
os.close(fd)
PY
# a punched hole (blocks 41, and 40's and 42's edges zeroed, kept)
fallocate -p -o $((40 * B + 100)) -l $((2 * B)) "$MNT/sparse" ||
	tfs_fail "fallocate -p on the mount failed"
# fallocated blocks (50-51): zeros, but data
fallocate -n -o $((50 * B)) -l $((2 * B)) "$MNT/sparse" ||
	tfs_fail "fallocate -n on the mount failed"

python3 - "$MNT" <<'PY' || tfs_fail "SEEK_DATA and SEEK_HOLE (above)"
import errno, mmap, os, sys, time
mnt = sys.argv[1]
p = os.path.join(mnt, "sparse")
B = 4096
SIZE = 64 * B + 123
D, H = os.SEEK_DATA, os.SEEK_HOLE
bad = []

def seek(fd, off, whence):
    try:
        return os.lseek(fd, off, whence)
    except OSError as e:
        return -e.errno

def want(what, got, exp):
    if got != exp:
        bad.append(f"{what}: {got}, expected {exp}")

def segments(fd):
    """the data segments, walked as cp does"""
    out, off = [], 0
    while True:
        d = seek(fd, off, D)
        if d < 0:
            want("SEEK_DATA's end of the walk", d, -errno.ENXIO)
            return out
        h = seek(fd, d, H)
        if h <= d:
            bad.append(f"SEEK_HOLE {d}: {h}")
            return out
        out.append((d, h))
        off = h

fd = os.open(p, os.O_RDONLY)
want("SEEK_DATA 0", seek(fd, 0, D), 0)
want("SEEK_DATA 100", seek(fd, 100, D), 100)
want("SEEK_HOLE 0", seek(fd, 0, H), 2 * B)
want("SEEK_HOLE 2B-1", seek(fd, 2 * B - 1, H), 2 * B)
want("SEEK_HOLE in a hole", seek(fd, 3 * B + 5, H), 3 * B + 5)
want("SEEK_DATA in the first hole", seek(fd, 2 * B, D), 5 * B)
want("SEEK_HOLE in block 5", seek(fd, 5 * B + 10, H), 6 * B)
want("SEEK_DATA after block 5", seek(fd, 6 * B, D), 40 * B)
want("SEEK_HOLE in block 40", seek(fd, 40 * B, H), 41 * B)
want("SEEK_DATA in the punched block", seek(fd, 41 * B, D), 42 * B)
want("SEEK_DATA after block 42", seek(fd, 43 * B, D), 50 * B)
want("SEEK_HOLE in the fallocated blocks", seek(fd, 50 * B, H), 52 * B)
want("SEEK_DATA in the trailing hole", seek(fd, 52 * B, D), -errno.ENXIO)
# a negative offset: ENXIO, as ext4 and xfs say (xfstests generic/448)
want("SEEK_DATA -1", seek(fd, -1, D), -errno.ENXIO)
want("SEEK_HOLE -1", seek(fd, -1, H), -errno.ENXIO)
want("SEEK_DATA -2^63", seek(fd, -(1 << 63), D), -errno.ENXIO)
want("SEEK_HOLE in the trailing hole", seek(fd, 60 * B, H), 60 * B)
want("SEEK_DATA at the end", seek(fd, SIZE, D), -errno.ENXIO)
want("SEEK_HOLE at the end", seek(fd, SIZE, H), -errno.ENXIO)
want("SEEK_HOLE past the end", seek(fd, SIZE + B, H), -errno.ENXIO)
segs = segments(fd)
want("data segments", segs, [(0, 2 * B), (5 * B, 6 * B), (40 * B, 41 * B),
                             (42 * B, 43 * B), (50 * B, 52 * B)])
# every byte that is not zero is in a data segment
data = os.pread(fd, SIZE + 1, 0)
want("size read", len(data), SIZE)
inside = bytearray(SIZE)
for a, b in segs:
    inside[a:b] = b"\1" * (b - a)
for i in range(0, SIZE, B):
    chunk = data[i:i + B]
    if any(chunk) and not all(inside[i:i + len(chunk)]):
        bad.append(f"bytes at {i} are not zero but in a hole")
# a directory is not asked (the kernel answers for it)
os.close(fd)

# held open read-write: the whole file is data
rw = os.open(p, os.O_RDWR)
fd = os.open(p, os.O_RDONLY)
want("open read-write: SEEK_DATA in a hole", seek(fd, 2 * B, D), 2 * B)
want("open read-write: SEEK_HOLE 0", seek(fd, 0, H), SIZE)
want("open read-write: SEEK_DATA at the end", seek(fd, SIZE, D), -errno.ENXIO)
# a store through a shared map into a hole (block 30) ...
m = mmap.mmap(rw, 31 * B, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[30 * B + 1] = 0x7a
want("a store in a shared map: SEEK_DATA before it",
     seek(fd, 6 * B, D) <= 30 * B + 1, True)
m.close()
os.close(rw)
# ... is data once the map and the file are closed (the kernel sends
# the close's RELEASE without waiting for it: give the daemon a moment)
for _ in range(100):
    if seek(fd, 6 * B, D) == 30 * B:
        break
    time.sleep(0.05)
want("after the map: SEEK_DATA", seek(fd, 6 * B, D), 30 * B)
want("after the map: SEEK_HOLE", seek(fd, 30 * B, H), 31 * B)
want("after the map: the byte", os.pread(fd, 1, 30 * B + 1), b"z")
os.close(fd)

# /.tensorfs: the whole file is data (its size is that of its content
# rendered now, which changes as the counters do)
s = os.path.join(mnt, ".tensorfs", "stats")
fd = os.open(s, os.O_RDONLY)
want("/.tensorfs/stats SEEK_DATA 0", seek(fd, 0, D), 0)
h = seek(fd, 0, H)
if h < 100:
    bad.append(f"/.tensorfs/stats SEEK_HOLE 0: {h}, not its size")
os.close(fd)

for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# cp asks SEEK_DATA and SEEK_HOLE of a sparse source: the copy keeps
# the holes (the data is 9 blocks, the file 65)
cp "$MNT/sparse" "$WORK/copy" || tfs_fail "cp out of the mount failed"
cmp "$MNT/sparse" "$WORK/copy" || tfs_fail "the copy differs"
blocks=$(stat -c %b "$WORK/copy")
unit=$(stat -c %B "$WORK/copy")
size=$(stat -c %s "$WORK/copy")
[ $((blocks * unit)) -lt $((size / 2)) ] ||
	tfs_fail "cp's copy is not sparse: $((blocks * unit)) bytes used of $size"
tfs_pass
