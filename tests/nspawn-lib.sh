# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the tests that boot the cached Debian rootfs with systemd-nspawn (test-nspawn.sh,
# test-deb.sh), sourced after tests/lib.sh: the rootfs, an overlay of it, the boot, and the host's
# knobs before, during and after (a container must not change one).
# They use $tmp (the test's private directory, removed on exit).

# nspawn_rootfs: $rootfs, the cached rootfs (scripts/rootfs.sh builds it once); skips where it
# cannot be built, with rootfs.sh's one line as the reason.
nspawn_rootfs() {
        local rc=0 t=$SECONDS
        rootfs=$(bash "$top_srcdir/scripts/rootfs.sh" 2> "$tmp/rootfs.err") || rc=$?
        [[ $rc -eq 77 ]] && skip "$(tail -n 1 "$tmp/rootfs.err" | sed 's/^rootfs.sh: //')"
        cat "$tmp/rootfs.err"
        [[ $rc -eq 0 && -d $rootfs ]] || fail "scripts/rootfs.sh failed (exit $rc)"
        log "rootfs $rootfs ready after $((SECONDS - t)) s"
}

# --- the host's knobs ----------------------------------------------------------------------------
# Every readable /proc/sys/vm file, kernel.task_delayacct, and every per-BDI limit file. A per-BDI
# *_bytes file is followed by the global threshold read just before and just after it (the kernel
# computes the bytes from that moving threshold: under memory churn, as a parallel build makes, it
# moves by more than a percent in the second the whole snapshot takes).
host_threshold_pages() { awk '$1 == "nr_dirty_threshold" { print $2 }' /proc/vmstat; }
host_knobs_snapshot() {
        local f v t1
        for f in /proc/sys/vm/* /proc/sys/kernel/task_delayacct \
                 /sys/class/bdi/*/{min_ratio,max_ratio,min_ratio_fine,max_ratio_fine,strict_limit,min_bytes,max_bytes}; do
                [[ -f $f ]] || continue
                [[ $f == /sys/*_bytes ]] && t1=$(host_threshold_pages)
                v=$(tr '\n\t' '  ' 2> /dev/null < "$f") || continue
                if [[ $f == /sys/*_bytes ]]; then
                        printf '%s %s %s %s\n' "$f" "$v" "$t1" "$(host_threshold_pages)"
                else
                        printf '%s %s\n' "$f" "$v"
                fi
        done
}

# host_knobs_force_restore BEFORE: safety net only (the test has failed by then): put back the
# tunables the daemon could have changed. Limits first (max before min), then the global pairs by
# their non-zero member.
host_knobs_force_restore() {
        local before=$1 f v
        while read -r f v; do
                case $f in */strict_limit | */max_ratio_fine) [[ $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;; esac
        done < "$before" 2> /dev/null
        while read -r f v; do
                case $f in
                */min_ratio_fine | /proc/sys/kernel/task_delayacct) [[ $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;;
                /proc/sys/vm/dirty_*) [[ $v == 0 || $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;;
                esac
        done < "$before" 2> /dev/null
}

# host_knobs_compare BEFORE LATER...: 0 when every later snapshot holds the knobs of BEFORE; prints
# each change. Every vm file, the ratios and strict_limit exactly. The kernel stores only a ratio
# for min_bytes/max_bytes and reads them back times today's global threshold (bdi_get_bytes()),
# which moves with free memory: those are compared as a share of that threshold.
host_knobs_compare() {
        "$PYTHON3" - "$@" <<'EOF'
import sys
def load(p):
    d = {}
    for line in open(p):
        k, _, v = line.rstrip("\n").partition(" ")
        d[k] = v.strip()
    return d
def share(d, k):
    v, t1, t2 = (int(x) for x in d[k].split())
    return v / ((t1 + t2) / 2 * 4096)
a = load(sys.argv[1])
bad = []
for p in sys.argv[2:]:
    b = load(p)
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            continue
        if k.startswith("/sys/") and k.endswith("_bytes") and k in a and k in b:
            # 0.5 % of the threshold: reading skew; a cap of the daemon's moves it by far more
            if abs(share(a, k) - share(b, k)) <= 0.005:
                continue
        shown = lambda d: d[k].split()[0] if k.endswith("_bytes") and k in d else d.get(k, "(missing)")
        line = "%s: %s -> %s" % (k, shown(a), shown(b))
        if line not in bad:
            bad.append(line)
            print("changed on the host (%s): %s" % (p.rsplit("/", 1)[-1], line))
sys.exit(1 if bad else 0)
EOF
}

# nspawn_lock_host: takes the live-kernel lock (from here on the host's knobs are compared: no other
# live test may change them meanwhile) and snapshots the host's knobs into $tmp/knobs.before.
# Sets lock_wait_s, the seconds waited for the lock.
nspawn_lock_host() {
        local t=$SECONDS
        live_lock
        lock_wait_s=$((SECONDS - t))
        [[ $lock_wait_s -gt 0 ]] && log "waited $lock_wait_s s for the live-kernel lock"
        host_knobs_snapshot > "$tmp/knobs.before"
}

# nspawn_show_logs_on_failure JOURNAL_LINES: on a failed exit, print the checks' log, the journal's
# wbtuned lines (the last JOURNAL_LINES) and the end of the console.
nspawn_show_logs_on_failure() {
        push_cleanup "[[ \$_exit_rc -ne 0 && \$_exit_rc -ne 77 ]] && _nspawn_show_logs $1"
}
_nspawn_show_logs() {
        echo "--- checks log"
        cat "$results/log" 2> /dev/null
        echo "--- wbtuned in the journal"
        grep -E 'wbtuned' "$results/journal.txt" 2> /dev/null | tail -n "$1"
        echo "--- console (last 40 lines)"
        tail -n 40 "$tmp/console.log"
}

# --- the container -------------------------------------------------------------------------------
# nspawn_overlay: $tmp/root, an overlay of $rootfs (a private copy where overlayfs is missing);
# $results, where the container's /wbtuned-e2e can be read after it stopped.
nspawn_overlay() {
        mkdir -p "$tmp/upper" "$tmp/work" "$tmp/root"
        if mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/root" 2> "$tmp/overlay.err"; then
                push_cleanup "umount '$tmp/root' 2>/dev/null || umount -l '$tmp/root'"
                results=$tmp/upper/wbtuned-e2e
        else
                log "no overlayfs ($(cat "$tmp/overlay.err")): copying the rootfs"
                cp -a "$rootfs/." "$tmp/root/" || fail "cp -a $rootfs"
                results=$tmp/root/wbtuned-e2e
        fi
}

# nspawn_checks_unit SCRIPT: SCRIPT runs inside, from an enabled unit, after boot; it writes
# /wbtuned-e2e/results and powers the container off.
nspawn_checks_unit() {
        mkdir -p "$tmp/root/wbtuned-e2e"
        install -m 0755 "$1" "$tmp/root/wbtuned-e2e/checks.sh"
        install -m 0644 "$top_srcdir/tests/nspawn-check-helpers.sh" "$tmp/root/wbtuned-e2e/helpers.sh"
        cat > "$tmp/root/etc/systemd/system/wbtuned-e2e.service" <<'EOF'
[Unit]
Description=wbtuned end-to-end checks (tests/test-nspawn.sh, tests/test-deb.sh)
After=multi-user.target
[Service]
Type=simple
ExecStart=/bin/bash /wbtuned-e2e/checks.sh
EOF
        mkdir -p "$tmp/root/etc/systemd/system/multi-user.target.wants"
        ln -sf /etc/systemd/system/wbtuned-e2e.service "$tmp/root/etc/systemd/system/multi-user.target.wants/wbtuned-e2e.service"
}

# nspawn_boot_watch: boots $tmp/root until the checks power it off, with a snapshot of the host's
# knobs every second ($tmp/knobs.during.N: a daemon that wrote and restored at stop would pass a
# before/after comparison). Sets nspawn_rc, boot_s, n_during; the console is in $tmp/console.log.
# CAP_NET_ADMIN: the unit keeps it for taskstats, and a container only gets it when asked.
# timeout: nspawn shuts the container down on SIGTERM, and is killed 15 s later if it hangs.
nspawn_boot_watch() {
        local t=$SECONDS
        log "booting the container (systemd-nspawn -b)"
        timeout -k 15 150 systemd-nspawn -q -D "$tmp/root" -b --register=no --keep-unit --console=pipe \
                --capability=CAP_NET_ADMIN --machine="wbtuned-e2e-$$" < /dev/null > "$tmp/console.log" 2>&1 &
        nspawn_pid=$!
        # on an early exit: SIGTERM makes nspawn power the container off (timeout kills it 15 s later)
        push_cleanup '[[ -n $nspawn_pid ]] && { kill $nspawn_pid 2>/dev/null; wait $nspawn_pid 2>/dev/null; }'
        n_during=0
        while kill -0 "$nspawn_pid" 2> /dev/null; do
                n_during=$((n_during + 1))
                host_knobs_snapshot > "$tmp/knobs.during.$n_during"
                sleep 1
        done
        wait "$nspawn_pid"
        nspawn_rc=$?
        nspawn_pid=
        boot_s=$((SECONDS - t))
        log "the container ran for $boot_s s (exit $nspawn_rc)"
}

# nspawn_judge_host_knobs: counts a failure in $failed when the container changed a host knob
# (and puts the knobs back).
nspawn_judge_host_knobs() {
        # the comparison itself must be able to fail: one ratio changed, one cap doubled
        awk '!done && $1 ~ /\/max_ratio$/ { $2 = $2 + 1; done = 1 } { print }' "$tmp/knobs.before" > "$tmp/knobs.doctored-ratio"
        awk '!done && $1 ~ /\/max_bytes$/ { $2 = sprintf("%.0f", $2 * 2 + 4096); done = 1 } { print }' "$tmp/knobs.before" > "$tmp/knobs.doctored-bytes"
        host_knobs_compare "$tmp/knobs.before" "$tmp/knobs.doctored-ratio" > /dev/null &&
                fail "host_knobs_compare missed a changed max_ratio"
        host_knobs_compare "$tmp/knobs.before" "$tmp/knobs.doctored-bytes" > /dev/null &&
                fail "host_knobs_compare missed a doubled max_bytes"
        if host_knobs_compare "$tmp/knobs.before" "$tmp"/knobs.during.* "$tmp/knobs.after"; then
                ok "no host knob changed ($(grep -c ^/ "$tmp/knobs.before") files, compared $n_during times while the container ran and after)"
        else
                log "FAIL: the container changed host knobs (above)"
                failed=$((failed + 1))
                host_knobs_force_restore "$tmp/knobs.before"
        fi
}

# nspawn_results: reads the checks' ok/fail lines ($results/results), failing when they did not
# run or finish; counts failures in $failed.
nspawn_results() {
        local word rest
        [[ -f $results/results ]] || fail "the checks did not run (no $results/results; nspawn exit $nspawn_rc)"
        grep -qx 'done' "$results/results" || fail "the checks did not finish (nspawn exit $nspawn_rc, $boot_s s)"
        [[ $nspawn_rc -eq 0 ]] || fail "systemd-nspawn exited $nspawn_rc (124: it had to be stopped)"
        while read -r word rest; do
                case $word in
                ok) ok "$rest" ;;
                fail) log "FAIL: $rest"; failed=$((failed + 1)) ;;
                esac
        done < "$results/results"
}
