/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's reading of replies: checked against protocol.h, then rendered as text. Every string that
 * comes from the daemon is printed through escape_text(); no reply, however malformed, crashes these. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "ctl-common.h"
#include "protocol.h"

/* Check a reply's envelope and, when it says ok, its result against the verb's kind (protocol_result_kind()).
 * 0: ok, *ret_result (borrowed from reply) holds every field the kind requires, with the right types.
 * 1: the daemon answered with an error: its "error" and "errno" are strings (proto_str()).
 * -EPROTONOSUPPORT: the daemon speaks another protocol version; -EBADMSG: the reply is malformed.
 * Either way error says what, naming the field: "result.devices[2].knobs: an object expected, got 5". */
int ctl_check_reply(json_object *reply, protocol_kind kind, json_object **ret_result, char *error, size_t size);

/* How the renderers print: legend false leaves out the tables' header rows and the sentence saying a
 * table is empty (--no-legend); color puts warnings in colour (only on a terminal). Default: legend, no colour. */
void ctl_format_set_style(bool legend, bool color);

/* The renderers take checked results (they still never crash on others: 0 or -EBADMSG). */
/* status -> aligned "Key: value" lines, then the global tuning. */
int ctl_format_status(json_object *result, FILE *f);
/* devices -> one table row per BDI, widths from content. */
int ctl_format_devices(json_object *result, FILE *f);
/* One DEVICE object (show's "device") -> every field, one per line, then its tuning. */
int ctl_format_device(json_object *device, FILE *f);
/* show -> its device. */
int ctl_format_show(json_object *result, FILE *f);
/* explain -> the daemon's sentences, then the device's knobs and the global ones. */
int ctl_format_explain(json_object *result, FILE *f);
/* top -> header (global state, attribution), active devices, top dirtiers, most paused tasks.
 * max_rows bounds each task list (0 = all). */
int ctl_format_top(json_object *result, size_t max_rows, FILE *f);
/* history in CSV -> the CSV, each line escaped. */
int ctl_format_history_csv(json_object *result, FILE *f);
/* A status "attribution" object -> one line: "on (...)" or "off: reason" (not escaped yet). */
const char *ctl_format_attribution(json_object *attribution, char *buf, size_t size);

/* A tuning object ({"knobs": [knob object, ...]}) as a table: KNOB STATE ORIGINAL CURRENT DESIRED REASON,
 * then the knobs' notes. */
int ctl_format_tuning(json_object *tuning, FILE *f);

/* Compact per-BDI knobs for the KNOBS column: "max 100% strict 0", "min 1% max 256M (12.5%) strict 1". */
const char *ctl_format_knobs(json_object *knobs, char *buf, size_t size);
/* The bandwidth shown for a device everywhere (devices, show, top, wait): the one the policy takes for it,
 * its tuning's bw_estimate_bytes_per_s; 0 when unknown (or the device object has no tuning). */
uint64_t ctl_device_bw(json_object *device);
/* Seconds to write backlog_bytes at bw_bytes_per_s: 0 with nothing to write, -1 when bw is unknown (0). */
double ctl_clean_in_s(uint64_t backlog_bytes, uint64_t bw_bytes_per_s);

/* The same from a device's "tuning" object. */
const char *ctl_device_bw_source(json_object *tuning, char *buf, size_t size);

/* Seconds for people: "12.3s", "4min 5s", "2h 3min", "1d 2h". */
const char *ctl_format_duration(char *buf, size_t size, double s);

/* One reading of a device during `wbtunectl wait`. */
typedef struct ctl_wait_state {
        uint64_t dirty_bytes, writeback_bytes;
        uint64_t max_backlog_bytes;     /* the largest backlog seen so far: the bar's 100 % */
        uint64_t bw_bytes_per_s;        /* ctl_device_bw(): 0 unknown */
        double elapsed_s;
        bool syncing;                   /* the syncfs() of its mount points still runs */
        const char *state;              /* CTL_WAIT_* */
} ctl_wait_state;
#define CTL_WAIT_WRITING "writing"
#define CTL_WAIT_CLEAN   "clean"
#define CTL_WAIT_TIMEOUT "timeout"

/* How much of the largest backlog seen is written, in percent (100 with none). */
double ctl_wait_done_percent(const ctl_wait_state *w);
/* A line for people, without its newline, name (the device's, unescaped) escaped here:
 * "loop0 [#########...........]  45% 6.0M left (dirty 4.0M, writeback 2.0M) at 8.0M/s, clean in 0.8s".
 * bar: with the bar (a terminal), else without it. */
const char *ctl_format_wait_line(const ctl_wait_state *w, const char *name, bool bar, char *buf, size_t size);
/* The same for --json: {"device", "bdi", "state", "dirty_bytes", "writeback_bytes", "backlog_bytes",
 * "done_percent", "bw_estimate_bytes_per_s", "clean_in_s" (null when unknown), "elapsed_s", "syncing"}. */
json_object *ctl_wait_json(const ctl_wait_state *w, const char *name, const char *bdi);

/* history's CSV into gnuplot data, columns found by their names in the header row: seconds since the
 * first row, then in MiB dirty, writeback, threshold and, with device, bandwidth (MiB/s) and global
 * dirty, else the background threshold. Rows that do not parse are skipped. 0 with the rows written
 * in *ret_rows, -EBADMSG with error naming a missing column, -EIO on a write error. */
int ctl_plot_data(const char *csv, bool device, FILE *out, uint64_t *ret_rows, char *error, size_t size);
/* plot's -o NAME as gnuplot's "set output" gets it: gnuplot runs a name that starts with "|" as a command,
 * so that one is refused, and an empty one; a relative name becomes "./NAME", so nothing gnuplot reads
 * specially can lead it. 0 with a malloc'd path in *ret, or -EINVAL with *ret_why saying what is wrong. */
int ctl_plot_output(const char *name, char **ret, const char **ret_why);
