/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tuning decisions for people and scripts: for each knob its current, desired and original value, who
 * owns it, and why. */
#include "escape.h"
#include "ctl-common.h"
#include "explain.h"
#include "protocol.h"
#include "report.h"
#include "util.h"

#include <inttypes.h>
#include <string.h>

/* What explain says of one knob. */
typedef struct knob_view {
        knob_id knob;
        bool supported;
        uint64_t current;
        const knob_decision *kd;        /* NULL or not wanted: no opinion */
        const knob_owner *owner;        /* NULL: never touched */
        bool as_ratio;                  /* a share of the limit on a kernel without its own file: only *_ratio */
        uint64_t ratio_percent;         /* what that file holds */
        const char *state;              /* "managed", "no-opinion", "override", "unwritable", "unsupported", "excluded" */
        char note[160];
} knob_view;

/* The value the kernel has now, in the knob's own unit (the knob table says how to read it). */
static uint64_t current_global(const global_state *g, knob_id k) {
        uint64_t v = 0;

        (void) knob_reading_value(k, &g->knobs.k[k], g->dirty_thresh_bytes, &v);
        return v;
}

/* A device knob now, in its own unit; false if this kernel has no file for it. */
static bool current_device(const bdi_device *d, uint64_t thresh_bytes, knob_id k, uint64_t *ret) {
        return knob_reading_value(k, &d->knobs.k[k - KNOB_DEVICE_FIRST], thresh_bytes, ret);
}

static void view_state(knob_view *v, bool managed, int refused_global) {
        char theirs[64];

        if (!managed) {
                v->state = PROTOCOL_STATE_EXCLUDED;
                snprintf(v->note, sizeof v->note, "a [device] section says manage = no");
        } else if (!v->supported) {
                v->state = PROTOCOL_STATE_UNSUPPORTED;
                snprintf(v->note, sizeof v->note, "this kernel has no %s (it came in Linux %s)", knob_name(v->knob),
                         knob_get(v->knob)->since);
        } else if (v->owner && v->owner->overridden) {
                v->state = PROTOCOL_STATE_OVERRIDE;
                snprintf(v->note, sizeof v->note, "set by hand to %s, left alone until `wbtunectl reload`",
                         knob_setting_to_string(v->knob, v->owner->theirs, theirs, sizeof theirs));
        } else if ((v->owner && v->owner->refused) || refused_global) {
                v->state = PROTOCOL_STATE_UNWRITABLE;
                snprintf(v->note, sizeof v->note, "the kernel refuses writes (%s)",
                         strerror(-(v->owner && v->owner->refused ? v->owner->refused : refused_global)));
        } else if ((v->kd && v->kd->wanted) || (v->owner && v->owner->written))
                v->state = PROTOCOL_STATE_MANAGED;
        else
                v->state = PROTOCOL_STATE_NO_OPINION;
}

static const char *unit_name(knob_unit u) {
        switch (u) {
        case KNOB_UNIT_BYTES: return PROTOCOL_UNIT_BYTES;
        case KNOB_UNIT_CENTISECS: return PROTOCOL_UNIT_CENTISECS;
        case KNOB_UNIT_BOOL: return PROTOCOL_UNIT_BOOL;
        case KNOB_UNIT_PERCENT: return PROTOCOL_UNIT_PERCENT;
        case KNOB_UNIT_PPM: return PROTOCOL_UNIT_PPM;
        default: return PROTOCOL_UNIT_BYTES;
        }
}

/* The protocol's knob object (doc/protocol.md). */
static json_object *knob_json(const knob_view *v) {
        bool wanted = v->kd && v->kd->wanted;
        report_knob o = {
                .knob = knob_name(v->knob),
                .unit = unit_name(knob_get(v->knob)->unit),
                .supported = v->supported,
                .have_current = v->supported,
                .current = v->current,
                .have_desired = wanted,
                .desired = wanted ? v->kd->value : 0,
                .have_policy = wanted,
                .policy = wanted ? v->kd->policy_value : 0,
                .reason = wanted ? v->kd->reason : "no opinion: left as the kernel has it",
                .clamp = wanted && v->kd->held ? v->kd->held_reason : NULL,
                .state = v->state,
                .note = v->note[0] ? v->note : NULL,
        };

        if (v->owner && v->owner->saved) {
                o.have_original = true;
                o.original_file = knob_form_file(v->knob, v->owner->original.form);
                o.original_unit = unit_name(knob_form_unit(v->knob, v->owner->original.form));
                o.original_value = v->owner->original.value;
        }
        return report_knob_json(&o);
}

static int global_refusal(const actuator *a) {
        int error = 0;

        if (a)
                (void) actuator_refused(a, NULL, &error);
        return error;
}

static knob_view global_view(const sample *s, const decision *d, const actuator *a, knob_id k) {
        knob_view v = { .knob = k, .supported = true, .current = current_global(&s->global, k),
                        .kd = d ? &d->global[k] : NULL, .owner = actuator_owner(a, NULL, k) };

        view_state(&v, true, global_refusal(a));
        return v;
}

static knob_view device_view(const bdi_device *dev, uint64_t thresh_bytes, const device_decision *dd,
                             const actuator *a, knob_id k) {
        knob_view v = { .knob = k, .kd = dd ? &dd->knobs[k - KNOB_DEVICE_FIRST] : NULL,
                        .owner = actuator_owner(a, dev->bdi, k) };

        v.supported = current_device(dev, thresh_bytes, k, &v.current);
        /* before 6.2 max_bytes is no file: name the one there is (explain must not show a file that is not) */
        if (v.supported && knob_get(k)->kind == KNOB_KIND_OF_LIMIT &&
            !knob_reading_has(&dev->knobs.k[k - KNOB_DEVICE_FIRST], KNOB_FORM_SELF) &&
            knob_reading_has(&dev->knobs.k[k - KNOB_DEVICE_FIRST], KNOB_FORM_RATIO)) {
                v.as_ratio = true;
                v.ratio_percent = dev->knobs.k[k - KNOB_DEVICE_FIRST].value[KNOB_FORM_RATIO];
        }
        view_state(&v, !dd || dd->managed, 0);
        return v;
}

