#!/usr/bin/env python3
"""markdown.py: the table of a tools/bench.sh run as Markdown, for README.

  tools/bench/markdown.py OUTDIR/results.json

prints the same rows as table.txt (median, min-max, x raw, x ext4, CPU
seconds per GB and tensorfs's over ext4's) as a Markdown table, then the
memory line and the run's facts (date, commit, kernel, load).  Stdlib only.
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
    print("| | test | unit | raw file | ext4 | tensorfs | x raw | x ext4 "
          "| CPU s/GB raw | ext4 | tensorfs | tensorfs x ext4 |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in r["tests"]:
        tg = t["targets"]
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
              % (t["group"], t["label"], t["unit"], cell(tg.get("raw")),
                 cell(tg.get("ext4")), cell(tg.get("tfs")), num(t["x_raw"]),
                 num(t["x_ext4"]), cpu(tg.get("raw")), cpu(tg.get("ext4")),
                 cpu(tg.get("tfs")), num(t["cpu_x_ext4"])))
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
              "load_start", "load_end", "sizes", "elapsed_s"):
        if k in meta:
            print("- %s: %s" % (k, meta[k]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: markdown.py RESULTS_JSON")
    sys.exit(main(sys.argv[1]))
