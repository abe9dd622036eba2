#!/bin/bash
# Description: create, write and read back at aligned and unaligned offsets and lengths, holes read as zeros, reads past EOF are short, O_APPEND, O_TRUNC, O_EXCL, O_DIRECT, a write at a 1 TiB offset, all still there after a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need xfs_io cmp dd sha256sum
umask 022
tfs_setup 512M

# ----- a new file reads back what was written -----

printf 'hello\n' >"$MNT/hello" || tfs_fail "cannot create a file with the shell"
tfs_eq "content of a new file" hello "$(cat "$MNT/hello")"
tfs_eq "size of a 6-byte file" 6 "$(stat -c %s "$MNT/hello")"

# ----- the same writes on the mount and on a reference file in $WORK -----

# both CMD: run the xfs_io command CMD on the test file and on the reference
both() {
	xfs_io -f -c "$1" "$MNT/rw" >/dev/null || tfs_fail "xfs_io -c '$1' failed on the mount"
	xfs_io -f -c "$1" "$WORK/rw.ref" >/dev/null || tfs_fail "xfs_io -c '$1' failed on the reference"
}

# OFFSET LENGTH BYTE BUFSIZE: tiny, block-straddling, block-sized, odd,
# overwrites inside a block, and two writes far out that leave holes
while read -r off len byte bs; do
	both "pwrite -S $byte -b $bs $off $len"
done <<'EOF'
0 1 0x11 4096
1 4095 0x12 4096
4095 2 0x13 4096
4096 4096 0x14 4096
8191 8193 0x15 1000
12345 67890 0x16 65536
65536 131072 0x17 7
1048575 3 0x18 4096
3145745 1049576 0x19 131072
1000 100 0x1a 4096
5000 1 0x1b 4096
70000 4096 0x1c 333
10485760 4096 0x1d 4096
20971519 1 0x1e 4096
EOF

tfs_eq "st_size after the writes" 20971520 "$(stat -c %s "$MNT/rw")"
cmp "$WORK/rw.ref" "$MNT/rw" || tfs_fail "file differs from the reference after mixed writes"

# the holes [4195321, 10485760) and [10489856, 20971519) read as zeros
cmp -i 4195321:0 -n $((10485760 - 4195321)) "$MNT/rw" /dev/zero ||
	tfs_fail "first hole does not read as zeros"
cmp -i 10489856:0 -n $((20971519 - 10489856)) "$MNT/rw" /dev/zero ||
	tfs_fail "second hole does not read as zeros"

# reads at many offsets and lengths, some crossing EOF
while read -r off len; do
	got=$(dd if="$MNT/rw" bs=65536 iflag=skip_bytes,count_bytes skip="$off" count="$len" 2>/dev/null | sha256sum)
	want=$(dd if="$WORK/rw.ref" bs=65536 iflag=skip_bytes,count_bytes skip="$off" count="$len" 2>/dev/null | sha256sum)
	tfs_eq "read of $len bytes at $off" "$want" "$got"
done <<'EOF'
0 1
1 4095
4095 2
4096 4096
4000 10000
8190 9000
1048570 20
3145000 1050000
4195000 1000
10485759 4098
20971000 1000
20971519 100
EOF

# ----- reads at and past EOF -----

tfs_errno OK readpast "$MNT/rw"
n=$(dd if="$MNT/rw" bs=1 skip=20971530 count=5 2>/dev/null | wc -c)
tfs_eq "bytes read 10 bytes past EOF" 0 "$n"
n=$(dd if="$MNT/rw" bs=4096 iflag=skip_bytes skip=20971510 2>/dev/null | wc -c)
tfs_eq "bytes read from 10 bytes before EOF" 10 "$n"

# ----- dd with odd block sizes, seek and notrunc -----

"$TFS_SYS" pattern 3000000 5 >"$WORK/src" || tfs_fail "cannot make the source pattern"
dd if="$WORK/src" of="$MNT/dd1" bs=777 2>/dev/null || tfs_fail "dd bs=777 into the mount failed"
cmp "$WORK/src" "$MNT/dd1" || tfs_fail "dd bs=777 copy differs"
dd if="$WORK/src" of="$MNT/dd2" bs=1M 2>/dev/null || tfs_fail "dd bs=1M into the mount failed"
cmp "$WORK/src" "$MNT/dd2" || tfs_fail "dd bs=1M copy differs"
cp "$WORK/src" "$WORK/dd1.ref" || tfs_fail "cp of the reference failed"
for f in "$MNT/dd1" "$WORK/dd1.ref"; do
	printf 'XYZ' | dd of="$f" bs=1 seek=5000 conv=notrunc 2>/dev/null ||
		tfs_fail "dd conv=notrunc on $f failed"
