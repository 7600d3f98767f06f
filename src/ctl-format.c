/* wbtunectl's human output: status lines, the device table and one device's fields. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "ctl-format.h"
#include "util.h"

#define VALUE_MAX 512
#define TABLE_COLUMNS_MAX 16

/* --- reading result objects that may lack fields (older or newer daemons) --------------- */

static json_object *get(json_object *o, const char *key) {
        json_object *v;
        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool has(json_object *o, const char *key) {
        return get(o, key) != NULL;
}

static uint64_t get_u64(json_object *o, const char *key) {
        json_object *v = get(o, key);
        return v ? json_object_get_uint64(v) : 0;
}

static double get_double(json_object *o, const char *key) {
        json_object *v = get(o, key);
        return v ? json_object_get_double(v) : 0.0;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v = get(o, key);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* "sda", or "dm-0 (vg0-root)" when the device has a device-mapper name. */
static const char *name_str(char *buf, size_t size, json_object *d) {
        const char *alias = get_str(d, "alias");

        if (!alias[0])
                return get_str(d, "name");
        snprintf(buf, size, "%s (%s)", get_str(d, "name"), alias);
        return buf;
}

/* "12.0M"; bytes < 1024 as plain digits. */
static const char *bytes_str(char *buf, size_t size, uint64_t bytes) {
        return format_bytes(buf, size, bytes);
}

static const char *rate_str(char *buf, size_t size, uint64_t bytes_per_s) {
        char b[32];
        snprintf(buf, size, "%s/s", format_bytes(b, sizeof b, bytes_per_s));
        return buf;
}

/* "12.3s", "4min 5s", "2h 3min", "1d 2h". */
static const char *duration_str(char *buf, size_t size, double s) {
        uint64_t t = (uint64_t) s;

        if (s < 60.0)
                snprintf(buf, size, "%.1fs", s);
        else if (t < 3600)
                snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", t / 60, t % 60);
        else if (t < 86400)
                snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", t / 3600, t % 3600 / 60);
        else
                snprintf(buf, size, "%" PRIu64 "d %" PRIu64 "h", t / 86400, t % 86400 / 3600);
        return buf;
}

/* Parts per million of the whole as a percentage without trailing zeros: 125000 -> "12.5%". */
static const char *ppm_str(char *buf, size_t size, uint64_t ppm) {
        snprintf(buf, size, "%.4f", (double) ppm / 10000.0);
        char *dot = strchr(buf, '.');
        if (dot) {
                char *end = buf + strlen(buf) - 1;
                while (end > dot && *end == '0')
                        *end-- = '\0';
                if (end == dot)
                        *end = '\0';
        }
        strncat(buf, "%", size - strlen(buf) - 1);
        return buf;
}

/* Comma-joined array of strings; "" if none. */
static const char *join_array(char *buf, size_t size, json_object *a, const char *sep) {
        buf[0] = '\0';
        if (!a || !json_object_is_type(a, json_type_array))
                return buf;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(a, i));
                if (i > 0)
                        strncat(buf, sep, size - strlen(buf) - 1);
                strncat(buf, s ? s : "", size - strlen(buf) - 1);
        }
        return buf;
}

/* --- "Key: value" lists, keys right-aligned ---------------------------------------------- */

typedef struct kv_list {
        char keys[64][40];
        char values[64][VALUE_MAX];
        size_t n;
} kv_list;

