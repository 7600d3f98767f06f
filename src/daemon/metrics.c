/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus metrics: a table of families, each naming the protocol field it shows, a snapshot copied
 * out of the protocol's JSON objects, a pure renderer, and an atomic writer for node_exporter. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "escape.h"
#include "log.h"
#include "metrics.h"
#include "protocol.h"
#include "util.h"

typedef enum family_scope {
        SCOPE_DAEMON,      /* one sample, from the status result */
        SCOPE_DEVICE,      /* one per device, from its DEVICE object */
        SCOPE_KNOB,        /* one per knob object: the vm knobs (status "tuning"), then each device's */
} family_scope;

typedef enum family_kind {
        KIND_VALUE,        /* the number at path (a boolean is 0 or 1); no sample when it is absent or null */
        KIND_INFO,         /* 1, with the daemon's version and mode as labels */
        KIND_SUMMARY,      /* _sum at path, _count at count_path */
        KIND_STATE,        /* 1, with the knob's state as a label */
} family_kind;

#define PATH_MAX_DEPTH 3

typedef struct metrics_family {
        const char *name;
        const char *type;                       /* "gauge", "counter" or "summary" */
        family_scope scope;
        family_kind kind;
        protocol_field path[PATH_MAX_DEPTH];    /* from the scope's object down to the field */
        unsigned n_path;
        protocol_field count_path[PATH_MAX_DEPTH];
        unsigned n_count_path;
        double divisor;                         /* 0: the field's own number; else over this (1e6: usec to s) */
        bool attribution;                       /* only while throttle attribution runs */
        const char *help;
} metrics_family;

#define PATH(...) .path = { __VA_ARGS__ }, .n_path = sizeof((protocol_field[]) { __VA_ARGS__ }) / sizeof(protocol_field)
#define COUNT_PATH(...) \
        .count_path = { __VA_ARGS__ }, .n_count_path = sizeof((protocol_field[]) { __VA_ARGS__ }) / sizeof(protocol_field)
#define DAEMON(n, t, ...) .name = n, .type = t, .scope = SCOPE_DAEMON, PATH(__VA_ARGS__)
#define GLOBAL(n, t, field) DAEMON(n, t, PF_STATUS_GLOBAL, field)
#define WRITES(n, field) DAEMON(n, "counter", PF_STATUS_WRITES, field)
#define TRACE(n, field) DAEMON(n, "counter", PF_STATUS_ATTRIBUTION, PF_ATTRIBUTION_COUNTERS, field), .attribution = true
#define DEVICE(n, t, ...) .name = n, .type = t, .scope = SCOPE_DEVICE, PATH(__VA_ARGS__)
#define KNOB(n, field) .name = n, .type = "gauge", .scope = SCOPE_KNOB, PATH(field)

