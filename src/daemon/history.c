/* SPDX-License-Identifier: GPL-2.0-or-later */
/* History rings: one global ring and one ring per device, all of the same fixed capacity. */
#include "history.h"

#include <inttypes.h>
#include <string.h>

#include "protocol.h"
#include "util.h"

typedef struct device_ring {
        char bdi[64];
        uint64_t last_seq;        /* tick it was last present */
        history_point *points;    /* capacity entries */
        size_t head, count;       /* head: next slot to write */
} device_ring;

struct history {
        size_t capacity;
        uint64_t seq;             /* ticks added so far; the next tick's number */
        history_global *global;
        size_t head, count;
        device_ring *devices;     /* sorted by bdi */
        size_t n_devices;
        uint64_t devices_dropped; /* beyond HISTORY_DEVICES_MAX */
};

size_t history_capacity(uint64_t minutes, uint64_t tick_ms, bool *ret_capped) {
        const uint64_t cap = HISTORY_MEMORY_MAX / (sizeof(history_global) + HISTORY_DEVICES_MAX * sizeof(history_point));
        uint64_t n;

        if (tick_ms == 0)
                tick_ms = 1000;
        n = minutes * 60 * 1000 / tick_ms;
        if (ret_capped)
                *ret_capped = n > cap;
        n = MIN(n, cap);
        return n ? (size_t) n : 1;
}

history *history_new(size_t capacity) {
        history *h;

        if (capacity == 0 || capacity > SIZE_MAX / sizeof(history_point))
                return NULL;
        h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        h->capacity = capacity;
        h->global = calloc(capacity, sizeof(h->global[0]));
        h->devices = calloc(HISTORY_DEVICES_MAX, sizeof(h->devices[0]));
        if (!h->global || !h->devices)
                return history_free(h);
        return h;
}

history *history_free(history *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n_devices; i++)
                free(h->devices[i].points);
        free(h->devices);
        free(h->global);
        free(h);
        return NULL;
}

/* Index of bdi, or where it would go (with *found false). */
static int device_cmp(const void *bdi, const void *elem) {
        return strcmp(bdi, ((const device_ring *) elem)->bdi);
}

static size_t device_index(const history *h, const char *bdi, bool *found) {
        return search_sorted(h->devices, h->n_devices, sizeof *h->devices, bdi, device_cmp, found);
}

static const device_ring *device_get(const history *h, const char *bdi) {
        bool found;
        size_t i;

        if (!bdi)
                return NULL;
        i = device_index(h, bdi, &found);
        return found ? &h->devices[i] : NULL;
}

static device_ring *device_add(history *h, const char *bdi, int *error) {
        bool found;
        size_t i = device_index(h, bdi, &found);
        history_point *points;

        if (found)
                return &h->devices[i];
        if (h->n_devices >= HISTORY_DEVICES_MAX) {
                h->devices_dropped++;
                return NULL;
        }
        points = calloc(h->capacity, sizeof(points[0]));
        if (!points) {
                *error = -ENOMEM;
                return NULL;
        }
        memmove(&h->devices[i + 1], &h->devices[i], (h->n_devices - i) * sizeof(h->devices[0]));
        h->n_devices++;
        memset(&h->devices[i], 0, sizeof(h->devices[i]));
        snprintf(h->devices[i].bdi, sizeof(h->devices[i].bdi), "%s", bdi);
        h->devices[i].points = points;
        return &h->devices[i];
}

/* Oldest tick number still in the global window. */
static uint64_t oldest_seq(const history *h) {
        return h->seq - h->count;
}

/* The device's cap in bytes now, whichever file the kernel has it in; 0 if none. */
static uint64_t max_bytes_of(const bdi_device *d, uint64_t thresh_bytes) {
        uint64_t v = 0;

        (void) knob_reading_value(KNOB_MAX_BYTES, &d->knobs.k[KNOB_MAX_BYTES - KNOB_DEVICE_FIRST], thresh_bytes, &v);
        return v;
}

