#!/usr/bin/env python3
"""report.py: the table, JSON and plot of tools/bench.sh (stdlib only).

  report.py MANIFEST OUTDIR

MANIFEST (written by bench.sh) has tab-separated lines:
  target ID KIND LABEL                      a target, in table order; KIND
        is raw, ext4 or tensorfs (one target per FUSE transport: tfs,
        tfs-uring); without target lines: raw, ext4 and tfs
  test  ID GROUP UNIT LABEL                 a test, in table order
  run   ID TARGET REP KIND FILE FIO_JSON CMD  one measured run; KIND is
        fio (FILE is measure.py's record and FIO_JSON fio's report), client
        (FILE is clients.py's output) or dsaio (FILE is measure.py's record
        with dsaio's output); FIO_JSON is empty but for fio; CMD is the
        command line
  skip  ID TARGET REASON                    a run that could not be done
  hwm   PID KB [TARGET]                     a daemon's VmHWM at unmount
  meta  KEY VALUE                           facts about the run (strings)

It writes OUTDIR/results.json, OUTDIR/table.txt and OUTDIR/ratios.dat
(the plot's data), and prints the table.  Each test's figure is the median
of its runs, with their min-max; "x raw" and "x ext4" are each tensorfs
target's median over the raw file's and ext4's (for a "warm" row: over
their cold read of the same data).  CPU s/GB = (client + daemon + kernel
threads) CPU seconds over 10^9 bytes moved, the median of the runs'
ratios.  GB/s per daemon core (tensorfs targets, rows that move bytes) =
10^9 bytes moved over the daemon's CPU seconds (utime + stime), the
median of the runs' ratios; a run whose daemon took no measurable CPU
(under a clock tick) gives none.

In results.json each tensorfs target's entry of a test holds its own
x_raw, x_ext4, cpu_x_ext4 and gb_s_per_daemon_core (with _min, _max);
the test's own x_raw, x_ext4 and cpu_x_ext4 are those of the first
tensorfs target, as before there were several.
"""

import json
import os
import re
import sys

DEFAULT_TARGETS = [{"id": "raw", "kind": "raw", "label": "raw file"},
                   {"id": "ext4", "kind": "ext4", "label": "ext4"},
                   {"id": "tfs", "kind": "tensorfs", "label": "tensorfs"}]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def load_run(kind, path, fio_json):
    """dict: seconds, bytes or ops, cpu parts; raises on a bad record."""
    with open(path) as f:
        rec = json.load(f)
    out = {
        "client_cpu_s": rec.get("client_cpu_s"),
        "daemon_cpu_s": rec.get("daemon_cpu_s"),
        "kthread_cpu_s": rec.get("kthread_cpu_s"),
    }
    if kind == "fio":
        with open(fio_json) as f:
            job = json.load(f)["jobs"][0]
        if job.get("error"):
            raise ValueError("fio reported error %s" % job["error"])
        side = job["read"] if job["read"]["io_bytes"] else job["write"]
        out["bytes"] = side["io_bytes"]
        out["seconds"] = side["runtime"] / 1000.0
        out["iops"] = side["iops"]
        # fio's own CPU figure covers its job only, not its start-up
        # (about 0.2 s, which would weigh on 1 GiB): usr_cpu and sys_cpu
        # are percents of the job's runtime
        out["client_process_cpu_s"] = out["client_cpu_s"]
        out["client_cpu_s"] = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * \
            job["job_runtime"] / 1000.0
    elif kind == "client":
        out["seconds"] = rec["wall_s"]
        if "ops" in rec:
            out["ops"] = rec["ops"]
        else:
            out["bytes"] = rec["bytes"]
    elif kind == "dsaio":
        m = re.search(r"dsaio: \w+ .*: (\d+) files x (\d+) bytes.*?: "
                      r"([0-9.]+) s,", rec.get("stdout") or "")
        if not m:
            raise ValueError("no dsaio summary line in %s" % path)
        out["bytes"] = int(m.group(1)) * int(m.group(2))
        out["seconds"] = float(m.group(3))
    else:
        raise ValueError("unknown run kind %s" % kind)
    if out["seconds"] <= 0:
        out["seconds"] = 1e-6
    amount = out.get("ops", out.get("bytes"))
    out["rate"] = amount / out["seconds"] / (1 if "ops" in out else 1e6)
    if "bytes" in out and out["client_cpu_s"] is not None:
        cpu = out["client_cpu_s"] + (out["daemon_cpu_s"] or 0) + \
            (out["kthread_cpu_s"] or 0)
        out["cpu_s"] = cpu
        out["cpu_s_per_gb"] = cpu / (out["bytes"] / 1e9) if out["bytes"] \
            else None
    if "bytes" in out and out["daemon_cpu_s"]:
        # what one core of daemon moves: bytes over its CPU seconds
        out["gb_s_per_daemon_core"] = out["bytes"] / 1e9 / \
            out["daemon_cpu_s"]
    return out


