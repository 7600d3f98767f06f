/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the saved-originals file: round trip, version, checksum, ranges, and files not to trust. */
#include "log.h"
#include "savedfile.h"
#include "util.h"
#include "tap.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#define PAGE 4096ULL

static char dir[] = "/tmp/test-savedfile.XXXXXX";
static char path[300];

static const saved_entry sample_entries[] = {
        { .bdi = "", .knob = KNOB_DIRTY_BYTES, .original = { KNOB_FORM_RATIO, 20 }, .written = true,
          .written_setting = { KNOB_FORM_SELF, 419430400 } },
        { .bdi = "", .knob = KNOB_DIRTY_WRITEBACK_CENTISECS, .original = { KNOB_FORM_SELF, 500 },
          .pending = true, .pending_setting = { KNOB_FORM_SELF, 100 } },
        { .bdi = "7:1", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_FINE, 1000000 }, .written = true,
          .written_setting = { KNOB_FORM_FINE, 40000 }, .pending = true, .pending_setting = { KNOB_FORM_FINE, 20000 } },
        { .bdi = "7:1", .knob = KNOB_STRICT_LIMIT, .original = { KNOB_FORM_SELF, 0 } },
        { .bdi = "8:16", .knob = KNOB_MIN_BYTES, .original = { KNOB_FORM_RATIO, 0 } },
};

static int parse(const char *text, char **why) {
        _cleanup_free_ saved_entry *v = NULL;
        size_t n = 0;

        return saved_file_parse(text, strlen(text), PAGE, &v, &n, why);
}

/* The text of a valid file with these entry lines (the checksum computed the way the writer does). */
static char *valid_with(const saved_entry *v, size_t n) {
        char *buf = NULL;

        if (saved_file_write(path, v, n) < 0 || read_file_full(path, &buf, NULL) < 0)
                return NULL;
        return buf;
}

static void test_round_trip(void) {
        _cleanup_free_ saved_entry *back = NULL;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t n = 0;

        printf("# what is written reads back the same, mode 0644, version line first\n");
        CHECK(saved_file_write(path, sample_entries, ELEMENTSOF(sample_entries)) == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        CHECK(saved_file_read(path, PAGE, &back, &n, NULL) == 0);
        CHECK_EQ_U64(n, ELEMENTSOF(sample_entries));
        CHECK(back && memcmp(back, sample_entries, sizeof sample_entries) == 0);
        CHECK(read_file_full(path, &text, NULL) >= 0);
        printf("%s", text ? text : "");
        CHECK(text && strstr(text, "\nwbtuned-saved 2\n"));
        CHECK(text && strstr(text, "bdi 7:1 max_bytes original max_ratio_fine 1000000 written max_ratio_fine 40000 "
                                   "pending max_ratio_fine 20000\n"));
        CHECK(text && strstr(text, "\nchecksum fnv1a64 "));

        printf("# no entries: the file is removed\n");
        CHECK(saved_file_write(path, NULL, 0) == 0);
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);
        CHECK(saved_file_read(path, PAGE, &back, &n, NULL) == -ENOENT);
}

