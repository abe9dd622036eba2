#!/bin/bash
# Description: renameat2(RENAME_WHITEOUT) moves the entry and leaves a whiteout (character device 0:0, mode 0) at the old name in the same change, with NOREPLACE too, refused with EXCHANGE; it survives a crash after a commit; overlayfs with its upper layer on tensorfs deletes and renames lower files (whiteouts), as xfstests generic/631 needs
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3
export LC_ALL=C
tfs_setup 256M

cat >"$WORK/wo.py" <<'EOF'
import ctypes, errno, os, stat, sys

AT_FDCWD = -100
NOREPLACE, EXCHANGE, WHITEOUT = 1, 2, 4
libc = ctypes.CDLL(None, use_errno=True)

def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags):
        return errno.errorcode[ctypes.get_errno()]
    return "OK"

def whiteout(p):
    st = os.lstat(p)
    return (stat.S_ISCHR(st.st_mode) and st.st_rdev == 0 and
            stat.S_IMODE(st.st_mode) == 0)

def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: expected {want}, got {got}")

d = sys.argv[1]
os.chdir(d)
with open("a", "w") as f:
    f.write("content of a")
ino = os.stat("a").st_ino
check("RENAME_WHITEOUT a -> b", renameat2("a", "b", WHITEOUT), "OK")
check("b's content", open("b").read(), "content of a")
check("b's inode", os.stat("b").st_ino, ino)
check("a is a whiteout", whiteout("a"), True)
check("owner of the whiteout", (os.lstat("a").st_uid, os.lstat("a").st_gid),
      (os.getuid(), os.getgid()))

# over an existing target, and with NOREPLACE
with open("c", "w") as f:
    f.write("c")
with open("d", "w") as f:
    f.write("d")
check("RENAME_WHITEOUT c -> d (d exists)", renameat2("c", "d", WHITEOUT), "OK")
check("d's content", open("d").read(), "c")
check("c is a whiteout", whiteout("c"), True)
with open("e", "w") as f:
    f.write("e")
check("NOREPLACE|WHITEOUT e -> d (d exists)",
      renameat2("e", "d", NOREPLACE | WHITEOUT), "EEXIST")
check("e after a refused rename", whiteout("e"), False)
check("NOREPLACE|WHITEOUT e -> f", renameat2("e", "f", NOREPLACE | WHITEOUT), "OK")
check("e is a whiteout", whiteout("e"), True)
check("EXCHANGE|WHITEOUT", renameat2("f", "d", EXCHANGE | WHITEOUT), "EINVAL")
check("missing source", renameat2("nope", "x", WHITEOUT), "ENOENT")

# a directory, across directories
os.mkdir("dir")
os.mkdir("sub")
with open("dir/inner", "w") as f:
    f.write("inner")
check("WHITEOUT of a directory into sub/", renameat2("dir", "sub/dir", WHITEOUT), "OK")
check("dir is a whiteout", whiteout("dir"), True)
check("moved directory", open("sub/dir/inner").read(), "inner")
check("names", sorted(os.listdir(".")), ["a", "b", "c", "d", "dir", "e", "f", "sub"])
# a whiteout is an ordinary node: it can be removed
os.unlink("e")
print("OK")
EOF

mkdir "$MNT/w" || tfs_fail "mkdir failed"
python3 "$WORK/wo.py" "$MNT/w" >"$WORK/wo.out" 2>&1 || {
	cat "$WORK/wo.out" >&2
	grep -q "RENAME_WHITEOUT a -> b: expected OK, got EINVAL" "$WORK/wo.out" &&
		[ "$(printf '%s\n' "$(uname -r)" 5.10 | sort -V | head -1)" != 5.10 ] &&
		tfs_skip "kernel $(uname -r) does not pass RENAME_WHITEOUT to FUSE"
	tfs_fail "RENAME_WHITEOUT (above)"
}

# in the journal: a crash after the commit keeps the whiteouts
: >"$MNT/w/sync" && sync "$MNT/w/sync" || tfs_fail "sync failed"
tfs_kill9
tfs_mount
for n in a c dir; do
	tfs_eq "$n after a crash" "character special file 0,0 0" "$(stat -c '%F %t,%T %a' "$MNT/w/$n")"
done
tfs_eq "b after a crash" "content of a" "$(cat "$MNT/w/b")"
rm -r "$MNT/w" || tfs_fail "rm -r of the directory with whiteouts failed"

# ----- overlayfs, upper layer on tensorfs -----

overlay() {
	mkdir -p "$WORK/lower/ld" "$MNT/upper" "$MNT/work" "$WORK/ovl" || return 1
	echo lower >"$WORK/lower/lf" && echo deep >"$WORK/lower/ld/x" || return 1
	tfs_at_exit 'umount "$WORK/ovl" 2>/dev/null'
	mount -t overlay overlay -o "lowerdir=$WORK/lower,upperdir=$MNT/upper,workdir=$MNT/work" \
		"$WORK/ovl" 2>"$WORK/ovl.err"
}
if [ "$(id -u)" != 0 ]; then
	tfs_log "overlayfs part skipped: needs root"
elif ! overlay; then
	# a kernel without overlayfs, or one that refuses FUSE upper layers:
	# what this test checks above still stands
	tfs_log "overlayfs part skipped: mount failed: $(cat "$WORK/ovl.err")"
else
	grep -qi "whiteout\|tmpfile\|upper fs" "$WORK/ovl.err" &&
		tfs_log "overlayfs said: $(cat "$WORK/ovl.err")"
	rm "$WORK/ovl/lf" || tfs_fail "overlay: rm of a lower file failed"
	mv "$WORK/ovl/ld" "$WORK/ovl/ld2" || tfs_fail "overlay: mv of a lower directory failed"
	echo upper >"$WORK/ovl/new" || tfs_fail "overlay: create failed"
	mv "$WORK/ovl/new" "$WORK/ovl/new2" || tfs_fail "overlay: rename of an upper file failed"
	tfs_eq "overlay listing" "ld2 new2" "$(ls "$WORK/ovl" | tr '\n' ' ' | sed 's/ $//')"
	tfs_eq "overlay: moved directory's file" "deep" "$(cat "$WORK/ovl/ld2/x")"
	tfs_eq "whiteout of lf in the upper layer" "character special file 0,0" \
		"$(stat -c '%F %t,%T' "$MNT/upper/lf")"
	umount "$WORK/ovl" || tfs_fail "umount of the overlay failed"
	tfs_eq "lower layer untouched" "lower" "$(cat "$WORK/lower/lf")"
	tfs_log "overlayfs with its upper layer on tensorfs: deletes and renames work"
fi

tfs_umount
tfs_fsck_clean
tfs_pass
