#!/bin/bash
# test-plan-model.sh: tensorfs-plan --model with a model's weights, held to
# a real DeepSpeed run, and --deepspeed-version.
# Description: the model of a measured ZeRO-3 NVMe run of DeepSpeed 0.14.5
# (6 x Linear(1024, 1024) + GELU, then Linear(1024, 16), bf16; sub_group_size
# 2e6, stage3_max_live_parameters 2,097,152, prefetch bucket 1,048,576,
# persistence threshold 0) as a .safetensors file, a sharded index and a
# torch.save state_dict: the largest optimizer sub-group is the run's
# 2,099,200 elements, and offload_param.buffer_count 3 and 4, which failed
# there with "Not enough buffers 0 for swapping 1", fail the plan where 6,
# which trained, fits.  Then what differs between DeepSpeed versions.
. "$(dirname "$0")/lib.sh"
tfs_need python3
PLAN="$TFS_BIN/tensorfs-plan"
[ -x "$PLAN" ] || tfs_fail "no tensorfs-plan in $TFS_BIN"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")
M=(--ram 24G --memlock unlimited)

# The weights as .safetensors: a header and a sparse file (the planner
# reads headers only).  names: Sequential's "0.weight" ... "12.bias"; the
# file keeps them in sorted order, as the safetensors library writes them.
# With $2, a sharded checkpoint instead: two shards and their index.
python3 - "$WORK" <<'PY' || tfs_fail "cannot write the safetensors files"
import json, os, struct, sys
out = sys.argv[1]
names = []
for i in range(6):
    names += [(f"{2*i}.weight", [1024, 1024]), (f"{2*i}.bias", [1024])]
names += [("12.weight", [16, 1024]), ("12.bias", [16])]

def write(path, tensors):
    hdr, off = {}, 0
    for n, shape in sorted(tensors):
        k = 1
        for d in shape:
            k *= d
        hdr[n] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + 2 * k]}
        off += 2 * k
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.truncate(8 + len(h) + off)

write(os.path.join(out, "model.safetensors"), names)
os.mkdir(os.path.join(out, "sharded"))
a, b = names[:7], names[7:]
write(os.path.join(out, "sharded", "model-00001-of-00002.safetensors"), a)
write(os.path.join(out, "sharded", "model-00002-of-00002.safetensors"), b)
wm = {n: "model-00001-of-00002.safetensors" for n, _ in a}
wm.update({n: "model-00002-of-00002.safetensors" for n, _ in b})
json.dump({"metadata": {"total_size": 12628000}, "weight_map": wm},
          open(os.path.join(out, "sharded", "model.safetensors.index.json"), "w"))
# an index naming a tensor its shard lacks, and one naming a path
wm2 = dict(wm, extra="model-00001-of-00002.safetensors")
json.dump({"weight_map": wm2}, open(os.path.join(out, "sharded", "missing.index.json"), "w"))
wm3 = dict(wm)
wm3["0.weight"] = "../model.safetensors"
json.dump({"weight_map": wm3}, open(os.path.join(out, "sharded", "path.index.json"), "w"))
PY

