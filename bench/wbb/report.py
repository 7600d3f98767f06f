# SPDX-License-Identifier: GPL-2.0-or-later
"""Summaries over repeats, markdown tables, json files and gnuplot figures."""
import json
import os
import shutil
import subprocess

from .util import spread, log, warn

M = 1 << 20


def _get(d, *path):
    for p in path:
        if d is None:
            return None
        d = d.get(p) if isinstance(d, dict) else None
    return d


def summarize(results):
    """{(scenario, case, tuning): summary dict} with spread over repeats."""
    keys = []
    by = {}
    for r in results:
        k = (r["scenario"], r["case"], r["tuning"])
        if k not in by:
            keys.append(k)
        by.setdefault(k, []).append(r)
    out = {}
    for k in keys:
        runs = by[k]
        s = {"scenario": k[0], "case": k[1], "tuning": k[2], "repeats": len(runs),
             "groups": {}, "devices": {}, "global": {}}
        for gname in runs[0].get("groups", {}):
            gs = {}
            for direction in ("write", "read"):
                if not _get(runs[0], "groups", gname, direction):
                    continue
                gs[direction] = {m: spread([_get(r, "groups", gname, direction, m) for r in runs])
                                 for m in ("MBps", "clat_p50_ms", "clat_p99_ms", "clat_max_ms",
                                           "lat_max_ms")}
            gs["device"] = runs[0]["groups"][gname]["device"]
            s["groups"][gname] = gs
        for dname in runs[0].get("devices", {}):
            s["devices"][dname] = {m: spread([_get(r, "devices", dname, m) for r in runs])
                                   for m in ("peak_backlog_bytes", "peak_backlog_s", "sync_s",
                                             "peak_bdi_thresh_bytes")}
            s["devices"][dname]["bps"] = runs[0]["devices"][dname]["bps"]
        for m in ("peak_bytes", "thresh_bytes", "overshoot", "own_peak_bytes", "own_overshoot",
                  "foreign_peak_bytes"):
            s["global"][m] = spread([_get(r, "global", m) for r in runs])
        s["foreign_knobs"] = sorted({c for r in runs for c in _get(r, "global", "foreign_knob_changes") or []})
        dm = [r.get("daemon") for r in runs if r.get("daemon")]
        if dm:
            s["daemon_clean"] = all(x["clean"] for x in dm)
        out[k] = s
    # relative to the fast writer alone ('solo' case) under the same tuning
    for (sc, case, tun), s in out.items():
        solo = out.get((sc, "solo", tun))
        if solo and case != "solo" and "fast" in s["groups"] and "fast" in solo["groups"]:
            a = _get(s, "groups", "fast", "write", "MBps", "median")
            b = _get(solo, "groups", "fast", "write", "MBps", "median")
            if a and b:
                s["fast_vs_solo"] = a / b
    return out


def _fmt(sp, scale=1.0, digits=1, show_range=True):
    if not sp:
        return "–"
    f = "%%.%df" % digits
    med = f % (sp["median"] * scale)
    if sp["n"] > 1 and show_range:
        return "%s [%s–%s] cv %.0f%%" % (med, f % (sp["min"] * scale), f % (sp["max"] * scale),
                                        100 * sp["cov"])
    return med


def _fmt_mb(sp, show_range=True):
    """MB with more digits for small figures (tiny thresholds)."""
    if not sp:
        return "–"
    med = sp["median"] / M
    digits = 0 if med >= 10 else (1 if med >= 1 else 2)
    return _fmt(sp, 1 / M, digits, show_range)


