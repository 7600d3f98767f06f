/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Observation: one snapshot of global and per-BDI dirty/writeback state, read from a root prefix. */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ctl-common.h"
#include "devnames.h"
#include "escape.h"
#include "log.h"
#include "observe.h"
#include "util.h"

/* How often a BDI's knob files are read when nothing says they changed: they change only when someone
 * writes them, and reading the seven files of each of 1000 BDIs every tick was most of a tick's cost. */
#define KNOBS_REREAD_TICKS 4

/* Read points whose failure is reported once when it starts and once when it ends, not every tick. */
enum {
        GLOBAL_VMSTAT,
        GLOBAL_MEMINFO,
        GLOBAL_VM_KNOB_FIRST,                          /* one per vm knob file, in knob_file_nth() order */
        GLOBAL_CLASS_BDI = GLOBAL_VM_KNOB_FIRST + 8,   /* room for the knob table's vm files (6 today) */
        GLOBAL_MOUNTINFO,
        N_GLOBAL_POINTS,
};
enum {
        DEVICE_KNOBS,           /* the BDI's sysfs dir and its knob files: the first that failed */
        DEVICE_STATS,           /* debugfs bdi/<dev>/stats */
        DEVICE_WB_STATS,        /* debugfs bdi/<dev>/wb_stats */
        DEVICE_BLOCKSTAT,       /* /sys/dev/block/<devnum>/stat */
        N_DEVICE_POINTS,
};

/* What is carried from one sample of a BDI to the next. */
typedef struct prev_bdi {
        char bdi[64];
        stats_source source;
        uint64_t dirtied_total_bytes;
        uint64_t written_total_bytes;
        bdi_knobs knobs;                 /* as last read */
        uint64_t knobs_tick;             /* ctx->tick of that read */
        uint64_t knobs_read_usec;
        bool knobs_stale;                /* observe_knobs_changed() since: read them next tick */
        int errors[N_DEVICE_POINTS];     /* last failure of each read point, 0 if it read fine */
} prev_bdi;

struct observe_ctx {
        char *root;
        bool live;
        bool mount_debugfs;
        bool mount_tried;
        bool fallback_logged;
        uint64_t page_size;
        unsigned possible_cpus;         /* nr_cpu_ids, read on the first sample (0: not yet) */

        uint64_t tick;                  /* samples taken */
        bool have_prev;
        uint64_t prev_time_usec;
        uint64_t prev_dirtied_total_bytes;
        uint64_t prev_written_total_bytes;
        vm_knobs prev_vm_knobs;
        prev_bdi *prev;                 /* sorted like sample.devices */
        size_t n_prev;
        int global_errors[N_GLOBAL_POINTS];
        char **vanished;                /* BDIs listed but gone when read, last tick: told once */
        size_t n_vanished;
        disk_cache disks;               /* sysfs facts of block devices, across ticks */
        mount_table mounts;             /* mountinfo's mounts, parsed again only when they change */
        bool have_mounts;               /* mounts holds a complete read */
        uint64_t mounts_read_usec;      /* when it was parsed */
        int mountinfo_fd;               /* polled for mount changes; -1: read mountinfo every tick */
        /* during read_devices() only, else -1: the directories every BDI's files are opened relative to */
        int class_bdi_fd;               /* <root>/sys/class/bdi */
        int debugfs_bdi_fd;             /* <root>/sys/kernel/debug/bdi */
};

