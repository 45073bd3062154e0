#!/usr/bin/env python3
"""Group a `perf record -a -g -e cpu-clock` profile of xrxed by cost category.

    tests/bench/perf_categories.py PERF_DATA PID[,PID...]

For each daemon PID: the share of all samples, then the share of that PID's
samples per category. A sample is classified by its whole call chain first
(waking another task, sleeping), then by its leaf function. The rules are the
ones docs/performance.md reports with; they are heuristics, not a cost model.
"""
import collections
import re
import subprocess
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
data, pids = sys.argv[1], set(sys.argv[2].split(','))
p = subprocess.run(['perf','script','-i',data,'-F','pid,ip,sym,dso'],capture_output=True,text=True).stdout
def classify(frames):
    leaf_sym, leaf_dso = frames[0]
    syms = [s for s,_ in frames]
    j = ' '.join(syms)
    if re.search(r'sock_def_readable|try_to_wake_up|ep_poll_callback|__wake_up', j): return 'waking the peer daemon (wake-up, IPI)'
    if re.search(r'schedule|do_epoll_wait|ep_poll\b|sched_yield|finish_task_switch', j): return 'sleeping / context switch / yield'
    if 'clock_gettime' in leaf_sym or leaf_sym in ('main','xrxe_xsk_tx_pending','clock_gettime@plt','xrxe_tp_sq_pending','xrxe_ctrl_next_deadline','cpu_shared'): return 'event loop / idle spin'
    if 'crc32' in leaf_sym or 'icrc' in leaf_sym: return 'ICRC (ISA-L)'
    if 'kernel' in leaf_dso or 'bpf' in leaf_dso:
        if re.search(r'memcpy|copy|cow_data|xsk_rcv_zc', leaf_sym): return 'kernel: the 3 data copies (umem->skb, skb cow, skb->umem)'
        return 'kernel: copy-mode AF_XDP/veth rest (skb alloc/free, xsk, veth, XDP, syscalls)'
    if 'memmove' in leaf_sym or 'memcpy' in leaf_sym or 'copy_payload' in leaf_sym: return 'memcpy app memory <-> UMEM (user)'
    if 'xrxe_xsk' in leaf_sym or leaf_sym in ('fill_refill','comp_reap','tx_flush_batch','tp_tx_reserve','tp_tx_submit','poll_queue','loop_drain','tx_kick') or 'sendto' in leaf_sym: return 'AF_XDP ring handling (user)'
    return 'transport + parse/build (user)'
cnt = collections.defaultdict(collections.Counter)
pid = None
frames = []
def flush():
    if pid is None: return
    if pid in pids and frames: cnt[pid][classify(frames)] += 1
    cnt['_all']['x']+=1
for line in p.splitlines():
    if not line.strip():
        flush(); pid=None; frames=[]; continue
    if not line.startswith('\t') and not line.startswith(' '*8):
        m=re.match(r'\s*(\d+)',line); pid=m[1] if m else None; frames=[]
        continue
    m=re.match(r'\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$', line)
    if m: frames.append((re.sub(r'\+0x[0-9a-f]+$','',m[1]), m[2]))
flush()
allc=cnt['_all']['x']
for k in sorted(pids):
    v=cnt[k]; t=sum(v.values())
    print(f'== pid {k}: {100*t/allc:.1f}% of all samples ({t} samples)')
    for c,n in v.most_common(): print(f'   {100*n/t:5.1f}%  {c}')
