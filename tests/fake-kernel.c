/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A simulated kernel for actuator tests; the rules follow mm/page-writeback.c as checked on 6.18. */
#include "fake-kernel.h"
#include "util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

fake_kernel *fake_kernel_new(uint64_t dirtyable_pages, size_t n_bdis) {
        fake_kernel *fk = calloc(1, sizeof *fk);

        if (!fk)
                abort();
        fk->dirtyable_pages = dirtyable_pages;
        fk->vm = (fake_vm) { .dirty_ratio = 20, .background_ratio = 10,
                             .writeback_centisecs = 500, .expire_centisecs = 3000 };
        for (size_t i = 0; i < n_bdis && i < ELEMENTSOF(fk->bdis); i++) {
                fake_bdi *b = &fk->bdis[fk->n_bdis++];
                snprintf(b->name, sizeof b->name, "7:%zu", i);
                b->present = b->fine = true;
                b->max_ppm = FAKE_PPM_FULL;
        }
        return fk;
}

void fake_kernel_free(fake_kernel *fk) {
        if (!fk)
                return;
        fake_kernel_log_clear(fk);
        free(fk);
}

fake_bdi *fake_kernel_bdi(fake_kernel *fk, const char *name) {
        for (size_t i = 0; i < fk->n_bdis; i++)
                if (strcmp(fk->bdis[i].name, name) == 0)
                        return &fk->bdis[i];
        return NULL;
}

static void add_fault(fake_kernel *fk, const char *suffix, int error, int count, bool on_read) {
        if (count == 0) {
                fk->n_faults = 0;
                return;
        }
        if (fk->n_faults == ELEMENTSOF(fk->faults))
                abort();
        fake_fault *f = &fk->faults[fk->n_faults++];
        snprintf(f->suffix, sizeof f->suffix, "%s", suffix);
        f->error = error;
        f->remaining = count;
        f->on_read = on_read;
}

void fake_kernel_fail(fake_kernel *fk, const char *suffix, int error, int count) {
        add_fault(fk, suffix, error, count, false);
}

void fake_kernel_fail_lsm(fake_kernel *fk, const char *suffix, int error) {
        add_fault(fk, suffix, error, -1, false);
        fk->faults[fk->n_faults - 1].write_only = true;
}

void fake_kernel_fail_read(fake_kernel *fk, const char *suffix, int error, int count) {
        add_fault(fk, suffix, error, count, true);
}

/* The fault for this path, if one is due (counted down). */
static fake_fault *take_fault(fake_kernel *fk, const char *path, bool on_read) {
        size_t plen = strlen(path);

        for (size_t i = 0; i < fk->n_faults; i++) {
                fake_fault *f = &fk->faults[i];
                size_t slen = strlen(f->suffix);
                if (f->on_read != on_read || f->remaining == 0 || plen < slen ||
                    strcmp(path + plen - slen, f->suffix) != 0)
                        continue;
                if (f->remaining > 0)
                        f->remaining--;
                return f;
        }
        return NULL;
}

void fake_kernel_remove_bdi(fake_kernel *fk, const char *name) {
        fake_bdi *b = fake_kernel_bdi(fk, name);

        if (b)
                b->present = false;
}

/* domain_dirty_limits(): bytes win over ratio; background >= dirty means dirty / 2 */
uint64_t fake_kernel_thresh_pages(const fake_kernel *fk) {
        if (fk->vm.dirty_bytes)
                return (fk->vm.dirty_bytes + FAKE_PAGE_SIZE - 1) / FAKE_PAGE_SIZE;
        return fk->vm.dirty_ratio * fk->dirtyable_pages / 100;
}

uint64_t fake_kernel_bg_thresh_pages(const fake_kernel *fk) {
        uint64_t thresh = fake_kernel_thresh_pages(fk), bg;

        if (fk->vm.background_bytes)
                bg = (fk->vm.background_bytes + FAKE_PAGE_SIZE - 1) / FAKE_PAGE_SIZE;
        else
                bg = fk->vm.background_ratio * fk->dirtyable_pages / 100;
        if (bg >= thresh)
                bg = thresh / 2;
        return bg;
}

