#!/usr/bin/env python3
"""clients.py: the real-client steps of tools/bench.sh.

  clients.py OP PATH SIZE [--daemon PID]
  clients.py --serve

does one step to PATH and prints one JSON object on stdout: the seconds of
the timed section ("wall_s"), the bytes or operations it moved, and the
CPU seconds spent in it by this process, by the daemon PID and by the
kernel's threads (measure.py says what each counts).  Building the data
to write and importing numpy or torch happen before the timed section;
every write step ends with fsync() (and close) inside it, so the data is
on the device when the clock stops.  Each read step checks what it read
and exits 1 on a wrong byte.

With --serve it reads steps, one a line ("OP PATH SIZE [PID]", fields
separated by tabs), from stdin and answers each with one JSON line on
stdout ({"error": MESSAGE} when it failed), until end of input: numpy
and torch are then imported once for the whole benchmark, not once a
step (importing torch takes seconds).  No file stays open between steps.

OP is one of:
  mmap-write    open, ftruncate to SIZE, mmap(MAP_SHARED), copy SIZE
                bytes in 1 MiB pieces, msync, fsync, close   (stdlib)
  mmap-read     mmap(PROT_READ) and copy it out in 1 MiB pieces (stdlib)
  np-save       np.save of a float32 array of SIZE bytes, fsync
  np-load       np.load of it
  memmap-write  np.memmap(mode="w+") of SIZE bytes, fill, flush(), fsync
  memmap-read   np.memmap(mode="r") and np.array() of it (a full copy)
  torch-save    torch.save of a state dict of 16 float32 tensors of
                SIZE / 16 bytes each, fsync
  torch-load    torch.load of it
  st-write      the safetensors layout: 8-byte little-endian header
                length, the JSON header (dtype, shape, data_offsets of 16
                tensors), then the raw bytes of each tensor; fsync
  st-read       what safetensors' loader does: read the header, mmap the
                file and copy every tensor out of the map
  meta-create   PATH is a directory to make; create SIZE empty files in
                it (open O_CREAT|O_EXCL, close)
  meta-stat     stat() each of them
  meta-unlink   unlink() each, then rmdir the directory
  small-write   PATH is a directory to make; write SIZE files of 4 KiB in
                it (open O_CREAT|O_EXCL, one write, close)
  small-read    open, read and close each of them (cat of many small
                files, a loader of many shards)
"""

import json
import mmap
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402

MIB = 1 << 20
NTENSORS = 16


class ClientError(Exception):
    """A step that went wrong: wrong data read back, a bad argument."""


def fail(msg):
    raise ClientError(msg)


def fill_value(i):
    """The float32 every element of tensor i holds: exact, distinct."""
    return float(i + 1) + 0.5


# ===== stdlib mmap =====

