/* The saved-originals file: versioned, checksummed, written atomically, read only when it is safe. */
#include "savedfile.h"
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

static int fail(char **ret_error, int r, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int fail(char **ret_error, int r, const char *format, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, format);
                if (vasprintf(ret_error, format, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

void saved_file_checksum_line(const char *body, size_t size, char *buf, size_t buf_size) {
        snprintf(buf, buf_size, "%s %s %016" PRIx64 "\n", CHECKSUM_WORD, CHECKSUM_ALGO, fnv1a64(body, size));
}

/* ---- writing ------------------------------------------------------------------------------ */

static void print_setting(FILE *f, const char *word, knob_id k, knob_setting s) {
        fprintf(f, " %s %s %" PRIu64, word, knob_form_file(k, s.form), s.value);
}

/* The entries as the file holds them, checksum line included. */
static char *format_entries(const saved_entry *v, size_t n, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = NULL;
        char *buf = NULL;
        size_t size = 0;
        uint64_t sum;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fputs("# wbtuned: knob values to put back at stop or by the next start. A checksum guards this file;\n"
              "# inspect it with `wbtuned --inspect-saved FILE`.\n", f);
        fprintf(f, "%s %d\n", MAGIC, SAVED_FILE_VERSION);
        for (size_t i = 0; i < n; i++) {
                const saved_entry *e = &v[i];

                if (e->bdi[0])
                        fprintf(f, "bdi %s %s", e->bdi, knob_name(e->knob));
                else
                        fprintf(f, "global %s", knob_name(e->knob));
                print_setting(f, "original", e->knob, e->original);
                if (e->written)
                        print_setting(f, "written", e->knob, e->written_setting);
                if (e->pending)
                        print_setting(f, "pending", e->knob, e->pending_setting);
                fputc('\n', f);
        }
        if (fflush(f) != 0 || ferror(f)) {
                fclose(TAKE_PTR(f));
                free(buf);
                return NULL;
        }
        sum = fnv1a64(buf, size);
        fprintf(f, "%s %s %016" PRIx64 "\n", CHECKSUM_WORD, CHECKSUM_ALGO, sum);
        if (fclose(TAKE_PTR(f)) != 0) {
                free(buf);
                return NULL;
        }
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
                        return fail(why, -EINVAL, "bad device name");
                snprintf(e->bdi, sizeof e->bdi, "%s", w[1]);
                i = 2;
        } else
                return fail(why, -EINVAL, "expected \"global KNOB ...\" or \"bdi NAME KNOB ...\"");
        k = knob_from_name(w[i]);
        if (k < 0)
                return fail(why, -EINVAL, "unknown knob");
        if (knob_get(k)->device != (e->bdi[0] != 0))
                return fail(why, -EINVAL, "%s is not a %s knob", w[i], e->bdi[0] ? "device" : "global");
        e->knob = (knob_id) k;
        i++;
        if (i + 3 > n || strcmp(w[i], "original") != 0)
                return fail(why, -EINVAL, "expected \"original FILE VALUE\"");
        for (; i < n; i += 3) {
                knob_setting s;
                int r;

                if (i + 3 > n)
                        return fail(why, -EINVAL, "\"%s\" needs a file and a value", w[i]);
                r = parse_setting(e->knob, w[i + 1], w[i + 2], page_size, &s);
                if (r < 0)
                        return fail(why, r, "%s %s %s: %s", w[i], w[i + 1], w[i + 2],
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
                        return fail(why, -EINVAL, "unexpected \"%s\"", w[i]);
        }
        return 0;
}

static int entry_cmp(const saved_entry *a, const saved_entry *b) {
        int c = strcmp(a->bdi, b->bdi);
        return c ? c : (int) a->knob - (int) b->knob;
}

int saved_file_parse(const char *buf, size_t size, uint64_t page_size, saved_entry **ret_entries, size_t *ret_n,
                     char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_free_ saved_entry *v = NULL;
        size_t n = 0, allocated = 0, line_no = 0, body_end = 0;
        bool have_version = false, have_checksum = false;
        uint64_t want_sum = 0;

        if (ret_error)
                *ret_error = NULL;
        if (size > SAVED_FILE_MAX_BYTES)
                return fail(ret_error, -EBADMSG, "larger than %u bytes", SAVED_FILE_MAX_BYTES);
        if (memchr(buf, 0, size))
                return fail(ret_error, -EBADMSG, "contains a NUL byte");
        copy = malloc(size + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, size);
        copy[size] = 0;

        for (char *line = copy, *next; line < copy + size; line = next) {
                char *w[12], *save = NULL;
                size_t nw = 0;
                size_t offset = (size_t) (line - copy);

                next = strchr(line, '\n');
                if (!next)
                        return fail(ret_error, -EBADMSG, "line %zu: not terminated (the file is cut short)", line_no + 1);
                *next++ = 0;
                line_no++;
                if (have_checksum)
                        return fail(ret_error, -EBADMSG, "line %zu: text after the checksum line", line_no);
                if (line[0] == '#' || line[0] == 0)
                        continue;
                for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                        if (nw == ELEMENTSOF(w))
                                return fail(ret_error, -EBADMSG, "line %zu: too many words", line_no);
                        w[nw++] = t;
                }
                if (nw == 0)
                        return fail(ret_error, -EBADMSG, "line %zu: blank line of spaces", line_no);
                if (!have_version) {
                        uint64_t version;
                        if (nw != 2 || strcmp(w[0], MAGIC) != 0 || parse_u64(w[1], &version) < 0)
                                return fail(ret_error, -EBADMSG, "line %zu: expected \"%s %d\" first", line_no, MAGIC,
                                            SAVED_FILE_VERSION);
                        if (version != SAVED_FILE_VERSION)
                                return fail(ret_error, -EBADMSG, "version %" PRIu64 ", this wbtuned reads version %d",
                                            version, SAVED_FILE_VERSION);
                        have_version = true;
                        continue;
                }
                if (strcmp(w[0], CHECKSUM_WORD) == 0) {
                        char *end;
                        if (nw != 3 || strcmp(w[1], CHECKSUM_ALGO) != 0 || strlen(w[2]) != 16)
                                return fail(ret_error, -EBADMSG, "line %zu: expected \"%s %s HEX\"", line_no,
                                            CHECKSUM_WORD, CHECKSUM_ALGO);
                        errno = 0;
                        want_sum = strtoull(w[2], &end, 16);
                        if (errno || *end)
                                return fail(ret_error, -EBADMSG, "line %zu: bad checksum digits", line_no);
                        have_checksum = true;
                        body_end = offset;
                        continue;
                }
                if (grow_array((void **) &v, &allocated, n, sizeof *v) < 0)
                        return -ENOMEM;
                {
                        _cleanup_free_ char *why = NULL;
                        int r = parse_entry(w, nw, page_size, &v[n], &why);
                        if (r < 0)
                                return fail(ret_error, -EBADMSG, "line %zu: %s", line_no, why ? why : "bad line");
                }
                for (size_t i = 0; i < n; i++)
                        if (entry_cmp(&v[i], &v[n]) == 0)
                                return fail(ret_error, -EBADMSG, "line %zu: %s %s listed twice", line_no,
                                            v[n].bdi[0] ? v[n].bdi : "global", knob_name(v[n].knob));
                n++;
        }
        if (!have_version)
                return fail(ret_error, -EBADMSG, "no \"%s\" version line", MAGIC);
        if (!have_checksum)
                return fail(ret_error, -EBADMSG, "no checksum line (the file is cut short)");
        if (fnv1a64(buf, body_end) != want_sum)
                return fail(ret_error, -EBADMSG, "checksum mismatch: the file was changed or damaged");
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
                        return fail(ret_error, -EPERM, "is a symbolic link");
                return fail(ret_error, -errno, "cannot be opened: %s", strerror(errno));
        }
        if (fstat(fd, &st) < 0)
                return fail(ret_error, -errno, "cannot be examined: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail(ret_error, -EPERM, "is not a regular file");
        if (st.st_uid != geteuid())
                return fail(ret_error, -EPERM, "is owned by uid %u, not %u", (unsigned) st.st_uid, (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return fail(ret_error, -EPERM, "is writable by others (mode %04o)", (unsigned) (st.st_mode & 07777));
        if ((uint64_t) st.st_size > max_bytes)
                return fail(ret_error, -EBADMSG, "is larger than %zu bytes", max_bytes);
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        while (size < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + size, (size_t) st.st_size - size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail(ret_error, -errno, "cannot be read: %s", strerror(errno));
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
        struct stat st;

        if (ret_error)
                *ret_error = NULL;
        if (lstat(dir, &st) < 0) {
                if (errno != ENOENT)
                        return fail(ret_error, -errno, "%s cannot be examined: %s", dir, strerror(errno));
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return fail(ret_error, -errno, "%s cannot be created: %s", dir, strerror(errno));
                /* the umask may have taken bits away: the mode is ours to say */
                if (chmod(dir, 0755) < 0 || lstat(dir, &st) < 0)
                        return fail(ret_error, -errno, "%s: %s", dir, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode))
                return fail(ret_error, -ENOTDIR, "%s is not a directory", dir);
        if (st.st_uid != geteuid())
                return fail(ret_error, -EPERM, "%s is owned by uid %u, not %u", dir, (unsigned) st.st_uid,
                            (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return fail(ret_error, -EPERM, "%s is writable by others (mode %04o)", dir,
                            (unsigned) (st.st_mode & 07777));
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
