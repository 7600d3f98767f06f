#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Prometheus metrics end to end on a fake tree: `wbtunectl metrics` passes `promtool check metrics` with
# thousands of devices (streamed, far over what one reply may hold) and a FUSE mount whose names hold
# every character the format escapes; the daemon writes the same text atomically to a textfile that
# node_exporter's textfile collector serves; a failing textfile is logged once; the file goes at stop.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

promtool=$(command -v promtool)
node_exporter=$(command -v prometheus-node-exporter || command -v node_exporter)
[[ -n $promtool && -n $node_exporter ]] ||
        skip "promtool and node_exporter are not installed (apt-get install prometheus prometheus-node-exporter; scripts/deps.sh does)"

make_tmpdir tmp
chmod 755 "$tmp"             # node_exporter reads the textfile as an unprivileged user below
fake=$tmp/root
n=4000

# n plain BDIs (every 10th one holding dirty data) and a FUSE mount (anonymous device 0:77) whose source
# and mount point hold every character the format escapes.
"$PYTHON3" "$top_srcdir/tests/make_fake_tree.py" "$fake" "$n" --hostile-fuse
[[ -d $fake/sys/class/bdi ]] || fail "could not build the fake tree"

# --- the sample alerting rules of doc/metrics.md: valid, and they fire when they should ------------------
mkdir "$tmp/rules"
awk '/^## Sample alerting rules/ { f = 1 } f && /^```yaml/ { y = 1; next } y && /^```/ { exit } y' \
        "$top_srcdir/doc/metrics.md" > "$tmp/rules/rules.yml"
[[ -s $tmp/rules/rules.yml ]] || fail "no yaml block under \"Sample alerting rules\" in doc/metrics.md"
cp "$top_srcdir/tests/data/metrics-alerts.test.yml" "$tmp/rules/"
"$promtool" check rules "$tmp/rules/rules.yml" > "$tmp/rules.out" 2>&1 || { cat "$tmp/rules.out"; fail "promtool check rules"; }
(cd "$tmp/rules" && "$promtool" test rules metrics-alerts.test.yml) > "$tmp/rules.out" 2>&1 ||
        { cat "$tmp/rules.out"; fail "promtool test rules: the sample alerts of doc/metrics.md"; }
ok "doc/metrics.md's sample alerting rules: $(grep -c -- '- alert:' "$tmp/rules/rules.yml") rules, promtool check and test rules pass"

mkdir -m 755 "$tmp/prom"
textfile=$tmp/prom/wbtuned.prom
printf '[daemon]\ntick = 1s\nmetrics_textfile = %s\nmetrics_interval = 1s\n' "$textfile" > "$tmp/wbtuned.conf"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/wbtuned.conf" --dry-run --quiet \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
push_cleanup '[[ $_exit_rc -ne 0 && $_exit_rc -ne 77 ]] && { echo "--- daemon stderr"; tail -20 "$tmp/daemon.err"; }'
wait_for_socket "$tmp/ctl" 30 || fail "the daemon did not start on $n BDIs"
ctl() { "$WBTUNECTL" --socket "$tmp/ctl" --timeout 30000 "$@"; }
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$daemon/status"; }

# --- wbtunectl metrics: promtool's lint, streamed past the limit of one reply ----------------------------
ctl status > /dev/null || fail "status"
hwm0=$(hwm)
ctl metrics > "$tmp/metrics.prom" || fail "wbtunectl metrics with $n BDIs failed"
hwm1=$(hwm)
size=$(stat -c %s "$tmp/metrics.prom")
(( size > 4 << 20 )) || fail "only $size bytes of metrics for $n BDIs: not the case a single reply cannot hold"
"$promtool" check metrics < "$tmp/metrics.prom" > "$tmp/promtool.out" 2>&1 ||
        { head -20 "$tmp/promtool.out"; fail "promtool check metrics refused wbtunectl metrics"; }
[[ -s $tmp/promtool.out ]] && { head -20 "$tmp/promtool.out"; fail "promtool check metrics has remarks"; }
ok "wbtunectl metrics: $size bytes for $n BDIs, promtool check metrics clean"
# a copy of the figures and one family at a time, not the whole text (about 6 MB here)
(( hwm1 - hwm0 < 8192 )) || fail "the daemon's peak memory grew by $((hwm1 - hwm0)) kB answering $size bytes"
ok "the daemon's peak memory grew by $((hwm1 - hwm0)) kB"

