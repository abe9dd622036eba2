#!/bin/bash
# Description: a 1 GiB file written sequentially with dd bs=1M lands in at most 8 extents (user.tensorfs.extents), reads back byte for byte, and keeps both its data and its extent count across a remount; two blocks with a hole between are two extents
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need dd sha256sum getfattr
tfs_setup 2G

size=$((1024 * 1048576))
extents() { getfattr --absolute-names -n user.tensorfs.extents --only-values "$1"; }

# the extent count is real, not a constant: two separate blocks are two extents
xfs_io -f -c "pwrite 0 4096" -c "pwrite 1M 4096" -c fsync "$MNT/two" >/dev/null || tfs_fail "xfs_io pwrite failed"
tfs_eq "extents of two blocks 1 MiB apart" 2 "$(extents "$MNT/two")"

want=$("$TFS_SYS" pattern "$size" 42 | sha256sum) || tfs_fail "cannot hash the pattern"
"$TFS_SYS" pattern "$size" 42 | dd of="$MNT/big" bs=1M iflag=fullblock conv=fsync 2>/dev/null
st=("${PIPESTATUS[@]}")
{ [ "${st[0]}" = 0 ] && [ "${st[1]}" = 0 ]; } || tfs_fail "writing 1 GiB through dd bs=1M failed (pattern ${st[0]}, dd ${st[1]})"
tfs_eq "size of the 1 GiB file" "$size" "$(stat -c %s "$MNT/big")"
# all data blocks allocated; a few blocks of extent map may be counted too
blocks=$(stat -c %b "$MNT/big")
{ [ "$blocks" -ge $((size / 512)) ] && [ "$blocks" -le $((size / 512 + 64)) ]; } ||
	tfs_fail "st_blocks of the 1 GiB file is $blocks, expected $((size / 512)) (+ at most 64 for metadata)"

n=$(extents "$MNT/big") || tfs_fail "getfattr -n user.tensorfs.extents failed"
case $n in
'' | *[!0-9]*) tfs_fail "user.tensorfs.extents is '$n', not a decimal count" ;;
esac
{ [ "$n" -ge 1 ] && [ "$n" -le 8 ]; } || tfs_fail "a sequentially written 1 GiB file has $n extents, expected 1 to 8"
tfs_eq "sha256 of the 1 GiB file" "$want" "$(sha256sum <"$MNT/big")"

tfs_umount
tfs_mount
n2=$(extents "$MNT/big") || tfs_fail "getfattr -n user.tensorfs.extents failed after remount"
case $n2 in
'' | *[!0-9]*) tfs_fail "user.tensorfs.extents after remount is '$n2', not a decimal count" ;;
esac
{ [ "$n2" -ge 1 ] && [ "$n2" -le 8 ]; } || tfs_fail "after remount the 1 GiB file has $n2 extents (had $n), expected 1 to 8"
tfs_eq "sha256 after remount" "$want" "$(sha256sum <"$MNT/big")"
tfs_eq "extents of two blocks after remount" 2 "$(extents "$MNT/two")"

tfs_umount
tfs_fsck_clean
tfs_pass
