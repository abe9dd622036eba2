#!/bin/bash
# Description: mkdir and rmdir with their exact errors, directory link counts (2 + subdirectories), '.' and '..', and a directory of 100,000 entries that lists completely and exactly, survives a remount, and empties by unlinking while reading
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need find sort cmp
export LC_ALL=C
umask 022
tfs_setup 4G

ino() { stat -c %i "$1"; }
nlink() { stat -c %h "$1"; }

# ----- a fresh root -----

tfs_eq "entries in the root of a fresh mount" "" "$(ls -A "$MNT")"
tfs_eq "nlink of an empty root" 2 "$(nlink "$MNT")"

# ----- mkdir -----

tfs_errno OK mkdir "$MNT/d"
tfs_eq "type of a new directory" directory "$(stat -c %F "$MNT/d")"
tfs_eq "mode of mkdir 0755 under umask 022" 755 "$(stat -c %a "$MNT/d")"
tfs_eq "nlink of an empty directory" 2 "$(nlink "$MNT/d")"
tfs_eq "entries of a new directory" "" "$(ls -A "$MNT/d")"
tfs_eq "nlink of the root with one subdirectory" 3 "$(nlink "$MNT")"
tfs_eq "'.' of a directory" "$(ino "$MNT/d")" "$(ino "$MNT/d/.")"
tfs_eq "'..' of a directory" "$(ino "$MNT")" "$(ino "$MNT/d/..")"
tfs_errno OK mkdir "$MNT/m700" 0700
tfs_eq "mode of mkdir 0700" 700 "$(stat -c %a "$MNT/m700")"
(umask 077 && mkdir "$MNT/u077") || tfs_fail "mkdir under umask 077 failed"
tfs_eq "mode of mkdir under umask 077" 700 "$(stat -c %a "$MNT/u077")"
touch "$MNT/file" || tfs_fail "touch failed"
tfs_errno EEXIST mkdir "$MNT/d"
tfs_errno EEXIST mkdir "$MNT/file"
tfs_errno ENOENT mkdir "$MNT/missing/x"
tfs_errno ENOTDIR mkdir "$MNT/file/x"

# ----- rmdir and unlink of a directory -----

tfs_errno ENOENT rmdir "$MNT/missing"
tfs_errno ENOTDIR rmdir "$MNT/file"
touch "$MNT/d/f" || tfs_fail "touch failed"
tfs_errno ENOTEMPTY rmdir "$MNT/d"
tfs_errno EISDIR unlink "$MNT/d"
rm "$MNT/d/f" || tfs_fail "rm failed"
tfs_errno OK rmdir "$MNT/d"
[ -e "$MNT/d" ] && tfs_fail "directory still exists after rmdir"
tfs_errno ENOENT rmdir "$MNT/d"
tfs_eq "nlink of the root after rmdir" 4 "$(nlink "$MNT")"

# ----- link counts follow subdirectories, not files -----

mkdir "$MNT/p" "$MNT/q" || tfs_fail "mkdir failed"
mkdir "$MNT/p/s1" "$MNT/p/s2" "$MNT/p/s3" || tfs_fail "mkdir of three subdirectories failed"
tfs_eq "nlink with three subdirectories" 5 "$(nlink "$MNT/p")"
touch "$MNT/p/f1" "$MNT/p/f2" || tfs_fail "touch failed"
tfs_eq "nlink after adding files" 5 "$(nlink "$MNT/p")"
rmdir "$MNT/p/s1" || tfs_fail "rmdir failed"
tfs_eq "nlink after rmdir of a subdirectory" 4 "$(nlink "$MNT/p")"
mv "$MNT/p/s2" "$MNT/q/" || tfs_fail "mv of a subdirectory failed"
tfs_eq "nlink of the old parent after mv" 3 "$(nlink "$MNT/p")"
tfs_eq "nlink of the new parent after mv" 3 "$(nlink "$MNT/q")"
tfs_eq "'..' of p/s3" "$(ino "$MNT/p")" "$(ino "$MNT/p/s3/..")"
tfs_eq "subdirectories found by find -type d" 1 "$(find "$MNT/p" -mindepth 1 -maxdepth 1 -type d | wc -l)"
tfs_eq "files found by find -type f" 2 "$(find "$MNT/p" -mindepth 1 -maxdepth 1 -type f | wc -l)"

# ----- 100,000 entries -----

n=100000
mkdir "$MNT/big" || tfs_fail "mkdir failed"
tfs_errno OK create-many "$MNT/big" "$n"
seq -f 'e%06.0f' 0 $((n - 1)) >"$WORK/want" || tfs_fail "cannot write the expected names"

# check_big WHEN: the listing has every name exactly once, plus . and ..
check_big() {
	ls -f "$MNT/big" >"$WORK/raw" || tfs_fail "ls -f of $n entries failed ($1)"
	tfs_eq "ls -f | wc -l of $n entries ($1)" $((n + 2)) "$(wc -l <"$WORK/raw")"
	grep -v -x -e . -e .. "$WORK/raw" | sort >"$WORK/got"
	cmp -s "$WORK/want" "$WORK/got" ||
		tfs_fail "names listed differ from those created ($1): $(diff "$WORK/want" "$WORK/got" | head -5 | tr '\n' ' ')"
	tfs_eq "find -type f count ($1)" "$n" "$(find "$MNT/big" -mindepth 1 -type f | wc -l)"
	tfs_eq "nlink of a directory of files ($1)" 2 "$(nlink "$MNT/big")"
	[ -f "$MNT/big/e054321" ] || tfs_fail "lookup of e054321 failed ($1)"
	[ -e "$MNT/big/e100000" ] && tfs_fail "lookup of a name never created succeeded ($1)"
}
check_big "after creating"
tfs_errno EEXIST open "$MNT/big/e000000" creat,excl,wronly
tfs_errno EEXIST open "$MNT/big/e099999" creat,excl,wronly

tfs_umount
tfs_mount
check_big "after remount"

# unlink each entry as readdir returns it, as rm -r does: no entry may be
# skipped because others were removed meanwhile
removed=$("$TFS_SYS" readdir-unlink "$MNT/big") || tfs_fail "readdir-unlink failed"
tfs_eq "entries removed while reading" "$n" "$removed"
tfs_eq "entries left" "" "$(ls -A "$MNT/big")"
tfs_errno OK rmdir "$MNT/big"

tfs_umount
tfs_mount
[ -e "$MNT/big" ] && tfs_fail "removed directory came back after remount"
tfs_eq "nlink of p after remount" 3 "$(nlink "$MNT/p")"
tfs_eq "root entries after remount" "file m700 p q u077" "$(find "$MNT" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"

tfs_umount
tfs_fsck_clean
tfs_pass
