#!/bin/bash
# Description: rename within and across directories keeps inode and content; replacing files and empty directories; ENOTEMPTY, EISDIR, ENOTDIR, EINVAL, ENOENT; RENAME_NOREPLACE and RENAME_EXCHANGE; directory link counts and '..' follow; mv; all persists across a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp mv
export LC_ALL=C
tfs_setup 512M

ino() { stat -c %i "$1"; }
nlink() { stat -c %h "$1"; }
gone() { { [ ! -e "$1" ] && [ ! -L "$1" ]; } || tfs_fail "$1 still exists after it was renamed away"; }

mkdir "$MNT/a" "$MNT/b" || tfs_fail "mkdir failed"

# ----- a file within a directory, then across -----

echo data1 >"$MNT/a/f1" || tfs_fail "write failed"
i1=$(ino "$MNT/a/f1")
tfs_errno OK rename "$MNT/a/f1" "$MNT/a/f2"
gone "$MNT/a/f1"
tfs_eq "content after rename in one directory" data1 "$(cat "$MNT/a/f2")"
tfs_eq "inode after rename in one directory" "$i1" "$(ino "$MNT/a/f2")"
tfs_errno OK rename "$MNT/a/f2" "$MNT/b/f3"
gone "$MNT/a/f2"
tfs_eq "content after rename across directories" data1 "$(cat "$MNT/b/f3")"
tfs_eq "inode after rename across directories" "$i1" "$(ino "$MNT/b/f3")"
tfs_eq "nlink of a renamed file" 1 "$(nlink "$MNT/b/f3")"

# ----- replacing an existing file -----

echo old >"$MNT/b/old" || tfs_fail "write failed"
ln "$MNT/b/old" "$MNT/a/oldlink" || tfs_fail "ln failed"
tfs_errno OK rename "$MNT/b/f3" "$MNT/b/old"
gone "$MNT/b/f3"
tfs_eq "content of the replaced name" data1 "$(cat "$MNT/b/old")"
tfs_eq "inode of the replaced name" "$i1" "$(ino "$MNT/b/old")"
# the replaced inode lost one link and kept its data
tfs_eq "nlink of the replaced file's other link" 1 "$(nlink "$MNT/a/oldlink")"
tfs_eq "content of the replaced file's other link" old "$(cat "$MNT/a/oldlink")"

# renaming onto itself, or onto another link of the same inode, does nothing
tfs_errno OK rename "$MNT/b/old" "$MNT/b/old"
tfs_eq "content after rename onto itself" data1 "$(cat "$MNT/b/old")"
ln "$MNT/b/old" "$MNT/b/old2" || tfs_fail "ln failed"
tfs_errno OK rename "$MNT/b/old" "$MNT/b/old2"
{ [ -e "$MNT/b/old" ] && [ -e "$MNT/b/old2" ]; } || tfs_fail "rename between two links of one inode removed a name"
tfs_eq "nlink after rename between two links of one inode" 2 "$(nlink "$MNT/b/old")"

# ----- directories -----

mkdir "$MNT/a/d1" "$MNT/a/d2" || tfs_fail "mkdir failed"
touch "$MNT/a/d1/x" || tfs_fail "touch failed"
id1=$(ino "$MNT/a/d1")
tfs_errno OK rename "$MNT/a/d1" "$MNT/a/d2"
gone "$MNT/a/d1"
[ -e "$MNT/a/d2/x" ] || tfs_fail "the directory that replaced an empty one lost its entry"
tfs_eq "inode of a directory renamed over an empty one" "$id1" "$(ino "$MNT/a/d2")"
tfs_eq "nlink of a after replacing one subdirectory with another" 3 "$(nlink "$MNT/a")"

mkdir "$MNT/a/full" || tfs_fail "mkdir failed"
touch "$MNT/a/full/y" "$MNT/a/file" || tfs_fail "touch failed"
tfs_errno ENOTEMPTY rename "$MNT/a/d2" "$MNT/a/full"
{ [ -e "$MNT/a/full/y" ] && [ -e "$MNT/a/d2/x" ]; } || tfs_fail "a failed rename onto a non-empty directory changed something"
tfs_errno EISDIR rename "$MNT/a/file" "$MNT/a/d2"
tfs_errno ENOTDIR rename "$MNT/a/d2" "$MNT/a/file"
mkdir -p "$MNT/a/p/q" || tfs_fail "mkdir -p failed"
tfs_errno EINVAL rename "$MNT/a/p" "$MNT/a/p/q/r"
tfs_errno EINVAL rename "$MNT/a/p" "$MNT/a/p/q"
[ -d "$MNT/a/p/q" ] || tfs_fail "a failed rename into its own subdirectory changed the tree"
tfs_errno ENOENT rename "$MNT/a/missing" "$MNT/a/x"
tfs_errno ENOENT rename "$MNT/a/file" "$MNT/nodir/x"
tfs_errno ENOTDIR rename "$MNT/a/file/x" "$MNT/a/x"

# a directory moved across parents: both link counts and its '..' follow
mkdir "$MNT/a/m" || tfs_fail "mkdir failed"
touch "$MNT/a/m/inside" || tfs_fail "touch failed"
na=$(nlink "$MNT/a")
nb=$(nlink "$MNT/b")
tfs_errno OK rename "$MNT/a/m" "$MNT/b/m"
tfs_eq "nlink of the old parent" $((na - 1)) "$(nlink "$MNT/a")"
tfs_eq "nlink of the new parent" $((nb + 1)) "$(nlink "$MNT/b")"
tfs_eq "inode of '..' in the moved directory" "$(ino "$MNT/b")" "$(ino "$MNT/b/m/..")"
[ -e "$MNT/b/m/inside" ] || tfs_fail "the moved directory lost its entry"
tfs_eq "nlink of the moved directory" 2 "$(nlink "$MNT/b/m")"