def pattern_mib():
    """1 MiB of the bytes 0..255 repeating."""
    return bytes(range(256)) * (MIB // 256)


def mmap_write(path, size, pid):
    src = memoryview(pattern_mib())
    s0 = measure.snapshot(pid)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    mv = memoryview(mm)
    for off in range(0, size, MIB):
        n = min(MIB, size - off)
        mv[off:off + n] = src[:n]
    mv.release()
    mm.flush()
    mm.close()
    os.fsync(fd)
    os.close(fd)
    return s0, size


def mmap_read(path, size, pid):
    ref = pattern_mib()
    buf = bytearray(MIB)
    bv = memoryview(buf)
    s0 = measure.snapshot(pid)
    fd = os.open(path, os.O_RDONLY)
    if os.fstat(fd).st_size != size:
        fail("'%s' is %d bytes, expected %d" % (path, os.fstat(fd).st_size,
                                                 size))
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    mv = memoryview(mm)
    bad = None
    for off in range(0, size, MIB):
        n = min(MIB, size - off)
        bv[:n] = mv[off:off + n]
        if buf[0] != ref[0] or buf[n - 1] != ref[n - 1]:
            bad = off
    mv.release()
    mm.close()
    os.close(fd)
    if bad is not None:
        fail("'%s': wrong data in the MiB at offset %d" % (path, bad))
    return s0, size


# ===== numpy =====

def np_array(np, size):
    a = np.empty(size // 4, dtype=np.float32)
    a.fill(fill_value(0))
    a[-1] = fill_value(1)
    return a


def np_check(np, a, size, path):
    if a.nbytes != size or a[0] != fill_value(0) or a[-1] != fill_value(1) \
            or a[a.size // 2] != fill_value(0):
        fail("'%s': numpy read back wrong data" % path)


def np_save(path, size, pid):
    import numpy as np
    a = np_array(np, size)
    s0 = measure.snapshot(pid)
    with open(path, "wb") as f:
        np.save(f, a)
        f.flush()
        os.fsync(f.fileno())
    return s0, os.stat(path).st_size


def np_load(path, size, pid):
    import numpy as np
    s0 = measure.snapshot(pid)
    with open(path, "rb") as f:
        a = np.load(f)
    np_check(np, a, size, path)
    return s0, os.stat(path).st_size


def memmap_write(path, size, pid):
    import numpy as np
    a = np_array(np, size)
    s0 = measure.snapshot(pid)
    m = np.memmap(path, dtype=np.float32, mode="w+", shape=(size // 4,))
    m[:] = a
    m.flush()
    del m
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    return s0, size


def memmap_read(path, size, pid):
    import numpy as np
    s0 = measure.snapshot(pid)
    m = np.memmap(path, dtype=np.float32, mode="r", shape=(size // 4,))
    a = np.array(m)
    del m
    np_check(np, a, size, path)
    return s0, size


# ===== torch =====

def torch_save(path, size, pid):
    import torch
    n = size // 4 // NTENSORS
    sd = {"layers.%d.weight" % i: torch.full((n,), fill_value(i),
                                              dtype=torch.float32)
          for i in range(NTENSORS)}
    s0 = measure.snapshot(pid)
    with open(path, "wb") as f:
        torch.save(sd, f)
        f.flush()
        os.fsync(f.fileno())
    return s0, os.stat(path).st_size


def torch_load(path, size, pid):
    import torch
    s0 = measure.snapshot(pid)
    with open(path, "rb") as f:
        sd = torch.load(f)
    n = size // 4 // NTENSORS
    for i in range(NTENSORS):
        t = sd["layers.%d.weight" % i]
        if t.numel() != n or float(t[0]) != fill_value(i) or \
                float(t[-1]) != fill_value(i):
            fail("'%s': torch.load gave wrong data in tensor %d" % (path, i))
    return s0, os.stat(path).st_size


# ===== safetensors layout =====

def st_write(path, size, pid):
    import numpy as np
    n = size // 4 // NTENSORS
    ts = []
    for i in range(NTENSORS):
        t = np.empty(n, dtype=np.float32)
        t.fill(fill_value(i))
        ts.append(t)
    hdr = {}
    off = 0
    for i, t in enumerate(ts):
        hdr["layers.%d.weight" % i] = {"dtype": "F32", "shape": [n],
                                       "data_offsets": [off, off + t.nbytes]}
        off += t.nbytes
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)      # safetensors pads the header to 8 bytes
    s0 = measure.snapshot(pid)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for t in ts:
            f.write(memoryview(t).cast("B"))
        f.flush()
        os.fsync(f.fileno())
    return s0, os.stat(path).st_size


def st_read(path, size, pid):
    import numpy as np
    s0 = measure.snapshot(pid)
    with open(path, "rb") as f:
        hlen = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(hlen))
        mm = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
    base = 8 + hlen
    out = {}
    for name, d in hdr.items():
        a, b = d["data_offsets"]
        out[name] = np.frombuffer(mm, dtype=np.float32, count=(b - a) // 4,
                                  offset=base + a).copy()
    mm.close()
    for i in range(NTENSORS):
        t = out["layers.%d.weight" % i]
        if t[0] != fill_value(i) or t[-1] != fill_value(i):
            fail("'%s': wrong data in tensor %d" % (path, i))
    return s0, os.stat(path).st_size


# ===== metadata =====

def names(path, n):
    return [os.path.join(path, "f%06d" % i) for i in range(n)]


def meta_create(path, n, pid):
    ns = names(path, n)
    s0 = measure.snapshot(pid)
    os.mkdir(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for p in ns:
        os.close(os.open(p, flags, 0o644))
    return s0, n


def meta_stat(path, n, pid):
    ns = names(path, n)
    s0 = measure.snapshot(pid)
    for p in ns:
        os.stat(p)
    return s0, n


def meta_unlink(path, n, pid):
    ns = names(path, n)
    s0 = measure.snapshot(pid)
    for p in ns:
        os.unlink(p)
    os.rmdir(path)
    return s0, n


SMALL_FILE = 4096


def small_write(path, n, pid):
    ns = names(path, n)
    data = bytes(range(256)) * (SMALL_FILE // 256)
    s0 = measure.snapshot(pid)
    os.mkdir(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for p in ns:
        fd = os.open(p, flags, 0o644)
        if os.write(fd, data) != SMALL_FILE:
            fail("'%s': short write" % p)
        os.close(fd)
    return s0, n


def small_read(path, n, pid):
    ns = names(path, n)
    s0 = measure.snapshot(pid)
    for p in ns:
        fd = os.open(p, os.O_RDONLY)
        b = os.read(fd, 2 * SMALL_FILE)
        os.close(fd)
        if len(b) != SMALL_FILE or b[255] != 255:
            fail("'%s': read %d bytes, not what was written" % (p, len(b)))
    return s0, n


OPS = {
    "mmap-write": (mmap_write, "bytes"),
    "mmap-read": (mmap_read, "bytes"),
    "np-save": (np_save, "bytes"),
    "np-load": (np_load, "bytes"),
    "memmap-write": (memmap_write, "bytes"),
    "memmap-read": (memmap_read, "bytes"),
    "torch-save": (torch_save, "bytes"),
    "torch-load": (torch_load, "bytes"),
    "st-write": (st_write, "bytes"),
    "st-read": (st_read, "bytes"),
    "meta-create": (meta_create, "ops"),
    "meta-stat": (meta_stat, "ops"),
    "meta-unlink": (meta_unlink, "ops"),
    "small-write": (small_write, "ops"),
    "small-read": (small_read, "ops"),
}


def step(op, path, size, pid):
    """Run one step; its JSON-able result."""
    if op not in OPS:
        fail("unknown step '%s'" % op)
    fn, kind = OPS[op]
    if kind == "bytes" and (size <= 0 or size % (4 * NTENSORS * 1024)):
        fail("SIZE %d must be a positive multiple of 64 KiB" % size)
    s0, amount = fn(path, size, pid)
    d = measure.delta(s0, pid)
    d[kind] = amount
    d["op"] = op
    return d


def serve():
    for line in sys.stdin:
        f = line.rstrip("\n").split("\t")
        try:
            if len(f) not in (3, 4):
                fail("a step is OP PATH SIZE [PID], not '%s'" % line.strip())
            pid = int(f[3]) if len(f) == 4 and f[3] else None
            d = step(f[0], f[1], int(f[2]), pid)
        except Exception as e:  # noqa: BLE001 - reported to the driver
            d = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.flush()
    return 0


def main(argv):
    if argv == ["--serve"]:
        return serve()
    if len(argv) < 3 or argv[0] not in OPS:
        sys.stderr.write(__doc__)
        return 2
    op, path, size = argv[0], argv[1], int(argv[2])
    pid = None
    if len(argv) == 5 and argv[3] == "--daemon":
        pid = int(argv[4]) if argv[4] else None
    elif len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    try:
        d = step(op, path, size, pid)
    except (ClientError, OSError) as e:
        sys.stderr.write("clients.py: %s: %s\n" % (op, e))
        return 1
    json.dump(d, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
