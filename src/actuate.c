/* Actuation: saves originals before the first write, writes knobs in a kernel-safe order, restores them. */
#include "actuate.h"
#include "protocol.h"
#include "log.h"
#include "util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#define PPM_FULL 1000000ULL
/* Headroom left under 100 % when the sum of min ratios must be shrunk (rounding, limit drift). */
#define MIN_SUM_MARGIN_PPM (PPM_FULL / 200)

/* The ratio partner of a global *_bytes knob (NULL for the centisecs ones). */
static const char *const knob_ratio_files[_KNOB_GLOBAL_MAX] = {
        [KNOB_DIRTY_BYTES] = "dirty_ratio",
        [KNOB_DIRTY_BACKGROUND_BYTES] = "dirty_background_ratio",
};

typedef struct backoff {
        bool active;
        int error;
        uint64_t since_usec;
        uint64_t value;
} backoff;

typedef struct gsaved {
        bool saved;
        bool have_bytes, have_ratio;   /* which members of a pair are known (parsed files may lack one) */
        uint64_t bytes;                /* the *_bytes member, or the value of a centisecs knob */
        uint32_t ratio;                /* the *_ratio member */
} gsaved;

typedef struct adev {
        char bdi[64];
        bool saved;
        bool fine;                     /* originals are *_ratio_fine (ppm); else min_ratio/max_ratio (%) */
        bool have_min, have_max, have_strict;
        uint64_t orig_min_ppm, orig_max_ppm;
        uint32_t orig_strict;
        bool changed[KNOB_DEVICE_COUNT];
        backoff bo[KNOB_DEVICE_COUNT];
        bool warned_missing;           /* logged that this kernel lacks the bytes/strict files */
} adev;

struct actuator {
        char *root;
        char *saved_path;
        knob_io io;
        uint64_t page_size;
        uint64_t now_usec;
        gsaved g[_KNOB_GLOBAL_MAX];
        bool gchanged[_KNOB_GLOBAL_MAX];
        backoff gbo[_KNOB_GLOBAL_MAX];
        adev *devices;
        size_t n_devices;
        bool min_scaled;               /* the sum-of-min shrink is in effect (logged once) */
};

/* One knob write, planned then run. */
typedef struct op {
        const char *bdi;               /* NULL: global */
        knob_id knob;
        const char *file;              /* file actually written: "max_bytes", "max_ratio_fine", "dirty_ratio" */
        uint64_t value;
        bool bytes;                    /* per-device bytes: reads back through the ratio */
        bool restore;                  /* writing the saved original */
        bool needs_max;                /* strict_limit=1: only if the max write before it worked */
        char old_text[48], new_text[48];
        const char *reason;
} op;

/* Current per-device knob values as read from sysfs. */
typedef struct devcur {
        bool fine, have_bytes, have_strict;
        uint64_t min_ppm, max_ppm;
        uint64_t min_bytes, max_bytes;
        uint32_t strict;
} devcur;

/* ---- file access ---------------------------------------------------------------------- */

static int real_read(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t n = 0;

        if (size < 2)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = 0;
        return 0;
}

static int io_read(const actuator *a, const char *path, char *buf, size_t size) {
        if (a->io.read)
                return a->io.read(a->io.userdata, path, buf, size);
        return real_read(path, buf, size);
}

static int io_write(const actuator *a, const char *path, const char *value) {
        if (a->io.write)
                return a->io.write(a->io.userdata, path, value);
        return write_string_file(path, value);
}

static void knob_path(const actuator *a, const char *bdi, const char *file, char *buf, size_t size) {
        if (bdi)
                snprintf(buf, size, "%s/sys/class/bdi/%s/%s", a->root, bdi, file);
        else
                snprintf(buf, size, "%s/proc/sys/vm/%s", a->root, file);
}

static int read_knob(const actuator *a, const char *bdi, const char *file, uint64_t *ret) {
        char path[PATH_MAX], buf[64], *nl;
        int r;

        knob_path(a, bdi, file, path, sizeof path);
        r = io_read(a, path, buf, sizeof buf);
        if (r < 0)
                return r;
        nl = strchr(buf, '\n');
        if (nl)
                *nl = 0;
        return parse_u64(buf, ret);
}

static bool is_gone(int r) {
        return r == -ENOENT || r == -ENODEV;
}

/* The kernel's current dirty threshold in pages, from /proc/vmstat. */
static int read_thresholds(const actuator *a, uint64_t *ret_dirty_pages, uint64_t *ret_bg_pages) {
        char path[PATH_MAX];
        _cleanup_free_ char *buf = NULL;
        bool got_dirty = false, got_bg = false;
        int r;

        snprintf(path, sizeof path, "%s/proc/vmstat", a->root);
        buf = malloc(65536);
        if (!buf)
                return -ENOMEM;
        r = io_read(a, path, buf, 65536);
        if (r < 0)
                return r;
        for (char *line = buf, *next; line && *line; line = next) {
                uint64_t v;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (strncmp(line, "nr_dirty_threshold ", 19) == 0 && parse_u64(line + 19, &v) >= 0) {
                        *ret_dirty_pages = v;
                        got_dirty = true;
                } else if (strncmp(line, "nr_dirty_background_threshold ", 30) == 0 &&
                           parse_u64(line + 30, &v) >= 0) {
                        if (ret_bg_pages)
                                *ret_bg_pages = v;
                        got_bg = true;
                }
        }
        return got_dirty && got_bg ? 0 : -ENODATA;
}

/* Read a device's knobs. -ENOENT/-ENODEV if the device is gone. */
static int read_devcur(const actuator *a, const char *bdi, devcur *c) {
        uint64_t v;
        int r;

        *c = (devcur) {};
        r = read_knob(a, bdi, "min_ratio_fine", &c->min_ppm);
        if (r >= 0) {
                c->fine = true;
                r = read_knob(a, bdi, "max_ratio_fine", &c->max_ppm);
                if (r < 0)
                        return r;
        } else if (is_gone(r)) {
                /* older kernel, or the device is gone: min_ratio exists on every kernel */
                r = read_knob(a, bdi, "min_ratio", &v);
                if (r < 0)
                        return r;
                c->min_ppm = v * 10000;
                r = read_knob(a, bdi, "max_ratio", &v);
                if (r < 0)
                        return r;
                c->max_ppm = v * 10000;
        } else
                return r;
        c->have_bytes = read_knob(a, bdi, "min_bytes", &c->min_bytes) >= 0 &&
                        read_knob(a, bdi, "max_bytes", &c->max_bytes) >= 0;
        r = read_knob(a, bdi, "strict_limit", &v);
        if (r >= 0) {
                c->have_strict = true;
                c->strict = (uint32_t) v;
        }
        return 0;
}

/* ---- the saved file ------------------------------------------------------------------- */

/* a->devices is sorted by bdi name (strcmp): a tick looks every device up, so search, not scan.
 * Index of bdi, or where it would go with *found false. */
static int dev_cmp(const void *bdi, const void *elem) {
        return strcmp(bdi, ((const adev *) elem)->bdi);
}