json_object *explain_global_json(const sample *s, const decision *d, const actuator *a) {
        json_object *knobs = oom_check(json_object_new_array());

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                knob_view v = global_view(s, d, a, k);
                oom_check_add(json_object_array_add(knobs, knob_json(&v)));
        }
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

json_object *explain_device_json(const sample *s, const bdi_device *dev, const device_decision *dd, const actuator *a) {
        json_object *knobs = oom_check(json_object_new_array());

        for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++) {
                knob_view v = device_view(dev, s->global.dirty_thresh_bytes, dd, a, k);
                oom_check_add(json_object_array_add(knobs, knob_json(&v)));
        }
        json_object *o = report_device_tuning(dd && dd->managed, dd && dd->active, dd ? dd->bw_bytes_per_s : 0, knobs);

        if (dd && dd->managed) {
                /* the names are the protocol's: speed_source_to_string() spells PROTOCOL_BW_* */
                proto_add_string(o, PF_DEVICE_TUNING_BW_SOURCE, speed_source_to_string(dd->bw_source));
                if (dd->bw_source == SPEED_REMEMBERED)
                        proto_add_u64(o, PF_DEVICE_TUNING_BW_REMEMBERED_AGE_S, dd->remembered_age_s);
        }
        return o;
}

static void explain_knob(FILE *f, const knob_view *v) {
        char cur[80], bytes[32], want[32], policy[32], orig[64], file[32];
        bool have_orig = v->owner && v->owner->saved;
        const knob_decision *kd = v->kd;
        const char *name = knob_name(v->knob);

        if (have_orig)
                knob_setting_to_string(v->knob, v->owner->original, orig, sizeof orig);
        knob_value_to_string(v->knob, v->current, cur, sizeof cur);
        if (v->as_ratio) {
                /* "max_ratio is 100 % (733M of the limit now)" */
                snprintf(file, sizeof file, "%s", knob_form_file(v->knob, KNOB_FORM_RATIO));
                name = file;
                snprintf(cur, sizeof cur, "%" PRIu64 " %% (%s of the limit now)", v->ratio_percent,
                         knob_value_to_string(v->knob, v->current, bytes, sizeof bytes));
        }
        if (strcmp(v->state, PROTOCOL_STATE_UNSUPPORTED) == 0 || strcmp(v->state, PROTOCOL_STATE_OVERRIDE) == 0 ||
            strcmp(v->state, PROTOCOL_STATE_UNWRITABLE) == 0 || strcmp(v->state, PROTOCOL_STATE_EXCLUDED) == 0) {
                if (v->supported)
                        fprintf(f, "  %s is %s: %s.\n", name, cur, v->note);
                else
                        fprintf(f, "  %s: %s.\n", knob_name(v->knob), v->note);
                return;
        }
        if (!kd || !kd->wanted) {
                fprintf(f, "  %s is %s: the policy has no opinion, so it stays %s.\n", name, cur,
                        have_orig ? "at its original value" : "as the kernel has it");
                return;
        }
        knob_value_to_string(v->knob, kd->value, want, sizeof want);
        if (kd->held) {
                knob_value_to_string(v->knob, kd->policy_value, policy, sizeof policy);
                fprintf(f, "  %s: the policy wants %s (%s); %s. %s%s is %s%s%s.\n", knob_name(v->knob), policy,
                        kd->reason, kd->held_reason, v->as_ratio ? "" : "It", v->as_ratio ? name : "", cur,
                        have_orig ? ", originally " : "", have_orig ? orig : "");
                return;
        }
        fprintf(f, "  %s should be %s (%s%s); %s is %s%s%s.\n", knob_name(v->knob), want, kd->reason,
                v->as_ratio ? ", written as whole percents" : "", v->as_ratio ? name : "it", cur,
                have_orig ? ", originally " : "", have_orig ? orig : "");
}

int explain_device_text(FILE *f, const sample *s, const decision *d, const bdi_device *dev,
                        const device_decision *dd, const actuator *a, bool writing, const char *writes_reason) {
        char backlog[16], bw[16], thresh[16], source[64];

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
        if (d && d->caution[0])
                fprintf(f, "  Caution: %s.\n", d->caution);
        fprintf(f, "  Its write bandwidth is taken as %s/s, %s; it is %s.\n",
                format_bytes(bw, sizeof bw, dd->bw_bytes_per_s),
                ctl_bw_source_text(speed_source_to_string(dd->bw_source), true, dd->remembered_age_s, source, sizeof source),
                dd->active ? "active (it holds or moves data)" : "idle");
        if (dd->left_alone[0]) {
                _cleanup_free_ char *why = escape_text_alloc(dd->left_alone);

                fprintf(f, "  Its own knobs are left alone: %s.\n", why);
        }
        for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++) {
                knob_view v = device_view(dev, s->global.dirty_thresh_bytes, dd, a, k);
                explain_knob(f, &v);
        }
        fprintf(f, "  The global limits:\n");
        for (knob_id k = 0; k < KNOB_DIRTY_WRITEBACK_CENTISECS; k++) {
                knob_view v = global_view(s, d, a, k);
                explain_knob(f, &v);
        }
        if (!writing)
                fprintf(f, "  Nothing is written: %s.\n", writes_reason ? writes_reason : "observe or dry-run mode");
        return 0;
}
