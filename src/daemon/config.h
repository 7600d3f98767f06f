/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Configuration: /etc/wbtuned.conf plus the drop-ins /etc/wbtuned.conf.d/NAME.conf, parsed with inih through a key table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "protocol.h"

#define CONFIG_DEFAULT_PATH SYSCONFDIR "/wbtuned.conf"
#define CONFIG_DEFAULT_SOCKET PROTOCOL_DEFAULT_SOCKET
#define CONFIG_DEVICE_MAX 64
/* metrics_textfile must end in this: node_exporter reads only such files, and a typo cannot make the
 * daemon replace some other file */
#define CONFIG_TEXTFILE_SUFFIX ".prom"

typedef enum policy_mode {
        POLICY_MODE_OBSERVE,   /* compute and show, write nothing */
        POLICY_MODE_AUTO,      /* apply the policy's knobs */
} policy_mode;

/* Per-device tri-state for knobs the policy may decide itself. */
typedef enum tristate { TRISTATE_AUTO = -1, TRISTATE_NO = 0, TRISTATE_YES = 1 } tristate;

typedef struct device_config {
        char match[128];           /* glob on name, "MAJ:MIN", or a trait word */
        char file[256];            /* where it was defined, for messages */
        unsigned line;
        bool manage;               /* false: the daemon never touches this device */
        uint64_t backlog_ms;       /* 0 = inherit [policy] */
        uint64_t min_bytes;        /* 0 = none / policy decides */
        uint64_t max_bytes;        /* 0 = policy decides */
        tristate strict_limit;
} device_config;

typedef struct config {
        /* [daemon] */
        uint64_t tick_ms;
        char socket_path[108];     /* sun_path size */
        int log_level;             /* syslog level */
        uint64_t history_minutes;  /* per-tick samples kept for `wbtunectl history` */
        bool attribution;          /* trace balance_dirty_pages and query taskstats */
        bool task_delayacct;       /* turn kernel.task_delayacct on while running */
        char metrics_textfile[160]; /* Prometheus text written here (node_exporter's textfile collector), "" = none */
        uint64_t metrics_interval_ms; /* how often it is written */
        /* [policy] */
        policy_mode mode;
        uint64_t backlog_ms;             /* target seconds of bandwidth per device */
        uint64_t dirty_bytes;            /* admin pin, 0 = not pinned */
        uint64_t dirty_background_bytes; /* admin pin, 0 = not pinned */
        uint64_t min_dirty_bytes;        /* floor for a computed dirty_bytes */
        uint64_t max_dirty_bytes;        /* ceiling for a computed dirty_bytes */
        uint64_t min_device_bytes;       /* floor for any per-device cap */
        uint64_t unmeasured_device_bytes; /* cap of a device not yet seen writing at full speed, 0 = none */
        uint64_t max_age_ms;             /* oldest dirty data allowed (expire) */
        /* [device "..."] in file order; later sections win on conflicts */
        device_config devices[CONFIG_DEVICE_MAX];
        unsigned n_devices;
} config;

/* Fill with built-in defaults. */
void config_init(config *c);

/* config_load_full() flags */
#define CONFIG_LOAD_MISSING_OK (1u << 0)   /* a missing main file is not an error (default path) */

/* Load path, then every path.d/ *.conf in lexical order, onto defaults.
 * A missing path is an error unless it is CONFIG_DEFAULT_PATH; a missing path.d/ is fine. Only regular
 * files of at most 1 MiB are read (anything else is an error naming the file).
 * On error prints "FILE:LINE: key: message (allowed: …)" lines to err (may be NULL = log) and
 * returns -EINVAL (or -errno of an unreadable file); *c is left untouched on error. */
int config_load(const char *path, config *c, FILE *err);
/* Same, with CONFIG_LOAD_* flags. */
int config_load_full(const char *path, unsigned flags, config *c, FILE *err);

/* Parse one file's text (no drop-ins) onto defaults, as config_load() parses each file: name is
 * what messages call it. The same errors and results; for tests and the fuzzer. */
int config_parse_text(const char *name, const char *text, size_t size, config *c, FILE *err);

/* Write the merged configuration as a valid config file. */
void config_dump(const config *c, FILE *out);

/* Does this [device "..."] section apply to the device? traits are BDI_TRAIT_* bits;
 * name and alias (the device-mapper name) may be NULL. A trait word matches by trait, "MAJ:MIN"
 * exactly, anything else is an fnmatch() glob tried on the name, the alias and "MAJ:MIN". */
bool device_config_matches(const device_config *dc, const char *name, const char *alias,
                           unsigned major, unsigned minor, unsigned traits);

/* The last matching [device] section (later sections win), or NULL. */
const device_config *config_find_device(const config *c, const char *name, const char *alias,
                                        unsigned major, unsigned minor, unsigned traits);
