#!/bin/bash
# Description: on a mount, user.tensor.dtype and user.tensor.shape of .npy, .npz (np.savez and np.savez_compressed) and .safetensors files come from their headers without being set (a listing for several tensors), a set value wins, raw files have none; np.save and np.memmap files on the mount read back with tensorfs-cat exactly as numpy reads them
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need getfattr setfattr
CAT="$TFS_BIN/tensorfs-cat"
tfs_need_numpy
tfs_setup 1G

xval() { getfattr --only-values -n "$1" "$2" 2>/dev/null; }

"$PY" - "$MNT" <<'PY' || tfs_fail "numpy could not write its files on the mount"
import json, struct, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
np.save(f"{d}/w.npy", rng.standard_normal((16, 33)).astype(np.float16))
np.save(f"{d}/i.npy", np.arange(-50, 50, dtype=np.int64).reshape(4, 25))
m = np.memmap(f"{d}/mm.bin", dtype=np.float32, mode="w+", shape=(20, 40))
m[:] = rng.standard_normal((20, 40)).astype(np.float32)
m[3, 7] = np.inf
m.flush()
del m
# a big one, for --stats against numpy
big = np.memmap(f"{d}/big.bin", dtype=np.float32, mode="w+", shape=(512, 1024))
big[:] = rng.standard_normal((512, 1024)).astype(np.float32) * 3 + 1
big[0, :10] = 0
big.flush()
del big
h = json.dumps({"a.weight": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
                "b": {"dtype": "F32", "shape": [4], "data_offsets": [12, 28]}}).encode()
