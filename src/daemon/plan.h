/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The write plan: from the knobs as they are, what is wanted and what the daemon owns, the ordered
 * list of knob writes. Pure: no I/O, no clock, no logging; actuate.c runs or prints a plan. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knobs.h"

/* One knob as the kernel has it now. */
typedef struct knob_now {
        bool readable;                  /* false: not read (no work for it), or the read failed */
        bool has[_KNOB_FORM_MAX];       /* which of its files this kernel has */
        uint64_t value;                 /* its own file, in its unit (0 if the kernel has no such file) */
        knob_setting setting;           /* what the kernel holds, in the form that carries it */
} knob_now;

/* What the daemon knows of one knob it may write. */
typedef struct knob_owner {
        bool saved;                     /* original recorded before the first write */
        knob_setting original;
        bool written;                   /* changed by us and not restored */
        knob_setting ours;              /* what it read back as after our last write */
        bool overridden;                /* someone else changed it after our write: left alone */
        knob_setting theirs;            /* their value, when overridden */
        int refused;                    /* -errno of a write the kernel refuses for good (EROFS, EACCES, EPERM) */
        int failed;                     /* -errno of the last failed write (back-off), 0 after a success */
        uint64_t failed_usec;           /* when */
        bool pending;                   /* for the saved file: a write about to be made */
        knob_setting pending_setting;
        bool seen;                      /* read at the end of the last run (ours if we wrote it) */
        knob_setting seen_setting;      /* a change from it we did not make is someone else's */
} knob_owner;

typedef enum target_kind {
        TARGET_NONE,                    /* leave it */
        TARGET_VALUE,                   /* write value (in the knob's own unit) */
        TARGET_RESTORE,                 /* write the saved original back */
} target_kind;

typedef struct knob_target {
        target_kind kind;
        uint64_t value;
        const char *reason;             /* for the log: borrowed from the decision */
} knob_target;

typedef struct plan_device {
        const char *bdi;
        knob_now now[KNOB_DEVICE_COUNT];
        const knob_owner *owner;        /* [KNOB_DEVICE_COUNT], NULL if never touched */
        knob_target target[KNOB_DEVICE_COUNT];
        bool bound_of_kernel_limit;     /* its max below 100 % was set against the kernel's own limit (FUSE's 1 %,
                                         * or set before a limit of ours took over): its bytes are of that limit */
} plan_device;

typedef struct plan_input {
        uint64_t page_size;
        uint64_t thresh_pages;          /* the global dirty threshold now, /proc/vmstat nr_dirty_threshold */
        uint64_t bg_thresh_pages;       /* nr_dirty_background_threshold */
        uint64_t dirtyable_bytes;       /* to predict the threshold of a ratio-mode write (MemAvailable) */
        knob_now global_now[_KNOB_GLOBAL_MAX];
        const knob_owner *global_owner; /* [_KNOB_GLOBAL_MAX] */
        knob_target global_target[_KNOB_GLOBAL_MAX];
        plan_device *devices;
        size_t n_devices;
        uint64_t others_min_ppm;        /* min ratios of the devices not in the plan: they count toward 100 % */
        bool global_limit_unwritable;   /* vm.dirty_bytes refuses our writes (read-only /proc/sys/vm, an LSM):
                                         * the limit the device bytes are ratios of is not ours to set */
        bool devices_as_ratio;          /* write min/max in their *_ratio_fine, as ratios of thresh_pages: the
                                         * devices of a limit about to fall, written before it falls */
        bool keep_own_bounds;           /* a max below 100 % the kernel or an admin set (FUSE's 1 %) keeps the bytes
                                         * the kernel's own limit gives it while the limit in force is ours (a tick;
                                         * not a restore) */
} plan_input;

