/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Real machines in fake trees: many CPUs (per-CPU counter noise), stacked devices (dm, loop) and NFS pauses. */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "devnames.h"
#include "guard.h"
#include "knob-files.h"
#include "log.h"
#include "observe.h"
#include "policy.h"
#include "tap.h"
#include "util.h"

#define MB (1024ULL * 1024ULL)
#define KB_PER_MB 1024ULL

static char root[] = "/tmp/test-stacks-XXXXXX";

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
        (void) st, (void) flag, (void) ftw;
        return remove(path);
}

/* Empty the tree (keeping root itself). */
static void clear_tree(void) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/proc", root);
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        snprintf(path, sizeof(path), "%s/sys", root);
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The global files, possible CPUs ("" leaves the file out) and mountinfo. */
static void put_globals(const char *possible, const char *mountinfo) {
        put("proc/vmstat", "nr_dirty 100\nnr_writeback 20\nnr_dirty_threshold 1200000\n"
            "nr_dirty_background_threshold 600000\nnr_dirtied 1000\nnr_written 900\n");
        put("proc/meminfo", "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\n");
        put("proc/sys/vm/dirty_bytes", "0\n");
        put("proc/sys/vm/dirty_background_bytes", "0\n");
        put("proc/sys/vm/dirty_ratio", "20\n");
        put("proc/sys/vm/dirty_background_ratio", "10\n");
        put("proc/sys/vm/dirty_writeback_centisecs", "500\n");
        put("proc/sys/vm/dirty_expire_centisecs", "3000\n");
        put("proc/self/mountinfo", "%s", mountinfo);
        if (possible[0])
                put("sys/devices/system/cpu/possible", "%s\n", possible);
}

static void put_knobs(const char *bdi) {
        static const char *const files[][2] = {
                { "min_ratio", "0" }, { "max_ratio", "100" }, { "min_ratio_fine", "0" },
                { "max_ratio_fine", "1000000" }, { "min_bytes", "0" }, { "max_bytes", "4997709824" },
                { "strict_limit", "0" },
        };
        char rel[256];

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(rel, sizeof(rel), "sys/class/bdi/%s/%s", bdi, files[i][0]);
                put(rel, "%s\n", files[i][1]);
        }
}

/* debugfs stats in kB, as 6.18 lays them out (the parts observe reads). */
static void put_stats(const char *bdi, uint64_t wb_kb, uint64_t dirty_kb, uint64_t dirtied_kb, uint64_t written_kb) {
        char rel[256];

        snprintf(rel, sizeof(rel), "sys/kernel/debug/bdi/%s/stats", bdi);
        put(rel,
            "BdiWriteback:       %10llu kB\nBdiReclaimable:     %10llu kB\nBdiDirtyThresh:        4881124 kB\n"
            "DirtyThresh:           4881124 kB\nBackgroundThresh:      2437580 kB\nBdiDirtied:         %10llu kB\n"
            "BdiWritten:         %10llu kB\nBdiWriteBandwidth:           0 kBps\nstate:                       5\n",
            (unsigned long long) wb_kb, (unsigned long long) dirty_kb, (unsigned long long) dirtied_kb,
            (unsigned long long) written_kb);
}

/* A block device sysfs knows as name at devdir (under sys/), its number linked to it. */
static void put_block(const char *devnum, const char *devdir, const char *name, bool rotational, bool removable) {
        char rel[512], target[512];

        snprintf(rel, sizeof(rel), "sys/%s/queue/rotational", devdir);
        put(rel, "%d\n", rotational);
        snprintf(rel, sizeof(rel), "sys/%s/removable", devdir);
        put(rel, "%d\n", removable);
        snprintf(rel, sizeof(rel), "sys/%s/dev", devdir);
        put(rel, "%s\n", devnum);
        snprintf(rel, sizeof(rel), "sys/dev/block/%s", devnum);
        snprintf(target, sizeof(target), "../../%s", devdir);
        link_to(rel, target);
        snprintf(rel, sizeof(rel), "sys/class/block/%s", name);
        link_to(rel, target);
        put_knobs(devnum);
        put_stats(devnum, 0, 0, 0, 0);
}

static const bdi_device *dev(const sample *s, const char *bdi) {
        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, bdi) == 0)
                        return &s->devices[i];
        printf("Bail out! no %s in the sample\n", bdi);
        exit(EXIT_FAILURE);
}

