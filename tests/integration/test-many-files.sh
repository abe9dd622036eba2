#!/bin/bash
# Description: with many files (200,000 by default, TFS_MANY_FILES=1000000 for a million) the daemon's peak resident memory (VmHWM) stays under cache + pool + 64 MiB + files x TFS_META_BYTES_PER_FILE, creating them and mounting them again; .tensorfs/stats counts every inode and its meta_ram_bytes grows by what the daemon's resident memory grows, within a stated margin; the files list, survive a remount and fsck is clean
#
# The per-file figure itself is measured with a million files by
# test_meta.c (test_meta_ram_per_file_is_bounded), through the library:
# creating a million files through FUSE takes about five minutes on two
# cores, 200,000 about a minute.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need awk find wc
N=${TFS_MANY_FILES:-200000}
PER_FILE=$(awk '$1 == "#define" && $2 == "TFS_META_BYTES_PER_FILE" {print $3 + 0}' \
	"$(dirname "$0")/../../lib/include/memcheck.h")
[ -n "$PER_FILE" ] || tfs_fail "cannot read TFS_META_BYTES_PER_FILE from lib/include/memcheck.h"
KiB=1024

# kB value of a /proc/PID/status field
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# a counter from .tensorfs/stats
stat_of() { awk -v k="$1" '$1 == k {print $2}' "$MNT/.tensorfs/stats"; }

# a sparse 64 GiB image: the checkpoints grow into its data area (format
# version 2, lib/journal.c J10), so it holds far more files than the test
# makes
opts=max_in_cpu=64MiB,buffer_count=4,buffer_size=8MiB
tfs_setup 64G -o "$opts"
fixed_kb=$(((64 + 32 + 64) * KiB)) # cache + pool + MOUNT_SPARE

mkdir "$MNT/d0" "$MNT/d1" || tfs_fail "mkdir"
# create_in_both COUNT PREFIX: two creators, one directory each, half of
# COUNT each
create_in_both() {
	"$TFS_SYS" create-many "$MNT/d0" $(($1 / 2)) "$2" >/dev/null &
	p0=$!
	"$TFS_SYS" create-many "$MNT/d1" $(($1 - $1 / 2)) "$2" >/dev/null &
	p1=$!
	wait "$p0" || tfs_fail "creating files of d0 failed"
	wait "$p1" || tfs_fail "creating files of d1 failed"
}
# a tenth first, so the daemon has started its FUSE threads and their
# malloc arenas (a few MiB each) before the growth is measured
W=$((N / 10))
create_in_both "$W" w
# past a commit (commit_interval_ms, 5 s), so the running transaction's
# buffers are settled when the memory is read
sleep 6
rss0=$(status_kb "$DAEMON_PID" VmRSS)
ram0=$(stat_of meta_ram_bytes)
[ -n "$ram0" ] || tfs_fail ".tensorfs/stats has no meta_ram_bytes"
t0=$(date +%s)
create_in_both "$N" e
tfs_log "created $N files in $(($(date +%s) - t0)) s (and $W before)"

sleep 6
inodes=$(stat_of inodes)
tfs_eq "inodes in .tensorfs/stats" $((W + N + 3)) "$inodes"
ram1=$(stat_of meta_ram_bytes)
rss1=$(status_kb "$DAEMON_PID" VmRSS)
hwm=$(status_kb "$DAEMON_PID" VmHWM)
bound_kb=$((fixed_kb + inodes * PER_FILE / KiB))
per_file=$(((ram1 - ram0) / N))
grow_kb=$((rss1 - rss0))
tfs_log "meta_ram_bytes $ram0 -> $ram1 ($per_file bytes a file), VmRSS $rss0 -> $rss1 kB ($((grow_kb * KiB / N)) bytes a file), VmHWM $hwm kB, bound $bound_kb kB"

# the stated cost holds for the counter ...
[ "$per_file" -le "$PER_FILE" ] ||
	tfs_fail "meta_ram_bytes grew $per_file bytes a file, over TFS_META_BYTES_PER_FILE $PER_FILE"
# ... and the counter is what the daemon really holds: its resident
# memory grew by the tree, within a tenth and 4 MiB (the running
# transaction's buffers; 215 bytes a file against 215 measured)
ram_kb=$(((ram1 - ram0) / KiB))
[ "$grow_kb" -ge $((ram_kb * 9 / 10)) ] ||
	tfs_fail "VmRSS grew $grow_kb kB, less than the $ram_kb kB meta_ram_bytes says the tree took"
[ "$grow_kb" -le $((ram_kb * 11 / 10 + 4 * KiB)) ] ||
	tfs_fail "VmRSS grew $grow_kb kB, more than the $ram_kb kB meta_ram_bytes counts + 10% + 4 MiB"
# ... and the peak stays under the bound
[ "$hwm" -lt "$bound_kb" ] ||
	tfs_fail "peak resident memory $hwm kB exceeds cache + pool + 64 MiB + $inodes x $PER_FILE B = $bound_kb kB"

# every file lists
tfs_eq "entries in d0" $((W / 2 + N / 2)) "$(find "$MNT/d0" -mindepth 1 | wc -l)"
tfs_eq "entries in d1" $((W - W / 2 + N - N / 2)) "$(find "$MNT/d1" -mindepth 1 | wc -l)"

# mounting them again: the tree is rebuilt from the checkpoint and the
# peak stays under the same bound
tfs_umount
tfs_mount -o "$opts"
tfs_eq "inodes after a remount" "$inodes" "$(stat_of inodes)"
hwm=$(status_kb "$DAEMON_PID" VmHWM)
tfs_log "after a remount: meta_ram_bytes $(stat_of meta_ram_bytes), VmHWM $hwm kB"
[ "$hwm" -lt "$bound_kb" ] ||
	tfs_fail "peak resident memory of the remount $hwm kB exceeds $bound_kb kB"
[ -e "$MNT/d0/e$(printf %06d $((N / 2 - 1)))" ] || tfs_fail "the last file of d0 is missing after a remount"
tfs_umount
tfs_fsck_clean
tfs_pass