static size_t dev_index(const actuator *a, const char *bdi, bool *found) {
        return search_sorted(a->devices, a->n_devices, sizeof *a->devices, bdi, dev_cmp, found);
}

static adev *find_dev(const actuator *a, const char *bdi) {
        bool found;
        size_t i = dev_index(a, bdi, &found);

        return found ? &a->devices[i] : NULL;
}

/* Adding a device moves the ones after it: pointers from find_dev() do not survive get_dev(). */
static adev *get_dev(actuator *a, const char *bdi) {
        bool found;
        size_t i = dev_index(a, bdi, &found);
        adev *n;

        if (found)
                return &a->devices[i];
        n = realloc(a->devices, (a->n_devices + 1) * sizeof *n);
        if (!n)
                return NULL;
        a->devices = n;
        memmove(&a->devices[i + 1], &a->devices[i], (a->n_devices - i) * sizeof *a->devices);
        a->n_devices++;
        a->devices[i] = (adev) {};
        snprintf(a->devices[i].bdi, sizeof a->devices[i].bdi, "%s", bdi);
        return &a->devices[i];
}

static void forget_dev(actuator *a, const char *bdi) {
        bool found;
        size_t i = dev_index(a, bdi, &found);

        if (!found)
                return;
        memmove(&a->devices[i], &a->devices[i + 1], (a->n_devices - i - 1) * sizeof *a->devices);
        a->n_devices--;
}

static bool anything_saved(const actuator *a) {
        for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++)
                if (a->g[k].saved)
                        return true;
        for (size_t i = 0; i < a->n_devices; i++)
                if (a->devices[i].saved)
                        return true;
        return false;
}

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = xstrdup(path);

        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        return 0;
}

/* Write every saved original atomically (tmp in the same dir, fsync, rename); remove the file if none. */
static int saved_write(const actuator *a) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        if (!anything_saved(a)) {
                if (unlink(a->saved_path) < 0 && errno != ENOENT)
                        return log_warning_errno(errno, "Failed to remove %s: %m", a->saved_path);
                return 0;
        }
        r = mkdir_parents(a->saved_path);
        if (r < 0)
                return log_error_errno(r, "Failed to create the directory of %s: %m", a->saved_path);
        if (asprintf(&tmp, "%s.XXXXXX", a->saved_path) < 0)
                return log_oom_error();
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create %s: %m", tmp);
        (void) fchmod(fd, 0644);
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                goto fail;
        }
        fputs("# wbtuned: original knob values, restored at exit or by the next start\n", f);
        for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                const gsaved *g = &a->g[k];
                if (!g->saved)
                        continue;
                if (knob_ratio_files[k]) {
                        if (g->have_bytes)
                                fprintf(f, "global %s %" PRIu64 "\n", knob_name(k), g->bytes);
                        if (g->have_ratio)
                                fprintf(f, "global %s %" PRIu32 "\n", knob_ratio_files[k], g->ratio);
                } else
                        fprintf(f, "global %s %" PRIu64 "\n", knob_name(k), g->bytes);
        }
        for (size_t i = 0; i < a->n_devices; i++) {
                const adev *d = &a->devices[i];
                if (!d->saved)
                        continue;
                if (d->have_min) {
                        if (d->fine)
                                fprintf(f, "bdi %s min_ratio_fine %" PRIu64 "\n", d->bdi, d->orig_min_ppm);
                        else
                                fprintf(f, "bdi %s min_ratio %" PRIu64 "\n", d->bdi, d->orig_min_ppm / 10000);
                }
                if (d->have_max) {
                        if (d->fine)
                                fprintf(f, "bdi %s max_ratio_fine %" PRIu64 "\n", d->bdi, d->orig_max_ppm);
                        else
                                fprintf(f, "bdi %s max_ratio %" PRIu64 "\n", d->bdi, d->orig_max_ppm / 10000);
                }
                if (d->have_strict)
                        fprintf(f, "bdi %s strict_limit %" PRIu32 "\n", d->bdi, d->orig_strict);
        }
        if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0) {
                r = errno ? -errno : -EIO;
                goto fail;
        }
        if (rename(tmp, a->saved_path) < 0) {
                r = -errno;
                goto fail;
        }
        return 0;
fail:
        (void) unlink(tmp);
        return log_error_errno(r, "Failed to write %s: %m", a->saved_path);
}

/* Record a global knob's original (the whole bytes/ratio pair) before its first write. */
static int save_global(actuator *a, knob_id k) {
        gsaved *g = &a->g[k];
        uint64_t v;
        int r;

        if (g->saved)
                return 0;
        r = read_knob(a, NULL, knob_name(k), &g->bytes);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s before changing it: %m", knob_name(k));
        g->have_bytes = true;
        if (knob_ratio_files[k]) {
                r = read_knob(a, NULL, knob_ratio_files[k], &v);
                if (r < 0)
                        return log_error_errno(r, "Failed to read %s before changing it: %m", knob_ratio_files[k]);
                g->ratio = (uint32_t) v;
                g->have_ratio = true;
        }
        g->saved = true;
        r = saved_write(a);
        if (r < 0)
                g->saved = false;
        return r;
}

/* Record a device's min/max ratios and strict_limit before the first write to any of them. */
static int save_dev(actuator *a, adev *d) {
        devcur c;
        int r;

        if (d->saved)
                return 0;
        r = read_devcur(a, d->bdi, &c);
        if (r < 0)
                return r;
        d->fine = c.fine;
        d->orig_min_ppm = c.min_ppm;
        d->orig_max_ppm = c.max_ppm;
        d->have_min = d->have_max = true;
        d->have_strict = c.have_strict;
        d->orig_strict = c.strict;
        d->saved = true;
        r = saved_write(a);
        if (r < 0)
                d->saved = false;
        return r;
}

/* ---- formatting ----------------------------------------------------------------------- */

static const char *fmt_pair(char *buf, size_t size, uint64_t bytes, uint64_t ratio) {
        char b[32];

        if (bytes)
                snprintf(buf, size, "%s", format_bytes(b, sizeof b, bytes));
        else
                snprintf(buf, size, "ratio %" PRIu64, ratio);
        return buf;
}

static const char *fmt_ppm(char *buf, size_t size, uint64_t ppm, bool fine) {
        if (fine)
                snprintf(buf, size, "%" PRIu64 " ppm", ppm);
        else
                snprintf(buf, size, "ratio %" PRIu64, ppm / 10000);
        return buf;
}

bool actuator_original(const actuator *a, const char *bdi, knob_id k, char *buf, size_t size) {
        if (!bdi) {
                const gsaved *g;
                if (k >= _KNOB_GLOBAL_MAX || !a->g[k].saved)
                        return false;
                g = &a->g[k];
                if (knob_ratio_files[k])
                        fmt_pair(buf, size, g->have_bytes ? g->bytes : 0, g->ratio);
                else
                        snprintf(buf, size, "%" PRIu64, g->bytes);
                return true;
        }
        const adev *d = find_dev(a, bdi);
        if (!d || !d->saved)
                return false;
        switch (k) {
        case KNOB_MIN_BYTES:
                if (!d->have_min)
                        return false;
                fmt_ppm(buf, size, d->orig_min_ppm, d->fine);
                return true;
        case KNOB_MAX_BYTES:
                if (!d->have_max)
                        return false;
                fmt_ppm(buf, size, d->orig_max_ppm, d->fine);
                return true;
        case KNOB_STRICT_LIMIT:
                if (!d->have_strict)
                        return false;
                snprintf(buf, size, "%" PRIu32, d->orig_strict);
                return true;
        default:
                return false;
        }
}

