/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Remembered device speeds: the file (versioned, checksummed, bounded, atomic) and device identities. */
#include "speeds.h"
#include "log.h"
#include "savedfile.h"
#include "util.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define MAGIC "wbtuned-speeds"
#define CHECKSUM_WORD "checksum "

/* ---- the file ------------------------------------------------------------------------------ */

char *speeds_format(const speed_entry *v, size_t n, size_t *ret_size) {
        _cleanup_memstream_ memstream ms = {};
        char *buf, line[64];
        size_t size;

        if (!memstream_open(&ms))
                return NULL;
        fputs("# wbtuned: device speeds measured before, a prior for the next start. A checksum guards\n"
              "# this file; remove it to make wbtuned measure every device afresh.\n", ms.f);
        fprintf(ms.f, "%s %d\n", MAGIC, SPEEDS_FILE_VERSION);
        for (size_t i = 0; i < n; i++)
                fprintf(ms.f, "speed %" PRIu64 " %" PRIu64 " %s\n", v[i].bw_bytes_per_s, v[i].measured_realtime_s, v[i].id);
        /* the checksum covers what is written so far */
        if (fflush(ms.f) != 0 || ferror(ms.f))
                return NULL;
        saved_file_checksum_line(ms.buf, ms.size, line, sizeof line);
        fputs(line, ms.f);
        if (memstream_finish(&ms, &buf, &size) < 0)
                return NULL;
        *ret_size = size;
        return buf;
}

/* "kind:rest": a lower-case kind, then printable ASCII without spaces (what speeds_identity() makes). */
static bool valid_id(const char *s) {
        size_t len = strlen(s), kind = strspn(s, "abcdefghijklmnopqrstuvwxyz-");

        if (len == 0 || len >= SPEEDS_ID_MAX || kind == 0 || s[kind] != ':' || s[kind + 1] == 0)
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p > '~')
                        return false;
        return true;
}

int speeds_parse(const char *buf, size_t size, speed_entry **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        _cleanup_free_ speed_entry *v = NULL;
        size_t n = 0, allocated = 0, line_no = 0, body_end = 0;
        bool have_version = false, have_checksum = false;
        char want[64], *checksum_line = NULL;

        if (ret_error)
                *ret_error = NULL;
        if (size > SPEEDS_FILE_MAX_BYTES)
                return error_printf(ret_error, -EBADMSG, "larger than %zu bytes", (size_t) SPEEDS_FILE_MAX_BYTES);
        if (memchr(buf, 0, size))
                return error_printf(ret_error, -EBADMSG, "contains a NUL byte");
        /* the input has no terminator of its own: work on a terminated copy only */
        copy = malloc(size + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, size);
        copy[size] = 0;

        for (char *line = copy, *next; line < copy + size; line = next) {
                char *w[5], *save = NULL;
                size_t nw = 0, offset = (size_t) (line - copy);
                speed_entry *e;

                next = strchr(line, '\n');
                if (!next)
                        return error_printf(ret_error, -EBADMSG, "line %zu: not terminated (the file is cut short)", line_no + 1);
                *next++ = 0;
                line_no++;
                if (have_checksum)
                        return error_printf(ret_error, -EBADMSG, "line %zu: text after the checksum line", line_no);
                if (line[0] == '#' || line[0] == 0)
                        continue;
                if (startswith(line, CHECKSUM_WORD)) {
                        checksum_line = line;
                        have_checksum = true;
                        body_end = offset;
                        continue;
                }
                for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                        if (nw == ELEMENTSOF(w))
                                return error_printf(ret_error, -EBADMSG, "line %zu: too many words", line_no);
                        w[nw++] = t;
                }
                if (!have_version) {
                        uint64_t version;
                        if (nw != 2 || strcmp(w[0], MAGIC) != 0 || parse_u64(w[1], &version) < 0)
                                return error_printf(ret_error, -EBADMSG, "line %zu: expected \"%s %d\" first (not a speeds file)",
                                            line_no, MAGIC, SPEEDS_FILE_VERSION);
                        if (version != SPEEDS_FILE_VERSION)
                                return error_printf(ret_error, -EBADMSG, "version %" PRIu64 ", this wbtuned reads version %d",
                                            version, SPEEDS_FILE_VERSION);
                        have_version = true;
                        continue;
                }
                if (nw != 4 || strcmp(w[0], "speed") != 0)
                        return error_printf(ret_error, -EBADMSG, "line %zu: expected \"speed BYTES_PER_S TIME ID\"", line_no);
                if (n >= SPEEDS_MAX_ENTRIES)
                        return error_printf(ret_error, -EBADMSG, "line %zu: more than %d devices", line_no, SPEEDS_MAX_ENTRIES);
                if (grow_array((void **) &v, &allocated, n, sizeof *v) < 0)
                        return -ENOMEM;
                e = &v[n];
                *e = (speed_entry) {};
                if (parse_u64(w[1], &e->bw_bytes_per_s) < 0 || e->bw_bytes_per_s == 0 ||
                    e->bw_bytes_per_s > SPEEDS_BW_MAX)
                        return error_printf(ret_error, -EBADMSG, "line %zu: bad speed \"%s\"", line_no, w[1]);
                if (parse_u64(w[2], &e->measured_realtime_s) < 0)
                        return error_printf(ret_error, -EBADMSG, "line %zu: bad time \"%s\"", line_no, w[2]);
                if (!valid_id(w[3]))
                        return error_printf(ret_error, -EBADMSG, "line %zu: bad device identity", line_no);
                memcpy(e->id, w[3], strlen(w[3]) + 1);
                if (speeds_find(v, n, e->id))
                        return error_printf(ret_error, -EBADMSG, "line %zu: %s listed twice", line_no, e->id);
                n++;
        }
        if (!have_version)
                return error_printf(ret_error, -EBADMSG, "no \"%s\" version line", MAGIC);
        if (!have_checksum)
                return error_printf(ret_error, -EBADMSG, "no checksum line (the file is cut short)");
        saved_file_checksum_line(buf, body_end, want, sizeof want);
        want[strcspn(want, "\n")] = 0;
        if (strcmp(checksum_line, want) != 0)
                return error_printf(ret_error, -EBADMSG, "checksum mismatch: the file was changed or damaged");
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int speeds_read(const char *path, speed_entry **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        r = state_file_load(path, SPEEDS_FILE_MAX_BYTES, &buf, &size, ret_error);
        if (r < 0)
                return r;
        return speeds_parse(buf, size, ret, ret_n, ret_error);
}

