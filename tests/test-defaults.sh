#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The defaults the documentation states are the built-in ones: every key's "Default:" in
# wbtuned.conf(5), every "#key = default" line of conf/wbtuned.conf, the default mode and the
# watchdog interval in wbtuned(8), against `wbtuned --check-config` (the merged config of an
# empty file is the built-in defaults) and the unit.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
require_binaries
make_tmpdir tmp

# an empty file gives the [daemon] and [policy] defaults; an empty device section gives a device's
: > "$tmp/empty.conf"
printf '[device "x"]\n' > "$tmp/device.conf"
"$WBTUNED" --check-config -c "$tmp/empty.conf" > "$tmp/defaults.conf" 2> "$tmp/err" ||
        { cat "$tmp/err"; fail "wbtuned --check-config on an empty file"; }
"$WBTUNED" --check-config -c "$tmp/device.conf" > "$tmp/device-defaults.conf" 2> "$tmp/err" ||
        { cat "$tmp/err"; fail "wbtuned --check-config on an empty device section"; }

"$PYTHON3" - "$tmp/defaults.conf" "$tmp/device-defaults.conf" "$top_srcdir" <<'EOF'
import re, sys

defaults_file, device_file, top = sys.argv[1:4]
failures = []

def load_dump(path, want_device):
    """section -> {key: value} from `wbtuned --check-config`; device keys under "device"."""
    out, section = {}, None
    for line in open(path):
        line = line.strip()
        m = re.match(r'^\[(\w+)', line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r'^(\w+) = (.*)$', line)
        if m and section and (section == "device") == want_device:
            out.setdefault(section, {})[m.group(1)] = m.group(2)
    return out

builtin = load_dump(defaults_file, False)
builtin.update(load_dump(device_file, True))
n_keys = sum(len(v) for v in builtin.values())
if n_keys < 15 or "device" not in builtin:
    sys.exit("wbtuned --check-config printed too few keys (%d): %s" % (n_keys, builtin))

def compare(where, section, key, stated):
    have = builtin.get(section, {}).get(key)
    if have is None:
        failures.append("%s: [%s] %s is not a key wbtuned knows" % (where, section, key))
    elif stated != have:
        failures.append("%s: [%s] %s: the documentation says %r, the built-in default is %r"
                        % (where, section, key, stated, have))

def check_all_stated(where, stated):
    for section, keys in builtin.items():
        for key in keys:
            if key not in stated.get(section, {}):
                failures.append("%s: states no default for [%s] %s" % (where, section, key))

# conf/wbtuned.conf: "#key = default" in [daemon]/[policy]; "# key = default" after "# [device"
conf = top + "/conf/wbtuned.conf"
stated, section = {}, None
for n, line in enumerate(open(conf), 1):
    line = line.rstrip("\n")
    m = re.match(r'^\[(\w+)\]$', line)
    if m:
        section = m.group(1)
        continue
    if re.match(r'^# \[device ', line):
        section = "device"
        continue
    m = re.match(r'^#(\w+) = (.*)$', line) if section != "device" else re.match(r'^# (\w+) = (.*)$', line)
    if m and section:
        stated.setdefault(section, {})[m.group(1)] = m.group(2)
        compare("%s:%d" % (conf, n), section, m.group(1), m.group(2))
check_all_stated(conf, stated)

# wbtuned.conf(5): each "*key* = ..." entry under "# [section]" carries "Default: *value*"
man5 = top + "/doc/wbtuned.conf.5.scd"
text = open(man5).read()
stated = {}
for block in re.split(r'^# ', text, flags=re.M)[1:]:
    m = re.match(r'\[(\w+)', block)
    if not m:
        continue
    section = m.group(1)
    for entry in re.split(r'^(?=\*\w+\* = )', block, flags=re.M)[1:]:
        key = re.match(r'\*(\w+)\*', entry).group(1)
        d = re.search(r'Default:\s*[*_]([^*_]+)[*_]', entry)
        if not d:
            failures.append("%s: [%s] %s states no default" % (man5, section, key))
            continue
        stated.setdefault(section, {})[key] = d.group(1)
        compare(man5, section, key, d.group(1))
check_all_stated(man5, stated)

# wbtuned(8): the default mode in DESCRIPTION
man8 = top + "/doc/wbtuned.8.scd"
text = open(man8).read()
modes = re.findall(r'mode \*(\w+)\* \(the default', text)
if not modes:
    failures.append("%s: does not say which mode is the default" % man8)
for mode in modes:
    compare(man8, "policy", "mode", mode)

# wbtuned(8) and the unit agree on the watchdog
unit = open(top + "/systemd/wbtuned.service.in").read()
unit_wd = re.search(r'^WatchdogSec=(\S+)', unit, flags=re.M)
for wd in re.findall(r'WatchdogSec=(\w+)', text):
    if not unit_wd or wd != unit_wd.group(1):
        failures.append("%s: says WatchdogSec=%s, the unit has %s" % (man8, wd, unit_wd and unit_wd.group(1)))

for f in failures:
    print("MISMATCH " + f)
print("compared %d built-in defaults with conf/wbtuned.conf, wbtuned.conf(5) and wbtuned(8)" % n_keys)
sys.exit(1 if failures else 0)
EOF
[[ $? -eq 0 ]] || fail "the documented defaults differ from the built-in ones (above)"
ok "documented defaults match the built-in ones"
