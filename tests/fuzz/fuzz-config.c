/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: the config parser (config_parse_text(), the code config_load() runs on each
 * file). A config that loads must dump to a file that loads back to the same config; a config that
 * fails must leave the caller's untouched; matching devices against it must not crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz-common.h"
#include "log.h"
#include "observe.h"

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_logs();
        sink = fopen("/dev/null", "we");
        if (!sink)
                abort();
        return 0;
}

static bool same_device(const device_config *a, const device_config *b) {
        return strcmp(a->match, b->match) == 0 && a->manage == b->manage && a->backlog_ms == b->backlog_ms &&
               a->min_bytes == b->min_bytes && a->max_bytes == b->max_bytes && a->strict_limit == b->strict_limit;
}

static bool same_config(const config *a, const config *b) {
        if (a->tick_ms != b->tick_ms || strcmp(a->socket_path, b->socket_path) != 0 ||
            a->log_level != b->log_level || a->history_minutes != b->history_minutes ||
            a->attribution != b->attribution || a->task_delayacct != b->task_delayacct ||
            a->mode != b->mode || a->backlog_ms != b->backlog_ms || a->dirty_bytes != b->dirty_bytes ||
            a->dirty_background_bytes != b->dirty_background_bytes || a->min_dirty_bytes != b->min_dirty_bytes ||
            a->max_dirty_bytes != b->max_dirty_bytes || a->min_device_bytes != b->min_device_bytes ||
            a->unmeasured_device_bytes != b->unmeasured_device_bytes || a->max_age_ms != b->max_age_ms ||
            a->n_devices != b->n_devices)
                return false;
        for (unsigned i = 0; i < a->n_devices; i++)
                if (!same_device(&a->devices[i], &b->devices[i]))
                        return false;
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const names[] = { "sda", "sdb1", "loop7", "nvme0n1", "dm-3", "[a-", "", NULL };
        config *c = malloc(sizeof(*c)), *again = malloc(sizeof(*again));
        char *dump = NULL;
        size_t dump_size = 0;
        FILE *f;
        int r;

        if (!c || !again)
                abort();
        config_init(c);
        c->tick_ms = 4242;              /* a canary: a failed load must not touch *c */
        r = config_parse_text("fuzz.conf", (const char *) data, size, c, sink);
        if (r > 0)
                fuzz_fail("config_parse_text() returned %d", r);
        if (r < 0) {
                if (c->tick_ms != 4242)
                        fuzz_fail("a failed load (%d) changed the config", r);
                goto out;
        }

        f = open_memstream(&dump, &dump_size);
        if (!f)
                abort();
        config_dump(c, f);
        fclose(f);
        r = config_parse_text("dump.conf", dump, dump_size, again, sink);
        if (r < 0 || !same_config(c, again)) {
                fprintf(stderr, "--- dump that does not load back the same (r=%d):\n%s---\n", r, dump);
                fuzz_fail("config_dump() output does not load back to the same config");
        }

        for (size_t i = 0; i < ELEMENTS(names); i++)
                for (unsigned traits = 0; traits < 32; traits += 7)
                        (void) config_find_device(c, names[i], i % 2 ? "vg0-root" : NULL, 8, (unsigned) i, traits);
out:
        free(dump);
        free(c);
        free(again);
        return 0;
}
