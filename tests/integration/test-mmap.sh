#!/bin/bash
# Description: a file filled through a shared writable mapping and msync reads back with pread, a pwrite shows through a shared read-only mapping, and the bytes are on disk after a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need cmp
tfs_setup 512M

# SIZE: one byte, an unaligned size, and 8 MiB
for size in 1 1234567 8388608; do
	tfs_errno OK mmap-rw "$MNT/m$size" "$size"
done

tfs_umount
tfs_mount
# mmap-rw leaves pattern 11 with its first 4 KiB (or less) overwritten by pattern 12
for size in 1 1234567 8388608; do
	head=$((size < 4096 ? size : 4096))
	tfs_eq "size of m$size after remount" "$size" "$(stat -c %s "$MNT/m$size")"
	cmp -n "$head" <("$TFS_SYS" pattern "$head" 12) "$MNT/m$size" ||
		tfs_fail "the pwrite part of m$size differs after remount"
	if [ "$size" -gt 4096 ]; then
		cmp -i 4096 <("$TFS_SYS" pattern "$size" 11) "$MNT/m$size" ||
			tfs_fail "the mapped part of m$size differs after remount"
	fi
done

tfs_umount
tfs_fsck_clean
tfs_pass
