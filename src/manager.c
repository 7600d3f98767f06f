/* The daemon's state and event sources: tick timer, signals, control verbs. */
#include "manager.h"
#include "explain.h"
#include "log.h"
#include "report.h"
#include "util.h"

#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <sys/epoll.h>
#include <string.h>
#include <systemd/sd-daemon.h>

static void manager_print_tick(manager *m);
static int manager_attribution_start(manager *m);
static void manager_attribution_stop(manager *m);
static void manager_notify_status(manager *m);
static const char *manager_mode(const manager *m);

static bool manager_applying(const manager *m) {
        return !m->dry_run && m->mode == POLICY_MODE_AUTO && !m->observe_only_reason[0];
}

/* decide on every tick, so observe mode shows what auto would do; write only in auto */
static void manager_decide_and_act(manager *m) {
        decision next;
        int r;

        r = policy_decide(&m->current, &m->config, &m->policy, &next);
        if (r < 0) {
                log_warning_errno(r, "Policy failed, keeping the knobs as they are: %m");
                return;
        }
        decision_done(&m->decision);
        m->decision = next;
        m->have_decision = true;

        if (manager_applying(m)) {
                r = actuator_apply(m->actuator, &m->current, &m->decision);
                if (r < 0)
                        log_debug_errno(r, "Some knobs could not be applied this tick: %m");
        } else if (m->dry_run && m->print_ticks) {
                _cleanup_fclose_ FILE *plan = NULL;
                char *buf = NULL;
                size_t size = 0;

                /* show what auto mode would write, without writing */
                plan = open_memstream(&buf, &size);
                if (plan && actuator_plan(m->actuator, &m->current, &m->decision, plan) >= 0) {
                        fclose(TAKE_PTR(plan));
                        if (size > 0)
                                printf("would write:\n%s", buf);
                }
                free(buf);
        }
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        sample next = {};
        int r;

        r = observe_sample(m->observe, &next);
        if (r < 0)
                /* the global /proc files failed: keep the last sample, try again next tick */
                log_warning_errno(r, "Failed to read the writeback state: %m");
        else {
                sample_done(&m->current);
                m->current = next;
                m->n_ticks++;
                manager_decide_and_act(m);
                if (m->history && history_add(m->history, &m->current) < 0)
                        log_debug("History has no room for a new device this tick.");
                attribution_tick(m->attribution, m->current.time_usec);
                manager_notify_status(m);
                if (m->print_ticks)
                        manager_print_tick(m);
        }

        uint64_t next_usec = usec + m->config.tick_ms * 1000, now = 0;

        /* after a stall (suspend, SIGSTOP) do not fire a burst of catch-up ticks */
        if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) >= 0 && next_usec < now)
                next_usec = now + m->config.tick_ms * 1000;
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
        m->config = next;
        m->mode = next.mode;
        if (restart_attribution) {
                manager_attribution_stop(m);
                r = manager_attribution_start(m);
                if (r < 0)
                        log_warning_errno(r, "Failed to restart throttle attribution: %m");
        }
        log_set_max_level(m->config.log_level);
        if (!manager_applying(m) && actuator_dirty(m->actuator)) {
                r = actuator_restore_all(m->actuator);
                if (r < 0)
                        log_warning_errno(r, "Failed to restore every knob after leaving auto mode: %m");
        }
        log_info("Reloaded %s: tick %" PRIu64 " ms, mode %s.", m->config_path, m->config.tick_ms, manager_mode(m));
        sd_notify(false, "READY=1");
        return 0;
}

static const char *manager_mode(const manager *m) {
        if (m->dry_run)
                return "dry-run";
        return m->mode == POLICY_MODE_AUTO && !m->observe_only_reason[0] ? "auto" : "observe";
}

void manager_force_observe(manager *m, const char *reason) {
        if (m->observe_only_reason[0])
                return;
        snprintf(m->observe_only_reason, sizeof(m->observe_only_reason), "%s", reason);
        log_warning("Observing only, writing no knob: %s.", m->observe_only_reason);
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

/* --- control verbs ---------------------------------------------------------------- */

static json_object *hotplug_status_json(const manager *m) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "enabled", json_object_new_boolean(m->hotplug != NULL));
        if (!m->hotplug)
                json_object_object_add(o, "reason", json_object_new_string(m->hotplug_reason));
        json_object_object_add(o, "events", json_object_new_uint64(m->hotplug_events));
        return o;
}

