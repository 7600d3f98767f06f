/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for control.c: a real server on an sd_event loop, driven by raw and forked clients. */
#include "control.h"
#include "escape.h"
#include "log.h"
#include "util.h"
#include "tap.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

static sd_event *event;
static char socket_path[256];

/* --- test verbs -------------------------------------------------------------------------- */

static int verb_ping(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        (*(unsigned *) userdata)++;
        *reply = json_object_new_object();
        json_object_object_add(*reply, "pong", json_object_new_boolean(true));
        return 0;
}

static int verb_echo(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        json_object *data;
        if (!json_object_object_get_ex(request, "data", &data))
                return -EINVAL;
        *reply = json_object_new_object();
        json_object_object_add(*reply, "data", json_object_get(data));
        return 0;
}

static int verb_blob(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        json_object *size;
        if (!json_object_object_get_ex(request, "size", &size))
                return -EINVAL;
        size_t n = (size_t) json_object_get_int64(size);
        _cleanup_free_ char *s = malloc(n + 1);
        memset(s, 'b', n);
        s[n] = '\0';
        *reply = json_object_new_object();
        json_object_object_add(*reply, "blob", json_object_new_string(s));
        return 0;
}

static int verb_fail(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        *error = strdup("no device matches 'x'");
        return -ENODEV;
}

static int verb_secret(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        *reply = json_object_new_object();
        json_object_object_add(*reply, "secret", json_object_new_int(42));
        return 0;
}

/* A reply holding bytes that are not UTF-8, as a mount point or a comm can. */
static int verb_raw(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        *reply = json_object_new_object();
        json_object_object_add(*reply, "mount", json_object_new_string("/mnt/\xff\xfe-\xc3"));
        return 0;
}

/* A streamed reply: "n" items of "size" bytes each, in an array or (keyed) an object; "fail_at" makes
 * the item of that index fail. */
typedef struct stream_state {
        int64_t n, size, fail_at, i;
        bool keyed;
} stream_state;

static int stream_next(void *state, char **ret_name, json_object **ret_item) {
        stream_state *st = state;
        _cleanup_free_ char *s = NULL;

        if (st->i >= st->n)
                return 0;
        if (st->i == st->fail_at)
                return -EIO;
        s = malloc((size_t) st->size + 1);
        memset(s, 'a' + (int) (st->i % 26), (size_t) st->size);
        s[st->size] = '\0';
        *ret_item = json_object_new_object();
        json_object_object_add(*ret_item, "i", json_object_new_int64(st->i));
        json_object_object_add(*ret_item, "s", json_object_new_string(s));
        if (st->keyed && asprintf(ret_name, "item %" PRId64, st->i) < 0)
                return -ENOMEM;
        st->i++;
        return 1;
}

static int verb_stream(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        json_object *v;
        stream_state *st = calloc(1, sizeof *st);

        st->fail_at = -1;
        if (json_object_object_get_ex(request, "n", &v))
                st->n = json_object_get_int64(v);
        if (json_object_object_get_ex(request, "size", &v))
                st->size = json_object_get_int64(v);
        if (json_object_object_get_ex(request, "fail_at", &v))
                st->fail_at = json_object_get_int64(v);
        st->keyed = json_object_object_get_ex(request, "keyed", NULL);
        *reply = json_object_new_object();
        if (!json_object_object_get_ex(request, "bare", NULL))
                json_object_object_add(*reply, "head", json_object_new_string("first"));
        *stream = (control_stream) {
                .key = "items",
                .keyed = st->keyed,
                .next = stream_next,
                .free_state = free,
                .state = st,
        };
        return 0;
}

static unsigned n_pings;

static const control_verb verbs[] = {
        { "ping",   false, verb_ping },
        { "echo",   false, verb_echo },
        { "blob",   false, verb_blob },
        { "fail",   false, verb_fail },
        { "secret", true,  verb_secret },
        { "raw",    false, verb_raw },
        { "stream", false, verb_stream },
};

/* --- a raw non-blocking client, pumping the loop while it waits --------------------------- */

typedef struct tclient {
        int fd;
        char buf[256 * 1024];
        size_t len;
} tclient;

static void pump(unsigned ms) {
        uint64_t end = now_usec() + ms * 1000ULL;
        do
                (void) sd_event_run(event, 1000);
        while (now_usec() < end);
}

/* The server's client count once it is want, or after max 2 s of pumping: the server sees a hangup or a
 * connection only when its event loop runs, later on a loaded machine (after a fixed 20 ms, 34 connections
 * of killed holders were still counted once). */
static unsigned clients_after(control_server *s, unsigned want) {
        uint64_t end = now_usec() + 2000000;

        while (control_server_n_clients(s) != want && now_usec() < end)
                pump(2);
        return control_server_n_clients(s);
}

static tclient *tclient_new(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        tclient *c = calloc(1, sizeof *c);

        strcpy(sa.sun_path, socket_path);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (connect(c->fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                printf("# connect: %m\n");
                close(c->fd);
                free(c);
                return NULL;
        }
        pump(5);   /* let the server accept */
        return c;
}

static void tclient_free(tclient *c) {
        if (c) {
                close(c->fd);
                free(c);
        }
}

/* Send everything, pumping the loop whenever the socket is full. Returns bytes sent. */
static size_t tclient_send(tclient *c, const char *data, size_t len) {
        size_t done = 0;
        uint64_t end = now_usec() + 2000000;
        while (done < len && now_usec() < end) {
                ssize_t n = send(c->fd, data + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0)
                        done += (size_t) n;
                else if (n < 0 && errno != EAGAIN)
                        break;
                else
                        pump(1);
        }
        return done;
}

static void tclient_send_str(tclient *c, const char *s) {
        tclient_send(c, s, strlen(s));
}

/* Next reply line as a parsed object (NULL on EOF/error/timeout). *eof set when the peer closed. */
static json_object *tclient_read(tclient *c, bool *eof) {
        uint64_t end = now_usec() + 3000000;
        if (eof)
                *eof = false;
        for (;;) {
                char *nl = memchr(c->buf, '\n', c->len);
                if (nl) {
                        json_object *o = NULL;
                        size_t n = (size_t) (nl - c->buf);
                        (void) control_parse_json(c->buf, n, &o);
                        memmove(c->buf, nl + 1, c->len - n - 1);
                        c->len -= n + 1;
                        return o;
                }
                if (now_usec() > end || c->len == sizeof c->buf)
                        return NULL;
                ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN)) {
                        if (eof)
                                *eof = true;
                        return NULL;
                }
                if (r > 0)
                        c->len += (size_t) r;
                else
                        pump(1);
        }
}

