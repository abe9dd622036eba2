#!/bin/bash
# Description: symlinks (relative, absolute, dangling, to directories, long targets, loops) with readlink and lstat versus stat; hard links share inode and data, count links, survive removal of one name, refuse directories (EPERM); all persists across a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need readlink ln
tfs_setup 512M

ino() { stat -c %i "$1"; }
nlink() { stat -c %h "$1"; }

echo target >"$MNT/t" || tfs_fail "write failed"
mkdir "$MNT/sub" || tfs_fail "mkdir failed"

# ----- symlinks -----

ln -s t "$MNT/rel" || tfs_fail "ln -s of a relative target failed"
ln -s "$MNT/t" "$MNT/abs" || tfs_fail "ln -s of an absolute target failed"
ln -s ../t "$MNT/sub/up" || tfs_fail "ln -s ../t failed"
ln -s sub "$MNT/dirlink" || tfs_fail "ln -s to a directory failed"
ln -s nowhere "$MNT/dangling" || tfs_fail "ln -s of a dangling target failed"
tfs_eq "readlink of a relative symlink" t "$(readlink "$MNT/rel")"
tfs_eq "readlink of an absolute symlink" "$MNT/t" "$(readlink "$MNT/abs")"
tfs_eq "readlink of ../t" ../t "$(readlink "$MNT/sub/up")"
tfs_eq "readlink of a dangling symlink" nowhere "$(readlink "$MNT/dangling")"
tfs_eq "read through a relative symlink" target "$(cat "$MNT/rel")"
tfs_eq "read through an absolute symlink" target "$(cat "$MNT/abs")"
tfs_eq "read through ../t from a subdirectory" target "$(cat "$MNT/sub/up")"
tfs_eq "readlink -f through a directory symlink" "$(readlink -f "$MNT/sub/up")" "$(readlink -f "$MNT/dirlink/up")"