static json_object *history_status_json(const manager *m) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "minutes", json_object_new_uint64(m->history_minutes));
        json_object_object_add(o, "ticks", json_object_new_uint64(m->history ? history_size(m->history) : 0));
        json_object_object_add(o, "devices", json_object_new_uint64(m->history ? history_n_devices(m->history) : 0));
        json_object_object_add(o, "memory_bytes", json_object_new_uint64(m->history ? history_memory_bytes(m->history) : 0));
        return o;
}

static int verb_status(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        json_object *o = json_object_new_object();

        json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(o, "pid", json_object_new_int((int) getpid()));
        json_object_object_add(o, "uptime_s", json_object_new_double((double) (now_usec() - m->start_usec) / 1e6));
        json_object_object_add(o, "mode", json_object_new_string(manager_mode(m)));
        json_object_object_add(o, "tick_ms", json_object_new_int64((int64_t) m->config.tick_ms));
        json_object_object_add(o, "ticks", json_object_new_int64((int64_t) m->n_ticks));
        json_object_object_add(o, "dry_run", json_object_new_boolean(m->dry_run));
        json_object_object_add(o, "observe_only_reason",
                               m->observe_only_reason[0] ? json_object_new_string(m->observe_only_reason) : NULL);
        json_object_object_add(o, "root", json_object_new_string(m->root ? m->root : "/"));
        json_object_object_add(o, "config", json_object_new_string(m->config_path));
        json_object_object_add(o, "debugfs", json_object_new_boolean(m->current.debugfs));
        json_object_object_add(o, "stats_source", json_object_new_string(
                m->current.debugfs ? "debugfs" : "blockstat (debugfs unavailable: /sys/block/<dev>/stat sector deltas)"));
        json_object_object_add(o, "n_devices", json_object_new_int64((int64_t) m->current.n_devices));
        json_object_object_add(o, "global", report_global(&m->current.global));
        json_object_object_add(o, "tuning", explain_global_json(&m->current, m->have_decision ? &m->decision : NULL,
                                                                m->actuator));
        json_object_object_add(o, "attribution", attribution_status_json(m->attribution));
        json_object_object_add(o, "history", history_status_json(m));
        json_object_object_add(o, "hotplug", hotplug_status_json(m));
        *reply = o;
        return 0;
}

/* The decision about d. The decision is made from the current sample device for device, so the
 * same index is tried first: listing every device stays linear in their number. */
static const device_decision *decision_for(const manager *m, const bdi_device *d) {
        size_t i = (size_t) (d - m->current.devices);

        if (!m->have_decision)
                return NULL;
        if (d >= m->current.devices && i < m->current.n_devices && i < m->decision.n_devices &&
            strcmp(m->decision.devices[i].bdi, d->bdi) == 0)
                return &m->decision.devices[i];
        return explain_find_decision(&m->decision, d->bdi);
}

/* report_device() plus the tuning view of that device. */
static json_object *device_json(manager *m, const bdi_device *d) {
        json_object *o = report_device(d);

        json_object_object_add(o, "tuning", explain_device_json(d, decision_for(m, d), m->actuator));
        return o;
}

static int verb_devices(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        json_object *o = json_object_new_object(), *list = json_object_new_array();

        for (size_t i = 0; i < m->current.n_devices; i++)
                json_object_array_add(list, device_json(m, &m->current.devices[i]));
        json_object_object_add(o, "devices", list);
        *reply = o;
        return 0;
}

/* The request's "device" (name, mount point or MAJ:MIN) in the current sample; 0, -EINVAL or -ENODEV. */
static int request_device(manager *m, json_object *request, const char *verb, const bdi_device **ret, char **error) {
        json_object *key_obj;
        const char *key;

        if (!json_object_object_get_ex(request, "device", &key_obj) ||
            !json_object_is_type(key_obj, json_type_string)) {
                if (asprintf(error, "\"%s\" needs a \"device\" string: a name, mount point or MAJ:MIN", verb) < 0)
                        *error = NULL;
                return -EINVAL;
        }
        key = json_object_get_string(key_obj);
        *ret = sample_find_device(&m->current, key);
        if (!*ret) {
                if (asprintf(error, "no device matches '%s'", key) < 0)
                        *error = NULL;
                return -ENODEV;
        }
        return 0;
}

