/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for observe, devnames and report against fake /proc + /sys trees built in a temp dir. */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devnames.h"
#include "fault-inject.h"
#include "log.h"
#include "observe.h"
#include "report.h"
#include "knob-files.h"
#include "tap.h"
#include "util.h"

static char root[] = "/tmp/test-observe-XXXXXX";
static uint64_t page_size;

static void mkdir_parents(const char *path) {
        char buf[4096];

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        (void) mkdir(buf, 0755);
                        *p = '/';
                }
}

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...) {
        char path[4096];
        va_list ap;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        mkdir_parents(path);
        f = fopen(path, "we");
        if (!f) {
                perror(path);
                exit(EXIT_FAILURE);
        }
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fclose(f);
}

static void link_to(const char *rel, const char *target) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        mkdir_parents(path);
        if (symlink(target, path) < 0) {
                perror(path);
                exit(EXIT_FAILURE);
        }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void rm_rf(const char *rel) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void put_knobs(const char *bdi, bool modern) {
        char rel[256];

        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/min_ratio", bdi);
        put(rel, "0\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/max_ratio", bdi);
        put(rel, "100\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/read_ahead_kb", bdi);
        put(rel, "128\n");
        if (!modern)
                return;
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/min_ratio_fine", bdi);
        put(rel, "0\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/max_ratio_fine", bdi);
        put(rel, "1000000\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/min_bytes", bdi);
        put(rel, "0\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/max_bytes", bdi);
        put(rel, "4997709824\n");
        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/strict_limit", bdi);
        put(rel, "1\n");
}

/* The layout of a real debugfs bdi/<dev>/stats file (6.18). */
static void put_stats(const char *bdi, uint64_t wb_kb, uint64_t dirty_kb, uint64_t dirtied_kb,
                      uint64_t written_kb, uint64_t bw_kbps) {
        char rel[256];

        snprintf(rel, sizeof(rel), "sys/kernel/debug/bdi/%s/stats", bdi);
        put(rel,
            "BdiWriteback:       %10llu kB\n"
            "BdiReclaimable:     %10llu kB\n"
            "BdiDirtyThresh:        4881124 kB\n"
            "DirtyThresh:           4881124 kB\n"
            "BackgroundThresh:      2437580 kB\n"
            "BdiDirtied:         %10llu kB\n"
            "BdiWritten:         %10llu kB\n"
            "BdiWriteBandwidth:  %10llu kBps\n"
            "b_dirty:                    32\n"
            "b_io:                        0\n"
            "b_more_io:                   0\n"
            "b_dirty_time:                0\n"
            "bdi_list:                    1\n"
            "state:                       5\n",
            (unsigned long long) wb_kb, (unsigned long long) dirty_kb, (unsigned long long) dirtied_kb,
            (unsigned long long) written_kb, (unsigned long long) bw_kbps);
}

/* One wb of wb_stats: a cgroup's writeback on the device (ino 1: the root cgroup's). */
typedef struct fake_wb {
        unsigned ino;
        uint64_t writeback_kb, reclaimable_kb, bw_kbps;
} fake_wb;

/* A block as the kernel prints it (wb_stats_show(), 6.10+). */
static void put_wb_block(FILE *f, const fake_wb *wb) {
        fprintf(f,
                "WbCgIno:           %10u\n"
                "WbWriteback:       %10llu kB\n"
                "WbReclaimable:     %10llu kB\n"
                "WbDirtyThresh:        4881124 kB\n"
                "WbDirtied:             540128 kB\n"
                "WbWritten:             444264 kB\n"
                "WbWriteBandwidth:  %10llu kBps\n"
                "b_dirty:                   32\n"
                "b_io:                       0\n"
                "b_more_io:                  0\n"
                "b_dirty_time:               0\n"
                "state:                      5\n\n",
                wb->ino, (unsigned long long) wb->writeback_kb, (unsigned long long) wb->reclaimable_kb,
                (unsigned long long) wb->bw_kbps);
}

static void put_wb_stats(const char *bdi, size_t n, const fake_wb *wbs) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/sys/kernel/debug/bdi/%s/wb_stats", root, bdi);
        mkdir_parents(path);
        f = fopen(path, "we");
        if (!f)
                exit(EXIT_FAILURE);
        for (size_t i = 0; i < n; i++)
                put_wb_block(f, &wbs[i]);
        fclose(f);
}

static void put_blockstat(const char *devdir, uint64_t sectors_written) {
        char rel[512];

        snprintf(rel, sizeof(rel), "%s/stat", devdir);
        put(rel, "   28448     6158  1918698     5450    14793     6141 %8llu     3287        0     5476     9144     5488       62   163168      318     2347       88\n",
            (unsigned long long) sectors_written);
}

#define SDA_DEV "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
#define SDB_DEV "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb"
#define VDA_DEV "devices/pci0000:00/0000:00:02.0/virtio1/block/vda"
#define SDA "sys/" SDA_DEV
#define SDB "sys/" SDB_DEV
#define VDA "sys/" VDA_DEV
#define DM0 "sys/devices/virtual/block/dm-0"
#define LOOP2 "sys/devices/virtual/block/loop2"
#define LOOP3 "sys/devices/virtual/block/loop3"
#define LOOP10 "sys/dev/block/7:10"

static void build_tree(void) {
        put("proc/vmstat",
            "nr_free_pages 5000000\n"
            "nr_dirty 100\n"
            "nr_writeback 20\n"
            "nr_writeback_temp 7\n"
            "nr_dirty_threshold 5000\n"
            "nr_dirty_background_threshold 2500\n"
            "nr_dirtied 1000\n"
            "nr_written 900\n");
        put("proc/meminfo",
            "MemTotal:       16000000 kB\n"
            "MemFree:         9000000 kB\n"
            "MemAvailable:    8000000 kB\n"
            "Dirty:               400 kB\n");
        put("proc/sys/vm/dirty_bytes", "0\n");
        put("proc/sys/vm/dirty_background_bytes", "0\n");
        put("proc/sys/vm/dirty_ratio", "20\n");
        put("proc/sys/vm/dirty_background_ratio", "10\n");
        put("proc/sys/vm/dirty_writeback_centisecs", "500\n");
        put("proc/sys/vm/dirty_expire_centisecs", "3000\n");
        put("proc/self/mountinfo",
            "27 1 8:1 / /boot rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
            "28 1 8:2 / /data\\040dir rw - ext4 /dev/sda2 rw\n"
            "29 1 0:52 / /mnt/nfs rw shared:5 master:2 - nfs4 srv:/export rw,vers=4.2\n"
            "30 1 0:60 / /mnt/fuse rw - fuse.sshfs user@host:/x rw\n"
            "31 1 0:70 / /mnt/btr rw - btrfs /dev/sdb1 rw\n"
            "32 1 0:71 /sub /mnt/btr2 rw - btrfs /dev/sdb1 rw\n"
            "33 1 7:2 / /mnt/loop rw - ext4 /dev/loop2 rw\n"
            "bogus line\n"
            "34 1 254:0 / / rw - ext4 /dev/vda rw\n");

        /* Block devices, as sysfs lays them out. */
        put(SDA "/queue/rotational", "1\n");
        put(SDA "/removable", "0\n");
        put(SDA "/device/model", "QEMU HARDDISK   \n");
        put(SDA "/sda1/partition", "1\n");
        put(SDA "/sda2/partition", "2\n");
        put_blockstat(SDA, 10000);
        link_to("sys/dev/block/8:0", "../../" SDA_DEV);
        link_to("sys/dev/block/8:1", "../../" SDA_DEV "/sda1");
        link_to("sys/dev/block/8:2", "../../" SDA_DEV "/sda2");

        put(SDB "/queue/rotational", "0\n");
        put(SDB "/removable", "1\n");
        put(SDB "/device/model", "Flash Disk\n");
        put(SDB "/sdb1/partition", "1\n");
        put(SDB "/sdb1/dev", "8:17\n");
        link_to("sys/dev/block/8:16", "../../" SDB_DEV);
        link_to("sys/dev/block/8:17", "../../" SDB_DEV "/sdb1");
        link_to("sys/class/block/sdb1", "../../" SDB_DEV "/sdb1");

        put(LOOP2 "/queue/rotational", "0\n");
        put(LOOP2 "/removable", "0\n");
        link_to("sys/dev/block/7:2", "../../devices/virtual/block/loop2");
        /* A plain directory, not a link: the name comes from uevent. */
        put(LOOP10 "/uevent", "MAJOR=7\nMINOR=10\nDEVNAME=loop10\nDEVTYPE=disk\n");
        put_blockstat(LOOP10, 2000);

        put(VDA "/queue/rotational", "1\n");
        put(VDA "/removable", "0\n");
        link_to("sys/dev/block/254:0", "../../" VDA_DEV);

        /* A device-mapper volume: known to admins by its mapper name. */
        put(DM0 "/queue/rotational", "0\n");
        put(DM0 "/dm/name", "vg0-root\n");
        link_to("sys/dev/block/253:0", "../../devices/virtual/block/dm-0");

        link_to("sys/fs/btrfs/0b5e5a5c-1111-2222-3333-444455556666/bdi", "../../../devices/virtual/bdi/btrfs-1");
        put("sys/fs/btrfs/0b5e5a5c-1111-2222-3333-444455556666/devices/sdb1/size", "1000\n");
        put("sys/fs/btrfs/features/raid1c34", "0\n");

        /* BDIs. */
        put_knobs("8:0", true);
        put_stats("8:0", 8, 100, 5000, 4000, 1000);
        put_wb_stats("8:0", 1, (fake_wb[]) { { 1, 8, 100, 2048 } });

        put_knobs("8:16", true);
        put_stats("8:16", 0, 0, 900000, 800000, 0);
        put_wb_stats("8:16", 1, (fake_wb[]) { { 1, 0, 0, 5000 } });

        put_knobs("7:2", false);
        put("sys/kernel/debug/bdi/7:2/stats", "BdiWriteback:       4 kB\nBdiRecla");

        put_knobs("7:10", true);
        put_stats("7:10", 0, 40, 100, 50, 0);
        put_wb_stats("7:10", 2, (fake_wb[]) { { 77, 0, 0, 111 }, { 1, 0, 0, 222 } });

        put_knobs("0:52", true);
        put_stats("0:52", 0, 0, 0, 0, 0);
        put_wb_stats("0:52", 2, (fake_wb[]) { { 1234, 0, 0, 300 }, { 5678, 0, 0, 400 } });

        put_knobs("0:60", true);
        put("sys/kernel/debug/bdi/0:60/stats",
            "BdiWriteback: 0 kB\nBdiReclaimable: 0 kB\nBdiDirtied: 1 kB\nBdiWritten: 1 kB\nBdiWriteBandwidth: 10 kBps\n");

        put_knobs("btrfs-1", true);
        put_stats("btrfs-1", 4, 4, 10, 10, 100);
        put_wb_stats("btrfs-1", 1, (fake_wb[]) { { 1, 4, 4, 100 } });

        put_knobs("254:0", true);
        put_stats("254:0", UINT64_MAX, 5, UINT64_MAX, 1, UINT64_MAX);

        put_knobs("253:0", true);
        put_stats("253:0", 0, 0, 0, 0, 0);

        /* Listed, but gone before we read it (sysfs entries are links to devices/virtual/bdi). */
        link_to("sys/class/bdi/7:9", "../../devices/virtual/bdi/7:9");
}

