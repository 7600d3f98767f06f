/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Actuation: snapshot the knobs, build a plan (plan.c), run it: save originals first, write, read back,
 * back off, log. The only code that writes knobs. */
#include "actuate.h"
#include "events.h"
#include "log.h"
#include "savedfile.h"
#include "util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#define MINUTE_SLOTS 60

typedef struct adev {
        char bdi[64];
        char name[64];                 /* as the decision last named it, for messages ("" if never) */
        knob_owner k[KNOB_DEVICE_COUNT];
        bool warned_unsupported[KNOB_DEVICE_COUNT];
} adev;

struct actuator {
        char *root;
        char *saved_path;
        knob_io io;
        uint64_t page_size;
        uint64_t now_usec;
        knob_owner g[_KNOB_GLOBAL_MAX];
        adev **devices;                /* sorted by bdi; pointers stay put when the array grows */
        size_t n_devices, allocated;
        bool min_scaled;               /* the sum-of-min shrink is in effect (logged once) */
        bool devices_alone;            /* vm.dirty_bytes is refused but held in bytes: device knobs only */
        bool saved_stale;              /* a device with saved originals was forgotten: rewrite the file */
        int thresholds_error;          /* the failure to read the thresholds logged, 0 if they read */
        uint64_t writes_total, overrides_total, failures_total;
        uint64_t minute_writes[MINUTE_SLOTS];   /* writes per second of the last minute, by second % 60 */
        uint64_t minute_stamp[MINUTE_SLOTS];    /* which second each slot counts */
        char (*own_bounds)[64];        /* devices with a max below 100 % before the limit became ours: set
                                        * against the kernel's own limit (sorted; taken while it is not ours) */
        size_t n_own_bounds;
};

/* ---- file access ---------------------------------------------------------------------- */

static int real_read(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t n = 0;

        if (size < 2)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = 0;
        return 0;
}

static int io_read(const actuator *a, const char *path, char *buf, size_t size) {
        if (a->io.read)
                return a->io.read(a->io.userdata, path, buf, size);
        return real_read(path, buf, size);
}

static int io_write(const actuator *a, const char *path, const char *value) {
        if (a->io.write)
                return a->io.write(a->io.userdata, path, value);
        return write_string_file(path, value);
}

static int io_writable(const actuator *a, const char *path) {
        if (a->io.writable)
                return a->io.writable(a->io.userdata, path);
        /* access() reports a read-only mount (EROFS) without writing anything */
        return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0 ? -errno : 0;
}

static void knob_path(const actuator *a, const char *bdi, const char *file, char *buf, size_t size) {
        if (bdi)
                snprintf(buf, size, "%s/sys/class/bdi/%s/%s", a->root, bdi, file);
        else
                snprintf(buf, size, "%s/proc/sys/vm/%s", a->root, file);
}

static int read_file_u64(const actuator *a, const char *bdi, const char *file, uint64_t *ret) {
        char path[PATH_MAX], buf[64], *nl;
        int r;

        knob_path(a, bdi, file, path, sizeof path);
        r = io_read(a, path, buf, sizeof buf);
        if (r < 0)
                return r;
        nl = strchr(buf, '\n');
        if (nl)
                *nl = 0;
        return parse_u64(buf, ret);
}

static bool is_gone(int r) {
        return r == -ENOENT || r == -ENODEV;
}

/* Errors that will not go away by trying again: the file is read-only for us. */
static bool is_refusal(int r) {
        return r == -EROFS || r == -EACCES || r == -EPERM;
}

/* ---- snapshot ------------------------------------------------------------------------- */

/* One knob now, through the table: which files exist, its own value, and what the kernel holds.
 * -ENOENT/-ENODEV if the device is gone; a missing file of an older kernel is not an error. */
static int read_now(const actuator *a, const char *bdi, knob_id k, knob_now *ret) {
        const knob_info *info = knob_get(k);
        knob_reading reading = {};
        knob_now now = {};
        int r;

        for (knob_form f = 0; f < _KNOB_FORM_MAX; f++) {
                if (!info->files[f])
                        continue;
                r = read_file_u64(a, bdi, info->files[f], &reading.value[f]);
                if (r >= 0)
                        reading.has |= 1u << f;
                else if (!is_gone(r))
                        return r;
        }
        r = knob_reading_setting(k, &reading, &now.setting);
        if (r < 0) {
                uint64_t v;

                /* strict_limit before 6.2 is no file at all: fine, unless the whole device is gone
                 * (min_ratio exists on every kernel) */
                if (info->kind != KNOB_KIND_PLAIN || !info->device || !bdi)
                        return r;
                r = read_file_u64(a, bdi, "min_ratio", &v);
                if (r < 0)
                        return r;
        }
        for (knob_form f = 0; f < _KNOB_FORM_MAX; f++)
                now.has[f] = knob_reading_has(&reading, f);
        now.value = reading.value[KNOB_FORM_SELF];
        now.readable = true;
        *ret = now;
        return 0;
}

typedef struct thresholds {
        uint64_t dirty_pages, bg_pages;
        bool got_dirty, got_bg;
} thresholds;

/* A figure that does not parse is as good as missing. */
static int thresholds_cb(const char *key, const char *value, void *userdata) {
        thresholds *t = userdata;
        uint64_t v;

        if (parse_u64(value, &v) < 0)
                return 0;
        if (strcmp(key, "nr_dirty_threshold") == 0) {
                t->dirty_pages = v;
                t->got_dirty = true;
        } else if (strcmp(key, "nr_dirty_background_threshold") == 0) {
                t->bg_pages = v;
                t->got_bg = true;
        }
        return 0;
}

/* The kernel's current dirty thresholds in pages, from /proc/vmstat. */
static int read_thresholds(const actuator *a, uint64_t *ret_dirty_pages, uint64_t *ret_bg_pages) {
        char path[PATH_MAX];
        _cleanup_free_ char *buf = NULL;
        thresholds t = {};
        int r;

        snprintf(path, sizeof path, "%s/proc/vmstat", a->root);
        buf = malloc(65536);
        if (!buf)
                return -ENOMEM;
        r = io_read(a, path, buf, 65536);
        if (r < 0)
                return r;
        (void) parse_kv(buf, thresholds_cb, &t);
        if (t.got_dirty)
                *ret_dirty_pages = t.dirty_pages;
        if (t.got_bg)
                *ret_bg_pages = t.bg_pages;
        return t.got_dirty && t.got_bg ? 0 : -ENODATA;
}

/* The thresholds, with a failure logged when it starts or changes and one line when they read again,
 * not at every tick (a kernel or tree without them fails every tick). */
