#!/bin/bash
# Description: listings carry attributes (readdirplus): after a listing, lstat, ls -l and find show each entry's own inode, mode, links, owner, size, times and blocks, the same as before a remount; a file known only from a listing keeps working through an O_PATH descriptor after its last name goes; a directory listed while files come and go lists no ghost; every file listed and then removed is freed (inodes and space back) once the kernel forgets it; /.tensorfs lists its files
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 find

stat_of() { grep "^$1 " "$MNT/.tensorfs/stats" | cut -d' ' -f2; }

tfs_setup 256M
base_inodes=$(stat_of inodes)
base_free=$(tfs_free_bytes)

python3 - "$MNT/d" <<'PY' || tfs_fail "making the tree failed"
import os, sys
d = sys.argv[1]
os.mkdir(d)
for i in range(600):
    p = "%s/f%04d" % (d, i)
    with open(p, "wb") as f:
        f.write(b"x" * (i * 37))
    os.chmod(p, 0o600 | (i % 8) << 3)
    os.chown(p, 1000 + i % 3, 2000 + i % 5)
    os.utime(p, ns=(1700000000 * 10**9 + i, 1600000000 * 10**9 + i * 1000))
os.mkdir(d + "/sub")
os.symlink("f0001", d + "/link")
os.link(d + "/f0002", d + "/hard")
PY

# every entry's attributes, as lstat() after a listing sees them
snapshot() {
	python3 - "$MNT/d" <<'PY'
import os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    st = os.lstat(os.path.join(d, n))
    print(n, st.st_ino, oct(st.st_mode), st.st_nlink, st.st_uid, st.st_gid,
          st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_blocks)
PY
}
snapshot >"$WORK/before" || tfs_fail "snapshot before failed"
ls -ln --time-style=+%s "$MNT/d" >"$WORK/ls.before"
find "$MNT/d" -printf '%p %i %m %n %U %G %s %T@ %y\n' | sort >"$WORK/find.before"
tfs_umount
tfs_mount
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null
snapshot >"$WORK/after" || tfs_fail "snapshot after failed"
diff "$WORK/before" "$WORK/after" >&2 || tfs_fail "attributes after a listing differ from before the remount"
ls -ln --time-style=+%s "$MNT/d" >"$WORK/ls.after"
diff "$WORK/ls.before" "$WORK/ls.after" >&2 || tfs_fail "ls -l differs after the remount"
find "$MNT/d" -printf '%p %i %m %n %U %G %s %T@ %y\n' | sort >"$WORK/find.after"
diff "$WORK/find.before" "$WORK/find.after" >&2 || tfs_fail "find differs after the remount"
tfs_eq "entries listed" 603 "$(wc -l <"$WORK/after")"

# ----- a file the kernel knows only from a listing -----

tfs_umount
tfs_mount
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null
ls -l "$MNT/d" >/dev/null
python3 - "$MNT/d" <<'PY' || tfs_fail "a file known from a listing failed after its last name went"
import os, sys
d = sys.argv[1]
fd = os.open(d + "/f0005", os.O_PATH)   # no OPEN reaches the daemon
os.unlink(d + "/f0005")
st = os.fstat(fd)
if st.st_nlink != 0 or st.st_size != 5 * 37:
    sys.exit("fstat after unlink: nlink %d size %d" % (st.st_nlink, st.st_size))
os.close(fd)
PY

# ----- listings while files come and go -----

python3 - "$MNT/d" <<'PY' &
import os, sys
d = sys.argv[1]
for r in range(5):
    for i in range(200):
        p = "%s/tmp%d.%d" % (d, r, i)
        with open(p, "wb") as f:
            f.write(b"y" * i)
    for i in range(200):
        os.unlink("%s/tmp%d.%d" % (d, r, i))
PY
churn=$!
for _ in $(seq 20); do
	ls -l "$MNT/d" >/dev/null 2>"$WORK/ls.err"
	# a name removed between readdir and stat is "No such file", never
	# another error or a crash
	if grep -v "No such file" "$WORK/ls.err" | grep -q .; then
		cat "$WORK/ls.err" >&2
		tfs_fail "ls -l during churn"
	fi
done
wait "$churn" || tfs_fail "the churn failed"
ghosts=$(find "$MNT/d" -name 'tmp*' | wc -l)
tfs_eq "files left by the churn" 0 "$ghosts"

# ----- /.tensorfs -----

ls -l "$MNT/.tensorfs" >"$WORK/statedir.ls" || tfs_fail "ls -l of /.tensorfs failed"
grep -q " stats$" "$WORK/statedir.ls" || { cat "$WORK/statedir.ls" >&2; tfs_fail "/.tensorfs does not list stats"; }

# ----- everything listed, then removed, is freed -----

ls -lR "$MNT" >/dev/null
rm -rf "$MNT/d"
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null
for _ in $(seq 50); do
	[ "$(stat_of inodes)" = "$base_inodes" ] && break
	sleep 0.1
done
tfs_eq "inodes after everything listed was removed" "$base_inodes" "$(stat_of inodes)"
tfs_umount
tfs_fsck_clean
tfs_mount
tfs_eq "free bytes after a remount" "$base_free" "$(tfs_free_bytes)"
tfs_umount
tfs_pass
