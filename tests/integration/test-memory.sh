#!/bin/bash
# Description: the daemon's peak resident memory (VmHWM) stays under cache budget + write-back pool + 64 MiB while 8 writers and readers move 4x that through the mount; a cache plus pool larger than available memory, or a pinned pool over RLIMIT_MEMLOCK, is refused with the numbers, every key of the sum with its value and where it came from (-o, FILE:LINE, default), and the key to lower; memory_check=false mounts anyway; pin_memory locks the arena (VmLck) and registers it with io_uring
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum dd
MiB=1048576

# kB value of a /proc/PID/status field
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

# ----- the bound under load -----

# cache 32 MiB, pool 4 x 8 MiB = 32 MiB: bound 32 + 32 + 64 MiB
tfs_setup 2G -o max_in_cpu=32MiB,buffer_count=4,buffer_size=8MiB
bound_kb=$(((32 + 32 + 64) * 1024))
base_kb=$(status_kb "$DAEMON_PID" VmHWM)
tfs_log "VmHWM after mount: $base_kb kB"

# 8 workers, each writes 40 MiB and reads it back and a neighbour's file:
# 8 x 40 MiB = 320 MiB written, 640 MiB read, 5x cache + pool
for i in 0 1 2 3 4 5 6 7; do
	"$TFS_SYS" pattern $((40 * MiB)) "$((200 + i))" | sha256sum | cut -d' ' -f1 >"$WORK/sum$i"
done
run_worker() {
	local i=$1 j flag=""
	j=$(((i + 1) % 8))
	# half of them use O_DIRECT, half the page cache
	[ $((i % 2)) = 0 ] && flag="oflag=direct"
	"$TFS_SYS" pattern $((40 * MiB)) "$((200 + i))" |
		dd of="$MNT/w$i" bs=1M iflag=fullblock $flag status=none || return 1
	[ "$(sha256sum <"$MNT/w$i" | cut -d' ' -f1)" = "$(cat "$WORK/sum$i")" ] || return 2
	# the neighbour may still be writing: wait for its full size
	for _ in $(seq 600); do
		[ "$(stat -c %s "$MNT/w$j" 2>/dev/null)" = $((40 * MiB)) ] && break
		sleep 0.1
	done
	sleep 0.2
	[ "$(dd if="$MNT/w$j" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)" = \
		"$(cat "$WORK/sum$j")" ] || return 3
}
pids=()
for i in 0 1 2 3 4 5 6 7; do
	run_worker "$i" &
	pids+=($!)
done
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || tfs_fail "worker $i failed (exit $?: 1 write, 2 read-back, 3 neighbour's file)"
done
hwm_kb=$(status_kb "$DAEMON_PID" VmHWM)
tfs_log "VmHWM after 320 MiB written, 640 MiB read: $hwm_kb kB (bound $bound_kb kB)"
[ "$hwm_kb" -lt "$bound_kb" ] ||
	tfs_fail "peak resident memory $hwm_kb kB exceeds cache + pool + 64 MiB = $bound_kb kB"
# the data really went through the device, not just RAM
tfs_umount
tfs_mount
for i in 0 1 2 3 4 5 6 7; do
	[ "$(sha256sum <"$MNT/w$i" | cut -d' ' -f1)" = "$(cat "$WORK/sum$i")" ] ||
		tfs_fail "w$i differs after a remount"
done
tfs_umount
tfs_fsck_clean

# ----- refusals -----

avail_kb=$(awk '$1 == "MemAvailable:" {print $2}' /proc/meminfo)
too_much=$(((avail_kb / 1024 / 1024 + 16) * 2))	# GiB, over twice MemAvailable
tfs_try_mount "$IMG" "$MNT" -o "max_in_cpu=${too_much}GiB"
[ "$TFS_RC" = 1 ] || tfs_fail "a ${too_much} GiB cache: expected exit 1, got $TFS_RC"
tfs_expect_words "a cache over MemAvailable" "$WORK/err" max_in_cpu MemAvailable memory_check
tfs_expect_unmounted "a cache over MemAvailable" "$MNT"

# the cache's index (a record, bitmaps and table slots per block_size
# chunk) is counted with it: at 4 KiB chunks it is GiBs, not the fixed
# 64 MiB the daemon keeps for itself
tfs_try_mount "$IMG" "$MNT" -o "max_in_cpu=${too_much}GiB,block_size=4KiB"
[ "$TFS_RC" = 1 ] || tfs_fail "a ${too_much} GiB cache of 4 KiB chunks: expected exit 1, got $TFS_RC"
tfs_expect_unmounted "a cache of 4 KiB chunks over MemAvailable" "$MNT"
grep -Eq "plus [0-9.]+ GiB for the daemon and the cache's index" "$WORK/err" ||
	tfs_fail "a ${too_much} GiB cache of 4 KiB chunks: expected GiBs for the cache's index, got '$(cat "$WORK/err")'"

