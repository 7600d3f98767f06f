/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: stderr when run by hand, the journal with structured fields under systemd. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <systemd/sd-journal.h>

static int max_level = LOG_INFO;
static bool use_journal;

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_open(void) {
        /* sd_journal_* "succeeds" with no journald and drops the message, so only trust JOURNAL_STREAM */
        use_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        for (size_t i = LOG_ERR; i < ELEMENTSOF(level_names); i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return (int) i;
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || (size_t) level >= ELEMENTSOF(level_names))
                return "?";
        return level_names[level];
}

static void log_write(int level, const char *const *fields, const char *file, int line,
                      const char *func, const char *msg) {
        if (use_journal) {
                struct iovec iov[16];
                char prio[32], lbuf[32], *m = NULL, *cf = NULL, *cfn = NULL;
                size_t n = 0;

                if (asprintf(&m, "MESSAGE=%s", msg) < 0)
                        return;
                snprintf(prio, sizeof prio, "PRIORITY=%d", level);
                iov[n++] = (struct iovec) { m, strlen(m) };
                iov[n++] = (struct iovec) { prio, strlen(prio) };
                if (file && asprintf(&cf, "CODE_FILE=%s", file) >= 0)
                        iov[n++] = (struct iovec) { cf, strlen(cf) };
                if (file) {
                        snprintf(lbuf, sizeof lbuf, "CODE_LINE=%d", line);
                        iov[n++] = (struct iovec) { lbuf, strlen(lbuf) };
                }
                if (func && asprintf(&cfn, "CODE_FUNC=%s", func) >= 0)
                        iov[n++] = (struct iovec) { cfn, strlen(cfn) };
                for (size_t i = 0; fields && fields[i] && n < ELEMENTSOF(iov); i++)
                        iov[n++] = (struct iovec) { (void *) fields[i], strlen(fields[i]) };
                sd_journal_sendv(iov, (int) n);
                free(m);
                free(cf);
                free(cfn);
                return;
        }
        fprintf(stderr, "wbtuned: %s%s\n", level <= LOG_WARNING ? (level <= LOG_ERR ? "error: " : "warning: ") : "", msg);
}

static int log_vformat(int level, int error, const char *const *fields, const char *file, int line,
                       const char *func, const char *format, va_list ap) __attribute__((format(printf, 7, 0)));
static int log_vformat(int level, int error, const char *const *fields, const char *file, int line,
                       const char *func, const char *format, va_list ap) {
        int saved_errno = errno;
        char *msg = NULL;

        if (error < 0)
                error = -error;
        if (level > max_level)
                goto finish;
        /* make %m print the error we were handed, not whatever errno happens to be */
        errno = error;
        if (vasprintf(&msg, format, ap) >= 0) {
                log_write(level, fields, file, line, func, msg);
                free(msg);
        }
finish:
        errno = saved_errno;
        return -error;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_vformat(level, error, NULL, file, line, func, format, ap);
        va_end(ap);
        return r;
}

int log_struct_internal(int level, const char *const *fields, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_vformat(level, 0, fields, NULL, 0, NULL, format, ap);
        va_end(ap);
        return r;
}
