/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: the /proc, /sys and debugfs readers (observe + devnames + report), driven through
 * observe_sample_at() on a fake tree whose files come from the input. The tree lives under $TMPDIR.
 *
 * Input: 8 bytes of file states, then file contents separated by NUL bytes. Content i goes to slot
 * i % N_SLOTS, for the first sample if i < N_SLOTS, else for the second; a slot without content holds
 * a valid default in the first sample and keeps its file in the second. The state bytes give 2 bits
 * per slot and sample: 01 = the file is missing, 10 = it is a directory, else a file.
 * After each sample: the sample is well formed, copies, reports as JSON and finds its devices. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "log.h"
#include "observe.h"
#include "report.h"

#define SDA "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
#define SDB "sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb"
#define BTRFS_FS "sys/fs/btrfs/0b5e5a5c-1111-2222-3333-444455556666"

/* Every file observe reads on this tree whose content matters; the last slot names an extra BDI. */
static const struct {
        const char *path;
        const char *content;
} slots[] = {
        { "proc/vmstat", "nr_dirty 100\nnr_writeback 20\nnr_dirty_threshold 5000\n"
                         "nr_dirty_background_threshold 2500\nnr_dirtied 1000\nnr_written 900\n" },
        { "proc/meminfo", "MemTotal:       16000000 kB\nMemFree:         9000000 kB\nMemAvailable:    8000000 kB\n" },
        { "proc/sys/vm/dirty_bytes", "0\n" },
        { "proc/sys/vm/dirty_ratio", "20\n" },
        { "proc/self/mountinfo", "27 1 8:1 / /boot rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                                 "29 1 0:52 / /mnt/nfs rw shared:5 master:2 - nfs4 srv:/export rw,vers=4.2\n"
                                 "31 1 0:70 / /mnt/btr rw - btrfs /dev/sdb1 rw\n"
                                 "33 1 7:10 / /mnt/loop\\040x rw - ext4 /dev/loop10 rw\n" },
        { "sys/kernel/debug/bdi/8:0/stats",
          "BdiWriteback:            8 kB\nBdiReclaimable:        100 kB\nBdiDirtyThresh:    4881124 kB\n"
          "DirtyThresh:       4881124 kB\nBackgroundThresh:  2437580 kB\nBdiDirtied:           5000 kB\n"
          "BdiWritten:            4000 kB\nBdiWriteBandwidth:     1000 kBps\nb_dirty: 32\nstate: 5\n" },
        { "sys/kernel/debug/bdi/8:0/wb_stats",
          "WbCgIno:    77\nWbWriteback: 1024 kB\nWbReclaimable: 4096 kB\nWbWriteBandwidth:   111 kBps\n\n"
          "WbCgIno:     1\nWbWriteback: 0 kB\nWbReclaimable: 0 kB\nWbWriteBandwidth:   2048 kBps\n" },
        { "sys/class/bdi/8:0/max_bytes", "4997709824\n" },
        { "sys/class/bdi/8:0/min_ratio_fine", "0\n" },
        { "sys/class/bdi/8:0/strict_limit", "1\n" },
        { "sys/dev/block/7:10/uevent", "MAJOR=7\nMINOR=10\nDEVNAME=loop10\nDEVTYPE=disk\n" },
        { "sys/dev/block/7:10/stat", "28448 6158 1918698 5450 14793 6141 2000 3287 0 5476 9144\n" },
        { "sys/kernel/debug/bdi/btrfs-1/stats",
          "BdiWriteback: 4 kB\nBdiReclaimable: 4 kB\nBdiDirtyThresh: 10 kB\nBdiDirtied: 10 kB\n"
          "BdiWritten: 10 kB\nBdiWriteBandwidth: 100 kBps\n" },
        { SDA "/device/model", "QEMU HARDDISK   \n" },
        { "sys/class/block/sdb1/dev", "8:17\n" },
        { NULL, "0:77" },               /* the name of one more BDI directory */
};
#define N_SLOTS ELEMENTS(slots)
#define EXTRA_SLOT (N_SLOTS - 1)

