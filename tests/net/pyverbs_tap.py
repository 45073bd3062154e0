"""TAP output and CQ polling shared by the pyverbs test programs
(verbs_post.py, pyverbs_loopback.py). They import it from their own
directory, which Python puts first on sys.path."""
import sys
import time

failures = 0
count = 0


def ok(cond, desc):
    """One TAP line; returns cond so a caller can stop a group on failure."""
    global failures, count
    count += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (count, desc))
    sys.stdout.flush()
    if not cond:
        failures += 1
    return cond


def poll(cq, n, timeout=5.0):
    """Up to n completions from cq within timeout seconds."""
    wcs = []
    end = time.monotonic() + timeout
    while len(wcs) < n and time.monotonic() < end:
        got, lst = cq.poll(n - len(wcs))
        wcs.extend(lst[:got])
    return wcs
