/* SPDX-License-Identifier: GPL-2.0-or-later */
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

/* Code points a terminal acts on or that change how the text after them reads, printed as \uNNNN: C1
 * controls (U+009B is CSI), the line and paragraph separators, and every format character (Unicode's
 * category Cf, 15.0): the bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-202E,
 * U+2066-2069), zero-width spaces and joiners, the soft hyphen, the BOM, interlinear annotation, tags. */
static const struct {
        uint32_t first, last;
} escaped_ranges[] = {
        { 0x0080, 0x009f },   { 0x00ad, 0x00ad },   { 0x0600, 0x0605 },   { 0x061c, 0x061c },
        { 0x06dd, 0x06dd },   { 0x070f, 0x070f },   { 0x0890, 0x0891 },   { 0x08e2, 0x08e2 },
        { 0x180e, 0x180e },   { 0x200b, 0x200f },   { 0x2028, 0x202e },   { 0x2060, 0x2064 },
        { 0x2066, 0x206f },   { 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },   { 0x110bd, 0x110bd },
        { 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a },
        { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

static bool escape_code_point(uint32_t cp) {
        for (size_t i = 0; i < ELEMENTSOF(escaped_ranges) && escaped_ranges[i].first <= cp; i++)
                if (cp <= escaped_ranges[i].last)
                        return true;
        return false;
}

/* Append the escaped form of the character at s (at most n bytes) to out; returns bytes consumed. */
static size_t escape_one(const char *s, size_t n, bool keep_backslash, char out[16], size_t *ret_out_len) {
        unsigned char c = (unsigned char) s[0];
        uint32_t cp;
        size_t len;

        /* "\" itself as "\\": a name that holds the four characters "\x0a" shows unlike a newline */
        if (c == '\\' && !keep_backslash) {
                memcpy(out, "\\\\", 2);
                *ret_out_len = 2;
                return 1;
        }
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
                *ret_out_len = (size_t) snprintf(out, 16, cp > 0xffff ? "\\U%08x" : "\\u%04x", (unsigned) cp);
                return len;
        }
        memcpy(out, s, len);
        *ret_out_len = len;
        return len;
}

static const char *escape_text_full(const char *s, bool keep_backslash, char *buf, size_t size) {
        size_t o = 0, n;

        if (size == 0)
                return buf;
        if (!s)
                s = "";
        n = strlen(s);
        for (size_t i = 0; i < n;) {
                char piece[16];
                size_t piece_len, used = escape_one(s + i, n - i, keep_backslash, piece, &piece_len);

                if (o + piece_len >= size)
                        break;
                memcpy(buf + o, piece, piece_len);
                o += piece_len;
                i += used;
        }
        buf[o] = '\0';
        return buf;
}

const char *escape_text(const char *s, char *buf, size_t size) {
        return escape_text_full(s, false, buf, size);
}

static char *escape_alloc(const char *s, bool keep_backslash) {
        size_t n = s ? strlen(s) : 0;
        /* at most 4 bytes for 1: "\x1b" for a byte, "\u202e" for 3, "\U000e0001" for 4 */
        char *buf = xmalloc(n * 4 + 1);

        return (char *) escape_text_full(s, keep_backslash, buf, n * 4 + 1);
}

char *escape_text_alloc(const char *s) {
        return escape_alloc(s, false);
}

char *escape_text_keep_backslash_alloc(const char *s) {
        return escape_alloc(s, true);
}

static int lines_fputs(const char *s, bool keep_backslash, FILE *f) {
        const char *p = s ? s : "";

        for (;;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                _cleanup_free_ char *line = strndup(p, len), *escaped = NULL;

                if (!line)
                        return -ENOMEM;
                escaped = escape_alloc(line, keep_backslash);
                if (fputs(escaped, f) < 0 || (nl && fputc('\n', f) == EOF))
                        return -EIO;
                if (!nl)
                        return 0;
                p = nl + 1;
        }
}

int escape_lines_fputs(const char *s, FILE *f) {
        return lines_fputs(s, false, f);
}

int escape_made_lines_fputs(const char *s, FILE *f) {
        return lines_fputs(s, true, f);
}

char *escape_json_alloc(const char *json) {
        size_t n = json ? strlen(json) : 0, o = 0;
        /* at most 12 bytes for 4: a surrogate pair; 6 for 1 (DEL, a bad byte) */
        char *out = xmalloc(n * 6 + 1);

        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char) json[i];
                uint32_t cp;
                size_t len;

                if (c == 0x7f) {
                        o += (size_t) sprintf(out + o, "\\u007f");
                        i++;
                        continue;
                }
                if (c < 0x80) {
                        out[o++] = (char) c;
                        i++;
                        continue;
                }
                len = utf8_char(json + i, n - i, &cp);
                if (len == 0) {
                        o += (size_t) sprintf(out + o, "\\ufffd");
                        i++;
                        continue;
                }
                if (!escape_code_point(cp)) {
                        memcpy(out + o, json + i, len);
                        o += len;
                } else if (cp > 0xffff)
                        o += (size_t) sprintf(out + o, "\\u%04x\\u%04x", (unsigned) (0xd800 + ((cp - 0x10000) >> 10)),
                                              (unsigned) (0xdc00 + ((cp - 0x10000) & 0x3ff)));
                else
                        o += (size_t) sprintf(out + o, "\\u%04x", (unsigned) cp);
                i += len;
        }
        out[o] = '\0';
        return out;
}
