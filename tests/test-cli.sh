#!/bin/bash
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

expect_exit 3 "wbtunectl status, no daemon" "$WBTUNECTL" --socket "$tmp/none" status
one_line "$tmp/err" "wbtunectl status, no daemon"
expect_exit 3 "wbtunectl devices --json, no daemon" "$WBTUNECTL" --socket "$tmp/none" devices --json
one_line "$tmp/err" "wbtunectl devices --json, no daemon"
[[ -s $tmp/out ]] && fail "wbtunectl with no daemon wrote to stdout"

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