int history_add(history *h, const sample *s) {
        uint64_t seq = h->seq;
        int error = 0;

        h->global[h->head] = (history_global) {
                .time_usec = s->time_usec,
                .realtime_usec = s->realtime_usec,
                .dirty_bytes = s->global.dirty_bytes,
                .writeback_bytes = s->global.writeback_bytes,
                .dirty_thresh_bytes = s->global.dirty_thresh_bytes,
                .background_thresh_bytes = s->global.background_thresh_bytes,
        };
        h->head = (h->head + 1) % h->capacity;
        h->count = MIN(h->count + 1, h->capacity);
        h->seq++;

        for (size_t i = 0; i < s->n_devices; i++) {
                const bdi_device *d = &s->devices[i];
                device_ring *r = device_add(h, d->bdi, &error);

                if (!r)
                        continue;
                r->points[r->head] = (history_point) {
                        .time_usec = s->time_usec,
                        .dirty_bytes = d->dirty_bytes,
                        .writeback_bytes = d->writeback_bytes,
                        .thresh_bytes = d->thresh_bytes,
                        .write_bw_bytes_per_s = d->write_bw_bytes_per_s,
                        .dirty_rate_bytes_per_s = d->dirty_rate_bytes_per_s,
                        .max_bytes = max_bytes_of(d, s->global.dirty_thresh_bytes),
                        .seq = seq,
                };
                r->head = (r->head + 1) % h->capacity;
                r->count = MIN(r->count + 1, h->capacity);
                r->last_seq = seq;
        }

        /* A device gone for a whole window has nothing left to show: give its ring back. */
        for (size_t i = 0; i < h->n_devices;) {
                device_ring *r = &h->devices[i];

                if (r->last_seq < oldest_seq(h)) {
                        free(r->points);
                        memmove(r, r + 1, (h->n_devices - i - 1) * sizeof(*r));
                        h->n_devices--;
                } else
                        i++;
        }
        return error;
}

size_t history_size(const history *h) {
        return h->count;
}

/* Points of a device still inside the global window, oldest first: first index into the ring and count. */
static size_t device_window(const history *h, const device_ring *r, size_t *first) {
        size_t start = (r->head + h->capacity - r->count) % h->capacity, n = r->count;

        while (n > 0 && r->points[start].seq < oldest_seq(h)) {
                start = (start + 1) % h->capacity;
                n--;
        }
        *first = start;
        return n;
}

size_t history_device_size(const history *h, const char *bdi) {
        const device_ring *r = device_get(h, bdi);
        size_t first;

        return r ? device_window(h, r, &first) : 0;
}

size_t history_n_devices(const history *h) {
        return h->n_devices;
}

size_t history_memory_bytes(const history *h) {
        return sizeof(*h) + h->capacity * sizeof(h->global[0]) + HISTORY_DEVICES_MAX * sizeof(h->devices[0]) +
               h->n_devices * h->capacity * sizeof(history_point);
}

static const history_global *global_at_seq(const history *h, uint64_t seq) {
        size_t start = (h->head + h->capacity - h->count) % h->capacity;

        if (seq < oldest_seq(h) || seq >= h->seq)
                return NULL;
        return &h->global[(start + (seq - oldest_seq(h))) % h->capacity];
}

/* ---- JSON ------------------------------------------------------------------------------------ */

json_object *history_status_json(const history *h, uint64_t minutes) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_u64(o, PF_HISTORY_STATUS_MINUTES, minutes);
        proto_add_u64(o, PF_HISTORY_STATUS_TICKS, h ? history_size(h) : 0);
        proto_add_u64(o, PF_HISTORY_STATUS_DEVICES, h ? history_n_devices(h) : 0);
        proto_add_u64(o, PF_HISTORY_STATUS_MEMORY_BYTES, h ? history_memory_bytes(h) : 0);
        return o;
}

/* X(struct member, protocol field) */
#define GLOBAL_COLUMNS(X) \
        X(realtime_usec, PF_HISTORY_GLOBAL_REALTIME_USEC) \
        X(time_usec, PF_HISTORY_GLOBAL_TIME_USEC) \
        X(dirty_bytes, PF_HISTORY_GLOBAL_DIRTY_BYTES) \
        X(writeback_bytes, PF_HISTORY_GLOBAL_WRITEBACK_BYTES) \
        X(dirty_thresh_bytes, PF_HISTORY_GLOBAL_DIRTY_THRESH_BYTES) \
        X(background_thresh_bytes, PF_HISTORY_GLOBAL_BACKGROUND_THRESH_BYTES)