static int read_thresholds_noted(actuator *a, uint64_t *ret_dirty_pages, uint64_t *ret_bg_pages) {
        int r = read_thresholds(a, ret_dirty_pages, ret_bg_pages);

        if (r < 0) {
                if (r != a->thresholds_error)
                        log_error_errno(r, "Failed to read the dirty thresholds from %s/proc/vmstat: %m. No write is planned "
                                        "until they read again; logged again only when this changes.", a->root);
                else
                        log_debug_errno(r, "Still cannot read the dirty thresholds from %s/proc/vmstat: %m", a->root);
                a->thresholds_error = r;
        } else if (a->thresholds_error != 0) {
                log_info("The dirty thresholds read again from %s/proc/vmstat.", a->root);
                a->thresholds_error = 0;
        }
        return r;
}

static int read_globals(actuator *a, plan_input *in) {
        int r;

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                r = read_now(a, NULL, k, &in->global_now[k]);
                if (r < 0)
                        return log_error_errno(r, "Failed to read %s/proc/sys/vm/%s: %m", a->root, knob_name(k));
        }
        return read_thresholds_noted(a, &in->thresh_pages, &in->bg_thresh_pages);
}

/* ---- owned devices -------------------------------------------------------------------- */

static int dev_cmp(const void *bdi, const void *elem) {
        return strcmp(bdi, (*(adev *const *) elem)->bdi);
}

static adev *find_dev(const actuator *a, const char *bdi) {
        bool found;
        size_t i = search_sorted(a->devices, a->n_devices, sizeof *a->devices, bdi, dev_cmp, &found);

        return found ? a->devices[i] : NULL;
}

static adev *get_dev(actuator *a, const char *bdi) {
        bool found;
        size_t i = search_sorted(a->devices, a->n_devices, sizeof *a->devices, bdi, dev_cmp, &found);
        adev *d;

        if (found)
                return a->devices[i];
        if (grow_array((void **) &a->devices, &a->allocated, a->n_devices, sizeof *a->devices) < 0)
                return NULL;
        d = calloc(1, sizeof *d);
        if (!d)
                return NULL;
        snprintf(d->bdi, sizeof d->bdi, "%s", bdi);
        memmove(&a->devices[i + 1], &a->devices[i], (a->n_devices - i) * sizeof *a->devices);
        a->devices[i] = d;
        a->n_devices++;
        return d;
}

static void forget_dev(actuator *a, const char *bdi) {
        bool found;
        size_t i = search_sorted(a->devices, a->n_devices, sizeof *a->devices, bdi, dev_cmp, &found);

        if (!found)
                return;
        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                if (a->devices[i]->k[j].saved)
                        a->saved_stale = true;
        free(a->devices[i]);
        memmove(&a->devices[i], &a->devices[i + 1], (a->n_devices - i - 1) * sizeof *a->devices);
        a->n_devices--;
}

static bool owner_holds(const knob_owner *o) {
        return o->saved || o->written || o->overridden || o->refused || o->failed;
}

static bool dev_holds(const adev *d) {
        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                if (owner_holds(&d->k[j]))
                        return true;
        return false;
}

/* ---- the saved file ------------------------------------------------------------------- */

static void add_entry(saved_entry *v, size_t *n, const char *bdi, knob_id k, const knob_owner *o) {
        if (!o->saved)
                return;
        v[*n] = (saved_entry) { .knob = k, .original = o->original, .written = o->written,
                                .written_setting = o->ours, .pending = o->pending,
                                .pending_setting = o->pending_setting };
        snprintf(v[*n].bdi, sizeof v[*n].bdi, "%s", bdi ? bdi : "");
        (*n)++;
}

/* Write every saved original (and what is written or about to be); remove the file if none. */
static int saved_sync(const actuator *a) {
        _cleanup_free_ saved_entry *v = calloc(_KNOB_GLOBAL_MAX + a->n_devices * KNOB_DEVICE_COUNT + 1, sizeof *v);
        size_t n = 0;

        if (!v)
                return log_oom_error();
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                add_entry(v, &n, NULL, k, &a->g[k]);
        for (size_t i = 0; i < a->n_devices; i++)
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        add_entry(v, &n, a->devices[i]->bdi, (knob_id) (KNOB_DEVICE_FIRST + j), &a->devices[i]->k[j]);
        return saved_file_write(a->saved_path, v, n);
}

/* ---- running a plan ------------------------------------------------------------------- */

static const char *op_bdi(const plan_input *in, const plan_op *o) {
        return o->device == PLAN_GLOBAL ? NULL : in->devices[o->device].bdi;
}

static knob_owner *op_owner(actuator *a, const plan_input *in, const plan_op *o) {
        adev *d;

        if (o->device == PLAN_GLOBAL)
                return &a->g[o->knob];
        d = get_dev(a, in->devices[o->device].bdi);
        return d ? &d->k[o->knob - KNOB_DEVICE_FIRST] : NULL;
}

static const char *op_reason(const plan_op *o) {
        return o->reason && *o->reason ? o->reason : (o->restore ? "restoring the original" : "policy");
}

/* The value before, in the form written: bytes for bytes, the ratio for a ratio. */
static const char *op_old_to_string(const plan_op *o, char *buf, size_t size) {
        if ((o->form == KNOB_FORM_SELF || o->for_limit_bytes) && knob_get(o->knob)->kind == KNOB_KIND_OF_LIMIT)
                return knob_value_to_string(o->knob, o->old_value, buf, size);
        return knob_setting_to_string(o->knob, o->old, buf, size);
}

/* The name a device is known by, for messages: "loop0", or its bdi when the daemon never learnt one. */
static const char *dev_name(const actuator *a, const char *bdi) {
        const adev *d = bdi ? find_dev(a, bdi) : NULL;

        return d && d->name[0] ? d->name : bdi;
}

static void log_change(const actuator *a, const char *bdi, const plan_op *o) {
        char f_knob[64], f_old[96], f_new[96], f_reason[256], old[64], new[64], who[160];
        const char *fields[] = { f_knob, f_old, f_new, f_reason, NULL };
        const char *reason = op_reason(o), *name = dev_name(a, bdi);

        if (bdi && name && strcmp(name, bdi) != 0)
                snprintf(who, sizeof who, "%s (%s)", name, bdi);
        else
                snprintf(who, sizeof who, "%s", bdi ? bdi : "global");

        op_old_to_string(o, old, sizeof old);
        if (o->for_limit_bytes) {
                /* a ratio for the limit about to fall: said as the bytes it gives of that limit */
                char b[16], l[16];

                snprintf(new, sizeof new, "%s of the %s limit written next",
                         format_bytes(b, sizeof b, (uint64_t) ((unsigned __int128) o->for_limit_bytes * o->value / KNOB_PPM_FULL)),
                         format_bytes(l, sizeof l, o->for_limit_bytes));
        } else
                knob_setting_to_string(o->knob, (knob_setting) { o->form, o->value }, new, sizeof new);
        snprintf(f_knob, sizeof f_knob, "WBTUNED_KNOB=%s", knob_name(o->knob));
        snprintf(f_old, sizeof f_old, "WBTUNED_OLD=%s", old);
        snprintf(f_new, sizeof f_new, "WBTUNED_NEW=%s", new);
        snprintf(f_reason, sizeof f_reason, "WBTUNED_REASON=%s", reason);
        log_event(o->restore ? EVENT_KNOB_RESTORED : EVENT_KNOB_CHANGED, LOG_INFO, bdi ? bdi : "global",
                  bdi ? name : NULL, fields, "%s %s %s -> %s: %s", who, knob_name(o->knob), old, new, reason);
}

