/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The knob table: every knob the daemon reads, writes and restores, with its files, units and rules. */
#include "knobs.h"
#include "util.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

/* Ranges are what the kernel's sysctl and sysfs handlers accept (kernel/sysctl.c, mm/backing-dev.c). */
const knob_info knob_table[_KNOB_MAX] = {
        [KNOB_DIRTY_BYTES] = {
                .id = KNOB_DIRTY_BYTES, .name = "dirty_bytes", .kind = KNOB_KIND_PAIR, .unit = KNOB_UNIT_BYTES,
                .files = { [KNOB_FORM_SELF] = "dirty_bytes", [KNOB_FORM_RATIO] = "dirty_ratio" },
                .min = 2 /* pages: knob_check_value() scales it */, .max = UINT64_MAX / 2,
                .order = KNOB_ORDER_ABOVE_BG, .since = "2.6.29",
                .description = "global dirty limit: writers are throttled between it and the freerun point below it",
        },
        [KNOB_DIRTY_BACKGROUND_BYTES] = {
                .id = KNOB_DIRTY_BACKGROUND_BYTES, .name = "dirty_background_bytes", .kind = KNOB_KIND_PAIR,
                .unit = KNOB_UNIT_BYTES,
                .files = { [KNOB_FORM_SELF] = "dirty_background_bytes", [KNOB_FORM_RATIO] = "dirty_background_ratio" },
                .min = 1, .max = UINT64_MAX / 2, .order = KNOB_ORDER_ABOVE_BG, .since = "2.6.29",
                .description = "the flushers write in the background above this much dirty data",
        },
        [KNOB_DIRTY_WRITEBACK_CENTISECS] = {
                .id = KNOB_DIRTY_WRITEBACK_CENTISECS, .name = "dirty_writeback_centisecs", .kind = KNOB_KIND_PLAIN,
                .unit = KNOB_UNIT_CENTISECS, .files = { [KNOB_FORM_SELF] = "dirty_writeback_centisecs" },
                .min = 0, .max = INT_MAX, .order = KNOB_ORDER_WAKES_FLUSHERS, .since = "2.6",
                .description = "period of the flushers' wake-ups (0: none)",
        },
        [KNOB_DIRTY_EXPIRE_CENTISECS] = {
                .id = KNOB_DIRTY_EXPIRE_CENTISECS, .name = "dirty_expire_centisecs", .kind = KNOB_KIND_PLAIN,
                .unit = KNOB_UNIT_CENTISECS, .files = { [KNOB_FORM_SELF] = "dirty_expire_centisecs" },
                .min = 0, .max = INT_MAX, .since = "2.6",
                .description = "age after which an inode's dirty data is written out",
        },
        [KNOB_MIN_BYTES] = {
                .id = KNOB_MIN_BYTES, .name = "min_bytes", .device = true, .kind = KNOB_KIND_OF_LIMIT,
                .unit = KNOB_UNIT_BYTES,
                .files = { [KNOB_FORM_SELF] = "min_bytes", [KNOB_FORM_RATIO] = "min_ratio",
                           [KNOB_FORM_FINE] = "min_ratio_fine" },
                .min = 0, .max = 0, .order = KNOB_ORDER_BELOW_MAX | KNOB_ORDER_MIN_SUM | KNOB_ORDER_BELOW_LIMIT,
                .since = "6.2",
                .description = "dirty memory always granted to the device, as a share of the global limit",
        },
        [KNOB_MAX_BYTES] = {
                .id = KNOB_MAX_BYTES, .name = "max_bytes", .device = true, .kind = KNOB_KIND_OF_LIMIT,
                .unit = KNOB_UNIT_BYTES,
                .files = { [KNOB_FORM_SELF] = "max_bytes", [KNOB_FORM_RATIO] = "max_ratio",
                           [KNOB_FORM_FINE] = "max_ratio_fine" },
                .min = 0, .max = 0, .order = KNOB_ORDER_BELOW_LIMIT, .since = "6.2",
                .description = "most dirty memory the device may hold, as a share of the global limit",
        },
        [KNOB_STRICT_LIMIT] = {
                .id = KNOB_STRICT_LIMIT, .name = "strict_limit", .device = true, .kind = KNOB_KIND_PLAIN,
                .unit = KNOB_UNIT_BOOL, .files = { [KNOB_FORM_SELF] = "strict_limit" },
                .min = 0, .max = 1, .order = KNOB_ORDER_AFTER_MAX, .since = "6.2",
                .description = "throttle the device's writers against its own limit even below the freerun point",
        },
};

static const char *const unit_names[_KNOB_UNIT_MAX] = {
        [KNOB_UNIT_BYTES] = "bytes",
        [KNOB_UNIT_CENTISECS] = "centisecs",
        [KNOB_UNIT_BOOL] = "bool",
        [KNOB_UNIT_PERCENT] = "percent",
        [KNOB_UNIT_PPM] = "ppm",
};

const knob_info *knob_get(knob_id k) {
        return (unsigned) k < _KNOB_MAX ? &knob_table[k] : NULL;
}

