/* wbtunectl's human output: control replies (JSON result objects) rendered as text. */
#pragma once

#include <stddef.h>
#include <stdio.h>
#include <json-c/json.h>

/* status result -> aligned "Key: value" lines. 0 or -EBADMSG if it is not a status object. */
int ctl_format_status(json_object *result, FILE *f);
/* devices result ({"devices":[...]}) -> one table row per BDI, widths from content. */
int ctl_format_devices(json_object *result, FILE *f);
/* One DEVICE object (show's "device") -> every field, one per line. */
int ctl_format_device(json_object *device, FILE *f);

/* top result -> header (global state, attribution), active devices, top dirtiers, most paused tasks.
 * max_rows bounds each task list (0 = all). 0 or -EBADMSG. */
int ctl_format_top(json_object *result, size_t max_rows, FILE *f);
/* A status "attribution" object -> one line: "on (...)" or "off: reason". */
const char *ctl_format_attribution(json_object *attribution, char *buf, size_t size);

/* A tuning "knobs" object ({"max_bytes": {"original","current","desired","reason"}, ...}) as a table. */
int ctl_format_tuning(json_object *knobs, FILE *f);

/* Compact per-BDI knobs for the KNOBS column: "max 100% strict 0", "min 1% max 256M (12.5%) strict 1". */
const char *ctl_format_knobs(json_object *knobs, char *buf, size_t size);
/* The bandwidth the table shows: the first non-zero of wb_bw, kernel_bw, write_bw (bytes/s). */
unsigned long long ctl_device_bw(json_object *device);