uint64_t fake_kernel_min_sum_ppm(const fake_kernel *fk) {
        uint64_t sum = 0;

        for (size_t i = 0; i < fk->n_bdis; i++)
                if (fk->bdis[i].present)
                        sum += fk->bdis[i].min_ppm;
        return sum;
}

/* ---- paths ---------------------------------------------------------------------------- */

typedef enum where { W_NONE, W_VM, W_VMSTAT, W_BDI } where;

static where parse_path(fake_kernel *fk, const char *path, const char **file, fake_bdi **bdi) {
        const char *p;

        if ((p = strstr(path, "/proc/sys/vm/"))) {
                *file = p + strlen("/proc/sys/vm/");
                return W_VM;
        }
        if ((p = strstr(path, "/proc/vmstat")) && p[strlen("/proc/vmstat")] == 0)
                return W_VMSTAT;
        if ((p = strstr(path, "/sys/class/bdi/"))) {
                char name[64];
                const char *slash;
                p += strlen("/sys/class/bdi/");
                slash = strchr(p, '/');
                if (!slash || (size_t) (slash - p) >= sizeof name)
                        return W_NONE;
                memcpy(name, p, (size_t) (slash - p));
                name[slash - p] = 0;
                *bdi = fake_kernel_bdi(fk, name);
                *file = slash + 1;
                return W_BDI;
        }
        return W_NONE;
}

static uint64_t *vm_field(fake_kernel *fk, const char *file) {
        if (strcmp(file, "dirty_bytes") == 0) return &fk->vm.dirty_bytes;
        if (strcmp(file, "dirty_ratio") == 0) return &fk->vm.dirty_ratio;
        if (strcmp(file, "dirty_background_bytes") == 0) return &fk->vm.background_bytes;
        if (strcmp(file, "dirty_background_ratio") == 0) return &fk->vm.background_ratio;
        if (strcmp(file, "dirty_writeback_centisecs") == 0) return &fk->vm.writeback_centisecs;
        if (strcmp(file, "dirty_expire_centisecs") == 0) return &fk->vm.expire_centisecs;
        return NULL;
}

static bool bdi_file_exists(const fake_bdi *b, const char *file) {
        if (strcmp(file, "min_ratio") == 0 || strcmp(file, "max_ratio") == 0)
                return true;
        if (!b->fine)
                return false;
        return strcmp(file, "min_ratio_fine") == 0 || strcmp(file, "max_ratio_fine") == 0 ||
               strcmp(file, "min_bytes") == 0 || strcmp(file, "max_bytes") == 0 ||
               strcmp(file, "strict_limit") == 0;
}

/* ---- read ----------------------------------------------------------------------------- */

static int fake_read(void *userdata, const char *path, char *buf, size_t size) {
        fake_kernel *fk = userdata;
        const char *file = NULL;
        fake_bdi *b = NULL;
        uint64_t v, limit_bytes = fake_kernel_thresh_pages(fk) * FAKE_PAGE_SIZE;
        fake_fault *fault = take_fault(fk, path, true);

        if (fault) {
                if (fault->error == FAKE_SHORT_READ) {
                        buf[0] = 0;
                        return 0;
                }
                if (fault->error == FAKE_GARBAGE_READ) {
                        snprintf(buf, size, "12x\n\x01");
                        return 0;
                }
                return -fault->error;
        }

        switch (parse_path(fk, path, &file, &b)) {
        case W_VM: {
                uint64_t *f = vm_field(fk, file);
                if (!f)
                        return -ENOENT;
                snprintf(buf, size, "%" PRIu64 "\n", *f);
                return 0;
        }
        case W_VMSTAT:
                snprintf(buf, size, "nr_dirty 12\nnr_writeback 0\nnr_dirty_threshold %" PRIu64
                         "\nnr_dirty_background_threshold %" PRIu64 "\nnr_dirtied 100\n",
                         fake_kernel_thresh_pages(fk), fake_kernel_bg_thresh_pages(fk));
                return 0;
        case W_BDI:
                if (!b || !b->present || !bdi_file_exists(b, file))
                        return -ENOENT;
                if (strcmp(file, "min_ratio") == 0) v = b->min_ppm / 10000;
                else if (strcmp(file, "max_ratio") == 0) v = b->max_ppm / 10000;
                else if (strcmp(file, "min_ratio_fine") == 0) v = b->min_ppm;
                else if (strcmp(file, "max_ratio_fine") == 0) v = b->max_ppm;
                /* bdi_get_bytes(): the stored ratio times today's threshold */
                else if (strcmp(file, "min_bytes") == 0) v = limit_bytes * b->min_ppm / FAKE_PPM_FULL;
                else if (strcmp(file, "max_bytes") == 0) v = limit_bytes * b->max_ppm / FAKE_PPM_FULL;
                else v = b->strict;
                snprintf(buf, size, "%" PRIu64 "\n", v);
                return 0;
        default:
                return -ENOENT;
        }
}

