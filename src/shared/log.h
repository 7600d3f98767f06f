/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: stderr when run by hand, the journal (structured fields) under systemd. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <syslog.h>

/* Decide the sink once at start: journal when JOURNAL_STREAM is set. */
void log_open(void);
void log_set_max_level(int level);
int log_get_max_level(void);
/* Parse "err", "warning", "notice", "info", "debug" into a syslog level; -EINVAL otherwise. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

/* Logs, and returns -abs(error) so callers can write "return log_error_errno(r, ...)".
 * errno is set to abs(error) for the duration so "%m" works. */
int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) __attribute__((format(printf, 6, 7)));

/* Structured entry: extra "KEY=value" journal fields, NULL-terminated, before the format. */
int log_struct_internal(int level, const char *const *fields, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

#define log_full_errno(level, error, ...) log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...)   log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...)   log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_ERR, e, __VA_ARGS__)
#define log_oom_error() log_full_errno(LOG_ERR, ENOMEM, "Out of memory.")
