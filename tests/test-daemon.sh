#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon end to end on a fake /proc + /sys tree: sd_notify, control socket, ticks,
# hotplug, SIGHUP reloads, SIGTERM, --check-config, and refusing to start without BDIs.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

make_tmpdir tmp
fake=$tmp/root
page=$(getconf PAGESIZE)
KiB=1024

# --- the fake tree (formats copied from Linux 6.18's files) -----------------------------

# atomic_write FILE: stdin into FILE through a rename, so a tick never reads half a file.
atomic_write() {
        cat > "$1.new.$$" && mv -f "$1.new.$$" "$1"
}

# write_stats BDI DIRTY_KB WRITEBACK_KB: debugfs bdi/<BDI>/stats and wb_stats.
write_stats() {
        local d=$fake/sys/kernel/debug/bdi/$1
        mkdir -p "$d"
        {
                printf '%-20s%10s kB\n' BdiWriteback: "$3" BdiReclaimable: "$2" \
                        BdiDirtyThresh: 609948 DirtyThresh: 4879900 BackgroundThresh: 2436972 \
                        BdiDirtied: 123456 BdiWritten: 120000
                printf '%-20s%10s kBps\n' BdiWriteBandwidth: 0
                printf '%-20s%10s\n' b_dirty: 3 b_io: 0 b_more_io: 0 b_dirty_time: 0 bdi_list: 1 state: 1
        } | atomic_write "$d/stats"
        {
                # the root writeback context first, as the kernel lists it; then a cgroup's
                printf '%-19s%10s\n' WbCgIno: 1
                printf '%-19s%10s kB\n' WbWriteback: "$3" WbReclaimable: "$2" WbDirtyThresh: 609948 \
                        WbDirtied: 123456 WbWritten: 120000
                printf '%-19s%10s kBps\n' WbWriteBandwidth: 51200
                printf '%-19s%10s\n' b_dirty: 3 b_io: 0 b_more_io: 0 b_dirty_time: 0 state: 1
                printf '\n'
                printf '%-19s%10s\n' WbCgIno: 4242
                printf '%-19s%10s kB\n' WbWriteback: 0 WbReclaimable: 0 WbDirtyThresh: 1000 \
                        WbDirtied: 0 WbWritten: 0
                printf '%-19s%10s kBps\n' WbWriteBandwidth: 777
                printf '%-19s%10s\n' b_dirty: 0 b_io: 0 b_more_io: 0 b_dirty_time: 0 state: 1
                printf '\n'
        } | atomic_write "$d/wb_stats"
}

# add_bdi MAJ:MIN NAME MAX_RATIO MAX_BYTES: sysfs knobs, a block device, debugfs stats.
add_bdi() {
        local bdi=$1 name=$2 max_ratio=$3 max_bytes=$4
        local d=$fake/sys/devices/virtual/bdi/$bdi blk=$fake/sys/devices/virtual/block/$name
        mkdir -p "$d" "$blk/queue"
        echo 0 > "$d/min_ratio"
        echo "$max_ratio" > "$d/max_ratio"
        echo 0 > "$d/min_ratio_fine"
        echo $((max_ratio * 10000)) > "$d/max_ratio_fine"
        echo 0 > "$d/min_bytes"
        echo "$max_bytes" > "$d/max_bytes"
        echo 0 > "$d/strict_limit"
        echo 128 > "$d/read_ahead_kb"
        echo "$bdi" > "$blk/dev"
        printf 'MAJOR=%s\nMINOR=%s\nDEVNAME=%s\nDEVTYPE=disk\n' "${bdi%:*}" "${bdi#*:}" "$name" > "$blk/uevent"
        echo 0 > "$blk/removable"
        echo 0 > "$blk/queue/rotational"
        echo "    1000        0    80000      100     2000        0   240000     500        0     700     600        0        0        0        0        0        0" > "$blk/stat"
        ln -s "../../devices/virtual/block/$name" "$fake/sys/dev/block/$bdi"
        ln -s "../devices/virtual/block/$name" "$fake/sys/block/$name"
        write_stats "$bdi" 2048 512
        # last, as the kernel registers the bdi after the disk (device_add_disk()): a daemon that
        # ticks in between must not see a bdi whose block device is not there yet
        ln -s "../../devices/virtual/bdi/$bdi" "$fake/sys/class/bdi/$bdi"
}

remove_bdi() {
        local bdi=$1 name=$2
        rm -rf "$fake/sys/class/bdi/$bdi" "$fake/sys/devices/virtual/bdi/$bdi" \
                "$fake/sys/kernel/debug/bdi/$bdi" "$fake/sys/dev/block/$bdi" \
                "$fake/sys/block/$name" "$fake/sys/devices/virtual/block/$name"
}

