#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs INSIDE the container booted by tests/test-nspawn.sh, from an enabled unit, under systemd as
# PID 1: drives the installed wbtuned.service and records what happened in $out for the host to
# judge (check lines, command outputs, JSON replies, the journal). Then powers the container off.
set -u
out=/wbtuned-e2e
mkdir -p "$out/json"
exec > "$out/log" 2>&1

# note, pass, flunk, check, check_not, until_ok, prop; finish on exit
. "$out/helpers.sh"
as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
journal_since() { journalctl -q --no-pager -o cat -u wbtuned.service --since "@$1"; }

note "systemd $(systemctl --version | head -n 1), virtualization $(systemd-detect-virt)"
echo "startup" > "$out/results"

# 1. The shipped unit does not start in a container (ConditionVirtualization=!container).
systemctl start wbtuned.service
note "shipped unit: ActiveState=$(prop ActiveState) ConditionResult=$(prop ConditionResult)"
check shipped-unit-skipped-in-container test "$(prop ConditionResult)" = no -a "$(prop ActiveState)" = inactive

# 2. Past the condition (a test-only drop-in), the daemon's own test must keep it from writing.
#    The drop-in also arms the test-only hang and shortens the watchdog so the test is quick.
mkdir -p /etc/systemd/system/wbtuned.service.d
cat > /etc/systemd/system/wbtuned.service.d/50-e2e-test.conf <<'EOF'
# tests/test-nspawn.sh only
[Unit]
ConditionVirtualization=
[Service]
Environment=WBTUNED_TEST_HANG=sigusr2
WatchdogSec=4s
EOF
systemctl daemon-reload
check enable-now systemctl enable --now wbtuned.service
check active until_ok 20 systemctl is-active -q wbtuned.service
status_text=$(prop StatusText)
note "StatusText=$status_text"
check status-line test -n "$status_text"
check status-line-says-observe test "${status_text%%:*}" = observe

# 3. The client, as root and as a plain user.
until_ok 10 test -S /run/wbtuned/control
for verb in status devices "top --once"; do
        name=${verb%% *}
        # shellcheck disable=SC2086
        wbtunectl $verb > "$out/$name.root.txt" 2>&1
        check "wbtunectl-$name-root" test $? -eq 0
        # shellcheck disable=SC2086
        as_user wbtunectl $verb > "$out/$name.user.txt" 2>&1
        check "wbtunectl-$name-user" test $? -eq 0
done
wbtunectl --json status > "$out/json/status.json" 2> "$out/status.err"
wbtunectl --json devices > "$out/json/devices.json" 2> "$out/devices.err"

# 4. A writer as a plain user shows up in `top` (taskstats under the shipped unit's capabilities).
#    A new process needs two full scans (every 5 ticks) to have a rate: poll for up to 20 s.
as_user bash -c 'for i in $(seq 250); do head -c 1M /dev/zero; sleep 0.1; done |
        dd of=/var/tmp/e2e-writer bs=64k iflag=fullblock status=none' 2> "$out/writer.err" &
writer=$!
dd_in_top() {
        wbtunectl --json top --once > "$out/json/top.json" 2> "$out/top.err" &&
                grep -q '"comm": "dd"' "$out/json/top.json"
}
until_ok 20 dd_in_top
as_user wbtunectl --json top --once > "$out/json/top.user.json" 2> "$out/top.user.err"
kill "$writer" 2> /dev/null
pkill -u nobody -x dd
wait "$writer"
rm -f /var/tmp/e2e-writer

# 5. Reload: a good drop-in takes effect; a broken one fails, names file:line, keeps the old config.
mkdir -p /etc/wbtuned.conf.d
printf '[daemon]\ntick = 500ms\n' > /etc/wbtuned.conf.d/50-e2e-tick.conf
check reload-good systemctl reload wbtuned.service
wbtunectl --json status > "$out/json/status.reloaded.json" 2>&1
printf '[daemon]\ntick = 2s\n[policy]\nmode = sideways\n' > /etc/wbtuned.conf.d/90-e2e-broken.conf
since=$(date +%s)
sleep 1
systemctl reload wbtuned.service > "$out/reload-broken.txt" 2>&1
rc=$?
echo "exit $rc" >> "$out/reload-broken.txt"
check reload-broken-fails test $rc -ne 0
journal_since "$since" > "$out/reload-broken.journal" 2>&1
check reload-broken-names-file-line grep -q '90-e2e-broken.conf:4' "$out/reload-broken.journal" "$out/reload-broken.txt"
check reload-broken-still-active systemctl is-active -q wbtuned.service
wbtunectl --json status > "$out/json/status.after-broken.json" 2>&1
rm -f /etc/wbtuned.conf.d/90-e2e-broken.conf