/* True when the server closed the connection (after any pending reply bytes). */
static bool tclient_wait_eof(tclient *c, unsigned ms) {
        uint64_t end = now_usec() + ms * 1000ULL;
        char buf[4096];
        while (now_usec() < end) {
                ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN))
                        return true;
                if (r < 0)
                        pump(1);
        }
        return false;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v;
        return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static bool get_ok(json_object *o) {
        json_object *v;
        return o && json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
}

static json_object *get_result(json_object *o) {
        json_object *v;
        return o && json_object_object_get_ex(o, "result", &v) ? v : NULL;
}

/* --- forked clients: control_call() blocks, so it runs in a child while we pump ----------- */

/* Run control_call in a child (as uid if uid != 0) and return its reply as JSON text, or "ERR <n>". */
static char *fork_call(const char *path, const char *request, uid_t uid, int timeout_ms) {
        int p[2];
        if (pipe(p) < 0)
                return NULL;
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                if (uid != 0 && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
                        _exit(2);
                json_object *req = json_tokener_parse(request), *reply = NULL;
                int r = control_call(path, req, &reply, timeout_ms);
                char out[8192];
                if (r < 0)
                        snprintf(out, sizeof out, "ERR %d", r);
                else
                        snprintf(out, sizeof out, "%s", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN));
                (void) !write(p[1], out, strlen(out));
                json_object_put(req);
                json_object_put(reply);
                _exit(0);
        }
        close(p[1]);
        int status = 0;
        uint64_t end = now_usec() + 5000000;
        while (waitpid(pid, &status, WNOHANG) == 0 && now_usec() < end)
                pump(2);
        char *out = calloc(1, 8192);
        (void) !read(p[0], out, 8191);
        close(p[0]);
        return out;
}

/* A child as uid that opens n connections and reports what the last one was told within 1 s
 * ("NONE" if nothing: it was admitted). It holds them until it is killed. */
static pid_t spawn_holder(uid_t uid, unsigned n, char *result, size_t size) {
        int res[2];
        if (pipe(res) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                close(res[0]);
                if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(2);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                strcpy(sa.sun_path, socket_path);
                int fd = -1;
                for (unsigned i = 0; i < n; i++) {
                        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                                _exit(3);
                }
                char line[512] = "NONE";
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 1000) == 1) {
                        ssize_t k = recv(fd, line, sizeof line - 1, 0);
                        line[k > 0 ? k : 0] = '\0';
                        char *nl = strchr(line, '\n');
                        if (nl)
                                *nl = '\0';
                }
                (void) !write(res[1], line, strlen(line));
                close(res[1]);
                for (;;)
                        pause();
        }
        close(res[1]);
        /* Serve the child's connections until it has reported. */
        memset(result, 0, size);
        uint64_t end = now_usec() + 5000000;
        struct pollfd p = { .fd = res[0], .events = POLLIN };
        while (now_usec() < end && poll(&p, 1, 0) == 0)
                pump(2);
        (void) !read(res[0], result, size - 1);
        close(res[0]);
        return pid;
}

static void release_holder(pid_t pid) {
        kill(pid, SIGKILL);
        int status;
        uint64_t end = now_usec() + 5000000;
        while (waitpid(pid, &status, WNOHANG) == 0 && now_usec() < end)
                pump(2);
}

/* --- tests --------------------------------------------------------------------------------- */

static void test_requests(void) {
        tclient *c = tclient_new();
        json_object *o;

        CHECK(c != NULL);
        if (!c)
                return;

        tclient_send_str(c, "{\"verb\":\"ping\"}\n");
        o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"pong\":true}");
        json_object_put(o);

        /* A request sent in pieces, its end in the same write as the next request: both answered, in order. */
        tclient_send_str(c, "{\"verb\":\"echo\",");
        pump(20);
        tclient_send_str(c, "\"data\":");
        pump(20);
        tclient_send_str(c, "\"p\"}\n{\"verb\":\"echo\",\"data\":\"q\"}\n");
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":\"p\"}");
        json_object_put(o);
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":\"q\"}");
        json_object_put(o);

        /* Several requests in one write, blank lines ignored; replies come back in order. */
        n_pings = 0;
        tclient_send_str(c, "\n{\"verb\":\"echo\",\"data\":\"a\"}\n  \r\n{\"verb\":\"ping\"}\r\n{\"verb\":\"echo\",\"data\":[1,2]}\n");
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":\"a\"}");
        json_object_put(o);
        o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        CHECK_EQ_U64(n_pings, 1);
        json_object_put(o);
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":[1,2]}");
        json_object_put(o);

        /* A request split across writes. */
        tclient_send_str(c, "{\"verb\":\"ec");
        pump(10);
        tclient_send_str(c, "ho\",\"data\":7}\n");
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":7}");
        json_object_put(o);

        /* Handler errors carry the handler's message and errno name. */
        tclient_send_str(c, "{\"verb\":\"fail\"}\n");
        o = tclient_read(c, NULL);
        CHECK(o && !get_ok(o));
        CHECK_STREQ(get_str(o, "error"), "no device matches 'x'");
        CHECK_STREQ(get_str(o, "errno"), "ENODEV");
        CHECK(get_result(o) == NULL);
        json_object_put(o);

        /* Without a message the errno's text is used. */
        tclient_send_str(c, "{\"verb\":\"echo\"}\n");
        o = tclient_read(c, NULL);
        CHECK_STREQ(get_str(o, "errno"), "EINVAL");
        CHECK_STREQ(get_str(o, "error"), "Invalid argument");
        json_object_put(o);

        /* As root, the privileged verb works. */
        tclient_send_str(c, "{\"verb\":\"secret\"}\n");
        o = tclient_read(c, NULL);
        if (geteuid() == 0) {
                CHECK(get_ok(o));
                CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"secret\":42}");
        } else
                CHECK_STREQ(get_str(o, "errno"), "EPERM");
        json_object_put(o);

        tclient_free(c);
}

