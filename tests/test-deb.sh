#!/bin/bash
# The Debian package end to end: builds the .deb from the release tree (`make distdir`, so debian/
# must be in the tarball) with `dpkg-buildpackage -us -uc -b`, checks the .deb and .changes with
# lintian (no error, no warning), then in the cached Debian 12 rootfs booted with systemd-nspawn
# (tests/deb-checks.sh inside): install, the unit active, `wbtunectl status`, purge (unit, conffile,
# state and process gone), reinstall, remove, purge. The container must not change one host knob:
# they are compared before, every second while it runs, and after.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in

[[ $(id -u) -eq 0 ]] || skip "not root: booting a container needs root"
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian systemd-nspawn:systemd-container; do
        command -v "${tool%%:*}" > /dev/null || skip "${tool%%:*} is not installed (apt-get install ${tool#*:})"
done
command -v "$PYTHON3" > /dev/null || skip "python3 not found"
[[ -d /sys/class/bdi ]] || skip "no /sys/class/bdi on this kernel"
# no live-kernel tests in the distcheck pass: not even the rootfs build
[[ ${WBTUNED_SKIP_LIVE:-0} == 1 ]] && skip "WBTUNED_SKIP_LIVE=1: live-kernel tests are off"

tmp=$(mktemp -d /var/tmp/wbtuned-deb.XXXXXX) || fail "mktemp -d"
push_cleanup "rm -rf --one-file-system '$tmp'"
. "$top_srcdir/tests/nspawn-lib.sh"
started=$SECONDS

# --- the package, from the release tree ----------------------------------------------------------
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
src=$tmp/pkg/wbtuned-$version
mkdir "$tmp/pkg"
make -C "$top_builddir" distdir distdir="$src" top_distdir="$src" > "$tmp/distdir.out" 2>&1 ||
        { tail -n 20 "$tmp/distdir.out"; fail "make distdir failed"; }
[[ -f $src/debian/control ]] || fail "make distdir left debian/ out of the release tree (EXTRA_DIST)"
t=$SECONDS
# nocheck: the unit tests the package build would run are part of this same `make check`
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) > "$tmp/build.out" 2>&1 ||
        { tail -n 40 "$tmp/build.out"; fail "dpkg-buildpackage -us -uc -b failed"; }
log "dpkg-buildpackage -us -uc -b: $((SECONDS - t)) s"
debs=("$tmp"/pkg/wbtuned_"$version"_*.deb)
changes=("$tmp"/pkg/wbtuned_"$version"_*.changes)
[[ -f ${debs[0]} && -f ${changes[0]} ]] || fail "no wbtuned_${version}_*.deb and .changes in $tmp/pkg: $(ls "$tmp/pkg")"
ok "built $(basename "${debs[0]}")"

failed=0
# lintian as root warns that it should not run as root: its own line, not a finding
lintian --fail-on error,warning -I "${changes[0]}" > "$tmp/lintian.out" 2>&1
lintian_rc=$?
grep -v 'running with root privileges is not recommended' "$tmp/lintian.out"
if [[ $lintian_rc -eq 0 ]]; then
        ok "lintian: no error, no warning on the .deb and the .changes"
else
        log "FAIL: lintian found errors or warnings (exit $lintian_rc, above)"
        failed=$((failed + 1))
fi

# --- install, purge, reinstall in the container --------------------------------------------------
nspawn_rootfs
nspawn_lock_host
nspawn_overlay
nspawn_checks_unit "$top_srcdir/tests/deb-checks.sh"
cp "${debs[0]}" "$tmp/root/wbtuned-e2e/"
nspawn_boot_watch
host_knobs_snapshot > "$tmp/knobs.after"

nspawn_show_logs_on_failure 60

nspawn_judge_host_knobs
nspawn_results
if grep -q 'Observing only, writing no knob: running in a container' "$results/journal.txt"; then
        ok "the journal says why it only observes"
else
        log "FAIL: no 'Observing only, writing no knob: running in a container' line in the journal"
        failed=$((failed + 1))
fi

log "total $((SECONDS - started - lock_wait_s)) s without the lock wait (container $boot_s s)"
[[ $failed -eq 0 ]] || fail "$failed checks failed"
exit 0
