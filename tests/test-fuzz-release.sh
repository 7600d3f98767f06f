#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every libFuzzer harness (tests/fuzz/fuzz-*.c) built and run on one Debian release, with that
# release's own clang and libFuzzer against its json-c (and the rest of the Build-Depends): a newer
# json-c's parser and serializer may differ where the unit-test fixtures do not look.
#   tests/test-fuzz-release.sh SUITE     (bookworm or trixie; `make check-packages` runs both)
#
# In an overlay of that release's cached package-build rootfs (scripts/rootfs.sh build, as
# tests/test-deb.sh uses it), with the network (apt to the Debian mirror): apt-get build-dep of the
# release tree (`make distdir`), apt-get install clang libclang-rt-dev (Debian's default clang of
# that release and its libFuzzer), then as a plain user ../configure && make fuzz-build, and
# tests/fuzz/run.sh FUZZ_TEST_SECONDS (20) for each harness. Prints the versions (json-c, clang) and
# run.sh's PASS/FAIL line per harness; fails if one fails, or one was not built. A failing run's
# logs, artifacts and harness binaries are kept in $top_builddir/fuzz-release-SUITE/ with the
# command that replays a crash in that release's runtime rootfs (scripts/rootfs.sh base SUITE).
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in

suite=${1:-${WBTUNED_DEB_SUITE:-bookworm}}
case $suite in
bookworm | trixie) ;;
*) fail "suite $suite: bookworm or trixie" ;;
esac
seconds=${FUZZ_TEST_SECONDS:-20}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || fail "FUZZ_TEST_SECONDS=$seconds: a number of seconds"
TEST_NAME="test-fuzz-release.sh[$suite]"

[[ $(id -u) -eq 0 ]] || skip "not root: the build container needs root"
command -v systemd-nspawn > /dev/null || skip "systemd-nspawn is not installed (apt-get install systemd-container)"
[[ ${WBTUNED_SKIP_LIVE:-0} == 1 ]] && skip "WBTUNED_SKIP_LIVE=1: live-kernel tests are off"
harnesses=()
for f in "$top_srcdir"/tests/fuzz/fuzz-*.c; do
        [[ -f $f ]] && harnesses+=("$(basename "$f" .c)")
