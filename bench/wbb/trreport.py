# SPDX-License-Identifier: GPL-2.0-or-later
"""Tables and plots of the transitions family (see transitions.py)."""
import os
import shutil
import statistics

from .report import _gp
from .util import spread, warn

M = 1 << 20
MB = 1e6
TUNING_ORDER = ["kernel", "wbtuned"]
# issue 9's targets, each checked on medians
INNOCENT_MIN_OF_SOLO = 0.9
INNOCENT_MAX_WRITE_MS = 250
SLOWED_GROWTH_STOP_S = 2.0
SLOWED_MAX_WRITE_MS = 1000
NOT_BELOW_KERNEL_TOL = 0.03     # "never below kernel alone", within run-to-run noise


def _g(d, *path):
    for p in path:
        if d is None:
            return None
        d = d.get(p) if isinstance(d, dict) else None
    return d


def _per_run(r, solo_kernel, solo_same):
    """The numbers of one run that the tables need (None where they do not apply)."""
    iw = r.get("innocent_write") or {}
    x = {"inn_MBps": iw.get("MBps"), "inn_max_ms": iw.get("lat_max_ms"),
         "inn_p99_ms": iw.get("clat_p99_ms"),
         "inn_vs_solo_kernel": iw["MBps"] / solo_kernel if iw.get("MBps") and solo_kernel else None,
         "inn_vs_solo_same": iw["MBps"] / solo_same if iw.get("MBps") and solo_same else None,
         "A_writer_max_ms": max((w.get("lat_max_ms") or 0 for w in r.get("writers", {}).values()
                                 if w.get("role") == "A"), default=None),
         "A_at_inn_MB": (_g(r, "devices", "A", "backlog_at_innocent_start_bytes") or 0) / M,
         "A_peak_MB": (_g(r, "devices", "A", "peak_backlog_bytes") or 0) / M,
         "B_peak_MB": (_g(r, "devices", "B", "peak_backlog_bytes") or 0) / M,
         "thresh_min_MB": (_g(r, "global", "thresh_min_bytes") or 0) / M,
         "thresh_start_MB": (_g(r, "global", "thresh_start_bytes") or 0) / M,
         "observed_changes": r.get("observed_knob_changes"),
         "policy_writes": _g(r, "daemon", "policy_writes"),
         "restore_writes": _g(r, "daemon", "restore_writes"),
         "writes_per_min": _g(r, "daemon", "policy_writes_per_min")}
    sl = r.get("slowed")
    if sl:
        x.update({"backlog_at_slow_MB": sl["backlog_at_slow_bytes"] / M,
                  "peak_after_MB": sl["peak_after_bytes"] / M,
                  "growth_stop_s": sl["growth_stop_s"],
                  "drain_s": sl["drain_s"] if sl["drain_s"] is not None else sl["drain_est_s"],
                  "drain_estimated": sl["drain_s"] is None,
                  "slowed_max_after_ms": sl["writer_max_after_ms"]})
    ad = r.get("admin")
    if ad:
        x.update({"admin_survived": ad["survived"],
                  "admin_overwritten_s": (ad["overwritten"] or {}).get("t_after_admin_s"),
                  "admin_after_stop_ok": ad["survived_daemon_stop"],
                  "admin_daemon_writes": ad.get("daemon_writes_after")})
    return x


def summarize(runs):
    """{(case, tuning): {"runs": [...], "per_run": [...], "s": {metric: spread}}}."""
    by = {}
    for r in runs:
        by.setdefault((r["case"], r["tuning"]), []).append(r)
    solo_med = {}
    for (case, tun), rs in by.items():
        if rs[0]["family"] == "solo":
            v = [_g(r, "innocent_write", "MBps") for r in rs]
            v = [x for x in v if x]
            if v:
                solo_med[(case, tun)] = statistics.median(v)
    out = {}
    for (case, tun), rs in by.items():
        solo = rs[0].get("solo") or (case if rs[0]["family"] == "solo" else None)
        pr = [_per_run(r, solo_med.get((solo, "kernel")), solo_med.get((solo, tun))) for r in rs]
        keys = sorted({k for p in pr for k in p})
        s = {}
        for k in keys:
            vals = [p.get(k) for p in pr]
            if all(v is None for v in vals):
                s[k] = None
            elif any(isinstance(v, bool) for v in vals):
                s[k] = vals
            else:
                s[k] = spread([v for v in vals if v is not None])
        out[(case, tun)] = {"runs": rs, "per_run": pr, "s": s, "solo": solo,
                            "solo_kernel_MBps": solo_med.get((solo, "kernel")),
                            "solo_same_MBps": solo_med.get((solo, tun))}
    return out


