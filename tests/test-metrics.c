/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for metrics.c: the Prometheus text of a fixed state, built with the daemon's own reply
 * builders, read back by a strict parser of the exposition format (HELP and TYPE once per family, its
 * samples together, no series twice, escapes, numbers), and the atomic textfile. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "attribution.h"
#include "escape.h"
#include "history.h"
#include "knob-files.h"
#include "log.h"
#include "metrics.h"
#include "metrics-print.h"
#include "protocol.h"
#include "report.h"
#include "trace.h"
#include "util.h"
#include "tap.h"

#define M (1024ULL * 1024ULL)

/* --- fixtures: the status result and DEVICE objects, made by report.c as the daemon makes them -------- */

static json_object *knob(const char *name, const char *unit, const char *state, bool supported, uint64_t current,
                         bool wanted, uint64_t desired, uint64_t policy) {
        report_knob k = {
                .knob = name, .unit = unit, .supported = supported, .have_current = supported, .current = current,
                .have_desired = wanted, .desired = desired, .have_policy = wanted, .policy = policy,
                .reason = "a test", .state = state,
        };
        return report_knob_json(&k);
}

static json_object *fixture_status(bool tracing) {
        report_daemon d = {
                .pid = 42, .uptime_s = 10.5, .mode = "auto", .tick_ms = 250, .ticks = 40, .root = "/",
                .config_path = "/etc/wbtuned.conf", .last_tick_work_usec = 1234, .tick_work_total_usec = 98765,
        };
        sample s = {
                .debugfs = true, .n_devices = 2,
                .global = { .dirty_bytes = 20 * M, .writeback_bytes = M, .dirty_thresh_bytes = 400 * M,
                            .background_thresh_bytes = 200 * M, .dirtied_total_bytes = 7000 * M,
                            .written_total_bytes = 6000 * M, .mem_total_bytes = 16384 * M,
                            .mem_available_bytes = 8192 * M, .dirty_rate_bytes_per_s = 3 * M,
                            .write_rate_bytes_per_s = 2 * M },
        };
        kernel_support ks = { .debugfs = true, .devices_trusted = true };
        memcg_summary memcg = {};
        report_writes w = { .enabled = true, .reason = "auto: knobs are written", .total = 14, .last_minute = 2,
                            .overrides_total = 1, .failures_total = 2, .guard_holds_total = 31,
                            .saved_file = "/run/wbtuned/saved" };
        json_object *knobs = json_object_new_array(), *attr = attribution_status_json(NULL), *status;

        /* the kernel's defaults */
        vm_file_set(&s.global, "dirty_bytes", 0);
        vm_file_set(&s.global, "dirty_background_bytes", 0);
        vm_file_set(&s.global, "dirty_ratio", 20);
        vm_file_set(&s.global, "dirty_background_ratio", 10);
        vm_file_set(&s.global, "dirty_writeback_centisecs", 500);
        vm_file_set(&s.global, "dirty_expire_centisecs", 3000);
        json_object_array_add(knobs, knob("dirty_bytes", PROTOCOL_UNIT_BYTES, PROTOCOL_STATE_MANAGED, true, 419430400,
                                          true, 209715200, 104857600));
        json_object_array_add(knobs, knob("dirty_writeback_centisecs", PROTOCOL_UNIT_CENTISECS,
                                          PROTOCOL_STATE_NO_OPINION, true, 500, false, 0, 0));
        if (tracing) {
                trace_counters c = { .events = 1951, .lost_kernel = 7, .pauses = 310, .pause_ms = 5120 };

                proto_add_bool(attr, PF_ATTRIBUTION_ENABLED, true);
                proto_add(attr, PF_ATTRIBUTION_COUNTERS, trace_counters_to_json(&c));
        }
        status = report_status(&d, &s, report_tuning(knobs), attr, history_status_json(NULL, 15),
                               report_hotplug(true, NULL, 3), report_writes_json(&w), report_kernel_support(&ks, &memcg));
        return status;
}

static char *mounts_hostile[] = { "/mnt/\xff\xfe x", "/second", NULL };

