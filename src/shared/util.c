/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every module. */
#include "util.h"
#include "escape.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

char *path_join_root(const char *root, const char *path) {
        char *p;

        if (!root || !*root)
                root = "";
        if (asprintf(&p, "%s%s", root, path) < 0)
                return NULL;
        return p;
}

int read_file_full(const char *path, char **ret, size_t *ret_size) {
        return read_file_full_at(AT_FDCWD, path, ret, ret_size);
}

/* A signal may interrupt a read; a file that keeps failing with EINTR must not keep us looping. */
#define EINTR_RETRIES 8

int read_file_full_at(int dirfd, const char *path, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;
        unsigned interrupted = 0;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        for (;;) {
                ssize_t n;

                if (allocated - size < 4096) {
                        size_t want = allocated ? allocated * 2 : 8192;
                        char *b;

                        if (want > 64 * 1024 * 1024)
                                return -EFBIG;
                        b = realloc(buf, want);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        allocated = want;
                }
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0) {
                        if (errno == EINTR && ++interrupted < EINTR_RETRIES)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int read_one_line(const char *path, char *buf, size_t size) {
        return read_one_line_at(AT_FDCWD, path, buf, size);
}

int read_one_line_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t len = 0;
        unsigned interrupted = 0;
        char *nl;

        if (size < 2)
                return -EINVAL;
        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        /* sysfs gives a value in one read; a short read must not cut a number, so go on to the newline */
        for (;;) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR && ++interrupted < EINTR_RETRIES)
                                continue;
                        return -errno;
                }
                len += (size_t) n;
                buf[len] = 0;
                if (n == 0 || len == size - 1 || memchr(buf + len - (size_t) n, '\n', (size_t) n))
                        break;
        }
        nl = strchr(buf, '\n');
        if (nl)
                *nl = 0;
        return 0;
}

int read_u64_file(const char *path, uint64_t *ret) {
        return read_u64_file_at(AT_FDCWD, path, ret);
}

int read_u64_file_at(int dirfd, const char *path, uint64_t *ret) {
        char buf[64];
        int r;

        r = read_one_line_at(dirfd, path, buf, sizeof buf);
        if (r < 0)
                return r;
        return parse_u64(buf, ret);
}