# ----- RENAME_NOREPLACE -----

echo keep >"$MNT/a/nr1" || tfs_fail "write failed"
echo other >"$MNT/b/nr2" || tfs_fail "write failed"
tfs_errno EEXIST rename2 noreplace "$MNT/a/nr1" "$MNT/b/nr2"
tfs_eq "source after a refused RENAME_NOREPLACE" keep "$(cat "$MNT/a/nr1")"
tfs_eq "target after a refused RENAME_NOREPLACE" other "$(cat "$MNT/b/nr2")"
tfs_errno EEXIST rename2 noreplace "$MNT/a/d2" "$MNT/b/m"
inr=$(ino "$MNT/a/nr1")
tfs_errno OK rename2 noreplace "$MNT/a/nr1" "$MNT/b/nr3"
gone "$MNT/a/nr1"
tfs_eq "RENAME_NOREPLACE to a free name" keep "$(cat "$MNT/b/nr3")"
tfs_eq "inode after RENAME_NOREPLACE" "$inr" "$(ino "$MNT/b/nr3")"

# ----- RENAME_EXCHANGE -----

echo E1 >"$MNT/a/e1" || tfs_fail "write failed"
echo E2 >"$MNT/b/e2" || tfs_fail "write failed"
ie1=$(ino "$MNT/a/e1")
ie2=$(ino "$MNT/b/e2")
tfs_errno OK rename2 exchange "$MNT/a/e1" "$MNT/b/e2"
tfs_eq "a/e1 after exchange" E2 "$(cat "$MNT/a/e1")"
tfs_eq "b/e2 after exchange" E1 "$(cat "$MNT/b/e2")"
tfs_eq "inode of a/e1 after exchange" "$ie2" "$(ino "$MNT/a/e1")"
tfs_eq "inode of b/e2 after exchange" "$ie1" "$(ino "$MNT/b/e2")"

# a file and a directory across directories: link counts and '..' follow
echo F >"$MNT/a/ef" || tfs_fail "write failed"
mkdir "$MNT/b/ed" || tfs_fail "mkdir failed"
touch "$MNT/b/ed/child" || tfs_fail "touch failed"
na=$(nlink "$MNT/a")
nb=$(nlink "$MNT/b")
tfs_errno OK rename2 exchange "$MNT/a/ef" "$MNT/b/ed"
{ [ -d "$MNT/a/ef" ] && [ -e "$MNT/a/ef/child" ]; } || tfs_fail "a/ef is not the directory after exchange"
[ -f "$MNT/b/ed" ] || tfs_fail "b/ed is not the file after exchange"
tfs_eq "b/ed content after exchange" F "$(cat "$MNT/b/ed")"
tfs_eq "nlink of a after a directory came in by exchange" $((na + 1)) "$(nlink "$MNT/a")"
tfs_eq "nlink of b after a directory left by exchange" $((nb - 1)) "$(nlink "$MNT/b")"
tfs_eq "'..' of the exchanged directory" "$(ino "$MNT/a")" "$(ino "$MNT/a/ef/..")"
tfs_errno ENOENT rename2 exchange "$MNT/a/e1" "$MNT/b/nothere"

# ----- mv -----

"$TFS_SYS" pattern 3000000 31 >"$WORK/big.ref" || tfs_fail "cannot make the reference"
cp "$WORK/big.ref" "$MNT/a/big" || tfs_fail "cp failed"
ib=$(ino "$MNT/a/big")
mv "$MNT/a/big" "$MNT/b/" || tfs_fail "mv of a file into a directory failed"
cmp "$WORK/big.ref" "$MNT/b/big" || tfs_fail "mv changed the file content"
tfs_eq "inode after mv" "$ib" "$(ino "$MNT/b/big")"
mkdir -p "$MNT/a/tree/sub" || tfs_fail "mkdir -p failed"
echo leaf >"$MNT/a/tree/sub/leaf" || tfs_fail "write failed"
mv "$MNT/a/tree" "$MNT/b/tree2" || tfs_fail "mv of a tree failed"
tfs_eq "leaf of a moved tree" leaf "$(cat "$MNT/b/tree2/sub/leaf")"
gone "$MNT/a/tree"

# ----- after a remount -----

tfs_umount
tfs_mount
tfs_eq "b/old after remount" data1 "$(cat "$MNT/b/old")"
tfs_eq "inode of b/old after remount" "$i1" "$(ino "$MNT/b/old")"
tfs_eq "a/e1 after remount" E2 "$(cat "$MNT/a/e1")"
tfs_eq "b/e2 after remount" E1 "$(cat "$MNT/b/e2")"
tfs_eq "'..' of b/m after remount" "$(ino "$MNT/b")" "$(ino "$MNT/b/m/..")"
tfs_eq "'..' of a/ef after remount" "$(ino "$MNT/a")" "$(ino "$MNT/a/ef/..")"
tfs_eq "nlink of a after remount" "$((na + 1))" "$(nlink "$MNT/a")"
cmp "$WORK/big.ref" "$MNT/b/big" || tfs_fail "moved file differs after remount"
tfs_eq "leaf after remount" leaf "$(cat "$MNT/b/tree2/sub/leaf")"
for gone_name in a/f1 a/f2 b/f3 a/d1 a/m a/nr1 a/big a/tree; do
	gone "$MNT/$gone_name"
done
tfs_eq "entries of a after remount" "d2 e1 ef file full oldlink p" "$(find "$MNT/a" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"

tfs_umount
tfs_fsck_clean
tfs_pass