static void count_write(actuator *a) {
        uint64_t second = a->now_usec / 1000000ULL;
        size_t slot = second % MINUTE_SLOTS;

        if (a->minute_stamp[slot] != second) {
                a->minute_stamp[slot] = second;
                a->minute_writes[slot] = 0;
        }
        a->minute_writes[slot]++;
        a->writes_total++;
}

/* What the kernel holds for the knob after a write, read back the way the snapshot reads it. */
static int read_setting(const actuator *a, const char *bdi, knob_id k, knob_now *ret) {
        return read_now(a, bdi, k, ret);
}

enum { OP_DONE, OP_SKIPPED, OP_GONE, OP_REFUSED };

/* A write said ENOENT: is the device gone, or only that file? (min_ratio exists on every kernel) */
static bool device_gone(const actuator *a, const char *bdi) {
        uint64_t v;

        return is_gone(read_file_u64(a, bdi, "min_ratio", &v));
}

/* Probe before the first write of a knob: a read-only file is refused without writing anything. */
static int op_probe(actuator *a, const plan_input *in, const plan_op *o, knob_owner *ow) {
        char path[PATH_MAX];
        int r;

        if (ow->saved || o->restore)
                return 0;
        knob_path(a, op_bdi(in, o), knob_form_file(o->knob, o->form), path, sizeof path);
        r = io_writable(a, path);
        if (r < 0 && is_refusal(r)) {
                ow->refused = r;
                log_event(EVENT_UNWRITABLE, LOG_WARNING, op_bdi(in, o) ? op_bdi(in, o) : "global",
                          dev_name(a, op_bdi(in, o)), NULL, "%s is not writable (%s), leaving %s %s alone.", path,
                          strerror(-r), op_bdi(in, o) ? dev_name(a, op_bdi(in, o)) : "global", knob_name(o->knob));
                return OP_REFUSED;
        }
        return 0;
}

/* A write of this knob failed lately: not again for ACTUATOR_BACKOFF_USEC (a stop tries anyway). */
static bool backing_off(const actuator *a, const knob_owner *ow, bool use_backoff) {
        return use_backoff && ow->failed && a->now_usec < ow->failed_usec + ACTUATOR_BACKOFF_USEC;
}

/* A device's min_bytes or max_bytes, fitted to its partner as the kernel holds it right now: the limit
 * may have moved since the plan (memory, in ratio mode), and the kernel converts bytes against today's
 * limit, so a pair planned as min <= max can arrive as max < min (EINVAL). 0, or OP_GONE. */
static int fit_to_partner(const actuator *a, const plan_input *in, const plan_op *o, plan_op *ret) {
        const char *bdi = op_bdi(in, o);
        uint64_t thresh_pages, bg_pages;
        knob_now partner;
        int r;

        *ret = *o;
        if (!bdi || (o->form != KNOB_FORM_SELF && o->form != KNOB_FORM_FINE) ||
            (o->knob != KNOB_MIN_BYTES && o->knob != KNOB_MAX_BYTES))
                return 0;
        r = read_now(a, bdi, o->knob == KNOB_MIN_BYTES ? KNOB_MAX_BYTES : KNOB_MIN_BYTES, &partner);
        if (r < 0)
                return is_gone(r) ? OP_GONE : 0;    /* else the write says what is wrong */
        if (o->form == KNOB_FORM_FINE) {
                /* a ratio: min <= max as the kernel holds the partner now (EINVAL otherwise) */
                uint64_t p = MIN(knob_setting_ppm(partner.setting), KNOB_PPM_FULL);

                ret->value = o->knob == KNOB_MIN_BYTES ? MIN(o->value, p) : MAX(o->value, p);
                ret->expect.value = ret->value;
                return 0;
        }
        if (read_thresholds(a, &thresh_pages, &bg_pages) < 0)
                return 0;
        ret->value = plan_fit_pair(o->knob, o->value, knob_setting_ppm(partner.setting), thresh_pages, a->page_size);
        if (ret->value != o->value)
                log_debug("%s %s: %" PRIu64 " fitted to %" PRIu64 " against its partner as the kernel holds it now "
                          "(the limit moved since the plan)", bdi, knob_name(o->knob), o->value, ret->value);
        return 0;
}

/* Write, read back, log. OP_DONE, OP_SKIPPED (backed off), OP_GONE (device vanished), OP_REFUSED, or -errno. */
static int op_run(actuator *a, const plan_input *in, const plan_op *o, knob_owner *ow, bool use_backoff) {
        const char *bdi = op_bdi(in, o), *file = knob_form_file(o->knob, o->form);
        char path[PATH_MAX], value[32];
        plan_op fitted;
        knob_now after;
        int r;

        if (backing_off(a, ow, use_backoff))
                return OP_SKIPPED;
        r = fit_to_partner(a, in, o, &fitted);
        if (r == OP_GONE)
                return r;
        o = &fitted;
        knob_path(a, bdi, file, path, sizeof path);
        snprintf(value, sizeof value, "%" PRIu64, o->value);
        r = io_write(a, path, value);
        if (r < 0) {
                a->failures_total++;
                if (bdi && is_gone(r) && device_gone(a, bdi))
                        return OP_GONE;
                if (is_refusal(r)) {
                        ow->refused = r;
                        log_event(EVENT_UNWRITABLE, LOG_WARNING, bdi ? bdi : "global", dev_name(a, bdi), NULL,
                                  "Failed to write %s to %s (%s), leaving %s %s alone from now on.", value, path,
                                  strerror(-r), bdi ? dev_name(a, bdi) : "global", knob_name(o->knob));
                        return OP_REFUSED;
                }
                if (!ow->failed)
                        log_warning_errno(r, "Failed to write %s to %s, backing off: %m", value, path);
                else
                        log_debug_errno(r, "Failed to write %s to %s again: %m", value, path);
                ow->failed = r;
                ow->failed_usec = a->now_usec;
                return r;
        }
        ow->failed = 0;
        count_write(a);

        r = read_setting(a, bdi, o->knob, &after);
        if (r < 0) {
                if (bdi && is_gone(r))
                        return OP_GONE;
                log_warning_errno(r, "Failed to read back %s: %m", path);
                after.setting = o->expect;
        } else if (o->form == KNOB_FORM_SELF && after.has[KNOB_FORM_SELF] &&
                   (after.value + o->readback_tolerance < o->value || after.value > o->value + o->readback_tolerance))
                log_warning("Wrote %s to %s but it reads back as %" PRIu64 ".", value, path, after.value);

        if (o->restore) {
                *ow = (knob_owner) {};
        } else {
                ow->written = true;
                ow->ours = after.setting;
        }
        ow->pending = false;
        ow->seen = true;
        ow->seen_setting = after.setting;
        log_change(a, bdi, o);
        return OP_DONE;
}

