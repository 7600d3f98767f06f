/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Table tests for the write plan: knobs now + targets + owners in, ordered writes out. No kernel, fake or real. */
#include "plan.h"
#include "util.h"
#include "tap.h"

#include <inttypes.h>
#include <string.h>

#define M (1024ULL * 1024ULL)
#define PAGE 4096ULL
#define THRESH_PAGES 200000ULL          /* a 781M limit, as ratio 20 of ~3.8G */
#define BG_PAGES 100000ULL

/* A global knob as a fresh kernel has it. */
static knob_now g_now(knob_id k) {
        knob_now n = { .readable = true, .has = { true, true } };

        switch (k) {
        case KNOB_DIRTY_BYTES: n.setting = (knob_setting) { KNOB_FORM_RATIO, 20 }; break;
        case KNOB_DIRTY_BACKGROUND_BYTES: n.setting = (knob_setting) { KNOB_FORM_RATIO, 10 }; break;
        case KNOB_DIRTY_WRITEBACK_CENTISECS: n.value = 500; n.setting = (knob_setting) { KNOB_FORM_SELF, 500 }; break;
        default: n.value = 3000; n.setting = (knob_setting) { KNOB_FORM_SELF, 3000 }; break;
        }
        return n;
}

/* A device knob: 6.2+ (fine, bytes, strict) or older (percent only). ppm of the limit for min/max. */
static knob_now d_now(knob_id k, bool new_kernel, uint64_t ppm_or_value) {
        knob_now n = { .readable = true };

        if (k == KNOB_STRICT_LIMIT) {
                n.has[KNOB_FORM_SELF] = new_kernel;
                n.value = new_kernel ? ppm_or_value : 0;
                n.setting = (knob_setting) { KNOB_FORM_SELF, n.value };
                return n;
        }
        n.has[KNOB_FORM_RATIO] = true;
        n.has[KNOB_FORM_SELF] = n.has[KNOB_FORM_FINE] = new_kernel;
        n.value = new_kernel ? knob_ppm_to_bytes(ppm_or_value, THRESH_PAGES, PAGE) : 0;
        n.setting = new_kernel ? (knob_setting) { KNOB_FORM_FINE, ppm_or_value }
                               : (knob_setting) { KNOB_FORM_RATIO, ppm_or_value / 10000 };
        return n;
}

typedef struct fixture {
        plan_input in;
        knob_owner gown[_KNOB_GLOBAL_MAX];
        plan_device dev[4];
        knob_owner down[4][KNOB_DEVICE_COUNT];
        plan p;
} fixture;

/* F must be zeroed before its first use: a fixture set up again releases the plan it holds */
static void fixture_init(fixture *f, size_t n_devices, bool new_kernel) {
        static const char *const names[] = { "7:0", "7:1", "7:2", "7:3" };

        plan_done(&f->p);
        memset(f, 0, sizeof *f);
        f->in = (plan_input) { .page_size = PAGE, .thresh_pages = THRESH_PAGES, .bg_thresh_pages = BG_PAGES,
                               .dirtyable_bytes = THRESH_PAGES * PAGE * 5, .global_owner = f->gown,
                               .devices = f->dev, .n_devices = n_devices };
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                f->in.global_now[k] = g_now(k);
        for (size_t i = 0; i < n_devices; i++) {
                f->dev[i].bdi = names[i];
                f->dev[i].owner = f->down[i];
                f->dev[i].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, new_kernel, 0);
                f->dev[i].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, new_kernel, KNOB_PPM_FULL);
                f->dev[i].now[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST] = d_now(KNOB_STRICT_LIMIT, new_kernel, 0);
        }
}

/* Knob k of device i as we wrote it: ours (ppm, *_ratio_fine) over the saved original. */
static void ours_fine(fixture *f, size_t i, knob_id k, uint64_t original_ppm, uint64_t ours_ppm) {
        f->down[i][k - KNOB_DEVICE_FIRST] = (knob_owner) { .saved = true, .original = { KNOB_FORM_FINE, original_ppm },
                                                          .written = true, .ours = { KNOB_FORM_FINE, ours_ppm } };
}

