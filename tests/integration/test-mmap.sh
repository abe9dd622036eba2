#!/bin/bash
# Description: a file filled through a shared writable mapping and msync reads back with pread, a pwrite shows through a shared read-only mapping, and the bytes are on disk after a remount; two processes stay coherent: stores through one's shared mapping are seen by the other's read() before any msync, and its pwrite() by the mapping
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp python3
tfs_setup 512M

# ----- coherence between processes: mapping in one, read/write in another -----
python3 - "$MNT/shared" <<'PY' || tfs_fail "mmap and read/write in two processes are not coherent"
import mmap, os, subprocess, sys
path = sys.argv[1]
size = 3 * 1048576 + 123
with open(path, "wb") as f:
    f.write(b"\0" * size)
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[1000:1005] = b"hello"
m[size - 5:size] = b"tail!"
# another process, no msync yet: read() must see the stores
peer = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
a = os.pread(fd, 5, 1000)
b = os.pread(fd, 5, int(sys.argv[2]) - 5)
if (a, b) != (b"hello", b"tail!"):
    sys.exit("peer read %r %r" % (a, b))
os.pwrite(fd, b"world", 2 * 1048576)
"""
subprocess.run([sys.executable, "-c", peer, path, str(size)], check=True)
if m[2 * 1048576:2 * 1048576 + 5] != b"world":
    sys.exit("the mapping does not see the peer's pwrite: %r" % m[2 * 1048576:2 * 1048576 + 5])
m.close()
os.close(fd)
PY

# SIZE: one byte, an unaligned size, and 8 MiB
for size in 1 1234567 8388608; do
	tfs_errno OK mmap-rw "$MNT/m$size" "$size"
done

tfs_umount
tfs_mount
# mmap-rw leaves pattern 11 with its first 4 KiB (or less) overwritten by pattern 12
for size in 1 1234567 8388608; do
	head=$((size < 4096 ? size : 4096))
	tfs_eq "size of m$size after remount" "$size" "$(stat -c %s "$MNT/m$size")"
	cmp -n "$head" <("$TFS_SYS" pattern "$head" 12) "$MNT/m$size" ||
		tfs_fail "the pwrite part of m$size differs after remount"
	if [ "$size" -gt 4096 ]; then
		cmp -i 4096 <("$TFS_SYS" pattern "$size" 11) "$MNT/m$size" ||
			tfs_fail "the mapped part of m$size differs after remount"
	fi
done

tfs_umount
tfs_fsck_clean
tfs_pass
