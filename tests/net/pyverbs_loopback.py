#!/usr/bin/python3
# pyverbs (rdma-core's own Python bindings, unmodified) against one xrxe
# device: open and query it (device, device_ex, port, GID table and types),
# then RC, UC and UD traffic between two QPs of the device (the daemon loops
# packets to its own GIDs back), memory windows of type 1 and 2 (a remote
# WRITE through the window's R_Key lands; after invalidation the same WRITE
# fails with IBV_WC_REM_ACCESS_ERR), SEND_WITH_INV, ATOMIC_WRITE, ibv_rereg_mr,
# and extended-CQ polling with the ibv_wc_read_* readers. Prints TAP.
#
#   xrxe run -- python3 tests/net/pyverbs_loopback.py DEVICE [GID_INDEX]
# (tests/net/pyverbs.sh runs it in a namespace with a daemon; python3 must be
# Debian's /usr/bin/python3, where python3-pyverbs lives)
import errno
import struct
import sys
import time
import traceback

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.base import inc_rkey
from pyverbs.cq import CQ, CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.device import DM, AllocDmAttr, Context
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import DataBuffer, QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.wr import SGE, RecvWR, SendWR
from pyverbs.xrcd import XRCD, XRCDInitAttr
import ctypes
import mmap

import pyverbs_util as tap
from pyverbs_util import ok, poll, rts_attr



def section(name, fn):
    """Run one group of checks; an exception fails the group, not the file."""
    try:
        fn()
    except (PyverbsError, PyverbsRDMAError, AssertionError, TypeError, ValueError) as ex:
        ok(False, "%s: %s" % (name, ex))
        for line in traceback.format_exc().splitlines()[-6:]:
            print("# " + line)



dev = sys.argv[1]
gid_index = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
          e.IBV_ACCESS_REMOTE_ATOMIC)
# rdma-core >= 45 values (not in pyverbs 44's enums): abi.h XRXE_DEVICE_*
DEVICE_ATOMIC_WRITE = 1 << 40
DEVICE_FLUSH_GLOBAL = 1 << 38

ctx = Context(name=dev)
pd = PD(ctx)
gid = None


# --- queries --------------------------------------------------------------------

def queries():
    global gid
    attr = ctx.query_device()
    ok(attr.phys_port_cnt == 1 and attr.max_qp > 0 and attr.max_mw > 0,
       "query_device: 1 port, max_qp %d, max_mw %d" % (attr.max_qp, attr.max_mw))
    caps = attr.device_cap_flags
    ok(caps & e.IBV_DEVICE_MEM_WINDOW and caps & e.IBV_DEVICE_MEM_WINDOW_TYPE_2B,
       "device caps advertise memory windows type 1 and 2B (%#x)" % caps)
    ex = ctx.query_device_ex()
    ok(ex.orig_attr.max_qp == attr.max_qp and ex.phys_port_cnt_ex == 1,
       "query_device_ex: orig_attr matches, phys_port_cnt_ex 1")
    ok(ex.device_cap_flags_ex & DEVICE_ATOMIC_WRITE and ex.device_cap_flags_ex & DEVICE_FLUSH_GLOBAL,
       "device_cap_flags_ex: ATOMIC_WRITE and FLUSH_GLOBAL (%#x)" % ex.device_cap_flags_ex)
    ok(ex.completion_timestamp_mask != 0 and ex.hca_core_clock > 0,
       "query_device_ex: completion timestamps advertised (clock %d kHz)" % ex.hca_core_clock)
    rss = ex.rss_caps
    ok(rss.supported_qpts == 1 << e.IBV_QPT_RAW_PACKET and rss.rx_hash_function ==
       e.IBV_RX_HASH_FUNC_TOEPLITZ and rss.rx_hash_fields_mask == 0xff and
       rss.max_rwq_indirection_table_size == 64 and rss.max_rwq_indirection_tables > 0 and
       ex.max_wq_type_rq == attr.max_qp and ex.raw_packet_caps == 0,
       "query_device_ex: rss_caps (raw packet QPs, Toeplitz over 8 fields, tables of 64 WQs, "
       "%d tables), %d receive WQs, raw_packet_caps 0" %
       (rss.max_rwq_indirection_tables, ex.max_wq_type_rq))
    port = ctx.query_port(1)
    ok(port.state == e.IBV_PORT_ACTIVE and port.link_layer == e.IBV_LINK_LAYER_ETHERNET,
       "query_port: active, Ethernet (gid_tbl_len %d)" % port.gid_tbl_len)
    gid = ctx.query_gid(1, gid_index)
    ok(str(gid) != "0000:0000:0000:0000:0000:0000:0000:0000", "query_gid(1, %d) = %s" %
       (gid_index, gid))
    gtype = ctx.query_gid_type(1, gid_index)
    ok(gtype == e.IBV_GID_TYPE_SYSFS_ROCE_V2, "query_gid_type: RoCE v2 (%d)" % gtype)
    entry = ctx.query_gid_ex(1, gid_index)
    ok(entry.gid_index == gid_index and entry.port_num == 1 and
       entry.gid_type == e.IBV_GID_TYPE_ROCE_V2,
       "_ibv_query_gid_ex: index %d, RoCE v2" % entry.gid_index)
    table = ctx.query_gid_table(port.gid_tbl_len)
    ok(len(table) >= 2 and any(t.gid_index == gid_index for t in table),
       "_ibv_query_gid_table: %d valid entries incl. index %d" % (len(table), gid_index))