int speeds_write(const char *path, const speed_entry *v, size_t n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        buf = speeds_format(v, n, &size);
        if (!buf)
                return log_oom_error();
        return state_file_replace(path, buf, size);
}

speed_entry *speeds_find(speed_entry *v, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].id, id) == 0)
                        return &v[i];
        return NULL;
}

int speeds_update(speed_entry **v, size_t *n, size_t *allocated, const char *id, uint64_t bw_bytes_per_s,
                  uint64_t realtime_s) {
        speed_entry *e = speeds_find(*v, *n, id);
        uint64_t old;

        if (!e && *n >= SPEEDS_MAX_ENTRIES) {
                e = &(*v)[0];
                for (size_t i = 1; i < *n; i++)
                        if ((*v)[i].measured_realtime_s < e->measured_realtime_s)
                                e = &(*v)[i];
                *e = (speed_entry) {};
        } else if (!e) {
                if (grow_array((void **) v, allocated, *n, sizeof **v) < 0)
                        return -ENOMEM;
                e = &(*v)[(*n)++];
                *e = (speed_entry) {};
        }
        old = e->bw_bytes_per_s;
        snprintf(e->id, sizeof e->id, "%s", id);
        e->bw_bytes_per_s = bw_bytes_per_s;
        e->measured_realtime_s = realtime_s;
        return old == 0 || (double) bw_bytes_per_s * 100 >= (double) old * (100 + SPEEDS_NOTABLE_PERCENT) ||
               (double) bw_bytes_per_s * 100 <= (double) old * (100 - SPEEDS_NOTABLE_PERCENT);
}

/* ---- identities ------------------------------------------------------------------------------ */

/* kind ":" value, with bytes outside '!'..'~' and '%' as %XX. -ENAMETOOLONG if it does not fit. */
static int put_id(char *buf, size_t size, const char *kind, const char *value) {
        size_t len;

        if (snprintf(buf, size, "%s:", kind) >= (int) size)
                return -ENAMETOOLONG;
        len = strlen(buf);
        for (const unsigned char *p = (const unsigned char *) value; *p; p++) {
                bool plain = *p > ' ' && *p <= '~' && *p != '%';
                size_t need = plain ? 1 : 3;

                if (len + need >= size)
                        return -ENAMETOOLONG;
                if (plain)
                        buf[len++] = (char) *p;
                else
                        len += (size_t) snprintf(buf + len, size - len, "%%%02X", *p);
        }
        buf[len] = 0;
        return 0;
}

