#!/bin/bash
# Description: every program has a manual page that renders without a groff warning, lists exactly the options its --help lists (both ways) and carries the project version; tensorfs.ini(5) documents every key that tensorfs --print-config prints, each with its default; the topic page tensorfs-offload(7) renders without a warning and carries the version
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need groff
PAGE="$TFS_BIN/../man/tensorfs.ini.5"
[ -s "$PAGE" ] || tfs_fail "no tensorfs.ini(5) at $PAGE; the build writes it"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")

groff -man -Tutf8 -ww -z "$PAGE" 2>"$WORK/warn"
[ -s "$WORK/warn" ] && { cat "$WORK/warn" >&2; tfs_fail "groff warns about tensorfs.ini(5)"; }
# one line per key, hyphenation off, so names and values are whole words
groff -man -Tutf8 -rLL=200n -rHY=0 "$PAGE" 2>/dev/null | col -bx >"$WORK/page"
grep -q '^KEYS' "$WORK/page" || tfs_fail "tensorfs.ini(5) has no KEYS section"
# the KEYS section alone: the examples name keys too
sed -n '/^KEYS/,/^[A-Z]/p' "$WORK/page" | sed '$d' >"$WORK/keys"

n=0
sec=""
while IFS= read -r line; do
	case $line in
	"["*"]") sec=$line
		grep -qF -- "$sec" "$WORK/keys" || tfs_fail "section $sec missing from tensorfs.ini(5)" ;;
	*" = "*|*" =")
		key=${line%% =*}
		grep -qE "^ +$key = " "$WORK/keys" ||
			tfs_fail "key $sec $key missing from tensorfs.ini(5)"
		n=$((n + 1)) ;;
	esac
done < <("$TENSORFS" --print-config | grep -v '^;')
[ "$n" -ge 20 ] || tfs_fail "only $n keys found in --print-config"
tfs_log "$n keys documented"

# ----- the programs' pages -----
MAN="$TFS_BIN/../man"
want=$(sed -n 's/^project(tensorfs VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")
# options: the option words at the start of an option line, in --help
# (indented at most 6 columns) and in the page's OPTIONS section (the tags)
opts() { grep -oE '(^|[ ,|])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,|]//' | sort -u; }
for prog in tensorfs:8 mkfs.tensorfs:8 tensorfs-fsck:8 tensorfs-plan:1 tensorfs-cat:1 tensorfs-stat:1 tensorfs-snap:1; do
	name=${prog%:*} sec=${prog#*:}
	page="$MAN/$name.$sec"
	[ -s "$page" ] || tfs_fail "no $name($sec) at $page; the build writes it"
	groff -man -Tutf8 -ww -z "$page" 2>"$WORK/warn"
	[ -s "$WORK/warn" ] && { cat "$WORK/warn" >&2; tfs_fail "groff warns about $name($sec)"; }
	groff -man -Tutf8 -rLL=200n -rHY=0 "$page" 2>/dev/null | col -bx >"$WORK/page"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
		grep -q "^$s" "$WORK/page" || tfs_fail "$name($sec) has no $s section"
	done
	grep -q "tensorfs $want" "$WORK/page" || tfs_fail "$name($sec) does not carry the version $want"
	sed -n '/^OPTIONS/,/^[A-Z]/p' "$WORK/page" | grep -E '^ {7}-' | sed 's/^ *//; s/  .*//' |
		opts >"$WORK/page-opts"
	"$TFS_BIN/$name" --help | grep -E '^ {2,6}-' | sed 's/^ *//; s/  .*//' | opts >"$WORK/help-opts"
	[ -s "$WORK/help-opts" ] || tfs_fail "no options found in $name --help"
	diff "$WORK/help-opts" "$WORK/page-opts" >"$WORK/diff" ||
		{ cat "$WORK/diff" >&2; tfs_fail "$name: options in --help (<) and in $name($sec) (>) differ"; }
	tfs_log "$name($sec): $(wc -l <"$WORK/page-opts") options, as --help"
done
# the topic page: no options, no EXIT STATUS
page="$MAN/tensorfs-offload.7"
[ -s "$page" ] || tfs_fail "no tensorfs-offload(7) at $page; the build writes it"
groff -man -Tutf8 -ww -z "$page" 2>"$WORK/warn"
[ -s "$WORK/warn" ] && { cat "$WORK/warn" >&2; tfs_fail "groff warns about tensorfs-offload(7)"; }
groff -man -Tutf8 "$page" 2>/dev/null | col -bx | grep -q "tensorfs $want" ||
	tfs_fail "tensorfs-offload(7) does not carry the version $want"
grep -q '^\.so man8/tensorfs-fsck\.8$' "$(dirname "$0")/../../conf/man/fsck.tensorfs.8" ||
	tfs_fail "fsck.tensorfs(8) is not a link to tensorfs-fsck(8)"
tfs_pass