static const bdi_device *dev(const sample *s, const char *bdi) {
        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, bdi) == 0)
                        return &s->devices[i];
        return NULL;
}

#define DEV(s, bdi) ({ const bdi_device *_d = dev(s, bdi); CHECK(_d != NULL); if (!_d) { printf("Bail out!\n"); exit(EXIT_FAILURE); } _d; })

static void test_mount_table(void) {
        mount_table t = {};
        disk_cache cache = {};

        disk_cache_begin(&cache, 1000000);
        CHECK(mount_table_read(root, &cache, &t) == 0);
        CHECK_EQ_U64(t.n_entries, 8);
        CHECK_STREQ(t.entries[1].mount_point, "/data dir");
        CHECK_EQ_U64(t.entries[1].major, 8);
        CHECK_EQ_U64(t.entries[1].minor, 2);
        CHECK_STREQ(t.entries[2].fstype, "nfs4");
        CHECK_STREQ(t.entries[2].source, "srv:/export");
        CHECK_STREQ(t.entries[7].mount_point, "/");
        /* each mount's whole disk, looked up once per st_dev; anonymous ones have none */
        CHECK_STREQ(t.entries[0].disk, "sda");
        CHECK_STREQ(t.entries[1].disk, "sda");
        CHECK_STREQ(t.entries[2].disk, "");
        CHECK_STREQ(t.entries[4].disk, "");
        CHECK_STREQ(t.entries[6].disk, "loop2");
        CHECK_EQ_U64(t.n_by_disk, 4);
        /* by disk name, then mountinfo order */
        CHECK(t.by_disk[0] == &t.entries[6] && t.by_disk[1] == &t.entries[0] &&
              t.by_disk[2] == &t.entries[1] && t.by_disk[3] == &t.entries[7]);
        CHECK_EQ_U64(t.n_btrfs, 1);
        CHECK_STREQ(t.btrfs[0].bdi, "btrfs-1");
        CHECK_STREQ(t.btrfs[0].uuid, "0b5e5a5c-1111-2222-3333-444455556666");
        mount_table_done(&t);
        CHECK(t.entries == NULL && t.n_entries == 0);
        disk_cache_end(&cache);
        /* the disks of mounted devices are kept for the next tick: 8:1, 8:2, 7:2 and 254:0 */
        CHECK_EQ_U64(cache.n, 4);
        disk_cache_done(&cache);

        disk_cache_begin(&cache, 1000000);
        CHECK(mount_table_read("/nonexistent-root", &cache, &t) == -ENOENT);
        disk_cache_end(&cache);
        disk_cache_done(&cache);
}

/* The mount points devnames_describe() gives the device major:minor ("" ends the list; "|" between). */
static void describe_mounts(const mount_table *t, disk_cache *cache, const char *bdi, unsigned major,
                            unsigned minor, char *buf, size_t size) {
        bdi_device d = { .major = major, .minor = minor, .has_devnum = true };

        snprintf(d.bdi, sizeof(d.bdi), "%s", bdi);
        buf[0] = '\0';
        CHECK(devnames_describe(root, t, cache, &d) == 0);
        for (size_t i = 0; i < d.n_mounts; i++)
                snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i > 0 ? "|" : "", d.mounts[i]);
        for (size_t i = 0; i < d.n_mounts; i++)
                free(d.mounts[i]);
        free(d.mounts);
}

/* mountinfo as a kernel writes it: escapes, bind mounts, mounts covered by others (what nspawn shows
 * twice). Each mount point a device has is listed once, the one a path reaches; whole mounts first. */
static void test_mountinfo_visibility(void) {
        _cleanup_free_ char *saved = NULL, *path = NULL;
        mount_table t = {};
        disk_cache cache = {};
        char buf[1024];
        bool hidden_gone = true;

        path = path_join_root(root, "/proc/self/mountinfo");
        CHECK(read_file_full(path, &saved, NULL) == 0);
        put("proc/self/mountinfo", "%s",
            "108 85 0:39 / / rw,relatime shared:1 - overlay overlay rw\n"
            "111 108 0:42 / /dev rw,nosuid shared:4 - tmpfs tmpfs rw\n"
            /* mounted over: the host's /dev/pts, twice */
            "113 111 0:45 / /dev/pts rw shared:8 - devpts devpts rw\n"
            "130 113 0:46 / /dev/pts rw - devpts devpts rw\n"
            /* nspawn: /run/host is /run's /host, mounted over /run's own /run/host/... (118, 119) */
            "114 108 0:44 / /run rw,nosuid,nodev shared:6 - tmpfs tmpfs rw\n"
            "115 114 0:44 /host /run/host ro shared:6 - tmpfs tmpfs rw\n"
            "116 115 254:0 /usr/lib/os-release /run/host/os-release ro shared:7 - ext4 /dev/vda rw\n"
            "117 115 254:0 /run/systemd/nspawn/propagate/x /run/host/incoming ro master:9 - ext4 /dev/vda rw\n"
            "118 114 254:0 /usr/lib/os-release /run/host/os-release rw shared:7 - ext4 /dev/vda rw\n"
            "119 114 254:0 /run/systemd/nspawn/propagate/x /run/host/incoming rw shared:9 - ext4 /dev/vda rw\n"
            /* a bind mount listed before the mount of the whole filesystem; every escape mountinfo has */
            "141 108 8:2 /sub /mnt/bind rw - ext4 /dev/sda2 rw\n"
            "140 108 8:2 / /data\\040dir\\011tab\\012nl\\134bs rw - ext4 /dev/sda2 rw\n"
            /* mounted on / before /var was: hidden under it */
            "150 108 8:1 / /var/lib/docker rw - ext4 /dev/sda1 rw\n"
            "151 108 7:2 / /var rw - ext4 /dev/loop2 rw\n"
            /* two mounts on one mount point of one parent: the later one is on top */
            "152 108 0:52 / /mnt/nfs rw - nfs4 srv:/export rw\n"
            "153 108 0:60 / /mnt/nfs rw - fuse.sshfs u@h:/x rw\n"
            "bogus line\n"
            /* a loop of parents (a broken file): no hang, neither is covered */
            "160 161 0:70 / /loop/a rw - tmpfs t rw\n"
            "161 160 0:71 / /loop/b rw - tmpfs t rw\n"
            /* an empty source field (two spaces) */
            "170 108 0:80 / /mnt/empty rw - fuse.x  rw\n");

        disk_cache_begin(&cache, 1000000);
        CHECK(mount_table_read(root, &cache, &t) == 0);
        CHECK_EQ_U64(t.n_entries, 14);
        for (size_t i = 0; i < t.n_entries; i++) {
                const mount_entry *e = &t.entries[i];

                hidden_gone = hidden_gone && !(e->major == 0 && e->minor == 45) && !(e->major == 8 && e->minor == 1) &&
                              !(e->major == 0 && e->minor == 52);
        }
        CHECK(hidden_gone);
        CHECK_STREQ(t.entries[8].mount_point, "/data dir\ttab\nnl\\bs");
        CHECK(t.entries[8].whole_fs && !t.entries[7].whole_fs);
        CHECK_STREQ(t.entries[13].fstype, "fuse.x");
        CHECK_STREQ(t.entries[13].source, "");

        describe_mounts(&t, &cache, "254:0", 254, 0, buf, sizeof(buf));
        CHECK_STREQ(buf, "/run/host/os-release|/run/host/incoming");
        describe_mounts(&t, &cache, "8:0", 8, 0, buf, sizeof(buf));
        CHECK_STREQ(buf, "/data dir\ttab\nnl\\bs|/mnt/bind");
        describe_mounts(&t, &cache, "7:2", 7, 2, buf, sizeof(buf));
        CHECK_STREQ(buf, "/var");
        describe_mounts(&t, &cache, "0:52", 0, 52, buf, sizeof(buf));
        CHECK_STREQ(buf, "");
        describe_mounts(&t, &cache, "0:60", 0, 60, buf, sizeof(buf));
        CHECK_STREQ(buf, "/mnt/nfs");
        mount_table_done(&t);

        /* libmount reads a file whose first line is not mountinfo as an fstab: refused */
        put("proc/self/mountinfo", "%s", "/dev/sda1 /boot ext4 rw 0 0\n27 1 8:1 / /boot rw - ext4 /dev/sda1 rw\n");
        CHECK(mount_table_read(root, &cache, &t) == -EBADMSG);
        CHECK_EQ_U64(t.n_entries, 0);
        mount_table_done(&t);
        /* an empty one has no mounts */
        put("proc/self/mountinfo", "%s", "");
        CHECK(mount_table_read(root, &cache, &t) == 0);
        CHECK_EQ_U64(t.n_entries, 0);
        mount_table_done(&t);

        disk_cache_end(&cache);
        disk_cache_done(&cache);
        put("proc/self/mountinfo", "%s", saved);
}