static knob_target value(uint64_t v) {
        return (knob_target) { TARGET_VALUE, v, "test" };
}

static knob_target restore(void) {
        return (knob_target) { TARGET_RESTORE, 0, "restore" };
}

#define DT(f, i, k) ((f)->dev[i].target[(k) - KNOB_DEVICE_FIRST])
#define DOWN(f, i, k) ((f)->down[i][(k) - KNOB_DEVICE_FIRST])

/* "7:1 max_bytes 16777216", "global dirty_ratio 20" */
static void op_text(const fixture *f, const plan_op *o, char *buf, size_t size) {
        snprintf(buf, size, "%s %s %" PRIu64, o->device == PLAN_GLOBAL ? "global" : f->dev[o->device].bdi,
                 knob_form_file(o->knob, o->form), o->value);
}

/* The plan's writes, as text, against the expected list (NULL-terminated). */
static bool ops_are(const fixture *f, const char *const *want) {
        size_t n = 0;
        bool ok = true;

        for (; want[n]; n++) {
                char got[128];
                if (n >= f->p.n_ops) {
                        printf("#   missing write %zu: %s\n", n, want[n]);
                        ok = false;
                        continue;
                }
                op_text(f, &f->p.ops[n], got, sizeof got);
                if (strcmp(got, want[n]) != 0) {
                        printf("#   write %zu: got \"%s\", want \"%s\"\n", n, got, want[n]);
                        ok = false;
                }
        }
        for (size_t i = n; i < f->p.n_ops; i++) {
                char got[128];
                op_text(f, &f->p.ops[i], got, sizeof got);
                printf("#   extra write %zu: %s\n", i, got);
                ok = false;
        }
        return ok;
}

static bool has_note(const fixture *f, plan_note_kind kind) {
        for (size_t i = 0; i < f->p.n_notes; i++)
                if (f->p.notes[i].kind == kind)
                        return true;
        return false;
}

static bool build(fixture *f) {
        plan_done(&f->p);
        return plan_build(&f->in, &f->p) == 0;
}

static void test_globals(void) {
        fixture f = {};

        printf("# globals: dirty above the current background goes first, then background, then intervals\n");
        fixture_init(&f, 0, true);
        f.in.global_target[KNOB_DIRTY_BYTES] = value(400 * M);
        f.in.global_target[KNOB_DIRTY_BACKGROUND_BYTES] = value(200 * M);
        f.in.global_target[KNOB_DIRTY_EXPIRE_CENTISECS] = value(1500);
        f.in.global_target[KNOB_DIRTY_WRITEBACK_CENTISECS] = value(500);   /* already so: no write */
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "global dirty_bytes 419430400", "global dirty_background_bytes 209715200",
                                             "global dirty_expire_centisecs 1500", NULL }));
        CHECK_EQ_U64(f.p.thresh_pages_after, 400 * M / PAGE);

        printf("# a limit at or below the current background: background first\n");
        f.in.global_target[KNOB_DIRTY_BYTES] = value(300 * M);
        f.in.global_target[KNOB_DIRTY_BACKGROUND_BYTES] = value(150 * M);
        f.in.global_target[KNOB_DIRTY_EXPIRE_CENTISECS] = (knob_target) {};
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "global dirty_background_bytes 157286400", "global dirty_bytes 314572800",
                                             NULL }));

        printf("# restore: a pair goes back through the member that held it\n");
        fixture_init(&f, 0, true);
        f.in.global_now[KNOB_DIRTY_BYTES] = (knob_now) { .readable = true, .has = { true, true }, .value = 400 * M,
                                                         .setting = { KNOB_FORM_SELF, 400 * M } };
        f.gown[KNOB_DIRTY_BYTES] = (knob_owner) { .saved = true, .original = { KNOB_FORM_RATIO, 20 }, .written = true,
                                                  .ours = { KNOB_FORM_SELF, 400 * M } };
        f.in.global_target[KNOB_DIRTY_BYTES] = restore();
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "global dirty_ratio 20", NULL }));
        CHECK(f.p.ops[0].restore);
        CHECK_EQ_U64(f.p.thresh_pages_after, THRESH_PAGES);   /* predicted by the ratio */

        printf("# values the kernel refuses are not planned: dirty_bytes below two pages\n");
        fixture_init(&f, 0, true);
        f.in.global_target[KNOB_DIRTY_BYTES] = value(4096);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        plan_done(&f.p);
}

