#!/usr/bin/python3
# The shim's data path through pyverbs (stock rdma-core bindings, loaded with
# the shim): an RC QP connected to itself through the daemon's loopback, then
# the posting rules of rdma-core providers (positive errno, bad_wr, nothing
# after the bad WR posted) and the data each opcode moves. Prints TAP.
#
#   LD_LIBRARY_PATH=build/lib/xrxe tests/net/verbs_post.py DEVICE [GID_INDEX]
# (run by tests/net/verbs_abi.sh inside a namespace with a daemon)
import errno
import struct
import sys

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

import pyverbs_util as tap
from pyverbs_util import ok, poll, rts_attr



def expect_err(fn, code, desc):
    try:
        fn()
    except PyverbsRDMAError as ex:
        ok(ex.error_code == code, "%s (errno %d)" % (desc, ex.error_code))
        return
    ok(False, desc + " (no error)")



dev = sys.argv[1]
gid_index = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
          e.IBV_ACCESS_REMOTE_ATOMIC)

ctx = Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2, max_recv_sge=2,
            max_inline_data=64)
init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)
qp = QP(pd, init)
mr = MR(pd, 16384, ACCESS)
A, B = mr.buf, mr.buf + 8192  # source half, destination half
# The daemon may grant more than asked (ibv_create_qp reports it back, and
# ibv_query_qp returns it): the limits below are the granted ones.
got = qp.query(e.IBV_QP_CAP)[1].cap
ok(got.max_send_sge >= 2 and got.max_inline_data >= 64 and got.max_send_wr >= 16,
   "granted caps cover the request (send_sge %d, recv_sge %d, inline %d, send_wr %d)" %
   (got.max_send_sge, got.max_recv_sge, got.max_inline_data, got.max_send_wr))

send = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(A, 16, mr.lkey)])
expect_err(lambda: qp.post_send(send), errno.EINVAL, "post_send in RESET is EINVAL")
expect_err(lambda: qp.post_recv(RecvWR(num_sge=1, sg=[SGE(B, 16, mr.lkey)])), errno.EINVAL,
           "post_recv in RESET is EINVAL")

# Connect the QP to itself: the daemon loops packets to its own GIDs back.
gid = ctx.query_gid(1, gid_index)
attr = rts_attr(gid, gid_index, qp.qp_num, ACCESS)
try:
    qp.to_rts(attr)
    ok(qp.qp_state == e.IBV_QPS_RTS, "loopback RC QP %#x reaches RTS" % qp.qp_num)
except PyverbsRDMAError as ex:
    ok(False, "loopback RC QP reaches RTS: %s" % ex)
    print("1..%d" % 3)
    sys.exit(1)

# SEND -> RECV
mr.write(b"hello through xrxe", 18, 0)
qp.post_recv(RecvWR(wr_id=100, num_sge=1, sg=[SGE(B, 64, mr.lkey)]))
qp.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(A, 18, mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED))
wcs = poll(cq, 2)
ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs),
   "SEND and RECV complete successfully (%s)" % [(w.wr_id, w.status) for w in wcs])
rwc = [w for w in wcs if w.wr_id == 100]
ok(rwc and rwc[0].byte_len == 18 and rwc[0].opcode == e.IBV_WC_RECV and
   mr.read(18, 8192) == b"hello through xrxe", "the receive buffer holds the message")

# Inline: the payload is captured at post time.
mr.write(b"I" * 64, 64, 0)
qp.post_recv(RecvWR(wr_id=101, num_sge=1, sg=[SGE(B, 128, mr.lkey)]))
qp.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(A, 64, 0)],
                    send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE))
mr.write(b"X" * 64, 64, 0)  # too late to matter
wcs = poll(cq, 2)
ok(len(wcs) == 2 and mr.read(64, 8192) == b"I" * 64,
   "inline SEND of max_inline_data bytes (lkey ignored) delivers the posted data")
expect_err(lambda: qp.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1,
                                       sg=[SGE(A, got.max_inline_data + 1, mr.lkey)],
                                       send_flags=e.IBV_SEND_INLINE)),
           errno.EINVAL, "inline beyond max_inline_data (%d) is EINVAL" % got.max_inline_data)

# Scatter/gather limits
many = [SGE(A + 8 * i, 8, mr.lkey) for i in range(got.max_send_sge + 1)]
expect_err(lambda: qp.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND, num_sge=len(many),
                                       sg=many)),
           errno.EINVAL, "num_sge > max_send_sge is EINVAL")
