/* Naming BDIs the way an admin knows them: block device, mounts, filesystem, traits. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devnames.h"
#include "log.h"
#include "util.h"

static bool streq_ptr(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* mountinfo escapes space, tab, newline and backslash as \ooo; decode in place. */
static void unescape_octal(char *s) {
        char *w = s;

        for (const char *r = s; *r; ) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
                    r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = '\0';
}

static void mount_entry_done(mount_entry *e) {
        free(e->mount_point);
        free(e->fstype);
        free(e->source);
}

/* One mountinfo line: "id parent MAJ:MIN root mountpoint opts [optional...] - fstype source superopts". */
static int parse_mountinfo_line(char *line, mount_entry *ret) {
        char *fields[6] = {}, *save = NULL, *tok;
        unsigned major, minor;
        size_t n = 0;
        bool dash = false;
        char *fstype = NULL, *source = NULL;

        for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                if (n < 5)
                        fields[n++] = tok;
                else if (!dash) {
                        if (strcmp(tok, "-") == 0)
                                dash = true;
                } else if (!fstype)
                        fstype = tok;
                else if (!source) {
                        source = tok;
                        break;
                }
        }
        if (n < 5 || !fstype || !source)
                return -EINVAL;
        if (sscanf(fields[2], "%u:%u", &major, &minor) != 2)
                return -EINVAL;

        unescape_octal(fields[4]);
        unescape_octal(fstype);
        unescape_octal(source);

        *ret = (mount_entry) {
                .major = major,
                .minor = minor,
                .mount_point = xstrdup(fields[4]),
                .fstype = xstrdup(fstype),
                .source = xstrdup(source),
        };
        return 0;
}

int mount_table_read(const char *root, mount_table *ret) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        mount_table t = {};
        char *line, *save = NULL;
        int r;

        path = path_join_root(root, "/proc/self/mountinfo");
        if (!path)
                return -ENOMEM;
        r = read_file_full(path, &buf, NULL);
        if (r < 0)
                return r;

        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                mount_entry e, *n;

                if (parse_mountinfo_line(line, &e) < 0) {
                        log_debug("Ignoring malformed line in %s", path);
                        continue;
                }
                n = realloc(t.entries, (t.n_entries + 1) * sizeof(*n));
                if (!n) {
                        mount_entry_done(&e);
                        mount_table_done(&t);
                        return -ENOMEM;
                }
                t.entries = n;
                t.entries[t.n_entries++] = e;
        }

        *ret = t;
        return 0;
}

void mount_table_done(mount_table *t) {
        for (size_t i = 0; i < t->n_entries; i++)
                mount_entry_done(&t->entries[i]);
        free(t->entries);
        *t = (mount_table) {};
}

static void strscpy(char *dst, size_t size, const char *src) {
        snprintf(dst, size, "%s", src);
}

/* <root>/sys/dev/block/MAJ:MIN is a symlink to the device dir: ".../block/sda/sda1".
 * Returns the link target (empty if not a symlink, e.g. in a plain fake tree). */
static int read_devlink(const char *root, unsigned major, unsigned minor, char *target, size_t size) {
        char rel[64];
        _cleanup_free_ char *path = NULL;
        ssize_t n;

        snprintf(rel, sizeof(rel), "/sys/dev/block/%u:%u", major, minor);
        path = path_join_root(root, rel);
        if (!path)
                return -ENOMEM;
        n = readlink(path, target, size - 1);
        if (n < 0) {
                if (errno == EINVAL) {          /* a directory, not a link */
                        target[0] = '\0';
                        return 0;
                }
                return -errno;
        }
        if ((size_t) n >= size - 1)
                return -ENAMETOOLONG;
        target[n] = '\0';
        return 0;
}

static int read_block_attr(const char *root, unsigned major, unsigned minor, const char *attr,
                           char *buf, size_t size) {
        char rel[128];
        _cleanup_free_ char *path = NULL;

        snprintf(rel, sizeof(rel), "/sys/dev/block/%u:%u/%s", major, minor, attr);
        path = path_join_root(root, rel);
        if (!path)
                return -ENOMEM;
        return read_one_line(path, buf, size);
}

/* Kernel name of a block device ("sda1") and of its whole disk ("sda"); the disk is the
 * same device unless it has a "partition" attribute. */
typedef struct blockdev_info {
        char name[64];
        char disk[64];
        bool is_partition;
        bool usb;
} blockdev_info;