make_fake_root() {
        mkdir -p "$fake/proc/sys/vm" "$fake/proc/self" "$fake/sys/class/bdi" "$fake/sys/dev/block" \
                "$fake/sys/block" "$fake/sys/devices/virtual/bdi" "$fake/sys/kernel/debug/bdi"
        cat > "$fake/proc/vmstat" <<EOF
nr_free_pages 5924000
nr_zone_inactive_file 40000
nr_zone_active_file 30000
nr_dirty 2560
nr_writeback 256
nr_writeback_temp 0
nr_dirty_threshold 1219975
nr_dirty_background_threshold 609243
nr_dirtied 100000
nr_written 90000
pgpgin 400000
pgpgout 300000
EOF
        cat > "$fake/proc/meminfo" <<EOF
MemTotal:       24683912 kB
MemFree:        23696404 kB
MemAvailable:   23790000 kB
Buffers:           10000 kB
Cached:           300000 kB
Dirty:             10240 kB
Writeback:          1024 kB
EOF
        echo 0 > "$fake/proc/sys/vm/dirty_bytes"
        echo 0 > "$fake/proc/sys/vm/dirty_background_bytes"
        echo 20 > "$fake/proc/sys/vm/dirty_ratio"
        echo 10 > "$fake/proc/sys/vm/dirty_background_ratio"
        echo 500 > "$fake/proc/sys/vm/dirty_writeback_centisecs"
        echo 3000 > "$fake/proc/sys/vm/dirty_expire_centisecs"
        echo 43200 > "$fake/proc/sys/vm/dirtytime_expire_seconds"
        # 7:3 mounted twice, once on a path with a space (octal-escaped, as the kernel does)
        cat > "$fake/proc/self/mountinfo" <<EOF
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 7:3 / /mnt/fake3 rw,relatime shared:20 - ext4 /dev/loop3 rw
41 27 7:3 / /srv/with\\040space rw,relatime shared:20 - ext4 /dev/loop3 rw
EOF
        add_bdi 7:3 loop3 100 4997017600
        add_bdi 8:0 sda 50 2498508800
        echo 1 > "$fake/sys/devices/virtual/block/sda/queue/rotational"
}

make_fake_root

cat > "$tmp/wbtuned.conf" <<EOF
# test configuration
[daemon]
tick = 200ms
log_level = info

[policy]
mode = observe
EOF
cat > "$tmp/bad.conf" <<EOF
[daemon]
tick = banana
EOF

knobs_sum() { find "$fake/proc/sys" "$fake/sys/devices/virtual/bdi" -type f -exec md5sum {} + | sort | md5sum; }
knobs_before=$(knobs_sum)

# --- --check-config -----------------------------------------------------------------------
"$WBTUNED" --check-config -c "$tmp/wbtuned.conf" > "$tmp/check.out" 2> "$tmp/check.err"
rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/check.err"; fail "--check-config on a good config: exit $rc"; }
grep -Eq '^tick *= *200ms' "$tmp/check.out" || { cat "$tmp/check.out"; fail "--check-config does not print tick = 200ms"; }
# the dump is itself a valid configuration
cp "$tmp/check.out" "$tmp/dumped.conf"
"$WBTUNED" --check-config -c "$tmp/dumped.conf" > /dev/null 2> "$tmp/check.err" ||
        { cat "$tmp/check.err"; fail "--check-config output does not load back"; }
ok "--check-config: good config exits 0 and prints a loadable config"

mkdir -p "$tmp/dropin.conf.d"
cp "$tmp/wbtuned.conf" "$tmp/dropin.conf"
printf '[daemon]\ntick = 500ms\n' > "$tmp/dropin.conf.d/50-tick.conf"
printf '[daemon]\ntick = 700ms\n' > "$tmp/dropin.conf.d/60-tick.conf"
printf '[daemon]\ntick = banana\n' > "$tmp/dropin.conf.d/ignored.txt"
"$WBTUNED" --check-config -c "$tmp/dropin.conf" > "$tmp/check.out" 2> "$tmp/check.err" ||
        { cat "$tmp/check.err"; fail "--check-config with drop-ins failed"; }
grep -Eq '^tick *= *700ms' "$tmp/check.out" || { cat "$tmp/check.out"; fail "drop-ins not merged in lexical order"; }
ok "--check-config merges FILE.d/*.conf in order"

"$WBTUNED" --check-config -c "$tmp/bad.conf" > "$tmp/check.out" 2> "$tmp/check.err"
rc=$?
[[ $rc -eq 1 ]] || { cat "$tmp/check.err"; fail "--check-config on a bad config: exit $rc, expected 1"; }
grep -q "$tmp/bad.conf:2" "$tmp/check.err" || { cat "$tmp/check.err"; fail "--check-config error does not name bad.conf:2"; }
ok "--check-config: bad config exits 1 naming file:line"

"$WBTUNED" --check-config -c "$tmp/missing.conf" > /dev/null 2> "$tmp/check.err"
rc=$?
[[ $rc -eq 1 ]] || fail "--check-config on a missing file: exit $rc, expected 1"
[[ -s $tmp/check.err ]] || fail "--check-config on a missing file: no message"
ok "--check-config: missing file exits 1"

# not a regular file: refused at once (it used to read /dev/zero forever)
mkfifo "$tmp/fifo.conf"
for f in /dev/zero "$tmp/fifo.conf"; do
        timeout 10 "$WBTUNED" --check-config -c "$f" > /dev/null 2> "$tmp/check.err"
        rc=$?
        [[ $rc -eq 1 ]] || fail "--check-config -c $f: exit $rc, expected 1 (124: it hung)"
        grep -q "^$f: cannot read: a .*, not a regular file" "$tmp/check.err" ||
                { cat "$tmp/check.err"; fail "--check-config -c $f: no clear message"; }