bool actuator_original_value(const actuator *a, const char *bdi, knob_id k, const char **ret_file,
                             uint64_t *ret_value, const char **ret_unit) {
        if (!bdi) {
                const gsaved *g;

                if (k >= _KNOB_GLOBAL_MAX || !a->g[k].saved)
                        return false;
                g = &a->g[k];
                if (!knob_ratio_files[k]) {
                        *ret_file = knob_name(k);
                        *ret_value = g->bytes;
                        *ret_unit = PROTOCOL_UNIT_CENTISECS;
                } else if (g->have_bytes && g->bytes > 0) {
                        /* the kernel used the bytes member of the pair */
                        *ret_file = knob_name(k);
                        *ret_value = g->bytes;
                        *ret_unit = PROTOCOL_UNIT_BYTES;
                } else {
                        *ret_file = knob_ratio_files[k];
                        *ret_value = g->ratio;
                        *ret_unit = PROTOCOL_UNIT_PERCENT;
                }
                return true;
        }
        const adev *d = find_dev(a, bdi);
        if (!d || !d->saved)
                return false;
        switch (k) {
        case KNOB_MIN_BYTES:
        case KNOB_MAX_BYTES: {
                bool min = k == KNOB_MIN_BYTES;
                uint64_t ppm = min ? d->orig_min_ppm : d->orig_max_ppm;

                if (!(min ? d->have_min : d->have_max))
                        return false;
                *ret_file = d->fine ? (min ? "min_ratio_fine" : "max_ratio_fine") : (min ? "min_ratio" : "max_ratio");
                *ret_value = d->fine ? ppm : ppm / 10000;
                *ret_unit = d->fine ? PROTOCOL_UNIT_PPM : PROTOCOL_UNIT_PERCENT;
                return true;
        }
        case KNOB_STRICT_LIMIT:
                if (!d->have_strict)
                        return false;
                *ret_file = "strict_limit";
                *ret_value = d->orig_strict;
                *ret_unit = PROTOCOL_UNIT_BOOL;
                return true;
        default:
                return false;
        }
}

bool actuator_dirty(const actuator *a) {
        return anything_saved(a);
}

/* ---- running one write ---------------------------------------------------------------- */

static backoff *op_backoff(actuator *a, const op *o) {
        adev *d;

        if (!o->bdi)
                return &a->gbo[o->knob];
        d = find_dev(a, o->bdi);
        return d ? &d->bo[o->knob - KNOB_DEVICE_FIRST] : NULL;
}

static bool readback_ok(const actuator *a, const op *o, uint64_t got) {
        uint64_t tol;

        if (!o->bytes)
                return got == o->value;
        /* bytes are stored as a ratio of the current limit and read back multiplied by it */
        tol = o->value / 100 + a->page_size;
        return got + tol >= o->value && got <= o->value + tol;
}

static void log_change(const op *o) {
        char f_dev[96], f_knob[64], f_old[80], f_new[80], f_reason[256];
        const char *fields[] = { f_dev, f_knob, f_old, f_new, f_reason, NULL };
        const char *dev = o->bdi ? o->bdi : "global";
        const char *reason = o->reason && *o->reason ? o->reason : (o->restore ? "restoring the original" : "policy");

        snprintf(f_dev, sizeof f_dev, "WBTUNED_DEVICE=%s", dev);
        snprintf(f_knob, sizeof f_knob, "WBTUNED_KNOB=%s", knob_name(o->knob));
        snprintf(f_old, sizeof f_old, "WBTUNED_OLD=%s", o->old_text);
        snprintf(f_new, sizeof f_new, "WBTUNED_NEW=%s", o->new_text);
        snprintf(f_reason, sizeof f_reason, "WBTUNED_REASON=%s", reason);
        log_struct_internal(LOG_INFO, fields, "%s %s %s -> %s: %s", dev, knob_name(o->knob),
                            o->old_text, o->new_text, reason);
}

enum { OP_DONE, OP_SKIPPED, OP_GONE };

/* Save if needed, write, read back, log. OP_DONE/OP_SKIPPED (backed off)/OP_GONE (device vanished) or -errno. */
static int op_run(actuator *a, const op *o, bool use_backoff) {
        char path[PATH_MAX], value[32];
        backoff *bo;
        adev *d = NULL;
        uint64_t got;
        int r;

        if (o->bdi) {
                d = get_dev(a, o->bdi);
                if (!d)
                        return log_oom_error();
        }
        bo = op_backoff(a, o);
        if (use_backoff && bo->active && bo->value == o->value &&
            a->now_usec < bo->since_usec + ACTUATOR_BACKOFF_USEC) {
                log_debug("%s %s: backing off after %s", o->bdi ? o->bdi : "global", o->file, strerror(-bo->error));
                return OP_SKIPPED;
        }

        r = o->bdi ? save_dev(a, d) : save_global(a, o->knob);
        if (r < 0)
                return is_gone(r) && o->bdi ? OP_GONE : r;

        knob_path(a, o->bdi, o->file, path, sizeof path);
        snprintf(value, sizeof value, "%" PRIu64, o->value);
        r = io_write(a, path, value);
        if (r < 0) {
                if (o->bdi && is_gone(r))
                        return OP_GONE;
                if (!bo->active || bo->value != o->value || bo->error != r)
                        log_warning_errno(r, "Failed to write %s to %s, backing off: %m", value, path);
                else
                        log_debug_errno(r, "Failed to write %s to %s again: %m", value, path);
                *bo = (backoff) { .active = true, .error = r, .since_usec = a->now_usec, .value = o->value };
                return r;
        }
        *bo = (backoff) {};

        r = read_knob(a, o->bdi, o->file, &got);
        if (r < 0)
                log_warning_errno(r, "Failed to read back %s: %m", path);
        else if (!readback_ok(a, o, got))
                log_warning("Wrote %s to %s but it reads back as %" PRIu64 ".", value, path, got);

        if (o->bdi)
                d->changed[o->knob - KNOB_DEVICE_FIRST] = !o->restore;
        else
                a->gchanged[o->knob] = !o->restore;
        log_change(o);
        return OP_DONE;
}

