/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Naming BDIs the way an admin knows them: block device, mounts, filesystem, traits. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>
#include <libmount.h>

#include "devnames.h"
#include "log.h"
#include "util.h"

static bool streq_ptr(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
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

/* ---- the mount table, parsed when the mounts change ------------------------------------- */

/* A device's mounts of its whole filesystem come before its bind mounts, each in mountinfo order. */
static int cmp_whole_fs_first(const mount_entry *x, const mount_entry *y) {
        if (x->whole_fs != y->whole_fs)
                return x->whole_fs ? -1 : 1;
        return x < y ? -1 : x > y;      /* entries is one array: address order is mountinfo order */
}

static int cmp_devnum(const void *a, const void *b) {
        const mount_entry *x = *(const mount_entry *const *) a, *y = *(const mount_entry *const *) b;

        if (x->major != y->major)
                return x->major < y->major ? -1 : 1;
        if (x->minor != y->minor)
                return x->minor < y->minor ? -1 : 1;
        return cmp_whole_fs_first(x, y);
}

static int cmp_disk(const void *a, const void *b) {
        const mount_entry *x = *(const mount_entry *const *) a, *y = *(const mount_entry *const *) b;
        int c = strcmp(x->disk, y->disk);

        return c != 0 ? c : cmp_whole_fs_first(x, y);
}

static int cmp_btrfs(const void *a, const void *b) {
        return strcmp(((const btrfs_fs *) a)->bdi, ((const btrfs_fs *) b)->bdi);
}

/* Index the entries; look each distinct st_dev up in sysfs once (a disk has many mounts). */
static const disk_facts *disk_facts_get(const char *root, disk_cache *c, unsigned major, unsigned minor,
                                        disk_facts *buf);

static int mount_table_index(const char *root, disk_cache *cache, mount_table *t) {
        size_t n = MAX(t->n_entries, 1);

        t->by_devnum = calloc(n, sizeof(t->by_devnum[0]));
        t->by_disk = calloc(n, sizeof(t->by_disk[0]));
        if (!t->by_devnum || !t->by_disk)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_entries; i++)
                t->by_devnum[i] = &t->entries[i];
        qsort(t->by_devnum, t->n_entries, sizeof(t->by_devnum[0]), cmp_devnum);

        for (size_t i = 0; i < t->n_entries; ) {
                const mount_entry *e = t->by_devnum[i];
                const char *disk = "";
                disk_facts buf;
                size_t j;

                /* anonymous st_dev (nfs, btrfs, tmpfs) has no block device */
                if (e->major != 0) {
                        const disk_facts *f = disk_facts_get(root, cache, e->major, e->minor, &buf);

                        if (f->lookup_r >= 0)
                                disk = f->disk;
                }
                for (j = i; j < t->n_entries && t->by_devnum[j]->major == e->major &&
                            t->by_devnum[j]->minor == e->minor; j++) {
                        mount_entry *m = (mount_entry *) t->by_devnum[j];

                        strscpy(m->disk, sizeof(m->disk), disk);
                        if (m->disk[0])
                                t->by_disk[t->n_by_disk++] = m;
                }
                i = j;
        }
        qsort(t->by_disk, t->n_by_disk, sizeof(t->by_disk[0]), cmp_disk);
        return 0;
}

