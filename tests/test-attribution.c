/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the /proc readers of attribution.c and the dirtiers list, on files written here. */
#include <sys/stat.h>
#include <unistd.h>

#include "attribution.h"
#include "tap.h"
#include "util.h"

static char dir[] = "/tmp/test-attribution.XXXXXX";

static const char *put(const char *name, const char *text) {
        static char path[256];

        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (!text)
                return path;
        f = fopen(path, "we");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                printf("# cannot write %s\n", path);
        return path;
}

static void test_proc_io(void) {
        uint64_t w = 0, c = 0;

        CHECK(attribution_read_proc_io(put("io", "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n"
                                                 "write_bytes: 409600\ncancelled_write_bytes: 8192\n"), &w, &c) == 0);
        CHECK_EQ_U64(w, 409600);
        CHECK_EQ_U64(c, 8192);
        /* "write_bytes" inside "cancelled_write_bytes" is not taken for it */
        CHECK(attribution_read_proc_io(put("io", "cancelled_write_bytes: 7\nwrite_bytes: 9\n"), &w, &c) == 0);
        CHECK(w == 9 && c == 7);
        CHECK(attribution_read_proc_io(put("io", "write_bytes: 9\n"), &w, &c) == -EBADMSG);
        CHECK(attribution_read_proc_io(put("io", "write_bytes: x\ncancelled_write_bytes: 1\n"), &w, &c) == -EBADMSG);
        CHECK(attribution_read_proc_io("/nonexistent/io", &w, &c) == -ENOENT);
}

static void test_proc_kthread(void) {
        /* captured from 6.18: a loop worker, and dd */
        CHECK(attribution_read_proc_kthread(put("stat", "1234 (kworker/u8:2-loop0) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 871 0 0 "
                                                        "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")) == 1);
        CHECK(attribution_read_proc_kthread(put("stat", "4321 (dd) D 900 4321 900 34816 4321 4194560 120 0 0 0 0 85 0 0 20 0 1 0 9001 "
                                                        "5619712 384 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")) == 0);
        /* a comm with spaces and ')' does not shift the fields */
        CHECK(attribution_read_proc_kthread(put("stat", "77 (a) b (c)) S 1 77 77 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 5\n")) == 0);
        CHECK(attribution_read_proc_kthread(put("stat", "77 (x) S 1\n")) == -EBADMSG);
        CHECK(attribution_read_proc_kthread(put("stat", "garbage")) == -EBADMSG);
        CHECK(attribution_read_proc_kthread("/nonexistent/stat") == -ENOENT);
        /* this process is not a kernel thread; kthreadd is, where this /proc shows it as pid 2 */
        CHECK(attribution_read_proc_kthread("/proc/self/stat") == 0);
        char comm[32] = "";
        if (read_one_line("/proc/2/comm", comm, sizeof(comm)) >= 0 && strcmp(comm, "kthreadd") == 0)
                CHECK(attribution_read_proc_kthread("/proc/2/stat") == 1);
}

static void put_proc(int pid, const char *comm, unsigned long flags, unsigned long long write_bytes) {
        char name[64], text[256];

        snprintf(name, sizeof(name), "proc/%d", pid);
        (void) mkdir(put(name, NULL), 0755);
        snprintf(name, sizeof(name), "proc/%d/stat", pid);
        snprintf(text, sizeof(text), "%d (%s) S 2 0 0 0 -1 %lu 0 0 0 0 0 0 0 0 20 0 1 0 5\n", pid, comm, flags);
        put(name, text);
        snprintf(name, sizeof(name), "proc/%d/comm", pid);
        snprintf(text, sizeof(text), "%s\n", comm);
        put(name, text);
        snprintf(name, sizeof(name), "proc/%d/io", pid);
        snprintf(text, sizeof(text), "write_bytes: %llu\ncancelled_write_bytes: 0\n", write_bytes);
        put(name, text);
}

/* A kernel thread with a growing write_bytes (a loop worker writing a backing file) is no dirtier. */
static void test_dirtiers_skip_kthreads(void) {
        attribution_options o = { .root = dir, .enabled = true };
        attribution *a = NULL;
        sample s = {};
        json_object *j, *list;

        (void) mkdir(put("proc", NULL), 0755);
        CHECK(attribution_new(&o, &a) == 0);
        /* a new process gets its rate at the next full scan, ATTRIBUTION_SCAN_EVERY_TICKS later */
        for (unsigned long long t = 0; t <= ATTRIBUTION_SCAN_EVERY_TICKS; t++) {
                put_proc(100, "kworker/u8:1-loop0", 0x04208060, t * (50 << 20));
                put_proc(200, "dd", 0x00400100, t * (10 << 20));
                attribution_tick(a, (t + 1) * 1000000);
        }

        j = json_object_new_object();
        attribution_top_json(a, &s, j);
        CHECK(json_object_object_get_ex(j, "dirtiers", &list) && json_object_array_length(list) == 1);
        printf("# dirtiers: %s\n", list ? json_object_to_json_string(list) : "none");
        if (list && json_object_array_length(list) == 1) {
                json_object *pid, *rate;
                json_object *e = json_object_array_get_idx(list, 0);
                CHECK(json_object_object_get_ex(e, "pid", &pid) && json_object_get_int(pid) == 200);
                CHECK(json_object_object_get_ex(e, "write_bytes_per_s", &rate) && json_object_get_int64(rate) == 10 << 20);
        }
        json_object_put(j);
        attribution_free(a);
        for (int pid = 100; pid <= 200; pid += 100)
                for (const char *const *f = (const char *const[]) { "stat", "comm", "io", NULL }; *f; f++) {
                        char name[64];
                        snprintf(name, sizeof(name), "proc/%d/%s", pid, *f);
                        (void) unlink(put(name, NULL));
                }
        (void) rmdir(put("proc/100", NULL));
        (void) rmdir(put("proc/200", NULL));
        (void) rmdir(put("proc", NULL));
}

