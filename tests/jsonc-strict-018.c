/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c 0.18's strict mode on any json-c, for the tests and fuzz harnesses linked with
 * -Wl,--wrap=json_tokener_parse_ex (issue 25). json-c 0.18 (Debian 13) added, in
 * json_tokener_parse_ex()'s json_tokener_state_string, "(tok->flags & JSON_TOKENER_STRICT) && c <= 0x1f"
 * with c a plain (signed on x86) char: besides the raw controls it meant to refuse, every byte above
 * 0x7f is negative and refused, so no UTF-8 string parses in strict mode (json-c issue #875, fixed in
 * 0.19 by a cast to unsigned char). This wrapper applies that same comparison before the real tokener
 * sees the bytes, so Debian 12's json-c 0.16 answers as 0.18 does. It checks object keys too (0.18
 * checks values only): stricter, never more lenient. A tokener fed in pieces keeps its string state
 * across calls as long as the previous call on it asked for more (json_tokener_continue). */
#include <json-c/json.h>
#include <stdbool.h>
#include <string.h>

struct json_object *__real_json_tokener_parse_ex(struct json_tokener *tok, const char *str, int len);
struct json_object *__wrap_json_tokener_parse_ex(struct json_tokener *tok, const char *str, int len);

static const struct json_tokener *last_tok;
static bool in_string, escaped;

struct json_object *__wrap_json_tokener_parse_ex(struct json_tokener *tok, const char *str, int len) {
        size_t n = len < 0 ? strlen(str) : (size_t) len;

        if (!(tok->flags & JSON_TOKENER_STRICT))
                return __real_json_tokener_parse_ex(tok, str, len);
        if (tok != last_tok || json_tokener_get_error(tok) != json_tokener_continue)
                in_string = escaped = false;
        last_tok = tok;

        for (size_t i = 0; i < n; i++) {
                signed char c = (signed char) str[i];   /* as 0.18's "char c" on x86 */

                if (!in_string) {
                        in_string = c == '"';
                        continue;
                }
                if (escaped) {
                        escaped = false;
                        continue;
                }
                if (c == '\\')
                        escaped = true;
                else if (c == '"')
                        in_string = false;
                else if (c <= 0x1f) {
                        /* up to here as the real tokener goes (it may fail earlier, as 0.18 would),
                         * then 0.18's error at this byte */
                        struct json_object *o = __real_json_tokener_parse_ex(tok, str, (int) i);

                        if (o || json_tokener_get_error(tok) != json_tokener_continue)
                                return o;
                        tok->err = json_tokener_error_parse_string;
                        tok->char_offset = (int) i;
                        in_string = escaped = false;
                        return NULL;
                }
        }
        return __real_json_tokener_parse_ex(tok, str, len);
}
