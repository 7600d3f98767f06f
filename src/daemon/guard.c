/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The safety guard between the policy and the knobs: no write may stall writers the kernel alone would not. */
#include "guard.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#define LIMIT_CHANGED_PERCENT 1     /* smaller moves of the threshold are the kernel's own arithmetic */
#define GUARD_PAGE_BYTES 4096ULL

static void hold(knob_decision *k, uint64_t value, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void hold(knob_decision *k, uint64_t value, const char *format, ...) {
        va_list ap;

        k->value = value;
        k->held = true;
        va_start(ap, format);
        vsnprintf(k->held_reason, sizeof k->held_reason, format, ap);
        va_end(ap);
}

static bool near(uint64_t a, uint64_t b) {
        uint64_t band = MAX(a, b) / 100 * LIMIT_CHANGED_PERCENT;
        return a + band >= b && a <= b + band;
}

/* Follow the kernel's threshold: when it moved, since when (our own step counts from when we let it
 * through, a tick before it shows in the sample). */
static void track_limit(const sample *s, guard_state *st) {
        uint64_t now = s->global.dirty_thresh_bytes;

        if (st->limit_changed_usec == 0) {
                st->ceiling_bytes = now;
                st->limit_bytes = now;
                st->limit_changed_usec = s->time_usec;
                return;
        }
        if (!near(now, st->limit_bytes)) {
                st->limit_changed_usec = st->stepped_usec && near(now, st->stepped_bytes) ? st->stepped_usec
                                                                                           : s->time_usec;
                st->limit_bytes = now;
        }
        st->stepped_bytes = st->stepped_usec = 0;
}

/* The lowest limit the kernel's own smoothing would have reached by now, heading for target. */
static uint64_t fall_floor(const guard_state *st, uint64_t now_usec, uint64_t target) {
        double dt_s, keep;

        if (target >= st->limit_bytes)
                return target;
        dt_s = now_usec > st->limit_changed_usec ? (double) (now_usec - st->limit_changed_usec) / 1e6 : 0.0;
        keep = pow(GUARD_FALL_KEEP_PER_S, dt_s);
        return target + (uint64_t) ((double) (st->limit_bytes - target) * keep);
}

/* The most dirtied per second over the last GUARD_DIRTYING_HOLD_USEC, this tick's rate included (kept in
 * the ring). A rate from a time after now (a clock that went back) is not counted. */
static uint64_t dirtying_within_hold(guard_state *st, uint64_t now_usec, uint64_t bytes_per_s) {
        uint64_t most = bytes_per_s;

        st->dirtying[st->dirtying_next] = (guard_rate_sample) { .usec = now_usec, .bytes_per_s = bytes_per_s };
        st->dirtying_next = (st->dirtying_next + 1) % GUARD_DIRTYING_SAMPLES;
        for (size_t i = 0; i < GUARD_DIRTYING_SAMPLES; i++) {
                const guard_rate_sample *r = &st->dirtying[i];

                if (r->usec && r->usec <= now_usec && now_usec - r->usec <= GUARD_DIRTYING_HOLD_USEC)
                        most = MAX(most, r->bytes_per_s);
        }
        return most;
}

/* The lowest limit whose freerun point, with background at half of it (the guard holds it there), is
 * above bytes: writers below freerun are not throttled at all. */
static uint64_t limit_for_freerun(uint64_t bytes) {
        return bytes / 3 * 4 + 4 * GUARD_PAGE_BYTES;
}

/* What the active uncapped devices are sized to hold (need) is the limit's own business; the rest of what
 * is dirty and under writeback (capped devices, backlogs beyond their size, dirty data no device accounts
 * for) is stuck. */
/* ret_overfull: what is beyond every active device's own room, capped ones too (a fast device strict at its
 * need holds what it drains in a few seconds, not data stuck in everyone's way). */
static void pool_demand(const sample *s, const decision *d, uint64_t *ret_stuck, uint64_t *ret_need,
                        uint64_t *ret_overfull) {
        uint64_t inflight = s->global.dirty_bytes + s->global.writeback_bytes, expected = 0, need = 0, sized = 0;

        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++) {
                const device_decision *dd = &d->devices[i];
                const bdi_device *dev = &s->devices[i];

                if (!dd->managed || !dd->active || strcmp(dd->bdi, dev->bdi) != 0)
                        continue;
                sized += MIN(dev->backlog_bytes, dd->need_bytes);
                if (dd->capped)
                        continue;
                expected += MIN(dev->backlog_bytes, dd->need_bytes);
                need += dd->need_bytes;
        }
        *ret_stuck = inflight > expected ? inflight - expected : 0;
        *ret_need = need;
        if (ret_overfull)
                *ret_overfull = inflight > sized ? inflight - sized : 0;
}

