/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The protocol's one schema, checked three ways: the fields of this version are all still there
 * (tests/data/protocol-v<N>.txt), doc/protocol.md names every one, and every reply the daemon's own
 * verbs build - served on a real socket - passes the strict check, renders with wbtunectl's renderers,
 * and together they produce every field the table lists. A field renamed on one side fails here. */
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "attribution.h"
#include "control.h"
#include "ctl-format.h"
#include "ctl-plot.h"
#include "escape.h"
#include "fake-kernel.h"
#include "history.h"
#include "log.h"
#include "manager.h"
#include "metrics-print.h"
#include "protocol.h"
#include "knob-files.h"
#include "tap.h"
#include "util.h"

#define M (1024ULL * 1024ULL)

static char dir[] = "/tmp/test-protocol.XXXXXX";

static char *srcdir_path(const char *rel) {
        const char *top = getenv("top_srcdir");
        char *p;

        if (asprintf(&p, "%s/%s", top && *top ? top : "..", rel) < 0)
                abort();
        return p;
}

static char *dump_text(void) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        CHECK(protocol_dump(f) == 0);
        fclose(f);
        return text;
}

/* Every field recorded for this version is still there, with its type and presence: clients of this
 * version read them. A change there needs a new PROTOCOL_VERSION and a new file. */
static void test_recorded_fields(void) {
        char name[64];
        _cleanup_free_ char *dump = dump_text(), *path = NULL, *recorded = NULL;
        unsigned missing = 0, lines = 0;

        snprintf(name, sizeof name, "tests/data/protocol-v%d.txt", PROTOCOL_VERSION);
        path = srcdir_path(name);
        CHECK(read_file_full(path, &recorded, NULL) == 0);
        for (char *line = recorded, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                char want[256];

                nl = strchr(line, '\n');
                if (*line == '#' || *line == '\n')
                        continue;
                snprintf(want, sizeof want, "\n%.*s\n", (int) (nl ? nl - line : (long) strlen(line)), line);
                lines++;
                /* the dump, with a newline put before it, holds "\nLINE\n" */
                _cleanup_free_ char *framed = NULL;
                if (asprintf(&framed, "\n%s", dump) < 0)
                        abort();
                if (!strstr(framed, want)) {
                        printf("# %s lists \"%.*s\", which src/shared/protocol.h no longer has: a field renamed, removed or "
                               "changed breaks clients of protocol %d (bump PROTOCOL_VERSION and record the new one)\n",
                               name, (int) strlen(want) - 2, want + 1, PROTOCOL_VERSION);
                        missing++;
                }
        }
        CHECK(lines > 200);
        CHECK_EQ_U64(missing, 0);
}

/* doc/protocol.md names every field, every CSV column and the version. */
static void test_doc(void) {
        _cleanup_free_ char *path = srcdir_path("doc/protocol.md"), *doc = NULL;
        char want[128];
        unsigned missing = 0;

        CHECK(read_file_full(path, &doc, NULL) == 0);
        if (!doc)
                return;
        for (protocol_field f = 0; f < _PF_MAX; f++) {
                char quoted[80], ticked[80];

                snprintf(quoted, sizeof quoted, "\"%s\"", protocol_name(f));
                snprintf(ticked, sizeof ticked, "`%s`", protocol_name(f));
                if (!strstr(doc, quoted) && !strstr(doc, ticked)) {
                        printf("# doc/protocol.md does not name the field \"%s\" (%s)\n", protocol_name(f),
                               protocol_kind_name(protocol_fields[f].kind));
                        missing++;
                }
        }
        for (protocol_csv_column c = 0; c < _PC_MAX; c++)
                if (!strstr(doc, protocol_csv_column_name(c))) {
                        printf("# doc/protocol.md does not name the CSV column %s\n", protocol_csv_column_name(c));
                        missing++;
                }
        CHECK_EQ_U64(missing, 0);
        snprintf(want, sizeof want, "Protocol version %d", PROTOCOL_VERSION);
        CHECK(strstr(doc, want) != NULL);
}

/* --- the daemon's verbs on fixtures ------------------------------------------------------------ */