/* ---- item 4: many CPUs ----------------------------------------------------------------------------------- */

static void test_counter_error(void) {
        /* wb_stat_error(): nr_cpu_ids x 8 x (1 + ilog2(nr_cpu_ids)) pages */
        CHECK_EQ_U64(counter_error_bytes(16, 4096), 2560ULL * 1024);          /* 2.5M */
        CHECK_EQ_U64(counter_error_bytes(64, 4096), 14ULL * MB);
        CHECK_EQ_U64(counter_error_bytes(256, 4096), 72ULL * MB);
        CHECK_EQ_U64(counter_error_bytes(2, 4096), 2 * 8 * 2 * 4096);
        CHECK_EQ_U64(counter_error_bytes(1, 4096), 8 * 4096);
        CHECK_EQ_U64(counter_error_bytes(0, 4096), 8 * 4096);
        CHECK_EQ_U64(counter_error_bytes(12, 4096), 12 * 8 * 4 * 4096);      /* ilog2(12) = 3 */
}

/* One disk, sda, whose counters the test sets each second; observe reads them, the policy decides. */
typedef struct machine {
        observe_ctx *ctx;
        config c;
        policy_state st;
        sample s;
        decision d;
        uint64_t time_usec;
        uint64_t dirtied_kb, written_kb;
} machine;

static void machine_init(machine *m, const char *possible) {
        *m = (machine) { .time_usec = 10000000 };
        clear_tree();
        put_globals(possible, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
        put_block("8:0", "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", "sda", false, false);
        config_init(&m->c);
        CHECK(observe_new(root, false, &m->ctx) >= 0);
}

static void machine_done(machine *m) {
        sample_done(&m->s);
        decision_done(&m->d);
        policy_state_done(&m->st);
        observe_free(m->ctx);
}

/* A second: sda wrote and dirtied so much, and holds dirty and writeback data as given; sampled, decided. */
static void machine_tick(machine *m, uint64_t dirtied_bytes, uint64_t written_bytes, uint64_t wb_bytes, uint64_t dirty_bytes) {
        m->dirtied_kb += dirtied_bytes / 1024;
        m->written_kb += written_bytes / 1024;
        put_stats("8:0", wb_bytes / 1024, dirty_bytes / 1024, m->dirtied_kb, m->written_kb);
        m->time_usec += 1000000;
        sample_done(&m->s);
        decision_done(&m->d);
        CHECK(observe_sample_at(m->ctx, m->time_usec, &m->s) >= 0);
        m->s.support.devices_trusted = m->s.support.debugfs = m->s.support.wb_stats = true;
        CHECK(policy_decide(&m->s, &m->c, &m->st, &m->d) >= 0);
}

static void test_cpu_noise(const char *possible, unsigned cpus) {
        bool big = cpus > 16;
        long ps = sysconf(_SC_PAGESIZE);
        uint64_t page = ps > 0 ? (uint64_t) ps : 4096;
        machine m;

        printf("# %u CPUs (possible %s)\n", cpus, possible);
        /* an idle disk whose counters show 5M dirty and 5M under writeback: per-CPU noise on 64 CPUs */
        machine_init(&m, possible);
        machine_tick(&m, 0, 0, 5 * MB, 5 * MB);
        CHECK_EQ_U64(m.s.global.possible_cpus, cpus);
        CHECK_EQ_U64(m.s.global.counter_error_bytes, counter_error_bytes(cpus, page));
        CHECK_EQ_U64(dev(&m.s, "8:0")->counter_error_bytes, counter_error_bytes(cpus, page));
        machine_tick(&m, 0, 0, 5 * MB, 5 * MB);
        CHECK(bdi_device_active(dev(&m.s, "8:0")) == !big);
        CHECK(m.d.devices[0].active == !big);
        /* written at 50 MB/s with those 5M + 5M queued: saturated on 2 CPUs, noise on 64 */
        for (int i = 0; i < 4; i++)
                machine_tick(&m, 50 * MB, 50 * MB, 5 * MB, 5 * MB);
        CHECK(m.d.devices[0].active);
        CHECK(big ? m.d.devices[0].bw_source == SPEED_PRESUMED : m.d.devices[0].bw_source == SPEED_MEASURED);
        /* a real 200M backlog is saturated anywhere */
        for (int i = 0; i < 4; i++)
                machine_tick(&m, 50 * MB, 50 * MB, 40 * MB, 160 * MB);
        CHECK(m.d.devices[0].bw_source == SPEED_MEASURED);
        CHECK(m.d.devices[0].bw_bytes_per_s >= 45 * MB && m.d.devices[0].bw_bytes_per_s <= 55 * MB);
        machine_done(&m);

        /* a backlog from before the daemon watched (40M), nobody adding to it, but the dirtied counter
         * jumps by 5M once (per-CPU batches folded in): on 64 CPUs that is not "dirtied a megabyte", so it
         * needs no room (need_bytes 0); on 2 CPUs 5M is a writer */
        machine_init(&m, possible);
        machine_tick(&m, 0, 0, 8 * MB, 32 * MB);
        machine_tick(&m, 5 * MB, 0, 8 * MB, 32 * MB);
        CHECK(m.d.devices[0].active);
        if (big)
                CHECK_EQ_U64(m.d.devices[0].need_bytes, 0);
        else
                CHECK(m.d.devices[0].need_bytes > 0);
        machine_done(&m);
}

/* A strict cap of 100M on a device whose counters show 120M: on 2 CPUs a backlog over the kernel's
 * batching, brought down by the guard; on 64 CPUs within the counters' error, and left alone. */
static void test_guard_noise(uint64_t error_bytes, bool held) {
        bdi_device d = { .bdi = "8:0", .name = "sda", .seen_before = true };
        sample s = { .time_usec = 10000000, .devices = &d, .n_devices = 1 };
        device_decision dd = { .bdi = "8:0", .name = "sda", .managed = true, .active = true, .capped = true,
                               .bw_bytes_per_s = 50 * MB };
        decision dec = { .devices = &dd, .n_devices = 1 };
        guard_state gs = {};

        s.global.dirty_thresh_bytes = 4600 * MB;
        d.counter_error_bytes = error_bytes;
        d.writeback_bytes = 8 * MB;
        d.dirty_bytes = 112 * MB;
        d.backlog_bytes = 120 * MB;
        dd.knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = (knob_decision) { .wanted = true, .value = 100 * MB };
        dd.knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST] = (knob_decision) { .wanted = true, .value = 1 };
        guard_apply(&s, &gs, &dec);
        CHECK(dd.knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].held == held);
}