def _f(sp, digits=0, pct=False, rng=True):
    if not sp:
        return "–"
    k = 100 if pct else 1
    f = "%%.%df" % digits
    med = f % (sp["median"] * k) + (" %" if pct else "")
    if sp["n"] > 1 and rng and sp["min"] != sp["max"]:
        return "%s [%s–%s]" % (med, f % (sp["min"] * k), f % (sp["max"] * k))
    return med


def _med(sp):
    return sp["median"] if sp else None


def _bools(vals):
    v = [x for x in vals if x is not None]
    return "%d of %d" % (sum(1 for x in v if x), len(v)) if v else "–"


def _cases_in_order(summ):
    seen = []
    for (case, _tun), x in summ.items():
        if case not in seen:
            seen.append(case)
    return seen


def _tunings(summ, case):
    t = [k[1] for k in summ if k[0] == case]
    return sorted(t, key=lambda x: TUNING_ORDER.index(x) if x in TUNING_ORDER else 99)


def targets(summ, case):
    """Issue 9's targets on the medians of a case: {tuning: [(target, met?)]}."""
    out = {}
    k = summ.get((case, "kernel"))
    k_inn = _med(k["s"].get("inn_MBps")) if k else None
    for tun in _tunings(summ, case):
        s = summ[(case, tun)]["s"]
        res = []
        v = _med(s.get("inn_vs_solo_kernel"))
        if v is not None:
            res.append(("innocent >= %.0f %% of solo" % (100 * INNOCENT_MIN_OF_SOLO), v >= INNOCENT_MIN_OF_SOLO))
        v = _med(s.get("inn_max_ms"))
        if v is not None:
            res.append(("longest write <= %d ms" % INNOCENT_MAX_WRITE_MS, v <= INNOCENT_MAX_WRITE_MS))
        if tun != "kernel" and k_inn and _med(s.get("inn_MBps")) is not None:
            res.append(("not below kernel alone (-%d %%)" % (100 * NOT_BELOW_KERNEL_TOL),
                        _med(s["inn_MBps"]) >= k_inn * (1 - NOT_BELOW_KERNEL_TOL)))
        v = _med(s.get("growth_stop_s"))
        if "growth_stop_s" in s:
            res.append(("slowed backlog stops growing <= %.0f s" % SLOWED_GROWTH_STOP_S,
                        v is not None and v <= SLOWED_GROWTH_STOP_S))
        v = _med(s.get("slowed_max_after_ms"))
        if v is not None:
            res.append(("slowed writer's longest write <= %d ms" % SLOWED_MAX_WRITE_MS, v <= SLOWED_MAX_WRITE_MS))
        if s.get("admin_survived"):
            vals = [x for x in s["admin_survived"] if x is not None]
            res.append(("hand-set knob left alone", bool(vals) and all(vals)))
        out[tun] = res
    return out


def _targets_text(res):
    bad = [t for t, ok in res if not ok]
    if not res:
        return "–"
    return "all met" if not bad else "missed: " + "; ".join(bad)


def _others_peak_mb(outdir, r):
    """Peak of the global dirty+writeback minus A's and B's, from the run's series."""
    peak = None
    try:
        with open(os.path.join(outdir, r["series"])) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                v = [float(x) for x in line.split()]
                o = v[1] - v[3] - v[4]
                peak = o if peak is None else max(peak, o)
    except (OSError, KeyError, ValueError, IndexError):
        return None
    return peak


