#!/bin/bash
# Description: a file opened with O_DIRECT maps MAP_SHARED as on ext4: stores through the map and O_DIRECT pwrite()s each show through the other (map, O_DIRECT pread, and another process's buffered and O_DIRECT reads), msync puts them on disk, and the bytes are there after a remount; then fsx in O_DIRECT+mmap mode, when fsx is installed
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp python3
tfs_setup 512M

# The layout of the 5 MiB file, 1 MiB regions:
#   0  stores through the map, no msync before the reads
#   1  O_DIRECT pwrite, read back through the map
#   2  stores through the map, then an O_DIRECT pwrite over its second half
#   3  written by the peer process with O_WRONLY|O_DIRECT (as DeepSpeed
#      writes), seen through the map
#   4  stores through the map, then a pwrite over its second half through
#      a second descriptor, O_WRONLY|O_DIRECT
python3 - "$MNT/odirect" "$WORK/expect" <<'PY' || tfs_fail "shared mmap of a file opened with O_DIRECT is not coherent (see above)"
import errno, mmap, os, subprocess, sys
path, expect_path = sys.argv[1], sys.argv[2]
MIB = 1 << 20
size = 5 * MIB

def pattern(tag, n, seed):
    # bytes that differ from one 4 KiB block to the next
    return bytes(((i >> 12) * 7 + seed + tag) & 0xFF for i in range(n))

def aligned(data):
    # O_DIRECT needs a page-aligned buffer: an anonymous mapping is one
    buf = mmap.mmap(-1, len(data))
    buf[:] = data
    return buf

def dread(fd, n, off):
    buf = mmap.mmap(-1, n)
    got = os.preadv(fd, [buf], off)
    if got != n:
        sys.exit("O_DIRECT pread at %d returned %d of %d bytes" % (off, got, n))
    return bytes(buf)

fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
os.ftruncate(fd, size)
try:
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e:
    sys.exit("mmap(MAP_SHARED) of a file opened with O_DIRECT: %s" % os.strerror(e.errno))

expect = bytearray(size)
M0 = pattern(1, MIB, 0)
m[0:MIB] = M0
expect[0:MIB] = M0

D1 = pattern(2, MIB, 3)
if os.pwrite(fd, aligned(D1), MIB) != MIB:
    sys.exit("O_DIRECT pwrite of region 1 was short")
expect[MIB:2 * MIB] = D1
if m[MIB:2 * MIB] != D1:
    sys.exit("the map does not see the O_DIRECT pwrite of region 1")
if dread(fd, MIB, 0) != M0:
    sys.exit("an O_DIRECT pread does not see the stores through the map (region 0)")

M2 = pattern(3, MIB, 5)
m[2 * MIB:3 * MIB] = M2
D2 = pattern(4, MIB // 2, 9)
if os.pwrite(fd, aligned(D2), 2 * MIB + MIB // 2) != MIB // 2:
    sys.exit("O_DIRECT pwrite over region 2 was short")
expect[2 * MIB:3 * MIB] = M2
expect[2 * MIB + MIB // 2:3 * MIB] = D2
if m[2 * MIB:3 * MIB] != expect[2 * MIB:3 * MIB]:
    sys.exit("region 2 through the map: the O_DIRECT pwrite over mapped stores is not seen")
if dread(fd, MIB, 2 * MIB) != expect[2 * MIB:3 * MIB]:
    sys.exit("region 2 through O_DIRECT pread differs from the stores and the pwrite")

# another process: buffered and O_DIRECT reads of regions 0-2, no msync yet,
# then an O_DIRECT write of region 3
peer = r"""
import mmap, os, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3], "rb") as f:
    want = f.read()
fd = os.open(path, os.O_RDONLY)
if os.pread(fd, n, 0) != want:
    sys.exit("peer: buffered read differs")
os.close(fd)
fd = os.open(path, os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, n)
if os.preadv(fd, [buf], 0) != n or bytes(buf) != want:
    sys.exit("peer: O_DIRECT read differs")
os.close(fd)
fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
mib = 1 << 20
out = mmap.mmap(-1, mib)
out[:] = bytes((i * 13 + 1) & 0xFF for i in range(mib))
if os.pwrite(fd, out, n) != mib:
    sys.exit("peer: O_DIRECT pwrite was short")
os.close(fd)
"""
with open(expect_path + ".head", "wb") as f:
    f.write(expect[0:3 * MIB])
subprocess.run([sys.executable, "-c", peer, path, str(3 * MIB), expect_path + ".head"],
               check=True)
P3 = bytes((i * 13 + 1) & 0xFF for i in range(MIB))
expect[3 * MIB:4 * MIB] = P3
if m[3 * MIB:4 * MIB] != P3:
    sys.exit("the map does not see the peer's O_DIRECT pwrite of region 3")
if os.fstat(fd).st_size != size:
    sys.exit("size %d after the peer's pwrite, expected %d" % (os.fstat(fd).st_size, size))

M4 = pattern(5, MIB, 11)
m[4 * MIB:5 * MIB] = M4
D4 = pattern(6, MIB // 2, 13)
wfd = os.open(path, os.O_WRONLY | os.O_DIRECT)
if os.pwrite(wfd, aligned(D4), 4 * MIB + MIB // 2) != MIB // 2:
    sys.exit("O_WRONLY|O_DIRECT pwrite over region 4 was short")
os.close(wfd)
expect[4 * MIB:5 * MIB] = M4
expect[4 * MIB + MIB // 2:5 * MIB] = D4
if m[4 * MIB:5 * MIB] != expect[4 * MIB:5 * MIB]:
    sys.exit("region 4 through the map: the O_WRONLY|O_DIRECT pwrite over mapped stores is not seen")
if dread(fd, MIB, 4 * MIB) != expect[4 * MIB:5 * MIB]:
    sys.exit("region 4 through O_DIRECT pread differs from the stores and the pwrite")

m.flush()
if dread(fd, size, 0) != expect:
    sys.exit("after msync, the O_DIRECT read of the whole file differs")
m.close()
os.close(fd)
with open(expect_path, "wb") as f:
    f.write(expect)
PY

# a read-only O_DIRECT open maps MAP_SHARED for reading too
python3 - "$MNT/odirect" "$WORK/expect" <<'PY' || tfs_fail "read-only shared mmap of a file opened with O_DIRECT"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
with open(sys.argv[2], "rb") as f:
    if m[:] != f.read():
        sys.exit("read-only map differs")
m.close()
os.close(fd)
PY

tfs_umount
tfs_mount
cmp "$WORK/expect" "$MNT/odirect" || tfs_fail "the file differs after a remount"

# fsx, O_DIRECT (-Z) with its default mapped reads and writes, 4 KiB aligned
# sizes and offsets as O_DIRECT needs; not packaged by Debian, so optional
if command -v fsx >/dev/null 2>&1; then
	fsx -Z -r 4096 -w 4096 -t 4096 -l $((8 << 20)) -N "${TFS_FSX_OPS:-3000}" -S 1 \
		-P "$WORK" "$MNT/fsx.dat" >"$WORK/fsx.log" 2>&1 || {
		tail -n 30 "$WORK/fsx.log" >&2
		tfs_fail "fsx -Z (O_DIRECT with mapped reads and writes) failed"
	}
else
	tfs_log "fsx not installed: its O_DIRECT+mmap run is left out"
fi

tfs_umount
tfs_fsck_clean
tfs_pass
