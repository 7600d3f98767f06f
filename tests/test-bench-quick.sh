#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs `bench/wbbench quick`: a few minutes of slowfast slow-first (5 s + 5 s) with the
# tunings kernel, static-16M, oracle (and wbtuned if built), then asserts only what must
# always hold: every knob, throttle and loop device is as before, the daemon (if run)
# exited 0, and the report and plots exist. No timing assertions.
# Exit 77 (skip) when the live kernel testbed cannot be built here.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/live-opt-in.sh"
live_opt_in
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bench="$srcdir/bench/wbbench"

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (loop devices, vm sysctls, blkio throttles)"
command -v fio >/dev/null 2>&1 || skip "fio not installed (apt-get install fio)"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control missing)"
[ -w /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device ] || \
	skip "no cgroup-v1 blkio throttle file /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"
# the per-device figures come from debugfs: mount it for the run if nobody has, and put it back
if [ ! -d /sys/kernel/debug/bdi ]; then
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
	[ -d /sys/kernel/debug/bdi ] || skip "debugfs not mounted at /sys/kernel/debug and mounting it failed"
	trap 'umount /sys/kernel/debug' EXIT
fi
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot not installed (apt-get install gnuplot-nox)"
[ -e /run/wbbench.state ] && skip "/run/wbbench.state exists: a killed run needs \`$bench cleanup\`"

# one live-kernel test at a time (see live_test_begin in tests/lib.sh)
if [ "${WBTUNED_LIVE_LOCK_HELD:-0}" != 1 ]; then
	exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}" && flock 9 || exit 99
	export WBTUNED_LIVE_LOCK_HELD=1
fi

# The daemon under test, if built (make check exports WBTUNED).
wbt=
for c in "${WBTUNED:-}" "${top_builddir:-}/src/wbtuned" "$srcdir/src/wbtuned" "$srcdir/build/src/wbtuned"; do
	[ -n "$c" ] && [ -x "$c" ] && { wbt=$c; break; }
done

out=$(mktemp -d /tmp/wbbench-quick.XXXXXX) || exit 99
set -- quick -o "$out"
[ -n "$wbt" ] && set -- "$@" --wbtuned "$wbt" --tunings kernel,static-16M,oracle,wbtuned
"$bench" "$@"
rc=$?
if [ $rc -eq 77 ]; then
	skip "wbbench preflight failed"
fi
if [ $rc -ne 0 ]; then
	echo "FAIL: wbbench quick exited $rc; output kept in $out"
	exit 1
fi
rm -rf "$out"
echo "PASS"