const char *knob_name(knob_id k) {
        return (unsigned) k < _KNOB_MAX ? knob_table[k].name : "?";
}

int knob_from_name(const char *name) {
        for (knob_id k = 0; k < _KNOB_MAX; k++)
                if (strcmp(knob_table[k].name, name) == 0)
                        return (int) k;
        return -EINVAL;
}

const char *knob_form_file(knob_id k, knob_form f) {
        if ((unsigned) k >= _KNOB_MAX || (unsigned) f >= _KNOB_FORM_MAX)
                return NULL;
        return knob_table[k].files[f];
}

int knob_form_from_file(knob_id k, const char *file) {
        for (knob_form f = 0; f < _KNOB_FORM_MAX; f++) {
                const char *name = knob_form_file(k, f);
                if (name && strcmp(name, file) == 0)
                        return (int) f;
        }
        return -EINVAL;
}

knob_unit knob_form_unit(knob_id k, knob_form f) {
        switch (f) {
        case KNOB_FORM_RATIO: return KNOB_UNIT_PERCENT;
        case KNOB_FORM_FINE: return KNOB_UNIT_PPM;
        default: return knob_table[k].unit;
        }
}

const char *knob_unit_name(knob_unit u) {
        return (unsigned) u < _KNOB_UNIT_MAX ? unit_names[u] : "?";
}

bool knob_setting_equal(knob_setting a, knob_setting b) {
        return a.form == b.form && a.value == b.value;
}

bool knob_setting_same(knob_setting a, knob_setting b) {
        if (a.form == b.form)
                return a.value == b.value;
        if (a.form == KNOB_FORM_FINE && b.form == KNOB_FORM_RATIO)
                return a.value / 10000 == b.value;
        if (a.form == KNOB_FORM_RATIO && b.form == KNOB_FORM_FINE)
                return b.value / 10000 == a.value;
        return false;
}

int knob_check_value(knob_id k, knob_form f, uint64_t value, uint64_t page_size) {
        const knob_info *info = knob_get(k);
        uint64_t min, max;

        if (!info || !knob_form_file(k, f))
                return -EINVAL;
        switch (f) {
        case KNOB_FORM_RATIO:
                /* a pair's ratio of 0 would mean a zero limit: it holds the setting only when non-zero */
                min = info->kind == KNOB_KIND_PAIR && k == KNOB_DIRTY_BYTES ? 1 : 0;
                max = 100;
                break;
        case KNOB_FORM_FINE:
                min = 0;
                max = KNOB_PPM_FULL;
                break;
        default:
                min = k == KNOB_DIRTY_BYTES ? info->min * page_size : info->min;
                max = info->max ? info->max : UINT64_MAX;
                break;
        }
        return value < min || value > max ? -ERANGE : 0;
}

const char *knob_value_to_string(knob_id k, uint64_t value, char *buf, size_t size) {
        if (knob_get(k) && knob_table[k].unit == KNOB_UNIT_BYTES)
                return format_bytes(buf, size, value);
        snprintf(buf, size, "%" PRIu64, value);
        return buf;
}

const char *knob_setting_to_string(knob_id k, knob_setting s, char *buf, size_t size) {
        switch (s.form) {
        case KNOB_FORM_RATIO:
                snprintf(buf, size, "%s %" PRIu64, knob_form_file(k, s.form) ? knob_form_file(k, s.form) : "ratio",
                         s.value);
                return buf;
        case KNOB_FORM_FINE:
                snprintf(buf, size, "%s %" PRIu64, knob_form_file(k, s.form) ? knob_form_file(k, s.form) : "ppm",
                         s.value);
                return buf;
        default:
                return knob_value_to_string(k, s.value, buf, size);
        }
}

void knob_table_print(FILE *f, bool scdoc) {
        if (scdoc)
                fputs("[[ *knob*\n:[ *of*\n:[ *unit*\n:[ *files*\n:[ *since*\n", f);
        for (knob_id k = 0; k < _KNOB_MAX; k++) {
                const knob_info *info = &knob_table[k];
                char files[128] = "";

                for (knob_form form = 0; form < _KNOB_FORM_MAX; form++)
                        if (info->files[form])
                                snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s", files[0] ? ", " : "",
                                         info->files[form]);
                if (scdoc)
                        fprintf(f, "|  %s\n:  %s\n:  %s\n:  %s\n:  %s\n", info->name, info->device ? "device" : "vm",
                                knob_unit_name(info->unit), files, info->since);
                else
                        fprintf(f, "%-26s %-6s %-9s %-6s %-50s %s\n", info->name, info->device ? "device" : "global",
                                knob_unit_name(info->unit), info->since, files, info->description);
        }
        if (scdoc) {
                fputs("\n", f);
                for (knob_id k = 0; k < _KNOB_MAX; k++)
                        fprintf(f, "- *%s*: %s.\n", knob_table[k].name, knob_table[k].description);
        }
}