/* Two devices: a hostile FUSE one (every character the format escapes, an ESC, bytes that are not
 * UTF-8) and a plain unmounted disk with a knob this kernel lacks and numbers at the edges. */
static json_object *fixture_device(int which) {
        bdi_device d0 = {
                .bdi = "0:77", .name = "ev\"il\\\nforged\x1b[2J", .fstype = "fuse.x", .mounts = mounts_hostile,
                .n_mounts = 2, .dirty_bytes = 12 * M, .writeback_bytes = M, .thresh_bytes = 64 * M,
                .written_total_bytes = 5 * M, .backlog_bytes = 13 * M, .backlog_s = 0.1, .seen_before = true,
        };
        bdi_device d1 = {
                .bdi = "8:0", .major = 8, .has_devnum = true, .name = "sda", .fstype = "",
                .written_total_bytes = UINT64_MAX, .backlog_s = 1.0 / 3.0, .seen_before = true,
        };
        json_object *o = report_device(which == 0 ? &d0 : &d1), *knobs = json_object_new_array();

        if (which == 0) {
                json_object_array_add(knobs, knob("max_bytes", PROTOCOL_UNIT_BYTES, PROTOCOL_STATE_MANAGED, true,
                                                  419430400, true, 16 * M, 8 * M));
                json_object_array_add(knobs, knob("strict_limit", PROTOCOL_UNIT_BOOL, PROTOCOL_STATE_OVERRIDE, true,
                                                  1, false, 0, 0));
                proto_add(o, PF_DEVICE_TUNING, report_device_tuning(true, true, 8 * M, knobs));
        } else {
                json_object_array_add(knobs, knob("min_bytes", PROTOCOL_UNIT_BYTES, PROTOCOL_STATE_UNSUPPORTED, false,
                                                  0, false, 0, 0));
                proto_add(o, PF_DEVICE_TUNING, report_device_tuning(false, false, 0, knobs));
        }
        return o;
}

static metrics_snapshot *fixture(bool tracing, size_t n_devices) {
        json_object *status = fixture_status(tracing);
        metrics_snapshot *s = NULL;
        char error[256] = "";

        /* the fixtures are what the protocol says a status and a device are */
        CHECK(protocol_check(status, PK_STATUS, true, error, sizeof error) == 0);
        if (error[0])
                printf("# status: %s\n", error);
        CHECK(metrics_snapshot_new(status, &s) == 0);
        json_object_put(status);
        for (size_t i = 0; i < n_devices; i++) {
                json_object *d = fixture_device((int) i);

                error[0] = 0;
                CHECK(protocol_check(d, PK_DEVICE, true, error, sizeof error) == 0);
                if (error[0])
                        printf("# device %zu: %s\n", i, error);
                CHECK(metrics_snapshot_add_device(s, d) == 0);
                json_object_put(d);
        }
        return s;
}

static char *render(const metrics_snapshot *s) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        CHECK(metrics_render(s, f) == 0);
        fclose(f);
        return text;
}

/* --- a strict reader of the text exposition format 0.0.4 ------------------------------------------ */

typedef struct parsed {
        unsigned families, samples, problems;
        char seen_families[64][64];      /* in order */
        char *series[512];               /* name{sorted labels}, to find duplicates */
        unsigned n_series;
} parsed;

static void problem(parsed *p, unsigned line, const char *what, const char *text) {
        printf("# line %u: %s: %.120s\n", line, what, text);
        p->problems++;
}

