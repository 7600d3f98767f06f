/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control socket, the client's end (wbtunectl, the tests) and the strict JSON parse both ends use;
 * the server is src/daemon/control.h. */
#pragma once

#include <stddef.h>
#include <json-c/json.h>

#define CONTROL_REPLY_MAX ((size_t) 256 << 20) /* client side: the longest reply we accept */

/* Client side, used by wbtunectl and the tests: connect, send one request, read one reply, giving up
 * after timeout_ms without progress. -ENOENT/-ECONNREFUSED when no daemon listens, -ECONNRESET when
 * it closed the connection before answering, -EPIPE when it closed it in the middle of a reply,
 * -EFBIG for a reply longer than CONTROL_REPLY_MAX, -EBADMSG for one that is not a JSON object. */
int control_call(const char *path, json_object *request, json_object **reply, int timeout_ms);

/* Strict JSON parse of exactly s[0..len) (trailing blanks allowed). 0, -EINVAL or -ENOMEM. Refuses
 * what control_json_ascii() refuses, then hands json-c the ASCII form, so json-c's release (0.18's
 * strict mode refuses every non-ASCII byte in a string) changes nothing. */
int control_parse_json(const char *s, size_t len, json_object **ret);
/* The same JSON text in ASCII: each character past U+007F in a string becomes a \uXXXX escape (a
 * surrogate pair past U+FFFF). -EINVAL for what is not JSON's UTF-8: bytes that are not UTF-8 (also
 * overlong forms and encoded surrogates), a raw control (< 0x20) in a string, a byte past 0x7f or a
 * control but tab, newline and CR outside one. *ret (NUL-terminated, *ret_len bytes) is the caller's. */
int control_json_ascii(const char *s, size_t len, char **ret, size_t *ret_len);
/* "EPERM" -> EPERM (positive); 0 if unknown. */
int control_errno_from_name(const char *name);
