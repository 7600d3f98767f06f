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

/* A tuning "knobs" object ({"max_bytes": {"original","current","desired","reason"}, ...}) as a table. */
int ctl_format_tuning(json_object *knobs, FILE *f);

/* Compact per-BDI knobs for the KNOBS column: "max 100% strict 0", "min 1% max 256M (12.5%) strict 1". */
const char *ctl_format_knobs(json_object *knobs, char *buf, size_t size);
/* The bandwidth the table shows: the first non-zero of wb_bw, kernel_bw, write_bw (bytes/s). */
unsigned long long ctl_device_bw(json_object *device);