/* Run a list of writes in order; strict_limit=1 is dropped when the max write before it failed. */
static int ops_run(actuator *a, const op *ops, size_t n, bool use_backoff, bool *ret_gone) {
        bool max_failed = false;
        int first = 0;

        *ret_gone = false;
        for (size_t i = 0; i < n; i++) {
                int r;

                if (ops[i].needs_max && max_failed) {
                        log_debug("%s: not setting strict_limit, max_bytes was not set", ops[i].bdi);
                        continue;
                }
                r = op_run(a, &ops[i], use_backoff);
                if (r == OP_GONE) {
                        *ret_gone = true;
                        return first;
                }
                if ((r < 0 || r == OP_SKIPPED) && ops[i].knob == KNOB_MAX_BYTES)
                        max_failed = true;
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

static void print_ops(const actuator *a, const op *ops, size_t n, FILE *out) {
        for (size_t i = 0; i < n; i++) {
                char path[PATH_MAX];
                const op *o = &ops[i];
                const char *reason = o->reason && *o->reason ? o->reason : (o->restore ? "restoring the original" : "policy");

                knob_path(a, o->bdi, o->file, path, sizeof path);
                fprintf(out, "write %s %" PRIu64 "\t# %s %s %s -> %s: %s\n", path, o->value,
                        o->bdi ? o->bdi : "global", knob_name(o->knob), o->old_text, o->new_text, reason);
        }
}

/* ---- planning ------------------------------------------------------------------------- */

typedef enum tkind { T_NONE, T_VALUE, T_RESTORE } tkind;

typedef struct gtarget {
        tkind kind;
        uint64_t value;
        const char *reason;
} gtarget;

typedef struct vmcur {
        uint64_t bytes[_KNOB_GLOBAL_MAX];   /* *_bytes or the centisecs value */
        uint64_t ratio[_KNOB_GLOBAL_MAX];
        uint64_t thresh_pages, bg_pages;
} vmcur;

static int read_vmcur(const actuator *a, vmcur *c) {
        int r;

        *c = (vmcur) {};
        for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                r = read_knob(a, NULL, knob_name(k), &c->bytes[k]);
                if (r < 0)
                        return log_error_errno(r, "Failed to read %s: %m", knob_name(k));
                if (knob_ratio_files[k]) {
                        r = read_knob(a, NULL, knob_ratio_files[k], &c->ratio[k]);
                        if (r < 0)
                                return log_error_errno(r, "Failed to read %s: %m", knob_ratio_files[k]);
                }
        }
        r = read_thresholds(a, &c->thresh_pages, &c->bg_pages);
        if (r < 0)
                return log_error_errno(r, "Failed to read the dirty thresholds from /proc/vmstat: %m");
        return 0;
}

/* The op for one global target, or false if the knob is already there. */
static bool plan_global(const actuator *a, knob_id k, const gtarget *t, const vmcur *c, op *o) {
        const gsaved *g = &a->g[k];
        bool pair = knob_ratio_files[k] != NULL;

        *o = (op) { .knob = k, .file = knob_name(k), .reason = t->reason };
        if (pair)
                fmt_pair(o->old_text, sizeof o->old_text, c->bytes[k], c->ratio[k]);
        else
                snprintf(o->old_text, sizeof o->old_text, "%" PRIu64, c->bytes[k]);

        if (t->kind == T_VALUE) {
                if (c->bytes[k] == t->value)
                        return false;
                o->value = t->value;
        } else if (t->kind == T_RESTORE) {
                o->restore = true;
                if (pair && !(g->have_bytes && g->bytes) && !g->have_ratio)
                        return false;   /* only a zero *_bytes known: nothing writable */
                if (pair && !(g->have_bytes && g->bytes)) {
                        /* writing 0 to *_bytes is EINVAL: go back to ratio mode by writing the ratio */
                        if (c->bytes[k] == 0 && c->ratio[k] == g->ratio)
                                return false;
                        o->file = knob_ratio_files[k];
                        o->value = g->ratio;
                } else {
                        if (c->bytes[k] == g->bytes)
                                return false;
                        o->value = g->bytes;
                }
        } else
                return false;

        if (pair && o->file == knob_ratio_files[k])
                fmt_pair(o->new_text, sizeof o->new_text, 0, o->value);
        else if (pair)
                fmt_pair(o->new_text, sizeof o->new_text, o->value, 0);
        else
                snprintf(o->new_text, sizeof o->new_text, "%" PRIu64, o->value);
        return true;
}

/* Global writes in order: background first when the new dirty limit is below the current background. */
static size_t plan_globals(const actuator *a, const gtarget t[_KNOB_GLOBAL_MAX], const vmcur *c, op ops[_KNOB_GLOBAL_MAX]) {
        op od, ob;
        bool have_d, have_b;
        size_t n = 0;

        have_d = plan_global(a, KNOB_DIRTY_BYTES, &t[KNOB_DIRTY_BYTES], c, &od);
        have_b = plan_global(a, KNOB_DIRTY_BACKGROUND_BYTES, &t[KNOB_DIRTY_BACKGROUND_BYTES], c, &ob);
        if (have_d && have_b && od.file == knob_name(KNOB_DIRTY_BYTES) &&
            od.value <= c->bg_pages * a->page_size) {
                ops[n++] = ob;
                ops[n++] = od;
        } else {
                if (have_d)
                        ops[n++] = od;
                if (have_b)
                        ops[n++] = ob;
        }
        for (knob_id k = KNOB_DIRTY_WRITEBACK_CENTISECS; k <= KNOB_DIRTY_EXPIRE_CENTISECS; k++)
                if (plan_global(a, k, &t[k], c, &ops[n]))
                        n++;
        return n;
}

/* What the dirty threshold will be after the global writes (for plan; apply reads it back). */
static uint64_t predict_thresh_pages(const actuator *a, const op *ops, size_t n, const vmcur *c, const sample *s) {
        for (size_t i = 0; i < n; i++) {
                if (ops[i].knob != KNOB_DIRTY_BYTES)
                        continue;
                if (ops[i].file == knob_name(KNOB_DIRTY_BYTES))
                        return (ops[i].value + a->page_size - 1) / a->page_size;
                if (c->bytes[KNOB_DIRTY_BYTES] == 0 && c->ratio[KNOB_DIRTY_BYTES] > 0)
                        return c->thresh_pages * ops[i].value / c->ratio[KNOB_DIRTY_BYTES];
                if (s && s->global.mem_available_bytes)
                        return s->global.mem_available_bytes / a->page_size * ops[i].value / 100;
        }
        return c->thresh_pages;
}

/* bytes -> ratio ppm of the limit, as the kernel converts it (whole pages, rounded down) */
static uint64_t bytes_to_ppm(const actuator *a, uint64_t bytes, uint64_t thresh_pages) {
        if (!thresh_pages)
                return PPM_FULL;
        return (bytes / a->page_size) * PPM_FULL / thresh_pages;
}

static uint64_t ppm_to_bytes(const actuator *a, uint64_t ppm, uint64_t thresh_pages) {
        return thresh_pages * a->page_size / PPM_FULL * ppm +
               (thresh_pages * a->page_size % PPM_FULL) * ppm / PPM_FULL;
}

typedef struct dtarget {
        tkind kind;            /* T_VALUE: bytes (or 0/1 for strict), T_RESTORE: the saved original */
        uint64_t value;
        const char *reason;
} dtarget;

/* Target for a device knob: wanted -> value, else changed by us -> original, else none. */
static dtarget device_target(const adev *d, const device_decision *dd, knob_id k) {
        const knob_decision *kd = dd ? &dd->knobs[k - KNOB_DEVICE_FIRST] : NULL;

        if (kd && kd->wanted)
                return (dtarget) { T_VALUE, kd->value, kd->reason };
        if (d && d->saved && (!dd || d->changed[k - KNOB_DEVICE_FIRST]))
                return (dtarget) { T_RESTORE, 0, dd ? "no longer wanted, restoring the original" : "restoring the original" };
        return (dtarget) { T_NONE, 0, NULL };
}

/* Fill one device op for a min/max target; false if nothing to write. */
static bool plan_minmax(const actuator *a, const adev *d, knob_id k, const dtarget *t, const devcur *c,
                        bool force, op *o) {
        bool is_min = k == KNOB_MIN_BYTES;
        uint64_t cur_bytes = is_min ? c->min_bytes : c->max_bytes;
        uint64_t cur_ppm = is_min ? c->min_ppm : c->max_ppm;
        char b[32];

        *o = (op) { .bdi = d ? d->bdi : NULL, .knob = k, .reason = t->reason };
        if (c->have_bytes)
                snprintf(o->old_text, sizeof o->old_text, "%s", format_bytes(b, sizeof b, cur_bytes));
        else
                fmt_ppm(o->old_text, sizeof o->old_text, cur_ppm, c->fine);

        if (t->kind == T_VALUE) {
                uint64_t tol = t->value / 100 + a->page_size;
                bool changed = d && d->changed[k - KNOB_DEVICE_FIRST];
                /* after a global change the stored ratio means other bytes: rewrite what we set */
                if (!(force && changed) && cur_bytes + tol >= t->value && cur_bytes <= t->value + tol)
                        return false;
                o->file = knob_name(k);
                o->value = t->value;
                o->bytes = true;
                snprintf(o->new_text, sizeof o->new_text, "%s", format_bytes(b, sizeof b, t->value));
                return true;
        }
        if (t->kind == T_RESTORE) {
                uint64_t orig = is_min ? d->orig_min_ppm : d->orig_max_ppm;
                if ((is_min && !d->have_min) || (!is_min && !d->have_max))
                        return false;
                if (cur_ppm == orig)
                        return false;
                o->restore = true;
                if (d->fine) {
                        o->file = is_min ? "min_ratio_fine" : "max_ratio_fine";
                        o->value = orig;
                } else {
                        o->file = is_min ? "min_ratio" : "max_ratio";
                        o->value = orig / 10000;
                }
                fmt_ppm(o->new_text, sizeof o->new_text, orig, d->fine);
                return true;
        }
        return false;
}

static bool plan_strict(const adev *d, const dtarget *t, const devcur *c, op *o) {
        uint64_t v;

        if (t->kind == T_NONE || !c->have_strict)
                return false;
        if (t->kind == T_RESTORE) {
                if (!d->have_strict)
                        return false;
                v = d->orig_strict;
        } else
                v = t->value;
        if (c->strict == v)
                return false;
        *o = (op) { .bdi = d ? d->bdi : NULL, .knob = KNOB_STRICT_LIMIT, .file = knob_name(KNOB_STRICT_LIMIT),
                    .value = v, .restore = t->kind == T_RESTORE, .reason = t->reason, .needs_max = v != 0 };
        snprintf(o->old_text, sizeof o->old_text, "%" PRIu32, c->strict);
        snprintf(o->new_text, sizeof o->new_text, "%" PRIu64, v);
        return true;
}

/* Order one device's writes: strict off first, min/max so that min <= max holds after each write,
 * strict on last (after max). tmin/tmax values are already clamped. */
static size_t plan_device(const actuator *a, const adev *d, const char *bdi, const dtarget *tmin,
                          const dtarget *tmax, const dtarget *tstrict, const devcur *c,
                          uint64_t thresh_pages, bool force, op ops[4]) {
        op omin, omax, ostrict;
        bool have_min, have_max, have_strict;
        uint64_t new_min_ppm;
        size_t n = 0;

        have_min = plan_minmax(a, d, KNOB_MIN_BYTES, tmin, c, force, &omin);
        have_max = plan_minmax(a, d, KNOB_MAX_BYTES, tmax, c, force, &omax);
        have_strict = plan_strict(d, tstrict, c, &ostrict);
        if (have_min)
                omin.bdi = bdi;
        if (have_max)
                omax.bdi = bdi;
        if (have_strict)
                ostrict.bdi = bdi;

        if (have_strict && ostrict.value == 0)
                ops[n++] = ostrict;
        new_min_ppm = !have_min ? c->min_ppm : omin.bytes ? bytes_to_ppm(a, omin.value, thresh_pages) :
                      d->orig_min_ppm;
        if (have_min && have_max && new_min_ppm > c->max_ppm) {
                /* raising min above the current max: raise max first */
                ops[n++] = omax;
                ops[n++] = omin;
        } else {
                /* lowering max below the current min: lower min first */
                if (have_min)
                        ops[n++] = omin;
                if (have_max)
                        ops[n++] = omax;
        }
        if (have_strict && ostrict.value != 0)
                ops[n++] = ostrict;
        return n;
}

/* ---- apply ---------------------------------------------------------------------------- */

static bool device_has_work(const adev *d, const device_decision *dd) {
        for (size_t i = 0; i < KNOB_DEVICE_COUNT; i++)
                if (dd->knobs[i].wanted || (d && d->changed[i]))
                        return true;
        return false;
}

static uint64_t device_min_ppm(const bdi_device *bd) {
        if (bd->knobs.have & BDI_HAVE_MIN_RATIO_FINE)
                return bd->knobs.min_ratio_fine;
        return (uint64_t) bd->knobs.min_ratio * 10000;
}

/* Devices sorted by name, so that checking every device against another list of them costs
 * O(n log n) per tick instead of O(n^2). item: the bdi_device or device_decision it names. */
typedef struct named {
        const char *name;
        const void *item;
} named;

static int cmp_named(const void *a, const void *b) {
        return strcmp(((const named *) a)->name, ((const named *) b)->name);
}

static const void *named_find(const named *v, size_t n, const char *name) {
        named key = { name, NULL };
        const named *hit = n > 0 ? bsearch(&key, v, n, sizeof *v, cmp_named) : NULL;

        return hit ? hit->item : NULL;
}

/* The decision's managed devices by name; NULL on -ENOMEM. */
static named *index_managed(const decision *d, size_t *ret_n) {
        named *v = calloc(MAX(d->n_devices, 1), sizeof *v);
        size_t n = 0;

        if (!v)
                return NULL;
        for (size_t i = 0; i < d->n_devices; i++)
                if (d->devices[i].managed)
                        v[n++] = (named) { d->devices[i].bdi, &d->devices[i] };
        qsort(v, n, sizeof *v, cmp_named);
        *ret_n = n;
        return v;
}

/* The sample's devices by name (s may be NULL); NULL on -ENOMEM. */
static named *index_sample(const sample *s, size_t *ret_n) {
        size_t n = s ? s->n_devices : 0;
        named *v = calloc(MAX(n, 1), sizeof *v);

        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++)
                v[i] = (named) { s->devices[i].bdi, &s->devices[i] };
        qsort(v, n, sizeof *v, cmp_named);
        *ret_n = n;
        return v;
}