/* ---- item 5: stacked devices ----------------------------------------------------------------------------- */

/* dir (under sys/) names member as one of its slaves, as sysfs does: a link to the member's dir. */
static void put_slave(const char *dir, const char *member, const char *member_dir) {
        char rel[512], target[512];

        snprintf(rel, sizeof(rel), "sys/%s/slaves/%s", dir, member);
        /* absolute: the fake tree's depth does not matter */
        snprintf(target, sizeof(target), "%s/sys/%s", root, member_dir);
        link_to(rel, target);
}

static size_t dev_index(const sample *s, const char *bdi) {
        return (size_t) (dev(s, bdi) - s->devices);
}

static const knob_decision *knob(const decision *d, size_t i, knob_id k) {
        return &d->devices[i].knobs[k - KNOB_DEVICE_FIRST];
}

#define USB_SDA "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sda"
#define ATA_SDB "devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
#define USB_SDC "devices/pci0000:00/0000:00:14.0/usb2/2-2/2-2:1.0/host7/target7:0:0/7:0:0:0/block/sdc"
#define VDA "devices/pci0000:00/0000:00:02.0/virtio1/block/vda"

static void build_stacks(void) {
        clear_tree();
        put_globals("0-3",
                    "1 0 254:0 / / rw - ext4 /dev/vda rw\n"
                    "40 1 8:32 / /mnt/data rw - ext4 /dev/sdc rw\n"
                    "41 1 7:0 / /mnt/img rw - ext4 /dev/loop0 rw\n");
        /* LUKS on a USB stick's partition: dm-0 over sda1 */
        put_block("8:0", USB_SDA, "sda", false, true);
        put(("sys/" USB_SDA "/sda1/partition"), "1\n");
        put(("sys/" USB_SDA "/sda1/dev"), "8:1\n");
        link_to("sys/dev/block/8:1", "../../" USB_SDA "/sda1");
        put_block("253:0", "devices/virtual/block/dm-0", "dm-0", false, false);
        put("sys/devices/virtual/block/dm-0/dm/name", "luks-stick\n");
        put_slave("devices/virtual/block/dm-0", "sda1", USB_SDA "/sda1");
        /* two levels: dm-1 over dm-2 over a rotational removable disk sdb */
        put_block("8:16", ATA_SDB, "sdb", true, true);
        put_block("253:2", "devices/virtual/block/dm-2", "dm-2", false, false);
        put_slave("devices/virtual/block/dm-2", "sdb", ATA_SDB);
        put_block("253:1", "devices/virtual/block/dm-1", "dm-1", false, false);
        put_slave("devices/virtual/block/dm-1", "dm-2", "devices/virtual/block/dm-2");
        /* a loop device on a file in the ext4 of a USB disk sdc */
        put_block("8:32", USB_SDC, "sdc", false, false);
        put_block("7:0", "devices/virtual/block/loop0", "loop0", false, false);
        put("sys/devices/virtual/block/loop0/loop/backing_file", "/mnt/data/images/disk.img\n");
        put("sys/devices/virtual/block/loop0/ro", "0\n");
        /* a read-only loop (a snap) on a file of the root disk: it writes nothing back, vda is no lower device */
        put_block("254:0", VDA, "vda", false, false);
        put_block("7:1", "devices/virtual/block/loop1", "loop1", false, false);
        put("sys/devices/virtual/block/loop1/loop/backing_file", "/var/lib/snapd/snaps/core_1.snap (deleted)\n");
        put("sys/devices/virtual/block/loop1/ro", "1\n");
        /* a detached loop */
        put_block("7:2", "devices/virtual/block/loop2", "loop2", false, false);
}

