#!/bin/bash
# Description: tensorfs-cat on torch.save files that PyTorch wrote (a
# model's state_dict with fp32, fp16, bf16, int64 and bool tensors, a
# nested Adam state_dict, views sharing one storage: a transpose, a
# strided slice, an expanded row, a tensor saved alone, a summarised one
# of 3000 elements), each also in the legacy format (PyTorch before 1.6,
# or _use_new_zipfile_serialization=False), and with pickle_protocol 3
# to 5 (other opcodes, another magic number): the listing names every
# tensor by its path (complex tensors with their dtype and size, which
# -t refuses to print), -t NAME
# prints torch's values (numpy's repr where numpy has the dtype, --json
# values exactly), --stats agrees with torch; a pickle that would call
# os.system is read without running it; on a mount, user.tensor.dtype
# and user.tensor.shape answer from the file and tensorfs-cat prints the
# same as off the mount.
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need getfattr
CAT="$TFS_BIN/tensorfs-cat"
tfs_need_torch
tfs_setup 256M
D="$WORK/files"
mkdir "$D"

"$TORCH_PY" - "$D" <<'PY' || tfs_fail "torch could not write the test files"
import collections, os, sys
import torch
d = sys.argv[1]
torch.manual_seed(1)
m = torch.nn.Sequential(collections.OrderedDict([
    ("embed", torch.nn.Embedding(5, 4)),
    ("layers", torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)]))]))
opt = torch.optim.Adam(m.parameters())
x = m.embed(torch.tensor([1, 2]))
for lin in m.layers:
    x = lin(x)
x.sum().backward()
opt.step()
base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 8
ck = {"model": m.state_dict(), "optimizer": opt.state_dict(),
            "half": torch.linspace(-2, 2, 7).half(),
            "bf16": torch.tensor([1.0, -2.5, 3.140625, float("nan"), float("inf")], dtype=torch.bfloat16),
            "ids": torch.tensor([[0, -1, 2**62], [-2**63, 7, 8]]),
            "mask": torch.tensor([True, False]),
            "t": base.t(), "cols": base[1:, ::2], "rep": base[0].expand(3, 6),
            "big": torch.linspace(-1, 1, 3000)}
alone = torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.float64)
for suffix, zipped in (("", True), ("-legacy", False)):
    torch.save(ck, f"{d}/ckpt{suffix}.pt", _use_new_zipfile_serialization=zipped)
    torch.save(alone, f"{d}/alone{suffix}.pt", _use_new_zipfile_serialization=zipped)
    # pickle_protocol 3 to 5: other opcodes, and another magic number
    for proto in (3, 4, 5):
        torch.save(ck, f"{d}/ckpt{suffix}-p{proto}.pt", pickle_protocol=proto,
                   _use_new_zipfile_serialization=zipped)

class Evil:
    def __reduce__(self):
        return (os.system, (f"touch {d}/pwned",))
torch.save({"x": Evil(), "w": torch.ones(2)}, f"{d}/evil.pt")
torch.save({"x": Evil(), "w": torch.ones(2)}, f"{d}/evil-legacy.pt",
           _use_new_zipfile_serialization=False)
PY
[ "$(head -c 2 "$D/ckpt-legacy.pt" | od -An -tx1 | tr -d ' ')" = 8002 ] ||
	tfs_fail "ckpt-legacy.pt is not in the legacy format (a pickle, no zip)"

# ----- the listing -----
for f in ckpt.pt ckpt-legacy.pt ckpt-p3.pt ckpt-p4.pt ckpt-p5.pt ckpt-legacy-p3.pt \
	ckpt-legacy-p4.pt ckpt-legacy-p5.pt; do
	"$CAT" "$D/$f" >"$WORK/list" || tfs_fail "listing $f failed: $(cat "$WORK/list")"
	for n in model.embed.weight model.layers.1.bias optimizer.state.0.exp_avg \
		optimizer.state.4.exp_avg_sq optimizer.state.0.step half bf16 ids mask t cols rep big; do
		grep -q "^$n " "$WORK/list" || tfs_fail "the listing of $f lacks $n: $(cat "$WORK/list")"
	done
	grep -E '^t +float32 +\(6, 4\) .* strides \(1, 6\)$' "$WORK/list" >/dev/null ||
		tfs_fail "$f: the transpose is not listed with its strides: $(grep '^t ' "$WORK/list")"