/* The first line of root + path, blanks trimmed; -ENOENT if missing or empty. */
static int read_attr(const char *root, const char *path, char *buf, size_t size) {
        _cleanup_free_ char *p = path_join_root(root, path);
        char *s;
        int r;

        if (!p)
                return -ENOMEM;
        r = read_one_line(p, buf, size);
        if (r < 0)
                return r;
        s = buf + strspn(buf, " \t");
        memmove(buf, s, strlen(s) + 1);
        for (size_t len = strlen(buf); len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'); len--)
                buf[len - 1] = 0;
        return buf[0] ? 0 : -ENOENT;
}

/* The smallest name in root + dir whose symlink's target ends in "/" + target (stable if there are
 * several); -ENOENT if none. */
static int link_to(const char *root, const char *dir, const char *target, char *buf, size_t size) {
        _cleanup_free_ char *p = path_join_root(root, dir);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        bool found = false;

        if (!p)
                return -ENOMEM;
        d = opendir(p);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char link[PATH_MAX];
                const char *base;
                ssize_t k;

                if (de->d_name[0] == '.')
                        continue;
                k = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
                if (k <= 0)
                        continue;
                link[k] = 0;
                base = strrchr(link, '/');
                base = base ? base + 1 : link;
                if (strcmp(base, target) != 0 || strlen(de->d_name) >= size)
                        continue;
                if (!found || strcmp(de->d_name, buf) < 0)
                        snprintf(buf, size, "%s", de->d_name);
                found = true;
        }
        return found ? 0 : -ENOENT;
}

/* A loop device: its backing file, and the file's st_dev:st_ino when it is reachable under root (a new
 * file at the same path is another device). */
static int loop_identity(const char *root, const char *name, char *buf, size_t size) {
        char rel[128], file[PATH_MAX], value[PATH_MAX + 64];
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int r;

        snprintf(rel, sizeof rel, "/sys/block/%s/loop/backing_file", name);
        r = read_attr(root, rel, file, sizeof file);
        if (r < 0)
                return r;
        p = path_join_root(root, file);
        if (p && stat(p, &st) == 0)
                snprintf(value, sizeof value, "%s@%u:%u:%" PRIu64, file, major(st.st_dev), minor(st.st_dev),
                         (uint64_t) st.st_ino);
        else
                snprintf(value, sizeof value, "%s", file);
        return put_id(buf, size, "loop", value);
}

/* An NFS mount of this anonymous device: "server:/export" from mountinfo's source field. */
static int nfs_identity(const char *root, const bdi_device *d, char *buf, size_t size) {
        _cleanup_free_ char *p = path_join_root(root, "/proc/self/mountinfo"), *text = NULL;
        char devnum[32], *save = NULL;
        size_t text_size;
        int r;

        if (!p)
                return -ENOMEM;
        r = read_file_full(p, &text, &text_size);
        if (r < 0)
                return r;
        snprintf(devnum, sizeof devnum, "%u:%u", d->major, d->minor);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *w[64], *wsave = NULL;
                size_t nw = 0, dash;

                for (char *t = strtok_r(line, " ", &wsave); t && nw < ELEMENTSOF(w); t = strtok_r(NULL, " ", &wsave))
                        w[nw++] = t;
                if (nw < 10 || strcmp(w[2], devnum) != 0)
                        continue;
                for (dash = 6; dash < nw && strcmp(w[dash], "-") != 0; dash++)
                        ;
                if (dash + 2 >= nw || !startswith(w[dash + 1], "nfs"))
                        continue;
                return put_id(buf, size, "nfs", w[dash + 2]);
        }
        return -ENOENT;
}

/* A btrfs BDI ("btrfs-1"): the uuid whose /sys/fs/btrfs/<uuid>/bdi links to it. */
static int btrfs_identity(const char *root, const bdi_device *d, char *buf, size_t size) {
        _cleanup_free_ char *p = path_join_root(root, "/sys/fs/btrfs");
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *de;

        if (!p)
                return -ENOMEM;
        dir = opendir(p);
        if (!dir)
                return -errno;
        while ((de = readdir(dir))) {
                char rel[NAME_MAX + 8], link[PATH_MAX];
                const char *base;
                ssize_t k;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(rel, sizeof rel, "%s/bdi", de->d_name);
                k = readlinkat(dirfd(dir), rel, link, sizeof link - 1);
                if (k <= 0)
                        continue;
                link[k] = 0;
                base = strrchr(link, '/');
                if (base && strcmp(base + 1, d->bdi) == 0)
                        return put_id(buf, size, "uuid", de->d_name);
        }
        return -ENOENT;
}

