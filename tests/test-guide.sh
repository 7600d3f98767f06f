#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# doc/guide.md stays true to the code: every ```ini block is a wbtuned.conf recipe that
# `wbtuned --check-config` accepts; every MESSAGE_ID it names is in systemd/wbtuned.catalog and
# every catalog id is in it; its image links point at files in the tree; every `wbtunectl VERB`
# is a verb of wbtunectl. GUIDE=FILE checks another file (to see the test fail).
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries
make_tmpdir tmp

guide=${GUIDE:-$top_srcdir/doc/guide.md}
[[ -f $guide ]] || fail "$guide not found"

# check_recipe FILE: 0 if wbtuned loads FILE (and FILE.d/, absent here) without a word on stderr.
check_recipe() {
        "$WBTUNED" --check-config -c "$1" > "$1.out" 2> "$1.err" && ! [[ -s $1.err ]]
}

# The check itself must be able to fail: an unknown key and a key in the wrong section.
printf '[device "usb"]\nmax_byte = 64M\n' > "$tmp/bad-key.conf"
printf '[policy]\nmetrics_interval = 30s\n' > "$tmp/bad-section.conf"
for bad in bad-key bad-section; do
        check_recipe "$tmp/$bad.conf" && fail "wbtuned --check-config accepted $bad.conf"
done
ok "a recipe with an unknown key or a key in the wrong section is rejected"

# Cut the guide into its ```ini blocks (recipe-N.conf, with the line it starts on) and list the
# other facts to check, one per line: "id HEX", "image PATH", "verb WORD".
mkdir "$tmp/recipes"
"$PYTHON3" - "$guide" "$tmp/recipes" > "$tmp/facts" <<'EOF' || fail "cannot read $guide"
import re, sys

guide, outdir = sys.argv[1:3]
text = open(guide, encoding="utf-8").read()
lines = text.split("\n")
n, block, start = 0, None, 0
for i, line in enumerate(lines, 1):
    if block is None and re.match(r"^```ini\s*$", line):
        block, start = [], i
    elif block is not None and line.startswith("```"):
        n += 1
        with open(f"{outdir}/recipe-{n}.conf", "w") as f:
            f.write("\n".join(block) + "\n")
        with open(f"{outdir}/recipe-{n}.line", "w") as f:
            f.write(f"{start}\n")
        block = None
    elif block is not None:
        block.append(line)
if block is not None:
    sys.exit(f"{guide}:{start}: ```ini block never closed")
for hexid in sorted(set(re.findall(r"\b[0-9a-f]{32}\b", text))):
    print("id", hexid)
for path in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text):
    print("image", path)
# "wbtunectl [-s PATH] [--opt...] VERB" in commands and inline code
for m in re.finditer(r"\bwbtunectl((?:[ \t]+-[-\w=]+(?:[ \t]+/\S+)?)*)[ \t]+([a-z]+)\b", text):
    print("verb", m.group(2))
EOF

n_recipes=0
for conf in "$tmp"/recipes/recipe-*.conf; do
        [[ -e $conf ]] || break
        n_recipes=$((n_recipes + 1))
        line=$(cat "${conf%.conf}.line")
        check_recipe "$conf" ||
                { cat "$conf.err"; fail "$guide:$line: wbtuned --check-config rejects this recipe"; }
done
# the desktop, server (+ one device) and small-box recipes at least; fewer means the ```ini tags went
((n_recipes >= 4)) || fail "only $n_recipes \`\`\`ini blocks in $guide: the recipes are no longer checked"
ok "$n_recipes config blocks pass wbtuned --check-config"

catalog=$top_srcdir/systemd/wbtuned.catalog
n_ids=0
while read -r kind value; do
        case $kind in
        id)
                n_ids=$((n_ids + 1))
                grep -q "^-- $value\$" "$catalog" || fail "$guide names MESSAGE_ID $value, which is not in $catalog";;
        image)
                [[ -f $(dirname "$guide")/$value ]] || fail "$guide shows $value, which does not exist"
                # the package ships doc/ with the guide, not bench/: its images are copies in doc/images/,
                # which must be the current plots of bench/results/ where those exist
                [[ $value == images/* ]] || fail "$guide shows $value, outside doc/images/ (the package ships only doc/images/)"
                orig=$top_srcdir/bench/results/${value#images/}
                [[ ! -f $orig ]] || cmp -s "$orig" "$(dirname "$guide")/$value" ||
                        fail "$guide shows $value, an older copy of $orig (cp it again)";;
        verb)
                "$WBTUNECTL" --list=verbs | grep -qx -- "$value" || fail "$guide uses 'wbtunectl $value', which is no verb";;
        esac
done < "$tmp/facts"
while read -r _ id; do
        grep -q "$id" "$guide" || fail "$catalog has MESSAGE_ID $id, which $guide does not list"
done < <(grep '^-- ' "$catalog")
ok "$n_ids MESSAGE_IDs match the catalog; image links and wbtunectl verbs exist"
