# SPDX-License-Identifier: GPL-2.0-or-later
"""The testbed: loop devices on sparse files in a private dir, filesystems, throttles,
and the journal that lets every exit path (and `wbbench cleanup`) undo it all."""
import fcntl
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import knobs
from .util import run, read, log, warn, atomic_write

GLOBAL_STATE = "/run/wbbench.state"
# The one lock every live-kernel test and benchmark takes (tests/lib.sh live_lock): the dirty
# pool is global, so two at once spoil each other's figures. A test that runs wbbench holds it
# already and says so with WBTUNED_LIVE_LOCK_HELD=1.
LOCK = os.environ.get("WBTUNED_LIVE_LOCK", "/run/wbtuned-live.lock")
PRIV_PREFIX = "/var/tmp/wbbench."
SCRATCH_PREFIX = "/run/wbbench-io."   # tmpfs: files written while a run's writers are throttled


class Device:
    def __init__(self, idx, fs, bps, loop, mm, image, mnt):
        self.idx, self.fs, self.bps = idx, fs, bps
        self.loop, self.mm, self.image, self.mnt = loop, mm, image, mnt
        self.name = "d%d-%s" % (idx, fs)
        self.bdi = mm           # where dirty pages are accounted (btrfs: its own bdi)

    def to_json(self):
        return {"idx": self.idx, "fs": self.fs, "bps": self.bps, "loop": self.loop,
                "mm": self.mm, "bdi": self.bdi, "image": self.image, "mnt": self.mnt, "name": self.name}


class State:
    """Crash-recovery journal, written (atomically, fsync'd) before every change
    into <priv>/state.json and /run/wbbench.state."""

    def __init__(self, priv):
        self.d = {"pid": os.getpid(), "started": time.time(), "priv": priv,
                  "vm_saved": None, "bdi_saved": {}, "throttle_saved": {},
                  "loops": [], "mounts": [], "children": []}
        # False while a run must not write to a disk-backed file: a write there can be
        # throttled for as long as the pool takes to drain; /run (tmpfs) never is
        self.priv_copy = True

    def save(self):
        text = json.dumps(self.d, indent=1)
        if self.priv_copy:
            atomic_write(os.path.join(self.d["priv"], "state.json"), text)
        atomic_write(GLOBAL_STATE, text)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _cmdline(pid):
    try:
        return read("/proc/%d/cmdline" % pid).replace("\0", " ")
    except OSError:
        return ""


CHILD_NAMES = ("fio", "wbtuned")


def _group_members(pgids, names=CHILD_NAMES):
    """Pids whose process group is one of ours and whose command line names one of names."""
    out = set()
    if not pgids:
        return out
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            st = read("/proc/%s/stat" % e)
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        if f[0] != "Z" and int(f[2]) in pgids:
            cl = _cmdline(int(e))
            if any(n in cl for n in names):
                out.add(int(e))
    return out


def _child_groups(d, own_children=()):
    # spawned with their own session: pgid == pid
    return set(d.get("children", [])) | set(own_children)


