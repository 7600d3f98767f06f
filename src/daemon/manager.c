/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state and event sources: tick timer, signals, control verbs. */
#include "manager.h"
#include "manager-verbs.h"
#include "escape.h"
#include "events.h"
#include "explain.h"
#include "log.h"
#include "protocol.h"
#include "report.h"
#include "savedfile.h"
#include "support.h"
#include "util.h"

#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <sys/epoll.h>
#include <string.h>
#include <systemd/sd-daemon.h>

/* How the reason for not writing starts where the kernel refused a write (the event drops it). */
#define OBSERVING_ONLY_PREFIX "observing only: "

static void manager_print_tick(manager *m);
static int manager_attribution_start(manager *m);
static void manager_attribution_stop(manager *m);
static void manager_notify_status(manager *m);
static void manager_recover(manager *m);

bool manager_writes_knobs(const manager *m, const char **ret_reason) {
        static char refused[160];
        const char *reason = NULL;
        knob_id k;
        int error;

        if (m->dry_run)
                reason = "dry-run: nothing is written";
        else if (m->observe_only_reason[0])
                reason = m->observe_only_reason;
        else if (m->mode != POLICY_MODE_AUTO)
                reason = m->config.mode == POLICY_MODE_AUTO ? "observing after `wbtunectl restore`, until a reload"
                                                            : "mode = observe in the configuration";
        else if (m->saved_refused)
                reason = "the saved file of a previous run was not trusted (see the log); remove it and reload";
        else if (m->actuator && actuator_refused(m->actuator, &k, &error) && !actuator_devices_alone(m->actuator)) {
                snprintf(refused, sizeof refused, OBSERVING_ONLY_PREFIX "the kernel refuses writes to vm.%s (%s)",
                         knob_name(k), strerror(-error));
                reason = refused;
        }
        if (ret_reason)
                *ret_reason = reason ? reason : "auto: knobs are written";
        return !reason;
}

/* The guard holds a knob for many ticks: say so when it starts, not every tick. */
static bool was_held(const manager *m, const char *bdi, knob_id k) {
        const device_decision *dd;

        if (!m->have_decision)
                return false;
        if (!bdi)
                return m->decision.global[k].held;
        dd = explain_find_decision(&m->decision, bdi);
        return dd && dd->knobs[k - KNOB_DEVICE_FIRST].held;
}

static void manager_log_holds(const manager *m, const decision *next) {
        for (knob_id k = 0; k < _KNOB_GLOBAL_MAX; k++)
                if (next->global[k].held && !was_held(m, NULL, k)) {
                        char want[32];
                        log_event(EVENT_GUARD_HOLD, LOG_NOTICE, "global", NULL, NULL, "%s: the policy wants %s, %s",
                                  knob_name(k), knob_value_to_string(k, next->global[k].policy_value, want, sizeof want),
                                  next->global[k].held_reason);
                }
        for (size_t i = 0; i < next->n_devices; i++)
                for (knob_id k = KNOB_DEVICE_FIRST; k < _KNOB_MAX; k++) {
                        const knob_decision *kd = &next->devices[i].knobs[k - KNOB_DEVICE_FIRST];

                        char want[32];
                        if (kd->held && !was_held(m, next->devices[i].bdi, k))
                                log_event(EVENT_GUARD_HOLD, LOG_NOTICE, next->devices[i].bdi, next->devices[i].name,
                                          NULL, "%s (%s) %s: the policy wants %s, %s", next->devices[i].name,
                                          next->devices[i].bdi, knob_name(k),
                                          knob_value_to_string(k, kd->policy_value, want, sizeof want), kd->held_reason);
                }
}

