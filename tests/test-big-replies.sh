#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Replies far over the 4 MiB a client may have queued: devices and top with 4000 BDIs on a fake tree
# are streamed, arrive whole, and cost the daemon little memory.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

make_tmpdir tmp
fake=$tmp/root
n=4000

# The fake tree: vm files, and n BDIs with their knob files and debugfs statistics, every 10th one
# holding dirty data (so top lists it).
"$PYTHON3" "$top_srcdir/tests/make_fake_tree.py" "$fake" "$n"
[[ -d $fake/sys/class/bdi ]] || fail "could not build the fake tree"

printf '[daemon]\ntick = 1s\n' > "$tmp/wbtuned.conf"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run --quiet \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
push_cleanup '[[ $_exit_rc -ne 0 ]] && { echo "--- daemon stderr"; tail -20 "$tmp/daemon.err"; }'
wait_for_socket "$tmp/ctl" 30 || fail "the daemon did not start on $n BDIs"
ctl() { "$WBTUNECTL" --socket "$tmp/ctl" --timeout 30s "$@"; }

hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$daemon/status"; }
out=$(ctl status --json) || fail "status"
json_check "$out" "j['n_devices'] == $n" || fail "status: n_devices is not $n"
hwm0=$(hwm)

ctl devices --json > "$tmp/devices.json" || { cat "$tmp/devices.json" | head -c 300; fail "devices --json with $n BDIs failed"; }
size=$(stat -c %s "$tmp/devices.json")
"$PYTHON3" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert len(j["devices"]) == int(sys.argv[2])' \
        "$tmp/devices.json" "$n" || fail "devices --json does not hold $n devices"
ctl devices > "$tmp/devices.txt" || fail "devices (text) with $n BDIs failed"
[[ $(wc -l < "$tmp/devices.txt") -eq $((n + 1)) ]] || fail "devices (text) is not a header and $n rows"
ctl top --once --json > "$tmp/top.json" || fail "top --once --json with $n BDIs failed"
# (files, not arguments: one argument may not pass 128 KiB)
"$PYTHON3" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert len(j["devices"]) == int(sys.argv[2]) // 10' \
        "$tmp/top.json" "$n" || fail "top does not list the $((n / 10)) active devices"
ctl history --json > "$tmp/history.json" || fail "history --json with $n BDIs failed"
"$PYTHON3" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert len(j["devices"]) == 256' "$tmp/history.json" ||
        fail "history does not hold the 256 devices it keeps"
ctl history 200:10 --csv > "$tmp/history.csv" || fail "history of one device failed"
hwm1=$(hwm)
ok "devices: $n BDIs, $size bytes of JSON; top and history answered; daemon VmHWM ${hwm0} -> ${hwm1} kB"
# the reply is streamed: the daemon never holds it whole (built at once it took ~50 MB more)
(( hwm1 - hwm0 < 16384 )) || fail "the daemon's peak memory grew by $((hwm1 - hwm0)) kB answering $size bytes"

kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || fail "exit $rc on SIGTERM"
exit 0
