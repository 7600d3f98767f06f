# SPDX-License-Identifier: GPL-2.0-or-later
"""Tunings compared side by side.

How a tuning combines with the scenario's base (its dirty_bytes pin, e.g. thresh's
1M..1000M or slowfast's 400M):
  kernel            the base as is (no pin: whatever was set when wbbench started)
  static-16M        replaces the base: dirty_bytes 16M, dirty_background_bytes 8M
  tuned-throughput  replaces the base: dirty_ratio 40, dirty_background_ratio 10
  tuned-latency     replaces the base: dirty_ratio 10, dirty_background_ratio 3
  oracle            the base, then per device with a known bandwidth (its throttle)
                    max_bytes = bandwidth x 2 s, plus strict_limit=1 on the slow
                    device(s); per-BDI bytes are written after the global knobs
                    because the kernel stores them as a ratio of the current limit
  wbtuned           the base (passed to the daemon as its dirty_bytes pin), then the
                    daemon runs in the foreground for the whole run
"""
import os
import signal
import subprocess
import threading
import time

from . import knobs
from .util import read, write, log, warn, PAGE

ALL = ["kernel", "static-16M", "tuned-throughput", "tuned-latency", "oracle", "wbtuned"]
M = 1 << 20
ORACLE_SECONDS = 2
ORACLE_FLOOR = 4 * M
SLOW_FRACTION = 0.25       # a device this much slower than the fastest is "slow"


def apply_base(base):
    if base:
        knobs.vm_set_dirty(bytes_=base["dirty_bytes"], bg_bytes=base["dirty_background_bytes"])


def current_limit():
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("nr_dirty_threshold "):
                return int(line.split()[1]) * PAGE
    return 0


def apply(tuning, case, applied):
    """Set the knobs of a tuning (not the daemon). `applied` collects what was done."""
    if tuning == "static-16M":
        knobs.vm_set_dirty(bytes_=16 * M, bg_bytes=8 * M)
    elif tuning == "tuned-throughput":
        knobs.vm_set_dirty(ratio=40, bg_ratio=10)
    elif tuning == "tuned-latency":
        knobs.vm_set_dirty(ratio=10, bg_ratio=3)
    elif tuning in ("kernel", "oracle", "wbtuned"):
        apply_base(case.base)
    else:
        raise ValueError("unknown tuning %r (one of %s)" % (tuning, ", ".join(ALL)))
    if tuning == "oracle":
        known = [d for d in case.devices if d.bps]
        fastest = max([d.bps for d in known], default=0)
        limit = current_limit()
        for d in known:
            cap = max(ORACLE_FLOOR, d.bps * ORACLE_SECONDS)
            if cap >= limit:
                applied.setdefault("notes", []).append(
                    "%s: cap %dM >= global limit %dM, not set" % (d.name, cap >> 20, limit >> 20))
                continue
            knobs.bdi_write(d.bdi, "max_bytes", cap)
            slow = len(known) > 1 and d.bps <= SLOW_FRACTION * fastest
            if slow:
                knobs.bdi_write(d.bdi, "strict_limit", 1)
            applied.setdefault("bdi", {})[d.bdi] = {"max_bytes": cap, "strict_limit": int(slow)}
    applied["vm"] = knobs.vm_read()
    applied["limit_bytes"] = current_limit()


# ------------------------------------------------------------------ wbtuned --
def find_wbtuned(explicit, bench_dir):
    cands = [explicit] if explicit else []
    if os.environ.get("WBTUNED"):
        cands.append(os.environ["WBTUNED"])
    cands += [os.path.join(bench_dir, "..", "src", "wbtuned"),
              os.path.join(bench_dir, "..", "build", "src", "wbtuned")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


_help_cache = {}


def daemon_has_option(binary, option):
    """Whether this daemon build knows a command-line option (older builds in a comparison do not)."""
    if binary not in _help_cache:
        try:
            _help_cache[binary] = subprocess.run([binary, "--help"], capture_output=True, text=True,
                                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            _help_cache[binary] = ""
    return option in _help_cache[binary]


def daemon_config(path, priv, case, extra_file=None, tick_ms=100):
    """A private config for the daemon: auto mode, our socket, the scenario's pin."""
    if extra_file:
        text = read(extra_file)
    else:
        lines = ["# written by wbbench", "[daemon]", "tick = %dms" % tick_ms,
                 "socket = %s" % os.path.join(priv, "ctl"), "", "[policy]", "mode = auto"]
        if case is not None and case.base:
            lines += ["dirty_bytes = %d" % case.base["dirty_bytes"],
                      "dirty_background_bytes = %d" % case.base["dirty_background_bytes"]]
        text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return path


class Daemon:
    def __init__(self, tb, binary, conf, logpath, extra_args=(), clock=None, rundir=None):
        """clock: a function giving seconds since the run's start; each line the daemon
        prints is then logged as '<seconds> <line>' (its own lines carry no time).
        rundir: where its socket (and so its saved originals) go, default the private dir."""
        self.sock = os.path.join(rundir or tb.priv, "ctl")
        self.cmd = [binary, "--socket", self.sock, "-c", conf] + list(extra_args)
        self.tb = tb
        self.logf = open(logpath, "w")
        self.reader = None
        log("starting " + " ".join(self.cmd))
        if clock is None:
            self.p = tb.spawn(self.cmd, stdout=self.logf, stderr=self.logf)
        else:
            self.p = tb.spawn(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace")
            self.reader = threading.Thread(target=self._copy_stamped, args=(clock,), daemon=True)
            self.reader.start()
        self.started = time.monotonic()

    def _copy_stamped(self, clock):
        for line in self.p.stdout:
            self.logf.write("%.3f %s" % (clock(), line))
        self.logf.flush()

    def wait_ready(self, timeout=5.0):
        """Until the control socket exists (or the daemon dies, or timeout)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.p.poll() is not None:
                return False
            if os.path.exists(self.sock):
                return True
            time.sleep(0.05)
        return self.p.poll() is None

    def stop(self, timeout=15.0):
        """SIGTERM; returns {"rc":..., "clean": bool, "error": ...}."""
        res = {"cmd": self.cmd}
        if self.p.poll() is not None:
            res["error"] = "daemon died during the run (rc %s)" % self.p.returncode
        else:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except Exception:
                self.p.kill()
                self.p.wait()
                res["error"] = "did not exit %ds after SIGTERM" % timeout
        res["rc"] = self.p.returncode
        res["clean"] = self.p.returncode == 0 and "error" not in res
        self.tb.reap(self.p)
        if self.reader:
            self.reader.join(5)
        self.logf.close()
        return res
