/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-task I/O from taskstats (generic netlink "TASKSTATS"), one per-thread query per pid. */
#include "taskstats.h"

#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "log.h"
#include "util.h"

#define DELAYACCT_PATH "/proc/sys/kernel/task_delayacct"

struct taskstats_ctx {
        struct nl_sock *sock;
        int family;
        bool delayacct;
        bool restore_delayacct;   /* we turned it on: turn it off again */
        bool denied;              /* -EPERM seen: no CAP_NET_ADMIN */
};

/* Whether a payload of len bytes holds field f of struct taskstats. */
#define HAS_FIELD(len, f) ((len) >= offsetof(struct taskstats, f) + sizeof(((struct taskstats *) 0)->f))

int taskstats_decode(const void *payload, size_t len, task_io *out) {
        struct taskstats ts = {};

        /* Kernels append fields and bump the version (6.18 sends v16, 560 bytes; this header is
         * v13, 416 bytes): the prefix we know is laid out the same in every version. */
        if (!payload || !HAS_FIELD(len, version))
                return -EBADMSG;
        memcpy(&ts, payload, MIN(len, sizeof(ts)));

        memset(out, 0, sizeof(*out));
        out->version = ts.version;
        if (HAS_FIELD(len, ac_comm)) {
                memcpy(out->comm, ts.ac_comm, MIN(sizeof(out->comm), sizeof(ts.ac_comm)));
                out->comm[sizeof(out->comm) - 1] = 0;
        }
        if (HAS_FIELD(len, ac_pid))
                out->tgid = ts.ac_pid;
        if (HAS_FIELD(len, blkio_delay_total)) {
                out->blkio_count = ts.blkio_count;
                out->blkio_delay_total_ns = ts.blkio_delay_total;
                out->have_delay = true;
        }
        if (HAS_FIELD(len, cancelled_write_bytes)) {
                out->read_char = ts.read_char;
                out->write_char = ts.write_char;
                out->read_bytes = ts.read_bytes;
                out->write_bytes = ts.write_bytes;
                out->cancelled_write_bytes = ts.cancelled_write_bytes;
                out->have_io = true;
        }
        return 0;
}

typedef struct reply_state {
        uint32_t pid;
        task_io *out;
        bool found;
        int error;
} reply_state;

static int on_valid(struct nl_msg *msg, void *arg) {
        reply_state *st = arg;
        struct nlattr *attrs[TASKSTATS_TYPE_MAX + 1], *inner[TASKSTATS_TYPE_MAX + 1];
        struct nlattr *aggr;

        if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, TASKSTATS_TYPE_MAX, NULL) < 0)
                return NL_SKIP;
        aggr = attrs[TASKSTATS_TYPE_AGGR_PID];
        if (!aggr || nla_parse_nested(inner, TASKSTATS_TYPE_MAX, aggr, NULL) < 0)
                return NL_SKIP;
        if (!inner[TASKSTATS_TYPE_PID] || !inner[TASKSTATS_TYPE_STATS])
                return NL_SKIP;
        if (nla_len(inner[TASKSTATS_TYPE_PID]) < (int) sizeof(uint32_t) || nla_get_u32(inner[TASKSTATS_TYPE_PID]) != st->pid)
                return NL_SKIP;    /* not the answer to this question */
        if (taskstats_decode(nla_data(inner[TASKSTATS_TYPE_STATS]), (size_t) nla_len(inner[TASKSTATS_TYPE_STATS]), st->out) < 0)
                return NL_SKIP;
        st->out->pid = (int32_t) st->pid;
        st->found = true;
        return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg) {
        reply_state *st = arg;

        st->error = err->error < 0 ? err->error : -err->error;
        return NL_STOP;
}

