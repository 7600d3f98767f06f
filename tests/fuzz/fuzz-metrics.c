/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: the metrics snapshot fed arbitrary JSON as the status result and as devices. Reading it
 * never crashes, and the rendered text is UTF-8 made of HELP, TYPE and sample lines only, whatever the
 * names hold. Build and run: tests/fuzz/run.sh. */
#include <stdint.h>
#include <string.h>

#include "escape.h"
#include "metrics.h"
#include "protocol.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what) {
        if (ok)
                return;
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct json_tokener *tok = json_tokener_new();
        metrics_snapshot *s = NULL;
        json_object *o, *devices;
        char *text = NULL;
        size_t text_size = 0;
        FILE *f;

        if (!tok)
                return 0;
        o = json_tokener_parse_ex(tok, (const char *) data, (int) MIN(size, (size_t) INT32_MAX));
        json_tokener_free(tok);
        if (!o)
                return 0;
        if (metrics_snapshot_new(o, &s) < 0) {
                json_object_put(o);
                return 0;
        }
        /* the object itself as a device, and each element of its "devices" */
        (void) metrics_snapshot_add_device(s, o);
        devices = proto_get(o, PF_DEVICES_DEVICES);
        for (size_t i = 0; json_object_is_type(devices, json_type_array) && i < json_object_array_length(devices); i++)
                (void) metrics_snapshot_add_device(s, json_object_array_get_idx(devices, i));
        f = open_memstream(&text, &text_size);
        if (f) {
                check(metrics_render(s, f) == 0, "rendering works");
                fclose(f);
                check(utf8_valid(text, text_size), "the text is UTF-8");
                for (const char *l = text; l < text + text_size;) {
                        const char *nl = memchr(l, '\n', (size_t) (text + text_size - l));

                        check(nl != NULL, "every line ends in a newline");
                        check(strncmp(l, "# HELP wbtuned_", 15) == 0 || strncmp(l, "# TYPE wbtuned_", 15) == 0 ||
                              strncmp(l, "wbtuned_", 8) == 0, "a line is HELP, TYPE or a sample");
                        l = nl + 1;
                }
                free(text);
        }
        metrics_snapshot_free(s);
        json_object_put(o);
        return 0;
}