static void test_device_order(void) {
        fixture f = {};

        printf("# a cap: after the global limit, strict_limit=1 last and only after its max_bytes\n");
        fixture_init(&f, 2, true);
        f.in.global_target[KNOB_DIRTY_BYTES] = value(400 * M);
        DT(&f, 1, KNOB_MAX_BYTES) = value(16 * M);
        DT(&f, 1, KNOB_STRICT_LIMIT) = value(1);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "global dirty_bytes 419430400", "7:1 max_bytes 16777216",
                                             "7:1 strict_limit 1", NULL }));
        CHECK_EQ_U64(f.p.ops[2].needs, 1);
        /* the kernel keeps 16M of 400M as 40000 ppm */
        CHECK_EQ_U64(f.p.ops[1].expect.form, KNOB_FORM_FINE);
        CHECK_EQ_U64(f.p.ops[1].expect.value, 40000);

        printf("# strict without a cap is not planned (it would throttle against the whole limit)\n");
        fixture_init(&f, 1, true);
        DT(&f, 0, KNOB_STRICT_LIMIT) = value(1);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);

        printf("# going back: strict_limit=0 first, then the ratio\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 40000);
        f.dev[0].now[KNOB_STRICT_LIMIT - KNOB_DEVICE_FIRST] = d_now(KNOB_STRICT_LIMIT, true, 1);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 40000);
        DOWN(&f, 0, KNOB_STRICT_LIMIT) = (knob_owner) { .saved = true, .original = { KNOB_FORM_SELF, 0 },
                                                        .written = true, .ours = { KNOB_FORM_SELF, 1 } };
        DT(&f, 0, KNOB_MAX_BYTES) = restore();
        DT(&f, 0, KNOB_STRICT_LIMIT) = restore();
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 strict_limit 0", "7:0 max_ratio_fine 1000000", NULL }));

        printf("# min <= max after every write: raising min above the current max raises max first\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 100000);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 100000);
        DT(&f, 0, KNOB_MIN_BYTES) = value(300 * M);
        DT(&f, 0, KNOB_MAX_BYTES) = value(500 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 524288000", "7:0 min_bytes 314572800", NULL }));

        printf("# ... and lowering max below the current min lowers min first\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 500000);
        DT(&f, 0, KNOB_MIN_BYTES) = value(10 * M);
        DT(&f, 0, KNOB_MAX_BYTES) = value(20 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 min_bytes 10485760", "7:0 max_bytes 20971520", NULL }));

        printf("# a min above the wanted max is lowered to it; a cap above the limit is the limit\n");
        fixture_init(&f, 2, true);
        DT(&f, 0, KNOB_MIN_BYTES) = value(64 * M);
        DT(&f, 0, KNOB_MAX_BYTES) = value(32 * M);
        DT(&f, 1, KNOB_MAX_BYTES) = value(10000 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 33554432", "7:0 min_bytes 33554432", NULL }));

        printf("# a floor going up from 0 under a new cap: the cap first, whatever the limit does between them\n");
        fixture_init(&f, 1, true);
        DT(&f, 0, KNOB_MIN_BYTES) = value(141209600);
        DT(&f, 0, KNOB_MAX_BYTES) = value(141211648);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 141211648", "7:0 min_bytes 141209600", NULL }));
        plan_done(&f.p);
}

/* issue 23 row 10: vm.dirty_bytes cannot be written (ReadOnlyPaths=/proc/sys/vm, an LSM) */
static void test_limit_unwritable(void) {
        fixture f = {};
        struct {
                const char *what;
                knob_setting dirty;             /* what the kernel holds for the limit */
                bool ours_written;              /* 7:0's max_bytes was written by us before */
                bool safe;
                const char *const want[4];
        } rows[] = {
                { "ratio mode: the limit follows memory, no device value",
                  { KNOB_FORM_RATIO, 20 }, false, false, { NULL } },
                { "ratio mode: ours go back to the originals",
                  { KNOB_FORM_RATIO, 20 }, true, false, { "7:0 max_ratio_fine 1000000", NULL } },
                { "bytes mode: the limit stays put, device knobs alone are safe",
                  { KNOB_FORM_SELF, 400 * M }, false, true,
                  { "7:0 max_bytes 141211648", "7:0 min_bytes 67108864", NULL } },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                printf("# limit unwritable, %s\n", rows[i].what);
                fixture_init(&f, 1, true);
                f.in.global_limit_unwritable = true;
                f.in.global_now[KNOB_DIRTY_BYTES].setting = rows[i].dirty;
                f.in.global_now[KNOB_DIRTY_BYTES].value = rows[i].dirty.form == KNOB_FORM_SELF ? rows[i].dirty.value : 0;
                f.gown[KNOB_DIRTY_BYTES].refused = -EROFS;
                f.in.global_target[KNOB_DIRTY_EXPIRE_CENTISECS] = value(1500);
                if (rows[i].ours_written) {
                        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 100000);
                        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 100000);
                }
                DT(&f, 0, KNOB_MIN_BYTES) = value(64 * M);
                DT(&f, 0, KNOB_MAX_BYTES) = value(141211648);
                CHECK(plan_devices_alone_safe(&f.in) == rows[i].safe);
                CHECK(build(&f));
                if (rows[i].safe)
                        CHECK(ops_are(&f, (const char *[]) { "global dirty_expire_centisecs 1500", rows[i].want[0],
                                                             rows[i].want[1], NULL }));
                else
                        CHECK(ops_are(&f, rows[i].want));
                CHECK(has_note(&f, PLAN_NOTE_DEVICES_DROPPED) == !rows[i].safe);
        }
        printf("# the limit writable: device knobs as planned\n");
        fixture_init(&f, 1, true);
        CHECK(plan_devices_alone_safe(&f.in));
        plan_done(&f.p);
}

/* The second write of a pair, fitted to the first as the kernel holds it when it is made. */
static void test_fit_pair(void) {
        struct {
                knob_id k;
                uint64_t value, partner_ppm, thresh_pages, want;
        } rows[] = {
                /* the 6.12 case: max written at 180000 ppm of 200000 pages, the limit grew to 210000 pages */
                { KNOB_MIN_BYTES, 141209600, 176000, 210000, 141209600 },
                { KNOB_MIN_BYTES, 141209600, 100000, 210000, 21000ULL * PAGE },
                { KNOB_MIN_BYTES, 4 * M, 1000000, 200000, 4 * M },
                { KNOB_MAX_BYTES, 16 * M, 0, 200000, 16 * M },
                { KNOB_MAX_BYTES, 100 * M, 200000, 190000, 38001ULL * PAGE },
                { KNOB_MAX_BYTES, 100 * M, 5000000, 190000, 190001ULL * PAGE },     /* a partner beyond 100 % */
        };

        printf("# a pair's second write fits the first as the kernel holds it now\n");
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                uint64_t got = plan_fit_pair(rows[i].k, rows[i].value, rows[i].partner_ppm, rows[i].thresh_pages, PAGE);
                uint64_t ppm = knob_bytes_to_ppm(got, rows[i].thresh_pages, PAGE);

                CHECK_EQ_U64(got, rows[i].want);
                if (rows[i].k == KNOB_MIN_BYTES)
                        CHECK(ppm <= rows[i].partner_ppm);
                else
                        CHECK(ppm >= MIN(rows[i].partner_ppm, KNOB_PPM_FULL));
        }
}

static void test_min_sum(void) {
        fixture f = {};

        printf("# the devices' mins are shrunk to fit below 100 %% with what others hold\n");
        fixture_init(&f, 3, true);
        f.in.others_min_ppm = 100000;
        for (size_t i = 0; i < 3; i++)
                DT(&f, i, KNOB_MIN_BYTES) = value(400 * M);   /* 3 x 51 % of the limit */
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 3);
        CHECK(f.p.n_notes == 1 && f.p.notes[0].kind == PLAN_NOTE_MIN_SCALED);
        {
                uint64_t sum = f.in.others_min_ppm;
                for (size_t i = 0; i < f.p.n_ops; i++)
                        sum += knob_bytes_to_ppm(f.p.ops[i].value, THRESH_PAGES, PAGE);
                CHECK(sum < KNOB_PPM_FULL);
                CHECK(sum > 980000);
        }

        printf("# a device lowering its min goes before one raising it\n");
        fixture_init(&f, 2, true);
        f.dev[1].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 600000);
        DT(&f, 0, KNOB_MIN_BYTES) = value(300 * M);
        DT(&f, 1, KNOB_MIN_BYTES) = value(4 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:1 min_bytes 4194304", "7:0 min_bytes 314572800", NULL }));
        plan_done(&f.p);
}

