#!/bin/bash
# test-plan-measure.sh: tensorfs-plan --measure, the tuner, on a tensorfs
# mount and on a directory of the disk.
# Description: the tuner runs DeepSpeed's swap pattern (libaio, O_DIRECT)
# for candidates of block_size, queue_depth, threads, buffer_count and
# pin_memory within its time budget (buffer_size priced, not timed), prints its progress, reports GB/s and
# host memory for each, recommends one that fits with its reason, prints a
# ds_config.json fragment and a tensorfs.ini that tensorfs reads, stays
# within the memory it announces, and leaves no file behind; bad
# arguments are refused.
. "$(dirname "$0")/lib.sh"
tfs_need python3
PLAN="$TFS_BIN/tensorfs-plan"
[ -x "$PLAN" ] || tfs_fail "no tensorfs-plan in $TFS_BIN"
tfs_setup 2G

# the model of test-plan-model.sh: 6 x Linear(1024, 1024), Linear(1024, 16)
python3 - "$WORK" <<'PY' || tfs_fail "cannot write the model"
import json, os, struct, sys
names = []
for i in range(6):
    names += [(f"{2*i}.weight", [1024, 1024]), (f"{2*i}.bias", [1024])]
names += [("12.weight", [16, 1024]), ("12.bias", [16])]
hdr, off = {}, 0
for n, shape in sorted(names):
    k = 1
    for d in shape:
        k *= d
    hdr[n] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + 2 * k]}
    off += 2 * k
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(sys.argv[1], "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    f.truncate(8 + len(h) + off)
PY
cat >"$WORK/ds.json" <<EOF
{"bf16": {"enabled": true},
 "zero_optimization": {"stage": 3, "sub_group_size": 2e6,
   "offload_param": {"device": "nvme", "nvme_path": "$MNT", "buffer_count": 6,
     "buffer_size": 2e6, "max_in_cpu": 1e6},
   "offload_optimizer": {"device": "nvme", "nvme_path": "$MNT", "buffer_count": 4}},
 "aio": {"block_size": 1048576, "queue_depth": 8, "intra_op_parallelism": 1}}
EOF

# measure DIR BUDGET: run the tuner with --json; the JSON in $WORK/json,
# the progress in $WORK/err, the peak RSS (KiB) and the seconds in
# $WORK/usage
measure() {
	python3 - "$WORK" "$PLAN" "$1" "$2" <<'PY' || tfs_fail "tensorfs-plan --measure $1 failed: $(cat "$WORK/err")"
import resource, subprocess, sys, time
work, plan, d, budget = sys.argv[1:5]
t0 = time.monotonic()
with open(work + "/json", "w") as out, open(work + "/err", "w") as err:
    rc = subprocess.call([plan, "--json", "--deepspeed", work + "/ds.json",
                          "--model", work + "/model.safetensors", "--ram", "24G",
                          "--memlock", "unlimited", "--measure", d,
                          "--budget", budget, "--measure-memory", "64M"],
                         stdout=out, stderr=err)
secs = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(work + "/usage", "w").write(f"{rss} {secs:.1f}\n")
sys.exit(rc)
PY
}

# check WHAT FS BUDGET: what every run must show
check() {
	python3 - "$WORK/json" "$WORK/usage" "$2" "$3" <<'PY' || tfs_fail "$1: $(head -c 3000 "$WORK/json")"
import json, sys
d = json.load(open(sys.argv[1]))
rss_kib, secs = open(sys.argv[2]).read().split()
fs, budget = sys.argv[3], float(sys.argv[4])
m = d["measure"]
assert m["file_system"] == fs, m["file_system"]
c = m["candidates"]
measured = [x for x in c if x["gb_s"] is not None]
assert len(measured) >= 5, f"only {len(measured)} measured"
for x in measured:
    assert x["gb_s"] > 0 and x["read_gb_s"] > 0 and x["write_gb_s"] > 0, x
    assert x["pinned_bytes"] > 0 and x["pageable_bytes"] > 0, x
for x in c:
    if x["gb_s"] is None:
        assert x["why"], x
# every key was tried: more than one value of each
for key in ("block_size", "queue_depth", "threads", "buffer_count"):
    assert len({x[key] for x in measured}) > 1, f"{key} not varied"
rec = [x for x in c if x["recommended"]]
assert len(rec) == 1, rec
r = rec[0]
assert r["fits"] and r["gb_s"] is not None, r
fastest = max(x["gb_s"] for x in measured if x["fits"])
assert r["gb_s"] >= 0.97 * fastest - 1e-9, (r, fastest)
assert "GB/s" in m["reason"], m["reason"]
assert sum(x["as_given"] for x in c) == 1
ds = m["ds_config"]
assert ds["aio"]["block_size"] == r["block_size"], ds
assert ds["aio"]["queue_depth"] == r["queue_depth"], ds
assert ds["aio"]["intra_op_parallelism"] == r["threads"], ds
assert ds["zero_optimization"]["offload_param"]["buffer_count"] == r["buffer_count"], ds
assert ds["zero_optimization"]["offload_param"]["pin_memory"] == r["pin_memory"], ds
assert ds["zero_optimization"]["offload_param"]["buffer_size"] == r["buffer_size"], ds
# buffer_size is priced, not timed: the smallest DeepSpeed takes (above the
# 1,048,576-element partition) with the rates of its neighbour, and it wins
small = [x for x in c if x["buffer_size"] == 1049600]
assert len(small) == 1 and "not timed" in small[0]["why"], small
assert r["buffer_size"] == 1049600, r
# the budget, with room for the last candidate and the start
assert float(secs) <= budget + budget / 2 + 10, f"took {secs} s of a {budget} s budget"
# the memory it announced, plus the program itself (64 MiB)
assert int(rss_kib) * 1024 <= m["memory_bytes"] + (64 << 20), \
    f"peak RSS {rss_kib} KiB over the {m['memory_bytes']} bytes announced"
open(sys.argv[1] + ".ini", "w").write(m["ini"])
PY
	grep -q "tensorfs-plan: measuring DeepSpeed's swap pattern in" "$WORK/err" ||
		tfs_fail "$1: no progress on stderr: $(cat "$WORK/err")"
	grep -q "tensorfs-plan: measuring [0-9]* of about" "$WORK/err" ||
		tfs_fail "$1: no progress per candidate: $(cat "$WORK/err")"
	"$TFS_BIN/tensorfs" -c "$WORK/json.ini" --print-config >/dev/null 2>"$WORK/ini.err" ||
		tfs_fail "$1: tensorfs does not read the recommended ini: $(cat "$WORK/ini.err")"
}

# 1. on the tensorfs mount
measure "$MNT" 12
check "on tensorfs" tensorfs 12
for left in "$MNT"/.tensorfs-measure.*; do
	[ -e "$left" ] && tfs_fail "the measurement's files are left on the mount: $left"
done

# 2. on a directory of the disk the test runs on
mkdir "$WORK/disk"
fs=$(python3 -c 'import sys; print({0xEF53: "ext4", 0x58465342: "xfs", 0x01021994: "tmpfs", 0x9123683E: "btrfs"}.get(int(sys.argv[1], 16), "0x%x" % int(sys.argv[1], 16)))' "$(stat -f -c %t "$WORK/disk")")
measure "$WORK/disk" 12
check "on $fs" "$fs" 12
[ -z "$(ls -A "$WORK/disk")" ] || tfs_fail "the measurement's files are left in $WORK/disk: $(ls -A "$WORK/disk")"

# 3. text: the table, the recommendation and both fragments
"$PLAN" --deepspeed "$WORK/ds.json" --model "$WORK/model.safetensors" --ram 24G \
	--memlock unlimited --measure "$MNT" --budget 5 --measure-memory 32M >"$WORK/out" 2>"$WORK/err" ||
	tfs_fail "--measure, text: exit $?: $(cat "$WORK/err")"
tfs_expect_words "--measure, text" "$WORK/out" "measured in $MNT (tensorfs)" \
	"pinned/node" "recommended: block_size" "because:" \
	"ds_config.json, the keys to set in yours:" "tensorfs.ini (keys that differ from the defaults):"

# 4. refusals
tfs_expect_exit 1 "--measure a missing directory" "$PLAN" --params 7e9 --measure "$WORK/none"
grep -q "not a directory" "$WORK/err" || tfs_fail "--measure a missing directory: $(cat "$WORK/err")"
tfs_expect_exit 2 "--budget 0" "$PLAN" --params 7e9 --measure "$MNT" --budget 0
tfs_expect_exit 2 "--budget without --measure" "$PLAN" --params 7e9 --budget 10
tfs_expect_exit 2 "--measure-memory 1M" "$PLAN" --params 7e9 --measure "$MNT" --measure-memory 1M
tfs_umount
tfs_pass
