/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kernel faults for the readers, in the test binary only: linked with -Wl,--wrap=open,--wrap=openat,
 * --wrap=read,--wrap=readlink,--wrap=opendir,--wrap=access,--wrap=faccessat, the calls src/ makes on
 * one path fail the way a kernel can make them fail. Off (pass-through) until fault_set(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum fault_kind {
        FAULT_NONE,
        FAULT_OPEN,        /* open/openat/opendir/readlink/access of the path fail with error */
        FAULT_READ,        /* it opens; every read() fails with error */
        FAULT_SHORT,       /* reads return at most 3 bytes each */
        FAULT_GARBAGE,     /* the first read returns bytes that are not what the file holds, then EOF */
        FAULT_EMPTY,       /* reads return EOF at once */
} fault_kind;

/* Make operations on path (absolute, as src/ resolves it; a directory's fd counts as its path) fail. */
void fault_set(const char *path, fault_kind kind, int error);
void fault_clear(void);

/* Record every path src/ opens, reads a link of, lists or checks, until fault_record_stop(). */
void fault_record_start(void);
/* The distinct paths seen, in first-seen order; valid until the next fault_record_start(). */
size_t fault_record_stop(const char *const **ret);

/* read() calls made (all files) since the last fault_reset_counts(); and how many hit the fault. */
unsigned long fault_reads(void);
unsigned long fault_hits(void);
void fault_reset_counts(void);

const char *fault_kind_to_string(fault_kind kind);
