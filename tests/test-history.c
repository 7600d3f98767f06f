/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tests for the history rings: wrap-around, devices coming and going, JSON and CSV shape. */
#include <string.h>

#include "history.h"
#include "protocol.h"
#include "knob-files.h"
#include "tap.h"
#include "util.h"

/* A tick whose figures are derived from its number, so any entry can be checked. */
static void make_sample(sample *s, bdi_device *devs, uint64_t tick, const char *const *bdis, size_t n) {
        memset(s, 0, sizeof(*s));
        s->time_usec = 1000000 * (tick + 1);
        s->realtime_usec = 1700000000000000 + 1000000 * tick;   /* the wall clock of that tick */
        s->global.dirty_bytes = 1000 + tick;
        s->global.writeback_bytes = 2000 + tick;
        s->global.dirty_thresh_bytes = 3000 + tick;
        s->global.background_thresh_bytes = 1500 + tick;
        memset(devs, 0, n * sizeof(devs[0]));
        for (size_t i = 0; i < n; i++) {
                snprintf(devs[i].bdi, sizeof(devs[i].bdi), "%s", bdis[i]);
                devs[i].dirty_bytes = 100 * (i + 1) + tick;
                devs[i].writeback_bytes = 10 + tick;
                devs[i].thresh_bytes = 5000 + tick;
                devs[i].write_bw_bytes_per_s = 7000 + tick;
                devs[i].dirty_rate_bytes_per_s = 8000 + tick;
                if (i == 0)
                        bdi_file_set(&devs[i], "max_bytes", 16 << 20);
        }
        s->devices = devs;
        s->n_devices = n;
}

static char *csv_of(const history *h, const char *bdi, int *r) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        *r = history_to_csv(h, bdi, f);
        fclose(f);
        return buf;
}

static size_t count_lines(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static uint64_t json_u64_at(json_object *o, const char *dev, const char *key, size_t idx) {
        json_object *d = dev ? json_object_object_get(json_object_object_get(o, "devices"), dev) : json_object_object_get(o, "global");
        json_object *a = json_object_object_get(d, key);

        return a ? json_object_get_uint64(json_object_array_get_idx(a, idx)) : UINT64_MAX;
}

static size_t json_len(json_object *o, const char *dev, const char *key) {
        json_object *d = dev ? json_object_object_get(json_object_object_get(o, "devices"), dev) : json_object_object_get(o, "global");

        return json_object_array_length(json_object_object_get(d, key));
}

/* status's piece, and the stream's items one by one. */
static void test_status_and_stream(void) {
        static const char *const both[] = { "7:0", "8:16" };
        bdi_device devs[2];
        sample s;
        history *h = history_new(4);
        json_object *o, *head, *item;
        control_stream st;
        char *name, error[256];

        o = history_status_json(NULL, 15);
        CHECK_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                    "{\"minutes\":15,\"ticks\":0,\"devices\":0,\"memory_bytes\":0}");
        json_object_put(o);
        for (uint64_t t = 0; t < 3; t++) {
                make_sample(&s, devs, t, both, 2);
                history_add(h, &s);
        }
        o = history_status_json(h, 15);
        CHECK(protocol_check(o, PK_HISTORY_STATUS, true, error, sizeof error) == 0);
        CHECK_EQ_U64(json_object_get_uint64(json_object_object_get(o, "ticks")), 3);
        CHECK_EQ_U64(json_object_get_uint64(json_object_object_get(o, "devices")), 2);
        json_object_put(o);

        head = json_object_new_object();
        CHECK(history_json_stream(h, NULL, head, &st) == 0);
        CHECK(st.keyed && strcmp(st.key, "devices") == 0);
        CHECK_EQ_U64(json_object_get_uint64(json_object_object_get(head, "capacity")), 4);
        CHECK(json_object_object_get_ex(head, "global", NULL));
        CHECK(st.next(st.state, &name, &item) == 1);
        CHECK_STREQ(name, "7:0");
        CHECK(protocol_check(item, PK_HISTORY_DEVICE, true, error, sizeof error) == 0);
        free(name);
        json_object_put(item);
        /* a tick between two items: the next one is as it is now */
        make_sample(&s, devs, 3, both, 2);
        history_add(h, &s);
        CHECK(st.next(st.state, &name, &item) == 1);
        CHECK_STREQ(name, "8:16");
        CHECK_EQ_U64(json_object_array_length(json_object_object_get(item, "time_usec")), 4);
        free(name);
        json_object_put(item);
        CHECK(st.next(st.state, &name, &item) == 0);
        st.free_state(st.state);
        json_object_put(head);

        head = json_object_new_object();
        CHECK(history_json_stream(h, "9:9", head, &st) == -ENOENT);
        json_object_put(head);
        history_free(h);
}

/* 256 devices at a 100 ms tick, the window full: the reply is far over the 4 MiB a client could have
 * queued, and comes as one item per device, none of them big. */