static int verb_show(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        const bdi_device *d;
        int r;

        r = request_device(m, request, "show", &d, error);
        if (r < 0)
                return r;
        *reply = json_object_new_object();
        json_object_object_add(*reply, "device", device_json(m, d));
        return 0;
}

static int verb_explain(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        _cleanup_fclose_ FILE *f = NULL;
        const bdi_device *d;
        json_object *o;
        char *text = NULL;
        size_t size = 0;
        int r;

        r = request_device(m, request, "explain", &d, error);
        if (r < 0)
                return r;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        explain_device_text(f, &m->current, m->have_decision ? &m->decision : NULL, d, decision_for(m, d),
                            m->actuator, manager_applying(m));
        fclose(TAKE_PTR(f));
        o = json_object_new_object();
        json_object_object_add(o, "bdi", json_object_new_string(d->bdi));
        json_object_object_add(o, "text", json_object_new_string(text ? text : ""));
        json_object_object_add(o, "tuning", device_json(m, d));
        free(text);
        *reply = o;
        return 0;
}

static int verb_restore(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        int r;

        r = manager_restore(m);
        if (r < 0) {
                if (asprintf(error, "failed to restore every knob: %s", strerror(-r)) < 0)
                        *error = NULL;
                return r;
        }
        *reply = json_object_new_object();
        json_object_object_add(*reply, "mode", json_object_new_string(manager_mode(m)));
        return 0;
}

static int verb_reload(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        _cleanup_fclose_ FILE *f = NULL;
        char *buf = NULL;
        size_t size = 0;
        int r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        r = manager_reload(m, f);
        fclose(TAKE_PTR(f));
        if (r < 0) {
                /* hand the file:line messages to the caller, without the trailing newline */
                if (size > 0 && buf[size - 1] == '\n')
                        buf[size - 1] = 0;
                *error = buf;
                return r;
        }
        free(buf);
        *reply = json_object_new_object();
        return 0;
}

/* The latest tick for `wbtunectl top`: global state, the devices that hold or move data, who dirties, who waits. */
static int verb_top(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        json_object *o = json_object_new_object(), *list = json_object_new_array();

        json_object_object_add(o, "time_usec", json_object_new_uint64(m->current.time_usec));
        json_object_object_add(o, "tick_ms", json_object_new_int64((int64_t) m->config.tick_ms));
        json_object_object_add(o, "ticks", json_object_new_int64((int64_t) m->n_ticks));
        json_object_object_add(o, "mode", json_object_new_string(manager_mode(m)));
        json_object_object_add(o, "global", report_global(&m->current.global));
        for (size_t i = 0; i < m->current.n_devices; i++) {
                const bdi_device *d = &m->current.devices[i];
                json_object *throttle = attribution_device_json(m->attribution, d->bdi), *j;

                if (!throttle && !bdi_device_active(d))
                        continue;
                j = report_device(d);
                if (throttle)
                        json_object_object_add(j, "throttle", throttle);
                json_object_array_add(list, j);
        }
        json_object_object_add(o, "devices", list);
        attribution_top_json(m->attribution, &m->current, o);
        *reply = o;
        return 0;
}

