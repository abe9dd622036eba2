#!/bin/bash
# Description: tensorfs command line: errors and exit codes, daemon mode, SIGTERM flush, double mount
#
# Every refused mount must exit 1 with the contract's words and leave no
# mount; usage errors exit 2 (an unknown option, a missing or extra
# operand, an unknown setting in -o), a bad configuration file exits 1 (a
# missing -c file, an unknown key, with FILE:LINE); --help exits 0 on
# stdout.  A second mount of a mounted device names the mount point that
# holds it and how to unmount it; a device another process holds, that
# process.  Without -f the
# parent exits 0 only once the mount is live, and the daemon (found with
# pgrep by the image path) lets go of the caller's cwd and stdio, and exits
# after fusermount3 -u.  SIGTERM, to the foreground or the daemonised
# process, flushes unsynced writes, unmounts and exits 0.  A second mount of
# a mounted device (also through a symlink or a hard link) is refused.
# tensorfs-fsck is clean after every unmount.
. "$(dirname "$0")/lib.sh"

tfs_need fusermount3 mountpoint pgrep cmp timeout

tfs_mkimg 128M
MNT2="$WORK/mnt2"
mkdir "$MNT2"
tfs_at_exit 'mountpoint -q "$MNT2" 2>/dev/null && { fusermount3 -u "$MNT2" 2>/dev/null || umount -l "$MNT2"; }; tfs_kill_strays'

head -c $((5 * 1024 * 1024 + 4321)) /dev/urandom >"$WORK/big"
head -c 777 /dev/urandom >"$WORK/small"

# daemon_of DEVICE: set pid to the one process whose command line names DEVICE
daemon_of() {
	pid=$(pgrep -f -- "$1")
	[ "$(echo "$pid" | wc -w)" = 1 ] ||
		tfs_fail "daemon of '$1': expected one process, got '${pid//$'\n'/ }'"
}

# put_files DIR: write the reference files into DIR without syncing them
put_files() {
	mkdir -p "$1/sub" &&
		cp "$WORK/big" "$1/big" &&
		cp "$WORK/small" "$1/sub/small" &&
		ln -s sub/small "$1/link" ||
		tfs_fail "writing files to '$1': expected success, got failure"
}

# check_files DIR: the files put_files wrote are there, byte for byte
check_files() {
	cmp "$WORK/big" "$1/big" || tfs_fail "$2: big file: expected the bytes written, got others"
	cmp "$WORK/small" "$1/sub/small" || tfs_fail "$2: sub/small: expected the bytes written, got others"
	tfs_eq "$2: symlink target" sub/small "$(readlink "$1/link")"
}

# remount_and_check WHAT: fsck clean, mount, check_files, unmount, fsck clean
remount_and_check() {
	tfs_fsck_clean
	tfs_mount
	check_files "$MNT" "$1"
	rm -rf "${MNT:?}/big" "$MNT/sub" "$MNT/link"
	tfs_umount
	tfs_fsck_clean
}

# ===== --help and usage errors =====

tfs_expect_exit 0 "tensorfs --help" "$TENSORFS" --help
tfs_expect_words "tensorfs --help (stdout)" "$WORK/out" usage
tfs_expect_unmounted "tensorfs --help" "$MNT"

# without -f, so that a wrongly accepted command line cannot block the test
usage_case() {
	local _what=$1
	shift
	tfs_expect_exit 2 "$_what" "$TENSORFS" "$@"
	[ -s "$WORK/err" ] || tfs_fail "$_what: expected a message on stderr, got none"
	tfs_expect_unmounted "$_what" "$MNT"
}
usage_case "tensorfs without arguments"
usage_case "tensorfs with only a device" "$IMG"
usage_case "tensorfs with three operands" "$IMG" "$MNT" "$MNT2"
usage_case "tensorfs with an unknown option" -Z "$IMG" "$MNT"
usage_case "tensorfs -o without its argument" "$IMG" "$MNT" -o
usage_case "tensorfs -c without its argument" "$IMG" "$MNT" -c
usage_case "tensorfs with an unknown setting in -o" -o no_such_settng=1 "$IMG" "$MNT"
usage_case "tensorfs with a bad number in -o" -o commit_interval_ms=soon "$IMG" "$MNT"