static void test_drift(void) {
        fixture f = {};

        printf("# a cap that reads back within 1 %% of the wanted bytes is not rewritten\n");
        fixture_init(&f, 1, true);
        /* 16M of the 781M limit is 20480 ppm; 20600 is within 1 % */
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 20600);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 20600);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);

        printf("# ... but after the limit halves, the same ratio means half the bytes: rewritten\n");
        f.in.global_target[KNOB_DIRTY_BYTES] = value(THRESH_PAGES * PAGE / 2);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "global dirty_bytes 409600000", "7:0 max_bytes 16777216", NULL }));
        CHECK_EQ_U64(f.p.ops[1].expect.value, 40960);

        printf("# a floor within 10 %% of the wanted bytes is left; 15 %% off, or a cap 5 %% off, is rewritten\n");
        fixture_init(&f, 1, true);
        /* 8M of the 781M limit is 10240 ppm */
        f.dev[0].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 9300);
        DT(&f, 0, KNOB_MIN_BYTES) = value(8 * M);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        f.dev[0].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 11200);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        f.dev[0].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 8700);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 min_bytes 8388608", NULL }));
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 19450);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 19450);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 16777216", NULL }));

        printf("# ... but a floor within 10 %% stays no higher than a cap going below it (EINVAL): both, floor first\n");
        fixture_init(&f, 1, true);
        /* min = max = 74M (94720 ppm of the 781M limit), both wanted at 69.3M (88704 ppm) */
        f.dev[0].now[KNOB_MIN_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MIN_BYTES, true, 94720);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 94720);
        ours_fine(&f, 0, KNOB_MIN_BYTES, 0, 94720);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 94720);
        DT(&f, 0, KNOB_MIN_BYTES) = value(69 * M);
        DT(&f, 0, KNOB_MAX_BYTES) = value(69 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 min_bytes 72351744", "7:0 max_bytes 72351744", NULL }));
        printf("# ... and one below the new cap stays as it is\n");
        DT(&f, 0, KNOB_MAX_BYTES) = value(80 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 83886080", NULL }));
        plan_done(&f.p);
}

static void test_old_kernel(void) {
        fixture f = {};

        printf("# before 6.2: a cap in whole percents rounded up, no strict_limit, noted once as unsupported\n");
        fixture_init(&f, 1, false);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);        /* 2.05 % of the limit */
        DT(&f, 0, KNOB_STRICT_LIMIT) = value(1);
        DT(&f, 0, KNOB_MIN_BYTES) = value(1 * M);         /* 0.13 %: rounds down to 0, which it is */
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio 3", NULL }));
        CHECK(f.p.n_notes == 1 && f.p.notes[0].kind == PLAN_NOTE_UNSUPPORTED && f.p.notes[0].knob == KNOB_STRICT_LIMIT);

        printf("# a tiny cap is at least 1 %% (max_ratio 0 would stop the device)\n");
        DT(&f, 0, KNOB_MAX_BYTES) = value(1 * M);
        DT(&f, 0, KNOB_MIN_BYTES) = (knob_target) {};
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio 1", NULL }));
        plan_done(&f.p);
}

