/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control socket, the client's end: one request, one reply; and the strict JSON parse both ends use. */
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "control-client.h"
#include "escape.h"
#include "util.h"

static size_t put_u_escape(char *out, unsigned unit) {
        static const char hex[] = "0123456789abcdef";

        if (out) {
                memcpy(out, "\\u", 2);
                for (int k = 0; k < 4; k++)
                        out[2 + k] = hex[unit >> (12 - 4 * k) & 0xf];
        }
        return 6;
}

/* One pass of control_json_ascii(): the length of the ASCII form, written to out unless NULL. */
static ssize_t json_ascii_pass(const char *s, size_t len, char *out) {
        bool in_string = false;
        size_t o = 0;

        for (size_t i = 0; i < len;) {
                unsigned char c = (unsigned char) s[i];
                uint32_t cp;
                size_t n;

                if (!in_string) {
                        /* between tokens JSON is ASCII; of the controls only its blanks */
                        if (c >= 0x80 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r'))
                                return -EINVAL;
                        in_string = c == '"';
                } else if (c < 0x20)
                        return -EINVAL;          /* a raw control in a string: JSON wants it escaped */
                else if (c == '"')
                        in_string = false;
                else if (c == '\\') {
                        /* the escaped character goes as it is (json-c checks it), if it is ASCII */
                        if (out)
                                out[o] = (char) c;
                        o++;
                        i++;
                        if (i == len)
                                break;
                        c = (unsigned char) s[i];
                        if (c < 0x20 || c >= 0x80)
                                return -EINVAL;
                } else if (c >= 0x80) {
                        n = utf8_char(s + i, len - i, &cp);
                        if (n == 0)
                                return -EINVAL;  /* not UTF-8: overlong, a surrogate, past U+10FFFF, cut */
                        if (cp > 0xffff) {
                                cp -= 0x10000;
                                o += put_u_escape(out ? out + o : NULL, 0xd800 + (cp >> 10));
                                o += put_u_escape(out ? out + o : NULL, 0xdc00 + (cp & 0x3ff));
                        } else
                                o += put_u_escape(out ? out + o : NULL, cp);
                        i += n;
                        continue;
                }
                if (out)
                        out[o] = (char) c;
                o++;
                i++;
        }
        return (ssize_t) o;
}

int control_json_ascii(const char *s, size_t len, char **ret, size_t *ret_len) {
        ssize_t n = json_ascii_pass(s, len, NULL);
        char *out;

        if (n < 0)
                return (int) n;
        out = malloc((size_t) n + 1);
        if (!out)
                return -ENOMEM;
        (void) json_ascii_pass(s, len, out);
        out[n] = '\0';
        *ret = out;
        *ret_len = (size_t) n;
        return 0;
}

int control_parse_json(const char *s, size_t len, json_object **ret) {
        /* json-c sees ASCII only: its strict mode differs in what it lets through in a string from one
         * release to the next (0.18 refuses every byte above 0x7f as a control character); these checks are ours */
        _cleanup_free_ char *copy = NULL;
        size_t copy_len = 0;
        int r = control_json_ascii(s, len, &copy, &copy_len);
        if (r < 0)
                return r;
        if (copy_len >= INT_MAX)
                return -EINVAL;

        struct json_tokener *tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);

        /* The tokener wants the terminating NUL counted so a bare number at the end parses. */
        json_object *o = json_tokener_parse_ex(tok, copy, (int) copy_len + 1);
        bool ok = json_tokener_get_error(tok) == json_tokener_success;
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!ok) {
                json_object_put(o);
                return -EINVAL;
        }
        /* Allow trailing blanks, nothing else (end may count the NUL itself). */
        for (; end < copy_len; end++)
                if (!strchr(" \t\r", copy[end])) {
                        json_object_put(o);
                        return -EINVAL;
                }

        *ret = o;
        return 0;
}

int control_errno_from_name(const char *name) {
        if (!name)
                return 0;
        for (int e = 1; e < 256; e++) {
                const char *n = strerrorname_np(e);
                if (n && strcmp(n, name) == 0)
                        return e;
        }
        return 0;
}

/* Milliseconds left until deadline_usec (CLOCK_MONOTONIC), at least 0. */
static int remaining_ms(uint64_t deadline_usec) {
        uint64_t now = now_usec();
        if (now >= deadline_usec)
                return 0;
        return (int) MIN((deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
}

static int wait_fd(int fd, short events, uint64_t deadline_usec) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int n = poll(&p, 1, remaining_ms(deadline_usec));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ETIMEDOUT;
                return 0;
        }
}

int control_call(const char *path, json_object *request, json_object **reply, int timeout_ms) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t deadline = now_usec() + (uint64_t) MAX(timeout_ms, 0) * 1000;
        int r;

        if (!path || !request || !reply)
                return -EINVAL;
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A unix connect() only fails with EAGAIN when the backlog is full: retry until the deadline. */
        while (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (remaining_ms(deadline) == 0)
                        return -ETIMEDOUT;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }

        size_t len;
        const char *text = json_object_to_json_string_length(request, JSON_C_TO_STRING_PLAIN, &len);
        if (!text)
                return -ENOMEM;
        _cleanup_free_ char *line = malloc(len + 1);
        if (!line)
                return -ENOMEM;
        memcpy(line, text, len);
        line[len++] = '\n';

        for (size_t done = 0; done < len;) {
                ssize_t n = send(fd, line + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = wait_fd(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                done += (size_t) n;
        }

        _cleanup_free_ char *buf = NULL;
        size_t buf_len = 0, buf_allocated = 0;
        char *nl = NULL;
        while (!nl) {
                if (buf_len + 4096 > buf_allocated) {
                        if (buf_allocated >= CONTROL_REPLY_MAX)
                                return -EFBIG;
                        size_t want = MIN(MAX(buf_allocated * 2, (size_t) 16384), CONTROL_REPLY_MAX);
                        char *p = realloc(buf, want);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        buf_allocated = want;
                }
                ssize_t n = recv(fd, buf + buf_len, buf_allocated - buf_len, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = wait_fd(fd, POLLIN, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n == 0)
                        /* closed before a whole reply arrived: before any of it, or in the middle */
                        return buf_len == 0 ? -ECONNRESET : -EPIPE;
                nl = memchr(buf + buf_len, '\n', (size_t) n);
                buf_len += (size_t) n;
                /* a big reply comes in pieces: the timeout is for a daemon that stops sending */
                deadline = now_usec() + (uint64_t) MAX(timeout_ms, 0) * 1000;
        }

        json_object *o = NULL;
        r = control_parse_json(buf, (size_t) (nl - buf), &o);
        if (r < 0)
                return r == -ENOMEM ? r : -EBADMSG;
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return -EBADMSG;
        }
        *reply = o;
        return 0;
}
