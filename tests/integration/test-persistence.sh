#!/bin/bash
# Description: a tree of files, directories, symlinks, hard links and xattrs survives three remounts exactly
#
# The same tree is built in a reference directory outside the mount and in
# the mount: files of many sizes (holes, overwrites, truncates), odd names,
# symlinks, hard links, renames, modes, owners, times, xattrs.  A listing of
# each (stat type/mode/owner/size/links/mtime, sha256sum of every file,
# readlink of every symlink, getfattr -d of every file and directory) must
# agree; a fuller listing of the mount (with ctime and which names share an
# inode) must not change across an unmount and remount.  Cycle 1 unmounts
# with fusermount3 -u, then changes the tree on the remounted file system;
# cycle 2 unmounts with fusermount3 -u; cycle 3 with SIGTERM.  fsck is clean
# after each unmount, and free space is the same after cycles 2 and 3.
#
# Protects (lib/journal.c's crash protocol): J4 (the clean checkpoint at
# unmount holds the whole tree), J6 (free space adds up), J9 (fsck clean).
. "$(dirname "$0")/lib.sh"

tfs_need getfattr setfattr sha256sum stat find sort xargs cmp truncate dd od touch

tfs_setup 256M
REF="$WORK/ref"
T="$MNT/tree"
mkdir "$REF" "$T" || tfs_fail "mkdir of the trees: expected success, got failure"
setfattr -n user.probe -v 1 "$REF" 2>/dev/null ||
	tfs_skip "the reference directory '$REF' cannot hold user xattrs (set TMPDIR elsewhere)"
setfattr -x user.probe "$REF"
ROOT=0
[ "$(id -u)" = 0 ] && ROOT=1

head -c $((16 * 1024 * 1024)) /dev/urandom >"$WORK/rnd"

# both CMD...: run CMD in the reference tree, then in the mounted tree
both() {
	(cd "$REF" && "$@") || tfs_fail "in the reference tree: expected '$*' to succeed, got failure"
	(cd "$T" && "$@") || tfs_fail "in the mounted tree: expected '$*' to succeed, got failure"
}

# piece OFF LEN DEST: LEN bytes of the random source from offset OFF into DEST
piece() {
	dd if="$WORK/rnd" of="$3" bs=64K skip="$1" count="$2" iflag=skip_bytes,count_bytes status=none
}

# patch OFF LEN DEST AT: the same, written over DEST at byte AT
patch() {
	dd if="$WORK/rnd" of="$3" bs=64K skip="$1" count="$2" seek="$4" \
		iflag=skip_bytes,count_bytes oflag=seek_bytes conv=notrunc status=none
}

# stamp TIME: give every entry of the tree the same atime and mtime
stamp() {
	both bash -c "find . -depth -print0 | xargs -0 touch -h -d '$1'"
}

# listing DIR portable|full: what the tree in DIR is, one fact a line
listing() {
	(
		cd "$1" || exit 1
		export TZ=UTC LC_ALL=C
		find . -print0 | sort -z >"$WORK/paths"
		echo "== stat: name|type|mode|owner|size|links|mtime|ctime|inode"
		xargs -0 stat -c '%n|%F|%a|%u:%g|%s|%h|%y|%z|%i' <"$WORK/paths" |
			awk -F'|' -v OFS='|' -v mode="$2" '{
				if ($2 == "directory") {
					$5 = "-"
					if (mode != "full") $6 = "-"
				}
				if (mode != "full") {
					$8 = "-"; $9 = "-"
				} else {
					if (!($9 in first)) first[$9] = $1
					$9 = "same inode as " first[$9]
				}
				print
			}'
		echo "== sha256sum"
		find . -type f -print0 | sort -z | xargs -0 -r sha256sum
		echo "== readlink"
		find . -type l -print0 | sort -z | while IFS= read -r -d '' l; do
			printf '%s -> %s\n' "$l" "$(readlink "$l")"
		done
		echo "== getfattr"
		find . ! -type l -print0 | sort -z | xargs -0 getfattr -h -d -m '^user\.' -e hex 2>&1
	)
}

# same WHAT A B: the listings in files A and B are equal
same() {
	diff "$2" "$3" >"$WORK/diff" || {
		head -60 "$WORK/diff" >&2
		tfs_fail "$1: expected identical listings, got the differences above"
	}
}

# check_tree WHAT FULL: the mount matches the reference and the full listing FULL
check_tree() {
	listing "$REF" portable >"$WORK/ref.list"
	listing "$T" portable >"$WORK/mnt.list"
	same "$1: reference vs mount" "$WORK/ref.list" "$WORK/mnt.list"
	listing "$T" full >"$WORK/full.now"
	same "$1: mount vs its listing before unmount" "$2" "$WORK/full.now"
	(cd "$REF" && find . -type f -print0) | while IFS= read -r -d '' f; do
		cmp -s "$REF/$f" "$T/$f" || echo "$f"
	done >"$WORK/cmp.bad"
	[ ! -s "$WORK/cmp.bad" ] || tfs_fail "$1: cmp: expected equal files, got differences in $(head -5 "$WORK/cmp.bad" | tr '\n' ' ')"
}

# ===== build the tree =====

