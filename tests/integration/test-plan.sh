#!/bin/bash
# Description: tensorfs-plan on real ds_config.json files (DeepSpeed's
# documented ZeRO-Infinity configs, the Hugging Face Trainer's ZeRO-3 NVMe
# example with "auto" values, one with thread_count and a too small
# buffer_size): exit 0 when it fits, warnings or not (1 with --strict), 1
# when it will fail, the messages that say why, JSON that parses with the
# same exit_code and the verdict, an equivalent tensorfs.ini that tensorfs
# and tensorfs-plan read back the same; exit 1 for an input that cannot
# be read or parsed or holds a bad value (a negative buffer_size, device
# "gpu", a hidden_size in quotes), named with its file and key and no
# plan printed; exit 2 for a bad command line.  No mount: it runs in
# seconds.
. "$(dirname "$0")/lib.sh"

tfs_need python3
PLAN="$TFS_BIN/tensorfs-plan"
DATA="$(cd "$(dirname "$0")/../data/deepspeed" && pwd)"
[ -x "$PLAN" ] || tfs_fail "no tensorfs-plan in $TFS_BIN"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")

# the machine is given, so that the verdicts do not depend on this one
M=(--ram 256G --memlock unlimited)

# plan CODE VERDICT WHAT ARGS...: run tensorfs-plan, expect the exit
# code and the verdict ("fits", "warnings", "will fail"), and check that
# the same run with --json is valid JSON with that exit_code and verdict
plan() {
	local _code=$1 _verdict=$2 _what=$3
	shift 3
	tfs_expect_exit "$_code" "$_what" "$PLAN" "$@"
	cp "$WORK/out" "$WORK/text"
	grep -qx "verdict: $_verdict (exit $_code.*)" "$WORK/text" ||
		tfs_fail "$_what: expected 'verdict: $_verdict (exit $_code)', got '$(grep verdict: "$WORK/text")'"
	"$PLAN" --json "$@" >"$WORK/json" 2>"$WORK/jerr"
	[ "$?" = "$_code" ] || tfs_fail "$_what --json: exit differs from $_code"
	python3 -m json.tool "$WORK/json" >/dev/null ||
		tfs_fail "$_what --json: not valid JSON: $(head -c 300 "$WORK/json")"
	local _j
	_j=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["exit_code"], d["verdict"])' "$WORK/json")
	tfs_eq "$_what --json" "$_code $_verdict" "$_j"
	# wrapped lines joined, so that a phrase is found across a wrap
	sed -z 's/\n */ /g' "$WORK/text" >"$WORK/out"
}

# refused CODE WHAT MESSAGE ARGS...: tensorfs-plan exits CODE with
# MESSAGE (a fixed string) on stderr and prints no plan, with or without
# --json
refused() {
	local _code=$1 _what=$2 _msg=$3 _o
	shift 3
	for _o in "" --json; do
		tfs_expect_exit "$_code" "$_what${_o:+ $_o}" "$PLAN" ${_o:+"$_o"} "$@"
		grep -qF -- "$_msg" "$WORK/err" ||
			tfs_fail "$_what${_o:+ $_o}: expected '$_msg' on stderr, got '$(cat "$WORK/err")'"
		[ -s "$WORK/out" ] && tfs_fail "$_what${_o:+ $_o}: a plan was printed: $(head -c 200 "$WORK/out")"
	done
	return 0
}

# 1. DeepSpeed's config-json page, all its documented offload values, for
# Llama 2 7B on 8 GPUs: fits in 256 GiB, every item shown
plan 0 fits "config-json example, 7e9 x 8" \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "7e9 x 8" "$WORK/out" "verdict: fits (exit 0)" \
	"parameter swap pool" "parameters kept in RAM" "gradient partitions" \
	"optimizer swap pool" "fp32 gradient buffer" "tensorfs write-back pool" \
	"buffer_count 5 x align(buffer_size 1e8) x 2 B" "[offload_param]" \
	"device = nvme" "dtype = bf16" "NVMe space per node"

# 2. the same config for 70e9: the fp16 reuse buffer and the optimizer
# pool pin more than the node has; a smaller sub_group_size fits.  It
# will fail: exit 1
plan 1 "will fail" "config-json example, 70e9 x 8" \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --params 70e9 --ranks 8 "${M[@]}"
tfs_expect_words "70e9 x 8" "$WORK/out" "verdict: will fail (exit 1)" \
	"fp16 buffer for NVMe sub-groups" "pinned host memory per node" \
	"exceeds the 256 GiB of RAM" "zero_optimization.sub_group_size = 2e8  (now 1e9)" \
	"with the recommended values:" "per node of 256 GiB: warnings"