/* decide on every tick, so observe mode shows what auto would do; write only when allowed */
static void manager_decide_and_act(manager *m) {
        const char *why;
        decision next;
        int r;

        speeds_store_prior(m->speeds, &m->current);
        /* the policy judges some caps against the limit the guard keeps in force: only where it is ours */
        m->current.limit_ours = manager_writes_knobs(m, NULL) && m->actuator && !actuator_devices_alone(m->actuator) &&
                                actuator_limit_ours(m->actuator);
        r = policy_decide(&m->current, &m->config, &m->policy, &next);
        if (r < 0) {
                log_warning_errno(r, "Policy failed, keeping the knobs as they are: %m");
                return;
        }
        speeds_store_learn(m->speeds, &m->current, &next);
        guard_apply(&m->current, &m->guard, &next);
        manager_log_holds(m, &next);
        decision_done(&m->decision);
        m->decision = next;
        m->have_decision = true;

        if (manager_writes_knobs(m, NULL)) {
                actuator_stats before, after;

                actuator_get_stats(m->actuator, m->current.time_usec, &before);
                r = actuator_apply(m->actuator, &m->current, &m->decision);
                if (r < 0)
                        log_debug_errno(r, "Some knobs could not be applied this tick: %m");
                /* the sample reads a device's knobs only every few ticks: after a write, at the next */
                actuator_get_stats(m->actuator, m->current.time_usec, &after);
                if (after.writes_total != before.writes_total)
                        observe_knobs_changed(m->observe, NULL);
                /* a global knob turned out read-only: stop tuning, put back what was changed, say so once */
                if (!manager_writes_knobs(m, &why) && !m->refusal_said) {
                        m->refusal_said = true;
                        log_event(EVENT_OBSERVING_ONLY, LOG_WARNING, NULL, NULL, NULL, "Observing only, writing no "
                                  "knob: %s.", startswith(why, OBSERVING_ONLY_PREFIX) ?: why);
                }
                if (!manager_writes_knobs(m, NULL) && actuator_dirty(m->actuator)) {
                        r = actuator_restore_all(m->actuator);
                        if (r < 0)
                                log_warning_errno(r, "Failed to restore every knob: %m");
                }
        } else if (m->dry_run && m->print_ticks) {
                _cleanup_memstream_ memstream would = {};
                _cleanup_free_ char *buf = NULL;
                size_t size;

                /* show what auto mode would write, without writing */
                if (memstream_open(&would) && actuator_plan(m->actuator, &m->current, &m->decision, would.f) >= 0 &&
                    memstream_finish(&would, &buf, &size) >= 0 && size > 0)
                        printf("would write:\n%s", buf);
        }
}

/* Walking every cgroup costs about a read per cgroup: every MEMCG_SCAN_USEC, not every tick. */
#define MEMCG_SCAN_USEC (5 * 1000000ULL)
#define MEMCG_SCAN_DEPTH 6

static void manager_scan_memcgs(manager *m, uint64_t now) {
        char was[sizeof m->memcg.malformed];
        uint64_t start_usec = now_usec();

        if (m->memcg_scan_usec && now < m->memcg_scan_usec + MEMCG_SCAN_USEC)
                return;
        m->memcg_scan_usec = now;
        memcpy(was, m->memcg.malformed, sizeof was);
        if (memcg_scan(m->root, MEMCG_SCAN_DEPTH, &m->memcg) < 0)
                m->memcg = (memcg_summary) {};
        m->work.cgroups_usec += now_usec() - start_usec;
        /* once per new first offender, not every scan */
        if (m->memcg.malformed[0] && strcmp(was, m->memcg.malformed) != 0) {
                _cleanup_free_ char *e = escape_text_alloc(m->memcg.malformed);

                log_warning("Malformed cgroup file %s: %u cgroup(s) left out of the memory-limited ones.", e,
                            m->memcg.n_malformed);
        }
}

/* One sample of the kernel's state with what the daemon knows beside it: what the kernel supports (probed on
 * the first, assessed on every later one) and the memory-limited cgroups. first: the sample at start, whose
 * failures are errors; a tick's are warnings (it keeps the last sample). 0 or a negative errno, logged. */
static int manager_sample(manager *m, bool first, sample *ret) {
        uint64_t start_usec = now_usec();
        int r;

        r = observe_sample(m->observe, ret);
        if (r >= 0)     /* (a failed tick's work is not in tick_work_total_usec either) */
                m->work.sample_usec += now_usec() - start_usec;
        if (r < 0)
                return log_full_errno(first ? LOG_ERR : LOG_WARNING, r, "Failed to read the writeback state: %m");
        if (first) {
                r = support_probe(m->root, ret, &m->support);
                if (r < 0)
                        return log_error_errno(r, "Failed to look at what this kernel supports: %m");
        } else
                support_assess(&m->support, ret);
        ret->support = m->support;
        manager_scan_memcgs(m, ret->time_usec);
        ret->memcg = m->memcg;
        return 0;
}

