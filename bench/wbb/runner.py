# SPDX-License-Identifier: GPL-2.0-or-later
"""Run cases x tunings x repeats, interleaved: for each repeat, each case, each tuning."""
import glob
import json
import os
import subprocess
import threading
import time

from . import fio, knobs, tunings
from .sampler import Sampler, foreign_backlog
from .util import log, warn, run, spread, PAGE

M = 1 << 20


def timed_syncs(devs):
    """sync -f on every device at once; seconds each took."""
    out = {}

    def one(d):
        t = time.monotonic()
        subprocess.run(["sync", "-f", d.mnt])
        out[d.mm] = time.monotonic() - t
    ths = [threading.Thread(target=one, args=(d,)) for d in devs]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return out


def series_rows(sampler, devs):
    rows = []
    for t, g, dd in sampler.rows:
        r = [t, g.get("nr_dirty", 0), g.get("nr_writeback", 0),
             g.get("nr_dirty_threshold", 0), g.get("nr_dirty_background_threshold", 0)]
        for d in devs:
            x = dd.get(d.mm, {})
            r += [x.get("dirty", 0), x.get("writeback", 0), x.get("thresh", 0), x.get("wb_bw", 0)]
        rows.append(r)
    return rows


def write_series(path, rows, devs, marks):
    cols = ["t", "g_dirty", "g_writeback", "g_thresh", "g_bg_thresh"]
    for d in devs:
        cols += ["%s_dirty" % d.name, "%s_writeback" % d.name, "%s_thresh" % d.name,
                 "%s_bw" % d.name]
    with open(path, "w") as f:
        f.write("# MB (bw in MB/s); marks: %s\n" % json.dumps(marks))
        f.write("# " + "\t".join(cols) + "\n")
        for r in rows:
            f.write("%.2f\t" % r[0] + "\t".join("%.3f" % (v / M) for v in r[1:]) + "\n")


