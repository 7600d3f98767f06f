/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whole machines through the guard (which fits every minimum, as the policy does): 1, 3 and 20 devices,
 * an excluded device holding a min_ratio, a FUSE mount; each device's threshold as __wb_calc_thresh()
 * would give it. */
#include "guard.h"
#include "util.h"
#include "knob-files.h"
#include "tap.h"

#include <inttypes.h>
#include <string.h>

#define M (1024ULL * 1024ULL)
#define SEC 1000000ULL
#define MAX_DEVICES 72

typedef struct machine {
        sample s;
        bdi_device dev[MAX_DEVICES];
        decision d;
        device_decision dd[MAX_DEVICES];
        guard_state st;
} machine;

#define MINB(m, i) (&(m)->dd[i].knobs[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST])
#define MAXB(m, i) (&(m)->dd[i].knobs[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST])
#define STRICT(m, i) (&(m)->dd[i].knobs[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST])

static void want(knob_decision *k, uint64_t v) {
        *k = (knob_decision) { .wanted = true, .value = v };
        snprintf(k->reason, sizeof k->reason, "policy");
}

/* The kernel's limit thresh, n idle managed devices "8:<16 i>", the guard long settled on that limit. */
static void machine_init(machine *m, uint64_t thresh, size_t n) {
        memset(m, 0, sizeof *m);
        m->s.time_usec = 10000 * SEC;
        m->s.global.dirty_thresh_bytes = thresh;
        m->s.global.background_thresh_bytes = thresh / 2;
        m->s.devices = m->dev;
        m->s.n_devices = n;
        m->d.devices = m->dd;
        m->d.n_devices = n;
        for (size_t i = 0; i < n; i++) {
                snprintf(m->dev[i].bdi, sizeof m->dev[i].bdi, "8:%zu", 16 * i);
                snprintf(m->dd[i].bdi, sizeof m->dd[i].bdi, "%s", m->dev[i].bdi);
                m->dev[i].seen_before = true;
                m->dd[i].managed = true;
                m->dd[i].bw_bytes_per_s = 30 * M;
        }
        m->st = (guard_state) { .limit_bytes = thresh, .ceiling_bytes = thresh, .limit_changed_usec = SEC };
}

/* Device i written, holding backlog, strictly capped by the policy at cap with the cap as its minimum. */
static void strict_writer(machine *m, size_t i, uint64_t backlog, uint64_t cap) {
        m->dev[i].dirty_bytes = backlog / 2;
        m->dev[i].writeback_bytes = backlog - backlog / 2;
        m->dev[i].backlog_bytes = backlog;
        m->s.global.dirty_bytes += backlog / 2;
        m->s.global.writeback_bytes += backlog - backlog / 2;
        m->dd[i].active = m->dd[i].capped = true;
        want(MAXB(m, i), cap);
        want(MINB(m, i), cap);
        want(STRICT(m, i), 1);
}

/* The sum of all min ratios as the kernel would hold them after this tick's writes, as bytes of the limit:
 * the minimums written, and the excluded devices' as they are. */
static uint64_t min_sum(const machine *m) {
        uint64_t sum = 0, v;

        for (size_t i = 0; i < m->s.n_devices; i++) {
                const knob_decision *k = MINB(m, i);

                if (m->dd[i].managed && k->wanted)
                        sum += k->value;
                else if (!m->dd[i].managed && knob_readings_get(m->dev[i].knobs.k, true, "min_ratio", &v))
                        sum += m->s.global.dirty_thresh_bytes / 100 * v;
        }
        return sum;
}

/* __wb_calc_thresh() for device i with a share of the recent completions: thresh x (1 - the sum of min
 * ratios) x share, plus its own minimum, at most its max (FUSE's own 1 % when it reads one). */
static uint64_t kernel_thresh(const machine *m, size_t i, double share) {
        uint64_t thresh = m->s.global.dirty_thresh_bytes, sum = min_sum(m), own = 0, max = thresh, ratio;
        double t;

        if (MINB(m, i)->wanted)
                own = MINB(m, i)->value;
        if (MAXB(m, i)->wanted)
                max = MAXB(m, i)->value;
        if (knob_readings_get(m->dev[i].knobs.k, true, "max_ratio", &ratio) && ratio < 100)
                max = MIN(max, thresh / 100 * ratio);
        t = (double) (thresh - MIN(sum, thresh)) * share + (double) own;
        return MIN((uint64_t) t, max);
}

