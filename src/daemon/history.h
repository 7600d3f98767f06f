/* SPDX-License-Identifier: GPL-2.0-or-later */
/* History: fixed rings of per-tick global and per-device figures for the last N minutes, as JSON or CSV. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "control.h"
#include "observe.h"

#define HISTORY_MINUTES_DEFAULT 15
#define HISTORY_DEVICES_MAX 256       /* devices tracked at once; more are counted, not kept */

/* One tick of the global figures: 48 bytes. The wall clock is kept here only: a device's point finds it
 * through its tick number. */
typedef struct history_global {
        uint64_t time_usec;
        uint64_t realtime_usec;          /* the wall clock of that tick (sample.realtime_usec) */
        uint64_t dirty_bytes, writeback_bytes;
        uint64_t dirty_thresh_bytes, background_thresh_bytes;
} history_global;

/* One tick of one device: 64 bytes, so 3.75 KiB per device per minute at 1 s ticks
 * (60000 / tick_ms x 64 bytes), 56 KiB per device for the default 15 minutes. */
typedef struct history_point {
        uint64_t time_usec;
        uint64_t dirty_bytes, writeback_bytes, thresh_bytes;
        uint64_t write_bw_bytes_per_s, dirty_rate_bytes_per_s;
        uint64_t max_bytes;              /* the max_bytes knob, 0 if the kernel has none */
        uint64_t seq;                    /* tick number, matches the global entry of the same tick */
} history_point;

typedef struct history history;

/* The rings may hold at most this much with all HISTORY_DEVICES_MAX devices: 15 minutes of 100 ms
 * ticks would otherwise take 147 MB. */
#define HISTORY_MEMORY_MAX ((size_t) 32 << 20)

/* Entries per ring for `minutes` of `tick_ms` ticks (at least 1), at most what HISTORY_MEMORY_MAX allows;
 * *ret_capped (may be NULL) tells whether that cap shortened it. */
size_t history_capacity(uint64_t minutes, uint64_t tick_ms, bool *ret_capped);

/* capacity: ticks kept (history_capacity()). Rings are allocated once each: the global one here,
 * a device's when it first appears. NULL on capacity 0 or out of memory. */
history *history_new(size_t capacity);
history *history_free(history *h);

/* Append one tick. A device absent for longer than the window loses its ring.
 * 0, or -ENOMEM for a new device's ring (the tick is still recorded for the others). */
int history_add(history *h, const sample *s);

/* Entries currently held: global ring, and one device's (0 if unknown). */
size_t history_size(const history *h);
size_t history_device_size(const history *h, const char *bdi);
size_t history_n_devices(const history *h);
/* Bytes allocated right now (rings and tables). */
size_t history_memory_bytes(const history *h);

/* status's "history": {"minutes", "ticks", "devices", "memory_bytes"}; h NULL when none is kept. */
json_object *history_status_json(const history *h, uint64_t minutes);

/* The history result, columnar, oldest first (protocol.h's PK_HISTORY):
 * {"capacity", "global": {"realtime_usec": [...], "time_usec": [...], "dirty_bytes": [...], ...},
 *  "devices": {"<bdi>": {"realtime_usec": [...], "time_usec": [...], "dirty_bytes": [...], ...}, ...}}
 * Adds "capacity" and "global" to head and streams "devices": the devices with samples in the window
 * now (bdi NULL: every one; else only that one), each sent as its ring is when its turn comes. h must
 * outlive the stream. 0, -ENOENT if bdi has no history, -ENOMEM. */
int history_json_stream(const history *h, const char *bdi, json_object *head, control_stream *ret);
/* The same built at once; NULL if bdi has no history. */
json_object *history_to_json(const history *h, const char *bdi);

/* CSV with a header row of protocol.h's column names, oldest first; the global columns, then the
 * device's when bdi is not NULL. -ENOENT if bdi has no history, -EIO on a write error. */
int history_to_csv(const history *h, const char *bdi, FILE *f);