def metrics(sampler, devs, fio_end, daemon_tunes=False):
    """daemon_tunes: wbtuned ran, so vm knob changes are its own, not someone else's."""
    rows = sampler.rows
    peak, peak_t, thr_at_peak, worst = 0, 0, 0, 0.0
    thrs = []
    for t, g, _ in rows:
        tot = g.get("nr_dirty", 0) + g.get("nr_writeback", 0)
        th = g.get("nr_dirty_threshold", 0)
        if t <= fio_end:
            thrs.append(th)
        if tot > peak:
            peak, peak_t, thr_at_peak = tot, t, th
        if th:
            worst = max(worst, tot / th)
    thrs.sort()
    own_peak, own_worst, foreign = 0, 0.0, 0
    knob_changes = set()
    first = rows[0][1] if rows else {}
    for t, g, dd in rows:
        tot = sum(x["dirty"] + x["writeback"] for x in dd.values())
        own_peak = max(own_peak, tot)
        foreign = max(foreign, g.get("nr_dirty", 0) + g.get("nr_writeback", 0) - tot)
        for k in g:
            if k.startswith("vm.") and g[k] != first.get(k):
                knob_changes.add("%s %s->%s at %.1fs" % (k, first.get(k), g[k], t))
        th = g.get("nr_dirty_threshold", 0)
        if th:
            own_worst = max(own_worst, tot / th)
    m = {"global": {"peak_bytes": peak, "peak_t": peak_t,
                    "thresh_bytes": thrs[len(thrs) // 2] if thrs else 0,
                    "thresh_at_peak": thr_at_peak, "overshoot": worst,
                    "own_peak_bytes": own_peak, "own_overshoot": own_worst,
                    "foreign_peak_bytes": foreign,
                    "foreign_knob_changes": [] if daemon_tunes else sorted(knob_changes),
                    "daemon_knob_changes": len(knob_changes) if daemon_tunes else 0,
                    "samples": len(rows)},
         "devices": {}}
    for d in devs:
        pk, pk_t, bdithr, bw_max = 0, 0, 0, 0
        for t, g, dd in rows:
            x = dd.get(d.mm)
            if not x:
                continue
            b = x["dirty"] + x["writeback"]
            if b > pk:
                pk, pk_t = b, t
            bdithr = max(bdithr, x["thresh"])
            bw_max = max(bw_max, x["wb_bw"])
        bw = d.bps or bw_max
        m["devices"][d.name] = {"mm": d.mm, "bdi": d.bdi, "fs": d.fs, "bps": d.bps,
                                "peak_backlog_bytes": pk, "peak_t": pk_t,
                                "peak_backlog_s": pk / bw if bw else None,
                                "bw_for_seconds": bw, "max_wb_bw": bw_max,
                                "peak_bdi_thresh_bytes": bdithr}
    return m


def wait_quiet(tb, opts):
    """Other users' dirty+writeback pages share the global pool: wait (up to
    --quiet-wait s) until they are below --quiet-bytes, and report what was left."""
    end = time.monotonic() + opts.quiet_wait
    while True:
        f = foreign_backlog(tb.devices)
        if f <= opts.quiet_bytes or time.monotonic() >= end:
            if f > opts.quiet_bytes:
                warn("%.0fM of other users' dirty+writeback pages at start" % (f / M))
            return f
        time.sleep(0.5)


def remember_all_bdis(tb):
    """Before a daemon starts: it may tune any device on the machine, so journal the knobs of
    all of them (undo() restores those outside the testbed after a kill -9 too)."""
    tb.state.d["daemon_bdi_pre"] = {os.path.basename(x): knobs.bdi_read(os.path.basename(x))
                                    for x in glob.glob("/sys/class/bdi/*")}
    tb.state.save()


def restore_other_bdis(tb):
    """After the daemon stopped: put back devices outside the testbed it left changed.
    Returns their names."""
    left = []
    for mm, saved in tb.state.d.pop("daemon_bdi_pre", {}).items():
        if mm in tb.state.d["bdi_saved"] or not os.path.isdir("/sys/class/bdi/" + mm):
            continue
        if knobs.bdi_read(mm) != saved:
            left.append(mm)
            knobs.bdi_restore(mm, saved)
    tb.state.save()
    return left


def prep_case(tb, case, outdir):
    if not case.prep:
        return
    key = "prep:" + case.name
    if key in tb.prepped:
        return
    jf = os.path.join(outdir, "jobs", "prep-%s.fio" % case.name)
    with open(jf, "w") as f:
        f.write(fio.jobfile(case.prep))
    log("laying out files for %s" % case.name)
    run(["fio", "--output-format=json", "--output=" + jf + ".json", jf], timeout=1800)
    for d in case.devices:
        run(["sync", "-f", d.mnt])
    tb.prepped.add(key)


def run_one(tb, opts, scen, case, tuning, rep, outdir):
    tag = "%s__%s__%s__r%d" % (scen.name, case.name, tuning, rep)
    log("run %s (%.0f s)" % (tag, case.duration))
    res = {"scenario": scen.name, "case": case.name, "tuning": tuning, "repeat": rep,
           "start": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "device_list": [d.to_json() for d in case.devices]}
    errs = tb.restore_knobs()
    if errs:
        raise RuntimeError("cannot restore knobs before run: %s" % errs)
    if case.fresh:
        for d in case.devices:
            tb.wipe(d)
    prep_case(tb, case, outdir)
    for d in case.devices:
        run(["sync", "-f", d.mnt])
    res["foreign_at_start_bytes"] = wait_quiet(tb, opts)
    applied = {}
    daemon = None
    sampler = Sampler(case.devices)
    try:
        tunings.apply(tuning, case, applied)
        if tuning == "wbtuned":
            remember_all_bdis(tb)
            conf = tunings.daemon_config(os.path.join(tb.priv, "wbtuned.conf"), tb.priv, case,
                                         opts.wbtuned_config)
            daemon = tunings.Daemon(tb, opts.wbtuned_path, conf,
                                    os.path.join(outdir, "logs", tag + ".wbtuned.log"))
            if not daemon.wait_ready():
                warn("wbtuned not ready (socket %s missing or daemon exited)" % daemon.sock)
        res["applied"] = applied
        jf = os.path.join(outdir, "jobs", tag + ".fio")
        with open(jf, "w") as f:
            f.write(fio.jobfile(case.groups))
        outjson = os.path.join(outdir, "logs", tag + ".fio.json")
        sampler.start()
        while sampler.t0 is None:
            time.sleep(0.01)
        p = tb.spawn(["fio", "--output-format=json", "--output=" + outjson, jf],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, ferr = p.communicate(timeout=case.duration + 300)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            tb.reap(p)
        fio_end = time.monotonic() - sampler.t0
        sampler.mark("fio end")
        if p.returncode != 0:
            raise RuntimeError("fio failed (rc %d): %s" % (p.returncode, (ferr or "").strip()[-2000:]))
        with open(outjson) as f:
            res["groups"] = fio.parse(f.read(), case.groups)
        syncs = timed_syncs(case.devices)
        res["sync_s"] = {d.name: syncs[d.mm] for d in case.devices}
        sampler.mark("sync end")
    finally:
        if sampler.is_alive():
            sampler.stop()
        if daemon:
            res["daemon"] = daemon.stop()
            if not res["daemon"]["clean"]:
                warn("wbtuned did not exit cleanly: %s" % res["daemon"])
            left = restore_other_bdis(tb)
            if left:
                warn("wbtuned left knobs changed on devices outside the testbed: %s (restored)" % left)
                res["daemon"]["left_foreign_bdis"] = left
        errs = tb.restore_knobs()
        if errs:
            warn("restore after run: %s" % errs)
            res["restore_errors"] = errs
    res["fio_end_s"] = fio_end
    res["marks"] = [(p_, l) for p_, l in case.phases] + sampler.marks
    res.update(metrics(sampler, case.devices, fio_end, daemon_tunes=tuning == "wbtuned"))
    if res["global"]["foreign_knob_changes"]:
        warn("someone else changed vm knobs during the run: %s" % res["global"]["foreign_knob_changes"])
    for d in case.devices:
        res["devices"][d.name]["sync_s"] = res["sync_s"][d.name]
    rows = series_rows(sampler, case.devices)
    sp = os.path.join(outdir, "series", tag + ".tsv")
    write_series(sp, rows, case.devices, res["marks"])
    res["series"] = os.path.relpath(sp, outdir)
    g = res["groups"]
    log("  " + "; ".join("%s %.1f MB/s p99 %.0f ms" % (n, x["write"]["MBps"], x["write"]["clat_p99_ms"] or 0)
                         for n, x in g.items() if x["write"]) +
        "; peak %.0fM / thresh %.0fM" % (res["global"]["peak_bytes"] / M, res["global"]["thresh_bytes"] / M) +
        "; others %.0fM" % (res["global"]["foreign_peak_bytes"] / M) +
        "; " + ", ".join("%s backlog %.0fM sync %.1fs" % (n, v["peak_backlog_bytes"] / M, res["sync_s"][n])
                         for n, v in res["devices"].items()))
    return res


def run_scenario(tb, opts, scen, tuning_list, outdir, on_result):
    """Build the scenario's devices on tb, then repeats x cases x tunings."""
    devs = [tb.add_device(s.fs, s.bps, s.size) for s in scen.devspecs()]
    cases = list(scen.cases(devs))
    results = []
    for rep in range(opts.repeat):
        for case in cases:
            for t in tuning_list:
                r = run_one(tb, opts, scen, case, t, rep, outdir)
                results.append(r)
                on_result(results)
    return results
