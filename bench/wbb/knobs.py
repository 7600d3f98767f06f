# SPDX-License-Identifier: GPL-2.0-or-later
"""Save and restore every kernel knob wbbench touches.

vm dirty knobs come in bytes/ratio pairs: writing one member zeroes the other, and
writing 0 to *_bytes is EINVAL, so a pair is restored by writing whichever member was
non-zero.  Per-BDI limits are restored through the exact *_ratio_fine files (the
*_bytes files are only a view of a ratio of today's limit), min lowered first so
min <= max holds at every step.  Throttles are removed by writing BPS 0.
"""
import glob
import os

from .util import read, write, log, warn

VM = "/proc/sys/vm"
VM_KNOBS = ["dirty_bytes", "dirty_ratio", "dirty_background_bytes",
            "dirty_background_ratio", "dirty_writeback_centisecs",
            "dirty_expire_centisecs"]
BDI_CLASS = "/sys/class/bdi"
BDI_KNOBS = ["min_ratio", "max_ratio", "min_ratio_fine", "max_ratio_fine",
             "strict_limit"]
THROTTLE = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"


# ---------------------------------------------------------------- vm -------
def vm_read():
    return {k: int(read(os.path.join(VM, k)).strip()) for k in VM_KNOBS}


def vm_write(name, value):
    log("vm.%s = %s" % (name, value), 2)
    write(os.path.join(VM, name), value)


def vm_set_dirty(bytes_=None, ratio=None, bg_bytes=None, bg_ratio=None):
    """Set the limit pair then the background pair (limit first: the kernel
    halves background silently if it is >= the limit, never fails)."""
    if bytes_ is not None:
        vm_write("dirty_bytes", int(bytes_))
    elif ratio is not None:
        vm_write("dirty_ratio", int(ratio))
    if bg_bytes is not None:
        vm_write("dirty_background_bytes", int(bg_bytes))
    elif bg_ratio is not None:
        vm_write("dirty_background_ratio", int(bg_ratio))


def vm_restore(saved):
    """Restore a vm_read() snapshot, writing only what differs."""
    cur = vm_read()
    errors = []
    for b, r in (("dirty_bytes", "dirty_ratio"),
                 ("dirty_background_bytes", "dirty_background_ratio")):
        if cur[b] == saved[b] and cur[r] == saved[r]:
            continue
        try:
            if saved[b]:
                vm_write(b, saved[b])
            else:
                vm_write(r, saved[r])
        except OSError as e:
            errors.append(str(e))
    for k in ("dirty_writeback_centisecs", "dirty_expire_centisecs"):
        if cur[k] != saved[k]:
            try:
                vm_write(k, saved[k])
            except OSError as e:
                errors.append(str(e))
    return errors


# ---------------------------------------------------------------- bdi ------
def bdi_read(mm):
    d = os.path.join(BDI_CLASS, mm)
    out = {}
    for k in BDI_KNOBS:
        p = os.path.join(d, k)
        if os.path.exists(p):
            out[k] = int(read(p).strip())
    return out


def bdi_write(mm, name, value):
    log("bdi %s %s = %s" % (mm, name, value), 2)
    write(os.path.join(BDI_CLASS, mm, name), value)


def bdi_restore(mm, saved):
    """Restore bdi_read() output. Returns a list of error strings."""
    errors = []
    if not os.path.isdir(os.path.join(BDI_CLASS, mm)):
        # a filesystem's own bdi (btrfs-N) goes away with the unmount: nothing to restore
        return [] if not mm[0].isdigit() else ["bdi %s vanished" % mm]
    fine = "min_ratio_fine" in saved and "max_ratio_fine" in saved
    mn, mx = ("min_ratio_fine", "max_ratio_fine") if fine else ("min_ratio", "max_ratio")
    steps = []
    if mn in saved:
        steps.append((mn, 0))
    if mx in saved:
        steps.append((mx, saved[mx]))
    if mn in saved:
        steps.append((mn, saved[mn]))
    if "strict_limit" in saved:
        steps.append(("strict_limit", saved["strict_limit"]))
    cur = bdi_read(mm)
    if all(cur.get(k) == v for k, v in saved.items()):
        return errors
    for k, v in steps:
        try:
            if int(read(os.path.join(BDI_CLASS, mm, k)).strip()) != v or k == mn:
                bdi_write(mm, k, v)
        except OSError as e:
            errors.append(str(e))
    after = bdi_read(mm)
    if after != saved:
        errors.append("bdi %s not restored: %s != %s" % (mm, after, saved))
    return errors


