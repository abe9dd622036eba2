#!/bin/bash
# Description: no reader of the page cache sees old bytes after a change
# made behind it (xfstests generic/451): an O_DIRECT write through libaio
# or pwrite, of a read-write or a write-only descriptor, a
# copy_file_range() into the file and a punched hole, each repeated while
# two other processes read the file through the page cache; the writer
# then reads it back through a descriptor held open all along, a new one,
# and O_DIRECT (dio_cycle.c)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_setup 256M
DIO_CYCLE="$TFS_TESTBIN/dio_cycle"
[ -x "$DIO_CYCLE" ] || tfs_fail "no $DIO_CYCLE: build the tests first"

# 640 KiB, as generic/451.  Before the daemon dropped the pages itself,
# rdwr-aio found old bytes within 1-125 rounds (6 runs of 1600)
for run in rdwr-aio:600 wronly-aio:200 rdwr-sync:200 wronly-sync:200 \
	copy:200 punch:200; do
	mode=${run%:*}
	timeout 300 "$DIO_CYCLE" "$MNT/f-$mode" 655360 "${run#*:}" "$mode" ||
		tfs_fail "$mode: a reader saw old bytes, or the run failed (see above)"
done
tfs_umount
tfs_fsck_clean
tfs_pass