static char *mounts_nfs[] = { "/net/x", NULL };
/* bytes that are not UTF-8 and a newline, as a FUSE mount point can have */
static char *mounts_hostile[] = { "/mnt/\xff\xfe\nforged", "/b", NULL };
static char *mounts_loop[] = { "/mnt/x", NULL };

static void fixture_sample(sample *s, uint64_t tick) {
        static bdi_device devs[3];

        devs[0] = (bdi_device) {
                .bdi = "0:52", .name = "nfs 0:52", .fstype = "nfs4", .mounts = mounts_nfs, .n_mounts = 1,
                .traits = BDI_TRAIT_NFS, .source = STATS_SOURCE_BLOCKSTAT,
                .knobs = { .k = { [KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = { .has = 1u << KNOB_FORM_RATIO },
                                  [KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = { .has = 1u << KNOB_FORM_RATIO,
                                                                           .value = { [KNOB_FORM_RATIO] = 100 } } } },
        };
        devs[1] = (bdi_device) {
                .bdi = "7:0", .major = 7, .minor = 0, .has_devnum = true, .name = "evil\x1b[2J\nforged",
                .alias = "vg\x1b-root", .fstype = "fuse.\xc2\x9b", .mounts = mounts_hostile, .n_mounts = 2,
                .model = "M\x1b[31m", .traits = BDI_TRAIT_USB | BDI_TRAIT_REMOVABLE, .source = STATS_SOURCE_DEBUGFS,
        };
        devs[2] = (bdi_device) {
                .bdi = "7:2", .major = 7, .minor = 2, .has_devnum = true, .name = "loop2", .fstype = "ext4",
                .mounts = mounts_loop, .n_mounts = 1, .traits = BDI_TRAIT_ROTATIONAL, .source = STATS_SOURCE_DEBUGFS,
                .dirty_bytes = 12 * M + tick, .writeback_bytes = M, .thresh_bytes = 100 * M,
                .dirtied_total_bytes = 1000 * M + tick * M, .written_total_bytes = 900 * M + tick * M,
                .writing_wbs_bw_bytes_per_s = 8 * M, .write_bw_bytes_per_s = 7 * M, .dirty_rate_bytes_per_s = 2 * M,
                .backlog_bytes = 13 * M, .backlog_s = 1.625, .seen_before = tick > 0,
        };
        *s = (sample) {
                .time_usec = (tick + 1) * 1000000, .debugfs = true, .devices = devs, .n_devices = 3,
                .global = { .dirty_bytes = 20 * M, .writeback_bytes = M, .dirty_thresh_bytes = 400 * M,
                            .background_thresh_bytes = 200 * M, .mem_total_bytes = 16384 * M,
                            .mem_available_bytes = 8192 * M,
                            .knobs = {} },
        };
        /* a 6.2+ kernel's seven files for the two loop devices, the kernel's defaults for the vm knobs */
        for (int i = 1; i <= 2; i++) {
                static const char *const files[] = { "min_ratio", "min_ratio_fine", "min_bytes", "strict_limit" };
                for (size_t j = 0; j < ELEMENTSOF(files); j++)
                        bdi_file_set(&devs[i], files[j], 0);
                bdi_file_set(&devs[i], "max_ratio", 100);
                bdi_file_set(&devs[i], "max_ratio_fine", 1000000);
                bdi_file_set(&devs[i], "max_bytes", 400 * M);
        }
        vm_file_set(&s->global, "dirty_bytes", 0);
        vm_file_set(&s->global, "dirty_background_bytes", 0);
        vm_file_set(&s->global, "dirty_ratio", 20);
        vm_file_set(&s->global, "dirty_background_ratio", 10);
        vm_file_set(&s->global, "dirty_writeback_centisecs", 500);
        vm_file_set(&s->global, "dirty_expire_centisecs", 3000);
}

static void want(knob_decision *k, uint64_t value, const char *reason) {
        k->wanted = true;
        k->value = value;
        snprintf(k->reason, sizeof k->reason, "%s", reason);
}

static void fixture_decision(decision *d) {
        *d = (decision) { .devices = calloc(3, sizeof(device_decision)), .n_devices = 3 };
        want(&d->global[KNOB_DIRTY_BYTES], 200 * M, "the sum of the active devices' bandwidths");
        want(&d->global[KNOB_DIRTY_BACKGROUND_BYTES], 100 * M, "half the dirty limit");
        d->devices[0] = (device_decision) { .bdi = "0:52", .managed = true };
        d->devices[1] = (device_decision) { .bdi = "7:0", .managed = false };
        d->devices[2] = (device_decision) { .bdi = "7:2", .managed = true, .active = true, .bw_bytes_per_s = 8 * M,
                                            .bw_source = SPEED_REMEMBERED, .remembered_age_s = 3 * 3600 };
        want(&d->devices[2].knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], 16 * M, "bandwidth 8.0M/s x 2.0 s target");
        want(&d->devices[2].knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST], 1, "a slow device");
}