grep -c '^wbtuned_device_dirty_bytes{' "$tmp/metrics.prom" > "$tmp/count"
[[ $(cat "$tmp/count") -eq $((n + 1)) ]] || fail "wbtuned_device_dirty_bytes has $(cat "$tmp/count") series, not $((n + 1))"
grep -qx 'wbtuned_device_dirty_bytes{bdi="200:10",device="200:10",mount="",fstype=""} 2097152' "$tmp/metrics.prom" ||
        fail "no wbtuned_device_dirty_bytes of 200:10 (2 MiB dirty)"
for family in wbtuned_info wbtuned_ticks_total wbtuned_tick_duration_seconds wbtuned_dirty_bytes \
        wbtuned_knob_writes_total wbtuned_guard_holds_total wbtuned_device_backlog_seconds wbtuned_knob_value \
        wbtuned_knob_state; do
        [[ $(grep -c "^# TYPE $family " "$tmp/metrics.prom") -eq 1 ]] || fail "not one TYPE line for $family"
done
# attribution is off under --root: its counters are left out, not shown as 0
grep -q '^wbtuned_trace_events_total' "$tmp/metrics.prom" && fail "trace counters shown while attribution is off"
# the escapes (the text, into a pipe, is exact: a raw ESC stays)
grep -qF 'mount="/mnt/ev\"il\\x\nforged'$'\e''[2J'$'\xef\xbf\xbd''",fstype="fuse.sshfs"' "$tmp/metrics.prom" ||
        { grep 0:77 "$tmp/metrics.prom" | head -3; fail "the FUSE mount point is not escaped as the format says"; }
ok "$((n + 1)) device series, one TYPE per family, the hostile mount point escaped"

# the two requests are answered from figures of one tick each: a tick between them changes the counters,
# so take the pair again (a few times at most) until both come from the same tick
same=
for ((try = 0; try < 5; try++)); do
        ctl metrics > "$tmp/metrics-pair.prom" || fail "wbtunectl metrics"
        ctl metrics --json > "$tmp/metrics.json" || fail "wbtunectl metrics --json"
        if "$PYTHON3" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if "".join(j["text"]) == open(sys.argv[2], encoding="utf-8", errors="surrogateescape").read() else 1)' \
                "$tmp/metrics.json" "$tmp/metrics-pair.prom"; then
                same=1
                break
        fi
done
[[ -n $same ]] || fail "the pieces of --json, joined, are not the text wbtunectl metrics prints (5 tries)"
ok "metrics --json: its pieces, joined, are the text"

# --- the textfile, through node_exporter ---------------------------------------------------------------
wait_until 10 test -s "$textfile" || fail "no $textfile within 10 s at metrics_interval = 1s"
"$promtool" check metrics < "$textfile" > "$tmp/promtool.out" 2>&1 && [[ ! -s $tmp/promtool.out ]] ||
        { head -20 "$tmp/promtool.out"; fail "promtool check metrics refused $textfile"; }
[[ $(stat -c %a "$textfile") == 644 ]] || fail "$textfile is mode $(stat -c %a "$textfile"), not 644"
[[ $(ls -A "$tmp/prom") == wbtuned.prom ]] || fail "the textfile directory holds more than wbtuned.prom: $(ls -A "$tmp/prom")"
ok "textfile: $(stat -c %s "$textfile") bytes, mode 644, promtool check metrics clean, no temporary file left"

as_user=()
[[ $(id -u) -eq 0 ]] && as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
for attempt in 1 2 3; do
        port=$("$PYTHON3" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "${as_user[@]}" "$node_exporter" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
                --collector.textfile --collector.textfile.directory="$tmp/prom" > "$tmp/ne.log" 2>&1 &
        ne=$!
        push_cleanup "stop_pid $ne"
        wait_for_line "$tmp/ne.log" 'Listening on' 10 && sleep 0.2 && kill -0 "$ne" 2>/dev/null && break
        stop_pid "$ne"
        [[ $attempt -eq 3 ]] && { cat "$tmp/ne.log"; fail "node_exporter did not start"; }
done
"$PYTHON3" - "http://127.0.0.1:$port/metrics" "$n" <<'EOF' || fail "node_exporter does not serve wbtuned's metrics (log: $(tail -3 "$tmp/ne.log"))"
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=30).read().decode("utf-8")
n = int(sys.argv[2])
def labels(s):
    out, i = {}, 0
    while i < len(s):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', s[i:])
        name, i, v = m.group(1), i + m.end(), []
        while s[i] != '"':
            if s[i] == "\\":
                i += 1
                v.append({"n": "\n", "\\": "\\", '"': '"'}[s[i]])
            else:
                v.append(s[i])
            i += 1
        out[name], i = "".join(v), i + 2
    return out
