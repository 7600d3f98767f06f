#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The markdown matrix (feature x kernel) from scripts/vm-matrix.sh's output directory.

Usage: vm-matrix-report.py DIR KERNEL...   (DIR/KERNEL/ holds what scripts/vm-guest.sh wrote)
Tolerant of missing files: a cell says what is missing rather than guessing.
"""
import json
import os
import re
import sys


def read(path, default=None):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    text = read(path)
    if not text:
        return None
    try:
        j = json.loads(text)
    except ValueError:
        return None
    if isinstance(j, dict) and "result" in j and "ok" in j:
        j = j["result"]
    return j


def kv_lines(path):
    out = {}
    for line in (read(path) or "").splitlines():
        k, _, v = line.partition(" ")
        if k:
            out[k] = v.strip()
    return out


def props(path):
    out = {}
    for line in (read(path) or "").splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def mb(n):
    if n is None:
        return "?"
    n = float(n)
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return "%.1f%s" % (n / scale, unit)
    return "%d" % n


def devices_of(j):
    if isinstance(j, dict):
        j = j.get("devices", [])
    return j if isinstance(j, list) else []


def dd_rate(path):
    """bytes/s from dd's summary line, or None."""
    text = read(path) or ""
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", text)
    if not m:
        return None
    return int(m.group(1)) / float(m.group(2))