# --- connection helpers -----------------------------------------------------------

def ah_attr():
    return AHAttr(is_global=1, port_num=1,
                  gr=GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=64))


def connect(a, b, qp_type, access=ACCESS):
    """RESET -> RTS on both, each pointing at the other."""
    for q, peer in ((a, b), (b, a)):
        attr = rts_attr(gid, gid_index, peer.qp_num, access)
        q.to_rts(attr)  # pyverbs picks the attributes each transition of qp_type needs


# QPs stay referenced to the end: pyverbs closes the memory windows bound
# through a QP when that QP is closed.
keep = []


def rc_pair(cq, access=ACCESS, ex_ops=0, cap=None):
    cap = cap or QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2, max_recv_sge=2,
                       max_inline_data=64)
    qps = []
    for _ in range(2):
        if ex_ops:
            init = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap, pd=pd,
                                comp_mask=e.IBV_QP_INIT_ATTR_PD |
                                e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                                send_ops_flags=ex_ops)
            qps.append(QPEx(ctx, init))
        else:
            qps.append(QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)))
    connect(qps[0], qps[1], e.IBV_QPT_RC, access)
    keep.extend(qps)
    return qps


def statuses(wcs):
    return [(w.wr_id, w.status, w.opcode) for w in wcs]


# --- RC -----------------------------------------------------------------------------

def rc_traffic():
    cq = CQ(ctx, 64)
    a, b = rc_pair(cq)
    mr = MR(pd, 16384, ACCESS)
    mr.write(b"rc over xrxe, two QPs", 21, 0)
    b.post_recv(RecvWR(wr_id=100, num_sge=1, sg=[SGE(mr.buf + 8192, 64, mr.lkey)]))
    a.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 21, mr.lkey)],
                       send_flags=e.IBV_SEND_SIGNALED))
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs) and
       mr.read(21, 8192) == b"rc over xrxe, two QPs",
       "RC SEND A -> B delivered (%s)" % statuses(wcs))
    w = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 21, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_rdma(mr.rkey, mr.buf + 4096)
    b.post_send(w)
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       mr.read(21, 4096) == b"rc over xrxe, two QPs", "RC RDMA WRITE B -> A")
    # a zero-based region: remote peers address it from 0
    zb = MR(pd, 4096, ACCESS | e.IBV_ACCESS_ZERO_BASED)
    w = SendWR(wr_id=7, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 21, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_rdma(zb.rkey, 100)
    a.post_send(w)
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       zb.read(21, 100) == b"rc over xrxe, two QPs",
       "IBV_ACCESS_ZERO_BASED: a WRITE to remote address 100 lands at offset 100")
    attr, init = a.query(e.IBV_QP_STATE | e.IBV_QP_CAP | e.IBV_QP_DEST_QPN)
    ok(attr.qp_state == e.IBV_QPS_RTS and attr.dest_qp_num == b.qp_num,
       "ibv_query_qp: RTS, dest_qp_num %#x" % attr.dest_qp_num)


