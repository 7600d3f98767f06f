#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debian's own kernels under qemu: bookworm's linux-image-amd64 (6.1) and bookworm-backports' (6.12)
# boot the cached VM rootfs (scripts/rootfs.sh vm) on a virtio disk with udev, wbtuned installed as
# a package with the shipped unit, and scripts/vm-guest.sh inside: the kernel's file inventory, a
# slow (IOWriteBandwidthMax=) and a fast loop device written at once, the daemon's per-device
# figures against /proc/meminfo, its caps and vm.dirty_bytes, an exact restore at stop, and a
# MemoryMax= and a MemoryHigh= writer's throughput, alone and beside a slow writer of the root
# cgroup, with the kernel alone and with the daemon; a dm-crypt over dm-linear over a USB stick, a
# device swapped for dm's error target under a writer and then removed, and a loopback NFS mount
# remounted. Prints a markdown
# matrix (kernel x feature x result) and keeps every raw file in the output directory.
#
#   sudo bash scripts/vm-matrix.sh [-o DIR] [6.1] [6.12]   (default: both; DIR: /var/tmp/wbtuned-vm-matrix-DATE)
#
# Not part of the test suite: each kernel takes a few minutes under TCG. The host's knobs are
# never touched (the VM has its own kernel; its disk is opened with O_DIRECT), but qemu takes
# both CPUs, so it waits for the live-kernel lock like a benchmark (WBTUNED_VM_NO_LOCK=1: don't).
# Knobs: VM_MEM (default 8G), VM_SMP (2: the guest's CPUs; 16 or 64 for the per-CPU counter error
# of big machines, slow under TCG), VM_TCG_THREAD (multi, or single above 4 CPUs), VM_TIMEOUT_S (1200), SLOW_BPS (8M), SLOW_MB (300), FAST_MB (2000),
# WRITE_S (30), MEMCG_MAX (2G), MEMCG_MB (1500), MEMCG_REPEAT (3: pairs of runs of each memcg writer,
# kernel alone and with the daemon back to back, the order alternating; under TCG 9 decide a 10 % line,
# and the report says so of fewer, with FAIL_REPEAT: 57 min for 6.1 at 9), BESIDE_MB
# (200: the root cgroup's slow writer beside the memcg writer), STACK_MB (300: to dm-crypt over
# dm-linear over the guest's USB stick), FAIL_FAST_MB (1000: the fast writer beside a device that
# fails), FAIL_REPEAT (3: runs of the failing case with the daemon and with the kernel alone), NFS_MB (400: to a loopback NFS mount).
# The whole script is one compound command, read before any of it runs: bash reads a plain script as it
# goes, and an edit of this file during a run (an hour under TCG) made it run half lines.
{
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "vm-matrix: $*" >&2; }
die() { say "$*"; exit 1; }

outdir=
while getopts o: opt; do
        case $opt in
        o) outdir=$OPTARG ;;
        *) echo "usage: vm-matrix.sh [-o DIR] [6.1] [6.12]" >&2; exit 2 ;;
        esac