static void guard_global(const sample *s, guard_state *st, decision *d) {
        knob_decision *kd = &d->global[KNOB_DIRTY_BYTES], *kb = &d->global[KNOB_DIRTY_BACKGROUND_BYTES];
        uint64_t inflight = s->global.dirty_bytes + s->global.writeback_bytes, need;
        uint64_t stuck, floor_stall, floor_freerun, floor, fall, ceiling, held, dirtying = 0, free_limit;
        unsigned fall_keep_percent;
        char a[16], b[16], c[16];

        if (!kd->wanted)
                return;
        pool_demand(s, d, &stuck, &need, NULL);
        floor_stall = stuck + need;
        /* freerun = (limit + background) / 2 with background = limit / 2 */
        floor_freerun = (stuck + GUARD_MARGIN_BYTES) / 3 * 4;
        /* an admin's pin is not raised for room: it only steps down (below) while more is dirty */
        floor = kd->from_config ? 0 : MAX(floor_stall, floor_freerun);
        ceiling = MAX(st->ceiling_bytes, s->global.dirty_thresh_bytes);
        /* a memory-limited cgroup's dirty limit is the global limit's share of memory applied to its
         * own (domain_dirty_limits()): lowering the global limit shrinks it in proportion */
        if (s->memcg.n_writing > 0)
                floor = ceiling;
        floor = MIN(floor, ceiling);
        for (size_t i = 0; i < s->n_devices; i++)
                dirtying += s->devices[i].dirty_rate_bytes_per_s;
        dirtying = dirtying_within_hold(st, s->time_usec, dirtying);
        /* the fall protects what is dirty and what its writers dirty within a second: a limit whose freerun
         * point is above that throttles nobody, and is written at once (as far as that point allows) */
        fall = fall_floor(st, s->time_usec, MAX(kd->value, floor));
        free_limit = limit_for_freerun(inflight + dirtying);
        if (free_limit < fall)
                fall = MAX(free_limit, MAX(kd->value, floor));
        /* a small step down is not worth a write: wait until the fall allows a real one */
        if (fall > MAX(kd->value, floor) && fall < st->limit_bytes &&
            fall + st->limit_bytes / 100 * GUARD_STEP_PERCENT > st->limit_bytes)
                fall = st->limit_bytes;
        held = MAX(kd->value, MAX(floor, fall));
        /* the threshold read back is the written value rounded by the kernel, and the floor moves with
         * every tick's counts: within 1 % of last tick's hold, or less than a step below it, hold the
         * same bytes (no rewrite); a floor less than two steps below it, as the step with room above a
         * floor would otherwise be undone by the floor's own jitter (onoff-a wrote dirty_bytes every
         * tick, 274M, 312M, 278M, 316M, and every device's cap was rescaled with it) */
        fall_keep_percent = held == floor && floor > kd->value ? 2 * GUARD_STEP_PERCENT : GUARD_STEP_PERCENT;
        if (held != kd->value && st->held_bytes && st->held_bytes >= floor &&
            (near(held, st->held_bytes) ||
             (held < st->held_bytes && held + st->held_bytes / 100 * fall_keep_percent > st->held_bytes)))
                held = MIN(st->held_bytes, ceiling);
        /* raised by a backlog still growing: a step with room, not a write every tick (start-a: the
         * disk's writer lifted the floor ~0.2 % a tick, and both global knobs were written 40 times) */
        else if (held == floor && floor > kd->value && st->held_bytes && floor > st->held_bytes)
                held = MIN(floor + floor / 100 * GUARD_STEP_PERCENT, ceiling);
        st->held_bytes = held != kd->value ? held : 0;
        if (held < st->limit_bytes) {
                st->stepped_bytes = held;
                st->stepped_usec = s->time_usec;
        }
        if (held == kd->value)
                return;
        if (s->memcg.n_writing > 0 && held == floor)
                hold(kd, held, "held at the kernel's own %s: %u memory-limited cgroup(s) write (%.40s, %s %s), "
                     "and their dirty limits are its share of their memory", format_bytes(a, sizeof a, held),
                     s->memcg.n_writing, s->memcg.example, s->memcg.smallest_limit_file,
                     format_bytes(b, sizeof b, s->memcg.smallest_limit_bytes));
        else if (held == fall && fall == free_limit && fall > floor)
                hold(kd, held, "held at %s: on the way down, its freerun point stays above the %s dirty or under "
                     "writeback now and the %s/s dirtied (the most within a second)", format_bytes(a, sizeof a, held),
                     format_bytes(b, sizeof b, inflight), format_bytes(c, sizeof c, dirtying));
        else if (held == fall && fall > floor)
                hold(kd, held, "held at %s: a limit falls no faster than the kernel lowers its own (%s now)",
                     format_bytes(a, sizeof a, held), format_bytes(b, sizeof b, s->global.dirty_thresh_bytes));
        else
                hold(kd, held, "held at %s: %s is dirty or under writeback now, %s of it on capped or overfull devices",
                     format_bytes(a, sizeof a, held), format_bytes(b, sizeof b, inflight), format_bytes(c, sizeof c, stuck));
        st->clamps_total++;
        /* keep the kernel's proportion: a background threshold far below a held limit lowers freerun */
        if (kb->wanted && kb->value < held / 2)
                hold(kb, held / 2, "half of the held dirty_bytes %s", format_bytes(a, sizeof a, held));
}

