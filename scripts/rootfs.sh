#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cached Debian root file systems for tests/test-nspawn.sh, tests/test-deb.sh and scripts/vm-matrix.sh.
#
#   bash scripts/rootfs.sh [base] [SUITE]   prints the cached rootfs's path, building it first when
#                                 missing: a minbase SUITE (default bookworm; trixie too) with systemd
#                                 as init and the runtime libraries wbtuned links, to boot with nspawn
#   bash scripts/rootfs.sh vm     the same plus udev, kmod, e2fsprogs, dmsetup, cryptsetup, the NFS
#                                 server and two kernels with their initrds in /boot: bookworm's
#                                 linux-image-amd64 (6.1) and, when the mirror has it,
#                                 bookworm-backports' (6.12)
#   bash scripts/rootfs.sh build SUITE CONTROL
#                                 a package BUILD rootfs: `debootstrap --variant=minbase
#                                 --include=build-essential SUITE`, a user "builder", and apt's lists
#                                 plus the .debs (downloaded, NOT installed) of the Build-Depends of
#                                 the debian/control file CONTROL and of lintian, so that a test can
#                                 install exactly those Build-Depends in an overlay without the network
#
# The cache is $WBTUNED_TEST_CACHE (default /var/cache/wbtuned-test)/rootfs-SUITE-<hash of the
# package list> (vm-bookworm-<hash> for the vm flavour, build-SUITE-<hash of the Build-Depends>
# for the build one). A build takes a lock, builds into a temporary directory and renames it into
# place, so two builds at once cannot leave a half-made rootfs, and a finished rootfs never changes
# (runs use a copy or an overlay of it). The mirror is the one apt uses here for SUITE
# ($WBTUNED_DEBIAN_MIRROR overrides it; deb.debian.org when apt has none).
#
# Exit: 0 (path on stdout); 77 it cannot be built here (no debootstrap, mirror unreachable, not
# root), one line on stderr; 1 the build failed (its log is shown).
set -euo pipefail

flavour=${1:-base}
suite=${2:-bookworm}
control=${3:-}
# systemd as PID 1, and the runtime libraries wbtuned links (libsystemd0, libnl, inih, json-c;
# libmount1 is essential)
packages=(systemd systemd-sysv dbus libsystemd0 procps libnl-3-200 libnl-genl-3-200 libinih1 libjson-c5)
# booting a kernel: udev, modules, an initrd, mkfs for the loop devices
vm_packages=(udev kmod e2fsprogs initramfs-tools zstd linux-image-amd64 dmsetup cryptsetup-bin nfs-kernel-server)
# a package build: build-essential only; the Build-Depends are the test's to install
build_packages=(build-essential)
cache=${WBTUNED_TEST_CACHE:-/var/cache/wbtuned-test}
case $flavour in
base | vm) ;;
build) [[ -f $control ]] || { echo "usage: rootfs.sh build SUITE DEBIAN/CONTROL" >&2; exit 2; } ;;
*) echo "usage: rootfs.sh [base|vm] [SUITE] | rootfs.sh build SUITE DEBIAN/CONTROL" >&2; exit 2 ;;
esac
case $suite in
bookworm | trixie) ;;
*) echo "rootfs.sh: unknown suite $suite (bookworm, trixie)" >&2; exit 2 ;;
esac
[[ $flavour == vm && $suite != bookworm ]] && { echo "rootfs.sh: the vm flavour is bookworm only" >&2; exit 2; }

say() { echo "rootfs.sh: $*" >&2; }
cannot() { say "cannot build the $suite rootfs: $*"; exit 77; }

