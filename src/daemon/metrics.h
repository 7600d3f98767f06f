/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus metrics: the daemon's state in the text exposition format 0.0.4, for `wbtunectl metrics`
 * and node_exporter's textfile collector. Rendered from the protocol's own objects (the status result
 * and each DEVICE with its tuning), so every metric is a protocol field under another name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "control.h"

/* The HTTP Content-Type of this text, for whoever serves it. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4"

/* The figures of one moment: copied out of the JSON objects, which can then be freed. */
typedef struct metrics_snapshot metrics_snapshot;

/* From a status result (see doc/protocol.md). 0 or -ENOMEM. */
int metrics_snapshot_new(json_object *status, metrics_snapshot **ret);
/* One DEVICE object, with its "tuning" (devices, show); in the order they should be listed. 0 or -ENOMEM. */
int metrics_snapshot_add_device(metrics_snapshot *s, json_object *device);
metrics_snapshot *metrics_snapshot_free(metrics_snapshot *s);

/* The metric families, in the order they are rendered. */
size_t metrics_family_count(void);
const char *metrics_family_name(size_t family);
/* A double as the format reads it (Go's ParseFloat): the fewest digits (15, else 17) that read back to
 * the same number; NaN, +Inf, -Inf. Integer fields are printed as integers, exactly. Returns buf. */
const char *metrics_format_double(double v, char *buf, size_t size);
/* Every family, in order. 0 or -EIO. */
int metrics_render(const metrics_snapshot *s, FILE *f);

/* The metrics verb's result: "text", the exposition in pieces of whole lines of about 64 KiB, streamed
 * (a machine with thousands of devices has megabytes of metrics). Takes s. 0 or -ENOMEM. */
int metrics_stream(metrics_snapshot *s, control_stream *ret);

/* Write s to path atomically: a temporary file in the same directory (named .NAME.XXXXXX, which
 * node_exporter does not read), mode 0644, renamed over path; the directory is opened once and must be
 * one nobody else can change (dir_open_private()). 0 (with *ret_st, the file's stat, if not NULL) or
 * -errno, with *ret_error saying why when the directory was refused (NULL otherwise). */
int metrics_write_file(const char *path, const metrics_snapshot *s, struct stat *ret_st, char **ret_error);

/* The daemon's textfile: written every interval; a failure is logged when it starts and when it ends,
 * not at every attempt. */
typedef struct metrics_textfile {
        char path[256];             /* the file last written or tried */
        uint64_t attempt_usec;      /* when (CLOCK_MONOTONIC); 0: never */
        bool written;               /* path holds our file: removed at stop, if it still is that file */
        uint64_t dev, ino, ctime_nsec, size;   /* the file written last: its inode, last change, size */
        int error;                  /* the failure logged, 0 if the last attempt worked */
} metrics_textfile;

/* Whether the file at path is due at now_usec: never tried, tried interval ago, or another path. */
bool metrics_textfile_due(const metrics_textfile *t, const char *path, uint64_t interval_usec, uint64_t now_usec);
/* Write s to path (see metrics_write_file()); returns what it returned. */
int metrics_textfile_write(metrics_textfile *t, const char *path, const metrics_snapshot *s, uint64_t now_usec);
/* Remove the file written (at stop, or when the configuration names another) while it is still the
 * file written (same inode, change time and size, in a directory that passes the same checks), and forget it. */
void metrics_textfile_remove(metrics_textfile *t);