/* The one list of metrics: names, types, where each value comes from, and their help. */
static const metrics_family families[] = {
        { .name = "wbtuned_info", .type = "gauge", .scope = SCOPE_DAEMON, .kind = KIND_INFO,
          .help = "The daemon: its version and what it does now (mode auto, observe or dry-run); always 1." },
        { DAEMON("wbtuned_tick_interval_seconds", "gauge", PF_STATUS_TICK_MS), .divisor = 1e3,
          .help = "How often the daemon samples the writeback state ([daemon] tick)." },
        { DAEMON("wbtuned_ticks_total", "counter", PF_STATUS_TICKS),
          .help = "Ticks (sample, decide, act) since the daemon started." },
        { DAEMON("wbtuned_last_tick_duration_seconds", "gauge", PF_STATUS_LAST_TICK_WORK_USEC), .divisor = 1e6,
          .help = "How long the last tick's work took: reading the kernel's files, deciding, writing knobs." },
        { DAEMON("wbtuned_tick_duration_seconds", "summary", PF_STATUS_TICK_WORK_TOTAL_USEC), .kind = KIND_SUMMARY,
          COUNT_PATH(PF_STATUS_TICKS), .divisor = 1e6,
          .help = "The time ticks' work took, summed (_sum) over every tick (_count)." },
        { DAEMON("wbtuned_devices", "gauge", PF_STATUS_N_DEVICES),
          .help = "Backing devices (BDIs) the daemon sees." },
        { DAEMON("wbtuned_writes_enabled", "gauge", PF_STATUS_WRITES, PF_WRITES_ENABLED),
          .help = "1 while the daemon writes knobs; 0 in observe or dry-run mode, after restore, or when it cannot "
                  "(wbtunectl status says why)." },
        { DAEMON("wbtuned_devices_trusted", "gauge", PF_STATUS_KERNEL_SUPPORT, PF_KERNEL_SUPPORT_DEVICES_TRUSTED),
          .help = "0 when the devices' dirty figures may miss writers, so the daemon leaves the limits alone." },

        { GLOBAL("wbtuned_dirty_bytes", "gauge", PF_GLOBAL_DIRTY_BYTES),
          .help = "Dirty page cache, all devices (nr_dirty)." },
        { GLOBAL("wbtuned_writeback_bytes", "gauge", PF_GLOBAL_WRITEBACK_BYTES),
          .help = "Page cache under writeback, all devices (nr_writeback)." },
        { GLOBAL("wbtuned_dirty_threshold_bytes", "gauge", PF_GLOBAL_DIRTY_THRESH_BYTES),
          .help = "The kernel's dirty limit: writers are throttled towards it (nr_dirty_threshold)." },
        { GLOBAL("wbtuned_background_threshold_bytes", "gauge", PF_GLOBAL_BACKGROUND_THRESH_BYTES),
          .help = "Dirty data above which the flushers write in the background (nr_dirty_background_threshold)." },
        { GLOBAL("wbtuned_dirty_rate_bytes_per_second", "gauge", PF_GLOBAL_DIRTY_RATE_BYTES_PER_S),
          .help = "How fast data was dirtied during the last tick." },
        { GLOBAL("wbtuned_write_rate_bytes_per_second", "gauge", PF_GLOBAL_WRITE_RATE_BYTES_PER_S),
          .help = "How fast dirty data was written during the last tick." },
        { GLOBAL("wbtuned_memory_available_bytes", "gauge", PF_GLOBAL_MEM_AVAILABLE_BYTES),
          .help = "MemAvailable of /proc/meminfo." },
        { GLOBAL("wbtuned_memory_total_bytes", "gauge", PF_GLOBAL_MEM_TOTAL_BYTES),
          .help = "MemTotal of /proc/meminfo." },
        { GLOBAL("wbtuned_dirtied_bytes_total", "counter", PF_GLOBAL_DIRTIED_TOTAL_BYTES),
          .help = "Data dirtied since boot (nr_dirtied)." },
        { GLOBAL("wbtuned_written_bytes_total", "counter", PF_GLOBAL_WRITTEN_TOTAL_BYTES),
          .help = "Dirty data written since boot (nr_written)." },

        { WRITES("wbtuned_knob_writes_total", PF_WRITES_TOTAL),
          .help = "Knob files the daemon wrote." },
        { WRITES("wbtuned_knob_write_failures_total", PF_WRITES_FAILURES_TOTAL),
          .help = "Knob writes the kernel refused." },
        { WRITES("wbtuned_knob_overrides_total", PF_WRITES_OVERRIDES_TOTAL),
          .help = "Knobs found set by someone else (left alone until a reload)." },
        { WRITES("wbtuned_guard_holds_total", PF_WRITES_GUARD_HOLDS_TOTAL),
          .help = "Ticks on which the safety guard held a knob away from the policy's value." },
        { DAEMON("wbtuned_hotplug_events_total", "counter", PF_STATUS_HOTPLUG, PF_HOTPLUG_EVENTS),
          .help = "Device events (udev or the kernel's uevents) that brought a tick forward." },
        { TRACE("wbtuned_trace_events_total", PF_COUNTERS_EVENTS),
          .help = "Writeback tracepoint events read (throttle attribution)." },
        { TRACE("wbtuned_trace_lost_events_total", PF_COUNTERS_LOST_KERNEL),
          .help = "Tracepoint events the kernel dropped before the daemon read them." },
        { TRACE("wbtuned_throttle_pauses_total", PF_COUNTERS_PAUSES),
          .help = "Times a writer slept in balance_dirty_pages() (throttled)." },
        { TRACE("wbtuned_throttle_pause_seconds_total", PF_COUNTERS_PAUSE_MS), .divisor = 1e3,
          .help = "Time writers slept in balance_dirty_pages(), summed over writers." },

        { DEVICE("wbtuned_device_dirty_bytes", "gauge", PF_DEVICE_DIRTY_BYTES),
          .help = "Dirty data of the device (BdiReclaimable)." },
        { DEVICE("wbtuned_device_writeback_bytes", "gauge", PF_DEVICE_WRITEBACK_BYTES),
          .help = "Data of the device under writeback (BdiWriteback)." },
        { DEVICE("wbtuned_device_dirty_threshold_bytes", "gauge", PF_DEVICE_THRESH_BYTES),
          .help = "The device's share of the dirty limit (BdiDirtyThresh)." },
        { DEVICE("wbtuned_device_bandwidth_bytes_per_second", "gauge", PF_DEVICE_TUNING,
                 PF_DEVICE_TUNING_BW_ESTIMATE_BYTES_PER_S),
          .help = "The write bandwidth the policy takes for the device." },
        { DEVICE("wbtuned_device_backlog_seconds", "gauge", PF_DEVICE_BACKLOG_S),
          .help = "Dirty and writeback data of the device over its bandwidth: how long it needs to be clean "
                  "(0 while no bandwidth is known)." },
        { DEVICE("wbtuned_device_dirtied_bytes_total", "counter", PF_DEVICE_DIRTIED_TOTAL_BYTES),
          .help = "Data dirtied on the device (BdiDirtied); restarts at 0 when the device is replaced." },
        { DEVICE("wbtuned_device_written_bytes_total", "counter", PF_DEVICE_WRITTEN_TOTAL_BYTES),
          .help = "Dirty data written to the device (BdiWritten); restarts at 0 when the device is replaced." },
        { DEVICE("wbtuned_device_managed", "gauge", PF_DEVICE_TUNING, PF_DEVICE_TUNING_MANAGED),
          .help = "0 when the configuration says manage = no for the device." },

        { KNOB("wbtuned_knob_value", PF_KNOB_CURRENT),
          .help = "Each knob's value now, in its unit; vm knobs have no device labels." },
        { KNOB("wbtuned_knob_desired", PF_KNOB_DESIRED),
          .help = "What the daemon writes to the knob, after the safety guard; absent when it wants nothing." },
        { KNOB("wbtuned_knob_policy", PF_KNOB_POLICY),
          .help = "What the policy wants for the knob, before the safety guard; absent when it wants nothing." },
        { .name = "wbtuned_knob_state", .type = "gauge", .scope = SCOPE_KNOB, .kind = KIND_STATE,
          .help = "Who owns the knob (state: managed, no-opinion, override, unwritable, unsupported, excluded); "
                  "always 1." },
};
#define N_FAMILIES ELEMENTSOF(families)

