#!/bin/bash
# Description: a readdir scan that renames each entry as it goes (to a new name and back, or to a new name for good, as xfstests generic/736 does) ends, returns every entry once and no name twice, in small and in large directories (several getdents calls); renames across directories and replacing renames still list right
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3
export LC_ALL=C
tfs_setup 512M

cat >"$WORK/scan.py" <<'EOF'
import os, sys

d, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(d)
names = [f"file_{i:05d}" for i in range(n)]
for name in names:
    open(os.path.join(d, name), "w").close()
seen = []
# scandir reads 32 KiB of entries per getdents call: a large directory
# resumes from a cookie many times while the scan renames
with os.scandir(d) as it:
    for e in it:
        seen.append(e.name)
        if len(seen) > 3 * n:
            sys.exit(f"{mode}: the scan did not end: {len(seen)} entries "
                     f"returned from a directory of {n}")
        old = os.path.join(d, e.name)
        new = os.path.join(d, e.name + ".renamed")
        if mode == "back":
            os.rename(old, new)
            os.rename(new, old)
        elif mode == "away":
            if not e.name.endswith(".renamed"):
                os.rename(old, new)
        elif mode == "replace":
            # the entry replaces a name already listed
            if seen[0] != e.name:
                os.rename(old, os.path.join(d, seen[0]))
dups = {x for x in seen if seen.count(x) > 1} if len(seen) < 5000 else \
    {x for x, c in __import__("collections").Counter(seen).items() if c > 1}
if dups:
    sys.exit(f"{mode}: names returned twice: {sorted(dups)[:5]}")
if mode in ("back", "away"):
    got = sorted(x[:-len(".renamed")] if x.endswith(".renamed") else x
                 for x in seen)
    if got != names:
        sys.exit(f"{mode}: {len(seen)} entries returned from a directory "
                 f"of {n}, expected each once")
    left = sorted(os.listdir(d))
    want = names if mode == "back" else [x + ".renamed" for x in names]
    if left != want:
        sys.exit(f"{mode}: the directory now holds {len(left)} names, "
                 f"not the {n} expected")
else:
    if len(seen) > n:
        sys.exit(f"{mode}: {len(seen)} entries from a directory of {n}")
    if os.listdir(d) != [seen[0]]:
        sys.exit(f"{mode}: left {sorted(os.listdir(d))[:5]}...")
print(mode, n, "entries:", len(seen))
EOF

for mode in back away replace; do
	for n in 100 5000; do
		timeout 300 python3 "$WORK/scan.py" "$MNT/$mode-$n" "$n" "$mode" >>"$WORK/scan.log" 2>&1 || {
			cat "$WORK/scan.log" >&2
			tfs_fail "readdir while renaming ($mode, $n entries): see above"
		}
	done
done

# a rename across directories still moves the entry where it belongs
mkdir "$MNT/x" "$MNT/y" || tfs_fail "mkdir failed"
touch "$MNT/x/a" "$MNT/x/b" "$MNT/y/c" || tfs_fail "touch failed"
mv "$MNT/x/a" "$MNT/y/a" || tfs_fail "mv across directories failed"
mv "$MNT/x/b" "$MNT/x/b2" || tfs_fail "mv within a directory failed"
mv "$MNT/y/c" "$MNT/y/a" || tfs_fail "mv over a name failed"
tfs_eq "x after the renames" "b2" "$(ls -A "$MNT/x" | tr '\n' ' ' | sed 's/ $//')"
tfs_eq "y after the renames" "a" "$(ls -A "$MNT/y" | tr '\n' ' ' | sed 's/ $//')"

# the renamed names persist, and the tree is clean
tfs_umount
tfs_fsck_clean
tfs_mount
tfs_eq "entries of back-5000 after a remount" 5000 "$(ls "$MNT/back-5000" | wc -l)"
tfs_eq "entries of away-100 after a remount" 100 "$(find "$MNT/away-100" -mindepth 1 -maxdepth 1 -name '*.renamed' | wc -l)"
tfs_eq "x after a remount" "b2" "$(ls -A "$MNT/x")"
tfs_umount
tfs_fsck_clean
tfs_pass
