/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The write plan: from the knobs as they are, what is wanted and what the daemon owns, the ordered
 * list of knob writes. Pure: no I/O, no clock, no logging. */
#include "plan.h"
#include "util.h"

#include <string.h>

/* Headroom left under 100 % when the sum of min ratios must be shrunk (rounding, limit drift). */
#define MIN_SUM_MARGIN_PPM (KNOB_PPM_FULL / 200)
/* A device's bytes read back through a ratio of the limit: within 1 % and a page it is already set. */
#define BYTES_TOLERANCE_PERCENT 1
/* A floor (min_bytes) this close to the wanted one is not rewritten: its ratio drifts with every step
 * of the global limit and with every rescaling of the floors, and a guarantee 10 % off changes nothing
 * a writer sees. (A cap gets no such band: below the wanted value it may stop its writers.) */
#define MIN_TOLERANCE_PERCENT 10
/* A bound of its own kept in bytes is not rewritten within this much: the kernel's own limit (ratio mode)
 * moves with free memory every tick, and a FUSE mount's cap a tenth off changes nothing a writer sees. */
#define KEPT_BOUND_TOLERANCE_PERCENT 10

typedef struct op_list {
        plan_op *v;
        size_t n, allocated;
} op_list;

typedef struct note_list {
        plan_note *v;
        size_t n, allocated;
} note_list;

static int add_op(op_list *l, const plan_op *o) {
        if (grow_array((void **) &l->v, &l->allocated, l->n, sizeof *l->v) < 0)
                return -ENOMEM;
        l->v[l->n++] = *o;
        return 0;
}

static int add_note(note_list *l, plan_note_kind kind, size_t device, knob_id k, knob_setting s) {
        if (grow_array((void **) &l->v, &l->allocated, l->n, sizeof *l->v) < 0)
                return -ENOMEM;
        l->v[l->n++] = (plan_note) { .kind = kind, .device = device, .knob = k, .setting = s };
        return 0;
}

knob_target plan_target(bool wanted, uint64_t value, const char *reason, const knob_owner *owner, bool restore_all) {
        /* a write refused mid-run (an LSM loaded) leaves our value in place: at the stop, the original is
         * tried all the same (refused again, the saved file keeps it) */
        if (owner && (owner->overridden || (owner->refused && !(restore_all && owner->saved && owner->written))))
                return (knob_target) { TARGET_NONE, 0, NULL };
        if (wanted && !restore_all)
                return (knob_target) { TARGET_VALUE, value, reason };
        if (owner && owner->saved && owner->written)
                return (knob_target) { TARGET_RESTORE, 0,
                                       restore_all ? "restoring the original" : "no longer wanted, restoring the original" };
        return (knob_target) { TARGET_NONE, 0, NULL };
}

bool plan_overridden(const knob_now *now, const knob_owner *owner) {
        if (!owner || owner->overridden || !now->readable)
                return false;
        if (owner->written)
                return !knob_setting_same(now->setting, owner->ours);
        /* never written by us, but changed since we last looked: an admin's value too */
        return owner->seen && !knob_setting_same(now->setting, owner->seen_setting);
}

/* ---- globals ------------------------------------------------------------------------------ */

bool plan_devices_alone_safe(const plan_input *in) {
        const knob_now *dirty = &in->global_now[KNOB_DIRTY_BYTES];

        if (!in->global_limit_unwritable)
                return true;
        return dirty->readable && dirty->setting.form == KNOB_FORM_SELF && dirty->setting.value > 0;
}

uint64_t plan_fit_pair(knob_id k, uint64_t value, uint64_t partner_ppm, uint64_t thresh_pages, uint64_t page_size) {
        uint64_t ppm = knob_bytes_to_ppm(value, thresh_pages, page_size), fitted;

        partner_ppm = MIN(partner_ppm, KNOB_PPM_FULL);

        if (k == KNOB_MIN_BYTES && ppm > partner_ppm)
                return knob_ppm_to_bytes(partner_ppm, thresh_pages, page_size) / page_size * page_size;
        if (k == KNOB_MAX_BYTES && ppm < partner_ppm) {
                /* up to the next page that converts to at least the min's ratio */
                fitted = (knob_ppm_to_bytes(partner_ppm, thresh_pages, page_size) / page_size + 1) * page_size;
                while (knob_bytes_to_ppm(fitted, thresh_pages, page_size) < partner_ppm)
                        fitted += page_size;
                return fitted;
        }
        return value;
}