static void run(machine *m, const char *what) {
        guard_apply(&m->s, &m->st, &m->d);
        printf("# %s: all minimums %" PRIu64 "M of %" PRIu64 "M\n", what, (uint64_t) (min_sum(m) / M),
               (uint64_t) (m->s.global.dirty_thresh_bytes / M));
        for (size_t i = 0; i < m->s.n_devices && i < 4; i++)
                if (MINB(m, i)->wanted)
                        printf("#   %s min %" PRIu64 "K: %s\n", m->dd[i].bdi, (uint64_t) (MINB(m, i)->value >> 10), MINB(m, i)->reason);
}

/* 1 managed device: a stick at its strict 25M cap, next to a disk the daemon is told not to manage that
 * holds min_ratio 30 (an admin's, or another tool's). The budget counts it: 50 - 30 = 20 % is left. */
static void test_one_device_and_an_excluded_minimum(void) {
        machine m;

        machine_init(&m, 100 * M, 2);
        m.dd[0].managed = false;
        bdi_file_set(&m.dev[0], "min_ratio", 30);
        strict_writer(&m, 1, 25 * M, 25 * M);
        run(&m, "1 device, an excluded one at min_ratio 30");
        CHECK(min_sum(&m) <= 100 * M / 100 * MIN_BUDGET_PERCENT);
        CHECK_EQ_U64(MINB(&m, 1)->value, 20 * M);
        CHECK(strstr(MINB(&m, 1)->reason, "scaled down") != NULL);
        /* a device with no minimum keeps at least half of its share */
        CHECK(kernel_thresh(&m, 0, 0.5) + 1 >= 100 * M / 4);
        /* an excluded minimum beyond the budget leaves nothing for the others, never a negative */
        bdi_file_set(&m.dev[0], "min_ratio", 60);
        strict_writer(&m, 1, 25 * M, 25 * M);
        run(&m, "an excluded one at min_ratio 60");
        CHECK_EQ_U64(MINB(&m, 1)->value, 0);
}

/* 3 devices: an innocent disk being written (its strict first bound far above its backlog), a stick at its
 * strict cap, and a FUSE mount written (strict by the kernel, max_ratio 1 %). The innocents' minimums come
 * first; FUSE's counts only up to its own 1 %, the stick has what is left. */
static void test_three_devices_innocents_first(void) {
        machine m;
        uint64_t limit = 160 * M, budget = limit / 100 * MIN_BUDGET_PERCENT, fuse_max = limit / 100;

        machine_init(&m, limit, 3);
        strict_writer(&m, 0, 8 * M, 64 * M);           /* the disk: 8M of its 64M */
        strict_writer(&m, 1, 16 * M, 16 * M);          /* the stick: at its cap */
        strict_writer(&m, 2, 1 * M, 16 * M);           /* FUSE: its presumed bound, the kernel's 1 % below it */
        m.dev[2].traits = BDI_TRAIT_FUSE;
        bdi_file_set(&m.dev[2], "max_ratio", 1);
        bdi_file_set(&m.dev[2], "strict_limit", 1);
        run(&m, "3 devices");
        CHECK_EQ_U64(MINB(&m, 0)->value, 64 * M);
        CHECK_EQ_U64(MINB(&m, 2)->value, fuse_max);
        CHECK(strstr(MINB(&m, 2)->reason, "at most its own max") != NULL);
        CHECK_EQ_U64(MINB(&m, 1)->value, budget - 64 * M - fuse_max);
        CHECK(min_sum(&m) <= budget);
        /* FUSE keeps its whole 1 %, even with no share of the completions */
        CHECK_EQ_U64(kernel_thresh(&m, 2, 0.0), fuse_max);
        /* the disk keeps its cap as its threshold, whatever its share */
        CHECK(kernel_thresh(&m, 0, 0.0) >= 64 * M);

        /* FUSE without a minimum of ours (its writer paused for a tick): it keeps half its share at least */
        MINB(&m, 2)->wanted = false;
        CHECK(kernel_thresh(&m, 2, 0.5) + 1 >= MIN(fuse_max, limit / 4));
        CHECK(kernel_thresh(&m, 2, 0.01) + 1 >= limit / 200);
}

/* 20 devices: 19 innocents each written well below a strict 16M cap, one stick at its cap. The innocents'
 * 304M do not fit in half of 400M: scaled to it, and the stick, throttled by its own cap, has none. */