# --- UC / UD ------------------------------------------------------------------------

def uc_traffic():
    cq = CQ(ctx, 64)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    a = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UC, scq=cq, rcq=cq, cap=cap))
    b = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UC, scq=cq, rcq=cq, cap=cap))
    connect(a, b, e.IBV_QPT_UC, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    mr = MR(pd, 8192, ACCESS)
    mr.write(b"uc datagram", 11, 0)
    b.post_recv(RecvWR(wr_id=200, num_sge=1, sg=[SGE(mr.buf + 4096, 64, mr.lkey)]))
    a.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 11, mr.lkey)],
                       send_flags=e.IBV_SEND_SIGNALED))
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs) and
       mr.read(11, 4096) == b"uc datagram", "UC SEND A -> B delivered (%s)" % statuses(wcs))
    w = SendWR(wr_id=4, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 11, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_rdma(mr.rkey, mr.buf + 2048)
    a.post_send(w)
    wcs = poll(cq, 1)
    time.sleep(0.05)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       mr.read(11, 2048) == b"uc datagram", "UC RDMA WRITE A -> B")


def ud_traffic():
    cq = CQ(ctx, 64)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap)) for _ in range(2)]
    for q in qps:
        attr = QPAttr(qp_state=e.IBV_QPS_RTS, port_num=1)
        attr.qkey = 0x1234
        attr.sq_psn = 0
        q.to_rts(attr)
    mr = MR(pd, 8192, ACCESS)
    mr.write(b"ud datagram", 11, 0)
    qps[1].post_recv(RecvWR(wr_id=300, num_sge=1, sg=[SGE(mr.buf + 4096, 40 + 64, mr.lkey)]))
    ah = AH(pd, attr=ah_attr())
    w = SendWR(wr_id=5, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 11, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_ud(ah, qps[1].qp_num, 0x1234)
    qps[0].post_send(w)
    wcs = poll(cq, 2)
    rwc = [x for x in wcs if x.wr_id == 300]
    ok(len(wcs) == 2 and all(x.status == e.IBV_WC_SUCCESS for x in wcs) and rwc and
       rwc[0].byte_len == 40 + 11 and rwc[0].src_qp == qps[0].qp_num and
       mr.read(11, 4096 + 40) == b"ud datagram",
       "UD SEND A -> B: 40-byte GRH area + payload, src_qp (%s)" % statuses(wcs))


# --- memory windows ---------------------------------------------------------------------

MWACC = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


def rdma_write(qp, cq, src, lkey, raddr, rkey, n, wr_id):
    w = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src, n, lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_rdma(rkey, raddr)
    qp.post_send(w)
    return poll(cq, 1)


def mw_type1():
    cq = CQ(ctx, 64)
    a, b = rc_pair(cq)
    src = MR(pd, 4096, ACCESS)
    dst = MR(pd, 8192, ACCESS | e.IBV_ACCESS_MW_BIND)
    src.write(b"through a type 1 window", 23, 0)
    mw = MW(pd, e.IBV_MW_TYPE_1)
    old = mw.rkey
    b.bind_mw(mw, MWBind(MWBindInfo(dst, dst.buf + 1024, 2048, MWACC), e.IBV_SEND_SIGNALED,
                         wr_id=50))
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       wcs[0].opcode == e.IBV_WC_BIND_MW and mw.rkey != old and mw.rkey >> 8 == old >> 8,
       "type 1 ibv_bind_mw completes with IBV_WC_BIND_MW; rkey %#x -> %#x" % (old, mw.rkey))
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf + 1024, mw.rkey, 23, 51)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       dst.read(23, 1024) == b"through a type 1 window",
       "RDMA WRITE through the type 1 window's rkey lands in the region")
    # unbind: a zero-length bind (the type 1 way to invalidate)
    bound = mw.rkey
    b.bind_mw(mw, MWBind(MWBindInfo(dst, dst.buf, 0, MWACC), e.IBV_SEND_SIGNALED, wr_id=52))
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS, "type 1 zero-length bind unbinds")
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf + 1024, bound, 8, 53)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_REM_ACCESS_ERR,
       "after the unbind the same WRITE fails with IBV_WC_REM_ACCESS_ERR (%s)" % statuses(wcs))
    mw.close()


