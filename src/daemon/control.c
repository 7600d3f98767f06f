/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control socket: accepts clients, reads JSON request lines, dispatches verbs, queues or streams replies. */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "control.h"
#include "escape.h"
#include "log.h"
#include "protocol.h"
#include "util.h"

#define CONTROL_OUTPUT_MAX_DEFAULT (4u * 1024 * 1024)         /* queued reply bytes before a client is dropped */
#define CONTROL_IDLE_TIMEOUT_USEC_DEFAULT (30ULL * 1000000)  /* no progress for this long: close */
#define CONTROL_STREAM_BUDGET (1024u * 1024)                  /* streamed bytes per wakeup, so ticks go on */

typedef struct control_client control_client;

struct control_client {
        control_server *server;
        control_client *prev, *next;
        int fd;
        uid_t uid;
        pid_t pid;
        sd_event_source *io_source;
        sd_event_source *idle_source;

        char *in;             /* CONTROL_LINE_MAX + 1 bytes: one line and its newline */
        size_t in_len;
        size_t in_scanned;    /* the first in_scanned bytes of in hold no newline */

        char *out;            /* queued reply bytes, out[out_start..out_len) unsent */
        size_t out_start, out_len, out_allocated;

        control_stream stream;  /* the reply being streamed (stream.next set); later requests wait */
        size_t stream_items;

        bool read_closed;     /* EOF seen or we stopped listening (after E2BIG) */
        bool close_when_flushed;
};

struct control_server {
        sd_event *event;
        char *path;
        int fd;
        dev_t dev;            /* of the socket inode we created, so free only unlinks our own */
        ino_t ino;
        sd_event_source *listen_source;
        const control_verb *verbs;
        size_t n_verbs;
        void *userdata;
        control_client *clients;
        unsigned n_clients;
        size_t output_max_bytes;
        uint64_t idle_timeout_usec;
        size_t peak_queued_bytes;
};

static const char *errno_name(int error, char *buf, size_t size) {
        const char *name = strerrorname_np(abs(error));
        if (name)
                return name;
        snprintf(buf, size, "E%d", abs(error));
        return buf;
}

static json_object *reply_new(bool ok) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_u64(o, PF_REPLY_VERSION, PROTOCOL_VERSION);
        proto_add_bool(o, PF_REPLY_OK, ok);
        return o;
}

json_object *control_reply_error(int error, const char *message) {
        char buf[16];
        json_object *o = reply_new(false);

        proto_add_string(o, PF_REPLY_ERROR, message ? message : strerror(abs(error)));
        proto_add_string(o, PF_REPLY_ERRNO, errno_name(error, buf, sizeof buf));
        return o;
}

static void stream_done(control_stream *st) {
        if (st->free_state)
                st->free_state(st->state);
        *st = (control_stream) {};
}

static control_client *client_free(control_client *c) {
        if (!c)
                return NULL;

        control_server *s = c->server;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->clients = c->next;
        if (c->next)
                c->next->prev = c->prev;
        assert(s->n_clients > 0);
        s->n_clients--;

        sd_event_source_disable_unref(c->io_source);
        sd_event_source_disable_unref(c->idle_source);
        if (c->fd >= 0)
                close(c->fd);
        stream_done(&c->stream);
        free(c->in);
        free(c->out);
        free(c);
        return NULL;
}