static void test_first_sample(observe_ctx *ctx, sample *s) {
        static const char *const order[] = { "0:52", "0:60", "7:2", "7:10", "8:0", "8:16", "253:0", "254:0", "btrfs-1" };
        const bdi_device *d;
        char buf[128];

        CHECK(observe_sample_at(ctx, 1000000, s) == 0);
        CHECK_EQ_U64(s->time_usec, 1000000);
        CHECK(s->debugfs);

        /* global */
        CHECK_EQ_U64(s->global.dirty_bytes, 100 * page_size);
        CHECK_EQ_U64(s->global.writeback_bytes, 20 * page_size);
        CHECK_EQ_U64(s->global.dirty_thresh_bytes, 5000 * page_size);
        CHECK_EQ_U64(s->global.background_thresh_bytes, 2500 * page_size);
        CHECK_EQ_U64(s->global.dirtied_total_bytes, 1000 * page_size);
        CHECK_EQ_U64(s->global.written_total_bytes, 900 * page_size);
        CHECK_EQ_U64(s->global.mem_total_bytes, 16000000ULL * 1024);
        CHECK_EQ_U64(s->global.mem_available_bytes, 8000000ULL * 1024);
        CHECK_EQ_U64(s->global.dirty_rate_bytes_per_s, 0);
        CHECK_EQ_U64(vm_file(&s->global, "dirty_bytes"), 0);
        CHECK_EQ_U64(vm_file(&s->global, "dirty_ratio"), 20);
        CHECK_EQ_U64(vm_file(&s->global, "dirty_background_ratio"), 10);
        CHECK_EQ_U64(vm_file(&s->global, "dirty_writeback_centisecs"), 500);
        CHECK_EQ_U64(vm_file(&s->global, "dirty_expire_centisecs"), 3000);

        /* natural order; the dangling 7:9 is dropped */
        CHECK_EQ_U64(s->n_devices, ELEMENTSOF(order));
        for (size_t i = 0; i < ELEMENTSOF(order) && i < s->n_devices; i++)
                CHECK_STREQ(s->devices[i].bdi, order[i]);

        /* whole disk with partitions mounted */
        d = DEV(s, "8:0");
        CHECK_STREQ(d->name, "sda");
        CHECK(d->has_devnum && d->major == 8 && d->minor == 0);
        CHECK_EQ_U64(d->n_mounts, 2);
        CHECK_STREQ(d->mounts[0], "/boot");
        CHECK_STREQ(d->mounts[1], "/data dir");
        CHECK(d->mounts[2] == NULL);
        CHECK_STREQ(d->fstype, "ext4");
        CHECK_STREQ(d->model, "QEMU HARDDISK");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_ROTATIONAL);
        CHECK_EQ_U64(bdi_files_read(d), 7);
        CHECK_EQ_U64(bdi_file(d, "max_ratio"), 100);
        CHECK_EQ_U64(bdi_file(d, "max_ratio_fine"), 1000000);
        CHECK_EQ_U64(bdi_file(d, "max_bytes"), 4997709824ULL);
        CHECK_EQ_U64(bdi_file(d, "strict_limit"), 1);
        CHECK(d->source == STATS_SOURCE_DEBUGFS);
        CHECK_EQ_U64(d->writeback_bytes, 8 * 1024);
        CHECK_EQ_U64(d->dirty_bytes, 100 * 1024);
        CHECK_EQ_U64(d->thresh_bytes, 4881124ULL * 1024);
        CHECK_EQ_U64(d->dirtied_total_bytes, 5000 * 1024);
        CHECK_EQ_U64(d->written_total_bytes, 4000 * 1024);
        CHECK_EQ_U64(d->kernel_bw_bytes_per_s, 1000 * 1024);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 2048 * 1024);
        CHECK_EQ_U64(d->backlog_bytes, 108 * 1024);
        CHECK(d->backlog_s > 108.0 / 2048 - 1e-9 && d->backlog_s < 108.0 / 2048 + 1e-9);
        CHECK(!d->seen_before);
        CHECK_EQ_U64(d->write_bw_bytes_per_s, 0);

        /* usb stick, its partition holds btrfs (mounted through btrfs-1, not here) */
        d = DEV(s, "8:16");
        CHECK_STREQ(d->name, "sdb");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_REMOVABLE | BDI_TRAIT_USB);
        CHECK_STREQ(traits_to_string(d->traits, buf, sizeof(buf)), "removable,usb");
        CHECK_STREQ(d->model, "Flash Disk");
        CHECK_EQ_U64(d->n_mounts, 0);
        CHECK(d->mounts && d->mounts[0] == NULL);
        CHECK_STREQ(d->fstype, "");

        d = DEV(s, "btrfs-1");
        CHECK_STREQ(d->name, "sdb1");
        CHECK(d->has_devnum && d->major == 8 && d->minor == 17);
        CHECK_STREQ(d->fstype, "btrfs");
        CHECK_EQ_U64(d->n_mounts, 2);
        CHECK_STREQ(d->mounts[0], "/mnt/btr");
        CHECK_STREQ(d->mounts[1], "/mnt/btr2");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_REMOVABLE | BDI_TRAIT_USB);
        CHECK_STREQ(d->model, "Flash Disk");
        CHECK(d->source == STATS_SOURCE_DEBUGFS);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 100 * 1024);

        /* nfs: named by fstype + source; no wb holds pages and there is no root wb block: the first's */
        d = DEV(s, "0:52");
        CHECK_STREQ(d->name, "nfs4 srv:/export");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_NFS);
        CHECK_EQ_U64(d->n_mounts, 1);
        CHECK_STREQ(d->mounts[0], "/mnt/nfs");
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 300 * 1024);
        CHECK_EQ_U64(d->backlog_s * 1000, 0);

        /* fuse, stats missing BdiDirtyThresh: no figures */
        d = DEV(s, "0:60");
        CHECK_STREQ(d->name, "fuse.sshfs user@host:/x");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_FUSE);
        CHECK(d->source == STATS_SOURCE_NONE);
        CHECK_EQ_U64(d->written_total_bytes, 0);
        CHECK_EQ_U64(d->kernel_bw_bytes_per_s, 0);

        /* old kernel knobs, truncated stats */
        d = DEV(s, "7:2");
        CHECK_STREQ(d->name, "loop2");
        CHECK_EQ_U64(bdi_files_read(d), 2);
        CHECK(bdi_has(d, "min_ratio") && bdi_has(d, "max_ratio"));
        CHECK(d->source == STATS_SOURCE_NONE);
        CHECK_EQ_U64(d->writeback_bytes, 0);
        CHECK_EQ_U64(d->n_mounts, 1);
        CHECK_STREQ(d->mounts[0], "/mnt/loop");
        CHECK_EQ_U64(d->traits, 0);

        /* no wb holds pages: the root cgroup's, though it is not the first block */
        d = DEV(s, "7:10");
        CHECK_STREQ(d->name, "loop10");
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 222 * 1024);
        CHECK(d->backlog_s > 40.0 / 222 - 1e-9 && d->backlog_s < 40.0 / 222 + 1e-9);

        /* 64-bit edges saturate */
        d = DEV(s, "254:0");
        CHECK_STREQ(d->name, "vda");
        CHECK_STREQ(d->mounts[0], "/");
        CHECK_EQ_U64(d->writeback_bytes, UINT64_MAX);
        CHECK_EQ_U64(d->dirtied_total_bytes, UINT64_MAX);
        CHECK_EQ_U64(d->kernel_bw_bytes_per_s, UINT64_MAX);
        CHECK_EQ_U64(d->backlog_bytes, UINT64_MAX);
        CHECK_EQ_U64(d->dirty_bytes, 5 * 1024);
        CHECK(d->backlog_s > 0.999 && d->backlog_s < 1.001);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 0);
        CHECK_STREQ(d->alias, "");

        /* device-mapper: kernel name, mapper name as alias, found by either */
        d = DEV(s, "253:0");
        CHECK_STREQ(d->name, "dm-0");
        CHECK_STREQ(d->alias, "vg0-root");
        CHECK(sample_find_device(s, "vg0-root") == d);
        CHECK(sample_find_device(s, "dm-0") == d);
}