/* The write for one global knob, or false if the kernel already has it. */
static bool plan_global(const plan_input *in, knob_id k, plan_op *o) {
        const knob_now *now = &in->global_now[k];
        const knob_target *t = &in->global_target[k];
        const knob_owner *owner = &in->global_owner[k];

        *o = (plan_op) { .device = PLAN_GLOBAL, .knob = k, .needs = SIZE_MAX, .old = now->setting,
                         .old_value = now->value, .reason = t->reason };
        switch (t->kind) {
        case TARGET_VALUE:
                if (knob_check_value(k, KNOB_FORM_SELF, t->value, in->page_size) < 0)
                        return false;
                o->form = KNOB_FORM_SELF;
                o->value = t->value;
                break;
        case TARGET_RESTORE:
                /* a pair goes back to ratio mode by writing the ratio: 0 to *_bytes is EINVAL */
                if (!owner->saved || knob_check_value(k, owner->original.form, owner->original.value, in->page_size) < 0)
                        return false;
                o->form = owner->original.form;
                o->value = owner->original.value;
                o->restore = true;
                break;
        default:
                return false;
        }
        o->expect = (knob_setting) { o->form, o->value };
        return !knob_setting_equal(now->setting, o->expect);
}

/* The dirty threshold in pages once the planned global writes are done. */
static uint64_t predict_thresh_pages(const plan_input *in, const plan_op *dirty) {
        const knob_now *now = &in->global_now[KNOB_DIRTY_BYTES];

        if (!dirty)
                return in->thresh_pages;
        if (dirty->form == KNOB_FORM_SELF)
                return (dirty->value + in->page_size - 1) / in->page_size;
        /* back to ratio mode: the ratio of the dirtyable memory the kernel measures */
        if (now->setting.form == KNOB_FORM_RATIO && now->setting.value > 0)
                return in->thresh_pages * dirty->value / now->setting.value;
        if (in->dirtyable_bytes)
                return in->dirtyable_bytes / in->page_size * dirty->value / 100;
        return in->thresh_pages;
}

static int plan_globals(const plan_input *in, op_list *ops, uint64_t *ret_thresh_pages) {
        plan_input copy;
        plan_op od, ob, o;
        bool have_d, have_b;
        int r = 0;

        /* the limit is not ours and follows memory: nothing else is set around it, ours go back */
        if (!plan_devices_alone_safe(in)) {
                copy = *in;
                for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                        if (copy.global_target[k].kind == TARGET_VALUE)
                                copy.global_target[k] = in->global_owner[k].saved && in->global_owner[k].written
                                        ? (knob_target) { TARGET_RESTORE, 0, "the global limit cannot be written: "
                                                                             "back to the original" }
                                        : (knob_target) { TARGET_NONE, 0, NULL };
                in = &copy;
        }

        have_d = plan_global(in, KNOB_DIRTY_BYTES, &od);
        have_b = plan_global(in, KNOB_DIRTY_BACKGROUND_BYTES, &ob);
        /* a dirty limit at or below the current background: lower the background first */
        if (have_d && have_b && od.form == KNOB_FORM_SELF && od.value <= in->bg_thresh_pages * in->page_size) {
                r = add_op(ops, &ob);
                if (r >= 0)
                        r = add_op(ops, &od);
        } else {
                if (have_d)
                        r = add_op(ops, &od);
                if (r >= 0 && have_b)
                        r = add_op(ops, &ob);
        }
        for (knob_id k = KNOB_DIRTY_WRITEBACK_CENTISECS; r >= 0 && k <= KNOB_DIRTY_EXPIRE_CENTISECS; k++)
                if (plan_global(in, k, &o))
                        r = add_op(ops, &o);
        *ret_thresh_pages = predict_thresh_pages(in, have_d ? &od : NULL);
        return r;
}

/* ---- devices ------------------------------------------------------------------------------ */

/* One device's targets after the rules of the kernel, in ppm of the limit where it matters. */
typedef struct devwork {
        knob_target t[KNOB_DEVICE_COUNT];
        uint64_t new_min_ppm;           /* the min ratio after the plan */
        uint64_t cur_min_ppm;
} devwork;

