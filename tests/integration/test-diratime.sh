#!/bin/bash
# Description: listing a directory moves its atime as the atime policy
# says for files (relatime: once after each change), never with -o
# nodiratime or -o noatime; nodiratime and diratime are taken at mount
# and by a remount (xfstests generic/003), and the mount's options show
# nodiratime
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need stat ls
export LC_ALL=C
tfs_mkimg 256M
atns() { stat -c %x "$1"; }
opts() { awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts; }

# ----- relatime, the default: a listing after a change moves it, once -----
tfs_mount
mkdir "$MNT/d" && touch "$MNT/d/x" || tfs_fail "mkdir or touch failed"
a0=$(atns "$MNT/d")
sleep 1.1
ls "$MNT/d" >/dev/null || tfs_fail "ls failed"
a1=$(atns "$MNT/d")
[ "$a1" != "$a0" ] || tfs_fail "relatime: a listing after a change left the directory's atime at $a0"
sleep 1.1
ls "$MNT/d" >/dev/null
tfs_eq "relatime: atime after a second listing, nothing changed" "$a1" "$(atns "$MNT/d")"
touch "$MNT/d/y"
sleep 1.1
ls -l "$MNT/d" >/dev/null	# readdirplus
a2=$(atns "$MNT/d")
[ "$a2" != "$a1" ] || tfs_fail "relatime: ls -l after a change left the atime at $a1"
tfs_umount

# ----- nodiratime: never; a remount turns it on and off -----
tfs_mount -o nodiratime
case ",$(opts)," in *,nodiratime,*) ;; *) tfs_fail "-o nodiratime: expected the mount's options to say it, got '$(opts)'" ;; esac
touch "$MNT/d/z"
sleep 1.1
ls "$MNT/d" >/dev/null
ls -l "$MNT/d" >/dev/null
tfs_eq "nodiratime: the directory's atime after listings" "$a2" "$(atns "$MNT/d")"
echo data >"$MNT/d/z"
sleep 1.1
cat "$MNT/d/z" >/dev/null
[ "$(stat -c %X "$MNT/d/z")" -ge "$(stat -c %Y "$MNT/d/z")" ] ||
	tfs_fail "nodiratime: a file's read must still move its atime"
"$TENSORFS" -o remount,diratime "$IMG" "$MNT" || tfs_fail "remount,diratime: expected exit 0, got $?"
case ",$(opts)," in *,nodiratime,*) tfs_fail "remount,diratime: the mount still says nodiratime ('$(opts)')" ;; esac
ls "$MNT/d" >/dev/null
a3=$(atns "$MNT/d")
[ "$a3" != "$a2" ] || tfs_fail "remount,diratime: a listing after a change left the atime at $a2"
"$TENSORFS" -o remount,nodiratime "$IMG" "$MNT" || tfs_fail "remount,nodiratime: expected exit 0, got $?"
case ",$(opts)," in *,nodiratime,*) ;; *) tfs_fail "remount,nodiratime: expected the mount's options to say it, got '$(opts)'" ;; esac
touch "$MNT/d/w"
sleep 1.1
ls "$MNT/d" >/dev/null
tfs_eq "remount,nodiratime: the atime after a listing" "$a3" "$(atns "$MNT/d")"
tfs_umount

# ----- noatime: no directory atime either -----
tfs_mount -o noatime,diratime
sleep 1.1
ls "$MNT/d" >/dev/null
tfs_eq "noatime,diratime: the atime after a listing" "$a3" "$(atns "$MNT/d")"
tfs_umount
tfs_fsck_clean
tfs_pass
