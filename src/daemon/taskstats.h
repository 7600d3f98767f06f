/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-task I/O bytes and block I/O delay from the kernel's taskstats generic netlink family. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define TASKSTATS_QUERY_MAX 256     /* pids one taskstats_query() call handles at most */

typedef struct task_io {
        int32_t pid;                     /* thread id asked for */
        uint32_t tgid;                   /* ac_pid: the process it belongs to */
        uint16_t version;                /* struct taskstats version the kernel sent */
        char comm[32];
        uint64_t read_bytes;             /* storage I/O caused by the task (cumulative) */
        uint64_t write_bytes;            /* bytes it dirtied for writeback (cumulative) */
        uint64_t cancelled_write_bytes;  /* dirtied then truncated before writeback */
        uint64_t read_char, write_char;  /* bytes through read()/write() */
        uint64_t blkio_count;
        uint64_t blkio_delay_total_ns;   /* 0 unless kernel.task_delayacct=1 */
        bool have_io;                    /* the payload was long enough for the byte counts */
        bool have_delay;                 /* ... for the delay counters */
} task_io;

/* Decode a TASKSTATS_TYPE_STATS payload of any version: copies min(len, what we know) and
 * says which parts were present. Pure. 0, or -EBADMSG if too short to hold even the version. */
int taskstats_decode(const void *payload, size_t len, task_io *out);

typedef struct taskstats_ctx taskstats_ctx;

/* Opens a generic netlink socket and resolves "TASKSTATS". enable_delayacct: set
 * kernel.task_delayacct=1 (restored on free); otherwise it is only read. -EPERM without
 * CAP_NET_ADMIN (found on the first query, see taskstats_query), -ENOENT without the family. */
int taskstats_new(bool enable_delayacct, taskstats_ctx **ret);
taskstats_ctx *taskstats_free(taskstats_ctx *ctx);

/* kernel.task_delayacct as read at taskstats_new() (or set by it). */
bool taskstats_delayacct(const taskstats_ctx *ctx);

/* Query each thread id (per-thread: TGID replies carry no byte counts). Tasks that have exited
 * are skipped. out has room for n entries; *n_out gets how many were filled.
 * 0, or -EPERM (no CAP_NET_ADMIN; logged once) or another -errno if the socket fails. */
int taskstats_query(taskstats_ctx *ctx, const int32_t *pids, size_t n, task_io *out, size_t *n_out);