/* ---- write ---------------------------------------------------------------------------- */

static int set_min(fake_kernel *fk, fake_bdi *b, uint64_t ppm) {
        if (ppm > FAKE_PPM_FULL || ppm > b->max_ppm)
                return -EINVAL;
        /* __bdi_set_min_ratio(): a raise must keep the sum of all min ratios below 100 % */
        if (ppm > b->min_ppm && fake_kernel_min_sum_ppm(fk) - b->min_ppm + ppm >= FAKE_PPM_FULL)
                return -EINVAL;
        b->min_ppm = ppm;
        return 0;
}

static int set_max(fake_bdi *b, uint64_t ppm) {
        if (ppm > FAKE_PPM_FULL || b->min_ppm > ppm)
                return -EINVAL;
        b->max_ppm = ppm;
        return 0;
}

/* bdi_ratio_from_pages(): whole pages as a ratio of the current threshold; beyond it is EINVAL */
static int bytes_to_ppm(fake_kernel *fk, uint64_t bytes, uint64_t *ret) {
        uint64_t thresh = fake_kernel_thresh_pages(fk), ppm;

        if (!thresh)
                return -EINVAL;
        ppm = (bytes / FAKE_PAGE_SIZE) * FAKE_PPM_FULL / thresh;
        if (ppm > FAKE_PPM_FULL)
                return -EINVAL;
        *ret = ppm;
        return 0;
}

static int write_vm(fake_kernel *fk, const char *file, uint64_t v) {
        uint64_t *f = vm_field(fk, file), old;

        if (!f)
                return -ENOENT;
        old = *f;
        if (f == &fk->vm.dirty_bytes) {
                if (v < 2 * FAKE_PAGE_SIZE)
                        return -EINVAL;
        } else if (f == &fk->vm.background_bytes) {
                if (v < 1)
                        return -EINVAL;
        } else if (f == &fk->vm.dirty_ratio || f == &fk->vm.background_ratio) {
                if (v > 100)
                        return -EINVAL;
        } else if (v > INT_MAX)
                return -EINVAL;
        *f = v;
        /* the partner is zeroed only when the value actually changed (dirty_*_handler) */
        if (v != old) {
                if (f == &fk->vm.dirty_bytes) fk->vm.dirty_ratio = 0;
                if (f == &fk->vm.dirty_ratio) fk->vm.dirty_bytes = 0;
                if (f == &fk->vm.background_bytes) fk->vm.background_ratio = 0;
                if (f == &fk->vm.background_ratio) fk->vm.background_bytes = 0;
        }
        return 0;
}

static int write_bdi(fake_kernel *fk, fake_bdi *b, const char *file, uint64_t v) {
        uint64_t ppm;
        int r;

        if (!b || !b->present || !bdi_file_exists(b, file))
                return -ENOENT;
        if (strcmp(file, "strict_limit") == 0) {
                if (v > 1)
                        return -EINVAL;
                b->strict = (uint32_t) v;
                return 0;
        }
        if (strcmp(file, "min_ratio") == 0 || strcmp(file, "max_ratio") == 0) {
                if (v > 100)
                        return -EINVAL;
                ppm = v * 10000;
        } else if (strcmp(file, "min_bytes") == 0 || strcmp(file, "max_bytes") == 0) {
                r = bytes_to_ppm(fk, v, &ppm);
                if (r < 0)
                        return r;
        } else
                ppm = v;
        return file[1] == 'i' ? set_min(fk, b, ppm) : set_max(b, ppm);
}

