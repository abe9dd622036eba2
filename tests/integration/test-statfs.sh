#!/bin/bash
# Description: statfs reports 4 KiB blocks and plausible totals; free and available space fall by what is written and fsynced and come back after rm, within a small metadata slack; the total stays put; df agrees
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need stat df dd
tfs_setup 1G

slack=$((2 * 1048576)) # metadata may take or leave up to 2 MiB
mib=1048576

# sf FIELD: one statfs field via stat -f (b total, f free, a available, s f_bsize, S f_frsize)
sf() { stat -f -c "%$1" "$MNT"; }

tfs_eq "f_bsize" 4096 "$(sf s)"
frsize=$(sf S)
tfs_eq "f_frsize" 4096 "$frsize"
total0=$(sf b)
free0=$(sf f)
avail0=$(sf a)
{ [ "$total0" -gt 0 ] && [ $((total0 * frsize)) -le 1073741824 ]; } ||
	tfs_fail "total blocks $total0 of $frsize bytes do not fit the 1 GiB image"
[ $((total0 * frsize)) -ge $((1073741824 / 2)) ] ||
	tfs_fail "total blocks $total0 of $frsize bytes are less than half of the 1 GiB image"
{ [ "$free0" -le "$total0" ] && [ "$avail0" -le "$free0" ]; } ||
	tfs_fail "statfs is inconsistent: total $total0, free $free0, available $avail0"
[ "$free0" -ge $((total0 / 2)) ] ||
	tfs_fail "a fresh 1 GiB file system has only $free0 of $total0 blocks free"

# ----- write 100 MiB, fsync: free space falls by about that -----

"$TFS_SYS" pattern $((100 * mib)) 3 | dd of="$MNT/f" bs=1M iflag=fullblock conv=fsync 2>/dev/null ||
	tfs_fail "writing 100 MiB with dd conv=fsync failed"
tfs_eq "size of the 100 MiB file" $((100 * mib)) "$(stat -c %s "$MNT/f")"
used=$(((free0 - $(sf f)) * frsize))
{ [ "$used" -ge $((100 * mib)) ] && [ "$used" -le $((100 * mib + slack)) ]; } ||
	tfs_fail "free space fell by $used bytes after writing 100 MiB, expected 100 MiB to 100 MiB + $slack"
used_a=$(((avail0 - $(sf a)) * frsize))
{ [ "$used_a" -ge $((100 * mib)) ] && [ "$used_a" -le $((100 * mib + slack)) ]; } ||
	tfs_fail "available space fell by $used_a bytes after writing 100 MiB"
tfs_eq "total blocks after a write" "$total0" "$(sf b)"

# statfs of any path in the file system is the same
tfs_eq "free blocks through a file's path" "$(sf f)" "$(stat -f -c %f "$MNT/f")"

# ----- df -----

df "$MNT" >"$WORK/df" || tfs_fail "df failed"
tfs_eq "df mount column" "$MNT" "$(df --output=target "$MNT" | tail -1)"
tfs_eq "df -B4096 size" "$total0" "$(df -B4096 --output=size "$MNT" | tail -1 | tr -d ' ')"
tfs_eq "df -B4096 available" "$(sf a)" "$(df -B4096 --output=avail "$MNT" | tail -1 | tr -d ' ')"
df_used=$(df -B4096 --output=used "$MNT" | tail -1 | tr -d ' ')
tfs_eq "df used is total - free" $((total0 - $(sf f))) "$df_used"
df -i "$MNT" >/dev/null || tfs_fail "df -i failed"

# ----- rm: the space comes back -----

rm "$MNT/f" || tfs_fail "rm failed"
back() { [ $(($(sf f) * frsize)) -ge $((free0 * frsize - slack)) ]; }
tfs_wait_for 10 back ||
	tfs_fail "free blocks $(sf f) after rm, expected back to about $free0"
tfs_eq "total blocks after rm" "$total0" "$(sf b)"

# ----- many small files, then rm -----

free1=$(sf f)
for i in $(seq 10); do
	head -c $((mib + 1)) /dev/zero >"$MNT/s$i" || tfs_fail "write of s$i failed"
done
sync -f "$MNT" || tfs_fail "syncfs failed"
# 1 MiB + 1 byte takes 257 blocks
used=$(((free1 - $(sf f)) * frsize))
{ [ "$used" -ge $((10 * 257 * 4096)) ] && [ "$used" -le $((10 * 257 * 4096 + slack)) ]; } ||
	tfs_fail "free space fell by $used bytes after ten files of 1 MiB + 1 byte, expected $((10 * 257 * 4096))"
rm "$MNT"/s* || tfs_fail "rm failed"
# shellcheck disable=SC2317 # called through tfs_wait_for
back1() { [ $(($(sf f) * frsize)) -ge $((free1 * frsize - slack)) ]; }
tfs_wait_for 10 back1 || tfs_fail "free blocks $(sf f) after rm of ten files, expected about $free1"

# ----- the same after a remount -----

tfs_umount
tfs_mount
tfs_eq "total blocks after remount" "$total0" "$(sf b)"
back || tfs_fail "free blocks $(sf f) after remount, expected about $free0"

tfs_umount
tfs_fsck_clean
tfs_pass
