/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Observation: one snapshot of global and per-BDI dirty/writeback state, read from a root prefix. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "ctl-common.h"
#include "knobs.h"
#include "memcg.h"

/* Device traits, usable as config matches. */
enum {
        BDI_TRAIT_ROTATIONAL = 1 << 0,
        BDI_TRAIT_REMOVABLE  = 1 << 1,
        BDI_TRAIT_USB        = 1 << 2,
        BDI_TRAIT_NFS        = 1 << 3,
        BDI_TRAIT_FUSE       = 1 << 4,
};

/* Where the per-device figures came from this tick. */
typedef enum stats_source {
        STATS_SOURCE_DEBUGFS,    /* debugfs bdi/<dev>/stats + wb_stats */
        STATS_SOURCE_BLOCKSTAT,  /* /sys/block/<dev>/stat sector deltas only */
        STATS_SOURCE_NONE,       /* neither: knobs only */
} stats_source;

/* The vm knobs' files (dirty_bytes and dirty_ratio, ...), read through the knob table. */
typedef struct vm_knobs {
        knob_reading k[_KNOB_GLOBAL_MAX];
} vm_knobs;

/* A BDI's knob files (min/max in bytes and ratios, strict_limit), read through the knob table;
 * a file this kernel lacks is not in its reading's has. */
typedef struct bdi_knobs {
        knob_reading k[KNOB_DEVICE_COUNT];   /* index: knob - KNOB_DEVICE_FIRST */
} bdi_knobs;

typedef struct global_state {
        /* /proc/vmstat, converted from pages to bytes */
        uint64_t dirty_bytes;
        uint64_t writeback_bytes;
        uint64_t dirty_thresh_bytes;
        uint64_t background_thresh_bytes;
        uint64_t dirtied_total_bytes;    /* cumulative */
        uint64_t written_total_bytes;    /* cumulative */
        /* /proc/meminfo */
        uint64_t mem_total_bytes;
        uint64_t mem_available_bytes;
        /* derived from the previous sample (0 on the first) */
        uint64_t dirty_rate_bytes_per_s;
        uint64_t write_rate_bytes_per_s;
        vm_knobs knobs;
        /* <root>/sys/devices/system/cpu/possible: the kernel's nr_cpu_ids (read once) */
        unsigned possible_cpus;
        /* how far one per-CPU debugfs counter may be off: wb_stat_error(), nr_cpu_ids x WB_STAT_BATCH pages */
        uint64_t counter_error_bytes;
} global_state;

/* The kernel's bandwidth guess for a wb that has not written yet (INIT_BW: 100 MB/s). */
#define KERNEL_BW_INITIAL (100ULL << 20)

/* Devices a stacked device (dm, md, loop) names as its members. */
#define BDI_LOWER_MAX 4

typedef struct bdi_device {
        char bdi[64];           /* sysfs name under /sys/class/bdi: "7:3", "btrfs-1", "0:52" */
        unsigned major, minor;  /* of the block device (or anonymous dev for nfs/fuse) */
        bool has_devnum;
        char name[64];          /* how an admin knows it: "sda", "loop3", "dm-2", "nfs 0:52" */
        char alias[64];         /* device-mapper name ("vg0-root") from /sys/block/<dev>/dm/name, "" if none */
        char fstype[32];        /* first mounted filesystem type, "" if unmounted */
        char **mounts;          /* NULL-terminated mount points, may be empty */
        size_t n_mounts;
        char model[64];         /* /sys/block/<dev>/device/model, "" if none */
        unsigned traits;        /* BDI_TRAIT_*, with those of the devices it is stacked on */
        /* stacks: LUKS/LVM/md over disks (sysfs slaves/), a loop device over a file */
        char lower[BDI_LOWER_MAX][64]; /* the whole disks it sits on, from slaves/ ("sda"), "" after the last */
        char backing_mount[128];/* a loop device: the mount point of its backing file's filesystem, "" if none */
        char upper[64];         /* a device stacked on this one ("dm-0", "loop3"), "" if none: its writeback
                                 * is that device's, and a cap here would throttle the upper's own worker */
        bdi_knobs knobs;        /* see observe_knobs_changed() */
        uint64_t knobs_read_usec; /* when the knob files were read (a few ticks ago at most); min_bytes and
                                   * max_bytes are read again as soon as a vm knob changes */

        stats_source source;
        /* from debugfs stats (bytes; 0 when not available) */
        uint64_t dirty_bytes;            /* BdiReclaimable */
        uint64_t writeback_bytes;        /* BdiWriteback */
        uint64_t thresh_bytes;           /* BdiDirtyThresh */
        uint64_t dirtied_total_bytes;    /* BdiDirtied, cumulative */
        uint64_t written_total_bytes;    /* BdiWritten (or sectors written x 512), cumulative */
        uint64_t kernel_bw_bytes_per_s;  /* BdiWriteBandwidth, 0 while idle */
        uint64_t writing_wbs_bw_bytes_per_s; /* WbWriteBandwidth of the wbs (one per cgroup) writing to it,
                                          * summed, or of the one holding most, or when none holds
                                          * pages the root wb's, kept while idle (see wb_pick_bw()) */
        uint64_t counter_error_bytes;    /* how far each debugfs figure may be off (the sample's per-CPU
                                          * error); 0 for block stat counts, which are exact */
        /* derived from the previous sample of the same BDI (0 on the first) */
        uint64_t write_bw_bytes_per_s;   /* own estimate from written_total deltas */
        uint64_t dirty_rate_bytes_per_s; /* from dirtied_total deltas */
        uint64_t backlog_bytes;          /* dirty + writeback */
        double backlog_s;                /* backlog / best bandwidth estimate; 0 if none known */
        bool seen_before;                /* derived figures are valid */
        /* not read by observe: the daemon's remembered speed of this device (speeds.c), 0 = none */
        uint64_t remembered_bw_bytes_per_s;
        uint64_t remembered_age_s;       /* how long ago it was measured */
} bdi_device;

