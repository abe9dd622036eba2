#!/bin/bash
# Description: tensorfs-cat on files numpy wrote (np.save: fp64, fp32,
# fp16, int64, bool, 3-D, Fortran order, big-endian, a scalar, empty, a
# 1e6-element array that is summarised; also read from a pipe or
# standard input), on np.savez and np.savez_compressed files (each array
# by name, a string array listed but not printed, deflated arrays
# inflated and checked, a damaged one refused), on a .safetensors file written by
# hand (BF16, F8_E4M3, I64, __metadata__) and on raw files described by
# the user.tensor.dtype/shape xattrs: the printed text is numpy's repr,
# --json values are numpy's exactly, --stats agrees with numpy (min, max,
# mean, std to 1e-6, NaN/Inf/zero counts exact), a 10 GiB sparse file is
# counted in seconds, and errors exit 1 (data) or 2 (usage) with a message
# that says what to fix.  No mount: tensorfs's own xattrs are tested by
# test-xattr.sh.
. "$(dirname "$0")/lib.sh"

CAT="$TFS_BIN/tensorfs-cat"
[ -x "$CAT" ] || tfs_fail "no tensorfs-cat in $TFS_BIN"
tfs_need_numpy
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-$TEST_NAME.XXXXXX")
cd "$WORK" || tfs_fail "cannot cd to $WORK"

# ----- 1. the files -----
"$PY" - <<'EOF' || tfs_fail "cannot write the test files with numpy"
import json, struct
import numpy as np