done
ok "--check-config: /dev/zero and a FIFO are refused at once"

# --- no /sys/class/bdi: one clear line, non-zero exit -----------------------------------
mkdir -p "$tmp/empty/proc" "$tmp/empty/sys"
cp -r "$fake/proc/." "$tmp/empty/proc/"
"$WBTUNED" --root "$tmp/empty" --socket "$tmp/ctl-empty" -c "$tmp/wbtuned.conf" --dry-run \
        > "$tmp/empty.out" 2> "$tmp/empty.err" < /dev/null
rc=$?
[[ $rc -ne 0 ]] || fail "started without /sys/class/bdi"
[[ $(grep -c . "$tmp/empty.err") -eq 1 ]] || { cat "$tmp/empty.err"; fail "expected one error line without /sys/class/bdi"; }
grep -q 'sys/class/bdi' "$tmp/empty.err" || { cat "$tmp/empty.err"; fail "the error does not name /sys/class/bdi"; }
[[ -e $tmp/ctl-empty ]] && fail "left a socket behind"
ok "no /sys/class/bdi: exit $rc, one line: $(cat "$tmp/empty.err")"

# --- start the daemon under a fake systemd -----------------------------------------------
"$PYTHON3" "$top_srcdir/tests/notify_listener.py" "$tmp/notify" --out "$tmp/notify.log" --timeout 120 &
listener=$!
push_cleanup "stop_pid $listener"
wait_for_socket "$tmp/notify" 10 || fail "notify listener did not start"

NOTIFY_SOCKET=$tmp/notify WATCHDOG_USEC=200000 \
        "$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
push_cleanup '[[ $_exit_rc -ne 0 && -s $tmp/daemon.err ]] && { echo "--- daemon stderr"; cat "$tmp/daemon.err"; }'

daemon_alive() { kill -0 "$daemon" 2>/dev/null || fail "the daemon died; stderr: $(cat "$tmp/daemon.err")"; }

wait_for_line "$tmp/notify.log" '^READY=1$' 10 || { daemon_alive; fail "no READY=1"; }
ok "READY=1"
wait_for_line "$tmp/notify.log" '^STATUS=.+' 5 || fail "no STATUS="
ok "STATUS: $(grep -m1 '^STATUS=' "$tmp/notify.log")"
wait_for_line "$tmp/notify.log" '^WATCHDOG=1$' 5 || fail "no WATCHDOG=1 within 5 s at WATCHDOG_USEC=200000"
sleep 1
n=$(grep -c '^WATCHDOG=1$' "$tmp/notify.log")
[[ $n -ge 3 ]] || fail "only $n WATCHDOG=1 in over a second at WATCHDOG_USEC=200000 (expected one per 100 ms)"
ok "WATCHDOG=1 x $n"
[[ -S $tmp/ctl ]] || fail "no control socket at $tmp/ctl"

ctl() { "$WBTUNECTL" --socket "$tmp/ctl" "$@"; }

# poll VERB TIMEOUT_S PYEXPR: until `wbtunectl VERB --json` satisfies PYEXPR; output in $out.
poll() {
        local verb=$1 timeout_s=$2 expr=$3 i
        for ((i = 0; i < timeout_s * 10; i++)); do
                out=$(ctl "$verb" --json 2>/dev/null) && json_check "$out" "$expr" && return 0
                sleep 0.1
        done
        return 1
}

# --- status ---------------------------------------------------------------------------------
out=$(ctl status --json) || fail "wbtunectl status --json failed"
check() { json_check "$out" "$1" || { echo "$out"; fail "$2"; }; }
check 'j["n_devices"] == 2' "status: n_devices is not 2"
check 'j["tick_ms"] == 200' "status: tick_ms is not 200"
check 'j["dry_run"] is True' "status: dry_run is not true"
check "j[\"global\"][\"dirty_bytes\"] == 2560 * $page" "status: global dirty_bytes is not nr_dirty pages"
check "j[\"global\"][\"writeback_bytes\"] == 256 * $page" "status: global writeback_bytes is not nr_writeback pages"
check "j[\"global\"][\"dirty_thresh_bytes\"] == 1219975 * $page" "status: dirty_thresh_bytes"
check "j[\"global\"][\"mem_total_bytes\"] == 24683912 * $KiB" "status: mem_total_bytes"
check 'j["global"]["knobs"]["dirty_ratio"] == 20 and j["global"]["knobs"]["dirty_background_ratio"] == 10' \
        "status: vm knobs are not the fake ones"
check 'j["global"]["knobs"]["dirty_expire_centisecs"] == 3000' "status: dirty_expire_centisecs"
check 'j.get("observe_only_reason", "missing") is None' "status: observe_only_reason is not null outside a container"
ok "status --json shows the fake global state"
# where the work went: every stage, the sample's time in it, the tick's stages within the tick's total
check 'sorted(j["work_usec"]) == ["attribution", "cgroups", "decide_act", "history", "sample", "trace_drain"]' \
        "status: work_usec does not have every stage"
check 'j["work_usec"]["sample"] > 0 and j["work_usec"]["decide_act"] > 0' "status: no sample or decision time counted"
check 'sum(v for k, v in j["work_usec"].items() if k != "trace_drain") <= j["tick_work_total_usec"]' \
        "status: the stages add up to more than the ticks' work"
