#!/bin/bash
# End to end under a real systemd (252, Debian 12) booted with systemd-nspawn: wbtuned installed as
# a package would install it, driven through the shipped unit by tests/nspawn-checks.sh inside.
# Checks: the unit's container condition; enable --now with a STATUS line; wbtunectl as root and as
# a plain user; a writer shown by top; reload good and broken (fails, file:line, old config kept);
# the watchdog restarts a hung daemon; stop ends inactive, not failed. And the container must not
# change one host knob: every /proc/sys/vm file and per-BDI limit is compared before and after.
#
# The Debian rootfs is cached under /var/cache/wbtuned-test (scripts/rootfs.sh builds it once,
# ~1 min); each run boots an overlay of it, so runs never change the cache.
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

[[ $(id -u) -eq 0 ]] || skip "not root: booting a container needs root"
command -v systemd-nspawn > /dev/null || skip "systemd-nspawn is not installed (apt-get install systemd-container)"
[[ -d /sys/class/bdi ]] || skip "no /sys/class/bdi on this kernel"
command -v "$PYTHON3" > /dev/null || skip "python3 not found"
# the package build below is a second, out-of-tree build of the sources
[[ -e $top_srcdir/config.status ]] && skip "$top_srcdir is configured in place; this test needs an out-of-tree build (scripts/test.sh builds in build/)"
# no live-kernel tests in the distcheck pass: not even the rootfs build
[[ ${WBTUNED_SKIP_LIVE:-0} == 1 ]] && skip "WBTUNED_SKIP_LIVE=1: live-kernel tests are off"

tmp=$(mktemp -d /var/tmp/wbtuned-nspawn.XXXXXX) || fail "mktemp -d"
push_cleanup "rm -rf --one-file-system '$tmp'"
mkdir "$tmp/upper" "$tmp/work" "$tmp/root" "$tmp/build"

started=$SECONDS
rc=0
rootfs=$(bash "$top_srcdir/scripts/rootfs.sh" 2> "$tmp/rootfs.err") || rc=$?
# where it cannot be built, its one line is the reason to skip
[[ $rc -eq 77 ]] && skip "$(tail -n 1 "$tmp/rootfs.err" | sed 's/^rootfs.sh: //')"
cat "$tmp/rootfs.err"
[[ $rc -eq 0 && -d $rootfs ]] || fail "scripts/rootfs.sh failed (exit $rc)"
log "rootfs $rootfs ready after $((SECONDS - started)) s"
# from here on the host's knobs are compared: no other live test may change them meanwhile
t=$SECONDS
live_lock
lock_wait_s=$((SECONDS - t))
[[ $lock_wait_s -gt 0 ]] && log "waited $lock_wait_s s for the live-kernel lock"

# --- the host's knobs, as they are now ------------------------------------------------------------
# Every readable /proc/sys/vm file, kernel.task_delayacct, and every per-BDI limit file, with the
# global threshold read just before and after the per-BDI files.
threshold_pages() { awk '$1 == "nr_dirty_threshold" { print $2 }' /proc/vmstat; }
snapshot() {
        local f v
        printf 'threshold_pages_1 %s\n' "$(threshold_pages)"
        for f in /proc/sys/vm/* /proc/sys/kernel/task_delayacct \
                 /sys/class/bdi/*/{min_ratio,max_ratio,min_ratio_fine,max_ratio_fine,strict_limit,min_bytes,max_bytes}; do
                [[ -f $f ]] || continue
                v=$(tr '\n\t' '  ' 2> /dev/null < "$f") || continue
                printf '%s %s\n' "$f" "$v"
        done
        printf 'threshold_pages_2 %s\n' "$(threshold_pages)"
}
snapshot > "$tmp/knobs.before"

