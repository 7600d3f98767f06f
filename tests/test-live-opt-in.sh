#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make check` as root (a packager's or a distribution's build) must not touch the build host's
# kernel: every test script that touches it (found by what it contains: loop devices, mounts, the
# host's /proc/sys/vm, /sys/class/bdi, cgroup or debugfs files, nspawn, debootstrap, fio) must call
# live_opt_in (tests/live-opt-in.sh) as its first command. Then each is run without WBTUNED_LIVE=1
# in a private mount namespace whose /proc/sys/vm, /sys/class/bdi and blkio throttle file are tmpfs
# copies and whose losetup, mount, nspawn, debootstrap, fio ... are recording stubs: each must exit
# 77 with a line naming WBTUNED_LIVE=1, call no stub, and leave every copy as it was.
# This script is not a live test itself: it changes nothing outside its own mount namespace.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

self=$(basename "$0")
touches_re='\b(losetup|debootstrap|systemd-nspawn|fio|make_loop_fs|live_test_begin|live_lock|nspawn_[a-z_]+|mkfs\.[a-z0-9]+)\b|\bu?mount[[:space:]]+["$-]|(^|[^[:alnum:]_}./])/(proc/sys/vm|sys/class/bdi/|sys/fs/cgroup|sys/kernel/debug)'

# touches FILE: its code (not its comments) names something of the live kernel
touches() { grep -Ev '^[[:space:]]*#' "$1" | grep -Eq "$touches_re"; }

# first_command FILE: its first line that is not the shebang, a comment, `set`, or the sourcing
# of tests/lib.sh or tests/live-opt-in.sh (lib.sh only defines functions and traps)
first_command() {
        local line
        while IFS= read -r line; do
                line=${line#"${line%%[![:space:]]*}"}
                case $line in
                "" | "#"* | "set -"*) continue ;;
                ". "*"/tests/lib.sh\"" | ". "*"/tests/live-opt-in.sh\"") continue ;;
                esac
                printf '%s\n' "$line"
                return
        done < "$1"
}

# --- (a) every script that touches the live kernel calls the gate first -------------------------
live=()
for f in "$top_srcdir"/tests/test-*.sh; do
        [[ $(basename "$f") == "$self" ]] && continue
        touches "$f" || continue
        live+=("$f")
        cmd=$(first_command "$f")
        [[ $cmd == live_opt_in ]] ||
                fail "$(basename "$f") touches the live kernel but its first command is '$cmd', not live_opt_in"
done
# the detection itself: these are live tests whatever else changes
for t in test-live.sh test-actuate-live.sh test-nspawn.sh test-deb.sh test-bench-quick.sh test-trace-live.sh; do
        [[ " ${live[*]##*/} " == *" $t "* ]] || fail "$t is not recognised as touching the live kernel: fix touches_re"
done
for t in test-daemon.sh test-cli.sh test-completion.sh test-metrics.sh test-spdx.sh; do
        [[ " ${live[*]##*/} " == *" $t "* ]] && fail "$t (fake trees only) is taken for a live test: fix touches_re"
done
ok "${#live[@]} live-kernel scripts, each calls live_opt_in first: ${live[*]##*/}"

# --- (b) without the opt-in each exits 77 at once, in a namespace where it could do no harm ------
[[ $(id -u) -eq 0 ]] || skip "not root: cannot build the private mount namespace for the run without the opt-in (the rest passed)"
command -v unshare > /dev/null || skip "no unshare (util-linux) for the run without the opt-in (the rest passed)"
make_tmpdir tmp
mkdir "$tmp/ns" "$tmp/stubs" "$tmp/out"
: > "$tmp/calls"
for s in losetup mount umount systemd-nspawn debootstrap fio mkfs.ext4 modprobe dpkg-buildpackage lintian; do
        printf '#!/bin/sh\necho "%s $*" >> "%s"\nexit 1\n' "$s" "$tmp/calls" > "$tmp/stubs/$s"
        chmod +x "$tmp/stubs/$s"
done