/* --- the snapshot ----------------------------------------------------------------------------- */

typedef struct value {
        enum { VALUE_NONE, VALUE_U64, VALUE_DOUBLE } kind;
        union {
                uint64_t u;
                double d;
        };
} value;

/* Each family's place among the values of its scope's objects (so a device keeps only its own). */
static size_t family_slot[N_FAMILIES], scope_slots[SCOPE_KNOB + 1];

static void slots_init(void) {
        static bool done;

        if (done)
                return;
        for (size_t i = 0; i < N_FAMILIES; i++)
                family_slot[i] = scope_slots[families[i].scope]++;
        done = true;
}

typedef struct knob_sample {
        char *labels;               /* knob="max_bytes",unit="bytes", escaped */
        char *state_label;          /* state="managed", escaped */
        value *values;              /* of the SCOPE_KNOB families, by slot */
} knob_sample;

/* The daemon or one device: its labels, the values of its scope's families and its knobs. */
typedef struct entity {
        char *labels;               /* bdi="7:3",device="loop3",mount="/mnt/x",fstype="ext4"; "" for the daemon */
        value *values;              /* by slot */
        value *counts;              /* a summary's _count, by slot (the daemon's only) */
        knob_sample *knobs;
        size_t n_knobs;
} entity;

struct metrics_snapshot {
        entity daemon;
        char *info_labels;          /* version="0.1.0",mode="auto" */
        bool attribution;           /* the trace runs: its families are shown */
        entity *devices;
        size_t n_devices, allocated;
};

/* A label value as the format wants it: UTF-8 (other bytes as U+FFFD), with backslash, double quote and
 * newline escaped. Device names and mount points come from users (FUSE) and may hold anything. */