def markdown(summ, meta, outdir):
    L = ["# wbbench: transitions (issue 9)", "",
         "Run %s on %s, %s repeat(s), tunings interleaved; command: `%s`" %
         (meta.get("date"), meta.get("kernel"), meta.get("repeat"), meta.get("command")), "",
         "Medians over repeats, [min–max] where they differ. *innocent* = the writer on B that "
         "the case is about; *%% of solo* = its MB/s (fio, as the application saw it) over the "
         "median MB/s of the same writer alone on B (its solo case) under the kernel alone, "
         "measured in this run; *own solo* = the same under the same tuning. *longest write* = "
         "the slowest single write() (fio's max total latency), *p99* = fio clat p99. *A when "
         "innocent starts* = A's BdiReclaimable+BdiWriteback (debugfs) as the innocent writer "
         "starts; *A's writer* = the longest write() of the writer(s) on A (the fill, the "
         "slowed, paced or on/off writer; '–' if A has none); *dirty limit min* = the lowest "
         "nr_dirty_threshold while writers ran. *knob "
         "writes* = the changes wbtuned logged while it ran (+ those at its stop, the restore); "
         "under the kernel, '–'. The daemon runs with a generated config: auto mode, tick %s ms, "
         "socket in the private dir, %s." %
         (meta.get("tick_ms", 100), "the case's dirty_bytes as its pin" if meta.get("pin") else
          "no pin (a new user's defaults: it computes dirty_bytes itself)"), ""]
    for n in meta.get("notes", []):
        L += ["Note: %s" % n, ""]
    cases = _cases_in_order(summ)
    solos = [c for c in cases if summ[(c, _tunings(summ, c)[0])]["runs"][0]["family"] == "solo"]
    cases_run = [c for c in cases if c not in solos]
    L += ["## Summary", "",
          "| case | tuning | innocent MB/s | % of solo | % of own solo | longest write ms | p99 ms "
          "| A's writer: longest write ms | A when innocent starts MB | dirty limit min MB "
          "| knob writes | issue 9 targets |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in cases_run:
        tg = targets(summ, case)
        for tun in _tunings(summ, case):
            s = summ[(case, tun)]["s"]
            kw = "–"
            if s.get("policy_writes"):
                kw = "%s (+%s)" % (_f(s["policy_writes"]), _f(s.get("restore_writes"), rng=False))
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                case, tun, _f(s.get("inn_MBps"), 1), _f(s.get("inn_vs_solo_kernel"), 0, True),
                _f(s.get("inn_vs_solo_same"), 0, True), _f(s.get("inn_max_ms")),
                _f(s.get("inn_p99_ms"), 1), _f(s.get("A_writer_max_ms")), _f(s.get("A_at_inn_MB")),
                _f(s.get("thresh_min_MB")), kw, _targets_text(tg[tun])))
    L += ["", "What each case does:", ""]
    for case in cases_run + solos:
        r = summ[(case, _tunings(summ, case)[0])]["runs"][0]
        L.append("- **%s**: %s%s" % (case, r["desc"],
                                     " (solo: %s)" % r["solo"] if r.get("solo") else ""))
    L.append("")
    slowed = [c for c in cases_run if "growth_stop_s" in summ[(c, _tunings(summ, c)[0])]["s"]]
    if slowed:
        L += ["## The device that slowed", "",
              "Backlog = BdiReclaimable+BdiWriteback of A. *stops growing* = seconds from the "
              "slowdown until A's backlog (averaged over 1 s) first came within max(2M, 3 %) of "
              "its peak before A's writer ended; *drained* = seconds from the slowdown until A's "
              "backlog was below 1M after its writer ended (~ = not within the wait after the "
              "writers: the time waited plus what was left at A's slowed speed); *longest write* "
              "= the slowest write() of A's writer completing after the slowdown.", "",
              "| case | tuning | A backlog at slowdown MB | peak after MB | stops growing after s "
              "| drained after s | A writer's longest write ms |", "|---|---|---|---|---|---|---|"]
        for case in slowed:
            for tun in _tunings(summ, case):
                s = summ[(case, tun)]["s"]
                est = any(x for x in (s.get("drain_estimated") or []) if x)
                L.append("| %s | %s | %s | %s | %s | %s%s | %s |" % (
                    case, tun, _f(s.get("backlog_at_slow_MB")), _f(s.get("peak_after_MB")),
                    _f(s.get("growth_stop_s"), 1), "~" if est else "", _f(s.get("drain_s"), 0),
                    _f(s.get("slowed_max_after_ms"))))
    admin = [c for c in cases_run if "admin_survived" in summ[(c, _tunings(summ, c)[0])]["s"]]
    if admin:
        L += ["", "## The admin's hand-set knob", "",
              "The admin writes the knob mid-run (vm knob: its value; per-device knob: the "
              "ratio the kernel stores, `*_ratio_fine`, is tracked, since the bytes view moves "
              "with the global limit). *left alone* = the sampled value (every 100 ms) still the "
              "admin's until the daemon's stop; *overwritten after* = seconds until it first "
              "differed; *after daemon stop* = still the admin's value once the daemon exited "
              "(its restore).", "",
              "| case | tuning | knob | left alone | overwritten after s | after daemon stop | daemon writes of it after |",
              "|---|---|---|---|---|---|---|"]
        for case in admin:
            for tun in _tunings(summ, case):
                x = summ[(case, tun)]
                a = x["runs"][0]["admin"]
                knob = "%s%s = %s" % ("vm." if a["where"] == "vm" else a.get("role", "") + " ",
                                      a["knob"], "%gM" % (a["value"] / M))
                s = x["s"]
                L.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    case, tun, knob, _bools(s["admin_survived"] or []),
                    _f(s.get("admin_overwritten_s"), 1), _bools(s.get("admin_after_stop_ok") or []),
                    _f(s.get("admin_daemon_writes")) if tun != "kernel" else "–"))
    L += ["", "## Knob writes by the daemon", "",
          "Per run, medians: logged writes while it ran, per minute of its running time, and "
          "the most written knobs; *observed* = knob values seen to change in the 100 ms "
          "samples (vm knobs and A's and B's min/max_ratio_fine, strict_limit: a lower bound, "
          "same-value rewrites are not seen; under the kernel it counts the admin's own write).", "",
          "| case | tuning | writes while running | per minute | observed changes | most written |",
          "|---|---|---|---|---|---|"]
    for case in cases_run:
        for tun in _tunings(summ, case):
            x = summ[(case, tun)]
            s = x["s"]
            top = {}
            for r in x["runs"]:
                for k, v in (_g(r, "daemon", "policy_writes_by_knob") or {}).items():
                    top[k] = top.get(k, 0) + v
            top_s = ", ".join("%s %d" % (k, v / len(x["runs"])) for k, v in
                              sorted(top.items(), key=lambda kv: -kv[1])[:3]) or "–"
            L.append("| %s | %s | %s | %s | %s | %s |" % (
                case, tun, _f(s.get("policy_writes")), _f(s.get("writes_per_min")),
                _f(s.get("observed_changes")), top_s))
    L += ["", "## Solo references", "", "| solo case | tuning | MB/s | longest write ms | p99 ms |",
          "|---|---|---|---|---|"]
    for case in solos:
        for tun in _tunings(summ, case):
            s = summ[(case, tun)]["s"]
            L.append("| %s | %s | %s | %s | %s |" % (case, tun, _f(s.get("inn_MBps"), 1),
                                                   _f(s.get("inn_max_ms")), _f(s.get("inn_p99_ms"), 1)))
    bad = [(r["case"], r["tuning"], r["repeat"], r["not_as_found"])
           for x in summ.values() for r in x["runs"] if r.get("not_as_found")]
    unclean = [(r["case"], r["repeat"]) for x in summ.values() for r in x["runs"]
               if r.get("daemon") and not r["daemon"]["clean"]]
    foreign = [(_others_peak_mb(outdir, r), r["case"], r["tuning"], r["repeat"])
               for x in summ.values() for r in x["runs"]]
    foreign = [o for o in foreign if o[0] is not None]
    worst = max(foreign) if foreign else None
    late = [(r["case"], r["tuning"], r["repeat"], r["late_steps"])
            for x in summ.values() for r in x["runs"] if r.get("late_steps")]
    L += ["", "## Checks", "",
          "- every timeline step on time (within 0.5 s): %s" % ("yes" if not late else "NO: %s" % late),
          "- kernel as found after every run (vm knobs, the testbed's bdi knobs, throttles): %s" %
          ("yes" if not bad else "NO: %s" % bad),
          "- other users' dirty+writeback pages during the runs (global minus A and B, peak per "
          "run): median %s MB, highest %s" %
          ("%.0f" % statistics.median(o[0] for o in foreign) if foreign else "–",
           "%.0f MB (%s, %s, repeat %d)" % worst if worst else "–"),
          "- daemon exited cleanly every time: %s" % ("yes" if not unclean else "NO: %s" % unclean)]
    L += ["", "## Plots", "",
          "One per case: the median repeat (by the innocent writer's MB/s) of each tuning, kernel "
          "left, wbtuned right. Top: MB dirty+writeback of A (red) and B (blue), the global "
          "dirty+writeback (black) and nr_dirty_threshold (grey). Bottom: MB/s each writer "
          "completed per %.1f s (fio's per-write log); dashed: the innocent writer's solo MB/s "
          "under the kernel. Dotted verticals: the timeline's events." % 0.5, ""]
    for case in cases_run:
        L.append("![%s](plots/transitions__%s.png)" % (case, case))
    return "\n".join(L) + "\n"


