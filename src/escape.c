/* Strict UTF-8 and the escaping every text printer (wbtunectl, the daemon's tick lines) uses. */
#include <string.h>

#include "escape.h"
#include "util.h"

size_t utf8_char(const char *s, size_t n, uint32_t *ret_code_point) {
        const unsigned char *p = (const unsigned char *) s;
        uint32_t cp, min;
        size_t len;

        if (n == 0)
                return 0;
        if (p[0] < 0x80) {
                len = 1;
                cp = p[0];
                min = 0;
        } else if ((p[0] & 0xe0) == 0xc0) {
                len = 2;
                cp = p[0] & 0x1f;
                min = 0x80;
        } else if ((p[0] & 0xf0) == 0xe0) {
                len = 3;
                cp = p[0] & 0x0f;
                min = 0x800;
        } else if ((p[0] & 0xf8) == 0xf0) {
                len = 4;
                cp = p[0] & 0x07;
                min = 0x10000;
        } else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (p[i] & 0x3f);
        }
        /* overlong forms, UTF-16 surrogates and code points past Unicode's last are not UTF-8 */
        if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        if (ret_code_point)
                *ret_code_point = cp;
        return len;
}

bool utf8_valid(const char *s, size_t len) {
        for (size_t i = 0; i < len;) {
                if ((unsigned char) s[i] < 0x80) {
                        i++;
                        continue;
                }
                size_t n = utf8_char(s + i, len - i, NULL);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

char *utf8_sanitize(const char *s, size_t len, size_t *ret_len) {
        /* each bad byte becomes the 3 bytes of U+FFFD */
        char *out = malloc(len * 3 + 1);
        size_t o = 0;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t n = (unsigned char) s[i] < 0x80 ? 1 : utf8_char(s + i, len - i, NULL);
                if (n == 0) {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                        continue;
                }
                memcpy(out + o, s + i, n);
                o += n;
                i += n;
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

/* Code points a terminal acts on or that change how a line reads: C1 controls (U+009B is CSI),
 * the line and paragraph separators, and the bidirectional embeddings, overrides and isolates. */
static bool escape_code_point(uint32_t cp) {
        return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
               (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f;
}

/* Append the escaped form of the character at s (at most n bytes) to out; returns bytes consumed. */
static size_t escape_one(const char *s, size_t n, char out[16], size_t *ret_out_len) {
        unsigned char c = (unsigned char) s[0];
        uint32_t cp;
        size_t len;

        if (c < 0x20 || c == 0x7f) {
                *ret_out_len = (size_t) snprintf(out, 16, "\\x%02x", c);
                return 1;
        }
        if (c < 0x80) {
                out[0] = (char) c;
                *ret_out_len = 1;
                return 1;
        }
        len = utf8_char(s, n, &cp);
        if (len == 0) {
                *ret_out_len = (size_t) snprintf(out, 16, "\\x%02x", c);
                return 1;
        }
        if (escape_code_point(cp)) {
                *ret_out_len = (size_t) snprintf(out, 16, "\\u%04x", (unsigned) cp);
                return len;
        }
        memcpy(out, s, len);
        *ret_out_len = len;
        return len;
}

const char *escape_text(const char *s, char *buf, size_t size) {
        size_t o = 0, n;

        if (size == 0)
                return buf;
        if (!s)
                s = "";
        n = strlen(s);
        for (size_t i = 0; i < n;) {
                char piece[16];
                size_t piece_len, used = escape_one(s + i, n - i, piece, &piece_len);

                if (o + piece_len >= size)
                        break;
                memcpy(buf + o, piece, piece_len);
                o += piece_len;
                i += used;
        }
        buf[o] = '\0';
        return buf;
}

char *escape_text_alloc(const char *s) {
        size_t n = s ? strlen(s) : 0;
        /* the longest escape, "\u202e", is 6 bytes for 3 */
        char *buf = malloc(n * 4 + 1);

        if (!buf)
                abort();
        return (char *) escape_text(s, buf, n * 4 + 1);
}

int escape_lines_fputs(const char *s, FILE *f) {
        const char *p = s ? s : "";

        for (;;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                _cleanup_free_ char *line = strndup(p, len), *escaped = NULL;

                if (!line)
                        return -ENOMEM;
                escaped = escape_text_alloc(line);
                if (fputs(escaped, f) < 0 || (nl && fputc('\n', f) == EOF))
                        return -EIO;
                if (!nl)
                        return 0;
                p = nl + 1;
        }
}
