/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Throttle attribution: who is paused in balance_dirty_pages(), from a private tracefs instance. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define TRACE_COMM_MAX 32        /* kernel comm is 16 bytes with its NUL */
#define TRACE_BDI_MAX 32         /* the tracepoint's char bdi[32] */
#define TRACE_TASKS_MAX 256      /* (pid, bdi) pairs kept per tick; beyond that they are counted as dropped */
#define TRACE_DEVICES_MAX 64     /* devices kept per tick */
#define TRACE_LINE_MAX 1024      /* longer lines are counted bad and skipped */
#define TRACE_READ_BUDGET (256 * 1024)   /* bytes one trace_process() call reads at most */

typedef enum trace_event_type {
        TRACE_EVENT_NONE,                 /* a line of some other event, or blank: ignore */
        TRACE_EVENT_BALANCE_DIRTY_PAGES,
        TRACE_EVENT_BDI_DIRTY_RATELIMIT,
        TRACE_EVENT_LOST,                 /* "CPU:1 [LOST 116 EVENTS]" */
} trace_event_type;

/* One parsed line, in the kernel's units (pages, KB/s, ms) as include/trace/events/writeback.h prints them. */
typedef struct trace_event {
        trace_event_type type;
        char comm[TRACE_COMM_MAX];
        int32_t pid;                      /* thread id */
        int32_t cpu;
        uint64_t time_usec;               /* trace clock */
        char bdi[TRACE_BDI_MAX];
        uint64_t cgroup_ino;              /* inode of the writeback cgroup (1 = root) */

        /* balance_dirty_pages */
        uint64_t limit_pages, setpoint_pages, dirty_pages;
        uint64_t wb_setpoint_pages, wb_dirty_pages;
        uint64_t dirty_ratelimit_kbps, task_ratelimit_kbps;
        uint64_t dirtied_pages, dirtied_pause_pages;
        uint64_t paused_ms;               /* time already paused in this call */
        int64_t pause_ms;                 /* this pause; <= 0 means the task did not sleep */
        uint64_t period_ms;
        int64_t think_ms;

        /* bdi_dirty_ratelimit */
        uint64_t write_bw_kbps, avg_write_bw_kbps, dirty_rate_kbps;
        uint64_t balanced_dirty_ratelimit_kbps;
        /* (dirty_ratelimit_kbps and task_ratelimit_kbps are shared with the event above) */

        /* TRACE_EVENT_LOST */
        uint64_t lost;                    /* 0 with lost_unknown when the kernel gave no count */
        bool lost_unknown;
} trace_event;

/* Parse one line of trace_pipe text (with or without its newline). Pure.
 * 0: *ev filled, ev->type may be TRACE_EVENT_NONE for lines of other events.
 * -EBADMSG: a line of one of our events that is truncated or malformed. Unknown key=value fields are ignored. */
int trace_parse_line(const char *line, trace_event *ev);

/* Per (task, device) over one tick. Byte figures use the machine's page size. */
typedef struct trace_task {
        int32_t pid;
        char comm[TRACE_COMM_MAX];
        char bdi[TRACE_BDI_MAX];
        uint64_t cgroup_ino;
        uint64_t events;
        uint64_t pauses;                  /* events with pause > 0 */
        uint64_t pause_ms;                /* sum of positive pauses */
        uint64_t max_pause_ms;
        double pause_ms_per_s;            /* pause_ms over the tick: 1000 = blocked all the time. A pause that runs past
                                           * the tick's end counts in the ticks it spans when the trace clock is
                                           * CLOCK_MONOTONIC, else in the tick it starts in (up to 1000 + 200) */
        /* from the last event */
        uint64_t task_ratelimit_bytes_per_s;
        uint64_t dirty_bytes, limit_bytes, setpoint_bytes;
        uint64_t wb_dirty_bytes, wb_setpoint_bytes;
} trace_task;