static void test_devices_as_ratio(void) {
        fixture f = {};
        size_t i;

        printf("# a limit about to fall: min and max as ratios of it (their *_ratio_fine), min <= max at each write\n");
        fixture_init(&f, 2, true);
        /* 7:0 holds 16M of today's 781M (20480 ppm) as our cap, and keeps it: the limit falls to 390M */
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 20480);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 20480);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        /* 7:1 gets a new cap of 64M and a min of 32M */
        DT(&f, 1, KNOB_MAX_BYTES) = value(64 * M);
        DT(&f, 1, KNOB_MIN_BYTES) = value(32 * M);
        f.in.thresh_pages = THRESH_PAGES / 2;
        f.in.devices_as_ratio = true;
        plan_done(&f.p);
        CHECK(plan_build_part(&f.in, PLAN_DEVICES, &f.p) == 0);
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio_fine 40960", "7:1 max_ratio_fine 163840",
                                             "7:1 min_ratio_fine 81920", NULL }));
        for (i = 0; i < f.p.n_ops; i++) {
                CHECK_EQ_U64(f.p.ops[i].for_limit_bytes, THRESH_PAGES / 2 * PAGE);
                CHECK_EQ_U64(f.p.ops[i].expect.form, KNOB_FORM_FINE);
        }

        printf("# a min raised as a ratio goes no higher than a max left within its tolerance holds\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 80000);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 80000);
        DT(&f, 0, KNOB_MAX_BYTES) = value(knob_ppm_to_bytes(80000, THRESH_PAGES, PAGE));
        DT(&f, 0, KNOB_MIN_BYTES) = value(knob_ppm_to_bytes(80000, THRESH_PAGES, PAGE));
        f.in.thresh_pages = THRESH_PAGES - THRESH_PAGES / 200;   /* a 0.5 % fall: the max stays */
        f.in.devices_as_ratio = true;
        plan_done(&f.p);
        CHECK(plan_build_part(&f.in, PLAN_DEVICES, &f.p) == 0);
        CHECK(ops_are(&f, (const char *[]) { "7:0 min_ratio_fine 80000", NULL }));

        printf("# (review) before 6.2 the percent form is a ratio already: the same writes in whole percents\n");
        fixture_init(&f, 1, false);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);        /* 4.1 % of 390M: 5 */
        f.in.thresh_pages = THRESH_PAGES / 2;
        f.in.devices_as_ratio = true;
        plan_done(&f.p);
        CHECK(plan_build_part(&f.in, PLAN_DEVICES, &f.p) == 0);
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio 5", NULL }));

        plan_done(&f.p);
}