static void test_refused_content(void) {
        _cleanup_free_ char *good = valid_with(sample_entries, ELEMENTSOF(sample_entries));
        static const char *const bad[] = {
                "",
                "global dirty_bytes original dirty_ratio 20\n",                        /* no version */
                "wbtuned-saved 1\nchecksum fnv1a64 0000000000000000\n",                /* old version */
                "wbtuned-saved 99\nchecksum fnv1a64 0000000000000000\n",
                "wbtuned-saved 2\n",                                                   /* no checksum */
                "wbtuned-saved 2\nchecksum fnv1a64 0000000000000000",                  /* cut mid-line */
                "wbtuned-saved 2\nchecksum fnv1a64 xyz\n",
        };
        char *why = NULL;

        printf("# files the daemon must not trust: each refused with a reason\n");
        CHECK(good != NULL);
        CHECK(good && parse(good, NULL) == 0);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                CHECK(parse(bad[i], &why) == -EBADMSG);
                printf("#   %zu: %s\n", i, why ? why : "(none)");
                CHECK(why != NULL);
                free(why);
                why = NULL;
        }

        printf("# any change to a valid file breaks its checksum\n");
        for (size_t i = 0; good && good[i]; i++) {
                char *copy = xstrdup(good);
                /* a changed digit, letter or the loss of a newline */
                copy[i] = copy[i] == '0' ? '1' : copy[i] == '\n' ? ' ' : copy[i] ^ 0x01;
                /* every byte, comments included, is under the checksum */
                if (parse(copy, NULL) == 0) {
                        printf("#   byte %zu changed and still accepted\n", i);
                        CHECK(false);
                }
                free(copy);
        }

        printf("# entries that parse but must not be written back are refused\n");
        static const struct { saved_entry e; } wrong[] = {
                { { .bdi = "", .knob = KNOB_DIRTY_BYTES, .original = { KNOB_FORM_SELF, 4096 } } },      /* < 2 pages */
                { { .bdi = "", .knob = KNOB_DIRTY_BYTES, .original = { KNOB_FORM_RATIO, 0 } } },        /* zero limit */
                { { .bdi = "", .knob = KNOB_DIRTY_BYTES, .original = { KNOB_FORM_RATIO, 101 } } },
                { { .bdi = "7:0", .knob = KNOB_STRICT_LIMIT, .original = { KNOB_FORM_SELF, 2 } } },
                { { .bdi = "7:0", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_FINE, 1000001 } } },
                { { .bdi = "7:0", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_SELF, 16777216 } } }, /* drifts */
                { { .bdi = "", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_FINE, 10 } } },          /* device knob */
                { { .bdi = "7:0", .knob = KNOB_DIRTY_BYTES, .original = { KNOB_FORM_RATIO, 20 } } },     /* global knob */
                { { .bdi = "../etc", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_FINE, 10 } } },
                { { .bdi = ".x", .knob = KNOB_MAX_BYTES, .original = { KNOB_FORM_FINE, 10 } } },
        };
        for (size_t i = 0; i < ELEMENTSOF(wrong); i++) {
                _cleanup_free_ char *text = valid_with(&wrong[i].e, 1);
                CHECK(text != NULL);
                CHECK(text && parse(text, &why) == -EBADMSG);
                printf("#   %zu: %s\n", i, why ? why : "(accepted)");
                free(why);
                why = NULL;
        }

        printf("# the same knob twice is refused\n");
        {
                saved_entry twice[2] = { sample_entries[0], sample_entries[0] };
                _cleanup_free_ char *text = valid_with(twice, 2);
                CHECK(text && parse(text, NULL) == -EBADMSG);
        }
        unlink(path);
}

/* body (everything before the checksum line) with its right checksum line appended, or a wrong one. */
static char *signed_body(const char *body, size_t size, bool right, size_t *ret_size) {
        char line[64];
        char *buf;

        saved_file_checksum_line(body, size, line, sizeof line);
        if (!right)
                line[strlen(line) - 2] ^= 0x01;         /* the last hex digit: 0-9 and a-f stay hex */
        buf = malloc(size + strlen(line) + 1);
        if (!buf)
                abort();
        memcpy(buf, body, size);
        memcpy(buf + size, line, strlen(line) + 1);
        *ret_size = size + strlen(line);
        return buf;
}

/* No byte of a refusal reason may reach a terminal as a control: the reason is shown by
 * `wbtuned --inspect-saved` and put in the journal. */
static bool has_controls(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; p && *p; p++)
                if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
                        return true;
        return false;
}

