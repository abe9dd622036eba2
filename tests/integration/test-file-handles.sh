#!/bin/bash
# Description: name_to_handle_at + open_by_handle_at (generic/426, 467, 477): handles of files and directories open again after the kernel forgot their inodes (drop_caches: FUSE lookups of "." and ".."), after an unmount and mount, and a deleted file's handle is ESTALE
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || tfs_skip "open_by_handle_at needs root (CAP_DAC_READ_SEARCH)"
FH="$TFS_TESTBIN/fhandle"
[ -x "$FH" ] || tfs_fail "no fhandle helper at $FH"
tfs_setup 128M

mkdir -p "$MNT/d/e" || tfs_fail "mkdir failed"
echo hello >"$MNT/d/e/f" || tfs_fail "cannot write d/e/f"
echo gone >"$MNT/d/g" || tfs_fail "cannot write d/g"
sync "$MNT/d/e/f" || tfs_fail "sync failed"
for p in d d/e d/e/f d/g; do
	tfs_eq "name_to_handle_at $p" OK "$("$FH" save "$MNT/$p" "$WORK/h.${p//\//_}")"
done

# forget: drop the kernel's dentries and inodes, so that opening a handle
# asks the daemon ("." for the inode, ".." to reconnect a directory)
forget() { sync; echo 2 >/proc/sys/vm/drop_caches || tfs_fail "cannot drop caches"; }

# expect_open WHAT PATH: the handle of PATH opens the inode PATH has
expect_open() {
	local ino
	ino=$(stat -c %i "$MNT/$2") || tfs_fail "$1: stat $2 failed"
	tfs_eq "$1: open_by_handle_at $2" "OK $ino" "$("$FH" open "$MNT" "$WORK/h.${2//\//_}")"
}

for p in d d/e d/e/f d/g; do
	forget
	expect_open "cached" "$p"
done
for p in d d/e d/e/f; do
	forget
	# without stat first: the kernel knows nothing of the inode
	out=$("$FH" open "$MNT" "$WORK/h.${p//\//_}")
	case $out in OK\ *) ;; *) tfs_fail "forgotten: open_by_handle_at $p: expected OK, got '$out'" ;; esac
done

# a deleted file's handle is stale
rm "$MNT/d/g" || tfs_fail "rm failed"
forget
tfs_eq "handle of a deleted file" ESTALE "$("$FH" open "$MNT" "$WORK/h.d_g")"

# a directory moved elsewhere: its handle still opens it
mkdir "$MNT/other" && mv "$MNT/d/e" "$MNT/other/e" || tfs_fail "mv failed"
forget
ino=$(stat -c %i "$MNT/other/e")
tfs_eq "handle of a moved directory" "OK $ino" "$("$FH" open "$MNT" "$WORK/h.d_e")"
mv "$MNT/other/e" "$MNT/d/e" || tfs_fail "mv back failed"

# after an unmount and a mount: the same handles, the same inodes
tfs_umount
tfs_mount
for p in d d/e d/e/f; do
	expect_open "after remount" "$p"
done
tfs_eq "deleted file after remount" ESTALE "$("$FH" open "$MNT" "$WORK/h.d_g")"
tfs_eq "content of d/e/f after remount" hello "$(cat "$MNT/d/e/f")"
tfs_umount
tfs_fsck_clean
tfs_pass