#define DK(k) ((k) - KNOB_DEVICE_FIRST)

static uint64_t limit_bytes(const plan_input *in, uint64_t thresh_pages) {
        return thresh_pages * in->page_size;
}

/* The min or max ratio a target leads to, in ppm. */
static uint64_t target_ppm(const plan_input *in, const plan_device *d, const knob_target *t, knob_id k,
                           uint64_t thresh_pages) {
        const knob_owner *owner = d->owner ? &d->owner[DK(k)] : NULL;

        switch (t->kind) {
        case TARGET_VALUE:
                return knob_bytes_to_ppm(t->value, thresh_pages, in->page_size);
        case TARGET_RESTORE:
                return owner && owner->saved ? knob_setting_ppm(owner->original) : knob_setting_ppm(d->now[DK(k)].setting);
        default:
                return knob_setting_ppm(d->now[DK(k)].setting);
        }
}

/* The dirty threshold the kernel's own global settings give, in pages: the originals of a limit we wrote
 * (a ratio of the dirtyable memory, as predict_thresh_pages() reckons it), else the one in force. */
static uint64_t own_thresh_pages(const plan_input *in, uint64_t thresh_pages) {
        const knob_owner *o = &in->global_owner[KNOB_DIRTY_BYTES];

        if (!o->saved || !o->written || o->overridden)
                return thresh_pages;
        if (o->original.form == KNOB_FORM_SELF && o->original.value > 0)
                return (o->original.value + in->page_size - 1) / in->page_size;
        if (o->original.form == KNOB_FORM_RATIO && in->dirtyable_bytes)
                return in->dirtyable_bytes / in->page_size * o->original.value / 100;
        return thresh_pages;
}

/* The bytes of a max the kernel or an admin set below 100 % (FUSE's 1 %, a max_bytes set by hand): at the
 * kernel's own limit where it was set against that one, else at the limit in force. 0: none (100 %). */
static uint64_t own_bound_bytes(const plan_input *in, const plan_device *d, uint64_t thresh_pages) {
        const knob_owner *omax = d->owner ? &d->owner[DK(KNOB_MAX_BYTES)] : NULL;
        uint64_t original_ppm = omax && omax->saved ? knob_setting_ppm(omax->original)
                                                    : knob_setting_ppm(d->now[DK(KNOB_MAX_BYTES)].setting);

        if (original_ppm >= KNOB_PPM_FULL)
                return 0;
        return MAX(knob_ppm_to_bytes(original_ppm, d->bound_of_kernel_limit ? own_thresh_pages(in, thresh_pages)
                                                                            : thresh_pages, in->page_size),
                   in->page_size);
}

/* The kernel keeps such a bound as a ratio of the limit (bdi_ratio_from_pages()): under a lower limit of
 * ours it would shrink with it (4.6G -> 600M takes FUSE's 46M to 6M). Where the policy has no cap of its
 * own for the device, ask for those bytes; restored with the limit. */
static void keep_own_bound(const plan_input *in, const plan_device *d, uint64_t thresh_pages, devwork *w) {
        const knob_owner *omax = d->owner ? &d->owner[DK(KNOB_MAX_BYTES)] : NULL;
        const knob_now *now = &d->now[DK(KNOB_MAX_BYTES)];
        knob_target *tmax = &w->t[DK(KNOB_MAX_BYTES)];
        uint64_t want, cur;

        /* (an admin's change, noted this tick or before, is theirs as it is) */
        if (!in->keep_own_bounds || !d->bound_of_kernel_limit || !now->readable || tmax->kind == TARGET_VALUE ||
            (omax && (omax->overridden || omax->refused || plan_overridden(now, omax))) ||
            own_thresh_pages(in, thresh_pages) == thresh_pages)
                return;
        want = MIN(own_bound_bytes(in, d, thresh_pages), limit_bytes(in, thresh_pages));
        if (want == 0)
                return;
        /* never below its min (the write would be fitted up to it, and differ from this every tick) */
        want = MAX(want, knob_ppm_to_bytes(target_ppm(in, d, &w->t[DK(KNOB_MIN_BYTES)], KNOB_MIN_BYTES, thresh_pages),
                                           thresh_pages, in->page_size));
        cur = knob_ppm_to_bytes(knob_setting_ppm(now->setting), thresh_pages, in->page_size);
        if (cur * 100 >= want * (100 - KEPT_BOUND_TOLERANCE_PERCENT) &&
            cur * 100 <= want * (100 + KEPT_BOUND_TOLERANCE_PERCENT)) {
                *tmax = (knob_target) { TARGET_NONE, 0, NULL };
                return;
        }
        *tmax = (knob_target) { TARGET_VALUE, want / in->page_size * in->page_size,
                                "its own max (the kernel's or an admin's), kept in bytes of the kernel's own limit "
                                "under the lower one in force" };
}