static char *label_value(const char *s) {
        _cleanup_free_ char *utf8 = NULL;
        size_t len = 0, n = 0;
        char *out;

        utf8 = utf8_sanitize(s ? s : "", s ? strlen(s) : 0, &len);
        if (!utf8)
                return NULL;
        out = malloc(2 * len + 1);
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (utf8[i] == '\\' || utf8[i] == '"' || utf8[i] == '\n') {
                        out[n++] = '\\';
                        out[n++] = utf8[i] == '\n' ? 'n' : utf8[i];
                } else
                        out[n++] = utf8[i];
        }
        out[n] = 0;
        return out;
}

/* name="value",name="value"... of n pairs; NULL on out of memory. */
static char *labels(size_t n, const char *const *pairs) {
        _cleanup_memstream_ memstream ms = {};
        char *text;

        if (!memstream_open(&ms))
                return NULL;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *v = label_value(pairs[2 * i + 1]);

                if (!v)
                        return NULL;
                fprintf(ms.f, "%s%s=\"%s\"", i > 0 ? "," : "", pairs[2 * i], v);
        }
        return memstream_finish(&ms, &text, NULL) < 0 ? NULL : text;
}

/* The value at path under o, as the field's type says; VALUE_NONE when absent, null or of another type. */
static value read_value(json_object *o, const protocol_field *path, unsigned n_path, double divisor) {
        const protocol_field_info *leaf = &protocol_fields[path[n_path - 1]];
        value v = { .kind = VALUE_NONE };
        json_object *j = o;

        for (unsigned i = 0; i < n_path && j; i++)
                j = proto_get(j, path[i]);
        if (!j)
                return v;
        if (leaf->type == PROTO_U64 && json_object_is_type(j, json_type_int) && json_object_get_int64(j) >= 0)
                v = (value) { .kind = VALUE_U64, .u = json_object_get_uint64(j) };
        else if (leaf->type == PROTO_DOUBLE && (json_object_is_type(j, json_type_double) ||
                                                json_object_is_type(j, json_type_int)))
                v = (value) { .kind = VALUE_DOUBLE, .d = json_object_get_double(j) };
        else if (leaf->type == PROTO_BOOL && json_object_is_type(j, json_type_boolean))
                v = (value) { .kind = VALUE_U64, .u = json_object_get_boolean(j) ? 1 : 0 };
        /* a division, not a product with 1e-6: 1234 / 1e6 is the double nearest 0.001234, 1234 * 1e-6 is not */
        if (divisor != 0 && v.kind != VALUE_NONE)
                v = (value) { .kind = VALUE_DOUBLE, .d = (v.kind == VALUE_U64 ? (double) v.u : v.d) / divisor };
        return v;
}

static int read_values(entity *e, json_object *o, family_scope scope) {
        e->values = calloc(MAX(scope_slots[scope], (size_t) 1), sizeof e->values[0]);
        if (!e->values)
                return -ENOMEM;
        if (scope == SCOPE_DAEMON) {
                e->counts = calloc(MAX(scope_slots[scope], (size_t) 1), sizeof e->counts[0]);
                if (!e->counts)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < N_FAMILIES; i++) {
                const metrics_family *fam = &families[i];

                if (fam->scope != scope || fam->n_path == 0)
                        continue;
                e->values[family_slot[i]] = read_value(o, fam->path, fam->n_path, fam->divisor);
                if (fam->kind == KIND_SUMMARY && e->counts)
                        e->counts[family_slot[i]] = read_value(o, fam->count_path, fam->n_count_path, 0);
        }
        return 0;
}

/* The knob objects of a tuning object ({"knobs": [...]}). */
static int read_knobs(entity *e, json_object *tuning) {
        json_object *knobs = proto_get(tuning, PF_TUNING_KNOBS);
        size_t n = json_object_is_type(knobs, json_type_array) ? json_object_array_length(knobs) : 0;

        if (n == 0)
                return 0;
        e->knobs = calloc(n, sizeof e->knobs[0]);
        if (!e->knobs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *k = json_object_array_get_idx(knobs, i);
                knob_sample *ks = &e->knobs[e->n_knobs];
                const char *pairs[] = { "knob", proto_str(k, PF_KNOB_KNOB), "unit", proto_str(k, PF_KNOB_UNIT) },
                           *state[] = { "state", proto_str(k, PF_KNOB_STATE) };

                if (!json_object_is_type(k, json_type_object))
                        continue;
                e->n_knobs++;
                ks->labels = labels(2, pairs);
                ks->state_label = labels(1, state);
                ks->values = calloc(MAX(scope_slots[SCOPE_KNOB], (size_t) 1), sizeof ks->values[0]);
                if (!ks->labels || !ks->state_label || !ks->values)
                        return -ENOMEM;
                for (size_t f = 0; f < N_FAMILIES; f++)
                        if (families[f].scope == SCOPE_KNOB && families[f].n_path > 0)
                                ks->values[family_slot[f]] = read_value(k, families[f].path, families[f].n_path,
                                                                        families[f].divisor);
        }
        return 0;
}