cat > "$tmp/inside.sh" << 'EOF'
# runs in the private mount namespace: $1 the work dir, $2.. the scripts
set -u
tmp=$1
shift
ns=$tmp/ns
mount -t tmpfs wbtuned-opt-in "$ns" || { echo "cannot mount a tmpfs"; exit 2; }
mkdir "$ns/vm" "$ns/bdi"
for f in /proc/sys/vm/*; do
        cat "$f" > "$ns/vm/${f##*/}" 2> /dev/null || : > "$ns/vm/${f##*/}"
done
for d in /sys/class/bdi/*; do
        mkdir "$ns/bdi/${d##*/}"
        for k in "$d"/*; do
                [[ -f $k ]] && { cat "$k" > "$ns/bdi/${d##*/}/${k##*/}" 2> /dev/null || : > "$ns/bdi/${d##*/}/${k##*/}"; }
        done
done
mount --bind "$ns/vm" /proc/sys/vm && mount --bind "$ns/bdi" /sys/class/bdi ||
        { echo "cannot bind-mount copies over /proc/sys/vm and /sys/class/bdi"; exit 2; }
throttle=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
if [[ -e $throttle ]]; then
        cat "$throttle" > "$ns/throttle"
        mount --bind "$ns/throttle" "$throttle" || { echo "cannot bind-mount a copy over $throttle"; exit 2; }
fi
[[ $(stat -f -c %T /proc/sys/vm/) == tmpfs && $(stat -f -c %T /sys/class/bdi/) == tmpfs ]] ||
        { echo "the copies are not in place"; exit 2; }
sums() { (cd "$ns" && find . -type f | sort | xargs -d '\n' md5sum); }
sums > "$tmp/sums.before"
for f; do
        n=${f##*/}
        env -u WBTUNED_LIVE -u WBTUNED_SKIP_LIVE -u WBTUNED_LIVE_LOCK_HELD \
                WBTUNED_LIVE_LOCK="$tmp/live.lock" PATH="$tmp/stubs:$PATH" \
                timeout 300 "$f" > "$tmp/out/$n" 2>&1 < /dev/null
        echo $? > "$tmp/out/$n.rc"
        sums > "$tmp/out/$n.sums"
        cp "$tmp/calls" "$tmp/out/$n.calls"
        : > "$tmp/calls"
done
EOF

unshare -m --propagation private bash "$tmp/inside.sh" "$tmp" "${live[@]}" > "$tmp/inside.out" 2>&1
rc=$?
[[ $rc -eq 2 ]] && skip "private mount namespace: $(cat "$tmp/inside.out") (the rest passed)"
[[ $rc -eq 0 ]] || { cat "$tmp/inside.out"; fail "the run in the private mount namespace failed ($rc)"; }
[[ $(wc -l < "$tmp/sums.before") -gt 10 ]] || fail "too few knob copies: $(wc -l < "$tmp/sums.before")"

bad=0
prev=$tmp/sums.before
for f in "${live[@]}"; do
        n=${f##*/}
        why=()
        [[ $(cat "$tmp/out/$n.rc") == 77 ]] || why+=("exit $(cat "$tmp/out/$n.rc"), not 77")
        grep -q 'WBTUNED_LIVE=1' "$tmp/out/$n" || why+=("no line naming WBTUNED_LIVE=1")
        [[ -s $tmp/out/$n.calls ]] && why+=("ran: $(paste -sd';' "$tmp/out/$n.calls")")
        cmp -s "$prev" "$tmp/out/$n.sums" ||
                why+=("changed: $(diff "$prev" "$tmp/out/$n.sums" | sed -n 's/^> [0-9a-f]*  //p' | paste -sd' ')")
        prev=$tmp/out/$n.sums
        if [[ ${#why[@]} -gt 0 ]]; then
                log "$n without the opt-in: ${why[*]}"
                sed 's/^/    /' "$tmp/out/$n" | head -n 5
                bad=1
        fi
done
[[ $bad -eq 0 ]] || fail "a live-kernel test did something without WBTUNED_LIVE=1"
ok "without WBTUNED_LIVE=1 each exits 77 naming it, runs no stub and changes no knob copy"
exit 0
