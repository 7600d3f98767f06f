/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tuning policy: a pure function of samples, config and its own carried state (no I/O). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "config.h"
#include "knobs.h"
#include "observe.h"

/* Where a device's speed comes from. */
typedef enum speed_source {
        SPEED_PRESUMED,            /* not measured: a guess, what it showed, or the kernel's estimate */
        SPEED_REMEMBERED,          /* measured in an earlier run or before idle time: the sample's prior */
        SPEED_MEASURED,            /* measured now, saturated, in this run */
} speed_source;

const char *speed_source_to_string(speed_source s);

typedef struct knob_decision {
        bool wanted;               /* false: the policy has no opinion; leave/restore the original */
        uint64_t value;            /* bytes, centisecs or 0/1: what is to be written (after the guard) */
        uint64_t policy_value;     /* what the policy asked for, before the guard held it */
        bool held;                 /* the guard held value away from policy_value */
        bool from_config;          /* the value is the admin's, from a [device] section */
        char reason[192];          /* for people: "bandwidth 8.1M/s x 2 s target" */
        char held_reason[160];     /* the guard's words: "held at 700M: 618M is dirty or under writeback now" */
} knob_decision;

/* Why the value to be written is what it is: the guard's words where it held it, else the policy's. */
static inline const char *knob_decision_reason(const knob_decision *k) {
        return k->held && k->held_reason[0] ? k->held_reason : k->reason;
}

typedef struct device_decision {
        char bdi[64];
        char name[64];             /* how an admin knows it ("loop0", "sda"), for messages */
        bool managed;              /* false: excluded by config (manage = no) or never active */
        bool active;               /* wrote or held dirty data recently */
        uint64_t bw_bytes_per_s;   /* the bandwidth estimate the policy used */
        uint64_t need_bytes;       /* the room it sized the device for: bandwidth x backlog target (active only) */
        uint64_t burst_bytes;      /* the most it completed at once lately beyond its steady pace (0: smooth) */
        bool capped;               /* the policy caps it strictly: its own limit holds it, not the global one */
        bool shielded;             /* the guard made it strict to shield its writers (guard_shield()) */
        speed_source bw_source;    /* where bw_bytes_per_s comes from */
        uint64_t remembered_age_s; /* SPEED_REMEMBERED: how old the measurement is */
        char left_alone[224];      /* why the policy leaves all its knobs alone (a stack's lower device), "" if not */
        knob_decision knobs[KNOB_DEVICE_COUNT];   /* index: knob - KNOB_DEVICE_FIRST */
} device_decision;

typedef struct decision {
        knob_decision global[_KNOB_GLOBAL_MAX];
        char caution[192];         /* why the limits and caps are left alone this tick, "" if they are not */
        device_decision *devices;  /* same order as the sample's devices */
        size_t n_devices;
} decision;

/* Bytes written over time, both decayed so recent ticks count most. */
typedef struct rate_sum {
        double bytes, usec;
} rate_sum;

/* What the policy remembers between ticks, per device and globally. Owned by the caller. */
typedef struct policy_device_state {
        char bdi[64];
        uint64_t bw_bytes_per_s;        /* smoothed estimate; 0 = unknown */
        uint64_t max_bytes;             /* last desired cap (for slew), 0 = none */
        bool strict;                    /* last desired strict_limit */
        bool over_cap;                  /* ... because it held more than its cap */
        bool unbounded_in_force;        /* ... because, freed before it was measured, its cap lies below the
                                         * freerun point of the limit in force (kept until it does not) */
        bool measured;                  /* bw_bytes_per_s comes from saturated time, not the kernel's guess */
        speed_source source;            /* measured now, or remembered (then seeded from the sample's prior) */
        uint64_t saturated_now_usec;    /* saturated time seen in this run: measured now from BW_TRUST_USEC on */
        bool was_saturated;             /* at the previous sample: a tick counts only if saturated at both ends */
        uint64_t saturated_usec;        /* when it was last seen saturated (0: never) */
        uint64_t active_ticks;          /* consecutive samples it was active in */
        rate_sum saturated;             /* written while saturated, and for how long */
        rate_sum saturated_fast;        /* the same over about a second, to see a slowdown early */
        uint64_t slow_since_usec;       /* since when the fast rate is a fraction of the slow one (0: not) */
        uint64_t slowed_usec;           /* when a slowdown was taken as the new speed, until the kernel's estimate agrees */
        rate_sum active;                /* written while active, and for how long */
        uint64_t shown_bytes_per_s;     /* the device has shown it writes at least this fast, 0 = not yet */
        uint64_t last_time_usec;        /* previous sample, for the written delta */
        uint64_t last_written_total;
        uint64_t wrote_usec;            /* when it last completed any writeback (0: never seen to) */
        bool filling;                   /* it was dirtied at FILL_RATE or faster in the last tick */
        bool quiet;                     /* not filling, holding less than BW_QUEUED (a presumed cap: a second after it filled) */
        uint64_t filled_usec;           /* when it was last filling (0: never) */
        bool presumed;                  /* its cap is the unmeasured guess, not from its speed */
        bool dirtied_seen;              /* it was seen dirtied since the daemon started watching it */
        double dirtied_window_bytes;    /* dirtied since dirtied_window_usec, toward a megabyte */
        uint64_t dirtied_window_usec;   /* when that count started (0: not yet) */
        uint64_t dirtied_mb_usec;       /* when a megabyte was last added within MIN_DIRTIED_USEC (0: never) */
        uint64_t stalled_since_usec;    /* since when it has pages under writeback and completes none (0: not) */
        double burst_bytes;             /* decayed maximum of what one tick completed beyond bw x tick */
} policy_device_state;

