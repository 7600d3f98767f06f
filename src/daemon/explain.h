/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tuning decisions for people and scripts: original, current and desired value of each knob, and why. */
#pragma once

#include <stdio.h>
#include <json-c/json.h>

#include "actuate.h"
#include "observe.h"
#include "policy.h"

/* The global knobs as protocol.h's tuning object: {"knobs": [knob object, ...]}; d and a may be NULL. */
json_object *explain_global_json(const sample *s, const decision *d, const actuator *a);
/* A device's as its device_tuning object: {"managed", "active", "bw_estimate_bytes_per_s", "knobs": [...]} */
json_object *explain_device_json(const sample *s, const bdi_device *dev, const device_decision *dd, const actuator *a);
/* The decision for one bdi, or NULL. */
const device_decision *explain_find_decision(const decision *d, const char *bdi);
/* The reasoning in sentences, for `wbtunectl explain DEV`. */
int explain_device_text(FILE *f, const sample *s, const decision *d, const bdi_device *dev,
                        const device_decision *dd, const actuator *a, bool writing, const char *writes_reason);