ok "status --json: work by stage, $(json_get "$out" 'j["work_usec"]')"

out=$(ctl status) || fail "wbtunectl status failed"
[[ -n $out ]] || fail "wbtunectl status printed nothing"
ok "status (text) answers"

# --- devices -----------------------------------------------------------------------------------
out=$(ctl devices --json) || fail "wbtunectl devices --json failed"
check 'sorted(d["bdi"] for d in devices(j)) == ["7:3", "8:0"]' "devices: not exactly 7:3 and 8:0"
check 'dev(j, "7:3")["name"] == "loop3"' "devices: 7:3 is not named loop3"
check 'dev(j, "7:3")["fstype"] == "ext4"' "devices: 7:3 fstype is not ext4"
check 'sorted(dev(j, "7:3")["mounts"]) == ["/mnt/fake3", "/srv/with space"]' \
        "devices: 7:3 mounts are not /mnt/fake3 and '/srv/with space'"
check 'dev(j, "7:3")["major"] == 7 and dev(j, "7:3")["minor"] == 3' "devices: 7:3 major/minor"
check "dev(j, \"7:3\")[\"dirty_bytes\"] == 2048 * $KiB" "devices: 7:3 dirty_bytes is not BdiReclaimable"
check "dev(j, \"7:3\")[\"writeback_bytes\"] == 512 * $KiB" "devices: 7:3 writeback_bytes is not BdiWriteback"
check "dev(j, \"7:3\")[\"thresh_bytes\"] == 609948 * $KiB" "devices: 7:3 thresh_bytes is not BdiDirtyThresh"
check "dev(j, \"7:3\")[\"wb_bw_bytes_per_s\"] == 51200 * $KiB" "devices: 7:3 wb_bw is not the writing (root) wb's WbWriteBandwidth"
check 'dev(j, "7:3")["source"] == "debugfs"' "devices: 7:3 source is not debugfs"
check 'dev(j, "7:3")["knobs"]["max_ratio"] == 100 and dev(j, "7:3")["knobs"]["max_bytes"] == 4997017600' \
        "devices: 7:3 knobs are not the fake ones"
check 'dev(j, "8:0")["knobs"]["max_ratio"] == 50 and dev(j, "8:0")["knobs"]["max_ratio_fine"] == 500000' \
        "devices: 8:0 knobs are not the fake ones"
check 'dev(j, "8:0")["knobs"]["strict_limit"] == 0 and dev(j, "8:0")["knobs"]["min_bytes"] == 0' \
        "devices: 8:0 strict_limit/min_bytes"
check 'dev(j, "8:0")["name"] == "sda" and dev(j, "8:0")["mounts"] == []' "devices: 8:0 is not an unmounted sda"
check '"rotational" in dev(j, "8:0")["traits"] and "rotational" not in dev(j, "7:3")["traits"]' \
        "devices: rotational trait wrong"
ok "devices --json shows the fake devices with the fake files' values"

out=$(ctl show /mnt/fake3 --json 2>&1) || fail "wbtunectl show /mnt/fake3 failed: $out"
json_check "$out" '(j.get("device", j))["bdi"] == "7:3"' || { echo "$out"; fail "show /mnt/fake3 is not 7:3"; }
ok "show finds a device by mount point"

# --- top and history on the fake tree ------------------------------------------------------
# a fake process that dirties: /proc/4242/io grows between ticks (write_bytes at the start of a line)
mkdir -p "$fake/proc/4242"
echo fakedd > "$fake/proc/4242/comm"
fake_io() {
        printf 'rchar: 0\nwchar: %s\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: %s\ncancelled_write_bytes: 4096\n' "$1" "$1" |
                atomic_write "$fake/proc/4242/io"
}
fake_io 0
out=$(ctl status --json) || fail "status --json failed"
check 'j["attribution"]["enabled"] is False and "--root" in j["attribution"]["reason"]' \
        "status: attribution is not off with a --root reason"
check 'j["attribution"]["taskstats"] is False and "--root" in j["attribution"]["taskstats_reason"]' \
        "status: taskstats is not off with a --root reason"
check '"trace_instance" not in j["attribution"] and j["history"]["minutes"] == 15' "status: attribution/history objects"
ls -l "/proc/$daemon/fd" 2>/dev/null | grep -q tracing && fail "the daemon under --root opened a tracefs file"
ok "status: attribution off under --root (no trace instance), history 15 min"
out=$(ctl status) || fail "status failed"
grep -q 'Attribution: off: not on the live system' <<< "$out" || { echo "$out"; fail "status text does not say why attribution is off"; }
ok "status text: $(grep 'Attribution:' <<< "$out" | sed 's/^ *//')"

# rates need two readings of the same pid; full scans run every 5 ticks (200 ms here)
# (for up to 15 s: on a loaded machine the checks below take longer than the 4 s it once ran, and a
# dirtier that stopped more than 5 s ago is rightly no longer listed; it is stopped after them)
for ((i = 1; i <= 150; i++)); do fake_io $((i * 1048576)); sleep 0.1; done &
writer=$!
push_cleanup "kill $writer 2>/dev/null"
poll_top() {
        local i
        for ((i = 0; i < 60; i++)); do
                out=$(ctl top --once --json 2>/dev/null) && json_check "$out" "$1" && return 0
                sleep 0.1
        done
        return 1
}
poll_top 'any(d["pid"] == 4242 and d["comm"] == "fakedd" and d["write_bytes_per_s"] > 0 for d in j["dirtiers"])' ||
        { echo "$out"; fail "top: the fake dirtier 4242 does not show"; }