static void unlink_rel(const char *rel) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        CHECK(unlink(path) == 0);
}

static void test_stacks(void) {
        observe_ctx *ctx = NULL;
        config c;
        policy_state st = {};
        decision d = {};
        sample s = {};
        size_t i;

        build_stacks();
        CHECK(observe_new(root, false, &ctx) >= 0);
        CHECK(observe_sample_at(ctx, 1000000, &s) >= 0);
        /* dm-0 carries its USB stick's traits: [device "usb"] matches an encrypted stick */
        CHECK((dev(&s, "253:0")->traits & (BDI_TRAIT_USB | BDI_TRAIT_REMOVABLE)) == (BDI_TRAIT_USB | BDI_TRAIT_REMOVABLE));
        CHECK_STREQ(dev(&s, "253:0")->lower[0], "sda");
        CHECK_STREQ(dev(&s, "8:0")->upper, "dm-0");
        CHECK_STREQ(dev(&s, "253:0")->upper, "");
        config_init(&c);
        CHECK(config_parse_text("test.conf", "[device \"usb\"]\nmax_bytes = 8M\n", strlen("[device \"usb\"]\nmax_bytes = 8M\n"),
                                &c, stderr) >= 0);
        {
                const bdi_device *dm0 = dev(&s, "253:0");
                const device_config *dc = config_find_device(&c, dm0->name, dm0->alias, dm0->major, dm0->minor, dm0->traits);

                CHECK(dc != NULL);
        }
        /* two levels: dm-1 over dm-2 over sdb gets sdb's traits */
        CHECK((dev(&s, "253:1")->traits & (BDI_TRAIT_ROTATIONAL | BDI_TRAIT_REMOVABLE)) ==
              (BDI_TRAIT_ROTATIONAL | BDI_TRAIT_REMOVABLE));
        CHECK(!(dev(&s, "253:1")->traits & BDI_TRAIT_USB));
        CHECK_STREQ(dev(&s, "253:2")->upper, "dm-1");
        CHECK_STREQ(dev(&s, "8:16")->upper, "dm-2");
        /* the loop on a file of sdc's filesystem: sdc is its lower device, and the loop a USB one */
        CHECK_STREQ(dev(&s, "7:0")->backing_mount, "/mnt/data");
        CHECK_STREQ(dev(&s, "8:32")->upper, "loop0");
        CHECK(dev(&s, "7:0")->traits & BDI_TRAIT_USB);
        /* a read-only loop is no stack, nor a detached one */
        CHECK_STREQ(dev(&s, "254:0")->upper, "");
        CHECK_STREQ(dev(&s, "7:2")->backing_mount, "");
        CHECK_STREQ(dev(&s, "7:1")->backing_mount, "");

        /* the policy: no cap, minimum or first bound on a lower device, even while its upper floods it */
        config_init(&c);
        s.support.devices_trusted = s.support.debugfs = s.support.wb_stats = true;
        CHECK(policy_decide(&s, &c, &st, &d) >= 0);
        for (size_t k = 0; k < 2; k++) {
                const char *lower = k == 0 ? "8:32" : "8:0";

                i = dev_index(&s, lower);
                CHECK(!knob(&d, i, KNOB_MAX_BYTES)->wanted);
                CHECK(!knob(&d, i, KNOB_MIN_BYTES)->wanted);
                CHECK(!knob(&d, i, KNOB_STRICT_LIMIT)->wanted);
                CHECK(strstr(d.devices[i].left_alone, "lower device of") != NULL);
        }
        /* the upper devices get theirs: dm-0 as a stick (a quarter of unmeasured_device_bytes), the loop too */
        CHECK_EQ_U64(knob(&d, dev_index(&s, "253:0"), KNOB_MAX_BYTES)->value, c.unmeasured_device_bytes / 4);
        CHECK(knob(&d, dev_index(&s, "7:0"), KNOB_MAX_BYTES)->wanted);
        /* vda, under a read-only loop only, is an ordinary disk */
        CHECK(knob(&d, dev_index(&s, "254:0"), KNOB_MAX_BYTES)->wanted);
        CHECK_STREQ(d.devices[dev_index(&s, "254:0")].left_alone, "");
        decision_done(&d);
        sample_done(&s);

        /* loop2 is attached to a file on vda after the first sample (its facts are cached for 30 s): once it
         * holds data, its backing file is read again at once */
        put("sys/devices/virtual/block/loop2/loop/backing_file", "/srv/vm.img\n");
        put_stats("7:2", 0, 4 * 1024, 4 * 1024, 0);
        CHECK(observe_sample_at(ctx, 1500000, &s) >= 0);
        CHECK_STREQ(dev(&s, "7:2")->backing_mount, "/");
        CHECK_STREQ(dev(&s, "254:0")->upper, "loop2");
        sample_done(&s);
        put_stats("7:2", 0, 0, 4 * 1024, 4 * 1024);
        unlink_rel("sys/devices/virtual/block/loop2/loop/backing_file");

        /* the loop's worker floods sdc: still no cap there (the stacked-device deadlock), one on loop0 */
        for (int t = 2; t < 6; t++) {
                put_stats("8:32", 8 * 1024, 100 * 1024, (uint64_t) t * 60 * 1024, (uint64_t) t * 50 * 1024);
                put_stats("7:0", 8 * 1024, 100 * 1024, (uint64_t) t * 60 * 1024, (uint64_t) t * 50 * 1024);
                CHECK(observe_sample_at(ctx, (uint64_t) t * 1000000, &s) >= 0);
                s.support.devices_trusted = s.support.debugfs = s.support.wb_stats = true;
                CHECK(policy_decide(&s, &c, &st, &d) >= 0);
                i = dev_index(&s, "8:32");
                CHECK(d.devices[i].active);
                CHECK(!knob(&d, i, KNOB_MAX_BYTES)->wanted && !knob(&d, i, KNOB_MIN_BYTES)->wanted &&
                      !knob(&d, i, KNOB_STRICT_LIMIT)->wanted);
                CHECK(knob(&d, dev_index(&s, "7:0"), KNOB_MAX_BYTES)->wanted);
                decision_done(&d);
                sample_done(&s);
        }
        /* the admin's own [device] values for a lower device are still written */
        CHECK(config_parse_text("test.conf", "[device \"sdc\"]\nmax_bytes = 20M\n", strlen("[device \"sdc\"]\nmax_bytes = 20M\n"),
                                &c, stderr) >= 0);
        CHECK(observe_sample_at(ctx, 7000000, &s) >= 0);
        s.support.devices_trusted = true;
        CHECK(policy_decide(&s, &c, &st, &d) >= 0);
        CHECK(knob(&d, dev_index(&s, "8:32"), KNOB_MAX_BYTES)->from_config);
        decision_done(&d);
        sample_done(&s);
        policy_state_done(&st);
        observe_free(ctx);
}

