/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tuning policy: a pure function of samples, config and its own carried state (no I/O). */
#include "policy.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#define MB (1024ULL * 1024ULL)
#define BW_FLOOR_BYTES_PER_S (1 * MB)       /* an idle or unknown device is never assumed slower */
#define BW_QUEUED_BYTES (1 * MB)            /* dirty data waiting behind writeback: saturated (or the
                                             * counters' per-CPU error, if more: bdi_device_noise_floor()) */
#define BW_DECAY_USEC 3000000ULL            /* bandwidth averages over about 3 s of saturated time */
#define BW_TRUST_USEC 1000000ULL            /* ... and is trusted after 1 s of it */
#define STRICT_SHARE_DIVISOR 2              /* strict_limit when the cap is <= half the limit */
#define SLEW_DOWN_DIVISOR 2                 /* thresholds at most halve per tick ... */
#define SLEW_UP_FACTOR 4                    /* ... and at most quadruple */
#define HYSTERESIS_PERCENT 10               /* smaller changes of the global limit are not worth a write */
#define CAP_HYSTERESIS_PERCENT 20           /* device caps follow a noisier estimate */
#define STRICT_KEEP_PERCENT 60              /* a strict cap stays strict up to 60 % of the limit */
#define FREERUN_PERCENT 75                  /* (limit + background) / 2 with background at half: the pool's freerun point */
#define OVER_CAP_PERCENT 10                 /* a device over its cap by more than 10 % + 8M (the bound's tolerance) ... */
#define OVER_CAP_SLACK_BYTES (8 * MB)       /* ... is over it; less is where the kernel's control leaves a busy wb */
#define CAP_RELEASE_PERCENT 125             /* a cap is given back once it would be this far above the limit */
#define FAST_FLUSH_BELOW_BYTES (32 * MB)    /* tiny limits: wake the flusher every second ... */
#define FAST_FLUSH_ABOVE_BYTES (48 * MB)    /* ... until the limit is well above it again (no flapping) */
#define BW_SLOWED_FORGET_USEC 60000000ULL   /* "it just slowed" ends after a minute idle (the speed itself stays) */
#define BW_FAST_DECAY_USEC 500000ULL       /* a second look at the same rate over half a second, to see a slowdown early ... */
#define BW_SLOWDOWN_DIVISOR 2               /* ... when, saturated, it writes half its speed or less ... */
#define BW_SLOWDOWN_USEC 1000000ULL         /* ... for a whole second: then that is its speed now */
#define BW_KERNEL_AGREES_PERCENT 125       /* once measured, the kernel's estimate counts only this close to ours */
#define BW_FRESH_USEC 1000000ULL            /* the kernel's estimate is current while the device wrote within 1 s */
#define FILL_RATE_BYTES_PER_S (8 * MB)      /* dirtied this fast, an unmeasured device may be filling the pool */
#define UNMEASURED_SLOW_DIVISOR 4           /* removable, USB, MMC, NFS, FUSE: a quarter of unmeasured_device_bytes first */
#define FAST_TICK_UNKNOWN_TICKS 30         /* fast ticks for an unknown device's first 30 written samples (3 s) */
#define FAR_BELOW_DIVISOR 8                 /* dirtied at an eighth of its known speed or less, it needs no reservation */
#define BW_EARLY_USEC 500000ULL             /* half a second saturated tells a fast device from a presumed slow one ... */
#define PRESUMED_RELEASE_DIVISOR 2          /* ... once its speed x target reaches half of its presumed cap */
#define PRESUMED_QUIET_USEC 1000000ULL      /* a presumed cap outlives its device's last filling tick by a second */
#define MIN_DIRTIED_BYTES (1 * MB)          /* a device gets a minimum only while someone added a megabyte ... */
#define MIN_DIRTIED_USEC 3000000ULL         /* ... within the last 3 s (not the idle root disk's logger) */
#define STALL_USEC 10000000ULL              /* pages under writeback and none completed for 10 s: gone or failing */
#define BURST_KEEP_PER_S 0.9                /* a completion burst seen is remembered, 10 % less each second */
#define IN_FORCE_ROUNDING_BYTES (1 * MB)    /* the kernel's threshold of a written limit: rounded up to a page */
#define IN_FORCE_KEEP_PERCENT 10            /* strict for the hold, kept until the others fill 10 % past freerun */

