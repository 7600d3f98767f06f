/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Naming BDIs the way an admin knows them: block device, mounts, filesystem, traits. */
#pragma once

#include "observe.h"

struct libmnt_table;

/* A mount a path can reach (mountinfo lists covered ones too); the strings belong to mount_table.mnt. */
typedef struct mount_entry {
        unsigned major, minor;   /* st_dev of the mount (mountinfo field 3) */
        const char *mount_point; /* escapes decoded */
        const char *fstype;
        const char *source;      /* "/dev/loop3", "server:/export", ... */
        bool whole_fs;           /* mounts the filesystem's root (field 4 is "/"), not a subdirectory (bind) */
        char disk[64];           /* whole disk of the block device st_dev names ("sda" for 8:1), "" if none */
} mount_entry;

/* A btrfs filesystem: its BDI ("btrfs-1") and its dir under /sys/fs/btrfs (the uuid). */
typedef struct btrfs_fs {
        char bdi[64];
        char *uuid;
} btrfs_fs;

/* Everything devnames_describe() looks up, read when the mounts change (the btrfs list every tick) and
 * indexed, so that describing every BDI costs O(n log n) instead of a mountinfo walk (with sysfs reads) per BDI. */
typedef struct mount_table {
        struct libmnt_table *mnt;      /* mountinfo as libmount parsed it */
        mount_entry *entries;          /* the reachable mounts, in mountinfo order */
        size_t n_entries;
        const mount_entry **by_devnum; /* all entries, by st_dev, then whole_fs first, then mountinfo order */
        const mount_entry **by_disk;   /* entries with a disk, by disk name, then as by_devnum */
        size_t n_by_disk;
        btrfs_fs *btrfs;               /* sorted by bdi */
        size_t n_btrfs;
} mount_table;

/* What sysfs says about one block device (its name, disk, traits, model): it does not change while the
 * device exists, so it is read again only after DISK_FACTS_MAX_AGE_USEC or when the device comes back. */
typedef struct disk_facts {
        unsigned major, minor;
        uint64_t read_usec;
        bool seen;                     /* looked up since disk_cache_begin() */
        int lookup_r;                  /* 0, or why the device has no sysfs entry */
        char name[64];                 /* "sda1" */
        char disk[64];                 /* "sda" */
        bool is_partition;
        unsigned traits;               /* BDI_TRAIT_ROTATIONAL, _REMOVABLE, _USB */
        char model[64];
        char alias[64];                /* dm/name: "vg0-root" */
        char lower[BDI_LOWER_MAX][64]; /* whole disks of its slaves/ entries ("sda" for sda1), "" after the last */
        char backing_file[256];        /* a loop device's loop/backing_file, "" if none (or too long) */
} disk_facts;

#define DISK_FACTS_MAX_AGE_USEC (30ULL * 1000000ULL)

typedef struct disk_cache {
        disk_facts *v;                 /* [0, n_sorted) by devnum, then the ones added this tick */
        size_t n, n_sorted, cap;
        uint64_t now_usec;
} disk_cache;

/* One tick's use of the cache: begin, any number of devnames_describe(), end (drops unseen devices). */
void disk_cache_begin(disk_cache *c, uint64_t now_usec);
void disk_cache_end(disk_cache *c);
void disk_cache_done(disk_cache *c);

/* Parse <root>/proc/self/mountinfo (libmount: octal escapes decoded), keep the mounts a path can reach
 * (a mount point shown twice names one mount), find each mount's disk (through cache, between disk_cache_begin() and
 * disk_cache_end()) and list <root>/sys/fs/btrfs. 0 or -errno (-EBADMSG: not mountinfo); on a mountinfo
 * error *ret still holds the btrfs list. */
int mount_table_read(const char *root, disk_cache *cache, mount_table *ret);
void mount_table_done(mount_table *t);

/* List <root>/sys/fs/btrfs again into t, the mounts kept: a btrfs mounted only in another mount namespace
 * has a BDI of its own and no event in ours. 0 or -ENOMEM. */
int mount_table_refresh_btrfs(const char *root, mount_table *t);

/* Mounts are parsed again at least this often without a change reported: a renamed parent directory of a
 * mount point, or a disk lookup that failed, has no mount event. */
#define MOUNTS_MAX_AGE_USEC (30ULL * 1000000ULL)

/* A descriptor on <root>/proc/self/mountinfo whose poll() reports every mount and unmount in our mount
 * namespace (propagated ones too), so that the table is parsed again only when it changed. -errno;
 * -EMEDIUMTYPE: the file is not procfs's (a fake tree), which has no such events: read it every tick. */
int mountinfo_watch_open(const char *root);
/* Whether the mounts changed since the open or the last call. A poll that fails says they did. */
bool mountinfo_watch_changed(int fd);

/* Fill name, fstype, mounts, model and traits of d (whose bdi and devnum are set), and the devices it is
 * stacked on (lower, backing_mount); block device facts come through cache. */
int devnames_describe(const char *root, const mount_table *mounts, disk_cache *cache, bdi_device *d);

/* Across one sample's devices: each device's lower devices (slaves/ disks, a loop's backing filesystem)
 * get its name in upper, and it gets their traits, through STACK_DEPTH_MAX levels of stacking. */
#define STACK_DEPTH_MAX 4
void devnames_stack(bdi_device *devices, size_t n_devices);
