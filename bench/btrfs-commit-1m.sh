#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# btrfs at dirty_bytes=1M, one writer, 10 s: mount default (commit=30) against commit=1 (background 512K),
# or with "background", dirty_background_bytes 512K against lower values (default mount). Prints MB/s and
# the mean global dirty and writeback. Root; its own loop device, throttled to 120 MB/s; the vm knobs are
# restored on every exit. Usage: bench/btrfs-commit-1m.sh [background]
set -u
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
for t in mkfs.btrfs fio losetup; do command -v $t >/dev/null || { echo "no $t" >&2; exit 77; }; done
# one live-kernel run at a time, shared with the tests and wbbench (tests/lib.sh live_lock)
if [ "${WBTUNED_LIVE_LOCK_HELD:-0}" != 1 ]; then
        exec 9> "${WBTUNED_LIVE_LOCK:-/run/wbtuned-live.lock}" && flock 9 || { echo "cannot take the live-kernel lock" >&2; exit 1; }
        export WBTUNED_LIVE_LOCK_HELD=1
fi
work=$(mktemp -d /var/tmp/exp-btrfs.XXXXXX)
vm=/proc/sys/vm
saved_b=$(cat $vm/dirty_bytes) saved_bb=$(cat $vm/dirty_background_bytes) saved_r=$(cat $vm/dirty_ratio) saved_br=$(cat $vm/dirty_background_ratio)
thr=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
loop=
cleanup() {
  if [ "$saved_b" != 0 ]; then echo $saved_b > $vm/dirty_bytes; else echo $saved_r > $vm/dirty_ratio; fi
  if [ "$saved_bb" != 0 ]; then echo $saved_bb > $vm/dirty_background_bytes; else echo $saved_br > $vm/dirty_background_ratio; fi
  mountpoint -q $work/mnt && umount $work/mnt
  [ -n "$loop" ] && { echo "$mm 0" > $thr; losetup -d $loop; }
  rm -rf $work
}
trap cleanup EXIT
truncate -s 8G $work/img
loop=$(losetup --find --show --direct-io=on $work/img)
mm=$(cat /sys/block/${loop#/dev/}/dev)
echo "$mm 125829120" > $thr
mkfs.btrfs -q -f $loop
mkdir $work/mnt
if [ "${1:-}" = background ]; then
  runs="default/524288 default/131072 default/16384 default/4096 default/524288 default/131072 default/16384 default/4096"
elif [ $# -eq 0 ]; then
  runs="default/524288 commit=1/524288 default/524288 commit=1/524288"
else
  echo "usage: $0 [background]" >&2; exit 2
fi
for run in $runs; do
  opts=${run%/*} bg=${run#*/}
  [ "$opts" = default ] && opts=
  mount ${opts:+-o $opts} $loop $work/mnt
  echo 1048576 > $vm/dirty_bytes; echo $bg > $vm/dirty_background_bytes
  ( i=0; while sleep 0.1; do awk '$1=="nr_dirty"{d=$2} $1=="nr_writeback"{w=$2} END{print d*4, w*4}' /proc/vmstat; done ) > $work/samples &
  sp=$!
  out=$(fio --name=w --directory=$work/mnt --rw=write --bs=1M --size=4G --runtime=10 --time_based --ioengine=psync --output-format=json 2>/dev/null)
  kill $sp
  bw=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["bw"]/1024)')
  if [ "$saved_b" != 0 ]; then echo $saved_b > $vm/dirty_bytes; else echo $saved_r > $vm/dirty_ratio; fi
  if [ "$saved_bb" != 0 ]; then echo $saved_bb > $vm/dirty_background_bytes; else echo $saved_br > $vm/dirty_background_ratio; fi
  awk -v o="${opts:-default}" -v bg=$((bg / 1024)) -v bw="$bw" '{d+=$1; w+=$2; n++} END{printf "%-9s background %4d KB %6.1f MB/s  mean dirty %.0f KB writeback %.0f KB\n", o, bg, bw, d/n, w/n}' $work/samples
  sync -f $work/mnt; umount $work/mnt
  rm -f $work/samples
done
