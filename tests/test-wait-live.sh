#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Live: `wbtunectl wait` on our own slow loop device (ext4, blkio-throttled to 4 MB/s): it syncs the mount
# point, shows the backlog draining, and exits 0 only once the device holds nothing dirty or under
# writeback; --timeout fails (5) and says what is left; a caller who cannot open the mount point is told
# so and waits for the kernel's own writeback. Root only; 77 without a loop device or blkio throttle.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in
require_binaries

[[ $(id -u) -eq 0 ]] || skip "needs root"
for t in losetup mkfs.ext4 truncate dd mount umount mountpoint; do
        command -v "$t" >/dev/null || skip "no $t"
done
throttle=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
[[ -w $throttle ]] || skip "no blkio throttle ($throttle, cgroup v1 blkio): cannot make a loop device slow"
live_test_begin

make_tmpdir tmp
make_loop_fs wait-live 256M
# 4 MB/s: 24 MB take 6 s to write back
echo "$majmin 4194304" > "$throttle" || skip "cannot set a blkio write throttle on $majmin"
push_cleanup "echo '$majmin 0' > '$throttle'"

start_live_daemon $'[daemon]\ntick = 500ms\nattribution = no\n[policy]\nmode = observe\n'

# The device's dirty + writeback as the kernel has it now (debugfs), or "" without debugfs.
kernel_backlog() {
        local f=/sys/kernel/debug/bdi/$majmin/stats
        [[ -r $f ]] || return 0
        awk '/^BdiWriteback:|^BdiReclaimable:/ { kb += $2 } END { print kb * 1024 }' "$f"
}

# dirty MB: write that much into the file system, without syncing, and wait until the daemon sees most of it.
dirty() {
        local mb=$1 i
        dd if=/dev/zero of="$mnt/fill.$RANDOM" bs=1M count="$mb" status=none || fail "dd into $mnt"
        for ((i = 0; i < 50; i++)); do
                out=$(ctl show "$mnt" --json=short) || fail "show $mnt failed"
                json_check "$out" "j['device']['dirty_bytes'] + j['device']['writeback_bytes'] >= $((mb / 2)) << 20" && return 0
                sleep 0.1
        done
        echo "$out"
        fail "the daemon does not see the $mb MB written to $mnt"
}

# --- the wait: JSON lines, exit 0 only once clean ------------------------------------------------------
dirty 24
before=$(kernel_backlog)
t0=$(date +%s.%N)
ctl wait "$mnt" --json=short --timeout 120s > "$tmp/wait.json" 2> "$tmp/wait.err"
rc=$?
t1=$(date +%s.%N)
after=$(kernel_backlog)
[[ $rc -eq 0 ]] || { cat "$tmp/wait.json" "$tmp/wait.err"; fail "wait $mnt: exit $rc"; }
# a clean device's per-CPU counters can read a few KiB for good: 2 x CPUs x 8 x (1 + log2 CPUs) pages
cpus=$(awk -F'[-,]' '{ print $NF + 1 }' /sys/devices/system/cpu/possible)
counter_error=$(awk -v n="$cpus" -v page="$(getconf PAGESIZE)" 'BEGIN { l = 0; while (2 ^ (l + 1) <= n) l++; print 2 * n * 8 * (1 + l) * page }')
[[ -z $after || $after -le $counter_error ]] ||
        { cat "$tmp/wait.json"; fail "wait exited 0 with $after bytes dirty or under writeback on $majmin (counter error $counter_error)"; }