static void test_bad_requests(void) {
        tclient *c = tclient_new();
        json_object *o;

        CHECK(c != NULL);
        if (!c)
                return;

        const struct {
                const char *line, *errno_name, *error;
        } cases[] = {
                { "{\"verb\":\n",                 "EINVAL", "request is not valid JSON" },
                { "{\"verb\":\"ping\"} trailing\n", "EINVAL", "request is not valid JSON" },
                { "{'verb':'ping'}\n",            "EINVAL", "request is not valid JSON" },
                { "[1,2]\n",                      "EINVAL", "request is not a JSON object" },
                { "\"ping\"\n",                   "EINVAL", "request is not a JSON object" },
                { "42\n",                         "EINVAL", "request is not a JSON object" },
                { "{}\n",                         "EINVAL", "request has no \"verb\" string (verbs: ping, echo, blob, fail, secret, raw, stream)" },
                { "{\"verb\":3}\n",               "EINVAL", "request has no \"verb\" string (verbs: ping, echo, blob, fail, secret, raw, stream)" },
                { "{\"verb\":\"frob\"}\n",        "EOPNOTSUPP", "unknown verb 'frob' (verbs: ping, echo, blob, fail, secret, raw, stream)" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                tclient_send_str(c, cases[i].line);
                o = tclient_read(c, NULL);
                CHECK(o && !get_ok(o));
                CHECK_STREQ(get_str(o, "errno"), cases[i].errno_name);
                CHECK_STREQ(get_str(o, "error"), cases[i].error);
                json_object_put(o);
        }

        /* A NUL byte inside a line is malformed, not a truncation. */
        tclient_send(c, "{\"verb\":\"ping\"}\0x\n", 18);
        o = tclient_read(c, NULL);
        CHECK_STREQ(get_str(o, "errno"), "EINVAL");
        json_object_put(o);

        /* \u0000 would cut a string short ("ping\u0000x" ran ping): refused, in keys and values alike. */
        static const char *const nul_lines[] = {
                "{\"verb\":\"ping\\u0000\"}\n",
                "{\"verb\":\"ping\\u0000x\"}\n",
                "{\"verb\\u0000x\":\"ping\"}\n",
                "{\"verb\":\"echo\",\"data\":[\"a\\u0000b\"]}\n",
                "{\"verb\":\"echo\",\"data\":{\"k\\u0000\":1}}\n",
        };
        n_pings = 0;
        for (size_t i = 0; i < ELEMENTSOF(nul_lines); i++) {
                tclient_send_str(c, nul_lines[i]);
                o = tclient_read(c, NULL);
                CHECK(o && !get_ok(o));
                CHECK_STREQ(get_str(o, "errno"), "EINVAL");
                CHECK_STREQ(get_str(o, "error"), "request has a \\u0000 in a string");
                json_object_put(o);
        }
        CHECK_EQ_U64(n_pings, 0);
        /* an escaped backslash before u0000 is six ordinary characters */
        tclient_send_str(c, "{\"verb\":\"echo\",\"data\":\"\\\\u0000\"}\n");
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":\"\\\\u0000\"}");
        json_object_put(o);

        /* Bytes that are not UTF-8 are refused, and not echoed back. */
        static const char *const bad_utf8[] = {
                "{\"verb\":\"fr\xffob\"}\n",
                "{\"verb\":\"ping\",\"x\":\"\xc3\"}\n",
                "{\"verb\":\"ping\",\"x\":\"\xed\xa0\x80\"}\n",      /* an encoded surrogate */
                "{\"verb\":\"ping\",\"x\":\"\xc0\xaf\"}\n",           /* overlong '/' */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_utf8); i++) {
                char raw[512] = "";

                tclient_send_str(c, bad_utf8[i]);
                o = tclient_read(c, NULL);
                CHECK(o && !get_ok(o));
                CHECK_STREQ(get_str(o, "errno"), "EINVAL");
                CHECK_STREQ(get_str(o, "error"), "request is not valid UTF-8");
                snprintf(raw, sizeof raw, "%s", o ? json_object_to_json_string(o) : "");
                CHECK(strchr(raw, '\xff') == NULL && strchr(raw, '\xc3') == NULL);
                json_object_put(o);
        }
        CHECK_EQ_U64(n_pings, 0);

        /* A reply is always UTF-8: bytes that are not become U+FFFD. */
        tclient_send_str(c, "{\"verb\":\"raw\"}\n");
        {
                uint64_t end = now_usec() + 2000000;
                char *nl = NULL;

                while (!(nl = memchr(c->buf, '\n', c->len)) && now_usec() < end) {
                        ssize_t k = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, MSG_DONTWAIT);
                        if (k > 0)
                                c->len += (size_t) k;
                        else
                                pump(1);
                }
                CHECK(nl != NULL);
                if (nl) {
                        size_t n = (size_t) (nl - c->buf);
                        CHECK(utf8_valid(c->buf, n));
                        CHECK(memmem(c->buf, n, "/mnt/\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbd", 15) != NULL);
                        memmove(c->buf, nl + 1, c->len - n - 1);
                        c->len -= n + 1;
                }
        }

        /* The connection is still usable after all that. */
        tclient_send_str(c, "{\"verb\":\"ping\"}\n");
        o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        json_object_put(o);

        /* A last request without newline is answered when the client shuts its side. */
        tclient_send_str(c, "{\"verb\":\"echo\",\"data\":\"last\"}");
        shutdown(c->fd, SHUT_WR);
        o = tclient_read(c, NULL);
        CHECK_STREQ(json_object_to_json_string_ext(get_result(o), JSON_C_TO_STRING_PLAIN), "{\"data\":\"last\"}");
        json_object_put(o);
        CHECK(tclient_wait_eof(c, 1000));
        tclient_free(c);
}

