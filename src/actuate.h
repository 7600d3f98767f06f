/* Actuation: the only code that writes knobs. Saves originals first, writes in the order the kernel needs, restores. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "observe.h"
#include "policy.h"

#define ACTUATOR_DEFAULT_SAVED_PATH "/run/wbtuned/saved"
/* A knob whose write failed is not retried for this long (unless the wanted value changes). */
#define ACTUATOR_BACKOFF_USEC (60ULL * 1000000ULL)

/* How knob files are read and written. read: fill buf with the file's content (NUL-terminated),
 * write: write value in one go; both 0 or -errno. NULL members mean the real files. */
typedef struct knob_io {
        int (*read)(void *userdata, const char *path, char *buf, size_t size);
        int (*write)(void *userdata, const char *path, const char *value);
        void *userdata;
} knob_io;

typedef struct actuator actuator;

/* root: NULL/"" for the live system, else a prefix for /proc/sys/vm and /sys/class/bdi.
 * saved_path: NULL for ACTUATOR_DEFAULT_SAVED_PATH. io: NULL for real files. 0 or -errno. */
int actuator_new(const char *root, const char *saved_path, const knob_io *io, actuator **ret);
/* Frees without restoring: call actuator_restore_all() first. Returns NULL. */
actuator *actuator_free(actuator *a);

/* If a saved file from a crashed run exists, restore every knob it lists and remove it.
 * 1 if there was one (and all of it was restored), 0 if none, -errno on the first failure. */
int actuator_recover(actuator *a);

/* Bring the knobs to the decision: wanted knobs to their value, unwanted ones that were changed
 * back to their original; devices that left the decision are restored (or forgotten if gone).
 * s gives the time (for back-off) and the other devices' min ratios. 0 or the first -errno. */
int actuator_apply(actuator *a, const sample *s, const decision *d);

/* Print the writes actuator_apply() would make, in order, without writing anything. */
int actuator_plan(const actuator *a, const sample *s, const decision *d, FILE *out);

/* Give a device back its original knobs (or forget it if it vanished). 0 or -errno. */
int actuator_restore_device(actuator *a, const char *bdi);
/* Restore every knob ever changed; the saved file is removed (kept with what failed, if
 * something failed). Tries everything, returns the first error. */
int actuator_restore_all(actuator *a);

/* The saved original of a knob as text: "ratio 20", "400M", "500", "1000000 ppm", "0".
 * bdi NULL for global knobs. false if the knob was never saved. */
bool actuator_original(const actuator *a, const char *bdi, knob_id k, char *buf, size_t size);

/* The same as the file it was saved from, for the protocol's knob object: "dirty_ratio" 20 "percent",
 * "max_ratio_fine" 1000000 "ppm", "dirty_bytes" 419430400 "bytes". false if the knob was never saved. */
bool actuator_original_value(const actuator *a, const char *bdi, knob_id k, const char **ret_file,
                             uint64_t *ret_value, const char **ret_unit);

/* Whether the actuator has changed anything that is not restored yet. */
bool actuator_dirty(const actuator *a);