static bool name_char(char c, bool first) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* A metric or label name at *s; advances past it. */
static size_t read_name(const char **s, char *buf, size_t size) {
        size_t n = 0;

        while (name_char((*s)[n], n == 0) && n + 1 < size) {
                buf[n] = (*s)[n];
                n++;
        }
        buf[n] = 0;
        *s += n;
        return n;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* One sample line: name, labels (values unescaped), a value Go's ParseFloat would read. */
static void parse_sample(parsed *p, unsigned line, const char *text, const char *family, const char *type) {
        char name[128], label[64], *labels[16], value[64];
        const char *s = text;
        size_t n_labels = 0, n = 0;
        char key[1024] = "";

        if (read_name(&s, name, sizeof name) == 0)
                return problem(p, line, "no metric name", text);
        if (strcmp(name, family) != 0) {
                bool part = strcmp(type, "summary") == 0 && strncmp(name, family, strlen(family)) == 0 &&
                            (strcmp(name + strlen(family), "_sum") == 0 || strcmp(name + strlen(family), "_count") == 0);
                if (!part)
                        return problem(p, line, "a sample outside its family's group", text);
        }
        if (*s == '{') {
                s++;
                while (*s != '}') {
                        char v[512];
                        size_t vn = 0;

                        if (read_name(&s, label, sizeof label) == 0 || *s++ != '=' || *s++ != '"')
                                return problem(p, line, "bad label", text);
                        while (*s && *s != '"') {
                                if (*s == '\\') {
                                        s++;
                                        if (*s == 'n')
                                                v[vn++] = '\n';
                                        else if (*s == '\\' || *s == '"')
                                                v[vn++] = *s;
                                        else
                                                return problem(p, line, "an escape the format does not have", text);
                                        s++;
                                } else if (*s == '\n')
                                        return problem(p, line, "a raw newline in a label", text);
                                else
                                        v[vn++] = *s++;
                                if (vn >= sizeof v - 1)
                                        return problem(p, line, "label too long for the test", text);
                        }
                        v[vn] = 0;
                        if (*s++ != '"')
                                return problem(p, line, "unterminated label value", text);
                        if (!utf8_valid(v, vn))
                                problem(p, line, "a label value that is not UTF-8", text);
                        if (n_labels >= ELEMENTSOF(labels))
                                return problem(p, line, "too many labels", text);
                        if (asprintf(&labels[n_labels++], "%s=%s", label, v) < 0)
                                abort();
                        if (*s == ',')
                                s++;
                        else if (*s != '}')
                                return problem(p, line, "labels not separated by commas", text);
                }
                s++;
        }
        if (*s++ != ' ')
                return problem(p, line, "no blank before the value", text);
        snprintf(value, sizeof value, "%s", s);
        if (strcmp(value, "NaN") != 0 && strcmp(value, "+Inf") != 0 && strcmp(value, "-Inf") != 0) {
                char *end;
                errno = 0;
                (void) strtod(value, &end);
                if (*end || errno || !*value || strchr(value, ' '))
                        problem(p, line, "a value that is not a number (or has a timestamp)", text);
        }
        /* the series: its name and its labels in sorted order */
        qsort(labels, n_labels, sizeof labels[0], cmp_str);
        n = (size_t) snprintf(key, sizeof key, "%s", name);
        for (size_t i = 0; i < n_labels; i++) {
                n += (size_t) snprintf(key + n, n < sizeof key ? sizeof key - n : 0, "|%s", labels[i]);
                free(labels[i]);
        }
        for (unsigned i = 0; i < p->n_series; i++)
                if (strcmp(p->series[i], key) == 0)
                        problem(p, line, "a series twice", text);
        if (p->n_series < ELEMENTSOF(p->series))
                p->series[p->n_series++] = xstrdup(key);
        p->samples++;
}

static parsed *parse(const char *text) {
        parsed *p = calloc(1, sizeof *p);
        char family[128] = "", type[32] = "", help_of[128] = "";
        unsigned line = 0;

        for (const char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
                _cleanup_free_ char *copy = NULL;

                nl = strchr(l, '\n');
                if (!nl) {
                        problem(p, line + 1, "the last line has no newline", l);
                        break;
                }
                copy = strndup(l, (size_t) (nl - l));
                line++;
                if (strncmp(copy, "# HELP ", 7) == 0) {
                        const char *s = copy + 7;
                        char name[128];

                        read_name(&s, name, sizeof name);
                        for (unsigned i = 0; i < p->families; i++)
                                if (strcmp(p->seen_families[i], name) == 0)
                                        problem(p, line, "HELP of a family seen before", copy);
                        if (*s != ' ' || !s[1])
                                problem(p, line, "HELP without a text", copy);
                        for (const char *c = s; *c; c++)
                                if (*c == '\\' && c[1] != '\\' && c[1] != 'n')
                                        problem(p, line, "an escape HELP does not have", copy);
                                else if (*c == '\\')
                                        c++;
                        snprintf(help_of, sizeof help_of, "%s", name);
                        continue;
                }
                if (strncmp(copy, "# TYPE ", 7) == 0) {
                        const char *s = copy + 7;

                        read_name(&s, family, sizeof family);
                        if (strcmp(family, help_of) != 0)
                                problem(p, line, "TYPE without its HELP just before", copy);
                        if (*s++ != ' ' || (strcmp(s, "gauge") != 0 && strcmp(s, "counter") != 0 && strcmp(s, "summary") != 0))
                                problem(p, line, "an unknown type", copy);
                        snprintf(type, sizeof type, "%s", s);
                        if (strcmp(type, "counter") == 0 && (strlen(family) < 6 || strcmp(family + strlen(family) - 6, "_total") != 0))
                                problem(p, line, "a counter whose name does not end in _total", copy);
                        if (strcmp(type, "counter") != 0 && strlen(family) >= 6 &&
                            strcmp(family + strlen(family) - 6, "_total") == 0)
                                problem(p, line, "a non-counter whose name ends in _total", copy);
                        if (p->families < ELEMENTSOF(p->seen_families))
                                snprintf(p->seen_families[p->families++], sizeof p->seen_families[0], "%s", family);
                        help_of[0] = 0;
                        continue;
                }
                if (copy[0] == '#' || !copy[0]) {
                        problem(p, line, "a line that is neither HELP, TYPE nor a sample", copy);
                        continue;
                }
                if (!family[0]) {
                        problem(p, line, "a sample before any TYPE", copy);
                        continue;
                }
                parse_sample(p, line, copy, family, type);
        }
        return p;
}

static void parsed_free(parsed *p) {
        for (unsigned i = 0; i < p->n_series; i++)
                free(p->series[i]);
        free(p);
}

static bool has_family(const parsed *p, const char *name) {
        for (unsigned i = 0; i < p->families; i++)
                if (strcmp(p->seen_families[i], name) == 0)
                        return true;
        return false;
}

static bool has_line(const char *text, const char *line) {
        _cleanup_free_ char *framed = NULL, *want = NULL;

        if (asprintf(&framed, "\n%s", text) < 0 || asprintf(&want, "\n%s\n", line) < 0)
                abort();
        if (strstr(framed, want))
                return true;
        printf("# no line \"%s\"\n", line);
        return false;
}

/* --- tests ---------------------------------------------------------------------------------------- */

static void test_full(void) {
        metrics_snapshot *s = fixture(true, 2);
        _cleanup_free_ char *text = render(s), *info = NULL;
        parsed *p = parse(text);

        printf("%s", text);
        CHECK_EQ_U64(p->problems, 0);
        /* every family of the table has a sample in this fixture, in the table's order */
        CHECK_EQ_U64(p->families, metrics_family_count());
        for (size_t i = 0; i < metrics_family_count() && i < p->families; i++)
                CHECK_STREQ(p->seen_families[i], metrics_family_name(i));

        if (asprintf(&info, "wbtuned_info{version=\"%s\",mode=\"auto\"} 1", PACKAGE_VERSION) < 0)
                abort();
        CHECK(has_line(text, info));
        /* units turned into the base units: ms and usec into seconds */
        CHECK(has_line(text, "wbtuned_tick_interval_seconds 0.25"));
        CHECK(has_line(text, "wbtuned_last_tick_duration_seconds 0.001234"));
        CHECK(has_line(text, "wbtuned_tick_duration_seconds_sum 0.098765"));
        CHECK(has_line(text, "wbtuned_tick_duration_seconds_count 40"));
        CHECK(has_line(text, "wbtuned_throttle_pause_seconds_total 5.12"));
        CHECK(has_line(text, "wbtuned_throttle_pauses_total 310"));
        CHECK(has_line(text, "wbtuned_trace_lost_events_total 7"));
        /* the writes counters of status "writes" */
        CHECK(has_line(text, "wbtuned_knob_writes_total 14"));
        CHECK(has_line(text, "wbtuned_knob_write_failures_total 2"));
        CHECK(has_line(text, "wbtuned_knob_overrides_total 1"));
        CHECK(has_line(text, "wbtuned_guard_holds_total 31"));
        CHECK(has_line(text, "wbtuned_writes_enabled 1"));
        CHECK(has_line(text, "wbtuned_dirty_threshold_bytes 419430400"));
        CHECK(has_line(text, "wbtuned_memory_available_bytes 8589934592"));

        /* escaped labels: backslash, quote and newline; ESC as it is; U+FFFD for bytes that are not UTF-8;
         * the first mount point only */
#define HOSTILE "bdi=\"0:77\",device=\"ev\\\"il\\\\\\nforged\x1b[2J\",mount=\"/mnt/\xef\xbf\xbd\xef\xbf\xbd x\",fstype=\"fuse.x\""
        CHECK(has_line(text, "wbtuned_device_dirty_bytes{" HOSTILE "} 12582912"));
        CHECK(has_line(text, "wbtuned_device_bandwidth_bytes_per_second{" HOSTILE "} 8388608"));
        CHECK(has_line(text, "wbtuned_device_managed{" HOSTILE "} 1"));
        /* the shortest decimal that reads back the same, not 0.10000000000000001 */
        CHECK(has_line(text, "wbtuned_device_backlog_seconds{" HOSTILE "} 0.1"));
        CHECK(has_line(text, "wbtuned_knob_value{" HOSTILE ",knob=\"max_bytes\",unit=\"bytes\"} 419430400"));
        CHECK(has_line(text, "wbtuned_knob_desired{" HOSTILE ",knob=\"max_bytes\",unit=\"bytes\"} 16777216"));
        CHECK(has_line(text, "wbtuned_knob_policy{" HOSTILE ",knob=\"max_bytes\",unit=\"bytes\"} 8388608"));
        CHECK(has_line(text, "wbtuned_knob_state{" HOSTILE ",knob=\"strict_limit\",unit=\"bool\",state=\"override\"} 1"));
        /* no desired or policy where the knob object has null */
        CHECK(!strstr(text, "wbtuned_knob_desired{" HOSTILE ",knob=\"strict_limit\""));

        /* an unmounted disk: mount ""; integers exact up to 2^64-1; a third in 17 digits */
#define SDA "bdi=\"8:0\",device=\"sda\",mount=\"\",fstype=\"\""
        CHECK(has_line(text, "wbtuned_device_written_bytes_total{" SDA "} 18446744073709551615"));
        CHECK(has_line(text, "wbtuned_device_backlog_seconds{" SDA "} 0.33333333333333331"));
        CHECK(has_line(text, "wbtuned_device_managed{" SDA "} 0"));
        /* a knob this kernel lacks: no value, but its state */
        CHECK(!strstr(text, "wbtuned_knob_value{" SDA ",knob=\"min_bytes\""));
        CHECK(has_line(text, "wbtuned_knob_state{" SDA ",knob=\"min_bytes\",unit=\"bytes\",state=\"unsupported\"} 1"));

        /* the vm knobs: no device labels */
        CHECK(has_line(text, "wbtuned_knob_value{knob=\"dirty_bytes\",unit=\"bytes\"} 419430400"));
        CHECK(has_line(text, "wbtuned_knob_desired{knob=\"dirty_bytes\",unit=\"bytes\"} 209715200"));
        CHECK(has_line(text, "wbtuned_knob_value{knob=\"dirty_writeback_centisecs\",unit=\"centisecs\"} 500"));
        CHECK(has_line(text, "wbtuned_knob_state{knob=\"dirty_writeback_centisecs\",unit=\"centisecs\",state=\"no-opinion\"} 1"));
        CHECK(!strstr(text, "wbtuned_knob_desired{knob=\"dirty_writeback_centisecs\""));

        parsed_free(p);
        metrics_snapshot_free(s);
}

/* Families without a sample are left out whole: no HELP or TYPE either. */
static void test_absent_families(void) {
        metrics_snapshot *s = fixture(false, 0);
        _cleanup_free_ char *text = render(s);
        parsed *p = parse(text);

        CHECK_EQ_U64(p->problems, 0);
        CHECK(!has_family(p, "wbtuned_trace_events_total"));
        CHECK(!has_family(p, "wbtuned_throttle_pauses_total"));
        CHECK(!strstr(text, "wbtuned_trace_"));
        CHECK(!strstr(text, "wbtuned_device_"));
        CHECK(has_family(p, "wbtuned_knob_value"));
        CHECK(has_family(p, "wbtuned_hotplug_events_total"));
        CHECK(has_line(text, "wbtuned_devices 2"));
        parsed_free(p);
        metrics_snapshot_free(s);
}

static void test_numbers(void) {
        char buf[32];

        CHECK_STREQ(metrics_format_double(0.1, buf, sizeof buf), "0.1");
        CHECK_STREQ(metrics_format_double(1.625, buf, sizeof buf), "1.625");
        CHECK_STREQ(metrics_format_double(0, buf, sizeof buf), "0");
        CHECK_STREQ(metrics_format_double(-2.5, buf, sizeof buf), "-2.5");
        CHECK_STREQ(metrics_format_double(1e-6, buf, sizeof buf), "1e-06");
        CHECK_STREQ(metrics_format_double(NAN, buf, sizeof buf), "NaN");
        CHECK_STREQ(metrics_format_double(INFINITY, buf, sizeof buf), "+Inf");
        CHECK_STREQ(metrics_format_double(-INFINITY, buf, sizeof buf), "-Inf");
        /* every double reads back exactly */
        for (double v = 1e-9; v < 1e20; v *= 7.3) {
                metrics_format_double(v / 3, buf, sizeof buf);
                CHECK(strtod(buf, NULL) == v / 3);
        }
}

/* The streamed result: pieces of whole lines, about 64 KiB each, that joined are the rendered text. */
static void test_stream(void) {
        metrics_snapshot *s = fixture(true, 2);
        _cleanup_free_ char *small = render(s), *text = NULL, *joined = NULL, *exact = NULL, *terminal = NULL;
        json_object *result = json_object_new_object(), *array = json_object_new_array();
        control_stream st = {};
        size_t size = 0, n = 0, longest = 0;
        FILE *f;
        char *name;
        json_object *item;
        int r;

        /* 600 more devices: about 900 KiB of text */
        for (int i = 0; i < 600; i++) {
                json_object *d = fixture_device(1);
                char bdi[16];

                snprintf(bdi, sizeof bdi, "9:%d", i);
                proto_add_string(d, PF_DEVICE_BDI, bdi);
                CHECK(metrics_snapshot_add_device(s, d) == 0);
                json_object_put(d);
        }
        text = render(s);
        CHECK(strlen(text) > 10 * strlen(small));
        CHECK(metrics_stream(s, &st) == 0);   /* takes s */
        CHECK_STREQ(st.key, "text");
        CHECK(!st.keyed);
        f = open_memstream(&joined, &size);
        while ((r = st.next(st.state, &name, &item)) > 0) {
                size_t len = (size_t) json_object_get_string_len(item);

                CHECK(json_object_is_type(item, json_type_string));
                CHECK(len > 0 && json_object_get_string(item)[len - 1] == '\n');   /* whole lines */
                longest = MAX(longest, len);
                fputs(json_object_get_string(item), f);
                json_object_array_add(array, item);
                n++;
        }
        fclose(f);
        CHECK_EQ_U64(r, 0);
        CHECK_EQ_U64(st.next(st.state, &name, &item), 0);
        st.free_state(st.state);
        printf("# %zu pieces, the longest %zu bytes, of %zu\n", n, longest, strlen(text));
        CHECK(n > 5);
        CHECK(longest < 64 * 1024 + 4096);
        CHECK_STREQ(joined, text);

        /* the client: exact into a pipe, escaped for a terminal */
        proto_add(result, PF_METRICS_TEXT, array);
        f = open_memstream(&exact, &size);
        CHECK(metrics_print_result(result, false, f) == 0);
        fclose(f);
        CHECK_STREQ(exact, text);
        f = open_memstream(&terminal, &size);
        CHECK(metrics_print_result(result, true, f) == 0);
        fclose(f);
        CHECK(strchr(exact, '\x1b') != NULL);
        CHECK(strchr(terminal, '\x1b') == NULL && strstr(terminal, "forged\\x1b[2J") != NULL);
        json_object_put(result);

        free(joined);
        joined = NULL;
        result = json_tokener_parse("{\"text\": [\"a\", 5]}");
        f = open_memstream(&joined, &size);
        CHECK(metrics_print_result(result, false, f) == -EBADMSG);
        fclose(f);
        json_object_put(result);
}

static int write_file_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        fputs(text, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static unsigned count_entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        while (d && (de = readdir(d)))
                n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
        return n;
}

static void test_textfile(void) {
        char dir[] = "/tmp/test-metrics.XXXXXX", path[256], missing[256], cmd[300];
        metrics_snapshot *s = fixture(true, 2);
        _cleanup_free_ char *text = render(s), *written = NULL;
        metrics_textfile t = {};
        struct stat st;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/wbtuned.prom", dir);
        snprintf(missing, sizeof missing, "%s/nodir/wbtuned.prom", dir);

        CHECK_EQ_U64(metrics_write_file(path, s, NULL, NULL), 0);
        CHECK(read_file_full(path, &written, NULL) == 0);
        CHECK_STREQ(written, text);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        CHECK_EQ_U64(count_entries(dir), 1);          /* no temporary file left */
        CHECK(metrics_write_file(missing, s, NULL, NULL) == -ENOENT);
        CHECK(metrics_write_file("wbtuned.prom", s, NULL, NULL) == -EINVAL);
        CHECK_EQ_U64(count_entries(dir), 1);

        /* due: never written, then every interval, at once for another path, never without one */
        CHECK(metrics_textfile_due(&t, path, 15000000, 5000000));
        CHECK(!metrics_textfile_due(&t, "", 15000000, 5000000));
        CHECK(metrics_textfile_write(&t, missing, s, 5000000) == -ENOENT);
        CHECK_EQ_U64(t.error, (uint64_t) -ENOENT);
        CHECK(!t.written);
        CHECK(!metrics_textfile_due(&t, missing, 15000000, 19999999));
        CHECK(metrics_textfile_due(&t, missing, 15000000, 20000000));
        CHECK(metrics_textfile_due(&t, path, 15000000, 6000000));
        CHECK_EQ_U64(metrics_textfile_write(&t, path, s, 6000000), 0);
        CHECK_EQ_U64(t.error, 0);
        CHECK(t.written);
        /* removed when the daemon stops */
        metrics_textfile_remove(&t);
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);
        CHECK(!t.written && t.attempt_usec == 0);

        metrics_snapshot_free(s);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) !system(cmd);
}