static void log_add(fake_kernel *fk, const char *entry) {
        char **n = realloc(fk->log, (fk->n_log + 1) * sizeof *n);

        if (!n)
                abort();
        fk->log = n;
        fk->log[fk->n_log++] = xstrdup(entry);
}

static int fake_write(void *userdata, const char *path, const char *value) {
        fake_kernel *fk = userdata;
        const char *file = NULL;
        fake_bdi *b = NULL;
        char entry[256];
        uint64_t v;
        where w;
        int r = 0;
        fake_fault *fault;

        w = parse_path(fk, path, &file, &b);
        if (w == W_VM)
                snprintf(entry, sizeof entry, "vm/%s %s", file, value);
        else if (w == W_BDI)
                snprintf(entry, sizeof entry, "%s", strstr(path, "/sys/class/bdi/") + strlen("/sys/class/bdi/"));
        else
                snprintf(entry, sizeof entry, "%s", path);
        if (w == W_BDI)
                snprintf(entry + strlen(entry), sizeof entry - strlen(entry), " %s", value);

        fault = take_fault(fk, path, false);
        if (fault && fault->error > 0)
                r = -fault->error;
        if (r == 0) {
                if (parse_u64(value, &v) < 0)
                        r = -EINVAL;
                else if (w == W_VM)
                        r = write_vm(fk, file, v);
                else if (w == W_BDI)
                        r = write_bdi(fk, b, file, v);
                else
                        r = -EACCES;
        }
        /* the write landed, then the device went (a stick pulled between our read and our next write) */
        if (fault && fault->error == FAKE_VANISH && w == W_BDI && b)
                b->present = false;
        if (r == 0 && fk->dirtyable_step_pages)
                fk->dirtyable_pages = (uint64_t) ((int64_t) fk->dirtyable_pages + fk->dirtyable_step_pages);
        if (r < 0)
                snprintf(entry + strlen(entry), sizeof entry - strlen(entry), " !%s", strerrorname_np(-r));
        log_add(fk, entry);
        return r;
}

/* A file is read-only for good when a fault makes its writes fail with EROFS, EACCES or EPERM. */
static int fake_writable(void *userdata, const char *path) {
        fake_kernel *fk = userdata;
        size_t plen = strlen(path);

        for (size_t i = 0; i < fk->n_faults; i++) {
                const fake_fault *f = &fk->faults[i];
                size_t slen = strlen(f->suffix);

                if (f->on_read || f->write_only || f->remaining == 0 || plen < slen ||
                    strcmp(path + plen - slen, f->suffix) != 0)
                        continue;
                if (f->error == EROFS || f->error == EACCES || f->error == EPERM)
                        return -f->error;
        }
        return 0;
}

knob_io fake_kernel_io(fake_kernel *fk) {
        return (knob_io) { .read = fake_read, .write = fake_write, .writable = fake_writable, .userdata = fk };
}

/* ---- the write log -------------------------------------------------------------------- */

long fake_kernel_log_find(const fake_kernel *fk, const char *prefix, size_t from) {
        for (size_t i = from; i < fk->n_log; i++)
                if (strncmp(fk->log[i], prefix, strlen(prefix)) == 0)
                        return (long) i;
        return -1;
}

size_t fake_kernel_log_count(const fake_kernel *fk, const char *prefix) {
        size_t n = 0;

        for (size_t i = 0; i < fk->n_log; i++)
                if (strncmp(fk->log[i], prefix, strlen(prefix)) == 0)
                        n++;
        return n;
}

void fake_kernel_log_clear(fake_kernel *fk) {
        for (size_t i = 0; i < fk->n_log; i++)
                free(fk->log[i]);
        free(fk->log);
        fk->log = NULL;
        fk->n_log = 0;
}

void fake_kernel_log_dump(const fake_kernel *fk) {
        for (size_t i = 0; i < fk->n_log; i++)
                printf("#   write %zu: %s\n", i, fk->log[i]);
}