static json_object *top_of(attribution *a) {
        json_object *j = json_object_new_object();
        sample s = {};

        attribution_top_json(a, &s, j);
        return j;
}

/* The entry of list ("paused" or "dirtiers") for pid, or NULL. */
static json_object *listed(json_object *top, const char *list, int pid) {
        json_object *l = json_object_object_get(top, list);

        for (size_t i = 0; i < json_object_array_length(l); i++) {
                json_object *e = json_object_array_get_idx(l, i);
                if (json_object_get_int(json_object_object_get(e, "pid")) == pid)
                        return e;
        }
        return NULL;
}

static uint64_t window_usec_of(json_object *top) {
        return json_object_get_uint64(json_object_object_get(json_object_object_get(top, "attribution"), "window_usec"));
}

/* A process that wrote nothing in its last full scans is read again only every ATTRIBUTION_QUIET_REREAD_SCANS
 * full scans (a 64-CPU guest: 770 tasks, each a taskstats query, most of the daemon's work); a writer, and a
 * process new to the scan, are read at every one. */
static void test_quiet_processes_read_less(void) {
        attribution_options o = { .root = dir, .enabled = true };
        attribution *a = NULL;
        const unsigned long long mib = 1 << 20;
        /* full scans every ATTRIBUTION_SCAN_EVERY_TICKS ticks: the quiet one starts writing after its third */
        const unsigned start = 3 * ATTRIBUTION_SCAN_EVERY_TICKS, reread = ATTRIBUTION_QUIET_REREAD_SCANS * ATTRIBUTION_SCAN_EVERY_TICKS;
        const unsigned newcomer = start + ATTRIBUTION_SCAN_EVERY_TICKS;

        (void) mkdir(put("proc", NULL), 0755);
        CHECK(attribution_new(&o, &a) == 0);
        for (unsigned t = 0; t <= reread; t++) {
                json_object *top;

                put_proc(300, "quiet", 0x00400100, t > start ? (t - start) * 10 * mib : 0);
                put_proc(400, "steady", 0x00400100, t * 10 * mib);
                if (t >= newcomer)
                        put_proc(500, "newcomer", 0x00400100, (t - newcomer + 1) * 10 * mib);
                attribution_tick(a, (t + 1) * 1000000ULL);
                if (t % ATTRIBUTION_SCAN_EVERY_TICKS != 0 || t == 0)
                        continue;
                top = top_of(a);
                printf("# tick %u: quiet %s, steady %s, newcomer %s\n", t, listed(top, "dirtiers", 300) ? "listed" : "-",
                       listed(top, "dirtiers", 400) ? "listed" : "-", listed(top, "dirtiers", 500) ? "listed" : "-");
                CHECK(listed(top, "dirtiers", 400) != NULL);
                /* quiet in two scans: not read again until the reread scan, writing or not */
                CHECK((listed(top, "dirtiers", 300) != NULL) == (t == reread));
                /* read when first seen, its rate at the next full scan */
                CHECK((listed(top, "dirtiers", 500) != NULL) == (t > newcomer));
                json_object_put(top);
        }
        {
                json_object *top = top_of(a), *e = listed(top, "dirtiers", 300), *rate;

                /* the rate since its last reading, the third scan */
                CHECK(e && json_object_object_get_ex(e, "write_bytes_per_s", &rate) &&
                      json_object_get_uint64(rate) == (reread - start) * 10 * mib * 1000000ULL / ((reread - 2 * ATTRIBUTION_SCAN_EVERY_TICKS) * 1000000ULL));
                json_object_put(top);
        }
        attribution_free(a);
        for (int pid = 300; pid <= 500; pid += 100)
                for (const char *const *f = (const char *const[]) { "stat", "comm", "io", NULL }; *f; f++) {
                        char name[64];
                        snprintf(name, sizeof(name), "proc/%d/%s", pid, *f);
                        (void) unlink(put(name, NULL));
                }
        (void) rmdir(put("proc/300", NULL));
        (void) rmdir(put("proc/400", NULL));
        (void) rmdir(put("proc/500", NULL));
        (void) rmdir(put("proc", NULL));
}