static void note_unsupported(actuator *a, const plan_input *in, const plan_note *n) {
        const char *bdi = in->devices[n->device].bdi;
        adev *d = get_dev(a, bdi);

        if (!d || d->warned_unsupported[n->knob - KNOB_DEVICE_FIRST])
                return;
        d->warned_unsupported[n->knob - KNOB_DEVICE_FIRST] = true;
        log_event(EVENT_FEATURE_MISSING, LOG_NOTICE, bdi, dev_name(a, bdi), NULL,
                  "%s: this kernel has no %s (Linux %s), nor a ratio form of it: not setting it.", dev_name(a, bdi),
                  knob_name(n->knob), knob_get(n->knob)->since);
}

/* Take the plan's notes into the owners. */
static void take_notes(actuator *a, const plan_input *in, const plan *p) {
        for (size_t i = 0; i < p->n_notes; i++) {
                const plan_note *n = &p->notes[i];
                const char *bdi = n->device == PLAN_GLOBAL ? NULL : in->devices[n->device].bdi;
                knob_owner *ow;
                char now[64];

                switch (n->kind) {
                case PLAN_NOTE_OVERRIDDEN: {
                        adev *d = bdi ? get_dev(a, bdi) : NULL;

                        if (bdi && !d) {
                                log_oom_error();
                                break;
                        }
                        ow = d ? &d->k[n->knob - KNOB_DEVICE_FIRST] : &a->g[n->knob];
                        log_event(EVENT_OVERRIDE, LOG_NOTICE, bdi ? bdi : "global", dev_name(a, bdi), NULL,
                                  "%s %s was set to %s by someone else; leaving it alone from now on "
                                  "(`wbtunectl reload` hands it back).", bdi ? dev_name(a, bdi) : "global",
                                  knob_name(n->knob), knob_setting_to_string(n->knob, n->setting, now, sizeof now));
                        /* theirs now: not ours to restore either */
                        *ow = (knob_owner) { .overridden = true, .theirs = n->setting };
                        a->overrides_total++;
                        break;
                }
                case PLAN_NOTE_MIN_SCALED:
                        if (!a->min_scaled)
                                log_notice("The devices' min_bytes add up to the whole dirty limit; shrinking them "
                                           "proportionally to fit under 100 %%.");
                        break;
                case PLAN_NOTE_UNSUPPORTED:
                        note_unsupported(a, in, n);
                        break;
                case PLAN_NOTE_DEVICES_DROPPED:
                        log_debug("The global limit cannot be written and follows memory: no device value is "
                                  "written, ours go back to their originals.");
                        break;
                }
        }
}

static bool plan_has_note(const plan *p, plan_note_kind kind) {
        for (size_t i = 0; i < p->n_notes; i++)
                if (p->notes[i].kind == kind)
                        return true;
        return false;
}

/* Forget a knob that was recorded for a write that did not happen (nothing of ours to put back). */
static void drop_unwritten(knob_owner *ow) {
        ow->pending = false;
        if (!ow->written)
                *ow = (knob_owner) { .refused = ow->refused, .failed = ow->failed, .failed_usec = ow->failed_usec,
                                     .seen = ow->seen, .seen_setting = ow->seen_setting };
}

/* What each knob read before this run, as its owner's last sight of it (op_run then records what a
 * write read back as). A later change we did not make is someone else's. */
static void see(actuator *a, knob_owner *ow, const knob_now *now, const knob_target *t) {
        if (ow->overridden || !now->readable)
                return;
        ow->seen = true;
        ow->seen_setting = now->setting;
        /* to be restored, and already at its original: nothing is left to put back (it needs no write,
         * so it would stay in the saved file, and the next start would take the run for a crash) */
        if (t->kind == TARGET_RESTORE && ow->saved && knob_setting_same(now->setting, ow->original)) {
                ow->saved = ow->written = ow->pending = false;
                a->saved_stale = true;
        }
}

static void record_seen(actuator *a, const plan_input *in, bool globals) {
        for (knob_id k = 0; globals && k < _KNOB_GLOBAL_MAX; k++)
                see(a, &a->g[k], &in->global_now[k], &in->global_target[k]);
        for (size_t i = 0; !globals && i < in->n_devices; i++) {
                adev *d = find_dev(a, in->devices[i].bdi);

                for (size_t j = 0; d && j < KNOB_DEVICE_COUNT; j++)
                        see(a, &d->k[j], &in->devices[i].now[j], &in->devices[i].target[j]);
        }
}

