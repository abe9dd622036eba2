#!/bin/bash
# Description: eight threads pwrite disjoint ranges of one shared fd (1000-byte, 4096-byte, 4097-byte and 1 MiB chunks) and every byte lands; threads appending through O_APPEND never tear or overwrite records; several processes write files, halves of one file, and directory entries at once; all verified by sha256sum and again after a remount
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need sha256sum cmp xfs_io
tfs_setup 1G

# ----- threads sharing one descriptor -----

# NAME CHUNK NCHUNKS SEED: neighbouring chunks belong to different threads,
# so unaligned chunks make threads race on the same 4 KiB blocks
while read -r name chunk nchunks seed; do
	tfs_errno OK pwrite-threads "$MNT/$name" 8 "$chunk" "$nchunks" "$seed"
	echo "$name $((chunk * nchunks)) $seed" >>"$WORK/threaded"
done <<'LIST'
c1000 1000 20000 11
c4096 4096 4096 12
c4097 4097 2000 13
c1m 1048576 64 14
c7 7 30000 15
LIST

tfs_errno OK append-threads "$MNT/ap100" 8 100 2000
tfs_errno OK append-threads "$MNT/ap5000" 4 5000 300

# ----- processes at once -----

# six writers of different files, each through a pipe into dd
pids=()
for i in 1 2 3 4 5 6; do
	size=$((i * 3 * 1048576 + i * 1111))
	("$TFS_SYS" pattern "$size" "$((100 + i))" | dd of="$MNT/p$i" bs=64K iflag=fullblock 2>/dev/null) &
	pids+=($!)
	echo "p$i $size $((100 + i))" >>"$WORK/procs"
done
# two processes writing the two halves of one file
: >"$MNT/halves" || tfs_fail "cannot create a file"
xfs_io -c "pwrite -S 0x11 -b 65536 0 8M" "$MNT/halves" >/dev/null &
pids+=($!)
xfs_io -c "pwrite -S 0x22 -b 12345 8M 8M" "$MNT/halves" >/dev/null &
pids+=($!)
# and four processes making directory entries in their own directories
for d in 1 2 3 4; do
	mkdir "$MNT/dir$d" || tfs_fail "mkdir failed"
	"$TFS_SYS" create-many "$MNT/dir$d" 2000 >/dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || tfs_fail "a concurrent writer (pid $p) failed"
done

{ head -c 8388608 /dev/zero | tr '\0' '\021' && head -c 8388608 /dev/zero | tr '\0' '\042'; } >"$WORK/halves.ref"

# check WHEN: every file holds exactly what was written
check() {
	while read -r name size seed; do
		want=$("$TFS_SYS" pattern "$size" "$seed" | sha256sum)
		tfs_eq "sha256 of $name ($1)" "$want" "$(sha256sum <"$MNT/$name")"
		tfs_eq "size of $name ($1)" "$size" "$(stat -c %s "$MNT/$name")"
	done <"$WORK/$2"
}
check "after writing" threaded
check "after writing" procs
cmp "$WORK/halves.ref" "$MNT/halves" || tfs_fail "two processes writing halves of one file: content differs"
for d in 1 2 3 4; do
	tfs_eq "entries in dir$d" 2000 "$(find "$MNT/dir$d" -mindepth 1 -maxdepth 1 | wc -l)"
done

tfs_umount
tfs_mount
check "after remount" threaded
check "after remount" procs
cmp "$WORK/halves.ref" "$MNT/halves" || tfs_fail "halves differ after remount"
for d in 1 2 3 4; do
	tfs_eq "entries in dir$d after remount" 2000 "$(find "$MNT/dir$d" -mindepth 1 -maxdepth 1 | wc -l)"
done

tfs_umount
tfs_fsck_clean
tfs_pass
