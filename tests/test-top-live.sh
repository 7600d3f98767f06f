#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Live: the daemon (observe mode, own socket) shows a dd throttled on our own slow loop device in
# `wbtunectl top --once --json`, and its trace instance is gone once it stops. Root only; 77 without the means.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in
require_binaries

[[ $(id -u) -eq 0 ]] || skip "needs root"
for t in losetup mkfs.ext4 truncate dd mount umount mountpoint; do
        command -v "$t" >/dev/null || skip "no $t"
done
grep -qw tracefs /proc/filesystems || skip "the kernel has no tracefs"
throttle=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
[[ -w $throttle ]] || skip "no blkio throttle ($throttle): cannot make a loop device slow"
live_test_begin

make_tmpdir tmp
make_loop_fs top-live 512M
bdi=/sys/class/bdi/$majmin

# slow: 4 MB/s; and a small strict limit on OUR device so dd is paced by it whatever the global limits are
echo "$majmin 4194304" > "$throttle" || skip "cannot set a blkio write throttle"
push_cleanup "echo '$majmin 0' > '$throttle'"
if [[ -w $bdi/strict_limit && -w $bdi/max_bytes ]]; then
        ratio_file=max_ratio; [[ -r $bdi/max_ratio_fine ]] && ratio_file=max_ratio_fine
        push_cleanup "echo $(cat "$bdi/$ratio_file") > '$bdi/$ratio_file'; echo $(cat "$bdi/strict_limit") > '$bdi/strict_limit'"
        echo 1 > "$bdi/strict_limit"
        echo $((16 << 20)) > "$bdi/max_bytes"
fi

start_live_daemon $'[daemon]\ntick = 1s\nattribution = yes\n[policy]\nmode = observe\n'

out=$(ctl status --json) || fail "status failed"
if ! json_check "$out" 'j["attribution"]["enabled"]'; then
        skip "attribution is off here: $(json_get "$out" 'j["attribution"]["reason"]')"
fi
instance=$(ls -d /sys/kernel/tracing/instances/wbtuned /sys/kernel/debug/tracing/instances/wbtuned 2>/dev/null | head -n1)
[[ -n $instance ]] || fail "attribution is on but no instances/wbtuned directory exists"
ok "attribution on, trace instance $instance"

dd if=/dev/zero of="$work/mnt/fill" bs=1M count=400 status=none &
dd_pid=$!
push_cleanup "kill $dd_pid 2>/dev/null; wait $dd_pid 2>/dev/null"

found=
for ((i = 0; i < 30; i++)); do
        sleep 1
        out=$(ctl top --once --json) || fail "top --once --json failed"
        if json_check "$out" "any(t['pid'] == $dd_pid and t['bdi'] == '$majmin' and t['pause_ms_per_s'] > 0 for t in j['paused'])"; then
                found=1
                break
        fi
done
[[ -n $found ]] || { echo "$out"; fail "dd ($dd_pid) never showed as paused on $majmin in top"; }
ok "top: dd ($dd_pid) paused $(json_get "$out" "[t for t in j['paused'] if t['pid'] == $dd_pid][0]['pause_ms_per_s']") ms/s on $majmin"
json_check "$out" "dev(j, '$majmin') is not None and dev(j, '$majmin')['throttle']['pauses'] > 0" ||
        { echo "$out"; fail "top: device $majmin has no throttle figures"; }
ok "top: device $majmin listed with its pauses"
# dd must show among the dirtiers (a full /proc scan runs every 5th tick) ...
for ((i = 0; i < 15; i++)); do
        json_check "$out" "any(t['pid'] == $dd_pid for t in j['dirtiers'])" && break
        sleep 1
        out=$(ctl top --once --json) || fail "top --once --json failed"
done
json_check "$out" "any(t['pid'] == $dd_pid for t in j['dirtiers'])" || { echo "$out"; fail "dd ($dd_pid) never listed as a dirtier"; }
# ... and no kernel thread (loop workers, flushers) may be, whatever this kernel charges to them
for pid in $(json_get "$out" "' '.join(str(t['pid']) for t in j['dirtiers'])"); do
        flags=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f7) || continue
        [[ -n $flags ]] && (( flags & 0x00200000 )) && { echo "$out"; fail "top: kernel thread $pid listed as a dirtier"; }
done
ok "top: no kernel thread among the dirtiers ($(json_get "$out" "', '.join(t['comm'] for t in j['dirtiers'])"))"
text=$(ctl top --once) || fail "top --once failed"
grep -Eq "^ *$dd_pid +dd " <<< "$text" || { echo "$text"; fail "top --once text has no dd line"; }
ok "top --once text lists dd"

kill "$dd_pid" 2>/dev/null
wait "$dd_pid" 2>/dev/null
kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || fail "daemon exit $rc on SIGTERM"
[[ -e $instance ]] && fail "$instance is left after the daemon stopped"
ok "daemon stopped, $instance removed"
exit 0
