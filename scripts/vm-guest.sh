#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs INSIDE the qemu VM that scripts/vm-matrix.sh boots, from an enabled unit, under systemd:
# what this kernel has, what wbtuned (installed with the shipped unit) sees and does with a slow
# and a fast loop device, whether it restores every knob at stop, and a memory-limited writer's
# throughput with and without it. Everything lands in /wbtuned-vm/out for the host; then poweroff.
set -u
out=/wbtuned-vm/out
mkdir -p "$out"
exec > "$out/log" 2>&1
# shellcheck disable=SC1091
. /wbtuned-vm/params    # SLOW_BPS, SLOW_MB, FAST_MB, WRITE_S, MEMCG_MAX, MEMCG_MB, MEMCG_REPEAT, BESIDE_MB

note() { echo "--- $(date +%T) $*"; }
finish() {
        note "finish"
        journalctl -b --no-pager -o short-monotonic > "$out/journal.txt" 2>&1
        umount /mnt/slow /mnt/fast 2> /dev/null
        [[ -n ${slow_dev:-} ]] && losetup -d "$slow_dev"
        [[ -n ${fast_dev:-} ]] && losetup -d "$fast_dev"
        echo 'done' > "$out/done"
        sync
        systemctl poweroff --no-block
}
trap finish EXIT

uname -r > "$out/kernel"

# --- the package, installed with apt as an admin would; its start waits for the kernel-alone runs
# (policy-rc.d says "not now" to the maintainer scripts' start, not to the enable; no --no-download:
# with it apt 2.6 fails on a local .deb, "Pathname to install is not absolute"; the guest has no network)
note "apt-get install ./wbtuned_*.deb"
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d
DEBIAN_FRONTEND=noninteractive apt-get install -y -q /wbtuned-vm/wbtuned_*.deb > "$out/apt-install.txt" 2>&1
echo $? > "$out/apt-install.rc"
rm -f /usr/sbin/policy-rc.d
systemctl is-enabled wbtuned.service > "$out/unit.enabled-by-package" 2>&1
systemd-detect-virt > "$out/virt" 2>&1
note "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)"

# --- two loop devices on files of the root file system -------------------------------------------
mkdir -p /mnt/slow /mnt/fast /var/lib/wbtuned-vm
modprobe loop 2> /dev/null
truncate -s 4G /var/lib/wbtuned-vm/slow.img /var/lib/wbtuned-vm/fast.img
slow_dev=$(losetup --find --show --direct-io=on /var/lib/wbtuned-vm/slow.img)
fast_dev=$(losetup --find --show --direct-io=on /var/lib/wbtuned-vm/fast.img)
# no lazy init: ext4lazyinit would write behind the first measurement's back
for d in "$slow_dev" "$fast_dev"; do mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$d"; done
mount "$slow_dev" /mnt/slow
mount "$fast_dev" /mnt/fast
slow_bdi=$(cat "/sys/block/${slow_dev#/dev/}/dev")
fast_bdi=$(cat "/sys/block/${fast_dev#/dev/}/dev")
printf 'slow %s %s\nfast %s %s\n' "$slow_dev" "$slow_bdi" "$fast_dev" "$fast_bdi" > "$out/devices"

# --- what this kernel has -------------------------------------------------------------------------
{
        for f in min_ratio max_ratio min_ratio_fine max_ratio_fine min_bytes max_bytes strict_limit; do
                echo "bdi/$f $([[ -e /sys/class/bdi/$fast_bdi/$f ]] && echo yes || echo no)"
        done
        echo "debugfs $(mountpoint -q /sys/kernel/debug && echo yes || echo no)"
        echo "debugfs/bdi/stats $([[ -e /sys/kernel/debug/bdi/$fast_bdi/stats ]] && echo yes || echo no)"
        echo "debugfs/bdi/wb_stats $([[ -e /sys/kernel/debug/bdi/$fast_bdi/wb_stats ]] && echo yes || echo no)"
        echo "cgroup2 $([[ -e /sys/fs/cgroup/cgroup.controllers ]] && echo yes || echo no)"
        echo "tracefs $(mountpoint -q /sys/kernel/tracing && echo /sys/kernel/tracing || echo no)"
        echo "udev $([[ -e /run/udev/control ]] && echo yes || echo no)"
} > "$out/inventory"