# 3. the zero3.rst ZeRO-Infinity example (fp16, nvme_path only) for 13e9
plan 0 warnings "zero3.rst example, 13e9 x 8" \
	--deepspeed "$DATA/deepspeed-zero3-infinity-nvme.json" --params 13e9 --ranks 8 --ram 512G --memlock unlimited
tfs_expect_words "13e9 x 8" "$WORK/out" "fp16 (2 B)" "nvme_path = /nvme_data"

# 4. the Hugging Face Trainer's ZeRO-3 NVMe example: its aio block sits
# inside zero_optimization, which DeepSpeed rejects (issue #2721); the
# "auto" values are explained from the model's hidden_size
plan 1 "will fail" "HF example" \
	--deepspeed "$DATA/hf-zero3-nvme-auto.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "HF example" "$WORK/out" "aio is inside zero_optimization" \
	"Extra inputs are not permitted" "move \"aio\" to the top level" \
	"zero_optimization.reduce_bucket_size = 16777216" \
	"stage3_prefetch_bucket_size = 15099494" \
	"stage3_param_persistence_threshold = 40960" "fp16.enabled" \
	"6738415616 parameters" "291 parameter tensors" "(exact)"

# ... with aio moved where DeepSpeed reads it, only thread_count is left:
# a warning, which does not fail the plan (exit 0), unless --strict
python3 - "$DATA/hf-zero3-nvme-auto.json" "$WORK/hf-fixed.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["aio"] = d["zero_optimization"].pop("aio")
json.dump(d, open(sys.argv[2], "w"), indent=4)
EOF
plan 0 warnings "HF example, aio at the top" \
	--deepspeed "$WORK/hf-fixed.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "HF example, aio at the top" "$WORK/out" \
	"warning: aio.thread_count is ignored by DeepSpeed" \
	"block_size = 256KiB" "queue_depth = 32" "verdict: warnings (exit 0)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["strict"] is False, d["strict"]' "$WORK/json" ||
	tfs_fail "HF example, aio at the top: --json has not \"strict\": false"
plan 1 warnings "HF example, aio at the top, --strict" --strict \
	--deepspeed "$WORK/hf-fixed.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "--strict" "$WORK/out" "verdict: warnings (exit 1, --strict)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["strict"] is True, d["strict"]' "$WORK/json" ||
	tfs_fail "HF example, aio at the top, --strict: --json has not \"strict\": true"
# --strict changes nothing when it fits or will fail
plan 0 fits "7e9 x 8, --strict" --strict \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
# ... but with --params alone the parameter buffers cannot be counted
plan 0 warnings "7e9 x 8, --params" \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --params 7e9 --ranks 8 "${M[@]}"
tfs_expect_words "7e9 x 8, --params" "$WORK/out" \
	"offload_param.buffer_count = 5 is not checked" "give --model"
plan 1 "will fail" "70e9 x 8, --strict" --strict \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --params 70e9 --ranks 8 "${M[@]}"

# 5. thread_count and a buffer_size below the embedding's partition on one
# GPU: DeepSpeed would stop with "More elements ... than buffer size"
plan 1 "will fail" "thread_count, small buffer" \
	--deepspeed "$DATA/thread-count-small-buffer.json" --model "$DATA/llama-2-7b-config.json" "${M[@]}"
tfs_expect_words "thread_count, small buffer" "$WORK/out" \
	"thread_count is ignored by DeepSpeed" "write intra_op_parallelism = 2" \
	"More elements 131072000 than buffer size 10000000" \
	"offload_param.buffer_size = 1.5e8  (now 1e7)" "verdict: will fail (exit 1)"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
keys = {p["key"]: p["severity"] for p in d["problems"]}
assert keys.get("offload_param.buffer_size") == "error", keys
assert keys.get("aio.thread_count") == "warning", keys
assert d["model"]["largest_partition"] == 131072000, d["model"]
' "$WORK/json" || tfs_fail "thread_count, small buffer: --json problems are wrong"

# 6. the equivalent tensorfs.ini: tensorfs reads it, and tensorfs-plan -c
# gives the same memory as the ds_config.json it came from
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ini"], end="")' \
	"$WORK/json" >"$WORK/equiv.ini"
"$TFS_BIN/tensorfs" -c "$WORK/equiv.ini" --print-config >/dev/null 2>"$WORK/err" ||
	tfs_fail "tensorfs does not read the equivalent ini: $(cat "$WORK/err")"