# ===== refused mounts, in the foreground (-f) and in daemon mode =====

# refused WHAT DEVICE MOUNTPOINT WORD...: both modes exit 1 with the WORDs
refused() {
	local _what=$1 _dev=$2 _mp=$3
	shift 3
	tfs_expect_mount_refused "$_what (-f)" "$_dev" "$_mp" "$@"
	tfs_expect_exit 1 "$_what (daemon mode)" "$TENSORFS" "$_dev" "$_mp"
	[ -s "$WORK/err" ] || tfs_fail "$_what (daemon mode): expected a message on stderr, got none"
	tfs_expect_words "$_what (daemon mode)" "$WORK/err" "$@"
	tfs_expect_unmounted "$_what (daemon mode)" "$_mp"
}

truncate -s 128M "$WORK/zeros.img"
refused "mount of an all-zero image" "$WORK/zeros.img" "$MNT" "not a tensorfs" mkfs.tensorfs
echo "hello, I am not a file system" >"$WORK/text.img"
refused "mount of a text file" "$WORK/text.img" "$MNT"
refused "mount of a missing device" "$WORK/absent.img" "$MNT" absent.img
refused "mount on a missing mount point" "$IMG" "$WORK/nowhere" "does not exist"
touch "$WORK/afile"
refused "mount on a regular file" "$IMG" "$WORK/afile" "not a directory"
tfs_fsck_clean

# ===== configuration files =====

tfs_try_mount "$IMG" "$MNT" -c "$WORK/none.ini"
tfs_eq "tensorfs -c with a missing file: exit (bad input, not usage)" 1 "$TFS_RC"
tfs_expect_words "tensorfs -c with a missing file" "$WORK/err" none.ini
tfs_expect_unmounted "tensorfs -c with a missing file" "$MNT"

printf '[mount]\nno_such_key_xyz = 1\n' >"$WORK/bad.ini"
tfs_try_mount "$IMG" "$MNT" -c "$WORK/bad.ini"
tfs_eq "tensorfs -c with an unknown key: exit (bad input, not usage)" 1 "$TFS_RC"
tfs_expect_words "tensorfs -c with an unknown key" "$WORK/err" bad.ini:2 no_such_key_xyz
tfs_expect_unmounted "tensorfs -c with an unknown key" "$MNT"

SHIPPED="$(cd "$(dirname "$0")/../.." && pwd)/conf/tensorfs.ini"
[ -f "$SHIPPED" ] || tfs_fail "the shipped configuration: expected '$SHIPPED' (DESIGN.md), got no file"
tfs_mount -c "$SHIPPED"
put_files "$MNT"
tfs_umount
remount_and_check "mounted with the shipped configuration"

# ===== daemon mode: the parent returns once the mount is live =====