/* Push the idle deadline forward: called whenever the client makes progress. */
static int client_touch(control_client *c) {
        uint64_t now;
        int r;

        r = sd_event_now(c->server->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        r = sd_event_source_set_time(c->idle_source, now + c->server->idle_timeout_usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(c->idle_source, SD_EVENT_ONESHOT);
}

static size_t client_queued(const control_client *c) {
        return c->out_len - c->out_start;
}

/* Decide which events we wait for: write while output is queued or a stream has more to make; read
 * while we accept requests and the client is not sitting on a large unread backlog. */
static int client_update_events(control_client *c) {
        uint32_t events = 0;
        size_t queued = client_queued(c);

        if (!c->read_closed && !c->close_when_flushed && queued < CONTROL_OUTPUT_PAUSE)
                events |= EPOLLIN;
        if (queued > 0 || c->stream.next)
                events |= EPOLLOUT;
        if (events == 0)
                return sd_event_source_set_enabled(c->io_source, SD_EVENT_OFF);

        int r = sd_event_source_set_io_events(c->io_source, events);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(c->io_source, SD_EVENT_ON);
}

/* Write as much queued output as the socket takes. 0, or -errno when the client is gone. */
static int client_flush(control_client *c) {
        while (c->out_start < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_start, c->out_len - c->out_start,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        return -errno;
                }
                c->out_start += (size_t) n;
                (void) client_touch(c);
        }
        if (c->out_start == c->out_len)
                c->out_start = c->out_len = 0;
        return 0;
}

/* The longest reply (or streamed item) queued whole: the queue is below CONTROL_OUTPUT_PAUSE when a
 * reply is made, so with this no client that reads its replies ever passes output_max_bytes. */
static size_t reply_max_bytes(const control_server *s) {
        return s->output_max_bytes - CONTROL_OUTPUT_PAUSE;
}

/* Queue text[0..len) (and a newline). json-c copies bytes that are not UTF-8 (a mount point, a comm)
 * into its text as they are: they are replaced here, so every reply is valid JSON for strict parsers.
 * -ENOBUFS when the client's unread output would pass the cap. */
static int client_queue_text(control_client *c, const char *text, size_t len, bool newline) {
        _cleanup_free_ char *clean = NULL;
        size_t need;

        if (!utf8_valid(text, len)) {
                clean = utf8_sanitize(text, len, &len);
                if (!clean)
                        return -ENOMEM;
                text = clean;
        }
        need = len + newline;
        if (client_queued(c) + need > c->server->output_max_bytes)
                return -ENOBUFS;

        if (c->out_start > 0 && c->out_len + need > c->out_allocated) {
                memmove(c->out, c->out + c->out_start, client_queued(c));
                c->out_len -= c->out_start;
                c->out_start = 0;
        }
        if (c->out_len + need > c->out_allocated) {
                size_t want = MAX(c->out_allocated * 2, c->out_len + need);
                char *p = realloc(c->out, want);
                if (!p)
                        return -ENOMEM;
                c->out = p;
                c->out_allocated = want;
        }
        memcpy(c->out + c->out_len, text, len);
        if (newline)
                c->out[c->out_len + len] = '\n';
        c->out_len += need;
        c->server->peak_queued_bytes = MAX(c->server->peak_queued_bytes, client_queued(c));
        return 0;
}

static const char *to_text(json_object *o, size_t *len) {
        return json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, len);
}

static int client_queue_error(control_client *c, int error, const char *message) {
        json_object *reply = control_reply_error(error, message);
        size_t len;
        const char *text = to_text(reply, &len);
        int r = text ? client_queue_text(c, text, len, true) : -ENOMEM;

        json_object_put(reply);
        return r;
}

/* Queue one whole reply line; one longer than a reply may be is answered with EMSGSIZE instead. */
static int client_queue_reply(control_client *c, json_object *reply) {
        size_t len;
        const char *text = to_text(reply, &len);
        char message[128];

        if (!text)
                return -ENOMEM;
        if (len + 1 <= reply_max_bytes(c->server))
                return client_queue_text(c, text, len, true);
        snprintf(message, sizeof message, "the reply would take %zu bytes, more than the %zu a reply may take",
                 len + 1, reply_max_bytes(c->server));
        log_warning("Control client pid %d: %s.", (int) c->pid, message);
        return client_queue_error(c, EMSGSIZE, message);
}

/* Queue the beginning of a streamed reply: the envelope and the head, open, up to the streamed
 * member's opening bracket. */