/* The strict hold remembered for bdi; with create, a free slot for it (NULL if none is left). */
static guard_hold *find_hold(guard_state *st, const char *bdi, bool create) {
        for (size_t i = 0; i < GUARD_DEVICES_MAX; i++)
                if (strcmp(st->holds[i].bdi, bdi) == 0)
                        return &st->holds[i];
        if (!create)
                return NULL;
        for (size_t i = 0; i < GUARD_DEVICES_MAX; i++)
                if (!st->holds[i].bdi[0]) {
                        snprintf(st->holds[i].bdi, sizeof st->holds[i].bdi, "%s", bdi);
                        st->holds[i].cap_bytes = 0;
                        return &st->holds[i];
                }
        return NULL;
}

static void forget_hold(guard_state *st, const char *bdi) {
        guard_hold *h = find_hold(st, bdi, false);

        if (h)
                *h = (guard_hold) {};
}

/* Holds of devices that left the sample (unplugged, failed), are no longer managed, or were replaced
 * under the same bdi (not seen before: a new device) end now: their slots are free, and nothing is
 * inherited by a device that comes under that bdi later. */
static void drop_gone_holds(const sample *s, const decision *d, guard_state *st) {
        for (size_t h = 0; h < GUARD_DEVICES_MAX; h++) {
                bool present = false;

                if (!st->holds[h].bdi[0])
                        continue;
                for (size_t i = 0; i < d->n_devices && i < s->n_devices && !present; i++)
                        present = strcmp(s->devices[i].bdi, st->holds[h].bdi) == 0 && s->devices[i].seen_before &&
                                  d->devices[i].managed && strcmp(d->devices[i].bdi, s->devices[i].bdi) == 0;
                if (!present)
                        st->holds[h] = (guard_hold) {};
        }
}

