/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl wait's progress model: a device's backlog read over time, how far it is written, when it is
 * clean, and how much the kernel's per-CPU counters may still show on a clean device. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl-wait.h"
#include "escape.h"
#include "util.h"

double ctl_clean_in_s(uint64_t backlog_bytes, uint64_t bw_bytes_per_s) {
        if (backlog_bytes == 0)
                return 0.0;
        if (bw_bytes_per_s == 0)
                return -1.0;
        return (double) backlog_bytes / (double) bw_bytes_per_s;
}

double ctl_wait_done_percent(const ctl_wait_state *w) {
        uint64_t backlog = w->dirty_bytes + w->writeback_bytes, max = MAX(w->max_backlog_bytes, backlog);

        return max == 0 ? 100.0 : 100.0 * (double) (max - backlog) / (double) max;
}

const char *ctl_format_wait_line(const ctl_wait_state *w, const char *name, bool bar, char *buf, size_t size) {
        enum { BAR_WIDTH = 20 };
        char left[32], dirty[32], wb[32], bw[32], eta[32], bar_text[BAR_WIDTH + 4] = "";
        double percent = ctl_wait_done_percent(w), clean_in = ctl_clean_in_s(w->dirty_bytes + w->writeback_bytes,
                                                                             w->bw_bytes_per_s);
        _cleanup_free_ char *escaped = escape_text_alloc(name);

        if (bar) {
                size_t filled = (size_t) (percent / 100.0 * BAR_WIDTH + 0.5);

                bar_text[0] = '[';
                for (size_t i = 0; i < BAR_WIDTH; i++)
                        bar_text[1 + i] = i < filled ? '#' : '.';
                bar_text[BAR_WIDTH + 1] = ']';
                bar_text[BAR_WIDTH + 2] = ' ';
                bar_text[BAR_WIDTH + 3] = '\0';
        }
        /* wait calls a few KiB of per-CPU counter error clean too: the line says what the exit status says */
        if (w->dirty_bytes + w->writeback_bytes == 0 || (w->state && strcmp(w->state, CTL_WAIT_CLEAN) == 0))
                snprintf(eta, sizeof eta, "clean");
        else if (clean_in < 0)
                snprintf(eta, sizeof eta, "bandwidth not known yet");
        else
                snprintf(eta, sizeof eta, "clean in %s", ctl_format_duration(left, sizeof left, clean_in));
        snprintf(buf, size, "%s %s%3.0f%% %s left (dirty %s, writeback %s) at %s/s, %s%s", escaped, bar_text, percent,
                 format_bytes(left, sizeof left, w->dirty_bytes + w->writeback_bytes),
                 format_bytes(dirty, sizeof dirty, w->dirty_bytes), format_bytes(wb, sizeof wb, w->writeback_bytes),
                 format_bytes(bw, sizeof bw, w->bw_bytes_per_s), eta,
                 w->syncing && w->dirty_bytes + w->writeback_bytes == 0 ? " (syncfs still running)" : "");
        return buf;
}

/* A number with a fixed number of decimals (json-c would print 0.40181800000000001). */
static json_object *json_double_rounded(double v, int decimals) {
        char text[512];   /* DBL_MAX has 309 digits */

        snprintf(text, sizeof text, "%.*f", decimals, isfinite(v) ? v : 0.0);
        return oom_check(json_object_new_double_s(strtod(text, NULL), text));
}

/* o[key] = v, v a constructor's result (NULL: out of memory, unless null is meant: nullable). */
static void put(json_object *o, const char *key, json_object *v, bool nullable) {
        if (!v && !nullable)
                oom();
        oom_check_add(json_object_object_add(o, key, v));
}

json_object *ctl_wait_json(const ctl_wait_state *w, const char *name, const char *bdi) {
        json_object *o = oom_check(json_object_new_object());
        uint64_t backlog = w->dirty_bytes + w->writeback_bytes;
        double clean_in = ctl_clean_in_s(backlog, w->bw_bytes_per_s);

        put(o, "device", json_object_new_string(name), false);
        put(o, "bdi", json_object_new_string(bdi), false);
        put(o, "state", json_object_new_string(w->state), false);
        put(o, "dirty_bytes", json_object_new_uint64(w->dirty_bytes), false);
        put(o, "writeback_bytes", json_object_new_uint64(w->writeback_bytes), false);
        put(o, "backlog_bytes", json_object_new_uint64(backlog), false);
        put(o, "done_percent", json_double_rounded(ctl_wait_done_percent(w), 1), false);
        put(o, "bw_estimate_bytes_per_s", json_object_new_uint64(w->bw_bytes_per_s), false);
        put(o, "clean_in_s", clean_in < 0 ? NULL : json_double_rounded(clean_in, 1), true);
        put(o, "elapsed_s", json_double_rounded(w->elapsed_s, 3), false);
        put(o, "syncing", json_object_new_boolean(w->syncing), false);
        return o;
}