static void test_ownership(void) {
        fixture f = {};

        printf("# a knob that is not what we wrote was changed by someone: noted, not written\n");
        fixture_init(&f, 1, true);
        f.in.global_now[KNOB_DIRTY_BYTES] = (knob_now) { .readable = true, .has = { true, true }, .value = 900 * M,
                                                         .setting = { KNOB_FORM_SELF, 900 * M } };
        f.gown[KNOB_DIRTY_BYTES] = (knob_owner) { .saved = true, .original = { KNOB_FORM_RATIO, 20 }, .written = true,
                                                  .ours = { KNOB_FORM_SELF, 400 * M } };
        f.in.global_target[KNOB_DIRTY_BYTES] = value(300 * M);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 500000);
        ours_fine(&f, 0, KNOB_MAX_BYTES, KNOB_PPM_FULL, 20480);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        CHECK_EQ_U64(f.p.n_notes, 2);
        CHECK(f.p.notes[0].kind == PLAN_NOTE_OVERRIDDEN && f.p.notes[0].device == PLAN_GLOBAL &&
              f.p.notes[0].setting.value == 900 * M);
        CHECK(f.p.notes[1].kind == PLAN_NOTE_OVERRIDDEN && f.p.notes[1].device == 0 &&
              f.p.notes[1].knob == KNOB_MAX_BYTES);

        printf("# never written by us: a change since we last saw it is someone's; the same value, or ppm vs %%, is not\n");
        {
                knob_now at = { .readable = true, .setting = { KNOB_FORM_SELF, 600 * M } };
                knob_now fine = { .readable = true, .setting = { KNOB_FORM_FINE, 30000 } };
                knob_owner seen = { .seen = true, .seen_setting = { KNOB_FORM_SELF, 400 * M } };
                knob_owner seen_same = { .seen = true, .seen_setting = { KNOB_FORM_SELF, 600 * M } };
                knob_owner seen_percent = { .seen = true, .seen_setting = { KNOB_FORM_RATIO, 3 } };
                knob_owner unseen = {};
                CHECK(plan_overridden(&at, &seen));
                CHECK(!plan_overridden(&at, &seen_same));
                CHECK(!plan_overridden(&at, &unseen));
                CHECK(!plan_overridden(&fine, &seen_percent));
        }

        printf("# targets: wanted -> value; changed and not wanted -> restore; overridden or refused -> leave\n");
        {
                knob_owner none = {}, ours = { .saved = true, .written = true }, theirs = { .overridden = true },
                           ro = { .refused = -EROFS }, lsm = { .saved = true, .written = true, .refused = -EPERM };
                CHECK(plan_target(true, 5, "x", &none, false).kind == TARGET_VALUE);
                CHECK(plan_target(false, 0, NULL, &none, false).kind == TARGET_NONE);
                CHECK(plan_target(false, 0, NULL, &ours, false).kind == TARGET_RESTORE);
                CHECK(plan_target(true, 5, "x", &ours, true).kind == TARGET_RESTORE);
                CHECK(plan_target(true, 5, "x", &theirs, false).kind == TARGET_NONE);
                CHECK(plan_target(false, 0, NULL, &theirs, true).kind == TARGET_NONE);
                CHECK(plan_target(true, 5, "x", &ro, false).kind == TARGET_NONE);
                CHECK(plan_target(false, 0, NULL, &ro, true).kind == TARGET_NONE);
                /* refused after we wrote it: left alone while running, the original tried at the stop */
                CHECK(plan_target(true, 5, "x", &lsm, false).kind == TARGET_NONE);
                CHECK(plan_target(false, 0, NULL, &lsm, true).kind == TARGET_RESTORE);
                CHECK(plan_target(true, 5, "x", NULL, false).kind == TARGET_VALUE);
        }

        printf("# an unreadable device knob is not planned\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].readable = false;
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        plan_done(&f.p);
}