/* What a strict device drains in a second: the policy's estimate of its speed. */
static uint64_t strict_drain_per_s(const bdi_device *dev, const device_decision *dd) {
        (void) dev;  /* its per-tick rate comes in bursts (0, then 10x): the policy's estimate averages them */
        return MAX(dd->bw_bytes_per_s, GUARD_DRAIN_FLOOR_BYTES_PER_S);
}

/* How far above the backlog a strict hold keeps the cap: GUARD_STRICT_HEADROOM_PERCENT, at least
 * GUARD_STRICT_HEADROOM_MIN_BYTES, the error of the counters and what the device completes at once
 * (onoff-a: a loop device completing 8M once a second, held 2M above the backlog, stopped its writer
 * until each completion, 1.0 s at a time; the kernel alone let it run, 0.2 s). */
static uint64_t strict_headroom(const bdi_device *dev, const device_decision *dd) {
        return MAX(dev->backlog_bytes / 100 * GUARD_STRICT_HEADROOM_PERCENT,
                   MAX(MAX(GUARD_STRICT_HEADROOM_MIN_BYTES, 2 * dev->counter_error_bytes), dd->burst_bytes));
}

/* What the device drains in GUARD_STRICT_BLOCK_MS, at least the kernel's batching: a strict device this
 * far above its threshold stops its writers about that long. */
static uint64_t strict_block_bytes(const bdi_device *dev, const device_decision *dd) {
        return MAX(mul_div(strict_drain_per_s(dev, dd), GUARD_STRICT_BLOCK_MS, 1000), bdi_device_batch_slack(dev));
}

/* A strict cap below the backlog would stop the device's writers (pos_ratio 0) until it drained under it.
 * A hold keeps the cap (min_bytes equal) strict_headroom() above what the device holds instead: its writers
 * are paced in the top of the wb's control range, below the device's speed, the backlog comes down and
 * the cap follows it tick by tick to the policy's. Once begun, the hold never rises: a writer that
 * outran its device must not lift its own cap. */
static void guard_strict(const bdi_device *dev, device_decision *dd, guard_state *st) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kmin = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
        uint64_t ceiling = dev->backlog_bytes + strict_headroom(dev, dd), held;
        guard_hold *h = find_hold(st, dev->bdi, false);
        char a[16], b[16], c[16], d[16];

        /* a backlog within the kernel's batching of the cap is no oversized one */
        if (!h && kmax->value + bdi_device_batch_slack(dev) >= dev->backlog_bytes)
                return;
        /* down to the policy's cap, or within its batching below it (at most a quarter of it: the wb's
         * setpoint): the hold is over (not only once the headroom fits under the cap: headroom of 64 CPUs'
         * counter error, or of a device's completion bursts, can be more than a small cap, and a hold
         * would never end) */
        if (ceiling <= kmax->value || dev->backlog_bytes + MIN(bdi_device_batch_slack(dev), kmax->value / 4) <= kmax->value) {
                forget_hold(st, dev->bdi);
                return;
        }
        /* never below the policy's cap: a hold that ended there early would start again higher */
        held = MAX(h && h->cap_bytes ? MIN(h->cap_bytes, ceiling) : ceiling, kmax->value);
        /* a writer that outran the cap by more than a second's drain (a memory-speed writer before the
         * kernel's rate limit caught up) would wait that long: the cap rises to just above it, strict.
         * Left not strict instead, restart-a's writer ran free to 3G under a 4.6G limit. */
        if (dev->backlog_bytes > held + strict_block_bytes(dev, dd))
                held = ceiling;
        if (!h)
                h = find_hold(st, dev->bdi, true);
        if (!h) {
                /* no slot left to remember it by: a hold that cannot remember its cap would follow its
                 * writer up; not strict while it drains, paced by the kernel's control line */
                hold(kmax, ceiling, "held at %s above what the device holds, not strict: more than %d devices "
                     "are held at once", format_bytes(a, sizeof a, ceiling), GUARD_DEVICES_MAX);
                hold(&dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST], 0, "not strict while it drains: more than "
                     "%d devices are held at once", GUARD_DEVICES_MAX);
                if (kmin->wanted && !kmin->from_config)
                        hold(kmin, MIN(kmin->value, kmin->policy_value), "not strict: no minimum for its hold");
                st->clamps_total++;
                return;
        }
        h->cap_bytes = held;
        hold(kmax, held, "descent of an oversized backlog: held at %s, the device holds %s and drains %s/s; "
             "its writers are paced below that until it is down to %s",
             format_bytes(a, sizeof a, held), format_bytes(b, sizeof b, dev->backlog_bytes),
             format_bytes(c, sizeof c, strict_drain_per_s(dev, dd)), format_bytes(d, sizeof d, kmax->policy_value));
        /* its threshold is min_bytes plus its share of the pool, at most max_bytes: the minimum makes
         * the cap the threshold whatever the share (the policy's minimum of a strict device is its cap;
         * one from the config is the admin's). Equal, they fall together, the minimum never above. */
        if (kmin->wanted && !kmin->from_config)
                hold(kmin, held, "equal to its held strict cap %s", format_bytes(a, sizeof a, held));
        st->clamps_total++;
}

