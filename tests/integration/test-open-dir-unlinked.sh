#!/bin/bash
# Description: a directory or file that lost its last name while the kernel still has it (an open directory, rmdir'd or renamed over as in xfstests generic/035; an O_PATH descriptor of an unlinked file; a removed current directory) keeps its inode: fstat shows it with st_nlink 0; its space returns only after the last descriptor closes, and does return (lookup references neither leak nor free early), also after a crash
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3
export LC_ALL=C
tfs_setup 512M

# ----- the syscalls, the same on the mount and on the host's file system -----

cat >"$WORK/dirs.py" <<'EOF'
import errno, os, stat, sys

def report(what, fd):
    st = os.fstat(fd)
    kind = "dir" if stat.S_ISDIR(st.st_mode) else "file"
    print(f"{what}: {kind} nlink={st.st_nlink}")
    return st

base = sys.argv[1]
os.chdir(base)

# rmdir of an open directory (fstat, then reading it, through the fd)
os.mkdir("d")
ino = os.stat("d").st_ino
fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
os.rmdir("d")
st = report("rmdir'd open directory", fd)
print("same inode:", st.st_ino == ino)
try:
    print("listing through the fd:", sorted(os.listdir(fd)))
except OSError as e:
    print("listing through the fd:", errno.errorcode[e.errno])
os.close(fd)

# generic/035: rename over an open empty directory
os.mkdir("d1")
os.mkdir("d2")
ino2 = os.stat("d2").st_ino
fd2 = os.open("d2", os.O_RDONLY | os.O_DIRECTORY)
os.rename("d1", "d2")
st = report("renamed-over open directory", fd2)
print("same inode:", st.st_ino == ino2)
os.close(fd2)
os.rmdir("d2")

# the same for a file, renamed over while only an O_PATH fd holds it
with open("f1", "w") as f:
    f.write("one")
with open("f2", "w") as f:
    f.write("two!")
fd3 = os.open("f2", os.O_PATH)
os.rename("f1", "f2")
st = report("renamed-over O_PATH file", fd3)
print("size:", st.st_size)
os.close(fd3)
os.unlink("f2")

# an O_PATH fd of an unlinked file
with open("f", "w") as f:
    f.write("x" * 100)
fd4 = os.open("f", os.O_PATH)
os.unlink("f")
st = report("unlinked O_PATH file", fd4)
print("size:", st.st_size)
os.close(fd4)

# a removed current directory: stat("."), and nothing new in it
os.mkdir("cwd")
os.chdir("cwd")
os.rmdir(os.path.join(base, "cwd"))
st = os.stat(".")
print("removed cwd: nlink", st.st_nlink)
try:
    open("new", "w")
    print("create in removed cwd: OK")
except OSError as e:
    print("create in removed cwd:", errno.errorcode[e.errno])
os.chdir(base)
print("left:", sorted(os.listdir(".")))
EOF

mkdir "$WORK/ref" || tfs_fail "mkdir of the reference directory failed"
python3 "$WORK/dirs.py" "$WORK/ref" >"$WORK/ref.out" 2>&1 ||
	{ cat "$WORK/ref.out" >&2; tfs_fail "the script failed on the host's file system"; }
mkdir "$MNT/t" || tfs_fail "mkdir failed"
python3 "$WORK/dirs.py" "$MNT/t" >"$WORK/tfs.out" 2>&1 ||
	{ cat "$WORK/tfs.out" >&2; tfs_fail "the script failed on tensorfs (above)"; }
diff -u "$WORK/ref.out" "$WORK/tfs.out" >&2 ||
	tfs_fail "tensorfs differs from the host's file system (diff above: - host, + tensorfs)"
grep -q "rmdir'd open directory: dir nlink=0" "$WORK/tfs.out" ||
	tfs_fail "fstat of an rmdir'd open directory: $(head -1 "$WORK/tfs.out")"

# ----- space: held while only the kernel's lookup holds it, then freed -----