static void test_reason_escaped(void) {
        static const char *const bodies[] = {
                /* an OSC that sets the terminal's title, ended by BEL, in the file word of a setting */
                "wbtuned-saved 2\nglobal dirty_bytes original \033]0;owned\007 20\n",
                /* a colour, an OSC 8 link ended by ST, a C1 CSI (U+009B) and a CR that would overwrite the line */
                "wbtuned-saved 2\nglobal dirty_bytes original dirty_ratio 20 \033[31mred\033]8;;http://x\033\\ \302\2332J\r 1\n",
        };

        printf("# a refused line's words are escaped in the reason (ESC, OSC, C1, CR)\n");
        for (size_t i = 0; i < ELEMENTSOF(bodies); i++) {
                _cleanup_free_ saved_entry *v = NULL;
                _cleanup_free_ char *why = NULL, *text = NULL;
                size_t n = 0, size = 0;

                text = signed_body(bodies[i], strlen(bodies[i]), true, &size);
                CHECK(saved_file_parse(text, size, PAGE, &v, &n, &why) == -EBADMSG);
                CHECK(why != NULL);
                printf("#   %zu: %s\n", i, why && !has_controls(why) ? why : "(has controls)");
                CHECK(why && !has_controls(why));
                CHECK(why && strncmp(why, "line 2: ", 8) == 0);
                CHECK(why && strstr(why, "\\x1b"));
        }
}

/* "bdi xNNNNNN min_bytes original min_ratio 0" lines: 42 bytes each, 180,000 of them under the 8 MiB bound. */
static char *many_lines(size_t n_lines, size_t repeat_line, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = NULL;
        char *buf = NULL;
        size_t size = 0;

        f = open_memstream(&buf, &size);
        if (!f)
                abort();
        fputs("wbtuned-saved 2\n", f);
        for (size_t line = 2; line < n_lines; line++)
                /* line repeat_line lists line 2's device again */
                fprintf(f, "bdi x%06zu min_bytes original min_ratio 0\n", line == repeat_line ? 2 : line);
        fclose(TAKE_PTR(f));
        *ret_size = size;
        return buf;
}

static void test_large(void) {
        const size_t n_lines = 180000;
        _cleanup_free_ char *body = NULL, *wrong = NULL, *right = NULL, *distinct_body = NULL, *distinct = NULL;
        size_t body_size = 0, size = 0;

        printf("# %zu lines, a wrong checksum and a repeat on line 4: refused for the checksum\n", n_lines);
        body = many_lines(n_lines, 4, &body_size);
        wrong = signed_body(body, body_size, false, &size);
        CHECK(size <= SAVED_FILE_MAX_BYTES);
        {
                _cleanup_free_ saved_entry *v = NULL;
                _cleanup_free_ char *why = NULL;
                size_t n = 0;
                uint64_t t = now_usec();

                CHECK(saved_file_parse(wrong, size, PAGE, &v, &n, &why) == -EBADMSG);
                printf("#   %s (%.3f s)\n", why ? why : "(no reason)", (double) (now_usec() - t) / 1e6);
                CHECK(why && strstr(why, "checksum mismatch"));
        }

        printf("# the same with the right checksum: the repeat is named by its line\n");
        right = signed_body(body, body_size, true, &size);
        {
                _cleanup_free_ saved_entry *v = NULL;
                _cleanup_free_ char *why = NULL;
                size_t n = 0;

                CHECK(saved_file_parse(right, size, PAGE, &v, &n, &why) == -EBADMSG);
                printf("#   %s\n", why ? why : "(no reason)");
                CHECK_STREQ(why, "line 4: x000002 min_bytes listed twice");
        }

        printf("# %zu distinct lines with the right checksum: every entry, in the file's order\n", n_lines);
        distinct_body = many_lines(n_lines, 0, &body_size);
        distinct = signed_body(distinct_body, body_size, true, &size);
        {
                _cleanup_free_ saved_entry *v = NULL;
                _cleanup_free_ char *why = NULL;
                size_t n = 0;
                uint64_t t = now_usec();

                CHECK(saved_file_parse(distinct, size, PAGE, &v, &n, &why) == 0);
                printf("#   %s (%.3f s)\n", why ? why : "accepted", (double) (now_usec() - t) / 1e6);
                CHECK_EQ_U64(n, n_lines - 2);
                CHECK(v && n == n_lines - 2 && strcmp(v[0].bdi, "x000002") == 0 &&
                      strcmp(v[n - 1].bdi, "x179999") == 0);
        }
}