static void test_kernel_bounds(void) {
        fixture f = {};

        printf("# a max the kernel set low on purpose (FUSE: 1 %%) is never raised\n");
        fixture_init(&f, 1, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 10000);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);      /* 2 % of the limit */
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        printf("# ... nor after our own write: the original bounds it\n");
        ours_fine(&f, 0, KNOB_MAX_BYTES, 10000, 5000);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 5000);
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 1);
        CHECK_EQ_U64(f.p.ops[0].expect.value, 10000);
        printf("# a lower cap is fine\n");
        DT(&f, 0, KNOB_MAX_BYTES) = value(4 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 4194304", NULL }));
        plan_done(&f.p);
}

/* The limit in force is ours: 100M, where the kernel's own ratio 20 gives THRESH_PAGES (781M). */
static void limit_ours_100m(fixture *f) {
        f->in.thresh_pages = 100 * M / PAGE;
        f->in.global_now[KNOB_DIRTY_BYTES] = (knob_now) { .readable = true, .has = { true, true }, .value = 100 * M,
                                                          .setting = { KNOB_FORM_SELF, 100 * M } };
        f->gown[KNOB_DIRTY_BYTES] = (knob_owner) { .saved = true, .original = { KNOB_FORM_RATIO, 20 }, .written = true,
                                                   .ours = { KNOB_FORM_SELF, 100 * M } };
        f->in.keep_own_bounds = true;
        for (size_t i = 0; i < f->in.n_devices; i++)
                f->dev[i].bound_of_kernel_limit = true;
}

/* One device whose max the kernel or an admin set at max_ppm of the kernel's own limit, under our 100M. */
static void own_bound_fixture(fixture *f, uint64_t max_ppm) {
        fixture_init(f, 1, true);
        f->dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, max_ppm);
        limit_ours_100m(f);
}

