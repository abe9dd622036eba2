#!/bin/bash
# Description: write-back through the pool: with a pool of two 1 MiB buffers and two write-back threads, 8 processes write 16 MiB each and others read every file back at once (writers wait, never fail); a file just written is read back from RAM (user.tensorfs.cached) and max_in_cpu=0 keeps nothing; a device write error reaches the application at fsync, at the next write and at close (a reader's close neither gets it nor takes it away), and is logged, and after a failed write-back a new open, and a reader that held the file open, read what the file system has, not the lost bytes the kernel's pages held (this part needs a build with -DTFS_TEST_HOOKS=ON, else the test is a skip)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum dd getfattr python3
MiB=1048576

cached() { getfattr --only-values -n user.tensorfs.cached "$1" 2>/dev/null; }

# ----- a full pool makes writers wait -----

# two write-back threads, each with 4 requests in flight
tfs_setup 1G -o max_in_cpu=4MiB,buffer_count=2,buffer_size=1MiB,block_size=1MiB,intra_op_parallelism=2,queue_depth=4
for i in 0 1 2 3 4 5 6 7; do
	"$TFS_SYS" pattern $((16 * MiB + i * 1111)) "$((300 + i))" | sha256sum | cut -d' ' -f1 >"$WORK/sum$i"
done
pids=()
for i in 0 1 2 3 4 5 6 7; do
	(
		flag=""
		[ $((i % 2)) = 0 ] && flag="oflag=direct"
		"$TFS_SYS" pattern $((16 * MiB + i * 1111)) "$((300 + i))" |
			dd of="$MNT/f$i" bs=64K iflag=fullblock $flag status=none || exit 1
		# read-after-write, from another process, at once
		[ "$(sha256sum <"$MNT/f$i" | cut -d' ' -f1)" = "$(cat "$WORK/sum$i")" ] || exit 2
	) &
	pids+=($!)
done
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || tfs_fail "writer $i failed (exit $?: 1 write, 2 read-back)"
done
tfs_umount
tfs_mount
for i in 0 1 2 3 4 5 6 7; do
	[ "$(sha256sum <"$MNT/f$i" | cut -d' ' -f1)" = "$(cat "$WORK/sum$i")" ] ||
		tfs_fail "f$i differs after a remount"
done
tfs_umount
tfs_fsck_clean

# ----- the cache keeps what was just written; max_in_cpu=0 keeps nothing -----

tfs_mount -o max_in_cpu=64MiB
"$TFS_SYS" pattern $((8 * MiB)) 7 >"$MNT/hot"
tfs_eq "bytes of a file just written held in RAM" $((8 * MiB)) "$(cached "$MNT/hot")"
sync "$MNT/hot"
tfs_eq "bytes in RAM after fsync (clean, still cached)" $((8 * MiB)) "$(cached "$MNT/hot")"
cmp <("$TFS_SYS" pattern $((8 * MiB)) 7) "$MNT/hot" || tfs_fail "hot differs"
tfs_umount
tfs_mount -o max_in_cpu=0
"$TFS_SYS" pattern $((8 * MiB)) 8 >"$MNT/cold"
sync "$MNT/cold"
tfs_eq "bytes in RAM with max_in_cpu=0 after fsync" 0 "$(cached "$MNT/cold")"
cmp <("$TFS_SYS" pattern $((8 * MiB)) 8) "$MNT/cold" || tfs_fail "cold differs"
tfs_eq "bytes in RAM with max_in_cpu=0 after a read" 0 "$(cached "$MNT/cold")"
tfs_umount
tfs_fsck_clean

# ----- a device write error reaches the application -----

# the fault injection (TFS_FAULT_WRITE_EIO_FROM) is only in a test build
"$TENSORFS" --version | grep -q "built with test hooks" ||
	tfs_skip "device write errors: tensorfs is built without -DTFS_TEST_HOOKS=ON (the parts above passed)"
# the superblocks and the journal sit below the data area: fail every
# write from its start on (checkpoints, in the data area since format
# version 2, fail too: J10)
journal_mib=$("$MKFS" -f -s 256M "$IMG" | sed -n 's/.*, \([0-9]*\)\.0 MiB for the journal.*/\1/p')
[ -n "$journal_mib" ] || tfs_fail "cannot tell the journal's size from mkfs.tensorfs's output"
export TFS_FAULT_WRITE_EIO_FROM=$((journal_mib * MiB + 8192))
tfs_mount
unset TFS_FAULT_WRITE_EIO_FROM
python3 - "$MNT" <<'PY' || { cat "$WORK/daemon.log" >&2; tfs_fail "write errors did not reach the application as EIO"; }
import errno, os, sys, time
mnt = sys.argv[1]