done
shift $((OPTIND - 1))
kernels=("$@")
[[ ${#kernels[@]} -gt 0 ]] || kernels=(6.1 6.12)
for k in "${kernels[@]}"; do
        [[ $k == 6.1 || $k == 6.12 ]] ||
                { echo "vm-matrix: no kernel '$k': 6.1 (bookworm's) or 6.12 (bookworm-backports')" >&2; exit 2; }
done

[[ $(id -u) -eq 0 ]] || die "run as root (it builds a disk image and boots qemu)"
command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 is missing: bash scripts/deps.sh vm"
command -v mkfs.ext4 > /dev/null && command -v debugfs > /dev/null || die "e2fsprogs is missing"

outdir=${outdir:-/var/tmp/wbtuned-vm-matrix-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$outdir"
vm_mem=${VM_MEM:-8G}
vm_timeout_s=${VM_TIMEOUT_S:-1200}
vm_smp=${VM_SMP:-2}
[[ $vm_smp =~ ^[1-9][0-9]*$ ]] || die "VM_SMP=$vm_smp: not a number of CPUs"

vmroot=$(bash "$top/scripts/rootfs.sh" vm) || die "no VM rootfs (scripts/rootfs.sh vm said why)"

tmp=$(mktemp -d /var/tmp/wbtuned-vm.XXXXXX)
qemu_pid=
overlay=
cleanup() {
        set +e
        [[ -n $qemu_pid ]] && { kill "$qemu_pid" 2> /dev/null; wait "$qemu_pid" 2> /dev/null; }
        [[ -n $overlay ]] && { umount "$overlay" 2> /dev/null || umount -l "$overlay"; }
        rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ${WBTUNED_VM_NO_LOCK:-0} != 1 && ${WBTUNED_LIVE_LOCK_HELD:-0} != 1 ]]; then
        exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}"
        if ! flock -n 9; then
                say "waiting for the live-kernel lock (qemu takes both CPUs; a benchmark runs)"
                flock 9
        fi
fi

# --- the package, as Debian builds it; the guest installs it with apt, as an admin would ----------
# (a copy of the tracked files, so a developer's configured checkout is neither used nor changed;
# the unit tests ran in the test suite, so the package build skips them)
say "building the .deb (dpkg-buildpackage -us -uc -b) from a copy of the tracked files"
command -v dpkg-buildpackage > /dev/null || die "dpkg-buildpackage is missing: bash scripts/deps.sh"
mkdir -p "$tmp/pkg/wbtuned"
git -C "$top" ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$tmp/pkg/wbtuned") ||
        die "copying the tracked files of $top failed"
(cd "$tmp/pkg/wbtuned" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b > ../build.log 2>&1) ||
        { tail -n 30 "$tmp/pkg/build.log" >&2; die "building the package failed (log: the lines above)"; }
deb=$(ls "$tmp"/pkg/wbtuned_*.deb)
git -C "$top" describe --always --dirty > "$outdir/wbtuned-version" 2> /dev/null || echo unknown > "$outdir/wbtuned-version"

# KVM only where the CPU says it has it: this machine has a /dev/kvm (nested, in a Firecracker VM)
# that starts a guest and then fails with "KVM internal error ... emulation failure" in the kernel's
# decompressor. TCG otherwise, with every CPU feature it can emulate.
if [[ -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
        accel_args=(-accel kvm -cpu host)
else
        # Multi-threaded TCG executes a kernel's int3 text patching (static keys) on one vCPU while
        # another still runs the patched code from its translation cache: "Oops: int3" at a static-branch
        # site (sched_clock_idle_wakeup_event at boot with -smp 64; ttwu_do_activate once with 2). One
        # host thread for all vCPUs has no such race; VM_TCG_THREAD=multi|single, single above 4 CPUs.
        tcg_thread=${VM_TCG_THREAD:-$( ((vm_smp > 4)) && echo single || echo multi)}
        [[ $tcg_thread == multi || $tcg_thread == single ]] || die "VM_TCG_THREAD=$tcg_thread: multi or single"
        accel_args=(-accel "tcg,thread=$tcg_thread" -cpu max)
fi

kernel_file() {   # kernel_file 6.1 -> /boot/vmlinuz-6.1.0-N-amd64 of the VM rootfs
        local f
        for f in "$vmroot"/boot/vmlinuz-"$1".*; do
                [[ -e $f ]] && { echo "$f"; return 0; }
        done
        return 1
}

for k in "${kernels[@]}"; do
        vmlinuz=$(kernel_file "$k") || { say "no $k kernel in $vmroot/boot (backports unreachable?): skipping it"; continue; }
        version=${vmlinuz##*/vmlinuz-}
        initrd=$vmroot/boot/initrd.img-$version
        [[ -e $initrd ]] || die "no $initrd"
        say "kernel $version: building the disk"
        mkdir -p "$tmp/$k/upper" "$tmp/$k/work" "$tmp/$k/root"
        overlay=$tmp/$k/root
        mount -t overlay overlay -o "lowerdir=$vmroot,upperdir=$tmp/$k/upper,workdir=$tmp/$k/work" "$overlay"
        mkdir -p "$overlay/wbtuned-vm"
        cp "$deb" "$overlay/wbtuned-vm/"
        install -m 0755 "$top/scripts/vm-guest.sh" "$overlay/wbtuned-vm/guest.sh"
        cat > "$overlay/wbtuned-vm/params" <<EOF
SLOW_BPS=${SLOW_BPS:-8M}
SLOW_MB=${SLOW_MB:-300}
FAST_MB=${FAST_MB:-2000}
WRITE_S=${WRITE_S:-30}
MEMCG_MAX=${MEMCG_MAX:-2G}
MEMCG_MB=${MEMCG_MB:-1500}
MEMCG_REPEAT=${MEMCG_REPEAT:-3}
BESIDE_MB=${BESIDE_MB:-200}
STACK_MB=${STACK_MB:-300}
FAIL_FAST_MB=${FAIL_FAST_MB:-1000}
FAIL_REPEAT=${FAIL_REPEAT:-3}
NFS_MB=${NFS_MB:-400}
EOF
        cat > "$overlay/etc/systemd/system/wbtuned-vm.service" <<'EOF'
[Unit]
Description=wbtuned VM matrix (scripts/vm-guest.sh)
After=multi-user.target
[Service]
Type=simple
ExecStart=/bin/bash /wbtuned-vm/guest.sh
EOF
        mkdir -p "$overlay/etc/systemd/system/multi-user.target.wants"
        ln -sf /etc/systemd/system/wbtuned-vm.service "$overlay/etc/systemd/system/multi-user.target.wants/"
        echo "wbtuned-vm" > "$overlay/etc/hostname"
        disk=$tmp/$k/disk.img
        truncate -s 14G "$disk"
        stick=$tmp/$k/stick.img    # the guest's USB stick (qemu's usb-storage on xhci): item 5's stack sits on it
        truncate -s 2G "$stick"
        mkfs.ext4 -q -F -L root -d "$overlay" "$disk" > "$tmp/$k/mkfs.out" 2>&1 || { cat "$tmp/$k/mkfs.out" >&2; die "mkfs.ext4 -d failed"; }
        umount "$overlay"
        overlay=
        rm -rf --one-file-system "$tmp/$k/upper" "$tmp/$k/work"

        say "kernel $version: booting qemu (${accel_args[1]}, $vm_mem, $vm_smp CPUs; timeout $vm_timeout_s s)"
        t=$SECONDS
        timeout -k 10 "$vm_timeout_s" nice -n 10 qemu-system-x86_64 "${accel_args[@]}" -m "$vm_mem" -smp "$vm_smp" \
                -nographic -no-reboot -kernel "$vmlinuz" -initrd "$initrd" \
                -append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=0" \
                -drive "file=$disk,if=virtio,format=raw,cache=none" -nic none \
                -device qemu-xhci -drive "if=none,id=stick,file=$stick,format=raw,cache=none" \
                -device usb-storage,drive=stick,removable=on \
                < /dev/null > "$outdir/console-$k.log" 2>&1 &
        qemu_pid=$!
        rc=0
        wait "$qemu_pid" || rc=$?
        qemu_pid=
        say "kernel $version: qemu ran $((SECONDS - t)) s (exit $rc)"
        rm -rf "${outdir:?}/$k"
        debugfs -R "rdump /wbtuned-vm/out $tmp/$k" "$disk" > /dev/null 2>&1 || true
        if [[ -d $tmp/$k/out ]]; then
                mv "$tmp/$k/out" "$outdir/$k"
        else
                mkdir -p "$outdir/$k"
                say "kernel $version: the guest left no results (console: $outdir/console-$k.log)"
        fi
        echo "$((SECONDS - t))" > "$outdir/$k/qemu_seconds"
        echo "$rc" > "$outdir/$k/qemu_exit"
        # issue 23 row 10 (6.12 only): ReadOnlyPaths=/proc/sys/vm, no "Failed to write", one "observing only"
        if [[ -e $outdir/$k/readonly ]]; then
                say "kernel $version: read-only /proc/sys/vm: $(tail -n 1 "$outdir/$k/readonly")" \
                    "($(head -n 4 "$outdir/$k/readonly" | tr '\n' ' '))"
        fi
        rm -f "$disk" "$stick"
done

"${PYTHON3:-python3}" "$top/scripts/vm-matrix-report.py" "$outdir" "${kernels[@]}" | tee "$outdir/matrix.md"
say "raw results in $outdir"
exit
}
