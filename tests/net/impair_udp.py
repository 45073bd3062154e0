#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Numbered UDP datagrams for tests/net/impair.sh, and a receiver that reports
which of them arrived and with which ECN bits. Standard library only.

  impair_udp.py send DST PORT [--count N] [--len N] [--tos N] [--pps N]
      N datagrams of --len bytes of payload from a kernel socket, each
      starting with its 32-bit sequence number; --tos sets the IPv4 TOS / IPv6
      traffic class (its low 2 bits are ECN); --pps paces them (0: flat out).
  impair_udp.py send-raw IFACE DST_MAC SRC DST PORT [--count N] [--len N]
      the same frames built whole and sent from a packet socket, with the UDP
      checksum computed here: the receiver verifies it (a kernel socket on a
      veth leaves it to an offload that is never done, so corruption would go
      unseen).
  impair_udp.py recv BIND PORT READYFILE [--idle S] [--timeout S]
      count datagrams until none came for --idle seconds; print one JSON
      object: received, duplicates, per-ECN counts, and "ecn_by_seq", one
      character per sequence number ('.' missing, else the ECN value 0-3 of
      its first copy).
"""
import argparse
import ipaddress
import json
import os
import socket
import struct
import sys
import time

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
IPV6_RECVTCLASS = getattr(socket, "IPV6_RECVTCLASS", 66)
IPV6_TCLASS = getattr(socket, "IPV6_TCLASS", 67)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def payload(seq, length):
    return struct.pack("!I", seq) + bytes(max(0, length - 4))


def cmd_send(a):
    s = socket.socket(family(a.dst), socket.SOCK_DGRAM)
    if family(a.dst) == socket.AF_INET:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
    else:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_TCLASS, a.tos)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    gap = 1.0 / a.pps if a.pps else 0
    t0 = time.monotonic()
    for i in range(a.count):
        if gap:
            # absolute schedule: no drift from sleep overshoot
            delay = t0 + i * gap - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        while True:
            try:
                s.sendto(payload(i, a.len), (a.dst, a.port))
                break
            except BlockingIOError:
                time.sleep(0.001)
            except OSError as e:  # ENOBUFS from a full qdisc: wait, resend
                if e.errno != 105:
                    raise
                time.sleep(0.001)
    return 0


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dst_mac, src_mac, src, dst, port, body):
    v6 = ":" in dst
    ulen = 8 + len(body)
    sa, da = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
    if v6:
        pseudo = sa + da + struct.pack("!IxxxB", ulen, socket.IPPROTO_UDP)
    else:
        pseudo = sa + da + struct.pack("!xBH", socket.IPPROTO_UDP, ulen)
    hdr = struct.pack("!HHHH", 40000, port, ulen, 0)
    c = csum(pseudo + hdr + body) or 0xFFFF
    l4 = struct.pack("!HHHH", 40000, port, ulen, c) + body
    if v6:
        l3 = struct.pack("!IHBB16s16s", 6 << 28, len(l4), socket.IPPROTO_UDP, 64, sa, da) + l4
        et = 0x86DD
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, 64,
                         socket.IPPROTO_UDP, 0, sa, da)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        l3 = ip + l4
        et = 0x0800
    mac = lambda m: bytes.fromhex(m.replace(":", ""))
    return (mac(dst_mac) + mac(src_mac) + struct.pack("!H", et) + l3).ljust(60, b"\0")


def cmd_send_raw(a):
    with open("/sys/class/net/%s/address" % a.iface) as f:
        src_mac = f.read().strip()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    for i in range(a.count):
        fr = frame(a.dst_mac, src_mac, a.src, a.dst, a.port, payload(i, a.len))
        while True:
            try:
                s.send(fr)
                break
            except OSError as e:
                if e.errno not in (105, 11):
                    raise
                time.sleep(0.001)
    return 0


def cmd_recv(a):
    fam = family(a.bind)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    # Larger than any burst a test sends: the receiver must lose nothing.
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 25)
    if fam == socket.AF_INET:
        s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    else:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVTCLASS, 1)
    s.bind((a.bind, a.port))
    with open(a.readyfile, "w"):
        pass
    seen = {}
    received = dups = 0
    ecn_counts = [0, 0, 0, 0]
    deadline = time.monotonic() + a.timeout
    s.settimeout(a.timeout)
    while True:
        try:
            data, anc, _, _ = s.recvmsg(65535, socket.CMSG_SPACE(4))
        except socket.timeout:
            break
        tos = 0
        for level, kind, value in anc:
            if value:
                tos = value[0] if len(value) == 1 else struct.unpack("i", value[:4])[0]
        ecn = tos & 3
        received += 1
        ecn_counts[ecn] += 1
        if len(data) >= 4:
            seq = struct.unpack("!I", data[:4])[0]
            if seq in seen:
                dups += 1
            else:
                seen[seq] = ecn
        s.settimeout(max(0.01, min(a.idle, deadline - time.monotonic())))
        if time.monotonic() > deadline:
            break
    top = max(seen) + 1 if seen else 0
    by_seq = "".join(str(seen[i]) if i in seen else "." for i in range(top))
    print(json.dumps({"received": received, "unique": len(seen), "duplicates": dups,
                      "not_ect": ecn_counts[0], "ect1": ecn_counts[1],
                      "ect0": ecn_counts[2], "ce": ecn_counts[3], "ecn_by_seq": by_seq}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("dst")
    s.add_argument("port", type=int)
    s.add_argument("--count", type=int, default=1)
    s.add_argument("--len", type=int, default=64)
    s.add_argument("--tos", type=int, default=0)
    s.add_argument("--pps", type=float, default=0)
    s.set_defaults(fn=cmd_send)
    r = sub.add_parser("send-raw")
    for name in ("iface", "dst_mac", "src", "dst"):
        r.add_argument(name)
    r.add_argument("port", type=int)
    r.add_argument("--count", type=int, default=1)
    r.add_argument("--len", type=int, default=64)
    r.set_defaults(fn=cmd_send_raw)
    v = sub.add_parser("recv")
    v.add_argument("bind")
    v.add_argument("port", type=int)
    v.add_argument("readyfile")
    v.add_argument("--idle", type=float, default=1.0)
    v.add_argument("--timeout", type=float, default=30)
    v.set_defaults(fn=cmd_recv)
    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
