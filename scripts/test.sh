#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite from a fresh machine: deps, build, make check, make distcheck,
# a warning-free clang build, unit tests under ASan+UBSan, unit tests under valgrind, each
# libFuzzer harness for FUZZ_TEST_SECONDS (20). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=2

bash scripts/deps.sh || { echo "test.sh: installing dependencies failed"; echo "0 passed, 1 failed"; exit 1; }

failed_steps=()
valgrind_pass=0
valgrind_fail=0

# step NAME COMMAND...: run, remember a failure, never stop the script.
step() {
        local name=$1
        shift
        echo "=== $name: $*"
        if ! "$@"; then
                echo "=== $name FAILED"
                failed_steps+=("$name")
                case $name in "make check"*) ;; *) extra_fail=$((extra_fail + 1)) ;; esac
                return 1
        fi
}

extra_fail=0   # failures no .trs file records (build, distcheck, a check that did not run)

# Print the logs of the tests that did not pass, so CI output shows why. A failed
# `make check` with no failing .trs (a test did not build) counts as one failure.
show_failed_logs() {
        local dir=$1 trs found=0
        for trs in "$dir"/tests/*.trs; do
                [[ -e $trs ]] || continue
                if grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs"; then
                        echo "----- ${trs%.trs}.log -----"
                        cat "${trs%.trs}.log"
                        found=1
                fi
        done
        [[ $found -eq 1 || ${2:-} == nocount ]] || extra_fail=$((extra_fail + 1))
}

step autogen ./autogen.sh || { echo "0 passed, 1 failed"; exit 1; }
rm -rf build/tests/*.trs build/tests/*.log build-asan/tests/*.trs build-asan/tests/*.log

# --- normal build: everything, then a release tarball that builds and passes on its own
mkdir -p build
if step configure bash -c "cd build && '$top/configure' -q" &&
   step make make -C build -j"$jobs"; then
        # the live-kernel tests run only when asked (tests/live-opt-in.sh): this run asks
        step "make check" env WBTUNED_LIVE=1 make -C build -j"$jobs" check || show_failed_logs build
        # the tarball re-runs make check: the live-kernel tests already ran above (SKIP wins over LIVE)
        if ! step "make distcheck" env WBTUNED_SKIP_LIVE=1 make -C build -j"$jobs" distcheck; then
                # counted once by step; the tarball's own test logs say why
                for d in build/wbtuned-*/_build/sub; do
                        [[ -d $d ]] && show_failed_logs "$d" nocount
                done
        fi
fi

# --- clang: everything (daemon, client, every test program) must build warning-free with it too
mkdir -p build-clang
step configure-clang bash -c "cd build-clang && CC=clang '$top/configure' -q" &&
        step "make (clang, -Werror)" make -C build-clang -j"$jobs" check TESTS= CFLAGS="-g -O2 -Werror"

# --- ASan + UBSan: the C unit tests only
mkdir -p build-asan
if step configure-asan bash -c "cd build-asan && '$top/configure' -q --enable-sanitizers" &&
   step make-asan make -C build-asan -j"$jobs"; then
        step "make check (sanitizers)" make -C build-asan -j"$jobs" check SYSTEM_TESTS= ||
                show_failed_logs build-asan
fi

# --- valgrind: each unit-test binary of the normal build (real ELF files, no wrappers)
export top_srcdir=$top top_builddir=$top/build
export WBTUNED=$top/build/src/wbtuned WBTUNECTL=$top/build/src/wbtunectl
for t in build/tests/test-*; do
        [[ -f $t && -x $t ]] || continue
        # live-test drivers take arguments from their .sh wrapper and need the live kernel
        [[ $t == *-live ]] && continue
        [[ $(head -c 4 "$t" | od -An -c | tr -d ' ') == 177ELF ]] || continue
        echo "=== valgrind $t"
        if (cd build && valgrind -q --error-exitcode=1 --leak-check=full "$top/$t" > "$top/$t.valgrind.log" 2>&1); then
                valgrind_pass=$((valgrind_pass + 1))
        else
                valgrind_fail=$((valgrind_fail + 1))
                failed_steps+=("valgrind ${t#build/tests/}")
                echo "----- $t.valgrind.log -----"
                cat "$t.valgrind.log"
        fi
done

# --- libFuzzer: every harness (tests/fuzz/fuzz-*.c) for a short fixed budget; `make fuzz` runs longer
fuzz_seconds=${FUZZ_TEST_SECONDS:-20}
fuzz_pass=0
fuzz_fail=0
fuzz_skip=0
if ! why=$(bash tests/fuzz/run.sh --probe); then
        echo "=== fuzz: SKIPPED, $why"
        fuzz_skip=1
elif step "fuzz build" make -C build fuzz-build; then
        for b in build/fuzz-build/fuzz-*; do
                [[ -f $b && -x $b && $b != *.d ]] || continue
                name=$(basename "$b")
                echo "=== fuzz $name for ${fuzz_seconds} s"
                if bash tests/fuzz/run.sh "$fuzz_seconds" build/fuzz-build "$name"; then
                        fuzz_pass=$((fuzz_pass + 1))
                else
                        fuzz_fail=$((fuzz_fail + 1))
                        failed_steps+=("$name")
                fi
        done
fi

# --- summary from the automake .trs files, plus valgrind and fuzz runs and failed steps
count() { cat build/tests/*.trs build-asan/tests/*.trs 2>/dev/null | grep -Ec "^:test-result: ($1)\$"; }
pass=$(( $(count 'PASS|XFAIL') + valgrind_pass + fuzz_pass ))
skip=$(( $(count SKIP) + fuzz_skip ))
fail=$(( $(count 'FAIL|ERROR|XPASS') + valgrind_fail + fuzz_fail + extra_fail ))

echo
if [[ ${#failed_steps[@]} -gt 0 ]]; then
        echo "failed: ${failed_steps[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 && ${#failed_steps[@]} -eq 0 ]]