static void test_line_limit(control_server *s) {
        /* Exactly CONTROL_LINE_MAX bytes before the newline is accepted. */
        tclient *c = tclient_new();
        const char *head = "{\"verb\":\"echo\",\"data\":\"", *tail = "\"}";
        size_t pad = CONTROL_LINE_MAX - strlen(head) - strlen(tail);
        char *line = malloc(CONTROL_LINE_MAX + 2);
        strcpy(line, head);
        memset(line + strlen(head), 'y', pad);
        strcpy(line + strlen(head) + pad, tail);
        CHECK_EQ_U64(strlen(line), CONTROL_LINE_MAX);
        strcat(line, "\n");
        CHECK_EQ_U64(tclient_send(c, line, strlen(line)), CONTROL_LINE_MAX + 1);
        json_object *o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        json_object *data = NULL;
        CHECK(json_object_object_get_ex(get_result(o), "data", &data) && json_object_get_string_len(data) == (int) pad);
        json_object_put(o);
        tclient_free(c);
        free(line);

        /* One byte more: E2BIG, then the server closes. */
        c = tclient_new();
        unsigned before = control_server_n_clients(s);
        size_t big = CONTROL_LINE_MAX + 10;
        line = malloc(big);
        memset(line, 'x', big);
        tclient_send(c, line, big);
        free(line);
        bool eof = false;
        o = tclient_read(c, &eof);
        CHECK(o && !get_ok(o));
        CHECK_STREQ(get_str(o, "errno"), "E2BIG");
        CHECK_STREQ(get_str(o, "error"), "request line longer than 65536 bytes");
        json_object_put(o);
        CHECK(tclient_wait_eof(c, 1000));
        CHECK_EQ_U64(clients_after(s, before - 1), before - 1);
        tclient_free(c);
}

static void test_privileges(void) {
        if (geteuid() != 0) {
                printf("# skipping uid tests: not root\n");
                return;
        }
        char *out = fork_call(socket_path, "{\"verb\":\"secret\"}", 65534, 2000);
        CHECK_STREQ(out, "{\"version\":2,\"ok\":false,\"error\":\"only root may secret\",\"errno\":\"EPERM\"}");
        free(out);

        /* Unprivileged users may still query (the socket is 0666 in a 0755 directory). */
        out = fork_call(socket_path, "{\"verb\":\"ping\"}", 65534, 2000);
        CHECK_STREQ(out, "{\"version\":2,\"ok\":true,\"result\":{\"pong\":true}}");
        free(out);

        out = fork_call(socket_path, "{\"verb\":\"secret\"}", 0, 2000);
        CHECK_STREQ(out, "{\"version\":2,\"ok\":true,\"result\":{\"secret\":42}}");
        free(out);
}

static void test_slow_reader(control_server *s) {
        /* A client floods requests with big replies and never reads. */
        tclient *hog = tclient_new();
        char req[64];
        snprintf(req, sizeof req, "{\"verb\":\"blob\",\"size\":%d}\n", 64 * 1024);
        for (int i = 0; i < 200; i++)
                tclient_send(hog, req, strlen(req));
        pump(50);

        /* Everyone else is still served promptly. */
        tclient *c = tclient_new();
        uint64_t t0 = now_usec();
        tclient_send_str(c, "{\"verb\":\"ping\"}\n");
        json_object *o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        CHECK(now_usec() - t0 < 500000);
        json_object_put(o);
        /* The hog is held back (not dropped): it stays connected but is not answered further. */
        CHECK_EQ_U64(clients_after(s, 2), 2);

        /* When it finally reads, it gets every reply, in order. */
        unsigned n = 0;
        for (;;) {
                o = tclient_read(hog, NULL);
                if (!o)
                        break;
                json_object *blob;
                if (json_object_object_get_ex(get_result(o), "blob", &blob) &&
                    json_object_get_string_len(blob) == 64 * 1024)
                        n++;
                json_object_put(o);
                if (n == 200)
                        break;
        }
        CHECK_EQ_U64(n, 200);
        tclient_free(hog);
        tclient_free(c);
        CHECK_EQ_U64(clients_after(s, 0), 0);

        /* With a small output cap, a reply that does not fit is answered with EMSGSIZE, and the
         * connection stays usable (it used to be dropped, and the client could not tell why). */
        control_server_set_limits(s, 512 * 1024, 0);
        c = tclient_new();
        tclient_send_str(c, "{\"verb\":\"blob\",\"size\":1048576}\n");
        o = tclient_read(c, NULL);
        CHECK(o && !get_ok(o));
        CHECK_STREQ(get_str(o, "errno"), "EMSGSIZE");
        CHECK(get_str(o, "error") && strstr(get_str(o, "error"), "more than the 262144 a reply may take") != NULL);
        json_object_put(o);
        tclient_send_str(c, "{\"verb\":\"ping\"}\n");
        o = tclient_read(c, NULL);
        CHECK(get_ok(o));
        json_object_put(o);
        CHECK_EQ_U64(clients_after(s, 1), 1);
        tclient_free(c);
        control_server_set_limits(s, 4 * 1024 * 1024, 0);
        pump(5);
}

/* The next reply line, however long, malloc'd (NULL on EOF or when nothing arrives for 20 s:
 * a stall, not a speed limit, so a slow machine or valgrind does not fail it). */
static char *tclient_read_line(tclient *c, size_t *ret_len) {
        size_t len = c->len, allocated = MAX(c->len, (size_t) 1 << 20);
        char *buf = malloc(allocated), *nl;
        uint64_t end = now_usec() + 20000000;

        memcpy(buf, c->buf, c->len);
        c->len = 0;
        while (!(nl = memchr(buf, '\n', len)) && now_usec() < end) {
                if (len == allocated)
                        buf = realloc(buf, allocated *= 2);
                ssize_t k = recv(c->fd, buf + len, allocated - len, MSG_DONTWAIT);
                if (k == 0 || (k < 0 && errno != EAGAIN))
                        break;
                if (k > 0) {
                        len += (size_t) k;
                        end = now_usec() + 20000000;
                } else
                        pump(1);
        }
        if (!nl) {
                free(buf);
                return NULL;
        }
        /* keep what follows the line for the next read */
        c->len = len - (size_t) (nl + 1 - buf);
        memcpy(c->buf, nl + 1, c->len);
        *nl = '\0';
        *ret_len = (size_t) (nl - buf);
        return buf;
}

