#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Remembered speeds end to end on a fake tree: a speeds file in the state dir is the prior of the device
# it names (devices, show and explain say "remembered (age 3 h)"); a damaged one is refused in one log
# line naming the file, and the daemon runs on without it.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

make_tmpdir tmp
fake=$tmp/root
cp -a "$top_srcdir/tests/fake/linux-6.18" "$fake"
# the virtio disk's serial, where sysfs has it (/sys/block/vda is a link to its device dir)
mkdir -p "$fake/sys/block" "$fake/sys/dev/block"
ln -s ../devices/pci0000:00/0000:00:02.0/virtio1/block/vda "$fake/sys/block/vda"
ln -s ../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda "$fake/sys/dev/block/254:0"
echo "BHYVE-1234" > "$fake/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/serial"
mkdir -m 0755 "$tmp/state"
printf '[daemon]\ntick = 200ms\n' > "$tmp/wbtuned.conf"

# write_speeds BODY: BODY plus the checksum line savedfile.c computes (FNV-1a 64 of everything before it)
write_speeds() {
        "$PYTHON3" - "$tmp/state/speeds" "$1" <<'PY'
import sys
path, body = sys.argv[1], sys.argv[2].encode()
h = 0xcbf29ce484222325
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
open(path, "wb").write(body + b"checksum fnv1a64 %016x\n" % h)
PY
}

start() {
        "$WBTUNED" --root "$fake" --state-dir "$tmp/state" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" \
                > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
        daemon=$!
        push_cleanup "stop_pid $daemon"
        wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/daemon.err"; fail "the daemon did not open its socket"; }
}
ctl() { "$WBTUNECTL" --socket "$tmp/ctl" --no-pager "$@"; }

measured=$(($(date +%s) - 3 * 3600 - 60))
write_speeds "wbtuned-speeds 1
speed 8388608 $measured serial:BHYVE-1234
"
start
out=$(ctl devices --json) || fail "wbtunectl devices --json failed"
json_check "$out" 'dev(j, "254:0")["tuning"]["bw_source"] == "remembered"' || { echo "$out"; cat "$tmp/daemon.err"; fail "254:0 is not remembered"; }
json_check "$out" 'abs(dev(j, "254:0")["tuning"]["bw_remembered_age_s"] - 3 * 3600 - 60) < 30' || fail "the age is not 3 h"
json_check "$out" 'dev(j, "254:0")["tuning"]["bw_estimate_bytes_per_s"] == 8388608' || fail "the remembered speed is not the estimate"
ok "a remembered speed is the device's prior at start"
ctl devices | grep -q 'remembered (age 3 h)' || fail "devices does not say remembered (age 3 h)"
ctl show vda | grep -q 'bandwidth taken as 8.0M/s, remembered (age 3 h)' || fail "show does not say where the speed comes from"
ctl explain vda | grep -q 'remembered (age 3 h)' || fail "explain does not say where the speed comes from"
ok "devices, show and explain say remembered (age 3 h)"
grep -q 'Remembered the speeds of 1 device(s) from' "$tmp/daemon.err" || fail "no log line for the loaded file"
stop_pid "$daemon"
# --root implies --dry-run: nothing is written back
grep -q "speed 8388608 $measured serial:BHYVE-1234" "$tmp/state/speeds" || fail "a dry run rewrote the file"
ok "a dry run leaves the file as it was"

# damaged: one digit changed behind the checksum
sed -i 's/^speed 8388608/speed 9388608/' "$tmp/state/speeds"
start
out=$(ctl devices --json) || fail "wbtunectl devices --json failed with a damaged file"
json_check "$out" 'dev(j, "254:0")["tuning"]["bw_source"] != "remembered"' || fail "a damaged file was used"
n=$(grep -c "Not using the remembered speeds in $tmp/state/speeds (checksum mismatch" "$tmp/daemon.err")
[[ $n -eq 1 ]] || { cat "$tmp/daemon.err"; fail "expected one log line naming the file and the reason, got $n"; }
stop_pid "$daemon"
ok "a damaged file is refused in one line, and the daemon runs on"

# foreign: another program's file
write_speeds "wbtuned-saved 2
"
start
ctl status > /dev/null || fail "the daemon does not answer with a foreign file"
grep -q "Not using the remembered speeds in $tmp/state/speeds (line 1: expected \"wbtuned-speeds 1\" first" "$tmp/daemon.err" ||
        { cat "$tmp/daemon.err"; fail "a foreign file is not refused with its reason"; }
stop_pid "$daemon"
ok "a foreign file is refused"
