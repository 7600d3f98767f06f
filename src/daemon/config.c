/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Configuration: /etc/wbtuned.conf plus drop-ins, parsed with inih through a key table onto defaults. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "log.h"
#include "observe.h"
#include "util.h"

#define streq(a, b) (strcmp((a), (b)) == 0)

/* Upper bound for every size: keeps the policy's products (bandwidth x seconds, x ncpus) far from overflow. */
#define CONFIG_SIZE_MAX (UINT64_C(1) << 50) /* 1024T */
/* Largest config file read: 64 device sections of a few lines are a few kB. */
#define CONFIG_FILE_MAX_BYTES (1024 * 1024)
#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

typedef enum section_kind {
        SECTION_NONE,    /* before the first [section] */
        SECTION_DAEMON,
        SECTION_POLICY,
        SECTION_DEVICE,
        SECTION_BAD,     /* invalid header, already reported: skip its keys */
} section_kind;

typedef struct choice {
        const char *name;
        int value;
} choice;

typedef struct config_key config_key;
/* Parse value into field; on error write a short message (no key, no allowed list) and return -EINVAL/-ERANGE. */
typedef int (*config_parse_fn)(const config_key *k, const char *value, void *field, char *msg, size_t msg_size);
/* Format field as a value the parser accepts. */
typedef void (*config_format_fn)(const config_key *k, const void *field, char *buf, size_t size);

struct config_key {
        section_kind section;
        const char *name;
        config_parse_fn parse;
        config_format_fn format;
        size_t offset;             /* in config, or in device_config for SECTION_DEVICE */
        uint64_t min, max;         /* durations (ms) and sizes (bytes); buffer size for paths */
        bool none_ok;              /* "none", "0" or empty store 0 = unset */
        const choice *choices;     /* NULL-terminated, for choice keys */
};

static const choice log_level_choices[] = {
        { "err", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
        { "info", LOG_INFO }, { "debug", LOG_DEBUG }, {},
};
static const choice mode_choices[] = {
        { "observe", POLICY_MODE_OBSERVE }, { "auto", POLICY_MODE_AUTO }, {},
};
static const choice tristate_choices[] = {
        { "auto", TRISTATE_AUTO }, { "yes", TRISTATE_YES }, { "no", TRISTATE_NO }, {},
};

static bool is_none(const char *v) {
        return streq(v, "") || streq(v, "none") || streq(v, "0");
}

static void format_duration(uint64_t ms, char *buf, size_t size) {
        if (ms == 0)
                snprintf(buf, size, "none");
        else if (ms % 3600000 == 0)
                snprintf(buf, size, "%" PRIu64 "h", ms / 3600000);
        else if (ms % 60000 == 0)
                snprintf(buf, size, "%" PRIu64 "min", ms / 60000);
        else if (ms % 1000 == 0)
                snprintf(buf, size, "%" PRIu64 "s", ms / 1000);
        else
                snprintf(buf, size, "%" PRIu64 "ms", ms);
}

/* Exact, so a dump parses back to the same number: the largest suffix that divides. */
static void format_size(uint64_t bytes, char *buf, size_t size) {
        static const struct { char suffix; unsigned shift; } units[] = {
                { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 },
        };

        if (bytes == 0) {
                snprintf(buf, size, "none");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (bytes % (UINT64_C(1) << units[i].shift) == 0) {
                        snprintf(buf, size, "%" PRIu64 "%c", bytes >> units[i].shift, units[i].suffix);
                        return;
                }
        snprintf(buf, size, "%" PRIu64, bytes);
}

static int parse_duration_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        char got[32];
        uint64_t ms;
        int r;

        if (k->none_ok && is_none(v)) {
                *(uint64_t *) field = 0;
                return 0;
        }
        r = parse_duration_ms(v, &ms);
        if (r == -ERANGE) {
                snprintf(msg, msg_size, "\"%s\" is too large", v);
                return r;
        }
        if (r < 0) {
                snprintf(msg, msg_size, "invalid duration \"%s\"", v);
                return r;
        }
        if (ms < k->min || ms > k->max) {
                format_duration(ms, got, sizeof(got));
                snprintf(msg, msg_size, "%s is out of range", ms == 0 ? "0" : got);
                return -ERANGE;
        }
        *(uint64_t *) field = ms;
        return 0;
}

static void format_duration_key(const config_key *k, const void *field, char *buf, size_t size) {
        format_duration(*(const uint64_t *) field, buf, size);
}

static int parse_size_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        char got[32];
        uint64_t bytes;
        int r;

        if (k->none_ok && is_none(v)) {
                *(uint64_t *) field = 0;
                return 0;
        }
        r = parse_size(v, &bytes);
        if (r == -ERANGE) {
                snprintf(msg, msg_size, "\"%s\" is too large", v);
                return r;
        }
        if (r < 0) {
                snprintf(msg, msg_size, "invalid size \"%s\"", v);
                return r;
        }
        if (bytes < k->min || bytes > k->max) {
                format_size(bytes, got, sizeof(got));
                snprintf(msg, msg_size, "%s is out of range", bytes == 0 ? "0" : got);
                return -ERANGE;
        }
        *(uint64_t *) field = bytes;
        return 0;
}