# lstat describes the link, stat its target
tfs_eq "lstat type" "symbolic link" "$(stat -c %F "$MNT/rel")"
tfs_eq "stat -L type" "regular file" "$(stat -L -c %F "$MNT/rel")"
tfs_eq "stat -L type through a directory symlink" directory "$(stat -L -c %F "$MNT/dirlink")"
tfs_eq "lstat size of a symlink is its target length" 1 "$(stat -c %s "$MNT/rel")"
tfs_eq "lstat size of an absolute symlink" $((${#MNT} + 2)) "$(stat -c %s "$MNT/abs")"
tfs_eq "stat -L inode is the target's" "$(ino "$MNT/t")" "$(stat -L -c %i "$MNT/rel")"
[ "$(ino "$MNT/rel")" != "$(ino "$MNT/t")" ] || tfs_fail "a symlink has its target's inode number"
tfs_eq "symlink mode" 777 "$(stat -c %a "$MNT/rel")"
[ -L "$MNT/dangling" ] || tfs_fail "test -L is false for a dangling symlink"
[ -e "$MNT/dangling" ] && tfs_fail "test -e is true for a dangling symlink"
tfs_errno ENOENT open "$MNT/dangling" rdonly
tfs_errno ELOOP open "$MNT/rel" rdonly,nofollow
tfs_errno EEXIST symlink x "$MNT/rel"
tfs_errno ENOENT symlink x "$MNT/nodir/l"

# a dangling symlink starts to work when its target appears
echo now >"$MNT/nowhere" || tfs_fail "write failed"
tfs_eq "read through a formerly dangling symlink" now "$(cat "$MNT/dangling")"

# loops
{ ln -s loop2 "$MNT/loop1" && ln -s loop1 "$MNT/loop2"; } || tfs_fail "ln -s of a loop failed"
tfs_errno ELOOP open "$MNT/loop1" rdonly

# long targets: 1000 bytes of path, and one 255-byte component
long=$(head -c 200 /dev/zero | tr '\0' d)
long="$long/$long/$long/$long/$long"
ln -s "$long" "$MNT/long" || tfs_fail "ln -s of a 1004-byte target failed"
tfs_eq "readlink of a 1004-byte target" "$long" "$(readlink "$MNT/long")"
tfs_eq "lstat size of a 1004-byte target" 1004 "$(stat -c %s "$MNT/long")"
name255=$(head -c 255 /dev/zero | tr '\0' n)
ln -s "$name255" "$MNT/l255" || tfs_fail "ln -s of a 255-byte target failed"
tfs_eq "readlink of a 255-byte target" "$name255" "$(readlink "$MNT/l255")"

# removing a symlink leaves its target
rm "$MNT/rel" || tfs_fail "rm of a symlink failed"
tfs_eq "target after rm of its symlink" target "$(cat "$MNT/t")"

# ----- hard links -----

echo data >"$MNT/h1" || tfs_fail "write failed"
ln "$MNT/h1" "$MNT/h2" || tfs_fail "ln failed"
ln "$MNT/h1" "$MNT/sub/h3" || tfs_fail "ln across directories failed"
tfs_eq "nlink with three names" 3 "$(nlink "$MNT/h1")"
tfs_eq "nlink seen through another name" 3 "$(nlink "$MNT/sub/h3")"
tfs_eq "inode of a hard link" "$(ino "$MNT/h1")" "$(ino "$MNT/h2")"
tfs_eq "inode of a hard link in a subdirectory" "$(ino "$MNT/h1")" "$(ino "$MNT/sub/h3")"
echo more >>"$MNT/h2" || tfs_fail "append through a second name failed"
tfs_eq "data written through one name, read through another" "$(printf 'data\nmore')" "$(cat "$MNT/sub/h3")"
chmod 600 "$MNT/h2" || tfs_fail "chmod failed"
tfs_eq "mode change seen through another name" 600 "$(stat -c %a "$MNT/h1")"
rm "$MNT/h1" || tfs_fail "rm of one name failed"
tfs_eq "nlink after removing one name" 2 "$(nlink "$MNT/h2")"
tfs_eq "data after removing one name" "$(printf 'data\nmore')" "$(cat "$MNT/h2")"
tfs_errno EPERM link "$MNT/sub" "$MNT/sublink"
tfs_errno ENOENT link "$MNT/h1" "$MNT/h4"
tfs_errno EEXIST link "$MNT/h2" "$MNT/t"
tfs_errno ENOENT link "$MNT/h2" "$MNT/nodir/h4"
tfs_eq "nlink of a directory after a refused link" 2 "$(nlink "$MNT/sub")"

# link(2) of a symlink links the symlink itself
tfs_errno OK link "$MNT/abs" "$MNT/abs2"
tfs_eq "type of a hard link to a symlink" "symbolic link" "$(stat -c %F "$MNT/abs2")"
tfs_eq "inode of a hard link to a symlink" "$(ino "$MNT/abs")" "$(ino "$MNT/abs2")"
tfs_eq "nlink of a hard-linked symlink" 2 "$(nlink "$MNT/abs")"
tfs_eq "nlink of its target" 1 "$(nlink "$MNT/t")"

# ----- after a remount -----

tfs_umount
tfs_mount
tfs_eq "readlink of abs after remount" "$MNT/t" "$(readlink "$MNT/abs")"
tfs_eq "readlink of the long target after remount" "$long" "$(readlink "$MNT/long")"
tfs_eq "read through sub/up after remount" target "$(cat "$MNT/sub/up")"
tfs_eq "nlink of h2 after remount" 2 "$(nlink "$MNT/h2")"
tfs_eq "inode of sub/h3 after remount" "$(ino "$MNT/h2")" "$(ino "$MNT/sub/h3")"
tfs_eq "data of sub/h3 after remount" "$(printf 'data\nmore')" "$(cat "$MNT/sub/h3")"
tfs_eq "nlink of abs2 after remount" 2 "$(nlink "$MNT/abs2")"
[ -e "$MNT/rel" ] || [ -L "$MNT/rel" ] && tfs_fail "removed symlink came back after remount"
rm "$MNT/h2" "$MNT/sub/h3" || tfs_fail "rm of the last names failed"

tfs_umount
tfs_fsck_clean
tfs_pass