/* Run a built plan: probe, record originals and what is about to be written, write in order, record again. */
static int plan_run(actuator *a, const plan_input *in, const plan *p, bool globals, bool use_backoff) {
        _cleanup_free_ int *result = calloc(MAX(p->n_ops, 1), sizeof *result);
        bool min_scaled = plan_has_note(p, PLAN_NOTE_MIN_SCALED), any_saved = false;
        bool changed = plan_has_note(p, PLAN_NOTE_OVERRIDDEN);
        int first = 0, r;

        if (!result)
                return log_oom_error();
        take_notes(a, in, p);
        record_seen(a, in, globals);
        if (a->min_scaled && !min_scaled)
                log_info("The devices' min_bytes fit under the dirty limit again.");
        a->min_scaled = min_scaled;

        /* before any write: what the kernel holds now, and what we are about to write */
        for (size_t i = 0; i < p->n_ops; i++) {
                const plan_op *o = &p->ops[i];
                knob_owner *ow = op_owner(a, in, o);

                if (!ow)
                        return log_oom_error();
                /* backed off: nothing to record for it this tick */
                if (backing_off(a, ow, use_backoff)) {
                        log_debug("%s %s: backing off after %s", op_bdi(in, o) ? op_bdi(in, o) : "global",
                                  knob_form_file(o->knob, o->form), strerror(-ow->failed));
                        result[i] = OP_SKIPPED;
                        continue;
                }
                result[i] = op_probe(a, in, o, ow);
                if (result[i] != 0) {
                        changed = true;
                        continue;
                }
                if (!ow->saved) {
                        ow->saved = true;
                        ow->original = o->old;
                }
                if (!o->restore) {
                        ow->pending = true;
                        ow->pending_setting = o->expect;
                }
                any_saved = true;
        }
        if (any_saved) {
                r = saved_sync(a);
                if (r < 0) {
                        /* without a record of the originals no write is safe */
                        for (size_t i = 0; i < p->n_ops; i++) {
                                knob_owner *ow = op_owner(a, in, &p->ops[i]);
                                if (ow && !ow->written)
                                        *ow = (knob_owner) { .refused = ow->refused };
                                else if (ow)
                                        ow->pending = false;
                        }
                        return r;
                }
        }

        for (size_t i = 0; i < p->n_ops; i++) {
                const plan_op *o = &p->ops[i];
                knob_owner *ow = op_owner(a, in, o);

                if (result[i] != 0)
                        continue;
                if (o->needs != SIZE_MAX && result[o->needs] != OP_DONE) {
                        log_debug("%s: not setting %s, the write it needs did not happen", op_bdi(in, o),
                                  knob_name(o->knob));
                        drop_unwritten(ow);
                        result[i] = OP_SKIPPED;
                        continue;
                }
                result[i] = op_run(a, in, o, ow, use_backoff);
                changed = true;
                if (result[i] == OP_GONE) {
                        log_debug("%s vanished, forgetting it.", op_bdi(in, o));
                        forget_dev(a, op_bdi(in, o));
                        /* the rest of this device's writes have nothing to write to */
                        for (size_t j = i + 1; j < p->n_ops; j++)
                                if (p->ops[j].device == o->device)
                                        result[j] = OP_GONE;
                        continue;
                }
                if (result[i] != OP_DONE)
                        drop_unwritten(ow);
                if (result[i] < 0 && first == 0)
                        first = result[i];
                /* the limit refused only by the write itself (an LSM): what the plan would have dropped had it
                 * known is not written either */
                if (result[i] == OP_REFUSED && o->device == PLAN_GLOBAL && o->knob == KNOB_DIRTY_BYTES) {
                        plan_input known = *in;

                        known.global_limit_unwritable = true;
                        for (size_t j = i + 1; !plan_devices_alone_safe(&known) && j < p->n_ops; j++)
                                if (result[j] == 0) {
                                        drop_unwritten(op_owner(a, in, &p->ops[j]));
                                        result[j] = OP_SKIPPED;
                                }
                }
        }
        if (changed || any_saved || a->saved_stale) {
                a->saved_stale = false;
                r = saved_sync(a);
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

/* ---- building the plan's input -------------------------------------------------------- */

typedef struct planned {
        plan_input in;
        plan_device *devices;
        char (*names)[64];              /* the devices' names: an owner may be forgotten mid-run */
        size_t n_devices;
} planned;

static void planned_done(planned *p) {
        free(p->devices);
        free(p->names);
        *p = (planned) {};
}

static uint64_t device_min_ppm(const bdi_device *bd) {
        knob_setting s;

        if (knob_reading_setting(KNOB_MIN_BYTES, &bd->knobs.k[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST], &s) < 0)
                return 0;
        return knob_setting_ppm(s);
}

static bool decision_has_work(const device_decision *dd, const adev *d) {
        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                if (dd->knobs[j].wanted || (d && owner_holds(&d->k[j])))
                        return true;
        return false;
}

static const bdi_device *sample_device(const sample *s, const char *bdi) {
        for (size_t i = 0; s && i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, bdi) == 0)
                        return &s->devices[i];
        return NULL;
}

static bool max_below_full(const bdi_device *bd) {
        knob_setting set;

        return knob_reading_setting(KNOB_MAX_BYTES, &bd->knobs.k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], &set) >= 0 &&
               knob_setting_ppm(set) < KNOB_PPM_FULL;
}

static int own_bound_cmp(const void *a, const void *b) {
        return strcmp((const char *) a, (const char *) b);
}

/* While the limit is not ours, which devices have a max below 100 %: that max was set against the kernel's
 * own limit. One set after ours took over (an admin's max_bytes then) is bytes of ours, kept as it is. */
static void note_own_bounds(actuator *a, const sample *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_devices; i++)
                n += max_below_full(&s->devices[i]);
        if (n > a->n_own_bounds || !a->own_bounds) {
                char (*v)[64] = realloc(a->own_bounds, MAX(n, 1) * sizeof *v);
                if (!v) {
                        log_oom_error();
                        a->n_own_bounds = 0;
                        return;
                }
                a->own_bounds = v;
        }
        a->n_own_bounds = 0;
        for (size_t i = 0; i < s->n_devices; i++)
                if (max_below_full(&s->devices[i]))
                        snprintf(a->own_bounds[a->n_own_bounds++], sizeof a->own_bounds[0], "%s", s->devices[i].bdi);
        qsort(a->own_bounds, a->n_own_bounds, sizeof a->own_bounds[0], own_bound_cmp);
}

/* The max the kernel gives every FUSE mount (fs/fuse/inode.c: bdi_set_max_ratio(sb->s_bdi, 1)). */
#define FUSE_KERNEL_MAX_PPM 10000

/* Its max below 100 % is of the kernel's own limit: a FUSE mount's 1 % as the kernel set it (the original we
 * saved, or the max now if never written: another value is an admin's), or one it had before our limit took
 * over. */
static bool bound_of_kernel_limit(const actuator *a, const sample *s, const char *bdi) {
        const bdi_device *bd = sample_device(s, bdi);
        const adev *d = find_dev(a, bdi);
        knob_setting set;

        if (bd && (bd->traits & BDI_TRAIT_FUSE)) {
                const knob_owner *o = d ? &d->k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] : NULL;

                if (o && o->saved)
                        return knob_setting_ppm(o->original) == FUSE_KERNEL_MAX_PPM;
                if (knob_reading_setting(KNOB_MAX_BYTES, &bd->knobs.k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], &set) >= 0 &&
                    knob_setting_ppm(set) == FUSE_KERNEL_MAX_PPM)
                        return true;
        }
        return a->n_own_bounds &&
               bsearch(bdi, a->own_bounds, a->n_own_bounds, sizeof a->own_bounds[0], own_bound_cmp) != NULL;
}

/* A max below 100 % of the kernel's own limit: the plan keeps its bytes under a limit of ours
 * (plan_input.keep_own_bounds), so the device is planned while that limit is in force. */
static bool has_own_bound(const actuator *a, const sample *s, const char *bdi) {
        const bdi_device *bd = sample_device(s, bdi);

        return bd && actuator_limit_ours(a) && max_below_full(bd) && bound_of_kernel_limit(a, s, bdi);
}