def mw_type2():
    cq = CQ(ctx, 64)
    ops = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_BIND_MW |
           e.IBV_QP_EX_WITH_LOCAL_INV | e.IBV_QP_EX_WITH_SEND_WITH_INV)
    a, b = rc_pair(cq, ex_ops=ops)
    src = MR(pd, 4096, ACCESS)
    dst = MR(pd, 8192, ACCESS | e.IBV_ACCESS_MW_BIND)
    src.write(b"through a type 2 window", 23, 0)
    mw = MW(pd, e.IBV_MW_TYPE_2)

    def bind(rkey, wr_id, length=4096):
        b.wr_start()
        b.wr_id = wr_id
        b.wr_flags = e.IBV_SEND_SIGNALED
        b.wr_bind_mw(mw, rkey, MWBindInfo(dst, dst.buf, length, MWACC))
        b.wr_complete()
        return poll(cq, 1)

    rkey = inc_rkey(mw.rkey)
    wcs = bind(rkey, 60)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].opcode == e.IBV_WC_BIND_MW,
       "type 2 ibv_wr_bind_mw completes with IBV_WC_BIND_MW")
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf + 100, rkey, 23, 61)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       dst.read(23, 100) == b"through a type 2 window",
       "RDMA WRITE through the type 2 window's rkey lands in the region")
    # LOCAL_INV through the extended API, then the write must fail
    b.wr_start()
    b.wr_id = 62
    b.wr_flags = e.IBV_SEND_SIGNALED
    b.wr_local_inv(rkey)
    b.wr_complete()
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       wcs[0].opcode == e.IBV_WC_LOCAL_INV, "ibv_wr_local_inv of the window completes")
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf + 100, rkey, 8, 63)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_REM_ACCESS_ERR,
       "after invalidation the WRITE fails with IBV_WC_REM_ACCESS_ERR (%s)" % statuses(wcs))

    # a fresh pair: bind again with a new key byte, invalidate remotely
    a, b = rc_pair(cq, ex_ops=ops)
    rkey2 = inc_rkey(rkey)
    wcs = bind(rkey2, 64)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and rkey2 != rkey,
       "rebind after invalidation with the next key byte (%#x)" % rkey2)
    recv = MR(pd, 4096, ACCESS)
    b.post_recv(RecvWR(wr_id=65, num_sge=1, sg=[SGE(recv.buf, 64, recv.lkey)]))
    a.wr_start()
    a.wr_id = 66
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_send_inv(rkey2)
    a.wr_set_sge(SGE(src.buf, 23, src.lkey))
    a.wr_complete()
    wcs = poll(cq, 2)
    rwc = [w for w in wcs if w.wr_id == 65]
    # pyverbs' WC has no invalidated_rkey: it shares ibv_wc's union with imm_data
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs) and rwc and
       rwc[0].wc_flags & e.IBV_WC_WITH_INV and rwc[0].imm_data == rkey2,
       "SEND_WITH_INV: receive has IBV_WC_WITH_INV, invalidated_rkey %#x (%s)" %
       (rkey2, statuses(wcs)))
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf, rkey2, 8, 67)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_REM_ACCESS_ERR,
       "after SEND_WITH_INV the WRITE fails with IBV_WC_REM_ACCESS_ERR")

    ok(mw.rkey == rkey2, "mw->rkey follows the binds (%#x)" % mw.rkey)

    # bad binds: the same key byte again, beyond the region's bounds
    a, b = rc_pair(cq, ex_ops=ops)
    wcs = bind(rkey2, 68)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_MW_BIND_ERR,
       "bind keeping the key byte: IBV_WC_MW_BIND_ERR (%s)" % statuses(wcs))
    a, b = rc_pair(cq, ex_ops=ops)
    wcs = bind(inc_rkey(rkey2), 69, length=8192 + 4096)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_MW_BIND_ERR,
       "bind beyond the region's bounds: IBV_WC_MW_BIND_ERR")


