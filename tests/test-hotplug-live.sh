#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Live: a udev event for a block device brings the daemon's next tick forward (sd-device monitor),
# and an event of another subsystem does not. udevd may not run here, so the events are sent the
# way udevd forwards them (tests/send_uevent.py) for a loop device of our own. Root only.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in
require_binaries

[[ $(id -u) -eq 0 ]] || skip "needs root (sending netlink device events)"
command -v losetup >/dev/null || skip "no losetup"
live_test_begin

make_tmpdir tmp
truncate -s 16M "$tmp/img" || fail "truncate"
loop=$(losetup --find --show "$tmp/img" 2>/dev/null) || skip "no loop device"
push_cleanup "losetup -d '$loop'"
devpath=$(realpath "/sys/block/${loop#/dev/}") || fail "no sysfs entry for $loop"
devpath=${devpath#/sys}

start_live_daemon $'[daemon]\ntick = 60s\nattribution = no\n[policy]\nmode = observe\n'
status() { out=$(ctl status --json) || fail "status failed"; }

status
json_check "$out" 'j["hotplug"]["enabled"]' || skip "no device event monitor: $(json_get "$out" 'j["hotplug"].get("reason")')"
ticks0=$(json_get "$out" 'j["ticks"]')

send() { "$PYTHON3" "$top_srcdir/tests/send_uevent.py" "$@" || fail "send_uevent.py $*"; }

# another subsystem: filtered out, no early tick
send change /devices/virtual/wbtuned-test/none wbtuned-test
sleep 1
status
json_check "$out" "j['hotplug']['events'] == 0 and j['ticks'] == $ticks0" ||
        { echo "$out"; fail "an event of another subsystem was taken"; }
ok "an event of another subsystem is filtered out"

# our loop device changed: the tick due in a minute comes within a second
send change "$devpath" block disk
for ((i = 0; i < 20; i++)); do
        status
        json_check "$out" "j['hotplug']['events'] >= 1 and j['ticks'] > $ticks0" && break
        sleep 0.1
done
json_check "$out" "j['hotplug']['events'] >= 1 and j['ticks'] > $ticks0" ||
        { echo "$out"; fail "a block event did not bring the tick forward"; }
ok "a block event for $loop brought the next tick forward (ticks $ticks0 -> $(json_get "$out" 'j["ticks"]'))"

kill -TERM "$daemon"
wait "$daemon" || fail "daemon exit $? on SIGTERM"
exit 0