static void format_size_key(const config_key *k, const void *field, char *buf, size_t size) {
        format_size(*(const uint64_t *) field, buf, size);
}

static int parse_choice_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        for (const choice *ch = k->choices; ch->name; ch++)
                if (streq(v, ch->name)) {
                        *(int *) field = ch->value;
                        return 0;
                }
        snprintf(msg, msg_size, "invalid value \"%s\"", v);
        return -EINVAL;
}

static void format_choice_key(const config_key *k, const void *field, char *buf, size_t size) {
        for (const choice *ch = k->choices; ch->name; ch++)
                if (ch->value == *(const int *) field) {
                        snprintf(buf, size, "%s", ch->name);
                        return;
                }
        snprintf(buf, size, "?");
}

static int parse_bool_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        if (streq(v, "yes"))
                *(bool *) field = true;
        else if (streq(v, "no"))
                *(bool *) field = false;
        else {
                snprintf(msg, msg_size, "invalid value \"%s\"", v);
                return -EINVAL;
        }
        return 0;
}

static int parse_uint_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        uint64_t n;
        int r;

        r = parse_u64(v, &n);
        if (r == -ERANGE) {
                snprintf(msg, msg_size, "\"%s\" is too large", v);
                return r;
        }
        if (r < 0) {
                snprintf(msg, msg_size, "invalid number \"%s\"", v);
                return r;
        }
        if (n < k->min || n > k->max) {
                snprintf(msg, msg_size, "%" PRIu64 " is out of range", n);
                return -ERANGE;
        }
        *(uint64_t *) field = n;
        return 0;
}

static void format_uint_key(const config_key *k, const void *field, char *buf, size_t size) {
        snprintf(buf, size, "%" PRIu64, *(const uint64_t *) field);
}

static void format_bool_key(const config_key *k, const void *field, char *buf, size_t size) {
        snprintf(buf, size, "%s", *(const bool *) field ? "yes" : "no");
}

/* k->max is the size of the char array, so at most max - 1 bytes. */
static int parse_path_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        size_t len = strlen(v);

        if (v[0] != '/') {
                snprintf(msg, msg_size, "\"%s\" is not an absolute path", v);
                return -EINVAL;
        }
        if (len >= k->max) {
                snprintf(msg, msg_size, "path is %zu bytes long", len);
                return -ERANGE;
        }
        memcpy(field, v, len + 1);
        return 0;
}

static void format_path_key(const config_key *k, const void *field, char *buf, size_t size) {
        snprintf(buf, size, "%s", k->none_ok && !*(const char *) field ? "none" : (const char *) field);
}

/* A file the daemon replaces (rename) as it likes: "none", or an absolute path ending in
 * CONFIG_TEXTFILE_SUFFIX. */
static int parse_textfile_key(const config_key *k, const char *v, void *field, char *msg, size_t msg_size) {
        size_t len = strlen(v), suffix = strlen(CONFIG_TEXTFILE_SUFFIX);

        if (is_none(v)) {
                *(char *) field = 0;
                return 0;
        }
        if (len <= suffix || !streq(v + len - suffix, CONFIG_TEXTFILE_SUFFIX) || v[len - suffix - 1] == '/') {
                snprintf(msg, msg_size, "\"%s\" is not a file name ending in %s", v, CONFIG_TEXTFILE_SUFFIX);
                return -EINVAL;
        }
        return parse_path_key(k, v, field, msg, msg_size);
}

#define DURATION(sec, key, type, field, lo, hi, none) \
        { sec, key, parse_duration_key, format_duration_key, offsetof(type, field), lo, hi, none, NULL }
#define SIZE(sec, key, type, field, lo, hi, none) \
        { sec, key, parse_size_key, format_size_key, offsetof(type, field), lo, hi, none, NULL }
#define BOOL(sec, key, type, field) \
        { sec, key, parse_bool_key, format_bool_key, offsetof(type, field), 0, 0, false, NULL }
#define CHOICE(sec, key, type, field, choices) \
        { sec, key, parse_choice_key, format_choice_key, offsetof(type, field), 0, 0, false, choices }

