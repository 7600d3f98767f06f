/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal test helpers: print each check, count failures, exit non-zero if any failed. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_failed, tap_count;

#define CHECK(cond) do { \
        tap_count++; \
        if (cond) printf("ok %d - %s\n", tap_count, #cond); \
        else { tap_failed++; printf("not ok %d - %s (%s:%d)\n", tap_count, #cond, __FILE__, __LINE__); } \
} while (0)

#define CHECK_EQ_U64(a, b) do { \
        unsigned long long _a = (a), _b = (b); tap_count++; \
        if (_a == _b) printf("ok %d - %s == %s\n", tap_count, #a, #b); \
        else { tap_failed++; printf("not ok %d - %s == %s: %llu != %llu (%s:%d)\n", tap_count, #a, #b, _a, _b, __FILE__, __LINE__); } \
} while (0)

#define CHECK_STREQ(a, b) do { \
        const char *_a = (a), *_b = (b); tap_count++; \
        if (_a && _b && strcmp(_a, _b) == 0) printf("ok %d - %s == \"%s\"\n", tap_count, #a, _b); \
        else { tap_failed++; printf("not ok %d - %s: \"%s\" != \"%s\" (%s:%d)\n", tap_count, #a, _a ? _a : "(null)", _b ? _b : "(null)", __FILE__, __LINE__); } \
} while (0)

/* Ends main(): "N passed, N failed" and the exit code automake reads. */
#define TEST_EXIT() do { \
        printf("%d passed, %d failed\n", tap_count - tap_failed, tap_failed); \
        return tap_failed ? EXIT_FAILURE : EXIT_SUCCESS; \
} while (0)
