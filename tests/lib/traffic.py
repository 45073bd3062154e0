#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Test traffic for the network tests: RoCEv2-shaped UDP datagrams from kernel
sockets, hand-built Ethernet frames from a packet socket (VLAN tags, IPv4
options and fragments, IPv6 extension headers, truncation), and one-shot TCP/UDP
receivers that report what arrived. Standard library only.

  traffic.py udp DST PORT [--len N] [--tver N] [--tos N] [--count N]
      N bytes of UDP payload: a BTH (RC SEND_ONLY, TVer --tver) padded with
      zeros, the last 4 bytes standing in for the ICRC. N < 12 gives a
      truncated BTH. --tos sets IPv4 TOS / IPv6 traffic class (3 = ECN CE).
  traffic.py raw IFACE KIND --dst-mac MAC --src4 A --dst4 B --src6 A --dst6 B [--port P]
      one frame of KIND (see RAW_KINDS) out of IFACE.
  traffic.py udp-recv BIND PORT READYFILE [--timeout S]
      print "LEN SHA256" of one datagram (READYFILE appears once bound).
  traffic.py tcp-recv BIND PORT READYFILE [--timeout S]
      accept one connection, print "LEN SHA256" of everything it sent.
"""
import argparse
import hashlib
import ipaddress
import os
import socket
import struct
import sys

ROCE_PORT = 4791
BTH_LEN = 12
ICRC_LEN = 4


def bth(tver=0, opcode=0x04, pkey=0xFFFF, qpn=0x11, psn=0):
    """IBA 9.2 base transport header (RC SEND_ONLY by default)."""
    return struct.pack("!BBHII", opcode, tver & 0x0F, pkey, qpn & 0xFFFFFF,
                       psn & 0xFFFFFF)


def roce_payload(length, tver=0):
    """length bytes of UDP payload shaped like a RoCEv2 packet."""
    p = bth(tver) + bytes(max(0, length - BTH_LEN))
    return p[:length]


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


# --- kernel sockets ----------------------------------------------------------

def cmd_udp(a):
    s = socket.socket(family(a.dst), socket.SOCK_DGRAM)
    if a.tos is not None:
        if family(a.dst) == socket.AF_INET:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
        else:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, a.tos)
    payload = roce_payload(a.len, a.tver)
    for _ in range(a.count):
        s.sendto(payload, (a.dst, a.port))
    return 0


def listen(a, kind):
    s = socket.socket(family(a.bind), kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.bind, a.port))
    if kind == socket.SOCK_STREAM:
        s.listen(1)
    s.settimeout(a.timeout)
    with open(a.readyfile, "w"):
        pass
    return s


def cmd_udp_recv(a):
    s = listen(a, socket.SOCK_DGRAM)
    data = s.recv(65535)
    print(len(data), hashlib.sha256(data).hexdigest())
    return 0


def cmd_tcp_recv(a):
    s = listen(a, socket.SOCK_STREAM)
    c, _ = s.accept()
    c.settimeout(a.timeout)
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    print(n, h.hexdigest())
    return 0


# --- hand-built frames -------------------------------------------------------

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp(src, dst, sport, dport, payload, v6, length=None):
    ulen = 8 + len(payload) if length is None else length
    hdr = struct.pack("!HHHH", sport, dport, ulen, 0)
    if not v6:
        return hdr + payload  # checksum 0: "none" for IPv4
    pseudo = (ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed +
              struct.pack("!IxxxB", 8 + len(payload), socket.IPPROTO_UDP))
    c = csum(pseudo + hdr + payload) or 0xFFFF
    return struct.pack("!HHHH", sport, dport, ulen, c) + payload


def ipv4(src, dst, l4, proto=socket.IPPROTO_UDP, tos=0, options=b"", frag=0x4000):
    """frag: the flags/offset word (default DF)."""
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(l4), 0x1234, frag, 64,
                      proto, 0, ipaddress.IPv4Address(src).packed,
                      ipaddress.IPv4Address(dst).packed) + options
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + l4


def ipv6(src, dst, l4, nexthdr=socket.IPPROTO_UDP, tclass=0, ext=b""):
    first = (6 << 28) | (tclass << 20)
    return struct.pack("!IHBB16s16s", first, len(ext) + len(l4), nexthdr, 64,
                       ipaddress.IPv6Address(src).packed,
                       ipaddress.IPv6Address(dst).packed) + ext + l4


def eth(dst, src, ethertype, body, tags=()):
    """tags: (TPID, VID) pairs, outermost first."""
    out = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    for tpid, vid in tags:
        out += struct.pack("!HH", tpid, vid)
    out += struct.pack("!H", ethertype) + body
    return out.ljust(60, b"\0")  # Ethernet minimum (without FCS), as a NIC pads


ETH_IP, ETH_IPV6, QTAG, ADTAG = 0x0800, 0x86DD, 0x8100, 0x88A8


def raw_frame(kind, a, src_mac):
    port = a.port
    good = roce_payload(BTH_LEN + 16 + ICRC_LEN)
    bad = roce_payload(BTH_LEN + 16 + ICRC_LEN, tver=1)

    def v4(payload, **kw):
        length = kw.pop("udp_len", None)
        return ipv4(a.src4, a.dst4, udp(a.src4, a.dst4, 49152, port, payload, False, length), **kw)

    def v6(payload, **kw):
        return ipv6(a.src6, a.dst6, udp(a.src6, a.dst6, 49152, port, payload, True), **kw)

    def e(ethertype, body, tags=()):
        return eth(a.dst_mac, src_mac, ethertype, body, tags)

    kinds = {
        # one tag is parsed
        "vlan-roce": lambda: e(ETH_IP, v4(good), [(QTAG, 100)]),
        "vlan6-badtver": lambda: e(ETH_IPV6, v6(bad), [(QTAG, 100)]),
        "qinq-badtver": lambda: e(ETH_IP, v4(bad), [(ADTAG, 200)]),
        # two tags are not: the frame goes to the stack
        "2tags-roce": lambda: e(ETH_IP, v4(good), [(ADTAG, 200), (QTAG, 100)]),
        # IPv4 options (IHL 6) are skipped
        "ipopt-roce": lambda: e(ETH_IP, v4(good, options=b"\x01\x01\x01\x00")),
        "ipopt-badtver": lambda: e(ETH_IP, v4(bad, options=b"\x01\x01\x01\x00")),
        # fragments are the stack's, first or not
        "frag-first": lambda: e(ETH_IP, v4(good, frag=0x2000)),
        "frag-later": lambda: e(ETH_IP, ipv4(a.src4, a.dst4, bytes(40), frag=185)),
        # IPv6 with an extension header (hop-by-hop, PadN) is not walked
        "v6ext-roce": lambda: e(ETH_IPV6, ipv6(
            a.src6, a.dst6, b"\x11\x00\x01\x04\x00\x00\x00\x00" +
            udp(a.src6, a.dst6, 49152, port, good, True), nexthdr=0)),
        # an 8-byte datagram padded to 60 bytes: still too short
        "padded-short": lambda: e(ETH_IP, v4(bytes(8))),
        # UDP length claims more than the frame holds
        "truncated": lambda: e(ETH_IP, v4(good, udp_len=8 + 200)),
        # not IP at all (local experimental EtherType)
        "non-ip": lambda: e(0x88B5, bytes(46)),
    }
    if kind not in kinds:
        sys.exit("traffic.py: unknown raw kind %r (%s)" % (kind, ", ".join(sorted(kinds))))
    return kinds[kind]()


RAW_KINDS = ("vlan-roce vlan6-badtver qinq-badtver 2tags-roce ipopt-roce ipopt-badtver "
             "frag-first frag-later v6ext-roce padded-short truncated non-ip")


def cmd_raw(a):
    with open("/sys/class/net/%s/address" % a.iface) as f:
        src_mac = f.read().strip()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    s.send(raw_frame(a.kind, a, src_mac))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    u = sub.add_parser("udp")
    u.add_argument("dst")
    u.add_argument("port", type=int)
    u.add_argument("--len", type=int, default=BTH_LEN + 16 + ICRC_LEN)
    u.add_argument("--tver", type=int, default=0)
    u.add_argument("--tos", type=int)
    u.add_argument("--count", type=int, default=1)
    u.set_defaults(fn=cmd_udp)

    r = sub.add_parser("raw", epilog="kinds: " + RAW_KINDS)
    r.add_argument("iface")
    r.add_argument("kind")
    r.add_argument("--dst-mac", required=True)
    r.add_argument("--src4", required=True)
    r.add_argument("--dst4", required=True)
    r.add_argument("--src6", required=True)
    r.add_argument("--dst6", required=True)
    r.add_argument("--port", type=int, default=ROCE_PORT)
    r.set_defaults(fn=cmd_raw)

    for name, fn in (("udp-recv", cmd_udp_recv), ("tcp-recv", cmd_tcp_recv)):
        x = sub.add_parser(name)
        x.add_argument("bind")
        x.add_argument("port", type=int)
        x.add_argument("readyfile")
        x.add_argument("--timeout", type=float, default=10)
        x.set_defaults(fn=fn)

    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