/* The textfile's directory must be one nobody else can change: a symbolic link swapped in for it, or a
 * directory a group or other users (or, as root, another owner) can write, is refused, and nothing is
 * created or removed through it. At stop the file goes only while it is the file written. */
static void test_textfile_unsafe_dir(void) {
        char dir[] = "/tmp/test-metrics.XXXXXX", prom[300], path[320], victim[300], victim_file[320], cmd[340];
        metrics_snapshot *s = fixture(true, 2);
        _cleanup_free_ char *why = NULL, *victim_text = NULL;
        metrics_textfile t = {};
        struct stat st;

        /* mkdtemp's directory is 0700: private, whatever is made in it below */
        CHECK(mkdtemp(dir) != NULL);
        snprintf(prom, sizeof prom, "%s/prom", dir);
        snprintf(path, sizeof path, "%s/wbtuned.prom", prom);
        snprintf(victim, sizeof victim, "%s/victim", dir);
        snprintf(victim_file, sizeof victim_file, "%s/wbtuned.prom", victim);
        CHECK(mkdir(prom, 0755) == 0 && mkdir(victim, 0755) == 0);
        CHECK(write_file_text(victim_file, "the victim's own file\n") == 0);

        printf("# written, then the directory moved away and a symbolic link to another put in its place\n");
        CHECK_EQ_U64(metrics_textfile_write(&t, path, s, 1000000), 0);
        CHECK(t.written);
        {
                char moved[320];
                snprintf(moved, sizeof moved, "%s.moved", prom);
                CHECK(rename(prom, moved) == 0);
                CHECK(symlink(victim, prom) == 0);
        }
        CHECK(metrics_textfile_write(&t, path, s, 20000000) == -ELOOP);
        CHECK(metrics_write_file(path, s, NULL, &why) == -ELOOP);
        printf("#   %s\n", why ? why : "(no reason)");
        CHECK(why && strstr(why, prom) && strstr(why, "symbolic link"));
        free(why);
        why = NULL;
        CHECK_EQ_U64(count_entries(victim), 1);          /* no temporary file made there */
        CHECK(read_file_full(victim_file, &victim_text, NULL) == 0);
        CHECK_STREQ(victim_text, "the victim's own file\n");
        /* stop: the victim's file of the same name is not ours to remove */
        metrics_textfile_remove(&t);
        CHECK(access(victim_file, F_OK) == 0);
        CHECK(!t.written);
        CHECK(unlink(prom) == 0);
        {
                char moved[320];
                snprintf(moved, sizeof moved, "%s.moved", prom);
                CHECK(rename(moved, prom) == 0);
        }

        printf("# a file put in the written one's place is not removed at stop\n");
        CHECK_EQ_U64(metrics_textfile_write(&t, path, s, 40000000), 0);
        CHECK(unlink(path) == 0);
        CHECK(write_file_text(path, "someone else's\n") == 0);
        metrics_textfile_remove(&t);
        CHECK(access(path, F_OK) == 0);
        CHECK(unlink(path) == 0);

        printf("# a directory a group or other users can write: refused, nothing made in it\n");
        for (unsigned i = 0; i < 3; i++) {
                static const mode_t modes[] = { 0775, 0757, 01777 };

                CHECK(chmod(prom, modes[i]) == 0);
                CHECK(metrics_write_file(path, s, NULL, &why) == -EPERM);
                printf("#   %04o: %s\n", (unsigned) modes[i], why ? why : "(no reason)");
                CHECK(why && strstr(why, prom) && strstr(why, "writable by others"));
                free(why);
                why = NULL;
                CHECK_EQ_U64(count_entries(prom), 0);
        }
        CHECK(chmod(prom, 0755) == 0);
        if (geteuid() == 0) {
                printf("# as root: a directory owned by another user (nobody) is refused\n");
                CHECK(chown(prom, 65534, 65534) == 0);
                CHECK(metrics_write_file(path, s, NULL, &why) == -EPERM);
                printf("#   %s\n", why ? why : "(no reason)");
                CHECK(why && strstr(why, "owned by uid 65534"));
                free(why);
                why = NULL;
                CHECK(metrics_textfile_write(&t, path, s, 60000000) == -EPERM);
                CHECK_EQ_U64(count_entries(prom), 0);
                CHECK(chown(prom, 0, 0) == 0);
        } else
                printf("# not root: skipping the directory owned by another user\n");

        printf("# and the safe directory again: written, removed at stop\n");
        CHECK_EQ_U64(metrics_textfile_write(&t, path, s, 80000000), 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        CHECK_EQ_U64(count_entries(prom), 1);
        metrics_textfile_remove(&t);
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);

        metrics_snapshot_free(s);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) !system(cmd);
}

/* doc/metrics.md lists every family, as `name`. */
static void test_doc(void) {
        const char *top = getenv("top_srcdir");
        _cleanup_free_ char *path = NULL, *doc = NULL;

        if (asprintf(&path, "%s/doc/metrics.md", top && *top ? top : "..") < 0)
                abort();
        CHECK(read_file_full(path, &doc, NULL) == 0);
        for (size_t i = 0; doc && i < metrics_family_count(); i++) {
                char ticked[96];

                snprintf(ticked, sizeof ticked, "`%s`", metrics_family_name(i));
                if (!strstr(doc, ticked))
                        printf("# doc/metrics.md does not list %s\n", metrics_family_name(i));
                CHECK(strstr(doc, ticked) != NULL);
        }
}

int main(void) {
        log_open();
        log_set_max_level(LOG_ERR);
        test_full();
        test_absent_families();
        test_numbers();
        test_stream();
        test_textfile();
        test_textfile_unsafe_dir();
        test_doc();
        TEST_EXIT();
}
