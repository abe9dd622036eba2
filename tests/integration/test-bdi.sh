#!/bin/bash
# Description: as root, a mount raises its bdi's readahead and dirty-page
# share to the configured values, and 0 leaves the kernel's.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || tfs_skip "needs root to write /sys/class/bdi"
tfs_setup 256M

bdi() { awk -v m="$MNT" '$5 == m {print $3}' /proc/self/mountinfo; }
dev=$(bdi)
[ -n "$dev" ] || tfs_fail "no mountinfo line for $MNT"
ra=$(cat "/sys/class/bdi/$dev/read_ahead_kb")
mr=$(cat "/sys/class/bdi/$dev/max_ratio")
[ "$ra" = 4096 ] || tfs_fail "read_ahead_kb: expected the default 4096, got $ra"
[ "$mr" = 40 ] || tfs_fail "max_ratio: expected the default 40, got $mr"
tfs_umount

tfs_mount -o read_ahead_kb=0,bdi_max_ratio=7
dev=$(bdi)
ra=$(cat "/sys/class/bdi/$dev/read_ahead_kb")
mr=$(cat "/sys/class/bdi/$dev/max_ratio")
[ "$ra" -le 1024 ] || tfs_fail "read_ahead_kb=0 should leave the kernel's value (128), got $ra"
[ "$mr" = 7 ] || tfs_fail "bdi_max_ratio=7: got $mr"
tfs_umount
tfs_fsck_clean
tfs_pass
