#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Send one device event the way systemd-udevd forwards it (netlink group 2, "libudev" header), so
the daemon's sd-device monitor can be tested on a machine where udevd does not run. Root only.
Usage: send_uevent.py ACTION DEVPATH SUBSYSTEM [DEVTYPE]"""
import os
import socket
import struct
import sys

NETLINK_KOBJECT_UEVENT = 15
UDEV_GROUP = 2
UDEV_MAGIC = 0xFEEDCAFE


def murmur2(data, seed=0):
    """MurmurHash2, 32 bit: what libudev/sd-device put in the header for BPF subsystem filters."""
    m, r = 0x5BD1E995, 24
    h = (seed ^ len(data)) & 0xFFFFFFFF
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = struct.unpack_from("<I", data, i)[0]
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = data[n:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    action, devpath, subsystem = sys.argv[1:4]
    devtype = sys.argv[4] if len(sys.argv) > 4 else None
    props = ["ACTION=" + action, "DEVPATH=" + devpath, "SUBSYSTEM=" + subsystem,
             "SEQNUM=%d" % (os.getpid() + 1000000)]
    if devtype:
        props.append("DEVTYPE=" + devtype)
    body = b"".join(p.encode() + b"\0" for p in props)
    header_size = 40
    header = struct.pack("!8sIIIIIIII", b"libudev\0", UDEV_MAGIC, 0, 0, 0,
                         murmur2(subsystem.encode()), murmur2(devtype.encode()) if devtype else 0, 0, 0)
    # sizes and offsets are in host order, the magic and hashes in network order
    header = header[:12] + struct.pack("=III", header_size, header_size, len(body)) + header[24:]
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_KOBJECT_UEVENT)
    s.sendto(header + body, (0, UDEV_GROUP))
    s.close()


if __name__ == "__main__":
    main()