/* The table: section, key -> parser -> field, with ranges. Order is the order of config_dump(). */
static const config_key config_keys[] = {
        DURATION(SECTION_DAEMON, "tick", config, tick_ms, 100, 60000, false),
        { SECTION_DAEMON, "socket", parse_path_key, format_path_key, offsetof(config, socket_path),
          0, sizeof(((config *) NULL)->socket_path), false, NULL },
        CHOICE(SECTION_DAEMON, "log_level", config, log_level, log_level_choices),
        { SECTION_DAEMON, "history_minutes", parse_uint_key, format_uint_key, offsetof(config, history_minutes),
          1, 1440, false, NULL },
        BOOL(SECTION_DAEMON, "attribution", config, attribution),
        BOOL(SECTION_DAEMON, "task_delayacct", config, task_delayacct),
        { SECTION_DAEMON, "metrics_textfile", parse_textfile_key, format_path_key, offsetof(config, metrics_textfile),
          0, sizeof(((config *) NULL)->metrics_textfile), true, NULL },
        DURATION(SECTION_DAEMON, "metrics_interval", config, metrics_interval_ms, 1000, 3600000, false),

        CHOICE(SECTION_POLICY, "mode", config, mode, mode_choices),
        DURATION(SECTION_POLICY, "backlog_seconds", config, backlog_ms, 100, 60000, false),
        SIZE(SECTION_POLICY, "dirty_bytes", config, dirty_bytes, 8 * KIB, CONFIG_SIZE_MAX, true),
        SIZE(SECTION_POLICY, "dirty_background_bytes", config, dirty_background_bytes, 8 * KIB, CONFIG_SIZE_MAX, true),
        SIZE(SECTION_POLICY, "min_dirty_bytes", config, min_dirty_bytes, 8 * KIB, CONFIG_SIZE_MAX, false),
        SIZE(SECTION_POLICY, "max_dirty_bytes", config, max_dirty_bytes, 8 * KIB, CONFIG_SIZE_MAX, true),
        SIZE(SECTION_POLICY, "min_device_bytes", config, min_device_bytes, 256 * KIB, GIB, false),
        SIZE(SECTION_POLICY, "unmeasured_device_bytes", config, unmeasured_device_bytes, 256 * KIB, CONFIG_SIZE_MAX, true),
        DURATION(SECTION_POLICY, "max_age", config, max_age_ms, 1000, 3600000, false),

        { SECTION_DEVICE, "manage", parse_bool_key, format_bool_key, offsetof(device_config, manage),
          0, 0, false, NULL },
        DURATION(SECTION_DEVICE, "backlog_seconds", device_config, backlog_ms, 100, 60000, true),
        SIZE(SECTION_DEVICE, "min_bytes", device_config, min_bytes, 256 * KIB, CONFIG_SIZE_MAX, true),
        SIZE(SECTION_DEVICE, "max_bytes", device_config, max_bytes, 256 * KIB, CONFIG_SIZE_MAX, true),
        CHOICE(SECTION_DEVICE, "strict_limit", device_config, strict_limit, tristate_choices),
};
#define N_KEYS ELEMENTSOF(config_keys)

static const char *section_name(section_kind s) {
        switch (s) {
        case SECTION_DAEMON: return "daemon";
        case SECTION_POLICY: return "policy";
        case SECTION_DEVICE: return "device";
        default:             return "?";
        }
}

/* The "(allowed: …)" text of a key. */
static void key_allowed_text(const config_key *k, char *buf, size_t size) {
        char lo[32], hi[32];
        size_t n = 0;

        buf[0] = 0;
        if (k->choices) {
                for (const choice *ch = k->choices; ch->name && n < size; ch++)
                        n += (size_t) snprintf(buf + n, size - n, "%s%s", n ? ", " : "", ch->name);
                return;
        }
        if (k->parse == parse_bool_key) {
                snprintf(buf, size, "yes, no");
                return;
        }
        if (k->parse == parse_uint_key) {
                snprintf(buf, size, "%" PRIu64 "..%" PRIu64, k->min, k->max);
                return;
        }
        if (k->parse == parse_path_key) {
                snprintf(buf, size, "an absolute path shorter than %" PRIu64 " bytes", k->max);
                return;
        }
        if (k->parse == parse_textfile_key) {
                snprintf(buf, size, "none, or an absolute path ending in %s, shorter than %" PRIu64 " bytes",
                         CONFIG_TEXTFILE_SUFFIX, k->max);
                return;
        }
        if (k->parse == parse_duration_key) {
                format_duration(k->min, lo, sizeof(lo));
                format_duration(k->max, hi, sizeof(hi));
        } else {
                format_size(k->min, lo, sizeof(lo));
                format_size(k->max, hi, sizeof(hi));
        }
        snprintf(buf, size, "%s%s..%s", k->none_ok ? "none or " : "", lo, hi);
}

void config_init(config *c) {
        *c = (config) {
                .tick_ms = 1000,
                .socket_path = CONFIG_DEFAULT_SOCKET,
                .log_level = LOG_INFO,
                .history_minutes = 15,
                .attribution = true,
                .task_delayacct = false,
                .metrics_textfile = "",
                .metrics_interval_ms = 15000,
                .mode = POLICY_MODE_AUTO,
                .backlog_ms = 2000,
                .dirty_bytes = 0,
                .dirty_background_bytes = 0,
                .min_dirty_bytes = 64 * MIB,
                .max_dirty_bytes = 0,
                .min_device_bytes = 4 * MIB,
                .unmeasured_device_bytes = 64 * MIB,
                .max_age_ms = 30000,
        };
}

static void device_config_init(device_config *dc, const char *match, const char *file, unsigned line) {
        *dc = (device_config) {
                .manage = true,
                .strict_limit = TRISTATE_AUTO,
                .line = line,
        };
        snprintf(dc->match, sizeof(dc->match), "%s", match);
        snprintf(dc->file, sizeof(dc->file), "%s", file);
}

