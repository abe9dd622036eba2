#!/bin/bash
# Description: fallocate mode 0 grows size and st_blocks and reads zeros without touching existing data, KEEP_SIZE allocates past EOF, PUNCH_HOLE (aligned and unaligned) zeros the range and frees only whole blocks; all of it survives a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need xfs_io cmp fallocate
tfs_setup 512M

# bytes COUNT CHAR: COUNT copies of CHAR on stdout
bytes() { head -c "$1" /dev/zero | tr '\0' "$2"; }
# zero_range FILE OFF LEN: write zeros into the reference FILE as a punch would
zero_range() {
	dd if=/dev/zero of="$1" bs=65536 oflag=seek_bytes iflag=count_bytes seek="$2" count="$3" conv=notrunc 2>/dev/null ||
		tfs_fail "dd of zeros into the reference failed"
}
# whole_blocks OFF LEN: number of 4 KiB blocks entirely inside [OFF, OFF+LEN)
whole_blocks() {
	first=$((($1 + 4095) / 4096))
	last=$((($1 + $2) / 4096))
	echo $((last > first ? last - first : 0))
}
blocks() { stat -c %b "$1"; }

# ----- mode 0 on a new file -----

free0=$(tfs_free_bytes)
fallocate -l 10M "$MNT/f0" || tfs_fail "fallocate -l 10M failed"
tfs_eq "size after fallocate -l 10M" 10485760 "$(stat -c %s "$MNT/f0")"
tfs_eq "st_blocks after fallocate -l 10M" 20480 "$(blocks "$MNT/f0")"
cmp -n 10485760 "$MNT/f0" /dev/zero || tfs_fail "a fallocated file does not read as zeros"
used=$((free0 - $(tfs_free_bytes)))
{ [ "$used" -ge 10485760 ] && [ "$used" -le $((10485760 + 1048576)) ]; } ||
	tfs_fail "free space fell by $used bytes after fallocate -l 10M, expected 10 MiB (+ at most 1 MiB metadata)"

# ----- mode 0 over existing data keeps the data -----

xfs_io -f -c "pwrite -S 0xab 0 6000" "$MNT/f1" >/dev/null || tfs_fail "xfs_io pwrite failed"
fallocate -o 4096 -l 16384 "$MNT/f1" || tfs_fail "fallocate -o 4096 -l 16384 failed"
tfs_eq "size after fallocate to 20480" 20480 "$(stat -c %s "$MNT/f1")"
tfs_eq "st_blocks after fallocate to 20480" 40 "$(blocks "$MNT/f1")"
{ bytes 6000 '\253' && head -c 14480 /dev/zero; } >"$WORK/f1.ref"
cmp "$WORK/f1.ref" "$MNT/f1" || tfs_fail "fallocate over written data changed it or left non-zero bytes"
fallocate -o 0 -l 4096 "$MNT/f1" || tfs_fail "fallocate inside the file failed"
tfs_eq "size after fallocate inside the file" 20480 "$(stat -c %s "$MNT/f1")"
cmp "$WORK/f1.ref" "$MNT/f1" || tfs_fail "fallocate inside the file changed its content"

# ----- KEEP_SIZE -----

xfs_io -f -c "pwrite -S 0xcd 0 4096" "$MNT/f2" >/dev/null || tfs_fail "xfs_io pwrite failed"
fallocate -n -l 8M "$MNT/f2" || tfs_fail "fallocate -n -l 8M failed"
tfs_eq "size after fallocate -n -l 8M" 4096 "$(stat -c %s "$MNT/f2")"
tfs_eq "st_blocks after fallocate -n -l 8M" 16384 "$(blocks "$MNT/f2")"
bytes 4096 '\315' >"$WORK/f2.head"
cmp "$WORK/f2.head" "$MNT/f2" || tfs_fail "fallocate -n changed data or the readable length"
fallocate -n -o 16M -l 1M "$MNT/f2" || tfs_fail "fallocate -n -o 16M -l 1M failed"
tfs_eq "size after fallocate -n past EOF" 4096 "$(stat -c %s "$MNT/f2")"
tfs_eq "st_blocks after fallocate -n past EOF" 18432 "$(blocks "$MNT/f2")"
# growing over preallocated blocks exposes zeros, not stale data
truncate -s 8M "$MNT/f2" || tfs_fail "truncate -s 8M failed"
{ cat "$WORK/f2.head" && head -c $((8388608 - 4096)) /dev/zero; } >"$WORK/f2.ref"
cmp "$WORK/f2.ref" "$MNT/f2" || tfs_fail "preallocated blocks exposed by truncate do not read as zeros"
tfs_eq "st_blocks after truncate over preallocation" 18432 "$(blocks "$MNT/f2")"

