#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Command lines of wbtuned and wbtunectl: help, version, bad usage (2), no daemon (3), non-root.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries

make_tmpdir tmp

# expect_exit CODE NAME COMMAND...: run, check the exit code; stdout/stderr in $tmp/out, $tmp/err.
expect_exit() {
        local want=$1 name=$2 rc
        shift 2
        "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
        rc=$?
        if [[ $rc -ne $want ]]; then
                echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
                fail "$name: exit $rc, expected $want"
        fi
        ok "$name: exit $rc"
}

# one_line FILE NAME: FILE holds exactly one non-empty line.
one_line() {
        local n
        n=$(grep -c . "$1")
        [[ $n -eq 1 ]] || { cat "$1"; fail "$2: expected one line, got $n"; }
}

for bin in "$WBTUNED" "$WBTUNECTL"; do
        b=$(basename "$bin")
        expect_exit 0 "$b --help" "$bin" --help
        grep -q -- --help "$tmp/out" || fail "$b --help does not describe its options"
        [[ -s $tmp/err ]] && fail "$b --help wrote to stderr"
        expect_exit 0 "$b -h" "$bin" -h
        expect_exit 0 "$b --version" "$bin" --version
        grep -Eq "^$b [0-9]+\.[0-9]+" "$tmp/out" || { cat "$tmp/out"; fail "$b --version: no '$b X.Y'"; }
        expect_exit 2 "$b --no-such-option" "$bin" --no-such-option
        [[ -s $tmp/err ]] || fail "$b --no-such-option: no message on stderr"
        [[ -s $tmp/out ]] && fail "$b --no-such-option wrote to stdout"
done

expect_exit 2 "wbtuned stray argument" "$WBTUNED" stray
[[ -s $tmp/err ]] || fail "wbtuned stray argument: no message"
expect_exit 2 "wbtuned --socket relative" "$WBTUNED" --socket relative/path --dry-run
[[ -s $tmp/err ]] || fail "wbtuned --socket relative: no message"
expect_exit 2 "wbtuned -c without argument" "$WBTUNED" -c

expect_exit 2 "wbtunectl unknown verb" "$WBTUNECTL" --socket "$tmp/none" frobnicate
[[ -s $tmp/err ]] || fail "wbtunectl unknown verb: no message"
one_line "$tmp/err" "wbtunectl unknown verb"

# --- the command line, systemd style --------------------------------------------------------
for bad in "--json=yes" "--timeout=0" "--timeout=5x" "-t -1" "--list=bogus"; do
        # shellcheck disable=SC2086
        expect_exit 2 "wbtunectl $bad" "$WBTUNECTL" --socket "$tmp/none" $bad status
        one_line "$tmp/err" "wbtunectl $bad"
done
for good in "--json" "-j" "--json=pretty" "--json=short" "--json=off" "-t 500ms" "--timeout=5s" "-t 5" "--no-pager" \
            "--no-legend"; do
        # shellcheck disable=SC2086
        expect_exit 3 "wbtunectl $good (no daemon)" "$WBTUNECTL" --socket "$tmp/none" $good status
done
expect_exit 0 "wbtunectl --list=verbs" "$WBTUNECTL" --list=verbs
for v in status devices show explain top wait history plot reload restore; do
        grep -qx "$v" "$tmp/out" || fail "--list=verbs does not list $v"
        grep -Eq "^  $v( |\$)" <(sed 's/^  \([a-z]*\).*/  \1/' <("$WBTUNECTL" --help)) || fail "--help does not list $v"
done
expect_exit 0 "wbtunectl --list=options" "$WBTUNECTL" --list=options
for o in --socket= --json --timeout= --no-pager --no-legend --once --csv --output= --list= --help --version; do
        grep -qxF -- "$o" "$tmp/out" || fail "--list=options does not list $o"
        grep -qF -- "${o%=}" <("$WBTUNECTL" --help) || fail "--help does not describe ${o%=}"
done
ok "--json=MODE, --timeout with units, --no-pager, --no-legend, --list: parsed; bad values refused"