static void test_streams(control_server *s) {
        size_t len = 0, peak;
        char *line;
        json_object *o, *items;

        /* 400 items of 64 KiB, 26 MB in all: the queue never holds much more than the pause mark
         * and one item, and another client is answered while the reply streams. */
        tclient *c = tclient_new(), *other = tclient_new();
        tclient_send_str(c, "{\"verb\":\"stream\",\"n\":400,\"size\":65536}\n");
        pump(20);
        /* answered while C reads nothing: a server blocked on C's full socket would never answer */
        tclient_send_str(other, "{\"verb\":\"ping\"}\n");
        o = tclient_read(other, NULL);
        CHECK(get_ok(o));
        json_object_put(o);
        line = tclient_read_line(c, &len);
        CHECK(line && len > 400 * 65536);
        o = NULL;
        CHECK(line && control_parse_json(line, len, &o) == 0);
        CHECK(get_ok(o));
        CHECK_EQ_U64(json_object_get_int(json_object_object_get(o, "version")), 2);
        CHECK_STREQ(get_str(get_result(o), "head"), "first");
        items = json_object_object_get(get_result(o), "items");
        CHECK(json_object_is_type(items, json_type_array) && json_object_array_length(items) == 400);
        bool in_order = true;
        for (size_t i = 0; i < json_object_array_length(items); i++)
                in_order = in_order && json_object_get_int64(json_object_object_get(json_object_array_get_idx(items, i), "i")) == (int64_t) i;
        CHECK(in_order);
        json_object_put(o);
        free(line);
        peak = control_server_peak_queued_bytes(s);
        printf("# peak queued bytes while streaming %u bytes: %zu\n", 400u * 65536, peak);
        CHECK(peak < CONTROL_OUTPUT_PAUSE + 2 * 65536 + 4096);
        tclient_free(other);

        /* Requests sent behind a streamed reply are answered after it, in order. */
        tclient_send_str(c, "{\"verb\":\"stream\",\"n\":2,\"size\":1}\n{\"verb\":\"ping\"}\n");
        line = tclient_read_line(c, &len);
        CHECK_STREQ(line, "{\"version\":2,\"ok\":true,\"result\":{\"head\":\"first\",\"items\":[{\"i\":0,\"s\":\"a\"},{\"i\":1,\"s\":\"b\"}]}}");
        free(line);
        o = tclient_read(c, NULL);
        CHECK(get_ok(o) && json_object_object_get_ex(get_result(o), "pong", NULL));
        json_object_put(o);

        /* Keyed, without a head; and empty. */
        tclient_send_str(c, "{\"verb\":\"stream\",\"n\":2,\"size\":1,\"keyed\":1,\"bare\":1}\n");
        line = tclient_read_line(c, &len);
        CHECK_STREQ(line, "{\"version\":2,\"ok\":true,\"result\":{\"items\":{\"item 0\":{\"i\":0,\"s\":\"a\"},\"item 1\":{\"i\":1,\"s\":\"b\"}}}}");
        free(line);
        tclient_send_str(c, "{\"verb\":\"stream\",\"n\":0,\"bare\":1}\n");
        line = tclient_read_line(c, &len);
        CHECK_STREQ(line, "{\"version\":2,\"ok\":true,\"result\":{\"items\":[]}}");
        free(line);
        tclient_free(c);

        /* A stream that fails once begun cannot be taken back: the connection is closed, and the
         * client says it was cut in the middle of the reply. */
        char *out = fork_call(socket_path, "{\"verb\":\"stream\",\"n\":10,\"size\":100,\"fail_at\":3}", 0, 2000);
        CHECK_STREQ(out, "ERR -32");
        free(out);
        CHECK_EQ_U64(clients_after(s, 0), 0);
}

static void test_idle_timeout(control_server *s) {
        /* a second: a busy client pinging every 50 ms must never look idle, even under valgrind on a
         * loaded machine (at 200 ms a stalled scheduler closed it now and then) */
        control_server_set_limits(s, 0, 1000 * 1000);
        tclient *idle = tclient_new();
        tclient *busy = tclient_new();
        CHECK_EQ_U64(clients_after(s, 2), 2);

        /* The busy one keeps talking and survives; the idle one is closed. */
        uint64_t end = now_usec() + 2500000;
        bool busy_ok = true;
        while (now_usec() < end) {
                tclient_send_str(busy, "{\"verb\":\"ping\"}\n");
                json_object *o = tclient_read(busy, NULL);
                busy_ok = busy_ok && get_ok(o);
                json_object_put(o);
                pump(50);
        }
        CHECK(busy_ok);
        CHECK(tclient_wait_eof(idle, 100));
        CHECK_EQ_U64(clients_after(s, 1), 1);
        tclient_free(idle);
        tclient_free(busy);
        control_server_set_limits(s, 0, 30 * 1000000ULL);
        pump(5);
}