# Safety net only (the test has failed by then): put back the tunables the daemon could have
# changed. Limits first (max before min), then the global pairs by their non-zero member.
force_restore() {
        local f v
        while read -r f v; do
                case $f in */strict_limit | */max_ratio_fine) [[ $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;; esac
        done < "$tmp/knobs.before" 2> /dev/null
        while read -r f v; do
                case $f in
                */min_ratio_fine | /proc/sys/kernel/task_delayacct) [[ $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;;
                /proc/sys/vm/dirty_*) [[ $v == 0 || $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;;
                esac
        done < "$tmp/knobs.before" 2> /dev/null
}

# --- an overlay of the cached rootfs (a private copy where overlayfs is missing) -----------------
if mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/root" 2> "$tmp/overlay.err"; then
        push_cleanup "umount '$tmp/root' 2>/dev/null || umount -l '$tmp/root'"
        results=$tmp/upper/wbtuned-e2e
else
        log "no overlayfs ($(cat "$tmp/overlay.err")): copying the rootfs"
        cp -a "$rootfs/." "$tmp/root/" || fail "cp -a $rootfs"
        results=$tmp/root/wbtuned-e2e
fi

# --- install as a package would: configure for /usr and /etc, make install DESTDIR= --------------
t=$SECONDS
(cd "$tmp/build" && "$top_srcdir/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var > configure.out 2>&1 &&
 make -j2 > make.out 2>&1 && make install DESTDIR="$tmp/root" > install.out 2>&1) ||
        { tail -n 30 "$tmp"/build/*.out; fail "building or installing the package failed"; }
for f in /usr/sbin/wbtuned /usr/bin/wbtunectl /etc/wbtuned.conf /usr/lib/systemd/system/wbtuned.service; do
        [[ -e $tmp/root$f ]] || fail "make install did not install $f"
done
log "built and installed into the rootfs in $((SECONDS - t)) s"

# the checks, from an enabled unit
mkdir -p "$tmp/root/wbtuned-e2e"
install -m 0755 "$top_srcdir/tests/nspawn-checks.sh" "$tmp/root/wbtuned-e2e/checks.sh"
cat > "$tmp/root/etc/systemd/system/wbtuned-e2e.service" <<'EOF'
[Unit]
Description=wbtuned end-to-end checks (tests/test-nspawn.sh)
After=multi-user.target
[Service]
Type=simple
ExecStart=/bin/bash /wbtuned-e2e/checks.sh
EOF
mkdir -p "$tmp/root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/wbtuned-e2e.service "$tmp/root/etc/systemd/system/multi-user.target.wants/wbtuned-e2e.service"

# --- boot ----------------------------------------------------------------------------------------
# CAP_NET_ADMIN: the unit keeps it for taskstats, and a container only gets it when asked.
# timeout: nspawn shuts the container down on SIGTERM, and is killed 15 s later if it hangs.
t=$SECONDS
log "booting the container (systemd-nspawn -b)"
timeout -k 15 150 systemd-nspawn -q -D "$tmp/root" -b --register=no --keep-unit --console=pipe \
        --capability=CAP_NET_ADMIN --machine="wbtuned-e2e-$$" < /dev/null > "$tmp/console.log" 2>&1 &
nspawn_pid=$!
# on an early exit: SIGTERM makes nspawn power the container off (timeout kills it 15 s later)
push_cleanup '[[ -n $nspawn_pid ]] && { kill $nspawn_pid 2>/dev/null; wait $nspawn_pid 2>/dev/null; }'
# the host's knobs every second while the container runs: a daemon that wrote and restored at
# stop would pass a before/after comparison
n_during=0
while kill -0 "$nspawn_pid" 2> /dev/null; do
        n_during=$((n_during + 1))
        snapshot > "$tmp/knobs.during.$n_during"
        sleep 1
done
wait "$nspawn_pid"
nspawn_rc=$?
nspawn_pid=
boot_s=$((SECONDS - t))
log "the container ran for $boot_s s (exit $nspawn_rc)"

snapshot > "$tmp/knobs.after"

show_logs() {
        echo "--- checks log"
        cat "$results/log" 2> /dev/null
        echo "--- wbtuned in the journal"
        grep -E 'wbtuned|systemd\[1\]: wbtuned' "$results/journal.txt" 2> /dev/null | tail -n 80
        echo "--- console (last 40 lines)"
        tail -n 40 "$tmp/console.log"
}
push_cleanup '[[ $_exit_rc -ne 0 && $_exit_rc -ne 77 ]] && show_logs'

# --- judge ---------------------------------------------------------------------------------------
failed=0
# 1. the host's knobs: every vm file, the ratios and strict_limit exactly. The kernel stores only a
#    ratio for min_bytes/max_bytes and reads them back times today's global threshold
#    (bdi_get_bytes()), which moves with free memory: compare them as a share of that threshold.
if "$PYTHON3" - "$tmp/knobs.before" "$tmp"/knobs.during.* "$tmp/knobs.after" <<'EOF'
import sys
def load(p):
    d = {}
    for line in open(p):
        k, _, v = line.rstrip("\n").partition(" ")
        d[k] = v.strip()
    return d
def share(d, k):
    thresh = (int(d["threshold_pages_1"]) + int(d["threshold_pages_2"])) / 2 * 4096
    return int(d[k]) / thresh
a = load(sys.argv[1])
bad = []
for p in sys.argv[2:]:
    b = load(p)
    for k in sorted(set(a) | set(b)):
        if k.startswith("threshold_pages") or a.get(k) == b.get(k):
            continue
        if k.startswith("/sys/") and k.endswith("_bytes") and k in a and k in b:
            # 0.5 % of the threshold: reading skew; a cap of the daemon's moves it by far more
            if abs(share(a, k) - share(b, k)) <= 0.005:
                continue
        line = "%s: %s -> %s" % (k, a.get(k, "(missing)"), b.get(k, "(missing)"))
        if line not in bad:
            bad.append(line)
            print("changed on the host (%s): %s" % (p.rsplit("/", 1)[-1], line))
sys.exit(1 if bad else 0)
EOF
then
        ok "no host knob changed ($(grep -c ^/ "$tmp/knobs.before") files, compared $n_during times while the container ran and after)"
else
        log "FAIL: the container changed host knobs (above)"
        failed=$((failed + 1))
        force_restore
fi

[[ -f $results/results ]] || fail "the checks did not run (no $results/results; nspawn exit $nspawn_rc)"
grep -qx 'done' "$results/results" || fail "the checks did not finish (nspawn exit $nspawn_rc, $boot_s s)"
[[ $nspawn_rc -eq 0 ]] || fail "systemd-nspawn exited $nspawn_rc (124: it had to be stopped)"

while read -r word rest; do
        case $word in
        ok) ok "$rest" ;;
        fail) log "FAIL: $rest"; failed=$((failed + 1)) ;;
        esac
done < "$results/results"

# 2. what the daemon answered, judged here (python3 is on the host, not in the container)
json=$results/json
jcheck() {   # jcheck NAME FILE PYEXPR
        local name=$1 file=$2 expr=$3
        if [[ -s $file ]] && json_check "$(cat "$file")" "$expr"; then
                ok "$name"
        else
                log "FAIL: $name: $expr is false in $file"
                json_get "$(cat "$file" 2> /dev/null || echo '{}')" '{k: v for k, v in j.items() if k in ("mode", "observe_only_reason", "tick_ms", "attribution", "dirtiers", "paused")}' 2>&1 | head -c 1500
                failed=$((failed + 1))
        fi
}
jcheck "status: mode observe in a container" "$json/status.json" 'j["mode"] == "observe"'
jcheck "status: the reason names the container" "$json/status.json" \
        '"container" in (j.get("observe_only_reason") or "") and "systemd-nspawn" in j["observe_only_reason"]'
jcheck "devices: at least one backing device" "$json/devices.json" 'len(devices(j)) > 0'
jcheck "top: the plain user's dd is among the dirtiers" "$json/top.json" \
        'any(d.get("comm") == "dd" and d.get("write_bytes_per_s", 0) > 0 for d in j.get("dirtiers", []))'
jcheck "top as a plain user answers" "$json/top.user.json" '"dirtiers" in j'
jcheck "reload: the good drop-in took effect (tick 500 ms)" "$json/status.reloaded.json" 'j["tick_ms"] == 500'
jcheck "reload: the broken drop-in left the old config (tick 500 ms)" "$json/status.after-broken.json" 'j["tick_ms"] == 500'
if grep -q 'Observing only, writing no knob: running in a container' "$results/journal.txt"; then
        ok "the journal says why it only observes"
else
        log "FAIL: no 'Observing only, writing no knob: running in a container' line in the journal"
        failed=$((failed + 1))
fi

log "total $((SECONDS - started - lock_wait_s)) s without the lock wait (container $boot_s s)"
[[ $failed -eq 0 ]] || fail "$failed checks failed"
exit 0
