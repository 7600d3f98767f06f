#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the metrics cost the daemon, against the tick they describe: daemons on fake trees of N devices
# (no live kernel), each asked for `wbtunectl metrics` RUNS times. Prints per N the text's size, the
# median wall time of one request, the daemon's CPU time per request, and the median tick's work.
# Usage: scripts/metrics-cost.sh [BUILDDIR] [RUNS] [N...]      (defaults: . 21 10 100 1000 4000)
set -u
builddir=${1:-.}
runs=${2:-21}
shift $(( $# >= 2 ? 2 : $# ))
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10 100 1000 4000)
wbtuned=$builddir/src/wbtuned
wbtunectl=$builddir/src/wbtunectl
[[ -x $wbtuned && -x $wbtunectl ]] || { echo "no $wbtuned or $wbtunectl: build first" >&2; exit 1; }
command -v python3 > /dev/null || { echo "needs python3" >&2; exit 77; }

work=$(mktemp -d /dev/shm/wbtuned-metrics-cost.XXXXXX) || exit 1
daemon=
cleanup() {
        [[ -n $daemon ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
        rm -rf "$work"
}
trap cleanup EXIT INT TERM

# cpu_ticks PID: utime + stime of the process, in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

printf '%8s %12s %16s %18s %16s\n' devices text_bytes request_ms_med daemon_cpu_ms_req tick_work_ms_med
for n in "${sizes[@]}"; do
        root=$work/root-$n
        python3 "$(dirname "$0")/../tests/make_fake_tree.py" "$root" "$n"
        printf '[daemon]\ntick = 1s\nattribution = no\n' > "$work/wbtuned.conf"
        "$wbtuned" --root "$root" --socket "$work/ctl" -c "$work/wbtuned.conf" --dry-run --quiet \
                > /dev/null 2> "$work/daemon.err" < /dev/null &
        daemon=$!
        for ((i = 0; i < 300; i++)); do [[ -S $work/ctl ]] && break; sleep 0.1; done
        [[ -S $work/ctl ]] || { cat "$work/daemon.err"; echo "the daemon did not start on $n devices" >&2; exit 1; }
        sleep 2
        ms=()
        cpu0=$(cpu_ticks "$daemon")
        for ((r = 0; r < runs; r++)); do
                t0=$(date +%s%N)
                "$wbtunectl" --socket "$work/ctl" --timeout 60000 metrics > "$work/m.prom" || { echo "metrics failed" >&2; exit 1; }
                ms+=($(( ($(date +%s%N) - t0) / 1000 )))
        done
        cpu1=$(cpu_ticks "$daemon")
        ticks=()
        for ((r = 0; r < 5; r++)); do
                ticks+=("$("$wbtunectl" --socket "$work/ctl" status --json |
                        python3 -c 'import json, sys; print(json.load(sys.stdin)["last_tick_work_usec"])')")
                sleep 1
        done
        median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
        # the daemon's CPU includes its ticks during the requests: a tick per second, small next to the requests
        awk -v n="$n" -v bytes="$(stat -c %s "$work/m.prom")" -v req_us="$(median "${ms[@]}")" \
            -v cpu="$((cpu1 - cpu0))" -v hz="$hz" -v runs="$runs" -v tick_us="$(median "${ticks[@]}")" \
            'BEGIN { printf "%8d %12d %16.1f %18.1f %16.2f\n", n, bytes, req_us / 1000, cpu * 1000 / hz / runs, tick_us / 1000 }'
        kill "$daemon"
        wait "$daemon" 2>/dev/null
        daemon=
        rm -rf "$root" "$work/ctl"
done
