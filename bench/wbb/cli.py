# SPDX-License-Identifier: GPL-2.0-or-later
"""Command line: run, quick, cleanup, report, cost, soak, crash, faketree."""
import argparse
import atexit
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time

from . import firstsec, knobs, report, runner, transitions, tunings, util
from .scenarios import SCENARIOS
from .testbed import Testbed, cleanup_command
from .util import log, warn, parse_size

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Interrupted(Exception):
    pass


def _on_signal(signum, frame):
    # Cleanup must not be interrupted half way: ignore further signals from now on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Interrupted("signal %d" % signum)


def csv(s):
    return [x for x in s.split(",") if x] if s else None


def mount_debugfs_for_run():
    """The per-device figures come from debugfs: mount it for this run if nobody has (as a
    machine without systemd's sys-kernel-debug.mount has it) and unmount it at exit."""
    if os.geteuid() != 0:
        return False
    if subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"]).returncode != 0:
        return False
    atexit.register(subprocess.run, ["umount", "/sys/kernel/debug"])
    log("debugfs was not mounted: mounted at /sys/kernel/debug for this run, unmounted at exit")
    return os.path.isdir("/sys/kernel/debug/bdi")


def preflight():
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root")
    import shutil
    for tool in ("fio", "losetup", "mkfs.ext4"):
        if not shutil.which(tool):
            problems.append("%s not installed" % tool)
    if not os.path.exists(knobs.THROTTLE):
        problems.append("no blkio throttle file %s" % knobs.THROTTLE)
    if not os.path.isdir("/sys/kernel/debug/bdi") and not mount_debugfs_for_run():
        problems.append("debugfs not mounted at /sys/kernel/debug, and mounting it failed")
    if not os.path.exists("/dev/loop-control"):
        problems.append("no loop devices (/dev/loop-control)")
    return problems


def add_run_args(p):
    p.add_argument("scenarios", nargs="*", default=["slowfast"],
                   help="thresh, slowfast, multi, overwrite, transitions, first-seconds, or all")
    p.add_argument("--tunings", type=csv, default=None,
                   help="comma list from %s (default all)" % ",".join(tunings.ALL))
    p.add_argument("--repeat", "--repeats", dest="repeat", type=int, default=None,
                   help="repeats (1; transitions: 3)")
    p.add_argument("-o", "--output", default=None, help="output dir (default bench/out/<timestamp>)")
    p.add_argument("--variants", "--scenario", dest="variants", type=csv,
                   help="slowfast: together,slow-first,solo; multi: randrw,mmapseq; "
                        "transitions: start,slowdown,paced-burst,onoff,admin; first-seconds: "
                        + ",".join(firstsec.FAMILIES))
    p.add_argument("--sets", type=csv, help="transitions, first-seconds: size/speed sets a,b (both; first-seconds also has c, a long fill)")
    p.add_argument("--idle-s", type=float, default=125,
                   help="first-seconds: idle seconds between the known cases' writes (125)")
    p.add_argument("--quick", action="store_true", help="transitions: set a only, 1 repeat")
    p.add_argument("--pin", action="store_true",
                   help="transitions: give the daemon the case's dirty_bytes as its pin (default: "
                        "none, as a new user runs it)")
    p.add_argument("--tick-ms", type=int, default=100, help="the daemon's tick (100)")
    p.add_argument("--fs", type=csv, help="filesystems (thresh: matrix; slowfast: slow,fast)")
    p.add_argument("--thresholds", type=csv, help="thresh: dirty_bytes list, e.g. 1M,100M")
    p.add_argument("--writers", type=csv, help="thresh: writer counts, e.g. 1,10")
    p.add_argument("--bs", help="thresh: bytes per write() call (1M)")
    p.add_argument("--runtime", type=float, help="seconds per run (thresh 10, multi 30, overwrite 20)")
    p.add_argument("--phase", type=float, help="slowfast: seconds per phase (20)")
    p.add_argument("--dirty", help="slowfast: dirty_bytes pin (400M; 0 = the kernel ratios as found)")
    p.add_argument("--slow-bps", type=parse_size, default=parse_size("8M"))
    p.add_argument("--fast-bps", type=parse_size, default=parse_size("120M"))
    p.add_argument("--unthrottled", action="store_true", help="do not throttle the fast device(s)")
    p.add_argument("--filesize", help="multi/overwrite file size")
    p.add_argument("--nfiles", type=int, help="overwrite: number of files (32)")
    p.add_argument("--wbtuned", dest="wbtuned", default=None,
                   help="daemon binary (default ../src/wbtuned from bench/, or $WBTUNED)")
    p.add_argument("--wbtuned-config", default=None, help="use this daemon config instead of a generated one")
    p.add_argument("--quiet-wait", type=float, default=60,
                   help="max seconds to wait before each run for other users' dirty pages to drain")
    p.add_argument("--quiet-bytes", type=parse_size, default=parse_size("16M"))
    p.add_argument("-v", "--verbose", action="count", default=0)