int speeds_identity(const char *root, const bdi_device *d, char *buf, size_t size) {
        static const struct {
                const char *file, *kind;
        } attrs[] = {
                { "dm/uuid",       "dm" },      /* LVM, LUKS: the mapping's own uuid */
                { "device/wwid",   "wwid" },    /* SCSI/SATA: naa./t10./eui. */
                { "wwid",          "wwid" },    /* NVMe namespaces */
                { "device/wwn",    "wwn" },
                { "device/serial", "serial" },  /* NVMe controllers, USB mass storage (with the model) */
                { "serial",        "serial" },  /* virtio */
        };
        char name[64], value[256], rel[256];
        int r;

        if (d->traits & BDI_TRAIT_NFS)
                return nfs_identity(root, d, buf, size);
        if (startswith(d->bdi, "btrfs-"))
                return btrfs_identity(root, d, buf, size);
        if (!d->has_devnum || d->major == 0)
                return -ENOENT;   /* fuse, tmpfs, an anonymous device that is not NFS: nothing stable */
        /* the whole disk's name as sysfs has it (d->name may carry more for people) */
        snprintf(name, sizeof name, "%s", d->name);
        if (!name[0] || strchr(name, '/') || name[0] == '.')
                return -ENOENT;
        if (startswith(name, "loop")) {
                r = loop_identity(root, name, buf, size);
                if (r != -ENOENT)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
                snprintf(rel, sizeof rel, "/sys/block/%s/%s", name, attrs[i].file);
                if (read_attr(root, rel, value, sizeof value) < 0)
                        continue;
                if (strcmp(attrs[i].kind, "serial") == 0 && d->model[0]) {
                        char both[sizeof value + sizeof d->model + 1];

                        snprintf(both, sizeof both, "%s:%s", d->model, value);
                        return put_id(buf, size, attrs[i].kind, both);
                }
                return put_id(buf, size, attrs[i].kind, value);
        }
        if (link_to(root, "/dev/disk/by-id", name, value, sizeof value) == 0)
                return put_id(buf, size, "by-id", value);
        /* the fallback: the filesystem on the whole device */
        if (link_to(root, "/dev/disk/by-uuid", name, value, sizeof value) == 0)
                return put_id(buf, size, "uuid", value);
        return -ENOENT;
}

/* ---- the daemon's store ------------------------------------------------------------------------ */

typedef struct device_identity {
        char bdi[64];
        char name[64];            /* the device's name and traits when id was read: a change reads it again */
        unsigned traits;
        char id[SPEEDS_ID_MAX];   /* "" if the device has none */
        uint64_t read_usec;
        size_t index;             /* its entry in the store, if entries[index].id is id */
} device_identity;

struct speeds_store {
        char *root, *path;
        bool save, dirty;         /* dirty: a speed changed notably since the last save */
        bool changed;             /* any measurement taken since the last save */
        uint64_t saved_usec;
        speed_entry *v;
        size_t n, allocated;
        device_identity *ids;     /* one per device of the last sample, in its order (by number) */
        size_t n_ids;
};

static int identity_cmp(const void *key, const void *elem) {
        return strcmp(key, ((const device_identity *) elem)->bdi);
}

static int identity_sort_cmp(const void *a, const void *b) {
        return strcmp(((const device_identity *) a)->bdi, ((const device_identity *) b)->bdi);
}

int speeds_store_new(const char *root, const char *path, bool save, speeds_store **ret) {
        speeds_store *st = calloc(1, sizeof *st);
        _cleanup_free_ char *why = NULL;
        int r;

        if (!st)
                return -ENOMEM;
        st->root = root ? xstrdup(root) : NULL;
        st->path = xstrdup(path);
        st->save = save;
        r = speeds_read(path, &st->v, &st->n, &why);
        if (r == -ENOMEM) {
                speeds_store_free(st);
                return r;
        }
        if (r == -ENOENT)
                log_debug("No remembered speeds in %s: every device is measured afresh.", path);
        else if (r < 0)
                /* only a prior: the daemon measures every device again, and the next save replaces it */
                log_warning("Not using the remembered speeds in %s (%s): measuring every device afresh.", path,
                            why ? why : strerror(-r));
        else {
                st->allocated = st->n;
                log_info("Remembered the speeds of %zu device(s) from %s.", st->n, path);
        }
        *ret = st;
        return 0;
}