# ---------------------------------------------------------------- throttle -
def throttle_read():
    """{ 'MAJ:MIN': bps } from the root blkio cgroup (missing = 0)."""
    out = {}
    try:
        for line in read(THROTTLE).splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = int(parts[1])
    except OSError:
        pass
    return out


def throttle_set(mm, bps):
    log("throttle %s write_bps = %d" % (mm, bps), 2)
    write(THROTTLE, "%s %d" % (mm, int(bps)))


# ---------------------------------------------------------------- snapshot -
def loop_list():
    """{ '/dev/loopN': backing file } for every bound loop device."""
    out = {}
    for d in glob.glob("/sys/block/loop*/loop/backing_file"):
        name = d.split("/")[3]
        out["/dev/" + name] = read(d, "").strip()
    return out


def loop_majmin():
    """{ '/dev/loopN': 'MAJ:MIN' } for every bound loop device."""
    out = {}
    for d in glob.glob("/sys/block/loop*/loop/backing_file"):
        name = d.split("/")[3]
        out["/dev/" + name] = read("/sys/block/%s/dev" % name, "").strip()
    return out


def full_snapshot():
    """Everything --quick compares before vs after a run."""
    vm = {}
    for p in sorted(glob.glob(os.path.join(VM, "dirty*"))):
        vm[os.path.basename(p)] = read(p).strip()
    bdi = {}
    for d in sorted(glob.glob(os.path.join(BDI_CLASS, "*"))):
        mm = os.path.basename(d)
        bdi[mm] = bdi_read(mm)
    return {"vm": vm, "bdi": bdi, "throttle": read(THROTTLE, ""),
            "throttle_map": throttle_read(), "loops": loop_list(), "loop_mm": loop_majmin()}


def compare_snapshots(before, after, own_prefix):
    """Return (errors, notes). Loop devices and BDIs that others created or removed
    meanwhile are notes; anything of ours left behind, or any knob changed, is an error."""
    errors, notes = [], []
    # devices someone else had bound (before or after) may legitimately change
    others = set()
    for snap in (before, after):
        for dev, f in snap["loops"].items():
            if not f.startswith(own_prefix):
                others.add(snap["loop_mm"].get(dev))
    if before["vm"] != after["vm"]:
        errors.append("vm knobs differ: %s -> %s" % (before["vm"], after["vm"]))
    for mm, k in before["bdi"].items():
        if mm in after["bdi"] and after["bdi"][mm] != k:
            msg = "bdi %s knobs differ: %s -> %s" % (mm, k, after["bdi"][mm])
            if mm in others:
                notes.append(msg + " (someone else's loop device)")
            else:
                errors.append(msg)
    for mm in set(before["bdi"]) ^ set(after["bdi"]):
        notes.append("bdi %s appeared/vanished (another user?)" % mm)
    tb, ta = before["throttle_map"], after["throttle_map"]
    for mm in set(tb) | set(ta):
        if tb.get(mm, 0) != ta.get(mm, 0):
            msg = "throttle %s: %s -> %s" % (mm, tb.get(mm, 0), ta.get(mm, 0))
            if mm in others:
                notes.append(msg + " (someone else's loop device)")
            else:
                errors.append(msg)
    for dev, f in after["loops"].items():
        if f.startswith(own_prefix):
            errors.append("our loop device %s (%s) still bound" % (dev, f))
        elif before["loops"].get(dev) != f:
            notes.append("loop %s -> %s bound by someone else meanwhile" % (dev, f))
    for dev, f in before["loops"].items():
        if after["loops"].get(dev) != f:
            notes.append("loop %s (%s) unbound meanwhile (not by us)" % (dev, f))
    return errors, notes