static void want(knob_decision *k, uint64_t value, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void want(knob_decision *k, uint64_t value, const char *format, ...) {
        va_list ap;

        k->wanted = true;
        k->value = value;
        va_start(ap, format);
        vsnprintf(k->reason, sizeof k->reason, format, ap);
        va_end(ap);
}

/* Add to a knob's reason (truncated like want()'s). */
static void append_reason(knob_decision *k, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void append_reason(knob_decision *k, const char *format, ...) {
        size_t len = strlen(k->reason);
        va_list ap;

        va_start(ap, format);
        vsnprintf(k->reason + len, sizeof k->reason - len, format, ap);
        va_end(ap);
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi) {
        return v < lo ? lo : (v > hi ? hi : v);
}

/* Move from prev toward target by a bounded step; prev == 0 means no previous value. */
static uint64_t slew(uint64_t prev, uint64_t target) {
        if (prev == 0)
                return target;
        if (target < prev)
                return MAX(target, prev / SLEW_DOWN_DIVISOR);
        if (prev > UINT64_MAX / SLEW_UP_FACTOR)
                return target;
        return MIN(target, prev * SLEW_UP_FACTOR);
}

/* Keep prev when target is within percent of it. */
static uint64_t settle(uint64_t prev, uint64_t target, unsigned percent) {
        uint64_t band = prev / 100 * percent;

        if (prev != 0 && target + band >= prev && target <= prev + band)
                return prev;
        return target;
}

static int state_cmp(const void *key, const void *elem) {
        return strcmp(key, ((const policy_device_state *) elem)->bdi);
}

static int state_sort_cmp(const void *a, const void *b) {
        return strcmp(((const policy_device_state *) a)->bdi, ((const policy_device_state *) b)->bdi);
}

/* Line the carried state up with the sample: afterwards st->devices[i] belongs to s->devices[i].
 * Devices that left are forgotten, so a new device with a reused name starts fresh. One sort and
 * a binary search per device keep a tick O(n log n) with thousands of BDIs. 0 or -ENOMEM. */
static int state_sync(policy_state *st, const sample *s) {
        policy_device_state *next = calloc(MAX(s->n_devices, 1), sizeof *next);

        if (!next)
                return -ENOMEM;
        if (st->n_devices > 0)
                qsort(st->devices, st->n_devices, sizeof *st->devices, state_sort_cmp);
        for (size_t i = 0; i < s->n_devices; i++) {
                const policy_device_state *old = st->n_devices == 0 ? NULL :
                        bsearch(s->devices[i].bdi, st->devices, st->n_devices, sizeof *st->devices, state_cmp);

                if (old)
                        next[i] = *old;
                else
                        snprintf(next[i].bdi, sizeof next[i].bdi, "%s", s->devices[i].bdi);
        }
        free(st->devices);
        st->devices = next;
        st->n_devices = s->n_devices;
        return 0;
}

/* How far over its cap a device may be and still be where the kernel's control keeps a busy wb: its
 * dirty pages swing about half a second of its speed around the setpoint (wb_position_ratio()), and the
 * issue's bound allows cap x 1.1 + 8M (slow-first's fast disk, 251M on a 240M cap, was made strict for
 * 11M over it, and its writer's p99 went from 60 to 175 ms); never less than the kernel's batching. */
static uint64_t over_cap_slack(const bdi_device *d, uint64_t cap) {
        return MAX(bdi_device_batch_slack(d), cap / 100 * OVER_CAP_PERCENT + OVER_CAP_SLACK_BYTES);
}

/* The device is writing as fast as it can: a flusher chunk or more in flight and more waiting behind
 * it. Otherwise what it wrote is the application's pace, not the device's. (Pages waiting for an NFS
 * COMMIT count as writeback: without dirty data queued behind them they do not mean a busy device.) */
static bool device_saturated(const bdi_device *d) {
        uint64_t queued = MAX(BW_QUEUED_BYTES, bdi_device_noise_floor(d));

        return d->writeback_bytes >= queued && d->dirty_bytes >= queued;
}

/* Add a tick to a bytes/time pair decayed over decay_usec; true once it holds BW_TRUST_USEC of time. */
static bool rate_add_decay(rate_sum *r, uint64_t bytes, uint64_t dt_usec, uint64_t decay_usec) {
        double keep = (double) decay_usec / (double) (decay_usec + dt_usec);

        r->bytes = r->bytes * keep + (double) bytes;
        r->usec = r->usec * keep + (double) dt_usec;
        return r->usec >= BW_TRUST_USEC;
}

static bool rate_add(rate_sum *r, uint64_t bytes, uint64_t dt_usec) {
        return rate_add_decay(r, bytes, dt_usec, BW_DECAY_USEC);
}

static uint64_t rate_get(const rate_sum *r) {
        return r->usec > 0 ? (uint64_t) (r->bytes * 1e6 / r->usec) : 0;
}

/* The kernel's own estimate (WbWriteBandwidth), if it is about this stretch of writing: the device
 * has been active for two ticks, completed writeback within BW_FRESH_USEC (completions come in
 * bursts: a tick without any must not flip the estimate off and on) and the figure is not the
 * kernel's initial guess. 0 if not. */
static uint64_t kernel_fresh_bw(const policy_device_state *ds, const bdi_device *d) {
        uint64_t bw = d->writing_wbs_bw_bytes_per_s ? d->writing_wbs_bw_bytes_per_s : d->kernel_bw_bytes_per_s;

        if (ds->active_ticks < 2 || bw == KERNEL_BW_INITIAL || ds->wrote_usec == 0 ||
            ds->last_time_usec > ds->wrote_usec + BW_FRESH_USEC)
                return 0;
        return bw;
}

/* Two estimates, both bytes over time decayed with BW_DECAY_USEC (completions arrive in bursts: a
 * throttled loop device finishes 8M every 2 s, so per-tick rates swing between 0 and 10x the truth):
 * the rate while saturated is the device's speed; the rate while active is a floor under it, since
 * a device that wrote that fast can, and it is what shows a fast device held back by a small cap.
 * A tick counts as saturated only when the device was saturated at both of its ends. A measured speed
 * is kept through idle time: a device that got slower is caught by the slowdown check, one that got
 * faster raises the averages. A remembered speed (the sample's prior) seeds them as BW_DECAY_USEC of
 * saturated time at that speed, so the first seconds measured now outweigh it. */
static void update_bandwidth(policy_device_state *ds, const bdi_device *d, uint64_t now_usec) {
        uint64_t dt_usec = now_usec - ds->last_time_usec, written;
        bool have_prev = ds->last_time_usec > 0 && now_usec > ds->last_time_usec &&
                         d->written_total_bytes >= ds->last_written_total;
        bool saturated = device_saturated(d), pausing;
        uint64_t bw = 0, noise = MAX(BW_QUEUED_BYTES, bdi_device_noise_floor(d));

        written = have_prev ? d->written_total_bytes - ds->last_written_total : 0;
        /* a network file system that completes nothing for a tick is waiting on its server (a hiccup, a
         * COMMIT), not slower: the tick counts for none of its rates, and neither starts nor ends a slowdown */
        pausing = have_prev && written == 0 && (d->traits & BDI_TRAIT_NFS);
        /* what a tick completed beyond the steady pace of the device's speed: a throttled loop device
         * completes 8M once a second, a cap whose control range is under that stops its writer until
         * the next completion (the guard keeps a held cap at least that far above the backlog) */
        if (have_prev && dt_usec > 0) {
                double steady = (double) ds->bw_bytes_per_s * (double) dt_usec / 1e6;

                ds->burst_bytes *= pow(BURST_KEEP_PER_S, (double) dt_usec / 1e6);
                /* against a measured speed, saturated at both ends: before that, the 1 MB/s floor of an
                 * unknown device made a smooth 200 MB/s disk's first second a 199M burst */
                if (ds->measured && saturated && ds->was_saturated && (double) written > steady &&
                    (double) written - steady > ds->burst_bytes)
                        ds->burst_bytes = (double) written - steady;
        }
        ds->last_time_usec = now_usec;
        ds->last_written_total = d->written_total_bytes;
        ds->active_ticks = bdi_device_active(d) ? ds->active_ticks + 1 : 0;
        if (written > 0)
                ds->wrote_usec = now_usec;
        ds->filling = have_prev && d->dirty_rate_bytes_per_s >= FILL_RATE_BYTES_PER_S;
        /* a megabyte added within MIN_DIRTIED_USEC, counted from the previous sample on */
        if (have_prev) {
                if (!ds->dirtied_window_usec || now_usec > ds->dirtied_window_usec + MIN_DIRTIED_USEC) {
                        ds->dirtied_window_usec = now_usec - dt_usec;
                        ds->dirtied_window_bytes = 0;
                }
                ds->dirtied_window_bytes += (double) d->dirty_rate_bytes_per_s * (double) dt_usec / 1e6;
                if (ds->dirtied_window_bytes >= (double) MIN_DIRTIED_BYTES) {
                        ds->dirtied_mb_usec = now_usec;
                        ds->dirtied_window_usec = now_usec;
                        ds->dirtied_window_bytes = 0;
                }
        }
        /* an unplugged or failing device: its writeback completes nothing while its writers loop in
         * balance_dirty_pages() until the filesystem gives up; counted from the last sample it could have.
         * Under the noise floor is nothing to complete: an idle device's unsummed per-CPU counters show
         * up to wb_stat_error() under writeback. */
        if (!have_prev || written > 0 || d->writeback_bytes < bdi_device_noise_floor(d))
                ds->stalled_since_usec = 0;
        else if (!ds->stalled_since_usec)
                ds->stalled_since_usec = now_usec - dt_usec;
        /* a megabyte in one tick: not the per-CPU counters settling after a writer that stopped before
         * the daemon started (they show a few pages dirtied then) */
        if (have_prev && mul_div(d->dirty_rate_bytes_per_s, dt_usec, 1000000) >= noise)
                ds->dirtied_seen = true;
        if (ds->filling)
                ds->filled_usec = now_usec;
        /* a writer crawling under the global line fills the pool one tick and not the next: its presumed
         * cap stays until a second after it last filled (slowdown-b: B's 16M cap written and given back
         * every 100 ms, 145 writes in a run). Not longer: a writer paced below FILL_RATE is no longer
         * filling the pool, and a cap kept through its pace would meet its next burst (paced-burst-b). */
        ds->quiet = !ds->filling && d->backlog_bytes < MAX(noise, 2 * d->counter_error_bytes) &&
                    !(ds->presumed && now_usec < ds->filled_usec + PRESUMED_QUIET_USEC);

        if (!ds->measured && d->remembered_bw_bytes_per_s) {
                ds->saturated = (rate_sum) { (double) d->remembered_bw_bytes_per_s * (double) BW_DECAY_USEC / 1e6,
                                             (double) BW_DECAY_USEC };
                ds->measured = true;
                ds->source = SPEED_REMEMBERED;
        }
        if (saturated)
                ds->saturated_usec = now_usec;
        else if (ds->slowed_usec && now_usec > ds->saturated_usec + BW_SLOWED_FORGET_USEC && !bdi_device_active(d))
                ds->slowed_usec = 0;
        if (!pausing && have_prev && saturated && ds->was_saturated) {
                ds->saturated_now_usec += dt_usec;
                if (rate_add(&ds->saturated, written, dt_usec))
                        ds->measured = true;
                if (ds->measured && ds->saturated_now_usec >= BW_TRUST_USEC)
                        ds->source = SPEED_MEASURED;
                rate_add_decay(&ds->saturated_fast, written, dt_usec, BW_FAST_DECAY_USEC);
                /* a stick whose SLC cache ran out, a throttled device: its 3 s average keeps the old speed for
                 * seconds while its backlog grows; a second at half of it or less is taken as the new speed */
                if (ds->measured && ds->saturated_fast.usec >= BW_FAST_DECAY_USEC / 2 &&
                    rate_get(&ds->saturated_fast) < rate_get(&ds->saturated) / BW_SLOWDOWN_DIVISOR) {
                        if (!ds->slow_since_usec)
                                ds->slow_since_usec = now_usec;
                        else if (now_usec >= ds->slow_since_usec + BW_SLOWDOWN_USEC) {
                                ds->saturated = ds->active = ds->saturated_fast;
                                ds->shown_bytes_per_s = rate_get(&ds->saturated_fast);
                                ds->slowed_usec = now_usec;
                                ds->slow_since_usec = 0;
                        }
                } else
                        ds->slow_since_usec = 0;
        } else if (!pausing)
                ds->slow_since_usec = 0;
        ds->was_saturated = saturated;
        if (have_prev && !pausing && (written > 0 || d->backlog_bytes > 0) && rate_add(&ds->active, written, dt_usec))
                ds->shown_bytes_per_s = rate_get(&ds->active);

        if (ds->measured) {
                uint64_t ours = MAX(rate_get(&ds->saturated), ds->shown_bytes_per_s), kernel_bw = kernel_fresh_bw(ds, d);

                /* ours is what it wrote over its saturated time; the kernel's own estimate lags it: it comes
                 * down from a slowdown with a ~4 s time constant (after 150 -> 5 MB/s, a fixed 3 s wait let
                 * 64 MB/s back in, and the slowed device lost its strict cap), and it stands still while the
                 * flusher waits on a full queue (restart-a: 156 MB/s, left from the case before, for 3 s on
                 * a device writing 27 MB/s, which then got a 590M cap). It counts only where it agrees. */
                if (kernel_bw > mul_div(ours, BW_KERNEL_AGREES_PERCENT, 100))
                        kernel_bw = 0;
                else if (kernel_bw)
                        ds->slowed_usec = 0;
                bw = MAX(ours, kernel_bw);
        } else
                /* not seen saturated long enough: what it showed, or the kernel's estimate if fresh */
                bw = MAX(kernel_fresh_bw(ds, d), ds->shown_bytes_per_s);
        ds->bw_bytes_per_s = MAX(bw, BW_FLOOR_BYTES_PER_S);
}

/* The speed over its first half second saturated, before it is trusted as measured: 0 until then.
 * Saturated only: what a device wrote while its writer was throttled is the writer's pace, and a
 * strict cap sized on it keeps the writer at that pace (slow-first: released at 6.4 MB/s x 2 s, the
 * fast disk's cap then followed its throttled writer down, p99 114 ms). */
static uint64_t early_bw(const policy_device_state *ds) {
        return ds->saturated.usec >= (double) BW_EARLY_USEC ? rate_get(&ds->saturated) : 0;
}

static uint64_t device_backlog_ms(const config *c, const device_config *dc) {
        return dc && dc->backlog_ms ? dc->backlog_ms : c->backlog_ms;
}

/* The global limit the kernel would use without us: the first one we saw. */
static uint64_t original_limit(policy_state *st, const sample *s) {
        if (st->original_dirty_limit_bytes == 0)
                st->original_dirty_limit_bytes = s->global.dirty_thresh_bytes;
        return st->original_dirty_limit_bytes;
}

static void decide_global_limits(const sample *s, const config *c, policy_state *st, uint64_t demand_bytes,
                                 size_t n_active, decision *out) {
        char a[16];
        uint64_t target, step, limit, ceiling;
        const char *why;

        ceiling = c->max_dirty_bytes ? c->max_dirty_bytes : original_limit(st, s);
        if (c->dirty_bytes) {
                target = c->dirty_bytes;
                why = "pinned by the configuration";
        } else if (n_active > 0) {
                /* on a small box the kernel's own limit may be below min_dirty_bytes: it wins */
                target = clamp_u64(demand_bytes, MIN(c->min_dirty_bytes, ceiling), ceiling);
                why = target == demand_bytes ? "sum of active devices' bandwidth x backlog target"
                    : target == MIN(c->min_dirty_bytes, ceiling) ? "sum of bandwidth x target, raised to min_dirty_bytes"
                    : "sum of bandwidth x target, capped at the ceiling";
        } else if (st->dirty_bytes) {
                target = st->dirty_bytes;
                why = "no device active: keeping the last limit";
        } else
                return;  /* nothing written yet: no opinion */

        /* an admin's pin goes to the guard as it is: the guard steps it down while more is dirty */
        step = c->dirty_bytes ? target : slew(st->dirty_bytes ? st->dirty_bytes : original_limit(st, s), target);
        limit = settle(st->dirty_bytes, step, HYSTERESIS_PERCENT);
        st->dirty_bytes = limit;
        if (limit != step)
                want(&out->global[KNOB_DIRTY_BYTES], limit, "%s: %s is within %d %% of it, not worth a change",
                     why, format_bytes(a, sizeof a, target), HYSTERESIS_PERCENT);
        else if (limit != target)
                want(&out->global[KNOB_DIRTY_BYTES], limit, "%s: heading for %s in bounded steps",
                     why, format_bytes(a, sizeof a, target));
        else
                want(&out->global[KNOB_DIRTY_BYTES], limit, "%s (demand %s)", why,
                     format_bytes(a, sizeof a, demand_bytes));

        out->global[KNOB_DIRTY_BYTES].from_config = c->dirty_bytes != 0;
        if (c->dirty_background_bytes && c->dirty_background_bytes < limit)
                want(&out->global[KNOB_DIRTY_BACKGROUND_BYTES], c->dirty_background_bytes, "pinned by the configuration");
        else
                /* the kernel's own default proportion: background is half the limit (10 % of 20 %) */
                want(&out->global[KNOB_DIRTY_BACKGROUND_BYTES], MAX(limit / 2, 4096), "half of dirty_bytes %s",
                     format_bytes(a, sizeof a, limit));
}

/* limit: the dirty limit we are heading for. Every change of dirty_writeback_centisecs wakes the
 * flushers of every device: the tiny-limit mode has a band so a limit near the line does not flap. */
static void decide_intervals(const config *c, policy_state *st, uint64_t limit, decision *out) {
        char a[16];

        want(&out->global[KNOB_DIRTY_EXPIRE_CENTISECS], c->max_age_ms / 10, "max_age %" PRIu64 " ms", c->max_age_ms);
        if (limit > 0 && limit < FAST_FLUSH_BELOW_BYTES)
                st->fast_flush = true;
        else if (limit == 0 || limit > FAST_FLUSH_ABOVE_BYTES)
                st->fast_flush = false;
        if (st->fast_flush)
                want(&out->global[KNOB_DIRTY_WRITEBACK_CENTISECS], 100,
                     "limit %s is tiny: wake the flusher every second", format_bytes(a, sizeof a, limit));
        else
                want(&out->global[KNOB_DIRTY_WRITEBACK_CENTISECS], MIN(500, MAX(100, c->max_age_ms / 10 / 6)),
                     "a sixth of max_age, at most the kernel's 5 s");
}

/* A device with a speed that sets its bound first: slow media, network and FUSE file systems. mmc has
 * no sysfs trait of its own: its name says it. */
static bool device_slow_kind(const bdi_device *d) {
        return (d->traits & (BDI_TRAIT_REMOVABLE | BDI_TRAIT_USB | BDI_TRAIT_NFS | BDI_TRAIT_FUSE)) ||
               startswith(d->name, "mmcblk");
}

/* The bound of a device whose speed is not known yet, in place before its first byte: sized from what
 * is known before it writes, its kind (unmeasured_device_bytes for an internal disk, a quarter of that
 * for removable, USB, MMC, NFS or FUSE), never from the pool, which on a big box is gigabytes a writer
 * at memory speed dirties within a tick. why gets the words for explain. 0 (none) if configured off, or
 * if that is more than half the limit in force (the limit itself bounds the device). known_bw_bytes_per_s:
 * a speed known before it writes (0: none), which sizes it instead, x target_ms. */
/* A first bound is at most half the kernel's limit (a strict cap of more would be most of the pool); in a
 * smaller pool, half of it, not none: with none, a device the daemon does not know fills what the limit
 * allows, and the policy raises the limit for a device it sees writing (new-a: the idle box's limit
 * came down to 85M, the 64M bound went, and the new stick held 240M). 0 where even min_device_bytes is
 * more than half. *cut: half of it, cut from more. Such a bound is not strict: the small pool bounds the
 * device about as well, and strict halves do not add up (a strict wb freeruns on its own counters below
 * 3/8 of the pool, domain_dirty_freerun(), and gets its cap as a minimum while written: randrw's four new
 * devices held 1.44x the 100M pin). Not strict only where it is cut by more than a tenth, or was not strict
 * and is still cut (cut_before): a pool moving around twice the bound would flip it every tick. */
static uint64_t fit_first_bound(const sample *s, const config *c, uint64_t bound, char *why, size_t why_size,
                                bool cut_before, bool *cut) {
        uint64_t half = s->global.dirty_thresh_bytes / STRICT_SHARE_DIVISOR;
        size_t len = strlen(why);
        char a[16];

        *cut = false;
        if (bound <= half)
                return bound;
        if (c->min_device_bytes > half)
                return 0;
        *cut = cut_before || bound > half + half / 10;
        if (len < why_size)
                snprintf(why + len, why_size - len, ", half of the limit in force: %s%s", format_bytes(a, sizeof a, half),
                         *cut ? ", not strict" : "");
        return half;
}

static uint64_t first_bound(const sample *s, const config *c, const bdi_device *d, uint64_t known_bw_bytes_per_s,
                            uint64_t target_ms, char *why, size_t why_size, bool cut_before, bool *cut) {
        uint64_t bound;
        char a[16], b[16];

        *cut = false;
        /* a memory-limited cgroup's writers are throttled in its own domain, where a device's max is a
         * ratio of the cgroup's threshold (wb_dirty_limits(mdtc)): a 64M bound is a few megabytes there
         * and would stall a container's writer the kernel alone lets run. A guess is not worth that. */
        if (s->memcg.n_writing > 0) {
                snprintf(why, why_size, "no first bound while %u memory-limited cgroup(s) write (%.60s)",
                         s->memcg.n_writing, s->memcg.example);
                return 0;
        }
        if (known_bw_bytes_per_s) {
                bound = MAX(mul_div(known_bw_bytes_per_s, target_ms, 1000), c->min_device_bytes);
                snprintf(why, why_size, "first bound from its known speed: %s/s x %.1f s target, %s",
                         format_bytes(a, sizeof a, known_bw_bytes_per_s), (double) target_ms / 1000.0,
                         format_bytes(b, sizeof b, bound));
                return fit_first_bound(s, c, bound, why, why_size, cut_before, cut);
        }
        if (!c->unmeasured_device_bytes)
                return 0;  /* configured off: no cap until measured */
        bound = device_slow_kind(d) ? c->unmeasured_device_bytes / UNMEASURED_SLOW_DIVISOR : c->unmeasured_device_bytes;
        bound = MAX(bound, c->min_device_bytes);
        if (device_slow_kind(d))
                snprintf(why, why_size, "first bound from traits (removable/USB/MMC/NFS/FUSE): speed not known yet, "
                         "a quarter of unmeasured_device_bytes, %s", format_bytes(a, sizeof a, bound));
        else
                snprintf(why, why_size, "first bound from traits (internal disk): speed not known yet, "
                         "unmeasured_device_bytes, %s", format_bytes(a, sizeof a, bound));
        return fit_first_bound(s, c, bound, why, why_size, cut_before, cut);
}

/* No cap wanted from now on: the next one starts afresh (no slew, no hysteresis, not strict). */
static void forget_cap(policy_device_state *ds) {
        ds->max_bytes = 0;
        ds->strict = ds->presumed = ds->over_cap = ds->unbounded_in_force = false;
}

/* The cap of an idle device whose speed is not known: its first bound, strict so it is in force when
 * writing starts (a strict wb's own counters decide), with no minimum: a reservation for a device nobody
 * writes shrinks every other device's share of the limit. */
static void want_first_bound(policy_device_state *ds, uint64_t bound, bool cut, const char *why, device_decision *dd) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];

        want(kmax, bound, "%s", why);
        if (!cut)
                want(kstrict, 1, "first bound: in force from its first write, below freerun too");
        ds->max_bytes = bound;
        ds->strict = !cut;
        ds->presumed = true;
}

