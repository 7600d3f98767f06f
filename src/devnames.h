/* Naming BDIs the way an admin knows them: block device, mounts, filesystem, traits. */
#pragma once

#include "observe.h"

typedef struct mount_entry {
        unsigned major, minor;   /* st_dev of the mount (mountinfo field 3) */
        char *mount_point;
        char *fstype;
        char *source;            /* "/dev/loop3", "server:/export", ... */
} mount_entry;

typedef struct mount_table {
        mount_entry *entries;
        size_t n_entries;
} mount_table;

/* Parse <root>/proc/self/mountinfo (octal escapes decoded). 0 or -errno. */
int mount_table_read(const char *root, mount_table *ret);
void mount_table_done(mount_table *t);

/* Fill name, fstype, mounts, model and traits of d (whose bdi and devnum are set). */
int devnames_describe(const char *root, const mount_table *mounts, bdi_device *d);
