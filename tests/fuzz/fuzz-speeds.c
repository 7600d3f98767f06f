/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: the remembered-speeds file parser (speeds_parse(), what the daemon runs on the file
 * it finds at start). Whatever the bytes, it must not crash nor read past them (the input has no NUL);
 * a file it accepts must hold only well-formed entries within the bounds, and must write back
 * (speeds_write()) to a file that reads to the same. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "savedfile.h"
#include "speeds.h"
#include "util.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *tmp = getenv("TMPDIR");

        fuzz_quiet_logs();
        snprintf(dir, sizeof dir, "%s/fuzz-speeds.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof path, "%s/speeds", dir);
        return 0;
}

static void check_entry(const speed_entry *e) {
        size_t len = strnlen(e->id, sizeof e->id);

        if (len == 0 || len >= sizeof e->id)
                fuzz_fail("accepted an empty or unterminated identity");
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) e->id[i] <= ' ' || (unsigned char) e->id[i] > '~')
                        fuzz_fail("accepted an identity with byte 0x%02x", (unsigned char) e->id[i]);
        if (!strchr(e->id, ':'))
                fuzz_fail("accepted an identity without a kind: %s", e->id);
        if (e->bw_bytes_per_s == 0 || e->bw_bytes_per_s > SPEEDS_BW_MAX)
                fuzz_fail("accepted a speed of %llu for %s", (unsigned long long) e->bw_bytes_per_s, e->id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ speed_entry *v = NULL, *back = NULL;
        _cleanup_free_ char *why = NULL, *why2 = NULL, *signed_buf = NULL, *copy = NULL;
        const char *buf = (const char *) data;
        size_t n = 0, n_back = 0;
        int r;

        /* an input starting with 0x01 is a body that gets a valid checksum line: past the checksum,
         * into the version and entry checks (otherwise nearly every mutation stops at the checksum) */
        if (size > 0 && data[0] == 0x01) {
                char line[64];

                saved_file_checksum_line(buf + 1, size - 1, line, sizeof line);
                signed_buf = malloc(size - 1 + strlen(line));
                if (!signed_buf)
                        return 0;
                memcpy(signed_buf, buf + 1, size - 1);
                memcpy(signed_buf + size - 1, line, strlen(line));
                buf = signed_buf;
                size = size - 1 + strlen(line);
        } else {
                /* an exact-size copy, so ASan sees any read past the end of the input */
                copy = malloc(MAX(size, 1));
                if (!copy)
                        return 0;
                memcpy(copy, buf, size);
                buf = copy;
        }
        r = speeds_parse(buf, size, &v, &n, &why);
        if (r < 0) {
                if (r == -EBADMSG && !why)
                        fuzz_fail("refused without a reason");
                if (r != -EBADMSG && r != -ENOMEM)
                        fuzz_fail("refused with %d, not -EBADMSG", r);
                return 0;
        }
        if (n > SPEEDS_MAX_ENTRIES)
                fuzz_fail("accepted %zu entries, over the bound", n);
        for (size_t i = 0; i < n; i++) {
                check_entry(&v[i]);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(v[i].id, v[j].id) == 0)
                                fuzz_fail("accepted %s twice", v[i].id);
        }
        if (speeds_write(path, v, n) < 0)
                fuzz_fail("could not write back what was accepted");
        r = speeds_read(path, &back, &n_back, &why2);
        if (r < 0)
                fuzz_fail("what was written back is refused: %s", why2 ? why2 : "?");
        if (n_back != n)
                fuzz_fail("the round trip changed the number of entries");
        for (size_t i = 0; i < n; i++)
                if (strcmp(back[i].id, v[i].id) != 0 || back[i].bw_bytes_per_s != v[i].bw_bytes_per_s ||
                    back[i].measured_realtime_s != v[i].measured_realtime_s)
                        fuzz_fail("the round trip changed entry %zu", i);
        (void) unlink(path);
        return 0;
}