# --- ATOMIC_WRITE, rereg ------------------------------------------------------------------

def atomic_write():
    cq = CQ(ctx, 64)
    a, b = rc_pair(cq, ex_ops=e.IBV_QP_EX_WITH_ATOMIC_WRITE | e.IBV_QP_EX_WITH_SEND)
    dst = MR(pd, 4096, ACCESS)
    dst.write(b"\xee" * 32, 32, 0)
    a.wr_start()
    a.wr_id = 70
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_atomic_write(dst.rkey, dst.buf + 8, struct.pack("<Q", 0x1122334455667788))
    a.wr_complete()
    wcs = poll(cq, 1)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       wcs[0].opcode == e.IBV_WC_ATOMIC_WRITE and
       dst.read(8, 8) == struct.pack("<Q", 0x1122334455667788) and
       dst.read(8, 0) == b"\xee" * 8 and dst.read(8, 16) == b"\xee" * 8,
       "ibv_wr_atomic_write places exactly 8 bytes (%s)" % statuses(wcs))


def rereg():
    cq = CQ(ctx, 64)
    a, b = rc_pair(cq)
    src = MR(pd, 4096, ACCESS)
    dst = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"after rereg", 11, 0)
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf, dst.rkey, 11, 80)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_REM_ACCESS_ERR,
       "WRITE to a region without remote write: IBV_WC_REM_ACCESS_ERR")
    dst.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, pd, 0, 0, ACCESS)
    a, b = rc_pair(cq)
    wcs = rdma_write(a, cq, src.buf, src.lkey, dst.buf, dst.rkey, 11, 81)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and dst.read(11, 0) == b"after rereg",
       "ibv_rereg_mr(CHANGE_ACCESS) grants remote write")
    try:
        dst.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, pd, 0, 0, 0)
        ok(False, "rereg CHANGE_TRANSLATION with addr 0 fails")
    except PyverbsRDMAError as ex:
        ok(ex.error_code == errno.EINVAL, "rereg CHANGE_TRANSLATION with addr 0: EINVAL")
    # a new translation: same keys, the region now covers other pages
    # private anonymous memory (a shared mapping cannot be moved into the memfd)
    area = mmap.mmap(-1, 8192, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(area))
    lkey, rkey = dst.lkey, dst.rkey
    dst.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, pd, addr, 8192, 0)
    src.write(b"moved region", 12, 0)
    wcs = rdma_write(a, cq, src.buf, src.lkey, addr + 4000, dst.rkey, 12, 82)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
       area[4000:4012] == b"moved region" and (dst.lkey, dst.rkey) == (lkey, rkey),
       "ibv_rereg_mr(CHANGE_TRANSLATION): a WRITE lands in the new pages (%s)" % statuses(wcs))
    pd2 = PD(ctx)
    dst.rereg(e.IBV_REREG_MR_CHANGE_PD, pd2, 0, 0, 0)
    wcs = rdma_write(a, cq, src.buf, src.lkey, addr, dst.rkey, 8, 83)
    ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_REM_ACCESS_ERR,
       "ibv_rereg_mr(CHANGE_PD): the QP's PD no longer reaches it (%s)" % statuses(wcs))
    dst.rereg(e.IBV_REREG_MR_CHANGE_PD, pd, 0, 0, 0)


