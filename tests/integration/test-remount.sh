#!/bin/bash
# Description: mount -o remount,ro and remount,rw of a live mount (generic/294, 306, 452), with writers running: no second daemon, writes fail with EROFS while ro and work again after rw, a remount,ro refused while files are open for writing says so, every write acknowledged by fsync survives, the device is clean as soon as remount,ro returns, remount,noatime stops atime updates and remount,strictatime makes every read move atime (a remount without an atime option keeps the policy) (a daemon killed then leaves nothing to recover), and fsck is clean after
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_mount8_ns "$@"
tfs_need sha256sum
tfs_mkimg 512M
tfs_mount8_path

mount -t fuse.tensorfs "$IMG" "$MNT" >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; tfs_fail "mount -t fuse.tensorfs failed"; }
tfs_wait_for 10 mountpoint -q "$MNT" || tfs_fail "no mount on $MNT"
DPID=$(tfs_daemon_of "$MNT")
[ -n "$DPID" ] || tfs_fail "no daemon for $MNT"

# mount_opt: ro or rw, as /proc/mounts has it
mount_opt() { awk -v m="$MNT" '$2 == m { split($4, o, ","); print o[1] }' /proc/mounts; }

# writer ID: write files until $WORK/stop exists; each file fsync'd
# (sync FILE) is acknowledged in $WORK/acked.ID with its sha256, each
# refusal counted in $WORK/refused.ID with its message in $WORK/werr.ID
writer() {
	local i=0 f
	mkdir -p "$MNT/w$1"
	while [ ! -e "$WORK/stop" ]; do
		i=$((i + 1))
		f="w$1/f$i"
		head -c $((65536 + RANDOM * 8)) /dev/urandom >"$WORK/buf.$1"
		if cp "$WORK/buf.$1" "$MNT/$f" 2>>"$WORK/werr.$1" && sync "$MNT/$f" 2>>"$WORK/werr.$1"; then
			echo "$f $(sha256sum <"$WORK/buf.$1" | cut -d' ' -f1)" >>"$WORK/acked.$1"
		else
			echo x >>"$WORK/refused.$1"
			sleep 0.02
		fi
	done
}
writer 1 &
W1=$!
writer 2 &
W2=$!
tfs_at_exit "touch '$WORK/stop'; wait $W1 $W2 2>/dev/null"

# remount HOW: mount -o remount,HOW, retried while files are open for
# writing (EBUSY, as on ext4: the message must say so)
busy=0
remount() {
	local _
	for _ in $(seq 200); do
		if mount -o "remount,$1" "$MNT" >"$WORK/rout" 2>&1; then
			tfs_eq "mount option after remount,$1" "$1" "$(mount_opt)"
			return 0
		fi
		grep -qiE "busy|open for writing" "$WORK/rout" ||
			tfs_fail "remount,$1: expected success or 'busy', got '$(cat "$WORK/rout")'"
		busy=$((busy + 1))
		sleep 0.05
	done
	tfs_fail "remount,$1 still refused after 200 tries: $(cat "$WORK/rout")"
}

count() { cat "$WORK"/"$1".* 2>/dev/null | wc -l; }

for cycle in 1 2 3; do
	sleep 1
	remount ro
	refused0=$(count refused)
	{ echo x >"$MNT/probe"; } 2>"$WORK/err" && tfs_fail "cycle $cycle: write on the ro mount succeeded"
	grep -q "Read-only file system" "$WORK/err" || tfs_fail "cycle $cycle: write on the ro mount: expected EROFS, got '$(cat "$WORK/err")'"
	sleep 0.5
	[ "$(count refused)" -gt "$refused0" ] || tfs_fail "cycle $cycle: the writers were not refused while ro"
	grep -hv "Read-only file system" "$WORK"/werr.* 2>/dev/null | grep . &&
		tfs_fail "cycle $cycle: writers got other errors than EROFS"
	acked0=$(count acked)
	remount rw
	sleep 0.5
	[ "$(count acked)" -gt "$acked0" ] || tfs_fail "cycle $cycle: no write acknowledged after remount,rw"