check 'j["paused"] == [] and j["attribution"]["enabled"] is False' "top: paused tasks or attribution under --root"
check 'set(["global", "devices", "tick_ms", "ticks", "mode", "attribution", "dirtiers", "paused"]) <= set(j)' "top: keys missing"
check 'all("bdi" in d and "knobs" in d for d in j["devices"]) and dev(j, "7:3") is not None' \
        "top: the active device 7:3 (2 MB dirty) is not listed"
ok "top --once --json: fake dirtier 4242 at $(json_get "$out" '[d for d in j["dirtiers"] if d["pid"] == 4242][0]["write_bytes_per_s"]') B/s"
check '0 < j["attribution"]["window_usec"] <= 5000000' "top: the lists' window is not of the last 5 s"
# the lists are of the last 5 s, not of the last tick alone: once listed, the dirtier stays listed, whichever
# tick the next request meets (tests/test-attribution.c checks the window tick by tick)
for ((i = 0; i < 10; i++)); do
        out=$(ctl top --once) || fail "top --once failed"
        grep -q 'fakedd' <<< "$out" && grep -q '^wbtuned top' <<< "$out" || { echo "$out"; fail "top --once text: fakedd not listed"; }
        sleep 0.1
done
[[ $out == *$'\e['* ]] && fail "top --once into a pipe cleared the screen"
ok "top --once prints a text view without escape codes into a pipe"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null

out=$(ctl history --json) || fail "history --json failed"
check 'j["capacity"] == min(15 * 60 * 1000 // 200, (32 << 20) // (48 + 256 * 64)) and len(j["global"]["time_usec"]) >= 2' "history: capacity or global ring"
# each tick with its wall clock (within a minute of now) next to the monotonic time
check 'len(j["global"]["realtime_usec"]) == len(j["global"]["time_usec"]) and abs(j["global"]["realtime_usec"][-1] / 1e6 - __import__("time").time()) < 60' \
        "history: no wall-clock realtime_usec next to time_usec"
check 'j["devices"]["7:3"]["realtime_usec"][-1] == j["global"]["realtime_usec"][-1]' "history: a device's wall clock is not its tick's"
check 'len(j["global"]["dirty_bytes"]) == len(j["global"]["time_usec"])' "history: global columns differ in length"
check '"7:3" in j["devices"] and "8:0" in j["devices"] and "write_bw_bytes_per_s" in j["devices"]["7:3"]' "history: devices"
out=$(ctl history /mnt/fake3 --json) || fail "history /mnt/fake3 --json failed"
check 'list(j["devices"]) == ["7:3"] and j["bdi"] == "7:3"' "history by mount point is not 7:3 alone"
ctl history loop3 --csv > "$tmp/h.csv" || fail "history loop3 --csv failed"
head -n1 "$tmp/h.csv" | grep -q '^realtime_usec,time_usec,global_dirty_bytes,.*,dirty_bytes,writeback_bytes,thresh_bytes,write_bw_bytes_per_s' ||
        { head -n2 "$tmp/h.csv"; fail "history --csv header"; }
[[ $(wc -l < "$tmp/h.csv") -ge 3 ]] || fail "history --csv has fewer than two rows"
awk -F, 'NR > 1 && NF != 12 { exit 1 }' "$tmp/h.csv" || fail "history --csv rows do not have 12 columns"
ctl history --csv | awk -F, 'NR == 1 && NF != 6 { exit 1 }' || fail "history --csv without a device is not 6 global columns"
ctl history nosuch > /dev/null 2> "$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "no history for device 'nosuch'" "$tmp/err" || { cat "$tmp/err"; fail "history nosuch: exit $rc"; }
ok "history --json/--csv: $(($(wc -l < "$tmp/h.csv") - 1)) rows for loop3; unknown device exits 1"

# --- a tick picks up changed counters ---------------------------------------------------
write_stats 7:3 40960 1024
poll devices 5 "dev(j, \"7:3\")[\"dirty_bytes\"] == 40960 * $KiB and dev(j, \"7:3\")[\"writeback_bytes\"] == 1024 * $KiB" ||
        { echo "$out"; fail "a changed stats file was not seen within 5 s"; }
ok "changed debugfs stats seen after a tick"
sed -i 's/^nr_dirty 2560$/nr_dirty 5120/' "$fake/proc/vmstat"
poll status 5 "j[\"global\"][\"dirty_bytes\"] == 5120 * $page" || { echo "$out"; fail "changed vmstat not seen"; }
ok "changed vmstat seen after a tick"

