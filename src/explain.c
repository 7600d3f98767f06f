/* Tuning decisions for people and scripts: original, current and desired value of each knob, and why. */
#include "explain.h"
#include "util.h"

#include <inttypes.h>
#include <string.h>

/* The value the kernel has now, as the knob file holds it. */
static uint64_t current_global(const global_state *g, knob_id k) {
        switch (k) {
        case KNOB_DIRTY_BYTES: return g->knobs.dirty_bytes;
        case KNOB_DIRTY_BACKGROUND_BYTES: return g->knobs.dirty_background_bytes;
        case KNOB_DIRTY_WRITEBACK_CENTISECS: return g->knobs.dirty_writeback_centisecs;
        case KNOB_DIRTY_EXPIRE_CENTISECS: return g->knobs.dirty_expire_centisecs;
        default: return 0;
        }
}

static uint64_t current_device(const bdi_device *d, knob_id k) {
        switch (k) {
        case KNOB_MIN_BYTES: return d->knobs.min_bytes;
        case KNOB_MAX_BYTES: return d->knobs.max_bytes;
        case KNOB_STRICT_LIMIT: return d->knobs.strict_limit;
        default: return 0;
        }
}

static bool knob_is_bytes(knob_id k) {
        return k == KNOB_DIRTY_BYTES || k == KNOB_DIRTY_BACKGROUND_BYTES || k == KNOB_MIN_BYTES || k == KNOB_MAX_BYTES;
}

static json_object *knob_json(const char *bdi, knob_id k, uint64_t current, const knob_decision *kd,
                              const actuator *a) {
        json_object *o = json_object_new_object();
        char original[64];

        json_object_object_add(o, "current", json_object_new_uint64(current));
        if (kd && kd->wanted) {
                json_object_object_add(o, "desired", json_object_new_uint64(kd->value));
                json_object_object_add(o, "reason", json_object_new_string(kd->reason));
        } else {
                json_object_object_add(o, "desired", NULL);
                json_object_object_add(o, "reason", json_object_new_string("no opinion: left as the kernel has it"));
        }
        if (a && actuator_original(a, bdi, k, original, sizeof original))
                json_object_object_add(o, "original", json_object_new_string(original));
        else
                json_object_object_add(o, "original", NULL);
        return o;
}

json_object *explain_global_json(const sample *s, const decision *d, const actuator *a) {
        json_object *o = json_object_new_object();

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                json_object_object_add(o, knob_name(k), knob_json(NULL, k, current_global(&s->global, k),
                                                                   d ? &d->global[k] : NULL, a));
        return o;
}

const device_decision *explain_find_decision(const decision *d, const char *bdi) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_devices; i++)
                if (strcmp(d->devices[i].bdi, bdi) == 0)
                        return &d->devices[i];
        return NULL;
}

json_object *explain_device_json(const bdi_device *dev, const device_decision *dd, const actuator *a) {
        json_object *o = json_object_new_object(), *knobs = json_object_new_object();

        json_object_object_add(o, "managed", json_object_new_boolean(dd && dd->managed));
        json_object_object_add(o, "active", json_object_new_boolean(dd && dd->active));
        json_object_object_add(o, "bw_estimate_bytes_per_s", json_object_new_uint64(dd ? dd->bw_bytes_per_s : 0));
        for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++)
                json_object_object_add(knobs, knob_name(k),
                                       knob_json(dev->bdi, k, current_device(dev, k),
                                                 dd ? &dd->knobs[k - KNOB_DEVICE_FIRST] : NULL, a));
        json_object_object_add(o, "knobs", knobs);
        return o;
}

static void format_value(char *buf, size_t size, knob_id k, uint64_t v) {
        if (knob_is_bytes(k))
                format_bytes(buf, size, v);
        else
                snprintf(buf, size, "%" PRIu64, v);
}

static void explain_knob(FILE *f, const char *bdi, knob_id k, uint64_t current, const knob_decision *kd,
                         const actuator *a) {
        char cur[32], want[32], orig[64];
        bool have_orig = a && actuator_original(a, bdi, k, orig, sizeof orig);

        format_value(cur, sizeof cur, k, current);
        if (!kd || !kd->wanted) {
                fprintf(f, "  %s is %s: the policy has no opinion, so it stays %s.\n", knob_name(k), cur,
                        have_orig ? "at its original value" : "as the kernel has it");
                return;
        }
        format_value(want, sizeof want, k, kd->value);
        fprintf(f, "  %s should be %s because of %s; it is %s%s%s.\n", knob_name(k), want, kd->reason, cur,
                have_orig ? ", originally " : "", have_orig ? orig : "");
}

int explain_device_text(FILE *f, const sample *s, const decision *d, const bdi_device *dev,
                        const device_decision *dd, const actuator *a, bool applying) {
        char backlog[16], bw[16], thresh[16];

        fprintf(f, "%s%s%s (%s%s%s%s%s):\n", dev->name, dev->alias[0] ? " " : "", dev->alias, dev->bdi,
                dev->n_mounts ? ", " : "", dev->n_mounts ? dev->mounts[0] : "", dev->fstype[0] ? ", " : "", dev->fstype);
        fprintf(f, "  It holds %s of dirty and writeback data against a threshold of %s.\n",
                format_bytes(backlog, sizeof backlog, dev->backlog_bytes),
                format_bytes(thresh, sizeof thresh, dev->thresh_bytes));
        if (!dd || !dd->managed) {
                fprintf(f, "  It is not managed: a [device] section says manage = no, so wbtuned never touches it.\n");
                return 0;
        }
        fprintf(f, "  Its write bandwidth is taken as %s/s; it is %s.\n",
                format_bytes(bw, sizeof bw, dd->bw_bytes_per_s),
                dd->active ? "active (it holds or moves data)" : "idle");
        for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++)
                explain_knob(f, dev->bdi, k, current_device(dev, k), &dd->knobs[k - KNOB_DEVICE_FIRST], a);
        fprintf(f, "  The global limits:\n");
        for (knob_id k = 0; k < KNOB_DIRTY_WRITEBACK_CENTISECS; k++)
                explain_knob(f, NULL, k, current_global(&s->global, k), d ? &d->global[k] : NULL, a);
        if (!applying)
                fprintf(f, "  Nothing is written: the daemon runs in observe or dry-run mode.\n");
        return 0;
}
