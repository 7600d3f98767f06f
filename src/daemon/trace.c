/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Throttle attribution from the writeback tracepoints, read as text from a private tracefs instance. */
#include "trace.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "log.h"
#include "protocol.h"
#include "util.h"

#define TRACEFS_MAGIC_NUMBER 0x74726163
#define TASK_SLOTS (TRACE_TASKS_MAX * 2)   /* open addressing, at most half full */

typedef struct task_slot {
        bool used;
        uint32_t hash;
        uint64_t pause_end_usec;  /* trace clock: when the latest pause of this task ends */
        trace_task t;
} task_slot;

struct trace_ctx {
        int fd;
        char *instance_dir;       /* NULL when detached */
        uint64_t page_size;
        bool clock_mono;          /* the instance's trace_clock is CLOCK_MONOTONIC, so pauses can be split at ticks */

        char line[TRACE_LINE_MAX];
        size_t line_len;
        bool line_overlong;       /* skipping to the next newline */

        task_slot slots[TASK_SLOTS];
        size_t n_tasks;
        trace_device devices[TRACE_DEVICES_MAX];
        size_t n_devices;
        trace_counters tick, total;

        task_slot carried[TRACE_TASKS_MAX];   /* scratch for trace_tick_at() */
        trace_task out_tasks[TRACE_TASKS_MAX];
        trace_device out_devices[TRACE_DEVICES_MAX];
};

/* ---- parser ---------------------------------------------------------------------------------- */

typedef struct field {
        const char *key;
        size_t offset;
        bool is_signed;
} field;

#define F(k, member, s) { k, offsetof(trace_event, member), s }
static const field bdp_fields[] = {
        F("limit", limit_pages, false),
        F("setpoint", setpoint_pages, false),
        F("dirty", dirty_pages, false),
        F("wb_setpoint", wb_setpoint_pages, false),
        F("wb_dirty", wb_dirty_pages, false),
        F("dirty_ratelimit", dirty_ratelimit_kbps, false),
        F("task_ratelimit", task_ratelimit_kbps, false),
        F("dirtied", dirtied_pages, false),
        F("dirtied_pause", dirtied_pause_pages, false),
        F("paused", paused_ms, false),
        F("pause", pause_ms, true),
        F("period", period_ms, false),
        F("think", think_ms, true),
        F("cgroup_ino", cgroup_ino, false),
};
static const field ratelimit_fields[] = {
        F("write_bw", write_bw_kbps, false),
        F("awrite_bw", avg_write_bw_kbps, false),
        F("dirty_rate", dirty_rate_kbps, false),
        F("dirty_ratelimit", dirty_ratelimit_kbps, false),
        F("task_ratelimit", task_ratelimit_kbps, false),
        F("balanced_dirty_ratelimit", balanced_dirty_ratelimit_kbps, false),
        F("cgroup_ino", cgroup_ino, false),
};
#undef F

/* Fields without which a line is not worth aggregating (a truncated line loses its tail). */
static const char *const bdp_required[] = { "limit", "setpoint", "dirty", "task_ratelimit", "pause" };
static const char *const ratelimit_required[] = { "write_bw", "dirty_rate", "dirty_ratelimit" };