samples = {}
for line in text.splitlines():
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
    if m:
        samples.setdefault(m.group(1), []).append((labels(m.group(3) or ""), float(m.group(4))))
assert samples["node_textfile_scrape_error"][0][1] == 0, "node_exporter could not read the textfile"
assert len(samples["wbtuned_device_dirty_bytes"]) == n + 1, "not every device"
fuse = [l for l, v in samples["wbtuned_device_dirty_bytes"] if l["bdi"] == "0:77"][0]
assert fuse["mount"] == '/mnt/ev"il\\x\nforged\x1b[2J\ufffd', repr(fuse)
assert fuse["device"] == 'fuse.sshfs us"er@h\\x\nforged' and fuse["fstype"] == "fuse.sshfs", repr(fuse)
assert samples["wbtuned_ticks_total"][0][1] >= 1
print("node_exporter: %d wbtuned series, the FUSE device's labels read back as the kernel has them"
      % sum(len(v) for k, v in samples.items() if k.startswith("wbtuned_")))
EOF
ok "scraped through node_exporter's textfile collector (as ${as_user[*]:-this user})"

# --- the file goes when the daemon stops ---------------------------------------------------------------
kill -TERM "$daemon"
wait "$daemon"
rc=$?
[[ $rc -eq 0 ]] || fail "SIGTERM: exit $rc"
[[ -e $textfile ]] && fail "$textfile is left after the daemon stopped"
ok "the textfile is removed at stop"

# --- a textfile that cannot be written: logged once, not at every interval; then written --------------------
printf '[daemon]\ntick = 200ms\nmetrics_textfile = %s/nodir/wbtuned.prom\nmetrics_interval = 1s\n' "$tmp" > "$tmp/bad.conf"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/bad.conf" --dry-run --quiet \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
wait_for_socket "$tmp/ctl" 30 || fail "the daemon did not start"
sleep 3.5
n_logged=$(grep -c 'Failed to write the metrics file' "$tmp/daemon.err")
[[ $n_logged -eq 1 ]] || { cat "$tmp/daemon.err"; fail "a failing textfile was logged $n_logged times in 3.5 s, not once"; }
grep -q "nodir/wbtuned.prom: No such file or directory" "$tmp/daemon.err" || fail "the message does not name the file and the error"
mkdir "$tmp/nodir"
wait_until 5 test -s "$tmp/nodir/wbtuned.prom" || fail "the textfile was not written once its directory exists"
wait_for_line "$tmp/daemon.err" 'Writing the metrics file .* again' 5 || fail "no notice that the textfile is written again"
ok "a failing textfile: $(grep -m1 'Failed to write the metrics file' "$tmp/daemon.err")"
stop_pid "$daemon"

# --- a directory others can write: refused (they could swap in a symbolic link), once; then written ---------
mkdir -m 775 "$tmp/shared"
printf '[daemon]\ntick = 200ms\nmetrics_textfile = %s/shared/wbtuned.prom\nmetrics_interval = 1s\n' "$tmp" > "$tmp/shared.conf"
"$WBTUNED" --root "$fake" --socket "$tmp/ctl" -c "$tmp/shared.conf" --dry-run --quiet \
        > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
daemon=$!
push_cleanup "stop_pid $daemon"
wait_for_socket "$tmp/ctl" 30 || fail "the daemon did not start"
sleep 2.5
n_logged=$(grep -c 'Failed to write the metrics file' "$tmp/daemon.err")
[[ $n_logged -eq 1 ]] || { cat "$tmp/daemon.err"; fail "a group-writable textfile directory was logged $n_logged times, not once"; }
grep -q "shared/wbtuned.prom: $tmp/shared is writable by others (mode 0775)" "$tmp/daemon.err" ||
        { cat "$tmp/daemon.err"; fail "the message does not name the file, the directory and its mode"; }
[[ -z $(ls -A "$tmp/shared") ]] || fail "files made in a directory others can write: $(ls -A "$tmp/shared")"
chmod 755 "$tmp/shared"
wait_until 5 test -s "$tmp/shared/wbtuned.prom" || fail "the textfile was not written once the directory is 0755"
ok "a textfile directory others can write: $(grep -m1 'Failed to write the metrics file' "$tmp/daemon.err")"
exit 0
