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
/* A cap never falls below what the device holds plus this much of it: its writers are paced down by
 * the kernel's control line instead of stopped at the limit until it has drained. (15 % was tried:
 * the slowed device's writer then waited about as long as with the kernel alone, but its backlog grew
 * for 2-5 s more and the innocent writers got half as much.) */
#define GUARD_CAP_HEADROOM_PERCENT 2

/* A falling limit moves in steps of at least this much of itself (or straight to where it heads):
 * every write of dirty_bytes resets the kernel's rate limits and rewrites the device caps. */
#define GUARD_STEP_PERCENT 10

typedef struct guard_state {
        uint64_t limit_bytes;            /* the kernel's dirty threshold at the last change we saw */
        uint64_t limit_changed_usec;     /* when it changed (0: not seen yet) */
        uint64_t stepped_bytes;          /* the lower limit the guard let through last, to be written */
        uint64_t stepped_usec;           /* when: the time the kernel's limit starts falling from */
        uint64_t ceiling_bytes;          /* the first threshold seen: what the kernel alone allows */
        uint64_t clamps_total;           /* how often the guard held a knob */
        uint64_t held_bytes;             /* dirty_bytes as the guard held it last tick (0: not held) */
} guard_state;

/* Hold each wanted knob of d where writing the policy's value would stall writers:
 * - dirty_bytes stays above what is dirty and under writeback now plus the room the active
 *   uncapped devices need, keeps the freerun point (where throttling starts) above what is stuck
 *   plus GUARD_MARGIN_BYTES, and falls no faster than GUARD_FALL_KEEP_PER_S; never held above what
 *   the kernel alone allowed (the ceiling);
 * - dirty_background_bytes follows a held dirty_bytes (half of it, as the kernel's defaults);
 *   while a memory-limited cgroup writes, dirty_bytes stays at what the kernel alone allowed (that
 *   cgroup's limit is the global one's share of memory applied to its own);
 * - a device's max_bytes does not fall below its backlog plus GUARD_CAP_HEADROOM_PERCENT (the guard
 *   never raises a cap already in place above the policy's value, so it cannot ratchet up).
 * Each device's need_bytes is the room the policy sized it for. Fills policy_value/held/held_reason. */
void guard_apply(const sample *s, guard_state *st, decision *d);
