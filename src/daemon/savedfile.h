/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The saved-originals file: what the daemon changed and how to put it back, versioned and checksummed,
 * written atomically, and read only when it is a root-owned regular file nobody else can write. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "knobs.h"

#define SAVED_FILE_VERSION 2
#define SAVED_FILE_MAX_BYTES (8u << 20)   /* far above 64 bytes x 7 knobs x 10000 devices */

typedef struct saved_entry {
        char bdi[64];                     /* "" for a global knob */
        knob_id knob;
        knob_setting original;            /* what the kernel held before the daemon's first write */
        bool written;                     /* the daemon's last write, as read back */
        knob_setting written_setting;
        bool pending;                     /* a write about to be made (a crash may come before or after it) */
        knob_setting pending_setting;
} saved_entry;

/* Replace the file with these entries: temporary file in the same directory, fsync, rename, fsync of
 * the directory. No entries: the file is removed. 0 or -errno (logged with the path). */
int saved_file_write(const char *path, const saved_entry *entries, size_t n);

/* How many times this process has replaced or removed the file (each costs an fsync). */
unsigned long saved_file_writes(void);

/* Read and check the file: it must be a regular file (not a symlink, FIFO or device) owned by the
 * daemon's user and writable by nobody else, at most SAVED_FILE_MAX_BYTES, with a known version line,
 * a valid checksum, and every value within the kernel's range for its knob and file.
 * 0 (with *ret_entries, *ret_n), -ENOENT if there is none, -EPERM (unsafe file), -EBADMSG (version,
 * checksum or a line is wrong) or another -errno. On failure *ret_error says why, naming the line. */
int saved_file_read(const char *path, uint64_t page_size, saved_entry **ret_entries, size_t *ret_n, char **ret_error);

/* The checksum line a body (everything before it) needs: "checksum fnv1a64 <16 hex>\n". */
void saved_file_checksum_line(const char *body, size_t size, char *buf, size_t buf_size);

/* The file helpers both state files use (this one and speeds.c's). Replace path with buf: temporary file
 * in the same directory, mode 0644, fsync, rename, fsync of the directory. 0 or -errno (logged). */
int state_file_replace(const char *path, const char *buf, size_t size);
/* Read path whole if it is a regular file (not a symlink, FIFO or device) owned by the daemon's user,
 * writable by nobody else, at most max_bytes (looked at before reading). 0 with *ret_buf (malloc'd),
 * -ENOENT, -EPERM (unsafe), -EBADMSG (too large) or another -errno, with *ret_error saying why. */
int state_file_load(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_size, char **ret_error);

/* The same checks on a buffer (the file's content); for tests and the fuzzer. */
int saved_file_parse(const char *buf, size_t size, uint64_t page_size, saved_entry **ret_entries, size_t *ret_n,
                     char **ret_error);

/* A directory fit for the state file: a directory owned by the daemon's user, writable by nobody else.
 * Creates it (mode 0755) when missing. 0 or -errno with *ret_error. */
int saved_dir_check(const char *dir, char **ret_error);

/* Print the entries for people, one per line ("global dirty_bytes: original dirty_ratio 20, written ..."). */
void saved_entries_print(const saved_entry *entries, size_t n, FILE *out);
