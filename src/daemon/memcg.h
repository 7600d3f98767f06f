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
        unsigned n_limited;             /* cgroups with a finite memory.high or memory.max */
        unsigned n_writing;             /* ... of which hold at least MEMCG_WRITING_BYTES dirty or in writeback */
        uint64_t writing_bytes;         /* their dirty + writeback, summed */
        uint64_t smallest_limit_bytes;  /* the smallest limit, min(memory.high, memory.max), among those writing
                                         * (0: none) */
        char smallest_limit_file[16];   /* the file that limit comes from: "memory.high" or "memory.max" */
        char example[128];              /* the cgroup with it, for messages ("system.slice/foo.service") */
        unsigned n_malformed;           /* cgroups skipped: a limit or memory.stat figure that does not parse */
        char malformed[192];            /* the first of them, file and text, unescaped ("" if none) */
} memcg_summary;

/* Walk root/sys/fs/cgroup (or its unified/ mount) at most max_depth levels deep. A cgroup's limit is
 * min(memory.high, memory.max), as the kernel's headroom (mem_cgroup_wb_stats()) counts both. Unreadable
 * or vanishing cgroups are skipped; so are malformed ones, counted in n_malformed. 0, or -ENOENT when
 * there is no cgroup v2 memory controller. */
int memcg_scan(const char *root, unsigned max_depth, memcg_summary *ret);