static void test_unsafe_files(void) {
        _cleanup_free_ saved_entry *v = NULL;
        char other[320], *why = NULL;
        size_t n = 0;
        int fd;

        printf("# a symlink, a FIFO, a directory, a group- or world-writable file: refused, nothing read\n");
        CHECK(saved_file_write(path, sample_entries, 1) == 0);
        snprintf(other, sizeof other, "%s/link", dir);
        CHECK(symlink(path, other) == 0);
        CHECK(saved_file_read(other, PAGE, &v, &n, &why) == -EPERM);
        printf("#   symlink: %s\n", why ? why : "");
        free(why);
        why = NULL;

        snprintf(other, sizeof other, "%s/fifo", dir);
        CHECK(mkfifo(other, 0600) == 0);
        /* O_NONBLOCK: no writer must not hang the start */
        CHECK(saved_file_read(other, PAGE, &v, &n, &why) == -EPERM);
        printf("#   fifo: %s\n", why ? why : "");
        free(why);
        why = NULL;

        CHECK(saved_file_read(dir, PAGE, &v, &n, &why) == -EPERM);
        free(why);
        why = NULL;

        CHECK(chmod(path, 0666) == 0);
        CHECK(saved_file_read(path, PAGE, &v, &n, &why) == -EPERM);
        printf("#   0666: %s\n", why ? why : "");
        free(why);
        why = NULL;
        CHECK(chmod(path, 0620) == 0);
        CHECK(saved_file_read(path, PAGE, &v, &n, NULL) == -EPERM);
        CHECK(chmod(path, 0644) == 0);
        CHECK(saved_file_read(path, PAGE, &v, &n, NULL) == 0);
        free(v);
        v = NULL;

        if (geteuid() == 0) {
                CHECK(chown(path, 65534, 65534) == 0);
                CHECK(saved_file_read(path, PAGE, &v, &n, &why) == -EPERM);
                printf("#   owned by nobody: %s\n", why ? why : "");
                free(why);
                why = NULL;
        }

        printf("# a file larger than the bound is refused without reading it all\n");
        unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(ftruncate(fd, SAVED_FILE_MAX_BYTES + 1) == 0);
                close(fd);
        }
        CHECK(saved_file_read(path, PAGE, &v, &n, NULL) == -EBADMSG);
        unlink(path);

        printf("# the state directory: made when missing, refused when others can write it\n");
        snprintf(other, sizeof other, "%s/state", dir);
        umask(077);
        CHECK(saved_dir_check(other, NULL) == 0);
        {
                struct stat st;
                CHECK(stat(other, &st) == 0 && (st.st_mode & 07777) == 0755);
        }
        umask(022);
        CHECK(chmod(other, 0777) == 0);
        CHECK(saved_dir_check(other, &why) == -EPERM);
        printf("#   0777: %s\n", why ? why : "");
        free(why);
        why = NULL;
        CHECK(chmod(other, 01777) == 0);
        CHECK(saved_dir_check(other, NULL) == -EPERM);
        snprintf(other, sizeof other, "%s/link", dir);
        CHECK(saved_dir_check(other, NULL) < 0);
}

int main(void) {
        log_set_max_level(LOG_DEBUG);
        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof path, "%s/saved", dir);
        test_round_trip();
        test_refused_content();
        test_reason_escaped();
        test_large();
        test_unsafe_files();
        {
                char cmd[400];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                if (system(cmd) != 0)
                        printf("# could not remove %s\n", dir);
        }
        TEST_EXIT();
}