/* Where a value was set, for messages about pairs of keys. file < 0: built-in default. */
typedef struct origin {
        int file;
        unsigned line;
} origin;

typedef struct loader {
        config *c;
        FILE *err;
        int result;                 /* first -errno of an unreadable file, else -EINVAL on any error */
        char **files;               /* every file read, for origins */
        size_t n_files;
        origin global_origin[N_KEYS];
        origin device_origin[CONFIG_DEVICE_MAX][N_KEYS];

        /* the file being parsed: its whole text, NUL-terminated, consumed line by line */
        char *text;
        size_t text_size, text_pos;
        const char *file;
        unsigned line;
        unsigned file_errors;
        section_kind section;
        unsigned device;            /* index into c->devices for SECTION_DEVICE */
} loader;

static void loader_error(loader *l, const char *file, unsigned line, const char *format, ...)
        __attribute__((format(printf, 4, 5)));

static void loader_error(loader *l, const char *file, unsigned line, const char *format, ...) {
        char msg[1024];
        va_list ap;

        va_start(ap, format);
        vsnprintf(msg, sizeof(msg), format, ap);
        va_end(ap);

        if (l->err) {
                if (line > 0)
                        fprintf(l->err, "%s:%u: %s\n", file, line, msg);
                else
                        fprintf(l->err, "%s: %s\n", file, msg);
        } else if (line > 0)
                log_error("%s:%u: %s", file, line, msg);
        else
                log_error("%s: %s", file, msg);

        l->file_errors++;
        if (l->result == 0)
                l->result = -EINVAL;
}

static const config_key *find_key(section_kind s, const char *name) {
        for (size_t i = 0; i < N_KEYS; i++)
                if (config_keys[i].section == s && streq(config_keys[i].name, name))
                        return &config_keys[i];
        return NULL;
}

static void section_keys_text(section_kind s, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = 0;
        for (size_t i = 0; i < N_KEYS && n < size; i++)
                if (config_keys[i].section == s)
                        n += (size_t) snprintf(buf + n, size - n, "%s%s", n ? ", " : "", config_keys[i].name);
}

/* "8:0" -> 8, 0. -EINVAL if s is not digits:digits (so a glob), -ERANGE if it is but a number is
 * beyond the kernel's 12:20 bits (however many digits: "99999999999999999999:1" is no glob). */
static int parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor) {
        char majs[32];
        const char *colon = strchr(s, ':');
        uint64_t maj, min;
        size_t n;

        if (!colon)
                return -EINVAL;
        n = (size_t) (colon - s);
        if (n == 0 || strspn(s, "0123456789") != n ||
            colon[1] == 0 || strspn(colon + 1, "0123456789") != strlen(colon + 1))
                return -EINVAL;
        if (n >= sizeof(majs))
                return -ERANGE;
        memcpy(majs, s, n);
        majs[n] = 0;
        if (parse_u64(majs, &maj) < 0 || parse_u64(colon + 1, &min) < 0)
                return -ERANGE;
        if (maj > 0xfff || min > 0xfffff)
                return -ERANGE;
        *ret_major = (unsigned) maj;
        *ret_minor = (unsigned) min;
        return 0;
}

/* A [:class:] name fnmatch() knows (POSIX; glibc refuses others). */
static bool glob_class_known(const char *name, size_t len) {
        static const char *const classes[] = {
                "alnum", "alpha", "blank", "cntrl", "digit", "graph",
                "lower", "print", "punct", "space", "upper", "xdigit",
        };

        for (size_t i = 0; i < ELEMENTSOF(classes); i++)
                if (strlen(classes[i]) == len && strncmp(classes[i], name, len) == 0)
                        return true;
        return false;
}

/* fnmatch() takes broken patterns quietly ("[a-" never matches anything): say what is wrong with
 * a glob, or NULL if it is well formed. Escapes are on (no FNM_NOESCAPE), as in device_config_matches(). */
static const char *glob_problem(const char *g) {
        for (const char *p = g; *p; p++) {
                if (*p == '\\') {
                        if (!p[1])
                                return "'\\' at the end escapes nothing";
                        p++;
                        continue;
                }
                if (*p != '[')
                        continue;
                /* a bracket expression: [!...] or [^...], a ']' first is a member, then up to ']' */
                const char *q = p + 1;
                char prev = 0;

                if (*q == '!' || *q == '^')
                        q++;
                if (*q == ']') {
                        prev = ']';
                        q++;
                }
                for (; *q && *q != ']'; q++) {
                        if (q[0] == '[' && (q[1] == ':' || q[1] == '=' || q[1] == '.')) {
                                char kind = q[1];
                                const char *end = q + 2;

                                while (*end && !(end[0] == kind && end[1] == ']'))
                                        end++;
                                if (!*end)
                                        return "'[' without a closing ']'";
                                if (kind == ':' && !glob_class_known(q + 2, (size_t) (end - q - 2)))
                                        return "unknown character class";
                                q = end + 1;
                                prev = 0;
                                continue;
                        }
                        if (*q == '\\' && q[1]) {
                                prev = *++q;
                                continue;
                        }
                        if (*q == '-' && prev && q[1] && q[1] != ']') {
                                const char *hi = q + 1;

                                if (*hi == '\\' && hi[1])
                                        hi++;
                                if ((unsigned char) *hi < (unsigned char) prev)
                                        return "range goes backwards";
                                q = hi;
                                prev = 0;
                                continue;
                        }
                        prev = *q;
                }
                if (!*q)
                        return "'[' without a closing ']'";
                p = q;
        }
        return NULL;
}

