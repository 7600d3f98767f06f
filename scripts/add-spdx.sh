#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Puts "SPDX-License-Identifier: GPL-2.0-or-later" (COPYING, debian/copyright) near the top of every
# source file: C and headers, shell, Python, Makefile.am and *.mk, configure.ac, debian/'s scripts,
# the completions. Idempotent: a file that has an SPDX line in its first 5 lines is left alone (a
# different licence there is reported, exit 1). C gets /* */ (the tree's comments), configure.ac dnl,
# the rest #; after the first line when that is a #! or zsh's #compdef (and after a Python coding line).
# --list prints the files, one a line, relative to the top of the tree (tests/test-spdx.sh checks them).
set -euo pipefail
cd "$(dirname "$0")/.."
id='SPDX-License-Identifier: GPL-2.0-or-later'
spdx_re='^(#|/\*|//|dnl) SPDX-License-Identifier:'   # a line that is the tag, not one that mentions it

# Every source file of the tree, by its name; not build trees, generated files or test data.
list() {
        find . \( -type d \( -name .git -o -name build -o -name 'build-*' -o -name _build -o -name autom4te.cache \
                        -o -name build-aux -o -name m4 -o -name .deps -o -name __pycache__ -o -name fuzz-build \
                        -o -name 'wbtuned-[0-9]*' -o -path ./debian/build -o -path ./debian/wbtuned \
                        -o -path ./debian/.debhelper -o -path ./bench/results -o -path ./tests/fuzz/corpus \
                        -o -path ./tests/fake -o -path ./tests/data \) -prune \) -o -type f \
                \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' -o -name '*.mk' \
                   -o -path ./Makefile.am -o -path ./configure.ac -o -path ./.ci/run -o -path ./bench/wbbench \
                   -o -path ./debian/rules -o -path './debian/*.postrm' -o -path './debian/*.prerm' \
                   -o -path './debian/*.postinst' -o -path './debian/*.preinst' \
                   -o -path './shell-completion/bash/*' -o -path './shell-completion/zsh/*' \) \
                ! -name build-config.h -print | sed 's|^\./||' | LC_ALL=C sort
}

if [[ ${1:-} == --list ]]; then
        list
        exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [--list]" >&2; exit 2; }

# in braces and ending in exit: bash parses it all before running it, so editing this very file is safe
{
rc=0 added=0
while IFS= read -r f; do
        if head -n 5 "$f" | grep -Eq "$spdx_re"; then
                head -n 5 "$f" | grep -Eq "$spdx_re GPL-2\.0-or-later( \*/)?\$" ||
                        { echo "$f: another licence: $(head -n 5 "$f" | grep -E -m1 "$spdx_re")" >&2; rc=1; }
                continue
        fi
        case $f in
        *.c | *.h) line="/* $id */" ;;
        configure.ac) line="dnl $id" ;;
        *) line="# $id" ;;
        esac
        tmp=$(mktemp)
        awk -v line="$line" -v py="$([[ $f == *.py || $f == bench/wbbench ]] && echo 1)" '
                NR == 1 && (/^#!/ || /^#compdef/) { print; held = 1; next }
                NR == 2 && held && py && /^#.*coding[:=]/ { print; next }
                !done { print line; done = 1 }
                { print }
                END { if (!done) print line }' "$f" > "$tmp"
        cat "$tmp" > "$f"   # keeps the file's mode
        rm -f "$tmp"
        added=$((added + 1))
done < <(list)
echo "add-spdx: the line added to $added files"
exit $rc
}