static void manager_write_metrics(manager *m);

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        uint64_t work_start_usec = now_usec(), stage_usec;
        sample next = {};
        bool paced;
        int r;

        /* the global /proc files failed: keep the last sample, try again next tick */
        r = manager_sample(m, false, &next);
        if (r >= 0) {
                sample_done(&m->current);
                m->current = next;
                m->n_ticks++;
                stage_usec = now_usec();
                manager_decide_and_act(m);
                m->work.decide_act_usec += now_usec() - stage_usec;
                /* fast ticks decide and act; history, status and metrics keep the configured pace */
                paced = m->current.time_usec + 1000 >= m->paced_usec + m->config.tick_ms * 1000;
                if (paced) {
                        m->paced_usec = m->current.time_usec;
                        stage_usec = now_usec();
                        if (m->history && history_add(m->history, &m->current) < 0)
                                log_debug("History has no room for a new device this tick.");
                        m->work.history_usec += now_usec() - stage_usec;
                }
                stage_usec = now_usec();
                attribution_tick(m->attribution, m->current.time_usec);
                m->work.attribution_usec += now_usec() - stage_usec;
                m->last_tick_work_usec = now_usec() - work_start_usec;
                m->tick_work_total_usec += m->last_tick_work_usec;
                if (paced) {
                        manager_notify_status(m);
                        if (m->print_ticks)
                                manager_print_tick(m);
                        manager_write_metrics(m);
                }
        }

        /* the configured tick, or a fast one while something changes fast and the daemon acts on it, if
         * its work stays within a tenth of a core */
        uint64_t interval_usec = m->config.tick_ms * 1000, fast_ms = 0, now = 0;
        char why[128];

        if (m->have_decision && manager_writes_knobs(m, NULL))
                fast_ms = policy_fast_tick_ms(&m->current, &m->policy, &m->decision, why, sizeof why);
        if (fast_ms && fast_ms * 1000 < interval_usec && m->last_tick_work_usec * 10 <= fast_ms * 1000) {
                if (!m->fast_tick)
                        log_debug("Ticking every %" PRIu64 " ms: %s.", fast_ms, why);
                interval_usec = fast_ms * 1000;
        }
        m->fast_tick = interval_usec != m->config.tick_ms * 1000;

        uint64_t next_usec = usec + interval_usec;

        /* after a stall (suspend, SIGSTOP) do not fire a burst of catch-up ticks */
        if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) >= 0 && next_usec < now)
                next_usec = now + interval_usec;
        r = sd_event_source_set_time(s, next_usec);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm the tick timer: %m");
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager *m = userdata;

        log_info("Received %s, stopping.", strsignal((int) si->ssi_signo));
        sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

static int on_hangup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager_reload(userdata, NULL);
        return 0;
}

int manager_reload(manager *m, FILE *err) {
        config next;
        size_t n;
        int r;

        sd_notify(false, "RELOADING=1");
        config_init(&next);
        r = config_load(m->config_path, &next, err);
        if (r < 0) {
                sd_notify(false, "READY=1");
                return log_error_errno(r, "Failed to reload %s, keeping the running configuration: %m",
                                       m->config_path);
        }
        if (strcmp(next.socket_path, m->config.socket_path) != 0)
                log_warning("The socket path changed to %s; it takes effect at the next start.", next.socket_path);
        if (next.tick_ms != m->config.tick_ms && m->tick_source) {
                r = sd_event_source_set_time_relative(m->tick_source, next.tick_ms * 1000);
                if (r < 0)
                        log_warning_errno(r, "Failed to re-arm the tick timer: %m");
        }
        if (next.history_minutes != m->history_minutes)
                log_notice("history_minutes = %" PRIu64 " takes effect at the next start (keeping %" PRIu64 ").",
                           next.history_minutes, m->history_minutes);
        bool restart_attribution = next.attribution != m->config.attribution ||
                                   next.task_delayacct != m->config.task_delayacct;
        if (strcmp(next.metrics_textfile, m->config.metrics_textfile) != 0)
                metrics_textfile_remove(&m->textfile);   /* the next tick writes the new one, if any */
        m->config = next;
        m->mode = next.mode;
        if (restart_attribution) {
                manager_attribution_stop(m);
                r = manager_attribution_start(m);
                if (r < 0)
                        log_warning_errno(r, "Failed to restart throttle attribution: %m");
        }
        log_set_max_level(m->config.log_level);
        n = actuator_release_overrides(m->actuator);
        if (n > 0)
                log_notice("Handed %zu knob(s) set by hand back to the daemon; what was set is restored at stop.", n);
        /* a saved file that was refused: try again, the admin may have removed or fixed it */
        if (m->saved_refused && !m->dry_run)
                manager_recover(m);
        if (!manager_writes_knobs(m, NULL) && actuator_dirty(m->actuator)) {
                r = actuator_restore_all(m->actuator);
                if (r < 0)
                        log_warning_errno(r, "Failed to restore every knob after leaving auto mode: %m");
        }
        log_info("Reloaded %s: tick %" PRIu64 " ms, mode %s.", m->config_path, m->config.tick_ms, manager_mode(m));
        sd_notify(false, "READY=1");
        return 0;
}

