/* JSON views of samples for the control protocol; keys are the struct field names of observe.h. */
#include "report.h"
#include "util.h"

static void add_u64(json_object *o, const char *key, uint64_t v) {
        json_object_object_add(o, key, json_object_new_uint64(v));
}

json_object *report_vm_knobs(const vm_knobs *k) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        add_u64(o, "dirty_bytes", k->dirty_bytes);
        add_u64(o, "dirty_background_bytes", k->dirty_background_bytes);
        add_u64(o, "dirty_ratio", k->dirty_ratio);
        add_u64(o, "dirty_background_ratio", k->dirty_background_ratio);
        add_u64(o, "dirty_writeback_centisecs", k->dirty_writeback_centisecs);
        add_u64(o, "dirty_expire_centisecs", k->dirty_expire_centisecs);
        return o;
}

json_object *report_bdi_knobs(const bdi_knobs *k) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (k->have & BDI_HAVE_MIN_RATIO)
                add_u64(o, "min_ratio", k->min_ratio);
        if (k->have & BDI_HAVE_MAX_RATIO)
                add_u64(o, "max_ratio", k->max_ratio);
        if (k->have & BDI_HAVE_MIN_RATIO_FINE)
                add_u64(o, "min_ratio_fine", k->min_ratio_fine);
        if (k->have & BDI_HAVE_MAX_RATIO_FINE)
                add_u64(o, "max_ratio_fine", k->max_ratio_fine);
        if (k->have & BDI_HAVE_MIN_BYTES)
                add_u64(o, "min_bytes", k->min_bytes);
        if (k->have & BDI_HAVE_MAX_BYTES)
                add_u64(o, "max_bytes", k->max_bytes);
        if (k->have & BDI_HAVE_STRICT_LIMIT)
                add_u64(o, "strict_limit", k->strict_limit);
        return o;
}

json_object *report_global(const global_state *g) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        add_u64(o, "dirty_bytes", g->dirty_bytes);
        add_u64(o, "writeback_bytes", g->writeback_bytes);
        add_u64(o, "dirty_thresh_bytes", g->dirty_thresh_bytes);
        add_u64(o, "background_thresh_bytes", g->background_thresh_bytes);
        add_u64(o, "dirtied_total_bytes", g->dirtied_total_bytes);
        add_u64(o, "written_total_bytes", g->written_total_bytes);
        add_u64(o, "mem_total_bytes", g->mem_total_bytes);
        add_u64(o, "mem_available_bytes", g->mem_available_bytes);
        add_u64(o, "dirty_rate_bytes_per_s", g->dirty_rate_bytes_per_s);
        add_u64(o, "write_rate_bytes_per_s", g->write_rate_bytes_per_s);
        json_object_object_add(o, "knobs", report_vm_knobs(&g->knobs));
        return o;
}

static json_object *traits_array(unsigned traits) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (unsigned bit = 1; bit <= BDI_TRAIT_FUSE; bit <<= 1)
                if (traits & bit)
                        json_object_array_add(a, json_object_new_string(trait_to_string(bit)));
        return a;
}

json_object *report_device(const bdi_device *d) {
        json_object *o = json_object_new_object(), *mounts;

        if (!o)
                return NULL;
        json_object_object_add(o, "bdi", json_object_new_string(d->bdi));
        json_object_object_add(o, "has_devnum", json_object_new_boolean(d->has_devnum));
        if (d->has_devnum) {
                add_u64(o, "major", d->major);
                add_u64(o, "minor", d->minor);
        }
        json_object_object_add(o, "name", json_object_new_string(d->name));
        if (d->alias[0])
                json_object_object_add(o, "alias", json_object_new_string(d->alias));
        json_object_object_add(o, "fstype", json_object_new_string(d->fstype));
        mounts = json_object_new_array();
        for (size_t i = 0; mounts && i < d->n_mounts; i++)
                json_object_array_add(mounts, json_object_new_string(d->mounts[i]));
        json_object_object_add(o, "mounts", mounts);
        json_object_object_add(o, "model", json_object_new_string(d->model));
        json_object_object_add(o, "traits", traits_array(d->traits));
        json_object_object_add(o, "knobs", report_bdi_knobs(&d->knobs));
        json_object_object_add(o, "source", json_object_new_string(stats_source_to_string(d->source)));
        add_u64(o, "dirty_bytes", d->dirty_bytes);
        add_u64(o, "writeback_bytes", d->writeback_bytes);
        add_u64(o, "thresh_bytes", d->thresh_bytes);
        add_u64(o, "dirtied_total_bytes", d->dirtied_total_bytes);
        add_u64(o, "written_total_bytes", d->written_total_bytes);
        add_u64(o, "kernel_bw_bytes_per_s", d->kernel_bw_bytes_per_s);
        add_u64(o, "wb_bw_bytes_per_s", d->wb_bw_bytes_per_s);
        add_u64(o, "write_bw_bytes_per_s", d->write_bw_bytes_per_s);
        add_u64(o, "dirty_rate_bytes_per_s", d->dirty_rate_bytes_per_s);
        add_u64(o, "backlog_bytes", d->backlog_bytes);
        json_object_object_add(o, "backlog_s", json_object_new_double(d->backlog_s));
        json_object_object_add(o, "seen_before", json_object_new_boolean(d->seen_before));
        return o;
}

json_object *report_devices(const sample *s) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < s->n_devices; i++)
                json_object_array_add(a, report_device(&s->devices[i]));
        return a;
}

json_object *report_sample(const sample *s) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        add_u64(o, "time_usec", s->time_usec);
        json_object_object_add(o, "debugfs", json_object_new_boolean(s->debugfs));
        json_object_object_add(o, "global", report_global(&s->global));
        json_object_object_add(o, "devices", report_devices(s));
        return o;
}
