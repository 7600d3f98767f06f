/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared by the libFuzzer harnesses (a header, not a harness: only fuzz-*.c are built as harnesses). */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

/* The daemon's log lines would drown libFuzzer's output; FUZZ_LOG=1 keeps them (to check formats). */
static inline void fuzz_quiet_logs(void) {
        const char *v = getenv("FUZZ_LOG");

        log_set_max_level(v && v[0] == '1' ? LOG_DEBUG : -1);
}

/* A property broke: say which and abort, so libFuzzer keeps the input as a crash. */
static inline void fuzz_fail(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fuzz_fail(const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        fprintf(stderr, "fuzz: property broken: ");
        vfprintf(stderr, format, ap);
        fprintf(stderr, "\n");
        va_end(ap);
        abort();
}