tfs_expect_exit 0 "tensorfs in daemon mode" "$TENSORFS" "$IMG" "$MNT"
mountpoint -q "$MNT" || tfs_fail "daemon mode: expected the mount live when the parent exits, got no mount"
daemon_of "$IMG"
cwd=$(readlink "/proc/$pid/cwd")
tfs_eq "daemon's working directory" / "$cwd"
for fd in 0 1 2; do
	target=$(readlink "/proc/$pid/fd/$fd" 2>/dev/null)
	case $target in
	"$WORK"/*) tfs_fail "daemon's fd $fd: expected it let go of the caller's stdio, got '$target'" ;;
	esac
done
put_files "$MNT"
check_files "$MNT" "daemon mode, before unmount"
fusermount3 -u "$MNT" || tfs_fail "fusermount3 -u of the daemon-mode mount: expected success, got failure"
tfs_wait_gone "$pid" 10 || tfs_fail "daemon after fusermount3 -u: expected it to exit within 10 s, got it running"
tfs_expect_unmounted "daemon mode after fusermount3 -u" "$MNT"
remount_and_check "daemon mode, after fusermount3 -u and remount"

# ===== SIGTERM flushes everything =====

tfs_mount
put_files "$MNT"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=""
tfs_eq "exit code of tensorfs -f after SIGTERM" 0 "$rc"
tfs_expect_unmounted "tensorfs -f after SIGTERM" "$MNT"
remount_and_check "after SIGTERM to tensorfs -f"

tfs_expect_exit 0 "tensorfs in daemon mode" "$TENSORFS" "$IMG" "$MNT"
mountpoint -q "$MNT" || tfs_fail "daemon mode: expected the mount live when the parent exits, got no mount"
daemon_of "$IMG"
put_files "$MNT"
kill -TERM "$pid"
tfs_wait_gone "$pid" 30 || tfs_fail "daemon after SIGTERM: expected it to exit within 30 s, got it running"
tfs_expect_unmounted "daemon mode after SIGTERM" "$MNT"
remount_and_check "after SIGTERM to the daemon"

# ===== a second mount of a mounted device is refused =====

ln -s "$IMG" "$WORK/alias.img"
ln "$IMG" "$WORK/hardlink.img"
tfs_mount
put_files "$MNT"
for dev in "$IMG" "$WORK/alias.img" "$WORK/hardlink.img"; do
	tfs_expect_mount_refused "second mount of '$dev' (-f)" "$dev" "$MNT2"
	tfs_expect_some_word "second mount of '$dev' (-f)" "$WORK/err" "in use" "already mounted"
	tfs_expect_exit 1 "second mount of '$dev' (daemon mode)" "$TENSORFS" "$dev" "$MNT2"
	tfs_expect_some_word "second mount of '$dev' (daemon mode)" "$WORK/err" "in use" "already mounted"
	# the device (as the daemon resolved it) named once, not
	# "tensorfs: DEV: 'DEV' is in use" (the mount point aside)
	[ "$(sed "s|$MNT||g" "$WORK/err" | grep -oF -- "$WORK/" | wc -l)" = 1 ] ||
		tfs_fail "second mount of '$dev': expected the device named once, got '$(cat "$WORK/err")'"
	tfs_expect_unmounted "second mount of '$dev' (daemon mode)" "$MNT2"
	# the mount point that holds it, and the fix
	tfs_expect_words "second mount of '$dev' (daemon mode)" "$WORK/err" \
		"mounted by tensorfs on $MNT" "umount $MNT"
done
check_files "$MNT" "first mount after refused second mounts"
head -c 4096 /dev/urandom >"$WORK/after"
cp "$WORK/after" "$MNT/after" || tfs_fail "writing to the first mount after refused second mounts: expected success, got failure"
tfs_umount
tfs_fsck_clean

# not mounted but open in another process: that process named
# (one process, which keeps the lock and the file: kill ends both)
bash -c 'exec 9<"$1" && flock -x 9 && exec sleep 30' _ "$IMG" &
holder=$!
tfs_wait_for 5 bash -c '! flock -n "$1" true' _ "$IMG" ||
	tfs_fail "flock on the image: expected it held, got it free"
tfs_expect_exit 1 "mount of an image another process holds" "$TENSORFS" "$IMG" "$MNT2"
tfs_expect_words "mount of an image another process holds" "$WORK/err" \
	"in use" "not mounted" "has it open"
tfs_expect_some_word "mount of an image another process holds" "$WORK/err" \
	"process $holder (sleep)" "fuser"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
tfs_expect_unmounted "mount of an image another process holds" "$MNT2"

# the lock goes with the unmount: the other mount point works now
SAVED_MNT=$MNT
MNT=$MNT2
tfs_mount
check_files "$MNT" "mounted on a second mount point"
cmp "$WORK/after" "$MNT/after" || tfs_fail "file 'after' on the second mount point: expected its bytes, got others"
tfs_umount
MNT=$SAVED_MNT
tfs_fsck_clean

# ===== -d: debug output, still a working mount =====

log_before=$(stat -c %s "$WORK/daemon.log")
tfs_mount -d
check_files "$MNT" "mounted with -d"
tfs_umount
log_after=$(stat -c %s "$WORK/daemon.log")
[ "$log_after" -gt "$log_before" ] || tfs_fail "tensorfs -f -d: expected debug output, got none"
tfs_fsck_clean

tfs_pass
