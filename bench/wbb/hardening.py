# SPDX-License-Identifier: GPL-2.0-or-later
"""`wbbench soak` and `wbbench crash`: the daemon on the live testbed for a long time (devices coming
and going, writers starting and stopping, reloads, valgrind) and killed -9 at random points; both
check that every vm knob and every knob of every BDI ends exactly as it was before the first start.

Both run under the live-kernel lock (Testbed) and undo everything on every exit path."""
import fcntl
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

from . import knobs, tunings
from .fio import Group, jobfile
from .testbed import Testbed
from .util import log, read, run

M = 1 << 20
LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81
CHURN_FIRST_INDEX = 200          # loop devices we create and remove have indexes from here


# ---- knobs ------------------------------------------------------------------------------------
def snapshot():
    """Every vm knob and every knob of every BDI (the exact *_ratio_fine, not the *_bytes views)."""
    return {"vm": knobs.vm_read(),
            "bdi": {os.path.basename(d): knobs.bdi_read(os.path.basename(d))
                    for d in sorted(glob.glob("/sys/class/bdi/*"))}}


def differences(before, after):
    """What differs between two snapshots, for the BDIs in both (a device that came or went meanwhile
    has nothing to compare)."""
    out = []
    for k, v in before["vm"].items():
        if after["vm"].get(k) != v:
            out.append("vm.%s %s -> %s" % (k, v, after["vm"].get(k)))
    for mm, kn in before["bdi"].items():
        if mm not in after["bdi"]:
            continue
        for k, v in kn.items():
            if after["bdi"][mm].get(k) != v:
                out.append("bdi %s %s %s -> %s" % (mm, k, v, after["bdi"][mm].get(k)))
    return out


def n_knobs(snap):
    return len(snap["vm"]) + sum(len(v) for v in snap["bdi"].values())


def journal_every_bdi(tb):
    """The daemon may tune any device: journal all of them so that the testbed's cleanup puts back
    whatever the daemon did not."""
    tb.state.d["daemon_bdi_pre"] = snapshot()["bdi"]
    tb.state.save()


def put_back(tb, snap):
    """Restore snap ourselves (after a failed check, so that the next iteration starts clean)."""
    errs = knobs.vm_restore(snap["vm"])
    for mm, saved in snap["bdi"].items():
        if os.path.isdir("/sys/class/bdi/" + mm):
            errs += knobs.bdi_restore(mm, saved)
    return errs


