# SPDX-License-Identifier: GPL-2.0-or-later
"""Sample global and per-device dirty/writeback state every 100 ms in a thread."""
import threading
import time

from .util import PAGE

DEBUGFS_BDI = "/sys/kernel/debug/bdi"


def parse_kv(text):
    """'Name:   123 kB' lines -> {name: value in bytes (kB scaled) or int}."""
    out = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        parts = v.split()
        if not parts:
            continue
        try:
            n = int(parts[0], 16) if k.strip() == "state" else int(parts[0])
        except ValueError:
            continue
        if len(parts) > 1 and parts[1].startswith("kB"):
            n *= 1024
        out.setdefault(k.strip(), n)   # wb_stats repeats keys per wb; keep the first (root)
    return out


def read_vmstat():
    out = {}
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k in ("nr_dirty", "nr_writeback", "nr_dirty_threshold",
                     "nr_dirty_background_threshold", "nr_dirtied", "nr_written"):
                out[k] = int(v) * PAGE
    return out


def foreign_backlog(devices):
    """Global dirty+writeback minus the testbed's own: other users' pages."""
    g = read_vmstat()
    own = 0
    for d in devices:
        try:
            with open("%s/%s/stats" % (DEBUGFS_BDI, d.bdi)) as f:
                s = parse_kv(f.read())
            own += s.get("BdiReclaimable", 0) + s.get("BdiWriteback", 0)
        except OSError:
            pass
    return max(0, g["nr_dirty"] + g["nr_writeback"] - own)


VM_SAMPLED = ("dirty_bytes", "dirty_ratio", "dirty_background_bytes", "dirty_background_ratio")
# with knobs=True: the writeback intervals too, and each device's stored per-BDI limits
VM_SAMPLED_ALL = VM_SAMPLED + ("dirty_writeback_centisecs", "dirty_expire_centisecs")
BDI_SAMPLED = ("min_ratio_fine", "max_ratio_fine", "strict_limit")


class Sampler(threading.Thread):
    def __init__(self, devices, interval=0.1, knobs=False):
        super().__init__(daemon=True)
        self.devices = devices
        self.interval = interval
        self.knobs = knobs
        self.rows = []          # (t, global dict, {mm: dev dict})
        self.marks = []         # (t, label)
        self._halt = threading.Event()
        self.t0 = None
        self.wall0 = None       # time.time() at t0: fio's unix-epoch logs are placed with it

    def mark(self, label):
        self.marks.append((time.monotonic() - self.t0, label))

    def sample(self):
        g = read_vmstat()
        for k in (VM_SAMPLED_ALL if self.knobs else VM_SAMPLED):
            try:
                with open("/proc/sys/vm/" + k) as f:
                    g["vm." + k] = int(f.read())
            except OSError:
                pass
        devs = {}
        for d in self.devices:
            try:
                with open("%s/%s/stats" % (DEBUGFS_BDI, d.bdi)) as f:
                    s = parse_kv(f.read())
                with open("%s/%s/wb_stats" % (DEBUGFS_BDI, d.bdi)) as f:
                    w = parse_kv(f.read())
            except OSError:
                continue
            devs[d.mm] = {"dirty": s.get("BdiReclaimable", 0),
                          "writeback": s.get("BdiWriteback", 0),
                          "thresh": s.get("BdiDirtyThresh", 0),
                          "bw": s.get("BdiWriteBandwidth", 0),
                          "wb_bw": w.get("WbWriteBandwidth", 0),
                          "written": s.get("BdiWritten", 0)}
            if self.knobs:
                for k in BDI_SAMPLED:
                    try:
                        with open("/sys/class/bdi/%s/%s" % (d.bdi, k)) as f:
                            devs[d.mm][k] = int(f.read())
                    except (OSError, ValueError):
                        pass
        return g, devs

    def run(self):
        self.wall0 = time.time()
        self.t0 = time.monotonic()      # set last: callers wait for t0, then read wall0
        nxt = self.t0
        while not self._halt.is_set():
            # stamped when the reads start: a row's knob values were all read after its time (the
            # reads take a few ms; stamped at their end, a write landing meanwhile looked undone)
            t = time.monotonic() - self.t0
            g, devs = self.sample()
            self.rows.append((t, g, devs))
            nxt += self.interval
            delay = nxt - time.monotonic()
            if delay < 0:
                nxt = time.monotonic()
                delay = 0
            self._halt.wait(delay)

    def stop(self):
        self._halt.set()
        self.join(5)