# ----- PUNCH_HOLE -----

xfs_io -f -c "pwrite -S 0xef -b 1M 0 1M" -c fsync "$MNT/f3" >/dev/null || tfs_fail "xfs_io pwrite 1M failed"
bytes 1048576 '\357' >"$WORK/f3.ref"
want=2048
tfs_eq "st_blocks of 1 MiB of data" "$want" "$(blocks "$MNT/f3")"
# OFFSET LENGTH: aligned, inside one block, two partial blocks with whole
# ones between, past EOF, and straddling EOF
while read -r off len; do
	before=$(blocks "$MNT/f3")
	fallocate -p -o "$off" -l "$len" "$MNT/f3" || tfs_fail "fallocate -p -o $off -l $len failed"
	if [ "$off" -lt 1048576 ]; then
		end=$((off + len > 1048576 ? 1048576 : off + len))
		zero_range "$WORK/f3.ref" "$off" $((end - off))
		want=$((before - 8 * $(whole_blocks "$off" $((end - off)))))
	else
		want=$before
	fi
	tfs_eq "size after punching $len at $off" 1048576 "$(stat -c %s "$MNT/f3")"
	tfs_eq "st_blocks after punching $len at $off" "$want" "$(blocks "$MNT/f3")"
	cmp "$WORK/f3.ref" "$MNT/f3" || tfs_fail "content after punching $len at $off differs from the reference"
done <<'EOF'
65536 131072
1000 5000
300000 20000
2097152 1048576
1044380 10000
EOF
# punching everything frees everything
fallocate -p -o 0 -l 1048576 "$MNT/f3" || tfs_fail "punching the whole file failed"
tfs_eq "st_blocks after punching the whole file" 0 "$(blocks "$MNT/f3")"
tfs_eq "size after punching the whole file" 1048576 "$(stat -c %s "$MNT/f3")"
cmp -n 1048576 "$MNT/f3" /dev/zero || tfs_fail "a fully punched file does not read as zeros"

# a second punched file to check after the remount
xfs_io -f -c "pwrite -S 0x11 0 65536" -c "fpunch 4096 8192" -c "fpunch 30000 100" "$MNT/f4" >/dev/null ||
	tfs_fail "xfs_io pwrite + fpunch failed"
bytes 65536 '\021' >"$WORK/f4.ref"
zero_range "$WORK/f4.ref" 4096 8192
zero_range "$WORK/f4.ref" 30000 100
cmp "$WORK/f4.ref" "$MNT/f4" || tfs_fail "xfs_io fpunch result differs"
tfs_eq "st_blocks after fpunch of 2 whole blocks" 112 "$(blocks "$MNT/f4")"

# ----- errors -----

# PUNCH_HOLE must come with KEEP_SIZE; a zero length is invalid
tfs_errno EOPNOTSUPP fallocate "$MNT/f1" punch 0 4096
tfs_errno EINVAL fallocate "$MNT/f1" 0 0 0
tfs_errno EINVAL fallocate "$MNT/f1" 0 -4096 4096

# ----- after a remount -----

tfs_umount
tfs_mount
tfs_eq "st_blocks of f0 after remount" 20480 "$(blocks "$MNT/f0")"
cmp -n 10485760 "$MNT/f0" /dev/zero || tfs_fail "f0 does not read as zeros after remount"
cmp "$WORK/f1.ref" "$MNT/f1" || tfs_fail "f1 differs after remount"
cmp "$WORK/f2.ref" "$MNT/f2" || tfs_fail "f2 differs after remount"
tfs_eq "st_blocks of f2 after remount" 18432 "$(blocks "$MNT/f2")"
tfs_eq "st_blocks of f3 after remount" 0 "$(blocks "$MNT/f3")"
cmp "$WORK/f4.ref" "$MNT/f4" || tfs_fail "f4 differs after remount"
tfs_eq "st_blocks of f4 after remount" 112 "$(blocks "$MNT/f4")"

tfs_umount
tfs_fsck_clean
tfs_pass