def resize_cq():
    cq = CQ(ctx, 4)
    a, b = rc_pair(cq)
    cq.resize(64)
    ok(cq.cqe >= 64, "ibv_resize_cq to 64 (cqe %d)" % cq.cqe)
    mr = MR(pd, 4096, ACCESS)
    for i in range(8):
        b.post_recv(RecvWR(wr_id=500 + i, num_sge=1, sg=[SGE(mr.buf + 2048, 64, mr.lkey)]))
    for i in range(8):
        a.post_send(SendWR(wr_id=600 + i, opcode=e.IBV_WR_SEND, num_sge=1,
                           sg=[SGE(mr.buf, 16, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED))
    wcs = poll(cq, 16)
    ok(len(wcs) == 16 and all(w.status == e.IBV_WC_SUCCESS for w in wcs),
       "16 completions on the resized CQ (more than its first capacity)")


def refused(fn, code, desc):
    try:
        fn()
        ok(False, desc + " (it succeeded)")
    except PyverbsRDMAError as ex:
        ok(ex.error_code == code, "%s: errno %d" % (desc, ex.error_code))


def unsupported():
    # On-demand paging is supported (src/verbs/odp.c; tests/verbs/odp.c has the
    # rest); hugetlb pages only through it, as the memfd cannot take them.
    with MR(pd, 4096, ACCESS) as plain:
        with MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_ON_DEMAND,
                address=plain.buf) as odp:
            ok(odp.lkey != plain.lkey, "IBV_ACCESS_ON_DEMAND registration over the same pages")
        refused(lambda: MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_HUGETLB,
                           address=plain.buf),
                errno.EOPNOTSUPP, "IBV_ACCESS_HUGETLB without IBV_ACCESS_ON_DEMAND is EOPNOTSUPP")
    # XRC is supported (docs/xrc.md; tests/verbs/xrc_domains.c has the rest)
    with XRCD(ctx, XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD | e.IBV_XRCD_INIT_ATTR_OFLAGS,
                                0o100, -1)):  # O_CREAT
        ok(True, "ibv_open_xrcd: fd -1 opens a private XRC domain")
    # Device memory is supported (src/verbs/dm.c; tests/verbs/dm_domain.c has the
    # rest): a round trip through it from Python.
    with DM(ctx, AllocDmAttr(4096)) as dm:
        dm.copy_to_dm(8, b"xrxe-dm!", 8)
        ok(dm.copy_from_dm(8, 8) == b"xrxe-dm!", "ibv_alloc_dm: a copy in and out of device memory")


# --- every ibv_wr_* builder -------------------------------------------------------------------

