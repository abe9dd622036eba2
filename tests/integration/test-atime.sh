#!/bin/bash
# Description: reads move atime as relatime says by default (when atime is not after mtime or ctime: once after each change, as xfstests generic/192 checks), never with -o noatime or -o ro, on every read with -o strictatime (which the mount's options show); the new atime survives a crash after the next commit, and reads force no commit of their own
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need stat touch
export LC_ALL=C
tfs_mkimg 256M

at() { stat -c %X.%x "$1"; }		# seconds, then the full time
atns() { stat -c %x "$1"; }
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$MNT/.tensorfs/stats"; }

# ----- relatime, the default -----

tfs_mount -o commit_interval_ms=300
echo hello >"$MNT/f" || tfs_fail "write failed"
a0=$(atns "$MNT/f")
sleep 1.1
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
a1=$(atns "$MNT/f")
[ "$a1" != "$a0" ] || tfs_fail "relatime: a read after a write left atime at $a0"
[ "$(stat -c %X "$MNT/f")" -gt "$(stat -c %Y "$MNT/f")" ] ||
	tfs_fail "relatime: atime $(stat -c %x "$MNT/f") is not after mtime $(stat -c %y "$MNT/f")"
sleep 1.1
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
tfs_eq "relatime: atime after a second read with nothing changed" "$a1" "$(atns "$MNT/f")"
# (an empty file's read never reaches a FUSE file system: the kernel
# knows its size is 0, so no atime moves there, unlike on ext4)
# a change (mtime) makes the next read move it again
touch -m "$MNT/f" || tfs_fail "touch -m failed"
sleep 1.1
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
a2=$(atns "$MNT/f")
[ "$a2" != "$a1" ] || tfs_fail "relatime: a read after touch -m left atime at $a1"
# a chmod (ctime) too
chmod 600 "$MNT/f" || tfs_fail "chmod failed"
sleep 1.1
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
a3=$(atns "$MNT/f")
[ "$a3" != "$a2" ] || tfs_fail "relatime: a read after chmod left atime at $a2"

# the new atime rides with the next commit (300 ms here), no fsync needed
sleep 1
tfs_kill9
tfs_mount
tfs_eq "atime after a crash" "$a3" "$(atns "$MNT/f")"
tfs_umount

# ----- strictatime: every read; and still no commit per read -----

tfs_mount -o strictatime
touch -a -d '2001-01-01' "$MNT/f" || tfs_fail "touch -a failed"
# the kernel's mount says so too (libfuse does not take strictatime: the
# daemon sets it before it serves, so after the touch), so that a remount
# through mount(8) keeps it
grep -E "^[^ ]+ $MNT " /proc/mounts | grep -qwE "relatime|noatime" &&
	tfs_fail "-o strictatime: the mount's options say otherwise: $(grep " $MNT " /proc/mounts)"
s0=$(at "$MNT/f")
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
s1=$(at "$MNT/f")
[ "$s1" != "$s0" ] || tfs_fail "strictatime: a read left atime at $s0"
sleep 0.05
cat "$MNT/f" >/dev/null || tfs_fail "read failed"
s2=$(at "$MNT/f")
[ "$s2" != "$s1" ] || tfs_fail "strictatime: a second read left atime at $s1"
flushes0=$(stat_of dev_flushes)
for _ in $(seq 200); do cat "$MNT/f" >/dev/null || tfs_fail "read failed"; done
flushes1=$(stat_of dev_flushes)
# the default commit interval is 5 s: at most a commit or two in between
[ $((flushes1 - flushes0)) -le 3 ] ||
	tfs_fail "strictatime: 200 reads made $((flushes1 - flushes0)) device flushes; atime must ride with the periodic commit"
[ "$(at "$MNT/f")" != "$s2" ] || tfs_fail "strictatime: 200 reads left atime at $s2"
tfs_umount

# ----- noatime and ro: never -----

for opt in noatime ro; do
	tfs_mount -o "$opt"
	grep -E "^[^ ]+ $MNT " /proc/mounts | grep -qw "$opt" ||
		tfs_fail "-o $opt is not in the mount's options: $(grep " $MNT " /proc/mounts)"
	n0=$(at "$MNT/f")
	[ "$opt" = ro ] || touch -m "$MNT/f" || tfs_fail "touch -m failed"
	n0=$(at "$MNT/f")
	sleep 1.1
	cat "$MNT/f" >/dev/null || tfs_fail "read failed"
	tfs_eq "-o $opt: atime after a read" "$n0" "$(at "$MNT/f")"
	tfs_umount
done

tfs_fsck_clean
tfs_pass