/* Per-device min/max/strict targets after clamping to the limit, min <= max, and the sum-of-min rule. */
typedef struct devplan {
        const device_decision *dd;
        const adev *d;
        devcur cur;
        dtarget tmin, tmax, tstrict;
        bool skip;               /* nothing to do, or unreadable */
        bool gone;
        uint64_t new_min_ppm;
} devplan;

static void clamp_targets(const actuator *a, devplan *p, uint64_t thresh_pages) {
        uint64_t limit = thresh_pages * a->page_size, max_bytes;

        if (!p->cur.have_bytes) {
                if (p->tmin.kind == T_VALUE || p->tmax.kind == T_VALUE)
                        log_debug("%s: this kernel has no min_bytes/max_bytes, not capping", p->dd->bdi);
                if (p->tmin.kind == T_VALUE)
                        p->tmin.kind = T_NONE;
                if (p->tmax.kind == T_VALUE)
                        p->tmax.kind = T_NONE;
        }
        if (!p->cur.have_strict && p->tstrict.kind == T_VALUE)
                p->tstrict.kind = T_NONE;
        /* beyond the current limit is EINVAL */
        if (p->tmax.kind == T_VALUE && p->tmax.value > limit)
                p->tmax.value = limit;
        if (p->tmin.kind == T_VALUE && p->tmin.value > limit)
                p->tmin.value = limit;
        /* keep min <= max */
        max_bytes = p->tmax.kind == T_VALUE ? p->tmax.value :
                    ppm_to_bytes(a, p->tmax.kind == T_RESTORE ? p->d->orig_max_ppm : p->cur.max_ppm, thresh_pages);
        if (p->tmin.kind == T_VALUE && p->tmin.value > max_bytes) {
                log_debug("%s: min_bytes %" PRIu64 " above max, lowered to %" PRIu64, p->dd->bdi, p->tmin.value, max_bytes);
                p->tmin.value = max_bytes / a->page_size * a->page_size;
        }
}