def kernel_column(d):
    col = {}
    if not os.path.isdir(d):
        return {"kernel": "no results"}
    inv = kv_lines(os.path.join(d, "inventory"))
    devs = kv_lines(os.path.join(d, "devices"))
    slow_bdi = (devs.get("slow") or " ").split()[-1]
    fast_bdi = (devs.get("fast") or " ").split()[-1]

    col["kernel"] = (read(os.path.join(d, "kernel")) or "?").strip()
    col["accelerator"] = {"kvm": "kvm", "qemu": "tcg"}.get((read(os.path.join(d, "virt")) or "?").strip(), "?")
    col["qemu run (s)"] = (read(os.path.join(d, "qemu_seconds")) or "?").strip()
    col["guest finished"] = "yes" if os.path.exists(os.path.join(d, "done")) else "NO"
    for f in ("min_ratio_fine", "max_ratio_fine", "min_bytes", "max_bytes", "strict_limit"):
        col["bdi/" + f] = inv.get("bdi/" + f, "?")
    col["debugfs bdi/*/stats"] = inv.get("debugfs/bdi/stats", "?")
    col["debugfs bdi/*/wb_stats"] = inv.get("debugfs/bdi/wb_stats", "?")
    col["cgroup v2, udev"] = "%s, %s" % (inv.get("cgroup2", "?"), inv.get("udev", "?"))

    apt_rc = (read(os.path.join(d, "apt-install.rc")) or "?").strip()
    col["apt-get install ./wbtuned_*.deb; unit enabled by it"] = "%s; %s" % (
        "ok" if apt_rc == "0" else "FAILED (exit %s)" % apt_rc,
        (read(os.path.join(d, "unit.enabled-by-package")) or "?").strip())
    started = props(os.path.join(d, "unit.started"))
    col["unit after enable --now"] = "%s; %s" % (started.get("ActiveState", "?"), started.get("StatusText", "") or "no STATUS")
    st = load_json(os.path.join(d, "status.start.json")) or {}
    col["daemon mode, stats source"] = "%s, %s" % (st.get("mode", "?"), (st.get("stats_source") or "?").split(" ")[0])

    # per-device figures against /proc/meminfo over the writing window: the daemon's devices answer
    # is up to a tick old, so compare sums over the samples (and the peaks), not one sample
    sum_dev = sum_mem = peak_dev = peak_mem = 0
    slow_seen = 0
    for line in (read(os.path.join(d, "samples.tsv")) or "").splitlines()[1:]:
        f = line.split("\t")
        t, mem = f[0], int(f[1] or 0) * 1024
        j = load_json(os.path.join(d, "devices.%s.json" % t))
        if j is None:
            continue
        dev = sum(x.get("dirty_bytes", 0) for x in devices_of(j))
        for x in devices_of(j):
            if x.get("bdi") == slow_bdi:
                slow_seen = max(slow_seen, x.get("dirty_bytes", 0) + x.get("writeback_bytes", 0))
        sum_dev, sum_mem = sum_dev + dev, sum_mem + mem
        peak_dev, peak_mem = max(peak_dev, dev), max(peak_mem, mem)
    if sum_mem:
        share = sum_dev / sum_mem
        col["per-device dirty vs meminfo Dirty (sum over samples; peaks)"] = "%s: %d%%; peaks %s of %s" % (
            "ok" if share >= 0.5 else "BLIND", round(100 * share), mb(peak_dev), mb(peak_mem))
    else:
        col["per-device dirty vs meminfo Dirty (sum over samples; peaks)"] = "no samples"
    col["slow device dirty+writeback seen (max)"] = mb(slow_seen)

    before = kv_lines(os.path.join(d, "knobs.before"))
    samples = [l.split("\t") for l in (read(os.path.join(d, "samples.tsv")) or "").splitlines()[1:]]
    dirty_bytes_seen = sorted({int(s[3]) for s in samples if s[3].isdigit() and int(s[3]) > 0})
    start = ("%s bytes" % mb(int(before["/proc/sys/vm/dirty_bytes"]))
             if before.get("/proc/sys/vm/dirty_bytes", "0") != "0"
             else "ratio %s%%" % before.get("/proc/sys/vm/dirty_ratio", "?"))
    col["vm.dirty_bytes during the writes"] = "%s -> %s" % (
        start, ("min %s, max %s" % (mb(dirty_bytes_seen[0]), mb(dirty_bytes_seen[-1]))) if dirty_bytes_seen else "unchanged")
    for name, mi, si in (("slow", 4, 5), ("fast", 6, 7)):
        if samples:
            caps = sorted({s[mi] for s in samples if s[mi] not in ("-", "")}, key=lambda v: int(v))
            stricts = {s[si] for s in samples}
            low = mb(int(caps[0])) if caps else "no max_bytes file"
            col["%s device: lowest max_bytes, strict_limit" % name] = "%s, %s" % (low, "/".join(sorted(stricts)))
    ex = load_json(os.path.join(d, "explain.slow.json")) or {}
    text = (ex.get("text") or read(os.path.join(d, "explain.slow.txt")) or "").strip().splitlines()
    col["explain (slow device), first lines"] = " / ".join(l.strip() for l in text[:3]) or "?"
    att = st.get("attribution") or {}
    col["attribution under the unit: trace, taskstats"] = "%s, %s" % (
        "on" if att.get("enabled") else "off (%s)" % att.get("reason", "?"),
        "on" if att.get("taskstats") else "off (%s)" % att.get("taskstats_reason", "?"))
    # top once a second while the writers ran: in how many samples dd was a dirtier, or throttled
    n_top = n_dirtier = n_paused = 0
    for s_ in samples:
        top = load_json(os.path.join(d, "top.%s.json" % s_[0]))
        if top is None:
            continue
        n_top += 1
        n_dirtier += any(x.get("comm") == "dd" for x in top.get("dirtiers", []))
        n_paused += any(x.get("comm") == "dd" for x in top.get("paused", []))
    col["top: samples with dd dirtying; dd throttled"] = "%d/%d; %d/%d" % (n_dirtier, n_top, n_paused, n_top)

    after = kv_lines(os.path.join(d, "knobs.after"))
    diffs = ["%s %s->%s" % (k.replace("/proc/sys/", "").replace("/sys/class/bdi/", ""), before.get(k), after.get(k))
             for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    col["every knob restored exactly at stop"] = ("yes (%d files)" % len(before)) if before and not diffs else (
        "NO: " + "; ".join(diffs[:6]) + (" ..." if len(diffs) > 6 else "") if before else "?")
    stopped = props(os.path.join(d, "unit.stopped"))
    left = (read(os.path.join(d, "run-wbtuned.after")) or "").split()
    col["unit after stop"] = "%s/%s, result %s%s" % (stopped.get("ActiveState", "?"), stopped.get("SubState", "?"),
                                                     stopped.get("Result", "?"),
                                                     ", /run/wbtuned/saved left" if "saved" in left else "")
    journal = read(os.path.join(d, "journal.txt")) or ""
    col["'Failed to write' lines in the journal"] = str(len(re.findall(r"wbtuned\[\d+\]: .*Failed to write", journal)))

    # kernel alone before the daemon started and after it stopped (the reference: their median), and with it
    def rates(kind, phase):
        out, i = [], 1
        while os.path.exists(os.path.join(d, "%s-%s-%d.txt" % (kind, phase, i))):
            out.append(dd_rate(os.path.join(d, "%s-%s-%d.txt" % (kind, phase, i))))
            i += 1
        return out
    def median(v):
        v = sorted(x for x in v if x)
        return (v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2) if v else None
    fmt = lambda v: ", ".join(mb(x) if x else "failed" for x in v) or "?"
    for kind, name in (("memcg", "MemoryMax= writer"), ("memcghigh", "MemoryHigh= writer"),
                       ("memcgbeside", "MemoryMax= writer beside a slow host writer"),
                       ("hostbeside", "the slow host writer beside it")):
        before, with_daemon, after = rates(kind, "kernel-before"), rates(kind, "daemon"), rates(kind, "kernel-after")
        if not (before or with_daemon or after):
            continue          # an older guest script: no such runs
        alone, daemon = median(before + after), median(with_daemon)
        col["%s, kernel alone (before; after), /s" % name] = "%s; %s" % (fmt(before), fmt(after))
        col["%s, with the daemon, /s" % name] = fmt(with_daemon)
        col["%s: with / alone (must be >= 0.9)" % name] = (
            "%.2f %s" % (daemon / alone, "ok" if daemon / alone >= 0.9 else "WORSE") if alone and daemon else "?")
    return col


def main():
    outdir, kernels = sys.argv[1], sys.argv[2:]
    cols = [kernel_column(os.path.join(outdir, k)) for k in kernels]
    rows = []
    for c in cols:
        for k in c:
            if k not in rows:
                rows.append(k)
    version = (read(os.path.join(outdir, "wbtuned-version")) or "?").strip()
    print("wbtuned %s, `sudo bash scripts/vm-matrix.sh %s`\n" % (version, " ".join(kernels)))
    print("| feature | " + " | ".join(kernels) + " |")
    print("|---|" + "---|" * len(kernels))
    for r in rows:
        cells = [str(c.get(r, "")).replace("|", "\\|") for c in cols]
        print("| %s | %s |" % (r, " | ".join(cells)))


if __name__ == "__main__":
    main()