typedef struct trace_device {
        char bdi[TRACE_BDI_MAX];
        uint64_t events, pauses, pause_ms, max_pause_ms;
        double pause_ms_per_s;            /* summed over its tasks, so it can exceed 1000 */
        uint32_t n_tasks;                 /* distinct tasks seen (as far as the task table held them) */
        /* last balance_dirty_pages event */
        uint64_t task_ratelimit_bytes_per_s, dirty_ratelimit_bytes_per_s;
        uint64_t dirty_bytes, limit_bytes, setpoint_bytes;
        uint64_t wb_dirty_bytes, wb_setpoint_bytes;
        /* last bdi_dirty_ratelimit event, if have_ratelimit */
        bool have_ratelimit;
        uint64_t write_bw_bytes_per_s, avg_write_bw_bytes_per_s, dirty_rate_bytes_per_s;
        uint64_t balanced_dirty_ratelimit_bytes_per_s;
} trace_device;

typedef struct trace_counters {
        uint64_t events;                  /* lines of our events parsed */
        uint64_t lost_kernel;             /* from "[LOST N EVENTS]" markers */
        uint64_t lost_markers;            /* markers seen (some carry no count) */
        uint64_t dropped_tasks;           /* events whose task did not fit the task table */
        uint64_t dropped_devices;         /* events whose device did not fit the device table */
        uint64_t bad_lines;               /* malformed or longer than TRACE_LINE_MAX */
        uint64_t bytes_read;
        uint64_t budget_hits;             /* trace_process() calls that stopped on TRACE_READ_BUDGET */
        uint64_t pauses;                  /* balance_dirty_pages events in which the task slept */
        uint64_t pause_ms;                /* how long they slept, counted when the event is read */
} trace_counters;

typedef struct trace_tick_result {
        uint64_t elapsed_usec;
        const trace_task *tasks;          /* sorted by pause_ms, largest first; valid until the next trace_tick() */
        size_t n_tasks;
        const trace_device *devices;      /* sorted by bdi name; same lifetime */
        size_t n_devices;
        trace_counters tick;              /* this tick */
        trace_counters total;             /* since trace_new() */
} trace_tick_result;

typedef struct trace_ctx trace_ctx;

/* tracefs: NULL to find it (/sys/kernel/tracing, then /sys/kernel/debug/tracing, the first one
 * writable here) and mount it at /sys/kernel/tracing if neither is mounted; else a directory to use
 * as is. instance: NULL for "wbtuned". Creates instances/<instance> (a stale one left by a crash is
 * removed first) and enables the writeback events there. -ENOENT/-ENOMEDIUM (not mounted, may not
 * mount)/-EOPNOTSUPP/-EPERM/-EROFS/-EBUSY with one logged reason otherwise. */
int trace_new(const char *tracefs, const char *instance, trace_ctx **ret);
/* Closes the pipe and removes the instance. NULL-safe; returns NULL. */
trace_ctx *trace_free(trace_ctx *ctx);

/* Non-blocking fd of trace_pipe. It is readable after every event, so an event loop should read it on
 * a timer (trace_process) rather than on EPOLLIN, which would wake it per event. */
int trace_fd(trace_ctx *ctx);
/* Read what is available (up to TRACE_READ_BUDGET bytes), parse and aggregate. Never blocks.
 * Returns the number of events aggregated, or -errno on a read error. */
int trace_process(trace_ctx *ctx);
/* Feed text as if read from the pipe (tests, replay). Partial lines are kept for the next call. */
void trace_feed(trace_ctx *ctx, const char *buf, size_t len);
/* Drain the pipe, then hand out the tick's aggregates and reset them. The part of a pause after
 * now_usec (trace clock; 0 = do not split) is carried into the next tick, with events = pauses = 0. */
int trace_tick_at(trace_ctx *ctx, uint64_t elapsed_usec, uint64_t now_usec, trace_tick_result *ret);
/* trace_tick_at() at CLOCK_MONOTONIC now when the instance uses the mono trace clock, else unsplit. */
int trace_tick(trace_ctx *ctx, uint64_t elapsed_usec, trace_tick_result *ret);

/* A context that reads nothing: for trace_feed() in tests and replays. page_size 0 = the machine's. */
int trace_new_detached(uint64_t page_size, trace_ctx **ret);

/* The drop/loss counters as a JSON object (also used by the daemon's status). */
json_object *trace_counters_to_json(const trace_counters *c);

/* The cgroup v2 directory whose inode is cgroup_ino ("/" for the root, "/system.slice/x.service"),
 * searched under cgroup_root (NULL: /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems).
 * Visits at most 4096 directories. 0, -ENOENT or -ENAMETOOLONG. */
int trace_cgroup_path(const char *cgroup_root, uint64_t cgroup_ino, char *buf, size_t size);