static uint64_t target_min_ppm(const actuator *a, const devplan *p, uint64_t thresh_pages) {
        switch (p->tmin.kind) {
        case T_VALUE:
                return bytes_to_ppm(a, p->tmin.value, thresh_pages);
        case T_RESTORE:
                return p->d->orig_min_ppm;
        default:
                return p->cur.min_ppm;
        }
}

/* The kernel refuses a min that brings the sum of all min ratios to 100 %: shrink ours proportionally.
 * managed: index_managed(dec). 0 or -ENOMEM. */
static int fit_min_sum(const actuator *a, bool *min_scaled, const sample *s, const decision *dec,
                       const named *managed, size_t n_managed, devplan *plans, uint64_t thresh_pages) {
        _cleanup_free_ named *by_name = NULL;
        uint64_t fixed = 0, ours = 0, budget;
        size_t n_by_name = 0;

        by_name = index_sample(s, &n_by_name);
        if (!by_name)
                return -ENOMEM;
        for (size_t i = 0; s && i < s->n_devices; i++)
                if (!named_find(managed, n_managed, s->devices[i].bdi))
                        fixed += device_min_ppm(&s->devices[i]);
        for (size_t i = 0; i < dec->n_devices; i++) {
                devplan *p = &plans[i];
                if (!p->dd->managed)
                        continue;
                if (p->skip) {
                        const bdi_device *bd = named_find(by_name, n_by_name, p->dd->bdi);

                        fixed += bd ? device_min_ppm(bd) : 0;
                        continue;
                }
                p->new_min_ppm = target_min_ppm(a, p, thresh_pages);
                if (p->tmin.kind == T_VALUE)
                        ours += p->new_min_ppm;
                else
                        fixed += p->new_min_ppm;
        }
        budget = fixed + MIN_SUM_MARGIN_PPM < PPM_FULL ? PPM_FULL - MIN_SUM_MARGIN_PPM - fixed : 0;
        if (fixed + ours < PPM_FULL) {
                if (min_scaled && *min_scaled) {
                        log_info("The devices' min_bytes fit under the dirty limit again.");
                        *min_scaled = false;
                }
                return 0;
        }
        if (min_scaled && !*min_scaled) {
                log_notice("The devices' min_bytes add up to %" PRIu64 " ppm of the dirty limit (others hold %" PRIu64
                           " ppm); shrinking them proportionally to fit under 100 %%.", ours, fixed);
                *min_scaled = true;
        }
        for (size_t i = 0; i < dec->n_devices; i++) {
                devplan *p = &plans[i];
                if (!p->dd->managed || p->skip || p->tmin.kind != T_VALUE)
                        continue;
                p->tmin.value = ours ? (uint64_t) ((double) p->tmin.value * (double) budget / (double) ours) : 0;
                p->tmin.value = p->tmin.value / a->page_size * a->page_size;
                p->new_min_ppm = bytes_to_ppm(a, p->tmin.value, thresh_pages);
        }
        return 0;
}

/* Work out every managed device's targets and current state. */
static int plan_devices_prepare(const actuator *a, const decision *dec, uint64_t thresh_pages, devplan **ret) {
        devplan *plans = calloc(MAX(dec->n_devices, 1), sizeof *plans);

        if (!plans)
                return -ENOMEM;
        for (size_t i = 0; i < dec->n_devices; i++) {
                devplan *p = &plans[i];
                int r;

                p->dd = &dec->devices[i];
                p->d = find_dev(a, p->dd->bdi);
                if (!p->dd->managed || !device_has_work(p->d, p->dd)) {
                        p->skip = true;
                        continue;
                }
                r = read_devcur(a, p->dd->bdi, &p->cur);
                if (r < 0) {
                        p->skip = true;
                        p->gone = is_gone(r);
                        if (!p->gone)
                                log_debug_errno(r, "Failed to read the knobs of %s: %m", p->dd->bdi);
                        continue;
                }
                p->tmin = device_target(p->d, p->dd, KNOB_MIN_BYTES);
                p->tmax = device_target(p->d, p->dd, KNOB_MAX_BYTES);
                p->tstrict = device_target(p->d, p->dd, KNOB_STRICT_LIMIT);
                clamp_targets(a, p, thresh_pages);
        }
        *ret = plans;
        return 0;
}

/* Devices whose min goes down come first, so that the ones raising theirs find room. */
static bool plan_lowers_min(const devplan *p) {
        return p->new_min_ppm <= p->cur.min_ppm;
}

static void global_targets(const actuator *a, const decision *dec, gtarget t[_KNOB_GLOBAL_MAX]) {
        for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                const knob_decision *kd = &dec->global[k];
                if (kd->wanted)
                        t[k] = (gtarget) { T_VALUE, kd->value, kd->reason };
                else if (a->gchanged[k] && a->g[k].saved)
                        t[k] = (gtarget) { T_RESTORE, 0, "no longer wanted, restoring the original" };
                else
                        t[k] = (gtarget) { T_NONE, 0, NULL };
        }
}

static int restore_device_internal(actuator *a, const char *bdi, bool use_backoff);

