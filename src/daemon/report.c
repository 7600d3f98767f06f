/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON views of samples and of the daemon for the control protocol, built through protocol.h's names. */
#include <string.h>

#include "protocol.h"
#include "report.h"
#include "util.h"

/* The knob table's files as an object of "file": value, the protocol's field for each found by name
 * (a file the protocol does not list is a bug the protocol test catches: proto_field_named() logs it). */
static json_object *knob_files_json(protocol_kind kind, bool device, const knob_reading *readings) {
        json_object *o = oom_check(json_object_new_object());
        knob_id knob;
        knob_form form;
        for (size_t n = 0; knob_file_nth(device, n, &knob, &form); n++) {
                const knob_reading *r = &readings[device ? knob - KNOB_DEVICE_FIRST : knob];
                int f = proto_field_named(kind, knob_form_file(knob, form));

                if (f >= 0 && knob_reading_has(r, form))
                        proto_add_u64(o, (protocol_field) f, r->value[form]);
        }
        return o;
}

json_object *report_vm_knobs(const vm_knobs *k) {
        return knob_files_json(PK_VM_KNOBS, false, k->k);
}

json_object *report_bdi_knobs(const bdi_knobs *k) {
        return knob_files_json(PK_BDI_KNOBS, true, k->k);
}

json_object *report_global(const global_state *g) {
        json_object *o = oom_check(json_object_new_object());
        proto_add_u64(o, PF_GLOBAL_DIRTY_BYTES, g->dirty_bytes);
        proto_add_u64(o, PF_GLOBAL_WRITEBACK_BYTES, g->writeback_bytes);
        proto_add_u64(o, PF_GLOBAL_DIRTY_THRESH_BYTES, g->dirty_thresh_bytes);
        proto_add_u64(o, PF_GLOBAL_BACKGROUND_THRESH_BYTES, g->background_thresh_bytes);
        proto_add_u64(o, PF_GLOBAL_DIRTIED_TOTAL_BYTES, g->dirtied_total_bytes);
        proto_add_u64(o, PF_GLOBAL_WRITTEN_TOTAL_BYTES, g->written_total_bytes);
        proto_add_u64(o, PF_GLOBAL_MEM_TOTAL_BYTES, g->mem_total_bytes);
        proto_add_u64(o, PF_GLOBAL_MEM_AVAILABLE_BYTES, g->mem_available_bytes);
        proto_add_u64(o, PF_GLOBAL_DIRTY_RATE_BYTES_PER_S, g->dirty_rate_bytes_per_s);
        proto_add_u64(o, PF_GLOBAL_WRITE_RATE_BYTES_PER_S, g->write_rate_bytes_per_s);
        proto_add(o, PF_GLOBAL_KNOBS, report_vm_knobs(&g->knobs));
        return o;
}

static json_object *traits_array(unsigned traits) {
        json_object *a = oom_check(json_object_new_array());
        for (unsigned bit = 1; bit <= BDI_TRAIT_FUSE; bit <<= 1)
                if (traits & bit)
                        oom_check_add(json_object_array_add(a, oom_check(json_object_new_string(trait_to_string(bit)))));
        return a;
}

json_object *report_device(const bdi_device *d) {
        json_object *o = oom_check(json_object_new_object()), *mounts;
        proto_add_string(o, PF_DEVICE_BDI, d->bdi);
        proto_add_bool(o, PF_DEVICE_HAS_DEVNUM, d->has_devnum);
        if (d->has_devnum) {
                proto_add_u64(o, PF_DEVICE_MAJOR, d->major);
                proto_add_u64(o, PF_DEVICE_MINOR, d->minor);
        }
        proto_add_string(o, PF_DEVICE_NAME, d->name);
        if (d->alias[0])
                proto_add_string(o, PF_DEVICE_ALIAS, d->alias);
        proto_add_string(o, PF_DEVICE_FSTYPE, d->fstype);
        mounts = oom_check(json_object_new_array());
        for (size_t i = 0; mounts && i < d->n_mounts; i++)
                oom_check_add(json_object_array_add(mounts, oom_check(json_object_new_string(d->mounts[i]))));
        proto_add(o, PF_DEVICE_MOUNTS, mounts);
        proto_add_string(o, PF_DEVICE_MODEL, d->model);
        proto_add(o, PF_DEVICE_TRAITS, traits_array(d->traits));
        proto_add(o, PF_DEVICE_KNOBS, report_bdi_knobs(&d->knobs));
        proto_add_string(o, PF_DEVICE_SOURCE, stats_source_to_string(d->source));
        proto_add_u64(o, PF_DEVICE_DIRTY_BYTES, d->dirty_bytes);
        proto_add_u64(o, PF_DEVICE_WRITEBACK_BYTES, d->writeback_bytes);
        proto_add_u64(o, PF_DEVICE_THRESH_BYTES, d->thresh_bytes);
        proto_add_u64(o, PF_DEVICE_DIRTIED_TOTAL_BYTES, d->dirtied_total_bytes);
        proto_add_u64(o, PF_DEVICE_WRITTEN_TOTAL_BYTES, d->written_total_bytes);
        proto_add_u64(o, PF_DEVICE_KERNEL_BW_BYTES_PER_S, d->kernel_bw_bytes_per_s);
        proto_add_u64(o, PF_DEVICE_WB_BW_BYTES_PER_S, d->writing_wbs_bw_bytes_per_s);
        proto_add_u64(o, PF_DEVICE_WRITE_BW_BYTES_PER_S, d->write_bw_bytes_per_s);
        proto_add_u64(o, PF_DEVICE_DIRTY_RATE_BYTES_PER_S, d->dirty_rate_bytes_per_s);
        proto_add_u64(o, PF_DEVICE_BACKLOG_BYTES, d->backlog_bytes);
        proto_add_double(o, PF_DEVICE_BACKLOG_S, d->backlog_s);
        proto_add_bool(o, PF_DEVICE_SEEN_BEFORE, d->seen_before);
        return o;
}

