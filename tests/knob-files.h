/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests read and set the knob files of a sample by name, as the kernel names them. */
#pragma once

#include "knobs.h"
#include "observe.h"

/* A vm knob file of a sample's global state; UINT64_MAX if it did not read. */
static inline uint64_t vm_file(const global_state *g, const char *file) {
        uint64_t v;
        return knob_readings_get(g->knobs.k, false, file, &v) ? v : UINT64_MAX;
}

static inline void vm_file_set(global_state *g, const char *file, uint64_t value) {
        knob_readings_set(g->knobs.k, false, file, value);
}

/* A BDI's knob file; UINT64_MAX if this kernel (or this read) has no such file. */
static inline uint64_t bdi_file(const bdi_device *d, const char *file) {
        uint64_t v;
        return knob_readings_get(d->knobs.k, true, file, &v) ? v : UINT64_MAX;
}

static inline bool bdi_has(const bdi_device *d, const char *file) {
        uint64_t v;
        return knob_readings_get(d->knobs.k, true, file, &v);
}

static inline void bdi_file_set(bdi_device *d, const char *file, uint64_t value) {
        knob_readings_set(d->knobs.k, true, file, value);
}

/* How many of its seven knob files read (all on 6.2+, two before). */
static inline unsigned bdi_files_read(const bdi_device *d) {
        return knob_readings_count(d->knobs.k, true);
}