static bool parse_dec(const char *s, size_t len, bool is_signed, uint64_t *ret) {
        bool neg = false;
        uint64_t v = 0;
        size_t i = 0;

        if (len > 0 && s[0] == '-' && is_signed) {
                neg = true;
                i = 1;
        }
        if (i >= len)
                return false;
        for (; i < len; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return false;
                if (v > (UINT64_MAX - 9) / 10)
                        return false;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        if (neg) {
                if (v > (uint64_t) INT64_MAX)
                        return false;
                *ret = (uint64_t) -(int64_t) v;
        } else
                *ret = v;
        return true;
}

/* "key=value key=value ..." into the event; returns false on a malformed value. *seen gets one bit per table row. */
static bool parse_fields(const char *p, const field *table, size_t n, trace_event *ev, uint32_t *seen) {
        *seen = 0;
        while (*p) {
                const char *tok, *eq, *end;

                while (*p == ' ')
                        p++;
                if (!*p)
                        break;
                tok = p;
                end = strchr(tok, ' ');
                if (!end)
                        end = tok + strlen(tok);
                p = end;
                eq = memchr(tok, '=', (size_t) (end - tok));
                if (!eq)
                        return false;
                for (size_t i = 0; i < n; i++) {
                        uint64_t v;

                        if (strlen(table[i].key) != (size_t) (eq - tok) || memcmp(table[i].key, tok, (size_t) (eq - tok)) != 0)
                                continue;
                        if (!parse_dec(eq + 1, (size_t) (end - eq - 1), table[i].is_signed, &v))
                                return false;
                        memcpy((char *) ev + table[i].offset, &v, sizeof(v));
                        *seen |= 1u << i;
                        break;
                }
                /* unknown keys: a newer kernel's additions, ignored */
        }
        return true;
}

static bool have_required(const field *table, size_t n, uint32_t seen, const char *const *req, size_t n_req) {
        for (size_t r = 0; r < n_req; r++) {
                size_t i;

                for (i = 0; i < n; i++)
                        if (strcmp(table[i].key, req[r]) == 0)
                                break;
                if (i == n || !(seen & (1u << i)))
                        return false;
        }
        return true;
}

/* Header "<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <secs>.<usecs>" parsed from its end, because comm may hold
 * spaces and dashes (the kernel right-aligns it in 16 columns, see trace_print_context()). */
static bool parse_header(const char *h, size_t len, trace_event *ev) {
        const char *end = h + len, *tok, *p, *dash;
        uint64_t v;

        /* timestamp */
        while (end > h && end[-1] == ' ')
                end--;
        tok = end;
        while (tok > h && tok[-1] != ' ')
                tok--;
        if (tok == end)
                return false;
        p = memchr(tok, '.', (size_t) (end - tok));
        if (p) {
                uint64_t secs, frac;
                size_t digits = (size_t) (end - p - 1);

                if (!parse_dec(tok, (size_t) (p - tok), false, &secs) || !parse_dec(p + 1, digits, false, &frac) || digits > 9)
                        return false;
                for (size_t i = digits; i < 6; i++)
                        frac *= 10;
                for (size_t i = 6; i < digits; i++)
                        frac /= 10;
                ev->time_usec = secs * 1000000 + frac;
        } else if (parse_dec(tok, (size_t) (end - tok), false, &v))
                ev->time_usec = v;      /* a counter clock */
        else
                return false;
        end = tok;

        /* optional irq-info flags, then "[cpu]" */
        for (int round = 0; round < 2; round++) {
                while (end > h && end[-1] == ' ')
                        end--;
                tok = end;
                while (tok > h && tok[-1] != ' ')
                        tok--;
                if (tok < end && *tok == '[' && end[-1] == ']') {
                        if (!parse_dec(tok + 1, (size_t) (end - tok - 2), false, &v))
                                return false;
                        ev->cpu = (int32_t) v;
                        end = tok;
                        break;
                }
                if (round == 1 || tok == end)
                        return false;
                end = tok;   /* flags such as "d..1." */
        }

        /* optional "(  tgid)" from the record-tgid option */
        while (end > h && end[-1] == ' ')
                end--;
        if (end > h && end[-1] == ')') {
                p = end - 1;
                while (p > h && *p != '(')
                        p--;
                if (*p != '(')
                        return false;
                end = p;
                while (end > h && end[-1] == ' ')
                        end--;
        }

        /* "<comm>-<pid>" */
        dash = end;
        while (dash > h && dash[-1] != '-')
                dash--;
        if (dash == h || !parse_dec(dash, (size_t) (end - dash), false, &v) || v > INT32_MAX)
                return false;
        ev->pid = (int32_t) v;
        dash--;
        p = h;
        while (p < dash && *p == ' ')
                p++;
        len = MIN((size_t) (dash - p), sizeof(ev->comm) - 1);
        memcpy(ev->comm, p, len);
        ev->comm[len] = 0;
        return true;
}

int trace_parse_line(const char *line, trace_event *ev) {
        static const struct {
                const char *marker;
                trace_event_type type;
        } events[] = {
                { ": balance_dirty_pages: ", TRACE_EVENT_BALANCE_DIRTY_PAGES },
                { ": bdi_dirty_ratelimit: ", TRACE_EVENT_BDI_DIRTY_RATELIMIT },
        };
        char buf[TRACE_LINE_MAX];
        const char *m = NULL, *p, *colon;
        size_t len, i;
        uint32_t seen;

        memset(ev, 0, sizeof(*ev));
        len = strcspn(line, "\r\n");
        if (len >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, line, len);
        buf[len] = 0;

        /* trace_pipe's loss marker: "CPU:%d [LOST %lu EVENTS]" or "CPU:%d [LOST EVENTS]" (print_trace_line()) */
        if (startswith(buf, "CPU:") && (p = strstr(buf, " [LOST "))) {
                uint64_t v;
                const char *n = p + 7, *e = strstr(n, " EVENTS]");

                ev->type = TRACE_EVENT_LOST;
                if (startswith(n, "EVENTS]")) {
                        ev->lost_unknown = true;
                        return 0;
                }
                if (!e || !parse_dec(n, (size_t) (e - n), false, &v))
                        return -EBADMSG;
                ev->lost = v;
                return 0;
        }

        /* A comm is at most 15 bytes, shorter than either marker, so the first match is the real one. */
        for (i = 0; i < ELEMENTSOF(events); i++)
                if ((m = strstr(buf, events[i].marker)))
                        break;
        if (!m)
                return 0;       /* another event or text: not ours */

        if (!parse_header(buf, (size_t) (m - buf), ev))
                return -EBADMSG;

        /* "bdi <name>: key=value ..." ; names such as "7:2" hold colons but never ": " */
        p = m + strlen(events[i].marker);
        p = startswith(p, "bdi ");
        if (!p)
                return -EBADMSG;
        colon = strstr(p, ": ");
        if (!colon || colon == p || (size_t) (colon - p) >= sizeof(ev->bdi))
                return -EBADMSG;
        memcpy(ev->bdi, p, (size_t) (colon - p));
        ev->bdi[colon - p] = 0;
        p = colon + 2;

        if (events[i].type == TRACE_EVENT_BALANCE_DIRTY_PAGES) {
                if (!parse_fields(p, bdp_fields, ELEMENTSOF(bdp_fields), ev, &seen) ||
                    !have_required(bdp_fields, ELEMENTSOF(bdp_fields), seen, bdp_required, ELEMENTSOF(bdp_required)))
                        return -EBADMSG;
        } else {
                if (!parse_fields(p, ratelimit_fields, ELEMENTSOF(ratelimit_fields), ev, &seen) ||
                    !have_required(ratelimit_fields, ELEMENTSOF(ratelimit_fields), seen, ratelimit_required, ELEMENTSOF(ratelimit_required)))
                        return -EBADMSG;
        }
        ev->type = events[i].type;
        return 0;
}

/* ---- aggregation ----------------------------------------------------------------------------- */

static uint32_t hash_task(int32_t pid, const char *bdi) {
        uint32_t h = 2166136261u ^ (uint32_t) pid;

        h *= 16777619u;
        for (; *bdi; bdi++) {
                h ^= (unsigned char) *bdi;
                h *= 16777619u;
        }
        return h;
}

static trace_device *find_device(trace_ctx *ctx, const char *bdi) {
        for (size_t i = 0; i < ctx->n_devices; i++)
                if (strcmp(ctx->devices[i].bdi, bdi) == 0)
                        return &ctx->devices[i];
        if (ctx->n_devices >= TRACE_DEVICES_MAX)
                return NULL;
        trace_device *d = &ctx->devices[ctx->n_devices++];
        memset(d, 0, sizeof(*d));
        snprintf(d->bdi, sizeof(d->bdi), "%s", bdi);
        return d;
}

/* NULL when the table is full; *created tells whether the pair is new this tick. */
static task_slot *find_task(trace_ctx *ctx, int32_t pid, const char *bdi, bool *created) {
        uint32_t h = hash_task(pid, bdi);

        *created = false;
        for (size_t n = 0, i = h % TASK_SLOTS; n < TASK_SLOTS; n++, i = (i + 1) % TASK_SLOTS) {
                task_slot *s = &ctx->slots[i];

                if (!s->used) {
                        if (ctx->n_tasks >= TRACE_TASKS_MAX)
                                return NULL;
                        memset(s, 0, sizeof(*s));
                        s->used = true;
                        s->hash = h;
                        s->t.pid = pid;
                        snprintf(s->t.bdi, sizeof(s->t.bdi), "%s", bdi);
                        ctx->n_tasks++;
                        *created = true;
                        return s;
                }
                if (s->hash == h && s->t.pid == pid && strcmp(s->t.bdi, bdi) == 0)
                        return s;
        }
        return NULL;
}

static void aggregate(trace_ctx *ctx, const trace_event *ev) {
        trace_device *d;
        task_slot *slot;
        trace_task *t;
        bool created;
        uint64_t pause = ev->pause_ms > 0 ? (uint64_t) ev->pause_ms : 0;

        if (pause > 0) {
                /* counted before the tables: a task or device that did not fit still slept */
                ctx->tick.pauses++;
                ctx->total.pauses++;
                ctx->tick.pause_ms += pause;
                ctx->total.pause_ms += pause;
        }
        d = find_device(ctx, ev->bdi);
        if (!d) {
                ctx->tick.dropped_devices++;
                ctx->total.dropped_devices++;
        }

        if (ev->type == TRACE_EVENT_BDI_DIRTY_RATELIMIT) {
                if (!d)
                        return;
                d->have_ratelimit = true;
                d->write_bw_bytes_per_s = mul_sat(ev->write_bw_kbps, 1024);
                d->avg_write_bw_bytes_per_s = mul_sat(ev->avg_write_bw_kbps, 1024);
                d->dirty_rate_bytes_per_s = mul_sat(ev->dirty_rate_kbps, 1024);
                d->balanced_dirty_ratelimit_bytes_per_s = mul_sat(ev->balanced_dirty_ratelimit_kbps, 1024);
                d->dirty_ratelimit_bytes_per_s = mul_sat(ev->dirty_ratelimit_kbps, 1024);
                return;
        }

        slot = find_task(ctx, ev->pid, ev->bdi, &created);
        t = slot ? &slot->t : NULL;
        if (!t) {
                ctx->tick.dropped_tasks++;
                ctx->total.dropped_tasks++;
        } else {
                snprintf(t->comm, sizeof(t->comm), "%s", ev->comm);
                t->cgroup_ino = ev->cgroup_ino;
                t->events++;
                if (pause > 0) {
                        t->pauses++;
                        t->pause_ms += pause;
                        t->max_pause_ms = MAX(t->max_pause_ms, pause);
                        slot->pause_end_usec = MAX(slot->pause_end_usec, ev->time_usec + pause * 1000);
                }
                t->task_ratelimit_bytes_per_s = mul_sat(ev->task_ratelimit_kbps, 1024);
                t->dirty_bytes = mul_sat(ev->dirty_pages, ctx->page_size);
                t->limit_bytes = mul_sat(ev->limit_pages, ctx->page_size);
                t->setpoint_bytes = mul_sat(ev->setpoint_pages, ctx->page_size);
                t->wb_dirty_bytes = mul_sat(ev->wb_dirty_pages, ctx->page_size);
                t->wb_setpoint_bytes = mul_sat(ev->wb_setpoint_pages, ctx->page_size);
        }
        if (!d)
                return;
        if (created)
                d->n_tasks++;
        d->events++;
        if (pause > 0) {
                d->pauses++;
                d->pause_ms += pause;
                d->max_pause_ms = MAX(d->max_pause_ms, pause);
        }
        d->task_ratelimit_bytes_per_s = mul_sat(ev->task_ratelimit_kbps, 1024);
        d->dirty_ratelimit_bytes_per_s = mul_sat(ev->dirty_ratelimit_kbps, 1024);
        d->dirty_bytes = mul_sat(ev->dirty_pages, ctx->page_size);
        d->limit_bytes = mul_sat(ev->limit_pages, ctx->page_size);
        d->setpoint_bytes = mul_sat(ev->setpoint_pages, ctx->page_size);
        d->wb_dirty_bytes = mul_sat(ev->wb_dirty_pages, ctx->page_size);
        d->wb_setpoint_bytes = mul_sat(ev->wb_setpoint_pages, ctx->page_size);
}

/* Returns 1 if the line was one of our events. */
static int handle_line(trace_ctx *ctx, const char *line) {
        trace_event ev;

        if (trace_parse_line(line, &ev) < 0) {
                ctx->tick.bad_lines++;
                ctx->total.bad_lines++;
                return 0;
        }
        switch (ev.type) {
        case TRACE_EVENT_LOST:
                ctx->tick.lost_markers++;
                ctx->total.lost_markers++;
                ctx->tick.lost_kernel += ev.lost;
                ctx->total.lost_kernel += ev.lost;
                return 0;
        case TRACE_EVENT_BALANCE_DIRTY_PAGES:
        case TRACE_EVENT_BDI_DIRTY_RATELIMIT:
                ctx->tick.events++;
                ctx->total.events++;
                aggregate(ctx, &ev);
                return 1;
        default:
                return 0;
        }
}

static int feed(trace_ctx *ctx, const char *buf, size_t len) {
        int n = 0;

        for (size_t i = 0; i < len; i++) {
                char c = buf[i];

                if (c == '\n') {
                        if (ctx->line_overlong) {
                                ctx->line_overlong = false;
                                ctx->tick.bad_lines++;
                                ctx->total.bad_lines++;
                        } else {
                                ctx->line[ctx->line_len] = 0;
                                n += handle_line(ctx, ctx->line);
                        }
                        ctx->line_len = 0;
                        continue;
                }
                if (ctx->line_overlong)
                        continue;
                if (ctx->line_len + 1 >= sizeof(ctx->line)) {
                        ctx->line_overlong = true;
                        ctx->line_len = 0;
                        continue;
                }
                ctx->line[ctx->line_len++] = c;
        }
        return n;
}

void trace_feed(trace_ctx *ctx, const char *buf, size_t len) {
        ctx->tick.bytes_read += len;
        ctx->total.bytes_read += len;
        (void) feed(ctx, buf, len);
}

int trace_process(trace_ctx *ctx) {
        char buf[16384];
        size_t budget = TRACE_READ_BUDGET;
        int n = 0;

        if (ctx->fd < 0)
                return 0;
        while (budget > 0) {
                ssize_t k = read(ctx->fd, buf, MIN(sizeof(buf), budget));

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return n;
                        return -errno;
                }
                if (k == 0)
                        return n;
                budget -= (size_t) k;
                ctx->tick.bytes_read += (uint64_t) k;
                ctx->total.bytes_read += (uint64_t) k;
                n += feed(ctx, buf, (size_t) k);
        }
        ctx->tick.budget_hits++;
        ctx->total.budget_hits++;
        return n;
}