/* Apply the per-device rules to the targets: values beyond the limit are EINVAL, min <= max. */
static void clamp_device(const plan_input *in, const plan_device *d, uint64_t thresh_pages, devwork *w) {
        knob_target *tmin = &w->t[DK(KNOB_MIN_BYTES)], *tmax = &w->t[DK(KNOB_MAX_BYTES)];
        uint64_t limit = limit_bytes(in, thresh_pages), max_bytes, own;

        /* a bound the kernel or an admin set (FUSE's 1 %) is never raised past the bytes it gives at the
         * kernel's own limit: it is there on purpose */
        own = own_bound_bytes(in, d, thresh_pages);
        if (own > 0)
                limit = MIN(limit, own);
        if (tmax->kind == TARGET_VALUE && tmax->value > limit) {
                tmax->value = limit;
                if (limit == own)
                        tmax->reason = "at most its own max (the kernel's or an admin's) in bytes of the kernel's "
                                       "own limit: never raised";
        }
        if (tmin->kind == TARGET_VALUE && tmin->value > limit)
                tmin->value = limit;
        max_bytes = knob_ppm_to_bytes(target_ppm(in, d, tmax, KNOB_MAX_BYTES, thresh_pages), thresh_pages, in->page_size);
        if (tmax->kind == TARGET_VALUE)
                max_bytes = tmax->value;
        if (tmin->kind == TARGET_VALUE && tmin->value > max_bytes)
                tmin->value = max_bytes / in->page_size * in->page_size;
}

/* The write for a device's min or max; false if the kernel already holds it (within rounding). */
static bool plan_of_limit(const plan_input *in, const plan_device *d, size_t di, knob_id k, const knob_target *t,
                          uint64_t thresh_pages, bool exact, plan_op *o) {
        const knob_now *now = &d->now[DK(k)];
        const knob_owner *owner = d->owner ? &d->owner[DK(k)] : NULL;
        uint64_t want_ppm, cur_ppm = knob_setting_ppm(now->setting), tol_ppm;

        *o = (plan_op) { .device = di, .knob = k, .needs = SIZE_MAX, .old = now->setting, .old_value = now->value,
                         .reason = t->reason };
        if (t->kind == TARGET_RESTORE) {
                if (!owner || !owner->saved || knob_setting_same(now->setting, owner->original))
                        return false;
                o->form = owner->original.form;
                o->value = owner->original.value;
                o->restore = true;
                o->expect = owner->original;
                return true;
        }
        if (t->kind != TARGET_VALUE)
                return false;

        want_ppm = knob_bytes_to_ppm(t->value, thresh_pages, in->page_size);
        /* the kernel keeps a ratio of the limit: one page or 1 % off is the same setting */
        tol_ppm = want_ppm * (k == KNOB_MIN_BYTES ? MIN_TOLERANCE_PERCENT : BYTES_TOLERANCE_PERCENT) / 100 +
                  knob_bytes_to_ppm(in->page_size, thresh_pages, in->page_size);
        /* a setting read in whole percents is only that precise */
        if (now->setting.form == KNOB_FORM_RATIO)
                tol_ppm = MAX(tol_ppm, 10000);
        if (exact)
                tol_ppm = 0;
        if (cur_ppm + tol_ppm >= want_ppm && cur_ppm <= want_ppm + tol_ppm)
                return false;
        /* for a limit about to fall: the ratio that gives these bytes of it, above them until it falls */
        if (in->devices_as_ratio && now->has[KNOB_FORM_FINE]) {
                o->form = KNOB_FORM_FINE;
                o->value = MIN(want_ppm, KNOB_PPM_FULL);
                o->expect = (knob_setting) { KNOB_FORM_FINE, o->value };
                o->for_limit_bytes = limit_bytes(in, thresh_pages);
                return true;
        }
        if (now->has[KNOB_FORM_SELF]) {
                o->form = KNOB_FORM_SELF;
                o->value = t->value;
                o->readback_tolerance = t->value / 100 * BYTES_TOLERANCE_PERCENT + in->page_size;
                o->expect = now->has[KNOB_FORM_FINE] ? (knob_setting) { KNOB_FORM_FINE, want_ppm }
                                                      : (knob_setting) { KNOB_FORM_RATIO, want_ppm / 10000 };
                return true;
        }
        /* before 6.2 only whole percents: round a cap up (never below what was asked), a floor down */
        if (now->has[KNOB_FORM_RATIO]) {
                uint64_t pct = k == KNOB_MAX_BYTES ? (want_ppm + 9999) / 10000 : want_ppm / 10000;

                if (k == KNOB_MAX_BYTES && pct == 0)
                        pct = 1;
                if (pct * 10000 == cur_ppm)
                        return false;
                o->form = KNOB_FORM_RATIO;
                o->value = MIN(pct, 100);
                o->expect = (knob_setting) { KNOB_FORM_RATIO, o->value };
                return true;
        }
        return false;
}