done
cmp "$WORK/dd1.ref" "$MNT/dd1" || tfs_fail "dd seek=5000 conv=notrunc overwrite differs"
tfs_eq "size after a notrunc overwrite" 3000000 "$(stat -c %s "$MNT/dd1")"
# without notrunc dd truncates at the seek point
dd if="$WORK/src" of="$MNT/dd2" bs=4096 seek=2 count=1 2>/dev/null || tfs_fail "dd seek=2 failed"
tfs_eq "size after dd seek=2 count=1" 12288 "$(stat -c %s "$MNT/dd2")"
cmp -n 8192 "$MNT/dd2" "$WORK/src" || tfs_fail "dd seek=2 changed the first 8 KiB"
cmp -i 8192:0 -n 4096 "$MNT/dd2" "$WORK/src" || tfs_fail "dd seek=2 wrote the wrong block"

# ----- O_APPEND -----

echo one >>"$MNT/ap" || tfs_fail "echo >> failed"
echo two >>"$MNT/ap" || tfs_fail "second echo >> failed"
# with O_APPEND Linux writes at EOF whatever the pwrite offset
xfs_io -a -c "pwrite -S 0x41 0 5" "$MNT/ap" >/dev/null || tfs_fail "xfs_io -a pwrite failed"
printf 'one\ntwo\nAAAAA' >"$WORK/ap.ref"
cmp "$WORK/ap.ref" "$MNT/ap" || tfs_fail "O_APPEND writes did not land at EOF: $(od -c "$MNT/ap" | head -3)"

# ----- O_TRUNC -----

printf 'abcdefgh' >"$MNT/tr" || tfs_fail "write failed"
printf 'xy' >"$MNT/tr" || tfs_fail "rewrite with > failed"
tfs_eq "content after > rewrote an 8-byte file" xy "$(cat "$MNT/tr")"
xfs_io -f -c "pwrite -S 0x61 0 100000" "$MNT/tr" >/dev/null || tfs_fail "xfs_io pwrite failed"
tfs_errno OK open "$MNT/tr" wronly,trunc
tfs_eq "size after O_TRUNC" 0 "$(stat -c %s "$MNT/tr")"
tfs_eq "st_blocks after O_TRUNC" 0 "$(stat -c %b "$MNT/tr")"
xfs_io -t -c "pwrite -S 0x62 10 3" "$MNT/tr" >/dev/null || tfs_fail "xfs_io -t pwrite failed"
printf '\0\0\0\0\0\0\0\0\0\0bbb' >"$WORK/tr.ref"
cmp "$WORK/tr.ref" "$MNT/tr" || tfs_fail "old data came back after O_TRUNC"

# ----- O_CREAT, O_EXCL and the errors of open -----

tfs_errno EEXIST open "$MNT/hello" creat,excl,wronly
tfs_errno OK open "$MNT/hello" creat,wronly
tfs_eq "O_CREAT without O_EXCL keeps the content" hello "$(cat "$MNT/hello")"
tfs_errno OK open "$MNT/new" creat,excl,wronly 0640
tfs_eq "mode of an O_CREAT file made with 0640" 640 "$(stat -c %a "$MNT/new")"
ln -s nowhere "$MNT/dangling" || tfs_fail "ln -s failed"
tfs_errno EEXIST open "$MNT/dangling" creat,excl,wronly
[ -e "$MNT/nowhere" ] && tfs_fail "O_CREAT|O_EXCL on a dangling symlink created its target"
tfs_errno ENOENT open "$MNT/missing" rdonly
tfs_errno ENOENT open "$MNT/nodir/file" creat,wronly
tfs_errno ENOTDIR open "$MNT/hello/file" creat,wronly
mkdir "$MNT/dir" || tfs_fail "mkdir failed"
tfs_errno EISDIR open "$MNT/dir" wronly
tfs_errno EISDIR open "$MNT/dir" rdwr
tfs_errno OK open "$MNT/dir" rdonly,directory
tfs_errno ENOTDIR open "$MNT/hello" rdonly,directory
tfs_errno ELOOP open "$MNT/dangling" rdonly,nofollow