static void test_second_sample(observe_ctx *ctx, sample *s) {
        const bdi_device *d;

        put("proc/vmstat",
            "nr_dirty 100\nnr_writeback 20\nnr_dirty_threshold 5000\nnr_dirty_background_threshold 2500\n"
            "nr_dirtied 1500\nnr_written 1100\n");
        put_stats("8:0", 8, 100, 7000, 8000, 1000);
        rm_rf("sys/class/bdi/8:0/max_bytes");
        observe_knobs_changed(ctx, "8:0");                        /* else read again only in a few ticks */
        put_stats("8:16", 0, 0, 900000, 100, 0);                /* replaced: counters restart */
        rm_rf("sys/kernel/debug/bdi/7:10");                      /* debugfs dir gone, sysfs stays */
        rm_rf("sys/class/bdi/0:60");                              /* unplugged */
        rm_rf("sys/kernel/debug/bdi/0:60");
        rm_rf("sys/kernel/debug/bdi/btrfs-1/wb_stats");
        put_knobs("7:3", true);                                   /* plugged in */
        put_stats("7:3", 0, 12, 34, 56, 0);
        put(LOOP3 "/queue/rotational", "0\n");
        link_to("sys/dev/block/7:3", "../../devices/virtual/block/loop3");
        put_stats("254:0", 0, 5, 10, 1, 0);                       /* dirtied went backwards */

        CHECK(observe_sample_at(ctx, 3000000, s) == 0);
        CHECK_EQ_U64(s->n_devices, 9);
        CHECK(dev(s, "0:60") == NULL);
        CHECK_STREQ(s->devices[1].bdi, "7:2");
        CHECK_STREQ(s->devices[2].bdi, "7:3");
        CHECK_STREQ(s->devices[3].bdi, "7:10");

        CHECK_EQ_U64(s->global.dirty_rate_bytes_per_s, 500 * page_size / 2);
        CHECK_EQ_U64(s->global.write_rate_bytes_per_s, 200 * page_size / 2);

        d = DEV(s, "8:0");
        CHECK(d->seen_before);
        CHECK_EQ_U64(d->write_bw_bytes_per_s, 4000 * 1024 / 2);
        CHECK_EQ_U64(d->dirty_rate_bytes_per_s, 2000 * 1024 / 2);
        CHECK_EQ_U64(bdi_files_read(d), 6);
        CHECK(!bdi_has(d, "max_bytes"));
        CHECK_EQ_U64(bdi_file(d, "max_bytes"), UINT64_MAX);

        d = DEV(s, "8:16");
        CHECK(!d->seen_before);
        CHECK_EQ_U64(d->write_bw_bytes_per_s, 0);
        CHECK_EQ_U64(d->dirty_rate_bytes_per_s, 0);

        d = DEV(s, "7:10");
        CHECK(d->source == STATS_SOURCE_BLOCKSTAT);
        CHECK_EQ_U64(d->written_total_bytes, 2000 * 512);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 0);
        CHECK(!d->seen_before);

        d = DEV(s, "7:3");
        CHECK_STREQ(d->name, "loop3");
        CHECK(!d->seen_before);
        CHECK_EQ_U64(d->dirtied_total_bytes, 34 * 1024);

        d = DEV(s, "btrfs-1");
        CHECK(d->source == STATS_SOURCE_DEBUGFS);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 0);
        CHECK(d->seen_before);
        CHECK_EQ_U64(d->write_bw_bytes_per_s, 0);

        d = DEV(s, "254:0");
        CHECK(!d->seen_before);
        CHECK_EQ_U64(d->dirty_rate_bytes_per_s, 0);
}

static void put_knob(const char *bdi, const char *knob, const char *value) {
        char rel[256];

        snprintf(rel, sizeof(rel), "sys/class/bdi/%s/%s", bdi, knob);
        put(rel, "%s\n", value);
}

/* Knob files are read on first sight, then again every few ticks, at once when the vm knobs change, when
 * observe_knobs_changed() says so, or when the device was replaced; between, the last values are carried. */
static void test_knobs_cached(void) {
        observe_ctx *ctx = NULL;
        sample s = {};
        uint64_t t = 1000000, first_read;
        unsigned ticks_until_seen = 0;

        CHECK(observe_new(root, true, &ctx) == 0);
        CHECK(observe_sample_at(ctx, t, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 100);
        first_read = DEV(&s, "8:16")->knobs_read_usec;
        CHECK_EQ_U64(first_read, t);
        sample_done(&s);

        /* a change by hand shows within a few ticks, not necessarily at once */
        put_knob("8:16", "max_ratio", "42");
        for (unsigned i = 1; i <= 8 && !ticks_until_seen; i++) {
                CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
                if (bdi_file(DEV(&s, "8:16"), "max_ratio") == 42) {
                        ticks_until_seen = i;
                        CHECK_EQ_U64(DEV(&s, "8:16")->knobs_read_usec, t);
                } else
                        CHECK_EQ_U64(DEV(&s, "8:16")->knobs_read_usec, first_read);
                sample_done(&s);
        }
        printf("# a hand change of max_ratio showed after %u ticks\n", ticks_until_seen);
        CHECK(ticks_until_seen >= 1 && ticks_until_seen <= 4);

        /* right after a tick that read them: the next one carries them ... */
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK(DEV(&s, "8:16")->knobs_read_usec < t);
        sample_done(&s);
        /* ... unless the daemon says it wrote them */
        put_knob("8:16", "max_ratio", "43");
        observe_knobs_changed(ctx, "8:16");
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 43);
        sample_done(&s);
        put_knob("8:16", "max_ratio", "44");
        observe_knobs_changed(ctx, NULL);
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 44);
        sample_done(&s);

        /* a vm knob changed: the *_bytes files follow the global limit, so they are read again at once;
         * the ratios the kernel keeps did not change, so they are carried */
        put_knob("8:16", "max_ratio", "45");
        put_knob("8:16", "max_bytes", "123456789");
        put("proc/sys/vm/dirty_bytes", "100000000\n");
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_bytes"), 123456789);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 44);
        CHECK(bdi_has(DEV(&s, "8:16"), "max_bytes"));
        CHECK(DEV(&s, "8:16")->knobs_read_usec < t);
        sample_done(&s);
        put("proc/sys/vm/dirty_bytes", "0\n");
        put_knob("8:16", "max_ratio", "100");
        put_knob("8:16", "max_bytes", "4997709824");
        observe_knobs_changed(ctx, NULL);
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 100);
        sample_done(&s);

        /* replaced (a loop device detached and attached again): its counters start over, read at once */
        put_knob("8:16", "max_ratio", "100");
        put_stats("8:16", 0, 0, 10, 10, 0);
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(bdi_file(DEV(&s, "8:16"), "max_ratio"), 100);
        sample_done(&s);
        put_stats("8:16", 0, 0, 900000, 800000, 0);
        observe_free(ctx);
}

/* ---- kernel faults at every read point ------------------------------------------------------- */

/* Well formed whatever the files said: what the policy and the reports rely on. */
static bool sample_well_formed(const sample *s) {
        for (size_t i = 0; i < s->n_devices; i++) {
                const bdi_device *d = &s->devices[i];

                if (!d->mounts || d->mounts[d->n_mounts] || !d->name[0] || d->backlog_s < 0 ||
                    d->backlog_bytes != (d->dirty_bytes + d->writeback_bytes < d->dirty_bytes ?
                                         UINT64_MAX : d->dirty_bytes + d->writeback_bytes) ||
                    (d->source == STATS_SOURCE_NONE && (d->dirty_bytes || d->writeback_bytes || d->written_total_bytes)) ||
                    (!d->seen_before && (d->write_bw_bytes_per_s || d->dirty_rate_bytes_per_s)) ||
                    (i > 0 && strcmp(s->devices[i - 1].bdi, d->bdi) == 0))
                        return false;
        }
        return true;
}

/* The same figures (not the derived rates: time went on). */
static bool samples_same_figures(const sample *a, const sample *b) {
        if (a->n_devices != b->n_devices || a->debugfs != b->debugfs ||
            memcmp(&a->global.knobs, &b->global.knobs, sizeof(a->global.knobs)) != 0 ||
            a->global.dirty_bytes != b->global.dirty_bytes || a->global.mem_total_bytes != b->global.mem_total_bytes ||
            a->global.dirty_thresh_bytes != b->global.dirty_thresh_bytes)
                return false;
        for (size_t i = 0; i < a->n_devices; i++) {
                const bdi_device *x = &a->devices[i], *y = &b->devices[i];

                if (strcmp(x->bdi, y->bdi) != 0 || strcmp(x->name, y->name) != 0 || strcmp(x->model, y->model) != 0 ||
                    strcmp(x->alias, y->alias) != 0 || x->traits != y->traits || x->n_mounts != y->n_mounts ||
                    memcmp(&x->knobs, &y->knobs, sizeof(x->knobs)) != 0 || x->source != y->source ||
                    x->dirty_bytes != y->dirty_bytes || x->writeback_bytes != y->writeback_bytes ||
                    x->written_total_bytes != y->written_total_bytes || x->writing_wbs_bw_bytes_per_s != y->writing_wbs_bw_bytes_per_s ||
                    x->kernel_bw_bytes_per_s != y->kernel_bw_bytes_per_s) {
                        printf("# %s differs\n", x->bdi);
                        return false;
                }
        }
        return true;
}

/* stderr goes to a file while faults are injected, so that the log lines can be counted. */
static FILE *log_capture, *real_stderr;
static long log_seen;

/* Only stdio's stderr (the log's): fd 2 stays, so a sanitizer's report still shows. */
static void log_capture_start(void) {
        fflush(stderr);
        log_capture = tmpfile();
        if (!log_capture)
                abort();
        real_stderr = stderr;
        stderr = log_capture;
        log_seen = 0;
}

static void log_capture_stop(void) {
        stderr = real_stderr;
        fclose(log_capture);
        log_capture = NULL;
}

