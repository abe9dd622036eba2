#!/usr/bin/python3
# gen.py: write the torch.save fixtures of this directory with PyTorch
# (Debian's python3-torch; 1.13.1 wrote the committed ones):
#
#   /usr/bin/python3 tests/data/torch/gen.py tests/data/torch
#
# Each file is small (a few KiB) and its tensors hold values that
# tests/unit/test_torch.c and the fuzz seeds rely on; change them only
# with those tests.  expected.txt lists, for every file, each tensor's
# name, dtype, shape, strides, storage offset and its values flattened in
# C order, as torch sees them, for the tests to compare against.
import collections
import os
import sys

import torch

out = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)


def save(obj, name):
    """name, and the same in the legacy format (PyTorch before 1.6) as
    name with .legacy before its extension"""
    torch.save(obj, os.path.join(out, name))
    torch.save(obj, os.path.join(out, name[:-3] + ".legacy.pt"),
               _use_new_zipfile_serialization=False)


# the legacy format with pickle protocol 4 (FRAME, MEMOIZE, a longer
# magic number)
def save_legacy_p4(obj, name):
    torch.save(obj, os.path.join(out, name), pickle_protocol=4,
               _use_new_zipfile_serialization=False)


# a model's state_dict: nested names, several dtypes
model = torch.nn.Sequential(collections.OrderedDict([
    ("embed", torch.nn.Embedding(4, 3)),
    ("layers", torch.nn.ModuleList([torch.nn.Linear(3, 2), torch.nn.Linear(2, 2)])),
]))
sd = {"model": model.state_dict(),
      "half": torch.tensor([1.0, -0.5, 65504.0, float("inf")], dtype=torch.float16),
      "bf16": torch.tensor([1.0, -2.5, 3.140625, float("nan")], dtype=torch.bfloat16),
      "ids": torch.tensor([[0, -1], [2**62, -2**63]], dtype=torch.int64),
      "mask": torch.tensor([True, False, True]),
      "step": 7, "name": "fixture", "lr": 0.5}
save(sd, "state_dict.pt")
save_legacy_p4(sd, "state_dict.legacy-p4.pt")

# views sharing one storage: a transpose, a row, a strided slice, an
# expanded (stride 0) row
base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
save({"base": base, "t": base.t(), "row": base[1], "cols": base[:, ::2],
      "rep": base[0].expand(2, 4)}, "views.pt")

# an optimizer's state_dict, Adam's after two steps
lin = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(lin.parameters(), lr=1e-3)
for _ in range(2):
    opt.zero_grad()
    lin(torch.ones(4, 3)).pow(2).sum().backward()
    opt.step()
save({"optimizer": opt.state_dict(), "epoch": 2}, "optim.pt")

# a tensor saved alone
save(torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.float64), "tensor.pt")


def walk(obj, name, rows):
    if isinstance(obj, torch.Tensor):
        rows.append((name, obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            walk(v, f"{name}.{k}" if name else str(k), rows)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            walk(v, f"{name}.{i}" if name else str(i), rows)


with open(os.path.join(out, "expected.txt"), "w") as f:
    for fn in ("state_dict.pt", "views.pt", "optim.pt", "tensor.pt",
               "state_dict.legacy.pt", "views.legacy.pt", "optim.legacy.pt",
               "tensor.legacy.pt", "state_dict.legacy-p4.pt"):
        rows = []
        walk(torch.load(os.path.join(out, fn)), "", rows)
        for name, t in rows:
            vals = " ".join(repr(float(v)) for v in t.flatten().tolist())
            f.write(f"{fn} {name or '-'} {str(t.dtype)[6:]} "
                    f"{','.join(map(str, t.shape)) or '()'} "
                    f"{','.join(map(str, t.stride())) or '()'} "
                    f"{t.storage_offset()} {vals}\n")
