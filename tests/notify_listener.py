#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Stand-in for systemd's notify socket: print every sd_notify datagram, one line per field."""
import argparse, os, signal, socket, sys

ap = argparse.ArgumentParser()
ap.add_argument("path", help="AF_UNIX datagram socket to bind (NOTIFY_SOCKET)")
ap.add_argument("--out", help="append messages here instead of stdout")
ap.add_argument("--timeout", type=float, default=120.0, help="exit after this many seconds")
args = ap.parse_args()

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGALRM, lambda *_: sys.exit(0))
signal.setitimer(signal.ITIMER_REAL, args.timeout)

if os.path.exists(args.path):
    os.unlink(args.path)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
sock.bind(args.path)
out = open(args.out, "a", buffering=1) if args.out else sys.stdout
try:
    while True:
        data = sock.recv(4096)
        for field in data.decode("utf-8", "replace").splitlines():
            print(field, file=out, flush=True)
finally:
    sock.close()
    os.unlink(args.path)