/* The log lines written since the last call, into buf; their count. */
static unsigned log_lines_since(char *buf, size_t size) {
        long end;
        size_t n;
        unsigned lines = 0;

        fflush(stderr);
        end = ftell(log_capture) >= 0 ? lseek(fileno(log_capture), 0, SEEK_END) : 0;
        buf[0] = 0;
        if (end > log_seen) {
                n = (size_t) (end - log_seen) < size - 1 ? (size_t) (end - log_seen) : size - 1;
                n = (size_t) pread(fileno(log_capture), buf, n, log_seen);
                buf[n] = 0;
        }
        for (long i = log_seen; i < end; i++) {
                char c;

                if (pread(fileno(log_capture), &c, 1, i) == 1 && c == '\n')
                        lines++;
        }
        log_seen = end;
        return lines;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* text names path, or the directory it is in (a device that went away is told by its directory). */
static bool names_path(const char *text, const char *path) {
        char dir[4200];
        char *slash;

        if (strstr(text, path))
                return true;
        snprintf(dir, sizeof(dir), "%s", path);
        slash = strrchr(dir, '/');
        if (slash)
                *slash = 0;
        return strstr(text, dir) && strstr(text, "went away");
}

/* A global file: its failure fails the sample. */
static bool global_point(const char *path) {
        return ends_with(path, "/proc/vmstat") || ends_with(path, "/proc/meminfo") || strstr(path, "/proc/sys/vm/");
}

/* The device a per-device path is about is in the sample ("/bdi/7:9/stats": 7:9). */
static bool device_in(const sample *s, const char *path, const char *dir) {
        const char *p = strstr(path, dir);
        char name[64];

        if (!p)
                return false;
        p += strlen(dir);
        snprintf(name, sizeof(name), "%.*s", (int) strcspn(p, "/"), p);
        return dev(s, name) != NULL;
}

/* Read points whose failure the daemon must tell an admin, once, and once more when they read again:
 * files that exist, of devices in the sample. */
static bool reported_point(const sample *clean, const char *path) {
        struct stat st;

        if (stat(path, &st) < 0 || S_ISDIR(st.st_mode) != ends_with(path, "/sys/class/bdi"))
                return false;
        return global_point(path) || ends_with(path, "/proc/self/mountinfo") || ends_with(path, "/sys/class/bdi") ||
               ((ends_with(path, "/stats") || ends_with(path, "/wb_stats")) && device_in(clean, path, "/debug/bdi/")) ||
               (strstr(path, "ratio") && device_in(clean, path, "/sys/class/bdi/")) ||
               (ends_with(path, "/stat") && device_in(clean, path, "/sys/dev/block/"));
}

/* Every file observe touches in a sample, made to fail in every way a kernel can, for two ticks, then
 * fine again: never a crash, a busy loop or a malformed sample; a failure that matters is told in
 * exactly one line naming the file when it starts, nothing while it lasts, one line when it ends; a
 * short read changes nothing. */
static void test_faults(void) {
        static const struct {
                fault_kind kind;
                int error;
        } faults[] = {
                { FAULT_OPEN, EACCES }, { FAULT_OPEN, EINVAL }, { FAULT_OPEN, EBUSY }, { FAULT_OPEN, ENOENT },
                { FAULT_OPEN, ENODEV }, { FAULT_READ, EINVAL }, { FAULT_READ, EBUSY }, { FAULT_READ, EIO },
                { FAULT_READ, ENODEV }, { FAULT_READ, EINTR }, { FAULT_READ, EAGAIN }, { FAULT_SHORT, 0 },
                { FAULT_GARBAGE, 0 }, { FAULT_EMPTY, 0 },
        };
        const uint64_t step = DISK_FACTS_MAX_AGE_USEC + 1000000;     /* every tick reads everything again */
        const char *const *recorded;
        char **paths, text[8192];
        size_t n_paths;
        unsigned cases = 0, bad = 0, hits = 0, reported = 0;
        unsigned long clean_reads;
        observe_ctx *ctx = NULL;
        sample clean = {}, s = {};
        int saved_level = log_get_max_level();

        /* which files does a sample touch? */
        CHECK(observe_new(root, false, &ctx) == 0);
        fault_record_start();
        fault_reset_counts();
        CHECK(observe_sample_at(ctx, 1000000, &clean) == 0);
        clean_reads = fault_reads();
        n_paths = fault_record_stop(&recorded);
        sample_done(&clean);
        paths = calloc(n_paths, sizeof(char *));
        for (size_t i = 0; i < n_paths; i++)
                paths[i] = strdup(recorded[i]);
        observe_free(ctx);
        printf("# a sample touches %zu paths with %lu reads\n", n_paths, clean_reads);
        CHECK(n_paths >= 40);

        log_set_max_level(LOG_INFO);
        log_capture_start();
        for (size_t p = 0; p < n_paths; p++)
                for (size_t f = 0; f < ELEMENTSOF(faults); f++) {
                        const char *path = paths[p];
                        bool ok = true, global = global_point(path), loud;
                        unsigned lines[3];
                        int r[3];

                        cases++;
                        CHECK(observe_new(root, false, &ctx) == 0);
                        CHECK(observe_sample_at(ctx, 1000000, &clean) == 0 || !"clean sample");
                        (void) log_lines_since(text, sizeof(text));

                        fault_set(path, faults[f].kind, faults[f].error);
                        fault_reset_counts();
                        for (unsigned t = 0; t < 3; t++) {
                                if (t == 2)
                                        fault_clear();
                                observe_knobs_changed(ctx, NULL);
                                r[t] = observe_sample_at(ctx, 1000000 + (t + 1) * step, &s);
                                lines[t] = log_lines_since(text, sizeof(text));
                                if (t == 0) {
                                        hits += fault_hits() > 0;
                                        /* no busy loop: about the reads of a clean tick */
                                        if (fault_reads() > 2 * clean_reads + 64 +
                                                            (faults[f].kind == FAULT_SHORT ? 2000 : 0)) {
                                                printf("# %s %s(%s): %lu reads\n", path,
                                                       fault_kind_to_string(faults[f].kind), strerror(faults[f].error),
                                                       fault_reads());
                                                ok = false;
                                        }
                                        if (lines[0] == 1 && !names_path(text, path)) {
                                                printf("# %s: the message does not name the file: %s", path, text);
                                                ok = false;
                                        }
                                }
                                if (r[t] < 0 && !(global && t < 2))
                                        ok = false;
                                if (r[t] == 0) {
                                        if (!sample_well_formed(&s))
                                                ok = false;
                                        if (t == 2 && !samples_same_figures(&clean, &s))
                                                ok = false;
                                        if (faults[f].kind == FAULT_SHORT && !samples_same_figures(&clean, &s))
                                                ok = false;
                                        sample_done(&s);
                                }
                        }
                        /* one line when it starts (for the files that matter), none while it lasts, at most
                         * one when it ends; a missing file or a vanished device is no failure */
                        loud = reported_point(&clean, path) && fault_hits() > 0 &&
                               ((faults[f].kind == FAULT_OPEN && faults[f].error != ENOENT && faults[f].error != ENODEV) ||
                                (faults[f].kind == FAULT_READ && faults[f].error != ENODEV));
                        if (lines[1] != 0 || lines[0] > 1 || lines[2] > 1 || (loud && (lines[0] != 1 || lines[2] != 1)))
                                ok = false;
                        reported += loud;
                        if (!ok) {
                                printf("# FAILED %s %s(%s): r=%d,%d,%d lines=%u,%u,%u\n", path,
                                       fault_kind_to_string(faults[f].kind), strerror(faults[f].error),
                                       r[0], r[1], r[2], lines[0], lines[1], lines[2]);
                                bad++;
                        }
                        sample_done(&clean);
                        observe_free(ctx);
                }
        fault_clear();
        log_capture_stop();
        log_set_max_level(saved_level);
        printf("# %u fault cases on %zu paths, %u hit the fault, %u must be reported once, %u went wrong\n",
               cases, n_paths, hits, reported, bad);
        CHECK_EQ_U64(bad, 0);
        CHECK(reported > 50);
        for (size_t i = 0; i < n_paths; i++)
                free(paths[i]);
        free(paths);
}

/* A BDI listed but gone when its files are read: left out, told in one line (not one per tick), the
 * rest of the sample as before; when it is back it is a new device. */
static void test_vanish(void) {
        char path[4200], text[8192];
        observe_ctx *ctx = NULL;
        sample s = {};
        size_t n_clean;
        unsigned lines[3];
        int saved_level = log_get_max_level();

        CHECK(observe_new(root, false, &ctx) == 0);
        CHECK(observe_sample_at(ctx, 1000000, &s) == 0);
        n_clean = s.n_devices;
        CHECK(dev(&s, "8:16") != NULL);
        sample_done(&s);

        snprintf(path, sizeof(path), "%s/sys/class/bdi/8:16", root);
        log_set_max_level(LOG_INFO);
        log_capture_start();
        (void) log_lines_since(text, sizeof(text));
        fault_set(path, FAULT_OPEN, ENOENT);
        for (unsigned t = 0; t < 3; t++) {
                if (t == 2)
                        fault_clear();
                observe_knobs_changed(ctx, NULL);
                CHECK(observe_sample_at(ctx, 2000000 + t * 1000000, &s) == 0);
                lines[t] = log_lines_since(text, sizeof(text));
                if (t == 0)
                        CHECK(strstr(text, "sys/class/bdi/8:16 went away while it was read") != NULL);
                CHECK(sample_well_formed(&s));
                if (t < 2) {
                        CHECK_EQ_U64(s.n_devices, n_clean - 1);
                        CHECK(dev(&s, "8:16") == NULL);
                } else {
                        CHECK_EQ_U64(s.n_devices, n_clean);
                        CHECK(!DEV(&s, "8:16")->seen_before);
                }
                sample_done(&s);
        }
        fault_clear();
        log_capture_stop();
        log_set_max_level(saved_level);
        CHECK_EQ_U64(lines[0], 1);
        CHECK_EQ_U64(lines[1], 0);
        CHECK_EQ_U64(lines[2], 0);
        observe_free(ctx);
}

/* Under cgroup writeback a device has a wb per cgroup writing to it (wb_stats, 6.10+), each with its own
 * WbWriteBandwidth: the root wb may sit idle at INIT_BW while a container's wb does the writing. */
static void test_wb_stats_cgroups(void) {
        static const char bdi[] = "7:10", wb_path[] = "sys/kernel/debug/bdi/7:10/wb_stats";
        char text[8192];
        observe_ctx *ctx = NULL;
        const bdi_device *d;
        uint64_t t = 1000000;
        sample s = {};
        int saved_level = log_get_max_level();

        CHECK(observe_new(root, false, &ctx) == 0);
        put_stats(bdi, 1024, 40960 + 10240, 900000, 800000, 110400);

        printf("# an idle root wb at INIT_BW, a container's wb writing at 8000 kBps: the container's\n");
        put_wb_stats(bdi, 2, (fake_wb[]) { { 1, 0, 0, 102400 }, { 4091, 1024, 40960, 8000 } });
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, 8000 * 1024);
        sample_done(&s);

        printf("# two wbs writing share the device: their bandwidths add up\n");
        put_wb_stats(bdi, 3, (fake_wb[]) { { 1, 0, 0, 102400 }, { 4091, 1024, 40960, 8000 }, { 4131, 0, 10240, 3000 } });
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, 11000 * 1024);
        sample_done(&s);

        printf("# a new container's wb still at INIT_BW adds nothing beside the host's measured one\n");
        put_wb_stats(bdi, 2, (fake_wb[]) { { 1, 1024, 10240, 8000 }, { 4200, 0, 61440, 102400 } });
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, 8000 * 1024);
        sample_done(&s);
        printf("# ... and alone it is the kernel's guess, as the policy knows it\n");
        put_wb_stats(bdi, 2, (fake_wb[]) { { 1, 0, 0, 8000 }, { 4200, 0, 61440, 102400 } });
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, KERNEL_BW_INITIAL);
        sample_done(&s);

        printf("# only a few pages held, by a wb that is not the root's: that wb's\n");
        put_wb_stats(bdi, 2, (fake_wb[]) { { 1, 0, 0, 102400 }, { 4091, 0, 8, 3000 } });
        CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
        CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, 3000 * 1024);
        sample_done(&s);

        /* malformed and huge figures: a warning naming the file, the figure and the wb; the sample keeps
         * the device's other figures and has no wb bandwidth */
        static const struct {
                const char *text, *warning;
        } bad[] = {
                { "WbCgIno: 1\nWbWriteback: 0 kB\nWbReclaimable: 0 kB\nWbWriteBandwidth: 102400 kBps\n\n"
                  "WbCgIno: 4091\nWbWriteback: 1024 kB\nWbReclaimable: 40960 kB\nWbWriteBandwidth: 8O00 kBps\n",
                  "wb_stats (WbWriteBandwidth \"8O00\" in the block of WbCgIno 4091: not a number)" },
                { "WbCgIno: 4091\nWbWriteback: 1024 kB\nWbReclaimable: 99999999999999999999999 kB\n"
                  "WbWriteBandwidth: 8000 kBps\n",
                  "wb_stats (WbReclaimable \"99999999999999999999999\" in the block of WbCgIno 4091: too large)" },
                { "WbCgIno: 4091\nWbWriteback: 1024 kB\nWbReclaimable: 40960 kB\n"
                  "WbWriteBandwidth: 18014398509481984 kBps\n",
                  "wb_stats (WbWriteBandwidth \"18014398509481984\" in the block of WbCgIno 4091: too large)" },
                { "WbCgIno: 1\nWbWriteback: 0 kB\nWbWriteBandwidth: 102400 kBps\n",
                  "wb_stats (no WbReclaimable in the block of WbCgIno 1)" },
                { "WbWriteBandwidth: 8000 kBps\nWbCgIno: 1\nWbWriteback: 0 kB\nWbReclaimable: 0 kB\n",
                  "wb_stats (WbWriteBandwidth before the first WbCgIno)" },
                { "WbCgIno: x\x1b[2J\nWbWriteback: 0 kB\nWbReclaimable: 0 kB\nWbWriteBandwidth: 1 kBps\n",
                  "wb_stats (WbCgIno \"x\\x1b[2J\": not a number)" },
                { "state: 1\n", "wb_stats (no WbCgIno block)" },
        };
        log_set_max_level(LOG_INFO);
        log_capture_start();
        (void) log_lines_since(text, sizeof(text));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                printf("# wb_stats case %zu: %s\n", i, bad[i].warning);
                put(wb_path, "%s", bad[i].text);
                CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
                d = DEV(&s, bdi);
                CHECK(d->source == STATS_SOURCE_DEBUGFS);
                CHECK_EQ_U64(d->dirty_bytes, (40960 + 10240) * 1024);
                CHECK_EQ_U64(d->writeback_bytes, 1024 * 1024);
                CHECK_EQ_U64(d->kernel_bw_bytes_per_s, 110400 * 1024);
                CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 0);
                CHECK(log_lines_since(text, sizeof(text)) == 1);
                CHECK(strstr(text, "Malformed ") != NULL);
                CHECK(strstr(text, bad[i].warning) != NULL);
                sample_done(&s);
                /* good again, said once (and so the next case's warning is a new one) */
                put_wb_stats(bdi, 2, (fake_wb[]) { { 1, 0, 0, 102400 }, { 4091, 1024, 40960, 8000 } });
                CHECK(observe_sample_at(ctx, t += 1000000, &s) == 0);
                CHECK_EQ_U64(DEV(&s, bdi)->writing_wbs_bw_bytes_per_s, 8000 * 1024);
                CHECK(log_lines_since(text, sizeof(text)) == 1);
                CHECK(strstr(text, "/sys/kernel/debug/bdi/7:10/wb_stats reads again.") != NULL);
                sample_done(&s);
        }
        log_capture_stop();
        log_set_max_level(saved_level);

        observe_free(ctx);
        put_stats(bdi, 0, 40, 100, 50, 0);
        put_wb_stats(bdi, 2, (fake_wb[]) { { 77, 0, 0, 111 }, { 1, 0, 0, 222 } });
}

