/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every module: cleanup attributes, file reading, number parsing. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void freep(void *p) { free(*(void **) p); }
static inline void closep(int *fd) { if (*fd >= 0) { int saved = errno; close(*fd); errno = saved; } }
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closedirp(DIR **d) { if (*d) closedir(*d); }

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* a * b, UINT64_MAX when it does not fit (kernel counters in KB or pages, turned into bytes). */
/* a * b / c without overflow in between, saturated (c == 0 counts as 1) */
static inline uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c) {
        unsigned __int128 r = (unsigned __int128) a * b / (c ? c : 1);

        return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

static inline uint64_t mul_sat(uint64_t a, uint64_t b) {
        uint64_t r;

        return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t add_sat(uint64_t a, uint64_t b) {
        uint64_t r;

        return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* A FILE that writes into memory (open_memstream()). While open, fflush(m.f) makes m.buf/m.size what was
 * written so far. */
typedef struct memstream {
        FILE *f;
        char *buf;
        size_t size;
} memstream;

/* Opens m->f, NULL if out of memory. */
FILE *memstream_open(memstream *m);
/* Closes m->f and hands over the text: 0 with *ret (malloc'd, NUL-terminated, "" when nothing was written)
 * and *ret_size (may be NULL) its length; -ENOMEM if a write or the close failed (a memory stream fails
 * only for memory), nothing to free then. */
int memstream_finish(memstream *m, char **ret, size_t *ret_size);
/* Closes m->f and frees the text, if any: error paths and _cleanup_memstream_. */
void memstream_done(memstream *m);
#define _cleanup_memstream_ _cleanup_(memstream_done)

/* Hand a cleaned-up pointer or fd to the caller: x = TAKE_PTR(p). */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/* "/fake" + "/proc/vmstat"; root may be NULL or "" for the live system. Returns a malloc'd path or NULL. */
char *path_join_root(const char *root, const char *path);

/* Read a whole (small) file into a malloc'd NUL-terminated buffer. 0 or -errno. */
int read_file_full(const char *path, char **ret, size_t *ret_size);
int read_file_full_at(int dirfd, const char *path, char **ret, size_t *ret_size);

/* Read the first line of a file (sysfs/procfs knob), newline stripped. 0 or -errno. */
int read_one_line(const char *path, char *buf, size_t size);
/* The same, path relative to dirfd (or AT_FDCWD): saves the lookup of a directory read many times. */
int read_one_line_at(int dirfd, const char *path, char *buf, size_t size);

/* Read a single unsigned 64-bit number from a file. -EINVAL if the content is not one. */
int read_u64_file(const char *path, uint64_t *ret);
int read_u64_file_at(int dirfd, const char *path, uint64_t *ret);

/* Write a string to an existing file (no O_CREAT), as sysctl/sysfs need. 0 or -errno. */
int write_string_file(const char *path, const char *s);

/* s past prefix if s starts with it, else NULL. */
const char *startswith(const char *s, const char *prefix);

/* One "key value" or "key: value ..." line of a kernel file (/proc/vmstat, meminfo, memory.stat,
 * /proc/PID/io, debugfs stats): key up to the first ':', blank or tab, value the first word after them.
 * A callback's negative return stops the walk. */
typedef int (*kv_cb)(const char *key, const char *value, void *userdata);
/* cb for every such line of buf, changed in place ("" for a key with nothing after it; a line that is only
 * a key is skipped). 0 or cb's error. */
int parse_kv(char *buf, kv_cb cb, void *userdata);

/* Strict decimal parse of the whole string (leading/trailing blanks allowed). 0, -EINVAL or -ERANGE. */
int parse_u64(const char *s, uint64_t *ret);
/* A boolean as systemd reads one from the environment: 1 for 1/yes/y/true/t/on, 0 for 0/no/n/false/f/off
 * (any case), -EINVAL for anything else (NULL and "" too). */
int parse_boolean(const char *s);

/* Parse a byte size with optional K/M/G/T suffix (binary, 1K = 1024), e.g. "16M". */
int parse_size(const char *s, uint64_t *ret);

/* Parse a duration with optional ms/s/min suffix into milliseconds; a bare number is seconds. */
int parse_duration_ms(const char *s, uint64_t *ret_ms);

/* Format bytes for people: "16.0M", "512K", "0". Returns buf. */
const char *format_bytes(char *buf, size_t size, uint64_t bytes);

/* Monotonic clock in microseconds. */
uint64_t now_usec(void);
/* The wall clock (CLOCK_REALTIME) in microseconds since 1970; 0 if it reads before 1970. */
uint64_t realtime_usec(void);

/* Binary search of a sorted array: the index of the element cmp(key, elem) calls equal, or the
 * index where key would be inserted, with *found false. */
size_t search_sorted(const void *base, size_t n, size_t size, const void *key,
                     int (*cmp)(const void *key, const void *elem), bool *found);

/* Make room for element n of an array of *allocated elements (doubling). 0 or -ENOMEM. */
int grow_array(void **v, size_t *allocated, size_t n, size_t size);

/* A directory for files this process writes and others must not swap: dir opened once (O_PATH,
 * O_NOFOLLOW: a symbolic link in its place is refused), a directory owned by this process's user
 * (root for the daemon) and writable by no group or other user, so nobody else can rename, replace or
 * plant anything in it; every file in it is then made and removed with *at() calls relative to the fd.
 * Returns the fd, or -errno with *ret_error (malloc'd, naming dir; NULL on out of memory). */
int dir_open_private(const char *dir, char **ret_error);

/* Out of memory, the one rule (HACKING.md): a line on stderr (the journal), then abort(). The unit's
 * Restart=on-failure starts the daemon again and that start puts every knob back from the saved file. */
_Noreturn void oom(void);
/* p, or oom() when it is NULL: for a constructor whose NULL means out of memory (json-c's). */
#define oom_check(p) ({ __typeof__(p) _oom_p = (p); if (!_oom_p) oom(); _oom_p; })
/* oom() when an adder could not allocate (json-c's json_object_object_add(), json_object_array_add()). */
static inline void oom_check_add(int r) {
        if (r < 0)
                oom();
}
/* malloc, calloc, strdup, asprintf that never return NULL (oom() instead). */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
char *xasprintf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Set *ret_error (when not NULL) to the formatted reason, escaped for a terminal (it may quote a
 * file's bytes), and return r: one line for every "refused, because ..." of a reader. */
int error_printf(char **ret_error, int r, const char *format, ...) __attribute__((format(printf, 3, 4)));