static void test_too_many_clients(control_server *s) {
        /* Root fills the whole table; a plain user (a package build) only its own share of it:
         * test_uid_limits() checks the shares as root. */
        bool root = geteuid() == 0;
        unsigned admitted = root ? CONTROL_CLIENTS_MAX : CONTROL_CLIENTS_PER_UID;
        char want[128];
        tclient *clients[CONTROL_CLIENTS_MAX];

        if (root)
                snprintf(want, sizeof want, "too many clients (at most %d)", CONTROL_CLIENTS_MAX);
        else
                snprintf(want, sizeof want, "too many clients of uid %u (at most %d)", (unsigned) geteuid(),
                         CONTROL_CLIENTS_PER_UID);
        for (unsigned i = 0; i < admitted; i++)
                clients[i] = tclient_new();
        CHECK_EQ_U64(clients_after(s, admitted), admitted);

        tclient *extra = tclient_new();
        bool eof = false;
        json_object *o = tclient_read(extra, &eof);
        CHECK_STREQ(get_str(o, "errno"), "EUSERS");
        CHECK_STREQ(get_str(o, "error"), want);
        json_object_put(o);
        CHECK(tclient_wait_eof(extra, 1000));
        tclient_free(extra);
        CHECK_EQ_U64(clients_after(s, admitted), admitted);

        /* The last of the admitted ones still works. */
        tclient_send_str(clients[admitted - 1], "{\"verb\":\"ping\"}\n");
        o = tclient_read(clients[admitted - 1], NULL);
        CHECK(get_ok(o));
        json_object_put(o);

        for (unsigned i = 0; i < admitted; i++)
                tclient_free(clients[i]);
        CHECK_EQ_U64(clients_after(s, 0), 0);
}

static void test_uid_limits(control_server *s) {
        char result[512];
        pid_t pid[4];

        if (geteuid() != 0) {
                printf("# skipping uid limits: not root\n");
                return;
        }

        /* One user cannot take more than CONTROL_CLIENTS_PER_UID. */
        pid[0] = spawn_holder(65534, CONTROL_CLIENTS_PER_UID + 1, result, sizeof result);
        CHECK_STREQ(result, "{\"version\":2,\"ok\":false,\"error\":\"too many clients of uid 65534 (at most 16)\",\"errno\":\"EUSERS\"}");
        CHECK_EQ_U64(clients_after(s, CONTROL_CLIENTS_PER_UID), CONTROL_CLIENTS_PER_UID);

        pid[1] = spawn_holder(65533, CONTROL_CLIENTS_PER_UID, result, sizeof result);
        CHECK_STREQ(result, "NONE");
        pid[2] = spawn_holder(65532, CONTROL_CLIENTS_PER_UID, result, sizeof result);
        CHECK_STREQ(result, "NONE");
        tclient *root[CONTROL_CLIENTS_ROOT_RESERVED + 1];
        for (unsigned i = 0; i < CONTROL_CLIENTS_ROOT_RESERVED; i++)
                root[i] = tclient_new();
        CHECK_EQ_U64(clients_after(s, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_ROOT_RESERVED), CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_ROOT_RESERVED);

        /* The last places are root's: another user is refused, root still gets in. */
        pid[3] = spawn_holder(65531, 1, result, sizeof result);
        CHECK_STREQ(result, "{\"version\":2,\"ok\":false,\"error\":\"too many clients (the last 8 places are kept for root)\",\"errno\":\"EUSERS\"}");
        root[CONTROL_CLIENTS_ROOT_RESERVED] = tclient_new();
        tclient_send_str(root[CONTROL_CLIENTS_ROOT_RESERVED], "{\"verb\":\"ping\"}\n");
        json_object *o = tclient_read(root[CONTROL_CLIENTS_ROOT_RESERVED], NULL);
        CHECK(get_ok(o));
        json_object_put(o);
        CHECK_EQ_U64(clients_after(s, CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_ROOT_RESERVED + 1), CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_ROOT_RESERVED + 1);

        for (unsigned i = 0; i < 4; i++)
                release_holder(pid[i]);
        for (unsigned i = 0; i <= CONTROL_CLIENTS_ROOT_RESERVED; i++)
                tclient_free(root[i]);
        CHECK_EQ_U64(clients_after(s, 0), 0);
}

static void test_socket_file(const char *dir) {
        struct stat st;
        char sub[300];
        snprintf(sub, sizeof sub, "%s/run/wbtuned", dir);

        CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755);
        CHECK(lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0666);
}

/* The directories the server creates get mode 0755 whatever the umask, so others can reach the socket. */
static void test_umask(const char *dir) {
        control_server *s = NULL;
        char path[300], sub[300];
        struct stat st;
        mode_t old = umask(077);

        snprintf(sub, sizeof sub, "%s/umask", dir);
        snprintf(path, sizeof path, "%s/umask/run/control", dir);
        CHECK(control_server_new(event, path, verbs, ELEMENTSOF(verbs), &n_pings, &s) == 0);
        umask(old);
        CHECK(stat(sub, &st) == 0 && (st.st_mode & 07777) == 0755);
        snprintf(sub, sizeof sub, "%s/umask/run", dir);
        CHECK(stat(sub, &st) == 0 && (st.st_mode & 07777) == 0755);
        CHECK(lstat(path, &st) == 0 && (st.st_mode & 07777) == 0666);
        if (geteuid() == 0) {
                char *out = fork_call(path, "{\"verb\":\"ping\"}", 65534, 2000);
                CHECK(out && strstr(out, "\"pong\":true") != NULL);
                free(out);
        }
        control_server_free(s);
}

