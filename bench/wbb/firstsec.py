# SPDX-License-Identifier: GPL-2.0-or-later
"""The first-seconds family: is a device's backlog bounded from its first byte?

Cases, each with the kernel alone and with wbtuned, interleaved, on the transitions testbed
(two loop devices A and B, see transitions.py):
  new-*      a device the daemon has never seen gets a copy at memory speed right after the
             daemon starts: its dirty+writeback peak against its bound
  fastnew-*  the same on a fast device: its peak against speed x backlog_seconds, and what the
             bound costs the copy (against its solo speed)
  db-same-*  a database (8 KiB write + fsync, 50 a second) beside a copy on the same disk:
             write+fsync latency from the copy's first byte, and the copy's speed
  db-other-* the database on B while a copy fills the slow device A
  fill-*     a writer fills A before the daemon starts and keeps writing: how fast the daemon
             brings the backlog back to its bound, and the writer's longest write meanwhile
             (fill-c, the only case of set c: a pool and a speed where the time allowed to come
             back is shorter than the writer runs, so that time is judged)
  known-*    both devices written (the daemon measures them), idle for --idle-s, written again:
             the slow one's peak and the fast one's speed against solo
  restart-*  the same with a daemon restart instead of the idle time

Bounds (the issue's targets): a device with no known speed stays within
max(first bound, speed x backlog_seconds) x 1.1 + 8M; a backlog above it is back within its
bound x 1.1 in (excess / half the speed) + 2 s.
"""
import os
import statistics

from . import transitions
from .transitions import TCase, Writer, pin, M, MB

FAMILIES = ["new", "fastnew", "db-same", "db-other", "fill", "known", "restart"]
FIRST_BOUND_BYTES = 64 * M      # wbtuned.conf's unmeasured_device_bytes default
BACKLOG_S = 2.0                 # wbtuned.conf's backlog_seconds default
BOUND_TOL = 1.1
BOUND_SLACK_BYTES = 8 * M
DB_RATE = 50
MBps = 1000 * 1000


