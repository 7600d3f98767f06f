/* Control socket: line-delimited JSON requests and replies on a unix stream socket. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

#define CONTROL_LINE_MAX (64 * 1024)   /* longest accepted request line */
#define CONTROL_CLIENTS_MAX 64         /* more connections are accepted and closed */
#define CONTROL_CLIENTS_PER_UID 16     /* per non-root uid, so one user cannot lock out the others */
#define CONTROL_CLIENTS_ROOT_RESERVED 8 /* of CONTROL_CLIENTS_MAX, only for uid 0 */

/* A verb handler fills *reply with the "result" object, or returns -errno and may set *error
 * (malloc'd) to a message; the server turns that into {"ok":false,...}. It runs in the event
 * loop, so it must not block, and must not free the server. */
typedef int (*control_handler_t)(void *userdata, json_object *request, json_object **reply, char **error);

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

/* Tuning for tests: queued reply bytes before an unread client is dropped (default 4 MiB) and
 * how long a client may make no progress before it is closed (default 30 s); 0 keeps a value. */
void control_server_set_limits(control_server *s, size_t output_max_bytes, uint64_t idle_timeout_usec);
unsigned control_server_n_clients(const control_server *s);

/* Client side, used by wbtunectl and the tests: connect, send one request, read one reply.
 * -ENOENT/-ECONNREFUSED when no daemon listens. */
int control_call(const char *path, json_object *request, json_object **reply, int timeout_ms);

/* Strict JSON parse of exactly s[0..len) (trailing blanks allowed). 0, -EINVAL or -ENOMEM. */
int control_parse_json(const char *s, size_t len, json_object **ret);
/* {"ok":false,"error":message,"errno":"EXXX"}; message NULL = strerror(error). error may be +/-. */
json_object *control_reply_error(int error, const char *message);
/* "EPERM" -> EPERM (positive); 0 if unknown. */
int control_errno_from_name(const char *name);
