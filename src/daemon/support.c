/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the running kernel offers: knob files, statistics, and whether the per-device figures can be trusted. */
#include "support.h"
#include "events.h"
#include "log.h"
#include "util.h"

#include <inttypes.h>
#include <string.h>

/* cgroup v2 writeback needs both the memory and the io controller on the unified hierarchy. */
static bool controllers_have_io_and_memory(const char *root, const char *path) {
        _cleanup_free_ char *p = path_join_root(root, path), *buf = NULL;
        bool io = false, memory = false;
        char *save = NULL;

        if (!p || read_file_full(p, &buf, NULL) < 0)
                return false;
        for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
                io = io || strcmp(w, "io") == 0;
                memory = memory || strcmp(w, "memory") == 0;
        }
        return io && memory;
}

/* Does any device have this knob's own file (max_bytes, strict_limit)? */
static bool any_device_has(const sample *s, knob_id k) {
        for (size_t i = 0; i < s->n_devices; i++)
                if (knob_reading_has(&s->devices[i].knobs.k[k - KNOB_DEVICE_FIRST], KNOB_FORM_SELF))
                        return true;
        return false;
}

int support_probe(const char *root, const sample *s, kernel_support *ks) {
        *ks = (kernel_support) { .debugfs = s->debugfs };
        for (size_t i = 0; i < s->n_devices && ks->debugfs; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/sys/kernel/debug/bdi/%s/wb_stats", root ? root : "", s->devices[i].bdi) < 0)
                        return -ENOMEM;
                if (access(p, R_OK) == 0) {
                        ks->wb_stats = true;
                        break;
                }
        }
        ks->cgroup_writeback = controllers_have_io_and_memory(root, "/sys/fs/cgroup/cgroup.controllers") ||
                               controllers_have_io_and_memory(root, "/sys/fs/cgroup/unified/cgroup.controllers");
        ks->bdi_bytes = any_device_has(s, KNOB_MAX_BYTES);
        ks->strict_limit = any_device_has(s, KNOB_STRICT_LIMIT);
        support_assess(ks, s);
        return 0;
}

void support_assess(kernel_support *ks, const sample *s) {
        uint64_t inflight = s->global.dirty_bytes + s->global.writeback_bytes, shown = 0, bound;

        ks->debugfs = s->debugfs;
        for (size_t i = 0; i < s->n_devices; i++)
                shown += s->devices[i].backlog_bytes;
        ks->unaccounted_bytes = inflight > shown ? inflight - shown : 0;
        bound = MAX(SUPPORT_UNACCOUNTED_MIN_BYTES, inflight / 2);
        if (ks->debugfs && !ks->wb_stats && ks->unaccounted_bytes > bound) {
                if (++ks->unaccounted_ticks >= SUPPORT_UNACCOUNTED_TICKS && !ks->unaccounted_seen) {
                        ks->unaccounted_seen = true;
                        log_event(EVENT_FIGURES_UNTRUSTED, LOG_WARNING, NULL, NULL, NULL,
                                  "The devices show %" PRIu64 " MiB less dirty and writeback data than the kernel's "
                                  "total: their statistics miss writers (in cgroups, before Linux 6.10). Global "
                                  "limits and device caps are left as they are.", ks->unaccounted_bytes >> 20);
                }
        } else
                ks->unaccounted_ticks = 0;

        ks->why[0] = 0;
        if (!ks->debugfs)
                snprintf(ks->why, sizeof ks->why, "no per-device dirty and writeback figures (debugfs bdi statistics)");
        else if (!ks->wb_stats && ks->cgroup_writeback)
                snprintf(ks->why, sizeof ks->why, "the per-device statistics show only the root cgroup's writeback "
                         "(no bdi wb_stats: before Linux 6.10), and writers in cgroups have their own");
        else if (ks->unaccounted_seen)
                snprintf(ks->why, sizeof ks->why, "the devices' figures missed up to %" PRIu64 " MiB of the kernel's "
                         "dirty and writeback total", ks->unaccounted_bytes >> 20);
        ks->devices_trusted = ks->why[0] == 0;
}

bool support_limited(const kernel_support *ks, char *what, size_t what_size, char *why, size_t why_size) {
        if (!ks->devices_trusted) {
                /* policy.c then leaves the global limits and the device caps as they are */
                snprintf(what, what_size, "flusher intervals only");
                snprintf(why, why_size, "%s; the global limits and device caps are left as they are (device "
                         "values set in wbtuned.conf excepted)", ks->why[0] ? ks->why : "the per-device figures "
                         "cannot be trusted");
                return true;
        }
        if (!ks->bdi_bytes) {
                snprintf(what, what_size, "global limits, flusher intervals, device caps in whole percents");
                snprintf(why, why_size, "this kernel has no max_bytes, min_bytes or strict_limit (Linux 6.2): caps "
                         "are written as max_ratio, floors as min_ratio, none strict");
                return true;
        }
        return false;
}
