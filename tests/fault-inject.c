/* SPDX-License-Identifier: GPL-2.0-or-later */
/* See fault-inject.h: --wrap'ed libc calls that fail on one chosen path. */
#include "fault-inject.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

int __real_open(const char *path, int flags, ...);
int __real_openat(int dirfd, const char *path, int flags, ...);
ssize_t __real_read(int fd, void *buf, size_t count);
ssize_t __real_readlink(const char *path, char *buf, size_t size);
DIR *__real_opendir(const char *path);
int __real_access(const char *path, int mode);
int __real_faccessat(int dirfd, const char *path, int mode, int flags);

int __wrap_open(const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
ssize_t __wrap_read(int fd, void *buf, size_t count);
ssize_t __wrap_readlink(const char *path, char *buf, size_t size);
DIR *__wrap_opendir(const char *path);
int __wrap_access(const char *path, int mode);
int __wrap_faccessat(int dirfd, const char *path, int mode, int flags);

#define MAX_FDS 4096
#define MAX_RECORDED 1024

static struct {
        char path[PATH_MAX];
        fault_kind kind;
        int error;
} fault;
static bool faulty_fd[MAX_FDS];     /* opened on the fault's path */
static bool garbage_done[MAX_FDS];  /* FAULT_GARBAGE: the garbage was read, EOF next */
static unsigned long n_reads, n_hits;
static bool recording;
static char *recorded[MAX_RECORDED];
static size_t n_recorded;

void fault_set(const char *path, fault_kind kind, int error) {
        snprintf(fault.path, sizeof(fault.path), "%s", path);
        fault.kind = kind;
        fault.error = error;
}

void fault_clear(void) {
        fault.kind = FAULT_NONE;
        fault.path[0] = 0;
}

void fault_record_start(void) {
        for (size_t i = 0; i < n_recorded; i++)
                free(recorded[i]);
        n_recorded = 0;
        recording = true;
}

size_t fault_record_stop(const char *const **ret) {
        recording = false;
        *ret = (const char *const *) recorded;
        return n_recorded;
}

unsigned long fault_reads(void) {
        return n_reads;
}

unsigned long fault_hits(void) {
        return n_hits;
}

void fault_reset_counts(void) {
        n_reads = n_hits = 0;
}

const char *fault_kind_to_string(fault_kind kind) {
        static const char *const names[] = {
                [FAULT_NONE] = "none", [FAULT_OPEN] = "open", [FAULT_READ] = "read",
                [FAULT_SHORT] = "short", [FAULT_GARBAGE] = "garbage", [FAULT_EMPTY] = "empty",
        };

        return names[kind];
}

/* The absolute path of path relative to dirfd (as the kernel would resolve it, without following links). */
static void resolve(int dirfd, const char *path, char *out, size_t size) {
        char dir[PATH_MAX], link[64];
        ssize_t n;

        if (path[0] == '/' || dirfd == AT_FDCWD) {
                snprintf(out, size, "%s", path);
                return;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
        n = __real_readlink(link, dir, sizeof(dir) - 1);
        dir[n > 0 ? n : 0] = 0;
        if (snprintf(out, size, "%s/%s", dir, path) >= (int) size)
                out[0] = 0;             /* too long to be one of ours: matches nothing */
}

static void record(const char *path) {
        if (!recording || n_recorded >= MAX_RECORDED)
                return;
        for (size_t i = 0; i < n_recorded; i++)
                if (strcmp(recorded[i], path) == 0)
                        return;
        recorded[n_recorded] = strdup(path);
        if (recorded[n_recorded])
                n_recorded++;
}

static bool matches(const char *path) {
        return fault.kind != FAULT_NONE && strcmp(path, fault.path) == 0;
}

/* For an open of path: fail it (errno set, true) or let it through. */
static bool open_fails(const char *path) {
        record(path);
        if (matches(path) && fault.kind == FAULT_OPEN) {
                n_hits++;
                errno = fault.error;
                return true;
        }
        return false;
}

static int opened(int fd, const char *path) {
        if (fd >= 0 && fd < MAX_FDS) {
                faulty_fd[fd] = matches(path);
                garbage_done[fd] = false;
        }
        return fd;
}

int __wrap_open(const char *path, int flags, ...) {
        mode_t mode = 0;
        va_list ap;

        if (flags & (O_CREAT | O_TMPFILE)) {
                va_start(ap, flags);
                mode = (mode_t) va_arg(ap, int);
                va_end(ap);
        }
        if (open_fails(path))
                return -1;
        return opened(__real_open(path, flags, mode), path);
}

int __wrap_openat(int dirfd, const char *path, int flags, ...) {
        char full[PATH_MAX];
        mode_t mode = 0;
        va_list ap;

        if (flags & (O_CREAT | O_TMPFILE)) {
                va_start(ap, flags);
                mode = (mode_t) va_arg(ap, int);
                va_end(ap);
        }
        resolve(dirfd, path, full, sizeof(full));
        if (open_fails(full))
                return -1;
        return opened(__real_openat(dirfd, path, flags, mode), full);
}

ssize_t __wrap_read(int fd, void *buf, size_t count) {
        static const char garbage[] = "\xff-1 99999999999999999999999 garbage: x\n\n:";

        n_reads++;
        if (fd < 0 || fd >= MAX_FDS || !faulty_fd[fd] || fault.kind == FAULT_NONE)
                return __real_read(fd, buf, count);
        n_hits++;
        switch (fault.kind) {
        case FAULT_READ:
                errno = fault.error;
                return -1;
        case FAULT_SHORT:
                return __real_read(fd, buf, count < 3 ? count : 3);
        case FAULT_GARBAGE: {
                size_t n = sizeof(garbage) - 1 < count ? sizeof(garbage) - 1 : count;

                if (garbage_done[fd])
                        return 0;
                garbage_done[fd] = true;
                memcpy(buf, garbage, n);
                return (ssize_t) n;
        }
        case FAULT_EMPTY:
                return 0;
        default:
                return __real_read(fd, buf, count);
        }
}

ssize_t __wrap_readlink(const char *path, char *buf, size_t size) {
        if (open_fails(path))
                return -1;
        return __real_readlink(path, buf, size);
}

DIR *__wrap_opendir(const char *path) {
        if (open_fails(path))
                return NULL;
        return __real_opendir(path);
}

int __wrap_access(const char *path, int mode) {
        if (open_fails(path))
                return -1;
        return __real_access(path, mode);
}

int __wrap_faccessat(int dirfd, const char *path, int mode, int flags) {
        char full[PATH_MAX];

        resolve(dirfd, path, full, sizeof(full));
        if (open_fails(full))
                return -1;
        return __real_faccessat(dirfd, path, mode, flags);
}
