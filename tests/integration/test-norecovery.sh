#!/bin/bash
# Description: -o ro,norecovery (or noload) mounts a file system that was
# not unmounted cleanly as its last checkpoint is, without replaying the
# journal, and says so in the log, as ext4 and xfs do (xfstests
# generic/537); without ro it is refused; the device is left as it was,
# and a read-write mount then recovers every fsync'd file
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum
tfs_mkimg 256M

# a file in the last checkpoint, one only in the journal
tfs_mount
echo old >"$MNT/old"
tfs_umount
tfs_mount -o commit_interval_ms=60000
echo new >"$MNT/new"
python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/new" ||
	tfs_fail "fsync of new failed"
tfs_kill9
sum0=$(sha256sum <"$IMG")

# without ro: a usage error, nothing mounted, nothing written
"$TENSORFS" -f -o norecovery "$IMG" "$MNT" >"$WORK/out" 2>&1
rc=$?
tfs_eq "tensorfs -o norecovery without ro: exit status" 2 "$rc"
grep -q "norecovery needs -o ro" "$WORK/out" ||
	tfs_fail "-o norecovery without ro: expected the message to say it needs ro, got '$(cat "$WORK/out")'"
tfs_mounted "$MNT" && tfs_fail "-o norecovery without ro mounted"
# ro alone is refused: recovery needs a read-write open
"$TENSORFS" -f -o ro "$IMG" "$MNT" >"$WORK/out" 2>&1
tfs_eq "tensorfs -o ro of an unclean file system: exit status" 1 "$?"

for opt in ro,norecovery ro,noload; do
	: >"$WORK/daemon.log"
	tfs_mount -o "$opt"
	tfs_eq "$opt: the checkpointed file" old "$(cat "$MNT/old")"
	[ -e "$MNT/new" ] && tfs_fail "$opt: the journal was replayed (new is there)"
	echo x >"$MNT/x" 2>/dev/null && tfs_fail "$opt: a write succeeded on a read-only mount"
	tfs_umount
	grep -q "without replaying the journal (norecovery)" "$WORK/daemon.log" ||
		tfs_fail "$opt: expected the log to say the journal was not replayed, got '$(cat "$WORK/daemon.log")'"
	grep -qE "[1-9][0-9]* journal transaction\(s\) committed after it are not shown" "$WORK/daemon.log" ||
		tfs_fail "$opt: expected the log to count the transactions left out, got '$(cat "$WORK/daemon.log")'"
	tfs_eq "$opt: the image after the mount" "$sum0" "$(sha256sum <"$IMG")"
done

# read-write: recovered
tfs_mount
tfs_eq "after recovery, the fsync'd file" new "$(cat "$MNT/new")"
tfs_umount
tfs_fsck_clean
tfs_pass