/* What a device nobody writes may hold and still get a remembered cap below that: once its writer is back,
 * the guard brings such a backlog down with a hold whose minimum (the policy's, for a strict device being
 * written) covers it, a share of the pool taken from everyone else (start-a: 1.8G of min_bytes on a stick
 * nobody wrote to); up to an eighth of the limit in force is worth that. */
#define REMEMBERED_LEFTOVER_DIVISOR 8

/* A device known slow from before (its speed remembered, not measured in this run, or with
 * measured_now_too measured by draining a leftover) and not capped yet (current_max_bytes 0): its cap
 * from that speed, strict, in place before its first write instead of the pool; not where the cap would
 * not be under half the limit, nor over a backlog above leftover_max. True with *ret if so. */
static bool remembered_cap(const policy_device_state *ds, uint64_t current_max_bytes, uint64_t target_ms,
                           uint64_t floor, uint64_t limit, uint64_t backlog_bytes, uint64_t leftover_max,
                           bool measured_now_too, uint64_t *ret) {
        uint64_t cap;

        if (!ds->measured || current_max_bytes || (ds->source != SPEED_REMEMBERED && !measured_now_too))
                return false;
        cap = MAX(mul_div(ds->bw_bytes_per_s, target_ms, 1000), floor);
        if (cap > limit / STRICT_SHARE_DIVISOR || backlog_bytes > MAX(cap, leftover_max))
                return false;
        *ret = cap;
        return true;
}

