# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers sourced by the shell system tests: skip/fail, a cleanup stack, waiting for things.
# Exit codes follow automake: 0 pass, 77 skip, 99 hard error, anything else fail.

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${WBTUNED:=$top_builddir/src/wbtuned}"
: "${WBTUNECTL:=$top_builddir/src/wbtunectl}"
: "${PYTHON3:=python3}"
export top_srcdir top_builddir WBTUNED WBTUNECTL
# live_opt_in: the first command of every test that touches the live kernel
. "$top_srcdir/tests/live-opt-in.sh"

TEST_NAME=$(basename "$0")

log() { printf '%s: %s\n' "$TEST_NAME" "$*"; }

skip() { log "SKIP: $*"; exit 77; }

fail() { log "FAIL: $*"; exit 1; }

ok() { log "ok: $*"; }

# Cleanup stack: commands run in reverse order on any exit (pass, fail, signal);
# they see the exit status in $_exit_rc.
_cleanup_cmds=()
push_cleanup() { _cleanup_cmds+=("$*"); }
_run_cleanup() {
        _exit_rc=$?
        local i
        set +e
        for ((i = ${#_cleanup_cmds[@]} - 1; i >= 0; i--)); do
                eval "${_cleanup_cmds[$i]}"
        done
        _cleanup_cmds=()
        exit "$_exit_rc"
}
trap _run_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# make_tmpdir [VAR]: a private temporary directory, removed on exit, in $VAR (default: tmp).
# Not "tmp=$(make_tmpdir)": a command substitution's subshell would lose the cleanup.
make_tmpdir() {
        local d
        d=$(mktemp -d "${TMPDIR:-/tmp}/wbtuned-test.XXXXXX") || fail "mktemp -d"
        push_cleanup "rm -rf '$d'"
        printf -v "${1:-tmp}" '%s' "$d"
}

# wait_until TIMEOUT_S COMMAND...: poll COMMAND every 0.1 s until it succeeds; 1 on timeout.
wait_until() {
        local timeout_s=$1 i
        shift
        for ((i = 0; i < timeout_s * 10; i++)); do
                if "$@"; then return 0; fi
                sleep 0.1
        done
        return 1
}

# wait_for_socket PATH [TIMEOUT_S]: until PATH is a socket.
wait_for_socket() {
        wait_until "${2:-10}" test -S "$1"
}

# wait_for_line FILE REGEX [TIMEOUT_S]: until a line of FILE matches the extended REGEX.
wait_for_line() {
        wait_until "${3:-10}" grep -Eq -- "$2" "$1"
}

# Stop a pid we started: SIGTERM, then SIGKILL after 5 s. Never by name.
# start_live_daemon CONFIG_TEXT: wbtuned on the live system with that config and its own socket in $tmp;
# sets $daemon and ctl(), stops it on exit and shows its stderr when the test fails.
start_live_daemon() {
        printf '%s' "$1" > "$tmp/wbtuned.conf"
        "$WBTUNED" -c "$tmp/wbtuned.conf" --socket "$tmp/ctl" --state-dir "$tmp/state" --quiet \
                > "$tmp/daemon.out" 2> "$tmp/daemon.err" < /dev/null &
        daemon=$!
        push_cleanup "stop_pid $daemon"
        push_cleanup '[[ $_exit_rc -ne 0 && $_exit_rc -ne 77 ]] && { echo "--- daemon stderr"; cat "$tmp/daemon.err"; }'
        wait_for_socket "$tmp/ctl" 10 || fail "the daemon did not open its socket"
        ctl() { "$WBTUNECTL" --socket "$tmp/ctl" "$@"; }
}

stop_pid() {
        local pid=$1 i
        kill -0 "$pid" 2>/dev/null || return 0
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 50; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 0
}

# Python helpers for wbtunectl --json output: j is the reply's "result" when it is wrapped,
# devices(j) the device list, dev(j, "7:3") one device by bdi name (None if absent).
_JSON_PRELUDE='import json, sys
def unwrap(j):
    if isinstance(j, dict) and "result" in j and "ok" in j:
        return j["result"]
    return j
def devices(j):
    j = unwrap(j)
    if isinstance(j, dict) and "devices" in j:
        j = j["devices"]
    return j
def dev(j, bdi):
    for d in devices(j):
        if d.get("bdi") == bdi:
            return d
    return None
j = unwrap(json.loads(sys.argv[1]))
'

# json_get JSON_TEXT PYEXPR: print PYEXPR evaluated on the document (see the helpers above).
json_get() {
        "$PYTHON3" -c "$_JSON_PRELUDE"'
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1" "$2"
}

# json_check JSON_TEXT PYEXPR: true if PYEXPR is truthy.
json_check() {
        "$PYTHON3" -c "$_JSON_PRELUDE"'
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
}

require_binaries() {
        [[ -x $WBTUNED ]] || fail "$WBTUNED not built"
        [[ -x $WBTUNECTL ]] || fail "$WBTUNECTL not built"
        command -v "$PYTHON3" >/dev/null || skip "python3 not found"
}

# Tests that change or compare the live kernel's global knobs: run one at a time (make check
# runs tests in parallel), only when opted in (live_opt_in, their first command, checks it again).
live_test_begin() {
        live_opt_in
        live_lock
        # a daemon under test mounts debugfs and tracefs where nobody has (and tracefs comes up under
        # debugfs when read): leave the machine as it was found, after everything else is undone (the
        # first cleanup runs last)
        if ! mountpoint -q /sys/kernel/debug; then
                push_cleanup "! mountpoint -q /sys/kernel/debug || umount -R /sys/kernel/debug"
        fi
        if ! mountpoint -q /sys/kernel/tracing; then
                push_cleanup "! mountpoint -q /sys/kernel/tracing || umount /sys/kernel/tracing"
        fi
}

# make_loop_fs NAME SIZE: an ext4 file system on a loop device of our own, mounted, all undone on exit.
# The backing file is in a private directory under /var/tmp (not a tmpfs), and the loop device does
# direct I/O, so a blkio throttle on it slows the kernel's writeback. Sets work, loop, majmin and mnt.
make_loop_fs() {
        work=$(mktemp -d "/var/tmp/wbtuned-$1.XXXXXX") || fail "mktemp"
        push_cleanup "rm -rf '$work'"
        truncate -s "$2" "$work/img" || skip "cannot create a backing file"
        loop=$(losetup --find --show --direct-io=on "$work/img" 2>/dev/null) || skip "no loop device"
        push_cleanup "losetup -d '$loop'"
        majmin=$(cat "/sys/block/${loop#/dev/}/dev")
        mkfs.ext4 -q "$loop" || fail "mkfs.ext4 $loop"
        mnt=$work/mnt
        mkdir "$mnt" && mount "$loop" "$mnt" || fail "mount $loop"
        push_cleanup "mountpoint -q '$mnt' && umount '$mnt'"
}

# The one lock every live-kernel test, benchmark and soak takes (the dirty pool is global:
# two at once spoil each other). wbbench started under it sees WBTUNED_LIVE_LOCK_HELD=1.
WBTUNED_LIVE_LOCK=${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}
live_lock() {
        [[ ${WBTUNED_LIVE_LOCK_HELD:-0} == 1 ]] && return 0
        exec 9> "$WBTUNED_LIVE_LOCK" || fail "cannot open the live-kernel lock $WBTUNED_LIVE_LOCK"
        if ! flock -n 9; then
                echo "waiting for the live-kernel lock $WBTUNED_LIVE_LOCK (another live test or benchmark runs)"
                flock 9 || fail "cannot take the live-kernel lock $WBTUNED_LIVE_LOCK"
        fi
        export WBTUNED_LIVE_LOCK_HELD=1
}

# mount_overlay LOWER DIR: DIR/root, a writable overlay of LOWER (DIR/upper, DIR/work), unmounted on exit.
mount_overlay() {
        mkdir -p "$2/upper" "$2/work" "$2/root"
        mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/root" 2> "$tmp/overlay.err" ||
                fail "cannot mount an overlay of $1: $(cat "$tmp/overlay.err")"
        push_cleanup "! mountpoint -q '$2/root' || umount '$2/root' 2>/dev/null || umount -l '$2/root'"
}