done
tfs_eq "daemons (a remount starts none)" "$DPID" "$(tfs_daemon_of "$MNT")"

# ----- the atime options of a remount reach the daemon, which keeps
# atime (FUSE leaves it to the daemon: the kernel's flags alone do nothing)

at() { stat -c %x "$MNT/at"; }
atime_opt() { awk -v m="$MNT" '$2 == m { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /atime$/) print o[i] }' /proc/mounts; }
echo hello >"$MNT/at" || tfs_fail "write of at failed"
tfs_eq "atime option of the mount" relatime "$(atime_opt)"
# relatime would move an atime older than mtime at the next read
touch -a -d 2001-01-01 "$MNT/at" || tfs_fail "touch -a failed"
a0=$(at)
mount -o remount,noatime "$MNT" || tfs_fail "remount,noatime failed"
tfs_eq "atime option after remount,noatime" noatime "$(atime_opt)"
cat "$MNT/at" >/dev/null || tfs_fail "read failed"
tfs_eq "remount,noatime: atime after a read" "$a0" "$(at)"
mount -o remount,strictatime "$MNT" || tfs_fail "remount,strictatime failed"
tfs_eq "atime option after remount,strictatime (none shown)" "" "$(atime_opt)"
cat "$MNT/at" >/dev/null || tfs_fail "read failed"
a1=$(at)
[ "$a1" != "$a0" ] || tfs_fail "remount,strictatime: a read left atime at $a0"
sleep 0.05
cat "$MNT/at" >/dev/null || tfs_fail "read failed"
a2=$(at)
[ "$a2" != "$a1" ] || tfs_fail "remount,strictatime: a second read left atime at $a1"
# a remount without an atime option keeps the policy, as the kernel keeps
# the flags (mount(8) passes the mount's options on: none for strictatime)
remount ro
remount rw
tfs_eq "atime option after remount,ro and rw" "" "$(atime_opt)"
sleep 0.05
cat "$MNT/at" >/dev/null || tfs_fail "read failed"
a3=$(at)
[ "$a3" != "$a2" ] || tfs_fail "remount,ro then rw after strictatime: a read left atime at $a2"
mount -o remount,relatime "$MNT" || tfs_fail "remount,relatime failed"
tfs_eq "atime option after remount,relatime" relatime "$(atime_opt)"
sleep 0.05
cat "$MNT/at" >/dev/null || tfs_fail "read failed"
tfs_eq "remount,relatime: atime after a read (after mtime already)" "$a3" "$(at)"
tfs_eq "daemons (still none started)" "$DPID" "$(tfs_daemon_of "$MNT")"

# the last remount,ro, then the writers stop: the device is clean as soon
# as remount,ro returns, so a daemon killed now leaves nothing to recover
remount ro
touch "$WORK/stop"
wait "$W1" "$W2"
[ "$(count acked)" -gt 0 ] || tfs_fail "no write was acknowledged at all"
kill -KILL "$DPID"
tfs_wait_gone "$DPID" 10 || tfs_fail "the daemon survived SIGKILL"
umount -l "$MNT" 2>/dev/null
tfs_wait_unlocked || tfs_fail "the image is still locked after the daemon died"
# a ro mount refuses an image that needs recovery: this one must not
tfs_mount -o ro
cat "$WORK"/acked.* >"$WORK/acked"
while read -r f sum; do
	[ -f "$MNT/$f" ] || tfs_fail "acknowledged $f: missing"
	tfs_eq "acknowledged $f" "$sum" "$(sha256sum <"$MNT/$f" | cut -d' ' -f1)"
done <"$WORK/acked"
tfs_umount
tfs_fsck_clean
tfs_log "$(wc -l <"$WORK/acked") writes acknowledged, $(count refused) refused while ro, remount,ro refused $busy times while files were open for writing"
tfs_pass
