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
/* The same from a device's "tuning" object. */
const char *ctl_device_bw_source(json_object *tuning, char *buf, size_t size);

/* Seconds for people: "12.3s", "4min 5s", "2h 3min", "1d 2h". */
const char *ctl_format_duration(char *buf, size_t size, double s);
