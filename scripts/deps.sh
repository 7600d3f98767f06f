#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install the Debian 12 packages wbtuned needs to build, test and bench; only those missing.
#   bash scripts/deps.sh        build, tests, benchmarks
#   bash scripts/deps.sh vm     and qemu for scripts/vm-matrix.sh
set -euo pipefail

packages=(
        # build
        build-essential autoconf automake pkg-config
        libsystemd-dev libnl-3-dev libnl-genl-3-dev libinih-dev libjson-c-dev libmount-dev
        scdoc
        # tests: systemd-analyze, python3 notify listener, valgrind pass, setpriv/runuser,
        # losetup/mount, mkfs.ext4, /bin/kill, modprobe loop
        systemd python3 valgrind util-linux mount e2fsprogs procps kmod
        # shell completion tests (script(1) for the pager and colour tests is in bsdutils)
        bash-completion zsh
        # a second compiler (the tree must build warning-free with clang too) and fuzzing: libFuzzer
        # with the ASan/UBSan runtimes (libclang-rt-14-dev)
        clang libclang-rt-dev
        # tests/test-nspawn.sh: a Debian rootfs booted under systemd-nspawn (wget: debootstrap's)
        debootstrap systemd-container wget
        # tests/test-deb.sh: the Debian package (dpkg-buildpackage -b), checked by lintian
        debhelper lintian
        # tests/test-metrics.sh: promtool checks the metrics, node_exporter serves the textfile (on a
        # machine booted with systemd, installing them also enables and starts both services)
        prometheus prometheus-node-exporter
        # bench
        fio gnuplot-nox xfsprogs btrfs-progs
)
if [[ ${1:-} == vm ]]; then
        packages+=(qemu-system-x86)
fi

missing=()
for p in "${packages[@]}"; do
        # "install ok installed" only; a removed-but-configured package does not count
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
                missing+=("$p")
        fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
        exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
        echo "deps.sh: missing packages: ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
        exit 1
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