static void kv_add(kv_list *l, const char *key, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void kv_add(kv_list *l, const char *key, const char *format, ...) {
        va_list ap;

        if (l->n >= ELEMENTSOF(l->keys))
                return;
        snprintf(l->keys[l->n], sizeof l->keys[0], "%s", key);
        va_start(ap, format);
        vsnprintf(l->values[l->n], sizeof l->values[0], format, ap);
        va_end(ap);
        l->n++;
}

static void kv_print(const kv_list *l, FILE *f) {
        int width = 0;
        for (size_t i = 0; i < l->n; i++)
                width = MAX(width, (int) strlen(l->keys[i]));
        for (size_t i = 0; i < l->n; i++)
                fprintf(f, "%*s: %s\n", width, l->keys[i], l->values[i]);
}

/* --- status ------------------------------------------------------------------------------ */

/* The kernel uses *_bytes when non-zero, else *_ratio (of dirtyable memory); writing one zeroes the other. */
static void add_limit(kv_list *l, const char *key, json_object *knobs, const char *bytes_key, const char *ratio_key) {
        char b[32];
        uint64_t bytes = get_u64(knobs, bytes_key);

        if (bytes > 0)
                kv_add(l, key, "%s (vm.%s; vm.%s unused)", bytes_str(b, sizeof b, bytes), bytes_key, ratio_key);
        else
                kv_add(l, key, "%" PRIu64 "%% of dirtyable memory (vm.%s; vm.%s unset)",
                       get_u64(knobs, ratio_key), ratio_key, bytes_key);
}

int ctl_format_status(json_object *result, FILE *f) {
        json_object *global = get(result, "global"), *knobs = get(global, "knobs");
        char a[32], b[32], c[32];
        _cleanup_free_ kv_list *l = calloc(1, sizeof *l);

        if (!l)
                return -ENOMEM;
        if (!has(result, "version") || !global)
                return -EBADMSG;

        kv_add(l, "Version", "%s", get_str(result, "version"));
        kv_add(l, "PID", "%" PRIu64, get_u64(result, "pid"));
        kv_add(l, "Uptime", "%s", duration_str(a, sizeof a, get_double(result, "uptime_s")));
        const char *mode = get_str(result, "mode");
        kv_add(l, "Mode", "%s%s", mode,
               json_object_get_boolean(get(result, "dry_run")) && !strstr(mode, "dry") ? " (dry run)" : "");
        kv_add(l, "Tick", "%" PRIu64 " ms", get_u64(result, "tick_ms"));
        if (has(result, "ticks"))
                kv_add(l, "Ticks", "%" PRIu64, get_u64(result, "ticks"));
        kv_add(l, "Stats source", "%s", get_str(result, "stats_source"));
        if (*get_str(result, "root") && strcmp(get_str(result, "root"), "/") != 0)
                kv_add(l, "Root", "%s (not the live system)", get_str(result, "root"));
        kv_add(l, "Devices", "%" PRIu64, get_u64(result, "n_devices"));
        kv_add(l, "Config", "%s", get_str(result, "config"));

        kv_add(l, "Dirty", "%s", bytes_str(a, sizeof a, get_u64(global, "dirty_bytes")));
        kv_add(l, "Writeback", "%s", bytes_str(a, sizeof a, get_u64(global, "writeback_bytes")));
        kv_add(l, "Thresholds", "%s throttle, %s background",
               bytes_str(a, sizeof a, get_u64(global, "dirty_thresh_bytes")),
               bytes_str(b, sizeof b, get_u64(global, "background_thresh_bytes")));
        kv_add(l, "Rates", "%s dirtied, %s written",
               rate_str(a, sizeof a, get_u64(global, "dirty_rate_bytes_per_s")),
               rate_str(b, sizeof b, get_u64(global, "write_rate_bytes_per_s")));
        kv_add(l, "Totals", "%s dirtied, %s written",
               bytes_str(a, sizeof a, get_u64(global, "dirtied_total_bytes")),
               bytes_str(b, sizeof b, get_u64(global, "written_total_bytes")));
        kv_add(l, "Memory", "%s available of %s",
               bytes_str(a, sizeof a, get_u64(global, "mem_available_bytes")),
               bytes_str(c, sizeof c, get_u64(global, "mem_total_bytes")));

        if (knobs) {
                add_limit(l, "Dirty limit", knobs, "dirty_bytes", "dirty_ratio");
                add_limit(l, "Background limit", knobs, "dirty_background_bytes", "dirty_background_ratio");
                uint64_t cs = get_u64(knobs, "dirty_writeback_centisecs");
                if (cs == 0)
                        kv_add(l, "Flusher wakeup", "disabled (vm.dirty_writeback_centisecs=0)");
                else
                        kv_add(l, "Flusher wakeup", "every %.2fs (vm.dirty_writeback_centisecs=%" PRIu64 ")",
                               (double) cs / 100.0, cs);
                cs = get_u64(knobs, "dirty_expire_centisecs");
                kv_add(l, "Dirty expire", "after %.2fs (vm.dirty_expire_centisecs=%" PRIu64 ")",
                       (double) cs / 100.0, cs);
        }

        json_object *attr = get(result, "attribution"), *hist = get(result, "history");
        if (attr) {
                json_object *counters = get(attr, "counters");
                char line[VALUE_MAX];

                kv_add(l, "Attribution", "%s", ctl_format_attribution(attr, line, sizeof line));
                if (json_object_get_boolean(get(attr, "taskstats")))
                        kv_add(l, "Taskstats", "yes (per-task write bytes%s)",
                               json_object_get_boolean(get(attr, "delayacct")) ? " and block I/O delay" : "");
                else
                        kv_add(l, "Taskstats", "no: %s", *get_str(attr, "taskstats_reason") ? get_str(attr, "taskstats_reason") : "off");
                kv_add(l, "Delay accounting", "%s (kernel.task_delayacct)",
                       json_object_get_boolean(get(attr, "delayacct")) ? "on" : "off");
                if (json_object_get_boolean(get(attr, "enabled")))
                        kv_add(l, "Trace counters", "%" PRIu64 " events, %" PRIu64 " lost by the kernel (%" PRIu64
                               " markers), dropped %" PRIu64 " tasks %" PRIu64 " devices, %" PRIu64 " bad lines, %" PRIu64 " budget hits",
                               get_u64(counters, "events"), get_u64(counters, "lost_kernel"),
                               get_u64(counters, "lost_markers"), get_u64(counters, "dropped_tasks"),
                               get_u64(counters, "dropped_devices"), get_u64(counters, "bad_lines"),
                               get_u64(counters, "budget_hits"));
        }
        if (hist)
                kv_add(l, "History", "%" PRIu64 " min kept, %" PRIu64 " ticks of %" PRIu64 " devices held (%s)",
                       get_u64(hist, "minutes"), get_u64(hist, "ticks"), get_u64(hist, "devices"),
                       bytes_str(a, sizeof a, get_u64(hist, "memory_bytes")));

        kv_print(l, f);
        if (get(result, "tuning")) {
                fputs("\nGlobal tuning:\n", f);
                return ctl_format_tuning(get(result, "tuning"), f);
        }
        return 0;
}

/* --- knobs and bandwidth --------------------------------------------------------------- */

const char *ctl_format_knobs(json_object *knobs, char *buf, size_t size) {
        char a[32], b[32];
        size_t used = 0;

        buf[0] = '\0';
#define APPEND(...) do { \
                int _n = snprintf(buf + used, size > used ? size - used : 0, "%s", used ? " " : ""); \
                used += _n > 0 ? (size_t) _n : 0; \
                _n = snprintf(buf + used, size > used ? size - used : 0, __VA_ARGS__); \
                used += _n > 0 ? (size_t) _n : 0; \
                used = MIN(used, size ? size - 1 : 0); \
        } while (0)

        /* min: the kernel keeps ratios; min_bytes is an input converted to a ratio, so show the ratio. */
        if (has(knobs, "min_ratio_fine") && get_u64(knobs, "min_ratio_fine") > 0)
                APPEND("min %s", ppm_str(a, sizeof a, get_u64(knobs, "min_ratio_fine")));
        else if (has(knobs, "min_ratio") && get_u64(knobs, "min_ratio") > 0)
                APPEND("min %" PRIu64 "%%", get_u64(knobs, "min_ratio"));

        /* max: a ratio; below 100% the byte figure it stands for right now helps, when the kernel has it. */
        bool have_max = true;
        if (has(knobs, "max_ratio_fine"))
                ppm_str(a, sizeof a, get_u64(knobs, "max_ratio_fine"));
        else if (has(knobs, "max_ratio"))
                snprintf(a, sizeof a, "%" PRIu64 "%%", get_u64(knobs, "max_ratio"));
        else
                have_max = false;
        bool full = has(knobs, "max_ratio_fine") ? get_u64(knobs, "max_ratio_fine") >= 1000000 :
                                                   get_u64(knobs, "max_ratio") >= 100;
        if (have_max && !full && has(knobs, "max_bytes"))
                APPEND("max %s (%s)", bytes_str(b, sizeof b, get_u64(knobs, "max_bytes")), a);
        else if (have_max)
                APPEND("max %s", a);
        else if (has(knobs, "max_bytes"))
                APPEND("max %s", bytes_str(b, sizeof b, get_u64(knobs, "max_bytes")));

        if (has(knobs, "strict_limit"))
                APPEND("strict %" PRIu64, get_u64(knobs, "strict_limit"));
#undef APPEND
        return buf;
}

