/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory cgroups with a memory limit: each is its own writeback domain (mm/page-writeback.c, mdtc). */
#include "memcg.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* A limit file's text, "max" or a number of bytes, as bytes; UINT64_MAX for "max". -EINVAL for other
 * text, -ERANGE for a number past 64 bits (the kernel's largest is PAGE_COUNTER_MAX pages). */
static int parse_limit(const char *text, uint64_t *ret) {
        if (strcmp(text, "max") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        return parse_u64(text, ret);
}

/* Note the first malformed file of a walk: "rel/file: "text" (why)". */
static void note_malformed(memcg_summary *s, const char *rel, const char *file, const char *text, int r) {
        if (s->n_malformed++ > 0)
                return;
        snprintf(s->malformed, sizeof s->malformed, "%s%s%s: \"%.40s\" (%s)", rel, rel[0] ? "/" : "", file, text,
                 r == -ERANGE ? "past 64 bits" : "not a number");
}

/* min(memory.high, memory.max), UINT64_MAX when both are "max" (or absent, as in the root cgroup);
 * *ret_file names the smaller one (memory.max on a tie: the hard limit). 0, or -EINVAL/-ERANGE (noted). */
static int read_limit_at(int dirfd, const char *rel, memcg_summary *s, uint64_t *ret, const char **ret_file) {
        static const char *const files[] = { "memory.max", "memory.high" };
        uint64_t limit = UINT64_MAX;
        const char *from = files[0];

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char buf[64];
                uint64_t v;
                int r;

                if (read_one_line_at(dirfd, files[i], buf, sizeof buf) < 0)
                        continue;       /* gone since the listing, or not ours to read: no limit from it */
                r = parse_limit(buf, &v);
                if (r < 0) {
                        note_malformed(s, rel, files[i], buf, r);
                        return r;
                }
                if (v < limit) {
                        limit = v;
                        from = files[i];
                }
        }
        *ret = limit;
        *ret_file = from;
        return 0;
}

typedef struct dirty_sum {
        memcg_summary *s;
        const char *rel;
        uint64_t sum;
} dirty_sum;

static int dirty_sum_cb(const char *key, const char *value, void *userdata) {
        dirty_sum *d = userdata;
        char line[64];
        uint64_t v;
        int r;

        if (strcmp(key, "file_dirty") != 0 && strcmp(key, "file_writeback") != 0)
                return 0;
        r = parse_u64(value, &v);
        if (r < 0) {
                snprintf(line, sizeof line, "%s %s", key, value);
                note_malformed(d->s, d->rel, "memory.stat", line, r);
                return -EBADMSG;
        }
        d->sum = add_sat(d->sum, v);
        return 0;
}

/* file_dirty + file_writeback of memory.stat. -EBADMSG for a malformed figure (noted), distinct from
 * the errors of reading the file. */
static int read_dirty_at(int dirfd, const char *rel, memcg_summary *s, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        dirty_sum d = { .s = s, .rel = rel };
        int r = read_file_full_at(dirfd, "memory.stat", &buf, NULL);

        if (r < 0)
                return r;
        r = parse_kv(buf, dirty_sum_cb, &d);
        if (r < 0)
                return r;
        *ret = d.sum;
        return 0;
}

static void visit(int dirfd, const char *rel, unsigned depth, unsigned max_depth, memcg_summary *s) {
        _cleanup_closedir_ DIR *d = NULL;
        const char *limit_file;
        uint64_t limit, dirty = 0;
        struct dirent *de;
        int fd, r;

        if (read_limit_at(dirfd, rel, s, &limit, &limit_file) >= 0 && limit != UINT64_MAX &&
            (r = read_dirty_at(dirfd, rel, s, &dirty)) != -EBADMSG) {
                s->n_limited++;
                if (r >= 0 && dirty >= MEMCG_WRITING_BYTES) {
                        s->n_writing++;
                        s->writing_bytes = add_sat(s->writing_bytes, dirty);
                        if (!s->smallest_limit_bytes || limit < s->smallest_limit_bytes) {
                                s->smallest_limit_bytes = limit;
                                snprintf(s->smallest_limit_file, sizeof s->smallest_limit_file, "%s", limit_file);
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