json_object *report_devices(const sample *s) {
        json_object *a = oom_check(json_object_new_array());
        for (size_t i = 0; i < s->n_devices; i++)
                oom_check_add(json_object_array_add(a, report_device(&s->devices[i])));
        return a;
}

json_object *report_sample(const sample *s) {
        json_object *o = oom_check(json_object_new_object());
        /* not a reply of its own: one sample under the names top uses */
        proto_add_u64(o, PF_TOP_TIME_USEC, s->time_usec);
        proto_add_bool(o, PF_STATUS_DEBUGFS, s->debugfs);
        proto_add(o, PF_TOP_GLOBAL, report_global(&s->global));
        proto_add(o, PF_TOP_DEVICES, report_devices(s));
        return o;
}

/* --- knob objects -------------------------------------------------------------------------- */

static void add_u64_or_null(json_object *o, protocol_field f, bool have, uint64_t v) {
        if (have)
                proto_add_u64(o, f, v);
        else
                proto_add_null(o, f);
}

/* s, or null when there is none (NULL or empty) */
static void add_string_or_null(json_object *o, protocol_field f, const char *s) {
        if (s && *s)
                proto_add_string(o, f, s);
        else
                proto_add_null(o, f);
}

json_object *report_knob_json(const report_knob *k) {
        json_object *o = oom_check(json_object_new_object()), *original = NULL;
        proto_add_string(o, PF_KNOB_KNOB, k->knob ? k->knob : "");
        proto_add_string(o, PF_KNOB_UNIT, k->unit ? k->unit : "");
        proto_add_bool(o, PF_KNOB_SUPPORTED, k->supported);
        add_u64_or_null(o, PF_KNOB_CURRENT, k->have_current, k->current);
        add_u64_or_null(o, PF_KNOB_DESIRED, k->have_desired, k->desired);
        add_u64_or_null(o, PF_KNOB_POLICY, k->have_policy, k->policy);
        proto_add_string(o, PF_KNOB_REASON, k->reason ? k->reason : "");
        proto_add_string(o, PF_KNOB_CLAMP, k->clamp);
        if (k->have_original) {
                original = oom_check(json_object_new_object());
                proto_add_string(original, PF_ORIGINAL_FILE, k->original_file ? k->original_file : "");
                proto_add_u64(original, PF_ORIGINAL_VALUE, k->original_value);
                proto_add_string(original, PF_ORIGINAL_UNIT, k->original_unit ? k->original_unit : "");
        }
        proto_add(o, PF_KNOB_ORIGINAL, original);
        proto_add_string(o, PF_KNOB_STATE, k->state ? k->state : "");
        proto_add_string(o, PF_KNOB_NOTE, k->note);
        return o;
}

json_object *report_tuning(json_object *knobs) {
        json_object *o = oom_check(json_object_new_object());

        proto_add(o, PF_TUNING_KNOBS, knobs ? knobs : oom_check(json_object_new_array()));
        return o;
}