void policy_choose_cap(const sample *s, const bdi_device *d, const device_config *dc, const config *c,
                       const policy_device_state *ds, uint64_t limit, cap_choice *ret) {
        uint64_t target_ms = device_backlog_ms(c, dc), floor = c->min_device_bytes, bound;
        bool configured_max = dc && dc->max_bytes;

        *ret = (cap_choice) { .source = CAP_SOURCE_NONE };
        /* the lower device of a stack (a LUKS/LVM member, the filesystem under a loop's backing file): what
         * is dirty on it is the upper device's writeback, a cap or strict limit here throttles that device's
         * own worker (a loop's: the stacked-device deadlock) and a minimum shrinks everyone else's share.
         * Only the admin's [device] values are written. */
        if (d->upper[0] && !(dc && (dc->max_bytes || dc->min_bytes || dc->strict_limit != TRISTATE_AUTO))) {
                ret->source = CAP_SOURCE_LOWER;
                return;
        }
        /* (its first bound was not strict last tick: cut, a presumed cap with no strictness) */
        bound = ds->measured ? 0 : first_bound(s, c, d, 0, target_ms, ret->why, sizeof ret->why,
                                               ds->presumed && ds->max_bytes && !ds->strict, &ret->first_bound_cut);
        if ((!bdi_device_active(d) || ds->quiet) && !configured_max) {
                /* an idle device needs no new reservation (a few stray pages, or the per-CPU error of its
                 * counters, do not make it busy); one with a measured cap keeps it, one with no known
                 * speed gets its first bound before its first byte */
                if (remembered_cap(ds, ds->max_bytes, target_ms, floor, limit, d->backlog_bytes, 0, false, &ret->cap))
                        ret->source = CAP_SOURCE_REMEMBERED;
                else if (ds->max_bytes && ds->measured) {
                        ret->source = CAP_SOURCE_KEPT;
                        ret->cap = ds->max_bytes;
                } else if (bound) {
                        ret->source = CAP_SOURCE_FIRST_BOUND;
                        ret->cap = bound;
                }
                return;
        }
        if (!ds->dirtied_seen && !ds->filling && !configured_max) {
                /* a backlog from before the daemon watched, that nobody adds to: a cap would throttle no
                 * writer, and a strict one's min_bytes would shrink every other device's share of the
                 * limit (start-a, start-b: 1.8G of min_bytes on a stick nobody wrote to). The guard
                 * brings down one its first bound cannot hold. Any cap it had is forgotten (0 below) ... */
                /* ... but its next writer meets the cap it will need (restart-a: 13-32M left on the slow
                 * device at the restart, no cap, and 223-262M dirty on it before its writer was seen) */
                /* (measured again in this run by its draining, after a second saturated, all the same:
                 * restart-a lost its cap so, and its writer came back to 3G) */
                if (remembered_cap(ds, 0, target_ms, floor, limit, d->backlog_bytes,
                                   MAX(limit, s->global.dirty_thresh_bytes) / REMEMBERED_LEFTOVER_DIVISOR, true, &ret->cap))
                        ret->source = CAP_SOURCE_REMEMBERED_LEFTOVER;
                else if (bound && d->backlog_bytes < bound) {
                        ret->source = CAP_SOURCE_FIRST_BOUND;
                        ret->cap = bound;
                }
                return;
        }
        if (ds->measured) {
                ret->source = CAP_SOURCE_MEASURED;
                ret->cap = MAX(mul_div(ds->bw_bytes_per_s, target_ms, 1000), floor);
        } else if (bound) {
                /* a slow stick fills the pool within a tick of its first write: its first bound is in place
                 * before that. It does not fall while presumed: a writer throttled by it with the kernel's
                 * idle estimate would drain its backlog and pull the guard's hold down with it. */
                uint64_t early_cap = mul_div(early_bw(ds), target_ms, 1000);
                uint64_t shown_cap = mul_div(ds->bw_bytes_per_s, target_ms, 1000);
                uint64_t cap = MAX(bound, ds->presumed ? ds->max_bytes : 0);
                bool freed_early = early_cap >= cap / PRESUMED_RELEASE_DIVISOR;

                if (freed_early && early_cap >= shown_cap) {
                        /* half a second at full speed already shows it is no slow stick: held strictly by
                         * the guess until measured, a fast device's writer would run at its disk's pace
                         * (start-a: 1.2 s at 200 MB/s where the kernel alone let it write 390 MB/s). First:
                         * the estimate below may be the kernel's, stale from the device's last writes
                         * (slow-first: 8.7 MB/s for a disk writing 120, which kept it strict at 17M) */
                        ret->source = CAP_SOURCE_EARLY;
                        ret->cap = MAX(early_cap, floor);
                } else if (freed_early || shown_cap > cap) {
                        /* held back by that cap, it still wrote this fast (or the kernel's fresh estimate
                         * says so), or half a second at full speed freed it and that says more: let it
                         * have that */
                        ret->source = CAP_SOURCE_SHOWN;
                        ret->cap = MAX(shown_cap, floor);
                } else {
                        ret->source = CAP_SOURCE_PRESUMED;
                        ret->cap = cap;
                        ret->presumed = true;
                }
        } else if (configured_max) {
                ret->source = CAP_SOURCE_CONFIGURED;
                ret->cap = dc->max_bytes;
        } else
                /* never saw it write at full speed, and no cap before that (or the pool is too small
                 * for a presumed one): no opinion */
                return;
        if (configured_max && dc->max_bytes < ret->cap) {
                ret->source = CAP_SOURCE_CONFIGURED;
                ret->cap = dc->max_bytes;
        }
}