# 6. The watchdog restarts a hung daemon (the test-only hang: SIGUSR2 with WBTUNED_TEST_HANG).
pid=$(prop MainPID)
restarts=$(prop NRestarts)
since=$(date +%s)
kill -USR2 "$pid"
new_pid_running() { local p; p=$(prop MainPID); [[ $p != 0 && $p != "$pid" ]] && systemctl is-active -q wbtuned.service; }
check watchdog-restarts until_ok 30 new_pid_running
note "MainPID $pid -> $(prop MainPID), NRestarts $restarts -> $(prop NRestarts)"
check watchdog-counted test "$(prop NRestarts)" -gt "$restarts"
journal_since "$since" > "$out/watchdog.journal" 2>&1
check watchdog-in-journal grep -qi 'watchdog timeout' "$out/watchdog.journal"
check answers-after-restart until_ok 10 wbtunectl status

# 7. Stop: inactive, not failed; nothing saved, since nothing was written.
check stop systemctl stop wbtuned.service
note "after stop: ActiveState=$(prop ActiveState) SubState=$(prop SubState) Result=$(prop Result)"
check stopped-inactive test "$(prop ActiveState)" = inactive
check stopped-result-success test "$(prop Result)" = success
check nothing-saved test ! -e /run/wbtuned/saved

# 8. metrics_textfile in a directory the unit leaves read-only (ProtectSystem=strict): one journal line
#    naming the file, the reason and the fix (a ReadWritePaths= drop-in), and the daemon keeps running;
#    with that drop-in the file is written, and removed at stop.
promdir=/var/lib/prometheus/node-exporter
mkdir -p "$promdir"
chmod 755 "$promdir"
printf '[daemon]\nmetrics_textfile = %s/wbtuned.prom\nmetrics_interval = 1s\n' "$promdir" > /etc/wbtuned.conf.d/60-e2e-metrics.conf
since=$(date +%s)
sleep 1
check metrics-ro-start systemctl start wbtuned.service
until_ok 10 test -S /run/wbtuned/control
sleep 4    # four metrics_interval: one line for them all
journal_since "$since" > "$out/metrics-ro.journal" 2>&1
n_lines=$(grep -c 'Failed to write the metrics file' "$out/metrics-ro.journal")
note "read-only textfile directory: $n_lines line(s): $(grep -m1 'Failed to write the metrics file' "$out/metrics-ro.journal")"
check metrics-ro-logged-once test "$n_lines" -eq 1
check metrics-ro-names-file-reason-fix grep -q \
        "Failed to write the metrics file $promdir/wbtuned.prom: Read-only file system\..*\"ReadWritePaths=$promdir\" to \[Service\] in a drop-in" \
        "$out/metrics-ro.journal"
check metrics-ro-still-active systemctl is-active -q wbtuned.service
check metrics-ro-no-file test ! -e "$promdir/wbtuned.prom"
# the fix the line names
printf '# tests/test-nspawn.sh only\n[Service]\nReadWritePaths=%s\n' "$promdir" > /etc/systemd/system/wbtuned.service.d/60-e2e-metrics.conf
systemctl daemon-reload
check metrics-rw-restart systemctl restart wbtuned.service
check metrics-rw-written until_ok 10 test -s "$promdir/wbtuned.prom"
note "with ReadWritePaths=$promdir: $(ls -l "$promdir" 2>&1 | tail -n +2)"
check metrics-rw-mode-644 test "$(stat -c %a "$promdir/wbtuned.prom" 2> /dev/null)" = 644
check metrics-rw-has-metrics grep -q '^wbtuned_ticks_total ' "$promdir/wbtuned.prom"
check metrics-rw-stop systemctl stop wbtuned.service
check metrics-rw-removed-at-stop test ! -e "$promdir/wbtuned.prom"
rm -f /etc/wbtuned.conf.d/60-e2e-metrics.conf /etc/systemd/system/wbtuned.service.d/60-e2e-metrics.conf
systemctl daemon-reload