def cmd_run(o, quick=False):
    util.VERBOSE = 1 + o.verbose
    problems = preflight()
    if problems:
        print("cannot run: " + "; ".join(problems), file=sys.stderr)
        return 77
    families = {"transitions": transitions, "first-seconds": firstsec}
    scen_names = list(SCENARIOS) + list(families) if "all" in o.scenarios else o.scenarios
    for s in scen_names:
        if s not in SCENARIOS and s not in families:
            print("unknown scenario %r (%s, %s)" % (s, ", ".join(SCENARIOS), ", ".join(families)),
                  file=sys.stderr)
            return 2
    timed = [s for s in scen_names if s in families]
    if timed:
        if o.quick:
            o.sets = o.sets or ["a"]
        o.transitions_repeat = o.repeat or (1 if o.quick else 3)
        try:
            for s in timed:
                if s == "first-seconds":
                    firstsec.select_cases(o.variants, o.sets, o.idle_s)
                else:
                    transitions.select_cases(o.variants, o.sets)
        except ValueError as e:
            print(str(e), file=sys.stderr)
            return 2
    o.repeat = o.repeat or 1
    o.wbtuned_path = tunings.find_wbtuned(o.wbtuned, BENCH_DIR)
    if o.tunings is None and all(s in families for s in scen_names):
        o.tunings = list(transitions.TUNINGS)
    tl = o.tunings or list(tunings.ALL)
    for t in tl:
        if t not in tunings.ALL:
            print("unknown tuning %r (%s)" % (t, ", ".join(tunings.ALL)), file=sys.stderr)
            return 2
    notes = []
    if "wbtuned" in tl and not o.wbtuned_path:
        msg = "wbtuned binary not found (--wbtuned, $WBTUNED, ../src/wbtuned): skipping tuning 'wbtuned'"
        warn(msg)
        notes.append(msg)
        tl = [t for t in tl if t != "wbtuned"]
    outdir = os.path.abspath(o.output or os.path.join(BENCH_DIR, "out", time.strftime("%Y%m%d-%H%M%S")))
    for sub in ("", "jobs", "logs", "series", "plots"):
        os.makedirs(os.path.join(outdir, sub), exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "kernel": platform.release(),
            "command": " ".join(shlex.quote(a) for a in sys.argv), "tunings": tl,
            "repeat": o.repeat if not timed else o.transitions_repeat,
            "scenarios": scen_names, "notes": notes,
            "wbtuned": o.wbtuned_path, "cpus": os.cpu_count(),
            "baseline_vm": knobs.vm_read(), "tick_ms": o.tick_ms, "pin": o.pin}
    want_snapshot = quick or bool(timed)
    found_errors, found_notes, checked = [], [], 0
    results = []
    t_start = time.monotonic()
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    rc = 0
    tb = None
    try:
        for sname in scen_names:
            scen = SCENARIOS[sname](o) if sname not in families else None
            tb = Testbed(snapshot=want_snapshot)
            tb.prepped = set()
            atexit.register(tb.close)
            try:
                def save(res_all, _base=list(results)):
                    with open(os.path.join(outdir, "results.json"), "w") as f:
                        json.dump({"meta": meta, "runs": _base + res_all}, f, indent=1)
                if scen is None:
                    results += families[sname].run_family(tb, o, tl, outdir, save)
                else:
                    results += runner.run_scenario(tb, o, scen, tl, outdir, save)
            finally:
                errs = tb.close()
                if errs:
                    rc = 1
                found_errors += tb.as_found[0]
                found_notes += tb.as_found[1]
                checked += tb.before is not None
    except Interrupted as e:
        warn("interrupted (%s): cleaned up" % e)
        rc = 130
    except Exception as e:
        import traceback
        traceback.print_exc()
        warn("failed: %s (cleaned up)" % e)
        rc = 1
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    meta["elapsed_s"] = time.monotonic() - t_start
    files = report.write_reports(outdir, results, meta) if results else []
    print("output: %s" % outdir)
    for f in files:
        if f.endswith(".md"):
            print("  " + f)
    if quick:
        rc = quick_checks(found_errors, found_notes, results, files, rc, tl, outdir)
    elif want_snapshot and checked:
        for n in found_notes:
            print("note: " + n)
        for e in found_errors:
            print("NOT AS FOUND: " + e)
        print("kernel as found after the run (checked before the lock was released): %s" %
              ("yes" if not found_errors else "NO"))
        rc = rc or (1 if found_errors else 0)
    return rc


