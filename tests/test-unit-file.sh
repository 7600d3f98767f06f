#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# systemd/wbtuned.service: systemd-analyze verify must print nothing; hardening must not regress.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed (apt-get install systemd)"

# The unit make generated (@sbindir@ and @bindir@ filled in); else the template itself.
unit=$top_builddir/systemd/wbtuned.service
template=$top_srcdir/systemd/wbtuned.service.in
make_tmpdir tmp
if [[ ! -f $unit ]]; then
        [[ -f $template ]] || fail "neither $unit nor $template exists"
        sed -e 's|@sbindir@|/usr/sbin|g' -e 's|@bindir@|/usr/bin|g' "$template" > "$tmp/generated.service"
        unit=$tmp/generated.service
fi
grep -q '@[a-z]*@' "$unit" && fail "$unit has unsubstituted @variables@"

execstart=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $execstart == /*/wbtuned ]] || fail "ExecStart=$execstart is not an absolute path to wbtuned"
ok "ExecStart=$execstart"

# `systemctl reload` must fail on a bad config: SIGHUP cannot say so, `wbtunectl reload` does
execreload=$(sed -n 's/^ExecReload=//p' "$unit")
[[ $execreload == /*/wbtunectl\ reload ]] || fail "ExecReload=$execreload is not '<bindir>/wbtunectl reload'"
ok "ExecReload=$execreload"

# in a container the knobs are the host's (the daemon checks too, for a start by hand)
grep -qx 'ConditionVirtualization=!container' "$unit" || fail "no ConditionVirtualization=!container in $unit"
ok "ConditionVirtualization=!container"

# verify checks that ExecStart is executable: point it at the binary this tree built, so
# everything else in the unit (directives, values, dependencies) is what gets checked.
[[ -x $WBTUNED ]] || fail "$WBTUNED not built"
[[ -x $WBTUNECTL ]] || fail "$WBTUNECTL not built"
mkdir -p "$tmp/unit"
sed -e "s|^ExecStart=.*|ExecStart=$WBTUNED|" -e "s|^ExecReload=[^ ]*|ExecReload=$WBTUNECTL|" "$unit" > "$tmp/unit/wbtuned.service"

systemd-analyze verify --man=no "$tmp/unit/wbtuned.service" > "$tmp/verify.out" 2>&1
rc=$?
if [[ $rc -ne 0 || -s $tmp/verify.out ]]; then
        cat "$tmp/verify.out"
        fail "systemd-analyze verify: exit $rc, output above"
fi
ok "systemd-analyze verify is silent"

# A broken directive must be caught by this test, or the test proves nothing.
{ cat "$tmp/unit/wbtuned.service"; echo "ProtectSystm=strict"; } > "$tmp/broken.service"
systemd-analyze verify --man=no "$tmp/broken.service" > "$tmp/broken.out" 2>&1
[[ -s $tmp/broken.out ]] || fail "verify did not complain about an unknown directive"
ok "verify notices a misspelt directive"

# The documented exposure is 1.6; fail if it grows past 2.0 (systemd >= 250 has --threshold).
if systemd-analyze security --help 2>/dev/null | grep -q -- --threshold; then
        systemd-analyze security --offline=true --threshold=20 "$tmp/unit/wbtuned.service" \
                > "$tmp/security.out" 2>&1
        rc=$?
        tail -n 1 "$tmp/security.out"
        [[ $rc -eq 0 ]] || { cat "$tmp/security.out"; fail "exposure above 2.0"; }
        ok "security exposure at most 2.0"
fi

# The journal catalog: journalctl must accept it and list every event (src/daemon/events.c) once.
if command -v journalctl > /dev/null; then
        mkdir -p "$tmp/cat/usr/lib/systemd/catalog" "$tmp/cat/var/lib/systemd/catalog"
        cp "$top_srcdir/systemd/wbtuned.catalog" "$tmp/cat/usr/lib/systemd/catalog/"
        journalctl --root="$tmp/cat" --update-catalog > "$tmp/catalog.out" 2>&1 ||
                { cat "$tmp/catalog.out"; fail "journalctl --update-catalog refused systemd/wbtuned.catalog"; }
        [[ -s $tmp/catalog.out ]] && { cat "$tmp/catalog.out"; fail "journalctl complained about the catalog"; }
        n=$(journalctl --root="$tmp/cat" --list-catalog 2> /dev/null | grep -c ' wbtuned: ')
        want=$(grep -c '^-- [0-9a-f]\{32\}$' "$top_srcdir/systemd/wbtuned.catalog")
        [[ $n -gt 0 && $n -eq $want ]] || fail "journalctl lists $n wbtuned catalog entries, the file has $want"
        ok "journalctl accepts the catalog: $n entries"
fi
exit 0