static void put(const char *rel, const char *text) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, rel);
        f = fopen(path, "we");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                printf("# cannot write %s\n", path);
}

/* A dirtier (/proc/22747, dd, writing 10 MiB per tick) and trace_pipe text in which it is throttled. */
static attribution *fixture_attribution(void) {
        attribution_options o = { .root = dir, .enabled = true, .detached_trace = true };
        _cleanup_free_ char *trace_path = srcdir_path("tests/data/trace-dd.txt"), *trace = NULL;
        attribution *a = NULL;
        char path[256], text[128];
        size_t trace_len = 0;

        snprintf(path, sizeof path, "%s/proc", dir);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/proc/22747", dir);
        (void) mkdir(path, 0755);
        put("proc/22747/stat", "22747 (dd) S 2 0 0 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5\n");
        put("proc/22747/comm", "dd\x1b[2J\n");
        CHECK(read_file_full(trace_path, &trace, &trace_len) == 0);
        CHECK(attribution_new(&o, &a) == 0);
        for (uint64_t t = 0; t <= ATTRIBUTION_SCAN_EVERY_TICKS; t++) {
                snprintf(text, sizeof text, "write_bytes: %llu\ncancelled_write_bytes: 0\n",
                         (unsigned long long) (t * 10 * M));
                put("proc/22747/io", text);
                if (t == ATTRIBUTION_SCAN_EVERY_TICKS && trace)
                        attribution_feed_trace(a, trace, trace_len);
                attribution_tick(a, (t + 1) * 1000000);
        }
        return a;
}

/* A manager with a sample, a decision, knobs changed on a fake kernel (so originals are saved),
 * attribution, history and no hotplug monitor: the state every verb reads. */
static manager *fixture_manager(fake_kernel *fk, const char *socket_path) {
        char conf[256], saved[256];
        manager_options mo = { .root = dir, .socket_path = socket_path, .dry_run = false };
        config c;
        manager *m = NULL;
        sample s;
        knob_io io = fake_kernel_io(fk);

        snprintf(conf, sizeof conf, "%s/wbtuned.conf", dir);
        snprintf(saved, sizeof saved, "%s/saved", dir);
        put("wbtuned.conf", "[daemon]\ntick = 1s\n");
        mo.config_path = conf;
        config_init(&c);
        CHECK(manager_new(&mo, &c, &m) == 0);
        fixture_sample(&s, 0);
        CHECK(sample_copy(&m->current, &s) == 0);
        fixture_decision(&m->decision);
        m->have_decision = true;
        m->n_ticks = 5;
        CHECK(actuator_new("/fake", saved, &io, &m->actuator) == 0);
        CHECK(actuator_apply(m->actuator, &m->current, &m->decision) == 0);
        m->attribution = fixture_attribution();
        m->history = history_new(8);
        m->history_minutes = 15;
        for (uint64_t t = 0; t < 4; t++) {
                fixture_sample(&s, t);
                history_add(m->history, &s);
        }
        snprintf(m->hotplug_reason, sizeof m->hotplug_reason, "not on the live system (--root)");
        m->hotplug_events = 3;
        return m;
}

