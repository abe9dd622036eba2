#!/bin/bash
# Description: an unlinked or renamed-over file stays readable and writable through open descriptors until the last close, leaves no name behind, and its space returns to statfs only after that close
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp sha256sum
tfs_setup 512M

# two descriptors, unlink, nlink 0, read, grow, close one, read the other
mkdir "$MNT/a" || tfs_fail "mkdir failed"
tfs_errno OK unlink-open "$MNT/a/one"
tfs_errno OK unlink-open "$MNT/a/two" 5000000
tfs_eq "directory after unlinking open files" "" "$(ls -A "$MNT/a")"

# ----- the shell way: exec 3<file; rm file; cat <&3 -----

size=$((20 * 1048576))
"$TFS_SYS" pattern "$size" 21 >"$WORK/big.ref" || tfs_fail "cannot make the reference"
want=$(sha256sum <"$WORK/big.ref")
cp "$WORK/big.ref" "$MNT/a/big" || tfs_fail "cp of 20 MiB failed"
sync "$MNT/a/big" || tfs_fail "sync of the file failed"
free0=$(tfs_free_bytes)
exec 3<"$MNT/a/big" || tfs_fail "cannot open the file on fd 3"
rm "$MNT/a/big" || tfs_fail "rm of the open file failed"
[ -e "$MNT/a/big" ] && tfs_fail "the name is still there after rm"
tfs_eq "directory after rm of an open file (no hidden names)" "" "$(ls -A "$MNT/a")"
tfs_eq "data read through fd 3 after rm" "$want" "$(sha256sum <&3)"
free1=$(tfs_free_bytes)
# the blocks are still in use while fd 3 is open
[ $((free1 - free0)) -lt $((size / 2)) ] ||
	tfs_fail "free space grew by $((free1 - free0)) bytes while the unlinked file was still open"
exec 3<&-
# shellcheck disable=SC2317 # called through tfs_wait_for
back() { [ $(($(tfs_free_bytes) - free0)) -ge $((size - 262144)) ]; }
tfs_wait_for 10 back ||
	tfs_fail "free space grew by $(($(tfs_free_bytes) - free0)) bytes after the last close, expected about $size"

# ----- rename over an open file: the old inode lives on the same way -----

"$TFS_SYS" pattern "$size" 22 >"$WORK/old.ref" || tfs_fail "cannot make the reference"
cp "$WORK/old.ref" "$MNT/a/target" || tfs_fail "cp failed"
printf 'new content\n' >"$MNT/a/src" || tfs_fail "write failed"
sync "$MNT/a/target" || tfs_fail "sync failed"
free0=$(tfs_free_bytes)
exec 4<"$MNT/a/target" || tfs_fail "cannot open the target on fd 4"
mv "$MNT/a/src" "$MNT/a/target" || tfs_fail "mv over an open file failed"
tfs_eq "content of the new target" "new content" "$(cat "$MNT/a/target")"
tfs_eq "old data read through fd 4 after the rename" "$(sha256sum <"$WORK/old.ref")" "$(sha256sum <&4)"
tfs_eq "directory after the rename" "target" "$(ls -A "$MNT/a")"
exec 4<&-
tfs_wait_for 10 back ||
	tfs_fail "free space grew by $(($(tfs_free_bytes) - free0)) bytes after closing the renamed-over file, expected about $size"

# ----- a write-only descriptor on an unlinked file still writes -----

exec 5>"$MNT/a/w" || tfs_fail "cannot open a new file on fd 5"
exec 6<"$MNT/a/w" || tfs_fail "cannot open the same file on fd 6"
rm "$MNT/a/w" || tfs_fail "rm failed"
printf 'written after unlink\n' >&5 || tfs_fail "write to the unlinked file failed"
exec 5>&-
tfs_eq "data written after unlink, read through another fd" "written after unlink" "$(cat <&6)"
exec 6<&-

# nothing is left for fsck to find as an orphan
tfs_umount
tfs_mount
tfs_eq "directory after remount" "target" "$(ls -A "$MNT/a")"
tfs_eq "target after remount" "new content" "$(cat "$MNT/a/target")"

tfs_umount
tfs_fsck_clean
tfs_pass
