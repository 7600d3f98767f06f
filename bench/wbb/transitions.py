# SPDX-License-Identifier: GPL-2.0-or-later
"""The transitions family (issue 9): changes of state in the middle of a run.

The daemon starts or restarts over a large backlog, a device slows down 30x, an
application-paced writer turns into a full-speed burst, a writer switches on and off every
second, an admin writes a knob by hand. Each case runs with the kernel alone and with wbtuned,
interleaved, and the innocent writer is compared with its solo speed measured in the same
invocation.

Two devices: A (holds the backlog, slows down, or is the other writer) and B (the innocent
writer's device). A case is a timeline: a short function of a Ctx that starts writers, changes
throttles, writes knobs and starts/stops the daemon at fixed seconds from the start of sampling.
Daemon starts and stops are no-ops under the kernel tuning but are marked in both, so the
figures line up.
"""
import errno
import os
import re
import shutil
import signal
import subprocess
import time

from . import fio, knobs, runner, tunings
from .sampler import Sampler, DEBUGFS_BDI, parse_kv
from .util import log, warn, hold_output

M = 1 << 20
MB = 1e6
TUNINGS = ["kernel", "wbtuned"]
DRAINED_BYTES = 1 * M           # a device holding less than this has drained
LATE_S = 0.5                    # a timeline step this late is reported
BUCKET_S = 0.5                  # throughput series resolution
GROWTH_TOL_BYTES = 2 * M        # "stopped growing": within this (or 3 %) of its later peak,
GROWTH_TOL_FRACTION = 0.03
GROWTH_SMOOTH_SAMPLES = 5       # on the backlog averaged over +-5 samples (1 s): writeback
                                # completes in chunks, so the raw backlog saws by 5-10 %
ADMIN_TRACKED = {"max_bytes": "max_ratio_fine", "min_bytes": "min_ratio_fine",
                 "max_ratio": "max_ratio_fine", "min_ratio": "min_ratio_fine",
                 "strict_limit": "strict_limit"}
# a knob write as the daemon logs it: "<s> wbtuned: <device|global> <knob> <old> -> <new>: <why>"
KNOB_WRITE = re.compile(r"^([\d.]+) wbtuned: (\S+) (\S+) (.+?) -> (.+?): (.*)$")


class Writer:
    """One fio process writing one file: time-based (runtime_s) or a fixed amount
    (size_bytes); rate_bps paces it like an application; onoff_s = (on, off) seconds."""

    def __init__(self, name, role, runtime_s=None, size_bytes=None, rate_bps=None, onoff_s=None,
                 bs="1M"):
        self.name, self.role = name, role
        self.runtime_s, self.size_bytes = runtime_s, size_bytes
        self.rate_bps, self.onoff_s, self.bs = rate_bps, onoff_s, bs


def writer_jobfile(w, dev, logprefix, size_bytes):
    lines = ["[global]", "direct=0", "fallocate=none", "invalidate=0", "end_fsync=0",
             "percentile_list=50:90:99:99.9", "log_unix_epoch=1", "",
             "[%s]" % w.name, "directory=%s" % dev.mnt, "filename=%s.dat" % w.name,
             "rw=write", "ioengine=psync", "bs=%s" % w.bs, "size=%d" % size_bytes,
             "write_lat_log=%s" % logprefix]
    if w.runtime_s:
        lines += ["time_based=1", "runtime=%dms" % int(w.runtime_s * 1000)]
    if w.rate_bps:
        lines.append("rate=%d" % w.rate_bps)
    if w.onoff_s:
        on, off = w.onoff_s
        lines += ["thinktime=%dms" % int(off * 1000), "thinktime_iotime=%dms" % int(on * 1000)]
    return "\n".join(lines) + "\n"


class TCase:
    """One transition case. bps: {role: throttle at the start}; base: vm pin set before the
    run (None = the kernel's ratios as found; the daemon is not told of it unless --pin);
    innocent: the writer compared with solo; solo: the name of its solo case; slowed: the
    role of the device that slows down mid-run; drain_s: how long to wait after the writers
    for the backlogs to drain before the throttles are lifted."""

    def __init__(self, name, family, set_, desc, bps, base, script, innocent="innocent",
                 solo=None, slowed=None, drain_s=0.0):
        self.name, self.family, self.set, self.desc = name, family, set_, desc
        self.bps, self.base, self.script = bps, base, script
        self.innocent, self.solo, self.slowed, self.drain_s = innocent, solo, slowed, drain_s