uint64_t knob_bytes_to_ppm(uint64_t bytes, uint64_t thresh_pages, uint64_t page_size) {
        unsigned __int128 r;

        if (!thresh_pages || !page_size)
                return KNOB_PPM_FULL;
        r = (unsigned __int128) (bytes / page_size) * KNOB_PPM_FULL / thresh_pages;
        return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

uint64_t knob_ppm_to_bytes(uint64_t ppm, uint64_t thresh_pages, uint64_t page_size) {
        unsigned __int128 r = (unsigned __int128) thresh_pages * page_size * ppm / KNOB_PPM_FULL;

        return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

int knob_reading_setting(knob_id k, const knob_reading *r, knob_setting *ret) {
        switch (knob_table[k].kind) {
        case KNOB_KIND_PAIR:
                if (!knob_reading_has(r, KNOB_FORM_SELF) || !knob_reading_has(r, KNOB_FORM_RATIO))
                        return -ENOENT;
                *ret = r->value[KNOB_FORM_SELF] ? (knob_setting) { KNOB_FORM_SELF, r->value[KNOB_FORM_SELF] }
                                                : (knob_setting) { KNOB_FORM_RATIO, r->value[KNOB_FORM_RATIO] };
                return 0;
        case KNOB_KIND_OF_LIMIT:
                /* the percent file exists on every kernel */
                if (!knob_reading_has(r, KNOB_FORM_RATIO))
                        return -ENOENT;
                *ret = knob_reading_has(r, KNOB_FORM_FINE) ? (knob_setting) { KNOB_FORM_FINE, r->value[KNOB_FORM_FINE] }
                                                           : (knob_setting) { KNOB_FORM_RATIO, r->value[KNOB_FORM_RATIO] };
                return 0;
        default:
                if (!knob_reading_has(r, KNOB_FORM_SELF))
                        return -ENOENT;
                *ret = (knob_setting) { KNOB_FORM_SELF, r->value[KNOB_FORM_SELF] };
                return 0;
        }
}

bool knob_reading_value(knob_id k, const knob_reading *r, uint64_t thresh_bytes, uint64_t *ret) {
        if (knob_reading_has(r, KNOB_FORM_SELF)) {
                *ret = r->value[KNOB_FORM_SELF];
                return true;
        }
        if (knob_table[k].kind != KNOB_KIND_OF_LIMIT)
                return false;
        if (knob_reading_has(r, KNOB_FORM_FINE)) {
                *ret = (uint64_t) ((unsigned __int128) thresh_bytes * r->value[KNOB_FORM_FINE] / KNOB_PPM_FULL);
                return true;
        }
        if (knob_reading_has(r, KNOB_FORM_RATIO)) {
                *ret = thresh_bytes / 100 * r->value[KNOB_FORM_RATIO];
                return true;
        }
        return false;
}

bool knob_file_nth(bool device, size_t n, knob_id *ret_knob, knob_form *ret_form) {
        for (knob_id k = device ? KNOB_DEVICE_FIRST : 0; k < (device ? _KNOB_MAX : _KNOB_GLOBAL_MAX); k++)
                for (knob_form f = 0; f < _KNOB_FORM_MAX; f++) {
                        if (!knob_table[k].files[f])
                                continue;
                        if (n-- == 0) {
                                *ret_knob = k;
                                *ret_form = f;
                                return true;
                        }
                }
        return false;
}

/* The knob and form of a file, among the global or the device knobs; false if none has it. */
static bool file_lookup(bool device, const char *file, knob_id *ret_knob, knob_form *ret_form) {
        for (size_t n = 0; knob_file_nth(device, n, ret_knob, ret_form); n++)
                if (strcmp(knob_form_file(*ret_knob, *ret_form), file) == 0)
                        return true;
        return false;
}

bool knob_readings_get(const knob_reading *readings, bool device, const char *file, uint64_t *ret) {
        const knob_reading *r;
        knob_id k;
        knob_form f;

        if (!file_lookup(device, file, &k, &f))
                return false;
        r = &readings[device ? k - KNOB_DEVICE_FIRST : k];
        if (!knob_reading_has(r, f))
                return false;
        *ret = r->value[f];
        return true;
}

void knob_readings_set(knob_reading *readings, bool device, const char *file, uint64_t value) {
        knob_reading *r;
        knob_id k;
        knob_form f;

        if (!file_lookup(device, file, &k, &f))
                return;
        r = &readings[device ? k - KNOB_DEVICE_FIRST : k];
        r->has |= 1u << f;
        r->value[f] = value;
}

unsigned knob_readings_count(const knob_reading *readings, bool device) {
        unsigned n = 0;
        knob_id k;
        knob_form f;

        for (size_t i = 0; knob_file_nth(device, i, &k, &f); i++)
                n += knob_reading_has(&readings[device ? k - KNOB_DEVICE_FIRST : k], f);
        return n;
}

uint64_t knob_setting_ppm(knob_setting s) {
        switch (s.form) {
        case KNOB_FORM_FINE: return s.value;
        case KNOB_FORM_RATIO: return s.value * 10000;
        default: return 0;
        }
}
