/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the trace_pipe parser and per-tick aggregation, on text captured from the 6.18 kernel. */
#include <string.h>
#include <sys/stat.h>

#include "tap.h"
#include "trace.h"
#include "util.h"

static const char *srcdir;

static char *load(const char *name) {
        _cleanup_free_ char *p = NULL;
        char *text = NULL;

        if (asprintf(&p, "%s/tests/data/%s", srcdir, name) < 0 || read_file_full(p, &text, NULL) < 0) {
                printf("# cannot read %s\n", p ? p : name);
                return NULL;
        }
        return text;
}

static const trace_task *find_task(const trace_tick_result *r, int pid, const char *bdi) {
        for (size_t i = 0; i < r->n_tasks; i++)
                if (r->tasks[i].pid == pid && strcmp(r->tasks[i].bdi, bdi) == 0)
                        return &r->tasks[i];
        return NULL;
}

static const trace_device *find_device(const trace_tick_result *r, const char *bdi) {
        for (size_t i = 0; i < r->n_devices; i++)
                if (strcmp(r->devices[i].bdi, bdi) == 0)
                        return &r->devices[i];
        return NULL;
}

static void test_parse_lines(void) {
        trace_event ev;

        /* a real line, from trace-dd.txt */
        CHECK(trace_parse_line("              dd-22747   [001] .....   657.921979: balance_dirty_pages: bdi 7:2: limit=102400 setpoint=89600 dirty=76980 wb_setpoint=2779 wb_dirty=70398 dirty_ratelimit=102400 task_ratelimit=50000 dirtied=256 dirtied_pause=128 paused=0 pause=16 period=20 think=4 cgroup_ino=1\n", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_BALANCE_DIRTY_PAGES);
        CHECK_STREQ(ev.comm, "dd");
        CHECK_EQ_U64(ev.pid, 22747);
        CHECK_EQ_U64(ev.cpu, 1);
        CHECK_EQ_U64(ev.time_usec, 657921979);
        CHECK_STREQ(ev.bdi, "7:2");
        CHECK_EQ_U64(ev.limit_pages, 102400);
        CHECK_EQ_U64(ev.setpoint_pages, 89600);
        CHECK_EQ_U64(ev.dirty_pages, 76980);
        CHECK_EQ_U64(ev.wb_setpoint_pages, 2779);
        CHECK_EQ_U64(ev.wb_dirty_pages, 70398);
        CHECK_EQ_U64(ev.dirty_ratelimit_kbps, 102400);
        CHECK_EQ_U64(ev.task_ratelimit_kbps, 50000);
        CHECK_EQ_U64(ev.dirtied_pages, 256);
        CHECK_EQ_U64(ev.dirtied_pause_pages, 128);
        CHECK_EQ_U64(ev.paused_ms, 0);
        CHECK(ev.pause_ms == 16);
        CHECK_EQ_U64(ev.period_ms, 20);
        CHECK(ev.think_ms == 4);
        CHECK_EQ_U64(ev.cgroup_ino, 1);

        /* comm with spaces and a dash, negative think */
        CHECK(trace_parse_line("    my wr-iter 1-5408    [000] .....   837.601095: balance_dirty_pages: bdi 7:2: limit=4096 setpoint=3584 dirty=3624 wb_setpoint=689 wb_dirty=2048 dirty_ratelimit=8824 task_ratelimit=2196 dirtied=256 dirtied_pause=32 paused=0 pause=200 period=464 think=-188 cgroup_ino=1", &ev) == 0);
        CHECK_STREQ(ev.comm, "my wr-iter 1");
        CHECK_EQ_U64(ev.pid, 5408);
        CHECK(ev.think_ms == -188);
        CHECK(ev.pause_ms == 200);

        /* the other event */
        CHECK(trace_parse_line("             cat-22720   [000] ...1.   657.963735: bdi_dirty_ratelimit: bdi 254:0: write_bw=1196 awrite_bw=648 dirty_rate=168 dirty_ratelimit=78972 task_ratelimit=1206176 balanced_dirty_ratelimit=648 cgroup_ino=1", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_BDI_DIRTY_RATELIMIT);
        CHECK_STREQ(ev.bdi, "254:0");
        CHECK_EQ_U64(ev.write_bw_kbps, 1196);
        CHECK_EQ_U64(ev.avg_write_bw_kbps, 648);
        CHECK_EQ_U64(ev.dirty_rate_kbps, 168);
        CHECK_EQ_U64(ev.balanced_dirty_ratelimit_kbps, 648);

        /* loss markers, both forms of print_trace_line() */
        CHECK(trace_parse_line("CPU:1 [LOST 116 EVENTS]\n", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_LOST);
        CHECK_EQ_U64(ev.lost, 116);
        CHECK(trace_parse_line("CPU:3 [LOST EVENTS]", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_LOST && ev.lost_unknown && ev.lost == 0);
        CHECK(trace_parse_line("CPU:3 [LOST x EVENTS]", &ev) == -EBADMSG);

        /* truncated: the tail with pause= is gone */
        CHECK(trace_parse_line("              dd-22747   [001] .....   657.921979: balance_dirty_pages: bdi 7:2: limit=102400 setpoint=89600 dirty=76980 wb_setpoint=2779 wb_dirty=70398 dirty_ratelimit=102400 task_ratelimit=50000 dirtied=256 dirtied_pa", &ev) == -EBADMSG);
        CHECK(trace_parse_line("              dd-22747   [001] .....   657.921979: balance_dirty_pages: bdi 7:2", &ev) == -EBADMSG);
        CHECK(trace_parse_line("              dd-22747   [001] .....   657.921979: balance_dirty_pages: ", &ev) == -EBADMSG);
        CHECK(trace_parse_line("   657.921979: balance_dirty_pages: bdi 7:2: limit=1 setpoint=1 dirty=1 task_ratelimit=1 pause=1", &ev) == -EBADMSG);
        CHECK(trace_parse_line("dd-1 [001] 1.0: balance_dirty_pages: bdi 7:2: limit=1 setpoint=1 dirty=1 task_ratelimit=x pause=1", &ev) == -EBADMSG);
        CHECK(trace_parse_line("dd-1 [001] 1.0: balance_dirty_pages: bdi 7:2: limit=1 setpoint=1 dirty=1 task_ratelimit=-1 pause=1", &ev) == -EBADMSG);

        /* unknown fields ignored, fields in any order; no irq-info flags; record-tgid column */
        CHECK(trace_parse_line("dd-9 [002] 12.5: balance_dirty_pages: bdi sdb: pause=-4 new_field=7 dirty=3 limit=4 setpoint=2 task_ratelimit=8", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_BALANCE_DIRTY_PAGES);
        CHECK_STREQ(ev.bdi, "sdb");
        CHECK(ev.pause_ms == -4);
        CHECK_EQ_U64(ev.time_usec, 12500000);
        CHECK_EQ_U64(ev.cpu, 2);
        CHECK(trace_parse_line("     kworker/u8:2-123     (    120) [000] d..1.   5.000001: balance_dirty_pages: bdi btrfs-1: limit=1 setpoint=1 dirty=1 task_ratelimit=1 pause=1", &ev) == 0);
        CHECK_STREQ(ev.comm, "kworker/u8:2");
        CHECK_EQ_U64(ev.pid, 123);
        CHECK_STREQ(ev.bdi, "btrfs-1");
        CHECK(trace_parse_line("     <...>-123     (-------) [000] d..1.   5.000001: balance_dirty_pages: bdi 8:0: limit=1 setpoint=1 dirty=1 task_ratelimit=1 pause=1", &ev) == 0);
        CHECK_STREQ(ev.comm, "<...>");

        /* not ours */
        CHECK(trace_parse_line("              dd-22747   [001] .....   657.921979: writeback_dirty_page: bdi 7:2: ino=12", &ev) == 0);
        CHECK(ev.type == TRACE_EVENT_NONE);
        CHECK(trace_parse_line("", &ev) == 0 && ev.type == TRACE_EVENT_NONE);
        CHECK(trace_parse_line("hello", &ev) == 0 && ev.type == TRACE_EVENT_NONE);
}

static void test_file_dd(void) {
        _cleanup_free_ char *text = load("trace-dd.txt");
        trace_ctx *ctx = NULL;
        trace_tick_result r;
        const trace_task *t;
        const trace_device *d;

        if (!text)
                return;
        CHECK(trace_new_detached(4096, &ctx) == 0);
        trace_feed(ctx, text, strlen(text));
        CHECK(trace_tick(ctx, 2000000, &r) == 0);
        CHECK_EQ_U64(r.tick.events, 60);
        CHECK_EQ_U64(r.tick.bad_lines, 0);
        CHECK_EQ_U64(r.tick.lost_kernel, 0);
        /* the events with pause > 0 (44) and their pauses summed, whichever task or device */
        CHECK_EQ_U64(r.tick.pauses, 44);
        CHECK_EQ_U64(r.tick.pause_ms, 1104);
        CHECK_EQ_U64(r.n_devices, 3);

        t = find_task(&r, 22747, "7:2");
        CHECK(t != NULL);
        if (t) {
                CHECK_STREQ(t->comm, "dd");
                CHECK_EQ_U64(t->pause_ms, 540);
                CHECK_EQ_U64(t->pauses, 25);
                CHECK(t->pause_ms_per_s > 269.9 && t->pause_ms_per_s < 270.1);
                /* last event: task_ratelimit=33000 dirty=81089 limit=102400 setpoint=89600 */
                CHECK_EQ_U64(t->task_ratelimit_bytes_per_s, 33000ULL * 1024);
                CHECK_EQ_U64(t->dirty_bytes, 81089ULL * 4096);
                CHECK_EQ_U64(t->limit_bytes, 102400ULL * 4096);
                CHECK_EQ_U64(t->setpoint_bytes, 89600ULL * 4096);
        }
        /* sorted by pause time, largest first */
        for (size_t i = 1; i < r.n_tasks; i++)
                CHECK(r.tasks[i - 1].pause_ms >= r.tasks[i].pause_ms);
        d = find_device(&r, "7:2");
        CHECK(d && d->have_ratelimit);
        if (d)
                CHECK_EQ_U64(d->pause_ms, 540);
        CHECK(strcmp(r.devices[0].bdi, r.devices[1].bdi) < 0);

        /* a second tick starts empty */
        CHECK(trace_tick(ctx, 1000000, &r) == 0);
        CHECK_EQ_U64(r.n_tasks, 0);
        CHECK_EQ_U64(r.n_devices, 0);
        CHECK_EQ_U64(r.total.events, 60);
        CHECK_EQ_U64(r.tick.pauses, 0);
        CHECK_EQ_U64(r.total.pauses, 44);
        CHECK_EQ_U64(r.total.pause_ms, 1104);

        /* the same text fed a few bytes at a time gives the same aggregate */
        for (size_t i = 0, n = strlen(text), step = 1; i < n; i += step, step = step % 97 + 13)
                trace_feed(ctx, text + i, MIN(step, n - i));
        CHECK(trace_tick(ctx, 2000000, &r) == 0);
        CHECK_EQ_U64(r.tick.events, 60);
        t = find_task(&r, 22747, "7:2");
        CHECK(t && t->pause_ms == 540 && t->pauses == 25);

        trace_free(ctx);
}

static void test_file_lost_and_spaces(void) {
        _cleanup_free_ char *lost = load("trace-lost.txt"), *spaces = load("trace-comm-spaces.txt");
        trace_ctx *ctx = NULL;
        trace_tick_result r;
        const trace_task *t;

        if (!lost || !spaces)
                return;
        CHECK(trace_new_detached(4096, &ctx) == 0);
        trace_feed(ctx, lost, strlen(lost));
        CHECK(trace_tick(ctx, 1000000, &r) == 0);
        CHECK_EQ_U64(r.tick.lost_kernel, 204 + 116);
        CHECK_EQ_U64(r.tick.lost_markers, 2);
        CHECK_EQ_U64(r.tick.events, 58);
        CHECK_EQ_U64(r.tick.bad_lines, 0);

        trace_feed(ctx, spaces, strlen(spaces));
        CHECK(trace_tick(ctx, 1000000, &r) == 0);
        t = find_task(&r, 7846, "7:2");
        CHECK(t != NULL);
        if (t) {
                CHECK_STREQ(t->comm, "my wr-iter 1");
                CHECK_EQ_U64(t->pause_ms, 1528);
                CHECK_EQ_U64(t->pauses, 33);
        }
        CHECK_EQ_U64(r.total.lost_kernel, 320);
        trace_free(ctx);
}

static void test_bounds(void) {
        trace_ctx *ctx = NULL;
        trace_tick_result r;
        char line[512], big[3000];

        CHECK(trace_new_detached(4096, &ctx) == 0);
        /* 300 tasks on one device: 256 kept, the rest counted, the device still sees all */
        for (int pid = 1; pid <= 300; pid++) {
                int n = snprintf(line, sizeof(line), "w-%d [000] 1.0: balance_dirty_pages: bdi 8:0: limit=10 setpoint=8 dirty=9 task_ratelimit=4 pause=10\n", pid);
                trace_feed(ctx, line, (size_t) n);
        }
        /* 70 devices: 64 kept */
        for (int dev = 0; dev < 70; dev++) {
                int n = snprintf(line, sizeof(line), "w-1 [000] 1.0: bdi_dirty_ratelimit: bdi 9:%d: write_bw=1 awrite_bw=1 dirty_rate=1 dirty_ratelimit=1 task_ratelimit=1 balanced_dirty_ratelimit=1\n", dev);
                trace_feed(ctx, line, (size_t) n);
        }
        /* an overlong line, then a good one */
        memset(big, 'x', sizeof(big));
        trace_feed(ctx, big, sizeof(big));
        trace_feed(ctx, "\nw-1 [000] 1.0: balance_dirty_pages: bdi 8:0: limit=10 setpoint=8 dirty=9 task_ratelimit=4 pause=10\n", 100);
        CHECK(trace_tick(ctx, 1000000, &r) == 0);
        CHECK_EQ_U64(r.n_tasks, TRACE_TASKS_MAX);
        CHECK_EQ_U64(r.tick.dropped_tasks, 300 - TRACE_TASKS_MAX);
        CHECK_EQ_U64(r.n_devices, TRACE_DEVICES_MAX);
        CHECK_EQ_U64(r.tick.dropped_devices, 70 + 1 - TRACE_DEVICES_MAX);
        CHECK_EQ_U64(r.tick.bad_lines, 1);
        CHECK_EQ_U64(r.devices[0].events, 301);
        CHECK_EQ_U64(r.devices[0].pause_ms, 3010);
        CHECK_EQ_U64(r.devices[0].n_tasks, TRACE_TASKS_MAX);
        CHECK(r.tasks[0].pid == 1 && r.tasks[0].pause_ms == 20);

        /* zero elapsed does not divide by zero */
        trace_feed(ctx, line, 0);
        CHECK(trace_tick(ctx, 0, &r) == 0);
        trace_free(ctx);
}

/* A pause that runs past the tick's end is split between the ticks it spans. */
static void test_split_pauses(void) {
        trace_ctx *ctx = NULL;
        trace_tick_result r;
        const trace_task *t;
        const trace_device *d;
        /* tick 1 ends at 10.000000 s: the 200 ms pause from 9.950 s has 50 ms in it, 150 ms after */
        static const char text[] =
                "dd-7 [000] 9.500000: balance_dirty_pages: bdi 7:0: limit=10 setpoint=8 dirty=9 task_ratelimit=4 pause=100\n"
                "dd-7 [000] 9.950000: balance_dirty_pages: bdi 7:0: limit=10 setpoint=8 dirty=9 task_ratelimit=4 pause=200\n"
                "cp-8 [001] 9.990000: balance_dirty_pages: bdi 7:0: limit=10 setpoint=8 dirty=9 task_ratelimit=4 pause=8\n";

        CHECK(trace_new_detached(4096, &ctx) == 0);
        trace_feed(ctx, text, strlen(text));
        CHECK(trace_tick_at(ctx, 1000000, 10000000, &r) == 0);
        t = find_task(&r, 7, "7:0");
        CHECK(t && t->pause_ms == 150 && t->pauses == 2 && t->max_pause_ms == 200);
        t = find_task(&r, 8, "7:0");
        CHECK(t && t->pause_ms == 8);
        d = find_device(&r, "7:0");
        CHECK(d && d->pause_ms == 158 && d->pauses == 3);

        /* tick 2 (to 10.100 s) gets 100 ms of it, with no event of its own */
        CHECK(trace_tick_at(ctx, 100000, 10100000, &r) == 0);
        CHECK_EQ_U64(r.n_tasks, 1);
        t = find_task(&r, 7, "7:0");
        CHECK(t && t->pause_ms == 100 && t->pauses == 0 && t->events == 0);
        CHECK(t && t->pause_ms_per_s > 999.9 && t->pause_ms_per_s < 1000.1);
        CHECK(t && strcmp(t->comm, "dd") == 0);
        d = find_device(&r, "7:0");
        CHECK(d && d->pause_ms == 100 && d->n_tasks == 1);

        /* tick 3 gets the last 50 ms; tick 4 nothing */
        CHECK(trace_tick_at(ctx, 100000, 10200000, &r) == 0);
        t = find_task(&r, 7, "7:0");
        CHECK(t && t->pause_ms == 50);
        CHECK(trace_tick_at(ctx, 100000, 10300000, &r) == 0);
        CHECK_EQ_U64(r.n_tasks, 0);
        CHECK_EQ_U64(r.n_devices, 0);

        /* now 0: no split, the whole pause counts where it started */
        trace_feed(ctx, text, strlen(text));
        CHECK(trace_tick_at(ctx, 1000000, 0, &r) == 0);
        t = find_task(&r, 7, "7:0");
        CHECK(t && t->pause_ms == 300);
        CHECK(trace_tick_at(ctx, 1000000, 0, &r) == 0);
        CHECK_EQ_U64(r.n_tasks, 0);
        trace_free(ctx);
}

static void test_cgroup_path(void) {
        char root[] = "/tmp/test-trace-cg.XXXXXX", p[256], buf[256];
        struct stat st;

        if (!mkdtemp(root))
                return;
        snprintf(p, sizeof(p), "%s/system.slice", root);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/user.slice", root);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/system.slice/my app.service", root);
        CHECK(mkdir(p, 0700) == 0);
        CHECK(stat(p, &st) == 0);
        CHECK(trace_cgroup_path(root, st.st_ino, buf, sizeof(buf)) == 0);
        CHECK_STREQ(buf, "/system.slice/my app.service");
        CHECK(trace_cgroup_path(root, st.st_ino, buf, 10) == -ENAMETOOLONG);
        CHECK(stat(root, &st) == 0);
        CHECK(trace_cgroup_path(root, st.st_ino, buf, sizeof(buf)) == 0);
        CHECK_STREQ(buf, "/");
        CHECK(trace_cgroup_path(root, 1, buf, sizeof(buf)) == -ENOENT);
        CHECK_STREQ(buf, "");
        rmdir(p);
        snprintf(p, sizeof(p), "%s/system.slice", root);
        rmdir(p);
        snprintf(p, sizeof(p), "%s/user.slice", root);
        rmdir(p);
        rmdir(root);
}

int main(void) {
        srcdir = getenv("top_srcdir");
        if (!srcdir)
                srcdir = ".";
        test_parse_lines();
        test_file_dd();
        test_file_lost_and_spaces();
        test_bounds();
        test_split_pauses();
        test_cgroup_path();
        {
                /* no usable tracefs there: an error, nothing created */
                trace_ctx *ctx = NULL;
                CHECK(trace_new("/nonexistent-tracefs", "wbtuned-test", &ctx) == -EOPNOTSUPP && ctx == NULL);
                CHECK(trace_new(NULL, "../x", &ctx) == -EINVAL);
        }
        TEST_EXIT();
}
