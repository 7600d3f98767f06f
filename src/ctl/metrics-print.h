/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl metrics: printing the metrics verb's result, rendered by the daemon (src/daemon/metrics.h). */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

/* Client side: a metrics result's "text" pieces in order into f, exactly as sent (for promtool, a pipe
 * or a file), or escaped as every terminal output is (control characters as \xNN) when for_terminal.
 * 0, -EBADMSG (no "text" array of strings) or -EIO. */
int metrics_print_result(json_object *result, bool for_terminal, FILE *f);