json_object *report_device_tuning(bool managed, bool active, uint64_t bw_estimate_bytes_per_s, json_object *knobs) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_bool(o, PF_DEVICE_TUNING_MANAGED, managed);
        proto_add_bool(o, PF_DEVICE_TUNING_ACTIVE, active);
        proto_add_u64(o, PF_DEVICE_TUNING_BW_ESTIMATE_BYTES_PER_S, bw_estimate_bytes_per_s);
        proto_add(o, PF_TUNING_KNOBS, knobs ? knobs : oom_check(json_object_new_array()));
        return o;
}

/* --- the daemon ------------------------------------------------------------------------------ */

json_object *report_status(const report_daemon *d, const sample *s, json_object *tuning, json_object *attribution,
                           json_object *history, json_object *hotplug, json_object *writes,
                           json_object *support) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_string(o, PF_STATUS_PACKAGE_VERSION, PACKAGE_VERSION);
        proto_add_u64(o, PF_STATUS_PID, d->pid);
        proto_add_double(o, PF_STATUS_UPTIME_S, d->uptime_s);
        proto_add_string(o, PF_STATUS_MODE, d->mode);
        proto_add_u64(o, PF_STATUS_TICK_MS, d->tick_ms);
        proto_add_u64(o, PF_STATUS_TICKS, d->ticks);
        proto_add_bool(o, PF_STATUS_DRY_RUN, d->dry_run);
        add_string_or_null(o, PF_STATUS_OBSERVE_ONLY_REASON, d->observe_only_reason);
        proto_add_string(o, PF_STATUS_ROOT, d->root ? d->root : "/");
        proto_add_string(o, PF_STATUS_CONFIG, d->config_path ? d->config_path : "");
        proto_add_bool(o, PF_STATUS_DEBUGFS, s->debugfs);
        proto_add_string(o, PF_STATUS_STATS_SOURCE,
                         s->debugfs ? "debugfs" : "blockstat (debugfs unavailable: /sys/block/<dev>/stat sector deltas)");
        proto_add_u64(o, PF_STATUS_N_DEVICES, s->n_devices);
        proto_add(o, PF_STATUS_GLOBAL, report_global(&s->global));
        proto_add(o, PF_STATUS_TUNING, tuning ? tuning : report_tuning(NULL));
        proto_add(o, PF_STATUS_ATTRIBUTION, attribution);
        proto_add(o, PF_STATUS_HISTORY, history);
        proto_add(o, PF_STATUS_HOTPLUG, hotplug);
        proto_add(o, PF_STATUS_WRITES, writes);
        proto_add(o, PF_STATUS_KERNEL_SUPPORT, support);
        proto_add_u64(o, PF_STATUS_LAST_TICK_WORK_USEC, d->last_tick_work_usec);
        proto_add_u64(o, PF_STATUS_TICK_WORK_TOTAL_USEC, d->tick_work_total_usec);
        if (d->work) {
                json_object *w = oom_check(json_object_new_object());

                proto_add_u64(w, PF_WORK_SAMPLE, d->work->sample_usec);
                proto_add_u64(w, PF_WORK_CGROUPS, d->work->cgroups_usec);
                proto_add_u64(w, PF_WORK_DECIDE_ACT, d->work->decide_act_usec);
                proto_add_u64(w, PF_WORK_HISTORY, d->work->history_usec);
                proto_add_u64(w, PF_WORK_ATTRIBUTION, d->work->attribution_usec);
                proto_add_u64(w, PF_WORK_TRACE_DRAIN, d->work->trace_drain_usec);
                proto_add(o, PF_STATUS_WORK_USEC, w);
        }
        return o;
}

json_object *report_writes_json(const report_writes *w) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_bool(o, PF_WRITES_ENABLED, w->enabled);
        proto_add_string(o, PF_WRITES_REASON, w->reason ? w->reason : "");
        proto_add_u64(o, PF_WRITES_TOTAL, w->total);
        proto_add_u64(o, PF_WRITES_LAST_MINUTE, w->last_minute);
        proto_add_u64(o, PF_WRITES_OVERRIDES_TOTAL, w->overrides_total);
        proto_add_u64(o, PF_WRITES_FAILURES_TOTAL, w->failures_total);
        proto_add_u64(o, PF_WRITES_GUARD_HOLDS_TOTAL, w->guard_holds_total);
        proto_add_string(o, PF_WRITES_SAVED_FILE, w->saved_file ? w->saved_file : "");
        add_string_or_null(o, PF_WRITES_SAVED_FILE_REFUSED, w->saved_file_refused);
        add_string_or_null(o, PF_WRITES_LIMITED_TO, w->limited_to);
        add_string_or_null(o, PF_WRITES_LIMITED_WHY, w->limited_why);
        return o;
}