# The URI apt uses for $suite: deb822 .sources first (Debian 12's default), then sources.list.
debian_mirror() {
        local f uri
        if [[ -n ${WBTUNED_DEBIAN_MIRROR:-} ]]; then
                echo "$WBTUNED_DEBIAN_MIRROR"
                return
        fi
        for f in /etc/apt/sources.list.d/*.sources; do
                [[ -f $f ]] || continue
                # paragraph mode: the stanza of binary packages whose Suites names $suite exactly
                uri=$(awk -v suite="$suite" 'BEGIN { RS = ""; FS = "\n" }
                        {
                                types = ""; suites = ""; uris = ""
                                for (i = 1; i <= NF; i++) {
                                        if ($i ~ /^Types:/) types = " " substr($i, 7) " "
                                        if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
                                        if ($i ~ /^URIs:/) uris = substr($i, 6)
                                }
                                gsub(/[ \t]+/, " ", suites)
                                if (types ~ / deb / && suites ~ (" " suite " ")) {
                                        split(uris, u, " ")
                                        for (k in u) if (u[k] != "") { print u[k]; exit }
                                }
                        }' "$f")
                if [[ -n $uri ]]; then
                        echo "$uri"
                        return
                fi
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
                [[ -f $f ]] || continue
                uri=$(awk -v suite="$suite" '$1 == "deb" {
                                i = 2
                                if ($i ~ /^\[/) while ($i !~ /\]$/) i++
                                if ($i ~ /^\[/ || $i ~ /\]$/) i++
                                if ($(i + 1) == suite) { print $i; exit }
                        }' "$f")
                if [[ -n $uri ]]; then
                        echo "$uri"
                        return
                fi
        done
        echo "http://deb.debian.org/debian"
}

[[ $(id -u) -eq 0 ]] || cannot "not root (debootstrap needs root)"
command -v debootstrap > /dev/null || cannot "debootstrap is not installed (apt-get install debootstrap)"

if [[ $flavour == vm ]]; then
        # the base first (it takes and drops its own lock)
        base=$(bash "$0") || exit $?
        hash=$(printf '%s\n' "$base" "${vm_packages[@]}" backports | sha256sum | cut -c1-12)
        name=vm-$suite-$hash
elif [[ $flavour == build ]]; then
        # the Build-Depends field (continuation lines included) decides what is downloaded
        build_depends=$(awk '/^Build-Depends:/ { on = 1; print; next } on && /^[ \t]/ { print; next } { on = 0 }' "$control")
        [[ -n $build_depends ]] || { say "no Build-Depends in $control"; exit 1; }
        hash=$(printf '%s\n' "$suite" "${build_packages[@]}" "$build_depends" lintian | sha256sum | cut -c1-12)
        name=build-$suite-$hash
else
        hash=$(printf '%s\n' "$suite" "${packages[@]}" | sha256sum | cut -c1-12)
        name=rootfs-$suite-$hash
fi
rootfs=$cache/$name
if [[ -f $rootfs/.wbtuned-rootfs ]]; then
        echo "$rootfs"
        exit 0
fi

mkdir -p "$cache"
exec {lock_fd}> "$cache/$flavour-$suite.lock"
if ! flock -n "$lock_fd"; then
        say "waiting for another build of the $flavour $suite rootfs ($cache/$flavour-$suite.lock)"
        flock "$lock_fd"
fi
# built while we waited
if [[ -f $rootfs/.wbtuned-rootfs ]]; then
        echo "$rootfs"
        exit 0
fi

mirror=$(debian_mirror)
command -v wget > /dev/null || cannot "wget is missing (debootstrap needs it)"
wget -q -T 15 -t 2 -O /dev/null "$mirror/dists/$suite/Release" ||
        cannot "the Debian mirror $mirror is unreachable ($mirror/dists/$suite/Release)"

tmp=$(mktemp -d "$cache/.$name.build.XXXXXX")
chmod 0755 "$tmp"    # it becomes "/": mktemp made it 0700
log=$tmp.log
# debootstrap mounts /proc and /sys in the target: unmount before removing anything, and never
# cross into another file system
cleanup() {
        local m
        if [[ -n ${tmp:-} && -d $tmp ]]; then
                findmnt -rn -o TARGET | awk -v p="$tmp/" 'index($0, p) == 1' | sort -r | while read -r m; do
                        umount -l "$m" 2> /dev/null || true
                done
                rm -rf --one-file-system "$tmp"
        fi
        rm -f "${log:-}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$SECONDS
if [[ $flavour == vm ]]; then
        command -v systemd-nspawn > /dev/null || cannot "systemd-nspawn is not installed (apt-get install systemd-container)"
        say "building the VM rootfs in $rootfs from $base (once; a few minutes)"
        cp -a "$base/." "$tmp/"
        backports=no
        if wget -q -T 15 -t 2 -O /dev/null "$mirror/dists/$suite-backports/Release"; then
                backports=yes
                echo "deb $mirror $suite-backports main" > "$tmp/etc/apt/sources.list.d/backports.list"
        else
                say "  $mirror has no $suite-backports: only bookworm's kernel"
        fi
        say "  apt-get install ${vm_packages[*]}$([[ $backports == yes ]] && echo "; -t $suite-backports linux-image-amd64")"
        # apt in the tree, with /proc, /sys and /dev set up by nspawn (the host's network)
        if ! systemd-nspawn -q -D "$tmp" --register=no --keep-unit --pipe \
                env DEBIAN_FRONTEND=noninteractive backports="$backports" suite="$suite" bash -euc '
                        apt-get update -q
                        apt-get install -y -q --no-install-recommends '"${vm_packages[*]}"'
                        if [[ $backports == yes ]]; then
                                apt-get install -y -q --no-install-recommends -t "$suite-backports" linux-image-amd64
                        fi
                        apt-get clean
                        rm -rf /var/lib/apt/lists/*
                        ls /boot' < /dev/null > "$log" 2>&1; then
                tail -n 30 "$log" >&2
                say "installing the VM packages failed (last 30 lines of the log above)"
                exit 1
        fi
        ls "$tmp"/boot/vmlinuz-* > /dev/null 2>&1 || { tail -n 30 "$log" >&2; say "no kernel in $tmp/boot"; exit 1; }
        printf '%s\n' "suite $suite" "mirror $mirror" "base $base" "packages ${vm_packages[*]}" "backports $backports" \
                "kernels $(cd "$tmp/boot" && echo vmlinuz-*)" > "$tmp/.wbtuned-rootfs"
elif [[ $flavour == build ]]; then
        command -v systemd-nspawn > /dev/null || cannot "systemd-nspawn is not installed (apt-get install systemd-container)"
        say "building the $suite package-build rootfs in $rootfs (once; a few minutes)"
        say "  debootstrap --variant=minbase --include=${build_packages[*]} $suite from $mirror"
        if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${build_packages[*]}")" "$suite" "$tmp" "$mirror" > "$log" 2>&1; then
                tail -n 30 "$log" >&2
                say "debootstrap failed (full log above, last 30 lines)"
                exit 1
        fi
        mkdir -p "$tmp/wbtuned-control/debian"
        cp "$control" "$tmp/wbtuned-control/debian/control"
        # the lists and the .debs stay (apt-get clean is not run): the test installs from them
        # offline. No recommends: a package build gets exactly what Build-Depends names.
        printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\nAPT::Keep-Downloaded-Packages "true";\nBinary::apt::APT::Keep-Downloaded-Packages "true";\n' \
                > "$tmp/etc/apt/apt.conf.d/90wbtuned-test"
        say "  the Build-Depends of $control and lintian, downloaded, not installed"
        if ! systemd-nspawn -q -D "$tmp" --register=no --keep-unit --pipe \
                env DEBIAN_FRONTEND=noninteractive bash -euc '
                        apt-get update -q
                        apt-get build-dep -y -q --download-only /wbtuned-control
                        apt-get install -y -q --download-only lintian
                        useradd -m -s /bin/bash builder
                        rm -r /wbtuned-control' < /dev/null >> "$log" 2>&1; then
                tail -n 30 "$log" >&2
                say "downloading the Build-Depends failed (last 30 lines of the log above)"
                exit 1
        fi
        printf '%s\n' "suite $suite" "mirror $mirror" "packages ${build_packages[*]}" "$build_depends" > "$tmp/.wbtuned-rootfs"
else
        say "building the $suite rootfs in $rootfs (once; about a minute)"
        say "  debootstrap --variant=minbase --include=$(IFS=,; echo "${packages[*]}") $suite from $mirror"
        if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$tmp" "$mirror" > "$log" 2>&1; then
                tail -n 30 "$log" >&2
                say "debootstrap failed (full log above, last 30 lines)"
                exit 1
        fi
        # no package cache in the image; a name for the machine; the package list for whoever looks
        rm -f "$tmp"/var/cache/apt/archives/*.deb
        echo wbtuned-test > "$tmp/etc/hostname"
        printf '%s\n' "suite $suite" "mirror $mirror" "packages ${packages[*]}" > "$tmp/.wbtuned-rootfs"
fi
mv -T "$tmp" "$rootfs"
tmp=
say "built $rootfs in $((SECONDS - start)) s ($(du -sh "$rootfs" | cut -f1))"
echo "$rootfs"
