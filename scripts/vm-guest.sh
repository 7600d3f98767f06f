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
. /wbtuned-vm/params    # SLOW_BPS, SLOW_MB, FAST_MB, WRITE_S, MEMCG_MAX, MEMCG_MB, MEMCG_REPEAT, BESIDE_MB, FAIL_REPEAT ...

note() { echo "--- $(date +%T) $*"; }
finish() {
        note "finish"
        sample_stop
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

# --- the package, installed with apt as an admin would, then started
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

# One line a second while a case runs, to tell throttling from CPU starvation afterwards: the global
# limit, the fast device's knobs and dirty pages, the writer's dd (wchar, run and wait ns from schedstat)
# and the daemon's CPU ticks. sample_start FILE; ...; sample_stop.
sample_pid=
sample_start() {
        local file=$1
        (
                printf 'time dirty_bytes fast_max_bytes fast_min_ratio fast_strict fast_dirty_kb dd_wchar dd_run_ns dd_wait_ns daemon_ticks\n'
                while :; do
                        local dd dw=- dr=- dwt=- dt=- st fdirty
                        dd=$(pgrep -n -x dd || true)
                        if [[ -n $dd ]]; then
                                dw=$(awk '/^wchar/ { print $2 }' "/proc/$dd/io" 2> /dev/null || echo -)
                                read -r dr dwt _ < "/proc/$dd/schedstat" 2> /dev/null || true
                        fi
                        st=$(pgrep -x wbtuned | head -n 1 || true)
                        [[ -n $st ]] && dt=$(awk '{ print $14 + $15 }' "/proc/$st/stat" 2> /dev/null || echo -)
                        fdirty=$(awk '/^BdiDirty/ { print $2 }' "/sys/kernel/debug/bdi/$fast_bdi/stats" 2> /dev/null || echo -)
                        printf '%s %s %s %s %s %s %s %s %s %s\n' "$(date +%s.%N)" "$(cat /proc/sys/vm/dirty_bytes)" \
                                "$(cat "/sys/class/bdi/$fast_bdi/max_bytes" 2> /dev/null || echo -)" \
                                "$(cat "/sys/class/bdi/$fast_bdi/min_ratio" 2> /dev/null || echo -)" \
                                "$(cat "/sys/class/bdi/$fast_bdi/strict_limit" 2> /dev/null || echo -)" \
                                "$fdirty" "${dw:--}" "${dr:--}" "${dwt:--}" "$dt"
                        sleep 1
                done
        ) > "$file" 2>&1 &
        sample_pid=$!
}
sample_stop() {
        [[ -n $sample_pid ]] && kill "$sample_pid" 2> /dev/null && wait "$sample_pid" 2> /dev/null
        sample_pid=
}

# --- the memcg writers (run in pairs by memcg_pairs, below) -----------------------------------------
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
memcg_write() {   # memcg_write PHASE N: one run of each kind, memcg{,high,beside}-PHASE-N.txt
        local host
        settle
        note "memcg writer ($1 $2): MemoryMax=$MEMCG_MAX, $MEMCG_MB MB to $fast_dev"
        memcg_dd MemoryMax="$MEMCG_MAX" "$out/memcg-$1-$2.txt"
        settle
        note "memcg writer ($1 $2): MemoryHigh=$MEMCG_MAX, $MEMCG_MB MB to $fast_dev"
        memcg_dd MemoryHigh="$MEMCG_MAX" "$out/memcghigh-$1-$2.txt"
        settle
        note "memcg writer ($1 $2): MemoryMax=$MEMCG_MAX beside a host writer of $BESIDE_MB MB to $slow_dev at $SLOW_BPS B/s"
        systemd-run --quiet --wait --pipe --collect -p IOWriteBandwidthMax="$slow_dev $SLOW_BPS" \
                dd if=/dev/zero of=/mnt/slow/beside bs=1M count="$BESIDE_MB" conv=fsync > "$out/hostbeside-$1-$2.txt" 2>&1 &
        host=$!
        sample_start "$out/memcgbeside-$1-$2.samples"
        sleep 2
        memcg_dd MemoryMax="$MEMCG_MAX" "$out/memcgbeside-$1-$2.txt"
        sample_stop
        wait "$host"
        rm -f /mnt/slow/beside
        timeout 120 sync
}
daemon_up() {   # the unit started (again) and answering, a few ticks to see the devices
        systemctl start wbtuned.service
        for _ in $(seq 25); do wbtunectl status > /dev/null 2>&1 && break; sleep 0.2; done
        sleep 3
}
# Pairs of runs, kernel alone and with the daemon back to back, the order alternating (K D, D K,
# K D ...): the guest's speed drifts by a third over its minutes under TCG, which a comparison of
# phases minutes apart reads as the daemon's doing; each pair's ratio cancels it. The daemon is
# started for each of its runs (a start is a transition too) and running again at the end.
memcg_pairs() {
        local i phase
        for ((i = 1; i <= MEMCG_REPEAT; i++)); do
                for phase in $( ((i % 2)) && echo kernel daemon || echo daemon kernel); do
                        if [[ $phase == kernel ]]; then
                                systemctl stop wbtuned.service
                        else
                                daemon_up
                        fi
                        memcg_write "$phase" "$i"
                done
        done
        systemctl is-active -q wbtuned.service || daemon_up
}

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

# --- idle after the writers (issue 22 item 4): with many CPUs the unsummed per-CPU counters read up to
# wb_stat_error() on a clean device; no device may look busy, stalled or worth a reservation for it
timeout 120 sync
sleep 10
cat /sys/devices/system/cpu/possible > "$out/cpus.possible" 2>&1
wbtunectl --json devices > "$out/devices.idle.json" 2>&1
journalctl -q --no-pager -o cat -u wbtuned.service > "$out/journal.default.txt" 2>&1

# --- a stacked, a failing and a network device (issue 22 items 5, 6, 7) ----------------------------
# Each case keeps its raw figures in out/<case>/; vm-matrix-report.py judges them.
bdi_knobs() {   # bdi_knobs MAJ:MIN: the knobs as the kernel has them, one line
        local b=/sys/class/bdi/$1 f v line=
        for f in max_bytes min_ratio max_ratio strict_limit; do
                v=$(cat "$b/$f" 2> /dev/null || echo -)
                line+=" $f=$v"
        done
        echo "${line# }"
}
devnum() { local m; m=$(stat -L -c '%t:%T' "$1") && printf '%d:%d\n' "0x${m%:*}" "0x${m#*:}"; }

# item 5: LUKS-like dm-crypt over an LVM-like dm-linear over the USB stick qemu gives the guest. The
# pages sit on the crypt device's BDI: it must inherit the stick's traits (usb, removable) two levels
# up, take the first bound of a slow device, and match [device "usb"]; the stick and the linear device
# (lower devices) must be left as the kernel has them.
stack_case() {
        local o=$out/stack stick='' b t phase
        mkdir -p "$o"
        for b in /sys/block/sd*; do
                [[ $(readlink -f "$b") == */usb* ]] && { stick=/dev/${b##*/}; break; }
        done
        [[ -n $stick ]] || { echo "skip no USB disk in /sys/block" > "$o/result"; return; }
        head -c 64 /dev/urandom > /run/wbvm.key
        dmsetup create wbvm-lin --table "0 $(blockdev --getsz "$stick") linear $stick 0" &&
                cryptsetup open --type plain --cipher aes-xts-plain64 --key-size 512 --key-file /run/wbvm.key \
                        /dev/mapper/wbvm-lin wbvm-crypt &&
                mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/wbvm-crypt &&
                mkdir -p /mnt/stack && mount /dev/mapper/wbvm-crypt /mnt/stack ||
                { echo "skip building the stack failed" > "$o/result"; stack_down; return; }
        printf 'stick %s\nlinear %s\ncrypt %s\n' "$(devnum "$stick")" "$(devnum /dev/mapper/wbvm-lin)" \
                "$(devnum /dev/mapper/wbvm-crypt)" > "$o/devices"
        stack_knobs "$o" > "$o/knobs.before"
        sleep 3    # a tick or more: the daemon sees the stack before its first write
        stack_knobs "$o" > "$o/knobs.idle"
        wbtunectl --json devices > "$o/devices.idle.json" 2> /dev/null
        note "stack: $STACK_MB MB to dm-crypt over dm-linear over $stick"
        systemd-run --quiet --unit=wbvm-stack dd if=/dev/zero of=/mnt/stack/f bs=1M count="$STACK_MB" conv=fsync
        printf 't\tphase\tdevice\tknobs\n' > "$o/samples.tsv"
        for ((t = 0; t < 20; t++)); do
                phase=default
                if (( t == 12 )); then
                        # the admin's [device "usb"] must reach the encrypted stick
                        mkdir -p /etc/wbtuned.conf.d
                        printf '[device "usb"]\nmax_bytes = 12M\nstrict_limit = yes\n' > /etc/wbtuned.conf.d/60-vm-usb.conf
                        systemctl reload wbtuned.service > "$o/reload.txt" 2>&1
                fi
                (( t >= 12 )) && phase=usb-section
                stack_knobs "$o" | sed "s/^/$t\t$phase\t/; s/ /\t/" >> "$o/samples.tsv"
                wbtunectl --json devices > "$o/devices.$t.json" 2> /dev/null
                sleep 1
        done
        systemctl stop wbvm-stack.service 2> /dev/null
        journalctl -q --no-pager -o cat -u wbvm-stack.service > "$o/writer.txt" 2>&1
        rm -f /etc/wbtuned.conf.d/60-vm-usb.conf
        systemctl reload wbtuned.service >> "$o/reload.txt" 2>&1
        stack_down
        echo 'done' > "$o/result"
}
stack_knobs() {   # stack_knobs DIR: "stick|linear|crypt KNOBS", a line each, the devices of DIR/devices
        local name bdi
        while read -r name bdi; do
                echo "$name $(bdi_knobs "$bdi")"
        done < "$1/devices"
}
stack_down() {
        umount /mnt/stack 2> /dev/null
        cryptsetup close wbvm-crypt 2> /dev/null
        dmsetup remove wbvm-lin 2> /dev/null
        rm -f /run/wbvm.key
}

# item 6: a device that fails with dirty pages (dm-linear over a loop, swapped for the error target
# under the mounted ext4 while a throttled writer fills it) and then vanishes (dmsetup remove). The
# fast device's writer must keep its pace; the gone device must leave the daemon's lists and knobs.
# Run with the daemon and with the kernel alone (PHASE), FAIL_REPEAT times each (N: one run's rate under
# TCG swings by a third and more, its solo run too).
failing_case() {   # failing_case PHASE N
        local o=$out/failing-$1-$2 lo sectors dev t
        mkdir -p "$o"
        truncate -s 4G /var/lib/wbtuned-vm/fail.img
        lo=$(losetup --find --show --direct-io=on /var/lib/wbtuned-vm/fail.img)
        sectors=$(blockdev --getsz "$lo")
        dmsetup create wbvm-fail --table "0 $sectors linear $lo 0" &&
                mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/wbvm-fail &&
                mkdir -p /mnt/fail && mount /dev/mapper/wbvm-fail /mnt/fail ||
                { echo "skip building the device failed" > "$o/result"; failing_down "$lo"; return; }
        dev=$(devnum /dev/mapper/wbvm-fail)
        echo "$dev" > "$o/device"
        settle
        note "failing ($1 $2): the fast writer alone, $FAIL_FAST_MB MB"
        # conv=fsync: the rate to the disk, not how much the page cache absorbed under each phase's limit
        dd if=/dev/zero of=/mnt/fast/solo bs=1M count="$FAIL_FAST_MB" conv=fsync > "$o/fast-solo.txt" 2>&1
        rm -f /mnt/fast/solo
        settle
        note "failing ($1 $2): a writer to $dev at $SLOW_BPS B/s, then the error target under it"
        # the unit of the last run stays loaded as failed after its EIO (6.12): without this, no writer runs
        systemctl reset-failed wbvm-fail.service 2> /dev/null
        systemd-run --quiet --unit=wbvm-fail -p IOWriteBandwidthMax="/dev/mapper/wbvm-fail $SLOW_BPS" \
                dd if=/dev/zero of=/mnt/fail/f bs=1M count=3000
        sleep 8
        wbtunectl --json devices > "$o/devices.before-error.json" 2> /dev/null
        bdi_knobs "$dev" > "$o/knobs.before-error"
        dmsetup suspend --noflush wbvm-fail && dmsetup load wbvm-fail --table "0 $sectors error" &&
                dmsetup resume wbvm-fail
        echo $? > "$o/swap.rc"
        note "failing ($1 $2): the fast writer beside the failing device"
        sample_start "$o/fast-failing.samples"
        dd if=/dev/zero of=/mnt/fast/beside bs=1M count="$FAIL_FAST_MB" conv=fsync > "$o/fast-failing.txt" 2>&1
        sample_stop
        rm -f /mnt/fast/beside
        wbtunectl --json devices > "$o/devices.failing.json" 2> /dev/null
        bdi_knobs "$dev" > "$o/knobs.failing"
        systemctl stop wbvm-fail.service 2> /dev/null
        systemctl show -p ActiveState -p ExecMainStatus wbvm-fail.service > "$o/writer.state" 2>&1
        systemctl reset-failed wbvm-fail.service 2> /dev/null
        umount /mnt/fail 2> "$o/umount.txt" || umount -l /mnt/fail
        dmsetup remove wbvm-fail 2> "$o/remove.txt"
        echo $? > "$o/remove.rc"
        for ((t = 0; t < 4; t++)); do
                sleep 1
                wbtunectl --json devices > "$o/devices.gone.$t.json" 2> /dev/null
        done
        failing_down "$lo"
        dmesg | grep -iE 'wbvm|dm-|I/O error|EXT4-fs error' | tail -n 20 > "$o/dmesg.txt"
        echo 'done' > "$o/result"
}
failing_down() {
        umount /mnt/fail 2> /dev/null
        dmsetup remove wbvm-fail 2> /dev/null
        losetup -d "$1" 2> /dev/null
        rm -f /var/lib/wbtuned-vm/fail.img
}

# item 7: a loopback NFS export is a real NFS mount: an anonymous 0:NN BDI that must be named by
# server:export, bounded from its first write, and remembered by that name across a remount (which
# gives it a new 0:NN).
nfs_case() {
        local o=$out/nfs i dev
        mkdir -p "$o" /srv/wbvm /mnt/nfs
        command -v exportfs > /dev/null || { echo "skip no nfs-kernel-server" > "$o/result"; return; }
        echo '/srv/wbvm 127.0.0.1(rw,no_root_squash,no_subtree_check,fsid=1)' > /etc/exports
        systemctl restart nfs-server.service > "$o/nfs-server.txt" 2>&1 && exportfs -ra ||
                { echo "skip nfs-server did not start" > "$o/result"; return; }
        for i in 1 2; do
                mount -t nfs -o vers=4.2 127.0.0.1:/srv/wbvm /mnt/nfs 2> "$o/mount-$i.txt" ||
                        { echo "skip mount -t nfs failed" > "$o/result"; return; }
                dev=$(mountpoint -d /mnt/nfs)
                echo "$dev" > "$o/device-$i"
                sleep 3
                wbtunectl --json devices > "$o/devices.$i.before.json" 2> /dev/null
                note "nfs ($i): $NFS_MB MB to $dev"
                dd if=/dev/zero of=/mnt/nfs/f bs=1M count="$NFS_MB" conv=fsync > "$o/dd-$i.txt" 2>&1 &
                for ((t = 0; t < 8; t++)); do
                        sleep 1
                        wbtunectl --json devices > "$o/devices.$i.$t.json" 2> /dev/null
                done
                wait
                rm -f /mnt/nfs/f
                umount /mnt/nfs
        done
        systemctl stop nfs-server.service
        echo 'done' > "$o/result"
}
stack_case
for ((n = 1; n <= FAIL_REPEAT; n++)); do failing_case daemon "$n"; done
nfs_case

# the daemon's work over its first life (the memcg pairs restart it)
wbtunectl --json status > "$out/status.end.json" 2>&1

# --- the memcg writers, kernel alone and with the daemon in pairs ------------------------------------
memcg_pairs

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

# --- the failing device, kernel alone ------------------------------------------------------------------
for ((n = 1; n <= FAIL_REPEAT; n++)); do failing_case kernel "$n"; done
# the slow device's dirty data drains at its throttled speed before the devices go
timeout 120 sync
note "done"
