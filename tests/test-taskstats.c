/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the taskstats decoder (v13 and v16 payloads) and, as root, live queries and the no-CAP_NET_ADMIN path. */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tap.h"
#include "taskstats.h"
#include "util.h"

static void fill(struct taskstats *ts, uint16_t version) {
        memset(ts, 0, sizeof(*ts));
        ts->version = version;
        ts->ac_pid = 4242;
        strcpy(ts->ac_comm, "writer");
        ts->blkio_count = 7;
        ts->blkio_delay_total = 123456789;
        ts->read_char = 11;
        ts->write_char = 22;
        ts->read_bytes = 4096;
        ts->write_bytes = 1048576;
        ts->cancelled_write_bytes = 8192;
}

static void test_decode(void) {
        struct taskstats ts;
        unsigned char v16[560];
        task_io io;

        /* the size this header knows (v13, 416 bytes) */
        fill(&ts, 13);
        CHECK(taskstats_decode(&ts, sizeof(ts), &io) == 0);
        CHECK_EQ_U64(io.version, 13);
        CHECK_EQ_U64(io.tgid, 4242);
        CHECK_STREQ(io.comm, "writer");
        CHECK(io.have_io && io.have_delay);
        CHECK_EQ_U64(io.write_bytes, 1048576);
        CHECK_EQ_U64(io.cancelled_write_bytes, 8192);
        CHECK_EQ_U64(io.read_bytes, 4096);
        CHECK_EQ_U64(io.write_char, 22);
        CHECK_EQ_U64(io.blkio_delay_total_ns, 123456789);
        CHECK_EQ_U64(io.blkio_count, 7);

        /* what 6.18 sends: v16, 560 bytes, the same prefix and fields we do not know after it */
        fill(&ts, 16);
        memset(v16, 0xa5, sizeof(v16));
        memcpy(v16, &ts, sizeof(ts));
        CHECK(taskstats_decode(v16, sizeof(v16), &io) == 0);
        CHECK_EQ_U64(io.version, 16);
        CHECK_EQ_U64(io.write_bytes, 1048576);
        CHECK_EQ_U64(io.cancelled_write_bytes, 8192);
        CHECK_EQ_U64(io.blkio_delay_total_ns, 123456789);
        CHECK_STREQ(io.comm, "writer");

        /* an old, short payload: the delay part but no byte counts */
        fill(&ts, 3);
        CHECK(taskstats_decode(&ts, offsetof(struct taskstats, read_bytes), &io) == 0);
        CHECK(!io.have_io && io.have_delay);
        CHECK_EQ_U64(io.write_bytes, 0);
        CHECK_EQ_U64(io.blkio_delay_total_ns, 123456789);

        /* an unterminated comm stays terminated */
        fill(&ts, 13);
        memset(ts.ac_comm, 'x', sizeof(ts.ac_comm));
        CHECK(taskstats_decode(&ts, sizeof(ts), &io) == 0);
        CHECK_EQ_U64(strlen(io.comm), sizeof(io.comm) - 1);

        CHECK(taskstats_decode(&ts, 1, &io) == -EBADMSG);
        CHECK(taskstats_decode(NULL, 0, &io) == -EBADMSG);
}

/* Drop CAP_NET_ADMIN from this process' effective and permitted sets (the child's). */
static int drop_net_admin(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
        d[CAP_NET_ADMIN / 32].permitted &= ~(1u << (CAP_NET_ADMIN % 32));
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        return 0;
}

static void test_live(void) {
        taskstats_ctx *ctx = NULL;
        char path[] = "test-taskstats.XXXXXX", buf[65536];
        int32_t pids[3];
        task_io io[3];
        size_t n = 0;
        uint64_t v = 0;
        int fd, r, status = -1;
        pid_t child;

        if (geteuid() != 0) {
                printf("# skipping live taskstats: not root\n");
                return;
        }
        r = taskstats_new(false, &ctx);
        if (r < 0) {
                printf("# skipping live taskstats: %s\n", strerror(-r));
                return;
        }
        CHECK(read_u64_file("/proc/sys/kernel/task_delayacct", &v) == 0);
        CHECK(taskstats_delayacct(ctx) == (v != 0));

        /* dirty 4 MiB of page cache in a file on a real filesystem (cwd = build dir) */
        fd = mkstemp(path);
        CHECK(fd >= 0);
        memset(buf, 'w', sizeof(buf));
        for (int i = 0; fd >= 0 && i < 64; i++)
                CHECK_EQ_U64(write(fd, buf, sizeof(buf)), sizeof(buf));
        if (fd >= 0) {
                close(fd);
                unlink(path);
        }

        pids[0] = (int32_t) syscall(SYS_gettid);
        pids[1] = 0x3ffffff0;   /* no such task: skipped */
        pids[2] = 1;
        CHECK(taskstats_query(ctx, pids, 3, io, &n) == 0);
        CHECK_EQ_U64(n, 2);
        CHECK_EQ_U64(io[0].pid, pids[0]);
        CHECK(io[0].version >= 13);
        CHECK(io[0].have_io);
        printf("# own write_bytes %llu cancelled %llu version %u\n", (unsigned long long) io[0].write_bytes,
               (unsigned long long) io[0].cancelled_write_bytes, io[0].version);
        CHECK(io[0].write_bytes + io[0].cancelled_write_bytes >= 4 * 1024 * 1024);
        CHECK_EQ_U64(io[1].pid, 1);
        /* twice in a row: no stale ACK or reply is mistaken for the next answer */
        CHECK(taskstats_query(ctx, pids, 3, io, &n) == 0);
        CHECK(n == 2 && io[0].pid == pids[0] && io[1].pid == 1);
        taskstats_free(ctx);

        /* without CAP_NET_ADMIN: a clear -EPERM, no crash */
        fflush(stdout);
        child = fork();
        if (child == 0) {
                taskstats_ctx *c = NULL;
                size_t k;

                if (drop_net_admin() < 0)
                        _exit(3);
                if (taskstats_new(false, &c) < 0)
                        _exit(4);
                r = taskstats_query(c, pids, 1, io, &k);
                r = (r == -EPERM && k == 0 && taskstats_query(c, pids, 1, io, &k) == -EPERM) ? 0 : 5;
                taskstats_free(c);
                _exit(r);
        }
        CHECK(child > 0 && waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
        test_decode();
        test_live();
        TEST_EXIT();
}
