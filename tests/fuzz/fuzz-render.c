/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: wbtunectl's reading of replies fed arbitrary JSON (and arbitrary CSV for plot). The
 * check against the protocol, every renderer on checked and unchecked objects, and the plot's CSV
 * reader never crash, and what they print holds no control character but the newline; nor do the
 * tables without their legend, or wait's line and JSON object made from a device. Build and run:
 * tests/fuzz/run.sh. */
#include <stdint.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl-plot.h"
#include "ctl-table.h"
#include "ctl-wait.h"
#include "escape.h"
#include "metrics-print.h"
#include "protocol.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what) {
        if (ok)
                return;
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
}

static int top_all(json_object *o, FILE *f) {
        return ctl_format_top(o, 0, f);
}

static int top_short(json_object *o, FILE *f) {
        return ctl_format_top(o, 1, f);
}

/* wbtunectl metrics on a terminal (into a pipe it prints the exposition as it came) */
static int metrics_terminal(json_object *o, FILE *f) {
        return metrics_print_result(o, true, f);
}

static int (*const renderers[])(json_object *, FILE *) = {
        ctl_format_status, ctl_format_devices, ctl_format_device, ctl_format_show, ctl_format_explain,
        top_all, top_short, ctl_format_history_csv, ctl_format_tuning, metrics_terminal,
};

/* Render, and check the text has no byte a terminal would act on: the only control is the newline. */
static void render(int (*format)(json_object *, FILE *), json_object *o) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return;
        (void) format(o, f);
        fclose(f);
        for (size_t i = 0; i < size; i++)
                check((unsigned char) text[i] >= 0x20 ? text[i] != 0x7f : text[i] == '\n', "a control character in the output");
        check(utf8_valid(text, size), "the output is UTF-8");
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct json_tokener *tok = json_tokener_new();
        json_object *o;
        _cleanup_free_ char *csv = strndup((const char *) data, size);

        if (!tok || !csv)
                return 0;
        o = json_tokener_parse_ex(tok, (const char *) data, (int) MIN(size, (size_t) INT32_MAX));
        json_tokener_free(tok);

        if (o) {
                /* as wbtunectl does: check, then render what passed */
                for (protocol_kind k = 0; k < _PK_MAX; k++) {
                        json_object *result = NULL;
                        char error[512];
                        int r = ctl_check_reply(o, k, &result, error, sizeof error);

                        check(r != 0 || result != NULL, "a checked reply has a result");
                        check(memchr(error, '\0', sizeof error) != NULL, "the error is a string");
                        if (r == 0)
                                for (size_t i = 0; i < ELEMENTSOF(renderers); i++)
                                        render(renderers[i], result);
                }
                /* and unchecked: the renderers never crash on their own */
                for (size_t i = 0; i < ELEMENTSOF(renderers); i++) {
                        render(renderers[i], o);
                        render(renderers[i], proto_get(o, PF_REPLY_RESULT));
                }
                /* --no-legend */
                ctl_format_set_style(false, false);
                for (size_t i = 0; i < ELEMENTSOF(renderers); i++)
                        render(renderers[i], o);
                ctl_format_set_style(true, false);

                /* wait: a reading of the object as a device */
                char line[1024];
                ctl_wait_state w = {
                        .dirty_bytes = proto_u64(o, PF_DEVICE_DIRTY_BYTES),
                        .writeback_bytes = proto_u64(o, PF_DEVICE_WRITEBACK_BYTES),
                        .max_backlog_bytes = proto_u64(o, PF_DEVICE_BACKLOG_BYTES),
                        .bw_bytes_per_s = ctl_device_bw(o),
                        .elapsed_s = proto_double(o, PF_DEVICE_BACKLOG_S),
                        .state = CTL_WAIT_WRITING,
                };
                for (int bar = 0; bar <= 1; bar++) {
                        ctl_format_wait_line(&w, proto_str(o, PF_DEVICE_NAME), bar, line, sizeof line);
                        for (const char *p = line; *p; p++)
                                check((unsigned char) *p >= 0x20 && *p != 0x7f, "a control character in wait's line");
                }
                json_object_put(ctl_wait_json(&w, proto_str(o, PF_DEVICE_NAME), proto_str(o, PF_DEVICE_BDI)));

                char buf[64];
                (void) ctl_format_knobs(o, buf, sizeof buf);
                (void) ctl_device_bw(o);
                json_object_put(o);
        }

        /* the bytes as history's CSV, for plot */
        for (int device = 0; device <= 1; device++) {
                char *out = NULL, error[256];
                size_t out_size = 0;
                uint64_t rows = 0;
                FILE *f = open_memstream(&out, &out_size);

                if (!f)
                        break;
                (void) ctl_plot_data(csv, device, f, &rows, error, sizeof error);
                fclose(f);
                free(out);
        }
        return 0;
}
