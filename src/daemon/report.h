/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON views of samples and of the daemon for the control protocol, built through protocol.h's names. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "control.h"
#include "observe.h"
#include "protocol.h"

json_object *report_vm_knobs(const vm_knobs *k);
json_object *report_bdi_knobs(const bdi_knobs *k);       /* only the knobs this kernel has */
json_object *report_global(const global_state *g);
json_object *report_device(const bdi_device *d);
json_object *report_devices(const sample *s);            /* array of report_device() */
/* {"time_usec", "debugfs", "global": report_global(), "devices": report_devices()} */
json_object *report_sample(const sample *s);

/* One knob as the protocol's knob object: who owns it, its value now, what will be written and why.
 * Producers fill what they know; NULL strings are JSON null (reason and state are never null). */
typedef struct report_knob {
        const char *knob;               /* the kernel file: "max_bytes" */
        const char *unit;               /* PROTOCOL_UNIT_* of current, desired and policy */
        bool supported;                 /* this kernel has the file */
        bool have_current, have_desired, have_policy;
        uint64_t current;               /* as the kernel has it now */
        uint64_t desired;               /* what will be written, after the safety guard */
        uint64_t policy;                /* what the policy wanted, before the guard */
        const char *reason;             /* the policy's words */
        const char *clamp;              /* the guard's words, when desired differs from policy */
        bool have_original;             /* the daemon saved it before its first change */
        const char *original_file;      /* the file saved: "max_ratio_fine" */
        const char *original_unit;      /* PROTOCOL_UNIT_* */
        uint64_t original_value;
        const char *state;              /* PROTOCOL_STATE_* */
        const char *note;
} report_knob;

json_object *report_knob_json(const report_knob *k);
/* {"knobs": knobs} (takes knobs, an array of knob objects) */
json_object *report_tuning(json_object *knobs);
/* {"managed", "active", "bw_estimate_bytes_per_s", "knobs": knobs} (takes knobs) */
json_object *report_device_tuning(bool managed, bool active, uint64_t bw_estimate_bytes_per_s, json_object *knobs);

/* What status and top say about the daemon itself. */
/* The daemon's work summed by stage since its start, in usec of CLOCK_MONOTONIC: which part of a tick costs
 * what on this machine (many CPUs, many cgroups, many tasks). */
typedef struct report_work {
        uint64_t sample_usec;           /* reading the kernel's files (observe_sample) */
        uint64_t cgroups_usec;          /* walking the memory-limited cgroups */
        uint64_t decide_act_usec;       /* policy, guard, plan and knob writes */
        uint64_t history_usec;
        uint64_t attribution_usec;      /* the per-task scans of a tick */
        uint64_t trace_drain_usec;      /* reading the trace pipe (a timer of its own, not in the tick) */
} report_work;

typedef struct report_daemon {
        uint64_t pid;
        double uptime_s;
        const char *mode;           /* "observe", "auto", "dry-run" */
        uint64_t tick_ms;
        uint64_t ticks;
        bool dry_run;
        const char *observe_only_reason;   /* NULL unless no knob may be written whatever the mode (a container) */
        const char *root;           /* "/" on the live system */
        const char *config_path;
        uint64_t last_tick_work_usec;   /* how long the last tick's work took */
        uint64_t tick_work_total_usec;  /* the same summed over every tick */
        const report_work *work;        /* where that time went, NULL: not kept */
} report_daemon;

/* What status says of the knob writes (see manager_writes_knobs()). */
typedef struct report_writes {
        bool enabled;
        const char *reason;
        uint64_t total, last_minute, overrides_total, failures_total, guard_holds_total;
        const char *saved_file;
        const char *saved_file_refused;     /* NULL if trusted or none */
        const char *limited_to, *limited_why; /* NULL: every knob is written (when enabled) */
} report_writes;
json_object *report_writes_json(const report_writes *w);
json_object *report_kernel_support(const kernel_support *ks, const memcg_summary *memcg);

/* The status result; takes the four objects (tuning: report_tuning(), attribution: attribution_status_json(),
 * history: history_status_json(), hotplug: report_hotplug()). */
json_object *report_status(const report_daemon *d, const sample *s, json_object *tuning, json_object *attribution,
                           json_object *history, json_object *hotplug,
                           json_object *writes, json_object *support);
/* {"enabled", "reason" (when not enabled), "events"} */
json_object *report_hotplug(bool enabled, const char *reason, uint64_t events);
/* top's head: time, tick, ticks, mode and the global state (attribution_top_json() adds its parts,
 * report_devices_stream() the devices). */
json_object *report_top(const report_daemon *d, const sample *s);

/* A list of devices streamed into a reply ("devices" of devices and top): the devices that pass
 * filter (NULL: all) when the request came, in the sample's order, each built by item when its turn
 * comes from *s as it is then (a tick may pass between two). A device gone by then is left out.
 * s must stay valid (the manager's current sample) until the stream is freed. 0 or -ENOMEM. */
typedef bool (*report_device_filter_t)(void *userdata, const bdi_device *d);
typedef json_object *(*report_device_item_t)(void *userdata, const bdi_device *d);
int report_devices_stream(const sample *s, protocol_field key, report_device_filter_t filter,
                          report_device_item_t item, void *userdata, control_stream *ret);
