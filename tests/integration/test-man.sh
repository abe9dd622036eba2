#!/bin/bash
# Description: tensorfs.ini(5) renders without a groff warning and documents every key that tensorfs --print-config prints, each with its default
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
	*" = "*|*" ="|*" =")
		key=${line%% =*}
		grep -qE "^ +$key = " "$WORK/keys" ||
			tfs_fail "key $sec $key missing from tensorfs.ini(5)"
		n=$((n + 1)) ;;
	esac
done < <("$TENSORFS" --print-config | grep -v '^;')
[ "$n" -ge 20 ] || tfs_fail "only $n keys found in --print-config"
tfs_log "$n keys documented"
tfs_pass