#define DEVICE_COLUMNS(X) \
        X(time_usec, PF_HISTORY_DEVICE_TIME_USEC) \
        X(dirty_bytes, PF_HISTORY_DEVICE_DIRTY_BYTES) \
        X(writeback_bytes, PF_HISTORY_DEVICE_WRITEBACK_BYTES) \
        X(thresh_bytes, PF_HISTORY_DEVICE_THRESH_BYTES) \
        X(write_bw_bytes_per_s, PF_HISTORY_DEVICE_WRITE_BW_BYTES_PER_S) \
        X(dirty_rate_bytes_per_s, PF_HISTORY_DEVICE_DIRTY_RATE_BYTES_PER_S) \
        X(max_bytes, PF_HISTORY_DEVICE_MAX_BYTES)

static json_object *global_to_json(const history *h) {
        json_object *o = oom_check(json_object_new_object());
#define DECL(f, field) json_object *a_##f = oom_check(json_object_new_array_ext((int) h->count));
        GLOBAL_COLUMNS(DECL)
#undef DECL
        size_t start = (h->head + h->capacity - h->count) % h->capacity;

        for (size_t k = 0; k < h->count; k++) {
                const history_global *g = &h->global[(start + k) % h->capacity];
#define PUT(f, field) oom_check_add(json_object_array_add(a_##f, oom_check(json_object_new_uint64(g->f))));
                GLOBAL_COLUMNS(PUT)
#undef PUT
        }
#define ADD(f, field) proto_add(o, field, a_##f);
        GLOBAL_COLUMNS(ADD)
#undef ADD
        return o;
}

/* The wall clock of a device's point: its tick's, from the global ring (every point in the window has one). */
static uint64_t point_realtime_usec(const history *h, const history_point *p) {
        const history_global *g = global_at_seq(h, p->seq);

        return g ? g->realtime_usec : 0;
}

static json_object *device_to_json(const history *h, const device_ring *r) {
        json_object *o = oom_check(json_object_new_object()), *realtime;
        size_t first, n = device_window(h, r, &first);
#define DECL(f, field) json_object *a_##f = oom_check(json_object_new_array_ext((int) n));
        DEVICE_COLUMNS(DECL)
#undef DECL

        realtime = oom_check(json_object_new_array_ext((int) n));
        for (size_t k = 0; k < n; k++) {
                const history_point *p = &r->points[(first + k) % h->capacity];

                oom_check_add(json_object_array_add(realtime,
                                                    oom_check(json_object_new_uint64(point_realtime_usec(h, p)))));
#define PUT(f, field) oom_check_add(json_object_array_add(a_##f, oom_check(json_object_new_uint64(p->f))));
                DEVICE_COLUMNS(PUT)
#undef PUT
        }
        proto_add(o, PF_HISTORY_DEVICE_REALTIME_USEC, realtime);
#define ADD(f, field) proto_add(o, field, a_##f);
        DEVICE_COLUMNS(ADD)
#undef ADD
        return o;
}

typedef struct json_stream {
        const history *h;
        char (*bdis)[sizeof(((device_ring *) NULL)->bdi)];   /* the devices to send, as of the request */
        size_t n_bdis, next;
} json_stream;

static void json_stream_free(void *state) {
        json_stream *st = state;

        if (!st)
                return;
        free(st->bdis);
        free(st);
}

static int json_stream_next(void *state, char **ret_name, json_object **ret_item) {
        json_stream *st = state;

        while (st->next < st->n_bdis) {
                const char *bdi = st->bdis[st->next++];
                const device_ring *r = device_get(st->h, bdi);
                size_t first;

                /* a ring given back since the request has nothing left to send */
                if (!r || device_window(st->h, r, &first) == 0)
                        continue;
                *ret_name = strdup(bdi);
                *ret_item = device_to_json(st->h, r);
                if (!*ret_name || !*ret_item) {
                        free(*ret_name);
                        json_object_put(*ret_item);
                        return -ENOMEM;
                }
                return 1;
        }
        return 0;
}

int history_json_stream(const history *h, const char *bdi, json_object *head, control_stream *ret) {
        const device_ring *only = NULL;
        json_stream *st;
        size_t first;

        if (bdi) {
                only = device_get(h, bdi);
                if (!only || device_window(h, only, &first) == 0)
                        return -ENOENT;
        }
        st = calloc(1, sizeof *st);
        if (!st)
                return -ENOMEM;
        st->h = h;
        st->bdis = calloc(MAX(h->n_devices, (size_t) 1), sizeof st->bdis[0]);
        if (!st->bdis) {
                json_stream_free(st);
                return -ENOMEM;
        }
        for (size_t i = 0; i < h->n_devices; i++) {
                const device_ring *r = &h->devices[i];

                if ((only && r != only) || device_window(h, r, &first) == 0)
                        continue;
                memcpy(st->bdis[st->n_bdis++], r->bdi, sizeof st->bdis[0]);
        }
        proto_add_u64(head, PF_HISTORY_CAPACITY, h->capacity);
        proto_add(head, PF_HISTORY_GLOBAL, global_to_json(h));
        *ret = (control_stream) {
                .key = protocol_name(PF_HISTORY_DEVICES),
                .keyed = true,
                .next = json_stream_next,
                .free_state = json_stream_free,
                .state = st,
        };
        return 0;
}

