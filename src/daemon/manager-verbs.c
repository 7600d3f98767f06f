/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's control verbs: a request's arguments in, the modules' JSON out, from the manager's state. */
#include "manager-verbs.h"
#include "explain.h"
#include "log.h"
#include "protocol.h"
#include "report.h"
#include "support.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static json_object *writes_status_json(const manager *m) {
        char what[96], why[400];
        actuator_stats st;
        report_writes w = { .saved_file = m->saved_path, .saved_file_refused = m->saved_refused,
                            .guard_holds_total = m->guard.clamps_total };

        w.enabled = manager_writes_knobs(m, &w.reason);
        /* what it writes on this kernel, when less than every knob */
        if (w.enabled && actuator_devices_alone(m->actuator)) {
                w.limited_to = "device knobs only";
                w.limited_why = "the kernel refuses writes to vm.dirty_bytes, which it holds in bytes: the device "
                                "limits stay put";
        } else if (support_limited(&m->support, what, sizeof what, why, sizeof why)) {
                /* also while observing: what auto would write here */
                w.limited_to = what;
                w.limited_why = why;
        }
        actuator_get_stats(m->actuator, now_usec(), &st);
        w.total = st.writes_total;
        w.last_minute = st.writes_last_minute;
        w.overrides_total = st.overrides_total;
        w.failures_total = st.failures_total;
        return report_writes_json(&w);
}

static report_daemon manager_report(const manager *m) {
        return (report_daemon) {
                .pid = (uint64_t) getpid(),
                .uptime_s = (double) (now_usec() - m->start_usec) / 1e6,
                .mode = manager_mode(m),
                .tick_ms = m->config.tick_ms,
                .ticks = m->n_ticks,
                .dry_run = m->dry_run,
                .observe_only_reason = m->observe_only_reason[0] ? m->observe_only_reason : NULL,
                .root = m->root ? m->root : "/",
                .config_path = m->config_path,
                .last_tick_work_usec = m->last_tick_work_usec,
                .tick_work_total_usec = m->tick_work_total_usec,
                .work = &m->work,
        };
}

static json_object *manager_status_json(const manager *m) {
        report_daemon d = manager_report(m);

        return report_status(&d, &m->current,
                             explain_global_json(&m->current, m->have_decision ? &m->decision : NULL, m->actuator),
                             attribution_status_json(m->attribution),
                             history_status_json(m->history, m->history_minutes),
                             report_hotplug(m->hotplug != NULL, m->hotplug_reason, m->hotplug_events),
                             writes_status_json(m), report_kernel_support(&m->support, &m->memcg));
}