tfs_try_mount "$IMG" "$MNT" -o "buffer_count=$((too_much * 8)),buffer_size=128MiB"
[ "$TFS_RC" = 1 ] || tfs_fail "a pool over MemAvailable: expected exit 1, got $TFS_RC"
tfs_expect_words "a pool over MemAvailable" "$WORK/err" buffer_count available
# every key of the sum named with its value and where it came from, and
# what to lower: buffer_size too, which the message once left out (the
# default config file is read, as on an installed machine, and not blamed)
printf '[mount]\ncommit_interval_ms = 1000\n' >"$WORK/site.ini"
TENSORFS_CONFIG="$WORK/site.ini" tfs_try_mount "$IMG" "$MNT" -o "buffer_size=${too_much}GiB"
[ "$TFS_RC" = 1 ] || tfs_fail "a pool over MemAvailable by buffer_size: expected exit 1, got $TFS_RC"
tfs_expect_words "a pool over MemAvailable by buffer_size" "$WORK/err" \
	"offload_param.buffer_size = ${too_much}GiB from -o buffer_size=${too_much}GiB" \
	"offload_param.buffer_count = 5 by default" \
	"offload_param.max_in_cpu = 1e9 by default" \
	"lower offload_param.buffer_size or buffer_count"
! grep -qF site.ini "$WORK/err" ||
	tfs_fail "a pool over MemAvailable by -o buffer_size: expected the config file not blamed, got '$(cat "$WORK/err")'"

# pinning more than RLIMIT_MEMLOCK (1 MiB here)
(
	ulimit -l 1024
	tfs_try_mount "$IMG" "$MNT" -o pin_memory=true,max_in_cpu=0,buffer_count=2,buffer_size=4MiB
	echo "$TFS_RC" >"$WORK/rc"
)
[ "$(cat "$WORK/rc")" = 1 ] || tfs_fail "a pinned pool over RLIMIT_MEMLOCK: expected exit 1, got $(cat "$WORK/rc")"
tfs_expect_words "a pinned pool over RLIMIT_MEMLOCK" "$WORK/err" RLIMIT_MEMLOCK pin_memory

# forced: memory_check=false mounts the oversized cache, which costs only
# what it holds
tfs_mount -o "max_in_cpu=${too_much}GiB,memory_check=false"
echo hello >"$MNT/small" || tfs_fail "cannot write through a forced mount"
tfs_eq "read back through a forced mount" hello "$(cat "$MNT/small")"
tfs_umount

# pinned: the whole arena (cache + pool, 6 MiB here) is locked in RAM
ulimit -l unlimited 2>/dev/null || true
lim=$(ulimit -l)
[ "$lim" = unlimited ] || [ "$lim" -ge 6144 ] ||
	tfs_skip "RLIMIT_MEMLOCK is $lim kB, too small to pin 6 MiB"
tfs_mount -o pin_memory=true,max_in_cpu=2MiB,buffer_count=2,buffer_size=2MiB
lck_kb=$(status_kb "$DAEMON_PID" VmLck)
tfs_log "VmLck with a pinned 2 MiB cache and 4 MiB pool: $lck_kb kB"
[ "$lck_kb" -ge 6144 ] || tfs_fail "pin_memory: VmLck $lck_kb kB, expected at least 6144"
# and registered as io_uring fixed buffers (the rings' fdinfo counts them,
# on kernels that show it)
if grep -qs '^UserBufs:' /proc/"$DAEMON_PID"/fdinfo/*; then
	grep -qsE '^UserBufs:[[:space:]]*[1-9]' /proc/"$DAEMON_PID"/fdinfo/* ||
		tfs_fail "pin_memory: no io_uring ring has the pool registered"
fi
"$TFS_SYS" pattern $((20 * MiB)) 9 >"$MNT/pinned" || tfs_fail "cannot write through a pinned mount"
cmp <("$TFS_SYS" pattern $((20 * MiB)) 9) "$MNT/pinned" || tfs_fail "pinned mount: data differs"
# ... and after 20 MiB went through it, the daemon has locked no more than
# its bound: the cache and the pool, 6 MiB (VmLck counts mlock(2) only)
lck_kb=$(status_kb "$DAEMON_PID" VmLck)
tfs_log "VmLck after 20 MiB through the pinned mount: $lck_kb kB"
[ "$lck_kb" -le 6144 ] || tfs_fail "pin_memory: VmLck $lck_kb kB, over the 6144 kB of cache and pool"
tfs_umount
tfs_fsck_clean
tfs_pass
