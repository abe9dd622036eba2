#!/bin/bash
# Description: stat reports real st_blocks, file types and modes; chmod, chown, chgrp; a non-root creator owns its files; default_permissions refuses what it must; touch and utimensat set times exactly to the nanosecond (UTIME_OMIT, UTIME_NOW); writes move mtime and ctime, chmod and chown ctime only, reads atime only (relatime); directory times follow their entries
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need setpriv touch chmod chown chgrp
umask 022
tfs_setup 512M

# ns FILE FIELD: a time as one integer of nanoseconds (FIELD X, Y or Z)
ns() {
	t=$(stat -c "%.9$2" "$1" | tr -d .)
	case $t in
	'' | *[!0-9]*) echo "unreadable:$t" ;;
	*) echo $((10#$t)) ;;
	esac
}

# ----- sizes and st_blocks -----

: >"$MNT/empty" || tfs_fail "cannot create a file"
printf x >"$MNT/one" || tfs_fail "write failed"
head -c 10000 /dev/zero | tr '\0' z >"$MNT/ten" || tfs_fail "write failed"
xfs_io -f -c "pwrite 0 4096" "$MNT/b4096" >/dev/null || tfs_fail "xfs_io pwrite failed"
xfs_io -f -c "pwrite 0 4097" "$MNT/b4097" >/dev/null || tfs_fail "xfs_io pwrite failed"
xfs_io -f -c "pwrite 1M 1" "$MNT/sparse" >/dev/null || tfs_fail "xfs_io pwrite failed"
while read -r f size blocks; do
	tfs_eq "st_size of $f" "$size" "$(stat -c %s "$MNT/$f")"
	tfs_eq "st_blocks of $f" "$blocks" "$(stat -c %b "$MNT/$f")"
done <<'EOF'
empty 0 0
one 1 8
ten 10000 24
b4096 4096 8
b4097 4097 16
sparse 1048577 8
EOF
tfs_eq "st_blocks unit" 512 "$(stat -c %B "$MNT/one")"

# ----- types and modes -----

mkdir "$MNT/dir" || tfs_fail "mkdir failed"
ln -s one "$MNT/sym" || tfs_fail "ln -s failed"
tfs_eq "type of an empty file" "regular empty file" "$(stat -c %F "$MNT/empty")"
tfs_eq "type of a file" "regular file" "$(stat -c %F "$MNT/one")"
tfs_eq "type of a directory" directory "$(stat -c %F "$MNT/dir")"
tfs_eq "type of a symlink" "symbolic link" "$(stat -c %F "$MNT/sym")"
tfs_eq "mode of a new file under umask 022" 644 "$(stat -c %a "$MNT/one")"
(umask 027 && : >"$MNT/u027") || tfs_fail "create under umask 027 failed"
tfs_eq "mode of a new file under umask 027" 640 "$(stat -c %a "$MNT/u027")"
for m in 0 600 755 777 4755 2755 1777 6711 444; do
	chmod "$m" "$MNT/one" || tfs_fail "chmod $m failed"
	tfs_eq "mode after chmod $m" "$m" "$(stat -c %a "$MNT/one")"
done
chmod 1777 "$MNT/dir" || tfs_fail "chmod 1777 of a directory failed"
tfs_eq "mode of a directory after chmod 1777" 1777 "$(stat -c %a "$MNT/dir")"
chmod u=rw,g=r,o= "$MNT/one" || tfs_fail "symbolic chmod failed"
tfs_eq "mode after chmod u=rw,g=r,o=" "-rw-r-----" "$(stat -c %A "$MNT/one")"

# ----- owners -----

tfs_eq "owner of a file root made" 0:0 "$(stat -c %u:%g "$MNT/one")"
chown 1234:5678 "$MNT/one" || tfs_fail "chown 1234:5678 failed"
tfs_eq "owner after chown 1234:5678" 1234:5678 "$(stat -c %u:%g "$MNT/one")"
chgrp 42 "$MNT/one" || tfs_fail "chgrp 42 failed"
tfs_eq "owner after chgrp 42" 1234:42 "$(stat -c %u:%g "$MNT/one")"
chown 77 "$MNT/one" || tfs_fail "chown 77 failed"
tfs_eq "owner after chown 77" 77:42 "$(stat -c %u:%g "$MNT/one")"
chown 0:0 "$MNT/one" || tfs_fail "chown 0:0 failed"
tfs_eq "owner after chown 0:0" 0:0 "$(stat -c %u:%g "$MNT/one")"
chown -h 99:98 "$MNT/sym" || tfs_fail "chown -h of a symlink failed"
tfs_eq "owner of the symlink after chown -h" 99:98 "$(stat -c %u:%g "$MNT/sym")"
tfs_eq "owner of its target after chown -h" 0:0 "$(stat -c %u:%g "$MNT/one")"

# a non-root creator owns what it creates; the kernel checks permissions
# (default_permissions), which needs other users to reach the mount at all
read -r fstype superopts < <(awk -v m="$MNT" '$5 == m { for (i = 7; $i != "-"; i++); print $(i + 1), $(i + 3) }' /proc/self/mountinfo)
if [ "${fstype#fuse}" != "$fstype" ] && [ "${superopts#*allow_other}" = "$superopts" ]; then
	tfs_fail "the mount lacks allow_other ($superopts), so no user but root can use it and the creator-owner checks cannot run"
fi
chmod 0755 "$WORK" "$MNT" || tfs_fail "chmod 0755 of the work dir or the mount root failed"
{ cp "$TFS_SYS" "$WORK/tfs_sys" && chmod 0755 "$WORK/tfs_sys"; } || tfs_fail "cannot copy tfs_sys"
{ mkdir "$MNT/pub" && chmod 1777 "$MNT/pub"; } || tfs_fail "cannot make a world-writable directory"
as_user() { setpriv --reuid=1234 --regid=1234 --clear-groups "$@"; }
as_user touch "$MNT/pub/f" ||
	tfs_fail "uid 1234 cannot create in a 1777 directory (without allow_other no other user can use the mount)"
tfs_eq "owner of a file uid 1234 created" 1234:1234 "$(stat -c %u:%g "$MNT/pub/f")"
as_user mkdir "$MNT/pub/d" || tfs_fail "uid 1234 cannot mkdir in a 1777 directory"
tfs_eq "owner of a directory uid 1234 made" 1234:1234 "$(stat -c %u:%g "$MNT/pub/d")"
as_user ln -s f "$MNT/pub/l" || tfs_fail "uid 1234 cannot make a symlink"
tfs_eq "owner of a symlink uid 1234 made" 1234:1234 "$(stat -c %u:%g "$MNT/pub/l")"
{ echo secret >"$MNT/pub/rootfile" && chmod 0644 "$MNT/pub/rootfile"; } || tfs_fail "cannot make a root file"
as_user_errno() {
	want=$1
	shift
	got=$(as_user "$WORK/tfs_sys" "$@" 2>&1)
	tfs_eq "tfs_sys $* as uid 1234" "$want" "$got"
}
as_user_errno OK open "$MNT/pub/rootfile" rdonly
as_user_errno EACCES open "$MNT/pub/rootfile" wronly
as_user_errno EPERM chmod "$MNT/pub/rootfile" 0666
as_user_errno EPERM chown "$MNT/pub/f" 4321 -1
as_user_errno OK chmod "$MNT/pub/f" 0600
tfs_eq "mode after the owner's chmod" 600 "$(stat -c %a "$MNT/pub/f")"
# the sticky bit: only the owner removes its entry
as_user_errno EPERM unlink "$MNT/pub/rootfile"
as_user_errno OK unlink "$MNT/pub/f"
chmod 0700 "$MNT/dir" || tfs_fail "chmod 0700 failed"
as_user_errno EACCES open "$MNT/dir/x" creat,wronly

# ----- times set exactly -----

f="$MNT/times"
: >"$f" || tfs_fail "cannot create a file"
touch -d '2001-02-03 04:05:06.123456789 UTC' "$f" || tfs_fail "touch -d failed"
tfs_eq "atime after touch -d" 981173106123456789 "$(ns "$f" X)"
tfs_eq "mtime after touch -d" 981173106123456789 "$(ns "$f" Y)"
touch -a -d '2002-01-01 00:00:00.000000001 UTC' "$f" || tfs_fail "touch -a -d failed"
tfs_eq "atime after touch -a -d" 1009843200000000001 "$(ns "$f" X)"
tfs_eq "mtime after touch -a -d (UTIME_OMIT)" 981173106123456789 "$(ns "$f" Y)"
touch -m -d '1999-12-31 23:59:59.999999999 UTC' "$f" || tfs_fail "touch -m -d failed"
tfs_eq "atime after touch -m -d (UTIME_OMIT)" 1009843200000000001 "$(ns "$f" X)"
tfs_eq "mtime after touch -m -d" 946684799999999999 "$(ns "$f" Y)"
tfs_errno OK utimens "$f" 1000000000.5 omit
tfs_eq "atime after utimensat" 1000000000500000000 "$(ns "$f" X)"
tfs_eq "mtime after utimensat UTIME_OMIT" 946684799999999999 "$(ns "$f" Y)"
tfs_errno OK utimens "$f" omit 0.000000007
tfs_eq "mtime after utimensat to 7 ns past the epoch" 7 "$(ns "$f" Y)"
t0=$(date +%s)
tfs_errno OK utimens "$f" now now
t1=$(date +%s)
for w in X Y Z; do
	s=$(stat -c "%$w" "$f")
	{ [ "$s" -ge "$t0" ] && [ "$s" -le "$t1" ]; } || tfs_fail "time %$w $s after utimensat UTIME_NOW is not within [$t0, $t1]"
done
touch -d '2001-02-03 04:05:06.123456789 UTC' "$f" || tfs_fail "touch -d failed"

# ----- what moves which time -----

# prepare one file per operation, wait once, then do them all
for x in w chmod chown read trunc; do
	echo data >"$MNT/t_$x" || tfs_fail "write failed"
	touch -d '2001-01-01 00:00:00 UTC' "$MNT/t_$x" || tfs_fail "touch -d failed"
done
mkdir "$MNT/td" "$MNT/td2" || tfs_fail "mkdir failed"
touch "$MNT/td/victim" "$MNT/td/moving" || tfs_fail "touch failed"
old=978307200000000000
declare -A c0
for x in w chmod chown read trunc; do c0[$x]=$(ns "$MNT/t_$x" Z); done
sleep 1.1
t0=$(date +%s)
touch -d '2001-01-01 00:00:00 UTC' "$MNT/td" "$MNT/td2" || tfs_fail "touch -d of directories failed"
printf more >>"$MNT/t_w" || tfs_fail "append failed"
chmod 600 "$MNT/t_chmod" || tfs_fail "chmod failed"
chown 1:1 "$MNT/t_chown" || tfs_fail "chown failed"
cat "$MNT/t_read" >/dev/null || tfs_fail "cat failed"
truncate -s 1 "$MNT/t_trunc" || tfs_fail "truncate failed"

[ "$(stat -c %Y "$MNT/t_w")" -ge "$t0" ] || tfs_fail "mtime did not move on write"
[ "$(ns "$MNT/t_w" Z)" -gt "${c0[w]}" ] || tfs_fail "ctime did not move on write"
tfs_eq "atime after a write" "$old" "$(ns "$MNT/t_w" X)"
tfs_eq "mtime after chmod" "$old" "$(ns "$MNT/t_chmod" Y)"
[ "$(ns "$MNT/t_chmod" Z)" -gt "${c0[chmod]}" ] || tfs_fail "ctime did not move on chmod"
tfs_eq "mtime after chown" "$old" "$(ns "$MNT/t_chown" Y)"
[ "$(ns "$MNT/t_chown" Z)" -gt "${c0[chown]}" ] || tfs_fail "ctime did not move on chown"
# relatime (test-atime has the rest): the atime, older than the ctime,
# moves on a read
[ "$(stat -c %X "$MNT/t_read")" -ge "$t0" ] ||
	tfs_fail "atime after a read (relatime): $(stat -c %x "$MNT/t_read"), expected the time of the read"
tfs_eq "mtime after a read" "$old" "$(ns "$MNT/t_read" Y)"
tfs_eq "ctime after a read" "${c0[read]}" "$(ns "$MNT/t_read" Z)"
[ "$(stat -c %Y "$MNT/t_trunc")" -ge "$t0" ] || tfs_fail "mtime did not move on truncate"
[ "$(ns "$MNT/t_trunc" Z)" -gt "${c0[trunc]}" ] || tfs_fail "ctime did not move on truncate"

# a directory's mtime and ctime move when an entry is made, removed or moved
touch "$MNT/td/new" || tfs_fail "touch failed"
[ "$(stat -c %Y "$MNT/td")" -ge "$t0" ] || tfs_fail "directory mtime did not move on create"
touch -d '2001-01-01 00:00:00 UTC' "$MNT/td" || tfs_fail "touch -d failed"
rm "$MNT/td/victim" || tfs_fail "rm failed"
[ "$(stat -c %Y "$MNT/td")" -ge "$t0" ] || tfs_fail "directory mtime did not move on unlink"
[ "$(stat -c %Z "$MNT/td")" -ge "$t0" ] || tfs_fail "directory ctime did not move on unlink"
touch -d '2001-01-01 00:00:00 UTC' "$MNT/td" || tfs_fail "touch -d failed"
mv "$MNT/td/moving" "$MNT/td2/" || tfs_fail "mv failed"
[ "$(stat -c %Y "$MNT/td")" -ge "$t0" ] || tfs_fail "source directory mtime did not move on rename"
[ "$(stat -c %Y "$MNT/td2")" -ge "$t0" ] || tfs_fail "target directory mtime did not move on rename"

# ----- all of it after a remount -----

tfs_umount
tfs_mount
tfs_eq "atime after remount" 981173106123456789 "$(ns "$f" X)"
tfs_eq "mtime after remount" 981173106123456789 "$(ns "$f" Y)"
tfs_eq "owner of uid 1234's directory after remount" 1234:1234 "$(stat -c %u:%g "$MNT/pub/d")"
tfs_eq "mode of t_chmod after remount" 600 "$(stat -c %a "$MNT/t_chmod")"
tfs_eq "owner of t_chown after remount" 1:1 "$(stat -c %u:%g "$MNT/t_chown")"
tfs_eq "mode of pub after remount" 1777 "$(stat -c %a "$MNT/pub")"
tfs_eq "st_blocks of ten after remount" 24 "$(stat -c %b "$MNT/ten")"
tfs_eq "st_blocks of sparse after remount" 8 "$(stat -c %b "$MNT/sparse")"

tfs_umount
tfs_fsck_clean
tfs_pass
