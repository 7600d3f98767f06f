#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's CPU with attribution on and off while writers dirty pages as fast as this machine allows.
# Usage (root): scripts/attribution-cost.sh [BUILDDIR] [RUNS] [SECONDS] [WRITERS] [LIMIT_MB]
# Prints one line per run and the medians. Touches only its own loop device (backed by /dev/shm, so
# writeback runs at memory speed) and that device's own BDI knobs, restored at exit; no global knob is changed.
set -u
builddir=${1:-.}
runs=${2:-3}
secs=${3:-20}
writers=${4:-2}
limit_mb=${5:-8}                     # strict max_bytes of our device: small, so writers are paused often
region_mb=1024                       # each writer rewrites its own 1 GiB of the device, over and over
wbtuned=$builddir/src/wbtuned
wbtunectl=$builddir/src/wbtunectl
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
[ -x "$wbtuned" ] && [ -x "$wbtunectl" ] || { echo "no $wbtuned or $wbtunectl: build first" >&2; exit 1; }
command -v python3 > /dev/null || { echo "needs python3" >&2; exit 77; }

# one live-kernel run at a time, shared with the tests and wbbench (tests/lib.sh live_lock)
if [ "${WBTUNED_LIVE_LOCK_HELD:-0}" != 1 ]; then
        exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}" && flock 9 || { echo "cannot take the live-kernel lock" >&2; exit 1; }
        export WBTUNED_LIVE_LOCK_HELD=1
fi
work=$(mktemp -d /var/tmp/wbtuned-cost.XXXXXX) || exit 1
shm=$(mktemp -d /dev/shm/wbtuned-cost.XXXXXX) || exit 1
loop= daemon= pgids=
stop_writers() {
        local g
        for g in $pgids; do kill -- "-$g" 2>/dev/null; done
        for g in $pgids; do while kill -0 -- "-$g" 2>/dev/null; do sleep 0.1; done; done
        pgids=
}
bdi= saved_strict= saved_ratio= ratio_file=max_ratio
cleanup() {
        stop_writers
        [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
        # a loop device's BDI outlives the detach: put its knobs back first
        [ -n "$saved_ratio" ] && echo "$saved_ratio" > "$bdi/$ratio_file"
        [ -n "$saved_strict" ] && echo "$saved_strict" > "$bdi/strict_limit"
        [ -n "$loop" ] && { sync; losetup -d "$loop"; }
        rm -rf "$work" "$shm"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s $((writers * region_mb))M "$shm/img" || exit 1
loop=$(losetup --find --show "$shm/img") || exit 1
bdi=/sys/class/bdi/$(cat "/sys/block/${loop#/dev/}/dev")
# a strict limit on OUR device: writers are paced by balance_dirty_pages, the case that makes trace events
if [ -w "$bdi/strict_limit" ] && [ -w "$bdi/max_bytes" ]; then
        [ -r "$bdi/max_ratio_fine" ] && ratio_file=max_ratio_fine
        saved_ratio=$(cat "$bdi/$ratio_file") && saved_strict=$(cat "$bdi/strict_limit") || exit 1
        echo 1 > "$bdi/strict_limit" && echo $((limit_mb << 20)) > "$bdi/max_bytes" || exit 1
fi
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
dirtied_pages() { awk '$1 == "nr_dirtied" { print $2 }' /proc/vmstat; }
status_get() {   # one field of the daemon's status: a Python expression on j["attribution"]
        "$wbtunectl" --socket "$work/ctl" status --json |
                python3 -c 'import json, sys; a = json.load(sys.stdin)["attribution"]; print('"$1"')'
}
trace_events() { status_get 'a["counters"]["events"]'; }   # events the daemon's trace has parsed so far

run_one() {   # attribution=yes|no -> "cpu_percent dirty_MBps events_per_s", or fails if a writer died
        local i c0 c1 d0 d1 e0 e1 t0 t1
        printf '[daemon]\ntick = 1s\nattribution = %s\n[policy]\nmode = observe\n' "$1" > "$work/conf"
        "$wbtuned" -c "$work/conf" --socket "$work/ctl" --dry-run --quiet > /dev/null 2> "$work/daemon.err" &
        daemon=$!
        for ((i = 0; i < 50; i++)); do [ -S "$work/ctl" ] && break; sleep 0.1; done
        [ -S "$work/ctl" ] || { cat "$work/daemon.err" >&2; return 1; }
        if [ "$1" = yes ] && [ "$(status_get 'a["enabled"]')" != True ]; then
                echo "attribution did not start: $(status_get 'a.get("reason")')" >&2
                return 1
        fi
        for ((i = 0; i < writers; i++)); do
                # its own process group, so stop_writers ends the loop and the dd in it
                setsid bash -c "while :; do dd if=/dev/zero of='$loop' bs=1M count=$region_mb seek=$((i * region_mb)) \
                        conv=notrunc status=none 2>>'$work/dd.err' || exit 1; done" &
                pgids+=" $!"
        done
        sleep 2      # past the first fill of the page cache
        c0=$(cpu_ticks "$daemon"); d0=$(dirtied_pages); e0=$(trace_events); t0=$(date +%s.%N)
        sleep "$secs"
        c1=$(cpu_ticks "$daemon"); d1=$(dirtied_pages); e1=$(trace_events); t1=$(date +%s.%N)
        for g in $pgids; do
                kill -0 -- "-$g" 2>/dev/null || { echo "a writer stopped early: $(tail -n1 "$work/dd.err")" >&2; return 1; }
        done
        stop_writers
        kill "$daemon"; wait "$daemon"; daemon=
        rm -f "$work/ctl"
        awk -v c=$((c1 - c0)) -v hz="$hz" -v d=$((d1 - d0)) -v e=$((e1 - e0)) -v t0="$t0" -v t1="$t1" \
                'BEGIN { t = t1 - t0; printf "%.3f %.0f %.0f\n", 100 * c / hz / t, d * 4096 / 1e6 / t, e / t }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "$writers writers rewriting ${region_mb} MiB each on $loop (backed by /dev/shm, strict ${limit_mb}M), ${secs} s per run, tick 1 s"
: > "$work/on"; : > "$work/off"
for i in $(seq "$runs"); do
        for mode in yes no; do
                # not in $(...): daemon and pgids must stay visible to the cleanup trap
                run_one "$mode" > "$work/result" || exit 1
                r=$(cat "$work/result")
                set -- $r
                echo "run $i attribution=$mode: daemon cpu $1 % of one core, dirtying $2 MB/s, $3 trace events/s"
                echo "$r" >> "$work/$([ "$mode" = yes ] && echo on || echo off)"
        done
done
for f in on off; do
        echo "median attribution=$([ $f = on ] && echo yes || echo no): cpu $(cut -d' ' -f1 "$work/$f" | median) %," \
                "dirtying $(cut -d' ' -f2 "$work/$f" | median) MB/s, $(cut -d' ' -f3 "$work/$f" | median) events/s"
done