# --- wait, on the fake tree: the mount points are not on this machine, so nothing is synced here ---------
# (tests/test-wait-live.sh waits for a real device's writeback)
ctl wait sda --timeout 1s > "$tmp/wait.out" 2> "$tmp/wait.err"
rc=$?
[[ $rc -eq 5 ]] || { cat "$tmp/wait.out" "$tmp/wait.err"; fail "wait sda --timeout 1s: exit $rc, expected 5"; }
grep -q "^wbtunectl: sda has no mount point: waiting for the kernel's own writeback" "$tmp/wait.err" &&
        grep -Eq '^wbtunectl: sda timed out after 1\.[0-9]s: 2\.5M still dirty or under writeback' "$tmp/wait.err" ||
        { cat "$tmp/wait.err"; fail "wait sda --timeout: the messages"; }
grep -q 'sda  *0% 2.5M left (dirty 2.0M, writeback 512K)' "$tmp/wait.out" || { cat "$tmp/wait.out"; fail "wait sda: the progress lines"; }
ok "wait --timeout: exit 5, $(tail -n1 "$tmp/wait.err")"
write_stats 7:3 1024 0
poll devices 5 "dev(j, \"7:3\")[\"dirty_bytes\"] == 1024 * $KiB" || { echo "$out"; fail "7:3's 1 MiB not seen"; }
ctl wait /mnt/fake3 --json=short > "$tmp/wait.out" 2> "$tmp/wait.err" &
waiter=$!
sleep 1
write_stats 7:3 0 0
wait "$waiter"
rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/wait.out" "$tmp/wait.err"; fail "wait /mnt/fake3: exit $rc once the device was clean"; }
grep -q "^wbtunectl: cannot open /mnt/fake3 to start its writeback (No such file or directory): waiting for the kernel's own writeback of it" \
        "$tmp/wait.err" || { cat "$tmp/wait.err"; fail "wait: no word about the mount point it could not open"; }
"$PYTHON3" -c 'import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["state"] == "writing" and lines[0]["dirty_bytes"] == 1 << 20 and lines[0]["bdi"] == "7:3", lines[0]
assert lines[-1]["state"] == "clean" and lines[-1]["backlog_bytes"] == 0 and not lines[-1]["syncing"], lines[-1]' \
        "$tmp/wait.out" || { cat "$tmp/wait.out"; fail "wait --json=short lines"; }
ok "wait: exit 0 once the device is clean; a mount point it cannot open is said"

# --- hotplug: a bdi appears, then vanishes ------------------------------------------------------
add_bdi 8:16 sdb 100 4997017600
poll devices 5 'dev(j, "8:16") is not None and dev(j, "8:16")["name"] == "sdb"' ||
        { echo "$out"; fail "new bdi 8:16 did not appear"; }
ok "a new bdi appears"
remove_bdi 8:16 sdb
poll devices 5 'dev(j, "8:16") is None and dev(j, "7:3") is not None' || { echo "$out"; fail "removed bdi 8:16 did not vanish"; }
ok "a removed bdi vanishes"
daemon_alive

# --- SIGHUP with a broken config keeps the running one -----------------------------------
cp "$tmp/wbtuned.conf" "$tmp/good.conf"
printf '[daemon]\ntick = banana\n' > "$tmp/wbtuned.conf"
kill -HUP "$daemon"
wait_for_line "$tmp/daemon.err" "$tmp/wbtuned.conf:2" 5 || fail "SIGHUP with a bad config: no file:line error logged"
daemon_alive
out=$(ctl status --json) || fail "status does not answer after a bad reload"
check 'j["tick_ms"] == 200' "a bad reload changed tick_ms"
ok "SIGHUP with a bad config: error logged, still running: $(grep -m1 "$tmp/wbtuned.conf:2" "$tmp/daemon.err")"

# --- SIGHUP with a good config changes the tick -----------------------------------------------
sed 's/^tick = 200ms$/tick = 300ms/' "$tmp/good.conf" > "$tmp/wbtuned.conf"
kill -HUP "$daemon"
poll status 5 'j["tick_ms"] == 300' || { echo "$out"; fail "SIGHUP with tick = 300ms: tick_ms did not change"; }
ok "SIGHUP with a good config: tick 300 ms"
# the ticks counted against the time really passed: no faster than one per 300 ms (a tick or
# so of slack), and still ticking. No lower bound on the rate: a loaded machine (CI, a benchmark
# beside it) delays the daemon's timer, and 8 ticks in 4.25 s failed a run that way.
s0=$(date +%s%N)
t0=$(json_get "$(ctl status --json)" 'j["ticks"]')
sleep 1.5
out=$(ctl status --json)
t1=$(json_get "$out" 'j["ticks"]')
s1=$(date +%s%N)
elapsed_ms=$(((s1 - s0) / 1000000))
[[ $t1 -gt $t0 && $((t1 - t0)) -le $((elapsed_ms / 300 + 1)) ]] ||
        fail "ticks went $t0 -> $t1 in ${elapsed_ms} ms at 300 ms"
ok "ticking at 300 ms ($t0 -> $t1 in 1.5 s)"

