#!/usr/bin/env python3
"""markdown.py: the table of a tools/bench.sh run as Markdown, for README.

  tools/bench/markdown.py OUTDIR/results.json

prints the same rows as table.txt (median, min-max, x raw, x ext4, CPU
seconds per GB and tensorfs's over ext4's, GB/s per daemon core) as a
Markdown table, each tensorfs target (one per FUSE transport) with
columns of its own, then the memory line and the run's facts (date,
commit, kernel, load).  Stdlib only.
"""

import json
import sys


def rate(x):
    if x is None:
        return "-"
    return "%.0f" % x if x >= 10 else "%.1f" % x


def cell(d):
    if not d or d.get("median") is None:
        return "-"
    s = rate(d["median"])
    if len(d.get("runs", [])) > 1:
        s += " (%s-%s)" % (rate(d["min"]), rate(d["max"]))
    return s


def num(x):
    return "-" if x is None else "%.2f" % x


def cpu(d):
    return num(d.get("cpu_s_per_gb")) if d else "-"


def main(path):
    r = json.load(open(path))
    # results.json before several transports: raw, ext4, tfs, the ratios
    # on the test
    tfs = [g for g in r.get("targets", [{"id": "tfs", "kind": "tensorfs",
                                         "label": "tensorfs"}])
           if g["kind"] == "tensorfs"]
    one = len(tfs) == 1
    name = {g["id"]: g["label"] for g in tfs}

    def pre(g, s):
        return s if one else "%s %s" % (name[g["id"]], s)
    head = ["", "test", "unit", "raw file", "ext4"]
    head += [g["label"] for g in tfs]
    for g in tfs:
        head += [pre(g, "x raw"), pre(g, "x ext4")]
    head += ["CPU s/GB raw", "ext4"] + [g["label"] for g in tfs]
    head += ["%s x ext4" % g["label"] for g in tfs]
    head += ["%s GB/s per daemon core" % g["label"] for g in tfs]
    print(("| " + " | ".join(head) + " |").replace("|  |", "| |", 1))
    print("|---|---|---|" + "---:|" * (len(head) - 3))
    for t in r["tests"]:
        tg = t["targets"]

        def ratio(g, k):
            d = tg.get(g["id"]) or {}
            return num(d[k] if k in d else (t.get(k) if one else None))
        row = [t["group"], t["label"], t["unit"], cell(tg.get("raw")),
               cell(tg.get("ext4"))]
        row += [cell(tg.get(g["id"])) for g in tfs]
        for g in tfs:
            row += [ratio(g, "x_raw"), ratio(g, "x_ext4")]
        row += [cpu(tg.get("raw")), cpu(tg.get("ext4"))]
        row += [cpu(tg.get(g["id"])) for g in tfs]
        row += [ratio(g, "cpu_x_ext4") for g in tfs]
        row += [ratio(g, "gb_s_per_daemon_core") for g in tfs]
        print("| " + " | ".join(row) + " |")
    m = r["memory"]
    print()
    if m.get("vmhwm_kb_max"):
        print("i: the daemon's VmHWM was at most %d kB over %d mounts; its "
              "bound is %s kB (%s)." % (m["vmhwm_kb_max"],
                                        len(m["vmhwm_kb_per_mount"]),
                                        m["bound_kb"], m["bound"]))
        print()
    meta = r["meta"]
    for k in ("date", "commit", "binaries", "kernel", "cpus", "disk", "ext4",
              "load_start", "load_end", "first_touch_start",
              "first_touch_end", "transports", "sizes", "elapsed_s"):
        if k in meta:
            print("- %s: %s" % (k, meta[k]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) != 2:
        print("usage: markdown.py RESULTS_JSON (see --help)", file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(main(sys.argv[1]))
    except (OSError, ValueError) as e:
        print("markdown.py: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
