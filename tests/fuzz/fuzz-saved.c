/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: the saved-originals file parser (saved_file_parse(), what the daemon runs on the
 * file a crashed run left). Whatever the bytes, it must not crash; a file it accepts must hold only
 * values the kernel takes, and must write back (saved_file_write()) to a file that parses to the same. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "savedfile.h"
#include "util.h"

#define PAGE 4096ULL

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *tmp = getenv("TMPDIR");

        fuzz_quiet_logs();
        snprintf(dir, sizeof dir, "%s/fuzz-saved.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof path, "%s/saved", dir);
        return 0;
}

static void check_entry(const saved_entry *e) {
        const knob_info *k = knob_get(e->knob);

        if (!k)
                fuzz_fail("accepted an unknown knob %d", (int) e->knob);
        if (k->device != (e->bdi[0] != 0))
                fuzz_fail("accepted %s with the wrong scope", k->name);
        if (knob_check_value(e->knob, e->original.form, e->original.value, PAGE) < 0)
                fuzz_fail("accepted %s original %llu out of range", k->name, (unsigned long long) e->original.value);
        if (e->written && knob_check_value(e->knob, e->written_setting.form, e->written_setting.value, PAGE) < 0)
                fuzz_fail("accepted %s written value out of range", k->name);
        if (strchr(e->bdi, '/') || e->bdi[0] == '.')
                fuzz_fail("accepted a device name that leaves /sys/class/bdi: %s", e->bdi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ saved_entry *v = NULL, *back = NULL;
        _cleanup_free_ char *why = NULL, *why2 = NULL, *signed_buf = NULL;
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
        }
        r = saved_file_parse(buf, size, PAGE, &v, &n, &why);
        if (r < 0) {
                if (r == -EBADMSG && !why)
                        fuzz_fail("refused without a reason");
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                check_entry(&v[i]);
        if (saved_file_write(path, v, n) < 0)
                fuzz_fail("could not write back what was accepted");
        if (n == 0)
                return 0;
        r = saved_file_read(path, PAGE, &back, &n_back, &why2);
        if (r < 0)
                fuzz_fail("what was written back is refused: %s", why2 ? why2 : "?");
        if (n_back != n)
                fuzz_fail("the round trip changed the number of entries");
        for (size_t i = 0; i < n; i++)
                if (strcmp(back[i].bdi, v[i].bdi) != 0 || back[i].knob != v[i].knob ||
                    !knob_setting_equal(back[i].original, v[i].original) || back[i].written != v[i].written ||
                    (v[i].written && !knob_setting_equal(back[i].written_setting, v[i].written_setting)) ||
                    back[i].pending != v[i].pending ||
                    (v[i].pending && !knob_setting_equal(back[i].pending_setting, v[i].pending_setting)))
                        fuzz_fail("the round trip changed entry %zu", i);
        (void) unlink(path);
        return 0;
}
