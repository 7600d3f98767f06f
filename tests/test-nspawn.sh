#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# End to end under a real systemd (252, Debian 12) booted with systemd-nspawn: wbtuned installed as
# a package would install it, driven through the shipped unit by tests/nspawn-checks.sh inside.
# Checks: the unit's container condition; enable --now with a STATUS line; wbtunectl as root and as
# a plain user; a writer shown by top; reload good and broken (fails, file:line, old config kept);
# the watchdog restarts a hung daemon; stop ends inactive, not failed; metrics_textfile in a directory
# ProtectSystem=strict leaves read-only is one journal line with the fix, and written with that
# ReadWritePaths= drop-in. And the container must not change one host knob: every /proc/sys/vm file
# and per-BDI limit is compared before and after.
#
# The Debian rootfs is cached under /var/cache/wbtuned-test (scripts/rootfs.sh builds it once,
# ~1 min); each run boots an overlay of it, so runs never change the cache.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in

[[ $(id -u) -eq 0 ]] || skip "not root: booting a container needs root"
command -v systemd-nspawn > /dev/null || skip "systemd-nspawn is not installed (apt-get install systemd-container)"
[[ -d /sys/class/bdi ]] || skip "no /sys/class/bdi on this kernel"
command -v "$PYTHON3" > /dev/null || skip "python3 not found"
# the package build below is a second, out-of-tree build of the sources
[[ -e $top_srcdir/config.status ]] && skip "$top_srcdir is configured in place; this test needs an out-of-tree build (scripts/test.sh builds in build/)"
# no live-kernel tests in the distcheck pass: not even the rootfs build
[[ ${WBTUNED_SKIP_LIVE:-0} == 1 ]] && skip "WBTUNED_SKIP_LIVE=1: live-kernel tests are off"

tmp=$(mktemp -d /var/tmp/wbtuned-nspawn.XXXXXX) || fail "mktemp -d"
push_cleanup "rm -rf --one-file-system '$tmp'"
mkdir "$tmp/build"
. "$top_srcdir/tests/nspawn-lib.sh"

started=$SECONDS
nspawn_rootfs
nspawn_lock_host
nspawn_overlay

# --- install as a package would: configure for /usr and /etc, make install DESTDIR= --------------
t=$SECONDS
(cd "$tmp/build" && "$top_srcdir/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var > configure.out 2>&1 &&
 make -j2 > make.out 2>&1 && make install DESTDIR="$tmp/root" > install.out 2>&1) ||
        { tail -n 30 "$tmp"/build/*.out; fail "building or installing the package failed"; }
for f in /usr/sbin/wbtuned /usr/bin/wbtunectl /etc/wbtuned.conf /usr/lib/systemd/system/wbtuned.service; do
        [[ -e $tmp/root$f ]] || fail "make install did not install $f"
done
log "built and installed into the rootfs in $((SECONDS - t)) s"

# the checks, from an enabled unit
nspawn_checks_unit "$top_srcdir/tests/nspawn-checks.sh"
nspawn_boot_watch
host_knobs_snapshot > "$tmp/knobs.after"

nspawn_show_logs_on_failure 80

# --- judge ---------------------------------------------------------------------------------------
failed=0
# 1. the host's knobs, then the checks' own results
nspawn_judge_host_knobs
nspawn_results

# 2. what the daemon answered, judged here (python3 is on the host, not in the container)
json=$results/json
jcheck() {   # jcheck NAME FILE PYEXPR
        local name=$1 file=$2 expr=$3
        if [[ -s $file ]] && json_check "$(cat "$file")" "$expr"; then
                ok "$name"
        else
                log "FAIL: $name: $expr is false in $file"
                json_get "$(cat "$file" 2> /dev/null || echo '{}')" '{k: v for k, v in j.items() if k in ("mode", "observe_only_reason", "tick_ms", "attribution", "dirtiers", "paused")}' 2>&1 | head -c 1500
                failed=$((failed + 1))
        fi
}
jcheck "status: mode observe in a container" "$json/status.json" 'j["mode"] == "observe"'
jcheck "status: the reason names the container" "$json/status.json" \
        '"container" in (j.get("observe_only_reason") or "") and "systemd-nspawn" in j["observe_only_reason"]'
jcheck "devices: at least one backing device" "$json/devices.json" 'len(devices(j)) > 0'
jcheck "top: the plain user's dd is among the dirtiers" "$json/top.json" \
        'any(d.get("comm") == "dd" and d.get("write_bytes_per_s", 0) > 0 for d in j.get("dirtiers", []))'
jcheck "top as a plain user answers" "$json/top.user.json" '"dirtiers" in j'
jcheck "reload: the good drop-in took effect (tick 500 ms)" "$json/status.reloaded.json" 'j["tick_ms"] == 500'
jcheck "reload: the broken drop-in left the old config (tick 500 ms)" "$json/status.after-broken.json" 'j["tick_ms"] == 500'
if grep -q 'Observing only, writing no knob: running in a container' "$results/journal.txt"; then
        ok "the journal says why it only observes"
else
        log "FAIL: no 'Observing only, writing no knob: running in a container' line in the journal"
        failed=$((failed + 1))
fi

log "total $((SECONDS - started - lock_wait_s)) s without the lock wait (container $boot_s s)"
[[ $failed -eq 0 ]] || fail "$failed checks failed"
exit 0
