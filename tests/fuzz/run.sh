#!/bin/bash
# Build the control-protocol fuzzers with clang's libFuzzer (ASan + UBSan) and run each for a while:
#   tests/fuzz/run.sh [SECONDS] [fuzz-request] [fuzz-render]     (default: 60 s each, both)
# Needs a configured build tree for build-config.h (BUILD, default build/) and clang with its fuzzer
# runtime (Debian: clang, libclang-rt-14-dev). New inputs go to a scratch corpus; the seeds in
# tests/fuzz/corpus/<name>/ are read, not written. A crash leaves its input in tests/fuzz/out/.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(fuzz-request fuzz-render)
build=${BUILD:-$top/build}
out=$top/tests/fuzz/out

[[ -f $build/build-config.h ]] || { echo "run.sh: no $build/build-config.h: configure a build tree first (BUILD=...)" >&2; exit 2; }
command -v clang >/dev/null || { echo "run.sh: clang is not installed" >&2; exit 2; }

# every module but the two mains
sources=()
for f in "$top"/src/*.c; do
        case $(basename "$f") in wbtuned.c|wbtunectl.c) ;; *) sources+=("$f") ;; esac
done
# shellcheck disable=SC2207
libs=($(pkg-config --cflags --libs libsystemd libnl-3.0 libnl-genl-3.0 inih json-c))
mkdir -p "$out"

for name in "${names[@]}"; do
        bin=$out/$name
        echo "=== building $bin"
        clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                -include "$build/build-config.h" -I"$top/src" -DSYSCONFDIR='"/etc"' -DRUNSTATEDIR='"/run"' \
                "$top/tests/fuzz/$name.c" "${sources[@]}" "${libs[@]}" -o "$bin"
        scratch=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
        echo "=== running $name for $seconds s (seeds: tests/fuzz/corpus/${name#fuzz-}/)"
        rc=0
        (cd "$out" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -dict="$top/tests/fuzz/json.dict" \
                "$scratch" "$top/tests/fuzz/corpus/${name#fuzz-}") || rc=$?
        rm -rf "$scratch"
        # exit 1, not libFuzzer's code: under automake 77 would read as a skip
        [[ $rc -eq 0 ]] || { echo "=== $name FAILED (exit $rc): the input is in $out/crash-*"; exit 1; }
done
