#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Metrics of one congestion-control run (tests/cc/run.sh), from what it
sampled. Standard library only.

  analyze.py RUNDIR --rate-bps R --label L [--flows-expected N] [--window-ms 10]

RUNDIR holds:
  watch.jsonl    xrxe-impair --watch 10 on the router's bottleneck egress: per
                 line t_ns, counters, the phantom queue, and bytes per RoCEv2
                 flow (source, destination, BTH DestQP) seen at the bottleneck
                 and the bottleneck's root qdisc (htb: bytes sent, drops, backlog)
  htb0.txt htb1.txt   "sent_bytes sent_packets drops backlog" before/after
  qp-*.jsonl     "t_ns <xrxe qp IFACE --json>" lines per endpoint
  stats0-*.json stats1-*.json   xrxe stats IFACE --json before/after (CC counters)
  perftest-s*.out the perftest clients' reports

Writes RUNDIR/rates.dat (time, one column per flow, Mbit/s), RUNDIR/queue.dat
(time, phantom queue KB, FIFO KB) for gnuplot, and prints one JSON object of
metrics:
  util          bottleneck utilisation: bytes htb sent over the active period
                (first to last 10 ms window with traffic) / (rate x period)
  jain_median, jain_min   Jain's index J = (sum x)^2 / (n sum x^2) over the
                10 ms windows in which every expected flow is active
  q_p50_kb, q_p99_kb      phantom-queue backlog at the 10 ms samples (drained
                to the sample's time)
  fifo_p50_kb, fifo_p99_kb  the htb's real backlog at the same samples
  marks_per_s, cnps_per_s (null without CC counters), retransmits, drops
"""
import argparse
import glob
import json
import math
import os
import sys


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def jain(xs):
    s, s2 = sum(xs), sum(x * x for x in xs)
    return (s * s) / (len(xs) * s2) if s2 > 0 else None


def load_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by the watcher's end
    return out


def find_counter(obj, names):
    """First integer under any of names anywhere in a nested JSON object."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in names and isinstance(v, int):
                return v
        for v in obj.values():
            r = find_counter(v, names)
            if r is not None:
                return r
    return None


def write_plot(d, prefix, label, names, rate_bps, cc_files):
    """A gnuplot script (gnuplot-nox, pngcairo) for the two figures."""
    rates = os.path.abspath(os.path.join(d, "rates.dat"))
    queue = os.path.abspath(os.path.join(d, "queue.dat"))
    fifo = os.path.abspath(os.path.join(d, "fifo.dat"))
    curves = ", ".join("'%s' using 1:%d with lines lw 1.5 title '%s'" % (rates, i + 2, n)
                       for i, n in enumerate(names)) or "0 notitle"
    with open(os.path.join(d, "plot.gp"), "w") as f:
        f.write("""set terminal pngcairo size 1000,420 font ',10'
set grid
set key outside right
set xlabel 'time (s)'
set output '%(prefix)s-rate.png'
set title '%(label)s: per-QP rate at the bottleneck (10 ms windows)'
set ylabel 'Mbit/s'
set yrange [0:%(ymax)f]
plot %(curves)s, %(line)f with lines dt 2 lc 'black' title 'bottleneck'
set output '%(prefix)s-queue.png'
set title '%(label)s: bottleneck backlog'
set ylabel 'KB'
set yrange [0:*]
plot '%(queue)s' using 1:2 with lines title 'phantom queue (10 ms samples)', \\
     '%(fifo)s' using 1:2 with linespoints pt 7 ps 0.4 title 'htb backlog (same samples)'
""" % {"prefix": prefix, "label": label, "curves": curves, "queue": queue, "fifo": fifo,
       "line": rate_bps * 8 / 1e6, "ymax": rate_bps * 8 / 1e6 * 1.6})
        if cc_files:
            f.write("set output '%s-ccrate.png'\n" % prefix)
            f.write("set title '%s: DCQCN RP rate of the limited QPs (xrxe qp, polled every 0.25 s or slower)'\n" % label)
            f.write("set ylabel 'Mbit/s'\n")
            f.write("plot " + ", ".join("'%s' using 1:2 with linespoints pt 7 ps 0.4 title '%s'"
                                          % (os.path.abspath(n), t) for n, t in cc_files) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("rundir")
    p.add_argument("--rate-bps", type=float, required=True, help="bottleneck, bytes/s")
    p.add_argument("--label", default="")
    p.add_argument("--flows-expected", type=int, default=0)
    p.add_argument("--plot", metavar="PREFIX",
                   help="also write RUNDIR/plot.gp drawing PREFIX-rate.png and PREFIX-queue.png")
    a = p.parse_args()
    d = a.rundir

    samples = load_jsonl(os.path.join(d, "watch.jsonl"))
    if len(samples) < 3:
        print(json.dumps({"label": a.label, "error": "fewer than 3 samples"}))
        return 1
    t0 = samples[0]["t_ns"]
    flow_ids, names = {}, []
    for s in samples:
        for f in s.get("flows", []):
            key = (f["src"], f["dst"], f["dest_qp"])
            if key not in flow_ids:
                flow_ids[key] = len(names)
                names.append("%s qp%d" % (f["src"], f["dest_qp"]))

    rows, jains, active_t = [], [], []
    nexp = a.flows_expected or len(names)
    prev = None
    for s in samples:
        cur = {(f["src"], f["dst"], f["dest_qp"]): f["bytes"] for f in s.get("flows", [])}
        if prev is not None:
            dt = (s["t_ns"] - prev[0]) / 1e9
            if dt <= 0:
                continue
            rates = [0.0] * len(names)
            for key, b in cur.items():
                rates[flow_ids[key]] = (b - prev[1].get(key, 0)) * 8 / dt / 1e6
            t = (s["t_ns"] - t0) / 1e9
            rows.append((t, rates))
            active = [r for r in rates if r > 0]
            if sum(active) > 0:
                active_t.append(t)
            if nexp and len(active) >= nexp:
                j = jain(sorted(active, reverse=True)[:nexp])
                if j is not None:
                    jains.append(j)
        prev = (s["t_ns"], cur)

    with open(os.path.join(d, "rates.dat"), "w") as f:
        f.write("# t_s " + " ".join('"%s"' % n for n in names) + "  (Mbit/s per 10 ms window)\n")
        for t, rates in rows:
            f.write("%.3f %s\n" % (t, " ".join("%.1f" % r for r in rates)))

    # Phantom queue at each sample, drained from its last update to the
    # sample's time (both CLOCK_MONOTONIC).
    rate = None
    qs = []
    fifo = {s["t_ns"]: s["root_qdisc"]["backlog"] for s in samples if "root_qdisc" in s}
    with open(os.path.join(d, "queue.dat"), "w") as f:
        f.write("# t_s phantom_queue_KB\n")
        for s in samples:
            ecn = s["settings"].get("ecn")
            rate = ecn["rate_bytes_per_s"] if ecn else a.rate_bps
            age = max(0, s["t_ns"] - s.get("queue_last_ns", s["t_ns"]))
            q = max(0.0, s["queue_bytes"] - age * rate / 1e9)
            qs.append(q)
            f.write("%.3f %.2f\n" % ((s["t_ns"] - t0) / 1e9, q / 1000))
    with open(os.path.join(d, "fifo.dat"), "w") as f:
        f.write("# t_s fifo_backlog_KB\n")
        for t in sorted(fifo):
            f.write("%.3f %.2f\n" % ((t - t0) / 1e9, fifo[t] / 1000))
    qs_active = [q for s, q in zip(samples, qs)] if not active_t else [
        q for s, q in zip(samples, qs)
        if active_t[0] <= (s["t_ns"] - t0) / 1e9 <= active_t[-1]]
    # How well the phantom queue (the marking signal) follows the real htb
    # backlog, sample by sample while traffic flows.
    pairs = [(q, s["root_qdisc"]["backlog"]) for s, q in zip(samples, qs)
             if "root_qdisc" in s and (not active_t or
                                       active_t[0] <= (s["t_ns"] - t0) / 1e9 <= active_t[-1])]
    mae = sum(abs(x - y) for x, y in pairs) / len(pairs) if pairs else None
    fifo_active = [v for t, v in fifo.items()
                   if not active_t or active_t[0] <= (t - t0) / 1e9 <= active_t[-1]]

    def htb(name):
        try:
            with open(os.path.join(d, name)) as f:
                return [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            return None
    h0, h1 = htb("htb0.txt"), htb("htb1.txt")
    period = (active_t[-1] - active_t[0] + 0.01) if active_t else None
    util = None
    drops = None
    rq = [s["root_qdisc"] for s in samples if "root_qdisc" in s]
    if len(rq) >= 2 and period:
        util = (rq[-1]["bytes"] - rq[0]["bytes"]) / (a.rate_bps * period)
        drops = rq[-1]["drops"] - rq[0]["drops"]
    elif h0 and h1 and period:
        util = (h1[0] - h0[0]) / (a.rate_bps * period)
        drops = h1[2] - h0[2]

    c0, c1 = samples[0]["counters"], samples[-1]["counters"]
    dur = (samples[-1]["t_ns"] - t0) / 1e9
    marks = c1["ecn_marked"]["packets"] - c0["ecn_marked"]["packets"]

    # Retransmissions: the largest value each (endpoint, QP) reached while
    # it existed (QPs vanish when perftest exits). With CC, the RP's rate per
    # QP over time goes to cc-TAG-QPN.dat.
    retrans, qp_seen = 0, 0
    cc_files = []
    for path in sorted(glob.glob(os.path.join(d, "qp-*.jsonl"))):
        tag = os.path.basename(path)[3:-6]
        best = {}
        cc_series = {}
        limited = set()
        with open(path) as f:
            for line in f:
                parts = line.split(" ", 1)
                if len(parts) != 2:
                    continue
                try:
                    obj = json.loads(parts[1])
                except ValueError:
                    continue
                for q in obj.get("qps", []):
                    best[q["qpn"]] = max(best.get(q["qpn"], 0), q.get("retransmits", 0))
                    cc = q.get("cc")
                    if isinstance(cc, dict) and "rate_mbps" in cc:
                        cc_series.setdefault(q["qpn"], []).append(
                            ((int(parts[0]) - t0) / 1e9, cc.get("rate_mbps"),
                             cc.get("target_mbps"), cc.get("alpha")))
                        if cc.get("limited"):
                            limited.add(q["qpn"])
        retrans += sum(best.values())
        # Only QPs whose rate limiter ever engaged: the others (receivers,
        # every QP with CC off) sit at the maximum and say nothing.
        for qpn, pts in cc_series.items():
            if qpn not in limited:
                continue
            name = os.path.join(d, "cc-%s-%d.dat" % (tag, qpn))
            with open(name, "w") as f:
                f.write("# t_s rate_mbps target_mbps alpha\n")
                for t, r_, tg, al in pts:
                    f.write("%.3f %s %s %s\n" % (t, r_, tg, al))
            cc_files.append((name, "%s qp%d" % (tag, qpn)))
        qp_seen += len(best)

    # CNPs: the receiver's cnp_sent (or, failing that, senders' cnp_rcvd).
    cnps = None
    for side, keys in (("d", ("cnp_sent",)), ("s*", ("cnp_rcvd", "cnp_received"))):
        total, found = 0, False
        for p0 in glob.glob(os.path.join(d, "stats0-%s.json" % side)):
            p1 = p0.replace("stats0-", "stats1-")
            try:
                v0 = find_counter(json.load(open(p0)), keys)
                v1 = find_counter(json.load(open(p1)), keys)
            except (OSError, ValueError):
                continue
            if v0 is not None and v1 is not None:
                total += v1 - v0
                found = True
        if found:
            cnps = total / period if period else None
            break

    gbps = []
    for path in sorted(glob.glob(os.path.join(d, "perftest-s*.out"))):
        with open(path) as f:
            text = f.read()
        # perftest measures its CPU clock against gettimeofday() before the
        # test; when preemption spoils the fit it says so ("Correlation
        # coefficient r^2: ... < 0.9"), takes 0 MHz and reports 0 Gbit/s.
        # The flow itself is counted at the router like any other.
        clock_failed = "Correlation coefficient" in text
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[0].isdigit() and parts[1].isdigit():
                try:
                    gbps.append(None if clock_failed else float(parts[3]))
                except ValueError:
                    pass

    if a.plot:
        write_plot(d, a.plot, a.label, names, a.rate_bps, cc_files)

    def r(x, n=3):
        return None if x is None else round(x, n)
    print(json.dumps({
        "label": a.label,
        "flows": names,
        "duration_s": r(dur, 2),
        "active_s": r(period, 2),
        "util": r(util),
        "jain_median": r(percentile(jains, 0.5)),
        "jain_min": r(min(jains) if jains else None),
        "jain_windows": len(jains),
        "q_p50_kb": r(percentile(qs_active, 0.5) / 1000 if qs_active else None, 1),
        "q_p99_kb": r(percentile(qs_active, 0.99) / 1000 if qs_active else None, 1),
        "fifo_p50_kb": r(percentile(fifo_active, 0.5) / 1000 if fifo_active else None, 1),
        "fifo_p99_kb": r(percentile(fifo_active, 0.99) / 1000 if fifo_active else None, 1),
        "phantom_vs_htb_mean_abs_kb": r(mae / 1000 if mae is not None else None, 1),
        "marks_per_s": r(marks / period if period else None, 0),
        "cnps_per_s": r(cnps, 0),
        "retransmits": retrans,
        "qps_seen": qp_seen,
        "drops": drops,
        "perftest_gbps": gbps,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