# -t: the time the daemon may send nothing; "500ms" gives up after half a second
"$PYTHON3" -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(60)' "$tmp/mute.sock" &
mute=$!
push_cleanup "stop_pid $mute"
wait_for_socket "$tmp/mute.sock" 10 || fail "the mute socket did not start"
start=$(date +%s%N)
expect_exit 3 "wbtunectl -t 500ms, a daemon that never answers" "$WBTUNECTL" --socket "$tmp/mute.sock" -t 500ms status
ms=$((($(date +%s%N) - start) / 1000000))
grep -q 'sent nothing for 500 ms' "$tmp/err" || { cat "$tmp/err"; fail "-t 500ms: no message"; }
[[ $ms -ge 450 && $ms -lt 3000 ]] || fail "-t 500ms gave up after $ms ms"
expect_exit 3 "wbtunectl -t 1 (seconds)" "$WBTUNECTL" --socket "$tmp/mute.sock" -t 1 status
grep -q 'sent nothing for 1000 ms' "$tmp/err" || { cat "$tmp/err"; fail "-t 1: not a second"; }
ok "-t 500ms gave up after $ms ms; a bare -t 1 is a second"

expect_exit 3 "wbtunectl status, no daemon" "$WBTUNECTL" --socket "$tmp/none" status
one_line "$tmp/err" "wbtunectl status, no daemon"
expect_exit 3 "wbtunectl devices --json, no daemon" "$WBTUNECTL" --socket "$tmp/none" devices --json
one_line "$tmp/err" "wbtunectl devices --json, no daemon"
[[ -s $tmp/out ]] && fail "wbtunectl with no daemon wrote to stdout"

# --- replies wbtunectl must survive: a fake daemon answers with canned lines ------------------
replies=$tmp/replies
mkdir -p "$replies"
"$PYTHON3" "$top_srcdir/tests/fake_daemon.py" "$tmp/fake.sock" "$replies" --timeout 120 &
fake_pid=$!
push_cleanup "stop_pid $fake_pid"
wait_for_socket "$tmp/fake.sock" 10 || fail "the fake daemon did not start"
fake() { "$WBTUNECTL" --socket "$tmp/fake.sock" "$@"; }

# canned REPLY VERB JSON: the fake daemon's next answers to VERB
canned() { printf '%s' "$2" > "$replies/$1"; }

# survive NAME WANT_EXIT STDERR_REGEX WBTUNECTL_ARGS...: no crash, the exit code, a message naming the problem
survive() {
        local name=$1 want=$2 regex=$3
        shift 3
        expect_exit "$want" "$name" "$WBTUNECTL" --socket "$tmp/fake.sock" "$@"
        grep -Eq -- "$regex" "$tmp/err" || { cat "$tmp/err"; fail "$name: stderr does not match /$regex/"; }
        one_line "$tmp/err" "$name"
}

# Replies that lack a field or have one of the wrong type: a clear error naming the field, exit 3,
# never a crash (these were segfaults, exit 139) and never a 0 read in the field's place.
canned show '{"version":2,"ok":true,"result":{"device":{"bdi":"7:0","knobs":5}}}'
survive "show with \"knobs\": 5" 3 'reply to show .*result\.device\.(has_devnum|name|knobs)' show x
canned explain '{"version":2,"ok":true,"result":{}}'
survive "explain with an empty result" 3 'reply to explain .*result\.(bdi|text).*missing' explain x
canned history '{"version":2,"ok":true,"result":{}}'
survive "history --csv with an empty result" 3 'reply to history .*result\.tick_ms: missing' history --csv
command -v gnuplot >/dev/null && survive "plot with an empty result" 3 'reply to history .*missing' plot -o "$tmp/x.png"
canned status '{"version":2,"ok":true,"result":{"pid":1}}'
survive "status without most fields" 3 'reply to status .*result\.package_version: missing' status
canned devices '{"version":2,"ok":true,"result":{"devices":[{"bdi":5}]}}'
survive "devices with a number for a name" 3 'result\.devices\[0\]\.bdi: a string expected, got a number' devices
canned devices '{"version":2,"ok":true,"result":{"devices":{}}}'
survive "devices with an object for the list" 3 'result\.devices: an array expected' devices
canned top '{"version":2,"ok":true,"result":[]}'
survive "top with an array for a result" 3 'reply to top .*result' top --once
canned status '{"version":1,"ok":true,"result":{}}'
survive "a daemon of another protocol version" 3 'protocol version 1, this wbtunectl version 2' status
canned status '{"ok":true,"result":{}}'
survive "a daemon that sends no version" 3 'no protocol "version"' status
canned status '{"version":2,"ok":false}'
survive "an error without a message" 3 'without an "error" and "errno"' status
canned status '{"version":2,"ok":false,"error":"bad \u001b[2J\u009bthing","errno":"EIO"}'
survive "an error with control characters" 1 'status: bad \\x1b\[2J\\u009bthing$' status
grep -q $'\e' "$tmp/err" && fail "an error message put a raw ESC on the terminal"