static void test_lifecycle(const char *dir) {
        control_server *s = NULL, *s2 = NULL;
        char path[300], *out;
        int fd;

        snprintf(path, sizeof path, "%s/life.sock", dir);

        /* Nobody there: the client says ENOENT. */
        out = fork_call(path, "{\"verb\":\"ping\"}", 0, 1000);
        CHECK_STREQ(out, "ERR -2");
        free(out);

        /* A stale socket (bound, then its owner died) answers ECONNREFUSED and is replaced. */
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(bind(fd, (struct sockaddr *) &sa, sizeof sa) == 0);
        close(fd);
        out = fork_call(path, "{\"verb\":\"ping\"}", 0, 1000);
        CHECK_STREQ(out, "ERR -111");
        free(out);

        CHECK(control_server_new(event, path, verbs, ELEMENTSOF(verbs), &n_pings, &s) == 0);
        out = fork_call(path, "{\"verb\":\"ping\"}", 0, 2000);
        CHECK_STREQ(out, "{\"version\":2,\"ok\":true,\"result\":{\"pong\":true}}");
        free(out);

        /* A second server on a live socket is refused, and leaves the first one alone. */
        CHECK(control_server_new(event, path, verbs, ELEMENTSOF(verbs), &n_pings, &s2) == -EADDRINUSE);
        CHECK(s2 == NULL);
        out = fork_call(path, "{\"verb\":\"ping\"}", 0, 2000);
        CHECK_STREQ(out, "{\"version\":2,\"ok\":true,\"result\":{\"pong\":true}}");
        free(out);

        /* Free closes connected clients and removes the socket. */
        tclient *c;
        strcpy(socket_path + 0, path);
        c = tclient_new();
        CHECK(c != NULL);
        s = control_server_free(s);
        CHECK(s == NULL);
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);
        if (c)
                CHECK(tclient_wait_eof(c, 500));
        tclient_free(c);
        out = fork_call(path, "{\"verb\":\"ping\"}", 0, 1000);
        CHECK_STREQ(out, "ERR -2");
        free(out);

        /* Something that is not a socket is never removed. */
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        close(fd);
        CHECK(control_server_new(event, path, verbs, ELEMENTSOF(verbs), &n_pings, &s) == -EEXIST);
        CHECK(access(path, F_OK) == 0);
        unlink(path);

        /* Relative and overlong paths are rejected. */
        CHECK(control_server_new(event, "relative.sock", verbs, ELEMENTSOF(verbs), NULL, &s) == -EINVAL);
        char longpath[200];
        memset(longpath, 'a', sizeof longpath - 1);
        longpath[0] = '/';
        longpath[sizeof longpath - 1] = '\0';
        CHECK(control_server_new(event, longpath, verbs, ELEMENTSOF(verbs), NULL, &s) == -ENAMETOOLONG);
}