#define DEVICE_ALLOWED "device \"<glob>\", device \"MAJ:MIN\" or device \"<trait>\" with trait one of rotational, removable, usb, nfs, fuse"

/* A [section] header line; inner is the text between the brackets. */
static void loader_section(loader *l, char *inner) {
        const char *match, *problem;
        char *end;
        unsigned maj, min;
        size_t len;

        while (*inner == ' ' || *inner == '\t')
                inner++;
        len = strlen(inner);
        while (len > 0 && (inner[len - 1] == ' ' || inner[len - 1] == '\t'))
                inner[--len] = 0;

        l->section = SECTION_BAD;
        if (streq(inner, "daemon")) {
                l->section = SECTION_DAEMON;
                return;
        }
        if (streq(inner, "policy")) {
                l->section = SECTION_POLICY;
                return;
        }
        match = startswith(inner, "device");
        if (!match || (*match && *match != ' ' && *match != '\t' && *match != '"')) {
                loader_error(l, l->file, l->line,
                             "[%s]: unknown section (allowed: daemon, policy, device \"<match>\")", inner);
                return;
        }
        while (*match == ' ' || *match == '\t')
                match++;
        if (*match == 0) {
                loader_error(l, l->file, l->line, "[%s]: missing device match (allowed: %s)", inner, DEVICE_ALLOWED);
                return;
        }
        len = strlen(match);
        if (match[0] != '"' || len < 2 || match[len - 1] != '"') {
                loader_error(l, l->file, l->line, "[%s]: the device match must be in double quotes (allowed: %s)",
                             inner, DEVICE_ALLOWED);
                return;
        }
        /* strip the quotes in place */
        end = (char *) match + len - 1;
        *end = 0;
        match++;
        if (*match == 0 || strchr(match, '"') || strchr(match, '/')) {
                loader_error(l, l->file, l->line, "[device \"%s\"]: invalid device match (allowed: %s)",
                             match, DEVICE_ALLOWED);
                return;
        }
        if (strlen(match) >= sizeof(l->c->devices[0].match)) {
                loader_error(l, l->file, l->line, "[device \"%s\"]: device match too long (allowed: up to %zu bytes)",
                             match, sizeof(l->c->devices[0].match) - 1);
                return;
        }
        if (parse_devnum(match, &maj, &min) == -ERANGE) {
                loader_error(l, l->file, l->line, "[device \"%s\"]: invalid device number (allowed: 0..4095:0..1048575)",
                             match);
                return;
        }
        problem = trait_from_string(match) > 0 ? NULL : glob_problem(match);
        if (problem) {
                loader_error(l, l->file, l->line, "[device \"%s\"]: invalid glob: %s (allowed: %s)",
                             match, problem, DEVICE_ALLOWED);
                return;
        }

        /* The same match again (this file or a later one): merge into the same entry, keeping its place. */
        for (unsigned i = 0; i < l->c->n_devices; i++)
                if (streq(l->c->devices[i].match, match)) {
                        l->section = SECTION_DEVICE;
                        l->device = i;
                        return;
                }
        if (l->c->n_devices >= CONFIG_DEVICE_MAX) {
                loader_error(l, l->file, l->line, "[device \"%s\"]: too many device sections (allowed: up to %d)",
                             match, CONFIG_DEVICE_MAX);
                return;
        }
        l->device = l->c->n_devices++;
        device_config_init(&l->c->devices[l->device], match, l->file, l->line);
        for (size_t k = 0; k < N_KEYS; k++)
                l->device_origin[l->device][k] = (origin) { .file = -1 };
        l->section = SECTION_DEVICE;
}

/* inih reader: one physical line per call, so l->line is exact while inih calls the handler for it.
 * Comments, section headers and broken lines are handled here and handed to inih as empty lines;
 * inih sees only left-trimmed "key = value" lines (no leading blanks, so no multi-line values). */
