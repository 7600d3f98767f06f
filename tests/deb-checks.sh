#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs INSIDE the container booted by tests/test-deb.sh, from an enabled unit, under systemd as PID 1
# (the release the package was built for): installs the built wbtuned .deb with `apt-get install
# ./x.deb`, reloads it, scores its hardening, purges, reinstalls and removes it, and records what
# happened in $out (ok/fail lines, apt's and dpkg's output, the security scores, the journal) for the
# host to judge. Then powers the container off.
set -u
out=/wbtuned-e2e
exec > "$out/log" 2>&1

# note, pass, flunk, check, check_not, until_ok, prop; finish on exit
. "$out/helpers.sh"

# The knobs as the container sees them (the host's, read-only here): the exact ones, not the
# *_bytes forms the kernel recomputes from the moving global threshold.
knobs() {
        local f
        for f in /proc/sys/vm/dirty_* /sys/class/bdi/*/{min_ratio,max_ratio,min_ratio_fine,max_ratio_fine,strict_limit}; do
                [[ -f $f ]] && printf '%s %s\n' "$f" "$(cat "$f")"
        done
}
# dpkg_step NAME ARGS...: dpkg with ARGS, its output kept in $out/NAME.txt
dpkg_step() {
        local name=$1
        shift
        note "dpkg $*"
        dpkg "$@" > "$out/$name.txt" 2>&1
        local rc=$?
        cat "$out/$name.txt"
        check "$name" test $rc -eq 0
}
# apt_step NAME ARGS...: apt-get with ARGS, its output kept in $out/NAME.txt
apt_step() {
        local name=$1
        shift
        note "apt-get $*"
        DEBIAN_FRONTEND=noninteractive apt-get -y -q "$@" > "$out/$name.txt" 2>&1
        local rc=$?
        cat "$out/$name.txt"
        check "$name" test $rc -eq 0
}
# score ARGS...: the overall exposure systemd-analyze security gives (0.0 best .. 10.0 worst)
score() {
        systemd-analyze security --no-pager "$@" 2>&1 | tee -a "$out/security.txt" |
                sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
}
installed() { [[ $(dpkg-query -W -f='${Status}' wbtuned 2> /dev/null) == 'install ok installed' ]]; }
answers() { wbtunectl status > /dev/null 2>&1; }
# every trace of the package is gone: files, enablement, runtime state, process
check_gone() {   # check_gone WHEN
        local w=$1
        check_not "$w-not-installed" installed
        check "$w-unit-file-gone" test ! -e /lib/systemd/system/wbtuned.service -a ! -e /usr/lib/systemd/system/wbtuned.service
        check "$w-unit-not-found" test "$(prop LoadState)" = not-found
        check "$w-not-enabled" test ! -e /etc/systemd/system/multi-user.target.wants/wbtuned.service
        check "$w-conffile-gone" test ! -e /etc/wbtuned.conf
        check "$w-state-gone" test ! -e /run/wbtuned
        check_not "$w-no-process" pgrep -x wbtuned
        check "$w-binaries-gone" test ! -e /usr/sbin/wbtuned -a ! -e /usr/bin/wbtunectl
}

deb=$(ls /wbtuned-e2e/wbtuned_*.deb)
note "systemd $(systemctl --version | head -n 1), virtualization $(systemd-detect-virt), $deb"
echo "startup" > "$out/results"
knobs > "$out/knobs.before"

# 1. The shipped unit: the package installs, enables it and starts it, and in a container
#    ConditionVirtualization=!container skips the start; the install still succeeds. apt installs
#    the file with the runtime libraries the rootfs has (no lists, no network needed).
apt_step install-shipped install "$deb"
check installed installed
check enabled test "$(systemctl is-enabled wbtuned.service)" = enabled
check started-by-postinst test "$(prop ConditionTimestampMonotonic)" != 0
check shipped-unit-skipped-in-container test "$(prop ConditionResult)" = no -a "$(prop ActiveState)" = inactive
check conffile sh -c "dpkg-query -W -f='\${Conffiles}\n' wbtuned | grep -q '^ /etc/wbtuned.conf '"
for f in /usr/sbin/wbtuned /usr/bin/wbtunectl /usr/share/man/man8/wbtuned.8.gz /usr/share/man/man8/wbtunectl.8.gz \
         /usr/share/man/man5/wbtuned.conf.5.gz /usr/share/bash-completion/completions/wbtunectl \
         /usr/share/zsh/vendor-completions/_wbtunectl /usr/share/doc/wbtuned/copyright; do
        check "ships-$f" test -s "$f"
done
check runs /usr/sbin/wbtuned --version
check config-valid /usr/sbin/wbtuned --check-config
# systemd's dpkg trigger on /usr/lib/systemd/catalog rebuilt the catalog: the events are known
id=$(grep -m 1 -oE '^-- [0-9a-f]{32}$' /usr/lib/systemd/catalog/wbtuned.catalog | cut -c4-)
catalog_knows() { [[ -n $id ]] && journalctl --list-catalog | grep -q "^$id "; }
check catalog-installed catalog_knows
dpkg_step purge-shipped --purge wbtuned
check_gone purged-unstarted

# 2. Past the condition (a test-only drop-in, the admin's file: no package owns it), the daemon's
#    own container test keeps it observe-only. Now the package's install starts it.
mkdir -p /etc/systemd/system/wbtuned.service.d
printf '# tests/test-deb.sh only\n[Unit]\nConditionVirtualization=\n' > /etc/systemd/system/wbtuned.service.d/50-e2e-test.conf
systemctl daemon-reload
apt_step install install "$deb"
check active until_ok 20 systemctl is-active -q wbtuned.service
systemctl status --no-pager wbtuned.service > "$out/status.txt" 2>&1
check systemctl-status test $? -eq 0
check wbtunectl-status until_ok 10 answers
wbtunectl --json status > "$out/status.json" 2>&1
check observe-only grep -q '"mode": "observe"' "$out/status.json"
pid=$(prop MainPID)
reloaded() { grep -q 'eloaded' <(journalctl -b -u wbtuned.service --no-pager -o cat); }
check reload systemctl reload wbtuned.service
check reload-journal until_ok 10 reloaded
check reload-same-process test "$(prop MainPID)" = "$pid"
check reload-still-active systemctl is-active -q wbtuned.service
check reload-wbtunectl-status until_ok 10 answers
# the hardening, as this release's systemd scores the running unit and the file
unit=$(dpkg -L wbtuned | grep '/systemd/system/wbtuned.service$')
echo "$unit" > "$out/unit-path"
s=$(score wbtuned.service)
echo "$s" > "$out/security.online"
check security-online test -n "$s"
s=$(score --offline=true "$unit")
echo "$s" > "$out/security.offline"
check security-offline test -n "$s"
check stop systemctl stop wbtuned.service
check stopped-inactive test "$(prop ActiveState)" = inactive
check_not stopped-no-process pgrep -x wbtuned

# 3. Purge a running daemon: its stop (the prerm) restores; every trace goes.
dpkg_step purge --purge wbtuned
check purge-no-saved-warning sh -c "! grep -q 'is still there' '$out/purge.txt'"
check_gone purged

# 4. Reinstall: active again, answers.
apt_step reinstall install "$deb"
check reinstalled-active until_ok 20 systemctl is-active -q wbtuned.service
check reinstalled-wbtunectl-status until_ok 10 answers

# 5. Remove keeps the conffile; a list of originals left behind (a daemon that could not restore)
#    is shown by the prerm, which writes no knob. Then purge.
systemctl stop wbtuned.service
check stopped test "$(prop ActiveState)" = inactive
echo "not a saved file" > /run/wbtuned/saved
apt_step remove remove wbtuned
check remove-warns-of-saved grep -q '/run/wbtuned/saved is still there' "$out/remove.txt"
check remove-keeps-conffile test -s /etc/wbtuned.conf
dpkg_step purge-removed --purge wbtuned
check_gone purged-removed
rm -r /etc/systemd/system/wbtuned.service.d
systemctl daemon-reload

# 6. The knobs, as the container saw them before the first install
knobs > "$out/knobs.after"
check container-knobs-unchanged diff "$out/knobs.before" "$out/knobs.after"