/* top lists the tasks of the last seconds: a writer read in one full scan only, and a task paused in one tick
 * only, still show in the ticks after, with their figures over the window, until the window has passed. */
static void test_window(void) {
        attribution_options o = { .root = dir, .enabled = true, .detached_trace = true };
        attribution *a = NULL;
        json_object *j, *e;
        /* 800 ms paused on 7:2 in one event */
        static const char pause_line[] =
                "              dd-4242    [001] .....   657.921979: balance_dirty_pages: bdi 7:2: limit=102400 "
                "setpoint=89600 dirty=76980 wb_setpoint=2779 wb_dirty=70398 dirty_ratelimit=102400 task_ratelimit=50000 "
                "dirtied=256 dirtied_pause=128 paused=0 pause=800 period=20 think=4 cgroup_ino=1\n";
        uint64_t t;

        (void) mkdir(put("proc", NULL), 0755);
        CHECK(attribution_new(&o, &a) == 0);
        /* ticks 1 s apart; full scans at ticks 0, 5, 10: the burst writer wrote 20 MiB between the first two */
        for (t = 0; t <= 5; t++) {
                put_proc(300, "burst", 0x00400100, t == 0 ? 0 : 20 << 20);
                if (t == 2)
                        attribution_feed_trace(a, pause_line, sizeof pause_line - 1);
                attribution_tick(a, (t + 1) * 1000000);
                if (t == 2) {
                        j = top_of(a);
                        e = listed(j, "paused", 4242);
                        CHECK(e != NULL);
                        CHECK(e && json_object_get_uint64(json_object_object_get(e, "pause_ms")) == 800);
                        json_object_put(j);
                }
        }
        j = top_of(a);
        CHECK_EQ_U64(window_usec_of(j), ATTRIBUTION_WINDOW_USEC);
        /* read at tick 5, over the 5 s since tick 0: 4 MiB/s */
        e = listed(j, "dirtiers", 300);
        CHECK(e && json_object_get_uint64(json_object_object_get(e, "write_bytes_per_s")) == 4 << 20);
        /* paused in tick 2 only (3 s ago), 800 ms over the 5 s window */
        e = listed(j, "paused", 4242);
        printf("# top at tick 5: %s\n", json_object_to_json_string(j));
        CHECK(e != NULL);
        CHECK(e && json_object_get_uint64(json_object_object_get(e, "pause_ms")) == 800);
        CHECK(e && json_object_get_double(json_object_object_get(e, "pause_ms_per_s")) == 160.0);
        json_object_put(j);

        /* tick 6: tick 2 (2 s to 3 s) still lies within the 5 s before tick 6's end */
        attribution_tick(a, (t + 1) * 1000000);
        t++;
        j = top_of(a);
        CHECK(listed(j, "paused", 4242) != NULL);
        json_object_put(j);

        /* tick 7: tick 2 has left the window. The burst writer wrote nothing since tick 5, yet it wrote in the
         * window: still listed, with the share of its 20 MiB that falls in it (its reading covered 1 s to 6 s, of
         * which 3 s to 6 s are in the window of 3 s to 8 s) */
        attribution_tick(a, (t + 1) * 1000000);
        t++;
        j = top_of(a);
        CHECK(listed(j, "paused", 4242) == NULL);
        e = listed(j, "dirtiers", 300);
        CHECK(e != NULL);
        CHECK(e && json_object_get_uint64(json_object_object_get(e, "write_bytes_per_s")) == (uint64_t) (20 << 20) * 3 / 5 / 5);
        json_object_put(j);

        /* tick 10: both are older than the window */
        for (; t <= 10; t++)
                attribution_tick(a, (t + 1) * 1000000);
        j = top_of(a);
        CHECK(listed(j, "dirtiers", 300) == NULL);
        CHECK(listed(j, "paused", 4242) == NULL);
        CHECK_EQ_U64(window_usec_of(j), ATTRIBUTION_WINDOW_USEC);
        json_object_put(j);

        /* the bound on the window's memory, as attribution.h states it */
        printf("# the window takes %zu bytes\n", attribution_window_memory_bytes());
        CHECK(attribution_window_memory_bytes() < 512 * 1024);
        attribution_free(a);
        for (const char *const *f = (const char *const[]) { "stat", "comm", "io", NULL }; *f; f++) {
                char name[64];
                snprintf(name, sizeof(name), "proc/300/%s", *f);
                (void) unlink(put(name, NULL));
        }
        (void) rmdir(put("proc/300", NULL));
        (void) rmdir(put("proc", NULL));
}

int main(void) {
        if (!mkdtemp(dir)) {
                printf("# mkdtemp failed\n");
                return EXIT_FAILURE;
        }
        test_proc_io();
        test_proc_kthread();
        test_dirtiers_skip_kthreads();
        test_quiet_processes_read_less();
        test_window();
        (void) unlink(put("io", ""));
        (void) unlink(put("stat", ""));   /* put() names the file; unlink removes it */
        (void) rmdir(dir);
        TEST_EXIT();
}