# A reply that is right, with names that are not: escaped on output, so nothing can clear the
# screen, change colours or forge a line.
"$PYTHON3" - "$replies" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
hostile = "evil\x1b[2J\nforged line\u009b31m\u202e"
knob = {"knob": "max_bytes", "unit": "bytes", "supported": True, "current": 1048576, "desired": 524288,
        "policy": 1048576, "reason": "why " + hostile, "clamp": "guard " + hostile,
        "original": {"file": "max_ratio_fine", "value": 1000000, "unit": "ppm"}, "state": "managed",
        "note": "note " + hostile}
device = {"bdi": "7:0", "has_devnum": True, "major": 7, "minor": 0, "name": hostile, "alias": hostile,
          "fstype": hostile, "mounts": ["/mnt/" + hostile], "model": hostile, "traits": [], "knobs": {},
          "source": "debugfs", "dirty_bytes": 0, "writeback_bytes": 0, "thresh_bytes": 0,
          "dirtied_total_bytes": 0, "written_total_bytes": 0, "kernel_bw_bytes_per_s": 0,
          "wb_bw_bytes_per_s": 0, "write_bw_bytes_per_s": 0, "dirty_rate_bytes_per_s": 0,
          "backlog_bytes": 0, "backlog_s": 1e300, "seen_before": True, hostile: hostile,
          "tuning": {"managed": True, "active": True, "bw_estimate_bytes_per_s": 0, "knobs": [knob]}}
def reply(result):
    return json.dumps({"version": 2, "ok": True, "result": result})
open(os.path.join(d, "devices"), "w").write(reply({"devices": [device]}))
open(os.path.join(d, "show"), "w").write(reply({"device": device}))
# the text is the daemon's own lines (it escapes the names it puts in them): only its newlines stay
open(os.path.join(d, "explain"), "w").write(reply({"bdi": "7:0", "text": "line one evil\x1b[2J\u009b31m\nline two\n",
                                                   "device": device, "tuning": {"knobs": [knob]}}))
PYEOF
for verb in devices "show x" "explain x"; do
        # shellcheck disable=SC2086
        expect_exit 0 "$verb with hostile names" "$WBTUNECTL" --socket "$tmp/fake.sock" $verb
        grep -q $'\e' "$tmp/out" && { cat -A "$tmp/out"; fail "$verb put a raw ESC on the terminal"; }
        grep -q $'\xc2\x9b' "$tmp/out" && fail "$verb put a raw C1 CSI on the terminal"
        grep -q '^forged line' "$tmp/out" && { cat "$tmp/out"; fail "$verb let a newline in a name forge a line"; }
        grep -q 'evil\\x1b\[2J\\x0aforged line\\u009b31m\\u202e' "$tmp/out" || { cat "$tmp/out"; fail "$verb does not show the name escaped"; }
done
ok "names with control characters, newlines and bidi overrides are shown escaped"
# --json: the same names as \u escapes (json-c writes DEL, C1 and bidi raw); the strings read back unchanged
for mode in --json --json=short; do
        expect_exit 0 "devices $mode with hostile names" "$WBTUNECTL" --socket "$tmp/fake.sock" devices $mode
        grep -q $'\xc2\x9b\|\xe2\x80\xae\|\x7f' "$tmp/out" && { cat -A "$tmp/out"; fail "devices $mode put a raw C1, DEL or bidi control out"; }
        grep -q 'forged line\\u009b31m\\u202e' "$tmp/out" || { cat "$tmp/out"; fail "devices $mode does not \\u-escape C1 and bidi"; }
        "$PYTHON3" -c 'import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