/* delta bytes over elapsed microseconds, in bytes per second, saturating. */
static uint64_t rate_per_s(uint64_t delta, uint64_t elapsed_usec) {
        unsigned __int128 r;

        if (elapsed_usec == 0)
                return 0;
        r = (unsigned __int128) delta * 1000000u / elapsed_usec;
        return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

/* "7:2" < "7:10" < "btrfs-1": digit runs compare by value. */
static int natural_cmp(const char *a, const char *b) {
        while (*a && *b) {
                if (isdigit((unsigned char) *a) && isdigit((unsigned char) *b)) {
                        const char *ea = a, *eb = b;
                        size_t la, lb;
                        int c;

                        while (*a == '0' && isdigit((unsigned char) a[1]))
                                a++;
                        while (*b == '0' && isdigit((unsigned char) b[1]))
                                b++;
                        for (ea = a; isdigit((unsigned char) *ea); ea++)
                                ;
                        for (eb = b; isdigit((unsigned char) *eb); eb++)
                                ;
                        la = ea - a;
                        lb = eb - b;
                        if (la != lb)
                                return la < lb ? -1 : 1;
                        c = strncmp(a, b, la);
                        if (c != 0)
                                return c;
                        a = ea;
                        b = eb;
                        continue;
                }
                if (*a != *b)
                        return (unsigned char) *a < (unsigned char) *b ? -1 : 1;
                a++;
                b++;
        }
        return *a ? 1 : *b ? -1 : 0;
}

static int bdi_name_cmp(const char *a, const char *b) {
        int c = natural_cmp(a, b);

        /* Leading zeros make "7:01" equal "7:1" above: fall back to bytes for a total order. */
        return c != 0 ? c : strcmp(a, b);
}

int observe_new(const char *root, bool mount_debugfs, observe_ctx **ret) {
        observe_ctx *ctx;
        long ps;

        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        ctx->root = xstrdup(root ? root : "");
        ctx->live = ctx->root[0] == '\0';
        ctx->mount_debugfs = mount_debugfs;
        ctx->class_bdi_fd = ctx->debugfs_bdi_fd = -1;
        /* opened before the first read, so that no change after it goes unseen */
        ctx->mountinfo_fd = mountinfo_watch_open(ctx->root);
        if (ctx->mountinfo_fd < 0) {
                log_full_errno(ctx->live ? LOG_INFO : LOG_DEBUG, ctx->mountinfo_fd,
                               "Not watching %s/proc/self/mountinfo for mount changes (%m): reading it every tick.",
                               ctx->root);
                ctx->mountinfo_fd = -1;
        }
        ps = sysconf(_SC_PAGESIZE);
        ctx->page_size = ps > 0 ? (uint64_t) ps : 4096;
        *ret = ctx;
        return 0;
}

void observe_set_mount_watch(observe_ctx *ctx, int fd) {
        if (ctx->mountinfo_fd >= 0)
                close(ctx->mountinfo_fd);
        ctx->mountinfo_fd = fd;
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

observe_ctx *observe_free(observe_ctx *ctx) {
        if (!ctx)
                return NULL;
        free(ctx->root);
        free(ctx->prev);
        free_names(ctx->vanished, ctx->n_vanished);
        disk_cache_done(&ctx->disks);
        mount_table_done(&ctx->mounts);
        if (ctx->mountinfo_fd >= 0)
                close(ctx->mountinfo_fd);
        free(ctx);
        return NULL;
}

static char *root_path(const observe_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *root_path(const observe_ctx *ctx, const char *fmt, ...) {
        _cleanup_free_ char *rel = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&rel, fmt, ap);
        va_end(ap);
        if (r < 0)
                return NULL;
        return path_join_root(ctx->root, rel);
}

/* Field table for parse_kv(): store a parsed number and mark it found. */
typedef struct kv_field {
        const char *key;
        uint64_t *value;
        bool found;
} kv_field;

typedef struct kv_fields {
        kv_field *fields;
        size_t n;
        bool malformed;
} kv_fields;

static int kv_fields_cb(const char *key, const char *value, void *userdata) {
        kv_fields *t = userdata;

        for (size_t i = 0; i < t->n; i++) {
                int r;

                if (strcmp(t->fields[i].key, key) != 0)
                        continue;
                r = parse_u64(value, t->fields[i].value);
                if (r == -ERANGE)
                        *t->fields[i].value = UINT64_MAX;
                else if (r < 0) {
                        t->malformed = true;
                        return 0;
                }
                t->fields[i].found = true;
                return 0;
        }
        return 0;
}

/* Fill fields from text; -ENODATA if one is missing or malformed. */
static int parse_kv_fields(char *buf, kv_field *fields, size_t n) {
        kv_fields t = { .fields = fields, .n = n };

        (void) parse_kv(buf, kv_fields_cb, &t);
        if (t.malformed)
                return -ENODATA;
        for (size_t i = 0; i < n; i++)
                if (!fields[i].found)
                        return -ENODATA;
        return 0;
}

/* Not worth an admin's attention: a file an older kernel does not have, a BDI debugfs never knew, a
 * device that went away. Anything else is, once. */
static bool read_failed(int r, bool enoent_ok) {
        return r < 0 && !(enoent_ok && (r == -ENOENT || r == -ENODEV));
}

/* Tell the result r of reading a file, whose failure last tick is *last (0: none): a warning when it
 * starts failing (or fails differently), a line when it reads again, debug in between; path_fmt is
 * only formatted when something is logged. consequence says what the failure means for the sample.
 * enoent_ok: the file may be missing (and the device may have gone). */
static void note_read(int *last, int r, bool enoent_ok, const char *consequence, const char *path_fmt, ...)
        __attribute__((format(printf, 5, 6)));
static void note_read(int *last, int r, bool enoent_ok, const char *consequence, const char *path_fmt, ...) {
        char path[PATH_MAX];
        va_list ap;

        if (!read_failed(r, enoent_ok)) {
                if (*last == 0)
                        return;                     /* the usual case: fine, and fine before */
                if (r < 0) {                        /* gone: nothing more to say about it */
                        *last = 0;
                        return;
                }
        } else if (*last == r && log_get_max_level() < LOG_DEBUG)
                return;

        va_start(ap, path_fmt);
        vsnprintf(path, sizeof(path), path_fmt, ap);
        va_end(ap);
        if (!read_failed(r, enoent_ok)) {
                log_info("%s reads again.", path);
                *last = 0;
        } else if (*last == r)
                log_debug_errno(r, "Still cannot read %s: %m", path);
        else {
                *last = r;
                if (r == -ENODATA || r == -EINVAL || r == -ERANGE)
                        log_warning_errno(r, "Malformed %s (%m): %s.", path, consequence);
                else
                        log_warning_errno(r, "Cannot read %s: %m; %s.", path, consequence);
        }
}

/* A global /proc file of "key value" lines: missing fields read as 0 (reported); an unreadable file fails. */
static int read_global_kv(observe_ctx *ctx, unsigned point, const char *file, kv_field *fields, size_t n) {
        _cleanup_free_ char *path = root_path(ctx, "%s", file), *buf = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_file_full(path, &buf, NULL);
        if (r >= 0)
                r = parse_kv_fields(buf, fields, n);
        note_read(&ctx->global_errors[point], r, false,
                  r == -ENODATA ? "using 0 for the fields it lacks" : "no sample until it reads again", "%s", path);
        if (r < 0 && r != -ENODATA)
                return r;
        return 0;
}

static int read_vmstat(observe_ctx *ctx, global_state *g) {
        uint64_t dirty = 0, writeback = 0, thresh = 0, bg_thresh = 0, dirtied = 0, written = 0;
        kv_field f[] = {
                { "nr_dirty", &dirty, false },
                { "nr_writeback", &writeback, false },
                { "nr_dirty_threshold", &thresh, false },
                { "nr_dirty_background_threshold", &bg_thresh, false },
                { "nr_dirtied", &dirtied, false },
                { "nr_written", &written, false },
        };
        int r;

        r = read_global_kv(ctx, GLOBAL_VMSTAT, "/proc/vmstat", f, ELEMENTSOF(f));
        if (r < 0)
                return r;

        g->dirty_bytes = mul_sat(dirty, ctx->page_size);
        g->writeback_bytes = mul_sat(writeback, ctx->page_size);
        g->dirty_thresh_bytes = mul_sat(thresh, ctx->page_size);
        g->background_thresh_bytes = mul_sat(bg_thresh, ctx->page_size);
        g->dirtied_total_bytes = mul_sat(dirtied, ctx->page_size);
        g->written_total_bytes = mul_sat(written, ctx->page_size);
        return 0;
}

static int read_meminfo(observe_ctx *ctx, global_state *g) {
        uint64_t total_kb = 0, available_kb = 0;
        kv_field f[] = {
                { "MemTotal", &total_kb, false },
                { "MemAvailable", &available_kb, false },
        };
        int r;

        r = read_global_kv(ctx, GLOBAL_MEMINFO, "/proc/meminfo", f, ELEMENTSOF(f));
        if (r < 0)
                return r;

        g->mem_total_bytes = mul_sat(total_kb, 1024);
        g->mem_available_bytes = mul_sat(available_kb, 1024);
        return 0;
}

uint64_t bdi_device_noise_floor(const bdi_device *d) {
        return MAX(1024ULL * 1024ULL, d->counter_error_bytes);
}

uint64_t bdi_device_batch_slack(const bdi_device *d) {
        return MAX(BDI_BATCH_BYTES, 2 * d->counter_error_bytes);
}

/* nr_cpu_ids from <root>/sys/devices/system/cpu/possible ("0-63"), once: it does not change while the
 * system runs. Unreadable: the CPUs configured (live) or one (a fake tree), and said so. */
static unsigned read_possible_cpus(observe_ctx *ctx) {
        _cleanup_free_ char *path = NULL;
        char buf[256];
        unsigned n = 0;
        int r;

        if (ctx->possible_cpus)
                return ctx->possible_cpus;
        path = root_path(ctx, "/sys/devices/system/cpu/possible");
        if (!path)
                return 1;  /* not remembered: tried again next tick */
        r = read_one_line(path, buf, sizeof(buf));
        if (r >= 0)
                r = ctl_parse_possible_cpus(buf, &n);
        if (r < 0) {
                long conf = ctx->live ? sysconf(_SC_NPROCESSORS_CONF) : 1;

                n = conf > 0 ? (unsigned) conf : 1;
                log_warning_errno(r, "Cannot read %s: %m; taking %u CPU(s) for the per-CPU error of the "
                                  "per-device counters.", path, n);
        }
        ctx->possible_cpus = n;
        return n;
}

static int read_vm_knob(observe_ctx *ctx, const char *name, int *error, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        path = root_path(ctx, "/proc/sys/vm/%s", name);
        if (!path)
                return -ENOMEM;
        r = read_u64_file(path, ret);
        note_read(error, r, false, "no sample until it reads again", "%s", path);
        return r;
}

/* Every vm knob file of the knob table (dirty_bytes, dirty_ratio, ...). */
static int read_vm_knobs(observe_ctx *ctx, vm_knobs *k) {
        knob_id knob;
        knob_form form;
        int r;

        *k = (vm_knobs) {};
        for (size_t n = 0; knob_file_nth(false, n, &knob, &form); n++) {
                uint64_t v;

                r = read_vm_knob(ctx, knob_form_file(knob, form), &ctx->global_errors[GLOBAL_VM_KNOB_FIRST + n], &v);
                if (r < 0)
                        return r;
                k->k[knob].has |= 1u << form;
                k->k[knob].value[form] = v;
        }
        return 0;
}

/* Every knob file of a BDI the knob table names; files that exist set their has bit. -ENODEV if the
 * BDI went away meanwhile; any other failure leaves that file out (nothing will write it) and is
 * reported once. only_bytes: read just the *_bytes files again and keep the rest of *k. */
static int read_bdi_knobs(observe_ctx *ctx, const char *bdi, bool only_bytes, bdi_knobs *k, int *error) {
        static const char consequence[] = "nothing will be written to a knob that does not read";
        _cleanup_close_ int dirfd = -1;
        bool any_gone = false;
        const char *failed_file = NULL;
        int failure = 0;
        knob_id knob;
        knob_form form;

        if (only_bytes) {
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        if (knob_table[KNOB_DEVICE_FIRST + j].kind == KNOB_KIND_OF_LIMIT) {
                                k->k[j].has &= ~(1u << KNOB_FORM_SELF);
                                k->k[j].value[KNOB_FORM_SELF] = 0;
                        }
        } else
                *k = (bdi_knobs) {};
        /* one lookup of the directory (relative to the tick's /sys/class/bdi fd), then each knob in it */
        dirfd = openat(ctx->class_bdi_fd, bdi, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                if (errno == ENOENT)
                        return -ENODEV;
                note_read(error, -errno, true, consequence, "%s/sys/class/bdi/%s", ctx->root, bdi);
                return 0;
        }
        for (size_t n = 0; knob_file_nth(true, n, &knob, &form); n++) {
                knob_reading *kr = &k->k[knob - KNOB_DEVICE_FIRST];
                uint64_t v;
                int r;

                /* the bytes drift with the global limit; the ratios only change when written */
                if (only_bytes && !(form == KNOB_FORM_SELF && knob_table[knob].kind == KNOB_KIND_OF_LIMIT))
                        continue;
                r = read_u64_file_at(dirfd, knob_form_file(knob, form), &v);
                if (r < 0) {
                        if (r == -ENODEV)
                                return r;
                        if (r == -ENOENT)
                                any_gone = true;
                        else if (!failure) {
                                failure = r;
                                failed_file = knob_form_file(knob, form);
                        }
                        continue;
                }
                kr->has |= 1u << form;
                kr->value[form] = v;
        }

        /* A missing knob file is an older kernel, unless the whole BDI is gone. */
        if (any_gone && faccessat(ctx->class_bdi_fd, bdi, F_OK, 0) < 0)
                return -ENODEV;
        note_read(error, failure, true, consequence, "%s/sys/class/bdi/%s/%s", ctx->root, bdi,
                  failed_file ? failed_file : "*");
        return 0;
}

/* <root>/sys/kernel/debug/bdi/<bdi>/<file>, opened relative to the tick's debugfs fd when there is one. */
static int read_debugfs_file(observe_ctx *ctx, const char *bdi, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL;

        if (ctx->debugfs_bdi_fd >= 0) {
                if (asprintf(&path, "%s/%s", bdi, file) < 0)
                        return -ENOMEM;
                return read_file_full_at(ctx->debugfs_bdi_fd, path, ret, NULL);
        }
        path = root_path(ctx, "/sys/kernel/debug/bdi/%s/%s", bdi, file);
        if (!path)
                return -ENOMEM;
        return read_file_full(path, ret, NULL);
}

static int read_debugfs_stats(observe_ctx *ctx, bdi_device *d) {
        _cleanup_free_ char *buf = NULL;
        uint64_t writeback_kb, reclaimable_kb, thresh_kb, dirtied_kb, written_kb, bw_kbps;
        kv_field f[] = {
                { "BdiWriteback", &writeback_kb, false },
                { "BdiReclaimable", &reclaimable_kb, false },
                { "BdiDirtyThresh", &thresh_kb, false },
                { "BdiDirtied", &dirtied_kb, false },
                { "BdiWritten", &written_kb, false },
                { "BdiWriteBandwidth", &bw_kbps, false },
        };
        int r;

        r = read_debugfs_file(ctx, d->bdi, "stats", &buf);
        if (r >= 0)
                r = parse_kv_fields(buf, f, ELEMENTSOF(f));
        if (r < 0)
                return r;

        d->writeback_bytes = mul_sat(writeback_kb, 1024);
        d->dirty_bytes = mul_sat(reclaimable_kb, 1024);
        d->thresh_bytes = mul_sat(thresh_kb, 1024);
        d->dirtied_total_bytes = mul_sat(dirtied_kb, 1024);
        d->written_total_bytes = mul_sat(written_kb, 1024);
        d->kernel_bw_bytes_per_s = mul_sat(bw_kbps, 1024);
        return 0;
}

/* wb_stats (6.10+) holds one block per writeback context: each cgroup writing to the device has its
 * own wb (WbCgIno 1 is the root cgroup's), with its own counters and WbWriteBandwidth. */
typedef struct wb_block {
        uint64_t ino;                   /* WbCgIno */
        uint64_t held_bytes;            /* WbReclaimable + WbWriteback: what it holds now */
        uint64_t bw_bytes_per_s;        /* WbWriteBandwidth */
} wb_block;

/* Which wbs' bandwidth is the device's, fed one block at a time. */
typedef struct wb_pick {
        unsigned n_blocks;
        uint64_t first_bw, root_bw;
        bool have_root;
        uint64_t writing_bw;            /* summed over the wbs writing that have measured a bandwidth */
        unsigned n_writing;
        uint64_t most_held_bytes;       /* the wb holding most, if one holds anything */
        uint64_t most_held_bw;
} wb_pick;

static void wb_pick_add(wb_pick *p, const wb_block *b) {
        if (p->n_blocks++ == 0)
                p->first_bw = b->bw_bytes_per_s;
        if (b->ino == 1 && !p->have_root) {
                p->have_root = true;
                p->root_bw = b->bw_bytes_per_s;
        }
        if (b->held_bytes >= MEMCG_WRITING_BYTES && b->bw_bytes_per_s != KERNEL_BW_INITIAL) {
                p->writing_bw = add_sat(p->writing_bw, b->bw_bytes_per_s);
                p->n_writing++;
        }
        if (b->held_bytes > p->most_held_bytes) {
                p->most_held_bytes = b->held_bytes;
                p->most_held_bw = b->bw_bytes_per_s;
        }
}

/* The wbs writing (holding MEMCG_WRITING_BYTES or more) each move their own share of the device, so
 * their bandwidth summed is its speed; one still at INIT_BW has measured nothing and adds nothing (the
 * kernel's BdiWriteBandwidth sums every wb with dirty inodes, those included). Without such a wb, the
 * one holding most pages; when none holds any, the root wb's (else the first listed). */
static uint64_t wb_pick_bw(const wb_pick *p) {
        if (p->n_writing > 0)
                return p->writing_bw;
        if (p->most_held_bytes > 0)
                return p->most_held_bw;
        return p->have_root ? p->root_bw : p->first_bw;
}

enum {
        WB_KEY_INO,
        WB_KEY_WRITEBACK,
        WB_KEY_RECLAIMABLE,
        WB_KEY_BANDWIDTH,
        N_WB_KEYS,
};
static const char *const wb_keys[N_WB_KEYS] = {
        [WB_KEY_INO] = "WbCgIno",
        [WB_KEY_WRITEBACK] = "WbWriteback",
        [WB_KEY_RECLAIMABLE] = "WbReclaimable",
        [WB_KEY_BANDWIDTH] = "WbWriteBandwidth",
};

typedef struct wb_scan {
        wb_pick pick;
        uint64_t v[N_WB_KEYS];          /* the current block's figures (kB, kBps; the inode number) */
        unsigned have;                  /* bit per key: read in the current block */
        int error;                      /* the first problem, 0 if none */
        char why[128];                  /* what it was, escaped, for the warning */
} wb_scan;

static void wb_scan_fail(wb_scan *s, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void wb_scan_fail(wb_scan *s, int r, const char *fmt, ...) {
        va_list ap;

        if (s->error)
                return;
        s->error = r;
        va_start(ap, fmt);
        vsnprintf(s->why, sizeof s->why, fmt, ap);
        va_end(ap);
}

/* The block read so far, into the pick: all four figures or an error. */
static void wb_scan_end_block(wb_scan *s) {
        if (!(s->have & (1u << WB_KEY_INO)) || s->error)
                return;
        for (unsigned k = 0; k < N_WB_KEYS; k++)
                if (!(s->have & (1u << k))) {
                        wb_scan_fail(s, -ENODATA, "no %s in the block of WbCgIno %" PRIu64, wb_keys[k], s->v[WB_KEY_INO]);
                        return;
                }
        wb_pick_add(&s->pick, &(wb_block) {
                .ino = s->v[WB_KEY_INO],
                .held_bytes = mul_sat(add_sat(s->v[WB_KEY_WRITEBACK], s->v[WB_KEY_RECLAIMABLE]), 1024),
                .bw_bytes_per_s = s->v[WB_KEY_BANDWIDTH] * 1024,
        });
}

static int wb_scan_cb(const char *key, const char *value, void *userdata) {
        wb_scan *s = userdata;
        char text[48];
        uint64_t v;
        unsigned k;
        int r;

        for (k = 0; k < N_WB_KEYS && strcmp(key, wb_keys[k]) != 0; k++)
                ;
        if (k == N_WB_KEYS || s->error)
                return 0;
        if (k == WB_KEY_INO) {
                wb_scan_end_block(s);
                s->have = 0;
        } else if (!(s->have & (1u << WB_KEY_INO))) {
                wb_scan_fail(s, -ENODATA, "%s before the first WbCgIno", key);
                return 0;
        }
        r = parse_u64(value, &v);
        /* a kB figure is kept in bytes: one past 2^54 kB is no real count either */
        if (r >= 0 && k != WB_KEY_INO && v > UINT64_MAX / 1024)
                r = -ERANGE;
        if (r < 0) {
                escape_text(value, text, sizeof text);
                if (s->have & (1u << WB_KEY_INO))
                        wb_scan_fail(s, r, "%s \"%s\" in the block of WbCgIno %" PRIu64 ": %s", key, text,
                                     s->v[WB_KEY_INO], r == -ERANGE ? "too large" : "not a number");
                else
                        wb_scan_fail(s, r, "%s \"%s\": %s", key, text, r == -ERANGE ? "too large" : "not a number");
                return 0;
        }
        s->v[k] = v;
        s->have |= 1u << k;
        return 0;
}

/* d->writing_wbs_bw_bytes_per_s from wb_stats; left as it is (0) when the file does not read or parse,
 * with why (escaped) saying what did not, "" otherwise. */
static int read_debugfs_wb_stats(observe_ctx *ctx, bdi_device *d, char *why, size_t why_size) {
        _cleanup_free_ char *buf = NULL;
        wb_scan s = {};
        int r;

        why[0] = '\0';
        r = read_debugfs_file(ctx, d->bdi, "wb_stats", &buf);
        if (r < 0)
                return r;
        (void) parse_kv(buf, wb_scan_cb, &s);
        wb_scan_end_block(&s);
        if (!s.error && s.pick.n_blocks == 0)
                wb_scan_fail(&s, -ENODATA, "no WbCgIno block");
        if (s.error) {
                snprintf(why, why_size, "%s", s.why);
                return s.error;
        }
        d->writing_wbs_bw_bytes_per_s = wb_pick_bw(&s.pick);
        return 0;
}

/* /sys/block/<dev>/stat field 7 is sectors written, in 512-byte units whatever the device. */
static int read_blockstat(observe_ctx *ctx, bdi_device *d) {
        _cleanup_free_ char *path = NULL;
        char buf[512], *p = buf, *end;
        uint64_t sectors = 0;

        if (!d->has_devnum)
                return -ENODEV;
        path = root_path(ctx, "/sys/dev/block/%u:%u/stat", d->major, d->minor);
        if (!path)
                return -ENOMEM;
        int r = read_one_line(path, buf, sizeof(buf));
        if (r < 0)
                return r;

        for (int i = 0; i < 7; i++) {
                while (isspace((unsigned char) *p))
                        p++;
                if (!isdigit((unsigned char) *p))
                        return -ENODATA;
                errno = 0;
                sectors = strtoull(p, &end, 10);
                if (errno == ERANGE)
                        sectors = UINT64_MAX;
                p = end;
        }
        d->written_total_bytes = mul_sat(sectors, 512);
        return 0;
}

/* The figures of d; results[] gets each stats read point's result, NOT_READ for those not tried, and
 * wb_why what was wrong with wb_stats ("" if nothing). */
#define NOT_READ INT_MIN
static void read_device_stats(observe_ctx *ctx, bool debugfs, bdi_device *d, int *results, char *wb_why,
                              size_t wb_why_size) {
        int r;

        for (unsigned i = 0; i < N_DEVICE_POINTS; i++)
                results[i] = NOT_READ;
        if (debugfs) {
                r = results[DEVICE_STATS] = read_debugfs_stats(ctx, d);
                if (r >= 0) {
                        d->source = STATS_SOURCE_DEBUGFS;
                        d->counter_error_bytes = counter_error_bytes(read_possible_cpus(ctx), ctx->page_size);
                        results[DEVICE_WB_STATS] = read_debugfs_wb_stats(ctx, d, wb_why, wb_why_size);
                        return;
                }
                d->dirty_bytes = d->writeback_bytes = d->thresh_bytes = 0;
                d->dirtied_total_bytes = d->written_total_bytes = d->kernel_bw_bytes_per_s = 0;
                /* Malformed figures are not to be trusted; a missing dir may be a BDI debugfs never knew. */
                if (r != -ENOENT) {
                        d->source = STATS_SOURCE_NONE;
                        return;
                }
        }

        r = results[DEVICE_BLOCKSTAT] = read_blockstat(ctx, d);
        if (r < 0) {
                d->written_total_bytes = 0;
                d->source = STATS_SOURCE_NONE;
                return;
        }
        d->source = STATS_SOURCE_BLOCKSTAT;
}

/* Report the stats reads of a device that is in the sample (a device that went meanwhile has nothing to tell). */
static void note_device_stats(observe_ctx *ctx, const bdi_device *d, const int *results, const char *wb_why,
                              int *errors) {
        static const char consequence[] = "no per-device figures for it until it reads again";

        if (results[DEVICE_STATS] != NOT_READ)
                note_read(&errors[DEVICE_STATS], results[DEVICE_STATS], true, consequence,
                          "%s/sys/kernel/debug/bdi/%s/stats", ctx->root, d->bdi);
        if (results[DEVICE_WB_STATS] != NOT_READ)
                note_read(&errors[DEVICE_WB_STATS], results[DEVICE_WB_STATS], true,
                          "no WbWriteBandwidth for it until it reads again",
                          "%s/sys/kernel/debug/bdi/%s/wb_stats%s%s%s", ctx->root, d->bdi,
                          wb_why[0] ? " (" : "", wb_why, wb_why[0] ? ")" : "");
        if (results[DEVICE_BLOCKSTAT] != NOT_READ)
                note_read(&errors[DEVICE_BLOCKSTAT], results[DEVICE_BLOCKSTAT], true, consequence,
                          "%s/sys/dev/block/%u:%u/stat", ctx->root, d->major, d->minor);
}

static void bdi_device_done(bdi_device *d) {
        for (size_t i = 0; i < d->n_mounts; i++)
                free(d->mounts[i]);
        free(d->mounts);
        d->mounts = NULL;
        d->n_mounts = 0;
}

/* Which knob files to read this tick. */
typedef enum knobs_read {
        KNOBS_CARRY,            /* none: carry the last values */
        KNOBS_BYTES,            /* the *_bytes files: views of the ratios through the global limit */
        KNOBS_ALL,
} knobs_read;

/* All of them on a device's first sample, every KNOBS_REREAD_TICKS ticks (a change by hand shows
 * within that), after observe_knobs_changed(), and when the device was replaced (its counters went back
 * or its figures' source changed: a detached and reattached loop device); only the *_bytes files when a
 * vm knob changed (the kernel keeps ratios, and a new global limit changes what their bytes read). */
static knobs_read knobs_due(const observe_ctx *ctx, const prev_bdi *p, const bdi_device *d, bool vm_knobs_changed) {
        if (!p || p->knobs_stale || ctx->tick - p->knobs_tick >= KNOBS_REREAD_TICKS ||
            p->source != d->source ||
            d->written_total_bytes < p->written_total_bytes ||
            d->dirtied_total_bytes < p->dirtied_total_bytes)
                return KNOBS_ALL;
        return vm_knobs_changed ? KNOBS_BYTES : KNOBS_CARRY;
}

/* Spread the devices' re-reads over the ticks: a device's first read counts as made up to
 * KNOBS_REREAD_TICKS - 1 ticks earlier, by its name. */
static uint64_t knobs_phase(const char *bdi) {
        unsigned h = 0;

        for (const char *c = bdi; *c; c++)
                h = h * 31 + (unsigned char) *c;
        return h % KNOBS_REREAD_TICKS;
}

static void derive_device(uint64_t elapsed_usec, const prev_bdi *p, bdi_device *d) {
        uint64_t best_bw;

        d->backlog_bytes = add_sat(d->dirty_bytes, d->writeback_bytes);
        if (p && p->source == d->source && d->source != STATS_SOURCE_NONE && elapsed_usec > 0 &&
            d->written_total_bytes >= p->written_total_bytes &&
            d->dirtied_total_bytes >= p->dirtied_total_bytes) {
                d->write_bw_bytes_per_s = rate_per_s(d->written_total_bytes - p->written_total_bytes, elapsed_usec);
                d->dirty_rate_bytes_per_s = rate_per_s(d->dirtied_total_bytes - p->dirtied_total_bytes, elapsed_usec);
                d->seen_before = true;
        }

        best_bw = bdi_device_best_bw(d);
        d->backlog_s = best_bw > 0 ? (double) d->backlog_bytes / (double) best_bw : 0.0;
}

/* One BDI, p its previous sample (NULL if new), into d and what to carry to the next tick into next.
 * 0, or -ENODEV if the BDI vanished while reading it, or -ENOMEM. */
static int read_device(observe_ctx *ctx, const mount_table *mounts, const sample *s, uint64_t elapsed_usec,
                       bool vm_knobs_changed, const char *bdi, const prev_bdi *p, bdi_device *d, prev_bdi *next) {
        int results[N_DEVICE_POINTS];
        char wb_why[128] = "";
        unsigned major, minor;
        char tail;
        int r;

        *d = (bdi_device) {};
        *next = (prev_bdi) {};
        if (p)
                memcpy(next->errors, p->errors, sizeof(next->errors));
        snprintf(d->bdi, sizeof(d->bdi), "%s", bdi);
        if (sscanf(bdi, "%u:%u%c", &major, &minor, &tail) == 2) {
                d->major = major;
                d->minor = minor;
                d->has_devnum = true;
        }

        read_device_stats(ctx, s->debugfs, d, results, wb_why, sizeof wb_why);
        switch (knobs_due(ctx, p, d, vm_knobs_changed)) {
        case KNOBS_ALL:
                r = read_bdi_knobs(ctx, bdi, false, &d->knobs, &next->errors[DEVICE_KNOBS]);
                if (r < 0)
                        return r;
                d->knobs_read_usec = s->time_usec;
                next->knobs_tick = p ? ctx->tick : ctx->tick - knobs_phase(bdi);
                break;
        case KNOBS_BYTES:
                d->knobs = p->knobs;
                r = read_bdi_knobs(ctx, bdi, true, &d->knobs, &next->errors[DEVICE_KNOBS]);
                if (r < 0)
                        return r;
                d->knobs_read_usec = p->knobs_read_usec;
                next->knobs_tick = p->knobs_tick;
                break;
        case KNOBS_CARRY:
                d->knobs = p->knobs;
                d->knobs_read_usec = p->knobs_read_usec;
                next->knobs_tick = p->knobs_tick;
                break;
        }
        note_device_stats(ctx, d, results, wb_why, next->errors);
        r = devnames_describe(ctx->root, mounts, &ctx->disks, d);
        if (r < 0) {
                bdi_device_done(d);
                return r;
        }
        derive_device(elapsed_usec, p, d);

        memcpy(next->bdi, d->bdi, sizeof(next->bdi));
        next->source = d->source;
        next->dirtied_total_bytes = d->dirtied_total_bytes;
        next->written_total_bytes = d->written_total_bytes;
        next->knobs = d->knobs;
        next->knobs_read_usec = d->knobs_read_usec;
        return 0;
}

static bool debugfs_available(observe_ctx *ctx) {
        _cleanup_free_ char *path = NULL;

        path = root_path(ctx, "/sys/kernel/debug/bdi");
        if (!path)
                return false;
        if (access(path, F_OK) >= 0)
                return true;

        if (ctx->live && ctx->mount_debugfs && !ctx->mount_tried) {
                ctx->mount_tried = true;
                if (mount("none", "/sys/kernel/debug", "debugfs", 0, NULL) >= 0) {
                        log_info("Mounted debugfs on /sys/kernel/debug for per-device writeback stats");
                        if (access(path, F_OK) >= 0)
                                return true;
                } else if (errno == EPERM || errno == EACCES)
                        /* under the shipped unit or in a container: sys-kernel-debug.mount's job, not ours */
                        log_notice("debugfs is not mounted and this process may not mount it (%s).", strerror(errno));
                else
                        log_warning_errno(errno, "Failed to mount debugfs on /sys/kernel/debug: %m");
        }
        if (!ctx->fallback_logged) {
                ctx->fallback_logged = true;
                log_info("No %s, per-device figures come from block stat sector counts only", path);
        }
        return false;
}

static int prev_cmp(const void *bdi, const void *elem) {
        return bdi_name_cmp(bdi, ((const prev_bdi *) elem)->bdi);
}

static prev_bdi *find_prev(const observe_ctx *ctx, const char *bdi) {
        bool found;
        size_t i = search_sorted(ctx->prev, ctx->n_prev, sizeof(*ctx->prev), bdi, prev_cmp, &found);

        return found ? &ctx->prev[i] : NULL;
}

void observe_knobs_changed(observe_ctx *ctx, const char *bdi) {
        prev_bdi *p;

        if (!bdi) {
                for (size_t i = 0; i < ctx->n_prev; i++)
                        ctx->prev[i].knobs_stale = true;
                return;
        }
        p = find_prev(ctx, bdi);
        if (p)
                p->knobs_stale = true;
}

static void derive_global(const observe_ctx *ctx, uint64_t elapsed_usec, global_state *g) {
        if (!ctx->have_prev || elapsed_usec == 0 ||
            g->dirtied_total_bytes < ctx->prev_dirtied_total_bytes ||
            g->written_total_bytes < ctx->prev_written_total_bytes)
                return;
        g->dirty_rate_bytes_per_s = rate_per_s(g->dirtied_total_bytes - ctx->prev_dirtied_total_bytes, elapsed_usec);
        g->write_rate_bytes_per_s = rate_per_s(g->written_total_bytes - ctx->prev_written_total_bytes, elapsed_usec);
}

static int cmp_name_ptr(const void *a, const void *b) {
        return bdi_name_cmp(*(char *const *) a, *(char *const *) b);
}

/* The BDI names under <root>/sys/class/bdi, in sample order. */
static int list_bdis(DIR *dir, char ***ret, size_t *ret_n) {
        char **names = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;

        while ((de = readdir(dir))) {
                if (de->d_name[0] == '.')
                        continue;
                if (strlen(de->d_name) >= sizeof(((bdi_device *) NULL)->bdi)) {
                        log_debug("Ignoring BDI with overlong name %s", de->d_name);
                        continue;
                }
                if (n == allocated) {
                        size_t grow = MAX(allocated * 2, 64);
                        char **v = reallocarray(names, grow, sizeof(char *));

                        if (!v) {
                                free_names(names, n);
                                return -ENOMEM;
                        }
                        names = v;
                        allocated = grow;
                }
                names[n++] = xstrdup(de->d_name);
        }
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_name_ptr);
        *ret = names;
        *ret_n = n;
        return 0;
}

/* Whether the mount table must be parsed again: never read well, no poll to tell (a fake tree's file),
 * a mount or unmount told, or MOUNTS_MAX_AGE_USEC old. */
static bool mountinfo_changed(observe_ctx *ctx, uint64_t now_usec) {
        if (!ctx->have_mounts || ctx->mountinfo_fd < 0)
                return true;
        /* each event is told once, at the first tick after it */
        if (mountinfo_watch_changed(ctx->mountinfo_fd))
                return true;
        return now_usec < ctx->mounts_read_usec || now_usec >= ctx->mounts_read_usec + MOUNTS_MAX_AGE_USEC;
}

/* Read every BDI into s->devices and what to carry to the next tick into *ret_next (sorted alike).
 * -ENOTDIR if <root>/sys/class/bdi could not be listed (reported): no devices, nothing to carry. */
static int read_devices_in(observe_ctx *ctx, sample *s, uint64_t elapsed_usec, bool vm_knobs_changed,
                           prev_bdi **ret_next) {
        _cleanup_free_ char *dir_path = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ prev_bdi *next = NULL;
        char **names = NULL, **vanished = NULL;
        size_t n_names = 0, n_vanished = 0, j = 0;
        int r;

        dir_path = root_path(ctx, "/sys/class/bdi");
        if (!dir_path)
                return -ENOMEM;
        dir = opendir(dir_path);
        note_read(&ctx->global_errors[GLOBAL_CLASS_BDI], dir ? 0 : -errno, false, "the sample has no devices", "%s",
                  dir_path);
        if (!dir)
                return -ENOTDIR;        /* told; the caller keeps what it carries */
        ctx->class_bdi_fd = dirfd(dir);
        r = list_bdis(dir, &names, &n_names);
        if (r < 0)
                return r;
        if (n_names > 0) {
                s->devices = calloc(n_names, sizeof(bdi_device));
                next = calloc(n_names, sizeof(prev_bdi));
                vanished = calloc(n_names, sizeof(char *));
                if (!s->devices || !next || !vanished) {
                        free(vanished);
                        free_names(names, n_names);
                        return -ENOMEM;
                }
        }

        disk_cache_begin(&ctx->disks, s->time_usec);
        /* a container host has thousands of mounts: parse them only when they changed (the poll comes
         * first: one made during the read is told next tick) */
        if (mountinfo_changed(ctx, s->time_usec)) {
                mount_table_done(&ctx->mounts);
                r = mount_table_read(ctx->root, &ctx->disks, &ctx->mounts);
                note_read(&ctx->global_errors[GLOBAL_MOUNTINFO], r == -ENOMEM ? 0 : r, false,
                          "devices have no mounts", "%s/proc/self/mountinfo", ctx->root);
                ctx->have_mounts = r >= 0;
                ctx->mounts_read_usec = s->time_usec;
        } else
                r = mount_table_refresh_btrfs(ctx->root, &ctx->mounts);
        if (r == -ENOMEM)
                goto finish;

        r = 0;
        for (size_t i = 0; i < n_names; i++) {
                const prev_bdi *p = NULL;

                /* both lists are in sample order: walk the previous one along */
                while (ctx->have_prev && j < ctx->n_prev && bdi_name_cmp(ctx->prev[j].bdi, names[i]) < 0)
                        j++;
                if (ctx->have_prev && j < ctx->n_prev && strcmp(ctx->prev[j].bdi, names[i]) == 0)
                        p = &ctx->prev[j];
                r = read_device(ctx, &ctx->mounts, s, elapsed_usec, vm_knobs_changed, names[i], p,
                                &s->devices[s->n_devices], &next[s->n_devices]);
                if (r == -ENODEV) {
                        bool told = false;

                        for (size_t k = 0; k < ctx->n_vanished && !told; k++)
                                told = strcmp(ctx->vanished[k], names[i]) == 0;
                        log_full_errno(told ? LOG_DEBUG : LOG_INFO, 0,
                                       "%s/sys/class/bdi/%s went away while it was read; it is not in this sample.",
                                       ctx->root, names[i]);
                        vanished[n_vanished++] = TAKE_PTR(names[i]);
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                s->n_devices++;
        }
        if (r >= 0)
                devnames_stack(s->devices, s->n_devices);
finish:
        disk_cache_end(&ctx->disks);
        free_names(names, n_names);
        if (r < 0) {
                free_names(vanished, n_vanished);
                return r;
        }
        free_names(ctx->vanished, ctx->n_vanished);
        ctx->vanished = vanished;
        ctx->n_vanished = n_vanished;
        *ret_next = TAKE_PTR(next);
        return 0;
}

/* Every BDI's files are opened relative to two directory fds held for the tick: with 1000 BDIs the
 * path walks from / were most of the tick's cost. */
static int read_devices(observe_ctx *ctx, sample *s, uint64_t elapsed_usec, bool vm_knobs_changed,
                        prev_bdi **ret_next) {
        int r;

        if (s->debugfs) {
                _cleanup_free_ char *p = root_path(ctx, "/sys/kernel/debug/bdi");

                ctx->debugfs_bdi_fd = p ? open(p, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        }
        r = read_devices_in(ctx, s, elapsed_usec, vm_knobs_changed, ret_next);
        ctx->class_bdi_fd = -1;            /* was the DIR's fd, closed with it */
        if (ctx->debugfs_bdi_fd >= 0)
                close(ctx->debugfs_bdi_fd);
        ctx->debugfs_bdi_fd = -1;
        return r;
}

static bool vm_knobs_equal(const vm_knobs *a, const vm_knobs *b) {
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                if (a->k[k].has != b->k[k].has ||
                    memcmp(a->k[k].value, b->k[k].value, sizeof a->k[k].value) != 0)
                        return false;
        return true;
}

int observe_sample_at(observe_ctx *ctx, uint64_t time_usec, sample *ret) {
        sample s = { .time_usec = time_usec };
        prev_bdi *next = NULL;
        uint64_t elapsed_usec;
        bool vm_knobs_changed;
        int r;

        r = read_vmstat(ctx, &s.global);
        if (r < 0)
                return r;
        r = read_meminfo(ctx, &s.global);
        if (r < 0)
                return r;
        r = read_vm_knobs(ctx, &s.global.knobs);
        if (r < 0)
                return r;
        s.global.possible_cpus = read_possible_cpus(ctx);
        s.global.counter_error_bytes = counter_error_bytes(s.global.possible_cpus, ctx->page_size);

        elapsed_usec = ctx->have_prev && time_usec > ctx->prev_time_usec ? time_usec - ctx->prev_time_usec : 0;
        vm_knobs_changed = !ctx->have_prev || !vm_knobs_equal(&ctx->prev_vm_knobs, &s.global.knobs);
        s.debugfs = debugfs_available(ctx);
        r = read_devices(ctx, &s, elapsed_usec, vm_knobs_changed, &next);
        if (r < 0 && r != -ENOTDIR) {
                sample_done(&s);
                return log_error_errno(r, "Failed to read BDIs: %m");
        }
        derive_global(ctx, elapsed_usec, &s.global);

        /* /sys/class/bdi did not list: a sample without devices, but the devices did not go away */
        if (r != -ENOTDIR) {
                free(ctx->prev);
                ctx->prev = next;
                ctx->n_prev = s.n_devices;
        }
        ctx->have_prev = true;
        ctx->tick++;
        ctx->prev_time_usec = s.time_usec;
        ctx->prev_dirtied_total_bytes = s.global.dirtied_total_bytes;
        ctx->prev_written_total_bytes = s.global.written_total_bytes;
        ctx->prev_vm_knobs = s.global.knobs;
        *ret = s;
        return 0;
}

int observe_sample(observe_ctx *ctx, sample *ret) {
        uint64_t realtime = realtime_usec();
        int r = observe_sample_at(ctx, now_usec(), ret);

        if (r >= 0)
                ret->realtime_usec = realtime;
        return r;
}

void sample_done(sample *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_devices; i++)
                bdi_device_done(&s->devices[i]);
        free(s->devices);
        *s = (sample) {};
}

int sample_copy(sample *dst, const sample *src) {
        sample c = *src;

        c.devices = NULL;
        c.n_devices = 0;
        if (src->n_devices > 0) {
                c.devices = calloc(src->n_devices, sizeof(bdi_device));
                if (!c.devices)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < src->n_devices; i++) {
                const bdi_device *from = &src->devices[i];
                bdi_device *to = &c.devices[i];

                *to = *from;
                to->mounts = calloc(from->n_mounts + 1, sizeof(char *));
                if (!to->mounts) {
                        to->n_mounts = 0;
                        c.n_devices = i + 1;
                        sample_done(&c);
                        return -ENOMEM;
                }
                for (size_t j = 0; j < from->n_mounts; j++)
                        to->mounts[j] = xstrdup(from->mounts[j]);
                c.n_devices = i + 1;
        }
        *dst = c;
        return 0;
}

bool bdi_device_active(const bdi_device *d) {
        /* dirty + writeback: two counters, each off by up to counter_error_bytes */
        return d->backlog_bytes > 2 * d->counter_error_bytes || d->dirty_rate_bytes_per_s > 0 || d->write_bw_bytes_per_s > 0;
}

uint64_t bdi_device_best_bw(const bdi_device *d) {
        return MAX(MAX(d->writing_wbs_bw_bytes_per_s, d->kernel_bw_bytes_per_s), d->write_bw_bytes_per_s);
}

const bdi_device *sample_find_device(const sample *s, const char *key) {
        if (!s || !key)
                return NULL;

        /* In order of precedence: bdi name, device name, device-mapper name, "MAJ:MIN", mount point. */
        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, key) == 0)
                        return &s->devices[i];
        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].name, key) == 0)
                        return &s->devices[i];
        for (size_t i = 0; i < s->n_devices; i++)
                if (s->devices[i].alias[0] && strcmp(s->devices[i].alias, key) == 0)
                        return &s->devices[i];
        for (size_t i = 0; i < s->n_devices; i++) {
                char devnum[32];

                if (!s->devices[i].has_devnum)
                        continue;
                snprintf(devnum, sizeof(devnum), "%u:%u", s->devices[i].major, s->devices[i].minor);
                if (strcmp(devnum, key) == 0)
                        return &s->devices[i];
        }
        for (size_t i = 0; i < s->n_devices; i++)
                for (size_t j = 0; j < s->devices[i].n_mounts; j++)
                        if (strcmp(s->devices[i].mounts[j], key) == 0)
                                return &s->devices[i];
        return NULL;
}

const char *stats_source_to_string(stats_source s) {
        switch (s) {
        case STATS_SOURCE_DEBUGFS:
                return "debugfs";
        case STATS_SOURCE_BLOCKSTAT:
                return "blockstat";
        case STATS_SOURCE_NONE:
                return "none";
        }
        return "none";
}

static const char *const trait_names[] = { "rotational", "removable", "usb", "nfs", "fuse" };

const char *trait_to_string(unsigned trait) {
        for (size_t i = 0; i < ELEMENTSOF(trait_names); i++)
                if (trait == 1u << i)
                        return trait_names[i];
        return NULL;
}

int trait_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(trait_names); i++)
                if (s && strcmp(s, trait_names[i]) == 0)
                        return 1 << i;
        return -EINVAL;
}

const char *traits_to_string(unsigned traits, char *buf, size_t size) {
        size_t used = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(trait_names); i++) {
                size_t n;

                if (!(traits & (1u << i)))
                        continue;
                n = strlen(trait_names[i]) + (used > 0);
                if (used + n >= size)
                        break;
                sprintf(buf + used, "%s%s", used > 0 ? "," : "", trait_names[i]);
                used += n;
        }
        return buf;
}