static int cmp_task(const void *a, const void *b) {
        const trace_task *x = a, *y = b;

        if (x->pause_ms != y->pause_ms)
                return x->pause_ms > y->pause_ms ? -1 : 1;
        if (x->events != y->events)
                return x->events > y->events ? -1 : 1;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return strcmp(x->bdi, y->bdi);
}

static int cmp_device(const void *a, const void *b) {
        return strcmp(((const trace_device *) a)->bdi, ((const trace_device *) b)->bdi);
}

/* The part of a task's pauses that runs past now_usec: it belongs to the next tick. */
static uint64_t overhang_ms(const task_slot *s, uint64_t now_usec) {
        if (now_usec == 0 || s->pause_end_usec <= now_usec)
                return 0;
        return MIN((s->pause_end_usec - now_usec + 500) / 1000, s->t.pause_ms);
}

/* Start the next tick with the pauses still running at the end of this one. */
static void carry_pauses(trace_ctx *ctx, const task_slot *carried, size_t n) {
        for (size_t i = 0; i < n; i++) {
                bool created;
                task_slot *s = find_task(ctx, carried[i].t.pid, carried[i].t.bdi, &created);
                trace_device *d = find_device(ctx, carried[i].t.bdi);

                if (s) {
                        snprintf(s->t.comm, sizeof(s->t.comm), "%s", carried[i].t.comm);
                        s->t.cgroup_ino = carried[i].t.cgroup_ino;
                        s->t.pause_ms = carried[i].t.pause_ms;
                        s->pause_end_usec = carried[i].pause_end_usec;
                }
                if (d) {
                        d->pause_ms += carried[i].t.pause_ms;
                        if (created)
                                d->n_tasks++;
                }
        }
}

