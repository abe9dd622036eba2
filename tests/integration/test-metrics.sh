#!/bin/bash
# Description: .tensorfs/metrics follows Prometheus's naming conventions: promtool check metrics finds nothing when promtool is installed (Debian's prometheus package), and the same rules (promlint's: help, counters named *_total and only counters, base units, no abbreviated units, no reserved suffixes or type names, snake_case) are checked here either way
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tfs_need python3 dd
tfs_setup 256M
# some traffic, so the latency counters are not all zero
dd if=/dev/zero of="$MNT/f" bs=1M count=8 conv=fsync status=none || tfs_fail "cannot write f"
dd if="$MNT/f" of=/dev/null bs=1M iflag=direct status=none || tfs_fail "cannot read f"
cp "$MNT/.tensorfs/metrics" "$WORK/metrics" || tfs_fail "cannot copy .tensorfs/metrics"

if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$WORK/metrics" >"$WORK/promtool" 2>&1 ||
		{ cat "$WORK/promtool" >&2; tfs_fail "promtool check metrics found problems"; }
	tfs_log "promtool check metrics: clean"
else
	tfs_log "promtool not installed (Debian package prometheus): checking its rules here only"
fi

python3 - "$WORK/metrics" <<'PY' || tfs_fail ".tensorfs/metrics breaks Prometheus's naming rules"
import re, sys
# promlint's rules (prometheus/client_golang testutil/promlint), which
# promtool check metrics applies
abbrev = {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb",
          "m", "h", "d"}
nonbase = {"milliseconds", "microseconds", "nanoseconds", "minutes", "hours",
           "days", "weeks", "months", "years", "kilobytes", "megabytes",
           "gigabytes", "terabytes", "petabytes", "bits", "celsius",
           "fahrenheit", "percent"}
help_, type_, problems = {}, {}, []
samples = []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# HELP "):
        name, _, text = line[7:].partition(" ")
        help_[name] = text
    elif line.startswith("# TYPE "):
        name, _, t = line[7:].partition(" ")
        if name in type_:
            problems.append(f"{name}: second TYPE line")
        if name not in help_:
            problems.append(f"{name}: TYPE before HELP")
        type_[name] = t
    elif line.startswith("#") or not line:
        continue
    else:
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)', line)
        if not m:
            sys.exit(f"not the text format: {line!r}")
        name, labels, v = m.groups()
        try:
            float(v)
        except ValueError:
            problems.append(f"{name}: value {v!r}")
        if name not in type_:
            problems.append(f"{name}: sample without TYPE")
        samples.append(name + (labels or ""))
if len(samples) != len(set(samples)):
    problems.append("a metric appears twice")
if len(samples) < 20:
    problems.append(f"only {len(samples)} metrics")
for name, t in type_.items():
    words = name.split("_")
    if not help_.get(name):
        problems.append(f"{name}: no help text")
    if t not in ("counter", "gauge"):
        problems.append(f"{name}: type {t}")
    if t == "counter" and not name.endswith("_total"):
        problems.append(f"{name}: counter metrics should have \"_total\" suffix")
    if t != "counter" and name.endswith("_total"):
        problems.append(f"{name}: non-counter metrics should not have \"_total\" suffix")
    if re.search(r"_(count|sum|bucket)$", name):
        problems.append(f"{name}: suffix reserved for histograms and summaries")
    if {"counter", "gauge", "histogram", "summary"} & set(words):
        problems.append(f"{name}: metric type in the name")
    if ":" in name:
        problems.append(f"{name}: colon in the name")
    if re.search(r"[a-z][A-Z]", name):
        problems.append(f"{name}: camelCase")
    for w in words:
        if w in abbrev:
            problems.append(f"{name}: abbreviated unit \"{w}\"")
        if w in nonbase:
            problems.append(f"{name}: non-base unit \"{w}\"")
if problems:
    print("\n".join(problems))
    sys.exit(1)
PY
grep -q '^tensorfs_dev_latency_seconds_total [0-9]*\.[0-9]\{9\}$' "$WORK/metrics" ||
	tfs_fail "no device latency in seconds: $(grep latency "$WORK/metrics")"
tfs_umount
tfs_pass