/* A cap's reason from a speed: "<before>8.0M/s<after> x 2.0 s target". */
static void speed_reason(knob_decision *k, const char *before, uint64_t bw_bytes_per_s, const char *after,
                         uint64_t target_ms) {
        char a[16];

        snprintf(k->reason, sizeof k->reason, "%s%s/s%s x %.1f s target", before,
                 format_bytes(a, sizeof a, bw_bytes_per_s), after, (double) target_ms / 1000.0);
}

/* The strict cap of a device known slow from before, ch's, in place before its first write. */
static void want_remembered_cap(policy_device_state *ds, uint64_t cap, uint64_t target_ms, device_decision *dd) {
        char a[16];

        ds->max_bytes = cap;
        ds->strict = true;
        want(&dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], cap, "remembered bandwidth %s/s x %.1f s target, before its first write",
             format_bytes(a, sizeof a, ds->bw_bytes_per_s), (double) target_ms / 1000.0);
        want(&dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST], 1, "remembered slow: enforce its cap even below freerun");
}

/* The knobs of a device from where its cap comes from (ch, policy_choose_cap()): the configured minimum,
 * then the cap given back near the limit, slewed up, kept through small changes, strict or not, and the
 * minimum of a strict one. */
static void shape_device(const sample *s, const bdi_device *d, const device_config *dc, const config *c,
                         const cap_choice *ch, policy_device_state *ds, uint64_t limit, device_decision *dd) {
        knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];
        knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];
        knob_decision *kmin = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
        uint64_t target_ms = device_backlog_ms(c, dc), cap = ch->cap, target, step;
        char a[16], b[16];
        bool strict, presumed = ch->presumed, far_below, over_cap_now = false, over_in_force, in_force_free, in_force_held;
        uint64_t others_bytes, in_force_freerun;

        if (ch->source == CAP_SOURCE_LOWER) {
                forget_cap(ds);
                snprintf(dd->left_alone, sizeof dd->left_alone, "the lower device of %s: no cap, minimum or "
                         "first bound of its own, its writer is %s's writeback", d->upper, d->upper);
                return;
        }
        if (dc && dc->min_bytes) {
                want(kmin, MIN(dc->min_bytes, limit), "min_bytes from [device \"%s\"]", dc->match);
                kmin->from_config = true;
        }

        switch (ch->source) {
        case CAP_SOURCE_REMEMBERED:
                want_remembered_cap(ds, cap, target_ms, dd);
                return;
        case CAP_SOURCE_REMEMBERED_LEFTOVER:
                forget_cap(ds);
                want_remembered_cap(ds, cap, target_ms, dd);
                return;
        case CAP_SOURCE_KEPT:
                want(kmax, cap, "idle: keeping its cap (bandwidth %s/s when last measured)",
                     format_bytes(a, sizeof a, ds->bw_bytes_per_s));
                /* strict by the share rule, or slowed: strict for a burst over its cap or under a held limit
                 * ends with its writer (a 64-CPU guest's disk stayed strict, idle, for 107 s after one burst) */
                if (dc && dc->strict_limit != TRISTATE_AUTO) {
                        want(kstrict, dc->strict_limit == TRISTATE_YES, "strict_limit from [device \"%s\"]", dc->match);
                        kstrict->from_config = true;
                        return;
                }
                if (ds->strict && !ds->slowed_usec && cap > limit / STRICT_SHARE_DIVISOR &&
                    (ds->over_cap || ds->unbounded_in_force || cap > mul_div(limit, STRICT_KEEP_PERCENT, 100)))
                        ds->strict = false;
                ds->over_cap = ds->unbounded_in_force = false;
                if (ds->strict)
                        want(kstrict, 1, "idle: keeping its strict cap");
                return;
        case CAP_SOURCE_FIRST_BOUND:
                forget_cap(ds);
                want_first_bound(ds, cap, ch->first_bound_cut, ch->why, dd);
                return;
        case CAP_SOURCE_MEASURED:
                speed_reason(kmax, "measured bandwidth ", ds->bw_bytes_per_s, "", target_ms);
                break;
        case CAP_SOURCE_PRESUMED:
                snprintf(kmax->reason, sizeof kmax->reason, "%s", ch->why);
                append_reason(kmax, "; presumed slow until it writes at full speed");
                break;
        case CAP_SOURCE_EARLY:
                speed_reason(kmax, "no longer presumed slow: it wrote ", early_bw(ds),
                             " over half a second at full speed,", target_ms);
                break;
        case CAP_SOURCE_SHOWN:
                speed_reason(kmax, "not measured yet, but it writes ", ds->bw_bytes_per_s, "", target_ms);
                break;
        case CAP_SOURCE_CONFIGURED:
                snprintf(kmax->reason, sizeof kmax->reason, "max_bytes from [device \"%s\"]", dc->match);
                kmax->from_config = true;
                break;
        case CAP_SOURCE_NONE:
        case CAP_SOURCE_LOWER:
        default:
                forget_cap(ds);
                return;
        }
        /* the global limit already bounds it; a cap it had stays until it is clearly above the limit,
         * so a cap near the line is not written and given back tick after tick (a presumed cap is sized
         * on the pool in force, which the guard may hold far above that limit) */
        /* not while it holds more than that cap, at most at the freerun point of the limit in force (3/4 of
         * it, the background at half as the daemon holds it): the guard holds that limit above what it holds,
         * so the limit heading for the cap bounds nothing (db-same-a: 260-275M on a 210M cap under a held
         * 304M, for the whole copy); once strict for that, while it holds more than half of it, as below
         * (released at the cap it refilled, was made strict again, every 8 s). Not while a memory-limited
         * cgroup writes: a cap is a ratio of that cgroup's own limit there. */
        over_in_force = s->memcg.n_writing == 0 && cap <= mul_div(s->global.dirty_thresh_bytes, FREERUN_PERCENT, 100) &&
                        (d->backlog_bytes > cap + over_cap_slack(d, cap) || (ds->over_cap && d->backlog_bytes > cap / 2));
        /* a device freed from its first bound before it was measured, whose cap lies below the freerun point
         * of the limit in force: nothing bounds it there but a strict cap, and its writer is anything up to
         * memory speed (fastnew-a: freed at 64M with a 384M cap under a held 1.2G, it filled 632M in the tenth
         * of a second before it was over its cap); kept, once measured, while the limit in force, the daemon's
         * own, is above the policy's: the guard holds it there, from the tick the policy heads lower (a hold
         * known only a tick later let a copy fill 600M in that tick, fastnew-a; where the guard then lets the
         * limit fall at once, that is one tick strict for nothing, the cheaper mistake). Beyond the kernel's rounding
         * of a written limit up to a page; not where the limit is not the daemon's (observe, devices alone,
         * an admin's): the share rule below decides there, as for any device */
        /* (and only while the pool's freerun point is further above what the other devices hold than that cap:
         * where they hold most of it, the pool bounds this one first, and a strict cap's reservation would
         * squeeze their holds; slowdown-a: the slowed device's writer stopped 9.6 s; the hold is remembered
         * through such ticks, strict again once they drain) */
        others_bytes = s->global.dirty_bytes + s->global.writeback_bytes;
        others_bytes = others_bytes > d->backlog_bytes ? others_bytes - d->backlog_bytes : 0;
        in_force_held = s->memcg.n_writing == 0 && !presumed && s->limit_ours &&
                        s->global.dirty_thresh_bytes > limit + limit / 100 + IN_FORCE_ROUNDING_BYTES &&
                        (!ds->measured || ds->unbounded_in_force) &&
                        (ch->source == CAP_SOURCE_SHOWN || ch->source == CAP_SOURCE_EARLY || ds->unbounded_in_force) &&
                        MIN(cap, limit) <= mul_div(s->global.dirty_thresh_bytes, FREERUN_PERCENT, 100);
        /* (once strict for it, kept up to a tenth past that point: the others' backlog moves every tick, and
         * strictness with its reservation would come and go with it) */
        in_force_freerun = mul_div(s->global.dirty_thresh_bytes, FREERUN_PERCENT, 100);
        if (ds->strict && ds->unbounded_in_force)
                in_force_freerun += mul_div(in_force_freerun, IN_FORCE_KEEP_PERCENT, 100);
        in_force_free = in_force_held && MIN(cap, limit) + others_bytes <= in_force_freerun;
        if (!presumed && cap >= limit && !over_in_force && !in_force_free &&
            !(ds->max_bytes && !ds->presumed && cap < mul_div(limit, CAP_RELEASE_PERCENT, 100))) {
                forget_cap(ds);
                return;
        }
        if (!presumed && !over_in_force)
                cap = MIN(cap, limit);

        target = cap;
        /* a cap may drop at once (it only throttles this device's writers); it rises in steps */
        step = ds->max_bytes && target > ds->max_bytes ? slew(ds->max_bytes, target) : target;
        cap = settle(ds->max_bytes, step, CAP_HYSTERESIS_PERCENT);
        ds->max_bytes = cap;
        ds->presumed = presumed;
        kmax->wanted = true;
        kmax->value = cap;
        if (cap != step)
                append_reason(kmax, ": %s is within %d %% of it, not worth a change",
                              format_bytes(a, sizeof a, target), CAP_HYSTERESIS_PERCENT);
        else if (cap != target)
                append_reason(kmax, ": heading for %s in bounded steps", format_bytes(a, sizeof a, target));

        if (dc && dc->strict_limit != TRISTATE_AUTO) {
                strict = dc->strict_limit == TRISTATE_YES;
                want(kstrict, strict, "strict_limit from [device \"%s\"]", dc->match);
                kstrict->from_config = true;
        } else {
                /* judged on where the cap is heading, so the slew does not delay it; once strict it
                 * stays so up to a larger share, so a cap near the line does not flip it every tick */
                /* a device that just slowed holds a backlog of its old speed: not strict, its writer fills
                 * whatever room the guard keeps for it (slowdown-a: 248 -> 301M while the cap, 21 MB/s x
                 * 2 s, was not yet under half the limit) */
                /* a strict device holding more than its cap stays strict until it is down to it, while that
                 * cap is far below the limit in force: the guard's strict hold brings it down paced, a cap
                 * that is not strict bites only where the pool is above freerun (fill-a: freed from its
                 * presumed cap with 3.8G on a 30 MB/s device, measured at 58M against the 64M the policy
                 * heads for, it came down 5 MB/s under the 4.6G the guard held for that backlog) */
                /* (once strict for that, while it holds more than half its cap: its writer paced at the cap
                 * keeps it between 3/4 of it and the cap, and a release there had it flip every second,
                 * restart-a) */
                /* ... and so does one that is not strict yet and holds more than its cap plus the bound's
                 * tolerance (over_cap_slack()): a cap that is not strict bites only above the pool's freerun
                 * point, and what it holds beyond its size is stuck data that lifts the guard's floor, so the
                 * pool grew with it (db-same-a at 1 s: the copy's disk held 334M against a 92M cap, the limit
                 * rising with it) */
                /* (below the freerun point of the larger of the limit it heads for and the limit in force,
                 * the only place a cap that is not strict never bites: db-same-a's 210M cap in a held 304M) */
                bool over_cap = s->memcg.n_writing == 0 &&
                                target <= mul_div(MAX(limit, s->global.dirty_thresh_bytes), FREERUN_PERCENT, 100) &&
                                (d->backlog_bytes > target + over_cap_slack(d, target) || (ds->strict && d->backlog_bytes > target) ||
                                 (ds->over_cap && d->backlog_bytes > target / 2));

                /* the keep band is the share rule's hysteresis: one strict for being over its cap is
                 * released with it (a 210M cap in a 380M pin stayed strict, idle, after one burst) */
                /* a first bound cut to half a small pool is not strict (fit_first_bound()), unless over it */
                bool cut = ch->source == CAP_SOURCE_PRESUMED && ch->first_bound_cut;

                strict = cut ? over_cap
                             : presumed || ds->slowed_usec || over_cap || in_force_free || target <= limit / STRICT_SHARE_DIVISOR ||
                               (ds->strict && !ds->over_cap && !ds->unbounded_in_force &&
                                target <= mul_div(limit, STRICT_KEEP_PERCENT, 100));
                over_cap_now = over_cap;
                if (cut && strict)
                        want(kstrict, 1, "it holds %s, more than its first bound %s (half the limit in force): enforce "
                             "it until it is down to it", format_bytes(a, sizeof a, d->backlog_bytes),
                             format_bytes(b, sizeof b, target));
                else if (cut)
                        ;       /* the pool bounds it */
                else if (presumed)
                        want(kstrict, 1, "presumed slow: enforce its cap %s even below freerun",
                             format_bytes(a, sizeof a, target));
                else if (ds->slowed_usec)
                        want(kstrict, 1, "it slowed to %s/s: enforce its cap %s even below freerun, so its backlog stops growing",
                             format_bytes(a, sizeof a, ds->bw_bytes_per_s), format_bytes(b, sizeof b, target));
                else if (over_cap && target > limit / STRICT_SHARE_DIVISOR && d->backlog_bytes > target)
                        want(kstrict, 1, "it holds %s, more than its cap %s: enforce it until it is down to it",
                             format_bytes(a, sizeof a, d->backlog_bytes), format_bytes(b, sizeof b, target));
                else if (over_cap && target > limit / STRICT_SHARE_DIVISOR)
                        want(kstrict, 1, "it holds %s, over half its cap %s since it held more: strict until it "
                             "is down to half", format_bytes(a, sizeof a, d->backlog_bytes), format_bytes(b, sizeof b, target));
                else if (in_force_free && target > limit / STRICT_SHARE_DIVISOR)
                        want(kstrict, 1, "%s: its cap %s is below the freerun point of the limit in force %s, "
                             "enforce it even below freerun", ds->measured ? "measured while held" : "not measured yet",
                             format_bytes(a, sizeof a, target),
                             format_bytes(b, sizeof b, s->global.dirty_thresh_bytes));
                else if (strict)
                        want(kstrict, 1, "cap %s is far below the global limit %s: enforce it even below freerun",
                             format_bytes(a, sizeof a, target), format_bytes(b, sizeof b, limit));
        }
        ds->strict = strict;
        ds->over_cap = strict && over_cap_now;
        ds->unbounded_in_force = in_force_held && ((strict && in_force_free) || ds->unbounded_in_force);
        /* a strict device that was idle gets only a sliver of its cap: the kernel's idle floor for strict
         * wbs (__wb_calc_thresh(), 6.13+) and the slow ramp-up of its share, while its bandwidth estimate
         * restarts near zero after 4 s idle. Granting it the cap as its minimum lets its writers start. */
        /* not for a device written far below its known speed (the root disk's logger): its share of the
         * pool follows its own completions, and a reservation would shrink everyone else's */
        far_below = ds->measured && d->dirty_rate_bytes_per_s < ds->bw_bytes_per_s / FAR_BELOW_DIVISOR &&
                    d->backlog_bytes < cap / 2;
        /* nor for one nobody added a megabyte to for MIN_DIRTIED_USEC: a backlog of the logger's pages is no
         * writer (run.sh gave the idle root disk min_ratio 50 %) */
        if (strict && !kmin->wanted && !far_below && ds->dirtied_mb_usec &&
            s->time_usec < ds->dirtied_mb_usec + MIN_DIRTIED_USEC)
                want(kmin, cap, "equal to its strict cap, so a writer that starts after idle gets the cap at once");
}