class FCase(TCase):
    """A transitions case with the family's own figures. target: the role whose backlog is
    checked against its bound; first: True where that device is new to the daemon (the first
    bound applies); db: the database's role; copy: the copy writer's name; fill_role: the
    device whose backlog from before the daemon is to come down."""

    def __init__(self, name, family, set_, desc, bps, base, script, target=None, first=False,
                 db=None, copy=None, fill_role=None, **kw):
        super().__init__(name, family, set_, desc, bps, base, script, **kw)
        self.target, self.first, self.db, self.copy, self.fill_role = target, first, db, copy, fill_role

    def bound_bytes(self, role, first):
        speed_bound = self.bps[role] * BACKLOG_S
        return max(FIRST_BOUND_BYTES, speed_bound) if first else speed_bound

    def extra(self, c, sampler, roles, res):
        out = {"firstsec": {}}
        f = out["firstsec"]
        if self.target:
            d = roles[self.target]
            s = transitions._series_backlog(sampler, d)
            own = [pr for pr in c.procs.values() if pr["writer"].role == self.target]
            t0 = min((pr["t_start"] for pr in own), default=0)
            # known cases: only the second round of writes is "after the idle time"
            if self.family in ("known", "restart"):
                t0 = max((pr["t_start"] for pr in own), default=0)
            peak = max((b for t, b in s if t >= t0), default=0)
            bound = self.bound_bytes(self.target, self.first)
            limit = bound * BOUND_TOL + BOUND_SLACK_BYTES
            f.update({"target": self.target, "peak_bytes": peak, "bound_bytes": bound,
                      "limit_bytes": limit, "within": peak <= limit,
                      "writer_max_ms": max((res["writers"][n].get("lat_max_ms") or 0
                                            for n, pr in c.procs.items()
                                            if pr["writer"].role == self.target and
                                            pr["t_start"] >= t0 - 0.01), default=None)})
        if self.fill_role:
            d = roles[self.fill_role]
            s = transitions._series_backlog(sampler, d)
            t_d = transitions._mark_t(sampler.marks, "daemon start")
            bound = self.bound_bytes(self.fill_role, False)
            at_start = transitions._at(s, t_d)
            excess = max(0, at_start - bound)
            allowed = excess / (self.bps[self.fill_role] / 2) + 2
            back = None
            for t, b in s:
                if t >= t_d and b <= bound * BOUND_TOL:
                    back = t - t_d
                    break
            wr = [pr for n, pr in c.procs.items() if pr["writer"].role == self.fill_role]
            ios_after = []
            for n, pr in c.procs.items():
                if pr["writer"].role != self.fill_role:
                    continue
                try:
                    ios = transitions.fio.read_lat_log(pr["lat"], c.sampler.wall0)
                except OSError:
                    ios = []
                ios_after += [lat for t, lat, _ in ios if t >= t_d]
            f.update({"fill_role": self.fill_role, "backlog_at_daemon_bytes": at_start,
                      "fill_bound_bytes": bound, "back_within_s": back, "allowed_s": allowed,
                      "back_in_time": back is not None and back <= allowed,
                      "writer_max_after_daemon_ms": max(ios_after, default=None),
                      "writers": len(wr)})
        if self.db:
            db = c.dbs.get("db")
            t_copy = c.procs[self.copy]["t_start"] if self.copy in c.procs else 0
            lat = []
            if db:
                try:
                    with open(db["log"]) as fh:
                        for line in fh:
                            t_unix, l = line.split()
                            t = float(t_unix) - c.sampler.wall0
                            if t >= t_copy:
                                lat.append((t, float(l)))
                except OSError as e:
                    f["db_error"] = str(e)
            ls = sorted(x for _, x in lat)
            span = (c.procs[self.copy]["t_end"] or c.now()) - t_copy if self.copy in c.procs else 0
            f.update({"db_commits": len(ls),
                      "db_per_s": len([1 for t, _ in lat if t <= t_copy + span]) / span if span > 0 else None,
                      "db_p50_s": ls[len(ls) // 2] if ls else None,
                      "db_p99_s": ls[min(len(ls) - 1, int(len(ls) * 0.99))] if ls else None,
                      "db_max_s": ls[-1] if ls else None,
                      "db_asked_per_s": DB_RATE})
            if self.copy in res["writers"]:
                cp = res["writers"][self.copy]
                f["copy_MBps"] = cp.get("MBps")
                f["copy_vs_disk"] = cp["MBps"] / (self.bps[cp["role"]] / MB) if cp.get("MBps") else None
        return out


# ------------------------------------------------------------------ timelines --
def s_new(role, t_copy, copy_s):
    """The daemon starts; t_copy s later a copy_s copy at memory speed to role's device."""
    def script(c):
        c.daemon_start()
        c.at(t_copy)
        c.start(Writer("copy" if role == "A" else "innocent", role, runtime_s=copy_s))
        c.wait_all()
    return script


def s_db(copy_role, t_db, t_copy, copy_s, db_s):
    """The daemon starts; a database on B from t_db for db_s; a copy on copy_role from
    t_copy for copy_s."""
    def script(c):
        c.daemon_start()
        c.at(t_db)
        c.start_db("db", "B", DB_RATE, db_s)
        c.at(t_copy)
        c.start(Writer("copy", copy_role, runtime_s=copy_s))
        c.wait_all()
    return script


def s_fill(t_daemon, end):
    """A writer on A from 0 until end (the kernel alone fills the pool), the daemon from
    t_daemon."""
    def script(c):
        c.start(Writer("fill", "A", runtime_s=end))
        c.at(t_daemon)
        c.daemon_start()
        c.wait_all()
    return script


def s_known(first_s, gap, restart, second_s):
    """Both devices written for first_s (the daemon measures them); then idle for gap s, or
    the daemon stopped and started again; then A and B written for second_s."""
    def script(c):
        c.daemon_start()
        c.at(0.5)
        c.start(Writer("learn-A", "A", runtime_s=first_s))
        c.start(Writer("learn-B", "B", runtime_s=first_s))
        c.wait("learn-A")
        c.wait("learn-B")
        t = c.now()
        if restart:
            c.at(t + 1)
            c.daemon_stop()
            c.at(t + 2)
            c.daemon_start()
            c.at(t + 4)
        else:
            c.mark("idle")
            c.at(t + gap)
        c.start(Writer("copy", "A", runtime_s=second_s))
        c.start(Writer("innocent", "B", runtime_s=second_s))
        c.wait_all()
    return script


def all_cases(idle_s=125):
    cs = []
    cs.append(FCase("new-a", "new", "a",
                    "A (8 MB/s, new to the daemon) gets a 15 s copy at memory speed 2 s after the "
                    "daemon starts; kernel ratios as found",
                    {"A": 8 * MBps, "B": 200 * MBps}, None, s_new("A", 2, 15), target="A",
                    first=True, innocent="copy"))
    cs.append(FCase("new-b", "new", "b",
                    "A (25 MB/s, new) gets a 10 s copy 1 s after the daemon starts; "
                    "dirty_bytes 800M",
                    {"A": 25 * MBps, "B": 120 * MBps}, pin(800 * M), s_new("A", 1, 10), target="A",
                    first=True, innocent="copy"))
    cs.append(FCase("fastnew-a", "fastnew", "a",
                    "B (200 MB/s, new) gets a 10 s copy 2 s after the daemon starts; kernel "
                    "ratios as found", {"A": 30 * MBps, "B": 200 * MBps}, None, s_new("B", 2, 10),
                    target="B", first=True, solo="solo-B200-ratios"))
    cs.append(FCase("db-same-a", "db-same", "a",
                    "database on B (100 MB/s) from 1 s for 34 s; a 30 s copy on B from 4 s (long "
                    "enough to reach the kernel's limit); kernel ratios as found",
                    {"A": 8 * MBps, "B": 100 * MBps}, None, s_db("B", 1, 4, 30, 34), db="B",
                    copy="copy", target="B", first=True, innocent="copy"))
    cs.append(FCase("db-same-b", "db-same", "b",
                    "database on B (150 MB/s) from 1 s for 16 s; a 12 s copy on B from 3 s; "
                    "dirty_bytes 1G", {"A": 8 * MBps, "B": 150 * MBps}, pin(1024 * M),
                    s_db("B", 1, 3, 12, 16), db="B", copy="copy", target="B", first=True,
                    innocent="copy"))
    cs.append(FCase("db-other-a", "db-other", "a",
                    "database on B (150 MB/s) from 1 s for 20 s; a 15 s copy on A (8 MB/s) from "
                    "4 s; kernel ratios as found", {"A": 8 * MBps, "B": 150 * MBps}, None,
                    s_db("A", 1, 4, 15, 20), db="B", copy="copy", target="A", first=True,
                    innocent="copy"))
    cs.append(FCase("fill-a", "fill", "a",
                    "a writer on A (30 MB/s) from 0 for 30 s, the daemon from 5 s; kernel ratios "
                    "as found", {"A": 30 * MBps, "B": 200 * MBps}, None, s_fill(5, 30),
                    fill_role="A", innocent="fill"))
    cs.append(FCase("fill-b", "fill", "b",
                    "a writer on A (10 MB/s) from 0 for 25 s, the daemon from 4 s; "
                    "dirty_bytes 1G", {"A": 10 * MBps, "B": 200 * MBps}, pin(1024 * M),
                    s_fill(4, 25), fill_role="A", innocent="fill"))
    cs.append(FCase("fill-c", "fill", "c",
                    "a writer on A (50 MB/s) from 0 for 45 s, the daemon from 4 s; "
                    "dirty_bytes 400M", {"A": 50 * MBps, "B": 200 * MBps}, pin(400 * M),
                    s_fill(4, 45), fill_role="A", innocent="fill"))
    cs.append(FCase("known-a", "known", "a",
                    "A (8 MB/s) and B (200 MB/s) written 6 s, idle %d s, written again 10 s; "
                    "kernel ratios as found" % idle_s, {"A": 8 * MBps, "B": 200 * MBps}, None,
                    s_known(6, idle_s, False, 10), target="A", solo="solo-B200-ratios"))
    cs.append(FCase("restart-a", "restart", "a",
                    "A (8 MB/s) and B (200 MB/s) written 6 s, the daemon restarted, both written "
                    "again 10 s; kernel ratios as found", {"A": 8 * MBps, "B": 200 * MBps}, None,
                    s_known(6, 0, True, 10), target="A", solo="solo-B200-ratios"))
    solo = [c for c in transitions.all_cases() if c.name == "solo-B200-ratios"]
    return solo + cs


def select_cases(families=None, sets=None, idle_s=125):
    fam = families or FAMILIES
    for f in fam:
        if f not in FAMILIES:
            raise ValueError("unknown first-seconds case family %r (%s)" % (f, ", ".join(FAMILIES)))
    sets = sets or ["a", "b", "c"]
    cs = all_cases(idle_s)
    chosen = [c for c in cs if c.family in fam and c.set in sets]
    solos = {c.solo for c in chosen if c.solo}
    return [c for c in cs if c.family == "solo" and c.name in solos] + chosen


def run_family(tb, o, tuning_list, outdir, on_result):
    cases = select_cases(o.variants, o.sets, o.idle_s)
    fs = o.fs or ["ext4"]
    a = tb.add_device(fs[0], 0)
    b = tb.add_device(fs[1] if len(fs) > 1 else fs[0], 0)
    roles = {"A": a, "B": b}
    tl = [t for t in tuning_list if t in transitions.TUNINGS]
    results = []
    for rep in range(o.transitions_repeat):
        for case in cases:
            for t in tl:
                results.append(transitions.run_case(tb, o, case, t, rep, outdir, roles,
                                                    scenario="first-seconds"))
                on_result(results)
    return results


# ------------------------------------------------------------------ report -----
def _med(vals):
    v = [x for x in vals if x is not None]
    if not v:
        return None
    return statistics.median(v), min(v), max(v), len(v)


def _fmt(m, scale=1.0, digits=0, unit=""):
    if m is None:
        return "–"
    med, lo, hi, n = m
    f = "%%.%df" % digits
    s = (f % (med * scale)) + unit
    if n > 1 and lo != hi:
        s += " [%s–%s]" % (f % (lo * scale), f % (hi * scale))
    return s


def _count(vals):
    v = [x for x in vals if x is not None]
    return "%d of %d" % (sum(1 for x in v if x), len(v)) if v else "–"


def markdown(runs, meta, solo_med):
    by = {}
    for r in runs:
        by.setdefault(r["case"], {}).setdefault(r["tuning"], []).append(r)
    out = ["# First seconds: bounded from the first byte", "",
           "Command: `%s`; kernel %s; %s; medians [min–max] of the repeats, the kernel alone and "
           "wbtuned interleaved." % (meta.get("command"), meta.get("kernel"), meta.get("date")), "",
           "| case | tuning | target peak MB | bound x1.1+8M | within | target writer longest ms "
           "| back to bound s (allowed) | db p99 / max s | db commits/s (of 50) | copy / innocent MB/s "
           "| % of solo (kernel) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, tuns in by.items():
        if tuns[next(iter(tuns))][0]["family"] == "solo":
            continue
        for tun in ("kernel", "wbtuned"):
            rs = tuns.get(tun)
            if not rs:
                continue
            fs = [r.get("firstsec", {}) for r in rs]
            solo = solo_med.get(rs[0].get("solo")) if rs[0].get("solo") else None
            iw = [(r.get("innocent_write") or {}).get("MBps") for r in rs]
            row = [case, tun,
                   _fmt(_med([x.get("peak_bytes") for x in fs]), 1 / M),
                   _fmt(_med([x.get("limit_bytes") for x in fs]), 1 / M),
                   _count([x.get("within") for x in fs]),
                   _fmt(_med([x.get("writer_max_ms") or x.get("writer_max_after_daemon_ms")
                              for x in fs])),
                   ("%s (%s)" % (_fmt(_med([x.get("back_within_s") for x in fs]), digits=1),
                                 _fmt(_med([x.get("allowed_s") for x in fs]), digits=1))
                    if any("allowed_s" in x for x in fs) else "–"),
                   ("%s / %s" % (_fmt(_med([x.get("db_p99_s") for x in fs]), digits=2),
                                 _fmt(_med([x.get("db_max_s") for x in fs]), digits=2))
                    if any("db_commits" in x for x in fs) else "–"),
                   _fmt(_med([x.get("db_per_s") for x in fs]), digits=1) if any("db_commits" in x for x in fs) else "–",
                   _fmt(_med(iw), digits=1),
                   _fmt(_med([v / solo if v and solo else None for v in iw]), 100, 0, " %") if solo else "–"]
            out.append("| " + " | ".join(row) + " |")
    out += ["", "Cases:", ""]
    for case, tuns in by.items():
        out.append("- **%s**: %s" % (case, tuns[next(iter(tuns))][0]["desc"]))
    return "\n".join(out) + "\n"


def write(outdir, runs, meta):
    """first-seconds.md and a plot per case (the transitions plot: backlog and MB/s)."""
    from . import trreport
    solo_med = {}
    for r in runs:
        if r["family"] == "solo" and r["tuning"] == "kernel":
            v = (r.get("innocent_write") or {}).get("MBps")
            if v:
                solo_med.setdefault(r["case"], []).append(v)
    solo_med = {k: statistics.median(v) for k, v in solo_med.items()}
    md = os.path.join(outdir, "first-seconds.md")
    with open(md, "w") as f:
        f.write(markdown(runs, meta, solo_med))
    files = [md]
    summ = trreport.summarize(runs)
    for case in trreport._cases_in_order(summ):
        if summ[(case, trreport._tunings(summ, case)[0])]["runs"][0]["family"] == "solo":
            continue
        png = trreport.plot_case(outdir, summ, case, prefix="first-seconds")
        if png:
            files.append(png)
    return files
