#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A fake /proc and /sys tree for the daemon's --root: vm files, and N BDIs (200:0 .. 200:N-1) with
their knob files and debugfs statistics, every 10th one holding 2 MiB dirty.

usage: make_fake_tree.py ROOT N [--hostile-fuse]

--hostile-fuse adds a FUSE mount (anonymous device 0:77) whose source and mount point hold a double
quote, a backslash, a newline, an ESC sequence and a byte that is not UTF-8, as mountinfo spells them
(octal escapes). Written by python: 4000 devices are 40000 files."""
import os
import sys


def put(root, path, text):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--hostile-fuse"):
        sys.exit(__doc__)
    root, n, fuse = sys.argv[1], int(sys.argv[2]), len(sys.argv) == 4
    put(root, "proc/vmstat", "nr_dirty 2560\nnr_writeback 256\nnr_dirty_threshold 1219975\n"
        "nr_dirty_background_threshold 609243\nnr_dirtied 100000\nnr_written 90000\n")
    put(root, "proc/meminfo",
        "MemTotal: 24683912 kB\nMemAvailable: 23790000 kB\nDirty: 10240 kB\nWriteback: 1024 kB\n")
    for knob, value in (("dirty_bytes", 0), ("dirty_background_bytes", 0), ("dirty_ratio", 20),
                        ("dirty_background_ratio", 10), ("dirty_writeback_centisecs", 500),
                        ("dirty_expire_centisecs", 3000)):
        put(root, "proc/sys/vm/" + knob, "%d\n" % value)
    mountinfo = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    if fuse:
        mountinfo += ("50 27 0:77 / /mnt/ev\"il\\134x\\012forged\\033[2J\\377 rw,relatime - fuse.sshfs "
                      "us\"er@h\\134x\\012forged rw\n")
    put(root, "proc/self/mountinfo", mountinfo)
    os.makedirs(os.path.join(root, "sys/class/bdi"), exist_ok=True)
    for bdi in (["0:77"] if fuse else []) + ["200:%d" % i for i in range(n)]:
        d = "sys/devices/virtual/bdi/" + bdi
        for knob, value in (("min_ratio", 0), ("max_ratio", 100), ("min_ratio_fine", 0),
                            ("max_ratio_fine", 1000000), ("min_bytes", 0), ("max_bytes", 4997017600),
                            ("strict_limit", 0)):
            put(root, d + "/" + knob, "%d\n" % value)
        os.symlink("../../devices/virtual/bdi/" + bdi, os.path.join(root, "sys/class/bdi", bdi))
        dirty = 2048 if int(bdi.split(":")[1]) % 10 == 0 else 0
        put(root, "sys/kernel/debug/bdi/%s/stats" % bdi,
            "BdiWriteback:          0 kB\nBdiReclaimable:     %5d kB\nBdiDirtyThresh:     609948 kB\n"
            "DirtyThresh:       4879900 kB\nBackgroundThresh:  2436972 kB\nBdiDirtied:         123456 kB\n"
            "BdiWritten:         120000 kB\nBdiWriteBandwidth:       0 kBps\n" % dirty)


if __name__ == "__main__":
    main()