/* After the minimums were fitted: a strict hold whose minimum did not fit, not even enough to stay
 * clear of the backlog, cannot keep the threshold above it, and a strict device above its threshold
 * is stopped. Not strict while it drains, its writers are paced as with the kernel alone. */
static void guard_strict_fit(const bdi_device *dev, device_decision *dd, guard_state *st) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kmin = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];
        uint64_t block_bytes = strict_block_bytes(dev, dd);
        char a[16], b[16], c[16];

        if (!kmax->held || !find_hold(st, dev->bdi, false))
                return;
        if (dev->backlog_bytes > kmax->value + block_bytes)
                /* a cap that may not rise again, and a backlog that grew over a second's drain above it */
                hold(kstrict, 0, "not strict while it drains: it holds %s, more than a second's drain above its "
                     "held cap %s", format_bytes(a, sizeof a, dev->backlog_bytes), format_bytes(b, sizeof b, kmax->value));
        else if (kmin->held && kmin->value < kmax->value &&
                 dev->backlog_bytes > kmin->value + block_bytes)
                hold(kstrict, 0, "not strict while it drains: it holds %s, and the minimum %s that would keep a "
                     "strict cap above that does not fit in %d %% of the limit (%s does)",
                     format_bytes(a, sizeof a, dev->backlog_bytes), format_bytes(b, sizeof b, kmax->value),
                     GUARD_HOLD_BUDGET_PERCENT, format_bytes(c, sizeof c, kmin->value));
        else
                return;
        /* not strict, a minimum only reserves pool for it: back to what the policy wanted */
        kmin->value = MIN(kmin->value, kmin->policy_value);
        kmin->held = false;
}