int trace_tick_at(trace_ctx *ctx, uint64_t elapsed_usec, uint64_t now_usec, trace_tick_result *ret) {
        size_t n = 0, n_carried = 0;
        int r;

        r = trace_process(ctx);
        if (r < 0)
                log_debug_errno(r, "Failed to read trace_pipe: %m");

        for (size_t i = 0; i < TASK_SLOTS; i++) {
                task_slot *s = &ctx->slots[i];
                uint64_t over;

                if (!s->used)
                        continue;
                over = overhang_ms(s, now_usec);
                if (over > 0) {
                        trace_device *d = find_device(ctx, s->t.bdi);

                        s->t.pause_ms -= over;
                        if (d)
                                d->pause_ms -= MIN(over, d->pause_ms);
                        ctx->carried[n_carried] = *s;
                        ctx->carried[n_carried++].t.pause_ms = over;
                }
                ctx->out_tasks[n] = s->t;
                s->used = false;
                n++;
        }
        ctx->n_tasks = 0;
        for (size_t i = 0; i < n; i++)
                ctx->out_tasks[i].pause_ms_per_s = elapsed_usec ? ctx->out_tasks[i].pause_ms * 1e6 / (double) elapsed_usec : 0.0;
        qsort(ctx->out_tasks, n, sizeof(ctx->out_tasks[0]), cmp_task);

        memcpy(ctx->out_devices, ctx->devices, ctx->n_devices * sizeof(ctx->devices[0]));
        qsort(ctx->out_devices, ctx->n_devices, sizeof(ctx->out_devices[0]), cmp_device);
        for (size_t i = 0; i < ctx->n_devices; i++)
                ctx->out_devices[i].pause_ms_per_s = elapsed_usec ? ctx->out_devices[i].pause_ms * 1e6 / (double) elapsed_usec : 0.0;

        *ret = (trace_tick_result) {
                .elapsed_usec = elapsed_usec,
                .tasks = ctx->out_tasks,
                .n_tasks = n,
                .devices = ctx->out_devices,
                .n_devices = ctx->n_devices,
                .tick = ctx->tick,
                .total = ctx->total,
        };
        ctx->n_devices = 0;
        memset(&ctx->tick, 0, sizeof(ctx->tick));
        carry_pauses(ctx, ctx->carried, n_carried);
        return r < 0 ? r : 0;
}