static void test_big(void) {
        size_t capacity = history_capacity(15, 100, NULL), total = 0, biggest = 0, n = 0;
        static char names[256][16];
        const char *bdis[256];
        bdi_device *devs = calloc(256, sizeof *devs);
        history *h = history_new(capacity);
        json_object *head = json_object_new_object(), *item;
        control_stream st;
        char *name;
        sample s;
        int r;

        for (size_t i = 0; i < 256; i++) {
                snprintf(names[i], sizeof names[i], "%zu:%zu", 7 + i / 256, i);
                bdis[i] = names[i];
        }
        bool added = true;
        for (uint64_t t = 0; t < capacity; t++) {
                make_sample(&s, devs, t, bdis, 256);
                for (size_t i = 0; i < 256; i++) {
                        /* numbers of a realistic length: gigabytes, nanosecond-ish times */
                        devs[i].dirty_bytes += 1000000000;
                        devs[i].thresh_bytes += 1000000000;
                }
                s.time_usec += 1000000000000ULL;
                added = added && history_add(h, &s) == 0;
        }
        CHECK(added);
        r = history_json_stream(h, NULL, head, &st);
        CHECK(r == 0);
        total = strlen(json_object_to_json_string(head));
        while (r == 0 && (r = st.next(st.state, &name, &item)) > 0) {
                size_t len = strlen(json_object_to_json_string(item));

                total += len;
                biggest = MAX(biggest, len);
                n++;
                free(name);
                json_object_put(item);
                r = 0;
        }
        st.free_state(st.state);
        printf("# %zu ticks x 256 devices: %zu bytes in %zu items, the biggest %zu bytes\n", capacity, total, n, biggest);
        CHECK_EQ_U64(n, 256);
        CHECK(total > 4 * 1024 * 1024);
        CHECK(biggest < 512 * 1024);
        json_object_put(head);
        history_free(h);
        free(devs);
}