/* What is fixed: the rest of the tree. */
static const struct {
        const char *path;
        const char *content;      /* NULL: a symlink to target */
        const char *target;
} base[] = {
        { "proc/sys/vm/dirty_background_bytes", "0\n", NULL },
        { "proc/sys/vm/dirty_background_ratio", "10\n", NULL },
        { "proc/sys/vm/dirty_writeback_centisecs", "500\n", NULL },
        { "proc/sys/vm/dirty_expire_centisecs", "3000\n", NULL },
        { SDA "/queue/rotational", "1\n", NULL },
        { SDA "/removable", "0\n", NULL },
        { SDA "/sda1/partition", "1\n", NULL },
        { SDB "/removable", "1\n", NULL },
        { SDB "/sdb1/partition", "1\n", NULL },
        { "sys/dev/block/8:0", NULL, "../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda" },
        { "sys/dev/block/8:1", NULL, "../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1" },
        { "sys/dev/block/8:17", NULL, "../../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb/sdb1" },
        { BTRFS_FS "/bdi", NULL, "../../../devices/virtual/bdi/btrfs-1" },
        { BTRFS_FS "/devices/sdb1/size", "1000\n", NULL },
        { "sys/class/bdi/8:0/min_ratio", "0\n", NULL },
        { "sys/class/bdi/8:0/max_ratio", "100\n", NULL },
        { "sys/class/bdi/8:0/max_ratio_fine", "1000000\n", NULL },
        { "sys/class/bdi/8:0/min_bytes", "0\n", NULL },
        { "sys/class/bdi/7:10/min_ratio", "0\n", NULL },
        { "sys/class/bdi/7:10/max_ratio", "100\n", NULL },
        { "sys/class/bdi/0:52/max_ratio", "100\n", NULL },
        { "sys/kernel/debug/bdi/0:52/stats", "BdiWriteback: 0 kB\n", NULL },
        { "sys/class/bdi/btrfs-1/max_ratio", "100\n", NULL },
};

static char *root;
static char extra_bdi[256];       /* the extra BDI's directory name while it exists */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *tree_path(const char *rel) {
        char *p;

        if (asprintf(&p, "%s/%s", root, rel) < 0)
                abort();
        return p;
}

static void mkdir_parents(const char *path) {
        char *p = strdup(path);

        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        (void) mkdir(p, 0755);
                        *s = '/';
                }
        free(p);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void rm_rf(const char *path) {
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *rel, const char *content, size_t len) {
        char *p = tree_path(rel);
        int fd;

        mkdir_parents(p);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || (len > 0 && write(fd, content, len) != (ssize_t) len)) {
                perror(p);
                abort();
        }
        close(fd);
        free(p);
}

