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
        /* escaping what is escaped changes nothing */
        CHECK_STREQ(escape_text("a\\x1b\\u202e", buf, sizeof buf), "a\\x1b\\u202e");
        CHECK_STREQ(escape_text(escape_text("\x1b\n\xff\xe2\x80\xae", buf, sizeof buf), buf + 64, 64), buf);
        /* C1 CSI, a bidi override, a line separator, bytes that are not UTF-8 */
        CHECK_STREQ(escape_text("\xc2\x9b" "2J", buf, sizeof buf), "\\u009b2J");
        CHECK_STREQ(escape_text("\xe2\x80\xae" "txt", buf, sizeof buf), "\\u202etxt");
        CHECK_STREQ(escape_text("a\xe2\x80\xa8" "b", buf, sizeof buf), "a\\u2028b");
        CHECK_STREQ(escape_text("x\xff\xc3", buf, sizeof buf), "x\\xff\\xc3");

        /* cut at a character boundary, never inside an escape */
        CHECK_STREQ(escape_text("ab\x1b", buf, 5), "ab");
        CHECK_STREQ(escape_text("ab\x1b", buf, 7), "ab\\x1b");
        CHECK_STREQ(escape_text("\xc3\xa9\xc3\xa9", buf, 4), "\xc3\xa9");

        _cleanup_free_ char *a = escape_text_alloc("\xe2\x80\xae\xe2\x80\xae\x01");
        CHECK_STREQ(a, "\\u202e\\u202e\\x01");

        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        CHECK(escape_lines_fputs("line one\nsda \x1b[2J\n\nend", f) == 0);
        fclose(f);
        CHECK_STREQ(text, "line one\nsda \\x1b[2J\n\nend");
        free(text);
}

int main(void) {
        test_utf8();
        test_escape();
        TEST_EXIT();
}