def quick_checks(found_errors, found_notes, results, files, rc, tl, outdir):
    """Only what must always hold; no timing assertions. found_*: Testbed.as_found."""
    errors, notes = list(found_errors), list(found_notes)
    if rc not in (0,):
        errors.append("run failed with rc %d" % rc)
    want_runs = len(tl)
    if len(results) != want_runs:
        errors.append("%d runs done, %d expected" % (len(results), want_runs))
    for r in results:
        d = r.get("daemon")
        if d is not None and not d["clean"]:
            errors.append("wbtuned did not exit cleanly: %s" % d)
        if not r.get("groups"):
            errors.append("no fio figures in %s/%s" % (r["case"], r["tuning"]))
    pngs = [f for f in files if f.endswith(".png")]
    if not any(f.endswith(".md") for f in files):
        errors.append("no markdown report")
    if len([f for f in files if f.endswith(".json")]) < len(tl):
        errors.append("missing json per tuning")
    if not any("timeseries" in f for f in pngs) or not any("bars" in f for f in pngs):
        errors.append("plots missing (have %s)" % pngs)
    for f in pngs:
        if os.path.getsize(f) < 1000:
            errors.append("plot %s is suspiciously small" % f)
    for n in notes:
        print("note: " + n)
    for e in errors:
        print("FAIL: " + e)
    print("quick: %s (%s)" % ("PASS" if not errors else "FAIL", outdir))
    return 0 if not errors else 1


def main(argv=None):
    ap = argparse.ArgumentParser(prog="wbbench", description="real-kernel writeback testbed for wbtuned")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run scenarios x tunings x repeats, interleaved")
    add_run_args(p)
    p = sub.add_parser("quick", help="a few minutes: slowfast slow-first 5+5 s, restore checks")
    add_run_args(p)
    p = sub.add_parser("cleanup", help="undo a killed run from /run/wbbench.state")
    p.add_argument("--force", action="store_true")
    p = sub.add_parser("report", help="regenerate reports from DIR/results.json")
    p.add_argument("dir")
    p = sub.add_parser("cost", help="daemon CPU per tick and peak RSS (fake trees and live)")
    p.add_argument("--bdis", type=csv, default=["10", "100", "1000"])
    p.add_argument("--ticks", type=int, default=100)
    p.add_argument("--tick-ms", type=int, default=100)
    p.add_argument("--live", action="store_true", help="also on a live 4-device testbed")
    p.add_argument("--wbtuned", default=None,
                   help="the binary, or LABEL=PATH,LABEL=PATH to compare (alternating in each repeat)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--tree-dir", default="/var/tmp",
                   help="where the fake trees go; /dev/shm (tmpfs, in memory like sysfs) keeps other users' "
                        "disk I/O out of the figures")
    p.add_argument("-o", "--output", default=None)
    p.add_argument("-v", "--verbose", action="count", default=0)
    p = sub.add_parser("soak", help="the daemon for minutes on the live testbed: devices, writers, reloads, valgrind")
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--valgrind-seconds", type=int, default=60, help="under valgrind for this long first (0: never)")
    p.add_argument("--watchdog-usec", type=int, default=3000000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--wbtuned", default=None)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("-v", "--verbose", action="count", default=0)
    p = sub.add_parser("crash", help="kill -9 the daemon at random points; count exact restores")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--tick-ms", type=int, default=100)
    p.add_argument("--max-kill-s", type=float, default=3.0, help="kill after 0..this many seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--wbtuned", default=None)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("-v", "--verbose", action="count", default=0)
    p = sub.add_parser("faketree", help="write a fake /proc+/sys tree with N BDIs")
    p.add_argument("dir")
    p.add_argument("--bdis", type=int, default=10)
    o = ap.parse_args(argv)
    if o.cmd == "run":
        return cmd_run(o)
    if o.cmd == "quick":
        o.scenarios = ["slowfast"]
        o.variants = o.variants or ["slow-first"]
        o.phase = o.phase or 5
        o.repeat = 1
        if o.tunings is None:
            o.tunings = ["kernel", "static-16M", "oracle", "wbtuned"]
            if not tunings.find_wbtuned(o.wbtuned, BENCH_DIR):
                o.tunings.remove("wbtuned")
                print("note: wbtuned binary not found; quick runs without the 'wbtuned' tuning")
        return cmd_run(o, quick=True)
    if o.cmd == "cleanup":
        return cleanup_command(o.force)
    if o.cmd == "report":
        with open(os.path.join(o.dir, "results.json")) as f:
            d = json.load(f)
        files = report.write_reports(o.dir, d["runs"], d["meta"])
        print("\n".join(files))
        return 0
    if o.cmd in ("soak", "crash"):
        from . import hardening
        problems = preflight()
        if problems:
            print("cannot run: " + "; ".join(problems), file=sys.stderr)
            return 77
        util.VERBOSE = 1 + o.verbose
        old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            return (hardening.cmd_soak if o.cmd == "soak" else hardening.cmd_crash)(o, BENCH_DIR)
        except Interrupted as e:
            warn("interrupted (%s): cleaned up" % e)
            return 130
        finally:
            for s, h in old.items():
                signal.signal(s, h)
    if o.cmd in ("cost", "faketree"):
        from . import cost
        if o.cmd == "faketree":
            cost.make_fake_tree(o.dir, o.bdis)
            print(o.dir)
            return 0
        util.VERBOSE = 1 + o.verbose
        return cost.cmd_cost(o, BENCH_DIR)
    return 2
