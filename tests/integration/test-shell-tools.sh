#!/bin/bash
# Description: everyday tools on the mount: cp and cp -a of a tree with symlinks, hard links and xattrs (mode, times to the nanosecond, links and attributes kept), cmp, sha256sum, mv, ls -l, find, a tar round trip with xattrs, getfattr -d, rm -r
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cp cmp sha256sum mv ls find tar getfattr setfattr diff
export LC_ALL=C
umask 022
tfs_setup 512M

# ----- a source tree outside the mount -----

src="$WORK/src"
mkdir -p "$src/d1/d2/d3" "$src/empty" || tfs_fail "mkdir -p failed"
: >"$src/zero"
printf x >"$src/one"
"$TFS_SYS" pattern 4096 1 >"$src/d1/block"
"$TFS_SYS" pattern 100000 2 >"$src/d1/d2/mid"
"$TFS_SYS" pattern $((3 * 1048576 + 17)) 3 >"$src/d1/d2/d3/big"
ln -s d1/block "$src/rel"
ln -s ../../one "$src/d1/d2/up"
ln -s /nonexistent/target "$src/dangling"
ln "$src/d1/block" "$src/hard" || tfs_fail "ln in the source tree failed"
{ chmod 0600 "$src/one" && chmod 0750 "$src/d1" && chmod 4755 "$src/d1/d2/mid"; } || tfs_fail "chmod failed"
touch -h -d '2003-04-05 06:07:08.123456789 UTC' "$src/rel" "$src/d1/block" "$src/d1/d2" ||
	tfs_fail "touch -h -d failed"

# listing DIR: one line per entry with everything cp -a must keep
listing() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %s %T@ %n %l\n' | awk '$2 == "d" { $4 = "-" } 1' | sort)
}
# sums DIR: sha256 of every regular file
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

# ----- cp -a into the mount -----

cp -a "$src" "$MNT/a" || tfs_fail "cp -a into the mount failed"
tfs_eq "tree listing after cp -a in" "$(listing "$src")" "$(listing "$MNT/a")"
tfs_eq "checksums after cp -a in" "$(sums "$src")" "$(sums "$MNT/a")"
diff -r --no-dereference "$src" "$MNT/a" >/dev/null || tfs_fail "diff -r finds differences after cp -a"
tfs_eq "hard link kept by cp -a" "$(stat -c %i "$MNT/a/d1/block")" "$(stat -c %i "$MNT/a/hard")"
tfs_eq "readlink of a copied dangling symlink" /nonexistent/target "$(readlink "$MNT/a/dangling")"

# plain cp and cmp
cp "$src/d1/d2/d3/big" "$MNT/bigcopy" || tfs_fail "cp failed"
cmp "$src/d1/d2/d3/big" "$MNT/bigcopy" || tfs_fail "cmp after cp differs"
cmp -s "$src/d1/d2/mid" "$MNT/bigcopy" && tfs_fail "cmp says two different files are equal"

# ----- xattrs, and cp -a within the mount -----

setfattr -n user.color -v blue "$MNT/a/one" || tfs_fail "setfattr failed"
setfattr -n user.bin -v 0xdeadbeef00 "$MNT/a/d1/d2/mid" || tfs_fail "setfattr failed"
setfattr -n user.dir -v here "$MNT/a/d1" || tfs_fail "setfattr on a directory failed"
# xattrs DIR: every user.* attribute in the tree
xattrs() { (cd "$1" && getfattr -R -h -d -m '^user\.' . 2>/dev/null); }
[ -n "$(xattrs "$MNT/a")" ] || tfs_fail "getfattr -R -d shows no attributes"
xattrs "$MNT/a" | grep -q '^user.color="blue"$' || tfs_fail "getfattr -d does not show user.color"
cp -a "$MNT/a" "$MNT/b" || tfs_fail "cp -a within the mount failed"
tfs_eq "tree listing after cp -a within the mount" "$(listing "$MNT/a")" "$(listing "$MNT/b")"
tfs_eq "checksums after cp -a within the mount" "$(sums "$MNT/a")" "$(sums "$MNT/b")"
tfs_eq "xattrs after cp -a within the mount" "$(xattrs "$MNT/a")" "$(xattrs "$MNT/b")"