static int verb_status(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        *reply = manager_status_json(userdata);
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

/* report_device() plus the tuning of that device (devices, show, explain). */
static json_object *device_json(void *userdata, const bdi_device *d) {
        manager *m = userdata;
        json_object *o = report_device(d);

        proto_add(o, PF_DEVICE_TUNING, explain_device_json(&m->current, d, decision_for(m, d), m->actuator));
        return o;
}

static int verb_devices(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;

        *reply = oom_check(json_object_new_object());
        return report_devices_stream(&m->current, PF_DEVICES_DEVICES, NULL, device_json, m, stream);
}

/* The request's "device" (name, mount point or MAJ:MIN) in the current sample; 0, -EINVAL or -ENODEV. */
static int request_device(manager *m, json_object *request, const char *verb, const bdi_device **ret, char **error) {
        json_object *key_obj = proto_get(request, PF_REQUEST_DEVICE);
        const char *key;

        if (!json_object_is_type(key_obj, json_type_string)) {
                if (asprintf(error, "\"%s\" needs a \"%s\" string: a name, mount point or MAJ:MIN", verb,
                             protocol_name(PF_REQUEST_DEVICE)) < 0)
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

static int verb_show(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        const bdi_device *d;
        int r;

        r = request_device(m, request, PROTOCOL_VERB_SHOW, &d, error);
        if (r < 0)
                return r;
        *reply = oom_check(json_object_new_object());
        proto_add(*reply, PF_SHOW_DEVICE, device_json(m, d));
        return 0;
}

static int verb_explain(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        _cleanup_memstream_ memstream ms = {};
        _cleanup_free_ char *text = NULL;
        const bdi_device *d;
        json_object *o;
        const char *writes_reason;
        bool writing;
        int r;

        r = request_device(m, request, PROTOCOL_VERB_EXPLAIN, &d, error);
        if (r < 0)
                return r;
        if (!memstream_open(&ms))
                return -ENOMEM;
        writing = manager_writes_knobs(m, &writes_reason);
        explain_device_text(ms.f, &m->current, m->have_decision ? &m->decision : NULL, d, decision_for(m, d),
                            m->actuator, writing, writes_reason);
        r = memstream_finish(&ms, &text, NULL);
        if (r < 0)
                return r;
        o = oom_check(json_object_new_object());
        proto_add_string(o, PF_EXPLAIN_BDI, d->bdi);
        proto_add_string(o, PF_EXPLAIN_TEXT, text);
        proto_add(o, PF_EXPLAIN_DEVICE, device_json(m, d));
        proto_add(o, PF_EXPLAIN_TUNING,
                  explain_global_json(&m->current, m->have_decision ? &m->decision : NULL, m->actuator));
        *reply = o;
        return 0;
}

static int verb_restore(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        int r;

        r = manager_restore(m);
        if (r < 0) {
                if (asprintf(error, "failed to restore every knob: %s", strerror(-r)) < 0)
                        *error = NULL;
                return r;
        }
        *reply = oom_check(json_object_new_object());
        proto_add_string(*reply, PF_RESTORE_MODE, manager_mode(m));
        return 0;
}

static int verb_reload(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        _cleanup_memstream_ memstream ms = {};
        char *buf;
        size_t size;
        int r;

        if (!memstream_open(&ms))
                return -ENOMEM;
        r = manager_reload(m, ms.f);
        if (r < 0) {
                /* hand the file:line messages to the caller, without the trailing newline */
                if (memstream_finish(&ms, &buf, &size) >= 0) {
                        if (size > 0 && buf[size - 1] == '\n')
                                buf[size - 1] = 0;
                        *error = buf;
                }
                return r;
        }
        *reply = oom_check(json_object_new_object());
        return 0;
}

/* top lists the devices that hold or move data, or whose writers were throttled this tick. */
static bool top_device_wanted(void *userdata, const bdi_device *d) {
        manager *m = userdata;
        json_object *throttle;

        if (bdi_device_active(d))
                return true;
        throttle = attribution_device_json(m->attribution, d->bdi);
        json_object_put(throttle);
        return throttle != NULL;
}

static json_object *top_device_json(void *userdata, const bdi_device *d) {
        manager *m = userdata;
        json_object *o = device_json(m, d), *throttle = attribution_device_json(m->attribution, d->bdi);

        if (throttle)
                proto_add(o, PF_DEVICE_THROTTLE, throttle);
        return o;
}

/* The latest tick for `wbtunectl top`: global state, the devices that hold or move data, who dirties, who waits. */
static int verb_top(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        report_daemon d = manager_report(m);

        *reply = report_top(&d, &m->current);
        attribution_top_json(m->attribution, &m->current, *reply);
        return report_devices_stream(&m->current, PF_TOP_DEVICES, top_device_wanted, top_device_json, m, stream);
}

/* {"device": optional DEV, "format": "json" (default) or "csv"} */
static int verb_history(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        manager *m = userdata;
        json_object *v, *o;
        const char *key = NULL, *bdi = NULL;
        bool csv = false;
        int r;

        if (!m->history) {
                *error = xstrdup("no history is kept");
                return -ENODATA;
        }
        v = proto_get(request, PF_REQUEST_DEVICE);
        if (v) {
                const bdi_device *d;

                if (!json_object_is_type(v, json_type_string)) {
                        *error = xstrdup("\"device\" must be a string: a name, mount point or MAJ:MIN");
                        return -EINVAL;
                }
                key = json_object_get_string(v);
                d = sample_find_device(&m->current, key);
                bdi = d ? d->bdi : key;     /* a device that is gone still has its history for a while */
        }
        v = proto_get(request, PF_REQUEST_FORMAT);
        if (v) {
                const char *format = proto_value_str(v);

                if (strcmp(format, PROTOCOL_FORMAT_JSON) != 0 && strcmp(format, PROTOCOL_FORMAT_CSV) != 0) {
                        *error = xstrdup("\"format\" must be \"json\" or \"csv\"");
                        return -EINVAL;
                }
                csv = strcmp(format, PROTOCOL_FORMAT_CSV) == 0;
        }
        if (bdi && history_device_size(m->history, bdi) == 0) {
                if (asprintf(error, "no history for device '%s'", key) < 0)
                        *error = NULL;
                return -ENODEV;
        }
        o = oom_check(json_object_new_object());
        if (csv) {
                _cleanup_memstream_ memstream ms = {};
                _cleanup_free_ char *text = NULL;
                size_t size;

                proto_add_u64(o, PF_HISTORY_CSV_TICK_MS, m->config.tick_ms);
                proto_add_u64(o, PF_HISTORY_CSV_MINUTES, m->history_minutes);
                proto_add_string(o, PF_HISTORY_CSV_BDI, bdi);
                if (!memstream_open(&ms)) {
                        json_object_put(o);
                        return -ENOMEM;
                }
                r = history_to_csv(m->history, bdi, ms.f);
                if (r >= 0)
                        r = memstream_finish(&ms, &text, &size);
                if (r >= 0)
                        proto_add_string_len(o, PF_HISTORY_CSV_CSV, text, size);
        } else {
                proto_add_u64(o, PF_HISTORY_TICK_MS, m->config.tick_ms);
                proto_add_u64(o, PF_HISTORY_MINUTES, m->history_minutes);
                proto_add_string(o, PF_HISTORY_BDI, bdi);
                r = history_json_stream(m->history, bdi, o, stream);
                if (r == -ENOENT)
                        r = -ENODEV;
        }
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *reply = o;
        return 0;
}

/* The metrics of this moment: status and every device with its tuning, as the verbs show them (also the
 * metrics_textfile). */
int manager_metrics(manager *m, metrics_snapshot **ret) {
        json_object *status = manager_status_json(m);
        metrics_snapshot *snap = NULL;
        int r;

        r = metrics_snapshot_new(status, &snap);
        json_object_put(status);
        for (size_t i = 0; r >= 0 && i < m->current.n_devices; i++) {
                json_object *d = device_json(m, &m->current.devices[i]);

                r = d ? metrics_snapshot_add_device(snap, d) : -ENOMEM;
                json_object_put(d);
        }
        if (r < 0) {
                metrics_snapshot_free(snap);
                return r;
        }
        *ret = snap;
        return 0;
}

static int verb_metrics(void *userdata, json_object *request, json_object **reply, control_stream *stream, char **error) {
        metrics_snapshot *snap;
        int r;

        r = manager_metrics(userdata, &snap);
        if (r < 0)
                return r;
        *reply = oom_check(json_object_new_object());
        return metrics_stream(snap, stream);
}

static const control_verb manager_verbs[] = {
        { PROTOCOL_VERB_STATUS,  false, verb_status },
        { PROTOCOL_VERB_DEVICES, false, verb_devices },
        { PROTOCOL_VERB_SHOW,    false, verb_show },
        { PROTOCOL_VERB_EXPLAIN, false, verb_explain },
        { PROTOCOL_VERB_TOP,     false, verb_top },
        { PROTOCOL_VERB_HISTORY, false, verb_history },
        { PROTOCOL_VERB_RELOAD,  true,  verb_reload },
        { PROTOCOL_VERB_RESTORE, true,  verb_restore },
        { PROTOCOL_VERB_METRICS, false, verb_metrics },
};

const control_verb *manager_control_verbs(size_t *ret_n) {
        *ret_n = ELEMENTSOF(manager_verbs);
        return manager_verbs;
}