many = [SGE(A + 8 * i, 8, mr.lkey) for i in range(got.max_recv_sge + 1)]
expect_err(lambda: qp.post_recv(RecvWR(wr_id=5, num_sge=len(many), sg=many)), errno.EINVAL,
           "recv num_sge > max_recv_sge is EINVAL")

# RDMA WRITE then READ back, two SGEs gathered
mr.write(b"0123456789abcdef", 16, 0)
w = SendWR(wr_id=6, opcode=e.IBV_WR_RDMA_WRITE, num_sge=2,
           sg=[SGE(A, 8, mr.lkey), SGE(A + 8, 8, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
w.set_wr_rdma(mr.rkey, B + 256)
qp.post_send(w)
wcs = poll(cq, 1)
ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
   mr.read(16, 8192 + 256) == b"0123456789abcdef", "RDMA WRITE with two SGEs lands")
r = SendWR(wr_id=7, opcode=e.IBV_WR_RDMA_READ, num_sge=1, sg=[SGE(A + 1024, 16, mr.lkey)],
           send_flags=e.IBV_SEND_SIGNALED)
r.set_wr_rdma(mr.rkey, B + 256)
qp.post_send(r)
wcs = poll(cq, 1)
ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
   mr.read(16, 1024) == b"0123456789abcdef", "RDMA READ brings it back")

# Atomics: alignment is checked before posting; fetch-and-add works.
mr.write(struct.pack("<Q", 40), 8, 8192 + 512)
fa = SendWR(wr_id=8, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
            sg=[SGE(A + 2048, 8, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
fa.set_wr_atomic(mr.rkey, B + 512, 2, 0)
qp.post_send(fa)
wcs = poll(cq, 1)
ok(len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
   struct.unpack("<Q", mr.read(8, 2048))[0] == 40 and
   struct.unpack("<Q", mr.read(8, 8192 + 512))[0] == 42, "FETCH_AND_ADD returns 40, leaves 42")
bad = SendWR(wr_id=9, opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1,
             sg=[SGE(A + 2048, 8, mr.lkey)])
bad.set_wr_atomic(mr.rkey, B + 513, 0, 1)
expect_err(lambda: qp.post_send(bad), errno.EINVAL, "an unaligned atomic is EINVAL")

# A list with a bad WR in the middle: the ones before it are posted, the
# error names the bad one, nothing after it is posted.
good = SendWR(wr_id=10, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(A, 8, mr.lkey)],
              send_flags=e.IBV_SEND_SIGNALED)
good.set_wr_rdma(mr.rkey, B + 1024)
after = SendWR(wr_id=11, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(A, 8, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
after.set_wr_rdma(mr.rkey, B + 1032)
bad.next_wr = after
good.next_wr = bad
bad_wr = SendWR(num_sge=1, sg=[SGE(A, 8, mr.lkey)])
try:
    qp.post_send(good, bad_wr)
    ok(False, "a list with a bad WR fails")
except PyverbsRDMAError as ex:
    ok(ex.error_code == errno.EINVAL and bad_wr.wr_id == 9,
       "a list with a bad WR: EINVAL, bad_wr is WR %d" % bad_wr.wr_id)
wcs = poll(cq, 2, timeout=1.0)
ok([w.wr_id for w in wcs] == [10], "only the WR before it was posted (%s)" %
   [w.wr_id for w in wcs])

# Opcodes the transport does not implement (TSO: raw packet QPs only)
tso = SendWR(wr_id=12, opcode=e.IBV_WR_TSO, num_sge=1, sg=[SGE(A, 8, mr.lkey)])
expect_err(lambda: qp.post_send(tso), errno.EINVAL, "an unsupported opcode is EINVAL")

# RESET empties the queues; the shim starts over from the daemon's indices.
qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
ok(qp.qp_state == e.IBV_QPS_RESET, "modify to RESET")
try:
    qp.to_rts(attr)
    qp.post_recv(RecvWR(wr_id=102, num_sge=1, sg=[SGE(B, 64, mr.lkey)]))
    qp.post_send(SendWR(wr_id=13, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(A, 8, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))
    wcs = poll(cq, 2)
    ok(len(wcs) == 2 and all(w.status == e.IBV_WC_SUCCESS for w in wcs),
       "after RESET -> RTS the QP works again")
except PyverbsRDMAError as ex:
    ok(False, "after RESET -> RTS the QP works again: %s" % ex)

qp.close()
mr.close()
cq.close()
pd.close()
ctx.close()
ok(True, "objects destroyed")
sys.exit(1 if tap.failures else 0)
