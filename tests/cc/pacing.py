#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""E7 of tests/cc/run.sh: how exactly one paced QP keeps its set rate on the
real wire. Arguments: RATE_MBPS:RUNDIR ... (RUNDIR as analyze.py reads it).

The rate is that of the QP's frames at the router (xrxe-impair --flows,
Ethernet frame bytes, as the pacer counts them), from 0.5 s after the QP
first moved (the first CNP sets the rate within microseconds; the margin
keeps the start-up out) to 0.2 s before it stopped; also the spread of the
10 ms windows (their median is the pacer's own accuracy: a window in which
the daemon was not scheduled at all drags the mean down, not the median) and
the RP rate the daemon reported (xrxe qp --json)."""
import json
import statistics
import sys


def main():
    print("\nE7 pacing accuracy (one QP held at a set rate; its frames counted at the router):\n")
    print("| set Mbit/s | mean Mbit/s | error | median 10 ms window | error | windows < half the rate (stalls) | windows stdev / min / max | RP rate_mbps (xrxe qp) |")
    print("|---|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        rate_s, d = arg.split(":", 1)
        cells = "| %s | no samples | | | | | | |" % rate_s
        rate = float(rate_s)
        try:
            with open(d + "/watch.jsonl") as f:
                samples = []
                for line in f:
                    try:
                        samples.append(json.loads(line))
                    except ValueError:
                        pass
        except OSError:
            print(cells)
            continue
        pts = [(s["t_ns"], sum(fl["bytes"] for fl in s.get("flows", []))) for s in samples]
        moving = [i for i in range(1, len(pts)) if pts[i][1] > pts[i - 1][1]]
        if len(moving) < 100:
            print(cells.replace("no samples", "too few samples"))
            continue
        t_first, t_last = pts[moving[0]][0], pts[moving[-1]][0]
        sel = [p for p in pts if t_first + 5e8 <= p[0] <= t_last - 2e8]
        mean = (sel[-1][1] - sel[0][1]) * 8 / ((sel[-1][0] - sel[0][0]) / 1e9) / 1e6
        win = [(b[1] - a[1]) * 8 / ((b[0] - a[0]) / 1e9) / 1e6
               for a, b in zip(sel, sel[1:]) if b[0] > a[0]]
        rp = set()
        try:
            with open(d + "/qp-s1.jsonl") as f:
                for line in f:
                    try:
                        for q in json.loads(line.split(" ", 1)[1]).get("qps", []):
                            cc = q.get("cc")
                            if isinstance(cc, dict) and cc.get("limited"):
                                rp.add(round(cc["rate_mbps"], 3))
                    except (ValueError, IndexError):
                        pass
        except OSError:
            pass
        med = statistics.median(win)
        stalls = sum(1 for w in win if w < rate / 2) / len(win)
        print("| %g | %.2f | %+.2f %% | %.2f | %+.2f %% | %.1f %% | %.1f / %.1f / %.1f | %s |" % (
            rate, mean, 100 * (mean - rate) / rate, med, 100 * (med - rate) / rate, 100 * stalls,
            statistics.pstdev(win), min(win), max(win),
            ", ".join("%g" % x for x in sorted(rp)) or "n/a"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