/* debugfs gone altogether (fake root: never mounted): block stat sector counts. *//* debugfs gone altogether (fake root: never mounted): block stat sector counts. */
static void test_blockstat_fallback(observe_ctx *ctx, sample *s) {
        const bdi_device *d;

        rm_rf("sys/kernel/debug");
        CHECK(observe_sample_at(ctx, 4000000, s) == 0);
        CHECK(!s->debugfs);
        d = DEV(s, "8:0");
        CHECK(d->source == STATS_SOURCE_BLOCKSTAT);
        CHECK_EQ_U64(d->written_total_bytes, 10000 * 512);
        CHECK_EQ_U64(d->dirty_bytes, 0);
        CHECK(!d->seen_before);
        d = DEV(s, "0:52");
        CHECK(d->source == STATS_SOURCE_NONE);
        d = DEV(s, "7:2");
        CHECK(d->source == STATS_SOURCE_NONE);          /* no stat file */
        sample_done(s);

        put_blockstat(SDA, 10000 + 4096);
        CHECK(observe_sample_at(ctx, 6000000, s) == 0);
        d = DEV(s, "8:0");
        CHECK(d->seen_before);
        CHECK_EQ_U64(d->write_bw_bytes_per_s, 4096 * 512 / 2);
        CHECK(d->backlog_s == 0.0);
}

/* Block device facts are cached: re-read only when older than DISK_FACTS_MAX_AGE_USEC or after the BDI was gone. */
static void test_disk_cache(observe_ctx *ctx, sample *s) {
        const uint64_t t0 = 6000000;

        put(SDA "/device/model", "NEW MODEL\n");
        put(SDA "/queue/rotational", "0\n");
        CHECK(observe_sample_at(ctx, t0 + 1000000, s) == 0);
        CHECK_STREQ(DEV(s, "8:0")->model, "QEMU HARDDISK");          /* read at 1 s, still fresh */
        CHECK(DEV(s, "8:0")->traits & BDI_TRAIT_ROTATIONAL);
        sample_done(s);
        CHECK(observe_sample_at(ctx, 1000000 + DISK_FACTS_MAX_AGE_USEC, s) == 0);
        CHECK_STREQ(DEV(s, "8:0")->model, "NEW MODEL");
        CHECK(!(DEV(s, "8:0")->traits & BDI_TRAIT_ROTATIONAL));
        sample_done(s);

        /* the BDI goes away for a tick and comes back as a different device: read again at once */
        put(SDB "/device/model", "Other Stick\n");
        rm_rf("sys/class/bdi/8:16");
        CHECK(observe_sample_at(ctx, 2000000 + DISK_FACTS_MAX_AGE_USEC, s) == 0);
        CHECK(dev(s, "8:16") == NULL);
        sample_done(s);
        put_knobs("8:16", true);
        CHECK(observe_sample_at(ctx, 3000000 + DISK_FACTS_MAX_AGE_USEC, s) == 0);
        CHECK(DEV(s, "8:16") && strcmp(DEV(s, "8:16")->model, "Other Stick") == 0);
}

