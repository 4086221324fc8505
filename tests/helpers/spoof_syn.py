#!/usr/bin/env python3
"""spoof_syn.py IFACE SRC_IP DST_MAC DST_IP PORT

An attacker on the host's link: sends one TCP SYN for DST_IP:PORT out of IFACE, framed for the
MAC DST_MAC (the host), with a destination the host must never forward, such as 127.0.0.1.
Prints "answered" when any TCP segment from DST_IP:PORT comes back within 3 s (the host let the
connection through), else "silent". Needs CAP_NET_RAW in the namespace of IFACE."""
import random
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def syn(src, dst, sport, dport):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, random.getrandbits(32), 0, 5 << 4, 0x02,
                      64240, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.getrandbits(16), 0, 64, 6,
                     0, socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return ip + tcp


def main():
    iface, src, dst_mac, dst, port = sys.argv[1:6]
    port = int(port)
    sport = random.randint(40000, 60000)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    s.bind((iface, ETH_P_IP))
    mine = s.getsockname()[4][:6]
    frame = bytes.fromhex(dst_mac.replace(":", "")) + mine + struct.pack("!H", ETH_P_IP)
    s.send(frame + syn(src, dst, sport, port))
    s.settimeout(0.2)
    end = time.time() + 3
    while time.time() < end:
        try:
            pkt = s.recv(2048)[14:]
        except socket.timeout:
            continue
        if len(pkt) < 40 or pkt[9] != 6:
            continue
        ihl = (pkt[0] & 0xF) * 4
        psrc = socket.inet_ntoa(pkt[12:16])
        sp, dp = struct.unpack("!HH", pkt[ihl:ihl + 4])
        if psrc == dst and sp == port and dp == sport:
            print("answered")
            return
    print("silent")


main()