static char *loader_read_line(char *str, int num, void *stream) {
        loader *l = stream;
        char *line, *s, *nl;
        size_t n, len;

        if (l->text_pos >= l->text_size)
                return NULL;
        line = l->text + l->text_pos;
        nl = memchr(line, '\n', l->text_size - l->text_pos);
        n = nl ? (size_t) (nl - line) : l->text_size - l->text_pos;
        line[n] = 0;                   /* the '\n', or the terminating NUL */
        l->text_pos += n + 1;
        l->line++;
        str[0] = 0;

        s = line;
        if (l->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) /* UTF-8 BOM */
                s += 3;
        if (memchr(line, 0, n)) {
                loader_error(l, l->file, l->line, "syntax error: NUL byte in line");
                return str;
        }
        while (*s == ' ' || *s == '\t')
                s++;
        len = strlen(s);
        while (len > 0 && strchr(" \t\r\n", s[len - 1]))
                s[--len] = 0;

        if (len == 0 || s[0] == '#' || s[0] == ';')
                return str;
        if (s[0] == '[') {
                if (s[len - 1] != ']') {
                        if (strchr(s, ']'))
                                loader_error(l, l->file, l->line,
                                             "syntax error: text after ']' (comments go on their own line)");
                        else
                                loader_error(l, l->file, l->line, "syntax error: section header without closing ']'");
                        l->section = SECTION_BAD;
                        return str;
                }
                s[len - 1] = 0;
                loader_section(l, s + 1);
                return str;
        }
        if (s[0] == '=') {
                loader_error(l, l->file, l->line, "syntax error: missing key before '='");
                return str;
        }
        if (!strchr(s, '=')) {
                loader_error(l, l->file, l->line, "syntax error: expected \"key = value\", \"[section]\" or a comment");
                return str;
        }
        if (len + 3 > (size_t) num) {
                loader_error(l, l->file, l->line, "syntax error: line too long (allowed: up to %d characters)", num - 3);
                return str;
        }
        memcpy(str, s, len + 1);
        return str;
}

static origin *loader_origin(loader *l, const config_key *k) {
        size_t i = (size_t) (k - config_keys);
        return k->section == SECTION_DEVICE ? &l->device_origin[l->device][i] : &l->global_origin[i];
}

/* inih handler; section is ignored, loader_read_line() tracks it. Always "succeeds": errors are ours. */
static int loader_handler(void *user, const char *section, const char *name, const char *value) {
        loader *l = user;
        const config_key *k;
        char msg[512], allowed[512];
        void *base;

        if (l->section == SECTION_BAD)
                return 1;
        if (l->section == SECTION_NONE) {
                loader_error(l, l->file, l->line,
                             "%s: key outside of a section (allowed: [daemon], [policy], [device \"<match>\"])", name);
                return 1;
        }
        k = find_key(l->section, name);
        if (!k) {
                section_keys_text(l->section, allowed, sizeof(allowed));
                loader_error(l, l->file, l->line, "%s: unknown key in [%s] (allowed: %s)",
                             name, section_name(l->section), allowed);
                return 1;
        }
        base = k->section == SECTION_DEVICE ? (void *) &l->c->devices[l->device] : (void *) l->c;
        msg[0] = 0;
        if (k->parse(k, value, (char *) base + k->offset, msg, sizeof(msg)) < 0) {
                key_allowed_text(k, allowed, sizeof(allowed));
                loader_error(l, l->file, l->line, "%s: %s (allowed: %s)", name, msg, allowed);
                return 1;
        }
        *loader_origin(l, k) = (origin) { .file = (int) l->n_files - 1, .line = l->line };
        return 1;
}

static int loader_add_file_name(loader *l, const char *path) {
        char **f = realloc(l->files, (l->n_files + 1) * sizeof(char *));

        if (!f)
                return -ENOMEM;
        l->files = f;
        l->files[l->n_files] = strdup(path);
        if (!l->files[l->n_files])
                return -ENOMEM;
        l->n_files++;
        return 0;
}

/* Parse one file's text (text[size] is NUL, text is modified) onto l->c; errors are reported. */
static int loader_parse_text(loader *l, const char *name, char *text, size_t size) {
        int r;

        r = loader_add_file_name(l, name);
        if (r < 0)
                return r;
        l->text = text;
        l->text_size = size;
        l->text_pos = 0;
        l->file = l->files[l->n_files - 1];
        l->line = 0;
        l->file_errors = 0;
        l->section = SECTION_NONE;

        r = ini_parse_stream(loader_read_line, l, loader_handler, l);
        l->text = NULL;
        if (r == -2)
                return -ENOMEM;
        if (r != 0 && l->file_errors == 0) /* inih found something our reader let through */
                loader_error(l, name, (unsigned) MAX(r, 0), "syntax error");
        return 0;
}

static const char *file_type_name(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFCHR: return "character device";
        case S_IFBLK: return "block device";
        case S_IFIFO: return "FIFO";
        case S_IFSOCK: return "socket";
        default: return "special file";
        }
}

/* Parse one file onto l->c. 0, -ENOENT (reported by caller if it matters), or another -errno (reported
 * by the caller). Only a regular file of at most CONFIG_FILE_MAX_BYTES is read, and never more than
 * that: /dev/zero or a FIFO given as the file must not hang the daemon or --check-config. */