r = np.random.default_rng(5)
np.save("f32.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
np.save("f32b.npy", ((np.arange(12, dtype=np.float32) - 5) / 7).reshape(3, 4))
np.save("f16.npy", np.array([1, 0.1, 65504, 2**-24, -0.0, np.inf, -np.inf,
                             np.nan, 3.14159], dtype=np.float16))
np.save("f64.npy", np.array([1e-300, 1 / 3, -2.5e10, np.nan, 0.0]))
np.save("i64.npy", np.array([0, -1, 2**63 - 1, -2**63, 42], dtype=np.int64))
np.save("bool.npy", np.array([True, False, True]))
np.save("u8.npy", np.arange(250, 256, dtype=np.uint8))
np.save("cube.npy", np.arange(24, dtype=np.int32).reshape(2, 3, 4))
np.save("fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))
# big-endian: printed as numpy 1.24 prints them, the byte order not
# named; the checks compare with the array in native order, which a numpy
# that names byte orders prints the same way
np.save("bigendian.npy", (np.arange(6).reshape(3, 2) / 4).astype(">f4"))
np.save("bigendian_f8.npy", (np.arange(4) / 8).astype(">f8"))
np.save("bigendian_i8.npy", np.arange(-2, 3, dtype=">i8"))
np.save("scalar.npy", np.float32(2.5))
np.save("empty.npy", np.zeros((0, 3), dtype=np.float32))
np.save("wide.npy", r.normal(size=(5, 17)).astype(np.float32) * 1e3)
big = np.linspace(-1, 1, 1000000, dtype=np.float32)
big[10] = np.nan
big[20] = np.inf
big[30] = -np.inf
big[40] = 0
np.save("big.npy", big)
np.save("rand.npy", (r.normal(size=300000) * 3 + 1e4).astype(np.float32))
np.save("grid.npy", r.integers(-1000, 1000, size=(40, 50, 3), dtype=np.int16))

# .safetensors by hand: the safetensors package is not needed
def write_st(path, tensors, meta):
    hdr = {"__metadata__": meta}
    blobs, off = [], 0
    for name, (dt, shape, b) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

w = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
bf = np.array([1.0, -2.5, 3.140625, 2**-133], dtype=np.float32)
bf_bits = (bf.view(np.uint32) >> 16).astype("<u2")
write_st("model.safetensors", {
    "model.embed.weight": ("F32", [3, 4], w.tobytes()),
    "model.norm.bias": ("BF16", [4], bf_bits.tobytes()),
    "e4m3": ("F8_E4M3", [5], bytes([0x7e, 0x01, 0x7f, 0x08, 0x38])),
    "e5m2": ("F8_E5M2", [4], bytes([0x7b, 0x7c, 0x7d, 0x01])),
    "step": ("I64", [], struct.pack("<q", 7)),
}, {"format": "pt"})
np.save("bf.npy", bf)  # what model.norm.bias holds, for comparing
np.arange(24, dtype=np.float16).tofile("raw.bin")
EOF

# ----- 2. values: the text is numpy's repr, --json values are exact -----
"$PY" - "$CAT" <<'EOF' || tfs_fail "values differ from numpy's (see above)"
import json, math, re, subprocess, sys
import numpy as np

cat = sys.argv[1]
bad = []

def run(*args):
    p = subprocess.run([cat, *args], capture_output=True, text=True, timeout=30)
    if re.search(r"Sanitizer|runtime error:", p.stderr) or p.returncode:
        bad.append(f"tensorfs-cat {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout

def num(v):
    return float(v) if not isinstance(v, str) else float(v.replace("inf", "Infinity").replace("nan", "NaN"))

def same(x, y):
    return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))

def flat(v):
    return [x for e in v for x in flat(e)] if isinstance(v, list) else [v]

for f in ["f32.npy", "f32b.npy", "f16.npy", "f64.npy", "i64.npy", "bool.npy",
          "u8.npy", "cube.npy", "fortran.npy", "bigendian.npy",
          "bigendian_f8.npy", "bigendian_i8.npy", "scalar.npy",
          "empty.npy", "wide.npy"]:
    a = np.load(f)
    got = run(f).rstrip("\n")
    if got != repr(a.astype(a.dtype.newbyteorder("="))):
        bad.append(f"{f}: printed\n{got}\nnumpy prints\n{a!r}")
    j = json.loads(run("--json", f))
    if j["shape"] != list(a.shape):
        bad.append(f"{f} --json: shape {j['shape']}, numpy {a.shape}")
    vals = flat(j["values"])
    if a.dtype.kind in "iub":   # integers of any byte order, bool
        ok = vals == a.ravel().tolist()
    else:
        want = a.astype(np.float64).ravel()
        ok = len(vals) == want.size and all(same(num(x), float(y)) for x, y in zip(vals, want))
    if not ok:
        bad.append(f"{f} --json: values {vals[:20]}, numpy {a.ravel()[:20].tolist()}")

# summarised: the first and last 3, exactly, with "..." between them
a = np.load("big.npy")
got = run("big.npy")
if "..." not in got or "shape=(1000000,)" not in got or "dtype=float32" not in got:
    bad.append(f"big.npy: not summarised as numpy does: {got}")
want_nums = re.findall(r"[-+]?\d+\.?\d*(?:e[-+]\d+)?|nan|-?inf", repr(a).split("dtype")[0])
got_nums = re.findall(r"[-+]?\d+\.?\d*(?:e[-+]\d+)?|nan|-?inf", got.split("shape=")[0])
if got_nums != want_nums:
    bad.append(f"big.npy: numbers {got_nums}, numpy {want_nums}")
j = json.loads(run("--json", "big.npy"))
edge = [float(x) for x in np.concatenate([a[:3], a[-3:]])]
if j["values"][3] != "..." or [num(x) for x in j["values"][:3] + j["values"][4:]] != edge \
        or not j["summarised"]:
    bad.append(f"big.npy --json: {j['values']}, numpy {edge}")
g = np.load("grid.npy")
got = run("grid.npy")
if re.sub(r"\s+", " ", got.replace("shape=(40, 50, 3), ", "")).strip() != \
        re.sub(r"\s+", " ", repr(g)).strip():
    bad.append(f"grid.npy: printed\n{got}\nnumpy prints\n{g!r}")

# .safetensors: every tensor by name
st = {"model.embed.weight": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
      "model.norm.bias": np.load("bf.npy"),
      "e4m3": np.array([448, 2**-9, np.nan, 2**-6, 1]),
      "e5m2": np.array([57344, np.inf, np.nan, 2**-16]),
      "step": np.array(7)}
for name, want in st.items():
    j = json.loads(run("--json", "-t", name, "model.safetensors"))
    vals = [num(x) for x in flat(j["values"])]
    if j["shape"] != list(want.shape) or \
            not all(same(x, float(y)) for x, y in zip(vals, want.ravel())):
        bad.append(f"model.safetensors {name}: {j}, want {want.tolist()}")
got = run("-t", "model.embed.weight", "model.safetensors").rstrip("\n")
if got != repr(st["model.embed.weight"]):
    bad.append(f"model.embed.weight: printed\n{got}\nnumpy prints\n{st['model.embed.weight']!r}")
got = run("-t", "e4m3", "model.safetensors").rstrip("\n")
if got != "array([448.   ,   0.002,     nan,   0.016,   1.   ], dtype=float8_e4m3fn)":
    bad.append(f"e4m3 printed {got}")

# --stats against numpy over the finite values
for f in ["f32.npy", "f32b.npy", "f16.npy", "f64.npy", "i64.npy", "bool.npy",
          "cube.npy", "big.npy", "rand.npy", "grid.npy", "bigendian.npy"]:
    a = np.load(f)
    j = json.loads(run("--stats", "--json", f))["stats"]
    x = a.astype(np.float64).ravel()
    fin = x[np.isfinite(x)]
    want = {"count": a.size, "nan": int(np.isnan(x).sum()),
            "inf": int(np.isinf(x).sum()), "zeros": int((x == 0).sum())}
    for k, v in want.items():
        if j[k] != v:
            bad.append(f"{f} --stats: {k} {j[k]}, numpy {v}")
    if a.dtype in (np.int64, np.int32, np.int16):
        if (j["min"], j["max"]) != (int(a.min()), int(a.max())):
            bad.append(f"{f} --stats: min/max {j['min']} {j['max']}, numpy {a.min()} {a.max()}")
    for k, v in [("min", fin.min()), ("max", fin.max()), ("mean", fin.mean()), ("std", fin.std())]:
        if a.dtype == bool:
            continue
        if not math.isclose(float(j[k]), float(v), rel_tol=1e-6, abs_tol=1e-12):
            bad.append(f"{f} --stats: {k} {j[k]}, numpy {v}")

print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# standard input and pipes: what the file gives, also for a listing and
# a tensor by name (the parsers seek: a pipe is copied aside first)
for f in f32.npy big.npy model.safetensors; do
	# a listing starts with the file's name: here "-"
	"$CAT" "$f" 2>&1 | sed "s|^$f:|-:|" >"$WORK/want"
	"$CAT" - <"$f" >"$WORK/got" 2>&1 ||
		tfs_fail "tensorfs-cat - <$f: expected exit 0, got $?"
	cmp -s "$WORK/want" "$WORK/got" ||
		tfs_fail "tensorfs-cat - <$f: expected what tensorfs-cat $f prints, got '$(head -c 300 "$WORK/got")'"
	cat "$f" | "$CAT" - >"$WORK/got" 2>&1 ||
		tfs_fail "cat $f | tensorfs-cat -: expected exit 0, got $?"
	cmp -s "$WORK/want" "$WORK/got" ||
		tfs_fail "cat $f | tensorfs-cat -: expected what tensorfs-cat $f prints, got '$(head -c 300 "$WORK/got")'"
done
"$CAT" --stats -t model.embed.weight model.safetensors >"$WORK/want" ||
	tfs_fail "tensorfs-cat --stats -t model.embed.weight failed"
"$CAT" --stats -t model.embed.weight <(cat model.safetensors) >"$WORK/got" ||
	tfs_fail "tensorfs-cat --stats -t NAME <(cat ...): expected exit 0, got $?"
cmp -s "$WORK/want" "$WORK/got" ||
	tfs_fail "tensorfs-cat --stats -t NAME of a pipe: expected what the file gives"
: | "$CAT" - >"$WORK/out" 2>"$WORK/err"
tfs_eq "tensorfs-cat - of empty input: exit" 2 "$?"
cat f32.npy | TMPDIR="$WORK/none" "$CAT" - >"$WORK/out" 2>"$WORK/err"
tfs_eq "tensorfs-cat - with TMPDIR missing: exit" 1 "$?"
tfs_expect_words "tensorfs-cat - with TMPDIR missing" "$WORK/err" "$WORK/none" TMPDIR

# the text of --stats
tfs_expect_exit 0 "--stats f32.npy" "$CAT" --stats f32.npy
tfs_expect_words "--stats f32.npy" "$WORK/out" "dtype  fp32" "shape  (3, 4)" \
	"count  12" "min    0.0" "max    11.0" "mean   5.5" "std    3.45205252953466" \
	"nan    0" "inf    0" "zeros  1"

# ----- 3. the .safetensors listing -----
tfs_expect_exit 0 "listing" "$CAT" model.safetensors
tfs_expect_words "listing" "$WORK/out" "5 tensors" "__metadata__ format = pt" \
	"model.embed.weight" "F32" "(3, 4)" "model.norm.bias" "BF16" "(4,)" \
	"F8_E4M3" "F8_E5M2" "step" "I64" "()" "--tensor NAME"
tfs_expect_exit 0 "listing --stats" "$CAT" --stats model.safetensors
tfs_expect_words "listing --stats" "$WORK/out" "max    448.0" "min    -2.5" "count  12"
tfs_expect_exit 0 "listing --json" "$CAT" --json model.safetensors
"$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["metadata"] == {"format": "pt"}, j
assert [t["name"] for t in j["tensors"]] == ["model.embed.weight", "model.norm.bias", "e4m3", "e5m2", "step"], j
assert j["tensors"][1]["dtype"] == "bf16" and j["tensors"][1]["shape"] == [4], j
' "$WORK/out" || tfs_fail "listing --json: $(cat "$WORK/out")"
tfs_expect_exit 1 "unknown tensor" "$CAT" -t model.norm.bia model.safetensors
tfs_expect_words "unknown tensor" "$WORK/err" "no tensor 'model.norm.bia'" \
	"did you mean 'model.norm.bias'"

# ----- 3b. np.savez files: listed, each array as numpy prints it -----
"$PY" - <<'EOF' || tfs_fail "cannot write the .npz files with numpy"
import numpy as np
r = np.random.default_rng(3)
np.savez("arrays.npz", np.arange(6, dtype=np.float32).reshape(2, 3),
         grads=np.array([1.5, -2.0, np.nan, np.inf], dtype=np.float16),
         fortran=np.asfortranarray(np.arange(6.0).reshape(2, 3)),
         big_endian=np.arange(5, dtype=">i4"), flags=np.array([True, False]),
         wide=r.normal(size=(4, 9)).astype(np.float32), scalar=np.float64(0.25),
         words=np.array(["ab", "c"]))
# np.savez_compressed: the same arrays deflated, plus one large enough to
# be inflated in several pieces (3 MiB) and summarised
np.savez_compressed("packed.npz", np.arange(6, dtype=np.float32).reshape(2, 3),
                    grads=np.array([1.5, -2.0, np.nan, np.inf], dtype=np.float16),
                    fortran=np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                    big_endian=np.arange(5, dtype=">i4"),
                    big=r.normal(size=(768, 1024)).astype(np.float32),
                    words=np.array(["ab", "c"]))
EOF
"$PY" - "$CAT" <<'EOF' || tfs_fail ".npz arrays differ from numpy's (see above)"
import json, re, subprocess, sys
import numpy as np

cat = sys.argv[1]
bad = []

def run(*args, rc=0):
    p = subprocess.run([cat, *args], capture_output=True, text=True, timeout=30)
    if re.search(r"Sanitizer|runtime error:", p.stderr) or p.returncode != rc:
        bad.append(f"tensorfs-cat {' '.join(args)}: exit {p.returncode} (expected {rc}): {p.stderr}")
    return p.stdout, p.stderr

for f in ("arrays.npz", "packed.npz"):
    za = np.load(f)
    for name in za.files:
        a = za[name]
        if a.dtype.kind == "U":
            continue
        got = run("-t", name, f)[0].rstrip("\n")
        a = a.astype(a.dtype.newbyteorder("="))   # as for .npy above
        # numpy 2.2 and later say the shape of a summarised array
        if a.size > 1000 and not repr(a).count("shape="):
            got = got.replace(f"shape={a.shape}, ", "")
        if got != repr(a):
            bad.append(f"{f} {name}: printed\n{got}\nnumpy prints\n{a!r}")
        j = json.loads(run("--json", "-t", name, f)[0])
        if j["shape"] != list(a.shape):
            bad.append(f"{f} {name} --json: shape {j['shape']}, numpy {a.shape}")
zp = np.load("packed.npz")
listing = json.loads(run("--json", "packed.npz")[0])
names = [t["name"] for t in listing["tensors"]]
if names != zp.files or not all(t.get("deflated") for t in listing["tensors"]):
    bad.append(f"packed.npz --json listing: {listing}")
s = json.loads(run("--stats", "--json", "-t", "big", "packed.npz")[0])["stats"]
b = zp["big"].astype(np.float64)
if abs(s["mean"] - b.mean()) > 1e-6 or s["min"] != b.min() or s["max"] != b.max():
    bad.append(f"packed.npz big --stats: {s}, numpy mean {b.mean()} min {b.min()} max {b.max()}")
st = run("--stats", "packed.npz")[0]
if st.count("\n") < len(zp.files) + 2 or "deflated" not in st:
    bad.append(f"packed.npz --stats listing: {st}")
z = np.load("arrays.npz")
listing = json.loads(run("--json", "arrays.npz")[0])
names = [t["name"] for t in listing["tensors"]]
if listing["format"] != "npz" or names != z.files:
    bad.append(f"arrays.npz --json listing: {listing['format']} {names}, numpy {z.files}")
words = [t for t in listing["tensors"] if t["name"] == "words"]
if not words or words[0]["npy_dtype"] != "<U2" or words[0]["shape"] != [2]:
    bad.append(f"arrays.npz: the string array listed as {words}")
s = json.loads(run("--stats", "--json", "-t", "grads", "arrays.npz")[0])["stats"]
if (s["nan"], s["inf"], s["min"], s["max"]) != (1, 1, -2.0, 1.5):
    bad.append(f"arrays.npz grads --stats: {s}")
out, err = run("-t", "words", "arrays.npz", rc=1)
if "'<U2'" not in err or "does not decode" not in err:
    bad.append(f"-t words: {err}")
# a deflated array whose data was damaged: refused, naming it
d = bytearray(open("packed.npz", "rb").read())
i = d.find(b"big.npy") + 400
d[i] ^= 0x55
open("damaged.npz", "wb").write(bytes(d))
out, err = run("-t", "big", "damaged.npz", rc=1)
if "'big'" not in err or not ("corrupt" in err or "inflates" in err):
    bad.append(f"damaged.npz -t big: {err}")
out, err = run("-t", "grad", "arrays.npz", rc=1)
if "did you mean 'grads'" not in err:
    bad.append(f"-t grad: {err}")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
tfs_expect_exit 0 ".npz listing" "$CAT" arrays.npz
tfs_expect_words ".npz listing" "$WORK/out" "np.savez file, 8 arrays" "arr_0" "<f4" \
	"(2, 3)" "grads" "<f2" "(4,)" "words" "<U2" "--tensor NAME"
tfs_expect_exit 0 "np.savez_compressed listing" "$CAT" packed.npz
tfs_expect_words "np.savez_compressed listing" "$WORK/out" \
	"np.savez_compressed file, 6 arrays" "big" "(768, 1024)" deflated
# a deflated array is inflated under TMPDIR: none there, a clear refusal
TMPDIR="$WORK/none" "$CAT" -t grads packed.npz >"$WORK/out" 2>"$WORK/err"
tfs_eq "np.savez_compressed with TMPDIR missing: exit" 1 "$?"
tfs_expect_words "np.savez_compressed with TMPDIR missing" "$WORK/err" "$WORK/none" TMPDIR

# ----- 4. raw files described by xattrs -----
if setfattr -n user.tfs.probe -v 1 raw.bin 2>/dev/null; then
	setfattr -n user.tensor.dtype -v F16 raw.bin
	tfs_expect_exit 0 "xattr dtype" "$CAT" --json raw.bin
	"$PY" -c '
import json, sys, numpy as np
j = json.load(open(sys.argv[1]))
assert j["dtype"] == "fp16" and j["shape"] == [24], j
assert j["values"] == np.arange(24.0).tolist(), j
' "$WORK/out" || tfs_fail "xattr dtype: $(cat "$WORK/out")"
	setfattr -n user.tensor.shape -v "(2, 3, 4)" raw.bin
	tfs_expect_exit 0 "xattr shape" "$CAT" raw.bin
	"$PY" -c '
import sys, numpy as np
a = np.fromfile("raw.bin", dtype="<f2").reshape(2, 3, 4)
got = open(sys.argv[1]).read().rstrip("\n")
assert got == repr(a), (got, repr(a))
' "$WORK/out" || tfs_fail "xattr shape: $(cat "$WORK/out")"
	# the flags win over the xattrs
	tfs_expect_exit 0 "--shape over xattr" "$CAT" --shape 4,6 raw.bin
	tfs_expect_words "--shape over xattr" "$WORK/out" "[18., 19., 20., 21., 22., 23.]]"
	tfs_expect_exit 0 "--dtype over xattr" "$CAT" --dtype int16 raw.bin
	tfs_expect_words "--dtype over xattr" "$WORK/out" "15360" "dtype=int16"
	setfattr -n user.tensor.shape -v 5,5 raw.bin
	tfs_expect_exit 1 "xattr shape mismatch" "$CAT" raw.bin
	tfs_expect_words "xattr shape mismatch" "$WORK/err" "needs 50 bytes" "48 bytes" \
		"user.tensor.shape"
	setfattr -n user.tensor.dtype -v fp13 raw.bin
	tfs_expect_exit 1 "bad xattr dtype" "$CAT" raw.bin
	tfs_expect_words "bad xattr dtype" "$WORK/err" "user.tensor.dtype 'fp13'"
	setfattr -x user.tensor.dtype raw.bin
	setfattr -x user.tensor.shape raw.bin
else
	tfs_log "the file system of $WORK has no user xattrs: the xattr part is not tested"
fi

# ----- 5. 10 GiB, sparse: counted without reading the holes -----
truncate -s 10G sparse.bin || tfs_fail "truncate -s 10G failed"
tfs_expect_exit 0 "10 GiB --stats" "$CAT" --dtype fp32 --stats --json sparse.bin
"$PY" -c '
import json, sys
s = json.load(open(sys.argv[1]))["stats"]
n = 10 * 2**30 // 4
assert s["count"] == n and s["zeros"] == n and s["finite"] == n, s
assert s["min"] == 0 and s["max"] == 0 and s["mean"] == 0 and s["std"] == 0, s
assert s["nan"] == 0 and s["inf"] == 0, s
' "$WORK/out" || tfs_fail "10 GiB --stats: $(cat "$WORK/out")"
tfs_expect_exit 0 "10 GiB values" "$CAT" --dtype bf16 --shape 65536,81920 sparse.bin
tfs_expect_words "10 GiB values" "$WORK/out" "[0., 0., 0., ..., 0., 0., 0.]," \
	"shape=(65536, 81920), dtype=bfloat16)"
# data in the middle of the holes is read
printf '\x00\x00\x80\x3f\x00\x00\xc0\x7f' | dd of=sparse.bin bs=1 seek=$((5 << 30)) conv=notrunc status=none
tfs_expect_exit 0 "10 GiB with data" "$CAT" --dtype fp32 --stats sparse.bin
tfs_expect_words "10 GiB with data" "$WORK/out" "count  2684354560" "max    1.0" \
	"nan    1" "zeros  2684354558"
rm -f sparse.bin

# ----- 6. errors -----
tfs_expect_exit 1 "shape mismatch" "$CAT" --dtype fp16 --shape 5,5 raw.bin
tfs_expect_words "shape mismatch" "$WORK/err" "'raw.bin'" "shape 5,5 of fp16 needs 50 bytes" \
	"48 bytes of data" "--shape"
tfs_expect_exit 1 ".npy shape mismatch" "$CAT" --shape 5 f32.npy
tfs_expect_words ".npy shape mismatch" "$WORK/err" "needs 20 bytes" "48 bytes"
tfs_expect_exit 1 "odd bytes" "$CAT" --dtype fp32 --offset 2 raw.bin
tfs_expect_words "odd bytes" "$WORK/err" "46 bytes" "not a whole number of fp32"
tfs_expect_exit 2 "unknown dtype" "$CAT" --dtype fp13 raw.bin
tfs_expect_words "unknown dtype" "$WORK/err" "'fp13' is not a tensor type" "bf16"
tfs_expect_exit 2 "no dtype" "$CAT" raw.bin
tfs_expect_words "no dtype" "$WORK/err" "--dtype" "user.tensor.dtype"
tfs_expect_exit 2 "bad shape" "$CAT" --dtype fp16 --shape 4x6 raw.bin
tfs_expect_words "bad shape" "$WORK/err" "'4x6' is not a shape"
tfs_expect_exit 1 "missing file" "$CAT" "$WORK/none.npy"
tfs_expect_words "missing file" "$WORK/err" "none.npy" "cannot open"
tfs_expect_exit 2 "two files" "$CAT" f32.npy f16.npy
tfs_expect_exit 2 "unknown option" "$CAT" --bogus f32.npy
tfs_expect_words "unknown option" "$WORK/err" "'--bogus'" "--help"
[ "$(wc -l <"$WORK/err")" -eq 2 ] ||
	tfs_fail "unknown option: expected getopt's line and 'Try ...', got '$(cat "$WORK/err")'"
tfs_expect_exit 2 "--tensor on .npy" "$CAT" -t x f32.npy
head -c 100 f32.npy >trunc.npy
tfs_expect_exit 1 "truncated .npy" "$CAT" trunc.npy
tfs_expect_words "truncated .npy" "$WORK/err" "trunc.npy" "truncated"
head -c 150 f32.npy >short.npy
tfs_expect_exit 1 "short .npy" "$CAT" short.npy
tfs_expect_words "short .npy" "$WORK/err" "needs 48 bytes"
head -c 200 model.safetensors >trunc.safetensors
tfs_expect_exit 1 "truncated .safetensors" "$CAT" trunc.safetensors
# every truncation of a header: never a crash; a .npy cut anywhere after
# its magic is a damaged file, exit 1 as every damaged file (it was 2, a
# usage error, while the 10-byte preamble was incomplete); before the
# magic is whole it reads as raw data without a dtype (2)
for n in 0 1 5 6 7 8 9 10 11 12 20 64 127 128; do
	head -c $n f32b.npy >cut.npy
	if [ "$n" -ge 6 ]; then
		tfs_expect_exit 1 "f32b.npy cut to $n bytes" "$CAT" cut.npy
		# within the 128-byte header: said so
		[ "$n" -ge 128 ] ||
			tfs_expect_words "f32b.npy cut to $n bytes" "$WORK/err" "cut.npy" "truncated"
	else
		tfs_expect_exit "1|2" "f32b.npy cut to $n bytes" "$CAT" cut.npy
	fi
	head -c $n model.safetensors >cut.st
	tfs_expect_exit "0|1|2" "model.safetensors cut to $n bytes" "$CAT" cut.st
done
# usage errors exit 2 (the convention of tensorfs(8)'s EXIT STATUS)
tfs_expect_exit 2 "no FILE" "$CAT"
tfs_expect_exit 2 "bad --offset" "$CAT" --dtype fp32 --offset lots raw.bin
tfs_expect_words "bad --offset" "$WORK/err" "'lots'" "--help"
tfs_expect_exit 0 "--help" "$CAT" --help
tfs_expect_words "--help" "$WORK/out" "Exit status" "user.tensor.dtype" "--stats" \
	"--tensor" ".safetensors"
tfs_expect_exit 0 "-V" "$CAT" -V
tfs_pass