done

# ----- values and statistics, against torch -----
"$TORCH_PY" - "$CAT" "$D" <<'PY' || tfs_fail "tensorfs-cat disagrees with torch (see above)"
import json, math, subprocess, sys
import torch
cat, d = sys.argv[1], sys.argv[2]
def walk(o, name=""):
    if isinstance(o, torch.Tensor):
        yield name, o
    elif isinstance(o, dict):
        for k, v in o.items():
            yield from walk(v, f"{name}.{k}" if name else str(k))
    elif isinstance(o, (list, tuple)):
        for i, v in enumerate(o):
            yield from walk(v, f"{name}.{i}" if name else str(i))
def flat(x):
    if isinstance(x, list):
        return [v for e in x for v in flat(e)]
    return [float(x) if isinstance(x, str) else x]
bad = 0
def check(fn, name, t):
    global bad
    j = json.loads(subprocess.run([cat, "--json", "-t", name, f"{d}/{fn}"],
                                  check=True, capture_output=True, text=True).stdout)
    if j["shape"] != list(t.shape):
        print(f"{fn} {name}: shape {j['shape']}, torch {list(t.shape)}"); bad += 1; return
    if t.numel() <= 1000:
        want = [float(v) for v in t.flatten().tolist()]
        got = [float(v) for v in flat(j["values"])]
        if len(got) != len(want) or any(not (a == b or (math.isnan(a) and math.isnan(b))) for a, b in zip(got, want)):
            print(f"{fn} {name}: values {got}, torch {want}"); bad += 1
    # numpy has no bfloat16; Debian's numpy 1.x leaves out shape= when
    # summarising, which tensorfs-cat prints as numpy 2.2 does
    if t.dtype != torch.bfloat16 and t.numel() <= 1000:
        text = subprocess.run([cat, "-t", name, f"{d}/{fn}"], check=True,
                              capture_output=True, text=True).stdout.strip()
        want = repr(t.numpy())
        if text != want:
            print(f"{fn} {name}: printed\n{text}\nnumpy\n{want}"); bad += 1
    if t.dtype.is_floating_point:
        s = json.loads(subprocess.run([cat, "--stats", "--json", "-t", name, f"{d}/{fn}"],
                                      check=True, capture_output=True, text=True).stdout)["stats"]
        x = t.double().flatten()
        fin = x[torch.isfinite(x)]
        if s["nan"] != int(torch.isnan(x).sum()) or s["inf"] != int(torch.isinf(x).sum()):
            print(f"{fn} {name}: --stats nan/inf {s['nan']}/{s['inf']}"); bad += 1
        if fin.numel() and abs(s["mean"] - float(fin.mean())) > 1e-6 * max(1, abs(float(fin.mean()))):
            print(f"{fn} {name}: --stats mean {s['mean']}, torch {float(fin.mean())}"); bad += 1
for fn in ("ckpt.pt", "ckpt-legacy.pt", "ckpt-p4.pt", "ckpt-legacy-p4.pt",
           "ckpt-legacy-p5.pt"):
    for name, t in walk(torch.load(f"{d}/{fn}")):
        check(fn, name, t)
for fn in ("alone.pt", "alone-legacy.pt"):
    alone = subprocess.run([cat, f"{d}/{fn}"], check=True, capture_output=True, text=True).stdout.strip()
    if alone != repr(torch.load(f"{d}/{fn}").numpy()):
        print(f"{fn}: {alone}"); bad += 1
sys.exit(bad)
PY

