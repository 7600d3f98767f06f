/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who dirties and who is throttled: trace.c, taskstats.c and a bounded /proc/<pid>/io scan, put together per tick. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "observe.h"

#define ATTRIBUTION_SCAN_EVERY_TICKS 5     /* a full /proc/<pid>/io scan this often; tracked pids every tick */
#define ATTRIBUTION_SCAN_PIDS_MAX 4096     /* processes one full scan reads at most */
#define ATTRIBUTION_QUIET_SCANS 2          /* a process that wrote nothing in this many full scans ... */
#define ATTRIBUTION_QUIET_REREAD_SCANS 6   /* ... is read again only every 6th full scan (or once the kernel pauses it) */
#define ATTRIBUTION_TRACKED_MAX 32         /* top dirtiers re-read every tick between full scans */
#define ATTRIBUTION_TOP_MAX 20             /* entries of each list in the top result */
/* top's lists hold the tasks of the last few seconds, their figures over that window, so that a writer
 * paused or read in none of the last tick's samples still shows. The window is kept per tick, at most
 * ATTRIBUTION_WINDOW_TICKS_MAX ticks (5 s of the shortest tick), each with its ATTRIBUTION_TOP_MAX most
 * paused tasks and ATTRIBUTION_TRACKED_MAX dirtiers: attribution_window_memory_bytes() in all. */
#define ATTRIBUTION_WINDOW_USEC (5 * 1000000ULL)
#define ATTRIBUTION_WINDOW_TICKS_MAX 50

typedef struct attribution attribution;

typedef struct attribution_options {
        const char *root;            /* non-NULL: a fake tree: no trace, no taskstats; /proc read under it */
        bool enabled;                /* [daemon] attribution */
        bool task_delayacct;         /* [daemon] task_delayacct: turn it on while running */
        bool dry_run;                /* never turn task_delayacct on */
        const char *tracefs;         /* NULL: find it (trace_new) */
        const char *instance;        /* NULL: "wbtuned" */
        bool detached_trace;         /* tests: no tracefs, the trace comes from attribution_feed_trace() */
} attribution_options;

/* Sets up what it can; parts that cannot work are off with a reason (status shows it). 0 or -ENOMEM. */
int attribution_new(const attribution_options *o, attribution **ret);
/* Removes the trace instance, restores kernel.task_delayacct. NULL-safe. */
attribution *attribution_free(attribution *a);

/* The trace pipe's fd for the event loop, or -1. */
int attribution_trace_fd(const attribution *a);
/* The trace pipe is readable: aggregate what is there (bounded, never blocks). */
void attribution_process(attribution *a);
/* Tests: trace_pipe text for an attribution made with detached_trace. */
void attribution_feed_trace(attribution *a, const char *text, size_t len);
/* Close the tick: trace aggregates, per-task I/O and the dirtier rates. */
void attribution_tick(attribution *a, uint64_t now_usec);

/* {"enabled", "reason", "trace_instance", "taskstats", "taskstats_reason", "delayacct",
 *  "delayacct_set_by_daemon", "counters": trace totals} */
json_object *attribution_status_json(const attribution *a);
/* Adds "attribution" (status plus this tick's counters and the window's length), "paused" and "dirtiers"
 * (over the window) to o. */
void attribution_top_json(const attribution *a, const sample *s, json_object *o);
/* This tick's throttling of one device, or NULL if none of its writers was paused. */
json_object *attribution_device_json(const attribution *a, const char *bdi);

/* The bytes the window's ring takes (allocated when attribution is enabled). */
size_t attribution_window_memory_bytes(void);

/* Reads write_bytes and cancelled_write_bytes of a /proc/<pid>/io file. 0, -errno or -EBADMSG. */
int attribution_read_proc_io(const char *path, uint64_t *ret_write_bytes, uint64_t *ret_cancelled_write_bytes);
/* From a /proc/<pid>/stat: 1 if it is a kernel thread (PF_KTHREAD), 0 if not, -errno or -EBADMSG. */
int attribution_read_proc_kthread(const char *path);
