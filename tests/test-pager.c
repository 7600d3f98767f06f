/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for pager.c: which pager runs, and whether in secure mode, from the environment and the uids. */
#include <string.h>

#include "pager.h"
#include "tap.h"
#include "util.h"

static void test_decide(void) {
        /* command NULL: less (and more unless secure); "-": no pager at all */
        static const struct {
                const char *name;
                pager_env env;
                const char *command;
                bool secure, bad;
        } cases[] = {
                { "nothing set: less, not secure", { .uid = 1000, .euid = 1000 }, NULL, false, false },
                { "$PAGER", { .pager = "most", .uid = 1000, .euid = 1000 }, "most", false, false },
                { "$SYSTEMD_PAGER before $PAGER", { .systemd_pager = "sp", .pager = "p" }, "sp", false, false },
                { "PAGER=cat: none", { .pager = "cat" }, "-", false, false },
                { "PAGER empty: none", { .pager = "" }, "-", false, false },
                { "SYSTEMD_PAGER empty beats $PAGER: none", { .systemd_pager = "", .pager = "most" }, "-", false, false },
                /* run for someone else: secure, and only less */
                { "sudo: $PAGER ignored", { .pager = "vim -", .sudo_uid = "1000" }, NULL, true, false },
                { "sudo: $SYSTEMD_PAGER ignored", { .systemd_pager = "sh", .sudo_uid = "1000" }, NULL, true, false },
                { "sudo, no pager set: secure less", { .sudo_uid = "1000" }, NULL, true, false },
                { "pkexec", { .pager = "most", .pkexec_uid = "1000" }, NULL, true, false },
                { "setuid: euid != uid", { .pager = "most", .uid = 1000, .euid = 0 }, NULL, true, false },
                { "AT_SECURE", { .pager = "most", .at_secure = true }, NULL, true, false },
                { "SUDO_UID empty does not count", { .pager = "most", .sudo_uid = "" }, "most", false, false },
                { "sudo, PAGER=cat: still none", { .pager = "cat", .sudo_uid = "1000" }, "-", false, false },
                /* $SYSTEMD_PAGERSECURE: the user's word on the mode, and their pager is trusted */
                { "PAGERSECURE=1: secure, $PAGER trusted", { .pager = "most", .pager_secure = "1" }, "most", true, false },
                { "PAGERSECURE=yes, no pager: secure less", { .pager_secure = "yes" }, NULL, true, false },
                { "PAGERSECURE=0 under sudo: $PAGER, not secure",
                  { .pager = "most", .pager_secure = "0", .sudo_uid = "1000" }, "most", false, false },
                { "PAGERSECURE=false, setuid: less, not secure", { .pager_secure = "false", .euid = 1 }, NULL, false, false },
                { "PAGERSECURE=TRUE under sudo: $PAGER trusted",
                  { .pager = "most", .pager_secure = "TRUE", .sudo_uid = "0" }, "most", true, false },
                { "PAGERSECURE bogus: secure, not trusted, a warning",
                  { .pager = "most", .pager_secure = "maybe" }, NULL, true, true },
                { "PAGERSECURE empty: bogus", { .pager = "most", .pager_secure = "" }, NULL, true, true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                pager_choice c = pager_decide(&cases[i].env);
                bool none = cases[i].command && strcmp(cases[i].command, "-") == 0;

                printf("# %s\n", cases[i].name);
                CHECK(c.page == !none);
                if (none)
                        continue;
                if (cases[i].command)
                        CHECK_STREQ(c.command, cases[i].command);
                else
                        CHECK(c.command == NULL);
                CHECK(c.secure == cases[i].secure);
                CHECK(c.bad_pager_secure == cases[i].bad);
        }
}

int main(void) {
        test_decide();
        TEST_EXIT();
}