/* Read a device into the plan; false if it is gone (forgotten) or unreadable. */
static bool add_plan_device(actuator *a, planned *p, const char *bdi, const device_decision *dd, bool restore_all) {
        plan_device *pd = &p->devices[p->n_devices];
        adev *d = find_dev(a, bdi);

        snprintf(p->names[p->n_devices], sizeof p->names[0], "%s", bdi);
        *pd = (plan_device) { .bdi = p->names[p->n_devices], .owner = d ? d->k : NULL };
        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++) {
                knob_id k = (knob_id) (KNOB_DEVICE_FIRST + j);
                int r = read_now(a, bdi, k, &pd->now[j]);

                if (r < 0) {
                        if (is_gone(r)) {
                                if (d) {
                                        log_debug("%s is gone, forgetting its saved knobs.", bdi);
                                        forget_dev(a, bdi);
                                }
                                return false;
                        }
                        log_debug_errno(r, "Failed to read %s of %s: %m", knob_name(k), bdi);
                        pd->now[j] = (knob_now) {};
                }
                pd->target[j] = plan_target(dd && dd->knobs[j].wanted, dd ? dd->knobs[j].value : 0,
                                            dd ? knob_decision_reason(&dd->knobs[j]) : NULL, d ? &d->k[j] : NULL,
                                            restore_all || !dd);
        }
        /* strict_limit and min_bytes serve our own cap: under a max_bytes set by hand they go back to what
         * they were (a hand-set cap below the backlog, made strict, stops writers the kernel alone paces) */
        if (d && d->k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].overridden) {
                static const knob_id follow_cap[] = { KNOB_MIN_BYTES, KNOB_STRICT_LIMIT };

                for (size_t i = 0; i < ELEMENTSOF(follow_cap); i++) {
                        size_t j = follow_cap[i] - KNOB_DEVICE_FIRST;

                        pd->target[j] = plan_target(false, 0, NULL, &d->k[j], false);
                        if (pd->target[j].kind == TARGET_RESTORE)
                                pd->target[j].reason = "its max_bytes was set by hand: back to the original";
                }
        }
        p->n_devices++;
        return true;
}

typedef struct name_ref {
        const char *name;
        const void *item;
} name_ref;

static int name_ref_cmp(const void *a, const void *b) {
        return strcmp(((const name_ref *) a)->name, ((const name_ref *) b)->name);
}

static const name_ref *name_ref_find(const name_ref *v, size_t n, const char *name) {
        name_ref key = { name, NULL };

        return n ? bsearch(&key, v, n, sizeof *v, name_ref_cmp) : NULL;
}

/* The snapshot and targets for a plan: the decision's devices with work, and every device we still
 * hold something of. d NULL: restore everything (restore_all) or only only_bdi. */
/* The global knobs and thresholds as they are now, and their targets. */
static int build_globals(actuator *a, const sample *s, const decision *dec, bool restore_all, const char *only_bdi,
                         planned *p) {
        int r;

        *p = (planned) {};
        r = read_globals(a, &p->in);
        if (r < 0)
                return r;
        p->in.page_size = a->page_size;
        p->in.global_owner = a->g;
        p->in.dirtyable_bytes = s ? s->global.mem_available_bytes : 0;
        p->in.global_limit_unwritable = a->g[KNOB_DIRTY_BYTES].refused != 0;
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                const knob_decision *kd = dec && !only_bdi ? &dec->global[k] : NULL;
                p->in.global_target[k] = only_bdi ? (knob_target) { TARGET_NONE, 0, NULL }
                        : plan_target(kd && kd->wanted, kd ? kd->value : 0, kd ? knob_decision_reason(kd) : NULL, &a->g[k],
                                      restore_all);
        }
        return 0;
}

/* The devices as they are now (after any global write: their bytes are ratios of the new limit), with
 * the thresholds read again, and their targets. */
static int build_devices(actuator *a, const sample *s, const decision *dec, bool restore_all, const char *only_bdi,
                         planned *p) {
        _cleanup_free_ name_ref *managed = NULL, *in_plan = NULL;
        size_t n_managed = 0, n_in_plan = 0;
        int r;

        r = read_thresholds_noted(a, &p->in.thresh_pages, &p->in.bg_thresh_pages);
        if (r < 0)
                return r;
        /* known before any device write: refused by the probe or by the global write just made */
        p->in.global_limit_unwritable = a->g[KNOB_DIRTY_BYTES].refused != 0;
        if (!restore_all && !only_bdi)
                a->devices_alone = p->in.global_limit_unwritable && plan_devices_alone_safe(&p->in);
        p->devices = calloc((dec ? dec->n_devices : 0) + a->n_devices + 1, sizeof *p->devices);
        p->names = calloc((dec ? dec->n_devices : 0) + a->n_devices + 1, sizeof *p->names);
        managed = calloc((dec ? dec->n_devices : 0) + 1, sizeof *managed);
        in_plan = calloc((dec ? dec->n_devices : 0) + a->n_devices + 1, sizeof *in_plan);
        if (!p->devices || !p->names || !managed || !in_plan)
                return log_oom_error();
        p->in.devices = p->devices;
        p->in.keep_own_bounds = !restore_all && !only_bdi;

        for (size_t i = 0; dec && !restore_all && !only_bdi && i < dec->n_devices; i++) {
                const device_decision *dd = &dec->devices[i];

                if (!dd->managed)
                        continue;
                managed[n_managed++] = (name_ref) { dd->bdi, dd };
                if (!decision_has_work(dd, find_dev(a, dd->bdi)) && !has_own_bound(a, s, dd->bdi))
                        continue;
                if (dd->name[0]) {
                        adev *named = get_dev(a, dd->bdi);
                        if (named)
                                snprintf(named->name, sizeof named->name, "%s", dd->name);
                }
                if (add_plan_device(a, p, dd->bdi, dd, false)) {
                        /* (only a managed device's: one left to restore, manage = no, gets its original) */
                        p->devices[p->n_devices - 1].bound_of_kernel_limit = bound_of_kernel_limit(a, s, dd->bdi);
                        in_plan[n_in_plan++] = (name_ref) { p->devices[p->n_devices - 1].bdi, NULL };
                }
        }
        qsort(managed, n_managed, sizeof *managed, name_ref_cmp);
        /* devices we hold something of that left the decision (or the system): back to their originals */
        for (size_t i = 0; i < a->n_devices;) {
                adev *d = a->devices[i];
                size_t before = a->n_devices;

                if ((only_bdi && strcmp(d->bdi, only_bdi) != 0) || name_ref_find(managed, n_managed, d->bdi)) {
                        i++;
                        continue;
                }
                if (add_plan_device(a, p, d->bdi, NULL, true))
                        in_plan[n_in_plan++] = (name_ref) { p->devices[p->n_devices - 1].bdi, NULL };
                if (a->n_devices == before)
                        i++;
        }
        p->in.n_devices = p->n_devices;

        /* the min ratios of the devices left out count toward the kernel's 100 % */
        qsort(in_plan, n_in_plan, sizeof *in_plan, name_ref_cmp);
        for (size_t i = 0; s && i < s->n_devices; i++)
                if (!name_ref_find(in_plan, n_in_plan, s->devices[i].bdi))
                        p->in.others_min_ppm += device_min_ppm(&s->devices[i]);
        return 0;
}