static int client_stream_begin(control_client *c, json_object *reply, control_stream *stream) {
        json_object *head = proto_get(reply, PF_REPLY_RESULT), *key = oom_check(json_object_new_string(stream->key));
        _cleanup_free_ char *prefix = NULL;
        size_t len;
        const char *text = to_text(reply, &len), *key_text = key ? json_object_to_json_string(key) : NULL;
        int r = -ENOMEM;

        /* the result is the envelope's last member, so the text ends with the two closing braces */
        if (text && key_text && len >= 2 && head && strcmp(text + len - 2, "}}") == 0 &&
            asprintf(&prefix, "%.*s%s%s:%c", (int) (len - 2), text, json_object_object_length(head) > 0 ? "," : "",
                     key_text, stream->keyed ? '{' : '[') >= 0)
                r = client_queue_text(c, prefix, strlen(prefix), false);
        json_object_put(key);
        if (r < 0) {
                stream_done(stream);
                return r;
        }
        c->stream = *stream;
        c->stream_items = 0;
        *stream = (control_stream) {};
        return 0;
}

/* Make the streamed reply's next items while the queue has room and this wakeup's budget lasts;
 * close the reply after the last. 0, or -errno when the client must go (a reply cannot be taken back
 * once it has begun). */
static int client_stream_fill(control_client *c, size_t *budget) {
        while (c->stream.next && client_queued(c) < CONTROL_OUTPUT_PAUSE && *budget > 0) {
                _cleanup_free_ char *name = NULL, *piece = NULL;
                json_object *item = NULL;
                const char *text = NULL, *name_text = "";
                json_object *name_json = NULL;
                size_t len;
                int r;

                r = c->stream.next(c->stream.state, &name, &item);
                if (r < 0)
                        return log_warning_errno(r, "Failed to make the next part of a %s reply to pid %d, dropping it: %m",
                                                 c->stream.key, (int) c->pid);
                if (r == 0) {
                        /* the member, the result and the envelope */
                        r = client_queue_text(c, c->stream.keyed ? "}}}" : "]}}", 3, true);
                        stream_done(&c->stream);
                        return r;
                }
                if (c->stream.keyed) {
                        name_json = oom_check(json_object_new_string(name ? name : ""));
                        name_text = name_json ? json_object_to_json_string(name_json) : NULL;
                }
                text = to_text(item, &len);
                if (text && name_text && asprintf(&piece, "%s%s%s%s", c->stream_items > 0 ? "," : "", name_text,
                                                  c->stream.keyed ? ":" : "", text) < 0)
                        piece = NULL;
                json_object_put(name_json);
                json_object_put(item);
                if (!piece)
                        return -ENOMEM;
                len = strlen(piece);
                if (len > reply_max_bytes(c->server)) {
                        log_warning("Control client pid %d: one part of a %s reply takes %zu bytes, more than the %zu "
                                    "a reply may take; dropping the client.", (int) c->pid, c->stream.key, len,
                                    reply_max_bytes(c->server));
                        return -EMSGSIZE;
                }
                r = client_queue_text(c, piece, len, false);
                if (r < 0)
                        return r;
                c->stream_items++;
                *budget -= MIN(*budget, len);
        }
        return 0;
}

static char *verb_list(const control_verb *verbs, size_t n_verbs) {
        size_t size = 1;
        for (size_t i = 0; i < n_verbs; i++)
                size += strlen(verbs[i].name) + 2;
        char *list = calloc(1, size);
        if (!list)
                return NULL;
        for (size_t i = 0; i < n_verbs; i++) {
                if (i > 0)
                        strcat(list, ", ");
                strcat(list, verbs[i].name);
        }
        return list;
}

/* "<what> (verbs: a, b, c)" */
static json_object *verb_error(const control_verb *verbs, size_t n_verbs, int error, const char *what) {
        _cleanup_free_ char *list = verb_list(verbs, n_verbs), *message = NULL;
        if (asprintf(&message, "%s (verbs: %s)", what, list ? list : "") < 0)
                return control_reply_error(error, what);
        return control_reply_error(error, message);
}

