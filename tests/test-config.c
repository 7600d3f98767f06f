/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the config module: every key, ranges, errors with file:line, drop-ins, dump round-trip, matching. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "observe.h"
#include "tap.h"
#include "util.h"

static char tmpdir[] = "/tmp/test-config-XXXXXX";

/* tmpdir/name, in one of a ring of static buffers so a few can be held at once. */
static const char *tpath(const char *name) {
        static char ring[32][512];
        static unsigned next;
        char *path = ring[next++ % ELEMENTSOF(ring)];

        snprintf(path, sizeof(ring[0]), "%s/%s", tmpdir, name);
        return path;
}

/* Write dir/name (dir relative to tmpdir) and return its full path in a static buffer. */
static const char *write_conf(const char *name, const char *content) {
        const char *path = tpath(name);
        FILE *f;

        f = fopen(path, "we");
        if (!f) {
                perror(path);
                exit(EXIT_FAILURE);
        }
        fputs(content, f);
        fclose(f);
        return path;
}


/* Load with the errors captured; *errs is malloc'd ("" when none). */
static int load_flags(const char *path, unsigned flags, config *c, char **errs) {
        size_t size = 0;
        FILE *f;
        int r;

        *errs = NULL;
        f = open_memstream(errs, &size);
        if (!f)
                abort();
        r = config_load_full(path, flags, c, f);
        fclose(f);
        return r;
}

static int load(const char *path, config *c, char **errs) {
        return load_flags(path, 0, c, errs);
}

/* Errors expected text with %s replaced by the tmpdir, for exact comparisons. */
static char *expect(const char *format, ...) __attribute__((format(printf, 1, 2)));
static char *expect(const char *format, ...) {
        char *s;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&s, format, ap) < 0)
                abort();
        va_end(ap);
        return s;
}

/* Load one [section] body and expect exactly one error message (or success when msg is NULL);
 * "ONE" in msg stands for the file's path. */
static void check_one(const char *body, const char *msg, unsigned line) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        const char *p = write_conf("one.conf", body);
        config c;
        int r;

        config_init(&c);
        r = load(p, &c, &errs);
        if (!msg) {
                CHECK_EQ_U64(r, 0);
                CHECK_STREQ(errs, "");
                return;
        }
        {
                const char *one = strstr(msg, "ONE");

                if (one)
                        want = expect("%s:%u: %.*s%s%s\n", p, line, (int) (one - msg), msg, p, one + 3);
                else
                        want = expect("%s:%u: %s\n", p, line, msg);
        }
        CHECK(r == -EINVAL);
        CHECK_STREQ(errs, want);
}

static bool device_equal(const device_config *a, const device_config *b) {
        return strcmp(a->match, b->match) == 0 && a->manage == b->manage && a->backlog_ms == b->backlog_ms &&
               a->min_bytes == b->min_bytes && a->max_bytes == b->max_bytes && a->strict_limit == b->strict_limit;
}

/* Field by field; file and line of devices are where they were read, so they are not compared. */
static bool config_equal(const config *a, const config *b) {
        if (a->tick_ms != b->tick_ms || strcmp(a->socket_path, b->socket_path) != 0 ||
            a->log_level != b->log_level || a->history_minutes != b->history_minutes ||
            a->attribution != b->attribution || a->task_delayacct != b->task_delayacct || a->mode != b->mode || a->backlog_ms != b->backlog_ms ||
            strcmp(a->metrics_textfile, b->metrics_textfile) != 0 || a->metrics_interval_ms != b->metrics_interval_ms ||
            a->dirty_bytes != b->dirty_bytes || a->dirty_background_bytes != b->dirty_background_bytes ||
            a->min_dirty_bytes != b->min_dirty_bytes || a->max_dirty_bytes != b->max_dirty_bytes ||
            a->min_device_bytes != b->min_device_bytes || a->max_age_ms != b->max_age_ms ||
            a->unmeasured_device_bytes != b->unmeasured_device_bytes ||
            a->n_devices != b->n_devices)
                return false;
        for (unsigned i = 0; i < a->n_devices; i++)
                if (!device_equal(&a->devices[i], &b->devices[i]))
                        return false;
        return true;
}

static void test_defaults(void) {
        config c;

        memset(&c, 0xaa, sizeof(c));
        config_init(&c);
        CHECK_EQ_U64(c.tick_ms, 1000);
        CHECK_STREQ(c.socket_path, "/run/wbtuned/control");
        CHECK_EQ_U64(c.log_level, LOG_INFO);
        CHECK_EQ_U64(c.history_minutes, 15);
        CHECK(c.attribution);
        CHECK(!c.task_delayacct);
        CHECK_EQ_U64(c.mode, POLICY_MODE_AUTO);
        CHECK_EQ_U64(c.backlog_ms, 2000);
        CHECK_EQ_U64(c.dirty_bytes, 0);
        CHECK_EQ_U64(c.dirty_background_bytes, 0);
        CHECK_EQ_U64(c.min_dirty_bytes, 64 << 20);
        CHECK_EQ_U64(c.max_dirty_bytes, 0);
        CHECK_EQ_U64(c.min_device_bytes, 4 << 20);
        CHECK_EQ_U64(c.unmeasured_device_bytes, 64 << 20);
        CHECK_EQ_U64(c.max_age_ms, 30000);
        CHECK_EQ_U64(c.n_devices, 0);
}