int main(void) {
        test_status_and_stream();
        test_big();

        static const char *const a_only[] = { "7:0" }, *const both[] = { "7:0", "8:16" }, *const b_only[] = { "8:16" };
        bdi_device devs[2];
        sample s;
        history *h;
        json_object *j;
        _cleanup_free_ char *csv = NULL, *csv_b = NULL, *csv_a = NULL;
        size_t mem0;
        int r;

        CHECK_EQ_U64(history_capacity(15, 1000, NULL), 900);
        CHECK_EQ_U64(history_capacity(1, 250, NULL), 240);
        CHECK_EQ_U64(history_capacity(0, 1000, NULL), 1);
        /* 15 minutes of 100 ms ticks would take 147 MB with every device slot used: capped */
        bool capped = false;
        CHECK(history_capacity(15, 100, &capped) < 9000 && capped);
        CHECK(history_capacity(15, 1000, &capped) == 900 && !capped);
        CHECK(history_capacity(15, 100, NULL) * (sizeof(history_global) + HISTORY_DEVICES_MAX * sizeof(history_point)) <= HISTORY_MEMORY_MAX);
        CHECK(history_capacity(15, 100, NULL) > 1000);
        CHECK_EQ_U64(sizeof(history_point), 64);
        CHECK(history_new(0) == NULL);

        h = history_new(5);
        CHECK(h != NULL);
        if (!h)
                TEST_EXIT();
        mem0 = history_memory_bytes(h);
        CHECK(history_to_json(h, "7:0") == NULL);

        /* ticks 0..8: only 7:0; ticks 9..11: 8:16 appears */
        for (uint64_t t = 0; t < 12; t++) {
                if (t < 9)
                        make_sample(&s, devs, t, a_only, 1);
                else
                        make_sample(&s, devs, t, both, 2);
                CHECK(history_add(h, &s) == 0);
        }
        CHECK_EQ_U64(history_size(h), 5);
        CHECK_EQ_U64(history_device_size(h, "7:0"), 5);
        CHECK_EQ_U64(history_device_size(h, "8:16"), 3);
        CHECK_EQ_U64(history_device_size(h, "9:9"), 0);
        CHECK_EQ_U64(history_n_devices(h), 2);
        CHECK_EQ_U64(history_memory_bytes(h) - mem0, 2 * 5 * sizeof(history_point));

        /* JSON: wrapped, oldest first (ticks 7..11) */
        j = history_to_json(h, NULL);
        CHECK(j != NULL);
        CHECK_EQ_U64(json_object_get_uint64(json_object_object_get(j, "capacity")), 5);
        CHECK_EQ_U64(json_len(j, NULL, "time_usec"), 5);
        CHECK_EQ_U64(json_len(j, NULL, "background_thresh_bytes"), 5);
        CHECK_EQ_U64(json_u64_at(j, NULL, "time_usec", 0), 8000000);
        /* the wall clock of each tick, kept next to the monotonic time */
        CHECK_EQ_U64(json_len(j, NULL, "realtime_usec"), 5);
        CHECK_EQ_U64(json_u64_at(j, NULL, "realtime_usec", 0), 1700000007000000);
        CHECK_EQ_U64(json_u64_at(j, NULL, "realtime_usec", 4), 1700000011000000);
        CHECK_EQ_U64(json_u64_at(j, NULL, "dirty_bytes", 4), 1011);
        CHECK_EQ_U64(json_len(j, "7:0", "dirty_bytes"), 5);
        CHECK_EQ_U64(json_u64_at(j, "7:0", "dirty_bytes", 0), 107);
        CHECK_EQ_U64(json_u64_at(j, "7:0", "max_bytes", 0), 16 << 20);
        CHECK_EQ_U64(json_len(j, "8:16", "time_usec"), 3);
        CHECK_EQ_U64(json_u64_at(j, "8:16", "time_usec", 0), 10000000);
        CHECK_EQ_U64(json_len(j, "8:16", "realtime_usec"), 3);
        CHECK_EQ_U64(json_u64_at(j, "8:16", "realtime_usec", 0), 1700000009000000);
        CHECK_EQ_U64(json_u64_at(j, "7:0", "realtime_usec", 4), 1700000011000000);
        CHECK_EQ_U64(json_u64_at(j, "8:16", "dirty_bytes", 2), 211);
        CHECK_EQ_U64(json_u64_at(j, "8:16", "max_bytes", 2), 0);
        CHECK_EQ_U64(json_object_object_length(json_object_object_get(j, "devices")), 2);
        json_object_put(j);

        j = history_to_json(h, "8:16");
        CHECK(j && json_object_object_length(json_object_object_get(j, "devices")) == 1);
        json_object_put(j);

        /* CSV: global only, then a device that appeared mid-window, rows joined on the tick */
        csv = csv_of(h, NULL, &r);
        CHECK(r == 0);
        CHECK_EQ_U64(count_lines(csv), 1 + 5);
        {
                static const char header[] = "realtime_usec,time_usec,global_dirty_bytes,global_writeback_bytes,global_dirty_thresh_bytes,global_background_thresh_bytes\n";
                CHECK(strncmp(csv, header, strlen(header)) == 0);
        }
        CHECK(strstr(csv, "\n1700000007000000,8000000,1007,2007,3007,1507\n") != NULL);
        csv_b = csv_of(h, "8:16", &r);
        CHECK(r == 0);
        CHECK_EQ_U64(count_lines(csv_b), 1 + 3);
        CHECK(strstr(csv_b, ",dirty_bytes,writeback_bytes,thresh_bytes,write_bw_bytes_per_s,dirty_rate_bytes_per_s,max_bytes\n") != NULL);
        CHECK(strstr(csv_b, "\n1700000009000000,10000000,1009,2009,3009,1509,209,19,5009,7009,8009,0\n") != NULL);
        CHECK(strstr(csv_b, "\n1700000011000000,12000000,1011,2011,3011,1511,211,21,5011,7011,8011,0\n") != NULL);
        free(csv_of(h, "9:9", &r));
        CHECK(r == -ENOENT);

        /* 7:0 goes away: kept while any of its ticks is in the window, then its ring is freed */
        for (uint64_t t = 12; t < 16; t++) {
                make_sample(&s, devs, t, b_only, 1);
                CHECK(history_add(h, &s) == 0);
        }
        CHECK_EQ_U64(history_device_size(h, "7:0"), 1);
        csv_a = csv_of(h, "7:0", &r);
        CHECK(r == 0 && count_lines(csv_a) == 2);
        CHECK(strstr(csv_a, "\n1700000011000000,12000000,1011,") != NULL);
        make_sample(&s, devs, 16, b_only, 1);
        CHECK(history_add(h, &s) == 0);
        CHECK_EQ_U64(history_device_size(h, "7:0"), 0);
        CHECK_EQ_U64(history_n_devices(h), 1);
        CHECK(history_to_json(h, "7:0") == NULL);
        CHECK_EQ_U64(history_memory_bytes(h) - mem0, 1 * 5 * sizeof(history_point));
        CHECK_EQ_U64(history_device_size(h, "8:16"), 5);

        /* a device that comes back starts a new ring, with a gap in time */
        make_sample(&s, devs, 17, both, 2);
        CHECK(history_add(h, &s) == 0);
        CHECK_EQ_U64(history_device_size(h, "7:0"), 1);

        /* capacity 1 */
        history_free(h);
        h = history_new(1);
        for (uint64_t t = 0; t < 3; t++) {
                make_sample(&s, devs, t, both, 2);
                CHECK(history_add(h, &s) == 0);
        }
        CHECK_EQ_U64(history_size(h), 1);
        CHECK_EQ_U64(history_device_size(h, "8:16"), 1);
        j = history_to_json(h, NULL);
        CHECK_EQ_U64(json_u64_at(j, "8:16", "time_usec", 0), 3000000);
        json_object_put(j);
        history_free(h);
        TEST_EXIT();
}
