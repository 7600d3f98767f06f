/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the running kernel offers: knob files, statistics, and whether the per-device figures can be
 * trusted. Decided from what the kernel has, never from its version string. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe.h"

/* Dirty data the devices may fail to show before the policy stops trusting them: per-CPU counter
 * drift is far smaller, a cgroup writer the pre-6.10 stats miss is not. */
#define SUPPORT_UNACCOUNTED_MIN_BYTES (64ULL << 20)
#define SUPPORT_UNACCOUNTED_TICKS 3


/* Look at the files (root: "" or a fake tree) and the first sample. 0 or -errno. */
int support_probe(const char *root, const sample *s, kernel_support *ks);
/* Each tick: do the devices' figures still add up to the global ones? */
void support_assess(kernel_support *ks, const sample *s);

/* What the daemon really writes on this kernel when it tunes (mode auto), if that is less than every
 * knob: what (into what, e.g. "flusher intervals only") and why (into why). Pure. false: every knob. */
bool support_limited(const kernel_support *ks, char *what, size_t what_size, char *why, size_t why_size);