static void test_every_key(void) {
        _cleanup_free_ char *errs = NULL;
        const char *p = write_conf("all.conf",
                "# every key, none at its default\n"
                "[daemon]\n"
                "tick = 500ms\n"
                "socket = /run/test/ctl\n"
                "log_level = debug\n"
                "history_minutes = 60\n"
                "attribution = no\n"
                "task_delayacct = yes\n"
                "\n"
                "[policy]\n"
                "mode = auto\n"
                "backlog_seconds = 3\n"
                "dirty_bytes = 1G\n"
                "dirty_background_bytes = 256M\n"
                "min_dirty_bytes = 32M\n"
                "max_dirty_bytes = 2G\n"
                "min_device_bytes = 512K\n"
                "max_age = 1min\n"
                "\n"
                "[device \"sd*\"]\n"
                "manage = no\n"
                "backlog_seconds = 1500ms\n"
                "min_bytes = 8M\n"
                "max_bytes = 64M\n"
                "strict_limit = yes\n"
                "[device \"7:0\"]\n"
                "strict_limit = no\n"
                "[device \"usb\"]\n");
        config c;

        config_init(&c);
        CHECK_EQ_U64(load(p, &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(c.tick_ms, 500);
        CHECK_STREQ(c.socket_path, "/run/test/ctl");
        CHECK_EQ_U64(c.log_level, LOG_DEBUG);
        CHECK_EQ_U64(c.history_minutes, 60);
        CHECK(!c.attribution);
        CHECK(c.task_delayacct);
        CHECK_EQ_U64(c.mode, POLICY_MODE_AUTO);
        CHECK_EQ_U64(c.backlog_ms, 3000);
        CHECK_EQ_U64(c.dirty_bytes, 1ULL << 30);
        CHECK_EQ_U64(c.dirty_background_bytes, 256ULL << 20);
        CHECK_EQ_U64(c.min_dirty_bytes, 32ULL << 20);
        CHECK_EQ_U64(c.max_dirty_bytes, 2ULL << 30);
        CHECK_EQ_U64(c.min_device_bytes, 512 << 10);
        CHECK_EQ_U64(c.max_age_ms, 60000);
        CHECK_EQ_U64(c.n_devices, 3);
        CHECK_STREQ(c.devices[0].match, "sd*");
        CHECK_STREQ(c.devices[0].file, p);
        CHECK_EQ_U64(c.devices[0].line, 20);
        CHECK(!c.devices[0].manage);
        CHECK_EQ_U64(c.devices[0].backlog_ms, 1500);
        CHECK_EQ_U64(c.devices[0].min_bytes, 8 << 20);
        CHECK_EQ_U64(c.devices[0].max_bytes, 64 << 20);
        CHECK(c.devices[0].strict_limit == TRISTATE_YES);
        CHECK_STREQ(c.devices[1].match, "7:0");
        CHECK_EQ_U64(c.devices[1].line, 26);
        CHECK(c.devices[1].manage);
        CHECK_EQ_U64(c.devices[1].backlog_ms, 0);
        CHECK(c.devices[1].strict_limit == TRISTATE_NO);
        /* an empty section still exists, with device defaults */
        CHECK_STREQ(c.devices[2].match, "usb");
        CHECK(c.devices[2].manage);
        CHECK_EQ_U64(c.devices[2].min_bytes, 0);
        CHECK_EQ_U64(c.devices[2].max_bytes, 0);
        CHECK(c.devices[2].strict_limit == TRISTATE_AUTO);
}

static void test_choices(void) {
        static const struct { const char *name; int level; } levels[] = {
                { "err", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
                { "info", LOG_INFO }, { "debug", LOG_DEBUG },
        };
        _cleanup_free_ char *errs = NULL;
        char body[128];
        config c;

        for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
                snprintf(body, sizeof(body), "[daemon]\nlog_level = %s\n", levels[i].name);
                config_init(&c);
                free(errs);
                CHECK_EQ_U64(load(write_conf("lvl.conf", body), &c, &errs), 0);
                CHECK_EQ_U64(c.log_level, levels[i].level);
        }
        config_init(&c);
        c.mode = POLICY_MODE_AUTO;
        free(errs);
        CHECK_EQ_U64(load(write_conf("mode.conf", "[policy]\nmode = observe\n"), &c, &errs), 0);
        CHECK_EQ_U64(c.mode, POLICY_MODE_OBSERVE);
        free(errs);
        CHECK_EQ_U64(load(write_conf("strict.conf", "[device \"a\"]\nstrict_limit = yes\nstrict_limit = auto\n"),
                          &c, &errs), 0);
        CHECK(c.devices[0].strict_limit == TRISTATE_AUTO);

        check_one("[daemon]\nlog_level = error\n", "log_level: invalid value \"error\" (allowed: err, warning, notice, info, debug)", 2);
        check_one("[daemon]\nlog_level = INFO\n", "log_level: invalid value \"INFO\" (allowed: err, warning, notice, info, debug)", 2);
        check_one("[policy]\nmode = on\n", "mode: invalid value \"on\" (allowed: observe, auto)", 2);
        check_one("[device \"x\"]\nmanage = true\n", "manage: invalid value \"true\" (allowed: yes, no)", 2);
        check_one("[device \"x\"]\nstrict_limit = 1\n", "strict_limit: invalid value \"1\" (allowed: auto, yes, no)", 2);
}

static void test_ranges(void) {
        /* both edges of every ranged key, and one step beyond each */
        check_one("[daemon]\ntick = 100ms\n", NULL, 0);
        check_one("[daemon]\ntick = 99ms\n", "tick: 99ms is out of range (allowed: 100ms..1min)", 2);
        check_one("[daemon]\ntick = 60s\n", NULL, 0);
        check_one("[daemon]\ntick = 60001ms\n", "tick: 60001ms is out of range (allowed: 100ms..1min)", 2);
        check_one("[daemon]\ntick = 0\n", "tick: 0 is out of range (allowed: 100ms..1min)", 2);
        check_one("[daemon]\nhistory_minutes = 1\n", NULL, 0);
        check_one("[daemon]\nhistory_minutes = 1440\n", NULL, 0);
        check_one("[daemon]\nhistory_minutes = 0\n", "history_minutes: 0 is out of range (allowed: 1..1440)", 2);
        check_one("[daemon]\nhistory_minutes = 1441\n", "history_minutes: 1441 is out of range (allowed: 1..1440)", 2);
        check_one("[daemon]\nhistory_minutes = 15min\n", "history_minutes: invalid number \"15min\" (allowed: 1..1440)", 2);
        check_one("[daemon]\nattribution = on\n", "attribution: invalid value \"on\" (allowed: yes, no)", 2);
        check_one("[daemon]\ntask_delayacct = 1\n", "task_delayacct: invalid value \"1\" (allowed: yes, no)", 2);
        check_one("[daemon]\ntick = fast\n", "tick: invalid duration \"fast\" (allowed: 100ms..1min)", 2);
        check_one("[daemon]\ntick =\n", "tick: invalid duration \"\" (allowed: 100ms..1min)", 2);

        check_one("[policy]\nbacklog_seconds = 100ms\n", NULL, 0);
        check_one("[policy]\nbacklog_seconds = 1min\n", NULL, 0);
        check_one("[policy]\nbacklog_seconds = 61\n", "backlog_seconds: 61s is out of range (allowed: 100ms..1min)", 2);
        check_one("[policy]\nbacklog_seconds = none\n", "backlog_seconds: invalid duration \"none\" (allowed: 100ms..1min)", 2);

        check_one("[policy]\nmax_age = 1s\n", NULL, 0);
        check_one("[policy]\nmax_age = 1h\n", NULL, 0);
        check_one("[policy]\nmax_age = 999ms\n", "max_age: 999ms is out of range (allowed: 1s..1h)", 2);
        check_one("[policy]\nmax_age = 3601s\n", "max_age: 3601s is out of range (allowed: 1s..1h)", 2);

        check_one("[policy]\nmin_device_bytes = 256K\n", NULL, 0);
        check_one("[policy]\nunmeasured_device_bytes = none\n", NULL, 0);
        check_one("[policy]\nunmeasured_device_bytes = 255K\n", "unmeasured_device_bytes: 255K is out of range (allowed: none or 256K..1024T)", 2);
        check_one("[policy]\nmin_device_bytes = 1G\n", NULL, 0);
        check_one("[policy]\nmin_device_bytes = 262143\n", "min_device_bytes: 262143 is out of range (allowed: 256K..1G)", 2);
        check_one("[policy]\nmin_device_bytes = 1025M\n", "min_device_bytes: 1025M is out of range (allowed: 256K..1G)", 2);
        check_one("[policy]\nmin_device_bytes = none\n", "min_device_bytes: invalid size \"none\" (allowed: 256K..1G)", 2);

        check_one("[policy]\ndirty_bytes = 8K\n", NULL, 0);
        check_one("[policy]\ndirty_bytes = 1024T\n", NULL, 0);
        check_one("[policy]\ndirty_bytes = 8191\n", "dirty_bytes: 8191 is out of range (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\ndirty_bytes = 1025T\n", "dirty_bytes: 1025T is out of range (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\ndirty_background_bytes = 4K\n", "dirty_background_bytes: 4K is out of range (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\nmin_dirty_bytes = 8K\nmax_dirty_bytes = 8K\n", NULL, 0);
        check_one("[policy]\nmin_dirty_bytes = 0\n", "min_dirty_bytes: 0 is out of range (allowed: 8K..1024T)", 2);
        check_one("[policy]\nmax_dirty_bytes = 1M\n", "max_dirty_bytes: min_dirty_bytes = 64M, max_dirty_bytes = 1M (default) (allowed: min_dirty_bytes <= max_dirty_bytes)", 2);

        check_one("[device \"x\"]\nbacklog_seconds = 100ms\nmin_bytes = 256K\nmax_bytes = 1024T\n", NULL, 0);
        check_one("[device \"x\"]\nbacklog_seconds = 99ms\n", "backlog_seconds: 99ms is out of range (allowed: none or 100ms..1min)", 2);
        check_one("[device \"x\"]\nmin_bytes = 255K\n", "min_bytes: 255K is out of range (allowed: none or 256K..1024T)", 2);
        check_one("[device \"x\"]\nmax_bytes = 2048T\n", "max_bytes: 2048T is out of range (allowed: none or 256K..1024T)", 2);

        /* socket: absolute, at most 107 bytes */
        {
                char body[300], path[109];

                memset(path, 'a', sizeof(path));
                path[0] = '/';
                path[107] = 0;
                snprintf(body, sizeof(body), "[daemon]\nsocket = %s\n", path);
                check_one(body, NULL, 0);
                path[107] = 'a';
                path[108] = 0;
                snprintf(body, sizeof(body), "[daemon]\nsocket = %s\n", path);
                check_one(body, "socket: path is 108 bytes long (allowed: an absolute path shorter than 108 bytes)", 2);
                check_one("[daemon]\nsocket = run/x\n", "socket: \"run/x\" is not an absolute path (allowed: an absolute path shorter than 108 bytes)", 2);
                check_one("[daemon]\nsocket =\n", "socket: \"\" is not an absolute path (allowed: an absolute path shorter than 108 bytes)", 2);
        }

        /* metrics_textfile: none, or an absolute path of a *.prom file (the daemon replaces it) */
        {
#define TEXTFILE_ALLOWED " (allowed: none, or an absolute path ending in .prom, shorter than 160 bytes)"
                char body[400], path[258];
                config c;

                check_one("[daemon]\nmetrics_textfile = /var/lib/prometheus/node-exporter/wbtuned.prom\n", NULL, 0);
                check_one("[daemon]\nmetrics_textfile = none\n", NULL, 0);
                check_one("[daemon]\nmetrics_textfile =\n", NULL, 0);
                check_one("[daemon]\nmetrics_textfile = /etc/passwd\n",
                          "metrics_textfile: \"/etc/passwd\" is not a file name ending in .prom" TEXTFILE_ALLOWED, 2);
                check_one("[daemon]\nmetrics_textfile = /var/lib/x/.prom\n",
                          "metrics_textfile: \"/var/lib/x/.prom\" is not a file name ending in .prom" TEXTFILE_ALLOWED, 2);
                check_one("[daemon]\nmetrics_textfile = wbtuned.prom\n",
                          "metrics_textfile: \"wbtuned.prom\" is not an absolute path" TEXTFILE_ALLOWED, 2);
                memset(path, 'a', sizeof(path));
                path[0] = '/';
                memcpy(path + 160 - 5, ".prom", 6);     /* 160 bytes: one too many */
                snprintf(body, sizeof(body), "[daemon]\nmetrics_textfile = %s\n", path);
                check_one(body, "metrics_textfile: path is 160 bytes long" TEXTFILE_ALLOWED, 2);
                path[159 - 5] = 0;
                strcat(path, ".prom");                   /* 159 bytes */
                snprintf(body, sizeof(body), "[daemon]\nmetrics_textfile = %s\n", path);
                check_one(body, NULL, 0);
                check_one("[daemon]\nmetrics_interval = 1s\n", NULL, 0);
                check_one("[daemon]\nmetrics_interval = 999ms\n",
                          "metrics_interval: 999ms is out of range (allowed: 1s..1h)", 2);
                config_init(&c);
                CHECK_STREQ(c.metrics_textfile, "");
                CHECK_EQ_U64(c.metrics_interval_ms, 15000);
        }
}

static void test_sizes(void) {
        static const struct { const char *text; uint64_t bytes; } sizes[] = {
                { "8192", 8192 }, { "16K", 16 << 10 }, { "16M", 16 << 20 }, { "3G", 3ULL << 30 },
                { "2T", 2ULL << 40 }, { "1536M", 1536ULL << 20 }, { "none", 0 }, { "0", 0 }, { "", 0 },
        };
        _cleanup_free_ char *errs = NULL;
        char body[128];
        config c;

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                snprintf(body, sizeof(body), "[policy]\ndirty_bytes = %s\n", sizes[i].text);
                config_init(&c);
                c.dirty_bytes = 1;
                free(errs);
                CHECK_EQ_U64(load(write_conf("size.conf", body), &c, &errs), 0);
                CHECK_EQ_U64(c.dirty_bytes, sizes[i].bytes);
        }
        check_one("[policy]\ndirty_bytes = 99999999999999999999T\n",
                  "dirty_bytes: \"99999999999999999999T\" is too large (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\ndirty_bytes = 99999999T\n",
                  "dirty_bytes: \"99999999T\" is too large (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\ndirty_bytes = 16Q\n", "dirty_bytes: invalid size \"16Q\" (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\ndirty_bytes = -1\n", "dirty_bytes: invalid size \"-1\" (allowed: none or 8K..1024T)", 2);
        check_one("[policy]\nmax_age = 99999999999999999999\n",
                  "max_age: \"99999999999999999999\" is too large (allowed: 1s..1h)", 2);
}

/* A file with one mistake of each kind: every error reported, each with its own line. */
static void test_errors_all_reported(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        const char *p = write_conf("bad.conf",
                "stray = 1\n"                       /* 1 */
                "[daemon]\n"                        /* 2 */
                "tick = 5ms\n"                      /* 3 */
                "colour = blue\n"                   /* 4 */
                "just words\n"                      /* 5 */
                "[policy\n"                         /* 6 */
                "mode = auto\n"                     /* 7: under a broken header: skipped */
                "[polcy]\n"                         /* 8 */
                "mode = auto\n"                     /* 9: skipped, section already reported */
                "[policy]\n"                        /* 10 */
                "backlog_seconds = 2x\n"            /* 11 */
                "[device sdb]\n"                    /* 12 */
                "manage = no\n"                     /* 13: skipped */
                "[device]\n"                        /* 14 */
                "[device \"\"]\n"                   /* 15 */
                "[device \"a/b\"]\n"                /* 16 */
                "[device \"4096:0\"]\n"             /* 17 */
                "[device \"ok\"]\n"                 /* 18 */
                "max_bytes = lots\n"                /* 19 */
                "size = 1\n");                      /* 20 */
        config c;

        config_init(&c);
        CHECK(load(p, &c, &errs) == -EINVAL);
        want = expect(
                "%1$s:1: stray: key outside of a section (allowed: [daemon], [policy], [device \"<match>\"])\n"
                "%1$s:3: tick: 5ms is out of range (allowed: 100ms..1min)\n"
                "%1$s:4: colour: unknown key in [daemon] (allowed: tick, socket, log_level, history_minutes, attribution, task_delayacct, metrics_textfile, metrics_interval)\n"
                "%1$s:5: syntax error: expected \"key = value\", \"[section]\" or a comment\n"
                "%1$s:6: syntax error: section header without closing ']'\n"
                "%1$s:8: [polcy]: unknown section (allowed: daemon, policy, device \"<match>\")\n"
                "%1$s:11: backlog_seconds: invalid duration \"2x\" (allowed: 100ms..1min)\n"
                "%1$s:12: [device sdb]: the device match must be in double quotes (allowed: device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse)\n"
                "%1$s:14: [device]: missing device match (allowed: device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse)\n"
                "%1$s:15: [device \"\"]: invalid device match (allowed: device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse)\n"
                "%1$s:16: [device \"a/b\"]: invalid device match (allowed: device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse)\n"
                "%1$s:17: [device \"4096:0\"]: invalid device number (allowed: 0..4095:0..1048575)\n"
                "%1$s:19: max_bytes: invalid size \"lots\" (allowed: none or 256K..1024T)\n"
                "%1$s:20: size: unknown key in [device] (allowed: manage, backlog_seconds, min_bytes, max_bytes, strict_limit)\n",
                p);
        CHECK_STREQ(errs, want);
        /* untouched on failure */
        CHECK_EQ_U64(c.tick_ms, 1000);
        CHECK_EQ_U64(c.n_devices, 0);
}

static void test_syntax_details(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        char body[1024];
        config c;

        /* comments, blanks, indentation (not a continuation), inline ';' comment, CRLF, BOM, duplicates */
        config_init(&c);
        CHECK_EQ_U64(load(write_conf("fmt.conf",
                "\xef\xbb\xbf# comment\r\n"
                "; another\r\n"
                "\r\n"
                "  [daemon]  \r\n"
                "\ttick = 2s\r\n"
                "    socket = /run/a ; where\r\n"
                "tick = 3s\r\n"
                "[ policy ]\n"
                "mode=auto\n"), &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(c.tick_ms, 3000);   /* duplicate key: last wins */
        CHECK_STREQ(c.socket_path, "/run/a");
        CHECK_EQ_U64(c.mode, POLICY_MODE_AUTO);

        check_one("[daemon]\n= 2s\n", "syntax error: missing key before '='", 2);
        check_one("[daemon] ; main\ntick = 2s\n", "syntax error: text after ']' (comments go on their own line)", 1);

        /* '#' is only a comment at the start of a line */
        check_one("[daemon]\ntick = 2s # two\n", "tick: invalid duration \"2s # two\" (allowed: 100ms..1min)", 2);

        /* line numbers stay exact after a line longer than inih's buffer */
        memset(body, 0, sizeof(body));
        strcpy(body, "[daemon]\n# ");
        memset(body + strlen(body), 'x', 300);
        strcat(body, "\nsocket = /");
        memset(body + strlen(body), 'y', 190);
        strcat(body, "\ntick = 1ms\n");
        free(errs);
        config_init(&c);
        CHECK(load(write_conf("long.conf", body), &c, &errs) == -EINVAL);
        want = expect("%1$s:3: syntax error: line too long (allowed: up to 197 characters)\n"
                      "%1$s:4: tick: 1ms is out of range (allowed: 100ms..1min)\n", tpath("long.conf"));
        CHECK_STREQ(errs, want);

        /* a NUL byte inside a line */
        {
                const char *p = tpath("nul.conf");
                FILE *f = fopen(p, "we");

                fwrite("[daemon]\ntick = 1\0s\n", 1, 20, f);
                fclose(f);
                free(errs);
                free(want);
                CHECK(load(p, &c, &errs) == -EINVAL);
                want = expect("%s:2: syntax error: NUL byte in line\n", p);
                CHECK_STREQ(errs, want);
        }
}

#define DEVICE_ALLOWED_TEXT "device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse"

/* A device number with too many digits is still a device number, and a broken glob is refused. */
static void test_device_matches(void) {
        _cleanup_free_ char *errs = NULL;
        config c;

        check_one("[device \"99999999999999999999:1\"]\n",
                  "[device \"99999999999999999999:1\"]: invalid device number (allowed: 0..4095:0..1048575)", 1);
        check_one("[device \"8:99999999999999999999999999999999\"]\n",
                  "[device \"8:99999999999999999999999999999999\"]: invalid device number (allowed: 0..4095:0..1048575)", 1);
        check_one("\n[device \"[a-\"]\n",
                  "[device \"[a-\"]: invalid glob: '[' without a closing ']' (allowed: " DEVICE_ALLOWED_TEXT ")", 2);
        check_one("[device \"sd[\"]\n",
                  "[device \"sd[\"]: invalid glob: '[' without a closing ']' (allowed: " DEVICE_ALLOWED_TEXT ")", 1);
        check_one("[device \"[]\"]\n",
                  "[device \"[]\"]: invalid glob: '[' without a closing ']' (allowed: " DEVICE_ALLOWED_TEXT ")", 1);
        check_one("[device \"sd\\\"]\n",
                  "[device \"sd\\\"]: invalid glob: '\\' at the end escapes nothing (allowed: " DEVICE_ALLOWED_TEXT ")", 1);
        check_one("[device \"loop[[:digt:]]\"]\n",
                  "[device \"loop[[:digt:]]\"]: invalid glob: unknown character class (allowed: " DEVICE_ALLOWED_TEXT ")", 1);
        check_one("[device \"loop[[:digit:]\"]\n",
                  "[device \"loop[[:digit:]\"]: invalid glob: '[' without a closing ']' (allowed: " DEVICE_ALLOWED_TEXT ")", 1);
        check_one("[device \"sd[z-a]\"]\n",
                  "[device \"sd[z-a]\"]: invalid glob: range goes backwards (allowed: " DEVICE_ALLOWED_TEXT ")", 1);

        /* well-formed globs load and match as fnmatch() does */
        config_init(&c);
        CHECK_EQ_U64(load(write_conf("globs.conf",
                "[device \"sd[a-c]\"]\n"
                "[device \"sd[!a]*\"]\n"
                "[device \"x[]]\"]\n"
                "[device \"loop[[:digit:]]\"]\n"
                "[device \"nvme[0-9]n[-1]\"]\n"
                "[device \"a\\[b\"]\n"
                "[device \"0099:1\"]\n"), &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(c.n_devices, 7);
        CHECK(device_config_matches(&c.devices[0], "sdb", NULL, 8, 16, 0));
        CHECK(!device_config_matches(&c.devices[0], "sdd", NULL, 8, 48, 0));
        CHECK(device_config_matches(&c.devices[1], "sdb1", NULL, 8, 17, 0));
        CHECK(!device_config_matches(&c.devices[1], "sda1", NULL, 8, 1, 0));
        CHECK(device_config_matches(&c.devices[2], "x]", NULL, 1, 1, 0));
        CHECK(device_config_matches(&c.devices[3], "loop7", NULL, 7, 7, 0));
        CHECK(!device_config_matches(&c.devices[3], "loop10", NULL, 7, 10, 0));
        CHECK(device_config_matches(&c.devices[4], "nvme0n1", NULL, 259, 0, 0));
        CHECK(device_config_matches(&c.devices[5], "a[b", NULL, 1, 2, 0));
        CHECK(device_config_matches(&c.devices[6], "whatever", NULL, 99, 1, 0));   /* leading zeros: a number */
}

/* Run load() of path in a child that must finish within 10 s; its error text into *errs. */
static int load_bounded(const char *path, char **errs) {
        int pipefd[2], status = 0, r;
        char buf[4096];
        ssize_t n;
        pid_t pid;

        *errs = NULL;
        if (pipe(pipefd) < 0)
                abort();
        pid = fork();
        if (pid == 0) {
                char *e = NULL;
                config c;

                close(pipefd[0]);
                alarm(10);
                config_init(&c);
                r = load(path, &c, &e);
                if (write(pipefd[1], e, strlen(e)) < 0)
                        _exit(100);
                free(e);
                _exit(-r);
        }
        close(pipefd[1]);
        n = read(pipefd[0], buf, sizeof(buf) - 1);   /* one message: one write */
        buf[n > 0 ? n : 0] = 0;
        close(pipefd[0]);
        if (waitpid(pid, &status, 0) != pid)
                abort();
        *errs = strdup(buf);
        if (WIFSIGNALED(status)) {
                printf("# loading %s: killed by signal %d (hung?)\n", path, WTERMSIG(status));
                return -ETIME;
        }
        return -WEXITSTATUS(status);
}

/* Anything but a regular file, or one too large, is refused at once with a message naming it. */
static void test_hostile_files(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        const char *fifo = tpath("fifo.conf"), *huge = tpath("huge.conf");
        config c;
        int fd;

        CHECK(load_bounded("/dev/zero", &errs) == -EINVAL);
        CHECK_STREQ(errs, "/dev/zero: cannot read: a character device, not a regular file (allowed: a regular file)\n");

        CHECK(mkfifo(fifo, 0600) == 0);
        free(errs);
        CHECK(load_bounded(fifo, &errs) == -EINVAL);
        want = expect("%s: cannot read: a FIFO, not a regular file (allowed: a regular file)\n", fifo);
        CHECK_STREQ(errs, want);

        /* sparse: 1 MiB of NUL bytes and one more */
        fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && ftruncate(fd, 1024 * 1024 + 1) == 0);
        close(fd);
        free(errs);
        free(want);
        CHECK(load_bounded(huge, &errs) == -EINVAL);
        want = expect("%s: cannot read: 1048577 bytes is too large (allowed: up to 1M)\n", huge);
        CHECK_STREQ(errs, want);

        /* a drop-in that is a FIFO or a device is ignored (a link to /dev/null masks a drop-in) */
        CHECK(mkdir(tpath("m.conf.d"), 0755) == 0);
        CHECK(mkfifo(tpath("m.conf.d/10-fifo.conf"), 0600) == 0);
        CHECK(symlink("/dev/zero", tpath("m.conf.d/20-zero.conf")) == 0);
        write_conf("m.conf.d/30-ok.conf", "[daemon]\ntick = 3s\n");
        write_conf("m.conf", "[daemon]\ntick = 2s\n");
        free(errs);
        CHECK(load_bounded(tpath("m.conf"), &errs) == 0);
        CHECK_STREQ(errs, "");

        /* the text entry point parses like a file, NUL bytes and all */
        config_init(&c);
        free(errs);
        errs = NULL;
        {
                static const char bad_glob[] = "[daemon]\ntick = 2s\n[device \"[x\"]\n";
                size_t size = 0;
                FILE *f = open_memstream(&errs, &size);

                CHECK(config_parse_text("mem", bad_glob, strlen(bad_glob), &c, f) == -EINVAL);
                CHECK_EQ_U64(c.tick_ms, 1000);
                CHECK(config_parse_text("mem", "[daemon]\ntick = 2\0s\n", 20, &c, f) == -EINVAL);
                fclose(f);
                CHECK_STREQ(errs, "mem:3: [device \"[x\"]: invalid glob: '[' without a closing ']' (allowed: " DEVICE_ALLOWED_TEXT ")\n"
                                  "mem:2: syntax error: NUL byte in line\n");
                /* no newline at the end */
                CHECK(config_parse_text("mem", "[daemon]\ntick = 2s", 18, &c, NULL) == 0);
                CHECK_EQ_U64(c.tick_ms, 2000);
        }
}

static void test_files(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        config c;
        int r;

        /* explicitly given and missing: error; with MISSING_OK (the default path) fine, drop-ins still read */
        config_init(&c);
        r = load(tpath("missing.conf"), &c, &errs);
        CHECK(r == -ENOENT);
        want = expect("%s: cannot read: No such file or directory\n", tpath("missing.conf"));
        CHECK_STREQ(errs, want);

        CHECK(mkdir(tpath("missing.conf.d"), 0755) == 0);
        write_conf("missing.conf.d/50-x.conf", "[daemon]\ntick = 7s\n");
        free(errs);
        CHECK_EQ_U64(load_flags(tpath("missing.conf"), CONFIG_LOAD_MISSING_OK, &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(c.tick_ms, 7000);

        /* a directory given as the file */
        CHECK(mkdir(tpath("adir"), 0755) == 0);
        free(errs);
        free(want);
        CHECK(load(tpath("adir"), &c, &errs) == -EISDIR);
        want = expect("%s: cannot read: Is a directory\n", tpath("adir"));
        CHECK_STREQ(errs, want);

        /* unreadable (permission): as root, check it in a child that dropped to nobody */
        write_conf("secret.conf", "[daemon]\ntick = 2s\n");
        CHECK(chmod(tpath("secret.conf"), 0) == 0);
        CHECK(chmod(tmpdir, 0755) == 0);
        {
                pid_t pid = fork();
                int status = 0;

                if (pid == 0) {
                        char *e = NULL;
                        config cc;
                        bool ok;

                        free(errs); /* nothing of the parent's left for valgrind's leak check in the child */
                        free(want);
                        errs = want = NULL;
                        if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
                                _exit(2);
                        config_init(&cc);
                        r = load(tpath("secret.conf"), &cc, &e);
                        ok = r == -EACCES && cc.tick_ms == 1000 && strstr(e, "secret.conf: cannot read: Permission denied");
                        if (!ok)
                                fprintf(stderr, "child: r=%d errs=%s", r, e);
                        free(e);
                        _exit(ok ? 0 : 1);
                }
                CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CHECK(chmod(tmpdir, 0700) == 0);
}

static void test_dropins(void) {
        _cleanup_free_ char *errs = NULL;
        const char *main_conf;
        config c;

        main_conf = write_conf("main.conf",
                "[daemon]\ntick = 2s\nlog_level = notice\n"
                "[device \"sdb\"]\nmax_bytes = 64M\nstrict_limit = yes\n"
                "[device \"usb\"]\nmanage = no\n");
        CHECK(mkdir(tpath("main.conf.d"), 0755) == 0);
        write_conf("main.conf.d/20-b.conf", "[daemon]\ntick = 4s\n");
        write_conf("main.conf.d/10-a.conf", "[daemon]\ntick = 3s\nsocket = /run/a\n"
                   "[device \"sdb\"]\nmin_bytes = 8M\n[device \"nvme*\"]\nmax_bytes = 1G\n");
        write_conf("main.conf.d/30-c.conf.disabled", "[daemon]\ntick = 9s\n");
        write_conf("main.conf.d/README", "not a config file at all\n");
        write_conf("main.conf.d/.hidden.conf", "[daemon]\ntick = 9s\n");
        CHECK(mkdir(tpath("main.conf.d/40-dir.conf"), 0755) == 0);
        CHECK(symlink("/dev/null", tpath("main.conf.d/50-masked.conf")) == 0);

        config_init(&c);
        CHECK_EQ_U64(load(main_conf, &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(c.tick_ms, 4000);               /* 20-b.conf after 10-a.conf */
        CHECK_STREQ(c.socket_path, "/run/a");        /* from 10-a.conf, not overridden later */
        CHECK_EQ_U64(c.log_level, LOG_NOTICE);       /* from the main file */
        CHECK_EQ_U64(c.n_devices, 3);
        /* same match in two files: one entry, merged field by field, keeps its place and origin */
        CHECK_STREQ(c.devices[0].match, "sdb");
        CHECK_EQ_U64(c.devices[0].max_bytes, 64 << 20);
        CHECK_EQ_U64(c.devices[0].min_bytes, 8 << 20);
        CHECK(c.devices[0].strict_limit == TRISTATE_YES);
        CHECK_STREQ(c.devices[0].file, main_conf);
        CHECK_EQ_U64(c.devices[0].line, 4);
        CHECK_STREQ(c.devices[1].match, "usb");
        CHECK_STREQ(c.devices[2].match, "nvme*");
        CHECK_STREQ(c.devices[2].file, tpath("main.conf.d/10-a.conf"));
        CHECK_EQ_U64(c.devices[2].line, 6);

        /* errors in several files are all reported, each with its file */
        {
                _cleanup_free_ char *want = NULL;

                write_conf("main.conf.d/15-bad.conf", "[daemon]\ntick = 1ms\n");
                write_conf("main.conf.d/25-bad.conf", "\n[policy]\nmode = fast\n");
                free(errs);
                config_init(&c);
                CHECK(load(main_conf, &c, &errs) == -EINVAL);
                want = expect("%1$s/main.conf.d/15-bad.conf:2: tick: 1ms is out of range (allowed: 100ms..1min)\n"
                              "%1$s/main.conf.d/25-bad.conf:3: mode: invalid value \"fast\" (allowed: observe, auto)\n",
                              tmpdir);
                CHECK_STREQ(errs, want);
                CHECK(unlink(tpath("main.conf.d/15-bad.conf")) == 0);
                CHECK(unlink(tpath("main.conf.d/25-bad.conf")) == 0);
        }

        /* a dangling symlink named *.conf is an error, not silently skipped */
        {
                _cleanup_free_ char *want = NULL;

                CHECK(symlink("nowhere", tpath("main.conf.d/60-gone.conf")) == 0);
                free(errs);
                CHECK(load(main_conf, &c, &errs) == -ENOENT);
                want = expect("%s: cannot read: No such file or directory\n", tpath("main.conf.d/60-gone.conf"));
                CHECK_STREQ(errs, want);
                CHECK(unlink(tpath("main.conf.d/60-gone.conf")) == 0);
        }
}

static void test_pairs(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        const char *p;
        config c;

        check_one("[policy]\ndirty_bytes = 64M\ndirty_background_bytes = 32M\n", NULL, 0);
        check_one("[policy]\ndirty_background_bytes = 32M\n", NULL, 0);   /* one pin alone is fine */
        check_one("[policy]\ndirty_bytes = 64M\ndirty_background_bytes = 64M\n",
                  "dirty_background_bytes: dirty_background_bytes = 64M, dirty_bytes = 64M (set at ONE:2) (allowed: dirty_background_bytes < dirty_bytes)", 3);
        check_one("[device \"x\"]\nmin_bytes = 8M\nmax_bytes = 8M\n", NULL, 0);
        check_one("[device \"x\"]\nmax_bytes = 1M\nmin_bytes = 8M\n",
                  "min_bytes: min_bytes = 8M, max_bytes = 1M (set at ONE:2) (allowed: min_bytes <= max_bytes)", 3);

        /* the rule holds on the merged result: a drop-in is blamed, or can repair */
        p = write_conf("pair.conf", "[policy]\ndirty_bytes = 32M\ndirty_background_bytes = 64M\n"
                       "[device \"x\"]\nmin_bytes = 64M\nmax_bytes = 128M\n");
        CHECK(mkdir(tpath("pair.conf.d"), 0755) == 0);
        write_conf("pair.conf.d/10.conf", "[policy]\ndirty_bytes = 128M\n[device \"x\"]\nmax_bytes = 32M\n");
        config_init(&c);
        CHECK(load(p, &c, &errs) == -EINVAL);
        want = expect("%1$s.d/10.conf:4: max_bytes: min_bytes = 64M, max_bytes = 32M (set at %1$s:5) (allowed: min_bytes <= max_bytes)\n", p);
        CHECK_STREQ(errs, want);
        write_conf("pair.conf.d/10.conf", "[policy]\ndirty_bytes = 128M\n[device \"x\"]\nmax_bytes = none\n");
        free(errs);
        CHECK_EQ_U64(load(p, &c, &errs), 0);
        CHECK_EQ_U64(c.dirty_bytes, 128 << 20);
        CHECK_EQ_U64(c.devices[0].max_bytes, 0);
}

static void test_untouched_on_error(void) {
        _cleanup_free_ char *errs = NULL;
        config c, before;

        config_init(&c);
        c.tick_ms = 4242;
        strcpy(c.socket_path, "/run/keep");
        c.n_devices = 1;
        strcpy(c.devices[0].match, "keep");
        before = c;
        CHECK(load(write_conf("half.conf", "[daemon]\ntick = 2s\nsocket = /run/new\n[policy]\nmode = x\n"),
                   &c, &errs) == -EINVAL);
        CHECK(memcmp(&c, &before, sizeof(c)) == 0);
        CHECK_EQ_U64(c.tick_ms, 4242);
        CHECK_STREQ(c.socket_path, "/run/keep");

        /* and a successful load starts from defaults, not from the old contents */
        free(errs);
        CHECK_EQ_U64(load(write_conf("ok.conf", "[policy]\nmode = auto\n"), &c, &errs), 0);
        CHECK_EQ_U64(c.tick_ms, 1000);
        CHECK_EQ_U64(c.n_devices, 0);
}

static void test_too_many_devices(void) {
        _cleanup_free_ char *errs = NULL, *want = NULL;
        char *body = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&body, &size);
        config c;

        for (int i = 0; i <= CONFIG_DEVICE_MAX; i++)
                fprintf(f, "[device \"d%d\"]\n", i);
        fclose(f);
        config_init(&c);
        CHECK(load(write_conf("many.conf", body), &c, &errs) == -EINVAL);
        want = expect("%s:%d: [device \"d%d\"]: too many device sections (allowed: up to %d)\n",
                      tpath("many.conf"), CONFIG_DEVICE_MAX + 1, CONFIG_DEVICE_MAX, CONFIG_DEVICE_MAX);
        CHECK_STREQ(errs, want);
        free(body);
}

static void test_dump_roundtrip(void) {
        _cleanup_free_ char *errs = NULL, *dump = NULL;
        size_t size = 0;
        config a, b;
        FILE *f;

        /* defaults */
        config_init(&a);
        f = open_memstream(&dump, &size);
        config_dump(&a, f);
        fclose(f);
        CHECK(strstr(dump, "[daemon]\ntick = 1s\nsocket = /run/wbtuned/control\nlog_level = info\n"
                           "history_minutes = 15\nattribution = yes\ntask_delayacct = no\n"
                           "metrics_textfile = none\nmetrics_interval = 15s\n") != NULL);
        CHECK(strstr(dump, "dirty_bytes = none\n") != NULL);
        CHECK(strstr(dump, "min_dirty_bytes = 64M\n") != NULL);
        CHECK(strstr(dump, "max_age = 30s\n") != NULL);
        config_init(&b);
        b.tick_ms = 1;
        CHECK_EQ_U64(load(write_conf("dump0.conf", dump), &b, &errs), 0);
        CHECK(config_equal(&a, &b));

        /* odd values: sizes not a multiple of a unit, durations in ms, devices */
        free(errs);
        config_init(&a);
        CHECK_EQ_U64(load(write_conf("rt.conf",
                "[daemon]\ntick = 1234ms\nsocket = /tmp/s\nlog_level = err\nhistory_minutes = 1440\n"
                "attribution = no\ntask_delayacct = yes\nmetrics_textfile = /run/m/w.prom\nmetrics_interval = 90s\n"
                "[policy]\nmode = auto\nbacklog_seconds = 1min\ndirty_bytes = 1000000\n"
                "dirty_background_bytes = 9K\nmin_dirty_bytes = 1G\nmax_dirty_bytes = 2T\n"
                "min_device_bytes = 300K\nmax_age = 3600s\nunmeasured_device_bytes = none\n"
                "[device \"sd[ab]\"]\nmanage = no\nstrict_limit = no\n"
                "[device \"8:16\"]\nbacklog_seconds = 250ms\nmin_bytes = 1M\nmax_bytes = 1048577\n"),
                &a, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK_EQ_U64(a.dirty_background_bytes, 9216);
        CHECK_STREQ(a.devices[0].match, "sd[ab]");
        free(dump);
        dump = NULL;
        f = open_memstream(&dump, &size);
        config_dump(&a, f);
        fclose(f);
        CHECK(strstr(dump, "tick = 1234ms\n") != NULL);
        CHECK(strstr(dump, "metrics_textfile = /run/m/w.prom\nmetrics_interval = 90s\n") != NULL);
        CHECK(strstr(dump, "dirty_bytes = 1000000\n") != NULL);
        CHECK(strstr(dump, "max_age = 1h\n") != NULL);
        CHECK(strstr(dump, "backlog_seconds = 1min\n") != NULL);
        CHECK(strstr(dump, "[device \"sd[ab]\"]\nmanage = no\nbacklog_seconds = none\n") != NULL);
        free(errs);
        config_init(&b);
        CHECK_EQ_U64(load(write_conf("dump1.conf", dump), &b, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK(config_equal(&a, &b));
}

static void test_matching(void) {
        _cleanup_free_ char *errs = NULL;
        const device_config *dc;
        config c;

        config_init(&c);
        CHECK_EQ_U64(load(write_conf("match.conf",
                "[device \"sd*\"]\nmax_bytes = 1G\n"
                "[device \"usb\"]\nmax_bytes = 64M\n"
                "[device \"8:16\"]\nmanage = no\n"
                "[device \"7:*\"]\nmax_bytes = 8M\n"
                "[device \"nfs\"]\nstrict_limit = yes\n"
                "[device \"fuse\"]\n[device \"rotational\"]\n[device \"removable\"]\n"), &c, &errs), 0);
        CHECK_EQ_U64(c.n_devices, 8);

        /* each kind on its own */
        CHECK(device_config_matches(&c.devices[0], "sda", NULL, 8, 0, 0));
        CHECK(!device_config_matches(&c.devices[0], "nvme0n1", NULL, 259, 0, 0));
        CHECK(!device_config_matches(&c.devices[0], NULL, NULL, 8, 0, 0));
        CHECK(device_config_matches(&c.devices[1], "sdc", NULL, 8, 32, BDI_TRAIT_USB | BDI_TRAIT_REMOVABLE));
        CHECK(!device_config_matches(&c.devices[1], "sdc", NULL, 8, 32, BDI_TRAIT_REMOVABLE));
        CHECK(device_config_matches(&c.devices[2], "whatever", NULL, 8, 16, 0));
        CHECK(device_config_matches(&c.devices[2], NULL, NULL, 8, 16, 0));
        CHECK(!device_config_matches(&c.devices[2], "sdb", NULL, 8, 17, 0));
        CHECK(!device_config_matches(&c.devices[2], "8:16", NULL, 8, 1, 0));   /* MAJ:MIN is not a glob on the name */
        CHECK(device_config_matches(&c.devices[3], "loop3", NULL, 7, 3, 0));   /* glob on "MAJ:MIN" */
        CHECK(!device_config_matches(&c.devices[3], "loop3", NULL, 17, 3, 0));
        CHECK(device_config_matches(&c.devices[4], NULL, NULL, 0, 53, BDI_TRAIT_NFS));
        CHECK(device_config_matches(&c.devices[5], NULL, NULL, 0, 60, BDI_TRAIT_FUSE));
        CHECK(!device_config_matches(&c.devices[5], "fuse", NULL, 0, 60, 0));   /* a trait word is not a name */
        CHECK(device_config_matches(&c.devices[6], "sda", NULL, 8, 0, BDI_TRAIT_ROTATIONAL));
        CHECK(device_config_matches(&c.devices[7], "sdc", NULL, 8, 32, BDI_TRAIT_REMOVABLE));

        /* last matching section wins */
        dc = config_find_device(&c, "sda", NULL, 8, 0, 0);
        CHECK(dc == &c.devices[0]);
        dc = config_find_device(&c, "sdc", NULL, 8, 32, BDI_TRAIT_USB);
        CHECK(dc == &c.devices[1]);
        CHECK_EQ_U64(dc->max_bytes, 64 << 20);
        dc = config_find_device(&c, "sdb", NULL, 8, 16, 0);
        CHECK(dc == &c.devices[2]);
        CHECK(!dc->manage);
        dc = config_find_device(&c, "sdb", NULL, 8, 16, BDI_TRAIT_ROTATIONAL);
        CHECK(dc == &c.devices[6]);
        dc = config_find_device(&c, "sdc", NULL, 8, 32, BDI_TRAIT_USB | BDI_TRAIT_REMOVABLE | BDI_TRAIT_ROTATIONAL);
        CHECK(dc == &c.devices[7]);
        dc = config_find_device(&c, "0:53", NULL, 0, 53, BDI_TRAIT_NFS);
        CHECK(dc == &c.devices[4]);
        CHECK(config_find_device(&c, "nvme0n1", NULL, 259, 0, 0) == NULL);
        /* a glob also tries the device-mapper name */
        CHECK(device_config_matches(&c.devices[0], "dm-3", "sdx-crypt", 254, 3, 0));
        CHECK(!device_config_matches(&c.devices[0], "dm-3", "vg0-root", 254, 3, 0));
        CHECK(!device_config_matches(&c.devices[0], "dm-3", "", 254, 3, 0));
        CHECK(!device_config_matches(&c.devices[2], "dm-3", "8:16", 254, 3, 0));   /* MAJ:MIN is not a glob on it */
}

/* The shipped file: valid as-is, its commented defaults are the real defaults, every key documented. */
static void test_shipped(void) {
        static const char *keys[] = {
                "tick", "socket", "log_level", "history_minutes", "attribution", "task_delayacct", "mode", "backlog_seconds", "dirty_bytes",
                "dirty_background_bytes", "min_dirty_bytes", "max_dirty_bytes", "min_device_bytes",
                "unmeasured_device_bytes", "max_age", "manage", "min_bytes", "max_bytes", "strict_limit",
        };
        _cleanup_free_ char *errs = NULL, *text = NULL, *man = NULL, *path = NULL, *manpath = NULL;
        _cleanup_free_ char *uncommented = NULL;
        const char *top = getenv("top_srcdir");
        size_t size = 0, n = 0;
        config def, c;
        FILE *f;

        if (asprintf(&path, "%s/conf/wbtuned.conf", top ? top : ".") < 0 ||
            asprintf(&manpath, "%s/doc/wbtuned.conf.5.scd", top ? top : ".") < 0)
                abort();
        if (read_file_full(path, &text, &size) < 0) {
                printf("# skip shipped config checks: no %s (set top_srcdir)\n", path);
                return;
        }
        config_init(&def);
        config_init(&c);
        c.tick_ms = 1;
        CHECK_EQ_U64(load(path, &c, &errs), 0);
        CHECK(config_equal(&c, &def));

        /* "#key = value" lines (no blank after '#') are the defaults: uncommented they must change nothing */
        f = open_memstream(&uncommented, &n);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z') {
                        fprintf(f, "%s\n", line + 1);
                        continue;
                }
                fprintf(f, "%s\n", line);
        }
        fclose(f);
        CHECK(strstr(uncommented, "\ntick = 1s\n") != NULL);
        CHECK(strstr(uncommented, "\nmax_age = 30s\n") != NULL);
        free(errs);
        config_init(&c);
        CHECK_EQ_U64(load(write_conf("shipped-uncommented.conf", uncommented), &c, &errs), 0);
        CHECK_STREQ(errs, "");
        CHECK(config_equal(&c, &def));

        free(text);
        text = NULL;
        CHECK_EQ_U64(read_file_full(path, &text, &size), 0);
        CHECK_EQ_U64(read_file_full(manpath, &man, &size), 0);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                char pat[64];

                snprintf(pat, sizeof(pat), "%s = ", keys[i]);
                if (!strstr(text, pat))
                        printf("# %s not documented in %s\n", keys[i], path);
                CHECK(strstr(text, pat) != NULL);
                snprintf(pat, sizeof(pat), "*%s* =", keys[i]);
                if (!man || !strstr(man, pat))
                        printf("# %s not documented in %s\n", keys[i], manpath);
                CHECK(man && strstr(man, pat) != NULL);
        }
}

static int rm_rf(const char *path) {
        char *cmd;
        int r;

        if (asprintf(&cmd, "rm -rf '%s'", path) < 0)
                return -ENOMEM;
        r = system(cmd);
        free(cmd);
        return r;
}

int main(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }

        test_defaults();
        test_every_key();
        test_choices();
        test_ranges();
        test_sizes();
        test_errors_all_reported();
        test_syntax_details();
        test_device_matches();
        test_files();
        test_hostile_files();
        test_dropins();
        test_pairs();
        test_untouched_on_error();
        test_too_many_devices();
        test_dump_roundtrip();
        test_matching();
        test_shipped();

        rm_rf(tmpdir);
        TEST_EXIT();
}