"$PLAN" --json -c "$WORK/equiv.ini" --model "$DATA/llama-2-7b-config.json" "${M[@]}" >"$WORK/json2"
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["node_total"] == b["node_total"], (a["node_total"], b["node_total"])
' "$WORK/json" "$WORK/json2" || tfs_fail "the equivalent ini plans differently"
"$PLAN" --full -c "$WORK/equiv.ini" --params 7e9 "${M[@]}" | sed -z 's/\n */ /g' >"$WORK/out"
tfs_expect_words "--full" "$WORK/out" "DeepSpeed only: tensorfs reads it for tensorfs-plan" \
	"[zero_optimization]" "sub_group_size = 1e9"

# 7. an INI whose keys do not go together: a plan error with file:line
printf '[offload_param]\ndevice = nvme\nnvme_path = /mnt\n[aio]\nthread_count = 2\nblock_size = 6000\n' >"$WORK/bad-block.ini"
plan 1 "will fail" "block_size 6000" -c "$WORK/bad-block.ini" --params 7e9 "${M[@]}"
tfs_expect_words "block_size 6000" "$WORK/out" \
	"bad-block.ini:6: aio.block_size = 6000" "is not a multiple of 4 KiB" \
	"aio.block_size = 1MiB  (now 6000)"

# 8. usage errors (2) and input errors (1)
tfs_expect_exit 2 "unknown flag" "$PLAN" --bogus
tfs_expect_words "unknown flag" "$WORK/err" "--help"
tfs_expect_exit 2 "no model" "$PLAN" --ranks 8
tfs_expect_words "no model" "$WORK/err" "--params N" "--model FILE (a config.json or the weights)"
tfs_expect_exit 2 "an extra operand" "$PLAN" --params 7e9 ds_config.json
tfs_expect_words "an extra operand" "$WORK/err" "unexpected argument 'ds_config.json'"
tfs_expect_exit 2 "7B is not a count" "$PLAN" --params 7B
tfs_expect_exit 2 "bad --ram" "$PLAN" --params 7e9 --ram lots
tfs_expect_exit 2 "bad --dtype" "$PLAN" --params 7e9 --dtype fp13
tfs_expect_exit 2 "missing option argument" "$PLAN" --params
# standard input as either file, as the file itself (its name "-" where
# the file's name was); never as both
same_json() {	# WHAT FILE ARGS... <FILE: as --json of the files
	local what=$1 file=$2
	shift 2
	"$PLAN" --json "$@" >"$WORK/got" 2>/dev/null
	python3 - "$WORK/want" "$WORK/got" "$file" <<'PY' || tfs_fail "$what: expected the JSON of the files, got $(head -c 300 "$WORK/got")"
import json, sys
want = open(sys.argv[1]).read().replace(json.dumps(sys.argv[3])[1:-1], "-")
sys.exit(json.loads(want) != json.load(open(sys.argv[2])))
PY
}
"$PLAN" --json --deepspeed "$DATA/hf-zero3-nvme-auto.json" --model "$DATA/llama-2-7b-config.json" \
	--ranks 8 "${M[@]}" >"$WORK/want" 2>/dev/null
same_json "--deepspeed - <FILE" "$DATA/hf-zero3-nvme-auto.json" --deepspeed - \
	--model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}" <"$DATA/hf-zero3-nvme-auto.json"
same_json "--model - <FILE" "$DATA/llama-2-7b-config.json" --deepspeed "$DATA/hf-zero3-nvme-auto.json" \
	--model - --ranks 8 "${M[@]}" <"$DATA/llama-2-7b-config.json"
