"""TAP output, CQ polling and the RTS attributes shared by the pyverbs test
programs (verbs_post.py, pyverbs_loopback.py). They import it from their own
directory, which Python puts first on sys.path."""
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.qp import QPAttr

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


def rts_attr(gid, gid_index, dest_qp_num, access):
    """Attributes taking a QP from RESET to RTS towards dest_qp_num at gid
    (pyverbs' to_rts picks those each transition of the QP's type needs)."""
    attr = QPAttr(qp_state=e.IBV_QPS_RTS, port_num=1)
    attr.ah_attr = AHAttr(is_global=1, port_num=1,
                          gr=GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=64))
    attr.dest_qp_num = dest_qp_num
    attr.path_mtu = e.IBV_MTU_1024
    attr.qp_access_flags = access
    attr.max_dest_rd_atomic = 4
    attr.max_rd_atomic = 4
    attr.min_rnr_timer = 1
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.rq_psn = 0
    attr.sq_psn = 0
    return attr
