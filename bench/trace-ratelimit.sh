#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel's per-writeback-context dirty_ratelimit through slow-first, kernel alone then wbtuned:
# records the writeback:bdi_dirty_ratelimit tracepoint (emitted each 200 ms while a wb's writer is
# throttled) during one repeat, and prints the fast device's figures in KB/s with the gaps between
# runs marked. Root; tracefs state (the event, tracing_on, buffer size) restored on every exit.
# Usage: bench/trace-ratelimit.sh OUTDIR WBTUNED_BINARY
set -u
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
[ $# -eq 2 ] || { echo "usage: $0 OUTDIR WBTUNED_BINARY" >&2; exit 2; }
out=$1 bin=$2
[ -x "$bin" ] || { echo "$bin: not an executable" >&2; exit 2; }
trace=
for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
        [ -e $t/events/writeback/bdi_dirty_ratelimit/enable ] && { trace=$t; break; }
done
[ -n "$trace" ] || { echo "no writeback:bdi_dirty_ratelimit tracepoint (tracefs not mounted?)" >&2; exit 77; }
event=$trace/events/writeback/bdi_dirty_ratelimit
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" || exit 1
# one live-kernel run at a time, shared with the tests and wbbench (tests/lib.sh live_lock)
if [ "${WBTUNED_LIVE_LOCK_HELD:-0}" != 1 ]; then
        exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}" && flock 9 || { echo "cannot take the live-kernel lock" >&2; exit 1; }
        export WBTUNED_LIVE_LOCK_HELD=1
fi
saved_on=$(cat $trace/tracing_on) saved_kb=$(awk '{print $1}' $trace/buffer_size_kb) saved_en=$(cat $event/enable)
restore() {
        echo "$saved_en" > $event/enable
        echo "$saved_on" > $trace/tracing_on
        echo "$saved_kb" > $trace/buffer_size_kb
}
trap restore EXIT
echo 16384 > $trace/buffer_size_kb
echo > $trace/trace
echo 1 > $event/enable
echo 1 > $trace/tracing_on
"$here/wbbench" run slowfast --variants slow-first --tunings kernel,wbtuned --repeat 1 --wbtuned "$bin" \
        -o "$out/run" > "$out/run.log" 2>&1 || { echo "wbbench failed: $out/run.log" >&2; exit 1; }
echo 0 > $trace/tracing_on
cp $trace/trace "$out/trace.txt"
# the fast device is the testbed's second one (d1)
fast=$(sed -n 's/.*device d1-[a-z0-9]*: [^ ]* \([0-9]*:[0-9]*\) .*/\1/p' "$out/run.log" | head -1)
[ -n "$fast" ] || { echo "no fast device in $out/run.log" >&2; exit 1; }
echo "# bdi $fast, KB/s: time write_bw avg_write_bw dirty_rate dirty_ratelimit task_ratelimit balanced_dirty_ratelimit"
grep "bdi $fast:" "$out/trace.txt" |
        sed -E "s/.* ([0-9]+\.[0-9]+): bdi_dirty_ratelimit: bdi $fast: /\1 /" |
        awk 'NR > 1 && $1 - prev > 3 { print "# --- idle " int($1 - prev) " s (the next run)" }
             { prev = $1; printf "%.1f", $1; for (i = 2; i <= 7; i++) { split($i, kv, "="); printf " %s", kv[2] } print "" }'
