/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: one request line through control.c's path (UTF-8, JSON, \u0000, verb, privileges) into
 * the daemon's own verb handlers (their arguments: device, format), on a small fixed state. Whatever
 * the line, the reply is one object with the version and "ok", valid UTF-8 that the client's parser
 * reads back, and a refused request never runs a verb. Build and run: tests/fuzz/run.sh. */
#include <stdint.h>
#include <string.h>

#include "control.h"
#include "escape.h"
#include "history.h"
#include "log.h"
#include "manager.h"
#include "protocol.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static manager *m;
static const control_verb *verbs;
static size_t n_verbs;

static char *mounts_a[] = { "/mnt/a b", "/srv", "/mnt/\xc3\xa9t\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", NULL };  /* UTF-8 too */
static char *mounts_none[] = { NULL };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        static bdi_device devs[2];
        manager_options o = { .config_path = "/nonexistent/wbtuned.conf", .root = "/nonexistent",
                              .socket_path = "/nonexistent/control", .dry_run = true };
        config c;
        sample s;

        (void) argc;
        (void) argv;
        log_open();
        log_set_max_level(LOG_CRIT);
        config_init(&c);
        if (manager_new(&o, &c, &m) < 0)
                abort();
        devs[0] = (bdi_device) { .bdi = "7:0", .major = 7, .has_devnum = true, .name = "loop0", .fstype = "ext4",
                                 .mounts = mounts_a, .n_mounts = 3,
                                 .dirty_bytes = 4096, .backlog_bytes = 4096 };
        devs[1] = (bdi_device) { .bdi = "8:0", .major = 8, .has_devnum = true, .name = "sda", .mounts = mounts_none };
        /* a 6.2+ kernel's knob files for loop0, an older kernel's two for sda */
        knob_readings_set(devs[0].knobs.k, true, "max_ratio", 100);
        knob_readings_set(devs[0].knobs.k, true, "max_ratio_fine", 1000000);
        knob_readings_set(devs[0].knobs.k, true, "max_bytes", 400 << 20);
        knob_readings_set(devs[0].knobs.k, true, "min_ratio", 0);
        knob_readings_set(devs[0].knobs.k, true, "min_ratio_fine", 0);
        knob_readings_set(devs[0].knobs.k, true, "min_bytes", 0);
        knob_readings_set(devs[0].knobs.k, true, "strict_limit", 0);
        knob_readings_set(devs[1].knobs.k, true, "min_ratio", 0);
        knob_readings_set(devs[1].knobs.k, true, "max_ratio", 100);
        s = (sample) { .time_usec = 1000000, .devices = devs, .n_devices = 2 };
        if (sample_copy(&m->current, &s) < 0)
                abort();
        m->history = history_new(4);
        m->history_minutes = 15;
        for (int i = 0; i < 3; i++) {
                s.time_usec += 1000000;
                (void) history_add(m->history, &s);
        }
        verbs = manager_control_verbs(&n_verbs);
        return 0;
}

static void check(bool ok, const char *what, const uint8_t *data, size_t size) {
        if (ok)
                return;
        fprintf(stderr, "invariant broken: %s; input %zu bytes\n", what, size);
        (void) data;
        abort();
}

/* Drain a streamed result into the head, as the server sends it. */
static void drain(json_object *result, control_stream *st) {
        json_object *member = st->keyed ? json_object_new_object() : json_object_new_array(), *item;
        char *name = NULL;
        int r;

        while ((r = st->next(st->state, &name, &item)) > 0) {
                if (st->keyed)
                        json_object_object_add(member, name ? name : "", item);
                else
                        json_object_array_add(member, item);
                free(name);
                name = NULL;
        }
        json_object_object_add(result, st->key, member);
        st->free_state(st->state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        control_stream st;
        /* privileged verbs (reload, restore) are refused: uid 1000; they would read files and write knobs */
        json_object *reply = control_handle_request(verbs, n_verbs, m, 1000, (const char *) data, size, &st);
        json_object *result;
        const char *text;
        size_t len;

        check(json_object_is_type(reply, json_type_object), "the reply is an object", data, size);
        check(proto_u64(reply, PF_REPLY_VERSION) == PROTOCOL_VERSION, "the reply has the version", data, size);
        check(json_object_is_type(proto_get(reply, PF_REPLY_OK), json_type_boolean), "the reply has ok", data, size);
        result = proto_get(reply, PF_REPLY_RESULT);
        if (proto_bool(reply, PF_REPLY_OK)) {
                /* a verb ran: the line was UTF-8 without \u0000 */
                check(utf8_valid((const char *) data, size), "a verb ran on a line that is not UTF-8", data, size);
                check(!memmem(data, size, "\\u0000", 6) || memmem(data, size, "\\\\u0000", 7),
                      "a verb ran on a line with \\u0000", data, size);
                check(json_object_is_type(result, json_type_object), "an ok reply has a result", data, size);
                if (st.next)
                        drain(result, &st);
        } else {
                check(json_object_is_type(proto_get(reply, PF_REPLY_ERROR), json_type_string) &&
                      json_object_is_type(proto_get(reply, PF_REPLY_ERRNO), json_type_string),
                      "a failed reply has error and errno", data, size);
                check(!st.next, "a failed reply streams nothing", data, size);
        }
        text = json_object_to_json_string_length(reply, JSON_C_TO_STRING_PLAIN, &len);
        /* the server replaces bytes that are not UTF-8; from a refused line none get this far */
        check(text && utf8_valid(text, len), "the reply is UTF-8", data, size);
        /* and wbtunectl's parser reads it back, whatever the names hold and json-c's strict mode
         * (linked with tests/jsonc-strict-018.c: 0.18's, which refused UTF-8 in strings, issue 25) */
        json_object *back = NULL;
        check(control_parse_json(text, len, &back) == 0 && json_object_is_type(back, json_type_object),
              "the client's parser reads the reply back", data, size);
        json_object_put(back);
        json_object_put(reply);
        return 0;
}