int actuator_apply(actuator *a, const sample *s, const decision *dec) {
        gtarget gt[_KNOB_GLOBAL_MAX];
        op gops[_KNOB_GLOBAL_MAX];
        _cleanup_free_ devplan *plans = NULL;
        _cleanup_free_ char (*leaving)[64] = NULL;
        _cleanup_free_ named *managed = NULL;
        size_t ng, n_leaving = 0, n_managed = 0;
        uint64_t thresh_pages;
        bool limit_changed = false, gone;
        vmcur c;
        int r, first = 0;

        a->now_usec = s && s->time_usec ? s->time_usec : now_usec();

        /* globals first: the per-device bytes are ratios of the global limit */
        r = read_vmcur(a, &c);
        if (r < 0)
                return r;
        global_targets(a, dec, gt);
        ng = plan_globals(a, gt, &c, gops);
        for (size_t i = 0; i < ng; i++) {
                r = op_run(a, &gops[i], true);
                if (r == OP_DONE && gops[i].knob == KNOB_DIRTY_BYTES)
                        limit_changed = true;
                if (r < 0 && first == 0)
                        first = r;
        }
        thresh_pages = c.thresh_pages;
        if (limit_changed && read_thresholds(a, &thresh_pages, NULL) < 0)
                thresh_pages = c.thresh_pages;

        /* then the devices, in an order that keeps min <= max and the sum of mins < 100 % */
        r = plan_devices_prepare(a, dec, thresh_pages, &plans);
        if (r < 0)
                return log_oom_error();
        managed = index_managed(dec, &n_managed);
        if (!managed)
                return log_oom_error();
        if (fit_min_sum(a, &a->min_scaled, s, dec, managed, n_managed, plans, thresh_pages) < 0)
                return log_oom_error();
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < dec->n_devices; i++) {
                        devplan *p = &plans[i];
                        op ops[4];
                        size_t n;

                        if (!p->dd->managed || p->skip || plan_lowers_min(p) != (pass == 0))
                                continue;
                        p->d = find_dev(a, p->dd->bdi);
                        n = plan_device(a, p->d, p->dd->bdi, &p->tmin, &p->tmax, &p->tstrict, &p->cur,
                                        thresh_pages, limit_changed, ops);
                        r = ops_run(a, ops, n, true, &gone);
                        if (gone) {
                                log_debug("%s vanished, forgetting it.", p->dd->bdi);
                                forget_dev(a, p->dd->bdi);
                                (void) saved_write(a);
                                continue;
                        }
                        if (r < 0 && first == 0)
                                first = r;
                }
        /* only now: forgetting moves the other entries, which plans[].d pointed to until here */
        for (size_t i = 0; i < dec->n_devices; i++)
                if (plans[i].gone && find_dev(a, plans[i].dd->bdi)) {
                        log_debug("%s vanished, forgetting it.", plans[i].dd->bdi);
                        forget_dev(a, plans[i].dd->bdi);
                        (void) saved_write(a);
                }

        /* devices that left management (or the system) */
        leaving = calloc(MAX(a->n_devices, 1), sizeof *leaving);
        if (!leaving)
                return log_oom_error();
        for (size_t i = 0; i < a->n_devices; i++)
                if (!named_find(managed, n_managed, a->devices[i].bdi))
                        snprintf(leaving[n_leaving++], sizeof leaving[0], "%s", a->devices[i].bdi);
        for (size_t i = 0; i < n_leaving; i++) {
                r = restore_device_internal(a, leaving[i], true);
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

int actuator_plan(const actuator *a, const sample *s, const decision *dec, FILE *out) {
        gtarget gt[_KNOB_GLOBAL_MAX];
        op gops[_KNOB_GLOBAL_MAX];
        _cleanup_free_ devplan *plans = NULL;
        _cleanup_free_ named *managed = NULL;
        uint64_t thresh_pages;
        bool limit_changed = false;
        size_t ng, n_managed = 0;
        vmcur c;
        int r;

        r = read_vmcur(a, &c);
        if (r < 0)
                return r;
        global_targets(a, dec, gt);
        ng = plan_globals(a, gt, &c, gops);
        print_ops(a, gops, ng, out);
        for (size_t i = 0; i < ng; i++)
                if (gops[i].knob == KNOB_DIRTY_BYTES)
                        limit_changed = true;
        thresh_pages = predict_thresh_pages(a, gops, ng, &c, s);

        r = plan_devices_prepare(a, dec, thresh_pages, &plans);
        if (r < 0)
                return r;
        managed = index_managed(dec, &n_managed);
        if (!managed)
                return -ENOMEM;
        r = fit_min_sum(a, NULL, s, dec, managed, n_managed, plans, thresh_pages);
        if (r < 0)
                return r;
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < dec->n_devices; i++) {
                        devplan *p = &plans[i];
                        op ops[4];
                        size_t n;

                        if (!p->dd->managed || p->skip || plan_lowers_min(p) != (pass == 0))
                                continue;
                        n = plan_device(a, p->d, p->dd->bdi, &p->tmin, &p->tmax, &p->tstrict, &p->cur,
                                        thresh_pages, limit_changed, ops);
                        print_ops(a, ops, n, out);
                }
        for (size_t i = 0; i < a->n_devices; i++)
                if (!named_find(managed, n_managed, a->devices[i].bdi))
                        fprintf(out, "restore %s\t# no longer managed\n", a->devices[i].bdi);
        return 0;
}

/* ---- restore -------------------------------------------------------------------------- */

/* Restore order: strict_limit=0 first, then max and min ratios (max first unless the original max
 * is below the current min), strict_limit=1 last. A vanished device is just forgotten. */
static int restore_device_internal(actuator *a, const char *bdi, bool use_backoff) {
        adev *d = find_dev(a, bdi);
        dtarget tmin = { T_RESTORE, 0, "restoring the original" }, tmax = tmin, tstrict = tmin;
        op omin, omax, ostrict, ops[4];
        bool have_min, have_max, have_strict, gone;
        size_t n = 0;
        devcur c;
        int r;

        if (!d)
                return 0;
        if (!d->saved) {
                forget_dev(a, bdi);
                return 0;
        }
        r = read_devcur(a, bdi, &c);
        if (is_gone(r)) {
                log_debug("%s is gone, forgetting its saved knobs.", bdi);
                forget_dev(a, bdi);
                return saved_write(a);
        }
        if (r < 0)
                return log_warning_errno(r, "Failed to read the knobs of %s: %m", bdi);

        have_min = plan_minmax(a, d, KNOB_MIN_BYTES, &tmin, &c, false, &omin);
        have_max = plan_minmax(a, d, KNOB_MAX_BYTES, &tmax, &c, false, &omax);
        have_strict = plan_strict(d, &tstrict, &c, &ostrict);
        if (have_strict && ostrict.value == 0)
                ops[n++] = ostrict;
        if (have_min && have_max && d->orig_max_ppm < c.min_ppm) {
                ops[n++] = omin;
                ops[n++] = omax;
        } else {
                if (have_max)
                        ops[n++] = omax;
                if (have_min)
                        ops[n++] = omin;
        }
        if (have_strict && ostrict.value != 0) {
                ostrict.needs_max = false;
                ops[n++] = ostrict;
        }
        r = ops_run(a, ops, n, use_backoff, &gone);
        if (gone) {
                forget_dev(a, bdi);
                return saved_write(a);
        }
        if (r < 0)
                return r;
        forget_dev(a, bdi);
        return saved_write(a);
}

