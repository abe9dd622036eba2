#!/bin/bash
# Description: copy_file_range(2) inside a mount: cp copies in the daemon
# (copy_bytes and clone_bytes together grow by the file, the bytes are
# the same);
# offsets, a copy cut at the source's end, nothing past it, within one
# file; a destination's cached pages show the copy, to buffered and
# O_DIRECT readers; a source open read-write and mapped with stores not
# yet written back (also a map that outlives close()) is copied with
# those stores, by the kernel, not the daemon; a /.tensorfs file copies
# too; everything survives a remount and checks clean
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cp cmp python3
tfs_setup 1G
S="$MNT/.tensorfs"
# bytes the daemon copied or shared (whole blocks are shared: clones)
copied() { awk '$1 == "copy_bytes" || $1 == "clone_bytes" {n += $2} END {print n}' "$S/stats"; }

# ----- cp copies in the daemon -----
head -c $((40 << 20)) /dev/urandom >"$WORK/a" || tfs_fail "cannot make random data"
head -c 12345 /dev/urandom >>"$WORK/a"
cp "$WORK/a" "$MNT/a" || tfs_fail "cp into the mount failed"
c0=$(copied)
grep -q '^clone_bytes ' "$S/stats" || tfs_fail "no clone_bytes in $S/stats: $(cat "$S/stats")"
cp "$MNT/a" "$MNT/b" || tfs_fail "cp within the mount failed"
cmp "$WORK/a" "$MNT/b" || tfs_fail "cp within the mount: the copy differs"
tfs_eq "copy_bytes after cp of a 40 MiB + 12345 file" $((c0 + (40 << 20) + 12345)) "$(copied)"

# ----- offsets, the source's end, one file; pages cached before -----
python3 - "$MNT" <<'PY' || tfs_fail "copy_file_range semantics (see above)"
import mmap, os, sys
m = sys.argv[1]
bad = 0
def check(what, got, want):
    global bad
    if got != want:
        print(f"{what}: got {got!r:.80}, expected {want!r:.80}")
        bad += 1
src = open(f"{m}/a", "rb").read()
fi = os.open(f"{m}/a", os.O_RDONLY)
fo = os.open(f"{m}/c", os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fo, b"x" * 8192, 0)
check("pages cached before", os.pread(fo, 8192, 0), b"x" * 8192)
n = os.copy_file_range(fi, fo, 3 * 2**20 + 7, 1000, 5000)
check("bytes copied", n, 3 * 2**20 + 7)
with open(f"{m}/c", "rb") as f:
    c = f.read()
check("size", len(c), 5000 + 3 * 2**20 + 7)
check("bytes before the copy", c[:5000], b"x" * 5000)
check("the copy, buffered", c[5000:], src[1000:1000 + 3 * 2**20 + 7])
d = os.open(f"{m}/c", os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 2**20)
os.preadv(d, [buf], 0)
check("the copy, O_DIRECT", bytes(buf[5000:2**20]), src[1000:1000 + 2**20 - 5000])
os.close(d)
# cut at the source's end, then nothing
n = os.copy_file_range(fi, fo, 2**20, len(src) - 100, 0)
check("copy cut at the end", n, 100)
check("its bytes", os.pread(fo, 100, 0), src[-100:])
check("copy at the end", os.copy_file_range(fi, fo, 10, len(src), 0), 0)
check("copy past the end", os.copy_file_range(fi, fo, 10, len(src) + 2**30, 0), 0)
# within one file, apart
os.close(fi)
fi = os.open(f"{m}/c", os.O_RDWR)
n = os.copy_file_range(fi, fi, 4096, 0, 2**23)
check("copy within one file", n, 4096)
check("its bytes", os.pread(fi, 4096, 2**23), os.pread(fi, 4096, 0))
os.close(fi)
os.close(fo)
sys.exit(bad)
PY

# ----- a source with stores in a map, not yet written back -----
c1=$(copied)
python3 - "$MNT" <<'PY' || tfs_fail "a mapped source's stores are missing from its copy (see above)"
import mmap, os, sys
m = sys.argv[1]
bad = 0
def copy_all(src, dst):
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    size = os.fstat(fi).st_size
    done = 0
    while done < size:
        n = os.copy_file_range(fi, fo, size - done, done, done)
        if n == 0:
            break
        done += n
    os.close(fi)
    os.close(fo)
for name, close_first in (("m1", False), ("m2", True)):
    with open(f"{m}/{name}", "wb") as f:
        f.write(b"\0" * (4 << 20))
    fd = os.open(f"{m}/{name}", os.O_RDWR)
    mp = mmap.mmap(fd, 4 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    if close_first:
        os.close(fd)  # the map keeps the file open
    mp[123456:123456 + 11] = b"hello, map!"
    mp[(3 << 20) + 5:(3 << 20) + 16] = b"second page"
    copy_all(f"{m}/{name}", f"{m}/{name}.copy")
    with open(f"{m}/{name}.copy", "rb") as f:
        c = f.read()
    if c[123456:123456 + 11] != b"hello, map!" or c[(3 << 20) + 5:(3 << 20) + 16] != b"second page":
        print(f"{name} (close first: {close_first}): the copy lacks the map's stores")
        bad += 1
    mp.close()
    if not close_first:
        os.close(fd)
sys.exit(bad)
PY
tfs_eq "copy_bytes after copying mapped sources (the kernel's copies)" "$c1" "$(copied)"
# closed and unmapped: the daemon copies again, with the stores
cp "$MNT/m2" "$MNT/m2.again" || tfs_fail "cp of m2 after munmap failed"
cmp "$MNT/m2.copy" "$MNT/m2.again" || tfs_fail "m2 copied after munmap differs from its copy with the map"
tfs_eq "copy_bytes after cp of m2 (4 MiB)" $((c1 + (4 << 20))) "$(copied)"

# ----- a file of /.tensorfs -----
cp "$S/config" "$MNT/config.copy" || tfs_fail "cp of $S/config failed"
cmp "$S/config" "$MNT/config.copy" || tfs_fail "the copy of $S/config differs"

# ----- after a remount -----
tfs_umount
tfs_fsck_clean
tfs_mount
cmp "$WORK/a" "$MNT/b" || tfs_fail "b differs after a remount"
cmp "$MNT/m2.copy" "$MNT/m2.again" || tfs_fail "m2's copies differ after a remount"
tfs_umount
tfs_fsck_clean
tfs_pass