# ds_config.json of the run with offload_param.buffer_count $1
ds() {
	cat >"$WORK/ds$1.json" <<EOF
{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
 "zero_optimization": {"stage": 3, "sub_group_size": 2e6,
   "stage3_max_live_parameters": 2097152, "stage3_prefetch_bucket_size": 1048576,
   "stage3_param_persistence_threshold": 0,
   "offload_param": {"device": "nvme", "nvme_path": "/local_nvme",
     "buffer_count": $1, "buffer_size": 2e6, "max_in_cpu": 1e6},
   "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 4}},
 "aio": {"block_size": 1048576, "queue_depth": 8, "thread_count": 1}}
EOF
}

# check WHAT JSON: the model's exact figures, as the run measured them
check() {
	python3 - "$2" <<'PY' || tfs_fail "$1: --json figures differ from the run's"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["model"]
assert m["largest_sub_group"] == 2099200, m
assert m["largest_sub_group_exact"] is True, m
assert m["sub_groups"] == 4, m
assert m["params"] == 6314000, m
assert m["tensors"] == 14, m
assert m["param_swap_buffers_needed"] == 6, m
items = {i["name"]: i for i in d["deepspeed_per_rank"]}
assert items["optimizer swap pool"]["pinned"] == 4 * 2099200 * 4, items
assert items["fp16 buffer for NVMe sub-groups"]["pinned"] == 2099200 * 2, items
PY
}

# 1. buffer_count 3, 4 and 5 fail as the run did, 6 fits; from the
# .safetensors file and from the sharded index alike
for model in "$WORK/model.safetensors" "$WORK/sharded/model.safetensors.index.json"; do
	for bc in 3 4 5 6; do
		ds $bc
		what="buffer_count $bc, ${model##*/}"
		if [ $bc = 6 ]; then
			tfs_expect_exit 0 "$what" "$PLAN" --deepspeed "$WORK/ds$bc.json" \
				--deepspeed-version 0.14.5 --model "$model" "${M[@]}"
			sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
			tfs_expect_words "$what" "$WORK/flat" "verdict: fits (exit 0)" \
				"4 optimizer sub-groups, the largest 2099200 elements (exact)" \
				"parameter swap buffers DeepSpeed holds at once: 6"
		else
			tfs_expect_exit 1 "$what" "$PLAN" --deepspeed "$WORK/ds$bc.json" \
				--deepspeed-version 0.14.5 --model "$model" "${M[@]}"
			sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
			tfs_expect_words "$what" "$WORK/flat" "verdict: will fail (exit 1)" \
				"offload_param.buffer_count = $bc is below the 6 parameter swap buffers" \
				"'Not enough buffers 0 for swapping 1'" \
				"offload_param.buffer_count = 6  (now $bc)"
			grep -q "(keep)" <(grep -A1 "offload_param.buffer_count" "$WORK/out") &&
				tfs_fail "$what: buffer_count kept"
		fi
		"$PLAN" --json --deepspeed "$WORK/ds$bc.json" --deepspeed-version 0.14.5 \
			--model "$model" "${M[@]}" >"$WORK/json"
		check "$what" "$WORK/json"
	done
done
# Hugging Face's Trainer's two param groups: the weights (w0 w1 = 2,097,152
# close a sub-group, w6 alone), then the biases in one
"$PLAN" --json --deepspeed "$WORK/ds6.json" --model "$WORK/model.safetensors" \
	--param-groups trainer "${M[@]}" >"$WORK/json"
python3 - "$WORK/json" <<'PY' || tfs_fail "--param-groups trainer: wrong sub-groups"
import json, sys
m = json.load(open(sys.argv[1]))["model"]
assert m["sub_groups"] == 5 and m["largest_sub_group"] == 2097152, m
PY
tfs_expect_exit 2 "--param-groups two" "$PLAN" --params 7e9 --param-groups two
grep -q "one (the optimizer built on model.parameters()) or trainer" "$WORK/err" ||
	tfs_fail "--param-groups two: $(cat "$WORK/err")"
# the same model from --params alone: a bound, and the buffers unchecked
tfs_expect_exit 0 "--params" "$PLAN" --deepspeed "$WORK/ds4.json" --params 6314000 \
	--largest-param 1048576 "${M[@]}"
sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
tfs_expect_words "--params" "$WORK/flat" "at most 3048575 (a bound" \
	"offload_param.buffer_count = 4 is not checked" "verdict: warnings"

# 2. a broken index: each named with its file
tfs_expect_exit 1 "index, a tensor missing" "$PLAN" --model "$WORK/sharded/missing.index.json" "${M[@]}"
grep -q 'weight_map names "extra" in model-00001-of-00002.safetensors, which does not hold it' "$WORK/err" ||
	tfs_fail "index, a tensor missing: $(cat "$WORK/err")"
tfs_expect_exit 1 "index, a path" "$PLAN" --model "$WORK/sharded/path.index.json" "${M[@]}"
grep -q 'path.index.json: weight_map\["0.weight"\] is not the name of a shard file beside the index' "$WORK/err" ||
	tfs_fail "index, a path: $(cat "$WORK/err")"
rm "$WORK/sharded/model-00002-of-00002.safetensors"
tfs_expect_exit 1 "index, a shard missing" "$PLAN" --model "$WORK/sharded/model.safetensors.index.json" "${M[@]}"
grep -q "model-00002-of-00002.safetensors: cannot open: No such file" "$WORK/err" ||
	tfs_fail "index, a shard missing: $(cat "$WORK/err")"
printf 'not weights at all\n' >"$WORK/notes.txt"
tfs_expect_exit 1 "a text file" "$PLAN" --model "$WORK/notes.txt" "${M[@]}"
grep -q "notes.txt: not a torch.save, .safetensors or index .json file of weights" "$WORK/err" ||
	tfs_fail "a text file: $(cat "$WORK/err")"
# a .safetensors file whose header length starts with the byte '{' is
# still read as weights, not as an index .json
python3 - "$WORK/brace.safetensors" <<'PY' || tfs_fail "cannot write brace.safetensors"
import json, struct, sys
h = json.dumps({"w.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
h += b" " * (123 + 256 - len(h))
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(16))
PY
tfs_expect_exit 0 "a header length starting with '{'" "$PLAN" --model "$WORK/brace.safetensors" "${M[@]}"
grep -q "model: 1 parameter tensor from" "$WORK/out" ||
	tfs_fail "a header length starting with '{': $(head -5 "$WORK/out")"
head -c 100 "$WORK/model.safetensors" >"$WORK/cut.safetensors"
tfs_expect_exit 1 "a cut .safetensors" "$PLAN" --model "$WORK/cut.safetensors" "${M[@]}"
grep -q "cut.safetensors: " "$WORK/err" || tfs_fail "a cut .safetensors: $(cat "$WORK/err")"

# 3. DeepSpeed versions: 0.14.5 reads thread_count and ignores
# intra_op_parallelism; 0.16.4 and later the other way round
ds 6
tfs_expect_exit 0 "0.14.5, thread_count" "$PLAN" --deepspeed "$WORK/ds6.json" \
	--deepspeed-version 0.14.5 --model "$WORK/model.safetensors" "${M[@]}"
grep -q "thread_count" "$WORK/out" && grep -q "warning:" "$WORK/out" &&
	tfs_fail "0.14.5, thread_count: warned: $(grep -A3 warning: "$WORK/out")"
tfs_expect_exit 0 "0.16.4, thread_count" "$PLAN" --deepspeed "$WORK/ds6.json" \
	--deepspeed-version 0.16.4 --model "$WORK/model.safetensors" "${M[@]}"
sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
tfs_expect_words "0.16.4, thread_count" "$WORK/flat" "warning: aio.thread_count is ignored by DeepSpeed"
sed 's/"thread_count": 1/"intra_op_parallelism": 2/' "$WORK/ds6.json" >"$WORK/intra.json"
tfs_expect_exit 0 "0.14.5, intra_op_parallelism" "$PLAN" --deepspeed "$WORK/intra.json" \
	--deepspeed-version 0.14.5 --model "$WORK/model.safetensors" "${M[@]}"
sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
tfs_expect_words "0.14.5, intra_op_parallelism" "$WORK/flat" \
	"aio.intra_op_parallelism is ignored by DeepSpeed 0.14.5, which reads thread_count" \
	'write "thread_count" instead'
python3 - "$WORK/ds6.json" "$WORK/loco.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["zero_optimization"]["zeropp_loco_param"] = {"err_beta": 0.8}
json.dump(d, open(sys.argv[2], "w"))
PY
tfs_expect_exit 1 "0.16.0, zeropp_loco_param" "$PLAN" --deepspeed "$WORK/loco.json" \
	--deepspeed-version 0.16.0 --model "$WORK/model.safetensors" "${M[@]}"
sed -z 's/\n */ /g' "$WORK/out" >"$WORK/flat"
tfs_expect_words "0.16.0, zeropp_loco_param" "$WORK/flat" \
	"zero_optimization.zeropp_loco_param arrived in DeepSpeed 0.16.2" \
	"'Extra inputs are not permitted'"
tfs_expect_exit 1 "0.14.5, zeropp_loco_param" "$PLAN" --deepspeed "$WORK/loco.json" \
	--deepspeed-version 0.14.5 --model "$WORK/model.safetensors" "${M[@]}"
grep -q "extra fields not permitted" "$WORK/out" ||
	tfs_fail "0.14.5, zeropp_loco_param: pydantic 1's message missing"
tfs_expect_exit 0 "0.16.5, zeropp_loco_param" "$PLAN" --deepspeed "$WORK/loco.json" \
	--model "$WORK/model.safetensors" "${M[@]}"
for bad in 0.13.1 latest 0.16.4.1 ""; do
	tfs_expect_exit 2 "--deepspeed-version '$bad'" "$PLAN" --deepspeed-version "$bad" --params 7e9
	grep -q -- "--deepspeed-version" "$WORK/err" || tfs_fail "--deepspeed-version '$bad': $(cat "$WORK/err")"
done

# 4. a torch.save state_dict keeps the model's order; tied weights (an
# embedding shared with the output layer) count once
tfs_need_torch
"$TORCH_PY" - "$WORK" <<'PY' || tfs_fail "torch could not write the state_dicts"
import os, sys, torch
out = sys.argv[1]
layers = []
for _ in range(6):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.GELU()]
layers.append(torch.nn.Linear(1024, 16))
torch.save(torch.nn.Sequential(*layers).to(torch.bfloat16).state_dict(),
           os.path.join(out, "model.pt"))

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 512)
        self.norm = torch.nn.LayerNorm(512)
        self.head = torch.nn.Linear(512, 1000, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))

torch.save(Tied().state_dict(), os.path.join(out, "tied.pt"))
PY
ds 4
tfs_expect_exit 1 "torch.save, buffer_count 4" "$PLAN" --deepspeed "$WORK/ds4.json" \
	--deepspeed-version 0.14.5 --model "$WORK/model.pt" "${M[@]}"
"$PLAN" --json --deepspeed "$WORK/ds6.json" --deepspeed-version 0.14.5 \
	--model "$WORK/model.pt" "${M[@]}" >"$WORK/json"
check "torch.save" "$WORK/json"
"$PLAN" --json --model "$WORK/tied.pt" "${M[@]}" >"$WORK/json"
python3 - "$WORK/json" <<'PY' || tfs_fail "tied weights: counted twice, or the int64 buffer counted"
import json, sys
m = json.load(open(sys.argv[1]))["model"]
# embed.weight once (head.weight is the same storage), norm weight + bias;
# the int64 buffer is no parameter
assert m["tensors"] == 3, m
assert m["params"] == 1000 * 512 + 512 + 512, m
PY
tfs_pass