unsigned long long ctl_device_bw(json_object *device) {
        static const char *const keys[] = { "wb_bw_bytes_per_s", "kernel_bw_bytes_per_s", "write_bw_bytes_per_s" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                uint64_t v = get_u64(device, keys[i]);
                if (v > 0)
                        return v;
        }
        return 0;
}

/* "1.5s"; "0s" with nothing queued; "?" with a backlog but no bandwidth known yet. */
static const char *backlog_str(char *buf, size_t size, json_object *device) {
        double s = get_double(device, "backlog_s");
        if (s > 0)
                snprintf(buf, size, s < 10 ? "%.1fs" : "%.0fs", s);
        else
                snprintf(buf, size, "%s", get_u64(device, "backlog_bytes") > 0 ? "?" : "0s");
        return buf;
}

/* --- the device table -------------------------------------------------------------------- */

typedef struct table {
        const char *const *headers;
        const bool *right;
        size_t n_columns;
        char **cells;        /* n_rows * n_columns, malloc'd */
        size_t n_rows;
} table;

static int table_add_row(table *t, char **row) {
        char **p = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof(char *));
        if (!p)
                return -ENOMEM;
        t->cells = p;
        for (size_t i = 0; i < t->n_columns; i++)
                p[t->n_rows * t->n_columns + i] = xstrdup(row[i] && *row[i] ? row[i] : "-");
        t->n_rows++;
        return 0;
}

