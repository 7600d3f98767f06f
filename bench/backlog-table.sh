#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Issue 22 item 9: what backlog_seconds trades. The daemon with backlog_seconds = 1, 2, 5 and 10 s (or
# the values given) over the cases it trades against each other: a start over a backlog (start-a), an
# application-paced writer then a burst (paced-burst-a), a device that slows (slowdown-a), a database
# beside a copy on the same disk (db-same-a) and the slow-first case; the kernel alone once beside them.
# Each value is one wbbench run per family (wbbench takes the live-kernel lock and restores every knob);
# the table, one section per family with a row per value, goes to DIR/backlog-table.md.
# Usage: bench/backlog-table.sh [-o DIR] [--repeat N] [--wbtuned BIN] [SECONDS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=bench/out/backlog-table-$(date +%Y%m%d-%H%M%S)
repeat=1
bin=${WBTUNED:-$here/../build/src/wbtuned}
values=()
while [ $# -gt 0 ]; do
        case $1 in
        -o) out=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --wbtuned) bin=$2; shift 2 ;;
        -h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "backlog-table.sh: unknown option $1" >&2; exit 2 ;;
        *) [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "backlog-table.sh: '$1' is not a number of seconds" >&2; exit 2; }
           values+=("$1"); shift ;;
        esac
done
[ ${#values[@]} -gt 0 ] || values=(1 2 5 10)
[ -x "$bin" ] || { echo "backlog-table.sh: no daemon binary at $bin (build first, or --wbtuned BIN)" >&2; exit 2; }
mkdir -p "$out"

# family: the wbbench arguments of its run
families=("transitions --sets a --variants start,slowdown,paced-burst"
          "first-seconds --sets a --variants db-same"
          "slowfast --variants slow-first,solo")
names=(transitions first-seconds slowfast)

run() {   # run TUNINGS CONFIG-OR-EMPTY LABEL
        local i args
        for i in "${!families[@]}"; do
                args=(run ${families[$i]} --repeat "$repeat" --tunings "$1" --wbtuned "$bin" -o "$out/$3/${names[$i]}")
                [ -n "$2" ] && args+=(--wbtuned-config "$2")
                echo "backlog-table.sh: $3: wbbench ${args[*]}"
                python3 "$here/wbbench" "${args[@]}" > "$out/$3-${names[$i]}.log" 2>&1 ||
                        { echo "backlog-table.sh: $3 ${names[$i]} failed, see $out/$3-${names[$i]}.log" >&2; exit 1; }
        done
}

run kernel "" kernel
for v in "${values[@]}"; do
        conf=$out/wbtuned-${v}s.conf
        printf '# written by backlog-table.sh\n[daemon]\ntick = 100ms\n\n[policy]\nmode = auto\nbacklog_seconds = %ss\n' "$v" > "$conf"
        run wbtuned "$conf" "${v}s"
done
python3 "$here/wbb/btable.py" "$out" kernel "${values[@]/%/s}" > "$out/backlog-table.md"
echo "backlog-table.sh: $out/backlog-table.md"