# --------------------------------------------------------------- plots ------
def _median_run(x):
    rs = x["runs"]
    keyed = [(_g(r, "innocent_write", "MBps") or 0, r) for r in rs]
    keyed.sort(key=lambda kv: kv[0])
    return keyed[(len(keyed) - 1) // 2][1]


def _merged_marks(marks, within_s=0.4):
    """Events closer than within_s share one line and one label."""
    out = []
    for t, label in marks:
        if label == "drain window over":
            continue
        if out and t - out[-1][0] < within_s:
            out[-1] = (out[-1][0], out[-1][1] + ", " + label)
        else:
            out.append((t, label))
    return out


def _esc(s):
    """For a single-quoted gnuplot string."""
    return s.replace("'", "''")


def plot_case(outdir, summ, case, prefix="transitions"):
    tl = _tunings(summ, case)
    runs = [(_median_run(summ[(case, t)]), t) for t in tl]
    png = os.path.join(outdir, "plots", "%s__%s.png" % (prefix, case))
    xmax = 1
    ymax_mb = 1
    ymax_tp = 1
    for r, _ in runs:
        with open(os.path.join(outdir, r["series"])) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                v = [float(x) for x in line.split()]
                xmax = max(xmax, v[0])
                ymax_mb = max(ymax_mb, v[1], v[3], v[4])
        for w in r["writers"].values():
            for t, mbs in w["tput"]:
                ymax_tp = max(ymax_tp, mbs)
    solo = summ[(case, tl[0])]["solo_kernel_MBps"]
    bps_b = max(r["bps"]["B"] for r, _ in runs) / MB
    # memory-speed bursts (into the page cache) would flatten the device-speed part: clip
    ymax_tp = min(ymax_tp, 1.6 * max(bps_b, solo or 0)) * 1.05
    s = ["set terminal pngcairo size %d,760 font ',9'" % (560 * len(runs) + 120),
         "set output '%s'" % png, "set termoption noenhanced",
         "set multiplot layout 2,%d title '%s: %s' font ',9'" %
         (len(runs), case, _esc(runs[0][0]["desc"])),
         "set grid", "set xlabel 's'", "set key top right font ',8'",
         "set xrange [0:%.1f]" % (xmax + 0.5)]
    for row in ("backlog", "tput"):
        for r, tun in runs:
            s.append("unset arrow; unset label")
            for t, label in _merged_marks(r["marks"]):
                s.append("set arrow from %.2f, graph 0 to %.2f, graph 1 nohead dt 3 lc rgb '#888888'" % (t, t))
                s.append("set label '%s' at %.2f, graph 0.97 rotate by 90 right font ',7' tc rgb '#555555'"
                         % (_esc(label), t + 0.15))
            f = os.path.join(outdir, r["series"])
            if row == "backlog":
                s += ["set title '%s: dirty+writeback, MB'" % tun, "set ylabel 'MB'",
                      "set yrange [0:%.0f]" % (ymax_mb * 1.1)]
                s.append("plot '%s' using 1:2 with lines lw 2 lc rgb 'black' title 'global', "
                         "'' using 1:3 with lines lw 1 lc rgb '#999999' title 'dirty threshold', "
                         "'' using 1:4 with lines lw 2 lc rgb '#d62728' title 'A', "
                         "'' using 1:5 with lines lw 2 lc rgb '#1f77b4' title 'B'" % f)
            else:
                iw = r.get("innocent_write") or {}
                s += ["set title '%s: MB/s per writer (innocent %.1f MB/s, longest write %.0f ms)'"
                      % (tun, iw.get("MBps") or 0, iw.get("lat_max_ms") or 0),
                      "set ylabel 'MB/s'", "set yrange [0:%.0f]" % ymax_tp]
                tf = os.path.join(outdir, r["tput_series"])
                colors = {"innocent": "#1f77b4", "slowed": "#d62728", "fill": "#d62728",
                          "other": "#d62728", "onoff": "#d62728", "paced": "#2ca02c"}
                parts = []
                for i, name in enumerate(r["tput_columns"]):
                    parts.append("'%s' using 1:%d with steps lw 2 lc rgb '%s' title '%s (%s)'" %
                                 (tf if not parts else "", i + 2, colors.get(name, "#9467bd"), name,
                                  r["writers"][name]["role"]))
                if solo:
                    parts.append("%.2f with lines dt 2 lw 1 lc rgb '#1f77b4' title 'solo (kernel)'" % solo)
                s.append("plot " + ", ".join(parts))
    s.append("unset multiplot")
    return png if _gp("\n".join(s) + "\n", png) else None


def write(outdir, runs, meta):
    """transitions.md and a plot per case; returns the files written."""
    summ = summarize(runs)
    files = []
    md = os.path.join(outdir, "transitions.md")
    with open(md, "w") as f:
        f.write(markdown(summ, meta, outdir))
    files.append(md)
    if not shutil.which("gnuplot"):
        warn("gnuplot not found: no transitions plots")
        return files
    for case in _cases_in_order(summ):
        if summ[(case, _tunings(summ, case)[0])]["runs"][0]["family"] == "solo":
            continue
        png = plot_case(outdir, summ, case)
        if png:
            files.append(png)
    return files