# --- wbtunectl reload (root only) ----------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
        sed 's/^tick = 200ms$/tick = 400ms/' "$tmp/good.conf" > "$tmp/wbtuned.conf"
        ctl reload > "$tmp/reload.out" 2>&1 || { cat "$tmp/reload.out"; fail "wbtunectl reload failed"; }
        out=$(ctl status --json)
        check 'j["tick_ms"] == 400' "wbtunectl reload did not apply tick = 400ms"
        ok "wbtunectl reload applies the new config"

        printf '[daemon]\ntick = banana\n' > "$tmp/wbtuned.conf"
        ctl reload > "$tmp/reload.out" 2>&1
        rc=$?
        [[ $rc -ne 0 ]] || fail "wbtunectl reload of a bad config exited 0"
        grep -q "wbtuned.conf:2" "$tmp/reload.out" || { cat "$tmp/reload.out"; fail "reload error does not name wbtuned.conf:2"; }
        out=$(ctl status --json) || fail "status does not answer after a bad wbtunectl reload"
        check 'j["tick_ms"] == 400' "a bad wbtunectl reload changed tick_ms"
        ok "wbtunectl reload of a bad config: exit $rc, $(head -n1 "$tmp/reload.out")"
        cp "$tmp/good.conf" "$tmp/wbtuned.conf"
fi

# --- nothing was written under --root / --dry-run -------------------------------------------
[[ $(knobs_sum) == "$knobs_before" ]] || fail "a knob file under the fake root changed"
ok "no knob written"

# --- SIGTERM: STOPPING=1, exit 0, socket removed ------------------------------------------
kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || fail "SIGTERM: exit $rc"
wait_for_line "$tmp/notify.log" '^STOPPING=1$' 2 || fail "no STOPPING=1"
[[ -e $tmp/ctl ]] && fail "the control socket was not removed"
ok "SIGTERM: STOPPING=1, exit 0, socket removed"

# --- wbtunectl with no daemon: exit 3, one line ---------------------------------------------
ctl status > "$tmp/out" 2> "$tmp/err"
rc=$?
[[ $rc -eq 3 ]] || fail "wbtunectl with no daemon: exit $rc, expected 3"
[[ $(grep -c . "$tmp/err") -eq 1 ]] || { cat "$tmp/err"; fail "wbtunectl with no daemon: not one line"; }
ok "wbtunectl with no daemon: exit 3: $(cat "$tmp/err")"

# --- --root alone (no --dry-run), mode auto: a fake tree is still never written ------------------
sed 's/^mode = observe$/mode = auto/' "$tmp/good.conf" > "$tmp/auto.conf"
write_stats 7:3 204800 8192
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/auto.conf" --quiet > "$tmp/auto.out" 2> "$tmp/auto.err" < /dev/null &
daemon=$!
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/auto.err"; fail "--root in mode auto did not start"; }
sleep 1.5
kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/auto.err"; fail "--root in mode auto: exit $rc on SIGTERM"; }
[[ $(knobs_sum) == "$knobs_before" ]] || fail "--root in mode auto wrote a knob file under the fake root"
ok "--root in mode auto writes nothing"

# --- names an ordinary user controls: escaped in every text output, valid UTF-8 in JSON -----------
# A FUSE mount point can hold any bytes; mountinfo spells some in octal, which devnames.c decodes: here
# an ESC sequence, a newline that would start a forged line, and a byte that is not UTF-8.
cp "$fake/proc/self/mountinfo" "$tmp/mountinfo.saved"
printf '%s\n' '50 27 8:0 / /mnt/evil\033[2J\012forged\377 rw,relatime - fuse.x\033[31m src rw' >> "$fake/proc/self/mountinfo"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run > "$tmp/hostile.out" 2> "$tmp/hostile.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/hostile.err"; fail "the daemon did not start with a hostile mountinfo"; }
sleep 0.5
for verb in devices "show sda" "explain sda" status "top --once"; do
        # shellcheck disable=SC2086
        ctl $verb > "$tmp/hostile.text" || fail "wbtunectl $verb with a hostile mount point failed"
        grep -q $'\e' "$tmp/hostile.text" && { cat -A "$tmp/hostile.text"; fail "$verb put a raw ESC on the terminal"; }
        grep -q '^forged' "$tmp/hostile.text" && { cat "$tmp/hostile.text"; fail "$verb let a mount point forge a line"; }
done
ctl show sda | grep -q 'Mounts: /mnt/evil\\x1b\[2J\\x0aforged' || { ctl show sda; fail "show does not print the mount point escaped"; }
out=$(ctl devices --json) || fail "devices --json with a hostile mount point"
"$PYTHON3" -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8", "strict"))' <<< "$out" ||
        fail "devices --json is not strict UTF-8 JSON with a mount point that is not UTF-8"
check 'dev(j, "8:0")["mounts"] == ["/mnt/evil\x1b[2J\nforged\ufffd"]' "devices --json: the mount point is not the decoded one, U+FFFD for the bad byte"
kill -TERM "$daemon"
wait "$daemon"
grep -q $'\e' "$tmp/hostile.out" && { cat -A "$tmp/hostile.out"; fail "the tick lines put a raw ESC on the terminal"; }
grep -q '^forged' "$tmp/hostile.out" && fail "a mount point forged a tick line"
grep -q 'evil\\x1b\[2J\\x0aforged\\xff' "$tmp/hostile.out" || { cat "$tmp/hostile.out"; fail "the tick lines do not show the mount point escaped"; }
cp "$tmp/mountinfo.saved" "$fake/proc/self/mountinfo"
ok "a hostile mount point: escaped in devices, show, explain, top and the tick lines; U+FFFD in JSON"
# --- a container marker in the tree: observe only, with the reason in status and the log -----------
mkdir -p "$fake/run/systemd"
echo lxc > "$fake/run/systemd/container"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/auto.conf" --quiet > "$tmp/ct.out" 2> "$tmp/ct.err" < /dev/null &
daemon=$!
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/ct.err"; fail "the daemon in a (fake) container did not start"; }
out=$(ctl status --json) || fail "status in a container"
json_check "$out" '"running in a container (lxc, from /run/systemd/container)" in j["observe_only_reason"]' ||
        { echo "$out"; fail "status: no container reason"; }
