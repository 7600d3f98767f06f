#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The actuator on the live kernel: a loop device of our own, dirty_bytes and its BDI's cap, then exact restore.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in

[[ $(id -u) == 0 ]] || skip "needs root"
command -v losetup >/dev/null || skip "losetup not installed"
helper=$top_builddir/tests/test-actuate
[[ -x $helper ]] || fail "$helper not built"
live_test_begin

vm=/proc/sys/vm
vm_knobs=(dirty_bytes dirty_ratio dirty_background_bytes dirty_background_ratio
          dirty_writeback_centisecs dirty_expire_centisecs)
declare -A before
for k in "${vm_knobs[@]}"; do before[$k]=$(<"$vm/$k"); done
# Put a bytes/ratio pair back by its non-zero member (writing 0 to *_bytes is EINVAL).
restore_vm() {
        local k
        for k in dirty_writeback_centisecs dirty_expire_centisecs; do echo "${before[$k]}" > "$vm/$k"; done
        if [[ ${before[dirty_bytes]} != 0 ]]; then echo "${before[dirty_bytes]}" > $vm/dirty_bytes
        else echo "${before[dirty_ratio]}" > $vm/dirty_ratio; fi
        if [[ ${before[dirty_background_bytes]} != 0 ]]; then echo "${before[dirty_background_bytes]}" > $vm/dirty_background_bytes
        else echo "${before[dirty_background_ratio]}" > $vm/dirty_background_ratio; fi
}
push_cleanup restore_vm

make_tmpdir tmp
truncate -s 64M "$tmp/img" || fail "truncate"
loop=$(losetup --find --show "$tmp/img") || skip "no loop device available"
push_cleanup "losetup -d '$loop'"
bdi=$(lsblk -dno MAJ:MIN "$loop" | tr -d ' ')
sys=/sys/class/bdi/$bdi
[[ -e $sys/max_ratio_fine ]] || skip "$sys has no max_ratio_fine (kernel < 6.2)"
bdi_before=("$(<"$sys/min_ratio_fine")" "$(<"$sys/max_ratio_fine")" "$(<"$sys/strict_limit")")
push_cleanup "echo 0 > '$sys/strict_limit'; echo ${bdi_before[0]} > '$sys/min_ratio_fine'; echo ${bdi_before[1]} > '$sys/max_ratio_fine'; echo ${bdi_before[2]} > '$sys/strict_limit'"

log "loop device $loop, bdi $bdi"
"$helper" --live "$bdi" || fail "live actuator checks failed"

for k in "${vm_knobs[@]}"; do
        [[ $(<"$vm/$k") == "${before[$k]}" ]] || fail "$k is $(<"$vm/$k"), was ${before[$k]}"
done
[[ "$(<"$sys/min_ratio_fine") $(<"$sys/max_ratio_fine") $(<"$sys/strict_limit")" == "${bdi_before[*]}" ]] ||
        fail "$bdi knobs not restored"
ok "every knob back to its original"
