/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Live driver for test-trace-live.sh: trace balance_dirty_pages in a private instance for a while and print
 * who was paused. Usage: test-trace-live INSTANCE SECONDS [READY_FILE]. Exit 0 if the run was clean, 77 if no tracefs. */
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "trace.h"
#include "util.h"

int main(int argc, char **argv) {
        trace_ctx *ctx = NULL;
        trace_tick_result r = {};
        uint64_t seconds, start, last;
        uint64_t events = 0, ticks = 0, busiest_read_usec = 0;
        char dir[512], dir2[512];
        struct stat st;
        int k;

        if (argc < 3 || parse_u64(argv[2], &seconds) < 0) {
                fprintf(stderr, "usage: %s INSTANCE SECONDS [READY_FILE]\n", argv[0]);
                return 2;
        }
        log_open();
        k = trace_new(NULL, argv[1], &ctx);
        if (k < 0) {
                printf("no-trace %s\n", strerror(-k));
                return 77;
        }
        if (argc > 3) {
                FILE *f = fopen(argv[3], "we");
                if (f)
                        fclose(f);
        }
        start = last = now_usec();
        while (now_usec() - start < seconds * 1000000) {
                struct pollfd p = { .fd = trace_fd(ctx), .events = POLLIN };
                uint64_t t0;

                (void) poll(&p, 1, 100);
                if (p.revents & POLLIN) {
                        t0 = now_usec();
                        k = trace_process(ctx);
                        busiest_read_usec = MAX(busiest_read_usec, now_usec() - t0);
                        if (k < 0) {
                                printf("read-error %s\n", strerror(-k));
                                break;
                        }
                }
                if (now_usec() - last < 500000)
                        continue;
                t0 = now_usec();
                k = trace_tick(ctx, t0 - last, &r);
                busiest_read_usec = MAX(busiest_read_usec, now_usec() - t0);
                last = t0;
                ticks++;
                events += r.tick.events;
                for (size_t i = 0; i < r.n_tasks; i++)
                        printf("task pid=%d comm=%s bdi=%s pauses=%" PRIu64 " pause_ms=%" PRIu64 " pause_ms_per_s=%.0f ratelimit=%" PRIu64 " dirty=%" PRIu64 " limit=%" PRIu64 "\n",
                               r.tasks[i].pid, r.tasks[i].comm, r.tasks[i].bdi, r.tasks[i].pauses, r.tasks[i].pause_ms,
                               r.tasks[i].pause_ms_per_s, r.tasks[i].task_ratelimit_bytes_per_s, r.tasks[i].dirty_bytes, r.tasks[i].limit_bytes);
                for (size_t i = 0; i < r.n_devices; i++)
                        printf("device bdi=%s events=%" PRIu64 " pauses=%" PRIu64 " pause_ms_per_s=%.0f tasks=%u write_bw=%" PRIu64 "\n",
                               r.devices[i].bdi, r.devices[i].events, r.devices[i].pauses, r.devices[i].pause_ms_per_s,
                               r.devices[i].n_tasks, r.devices[i].write_bw_bytes_per_s);
                fflush(stdout);
        }
        printf("summary ticks=%" PRIu64 " events=%" PRIu64 " lost=%" PRIu64 " dropped=%" PRIu64 " bad=%" PRIu64 " bytes=%" PRIu64 " max_call_usec=%" PRIu64 "\n",
               ticks, events, r.total.lost_kernel, r.total.dropped_tasks, r.total.bad_lines, r.total.bytes_read, busiest_read_usec);

        /* the instance must be gone once we stop */
        snprintf(dir, sizeof(dir), "/sys/kernel/tracing/instances/%s", argv[1]);
        snprintf(dir2, sizeof(dir2), "/sys/kernel/debug/tracing/instances/%s", argv[1]);
        ctx = trace_free(ctx);
        k = stat(dir, &st) < 0 && errno == ENOENT && stat(dir2, &st) < 0 && errno == ENOENT;
        printf("instance-removed %s\n", k ? "yes" : "no");
        return k ? 0 : 1;
}