elapsed=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
# 24 MB at 4 MB/s: anything much faster means it did not wait for the writeback
awk "BEGIN { exit !($elapsed > 3) }" || { cat "$tmp/wait.json"; fail "wait took only ${elapsed}s for 24 MB at 4 MB/s"; }
"$PYTHON3" - "$tmp/wait.json" "$counter_error" <<'PYEOF' || { cat "$tmp/wait.json"; fail "wait --json lines"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
counter_error = int(sys.argv[2])
assert len(lines) >= 3, "fewer than 3 readings"
assert all(l["state"] == "writing" for l in lines[:-1]), "a reading before the last is not 'writing'"
last = lines[-1]
# clean is "nothing within the kernel's per-CPU counter error", as for the exit status above: the last
# reading shows what the counters said, and its done_percent follows from it
assert last["state"] == "clean" and last["backlog_bytes"] <= counter_error, last
peak = max(l["backlog_bytes"] for l in lines)
assert abs(last["done_percent"] - 100.0 * (peak - last["backlog_bytes"]) / peak) < 0.1, last
assert max(l["backlog_bytes"] for l in lines) >= 12 << 20, "never saw the backlog"
assert any(0 < l["done_percent"] < 100 for l in lines), "no reading in between"
assert all(l["bw_estimate_bytes_per_s"] >= 0 and isinstance(l["elapsed_s"], float) for l in lines)
PYEOF
[[ -s $tmp/wait.err ]] && { cat "$tmp/wait.err"; fail "wait as root wrote to stderr"; }
ok "wait: ${before:-?} bytes on $majmin written back in ${elapsed}s, $(wc -l < "$tmp/wait.json") JSON lines, kernel backlog ${after:-?} at exit"
# the ETA's bandwidth (the policy's estimate) next to what the device did: a figure, not a check
log "bandwidth estimate during the wait: $("$PYTHON3" -c 'import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
print(" ".join("%.1fM/s" % (l["bw_estimate_bytes_per_s"] / 2**20) for l in lines))' "$tmp/wait.json"); written: $(awk "BEGIN { printf \"%.1f\", ${before:-0} / 1048576 / $elapsed }")M/s"

# --- --timeout: exit 5 with what is left; plain lines into a pipe ----------------------------------------
dirty 24
t0=$(date +%s.%N)
ctl wait "$mnt" --timeout 2s > "$tmp/timeout.out" 2> "$tmp/timeout.err"
rc=$?
elapsed=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")
[[ $rc -eq 5 ]] || { cat "$tmp/timeout.out" "$tmp/timeout.err"; fail "wait --timeout 2s: exit $rc, expected 5"; }
awk "BEGIN { exit !($elapsed < 4) }" || fail "wait --timeout 2s took ${elapsed}s"
grep -Eq "timed out after 2\.[0-9]s: [0-9.]+[KMG]? still dirty or under writeback" "$tmp/timeout.err" ||
        { cat "$tmp/timeout.err"; fail "wait --timeout: no message saying what is left"; }
[[ $(grep -c ' left (dirty ' "$tmp/timeout.out") -ge 2 ]] || { cat "$tmp/timeout.out"; fail "wait into a pipe: not a line a second"; }
grep -q $'\r' "$tmp/timeout.out" && fail "wait into a pipe rewrote its line"
ok "wait --timeout 2s: exit 5, $(cat "$tmp/timeout.err")"
ctl wait "$mnt" --timeout 120s > "$tmp/drain.out" 2>&1 || { cat "$tmp/drain.out"; fail "wait to drain"; }
tail -n1 "$tmp/drain.out" | grep -q ', clean$' || { cat "$tmp/drain.out"; fail "wait's last line does not say clean"; }

# --- on a terminal: one line rewritten in place, with a bar ---------------------------------------------
if command -v script >/dev/null; then
        dirty 8
        script -qec "'$WBTUNECTL' --socket '$tmp/ctl' wait --timeout 120s '$mnt'" /dev/null > "$tmp/tty.out" 2>&1 < /dev/null ||
                { cat -A "$tmp/tty.out"; fail "wait on a terminal failed"; }
        grep -q $'\r\e\[K.*\[#*\.*\] ' "$tmp/tty.out" || { cat -A "$tmp/tty.out"; fail "wait on a terminal: no bar rewritten in place"; }
        ok "wait on a terminal: a progress bar"
else
        log "no script(1): the terminal check is skipped"
fi

# --- a caller who cannot open the mount point: told so, waits for the kernel's writeback ---------------
if command -v setpriv >/dev/null; then
        dirty 8
        chmod 0700 "$mnt"
        chmod 0755 "$tmp"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$WBTUNECTL" --socket "$tmp/ctl" wait "$mnt" --timeout 2s \
                > "$tmp/nobody.out" 2> "$tmp/nobody.err"
        rc=$?
        chmod 0755 "$mnt"
        [[ $rc -eq 5 ]] || { cat "$tmp/nobody.out" "$tmp/nobody.err"; fail "wait as nobody: exit $rc, expected 5 (no syncfs: the kernel writes back after dirty_expire)"; }
        grep -q "cannot open $mnt to start its writeback (Permission denied): waiting for the kernel's own writeback" "$tmp/nobody.err" ||
                { cat "$tmp/nobody.err"; fail "wait as nobody: no message about the mount point it cannot open"; }
        ok "wait as nobody: $(head -n1 "$tmp/nobody.err")"
        ctl wait "$mnt" --timeout 120s > /dev/null 2>&1 || fail "wait to drain"
fi

# --- a device nobody knows ------------------------------------------------------------------------------
ctl wait /no/such/mount > /dev/null 2> "$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "no device matches '/no/such/mount'" "$tmp/err" || { cat "$tmp/err"; fail "wait on an unknown device: exit $rc"; }
ok "wait on an unknown device: exit 1"
exit 0
