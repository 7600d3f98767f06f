#!/bin/bash
# The daemon's CPU with attribution on and off while dd dirties at full speed on our own loop device.
# Usage (root): scripts/attribution-cost.sh [BUILDDIR] [RUNS] [SECONDS]; prints one line per run and the medians.
set -u
builddir=${1:-.}
runs=${2:-3}
secs=${3:-20}
wbtuned=$builddir/src/wbtuned
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
[ -x "$wbtuned" ] || { echo "no $wbtuned" >&2; exit 1; }

work=$(mktemp -d /var/tmp/wbtuned-cost.XXXXXX)
loop= daemon=
cleanup() {
        [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
        [ -n "$loop" ] && losetup -d "$loop"
        rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s 16G "$work/img"
loop=$(losetup --find --show "$work/img") || exit 1
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

run_one() {   # attribution=yes|no -> "cpu_percent dirty_MBps"
        printf '[daemon]\ntick = 1s\nattribution = %s\n[policy]\nmode = observe\n' "$1" > "$work/conf"
        "$wbtuned" -c "$work/conf" --socket "$work/ctl" --dry-run --quiet > /dev/null 2> "$work/err" &
        daemon=$!
        sleep 2
        # the loop block device itself: its page cache is throttled per BDI like a file's, and nothing fills up
        dd if=/dev/zero of="$loop" bs=1M count=16000 status=none 2>/dev/null &
        local dd=$! t0 c0 c1 w0 w1
        sleep 1      # let dd reach its pace before measuring
        c0=$(cpu_ticks "$daemon"); w0=$(awk '/^wchar/ { print $2 }' "/proc/$dd/io"); t0=$(date +%s.%N)
        sleep "$secs"
        c1=$(cpu_ticks "$daemon"); w1=$(awk '/^wchar/ { print $2 }' "/proc/$dd/io"); t1=$(date +%s.%N)
        kill "$dd"; wait "$dd" 2>/dev/null
        kill "$daemon"; wait "$daemon"; daemon=
        sync
        awk -v c=$((c1 - c0)) -v hz="$hz" -v w=$((w1 - w0)) -v t0="$t0" -v t1="$t1" \
                'BEGIN { printf "%.3f %.0f\n", 100 * c / hz / (t1 - t0), w / 1e6 / (t1 - t0) }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$work/on"; : > "$work/off"
for i in $(seq "$runs"); do
        for mode in yes no; do
                r=$(run_one "$mode")
                echo "run $i attribution=$mode: cpu ${r% *} % of one core, dd dirtying ${r#* } MB/s"
                echo "$r" >> "$work/$([ "$mode" = yes ] && echo on || echo off)"
        done
done
echo "median attribution=yes: cpu $(cut -d' ' -f1 "$work/on" | median) %, dirtying $(cut -d' ' -f2 "$work/on" | median) MB/s"
echo "median attribution=no:  cpu $(cut -d' ' -f1 "$work/off" | median) %, dirtying $(cut -d' ' -f2 "$work/off" | median) MB/s"