/* Whether a JSON text has the escape \u0000 in a string: json-c would decode it into a NUL that cuts
 * the string ("ping\u0000x" would run ping, and a key "verb\u0000x" would read as "verb"). Outside
 * strings a backslash is not valid JSON, so every backslash here starts an escape of two characters. */
static bool has_nul_escape(const char *s, size_t len) {
        for (size_t i = 0; i + 1 < len; i++) {
                if (s[i] != '\\')
                        continue;
                if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
                        return true;
                i++;   /* skip the escaped character: an escaped backslash followed by "u0000" is text */
        }
        return false;
}

json_object *control_handle_request(const control_verb *verbs, size_t n_verbs, void *userdata, uid_t uid,
                                    const char *line, size_t len, control_stream *ret_stream) {
        json_object *request = NULL, *verb_object;
        int r;

        *ret_stream = (control_stream) {};
        /* checked on the raw bytes: json-c passes bytes that are not UTF-8 through unchanged */
        if (!utf8_valid(line, len))
                return control_reply_error(EINVAL, "request is not valid UTF-8");
        r = control_parse_json(line, len, &request);
        if (r == -ENOMEM)
                return control_reply_error(r, NULL);
        if (r < 0)
                return control_reply_error(EINVAL, "request is not valid JSON");
        if (has_nul_escape(line, len)) {
                json_object_put(request);
                return control_reply_error(EINVAL, "request has a \\u0000 in a string");
        }
        if (!json_object_is_type(request, json_type_object)) {
                json_object_put(request);
                return control_reply_error(EINVAL, "request is not a JSON object");
        }
        verb_object = proto_get(request, PF_REQUEST_VERB);
        if (!json_object_is_type(verb_object, json_type_string)) {
                json_object_put(request);
                return verb_error(verbs, n_verbs, EINVAL, "request has no \"verb\" string");
        }

        const char *verb = json_object_get_string(verb_object);
        const control_verb *v = NULL;
        for (size_t i = 0; i < n_verbs; i++)
                if (strcmp(verbs[i].name, verb) == 0) {
                        v = &verbs[i];
                        break;
                }

        json_object *reply;
        _cleanup_free_ char *message = NULL;
        if (!v) {
                if (asprintf(&message, "unknown verb '%s'", verb) < 0)
                        message = NULL;
                reply = verb_error(verbs, n_verbs, EOPNOTSUPP, message ? message : "unknown verb");
        } else if (v->privileged && uid != 0) {
                if (asprintf(&message, "only root may %s", v->name) < 0)
                        message = NULL;
                reply = control_reply_error(EPERM, message);
        } else {
                json_object *result = NULL;
                _cleanup_free_ char *error = NULL;

                r = v->handler(userdata, request, &result, ret_stream, &error);
                if (r < 0) {
                        json_object_put(result);
                        stream_done(ret_stream);
                        log_debug_errno(r, "Control verb %s failed: %s", v->name, error ? error : strerror(-r));
                        reply = control_reply_error(r, error);
                } else {
                        reply = reply_new(true);
                        proto_add(reply, PF_REPLY_RESULT, result ? result : oom_check(json_object_new_object()));
                }
        }
        json_object_put(request);
        return reply;
}

/* Answer every complete line in the input buffer, until a streamed reply begins (the requests after
 * it wait for its end) or the output backlog is too big. 0, or -errno when the client must go. */