static void entity_done(entity *e) {
        for (size_t i = 0; i < e->n_knobs; i++) {
                free(e->knobs[i].labels);
                free(e->knobs[i].state_label);
                free(e->knobs[i].values);
        }
        free(e->knobs);
        free(e->values);
        free(e->counts);
        free(e->labels);
}

int metrics_snapshot_new(json_object *status, metrics_snapshot **ret) {
        metrics_snapshot *s = calloc(1, sizeof *s);
        const char *info[] = { "version", proto_str(status, PF_STATUS_PACKAGE_VERSION),
                               "mode", proto_str(status, PF_STATUS_MODE) };

        if (!s)
                return -ENOMEM;
        slots_init();
        s->daemon.labels = xstrdup("");
        s->info_labels = labels(2, info);
        s->attribution = proto_bool(proto_get(status, PF_STATUS_ATTRIBUTION), PF_ATTRIBUTION_ENABLED);
        if (!s->info_labels || read_values(&s->daemon, status, SCOPE_DAEMON) < 0 ||
            read_knobs(&s->daemon, proto_get(status, PF_STATUS_TUNING)) < 0) {
                metrics_snapshot_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

int metrics_snapshot_add_device(metrics_snapshot *s, json_object *device) {
        json_object *mounts = proto_get(device, PF_DEVICE_MOUNTS);
        const char *mount = json_object_is_type(mounts, json_type_array) && json_object_array_length(mounts) > 0 ?
                            proto_value_str(json_object_array_get_idx(mounts, 0)) : "";
        const char *pairs[] = { "bdi", proto_str(device, PF_DEVICE_BDI), "device", proto_str(device, PF_DEVICE_NAME),
                                "mount", mount, "fstype", proto_str(device, PF_DEVICE_FSTYPE) };
        entity *e;

        if (grow_array((void **) &s->devices, &s->allocated, s->n_devices, sizeof s->devices[0]) < 0)
                return -ENOMEM;
        e = &s->devices[s->n_devices++];
        *e = (entity) {};
        e->labels = labels(4, pairs);
        if (!e->labels || read_values(e, device, SCOPE_DEVICE) < 0 ||
            read_knobs(e, proto_get(device, PF_DEVICE_TUNING)) < 0)
                return -ENOMEM;
        return 0;
}

metrics_snapshot *metrics_snapshot_free(metrics_snapshot *s) {
        if (!s)
                return NULL;
        entity_done(&s->daemon);
        for (size_t i = 0; i < s->n_devices; i++)
                entity_done(&s->devices[i]);
        free(s->devices);
        free(s->info_labels);
        free(s);
        return NULL;
}

/* --- rendering -------------------------------------------------------------------------------- */

size_t metrics_family_count(void) {
        return N_FAMILIES;
}

const char *metrics_family_name(size_t family) {
        return family < N_FAMILIES ? families[family].name : NULL;
}

const char *metrics_format_double(double v, char *buf, size_t size) {
        if (isnan(v))
                snprintf(buf, size, "NaN");
        else if (isinf(v))
                snprintf(buf, size, "%s", v > 0 ? "+Inf" : "-Inf");
        else {
                snprintf(buf, size, "%.15g", v);
                if (strtod(buf, NULL) != v)
                        snprintf(buf, size, "%.17g", v);
        }
        return buf;
}

/* Integers exactly, others as metrics_format_double() says. */
static void print_value(FILE *f, value v) {
        char buf[32];

        if (v.kind == VALUE_U64)
                fprintf(f, "%" PRIu64, v.u);
        else
                fputs(metrics_format_double(v.d, buf, sizeof buf), f);
}

/* name{a,b,c} value: a, b and c are label lists, any of them may be empty. */
static void print_sample(FILE *f, const char *name, const char *suffix, const char *a, const char *b, const char *c,
                         value v) {
        const char *lists[] = { a, b, c };
        bool open = false;

        fprintf(f, "%s%s", name, suffix);
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                if (!*lists[i])
                        continue;
                fprintf(f, "%c%s", open ? ',' : '{', lists[i]);
                open = true;
        }
        fputs(open ? "} " : " ", f);
        print_value(f, v);
        fputc('\n', f);
}

/* HELP text: backslash and newline escaped. */
static void print_help(FILE *f, const char *name, const char *help) {
        fprintf(f, "# HELP %s ", name);
        for (const char *p = help; *p; p++) {
                if (*p == '\\')
                        fputs("\\\\", f);
                else if (*p == '\n')
                        fputs("\\n", f);
                else
                        fputc(*p, f);
        }
        fputc('\n', f);
}

static bool entity_has_sample(const metrics_family *fam, size_t i, const entity *e) {
        if (fam->scope != SCOPE_KNOB)
                return e->values && e->values[family_slot[i]].kind != VALUE_NONE;
        for (size_t k = 0; k < e->n_knobs; k++)
                if (fam->kind == KIND_STATE || e->knobs[k].values[family_slot[i]].kind != VALUE_NONE)
                        return true;
        return false;
}

static bool family_has_samples(const metrics_snapshot *s, size_t i) {
        const metrics_family *fam = &families[i];

        if (fam->attribution && !s->attribution)
                return false;
        if (fam->kind == KIND_INFO)
                return true;
        if (fam->scope != SCOPE_DEVICE && entity_has_sample(fam, i, &s->daemon))
                return true;
        if (fam->scope == SCOPE_DAEMON)
                return false;
        for (size_t d = 0; d < s->n_devices; d++)
                if (entity_has_sample(fam, i, &s->devices[d]))
                        return true;
        return false;
}

static void render_entity(FILE *f, const metrics_family *fam, size_t i, const entity *e) {
        size_t slot = family_slot[i];

        if (fam->scope != SCOPE_KNOB) {
                if (e->values[slot].kind == VALUE_NONE)
                        return;
                print_sample(f, fam->name, fam->kind == KIND_SUMMARY ? "_sum" : "", e->labels, "", "", e->values[slot]);
                if (fam->kind == KIND_SUMMARY && e->counts && e->counts[slot].kind != VALUE_NONE)
                        print_sample(f, fam->name, "_count", e->labels, "", "", e->counts[slot]);
                return;
        }
        for (size_t k = 0; k < e->n_knobs; k++) {
                const knob_sample *ks = &e->knobs[k];

                if (fam->kind == KIND_STATE)
                        print_sample(f, fam->name, "", e->labels, ks->labels, ks->state_label,
                                     (value) { .kind = VALUE_U64, .u = 1 });
                else if (ks->values[slot].kind != VALUE_NONE)
                        print_sample(f, fam->name, "", e->labels, ks->labels, "", ks->values[slot]);
        }
}

/* Where a rendering stands: a family, and in it step 0 (its HELP and TYPE and the daemon's samples) or
 * step 1 + d (the samples of device d). */
typedef struct cursor {
        size_t family, step;
} cursor;

static void render_step(const metrics_snapshot *s, const cursor *c, FILE *f) {
        const metrics_family *fam = &families[c->family];

        if (c->step > 0) {
                render_entity(f, fam, c->family, &s->devices[c->step - 1]);
                return;
        }
        print_help(f, fam->name, fam->help);
        fprintf(f, "# TYPE %s %s\n", fam->name, fam->type);
        if (fam->kind == KIND_INFO)
                print_sample(f, fam->name, "", s->info_labels, "", "", (value) { .kind = VALUE_U64, .u = 1 });
        else if (fam->scope != SCOPE_DEVICE)
                render_entity(f, fam, c->family, &s->daemon);
}

/* Move to the next step, skipping families without a sample; false after the last. */
static bool cursor_next(const metrics_snapshot *s, cursor *c) {
        if (c->family < N_FAMILIES && families[c->family].scope != SCOPE_DAEMON && c->step < s->n_devices) {
                c->step++;
                return true;
        }
        c->step = 0;
        while (++c->family < N_FAMILIES)
                if (family_has_samples(s, c->family))
                        return true;
        return false;
}

static bool cursor_first(const metrics_snapshot *s, cursor *c) {
        *c = (cursor) { .family = 0 };
        return family_has_samples(s, 0) || cursor_next(s, c);
}

int metrics_render(const metrics_snapshot *s, FILE *f) {
        cursor c;

        if (cursor_first(s, &c))
                do
                        render_step(s, &c, f);
                while (cursor_next(s, &c));
        return ferror(f) ? -EIO : 0;
}

/* --- the streamed verb result ------------------------------------------------------------------- */

/* A piece of the streamed text is at least this long (but for the last), and longer by at most one
 * device's samples of one family: what the daemon holds of a reply besides the snapshot. */
#define PIECE_BYTES (64u * 1024)

typedef struct text_stream {
        metrics_snapshot *s;
        cursor at;
        bool more;
} text_stream;

static void text_stream_free(void *state) {
        text_stream *st = state;

        if (!st)
                return;
        metrics_snapshot_free(st->s);
        free(st);
}

static int text_stream_next(void *state, char **ret_name, json_object **ret_item) {
        text_stream *st = state;
        _cleanup_memstream_ memstream ms = {};
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        if (!st->more)
                return 0;
        if (!memstream_open(&ms))
                return -ENOMEM;
        do
                render_step(st->s, &st->at, ms.f);
        while ((st->more = cursor_next(st->s, &st->at)) && ftell(ms.f) < (long) PIECE_BYTES);
        r = memstream_finish(&ms, &text, &size);
        if (r < 0)
                return r;
        *ret_item = oom_check(json_object_new_string_len(text, (int) MIN(size, (size_t) INT32_MAX)));
        *ret_name = NULL;
        return *ret_item ? 1 : -ENOMEM;
}

int metrics_stream(metrics_snapshot *s, control_stream *ret) {
        text_stream *st = calloc(1, sizeof *st);

        if (!st) {
                metrics_snapshot_free(s);
                return -ENOMEM;
        }
        st->s = s;
        st->more = cursor_first(s, &st->at);
        *ret = (control_stream) {
                .key = protocol_name(PF_METRICS_TEXT),
                .keyed = false,
                .next = text_stream_next,
                .free_state = text_stream_free,
                .state = st,
        };
        return 0;
}

/* --- the textfile --------------------------------------------------------------------------------- */

/* The textfile's directory, opened once for everything done in it (see dir_open_private(): a
 * directory another user could change would let a symbolic link swapped in for it make us create and
 * later remove files elsewhere). *ret_name: the file's name in it. The fd, or -errno (*ret_error). */
static int textfile_dir_open(const char *path, const char **ret_name, char **ret_error) {
        _cleanup_free_ char *dir = NULL;
        const char *slash = strrchr(path, '/');

        *ret_error = NULL;
        if (!slash || !slash[1])
                return -EINVAL;
        dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        *ret_name = slash + 1;
        return dir_open_private(dir, ret_error);
}

/* A new file ".NAME.XXXXXX" in dir_fd (a name node_exporter skips: not *.prom), its name in tmp.
 * Nobody else can write the directory, so the name need not be unguessable, only new (O_EXCL). */
static int textfile_tmp_create(int dir_fd, const char *name, char *tmp, size_t size) {
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        static unsigned counter;

        for (unsigned attempt = 0; attempt < 100; attempt++) {
                uint64_t x = (now_usec() ^ ((uint64_t) getpid() << 32)) + (uint64_t) counter++ * 0x9e3779b97f4a7c15ULL;
                char suffix[7];
                int fd;

                for (size_t i = 0; i < 6; i++, x /= sizeof digits - 1)
                        suffix[i] = digits[x % (sizeof digits - 1)];
                suffix[6] = 0;
                if ((size_t) snprintf(tmp, size, ".%s.%s", name, suffix) >= size)
                        return -ENAMETOOLONG;
                fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd >= 0 || errno != EEXIST)
                        return fd >= 0 ? fd : -errno;
        }
        return -EEXIST;
}

