/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for util.c: number parsing, sizes, durations, file helpers. */
#include "util.h"
#include "log.h"
#include "tap.h"

#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void test_parse_u64(void) {
        uint64_t v = 0;

        CHECK(parse_u64("0", &v) == 0 && v == 0);
        CHECK(parse_u64(" 42\n", &v) == 0 && v == 42);
        CHECK(parse_u64("18446744073709551615", &v) == 0 && v == UINT64_MAX);
        CHECK(parse_u64("18446744073709551616", &v) == -ERANGE);
        CHECK(parse_u64("-1", &v) == -EINVAL);
        CHECK(parse_u64("12abc", &v) == -EINVAL);
        CHECK(parse_u64("", &v) == -EINVAL);
        CHECK(parse_u64(NULL, &v) == -EINVAL);
}

static void test_parse_size(void) {
        uint64_t v = 0;

        CHECK(parse_size("16M", &v) == 0);
        CHECK_EQ_U64(v, 16ULL << 20);
        CHECK(parse_size("1 G", &v) == 0);
        CHECK_EQ_U64(v, 1ULL << 30);
        CHECK(parse_size("512k", &v) == 0);
        CHECK_EQ_U64(v, 512ULL << 10);
        CHECK(parse_size("4096", &v) == 0);
        CHECK_EQ_U64(v, 4096);
        CHECK(parse_size("2MiB", &v) == 0);
        CHECK_EQ_U64(v, 2ULL << 20);
        CHECK(parse_size("16X", &v) == -EINVAL);
        CHECK(parse_size("M", &v) == -EINVAL);
        CHECK(parse_size("99999999999T", &v) == -ERANGE);
        CHECK(parse_size("99999999999999999999", &v) == -ERANGE);
}

static void test_parse_duration(void) {
        uint64_t v = 0;

        CHECK(parse_duration_ms("2", &v) == 0);
        CHECK_EQ_U64(v, 2000);
        CHECK(parse_duration_ms("500ms", &v) == 0);
        CHECK_EQ_U64(v, 500);
        CHECK(parse_duration_ms("1min", &v) == 0);
        CHECK_EQ_U64(v, 60000);
        CHECK(parse_duration_ms("3s", &v) == 0);
        CHECK_EQ_U64(v, 3000);
        CHECK(parse_duration_ms("1h", &v) == 0);
        CHECK_EQ_U64(v, 3600000);
        CHECK(parse_duration_ms("1.5s", &v) == -EINVAL);
        CHECK(parse_duration_ms("5 fortnights", &v) == -EINVAL);
}

static void test_format_bytes(void) {
        char buf[16];

        CHECK_STREQ(format_bytes(buf, sizeof buf, 0), "0");
        CHECK_STREQ(format_bytes(buf, sizeof buf, 1023), "1023");
        CHECK_STREQ(format_bytes(buf, sizeof buf, 1024), "1.0K");
        CHECK_STREQ(format_bytes(buf, sizeof buf, 16ULL << 20), "16M");
        CHECK_STREQ(format_bytes(buf, sizeof buf, 3ULL << 29), "1.5G");
        CHECK_STREQ(format_bytes(buf, sizeof buf, UINT64_MAX), "16E");
}

static void test_files(void) {
        char dir[] = "/tmp/test-util.XXXXXX", path[64], line[32];
        _cleanup_free_ char *joined = NULL, *content = NULL;
        uint64_t v = 0;
        size_t size = 0;
        FILE *f;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/knob", dir);

        /* write_string_file never creates: sysctl and sysfs files always exist */
        CHECK(write_string_file(path, "1") == -ENOENT);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs("123\nsecond line\n", f);
                fclose(f);
        }
        CHECK(read_one_line(path, line, sizeof line) == 0);
        CHECK_STREQ(line, "123");
        CHECK(read_u64_file(path, &v) == 0); /* only the first line counts */
        CHECK_EQ_U64(v, 123);
        CHECK(read_file_full(path, &content, &size) == 0);
        CHECK_EQ_U64(size, 16);
        CHECK(write_string_file(path, "456") == 0);
        CHECK(read_u64_file(path, &v) == 0);
        CHECK_EQ_U64(v, 456);
        CHECK(write_string_file(path, "abc") == 0);
        CHECK(read_u64_file(path, &v) == -EINVAL);
        unlink(path);
        CHECK(read_one_line(path, line, sizeof line) == -ENOENT);
        CHECK(read_file_full(path, &joined, &size) == -ENOENT);
        rmdir(dir);

        joined = path_join_root("/fake", "/proc/vmstat");
        CHECK_STREQ(joined, "/fake/proc/vmstat");
        free(joined);
        joined = path_join_root(NULL, "/proc/vmstat");
        CHECK_STREQ(joined, "/proc/vmstat");
}

static int int_cmp(const void *key, const void *elem) {
        int a = *(const int *) key, b = *(const int *) elem;
        return (a > b) - (a < b);
}

static void test_search_sorted(void) {
        static const int v[] = { 2, 4, 6, 8 };
        bool found = true;
        int key;

        key = 6;
        CHECK_EQ_U64(search_sorted(v, ELEMENTSOF(v), sizeof v[0], &key, int_cmp, &found), 2);
        CHECK(found);
        key = 5;
        CHECK_EQ_U64(search_sorted(v, ELEMENTSOF(v), sizeof v[0], &key, int_cmp, &found), 2);
        CHECK(!found);
        key = 9;
        CHECK_EQ_U64(search_sorted(v, ELEMENTSOF(v), sizeof v[0], &key, int_cmp, &found), 4);
        CHECK(!found);
        key = 1;
        found = true;
        CHECK_EQ_U64(search_sorted(NULL, 0, sizeof v[0], &key, int_cmp, &found), 0);
        CHECK(!found);
}

