# SPDX-License-Identifier: GPL-2.0-or-later
"""`wbbench cost`: the daemon's own cost -- CPU time per tick and peak RSS -- with
10/100/1000 fake BDIs (wbtuned --root FAKETREE) and on the live testbed.

The fake tree mirrors the live files' formats (copied from this machine's
/proc/vmstat, /proc/meminfo, /proc/sys/vm/*, debugfs bdi/<dev>/stats and wb_stats);
between ticks the per-device counters advance so the daemon has work to do."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from . import tunings
from .util import log, warn, read, CLK_TCK

FAKE_MAJOR = 259
M = 1 << 20

STATS_FMT = ("BdiWriteback:       {wb:10d} kB\n"
             "BdiReclaimable:     {recl:10d} kB\n"
             "BdiDirtyThresh:     {bthr:10d} kB\n"
             "DirtyThresh:        {thr:10d} kB\n"
             "BackgroundThresh:   {bg:10d} kB\n"
             "BdiDirtied:         {dirtied:10d} kB\n"
             "BdiWritten:         {written:10d} kB\n"
             "BdiWriteBandwidth:  {bw:10d} kBps\n"
             "b_dirty:            {bd:10d}\n"
             "b_io:               {bio:10d}\n"
             "b_more_io:          {bmore:10d}\n"
             "b_dirty_time:       {bdt:10d}\n"
             "bdi_list:           {bl:10d}\n"
             "state:              {state:10x}\n")

WB_STATS_FMT = ("WbCgIno:           {ino:10d}\n"
                "WbWriteback:       {wb:10d} kB\n"
                "WbReclaimable:     {recl:10d} kB\n"
                "WbDirtyThresh:     {bthr:10d} kB\n"
                "WbDirtied:         {dirtied:10d} kB\n"
                "WbWritten:         {written:10d} kB\n"
                "WbWriteBandwidth:  {wbbw:10d} kBps\n"
                "b_dirty:           {bd:10d}\n"
                "b_io:              {bio:10d}\n"
                "b_more_io:         {bmore:10d}\n"
                "b_dirty_time:      {bdt:10d}\n"
                "state:             {state:10x}\n\n")


def _live_template():
    """Check our formats against the live files (same keys, same order)."""
    try:
        live = read("/sys/kernel/debug/bdi/%s/stats" % sorted(os.listdir("/sys/kernel/debug/bdi"))[0])
    except (OSError, IndexError):
        return
    keys = [l.split(":")[0] for l in live.splitlines() if ":" in l]
    ours = [l.split(":")[0] for l in STATS_FMT.splitlines()]
    if keys != ours:
        warn("live debugfs stats keys %s differ from the fake tree's %s" % (keys, ours))


def _w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class FakeTree:
    def __init__(self, root, n):
        self.root, self.n = root, n
        self.devs = ["%d:%d" % (FAKE_MAJOR, i) for i in range(n)]
        self.state = {d: {"dirtied": 0, "written": 0, "recl": 0, "wb": 0,
                          "bw": (8 + 16 * (i % 8)) * 1024} for i, d in enumerate(self.devs)}
        self.tick_no = 0

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def build(self):
        _live_template()
        _w(self.p("proc/vmstat"), read("/proc/vmstat"))
        _w(self.p("proc/meminfo"), read("/proc/meminfo"))
        for k in sorted(os.listdir("/proc/sys/vm")):
            try:
                v = read("/proc/sys/vm/" + k)
            except OSError:
                continue          # write-only (drop_caches, compact_memory)
            _w(self.p("proc/sys/vm", k), v)
        mi = read("/proc/self/mountinfo").splitlines()
        for i, d in enumerate(self.devs):
            mi.append("%d 1 %s / /mnt/fake%d rw,relatime - %s /dev/fake%d rw" %
                      (10000 + i, d, i, ("ext4", "xfs", "btrfs")[i % 3], i))
        _w(self.p("proc/self/mountinfo"), "\n".join(mi) + "\n")
        maxb = 5 * 1024 * M
        for i, d in enumerate(self.devs):
            knobs = {"min_ratio": 0, "max_ratio": 100, "min_ratio_fine": 0,
                     "max_ratio_fine": 1000000, "min_bytes": 0, "max_bytes": maxb,
                     "strict_limit": 0, "read_ahead_kb": 128, "stable_pages_required": 0}
            for k, v in knobs.items():
                _w(self.p("sys/class/bdi", d, k), "%d\n" % v)
            blk = self.p("sys/block/fake%d" % i)
            _w(os.path.join(blk, "dev"), d + "\n")
            _w(os.path.join(blk, "stat"), " ".join(["0"] * 17) + "\n")
            _w(os.path.join(blk, "removable"), "0\n")
            _w(os.path.join(blk, "queue/rotational"), "%d\n" % (i % 2))
            os.makedirs(self.p("sys/dev/block"), exist_ok=True)
            link = self.p("sys/dev/block", d)
            if not os.path.lexists(link):
                os.symlink("../../block/fake%d" % i, link)
        self.tick()

    def tick(self):
        """Advance every device by one tick of fake writing."""
        self.tick_no += 1
        thr = 4879936
        for i, d in enumerate(self.devs):
            s = self.state[d]
            active = (i + self.tick_no // 50) % 3 != 0
            bw = s["bw"] // 10                    # kB per 100 ms
            if active:
                s["dirtied"] += 2 * bw            # dirtying at twice the device's speed
                s["recl"] = min(s["recl"] + 2 * bw, 400 * 1024)
            s["wb"] = min(s["recl"], bw)
            s["recl"] -= s["wb"]
            s["written"] += s["wb"]
            txt = STATS_FMT.format(wb=s["wb"], recl=s["recl"], bthr=thr // max(1, self.n),
                                   thr=thr, bg=thr // 2, dirtied=s["dirtied"],
                                   written=s["written"], bw=s["bw"] if active else 0,
                                   bd=1 if active else 0, bio=0, bmore=0, bdt=0, bl=1, state=1)
            _w(self.p("sys/kernel/debug/bdi", d, "stats"), txt)
            wtxt = WB_STATS_FMT.format(ino=1, wb=s["wb"], recl=s["recl"], bthr=thr // max(1, self.n),
                                       dirtied=s["dirtied"], written=s["written"], wbbw=s["bw"],
                                       bd=1 if active else 0, bio=0, bmore=0, bdt=0, state=1)
            _w(self.p("sys/kernel/debug/bdi", d, "wb_stats"), wtxt)


def make_fake_tree(root, n):
    t = FakeTree(root, n)
    t.build()
    return t


def proc_cost(pid):
    """CPU seconds (user + system), VmHWM (peak RSS) and VmRSS (now) in kB."""
    st = read("/proc/%d/stat" % pid)
    fields = st[st.rindex(")") + 2:].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK     # utime, stime (fields 14, 15)
    mem = {"VmHWM": 0, "VmRSS": 0}
    for line in read("/proc/%d/status" % pid).splitlines():
        key = line.split(":")[0]
        if key in mem:
            mem[key] = int(line.split()[1])
    return cpu, mem["VmHWM"], mem["VmRSS"]


def daemon_ticks(sock):
    """The daemon's own tick count (status verb), None if it does not answer."""
    import socket as so
    try:
        with so.socket(so.AF_UNIX, so.SOCK_STREAM) as c:
            c.settimeout(60)          # served between ticks, which may be slow
            c.connect(sock)
            c.sendall(b'{"verb":"status"}\n')
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = c.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return int(json.loads(buf)["result"]["ticks"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def measure(binary, conf, sock, ticks, tick_ms, logpath, extra_args=(), each_tick=None,
            spawn=None, reap=None):
    """Run the daemon for `ticks` ticks after it is ready; CPU per tick, VmHWM."""
    cmd = [binary, "--socket", sock, "-c", conf] + list(extra_args)
    logf = open(logpath, "w")
    p = spawn(cmd, stdout=logf, stderr=logf) if spawn else \
        subprocess.Popen(cmd, stdout=logf, stderr=logf, start_new_session=True)
    res = {"cmd": cmd, "ticks": ticks, "tick_ms": tick_ms}
    try:
        end = time.monotonic() + 10
        while time.monotonic() < end and not os.path.exists(sock) and p.poll() is None:
            time.sleep(0.02)
        if p.poll() is not None:
            res["error"] = "daemon exited early (rc %s), see %s" % (p.returncode, logpath)
            return res
        # the daemon ticks on its own timer while we rewrite the tree, which can take longer
        # than a tick: divide by the ticks it counted, not by ours
        n0 = daemon_ticks(sock)
        cpu0, _, _ = proc_cost(p.pid)
        t0 = time.monotonic()
        for i in range(ticks):
            if each_tick:
                each_tick()
            time.sleep(max(0, t0 + (i + 1) * tick_ms / 1000 - time.monotonic()))
            if p.poll() is not None:
                res["error"] = "daemon died after %d ticks (rc %s)" % (i, p.returncode)
                return res
        cpu1, hwm, rss = proc_cost(p.pid)
        n1 = daemon_ticks(sock)
        wall = time.monotonic() - t0
        daemon_ticks_run = n1 - n0 if n0 is not None and n1 is not None and n1 > n0 else None
        res.update({"cpu_s": cpu1 - cpu0, "wall_s": wall, "daemon_ticks": daemon_ticks_run,
                    "cpu_ms_per_tick": 1000 * (cpu1 - cpu0) / (daemon_ticks_run or ticks),
                    "cpu_percent": 100 * (cpu1 - cpu0) / wall, "vmhwm_kb": hwm, "vmrss_kb": rss})
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                res["error"] = "no exit 15 s after SIGTERM"
        res["rc"] = p.returncode
        res["clean"] = p.returncode == 0 and "error" not in res
        if reap:
            reap(p)
        logf.close()
    return res


def binaries(o, bench_dir):
    """--wbtuned A or LABEL=A,LABEL=B: [(label, path or None)]."""
    if not o.wbtuned:
        return [("wbtuned", tunings.find_wbtuned(None, bench_dir))]
    out = []
    for i, item in enumerate(o.wbtuned.split(",")):
        label, _, path = item.rpartition("=")
        out.append((label or ("wbtuned" if "," not in o.wbtuned else "bin%d" % i),
                    tunings.find_wbtuned(path, bench_dir)))
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def spread(xs, fmt):
    if not xs:
        return "–"
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt + " [" + fmt + "–" + fmt + "]") % (median(xs), min(xs), max(xs))


def cmd_cost(o, bench_dir):
    bins = binaries(o, bench_dir)
    outdir = os.path.abspath(o.output or os.path.join(bench_dir, "out", "cost-" + time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(outdir, exist_ok=True)
    results = []
    work = tempfile.mkdtemp(prefix="wbbench-cost.", dir=o.tree_dir)
    try:
        for n in [int(x) for x in o.bdis]:
            root = os.path.join(work, "tree%d" % n)
            t = make_fake_tree(root, n)
            log("fake tree with %d BDIs at %s" % (n, root))
            conf = tunings.daemon_config(os.path.join(work, "c%d.conf" % n), work, None,
                                         tick_ms=o.tick_ms)
            # binaries alternate within each repeat, so that both see the same machine
            for rep in range(o.repeat):
                for label, binary in bins:
                    if not binary:
                        results.append({"where": "fake", "bdis": n, "binary": label, "repeat": rep,
                                        "error": "wbtuned binary not found"})
                        continue
                    r = measure(binary, conf, os.path.join(work, "ctl"), o.ticks, o.tick_ms,
                                os.path.join(outdir, "fake%d-%s-%d.log" % (n, label, rep)),
                                ["--root", root, "--quiet"], t.tick)
                    r.update({"where": "fake", "bdis": n, "binary": label, "repeat": rep})
                    results.append(r)
                    log("  %s" % r)
        if o.live:
            for rep in range(o.repeat):
                for label, binary in bins:
                    r = live_cost(o, binary, outdir)
                    r.update({"binary": label, "repeat": rep})
                    results.append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(outdir, "cost.json"), "w") as f:
        json.dump(results, f, indent=1)
    lines = ["# wbtuned cost", "",
             "%s; %d ms tick, %d ticks, %d repeat(s), binaries alternating, trees in %s; medians [min–max]" % (
                 time.strftime("%Y-%m-%d %H:%M"), o.tick_ms, o.ticks, o.repeat, o.tree_dir), ""]
    lines += ["- %s: `%s`" % (label, binary) for label, binary in bins]
    lines += ["", "| where | BDIs | binary | daemon ticks | CPU ms/tick | CPU % of a core | VmHWM kB | VmRSS kB at end | exit |",
              "|---|---|---|---|---|---|---|---|---|"]
    groups = []
    for r in results:
        key = (r["where"], r.get("bdis"), r.get("binary"))
        if key not in groups:
            groups.append(key)
    for key in groups:
        rs = [r for r in results if (r["where"], r.get("bdis"), r.get("binary")) == key]
        ok = [r for r in rs if "cpu_ms_per_tick" in r]
        bad = [r.get("error", "rc %s" % r.get("rc")) for r in rs if not r.get("clean")]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key[0], key[1], key[2],
            spread([r["daemon_ticks"] for r in ok if r.get("daemon_ticks")], "%d"),
            spread([r["cpu_ms_per_tick"] for r in ok], "%.2f"),
            spread([r["cpu_percent"] for r in ok], "%.2f"),
            spread([r["vmhwm_kb"] for r in ok], "%d"),
            spread([r["vmrss_kb"] for r in ok], "%d"),
            "clean" if not bad else "; ".join(sorted(set(bad)))))
    with open(os.path.join(outdir, "cost.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print("output: %s" % outdir)
    if not all(b for _, b in bins):
        return 77
    return 0 if all(r.get("clean") for r in results) else 1


def live_cost(o, binary, outdir):
    """The daemon on the live system while the testbed's 4 devices take writes."""
    from .testbed import Testbed
    from .fio import Group, jobfile
    if not binary:
        return {"where": "live", "error": "wbtuned binary not found"}
    tb = Testbed()
    try:
        devs = [tb.add_device("ext4", bps) for bps in (8 * M, 120 * M, 120 * M, 0)]
        secs = o.ticks * o.tick_ms / 1000 + 5
        groups = [Group("w%d" % d.idx, d, secs, size="2G") for d in devs]
        jf = os.path.join(tb.priv, "cost.fio")
        with open(jf, "w") as f:
            f.write(jobfile(groups))
        fio = tb.spawn(["fio", "--output=/dev/null", jf], stdout=subprocess.DEVNULL)
        # the daemon may tune any device: journal all of them so close() restores them
        import glob
        from . import knobs
        tb.state.d["daemon_bdi_pre"] = {os.path.basename(x): knobs.bdi_read(os.path.basename(x))
                                        for x in glob.glob("/sys/class/bdi/*")}
        tb.state.save()
        conf = tunings.daemon_config(os.path.join(tb.priv, "live.conf"), tb.priv, None, tick_ms=o.tick_ms)
        r = measure(binary, conf, os.path.join(tb.priv, "ctl"), o.ticks, o.tick_ms,
                    os.path.join(outdir, "live.log"), ["--quiet"], spawn=tb.spawn, reap=tb.reap)
        fio.kill()
        fio.wait()
        tb.reap(fio)
        r.update({"where": "live", "bdis": len(os.listdir("/sys/class/bdi"))})
        return r
    finally:
        tb.close()
