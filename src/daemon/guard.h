/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The safety guard between the policy and the knobs: whatever the policy wants, no write may push
 * writers into a stall the kernel alone would not cause. Pure: the sample is "now". */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "observe.h"
#include "policy.h"

/* The kernel lowers its own hard limit by 1/32 of the gap every 200 ms (update_dirty_limit() in
 * mm/page-writeback.c): 85.3 % of a gap is left after one second. The guard lets a limit fall no
 * faster, per second of time, whatever the tick. */
#define GUARD_FALL_KEEP_PER_S 0.853
/* Dirty memory left below the freerun point for writers on devices that are idle now. */
#define GUARD_MARGIN_BYTES (64ULL << 20)
/* A cap that is not strict never falls below what the device holds plus this much of it: above the
 * global freerun point its writers are paced by the kernel's control line, with its 1/4 floor. */
#define GUARD_CAP_HEADROOM_PERCENT 2
/* A strict device's writers are stopped at its threshold, min(max_bytes, min_bytes + its share of the
 * pool) (pos_ratio 0, no 1/4 floor), and paced between its setpoint and that threshold: the setpoint is
 * (threshold + its background share) / 2, 3/4 of it with background at half the limit, and
 * wb_position_ratio()'s cubic gives about half the rate limit at 95 %. A strict hold keeps the cap this
 * much above what the device holds: its writers are paced below the device's speed, never stopped, the
 * backlog comes down and the cap follows it (measured: a cap held below the backlog stopped the writer of
 * a bursty 8 MB/s device for 4.2 s; one held at its freerun point let the writer keep pace with the device). */
#define GUARD_STRICT_HEADROOM_PERCENT 5
/* ... and at least this much above it, and what the device completes at once (device_decision's
 * burst_bytes): the kernel's batches (4M writeback chunks) move a small backlog by more than 5 %. */
#define GUARD_STRICT_HEADROOM_MIN_BYTES (1ULL << 20)
/* A strict device holding more than this much of its drain above its threshold would stop its writers for
 * about that long: it is left not strict while it drains. */
#define GUARD_STRICT_BLOCK_MS 1000
/* The drain assumed for a device of no known speed (the policy's own floor). */
#define GUARD_DRAIN_FLOOR_BYTES_PER_S (1ULL << 20)
/* The guard's strict holds have their minimums within this much of the limit it lets through, after all
 * other minimums (the innocents' first, all those within MIN_BUDGET_PERCENT): a hold's minimum covers pages
 * already in the pool. __wb_calc_thresh() (mm/page-writeback.c) scales every other wb's share by 1 - the
 * sum of min ratios, but those pages take that room from the global limit anyway, and the guard keeps the
 * freerun point above them (GUARD_MARGIN_BYTES), so the others below it are not throttled at all. Without
 * it the held device's threshold, min(max, min + share), falls below its backlog and its writers stop
 * (pos_ratio 0) instead of coming down paced. The kernel refuses a sum of 100 %. */
#define GUARD_HOLD_BUDGET_PERCENT 90
/* The shield for the innocent: when what is stuck on capped devices plus the room the active uncapped
 * ones are sized for does not fit in the limit let through (a device that slowed holds most of a pinned
 * pool), those writing are made strict with a cap (and min_bytes) sharing this much of what the stuck
 * data leaves: a strict wb below its own freerun point (3/4 of its threshold) is not throttled at all,
 * however full the pool (domain_dirty_freerun() looks only at its own counters), and the global dirty
 * stays below the limit, so the stuck device's writers are paced, not stopped. */
#define GUARD_SHIELD_ROOM_PERCENT 85
/* ... only for a cap at least this large (a smaller one would throttle the innocent more than the pool) */
#define GUARD_SHIELD_MIN_BYTES (16ULL << 20)
/* ... once on, it stays on until the pool holds both with this much to spare */
#define GUARD_SHIELD_OFF_PERCENT 90
/* ... and only while something is stuck beyond every active device's own room (bandwidth x backlog target,
 * capped devices too): at least this much of the limit to switch on, half of it to stay. Fast devices
 * that together want more than the limit are the kernel's to share (by their completions); strict equal
 * shares of it only throttle whichever has a burst (multi's randrw: 2.9 s against 0.9 s), and a fast
 * device made strict at its need is not in anyone's way. */