int trace_tick(trace_ctx *ctx, uint64_t elapsed_usec, trace_tick_result *ret) {
        return trace_tick_at(ctx, elapsed_usec, ctx->clock_mono ? now_usec() : 0, ret);
}

/* ---- tracefs instance -------------------------------------------------------------------------- */

static bool is_tracefs_dir(const char *dir) {
        struct statfs sfs;
        _cleanup_free_ char *p = NULL;

        if (statfs(dir, &sfs) < 0 || (unsigned long) sfs.f_type != TRACEFS_MAGIC_NUMBER)
                return false;
        if (asprintf(&p, "%s/instances", dir) < 0)
                return false;
        return access(p, F_OK) == 0;
}

/* Where tracefs is mounted; a service sees one of them read-only (ProtectKernelTunables= makes /sys
 * read-only and ReadWritePaths= opens only what is mounted at that path), so take a writable one. */
static const char *const tracefs_paths[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

static bool instances_read_only(const char *dir) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/instances", dir) < 0)
                return false;
        return access(p, W_OK) < 0 && errno == EROFS;
}

static int find_tracefs(char **ret) {
        const char *read_only = NULL;

        for (size_t i = 0; i < ELEMENTSOF(tracefs_paths); i++) {
                /* debugfs automounts tracefs at .../debug/tracing on this first access */
                if (!is_tracefs_dir(tracefs_paths[i]))
                        continue;
                if (!instances_read_only(tracefs_paths[i])) {
                        *ret = xstrdup(tracefs_paths[i]);
                        return 0;
                }
                log_debug("tracefs at %s is read-only here, trying the next place.", tracefs_paths[i]);
                if (!read_only)
                        read_only = tracefs_paths[i];
        }
        if (read_only) {
                /* creating the instance fails and says where */
                *ret = xstrdup(read_only);
                return 0;
        }
        if (access("/sys/kernel/tracing", F_OK) < 0)
                return log_warning_errno(ENOENT, "No tracefs (no /sys/kernel/tracing): throttle attribution disabled");
        if (mount("tracefs", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
                log_warning_errno(errno, "Failed to mount tracefs on /sys/kernel/tracing, throttle attribution disabled: %m");
                return -ENOMEDIUM;
        }
        log_info("Mounted tracefs on /sys/kernel/tracing for throttle attribution");
        if (!is_tracefs_dir("/sys/kernel/tracing"))
                return log_warning_errno(ENOENT, "tracefs on /sys/kernel/tracing has no instances/: throttle attribution disabled");
        *ret = xstrdup("/sys/kernel/tracing");
        return 0;
}

static int instance_write(const char *dir, const char *file, const char *value) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        return write_string_file(p, value);
}

