#!/bin/bash
# Description: metadata grows into the data area (lib/journal.c J10): on a 64 MiB image holding 200 files of 64 KiB, empty files are created until ENOSPC; then no 1 MiB write fits either, df shows at most 1% of the blocks available and df -i at most 1% of the inodes free (the margin), every file is there after a remount and fsck exits 0; deleting the empty files and creating them again reaches the same count within 2%
#
# With fixed checkpoint slots (format version 1) a 1 GiB image stopped
# taking files at about 47,000 while its data area was empty.  A sparse
# 1 GiB image holds about 2 million empty files now, which take about ten
# minutes to create through FUSE on two cores: TFS_METADATA_BIG=1 runs
# that size too.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need stat df dd find wc

MARGIN_PCT=1	# of blocks available, of inodes free, once full
AGAIN_PCT=2	# the second fill's count against the first

# sf FIELD: one statfs field (b total, f free, a available blocks; c total,
# d free inodes)
sf() { stat -f -c "%$1" "$MNT"; }

# fill_empty DIR PREFIX: create empty files DIR/PREFIX000000... until the
# creation fails; it must fail with ENOSPC.  The count goes to CREATED.
fill_empty() {
	mkdir -p "$1" || tfs_fail "mkdir $1 failed"
	if "$TFS_SYS" create-many "$1" 100000000 "$2" >"$WORK/create.out" 2>&1; then
		tfs_fail "creating files in $1: no ENOSPC after 100,000,000 files"
	fi
	grep -q "ENOSPC" "$WORK/create.out" ||
		tfs_fail "creating files in $1: expected ENOSPC, got: $(cat "$WORK/create.out")"
	CREATED=$(find "$1" -maxdepth 1 -type f -name "$2*" | wc -l)
}

# check_full WHAT: the file system is full of files and metadata: a 1 MiB
# write gets ENOSPC, and both df and df -i are within the margin of full
check_full() {
	tfs_expect_exit 1 "$1: dd of 1 MiB" \
		dd if=/dev/zero of="$MNT/onemore" bs=1M count=1 conv=fsync
	tfs_expect_words "$1: dd of 1 MiB" "$WORK/err" "No space left on device"
	rm -f "$MNT/onemore"
	total=$(sf b)
	avail=$(sf a)
	files=$(sf c)
	ffree=$(sf d)
	tfs_log "$1: blocks: $avail of $total available; inodes: $ffree of $files free"
	[ $((avail * 100)) -le $((total * MARGIN_PCT)) ] ||
		tfs_fail "$1: df shows $avail of $total blocks available, expected at most $MARGIN_PCT%"
	[ $((ffree * 100)) -le $((files * MARGIN_PCT)) ] ||
		tfs_fail "$1: df -i shows $ffree of $files inodes free, expected at most $MARGIN_PCT%"
	df -i "$MNT" >"$WORK/dfi" || tfs_fail "df -i failed"
	df "$MNT" >"$WORK/df" || tfs_fail "df failed"
	cat "$WORK/df" "$WORK/dfi" >&2
}

# run SIZE DATAFILES: one image of SIZE, DATAFILES files of 64 KiB first
run() {
	tfs_setup "$1"
	mkdir "$MNT/data" || tfs_fail "mkdir data failed"
	for i in $(seq "$2"); do
		"$TFS_SYS" pattern 65536 "$i" >"$MNT/data/f$i" ||
			tfs_fail "writing data file $i failed"
	done
	files0=$(sf c)
	fill_empty "$MNT/e" e
	first=$CREATED
	tfs_log "$1: $first empty files until ENOSPC (df -i said $files0 inodes before)"
	[ "$first" -gt 1000 ] || tfs_fail "$1: only $first files fit"
	check_full "$1, full"
	tfs_umount
	tfs_fsck_clean
	tfs_mount
	tfs_eq "$1: files after a remount" "$first" "$(find "$MNT/e" -type f | wc -l)"
	for i in 1 "$2"; do
		"$TFS_SYS" pattern 65536 "$i" | cmp - "$MNT/data/f$i" ||
			tfs_fail "$1: data file $i after the remount: expected its bytes, got others"
	done

	# J10: deleting gives the metadata space back, to files or data
	"$TFS_SYS" unlink-many "$MNT/e" "$first" e >/dev/null ||
		tfs_fail "$1: deleting the empty files failed"
	sync -f "$MNT/data" || tfs_fail "sync failed"
	fill_empty "$MNT/e" e
	again=$CREATED
	tfs_log "$1: $again empty files until ENOSPC again"
	diff=$((again > first ? again - first : first - again))
	[ $((diff * 100)) -le $((first * AGAIN_PCT)) ] ||
		tfs_fail "$1: $again files fit the second time, $first the first: more than $AGAIN_PCT% apart"
	check_full "$1, full again"
	tfs_umount
	tfs_fsck_clean
	tfs_cleanup
}

run 64M 200
if [ "${TFS_METADATA_BIG:-0}" = 1 ]; then
	run 1G 200
fi
tfs_pass
