#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A database's commit loop: write BS bytes at a random aligned offset of a file, fsync,
RATE times a second, for RUNTIME seconds; a commit that overran its slot is followed at once
by the next, and the slots it missed are not made up (so commits/s says how many of those
asked for got through). One line per commit to OUT: '<unix start> <seconds>' (the
write+fsync latency). Run by the first-seconds family (firstsec.py)."""
import os
import random
import sys
import time


def main(argv):
    if len(argv) != 6:
        print("usage: dbwriter.py FILE RATE RUNTIME_S BS OUT", file=sys.stderr)
        return 2
    path, rate, runtime_s, bs, out = argv[1], float(argv[2]), float(argv[3]), int(argv[4]), argv[5]
    if rate <= 0 or runtime_s <= 0 or bs <= 0 or bs % 4096:
        print("dbwriter.py: RATE and RUNTIME_S > 0, BS a multiple of 4096", file=sys.stderr)
        return 2
    size = 64 << 20
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.ftruncate(fd, size)
    os.fsync(fd)
    buf = os.urandom(bs)
    rnd = random.Random(1)
    lines = []
    t0 = time.monotonic()
    wall0 = time.time() - t0
    i = 0
    while True:
        due = t0 + i / rate
        now = time.monotonic()
        if due - t0 >= runtime_s:
            break
        if due > now:
            time.sleep(due - now)
        start = time.monotonic()
        os.pwrite(fd, buf, rnd.randrange(size // bs) * bs)
        os.fsync(fd)
        lines.append("%.6f %.6f\n" % (wall0 + start, time.monotonic() - start))
        i = max(i + 1, int((time.monotonic() - t0) * rate))
    os.close(fd)
    with open(out, "w") as f:
        f.writelines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
