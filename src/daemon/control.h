/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control socket, the daemon's end: line-delimited JSON requests and replies on a unix stream socket. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "control-client.h"   /* the strict JSON parse both ends use */

#define CONTROL_LINE_MAX (64 * 1024)   /* longest accepted request line */
#define CONTROL_CLIENTS_MAX 64         /* more connections are accepted and closed */
#define CONTROL_CLIENTS_PER_UID 16     /* per non-root uid, so one user cannot lock out the others */
#define CONTROL_CLIENTS_ROOT_RESERVED 8 /* of CONTROL_CLIENTS_MAX, only for uid 0 */
#define CONTROL_OUTPUT_PAUSE (256u * 1024)  /* queued reply bytes above which a client's requests wait */

/* A result too big to build at once (devices, top, history): the handler builds its small members
 * (the head) and names one member, an array or an object keyed by name, whose items next() makes one
 * at a time, only while the client's queue has room. The member comes last in the reply; a reply of
 * any size costs the daemon one item of memory. */
typedef struct control_stream {
        const char *key;           /* the member's name */
        bool keyed;                /* {"name": item, ...} instead of [item, ...] */
        /* 1 with *ret_item (and *ret_name, malloc'd, when keyed), 0 after the last, -errno */
        int (*next)(void *state, char **ret_name, json_object **ret_item);
        void (*free_state)(void *state);
        void *state;
} control_stream;

/* A verb handler fills *reply with the "result" object, or returns -errno and may set *error
 * (malloc'd) to a message; the server turns that into {"ok":false,...}. To stream a big result it
 * fills *stream too (zeroed on entry) and *reply holds the head. It runs in the event loop, so it
 * must not block, and must not free the server. */
typedef int (*control_handler_t)(void *userdata, json_object *request, json_object **reply, control_stream *stream,
                                 char **error);

typedef struct control_verb {
        const char *name;
        bool privileged;           /* only uid 0 (SO_PEERCRED) may call it */
        control_handler_t handler;
} control_verb;

typedef struct control_server control_server;

/* Create the socket (and its directory, mode 0755) at path, replacing a stale socket,
 * and serve it from the event loop. The socket is mode 0666: anyone may query. */
int control_server_new(sd_event *event, const char *path, const control_verb *verbs, size_t n_verbs,
                       void *userdata, control_server **ret);
/* Close every connection and unlink the socket. */
control_server *control_server_free(control_server *s);

/* Tuning for tests: queued reply bytes before an unread client is dropped (default 4 MiB, at least
 * twice CONTROL_OUTPUT_PAUSE; a single reply may take this less CONTROL_OUTPUT_PAUSE, a longer one is
 * answered with EMSGSIZE) and how long a client may make no progress before it is closed (default
 * 30 s); 0 keeps a value. */
void control_server_set_limits(control_server *s, size_t output_max_bytes, uint64_t idle_timeout_usec);
unsigned control_server_n_clients(const control_server *s);
/* The most reply bytes any client had queued at once, since the start. */
size_t control_server_peak_queued_bytes(const control_server *s);

/* One request line, as received from a peer of uid, to one reply object (never NULL): the checks
 * (UTF-8, JSON, no \u0000 escape, a "verb" string, privileges) and the handler's answer in the envelope
 * {"version", "ok", "result"} or {"version", "ok", "error", "errno"}. When the handler streams,
 * *ret_stream is filled and the reply's result holds the head. No I/O. */
json_object *control_handle_request(const control_verb *verbs, size_t n_verbs, void *userdata, uid_t uid,
                                    const char *line, size_t len, control_stream *ret_stream);

/* {"ok":false,"error":message,"errno":"EXXX"}; message NULL = strerror(error). error may be +/-. */
json_object *control_reply_error(int error, const char *message);