static trace_ctx *ctx_alloc(uint64_t page_size) {
        trace_ctx *ctx = calloc(1, sizeof(*ctx));

        if (!ctx)
                return NULL;
        ctx->fd = -1;
        ctx->page_size = page_size ? page_size : (uint64_t) sysconf(_SC_PAGESIZE);
        return ctx;
}

int trace_new_detached(uint64_t page_size, trace_ctx **ret) {
        trace_ctx *ctx = ctx_alloc(page_size);

        if (!ctx)
                return -ENOMEM;
        *ret = ctx;
        return 0;
}

int trace_new(const char *tracefs, const char *instance, trace_ctx **ret) {
        _cleanup_free_ char *root = NULL, *dir = NULL, *pipe = NULL;
        trace_ctx *ctx;
        int r;

        if (!instance)
                instance = "wbtuned";
        if (!*instance || strchr(instance, '/') || strcmp(instance, ".") == 0 || strcmp(instance, "..") == 0)
                return -EINVAL;
        if (tracefs)
                root = xstrdup(tracefs);
        else {
                r = find_tracefs(&root);
                if (r < 0)
                        return r;
        }
        if (asprintf(&dir, "%s/events/writeback/balance_dirty_pages", root) < 0)
                return -ENOMEM;
        if (access(dir, F_OK) < 0)
                return log_warning_errno(EOPNOTSUPP, "No writeback/balance_dirty_pages event in %s: throttle attribution disabled", root);
        free(dir);
        if (asprintf(&dir, "%s/instances/%s", root, instance) < 0)
                return -ENOMEM;

        if (mkdir(dir, 0700) < 0) {
                if (errno != EEXIST)
                        return log_warning_errno(errno, "Failed to create trace instance %s, throttle attribution disabled: %m", dir);
                /* left by a crash; EBUSY means someone still reads it (another wbtuned?) */
                if (rmdir(dir) < 0 || mkdir(dir, 0700) < 0)
                        return log_warning_errno(errno, "Trace instance %s exists and cannot be replaced, throttle attribution disabled: %m", dir);
                log_info("Replaced stale trace instance %s", dir);
        }

        ctx = ctx_alloc(0);
        if (!ctx) {
                (void) rmdir(dir);
                return -ENOMEM;
        }
        ctx->instance_dir = TAKE_PTR(dir);

        /* 1 MiB per CPU holds ~7000 events, what 100 throttled writers make in the 1 s between two reads
         * (the daemon reads on its tick and at least every second); the default is 1.4 MiB per CPU. */
        r = instance_write(ctx->instance_dir, "buffer_size_kb", "1024");
        if (r < 0)
                log_debug_errno(r, "Failed to size trace buffer, keeping the default: %m");
        /* event times in CLOCK_MONOTONIC let a pause be split between the ticks it spans */
        r = instance_write(ctx->instance_dir, "trace_clock", "mono");
        if (r < 0)
                log_debug_errno(r, "Failed to set trace_clock to mono, pauses count in the tick they start in: %m");
        ctx->clock_mono = r >= 0;
        r = instance_write(ctx->instance_dir, "events/writeback/balance_dirty_pages/enable", "1");
        if (r < 0) {
                log_warning_errno(r, "Failed to enable writeback/balance_dirty_pages in %s, throttle attribution disabled: %m", ctx->instance_dir);
                trace_free(ctx);
                return r;
        }
        r = instance_write(ctx->instance_dir, "events/writeback/bdi_dirty_ratelimit/enable", "1");
        if (r < 0)
                log_debug_errno(r, "No writeback/bdi_dirty_ratelimit, per-device rate figures unavailable: %m");

        if (asprintf(&pipe, "%s/trace_pipe", ctx->instance_dir) < 0) {
                trace_free(ctx);
                return -ENOMEM;
        }
        ctx->fd = open(pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (ctx->fd < 0) {
                r = log_warning_errno(errno, "Failed to open %s, throttle attribution disabled: %m", pipe);
                trace_free(ctx);
                return r;
        }
        log_debug("Tracing balance_dirty_pages in %s", ctx->instance_dir);
        *ret = ctx;
        return 0;
}

trace_ctx *trace_free(trace_ctx *ctx) {
        if (!ctx)
                return NULL;
        if (ctx->fd >= 0)
                close(ctx->fd);
        if (ctx->instance_dir) {
                /* rmdir fails with EBUSY while a file of the instance is open; ours is closed above */
                (void) instance_write(ctx->instance_dir, "events/enable", "0");
                if (rmdir(ctx->instance_dir) < 0)
                        log_warning_errno(errno, "Failed to remove trace instance %s: %m", ctx->instance_dir);
                free(ctx->instance_dir);
        }
        free(ctx);
        return NULL;
}

int trace_fd(trace_ctx *ctx) {
        return ctx ? ctx->fd : -1;
}

/* ---- cgroup names ------------------------------------------------------------------------------ */

#define CGROUP2_SUPER_MAGIC_NUMBER 0x63677270

static int find_ino(int dir_fd, uint64_t ino, char *buf, size_t size, size_t len, unsigned depth, unsigned *budget) {
        _cleanup_close_ int fd = dir_fd;
        DIR *d;
        struct dirent *de;
        int r = -ENOENT;

        if (depth > 32 || *budget == 0)
                return -ENOENT;
        (*budget)--;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -1;
        while (r == -ENOENT && (de = readdir(d))) {
                size_t n = strlen(de->d_name);
                int sub;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (len + 1 + n >= size) {
                        r = -ENAMETOOLONG;
                        break;
                }
                buf[len] = '/';
                memcpy(buf + len + 1, de->d_name, n + 1);
                if ((uint64_t) de->d_ino == ino) {
                        r = 0;
                        break;
                }
                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (sub >= 0)
                        r = find_ino(sub, ino, buf, size, len + 1 + n, depth + 1, budget);
        }
        closedir(d);
        if (r < 0)
                buf[len] = 0;
        return r;
}

int trace_cgroup_path(const char *cgroup_root, uint64_t cgroup_ino, char *buf, size_t size) {
        struct statfs sfs;
        struct stat st;
        unsigned budget = 4096;
        int fd, r;

        if (size < 2)
                return -ENAMETOOLONG;
        if (!cgroup_root)
                cgroup_root = statfs("/sys/fs/cgroup", &sfs) == 0 && (unsigned long) sfs.f_type == CGROUP2_SUPER_MAGIC_NUMBER ?
                              "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
        fd = open(cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) == 0 && (uint64_t) st.st_ino == cgroup_ino) {
                close(fd);
                strcpy(buf, "/");
                return 0;
        }
        buf[0] = 0;
        r = find_ino(fd, cgroup_ino, buf, size, 0, 0, &budget);
        if (r < 0)
                buf[0] = 0;
        return r;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

json_object *trace_counters_to_json(const trace_counters *c) {
        json_object *o = oom_check(json_object_new_object());

        proto_add_u64(o, PF_COUNTERS_EVENTS, c->events);
        proto_add_u64(o, PF_COUNTERS_LOST_KERNEL, c->lost_kernel);
        proto_add_u64(o, PF_COUNTERS_LOST_MARKERS, c->lost_markers);
        proto_add_u64(o, PF_COUNTERS_DROPPED_TASKS, c->dropped_tasks);
        proto_add_u64(o, PF_COUNTERS_DROPPED_DEVICES, c->dropped_devices);
        proto_add_u64(o, PF_COUNTERS_BAD_LINES, c->bad_lines);
        proto_add_u64(o, PF_COUNTERS_BYTES_READ, c->bytes_read);
        proto_add_u64(o, PF_COUNTERS_BUDGET_HITS, c->budget_hits);
        proto_add_u64(o, PF_COUNTERS_PAUSES, c->pauses);
        proto_add_u64(o, PF_COUNTERS_PAUSE_MS, c->pause_ms);
        return o;
}
