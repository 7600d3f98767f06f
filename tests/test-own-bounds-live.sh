#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Live: a max an admin set below 100 % (as FUSE's 1 %) keeps its bytes while the daemon's lower limit is
# in force (the kernel stores it as a ratio of the limit: 1 % of a 400M pin would be 4M), and is a ratio
# of 1 % again after the stop. A loop device of our own stands for the mount.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in
require_binaries

[[ $(id -u) -eq 0 ]] || skip "needs root (writes kernel knobs)"
command -v losetup >/dev/null || skip "no losetup"
live_test_begin

vm=/proc/sys/vm
vm_knobs=(dirty_bytes dirty_ratio dirty_background_bytes dirty_background_ratio)
declare -A before
for k in "${vm_knobs[@]}"; do before[$k]=$(<"$vm/$k"); done
[[ ${before[dirty_bytes]} == 0 ]] || skip "vm.dirty_bytes is set (${before[dirty_bytes]}): the test needs the kernel's ratio mode"
# safety net only: the daemon restores them itself, and the test fails if it does not
restore_vm() {
        [[ $(<"$vm/dirty_bytes") == 0 ]] || echo "${before[dirty_ratio]}" > "$vm/dirty_ratio"
        [[ $(<"$vm/dirty_background_bytes") == 0 ]] || echo "${before[dirty_background_ratio]}" > "$vm/dirty_background_ratio"
}
push_cleanup restore_vm

make_tmpdir tmp
truncate -s 64M "$tmp/img" || fail "truncate"
loop=$(losetup --find --show "$tmp/img" 2>/dev/null) || skip "no loop device"
push_cleanup "losetup -d '$loop'"
bdi=$(<"/sys/block/${loop#/dev/}/dev")
sys=/sys/class/bdi/$bdi
[[ -e $sys/max_ratio_fine && -e $sys/max_bytes ]] || skip "$sys has no max_ratio_fine/max_bytes (kernel < 6.2)"
ratio_before=$(<"$sys/max_ratio_fine")
push_cleanup "echo 0 > '$sys/strict_limit'; echo $ratio_before > '$sys/max_ratio_fine'"

# the admin's bound: 1 %, what the kernel gives a FUSE mount
echo 1 > "$sys/max_ratio" || fail "cannot set $sys/max_ratio"
own=$(<"$sys/max_bytes")
log "$loop ($bdi): max_ratio 1, $own bytes of the kernel's own limit"

start_live_daemon $'[daemon]\ntick = 200ms\nattribution = no\n[policy]\nmode = auto\ndirty_bytes = 400M\n'
pinned() { [[ $(<"$vm/dirty_bytes") != 0 ]]; }
wait_until 10 pinned || fail "the daemon did not write its 400M pin"
# within a tenth of the bytes it had (the kernel's own limit moves with free memory), not 1 % of 400M
kept() {
        local now
        now=$(<"$sys/max_bytes")
        (( now * 10 >= own * 9 && now * 10 <= own * 11 ))
}
wait_until 5 kept || fail "$bdi max_bytes is $(<"$sys/max_bytes") under the 400M pin, not kept near $own"
ok "under the 400M pin, $bdi max_bytes $(<"$sys/max_bytes") (max_ratio_fine $(<"$sys/max_ratio_fine")), kept near $own"
sleep 1
kept || fail "$bdi max_bytes moved to $(<"$sys/max_bytes")"

kill -TERM "$daemon"
wait "$daemon" || fail "daemon exit $? on SIGTERM"
[[ $(<"$vm/dirty_bytes") == 0 && $(<"$vm/dirty_ratio") == "${before[dirty_ratio]}" ]] ||
        fail "dirty_ratio not restored: dirty_bytes $(<"$vm/dirty_bytes") dirty_ratio $(<"$vm/dirty_ratio")"
[[ $(<"$sys/max_ratio_fine") == 10000 && $(<"$sys/strict_limit") == 0 ]] ||
        fail "$bdi not back to the admin's 1 %: max_ratio_fine $(<"$sys/max_ratio_fine") strict_limit $(<"$sys/strict_limit")"
ok "after the stop: dirty_ratio ${before[dirty_ratio]}, $bdi max_ratio_fine 10000 again"
exit 0