static void test_client_timeout(const char *dir) {
        /* A listener that accepts but never answers: control_call gives up on time. */
        char path[300];
        snprintf(path, sizeof path, "%s/mute.sock", dir);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(bind(fd, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(fd, 4) == 0);

        uint64_t t0 = now_usec();
        char *out = fork_call(path, "{\"verb\":\"ping\"}", 0, 300);
        uint64_t elapsed = now_usec() - t0;
        CHECK_STREQ(out, "ERR -110");
        CHECK(elapsed >= 250000 && elapsed < 2000000);
        free(out);
        close(fd);
        unlink(path);
}

/* control_call tells a daemon that closes without answering from one that closes mid-reply. */
static void test_client_cut(const char *dir) {
        char path[300];
        snprintf(path, sizeof path, "%s/cut.sock", dir);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);

        for (int partial = 0; partial <= 1; partial++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                CHECK(bind(fd, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(fd, 4) == 0);
                pid_t pid = fork();
                if (pid == 0) {
                        int cfd = accept(fd, NULL, NULL);
                        char buf[256];
                        (void) !read(cfd, buf, sizeof buf);
                        if (partial)
                                (void) !write(cfd, "{\"version\":2,\"ok\":tr", 20);
                        _exit(0);
                }
                char *out = fork_call(path, "{\"verb\":\"ping\"}", 0, 2000);
                CHECK_STREQ(out, partial ? "ERR -32" : "ERR -104");
                free(out);
                waitpid(pid, NULL, 0);
                close(fd);
                unlink(path);
        }
}

/* The ASCII form control_parse_json() hands json-c (issue 25: json-c 0.18's strict mode refuses every
 * byte past 0x7f in a string, so UTF-8 must reach it as \u escapes). out NULL: refused. */
static void test_json_ascii(void) {
        static const struct {
                const char *in;
                size_t len;             /* 0: strlen(in) */
                const char *out;
        } cases[] = {
                { "{\"a\":\"b\\n\\u00e9\",\"c\":[1,2.5e3,true,null]}", 0, "{\"a\":\"b\\n\\u00e9\",\"c\":[1,2.5e3,true,null]}" },
                { " \t{\"a\":1}\r\n", 0, " \t{\"a\":1}\r\n" },
                { "\"x\x7fy\"", 0, "\"x\x7fy\"" },                       /* DEL is no control to JSON */
                { "\"\xc3\xa9\"", 0, "\"\\u00e9\"" },                    /* 2 bytes */
                { "\"\xc2\x80\"", 0, "\"\\u0080\"" },                    /* the smallest 2-byte one */
                { "\"\xe2\x82\xac\"", 0, "\"\\u20ac\"" },                /* 3 bytes */
                { "\"\xef\xbf\xbf\"", 0, "\"\\uffff\"" },                /* the last below the pairs */
                { "\"\xf0\x9f\x98\x80\"", 0, "\"\\ud83d\\ude00\"" },     /* 4 bytes: a surrogate pair */
                { "\"\xf0\x90\x80\x80\"", 0, "\"\\ud800\\udc00\"" },     /* U+10000 */
                { "\"\xf4\x8f\xbf\xbf\"", 0, "\"\\udbff\\udfff\"" },     /* U+10FFFF */
                { "{\"\xc3\xa4\":\"/mnt/\xe6\x97\xa5 b\"}", 0, "{\"\\u00e4\":\"/mnt/\\u65e5 b\"}" },  /* keys too */
                { "\"\\\"\xc3\xa9\\\\\"", 0, "\"\\\"\\u00e9\\\\\"" },    /* an escaped quote does not end it */
                { "\"\xc3\xa9", 0, "\"\\u00e9" },                        /* unterminated: json-c says so */
                /* not UTF-8 */
                { "\"\x80\"", 0, NULL },
                { "\"\xc3\"", 0, NULL },
                { "\"\xc3", 0, NULL },
                { "\"\xc0\xaf\"", 0, NULL },                             /* overlong '/' */
                { "\"\xe0\x80\xaf\"", 0, NULL },                         /* overlong in 3 */
                { "\"\xf0\x80\x80\xaf\"", 0, NULL },                     /* overlong in 4 */
                { "\"\xed\xa0\x80\"", 0, NULL },                         /* U+D800 encoded */
                { "\"\xed\xbf\xbf\"", 0, NULL },                         /* U+DFFF encoded */
                { "\"\xed\xa0\xbd\xed\xb8\x80\"", 0, NULL },             /* a pair encoded (CESU-8) */
                { "\"\xf4\x90\x80\x80\"", 0, NULL },                     /* past U+10FFFF */
                { "\"\xf8\x88\x80\x80\x80\"", 0, NULL },
                { "\"\xff\"", 0, NULL },
                /* raw controls in a string */
                { "\"a\x01\"", 0, NULL },
                { "\"a\tb\"", 0, NULL },
                { "\"a\nb\"", 0, NULL },
                { "\"a\x1f\"", 0, NULL },
                { "\"a\0b\"", 4, NULL },
                { "\"\\\x01\"", 0, NULL },                               /* escaping one does not help */
                { "\"\\\xc3\xa9\"", 0, NULL },                           /* nor escaping a non-ASCII one */
                /* outside strings: ASCII and JSON's blanks only */
                { "\xc3\xa9", 0, NULL },
                { "{\"a\":1}\xc2\xa0", 0, NULL },                        /* a no-break space after */
                { "[1,\xef\xbb\xbf" "2]", 0, NULL },                     /* a byte-order mark */
                { "\"a\\\\\"\xc3\xa9\"", 0, NULL },                      /* after an escaped backslash it ended */
                { "{\"a\":1}\x0c", 0, NULL },
                { "{\"a\":1}\0", 8, NULL },
                { "\x01{}", 0, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in), out_len = 0;
                char *out = NULL;
                int r = control_json_ascii(cases[i].in, len, &out, &out_len);

                printf("# case %zu\n", i);
                if (!cases[i].out) {
                        CHECK(r == -EINVAL);
                        CHECK(!out);
                } else {
                        CHECK(r == 0);
                        CHECK_STREQ(out, cases[i].out);
                        CHECK_EQ_U64(out_len, strlen(cases[i].out));
                }
                free(out);
        }
}

static void test_parse_utf8(void) {
        json_object *o = NULL, *v;
        const char *doc = "{\"n\\u00e4me\":\"d\xc3\xa9v \xe2\x82\xac \xf0\x9f\x98\x80\",\"\xe6\x97\xa5\":[\"\xc2\xa0\"]}";
        struct json_tokener *tok;

        /* the stand-in for json-c 0.18 (tests/jsonc-strict-018.c) is linked: json-c itself refuses */
        tok = json_tokener_new();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        o = json_tokener_parse_ex(tok, "\"\xc3\xa9\"", 5);
        CHECK(!o && json_tokener_get_error(tok) == json_tokener_error_parse_string);
        json_tokener_free(tok);

        /* the same UTF-8 comes back, whatever json-c's strict mode lets through */
        CHECK(control_parse_json(doc, strlen(doc), &o) == 0);
        CHECK(json_object_object_get_ex(o, "n\xc3\xa4me", &v));
        CHECK_STREQ(json_object_get_string(v), "d\xc3\xa9v \xe2\x82\xac \xf0\x9f\x98\x80");
        CHECK(json_object_object_get_ex(o, "\xe6\x97\xa5", &v));
        CHECK_STREQ(json_object_get_string(json_object_array_get_idx(v, 0)), "\xc2\xa0");
        json_object_put(o);
        o = NULL;
        CHECK(control_parse_json("\"\xf0\x9f\x98\x80\"  ", 8, &o) == 0);
        CHECK_STREQ(json_object_get_string(o), "\xf0\x9f\x98\x80");
        json_object_put(o);
        o = NULL;
        /* a raw control is refused by every json-c (0.15 to 0.17 let it through in strict mode) */
        CHECK(control_parse_json("{\"a\":\"\x1b[2J\"}", 11, &o) == -EINVAL && !o);
        CHECK(control_parse_json("{\"a\":\"\xc3\"}", 9, &o) == -EINVAL && !o);
}

static void test_helpers(void) {
        json_object *o = NULL;

        CHECK(control_parse_json("{\"a\":1}  ", 9, &o) == 0);
        CHECK(json_object_is_type(o, json_type_object));
        json_object_put(o);
        o = NULL;
        CHECK(control_parse_json("12", 2, &o) == 0 && json_object_get_int(o) == 12);
        json_object_put(o);
        CHECK(control_parse_json("{\"a\":1", 6, &o) == -EINVAL);
        CHECK(control_parse_json("", 0, &o) == -EINVAL);
        CHECK(control_parse_json("{} {}", 5, &o) == -EINVAL);

        o = control_reply_error(-EPERM, "nope");
        CHECK_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                    "{\"version\":2,\"ok\":false,\"error\":\"nope\",\"errno\":\"EPERM\"}");
        json_object_put(o);

        CHECK_EQ_U64(control_errno_from_name("ENODEV"), ENODEV);
        CHECK_EQ_U64(control_errno_from_name("EOPNOTSUPP"), EOPNOTSUPP);
        CHECK_EQ_U64(control_errno_from_name("ENOSUCH"), 0);
}

int main(void) {
        control_server *s = NULL;
        char dir[] = "/tmp/test-control-XXXXXX";

        log_open();
        setvbuf(stdout, NULL, _IOLBF, 0);
        umask(022);
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(dir)) {
                printf("# mkdtemp: %m\n");
                return 77;
        }
        /* The uid 65534 child must reach the socket. */
        chmod(dir, 0755);
        snprintf(socket_path, sizeof socket_path, "%s/run/wbtuned/control", dir);

        CHECK(sd_event_new(&event) >= 0);
        CHECK(control_server_new(event, socket_path, verbs, ELEMENTSOF(verbs), &n_pings, &s) == 0);
        if (!s)
                TEST_EXIT();

        test_helpers();
        test_json_ascii();
        test_parse_utf8();
        test_socket_file(dir);
        test_requests();
        test_bad_requests();
        test_line_limit(s);
        test_privileges();
        test_slow_reader(s);
        test_streams(s);
        test_idle_timeout(s);
        test_too_many_clients(s);
        test_uid_limits(s);
        control_server_free(s);
        CHECK(access(socket_path, F_OK) < 0 && errno == ENOENT);

        test_lifecycle(dir);
        test_umask(dir);
        test_client_timeout(dir);
        test_client_cut(dir);

        sd_event_unref(event);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) !system(cmd);
        TEST_EXIT();
}
