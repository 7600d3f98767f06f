/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for escape.c: strict UTF-8 and the one escaping rule for text output. */
#include <string.h>

#include "escape.h"
#include "tap.h"
#include "util.h"

static void test_utf8(void) {
        static const struct {
                const char *s;
                bool valid;
        } cases[] = {
                { "", true },
                { "plain ascii", true },
                { "caf\xc3\xa9", true },                  /* é */
                { "\xe2\x82\xac", true },                 /* € */
                { "\xf0\x9f\x98\x80", true },             /* U+1F600 */
                { "\xf4\x8f\xbf\xbf", true },             /* U+10FFFF, the last */
                { "\xff", false },
                { "\xc3", false },                        /* cut short */
                { "\xe2\x82", false },
                { "\xc0\xaf", false },                    /* overlong '/' */
                { "\xe0\x80\xaf", false },                /* overlong '/' */
                { "\xed\xa0\x80", false },                /* a surrogate, U+D800 */
                { "\xf4\x90\x80\x80", false },            /* U+110000 */
                { "\x80", false },                        /* a lone continuation byte */
                { "a\xc3\xa9\xff", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                CHECK(utf8_valid(cases[i].s, strlen(cases[i].s)) == cases[i].valid);

        size_t len;
        _cleanup_free_ char *a = utf8_sanitize("a\xff" "b\xc3\xa9\xed\xa0\x80", 8, &len);
        CHECK_STREQ(a, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        CHECK_EQ_U64(len, strlen(a));
        CHECK(utf8_valid(a, len));
}

static void test_escape(void) {
        char buf[128];

        CHECK_STREQ(escape_text("sda", buf, sizeof buf), "sda");
        CHECK_STREQ(escape_text(NULL, buf, sizeof buf), "");
        CHECK_STREQ(escape_text("/srv/with space", buf, sizeof buf), "/srv/with space");
        CHECK_STREQ(escape_text("caf\xc3\xa9", buf, sizeof buf), "caf\xc3\xa9");
        /* a terminal escape, a forged line, a tab, DEL */
        CHECK_STREQ(escape_text("\x1b[31mred", buf, sizeof buf), "\\x1b[31mred");
        CHECK_STREQ(escape_text("/mnt/a\nfake line", buf, sizeof buf), "/mnt/a\\x0afake line");
        CHECK_STREQ(escape_text("a\tb\rc\x7f", buf, sizeof buf), "a\\x09b\\x0dc\\x7f");
        /* "\" as "\\": a name spelled "\x0a" and one with a newline do not look alike */
        CHECK_STREQ(escape_text("a\\x0a", buf, sizeof buf), "a\\\\x0a");
        CHECK_STREQ(escape_text("a\n", buf, sizeof buf), "a\\x0a");
        CHECK_STREQ(escape_text("C:\\dir\\", buf, sizeof buf), "C:\\\\dir\\\\");
        CHECK_STREQ(escape_text("a\\u202e", buf, sizeof buf), "a\\\\u202e");
        /* C1 CSI, a bidi override, a line separator, bytes that are not UTF-8 */
        CHECK_STREQ(escape_text("\xc2\x9b" "2J", buf, sizeof buf), "\\u009b2J");
        CHECK_STREQ(escape_text("\xe2\x80\xae" "txt", buf, sizeof buf), "\\u202etxt");
        CHECK_STREQ(escape_text("a\xe2\x80\xa8" "b", buf, sizeof buf), "a\\u2028b");
        CHECK_STREQ(escape_text("x\xff\xc3", buf, sizeof buf), "x\\xff\\xc3");
        /* every bidi control: U+061C ARABIC LETTER MARK, LRM/RLM, embeddings and overrides, isolates */
        static const struct {
                const char *in, *out;
        } bidi[] = {
                { "\xd8\x9c", "\\u061c" },     { "\xe2\x80\x8e", "\\u200e" }, { "\xe2\x80\x8f", "\\u200f" },
                { "\xe2\x80\xaa", "\\u202a" }, { "\xe2\x80\xab", "\\u202b" }, { "\xe2\x80\xac", "\\u202c" },
                { "\xe2\x80\xad", "\\u202d" }, { "\xe2\x80\xae", "\\u202e" }, { "\xe2\x81\xa6", "\\u2066" },
                { "\xe2\x81\xa7", "\\u2067" }, { "\xe2\x81\xa8", "\\u2068" }, { "\xe2\x81\xa9", "\\u2069" },
                /* invisible format characters: zero-width space, ZWNJ, ZWJ, word joiner, invisible times,
                 * inhibit symmetric swapping, the BOM, interlinear annotation, soft hyphen, a tag, the
                 * Mongolian vowel separator, an Arabic number sign */
                { "\xe2\x80\x8b", "\\u200b" }, { "\xe2\x80\x8c", "\\u200c" }, { "\xe2\x80\x8d", "\\u200d" },
                { "\xe2\x81\xa0", "\\u2060" }, { "\xe2\x81\xa2", "\\u2062" }, { "\xe2\x81\xaa", "\\u206a" },
                { "\xef\xbb\xbf", "\\ufeff" }, { "\xef\xbf\xb9", "\\ufff9" }, { "\xc2\xad", "\\u00ad" },
                { "\xf3\xa0\x80\x81", "\\U000e0001" }, { "\xf3\xa0\x81\xbf", "\\U000e007f" },
                { "\xe1\xa0\x8e", "\\u180e" }, { "\xd8\x80", "\\u0600" },
                /* neighbours that are plain characters stay */
                { "\xd8\x9b", "\xd8\x9b" },        /* U+061B ARABIC SEMICOLON */
                { "\xe2\x80\x90", "\xe2\x80\x90" }, /* U+2010 HYPHEN */
                { "\xe2\x81\xb0", "\xe2\x81\xb0" }, /* U+2070 SUPERSCRIPT ZERO */
                { "\xf3\xa0\x82\x80", "\xf3\xa0\x82\x80" }, /* U+E0080, unassigned past the tags */
        };
        for (size_t i = 0; i < ELEMENTSOF(bidi); i++)
                CHECK_STREQ(escape_text(bidi[i].in, buf, sizeof buf), bidi[i].out);
        CHECK_STREQ(escape_text("sda\xd8\x9c" "1", buf, sizeof buf), "sda\\u061c1");

        /* cut at a character boundary, never inside an escape */
        CHECK_STREQ(escape_text("ab\x1b", buf, 5), "ab");
        CHECK_STREQ(escape_text("ab\x1b", buf, 7), "ab\\x1b");
        CHECK_STREQ(escape_text("\xc3\xa9\xc3\xa9", buf, 4), "\xc3\xa9");

        _cleanup_free_ char *kept = escape_text_keep_backslash_alloc("/srv/a\\b\n\xd8\x9c");
        CHECK_STREQ(kept, "/srv/a\\b\\x0a\\u061c");
        _cleanup_free_ char *a = escape_text_alloc("\xe2\x80\xae\xe2\x80\xae\x01");
        CHECK_STREQ(a, "\\u202e\\u202e\\x01");

        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        CHECK(escape_lines_fputs("line one\nsda \x1b[2J\n\nend", f) == 0);
        fclose(f);
        CHECK_STREQ(text, "line one\nsda \\x1b[2J\n\nend");
        free(text);

        /* lines escaped by their maker (the daemon's explain text): escaped again, its "\" not doubled */
        f = open_memstream(&text, &size);
        CHECK(escape_made_lines_fputs("sda\\x0a (sdb\\\\x0a)\nraw \x1b\xe2\x80\xae", f) == 0);
        fclose(f);
        CHECK_STREQ(text, "sda\\x0a (sdb\\\\x0a)\nraw \\x1b\\u202e");
        free(text);
        /* a name escaped, then put through escape_made_lines_fputs(), reads as it was escaped once */
        _cleanup_free_ char *once = escape_text_alloc("a\\x0a\nb");
        f = open_memstream(&text, &size);
        CHECK(escape_made_lines_fputs(once, f) == 0);
        fclose(f);
        CHECK_STREQ(text, once);
        free(text);
}

/* --json: json-c escapes C0, '"' and '\'; DEL, C1, separators and format characters are ours to escape */
static void test_json(void) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "{ \"a\": \"plain \\\\ \\u001b caf\xc3\xa9\" }", "{ \"a\": \"plain \\\\ \\u001b caf\xc3\xa9\" }" },
                { "\"del\x7f\"", "\"del\\u007f\"" },
                { "\"csi\xc2\x9b" "2J\"", "\"csi\\u009b2J\"" },
                { "\"\xe2\x80\xae\xd8\x9c\xe2\x80\x8b\xe2\x80\xa8\"", "\"\\u202e\\u061c\\u200b\\u2028\"" },
                { "\"tag\xf3\xa0\x80\x81\"", "\"tag\\udb40\\udc01\"" },
                { "\"bad\xff\"", "\"bad\\ufffd\"" },
                { "", "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *out = escape_json_alloc(cases[i].in);
                CHECK_STREQ(out, cases[i].out);
        }
}

int main(void) {
        test_utf8();
        test_escape();
        test_json();
        TEST_EXIT();
}
