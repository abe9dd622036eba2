#!/bin/bash
# Description: tensorfs-plan on real ds_config.json files (DeepSpeed's
# documented ZeRO-Infinity configs, the Hugging Face Trainer's ZeRO-3 NVMe
# example with "auto" values, one with thread_count and a too small
# buffer_size): exit codes 0/1/2 by severity, the messages that say why,
# JSON that parses, an equivalent tensorfs.ini that tensorfs and
# tensorfs-plan read back the same, and 64/65/66 for bad usage and input.
# No mount: it runs in seconds.
. "$(dirname "$0")/lib.sh"

tfs_need python3
PLAN="$TFS_BIN/tensorfs-plan"
DATA="$(cd "$(dirname "$0")/../data/deepspeed" && pwd)"
[ -x "$PLAN" ] || tfs_fail "no tensorfs-plan in $TFS_BIN"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")

# the machine is given, so that the verdicts do not depend on this one
M=(--ram 256G --memlock unlimited)

# plan CODES WHAT ARGS...: run tensorfs-plan, expect an exit code, and
# check that the same run with --json is valid JSON with that exit_code
plan() {
	local _codes=$1 _what=$2
	shift 2
	tfs_expect_exit "$_codes" "$_what" "$PLAN" "$@"
	local _rc=$TFS_RC
	cp "$WORK/out" "$WORK/text"
	"$PLAN" --json "$@" >"$WORK/json" 2>"$WORK/jerr"
	[ "$?" = "$_rc" ] || tfs_fail "$_what --json: exit differs from $_rc"
	python3 -m json.tool "$WORK/json" >/dev/null ||
		tfs_fail "$_what --json: not valid JSON: $(head -c 300 "$WORK/json")"
	local _j
	_j=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["exit_code"], d["verdict"])' "$WORK/json")
	case $_rc in
	0) tfs_eq "$_what --json" "0 fits" "$_j" ;;
	1) tfs_eq "$_what --json" "1 warnings" "$_j" ;;
	2) tfs_eq "$_what --json" "2 will fail" "$_j" ;;
	esac
	# wrapped lines joined, so that a phrase is found across a wrap
	sed -z 's/\n */ /g' "$WORK/text" >"$WORK/out"
}

# 1. DeepSpeed's config-json page, all its documented offload values, for
# 7e9 parameters on 8 GPUs: fits in 256 GiB, every item shown
plan 0 "config-json example, 7e9 x 8" \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --params 7e9 --ranks 8 "${M[@]}"
tfs_expect_words "7e9 x 8" "$WORK/out" "verdict: fits (exit 0)" \
	"parameter swap pool" "parameters kept in RAM" "gradient partitions" \
	"optimizer swap pool" "fp32 gradient buffer" "tensorfs write-back pool" \
	"buffer_count 5 x align(buffer_size 1e8) x 2 B" "[offload_param]" \
	"device = nvme" "dtype = bf16" "NVMe space per node"

# 2. the same config for 70e9: the fp16 reuse buffer and the optimizer
# pool pin more than the node has; a smaller sub_group_size fits
plan 2 "config-json example, 70e9 x 8" \
	--deepspeed "$DATA/deepspeed-config-json-nvme.json" --params 70e9 --ranks 8 "${M[@]}"
tfs_expect_words "70e9 x 8" "$WORK/out" "verdict: will fail (exit 2)" \
	"fp16 buffer for NVMe sub-groups" "pinned host memory per node" \
	"exceeds the 256 GiB of RAM" "zero_optimization.sub_group_size = 2e8  (now 1e9)" \
	"with the recommended values:" ": fits"

# 3. the zero3.rst ZeRO-Infinity example (fp16, nvme_path only) for 13e9
plan 0 "zero3.rst example, 13e9 x 8" \
	--deepspeed "$DATA/deepspeed-zero3-infinity-nvme.json" --params 13e9 --ranks 8 --ram 512G --memlock unlimited
tfs_expect_words "13e9 x 8" "$WORK/out" "fp16 (2 B)" "nvme_path = /nvme_data"

# 4. the Hugging Face Trainer's ZeRO-3 NVMe example: its aio block sits
# inside zero_optimization, which DeepSpeed rejects (issue #2721); the
# "auto" values are explained from the model's hidden_size
plan 2 "HF example" \
	--deepspeed "$DATA/hf-zero3-nvme-auto.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "HF example" "$WORK/out" "aio is inside zero_optimization" \
	"Extra inputs are not permitted" "move \"aio\" to the top level" \
	"zero_optimization.reduce_bucket_size = 16777216" \
	"stage3_prefetch_bucket_size = 15099494" \
	"stage3_param_persistence_threshold = 40960" "fp16.enabled" \
	"6738415616 parameters" "largest parameter 131072000 elements"

# ... with aio moved where DeepSpeed reads it, only thread_count is left:
# a warning, exit 1
python3 - "$DATA/hf-zero3-nvme-auto.json" "$WORK/hf-fixed.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["aio"] = d["zero_optimization"].pop("aio")
json.dump(d, open(sys.argv[2], "w"), indent=4)
EOF
plan 1 "HF example, aio at the top" \
	--deepspeed "$WORK/hf-fixed.json" --model "$DATA/llama-2-7b-config.json" --ranks 8 "${M[@]}"
tfs_expect_words "HF example, aio at the top" "$WORK/out" \
	"warning: aio.thread_count is ignored by DeepSpeed" \
	"block_size = 256KiB" "queue_depth = 32" "verdict: warnings (exit 1)"

