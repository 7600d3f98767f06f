/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Actuation: the only code that writes knobs. Each call takes a snapshot of the knobs, builds a plan
 * (plan.c, pure) and runs it: save originals first, write, read back, back off, log. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "knobs.h"
#include "observe.h"
#include "plan.h"
#include "policy.h"

/* A knob whose write failed is not retried for this long. */
#define ACTUATOR_BACKOFF_USEC (60ULL * 1000000ULL)

/* How knob files are read and written. read: fill buf with the file's content (NUL-terminated);
 * write: write value in one go; writable: 0 if a write may work, else -EROFS/-EACCES/...; all 0 or
 * -errno. NULL members mean the real files. */
typedef struct knob_io {
        int (*read)(void *userdata, const char *path, char *buf, size_t size);
        int (*write)(void *userdata, const char *path, const char *value);
        int (*writable)(void *userdata, const char *path);
        void *userdata;
} knob_io;

typedef struct actuator actuator;

/* root: NULL/"" for the live system, else a prefix for /proc and /sys. saved_path: the state file
 * (in a directory saved_dir_check() accepts). io: NULL for real files. 0 or -errno. */
int actuator_new(const char *root, const char *saved_path, const knob_io *io, actuator **ret);
/* Frees without restoring: call actuator_restore_all() first. Returns NULL. */
actuator *actuator_free(actuator *a);

/* Put back what a crashed run left changed, from the saved file. Knobs someone changed since are left
 * as they are. 1 if there was a file (restored), 0 if none; -EPERM (unsafe file) or -EBADMSG (bad
 * version, checksum or content): nothing is restored, *ret_error says why; other -errno. */
int actuator_recover(actuator *a, char **ret_error);

/* Bring the knobs to the decision: wanted knobs to their value, those we changed and no longer want
 * back to their original; devices that left the decision are restored (or forgotten if gone). Knobs
 * someone else changed since our write are left alone from then on. s gives the time (for back-off)
 * and the min ratios of the devices not in the decision. 0 or the first -errno. */
int actuator_apply(actuator *a, const sample *s, const decision *d);

/* Print the writes actuator_apply() would make, in order, without writing anything. */
int actuator_plan(actuator *a, const sample *s, const decision *d, FILE *out);

/* Give a device back its original knobs (or forget it if it vanished). 0 or -errno. */
int actuator_restore_device(actuator *a, const char *bdi);
/* Restore every knob we changed (those someone else changed since are left). The saved file is
 * removed, or keeps what failed. Tries everything, returns the first error. */
int actuator_restore_all(actuator *a);

/* Hand the knobs someone else set back to the daemon; what they set becomes the original restored at
 * stop. Returns how many. */
size_t actuator_release_overrides(actuator *a);

/* What the daemon knows of a knob (bdi NULL for global ones); NULL if it never touched it. */
const knob_owner *actuator_owner(const actuator *a, const char *bdi, knob_id k);
/* Whether the actuator has changed anything that is not restored yet. */
bool actuator_dirty(const actuator *a);
/* A global knob the kernel will not let us write (read-only /proc/sys, a container): tuning must stop. */
bool actuator_refused(const actuator *a, knob_id *ret_knob, int *ret_error);

/* vm.dirty_bytes is refused, but the kernel holds the limit in bytes: the device knobs alone are safe and
 * still written (the last apply's plan said so). */
bool actuator_devices_alone(const actuator *a);
/* The dirty limit in force is ours: vm.dirty_bytes written by us, not changed by anyone since, not refused. */
bool actuator_limit_ours(const actuator *a);

typedef struct actuator_stats {
        uint64_t writes_total;          /* knob files written since start */
        uint64_t writes_last_minute;
        uint64_t overrides_total;       /* knobs found changed by someone else */
        uint64_t failures_total;        /* writes the kernel refused */
} actuator_stats;
void actuator_get_stats(const actuator *a, uint64_t now_usec, actuator_stats *ret);

