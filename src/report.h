/* JSON views of samples for the control protocol; keys are the struct field names of observe.h. */
#pragma once

#include <json-c/json.h>
#include "observe.h"

json_object *report_vm_knobs(const vm_knobs *k);
json_object *report_bdi_knobs(const bdi_knobs *k);       /* only the knobs this kernel has */
json_object *report_global(const global_state *g);
json_object *report_device(const bdi_device *d);
json_object *report_devices(const sample *s);            /* array of report_device() */
/* {"time_usec", "debugfs", "global": report_global(), "devices": report_devices()} */
json_object *report_sample(const sample *s);
