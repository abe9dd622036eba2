#!/bin/bash
# Description: clones: cp inside a mount shares whole blocks (no space
# taken, clone_bytes counts them); every write path into either file
# gives the writer blocks of its own and leaves the other file as it was
# (buffered, O_DIRECT, mmap, punch, truncate, fallocate); a clone of a
# file larger than the free space succeeds; deleting both gives every
# block back; a remount keeps it all, fsck clean; then SIGKILL of the
# daemon while files are cloned (copy_file_range) and written, 5 rounds:
# every clone that was fsync'd holds exactly its source's bytes of that
# moment, fsck clean
#
# Protects lib/journal.c's J12 (counts in the transaction of their
# extents; a block freed only at count zero; no write to a shared block),
# J6 (space returns) and J9 (fsck clean).
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cp cmp python3 fallocate truncate dd sha256sum
tfs_setup 1G
S="$MNT/.tensorfs"
stat_of() { awk -v k="$1" '$1 == k {print $2}' "$S/stats"; }

# ----- cp shares the whole blocks -----
head -c $((200 << 20)) /dev/urandom >"$WORK/a" || tfs_fail "cannot make random data"
head -c 1234 /dev/urandom >>"$WORK/a"
cp "$WORK/a" "$MNT/a" || tfs_fail "cp into the mount failed"
u0=$(tfs_used_bytes)
k0=$(stat_of clone_bytes)
[ -n "$k0" ] || tfs_fail "no clone_bytes in $S/stats"
start=$(date +%s%N)
cp "$MNT/a" "$MNT/b" || tfs_fail "cp within the mount failed"
ms=$((($(date +%s%N) - start) / 1000000))
cmp "$WORK/a" "$MNT/b" || tfs_fail "the clone differs from its source"
u1=$(tfs_used_bytes)
tfs_log "cp of 200 MiB within the mount: $ms ms, used bytes $u0 -> $u1"
[ $((u1 - u0)) -lt $((1 << 20)) ] ||
	tfs_fail "cp of a 200 MiB file: expected under 1 MiB more space used (shared blocks), got $((u1 - u0)) bytes"
tfs_eq "clone_bytes after cp of 200 MiB + 1234" $((k0 + (200 << 20))) "$(stat_of clone_bytes)"

# ----- every write path gives the writer its own blocks -----
cp "$MNT/a" "$MNT/c" || tfs_fail "cp a c failed"
python3 - "$MNT" "$WORK/a" "$WORK" <<'PY' || tfs_fail "copy-on-write (see above)"
import mmap, os, subprocess, sys
m, orig, w = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3]
bad = 0
def check(what, path, want):
    global bad
    got = open(path, "rb").read()
    if got != want:
        i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
        print(f"{what}: {path} differs from what it should hold at byte {i} (sizes {len(got)}, {len(want)})")
        bad += 1
b = bytearray(orig)
fd = os.open(f"{m}/b", os.O_RDWR)
# buffered: inside a block, whole blocks, straddling blocks
for off, n, v in ((5000, 100, 1), (8 << 20, 1 << 20, 2), ((50 << 20) + 123, 10000, 3)):
    os.pwrite(fd, bytes([v]) * n, off)
    b[off:off + n] = bytes([v]) * n
os.close(fd)
# O_DIRECT, aligned
fd = os.open(f"{m}/b", os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"\x04" * (1 << 20))
os.pwritev(fd, [buf], 20 << 20)
b[20 << 20:21 << 20] = b"\x04" * (1 << 20)
os.close(fd)
# a shared map
fd = os.open(f"{m}/b", os.O_RDWR)
mm = mmap.mmap(fd, len(b))
mm[(30 << 20) + 7:(30 << 20) + 7 + 70000] = b"\x05" * 70000
b[(30 << 20) + 7:(30 << 20) + 7 + 70000] = b"\x05" * 70000
mm.flush()
mm.close()
# punch a hole, partial blocks at both ends
subprocess.run(["fallocate", "-p", "-o", str((60 << 20) + 1000), "-l", "20000", f"{m}/b"], check=True)
b[(60 << 20) + 1000:(60 << 20) + 21000] = bytes(20000)
# preallocate over shared blocks: the bytes stay
os.posix_fallocate(fd, 70 << 20, 1 << 20)
os.fsync(fd)
os.close(fd)
# truncate into the middle of a shared block
os.truncate(f"{m}/b", (150 << 20) + 333)
del b[(150 << 20) + 333:]
check("b after writes", f"{m}/b", bytes(b))
check("a (the source) after writes to b", f"{m}/a", orig)
# a write to the source leaves its clone alone
fd = os.open(f"{m}/a", os.O_RDWR)
os.pwrite(fd, b"\x06" * 4096, 4096)
os.close(fd)
check("c after a write to a", f"{m}/c", orig)
a2 = bytearray(orig); a2[4096:8192] = b"\x06" * 4096
check("a after its own write", f"{m}/a", bytes(a2))
open(f"{w}/a.want", "wb").write(a2)
open(f"{w}/b.want", "wb").write(b)
sys.exit(1 if bad else 0)
PY
# the same from the device, past every cache
tfs_umount
tfs_fsck_clean
tfs_mount
cmp "$WORK/a.want" "$MNT/a" || tfs_fail "a after a remount: expected its bytes and its own write only, got others"
cmp "$WORK/b.want" "$MNT/b" || tfs_fail "b after a remount: expected its writes over a's bytes, got others"
cmp "$WORK/a" "$MNT/c" || tfs_fail "c after a remount: expected a's bytes before the writes, got others"

