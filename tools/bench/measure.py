#!/usr/bin/env python3
"""measure.py: CPU and wall-time accounting for tools/bench.sh (stdlib only).

Used two ways:

  measure.py run --out FILE [--daemon PID] [--capture] -- CMD ARGS...
      runs CMD, waits for it, and writes one JSON object to FILE:
        wall_s        wall-clock seconds of CMD
        client_cpu_s  CMD's utime + stime (all its threads and waited-for
                      children: getrusage of the waited child, wait4)
        daemon_cpu_s  utime + stime of process PID (the tensorfs daemon,
                      every thread of it, io_uring workers included) over
                      the run, from /proc/PID/stat; null without --daemon
        kthread_cpu_s utime + stime over the run of every kernel thread
                      (kthreadd, pid 2, and its children: kworkers, which
                      run the loop device's work, jbd2, flush, ksoftirqd,
                      ...), from /proc/*/stat
        rc            CMD's exit status
        stdout        CMD's standard output (with --capture)
      and exits with CMD's status.

  import measure; snap = measure.snapshot(pid); ...; measure.delta(snap, pid)
      the same counters around a section of a client's own code
      (tools/bench/clients.py).

What the kernel-thread figure cannot see: a kernel thread that starts and
ends inside the run (its time is lost), and work done in interrupt context
(charged to whichever task was running).  It also counts kernel threads
working for anything else the machine does meanwhile, which is why the
benchmark records the load average.
"""

import json
import os
import resource
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the name may hold spaces and parentheses: split after the last ')'
    return data[data.rfind(b")") + 2:].split()


def proc_cpu_s(pid):
    """utime + stime of process PID in seconds (all threads), or None."""
    if not pid:
        return None
    f = _stat_fields(pid)
    if f is None:
        return None
    # fields after the name: state=0 ppid=1 ... utime=11 stime=12
    return (int(f[11]) + int(f[12])) / TICK


def kthread_cpu_s():
    """utime + stime of every kernel thread now alive, in seconds."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        f = _stat_fields(pid)
        if f is None:
            continue
        if pid == 2 or f[1] == b"2":
            total += int(f[11]) + int(f[12])
    return total / TICK


def snapshot(daemon_pid=None):
    """The counters now (a dict); pass it to delta().  The clock is read
    last, so scanning /proc is outside the interval measured."""
    k = kthread_cpu_s()
    d = proc_cpu_s(daemon_pid)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"self": ru.ru_utime + ru.ru_stime, "daemon": d, "kthreads": k,
            "t": time.perf_counter()}


def delta(s0, daemon_pid=None):
    """Seconds elapsed and CPU seconds spent since snapshot s0 (the clock
    is read first, so scanning /proc is outside the interval)."""
    t = time.perf_counter()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    d = proc_cpu_s(daemon_pid)
    k = kthread_cpu_s()
    return {
        "wall_s": t - s0["t"],
        "client_cpu_s": ru.ru_utime + ru.ru_stime - s0["self"],
        "daemon_cpu_s": None if d is None or s0["daemon"] is None
        else d - s0["daemon"],
        "kthread_cpu_s": k - s0["kthreads"],
    }


def run(argv):
    out = None
    pid = None
    capture = False
    while argv and argv[0] != "--":
        a = argv.pop(0)
        if a == "--out" and argv:
            out = argv.pop(0)
        elif a == "--daemon" and argv:
            v = argv.pop(0)
            pid = int(v) if v else None
        elif a == "--capture":
            capture = True
        else:
            sys.exit("measure.py: unknown argument '%s'" % a)
    if not argv or argv[0] != "--" or len(argv) < 2 or out is None:
        sys.exit("usage: measure.py run --out FILE [--daemon PID] "
                 "[--capture] -- CMD ARGS...")
    cmd = argv[1:]
    s0 = snapshot(pid)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else None)
    text = p.communicate()[0]
    d = delta(s0, pid)
    # CMD is this process's only child: the children's total is CMD's
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    d["client_cpu_s"] = ru.ru_utime + ru.ru_stime
    rc = p.returncode
    d["rc"] = rc
    d["command"] = cmd
    if capture:
        d["stdout"] = text.decode("utf-8", "replace")
        sys.stdout.write(d["stdout"])
    with open(out, "w") as f:
        json.dump(d, f)
    return rc


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "run":
        sys.exit(__doc__)
    sys.exit(run(sys.argv[2:]))
