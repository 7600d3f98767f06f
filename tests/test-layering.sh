#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The build enforces the layering (HACKING.md): with the exact preprocessor flags Makefile.am gives
# each library (LAYER_*_CPPFLAGS, from make), every header of its own layer and of shared/ compiles,
# and every header of a layer it may not use is not found. The positive probes keep the negative ones
# from passing vacuously (flags that compile nothing). No header name is in two folders, and no
# #include in src/ names a path, which would get around the include path.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

[[ -n ${LAYER_SHARED_CPPFLAGS:-} && -n ${LAYER_CTL_CPPFLAGS:-} && -n ${LAYER_DAEMON_CPPFLAGS:-} ]] ||
        skip "LAYER_*_CPPFLAGS unset: run it from make check, which passes Makefile.am's flags"
cc=${LAYER_CC:-cc}
make_tmpdir tmp
src=$top_srcdir/src

headers() { (cd "$src/$1" && ls -- *.h); }

dups=$(for d in shared ctl daemon; do headers "$d"; done | sort | uniq -d)
[[ -z $dups ]] || fail "header names in two folders of src/ (an include would depend on the path order): $dups"
paths=$(grep -n '#include "[^"]*/' "$src"/*/*.[ch])
[[ -z $paths ]] || fail "an #include names a path, around the include path: $paths"

# probe LAYER HEADER...: compile a file including the headers with LAYER's flags; its errors in $tmp/err
probe() {
        local layer=$1 flags h
        shift
        case $layer in
        shared) flags=$LAYER_SHARED_CPPFLAGS ;;
        ctl) flags=$LAYER_CTL_CPPFLAGS ;;
        daemon) flags=$LAYER_DAEMON_CPPFLAGS ;;
        esac
        for h in "$@"; do printf '#include "%s"\n' "$h"; done > "$tmp/probe.c"
        # word splitting on purpose: the flags as make passes them (-DSYSCONFDIR="/etc" and all)
        # shellcheck disable=SC2086
        $cc ${LAYER_CFLAGS:-} $flags -fsyntax-only "$tmp/probe.c" 2> "$tmp/err"
}

# may LAYER FOLDER...: every header of the folders compiles, together, with LAYER's flags
may() {
        local layer=$1 d all=()
        shift
        for d in "$@"; do mapfile -t -O "${#all[@]}" all < <(headers "$d"); done
        probe "$layer" "${all[@]}" || fail "$layer's flags do not compile the headers of $*: $(head -n 5 "$tmp/err")"
        ok "$layer's flags compile the ${#all[@]} headers of $*"
}

# may_not LAYER FOLDER: no header of FOLDER is found with LAYER's flags
may_not() {
        local layer=$1 folder=$2 h n=0
        while IFS= read -r h; do
                if probe "$layer" "$h"; then
                        fail "src/$folder/$h compiles with $layer's flags: $layer may not include it"
                fi
                grep -F "$h" "$tmp/err" | grep -Eq 'No such file|not found' ||
                        fail "$layer including $h failed, but not for want of $h: $(head -n 3 "$tmp/err")"
                n=$((n + 1))
        done < <(headers "$folder")
        ok "none of the $n headers of src/$folder/ is found with $layer's flags"
}

may shared shared
may ctl shared ctl
may daemon shared daemon
may_not shared ctl
may_not shared daemon
may_not ctl daemon
may_not daemon ctl
