#!/bin/bash
# Description: tensorfs-snap: a tree like DeepSpeed's swap tree (files,
# a symlink, a fifo, a hard link, xattrs) snapshotted takes no space and
# holds the same bytes, modes and xattrs; writes to the original leave
# the snapshot as it was; a snapshot taken while a writer rewrites 8
# files in turn shows them as of one moment (never a later file newer
# than an earlier one), 5 times; DST taken, DST inside SRC, SRC off the
# mount and bad arguments fail with their exit codes; all of it survives
# a remount, fsck clean
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 mkfifo getfattr setfattr diff
SNAP="$TFS_BIN/tensorfs-snap"
[ -x "$SNAP" ] || tfs_fail "no tensorfs-snap in $TFS_BIN"
tfs_setup 1G

# ----- a tree, snapshotted -----
T="$MNT/zero_stage_3"
mkdir -p "$T/optimizer/rank0" "$T/param/rank0" || tfs_fail "mkdir failed"
for i in 0 1 2; do
	head -c $((20 << 20)) /dev/urandom >"$T/optimizer/rank0/$i.tensor.swp" || tfs_fail "write failed"
done
head -c 12345 /dev/urandom >"$T/param/rank0/0_param.tensor.swp"
setfattr -n user.tensor.dtype -v fp16 "$T/param/rank0/0_param.tensor.swp" || tfs_fail "setfattr failed"
chmod 600 "$T/optimizer/rank0/1.tensor.swp"
ln -s 0.tensor.swp "$T/optimizer/rank0/latest"
ln "$T/optimizer/rank0/2.tensor.swp" "$T/optimizer/rank0/2.link"
mkfifo "$T/fifo"
u0=$(tfs_used_bytes)
"$SNAP" "$T" "$MNT/ckpt.1" >"$WORK/snap.out" 2>&1 || { cat "$WORK/snap.out" >&2; tfs_fail "tensorfs-snap failed"; }
tfs_log "$(cat "$WORK/snap.out")"
grep -q "5 directories, 5 files, 2 others" "$WORK/snap.out" ||
	tfs_fail "tensorfs-snap: expected '5 directories, 5 files, 2 others' made, got '$(cat "$WORK/snap.out")'"
u1=$(tfs_used_bytes)
[ $((u1 - u0)) -lt $((1 << 20)) ] || tfs_fail "a snapshot of 60 MiB: expected under 1 MiB more used, got $((u1 - u0)) bytes"
diff -r --no-dereference "$T" "$MNT/ckpt.1" >"$WORK/diff" 2>&1 || {
	grep -v fifo "$WORK/diff" | grep -q . && { cat "$WORK/diff" >&2; tfs_fail "the snapshot differs"; }
}
[ -p "$MNT/ckpt.1/fifo" ] || tfs_fail "the fifo: expected a fifo in the snapshot"
tfs_eq "the symlink's target" 0.tensor.swp "$(readlink "$MNT/ckpt.1/optimizer/rank0/latest")"
tfs_eq "a mode" 600 "$(stat -c %a "$MNT/ckpt.1/optimizer/rank0/1.tensor.swp")"
tfs_eq "an mtime" "$(stat -c %Y "$T/optimizer/rank0/0.tensor.swp")" "$(stat -c %Y "$MNT/ckpt.1/optimizer/rank0/0.tensor.swp")"
tfs_eq "the xattr" fp16 "$(getfattr --only-values -n user.tensor.dtype "$MNT/ckpt.1/param/rank0/0_param.tensor.swp")"
tfs_eq "a hard link's copy: links" 1 "$(stat -c %h "$MNT/ckpt.1/optimizer/rank0/2.link")"

# ----- writes to the original leave the snapshot -----
sum=$(cat "$MNT/ckpt.1/optimizer/rank0/"*.swp | sha256sum)
dd if=/dev/zero of="$T/optimizer/rank0/0.tensor.swp" bs=1M count=5 seek=3 conv=notrunc 2>/dev/null || tfs_fail "dd failed"
truncate -s 1000 "$T/optimizer/rank0/1.tensor.swp"
rm "$T/optimizer/rank0/2.tensor.swp"
tfs_eq "the snapshot after writes to the original" "$sum" "$(cat "$MNT/ckpt.1/optimizer/rank0/"*.swp | sha256sum)"

# ----- one moment, under a writer -----
python3 - "$MNT" "$SNAP" <<'PY' || tfs_fail "snapshots under a writer (see above)"
import os, subprocess, sys, threading, time
m, snap = sys.argv[1], sys.argv[2]
os.mkdir(f"{m}/live")
names = [f"{m}/live/f{i}" for i in range(8)]
for n in names:
    open(n, "wb").write(bytes(1 << 20))
stop = False
def writer():
    g = 1
    while not stop:
        for n in names:  # generation g into each file, in order
            fd = os.open(n, os.O_WRONLY)
            os.pwrite(fd, g.to_bytes(8, "little") * 512, 0)
            os.close(fd)
        g += 1
t = threading.Thread(target=writer)
t.start()
bad = 0
for k in range(5):
    time.sleep(0.3)
    subprocess.run([snap, "-q", f"{m}/live", f"{m}/cut{k}"], check=True)
    gens = [int.from_bytes(open(f"{m}/cut{k}/f{i}", "rb").read(8), "little") for i in range(8)]
    # one moment: the writer was at one file, those before it one ahead
    ok = all(gens[i] >= gens[i + 1] for i in range(7)) and gens[0] - gens[7] <= 1
    print(f"snapshot {k}: generations {gens}{'' if ok else ' NOT ONE MOMENT'}")
    bad += not ok
stop = True
t.join()
sys.exit(1 if bad else 0)
PY

# ----- errors -----
tfs_expect_exit 1 "DST taken" "$SNAP" "$T" "$MNT/ckpt.1"
tfs_expect_exit 1 "DST inside SRC" "$SNAP" "$T" "$T/param/inside"
[ -e "$T/param/inside" ] && tfs_fail "a refused snapshot left $T/param/inside"
tfs_expect_exit 1 "SRC off the mount" "$SNAP" "$WORK" "$MNT/x"
tfs_expect_exit 1 "SRC missing" "$SNAP" "$MNT/none" "$MNT/x"
tfs_expect_exit 2 "one argument" "$SNAP" "$T"
tfs_expect_exit 2 "an unknown option" "$SNAP" --bogus "$T" "$MNT/x"

# ----- a remount keeps it all -----
tfs_umount
tfs_fsck_clean
tfs_mount
tfs_eq "the snapshot after a remount" "$sum" "$(cat "$MNT/ckpt.1/optimizer/rank0/"*.swp | sha256sum)"
tfs_umount
tfs_fsck_clean
tfs_pass