# Every knob the daemon may write, as the kernel stores it (per-BDI: the ratios; bytes drift).
knobs() {
        local f
        for f in /proc/sys/vm/dirty_{bytes,ratio,background_bytes,background_ratio,writeback_centisecs,expire_centisecs} \
                 /proc/sys/kernel/task_delayacct \
                 /sys/class/bdi/*/{min_ratio,max_ratio,min_ratio_fine,max_ratio_fine,strict_limit}; do
                [[ -e $f ]] && printf '%s %s\n' "$f" "$(cat "$f")"
        done
}
knobs > "$out/knobs.before"

# --- the memcg writers, kernel alone -------------------------------------------------------------
# dd under MemoryMax= (memcg-*), under MemoryHigh= (memcghigh-*: mem_cgroup_wb_stats() counts
# memory.high too) and under MemoryMax= while a writer of the root cgroup fills the slow device
# (memcgbeside-*, that writer's rate in hostbeside-*): each memcg has its own dirty domain
# (domain_dirty_limits()), sized from vm.dirty_bytes as a share of global dirtyable memory, and a
# device's min/max ratios apply inside it (wb_dirty_limits(mdtc)).
memcg_dd() {   # memcg_dd PROPERTY=VALUE FILE: one dd of MEMCG_MB MB to the fast device in a transient unit
        # --pipe: dd's summary (bytes, seconds, rate) comes back here
        systemd-run --quiet --wait --pipe --collect -p "$1" \
                dd if=/dev/zero of=/mnt/fast/memcg bs=1M count="$MEMCG_MB" > "$2" 2>&1
        rm -f /mnt/fast/memcg
}
settle() {   # nothing dirty and no page cache left from the run before
        timeout 120 sync
        echo 3 > /proc/sys/vm/drop_caches
}
memcg_write() {   # memcg_write PHASE: MEMCG_REPEAT runs of each kind, memcg{,high,beside}-PHASE-N.txt
        local i host
        for ((i = 1; i <= MEMCG_REPEAT; i++)); do
                settle
                note "memcg writer ($1 $i): MemoryMax=$MEMCG_MAX, $MEMCG_MB MB to $fast_dev"
                memcg_dd MemoryMax="$MEMCG_MAX" "$out/memcg-$1-$i.txt"
                settle
                note "memcg writer ($1 $i): MemoryHigh=$MEMCG_MAX, $MEMCG_MB MB to $fast_dev"
                memcg_dd MemoryHigh="$MEMCG_MAX" "$out/memcghigh-$1-$i.txt"
                settle
                note "memcg writer ($1 $i): MemoryMax=$MEMCG_MAX beside a host writer of $BESIDE_MB MB to $slow_dev at $SLOW_BPS B/s"
                systemd-run --quiet --wait --pipe --collect -p IOWriteBandwidthMax="$slow_dev $SLOW_BPS" \
                        dd if=/dev/zero of=/mnt/slow/beside bs=1M count="$BESIDE_MB" > "$out/hostbeside-$1-$i.txt" 2>&1 &
                host=$!
                sleep 2
                memcg_dd MemoryMax="$MEMCG_MAX" "$out/memcgbeside-$1-$i.txt"
                wait "$host"
                rm -f /mnt/slow/beside
        done
        timeout 120 sync
}
memcg_write kernel-before

# --- the daemon, with the shipped unit ------------------------------------------------------------
note "systemctl enable --now wbtuned"
systemctl enable --now wbtuned.service > "$out/enable.txt" 2>&1
for _ in $(seq 50); do systemctl is-active -q wbtuned.service && break; sleep 0.2; done
systemctl show -p ActiveState -p SubState -p StatusText wbtuned.service > "$out/unit.started"
for _ in $(seq 25); do wbtunectl status > /dev/null 2>&1 && break; sleep 0.2; done
wbtunectl --json status > "$out/status.start.json" 2>&1
wbtunectl --json devices > "$out/devices.start.json" 2>&1

# --- a slow and a fast writer at once -------------------------------------------------------------
note "slow writer: $SLOW_MB MB to $slow_dev throttled to $SLOW_BPS B/s (IOWriteBandwidthMax); fast: $FAST_MB MB to $fast_dev"
systemd-run --quiet --unit=wbvm-slow -p IOWriteBandwidthMax="$slow_dev $SLOW_BPS" \
        dd if=/dev/zero of=/mnt/slow/f bs=1M count="$SLOW_MB"
sleep 3
systemd-run --quiet --unit=wbvm-fast dd if=/dev/zero of=/mnt/fast/f bs=1M count="$FAST_MB"
printf 't\tmeminfo_dirty_kb\tmeminfo_writeback_kb\tvm_dirty_bytes\tslow_max_bytes\tslow_strict\tfast_max_bytes\tfast_strict\n' > "$out/samples.tsv"
for ((t = 0; t < WRITE_S; t++)); do
        wbtunectl --json devices > "$out/devices.$t.json" 2>/dev/null
        wbtunectl --json status > "$out/status.$t.json" 2>/dev/null
        wbtunectl --json top --once > "$out/top.$t.json" 2>/dev/null
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" \
                "$(awk '/^Dirty:/ { print $2 }' /proc/meminfo)" "$(awk '/^Writeback:/ { print $2 }' /proc/meminfo)" \
                "$(cat /proc/sys/vm/dirty_bytes)" \
                "$(cat /sys/class/bdi/$slow_bdi/max_bytes 2>/dev/null || echo -)" "$(cat /sys/class/bdi/$slow_bdi/strict_limit 2>/dev/null || echo -)" \
                "$(cat /sys/class/bdi/$fast_bdi/max_bytes 2>/dev/null || echo -)" "$(cat /sys/class/bdi/$fast_bdi/strict_limit 2>/dev/null || echo -)" \
                >> "$out/samples.tsv"
        if (( t == WRITE_S / 2 )); then
                wbtunectl --json explain "$slow_bdi" > "$out/explain.slow.json" 2>&1
                wbtunectl --json explain "$fast_bdi" > "$out/explain.fast.json" 2>&1
                wbtunectl explain "$slow_bdi" > "$out/explain.slow.txt" 2>&1
        fi
        sleep 1
done
for u in wbvm-slow wbvm-fast; do
        systemctl show -p ActiveState -p ExecMainStatus "$u.service" > "$out/$u.state" 2>&1
        systemctl stop "$u.service" 2> /dev/null
done
journalctl -q --no-pager -o cat -u wbvm-slow.service -u wbvm-fast.service > "$out/writers.txt" 2>&1
rm -f /mnt/slow/f /mnt/fast/f

# --- the memcg writers, with the daemon -----------------------------------------------------------
memcg_write daemon
wbtunectl --json status > "$out/status.end.json" 2>&1

# --- stop: every knob back ------------------------------------------------------------------------
note "systemctl stop wbtuned"
systemctl stop wbtuned.service
systemctl show -p ActiveState -p SubState -p Result wbtuned.service > "$out/unit.stopped"
knobs > "$out/knobs.after"
ls /run/wbtuned > "$out/run-wbtuned.after" 2>&1

# --- issue 23 row 10 (6.12): /proc/sys/vm read-only for the unit -------------------------------------
# The daemon must find it before any write, write no device knob alone in ratio mode, and say
# "observing only" once: no "Failed to write" in its journal, the knobs as they were.
if [[ $(uname -r) == 6.12.* ]]; then
        note "wbtuned with a ReadOnlyPaths=/proc/sys/vm drop-in"
        mkdir -p /run/systemd/system/wbtuned.service.d
        printf '[Service]\nReadOnlyPaths=/proc/sys/vm\n' > /run/systemd/system/wbtuned.service.d/50-readonly-vm.conf
        systemctl daemon-reload
        knobs > "$out/knobs.readonly.before"
        since=$(date '+%Y-%m-%d %H:%M:%S')
        sleep 1
        systemctl start wbtuned.service > "$out/readonly.start.txt" 2>&1
        for _ in $(seq 25); do wbtunectl status > /dev/null 2>&1 && break; sleep 0.2; done
        # a slow writer, so that the policy wants a cap and a floor
        systemd-run --quiet --unit=wbvm-ro -p IOWriteBandwidthMax="$slow_dev $SLOW_BPS" \
                dd if=/dev/zero of=/mnt/slow/ro bs=1M count=200
        sleep 15
        wbtunectl status > "$out/status.readonly.txt" 2>&1
        systemctl stop wbvm-ro.service 2> /dev/null
        systemctl stop wbtuned.service
        journalctl -q --no-pager -o cat -u wbtuned.service --since "$since" > "$out/journal.readonly.txt" 2>&1
        knobs > "$out/knobs.readonly.after"
        rm -f /run/systemd/system/wbtuned.service.d/50-readonly-vm.conf /mnt/slow/ro
        systemctl daemon-reload
        failed=$(grep -c 'Failed to write' "$out/journal.readonly.txt" || true)
        observing=$(grep -ci 'observing only' "$out/journal.readonly.txt" || true)
        status_says=$(grep -ci 'observing only' "$out/status.readonly.txt" || true)
        same=no
        cmp -s "$out/knobs.readonly.before" "$out/knobs.readonly.after" && same=yes
        {
                echo "failed_to_write $failed"
                echo "observing_only_lines $observing"
                echo "status_observing_only $status_says"
                echo "knobs_unchanged $same"
                if [[ $failed -eq 0 && $observing -eq 1 && $status_says -ge 1 && $same == yes ]]; then
                        echo "PASS"
                else
                        echo "FAIL"
                fi
        } > "$out/readonly"
fi

# --- the memcg writers, kernel alone again (kernel-alone runs bracket the daemon's) ---------------
memcg_write kernel-after
# the slow device's dirty data drains at its throttled speed before the devices go
timeout 120 sync
note "done"