int metrics_write_file(const char *path, const metrics_snapshot *s, struct stat *ret_st, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int dir_fd = -1;
        const char *name = NULL;
        char tmp[NAME_MAX + 1];
        struct stat st;
        FILE *f;
        int fd, r;

        if (ret_error)
                *ret_error = NULL;
        dir_fd = textfile_dir_open(path, &name, &why);
        if (dir_fd < 0) {
                if (ret_error && dir_fd != -ENOENT)
                        *ret_error = TAKE_PTR(why);   /* a missing directory: errno says it all */
                return dir_fd;
        }
        /* the same directory, so the rename is atomic */
        fd = textfile_tmp_create(dir_fd, name, tmp, sizeof tmp);
        if (fd < 0)
                return fd;
        /* node_exporter runs as its own user: it must be able to read the file */
        if (fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w"))) {
                r = -errno;
                close(fd);
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        r = metrics_render(s, f);
        /* no fsync: a file lost in a crash costs nothing, and forcing it out every interval would be
         * writeback the daemon itself causes */
        if (fflush(f) != 0 && r >= 0)
                r = -errno;
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dir_fd, tmp, 0);
                return r;
        }
        /* after the rename, which changes its ctime; nobody else can have touched the directory since */
        if (ret_st && fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (ret_st)
                *ret_st = st;
        return 0;
}