const char *manager_mode(const manager *m) {
        if (m->dry_run)
                return "dry-run";
        return manager_writes_knobs(m, NULL) ? "auto" : "observe";
}

void manager_force_observe(manager *m, const char *reason) {
        if (m->observe_only_reason[0])
                return;
        snprintf(m->observe_only_reason, sizeof(m->observe_only_reason), "%s", reason);
        log_event(EVENT_OBSERVING_ONLY, LOG_WARNING, NULL, NULL, NULL, "Observing only, writing no knob: %s.",
                  m->observe_only_reason);
}

/* In a container the vm and bdi knobs are the host's: never write them from here. */
static void manager_check_container(manager *m) {
        char reason[sizeof(m->observe_only_reason)];
        int r;

        r = virt_detect_container(m->root, &m->virt);
        if (r < 0)
                snprintf(reason, sizeof(reason), "cannot tell whether this runs in a container (%s)", strerror(-r));
        else if (m->virt.container)
                snprintf(reason, sizeof(reason), "running in a container (%s, from %s): the knobs belong to the host",
                         m->virt.name, m->virt.evidence);
        else {
                if (m->virt.ignored[0])
                        log_info("Not a container: %s.", m->virt.ignored);
                return;
        }
        manager_force_observe(m, reason);
}

int manager_restore(manager *m) {
        int r;

        m->mode = POLICY_MODE_OBSERVE;
        r = actuator_restore_all(m->actuator);
        if (r < 0)
                return log_error_errno(r, "Failed to restore every knob: %m");
        log_notice("Restored every knob to its original value; observing only until the next reload.");
        return 0;
}

/* [daemon] metrics_textfile: every metrics_interval, not every tick, since node_exporter reads it only
 * when it is scraped and each write is a file created on a disk. */
static void manager_write_metrics(manager *m) {
        metrics_snapshot *snap;
        uint64_t now = now_usec();
        int r;

        if (!metrics_textfile_due(&m->textfile, m->config.metrics_textfile, m->config.metrics_interval_ms * 1000, now))
                return;
        r = manager_metrics(m, &snap);
        if (r < 0) {
                log_warning_errno(r, "Failed to collect the metrics for %s: %m", m->config.metrics_textfile);
                return;
        }
        (void) metrics_textfile_write(&m->textfile, m->config.metrics_textfile, snap, now);
        metrics_snapshot_free(snap);
}

/* --- status output ------------------------------------------------------------------ */

static void manager_notify_status(manager *m) {
        const global_state *g = &m->current.global;
        char dirty[16], wb[16], thresh[16];

        sd_notifyf(false, "STATUS=%s: %zu devices, dirty %s, writeback %s, threshold %s",
                   manager_mode(m), m->current.n_devices,
                   format_bytes(dirty, sizeof dirty, g->dirty_bytes),
                   format_bytes(wb, sizeof wb, g->writeback_bytes),
                   format_bytes(thresh, sizeof thresh, g->dirty_thresh_bytes));
}

