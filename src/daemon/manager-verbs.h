/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the manager's event loop (manager.c) and its control verbs (manager-verbs.c) share; daemon-internal. */
#pragma once

#include "manager.h"
#include "metrics.h"

/* manager.c: what the daemon does now: "dry-run", "auto" only while it really writes knobs, or "observe". */
const char *manager_mode(const manager *m);
/* manager-verbs.c: the metrics of this moment, status and every device with its tuning, as the verbs show
 * them (the metrics verb and the metrics_textfile). 0 or -ENOMEM. */
int manager_metrics(manager *m, metrics_snapshot **ret);
