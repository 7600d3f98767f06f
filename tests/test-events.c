/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Every journal event has a unique MESSAGE_ID of 32 hex digits and an entry in systemd/wbtuned.catalog. */
#include "events.h"
#include "util.h"
#include "tap.h"

#include <ctype.h>
#include <string.h>

int main(void) {
        const char *srcdir = getenv("top_srcdir");
        _cleanup_free_ char *path = NULL, *catalog = NULL;

        if (asprintf(&path, "%s/systemd/wbtuned.catalog", srcdir ? srcdir : "..") < 0)
                return EXIT_FAILURE;
        CHECK(read_file_full(path, &catalog, NULL) >= 0);
        for (size_t i = 0; i < _EVENT_MAX; i++) {
                const event_info *e = &event_table[i];
                char header[64];
                bool hex = e->message_id && strlen(e->message_id) == 32;

                for (size_t j = 0; hex && j < 32; j++)
                        hex = isxdigit((unsigned char) e->message_id[j]) && !isupper((unsigned char) e->message_id[j]);
                printf("# %s %s\n", e->name ? e->name : "(none)", e->message_id ? e->message_id : "(none)");
                CHECK(hex);
                CHECK(e->name && e->name[0]);
                for (size_t j = 0; j < i; j++)
                        CHECK(strcmp(event_table[j].message_id, e->message_id) != 0);
                snprintf(header, sizeof header, "\n-- %s\n", e->message_id ? e->message_id : "");
                CHECK(catalog && strstr(catalog, header));
        }
        TEST_EXIT();
}