/* One line for the machine, one per device that holds or moves data. */
static void manager_print_tick(manager *m) {
        const global_state *g = &m->current.global;
        char a[16], b[16], c[16], d[16], e[16], f[16];

        printf("tick %" PRIu64 ": dirty %s writeback %s threshold %s background %s, dirtying %s/s, writing %s/s\n",
               m->n_ticks, format_bytes(a, sizeof a, g->dirty_bytes), format_bytes(b, sizeof b, g->writeback_bytes),
               format_bytes(c, sizeof c, g->dirty_thresh_bytes), format_bytes(d, sizeof d, g->background_thresh_bytes),
               format_bytes(e, sizeof e, g->dirty_rate_bytes_per_s),
               format_bytes(f, sizeof f, g->write_rate_bytes_per_s));
        for (size_t i = 0; i < m->current.n_devices; i++) {
                const bdi_device *dev = &m->current.devices[i];

                if (!bdi_device_active(dev))
                        continue;
                /* names come from mountinfo, FUSE and sysfs: escaped, so none can forge a line */
                _cleanup_free_ char *name = escape_text_alloc(dev->name),
                        *fstype = escape_text_alloc(dev->fstype[0] ? dev->fstype : "-"),
                        *mount = escape_text_alloc(dev->n_mounts > 0 ? dev->mounts[0] : "-");
                printf("  %-8s %-10s %-6s %-24s dirty %s wb %s thresh %s bw %s/s dirtying %s/s backlog %.1fs\n",
                       dev->bdi, name, fstype, mount,
                       format_bytes(a, sizeof a, dev->dirty_bytes), format_bytes(b, sizeof b, dev->writeback_bytes),
                       format_bytes(c, sizeof c, dev->thresh_bytes), format_bytes(d, sizeof d, bdi_device_best_bw(dev)),
                       format_bytes(e, sizeof e, dev->dirty_rate_bytes_per_s), dev->backlog_s);
        }
        /* stdout gone (a closed pipe): stop printing rather than die by SIGPIPE with knobs changed */
        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_warning_errno(errno, "Failed to write the tick summary to standard output, no longer printing it: %m");
                m->print_ticks = false;
        }
}

/* --- life cycle ---------------------------------------------------------------------- */

/* The trace pipe is read on every tick and at least this often. Not on EPOLLIN: trace_pipe is readable
 * after each event, and waking per event cost 1.5 % of a core at 230 events/s. */
#define TRACE_DRAIN_USEC (1000000ULL)