static void test_own_bounds_kept(void) {
        /* FUSE's 1 % of the kernel's own 781M: 2000 pages */
        const uint64_t own = 2000 * PAGE;
        fixture f = {};

        printf("# a max of its own (FUSE's 1 %%) keeps its bytes of the kernel's own limit under a lower one of ours\n");
        own_bound_fixture(&f, 10000);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 8192000", NULL }));
        CHECK(f.p.n_ops == 1 && f.p.ops[0].reason && strstr(f.p.ops[0].reason, "kept in bytes"));

        printf("# ... and a cap of the policy's is held to those bytes, not to 1 %% of the lower limit (1M)\n");
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 8192000", NULL }));
        CHECK(f.p.n_ops == 1 && f.p.ops[0].reason && strstr(f.p.ops[0].reason, "never raised"));
        DT(&f, 0, KNOB_MAX_BYTES) = value(4 * M);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 4194304", NULL }));

        printf("# once kept, not rewritten while within a tenth (the kernel's own limit moves with memory)\n");
        DT(&f, 0, KNOB_MAX_BYTES) = restore();
        ours_fine(&f, 0, KNOB_MAX_BYTES, 10000, knob_bytes_to_ppm(own, 100 * M / PAGE, PAGE));
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].setting = DOWN(&f, 0, KNOB_MAX_BYTES).ours;
        f.in.dirtyable_bytes += f.in.dirtyable_bytes / 20;
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);

        printf("# a restore (the stop, a released device) puts the kernel's 1 %% back\n");
        f.in.keep_own_bounds = false;
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio_fine 10000", NULL }));

        printf("# an admin's change after ours is theirs: left alone\n");
        f.in.keep_own_bounds = true;
        DOWN(&f, 0, KNOB_MAX_BYTES).overridden = true;
        DT(&f, 0, KNOB_MAX_BYTES) = (knob_target) { TARGET_NONE, 0, NULL };
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST].setting = (knob_setting) { KNOB_FORM_FINE, 30000 };
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);

        printf("# the kernel's own limit in force: nothing to keep; a device at 100 %% has no bound of its own\n");
        fixture_init(&f, 2, true);
        f.dev[0].now[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST] = d_now(KNOB_MAX_BYTES, true, 10000);
        f.in.keep_own_bounds = true;
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        limit_ours_100m(&f);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 8192000", NULL }));

        printf("# an admin's max_bytes in bytes of the kernel's limit (ratio 0.5 %% of 781M): kept at 3.9M\n");
        own_bound_fixture(&f, 5000);
        CHECK(build(&f));
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_bytes 4096000", NULL }));

        printf("# a max set after our limit took over (an admin's max_bytes then) is bytes of ours: as it is\n");
        f.dev[0].bound_of_kernel_limit = false;
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        DT(&f, 0, KNOB_MAX_BYTES) = value(16 * M);      /* ... and a cap is held to 0.5 % of ours: no write */
        CHECK(build(&f));
        CHECK_EQ_U64(f.p.n_ops, 0);
        DT(&f, 0, KNOB_MAX_BYTES) = (knob_target) { TARGET_NONE, 0, NULL };
        f.dev[0].bound_of_kernel_limit = true;

        printf("# a limit about to fall (the prescale): the bytes kept, as a ratio of the limit it falls to\n");
        f.in.thresh_pages = 50 * M / PAGE;
        f.in.devices_as_ratio = true;
        plan_done(&f.p);
        CHECK(plan_build_part(&f.in, PLAN_DEVICES, &f.p) == 0);
        CHECK(ops_are(&f, (const char *[]) { "7:0 max_ratio_fine 78125", NULL }));
        plan_done(&f.p);
}

int main(void) {
        test_own_bounds_kept();
        test_kernel_bounds();
        test_devices_as_ratio();
        test_globals();
        test_device_order();
        test_min_sum();
        test_drift();
        test_old_kernel();
        test_ownership();
        test_limit_unwritable();
        test_fit_pair();
        TEST_EXIT();
}