static int client_process_input(control_client *c) {
        control_server *s = c->server;
        size_t start = 0, from;
        bool no_line = false;
        int r;

        while (start < c->in_len && !c->close_when_flushed && !c->stream.next) {
                /* Stop answering a client that does not read; resume when its output drains. */
                if (client_queued(c) >= CONTROL_OUTPUT_PAUSE)
                        break;

                /* a line sent a byte at a time is searched once, not once per byte */
                from = MAX(start, c->in_scanned);
                char *nl = memchr(c->in + from, '\n', c->in_len - from);
                if (!nl) {
                        no_line = true;
                        break;
                }
                size_t len = (size_t) (nl - (c->in + start));
                const char *line = c->in + start;
                start += len + 1;

                /* Blank lines (keep-alives, a stray "\r\n") get no reply. */
                size_t i = 0;
                while (i < len && strchr(" \t\r", line[i]))
                        i++;
                if (i == len)
                        continue;

                control_stream stream;
                json_object *reply = control_handle_request(s->verbs, s->n_verbs, s->userdata, c->uid, line, len, &stream);
                r = stream.next ? client_stream_begin(c, reply, &stream) : client_queue_reply(c, reply);
                json_object_put(reply);
                if (r < 0)
                        return r;
        }

        if (start > 0)
                memmove(c->in, c->in + start, c->in_len - start);
        c->in_len -= start;
        c->in_scanned = no_line ? c->in_len : 0;

        if (c->in_len > CONTROL_LINE_MAX && !c->close_when_flushed && !c->stream.next) {
                char message[64];
                snprintf(message, sizeof message, "request line longer than %u bytes", (unsigned) CONTROL_LINE_MAX);
                r = client_queue_error(c, E2BIG, message);
                if (r < 0)
                        return r;
                c->close_when_flushed = true;
                c->in_len = c->in_scanned = 0;
        }
        return 0;
}

static int client_read(control_client *c) {
        size_t room = CONTROL_LINE_MAX + 1 - c->in_len;
        if (room == 0)
                return 0;

        ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0) {
                c->read_closed = true;
                /* Answer what is complete; a last line without newline is answered too. */
                if (c->in_len > 0 && c->in_len <= CONTROL_LINE_MAX && c->in[c->in_len - 1] != '\n')
                        c->in[c->in_len++] = '\n';
                return 0;
        }
        c->in_len += (size_t) n;
        (void) client_touch(c);
        return 0;
}

static int client_io_handler(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        control_client *c = userdata;
        size_t budget = CONTROL_STREAM_BUDGET;
        int r = 0;

        if (revents & EPOLLOUT) {
                r = client_flush(c);
                if (r < 0)
                        goto drop;
        }
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR) && !c->read_closed && !c->close_when_flushed) {
                r = client_read(c);
                if (r < 0)
                        goto drop;
        }

        /* Stream, answer, send, and go on while the client takes it: held-back requests are answered
         * as the backlog drains, and a stream stops at this wakeup's budget (EPOLLOUT brings it back). */
        for (;;) {
                r = client_stream_fill(c, &budget);
                if (r < 0)
                        goto drop;
                r = client_process_input(c);
                if (r < 0)
                        goto drop;
                r = client_flush(c);
                if (r < 0)
                        goto drop;
                if (c->close_when_flushed || client_queued(c) >= CONTROL_OUTPUT_PAUSE)
                        break;
                if (c->stream.next ? budget == 0 : c->in_scanned == c->in_len)
                        break;
        }

        bool idle = client_queued(c) == 0 && !c->stream.next;
        if (idle && (c->close_when_flushed || (c->read_closed && c->in_len == 0))) {
                client_free(c);
                return 0;
        }
        r = client_update_events(c);
        if (r < 0)
                goto drop;
        return 0;

drop:
        /* what is queued goes out if the socket takes it: a reply cut short reads as one to the client */
        (void) client_flush(c);
        if (r == -ENOBUFS)
                log_warning("Control client pid %d has more than %zu bytes of replies unread, dropping it.",
                            (int) c->pid, c->server->output_max_bytes);
        else if (r != -EPIPE && r != -ECONNRESET)
                log_debug_errno(r, "Control client pid %d failed, dropping it: %m", (int) c->pid);
        client_free(c);
        return 0;
}

static int client_idle_handler(sd_event_source *source, uint64_t usec, void *userdata) {
        control_client *c = userdata;

        log_debug("Control client pid %d idle for %llu s, closing it.", (int) c->pid,
                  (unsigned long long) (c->server->idle_timeout_usec / 1000000));
        client_free(c);
        return 0;
}