static int on_trace_drain(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        uint64_t start_usec = now_usec();
        int r;

        (void) usec;
        attribution_process(m->attribution);
        m->work.trace_drain_usec += now_usec() - start_usec;
        r = sd_event_source_set_time_relative(s, TRACE_DRAIN_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_debug_errno(r, "Failed to re-arm the trace drain timer, reading the pipe on ticks only: %m");
        return 0;
}

static void manager_attribution_stop(manager *m) {
        m->trace_source = sd_event_source_disable_unref(m->trace_source);
        m->attribution = attribution_free(m->attribution);
}

/* Never fatal: what cannot work is off with a reason that status shows. */
static int manager_attribution_start(manager *m) {
        attribution_options o = {
                .root = m->root,
                .enabled = m->config.attribution,
                .task_delayacct = m->config.task_delayacct,
                /* kernel.task_delayacct is the host's too */
                .dry_run = m->dry_run || m->observe_only_reason[0],
        };
        int r, fd;

        r = attribution_new(&o, &m->attribution);
        if (r < 0)
                return r;
        fd = attribution_trace_fd(m->attribution);
        if (fd >= 0 && m->event) {
                r = sd_event_add_time_relative(m->event, &m->trace_source, CLOCK_MONOTONIC, TRACE_DRAIN_USEC, 0,
                                               on_trace_drain, m);
                if (r < 0)
                        log_debug_errno(r, "Failed to add the trace drain timer, reading the pipe on ticks only: %m");
        }
        return 0;
}

int manager_new(const manager_options *o, const config *c, manager **ret) {
        manager *m;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->config = *c;
        m->config_path = xstrdup(o->config_path);
        m->root = o->root ? xstrdup(o->root) : NULL;
        m->socket_path = xstrdup(o->socket_path ? o->socket_path : c->socket_path);
        m->dry_run = o->dry_run;
        m->print_ticks = o->print_ticks;
        m->mode = c->mode;
        /* the saved originals live only in the daemon's own state directory, never beside a socket */
        m->state_dir = xstrdup(o->state_dir ? o->state_dir : MANAGER_STATE_DIR);
        m->saved_path = xasprintf("%s/saved", m->state_dir);
        /* the speeds outlive a reboot: StateDirectory=, not the runtime one (but a test's --state-dir); a
         * fake tree's devices are not this machine's, so --root alone uses none */
        if (o->speeds_dir || o->state_dir || !o->root)
                m->speeds_path = xasprintf("%s/%s", o->speeds_dir ? o->speeds_dir : o->state_dir ? o->state_dir :
                                           SPEEDS_DIR, SPEEDS_FILE_NAME);
        m->start_usec = now_usec();
        *ret = m;
        return 0;
}

manager *manager_free(manager *m) {
        if (!m)
                return NULL;
        control_server_free(m->control);
        hotplug_free(m->hotplug);
        sd_event_source_unref(m->tick_source);
        manager_attribution_stop(m);
        history_free(m->history);
        actuator_free(m->actuator);
        decision_done(&m->decision);
        policy_state_done(&m->policy);
        free(m->saved_path);
        free(m->state_dir);
        free(m->saved_refused);
        speeds_store_free(m->speeds);
        free(m->speeds_path);
        observe_free(m->observe);
        sample_done(&m->current);
        sd_event_unref(m->event);
        free(m->config_path);
        free(m->root);
        free(m->socket_path);
        free(m);
        return NULL;
}

/* A burst of uevents (a disk, its partitions, its BDI) makes one early tick this long after the first. */
#define HOTPLUG_DELAY_USEC (100 * 1000ULL)

static void on_hotplug(void *userdata) {
        manager *m = userdata;
        uint64_t now, due, at;

        m->hotplug_events++;
        if (!m->tick_source || sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                return;
        at = now + HOTPLUG_DELAY_USEC;
        if (sd_event_source_get_time(m->tick_source, &due) >= 0 && due <= at)
                return;
        if (sd_event_source_set_time(m->tick_source, at) < 0)
                log_debug("Failed to bring the tick forward for a device event; it comes at its time.");
}

/* Never fatal: without udev events new devices are found at the next tick anyway. */
static void manager_hotplug_start(manager *m) {
        int r;

        if (m->root) {
                snprintf(m->hotplug_reason, sizeof(m->hotplug_reason), "not on the live system (--root)");
                return;
        }
        r = hotplug_new(m->event, on_hotplug, m, &m->hotplug);
        if (r < 0) {
                snprintf(m->hotplug_reason, sizeof(m->hotplug_reason), "no udev event monitor: %s", strerror(-r));
                log_notice("No udev event monitor (%s): new devices are found at the next tick.", strerror(-r));
        }
}

/* Put back what a crashed run left; a file that cannot be trusted stops tuning until it is dealt with. */
static void manager_recover(manager *m) {
        _cleanup_free_ char *why = NULL;
        int r;

        free(m->saved_refused);
        m->saved_refused = NULL;
        r = actuator_recover(m->actuator, &why);
        if (r > 0)
                log_notice("Restored the knobs a previous run left changed (%s).", m->saved_path);
        else if (r == -EPERM || r == -EBADMSG) {
                m->saved_refused = xstrdup(why ? why : strerror(-r));
                log_event(EVENT_SAVED_REFUSED, LOG_ERR, NULL, NULL, NULL,
                          "Not restoring anything from %s: it %s. Observing only until it is removed and the daemon "
                          "reloaded (inspect it with `wbtuned --inspect-saved %s`).", m->saved_path, m->saved_refused,
                          m->saved_path);
        } else if (r < 0)
                log_error_errno(r, "Failed to restore every knob listed in %s: %m", m->saved_path);
}

int manager_start(manager *m) {
        const control_verb *verbs;
        sigset_t mask;
        size_t capacity, n_verbs;
        bool capped;
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m");

        /* a write to a closed stdout or socket must fail with EPIPE, not kill us before we restore */
        (void) signal(SIGPIPE, SIG_IGN);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_hangup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch signals: %m");

        /* sends WATCHDOG=1 at half of WATCHDOG_USEC when it is set */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Failed to enable the watchdog: %m");

        manager_check_container(m);
        r = actuator_new(m->root, m->saved_path, NULL, &m->actuator);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the knob writer: %m");
        if (m->dry_run || m->observe_only_reason[0]) {
                if (access(m->saved_path, F_OK) == 0)
                        log_warning("%s is left from a run that did not stop cleanly; not restoring it while writing no knob (%s).",
                                    m->saved_path, m->dry_run ? "dry-run" : m->observe_only_reason);
        } else {
                _cleanup_free_ char *why = NULL;

                r = saved_dir_check(m->state_dir, &why);
                if (r < 0)
                        return log_error_errno(r, "Cannot keep the saved originals: %s.", why ? why : m->state_dir);
                manager_recover(m);
        }

        if (m->speeds_path) {
                _cleanup_free_ char *dir = xstrdup(m->speeds_path), *why = NULL;
                bool save = !m->dry_run;

                /* only a prior: a directory that cannot be trusted means not saving, not not running */
                if (save && saved_dir_check(dirname(dir), &why) < 0) {
                        log_warning("Not remembering device speeds: %s.", why ? why : m->speeds_path);
                        save = false;
                }
                r = speeds_store_new(m->root, m->speeds_path, save, &m->speeds);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the remembered speeds: %m");
        }

        r = observe_new(m->root, !m->root, &m->observe);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the readers: %m");
        uint64_t work_start_usec = now_usec();
        r = manager_sample(m, true, &m->current);
        if (r < 0)
                return r;
        if (!m->support.devices_trusted)
                log_event(EVENT_FIGURES_UNTRUSTED, LOG_WARNING, NULL, NULL, NULL,
                          "Not acting on the per-device figures: %s. Global limits and device caps are left as they are.",
                          m->support.why);
        m->n_ticks = 1;
        uint64_t stage_usec = now_usec();
        manager_decide_and_act(m);
        m->work.decide_act_usec += now_usec() - stage_usec;
        /* the first tick: its sample, the kernel probe and the decision */
        m->last_tick_work_usec = m->tick_work_total_usec = now_usec() - work_start_usec;

        m->history_minutes = m->config.history_minutes;
        capacity = history_capacity(m->history_minutes, m->config.tick_ms, &capped);
        if (capped)
                log_notice("History keeps %.1f minutes, not %" PRIu64 ", at a %" PRIu64 " ms tick: it is capped at %zu MiB.",
                           (double) capacity * (double) m->config.tick_ms / 60000.0, m->history_minutes,
                           m->config.tick_ms, HISTORY_MEMORY_MAX >> 20);
        m->history = history_new(capacity);
        if (!m->history)
                return log_error_errno(ENOMEM, "Failed to allocate %" PRIu64 " minutes of history: %m", m->history_minutes);
        (void) history_add(m->history, &m->current);
        r = manager_attribution_start(m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up throttle attribution: %m");
        attribution_tick(m->attribution, m->current.time_usec);
        if (!m->current.debugfs)
                log_warning("debugfs bdi statistics are unavailable: per-device figures come from /sys/block/<dev>/stat sector deltas.");

        verbs = manager_control_verbs(&n_verbs);
        r = control_server_new(m->event, m->socket_path, verbs, n_verbs, m, &m->control);
        if (r < 0)
                return log_error_errno(r, "Failed to open the control socket %s: %m", m->socket_path);

        r = sd_event_add_time_relative(m->event, &m->tick_source, CLOCK_MONOTONIC, m->config.tick_ms * 1000,
                                       1000, on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the tick timer: %m");
        manager_hotplug_start(m);

        log_info("Watching %zu backing devices every %" PRIu64 " ms (%s), control socket %s.",
                 m->current.n_devices, m->config.tick_ms, manager_mode(m), m->socket_path);
        if (m->print_ticks)
                manager_print_tick(m);
        sd_notify(false, "READY=1");
        manager_notify_status(m);
        return 0;
}

int manager_run(manager *m) {
        int r;

        int k;

        r = sd_event_loop(m->event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        (void) speeds_store_flush(m->speeds);
        /* figures of a daemon that stopped are not shown as if it ran */
        metrics_textfile_remove(&m->textfile);
        /* every exit path of the loop gives the kernel its knobs back */
        if (actuator_dirty(m->actuator)) {
                k = actuator_restore_all(m->actuator);
                if (k < 0) {
                        log_error_errno(k, "Failed to restore every knob; %s lists what is left: %m", m->saved_path);
                        r = r < 0 ? r : k;
                } else
                        log_info("Restored every knob to its original value.");
        }
        return r;
}
