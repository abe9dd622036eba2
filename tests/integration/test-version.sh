#!/bin/bash
# Description: every program answers --version and -V with "NAME VERSION", the project's version from CMakeLists.txt, exit 0, and fails with its documented status and a message when its output cannot be written (a full disk: /dev/full), but not for a closed stdout it never writes to; tensorfs-fsck prints e2fsck's one-line summary on a clean file system
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
want=$(sed -n 's/^project(tensorfs VERSION \([0-9.]*\).*/\1/p' "$top/CMakeLists.txt")
[ -n "$want" ] || tfs_fail "no project version in CMakeLists.txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")

for prog in tensorfs mkfs.tensorfs tensorfs-fsck tensorfs-plan tensorfs-cat tensorfs-stat; do
	for opt in --version -V; do
		out=$("$TFS_BIN/$prog" "$opt" 2>"$WORK/err")
		rc=$?
		[ "$rc" = 0 ] || { cat "$WORK/err" >&2; tfs_fail "$prog $opt: exit $rc"; }
		first=${out%%$'\n'*}
		case $first in
		"$prog $want"|"$prog $want "*) ;;
		*) tfs_fail "$prog $opt: first line '$first', expected '$prog $want'" ;;
		esac
		[ -s "$WORK/err" ] && { cat "$WORK/err" >&2; tfs_fail "$prog $opt wrote to stderr"; }
	done
done

# output that cannot be written: the status each program documents
for pc in tensorfs:1 mkfs.tensorfs:1 tensorfs-fsck:8 tensorfs-plan:1 \
	tensorfs-cat:1 tensorfs-stat:1; do
	prog=${pc%:*}
	for opt in --version --help; do
		"$TFS_BIN/$prog" "$opt" >/dev/full 2>"$WORK/err"
		tfs_eq "$prog $opt >/dev/full: exit" "${pc#*:}" "$?"
		tfs_expect_words "$prog $opt >/dev/full" "$WORK/err" \
			"$prog: cannot write the output"
	done
done

# fsck on a clean file system: "IMAGE: clean, N files, USED/TOTAL blocks"
IMG="$WORK/img"
"$MKFS" -q -s 128M "$IMG" || tfs_fail "mkfs.tensorfs"
out=$("$FSCK" "$IMG")
rc=$?
tfs_eq "tensorfs-fsck exit on a clean image" 0 "$rc"
echo "$out" | grep -qE "^$IMG: clean, 1 files, [0-9]+/[0-9]+ blocks\$" ||
	tfs_fail "tensorfs-fsck on a clean image printed '$out'"
tfs_log "$out"
"$FSCK" "$IMG" >/dev/full 2>"$WORK/err"
tfs_eq "tensorfs-fsck's report to a full disk: exit" 8 "$?"
tfs_expect_words "tensorfs-fsck's report to a full disk" "$WORK/err" "No space left"
# a closed stdout that nothing is written to is not an error
"$MKFS" -q -s 128M "$WORK/img2" >&- 2>"$WORK/err" ||
	tfs_fail "mkfs.tensorfs -q with stdout closed: expected exit 0, got $? ($(cat "$WORK/err"))"
"$MKFS" -s 128M "$WORK/img3" >/dev/full 2>"$WORK/err"
tfs_eq "mkfs.tensorfs to a full disk: exit" 1 "$?"
tfs_pass