def kill_children(d, own_children=(), names=CHILD_NAMES):
    """SIGKILL the processes recorded in state dict d (and their process groups) whose
    command line names one of names (fio, wbtuned), and wait for them. Returns error strings."""
    errors = []
    groups = _child_groups(d, own_children)
    for pid in groups:
        cl = _cmdline(pid)
        if cl and any(n in cl for n in names):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    # fio forks its job processes into the same process group: wait for all of them
    deadline = time.time() + 60
    while True:
        members = _group_members(groups, names)
        if not members or time.time() >= deadline:
            break
        for m in members:
            try:
                os.kill(m, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
    if members:
        errors.append("processes of ours still alive: %s" % sorted(members))
    return errors


def undo(d, own_children=()):
    """Undo everything recorded in state dict d. Order: drop throttles (writers stuck
    behind one die slowly; final syncs are fast), kill our children, vm knobs, per-BDI knobs, unmount, detach
    (only loops whose backing file is ours), remove files. Returns error strings."""
    errors = drop_throttles(d)
    errors += kill_children(d, own_children)
    errors += restore_knobs(d)
    errors += remove_devices(d)
    return errors


def drop_throttles(d):
    """Throttles back to their start values (first: a writer stuck behind one dies slowly)."""
    errors = []
    cur = knobs.throttle_read()
    for mm, bps in d.get("throttle_saved", {}).items():
        if cur.get(mm, 0) != bps:
            try:
                knobs.throttle_set(mm, bps)
            except OSError as e:
                errors.append(str(e))
    return errors


def restore_knobs(d):
    """vm knobs, the testbed's per-BDI knobs and those of other devices a daemon under test
    may have changed, back to their start values."""
    errors = []
    if d.get("vm_saved"):
        errors += knobs.vm_restore(d["vm_saved"])
    for mm, saved in d.get("bdi_saved", {}).items():
        errors += knobs.bdi_restore(mm, saved)
    # devices outside the testbed the daemon under test may have tuned (killed mid-run)
    for mm, saved in d.get("daemon_bdi_pre", {}).items():
        if mm not in d.get("bdi_saved", {}) and os.path.isdir("/sys/class/bdi/" + mm) \
                and knobs.bdi_read(mm) != saved:
            errors += knobs.bdi_restore(mm, saved)
    return errors


LOOP_DETACH_WAIT_TRIES = 20     # x 0.5 s


def remove_devices(d):
    """Unmount (only under the private dir), detach (only loops whose backing file is
    ours), remove the private and scratch dirs."""
    errors = []
    priv = d["priv"]
    mounted = set()
    for line in read("/proc/self/mountinfo", "").splitlines():
        mounted.add(line.split()[4].replace("\\040", " "))
    for m in reversed(d.get("mounts", [])):
        if not m.startswith(priv + "/") or m not in mounted:
            continue
        for attempt in range(60):
            p = subprocess.run(["umount", m], stderr=subprocess.PIPE, text=True)
            if p.returncode == 0:
                break
            time.sleep(0.5)
        else:
            errors.append("umount %s: %s" % (m, p.stderr.strip()))
    # loops: verify the backing file is ours before detaching
    bound = knobs.loop_list()
    for lo in d.get("loops", []):
        if bound.get(lo["loop"]) == lo["image"]:
            p = subprocess.run(["losetup", "-d", lo["loop"]], stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                errors.append("losetup -d %s: %s" % (lo["loop"], p.stderr.strip()))
    # 6b. loop devices we created ourselves (wbbench soak): remove them once unbound
    for index in d.get("created_loop_indexes", []):
        if os.path.exists("/sys/block/loop%d" % index) and \
                not os.path.exists("/sys/block/loop%d/loop/backing_file" % index):
            try:
                fd = os.open("/dev/loop-control", os.O_RDWR)
                try:
                    fcntl.ioctl(fd, 0x4C81, index)          # LOOP_CTL_REMOVE
                finally:
                    os.close(fd)
            except OSError as e:
                errors.append("removing loop%d: %s" % (index, e))
    scratch = d.get("scratch")
    if scratch and scratch.startswith(SCRATCH_PREFIX) and os.path.isdir(scratch):
        shutil.rmtree(scratch, ignore_errors=True)
    if priv.startswith(PRIV_PREFIX) and os.path.isdir(priv):
        # losetup -d on a loop something still has open only marks it for autoclear: it goes when the
        # last opener closes it (seconds on a loaded machine, after the umount's own teardown)
        for attempt in range(LOOP_DETACH_WAIT_TRIES):
            bound = knobs.loop_list()
            still = [lo["loop"] for lo in d.get("loops", []) if bound.get(lo["loop"]) == lo["image"]]
            if not still:
                break
            time.sleep(0.5)
        if still:
            errors.append("not removing %s: loops still bound: %s" % (priv, still))
        else:
            shutil.rmtree(priv, ignore_errors=True)
    return errors


def as_found(before):
    """(errors, notes): what differs from the full_snapshot() before, and our leftovers."""
    errors, notes = knobs.compare_snapshots(before, knobs.full_snapshot(), PRIV_PREFIX)
    if os.path.exists(GLOBAL_STATE):
        errors.append("%s left behind" % GLOBAL_STATE)
    for m in read("/proc/self/mountinfo", "").splitlines():
        if " " + PRIV_PREFIX in m:
            errors.append("mount left: " + m)
    for d in glob.glob(SCRATCH_PREFIX + "*"):
        errors.append("scratch dir left: " + d)
    return errors, notes


def cleanup_run(d, alive):
    """Undo a killed run without letting another live test run beside what it left. Its
    fio and wbtuned children inherited its lock: stop the daemon (it changes knobs), put
    the knobs back while fio still holds the lock, stop fio, then take the lock (waiting
    if another test got it first) for the devices. A live run (--force) holds the lock
    itself: no lock is taken then."""
    errors = kill_children(d, names=("wbtuned",))
    lockf = None
    if not alive and not _group_members(_child_groups(d), ("fio",)):
        lockf = take_lock()     # nothing of ours holds it: wait for it now
    try:
        errors += drop_throttles(d)
        errors += restore_knobs(d)
        errors += kill_children(d)
        if not alive and lockf is None:
            lockf = take_lock()
        errors += remove_devices(d)
    finally:
        if lockf:
            lockf.close()
    return errors


def cleanup_command(force=False):
    """`wbbench cleanup`: undo a killed run from /run/wbbench.state (or any
    /var/tmp/wbbench.*/state.json left behind)."""
    states = []
    if os.path.exists(GLOBAL_STATE):
        states.append(GLOBAL_STATE)
    import glob
    states += glob.glob(PRIV_PREFIX + "*/state.json")
    if not states:
        print("nothing to clean up")
        return 0
    rc = 0
    seen = set()
    for s in states:
        if s != GLOBAL_STATE and os.path.dirname(s) in seen:
            continue
        try:
            d = json.loads(read(s))
        except (OSError, ValueError) as e:
            warn("unreadable %s: %s" % (s, e))
            continue
        if d["priv"] in seen:
            continue
        seen.add(d["priv"])
        alive = _pid_alive(d["pid"]) and "wbbench" in _cmdline(d["pid"])
        if alive and not force:
            print("run %s (pid %d) is still alive; stop it first or use --force" % (d["priv"], d["pid"]))
            rc = 1
            continue
        errs = cleanup_run(d, alive)
        for e in errs:
            print("error:", e)
        rc = rc or (1 if errs else 0)
        print("cleaned up %s%s" % (d["priv"], " with errors" if errs else ""))
    if rc == 0 and os.path.exists(GLOBAL_STATE):
        os.unlink(GLOBAL_STATE)
    return rc


def take_lock():
    """The live-kernel lock, waiting for it (None if our caller holds it already)."""
    if os.environ.get("WBTUNED_LIVE_LOCK_HELD") == "1":
        return None
    lockf = open(LOCK, "w")
    try:
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("waiting for the live-kernel lock %s (another live test or benchmark runs)" % LOCK,
              file=sys.stderr, flush=True)
        fcntl.flock(lockf, fcntl.LOCK_EX)
    return lockf


class Testbed:
    """Create with Testbed(); add_device() each; close() on every exit path."""

    def __init__(self, keep_priv=False, snapshot=False):
        """snapshot: compare the whole kernel state (knobs, throttles, loop devices, mounts)
        before and after, both under the lock; close() leaves the result in self.as_found."""
        self.before = None
        self.as_found = ([], [])
        self.lockf = take_lock()
        if os.path.exists(GLOBAL_STATE):
            raise RuntimeError("%s exists: a previous run was killed; run `wbbench cleanup` first"
                               % GLOBAL_STATE)
        if snapshot:
            self.before = knobs.full_snapshot()
        self.priv = tempfile.mkdtemp(prefix=os.path.basename(PRIV_PREFIX), dir=os.path.dirname(PRIV_PREFIX))
        self.state = State(self.priv)
        self.state.d["vm_saved"] = knobs.vm_read()
        self.baseline_throttle = knobs.throttle_read()
        self.state.save()
        self.devices = []
        self.children = set()
        self.closed = False
        log("private dir %s" % self.priv)

    # -- devices ----------------------------------------------------------
    def add_device(self, fs, bps=0, size="16G"):
        idx = len(self.devices)
        image = os.path.join(self.priv, "img%d" % idx)
        with open(image, "w") as f:
            f.truncate(knobs_size(size))
        out = run(["losetup", "--direct-io=on", "-f", "--show", image]).strip()
        if knobs.loop_list().get(out) != image:
            raise RuntimeError("losetup returned %s, which is not bound to %s" % (out, image))
        name = os.path.basename(out)
        mm = read("/sys/block/%s/dev" % name).strip()
        self.state.d["loops"].append({"loop": out, "image": image, "mm": mm})
        self.state.d["bdi_saved"][mm] = knobs.bdi_read(mm)
        self.state.save()
        mkfs = {"ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
                "xfs": ["mkfs.xfs", "-q", "-f"],
                "btrfs": ["mkfs.btrfs", "-q", "-f"]}[fs]
        run(mkfs + [out])
        mnt = os.path.join(self.priv, "mnt%d" % idx)
        os.mkdir(mnt)
        self.state.d["mounts"].append(mnt)
        self.state.save()
        run(["mount", out, mnt])
        dev = Device(idx, fs, bps, out, mm, image, mnt)
        if fs == "btrfs":
            # btrfs accounts dirty pages and takes per-BDI knobs on its own
            # anonymous bdi (btrfs-N), not on the block device's
            for fsdir in glob.glob("/sys/fs/btrfs/*/devices/" + name):
                link = os.path.join(os.path.dirname(os.path.dirname(fsdir)), "bdi")
                if os.path.exists(link):
                    dev.bdi = os.path.basename(os.readlink(link))
            if dev.bdi == mm:
                warn("btrfs on %s: its bdi was not found; per-device figures will read 0" % out)
            else:
                self.state.d["bdi_saved"][dev.bdi] = knobs.bdi_read(dev.bdi)
                self.state.save()
        self.devices.append(dev)
        self.set_throttle(dev, bps)
        log("device %s: %s %s %s (bdi %s) mounted at %s, throttle %s" %
            (dev.name, out, mm, fs, dev.bdi, mnt, bps or "none"))
        return dev

    def set_throttle(self, dev, bps):
        saved = self.state.d["throttle_saved"]
        if dev.mm not in saved:
            saved[dev.mm] = self.baseline_throttle.get(dev.mm, 0)
            self.state.save()
        cur = knobs.throttle_read().get(dev.mm, 0)
        if cur != bps:
            knobs.throttle_set(dev.mm, bps)
        dev.bps = bps

    def scratch_dir(self):
        """A private dir on tmpfs (journaled, removed by undo()): writes there never wait
        in balance_dirty_pages(), so the harness and the daemon's log are not stalled by
        the very stalls a run measures."""
        if not self.state.d.get("scratch"):
            self.state.d["scratch"] = tempfile.mkdtemp(prefix=os.path.basename(SCRATCH_PREFIX),
                                                       dir=os.path.dirname(SCRATCH_PREFIX))
            self.state.save()
        return self.state.d["scratch"]

    # -- knobs ------------------------------------------------------------
    def restore_knobs(self):
        errs = knobs.vm_restore(self.state.d["vm_saved"])
        for mm, saved in self.state.d["bdi_saved"].items():
            errs += knobs.bdi_restore(mm, saved)
        return errs

    def baseline_vm(self):
        return dict(self.state.d["vm_saved"])

    # -- children ---------------------------------------------------------
    def spawn(self, cmd, **kw):
        """Popen in its own process group, recorded for cleanup. The child inherits our
        descriptor of the live-kernel lock: if wbbench is killed -9, the lock stays taken
        until its fio and wbtuned children are gone too, so no other test starts beside
        them (`wbbench cleanup` kills them, then takes the lock to restore)."""
        if self.lockf:
            kw["pass_fds"] = tuple(kw.get("pass_fds", ())) + (self.lockf.fileno(),)
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.children.add(p.pid)
        self.state.d["children"].append(p.pid)
        self.state.save()
        return p

    def reap(self, p):
        self.children.discard(p.pid)
        if p.pid in self.state.d["children"]:
            self.state.d["children"].remove(p.pid)
            self.state.save()

    # -- files ------------------------------------------------------------
    def wipe(self, dev):
        """Delete data files on a device and give the space back to the image."""
        for e in os.listdir(dev.mnt):
            if e == "lost+found":
                continue
            p = os.path.join(dev.mnt, e)
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        run(["sync", "-f", dev.mnt])
        run(["fstrim", dev.mnt], check=False)

    def close(self):
        if self.closed:
            return []
        self.closed = True
        # cleanup must not be cut short by a second Ctrl-C / SIGTERM
        import threading
        old = None
        if threading.current_thread() is threading.main_thread():
            old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            errs = undo(self.state.d, self.children)
        finally:
            if old:
                for s, h in old.items():
                    signal.signal(s, h)
        if not errs:
            try:
                os.unlink(GLOBAL_STATE)
            except FileNotFoundError:
                pass
        else:
            for e in errs:
                warn("cleanup: " + e)
            warn("state kept in %s; run `wbbench cleanup`" % GLOBAL_STATE)
        if self.before is not None:
            # before the lock goes: the next run may change everything at once
            self.as_found = as_found(self.before)
        try:
            if self.lockf:
                self.lockf.close()
        except OSError:
            pass
        return errs


def knobs_size(s):
    from .util import parse_size
    return parse_size(s)
