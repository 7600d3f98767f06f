/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The knob table: every knob the daemon reads, writes and restores, with its files, units and rules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Knobs the policy decides. Global ones live in /proc/sys/vm, device ones in /sys/class/bdi/<bdi>/. */
typedef enum knob_id {
        KNOB_DIRTY_BYTES,
        KNOB_DIRTY_BACKGROUND_BYTES,
        KNOB_DIRTY_WRITEBACK_CENTISECS,
        KNOB_DIRTY_EXPIRE_CENTISECS,
        _KNOB_GLOBAL_MAX,
        KNOB_MIN_BYTES = _KNOB_GLOBAL_MAX,
        KNOB_MAX_BYTES,
        KNOB_STRICT_LIMIT,
        _KNOB_MAX,
} knob_id;
#define KNOB_DEVICE_FIRST KNOB_MIN_BYTES
#define KNOB_DEVICE_COUNT (_KNOB_MAX - KNOB_DEVICE_FIRST)

typedef enum knob_unit {
        KNOB_UNIT_BYTES,
        KNOB_UNIT_CENTISECS,
        KNOB_UNIT_BOOL,
        KNOB_UNIT_PERCENT,
        KNOB_UNIT_PPM,
        _KNOB_UNIT_MAX,
} knob_unit;

/* The files one knob's setting can be in. */
typedef enum knob_form {
        KNOB_FORM_SELF,    /* the knob's own file, in its unit: dirty_bytes, max_bytes, strict_limit */
        KNOB_FORM_RATIO,   /* percent: dirty_ratio (the partner of dirty_bytes), max_ratio (of the limit) */
        KNOB_FORM_FINE,    /* parts per million of the limit: max_ratio_fine (6.2+) */
        _KNOB_FORM_MAX,
} knob_form;

/* How the kernel keeps a knob's setting. */
typedef enum knob_kind {
        KNOB_KIND_PLAIN,      /* one file, read back as written */
        KNOB_KIND_PAIR,       /* *_bytes with a *_ratio partner: writing one zeroes the other; the non-zero
                               * member holds the setting, and writing 0 to *_bytes is EINVAL */
        KNOB_KIND_OF_LIMIT,   /* bytes stored as a ratio of the current global limit (ppm in *_ratio_fine,
                               * else percent): reading *_bytes multiplies by today's limit, so it drifts */
} knob_kind;

/* Order constraints the write plan honours (besides "global before device"). */
enum {
        KNOB_ORDER_BELOW_MAX   = 1 << 0,   /* min <= max after every write */
        KNOB_ORDER_MIN_SUM     = 1 << 1,   /* the sum of every device's min ratio stays below 100 % */
        KNOB_ORDER_AFTER_MAX   = 1 << 2,   /* set (to 1) only after max_bytes, cleared before the others */
        KNOB_ORDER_BELOW_LIMIT = 1 << 3,   /* at most the current dirty limit, else EINVAL */
        KNOB_ORDER_ABOVE_BG    = 1 << 4,   /* dirty_bytes vs background: lower background first */
        KNOB_ORDER_WAKES_FLUSHERS = 1 << 5, /* every write wakes the flusher of every device: only on a real change */
};

typedef struct knob_info {
        knob_id id;
        const char *name;                   /* the knob's own file and its name everywhere */
        bool device;                        /* per BDI, else global */
        knob_kind kind;
        knob_unit unit;                     /* of the knob's own file */
        const char *files[_KNOB_FORM_MAX];  /* file of each form it has; NULL where none */
        uint64_t min, max;                  /* what the kernel accepts in its own file (max 0: the limit) */
        unsigned order;                     /* KNOB_ORDER_* */
        const char *since;                  /* first kernel with its own file */
        const char *description;            /* one line, for explain and the man page */
} knob_info;

/* What the kernel holds for one knob: which file carries the setting, and its value in that file's unit.
 * Two settings compare equal exactly when the kernel holds the same thing (restore, change detection). */
typedef struct knob_setting {
        knob_form form;
        uint64_t value;
} knob_setting;