static bool plan_strict(const plan_device *d, size_t di, const knob_target *t, plan_op *o) {
        const knob_now *now = &d->now[DK(KNOB_STRICT_LIMIT)];
        const knob_owner *owner = d->owner ? &d->owner[DK(KNOB_STRICT_LIMIT)] : NULL;
        uint64_t v;

        if (!now->has[KNOB_FORM_SELF])
                return false;
        if (t->kind == TARGET_RESTORE) {
                if (!owner || !owner->saved)
                        return false;
                v = owner->original.value;
        } else if (t->kind == TARGET_VALUE)
                v = t->value ? 1 : 0;
        else
                return false;
        if (now->value == v)
                return false;
        *o = (plan_op) { .device = di, .knob = KNOB_STRICT_LIMIT, .form = KNOB_FORM_SELF, .value = v,
                         .restore = t->kind == TARGET_RESTORE, .needs = SIZE_MAX, .old = now->setting,
                         .expect = { KNOB_FORM_SELF, v }, .reason = t->reason };
        return true;
}

/* One device's writes in order. */
static int plan_device_ops(const plan_input *in, size_t di, const devwork *w, uint64_t thresh_pages, op_list *ops) {
        const plan_device *d = &in->devices[di];
        plan_op omin, omax, ostrict;
        bool have_min, have_max, have_strict;
        size_t max_index = SIZE_MAX;
        int r = 0;

        have_min = plan_of_limit(in, d, di, KNOB_MIN_BYTES, &w->t[DK(KNOB_MIN_BYTES)], thresh_pages, false, &omin);
        have_max = plan_of_limit(in, d, di, KNOB_MAX_BYTES, &w->t[DK(KNOB_MAX_BYTES)], thresh_pages, false, &omax);
        /* a floor left within its tolerance must not stay above a cap going below it: the kernel
         * refuses a max_ratio under the min_ratio (EINVAL), so that floor is written as wanted */
        if (!have_min && have_max && w->t[DK(KNOB_MIN_BYTES)].kind == TARGET_VALUE &&
            w->t[DK(KNOB_MAX_BYTES)].kind == TARGET_VALUE &&
            knob_setting_ppm(d->now[DK(KNOB_MIN_BYTES)].setting) >
                    knob_bytes_to_ppm(w->t[DK(KNOB_MAX_BYTES)].value, thresh_pages, in->page_size))
                have_min = plan_of_limit(in, d, di, KNOB_MIN_BYTES, &w->t[DK(KNOB_MIN_BYTES)], thresh_pages, true, &omin);
        /* a ratio is not fitted to its partner at write time (fit_to_partner() fits bytes): a min written as
         * one against a max left within its tolerance goes no higher than that max holds (EINVAL above it) */
        if (have_min && !have_max && omin.form == KNOB_FORM_FINE)
                omin.value = omin.expect.value = MIN(omin.value, knob_setting_ppm(d->now[DK(KNOB_MAX_BYTES)].setting));
        have_strict = plan_strict(d, di, &w->t[DK(KNOB_STRICT_LIMIT)], &ostrict);

        if (have_strict && ostrict.value == 0)
                r = add_op(ops, &ostrict);
        /* a min going up after its max (which stays at or above it), a min going down before its max: min <= max
         * holds after each write, and the runner fits the second to the first as the kernel then holds it */
        if (r >= 0 && have_min && have_max && w->new_min_ppm > w->cur_min_ppm) {
                max_index = ops->n;
                r = add_op(ops, &omax);
                if (r >= 0)
                        r = add_op(ops, &omin);
        } else if (r >= 0) {
                if (have_min)
                        r = add_op(ops, &omin);
                if (r >= 0 && have_max) {
                        max_index = ops->n;
                        r = add_op(ops, &omax);
                }
        }
        if (r >= 0 && have_strict && ostrict.value != 0) {
                /* a strict cap is only safe once the cap itself is in place */
                ostrict.needs = max_index;
                r = add_op(ops, &ostrict);
        }
        return r;
}