/* NULL if a client of this uid may connect, else why not (into buf). */
static const char *admission_refused(const control_server *s, uid_t uid, char *buf, size_t size) {
        if (s->n_clients >= CONTROL_CLIENTS_MAX) {
                snprintf(buf, size, "too many clients (at most %d)", CONTROL_CLIENTS_MAX);
                return buf;
        }
        if (uid == 0)
                return NULL;
        if (s->n_clients >= CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_ROOT_RESERVED) {
                snprintf(buf, size, "too many clients (the last %d places are kept for root)",
                         CONTROL_CLIENTS_ROOT_RESERVED);
                return buf;
        }
        unsigned n = 0;
        for (const control_client *c = s->clients; c; c = c->next)
                n += c->uid == uid;
        if (n >= CONTROL_CLIENTS_PER_UID) {
                snprintf(buf, size, "too many clients of uid %u (at most %d)", (unsigned) uid,
                         CONTROL_CLIENTS_PER_UID);
                return buf;
        }
        return NULL;
}

/* Tell a refused newcomer why, without waiting, and close. */
static void refuse_client(int fd, const char *message) {
        json_object *reply = control_reply_error(EUSERS, message);
        size_t len;
        const char *text = to_text(reply, &len);
        _cleanup_free_ char *line = text ? malloc(len + 1) : NULL;
        if (line) {
                memcpy(line, text, len);
                line[len] = '\n';
                (void) send(fd, line, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        json_object_put(reply);
        close(fd);
}

static int client_new(control_server *s, int fd, const struct ucred *cred) {
        int r;

        _cleanup_close_ int owned = fd;
        control_client *c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->server = s;
        c->fd = TAKE_FD(owned);
        c->uid = cred->uid;
        c->pid = cred->pid;
        c->next = s->clients;
        if (s->clients)
                s->clients->prev = c;
        s->clients = c;
        s->n_clients++;

        c->in = malloc(CONTROL_LINE_MAX + 1);
        if (!c->in) {
                client_free(c);
                return -ENOMEM;
        }

        uint64_t now;
        r = sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_io(s->event, &c->io_source, c->fd, EPOLLIN, client_io_handler, c);
        if (r >= 0)
                r = sd_event_add_time(s->event, &c->idle_source, CLOCK_MONOTONIC, now + s->idle_timeout_usec, 0,
                                      client_idle_handler, c);
        if (r < 0) {
                client_free(c);
                return r;
        }
        return 0;
}

static int listen_handler(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        control_server *s = userdata;

        /* Bounded: at most a backlog's worth per wakeup, so a connect storm cannot starve the loop. */
        for (unsigned i = 0; i < 2 * CONTROL_CLIENTS_MAX; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        if (errno == ECONNABORTED)
                                continue;
                        /* EMFILE and friends: report, the next wakeup retries. */
                        log_warning_errno(errno, "Failed to accept control connection: %m");
                        return 0;
                }
                struct ucred cred = {};
                socklen_t cred_len = sizeof cred;
                if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0) {
                        log_warning_errno(errno, "Failed to get the peer of a control connection: %m");
                        close(cfd);
                        continue;
                }
                char buf[96];
                const char *why = admission_refused(s, cred.uid, buf, sizeof buf);
                if (why) {
                        log_debug("Refusing control connection from pid %d: %s", (int) cred.pid, why);
                        refuse_client(cfd, why);
                        continue;
                }
                int r = client_new(s, cfd, &cred);
                if (r < 0)
                        log_warning_errno(r, "Failed to set up control connection: %m");
        }
        return 0;
}

/* mkdir -p for the directory part of path. The directories it creates get mode 0755 whatever the
 * umask (with umask 077 others could not reach the socket); existing ones are left as they are. */