bool metrics_textfile_due(const metrics_textfile *t, const char *path, uint64_t interval_usec, uint64_t now_usec) {
        if (!path || !*path)
                return false;
        return t->attempt_usec == 0 || strcmp(t->path, path) != 0 || now_usec >= t->attempt_usec + interval_usec;
}

/* The inode's change time: with the size, an inode number freed and given to a new file does not
 * make that file ours. */
static uint64_t stat_ctime_nsec(const struct stat *st) {
        return (uint64_t) st->st_ctim.tv_sec * 1000000000u + (uint64_t) st->st_ctim.tv_nsec;
}

#define TEXTFILE_RETRY "Trying again at every metrics_interval; logged again only when this changes."

int metrics_textfile_write(metrics_textfile *t, const char *path, const metrics_snapshot *s, uint64_t now_usec) {
        _cleanup_free_ char *why = NULL;
        struct stat st;
        int r;

        if (strcmp(t->path, path) != 0) {
                metrics_textfile_remove(t);
                snprintf(t->path, sizeof t->path, "%s", path);
        }
        t->attempt_usec = MAX(now_usec, (uint64_t) 1);
        r = metrics_write_file(path, s, &st, &why);
        if (r < 0) {
                if (t->error != r) {
                        const char *slash = strrchr(path, '/');
                        int dir_len = slash && slash != path ? (int) (slash - path) : 1;

                        if (why)
                                log_warning_errno(r, "Failed to write the metrics file %s: %s. " TEXTFILE_RETRY, path, why);
                        else if (r == -EROFS)
                                /* the shipped unit's ProtectSystem=strict leaves only ReadWritePaths= writable */
                                log_warning_errno(r, "Failed to write the metrics file %s: %m. Under wbtuned.service "
                                                  "(ProtectSystem=strict) a directory is writable only when listed: add "
                                                  "\"ReadWritePaths=%.*s\" to [Service] in a drop-in (systemctl edit "
                                                  "wbtuned.service). " TEXTFILE_RETRY, path, dir_len, path);
                        else
                                log_warning_errno(r, "Failed to write the metrics file %s: %m. " TEXTFILE_RETRY, path);
                }
                t->error = r;
                return r;
        }
        if (t->error != 0)
                log_notice("Writing the metrics file %s again.", path);
        t->error = 0;
        t->written = true;
        t->dev = (uint64_t) st.st_dev;
        t->ino = (uint64_t) st.st_ino;
        t->ctime_nsec = stat_ctime_nsec(&st);
        t->size = (uint64_t) st.st_size;
        return 0;
}

void metrics_textfile_remove(metrics_textfile *t) {
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int dir_fd = -1;
        const char *name = NULL;
        struct stat st;

        if (!t->written)
                goto done;
        dir_fd = textfile_dir_open(t->path, &name, &why);
        if (dir_fd == -ENOENT)
                goto done;                       /* gone with its directory */
        if (dir_fd < 0) {
                log_warning_errno(dir_fd, "Not removing the metrics file %s: %s.", t->path, why ? why : strerror(-dir_fd));
                goto done;
        }
        /* only while it is still the file we wrote: not one that took its place since */
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        log_warning_errno(errno, "Failed to examine the metrics file %s: %m", t->path);
        } else if ((uint64_t) st.st_dev != t->dev || (uint64_t) st.st_ino != t->ino ||
                   stat_ctime_nsec(&st) != t->ctime_nsec || (uint64_t) st.st_size != t->size)
                log_notice("Not removing the metrics file %s: it is no longer the file this daemon wrote.", t->path);
        else if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove the metrics file %s: %m", t->path);
done:
        *t = (metrics_textfile) {};
}
