#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A loop device on a file in the ext4 of another loop device: the daemon in auto mode, 15 s of
# writes to the upper loop, and the lower device's knobs are never changed (a strict cap there
# would throttle the upper loop's own worker: the stacked-device deadlock).
set -u
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
live_opt_in
require_binaries

[[ $(id -u) -eq 0 ]] || skip "not root: auto mode writes kernel knobs"
[[ -d /sys/class/bdi ]] || skip "no /sys/class/bdi on this kernel"
for tool in losetup mkfs.ext4 mount umount dd mountpoint; do
        command -v "$tool" >/dev/null || skip "$tool not installed"
done
[[ -e /dev/loop-control ]] || skip "no loop device support (/dev/loop-control missing)"
compgen -G "/sys/class/bdi/*/strict_limit" >/dev/null || skip "this kernel has no per-BDI strict_limit"
live_test_begin

# the knobs as the kernel stores them (per-BDI bytes are views of the ratios through the global limit)
snapshot() {
        local f
        for f in /proc/sys/vm/dirty_{bytes,ratio,background_bytes,background_ratio,writeback_centisecs,expire_centisecs} \
                 /sys/class/bdi/*/{min_ratio_fine,max_ratio_fine,strict_limit}; do
                [[ -e $f ]] && printf '%s %s\n' "$f" "$(cat "$f")"
        done
}
# safety net only (the test has failed by then): put back a snapshot whatever the daemon did
force_restore() {
        local f v
        while read -r f v; do
                case $f in
                */strict_limit | */max_ratio_fine) echo "$v" > "$f" ;;
                esac
        done < "$1" 2>/dev/null
        while read -r f v; do
                case $f in
                */min_ratio_fine) echo "$v" > "$f" ;;
                /proc/sys/vm/dirty_*) [[ $v == 0 || $(cat "$f") == "$v" ]] || echo "$v" > "$f" ;;
                esac
        done < "$1" 2>/dev/null
}

# the lower device: an ext4 on a loop device of our own (make_loop_fs: work, loop, majmin, mnt)
make_loop_fs stack-lower 512M
lower=$loop lower_majmin=$majmin lower_mnt=$mnt
mkdir "$work/run" "$work/upper"
snapshot > "$work/knobs.before"
push_cleanup "snapshot > '$work/knobs.end'; cmp -s '$work/knobs.before' '$work/knobs.end' || { log 'knobs differ at exit, forcing them back:'; diff '$work/knobs.before' '$work/knobs.end'; force_restore '$work/knobs.before'; }"

# the upper device: a buffered loop device (no direct I/O) on a file in the lower ext4, so its
# worker's writes are dirty pages on the lower device's BDI
truncate -s 256M "$lower_mnt/upper.img" || fail "truncate $lower_mnt/upper.img"
upper=$(losetup --find --show "$lower_mnt/upper.img" 2> "$work/losetup.err") ||
        skip "losetup failed: $(cat "$work/losetup.err")"
push_cleanup "losetup -d '$upper'"
upper_majmin=$(cat "/sys/block/${upper#/dev/}/dev")
mkfs.ext4 -q -F "$upper" > "$work/mkfs.out" 2>&1 || { cat "$work/mkfs.out"; fail "mkfs.ext4 $upper"; }
mount -t ext4 "$upper" "$work/upper" || fail "mount $upper"
push_cleanup "mountpoint -q '$work/upper' && { umount '$work/upper' 2>/dev/null || umount -l '$work/upper'; }"
log "lower $lower ($lower_majmin) holds the file of upper $upper ($upper_majmin)"

lower_knobs() {
        local f
        for f in /sys/class/bdi/$lower_majmin/{min_ratio_fine,max_ratio_fine,min_ratio,max_ratio,strict_limit}; do
                [[ -e $f ]] && printf '%s %s\n' "$f" "$(cat "$f")"
        done
}
lower_knobs > "$work/lower.before"

cat > "$work/wbtuned.conf" <<EOF
[daemon]
tick = 200ms
[policy]
mode = auto
EOF
"$WBTUNED" --socket "$work/run/ctl" --state-dir "$work/run" -c "$work/wbtuned.conf" >> "$work/daemon.out" 2>> "$work/daemon.err" < /dev/null &
daemon=$!
push_cleanup '[[ -n $daemon ]] && stop_pid $daemon'
wait_until 10 "$WBTUNECTL" --socket "$work/run/ctl" status > /dev/null 2>&1 ||
        { cat "$work/daemon.err"; fail "the daemon did not start"; }

# 15 s of writes to the upper device, paced at ~40 MB/s; the lower device's knobs checked throughout
writer=
(
        end=$((SECONDS + 15))
        for ((i = 0; SECONDS < end; i++)); do
                dd if=/dev/zero of="$work/upper/f" bs=1M count=1 seek=$((i % 200)) conv=notrunc status=none 2>/dev/null
                sleep 0.02
        done
) &
writer=$!
push_cleanup '[[ -n $writer ]] && kill $writer 2>/dev/null; wait $writer 2>/dev/null'
upper_tuned=0
while kill -0 "$writer" 2>/dev/null; do
        lower_knobs > "$work/lower.now"
        cmp -s "$work/lower.before" "$work/lower.now" ||
                { diff "$work/lower.before" "$work/lower.now"; "$WBTUNECTL" --socket "$work/run/ctl" explain "$lower_majmin";
                  fail "the daemon changed the knobs of $lower, the lower device of $upper"; }
        [[ $(cat "/sys/class/bdi/$upper_majmin/strict_limit") == 1 ]] && upper_tuned=1
        sleep 0.2
done
wait "$writer" 2>/dev/null
writer=
ok "15 s of writes to $upper: the knobs of $lower under it never changed"
# the daemon did tune: the upper device had its (strict) first bound, else the test proves nothing
(( upper_tuned )) || { cat "$work/daemon.err"; fail "the upper device $upper never got a strict cap: the daemon tuned nothing"; }
"$WBTUNECTL" --socket "$work/run/ctl" explain "$lower_majmin" > "$work/explain.out" 2>&1 || fail "wbtunectl explain $lower_majmin"
grep -q "lower device of ${upper#/dev/}" "$work/explain.out" || { cat "$work/explain.out"; fail "explain gives no reason for leaving $lower alone"; }
ok "explain: $(grep -m1 'lower device of' "$work/explain.out" | sed 's/^ *//')"
stop_pid "$daemon"
daemon=
exit 0
