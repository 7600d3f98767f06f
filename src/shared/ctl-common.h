/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What wbtunectl shows that the daemon computes or says too: the per-CPU error of the per-device
 * counters, a speed's source in words. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* wb_stat_error() in bytes (include/linux/backing-dev.h): nr_cpu_ids x 8 x (1 + ilog2(nr_cpu_ids)) pages,
 * how far one per-CPU counter read unsummed may be from the truth. */
uint64_t counter_error_bytes(unsigned nr_cpu_ids, uint64_t page_size);
/* The most a device's dirty + writeback figures can be off once it is clean: the kernel keeps them in
 * per-CPU counters read without summing (wb_stat_error(): nr_cpu_ids x WB_STAT_BATCH pages each, the
 * batch 8 x (1 + log2 nr_cpu_ids)), and a clean device can read a few KiB for good. */
uint64_t ctl_counter_error_bytes(unsigned nr_cpu_ids, uint64_t page_size);
/* nr_cpu_ids from "0-3" or "0,2-5" (/sys/devices/system/cpu/possible): the highest CPU + 1; -EINVAL. */
int ctl_parse_possible_cpus(const char *s, unsigned *ret);

/* Where a speed comes from, for people: "measured now", "remembered (age 3 h)", "presumed"; source is a
 * PROTOCOL_BW_* value ("-" for NULL: a daemon that does not say). */
const char *ctl_bw_source_text(const char *source, bool has_age, uint64_t age_s, char *buf, size_t size);