#define GUARD_SHIELD_STUCK_PERCENT 20

/* A limit on the way down keeps its freerun point above what is dirty plus what was dirtied per second at
 * most over this long: a writer paused for one tick dirties nothing in it, and the limit that fell for that
 * throttled it on its next write (start-a: 2.7G -> 2.1G in one tick with 1.5G stuck, the innocent's p99
 * 202 ms against the kernel's 6 ms). */
#define GUARD_DIRTYING_HOLD_USEC 1000000ULL
/* Ticks whose dirtying rate is kept for that: a second of the shortest tick (100 ms), twice over. */
#define GUARD_DIRTYING_SAMPLES 20

/* Strict holds the guard remembers at once (each may rise when it begins, never after). */
#define GUARD_DEVICES_MAX 64

/* A falling limit moves in steps of at least this much of itself (or straight to where it heads):
 * every write of dirty_bytes resets the kernel's rate limits and rewrites the device caps. */
#define GUARD_STEP_PERCENT 10

typedef struct guard_hold {
        char bdi[64];                    /* "" : a free slot */
        uint64_t cap_bytes;              /* the strict cap held last tick */
} guard_hold;    /* ends when the device leaves the sample, is excluded, or a new one comes under its bdi */

typedef struct guard_rate_sample {
        uint64_t usec;                   /* the tick's time (0: an empty slot) */
        uint64_t bytes_per_s;            /* what all devices dirtied per second then */
} guard_rate_sample;

typedef struct guard_state {
        uint64_t limit_bytes;            /* the kernel's dirty threshold at the last change we saw */
        uint64_t limit_changed_usec;     /* when it changed (0: not seen yet) */
        uint64_t stepped_bytes;          /* the lower limit the guard let through last, to be written */
        uint64_t stepped_usec;           /* when: the time the kernel's limit starts falling from */
        uint64_t ceiling_bytes;          /* the first threshold seen: what the kernel alone allows */
        uint64_t clamps_total;           /* how often the guard held a knob */
        uint64_t held_bytes;             /* dirty_bytes as the guard held it last tick (0: not held) */
        bool shielding;                  /* the innocents were shielded last tick */
        guard_rate_sample dirtying[GUARD_DIRTYING_SAMPLES];   /* the last ticks' rates, a ring */
        size_t dirtying_next;            /* the ring's slot for the next tick */
        guard_hold holds[GUARD_DEVICES_MAX];   /* devices whose strict cap the guard holds */
} guard_state;

/* Hold each wanted knob of d where writing the policy's value would stall writers:
 * - dirty_bytes stays above what is dirty and under writeback now plus the room the active
 *   uncapped devices need, keeps the freerun point (where throttling starts) above what is stuck
 *   plus GUARD_MARGIN_BYTES, and falls no faster than GUARD_FALL_KEEP_PER_S; never held above what
 *   the kernel alone allowed (the ceiling);
 * - dirty_background_bytes follows a held dirty_bytes (half of it, as the kernel's defaults);
 *   while a memory-limited cgroup writes, dirty_bytes stays at what the kernel alone allowed (that
 *   cgroup's limit is the global one's share of memory applied to its own);
 * - a strict device holding more than its cap (plus bdi_device_batch_slack(), the kernel's batching) has max_bytes and min_bytes
 *   held GUARD_STRICT_HEADROOM_PERCENT above its backlog, following it down tick by tick until the policy's
 *   cap is reached; such a hold may rise above the cap in place when it begins, never after, so it cannot
 *   ratchet up. Where its minimum would not fit within
 *   GUARD_HOLD_BUDGET_PERCENT of the limit after all other minimums, the device is left not strict
 *   while it drains (as the kernel alone would pace it) instead of being stopped;
 * - the innocents are shielded (GUARD_SHIELD_ROOM_PERCENT) while the pool cannot hold both them and
 *   what is stuck, and GUARD_SHIELD_STUCK_PERCENT of it is beyond every active device's own room;
 * - any other device's max_bytes does not fall below its backlog plus GUARD_CAP_HEADROOM_PERCENT
 *   (the guard never raises a cap already in place above the policy's value).
 * Each device's need_bytes is the room the policy sized it for. Fills policy_value/held/held_reason. */
void guard_apply(const sample *s, guard_state *st, decision *d);
