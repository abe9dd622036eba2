#!/usr/bin/python3
# gen.py: write the np.savez fixtures of this directory with numpy
# (Debian's python3-numpy; 1.24.2 wrote the committed ones):
#
#   /usr/bin/python3 tests/data/npz/gen.py tests/data/npz
#
# Small files whose arrays tests/unit/test_torch.c checks by name, dtype,
# shape and value (change them only with that test); they also seed the
# fuzzing of the zip-based parsers.
import os
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else "."
# a positional array (arr_0), a Fortran-ordered one, a big-endian one, a
# float16 with a NaN, a scalar, and strings (a dtype not decoded)
np.savez(os.path.join(out, "arrays.npz"),
         np.arange(6, dtype=np.float32).reshape(2, 3),
         fortran=np.asfortranarray(np.arange(6.0).reshape(2, 3)),
         big_endian=np.arange(5, dtype=">i4"),
         half=np.array([1.5, -2.0, np.nan], dtype=np.float16),
         scalar=np.float64(0.25),
         words=np.array(["ab", "c"]))
# np.savez_compressed deflates every entry: headers are inflated for the
# listing, an array whole to be read
np.savez_compressed(os.path.join(out, "packed.npz"), x=np.arange(4))