static void table_print(const table *t, FILE *f) {
        int width[TABLE_COLUMNS_MAX];

        for (size_t c = 0; c < t->n_columns; c++) {
                width[c] = (int) strlen(t->headers[c]);
                for (size_t r = 0; r < t->n_rows; r++)
                        width[c] = MAX(width[c], (int) strlen(t->cells[r * t->n_columns + c]));
        }
        for (size_t r = 0; r <= t->n_rows; r++)
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *s = r == 0 ? t->headers[c] : t->cells[(r - 1) * t->n_columns + c];
                        bool last = c + 1 == t->n_columns;
                        if (t->right[c])
                                fprintf(f, "%*s", width[c], s);
                        else
                                fprintf(f, "%-*s", last ? 0 : width[c], s);
                        fputs(last ? "\n" : "  ", f);
                }
}

static void table_done(table *t) {
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
}

/* Print the table (or say why it is empty) unless building it failed, free it, pass r on. */
static int table_finish(table *t, int r, const char *empty, FILE *f) {
        if (r == 0) {
                if (t->n_rows == 0 && empty)
                        fputs(empty, f);
                else
                        table_print(t, f);
        }
        table_done(t);
        return r;
}

int ctl_format_devices(json_object *result, FILE *f) {
        static const char *const headers[] = {
                "BDI", "NAME", "MOUNTS", "FS", "TRAITS", "DIRTY", "WB", "THRESH", "BW", "BACKLOG", "KNOBS",
        };
        static const bool right[] = {
                false, false, false, false, false, true, true, true, true, true, false,
        };
        json_object *devices = get(result, "devices");
        table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        if (!devices || !json_object_is_type(devices, json_type_array))
                return -EBADMSG;

        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                json_object *d = json_object_array_get_idx(devices, i), *mounts = get(d, "mounts");
                char mount[VALUE_MAX], traits[128], dirty[32], wb[32], thresh[32], bw[32], backlog[32], knobs[128];
                char name[160];
                size_t n_mounts = mounts && json_object_is_type(mounts, json_type_array) ?
                                  json_object_array_length(mounts) : 0;

                mount[0] = '\0';
                if (n_mounts > 0)
                        snprintf(mount, sizeof mount, "%s", json_object_get_string(json_object_array_get_idx(mounts, 0)));
                if (n_mounts > 1)
                        snprintf(mount + strlen(mount), sizeof mount - strlen(mount), " +%zu", n_mounts - 1);

                char *row[] = {
                        (char *) get_str(d, "bdi"),
                        (char *) name_str(name, sizeof name, d),
                        mount,
                        (char *) get_str(d, "fstype"),
                        (char *) join_array(traits, sizeof traits, get(d, "traits"), ","),
                        (char *) bytes_str(dirty, sizeof dirty, get_u64(d, "dirty_bytes")),
                        (char *) bytes_str(wb, sizeof wb, get_u64(d, "writeback_bytes")),
                        (char *) bytes_str(thresh, sizeof thresh, get_u64(d, "thresh_bytes")),
                        (char *) rate_str(bw, sizeof bw, ctl_device_bw(d)),
                        (char *) backlog_str(backlog, sizeof backlog, d),
                        (char *) ctl_format_knobs(get(d, "knobs"), knobs, sizeof knobs),
                };
                r = table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return table_finish(&t, r, NULL, f);
}