# ----- a clone larger than the free space -----
rm -f "$MNT/b" "$MNT/c" || tfs_fail "rm failed"
free=$(tfs_free_bytes)
big=$((free * 3 / 4 / 1048576))
head -c $((big << 20)) /dev/urandom >"$MNT/big" || tfs_fail "cannot write a ${big} MiB file"
cp "$MNT/big" "$MNT/big2" || tfs_fail "cp of a ${big} MiB file with $(tfs_free_bytes) bytes free: expected a clone, got a failure"
cmp "$MNT/big" "$MNT/big2" || tfs_fail "the big clone differs"
# overwriting all of it needs the space: ENOSPC, never a changed source
sum=$(sha256sum <"$MNT/big")
dd if=/dev/zero of="$MNT/big2" bs=1M count="$big" conv=notrunc 2>/dev/null &&
	tfs_fail "overwriting the whole clone with only a quarter free: expected ENOSPC, got success"
tfs_eq "the big file after its clone ran out of space" "$sum" "$(sha256sum <"$MNT/big")"

# ----- remount: all kept, fsck clean; then every block comes back -----
tfs_umount
tfs_fsck_clean
tfs_mount
tfs_eq "the big file after a remount" "$sum" "$(sha256sum <"$MNT/big")"
rm -f "$MNT"/* || tfs_fail "rm failed"
limit=$((u0 - (200 << 20) + (4 << 20)))
space_back() { [ "$(tfs_used_bytes)" -le "$limit" ]; }
tfs_wait_for 10 space_back
tfs_log "used after deleting every file: $(tfs_used_bytes) bytes"
space_back || tfs_fail "after deleting everything: expected the space back (at most $limit bytes used), got $(tfs_used_bytes)"

# ----- SIGKILL while cloning and writing -----
for round in 1 2 3 4 5; do
	python3 - "$MNT" "$WORK/manifest.$round" <<'PY' &
import hashlib, os, random, sys
m, man = sys.argv[1], sys.argv[2]
out = open(man, "w")
rng = random.Random(os.getpid())
src = f"{m}/swap"
with open(src, "wb") as f:
    f.write(os.urandom(8 << 20))
i = 0
while os.path.isdir(f"{m}/.tensorfs"):  # never the directory under it
    # training writes the swap file...
    fd = os.open(src, os.O_RDWR)
    for _ in range(4):
        os.pwrite(fd, os.urandom(rng.randrange(1, 300000)), rng.randrange(0, 8 << 20))
    os.fsync(fd)
    os.close(fd)
    want = hashlib.sha256(open(src, "rb").read()).hexdigest()
    # ...and a checkpoint clones it
    # as Python 3.14's shutil.copyfile (3.11's uses sendfile, which
    # FUSE serves as reads and writes): copy_file_range to the end
    dst = f"{m}/ckpt{i}"
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while os.copy_file_range(fi, fo, 1 << 30):
        pass
    os.fsync(fo)
    os.close(fo)
    os.close(fi)
    out.write(f"{dst} {want}\n")
    out.flush()
    i += 1
PY
	client=$!
	# once the first clone is in, at a random point of the next ones;
	# the client dies with the daemon, so that it never writes into the
	# directory under the mount
	tfs_wait_for 60 test -s "$WORK/manifest.$round" ||
		tfs_fail "round $round: the client made no clone within 60 s"
	sleep "0.$((RANDOM % 9 + 1))"
	kill -KILL "$DAEMON_PID"
	kill -KILL "$client"
	wait "$client" 2>/dev/null
	tfs_kill9
	tfs_wait_unlocked 5 || tfs_fail "round $round: the image's flock was not released"
	tfs_fsck_clean
	tfs_mount
	n=0
	while read -r f want; do
		got=$(sha256sum <"$f" | cut -d' ' -f1)
		[ "$got" = "$want" ] || tfs_fail "round $round: $f, fsync'd after its clone, differs from its source at the time"
		n=$((n + 1))
	done <"$WORK/manifest.$round"
	tfs_log "round $round: $n fsync'd clones exact"
	rm -f "$MNT"/ckpt* "$MNT/swap"
done
tfs_umount
tfs_fsck_clean
tfs_pass