static void test_find_copy(const sample *s) {
        sample c = {};

        CHECK(sample_find_device(s, "8:0") == dev(s, "8:0"));
        CHECK(sample_find_device(s, "sda") == dev(s, "8:0"));
        CHECK(sample_find_device(s, "/boot") == dev(s, "8:0"));
        CHECK(sample_find_device(s, "/data dir") == dev(s, "8:0"));
        CHECK(sample_find_device(s, "8:17") == dev(s, "btrfs-1"));
        CHECK(sample_find_device(s, "sdb1") == dev(s, "btrfs-1"));
        CHECK(sample_find_device(s, "/mnt/btr2") == dev(s, "btrfs-1"));
        CHECK(sample_find_device(s, "nfs4 srv:/export") == dev(s, "0:52"));
        CHECK(sample_find_device(s, "nope") == NULL);
        CHECK(sample_find_device(s, "/mnt") == NULL);

        CHECK(sample_copy(&c, s) == 0);
        CHECK_EQ_U64(c.n_devices, s->n_devices);
        CHECK(c.devices != s->devices);
        const bdi_device *a = sample_find_device(&c, "sda"), *b = sample_find_device(s, "sda");
        CHECK(a && b && a->mounts != b->mounts && a->mounts[0] != b->mounts[0]);
        CHECK_STREQ(a->mounts[1], "/data dir");
        CHECK(a->mounts[2] == NULL);
        CHECK_EQ_U64(a->written_total_bytes, b->written_total_bytes);
        sample_done(&c);
        CHECK(c.devices == NULL && c.n_devices == 0 && c.time_usec == 0);
}

static void test_report(const sample *s) {
        json_object *o, *v, *k, *g;

        o = report_device(dev(s, "8:0"));
        CHECK(json_object_object_get_ex(o, "name", &v) && strcmp(json_object_get_string(v), "sda") == 0);
        CHECK(json_object_object_get_ex(o, "source", &v) && strcmp(json_object_get_string(v), "debugfs") == 0);
        CHECK(json_object_object_get_ex(o, "knobs", &k) && json_object_object_length(k) == 7);
        CHECK(json_object_object_get_ex(k, "max_bytes", &v) && json_object_get_uint64(v) == 4997709824ULL);
        CHECK(json_object_object_get_ex(o, "mounts", &v) && json_object_array_length(v) == 2);
        CHECK(json_object_object_get_ex(o, "backlog_s", &v) && json_object_is_type(v, json_type_double));
        CHECK(json_object_object_get_ex(o, "wb_bw_bytes_per_s", &v) && json_object_get_uint64(v) == 2048 * 1024);
        CHECK(json_object_object_get_ex(o, "traits", &v) && json_object_array_length(v) == 1 &&
              strcmp(json_object_get_string(json_object_array_get_idx(v, 0)), "rotational") == 0);
        json_object_put(o);

        o = report_device(dev(s, "7:2"));
        CHECK(json_object_object_get_ex(o, "knobs", &k) && json_object_object_length(k) == 2);
        CHECK(!json_object_object_get_ex(k, "strict_limit", NULL));
        CHECK(json_object_object_get_ex(o, "source", &v) && strcmp(json_object_get_string(v), "none") == 0);
        json_object_put(o);

        o = report_device(dev(s, "254:0"));
        CHECK(json_object_object_get_ex(o, "writeback_bytes", &v) && json_object_get_uint64(v) == UINT64_MAX);
        json_object_put(o);

        o = report_device(dev(s, "8:16"));
        CHECK(json_object_object_get_ex(o, "traits", &v) && json_object_array_length(v) == 2 &&
              strcmp(json_object_get_string(json_object_array_get_idx(v, 1)), "usb") == 0);
        json_object_put(o);

        g = report_global(&s->global);
        CHECK(json_object_object_get_ex(g, "knobs", &k) && json_object_object_get_ex(k, "dirty_ratio", &v) &&
              json_object_get_uint64(v) == 20);
        CHECK(json_object_object_get_ex(g, "mem_total_bytes", &v) && json_object_get_uint64(v) == 16000000ULL * 1024);
        json_object_put(g);

        o = report_devices(s);
        CHECK(json_object_array_length(o) == s->n_devices);
        json_object_put(o);

        o = report_sample(s);
        CHECK(json_object_object_get_ex(o, "devices", &v) && json_object_array_length(v) == s->n_devices);
        CHECK(json_object_object_get_ex(o, "global", &v));
        json_object_put(o);
}

static void test_global_errors(void) {
        observe_ctx *ctx = NULL;
        sample s = {};

        /* Missing vmstat fields read as 0, they do not fail the sample. */
        put("proc/vmstat", "nr_dirty 3\nnr_dirtied garbage\n");
        CHECK(observe_new(root, false, &ctx) == 0);
        CHECK(observe_sample_at(ctx, 1, &s) == 0);
        CHECK_EQ_U64(s.global.dirty_bytes, 3 * page_size);
        CHECK_EQ_U64(s.global.dirtied_total_bytes, 0);           /* malformed field reads as 0 */
        sample_done(&s);
        put("proc/vmstat", "nr_dirty 3\n");
        CHECK(observe_sample_at(ctx, 2, &s) == 0);
        CHECK_EQ_U64(s.global.dirty_bytes, 3 * page_size);
        CHECK_EQ_U64(s.global.written_total_bytes, 0);
        sample_done(&s);

        rm_rf("proc/sys/vm/dirty_expire_centisecs");
        CHECK(observe_sample_at(ctx, 3, &s) == -ENOENT);
        rm_rf("proc/vmstat");
        CHECK(observe_sample_at(ctx, 4, &s) == -ENOENT);
        CHECK(s.devices == NULL);
        observe_free(ctx);
}

static void test_strings(void) {
        char buf[8];

        CHECK_STREQ(stats_source_to_string(STATS_SOURCE_BLOCKSTAT), "blockstat");
        CHECK_STREQ(trait_to_string(BDI_TRAIT_FUSE), "fuse");
        CHECK(trait_to_string(3) == NULL);
        CHECK(trait_from_string("usb") == BDI_TRAIT_USB);
        CHECK(trait_from_string("ssd") == -EINVAL);
        CHECK_STREQ(traits_to_string(0, buf, sizeof(buf)), "");
        CHECK_STREQ(traits_to_string(BDI_TRAIT_USB | BDI_TRAIT_NFS, buf, sizeof(buf)), "usb,nfs");
        /* names that do not fit are left out whole */
        CHECK_STREQ(traits_to_string(BDI_TRAIT_USB | BDI_TRAIT_FUSE, buf, sizeof(buf)), "usb");
        CHECK_STREQ(traits_to_string(BDI_TRAIT_ROTATIONAL, buf, sizeof(buf)), "");
}

/* tests/fake/linux-6.18: files copied from this kernel (vda 254:0), parsed as they come. */
static void test_captured_tree(void) {
        const char *srcdir = getenv("top_srcdir");
        char dir[4096];
        observe_ctx *ctx = NULL;
        sample s = {};
        const bdi_device *d;

        if (srcdir)
                snprintf(dir, sizeof(dir), "%s/tests/fake/linux-6.18", srcdir);
        else
                snprintf(dir, sizeof(dir), "%.*s/fake/linux-6.18", (int) (strrchr(__FILE__, '/') - __FILE__), __FILE__);
        char copy[] = "/tmp/test-observe-captured.XXXXXX", cmd[8300], link[128];

        if (access(dir, F_OK) < 0) {
                printf("# skipping captured tree, %s not found (set top_srcdir)\n", dir);
                return;
        }
        /* the release tarball cannot hold symlinks (tar -h), so the sysfs link is made here */
        CHECK(mkdtemp(copy) != NULL);
        snprintf(cmd, sizeof cmd, "cp -r '%s/.' '%s/'", dir, copy);
        CHECK(system(cmd) == 0);
        snprintf(link, sizeof link, "%s/sys/dev", copy);
        mkdir(link, 0755);
        snprintf(link, sizeof link, "%s/sys/dev/block", copy);
        mkdir(link, 0755);
        snprintf(link, sizeof link, "%s/sys/dev/block/254:0", copy);
        CHECK(symlink("../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda", link) == 0);

        CHECK(observe_new(copy, true, &ctx) == 0);
        CHECK(observe_sample_at(ctx, 5, &s) == 0);
        CHECK(s.debugfs);
        CHECK_EQ_U64(s.global.dirty_bytes, 41435 * page_size);
        CHECK_EQ_U64(s.global.writeback_bytes, 61440 * page_size);
        CHECK_EQ_U64(s.global.dirty_thresh_bytes, 102400 * page_size);
        CHECK_EQ_U64(s.global.background_thresh_bytes, 51200 * page_size);
        CHECK_EQ_U64(s.global.dirtied_total_bytes, 321164 * page_size);
        CHECK_EQ_U64(s.global.written_total_bytes, 189219 * page_size);
        CHECK_EQ_U64(s.global.mem_total_bytes, 24684084ULL * 1024);
        CHECK_EQ_U64(s.global.mem_available_bytes, 24308300ULL * 1024);
        CHECK_EQ_U64(vm_file(&s.global, "dirty_bytes"), 419430400);
        CHECK_EQ_U64(vm_file(&s.global, "dirty_background_bytes"), 209715200);
        CHECK_EQ_U64(vm_file(&s.global, "dirty_ratio"), 0);
        CHECK_EQ_U64(vm_file(&s.global, "dirty_expire_centisecs"), 3000);

        CHECK_EQ_U64(s.n_devices, 1);
        d = DEV(&s, "254:0");
        CHECK_STREQ(d->name, "vda");
        CHECK_STREQ(d->fstype, "ext4");
        CHECK_EQ_U64(d->n_mounts, 1);
        CHECK_STREQ(d->mounts[0], "/");
        CHECK_EQ_U64(d->traits, BDI_TRAIT_ROTATIONAL);
        CHECK_STREQ(d->model, "");
        CHECK_EQ_U64(bdi_files_read(d), 7);
        CHECK_EQ_U64(bdi_file(d, "max_bytes"), 419430400);
        CHECK_EQ_U64(bdi_file(d, "max_ratio_fine"), 1000000);
        CHECK(d->source == STATS_SOURCE_DEBUGFS);
        CHECK_EQ_U64(d->writeback_bytes, 28 * 1024);
        CHECK_EQ_U64(d->dirty_bytes, 896 * 1024);
        CHECK_EQ_U64(d->thresh_bytes, 30388 * 1024);
        CHECK_EQ_U64(d->dirtied_total_bytes, 669248ULL * 1024);
        CHECK_EQ_U64(d->written_total_bytes, 551988ULL * 1024);
        CHECK_EQ_U64(d->kernel_bw_bytes_per_s, 2000 * 1024);
        CHECK_EQ_U64(d->writing_wbs_bw_bytes_per_s, 2000 * 1024);
        CHECK_EQ_U64(d->backlog_bytes, 924 * 1024);
        sample_done(&s);
        observe_free(ctx);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", copy);
        CHECK(system(cmd) == 0);
}