static int blockdev_lookup(const char *root, unsigned major, unsigned minor, blockdev_info *ret) {
        char target[PATH_MAX], buf[256];
        blockdev_info info = {};
        const char *base;
        int r;

        r = read_devlink(root, major, minor, target, sizeof(target));
        if (r < 0)
                return r;

        if (target[0]) {
                char *slash;

                base = strrchr(target, '/');
                strscpy(info.name, sizeof(info.name), base ? base + 1 : target);
                info.usb = strstr(target, "/usb") != NULL;

                if (read_block_attr(root, major, minor, "partition", buf, sizeof(buf)) >= 0) {
                        info.is_partition = true;
                        if (base) {
                                *(char *) base = '\0';
                                slash = strrchr(target, '/');
                                strscpy(info.disk, sizeof(info.disk), slash ? slash + 1 : target);
                        }
                }
        } else {
                /* Not a symlink (fake tree): the name is in uevent as DEVNAME=. */
                _cleanup_free_ char *path = NULL, *uevent = NULL;
                char rel[96];
                const char *p;

                snprintf(rel, sizeof(rel), "/sys/dev/block/%u:%u/uevent", major, minor);
                path = path_join_root(root, rel);
                if (!path)
                        return -ENOMEM;
                r = read_file_full(path, &uevent, NULL);
                if (r < 0)
                        return r;
                p = strstr(uevent, "DEVNAME=");
                if (!p)
                        return -ENODATA;
                p += strlen("DEVNAME=");
                snprintf(info.name, sizeof(info.name), "%.*s", (int) strcspn(p, "\n"), p);
        }

        if (!info.disk[0])
                strscpy(info.disk, sizeof(info.disk), info.name);
        *ret = info;
        return 0;
}

static int strv_push(char ***strv, size_t *n, const char *s) {
        char **v = realloc(*strv, (*n + 2) * sizeof(char *));

        if (!v)
                return -ENOMEM;
        v[*n] = xstrdup(s);
        v[*n + 1] = NULL;
        *strv = v;
        (*n)++;
        return 0;
}

static int add_mount(bdi_device *d, const mount_entry *e) {
        if (!d->fstype[0])
                strscpy(d->fstype, sizeof(d->fstype), e->fstype);
        return strv_push(&d->mounts, &d->n_mounts, e->mount_point);
}

/* Does the mount's st_dev belong to the whole disk named disk? (sda1 8:1 -> sda) */
static bool mount_on_disk(const char *root, const mount_entry *e, const char *disk) {
        blockdev_info info;

        if (e->major == 0)
                return false;
        if (blockdev_lookup(root, e->major, e->minor, &info) < 0)
                return false;
        return streq_ptr(info.disk, disk);
}

static bool starts_with(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static unsigned fstype_traits(const char *fstype) {
        if (streq_ptr(fstype, "nfs") || streq_ptr(fstype, "nfs4"))
                return BDI_TRAIT_NFS;
        if (starts_with(fstype, "fuse"))
                return BDI_TRAIT_FUSE;
        return 0;
}

static void trim(char *s) {
        size_t n = strlen(s), i = 0;

        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = '\0';
        while (isspace((unsigned char) s[i]))
                i++;
        memmove(s, s + i, n - i + 1);
}

/* Traits and model of a disk from its sysfs dir (the one /sys/block/<disk> points to);
 * a partition's dir sits inside its disk's. */
static void describe_disk(const char *root, unsigned major, unsigned minor, const blockdev_info *info,
                          bdi_device *d) {
        const char *up = info->is_partition ? "../" : "";
        char buf[256], attr[64];
        uint64_t v;

        snprintf(attr, sizeof(attr), "%squeue/rotational", up);
        if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0 &&
            parse_u64(buf, &v) >= 0 && v > 0)
                d->traits |= BDI_TRAIT_ROTATIONAL;
        snprintf(attr, sizeof(attr), "%sremovable", up);
        if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0 &&
            parse_u64(buf, &v) >= 0 && v > 0)
                d->traits |= BDI_TRAIT_REMOVABLE;
        if (info->usb)
                d->traits |= BDI_TRAIT_USB;
        snprintf(attr, sizeof(attr), "%sdevice/model", up);
        if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0) {
                trim(buf);
                strscpy(d->model, sizeof(d->model), buf);
        }
}