tfs_expect_exit 2 "--deepspeed - --model -" "$PLAN" --deepspeed - --model - <"$DATA/llama-2-7b-config.json"
tfs_expect_words "--deepspeed - --model -" "$WORK/err" "standard input" "give one of them as a file"
refused 1 "missing ds_config" "none.json': cannot open" --params 7e9 --deepspeed "$WORK/none.json"
refused 1 "missing ini" "none.ini: cannot open" --params 7e9 -c "$WORK/none.ini"
refused 1 "a directory as the ini" "'$WORK' is a directory; give an INI file" --params 7e9 -c "$WORK"
refused 1 "/dev/zero as the ini" "/dev/zero:1:" --params 7e9 -c /dev/zero
tfs_expect_words "/dev/zero as the ini" "$WORK/err" "NUL byte"
refused 1 "missing config.json" "none.json': cannot open" --model "$WORK/none.json"
printf '{\n  "zero_optimization": {\n    "stage": 3,\n  }\n}\n' >"$WORK/bad.json"
refused 1 "malformed JSON" "bad.json:4:" --params 7e9 --deepspeed "$WORK/bad.json"
tfs_expect_words "malformed JSON" "$WORK/err" "invalid JSON"
printf '{"hidden_size": 4096,\n' >"$WORK/bad-model.json"
refused 1 "malformed config.json" "bad-model.json:2:" --model "$WORK/bad-model.json"
printf '[offload_optimizer]\nbuffer_size = 1e8\n' >"$WORK/wrong.ini"
refused 1 "key in the wrong section" "wrong.ini:2:" --params 7e9 -c "$WORK/wrong.ini"
tfs_expect_words "key in the wrong section" "$WORK/err" "it belongs in [offload_param]"
printf '{"hidden_size": 4096}\n' >"$WORK/model.json"
refused 1 "config.json without sizes" "model.json: cannot count the parameters" --model "$WORK/model.json"
# the wrong kind of input: a directory, a model's config.json given as
# the DeepSpeed config, a stage in words; input errors (1), no plan
mkdir "$WORK/dsdir"
refused 1 "directory as ds_config" "dsdir' is a directory" --params 7e9 --deepspeed "$WORK/dsdir"
refused 1 "directory as ini" "dsdir' is a directory" --params 7e9 -c "$WORK/dsdir"
refused 1 "directory as --model" "dsdir' is a directory" --model "$WORK/dsdir"
refused 1 "model config.json as ds_config" "Hugging Face model config.json" --params 7e9 \
	--deepspeed "$DATA/llama-2-7b-config.json"
tfs_expect_words "model config.json as ds_config" "$WORK/err" "--model"
printf '{"zero_optimization": {"stage": "three"}}\n' >"$WORK/three.json"
refused 1 "stage three" '"three" is not 0, 1, 2 or 3' --params 7e9 --deepspeed "$WORK/three.json"
tfs_expect_words "stage three" "$WORK/err" "three.json"
grep -q "stage 0" "$WORK/out" "$WORK/err" && tfs_fail "stage three: still planned for stage 0"

# 9. a bad value stops the plan, naming the file and the key: a negative
# buffer_size (in the JSON as a number or a string, or in the INI), a
# device DeepSpeed does not know, every one of them in one run
ds3() {	# FILE OFFLOAD_PARAM_JSON: a ZeRO-3 ds_config.json
	printf '{"zero_optimization": {"stage": 3, "offload_param": %s}}\n' "$2" >"$1"
}
ds3 "$WORK/neg.json" '{"device": "nvme", "nvme_path": "/mnt", "buffer_size": -5}'
refused 1 "negative buffer_size" \
	"tensorfs-plan: $WORK/neg.json: zero_optimization.offload_param.buffer_size: -5 is not a size above 0" \
	--params 7e9 --deepspeed "$WORK/neg.json" "${M[@]}"
ds3 "$WORK/neg-str.json" '{"device": "nvme", "nvme_path": "/mnt", "buffer_size": "-5"}'
refused 1 "negative buffer_size as a string" \
	"neg-str.json: zero_optimization.offload_param.buffer_size: \"-5\" is not a size above 0" \
	--params 7e9 --deepspeed "$WORK/neg-str.json" "${M[@]}"
printf '[offload_param]\nbuffer_size = -5\n' >"$WORK/neg.ini"
refused 1 "negative buffer_size in the INI" "neg.ini:2: offload_param.buffer_size = '-5'" \
	--params 7e9 -c "$WORK/neg.ini" "${M[@]}"
ds3 "$WORK/gpu.json" '{"device": "gpu"}'
refused 1 "device gpu" \
	"gpu.json: zero_optimization.offload_param.device: \"gpu\" is not a device DeepSpeed offloads to" \
	--params 7e9 --deepspeed "$WORK/gpu.json" "${M[@]}"
printf '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "gpu"}}}\n' >"$WORK/gpu-opt.json"
refused 1 "offload_optimizer device gpu" \
	"gpu-opt.json: zero_optimization.offload_optimizer.device: \"gpu\" is not a device" \
	--params 7e9 --deepspeed "$WORK/gpu-opt.json" "${M[@]}"
ds3 "$WORK/both.json" '{"device": "NVMe", "buffer_count": -1}'
refused 1 "two bad values" "both.json: zero_optimization.offload_param.buffer_count: -1 is not a whole number above 0" \
	--params 7e9 --deepspeed "$WORK/both.json" "${M[@]}"
tfs_expect_words "two bad values" "$WORK/err" \
	"both.json: zero_optimization.offload_param.device: \"NVMe\" is not a device DeepSpeed offloads to: its names are lower case; write \"nvme\""

