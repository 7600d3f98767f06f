#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package end to end, for one release: WBTUNED_DEB_SUITE=bookworm (Debian 12, the
# default; `make check`) or trixie (Debian 13; `make check-packages` runs both).
#
# Build: the release tree (`make distdir`, so debian/ must be in the tarball) is built in an overlay
# of that release's cached BUILD rootfs (scripts/rootfs.sh build: minbase + build-essential, nothing
# else installed), in which `apt-get build-dep` installs exactly debian/control's Build-Depends
# (offline, from the .debs the rootfs cached; the container has no network), then
# `dpkg-buildpackage -us -uc -b` runs as a plain user with the unit tests as debian/rules runs them.
# That release's lintian checks the .deb and .changes (no error, no warning), and the unit must be
# where that release's dh_installsystemd enables it from (/lib/systemd/system on 12,
# /usr/lib/systemd/system on 13).
#
# Install: that release's cached rootfs booted with systemd-nspawn (tests/deb-checks.sh inside):
# `apt-get install ./wbtuned_*.deb`, the unit enabled and active, `wbtunectl status`, `systemctl
# reload`, `systemd-analyze security`, stop, purge (nothing left), reinstall, remove, purge. The
# container must not change one host knob: they are compared before, every second while it runs,
# and after. On trixie the hardening score (offline, the same unit file) must be no worse than
# bookworm's systemd gives it.
#
# WBTUNED_DEB_DROP_BUILD_DEP=PKG: the build runs with PKG dropped from a copy of debian/control's
# Build-Depends, and the test passes only if the build then FAILS (proof that the build rootfs holds
# nothing the control file does not name). Nothing is installed then.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in

suite=${WBTUNED_DEB_SUITE:-bookworm}
drop=${WBTUNED_DEB_DROP_BUILD_DEP:-}
case $suite in
bookworm) unitdir=lib/systemd/system ;;
trixie) unitdir=usr/lib/systemd/system ;;
*) fail "WBTUNED_DEB_SUITE=$suite: bookworm or trixie" ;;
esac
TEST_NAME="test-deb.sh[$suite${drop:+ without $drop}]"

[[ $(id -u) -eq 0 ]] || skip "not root: booting a container needs root"
for tool in systemd-nspawn:systemd-container dpkg-deb:dpkg; do
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
failed=0

# --- the release tree ----------------------------------------------------------------------------
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
src=$tmp/src/wbtuned-$version
mkdir "$tmp/src"
make -C "$top_builddir" distdir distdir="$src" top_distdir="$src" > "$tmp/distdir.out" 2>&1 ||
        { tail -n 20 "$tmp/distdir.out"; fail "make distdir failed"; }
[[ -f $src/debian/control ]] || fail "make distdir left debian/ out of the release tree (EXTRA_DIST)"
if [[ -n $drop ]]; then
        # the one line "PKG," (or "PKG" last) of the Build-Depends list goes
        sed -i -E "/^(Build-Depends:)?[[:space:]]+${drop//./\\.}( \([^)]*\))?,?\$/d" "$src/debian/control"
        cmp -s "$top_srcdir/debian/control" "$src/debian/control" &&
                fail "WBTUNED_DEB_DROP_BUILD_DEP=$drop: no Build-Depends line of debian/control is just '$drop,'"
        log "dropped $drop from the Build-Depends: $(diff "$top_srcdir/debian/control" "$src/debian/control" | grep '^<')"
fi

# --- the build rootfs: cached, keyed on the real Build-Depends (so a dropped one reuses it) ---------
t=$SECONDS
rc=0
buildfs=$(bash "$top_srcdir/scripts/rootfs.sh" build "$suite" "$top_srcdir/debian/control" 2> "$tmp/rootfs.err") || rc=$?
[[ $rc -eq 77 ]] && skip "$(tail -n 1 "$tmp/rootfs.err" | sed 's/^rootfs.sh: //')"
cat "$tmp/rootfs.err"
[[ $rc -eq 0 && -d $buildfs ]] || fail "scripts/rootfs.sh build $suite failed (exit $rc)"
log "build rootfs $buildfs ready after $((SECONDS - t)) s"