/* Every btrfs filesystem's BDI, from the <uuid>/bdi links; none if there is no /sys/fs/btrfs. */
static int btrfs_table_read(const char *root, mount_table *t) {
        _cleanup_free_ char *fsdir = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *de;

        fsdir = path_join_root(root, "/sys/fs/btrfs");
        if (!fsdir)
                return -ENOMEM;
        dir = opendir(fsdir);
        if (!dir)
                return 0;

        while ((de = readdir(dir))) {
                char link[PATH_MAX], target[PATH_MAX];
                const char *base;
                btrfs_fs *n;
                ssize_t len;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(link, sizeof(link), "%s/%s/bdi", fsdir, de->d_name);
                len = readlink(link, target, sizeof(target) - 1);
                if (len < 0)
                        continue;          /* "features" and other non-filesystem dirs */
                target[len] = '\0';
                base = strrchr(target, '/');
                base = base ? base + 1 : target;
                if (strlen(base) >= sizeof(n->bdi))
                        continue;          /* no BDI has such a name (observe skips them too) */
                n = realloc(t->btrfs, (t->n_btrfs + 1) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                t->btrfs = n;
                memcpy(n[t->n_btrfs].bdi, base, strlen(base) + 1);
                n[t->n_btrfs++].uuid = xstrdup(de->d_name);
        }
        if (t->n_btrfs > 1)     /* qsort() must not get the NULL of an empty list */
                qsort(t->btrfs, t->n_btrfs, sizeof(t->btrfs[0]), cmp_btrfs);
        return 0;
}

/* ---- mountinfo, through libmount; which mounts a path can reach ---------------------------- */

/* A mount as visibility needs it: mountinfo's id, parent id and mount point. */
typedef struct mount_node {
        int id, parent_id;
        const char *target;
        size_t parent;          /* index of the parent's node, SIZE_MAX if it is not in the table */
        bool overmounted;       /* a mount of its own sits on its mount point */
        bool blocked;           /* its mount point is out of reach from its parent (see node_blocked()) */
        enum { NODE_UNKNOWN, NODE_VISITING, NODE_PLACED, NODE_HIDDEN } state;   /* mount point reachable? */
} mount_node;

static int cmp_node_id(const void *a, const void *b) {
        const mount_node *x = *(const mount_node *const *) a, *y = *(const mount_node *const *) b;

        return x->id != y->id ? (x->id < y->id ? -1 : 1) : (x < y ? -1 : x > y);
}

/* A place to mount: a parent mount and a path, whose first len bytes count. */
typedef struct mount_place {
        int parent_id;
        const char *target;
        size_t len;
} mount_place;

static int cmp_place(const mount_place *p, const mount_node *n) {
        int c;

        if (p->parent_id != n->parent_id)
                return p->parent_id < n->parent_id ? -1 : 1;
        c = strncmp(p->target, n->target, p->len);
        return c != 0 ? c : n->target[p->len] == '\0' ? 0 : -1;
}

static int cmp_node_place(const void *a, const void *b) {
        const mount_node *x = *(const mount_node *const *) a, *y = *(const mount_node *const *) b;
        int c = cmp_place(&(mount_place) { x->parent_id, x->target, strlen(x->target) }, y);

        return c != 0 ? c : x < y ? -1 : x > y;  /* nodes is one array: address order is mountinfo order */
}

/* The last node (in mountinfo order) mounted at place, NULL if none. */
static const mount_node *node_at(const mount_node *const *by_place, size_t n, mount_place place) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (cmp_place(&place, by_place[mid]) >= 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && cmp_place(&place, by_place[lo - 1]) == 0 ? by_place[lo - 1] : NULL;
}

/* Whether nodes[i]'s mount point cannot be reached from its parent, even when the parent's can: a later
 * mount beside it sits on the same mount point, or a mount beside it on a directory above its mount point
 * (nspawn's /run/host over /run's own /run/host/incoming), or the parent is mounted over by another mount
 * (the kernel stacks /dev/pts twice: what hangs from the lower one is out of reach). */
static bool node_blocked(const mount_node *nodes, size_t i, const mount_node *const *by_place, size_t n) {
        const mount_node *m = &nodes[i], *beside;
        size_t len = strlen(m->target);

        if (m->parent == SIZE_MAX)      /* the root: what is beside it is not known */
                return false;
        if (nodes[m->parent].overmounted && strcmp(nodes[m->parent].target, m->target) != 0)
                return true;
        beside = node_at(by_place, n, (mount_place) { m->parent_id, m->target, len });
        if (beside && beside > m)
                return true;
        for (size_t k = len; k-- > 1; )          /* "/run/host/incoming": "/run/host", "/run" */
                if (m->target[k] == '/' && node_at(by_place, n, (mount_place) { m->parent_id, m->target, k }))
                        return true;
        return len > 1 && node_at(by_place, n, (mount_place) { m->parent_id, "/", 1 });
}

/* Mark where each node's mount point is reachable: it and every mount it hangs from are not blocked.
 * It is visible where it is also not overmounted. Pure. */
static int mark_hidden(mount_node *nodes, size_t n) {
        _cleanup_free_ const mount_node **by_id = calloc(MAX(n, 1), sizeof(*by_id));
        _cleanup_free_ const mount_node **by_place = calloc(MAX(n, 1), sizeof(*by_place));
        _cleanup_free_ size_t *chain = calloc(MAX(n, 1), sizeof(*chain));

        if (!by_id || !by_place || !chain)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                by_id[i] = by_place[i] = &nodes[i];
        qsort(by_id, n, sizeof(by_id[0]), cmp_node_id);
        qsort(by_place, n, sizeof(by_place[0]), cmp_node_place);

        for (size_t i = 0; i < n; i++) {
                size_t lo = 0, hi = n;

                while (lo < hi) {       /* the first node with the parent's id */
                        size_t mid = (lo + hi) / 2;

                        if (by_id[mid]->id < nodes[i].parent_id)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                nodes[i].parent = lo < n && by_id[lo]->id == nodes[i].parent_id && by_id[lo] != &nodes[i] ?
                                  (size_t) (by_id[lo] - nodes) : SIZE_MAX;
        }
        for (size_t i = 0; i < n; i++)
                nodes[i].overmounted = node_at(by_place, n, (mount_place) { nodes[i].id, nodes[i].target,
                                                                            strlen(nodes[i].target) }) != NULL;
        for (size_t i = 0; i < n; i++)
                nodes[i].blocked = node_blocked(nodes, i, by_place, n);

        /* Walk up to a blocked node, the root or a node already marked; mark the way back down. A loop
         * of parents (only in a broken file) ends where it meets itself. */
        for (size_t i = 0; i < n; i++) {
                size_t len = 0, k = i;
                bool hidden;

                while (nodes[k].state == NODE_UNKNOWN) {
                        nodes[k].state = NODE_VISITING;
                        chain[len++] = k;
                        if (nodes[k].blocked || nodes[k].parent == SIZE_MAX)
                                break;
                        k = nodes[k].parent;
                }
                hidden = nodes[k].state == NODE_HIDDEN || (nodes[k].state == NODE_VISITING && nodes[k].blocked);
                while (len > 0)
                        nodes[chain[--len]].state = hidden ? NODE_HIDDEN : NODE_PLACED;
        }
        return 0;
}

static int skip_malformed_line(struct libmnt_table *tb, const char *filename, int line) {
        log_debug("Ignoring malformed line %d in %s", line, filename);
        return 1;
}

/* Parse mountinfo (read by us, so that tests can fail its reads) with libmount; keep the mounts a path
 * can reach. */
static int mount_table_parse(const char *root, mount_table *t) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_free_ mount_node *nodes = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct libmnt_iter *iter = NULL;
        struct libmnt_fs *fs;
        size_t size = 0, n = 0;
        int r;

        path = path_join_root(root, "/proc/self/mountinfo");
        if (!path)
                return -ENOMEM;
        r = read_file_full(path, &buf, &size);
        if (r < 0)
                return r;
        t->mnt = mnt_new_table();
        if (!t->mnt)
                return -ENOMEM;
        if (size == 0)
                return 0;
        f = fmemopen(buf, size, "r");
        if (!f)
                return -errno;
        mnt_table_set_parser_errcb(t->mnt, skip_malformed_line);
        r = mnt_table_parse_stream(t->mnt, f, path);
        if (r < 0)
                return r;

        nodes = calloc(MAX(mnt_table_get_nents(t->mnt), 1), sizeof(*nodes));
        t->entries = calloc(MAX(mnt_table_get_nents(t->mnt), 1), sizeof(*t->entries));
        iter = mnt_new_iter(MNT_ITER_FORWARD);
        if (!nodes || !t->entries || !iter) {
                mnt_free_iter(iter);
                return -ENOMEM;
        }
        for (; mnt_table_next_fs(t->mnt, iter, &fs) == 0; n++) {
                /* libmount takes a file whose first line is not mountinfo for an fstab */
                if (!mnt_fs_is_kernel(fs)) {
                        mnt_free_iter(iter);
                        log_debug("%s is not in the mountinfo format", path);
                        return -EBADMSG;
                }
                nodes[n] = (mount_node) {
                        .id = mnt_fs_get_id(fs),
                        .parent_id = mnt_fs_get_parent_id(fs),
                        .target = mnt_fs_get_target(fs),
                };
                t->entries[n] = (mount_entry) {
                        .major = major(mnt_fs_get_devno(fs)),
                        .minor = minor(mnt_fs_get_devno(fs)),
                        .mount_point = mnt_fs_get_target(fs),
                        .fstype = mnt_fs_get_fstype(fs),
                        .source = mnt_fs_get_source(fs) ?: "",
                        .whole_fs = streq_ptr(mnt_fs_get_root(fs), "/"),
                };
        }
        mnt_free_iter(iter);
        r = mark_hidden(nodes, n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (nodes[i].state == NODE_PLACED && !nodes[i].overmounted)
                        t->entries[t->n_entries++] = t->entries[i];
        return 0;
}

int mount_table_read(const char *root, disk_cache *cache, mount_table *ret) {
        mount_table t = {};
        int r;

        r = btrfs_table_read(root, &t);
        if (r >= 0) {
                r = mount_table_parse(root, &t);
                if (r >= 0)
                        r = mount_table_index(root, cache, &t);
        }
        if (r == -ENOMEM) {
                mount_table_done(&t);
                return r;
        }
        *ret = t;
        return r;
}

static void btrfs_table_done(mount_table *t) {
        for (size_t i = 0; i < t->n_btrfs; i++)
                free(t->btrfs[i].uuid);
        free(t->btrfs);
        t->btrfs = NULL;
        t->n_btrfs = 0;
}

int mount_table_refresh_btrfs(const char *root, mount_table *t) {
        btrfs_table_done(t);
        return btrfs_table_read(root, t);
}

int mountinfo_watch_open(const char *root) {
        _cleanup_free_ char *path = path_join_root(root, "/proc/self/mountinfo");
        struct statfs sfs;
        int fd;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstatfs(fd, &sfs) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        if (sfs.f_type != PROC_SUPER_MAGIC) {
                close(fd);
                return -EMEDIUMTYPE;
        }
        return fd;
}

bool mountinfo_watch_changed(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLPRI };

        /* procfs's mounts_poll(): POLLERR|POLLPRI once per change of the namespace's event count */
        if (poll(&p, 1, 0) < 0)
                return true;
        return (p.revents & (POLLPRI | POLLERR | POLLNVAL)) != 0;
}

void mount_table_done(mount_table *t) {
        free(t->entries);
        mnt_unref_table(t->mnt);
        free(t->by_devnum);
        free(t->by_disk);
        btrfs_table_done(t);
        *t = (mount_table) {};
}

/* First index in t->by_devnum with st_dev major:minor (n_entries if none). */
static size_t first_with_devnum(const mount_table *t, unsigned major, unsigned minor) {
        size_t lo = 0, hi = t->n_entries;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const mount_entry *e = t->by_devnum[mid];

                if (e->major < major || (e->major == major && e->minor < minor))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* First index in t->by_disk on disk (n_by_disk if none). */
static size_t first_on_disk(const mount_table *t, const char *disk) {
        size_t lo = 0, hi = t->n_by_disk;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (strcmp(t->by_disk[mid]->disk, disk) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
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

static unsigned fstype_traits(const char *fstype) {
        if (streq_ptr(fstype, "nfs") || streq_ptr(fstype, "nfs4"))
                return BDI_TRAIT_NFS;
        if (startswith(fstype, "fuse"))
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

/* The whole disks a stacked device sits on: its slaves/ entries ("sda1", "dm-0"), each by its dev
 * number to its disk ("sda"); an entry whose number does not read is taken by its name. */
static void read_slaves(const char *root, unsigned major, unsigned minor, disk_facts *f) {
        _cleanup_free_ char *dir_path = NULL;
        _cleanup_closedir_ DIR *dir = NULL;
        char rel[64];
        struct dirent *de;
        size_t n = 0;

        snprintf(rel, sizeof(rel), "/sys/dev/block/%u:%u/slaves", major, minor);
        dir_path = path_join_root(root, rel);
        if (!dir_path)
                return;
        dir = opendir(dir_path);
        if (!dir)
                return;            /* not stacked (or an older kernel): no members */
        while ((de = readdir(dir)) && n < BDI_LOWER_MAX) {
                char attr[80], buf[64];
                unsigned smajor, sminor;
                blockdev_info info;
                const char *disk = de->d_name;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(attr, sizeof(attr), "slaves/%.60s/dev", de->d_name);
                if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0 &&
                    sscanf(buf, "%u:%u", &smajor, &sminor) == 2 &&
                    blockdev_lookup(root, smajor, sminor, &info) >= 0)
                        disk = info.disk;
                snprintf(f->lower[n++], sizeof(f->lower[0]), "%.63s", disk);
        }
}

/* A loop device's backing file, without the " (deleted)" the kernel appends to a file gone. */
static void read_backing_file(const char *root, unsigned major, unsigned minor, disk_facts *f) {
        static const char deleted[] = " (deleted)";
        size_t n;

        if (read_block_attr(root, major, minor, "loop/backing_file", f->backing_file, sizeof(f->backing_file)) < 0 ||
            f->backing_file[0] != '/') {
                f->backing_file[0] = '\0';
                return;
        }
        n = strlen(f->backing_file);
        if (n == sizeof(f->backing_file) - 1) {
                log_debug("%s/sys/dev/block/%u:%u/loop/backing_file is longer than %zu bytes: its filesystem is not "
                          "looked up", root, major, minor, sizeof(f->backing_file) - 2);
                f->backing_file[0] = '\0';
                return;
        }
        if (n > strlen(deleted) && strcmp(f->backing_file + n - strlen(deleted), deleted) == 0)
                f->backing_file[n - strlen(deleted)] = '\0';
}

/* Traits and model of a disk from its sysfs dir (the one /sys/block/<disk> points to);
 * a partition's dir sits inside its disk's. */
/* Read everything disk_facts holds for one device from sysfs. */
static void disk_facts_read(const char *root, unsigned major, unsigned minor, disk_facts *f) {
        blockdev_info info;
        const char *up;
        char buf[256], attr[64];
        uint64_t v;

        *f = (disk_facts) { .major = major, .minor = minor };
        f->lookup_r = blockdev_lookup(root, major, minor, &info);
        if (f->lookup_r < 0)
                return;
        strscpy(f->name, sizeof(f->name), info.name);
        strscpy(f->disk, sizeof(f->disk), info.disk);
        f->is_partition = info.is_partition;
        up = info.is_partition ? "../" : "";

        snprintf(attr, sizeof(attr), "%squeue/rotational", up);
        if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0 &&
            parse_u64(buf, &v) >= 0 && v > 0)
                f->traits |= BDI_TRAIT_ROTATIONAL;
        snprintf(attr, sizeof(attr), "%sremovable", up);
        if (read_block_attr(root, major, minor, attr, buf, sizeof(buf)) >= 0 &&
            parse_u64(buf, &v) >= 0 && v > 0)
                f->traits |= BDI_TRAIT_REMOVABLE;
        if (info.usb)
                f->traits |= BDI_TRAIT_USB;
        snprintf(attr, sizeof(attr), "%sdevice/model", up);
        if (read_block_attr(root, major, minor, attr, f->model, sizeof(f->model)) >= 0)
                trim(f->model);
        else
                f->model[0] = '\0';
        if (read_block_attr(root, major, minor, "dm/name", f->alias, sizeof(f->alias)) >= 0)
                trim(f->alias);
        else
                f->alias[0] = '\0';
        /* a read-only device (a snap's squashfs loop, dm-verity) writes nothing back: no stack for writeback */
        if (!info.is_partition &&
            !(read_block_attr(root, major, minor, "ro", buf, sizeof(buf)) >= 0 && parse_u64(buf, &v) >= 0 && v > 0)) {
                read_slaves(root, major, minor, f);
                read_backing_file(root, major, minor, f);
        }
}

static int cmp_facts(const void *a, const void *b) {
        const disk_facts *x = a, *y = b;

        if (x->major != y->major)
                return x->major < y->major ? -1 : 1;
        return x->minor < y->minor ? -1 : x->minor > y->minor;
}

void disk_cache_begin(disk_cache *c, uint64_t now_usec) {
        c->now_usec = now_usec;
        for (size_t i = 0; i < c->n; i++)
                c->v[i].seen = false;
}

void disk_cache_end(disk_cache *c) {
        size_t k = 0;

        for (size_t i = 0; i < c->n; i++)
                if (c->v[i].seen)
                        c->v[k++] = c->v[i];
        c->n = k;
        if (c->n > 1)   /* qsort() must not get the NULL of an empty cache */
                qsort(c->v, c->n, sizeof(c->v[0]), cmp_facts);
        c->n_sorted = c->n;
}

void disk_cache_done(disk_cache *c) {
        free(c->v);
        *c = (disk_cache) {};
}

/* The facts of major:minor, from the cache when fresh; into *buf when the cache has no room. */
static const disk_facts *disk_facts_get(const char *root, disk_cache *c, unsigned major, unsigned minor,
                                        disk_facts *buf) {
        disk_facts key = { .major = major, .minor = minor }, *f = NULL;

        if (c->n_sorted > 0)
                f = bsearch(&key, c->v, c->n_sorted, sizeof(c->v[0]), cmp_facts);
        for (size_t i = c->n_sorted; !f && i < c->n; i++)   /* added this tick */
                if (cmp_facts(&key, &c->v[i]) == 0)
                        f = &c->v[i];
        if (!f) {
                if (c->n >= c->cap) {
                        size_t cap = c->cap ? c->cap * 2 : 64;
                        disk_facts *v = reallocarray(c->v, cap, sizeof(*v));

                        if (!v) {
                                disk_facts_read(root, major, minor, buf);
                                return buf;
                        }
                        c->v = v;
                        c->cap = cap;
                }
                f = &c->v[c->n++];
                f->read_usec = 0;
        }
        if (f->read_usec == 0 || c->now_usec < f->read_usec || c->now_usec - f->read_usec >= DISK_FACTS_MAX_AGE_USEC) {
                disk_facts_read(root, major, minor, f);
                f->read_usec = c->now_usec ? c->now_usec : 1;
        }
        f->seen = true;
        return f;
}

static void apply_facts(const disk_facts *f, bdi_device *d) {
        d->traits |= f->traits;
        strscpy(d->model, sizeof(d->model), f->model);
        strscpy(d->alias, sizeof(d->alias), f->alias);
        memcpy(d->lower, f->lower, sizeof(d->lower));
}

/* The mount point of the filesystem holding path: the reachable mount with the longest mount point
 * that is path or a directory above it; NULL if none. */
static const mount_entry *mount_holding(const mount_table *t, const char *path) {
        const mount_entry *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < t->n_entries; i++) {
                const char *mp = t->entries[i].mount_point;
                size_t len = mp ? strlen(mp) : 0;

                if (len == 0 || strncmp(path, mp, len) != 0)
                        continue;
                if (!(len == 1 || path[len] == '/' || path[len] == '\0'))
                        continue;
                if (!best || len >= best_len) {   /* the later of two at one place is on top */
                        best = &t->entries[i];
                        best_len = len;
                }
        }
        return best;
}

/* btrfs BDIs are "btrfs-N": find the fs whose <uuid>/bdi links to it; fill its devices' names. */
static int btrfs_devices(const char *root, const mount_table *t, const char *bdi, char ***ret, size_t *ret_n) {
        _cleanup_free_ char *devdir = NULL;
        _cleanup_closedir_ DIR *devs = NULL;
        btrfs_fs key = {};
        const btrfs_fs *fs;
        struct dirent *dd;
        char rel[PATH_MAX];

        strscpy(key.bdi, sizeof(key.bdi), bdi);
        fs = t->n_btrfs > 0 ? bsearch(&key, t->btrfs, t->n_btrfs, sizeof(t->btrfs[0]), cmp_btrfs) : NULL;
        if (!fs)
                return -ENOENT;

        snprintf(rel, sizeof(rel), "/sys/fs/btrfs/%s/devices", fs->uuid);
        devdir = path_join_root(root, rel);
        if (!devdir)
                return -ENOMEM;
        devs = opendir(devdir);
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

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int describe_btrfs(const char *root, const mount_table *mounts, disk_cache *cache, bdi_device *d) {
        char **devs = NULL;
        size_t n_devs = 0;
        int r;

        r = btrfs_devices(root, mounts, d->bdi, &devs, &n_devs);
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

                if (!startswith(e->source, "/dev/"))
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
                disk_facts buf_facts;
                const disk_facts *f;

                snprintf(rel, sizeof(rel), "/sys/class/block/%s/dev", devs[0]);
                path = path_join_root(root, rel);
                if (!path)
                        r = -ENOMEM;
                else if (read_one_line(path, buf, sizeof(buf)) >= 0 &&
                         sscanf(buf, "%u:%u", &major, &minor) == 2) {
                        d->major = major;
                        d->minor = minor;
                        d->has_devnum = true;
                        f = disk_facts_get(root, cache, major, minor, &buf_facts);
                        if (f->lookup_r >= 0)
                                apply_facts(f, d);
                }
        }

        for (size_t i = 0; i < n_devs; i++)
                free(devs[i]);
        free(devs);
        return r < 0 ? r : 0;
}

int devnames_describe(const char *root, const mount_table *mounts, disk_cache *cache, bdi_device *d) {
        const disk_facts *f = NULL;
        disk_facts buf_facts;
        int r = 0;

        d->name[0] = d->alias[0] = d->fstype[0] = d->model[0] = d->backing_mount[0] = d->upper[0] = '\0';
        memset(d->lower, 0, sizeof(d->lower));
        d->traits = 0;
        for (size_t i = 0; i < d->n_mounts; i++)
                free(d->mounts[i]);
        free(d->mounts);
        d->mounts = NULL;
        d->n_mounts = 0;

        if (!startswith(d->bdi, "btrfs-") && d->has_devnum)
                f = disk_facts_get(root, cache, d->major, d->minor, &buf_facts);
        /* a loop device exists detached: one that holds data now was just attached, and its backing file
         * (which makes a stack) must not wait for the cache's next read */
        if (f && f->lookup_r >= 0 && !f->backing_file[0] && startswith(f->name, "loop") &&
            (d->dirty_bytes || d->writeback_bytes)) {
                disk_facts *fresh = (disk_facts *) f;
                uint64_t read_usec = fresh->read_usec;

                disk_facts_read(root, d->major, d->minor, fresh);
                fresh->read_usec = read_usec;
                fresh->seen = true;
        }

        if (startswith(d->bdi, "btrfs-"))
                r = describe_btrfs(root, mounts, cache, d);
        else if (f && f->lookup_r >= 0) {
                /* mounts of the disk itself and of its partitions, in mountinfo order */
                strscpy(d->name, sizeof(d->name), f->name);
                for (size_t i = f->disk[0] ? first_on_disk(mounts, f->disk) : mounts->n_by_disk;
                     i < mounts->n_by_disk && streq_ptr(mounts->by_disk[i]->disk, f->disk) && r >= 0; i++)
                        r = add_mount(d, mounts->by_disk[i]);
                apply_facts(f, d);
                if (f->backing_file[0]) {
                        const mount_entry *e = mount_holding(mounts, f->backing_file);

                        if (e && strlen(e->mount_point) < sizeof(d->backing_mount))
                                strscpy(d->backing_mount, sizeof(d->backing_mount), e->mount_point);
                }
        } else if (d->has_devnum) {
                /* No block device: nfs, fuse and other anonymous devices, matched by st_dev. */
                const mount_entry *first = NULL;

                for (size_t i = first_with_devnum(mounts, d->major, d->minor);
                     i < mounts->n_entries && r >= 0; i++) {
                        const mount_entry *e = mounts->by_devnum[i];

                        if (e->major != d->major || e->minor != d->minor)
                                break;
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

/* The traits a device passes to one stacked on it. */
#define STACK_TRAITS (BDI_TRAIT_ROTATIONAL | BDI_TRAIT_REMOVABLE | BDI_TRAIT_USB | BDI_TRAIT_NFS | BDI_TRAIT_FUSE)

/* The device of the sample called name, or, with mount, the one that has a mount at name; NULL if none. */
static bdi_device *stack_find(bdi_device *devices, size_t n_devices, const char *name, bool mount) {
        for (size_t i = 0; i < n_devices; i++) {
                if (!mount && strcmp(devices[i].name, name) == 0)
                        return &devices[i];
                for (size_t j = 0; mount && j < devices[i].n_mounts; j++)
                        if (strcmp(devices[i].mounts[j], name) == 0)
                                return &devices[i];
        }
        return NULL;
}

void devnames_stack(bdi_device *devices, size_t n_devices) {
        typedef struct { bdi_device *upper, *lower; } edge;
        _cleanup_free_ edge *edges = NULL;
        size_t n_edges = 0, allocated = 0;

        for (size_t i = 0; i < n_devices; i++) {
                bdi_device *u = &devices[i];

                for (size_t k = 0; k <= BDI_LOWER_MAX; k++) {
                        bool mount = k == BDI_LOWER_MAX;
                        const char *key = mount ? u->backing_mount : u->lower[k];
                        bdi_device *l;

                        if (!key[0])
                                continue;
                        l = stack_find(devices, n_devices, key, mount);
                        if (!l || l == u)
                                continue;
                        if (n_edges == allocated) {
                                size_t grow = MAX(allocated * 2, 16);
                                edge *v = reallocarray(edges, grow, sizeof(*v));

                                if (!v)
                                        return;    /* no memory: no stacks this tick (the next tries again) */
                                edges = v;
                                allocated = grow;
                        }
                        edges[n_edges++] = (edge) { u, l };
                        if (!l->upper[0])
                                strscpy(l->upper, sizeof(l->upper), u->name);
                }
        }
        /* dm-1 over dm-0 over a USB stick: each round passes the traits one level up */
        for (unsigned round = 0; round < STACK_DEPTH_MAX; round++) {
                bool changed = false;

                for (size_t i = 0; i < n_edges; i++) {
                        unsigned t = edges[i].upper->traits | (edges[i].lower->traits & STACK_TRAITS);

                        changed |= t != edges[i].upper->traits;
                        edges[i].upper->traits = t;
                }
                if (!changed)
                        break;
        }
}