static void print_plan(const actuator *a, const planned *p, const plan *pl, FILE *out) {
        for (size_t i = 0; i < pl->n_ops; i++) {
                const plan_op *o = &pl->ops[i];
                char path[PATH_MAX], old[64], new[64];
                const char *bdi = op_bdi(&p->in, o);

                knob_path(a, bdi, knob_form_file(o->knob, o->form), path, sizeof path);
                fprintf(out, "write %s %" PRIu64 "\t# %s %s %s -> %s: %s\n", path, o->value, bdi ? bdi : "global",
                        knob_name(o->knob), op_old_to_string(o, old, sizeof old),
                        knob_setting_to_string(o->knob, (knob_setting) { o->form, o->value }, new, sizeof new),
                        op_reason(o));
        }
}

/* Before anything is planned: can the global files be written at all? access() sees a read-only mount
 * (ReadOnlyPaths=/proc/sys/vm: EROFS) without writing; a refusal only the write sees (an LSM) is recorded
 * by that write, before the devices are planned. */
static void probe_globals(actuator *a) {
        char path[PATH_MAX];
        int r;

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                knob_owner *ow = &a->g[k];

                if (ow->refused || ow->written || ow->overridden)
                        continue;
                knob_path(a, NULL, knob_form_file(k, KNOB_FORM_SELF), path, sizeof path);
                r = io_writable(a, path);
                if (r < 0 && is_refusal(r)) {
                        ow->refused = r;
                        log_event(EVENT_UNWRITABLE, LOG_WARNING, "global", NULL, NULL,
                                  "%s is not writable (%s), leaving global %s alone.", path, strerror(-r), knob_name(k));
                }
        }
}

/* Snapshot, plan, run (or print). The globals are planned and run first; the devices are then read
 * and planned against the limit really in force, whatever became of the global writes. A stop or
 * `restore` tries every write now; a tick backs off from writes that failed. */
/* A limit about to fall takes every device's min and max down with it (the kernel keeps them as ratios of
 * it, bdi_ratio_from_pages()): before it falls, write them as ratios of the limit it falls to, for the bytes
 * they are to have, so no device is below them in between (a strict cap at half its size stops its writers).
 * A rising limit needs nothing: the devices are above their bytes until they are written after it. */
static void prescale_devices(actuator *a, const sample *s, const decision *dec, const plan_input *globals,
                             const plan *global_plan) {
        planned pre = {};
        plan pl = {};
        bool falls = false;

        for (size_t i = 0; i < global_plan->n_ops; i++)
                falls = falls || (global_plan->ops[i].knob == KNOB_DIRTY_BYTES && global_plan->ops[i].form == KNOB_FORM_SELF);
        /* (only a limit we have written before, and not while its writes fail: the ratios would be for nothing,
         * and written back in bytes by the pass after, every tick of the back-off. Not the first write from
         * the kernel's ratio mode: an LSM that refuses it is known only by writing it, and no device knob may
         * be written under a limit that follows memory; its devices read low for the moment until the pass
         * after it) */
        if (!falls || !actuator_limit_ours(a) || backing_off(a, &a->g[KNOB_DIRTY_BYTES], true) ||
            global_plan->thresh_pages_after == 0 || global_plan->thresh_pages_after >= globals->thresh_pages)
                return;
        pre.in = *globals;
        pre.in.devices = NULL;
        pre.in.n_devices = 0;
        pre.in.others_min_ppm = 0;
        if (build_devices(a, s, dec, false, NULL, &pre) >= 0 && !pre.in.global_limit_unwritable &&
            global_plan->thresh_pages_after < pre.in.thresh_pages) {
                pre.in.thresh_pages = global_plan->thresh_pages_after;
                pre.in.devices_as_ratio = true;
                if (plan_build_part(&pre.in, PLAN_DEVICES, &pl) < 0)
                        log_oom_error();
                else
                        (void) plan_run(a, &pre.in, &pl, false, true);
        }
        plan_done(&pl);
        planned_done(&pre);
}

static int pipeline(actuator *a, const sample *s, const decision *dec, bool restore_all, const char *only_bdi,
                    FILE *print_only) {
        bool use_backoff = !restore_all && !only_bdi;
        planned p;
        plan pl = {};
        int r, k;

        a->now_usec = s && s->time_usec ? s->time_usec : now_usec();
        if (use_backoff && !print_only)
                probe_globals(a);
        if (use_backoff && s && !actuator_limit_ours(a))
                note_own_bounds(a, s);
        r = build_globals(a, s, dec, restore_all, only_bdi, &p);
        if (r < 0) {
                /* nothing is planned on a kernel whose limits cannot be read */
                planned_done(&p);
                return r;
        }
        if (print_only) {
                r = build_devices(a, s, dec, restore_all, only_bdi, &p);
                if (r >= 0)
                        r = plan_build_part(&p.in, PLAN_ALL, &pl) < 0 ? log_oom_error() : 0;
                if (r >= 0)
                        print_plan(a, &p, &pl, print_only);
                plan_done(&pl);
                planned_done(&p);
                return r;
        }
        r = plan_build_part(&p.in, PLAN_GLOBALS, &pl) < 0 ? log_oom_error() : 0;
        if (r == 0 && use_backoff)
                prescale_devices(a, s, dec, &p.in, &pl);
        if (r == 0)
                r = plan_run(a, &p.in, &pl, true, use_backoff);
        plan_done(&pl);
        if (r != -ENOMEM) {
                k = build_devices(a, s, dec, restore_all, only_bdi, &p);
                if (k >= 0)
                        k = plan_build_part(&p.in, PLAN_DEVICES, &pl) < 0 ? log_oom_error() : plan_run(a, &p.in, &pl, false, use_backoff);
                if (r == 0)
                        r = k;
        }
        /* devices with nothing left to hold are forgotten */
        for (size_t i = 0; i < a->n_devices;) {
                if (!dev_holds(a->devices[i]))
                        forget_dev(a, a->devices[i]->bdi);
                else
                        i++;
        }
        plan_done(&pl);
        planned_done(&p);
        return r;
}

int actuator_apply(actuator *a, const sample *s, const decision *d) {
        return pipeline(a, s, d, false, NULL, NULL);
}

int actuator_plan(actuator *a, const sample *s, const decision *d, FILE *out) {
        return pipeline(a, s, d, false, NULL, out);
}

int actuator_restore_device(actuator *a, const char *bdi) {
        if (!find_dev(a, bdi))
                return 0;
        return pipeline(a, NULL, NULL, true, bdi, NULL);
}

int actuator_restore_all(actuator *a) {
        int r = pipeline(a, NULL, NULL, true, NULL, NULL);

        if (r < 0)
                log_warning_errno(r, "Could not restore every knob; %s keeps what is left: %m", a->saved_path);
        return r;
}

/* ---- overrides ------------------------------------------------------------------------ */

