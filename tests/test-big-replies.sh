#!/bin/bash
# Replies far over the 4 MiB a client may have queued: devices and top with 4000 BDIs on a fake tree
# are streamed, arrive whole, and cost the daemon little memory.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

make_tmpdir tmp
fake=$tmp/root
n=4000

# The fake tree: vm files, and n BDIs with their knob files and debugfs statistics, every 10th one
# holding dirty data (so top lists it). Written by python: 4000 devices are 40000 files.
"$PYTHON3" - "$fake" "$n" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
def put(path, text):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
put("proc/vmstat", "nr_dirty 2560\nnr_writeback 256\nnr_dirty_threshold 1219975\n"
    "nr_dirty_background_threshold 609243\nnr_dirtied 100000\nnr_written 90000\n")
put("proc/meminfo", "MemTotal: 24683912 kB\nMemAvailable: 23790000 kB\nDirty: 10240 kB\nWriteback: 1024 kB\n")
for knob, value in (("dirty_bytes", 0), ("dirty_background_bytes", 0), ("dirty_ratio", 20),
                    ("dirty_background_ratio", 10), ("dirty_writeback_centisecs", 500),
                    ("dirty_expire_centisecs", 3000)):
    put("proc/sys/vm/" + knob, "%d\n" % value)
put("proc/self/mountinfo", "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n")
os.makedirs(os.path.join(root, "sys/class/bdi"), exist_ok=True)
for i in range(n):
    bdi = "200:%d" % i
    d = "sys/devices/virtual/bdi/" + bdi
    for knob, value in (("min_ratio", 0), ("max_ratio", 100), ("min_ratio_fine", 0),
                        ("max_ratio_fine", 1000000), ("min_bytes", 0), ("max_bytes", 4997017600),
                        ("strict_limit", 0)):
        put(d + "/" + knob, "%d\n" % value)
    os.symlink("../../devices/virtual/bdi/" + bdi, os.path.join(root, "sys/class/bdi", bdi))
    dirty = 2048 if i % 10 == 0 else 0
    put("sys/kernel/debug/bdi/%s/stats" % bdi,
        "BdiWriteback:          0 kB\nBdiReclaimable:     %5d kB\nBdiDirtyThresh:     609948 kB\n"
        "DirtyThresh:       4879900 kB\nBackgroundThresh:  2436972 kB\nBdiDirtied:         123456 kB\n"
        "BdiWritten:         120000 kB\nBdiWriteBandwidth:       0 kBps\n" % dirty)
EOF
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