kill -TERM "$daemon"
wait "$daemon"
rm -r "$fake/run"
grep -q 'Observing only, writing no knob: running in a container (lxc' "$tmp/ct.err" ||
        { cat "$tmp/ct.err"; fail "no log line about the container"; }
ok "container marker: status says why it only observes, and so does the log"

# --- Linux 6.1 (Debian 12): status and explain say what that kernel lets the daemon write ------------
cp -r "$top_srcdir/tests/fake/linux-6.1" "$tmp/root-6.1"
"$WBTUNED" --root "$tmp/root-6.1" --socket "$tmp/ctl" -c "$tmp/auto.conf" --quiet > "$tmp/61.out" 2> "$tmp/61.err" < /dev/null &
daemon=$!
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/61.err"; fail "the daemon on the 6.1 tree did not start"; }
ctl status --no-pager > "$tmp/61.status" || fail "status on 6.1"
# --root means dry-run: status says what auto would write there
grep -q 'Mode: dry-run (on this kernel, auto would write flusher intervals only)$' "$tmp/61.status" ||
        { cat "$tmp/61.status"; fail "6.1: status does not say that only the flusher intervals are written"; }
ctl explain 254:0 --no-pager > "$tmp/61.explain" || fail "explain on 6.1"
grep -q 'max_ratio is 100 % (' "$tmp/61.explain" && ! grep -q 'max_bytes is' "$tmp/61.explain" ||
        { cat "$tmp/61.explain"; fail "6.1: explain does not name max_ratio"; }
kill -TERM "$daemon"
wait "$daemon"
ok "6.1 tree: status says 'flusher intervals only', explain names max_ratio"

# --- stdout a pipe that closes: the daemon stops printing, does not die of SIGPIPE ------------------
mkfifo "$tmp/out.fifo"
head -c 1 < "$tmp/out.fifo" > /dev/null &
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run > "$tmp/out.fifo" 2> "$tmp/pipe.err" < /dev/null &
daemon=$!
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/pipe.err"; fail "the daemon with a piped stdout did not start"; }
sleep 1.5    # several ticks printed into the closed pipe
kill -0 "$daemon" 2>/dev/null || { cat "$tmp/pipe.err"; fail "the daemon died when its stdout closed"; }
ctl status > /dev/null || fail "status after stdout closed"
kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/pipe.err"; fail "after stdout closed: exit $rc on SIGTERM"; }
grep -q 'no longer printing' "$tmp/pipe.err" || { cat "$tmp/pipe.err"; fail "no warning about the closed stdout"; }
ok "stdout closed: a warning, still answering, exit 0 on SIGTERM"

# --- /proc/vmstat without the dirty thresholds: told when it starts and when it ends, not every tick --------
# (--dry-run prints the plan of every tick, which reads the thresholds: 25 ticks without them, then back,
# then away again)
cp "$fake/proc/vmstat" "$tmp/vmstat.saved"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/good.conf" --dry-run > "$tmp/thresh.out" 2> "$tmp/thresh.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
wait_for_socket "$tmp/ctl" 10 || { cat "$tmp/thresh.err"; fail "the daemon did not start"; }
sleep 0.5
grep -v '^nr_dirty_threshold ' "$tmp/vmstat.saved" | atomic_write "$fake/proc/vmstat"
sleep 5                 # 25 ticks at 200 ms
atomic_write "$fake/proc/vmstat" < "$tmp/vmstat.saved"
wait_for_line "$tmp/thresh.err" 'The dirty thresholds read again' 5 || { cat "$tmp/thresh.err"; fail "no line when the thresholds read again"; }
sleep 0.5
grep -v '^nr_dirty_threshold ' "$tmp/vmstat.saved" | atomic_write "$fake/proc/vmstat"
sleep 1.5
kill -0 "$daemon" 2> /dev/null || { cat "$tmp/thresh.err"; fail "the daemon died without the thresholds"; }
kill -TERM "$daemon"
wait "$daemon"
atomic_write "$fake/proc/vmstat" < "$tmp/vmstat.saved"
n_failed=$(grep -c 'Failed to read the dirty thresholds' "$tmp/thresh.err")
n_again=$(grep -c 'The dirty thresholds read again' "$tmp/thresh.err")
[[ $n_failed -eq 2 && $n_again -eq 1 ]] ||
        { sort "$tmp/thresh.err" | uniq -c | sort -rn | head; fail "thresholds missing twice: $n_failed failure lines (not 2) and $n_again 'read again' (not 1)"; }
ok "vmstat without the thresholds, twice: $n_failed lines, and $n_again when they read again: $(grep -m1 'Failed to read the dirty thresholds' "$tmp/thresh.err")"
exit 0