def main(manifest, outdir):
    tests, order, meta, hwm = {}, [], {}, []
    targets, hwm_of = [], {}
    errors = []
    for line in open(manifest):
        f = line.rstrip("\n").split("\t")
        if f[0] == "target":
            targets.append({"id": f[1], "kind": f[2], "label": f[3]})
        elif f[0] == "test":
            tid, group, unit, label = f[1:5]
            tests[tid] = {"id": tid, "group": group, "unit": unit,
                          "label": label, "targets": {}}
            order.append(tid)
        elif f[0] == "run":
            tid, target, rep, kind, path, fio_json, cmd = f[1:8]
            t = tests[tid]["targets"].setdefault(target, {"runs": []})
            t.setdefault("commands", [])
            if cmd not in t["commands"]:
                t["commands"].append(cmd)
            try:
                r = load_run(kind, path, fio_json)
            except (OSError, ValueError, KeyError) as e:
                errors.append("%s on %s, run %s: %s" % (tid, target, rep, e))
                continue
            r["rep"] = int(rep)
            t["runs"].append(r)
        elif f[0] == "skip":
            tid, target, reason = f[1:4]
            tests[tid]["targets"].setdefault(target, {"runs": []})[
                "skipped"] = reason
        elif f[0] == "hwm":
            hwm.append(int(f[2]))
            if len(f) > 3:
                hwm_of[f[3]] = max(hwm_of.get(f[3], 0), int(f[2]))
        elif f[0] == "meta":
            meta[f[1]] = f[2]
    if errors:
        for e in errors:
            sys.stderr.write("report.py: %s\n" % e)
        return 1

    for tid in order:
        t = tests[tid]
        for target, d in t["targets"].items():
            rates = [r["rate"] for r in d["runs"]]
            d["median"] = median(rates)
            d["min"] = min(rates) if rates else None
            d["max"] = max(rates) if rates else None
            cpus = [r["cpu_s_per_gb"] for r in d["runs"]
                    if r.get("cpu_s_per_gb") is not None]
            d["cpu_s_per_gb"] = median(cpus)
            d["cpu_s_per_gb_min"] = min(cpus) if cpus else None
            d["cpu_s_per_gb_max"] = max(cpus) if cpus else None
            for part in ("client_cpu_s", "daemon_cpu_s", "kthread_cpu_s"):
                xs = [r[part] for r in d["runs"] if r.get(part) is not None]
                d[part + "_median"] = median(xs)
    targets = targets or DEFAULT_TARGETS
    tfs_ids = [g["id"] for g in targets if g["kind"] == "tensorfs"]
    # ratios: each tensorfs target over raw and ext4; a warm row against
    # the cold one
    for tid in order:
        t = tests[tid]
        ref = tests.get(tid[:-len("-warm")]) if tid.endswith("-warm") else t
        for g in tfs_ids:
            d = t["targets"].get(g)
            if d is None:
                continue
            tfs = d.get("median")
            for base in ("raw", "ext4"):
                b = ref["targets"].get(base, {}).get("median") if ref \
                    else None
                d["x_" + base] = tfs / b if tfs is not None and b else None
            c_t = d.get("cpu_s_per_gb")
            c_e = (ref or t)["targets"].get("ext4", {}).get("cpu_s_per_gb")
            d["cpu_x_ext4"] = c_t / c_e if c_t is not None and c_e else None
            gbs = [r["gb_s_per_daemon_core"] for r in d["runs"]
                   if r.get("gb_s_per_daemon_core") is not None]
            d["gb_s_per_daemon_core"] = median(gbs)
            d["gb_s_per_daemon_core_min"] = min(gbs) if gbs else None
            d["gb_s_per_daemon_core_max"] = max(gbs) if gbs else None
        first = t["targets"].get(tfs_ids[0], {}) if tfs_ids else {}
        for k in ("x_raw", "x_ext4", "cpu_x_ext4"):
            t[k] = first.get(k)
        t["ratio_against"] = "cold read" if ref is not t else "same test"

    bound = int(meta["hwm_bound_kb"]) if meta.get("hwm_bound_kb") else None
    memory = {
        "vmhwm_kb_max": max(hwm) if hwm else None,
        "vmhwm_kb_per_mount": hwm,
        "bound_kb": bound,
        "bound": meta.get("hwm_bound_text"),
        "within_bound": (max(hwm) <= bound) if hwm and bound else None,
        "vmhwm_kb_max_per_target": hwm_of,
    }
    result = {"meta": meta, "memory": memory, "targets": targets,
              "tests": [tests[tid] for tid in order]}
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    text = table(result)
    with open(os.path.join(outdir, "table.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)

    with open(os.path.join(outdir, "ratios.dat"), "w") as f:
        # a header line (gnuplot's columnheader), then per test: each
        # tensorfs target's median over raw and over ext4
        f.write("test")
        for g in targets:
            if g["kind"] == "tensorfs":
                f.write(' "%s x raw file" "%s x ext4"' % (g["label"],
                                                          g["label"]))
        f.write("\n")
        for tid in order:
            t = tests[tid]
            xs = []
            for g in tfs_ids:
                d = t["targets"].get(g, {})
                xs += [d.get("x_raw"), d.get("x_ext4")]
            if all(x is None for x in xs):
                continue
            f.write('"%s" %s\n' % (t["id"], " ".join(fmt_num(x, "NaN")
                                                     for x in xs)))
    return 0


def fmt_num(x, none="-"):
    return none if x is None else "%.3f" % x


def fmt_rate(x):
    if x is None:
        return "-"
    return "%.0f" % x if x >= 10 else "%.1f" % x


def cell(d):
    if not d:
        return "-"
    if d.get("skipped"):
        return "skipped"
    if d.get("median") is None:
        return "-"
    s = fmt_rate(d["median"])
    if len(d["runs"]) > 1:
        s += " (%s-%s)" % (fmt_rate(d["min"]), fmt_rate(d["max"]))
    return s


def cpu_cell(d):
    if not d or d.get("cpu_s_per_gb") is None:
        return "-"
    return "%.2f" % d["cpu_s_per_gb"]


def ratio_cell(d, key):
    x = (d or {}).get(key)
    return "-" if x is None else "%.2f" % x


def table(result):
    tfs = [g for g in result["targets"] if g["kind"] == "tensorfs"]
    one = len(tfs) == 1

    def pre(g, name):
        # one tensorfs target: the columns as they always were
        return name if one else "%s %s" % (g["id"], name)
    rows = []
    for t in result["tests"]:
        tg = t["targets"]
        row = [t["group"], t["label"], t["unit"],
               cell(tg.get("raw")), cell(tg.get("ext4"))]
        row += [cell(tg.get(g["id"])) for g in tfs]
        for g in tfs:
            row += [ratio_cell(tg.get(g["id"]), "x_raw"),
                    ratio_cell(tg.get(g["id"]), "x_ext4")]
        row += [cpu_cell(tg.get("raw")), cpu_cell(tg.get("ext4"))]
        row += [cpu_cell(tg.get(g["id"])) for g in tfs]
        row += [ratio_cell(tg.get(g["id"]), "cpu_x_ext4") for g in tfs]
        row += [ratio_cell(tg.get(g["id"]), "gb_s_per_daemon_core")
                for g in tfs]
        rows.append(row)
    head = ["", "test", "unit", "raw file", "ext4"]
    head += [g["label"] if one else g["id"] for g in tfs]
    for g in tfs:
        head += [pre(g, "x raw"), pre(g, "x ext4")]
    head += ["cpu raw", "cpu ext4"] + ["cpu " + g["id"] for g in tfs]
    head += [pre(g, "cpu x ext4") for g in tfs]
    head += [pre(g, "GB/s/core") for g in tfs]
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    right = set(range(3, len(head)))

    def line(r):
        return "  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i])
                         for i, c in enumerate(r)).rstrip()
    out = [line(head), line(["-" * x for x in w])]
    out += [line(r) for r in rows]
    m = result["meta"]
    mem = result["memory"]
    out.append("")
    out.append("median of %s run(s), (min-max) beside it; MB/s = 10^6 bytes/s;"
               " x raw, x ext4: each tensorfs target's median over theirs (warm"
               % m.get("repeat", "?"))
    out.append("rows: over their cold read).  cpu: CPU seconds per 10^9 bytes,"
               " client + daemon + kernel threads (see --help, CPU ACCOUNTING).")
    out.append("GB/s/core: 10^9 bytes moved per CPU second of the tensorfs"
               " daemon alone (utime + stime).")
    if mem["vmhwm_kb_max"] is not None:
        out.append("i  daemon VmHWM: %d kB at most over %d mounts; bound %s kB"
                   " (%s)%s" % (
                       mem["vmhwm_kb_max"], len(mem["vmhwm_kb_per_mount"]),
                       mem["bound_kb"] if mem["bound_kb"] else "?",
                       mem["bound"] or "?",
                       "" if mem["within_bound"] is None else
                       (": within" if mem["within_bound"] else
                        ": EXCEEDED")))
    for k in ("date", "commit", "binaries", "kernel", "cpus", "load_start",
              "load_end", "first_touch_start", "first_touch_end", "disk", "ext4", "tensorfs_mount", "transports",
              "sizes", "elapsed_s"):
        if k in m:
            out.append("%-15s %s" % (k + ":", m[k]))
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: report.py MANIFEST OUTDIR")
    sys.exit(main(sys.argv[1], sys.argv[2]))