both mkdir -p sizes deep/a/b/c/d/e/f/g empty many hl names "with space" "ünïcödé 文件"
n=0
for sz in 0 1 511 4095 4096 4097 65535 65536 131073 1048576 1048577 3000001 8388613; do
	both piece $((n * 4099)) "$sz" "sizes/f-$sz"
	n=$((n + 1))
done
both piece 123 5000 deep/a/b/c/d/e/f/g/leaf

# a 100 MiB file with 1 MiB of data in the middle and 10 bytes at the end
both truncate -s 100M sparse
both patch 777 1048576 sparse $((50 * 1024 * 1024))
both patch 999 10 sparse $((100 * 1024 * 1024 - 10))
# overwritten in the middle; cut shorter; grown with a hole, then appended to
both piece 0 2097152 overwritten
both patch 4000000 100000 overwritten 12345
both piece 5000000 3145728 shrunk
both truncate -s 1234567 shrunk
both piece 9000000 1000 grown
both truncate -s 5M grown
both bash -c 'printf "tail-bytes" >>grown'

both bash -c 'for i in $(seq 0 499); do printf "file %d\n" "$i" >many/n$i; done'
both bash -c 'echo space >"with space/a file"; echo uni >"ünïcödé 文件/ファイル"'
both bash -c 'echo dash >names/-dash; echo dot >names/.hidden'
both bash -c 'echo long >"names/$(printf "L%.0s" $(seq 255))"'

both ln -s sizes/f-4096 link-rel
both ln -s /nonexistent/absolute/target link-abs
both ln -s nowhere link-dangling
both ln -s deep/a/b link-dir
both ln -s "$(printf 'x/%.0s' $(seq 2000))end" link-long

both piece 12000000 70000 hl/orig
both ln hl/orig hl/link1
both ln hl/orig deep/a/b/link2
both piece 13000000 5000 hl/tmp
both ln hl/tmp hl/survivor
both rm hl/tmp

both piece 14000000 3333 before
both mv before after
both piece 14100000 4444 deep/moved-src
both mv deep/moved-src deep/a/moved
both piece 14200000 5555 victim
both piece 14300000 6666 replacer
both mv -f replacer victim

if [ "$ROOT" = 1 ]; then
	both chown 1234:5678 sizes/f-1048576
	both chown 42:43 deep
	both chown -h 7:8 link-rel
	both chmod 000 sizes/f-4097
fi
both chmod 600 sizes/f-1
both chmod 755 sizes/f-511
both chmod 444 sizes/f-4095
both chmod 4755 sizes/f-65535
both chmod 2750 deep/a
both chmod 1777 empty

both setfattr -n user.greeting -v hello sizes/f-4096
both setfattr -n user.binary -v 0x00ff10 sizes/f-4096
both setfattr -n user.tensor.dtype -v float16 sizes/f-65536
both setfattr -n user.tensor.shape -v 1024,32 sizes/f-65536
both setfattr -n user.big -v "0x$(head -c 3000 "$WORK/rnd" | od -An -v -tx1 | tr -d ' \n')" sizes/f-131073
both bash -c 'for i in $(seq 40); do setfattr -n user.k$i -v value-$i many/n0 || exit 1; done'
both setfattr -n user.on-dir -v yes deep/a
both setfattr -n user.shared -v linked hl/link1
both setfattr -n user.gone -v x sizes/f-0
both setfattr -x user.gone sizes/f-0
both setfattr -n user.empty sizes/f-0

stamp '2021-03-04 05:06:07.123456789'
both touch -h -d '1999-12-31 23:59:59.5' sizes/f-1
both touch -h -d '2038-01-19 03:14:08' sizes/f-4096

listing "$T" full >"$WORK/full.0"
check_tree "before the first unmount" "$WORK/full.0"

# ===== cycle 1: fusermount3 -u, remount, compare, then change the tree =====

tfs_umount
tfs_fsck_clean
tfs_mount
check_tree "after remount 1" "$WORK/full.0"

both bash -c 'printf more >>sizes/f-1'
both rm many/n7
both mv sizes/f-511 names/moved
both setfattr -n user.new -v added sizes/f-4096
both setfattr -x user.greeting sizes/f-4096
both chmod 640 hl/link1
both truncate -s 10 sizes/f-8388613
both patch 15000000 300000 overwritten 1000000
both mkdir new
both piece 15500000 2097153 new/file
both ln -s new/file link-new
both ln new/file new/file-link
both rmdir empty
stamp '2022-06-07 08:09:10.987654321'

listing "$T" full >"$WORK/full.1"
check_tree "after changes on remount 1" "$WORK/full.1"

# ===== cycle 2: fusermount3 -u =====

tfs_umount
tfs_fsck_clean
tfs_mount
check_tree "after remount 2" "$WORK/full.1"
free2=$(tfs_free_bytes)

# ===== cycle 3: SIGTERM =====

kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
rc=$?
DAEMON_PID=""
tfs_eq "exit code of tensorfs -f after SIGTERM" 0 "$rc"
tfs_expect_unmounted "tensorfs -f after SIGTERM" "$MNT"
tfs_fsck_clean
tfs_mount
check_tree "after remount 3 (SIGTERM)" "$WORK/full.1"
tfs_eq "free bytes after remount 3 (vs remount 2)" "$free2" "$(tfs_free_bytes)"
tfs_umount
tfs_fsck_clean

tfs_pass