# ----- O_DIRECT -----

xfs_io -d -f -c "pwrite -S 0x5a -b 65536 0 1M" "$MNT/direct" >/dev/null || tfs_fail "xfs_io -d pwrite failed"
head -c 1048576 /dev/zero | tr '\0' 'Z' >"$WORK/direct.ref"
cmp "$WORK/direct.ref" "$MNT/direct" || tfs_fail "O_DIRECT write reads back wrong"
xfs_io -d -r -c "pread -b 65536 0 1M" "$MNT/direct" >/dev/null || tfs_fail "xfs_io -d pread failed"
# an O_DIRECT overwrite in the middle of a file written through the cache
cp "$WORK/src" "$MNT/mixed" || tfs_fail "cp failed"
cp "$WORK/src" "$WORK/mixed.ref" || tfs_fail "cp failed"
xfs_io -d -c "pwrite -S 0x77 -b 8192 8192 8192" "$MNT/mixed" >/dev/null || tfs_fail "O_DIRECT overwrite failed"
xfs_io -c "pwrite -S 0x77 8192 8192" "$WORK/mixed.ref" >/dev/null || tfs_fail "reference overwrite failed"
cmp "$WORK/mixed.ref" "$MNT/mixed" || tfs_fail "buffered read does not see an O_DIRECT overwrite"
tfs_errno OK odirect-rw "$MNT/direct2" 8M

# ----- a write at a 1 TiB offset on a 512 MiB image -----

res=$("$TFS_SYS" pwrite "$MNT/far" 1T 4096 0x33 2>&1)
case $res in
OK)
	tfs_eq "st_size after a 4 KiB write at 1 TiB" 1099511631872 "$(stat -c %s "$MNT/far")"
	tfs_eq "st_blocks after a 4 KiB write at 1 TiB" 8 "$(stat -c %b "$MNT/far")"
	head -c 4096 /dev/zero | tr '\0' 3 >"$WORK/far.ref"
	dd if="$MNT/far" bs=4096 skip=268435456 2>/dev/null | cmp - "$WORK/far.ref" ||
		tfs_fail "the block written at 1 TiB reads back wrong"
	dd if="$MNT/far" bs=65536 skip=8388608 count=16 2>/dev/null | cmp - <(head -c 1048576 /dev/zero) ||
		tfs_fail "hole at 512 GiB does not read as 1 MiB of zeros"
	rm "$MNT/far" || tfs_fail "rm of the 1 TiB file failed"
	;;
EFBIG)
	tfs_log "a 1 TiB offset is beyond the maximum file size (EFBIG); that check skipped"
	;;
*)
	tfs_fail "pwrite of 4 KiB at 1 TiB on a 512 MiB image: expected OK (sparse) or EFBIG, got '$res'"
	;;
esac

# ----- everything is still there after a remount -----

tfs_umount
tfs_mount
cmp "$WORK/rw.ref" "$MNT/rw" || tfs_fail "mixed-write file differs after remount"
cmp "$WORK/dd1.ref" "$MNT/dd1" || tfs_fail "dd file differs after remount"
cmp "$WORK/ap.ref" "$MNT/ap" || tfs_fail "O_APPEND file differs after remount"
cmp "$WORK/tr.ref" "$MNT/tr" || tfs_fail "O_TRUNC file differs after remount"
cmp "$WORK/mixed.ref" "$MNT/mixed" || tfs_fail "O_DIRECT-overwritten file differs after remount"
# odirect-rw leaves pattern 7 with its last block overwritten by pattern 99
cmp -n $((8388608 - 4096)) <("$TFS_SYS" pattern 8M 7) "$MNT/direct2" ||
	tfs_fail "odirect-rw file differs after remount"
cmp -i 0:$((8388608 - 4096)) <("$TFS_SYS" pattern 4096 99) "$MNT/direct2" ||
	tfs_fail "last block of the odirect-rw file differs after remount"
tfs_eq "content of hello after remount" hello "$(cat "$MNT/hello")"

tfs_umount
tfs_fsck_clean
tfs_pass
