/* Tuning decisions for people and scripts: original, current and desired value of each knob, and why. */
#include "escape.h"
#include "explain.h"
#include "protocol.h"
#include "report.h"
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

static const char *knob_unit(knob_id k) {
        if (knob_is_bytes(k))
                return PROTOCOL_UNIT_BYTES;
        return k == KNOB_STRICT_LIMIT ? PROTOCOL_UNIT_BOOL : PROTOCOL_UNIT_CENTISECS;
}

/* Whether the kernel has the device knob's file. */
static bool device_supported(const bdi_device *d, knob_id k) {
        switch (k) {
        case KNOB_MIN_BYTES: return d->knobs.have & BDI_HAVE_MIN_BYTES;
        case KNOB_MAX_BYTES: return d->knobs.have & BDI_HAVE_MAX_BYTES;
        case KNOB_STRICT_LIMIT: return d->knobs.have & BDI_HAVE_STRICT_LIMIT;
        default: return false;
        }
}

/* The protocol's knob object, with what today's decision and actuator know: there is no guard between
 * the policy and the writes yet (desired = policy, clamp null), and no override or unwritable state. */
static json_object *knob_json(const char *bdi, knob_id k, bool supported, uint64_t current, const knob_decision *kd,
                              bool excluded, const actuator *a) {
        char note[128];
        report_knob o = {
                .knob = knob_name(k),
                .unit = knob_unit(k),
                .supported = supported,
                .have_current = supported,
                .current = current,
        };

        if (!supported) {
                o.state = PROTOCOL_STATE_UNSUPPORTED;
                o.reason = "this kernel has no such file";
                snprintf(note, sizeof note, "no /sys/class/bdi/%s/%s", bdi ? bdi : "", knob_name(k));
                o.note = note;
        } else if (excluded) {
                o.state = PROTOCOL_STATE_EXCLUDED;
                o.reason = "not managed: a [device] section says manage = no";
        } else if (kd && kd->wanted) {
                o.state = PROTOCOL_STATE_MANAGED;
                o.have_desired = o.have_policy = true;
                o.desired = o.policy = kd->value;
                o.reason = kd->reason;
        } else {
                o.state = PROTOCOL_STATE_NO_OPINION;
                o.reason = "no opinion: left as the kernel has it";
        }
        if (a)
                o.have_original = actuator_original_value(a, bdi, k, &o.original_file, &o.original_value,
                                                          &o.original_unit);
        return report_knob_json(&o);
}

json_object *explain_global_json(const sample *s, const decision *d, const actuator *a) {
        json_object *knobs = json_object_new_array();

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                json_object_array_add(knobs, knob_json(NULL, k, true, current_global(&s->global, k),
                                                       d ? &d->global[k] : NULL, false, a));
        return report_tuning(knobs);
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
        json_object *knobs = json_object_new_array();

        for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++)
                json_object_array_add(knobs, knob_json(dev->bdi, k, device_supported(dev, k), current_device(dev, k),
                                                       dd ? &dd->knobs[k - KNOB_DEVICE_FIRST] : NULL,
                                                       dd && !dd->managed, a));
        return report_device_tuning(dd && dd->managed, dd && dd->active, dd ? dd->bw_bytes_per_s : 0, knobs);
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

        /* names come from mountinfo, FUSE and sysfs: escaped, so none can forge a line or move the cursor */
        _cleanup_free_ char *name = escape_text_alloc(dev->name), *alias = escape_text_alloc(dev->alias),
                *mount = escape_text_alloc(dev->n_mounts ? dev->mounts[0] : ""), *fstype = escape_text_alloc(dev->fstype);
        fprintf(f, "%s%s%s (%s%s%s%s%s):\n", name, alias[0] ? " " : "", alias, dev->bdi,
                mount[0] ? ", " : "", mount, fstype[0] ? ", " : "", fstype);
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