static bool release(knob_owner *o) {
        /* whatever the knobs read now is the starting point, not a change by someone else */
        o->seen = false;
        if (!o->overridden)
                return false;
        /* what they set is what the kernel goes back to when we stop */
        *o = (knob_owner) {};
        return true;
}

size_t actuator_release_overrides(actuator *a) {
        size_t n = 0;

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                n += release(&a->g[k]);
        for (size_t i = 0; i < a->n_devices; i++)
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        n += release(&a->devices[i]->k[j]);
        for (size_t i = 0; i < a->n_devices;) {
                if (!dev_holds(a->devices[i]))
                        forget_dev(a, a->devices[i]->bdi);
                else
                        i++;
        }
        return n;
}

/* ---- recovery ------------------------------------------------------------------------- */

/* Is what the kernel holds one of the values a crashed run wrote or was about to write? */
static bool crashed_run_wrote(const saved_entry *e, knob_setting now) {
        if (e->written && knob_setting_same(now, e->written_setting))
                return true;
        if (!e->pending || now.form != e->pending_setting.form)
                return false;
        if (now.form == KNOB_FORM_FINE) {
                /* predicted from the limit before the write: the kernel's rounding may differ a little */
                uint64_t want = e->pending_setting.value, tol = want / 100 + 100;
                return now.value + tol >= want && now.value <= want + tol;
        }
        return now.value == e->pending_setting.value;
}

int actuator_recover(actuator *a, char **ret_error) {
        _cleanup_free_ saved_entry *v = NULL;
        _cleanup_free_ char *why = NULL;
        size_t n = 0, restored = 0, left = 0;
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = saved_file_read(a->saved_path, a->page_size, &v, &n, &why);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                log_error_errno(r, "Not restoring anything from %s: it %s. Inspect it with `wbtuned --inspect-saved %s`; "
                                "remove it to let the daemon tune again.", a->saved_path, why ? why : "cannot be read",
                                a->saved_path);
                if (ret_error)
                        *ret_error = TAKE_PTR(why);
                return r;
        }
        log_notice("%s exists: a previous run did not put its knobs back; doing it now.", a->saved_path);
        a->now_usec = now_usec();
        for (size_t i = 0; i < n; i++) {
                const saved_entry *e = &v[i];
                const char *bdi = e->bdi[0] ? e->bdi : NULL;
                char s_now[64], s_orig[64];
                knob_owner *ow;
                knob_now now;

                r = read_now(a, bdi, e->knob, &now);
                if (r < 0) {
                        if (bdi && is_gone(r))
                                continue;   /* the device is gone with its knobs */
                        log_warning_errno(r, "Failed to read %s %s, keeping it in %s: %m", bdi ? bdi : "global",
                                          knob_name(e->knob), a->saved_path);
                } else if (knob_setting_same(now.setting, e->original))
                        continue;
                else if (!crashed_run_wrote(e, now.setting)) {
                        log_notice("%s %s is %s, which the previous run did not write: someone changed it, leaving it "
                                   "(its original was %s).", bdi ? bdi : "global", knob_name(e->knob),
                                   knob_setting_to_string(e->knob, now.setting, s_now, sizeof s_now),
                                   knob_setting_to_string(e->knob, e->original, s_orig, sizeof s_orig));
                        left++;
                        continue;
                }
                if (bdi) {
                        adev *d = get_dev(a, bdi);
                        if (!d)
                                return log_oom_error();
                        ow = &d->k[e->knob - KNOB_DEVICE_FIRST];
                } else
                        ow = &a->g[e->knob];
                *ow = (knob_owner) { .saved = true, .original = e->original, .written = true,
                                     .ours = r < 0 ? e->written_setting : now.setting };
                restored++;
        }
        r = actuator_restore_all(a);
        if (r < 0)
                return r;
        log_notice("Put back %zu knob(s) from %s%s.", restored, a->saved_path,
                   left ? "; some were changed by someone else and left as they are" : "");
        /* restore_all rewrote (or removed) the file; make sure a file with only left-alone entries goes */
        if (!actuator_dirty(a))
                (void) saved_file_write(a->saved_path, NULL, 0);
        return 1;
}

/* ---- queries and life cycle ----------------------------------------------------------- */

const knob_owner *actuator_owner(const actuator *a, const char *bdi, knob_id k) {
        const adev *d;

        if (!a || (unsigned) k >= _KNOB_MAX)
                return NULL;
        if (!bdi)
                return k < _KNOB_GLOBAL_MAX ? &a->g[k] : NULL;
        if (k < KNOB_DEVICE_FIRST)
                return NULL;
        d = find_dev(a, bdi);
        return d ? &d->k[k - KNOB_DEVICE_FIRST] : NULL;
}

bool actuator_dirty(const actuator *a) {
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                if (a->g[k].saved)
                        return true;
        for (size_t i = 0; i < a->n_devices; i++)
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        if (a->devices[i]->k[j].saved)
                                return true;
        return false;
}

bool actuator_limit_ours(const actuator *a) {
        const knob_owner *o = &a->g[KNOB_DIRTY_BYTES];

        return o->written && !o->overridden && !o->refused;
}

bool actuator_devices_alone(const actuator *a) {
        return a && a->devices_alone && a->g[KNOB_DIRTY_BYTES].refused;
}

bool actuator_refused(const actuator *a, knob_id *ret_knob, int *ret_error) {
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                if (a->g[k].refused) {
                        if (ret_knob)
                                *ret_knob = k;
                        if (ret_error)
                                *ret_error = a->g[k].refused;
                        return true;
                }
        return false;
}

void actuator_get_stats(const actuator *a, uint64_t now, actuator_stats *ret) {
        uint64_t second = now / 1000000ULL, last_minute = 0;

        *ret = (actuator_stats) {};
        if (!a)
                return;     /* not set up yet (or a test's manager without one) */
        for (size_t i = 0; i < MINUTE_SLOTS; i++)
                if (a->minute_stamp[i] + MINUTE_SLOTS > second && a->minute_stamp[i] <= second)
                        last_minute += a->minute_writes[i];
        *ret = (actuator_stats) { .writes_total = a->writes_total, .writes_last_minute = last_minute,
                                  .overrides_total = a->overrides_total, .failures_total = a->failures_total };
}

int actuator_new(const char *root, const char *saved_path, const knob_io *io, actuator **ret) {
        actuator *a;
        long ps = sysconf(_SC_PAGESIZE);

        if (!saved_path || !*saved_path)
                return -EINVAL;
        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->root = xstrdup(root ? root : "");
        a->saved_path = xstrdup(saved_path);
        if (io)
                a->io = *io;
        a->page_size = ps > 0 ? (uint64_t) ps : 4096;
        *ret = a;
        return 0;
}

actuator *actuator_free(actuator *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->n_devices; i++)
                free(a->devices[i]);
        free(a->devices);
        free(a->own_bounds);
        free(a->root);
        free(a->saved_path);
        free(a);
        return NULL;
}
