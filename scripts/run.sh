#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build wbtuned in build/ and run it in the foreground on this machine with the shipped
# config, printing what it sees every tick. Ctrl-C stops it. Extra arguments go to wbtuned
# (e.g. --dry-run). Not root: --dry-run is added, since only root may run it for real.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

bash scripts/deps.sh
if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt Makefile.in ]]; then
        ./autogen.sh
fi
mkdir -p build
cd build
[[ -f Makefile ]] || "$top/configure" -q
make -j"$(nproc)" >/dev/null

args=(-c "$top/conf/wbtuned.conf")
if [[ $(id -u) -ne 0 ]]; then
        echo "run.sh: not root, adding --dry-run" >&2
        args+=(--dry-run)
fi
# stderr, not the journal, even when started from a systemd unit
unset JOURNAL_STREAM NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID
exec ./src/wbtuned "${args[@]}" "$@"
