/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The saved-originals file: versioned, checksummed, written atomically, read only when it is safe. */
#include "savedfile.h"
#include "escape.h"
#include "log.h"
#include "util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#define MAGIC "wbtuned-saved"
#define CHECKSUM_WORD "checksum"
#define CHECKSUM_ALGO "fnv1a64"

static uint64_t fnv1a64(const char *buf, size_t size) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < size; i++) {
                h ^= (unsigned char) buf[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

/* The reason is escaped here, once: it quotes the file's words, and it is printed to a terminal
 * (--inspect-saved) and put in the journal. */
void saved_file_checksum_line(const char *body, size_t size, char *buf, size_t buf_size) {
        snprintf(buf, buf_size, "%s %s %016" PRIx64 "\n", CHECKSUM_WORD, CHECKSUM_ALGO, fnv1a64(body, size));
}

/* ---- writing ------------------------------------------------------------------------------ */

static void print_setting(FILE *f, const char *word, knob_id k, knob_setting s) {
        fprintf(f, " %s %s %" PRIu64, word, knob_form_file(k, s.form), s.value);
}

/* The entries as the file holds them, checksum line included. */
static char *format_entries(const saved_entry *v, size_t n, size_t *ret_size) {
        _cleanup_memstream_ memstream ms = {};
        char *buf;
        size_t size;
        uint64_t sum;

        if (!memstream_open(&ms))
                return NULL;
        fputs("# wbtuned: knob values to put back at stop or by the next start. A checksum guards this file;\n"
              "# inspect it with `wbtuned --inspect-saved FILE`.\n", ms.f);
        fprintf(ms.f, "%s %d\n", MAGIC, SAVED_FILE_VERSION);
        for (size_t i = 0; i < n; i++) {
                const saved_entry *e = &v[i];

                if (e->bdi[0])
                        fprintf(ms.f, "bdi %s %s", e->bdi, knob_name(e->knob));
                else
                        fprintf(ms.f, "global %s", knob_name(e->knob));
                print_setting(ms.f, "original", e->knob, e->original);
                if (e->written)
                        print_setting(ms.f, "written", e->knob, e->written_setting);
                if (e->pending)
                        print_setting(ms.f, "pending", e->knob, e->pending_setting);
                fputc('\n', ms.f);
        }
        /* the checksum covers what is written so far */
        if (fflush(ms.f) != 0 || ferror(ms.f))
                return NULL;
        sum = fnv1a64(ms.buf, ms.size);
        fprintf(ms.f, "%s %s %016" PRIx64 "\n", CHECKSUM_WORD, CHECKSUM_ALGO, sum);
        if (memstream_finish(&ms, &buf, &size) < 0)
                return NULL;
        *ret_size = size;
        return buf;
}

static int fsync_directory_of(const char *path) {
        _cleanup_free_ char *copy = xstrdup(path);
        _cleanup_close_ int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

static unsigned long n_writes;

unsigned long saved_file_writes(void) {
        return n_writes;
}

int state_file_replace(const char *path, const char *buf, size_t size) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        size_t done = 0;
        int r;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return log_oom_error();
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create %s: %m", tmp);
        if (fchmod(fd, 0644) < 0) {
                r = -errno;
                goto fail;
        }
        while (done < size) {
                ssize_t k = write(fd, buf + done, size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto fail;
                }
                done += (size_t) k;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0) {
                r = -errno;
                goto fail;
        }
        r = fsync_directory_of(path);
        if (r < 0)
                log_warning_errno(r, "Failed to sync the directory of %s: %m", path);
        return 0;
fail:
        (void) unlink(tmp);
        return log_error_errno(r, "Failed to write %s: %m", path);
}

int saved_file_write(const char *path, const saved_entry *entries, size_t n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        if (n == 0) {
                if (unlink(path) < 0 && errno != ENOENT)
                        return log_error_errno(errno, "Failed to remove %s: %m", path);
                n_writes++;
                return 0;
        }
        buf = format_entries(entries, n, &size);
        if (!buf)
                return log_oom_error();
        r = state_file_replace(path, buf, size);
        if (r < 0)
                return r;
        n_writes++;
        return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

static bool valid_bdi_name(const char *s) {
        size_t len = strlen(s);

        if (len == 0 || len >= sizeof ((saved_entry *) NULL)->bdi || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (*p == '/' || *p <= ' ' || *p > '~')
                        return false;
        return true;
}

/* "FILE VALUE" of a knob into a setting; the file must be one of the knob's, the value in its range. */
static int parse_setting(knob_id k, const char *file, const char *value, uint64_t page_size, knob_setting *ret) {
        uint64_t v;
        int f = knob_form_from_file(k, file);

        if (f < 0)
                return -EINVAL;
        /* a share of the limit is kept as a ratio; its bytes view drifts with the limit */
        if (knob_get(k)->kind == KNOB_KIND_OF_LIMIT && f == KNOB_FORM_SELF)
                return -EINVAL;
        if (parse_u64(value, &v) < 0)
                return -EINVAL;
        if (knob_check_value(k, (knob_form) f, v, page_size) < 0)
                return -ERANGE;
        *ret = (knob_setting) { (knob_form) f, v };
        return 0;
}

/* One entry line, split into words. */
static int parse_entry(char **w, size_t n, uint64_t page_size, saved_entry *e, char **why) {
        size_t i = 0;
        int k;

        *e = (saved_entry) {};
        if (n >= 2 && strcmp(w[0], "global") == 0)
                i = 1;
        else if (n >= 3 && strcmp(w[0], "bdi") == 0) {
                if (!valid_bdi_name(w[1]))
                        return error_printf(why, -EINVAL, "bad device name");
                snprintf(e->bdi, sizeof e->bdi, "%s", w[1]);
                i = 2;
        } else
                return error_printf(why, -EINVAL, "expected \"global KNOB ...\" or \"bdi NAME KNOB ...\"");
        k = knob_from_name(w[i]);
        if (k < 0)
                return error_printf(why, -EINVAL, "unknown knob");
        if (knob_get(k)->device != (e->bdi[0] != 0))
                return error_printf(why, -EINVAL, "%s is not a %s knob", w[i], e->bdi[0] ? "device" : "global");
        e->knob = (knob_id) k;
        i++;
        if (i + 3 > n || strcmp(w[i], "original") != 0)
                return error_printf(why, -EINVAL, "expected \"original FILE VALUE\"");
        for (; i < n; i += 3) {
                knob_setting s;
                int r;

                if (i + 3 > n)
                        return error_printf(why, -EINVAL, "\"%s\" needs a file and a value", w[i]);
                r = parse_setting(e->knob, w[i + 1], w[i + 2], page_size, &s);
                if (r < 0)
                        return error_printf(why, r, "%s %s %s: %s", w[i], w[i + 1], w[i + 2],
                                    r == -ERANGE ? "value out of the kernel's range" : "not a file of this knob");
                if (strcmp(w[i], "original") == 0 && i == (e->bdi[0] ? 3u : 2u))
                        e->original = s;
                else if (strcmp(w[i], "written") == 0 && !e->written && !e->pending) {
                        e->written = true;
                        e->written_setting = s;
                } else if (strcmp(w[i], "pending") == 0 && !e->pending) {
                        e->pending = true;
                        e->pending_setting = s;
                } else
                        return error_printf(why, -EINVAL, "unexpected \"%s\"", w[i]);
        }
        return 0;
}

static int entry_cmp(const saved_entry *a, const saved_entry *b) {
        int c = strcmp(a->bdi, b->bdi);
        return c ? c : (int) a->knob - (int) b->knob;
}

/* Entries by device and knob, then by their place in the file. */
static int entry_ptr_cmp(const void *a, const void *b) {
        const saved_entry *x = *(const saved_entry *const *) a, *y = *(const saved_entry *const *) b;
        int c = entry_cmp(x, y);
        return c ? c : (x > y) - (x < y);
}

/* The line of the first entry that repeats an earlier one's device and knob, 0 if none: sorted, so a
 * file of many lines costs n log n, not n^2. */
static size_t find_repeat(const saved_entry *v, const size_t *line_of, size_t n, size_t *ret_index) {
        _cleanup_free_ const saved_entry **sorted = NULL;
        size_t line = 0;

        if (n < 2)
                return 0;
        sorted = malloc(n * sizeof *sorted);
        if (!sorted)
                return SIZE_MAX;
        for (size_t i = 0; i < n; i++)
                sorted[i] = &v[i];
        qsort(sorted, n, sizeof *sorted, entry_ptr_cmp);
        for (size_t i = 1; i < n; i++) {
                size_t k = (size_t) (sorted[i] - v);

                /* the second of each run of equal entries is the earliest repeat of that one */
                if (entry_cmp(sorted[i - 1], sorted[i]) == 0 && (i < 2 || entry_cmp(sorted[i - 2], sorted[i]) != 0) &&
                    (line == 0 || line_of[k] < line)) {
                        line = line_of[k];
                        *ret_index = k;
                }
        }
        return line;
}

/* The last line, "checksum fnv1a64 <16 hex>", at buf[start..end) (no newline): the sum it states.
 * buf need not be NUL-terminated: only lengths and memcmp. */
static bool parse_checksum_line(const char *buf, size_t start, size_t end, uint64_t *ret_sum) {
        static const char prefix[] = CHECKSUM_WORD " " CHECKSUM_ALGO " ";
        const size_t n_prefix = sizeof prefix - 1;
        uint64_t sum = 0;

        if (end - start != n_prefix + 16 || memcmp(buf + start, prefix, n_prefix) != 0)
                return false;
        for (size_t i = start + n_prefix; i < end; i++) {
                char c = buf[i];
                unsigned d = c >= '0' && c <= '9' ? (unsigned) (c - '0') :
                             c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10) :
                             c >= 'A' && c <= 'F' ? (unsigned) (c - 'A' + 10) : 16;
                if (d == 16)
                        return false;
                sum = sum << 4 | d;
        }
        *ret_sum = sum;
        return true;
}

int saved_file_parse(const char *buf, size_t size, uint64_t page_size, saved_entry **ret_entries, size_t *ret_n,
                     char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_free_ saved_entry *v = NULL;
        _cleanup_free_ size_t *line_of = NULL;
        size_t n = 0, allocated = 0, allocated_lines = 0, line_no = 0, body_end = 0, n_newlines = 0, repeat, k = 0;
        bool have_version = false, nul = false;
        uint64_t want_sum = 0, sum = 0xcbf29ce484222325ULL;

        if (ret_error)
                *ret_error = NULL;
        /* first the bound and the checksum, in one pass: a damaged file of many lines is refused
         * before any of them is parsed */
        if (size > SAVED_FILE_MAX_BYTES)
                return error_printf(ret_error, -EBADMSG, "larger than %u bytes", SAVED_FILE_MAX_BYTES);
        if (size == 0)
                return error_printf(ret_error, -EBADMSG, "no \"%s\" version line (the file is empty)", MAGIC);
        if (buf[size - 1] == '\n') {
                const char *nl = size > 1 ? memrchr(buf, '\n', size - 1) : NULL;
                body_end = nl ? (size_t) (nl - buf) + 1 : 0;
        } else
                body_end = size;
        for (size_t i = 0; i < size; i++) {
                unsigned char c = (unsigned char) buf[i];

                if (i < body_end) {
                        sum ^= c;
                        sum *= 0x100000001b3ULL;
                }
                n_newlines += c == '\n';
                nul |= c == 0;
        }
        if (nul)
                return error_printf(ret_error, -EBADMSG, "contains a NUL byte");
        if (buf[size - 1] != '\n')
                return error_printf(ret_error, -EBADMSG, "line %zu: not terminated (the file is cut short)", n_newlines + 1);
        if (!parse_checksum_line(buf, body_end, size - 1, &want_sum)) {
                if (size - 1 - body_end >= strlen(CHECKSUM_WORD) && memcmp(buf + body_end, CHECKSUM_WORD, strlen(CHECKSUM_WORD)) == 0)
                        return error_printf(ret_error, -EBADMSG, "line %zu: expected \"%s %s HEX\"", n_newlines, CHECKSUM_WORD,
                                    CHECKSUM_ALGO);
                return error_printf(ret_error, -EBADMSG, "no checksum line (the file is cut short)");
        }
        if (sum != want_sum)
                return error_printf(ret_error, -EBADMSG, "checksum mismatch: the file was changed or damaged");

        /* then the lines before the checksum line */
        copy = malloc(body_end + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, body_end);
        copy[body_end] = 0;
        for (char *line = copy, *next; line < copy + body_end; line = next) {
                char *w[12], *save = NULL;
                size_t nw = 0;

                next = strchr(line, '\n');   /* the body ends in one: the checksum line follows */
                *next++ = 0;
                line_no++;
                if (line[0] == '#' || line[0] == 0)
                        continue;
                for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                        if (nw == ELEMENTSOF(w))
                                return error_printf(ret_error, -EBADMSG, "line %zu: too many words", line_no);
                        w[nw++] = t;
                }
                if (nw == 0)
                        return error_printf(ret_error, -EBADMSG, "line %zu: blank line of spaces", line_no);
                if (!have_version) {
                        uint64_t version;
                        if (nw != 2 || strcmp(w[0], MAGIC) != 0 || parse_u64(w[1], &version) < 0)
                                return error_printf(ret_error, -EBADMSG, "line %zu: expected \"%s %d\" first", line_no, MAGIC,
                                            SAVED_FILE_VERSION);
                        if (version != SAVED_FILE_VERSION)
                                return error_printf(ret_error, -EBADMSG, "version %" PRIu64 ", this wbtuned reads version %d",
                                            version, SAVED_FILE_VERSION);
                        have_version = true;
                        continue;
                }
                if (strcmp(w[0], CHECKSUM_WORD) == 0)
                        return error_printf(ret_error, -EBADMSG, "line %zu: text after the checksum line", line_no);
                if (grow_array((void **) &v, &allocated, n, sizeof *v) < 0 ||
                    grow_array((void **) &line_of, &allocated_lines, n, sizeof *line_of) < 0)
                        return -ENOMEM;
                {
                        _cleanup_free_ char *why = NULL;
                        int r = parse_entry(w, nw, page_size, &v[n], &why);
                        if (r < 0)
                                return error_printf(ret_error, -EBADMSG, "line %zu: %s", line_no, why ? why : "bad line");
                }
                line_of[n++] = line_no;
        }
        if (!have_version)
                return error_printf(ret_error, -EBADMSG, "no \"%s\" version line", MAGIC);
        repeat = find_repeat(v, line_of, n, &k);
        if (repeat == SIZE_MAX)
                return -ENOMEM;
        if (repeat > 0)
                return error_printf(ret_error, -EBADMSG, "line %zu: %s %s listed twice", repeat, v[k].bdi[0] ? v[k].bdi : "global",
                            knob_name(v[k].knob));
        *ret_entries = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int state_file_load(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_size, char **ret_error) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        struct stat st;

        if (ret_error)
                *ret_error = NULL;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                if (errno == ELOOP)
                        return error_printf(ret_error, -EPERM, "is a symbolic link");
                return error_printf(ret_error, -errno, "cannot be opened: %s", strerror(errno));
        }
        if (fstat(fd, &st) < 0)
                return error_printf(ret_error, -errno, "cannot be examined: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return error_printf(ret_error, -EPERM, "is not a regular file");
        if (st.st_uid != geteuid())
                return error_printf(ret_error, -EPERM, "is owned by uid %u, not %u", (unsigned) st.st_uid, (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return error_printf(ret_error, -EPERM, "is writable by others (mode %04o)", (unsigned) (st.st_mode & 07777));
        if ((uint64_t) st.st_size > max_bytes)
                return error_printf(ret_error, -EBADMSG, "is larger than %zu bytes", max_bytes);
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        while (size < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + size, (size_t) st.st_size - size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_printf(ret_error, -errno, "cannot be read: %s", strerror(errno));
                }
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        *ret_buf = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

int saved_file_read(const char *path, uint64_t page_size, saved_entry **ret_entries, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        r = state_file_load(path, SAVED_FILE_MAX_BYTES, &buf, &size, ret_error);
        if (r < 0)
                return r;
        return saved_file_parse(buf, size, page_size, ret_entries, ret_n, ret_error);
}

int saved_dir_check(const char *dir, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int fd = -1;

        if (ret_error)
                *ret_error = NULL;
        fd = dir_open_private(dir, &why);
        if (fd == -ENOENT) {
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return error_printf(ret_error, -errno, "%s cannot be created: %s", dir, strerror(errno));
                /* the umask may have taken bits away: the mode is ours to say */
                if (chmod(dir, 0755) < 0)
                        return error_printf(ret_error, -errno, "%s: %s", dir, strerror(errno));
                free(why);
                fd = dir_open_private(dir, &why);
        }
        if (fd < 0)
                return why ? error_printf(ret_error, fd, "%s", why) : fd;
        return 0;
}

void saved_entries_print(const saved_entry *v, size_t n, FILE *out) {
        for (size_t i = 0; i < n; i++) {
                char a[64], b[64], c[64];
                const saved_entry *e = &v[i];

                fprintf(out, "%s %s: original %s", e->bdi[0] ? e->bdi : "global", knob_name(e->knob),
                        knob_setting_to_string(e->knob, e->original, a, sizeof a));
                if (e->written)
                        fprintf(out, ", written %s", knob_setting_to_string(e->knob, e->written_setting, b, sizeof b));
                if (e->pending)
                        fprintf(out, ", about to write %s", knob_setting_to_string(e->knob, e->pending_setting, c, sizeof c));
                fputc('\n', out);
        }
}
