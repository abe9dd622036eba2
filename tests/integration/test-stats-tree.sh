#!/bin/bash
# Description: "which tensor went NaN?": tensorfs-cat --stats DIR over a
# DeepSpeed ZeRO-3 swap tree written on a mount (bf16 parameters in
# zero_stage_3/bfloat16params/rank0, fp32 optimizer state in
# zero_stage_3/optimizer/rank0, dtypes from the directory names), a .npy
# and a .safetensors file of several tensors: one line per tensor, --json
# one object per line, exit 3 naming the files holding NaN or Inf, exit 0
# on a clean tree, exit 1 for an unreadable file among good ones, files of
# no known dtype skipped.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
CAT="$TFS_BIN/tensorfs-cat"
tfs_need_numpy
tfs_setup 256M
T="$MNT/nvme"

"$PY" - "$T" <<'PY' || tfs_fail "numpy could not write the swap tree"
import json, os, struct, sys
import numpy as np
t = sys.argv[1]
p = f"{t}/zero_stage_3/bfloat16params/rank0"
o = f"{t}/zero_stage_3/optimizer/rank0"
os.makedirs(p)
os.makedirs(o)
def bf16(a):
    return (np.asarray(a, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
r = np.random.default_rng(3)
for i in range(4):
    w = r.standard_normal(4096).astype(np.float32)
    if i == 2:
        w[100] = np.nan
    bf16(w).tofile(f"{p}/{i}_param.tensor.swp")
st = r.standard_normal(8192).astype(np.float32)
st[5] = np.inf
st.tofile(f"{o}/optimizer_state_and_gradient.swp")
np.save(f"{t}/ok.npy", np.arange(10, dtype=np.float32))
h = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}).encode()
with open(f"{t}/m.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + np.array([1, 2, np.nan], dtype=np.float32).tobytes())
open(f"{t}/notes.txt", "w").write("not a tensor\n")
PY

tfs_expect_exit 3 "--stats over a tree with NaN" "$CAT" --stats "$T"
grep -q "^$T/zero_stage_3/bfloat16params/rank0/2_param.tensor.swp  bf16  (4096,) .* nan 1  inf 0$" "$WORK/out" ||
	tfs_fail "the NaN parameter's line is missing: $(cat "$WORK/out")"
grep -q "^$T/zero_stage_3/optimizer/rank0/optimizer_state_and_gradient.swp  fp32  (8192,) .* nan 0  inf 1$" "$WORK/out" ||
	tfs_fail "the Inf optimizer state's line is missing"
grep -q "^$T/m.safetensors:b  fp32  (1,) .* nan 1" "$WORK/out" || tfs_fail "m.safetensors:b is missing"
tfs_eq "lines of a tree" 8 "$(wc -l <"$WORK/out")"
tfs_expect_words "the summary" "$WORK/err" "8 files checked" "3 with NaN or Inf" "1 skipped"

tfs_expect_exit 3 "--stats --json over a tree" "$CAT" --stats --json "$T/zero_stage_3"
"$PY" - "$WORK/out" <<'PY' || tfs_fail "--json lines are not what they should be"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
nan = [r["file"].rsplit("/", 1)[1] for r in rows if r["stats"]["nan"] or r["stats"]["inf"]]
assert len(rows) == 5, rows
assert nan == ["optimizer_state_and_gradient.swp", "2_param.tensor.swp"][::-1] or \
       sorted(nan) == sorted(["optimizer_state_and_gradient.swp", "2_param.tensor.swp"]), nan
PY

rm "$T/zero_stage_3/bfloat16params/rank0/2_param.tensor.swp" "$T/zero_stage_3/optimizer/rank0/optimizer_state_and_gradient.swp"
tfs_expect_exit 0 "--stats over a clean swap tree" "$CAT" --stats "$T/zero_stage_3"
printf '\223NUMPY\001\000\377\377broken' >"$T/zero_stage_3/broken.npy"
tfs_expect_exit 1 "--stats over a tree with a broken file" "$CAT" --stats "$T/zero_stage_3"
tfs_eq "good files are still checked" 3 "$(wc -l <"$WORK/out")"
tfs_expect_exit 2 "--stats DIR with --dtype" "$CAT" --stats --dtype fp32 "$T"
tfs_umount
tfs_fsck_clean
tfs_pass