/* ---- item 7: NFS pauses ---------------------------------------------------------------------------------- */

typedef struct nfs_run {
        sample s;
        bdi_device dev;
        config c;
        policy_state st;
        decision d;
        uint64_t lowest_bw;      /* the lowest bandwidth the policy took once it measured the device */
} nfs_run;

static void nfs_init(nfs_run *r, unsigned traits) {
        memset(r, 0, sizeof *r);
        config_init(&r->c);
        r->s.time_usec = 10000000;
        r->s.global.dirty_thresh_bytes = 4600 * MB;
        vm_file_set(&r->s.global, "dirty_ratio", 20);
        vm_file_set(&r->s.global, "dirty_background_ratio", 10);
        snprintf(r->dev.bdi, sizeof r->dev.bdi, "0:52");
        snprintf(r->dev.name, sizeof r->dev.name, "nfs4 srv:/export");
        r->dev.has_devnum = true;
        r->dev.minor = 52;
        r->dev.traits = traits;
        r->dev.seen_before = true;
        r->s.devices = &r->dev;
        r->s.n_devices = 1;
        r->s.support.devices_trusted = r->s.support.debugfs = r->s.support.wb_stats = true;
        r->lowest_bw = UINT64_MAX;
}

/* ticks of 100 ms writing bw, with 8M in flight and 32M queued behind it. */
static void nfs_write(nfs_run *r, uint64_t bw, unsigned ticks) {
        for (unsigned i = 0; i < ticks; i++) {
                r->dev.written_total_bytes += bw / 10;
                r->dev.dirtied_total_bytes += bw / 10;
                r->dev.write_bw_bytes_per_s = r->dev.dirty_rate_bytes_per_s = bw;
                r->dev.writeback_bytes = 8 * MB;
                r->dev.dirty_bytes = 32 * MB;
                r->dev.backlog_bytes = 40 * MB;
                r->s.time_usec += 100000;
                decision_done(&r->d);
                CHECK(policy_decide(&r->s, &r->c, &r->st, &r->d) >= 0);
                if (r->d.devices[0].bw_source == SPEED_MEASURED)
                        r->lowest_bw = MIN(r->lowest_bw, r->d.devices[0].bw_bytes_per_s);
        }
}