int actuator_restore_device(actuator *a, const char *bdi) {
        a->now_usec = now_usec();
        return restore_device_internal(a, bdi, false);
}

int actuator_restore_all(actuator *a) {
        gtarget gt[_KNOB_GLOBAL_MAX];
        op gops[_KNOB_GLOBAL_MAX];
        size_t ng;
        vmcur c;
        int r, first = 0;

        a->now_usec = now_usec();
        /* devices first (strict_limit off first of all); a min that did not fit is retried after the others */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = a->n_devices; i > 0; i--) {
                        char bdi[64];
                        snprintf(bdi, sizeof bdi, "%s", a->devices[i - 1].bdi);
                        r = restore_device_internal(a, bdi, false);
                        if (r < 0 && pass == 1 && first == 0)
                                first = r;
                }

        r = read_vmcur(a, &c);
        if (r < 0) {
                if (first == 0)
                        first = r;
        } else {
                for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++)
                        gt[k] = a->g[k].saved ? (gtarget) { T_RESTORE, 0, "restoring the original" } :
                                                (gtarget) { T_NONE, 0, NULL };
                ng = plan_globals(a, gt, &c, gops);
                for (size_t i = 0; i < ng; i++) {
                        r = op_run(a, &gops[i], false);
                        if (r < 0) {
                                if (first == 0)
                                        first = r;
                                gt[gops[i].knob].kind = T_VALUE;   /* mark: keep this one saved */
                        }
                }
                for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++)
                        if (gt[k].kind == T_RESTORE) {
                                a->g[k] = (gsaved) {};
                                a->gchanged[k] = false;
                        }
        }
        r = saved_write(a);
        if (r < 0 && first == 0)
                first = r;
        if (first < 0)
                log_warning_errno(first, "Could not restore every knob; %s keeps what is left: %m", a->saved_path);
        return first;
}

/* ---- recovery ------------------------------------------------------------------------- */

static int parse_saved_line(actuator *a, char *line) {
        char *words[4], *save = NULL;
        size_t n = 0;
        uint64_t v;

        line += strspn(line, " \t");
        if (*line == '#' || *line == 0)
                return 0;
        for (char *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
                if (n == ELEMENTSOF(words))
                        return -EINVAL;
                words[n++] = w;
        }
        if (n == 0)
                return 0;
        if (strcmp(words[0], "global") == 0 && n == 3) {
                if (parse_u64(words[2], &v) < 0)
                        return -EINVAL;
                for (size_t k = 0; k < _KNOB_GLOBAL_MAX; k++) {
                        gsaved *g = &a->g[k];
                        if (strcmp(words[1], knob_name(k)) == 0) {
                                /* dirty_bytes below 2 pages is EINVAL; 0 means "ratio mode" */
                                if (knob_ratio_files[k] && v != 0 && v < (k == KNOB_DIRTY_BYTES ? 2 * a->page_size : 1))
                                        return -EINVAL;
                                if (!knob_ratio_files[k] && v > INT32_MAX)
                                        return -ERANGE;
                                g->bytes = v;
                                g->have_bytes = g->saved = true;
                                a->gchanged[k] = true;
                                return 0;
                        }
                        if (knob_ratio_files[k] && strcmp(words[1], knob_ratio_files[k]) == 0) {
                                if (v > 100)
                                        return -ERANGE;
                                g->ratio = (uint32_t) v;
                                g->have_ratio = g->saved = true;
                                a->gchanged[k] = true;
                                return 0;
                        }
                }
                return -EINVAL;
        }
        if (strcmp(words[0], "bdi") == 0 && n == 4) {
                bool fine = strstr(words[2], "_fine") != NULL;
                adev *d;

                if (parse_u64(words[3], &v) < 0 || strlen(words[1]) >= sizeof d->bdi || strchr(words[1], '/') ||
                    words[1][0] == '.')
                        return -EINVAL;
                if (strcmp(words[2], "min_ratio_fine") && strcmp(words[2], "max_ratio_fine") &&
                    strcmp(words[2], "min_ratio") && strcmp(words[2], "max_ratio") && strcmp(words[2], "strict_limit"))
                        return -EINVAL;
                if (strcmp(words[2], "strict_limit") == 0 ? v > 1 : fine ? v > PPM_FULL : v > 100)
                        return -ERANGE;
                d = get_dev(a, words[1]);
                if (!d)
                        return -ENOMEM;
                if (strcmp(words[2], "strict_limit") == 0) {
                        d->orig_strict = (uint32_t) v;
                        d->have_strict = true;
                } else {
                        uint64_t ppm = fine ? v : v * 10000;
                        if ((d->have_min || d->have_max) && d->fine != fine)
                                return -EINVAL;
                        d->fine = fine;
                        if (words[2][1] == 'i') {
                                d->orig_min_ppm = ppm;
                                d->have_min = true;
                        } else {
                                d->orig_max_ppm = ppm;
                                d->have_max = true;
                        }
                }
                d->saved = true;
                for (size_t i = 0; i < KNOB_DEVICE_COUNT; i++)
                        d->changed[i] = true;
                return 0;
        }
        return -EINVAL;
}

int actuator_recover(actuator *a) {
        _cleanup_free_ char *buf = NULL;
        unsigned line_no = 0, bad = 0;
        int r;

        r = read_file_full(a->saved_path, &buf, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", a->saved_path);
        log_notice("%s exists: a previous run did not restore its knobs, restoring them now.", a->saved_path);
        for (char *line = buf, *next; line && *line; line = next) {
                char copy[256];
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                line_no++;
                snprintf(copy, sizeof copy, "%s", line);
                r = parse_saved_line(a, line);
                if (r < 0) {
                        bad++;
                        log_warning("%s:%u: ignoring unparsable line \"%s\".", a->saved_path, line_no, copy);
                }
        }
        /* a device with only part of its originals: keep min <= max sane by restoring only what is known */
        r = actuator_restore_all(a);
        if (r < 0)
                return r;
        if (bad)
                log_warning("%s had %u bad lines; restored what parsed.", a->saved_path, bad);
        return 1;
}

/* ---- life cycle ----------------------------------------------------------------------- */

int actuator_new(const char *root, const char *saved_path, const knob_io *io, actuator **ret) {
        actuator *a;
        long ps = sysconf(_SC_PAGESIZE);

        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->root = xstrdup(root ? root : "");
        a->saved_path = xstrdup(saved_path && *saved_path ? saved_path : ACTUATOR_DEFAULT_SAVED_PATH);
        if (io)
                a->io = *io;
        a->page_size = ps > 0 ? (uint64_t) ps : 4096;
        *ret = a;
        return 0;
}

actuator *actuator_free(actuator *a) {
        if (!a)
                return NULL;
        free(a->root);
        free(a->saved_path);
        free(a->devices);
        free(a);
        return NULL;
}