/* 0 filled, -ESRCH gone, -EPERM, or another -errno. */
static int query_one(taskstats_ctx *ctx, uint32_t pid, task_io *out) {
        reply_state st = { .pid = pid, .out = out };
        struct nl_msg *msg;
        int r;

        msg = nlmsg_alloc();
        if (!msg)
                return -ENOMEM;
        if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, ctx->family, 0, 0, TASKSTATS_CMD_GET, TASKSTATS_VERSION) ||
            nla_put_u32(msg, TASKSTATS_CMD_ATTR_PID, pid) < 0) {
                nlmsg_free(msg);
                return -ENOMEM;
        }
        r = nl_send_auto(ctx->sock, msg);
        nlmsg_free(msg);
        if (r < 0)
                return -EIO;

        nl_socket_modify_cb(ctx->sock, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &st);
        nl_socket_modify_err_cb(ctx->sock, NL_CB_CUSTOM, on_error, &st);
        r = nl_recvmsgs_default(ctx->sock);
        if (st.error < 0)
                return st.error;
        if (r < 0)
                return r == -NLE_PERM ? -EPERM : -EIO;
        return st.found ? 0 : -ESRCH;
}

int taskstats_query(taskstats_ctx *ctx, const int32_t *pids, size_t n, task_io *out, size_t *n_out) {
        size_t filled = 0;

        *n_out = 0;
        if (ctx->denied)
                return -EPERM;
        n = MIN(n, (size_t) TASKSTATS_QUERY_MAX);
        for (size_t i = 0; i < n; i++) {
                int r;

                if (pids[i] <= 0)
                        continue;
                r = query_one(ctx, (uint32_t) pids[i], &out[filled]);
                if (r == -EPERM) {
                        ctx->denied = true;
                        return log_warning_errno(r, "Taskstats needs CAP_NET_ADMIN, per-task write bytes unavailable: %m");
                }
                if (r == -ESRCH || r == -EINVAL)
                        continue;    /* exited since it was seen */
                if (r < 0)
                        return log_debug_errno(r, "Taskstats query for %d failed: %m", pids[i]);
                filled++;
        }
        *n_out = filled;
        return 0;
}

int taskstats_new(bool enable_delayacct, taskstats_ctx **ret) {
        taskstats_ctx *ctx;
        struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
        uint64_t v = 0;
        int r;

        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        ctx->sock = nl_socket_alloc();
        if (!ctx->sock) {
                free(ctx);
                return -ENOMEM;
        }
        /* An ACK would be read as the next query's reply: the kernel answers every request anyway. */
        nl_socket_disable_auto_ack(ctx->sock);
        r = genl_connect(ctx->sock);
        if (r < 0) {
                taskstats_free(ctx);
                return log_warning_errno(EIO, "Failed to open a generic netlink socket: %s", nl_geterror(r));
        }
        /* replies are produced synchronously by the send; never wait long for one that does not come */
        (void) setsockopt(nl_socket_get_fd(ctx->sock), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

        ctx->family = genl_ctrl_resolve(ctx->sock, TASKSTATS_GENL_NAME);
        if (ctx->family < 0) {
                taskstats_free(ctx);
                return log_warning_errno(ENOENT, "No TASKSTATS netlink family (CONFIG_TASKSTATS off?), per-task write bytes unavailable");
        }

        r = read_u64_file(DELAYACCT_PATH, &v);
        if (r < 0)
                log_debug_errno(r, "Failed to read %s, assuming delay accounting is off: %m", DELAYACCT_PATH);
        ctx->delayacct = r >= 0 && v != 0;
        if (enable_delayacct && !ctx->delayacct && r >= 0) {
                r = write_string_file(DELAYACCT_PATH, "1");
                if (r < 0)
                        log_warning_errno(r, "Failed to enable %s, no block I/O delays: %m", DELAYACCT_PATH);
                else {
                        log_info("Enabled kernel.task_delayacct for block I/O delays; it is turned off again at exit");
                        ctx->delayacct = ctx->restore_delayacct = true;
                }
        }
        *ret = ctx;
        return 0;
}

taskstats_ctx *taskstats_free(taskstats_ctx *ctx) {
        if (!ctx)
                return NULL;
        if (ctx->restore_delayacct) {
                int r = write_string_file(DELAYACCT_PATH, "0");
                if (r < 0)
                        log_warning_errno(r, "Failed to turn %s off again: %m", DELAYACCT_PATH);
        }
        nl_socket_free(ctx->sock);
        free(ctx);
        return NULL;
}

bool taskstats_delayacct(const taskstats_ctx *ctx) {
        return ctx && ctx->delayacct;
}