static void nfs_done(nfs_run *r) {
        decision_done(&r->d);
        policy_state_done(&r->st);
}

static void test_nfs_pause(void) {
        nfs_run r;

        /* 50 MB/s, a 3 s hiccup of the server (nothing completes, the backlog waits), 50 MB/s again */
        nfs_init(&r, BDI_TRAIT_NFS);
        nfs_write(&r, 50 * MB, 30);
        CHECK(r.d.devices[0].bw_source == SPEED_MEASURED);
        nfs_write(&r, 0, 30);
        nfs_write(&r, 50 * MB, 20);
        printf("# nfs: lowest bandwidth taken over a 3 s hiccup %llu\n", (unsigned long long) r.lowest_bw);
        CHECK(r.lowest_bw >= 45 * MB);
        CHECK_EQ_U64(r.st.devices[0].slowed_usec, 0);
        /* a real drop from 50 to 5 MB/s is still seen, within a few seconds */
        nfs_write(&r, 5 * MB, 30);
        printf("# nfs: after 50 -> 5 MB/s %llu\n", (unsigned long long) r.d.devices[0].bw_bytes_per_s);
        CHECK(r.d.devices[0].bw_bytes_per_s <= 10 * MB);
        CHECK(r.st.devices[0].slowed_usec != 0);
        nfs_done(&r);

        /* a local disk that completes nothing for 3 s while saturated did slow down */
        nfs_init(&r, 0);
        nfs_write(&r, 50 * MB, 30);
        nfs_write(&r, 0, 30);
        CHECK(r.lowest_bw <= 10 * MB);
        nfs_done(&r);
}

int main(void) {
        log_set_max_level(LOG_ERR);
        if (!mkdtemp(root)) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }
        test_counter_error();
        test_cpu_noise("0-1", 2);
        test_cpu_noise("0-63", 64);
        test_guard_noise(counter_error_bytes(2, 4096), true);
        test_guard_noise(counter_error_bytes(64, 4096), false);
        test_stacks();
        test_nfs_pause();
        clear_tree();
        (void) rmdir(root);
        TEST_EXIT();
}
