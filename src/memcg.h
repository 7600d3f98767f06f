/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory cgroups with a memory limit (cgroup v2): each is its own writeback domain, whose dirty limit is
 * the global dirty_bytes taken as a share of global memory and applied to its memory. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Dirty and writeback data below this in a cgroup is not a writer worth a floor. */
#define MEMCG_WRITING_BYTES (1ULL << 20)

typedef struct memcg_summary {
        bool cgroup2;                   /* a cgroup v2 hierarchy with the memory controller was found */
        unsigned n_limited;             /* cgroups with a finite memory.max */
        unsigned n_writing;             /* ... of which hold at least MEMCG_WRITING_BYTES dirty or in writeback */
        uint64_t writing_bytes;         /* their dirty + writeback, summed */
        uint64_t smallest_max_bytes;    /* the smallest memory.max among those writing (0: none) */
        char example[128];              /* one of them, for messages ("system.slice/foo.service") */
} memcg_summary;

/* Walk root/sys/fs/cgroup (or its unified/ mount) at most max_depth levels deep. Unreadable or vanishing
 * cgroups are skipped. 0, or -ENOENT when there is no cgroup v2 memory controller. */
int memcg_scan(const char *root, unsigned max_depth, memcg_summary *ret);