/* WBTUNED_TEST_LIVE=1 (or =mount to mount debugfs if missing): print what the live system looks like. */
static void show_live(const char *mode) {
        observe_ctx *ctx = NULL;
        sample s = {};
        char traits[64], b0[32], b1[32], b2[32];

        if (observe_new(NULL, strcmp(mode, "mount") == 0, &ctx) < 0 || observe_sample(ctx, &s) < 0)
                return;
        sample_done(&s);
        usleep(200000);
        if (observe_sample(ctx, &s) < 0)
                return;
        printf("# live: debugfs=%d devices=%zu dirty=%s\n", s.debugfs, s.n_devices,
               format_bytes(b1, sizeof(b1), s.global.dirty_bytes));
        for (size_t i = 0; i < s.n_devices; i++) {
                const bdi_device *d = &s.devices[i];

                printf("# %-8s %-24s fs=%-6s mounts=%zu%s%s model='%s' traits=%s src=%s written=%s wb_bw=%s/s backlog=%s %.3fs have=%#x\n",
                       d->bdi, d->name, d->fstype, d->n_mounts, d->n_mounts ? " first=" : "",
                       d->n_mounts ? d->mounts[0] : "", d->model,
                       traits_to_string(d->traits, traits, sizeof(traits)), stats_source_to_string(d->source),
                       format_bytes(b0, sizeof(b0), d->written_total_bytes),
                       format_bytes(b1, sizeof(b1), d->writing_wbs_bw_bytes_per_s),
                       format_bytes(b2, sizeof(b2), d->backlog_bytes), d->backlog_s, bdi_files_read(d));
        }
        sample_done(&s);
        observe_free(ctx);
}

/* Run child(dir) in a child process in a mount namespace of its own (private root), dir an empty
 * directory it may mount on, and judge its exit code: 0 passes, 77 skips (no namespace or tmpfs here),
 * any other is the step that failed. Root only. */
static void run_in_mount_ns(const char *what, int (*child)(const char *dir)) {
        char dir[] = "/tmp/wbtuned-test-ns.XXXXXX";
        int status;
        pid_t pid;

        if (geteuid() != 0) {
                printf("# skipping %s: needs root for a mount namespace\n", what);
                return;
        }
        if (!mkdtemp(dir)) {
                CHECK(!"mkdtemp");
                return;
        }
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                int r = 77;

                if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", "", MS_REC | MS_PRIVATE, NULL) == 0)
                        r = child(dir);
                fflush(stdout);
                _exit(r);
        }
        CHECK(pid > 0);
        if (pid > 0 && waitpid(pid, &status, 0) == pid) {
                if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                        printf("# skipping %s: no mount namespace or tmpfs here\n", what);
                else {
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                printf("# %s: the child's step %d failed\n", what,
                                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                }
        }
        (void) rmdir(dir);
}

/* Each step's failure is its own exit code, for the parent to name. */
static int mountinfo_watch_child(const char *dir) {
        int fd = mountinfo_watch_open("");

        if (fd < 0)
                return 10;
        if (mountinfo_watch_changed(fd))
                return 11;      /* no mount yet */
        if (mount("wbtuned-test", dir, "tmpfs", 0, "size=64k") < 0)
                return 77;
        if (!mountinfo_watch_changed(fd))
                return 12;      /* the mount went unseen */
        if (mountinfo_watch_changed(fd))
                return 13;      /* told twice */
        if (umount(dir) < 0)
                return 14;
        if (!mountinfo_watch_changed(fd))
                return 15;      /* the unmount went unseen */
        return 0;
}

/* The mountinfo watch: a fake tree's regular file has no mount events (read every tick); procfs's tells
 * of a mount and an unmount once each, in a mount namespace of a child's own (root only). */
static void test_mountinfo_watch(void) {
        int fd = mountinfo_watch_open(root);

        CHECK(fd == -EMEDIUMTYPE);
        if (fd >= 0)
                close(fd);
        CHECK(mountinfo_watch_open("/nonexistent-wbtuned-root") == -ENOENT);
        run_in_mount_ns("the live mountinfo watch", mountinfo_watch_child);
}

static bool has_mount(const bdi_device *d, const char *mount_point) {
        for (size_t i = 0; i < d->n_mounts; i++)
                if (strcmp(d->mounts[i], mount_point) == 0)
                        return true;
        return false;
}

/* In a child of its own mount namespace: the fake tree's mountinfo, with a real watch in place of reading it
 * every tick. A change of the file alone is not read; a mount in the namespace, or MOUNTS_MAX_AGE_USEC, makes
 * the next sample read it. */
static int mounts_kept_child(const char *dir) {
        observe_ctx *ctx = NULL;
        sample s = {};
        const uint64_t t0 = 1000000;
        int fd;

        CHECK(observe_new(root, false, &ctx) == 0);
        fd = mountinfo_watch_open("");
        CHECK(fd >= 0);
        observe_set_mount_watch(ctx, fd);
        CHECK(observe_sample_at(ctx, t0, &s) == 0);
        CHECK(has_mount(DEV(&s, "8:0"), "/boot"));
        sample_done(&s);

        put("proc/self/mountinfo", "%s", "27 1 8:1 / /boot rw - ext4 /dev/sda1 rw\n"
            "40 1 8:1 / /boot2 rw - ext4 /dev/sda1 rw\n");
        CHECK(observe_sample_at(ctx, t0 + 1000000, &s) == 0);
        CHECK(!has_mount(DEV(&s, "8:0"), "/boot2"));     /* no mount event: the table is kept */
        sample_done(&s);
        if (mount("wbtuned-test", dir, "tmpfs", 0, "size=64k") < 0) {
                observe_free(ctx);
                return 77;
        }
        CHECK(observe_sample_at(ctx, t0 + 2000000, &s) == 0);
        CHECK(has_mount(DEV(&s, "8:0"), "/boot2"));      /* a mount was told: read again */
        sample_done(&s);

        put("proc/self/mountinfo", "%s", "27 1 8:1 / /boot rw - ext4 /dev/sda1 rw\n"
            "41 1 8:1 / /boot3 rw - ext4 /dev/sda1 rw\n");
        CHECK(observe_sample_at(ctx, t0 + 3000000, &s) == 0);
        CHECK(!has_mount(DEV(&s, "8:0"), "/boot3"));
        sample_done(&s);
        CHECK(observe_sample_at(ctx, t0 + 2000000 + MOUNTS_MAX_AGE_USEC, &s) == 0);
        CHECK(has_mount(DEV(&s, "8:0"), "/boot3"));      /* old enough: read again without an event */
        sample_done(&s);
        observe_free(ctx);
        return tap_failed ? 1 : 0;
}

static void test_mounts_kept(void) {
        _cleanup_free_ char *path = path_join_root(root, "/proc/self/mountinfo"), *saved = NULL;

        CHECK(read_file_full(path, &saved, NULL) == 0);
        if (!saved)
                return;
        run_in_mount_ns("the kept mount table", mounts_kept_child);
        put("proc/self/mountinfo", "%s", saved);
}

int main(void) {
        observe_ctx *ctx = NULL;
        sample s = {};

        page_size = (uint64_t) sysconf(_SC_PAGESIZE);
        if (getenv("WBTUNED_TEST_LIVE"))
                show_live(getenv("WBTUNED_TEST_LIVE"));

        if (!mkdtemp(root)) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }
        build_tree();

        test_strings();
        test_mount_table();
        test_mountinfo_visibility();
        test_mountinfo_watch();
        test_mounts_kept();

        CHECK(observe_new(root, true, &ctx) == 0);
        test_first_sample(ctx, &s);
        test_find_copy(&s);
        test_report(&s);
        sample_done(&s);
        CHECK(s.devices == NULL && s.n_devices == 0);

        test_knobs_cached();
        test_faults();
        test_vanish();
        test_wb_stats_cgroups();
        test_second_sample(ctx, &s);
        sample_done(&s);
        test_blockstat_fallback(ctx, &s);
        sample_done(&s);
        test_disk_cache(ctx, &s);
        sample_done(&s);
        observe_free(ctx);

        test_global_errors();
        test_captured_tree();

        if (!getenv("WBTUNED_TEST_KEEP"))
                rm_rf("");
        else
                printf("# fake tree kept in %s\n", root);
        TEST_EXIT();
}
