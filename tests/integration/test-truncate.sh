#!/bin/bash
# Description: truncate and ftruncate grow and shrink files; bytes exposed by growing read as zeros, also after shrinking into a partly filled block, after a small file was read from the device and then grown, and after a remount; st_blocks follows; errors are exact
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need xfs_io cmp truncate
tfs_setup 512M

# bytes COUNT CHAR: COUNT copies of CHAR on stdout
bytes() { head -c "$1" /dev/zero | tr '\0' "$2"; }

# ----- shrink into a partly filled block, then grow -----

# truncate(1) on a closed file: 'A' x 10000, cut to 5000, back to 10000
bytes 10000 A >"$MNT/t1" || tfs_fail "write of 10000 bytes failed"
truncate -s 5000 "$MNT/t1" || tfs_fail "truncate -s 5000 failed"
tfs_eq "size after truncate -s 5000" 5000 "$(stat -c %s "$MNT/t1")"
truncate -s 10000 "$MNT/t1" || tfs_fail "truncate -s 10000 failed"
{ bytes 5000 A && head -c 5000 /dev/zero; } >"$WORK/t1.ref"
cmp "$WORK/t1.ref" "$MNT/t1" || tfs_fail "bytes 5000..9999 are not zero after truncate 10000 -> 5000 -> 10000"

# ftruncate on one open file, no close in between
xfs_io -f -c "pwrite -S 0x41 0 10000" -c "truncate 5000" -c "truncate 10000" "$MNT/t2" >/dev/null ||
	tfs_fail "xfs_io pwrite + ftruncate 5000 + ftruncate 10000 failed"
cmp "$WORK/t1.ref" "$MNT/t2" || tfs_fail "bytes 5000..9999 are not zero after ftruncate 10000 -> 5000 -> 10000"

# shrink, then grow by writing past the new end
xfs_io -f -c "pwrite -S 0x41 0 10000" -c "truncate 5000" -c "pwrite -S 0x42 8000 100" "$MNT/t3" >/dev/null ||
	tfs_fail "xfs_io pwrite + ftruncate + pwrite failed"
{ bytes 5000 A && head -c 3000 /dev/zero && bytes 100 B; } >"$WORK/t3.ref"
cmp "$WORK/t3.ref" "$MNT/t3" || tfs_fail "bytes 5000..7999 are not zero after a shrink then a write at 8000"

# shrink to a block boundary: the cut blocks are freed and come back as holes
xfs_io -f -c "pwrite -S 0x41 0 16384" -c fsync -c "truncate 4096" -c "truncate 16384" "$MNT/t4" >/dev/null ||
	tfs_fail "xfs_io pwrite 16384 + ftruncate 4096 + ftruncate 16384 failed"
{ bytes 4096 A && head -c 12288 /dev/zero; } >"$WORK/t4.ref"
cmp "$WORK/t4.ref" "$MNT/t4" || tfs_fail "old data came back after ftruncate 16384 -> 4096 -> 16384"
tfs_eq "st_blocks of 16 KiB with 4 KiB of data after the cut" 8 "$(stat -c %b "$MNT/t4")"

# ----- grow an empty file far beyond the image size: a hole -----

: >"$MNT/sparse" || tfs_fail "cannot create an empty file"
truncate -s 1G "$MNT/sparse" || tfs_fail "truncate -s 1G on a 512 MiB image failed"
tfs_eq "size after truncate -s 1G" 1073741824 "$(stat -c %s "$MNT/sparse")"
tfs_eq "st_blocks of a 1 GiB hole" 0 "$(stat -c %b "$MNT/sparse")"
for off in 0 536870912 1072693248; do
	dd if="$MNT/sparse" bs=65536 iflag=skip_bytes skip="$off" count=16 2>/dev/null |
		cmp - <(head -c 1048576 /dev/zero) || tfs_fail "1 MiB at $off of a truncated-up file is not zeros"
done

# ----- shrink a full file, st_blocks follows -----

xfs_io -f -c "pwrite -S 0x61 0 1M" -c fsync "$MNT/s" >/dev/null || tfs_fail "xfs_io pwrite 1M failed"
tfs_eq "st_blocks of 1 MiB of data" 2048 "$(stat -c %b "$MNT/s")"
truncate -s 4097 "$MNT/s" || tfs_fail "truncate -s 4097 failed"
tfs_eq "size after truncate -s 4097" 4097 "$(stat -c %s "$MNT/s")"
tfs_eq "st_blocks after truncate -s 4097" 16 "$(stat -c %b "$MNT/s")"
bytes 4097 a | cmp - "$MNT/s" || tfs_fail "content after truncate -s 4097 is not the first 4097 bytes"
tfs_errno OK ftruncate "$MNT/s" 12345
tfs_eq "size after ftruncate 12345" 12345 "$(stat -c %s "$MNT/s")"
{ bytes 4097 a && head -c 8248 /dev/zero; } | cmp - "$MNT/s" || tfs_fail "content after ftruncate up to 12345 is wrong"
truncate -s 0 "$MNT/s" || tfs_fail "truncate -s 0 failed"
tfs_eq "size after truncate -s 0" 0 "$(stat -c %s "$MNT/s")"
tfs_eq "st_blocks after truncate -s 0" 0 "$(stat -c %b "$MNT/s")"
tfs_eq "bytes read after truncate -s 0" 0 "$(wc -c <"$MNT/s")"