sys.exit(d["name"] != "evil\x1b[2J\nforged line\u009b31m\u202e")' "$tmp/out" || fail "devices $mode: the name does not read back"
done
ok "--json: C1 controls and bidi overrides in strings as \\u escapes, the strings unchanged"

# --- no verb is status; --json modes; --no-legend ------------------------------------------------
canned status '{"version":2,"ok":false,"error":"canned status","errno":"EIO"}'
expect_exit 1 "wbtunectl without a verb" "$WBTUNECTL" --socket "$tmp/fake.sock"
grep -qx 'wbtunectl: status: canned status' "$tmp/err" || { cat "$tmp/err"; fail "no verb did not ask for status"; }
expect_exit 0 "devices --json=short" "$WBTUNECTL" --socket "$tmp/fake.sock" devices --json=short
one_line "$tmp/out" "devices --json=short"
"$PYTHON3" -c 'import json, sys; json.load(open(sys.argv[1]))["devices"][0]["bdi"] == "7:0" or sys.exit(1)' "$tmp/out" ||
        fail "devices --json=short is not the reply's result"
expect_exit 0 "devices --json (pretty)" "$WBTUNECTL" --socket "$tmp/fake.sock" devices --json
[[ $(wc -l < "$tmp/out") -gt 10 ]] || fail "devices --json is not indented"
expect_exit 0 "devices --json=off" "$WBTUNECTL" --socket "$tmp/fake.sock" devices --json=off
grep -q '^BDI ' "$tmp/out" || fail "devices --json=off is not the table"
expect_exit 0 "devices --no-legend" "$WBTUNECTL" --socket "$tmp/fake.sock" devices --no-legend
one_line "$tmp/out" "devices --no-legend"
grep -q '^7:0 ' "$tmp/out" || { cat "$tmp/out"; fail "devices --no-legend: not just the row"; }
ok "no verb asks for status; --json=short/pretty/off; --no-legend leaves the header out"

