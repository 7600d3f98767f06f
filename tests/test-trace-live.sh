#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Live: a dd throttled on our own slow loop device must show up as paused in trace.c's tables,
# and the private trace instance must be gone afterwards. Root only; skips (77) without the means.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/live-opt-in.sh"
live_opt_in

skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root"
for t in losetup mkfs.ext4 truncate dd mount umount; do
        command -v "$t" >/dev/null || skip "no $t"
done
builddir=${top_builddir:-.}
driver=$builddir/tests/test-trace-live
[ -x "$driver" ] || driver=$(dirname "$0")/test-trace-live
[ -x "$driver" ] || skip "test-trace-live not built"
# one live-kernel test at a time (see live_test_begin in tests/lib.sh)
if [ "${WBTUNED_LIVE_LOCK_HELD:-0}" != 1 ]; then
	exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}" && flock 9 || exit 99
	export WBTUNED_LIVE_LOCK_HELD=1
fi

work=$(mktemp -d /var/tmp/wbtuned-trace-live.XXXXXX) || skip "no temp dir"
instance=wbtuned-test-$$
loop= majmin= bdi= dd_pid= driver_pid= throttle=
saved_strict= saved_ratio_file= saved_ratio=
# the trace code mounts tracefs where nobody has: put it back as found (live_test_begin does the same)
tracefs_was_mounted=0
mountpoint -q /sys/kernel/tracing && tracefs_was_mounted=1

cleanup() {
        [ -n "$dd_pid" ] && kill "$dd_pid" 2>/dev/null && wait "$dd_pid" 2>/dev/null
        [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null
        [ -n "$throttle" ] && echo "$majmin 0" > "$throttle" 2>/dev/null
        if [ -n "$bdi" ]; then
                [ -n "$saved_ratio_file" ] && echo "$saved_ratio" > "$bdi/$saved_ratio_file" 2>/dev/null
                [ -n "$saved_strict" ] && echo "$saved_strict" > "$bdi/strict_limit" 2>/dev/null
        fi
        mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"
        [ -n "$loop" ] && losetup -d "$loop"
        for d in /sys/kernel/tracing/instances/$instance /sys/kernel/debug/tracing/instances/$instance; do
                [ -d "$d" ] && rmdir "$d" 2>/dev/null
        done
        rm -rf "$work"
        [ "$tracefs_was_mounted" = 1 ] || ! mountpoint -q /sys/kernel/tracing || umount /sys/kernel/tracing
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s 512M "$work/img" || skip "cannot create a backing file"
loop=$(losetup --find --show --direct-io=on "$work/img" 2>/dev/null) || { loop=; skip "no loop device"; }
majmin=$(cat "/sys/block/${loop#/dev/}/dev")
bdi=/sys/class/bdi/$majmin
mkfs.ext4 -q "$loop" || exit 1
mkdir "$work/mnt" && mount "$loop" "$work/mnt" || exit 1

# Slow the device (cgroup v1 blk-throttle, if present) and give it a small strict dirty limit so the
# writer is paced by this device alone, whatever the global limits are.
if [ -w /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device ]; then
        throttle=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
        echo "$majmin 4000000" > "$throttle" || throttle=
fi
if [ -w "$bdi/strict_limit" ] && [ -w "$bdi/max_bytes" ]; then
        if [ -r "$bdi/max_ratio_fine" ]; then saved_ratio_file=max_ratio_fine; else saved_ratio_file=max_ratio; fi
        saved_ratio=$(cat "$bdi/$saved_ratio_file")
        saved_strict=$(cat "$bdi/strict_limit")
        echo 1 > "$bdi/strict_limit"
        echo $((16 << 20)) > "$bdi/max_bytes"
fi
[ -n "$throttle" ] || [ -n "$saved_strict" ] || skip "neither blkio throttle nor strict_limit to slow the device"

"$driver" "$instance" 6 "$work/ready" > "$work/out" 2>&1 &
driver_pid=$!
for _ in $(seq 50); do
        [ -e "$work/ready" ] && break
        kill -0 "$driver_pid" 2>/dev/null || break
        sleep 0.1
done
if [ ! -e "$work/ready" ]; then
        wait "$driver_pid"; rc=$?; driver_pid=
        cat "$work/out"
        [ "$rc" = 77 ] && skip "no tracefs"
        echo "FAIL: driver did not start"; exit 1
fi

dd if=/dev/zero of="$work/mnt/fill" bs=1M count=400 status=none &
dd_pid=$!
wait "$driver_pid"; rc=$?; driver_pid=
kill "$dd_pid" 2>/dev/null; wait "$dd_pid" 2>/dev/null

grep -E "^task pid=$dd_pid |^device bdi=$majmin |^summary|^instance" "$work/out" | head -20
fail=0
if grep -qE "^task pid=$dd_pid comm=dd bdi=$majmin pauses=[1-9]" "$work/out"; then
        echo "ok - dd ($dd_pid) seen paused on $majmin"
else
        echo "not ok - no pause of dd ($dd_pid) on $majmin"; fail=1
fi
# a single task cannot sleep more than the tick: pauses running past a tick's end are split (mono trace clock)
worst=$(sed -n 's/^task .* pause_ms_per_s=\([0-9]*\) .*/\1/p' "$work/out" | sort -n | tail -n1)
if [ "${worst:-0}" -le 1050 ]; then
        echo "ok - no task paused more than its tick (worst ${worst:-0} ms/s)"
else
        echo "not ok - a task paused ${worst} ms per second of tick"; fail=1
fi
if grep -q "^instance-removed yes" "$work/out" && [ "$rc" = 0 ]; then
        echo "ok - trace instance removed"
else
        echo "not ok - trace instance left behind or driver failed ($rc)"; fail=1
fi
exit $fail