# ----- truncate updates mtime and ctime -----

touch -d '2001-01-01 00:00:00 UTC' "$MNT/s" || tfs_fail "touch -d failed"
t0=$(date +%s)
truncate -s 100 "$MNT/s" || tfs_fail "truncate -s 100 failed"
m=$(stat -c %Y "$MNT/s")
c=$(stat -c %Z "$MNT/s")
[ "$m" -ge "$t0" ] || tfs_fail "mtime $m after truncate is older than the truncate ($t0)"
[ "$c" -ge "$t0" ] || tfs_fail "ctime $c after truncate is older than the truncate ($t0)"

# ----- freed space comes back -----

xfs_io -f -c "pwrite -b 1M 0 16M" -c fsync "$MNT/space" >/dev/null || tfs_fail "xfs_io pwrite 16M failed"
before=$(tfs_free_bytes)
truncate -s 0 "$MNT/space" || tfs_fail "truncate -s 0 of 16 MiB failed"
# shellcheck disable=SC2317 # called through tfs_wait_for
freed() { [ $(($(tfs_free_bytes) - before)) -ge $((16777216 - 262144)) ]; }
tfs_wait_for 10 freed || tfs_fail "free space grew by $(($(tfs_free_bytes) - before)) bytes after truncating 16 MiB to 0"

# ----- errors -----

mkdir "$MNT/dir" || tfs_fail "mkdir failed"
tfs_errno EINVAL truncate "$MNT/t1" -1
tfs_errno EISDIR truncate "$MNT/dir" 0
tfs_errno ENOENT truncate "$MNT/missing" 0
tfs_errno ENOTDIR truncate "$MNT/t1/x" 0
tfs_errno EISDIR ftruncate "$MNT/dir" 0

# ----- a small file read from the device, then grown -----
# (a read fills the cache only up to the end of the file: what lies
# beyond must come back as zeros, or as what is written there, when the
# file grows, never as whatever that cache memory held before)

printf 'small' >"$MNT/g1"
cp "$MNT/g1" "$MNT/g2"
head -c $((24 << 20)) /dev/urandom >"$MNT/junk"
tfs_umount
# a small cache, filled with random bytes read back from the device, so
# that g1 and g2 are read into memory that held them
tfs_mount -o max_in_cpu=8MiB
cat "$MNT/junk" >/dev/null
rm "$MNT/junk"
tfs_eq "g1 read from the device" small "$(cat "$MNT/g1")"
tfs_eq "g2 read from the device" small "$(cat "$MNT/g2")"
truncate -s 20000 "$MNT/g1"
{ printf 'small'; head -c 19995 /dev/zero; } >"$WORK/g1.ref"
cmp "$WORK/g1.ref" "$MNT/g1" || tfs_fail "g1 grown by truncate after a read: not zeros past the old end"
printf 'tail' | dd of="$MNT/g2" bs=1 seek=9000 conv=notrunc status=none
{ printf 'small'; head -c 8995 /dev/zero; printf 'tail'; } >"$WORK/g2.ref"
cmp "$WORK/g2.ref" "$MNT/g2" || tfs_fail "g2 grown by a write after a read: not zeros between the old end and the write"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
cmp "$WORK/g1.ref" "$MNT/g1" || tfs_fail "g1 differs read again"
cmp "$WORK/g2.ref" "$MNT/g2" || tfs_fail "g2 differs read again"

# ----- after a remount the zeros are on disk, not only in the cache -----

tfs_umount
tfs_mount
cmp "$WORK/t1.ref" "$MNT/t1" || tfs_fail "t1 differs after remount"
cmp "$WORK/t1.ref" "$MNT/t2" || tfs_fail "t2 differs after remount"
cmp "$WORK/t3.ref" "$MNT/t3" || tfs_fail "t3 differs after remount"
cmp "$WORK/t4.ref" "$MNT/t4" || tfs_fail "t4 differs after remount"
cmp "$WORK/g1.ref" "$MNT/g1" || tfs_fail "g1 differs after remount"
cmp "$WORK/g2.ref" "$MNT/g2" || tfs_fail "g2 differs after remount"
tfs_eq "st_blocks of t4 after remount" 8 "$(stat -c %b "$MNT/t4")"
tfs_eq "size of the 1 GiB hole after remount" 1073741824 "$(stat -c %s "$MNT/sparse")"
tfs_eq "st_blocks of the 1 GiB hole after remount" 0 "$(stat -c %b "$MNT/sparse")"

tfs_umount
tfs_fsck_clean
tfs_pass