typedef struct policy_state {
        uint64_t dirty_bytes;            /* last desired global limit (for slew), 0 = none yet */
        bool fast_flush;                 /* the limit is tiny: the flusher wakes every second */
        uint64_t original_dirty_limit_bytes;  /* the kernel's limit before we changed anything */
        policy_device_state *devices;
        size_t n_devices;
} policy_state;

/* One tick of the policy: from the sample, the config and the previous state, fill *out and
 * update *state. Pure: no I/O, no clock (the sample's time_usec is "now"). 0 or -ENOMEM. */
int policy_decide(const sample *s, const config *c, policy_state *state, decision *out);

/* The tick while something is changing fast: a device of no known speed being written (half a second
 * at full speed frees or measures it), one that just appeared, a strict cap the guard holds above its
 * bound (its descent). */
#define POLICY_FAST_TICK_MS 100

/* POLICY_FAST_TICK_MS if the state after this tick's decision (after the guard) wants the next sample
 * soon, with the words for it in why (for people: "loop3: speed not known yet, being written"); 0 (the
 * configured tick) otherwise. Pure. */
uint64_t policy_fast_tick_ms(const sample *s, const policy_state *st, const decision *d, char *why, size_t why_size);

/* All minimums together, the ones the daemon does not set included, within this much of the limit:
 * __wb_calc_thresh() (mm/page-writeback.c) gives every wb thresh x (1 - the sum of all min ratios) x its
 * share, plus its own minimum; at 50 % a device without a minimum keeps at least half its share. */
#define MIN_BUDGET_PERCENT 50

/* Fit the wanted min_bytes of d (the devices of s, in order) to limit: the min ratios of devices the
 * daemon does not manage count as they are; then the active devices not held by a cap of their own (the
 * innocents) have theirs within MIN_BUDGET_PERCENT, the others (strict caps near their backlog, idle
 * devices' configured ones) share what that leaves, down to 0; minimums the guard holds (knob held) share
 * what hold_budget_percent leaves after all those. A FUSE device's counts at most its own max (the kernel's
 * 1 %, never raised). Scaled values say so in their reason. Pure. */
void decision_fit_minimums(decision *d, const sample *s, uint64_t limit, unsigned hold_budget_percent);
/* The minimums of the devices the daemon does not manage, their ratios as the kernel holds them, in bytes
 * of limit: what every fit of the others' minimums must leave them. */
uint64_t decision_unmanaged_minimums(const decision *d, const sample *s, uint64_t limit);

/* Where a device's cap comes from this tick (policy_choose_cap()). */
typedef enum cap_source {
        CAP_SOURCE_NONE,                /* no opinion: no cap */
        CAP_SOURCE_LOWER,               /* the lower device of a stack: its knobs left alone */
        CAP_SOURCE_REMEMBERED,          /* idle, known slow from before: a strict cap before its first write */
        CAP_SOURCE_REMEMBERED_LEFTOVER, /* ... the same over a backlog nobody adds to (any cap it had forgotten) */
        CAP_SOURCE_KEPT,                /* idle: the cap it had, from a measured speed */
        CAP_SOURCE_FIRST_BOUND,         /* idle or a leftover, speed unknown: its first bound */
        CAP_SOURCE_MEASURED,            /* its measured (or remembered) speed x target */
        CAP_SOURCE_PRESUMED,            /* written, speed unknown: presumed slow, its first bound */
        CAP_SOURCE_EARLY,               /* half a second at full speed freed it from the first bound */
        CAP_SOURCE_SHOWN,               /* not measured, but it writes faster than the first bound allows */
        CAP_SOURCE_CONFIGURED,          /* max_bytes of its [device] section, lower than the rest */
} cap_source;

typedef struct cap_choice {
        cap_source source;
        uint64_t cap;                   /* before the release near the limit, the slew and the hysteresis */
        bool presumed;                  /* still presumed slow (CAP_SOURCE_PRESUMED, or configured lower) */
        bool first_bound_cut;           /* the first bound is half the limit in force, cut from more: not strict */
        char why[192];                  /* the first bound's words, if one was sized (a reason's size) */
} cap_choice;

/* Where device d's cap comes from, and its size before shaping, from the sample, its [device] section
 * (dc, NULL if none), the config, its carried state and the limit the policy heads for. Pure. */
void policy_choose_cap(const sample *s, const bdi_device *d, const device_config *dc, const config *c,
                       const policy_device_state *ds, uint64_t limit, cap_choice *ret);

void decision_done(decision *d);
void policy_state_done(policy_state *s);
