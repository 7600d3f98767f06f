#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run libFuzzer harnesses built by `make fuzz-build`, each for a fixed time, on a working copy of its
# seed corpus (tests/fuzz/corpus/NAME/, merged back into nothing: new inputs stay in the build dir).
#   run.sh --probe                  exit 0 if clang can build libFuzzer+ASan programs, 77 if not
#   run.sh SECONDS DIR [NAME...]    run DIR/fuzz-* (or the NAMEs) SECONDS each; exit 1 if any failed
# Optional per harness: tests/fuzz/NAME.dict (a libFuzzer dictionary), tests/fuzz/NAME.options
# (more libFuzzer flags, one per line). A crash leaves DIR/artifacts/NAME/crash-* and its command.
set -uo pipefail
srcdir=$(cd "$(dirname "$0")" && pwd)

if [[ ${1:-} == --probe ]]; then
        command -v "${CLANG:-clang}" > /dev/null || { echo "no ${CLANG:-clang} (apt-get install clang libclang-rt-dev)"; exit 77; }
        t=$(mktemp -d) || exit 99
        trap 'rm -rf "$t"' EXIT
        printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
                'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void) d; (void) n; return 0; }' > "$t/p.c"
        if ! "${CLANG:-clang}" -fsanitize=fuzzer,address,undefined "$t/p.c" -o "$t/p" 2> "$t/err"; then
                echo "${CLANG:-clang} cannot link libFuzzer with ASan+UBSan (apt-get install libclang-rt-dev): $(head -n 1 "$t/err")"
                exit 77
        fi
        exit 0
fi

[[ $# -ge 2 ]] || { echo "usage: $0 --probe | SECONDS DIR [NAME...]" >&2; exit 2; }
seconds=$1 dir=$2
shift 2
if [[ $# -gt 0 ]]; then
        names=("$@")
else
        names=()
        for b in "$dir"/fuzz-*; do
                [[ -f $b && -x $b && $b != *.d ]] && names+=("$(basename "$b")")
        done
fi
[[ ${#names[@]} -gt 0 ]] || { echo "run.sh: no harnesses in $dir (make fuzz-build)"; exit 1; }

# the harnesses make their fake trees under TMPDIR: one private dir, removed whatever happens
work=$(mktemp -d "${TMPDIR_FUZZ:-/dev/shm}/wbtuned-fuzz.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM

passed=0 failed=0
for name in "${names[@]}"; do
        bin=$dir/$name corpus=$dir/corpus/$name artifacts=$dir/artifacts/$name log=$dir/$name.log
        [[ -x $bin ]] || { echo "FAIL: $name: $bin not built"; failed=$((failed + 1)); continue; }
        mkdir -p "$corpus" "$artifacts"
        rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/slow-unit-*
        [[ -d $srcdir/corpus/$name ]] && cp -n "$srcdir/corpus/$name"/* "$corpus"/ 2> /dev/null
        args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1
              -artifact_prefix="$artifacts/")
        [[ -f $srcdir/$name.dict ]] && args+=(-dict="$srcdir/$name.dict")
        if [[ -f $srcdir/$name.options ]]; then
                while read -r opt; do
                        [[ -n $opt && $opt != \#* ]] && args+=("$opt")
                done < "$srcdir/$name.options"
        fi
        start=$(date +%s)
        TMPDIR=$work "$bin" "${args[@]}" "$corpus" > "$log" 2>&1
        rc=$?
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
        rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
        cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
        summary="$name: ${runs:-?} inputs in $(($(date +%s) - start)) s (${rate:-?}/s), $cov, corpus $(ls "$corpus" | wc -l) files, peak RSS ${rss:-?} MB"
        if [[ $rc -eq 0 ]]; then
                echo "PASS: $summary"
                passed=$((passed + 1))
        else
                echo "FAIL: $summary, exit $rc; log $log"
                grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' "$log" | head -n 8
                for a in "$artifacts"/*; do
                        [[ -f $a ]] && echo "  reproduce: $bin $a"
                done
                failed=$((failed + 1))
        fi
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