def markdown(summary, scenario, meta):
    lines = ["# wbbench: %s" % scenario, "",
             "Run %s on %s; command: `%s`" % (meta.get("date"), meta.get("kernel"), meta.get("command")),
             "", "Medians over repeats, [min–max] and coefficient of variation when repeated. "
             "Throughput is what the application saw (fio); latency is per write() call "
             "(clat p50/p99, max of total latency); global peak = max of nr_dirty+nr_writeback, "
             "overshoot = max over samples of (dirty+writeback)/nr_dirty_threshold (whole system, so "
             "other users' dirty pages count; 'testbed' = the same over the testbed's devices only); backlog = "
             "peak BdiReclaimable+BdiWriteback of a device, and in seconds of its bandwidth "
             "(throttle, or the kernel's WbWriteBandwidth if unthrottled); sync = `sync -f` "
             "right after fio ended.", ""]
    cases = []
    for (sc, case, tun) in summary:
        if sc == scenario and case not in cases:
            cases.append(case)
    for case in cases:
        rows = [(k, s) for k, s in summary.items() if k[0] == scenario and k[1] == case]
        lines += ["## %s" % case, ""]
        gnames = list(rows[0][1]["groups"])
        dnames = list(rows[0][1]["devices"])
        hdr = ["tuning", "n"]
        for g in gnames:
            hdr += ["%s MB/s" % g, "%s p50/p99/max ms" % g]
        if any("fast_vs_solo" in s for _, s in rows):
            hdr.append("fast vs solo")
        hdr += ["global peak / thresh MB (overshoot)", "testbed peak MB (overshoot)", "others' peak MB"]
        for d in dnames:
            hdr += ["%s backlog MB (s)" % d, "%s sync s" % d]
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "---|" * len(hdr))
        for (_, _, tun), s in rows:
            row = [tun + ("" if s.get("daemon_clean", True) else " (daemon exit NOT clean)") +
                   (" (knobs changed by someone else!)" if s.get("foreign_knobs") else ""),
                   str(s["repeats"])]
            for g in gnames:
                w = _get(s, "groups", g, "write") or _get(s, "groups", g, "read") or {}
                row.append(_fmt(w.get("MBps")))
                row.append("%s / %s / %s" % (_fmt(w.get("clat_p50_ms"), digits=1, show_range=False),
                                             _fmt(w.get("clat_p99_ms"), digits=1),
                                             _fmt(w.get("lat_max_ms"), digits=0, show_range=False)))
            if any("fast_vs_solo" in x for _, x in rows):
                row.append("%.0f %%" % (100 * s["fast_vs_solo"]) if "fast_vs_solo" in s else "–")
            gl = s["global"]
            row.append("%s / %s (%s x)" % (_fmt_mb(gl["peak_bytes"]),
                                           _fmt_mb(gl["thresh_bytes"], False),
                                           _fmt(gl["overshoot"], 1, 2)))
            row.append("%s (%s x)" % (_fmt_mb(gl["own_peak_bytes"]),
                                      _fmt(gl["own_overshoot"], 1, 2)))
            row.append(_fmt_mb(gl["foreign_peak_bytes"], False))
            for d in dnames:
                dv = s["devices"][d]
                row.append("%s (%s)" % (_fmt_mb(dv["peak_backlog_bytes"]),
                                        _fmt(dv["peak_backlog_s"], 1, 1, False)))
                row.append(_fmt(dv["sync_s"], 1, 1))
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", "![time series](%s)" % ("plots/%s__%s__timeseries.png" % (scenario, case)),
                  "![bars](%s)" % ("plots/%s__%s__bars.png" % (scenario, case)), ""]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------- gnuplot ----
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def _gp(script, path):
    sp = path + ".gp"
    with open(sp, "w") as f:
        f.write(script)
    p = subprocess.run(["gnuplot", sp], stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        warn("gnuplot %s: %s" % (sp, p.stderr.strip()[-500:]))
        return False
    return True


def plot_timeseries(outdir, scenario, case, runs):
    """One panel per tuning (first repeat): per device dirty, writeback and the
    kernel's per-device threshold; the global dirty+writeback and threshold."""
    runs = [r for r in runs if r["repeat"] == 0]
    if not runs:
        return None
    png = os.path.join(outdir, "plots", "%s__%s__timeseries.png" % (scenario, case))
    n = len(runs)
    s = ["set terminal pngcairo size 1100,%d font ',9'" % (260 * n + 40),
         "set output '%s'" % png,
         "set multiplot layout %d,1 title '%s / %s: MB over time (solid dirty, dashed writeback, "
         "dotted per-device threshold; black global dirty+writeback, grey global threshold)'"
         % (n, scenario, case),
         "set key outside right top vertical font ',8'", "set grid",
         "set ylabel 'MB'", "set xlabel 's'", "set lmargin 9", "set rmargin 28",
         "set offsets graph 0, 0, 0.08, 0", "set yrange [0:*]"]
    for r in runs:
        f = os.path.join(outdir, r["series"])
        devs = [d["name"] for d in r["device_list"]]
        g = r["global"]
        s.append("unset arrow")
        for t, label in r.get("marks", []):
            s.append("set arrow from %.2f, graph 0 to %.2f, graph 1 nohead dt 3 lc rgb '#888888'" % (t, t))
        title = "%s: peak %.0fM / thresh %.0fM" % (r["tuning"], g["peak_bytes"] / M, g["thresh_bytes"] / M)
        s.append("set title \"%s\"" % title)
        plots = ["'%s' using 1:($2+$3) with lines lw 2 lc rgb 'black' title 'global dirty+wb'" % f,
                 "'' using 1:4 with lines lw 2 lc rgb '#999999' title 'global thresh'",
                 "'' using 1:($2+$3-(%s)) with lines lw 1 dt 2 lc rgb '#999999' title 'others (global-testbed)'"
                 % "+".join("$%d+$%d" % (6 + 4 * i, 7 + 4 * i) for i in range(len(devs)))]
        for i, d in enumerate(devs):
            c = COLORS[i % len(COLORS)]
            base = 6 + 4 * i
            plots += ["'' using 1:%d with lines lw 2 lc rgb '%s' title '%s dirty'" % (base, c, d),
                      "'' using 1:%d with lines lw 2 dt 2 lc rgb '%s' title '%s writeback'" % (base + 1, c, d),
                      "'' using 1:%d with lines lw 1 dt 3 lc rgb '%s' title '%s thresh'" % (base + 2, c, d)]
        s.append("plot " + ", \\\n  ".join(plots))
    s.append("unset multiplot")
    return png if _gp("\n".join(s) + "\n", png) else None


def plot_bars(outdir, scenario, case, summ):
    """Throughput (median, min–max error bars) and p99 write latency per writer
    group, one bar per tuning."""
    items = [(k[2], s) for k, s in summ.items() if k[0] == scenario and k[1] == case]
    if not items:
        return None
    gnames = list(items[0][1]["groups"])
    png = os.path.join(outdir, "plots", "%s__%s__bars.png" % (scenario, case))
    dat = png[:-4] + ".dat"
    with open(dat, "w") as f:
        for g in gnames:
            row = [g]
            for tun, s in items:
                w = _get(s, "groups", g, "write") or _get(s, "groups", g, "read") or {}
                for m in ("MBps", "clat_p99_ms"):
                    sp = w.get(m) or {"median": 0, "min": 0, "max": 0}
                    row += ["%.3f" % sp["median"], "%.3f" % sp["min"], "%.3f" % sp["max"]]
            f.write("\t".join(row) + "\n")
    nt = len(items)
    s = ["set terminal pngcairo size %d,420 font ',9'" % max(700, 140 * len(gnames) * max(1, nt // 2) + 200),
         "set output '%s'" % png,
         "set multiplot layout 1,2 title '%s / %s (median, bars min–max over repeats)'" % (scenario, case),
         "set style data histogram", "set style histogram errorbars gap 1 lw 1",
         "set style fill solid 0.8 border -1", "set grid ytics", "set yrange [0:*]",
         "set key below font ',8'", "set xtics font ',8'"]
    for off, ylabel in ((0, "MB/s (application)"), (3, "p99 write latency, ms")):
        s.append("set ylabel '%s'" % ylabel)
        s.append(_errorbar_plot(dat, [tun for tun, _ in items], off))
    s.append("unset multiplot")
    return png if _gp("\n".join(s) + "\n", png) else None


def _errorbar_plot(dat, names, off):
    """The gnuplot 'plot' line for dat's columns: per name, 6 columns (median, min, max of two
    measures); off 0 picks the first measure, 3 the second."""
    parts = []
    for i, name in enumerate(names):
        c = 2 + 6 * i + off
        parts.append("'%s' using %d:%d:%d%s title '%s' lc rgb '%s'" %
                     (dat if i == 0 else "", c, c + 1, c + 2, ":xtic(1)" if i == 0 else "",
                      name, COLORS[i % len(COLORS)]))
    return "plot " + ", ".join(parts)


def plot_matrix(outdir, scenario, summ):
    """thresh: write_bw per case (x) and tuning (bars), and the overshoot."""
    cases = []
    tuns = []
    for (sc, case, tun) in summ:
        if sc != scenario:
            continue
        if case not in cases:
            cases.append(case)
        if tun not in tuns:
            tuns.append(tun)
    if len(cases) < 2:
        return None
    png = os.path.join(outdir, "plots", "%s__matrix.png" % scenario)
    dat = png[:-4] + ".dat"
    with open(dat, "w") as f:
        for case in cases:
            row = [case.replace("thresh=", "")]
            for t in tuns:
                s = summ.get((scenario, case, t))
                g = list(s["groups"].values())[0] if s else None
                sp = _get(g, "write", "MBps") or {"median": 0, "min": 0, "max": 0}
                ov = _get(s, "global", "own_overshoot") or {"median": 0, "min": 0, "max": 0}
                row += ["%.3f" % sp["median"], "%.3f" % sp["min"], "%.3f" % sp["max"],
                        "%.3f" % ov["median"], "%.3f" % ov["min"], "%.3f" % ov["max"]]
            f.write("\t".join(row) + "\n")
    s = ["set terminal pngcairo size %d,800 font ',9'" % max(900, 45 * len(cases) * len(tuns) + 200),
         "set output '%s'" % png,
         "set multiplot layout 2,1 title '%s: write bandwidth and overshoot per case'" % scenario,
         "set style data histogram", "set style histogram errorbars gap 1 lw 1",
         "set style fill solid 0.8 border -1", "set grid ytics",
         "set key outside right top font ',8'", "set xtics rotate by -30 font ',8'",
         "set offsets 0, 0, graph 0.1, 0"]
    for off, ylabel in ((0, "MB/s (application)"), (3, "testbed dirty+writeback peak (x threshold)")):
        s.append("set ylabel '%s'" % ylabel)
        s.append("set yrange [0:*]")
        s.append(_errorbar_plot(dat, tuns, off))
    s.append("unset multiplot")
    return png if _gp("\n".join(s) + "\n", png) else None


def write_reports(outdir, results, meta):
    """Everything from results: per-scenario markdown, per scenario x tuning json,
    plots. Returns list of files written."""
    os.makedirs(os.path.join(outdir, "plots"), exist_ok=True)
    files = []
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": results}, f, indent=1)
    transitions = [r for r in results if r["scenario"] == "transitions"]
    if transitions:
        from . import trreport
        files += trreport.write(outdir, transitions, meta)
    firstsec = [r for r in results if r["scenario"] == "first-seconds"]
    if firstsec:
        from . import firstsec as fsmod
        files += fsmod.write(outdir, firstsec, meta)
    results = [r for r in results if r["scenario"] not in ("transitions", "first-seconds")]
    summ = summarize(results)
    scen = []
    for (sc, _, _) in summ:
        if sc not in scen:
            scen.append(sc)
    have_gnuplot = shutil.which("gnuplot") is not None
    for sc in scen:
        tuns = sorted({k[2] for k in summ if k[0] == sc}, key=lambda t: [k[2] for k in summ].index(t))
        for t in tuns:
            p = os.path.join(outdir, "%s__%s.json" % (sc, t))
            with open(p, "w") as f:
                json.dump({"meta": meta,
                           "summary": [s for k, s in summ.items() if k[0] == sc and k[2] == t],
                           "runs": [r for r in results if r["scenario"] == sc and r["tuning"] == t]},
                          f, indent=1)
            files.append(p)
        md = os.path.join(outdir, "%s.md" % sc)
        with open(md, "w") as f:
            f.write(markdown(summ, sc, meta))
        files.append(md)
        if not have_gnuplot:
            warn("gnuplot not found: no plots")
            continue
        cases = []
        for (s2, case, _) in summ:
            if s2 == sc and case not in cases:
                cases.append(case)
        for case in cases:
            runs = [r for r in results if r["scenario"] == sc and r["case"] == case]
            for png in (plot_timeseries(outdir, sc, case, runs), plot_bars(outdir, sc, case, summ)):
                if png:
                    files.append(png)
        png = plot_matrix(outdir, sc, summ)
        if png:
            files.append(png)
    return files