static int loader_parse_file(loader *l, const char *path) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        char size_text[32];
        struct stat st;
        size_t size = 0, allocated;

        /* O_NONBLOCK: opening a FIFO with no writer would block */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        format_size(CONFIG_FILE_MAX_BYTES, size_text, sizeof(size_text));
        if (!S_ISREG(st.st_mode)) {
                loader_error(l, path, 0, "cannot read: a %s, not a regular file (allowed: a regular file)",
                             file_type_name(st.st_mode));
                return 0;
        }
        if (st.st_size > CONFIG_FILE_MAX_BYTES) {
                loader_error(l, path, 0, "cannot read: %jd bytes is too large (allowed: up to %s)",
                             (intmax_t) st.st_size, size_text);
                return 0;
        }

        /* as large as fstat() says and one byte more, to notice a file that grew meanwhile (a 1 MiB
         * buffer for every file would raise malloc's mmap threshold for the daemon's whole life) */
        allocated = (size_t) st.st_size + 2;
        text = malloc(allocated);
        if (!text)
                return -ENOMEM;
        while (size <= CONFIG_FILE_MAX_BYTES) {
                ssize_t n;

                if (size + 1 >= allocated) {
                        char *t;

                        allocated = MIN(allocated * 2, (size_t) CONFIG_FILE_MAX_BYTES + 2);
                        t = realloc(text, allocated);
                        if (!t)
                                return -ENOMEM;
                        text = t;
                }
                n = read(fd, text + size, allocated - 1 - size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        if (size > CONFIG_FILE_MAX_BYTES) {
                loader_error(l, path, 0, "cannot read: more than %s (allowed: up to %s)", size_text, size_text);
                return 0;
        }
        text[size] = 0;
        return loader_parse_text(l, path, text, size);
}

static void loader_report_errno(loader *l, const char *path, int r) {
        loader_error(l, path, 0, "cannot read: %s", strerror(-r));
        if (l->result == -EINVAL || l->result == 0)
                l->result = r;
}

static int dropin_filter(const struct dirent *de) {
        size_t len = strlen(de->d_name);

        return de->d_name[0] != '.' && len > 5 && streq(de->d_name + len - 5, ".conf");
}

static int dropin_compare(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name); /* bytewise, not locale */
}

static void loader_parse_dropins(loader *l, const char *path) {
        _cleanup_free_ char *dir = NULL;
        struct dirent **entries = NULL;
        int n;

        if (asprintf(&dir, "%s.d", path) < 0) {
                l->result = -ENOMEM;
                return;
        }
        n = scandir(dir, &entries, dropin_filter, dropin_compare);
        if (n < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        loader_report_errno(l, dir, -errno);
                return;
        }
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;
                int r;

                if (asprintf(&p, "%s/%s", dir, entries[i]->d_name) < 0) {
                        l->result = -ENOMEM;
                        break;
                }
                /* Only regular files: a symlink to /dev/null masks a drop-in, a directory is ignored. */
                if (stat(p, &st) == 0 && !S_ISREG(st.st_mode))
                        continue;
                r = loader_parse_file(l, p);
                if (r < 0)
                        loader_report_errno(l, p, r);
        }
        for (int i = 0; i < n; i++)
                free(entries[i]);
        free(entries);
}

static void origin_text(const loader *l, origin o, char *buf, size_t size) {
        if (o.file < 0)
                snprintf(buf, size, "default");
        else
                snprintf(buf, size, "set at %s:%u", l->files[o.file], o.line);
}

/* A pair rule broken: report at the later of the two settings, naming where the other came from. */
static void loader_pair_error(loader *l, origin *oa, const char *a, uint64_t va,
                              origin *ob, const char *b, uint64_t vb, const char *rule) {
        bool a_later = oa->file > ob->file || (oa->file == ob->file && oa->line > ob->line);
        origin *late = a_later ? oa : ob, *other = a_later ? ob : oa;
        char sa[32], sb[32], where[512];

        format_size(va, sa, sizeof(sa));
        format_size(vb, sb, sizeof(sb));
        origin_text(l, *other, where, sizeof(where));
        if (late->file < 0) /* both defaults: the defaults are consistent, so never */
                return;
        loader_error(l, l->files[late->file], late->line, "%s: %s = %s, %s = %s (%s) (allowed: %s %s)",
                     a_later ? a : b, a, sa, b, sb, where, a, rule);
}

static origin *global_origin(loader *l, const char *name) {
        return &l->global_origin[find_key(SECTION_POLICY, name) - config_keys];
}

/* Rules between keys, checked on the merged result so a drop-in can fix what an earlier file set. */
static void loader_check(loader *l) {
        config *c = l->c;
        size_t kmin = (size_t) (find_key(SECTION_DEVICE, "min_bytes") - config_keys);
        size_t kmax = (size_t) (find_key(SECTION_DEVICE, "max_bytes") - config_keys);

        if (c->dirty_bytes > 0 && c->dirty_background_bytes > 0 && c->dirty_background_bytes >= c->dirty_bytes)
                loader_pair_error(l, global_origin(l, "dirty_background_bytes"), "dirty_background_bytes",
                                  c->dirty_background_bytes, global_origin(l, "dirty_bytes"), "dirty_bytes",
                                  c->dirty_bytes, "< dirty_bytes");
        if (c->max_dirty_bytes > 0 && c->min_dirty_bytes > c->max_dirty_bytes)
                loader_pair_error(l, global_origin(l, "min_dirty_bytes"), "min_dirty_bytes", c->min_dirty_bytes,
                                  global_origin(l, "max_dirty_bytes"), "max_dirty_bytes", c->max_dirty_bytes,
                                  "<= max_dirty_bytes");
        for (unsigned i = 0; i < c->n_devices; i++) {
                device_config *dc = &c->devices[i];

                if (dc->min_bytes > 0 && dc->max_bytes > 0 && dc->min_bytes > dc->max_bytes)
                        loader_pair_error(l, &l->device_origin[i][kmin], "min_bytes", dc->min_bytes,
                                          &l->device_origin[i][kmax], "max_bytes", dc->max_bytes,
                                          "<= max_bytes");
        }
}