/* {"device": optional DEV, "format": "json" (default) or "csv"} */
static int verb_history(void *userdata, json_object *request, json_object **reply, char **error) {
        manager *m = userdata;
        json_object *v, *o;
        const char *key = NULL, *bdi = NULL, *format = "json";

        if (!m->history) {
                *error = xstrdup("no history is kept");
                return -ENODATA;
        }
        if (json_object_object_get_ex(request, "device", &v) && !json_object_is_type(v, json_type_null)) {
                const bdi_device *d;

                if (!json_object_is_type(v, json_type_string)) {
                        *error = xstrdup("\"device\" must be a string: a name, mount point or MAJ:MIN");
                        return -EINVAL;
                }
                key = json_object_get_string(v);
                d = sample_find_device(&m->current, key);
                bdi = d ? d->bdi : key;     /* a device that is gone still has its history for a while */
        }
        if (json_object_object_get_ex(request, "format", &v)) {
                format = json_object_get_string(v);
                if (!format || (strcmp(format, "json") != 0 && strcmp(format, "csv") != 0)) {
                        *error = xstrdup("\"format\" must be \"json\" or \"csv\"");
                        return -EINVAL;
                }
        }
        if (bdi && history_device_size(m->history, bdi) == 0) {
                if (asprintf(error, "no history for device '%s'", key) < 0)
                        *error = NULL;
                return -ENODEV;
        }
        o = json_object_new_object();
        json_object_object_add(o, "tick_ms", json_object_new_int64((int64_t) m->config.tick_ms));
        json_object_object_add(o, "minutes", json_object_new_uint64(m->history_minutes));
        json_object_object_add(o, "bdi", bdi ? json_object_new_string(bdi) : NULL);
        if (strcmp(format, "csv") == 0) {
                _cleanup_fclose_ FILE *f = NULL;
                char *text = NULL;
                size_t size = 0;
                int r;

                f = open_memstream(&text, &size);
                if (!f) {
                        json_object_put(o);
                        return -ENOMEM;
                }
                r = history_to_csv(m->history, bdi, f);
                fclose(TAKE_PTR(f));
                if (r < 0) {
                        free(text);
                        json_object_put(o);
                        return r;
                }
                json_object_object_add(o, "csv", json_object_new_string_len(text ? text : "", (int) size));
                free(text);
        } else {
                json_object *h = history_to_json(m->history, bdi);

                if (!h) {
                        json_object_put(o);
                        return -ENODEV;
                }
                json_object_object_foreach(h, k, val)
                        json_object_object_add(o, k, json_object_get(val));
                json_object_put(h);
        }
        *reply = o;
        return 0;
}

static const control_verb manager_verbs[] = {
        { "status",  false, verb_status },
        { "devices", false, verb_devices },
        { "show",    false, verb_show },
        { "explain", false, verb_explain },
        { "top",     false, verb_top },
        { "history", false, verb_history },
        { "reload",  true,  verb_reload },
        { "restore", true,  verb_restore },
};

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
                printf("  %-8s %-10s %-6s %-24s dirty %s wb %s thresh %s bw %s/s dirtying %s/s backlog %.1fs\n",
                       dev->bdi, dev->name, dev->fstype[0] ? dev->fstype : "-",
                       dev->n_mounts > 0 ? dev->mounts[0] : "-",
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
        int r;

        (void) usec;
        attribution_process(m->attribution);
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
        {
                /* the saved originals live beside the socket: /run/wbtuned/saved by default */
                _cleanup_free_ char *dir = xstrdup(m->socket_path);
                if (asprintf(&m->saved_path, "%s/saved", dirname(dir)) < 0)
                        abort();
        }
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

int manager_start(manager *m) {
        sigset_t mask;
        size_t capacity;
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
        if (access(m->saved_path, F_OK) == 0) {
                if (m->dry_run || m->observe_only_reason[0])
                        log_warning("%s is left from a run that did not stop cleanly; not restoring it while writing no knob (%s).",
                                    m->saved_path, m->dry_run ? "dry-run" : m->observe_only_reason);
                else {
                        r = actuator_recover(m->actuator);
                        if (r < 0)
                                log_error_errno(r, "Failed to restore every knob listed in %s: %m", m->saved_path);
                        else
                                log_notice("Restored the knobs a previous run left changed (%s).", m->saved_path);
                }
        }

        r = observe_new(m->root, !m->root, &m->observe);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the readers: %m");
        r = observe_sample(m->observe, &m->current);
        if (r < 0)
                return log_error_errno(r, "Failed to read the writeback state: %m");
        m->n_ticks = 1;
        manager_decide_and_act(m);

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

        r = control_server_new(m->event, m->socket_path, manager_verbs, ELEMENTSOF(manager_verbs), m, &m->control);
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