b=$tmp/build
mount_overlay "$buildfs" "$b"
mkdir "$b/root/build"
cp -a "$src" "$b/root/build/"
cat > "$b/root/build/build.sh" <<'EOF'
#!/bin/bash
# inside the build container, as root; results in /build/*.rc
set -u
cd /build
dpkg-query -W -f='${Package}\n' | sort > before-build-dep.txt
DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-download "./$1" > build-dep.log 2>&1
echo $? > build-dep.rc
dpkg-query -W -f='${Package}\n' | sort > after-build-dep.txt
[[ $(cat build-dep.rc) == 0 ]] || exit 0
chown -R builder: /build
# a plain user, the unit tests as debian/rules has them (DEB_BUILD_OPTIONS without nocheck)
runuser -u builder -- env -C "/build/$1" DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b > build.log 2>&1
echo $? > build.rc
[[ $(cat build.rc) == 0 ]] || exit 0
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-download lintian > lintian-install.log 2>&1
echo $? > lintian-install.rc
runuser -u builder -- lintian --fail-on error,warning -I /build/*.changes > lintian.log 2>&1
echo $? > lintian.rc
EOF
t=$SECONDS
# no network: everything comes from the rootfs's cached .debs
systemd-nspawn -q -D "$b/root" --register=no --keep-unit --pipe --private-network \
        /bin/bash /build/build.sh "wbtuned-$version" < /dev/null > "$tmp/nspawn-build.out" 2>&1 ||
        { cat "$tmp/nspawn-build.out"; fail "the build container failed (systemd-nspawn exit $?)"; }
out=$b/root/build
rcof() { cat "$out/$1.rc" 2> /dev/null || echo missing; }
if [[ $(rcof build-dep) != 0 ]]; then
        tail -n 30 "$out/build-dep.log"
        fail "apt-get build-dep (offline, from the cached .debs) failed (exit $(rcof build-dep))"
fi
log "apt-get build-dep installed $(comm -13 "$out/before-build-dep.txt" "$out/after-build-dep.txt" | wc -l) packages over minbase + build-essential"
if [[ -n $drop ]]; then
        [[ $(rcof build) == missing ]] && fail "the build did not run"
        if [[ $(rcof build) == 0 ]]; then
                fail "WBTUNED_DEB_DROP_BUILD_DEP=$drop: the build succeeded without $drop (Build-Depends names something the build does not need, or the build rootfs has it anyway)"
        fi
        grep -E -m 3 '^configure: error|dpkg-buildpackage: error|^make.*Error' "$out/build.log"
        ok "without $drop in Build-Depends the build fails (dpkg-buildpackage exit $(rcof build), $((SECONDS - t)) s)"
        exit 0
fi
if [[ $(rcof build) != 0 ]]; then
        grep -E '^(FAIL|ERROR|not ok|XPASS)' "$out/build.log"
        tail -n 25 "$out/build.log"
        fail "dpkg-buildpackage -us -uc -b as a plain user failed (exit $(rcof build))"
fi
grep -E '^# (PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$out/build.log" | tr '\n' ' '; echo
grep -q '^# PASS: *[1-9]' "$out/build.log" || fail "the package build ran no unit test (dh_auto_test)"
log "apt-get build-dep + dpkg-buildpackage -us -uc -b (unit tests included): $((SECONDS - t)) s"
debs=("$out"/wbtuned_"$version"_*.deb)
[[ -f ${debs[0]} ]] || fail "no wbtuned_${version}_*.deb in the build: $(ls "$out")"
deb=$tmp/$(basename "${debs[0]}")
cp "${debs[0]}" "$deb"
ok "built $(basename "$deb") on $suite"

[[ $(rcof lintian-install) == 0 ]] || { tail -n 20 "$out/lintian-install.log"; fail "installing lintian from the cache failed"; }
grep -v 'running with root privileges is not recommended' "$out/lintian.log"
if [[ $(rcof lintian) == 0 ]]; then
        ok "$suite's lintian: no error, no warning on the .deb and the .changes"
else
        log "FAIL: $suite's lintian found errors or warnings (exit $(rcof lintian), above)"
        failed=$((failed + 1))
fi

# --- the unit's directory: where this release's dh_installsystemd enables it from ----------------
dpkg-deb -c "$deb" | awk '{ print $NF }' | grep 'wbtuned\.service$' > "$tmp/unit-paths"
if [[ $(cat "$tmp/unit-paths") == "./$unitdir/wbtuned.service" ]]; then
        ok "the unit is /$unitdir/wbtuned.service"
else
        log "FAIL: the .deb has the unit at '$(tr '\n' ' ' < "$tmp/unit-paths")', $suite wants /$unitdir/wbtuned.service"
        failed=$((failed + 1))
fi
if dpkg-deb -I "$deb" postinst 2> /dev/null | grep -q 'deb-systemd-helper enable'; then
        ok "the postinst enables the unit (dh_installsystemd found it)"
else
        log "FAIL: no 'deb-systemd-helper enable' in the postinst: dh_installsystemd missed the unit"
        failed=$((failed + 1))
fi
dpkg-deb -x "$deb" "$tmp/deb-files"
# the guide's plots are installed where its links point (dh_compress may have gzipped the guide)
docdir=$tmp/deb-files/usr/share/doc/wbtuned
guide_text=$(zcat -f "$docdir"/guide.md* 2> /dev/null)
n_images=0
missing_images=
for img in $(grep -oE '!\[[^]]*\]\([^)[:space:]]+\)' <<< "$guide_text" | sed -E 's/.*\(([^)]*)\)$/\1/'); do
        n_images=$((n_images + 1))
        [[ -f $docdir/$img ]] || missing_images+=" $img"
done
if [[ -n $guide_text && $n_images -gt 0 && -z $missing_images ]]; then
        ok "the installed guide's $n_images images are in /usr/share/doc/wbtuned"
else
        log "FAIL: the installed guide (${guide_text:+found}${guide_text:-missing}, $n_images images) lacks:${missing_images:- -}"
        failed=$((failed + 1))
fi
umount "$b/root" && rm -rf --one-file-system "$b"

# --- install, reload, purge, reinstall in that release's booted rootfs ---------------------------
rc=0
t=$SECONDS
rootfs=$(bash "$top_srcdir/scripts/rootfs.sh" base "$suite" 2> "$tmp/rootfs.err") || rc=$?
[[ $rc -eq 77 ]] && skip "$(tail -n 1 "$tmp/rootfs.err" | sed 's/^rootfs.sh: //')"
cat "$tmp/rootfs.err"
[[ $rc -eq 0 && -d $rootfs ]] || fail "scripts/rootfs.sh base $suite failed (exit $rc)"
log "rootfs $rootfs ready after $((SECONDS - t)) s"
nspawn_lock_host
nspawn_overlay
nspawn_checks_unit "$top_srcdir/tests/deb-checks.sh"
cp "$deb" "$tmp/root/wbtuned-e2e/"
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

# --- the hardening score ------------------------------------------------------------------------
online=$(cat "$results/security.online" 2> /dev/null)
offline=$(cat "$results/security.offline" 2> /dev/null)
log "systemd-analyze security on $suite: $online running, $offline offline (0 best, 10 worst)"
echo "$suite online $online offline $offline" > "$top_builddir/test-deb-security-$suite.txt"
if [[ $suite != bookworm ]]; then
        # bookworm's systemd-analyze on the same file, in bookworm's rootfs (read-only)
        rc=0
        bookworm_fs=$(bash "$top_srcdir/scripts/rootfs.sh" base bookworm 2> "$tmp/rootfs.err") || rc=$?
        [[ $rc -eq 0 ]] || { cat "$tmp/rootfs.err"; fail "no bookworm rootfs to compare the score with"; }
        base_score=$(systemd-nspawn -q -D "$bookworm_fs" --register=no --keep-unit --pipe --read-only \
                --setenv=SYSTEMD_COLORS=0 --setenv=SYSTEMD_URLIFY=0 \
                --bind-ro="$tmp/deb-files/$unitdir:/mnt" \
                systemd-analyze security --no-pager --offline=true /mnt/wbtuned.service < /dev/null 2>&1 |
                sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
        [[ -n $base_score && -n $offline ]] || fail "no score (bookworm '$base_score', $suite '$offline')"
        if awk -v a="$offline" -v b="$base_score" 'BEGIN { exit !(a <= b) }'; then
                ok "$suite's score $offline is no worse than bookworm's $base_score (offline, the same unit)"
        else
                log "FAIL: $suite scores the unit $offline, worse than bookworm's $base_score (systemd-analyze security --offline=true)"
                grep -E '✗' "$results/security.txt" | tail -n 40
                failed=$((failed + 1))
        fi
fi

log "total $((SECONDS - started - lock_wait_s)) s without the lock wait (container $boot_s s)"
[[ $failed -eq 0 ]] || fail "$failed checks failed"
exit 0