done
[[ ${#harnesses[@]} -gt 0 ]] || fail "no tests/fuzz/fuzz-*.c in $top_srcdir"

tmp=$(mktemp -d /var/tmp/wbtuned-fuzz-release.XXXXXX) || fail "mktemp -d"
push_cleanup "rm -rf --one-file-system '$tmp'"
started=$SECONDS

# --- the release tree ----------------------------------------------------------------------------
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
[[ -n $version ]] || fail "no PACKAGE_VERSION in $top_builddir/Makefile (configure first)"
src=$tmp/src/wbtuned-$version
mkdir "$tmp/src"
make -C "$top_builddir" distdir distdir="$src" top_distdir="$src" > "$tmp/distdir.out" 2>&1 ||
        { tail -n 20 "$tmp/distdir.out"; fail "make distdir failed"; }
for h in "${harnesses[@]}"; do
        [[ -f $src/tests/fuzz/$h.c ]] || fail "make distdir left tests/fuzz/$h.c out of the release tree"
done

# --- the build rootfs (cached; the same one tests/test-deb.sh builds the package in) --------------
t=$SECONDS
rc=0
buildfs=$(bash "$top_srcdir/scripts/rootfs.sh" build "$suite" "$top_srcdir/debian/control" 2> "$tmp/rootfs.err") || rc=$?
[[ $rc -eq 77 ]] && skip "$(tail -n 1 "$tmp/rootfs.err" | sed 's/^rootfs.sh: //')"
cat "$tmp/rootfs.err"
[[ $rc -eq 0 && -d $buildfs ]] || fail "scripts/rootfs.sh build $suite failed (exit $rc)"
log "build rootfs $buildfs ready after $((SECONDS - t)) s"

t=$SECONDS
live_lock
lock_wait_s=$((SECONDS - t))
[[ $lock_wait_s -gt 0 ]] && log "waited $lock_wait_s s for the live-kernel lock"

b=$tmp/build
mount_overlay "$buildfs" "$b"
mkdir "$b/root/build"
cp -a "$src" "$b/root/build/"
cat > "$b/root/build/fuzz.sh" <<'EOF'
#!/bin/bash
# inside the build container, as root; results in /build/*.rc, /build/versions
set -u
cd /build
export DEBIAN_FRONTEND=noninteractive
mark() { echo "$1 $SECONDS" >> times; }
# fresh lists when the mirror answers; the cached ones otherwise
apt-get update -q > apt-update.log 2>&1 || echo "apt-get update failed: the rootfs's cached lists" >> apt-update.log
apt-get build-dep -y -q "./$1" > build-dep.log 2>&1
echo $? > build-dep.rc
[[ $(cat build-dep.rc) == 0 ]] || exit 0
apt-get install -y -q clang libclang-rt-dev > clang-install.log 2>&1
echo $? > clang-install.rc
[[ $(cat clang-install.rc) == 0 ]] || exit 0
dpkg-query -W libjson-c-dev clang libclang-rt-dev > versions 2>&1
clang --version | head -n 1 >> versions
chown -R builder: /build
# a plain user, out of tree, as a developer would
runuser -u builder -- bash -c "cd /build/$1 && bash tests/fuzz/run.sh --probe" > probe.log 2>&1
echo $? > probe.rc
[[ $(cat probe.rc) == 0 ]] || exit 0
runuser -u builder -- bash -c "mkdir -p /build/$1/b && cd /build/$1/b && ../configure -q" > configure.log 2>&1
echo $? > configure.rc
[[ $(cat configure.rc) == 0 ]] || exit 0
runuser -u builder -- make -C "/build/$1/b" -j2 fuzz-build > fuzz-build.log 2>&1
echo $? > fuzz-build.rc
[[ $(cat fuzz-build.rc) == 0 ]] || exit 0
mark built
runuser -u builder -- bash "/build/$1/tests/fuzz/run.sh" "$2" "/build/$1/b/fuzz-build" > run.log 2>&1
echo $? > run.rc
mark ran
EOF
# a failing run's binaries and artifacts are kept here: none from an earlier run
keep=$top_builddir/fuzz-release-$suite
rm -rf "$keep"
t=$SECONDS
systemd-nspawn -q -D "$b/root" --register=no --keep-unit --pipe \
        /bin/bash /build/fuzz.sh "wbtuned-$version" "$seconds" < /dev/null > "$tmp/nspawn.out" 2>&1 ||
        { cat "$tmp/nspawn.out"; fail "the build container failed (systemd-nspawn exit $?)"; }
out=$b/root/build
rcof() { cat "$out/$1.rc" 2> /dev/null || echo missing; }
step_ok() {
        [[ $(rcof "$1") == 0 ]] && return 0
        tail -n "${3:-25}" "$out/$1.log" 2> /dev/null
        fail "$2 failed (exit $(rcof "$1"))"
}
step_ok build-dep "apt-get build-dep of the release tree"
step_ok clang-install "apt-get install clang libclang-rt-dev"
log "versions: $(tr '\n' ';' < "$out/versions" | sed 's/\t/ /g; s/;$//; s/;/; /g')"
step_ok probe "$suite's clang linking libFuzzer with ASan+UBSan (tests/fuzz/run.sh --probe)"
step_ok configure "../configure"
step_ok fuzz-build "make fuzz-build" 40
warnings=$(grep -Ec '^[^ :]+:[0-9]+:[0-9]+: warning:' "$out/fuzz-build.log")
[[ $warnings -gt 0 ]] && { grep -E '^[^ :]+:[0-9]+:[0-9]+: warning:' "$out/fuzz-build.log" | head -n 20; log "$suite's clang: $warnings warnings (above)"; }
built_s=$(sed -n 's/^built //p' "$out/times")
ran_s=$(sed -n 's/^ran //p' "$out/times")
log "apt + configure + make fuzz-build: $built_s s; the runs: $((${ran_s:-$built_s} - built_s)) s"

fuzzdir=$out/wbtuned-$version/b/fuzz-build
missing=
for h in "${harnesses[@]}"; do
        [[ -x $fuzzdir/$h ]] || missing+=" $h"
done
cat "$out/run.log" 2> /dev/null
failed=0
[[ -n $missing ]] && { log "FAIL: make fuzz-build did not build:$missing"; failed=1; }
[[ $(rcof run) == 0 ]] || { log "FAIL: tests/fuzz/run.sh $seconds (exit $(rcof run))"; failed=1; }
if [[ $failed -ne 0 ]]; then
        mkdir -p "$keep"
        cp -a "$fuzzdir"/fuzz-* "$fuzzdir"/artifacts "$keep"/ 2> /dev/null
        cp "$out"/*.log "$out/versions" "$keep"/ 2> /dev/null
        rm -f "$keep"/*.d
        log "kept the harnesses, logs and artifacts in $keep; replay one in $suite's runtime rootfs:"
        for a in "$keep"/artifacts/*/*; do
                [[ -f $a ]] || continue
                h=$(basename "$(dirname "$a")")
                log "  systemd-nspawn -q -D \$(bash scripts/rootfs.sh base $suite) --register=no --keep-unit --pipe --read-only --bind-ro=$keep:/mnt /mnt/$h /mnt/artifacts/$h/$(basename "$a")"
        done
        fail "$suite: the fuzz run failed"
fi
n_pass=$(grep -c '^PASS: ' "$out/run.log")
[[ $n_pass -eq ${#harnesses[@]} ]] || fail "run.sh passed $n_pass harnesses, expected ${#harnesses[@]}"
ok "$suite: all ${#harnesses[@]} harnesses built with $(tail -n 1 "$out/versions") and ran $seconds s each without a crash"
log "total $((SECONDS - started - lock_wait_s)) s without the lock wait"
exit 0