def expect_eio(what, fn):
    try:
        fn()
    except OSError as e:
        if e.errno != errno.EIO:
            sys.exit(f"{what}: expected EIO, got {e}")
        return
    sys.exit(f"{what}: expected EIO, got success")

# fsync: the write is accepted, its write-back fails, fsync says so once
fd = os.open(f"{mnt}/a", os.O_CREAT | os.O_WRONLY, 0o644)
if os.write(fd, b"x" * 65536) != 65536:
    sys.exit("short write")
expect_eio("fsync after a failed write-back", lambda: os.fsync(fd))
os.fsync(fd)  # reported once
os.close(fd)

# the next write: a partly written block is written back about a second
# later, which fails; the next write to the file reports it, once
fd = os.open(f"{mnt}/b", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"y" * 65536)
time.sleep(2.5)
expect_eio("write after a failed write-back", lambda: os.write(fd, b"z"))
os.close(fd)

# close: a write-back that failed while the file was open
fd = os.open(f"{mnt}/c", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"w" * 1048576)  # a whole chunk: written back at once
time.sleep(1.5)
expect_eio("close after a failed write-back", lambda: os.close(fd))

# a reader that comes and goes meanwhile (cat, a loader) neither gets
# the writer's error at its close() nor takes it from the writer's fsync
fd = os.open(f"{mnt}/d", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"v" * 1048576)
time.sleep(1.5)
r = os.open(f"{mnt}/d", os.O_RDONLY)
os.read(r, 4096)
os.close(r)
expect_eio("the writer's fsync after a reader's close", lambda: os.fsync(fd))
os.close(fd)

# the kernel's pages of a file outlive its close (FOPEN_KEEP_CACHE), but
# not a failed write-back: the next open reads what the file system has
# (as an O_DIRECT read, which asks the daemon), not the lost bytes.  The
# pages are read (and the attributes with them, so that a later look at
# them finds nothing new) while the daemon still has the bytes
# (nor a reader that held the file open all along, once the writer has
# heard of the failure)
fd = os.open(f"{mnt}/k", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"k" * 65536)
os.fstat(fd)
held = os.open(f"{mnt}/k", os.O_RDONLY)
if os.pread(held, 65536, 0) != b"k" * 65536:
    sys.exit("a file just written reads back wrong")
time.sleep(2.5)
expect_eio("fsync of k", lambda: os.fsync(fd))
os.close(fd)
held_seen = os.pread(held, 65536, 0)
os.close(held)
with open(f"{mnt}/k", "rb") as f:
    seen = f.read()
import mmap
buf = mmap.mmap(-1, 1048576)
r = os.open(f"{mnt}/k", os.O_RDONLY | os.O_DIRECT)
n = os.preadv(r, [buf], 0)
os.close(r)
if seen != bytes(buf[:n]):
    sys.exit(f"after a failed write-back a new open read {seen[:8]!r}..., "
             f"the file system has {bytes(buf[:8])!r}...")
if held_seen != bytes(buf[:n]):
    sys.exit(f"after a failed write-back a reader holding the file open "
             f"read {held_seen[:8]!r}..., the file system has "
             f"{bytes(buf[:8])!r}...")

# every open file hears of a failure once, as on Linux: of two writers
# both fsync()s fail, not only the first; a descriptor opened for writing
# and closed after the first heard of it neither reports it nor takes
# it from the second
fd1 = os.open(f"{mnt}/e", os.O_CREAT | os.O_WRONLY, 0o644)
fd2 = os.open(f"{mnt}/e", os.O_RDWR)
os.write(fd1, b"u" * 1048576)
time.sleep(1.5)
expect_eio("the first writer's fsync", lambda: os.fsync(fd1))
os.close(os.open(f"{mnt}/e", os.O_WRONLY))
expect_eio("the second writer's fsync", lambda: os.fsync(fd2))
os.fsync(fd1)
os.fsync(fd2)
os.close(fd1)
os.close(fd2)
PY
grep -q "write-back of inode" "$WORK/daemon.log" || tfs_fail "the failed write-back was not logged"
# the final checkpoint cannot be written either: the daemon says so and
# exits 1; the journal holds what was committed (J7: a failed checkpoint
# write is not the error state), so fsck replays it and finds it clean
fusermount3 -u "$MNT" || tfs_fail "fusermount3 -u failed"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=""
tfs_eq "daemon exit after its final checkpoint failed" 1 "$rc"
grep -q "final write failed" "$WORK/daemon.log" ||
	tfs_fail "the failed final checkpoint was not logged: $(tail -3 "$WORK/daemon.log")"
tfs_fsck_clean
tfs_mount
tfs_eq "files after the replay" "a b c d e k" "$(cd "$MNT" && echo *)"
tfs_umount
tfs_fsck_clean
tfs_pass
