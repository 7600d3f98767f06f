# SPDX-License-Identifier: GPL-2.0-or-later
"""Scenarios from the kernel threads in /work/shared/seeds, scaled to this VM.

A scenario declares the devices its testbed needs and yields cases. A case is one
fio run: the writer groups, the scenario's base vm knobs (the admin's pin that
tunings then modify), and whether data files are wiped before it."""
from .fio import Group
from .util import parse_size, fmt_size

M = 1 << 20


class DevSpec:
    def __init__(self, fs, bps, role, size="16G"):
        self.fs, self.bps, self.role, self.size = fs, bps, role, size


class Case:
    def __init__(self, name, devices, groups, base=None, fresh=True, phases=None, prep=None):
        self.name = name            # unique within the scenario, used in file names
        self.devices = devices      # Device objects the case uses
        self.groups = groups        # [fio.Group]
        self.base = base            # {"dirty_bytes":..,"dirty_background_bytes":..} or None
        self.fresh = fresh          # wipe data files before each run
        self.phases = phases or []  # [(seconds from start, label)] for the plots
        self.prep = prep            # [fio.Group] laid out once (create_only) before runs

    @property
    def duration(self):
        return max(float(g.startdelay) + float(g.runtime) for g in self.groups)


def pin(dirty):
    """The scenario's dirty_bytes (background half of it); 0 = the kernel's ratios as found."""
    if not dirty:
        return None
    return {"dirty_bytes": dirty, "dirty_background_bytes": dirty // 2}


def _jobsize(bps, seconds, slack, njobs):
    rate = bps if bps else 400 * M          # unthrottled: wraps around if faster
    total = rate * seconds * 1.3 + slack
    return "%dM" % max(16, int(total / njobs / M) + 1)


class Thresh:
    """Wu's write_bw matrix: dirty_bytes x writers x filesystem, one device."""
    name = "thresh"

    def __init__(self, o):
        self.fs = o.fs or ["ext4", "xfs", "btrfs"]
        self.thresholds = [parse_size(t) for t in (o.thresholds or ["1M", "10M", "100M", "1000M"])]
        self.writers = [int(w) for w in (o.writers or [1, 10, 100])]
        self.runtime = o.runtime or 10
        self.bps = 0 if o.unthrottled else o.fast_bps
        self.bs = getattr(o, "bs", None) or "1M"

    def devspecs(self):
        return [DevSpec(fs, self.bps, "dev-" + fs) for fs in self.fs]

    def cases(self, devs):
        for dev in devs:
            for t in self.thresholds:
                for n in self.writers:
                    g = Group("%ddd" % n, dev, self.runtime, numjobs=n, bs=self.bs,
                              size=_jobsize(dev.bps, self.runtime, t, n))
                    bs = "" if self.bs == "1M" else "-bs" + self.bs
                    yield Case("thresh=%s-%s-%ddd%s" % (fmt_size(t).replace(".0", ""), dev.fs, n, bs),
                               [dev], [g], base=pin(t))


class SlowFast:
    """One slow (8 MB/s) and one fast device; 'slow-first' is the USB-stick stall
    (LWN 572911): slow alone for a phase, then both. 'solo' is the fast writer alone,
    the reference for 'x % of solo'."""
    name = "slowfast"

    def __init__(self, o):
        fs = o.fs or ["ext4"]
        self.fs_slow, self.fs_fast = fs[0], fs[1] if len(fs) > 1 else fs[0]
        self.variants = o.variants or ["together", "slow-first", "solo"]
        self.phase = o.phase or 20
        self.slow_bps, self.fast_bps = o.slow_bps, (0 if o.unthrottled else o.fast_bps)
        self.dirty = parse_size(o.dirty or "400M")

    def devspecs(self):
        return [DevSpec(self.fs_slow, self.slow_bps, "slow"),
                DevSpec(self.fs_fast, self.fast_bps, "fast")]

    def cases(self, devs):
        slow, fast = devs
        p = self.phase
        for v in self.variants:
            if v == "together":
                groups = [Group("slow", slow, p, size=_jobsize(slow.bps, p, self.dirty, 1)),
                          Group("fast", fast, p, size=_jobsize(fast.bps, p, self.dirty, 1))]
                phases = []
            elif v == "slow-first":
                groups = [Group("slow", slow, 2 * p, size=_jobsize(slow.bps, 2 * p, self.dirty, 1)),
                          Group("fast", fast, p, startdelay=p,
                                size=_jobsize(fast.bps, p, self.dirty, 1))]
                phases = [(p, "fast starts")]
            elif v == "solo":
                groups = [Group("fast", fast, p, size=_jobsize(fast.bps, p, self.dirty, 1))]
                phases = []
            else:
                raise ValueError("slowfast variant %r (together, slow-first, solo)" % v)
            yield Case(v, [slow, fast] if v != "solo" else [fast], groups,
                       base=pin(self.dirty), phases=phases)


class Multi:
    """'randrw': four devices, 8 mmap randrw jobs each on two shared files (Yan's
    fio job, seeds/001, scaled from 1500M files/300 s); 'mmapseq': two devices, one
    mmap sequential writer each (Axboe's mmap write test, seeds/004)."""
    name = "multi"

    def __init__(self, o):
        self.fs = (o.fs or ["ext4"])[0]
        self.variants = o.variants or ["randrw", "mmapseq"]
        self.runtime = o.runtime or 30
        self.bps = 0 if o.unthrottled else o.fast_bps
        self.filesize = o.filesize or "256M"
        # Yan's box had 2 GB of RAM, so its 2 x 1500M files per disk were far beyond
        # the dirty limit; pin a limit well below our (smaller) file set
        self.dirty = parse_size(o.dirty or "100M")

    def devspecs(self):
        return [DevSpec(self.fs, self.bps, "m%d" % i) for i in range(4)]

    def cases(self, devs):
        T = self.runtime
        for v in self.variants:
            if v == "randrw":
                groups, prep = [], []
                for d in devs:
                    extra = {"file_service_type": "random:36", "overwrite": 1,
                             "pre_read": 1, "filename": "f1:f2"}
                    groups.append(Group("randrw-%s" % d.name, d, T, rw="randrw",
                                        ioengine="mmap", bs="4k", numjobs=8,
                                        size=self.filesize, extra=extra))
                    prep.append(Group("prep-%s" % d.name, d, 1, rw="write", bs="1M",
                                      size=self.filesize,
                                      extra={"filename": "f1:f2", "overwrite": 1,
                                             "create_only": 1, "time_based": 0}))
                yield Case(v, list(devs), groups, base=pin(self.dirty), fresh=False, prep=prep)
            elif v == "mmapseq":
                groups = [Group("mmapseq-%s" % d.name, d, T, rw="write", ioengine="mmap",
                                bs="4k", size=_jobsize(d.bps, T, 0, 1))
                          for d in devs[:2]]
                yield Case(v, list(devs[:2]), groups, base=pin(self.dirty))
            else:
                raise ValueError("multi variant %r (randrw, mmapseq)" % v)


class Overwrite:
    """Single-threaded sequential overwrite of files picked at random from a set
    (Sonny Rao, seeds/003: 20 GB in 512 MB files; here 32 x 64M by default)."""
    name = "overwrite"

    def __init__(self, o):
        self.fs = o.fs or ["ext4"]
        self.runtime = o.runtime or 20
        self.bps = 0 if o.unthrottled else o.fast_bps
        self.nfiles = o.nfiles or 32
        self.filesize = o.filesize or "64M"
        # Sonny's 20 GB data set on a 1 GB machine: the set is far beyond the limit
        self.dirty = parse_size(o.dirty or "100M")

    def devspecs(self):
        return [DevSpec(fs, self.bps, "ow-" + fs) for fs in self.fs]

    def cases(self, devs):
        per = max(1, parse_size(self.filesize) // M)
        for d in devs:
            common = {"nrfiles": self.nfiles, "filesize": self.filesize, "overwrite": 1}
            g = Group("overwrite", d, self.runtime, size="%dM" % (per * self.nfiles),
                      extra=dict(common, file_service_type="random:%d" % per))
            prep = Group("overwrite", d, 1, size="%dM" % (per * self.nfiles),
                         extra=dict(common, create_only=1, time_based=0))
            yield Case("overwrite-%s" % d.fs, [d], [g], base=pin(self.dirty), fresh=False, prep=[prep])


SCENARIOS = {c.name: c for c in (Thresh, SlowFast, Multi, Overwrite)}
