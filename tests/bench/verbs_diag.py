#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One line of tests/bench/verbs.sh's per-run diagnostics (VERBS_DIAG=1).

Why a run of the same perftest row on the same daemons is fast or slow:
how the two CPUs were shared while it ran, and what each daemon did
with its share. Reads the snapshots verbs.sh took right before and right
after the run (`xrxe stats --json` of each daemon, the daemons' context
switches from /proc/PID/status, their CPU ticks) and the perftest
processes' /usr/bin/time lines, and prints, for a run of WALL seconds
that moved MSGS messages:

  cpu    share of the run's wall time each task ran: daemon A (sender),
         daemon B (responder), perftest server (B), client (A)
  A/B    per daemon: sleeps (epoll waits after the spin window) and idle
         sched_yield()s per second, the share of those yields during
         which another task ran, yields that took >= 200 us (each makes
         the daemon sleep instead of yield for the next second), frames
         sent per message (1.00 for a sender with nothing resent; ACKs
         and NAKs for the responder), involuntary context switches per
         second (preempted while runnable)
  srv/cli the perftest processes' involuntary context switches per second

Usage: verbs_diag.py DIR WALL MSGS HZ
  DIR holds before.{a,b}.json, after.{a,b}.json (xrxe stats --json),
  before.ticks / after.ticks ("TICKS_A TICKS_B"), before.ctxt / after.ctxt
  ("VOL_A NONVOL_A VOL_B NONVOL_B"), server.time / client.time
  ("USER SYS INVOLUNTARY VOLUNTARY", /usr/bin/time -f "%U %S %c %w").
Missing inputs print as "?".
"""
import json
import sys


def daemon_counters(path):
    try:
        with open(path) as f:
            return (json.load(f).get("daemon") or {}).get("daemon") or {}
    except (OSError, ValueError):
        return {}


def numbers(path):
    try:
        with open(path) as f:
            return [float(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def delta(before, after, name):
    a, b = after.get(name), before.get(name)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a - b
    return None


def fmt(v, spec):
    return "?" if v is None else format(v, spec)


def per(v, d):
    return None if v is None or not d else v / d


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    d, wall, msgs, hz = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    ticks0, ticks1 = numbers(f"{d}/before.ticks"), numbers(f"{d}/after.ticks")
    ctxt0, ctxt1 = numbers(f"{d}/before.ctxt"), numbers(f"{d}/after.ctxt")
    srv, cli = numbers(f"{d}/server.time"), numbers(f"{d}/client.time")

    def share(i):
        if len(ticks0) != 2 or len(ticks1) != 2 or not wall:
            return None
        return (ticks1[i] - ticks0[i]) / hz / wall

    def app_share(t):
        return (t[0] + t[1]) / wall if len(t) >= 2 and wall else None

    out = ["cpu A %s B %s srv %s cli %s" % (
        fmt(share(0), ".2f"), fmt(share(1), ".2f"),
        fmt(app_share(srv), ".2f"), fmt(app_share(cli), ".2f"))]
    for i, side in enumerate("ab"):
        c0 = daemon_counters(f"{d}/before.{side}.json")
        c1 = daemon_counters(f"{d}/after.{side}.json")
        yields = delta(c0, c1, "idle_yields")
        ran = delta(c0, c1, "idle_yields_ran")
        nonvol = None
        if len(ctxt0) == 4 and len(ctxt1) == 4:
            nonvol = ctxt1[2 * i + 1] - ctxt0[2 * i + 1]
        out.append("%s sleeps/s %s yields/s %s ran %s%% slow %s tx/msg %s ivcsw/s %s" % (
            side.upper(),
            fmt(per(delta(c0, c1, "sleeps"), wall), ".0f"),
            fmt(per(yields, wall), ".0f"),
            fmt(None if ran is None or not yields else 100 * ran / yields, ".0f"),
            fmt(delta(c0, c1, "idle_yields_slow"), ".0f"),
            fmt(per(delta(c0, c1, "tx_frames"), msgs), ".2f"),
            fmt(per(nonvol, wall), ".0f")))
    out.append("srv ivcsw/s %s cli ivcsw/s %s" % (
        fmt(per(srv[2] if len(srv) >= 3 else None, wall), ".0f"),
        fmt(per(cli[2] if len(cli) >= 3 else None, wall), ".0f")))
    print(" | ".join(out))


if __name__ == "__main__":
    main()
