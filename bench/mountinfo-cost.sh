#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's CPU per tick on a machine with many mounts (a container host has thousands): each binary
# runs `--dry-run` for SECONDS in a private mount namespace holding MOUNTS extra tmpfs mounts, the
# binaries alternating, REPEAT times; prints CPU ms per tick (utime + stime over the daemon's ticks),
# medians and [min-max]. Writes no knob (dry-run); what it mounts lives and dies with its namespace.
#
#   sudo bench/mountinfo-cost.sh [-m MOUNTS] [-s SECONDS] [-r REPEAT] [-t TICK_MS] LABEL=BINARY...
set -euo pipefail
mounts=2000 seconds=10 repeat=3 tick_ms=100
while getopts m:s:r:t: opt; do
        case $opt in
        m) mounts=$OPTARG ;;
        s) seconds=$OPTARG ;;
        r) repeat=$OPTARG ;;
        t) tick_ms=$OPTARG ;;
        *) echo "usage: mountinfo-cost.sh [-m MOUNTS] [-s SECONDS] [-r REPEAT] [-t TICK_MS] LABEL=BINARY..." >&2; exit 2 ;;
        esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || { echo "mountinfo-cost.sh: name at least one LABEL=BINARY" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "mountinfo-cost.sh: needs root (a mount namespace)" >&2; exit 77; }
for spec in "$@"; do
        [[ $spec == *=* && -x ${spec#*=} ]] || { echo "mountinfo-cost.sh: $spec: not LABEL=an executable" >&2; exit 2; }
done
ctl=$(dirname "$0")/../build/src/wbtunectl
[[ -x $ctl ]] || { echo "mountinfo-cost.sh: no $ctl (build first)" >&2; exit 2; }

if [[ ${MOUNTINFO_COST_INSIDE:-} != 1 ]]; then
        # one namespace of our own: its mounts, and the debugfs a dry-run mounts, go with it
        MOUNTINFO_COST_INSIDE=1 exec unshare --mount --propagation private "$0" -m "$mounts" -s "$seconds" \
                -r "$repeat" -t "$tick_ms" "$@"
fi

work=$(mktemp -d /tmp/wbtuned-mountinfo-cost.XXXXXX)
pid=
cleanup() {
        [[ -z $pid ]] || { kill -INT "$pid" 2>/dev/null && wait "$pid"; }
        umount -l "$work" 2>/dev/null   # the tree of mounts goes at once
        rmdir "$work"
}
trap cleanup EXIT
mount -t tmpfs wbtuned-cost "$work"
for ((i = 0; i < mounts; i++)); do
        mkdir "$work/m$i" && mount -t tmpfs -o size=4k "cost$i" "$work/m$i"
done
printf '[daemon]\ntick = %dms\nattribution = no\n[policy]\nmode = observe\n' "$tick_ms" > "$work/wbtuned.conf"
lines=$(wc -l < /proc/self/mountinfo)

# one run: appends "CPU-ms-per-tick ticks" to $work/LABEL (not in a subshell: the trap must see $pid)
run_one() {
        local label=$1 bin=$2 ticks ticks0 t0 t1 state=$work/state-$RANDOM
        mkdir -m 0700 "$state"
        "$bin" --dry-run --quiet -c "$work/wbtuned.conf" --socket "$work/ctl" --state-dir "$state" \
                < /dev/null > /dev/null 2> "$work/err" &
        pid=$!
        for ((t = 0; t < 50; t++)); do [[ -S $work/ctl ]] && break; sleep 0.1; done
        sleep 1         # past the start: the steady ticks are measured
        read -r t0 < <(awk '{print $14 + $15}' "/proc/$pid/stat")
        ticks0=$("$ctl" --socket "$work/ctl" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ticks"])')
        sleep "$seconds"
        read -r t1 < <(awk '{print $14 + $15}' "/proc/$pid/stat")
        ticks=$("$ctl" --socket "$work/ctl" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ticks"])')
        kill -INT "$pid"
        wait "$pid" || { cat "$work/err" >&2; echo "mountinfo-cost.sh: $bin failed" >&2; pid=; exit 1; }
        pid=
        rm -f "$work/ctl"
        python3 -c "import os,sys; hz=os.sysconf('SC_CLK_TCK'); t=$ticks-$ticks0; print('%.3f %d' % (($t1-$t0)*1000.0/hz/max(t,1), t))" >> "$work/$label.runs"
}

for ((r = 1; r <= repeat; r++)); do
        for spec in "$@"; do
                run_one "${spec%%=*}" "${spec#*=}"
        done
done

echo "# wbtuned CPU per tick beside $mounts extra mounts ($lines lines of mountinfo)"
echo
echo "$(date '+%Y-%m-%d %H:%M'); dry-run, $tick_ms ms tick, $seconds s per run, $repeat repeat(s), binaries alternating; medians [min-max]"
echo
echo "| binary | CPU ms/tick | ticks per run |"
echo "|---|---|---|"
for spec in "$@"; do
        label=${spec%%=*}
        # shellcheck disable=SC2046
        python3 - "$label" $(cat "$work/$label.runs") <<'EOF'
import statistics, sys
label, v = sys.argv[1], sys.argv[2:]
ms = [float(x) for x in v[0::2]]
ticks = [int(x) for x in v[1::2]]
print("| %s | %.2f [%.2f-%.2f] | %d [%d-%d] |" % (label, statistics.median(ms), min(ms), max(ms),
      statistics.median(ticks), min(ticks), max(ticks)))
EOF
done