static void decide_device(const sample *s, const bdi_device *d, const device_config *dc, const config *c,
                          policy_device_state *ds, uint64_t limit, device_decision *dd) {
        cap_choice ch;

        policy_choose_cap(s, d, dc, c, ds, limit, &ch);
        shape_device(s, d, dc, c, &ch, ds, limit, dd);
}

/* Its writeback has completed nothing for STALL_USEC while pages are under writeback. */
static bool device_stalled(const policy_device_state *ds, uint64_t now_usec) {
        return ds->stalled_since_usec && now_usec >= ds->stalled_since_usec + STALL_USEC;
}

/* Which share of the budget a device's minimum comes from (decision_fit_minimums()). */
enum { MIN_GROUP_INNOCENT, MIN_GROUP_REST, MIN_GROUP_HELD, _MIN_GROUP_MAX };

/* Throttled by a cap of its own: its backlog is up to half its cap or more, or the guard holds the cap. */
static bool held_by_own_cap(const device_decision *dd, const bdi_device *dev) {
        const knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];

        return kmax->wanted && (kmax->held || !dev || dev->backlog_bytes >= kmax->value / 2);
}

/* A device's min or max ratio as the kernel holds it now, as bytes of limit; false if it did not read. */
static bool reading_of_limit(const bdi_device *dev, knob_id k, uint64_t limit, uint64_t *ret) {
        knob_setting set;

        if (knob_reading_setting(k, &dev->knobs.k[k - KNOB_DEVICE_FIRST], &set) < 0)
                return false;
        *ret = (uint64_t) ((unsigned __int128) limit * knob_setting_ppm(set) / KNOB_PPM_FULL);
        return true;
}

