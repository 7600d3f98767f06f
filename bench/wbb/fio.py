# SPDX-License-Identifier: GPL-2.0-or-later
"""fio job files and json parsing."""
import json


class Group:
    """One writer group = one fio reporting group (group_reporting + new_group)."""

    def __init__(self, name, device, runtime, rw="write", ioengine="psync", bs="1M",
                 numjobs=1, size="1G", startdelay=0, extra=None):
        self.name, self.device, self.runtime = name, device, runtime
        self.rw, self.ioengine, self.bs = rw, ioengine, bs
        self.numjobs, self.size, self.startdelay = numjobs, size, startdelay
        self.extra = extra or {}


def jobfile(groups):
    lines = ["[global]", "direct=0", "fallocate=none", "time_based=1",
             "group_reporting=1", "invalidate=0", "end_fsync=0",
             "percentile_list=50:90:99:99.9", ""]
    for g in groups:
        lines += ["[%s]" % g.name, "new_group", "directory=%s" % g.device.mnt,
                  "rw=%s" % g.rw, "ioengine=%s" % g.ioengine, "bs=%s" % g.bs,
                  "numjobs=%d" % g.numjobs, "size=%s" % g.size,
                  "runtime=%s" % g.runtime, "startdelay=%s" % g.startdelay]
        for k, v in g.extra.items():
            lines.append(k if v is None else "%s=%s" % (k, v))
        lines.append("")
    return "\n".join(lines)


def _pct(d, key):
    p = (d.get("clat_ns") or {}).get("percentile") or {}
    for k, v in p.items():
        if abs(float(k) - key) < 1e-6:
            return v / 1e6
    return None


def _dir(d):
    if not d or not d.get("io_bytes"):
        return None
    return {"MBps": d["bw_bytes"] / 1e6, "io_bytes": d["io_bytes"],
            "runtime_ms": d["runtime"],
            "clat_p50_ms": _pct(d, 50), "clat_p99_ms": _pct(d, 99),
            "clat_p999_ms": _pct(d, 99.9),
            "clat_max_ms": d["clat_ns"]["max"] / 1e6,
            "lat_max_ms": d["lat_ns"]["max"] / 1e6,
            "iops": d.get("iops")}


def parse(text, groups):
    """-> {group name: {"write": {...}, "read": {...} or None, "device": ...}}."""
    # fio may print warnings before the json object
    start = text.find("{")
    data = json.loads(text[start:])
    out = {}
    for job in data.get("jobs", []):
        gid = job.get("groupid", 0)
        if gid >= len(groups):
            continue
        g = groups[gid]
        out[g.name] = {"device": g.device.name, "mm": g.device.mm,
                       "numjobs": g.numjobs, "rw": g.rw,
                       "write": _dir(job.get("write")), "read": _dir(job.get("read")),
                       "error": job.get("error", 0)}
    return out


def parse_single(text):
    """The write figures of a one-job fio json output (as in parse()), or None."""
    start = text.find("{")
    jobs = json.loads(text[start:]).get("jobs", [])
    return _dir(jobs[0].get("write")) if jobs else None


def read_lat_log(path, wall0):
    """fio's per-write latency log written with log_unix_epoch=1 and log_avg_msec=0
    ('unix ms, latency ns, ddir, bytes, ...' per line) -> [(completion s since wall0,
    latency ms, bytes)]."""
    out = []
    with open(path) as f:
        for line in f:
            parts = [x.strip() for x in line.split(",")]
            if len(parts) < 4 or parts[2] != "1":       # 1 = write
                continue
            out.append((int(parts[0]) / 1000.0 - wall0, int(parts[1]) / 1e6, int(parts[3])))
    return out