/* The kernel refuses min ratios that sum to 100 %: shrink ours proportionally. true if it had to. */
static bool fit_min_sum(const plan_input *in, devwork *w, uint64_t thresh_pages) {
        uint64_t fixed = in->others_min_ppm, ours = 0, budget;

        for (size_t i = 0; i < in->n_devices; i++) {
                if (w[i].t[DK(KNOB_MIN_BYTES)].kind == TARGET_VALUE)
                        ours += w[i].new_min_ppm;
                else
                        fixed += w[i].new_min_ppm;
        }
        if (fixed + ours < KNOB_PPM_FULL)
                return false;
        budget = fixed + MIN_SUM_MARGIN_PPM < KNOB_PPM_FULL ? KNOB_PPM_FULL - MIN_SUM_MARGIN_PPM - fixed : 0;
        for (size_t i = 0; i < in->n_devices; i++) {
                knob_target *t = &w[i].t[DK(KNOB_MIN_BYTES)];

                if (t->kind != TARGET_VALUE)
                        continue;
                t->value = ours ? (uint64_t) ((double) t->value * (double) budget / (double) ours) : 0;
                t->value = t->value / in->page_size * in->page_size;
                w[i].new_min_ppm = knob_bytes_to_ppm(t->value, thresh_pages, in->page_size);
        }
        return true;
}

/* The global limit is not ours and moves with memory: no device value, ours go back to the originals. */
static bool drop_device_values(const plan_input *in, size_t i, devwork *w) {
        const plan_device *d = &in->devices[i];
        bool dropped = false;

        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++) {
                const knob_owner *owner = d->owner ? &d->owner[j] : NULL;

                if (w->t[j].kind != TARGET_VALUE)
                        continue;
                dropped = true;
                w->t[j] = owner && owner->saved && owner->written
                        ? (knob_target) { TARGET_RESTORE, 0, "the global limit cannot be written and follows memory: "
                                                             "back to the original" }
                        : (knob_target) { TARGET_NONE, 0, NULL };
        }
        return dropped;
}

