/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl wait's progress model: a device's backlog read over time, how far it is written, when it is
 * clean, and how much the kernel's per-CPU counters may still show on a clean device. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "ctl-common.h"   /* ctl_counter_error_bytes(), ctl_parse_possible_cpus() */

/* Seconds to write backlog_bytes at bw_bytes_per_s: 0 with nothing to write, -1 when bw is unknown (0). */
double ctl_clean_in_s(uint64_t backlog_bytes, uint64_t bw_bytes_per_s);


/* One reading of a device during `wbtunectl wait`. */
typedef struct ctl_wait_state {
        uint64_t dirty_bytes, writeback_bytes;
        uint64_t max_backlog_bytes;     /* the largest backlog seen so far: the bar's 100 % */
        uint64_t bw_bytes_per_s;        /* ctl_device_bw(): 0 unknown */
        double elapsed_s;
        bool syncing;                   /* the syncfs() of its mount points still runs */
        const char *state;              /* CTL_WAIT_* */
} ctl_wait_state;
#define CTL_WAIT_WRITING "writing"
#define CTL_WAIT_CLEAN   "clean"
#define CTL_WAIT_TIMEOUT "timeout"

/* How much of the largest backlog seen is written, in percent (100 with none). */
double ctl_wait_done_percent(const ctl_wait_state *w);
/* A line for people, without its newline, name (the device's, unescaped) escaped here:
 * "loop0 [#########...........]  45% 6.0M left (dirty 4.0M, writeback 2.0M) at 8.0M/s, clean in 0.8s".
 * bar: with the bar (a terminal), else without it. */
const char *ctl_format_wait_line(const ctl_wait_state *w, const char *name, bool bar, char *buf, size_t size);
/* The same for --json: {"device", "bdi", "state", "dirty_bytes", "writeback_bytes", "backlog_bytes",
 * "done_percent", "bw_estimate_bytes_per_s", "clean_in_s" (null when unknown), "elapsed_s", "syncing"}. */
json_object *ctl_wait_json(const ctl_wait_state *w, const char *name, const char *bdi);