size=$((32 * 1048576))
# shellcheck disable=SC2317 # called through tfs_wait_for
back() { [ $(($(tfs_free_bytes) - free0)) -ge $((size - 262144)) ]; }
"$TFS_SYS" pattern "$size" 7 >"$MNT/t/big" || tfs_fail "cannot write 32 MiB"
sync "$MNT/t/big" || tfs_fail "sync failed"
free0=$(tfs_free_bytes)
python3 - "$MNT/t/big" "$size" <<'EOF' || tfs_fail "the O_PATH descriptor lost its file (above)"
import os, sys, time
path, size = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_PATH)
os.unlink(path)
# let the kernel forget what it can: it must not forget this one
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("2")
time.sleep(0.5)
st = os.fstat(fd)
if st.st_nlink != 0 or st.st_size != size:
    sys.exit(f"fstat after unlink and drop_caches: nlink {st.st_nlink}, size {st.st_size}")
os.close(fd)
EOF
tfs_wait_for 10 back ||
	tfs_fail "free space grew by $(($(tfs_free_bytes) - free0)) bytes after the O_PATH descriptor closed, expected about $size"

# many names looked up then removed, some held open, some hard-linked
# elsewhere: the removed ones free all their space, the linked survive
free0=$(tfs_free_bytes)
size=0
python3 - "$MNT/t" <<'EOF' || tfs_fail "names looked up then removed (above)"
import os, sys
d = sys.argv[1]
blob = b"y" * 65536
for i in range(300):
    with open(f"{d}/n{i}", "wb") as f:
        f.write(blob)
for i in range(0, 300, 10):
    os.link(f"{d}/n{i}", f"{d}/keep{i}")
for i in range(300):
    os.stat(f"{d}/n{i}")
held = [os.open(f"{d}/n{i}", os.O_RDONLY) for i in range(1, 300, 7)]
for i in range(300):
    os.unlink(f"{d}/n{i}")
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("2")
for fd in held:
    if len(os.read(fd, 65536)) != 65536:
        sys.exit("a held file lost its data")
    os.close(fd)
for i in range(0, 300, 10):
    with open(f"{d}/keep{i}", "rb") as f:
        if f.read() != blob:
            sys.exit(f"keep{i} lost its data")
    os.unlink(f"{d}/keep{i}")
EOF
tfs_wait_for 10 back ||
	tfs_fail "free space is $(($(tfs_free_bytes) - free0)) bytes from where it was after removing every name"

# ----- a crash with removed names still known: the next mount frees them -----

free0=$(tfs_free_bytes)
mkdir "$MNT/t/gone" || tfs_fail "mkdir failed"
"$TFS_SYS" pattern $((16 * 1048576)) 8 >"$MNT/t/orphan" || tfs_fail "write failed"
sync "$MNT/t/orphan" || tfs_fail "sync failed"
exec 3<"$MNT/t/gone" || tfs_fail "cannot open the directory on fd 3"
exec 4<"$MNT/t/orphan" || tfs_fail "cannot open the file on fd 4"
rmdir "$MNT/t/gone" || tfs_fail "rmdir failed"
rm "$MNT/t/orphan" || tfs_fail "rm failed"
: >"$MNT/t/commit" && sync "$MNT/t/commit" || tfs_fail "sync failed"
tfs_kill9
exec 3<&- 4<&-
tfs_mount
tfs_eq "names after the crash" "commit" "$(ls -A "$MNT/t")"
tfs_wait_for 10 back ||
	tfs_fail "free space after the crash is $(($(tfs_free_bytes) - free0)) bytes from where it was: orphans not freed"
tfs_umount
tfs_fsck_clean
grep -q "unlinked inodes" "$WORK/fsck.log" && { cat "$WORK/fsck.log" >&2; tfs_fail "fsck found unlinked inodes after a clean unmount"; }

# ----- a clean unmount frees what only the kernel's lookups kept -----

tfs_mount
exec 3<"$MNT/t" || tfs_fail "cannot open the directory"
mkdir "$MNT/t/x" && rmdir "$MNT/t/x" || tfs_fail "mkdir/rmdir failed"
exec 3<&-
tfs_umount
tfs_fsck_clean
grep -q "unlinked inodes" "$WORK/fsck.log" && { cat "$WORK/fsck.log" >&2; tfs_fail "fsck found unlinked inodes after a clean unmount"; }
tfs_pass