json_object *history_to_json(const history *h, const char *bdi) {
        control_stream st;
        json_object *o = oom_check(json_object_new_object()), *devs = oom_check(json_object_new_object()), *item;
        char *name;
        int r;

        if (!o || !devs || history_json_stream(h, bdi, o, &st) < 0) {
                json_object_put(o);
                json_object_put(devs);
                return NULL;
        }
        while ((r = st.next(st.state, &name, &item)) > 0) {
                oom_check_add(json_object_object_add(devs, name, item));
                free(name);
        }
        st.free_state(st.state);
        if (r < 0) {
                json_object_put(o);
                json_object_put(devs);
                return NULL;
        }
        proto_add(o, PF_HISTORY_DEVICES, devs);
        return o;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

static void csv_row(FILE *f, const uint64_t *values, size_t n) {
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%" PRIu64, i > 0 ? "," : "", values[i]);
        fputc('\n', f);
}

int history_to_csv(const history *h, const char *bdi, FILE *f) {
        const device_ring *r = NULL;
        size_t n_columns = PROTOCOL_CSV_GLOBAL_COLUMNS;

        if (bdi) {
                r = device_get(h, bdi);
                if (!r)
                        return -ENOENT;
                n_columns = _PC_MAX;
        }
        for (size_t i = 0; i < n_columns; i++)
                fprintf(f, "%s%s", i > 0 ? "," : "", protocol_csv_column_name(i));
        fputc('\n', f);

        if (r) {
                /* One row per tick the device was present in; global figures of the same tick. */
                size_t first, n = device_window(h, r, &first);

                for (size_t k = 0; k < n; k++) {
                        const history_point *p = &r->points[(first + k) % h->capacity];
                        const history_global *g = global_at_seq(h, p->seq);

                        if (!g)
                                continue;
                        const uint64_t row[_PC_MAX] = {
                                [PC_REALTIME_USEC] = g->realtime_usec,
                                [PC_TIME_USEC] = p->time_usec,
                                [PC_GLOBAL_DIRTY_BYTES] = g->dirty_bytes,
                                [PC_GLOBAL_WRITEBACK_BYTES] = g->writeback_bytes,
                                [PC_GLOBAL_DIRTY_THRESH_BYTES] = g->dirty_thresh_bytes,
                                [PC_GLOBAL_BACKGROUND_THRESH_BYTES] = g->background_thresh_bytes,
                                [PC_DIRTY_BYTES] = p->dirty_bytes,
                                [PC_WRITEBACK_BYTES] = p->writeback_bytes,
                                [PC_THRESH_BYTES] = p->thresh_bytes,
                                [PC_WRITE_BW_BYTES_PER_S] = p->write_bw_bytes_per_s,
                                [PC_DIRTY_RATE_BYTES_PER_S] = p->dirty_rate_bytes_per_s,
                                [PC_MAX_BYTES] = p->max_bytes,
                        };
                        csv_row(f, row, n_columns);
                }
        } else {
                size_t start = (h->head + h->capacity - h->count) % h->capacity;

                for (size_t k = 0; k < h->count; k++) {
                        const history_global *g = &h->global[(start + k) % h->capacity];
                        const uint64_t row[PROTOCOL_CSV_GLOBAL_COLUMNS] = {
                                [PC_REALTIME_USEC] = g->realtime_usec,
                                [PC_TIME_USEC] = g->time_usec,
                                [PC_GLOBAL_DIRTY_BYTES] = g->dirty_bytes,
                                [PC_GLOBAL_WRITEBACK_BYTES] = g->writeback_bytes,
                                [PC_GLOBAL_DIRTY_THRESH_BYTES] = g->dirty_thresh_bytes,
                                [PC_GLOBAL_BACKGROUND_THRESH_BYTES] = g->background_thresh_bytes,
                        };
                        csv_row(f, row, n_columns);
                }
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