# 5. thread_count and a buffer_size below the embedding's partition on one
# GPU: DeepSpeed would stop with "More elements ... than buffer size"
plan 2 "thread_count, small buffer" \
	--deepspeed "$DATA/thread-count-small-buffer.json" --model "$DATA/llama-2-7b-config.json" "${M[@]}"
tfs_expect_words "thread_count, small buffer" "$WORK/out" \
	"thread_count is ignored by DeepSpeed" "write intra_op_parallelism = 2" \
	"More elements 131072000 than buffer size 10000000" \
	"offload_param.buffer_size = 1.5e8  (now 1e7)" "verdict: will fail (exit 2)"
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
plan 2 "block_size 6000" -c "$WORK/bad-block.ini" --params 7e9 "${M[@]}"
tfs_expect_words "block_size 6000" "$WORK/out" \
	"bad-block.ini:6: aio.block_size = 6000 is not a multiple of 4 KiB" \
	"aio.block_size = 1MiB  (now 6000)"

# 8. usage and input errors
tfs_expect_exit 64 "unknown flag" "$PLAN" --bogus
tfs_expect_exit 64 "no model" "$PLAN" --ranks 8
tfs_expect_words "no model" "$WORK/err" "--params N" "--model config.json"
tfs_expect_exit 64 "7B is not a count" "$PLAN" --params 7B
tfs_expect_exit 64 "bad --ram" "$PLAN" --params 7e9 --ram lots
tfs_expect_exit 64 "bad --dtype" "$PLAN" --params 7e9 --dtype fp13
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
tfs_expect_exit 64 "--deepspeed - --model -" "$PLAN" --deepspeed - --model - <"$DATA/llama-2-7b-config.json"
tfs_expect_words "--deepspeed - --model -" "$WORK/err" "standard input" "give one of them as a file"
tfs_expect_exit 66 "missing ds_config" "$PLAN" --params 7e9 --deepspeed "$WORK/none.json"
tfs_expect_words "missing ds_config" "$WORK/err" "none.json" "cannot open"
tfs_expect_exit 66 "missing ini" "$PLAN" --params 7e9 -c "$WORK/none.ini"
tfs_expect_exit 66 "a directory as the ini" "$PLAN" --params 7e9 -c "$WORK"
tfs_expect_words "a directory as the ini" "$WORK/err" "'$WORK' is a directory; give an INI file"
tfs_expect_exit 65 "/dev/zero as the ini" "$PLAN" --params 7e9 -c /dev/zero
tfs_expect_words "/dev/zero as the ini" "$WORK/err" "/dev/zero:1:" "NUL byte"
tfs_expect_exit 66 "missing config.json" "$PLAN" --model "$WORK/none.json"
printf '{\n  "zero_optimization": {\n    "stage": 3,\n  }\n}\n' >"$WORK/bad.json"
tfs_expect_exit 65 "malformed JSON" "$PLAN" --params 7e9 --deepspeed "$WORK/bad.json"
tfs_expect_words "malformed JSON" "$WORK/err" "bad.json:4:" "invalid JSON"
printf '[offload_optimizer]\nbuffer_size = 1e8\n' >"$WORK/wrong.ini"
tfs_expect_exit 65 "key in the wrong section" "$PLAN" --params 7e9 -c "$WORK/wrong.ini"
tfs_expect_words "key in the wrong section" "$WORK/err" "wrong.ini:2:" \
	"it belongs in [offload_param]"
printf '{"hidden_size": 4096}\n' >"$WORK/model.json"
tfs_expect_exit 65 "config.json without sizes" "$PLAN" --model "$WORK/model.json"
# the wrong kind of input: a directory, a model's config.json given as
# the DeepSpeed config, a stage in words; input errors (65/66), no plan
mkdir "$WORK/dsdir"
tfs_expect_exit 66 "directory as ds_config" "$PLAN" --params 7e9 --deepspeed "$WORK/dsdir"
tfs_expect_words "directory as ds_config" "$WORK/err" "dsdir" "is a directory"
tfs_expect_exit 66 "directory as ini" "$PLAN" --params 7e9 -c "$WORK/dsdir"
tfs_expect_words "directory as ini" "$WORK/err" "dsdir" "is a directory"
tfs_expect_exit 66 "directory as --model" "$PLAN" --model "$WORK/dsdir"
tfs_expect_words "directory as --model" "$WORK/err" "is a directory"
tfs_expect_exit 65 "model config.json as ds_config" "$PLAN" --params 7e9 \
	--deepspeed "$DATA/llama-2-7b-config.json"
tfs_expect_words "model config.json as ds_config" "$WORK/err" \
	"Hugging Face model config.json" "--model"
[ -s "$WORK/out" ] && tfs_fail "model config.json as ds_config: a plan was printed"
printf '{"zero_optimization": {"stage": "three"}}\n' >"$WORK/three.json"
tfs_expect_exit 65 "stage three" "$PLAN" --params 7e9 --deepspeed "$WORK/three.json"
tfs_expect_words "stage three" "$WORK/err" "three.json" '"three" is not 0, 1, 2 or 3'
grep -q "stage 0" "$WORK/out" "$WORK/err" && tfs_fail "stage three: still planned for stage 0"
tfs_expect_exit 0 "--help" "$PLAN" --help
tfs_expect_words "--help" "$WORK/out" "Exit status" "64" "65" "66" "--deepspeed"
tfs_expect_exit 0 "-V" "$PLAN" -V
tfs_pass