static void test_log_errno(void) {
        log_set_max_level(LOG_DEBUG - 1);
        CHECK(log_error_errno(-ENOENT, "expected test message: %m") == -ENOENT);
        CHECK(log_debug_errno(EINVAL, "not shown") == -EINVAL);
        CHECK(log_level_from_string("warning") == LOG_WARNING);
        CHECK(log_level_from_string("loud") == -EINVAL);
        CHECK_STREQ(log_level_to_string(LOG_INFO), "info");
}

static void test_startswith(void) {
        static const struct { const char *s, *prefix, *rest; } rows[] = {
                { "nr_dirty 5", "nr_dirty", " 5" },
                { "nr_dirty", "nr_dirty", "" },
                { "nr_dirt", "nr_dirty", NULL },
                { "anything", "", "anything" },
                { "", "x", NULL },
                { "Nr_dirty", "nr_dirty", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *rest = startswith(rows[i].s, rows[i].prefix);

                if (rows[i].rest)
                        CHECK_STREQ(rest, rows[i].rest);
                else
                        CHECK(rest == NULL);
        }
}

typedef struct kv_seen {
        char text[256];
        const char *stop_at;    /* a key whose callback fails with -EBADMSG */
} kv_seen;

static int kv_seen_cb(const char *key, const char *value, void *userdata) {
        kv_seen *s = userdata;
        size_t len = strlen(s->text);

        snprintf(s->text + len, sizeof s->text - len, "[%s=%s]", key, value);
        return s->stop_at && strcmp(key, s->stop_at) == 0 ? -EBADMSG : 0;
}

static void test_parse_kv(void) {
        static const struct { const char *what, *text, *stop_at, *seen; int r; } rows[] = {
                { "/proc/vmstat", "nr_dirty 12\nnr_writeback 3\n", NULL, "[nr_dirty=12][nr_writeback=3]", 0 },
                { "meminfo: the unit after the value is dropped", "Dirty:     1234 kB\nWriteback:  0 kB", NULL,
                  "[Dirty=1234][Writeback=0]", 0 },
                { "/proc/PID/io: whole keys", "cancelled_write_bytes: 7\nwrite_bytes: 9\n", NULL,
                  "[cancelled_write_bytes=7][write_bytes=9]", 0 },
                { "tabs, blank lines, a key alone", "a\t1\n\n\nlonely\nb:\t 2\n", NULL, "[a=1][b=2]", 0 },
                { "a key with nothing after it", "a: \nb 2", NULL, "[a=][b=2]", 0 },
                { "a line that starts with a separator", " x 1\n:y 2\nc 3", NULL, "[c=3]", 0 },
                { "the callback stops the walk", "a 1\nb 2\nc 3\n", "b", "[a=1][b=2]", -EBADMSG },
                { "empty", "", NULL, "", 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *buf = strdup(rows[i].text);
                kv_seen s = { .stop_at = rows[i].stop_at };

                printf("# parse_kv: %s\n", rows[i].what);
                CHECK(buf);
                CHECK(parse_kv(buf, kv_seen_cb, &s) == rows[i].r);
                CHECK_STREQ(s.text, rows[i].seen);
        }
}

static void test_memstream(void) {
        _cleanup_memstream_ memstream ms = {};
        _cleanup_free_ char *text = NULL, *empty = NULL;
        size_t size = 99;

        CHECK(memstream_open(&ms) != NULL);
        fprintf(ms.f, "line %d\n", 1);
        CHECK(fflush(ms.f) == 0);
        CHECK_STREQ(ms.buf, "line 1\n");      /* what was written so far, while open */
        fputs("line 2\n", ms.f);
        CHECK(memstream_finish(&ms, &text, &size) == 0);
        CHECK_STREQ(text, "line 1\nline 2\n");
        CHECK_EQ_U64(size, 14);
        CHECK(ms.f == NULL && ms.buf == NULL);

        printf("# nothing written: \"\", not NULL\n");
        CHECK(memstream_open(&ms) != NULL);
        CHECK(memstream_finish(&ms, &empty, NULL) == 0);
        CHECK_STREQ(empty, "");

        printf("# given up on: closed and freed (ASan would tell)\n");
        CHECK(memstream_open(&ms) != NULL);
        fputs("dropped", ms.f);
        memstream_done(&ms);
        CHECK(ms.f == NULL && ms.buf == NULL);
}

/* oom() in a child: one line on stderr, then SIGABRT (what Restart=on-failure restarts). */
static void test_oom(void) {
        char buf[128] = "";
        int fds[2], status = 0;
        ssize_t n;
        pid_t pid;

        CHECK(pipe(fds) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                struct rlimit no_core = { 0, 0 };

                (void) setrlimit(RLIMIT_CORE, &no_core);
                (void) dup2(fds[1], STDERR_FILENO);
                oom();
        }
        close(fds[1]);
        /* oom() writes the name and the message in two write()s: read until the child is gone */
        for (size_t got = 0; got < sizeof buf - 1; got += (size_t) n) {
                n = read(fds[0], buf + got, sizeof buf - 1 - got);
                if (n <= 0)
                        break;
        }
        close(fds[0]);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        CHECK(strstr(buf, ": out of memory, aborting\n") != NULL);
}

int main(void) {
        test_oom();
        test_memstream();
        test_startswith();
        test_parse_kv();
        test_parse_u64();
        test_parse_size();
        test_parse_duration();
        test_format_bytes();
        test_files();
        test_search_sorted();
        test_log_errno();
        TEST_EXIT();
}