static loader *loader_new(config *tmp, FILE *err) {
        loader *l = calloc(1, sizeof(*l));

        if (!l)
                return NULL;
        config_init(tmp);
        l->c = tmp;
        l->err = err;
        for (size_t k = 0; k < N_KEYS; k++)
                l->global_origin[k] = (origin) { .file = -1 };
        return l;
}

/* Check the merged result, free the loader; on success copy it to *c. */
static int loader_finish(loader *l, const config *tmp, config *c) {
        int r;

        loader_check(l);
        r = l->result;
        for (size_t i = 0; i < l->n_files; i++)
                free(l->files[i]);
        free(l->files);
        free(l);
        if (r < 0)
                return r;
        *c = *tmp;
        return 0;
}

int config_load_full(const char *path, unsigned flags, config *c, FILE *err) {
        _cleanup_free_ config *tmp = NULL;
        loader *l;
        int r;

        tmp = malloc(sizeof(*tmp));
        if (!tmp)
                return -ENOMEM;
        l = loader_new(tmp, err);
        if (!l)
                return -ENOMEM;

        r = loader_parse_file(l, path);
        if (r == -ENOENT && (flags & CONFIG_LOAD_MISSING_OK))
                r = 0;
        if (r < 0)
                loader_report_errno(l, path, r);
        loader_parse_dropins(l, path);
        return loader_finish(l, tmp, c);
}

int config_parse_text(const char *name, const char *text, size_t size, config *c, FILE *err) {
        _cleanup_free_ config *tmp = NULL;
        _cleanup_free_ char *copy = NULL;
        loader *l;
        int r;

        tmp = malloc(sizeof(*tmp));
        copy = malloc(size + 1);
        if (!tmp || !copy)
                return -ENOMEM;
        memcpy(copy, text, size);
        copy[size] = 0;
        l = loader_new(tmp, err);
        if (!l)
                return -ENOMEM;
        r = loader_parse_text(l, name, copy, size);
        if (r < 0)
                loader_report_errno(l, name, r);
        return loader_finish(l, tmp, c);
}

int config_load(const char *path, config *c, FILE *err) {
        return config_load_full(path, streq(path, CONFIG_DEFAULT_PATH) ? CONFIG_LOAD_MISSING_OK : 0, c, err);
}

static void dump_section(const void *base, section_kind s, FILE *out) {
        char value[256];

        for (size_t i = 0; i < N_KEYS; i++) {
                const config_key *k = &config_keys[i];

                if (k->section != s)
                        continue;
                k->format(k, (const char *) base + k->offset, value, sizeof(value));
                fprintf(out, "%s = %s\n", k->name, value);
        }
}

void config_dump(const config *c, FILE *out) {
        fprintf(out, "# wbtuned configuration as loaded\n\n[daemon]\n");
        dump_section(c, SECTION_DAEMON, out);
        fprintf(out, "\n[policy]\n");
        dump_section(c, SECTION_POLICY, out);
        for (unsigned i = 0; i < c->n_devices; i++) {
                const device_config *dc = &c->devices[i];

                fprintf(out, "\n# from %s:%u\n[device \"%s\"]\n", dc->file, dc->line, dc->match);
                dump_section(dc, SECTION_DEVICE, out);
        }
}

bool device_config_matches(const device_config *dc, const char *name, const char *alias,
                           unsigned major, unsigned minor, unsigned traits) {
        char devnum[32];
        unsigned maj, min;
        int t;

        t = trait_from_string(dc->match);
        if (t > 0)
                return (traits & (unsigned) t) != 0;
        if (parse_devnum(dc->match, &maj, &min) == 0)
                return maj == major && min == minor;
        if (name && fnmatch(dc->match, name, 0) == 0)
                return true;
        if (alias && alias[0] && fnmatch(dc->match, alias, 0) == 0)
                return true;
        snprintf(devnum, sizeof(devnum), "%u:%u", major, minor);
        return fnmatch(dc->match, devnum, 0) == 0;
}

const device_config *config_find_device(const config *c, const char *name, const char *alias,
                                        unsigned major, unsigned minor, unsigned traits) {
        for (unsigned i = c->n_devices; i > 0; i--)
                if (device_config_matches(&c->devices[i - 1], name, alias, major, minor, traits))
                        return &c->devices[i - 1];
        return NULL;
}
