#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/wbb/btable.py, the backlog_seconds table: from a kernel run and two daemon runs of a family's
# report, one section per table with a row per value; the kernel's rows from the kernel run only, the
# daemon's from each value's run, tables without a tuning column and the knob-writes section left out.
# No live kernel: the reports are made up here.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v python3 > /dev/null || skip "no python3"
make_tmpdir tmp
report() {   # report DIR KERNEL-MB/S WBTUNED-MB/S
        mkdir -p "$1"
        cat > "$1/transitions.md" <<MD
# wbbench: transitions

## Summary

| case | tuning | innocent MB/s |
|---|---|---|
| start-a | kernel | $2 |
| start-a | wbtuned | $3 |

## Knob writes by the daemon

| case | tuning | writes |
|---|---|---|
| start-a | wbtuned | 99 |

## Plots

| no | tuning column | here |
|---|---|---|
MD
}
report "$tmp/kernel/transitions" 100 1
report "$tmp/2s/transitions" 2 200
report "$tmp/5s/transitions" 3 250
python3 "$top_srcdir/bench/wbb/btable.py" "$tmp" kernel 2s 5s > "$tmp/out.md" || fail "btable.py exited $?"
grep -qx '## transitions: Summary' "$tmp/out.md" || fail "no Summary section: $(cat "$tmp/out.md")"
grep -qx '| – | start-a | kernel | 100 |' "$tmp/out.md" || fail "the kernel's row is not the kernel run's"
grep -qx '| 2s | start-a | wbtuned | 200 |' "$tmp/out.md" || fail "no 2s row"
grep -qx '| 5s | start-a | wbtuned | 250 |' "$tmp/out.md" || fail "no 5s row"
[ "$(grep -c 'start-a' "$tmp/out.md")" = 3 ] || fail "rows other than one per run: $(cat "$tmp/out.md")"
! grep -q 'Knob writes\|99' "$tmp/out.md" || fail "the knob-writes section is in the table"
# the kernel run's row first, then the values' in the order given
line() { grep -n -x "$1" "$tmp/out.md" | cut -d: -f1; }
[ "$(line '| – | start-a | kernel | 100 |')" -lt "$(line '| 2s | start-a | wbtuned | 200 |')" ] &&
        [ "$(line '| 2s | start-a | wbtuned | 200 |')" -lt "$(line '| 5s | start-a | wbtuned | 250 |')" ] ||
        fail "rows out of order: $(cat "$tmp/out.md")"
python3 "$top_srcdir/bench/wbb/btable.py" "$tmp" > /dev/null 2>&1 && fail "no labels: exit 0"
ok "btable: one row per run, the kernel's from the kernel run"