def wr_builders():
    cq = CQ(ctx, 64)
    ops = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM | e.IBV_QP_EX_WITH_RDMA_WRITE |
           e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | e.IBV_QP_EX_WITH_RDMA_READ |
           e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
    a, b = rc_pair(cq, ex_ops=ops)
    mr = MR(pd, 16384, ACCESS)
    mr.write(b"ABCDEFGHIJKLMNOP", 16, 0)

    def post(fn, wr_id):
        a.wr_start()
        a.wr_id = wr_id
        a.wr_flags = e.IBV_SEND_SIGNALED
        fn()
        a.wr_complete()

    # send + set_sge_list (two pieces gathered)
    b.post_recv(RecvWR(wr_id=700, num_sge=1, sg=[SGE(mr.buf + 8192, 64, mr.lkey)]))
    post(lambda: (a.wr_send(), a.wr_set_sge_list(2, [SGE(mr.buf + 8, 8, mr.lkey),
                                                  SGE(mr.buf, 8, mr.lkey)])), 701)
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and mr.read(16, 8192) == b"IJKLMNOPABCDEFGH",
       "wr_send + wr_set_sge_list gathers two SGEs")
    # send_imm + set_inline_data_list
    b.post_recv(RecvWR(wr_id=702, num_sge=1, sg=[SGE(mr.buf + 8192, 64, mr.lkey)]))
    post(lambda: (a.wr_send_imm(0x01020304),
                  a.wr_set_inline_data_list(2, [DataBuffer(mr.buf + 4, 4), DataBuffer(mr.buf, 4)])),
         703)
    wcs = poll(cq, 2)
    r = [w for w in wcs if w.wr_id == 702]
    ok(len(wcs) == 2 and r and r[0].wc_flags & e.IBV_WC_WITH_IMM and
       mr.read(8, 8192) == b"EFGHABCD", "wr_send_imm + wr_set_inline_data_list")
    # rdma_write_imm + set_inline_data
    b.post_recv(RecvWR(wr_id=704, num_sge=1, sg=[SGE(mr.buf + 8192, 64, mr.lkey)]))
    post(lambda: (a.wr_rdma_write_imm(mr.rkey, mr.buf + 9000, 0x0a0b0c0d),
                  a.wr_set_inline_data(mr.buf, 16)), 705)
    wcs = poll(cq, 2)
    r = [w for w in wcs if w.wr_id == 704]
    ok(len(wcs) == 2 and r and r[0].opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and
       mr.read(16, 9000) == b"ABCDEFGHIJKLMNOP", "wr_rdma_write_imm + wr_set_inline_data")
    # rdma_write + set_sge, rdma_read back
    post(lambda: (a.wr_rdma_write(mr.rkey, mr.buf + 10000), a.wr_set_sge(SGE(mr.buf, 16, mr.lkey))),
         706)
    post(lambda: (a.wr_rdma_read(mr.rkey, mr.buf + 10000),
                  a.wr_set_sge(SGE(mr.buf + 11000, 16, mr.lkey))), 707)
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs) and
       mr.read(16, 11000) == b"ABCDEFGHIJKLMNOP", "wr_rdma_write + wr_rdma_read")
    # atomics
    mr.write(struct.pack("<Q", 40), 8, 12000)
    post(lambda: (a.wr_atomic_fetch_add(mr.rkey, mr.buf + 12000, 2),
                  a.wr_set_sge(SGE(mr.buf + 12008, 8, mr.lkey))), 708)
    post(lambda: (a.wr_atomic_cmp_swp(mr.rkey, mr.buf + 12000, 42, 7),
                  a.wr_set_sge(SGE(mr.buf + 12016, 8, mr.lkey))), 709)
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and struct.unpack("<Q", mr.read(8, 12008))[0] == 40 and
       struct.unpack("<Q", mr.read(8, 12016))[0] == 42 and
       struct.unpack("<Q", mr.read(8, 12000))[0] == 7,
       "wr_atomic_fetch_add then wr_atomic_cmp_swp (40 -> 42 -> 7)")
    # UD through wr_set_ud_addr
    ucq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttrEx(qp_type=e.IBV_QPT_UD, scq=ucq, rcq=ucq, cap=cap, pd=pd,
                        comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                        send_ops_flags=e.IBV_QP_EX_WITH_SEND)
    u = [QPEx(ctx, init) for _ in range(2)]
    for q in u:
        attr = QPAttr(qp_state=e.IBV_QPS_RTS, port_num=1)
        attr.qkey = 0x77
        attr.sq_psn = 0
        q.to_rts(attr)
    keep.extend(u)
    u[1].post_recv(RecvWR(wr_id=710, num_sge=1, sg=[SGE(mr.buf + 13000, 40 + 16, mr.lkey)]))
    ah = AH(pd, attr=ah_attr())
    u[0].wr_start()
    u[0].wr_id = 711
    u[0].wr_flags = e.IBV_SEND_SIGNALED
    u[0].wr_send()
    u[0].wr_set_ud_addr(ah, u[1].qp_num, 0x77)
    u[0].wr_set_sge(SGE(mr.buf, 16, mr.lkey))
    u[0].wr_complete()
    wcs = poll(ucq, 2)
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs) and
       mr.read(16, 13040) == b"ABCDEFGHIJKLMNOP", "UD wr_send + wr_set_ud_addr (%s)" %
       statuses(wcs))