static void guard_device(const bdi_device *dev, uint64_t thresh_bytes, device_decision *dd, guard_state *st) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        uint64_t floor, current, held;
        char a[16], b[16];

        /* a strict writer at or above its cap is stopped until the device drains (no 1/4 floor as on the
         * global line); a little above what it holds, it is paced down instead */
        floor = dev->backlog_bytes + dev->backlog_bytes / 100 * GUARD_CAP_HEADROOM_PERCENT;
        if (kmax->value >= floor)
                return;
        /* the cap in place, if any: the guard never raises a cap, it only keeps it from falling too far */
        if (!knob_reading_value(KNOB_MAX_BYTES, &dev->knobs.k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], thresh_bytes, &current))
                current = UINT64_MAX;
        held = MAX(kmax->value, MIN(current, floor));
        /* a cap already in place a little above that: leave it, a write for a few percent is not worth it */
        if (current != UINT64_MAX && current >= held && current - held <= held / 100 * GUARD_STEP_PERCENT)
                held = current;
        if (held == kmax->value)
                return;
        hold(kmax, held, "held at %s: the device holds %s; a cap at or near that would squeeze its writers "
             "until it drains, %d %% above it paces them down", format_bytes(a, sizeof a, held),
             format_bytes(b, sizeof b, dev->backlog_bytes), GUARD_CAP_HEADROOM_PERCENT);
        st->clamps_total++;
}

/* An innocent the shield may take over: managed, being written, not capped by the policy, none of its
 * knobs the admin's, not left alone (a stack's lower device). */
static bool shield_candidate(const device_decision *dd, const bdi_device *dev) {
        if (!dd->managed || !dd->active || dd->capped || !dd->need_bytes || dd->left_alone[0] ||
            strcmp(dd->bdi, dev->bdi) != 0)
                return false;
        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                if (dd->knobs[j].from_config)
                        return false;
        return true;
}

/* GUARD_SHIELD_*: while stuck + need does not fit in the limit let through and enough of it is overfull
 * (beyond every active device's own room), each innocent gets a strict
 * cap and an equal minimum: its share (by need) of GUARD_SHIELD_ROOM_PERCENT of what the stuck data
 * leaves, at most its need or the policy's cap. A cap within a step of the one in force is kept. */
static void guard_shield(const sample *s, guard_state *st, uint64_t limit_bytes, decision *d) {
        uint64_t stuck, need, overfull, room, mins, budget;
        char a[16], b[16], c[16], e[16];

        pool_demand(s, d, &stuck, &need, &overfull);
        if (s->memcg.n_writing > 0 || !need ||
            overfull < limit_bytes / 100 * (st->shielding ? GUARD_SHIELD_STUCK_PERCENT / 2 : GUARD_SHIELD_STUCK_PERCENT) ||
            stuck + need <= (st->shielding ? limit_bytes / 100 * GUARD_SHIELD_OFF_PERCENT : limit_bytes)) {
                st->shielding = false;
                return;
        }
        room = limit_bytes > stuck ? (limit_bytes - stuck) / 100 * GUARD_SHIELD_ROOM_PERCENT : 0;
        /* all minimums together stay within GUARD_HOLD_BUDGET_PERCENT, the holds' (which cover what is
         * stuck) and every other's counted as wanted now: room the shield took beyond that would be scaled
         * down with them, and leave a hold short of its backlog, its writers stopped */
        mins = decision_unmanaged_minimums(d, s, limit_bytes);
        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++) {
                const knob_decision *kmin = &d->devices[i].knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];

                if (d->devices[i].managed && kmin->wanted && !shield_candidate(&d->devices[i], &s->devices[i]))
                        mins += kmin->value;
        }
        budget = limit_bytes / 100 * GUARD_HOLD_BUDGET_PERCENT;
        room = MIN(room, budget > mins ? budget - mins : 0);
        st->shielding = true;
        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++) {
                device_decision *dd = &d->devices[i];
                const bdi_device *dev = &s->devices[i];
                knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
                knob_decision *kmin = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
                knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];
                uint64_t cap, current;

                if (!shield_candidate(dd, dev))
                        continue;
                cap = MIN(mul_div(room, dd->need_bytes, need), dd->need_bytes);
                if (kmax->wanted)
                        cap = MIN(cap, kmax->value);
                /* the guard never lowers a cap below what the device holds: that would stop its writers */
                if (cap < GUARD_SHIELD_MIN_BYTES || cap < dev->backlog_bytes + strict_headroom(dev, dd))
                        continue;
                if (knob_reading_value(KNOB_MAX_BYTES, &dev->knobs.k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST],
                                       s->global.dirty_thresh_bytes, &current) &&
                    current <= cap && cap - current <= cap / 100 * GUARD_STEP_PERCENT &&
                    current >= dev->backlog_bytes + strict_headroom(dev, dd))
                        cap = current;
                hold(kmax, cap, "shield: %s stuck and %s wanted do not fit in the %s limit; strict at %s, its "
                     "writers run free below 3/4 of it however full the pool", format_bytes(a, sizeof a, stuck),
                     format_bytes(b, sizeof b, need), format_bytes(c, sizeof c, limit_bytes),
                     format_bytes(e, sizeof e, cap));
                kmax->wanted = true;
                hold(kmin, cap, "shield: equal to its strict cap, so the cap is its threshold whatever its share");
                kmin->wanted = true;
                hold(kstrict, 1, "shield: strict, so its own counters decide when its writers are throttled");
                kstrict->wanted = true;
                dd->shielded = true;
                st->clamps_total++;
        }
}

