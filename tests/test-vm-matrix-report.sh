#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# scripts/vm-matrix-report.py's throughput verdicts, from a guest's raw files made up here (no VM):
# the memcg writers judged by the median of back-to-back pairs, so that a guest whose speed drifts
# between the pairs is not read as the daemon's doing while a daemon slower in every pair is; the
# failing device's fast writer judged by its rate beside it, its share of its solo run only shown.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v python3 > /dev/null || skip "no python3"
make_tmpdir tmp
d=$tmp/out/6.12
mkdir -p "$d"
dd_out() {   # dd_out FILE MB/S: dd's summary for 1000 MB written at MB/S
        printf '1000000000 bytes (1.0 GB, 954 MiB) copied, %s s, %s MB/s\n' \
                "$(awk -v r="$2" 'BEGIN { printf "%.4f", 1000 / r }')" "$2" > "$1"
}
# kernel/daemon pairs: the guest speeds up from 40 to 100 MB/s (the report says MiB); memcg: the daemon at 0.95 of each
# pair (a phase comparison would read 50 against a median of 70); memcghigh: at 0.8 of each pair
i=1
for k in 40 70 100; do
        dd_out "$d/memcg-kernel-$i.txt" "$k"
        dd_out "$d/memcg-daemon-$i.txt" "$(awk -v k="$k" 'BEGIN { print k * 0.95 }')"
        dd_out "$d/memcghigh-kernel-$i.txt" "$k"
        dd_out "$d/memcghigh-daemon-$i.txt" "$(awk -v k="$k" 'BEGIN { print k * 0.8 }')"
        i=$((i + 1))
done
# the failing device: the daemon's runs keep a larger share of their solo rate beside it (0.88 of 50
# against 0.8 of 100) but are slower: judged by the rates (44 against 80), the share only shown
for phase in kernel daemon; do
        for n in 1 2; do
                o=$d/failing-$phase-$n
                mkdir -p "$o"
                if [[ $phase == kernel ]]; then solo=100 bes=80; else solo=50 bes=44; fi
                dd_out "$o/fast-solo.txt" "$solo"
                dd_out "$o/fast-failing.txt" "$bes"
                echo done > "$o/result"
        done
done
python3 "$top_srcdir/scripts/vm-matrix-report.py" "$tmp/out" 6.12 > "$tmp/matrix.md" ||
        fail "vm-matrix-report.py exited $?: $(cat "$tmp/matrix.md")"
row() { grep -F "| $1 |" "$tmp/matrix.md" | awk -F' [|] ' '{ print $2 }' | sed 's/ |$//'; }

got=$(row "MemoryMax= writer: with / alone, each pair; median (must be >= 0.9)")
[[ $got == "0.95, 0.95, 0.95; 0.950 ok" ]] || fail "MemoryMax= pairs under drift: '$got'"
got=$(row "MemoryHigh= writer: with / alone, each pair; median (must be >= 0.9)")
[[ $got == "0.80, 0.80, 0.80; 0.800 WORSE" ]] || fail "MemoryHigh= slower in every pair: '$got'"
got=$(row "MemoryMax= writer, kernel alone; with the daemon (pairs), /s")
[[ $got == "38.1M, 66.8M, 95.4M; 36.2M, 63.4M, 90.6M" ]] || fail "MemoryMax= rates: '$got'"
got=$(row "MemoryMax= writer: the kernel alone's slowest run / its fastest")
[[ $got == "0.40" ]] || fail "the kernel alone's spread: '$got'"
got=$(row "failing device: fast writer beside it as a share of its solo run, daemon; kernel alone (medians)")
[[ $got == "0.88; 0.80" ]] || fail "failing device share: '$got'"
got=$(row "failing device: fast writer beside it, median daemon / kernel alone (must be >= 0.9)")
[[ $got == "0.550 WORSE" ]] || fail "failing device verdict: '$got'"

# a pair with a failed run gives no verdict, not one from the other pairs
echo "dd: error writing '/mnt/fast/memcg': No space left on device" > "$d/memcg-daemon-2.txt"
python3 "$top_srcdir/scripts/vm-matrix-report.py" "$tmp/out" 6.12 > "$tmp/matrix.md" || fail "exit $? with a failed run"
got=$(row "MemoryMax= writer: with / alone, each pair; median (must be >= 0.9)")
[[ $got == "? (a run failed)" ]] || fail "a failed run in a pair: '$got'"

# under TCG (qemu without kvm) a verdict from fewer than nine runs a side says so; nine are plain
echo qemu > "$d/virt"
python3 "$top_srcdir/scripts/vm-matrix-report.py" "$tmp/out" 6.12 > "$tmp/matrix.md" || fail "exit $? under TCG"
got=$(row "MemoryHigh= writer: with / alone, each pair; median (must be >= 0.9)")
[[ $got == "0.80, 0.80, 0.80; 0.800 WORSE (3 a side: under TCG 9 decide a 10 % line)" ]] ||
        fail "three pairs under TCG: '$got'"
got=$(row "failing device: fast writer beside it, median daemon / kernel alone (must be >= 0.9)")
[[ $got == "0.550 WORSE (2 a side: under TCG 9 decide a 10 % line)" ]] || fail "two failing runs under TCG: '$got'"
for i in 4 5 6 7 8 9; do
        dd_out "$d/memcghigh-kernel-$i.txt" 100
        dd_out "$d/memcghigh-daemon-$i.txt" 80
done
python3 "$top_srcdir/scripts/vm-matrix-report.py" "$tmp/out" 6.12 > "$tmp/matrix.md" || fail "exit $? with nine pairs"
got=$(row "MemoryHigh= writer: with / alone, each pair; median (must be >= 0.9)")
[[ $got == "0.80, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80; 0.800 WORSE" ]] || fail "nine pairs under TCG: '$got'"
ok "vm-matrix-report: paired memcg verdicts, the failing device judged by its rate, few runs under TCG told"