/* The sample's device i, if the decision's device i is that one. */
static const bdi_device *fit_device(const decision *out, const sample *s, size_t i) {
        return i < s->n_devices && strcmp(s->devices[i].bdi, out->devices[i].bdi) == 0 ? &s->devices[i] : NULL;
}

uint64_t decision_unmanaged_minimums(const decision *out, const sample *s, uint64_t limit) {
        uint64_t sum = 0, v;

        for (size_t i = 0; i < out->n_devices; i++) {
                const bdi_device *dev = fit_device(out, s, i);

                if (!out->devices[i].managed && dev && reading_of_limit(dev, KNOB_MIN_BYTES, limit, &v))
                        sum += v;
        }
        return sum;
}

static unsigned min_group(const decision *out, const sample *s, size_t i) {
        const device_decision *dd = &out->devices[i];

        if (dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST].held)
                return MIN_GROUP_HELD;
        if (dd->active && !held_by_own_cap(dd, fit_device(out, s, i)))
                return MIN_GROUP_INNOCENT;
        return MIN_GROUP_REST;
}

/* The kernel refuses min ratios summing to 100 %, and every one of them shrinks every other wb's share
 * (__wb_calc_thresh()): one budget for all, the innocents' first. */
void decision_fit_minimums(decision *out, const sample *s, uint64_t limit, unsigned hold_budget_percent) {
        unsigned hold_percent = MAX(hold_budget_percent, MIN_BUDGET_PERCENT);
        /* an excluded device's minimum is as the kernel holds it, not ours to fit */
        uint64_t sum[_MIN_GROUP_MAX] = { 0 }, fixed = decision_unmanaged_minimums(out, s, limit), used = 0, room;
        char a[16];

        for (size_t i = 0; i < out->n_devices; i++) {
                device_decision *dd = &out->devices[i];
                knob_decision *k = &dd->knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
                const bdi_device *dev = fit_device(out, s, i);
                uint64_t v;

                if (!dd->managed || !k->wanted)
                        continue;
                /* FUSE's own max (1 %) is never raised (plan.c): more of a minimum would be budget lost */
                if (dev && (dev->traits & BDI_TRAIT_FUSE) && reading_of_limit(dev, KNOB_MAX_BYTES, limit, &v) &&
                    v < limit && k->value > v) {
                        k->value = v;
                        if (!strstr(k->reason, ", at most its own max"))
                                append_reason(k, ", at most its own max %s", format_bytes(a, sizeof a, v));
                }
                sum[min_group(out, s, i)] += k->value;
        }
        for (unsigned g = 0; g < _MIN_GROUP_MAX; g++) {
                room = limit / 100 * (g == MIN_GROUP_HELD ? hold_percent : MIN_BUDGET_PERCENT);
                room = room > fixed + used ? room - fixed - used : 0;
                if (sum[g] <= room) {
                        used += sum[g];
                        continue;
                }
                for (size_t i = 0; i < out->n_devices; i++) {
                        knob_decision *k = &out->devices[i].knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];

                        if (!out->devices[i].managed || !k->wanted || min_group(out, s, i) != g)
                                continue;
                        k->value = mul_div(k->value, room, sum[g]);
                        if (strstr(k->reason, ", scaled down"))
                                continue;
                        if (g == MIN_GROUP_INNOCENT)
                                append_reason(k, ", scaled down: all minimums within %u %% of the limit",
                                              MIN_BUDGET_PERCENT);
                        else if (g == MIN_GROUP_REST)
                                append_reason(k, ", scaled down: all minimums within %u %% of the limit, the "
                                              "devices not held by their caps first", MIN_BUDGET_PERCENT);
                        else
                                append_reason(k, ", scaled down: the guard's held minimums within %u %% of the "
                                              "limit, after all others", hold_percent);
                }
                used += room;
        }
}