speeds_store *speeds_store_free(speeds_store *st) {
        if (!st)
                return NULL;
        free(st->root);
        free(st->path);
        free(st->v);
        free(st->ids);
        free(st);
        return NULL;
}

size_t speeds_store_size(const speeds_store *st) {
        return st ? st->n : 0;
}

static speed_entry *identity_entry(speeds_store *st, device_identity *di) {
        speed_entry *e;

        if (!di->id[0])
                return NULL;
        if (di->index < st->n && strcmp(st->v[di->index].id, di->id) == 0)
                return &st->v[di->index];
        e = speeds_find(st->v, st->n, di->id);
        if (e)
                di->index = (size_t) (e - st->v);
        return e;
}

void speeds_store_prior(speeds_store *st, sample *s) {
        device_identity *next;

        if (!st)
                return;
        next = calloc(MAX(s->n_devices, 1), sizeof *next);
        if (!next) {
                log_debug("No memory for the devices' identities this tick.");
                return;
        }
        /* st->ids is in the last sample's order (observe's, by number: 7:0 before 253:0), not strcmp's */
        if (st->n_ids > 0)
                qsort(st->ids, st->n_ids, sizeof *st->ids, identity_sort_cmp);
        for (size_t i = 0; i < s->n_devices; i++) {
                bdi_device *d = &s->devices[i];
                const device_identity *old = st->n_ids == 0 ? NULL :
                        bsearch(d->bdi, st->ids, st->n_ids, sizeof *st->ids, identity_cmp);
                device_identity *di = &next[i];
                const speed_entry *e;

                /* an anonymous number outlives its mount: nameless between an unmount and a mount */
                if (old && s->time_usec < old->read_usec + SPEEDS_IDENTITY_MAX_AGE_USEC &&
                    strcmp(old->name, d->name) == 0 && old->traits == d->traits)
                        *di = *old;
                else {
                        int r;

                        snprintf(di->bdi, sizeof di->bdi, "%s", d->bdi);
                        snprintf(di->name, sizeof di->name, "%s", d->name);
                        di->traits = d->traits;
                        di->read_usec = s->time_usec;
                        di->index = SIZE_MAX;
                        r = speeds_identity(st->root, d, di->id, sizeof di->id);
                        if (r < 0) {
                                di->id[0] = 0;
                                if (!old && r != -ENOENT)
                                        log_debug_errno(r, "No identity for %s (%s), its speed is not remembered: %m",
                                                        d->bdi, d->name);
                        }
                }
                e = identity_entry(st, di);
                d->remembered_bw_bytes_per_s = e ? e->bw_bytes_per_s : 0;
                d->remembered_age_s = e && s->realtime_usec / 1000000 > e->measured_realtime_s ?
                                      s->realtime_usec / 1000000 - e->measured_realtime_s : 0;
        }
        free(st->ids);
        st->ids = next;
        st->n_ids = s->n_devices;
}

void speeds_store_learn(speeds_store *st, const sample *s, const decision *d) {
        if (!st)
                return;
        for (size_t i = 0; i < d->n_devices && i < st->n_ids; i++) {
                const device_decision *dd = &d->devices[i];
                device_identity *di = &st->ids[i];
                int r;

                if (!dd->managed || !dd->active || dd->bw_source != SPEED_MEASURED || !di->id[0] ||
                    strcmp(di->bdi, dd->bdi) != 0 || dd->bw_bytes_per_s == 0 || dd->bw_bytes_per_s > SPEEDS_BW_MAX)
                        continue;
                r = speeds_update(&st->v, &st->n, &st->allocated, di->id, dd->bw_bytes_per_s,
                                  s->realtime_usec / 1000000);
                if (r < 0) {
                        log_debug("No memory to remember the speed of %s.", dd->bdi);
                        continue;
                }
                st->changed = true;
                if (r > 0)
                        st->dirty = true;
        }
        if (st->dirty && st->save && (st->saved_usec == 0 || s->time_usec >= st->saved_usec + SPEEDS_SAVE_USEC)) {
                st->saved_usec = s->time_usec;
                (void) speeds_store_flush(st);
        }
}

int speeds_store_flush(speeds_store *st) {
        int r;

        if (!st || !st->save || !st->changed)
                return 0;
        r = speeds_write(st->path, st->v, st->n);
        if (r >= 0)
                st->dirty = st->changed = false;
        return r;
}
