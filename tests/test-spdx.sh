#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every source file (the list of scripts/add-spdx.sh --list: C, headers, shell, Python, Makefile.am,
# *.mk, configure.ac, debian/'s scripts, the completions) names its licence in its first lines,
# "SPDX-License-Identifier: GPL-2.0-or-later" as COPYING and debian/copyright say, with a #! or
# zsh's #compdef still on line 1; and COPYING is the GPL version 2 text.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

id='SPDX-License-Identifier: GPL-2.0-or-later'
copying=$top_srcdir/COPYING
[[ -f $copying ]] || fail "no COPYING at the top of the tree ($copying)"
grep -q 'GNU GENERAL PUBLIC LICENSE' "$copying" && grep -q 'Version 2, June 1991' "$copying" ||
        fail "$copying is not the GPL version 2 text"
grep -q '^License: GPL-2.0-or-later$' "$top_srcdir/debian/copyright" ||
        fail "debian/copyright does not say GPL-2.0-or-later: this test and COPYING follow it"
ok "COPYING is the GPL version 2 text, debian/copyright says GPL-2.0-or-later"

files=$(bash "$top_srcdir/scripts/add-spdx.sh" --list) || fail "scripts/add-spdx.sh --list failed"
# the list itself: these must be on it
for f in src/daemon/manager.c src/daemon/manager.h tests/lib.sh tests/test-spdx.sh bench/wbb/cli.py bench/wbbench \
         Makefile.am configure.ac tests/fuzz/fuzz.mk debian/rules debian/wbtuned.postrm \
         shell-completion/bash/wbtunectl shell-completion/zsh/_wbtunectl; do
        grep -qxF "$f" <<< "$files" || fail "scripts/add-spdx.sh --list misses $f"
done
n=$(grep -c . <<< "$files")

missing=() moved=()
while IFS= read -r f; do
        p=$top_srcdir/$f
        head -n 3 "$p" | grep -Eq "^(# |/\* |// |dnl )$id( \*/)?\$" || missing+=("$f")
        # a #! or #compdef works on line 1 only
        sed -n '2,5p' "$p" | grep -Eq '^#!|^#compdef' && moved+=("$f")
done <<< "$files"
[[ ${#moved[@]} -eq 0 ]] || fail "${#moved[@]} files have a #! or #compdef off line 1: ${moved[*]:0:10}"
[[ ${#missing[@]} -eq 0 ]] ||
        fail "${#missing[@]} of $n source files have no '$id' in their first 3 lines (scripts/add-spdx.sh adds it): ${missing[*]:0:10}"
ok "$n source files carry '$id'"
exit 0
