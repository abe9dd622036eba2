#!/bin/bash
# Description: tensorfs-fsck of a set whose member is damaged: one superblock copy of member 2 overwritten (mounts on the other; fsck exits 4 naming member 2 and its image, -y rewrites it and exits 1, then 0); both copies of member 3 overwritten (the mount is refused naming the image and the fsck -y that repairs it; fsck finds member 3 by elimination, -y rewrites it, and the data striped over it reads back exactly); an image of another size in member 3's place, or member 1 (the journal's) without superblocks, is refused and nothing is written
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp dd
tfs_at_exit tfs_kill_strays
tfs_mkimg 64M # the work directory (and an image this test does not use)
tfs_mkset 3 96M
M1=$WORK/m1.img
M2=$WORK/m2.img
M3=$WORK/m3.img
SPEC=$IMG

head -c 120M /dev/urandom >"$WORK/src"
tfs_mount
cp "$WORK/src" "$MNT/big" || tfs_fail "cp of 120 MiB to the set failed"
tfs_umount
tfs_fsck_clean

# overwrite block N (4 KiB) of FILE with random bytes
smash() { dd if=/dev/urandom of="$1" bs=4096 seek="$2" count=1 conv=notrunc status=none || tfs_fail "cannot overwrite block $2 of $1"; }

# ----- one copy of member 2's superblock -----
smash "$M2" 1
tfs_expect_exit 4 "tensorfs-fsck with one superblock copy of member 2 damaged" "$FSCK" "$SPEC"
tfs_expect_words "tensorfs-fsck, member 2 damaged" "$WORK/out" "member 2" "$M2" "-y"
tfs_mount
cmp "$WORK/src" "$MNT/big" || tfs_fail "the file on a set whose member 2 lost one superblock copy: expected its bytes, got others"
tfs_umount
tfs_expect_exit 1 "tensorfs-fsck -y with one superblock copy of member 2 damaged" "$FSCK" -y "$SPEC"
tfs_expect_words "tensorfs-fsck -y, member 2" "$WORK/out" "member 2" "rewritten"
tfs_fsck_clean

# ----- both copies of member 3's superblock -----
smash "$M3" 0
smash "$M3" 1
tfs_expect_mount_refused "a set whose member 3 lost both superblock copies" "$SPEC" "$MNT" "$M3" "member 3" "tensorfs-fsck -y"
tfs_expect_exit 4 "tensorfs-fsck with member 3's superblocks gone" "$FSCK" "$SPEC"
tfs_expect_words "tensorfs-fsck, member 3 lost" "$WORK/out" "member 3" "$M3"
cp --sparse=always "$M3" "$WORK/m3-before"
tfs_expect_exit 1 "tensorfs-fsck -y with member 3's superblocks gone" "$FSCK" -y "$SPEC"
tfs_expect_words "tensorfs-fsck -y, member 3" "$WORK/out" "member 3" "rewritten"
tfs_fsck_clean
# the order given does not matter once repaired
IMG="$M3:$M1:$M2"
tfs_mount
cmp "$WORK/src" "$MNT/big" || tfs_fail "the file after member 3's superblocks were rewritten: expected its bytes, got others"
tfs_umount
IMG=$SPEC
# only its two superblock blocks changed
cmp -n 8192 "$M3" "$WORK/m3-before" >/dev/null && tfs_fail "fsck -y said it rewrote member 3's superblocks, but their blocks are unchanged"
cmp -i 8192 "$M3" "$WORK/m3-before" || tfs_fail "fsck -y changed member 3 past its superblocks"

# ----- not the missing member: refused, nothing written -----
smash "$M3" 0
smash "$M3" 1
cp --sparse=always "$M3" "$WORK/m3-lost"
truncate -s 80M "$WORK/other.img"
tfs_expect_exit 8 "tensorfs-fsck -y with an image of another size in member 3's place" "$FSCK" -y "$M1:$M2:$WORK/other.img"
tfs_expect_words "tensorfs-fsck -y, another image" "$WORK/err" "other.img" "no valid tensorfs superblock"
[ "$(stat -c %b "$WORK/other.img")" = 0 ] || tfs_fail "fsck -y wrote to an image that is not member 3"
cmp "$M3" "$WORK/m3-lost" || tfs_fail "fsck -y refused, yet member 3 changed"
tfs_expect_exit 8 "tensorfs-fsck -y of the set with two members lacking superblocks" "$FSCK" -y "$M1:$WORK/other.img:$M3"
cmp "$M3" "$WORK/m3-lost" || tfs_fail "fsck -y refused two lost members, yet member 3 changed"
# member 1 holds the journal: it is never taken by elimination
tfs_expect_exit 1 "tensorfs-fsck -y to repair member 3 again" "$FSCK" -y "$SPEC"
cp --sparse=always "$M1" "$WORK/m1-good"
smash "$M1" 0
smash "$M1" 1
tfs_expect_exit 8 "tensorfs-fsck -y with member 1's superblocks gone" "$FSCK" -y "$SPEC"
tfs_expect_words "tensorfs-fsck -y, member 1 lost" "$WORK/err" "$M1" "no valid tensorfs superblock"
cp --sparse=always "$WORK/m1-good" "$M1"
tfs_fsck_clean
tfs_pass
