/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A simulated kernel for actuator tests: /proc/sys/vm, /proc/vmstat thresholds and per-BDI ratio knobs, behind a knob_io. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuate.h"

#define FAKE_PAGE_SIZE 4096ULL
#define FAKE_PPM_FULL 1000000ULL

typedef struct fake_vm {
        uint64_t dirty_bytes, dirty_ratio;
        uint64_t background_bytes, background_ratio;
        uint64_t writeback_centisecs, expire_centisecs;
} fake_vm;

typedef struct fake_bdi {
        char name[64];
        bool present;
        bool fine;                 /* has *_ratio_fine, *_bytes, strict_limit (6.2+) */
        uint64_t min_ppm, max_ppm; /* what the kernel stores */
        uint32_t strict;
} fake_bdi;

typedef struct fake_fault {
        char suffix[96];           /* matched against the end of the path */
        int error;                 /* positive errno, or FAKE_SHORT_READ / FAKE_GARBAGE_READ / FAKE_VANISH */
        int remaining;             /* < 0: forever */
        bool on_read;              /* a read fault, else a write fault */
        bool write_only;           /* only the write sees it (an LSM): access(W_OK) says yes */
} fake_fault;

/* Fault kinds beyond an errno: a read that returns nothing, one that returns text that is no number,
 * and a write after which the device is gone (it vanished between the read and the write). */
#define FAKE_SHORT_READ   -1
#define FAKE_GARBAGE_READ -2
#define FAKE_VANISH       -3

typedef struct fake_kernel {
        fake_vm vm;
        uint64_t dirtyable_pages;  /* "free + file cache - reserves", for ratio mode */
        int64_t dirtyable_step_pages; /* memory moves by this much after every write that lands (page cache
                                       * growing or shrinking between two writes of one tick) */
        fake_bdi bdis[16];
        size_t n_bdis;
        fake_fault faults[8];
        size_t n_faults;
        char **log;                /* every write attempt: "vm/dirty_bytes 419430400", "7:1/max_bytes 16777216 !EINVAL" */
        size_t n_log;
} fake_kernel;

/* Defaults like a fresh 6.x system: dirty_ratio 20, background 10, 500/3000 centisecs,
 * n_bdis devices "7:0".."7:n-1" with min 0 %, max 100 %, strict 0. */
fake_kernel *fake_kernel_new(uint64_t dirtyable_pages, size_t n_bdis);
void fake_kernel_free(fake_kernel *fk);
knob_io fake_kernel_io(fake_kernel *fk);

fake_bdi *fake_kernel_bdi(fake_kernel *fk, const char *name);
/* Make writes to paths ending in suffix fail with error (positive errno) count times (< 0: always; 0: clear all). */
void fake_kernel_fail(fake_kernel *fk, const char *suffix, int error, int count);
/* Make reads of paths ending in suffix fail (error: positive errno, FAKE_SHORT_READ, FAKE_GARBAGE_READ)
 * count times (< 0: always). fake_kernel_fail(fk, NULL, 0, 0) clears these too. */
void fake_kernel_fail_read(fake_kernel *fk, const char *suffix, int error, int count);
/* Make writes to paths ending in suffix fail with error for good, where access() sees nothing wrong:
 * a security module (AppArmor, SELinux) that refuses the write itself. */
void fake_kernel_fail_lsm(fake_kernel *fk, const char *suffix, int error);
/* The device disappears: every file of it is ENOENT. */
void fake_kernel_remove_bdi(fake_kernel *fk, const char *name);

uint64_t fake_kernel_thresh_pages(const fake_kernel *fk);
uint64_t fake_kernel_bg_thresh_pages(const fake_kernel *fk);
uint64_t fake_kernel_min_sum_ppm(const fake_kernel *fk);

/* The write log: index of the first entry at or after from that starts with prefix, or -1. */
long fake_kernel_log_find(const fake_kernel *fk, const char *prefix, size_t from);
size_t fake_kernel_log_count(const fake_kernel *fk, const char *prefix);
void fake_kernel_log_clear(fake_kernel *fk);
void fake_kernel_log_dump(const fake_kernel *fk);