# ----- nothing in a pickle runs -----
for f in evil.pt evil-legacy.pt; do
	"$CAT" "$D/$f" >"$WORK/evil" 2>&1 || tfs_fail "$f: $(cat "$WORK/evil")"
	[ -e "$D/pwned" ] && tfs_fail "reading $f ran os.system"
	grep -q "^w " "$WORK/evil" || tfs_fail "$f's tensor w is not listed: $(cat "$WORK/evil")"
done

# ----- complex tensors: listed with their size, not decoded -----
"$TORCH_PY" - "$D" <<'PY' || tfs_fail "torch could not write the complex tensors"
import sys, torch
d = sys.argv[1]
c = {"c": torch.tensor([1 + 2j, 3 - 4j]), "cd": torch.ones(2, 2, dtype=torch.complex128)[:, 1],
     "f": torch.tensor([0.5, -1.0])}
torch.save(c, f"{d}/complex.pt")
torch.save(c, f"{d}/complex-legacy.pt", _use_new_zipfile_serialization=False)
PY
for f in complex.pt complex-legacy.pt; do
	"$CAT" "$D/$f" >"$WORK/list" 2>&1 || tfs_fail "$f: $(cat "$WORK/list")"
	awk '$1 == "c" && $2 == "complex64" && $3 == "(2,)" && $5 == 16 { c = 1 }
	     $1 == "cd" && $2 == "complex128" && $5 == 48 && $7 == "(2,)" { cd = 1 }
	     END { exit !(c && cd) }' "$WORK/list" ||
		tfs_fail "$f: complex tensors not listed with dtype and bytes: $(cat "$WORK/list")"
	"$CAT" -t c "$D/$f" >"$WORK/out" 2>&1 && tfs_fail "$f: -t c printed a complex tensor: $(cat "$WORK/out")"
	grep -q "dtype 'complex64', which tensorfs-cat does not decode" "$WORK/out" ||
		tfs_fail "$f: -t c says: $(cat "$WORK/out")"
	tfs_eq "$f: -t f" "array([ 0.5, -1. ], dtype=float32)" "$("$CAT" -t f "$D/$f")"
done

# ----- on the mount: the attributes, and the same output -----
cp "$D/ckpt.pt" "$D/alone.pt" "$D/ckpt-legacy.pt" "$D/alone-legacy.pt" "$MNT/" ||
	tfs_fail "cannot copy to the mount"
xval() { getfattr --only-values -n "$1" "$2" 2>/dev/null; }
for x in "" -legacy; do
	tfs_eq "user.tensor.dtype of a tensor saved alone$x" fp64 "$(xval user.tensor.dtype "$MNT/alone$x.pt")"
	tfs_eq "user.tensor.shape of a tensor saved alone$x" 2,2 "$(xval user.tensor.shape "$MNT/alone$x.pt")"
	xval user.tensor.dtype "$MNT/ckpt$x.pt" | grep -qx "bf16: bf16" ||
		tfs_fail "user.tensor.dtype of ckpt$x.pt lacks 'bf16: bf16': $(xval user.tensor.dtype "$MNT/ckpt$x.pt")"
	xval user.tensor.shape "$MNT/ckpt$x.pt" | grep -qx "t: 6,4" ||
		tfs_fail "user.tensor.shape of ckpt$x.pt lacks 't: 6,4'"
	for a in "" "-t t" "-t cols" "-t optimizer.state.0.exp_avg" "--stats"; do
		# shellcheck disable=SC2086
		"$CAT" $a "$D/ckpt$x.pt" | sed "s|$D/|DIR/|" >"$WORK/off"
		# shellcheck disable=SC2086
		"$CAT" $a "$MNT/ckpt$x.pt" | sed "s|$MNT/|DIR/|" >"$WORK/on"
		cmp -s "$WORK/off" "$WORK/on" ||
			tfs_fail "tensorfs-cat $a ckpt$x.pt differs on the mount: $(diff "$WORK/off" "$WORK/on" | head -5)"
	done
	tfs_eq "alone$x.pt on the mount" "$("$CAT" "$D/alone$x.pt")" "$("$CAT" "$MNT/alone$x.pt")"
done
tfs_umount
tfs_fsck_clean
tfs_pass
