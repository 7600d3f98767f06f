# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced INSIDE the container by the checks of tests/test-nspawn.sh and tests/test-deb.sh (installed
# beside them as /wbtuned-e2e/helpers.sh): the check lines the host judges, polling, and the finish
# that saves the journal and powers the container off. Expects $out, the results directory.

note() { echo "--- $*"; }
pass() { echo "ok $1" >> "$out/results"; echo "ok $1"; }
flunk() { echo "fail $1: $2" >> "$out/results"; echo "FAIL $1: $2"; }
check() {   # check NAME COMMAND...: pass if the command succeeds
        local name=$1
        shift
        if "$@"; then pass "$name"; else flunk "$name" "$* (exit $?)"; fi
}
check_not() {   # check_not NAME COMMAND...: pass if the command fails
        local name=$1
        shift
        if "$@"; then flunk "$name" "$* succeeded"; else pass "$name"; fi
}
until_ok() {   # until_ok TIMEOUT_S COMMAND...: poll every 0.2 s
        local t=$1 i
        shift
        for ((i = 0; i < t * 5; i++)); do
                "$@" && return 0
                sleep 0.2
        done
        return 1
}
prop() { systemctl show -P "$1" wbtuned.service; }
finish() {
        note "journal"
        journalctl -b --no-pager -o short-monotonic > "$out/journal.txt" 2>&1
        echo 'done' >> "$out/results"
        sync
        systemctl poweroff --no-block
        exit 0
}
trap finish EXIT