/* --- coverage: which fields the replies held ----------------------------------------------------- */

static bool seen[_PF_MAX];

static void cover(json_object *o, protocol_kind kind) {
        if (!json_object_is_type(o, json_type_object))
                return;
        for (protocol_field f = 0; f < _PF_MAX; f++) {
                const protocol_field_info *fi = &protocol_fields[f];
                json_object *v;
                bool mine = false;

                for (protocol_kind k = kind; k != PK_NONE && !mine; k = protocol_kind_base(k))
                        mine = fi->kind == k;
                if (!mine || !json_object_object_get_ex(o, fi->name, &v))
                        continue;
                seen[f] = true;
                if (fi->type == PROTO_OBJECT && fi->child != PK_NONE)
                        cover(v, fi->child);
                else if (fi->type == PROTO_OBJECT_ARRAY)
                        for (size_t i = 0; i < json_object_array_length(v); i++)
                                cover(json_object_array_get_idx(v, i), fi->child);
                else if (fi->type == PROTO_OBJECT_MAP && json_object_is_type(v, json_type_object)) {
                        json_object_object_foreach(v, key, e) {
                                (void) key;
                                cover(e, fi->child);
                        }
                }
        }
}

/* Fields only a live kernel fills: per-task counters come from taskstats (root, CAP_NET_ADMIN), and
 * proc_scan_reason only when /proc cannot be read. The live tests (test-top-live.sh) see them. */
static bool live_only(protocol_field f) {
        return protocol_fields[f].kind == PK_TASK_IO || f == PF_ATTRIBUTION_PROC_SCAN_REASON;
}

/* A string that is a number, bare or with a unit ("16M", "1000000 ppm", "5.00s", "20%", "8.0M/s"): numbers go
 * into replies as JSON numbers, their units in the field's name. */
static bool number_in_string(const char *s) {
        const char *p = s;

        if (!(*p >= '0' && *p <= '9'))
                return false;
        while ((*p >= '0' && *p <= '9') || *p == '.')
                p++;
        while (*p == ' ')
                p++;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '%' || *p == '/')
                p++;
        return *p == '\0';
}

/* Every string of o that holds a number, by path; 0 if none. The texts meant for people or as CSV, and the
 * package's version, are not looked into. */
static unsigned numbers_in_strings(json_object *o, const char *path) {
        char sub[512];
        unsigned n = 0;

        if (json_object_is_type(o, json_type_string)) {
                if (!number_in_string(json_object_get_string(o)))
                        return 0;
                printf("# %s is the string \"%s\": a number belongs in a JSON number\n", path, json_object_get_string(o));
                return 1;
        }
        if (json_object_is_type(o, json_type_array))
                for (size_t i = 0; i < json_object_array_length(o); i++) {
                        snprintf(sub, sizeof sub, "%.400s[%zu]", path, i);
                        n += numbers_in_strings(json_object_array_get_idx(o, i), sub);
                }
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_foreach(o, key, v) {
                        if (strcmp(key, protocol_name(PF_EXPLAIN_TEXT)) == 0 || strcmp(key, protocol_name(PF_HISTORY_CSV_CSV)) == 0 ||
                            strcmp(key, protocol_name(PF_STATUS_PACKAGE_VERSION)) == 0)
                                continue;
                        snprintf(sub, sizeof sub, "%.400s.%.64s", path, key);
                        n += numbers_in_strings(v, sub);
                }
        }
        return n;
}

static int top_all(json_object *o, FILE *f) {
        return ctl_format_top(o, 0, f);
}

static void test_number_in_string(void) {
        static const char *const numbers[] = { "16M", "1000000 ppm", "5.00s", "20%", "8.0M/s", "0", "12" };
        static const char *const words[] = { "7:2", "nfs 0:52", "loop2", "max_bytes", "", "bandwidth 8.0M/s x 2 s", "0x1f" };

        for (size_t i = 0; i < ELEMENTSOF(numbers); i++)
                CHECK(number_in_string(numbers[i]));
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                CHECK(!number_in_string(words[i]));
}