# ---- sd_notify ---------------------------------------------------------------------------------
class NotifyListener:
    """Stands in for systemd's notify socket: remembers when each message came."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.events = []                 # (monotonic time, field)
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            now = time.monotonic()
            for field in data.decode("utf-8", "replace").splitlines():
                self.events.append((now, field))

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def watchdog_gaps(self, since, until):
        """Gaps between READY=1 / WATCHDOG=1 pings in [since, until]."""
        t = [e[0] for e in self.events if since <= e[0] <= until and e[1] in ("WATCHDOG=1", "READY=1")]
        return [b - a for a, b in zip(t, t[1:])]


# ---- the daemon ---------------------------------------------------------------------------------
class Daemon:
    def __init__(self, tb, binary, conf, sock, logpath, notify=None, watchdog_usec=0, valgrind_log=None):
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env.pop("WATCHDOG_USEC", None)
        env.pop("WATCHDOG_PID", None)
        if notify:
            env["NOTIFY_SOCKET"] = notify
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        cmd = [binary, "--socket", sock, "-c", conf]
        if valgrind_log:
            cmd = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
                   "--log-file=" + valgrind_log] + cmd
        self.tb, self.sock, self.cmd = tb, sock, cmd
        self.logf = open(logpath, "a")
        self.logf.write("--- %s\n" % " ".join(cmd))
        self.logf.flush()
        self.p = tb.spawn(cmd, stdout=self.logf, stderr=self.logf, env=env)
        self.started = time.monotonic()

    def wait_ready(self, timeout):
        """Until the control socket answers (the daemon restored, sampled and opened it)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.p.poll() is not None:
                return False
            if os.path.exists(self.sock):
                try:
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                        c.settimeout(2)
                        c.connect(self.sock)
                        c.sendall(b'{"verb":"status"}\n')
                        if c.recv(65536):
                            return True
                except OSError:
                    pass
            time.sleep(0.02)
        return False

    def memory_kb(self):
        """VmRSS and VmHWM of the daemon process (valgrind's when under valgrind)."""
        out = {}
        for line in read("/proc/%d/status" % self.p.pid, "").splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
        return out

    def signal(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM; its exit status (None if it had to be killed)."""
        self.signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        self.tb.reap(self.p)
        self.logf.close()
        return rc

    def kill9(self):
        self.signal(signal.SIGKILL)
        self.p.wait()
        self.tb.reap(self.p)
        self.logf.close()


def daemon_conf(path, sock, tick_ms):
    with open(path, "w") as f:
        f.write("# written by wbbench\n[daemon]\ntick = %dms\nsocket = %s\n\n[policy]\nmode = auto\n" % (tick_ms, sock))
    return path


# ---- writers and devices -------------------------------------------------------------------------
class Writers:
    """fio writers started and stopped on the testbed's devices."""

    def __init__(self, tb, priv):
        self.tb, self.priv, self.running, self.started = tb, priv, [], 0

    def start(self, dev, seconds):
        jf = os.path.join(self.priv, "w%d.fio" % self.started)
        with open(jf, "w") as f:
            f.write(jobfile([Group("w%d" % self.started, dev, int(seconds), size="512M")]))
        p = self.tb.spawn(["fio", "--output=/dev/null", jf], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        self.running.append((p, dev))
        self.started += 1

    def reap(self):
        for p, dev in list(self.running):
            if p.poll() is not None:
                self.tb.reap(p)
                self.running.remove((p, dev))

    def stop(self, dev=None):
        """fio's job processes call setsid(): killing the parent's group leaves them writing. SIGTERM
        to the parent stops its jobs; whatever still runs our job file after that is killed by pid."""
        for p, d in list(self.running):
            if dev is None or d is dev:
                jf = p.args[-1]
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                for _ in range(300):
                    left = [pid for pid in pids_running(jf)]
                    if not left:
                        break
                    for pid in left:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                    time.sleep(0.1)
                self.tb.reap(p)
                self.running.remove((p, d))


def pids_running(path):
    """Processes whose command line has path (our private job file) in it."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if path.encode() in args:
            out.append(int(os.path.basename(d)))
    return out


def loop_control(op, index):
    fd = os.open("/dev/loop-control", os.O_RDWR)
    try:
        return fcntl.ioctl(fd, op, index)
    finally:
        os.close(fd)


class ChurnDevice:
    """A loop device of our own (created, then removed with LOOP_CTL_REMOVE, so that its BDI really
    goes away), with ext4 on it."""

    def __init__(self, tb, n):
        index = CHURN_FIRST_INDEX
        while os.path.exists("/sys/block/loop%d" % index):
            index += 1
        loop_control(LOOP_CTL_ADD, index)
        tb.state.d.setdefault("created_loop_indexes", []).append(index)
        tb.state.save()
        self.tb, self.index, self.loop = tb, index, "/dev/loop%d" % index
        self.image = os.path.join(tb.priv, "churn%d.img" % n)
        with open(self.image, "w") as f:
            f.truncate(2 << 30)
        for _ in range(50):                      # udev-less: the node may take a moment
            if os.path.exists(self.loop):
                break
            time.sleep(0.02)
        run(["losetup", "--direct-io=on", self.loop, self.image])
        tb.state.d["loops"].append({"loop": self.loop, "image": self.image})
        tb.state.save()
        self.mm = read("/sys/block/loop%d/dev" % index).strip()
        run(["mkfs.ext4", "-q", "-F", self.loop])
        self.mnt = os.path.join(tb.priv, "churn%d" % n)
        os.mkdir(self.mnt)
        tb.state.d["mounts"].append(self.mnt)
        tb.state.save()
        run(["mount", self.loop, self.mnt])
        self.name = "churn%d" % n

    def remove(self):
        subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL)
        for _ in range(100):
            if subprocess.run(["losetup", "-d", self.loop], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        for _ in range(100):
            try:
                loop_control(LOOP_CTL_REMOVE, self.index)
                break
            except OSError:
                time.sleep(0.1)              # EBUSY while the detach settles
        os.unlink(self.image)
        d = self.tb.state.d
        d["created_loop_indexes"] = [i for i in d.get("created_loop_indexes", []) if i != self.index]
        d["loops"] = [lo for lo in d["loops"] if lo["loop"] != self.loop or lo["image"] != self.image]
        self.tb.state.save()


def valgrind_errors(path):
    m = re.findall(r"ERROR SUMMARY: (\d+) errors", read(path, ""))
    return int(m[-1]) if m else None


# ---- soak -------------------------------------------------------------------------------------------
def cmd_soak(o, bench_dir):
    binary = tunings.find_wbtuned(o.wbtuned, bench_dir)
    if not binary:
        print("wbtuned binary not found (--wbtuned, $WBTUNED, ../build/src/wbtuned)")
        return 77
    outdir = os.path.abspath(o.output or os.path.join(bench_dir, "out", "soak-" + time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(outdir, exist_ok=True)
    total_s, vg_s = o.minutes * 60, o.valgrind_seconds
    res = {"binary": binary, "minutes": o.minutes, "valgrind_seconds": vg_s, "watchdog_usec": o.watchdog_usec}
    tb = Testbed()
    writers = churn = notify = daemon = None
    rng = random.Random(o.seed)
    try:
        devs = [tb.add_device("ext4", bps) for bps in (8 * M, 40 * M, 120 * M)]
        journal_every_bdi(tb)
        before = snapshot()
        sock = os.path.join(tb.priv, "ctl")
        conf = daemon_conf(os.path.join(tb.priv, "wbtuned.conf"), sock, 1000)
        notify = NotifyListener(os.path.join(tb.priv, "notify"))
        writers = Writers(tb, tb.priv)
        dlog = os.path.join(outdir, "wbtuned.log")
        vglog = os.path.join(outdir, "valgrind.log")

        daemon = Daemon(tb, binary, conf, sock, dlog, notify.path, o.watchdog_usec,
                        valgrind_log=vglog if vg_s > 0 else None)
        if not daemon.wait_ready(120):
            raise RuntimeError("the daemon did not come up, see %s" % dlog)
        phases = [{"what": "valgrind" if vg_s > 0 else "native", "start": daemon.started}]
        t0 = time.monotonic()
        next_reload, next_churn, next_writer = t0 + 20, t0 + 15, t0
        reloads = churned = 0
        native_rss = {}
        while time.monotonic() - t0 < total_s:
            now = time.monotonic()
            writers.reap()
            if daemon.p.poll() is not None:
                raise RuntimeError("the daemon died (rc %s), see %s" % (daemon.p.returncode, dlog))
            if vg_s > 0 and phases[-1]["what"] == "valgrind" and now - t0 >= vg_s:
                rc = daemon.stop(120)
                phases[-1].update({"end": time.monotonic(), "rc": rc})
                res["valgrind_errors"] = valgrind_errors(vglog)
                res["after_valgrind_differences"] = differences(before, snapshot())
                log("valgrind phase over: rc %s, %s errors, %d knobs differ" % (
                    rc, res["valgrind_errors"], len(res["after_valgrind_differences"])))
                daemon = Daemon(tb, binary, conf, sock, dlog, notify.path, o.watchdog_usec)
                if not daemon.wait_ready(30):
                    raise RuntimeError("the daemon did not come up again, see %s" % dlog)
                phases.append({"what": "native", "start": daemon.started})
            if phases[-1]["what"] == "native" and "start" not in native_rss and now - phases[-1]["start"] > 10:
                native_rss["start"] = daemon.memory_kb()
                log("native daemon memory after 10 s: %s" % native_rss["start"])
            if now >= next_reload:
                daemon.signal(signal.SIGHUP)
                reloads += 1
                next_reload += 20
            if now >= next_churn:
                if churn is None:
                    churn = ChurnDevice(tb, churned)
                    churned += 1
                    writers.start(churn, rng.uniform(3, 12))
                    log("added %s (%s)" % (churn.loop, churn.mm))
                else:
                    writers.stop(churn)
                    churn.remove()
                    log("removed %s (%s)" % (churn.loop, churn.mm))
                    churn = None
                next_churn += 15
            if now >= next_writer and len(writers.running) < 3:
                writers.start(rng.choice(devs), rng.uniform(3, 20))
                next_writer = now + rng.uniform(1, 8)
            time.sleep(0.2)

        native_rss["end"] = daemon.memory_kb()
        writers.stop()
        if churn:
            churn.remove()
            churn = None
        rc = daemon.stop(60)
        phases[-1].update({"end": time.monotonic(), "rc": rc})
        after = snapshot()
        diffs = differences(before, after)
        gaps = [g for ph in phases for g in notify.watchdog_gaps(ph["start"], ph["end"])]
        limit = o.watchdog_usec / 1e6
        res.update({
            "rss_kb": native_rss, "reloads": reloads, "devices_added_removed": churned,
            "writers_started": writers.started, "exit_codes": [ph.get("rc") for ph in phases],
            "watchdog_pings": len(gaps) + len(phases), "watchdog_max_gap_s": max(gaps) if gaps else None,
            "missed_watchdogs": sum(1 for g in gaps if g > limit),
            "knobs_checked": n_knobs(before), "knobs_not_restored": diffs})
    finally:
        if writers:
            writers.stop()
        if daemon and daemon.p.poll() is None:
            daemon.stop(30)
        if churn:
            churn.remove()
        if notify:
            notify.close()
        errs = tb.close()
        res["cleanup_errors"] = errs
    with open(os.path.join(outdir, "soak.json"), "w") as f:
        json.dump(res, f, indent=1)
    rss = res.get("rss_kb", {})
    lines = [
        "soak: %d min, daemon %s" % (o.minutes, binary),
        "  valgrind for the first %d s: %s errors (log %s)" % (vg_s, res.get("valgrind_errors"), os.path.join(outdir, "valgrind.log")),
        "  RSS of the native daemon: %s kB 10 s after start, %s kB at the end (peak %s kB)" % (
            rss.get("start", {}).get("VmRSS"), rss.get("end", {}).get("VmRSS"), rss.get("end", {}).get("VmHWM")),
        "  watchdog: %s pings, longest gap %.2f s, %d missed (WATCHDOG_USEC=%d)" % (
            res.get("watchdog_pings"), res.get("watchdog_max_gap_s") or 0, res.get("missed_watchdogs", -1), o.watchdog_usec),
        "  %s reloads, %s devices added and removed, %s writers" % (
            res.get("reloads"), res.get("devices_added_removed"), res.get("writers_started")),
        "  exit codes %s; %s of %s knobs not restored%s" % (
            res.get("exit_codes"), len(res.get("knobs_not_restored", [])), res.get("knobs_checked"),
            ": " + "; ".join(res["knobs_not_restored"]) if res.get("knobs_not_restored") else ""),
        "  output: %s" % outdir,
    ]
    print("\n".join(lines))
    valgrind_ok = vg_s == 0 or res.get("valgrind_errors") == 0
    ok = (valgrind_ok and res.get("missed_watchdogs") == 0 and not res.get("knobs_not_restored") and
          all(rc == 0 for rc in res.get("exit_codes", [None])) and not res.get("cleanup_errors"))
    return 0 if ok else 1


# ---- crash ------------------------------------------------------------------------------------------
def cmd_crash(o, bench_dir):
    binary = tunings.find_wbtuned(o.wbtuned, bench_dir)
    if not binary:
        print("wbtuned binary not found (--wbtuned, $WBTUNED, ../build/src/wbtuned)")
        return 77
    outdir = os.path.abspath(o.output or os.path.join(bench_dir, "out", "crash-" + time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(o.seed)
    tb = Testbed()
    writers = daemon = None
    iterations = []
    try:
        devs = [tb.add_device("ext4", bps) for bps in (8 * M, 120 * M)]
        journal_every_bdi(tb)
        before = snapshot()
        sock = os.path.join(tb.priv, "ctl")
        conf = daemon_conf(os.path.join(tb.priv, "wbtuned.conf"), sock, o.tick_ms)
        dlog = os.path.join(outdir, "wbtuned.log")
        writers = Writers(tb, tb.priv)
        for i in range(o.iterations):
            writers.reap()
            for d in devs:                       # writers all along, so the daemon keeps changing knobs
                if not any(dev is d for _, dev in writers.running):
                    writers.start(d, 3600)
            it = {"i": i + 1, "kill_after_s": round(rng.uniform(0, o.max_kill_s), 3)}
            daemon = Daemon(tb, binary, conf, sock, dlog)
            time.sleep(it["kill_after_s"])
            it["changed_at_kill"] = len(differences(before, snapshot()))
            it["up_at_kill"] = os.path.exists(sock)
            daemon.kill9()
            it["changed_after_kill"] = len(differences(before, snapshot()))
            # start again: it must put back what the killed one left, then a clean stop
            daemon = Daemon(tb, binary, conf, sock, dlog)
            it["ready"] = daemon.wait_ready(30)
            time.sleep(rng.uniform(0, o.max_kill_s / 2))
            it["rc"] = daemon.stop(60)
            daemon = None
            diffs = differences(before, snapshot())
            it["exact"] = not diffs and it["rc"] == 0 and it["ready"]
            it["differences"] = diffs
            if diffs:
                errs = put_back(tb, before)
                it["put_back_errors"] = errs
            iterations.append(it)
            log("%2d: killed after %.2f s (%s, %d knobs changed), restart %s, stop rc %s: %s" % (
                it["i"], it["kill_after_s"], "up" if it["up_at_kill"] else "starting", it["changed_at_kill"],
                "ready" if it["ready"] else "NOT READY", it["rc"],
                "exact" if it["exact"] else "NOT EXACT: " + "; ".join(diffs)))
    finally:
        if writers:
            writers.stop()
        if daemon and daemon.p.poll() is None:
            daemon.stop(30)
        errs = tb.close()
    exact = sum(1 for it in iterations if it["exact"])
    changed = sum(1 for it in iterations if it["changed_after_kill"] > 0)
    res = {"binary": binary, "tick_ms": o.tick_ms, "iterations": iterations, "exact": exact,
           "killed_with_knobs_changed": changed, "cleanup_errors": errs}
    with open(os.path.join(outdir, "crash.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("crash: %d of %d kill -9 + start + stop left every vm and bdi knob exactly as before the first start "
          "(%d kills left knobs changed for the restart to put back; %d before the daemon was up)" % (
              exact, len(iterations), changed, sum(1 for it in iterations if not it["up_at_kill"])))
    print("output: %s" % outdir)
    return 0 if exact == len(iterations) == o.iterations and not errs else 1
