#!/bin/bash
# Description: the mount's source is the device as given (its real path) and its type fuse.tensorfs, as other file systems show theirs: /proc/mounts and findmnt say so, umount DEVICE unmounts it (also through a symlink), and mount -a of an fstab that is mounted already does nothing (exit 0, no second daemon)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_mount8_ns "$@"
tfs_mkimg 128M
tfs_mount8_path

# wait_mounted WHAT: the mount on $MNT is up, its daemon's pid in DPID
wait_mounted() {
	tfs_wait_for 10 mountpoint -q "$MNT" || tfs_fail "$1: no mount on $MNT"
	DPID=$(tfs_daemon_of "$MNT")
	[ -n "$DPID" ] || tfs_fail "$1: no daemon for $MNT"
}

# ----- mount -a of an fstab, twice -----
printf '%s %s fuse.tensorfs defaults,nofail 0 0\n' "$IMG" "$MNT" >"$WORK/fstab"
mount -T "$WORK/fstab" -a >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; tfs_fail "mount -a: exit $?"; }
wait_mounted "mount -a"
tfs_eq "/proc/mounts source and type" "$IMG $MNT fuse.tensorfs" "$(awk -v m="$MNT" '$2 == m { print $1, $2, $3 }' /proc/mounts)"
tfs_eq "findmnt SOURCE FSTYPE" "$IMG fuse.tensorfs" "$(findmnt -n -o SOURCE,FSTYPE "$MNT" | tr -s ' ')"
echo data >"$MNT/f" || tfs_fail "write failed"
mount -T "$WORK/fstab" -a >"$WORK/out" 2>&1
rc=$?
[ "$rc" = 0 ] || { cat "$WORK/out" >&2; tfs_fail "second mount -a: expected exit 0 (nothing to do), got $rc"; }
tfs_eq "mounts on $MNT after the second mount -a" 1 "$(awk -v m="$MNT" '$2 == m' /proc/mounts | wc -l)"
tfs_eq "daemons after the second mount -a" 1 "$(pgrep -fc -- "^tensorfs .* $MNT( |\$)")"
tfs_eq "data after the second mount -a" data "$(cat "$MNT/f")"

# ----- umount DEVICE -----
umount "$IMG" >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; tfs_fail "umount $IMG failed"; }
tfs_expect_unmounted "umount DEVICE" "$MNT"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"

# ----- through a symlink and a relative path: the real path shows -----
ln -s "$IMG" "$WORK/link.img"
(cd "$WORK" && mount -t fuse.tensorfs link.img mnt) >"$WORK/out" 2>&1 ||
	{ cat "$WORK/out" >&2; tfs_fail "mount -t fuse.tensorfs link.img failed"; }
wait_mounted "mount through a symlink"
tfs_eq "source of a mount through a symlink" "$IMG" "$(findmnt -n -o SOURCE "$MNT")"
umount "$WORK/link.img" >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; tfs_fail "umount of the symlink failed"; }
tfs_expect_unmounted "umount through a symlink" "$MNT"
tfs_wait_gone "$DPID" 30 || tfs_fail "the daemon did not exit within 30 s of umount"
tfs_fsck_clean
tfs_pass