# --- extended CQ -----------------------------------------------------------------------------

def cq_ex():
    flags = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM | e.IBV_WC_EX_WITH_QP_NUM |
             e.IBV_WC_EX_WITH_SRC_QP | e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
             e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
    cq = CQEX(ctx, CqInitAttrEx(cqe=32, wc_flags=flags))
    a, b = rc_pair(cq)
    mr = MR(pd, 8192, ACCESS)
    mr.write(b"extended cq", 11, 0)
    b.post_recv(RecvWR(wr_id=400, num_sge=1, sg=[SGE(mr.buf + 4096, 64, mr.lkey)]))
    w = SendWR(wr_id=401, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1,
               sg=[SGE(mr.buf, 11, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    w.imm_data = 0x12345678
    a.post_send(w)
    seen = {}
    end = time.monotonic() + 5
    # pyverbs' start_poll/poll_next return ENOENT when there is nothing
    while len(seen) < 2 and time.monotonic() < end:
        if cq.start_poll(PollCqAttr()) == errno.ENOENT:
            continue
        while True:
            seen[cq.wr_id] = (cq.status, cq.read_opcode(), cq.read_byte_len(),
                              cq.read_wc_flags(), cq.read_qp_num(), cq.read_timestamp(),
                              cq.read_completion_wallclock_ns(),
                              cq.read_imm_data() if cq.read_wc_flags() & e.IBV_WC_WITH_IMM
                              else None)
            if cq.poll_next() == errno.ENOENT:
                break
        cq.end_poll()
    ok(set(seen) == {400, 401}, "start_poll/next_poll/end_poll return both completions")
    r = seen.get(400)
    ok(r and r[0] == e.IBV_WC_SUCCESS and r[1] == e.IBV_WC_RECV and r[2] == 11 and
       r[4] == b.qp_num and r[7] is not None,
       "ibv_wc_read_*: RECV, byte_len 11, qp_num, WITH_IMM (%s)" % (r,))
    s = seen.get(401)
    ok(s and s[0] == e.IBV_WC_SUCCESS and s[1] == e.IBV_WC_SEND and s[4] == a.qp_num,
       "ibv_wc_read_*: SEND on the sender's QP")
    sec, nsec = ctx.query_rt_values_ex()
    hca_now = sec * 10**9 + nsec
    ok(r and 0 < hca_now - r[5] < 10 * 10**9,
       "ibv_query_rt_values_ex: the HCA clock runs ahead of the completion timestamp by %d ns" %
       (hca_now - (r or (0,) * 7)[5]))
    now = time.time_ns()
    ok(r and r[5] > 0 and abs(now - r[6]) < 10 * 10**9,
       "completion timestamp and wall-clock ns (%d, %d)" % ((r or (0,) * 7)[5], (r or (0,) * 7)[6]))


section("queries", queries)
if gid is None:
    print("1..%d" % tap.count)
    sys.exit(1)
section("RC traffic", rc_traffic)
section("UC traffic", uc_traffic)
section("UD traffic", ud_traffic)
section("memory window type 1", mw_type1)
section("memory window type 2", mw_type2)
section("ATOMIC_WRITE", atomic_write)
section("rereg", rereg)
section("resize CQ", resize_cq)
section("ibv_wr_* builders", wr_builders)
section("unsupported", unsupported)
section("extended CQ", cq_ex)
print("1..%d" % tap.count)
sys.exit(1 if tap.failures else 0)
