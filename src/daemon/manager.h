/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state and event sources: tick timer, signals, control verbs. */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "actuate.h"
#include "attribution.h"
#include "config.h"
#include "control.h"
#include "guard.h"
#include "history.h"
#include "metrics.h"
#include "observe.h"
#include "policy.h"
#include "report.h"
#include "speeds.h"
#include "hotplug.h"
#include "virt.h"

typedef struct manager {
        sd_event *event;
        config config;
        char *config_path;
        char *root;                 /* NULL: live system; else a fake tree */
        char *socket_path;          /* --socket, or the config's */
        bool dry_run;
        bool print_ticks;           /* one summary per tick on stdout (foreground use) */

        observe_ctx *observe;
        sample current;             /* the latest sample; zeroed before the first tick */
        kernel_support support;     /* what this kernel offers; copied into each sample */
        memcg_summary memcg;        /* memory-limited cgroups that write; copied into each sample */
        uint64_t memcg_scan_usec;   /* when they were last looked at */
        uint64_t start_usec;
        uint64_t n_ticks;
        uint64_t last_tick_work_usec;   /* how long the last tick's work took (sample, decide, act, history) */
        uint64_t paced_usec;        /* the last tick that kept the configured pace (history, status, metrics) */
        bool fast_tick;             /* the timer runs at POLICY_FAST_TICK_MS */
        uint64_t tick_work_total_usec;  /* the same summed over the n_ticks ticks */
        report_work work;               /* that time (and the trace drain's) by stage */
        metrics_textfile textfile;      /* [daemon] metrics_textfile, written every metrics_interval */

        policy_state policy;        /* what the policy carries between ticks */
        guard_state guard;          /* what the safety guard carries between ticks */
        decision decision;          /* the latest decision (after the guard), shown by status/devices/explain */
        bool have_decision;
        actuator *actuator;         /* writes knobs only when manager_writes_knobs() says so */
        policy_mode mode;           /* the config's, until `wbtunectl restore` switches to observe */
        virt_container virt;        /* the container found at start (virt.c) */
        char observe_only_reason[320]; /* non-empty: write no knob whatever the mode (a container); status shows it */
        bool refusal_said;          /* the journal was told once that a refused global knob means observing only */
        char *state_dir;            /* the daemon's own state directory: /run/wbtuned */
        char *saved_path;           /* originals of changed knobs: state_dir/saved */
        char *saved_refused;        /* why the saved file of a previous run was not used; NULL if it was */
        char *speeds_path;          /* remembered device speeds: speeds_dir/speeds (StateDirectory=); NULL: none (--root) */
        speeds_store *speeds;       /* the priors of known devices; NULL before start */

        attribution *attribution;   /* who dirties, who is throttled (off with a reason when it cannot work) */
        sd_event_source *trace_source;
        history *history;           /* per-tick samples for `wbtunectl history`; sized at start */
        uint64_t history_minutes;   /* what history was sized for */

        control_server *control;
        sd_event_source *tick_source;
        hotplug *hotplug;           /* udev events bring the next tick forward; NULL: polling only */
        char hotplug_reason[128];   /* why there is no monitor */
        uint64_t hotplug_events;
} manager;

typedef struct manager_options {
        const char *config_path;
        const char *root;
        const char *socket_path;    /* NULL: from the config */
        const char *state_dir;      /* NULL: MANAGER_STATE_DIR */
        const char *speeds_dir;     /* NULL: state_dir if one was given, else SPEEDS_DIR (none with a root alone) */
        bool dry_run;
        bool print_ticks;
} manager_options;

/* The daemon's own state directory (the unit's RuntimeDirectory=); the saved originals live only here. */
#define MANAGER_STATE_DIR "/run/wbtuned"

/* Takes a loaded config. */
int manager_new(const manager_options *o, const config *c, manager **ret);
manager *manager_free(manager *m);
/* Open the readers, take the first sample, open the socket, arm the timer and signals. */
int manager_start(manager *m);
/* Run until SIGTERM/SIGINT; returns the loop's exit code (0 on a clean stop). */
int manager_run(manager *m);
/* Write no knob from now on, whatever the config says: one log line, and the reason in status. */
void manager_force_observe(manager *m, const char *reason);
/* Give every knob back its original value and stop tuning until the next reload. */
int manager_restore(manager *m);
/* Whether knobs are written now: not in dry-run, observe mode or after `restore`, and not while the
 * kernel refuses the global knobs or a previous run's saved file could not be trusted. *ret_reason
 * (may be NULL) says why not, or what is written. The one place this is decided. */
bool manager_writes_knobs(const manager *m, const char **ret_reason);
/* Re-read the config; on error keep the running one. err receives the error lines (may be NULL).
 * Knobs someone else set are handed back to the daemon. */
int manager_reload(manager *m, FILE *err);
/* The control verbs (their userdata is the manager); tests serve them on a socket of their own. */
const control_verb *manager_control_verbs(size_t *ret_n);
