/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal events a person may want to find again, each with its MESSAGE_ID (systemd/wbtuned.catalog
 * says what each means and what to do): journalctl -u wbtuned MESSAGE_ID=<id>. */
#pragma once

#include <stdarg.h>

typedef enum event_kind {
        EVENT_KNOB_CHANGED,         /* the daemon wrote a knob */
        EVENT_KNOB_RESTORED,        /* ... gave it back its original */
        EVENT_GUARD_HOLD,           /* the safety guard started holding a knob away from the policy's value */
        EVENT_OVERRIDE,             /* someone else set a knob the daemon had set: left alone */
        EVENT_UNWRITABLE,           /* the kernel refuses writes to a knob */
        EVENT_FEATURE_MISSING,      /* this kernel lacks a file the policy wanted */
        EVENT_SAVED_REFUSED,        /* the saved file of a previous run is not trusted */
        EVENT_FIGURES_UNTRUSTED,    /* the per-device figures miss dirty data: limits left alone */
        EVENT_OBSERVING_ONLY,       /* the daemon stopped writing knobs for good (a refused global knob, a container) */
        _EVENT_MAX,
} event_kind;

typedef struct event_info {
        const char *message_id;     /* 128 bits in hex, as journald wants them */
        const char *name;           /* for the catalog and the docs: "knob-changed" */
} event_info;

extern const event_info event_table[_EVENT_MAX];

/* Log an event: MESSAGE_ID=, WBTUNED_EVENT=, and for a device WBTUNED_DEVICE=<bdi> and
 * WBTUNED_DEVICE_NAME=<name> (bdi and name may be NULL), plus extra "KEY=value" fields (NULL-terminated
 * list, may be NULL). */
void log_event(event_kind kind, int level, const char *bdi, const char *name, const char *const *extra,
               const char *format, ...) __attribute__((format(printf, 6, 7)));
