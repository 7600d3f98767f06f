/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory cgroups with a memory limit: each is its own writeback domain (mm/page-writeback.c, mdtc). */
#include "memcg.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* "max" or a number of bytes; UINT64_MAX for "max". */
static int read_max_at(int dirfd, uint64_t *ret) {
        char buf[64];
        int r = read_one_line_at(dirfd, "memory.max", buf, sizeof buf);

        if (r < 0)
                return r;
        if (strcmp(buf, "max") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        return parse_u64(buf, ret);
}

/* file_dirty + file_writeback of memory.stat. */
static int read_dirty_at(int dirfd, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        uint64_t sum = 0;
        int r = read_file_full_at(dirfd, "memory.stat", &buf, NULL);

        if (r < 0)
                return r;
        for (char *line = buf, *next; line && *line; line = next) {
                uint64_t v;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (strncmp(line, "file_dirty ", 11) == 0 && parse_u64(line + 11, &v) >= 0)
                        sum += v;
                else if (strncmp(line, "file_writeback ", 15) == 0 && parse_u64(line + 15, &v) >= 0)
                        sum += v;
        }
        *ret = sum;
        return 0;
}

static void visit(int dirfd, const char *rel, unsigned depth, unsigned max_depth, memcg_summary *s) {
        _cleanup_closedir_ DIR *d = NULL;
        uint64_t max, dirty;
        struct dirent *de;
        int fd;

        if (read_max_at(dirfd, &max) >= 0 && max != UINT64_MAX) {
                s->n_limited++;
                if (read_dirty_at(dirfd, &dirty) >= 0 && dirty >= MEMCG_WRITING_BYTES) {
                        s->n_writing++;
                        s->writing_bytes += dirty;
                        if (!s->smallest_max_bytes || max < s->smallest_max_bytes) {
                                s->smallest_max_bytes = max;
                                snprintf(s->example, sizeof s->example, "%s", rel[0] ? rel : "/");
                        }
                }
        }
        if (depth >= max_depth)
                return;
        fd = dup(dirfd);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        while ((de = readdir(d))) {
                _cleanup_close_ int sub = -1;
                char path[512];

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (sub < 0)
                        continue;   /* gone since the listing, or not ours to read */
                snprintf(path, sizeof path, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
                visit(sub, path, depth + 1, max_depth, s);
        }
}

static bool has_memory_controller(int dirfd) {
        char buf[512];
        char *save = NULL;

        if (read_one_line_at(dirfd, "cgroup.controllers", buf, sizeof buf) < 0)
                return false;
        for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
                if (strcmp(w, "memory") == 0)
                        return true;
        return false;
}

int memcg_scan(const char *root, unsigned max_depth, memcg_summary *ret) {
        static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };

        *ret = (memcg_summary) {};
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                _cleanup_free_ char *path = path_join_root(root, mounts[i]);
                _cleanup_close_ int fd = -1;

                if (!path)
                        return -ENOMEM;
                fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0 || !has_memory_controller(fd))
                        continue;
                ret->cgroup2 = true;
                visit(fd, "", 0, max_depth, ret);
                return 0;
        }
        return -ENOENT;
}
