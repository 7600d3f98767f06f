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
        int8_t kthread;                                /* 1 kernel thread, 0 not, -1 not known yet */
} proc_entry;

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
        uint64_t n_ticks;
        proc_entry top[ATTRIBUTION_TRACKED_MAX];   /* by write rate, largest first */
        size_t n_top;
};

/* ---- /proc/<pid>/io ------------------------------------------------------------------------- */

int attribution_read_proc_io(const char *path, uint64_t *ret_write_bytes, uint64_t *ret_cancelled_write_bytes) {
        _cleanup_close_ int fd = -1;
        char buf[512];
        ssize_t n;
        bool have_w = false, have_c = false;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                uint64_t *dst = NULL;
                bool *have = NULL;

                /* "write_bytes" is also the tail of "cancelled_write_bytes": match at line start */
                if (strncmp(line, "write_bytes:", 12) == 0) {
                        dst = ret_write_bytes;
                        have = &have_w;
                        line += 12;
                } else if (strncmp(line, "cancelled_write_bytes:", 22) == 0) {
                        dst = ret_cancelled_write_bytes;
                        have = &have_c;
                        line += 22;
                } else
                        continue;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(line, &end, 10);
                if (errno != 0 || end == line)
                        return -EBADMSG;
                *dst = v;
                *have = true;
        }
        return have_w && have_c ? 0 : -EBADMSG;
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
        } else {
                e->rate_usec = 0;
                e->kthread = -1;   /* counters went back: perhaps a new process under a reused pid */
                e->comm[0] = 0;
        }
        e->write_bytes = w;
        e->cancelled_write_bytes = c;
        e->read_usec = now_usec;
        return true;
}

/* Every process, at most ATTRIBUTION_SCAN_PIDS_MAX of them. */
static void scan_all(attribution *a, uint64_t now_usec) {
        _cleanup_free_ char *dir = path_join_root(a->root, "/proc");
        struct dirent *de;
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
        while ((de = readdir(d)) && n < ATTRIBUTION_SCAN_PIDS_MAX) {
                uint64_t pid;

                if (de->d_name[0] < '1' || de->d_name[0] > '9' || parse_u64(de->d_name, &pid) < 0 || pid > INT32_MAX)
                        continue;
                if (read_proc(a, (int32_t) pid, find_proc(a->procs, a->n_procs, (int32_t) pid), now_usec, &a->scratch[n]))
                        n++;
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
        for (size_t i = 0; a->have_last && i < a->last.n_tasks && n < ATTRIBUTION_TOP_MAX; i++) {
                bool dup = false;
                for (size_t k = 0; k < n && !dup; k++)
                        dup = pids[k] == a->last.tasks[i].pid;
                if (!dup)
                        pids[n++] = a->last.tasks[i].pid;
        }
        for (size_t i = 0; i < a->n_top && i < ATTRIBUTION_TOP_MAX; i++) {
                bool dup = false;
                for (size_t k = 0; k < n && !dup; k++)
                        dup = pids[k] == a->top[i].pid;
                if (!dup)
                        pids[n++] = a->top[i].pid;
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
        if (!a->procs || !a->scratch || !a->thread_io) {
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
        if (a->trace) {
                uint64_t elapsed = a->last_tick_usec && now_usec > a->last_tick_usec ? now_usec - a->last_tick_usec : 0;

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
        query_tasks(a, now_usec);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

json_object *attribution_status_json(const attribution *a) {
        json_object *o = json_object_new_object();
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
        json_object *st = attribution_status_json(a), *paused = json_object_new_array(), *dirtiers = json_object_new_array();
        bool have = a && a->have_last;

        proto_add_u64(st, PF_TOP_ATTRIBUTION_ELAPSED_USEC, have ? a->last.elapsed_usec : 0);
        proto_add(st, PF_TOP_ATTRIBUTION_TICK, trace_counters_to_json(have ? &a->last.tick : &(trace_counters) {}));
        proto_add_u64(st, PF_TOP_ATTRIBUTION_SCAN_EVERY_TICKS, ATTRIBUTION_SCAN_EVERY_TICKS);
        proto_add(o, PF_TOP_ATTRIBUTION, st);

        for (size_t i = 0; have && i < a->last.n_tasks && i < ATTRIBUTION_TOP_MAX; i++) {
                const trace_task *t = &a->last.tasks[i];
                json_object *j = json_object_new_object();

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
                json_object_array_add(paused, j);
        }
        for (size_t i = 0; a && i < a->n_top && i < ATTRIBUTION_TOP_MAX; i++) {
                const proc_entry *e = &a->top[i];
                json_object *j = json_object_new_object();

                proto_add_u64(j, PF_DIRTIER_PID, (uint64_t) MAX(e->pid, 0));
                proto_add_string(j, PF_DIRTIER_COMM, e->comm);
                proto_add_u64(j, PF_DIRTIER_WRITE_BYTES_PER_S, e->write_bytes_per_s);
                proto_add_u64(j, PF_DIRTIER_CANCELLED_WRITE_BYTES_PER_S, e->cancelled_write_bytes_per_s);
                proto_add_u64(j, PF_DIRTIER_WRITE_BYTES, e->write_bytes);
                /* the device it is throttled on, when the trace saw it (the trace's pid is a thread id) */
                for (size_t k = 0; have && k < a->last.n_tasks; k++)
                        if (a->last.tasks[k].pid == e->pid) {
                                proto_add_string(j, PF_DIRTIER_BDI, a->last.tasks[k].bdi);
                                proto_add_string(j, PF_DIRTIER_NAME, device_name(s, a->last.tasks[k].bdi));
                                proto_add_double(j, PF_DIRTIER_PAUSE_MS_PER_S, a->last.tasks[k].pause_ms_per_s);
                                break;
                        }
                add_io(j, find_task(a, e->pid));
                json_object_array_add(dirtiers, j);
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
                j = json_object_new_object();
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