static void test_twenty_devices(void) {
        machine m;
        uint64_t limit = 400 * M, budget = limit / 100 * MIN_BUDGET_PERCENT, sum = 0;

        machine_init(&m, limit, 20);
        for (size_t i = 0; i < 19; i++)
                strict_writer(&m, i, 2 * M, 16 * M);
        strict_writer(&m, 19, 16 * M, 16 * M);
        run(&m, "20 devices");
        for (size_t i = 0; i < 19; i++)
                sum += MINB(&m, i)->value;
        CHECK(sum <= budget && sum + 19 >= budget);
        CHECK_EQ_U64(MINB(&m, 0)->value, mul_div(16 * M, budget, 19 * 16 * M));
        CHECK_EQ_U64(MINB(&m, 19)->value, 0);
        CHECK(min_sum(&m) <= budget);
        CHECK(kernel_thresh(&m, 19, 0.06) + 1 >= limit / 100 * 6 / 2);
}

/* Under a strict hold (a stick 240M over its 16M cap, in a 300M limit) the innocent disk keeps its whole
 * minimum; the hold's minimum has what GUARD_HOLD_BUDGET_PERCENT leaves after it. */
static void test_hold_after_the_innocents(void) {
        machine m;
        uint64_t limit = 300 * M;

        machine_init(&m, limit, 2);
        strict_writer(&m, 0, 8 * M, 64 * M);
        strict_writer(&m, 1, 240 * M, 16 * M);
        run(&m, "a hold next to an innocent disk");
        CHECK(MAXB(&m, 1)->held);
        CHECK_EQ_U64(MINB(&m, 0)->value, 64 * M);
        /* what is left, 206M of a 240M backlog, is more than a second's drain short: not strict while it
         * drains, and then only the policy's own minimum, within the common budget */
        CHECK(STRICT(&m, 1)->held && STRICT(&m, 1)->value == 0);
        CHECK(strstr(STRICT(&m, 1)->held_reason, "does not fit") != NULL);
        CHECK_EQ_U64(MINB(&m, 1)->value, 16 * M);
        CHECK(min_sum(&m) <= limit / 100 * MIN_BUDGET_PERCENT);

        /* in a 350M limit the 240M fit after the disk's 64M: it stays strict, its minimum its held cap
         * (5 % above the backlog) or what fits of it, 315M - 64M, above the backlog all the same */
        machine_init(&m, 350 * M, 2);
        strict_writer(&m, 0, 8 * M, 64 * M);
        strict_writer(&m, 1, 240 * M, 16 * M);
        run(&m, "the same in a 350M limit");
        CHECK_EQ_U64(MINB(&m, 0)->value, 64 * M);
        CHECK_EQ_U64(MINB(&m, 1)->value, MIN(MAXB(&m, 1)->value, 350 * M / 100 * GUARD_HOLD_BUDGET_PERCENT - 64 * M));
        CHECK(MINB(&m, 1)->value > 240 * M);
        CHECK(STRICT(&m, 1)->value == 1 && !STRICT(&m, 1)->held);
}

/* More strict holds at once than the guard can remember (GUARD_DEVICES_MAX): one that cannot remember its
 * cap would follow its writer up every tick; it is left not strict while it drains, its cap above the
 * backlog (review of the strict hold that follows the backlog). */
static void test_more_holds_than_slots(void) {
        machine m;
        size_t n = GUARD_DEVICES_MAX + 1;
        bool all_strict_remembered = true;

        machine_init(&m, 100000 * M, n);
        for (size_t i = 0; i < n; i++)
                strict_writer(&m, i, 240 * M, 16 * M);
        run(&m, "65 strict holds at once");
        for (size_t i = 0; i < GUARD_DEVICES_MAX; i++)
                all_strict_remembered = all_strict_remembered && MAXB(&m, i)->held && STRICT(&m, i)->value == 1;
        CHECK(all_strict_remembered);
        CHECK(MAXB(&m, n - 1)->value > 240 * M);
        CHECK(STRICT(&m, n - 1)->value == 0 && STRICT(&m, n - 1)->held);
        CHECK(strstr(STRICT(&m, n - 1)->held_reason, "devices are held at once") != NULL);
        CHECK(MINB(&m, n - 1)->value <= 16 * M);
}

int main(void) {
        test_one_device_and_an_excluded_minimum();
        test_three_devices_innocents_first();
        test_twenty_devices();
        test_hold_after_the_innocents();
        test_more_holds_than_slots();
        TEST_EXIT();
}
