# SPDX-License-Identifier: GPL-2.0-or-later
"""Small helpers: logging, running commands, sizes, statistics."""
import os
import re
import statistics
import subprocess
import sys
import time

VERBOSE = 1
PAGE = os.sysconf("SC_PAGE_SIZE")
CLK_TCK = os.sysconf("SC_CLK_TCK")


_held = None     # a list while output is held back (hold_output)


def _emit(line):
    if _held is not None:
        _held.append(line)
        return
    sys.stderr.write(line)
    sys.stderr.flush()


def hold_output(on):
    """While on, log()/warn() lines are kept in memory and printed when it is turned off:
    stderr may be a file on a disk whose writes the run under way throttles."""
    global _held
    if on:
        _held = _held if _held is not None else []
        return
    lines, _held = _held or [], None
    for line in lines:
        _emit(line)


def log(msg, level=1):
    if VERBOSE >= level:
        _emit("[wbbench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))


def warn(msg):
    _emit("[wbbench %s] WARNING: %s\n" % (time.strftime("%H:%M:%S"), msg))


def run(cmd, check=True, capture=True, timeout=None):
    """Run a command (list); return stdout text. Raise with stderr on failure."""
    log("$ " + " ".join(cmd), 2)
    p = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s failed (rc %d): %s" % (" ".join(cmd), p.returncode,
                                                     (p.stderr or "").strip()))
    return p.stdout if capture else ""


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        if default is not None:
            return default
        raise


def read_int(path):
    return int(read(path).split()[0])


def write(path, value):
    """Write a knob (no O_CREAT). Raises OSError with the path in the message."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, str(value).encode())
    except OSError as e:
        raise OSError(e.errno, "writing %r to %s: %s" % (value, path, e.strerror)) from None
    finally:
        os.close(fd)


_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(s):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(s), re.I)
    if not m:
        raise ValueError("bad size %r" % s)
    return int(float(m.group(1)) * _SUFFIX[m.group(2).upper()])


def fmt_size(n):
    n = float(n)
    for unit in ("", "K", "M", "G"):
        if abs(n) < 1024 or unit == "G":
            return ("%.0f%s" if unit == "" else "%.1f%s") % (n, unit)
        n /= 1024
    return str(n)


def spread(values):
    """min/median/max/CoV of a list of numbers (None entries ignored)."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    mean = statistics.fmean(v)
    cov = (statistics.pstdev(v) / mean) if len(v) > 1 and mean else 0.0
    return {"n": len(v), "min": min(v), "median": statistics.median(v), "max": max(v),
            "mean": mean, "cov": cov}


def atomic_write(path, text):
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