static int mkdir_parents(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;

        for (char *p = dir + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(dir, 0755) == 0) {
                        if (chmod(dir, 0755) < 0)
                                return -errno;
                } else if (errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        return 0;
}

/* A leftover socket from a dead daemon is removed; a live one or a non-socket is not touched. */
static int remove_stale_socket(const struct sockaddr_un *sa) {
        struct stat st;

        if (lstat(sa->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sizeof *sa) == 0 || errno == EAGAIN)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED)
                return -errno;
        if (unlink(sa->sun_path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int control_server_new(sd_event *event, const char *path, const control_verb *verbs, size_t n_verbs,
                       void *userdata, control_server **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        int r;

        if (!event || !path || !ret || (n_verbs > 0 && !verbs))
                return -EINVAL;
        if (path[0] != '/')
                return log_error_errno(-EINVAL, "Control socket path must be absolute: %s", path);
        if (strlen(path) >= sizeof sa.sun_path)
                return log_error_errno(-ENAMETOOLONG, "Control socket path too long: %s", path);
        strcpy(sa.sun_path, path);

        r = mkdir_parents(path);
        if (r < 0)
                return log_error_errno(r, "Failed to create the directory of %s: %m", path);
        r = remove_stale_socket(&sa);
        if (r == -EADDRINUSE)
                return log_error_errno(r, "Another wbtuned is listening on %s.", path);
        if (r == -EEXIST)
                return log_error_errno(r, "%s exists and is not a socket, refusing to replace it.", path);
        if (r < 0)
                return log_error_errno(r, "Failed to check for a stale socket at %s: %m", path);

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create control socket: %m");
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return log_error_errno(-errno, "Failed to bind control socket %s: %m", path);
        /* Anyone may query; privileged verbs are checked per request with SO_PEERCRED. */
        if (chmod(path, 0666) < 0 || lstat(path, &st) < 0) {
                r = -errno;
                (void) unlink(path);
                return log_error_errno(r, "Failed to set up %s: %m", path);
        }
        if (listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void) unlink(path);
                return log_error_errno(r, "Failed to listen on %s: %m", path);
        }

        control_server *s = calloc(1, sizeof *s);
        if (!s) {
                (void) unlink(path);
                return log_error_errno(-ENOMEM, "Out of memory.");
        }
        *s = (control_server) {
                .event = sd_event_ref(event),
                .path = strdup(path),
                .fd = TAKE_FD(fd),
                .dev = st.st_dev,
                .ino = st.st_ino,
                .verbs = verbs,
                .n_verbs = n_verbs,
                .userdata = userdata,
                .output_max_bytes = CONTROL_OUTPUT_MAX_DEFAULT,
                .idle_timeout_usec = CONTROL_IDLE_TIMEOUT_USEC_DEFAULT,
        };
        if (!s->path) {
                control_server_free(s);
                return log_error_errno(-ENOMEM, "Out of memory.");
        }

        r = sd_event_add_io(event, &s->listen_source, s->fd, EPOLLIN, listen_handler, s);
        if (r < 0) {
                control_server_free(s);
                return log_error_errno(r, "Failed to watch control socket: %m");
        }

        log_debug("Listening on %s.", path);
        *ret = s;
        return 0;
}

control_server *control_server_free(control_server *s) {
        struct stat st;

        if (!s)
                return NULL;

        while (s->clients)
                client_free(s->clients);
        sd_event_source_disable_unref(s->listen_source);
        if (s->fd >= 0)
                close(s->fd);
        /* Only remove the socket if it is still ours, not one a newer daemon has put there. */
        if (s->path && lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
                (void) unlink(s->path);
        free(s->path);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

void control_server_set_limits(control_server *s, size_t output_max_bytes, uint64_t idle_timeout_usec) {
        if (output_max_bytes > 0)
                s->output_max_bytes = MAX(output_max_bytes, 2 * (size_t) CONTROL_OUTPUT_PAUSE);
        if (idle_timeout_usec > 0)
                s->idle_timeout_usec = idle_timeout_usec;
}

unsigned control_server_n_clients(const control_server *s) {
        return s->n_clients;
}

size_t control_server_peak_queued_bytes(const control_server *s) {
        return s->peak_queued_bytes;
}