/* btrfs BDIs are "btrfs-N": find the fs whose <uuid>/bdi links to it; fill its devices' names. */
static int btrfs_devices(const char *root, const char *bdi, char ***ret, size_t *ret_n) {
        _cleanup_free_ char *fsdir = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *de;

        fsdir = path_join_root(root, "/sys/fs/btrfs");
        if (!fsdir)
                return -ENOMEM;
        dir = opendir(fsdir);
        if (!dir)
                return -errno;

        while ((de = readdir(dir))) {
                char link[PATH_MAX], target[PATH_MAX];
                _cleanup_closedir_ DIR *devs = NULL;
                struct dirent *dd;
                const char *base;
                ssize_t n;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(link, sizeof(link), "%s/%s/bdi", fsdir, de->d_name);
                n = readlink(link, target, sizeof(target) - 1);
                if (n < 0)
                        continue;
                target[n] = '\0';
                base = strrchr(target, '/');
                if (!streq_ptr(base ? base + 1 : target, bdi))
                        continue;

                snprintf(link, sizeof(link), "%s/%s/devices", fsdir, de->d_name);
                devs = opendir(link);
                if (!devs)
                        return -errno;
                while ((dd = readdir(devs))) {
                        int r;

                        if (dd->d_name[0] == '.')
                                continue;
                        r = strv_push(ret, ret_n, dd->d_name);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        return -ENOENT;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int describe_btrfs(const char *root, const mount_table *mounts, bdi_device *d) {
        char **devs = NULL;
        size_t n_devs = 0;
        int r;

        r = btrfs_devices(root, d->bdi, &devs, &n_devs);
        if (r < 0 || n_devs == 0) {
                for (size_t i = 0; i < n_devs; i++)
                        free(devs[i]);
                free(devs);
                if (r == -ENOMEM)
                        return r;
                log_debug_errno(r, "No btrfs devices found for %s: %m", d->bdi);
                return 0;
        }
        qsort(devs, n_devs, sizeof(char *), cmp_str);
        strscpy(d->name, sizeof(d->name), devs[0]);

        for (size_t i = 0; i < mounts->n_entries && r >= 0; i++) {
                const mount_entry *e = &mounts->entries[i];

                if (!starts_with(e->source, "/dev/"))
                        continue;
                for (size_t j = 0; j < n_devs; j++)
                        if (streq_ptr(e->source + strlen("/dev/"), devs[j])) {
                                r = add_mount(d, e);
                                break;
                        }
        }

        /* Device number, traits and model come from the first member device's disk. */
        if (r >= 0) {
                char rel[PATH_MAX], buf[64];
                _cleanup_free_ char *path = NULL;
                unsigned major, minor;
                blockdev_info info;

                snprintf(rel, sizeof(rel), "/sys/class/block/%s/dev", devs[0]);
                path = path_join_root(root, rel);
                if (!path)
                        r = -ENOMEM;
                else if (read_one_line(path, buf, sizeof(buf)) >= 0 &&
                         sscanf(buf, "%u:%u", &major, &minor) == 2) {
                        d->major = major;
                        d->minor = minor;
                        d->has_devnum = true;
                        if (blockdev_lookup(root, major, minor, &info) >= 0)
                                describe_disk(root, major, minor, &info, d);
                }
        }

        for (size_t i = 0; i < n_devs; i++)
                free(devs[i]);
        free(devs);
        return r < 0 ? r : 0;
}

int devnames_describe(const char *root, const mount_table *mounts, bdi_device *d) {
        blockdev_info info;
        int r = 0;

        d->name[0] = d->fstype[0] = d->model[0] = '\0';
        d->traits = 0;
        for (size_t i = 0; i < d->n_mounts; i++)
                free(d->mounts[i]);
        free(d->mounts);
        d->mounts = NULL;
        d->n_mounts = 0;

        if (starts_with(d->bdi, "btrfs-"))
                r = describe_btrfs(root, mounts, d);
        else if (d->has_devnum && blockdev_lookup(root, d->major, d->minor, &info) >= 0) {
                strscpy(d->name, sizeof(d->name), info.name);
                for (size_t i = 0; i < mounts->n_entries && r >= 0; i++) {
                        const mount_entry *e = &mounts->entries[i];

                        if ((e->major == d->major && e->minor == d->minor) ||
                            mount_on_disk(root, e, info.disk))
                                r = add_mount(d, e);
                }
                describe_disk(root, d->major, d->minor, &info, d);
        } else if (d->has_devnum) {
                /* No block device: nfs, fuse and other anonymous devices, matched by st_dev. */
                const mount_entry *first = NULL;

                for (size_t i = 0; i < mounts->n_entries && r >= 0; i++) {
                        const mount_entry *e = &mounts->entries[i];

                        if (e->major != d->major || e->minor != d->minor)
                                continue;
                        if (!first)
                                first = e;
                        r = add_mount(d, e);
                }
                if (first)
                        snprintf(d->name, sizeof(d->name), "%s %s", first->fstype, first->source);
        }
        if (r < 0)
                return r;
        /* Consumers may walk mounts without checking n_mounts: never leave it NULL. */
        if (!d->mounts) {
                d->mounts = calloc(1, sizeof(char *));
                if (!d->mounts)
                        return -ENOMEM;
        }

        d->traits |= fstype_traits(d->fstype);
        if (!d->name[0])
                strscpy(d->name, sizeof(d->name), d->bdi);
        return 0;
}
