/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control protocol's one schema: every field of every reply, with its type, for the daemon that
 * builds replies and the client that reads them (chrony's candm.h is the model). doc/protocol.md
 * describes the same fields; tests/test-protocol.c checks the three agree. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

/* Bumped when a field is renamed or removed, changes type, or may newly be absent or null; the
 * fields of each version are recorded in tests/data/protocol-v<N>.txt. Adding fields does not
 * bump it: clients ignore fields they do not know. Version 1 was the unversioned protocol. */
#define PROTOCOL_VERSION 2

/* Where the daemon listens unless wbtuned.conf says otherwise, and where wbtunectl connects. */
#define PROTOCOL_DEFAULT_SOCKET "/run/wbtuned/control"

/* Verbs (requests' "verb"). */
#define PROTOCOL_VERB_STATUS  "status"
#define PROTOCOL_VERB_DEVICES "devices"
#define PROTOCOL_VERB_SHOW    "show"
#define PROTOCOL_VERB_EXPLAIN "explain"
#define PROTOCOL_VERB_TOP     "top"
#define PROTOCOL_VERB_HISTORY "history"
#define PROTOCOL_VERB_RELOAD  "reload"
#define PROTOCOL_VERB_RESTORE "restore"
#define PROTOCOL_VERB_METRICS "metrics"

/* Values of a knob object's "unit" (and of its "original"'s). */
#define PROTOCOL_UNIT_BYTES     "bytes"
#define PROTOCOL_UNIT_CENTISECS "centisecs"
#define PROTOCOL_UNIT_BOOL      "bool"
#define PROTOCOL_UNIT_PERCENT   "percent"
#define PROTOCOL_UNIT_PPM       "ppm"       /* millionths of the whole: 1000000 = 100 % */

/* Values of a knob object's "state": who owns the knob. */
#define PROTOCOL_STATE_MANAGED     "managed"      /* the daemon sets it ("desired") */
#define PROTOCOL_STATE_NO_OPINION  "no-opinion"   /* the policy wants nothing: as the kernel or admin has it */
#define PROTOCOL_STATE_OVERRIDE    "override"     /* an admin set it by hand: left alone */
#define PROTOCOL_STATE_UNWRITABLE  "unwritable"   /* the kernel refuses writes */
#define PROTOCOL_STATE_UNSUPPORTED "unsupported"  /* this kernel has no such file */
#define PROTOCOL_STATE_EXCLUDED    "excluded"     /* the configuration says manage = no */

/* Values of a device tuning's "bw_source": where the bandwidth comes from. */
#define PROTOCOL_BW_MEASURED   "measured"     /* measured now, in this run */
#define PROTOCOL_BW_REMEMBERED "remembered"   /* measured before (an earlier run): bw_remembered_age_s old */
#define PROTOCOL_BW_PRESUMED   "presumed"     /* not measured: a guess, what it showed, the kernel's estimate */

/* history's "format" argument */
#define PROTOCOL_FORMAT_JSON "json"
#define PROTOCOL_FORMAT_CSV  "csv"

/* The objects the protocol has: the reply envelope, each verb's result and what they hold.
 * X(ID, name, base): an object of kind ID has base's fields and its own. */
#define PROTOCOL_KINDS(X) \
        X(NONE,            "none",            NONE) \
        X(REQUEST,         "request",         NONE) \
        X(REPLY,           "reply",           NONE) \
        X(STATUS,          "status",          NONE) \
        X(GLOBAL,          "global",          NONE) \
        X(VM_KNOBS,        "vm_knobs",        NONE) \
        X(TUNING,          "tuning",          NONE) \
        X(DEVICE_TUNING,   "device_tuning",   TUNING) \
        X(KNOB,            "knob",            NONE) \
        X(ORIGINAL,        "original",        NONE) \
        X(ATTRIBUTION,     "attribution",     NONE) \
        X(TOP_ATTRIBUTION, "top_attribution", ATTRIBUTION) \
        X(COUNTERS,        "counters",        NONE) \
        X(HISTORY_STATUS,  "history_status",  NONE) \
        X(HOTPLUG,         "hotplug",         NONE) \
        X(WORK,            "work",            NONE) \
        X(WRITES,          "writes",          NONE) \
        X(KERNEL_SUPPORT,  "kernel_support",  NONE) \
        X(DEVICES,         "devices",         NONE) \
        X(DEVICE,          "device",          NONE) \
        X(BDI_KNOBS,       "bdi_knobs",       NONE) \
        X(THROTTLE,        "throttle",        NONE) \
        X(SHOW,            "show",            NONE) \
        X(EXPLAIN,         "explain",         NONE) \
        X(TOP,             "top",             NONE) \
        X(TASK_IO,         "task_io",         NONE) \
        X(PAUSED,          "paused",          TASK_IO) \
        X(DIRTIER,         "dirtier",         TASK_IO) \
        X(HISTORY,         "history",         NONE) \
        X(HISTORY_GLOBAL,  "history_global",  NONE) \
        X(HISTORY_DEVICE,  "history_device",  NONE) \
        X(HISTORY_CSV,     "history_csv",     NONE) \
        X(RELOAD,          "reload",          NONE) \
        X(RESTORE,         "restore",         NONE) \
        X(METRICS,         "metrics",         NONE)

/* Every field: X(KIND, ID, "name", TYPE, PRESENCE, CHILD).
 * TYPE: U64 (an integer >= 0), DOUBLE (any finite number), BOOL, STRING, OBJECT (of kind CHILD),
 * U64_ARRAY, STRING_ARRAY, OBJECT_ARRAY (of CHILD), OBJECT_MAP ({"any name": CHILD, ...}).
 * PRESENCE: REQUIRED (always there, never null), NULLABLE (always there, may be null),
 * OPTIONAL (may be absent, never null). Units are in the names (_bytes, _ms, _s, _usec...). */
#define PROTOCOL_FIELDS(X) \
        X(REQUEST, VERB,    "verb",    STRING, REQUIRED, NONE) \
        X(REQUEST, DEVICE,  "device",  STRING, OPTIONAL, NONE) \
        X(REQUEST, FORMAT,  "format",  STRING, OPTIONAL, NONE) \
        \
        X(REPLY, VERSION, "version", U64,    REQUIRED, NONE) \
        X(REPLY, OK,      "ok",      BOOL,   REQUIRED, NONE) \
        X(REPLY, RESULT,  "result",  OBJECT, OPTIONAL, NONE)       /* when ok; its kind is the verb's */ \
        X(REPLY, ERROR,   "error",   STRING, OPTIONAL, NONE)       /* when not ok */ \
        X(REPLY, ERRNO,   "errno",   STRING, OPTIONAL, NONE)       /* when not ok: "ENODEV" */ \
        \
        X(STATUS, PACKAGE_VERSION, "package_version", STRING, REQUIRED, NONE) \
        X(STATUS, PID,             "pid",             U64,    REQUIRED, NONE) \
        X(STATUS, UPTIME_S,        "uptime_s",        DOUBLE, REQUIRED, NONE) \
        X(STATUS, MODE,            "mode",            STRING, REQUIRED, NONE) \
        X(STATUS, TICK_MS,         "tick_ms",         U64,    REQUIRED, NONE) \
        X(STATUS, TICKS,           "ticks",           U64,    REQUIRED, NONE) \
        X(STATUS, DRY_RUN,         "dry_run",         BOOL,   REQUIRED, NONE) \
        X(STATUS, OBSERVE_ONLY_REASON, "observe_only_reason", STRING, NULLABLE, NONE) /* a container: no knob written */ \
        X(STATUS, ROOT,            "root",            STRING, REQUIRED, NONE) \
        X(STATUS, CONFIG,          "config",          STRING, REQUIRED, NONE) \
        X(STATUS, DEBUGFS,         "debugfs",         BOOL,   REQUIRED, NONE) \
        X(STATUS, STATS_SOURCE,    "stats_source",    STRING, REQUIRED, NONE) \
        X(STATUS, N_DEVICES,       "n_devices",       U64,    REQUIRED, NONE) \
        X(STATUS, GLOBAL,          "global",          OBJECT, REQUIRED, GLOBAL) \
        X(STATUS, TUNING,          "tuning",          OBJECT, REQUIRED, TUNING) \
        X(STATUS, ATTRIBUTION,     "attribution",     OBJECT, REQUIRED, ATTRIBUTION) \
        X(STATUS, HISTORY,         "history",         OBJECT, REQUIRED, HISTORY_STATUS) \
        X(STATUS, HOTPLUG,         "hotplug",         OBJECT, REQUIRED, HOTPLUG) \
        X(STATUS, WRITES,          "writes",          OBJECT, REQUIRED, WRITES) \
        X(STATUS, KERNEL_SUPPORT,  "kernel_support",  OBJECT, REQUIRED, KERNEL_SUPPORT) \
        X(STATUS, LAST_TICK_WORK_USEC,  "last_tick_work_usec",  U64, REQUIRED, NONE)   /* the last tick's work */ \
        X(STATUS, TICK_WORK_TOTAL_USEC, "tick_work_total_usec", U64, REQUIRED, NONE)   /* of all "ticks" */ \
        X(STATUS, WORK_USEC,       "work_usec",       OBJECT, OPTIONAL, WORK)    /* where that time went */ \
        \
        X(WORK, SAMPLE,      "sample",      U64, REQUIRED, NONE)   /* the kernel's files, each tick */ \
        X(WORK, CGROUPS,     "cgroups",     U64, REQUIRED, NONE)   /* the memory-limited cgroups, every 5 s */ \
        X(WORK, DECIDE_ACT,  "decide_act",  U64, REQUIRED, NONE)   /* policy, guard, knob writes */ \
        X(WORK, HISTORY,     "history",     U64, REQUIRED, NONE) \
        X(WORK, ATTRIBUTION, "attribution", U64, REQUIRED, NONE)   /* the per-task scans of a tick */ \
        X(WORK, TRACE_DRAIN, "trace_drain", U64, REQUIRED, NONE)   /* reading the trace pipe, between ticks too */ \
        \
        X(WRITES, ENABLED,            "enabled",            BOOL,   REQUIRED, NONE)   /* knobs are written now */ \
        X(WRITES, REASON,             "reason",             STRING, REQUIRED, NONE)   /* why, or why not */ \
        X(WRITES, TOTAL,              "total",              U64,    REQUIRED, NONE)   /* knob files written */ \
        X(WRITES, LAST_MINUTE,        "last_minute",        U64,    REQUIRED, NONE) \
        X(WRITES, OVERRIDES_TOTAL,    "overrides_total",    U64,    REQUIRED, NONE)   /* knobs found set by hand */ \
        X(WRITES, FAILURES_TOTAL,     "failures_total",     U64,    REQUIRED, NONE)   /* writes the kernel refused */ \
        X(WRITES, GUARD_HOLDS_TOTAL,  "guard_holds_total",  U64,    REQUIRED, NONE)   /* ticks a knob was held */ \
        X(WRITES, SAVED_FILE,         "saved_file",         STRING, REQUIRED, NONE) \
        X(WRITES, SAVED_FILE_REFUSED, "saved_file_refused", STRING, NULLABLE, NONE)   /* why it was not trusted */ \
        X(WRITES, LIMITED_TO,         "limited_to",         STRING, NULLABLE, NONE)   /* what this kernel lets it write */ \
        X(WRITES, LIMITED_WHY,        "limited_why",        STRING, NULLABLE, NONE)   /* why no more */ \
        \
        X(KERNEL_SUPPORT, DEBUGFS,           "debugfs",           BOOL,   REQUIRED, NONE) \
        X(KERNEL_SUPPORT, WB_STATS,          "wb_stats",          BOOL,   REQUIRED, NONE)   /* 6.10+: all cgroups' wbs */ \
        X(KERNEL_SUPPORT, CGROUP_WRITEBACK,  "cgroup_writeback",  BOOL,   REQUIRED, NONE) \
        X(KERNEL_SUPPORT, BDI_BYTES,         "bdi_bytes",         BOOL,   REQUIRED, NONE)   /* 6.2+: *_bytes, *_fine */ \
        X(KERNEL_SUPPORT, STRICT_LIMIT,      "strict_limit",      BOOL,   REQUIRED, NONE)   /* 6.2+ */ \
        X(KERNEL_SUPPORT, DEVICES_TRUSTED,   "devices_trusted",   BOOL,   REQUIRED, NONE) \
        X(KERNEL_SUPPORT, UNACCOUNTED_BYTES, "unaccounted_bytes", U64,    REQUIRED, NONE) \
        X(KERNEL_SUPPORT, WHY,               "why",               STRING, NULLABLE, NONE)   /* when not trusted */ \
        X(KERNEL_SUPPORT, MEMCG_V2,          "memcg_v2",          BOOL,   REQUIRED, NONE) \
        X(KERNEL_SUPPORT, MEMCG_LIMITED,     "memcg_limited",     U64,    REQUIRED, NONE) \
        X(KERNEL_SUPPORT, MEMCG_WRITING,     "memcg_writing",     U64,    REQUIRED, NONE) \
        \
        X(GLOBAL, DIRTY_BYTES,             "dirty_bytes",             U64,    REQUIRED, NONE) \
        X(GLOBAL, WRITEBACK_BYTES,         "writeback_bytes",         U64,    REQUIRED, NONE) \
        X(GLOBAL, DIRTY_THRESH_BYTES,      "dirty_thresh_bytes",      U64,    REQUIRED, NONE) \
        X(GLOBAL, BACKGROUND_THRESH_BYTES, "background_thresh_bytes", U64,    REQUIRED, NONE) \
        X(GLOBAL, DIRTIED_TOTAL_BYTES,     "dirtied_total_bytes",     U64,    REQUIRED, NONE) \
        X(GLOBAL, WRITTEN_TOTAL_BYTES,     "written_total_bytes",     U64,    REQUIRED, NONE) \
        X(GLOBAL, MEM_TOTAL_BYTES,         "mem_total_bytes",         U64,    REQUIRED, NONE) \
        X(GLOBAL, MEM_AVAILABLE_BYTES,     "mem_available_bytes",     U64,    REQUIRED, NONE) \
        X(GLOBAL, DIRTY_RATE_BYTES_PER_S,  "dirty_rate_bytes_per_s",  U64,    REQUIRED, NONE) \
        X(GLOBAL, WRITE_RATE_BYTES_PER_S,  "write_rate_bytes_per_s",  U64,    REQUIRED, NONE) \
        X(GLOBAL, KNOBS,                   "knobs",                   OBJECT, REQUIRED, VM_KNOBS) \
        \
        X(VM_KNOBS, DIRTY_BYTES,               "dirty_bytes",               U64, REQUIRED, NONE) \
        X(VM_KNOBS, DIRTY_BACKGROUND_BYTES,    "dirty_background_bytes",    U64, REQUIRED, NONE) \
        X(VM_KNOBS, DIRTY_RATIO,               "dirty_ratio",               U64, REQUIRED, NONE) \
        X(VM_KNOBS, DIRTY_BACKGROUND_RATIO,    "dirty_background_ratio",    U64, REQUIRED, NONE) \
        X(VM_KNOBS, DIRTY_WRITEBACK_CENTISECS, "dirty_writeback_centisecs", U64, REQUIRED, NONE) \
        X(VM_KNOBS, DIRTY_EXPIRE_CENTISECS,    "dirty_expire_centisecs",    U64, REQUIRED, NONE) \
        \
        X(TUNING, KNOBS, "knobs", OBJECT_ARRAY, REQUIRED, KNOB) \
        X(DEVICE_TUNING, MANAGED,                 "managed",                 BOOL, REQUIRED, NONE) \
        X(DEVICE_TUNING, ACTIVE,                  "active",                  BOOL, REQUIRED, NONE) \
        X(DEVICE_TUNING, BW_ESTIMATE_BYTES_PER_S, "bw_estimate_bytes_per_s", U64,  REQUIRED, NONE) \
        X(DEVICE_TUNING, BW_SOURCE,               "bw_source",               STRING, OPTIONAL, NONE) /* PROTOCOL_BW_*; absent in old daemons */ \
        X(DEVICE_TUNING, BW_REMEMBERED_AGE_S,     "bw_remembered_age_s",     U64,  OPTIONAL, NONE) /* only when remembered */ \
        \
        X(KNOB, KNOB,      "knob",      STRING, REQUIRED, NONE)      /* the kernel file: "max_bytes" */ \
        X(KNOB, UNIT,      "unit",      STRING, REQUIRED, NONE)      /* PROTOCOL_UNIT_* */ \
        X(KNOB, SUPPORTED, "supported", BOOL,   REQUIRED, NONE)      /* this kernel has the file */ \
        X(KNOB, CURRENT,   "current",   U64,    NULLABLE, NONE)      /* null: unsupported or unread */ \
        X(KNOB, DESIRED,   "desired",   U64,    NULLABLE, NONE)      /* what is written, after the guard */ \
        X(KNOB, POLICY,    "policy",    U64,    NULLABLE, NONE)      /* what the policy wanted, before it */ \
        X(KNOB, REASON,    "reason",    STRING, REQUIRED, NONE) \
        X(KNOB, CLAMP,     "clamp",     STRING, NULLABLE, NONE)      /* the guard's words when desired != policy */ \
        X(KNOB, ORIGINAL,  "original",  OBJECT, NULLABLE, ORIGINAL)  /* null until the daemon changed it */ \
        X(KNOB, STATE,     "state",     STRING, REQUIRED, NONE)      /* PROTOCOL_STATE_* */ \
        X(KNOB, NOTE,      "note",      STRING, NULLABLE, NONE) \
        X(ORIGINAL, FILE,  "file",  STRING, REQUIRED, NONE)          /* "max_ratio_fine": the file saved */ \
        X(ORIGINAL, VALUE, "value", U64,    REQUIRED, NONE) \
        X(ORIGINAL, UNIT,  "unit",  STRING, REQUIRED, NONE) \
        \
        X(ATTRIBUTION, ENABLED,          "enabled",          BOOL,   REQUIRED, NONE) \
        X(ATTRIBUTION, REASON,           "reason",           STRING, NULLABLE, NONE)   /* null when enabled */ \
        X(ATTRIBUTION, TRACE_INSTANCE,   "trace_instance",   STRING, OPTIONAL, NONE)   /* when enabled */ \
        X(ATTRIBUTION, TASKSTATS,        "taskstats",        BOOL,   REQUIRED, NONE) \
        X(ATTRIBUTION, TASKSTATS_REASON, "taskstats_reason", STRING, NULLABLE, NONE) \
        X(ATTRIBUTION, DELAYACCT,        "delayacct",        BOOL,   REQUIRED, NONE) \
        X(ATTRIBUTION, PROC_SCAN,        "proc_scan",        BOOL,   REQUIRED, NONE) \
        X(ATTRIBUTION, PROC_SCAN_REASON, "proc_scan_reason", STRING, OPTIONAL, NONE) \
        X(ATTRIBUTION, PROC_SCAN_VIA_TASKSTATS, "proc_scan_via_taskstats", U64, REQUIRED, NONE) /* /proc/<pid>/io refused */ \
        X(ATTRIBUTION, PROC_SCAN_UNREADABLE,    "proc_scan_unreadable",    U64, REQUIRED, NONE) /* ... and taskstats too */ \
        X(ATTRIBUTION, COUNTERS,         "counters",         OBJECT, REQUIRED, COUNTERS) \
        X(TOP_ATTRIBUTION, ELAPSED_USEC,     "elapsed_usec",     U64,    REQUIRED, NONE) \
        X(TOP_ATTRIBUTION, TICK,             "tick",             OBJECT, REQUIRED, COUNTERS) \
        X(TOP_ATTRIBUTION, SCAN_EVERY_TICKS, "scan_every_ticks", U64,    REQUIRED, NONE) \
        X(TOP_ATTRIBUTION, WINDOW_USEC,      "window_usec",      U64,    REQUIRED, NONE)   /* the lists' span */ \
        \
        X(COUNTERS, EVENTS,          "events",          U64, REQUIRED, NONE) \
        X(COUNTERS, LOST_KERNEL,     "lost_kernel",     U64, REQUIRED, NONE) \
        X(COUNTERS, LOST_MARKERS,    "lost_markers",    U64, REQUIRED, NONE) \
        X(COUNTERS, DROPPED_TASKS,   "dropped_tasks",   U64, REQUIRED, NONE) \
        X(COUNTERS, DROPPED_DEVICES, "dropped_devices", U64, REQUIRED, NONE) \
        X(COUNTERS, BAD_LINES,       "bad_lines",       U64, REQUIRED, NONE) \
        X(COUNTERS, BYTES_READ,      "bytes_read",      U64, REQUIRED, NONE) \
        X(COUNTERS, BUDGET_HITS,     "budget_hits",     U64, REQUIRED, NONE) \
        X(COUNTERS, PAUSES,          "pauses",          U64, REQUIRED, NONE)   /* throttled writers' sleeps */ \
        X(COUNTERS, PAUSE_MS,        "pause_ms",        U64, REQUIRED, NONE)   /* and their length */ \
        \
        X(HISTORY_STATUS, MINUTES,      "minutes",      U64, REQUIRED, NONE) \
        X(HISTORY_STATUS, TICKS,        "ticks",        U64, REQUIRED, NONE) \
        X(HISTORY_STATUS, DEVICES,      "devices",      U64, REQUIRED, NONE) \
        X(HISTORY_STATUS, MEMORY_BYTES, "memory_bytes", U64, REQUIRED, NONE) \
        \
        X(HOTPLUG, ENABLED, "enabled", BOOL,   REQUIRED, NONE) \
        X(HOTPLUG, REASON,  "reason",  STRING, OPTIONAL, NONE)       /* when not enabled */ \
        X(HOTPLUG, EVENTS,  "events",  U64,    REQUIRED, NONE) \
        \
        X(DEVICES, DEVICES, "devices", OBJECT_ARRAY, REQUIRED, DEVICE)   /* streamed, in bdi order */ \
        \
        X(DEVICE, BDI,                    "bdi",                    STRING,       REQUIRED, NONE) \
        X(DEVICE, HAS_DEVNUM,             "has_devnum",             BOOL,         REQUIRED, NONE) \
        X(DEVICE, MAJOR,                  "major",                  U64,          OPTIONAL, NONE)   /* with has_devnum */ \
        X(DEVICE, MINOR,                  "minor",                  U64,          OPTIONAL, NONE) \
        X(DEVICE, NAME,                   "name",                   STRING,       REQUIRED, NONE) \
        X(DEVICE, ALIAS,                  "alias",                  STRING,       OPTIONAL, NONE)   /* device-mapper name */ \
        X(DEVICE, FSTYPE,                 "fstype",                 STRING,       REQUIRED, NONE) \
        X(DEVICE, MOUNTS,                 "mounts",                 STRING_ARRAY, REQUIRED, NONE) \
        X(DEVICE, MODEL,                  "model",                  STRING,       REQUIRED, NONE) \
        X(DEVICE, TRAITS,                 "traits",                 STRING_ARRAY, REQUIRED, NONE) \
        X(DEVICE, KNOBS,                  "knobs",                  OBJECT,       REQUIRED, BDI_KNOBS) \
        X(DEVICE, SOURCE,                 "source",                 STRING,       REQUIRED, NONE) \
        X(DEVICE, DIRTY_BYTES,            "dirty_bytes",            U64,          REQUIRED, NONE) \
        X(DEVICE, WRITEBACK_BYTES,        "writeback_bytes",        U64,          REQUIRED, NONE) \
        X(DEVICE, THRESH_BYTES,           "thresh_bytes",           U64,          REQUIRED, NONE) \
        X(DEVICE, DIRTIED_TOTAL_BYTES,    "dirtied_total_bytes",    U64,          REQUIRED, NONE) \
        X(DEVICE, WRITTEN_TOTAL_BYTES,    "written_total_bytes",    U64,          REQUIRED, NONE) \
        X(DEVICE, KERNEL_BW_BYTES_PER_S,  "kernel_bw_bytes_per_s",  U64,          REQUIRED, NONE) \
        X(DEVICE, WB_BW_BYTES_PER_S,      "wb_bw_bytes_per_s",      U64,          REQUIRED, NONE) \
        X(DEVICE, WRITE_BW_BYTES_PER_S,   "write_bw_bytes_per_s",   U64,          REQUIRED, NONE) \
        X(DEVICE, DIRTY_RATE_BYTES_PER_S, "dirty_rate_bytes_per_s", U64,          REQUIRED, NONE) \
        X(DEVICE, BACKLOG_BYTES,          "backlog_bytes",          U64,          REQUIRED, NONE) \
        X(DEVICE, BACKLOG_S,              "backlog_s",              DOUBLE,       REQUIRED, NONE) \
        X(DEVICE, SEEN_BEFORE,            "seen_before",            BOOL,         REQUIRED, NONE) \
        X(DEVICE, TUNING,                 "tuning",                 OBJECT,       OPTIONAL, DEVICE_TUNING) /* absent in old daemons' top */ \
        X(DEVICE, THROTTLE,               "throttle",               OBJECT,       OPTIONAL, THROTTLE)      /* top only */ \
        \
        X(BDI_KNOBS, MIN_RATIO,      "min_ratio",      U64, OPTIONAL, NONE)   /* each: when the kernel has it */ \
        X(BDI_KNOBS, MAX_RATIO,      "max_ratio",      U64, OPTIONAL, NONE) \
        X(BDI_KNOBS, MIN_RATIO_FINE, "min_ratio_fine", U64, OPTIONAL, NONE) \
        X(BDI_KNOBS, MAX_RATIO_FINE, "max_ratio_fine", U64, OPTIONAL, NONE) \
        X(BDI_KNOBS, MIN_BYTES,      "min_bytes",      U64, OPTIONAL, NONE) \
        X(BDI_KNOBS, MAX_BYTES,      "max_bytes",      U64, OPTIONAL, NONE) \
        X(BDI_KNOBS, STRICT_LIMIT,   "strict_limit",   U64, OPTIONAL, NONE) \
        \
        X(THROTTLE, EVENTS,                      "events",                      U64,    REQUIRED, NONE) \
        X(THROTTLE, PAUSES,                      "pauses",                      U64,    REQUIRED, NONE) \
        X(THROTTLE, PAUSE_MS_PER_S,              "pause_ms_per_s",              DOUBLE, REQUIRED, NONE) \
        X(THROTTLE, MAX_PAUSE_MS,                "max_pause_ms",                U64,    REQUIRED, NONE) \
        X(THROTTLE, N_TASKS,                     "n_tasks",                     U64,    REQUIRED, NONE) \
        X(THROTTLE, TASK_RATELIMIT_BYTES_PER_S,  "task_ratelimit_bytes_per_s",  U64,    REQUIRED, NONE) \
        X(THROTTLE, DIRTY_RATELIMIT_BYTES_PER_S, "dirty_ratelimit_bytes_per_s", U64,    REQUIRED, NONE) \
        X(THROTTLE, LIMIT_BYTES,                 "limit_bytes",                 U64,    REQUIRED, NONE) \
        X(THROTTLE, WB_SETPOINT_BYTES,           "wb_setpoint_bytes",           U64,    REQUIRED, NONE) \
        \
        X(SHOW, DEVICE, "device", OBJECT, REQUIRED, DEVICE) \
        \
        X(EXPLAIN, BDI,    "bdi",    STRING, REQUIRED, NONE) \
        X(EXPLAIN, TEXT,   "text",   STRING, REQUIRED, NONE)        /* sentences, one line each */ \
        X(EXPLAIN, DEVICE, "device", OBJECT, REQUIRED, DEVICE)      /* with its tuning */ \
        X(EXPLAIN, TUNING, "tuning", OBJECT, REQUIRED, TUNING)      /* the global knobs */ \
        \
        X(TOP, TIME_USEC,   "time_usec",   U64,          REQUIRED, NONE) \
        X(TOP, TICK_MS,     "tick_ms",     U64,          REQUIRED, NONE) \
        X(TOP, TICKS,       "ticks",       U64,          REQUIRED, NONE) \
        X(TOP, MODE,        "mode",        STRING,       REQUIRED, NONE) \
        X(TOP, GLOBAL,      "global",      OBJECT,       REQUIRED, GLOBAL) \
        X(TOP, ATTRIBUTION, "attribution", OBJECT,       REQUIRED, TOP_ATTRIBUTION) \
        X(TOP, PAUSED,      "paused",      OBJECT_ARRAY, REQUIRED, PAUSED) \
        X(TOP, DIRTIERS,    "dirtiers",    OBJECT_ARRAY, REQUIRED, DIRTIER) \
        X(TOP, DEVICES,     "devices",     OBJECT_ARRAY, REQUIRED, DEVICE)     /* streamed */ \
        \
        X(TASK_IO, TASK_WRITE_BYTES,                 "task_write_bytes",                 U64,    OPTIONAL, NONE) \
        X(TASK_IO, TASK_CANCELLED_WRITE_BYTES,       "task_cancelled_write_bytes",       U64,    OPTIONAL, NONE) \
        X(TASK_IO, TASK_WRITE_BYTES_PER_S,           "task_write_bytes_per_s",           U64,    OPTIONAL, NONE) \
        X(TASK_IO, TASK_CANCELLED_WRITE_BYTES_PER_S, "task_cancelled_write_bytes_per_s", U64,    OPTIONAL, NONE) \
        X(TASK_IO, BLKIO_DELAY_MS_PER_S,             "blkio_delay_ms_per_s",             DOUBLE, OPTIONAL, NONE) \
        X(PAUSED, PID,                        "pid",                        U64,    REQUIRED, NONE) \
        X(PAUSED, COMM,                       "comm",                       STRING, REQUIRED, NONE) \
        X(PAUSED, BDI,                        "bdi",                        STRING, REQUIRED, NONE) \
        X(PAUSED, NAME,                       "name",                       STRING, REQUIRED, NONE) \
        X(PAUSED, PAUSES,                     "pauses",                     U64,    REQUIRED, NONE) \
        X(PAUSED, PAUSE_MS,                   "pause_ms",                   U64,    REQUIRED, NONE) \
        X(PAUSED, MAX_PAUSE_MS,               "max_pause_ms",               U64,    REQUIRED, NONE) \
        X(PAUSED, PAUSE_MS_PER_S,             "pause_ms_per_s",             DOUBLE, REQUIRED, NONE) \
        X(PAUSED, TASK_RATELIMIT_BYTES_PER_S, "task_ratelimit_bytes_per_s", U64,    REQUIRED, NONE) \
        X(PAUSED, DIRTY_BYTES,                "dirty_bytes",                U64,    REQUIRED, NONE) \
        X(PAUSED, LIMIT_BYTES,                "limit_bytes",                U64,    REQUIRED, NONE) \
        X(PAUSED, WB_DIRTY_BYTES,             "wb_dirty_bytes",             U64,    REQUIRED, NONE) \
        X(PAUSED, WB_SETPOINT_BYTES,          "wb_setpoint_bytes",          U64,    REQUIRED, NONE) \
        X(PAUSED, CGROUP_INO,                 "cgroup_ino",                 U64,    REQUIRED, NONE) \
        X(DIRTIER, PID,                         "pid",                         U64,    REQUIRED, NONE) \
        X(DIRTIER, COMM,                        "comm",                        STRING, REQUIRED, NONE) \
        X(DIRTIER, WRITE_BYTES_PER_S,           "write_bytes_per_s",           U64,    REQUIRED, NONE) \
        X(DIRTIER, CANCELLED_WRITE_BYTES_PER_S, "cancelled_write_bytes_per_s", U64,    REQUIRED, NONE) \
        X(DIRTIER, WRITE_BYTES,                 "write_bytes",                 U64,    REQUIRED, NONE) \
        X(DIRTIER, BDI,                         "bdi",                         STRING, OPTIONAL, NONE)   /* when throttled */ \
        X(DIRTIER, NAME,                        "name",                        STRING, OPTIONAL, NONE) \
        X(DIRTIER, PAUSE_MS_PER_S,              "pause_ms_per_s",              DOUBLE, OPTIONAL, NONE) \
        \
        X(HISTORY, TICK_MS,  "tick_ms",  U64,        REQUIRED, NONE) \
        X(HISTORY, MINUTES,  "minutes",  U64,        REQUIRED, NONE) \
        X(HISTORY, BDI,      "bdi",      STRING,     NULLABLE, NONE)   /* null: every device */ \
        X(HISTORY, CAPACITY, "capacity", U64,        REQUIRED, NONE) \
        X(HISTORY, GLOBAL,   "global",   OBJECT,     REQUIRED, HISTORY_GLOBAL) \
        X(HISTORY, DEVICES,  "devices",  OBJECT_MAP, REQUIRED, HISTORY_DEVICE)   /* by bdi, streamed */ \
        X(HISTORY_GLOBAL, REALTIME_USEC,           "realtime_usec",           U64_ARRAY, REQUIRED, NONE)   /* wall clock */ \
        X(HISTORY_GLOBAL, TIME_USEC,               "time_usec",               U64_ARRAY, REQUIRED, NONE)   /* monotonic */ \
        X(HISTORY_GLOBAL, DIRTY_BYTES,             "dirty_bytes",             U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_GLOBAL, WRITEBACK_BYTES,         "writeback_bytes",         U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_GLOBAL, DIRTY_THRESH_BYTES,      "dirty_thresh_bytes",      U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_GLOBAL, BACKGROUND_THRESH_BYTES, "background_thresh_bytes", U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, REALTIME_USEC,          "realtime_usec",          U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, TIME_USEC,              "time_usec",              U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, DIRTY_BYTES,            "dirty_bytes",            U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, WRITEBACK_BYTES,        "writeback_bytes",        U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, THRESH_BYTES,           "thresh_bytes",           U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, WRITE_BW_BYTES_PER_S,   "write_bw_bytes_per_s",   U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, DIRTY_RATE_BYTES_PER_S, "dirty_rate_bytes_per_s", U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_DEVICE, MAX_BYTES,              "max_bytes",              U64_ARRAY, REQUIRED, NONE) \
        X(HISTORY_CSV, TICK_MS, "tick_ms", U64,    REQUIRED, NONE) \
        X(HISTORY_CSV, MINUTES, "minutes", U64,    REQUIRED, NONE) \
        X(HISTORY_CSV, BDI,     "bdi",     STRING, NULLABLE, NONE) \
        X(HISTORY_CSV, CSV,     "csv",     STRING, REQUIRED, NONE)     /* a header row, then one row per tick */ \
        \
        X(RESTORE, MODE, "mode", STRING, REQUIRED, NONE) \
        \
        X(METRICS, TEXT, "text", STRING_ARRAY, REQUIRED, NONE)   /* the exposition in pieces of whole lines, to join; streamed */

/* history --csv's columns, by name in its header row: the global ones always, the device's with one. */
#define PROTOCOL_CSV_COLUMNS(X) \
        X(REALTIME_USEC,                  "realtime_usec") \
        X(TIME_USEC,                      "time_usec") \
        X(GLOBAL_DIRTY_BYTES,             "global_dirty_bytes") \
        X(GLOBAL_WRITEBACK_BYTES,         "global_writeback_bytes") \
        X(GLOBAL_DIRTY_THRESH_BYTES,      "global_dirty_thresh_bytes") \
        X(GLOBAL_BACKGROUND_THRESH_BYTES, "global_background_thresh_bytes") \
        X(DIRTY_BYTES,                    "dirty_bytes") \
        X(WRITEBACK_BYTES,                "writeback_bytes") \
        X(THRESH_BYTES,                   "thresh_bytes") \
        X(WRITE_BW_BYTES_PER_S,           "write_bw_bytes_per_s") \
        X(DIRTY_RATE_BYTES_PER_S,         "dirty_rate_bytes_per_s") \
        X(MAX_BYTES,                      "max_bytes")
#define PROTOCOL_CSV_GLOBAL_COLUMNS 6   /* the first six; a device adds the rest */

typedef enum protocol_kind {
#define PROTOCOL_KIND_ENUM(id, name, base) PK_##id,
        PROTOCOL_KINDS(PROTOCOL_KIND_ENUM)
#undef PROTOCOL_KIND_ENUM
        _PK_MAX,
} protocol_kind;

typedef enum protocol_field {
#define PROTOCOL_FIELD_ENUM(kind, id, name, type, presence, child) PF_##kind##_##id,
        PROTOCOL_FIELDS(PROTOCOL_FIELD_ENUM)
#undef PROTOCOL_FIELD_ENUM
        _PF_MAX,
} protocol_field;

typedef enum protocol_csv_column {
#define PROTOCOL_CSV_ENUM(id, name) PC_##id,
        PROTOCOL_CSV_COLUMNS(PROTOCOL_CSV_ENUM)
#undef PROTOCOL_CSV_ENUM
        _PC_MAX,
} protocol_csv_column;

typedef enum protocol_type {
        PROTO_U64, PROTO_DOUBLE, PROTO_BOOL, PROTO_STRING, PROTO_OBJECT,
        PROTO_U64_ARRAY, PROTO_STRING_ARRAY, PROTO_OBJECT_ARRAY, PROTO_OBJECT_MAP,
} protocol_type;

typedef enum protocol_presence {
        PROTO_REQUIRED, PROTO_NULLABLE, PROTO_OPTIONAL,
} protocol_presence;

typedef struct protocol_field_info {
        protocol_kind kind;        /* the object it belongs to */
        const char *name;          /* its key */
        protocol_type type;
        protocol_presence presence;
        protocol_kind child;       /* of an object, object array or map; PK_NONE otherwise */
} protocol_field_info;

extern const protocol_field_info protocol_fields[_PF_MAX];
const char *protocol_kind_name(protocol_kind k);
/* The field of an object kind with that key (a name read from another table), or -ENOENT. */
int proto_field_named(protocol_kind kind, const char *name);
protocol_kind protocol_kind_base(protocol_kind k);   /* PK_NONE if it has none */
const char *protocol_type_name(protocol_type t);
const char *protocol_presence_name(protocol_presence p);
const char *protocol_csv_column_name(protocol_csv_column c);
static inline const char *protocol_name(protocol_field f) { return protocol_fields[f].name; }

/* --- the daemon: building replies through the table ------------------------------------------ */

/* Add field f to o (an object of f's kind). A NULL string or object is JSON null (for NULLABLE
 * fields). A value of another type than f's is logged as a bug (tests/test-protocol.c checks every
 * reply strictly). proto_add takes v: an object, an array, or NULL. */
void proto_add_u64(json_object *o, protocol_field f, uint64_t v);
void proto_add_double(json_object *o, protocol_field f, double v);
void proto_add_bool(json_object *o, protocol_field f, bool v);
void proto_add_string(json_object *o, protocol_field f, const char *s);
void proto_add_string_len(json_object *o, protocol_field f, const char *s, size_t len);
void proto_add_null(json_object *o, protocol_field f);
void proto_add(json_object *o, protocol_field f, json_object *v);
/* How many values of the wrong type were built so far (tests want 0). */
unsigned protocol_build_errors(void);

/* --- the client: reading replies through the table ------------------------------------------- */

/* The member for f, or NULL if it is absent or null. */
json_object *proto_get(json_object *o, protocol_field f);
bool proto_has(json_object *o, protocol_field f);
/* Total readers: never crash, whatever o holds. 0 / 0.0 / false / "" when the member is absent,
 * null or of another type (protocol_check() says which of these a reply may have). */
uint64_t proto_u64(json_object *o, protocol_field f);
double proto_double(json_object *o, protocol_field f);     /* finite */
bool proto_bool(json_object *o, protocol_field f);
const char *proto_str(json_object *o, protocol_field f);
/* The same for any JSON value (array elements). */
uint64_t proto_value_u64(json_object *v);
const char *proto_value_str(json_object *v);

/* Check o against kind: every REQUIRED and NULLABLE field present, every field of the right type,
 * recursively. strict: also refuse keys the table does not list (the tests check the daemon's
 * replies so; clients must not, since newer daemons add fields). 0, or -EBADMSG with the first
 * problem in error, naming the field by its path: "devices[3].knobs: an object expected, got 5". */
int protocol_check(json_object *o, protocol_kind kind, bool strict, char *error, size_t size);

/* The result kind of a verb's reply (history: by its "format"); PK_NONE for an unknown verb. */
protocol_kind protocol_result_kind(const char *verb, bool csv);

/* Every field as "kind.name type presence [child]", one per line, the form tests/data/protocol-v<N>.txt
 * records. */
int protocol_dump(FILE *f);
