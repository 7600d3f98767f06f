#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Stand-in for wbtuned's control socket: answers each request with a canned reply line.

The reply to verb V is the content of DIR/V (sent as it is, bytes and all, plus a newline),
so a test can hand wbtunectl any reply: hostile names, missing fields, wrong types."""
import argparse, json, os, signal, socketserver, sys

ap = argparse.ArgumentParser()
ap.add_argument("path", help="AF_UNIX stream socket to listen on")
ap.add_argument("replies", help="directory holding one reply file per verb")
ap.add_argument("--timeout", type=float, default=120.0, help="exit after this many seconds")
args = ap.parse_args()

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGALRM, lambda *_: sys.exit(0))
signal.setitimer(signal.ITIMER_REAL, args.timeout)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            try:
                verb = json.loads(line)["verb"]
                with open(os.path.join(args.replies, os.path.basename(verb)), "rb") as f:
                    reply = f.read().rstrip(b"\n")
            except (ValueError, KeyError, TypeError, OSError):
                reply = b'{"version":2,"ok":false,"error":"no canned reply","errno":"EOPNOTSUPP"}'
            self.wfile.write(reply + b"\n")
            self.wfile.flush()


if os.path.exists(args.path):
    os.unlink(args.path)
server = socketserver.UnixStreamServer(args.path, Handler)
try:
    server.serve_forever()
finally:
    os.unlink(args.path)