/* What the running kernel offers, decided from its files (support.c fills it each tick). */
typedef struct kernel_support {
        bool debugfs;                   /* per-device dirty and writeback figures at all */
        bool wb_stats;                  /* debugfs bdi/<dev>/wb_stats (6.10+): stats sum every cgroup's writeback */
        bool cgroup_writeback;          /* cgroup v2 with io and memory: writers in cgroups have their own wbs */
        bool bdi_bytes;                 /* min_bytes, max_bytes, *_ratio_fine (6.2+) */
        bool strict_limit;              /* strict_limit (6.2+) */
        bool devices_trusted;           /* the devices' figures account for what is dirty: safe to act on */
        uint64_t unaccounted_bytes;     /* dirty + writeback the devices did not show, last tick */
        unsigned unaccounted_ticks;     /* consecutive ticks with a large unaccounted share */
        bool unaccounted_seen;          /* it happened: the figures stay untrusted for this run */
        char why[192];                  /* why the figures are not trusted, "" if they are */
} kernel_support;

typedef struct sample {
        uint64_t time_usec;            /* CLOCK_MONOTONIC */
        uint64_t realtime_usec;        /* CLOCK_REALTIME at the same moment (the wall clock, for people); 0 unknown */
        bool debugfs;                  /* per-BDI debugfs stats were readable */
        kernel_support support;        /* filled by support_assess(): whether the figures can be acted on */
        memcg_summary memcg;           /* memory-limited cgroups that write (memcg_scan(), every few ticks) */
        bool limit_ours;               /* not read by observe: the dirty limit in force is the daemon's own,
                                        * written by it, not changed since, and its writes are allowed */
        global_state global;
        bdi_device *devices;           /* sorted by bdi name */
        size_t n_devices;
} sample;

typedef struct observe_ctx observe_ctx;

/* root: "" or NULL for the live system, else a fake tree holding proc/, sys/ (sys/kernel/debug/bdi...).
 * mount_debugfs: try to mount debugfs on the live system if it is not mounted. */
int observe_new(const char *root, bool mount_debugfs, observe_ctx **ret);
/* For tests of a fake tree: poll fd (from mountinfo_watch_open()) for mount changes instead of reading the
 * tree's mountinfo every tick; the context owns it. */
void observe_set_mount_watch(observe_ctx *ctx, int fd);
observe_ctx *observe_free(observe_ctx *ctx);

/* Read one snapshot; derived rates are computed against the previous call's sample.
 * BDIs that vanish mid-read are dropped. A file that fails to read is reported once when it starts
 * failing and once when it reads again, not every tick. 0 or -errno (only if the global files fail). */
int observe_sample(observe_ctx *ctx, sample *ret);
/* The same with the caller's CLOCK_MONOTONIC time (tests use it to get exact rates). */
int observe_sample_at(observe_ctx *ctx, uint64_t time_usec, sample *ret);

/* The knob files of bdi (NULL: of every device) were written: read them again next sample. Without it
 * they are read on a device's first sample, when a device is replaced, and every few ticks (so that a
 * change by hand shows within a few ticks); min_bytes and max_bytes also when a vm knob changed. */
void observe_knobs_changed(observe_ctx *ctx, const char *bdi);

/* Free what a sample owns (devices and their mounts), leaving it zeroed. */
void sample_done(sample *s);
/* Deep copy. */
int sample_copy(sample *dst, const sample *src);

/* Look a device up by bdi name, block device name, mount point or "MAJ:MIN"; NULL if none. */
const bdi_device *sample_find_device(const sample *s, const char *key);

/* The device holds more dirty and writeback data than its counters' error, or dirtied or wrote some
 * since the last sample. */
bool bdi_device_active(const bdi_device *d);
/* The largest of its bandwidth figures (WbWriteBandwidth, BdiWriteBandwidth, our own rate); 0 if none. */
uint64_t bdi_device_best_bw(const bdi_device *d);
/* counter_error_bytes(): ctl-common.h, shared with wbtunectl's wait */
/* The least a per-device counter must show to count as that much, not the counters' error: max(1 MiB, error). */
uint64_t bdi_device_noise_floor(const bdi_device *d);
/* How far above a cap a device's backlog may be and still be the kernel's batching, not a writer that
 * outran it: 4M (MIN_WRITEBACK_PAGES, the per-CPU batches), or the error of its two counters (dirty and
 * writeback) if that is more. */
#define BDI_BATCH_BYTES (4ULL << 20)
uint64_t bdi_device_batch_slack(const bdi_device *d);

const char *stats_source_to_string(stats_source s);
/* "rotational,usb" into buf; "" if none. */
const char *traits_to_string(unsigned traits, char *buf, size_t size);
/* One BDI_TRAIT_* bit <-> "usb"; NULL / -EINVAL if unknown. */
const char *trait_to_string(unsigned trait);
int trait_from_string(const char *s);