with open(f"{d}/m.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + bytes(28))
np.savez(f"{d}/a.npz", x=np.zeros((3, 5), dtype=np.float32), n=np.arange(4, dtype=np.int16))
np.savez_compressed(f"{d}/c.npz", x=np.zeros((3, 5), dtype=np.float32), n=np.arange(4, dtype=np.int16))
PY

# ----- attributes from the headers -----
tfs_eq "dtype of an fp16 .npy" fp16 "$(xval user.tensor.dtype "$MNT/w.npy")"
tfs_eq "shape of an fp16 .npy" 16,33 "$(xval user.tensor.shape "$MNT/w.npy")"
tfs_eq "dtype of an int64 .npy" int64 "$(xval user.tensor.dtype "$MNT/i.npy")"
tfs_eq "dtypes of a .safetensors" "$(printf 'a.weight: bf16\nb: fp32')" "$(xval user.tensor.dtype "$MNT/m.safetensors")"
tfs_eq "shapes of a .safetensors" "$(printf 'a.weight: 2,3\nb: 4')" "$(xval user.tensor.shape "$MNT/m.safetensors")"
tfs_eq "dtypes of an .npz" "$(printf 'x: fp32\nn: int16')" "$(xval user.tensor.dtype "$MNT/a.npz")"
tfs_eq "shapes of an .npz" "$(printf 'x: 3,5\nn: 4')" "$(xval user.tensor.shape "$MNT/a.npz")"
tfs_eq "dtypes of an np.savez_compressed .npz" "$(printf 'x: fp32\nn: int16')" "$(xval user.tensor.dtype "$MNT/c.npz")"
tfs_eq "shapes of an np.savez_compressed .npz" "$(printf 'x: 3,5\nn: 4')" "$(xval user.tensor.shape "$MNT/c.npz")"
getfattr -n user.tensor.dtype "$MNT/mm.bin" >/dev/null 2>&1 && tfs_fail "a raw file has a dtype nobody set"
setfattr -n user.tensor.dtype -v fp32 "$MNT/mm.bin" &&
	setfattr -n user.tensor.shape -v 20,40 "$MNT/mm.bin" || tfs_fail "cannot set the memmap's dtype and shape"
setfattr -n user.tensor.shape -v 2,8,33 "$MNT/w.npy" || tfs_fail "cannot set a shape on a .npy"
tfs_eq "a set shape wins over the header" 2,8,33 "$(xval user.tensor.shape "$MNT/w.npy")"
setfattr -x user.tensor.shape "$MNT/w.npy"
tfs_eq "the header's shape once the set one is gone" 16,33 "$(xval user.tensor.shape "$MNT/w.npy")"

# ----- tensorfs-cat reads them as numpy does -----
"$CAT" --stats --dtype fp32 "$MNT/big.bin" >"$WORK/big.stats" || tfs_fail "tensorfs-cat --stats big.bin failed"
for f in w.npy i.npy mm.bin; do
	"$CAT" --json "$MNT/$f" >"$WORK/$f.json" || tfs_fail "tensorfs-cat --json $f failed"
done
"$PY" - "$MNT" "$WORK" <<'PY' || tfs_fail "tensorfs-cat's values differ from numpy's"
import json, sys
import numpy as np
mnt, work = sys.argv[1], sys.argv[2]
def vals(x):
    if isinstance(x, list):
        return [v for e in x for v in vals(e)]
    if isinstance(x, str):
        return [float(x)]  # "nan", "inf", "-inf"
    return [x]
def check(name, want):
    j = json.load(open(f"{work}/{name}.json"))
    got = np.array(vals(j["values"]), dtype=np.float64)
    w = want.astype(np.float64).ravel()
    if list(j["shape"]) != list(want.shape):
        sys.exit(f"{name}: shape {j['shape']}, numpy {want.shape}")
    if got.shape != w.shape or not np.array_equal(got, w, equal_nan=True):
        sys.exit(f"{name}: values differ")
check("w.npy", np.load(f"{mnt}/w.npy"))
check("i.npy", np.load(f"{mnt}/i.npy"))
check("mm.bin", np.memmap(f"{mnt}/mm.bin", dtype=np.float32, mode="r", shape=(20, 40)))
big = np.memmap(f"{mnt}/big.bin", dtype=np.float32, mode="r").astype(np.float64)
st = {}
for line in open(f"{work}/big.stats"):
    k, v = line.split(None, 1)
    st[k] = v.strip()
for k, want in (("min", big.min()), ("max", big.max()), ("mean", big.mean()), ("std", big.std())):
    if abs(float(st[k]) - want) > 1e-6 * max(1.0, abs(want)):
        sys.exit(f"--stats {k} {st[k]}, numpy {want}")
if int(st["count"]) != big.size or int(st["zeros"]) != int((big == 0).sum()):
    sys.exit(f"--stats count/zeros {st['count']}/{st['zeros']}")
PY

# ----- regression: a Fortran-ordered .npy printed transposed on the mount
# (the header's shape, answered as user.tensor.shape, lost the order) -----
"$PY" - "$MNT" "$WORK" <<'PY' || tfs_fail "cannot write the Fortran-ordered .npy"
import sys
import numpy as np
a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
np.save(f"{sys.argv[1]}/fortran.npy", np.asfortranarray(a))
open(f"{sys.argv[2]}/fortran.want", "w").write(repr(a) + "\n")
PY
"$CAT" "$MNT/fortran.npy" >"$WORK/fortran.got" || tfs_fail "tensorfs-cat fortran.npy failed on the mount"
cmp -s "$WORK/fortran.want" "$WORK/fortran.got" ||
	tfs_fail "a Fortran-ordered .npy on the mount prints $(cat "$WORK/fortran.got"), numpy $(cat "$WORK/fortran.want")"
setfattr -n user.tensor.shape -v 4,3 "$MNT/fortran.npy" || tfs_fail "cannot set a shape on fortran.npy"
"$CAT" "$MNT/fortran.npy" >"$WORK/fortran.got" 2>"$WORK/fortran.err" || tfs_fail "tensorfs-cat fortran.npy with a set shape failed"
cmp -s "$WORK/fortran.want" "$WORK/fortran.got" ||
	tfs_fail "a set shape that disagrees with a Fortran-ordered header won: $(cat "$WORK/fortran.got")"
grep -q "Fortran order" "$WORK/fortran.err" || tfs_fail "no warning that the set shape was ignored"

# ----- regression: a .safetensors file of several tensors printed nothing
# on the mount ("user.tensor.dtype 'a.weight: bf16...' is not a tensor
# type"), even with --tensor, --dtype and --shape -----
"$CAT" "$MNT/m.safetensors" >"$WORK/list" 2>&1 || tfs_fail "listing m.safetensors on the mount failed: $(cat "$WORK/list")"
grep -q "^a.weight " "$WORK/list" || tfs_fail "the listing lacks a.weight: $(cat "$WORK/list")"
tfs_eq "tensor b of m.safetensors on the mount" "array([0., 0., 0., 0.], dtype=float32)" "$("$CAT" -t b "$MNT/m.safetensors" 2>&1)"
"$CAT" -t a.weight -d bf16 -s 2,3 "$MNT/m.safetensors" >"$WORK/aw" 2>&1 || tfs_fail "-t a.weight -d bf16 -s 2,3 failed on the mount: $(cat "$WORK/aw")"
"$CAT" --stats "$MNT/m.safetensors" >"$WORK/st" 2>&1 || tfs_fail "--stats m.safetensors failed on the mount: $(cat "$WORK/st")"

"$CAT" --stats "$MNT/mm.bin" >"$WORK/stats" || tfs_fail "tensorfs-cat --stats mm.bin failed"
grep -qE '^inf +1$' "$WORK/stats" || tfs_fail "--stats does not count the one Inf: $(cat "$WORK/stats")"
tfs_umount
tfs_fsck_clean
tfs_pass