int policy_decide(const sample *s, const config *c, policy_state *st, decision *out) {
        _cleanup_free_ const device_config **dcs = NULL;   /* each device's [device] section, for both passes */
        uint64_t demand_bytes = 0, limit;
        size_t n_active = 0;

        *out = (decision) {};
        out->devices = calloc(MAX(s->n_devices, 1), sizeof *out->devices);
        dcs = calloc(MAX(s->n_devices, 1), sizeof *dcs);
        if (!out->devices || !dcs) {
                decision_done(out);
                return -ENOMEM;
        }
        out->n_devices = s->n_devices;
        if (state_sync(st, s) < 0) {
                decision_done(out);
                return -ENOMEM;
        }

        /* pass 1: bandwidth and activity per device, and the demand they add up to */
        for (size_t i = 0; i < s->n_devices; i++) {
                const bdi_device *d = &s->devices[i];
                const device_config *dc = config_find_device(c, d->name, d->alias, d->major, d->minor, d->traits);
                device_decision *dd = &out->devices[i];
                policy_device_state *ds = &st->devices[i];

                dcs[i] = dc;
                snprintf(dd->bdi, sizeof dd->bdi, "%s", d->bdi);
                snprintf(dd->name, sizeof dd->name, "%s", d->name);
                dd->managed = !dc || dc->manage;
                if (!dd->managed)
                        continue;
                update_bandwidth(ds, d, s->time_usec);
                dd->bw_bytes_per_s = ds->bw_bytes_per_s;
                dd->bw_source = ds->measured ? ds->source : SPEED_PRESUMED;
                dd->remembered_age_s = dd->bw_source == SPEED_REMEMBERED ? d->remembered_age_s : 0;
                dd->burst_bytes = (uint64_t) ds->burst_bytes;
                dd->active = bdi_device_active(d);
                /* a backlog left from before the daemon watched, that nobody has added to since, needs no
                 * room for writers: it is the guard's stuck data. (Not "nobody dirtied it lately": a writer
                 * blocked on its device dirties nothing for seconds.) */
                if (dd->active && ds->dirtied_seen) {
                        dd->need_bytes = mul_div(ds->bw_bytes_per_s, device_backlog_ms(c, dc), 1000);
                        demand_bytes += dd->need_bytes;
                        n_active++;
                }
        }

        decide_global_limits(s, c, st, demand_bytes, n_active, out);
        limit = st->dirty_bytes ? st->dirty_bytes : s->global.dirty_thresh_bytes;
        decide_intervals(c, st, limit, out);

        /* pass 2: per-device caps against the limit we are heading for */
        for (size_t i = 0; i < s->n_devices; i++) {
                knob_decision *kmin = &out->devices[i].knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST];
                knob_decision *kmax = &out->devices[i].knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];

                if (!out->devices[i].managed)
                        continue;
                decide_device(s, &s->devices[i], dcs[i], c, &st->devices[i], limit, &out->devices[i]);
                /* a device that writes nothing back keeps its cap (its writers wait, not everyone's) but no
                 * reservation, the configured one included: it would shrink every other device's share */
                if (device_stalled(&st->devices[i], s->time_usec)) {
                        kmin->wanted = kmin->from_config = false;
                        if (kmax->wanted)
                                append_reason(kmax, "; no min_bytes: its writeback completed nothing for %" PRIu64 " s",
                                              (s->time_usec - st->devices[i].stalled_since_usec) / 1000000);
                }
        }
        /* against the limit in force, not the one the policy heads for (the guard may hold it far above):
         * the guard fits them again to the limit it lets through */
        decision_fit_minimums(out, s, MAX(limit, s->global.dirty_thresh_bytes), MIN_BUDGET_PERCENT);
        if (!s->support.devices_trusted) {
                /* acting on figures that miss dirty data could cut a limit below what is dirty */
                snprintf(out->caution, sizeof out->caution, "%.140s: global limits and device caps left as they are",
                         s->support.why[0] ? s->support.why : "the per-device figures cannot be trusted");
                out->global[KNOB_DIRTY_BYTES].wanted = out->global[KNOB_DIRTY_BACKGROUND_BYTES].wanted = false;
                for (size_t i = 0; i < out->n_devices; i++)
                        for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                                if (!out->devices[i].knobs[j].wanted || !out->devices[i].knobs[j].from_config)
                                        out->devices[i].knobs[j].wanted = false;
        }
        for (size_t i = 0; i < out->n_devices; i++) {
                device_decision *dd = &out->devices[i];
                const knob_decision *kstrict = &dd->knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST];

                dd->capped = dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].wanted && kstrict->wanted && kstrict->value;
                for (size_t j = 0; j < KNOB_DEVICE_COUNT; j++)
                        dd->knobs[j].policy_value = dd->knobs[j].value;
        }
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                out->global[k].policy_value = out->global[k].value;
        return 0;
}

const char *speed_source_to_string(speed_source s) {
        static const char *const names[] = {
                [SPEED_PRESUMED] = "presumed",
                [SPEED_REMEMBERED] = "remembered",
                [SPEED_MEASURED] = "measured",
        };
        return (size_t) s < ELEMENTSOF(names) ? names[s] : "presumed";
}

uint64_t policy_fast_tick_ms(const sample *s, const policy_state *st, const decision *d, char *why, size_t why_size) {
        for (size_t i = 0; i < d->n_devices && i < s->n_devices && i < st->n_devices; i++) {
                const device_decision *dd = &d->devices[i];
                const policy_device_state *ds = &st->devices[i];
                const knob_decision *kmax = &dd->knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST];

                if (!dd->managed || strcmp(dd->bdi, s->devices[i].bdi) != 0 || strcmp(ds->bdi, dd->bdi) != 0)
                        continue;
                if (!s->devices[i].seen_before) {
                        snprintf(why, why_size, "%s: just appeared", dd->name);
                        return POLICY_FAST_TICK_MS;
                }
                if (!ds->measured && dd->active && !ds->quiet && ds->active_ticks <= FAST_TICK_UNKNOWN_TICKS) {
                        snprintf(why, why_size, "%s: speed not known yet, being written", dd->name);
                        return POLICY_FAST_TICK_MS;
                }
                if (dd->capped && kmax->held) {
                        snprintf(why, why_size, "%s: its backlog is above its bound, coming down", dd->name);
                        return POLICY_FAST_TICK_MS;
                }
        }
        if (why_size)
                why[0] = '\0';
        return 0;
}

void decision_done(decision *d) {
        free(d->devices);
        *d = (decision) {};
}

void policy_state_done(policy_state *s) {
        free(s->devices);
        *s = (policy_state) {};
}