/* wbtunectl metrics on a terminal */
static int metrics_terminal(json_object *o, FILE *f) {
        return metrics_print_result(o, true, f);
}

static void test_round_trip(void) {
        static const struct {
                const char *request;
                const char *verb;
                bool csv;
                int want;                  /* ctl_check_reply(): 0, or 1 for an error reply */
                int (*render)(json_object *, FILE *);
        } cases[] = {
                { "{\"verb\":\"status\"}", "status", false, 0, ctl_format_status },
                { "{\"verb\":\"devices\"}", "devices", false, 0, ctl_format_devices },
                { "{\"verb\":\"show\",\"device\":\"loop2\"}", "show", false, 0, ctl_format_show },
                { "{\"verb\":\"show\",\"device\":\"0:52\"}", "show", false, 0, ctl_format_show },
                { "{\"verb\":\"show\",\"device\":\"7:0\"}", "show", false, 0, ctl_format_show },
                { "{\"verb\":\"explain\",\"device\":\"7:2\"}", "explain", false, 0, ctl_format_explain },
                { "{\"verb\":\"explain\",\"device\":\"7:0\"}", "explain", false, 0, ctl_format_explain },
                { "{\"verb\":\"top\"}", "top", false, 0, top_all },
                { "{\"verb\":\"history\"}", "history", false, 0, NULL },
                { "{\"verb\":\"history\",\"device\":\"7:2\"}", "history", false, 0, NULL },
                { "{\"verb\":\"history\",\"device\":\"7:2\",\"format\":\"csv\"}", "history", true, 0, ctl_format_history_csv },
                { "{\"verb\":\"history\",\"format\":\"csv\"}", "history", true, 0, ctl_format_history_csv },
                { "{\"verb\":\"show\",\"device\":\"nosuch\"}", "show", false, 1, NULL },
                { "{\"verb\":\"reload\"}", "reload", false, 0, NULL },
                { "{\"verb\":\"metrics\"}", "metrics", false, 0, metrics_terminal },
                { "{\"verb\":\"restore\"}", "restore", false, 0, NULL },
        };
        char socket_path[300];
        fake_kernel *fk = fake_kernel_new(1000000, 3);
        manager *m;
        size_t n_verbs;
        const control_verb *daemon_verbs = manager_control_verbs(&n_verbs);
        /* The replies of the privileged verbs too, when a plain user runs this (a package build):
         * their own copy with the root check off (test-control checks that check). */
        control_verb *verbs = calloc(n_verbs, sizeof *verbs);

        CHECK(verbs != NULL);
        if (!verbs)
                return;
        memcpy(verbs, daemon_verbs, n_verbs * sizeof *verbs);
        if (geteuid() != 0)
                for (size_t i = 0; i < n_verbs; i++)
                        verbs[i].privileged = false;
        int ready[2], done[2];
        unsigned build_errors = UINT32_MAX;
        pid_t server;

        snprintf(socket_path, sizeof socket_path, "%s/control", dir);
        m = fixture_manager(fk, socket_path);

        /* the daemon's verbs on a real socket, in a child */
        CHECK(pipe(ready) == 0 && pipe(done) == 0);
        server = fork();
        if (server == 0) {
                sd_event *e = NULL;
                control_server *s = NULL;
                sigset_t mask;

                close(ready[0]);
                close(done[0]);
                sigemptyset(&mask);
                sigaddset(&mask, SIGTERM);
                sigprocmask(SIG_BLOCK, &mask, NULL);
                if (sd_event_new(&e) < 0 || sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL) < 0 ||
                    control_server_new(e, socket_path, verbs, n_verbs, m, &s) < 0)
                        _exit(2);
                (void) !write(ready[1], "x", 1);
                (void) sd_event_loop(e);
                /* builders that passed a value of the wrong type (logged, and counted here) */
                build_errors = protocol_build_errors();
                (void) !write(done[1], &build_errors, sizeof build_errors);
                _exit(0);
        }
        close(ready[1]);
        close(done[1]);
        char x;
        CHECK(read(ready[0], &x, 1) == 1);
        close(ready[0]);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_object *request = json_tokener_parse(cases[i].request), *reply = NULL, *result = NULL;
                protocol_kind kind = protocol_result_kind(cases[i].verb, cases[i].csv);
                char error[512] = "";
                int r;

                printf("# %s\n", cases[i].request);
                cover(request, PK_REQUEST);
                r = control_call(socket_path, request, &reply, 5000);
                json_object_put(request);
                CHECK(r == 0);
                if (r < 0) {
                        printf("# control_call: %s\n", strerror(-r));
                        continue;
                }
                cover(reply, PK_REPLY);
                CHECK_EQ_U64(numbers_in_strings(reply, cases[i].verb), 0);
                /* replies are UTF-8 whatever the names hold */
                const char *text = json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN);
                CHECK(utf8_valid(text, strlen(text)));

                r = ctl_check_reply(reply, kind, &result, error, sizeof error);
                if (r != cases[i].want)
                        printf("# %s\n", error);
                CHECK(r == cases[i].want);
                if (r != 0) {
                        json_object_put(reply);
                        continue;
                }
                /* strictly: no field the table does not list either */
                r = protocol_check(result, kind, true, error, sizeof error);
                if (r < 0)
                        printf("# %s: %s\n", cases[i].verb, error);
                CHECK(r == 0);
                cover(result, kind);

                if (cases[i].render) {
                        char *out = NULL;
                        size_t size = 0;
                        FILE *f = open_memstream(&out, &size);

                        r = cases[i].render(result, f);
                        fclose(f);
                        CHECK(r == 0 && size > 0);
                        CHECK(!memchr(out, '\x1b', size) && !strstr(out, "\nforged"));
                        if (cases[i].csv) {
                                uint64_t rows = 0;
                                char *data = NULL;
                                size_t data_size = 0;
                                FILE *d = open_memstream(&data, &data_size);

                                CHECK(ctl_plot_data(proto_str(result, PF_HISTORY_CSV_CSV), proto_has(result, PF_HISTORY_CSV_BDI),
                                                    d, &rows, error, sizeof error) == 0);
                                fclose(d);
                                CHECK_EQ_U64(rows, 4);
                                free(data);
                        }
                        printf("%s", out);
                        free(out);
                }
                json_object_put(reply);
        }

        kill(server, SIGTERM);
        CHECK(read(done[0], &build_errors, sizeof build_errors) == sizeof build_errors);
        close(done[0]);
        CHECK_EQ_U64(build_errors, 0);
        waitpid(server, NULL, 0);
        unlink(socket_path);

        unsigned missing = 0, covered = 0;
        for (protocol_field f = 0; f < _PF_MAX; f++) {
                if (seen[f] || live_only(f)) {
                        covered += seen[f];
                        continue;
                }
                printf("# no reply held %s.%s: a field the daemon never builds, or one these fixtures miss\n",
                       protocol_kind_name(protocol_fields[f].kind), protocol_name(f));
                missing++;
        }
        printf("# %u of %d fields seen in the replies\n", covered, _PF_MAX);
        CHECK_EQ_U64(missing, 0);

        free(verbs);
        manager_free(m);
        fake_kernel_free(fk);
}

/* The fixtures' names are UTF-8: linked with tests/jsonc-strict-018.c, json-c refuses them in strict
 * mode as json-c 0.18 does, and the client must read the replies all the same (issue 25). */
static void test_jsonc_018(void) {
        struct json_tokener *tok = json_tokener_new();
        json_object *o;

        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        o = json_tokener_parse_ex(tok, "[\"\xc3\xa9\"]", 7);
        CHECK(!o && json_tokener_get_error(tok) == json_tokener_error_parse_string);
        json_tokener_free(tok);
        json_object_put(o);
}

int main(void) {
        log_open();
        log_set_max_level(LOG_WARNING);
        if (!mkdtemp(dir)) {
                printf("# mkdtemp: %m\n");
                return EXIT_FAILURE;
        }
        test_jsonc_018();
        test_recorded_fields();
        test_doc();
        test_number_in_string();
        test_round_trip();

        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) !system(cmd);
        TEST_EXIT();
}