static void cleanup(void) {
        if (root)
                rm_rf(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *tmp = getenv("TMPDIR");

        fuzz_quiet_logs();
        if (asprintf(&root, "%s/fuzz-observe.XXXXXX", tmp && tmp[0] ? tmp : "/tmp") < 0 || !mkdtemp(root))
                abort();
        atexit(cleanup);
        for (size_t i = 0; i < ELEMENTS(base); i++) {
                if (base[i].content) {
                        put(base[i].path, base[i].content, strlen(base[i].content));
                        continue;
                }
                char *p = tree_path(base[i].path);

                mkdir_parents(p);
                if (symlink(base[i].target, p) < 0)
                        abort();
                free(p);
        }
        return 0;
}

/* Make slot i a file with content, missing, or a directory. */
static void set_slot(size_t i, unsigned state, const char *content, size_t len) {
        char *p;

        if (i == EXTRA_SLOT) {
                char name[sizeof(extra_bdi)], rel[sizeof(extra_bdi) + 64];
                size_t n = 0;

                if (extra_bdi[0]) {
                        snprintf(rel, sizeof(rel), "sys/class/bdi/%s", extra_bdi);
                        p = tree_path(rel);
                        rm_rf(p);
                        free(p);
                        extra_bdi[0] = 0;
                }
                for (size_t j = 0; j < len && n < sizeof(name) - 1; j++)
                        if (content[j] != '/')
                                name[n++] = content[j];
                name[n] = 0;
                if (state == 1 || n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        return;
                snprintf(rel, sizeof(rel), "sys/class/bdi/%s/max_ratio", name);
                put(rel, "100\n", 4);
                memcpy(extra_bdi, name, n + 1);
                return;
        }

        p = tree_path(slots[i].path);
        rm_rf(p);
        if (state == 2) {
                mkdir_parents(p);
                (void) mkdir(p, 0755);
        } else if (state != 1)
                put(slots[i].path, content, len);
        free(p);
}

static void check_device(const sample *s, const bdi_device *d) {
        uint64_t backlog;

        if (strnlen(d->bdi, sizeof(d->bdi)) == sizeof(d->bdi) || strnlen(d->name, sizeof(d->name)) == sizeof(d->name) ||
            strnlen(d->alias, sizeof(d->alias)) == sizeof(d->alias) ||
            strnlen(d->fstype, sizeof(d->fstype)) == sizeof(d->fstype) ||
            strnlen(d->model, sizeof(d->model)) == sizeof(d->model))
                fuzz_fail("%s: a string field is not terminated", d->bdi);
        if (!d->mounts || d->mounts[d->n_mounts] != NULL)
                fuzz_fail("%s: mounts is not a NULL-terminated list of n_mounts", d->bdi);
        for (size_t j = 0; j < d->n_mounts; j++)
                if (!d->mounts[j])
                        fuzz_fail("%s: mount %zu is NULL", d->bdi, j);
        if (!d->name[0])
                fuzz_fail("%s: no name", d->bdi);
        if (__builtin_add_overflow(d->dirty_bytes, d->writeback_bytes, &backlog))
                backlog = UINT64_MAX;
        if (d->backlog_bytes != backlog)
                fuzz_fail("%s: backlog %llu is not dirty + writeback", d->bdi, (unsigned long long) d->backlog_bytes);
        if (!isfinite(d->backlog_s) || d->backlog_s < 0)
                fuzz_fail("%s: backlog_s %f", d->bdi, d->backlog_s);
        if (d->source == STATS_SOURCE_NONE && (d->dirty_bytes || d->writeback_bytes || d->written_total_bytes))
                fuzz_fail("%s: figures without a source", d->bdi);
        if (!d->seen_before && (d->write_bw_bytes_per_s || d->dirty_rate_bytes_per_s))
                fuzz_fail("%s: rates on a first sight", d->bdi);
        if (sample_find_device(s, d->bdi) != d)
                fuzz_fail("%s: sample_find_device() finds another device", d->bdi);
}

static void check_sample(const sample *s) {
        json_object *o;
        sample c = {};

        if (s->n_devices > 0 && !s->devices)
                fuzz_fail("devices NULL with n_devices %zu", s->n_devices);
        for (size_t i = 0; i < s->n_devices; i++) {
                check_device(s, &s->devices[i]);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(s->devices[i].bdi, s->devices[j].bdi) == 0)
                                fuzz_fail("BDI %s twice", s->devices[i].bdi);
        }
        if (sample_copy(&c, s) < 0 || c.n_devices != s->n_devices)
                fuzz_fail("sample_copy() failed");
        sample_done(&c);
        o = report_sample(s);
        if (!o || !json_object_to_json_string(o))
                fuzz_fail("report_sample() failed");
        json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t states[8] = {};
        const char *chunk[2 * N_SLOTS] = {};
        size_t chunk_len[2 * N_SLOTS] = {}, n_chunks = 0;
        observe_ctx *ctx = NULL;
        sample s = {};

        memcpy(states, data, size < sizeof(states) ? size : sizeof(states));
        if (size > sizeof(states)) {
                const char *p = (const char *) data + sizeof(states), *end = (const char *) data + size;

                while (n_chunks < ELEMENTS(chunk) && p <= end) {
                        const char *nul = memchr(p, 0, (size_t) (end - p));

                        chunk[n_chunks] = p;
                        chunk_len[n_chunks++] = nul ? (size_t) (nul - p) : (size_t) (end - p);
                        if (!nul)
                                break;
                        p = nul + 1;
                }
        }

        if (observe_new(root, false, &ctx) < 0)
                abort();
        for (unsigned round = 0; round < 2; round++) {
                for (size_t i = 0; i < N_SLOTS; i++) {
                        size_t k = round * N_SLOTS + i;
                        unsigned bit = (unsigned) (round * N_SLOTS + i) * 2;
                        unsigned state = (states[bit / 8] >> (bit % 8)) & 3;

                        if (k < n_chunks)
                                set_slot(i, state, chunk[k], chunk_len[k]);
                        else if (round == 0)
                                set_slot(i, state, slots[i].content, strlen(slots[i].content));
                        else if (state == 1 || state == 2)
                                set_slot(i, state, NULL, 0);
                }
                int r = observe_sample_at(ctx, 1000000 + round * 1000000, &s);
                if (r > 0)
                        fuzz_fail("observe_sample_at() returned %d", r);
                if (r < 0) {
                        if (s.devices || s.n_devices)
                                fuzz_fail("a failed sample (%d) holds devices", r);
                        continue;
                }
                check_sample(&s);
                sample_done(&s);
        }
        observe_free(ctx);
        return 0;
}
