/* Real machines in fake trees: many CPUs (per-CPU counter noise) and NFS pauses. */
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
        test_nfs_pause();
        clear_tree();
        (void) rmdir(root);
        TEST_EXIT();
}