# --- pager and colours, on a terminal (script(1) gives one) ---------------------------------------
if command -v script >/dev/null; then
        # on_tty CMD...: run under a pseudo-terminal (stdin from /dev/null); output in $tmp/tty
        on_tty() {
                script -qec "$(printf '%q ' "$@")" /dev/null < /dev/null > "$tmp/tty" 2>&1
        }
        export PAGER='sed s/^/PAGED:/'
        unset SYSTEMD_PAGER SYSTEMD_COLORS NO_COLOR LESS SYSTEMD_LESS
        on_tty "$WBTUNECTL" --socket "$tmp/fake.sock" devices
        grep -q '^PAGED:BDI ' "$tmp/tty" || { cat -A "$tmp/tty"; fail "devices on a terminal did not go through \$PAGER"; }
        on_tty "$WBTUNECTL" --socket "$tmp/fake.sock" --no-pager devices
        grep -q 'PAGED:' "$tmp/tty" && fail "--no-pager still paged"
        grep -q '^BDI ' "$tmp/tty" || { cat -A "$tmp/tty"; fail "--no-pager printed no table"; }
        "$WBTUNECTL" --socket "$tmp/fake.sock" devices | grep -q 'PAGED:' && fail "paged into a pipe"
        on_tty env SYSTEMD_PAGER='sed s/^/SYSTEMD:/' "$WBTUNECTL" --socket "$tmp/fake.sock" devices
        grep -q '^SYSTEMD:BDI ' "$tmp/tty" || { cat -A "$tmp/tty"; fail "\$SYSTEMD_PAGER is not preferred to \$PAGER"; }
        on_tty env PAGER='printf "LESS=%s\n" "$LESS"; cat >/dev/null' "$WBTUNECTL" --socket "$tmp/fake.sock" show x
        grep -q '^LESS=FRSXMK' "$tmp/tty" || { cat -A "$tmp/tty"; fail "the pager did not get LESS=FRSXMK"; }
        on_tty env PAGER=cat "$WBTUNECTL" --socket "$tmp/fake.sock" devices
        grep -q '^BDI ' "$tmp/tty" || { cat -A "$tmp/tty"; fail "PAGER=cat: no table"; }
        on_tty "$WBTUNECTL" --socket "$tmp/fake.sock" top --once
        grep -q 'PAGED:' "$tmp/tty" && fail "top was paged"
        ok "pager: \$SYSTEMD_PAGER, \$PAGER with LESS=FRSXMK on a terminal; not with --no-pager, into a pipe, or for top"

        # Under sudo the pager runs as root: as systemd, secure mode, so the user's $PAGER/$SYSTEMD_PAGER does
        # not run and less gets LESSSECURE=1 (no !cmd, |cmd, v). A fake less in front of PATH shows what it got.
        mkdir -p "$tmp/fakebin"
        printf '#!/bin/sh\necho "FAKELESS LESSSECURE=${LESSSECURE-unset}"\ncat >/dev/null\n' > "$tmp/fakebin/less"
        chmod +x "$tmp/fakebin/less"
        for var in PAGER SYSTEMD_PAGER; do
                rm -f "$tmp/pager-ran"
                on_tty env PATH="$tmp/fakebin:$PATH" SUDO_UID=1000 "$var=touch $tmp/pager-ran; cat" \
                        "$WBTUNECTL" --socket "$tmp/fake.sock" devices
                [[ -e $tmp/pager-ran ]] && { cat -A "$tmp/tty"; fail "under SUDO_UID, \$$var ran as the pager"; }
                grep -q '^FAKELESS LESSSECURE=1' "$tmp/tty" || { cat -A "$tmp/tty"; fail "under SUDO_UID ($var set), less did not run with LESSSECURE=1"; }
        done
        on_tty env PATH="$tmp/fakebin:$PATH" PKEXEC_UID=1000 "$WBTUNECTL" --socket "$tmp/fake.sock" devices
        grep -q '^FAKELESS LESSSECURE=1' "$tmp/tty" || { cat -A "$tmp/tty"; fail "under PKEXEC_UID, less did not get LESSSECURE=1"; }
        # the user's explicit word is kept, as systemd: SYSTEMD_PAGERSECURE=0 runs their pager, not secure
        on_tty env SUDO_UID=1000 SYSTEMD_PAGERSECURE=0 PAGER='printf "LESSSECURE=%s\n" "${LESSSECURE-unset}"; cat >/dev/null' \
                "$WBTUNECTL" --socket "$tmp/fake.sock" devices
        grep -q '^LESSSECURE=unset' "$tmp/tty" || { cat -A "$tmp/tty"; fail "SYSTEMD_PAGERSECURE=0 under sudo: \$PAGER did not run as asked"; }
        ok "pager under SUDO_UID/PKEXEC_UID: \$PAGER and \$SYSTEMD_PAGER ignored, less with LESSSECURE=1; SYSTEMD_PAGERSECURE=0 obeyed"

        # The real less, if installed: "!touch FILE" typed at its prompt under SUDO_UID must not run.
        if [[ -x /usr/bin/less ]]; then
                rm -f "$tmp/bang"
                env -u PAGER -u SYSTEMD_PAGER SUDO_UID=1000 SYSTEMD_LESS= TERM=xterm PATH=/usr/bin:/bin \
                        "$PYTHON3" - "$tmp/bang" "$WBTUNECTL" --socket "$tmp/fake.sock" devices > "$tmp/bang.log" 2>&1 <<'PYEOF' ||
import fcntl, os, pty, select, signal, struct, sys, termios, time
target, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
seen = b""
def until(pats, timeout):
    global seen
    end = time.time() + timeout
    while time.time() < end:
        if any(p in seen for p in pats):
            return True
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                return False
    return False
ok = until([b"(END)", b"END"], 15)
os.write(fd, b"!touch " + target.encode() + b"\r")
until([b"not available", b"done"], 10)
time.sleep(0.3)
os.write(fd, b"\r")
time.sleep(0.3)
os.write(fd, b"q")
for _ in range(50):
    p, _ = os.waitpid(pid, os.WNOHANG)
    if p:
        break
    time.sleep(0.1)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(0 if ok else 1)
PYEOF
                        { cat -A "$tmp/bang.log"; fail "less under SUDO_UID never showed its prompt"; }
                [[ -e $tmp/bang ]] && { cat -A "$tmp/bang.log"; fail "under SUDO_UID, !touch typed at less's prompt ran a command"; }
                ok "the real less under SUDO_UID: !touch FILE typed at its prompt does not run"
        else
                log "less is not installed: the typed !cmd check is skipped"
        fi

        # colour for warnings only: an overridden knob's state
        "$PYTHON3" - "$replies" <<'PYEOF'