# 10. a model config.json whose sizes are not whole numbers above 0: the
# key is named, not the list of the keys a count needs
model() {	# FILE PYTHON-STATEMENT: llama-2-7b's config.json, changed
	python3 - "$DATA/llama-2-7b-config.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}
mkdir "$WORK/m"
model "$WORK/m/config.json" 'd["hidden_size"] = "4096"'
(cd "$WORK/m" && refused 1 "hidden_size a string" \
	'tensorfs-plan: config.json: hidden_size: "4096" is not a whole number' --model config.json "${M[@]}")
model "$WORK/layers-neg.json" 'd["num_hidden_layers"] = -32'
refused 1 "num_hidden_layers negative" "layers-neg.json: num_hidden_layers: -32 is not a whole number above 0" \
	--model "$WORK/layers-neg.json" "${M[@]}"
model "$WORK/layers-frac.json" 'd["num_hidden_layers"] = 32.5'
refused 1 "num_hidden_layers a fraction" "layers-frac.json: num_hidden_layers: 32.5 is not a whole number" \
	--model "$WORK/layers-frac.json" "${M[@]}"
model "$WORK/tc.json" 'd = {"text_config": dict(d, vocab_size=True)}'
refused 1 "text_config.vocab_size a boolean" "tc.json: text_config.vocab_size: true is not a whole number" \
	--model "$WORK/tc.json" "${M[@]}"
grep -q "cannot count the parameters" "$WORK/err" &&
	tfs_fail "text_config.vocab_size a boolean: the generic message too"
# an absent head_dim and a null one are the same: hidden_size / heads
model "$WORK/null-head.json" 'd["head_dim"] = None'
plan 0 fits "head_dim null" --model "$WORK/null-head.json" "${M[@]}"

# 10b. --drives: DeepSpeed's queue_depth is its total over the drives the
# mount stripes over, tensorfs's write-back keeps queue_depth on each
plan 0 warnings "--drives 4 at the default queue_depth" --params 7e9 --drives 4 "${M[@]}"
tfs_expect_words "--drives 4" "$WORK/out" "each with 2.0 requests in flight" \
	"set queue_depth = 32"
grep -qE "aio.queue_depth = 32 +\(now 8\)" "$WORK/text" ||
	tfs_fail "--drives 4: expected the recommendation aio.queue_depth = 32 (now 8), got: $(grep queue_depth "$WORK/text")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["machine"]["drives"] == 4 else 1)' "$WORK/json" ||
	tfs_fail "--drives 4 --json: machine.drives is not 4"
printf '[aio]\nqueue_depth = 16\nintra_op_parallelism = 2\n[offload_param]\nbuffer_count = 2\nbuffer_size = 4MiB\n' >"$WORK/qd.ini"
plan 0 warnings "--drives 4, queue_depth 16 x 2 threads, a pool of 8 MiB" -c "$WORK/qd.ini" --params 7e9 --drives 4 "${M[@]}"
grep -q "each with .* requests in flight" "$WORK/out" &&
	tfs_fail "--drives 4 with 16 x 2 in flight: warned of too few requests per drive"
tfs_expect_words "--drives 4, a pool of 8 MiB" "$WORK/out" "write-back pool (8 MiB)" \
	"raise buffer_count or buffer_size"
# one drive: nothing said of queue_depth
plan 0 fits "--drives 1" --params 7e9 --drives 1 "${M[@]}"
grep -q "queue_depth" "$WORK/out" && tfs_fail "--drives 1: queue_depth mentioned: $(grep queue_depth "$WORK/out")"
refused 2 "--drives 0" "--drives" --params 7e9 --drives 0
refused 2 "--drives 65" "at most 64" --params 7e9 --drives 65

# 11. --help: the exit codes, and the INI where tensorfs installs it
tfs_expect_exit 0 "--help" "$PLAN" --help
tfs_expect_words "--help" "$WORK/out" "Exit status" "--deepspeed" "--strict" \
	"0 success, 1 failure or refusal, 2 usage error" "-c /etc/tensorfs/tensorfs.ini"
grep -qE '^ +(64|65|66|74) ' "$WORK/out" && tfs_fail "--help still names a sysexits code"
grep -q "/etc/tensorfs\.ini" "$WORK/out" && tfs_fail "--help names /etc/tensorfs.ini, which is not installed"
PAGE="$TFS_BIN/../man/tensorfs-plan.1"
if [ -s "$PAGE" ]; then
	grep -q "/etc/tensorfs\.ini" "$PAGE" && tfs_fail "tensorfs-plan(1) names /etc/tensorfs.ini"
	grep -qE '^\.B (64|65|66|74)$' "$PAGE" && tfs_fail "tensorfs-plan(1) still lists a sysexits code"
fi
tfs_expect_exit 0 "-V" "$PLAN" -V
tfs_pass