/* One knob's files as a reader found them: the value of each form, and which forms the kernel has. */
typedef struct knob_reading {
        unsigned has;                       /* 1 << knob_form for each file that read */
        uint64_t value[_KNOB_FORM_MAX];
} knob_reading;

static inline bool knob_reading_has(const knob_reading *r, knob_form f) {
        return (r->has >> f) & 1;
}

extern const knob_info knob_table[_KNOB_MAX];

const knob_info *knob_get(knob_id k);
const char *knob_name(knob_id k);                       /* "dirty_bytes", ...; "?" if out of range */
int knob_from_name(const char *name);                   /* knob_id or -EINVAL */
/* The file of a form ("dirty_ratio", "max_ratio_fine"), or NULL if the knob has no such form. */
const char *knob_form_file(knob_id k, knob_form f);
/* Which form a file name is for a knob; -EINVAL if it is none of its files. */
int knob_form_from_file(knob_id k, const char *file);
knob_unit knob_form_unit(knob_id k, knob_form f);
const char *knob_unit_name(knob_unit u);                /* "bytes", "centisecs", "bool", "percent", "ppm" */
bool knob_setting_equal(knob_setting a, knob_setting b);
/* The kernel holds the same thing: equal, or for a share of the limit the same ratio read through its
 * ppm and its percent file (the percent file is the ppm rounded down). */
bool knob_setting_same(knob_setting a, knob_setting b);

/* Is value acceptable for the kernel in this form of the knob? page_size for the 2-page minimum of
 * dirty_bytes. 0 or -ERANGE/-EINVAL (no such form). */
int knob_check_value(knob_id k, knob_form f, uint64_t value, uint64_t page_size);

/* A setting for people: "400M", "ratio 20", "15000 ppm", "1", "500 cs". */
const char *knob_setting_to_string(knob_id k, knob_setting s, char *buf, size_t size);
/* A value of the knob's own unit for people: "16.0M", "500", "1". */
const char *knob_value_to_string(knob_id k, uint64_t value, char *buf, size_t size);

/* The table for people: "text" (one line a knob) or "scdoc" (a man page table). */
void knob_table_print(FILE *f, bool scdoc);

/* Bytes <-> ratio of the limit, as the kernel converts them (mm/page-writeback.c, bdi_ratio_from_pages():
 * whole pages, rounded down). thresh_pages: the global dirty threshold now. */
#define KNOB_PPM_FULL 1000000ULL
uint64_t knob_bytes_to_ppm(uint64_t bytes, uint64_t thresh_pages, uint64_t page_size);
uint64_t knob_ppm_to_bytes(uint64_t ppm, uint64_t thresh_pages, uint64_t page_size);
/* A setting of a KNOB_KIND_OF_LIMIT knob in parts per million, whatever its form. */
uint64_t knob_setting_ppm(knob_setting s);

/* What the kernel holds, from a reading, by the knob's kind: a pair's non-zero member, a share of
 * the limit in ppm (else percent), or the file itself. -ENOENT if the reading lacks what every kernel
 * has for it (the device or the knob is gone). */
int knob_reading_setting(knob_id k, const knob_reading *r, knob_setting *ret);
/* The knob in its own unit: its own file, or for a share of the limit on a kernel without *_bytes
 * what its ratio means against thresh_bytes. false if the kernel has neither. */
bool knob_reading_value(knob_id k, const knob_reading *r, uint64_t thresh_bytes, uint64_t *ret);

/* The readings of all global (device false: _KNOB_GLOBAL_MAX of them) or all device knobs
 * (KNOB_DEVICE_COUNT), looked at by file name ("max_ratio_fine"): get is false when the file did not
 * read or no knob has it; set marks it read; count is how many files read. */
bool knob_readings_get(const knob_reading *readings, bool device, const char *file, uint64_t *ret);
void knob_readings_set(knob_reading *readings, bool device, const char *file, uint64_t value);
unsigned knob_readings_count(const knob_reading *readings, bool device);

/* Every file of every knob in table order, for readers: the n-th file's knob, form and name.
 * false past the last. */
bool knob_file_nth(bool device, size_t n, knob_id *ret_knob, knob_form *ret_form);