json_object *report_kernel_support(const kernel_support *ks, const memcg_summary *memcg) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_bool(o, PF_KERNEL_SUPPORT_DEBUGFS, ks->debugfs);
        proto_add_bool(o, PF_KERNEL_SUPPORT_WB_STATS, ks->wb_stats);
        proto_add_bool(o, PF_KERNEL_SUPPORT_CGROUP_WRITEBACK, ks->cgroup_writeback);
        proto_add_bool(o, PF_KERNEL_SUPPORT_BDI_BYTES, ks->bdi_bytes);
        proto_add_bool(o, PF_KERNEL_SUPPORT_STRICT_LIMIT, ks->strict_limit);
        proto_add_bool(o, PF_KERNEL_SUPPORT_DEVICES_TRUSTED, ks->devices_trusted);
        proto_add_u64(o, PF_KERNEL_SUPPORT_UNACCOUNTED_BYTES, ks->unaccounted_bytes);
        add_string_or_null(o, PF_KERNEL_SUPPORT_WHY, ks->why);
        proto_add_bool(o, PF_KERNEL_SUPPORT_MEMCG_V2, memcg->cgroup2);
        proto_add_u64(o, PF_KERNEL_SUPPORT_MEMCG_LIMITED, memcg->n_limited);
        proto_add_u64(o, PF_KERNEL_SUPPORT_MEMCG_WRITING, memcg->n_writing);
        return o;
}

json_object *report_hotplug(bool enabled, const char *reason, uint64_t events) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_bool(o, PF_HOTPLUG_ENABLED, enabled);
        if (!enabled)
                proto_add_string(o, PF_HOTPLUG_REASON, reason ? reason : "");
        proto_add_u64(o, PF_HOTPLUG_EVENTS, events);
        return o;
}

json_object *report_top(const report_daemon *d, const sample *s) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_u64(o, PF_TOP_TIME_USEC, s->time_usec);
        proto_add_u64(o, PF_TOP_TICK_MS, d->tick_ms);
        proto_add_u64(o, PF_TOP_TICKS, d->ticks);
        proto_add_string(o, PF_TOP_MODE, d->mode);
        proto_add(o, PF_TOP_GLOBAL, report_global(&s->global));
        return o;
}

/* --- streamed device lists --------------------------------------------------------------------- */

typedef struct device_stream {
        const sample *s;
        char (*bdis)[sizeof(((bdi_device *) NULL)->bdi)];   /* the devices to send, as of the request */
        size_t n_bdis, next;
        size_t hint;              /* where the next one probably is in s->devices */
        report_device_item_t item;
        void *userdata;
} device_stream;

static void device_stream_free(void *state) {
        device_stream *st = state;

        if (!st)
                return;
        free(st->bdis);
        free(st);
}

/* The device named bdi in the current sample: at the hint when the sample still has the same devices
 * (most ticks), else by a scan. */
static const bdi_device *device_stream_find(device_stream *st, const char *bdi) {
        const sample *s = st->s;

        if (st->hint < s->n_devices && strcmp(s->devices[st->hint].bdi, bdi) == 0)
                return &s->devices[st->hint++];
        for (size_t i = 0; i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, bdi) == 0) {
                        st->hint = i + 1;
                        return &s->devices[i];
                }
        return NULL;
}

static int device_stream_next(void *state, char **ret_name, json_object **ret_item) {
        device_stream *st = state;

        while (st->next < st->n_bdis) {
                const bdi_device *d = device_stream_find(st, st->bdis[st->next++]);
                json_object *item;

                if (!d)
                        continue;   /* gone since the request */
                item = st->item(st->userdata, d);
                if (!item)
                        return -ENOMEM;
                *ret_name = NULL;
                *ret_item = item;
                return 1;
        }
        return 0;
}

int report_devices_stream(const sample *s, protocol_field key, report_device_filter_t filter,
                          report_device_item_t item, void *userdata, control_stream *ret) {
        device_stream *st = calloc(1, sizeof *st);

        if (!st)
                return -ENOMEM;
        st->s = s;
        st->item = item;
        st->userdata = userdata;
        st->bdis = calloc(MAX(s->n_devices, (size_t) 1), sizeof st->bdis[0]);
        if (!st->bdis) {
                device_stream_free(st);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_devices; i++)
                if (!filter || filter(userdata, &s->devices[i]))
                        memcpy(st->bdis[st->n_bdis++], s->devices[i].bdi, sizeof st->bdis[0]);
        *ret = (control_stream) {
                .key = protocol_name(key),
                .keyed = false,
                .next = device_stream_next,
                .free_state = device_stream_free,
                .state = st,
        };
        return 0;
}
