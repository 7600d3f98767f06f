/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Remembered device speeds: a measured bandwidth per stable device identity, kept across idle time and
 * restarts in a versioned, checksummed, bounded file under the daemon's StateDirectory= (a prior only). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "observe.h"

#define SPEEDS_FILE_VERSION 1
#define SPEEDS_MAX_ENTRIES 1024                 /* devices remembered; the oldest measurement goes first */
#define SPEEDS_ID_MAX 256                       /* an identity, encoded, with its NUL */
#define SPEEDS_BW_MAX (1ULL << 40)              /* 1 TiB/s: a larger speed in the file is damage */
#define SPEEDS_FILE_MAX_BYTES (SPEEDS_MAX_ENTRIES * (SPEEDS_ID_MAX + 64) + 4096)
#define SPEEDS_DIR "/var/lib/wbtuned"           /* the unit's StateDirectory= */
#define SPEEDS_FILE_NAME "speeds"

typedef struct speed_entry {
        char id[SPEEDS_ID_MAX];                 /* "wwid:naa.5000c500a1b2c3d4", "loop:/srv/img@8:1:1234", "nfs:srv:/x" */
        uint64_t bw_bytes_per_s;                /* what it was measured to write, saturated */
        uint64_t measured_realtime_s;           /* when (CLOCK_REALTIME, seconds): the age shown to people */
} speed_entry;

/* The file's text for these entries: header comment, "wbtuned-speeds 1", one "speed BW TIME ID" line per
 * entry, then the checksum line of savedfile.c. malloc'd, or NULL (out of memory). */
char *speeds_format(const speed_entry *v, size_t n, size_t *ret_size);

/* Parse the file's text (not NUL-terminated): at most SPEEDS_FILE_MAX_BYTES and SPEEDS_MAX_ENTRIES, the
 * magic and version first, a valid checksum, every number a plain decimal, every id well-formed and listed
 * once. 0 with *ret (may be NULL when n is 0), -EBADMSG with *ret_error naming the line and the reason. */
int speeds_parse(const char *buf, size_t size, speed_entry **ret, size_t *ret_n, char **ret_error);

/* Read path with the saved file's safety checks (regular, ours, not writable by others, size bound looked
 * at before reading). 0, -ENOENT, -EPERM or -EBADMSG with *ret_error, or another -errno. */
int speeds_read(const char *path, speed_entry **ret, size_t *ret_n, char **ret_error);

/* Replace path atomically (temporary file, fsync, rename). 0 or -errno (logged with the path). */
int speeds_write(const char *path, const speed_entry *v, size_t n);

/* The stable identity of a device, read under root (NULL or "" for the live system): a loop device's
 * backing file (with its dev:inode when reachable), a dm uuid, the disk's wwid, wwn or serial, its
 * /dev/disk/by-id name, an NFS mount's server:export, btrfs's fs uuid, the /dev/disk/by-uuid name as the
 * fallback. Bytes outside printable ASCII, space and '%' are %XX-encoded. 0, or -ENOENT: none (such a
 * device is not remembered), -ENAMETOOLONG, -ENOMEM. */
int speeds_identity(const char *root, const bdi_device *d, char *buf, size_t size);

/* The entry of id in v (unsorted), or NULL. */
speed_entry *speeds_find(speed_entry *v, size_t n, const char *id);

/* Record a measurement in *v (grown as needed; at SPEEDS_MAX_ENTRIES the oldest is replaced). Returns 1
 * if the stored speed changed notably (new, or by SPEEDS_NOTABLE_PERCENT or more), 0 if not, -ENOMEM. */
#define SPEEDS_NOTABLE_PERCENT 20
int speeds_update(speed_entry **v, size_t *n, size_t *allocated, const char *id, uint64_t bw_bytes_per_s,
                  uint64_t realtime_s);

/* ---- the daemon's store: the file, the identity of each device seen, the prior of each ---- */

#include "policy.h"

typedef struct speeds_store speeds_store;

#define SPEEDS_SAVE_USEC (60ULL * 1000000ULL)      /* a notable change is saved at most this often */
#define SPEEDS_IDENTITY_MAX_AGE_USEC (30ULL * 1000000ULL) /* a device's identity is read again this often */

/* Load path (a missing file is an empty store; a refused one is logged in one line naming the file and
 * why, and the daemon runs on without it). save: the file may be written (not in dry-run). 0 or -ENOMEM. */
int speeds_store_new(const char *root, const char *path, bool save, speeds_store **ret);
speeds_store *speeds_store_free(speeds_store *st);
/* Fill each device's remembered_* fields of s from the store (identities read under root, cached). */
void speeds_store_prior(speeds_store *st, sample *s);
/* Take the speeds d measured now (active devices only) into the store; save it when one changed notably
 * and SPEEDS_SAVE_USEC have passed since the last save. */
void speeds_store_learn(speeds_store *st, const sample *s, const decision *d);
/* Save now if anything changed (at stop). 0, or -errno (logged). */
int speeds_store_flush(speeds_store *st);
/* How many speeds it holds; for status and tests. */
size_t speeds_store_size(const speeds_store *st);