def pin(dirty):
    return {"dirty_bytes": dirty, "dirty_background_bytes": dirty // 2} if dirty else None


def _mbs(bps):
    return "%g MB/s" % (bps / MB)


def _sz(n):
    return "%gG" % (n / (1 << 30)) if n >= 1 << 30 else "%gM" % (n / M)


# ------------------------------------------------------------------ the cases --
def s_start(fill_bytes):
    """A backlog of fill_bytes on A (written at memory speed, the kernel alone), then the
    daemon starts, 2 s later the innocent writer on B for 10 s."""
    def script(c):
        c.start(Writer("fill", "A", size_bytes=fill_bytes))
        c.wait("fill")
        c.mark("backlog in place")
        t = c.now()
        c.at(t + 1)
        c.daemon_start()
        c.at(t + 3)
        c.start(Writer("innocent", "B", runtime_s=10))
        c.wait_all()
    return script


def s_restart(fill_bytes):
    """The daemon runs from the start; a writer of fill_bytes on A (paced by the daemon);
    the daemon is stopped at 5 s (it restores the knobs, so the rest goes in at memory
    speed) and started again at 6 s over that backlog; the innocent writer at 8 s."""
    def script(c):
        c.daemon_start()
        c.at(0.5)
        c.start(Writer("fill", "A", size_bytes=fill_bytes))
        c.at(5)
        c.daemon_stop()
        c.at(6)
        c.daemon_start()
        c.at(8)
        c.start(Writer("innocent", "B", runtime_s=10))
        c.wait_all()
    return script


def s_slowdown(t_slow, slow_bps, t_b, end):
    """A writes at full speed; at t_slow its throttle drops to slow_bps; at t_b the
    innocent writer starts on B; both run until end."""
    def script(c):
        c.daemon_start()
        c.start(Writer("slowed", "A", runtime_s=end))
        c.at(t_slow)
        c.throttle("A", slow_bps, "A slows")
        c.at(t_b)
        c.start(Writer("innocent", "B", runtime_s=end - t_b))
        c.wait_all()
    return script


def s_paced_burst(rate_bps, t_burst, burst_s, slow_writer_s=0):
    """An application-paced writer on B (rate_bps) until t_burst, then a full-speed burst
    on the same device; optionally a steady writer on the slow device A throughout."""
    def script(c):
        c.daemon_start()
        if slow_writer_s:
            c.start(Writer("other", "A", runtime_s=slow_writer_s))
        c.start(Writer("paced", "B", runtime_s=t_burst, rate_bps=rate_bps))
        c.at(t_burst)
        c.wait("paced")
        c.start(Writer("innocent", "B", runtime_s=burst_s))
        c.wait_all()
    return script


def s_onoff(onoff_role, end, t_steady):
    """A writer switching on and off every second on onoff_role, the other device's writer
    steady from t_steady; both until end."""
    def script(c):
        c.daemon_start()
        steady_role = "B" if onoff_role == "A" else "A"
        on = Writer("onoff" if onoff_role == "A" else "innocent", onoff_role, runtime_s=end,
                    onoff_s=(1, 1))
        c.start(on)
        c.at(t_steady)
        c.start(Writer("innocent" if steady_role == "B" else "other", steady_role,
                       runtime_s=end - t_steady))
        c.wait_all()
    return script


def s_admin(t_admin, action, end, t_b):
    """Steady writers on A (from 0) and B (from t_b) until end; at t_admin an admin writes
    a knob by hand: action(c)."""
    def script(c):
        c.daemon_start()
        c.start(Writer("other", "A", runtime_s=end))
        c.at(t_b)
        c.start(Writer("innocent", "B", runtime_s=end - t_b))
        c.at(t_admin)
        action(c)
        c.wait_all()
    return script


def s_solo(runtime_s, onoff_s=None):
    """The innocent writer alone on B, from 2 s (the daemon, if any, from 0)."""
    def script(c):
        c.daemon_start()
        c.at(2)
        c.start(Writer("innocent", "B", runtime_s=runtime_s, onoff_s=onoff_s))
        c.wait_all()
    return script


def all_cases():
    """Every case, two size/speed sets ('a', 'b') per family; solo cases last."""
    MBps = 1000 * 1000
    cs = []
    # 1. start / restart over a backlog (a = the numbers, at the kernel's ratios)
    cs.append(TCase("start-a", "start", "a",
                    "1.5G dirty on A (30 MB/s, written before the daemon runs), kernel ratios as "
                    "found; daemon starts; 2 s later a 10 s writer on idle B (200 MB/s)",
                    {"A": 30 * MBps, "B": 200 * MBps}, None, s_start(1536 * M),
                    solo="solo-B200-ratios"))
    cs.append(TCase("start-b", "start", "b",
                    "250M dirty on A (8 MB/s, = 31 s of it), dirty_bytes 400M; daemon starts; "
                    "2 s later a 10 s writer on idle B (120 MB/s)",
                    {"A": 8 * MBps, "B": 120 * MBps}, pin(400 * M), s_start(250 * M),
                    solo="solo-B120-400M"))
    cs.append(TCase("restart-a", "start", "a",
                    "daemon running; a 1.5G writer on A (30 MB/s) from 0.5 s; daemon stopped at "
                    "5 s, started again at 6 s; 10 s writer on B (200 MB/s) from 8 s; kernel "
                    "ratios as found",
                    {"A": 30 * MBps, "B": 200 * MBps}, None, s_restart(1536 * M),
                    solo="solo-B200-ratios"))
    # 2. a device that slows 30x (an SLC cache running out)
    cs.append(TCase("slowdown-a", "slowdown", "a",
                    "A writes at 150 MB/s, drops to 5 MB/s at 8 s; writer on B (120 MB/s) "
                    "12-22 s; dirty_bytes 400M",
                    {"A": 150 * MBps, "B": 120 * MBps}, pin(400 * M),
                    s_slowdown(8, 5 * MBps, 12, 22), solo="solo-B120-400M", slowed="A",
                    drain_s=6))
    cs.append(TCase("slowdown-b", "slowdown", "b",
                    "A writes at 60 MB/s, drops to 2 MB/s at 6 s; writer on B (200 MB/s) "
                    "9-19 s; dirty_bytes 200M",
                    {"A": 60 * MBps, "B": 200 * MBps}, pin(200 * M),
                    s_slowdown(6, 2 * MBps, 9, 19), solo="solo-B200-200M", slowed="A",
                    drain_s=6))
    # 3. an application-paced writer, then a full-speed burst on the same device
    cs.append(TCase("paced-burst-a", "paced-burst", "a",
                    "writer on B (200 MB/s) paced at 20 MB/s for 8 s, then a 10 s full-speed "
                    "burst on B; dirty_bytes 200M",
                    {"A": 8 * MBps, "B": 200 * MBps}, pin(200 * M),
                    s_paced_burst(20 * MBps, 8, 10), solo="solo-B200-200M"))
    cs.append(TCase("paced-burst-b", "paced-burst", "b",
                    "writer on B (400 MB/s) paced at 5 MB/s for 8 s, then a 10 s burst on B; "
                    "a steady writer on A (8 MB/s) throughout; dirty_bytes 400M",
                    {"A": 8 * MBps, "B": 400 * MBps}, pin(400 * M),
                    s_paced_burst(5 * MBps, 8, 10, slow_writer_s=18), solo="solo-B400-400M"))
    # 4. a writer switching on and off every second
    cs.append(TCase("onoff-a", "onoff", "a",
                    "writer on B (120 MB/s) 1 s on / 1 s off for 12 s (the innocent one), steady "
                    "writer on A (8 MB/s) from 0 s; dirty_bytes 400M",
                    {"A": 8 * MBps, "B": 120 * MBps}, pin(400 * M),
                    s_onoff("B", 12, 0), solo="solo-B120-400M-onoff"))
    cs.append(TCase("onoff-b", "onoff", "b",
                    "writer on A (8 MB/s) 1 s on / 1 s off for 12 s, steady writer on B "
                    "(200 MB/s) 2-12 s; dirty_bytes 200M",
                    {"A": 8 * MBps, "B": 200 * MBps}, pin(200 * M),
                    s_onoff("A", 12, 2), solo="solo-B200-200M"))
    # 5. an admin writes a knob by hand while the daemon runs

    def admin_dirty(c):
        c.admin_vm("dirty_bytes", 600 * M)

    def admin_max(c):
        c.admin_bdi("A", "max_bytes", 24 * M)
    cs.append(TCase("admin-a", "admin", "a",
                    "writers on A (8 MB/s, 0-12 s) and B (120 MB/s, 2-12 s), dirty_bytes 400M; "
                    "at 5 s the admin raises vm.dirty_bytes to 600M",
                    {"A": 8 * MBps, "B": 120 * MBps}, pin(400 * M),
                    s_admin(5, admin_dirty, 12, 2), solo="solo-B120-400M"))
    cs.append(TCase("admin-b", "admin", "b",
                    "writers on A (20 MB/s, 0-12 s) and B (200 MB/s, 2-12 s), dirty_bytes 200M; "
                    "at 5 s the admin writes A's max_bytes = 24M",
                    {"A": 20 * MBps, "B": 200 * MBps}, pin(200 * M),
                    s_admin(5, admin_max, 12, 2), solo="solo-B200-200M"))
    # the innocent writers alone, same device speed, pin and shape
    cs.append(TCase("solo-B200-ratios", "solo", "", "10 s writer alone on B (200 MB/s), kernel "
                    "ratios as found", {"A": 30 * MBps, "B": 200 * MBps}, None, s_solo(10)))
    cs.append(TCase("solo-B120-400M", "solo", "", "10 s writer alone on B (120 MB/s), "
                    "dirty_bytes 400M", {"A": 8 * MBps, "B": 120 * MBps}, pin(400 * M), s_solo(10)))
    cs.append(TCase("solo-B400-400M", "solo", "", "10 s writer alone on B (400 MB/s), "
                    "dirty_bytes 400M", {"A": 8 * MBps, "B": 400 * MBps}, pin(400 * M), s_solo(10)))
    cs.append(TCase("solo-B200-200M", "solo", "", "10 s writer alone on B (200 MB/s), "
                    "dirty_bytes 200M", {"A": 8 * MBps, "B": 200 * MBps}, pin(200 * M), s_solo(10)))
    cs.append(TCase("solo-B120-400M-onoff", "solo", "", "12 s writer alone on B (120 MB/s), "
                    "1 s on / 1 s off, dirty_bytes 400M", {"A": 8 * MBps, "B": 120 * MBps},
                    pin(400 * M), s_solo(12, onoff_s=(1, 1))))
    return cs


FAMILIES = ["start", "slowdown", "paced-burst", "onoff", "admin"]


def select_cases(families=None, sets=None):
    """The chosen families' cases of the chosen sets, and the solo cases they need (first,
    so every repeat measures the reference before the cases that use it)."""
    cs = all_cases()
    fam = families or FAMILIES
    for f in fam:
        if f not in FAMILIES:
            raise ValueError("unknown transitions scenario %r (%s)" % (f, ", ".join(FAMILIES)))
    sets = sets or ["a", "b"]
    for s in sets:
        if s not in ("a", "b"):
            raise ValueError("unknown set %r (a, b)" % s)
    chosen = [c for c in cs if c.family in fam and c.set in sets]
    solos = {c.solo for c in chosen}
    return [c for c in cs if c.family == "solo" and c.name in solos] + chosen


# ------------------------------------------------------------------ one run ----
class Ctx:
    """What a case's timeline can do. Times are seconds since the sampler's start."""

    def __init__(self, tb, o, case, tuning, tag, iodir, roles, sampler, conf):
        """iodir: where job files, fio's output and the daemon's log go during the run (tmpfs:
        see Testbed.scratch_dir); conf: the daemon's config file."""
        self.tb, self.o, self.case, self.tuning, self.tag = tb, o, case, tuning, tag
        self.iodir, self.roles, self.sampler, self.conf = iodir, roles, sampler, conf
        self.late = []          # (planned s, actual s) of steps that ran > LATE_S late
        self.planned = 0.0      # the time the last at() waited for
        self.procs = {}         # name -> dict(writer, p, json, lat, t_start, t_end)
        self.daemon = None
        self.daemons = []       # dict(start, stop, log, result) per daemon instance
        self.admin = None
        self.throttles = []     # (t, role, bps) changed mid-run
        self.pool_bytes = tunings.current_limit()
        self.remembered_bdis = False
        self.dbs = {}           # name -> dict(p, log, role, t_start, t_end): dbwriter.py commit loops
        # every daemon of this run remembers device speeds in a directory of this run only: what
        # one run measured must not make the next one's "new" device known (nor touch the host's
        # /var/lib/wbtuned); a daemon restarted within the run finds what the first one learnt
        self.daemon_args = []
        if tuning == "wbtuned" and tunings.daemon_has_option(o.wbtuned_path, "--speeds-dir"):
            speeds = os.path.join(iodir, tag + ".speeds")
            os.mkdir(speeds, 0o700)
            self.daemon_args = ["--speeds-dir", speeds]

    def now(self):
        return time.monotonic() - self.sampler.t0

    def mark(self, label):
        self.sampler.mark(label)

    def _poll(self):
        for name, pr in self.dbs.items():
            if pr["t_end"] is None and pr["p"].poll() is not None:
                pr["t_end"] = self.now()
                self.tb.reap(pr["p"])
                if pr["p"].returncode != 0:
                    raise RuntimeError("database writer %s failed (rc %d)" % (name, pr["p"].returncode))
        for name, pr in self.procs.items():
            if pr["t_end"] is None and pr["p"].poll() is not None:
                pr["t_end"] = self.now()
                self.tb.reap(pr["p"])
                if pr["p"].returncode != 0:
                    with open(pr["err"]) as f:
                        err = f.read()
                    raise RuntimeError("fio %s failed (rc %d): %s" %
                                       (name, pr["p"].returncode, err.strip()[-2000:]))

    def at(self, t):
        self.planned = t
        if self.now() > t + LATE_S:
            self.late.append((t, self.now()))
        while self.now() < t:
            self._poll()
            time.sleep(min(0.05, max(0.0, t - self.now())))
        self._poll()

    # -- writers ------------------------------------------------------------
    def start(self, w):
        dev = self.roles[w.role]
        if w.size_bytes:
            size = w.size_bytes
        else:
            # a time-based job wraps around at the end of its file, and overwriting pages that
            # are still dirty adds nothing to the pool: make the file larger than it can write
            rate = w.rate_bps or self.case.bps[w.role] or 400 * M
            size = min(12 << 30, self.pool_bytes + int(rate * w.runtime_s * 1.5) + 256 * M)
        base = os.path.join(self.iodir, "%s.%s" % (self.tag, w.name))
        jf = base + ".fio"
        with open(jf, "w") as f:
            f.write(writer_jobfile(w, dev, base, size))
        with open(base + ".fio.err", "w") as err:
            p = self.tb.spawn(["fio", "--output-format=json", "--output=" + base + ".fio.json", jf],
                              stdout=subprocess.DEVNULL, stderr=err)
        if self.now() > self.planned + LATE_S:
            self.late.append((self.planned, self.now()))
        self.procs[w.name] = {"writer": w, "p": p, "json": base + ".fio.json", "err": base + ".fio.err",
                              "lat": base + "_lat.1.log", "t_start": self.now(), "t_end": None,
                              "size": size}
        self.mark("%s starts" % w.name)

    def wait(self, name, timeout_s=600):
        end = self.now() + timeout_s
        while self.procs[name]["t_end"] is None:
            if self.now() > end:
                raise RuntimeError("writer %s still running after %ds" % (name, timeout_s))
            self._poll()
            time.sleep(0.05)
        self.planned = self.now()      # the next step is due as soon as this writer ended

    def wait_all(self, timeout_s=600):
        for name in list(self.procs):
            self.wait(name, timeout_s)
        end = self.now() + timeout_s
        while any(pr["t_end"] is None for pr in self.dbs.values()):
            if self.now() > end:
                raise RuntimeError("a database writer still runs after %ds" % timeout_s)
            self._poll()
            time.sleep(0.05)

    def start_db(self, name, role, rate, runtime_s, bs=8192):
        """A database's commit loop on role's device (bench/wbb/dbwriter.py): bs bytes written
        and fsync'ed rate times a second for runtime_s; each commit's latency is logged."""
        dev = self.roles[role]
        logp = os.path.join(self.iodir, "%s.%s.commits" % (self.tag, name))
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dbwriter.py")
        p = self.tb.spawn(["python3", script, os.path.join(dev.mnt, name + ".db"), str(rate),
                           str(runtime_s), str(bs), logp],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.dbs[name] = {"p": p, "log": logp, "role": role, "rate": rate, "t_start": self.now(),
                          "t_end": None}
        self.mark("%s starts" % name)

    # -- the device ---------------------------------------------------------
    def throttle(self, role, bps, label):
        self.tb.set_throttle(self.roles[role], bps)      # journaled: undo() lifts it
        self.throttles.append((self.now(), role, bps))
        self.mark(label)

    # -- the daemon ---------------------------------------------------------
    def daemon_start(self):
        self.mark("daemon start")
        if self.tuning != "wbtuned":
            return
        if not self.remembered_bdis:
            runner.remember_all_bdis(self.tb)
            self.remembered_bdis = True
        rundir = self.tb.scratch_dir()
        sock = os.path.join(rundir, "ctl")
        if os.path.exists(sock):
            os.unlink(sock)
        logpath = os.path.join(self.iodir, "%s.wbtuned.%d.log" % (self.tag, len(self.daemons)))
        self.daemon = tunings.Daemon(self.tb, self.o.wbtuned_path, self.conf, logpath, clock=self.now,
                                     rundir=rundir, extra_args=self.daemon_args)
        self.daemons.append({"start": self.now(), "stop": None, "log": logpath, "result": None})
        if not self.daemon.wait_ready():
            warn("wbtuned not ready (socket %s missing or daemon exited)" % self.daemon.sock)

    def daemon_stop(self):
        self.mark("daemon stop")
        if not self.daemon:
            return
        self.daemons[-1]["stop"] = self.now()
        res = self.daemon.stop()
        self.daemons[-1]["result"] = res
        self.daemon = None
        if not res["clean"]:
            warn("wbtuned did not exit cleanly: %s" % res)

    # -- the admin ----------------------------------------------------------
    def admin_vm(self, knob, value):
        knobs.vm_write(knob, value)     # the run's start values are journaled: undo() restores
        self.admin = {"t": self.now(), "where": "vm", "knob": knob, "value": value,
                      "tracked": "vm." + knob, "stored": knobs.vm_read()[knob]}
        self.mark("admin: vm.%s = %s" % (knob, _sz(value)))

    def admin_bdi(self, role, knob, value):
        dev = self.roles[role]
        if knob == "max_bytes":
            # the kernel refuses a max below the min (EINVAL), and the daemon gives a strict-capped
            # device a min equal to its cap: an admin lowers the min first, as this one does
            # (compared as ratios of the limit, each rounded: a min near the new max fails too)
            cur_min = knobs.bdi_read(dev.bdi).get("min_bytes", 0)
            if cur_min > value * 9 // 10:
                knobs.bdi_write(dev.bdi, "min_bytes", 0)
                self.mark("admin: %s min_bytes %s = 0 first (the kernel refuses a max below it)"
                          % (role, _sz(cur_min)))
        try:
            knobs.bdi_write(dev.bdi, knob, value)   # testbed device: bdi_saved restores it
        except OSError as e:
            if e.errno != errno.EINVAL or knob != "max_bytes":
                raise
            # the daemon wrote a larger min meanwhile, or the ratios rounded: as an admin would, again
            knobs.bdi_write(dev.bdi, "min_bytes", 0)
            self.mark("admin: %s max_bytes refused (EINVAL); min_bytes = 0, then again" % role)
            knobs.bdi_write(dev.bdi, knob, value)
        tracked = ADMIN_TRACKED[knob]
        self.admin = {"t": self.now(), "where": dev.mm, "role": role, "knob": knob, "value": value,
                      "tracked": tracked, "stored": knobs.bdi_read(dev.bdi)[tracked]}
        self.mark("admin: %s %s = %s" % (role, knob, _sz(value)))

    def close(self):
        """Every exit path: kill writers still running, stop the daemon."""
        for name, pr in list(self.procs.items()) + list(self.dbs.items()):
            if pr["p"].poll() is None:
                try:
                    os.killpg(pr["p"].pid, signal.SIGKILL)
                except OSError:
                    pass
                pr["p"].wait()
            self.tb.reap(pr["p"])
        if self.daemon:
            self.daemon_stop()


def device_backlog(dev):
    try:
        with open("%s/%s/stats" % (DEBUGFS_BDI, dev.bdi)) as f:
            s = parse_kv(f.read())
    except OSError:
        return 0
    return s.get("BdiReclaimable", 0) + s.get("BdiWriteback", 0)


def drain(c, devs, wait_s):
    """After the writers: wait up to wait_s for every device to drain."""
    end = c.now() + wait_s
    while c.now() < end:
        if all(device_backlog(d) < DRAINED_BYTES for d in devs):
            c.mark("drained")
            return
        time.sleep(0.1)
    if wait_s:
        c.mark("drain window over")


def as_found(tb, devs):
    """What is not back at its start value after a run (empty = the kernel is as found)."""
    bad = []
    vm = knobs.vm_read()
    if vm != tb.state.d["vm_saved"]:
        bad.append("vm %s != %s" % (vm, tb.state.d["vm_saved"]))
    for mm, saved in tb.state.d["bdi_saved"].items():
        if os.path.isdir("/sys/class/bdi/" + mm) and knobs.bdi_read(mm) != saved:
            bad.append("bdi %s %s != %s" % (mm, knobs.bdi_read(mm), saved))
    thr = knobs.throttle_read()
    for d in devs:
        want = tb.state.d["throttle_saved"].get(d.mm, 0)
        if thr.get(d.mm, 0) != want:
            bad.append("throttle %s %s != %s" % (d.mm, thr.get(d.mm, 0), want))
    return bad


def run_case(tb, o, case, tuning, rep, outdir, roles, scenario="transitions"):
    """One case with one tuning. A case with an `extra(c, sampler, roles, res)` method adds its
    own figures (the first-seconds family's bounds and database commits)."""
    devs = [roles["A"], roles["B"]]
    tag = "%s__%s__%s__r%d" % (scenario, case.name, tuning, rep)
    log("run %s: %s" % (tag, case.desc))
    res = {"scenario": scenario, "case": case.name, "family": case.family, "set": case.set,
           "desc": case.desc, "tuning": tuning, "repeat": rep, "solo": case.solo,
           "innocent": case.innocent, "slowed": case.slowed, "base": case.base,
           "bps": dict(case.bps), "start": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "roles": {r: d.to_json() for r, d in roles.items()}}
    errs = tb.restore_knobs()
    if errs:
        raise RuntimeError("cannot restore knobs before run: %s" % errs)
    for d in devs:
        tb.set_throttle(d, 0)
        tb.wipe(d)
    for r, d in roles.items():
        tb.set_throttle(d, case.bps[r])
    res["foreign_at_start_bytes"] = runner.wait_quiet(tb, o)
    iodir = os.path.join(tb.scratch_dir(), tag)
    os.mkdir(iodir)
    conf = None
    if tuning == "wbtuned":
        conf = tunings.daemon_config(os.path.join(iodir, "wbtuned.conf"), tb.scratch_dir(),
                                     case if o.pin else None, o.wbtuned_config, tick_ms=o.tick_ms)
    tunings.apply_base(case.base)
    sampler = Sampler(devs, knobs=True)
    # from here until the throttles are lifted, nothing of ours writes to a disk-backed
    # file: such a write waits like any other writer, and would shift the timeline
    hold_output(True)
    tb.state.priv_copy = False
    sampler.start()
    while sampler.t0 is None:
        time.sleep(0.01)
    c = Ctx(tb, o, case, tuning, tag, iodir, roles, sampler, conf)
    if hasattr(case, "prepare"):
        case.prepare(c)
    res["pool_bytes_at_start"] = c.pool_bytes
    try:
        case.script(c)
        c.mark("writers end")
        t_writers_end = c.now()
        drain(c, devs, case.drain_s)
        c.daemon_stop()
        time.sleep(0.5)         # what the daemon's exit left behind (restore) is sampled too
        sampler.stop()
        for d in devs:
            tb.set_throttle(d, 0)
        res["teardown_sync_s"] = runner.timed_syncs(devs)
    finally:
        c.close()
        if sampler.is_alive():
            sampler.stop()
        tb.state.priv_copy = True
        tb.state.save()
        hold_output(False)
        if c.remembered_bdis:
            left = runner.restore_other_bdis(tb)
            if left:
                warn("wbtuned left knobs changed on devices outside the testbed: %s (restored)" % left)
                res["left_other_bdis"] = left
        for d in devs:
            tb.set_throttle(d, 0)
        errs = tb.restore_knobs()
        if errs:
            warn("restore after run: %s" % errs)
            res["restore_errors"] = errs
    res["not_as_found"] = as_found(tb, devs)
    if res["not_as_found"]:
        warn("after %s the kernel is not as found: %s" % (tag, res["not_as_found"]))
    res.update(measure(c, sampler, case, roles, t_writers_end))
    if hasattr(case, "extra"):
        res.update(case.extra(c, sampler, roles, res))
    res["late_steps"] = c.late
    if c.late:
        warn("%s: timeline steps ran late (planned s, actual s): %s" % (tag, c.late))
    keep_files(iodir, outdir, res)
    write_series(outdir, tag, res, sampler, roles)
    _log_summary(res)
    return res


def keep_files(iodir, outdir, res):
    """Move a run's files from tmpfs into the output dir: job files to jobs/, the rest
    (fio json, latency logs, daemon logs) to logs/."""
    moved = {}
    for name in sorted(os.listdir(iodir)):
        sub = "jobs" if name.endswith(".fio") or name.endswith(".conf") else "logs"
        dst = os.path.join(outdir, sub, name)
        shutil.move(os.path.join(iodir, name), dst)
        moved[os.path.join(iodir, name)] = os.path.relpath(dst, outdir)
    os.rmdir(iodir)
    for inst in (res.get("daemon") or {}).get("instances", []):
        inst["log"] = moved.get(inst.get("log"), inst.get("log"))
    res["files"] = sorted(moved.values())


# ------------------------------------------------------------------ figures ----
def _series_backlog(sampler, dev):
    return [(t, dd[dev.mm]["dirty"] + dd[dev.mm]["writeback"]) for t, g, dd in sampler.rows
            if dev.mm in dd]


def _at(series, t):
    """The value of a (t, v) series at the last sample at or before t (or the first)."""
    v = series[0][1] if series else 0
    for ts, x in series:
        if ts > t:
            break
        v = x
    return v


def _mark_t(marks, label):
    for t, l in marks:
        if l == label:
            return t
    return None


def growth_stop(series, t0, t1):
    """Seconds after t0 until the backlog (a (t, bytes) series) stopped growing before t1:
    when its 1 s average first came within max(2M, 3 %) of that average's peak in [t0, t1].
    Also the raw peak in [t0, t1]."""
    n = GROWTH_SMOOTH_SAMPLES
    smooth = []
    for i, (t, _) in enumerate(series):
        w = [b for _, b in series[max(0, i - n):i + n + 1]]
        smooth.append((t, sum(w) / len(w)))
    win = [(t, b) for t, b in smooth if t0 <= t <= t1]
    if not win:
        return None, 0
    raw_peak = max(b for t, b in series if t0 <= t <= t1)
    peak = max(b for _, b in win)
    tol = max(GROWTH_TOL_BYTES, GROWTH_TOL_FRACTION * peak)
    for t, b in win:
        if b >= peak - tol:
            return t - t0, raw_peak
    return None, raw_peak


def writer_figures(c, name, pr):
    out = {"t_start": pr["t_start"], "t_end": pr["t_end"], "role": pr["writer"].role}
    try:
        with open(pr["json"]) as f:
            out.update(fio.parse_single(f.read()) or {})
    except (OSError, ValueError) as e:
        out["error"] = "fio json: %s" % e
    try:
        ios = fio.read_lat_log(pr["lat"], c.sampler.wall0)
    except OSError as e:
        ios = []
        out["error"] = "latency log: %s" % e
    out["writes"] = len(ios)
    out["log_max_ms"] = max((l for _, l, _ in ios), default=None)
    buckets = {}
    for t, _, b in ios:
        k = int(t // BUCKET_S)
        buckets[k] = buckets.get(k, 0) + b
    if ios:
        k0, k1 = int(min(t for t, _, _ in ios) // BUCKET_S), int(max(t for t, _, _ in ios) // BUCKET_S)
        out["tput"] = [((k + 0.5) * BUCKET_S, buckets.get(k, 0) / BUCKET_S / MB) for k in range(k0, k1 + 1)]
    else:
        out["tput"] = []
    out["_ios"] = ios
    return out


def daemon_figures(c, sampler):
    """Knob writes the daemon logged: while it ran (policy) and at its stop (restore)."""
    runs, writes = [], []
    for d in c.daemons:
        stop = d["stop"] if d["stop"] is not None else float("inf")
        try:
            with open(d["log"]) as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            m = KNOB_WRITE.match(line)
            if m:
                t = float(m.group(1))
                writes.append({"t": t, "device": m.group(2), "knob": m.group(3), "old": m.group(4),
                               "new": m.group(5), "why": m.group(6), "at_stop": t >= stop})
        runs.append({"start": d["start"], "stop": d["stop"], "lines": len(lines),
                     "result": d["result"], "log": d["log"]})
    run_s = sum((d["stop"] or c.now()) - d["start"] for d in c.daemons)
    policy = [w for w in writes if not w["at_stop"]]
    by_knob = {}
    for w in policy:
        k = "%s %s" % ("global" if w["device"] == "global" else "device", w["knob"])
        by_knob[k] = by_knob.get(k, 0) + 1
    return {"instances": runs, "writes": writes, "policy_writes": len(policy),
            "restore_writes": len(writes) - len(policy), "policy_writes_by_knob": by_knob,
            "run_s": run_s, "policy_writes_per_min": 60 * len(policy) / run_s if run_s > 0 else None,
            "clean": all(r["result"] is None or r["result"]["clean"] for r in runs)}


def observed_changes(sampler, roles):
    """Knob values that changed between samples (every 100 ms; a lower bound on writes: a
    rewrite of the same value, or two writes within a sample, are not seen)."""
    n = 0
    prev = None
    for t, g, dd in sampler.rows:
        cur = {k: v for k, v in g.items() if k.startswith("vm.")}
        for r, d in roles.items():
            for k, v in dd.get(d.mm, {}).items():
                if k.endswith("_fine") or k == "strict_limit":
                    cur["%s.%s" % (r, k)] = v
        if prev is not None:
            n += sum(1 for k, v in cur.items() if k in prev and prev[k] != v)
        prev = cur
    return n


def admin_figures(c, sampler, roles):
    a = dict(c.admin)
    marks = sampler.marks
    t_stop = _mark_t([m for m in marks if m[0] > a["t"]], "daemon stop")

    def value(g, dd):
        if a["where"] == "vm":
            return g.get(a["tracked"])
        return dd.get(a["where"], {}).get(a["tracked"])
    over = None
    last_before_stop = None
    for t, g, dd in sampler.rows:
        if t <= a["t"]:
            continue
        v = value(g, dd)
        if t_stop is None or t < t_stop:
            last_before_stop = v
            if over is None and v is not None and v != a["stored"]:
                over = {"t_after_admin_s": t - a["t"], "value": v}
    a["overwritten"] = over
    a["value_before_daemon_stop"] = last_before_stop
    a["value_after_daemon_stop"] = value(*sampler.rows[-1][1:]) if sampler.rows else None
    a["survived"] = over is None
    a["survived_daemon_stop"] = a["value_after_daemon_stop"] == a["stored"]
    # the daemon's own log lines about that knob after the admin wrote it
    if c.daemons:
        dev = "global" if a["where"] == "vm" else roles[a["role"]].bdi
        a["daemon_writes_after"] = sum(
            1 for w in daemon_figures(c, sampler)["writes"]
            if w["t"] >= a["t"] and w["device"] == dev and
            (w["knob"] == a["knob"] or w["knob"] == a["tracked"]))
    return a


def measure(c, sampler, case, roles, t_writers_end):
    marks = sampler.marks
    w = {name: writer_figures(c, name, pr) for name, pr in c.procs.items()}
    out = {"marks": marks, "t_writers_end": t_writers_end, "writers": {}, "devices": {},
           "global": {}}
    for name, x in w.items():
        out["writers"][name] = {k: v for k, v in x.items() if k != "_ios"}
    inn = w.get(case.innocent)
    out["innocent_write"] = {k: inn.get(k) for k in ("MBps", "lat_max_ms", "clat_p99_ms", "clat_p50_ms",
                                                     "log_max_ms", "writes")} if inn else None
    g_peak, thr_min, thr_start = 0, None, None
    t_first = 0.5
    for t, g, dd in sampler.rows:
        tot = g.get("nr_dirty", 0) + g.get("nr_writeback", 0)
        g_peak = max(g_peak, tot)
        th = g.get("nr_dirty_threshold")
        if th and t_first <= t <= t_writers_end:
            thr_min = th if thr_min is None else min(thr_min, th)
        if th and thr_start is None:
            thr_start = th
    out["global"] = {"peak_bytes": g_peak, "thresh_min_bytes": thr_min, "thresh_start_bytes": thr_start}
    t_inn = inn["t_start"] if inn else None
    for r, d in roles.items():
        s = _series_backlog(sampler, d)
        out["devices"][r] = {"mm": d.mm, "peak_backlog_bytes": max((b for _, b in s), default=0),
                             "backlog_at_innocent_start_bytes": _at(s, t_inn) if t_inn is not None else None,
                             "backlog_at_writers_end_bytes": _at(s, t_writers_end)}
    if case.slowed:
        r = case.slowed
        d = roles[r]
        s = _series_backlog(sampler, d)
        t_slow = _mark_t(marks, "%s slows" % r)
        own = [x for x in w.values() if x["role"] == r]
        t_own_end = max((x["t_end"] for x in own if x["t_end"] is not None), default=t_writers_end)
        stop_s, peak = growth_stop(s, t_slow, t_own_end)
        drained = None
        for t, b in s:
            if t >= t_own_end and b < DRAINED_BYTES:
                drained = t - t_slow
                break
        last_t, last_b = s[-1] if s else (t_own_end, 0)
        est = None
        if drained is None:
            # not drained within the wait: what is left, at the speed it was slowed to
            bps = [b for _, role, b in c.throttles if role == r][-1]
            est = (last_t - t_slow) + last_b / bps
        after = [l for x in own for (t, l, _) in x["_ios"] if t >= t_slow]
        out["slowed"] = {"role": r, "t_slow": t_slow, "backlog_at_slow_bytes": _at(s, t_slow),
                         "growth_stop_s": stop_s, "peak_after_bytes": peak,
                         "drain_s": drained, "drain_est_s": est,
                         "writer_max_after_ms": max(after, default=None),
                         "writer_writes_after": len(after)}
    if c.daemons:
        out["daemon"] = daemon_figures(c, sampler)
    out["observed_knob_changes"] = observed_changes(sampler, roles)
    if c.admin:
        out["admin"] = admin_figures(c, sampler, roles)
    return out


def write_series(outdir, tag, res, sampler, roles):
    """series/<tag>.tsv: MB over time; series/<tag>.tput.tsv: each writer's MB/s per bucket."""
    p = os.path.join(outdir, "series", tag + ".tsv")
    with open(p, "w") as f:
        f.write("# t\tglobal_dirty+wb\tglobal_thresh\tA_backlog\tB_backlog\tA_dirty\tB_dirty (MB)\n")
        for t, g, dd in sampler.rows:
            row = [t, (g.get("nr_dirty", 0) + g.get("nr_writeback", 0)) / M,
                   g.get("nr_dirty_threshold", 0) / M]
            for r in ("A", "B"):
                x = dd.get(roles[r].mm, {})
                row.append((x.get("dirty", 0) + x.get("writeback", 0)) / M)
            for r in ("A", "B"):
                row.append(dd.get(roles[r].mm, {}).get("dirty", 0) / M)
            f.write("\t".join("%.3f" % v for v in row) + "\n")
    res["series"] = os.path.relpath(p, outdir)
    names = list(res["writers"])
    p2 = os.path.join(outdir, "series", tag + ".tput.tsv")
    ts = sorted({t for n in names for t, _ in res["writers"][n]["tput"]})
    with open(p2, "w") as f:
        f.write("# t\t" + "\t".join(names) + " (MB/s per %.1f s)\n" % BUCKET_S)
        for t in ts:
            vals = []
            for n in names:
                d = dict(res["writers"][n]["tput"])
                vals.append("%.3f" % d[t] if t in d else "NaN")
            f.write("%.2f\t%s\n" % (t, "\t".join(vals)))
    res["tput_series"] = os.path.relpath(p2, outdir)
    res["tput_columns"] = names


def _log_summary(res):
    parts = []
    iw = res.get("innocent_write")
    if iw and iw.get("MBps") is not None:
        parts.append("innocent %.1f MB/s, longest write %.0f ms, p99 %.1f ms" %
                     (iw["MBps"], iw["lat_max_ms"] or 0, iw["clat_p99_ms"] or 0))
    sl = res.get("slowed")
    if sl:
        parts.append("%s backlog %.0fM at slowdown, peak %.0fM, growth stops after %s s, drain %s" %
                     (sl["role"], sl["backlog_at_slow_bytes"] / M, sl["peak_after_bytes"] / M,
                      "%.1f" % sl["growth_stop_s"] if sl["growth_stop_s"] is not None else "?",
                      "%.1f s" % sl["drain_s"] if sl["drain_s"] is not None else
                      "~%.0f s (est.)" % (sl["drain_est_s"] or 0)))
    dm = res.get("daemon")
    if dm:
        parts.append("daemon wrote %d knobs (+%d at stop)" % (dm["policy_writes"], dm["restore_writes"]))
    ad = res.get("admin")
    if ad:
        parts.append("admin's %s %s" % (ad["knob"], "survived" if ad["survived"] else
                                        "overwritten after %.1f s" % ad["overwritten"]["t_after_admin_s"]))
    parts.append("dirty threshold min %.0fM" % ((res["global"]["thresh_min_bytes"] or 0) / M))
    log("  " + "; ".join(parts))


# ------------------------------------------------------------------ driver -----
def run_family(tb, o, tuning_list, outdir, on_result):
    """Build A and B on tb, then repeats x cases x tunings, interleaved."""
    cases = select_cases(o.variants, o.sets)
    fs = o.fs or ["ext4"]
    fs_a, fs_b = fs[0], fs[1] if len(fs) > 1 else fs[0]
    a = tb.add_device(fs_a, 0)
    b = tb.add_device(fs_b, 0)
    roles = {"A": a, "B": b}
    tl = [t for t in tuning_list if t in TUNINGS]
    skipped = [t for t in tuning_list if t not in TUNINGS]
    if skipped:
        warn("transitions compares kernel and wbtuned only; not running %s" % ", ".join(skipped))
    results = []
    for rep in range(o.transitions_repeat):
        for case in cases:
            for t in tl:
                results.append(run_case(tb, o, case, t, rep, outdir, roles))
                on_result(results)
    return results
