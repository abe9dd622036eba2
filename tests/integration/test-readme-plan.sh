#!/bin/bash
# Description: the worked examples in tensorfs-offload(7) (conf/man/tensorfs-offload.7.in, its .EX blocks) are exactly what tensorfs-plan prints for their commands today
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3
top=$(cd "$(dirname "$0")/../.." && pwd)
PLAN="$TFS_BIN/tensorfs-plan"
[ -x "$PLAN" ] || tfs_fail "no tensorfs-plan in $TFS_BIN"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")

# each example: an .EX block of the page's source whose first line is
# "$ tensorfs\-plan ..." (continued with \e), then the output, up to .EE;
# roff's \- and \e are - and \, and \& is nothing
PAGE="$top/conf/man/tensorfs-offload.7.in"
python3 - "$PAGE" "$WORK" <<'PY' || tfs_fail "cannot find the worked examples in $PAGE"
import os, re, sys
text = open(sys.argv[1]).read()
def unroff(line):
    return re.sub(r"\\([-e&\\])", lambda m: {"-": "-", "e": "\\", "&": "", "\\": "\\"}[m.group(1)], line)
n = 0
for block in re.findall(r"^\.EX\n(\$ tensorfs\\-plan.*?)^\.EE$", text, re.S | re.M):
    lines = [unroff(line) for line in block.split("\n")]
    cmd = []
    while True:
        line = lines.pop(0)
        cmd.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    n += 1
    open(os.path.join(sys.argv[2], f"cmd{n}"), "w").write(" ".join(cmd)[2:])
    open(os.path.join(sys.argv[2], f"want{n}"), "w").write("\n".join(lines))
if n < 2:
    sys.exit("found %d examples, expected 2" % n)
PY
cd "$top" || tfs_fail "cannot cd to $top"
for c in "$WORK"/cmd*; do
	i=${c##*cmd}
	read -r -a argv <"$c"
	"$PLAN" "${argv[@]:1}" >"$WORK/got$i" 2>&1
	diff -u "$WORK/want$i" "$WORK/got$i" >&2 ||
		tfs_fail "tensorfs-offload(7) example $i ('$(cat "$c")') differs from what tensorfs-plan prints"
done
tfs_pass
