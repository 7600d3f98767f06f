/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal events a person may want to find again, each with its MESSAGE_ID. */
#include "events.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

const event_info event_table[_EVENT_MAX] = {
        [EVENT_KNOB_CHANGED]      = { "14516f4e70c94cddac6d212e60d9b76c", "knob-changed" },
        [EVENT_KNOB_RESTORED]     = { "71399a18eeef418ab05e59b8db30613c", "knob-restored" },
        [EVENT_GUARD_HOLD]        = { "f49a26bbf64447a79b0b14ee3eb003e4", "guard-hold" },
        [EVENT_OVERRIDE]          = { "fed78d7245fd4b5c939fab47de72694c", "override" },
        [EVENT_UNWRITABLE]        = { "6ed4b451cf034a75b68b1cc2d267a430", "unwritable" },
        [EVENT_FEATURE_MISSING]   = { "cbe005a343a648fe8597552ffaa1393a", "feature-missing" },
        [EVENT_SAVED_REFUSED]     = { "f9ebca22a15c46d882902ba61f88f571", "saved-refused" },
        [EVENT_FIGURES_UNTRUSTED] = { "e27d121e1d5b4161bad00442c710ff6a", "figures-untrusted" },
        [EVENT_OBSERVING_ONLY]    = { "8c0a8b416ca64c009caa94485a9bb358", "observing-only" },
};

void log_event(event_kind kind, int level, const char *bdi, const char *name, const char *const *extra,
               const char *format, ...) {
        char f_id[64], f_event[64], f_dev[96], f_name[96], *msg = NULL;
        const char *fields[16];
        size_t n = 0;
        va_list ap;

        snprintf(f_id, sizeof f_id, "MESSAGE_ID=%s", event_table[kind].message_id);
        snprintf(f_event, sizeof f_event, "WBTUNED_EVENT=%s", event_table[kind].name);
        fields[n++] = f_id;
        fields[n++] = f_event;
        if (bdi) {
                snprintf(f_dev, sizeof f_dev, "WBTUNED_DEVICE=%s", bdi);
                fields[n++] = f_dev;
        }
        if (name && *name) {
                snprintf(f_name, sizeof f_name, "WBTUNED_DEVICE_NAME=%s", name);
                fields[n++] = f_name;
        }
        for (size_t i = 0; extra && extra[i] && n < ELEMENTSOF(fields) - 1; i++)
                fields[n++] = extra[i];
        fields[n] = NULL;

        va_start(ap, format);
        if (vasprintf(&msg, format, ap) < 0)
                msg = NULL;
        va_end(ap);
        log_struct_internal(level, fields, "%s", msg ? msg : format);
        free(msg);
}