import json, os, sys
knob = {"knob": "max_bytes", "unit": "bytes", "supported": True, "current": 1, "desired": None, "policy": None,
        "reason": "set by hand", "clamp": None, "original": None, "state": "override", "note": None}
device = {"bdi": "7:0", "has_devnum": False, "name": "loop0", "fstype": "", "mounts": [], "model": "", "traits": [],
          "knobs": {}, "source": "debugfs", "dirty_bytes": 0, "writeback_bytes": 0, "thresh_bytes": 0,
          "dirtied_total_bytes": 0, "written_total_bytes": 0, "kernel_bw_bytes_per_s": 0, "wb_bw_bytes_per_s": 0,
          "write_bw_bytes_per_s": 0, "dirty_rate_bytes_per_s": 0, "backlog_bytes": 0, "backlog_s": 0,
          "seen_before": True, "tuning": {"managed": True, "active": True, "bw_estimate_bytes_per_s": 0, "knobs": [knob]}}
open(os.path.join(sys.argv[1], "show"), "w").write(json.dumps({"version": 2, "ok": True, "result": {"device": device}}))
PYEOF
        warn=$'\e[1;33moverride\e[0m'
        on_tty "$WBTUNECTL" --socket "$tmp/fake.sock" --no-pager show x
        grep -qF "$warn" "$tmp/tty" || { cat -A "$tmp/tty"; fail "a terminal: the override is not in colour"; }
        [[ $(grep -o $'\e\[[0-9;]*m' "$tmp/tty" | sort -u | tr -d '
') == $'\e[0m\e[1;33m' ]] ||
                { cat -A "$tmp/tty"; fail "colours other than the warning's"; }
        for env in NO_COLOR=1 SYSTEMD_COLORS=0 TERM=dumb; do
                on_tty env "$env" "$WBTUNECTL" --socket "$tmp/fake.sock" --no-pager show x
                grep -q $'\e\[1;33m' "$tmp/tty" && { cat -A "$tmp/tty"; fail "$env: still in colour"; }
                grep -q 'override' "$tmp/tty" || fail "$env: no table"
        done
        "$WBTUNECTL" --socket "$tmp/fake.sock" show x | grep -q $'\e' && fail "colour into a pipe"
        SYSTEMD_COLORS=1 "$WBTUNECTL" --socket "$tmp/fake.sock" show x | grep -qF "$warn" || fail "SYSTEMD_COLORS=1 does not force colour"
        ok "colour: warnings only, on a terminal; NO_COLOR, SYSTEMD_COLORS=0 and TERM=dumb turn it off"
        unset PAGER
else
        log "no script(1): the pager and colour checks are skipped"
fi

# plot: neither the daemon's BDI name nor the -o path may become gnuplot code
if command -v gnuplot >/dev/null; then
        csv='time_usec,global_dirty_bytes,global_writeback_bytes,global_dirty_thresh_bytes,global_background_thresh_bytes,dirty_bytes,writeback_bytes,thresh_bytes,write_bw_bytes_per_s,dirty_rate_bytes_per_s,max_bytes\n1000000,1,2,3,4,5,6,7,8,9,10\n2000000,1,2,3,4,5,6,7,8,9,10\n'
        bdi="x';system('touch $tmp/pwned-bdi');print '\\nsystem('touch $tmp/pwned-line')"
        printf '{"version":2,"ok":true,"result":{"tick_ms":1000,"minutes":15,"bdi":"%s","csv":"%s"}}' \
                "$bdi" "$csv" > "$replies/history"
        # a file name without a slash in its odd part, written in $tmp
        out_png="o';system('touch pwned-out');print '.png"
        expect_exit 0 "plot with a hostile BDI name and -o path" \
                bash -c 'cd "$1" && exec "$2" --socket "$1/fake.sock" plot x -o "$3"' - "$tmp" "$WBTUNECTL" "$out_png"
        for f in pwned-bdi pwned-line pwned-out; do
                [[ -e $tmp/$f ]] && fail "plot ran gnuplot code from the daemon's reply or the -o path ($f)"
        done
        [[ -s $tmp/$out_png ]] || fail "plot did not write the PNG under its exact (odd) name"
        # quotes, a newline and a " |" after a space: a file of that name, in the current directory
        for out_png in $'q\'u"o\nte.png' ' |touch pwned-space #.png'; do
                expect_exit 0 "plot -o with quotes, a newline or ' |'" \
                        bash -c 'cd "$1" && exec "$2" --socket "$1/fake.sock" plot x -o "$3"' - "$tmp" "$WBTUNECTL" "$out_png"
                [[ -s $tmp/$out_png ]] || fail "plot did not write the PNG under its exact name ($out_png)"
        done
        [[ -e $tmp/pwned-space ]] && fail "plot -o ' |touch ...': gnuplot ran the name as a command"
        ok "plot: the BDI name and the -o path stay data (gnuplot $(gnuplot --version | awk '{print $2}'))"
else
        log "gnuplot is not installed: the plot injection check is skipped"
fi
# -o '|cmd' is a pipe to gnuplot's "set output": refused before anything runs (with gnuplot installed or not)
expect_exit 2 "plot -o '|touch ...'" "$WBTUNECTL" --socket "$tmp/fake.sock" plot x -o "|touch $tmp/pwned-pipe #.png"
grep -q 'starts with "|"' "$tmp/err" || { cat "$tmp/err"; fail "plot -o '|...': the message does not say why"; }
one_line "$tmp/err" "plot -o '|...'"
[[ -e $tmp/pwned-pipe ]] && fail "plot -o '|touch ...' ran the command"
expect_exit 2 "plot -o ''" "$WBTUNECTL" --socket "$tmp/fake.sock" plot x -o ""
ok "plot: -o '|command' and an empty -o are refused (exit 2)"

# --- non-root ---------------------------------------------------------------------------
if [[ $(id -u) -ne 0 ]]; then
        skip "not root: cannot switch to nobody for the non-root checks (the rest passed)"
fi
if command -v setpriv >/dev/null; then
        as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
elif command -v runuser >/dev/null; then
        as_nobody=(runuser -u nobody --)
else
        skip "neither setpriv nor runuser to run as nobody (the rest passed)"
fi
[[ -d /sys/class/bdi ]] || skip "no /sys/class/bdi on this kernel (the rest passed)"

# The build tree may sit in a directory nobody cannot enter: copy what nobody runs and reads.
pub=$tmp/pub
mkdir -p "$pub/sock"
cp "$WBTUNED" "$pub/wbtuned"
cat > "$pub/wbtuned.conf" <<EOF
[daemon]
tick = 200ms
EOF
chmod 755 "$tmp" "$pub" "$pub/wbtuned"
chmod 644 "$pub/wbtuned.conf"
chown 65534:65534 "$pub/sock"

expect_exit 1 "non-root wbtuned without --dry-run" \
        "${as_nobody[@]}" "$pub/wbtuned" -c "$pub/wbtuned.conf" --socket "$pub/sock/ctl"
one_line "$tmp/err" "non-root refusal"
grep -qi root "$tmp/err" || fail "non-root refusal does not say root is needed"
[[ -e $pub/sock/ctl ]] && fail "non-root refusal left a socket"

# --dry-run is allowed without root: it starts and answers.
"${as_nobody[@]}" "$pub/wbtuned" -c "$pub/wbtuned.conf" --socket "$pub/sock/ctl" --dry-run --quiet \
        > "$tmp/nobody.out" 2> "$tmp/nobody.err" < /dev/null &
pid=$!
push_cleanup "stop_pid $pid"
wait_for_socket "$pub/sock/ctl" 10 || { cat "$tmp/nobody.err"; fail "non-root --dry-run did not open its socket"; }
expect_exit 0 "wbtunectl status against a non-root --dry-run daemon" "$WBTUNECTL" --socket "$pub/sock/ctl" status --json
json_check "$(cat "$tmp/out")" 'j["dry_run"] is True' || { cat "$tmp/out"; fail "status does not say dry_run"; }
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/nobody.err"; fail "non-root --dry-run daemon exited $rc on SIGTERM"; }
ok "non-root --dry-run runs and stops cleanly"
exit 0
