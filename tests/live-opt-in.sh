# SPDX-License-Identifier: GPL-2.0-or-later
# The one gate of every test that touches the live kernel (vm and BDI knobs, loop devices, mounts,
# containers, fio): sourced by sh and bash alike, `live_opt_in` is its first command. Such a test
# runs only when asked to with WBTUNED_LIVE=1 (scripts/test.sh asks), so `make check` as root in a
# packager's or a distribution's build never changes the build host; WBTUNED_SKIP_LIVE=1 wins.
live_opt_in() {
        if [ "${WBTUNED_SKIP_LIVE:-0}" = 1 ]; then
                echo "$(basename "$0"): SKIP: WBTUNED_SKIP_LIVE=1: live-kernel tests are off"
                exit 77
        fi
        if [ "${WBTUNED_LIVE:-0}" != 1 ]; then
                echo "$(basename "$0"): SKIP: a live-kernel test (it changes this machine's knobs, loop devices or mounts): set WBTUNED_LIVE=1 to run it"
                exit 77
        fi
}