int write_string_file(const char *path, const char *s) {
        _cleanup_close_ int fd = -1;
        size_t len = strlen(s);
        ssize_t n;

        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        /* sysctl and sysfs take the value in one write(); a short write is an error */
        n = write(fd, s, len);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

/* Split "16M" into number and the rest; 0 or -errno. */
static int parse_number_suffix(const char *s, uint64_t *number, const char **suffix) {
        unsigned long long v;
        char *end;

        while (isspace((unsigned char) *s))
                s++;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        while (isspace((unsigned char) *end))
                end++;
        *number = v;
        *suffix = end;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" }, *const no[] = { "0", "no", "n", "false", "f", "off" };

        for (size_t i = 0; s && i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

FILE *memstream_open(memstream *m) {
        *m = (memstream) {};
        m->f = open_memstream(&m->buf, &m->size);
        return m->f;
}

int memstream_finish(memstream *m, char **ret, size_t *ret_size) {
        bool failed = !m->f || ferror(m->f);

        if (m->f && fclose(m->f) != 0)
                failed = true;
        m->f = NULL;
        if (!failed && !m->buf) {
                m->buf = strdup("");
                m->size = 0;
                failed = !m->buf;
        }
        if (failed) {
                memstream_done(m);
                return -ENOMEM;
        }
        *ret = TAKE_PTR(m->buf);
        if (ret_size)
                *ret_size = m->size;
        return 0;
}

void memstream_done(memstream *m) {
        if (m->f)
                fclose(m->f);
        free(m->buf);
        *m = (memstream) {};
}

const char *startswith(const char *s, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

int parse_kv(char *buf, kv_cb cb, void *userdata) {
        char *line, *save = NULL;

        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *key = line, *value;
                size_t n = strcspn(line, ": \t");
                int r;

                if (n == 0 || line[n] == '\0')
                        continue;
                value = line + n;
                *value++ = '\0';
                value += strspn(value, ": \t");
                value[strcspn(value, " \t")] = '\0';
                r = cb(key, value, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int parse_u64(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r;

        if (!s)
                return -EINVAL;
        r = parse_number_suffix(s, &v, &end);
        if (r < 0)
                return r;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int mul_check(uint64_t a, uint64_t b, uint64_t *ret) {
        if (b && a > UINT64_MAX / b)
                return -ERANGE;
        *ret = a * b;
        return 0;
}

static bool suffix_is(const char *suffix, const char *word) {
        size_t n = strlen(word);

        if (strncasecmp(suffix, word, n) != 0)
                return false;
        suffix += n;
        while (isspace((unsigned char) *suffix))
                suffix++;
        return *suffix == 0;
}

typedef struct unit { const char *suffix; uint64_t factor; } unit;

/* A number with one of the table's suffixes, times that suffix's factor. */
static int parse_with_units(const char *s, const unit *table, size_t n_units, uint64_t *ret) {
        const char *suffix;
        uint64_t n;
        int r;

        if (!s)
                return -EINVAL;
        r = parse_number_suffix(s, &n, &suffix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_units; i++)
                if (suffix_is(suffix, table[i].suffix))
                        return mul_check(n, table[i].factor, ret);
        return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret) {
        static const unit bytes[] = {
                { "",  1 },
                { "B", 1 },
                { "K", 1ULL << 10 }, { "KiB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
        };

        return parse_with_units(s, bytes, ELEMENTSOF(bytes), ret);
}

int parse_duration_ms(const char *s, uint64_t *ret_ms) {
        static const unit ms[] = {
                { "", 1000 }, { "s", 1000 }, { "sec", 1000 },
                { "ms", 1 }, { "msec", 1 },
                { "min", 60000 }, { "m", 60000 },
                { "h", 3600000 },
        };

        return parse_with_units(s, ms, ELEMENTSOF(ms), ret_ms);
}

const char *format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char units[] = "KMGTPE";
        double v = (double) bytes;
        int u = -1;

        if (bytes < 1024) {
                snprintf(buf, size, "%" PRIu64, bytes);
                return buf;
        }
        while (v >= 1024.0 && u < (int) sizeof(units) - 2) {
                v /= 1024.0;
                u++;
        }
        if (v < 10.0)
                snprintf(buf, size, "%.1f%c", v, units[u]);
        else
                snprintf(buf, size, "%.0f%c", v, units[u]);
        return buf;
}

uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

uint64_t realtime_usec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

size_t search_sorted(const void *base, size_t n, size_t size, const void *key,
                     int (*cmp)(const void *key, const void *elem), bool *found) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = cmp(key, (const char *) base + mid * size);

                if (c == 0) {
                        *found = true;
                        return mid;
                }
                if (c > 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

_Noreturn void oom(void) {
        static const char msg[] = ": out of memory, aborting\n";

        /* no stdio, no log: both may allocate */
        (void) !write(STDERR_FILENO, program_invocation_short_name, strlen(program_invocation_short_name));
        (void) !write(STDERR_FILENO, msg, sizeof msg - 1);
        abort();
}

void *xmalloc(size_t size) {
        return oom_check(malloc(MAX(size, 1)));
}

void *xcalloc(size_t n, size_t size) {
        return oom_check(calloc(MAX(n, 1), MAX(size, 1)));
}

char *xstrdup(const char *s) {
        return oom_check(strdup(s));
}

char *xasprintf(const char *format, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                oom();
        return s;
}

int grow_array(void **v, size_t *allocated, size_t n, size_t size) {
        size_t next;
        void *p;

        if (n < *allocated)
                return 0;
        next = *allocated ? *allocated * 2 : 16;
        if (next <= n)
                next = n + 1;
        p = reallocarray(*v, next, size);
        if (!p)
                return -ENOMEM;
        *v = p;
        *allocated = next;
        return 0;
}

int error_printf(char **ret_error, int r, const char *format, ...) {
        char *raw = NULL;
        va_list ap;

        if (ret_error) {
                va_start(ap, format);
                if (vasprintf(&raw, format, ap) < 0)
                        raw = NULL;
                va_end(ap);
                *ret_error = raw ? escape_text_alloc(raw) : NULL;
                free(raw);
        }
        return r;
}

int dir_open_private(const char *dir, char **ret_error) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (ret_error)
                *ret_error = NULL;
        fd = open(dir, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                return error_printf(ret_error, r, "%s cannot be opened: %s", dir, strerror(-r));
        }
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                return error_printf(ret_error, r, "%s cannot be examined: %s", dir, strerror(-r));
        }
        if (S_ISLNK(st.st_mode))
                return error_printf(ret_error, -ELOOP, "%s is a symbolic link, not a directory", dir);
        if (!S_ISDIR(st.st_mode))
                return error_printf(ret_error, -ENOTDIR, "%s is not a directory", dir);
        if (st.st_uid != geteuid())
                return error_printf(ret_error, -EPERM, "%s is owned by uid %u, not %u", dir, (unsigned) st.st_uid,
                                  (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return error_printf(ret_error, -EPERM, "%s is writable by others (mode %04o)", dir,
                                  (unsigned) (st.st_mode & 07777));
        return TAKE_FD(fd);
}