/* After the minimums were fitted: a shield whose minimum was scaled below its cap would not make the cap
 * its threshold, and a strict device whose threshold is under its backlog is stopped. Then no shield: the
 * cap, above the backlog, stays, not strict and with no minimum of its own. */
static void guard_shield_fit(const bdi_device *dev, device_decision *dd) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kmin = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];

        if (!dd->shielded || kmin->value >= kmax->value || kmin->value >= dev->backlog_bytes + strict_headroom(dev, dd))
                return;
        hold(kstrict, 0, "no shield: its minimum did not fit in %d %% of the limit", GUARD_HOLD_BUDGET_PERCENT);
        *kmin = (knob_decision) {};
}

void guard_apply(const sample *s, guard_state *st, decision *d) {
        uint64_t limit_bytes;

        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                d->global[k].policy_value = d->global[k].value;
        for (size_t i = 0; i < d->n_devices; i++)
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        d->devices[i].knobs[j].policy_value = d->devices[i].knobs[j].value;

        track_limit(s, st);
        drop_gone_holds(s, d, st);
        guard_global(s, st, d);
        /* the limit this tick lets through: what the devices' minimums are ratios of */
        limit_bytes = d->global[KNOB_DIRTY_BYTES].wanted ? d->global[KNOB_DIRTY_BYTES].value : s->global.dirty_thresh_bytes;
        /* the policy's minimums are ratios of the limit this tick lets through */
        decision_fit_minimums(d, s, limit_bytes, MIN_BUDGET_PERCENT);
        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++) {
                device_decision *dd = &d->devices[i];

                if (!dd->managed || strcmp(dd->bdi, s->devices[i].bdi) != 0)
                        continue;
                if (dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].wanted && dd->capped)
                        guard_strict(&s->devices[i], dd, st);
                else {
                        /* no strict cap wanted this tick: a hold of one ends */
                        forget_hold(st, dd->bdi);
                        if (dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].wanted)
                                guard_device(&s->devices[i], s->global.dirty_thresh_bytes, dd, st);
                }
        }
        /* the shield, sized on what the holds' minimums leave */
        guard_shield(s, st, limit_bytes, d);
        /* and a strict hold's minimum may take more of it, after all others (GUARD_HOLD_BUDGET_PERCENT) */
        decision_fit_minimums(d, s, limit_bytes, GUARD_HOLD_BUDGET_PERCENT);
        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++)
                if (d->devices[i].managed && strcmp(d->devices[i].bdi, s->devices[i].bdi) == 0)
                        guard_shield_fit(&s->devices[i], &d->devices[i]);
        for (size_t i = 0; i < d->n_devices && i < s->n_devices; i++)
                if (d->devices[i].managed && strcmp(d->devices[i].bdi, s->devices[i].bdi) == 0)
                        guard_strict_fit(&s->devices[i], &d->devices[i], st);
}
