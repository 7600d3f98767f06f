/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who dirties and who is throttled: trace.c, taskstats.c and a bounded /proc/<pid>/io scan, put together per tick.
 * /proc/<pid>/io needs ptrace access (CAP_SYS_PTRACE for other users' tasks, which the unit does not grant):
 * where it is refused, the same counters come from taskstats (CAP_NET_ADMIN), summed over the threads. */
#include "attribution.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "protocol.h"
#include "taskstats.h"
#include "trace.h"
#include "util.h"

#define TASK_QUERY_MAX (2 * ATTRIBUTION_TOP_MAX)   /* paused + dirtiers asked to taskstats per tick */

/* One process as last read from /proc/<pid>/io. */
typedef struct proc_entry {
        int32_t pid;
        char comm[TRACE_COMM_MAX];
        uint64_t write_bytes, cancelled_write_bytes;   /* cumulative, at read_usec */
        uint64_t read_usec;
        uint64_t write_bytes_per_s, cancelled_write_bytes_per_s;
        uint64_t rate_usec;                            /* the tick the rates are for; 0 = no rate yet */
        uint64_t rate_interval_usec;                   /* the time the rates are over (up to a full scan's) */
        int8_t kthread;                                /* 1 kernel thread, 0 not, -1 not known yet */
        uint8_t quiet_scans;                           /* full scans in a row it was read with nothing written */
} proc_entry;

/* A dirtier read in one tick: the bytes it wrote since its previous reading, interval_usec before. */
typedef struct window_dirtier {
        int32_t pid;
        char comm[TRACE_COMM_MAX];
        uint64_t write_bytes;                          /* cumulative, at this reading */
        uint64_t write_delta_bytes, cancelled_delta_bytes;
        uint64_t interval_usec;
} window_dirtier;

/* What one tick saw, for top's window: its most paused (task, device) pairs and its dirtiers. */
typedef struct window_tick {
        uint64_t end_usec, elapsed_usec;
        trace_task paused[ATTRIBUTION_TOP_MAX];
        size_t n_paused;
        window_dirtier dirtiers[ATTRIBUTION_TRACKED_MAX];
        size_t n_dirtiers;
} window_tick;

/* A dirtier as top shows it: its rates over the window. */
typedef struct shown_dirtier {
        int32_t pid;
        char comm[TRACE_COMM_MAX];
        uint64_t write_bytes;                          /* cumulative, at its last reading */
        double window_write_bytes, window_cancelled_bytes;
        uint64_t write_bytes_per_s, cancelled_write_bytes_per_s;
} shown_dirtier;

#define WINDOW_PAUSED_MAX 256      /* distinct (task, device) pairs summed over the window; more are left out */
#define WINDOW_DIRTIERS_MAX 256    /* distinct dirtiers summed over the window */

/* One thread from taskstats, this tick, with rates against its previous reading. */
typedef struct task_view {
        task_io io;
        uint64_t usec;
        bool have_rates;
        uint64_t write_bytes_per_s, cancelled_write_bytes_per_s;
        double blkio_delay_ms_per_s;
} task_view;

struct attribution {
        char *root;
        bool enabled;
        char reason[256];                 /* why throttle attribution is off; "" when on */
        char instance[64];
        trace_ctx *trace;
        trace_tick_result last;           /* points into trace until the next trace_tick() */
        bool have_last;
        uint64_t last_tick_usec;
        trace_counters totals;

        taskstats_ctx *taskstats;
        char taskstats_reason[256];       /* why taskstats is off; "" when on */
        task_view tasks[TASK_QUERY_MAX], prev_tasks[TASK_QUERY_MAX];
        size_t n_tasks, n_prev_tasks;

        proc_entry *procs, *scratch;      /* sorted by pid; capacity ATTRIBUTION_SCAN_PIDS_MAX + TASK_QUERY_MAX */
        size_t n_procs, cap_procs;
        bool proc_scan_ok;
        char proc_reason[256];
        task_io *thread_io;               /* TASKSTATS_QUERY_MAX replies: one process's threads */
        size_t n_via_taskstats, n_unreadable;            /* this full scan, so far */
        size_t last_via_taskstats, last_unreadable;      /* the last finished full scan */
        uint64_t n_ticks, n_full_scans;
        proc_entry top[ATTRIBUTION_TRACKED_MAX];   /* by write rate, largest first */
        size_t n_top;

        window_tick *window;              /* ring of ATTRIBUTION_WINDOW_TICKS_MAX ticks, newest at head - 1 */
        size_t window_head, window_count;
        uint64_t window_usec;             /* the time the shown lists are over */
        trace_task shown_paused[WINDOW_PAUSED_MAX];        /* summed over the window, most paused first */
        size_t n_shown_paused;
        shown_dirtier shown_dirtiers[WINDOW_DIRTIERS_MAX];  /* by write rate over the window */
        size_t n_shown_dirtiers;
};

/* ---- /proc/<pid>/io ------------------------------------------------------------------------- */

typedef struct proc_io {
        uint64_t *write_bytes, *cancelled_write_bytes;
        bool have_w, have_c;
} proc_io;

/* Keys are whole: "write_bytes" is also the tail of "cancelled_write_bytes". */
static int proc_io_cb(const char *key, const char *value, void *userdata) {
        proc_io *io = userdata;
        uint64_t *dst, v;
        bool *have;

        if (strcmp(key, "write_bytes") == 0) {
                dst = io->write_bytes;
                have = &io->have_w;
        } else if (strcmp(key, "cancelled_write_bytes") == 0) {
                dst = io->cancelled_write_bytes;
                have = &io->have_c;
        } else
                return 0;
        if (parse_u64(value, &v) < 0)
                return -EBADMSG;
        *dst = v;
        *have = true;
        return 0;
}

int attribution_read_proc_io(const char *path, uint64_t *ret_write_bytes, uint64_t *ret_cancelled_write_bytes) {
        _cleanup_close_ int fd = -1;
        char buf[512];
        proc_io io = { .write_bytes = ret_write_bytes, .cancelled_write_bytes = ret_cancelled_write_bytes };
        ssize_t n;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        r = parse_kv(buf, proc_io_cb, &io);
        if (r < 0)
                return r;
        return io.have_w && io.have_c ? 0 : -EBADMSG;
}

#define PF_KTHREAD 0x00200000   /* include/linux/sched.h */

int attribution_read_proc_kthread(const char *path) {
        char buf[1024], *p;
        unsigned long flags;
        int r;

        r = read_one_line(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        /* comm may hold spaces and ')': the fields start after the last ')'; flags is the 9th field */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
                return -EBADMSG;
        return (flags & PF_KTHREAD) != 0;
}

static int cmp_pid(const void *a, const void *b) {
        const proc_entry *x = a, *y = b;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static proc_entry *find_proc(proc_entry *v, size_t n, int32_t pid) {
        proc_entry key = { .pid = pid };
        return bsearch(&key, v, n, sizeof(*v), cmp_pid);
}

/* A process's write_bytes and cancelled_write_bytes from taskstats: the sum over its threads now alive
 * (taskstats has no per-process byte counts; /proc/<pid>/io also counts threads that have exited, so
 * the two differ, and a thread's exit makes the sum drop: no rate for that tick). 0 or -errno. */
static int read_proc_taskstats(attribution *a, int32_t pid, uint64_t *ret_w, uint64_t *ret_c) {
        _cleanup_closedir_ DIR *d = NULL;
        int32_t tids[TASKSTATS_QUERY_MAX];
        char path[64];
        struct dirent *de;
        size_t n = 0, n_io = 0;
        uint64_t w = 0, c = 0;
        int r;

        snprintf(path, sizeof(path), "/proc/%" PRId32 "/task", pid);
        d = opendir(path);
        if (!d)
                return -errno;
        /* a process with more threads than one query holds counts only its first ones */
        while ((de = readdir(d)) && n < ELEMENTSOF(tids)) {
                uint64_t tid;

                if (de->d_name[0] >= '1' && de->d_name[0] <= '9' && parse_u64(de->d_name, &tid) >= 0 && tid <= INT32_MAX)
                        tids[n++] = (int32_t) tid;
        }
        r = taskstats_query(a->taskstats, tids, n, a->thread_io, &n_io);
        if (r == -EPERM) {
                snprintf(a->taskstats_reason, sizeof(a->taskstats_reason),
                         "taskstats needs CAP_NET_ADMIN: no per-task write bytes or block I/O delay");
                a->taskstats = taskstats_free(a->taskstats);
        }
        if (r < 0)
                return r;
        if (n_io == 0)
                return -ESRCH;
        for (size_t i = 0; i < n_io; i++) {
                w += a->thread_io[i].write_bytes;
                c += a->thread_io[i].cancelled_write_bytes;
        }
        *ret_w = w;
        *ret_c = c;
        return 0;
}

/* Read one pid's counters into e, with rates against old (may be NULL). false if it is gone or unreadable. */
static bool read_proc(attribution *a, int32_t pid, const proc_entry *old, uint64_t now_usec, proc_entry *e) {
        char path[64];
        _cleanup_free_ char *full = NULL;
        uint64_t w = 0, c = 0;
        int r;

        snprintf(path, sizeof(path), "/proc/%" PRId32 "/io", pid);
        full = path_join_root(a->root, path);
        r = full ? attribution_read_proc_io(full, &w, &c) : -ENOMEM;
        /* no ptrace access to this task (the unit has no CAP_SYS_PTRACE): ask taskstats */
        if ((r == -EACCES || r == -EPERM) && a->taskstats && !a->root) {
                r = read_proc_taskstats(a, pid, &w, &c);
                if (r >= 0)
                        a->n_via_taskstats++;
                else if (r != -ESRCH && r != -ENOENT)
                        a->n_unreadable++;
        } else if (r == -EACCES || r == -EPERM)
                a->n_unreadable++;
        if (r < 0)
                return false;
        if (old)
                *e = *old;
        else
                *e = (proc_entry) { .pid = pid, .kthread = -1 };
        if (old && old->read_usec < now_usec && w >= old->write_bytes && c >= old->cancelled_write_bytes) {
                uint64_t dt = now_usec - old->read_usec;
                e->write_bytes_per_s = (uint64_t) ((double) (w - old->write_bytes) * 1e6 / (double) dt);
                e->cancelled_write_bytes_per_s = (uint64_t) ((double) (c - old->cancelled_write_bytes) * 1e6 / (double) dt);
                e->rate_usec = now_usec;
                e->rate_interval_usec = dt;
        } else {
                e->rate_usec = 0;
                e->kthread = -1;   /* counters went back: perhaps a new process under a reused pid */
                e->comm[0] = 0;
        }
        if (!old || w != old->write_bytes || c != old->cancelled_write_bytes)
                e->quiet_scans = 0;
        e->write_bytes = w;
        e->cancelled_write_bytes = c;
        e->read_usec = now_usec;
        return true;
}

/* Every process, at most ATTRIBUTION_SCAN_PIDS_MAX of them. */
static void scan_all(attribution *a, uint64_t now_usec) {
        _cleanup_free_ char *dir = path_join_root(a->root, "/proc");
        struct dirent *de;
        bool reread_quiet;
        size_t n = 0;
        DIR *d;

        d = dir ? opendir(dir) : NULL;
        if (!d) {
                if (a->proc_scan_ok || !a->proc_reason[0])
                        snprintf(a->proc_reason, sizeof(a->proc_reason), "cannot list %s: %s", dir ? dir : "/proc",
                                 strerror(errno));
                a->proc_scan_ok = false;
                return;
        }
        a->n_via_taskstats = a->n_unreadable = 0;
        reread_quiet = a->n_full_scans++ % ATTRIBUTION_QUIET_REREAD_SCANS == 0;
        while ((de = readdir(d)) && n < ATTRIBUTION_SCAN_PIDS_MAX) {
                const proc_entry *old;
                uint64_t pid;

                if (de->d_name[0] < '1' || de->d_name[0] > '9' || parse_u64(de->d_name, &pid) < 0 || pid > INT32_MAX)
                        continue;
                old = find_proc(a->procs, a->n_procs, (int32_t) pid);
                /* most processes never write (a 64-CPU guest: 770 tasks, 500 of them per-CPU kernel threads, each a
                 * taskstats query under the unit, most of the daemon's work): those quiet for a while are read
                 * again every few scans; a paused or top one is read every tick all the same */
                if (old && !reread_quiet && old->quiet_scans >= ATTRIBUTION_QUIET_SCANS) {
                        a->scratch[n++] = *old;
                        continue;
                }
                if (read_proc(a, (int32_t) pid, old, now_usec, &a->scratch[n])) {
                        proc_entry *e = &a->scratch[n++];

                        if (old && e->write_bytes == old->write_bytes && e->cancelled_write_bytes == old->cancelled_write_bytes &&
                            e->quiet_scans < UINT8_MAX)
                                e->quiet_scans++;
                }
        }
        closedir(d);
        qsort(a->scratch, n, sizeof(a->scratch[0]), cmp_pid);
        proc_entry *t = a->procs;
        a->procs = a->scratch;
        a->scratch = t;
        a->n_procs = n;
        a->proc_scan_ok = true;
        a->proc_reason[0] = 0;
        a->last_via_taskstats = a->n_via_taskstats;
        a->last_unreadable = a->n_unreadable;
}

/* Only the given pids; new ones are inserted (no rate until their next reading). */
static void scan_some(attribution *a, const int32_t *pids, size_t n_pids, uint64_t now_usec) {
        for (size_t i = 0; i < n_pids; i++) {
                proc_entry *old = find_proc(a->procs, a->n_procs, pids[i]), e;

                if (old && old->read_usec == now_usec)
                        continue;   /* asked twice */
                if (!read_proc(a, pids[i], old, now_usec, &e))
                        continue;
                if (old) {
                        *old = e;
                        continue;
                }
                if (a->n_procs >= a->cap_procs)
                        continue;
                a->procs[a->n_procs++] = e;
                qsort(a->procs, a->n_procs, sizeof(a->procs[0]), cmp_pid);
        }
}

static int cmp_rate(const void *x, const void *y) {
        const proc_entry *a = x, *b = y;

        if (a->write_bytes_per_s != b->write_bytes_per_s)
                return a->write_bytes_per_s > b->write_bytes_per_s ? -1 : 1;
        if (a->cancelled_write_bytes_per_s != b->cancelled_write_bytes_per_s)
                return a->cancelled_write_bytes_per_s > b->cancelled_write_bytes_per_s ? -1 : 1;
        return cmp_pid(a, b);
}

/* Kernel threads (a buffered loop device's worker dirtying its backing file, flushers) write for others. */
static bool is_kthread(attribution *a, proc_entry *e) {
        char path[64];
        _cleanup_free_ char *full = NULL;

        if (e->kthread < 0) {
                snprintf(path, sizeof(path), "/proc/%" PRId32 "/stat", e->pid);
                full = path_join_root(a->root, path);
                /* unreadable: gone, or a fake tree without stat; keep it listed */
                e->kthread = full && attribution_read_proc_kthread(full) > 0;
        }
        return e->kthread == 1;
}

/* The top dirtiers of this tick: read this tick, with a non-zero rate, not kernel threads. */
static void pick_top(attribution *a, uint64_t now_usec) {
        a->n_top = 0;
        for (size_t i = 0; i < a->n_procs; i++) {
                proc_entry *e = &a->procs[i];

                if (e->rate_usec != now_usec || (e->write_bytes_per_s == 0 && e->cancelled_write_bytes_per_s == 0))
                        continue;
                if (is_kthread(a, e))
                        continue;
                if (a->n_top < ELEMENTSOF(a->top)) {
                        a->top[a->n_top++] = *e;
                        qsort(a->top, a->n_top, sizeof(a->top[0]), cmp_rate);
                } else if (cmp_rate(e, &a->top[a->n_top - 1]) < 0) {
                        a->top[a->n_top - 1] = *e;
                        qsort(a->top, a->n_top, sizeof(a->top[0]), cmp_rate);
                }
        }
        /* comm only for the few shown */
        for (size_t i = 0; i < a->n_top; i++) {
                char path[64];
                _cleanup_free_ char *full = NULL;
                proc_entry *e = find_proc(a->procs, a->n_procs, a->top[i].pid);

                if (a->top[i].comm[0])
                        continue;
                snprintf(path, sizeof(path), "/proc/%" PRId32 "/comm", a->top[i].pid);
                full = path_join_root(a->root, path);
                if (full && read_one_line(full, a->top[i].comm, sizeof(a->top[i].comm)) >= 0 && e)
                        memcpy(e->comm, a->top[i].comm, sizeof(e->comm));
        }
}

/* ---- the window: the last few seconds of ticks ------------------------------------------------- */

size_t attribution_window_memory_bytes(void) {
        return ATTRIBUTION_WINDOW_TICKS_MAX * sizeof(window_tick);
}

/* Record this tick: its most paused tasks and its dirtiers, with the bytes each wrote since its last reading. */
static void window_add(attribution *a, uint64_t now_usec, uint64_t elapsed_usec) {
        window_tick *w = &a->window[a->window_head];

        w->end_usec = now_usec;
        w->elapsed_usec = elapsed_usec;
        w->n_paused = 0;
        for (size_t i = 0; a->have_last && i < a->last.n_tasks && w->n_paused < ELEMENTSOF(w->paused); i++)
                w->paused[w->n_paused++] = a->last.tasks[i];
        w->n_dirtiers = 0;
        for (size_t i = 0; i < a->n_top && w->n_dirtiers < ELEMENTSOF(w->dirtiers); i++) {
                const proc_entry *e = &a->top[i];
                window_dirtier *d = &w->dirtiers[w->n_dirtiers++];

                *d = (window_dirtier) {
                        .pid = e->pid,
                        .write_bytes = e->write_bytes,
                        /* the rates back into bytes: exact but for their rounding */
                        .write_delta_bytes = (uint64_t) ((double) e->write_bytes_per_s * (double) e->rate_interval_usec / 1e6),
                        .cancelled_delta_bytes = (uint64_t) ((double) e->cancelled_write_bytes_per_s *
                                                             (double) e->rate_interval_usec / 1e6),
                        .interval_usec = e->rate_interval_usec,
                };
                memcpy(d->comm, e->comm, sizeof(d->comm));
        }
        a->window_head = (a->window_head + 1) % ATTRIBUTION_WINDOW_TICKS_MAX;
        a->window_count = MIN(a->window_count + 1, (size_t) ATTRIBUTION_WINDOW_TICKS_MAX);
}

static int cmp_paused(const void *x, const void *y) {
        const trace_task *a = x, *b = y;

        if (a->pause_ms != b->pause_ms)
                return a->pause_ms > b->pause_ms ? -1 : 1;
        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int cmp_shown_dirtier(const void *x, const void *y) {
        const shown_dirtier *a = x, *b = y;

        if (a->write_bytes_per_s != b->write_bytes_per_s)
                return a->write_bytes_per_s > b->write_bytes_per_s ? -1 : 1;
        if (a->cancelled_write_bytes_per_s != b->cancelled_write_bytes_per_s)
                return a->cancelled_write_bytes_per_s > b->cancelled_write_bytes_per_s ? -1 : 1;
        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* One paused (task, device) pair added into the window's sums; the last event's figures are the newest tick's. */
static void window_sum_paused(attribution *a, const trace_task *t) {
        trace_task *s = NULL;

        for (size_t i = 0; i < a->n_shown_paused && !s; i++)
                if (a->shown_paused[i].pid == t->pid && strcmp(a->shown_paused[i].bdi, t->bdi) == 0)
                        s = &a->shown_paused[i];
        if (!s) {
                if (a->n_shown_paused < ELEMENTSOF(a->shown_paused))
                        a->shown_paused[a->n_shown_paused++] = *t;
                return;
        }
        uint64_t events = s->events + t->events, pauses = s->pauses + t->pauses, pause_ms = s->pause_ms + t->pause_ms;
        uint64_t max_pause_ms = MAX(s->max_pause_ms, t->max_pause_ms);

        *s = *t;
        s->events = events;
        s->pauses = pauses;
        s->pause_ms = pause_ms;
        s->max_pause_ms = max_pause_ms;
}

/* One dirtier reading added into the window's sums: only the share of its interval inside the window. */
static void window_sum_dirtier(attribution *a, const window_dirtier *d, uint64_t end_usec, uint64_t window_start_usec) {
        shown_dirtier *s = NULL;
        double share = 1.0;

        if (d->interval_usec > end_usec - window_start_usec)
                share = (double) (end_usec - window_start_usec) / (double) d->interval_usec;
        for (size_t i = 0; i < a->n_shown_dirtiers && !s; i++)
                if (a->shown_dirtiers[i].pid == d->pid)
                        s = &a->shown_dirtiers[i];
        if (!s) {
                if (a->n_shown_dirtiers >= ELEMENTSOF(a->shown_dirtiers))
                        return;
                s = &a->shown_dirtiers[a->n_shown_dirtiers++];
                *s = (shown_dirtier) { .pid = d->pid };
        }
        memcpy(s->comm, d->comm, sizeof(s->comm));
        s->write_bytes = d->write_bytes;
        s->window_write_bytes += (double) d->write_delta_bytes * share;
        s->window_cancelled_bytes += (double) d->cancelled_delta_bytes * share;
}

static const window_tick *window_back(const attribution *a, size_t n) {
        return &a->window[(a->window_head + ATTRIBUTION_WINDOW_TICKS_MAX - 1 - n) % ATTRIBUTION_WINDOW_TICKS_MAX];
}

/* The lists top shows: every task of the ticks that lie within ATTRIBUTION_WINDOW_USEC of the newest tick's
 * end (the newest tick at least), its pauses summed and its writes over the window, most first. */
static void window_compute(attribution *a) {
        uint64_t newest_end, start;
        size_t n;

        a->n_shown_paused = a->n_shown_dirtiers = 0;
        a->window_usec = 0;
        if (a->window_count == 0)
                return;
        newest_end = window_back(a, 0)->end_usec;
        start = newest_end;
        for (n = 0; n < a->window_count; n++) {
                const window_tick *w = window_back(a, n);
                uint64_t tick_start = w->end_usec - MIN(w->elapsed_usec, w->end_usec);

                if (n > 0 && newest_end - tick_start > ATTRIBUTION_WINDOW_USEC)
                        break;
                start = tick_start;
        }
        a->window_usec = newest_end - start;
        /* oldest first, so that the newest tick's figures (comm, the last event) are the ones kept */
        for (size_t k = n; k-- > 0;) {
                const window_tick *w = window_back(a, k);

                for (size_t i = 0; i < w->n_paused; i++)
                        window_sum_paused(a, &w->paused[i]);
                for (size_t i = 0; i < w->n_dirtiers; i++)
                        window_sum_dirtier(a, &w->dirtiers[i], w->end_usec, start);
        }
        for (size_t i = 0; i < a->n_shown_paused; i++)
                if (a->window_usec > 0)
                        a->shown_paused[i].pause_ms_per_s = (double) a->shown_paused[i].pause_ms * 1e6 /
                                                            (double) a->window_usec;
        qsort(a->shown_paused, a->n_shown_paused, sizeof(a->shown_paused[0]), cmp_paused);
        for (size_t i = 0; i < a->n_shown_dirtiers && a->window_usec > 0; i++) {
                shown_dirtier *d = &a->shown_dirtiers[i];

                d->write_bytes_per_s = (uint64_t) (d->window_write_bytes * 1e6 / (double) a->window_usec);
                d->cancelled_write_bytes_per_s = (uint64_t) (d->window_cancelled_bytes * 1e6 / (double) a->window_usec);
        }
        qsort(a->shown_dirtiers, a->n_shown_dirtiers, sizeof(a->shown_dirtiers[0]), cmp_shown_dirtier);
}

/* ---- taskstats -------------------------------------------------------------------------------- */

static void query_tasks(attribution *a, uint64_t now_usec) {
        int32_t pids[TASK_QUERY_MAX];
        task_io io[TASK_QUERY_MAX];
        size_t n = 0, n_io = 0;
        int r;

        memcpy(a->prev_tasks, a->tasks, a->n_tasks * sizeof(a->tasks[0]));
        a->n_prev_tasks = a->n_tasks;
        a->n_tasks = 0;
        if (!a->taskstats)
                return;
        /* the tasks top shows */
        for (size_t i = 0; i < a->n_shown_paused && n < ATTRIBUTION_TOP_MAX; i++) {
                bool dup = false;
                for (size_t k = 0; k < n && !dup; k++)
                        dup = pids[k] == a->shown_paused[i].pid;
                if (!dup)
                        pids[n++] = a->shown_paused[i].pid;
        }
        for (size_t i = 0; i < a->n_shown_dirtiers && i < ATTRIBUTION_TOP_MAX; i++) {
                bool dup = false;
                for (size_t k = 0; k < n && !dup; k++)
                        dup = pids[k] == a->shown_dirtiers[i].pid;
                if (!dup)
                        pids[n++] = a->shown_dirtiers[i].pid;
        }
        if (n == 0)
                return;
        r = taskstats_query(a->taskstats, pids, n, io, &n_io);
        if (r == -EPERM) {
                snprintf(a->taskstats_reason, sizeof(a->taskstats_reason),
                         "taskstats needs CAP_NET_ADMIN: no per-task write bytes or block I/O delay");
                a->taskstats = taskstats_free(a->taskstats);
                return;
        }
        if (r < 0)
                return;
        for (size_t i = 0; i < n_io; i++) {
                task_view *t = &a->tasks[a->n_tasks++];

                *t = (task_view) { .io = io[i], .usec = now_usec };
                for (size_t k = 0; k < a->n_prev_tasks; k++) {
                        const task_view *p = &a->prev_tasks[k];
                        double dt;

                        if (p->io.pid != t->io.pid || p->usec >= now_usec || !t->io.have_io ||
                            t->io.write_bytes < p->io.write_bytes)
                                continue;
                        dt = (double) (now_usec - p->usec);
                        t->write_bytes_per_s = (uint64_t) ((double) (t->io.write_bytes - p->io.write_bytes) * 1e6 / dt);
                        if (t->io.cancelled_write_bytes >= p->io.cancelled_write_bytes)
                                t->cancelled_write_bytes_per_s = (uint64_t) ((double) (t->io.cancelled_write_bytes -
                                                                                     p->io.cancelled_write_bytes) * 1e6 / dt);
                        if (t->io.have_delay && t->io.blkio_delay_total_ns >= p->io.blkio_delay_total_ns)
                                t->blkio_delay_ms_per_s = (double) (t->io.blkio_delay_total_ns - p->io.blkio_delay_total_ns) / 1e6 /
                                                          (dt / 1e6);
                        t->have_rates = true;
                        break;
                }
        }
}

static const task_view *find_task(const attribution *a, int32_t pid) {
        for (size_t i = 0; i < a->n_tasks; i++)
                if (a->tasks[i].io.pid == pid)
                        return &a->tasks[i];
        return NULL;
}

/* ---- life cycle ------------------------------------------------------------------------------- */

static const char *trace_error_reason(int r) {
        switch (-r) {
        case ENOENT:     return "tracefs is missing (no /sys/kernel/tracing)";
        case ENOMEDIUM:  return "tracefs is not mounted (/sys/kernel/tracing, /sys/kernel/debug/tracing) and may not be mounted here";
        case EOPNOTSUPP: return "the kernel has no writeback/balance_dirty_pages tracepoint";
        case EPERM:
        case EACCES:     return "no permission to create a tracefs instance (needs root)";
        case EBUSY:      return "the trace instance is in use (another wbtuned?)";
        default:         return NULL;
        }
}

int attribution_new(const attribution_options *o, attribution **ret) {
        attribution *a;
        int r;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->root = o->root ? xstrdup(o->root) : NULL;
        a->enabled = o->enabled;
        snprintf(a->instance, sizeof(a->instance), "%s", o->instance ? o->instance : "wbtuned");
        if (!o->enabled) {
                snprintf(a->reason, sizeof(a->reason), "attribution = no in the configuration");
                snprintf(a->taskstats_reason, sizeof(a->taskstats_reason), "attribution = no in the configuration");
                *ret = a;
                return 0;
        }

        a->cap_procs = ATTRIBUTION_SCAN_PIDS_MAX + TASK_QUERY_MAX;
        a->procs = calloc(a->cap_procs, sizeof(proc_entry));
        a->scratch = calloc(a->cap_procs, sizeof(proc_entry));
        a->thread_io = calloc(TASKSTATS_QUERY_MAX, sizeof(task_io));
        a->window = calloc(ATTRIBUTION_WINDOW_TICKS_MAX, sizeof(window_tick));
        if (!a->procs || !a->scratch || !a->thread_io || !a->window) {
                attribution_free(a);
                return -ENOMEM;
        }

        /* tests: a trace without tracefs, fed by attribution_feed_trace() */
        if (o->detached_trace) {
                r = trace_new_detached(4096, &a->trace);
                if (r < 0) {
                        attribution_free(a);
                        return r;
                }
        }
        /* a fake tree has no kernel behind it: never create a trace instance or touch sysctls for it */
        if (o->root) {
                if (!a->trace)
                        snprintf(a->reason, sizeof(a->reason), "not on the live system (--root %s)", o->root);
                snprintf(a->taskstats_reason, sizeof(a->taskstats_reason), "not on the live system (--root %s)", o->root);
                *ret = a;
                return 0;
        }

        r = trace_new(o->tracefs, o->instance, &a->trace);
        if (r < 0) {
                const char *why = trace_error_reason(r);
                if (why)
                        snprintf(a->reason, sizeof(a->reason), "%s", why);
                else
                        snprintf(a->reason, sizeof(a->reason), "cannot set up tracing: %s", strerror(-r));
                log_warning("Throttle attribution is off: %s; the rest of the daemon runs.", a->reason);
        }

        if (o->task_delayacct && o->dry_run)
                log_info("Not turning kernel.task_delayacct on in dry-run mode.");
        r = taskstats_new(o->task_delayacct && !o->dry_run, &a->taskstats);
        if (r < 0)
                snprintf(a->taskstats_reason, sizeof(a->taskstats_reason), "%s",
                         r == -ENOENT ? "the kernel has no TASKSTATS netlink family" : "cannot open a generic netlink socket");
        else {
                /* CAP_NET_ADMIN shows only on a query: ask about ourselves once */
                int32_t self = (int32_t) gettid();
                task_io io;
                size_t n = 0;

                if (taskstats_query(a->taskstats, &self, 1, &io, &n) == -EPERM) {
                        snprintf(a->taskstats_reason, sizeof(a->taskstats_reason),
                                 "taskstats needs CAP_NET_ADMIN: no per-task write bytes or block I/O delay");
                        a->taskstats = taskstats_free(a->taskstats);
                }
        }
        *ret = a;
        return 0;
}

attribution *attribution_free(attribution *a) {
        if (!a)
                return NULL;
        trace_free(a->trace);
        taskstats_free(a->taskstats);
        free(a->procs);
        free(a->scratch);
        free(a->thread_io);
        free(a->window);
        free(a->root);
        free(a);
        return NULL;
}

int attribution_trace_fd(const attribution *a) {
        return a && a->trace ? trace_fd(a->trace) : -1;
}

void attribution_process(attribution *a) {
        int r;

        if (!a || !a->trace)
                return;
        r = trace_process(a->trace);
        if (r < 0)
                log_debug_errno(r, "Failed to read the trace pipe: %m");
}

void attribution_feed_trace(attribution *a, const char *text, size_t len) {
        if (a && a->trace)
                trace_feed(a->trace, text, len);
}

void attribution_tick(attribution *a, uint64_t now_usec) {
        if (!a || !a->enabled)
                return;
        uint64_t elapsed = a->last_tick_usec && now_usec > a->last_tick_usec ? now_usec - a->last_tick_usec : 0;

        if (a->trace) {
                (void) trace_tick(a->trace, elapsed, &a->last);
                a->have_last = elapsed > 0;
                a->totals = a->last.total;
        }
        a->last_tick_usec = now_usec;

        if (a->n_ticks++ % ATTRIBUTION_SCAN_EVERY_TICKS == 0)
                scan_all(a, now_usec);
        else {
                int32_t pids[ATTRIBUTION_TRACKED_MAX + ATTRIBUTION_TOP_MAX];
                size_t n = 0;

                for (size_t i = 0; i < a->n_top; i++)
                        pids[n++] = a->top[i].pid;
                for (size_t i = 0; a->have_last && i < a->last.n_tasks && i < ATTRIBUTION_TOP_MAX; i++)
                        pids[n++] = a->last.tasks[i].pid;
                scan_some(a, pids, n, now_usec);
        }
        pick_top(a, now_usec);
        window_add(a, now_usec, elapsed);
        window_compute(a);
        query_tasks(a, now_usec);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

json_object *attribution_status_json(const attribution *a) {
        json_object *o = oom_check(json_object_new_object());
        bool on = a && a->trace;

        proto_add_bool(o, PF_ATTRIBUTION_ENABLED, on);
        proto_add_string(o, PF_ATTRIBUTION_REASON, on || !a ? NULL : a->reason);
        if (on)
                proto_add_string(o, PF_ATTRIBUTION_TRACE_INSTANCE, a->instance);
        proto_add_bool(o, PF_ATTRIBUTION_TASKSTATS, a && a->taskstats);
        proto_add_string(o, PF_ATTRIBUTION_TASKSTATS_REASON, !a || a->taskstats ? NULL : a->taskstats_reason);
        proto_add_bool(o, PF_ATTRIBUTION_DELAYACCT, a && taskstats_delayacct(a->taskstats));
        proto_add_bool(o, PF_ATTRIBUTION_PROC_SCAN, a && a->enabled && a->proc_scan_ok);
        if (a && a->proc_reason[0])
                proto_add_string(o, PF_ATTRIBUTION_PROC_SCAN_REASON, a->proc_reason);
        /* processes of the last full scan whose /proc/<pid>/io was refused: read through taskstats, or not at all */
        proto_add_u64(o, PF_ATTRIBUTION_PROC_SCAN_VIA_TASKSTATS, a ? a->last_via_taskstats : 0);
        proto_add_u64(o, PF_ATTRIBUTION_PROC_SCAN_UNREADABLE, a ? a->last_unreadable : 0);
        proto_add(o, PF_ATTRIBUTION_COUNTERS, trace_counters_to_json(a ? &a->totals : &(trace_counters) {}));
        return o;
}

static void add_io(json_object *j, const task_view *t) {
        if (!t || !t->io.have_io)
                return;
        proto_add_u64(j, PF_TASK_IO_TASK_WRITE_BYTES, t->io.write_bytes);
        proto_add_u64(j, PF_TASK_IO_TASK_CANCELLED_WRITE_BYTES, t->io.cancelled_write_bytes);
        if (t->have_rates) {
                proto_add_u64(j, PF_TASK_IO_TASK_WRITE_BYTES_PER_S, t->write_bytes_per_s);
                proto_add_u64(j, PF_TASK_IO_TASK_CANCELLED_WRITE_BYTES_PER_S, t->cancelled_write_bytes_per_s);
                if (t->io.have_delay && t->io.blkio_delay_total_ns > 0)
                        proto_add_double(j, PF_TASK_IO_BLKIO_DELAY_MS_PER_S, t->blkio_delay_ms_per_s);
        }
}

static const char *device_name(const sample *s, const char *bdi) {
        for (size_t i = 0; s && i < s->n_devices; i++)
                if (strcmp(s->devices[i].bdi, bdi) == 0)
                        return s->devices[i].name;
        return "";
}

void attribution_top_json(const attribution *a, const sample *s, json_object *o) {
        json_object *st = attribution_status_json(a), *paused = oom_check(json_object_new_array()),
                    *dirtiers = oom_check(json_object_new_array());
        bool have = a && a->have_last;

        proto_add_u64(st, PF_TOP_ATTRIBUTION_ELAPSED_USEC, have ? a->last.elapsed_usec : 0);
        proto_add(st, PF_TOP_ATTRIBUTION_TICK, trace_counters_to_json(have ? &a->last.tick : &(trace_counters) {}));
        proto_add_u64(st, PF_TOP_ATTRIBUTION_SCAN_EVERY_TICKS, ATTRIBUTION_SCAN_EVERY_TICKS);
        proto_add_u64(st, PF_TOP_ATTRIBUTION_WINDOW_USEC, a ? a->window_usec : 0);
        proto_add(o, PF_TOP_ATTRIBUTION, st);

        for (size_t i = 0; a && i < a->n_shown_paused && i < ATTRIBUTION_TOP_MAX; i++) {
                const trace_task *t = &a->shown_paused[i];
                json_object *j = oom_check(json_object_new_object());

                proto_add_u64(j, PF_PAUSED_PID, (uint64_t) MAX(t->pid, 0));
                proto_add_string(j, PF_PAUSED_COMM, t->comm);
                proto_add_string(j, PF_PAUSED_BDI, t->bdi);
                proto_add_string(j, PF_PAUSED_NAME, device_name(s, t->bdi));
                proto_add_u64(j, PF_PAUSED_PAUSES, t->pauses);
                proto_add_u64(j, PF_PAUSED_PAUSE_MS, t->pause_ms);
                proto_add_u64(j, PF_PAUSED_MAX_PAUSE_MS, t->max_pause_ms);
                proto_add_double(j, PF_PAUSED_PAUSE_MS_PER_S, t->pause_ms_per_s);
                proto_add_u64(j, PF_PAUSED_TASK_RATELIMIT_BYTES_PER_S, t->task_ratelimit_bytes_per_s);
                proto_add_u64(j, PF_PAUSED_DIRTY_BYTES, t->dirty_bytes);
                proto_add_u64(j, PF_PAUSED_LIMIT_BYTES, t->limit_bytes);
                proto_add_u64(j, PF_PAUSED_WB_DIRTY_BYTES, t->wb_dirty_bytes);
                proto_add_u64(j, PF_PAUSED_WB_SETPOINT_BYTES, t->wb_setpoint_bytes);
                proto_add_u64(j, PF_PAUSED_CGROUP_INO, t->cgroup_ino);
                add_io(j, find_task(a, t->pid));
                oom_check_add(json_object_array_add(paused, j));
        }
        for (size_t i = 0, n = 0; a && i < a->n_shown_dirtiers && n < ATTRIBUTION_TOP_MAX; i++) {
                const shown_dirtier *e = &a->shown_dirtiers[i];
                json_object *j;

                /* the reading that made it a dirtier lies outside the window: nothing written in it */
                if (e->write_bytes_per_s == 0 && e->cancelled_write_bytes_per_s == 0)
                        continue;
                j = oom_check(json_object_new_object());
                proto_add_u64(j, PF_DIRTIER_PID, (uint64_t) MAX(e->pid, 0));
                proto_add_string(j, PF_DIRTIER_COMM, e->comm);
                proto_add_u64(j, PF_DIRTIER_WRITE_BYTES_PER_S, e->write_bytes_per_s);
                proto_add_u64(j, PF_DIRTIER_CANCELLED_WRITE_BYTES_PER_S, e->cancelled_write_bytes_per_s);
                proto_add_u64(j, PF_DIRTIER_WRITE_BYTES, e->write_bytes);
                /* the device it was paused on most in the window (the trace's pid is a thread id) */
                for (size_t k = 0; k < a->n_shown_paused; k++)
                        if (a->shown_paused[k].pid == e->pid) {
                                proto_add_string(j, PF_DIRTIER_BDI, a->shown_paused[k].bdi);
                                proto_add_string(j, PF_DIRTIER_NAME, device_name(s, a->shown_paused[k].bdi));
                                proto_add_double(j, PF_DIRTIER_PAUSE_MS_PER_S, a->shown_paused[k].pause_ms_per_s);
                                break;
                        }
                add_io(j, find_task(a, e->pid));
                oom_check_add(json_object_array_add(dirtiers, j));
                n++;
        }
        proto_add(o, PF_TOP_PAUSED, paused);
        proto_add(o, PF_TOP_DIRTIERS, dirtiers);
}

json_object *attribution_device_json(const attribution *a, const char *bdi) {
        if (!a || !a->have_last)
                return NULL;
        for (size_t i = 0; i < a->last.n_devices; i++) {
                const trace_device *d = &a->last.devices[i];
                json_object *j;

                if (strcmp(d->bdi, bdi) != 0)
                        continue;
                j = oom_check(json_object_new_object());
                proto_add_u64(j, PF_THROTTLE_EVENTS, d->events);
                proto_add_u64(j, PF_THROTTLE_PAUSES, d->pauses);
                proto_add_double(j, PF_THROTTLE_PAUSE_MS_PER_S, d->pause_ms_per_s);
                proto_add_u64(j, PF_THROTTLE_MAX_PAUSE_MS, d->max_pause_ms);
                proto_add_u64(j, PF_THROTTLE_N_TASKS, d->n_tasks);
                proto_add_u64(j, PF_THROTTLE_TASK_RATELIMIT_BYTES_PER_S, d->task_ratelimit_bytes_per_s);
                proto_add_u64(j, PF_THROTTLE_DIRTY_RATELIMIT_BYTES_PER_S, d->dirty_ratelimit_bytes_per_s);
                proto_add_u64(j, PF_THROTTLE_LIMIT_BYTES, d->limit_bytes);
                proto_add_u64(j, PF_THROTTLE_WB_SETPOINT_BYTES, d->wb_setpoint_bytes);
                return j;
        }
        return NULL;
}