static int plan_devices(const plan_input *in, uint64_t thresh_pages, op_list *ops, note_list *notes) {
        _cleanup_free_ devwork *w = calloc(MAX(in->n_devices, 1), sizeof *w);
        bool alone_safe = plan_devices_alone_safe(in), dropped = false;
        int r = 0;

        if (!w)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_devices; i++) {
                const plan_device *d = &in->devices[i];

                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++) {
                        w[i].t[j] = d->now[j].readable ? d->target[j] : (knob_target) { TARGET_NONE, 0, NULL };
                        /* wanted, and this kernel has no file for it at all */
                        if (w[i].t[j].kind == TARGET_VALUE && !d->now[j].has[KNOB_FORM_SELF] &&
                            !d->now[j].has[KNOB_FORM_RATIO]) {
                                w[i].t[j].kind = TARGET_NONE;
                                r = add_note(notes, PLAN_NOTE_UNSUPPORTED, i, (knob_id) (KNOB_DEVICE_FIRST + j),
                                             (knob_setting) {});
                                if (r < 0)
                                        return r;
                        }
                }
                if (!alone_safe)
                        dropped = drop_device_values(in, i, &w[i]) || dropped;
                /* strict_limit is a cap's companion: without a cap it would throttle against the whole limit */
                if (w[i].t[DK(KNOB_STRICT_LIMIT)].kind == TARGET_VALUE && w[i].t[DK(KNOB_STRICT_LIMIT)].value &&
                    w[i].t[DK(KNOB_MAX_BYTES)].kind != TARGET_VALUE)
                        w[i].t[DK(KNOB_STRICT_LIMIT)].kind = TARGET_NONE;
                if (alone_safe)
                        keep_own_bound(in, d, thresh_pages, &w[i]);
                clamp_device(in, d, thresh_pages, &w[i]);
                w[i].cur_min_ppm = knob_setting_ppm(d->now[DK(KNOB_MIN_BYTES)].setting);
                w[i].new_min_ppm = target_ppm(in, d, &w[i].t[DK(KNOB_MIN_BYTES)], KNOB_MIN_BYTES, thresh_pages);
        }
        if (dropped) {
                r = add_note(notes, PLAN_NOTE_DEVICES_DROPPED, PLAN_GLOBAL, KNOB_DIRTY_BYTES, (knob_setting) {});
                if (r < 0)
                        return r;
        }
        if (fit_min_sum(in, w, thresh_pages)) {
                r = add_note(notes, PLAN_NOTE_MIN_SCALED, PLAN_GLOBAL, KNOB_MIN_BYTES, (knob_setting) {});
                if (r < 0)
                        return r;
        }
        /* devices whose min goes down first, so that those raising theirs find room */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < in->n_devices; i++) {
                        bool lowers = w[i].new_min_ppm <= w[i].cur_min_ppm;

                        if (lowers != (pass == 0))
                                continue;
                        r = plan_device_ops(in, i, &w[i], thresh_pages, ops);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- the whole plan ------------------------------------------------------------------------- */

int plan_build(const plan_input *in, plan *ret) {
        return plan_build_part(in, PLAN_ALL, ret);
}

int plan_build_part(const plan_input *in, unsigned parts, plan *ret) {
        _cleanup_free_ plan_input *copy = NULL;
        _cleanup_free_ plan_device *devices = NULL;
        op_list ops = {};
        note_list notes = {};
        uint64_t thresh_pages;
        int r;

        *ret = (plan) {};
        copy = malloc(sizeof *copy);
        devices = calloc(MAX(in->n_devices, 1), sizeof *devices);
        if (!copy || !devices)
                return -ENOMEM;
        *copy = *in;
        if (in->n_devices > 0)
                memcpy(devices, in->devices, in->n_devices * sizeof *devices);
        copy->devices = devices;

        /* a knob that is no longer what we wrote was set by someone else: note it, and hands off */
        for (knob_id k = 0; (parts & PLAN_GLOBALS) && k < _KNOB_GLOBAL_MAX; k++)
                if (plan_overridden(&in->global_now[k], &in->global_owner[k])) {
                        r = add_note(&notes, PLAN_NOTE_OVERRIDDEN, PLAN_GLOBAL, k, in->global_now[k].setting);
                        if (r < 0)
                                goto fail;
                        copy->global_target[k] = (knob_target) { TARGET_NONE, 0, NULL };
                }
        for (size_t i = 0; (parts & PLAN_DEVICES) && i < in->n_devices; i++)
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        if (devices[i].owner && plan_overridden(&devices[i].now[j], &devices[i].owner[j])) {
                                r = add_note(&notes, PLAN_NOTE_OVERRIDDEN, i, (knob_id) (KNOB_DEVICE_FIRST + j),
                                             devices[i].now[j].setting);
                                if (r < 0)
                                        goto fail;
                                devices[i].target[j] = (knob_target) { TARGET_NONE, 0, NULL };
                        }

        if (parts & PLAN_GLOBALS) {
                r = plan_globals(copy, &ops, &thresh_pages);
                if (r < 0)
                        goto fail;
        } else
                thresh_pages = in->thresh_pages;
        if (parts & PLAN_DEVICES) {
                r = plan_devices(copy, thresh_pages, &ops, &notes);
                if (r < 0)
                        goto fail;
        }
        *ret = (plan) { .ops = ops.v, .n_ops = ops.n, .notes = notes.v, .n_notes = notes.n,
                        .thresh_pages_after = thresh_pages };
        return 0;
fail:
        free(ops.v);
        free(notes.v);
        return r;
}

void plan_done(plan *p) {
        free(p->ops);
        free(p->notes);
        *p = (plan) {};
}