/* --- tuning: original, current and desired value of each knob, and why ------------------- */

static const char *knob_value_str(char *buf, size_t size, const char *knob, json_object *v) {
        if (!v || json_object_is_type(v, json_type_null))
                return "-";
        if (strstr(knob, "bytes"))
                return bytes_str(buf, size, json_object_get_uint64(v));
        snprintf(buf, size, "%" PRIu64, json_object_get_uint64(v));
        return buf;
}

int ctl_format_tuning(json_object *knobs, FILE *f) {
        static const char *const headers[] = { "KNOB", "ORIGINAL", "CURRENT", "DESIRED", "REASON" };
        static const bool right[] = { false, true, true, true, false };
        table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        if (!knobs || !json_object_is_type(knobs, json_type_object))
                return -EBADMSG;
        json_object_object_foreach(knobs, name, k) {
                char cur[32], want[32];
                json_object *orig = get(k, "original");
                char *row[] = {
                        name,
                        (char *) (orig && json_object_is_type(orig, json_type_string) ? json_object_get_string(orig) : "-"),
                        (char *) knob_value_str(cur, sizeof cur, name, get(k, "current")),
                        (char *) knob_value_str(want, sizeof want, name, get(k, "desired")),
                        (char *) get_str(k, "reason"),
                };
                r = table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return table_finish(&t, r, NULL, f);
}

/* --- one device -------------------------------------------------------------------------- */

typedef enum field_kind { FIELD_STRING, FIELD_NUMBER, FIELD_BYTES, FIELD_RATE, FIELD_SECONDS, FIELD_LIST,
                          FIELD_BOOL, FIELD_KNOBS, FIELD_HIDDEN } field_kind;

static const struct {
        const char *key, *label;
        field_kind kind;
} device_fields[] = {
        { "bdi",                    "BDI",               FIELD_STRING },
        { "name",                   "Name",              FIELD_STRING },
        { "has_devnum",             NULL,                FIELD_HIDDEN },   /* shown through major/minor */
        { "major",                  "Major",             FIELD_NUMBER },
        { "minor",                  "Minor",             FIELD_NUMBER },
        { "model",                  "Model",             FIELD_STRING },
        { "fstype",                 "Filesystem",        FIELD_STRING },
        { "mounts",                 "Mounts",            FIELD_LIST },
        { "traits",                 "Traits",            FIELD_LIST },
        { "source",                 "Stats source",      FIELD_STRING },
        { "dirty_bytes",            "Dirty",             FIELD_BYTES },
        { "writeback_bytes",        "Writeback",         FIELD_BYTES },
        { "thresh_bytes",           "Dirty threshold",   FIELD_BYTES },
        { "backlog_bytes",          "Backlog",           FIELD_BYTES },
        { "backlog_s",              "Backlog time",      FIELD_SECONDS },
        { "wb_bw_bytes_per_s",      "Bandwidth (wb)",    FIELD_RATE },
        { "kernel_bw_bytes_per_s",  "Bandwidth (kernel)", FIELD_RATE },
        { "write_bw_bytes_per_s",   "Bandwidth (measured)", FIELD_RATE },
        { "dirty_rate_bytes_per_s", "Dirty rate",        FIELD_RATE },
        { "dirtied_total_bytes",    "Dirtied total",     FIELD_BYTES },
        { "written_total_bytes",    "Written total",     FIELD_BYTES },
        { "seen_before",            "Rates valid",       FIELD_BOOL },
        { "knobs",                  NULL,                FIELD_KNOBS },
};

static const char *bytes_exact_str(char *buf, size_t size, uint64_t bytes) {
        char b[32];
        if (bytes < 1024)
                snprintf(buf, size, "%" PRIu64, bytes);
        else
                snprintf(buf, size, "%s (%" PRIu64 " bytes)", format_bytes(b, sizeof b, bytes), bytes);
        return buf;
}

static void add_knob(kv_list *l, const char *name, json_object *v) {
        char key[48], a[64];
        uint64_t n = json_object_get_uint64(v);

        snprintf(key, sizeof key, "Knob %s", name);
        if (strstr(name, "_ratio_fine"))
                kv_add(l, key, "%s (%" PRIu64 " ppm)", ppm_str(a, sizeof a, n), n);
        else if (strstr(name, "_ratio"))
                kv_add(l, key, "%" PRIu64 "%%", n);
        else if (strstr(name, "_bytes"))
                kv_add(l, key, "%s", bytes_exact_str(a, sizeof a, n));
        else
                kv_add(l, key, "%s", json_object_get_string(v));
}

static void add_field(kv_list *l, const char *label, field_kind kind, json_object *v) {
        char a[VALUE_MAX];

        switch (kind) {
        case FIELD_STRING:
        case FIELD_NUMBER: {
                const char *s = json_object_get_string(v);
                kv_add(l, label, "%s", s && *s ? s : "-");
                break;
        }
        case FIELD_BYTES:
                kv_add(l, label, "%s", bytes_exact_str(a, sizeof a, json_object_get_uint64(v)));
                break;
        case FIELD_RATE:
                kv_add(l, label, "%s", rate_str(a, sizeof a, json_object_get_uint64(v)));
                break;
        case FIELD_SECONDS:
                kv_add(l, label, "%.2fs", json_object_get_double(v));
                break;
        case FIELD_LIST:
                join_array(a, sizeof a, v, ", ");
                kv_add(l, label, "%s", *a ? a : "-");
                break;
        case FIELD_BOOL:
                kv_add(l, label, "%s", json_object_get_boolean(v) ? "yes" : "no");
                break;
        case FIELD_KNOBS: {
                json_object_object_foreach(v, name, knob)
                        add_knob(l, name, knob);
                break;
        }
        case FIELD_HIDDEN:
                break;
        }
}

/* The device's tuning block under show's fields; absent from older daemons. */
static int device_tuning_print(json_object *tuning, FILE *f) {
        char bw[32];

        if (!tuning)
                return 0;
        fprintf(f, "\nTuning: %s, %s, bandwidth taken as %s\n",
                json_object_get_boolean(get(tuning, "managed")) ? "managed" : "not managed",
                json_object_get_boolean(get(tuning, "active")) ? "active" : "idle",
                rate_str(bw, sizeof bw, get_u64(tuning, "bw_estimate_bytes_per_s")));
        return ctl_format_tuning(get(tuning, "knobs"), f);
}

int ctl_format_device(json_object *device, FILE *f) {
        _cleanup_free_ kv_list *l = calloc(1, sizeof *l);

        if (!l)
                return -ENOMEM;
        if (!device || !json_object_is_type(device, json_type_object) || !has(device, "bdi"))
                return -EBADMSG;

        for (size_t i = 0; i < ELEMENTSOF(device_fields); i++) {
                json_object *v = get(device, device_fields[i].key);
                if (v)
                        add_field(l, device_fields[i].label, device_fields[i].kind, v);
        }
        /* Fields a newer daemon added: shown raw, so nothing is hidden from "show". */
        json_object_object_foreach(device, key, v) {
                bool known = strcmp(key, "tuning") == 0;
                for (size_t i = 0; i < ELEMENTSOF(device_fields) && !known; i++)
                        known = strcmp(device_fields[i].key, key) == 0;
                if (!known)
                        kv_add(l, key, "%s", json_object_get_string(v));
        }
        kv_print(l, f);
        return device_tuning_print(get(device, "tuning"), f);
}

/* --- top --------------------------------------------------------------------------------- */

const char *ctl_format_attribution(json_object *attr, char *buf, size_t size) {
        if (json_object_get_boolean(get(attr, "enabled")))
                snprintf(buf, size, "on (trace instance %s, taskstats %s, delay accounting %s)",
                         get_str(attr, "trace_instance"),
                         json_object_get_boolean(get(attr, "taskstats")) ? "on" : "off",
                         json_object_get_boolean(get(attr, "delayacct")) ? "on" : "off");
        else
                snprintf(buf, size, "off: %s", *get_str(attr, "reason") ? get_str(attr, "reason") : "unknown");
        return buf;
}

/* "loop0 (7:0)" or the bdi alone; "-" when none. */
static const char *task_device_str(char *buf, size_t size, json_object *t) {
        const char *bdi = get_str(t, "bdi"), *name = get_str(t, "name");

        if (!*bdi)
                snprintf(buf, size, "-");
        else if (*name && strcmp(name, bdi) != 0)
                snprintf(buf, size, "%s (%s)", name, bdi);
        else
                snprintf(buf, size, "%s", bdi);
        return buf;
}

static const char *ms_per_s_str(char *buf, size_t size, json_object *o, const char *key) {
        if (!has(o, key))
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%.0f", get_double(o, key));
        return buf;
}

static int format_top_devices(json_object *devices, FILE *f) {
        static const char *const headers[] = {
                "DEVICE", "NAME", "DIRTY", "WB", "THRESH", "BW", "DIRTYING", "BACKLOG", "PAUSE ms/s", "KNOBS",
        };
        static const bool right[] = { false, false, true, true, true, true, true, true, true, false };
        table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                json_object *d = json_object_array_get_idx(devices, i), *th = get(d, "throttle");
                char dirty[32], wb[32], thresh[32], bw[32], rate[32], backlog[32], pause[32], knobs[128], name[160];
                char *row[] = {
                        (char *) get_str(d, "bdi"),
                        (char *) name_str(name, sizeof name, d),
                        (char *) bytes_str(dirty, sizeof dirty, get_u64(d, "dirty_bytes")),
                        (char *) bytes_str(wb, sizeof wb, get_u64(d, "writeback_bytes")),
                        (char *) bytes_str(thresh, sizeof thresh, get_u64(d, "thresh_bytes")),
                        (char *) rate_str(bw, sizeof bw, ctl_device_bw(d)),
                        (char *) rate_str(rate, sizeof rate, get_u64(d, "dirty_rate_bytes_per_s")),
                        (char *) backlog_str(backlog, sizeof backlog, d),
                        (char *) (th ? ms_per_s_str(pause, sizeof pause, th, "pause_ms_per_s") : "0"),
                        (char *) ctl_format_knobs(get(d, "knobs"), knobs, sizeof knobs),
                };
                r = table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return table_finish(&t, r, "No device is holding or writing dirty data.\n", f);
}

static int format_top_dirtiers(json_object *list, size_t max_rows, FILE *f) {
        static const char *const headers[] = { "PID", "COMM", "WRITE", "CANCELLED", "DEVICE", "PAUSE ms/s", "BLKIO ms/s" };
        static const bool right[] = { true, false, true, true, false, true, true };
        table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(list) && (max_rows == 0 || i < max_rows); i++) {
                json_object *d = json_object_array_get_idx(list, i);
                char pid[16], w[32], c[32], dev[96], pause[32], delay[32];
                char *row[] = {
                        (snprintf(pid, sizeof pid, "%" PRIu64, get_u64(d, "pid")), pid),
                        (char *) get_str(d, "comm"),
                        (char *) rate_str(w, sizeof w, get_u64(d, "write_bytes_per_s")),
                        (char *) rate_str(c, sizeof c, get_u64(d, "cancelled_write_bytes_per_s")),
                        (char *) task_device_str(dev, sizeof dev, d),
                        (char *) ms_per_s_str(pause, sizeof pause, d, "pause_ms_per_s"),
                        (char *) ms_per_s_str(delay, sizeof delay, d, "blkio_delay_ms_per_s"),
                };
                r = table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return table_finish(&t, r, "No task dirtied pages this tick.\n", f);
}

static int format_top_paused(json_object *list, size_t max_rows, FILE *f) {
        static const char *const headers[] = {
                "PID", "COMM", "DEVICE", "PAUSE ms/s", "PAUSES", "MAX ms", "RATELIMIT", "WRITE", "BLKIO ms/s",
        };
        static const bool right[] = { true, false, false, true, true, true, true, true, true };
        table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(list) && (max_rows == 0 || i < max_rows); i++) {
                json_object *d = json_object_array_get_idx(list, i);
                char pid[16], dev[96], pause[32], pauses[32], maxp[32], lim[32], w[32], delay[32];
                char *row[] = {
                        (snprintf(pid, sizeof pid, "%" PRIu64, get_u64(d, "pid")), pid),
                        (char *) get_str(d, "comm"),
                        (char *) task_device_str(dev, sizeof dev, d),
                        (char *) ms_per_s_str(pause, sizeof pause, d, "pause_ms_per_s"),
                        (snprintf(pauses, sizeof pauses, "%" PRIu64, get_u64(d, "pauses")), pauses),
                        (snprintf(maxp, sizeof maxp, "%" PRIu64, get_u64(d, "max_pause_ms")), maxp),
                        (char *) rate_str(lim, sizeof lim, get_u64(d, "task_ratelimit_bytes_per_s")),
                        (char *) (has(d, "task_write_bytes_per_s") ?
                                  rate_str(w, sizeof w, get_u64(d, "task_write_bytes_per_s")) : "-"),
                        (char *) ms_per_s_str(delay, sizeof delay, d, "blkio_delay_ms_per_s"),
                };
                r = table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return table_finish(&t, r, "No task was throttled this tick.\n", f);
}

int ctl_format_top(json_object *result, size_t max_rows, FILE *f) {
        json_object *g = get(result, "global"), *devices = get(result, "devices"), *attr = get(result, "attribution");
        json_object *dirtiers = get(result, "dirtiers"), *paused = get(result, "paused");
        char a[32], b[32], c[32], d[32], e[32], line[VALUE_MAX];
        int r;

        if (!g || !devices || !json_object_is_type(devices, json_type_array))
                return -EBADMSG;
        fprintf(f, "wbtuned top - tick %" PRIu64 " every %" PRIu64 " ms, mode %s\n",
                get_u64(result, "ticks"), get_u64(result, "tick_ms"), get_str(result, "mode"));
        fprintf(f, "Dirty %s  Writeback %s  Threshold %s  Background %s  Dirtying %s  Writing %s\n",
                bytes_str(a, sizeof a, get_u64(g, "dirty_bytes")), bytes_str(b, sizeof b, get_u64(g, "writeback_bytes")),
                bytes_str(c, sizeof c, get_u64(g, "dirty_thresh_bytes")),
                bytes_str(d, sizeof d, get_u64(g, "background_thresh_bytes")),
                rate_str(e, sizeof e, get_u64(g, "dirty_rate_bytes_per_s")),
                rate_str(line, sizeof line, get_u64(g, "write_rate_bytes_per_s")));
        if (attr) {
                json_object *tick = get(attr, "tick");

                fprintf(f, "Attribution %s", ctl_format_attribution(attr, line, sizeof line));
                if (json_object_get_boolean(get(attr, "enabled")) &&
                    (get_u64(tick, "lost_kernel") || get_u64(tick, "lost_markers") || get_u64(tick, "dropped_tasks")))
                        fprintf(f, "; this tick lost %" PRIu64 " events, dropped %" PRIu64 " tasks",
                                get_u64(tick, "lost_kernel"), get_u64(tick, "dropped_tasks"));
                fputc('\n', f);
        }
        fputc('\n', f);
        r = format_top_devices(devices, f);
        if (r < 0)
                return r;
        if (dirtiers && json_object_is_type(dirtiers, json_type_array)) {
                fputs("\nDirtying most\n", f);
                r = format_top_dirtiers(dirtiers, max_rows, f);
                if (r < 0)
                        return r;
        }
        if (paused && json_object_is_type(paused, json_type_array)) {
                fputs("\nPaused most (balance_dirty_pages)\n", f);
                r = format_top_paused(paused, max_rows, f);
        }
        return r;
}