# ----- tar round trip through an archive outside the mount -----

tar --xattrs --xattrs-include='user.*' -C "$MNT/a" -cf "$WORK/a.tar" . || tfs_fail "tar c from the mount failed"
mkdir "$MNT/c" || tfs_fail "mkdir failed"
tar --xattrs --xattrs-include='user.*' -C "$MNT/c" -xpf "$WORK/a.tar" || tfs_fail "tar x into the mount failed"
# tar keeps mtimes to the microsecond or better; compare those at whole seconds
lsec() { listing "$1" | awk '{ sub(/\..*/, "", $5) } 1'; }
tfs_eq "tree listing after tar" "$(lsec "$MNT/a")" "$(lsec "$MNT/c")"
tfs_eq "checksums after tar" "$(sums "$MNT/a")" "$(sums "$MNT/c")"
tfs_eq "xattrs after tar" "$(xattrs "$MNT/a")" "$(xattrs "$MNT/c")"
mkdir "$WORK/out" || tfs_fail "mkdir failed"
tar -C "$MNT/c" -cf - . | tar -C "$WORK/out" -xpf - || tfs_fail "tar pipe out of the mount failed"
tfs_eq "checksums after tar out of the mount" "$(sums "$src")" "$(sums "$WORK/out")"

# ----- mv -----

mv "$MNT/c" "$MNT/moved" || tfs_fail "mv of a tree failed"
[ -e "$MNT/c" ] && tfs_fail "mv left the source name"
tfs_eq "checksums after mv" "$(sums "$MNT/a")" "$(sums "$MNT/moved")"
mv "$MNT/moved/d1/d2/d3/big" "$MNT/b/" || tfs_fail "mv of a file across directories failed"
cmp "$src/d1/d2/d3/big" "$MNT/b/big" || tfs_fail "mv changed a file"

# ----- ls -l and find -----

# ls -ln columns other than blocks, dates and directory sizes
# shellcheck disable=SC2012 # ls -l output is what is tested here
lsl() { ls -lnR "$1" | awk '/^total/ { next } /^d/ { $5 = "-" } { $6 = $7 = $8 = "" } 1'; }
tfs_eq "ls -lnR of the copy" "$(cd "$src" && lsl .)" "$(cd "$MNT/a" && lsl .)"
# shellcheck disable=SC2010 # ls -l output is what is tested here
ls -l "$MNT/a/rel" | grep -q -- '-> d1/block$' || tfs_fail "ls -l does not show the symlink target"
tfs_eq "find -type f" 6 "$(find "$MNT/a" -type f | wc -l)"
tfs_eq "find -type l" 3 "$(find "$MNT/a" -type l | wc -l)"
tfs_eq "find -type d" 5 "$(find "$MNT/a" -type d | wc -l)"
tfs_eq "find -name big" "$MNT/a/d1/d2/d3/big" "$(find "$MNT/a" -name big)"
tfs_eq "find -size +1M" "$MNT/a/d1/d2/d3/big" "$(find "$MNT/a" -type f -size +1M)"
tfs_eq "find -empty" "$MNT/a/empty $MNT/a/zero" "$(find "$MNT/a" -empty | sort | tr '\n' ' ' | sed 's/ $//')"
tfs_eq "find -perm -4000" "$MNT/a/d1/d2/mid" "$(find "$MNT/a" -perm -4000)"
tfs_eq "find -samefile" "$MNT/a/d1/block $MNT/a/hard" "$(find "$MNT/a" -samefile "$MNT/a/hard" | sort | tr '\n' ' ' | sed 's/ $//')"

# ----- rm -r, then after a remount the rest is intact -----

rm -r "$MNT/moved" || tfs_fail "rm -r failed"
[ -e "$MNT/moved" ] && tfs_fail "rm -r left the tree"
tfs_umount
tfs_mount
tfs_eq "tree listing of a after remount" "$(listing "$src")" "$(listing "$MNT/a")"
tfs_eq "xattrs of b after remount" "$(xattrs "$MNT/a")" "$(xattrs "$MNT/b")"
tfs_eq "root entries after remount" "a b bigcopy" "$(find "$MNT" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"

tfs_umount
tfs_fsck_clean
tfs_pass
