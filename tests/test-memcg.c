/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memcg_scan() on fake cgroup v2 trees. */
#include "memcg.h"
#include "util.h"
#include "tap.h"

#include <sys/stat.h>

static char root[] = "/tmp/test-memcg.XXXXXX";

static void put(const char *rel, const char *text) {
        char path[512], dir[512];
        FILE *f;

        snprintf(path, sizeof path, "%s/sys/fs/cgroup/%s", root, rel);
        for (char *p = strchr(path + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
                snprintf(dir, sizeof dir, "%.*s", (int) (p - path), path);
                (void) mkdir(dir, 0755);
        }
        f = fopen(path, "w");
        if (!f)
                abort();
        fputs(text, f);
        fclose(f);
}

int main(void) {
        memcg_summary s;

        if (!mkdtemp(root))
                return EXIT_FAILURE;
        printf("# no cgroup v2 hierarchy: nothing\n");
        CHECK(memcg_scan(root, 6, &s) == -ENOENT);
        CHECK(!s.cgroup2);

        printf("# a cgroup v2 without the memory controller: nothing either\n");
        put("cgroup.controllers", "cpu io pids\n");
        CHECK(memcg_scan(root, 6, &s) == -ENOENT);

        printf("# limited cgroups: those writing are counted, the smallest limit named\n");
        put("cgroup.controllers", "cpuset cpu io memory pids\n");
        put("system.slice/a.service/memory.max", "max\n");
        put("system.slice/a.service/memory.stat", "anon 1\nfile_dirty 900000000\nfile_writeback 0\n");
        put("system.slice/b.service/memory.max", "2147483648\n");
        put("system.slice/b.service/memory.stat", "anon 1\nfile_dirty 50331648\nfile_writeback 8388608\n");
        put("machine.slice/c/memory.max", "1073741824\n");
        put("machine.slice/c/memory.stat", "file_dirty 0\nfile_writeback 4096\n");
        put("machine.slice/c/inner/memory.max", "536870912\n");
        put("machine.slice/c/inner/memory.stat", "file_dirty 4194304\nfile_writeback 0\n");
        put("user.slice/memory.max", "garbage\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK(s.cgroup2);
        CHECK_EQ_U64(s.n_limited, 3);
        CHECK_EQ_U64(s.n_writing, 2);
        CHECK_EQ_U64(s.writing_bytes, 50331648 + 8388608 + 4194304);
        CHECK_EQ_U64(s.smallest_limit_bytes, 536870912);
        CHECK_STREQ(s.smallest_limit_file, "memory.max");
        CHECK_STREQ(s.example, "machine.slice/c/inner");
        printf("# ... and the one with a garbage memory.max is skipped, by name\n");
        CHECK_EQ_U64(s.n_malformed, 1);
        CHECK_STREQ(s.malformed, "user.slice/memory.max: \"garbage\" (not a number)");

        printf("# memory.high alone limits a cgroup: the kernel's headroom is min(memory.high, memory.max)\n");
        put("user.slice/memory.max", "max\n");
        put("system.slice/d.service/memory.max", "max\n");
        put("system.slice/d.service/memory.high", "268435456\n");
        put("system.slice/d.service/memory.stat", "file_dirty 8388608\nfile_writeback 0\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.n_malformed, 0);
        CHECK_STREQ(s.malformed, "");
        CHECK_EQ_U64(s.n_limited, 4);
        CHECK_EQ_U64(s.n_writing, 3);
        CHECK_EQ_U64(s.writing_bytes, 50331648 + 8388608 + 4194304 + 8388608);
        CHECK_EQ_U64(s.smallest_limit_bytes, 268435456);
        CHECK_STREQ(s.smallest_limit_file, "memory.high");
        CHECK_STREQ(s.example, "system.slice/d.service");

        printf("# both set: the smaller counts, and names its file\n");
        put("system.slice/d.service/memory.max", "134217728\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.smallest_limit_bytes, 134217728);
        CHECK_STREQ(s.smallest_limit_file, "memory.max");
        put("system.slice/d.service/memory.max", "268435456\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.smallest_limit_bytes, 268435456);
        CHECK_STREQ(s.smallest_limit_file, "memory.max");   /* a tie: the hard limit */
        put("system.slice/d.service/memory.high", "max\n");
        put("system.slice/d.service/memory.max", "max\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.n_limited, 3);
        CHECK_EQ_U64(s.smallest_limit_bytes, 536870912);

        printf("# a memory.high past 64 bits: skipped with a clear error, the rest as it was\n");
        put("system.slice/d.service/memory.high", "99999999999999999999999\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.n_malformed, 1);
        CHECK_STREQ(s.malformed, "system.slice/d.service/memory.high: \"99999999999999999999999\" (past 64 bits)");
        CHECK_EQ_U64(s.n_limited, 3);
        CHECK_EQ_U64(s.n_writing, 2);
        CHECK_EQ_U64(s.writing_bytes, 50331648 + 8388608 + 4194304);
        CHECK_EQ_U64(s.smallest_limit_bytes, 536870912);
        CHECK_STREQ(s.example, "machine.slice/c/inner");

        printf("# a malformed memory.stat figure: the cgroup is skipped, not counted as idle\n");
        put("system.slice/d.service/memory.high", "268435456\n");
        put("system.slice/d.service/memory.stat", "file_dirty 8388608\nfile_writeback 12k!\n");
        CHECK(memcg_scan(root, 6, &s) == 0);
        CHECK_EQ_U64(s.n_malformed, 1);
        CHECK_STREQ(s.malformed, "system.slice/d.service/memory.stat: \"file_writeback 12k!\" (not a number)");
        CHECK_EQ_U64(s.n_limited, 3);
        CHECK_EQ_U64(s.n_writing, 2);
        CHECK_EQ_U64(s.smallest_limit_bytes, 536870912);
        put("system.slice/d.service/memory.stat", "file_dirty 8388608\nfile_writeback 0\n");

        printf("# the depth bound is honoured\n");
        CHECK(memcg_scan(root, 2, &s) == 0);
        CHECK_EQ_U64(s.n_writing, 2);           /* b.service and d.service, not machine.slice/c/inner */

        {
                char cmd[300];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
                if (system(cmd) != 0)
                        printf("# could not remove %s\n", root);
        }
        TEST_EXIT();
}