typedef struct plan_op {
        size_t device;                  /* index into the input's devices; SIZE_MAX: global */
        knob_id knob;
        knob_form form;                 /* which file is written */
        uint64_t value;                 /* in that file's unit */
        bool restore;                   /* the saved original */
        size_t needs;                   /* index of an op that must have been written first, SIZE_MAX: none */
        knob_setting old;               /* what the kernel held */
        uint64_t old_value;             /* its own file before the write (bytes of a share of the limit) */
        knob_setting expect;            /* what it should hold afterwards (predicted for the *_bytes forms) */
        uint64_t readback_tolerance;    /* the own file may read back this far from value */
        uint64_t for_limit_bytes;       /* a ratio written for the limit about to be in force (0: the one now) */
        const char *reason;
} plan_op;
#define PLAN_GLOBAL SIZE_MAX

typedef enum plan_note_kind {
        PLAN_NOTE_OVERRIDDEN,           /* the knob is not what we wrote: someone changed it */
        PLAN_NOTE_MIN_SCALED,           /* the devices' min_bytes were shrunk to fit under 100 % */
        PLAN_NOTE_UNSUPPORTED,          /* wanted, but this kernel has no file for it */
        PLAN_NOTE_DEVICES_DROPPED,      /* the global limit cannot be written and moves by itself: no device value */
} plan_note_kind;

typedef struct plan_note {
        plan_note_kind kind;
        size_t device;                  /* PLAN_GLOBAL for a global knob */
        knob_id knob;
        knob_setting setting;           /* OVERRIDDEN: what the kernel holds now */
} plan_note;

typedef struct plan {
        plan_op *ops;
        size_t n_ops;
        plan_note *notes;
        size_t n_notes;
        uint64_t thresh_pages_after;    /* the predicted dirty threshold once the global writes are done */
} plan;

/* What to do with a knob: wanted -> its value; changed by us and no longer wanted (or restore_all) ->
 * the original; left alone when someone else set it or the kernel refuses writes. */
knob_target plan_target(bool wanted, uint64_t value, const char *reason, const knob_owner *owner, bool restore_all);

typedef enum plan_part {
        PLAN_GLOBALS = 1 << 0,
        PLAN_DEVICES = 1 << 1,
        PLAN_ALL = PLAN_GLOBALS | PLAN_DEVICES,
} plan_part;

/* Build the ordered writes. Globals first (the device bytes are ratios of the global limit: a runner
 * lowering the limit first writes the devices with devices_as_ratio for the limit it falls to), then
 * devices lowering their min before those raising it; in a device strict_limit=0 first, min/max so
 * that min <= max holds after each write, strict_limit=1 last and only after its max_bytes.
 * 0 or -ENOMEM. */
int plan_build(const plan_input *in, plan *ret);
/* Only some parts. PLAN_DEVICES alone plans against in->thresh_pages as it is, so a runner that has
 * done the global writes (or failed to) plans the devices against the limit really in force. */
int plan_build_part(const plan_input *in, unsigned parts, plan *ret);
void plan_done(plan *p);

/* With the global limit unwritable, are the other knobs (the devices' above all) safe alone? Only while
 * the kernel holds the limit in bytes: in ratio mode it follows memory, and every *_bytes we write (stored
 * as a ratio of it) drifts with it, between two writes of a pair too (6.12: EINVAL on a max_bytes below
 * the min just written). Unsafe: the plan drops every value and puts back what we wrote. */
bool plan_devices_alone_safe(const plan_input *in);

/* A device's min_bytes or max_bytes about to be written, fitted to its partner as the kernel holds it now
 * (partner_ppm, against thresh_pages read just before the write): a min is lowered to the max, a max is
 * raised to the min, so the write is never refused whatever the limit did since the plan was made. */
uint64_t plan_fit_pair(knob_id k, uint64_t value, uint64_t partner_ppm, uint64_t thresh_pages, uint64_t page_size);

/* Was this knob changed by someone else: since our last write (now vs what we read back), or, for
 * one we never wrote, since the end of our last run (now vs owner->seen_setting)? */
bool plan_overridden(const knob_now *now, const knob_owner *owner);
