/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's human output: replies checked against protocol.h, read through its names, printed escaped. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl-table.h"
#include "ctl-wait.h"
#include "escape.h"
#include "util.h"

/* --- checking a reply -------------------------------------------------------------------- */

int ctl_check_reply(json_object *reply, protocol_kind kind, json_object **ret_result, char *error, size_t size) {
        json_object *v, *result;
        char what[384];
        int r;

        if (!json_object_is_type(reply, json_type_object)) {
                snprintf(error, size, "the reply is not a JSON object");
                return -EBADMSG;
        }
        v = proto_get(reply, PF_REPLY_VERSION);
        if (!v) {
                snprintf(error, size, "the reply has no protocol \"%s\" (a wbtuned older than this wbtunectl?)",
                         protocol_name(PF_REPLY_VERSION));
                return -EPROTONOSUPPORT;
        }
        if (proto_value_u64(v) != PROTOCOL_VERSION || !json_object_is_type(v, json_type_int)) {
                snprintf(error, size, "wbtuned speaks protocol version %.20s, this wbtunectl version %d: use the "
                         "wbtunectl that came with the running wbtuned", oom_check(json_object_to_json_string(v)),
                         PROTOCOL_VERSION);
                return -EPROTONOSUPPORT;
        }
        /* the envelope itself: ok, and error/errno or the result */
        r = protocol_check(reply, PK_REPLY, false, what, sizeof what);
        if (r < 0) {
                snprintf(error, size, "%s", what);
                return r;
        }
        if (!proto_bool(reply, PF_REPLY_OK)) {
                if (!json_object_is_type(proto_get(reply, PF_REPLY_ERROR), json_type_string) ||
                    !json_object_is_type(proto_get(reply, PF_REPLY_ERRNO), json_type_string)) {
                        snprintf(error, size, "the reply says it failed, without an \"%s\" and \"%s\" string",
                                 protocol_name(PF_REPLY_ERROR), protocol_name(PF_REPLY_ERRNO));
                        return -EBADMSG;
                }
                return 1;
        }
        result = proto_get(reply, PF_REPLY_RESULT);
        if (!result) {
                snprintf(error, size, "the reply has no \"%s\"", protocol_name(PF_REPLY_RESULT));
                return -EBADMSG;
        }
        if (kind != PK_NONE) {
                r = protocol_check(result, kind, false, what, sizeof what);
                if (r < 0) {
                        snprintf(error, size, "%s.%s", protocol_name(PF_REPLY_RESULT), what);
                        return r;
                }
        }
        *ret_result = result;
        return 0;
}

/* --- values ------------------------------------------------------------------------------ */

/* "sda", or "dm-0 (vg0-root)" when the device has a device-mapper name. */
static const char *name_str(char *buf, size_t size, json_object *d) {
        const char *alias = proto_str(d, PF_DEVICE_ALIAS);

        if (!alias[0])
                return proto_str(d, PF_DEVICE_NAME);
        snprintf(buf, size, "%s (%s)", proto_str(d, PF_DEVICE_NAME), alias);
        return buf;
}

/* "12.0M"; bytes < 1024 as plain digits. */
static const char *bytes_str(char *buf, size_t size, uint64_t bytes) {
        return format_bytes(buf, size, bytes);
}

static const char *rate_str(char *buf, size_t size, uint64_t bytes_per_s) {
        char b[32];
        snprintf(buf, size, "%s/s", format_bytes(b, sizeof b, bytes_per_s));
        return buf;
}

/* "12.3s", "4min 5s", "2h 3min", "1d 2h". */
static const char *duration_str(char *buf, size_t size, double s) {
        uint64_t t;

        /* a number from the reply: clamped before it becomes an integer (1e15 s is 31 million years) */
        if (!(s >= 0.0))
                s = 0.0;
        s = MIN(s, 1e15);
        t = (uint64_t) s;
        if (s < 60.0)
                snprintf(buf, size, "%.1fs", s);
        else if (t < 3600)
                snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", t / 60, t % 60);
        else if (t < 86400)
                snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", t / 3600, t % 3600 / 60);
        else
                snprintf(buf, size, "%" PRIu64 "d %" PRIu64 "h", t / 86400, t % 86400 / 3600);
        return buf;
}

const char *ctl_format_duration(char *buf, size_t size, double s) {
        return duration_str(buf, size, s);
}

/* Parts per million of the whole as a percentage without trailing zeros: 125000 -> "12.5%". */
static const char *ppm_str(char *buf, size_t size, uint64_t ppm) {
        snprintf(buf, size, "%.4f", (double) ppm / 10000.0);
        char *dot = strchr(buf, '.');
        if (dot) {
                char *end = buf + strlen(buf) - 1;
                while (end > dot && *end == '0')
                        *end-- = '\0';
                if (end == dot)
                        *end = '\0';
        }
        strncat(buf, "%", size - strlen(buf) - 1);
        return buf;
}

/* A value in one of the protocol's units: "16M", "5.00s", "20%", "12.5%", "1". */
static const char *unit_value_str(char *buf, size_t size, const char *unit, uint64_t v) {
        if (strcmp(unit, PROTOCOL_UNIT_BYTES) == 0)
                return bytes_str(buf, size, v);
        if (strcmp(unit, PROTOCOL_UNIT_CENTISECS) == 0)
                snprintf(buf, size, "%" PRIu64 ".%02" PRIu64 "s", v / 100, v % 100);
        else if (strcmp(unit, PROTOCOL_UNIT_PERCENT) == 0)
                snprintf(buf, size, "%" PRIu64 "%%", v);
        else if (strcmp(unit, PROTOCOL_UNIT_PPM) == 0)
                return ppm_str(buf, size, v);
        else
                snprintf(buf, size, "%" PRIu64, v);
        return buf;
}

/* Joined array of strings; "" if none. */
static const char *join_array(char *buf, size_t size, json_object *a, const char *sep) {
        buf[0] = '\0';
        if (!json_object_is_type(a, json_type_array))
                return buf;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                if (i > 0)
                        strncat(buf, sep, size - strlen(buf) - 1);
                strncat(buf, proto_value_str(json_object_array_get_idx(a, i)), size - strlen(buf) - 1);
        }
        return buf;
}

/* --- tuning: who owns each knob, its original, current and desired value, and why -------------- */

/* A knob object's value in its unit; "-" when null. */
static const char *knob_value_str(char *buf, size_t size, json_object *knob, protocol_field f) {
        if (!proto_has(knob, f))
                return "-";
        return unit_value_str(buf, size, proto_str(knob, PF_KNOB_UNIT), proto_u64(knob, f));
}

/* "100% (max_ratio_fine)": the saved value, and the file when it is not the knob's own. */
static const char *original_str(char *buf, size_t size, json_object *knob) {
        json_object *o = proto_get(knob, PF_KNOB_ORIGINAL);
        const char *file = proto_str(o, PF_ORIGINAL_FILE);
        char v[32];

        if (!o)
                return "-";
        unit_value_str(v, sizeof v, proto_str(o, PF_ORIGINAL_UNIT), proto_u64(o, PF_ORIGINAL_VALUE));
        if (*file && strcmp(file, proto_str(knob, PF_KNOB_KNOB)) != 0)
                snprintf(buf, size, "%s (%s)", v, file);
        else
                snprintf(buf, size, "%s", v);
        return buf;
}

int ctl_format_tuning(json_object *tuning, FILE *f) {
        static const char *const headers[] = { "KNOB", "STATE", "ORIGINAL", "CURRENT", "DESIRED", "REASON" };
        static const bool right[] = { false, false, true, true, true, false };
        ctl_table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        json_object *knobs = proto_get(tuning, PF_TUNING_KNOBS);
        int r = 0;

        if (!json_object_is_type(knobs, json_type_array))
                return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(knobs); i++) {
                json_object *k = json_object_array_get_idx(knobs, i);
                char orig[96], cur[32], want_buf[32], policy[32], desired[80], reason[CTL_VALUE_MAX];
                const char *clamp = proto_str(k, PF_KNOB_CLAMP);
                const char *want = knob_value_str(want_buf, sizeof want_buf, k, PF_KNOB_DESIRED);

                if (proto_has(k, PF_KNOB_POLICY) &&
                    (!proto_has(k, PF_KNOB_DESIRED) || proto_u64(k, PF_KNOB_POLICY) != proto_u64(k, PF_KNOB_DESIRED)))
                        snprintf(desired, sizeof desired, "%s (policy %s)", want,
                                 knob_value_str(policy, sizeof policy, k, PF_KNOB_POLICY));
                else
                        snprintf(desired, sizeof desired, "%s", want);
                snprintf(reason, sizeof reason, "%s%s%s%s", proto_str(k, PF_KNOB_REASON), *clamp ? " [guard: " : "",
                         clamp, *clamp ? "]" : "");
                char *row[] = {
                        (char *) proto_str(k, PF_KNOB_KNOB),
                        (char *) proto_str(k, PF_KNOB_STATE),
                        (char *) original_str(orig, sizeof orig, k),
                        (char *) knob_value_str(cur, sizeof cur, k, PF_KNOB_CURRENT),
                        desired,
                        reason,
                };
                const char *state = proto_str(k, PF_KNOB_STATE);
                /* a knob set by hand or that the kernel refuses: the daemon cannot do its work there */
                bool warn = strcmp(state, PROTOCOL_STATE_OVERRIDE) == 0 || strcmp(state, PROTOCOL_STATE_UNWRITABLE) == 0;

                r = ctl_table_add_row_warn(&t, row, warn ? UINT32_C(1) << 1 : 0);
                if (r < 0)
                        break;
        }
        r = ctl_table_finish(&t, r, "No knob.\n", f);
        for (size_t i = 0; r == 0 && i < json_object_array_length(knobs); i++) {
                json_object *k = json_object_array_get_idx(knobs, i);
                _cleanup_free_ char *name = NULL, *note = NULL;

                if (!*proto_str(k, PF_KNOB_NOTE))
                        continue;
                name = escape_text_alloc(proto_str(k, PF_KNOB_KNOB));
                note = escape_text_alloc(proto_str(k, PF_KNOB_NOTE));
                fprintf(f, "  %s: %s\n", name, note);
        }
        return r;
}

/* --- status ------------------------------------------------------------------------------ */

/* The kernel uses *_bytes when non-zero, else *_ratio (of dirtyable memory); writing one zeroes the other. */
static void add_limit(ctl_kv_list *l, const char *key, json_object *knobs, protocol_field bytes_field,
                      protocol_field ratio_field) {
        char b[32];
        uint64_t bytes = proto_u64(knobs, bytes_field);

        if (bytes > 0)
                ctl_kv_add(l, key, "%s (vm.%s; vm.%s unused)", bytes_str(b, sizeof b, bytes), protocol_name(bytes_field),
                       protocol_name(ratio_field));
        else
                ctl_kv_add(l, key, "%" PRIu64 "%% of dirtyable memory (vm.%s; vm.%s unset)",
                       proto_u64(knobs, ratio_field), protocol_name(ratio_field), protocol_name(bytes_field));
}

static void add_centisecs(ctl_kv_list *l, const char *key, const char *what, json_object *knobs, protocol_field field) {
        char v[32];
        uint64_t cs = proto_u64(knobs, field);

        if (cs == 0 && field == PF_VM_KNOBS_DIRTY_WRITEBACK_CENTISECS)
                ctl_kv_add(l, key, "disabled (vm.%s=0)", protocol_name(field));
        else
                ctl_kv_add(l, key, "%s %s (vm.%s=%" PRIu64 ")", what,
                       unit_value_str(v, sizeof v, PROTOCOL_UNIT_CENTISECS, cs), protocol_name(field), cs);
}

static const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

int ctl_format_status(json_object *result, FILE *f) {
        json_object *global = proto_get(result, PF_STATUS_GLOBAL), *knobs = proto_get(global, PF_GLOBAL_KNOBS);
        json_object *attr = proto_get(result, PF_STATUS_ATTRIBUTION), *hist = proto_get(result, PF_STATUS_HISTORY);
        json_object *tuning = proto_get(result, PF_STATUS_TUNING), *writes = proto_get(result, PF_STATUS_WRITES);
        json_object *support = proto_get(result, PF_STATUS_KERNEL_SUPPORT);
        char a[32], b[32], c[32];
        _cleanup_free_ ctl_kv_list *l = calloc(1, sizeof *l);
        const char *mode = proto_str(result, PF_STATUS_MODE), *root = proto_str(result, PF_STATUS_ROOT);

        if (!l)
                return -ENOMEM;
        if (!json_object_is_type(global, json_type_object))
                return -EBADMSG;

        ctl_kv_add(l, "Version", "%s (protocol %d)", proto_str(result, PF_STATUS_PACKAGE_VERSION), PROTOCOL_VERSION);
        ctl_kv_add(l, "PID", "%" PRIu64, proto_u64(result, PF_STATUS_PID));
        ctl_kv_add(l, "Uptime", "%s", duration_str(a, sizeof a, proto_double(result, PF_STATUS_UPTIME_S)));
        bool writing = writes && proto_bool(writes, PF_WRITES_ENABLED);
        const char *limited = writes ? proto_str(writes, PF_WRITES_LIMITED_TO) : "";

        ctl_kv_add(l, "Mode", "%s%s%s%s%s", mode, proto_bool(result, PF_STATUS_DRY_RUN) && !strstr(mode, "dry") ? " (dry run)" : "",
               !*limited ? "" : writing ? ", on this kernel: " : " (on this kernel, auto would write ", limited,
               *limited && !writing ? ")" : "");
        ctl_kv_add(l, "Tick", "%" PRIu64 " ms", proto_u64(result, PF_STATUS_TICK_MS));
        ctl_kv_add(l, "Ticks", "%" PRIu64, proto_u64(result, PF_STATUS_TICKS));
        ctl_kv_add(l, "Stats source", "%s", proto_str(result, PF_STATUS_STATS_SOURCE));
        if (*root && strcmp(root, "/") != 0)
                ctl_kv_add(l, "Root", "%s (not the live system)", root);
        ctl_kv_add(l, "Devices", "%" PRIu64, proto_u64(result, PF_STATUS_N_DEVICES));
        ctl_kv_add(l, "Config", "%s", proto_str(result, PF_STATUS_CONFIG));

        ctl_kv_add(l, "Dirty", "%s", bytes_str(a, sizeof a, proto_u64(global, PF_GLOBAL_DIRTY_BYTES)));
        ctl_kv_add(l, "Writeback", "%s", bytes_str(a, sizeof a, proto_u64(global, PF_GLOBAL_WRITEBACK_BYTES)));
        ctl_kv_add(l, "Thresholds", "%s throttle, %s background",
               bytes_str(a, sizeof a, proto_u64(global, PF_GLOBAL_DIRTY_THRESH_BYTES)),
               bytes_str(b, sizeof b, proto_u64(global, PF_GLOBAL_BACKGROUND_THRESH_BYTES)));
        ctl_kv_add(l, "Rates", "%s dirtied, %s written",
               rate_str(a, sizeof a, proto_u64(global, PF_GLOBAL_DIRTY_RATE_BYTES_PER_S)),
               rate_str(b, sizeof b, proto_u64(global, PF_GLOBAL_WRITE_RATE_BYTES_PER_S)));
        ctl_kv_add(l, "Totals", "%s dirtied, %s written",
               bytes_str(a, sizeof a, proto_u64(global, PF_GLOBAL_DIRTIED_TOTAL_BYTES)),
               bytes_str(b, sizeof b, proto_u64(global, PF_GLOBAL_WRITTEN_TOTAL_BYTES)));
        ctl_kv_add(l, "Memory", "%s available of %s",
               bytes_str(a, sizeof a, proto_u64(global, PF_GLOBAL_MEM_AVAILABLE_BYTES)),
               bytes_str(c, sizeof c, proto_u64(global, PF_GLOBAL_MEM_TOTAL_BYTES)));

        if (knobs) {
                add_limit(l, "Dirty limit", knobs, PF_VM_KNOBS_DIRTY_BYTES, PF_VM_KNOBS_DIRTY_RATIO);
                add_limit(l, "Background limit", knobs, PF_VM_KNOBS_DIRTY_BACKGROUND_BYTES,
                          PF_VM_KNOBS_DIRTY_BACKGROUND_RATIO);
                add_centisecs(l, "Flusher wakeup", "every", knobs, PF_VM_KNOBS_DIRTY_WRITEBACK_CENTISECS);
                add_centisecs(l, "Dirty expire", "after", knobs, PF_VM_KNOBS_DIRTY_EXPIRE_CENTISECS);
        }

        if (attr) {
                json_object *counters = proto_get(attr, PF_ATTRIBUTION_COUNTERS);
                const char *why = proto_str(attr, PF_ATTRIBUTION_TASKSTATS_REASON);
                char line[CTL_VALUE_MAX];

                ctl_kv_add(l, "Attribution", "%s", ctl_format_attribution(attr, line, sizeof line));
                if (proto_bool(attr, PF_ATTRIBUTION_TASKSTATS))
                        ctl_kv_add(l, "Taskstats", "yes (per-task write bytes%s)",
                               proto_bool(attr, PF_ATTRIBUTION_DELAYACCT) ? " and block I/O delay" : "");
                else
                        ctl_kv_add(l, "Taskstats", "no: %s", *why ? why : "off");
                ctl_kv_add(l, "Delay accounting", "%s (kernel.task_delayacct)",
                       proto_bool(attr, PF_ATTRIBUTION_DELAYACCT) ? "on" : "off");
                if (proto_bool(attr, PF_ATTRIBUTION_ENABLED))
                        ctl_kv_add(l, "Trace counters", "%" PRIu64 " events, %" PRIu64 " lost by the kernel (%" PRIu64
                               " markers), dropped %" PRIu64 " tasks %" PRIu64 " devices, %" PRIu64 " bad lines, %" PRIu64 " budget hits",
                               proto_u64(counters, PF_COUNTERS_EVENTS), proto_u64(counters, PF_COUNTERS_LOST_KERNEL),
                               proto_u64(counters, PF_COUNTERS_LOST_MARKERS), proto_u64(counters, PF_COUNTERS_DROPPED_TASKS),
                               proto_u64(counters, PF_COUNTERS_DROPPED_DEVICES), proto_u64(counters, PF_COUNTERS_BAD_LINES),
                               proto_u64(counters, PF_COUNTERS_BUDGET_HITS));
                if (proto_bool(attr, PF_ATTRIBUTION_ENABLED) &&
                    (proto_u64(counters, PF_COUNTERS_LOST_KERNEL) > 0 || proto_u64(counters, PF_COUNTERS_DROPPED_TASKS) > 0))
                        ctl_kv_warn(l);
        }
        if (writes) {
                const char *refused = proto_str(writes, PF_WRITES_SAVED_FILE_REFUSED);

                if (*limited && writing)
                        ctl_kv_add(l, "Knob writes", "limited: %s: %s", limited, proto_str(writes, PF_WRITES_LIMITED_WHY));
                else
                        ctl_kv_add(l, "Knob writes", "%s: %s", proto_bool(writes, PF_WRITES_ENABLED) ? "yes" : "no",
                               proto_str(writes, PF_WRITES_REASON));
                ctl_kv_add(l, "Written", "%" PRIu64 " in the last minute, %" PRIu64 " in all; %" PRIu64
                       " refused; %" PRIu64 " set by hand since", proto_u64(writes, PF_WRITES_LAST_MINUTE),
                       proto_u64(writes, PF_WRITES_TOTAL), proto_u64(writes, PF_WRITES_FAILURES_TOTAL),
                       proto_u64(writes, PF_WRITES_OVERRIDES_TOTAL));
                if (proto_u64(writes, PF_WRITES_FAILURES_TOTAL) > 0)
                        ctl_kv_warn(l);
                ctl_kv_add(l, "Safety guard", "held a knob on %" PRIu64 " ticks", proto_u64(writes, PF_WRITES_GUARD_HOLDS_TOTAL));
                ctl_kv_add(l, "Saved originals", "%s%s%s", proto_str(writes, PF_WRITES_SAVED_FILE), *refused ? ": NOT TRUSTED, " : "",
                       refused);
                if (*refused)
                        ctl_kv_warn(l);
        }
        if (support) {
                const char *why = proto_str(support, PF_KERNEL_SUPPORT_WHY);

                ctl_kv_add(l, "Kernel support", "debugfs %s, wb_stats %s, *_bytes %s, strict_limit %s, cgroup writeback %s",
                       yes_no(proto_bool(support, PF_KERNEL_SUPPORT_DEBUGFS)),
                       yes_no(proto_bool(support, PF_KERNEL_SUPPORT_WB_STATS)),
                       yes_no(proto_bool(support, PF_KERNEL_SUPPORT_BDI_BYTES)),
                       yes_no(proto_bool(support, PF_KERNEL_SUPPORT_STRICT_LIMIT)),
                       yes_no(proto_bool(support, PF_KERNEL_SUPPORT_CGROUP_WRITEBACK)));
                ctl_kv_add(l, "Device figures", "%s%s", proto_bool(support, PF_KERNEL_SUPPORT_DEVICES_TRUSTED) ? "trusted" :
                       "NOT trusted, limits and caps left alone: ", why);
                if (!proto_bool(support, PF_KERNEL_SUPPORT_DEVICES_TRUSTED))
                        ctl_kv_warn(l);
                if (proto_bool(support, PF_KERNEL_SUPPORT_MEMCG_V2))
                        ctl_kv_add(l, "Memory cgroups", "%" PRIu64 " with a limit, %" PRIu64 " of them writing",
                               proto_u64(support, PF_KERNEL_SUPPORT_MEMCG_LIMITED),
                               proto_u64(support, PF_KERNEL_SUPPORT_MEMCG_WRITING));
        }
        if (hist)
                ctl_kv_add(l, "History", "%" PRIu64 " min kept, %" PRIu64 " ticks of %" PRIu64 " devices held (%s)",
                       proto_u64(hist, PF_HISTORY_STATUS_MINUTES), proto_u64(hist, PF_HISTORY_STATUS_TICKS),
                       proto_u64(hist, PF_HISTORY_STATUS_DEVICES),
                       bytes_str(a, sizeof a, proto_u64(hist, PF_HISTORY_STATUS_MEMORY_BYTES)));

        ctl_kv_print(l, f);
        if (tuning) {
                fputs("\nGlobal tuning:\n", f);
                return ctl_format_tuning(tuning, f);
        }
        return 0;
}

/* --- knobs and bandwidth --------------------------------------------------------------- */

const char *ctl_format_knobs(json_object *knobs, char *buf, size_t size) {
        char a[32], b[32];
        size_t used = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
#define APPEND(...) do { \
                int _n = snprintf(buf + used, size > used ? size - used : 0, "%s", used ? " " : ""); \
                used += _n > 0 ? (size_t) _n : 0; \
                _n = snprintf(buf + used, size > used ? size - used : 0, __VA_ARGS__); \
                used += _n > 0 ? (size_t) _n : 0; \
                used = MIN(used, size - 1); \
        } while (0)

        /* min: the kernel keeps ratios; min_bytes is an input converted to a ratio, so show the ratio. */
        if (proto_u64(knobs, PF_BDI_KNOBS_MIN_RATIO_FINE) > 0)
                APPEND("min %s", ppm_str(a, sizeof a, proto_u64(knobs, PF_BDI_KNOBS_MIN_RATIO_FINE)));
        else if (proto_u64(knobs, PF_BDI_KNOBS_MIN_RATIO) > 0)
                APPEND("min %" PRIu64 "%%", proto_u64(knobs, PF_BDI_KNOBS_MIN_RATIO));

        /* max: a ratio; below 100% the byte figure it stands for right now helps, when the kernel has it. */
        bool fine = proto_has(knobs, PF_BDI_KNOBS_MAX_RATIO_FINE), have_max = true;
        if (fine)
                ppm_str(a, sizeof a, proto_u64(knobs, PF_BDI_KNOBS_MAX_RATIO_FINE));
        else if (proto_has(knobs, PF_BDI_KNOBS_MAX_RATIO))
                snprintf(a, sizeof a, "%" PRIu64 "%%", proto_u64(knobs, PF_BDI_KNOBS_MAX_RATIO));
        else
                have_max = false;
        bool full = fine ? proto_u64(knobs, PF_BDI_KNOBS_MAX_RATIO_FINE) >= 1000000 :
                           proto_u64(knobs, PF_BDI_KNOBS_MAX_RATIO) >= 100;
        if (have_max && !full && proto_has(knobs, PF_BDI_KNOBS_MAX_BYTES))
                APPEND("max %s (%s)", bytes_str(b, sizeof b, proto_u64(knobs, PF_BDI_KNOBS_MAX_BYTES)), a);
        else if (have_max)
                APPEND("max %s", a);
        else if (proto_has(knobs, PF_BDI_KNOBS_MAX_BYTES))
                APPEND("max %s", bytes_str(b, sizeof b, proto_u64(knobs, PF_BDI_KNOBS_MAX_BYTES)));

        if (proto_has(knobs, PF_BDI_KNOBS_STRICT_LIMIT))
                APPEND("strict %" PRIu64, proto_u64(knobs, PF_BDI_KNOBS_STRICT_LIMIT));
#undef APPEND
        return buf;
}

uint64_t ctl_device_bw(json_object *device) {
        return proto_u64(proto_get(device, PF_DEVICE_TUNING), PF_DEVICE_TUNING_BW_ESTIMATE_BYTES_PER_S);
}

/* "1.5s", "4min 5s"; "0s" with nothing queued; "?" with a backlog but no bandwidth known yet. */
static const char *clean_in_str(char *buf, size_t size, json_object *device) {
        double s = ctl_clean_in_s(proto_u64(device, PF_DEVICE_BACKLOG_BYTES), ctl_device_bw(device));

        if (s < 0)
                snprintf(buf, size, "?");
        else if (s == 0)
                snprintf(buf, size, "0s");
        else
                duration_str(buf, size, s);
        return buf;
}

/* --- the device table -------------------------------------------------------------------- */

int ctl_format_devices(json_object *result, FILE *f) {
        static const char *const headers[] = {
                "BDI", "NAME", "MOUNTS", "FS", "TRAITS", "DIRTY", "WB", "THRESH", "BW", "BW FROM", "CLEAN IN", "KNOBS",
        };
        static const bool right[] = {
                false, false, false, false, false, true, true, true, true, false, true, false,
        };
        json_object *devices = proto_get(result, PF_DEVICES_DEVICES);
        ctl_table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        if (!json_object_is_type(devices, json_type_array))
                return -EBADMSG;

        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                json_object *d = json_object_array_get_idx(devices, i), *mounts = proto_get(d, PF_DEVICE_MOUNTS);
                char mount[CTL_VALUE_MAX], traits[128], dirty[32], wb[32], thresh[32], bw[32], backlog[32], knobs[128];
                char name[160], source[64];
                size_t n_mounts = json_object_is_type(mounts, json_type_array) ? json_object_array_length(mounts) : 0;

                mount[0] = '\0';
                if (n_mounts > 0)
                        snprintf(mount, sizeof mount, "%s", proto_value_str(json_object_array_get_idx(mounts, 0)));
                if (n_mounts > 1)
                        snprintf(mount + strlen(mount), sizeof mount - strlen(mount), " +%zu", n_mounts - 1);

                char *row[] = {
                        (char *) proto_str(d, PF_DEVICE_BDI),
                        (char *) name_str(name, sizeof name, d),
                        mount,
                        (char *) proto_str(d, PF_DEVICE_FSTYPE),
                        (char *) join_array(traits, sizeof traits, proto_get(d, PF_DEVICE_TRAITS), ","),
                        (char *) bytes_str(dirty, sizeof dirty, proto_u64(d, PF_DEVICE_DIRTY_BYTES)),
                        (char *) bytes_str(wb, sizeof wb, proto_u64(d, PF_DEVICE_WRITEBACK_BYTES)),
                        (char *) bytes_str(thresh, sizeof thresh, proto_u64(d, PF_DEVICE_THRESH_BYTES)),
                        (char *) rate_str(bw, sizeof bw, ctl_device_bw(d)),
                        (char *) ctl_device_bw_source(proto_get(d, PF_DEVICE_TUNING), source, sizeof source),
                        (char *) clean_in_str(backlog, sizeof backlog, d),
                        (char *) ctl_format_knobs(proto_get(d, PF_DEVICE_KNOBS), knobs, sizeof knobs),
                };
                r = ctl_table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return ctl_table_finish(&t, r, NULL, f);
}

/* --- one device -------------------------------------------------------------------------- */

typedef enum field_kind { FIELD_STRING, FIELD_NUMBER, FIELD_BYTES, FIELD_RATE, FIELD_LIST,
                          FIELD_BOOL, FIELD_KNOBS, FIELD_BW, FIELD_CLEAN_IN, FIELD_HIDDEN } field_kind;

static const struct {
        protocol_field field;
        const char *label;
        field_kind kind;
} device_fields[] = {
        { PF_DEVICE_BDI,                    "BDI",                  FIELD_STRING },
        { PF_DEVICE_NAME,                   "Name",                 FIELD_STRING },
        { PF_DEVICE_ALIAS,                  "Device-mapper name",   FIELD_STRING },
        { PF_DEVICE_HAS_DEVNUM,             NULL,                   FIELD_HIDDEN },   /* shown through major/minor */
        { PF_DEVICE_MAJOR,                  "Major",                FIELD_NUMBER },
        { PF_DEVICE_MINOR,                  "Minor",                FIELD_NUMBER },
        { PF_DEVICE_MODEL,                  "Model",                FIELD_STRING },
        { PF_DEVICE_FSTYPE,                 "Filesystem",           FIELD_STRING },
        { PF_DEVICE_MOUNTS,                 "Mounts",               FIELD_LIST },
        { PF_DEVICE_TRAITS,                 "Traits",               FIELD_LIST },
        { PF_DEVICE_SOURCE,                 "Stats source",         FIELD_STRING },
        { PF_DEVICE_DIRTY_BYTES,            "Dirty",                FIELD_BYTES },
        { PF_DEVICE_WRITEBACK_BYTES,        "Writeback",            FIELD_BYTES },
        { PF_DEVICE_THRESH_BYTES,           "Dirty threshold",      FIELD_BYTES },
        { PF_DEVICE_BACKLOG_BYTES,          "Backlog",              FIELD_BYTES },
        /* one bandwidth, the policy's (from the tuning), with the kernel's and the measured ones as its inputs */
        { PF_DEVICE_TUNING,                 "Bandwidth",            FIELD_BW },
        { PF_DEVICE_BACKLOG_BYTES,          "Clean in",             FIELD_CLEAN_IN },
        { PF_DEVICE_BACKLOG_S,              NULL,                   FIELD_HIDDEN },   /* of another bandwidth */
        { PF_DEVICE_WB_BW_BYTES_PER_S,      NULL,                   FIELD_HIDDEN },   /* in "Bandwidth" */
        { PF_DEVICE_KERNEL_BW_BYTES_PER_S,  NULL,                   FIELD_HIDDEN },
        { PF_DEVICE_WRITE_BW_BYTES_PER_S,   NULL,                   FIELD_HIDDEN },
        { PF_DEVICE_DIRTY_RATE_BYTES_PER_S, "Dirty rate",           FIELD_RATE },
        { PF_DEVICE_DIRTIED_TOTAL_BYTES,    "Dirtied total",        FIELD_BYTES },
        { PF_DEVICE_WRITTEN_TOTAL_BYTES,    "Written total",        FIELD_BYTES },
        { PF_DEVICE_SEEN_BEFORE,            "Rates valid",          FIELD_BOOL },
        { PF_DEVICE_KNOBS,                  NULL,                   FIELD_KNOBS },
        { PF_DEVICE_TUNING,                 NULL,                   FIELD_HIDDEN },   /* a table of its own */
        { PF_DEVICE_THROTTLE,               NULL,                   FIELD_HIDDEN },
};

/* The unit of each per-device knob file. */
static const struct {
        protocol_field field;
        const char *unit;
} bdi_knob_units[] = {
        { PF_BDI_KNOBS_MIN_RATIO,      PROTOCOL_UNIT_PERCENT },
        { PF_BDI_KNOBS_MAX_RATIO,      PROTOCOL_UNIT_PERCENT },
        { PF_BDI_KNOBS_MIN_RATIO_FINE, PROTOCOL_UNIT_PPM },
        { PF_BDI_KNOBS_MAX_RATIO_FINE, PROTOCOL_UNIT_PPM },
        { PF_BDI_KNOBS_MIN_BYTES,      PROTOCOL_UNIT_BYTES },
        { PF_BDI_KNOBS_MAX_BYTES,      PROTOCOL_UNIT_BYTES },
        { PF_BDI_KNOBS_STRICT_LIMIT,   PROTOCOL_UNIT_BOOL },
};

static const char *bytes_exact_str(char *buf, size_t size, uint64_t bytes) {
        char b[32];
        if (bytes < 1024)
                snprintf(buf, size, "%" PRIu64, bytes);
        else
                snprintf(buf, size, "%s (%" PRIu64 " bytes)", format_bytes(b, sizeof b, bytes), bytes);
        return buf;
}

static void add_knobs(ctl_kv_list *l, json_object *knobs) {
        char key[80], a[64];

        if (!json_object_is_type(knobs, json_type_object))
                return;
        for (size_t i = 0; i < ELEMENTSOF(bdi_knob_units); i++) {
                protocol_field fld = bdi_knob_units[i].field;
                const char *unit = bdi_knob_units[i].unit;
                uint64_t v = proto_u64(knobs, fld);

                if (!proto_has(knobs, fld))
                        continue;
                snprintf(key, sizeof key, "Knob %s", protocol_name(fld));
                if (strcmp(unit, PROTOCOL_UNIT_PPM) == 0)
                        ctl_kv_add(l, key, "%s (%" PRIu64 " ppm)", ppm_str(a, sizeof a, v), v);
                else if (strcmp(unit, PROTOCOL_UNIT_BYTES) == 0)
                        ctl_kv_add(l, key, "%s", bytes_exact_str(a, sizeof a, v));
                else
                        ctl_kv_add(l, key, "%s", unit_value_str(a, sizeof a, unit, v));
        }
        /* knob files a newer daemon reads: shown raw */
        json_object_object_foreach(knobs, name, v) {
                bool known = false;

                for (size_t i = 0; i < ELEMENTSOF(bdi_knob_units) && !known; i++)
                        known = strcmp(protocol_name(bdi_knob_units[i].field), name) == 0;
                if (!known) {
                        snprintf(key, sizeof key, "Knob %.64s", name);
                        ctl_kv_add(l, key, "%s", v ? oom_check(json_object_to_json_string(v)) : "null");
                }
        }
}

static void add_field(ctl_kv_list *l, json_object *device, const char *label, field_kind kind, json_object *v) {
        char a[CTL_VALUE_MAX], b[32], c[32], d[32];

        switch (kind) {
        case FIELD_STRING:
        case FIELD_NUMBER: {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) :
                                oom_check(json_object_to_json_string(v));
                ctl_kv_add(l, label, "%s", s && *s ? s : "-");
                break;
        }
        case FIELD_BYTES:
                ctl_kv_add(l, label, "%s", bytes_exact_str(a, sizeof a, proto_value_u64(v)));
                break;
        case FIELD_RATE:
                ctl_kv_add(l, label, "%s", rate_str(a, sizeof a, proto_value_u64(v)));
                break;
        case FIELD_BW:
                ctl_kv_add(l, label, "%s (the policy's estimate; the kernel's %s, %s now; measured %s)",
                       rate_str(a, sizeof a, ctl_device_bw(device)),
                       rate_str(b, sizeof b, proto_u64(device, PF_DEVICE_WB_BW_BYTES_PER_S)),
                       rate_str(c, sizeof c, proto_u64(device, PF_DEVICE_KERNEL_BW_BYTES_PER_S)),
                       rate_str(d, sizeof d, proto_u64(device, PF_DEVICE_WRITE_BW_BYTES_PER_S)));
                break;
        case FIELD_CLEAN_IN:
                clean_in_str(a, sizeof a, device);
                if (proto_u64(device, PF_DEVICE_BACKLOG_BYTES) == 0)
                        ctl_kv_add(l, label, "%s (nothing to write)", a);
                else if (ctl_device_bw(device) == 0)
                        ctl_kv_add(l, label, "%s (no bandwidth known yet)", a);
                else
                        ctl_kv_add(l, label, "%s at %s", a, rate_str(b, sizeof b, ctl_device_bw(device)));
                break;
        case FIELD_LIST:
                join_array(a, sizeof a, v, ", ");
                ctl_kv_add(l, label, "%s", *a ? a : "-");
                break;
        case FIELD_BOOL:
                ctl_kv_add(l, label, "%s", json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v) ? "yes" : "no");
                break;
        case FIELD_KNOBS:
                add_knobs(l, v);
                break;
        case FIELD_HIDDEN:
                break;
        }
}

const char *ctl_device_bw_source(json_object *tuning, char *buf, size_t size) {
        json_object *source = proto_get(tuning, PF_DEVICE_TUNING_BW_SOURCE);

        return ctl_bw_source_text(json_object_is_type(source, json_type_string) ? json_object_get_string(source) : NULL,
                                  proto_has(tuning, PF_DEVICE_TUNING_BW_REMEMBERED_AGE_S),
                                  proto_u64(tuning, PF_DEVICE_TUNING_BW_REMEMBERED_AGE_S), buf, size);
}

/* The device's tuning block under show's fields. */
static int device_tuning_print(json_object *tuning, FILE *f) {
        char bw[32], source[64];

        if (!tuning)
                return 0;
        fprintf(f, "\nTuning: %s, %s, bandwidth taken as %s",
                proto_bool(tuning, PF_DEVICE_TUNING_MANAGED) ? "managed" : "not managed",
                proto_bool(tuning, PF_DEVICE_TUNING_ACTIVE) ? "active" : "idle",
                rate_str(bw, sizeof bw, proto_u64(tuning, PF_DEVICE_TUNING_BW_ESTIMATE_BYTES_PER_S)));
        if (proto_has(tuning, PF_DEVICE_TUNING_BW_SOURCE))
                fprintf(f, ", %s", ctl_device_bw_source(tuning, source, sizeof source));
        fputc('\n', f);
        return ctl_format_tuning(tuning, f);
}

int ctl_format_device(json_object *device, FILE *f) {
        _cleanup_free_ ctl_kv_list *l = calloc(1, sizeof *l);

        if (!l)
                return -ENOMEM;
        if (!json_object_is_type(device, json_type_object) || !proto_has(device, PF_DEVICE_BDI))
                return -EBADMSG;

        for (size_t i = 0; i < ELEMENTSOF(device_fields); i++) {
                json_object *v = proto_get(device, device_fields[i].field);
                if (v)
                        add_field(l, device, device_fields[i].label, device_fields[i].kind, v);
        }
        /* Fields a newer daemon added: shown raw, so nothing is hidden from "show". */
        json_object_object_foreach(device, key, v) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(device_fields) && !known; i++)
                        known = strcmp(protocol_name(device_fields[i].field), key) == 0;
                if (!known)
                        ctl_kv_add(l, key, "%s", v ? (json_object_is_type(v, json_type_string) ? json_object_get_string(v) :
                                                  oom_check(json_object_to_json_string(v))) : "null");
        }
        ctl_kv_print(l, f);
        return device_tuning_print(proto_get(device, PF_DEVICE_TUNING), f);
}

int ctl_format_show(json_object *result, FILE *f) {
        return ctl_format_device(proto_get(result, PF_SHOW_DEVICE), f);
}

int ctl_format_explain(json_object *result, FILE *f) {
        json_object *device = proto_get(result, PF_EXPLAIN_DEVICE), *tuning = proto_get(result, PF_EXPLAIN_TUNING);
        json_object *device_tuning = proto_get(device, PF_DEVICE_TUNING);
        _cleanup_free_ char *name = NULL;
        int r;

        if (!json_object_is_type(proto_get(result, PF_EXPLAIN_TEXT), json_type_string))
                return -EBADMSG;
        /* the daemon's own lines, the names in them escaped where it made them: backslashes not doubled */
        r = escape_made_lines_fputs(proto_str(result, PF_EXPLAIN_TEXT), f);
        if (r < 0)
                return r;
        if (device_tuning) {
                name = escape_text_alloc(proto_str(device, PF_DEVICE_NAME));
                fprintf(f, "\nKnobs of %s:\n", name);
                r = ctl_format_tuning(device_tuning, f);
                if (r < 0)
                        return r;
        }
        if (tuning) {
                fputs("\nGlobal knobs:\n", f);
                r = ctl_format_tuning(tuning, f);
        }
        return r;
}

/* --- top --------------------------------------------------------------------------------- */

const char *ctl_format_attribution(json_object *attr, char *buf, size_t size) {
        const char *reason = proto_str(attr, PF_ATTRIBUTION_REASON);

        if (proto_bool(attr, PF_ATTRIBUTION_ENABLED))
                snprintf(buf, size, "on (trace instance %s, taskstats %s, delay accounting %s)",
                         proto_str(attr, PF_ATTRIBUTION_TRACE_INSTANCE),
                         proto_bool(attr, PF_ATTRIBUTION_TASKSTATS) ? "on" : "off",
                         proto_bool(attr, PF_ATTRIBUTION_DELAYACCT) ? "on" : "off");
        else
                snprintf(buf, size, "off: %s", *reason ? reason : "unknown");
        return buf;
}

/* "loop0 (7:0)" or the bdi alone; "-" when none. */
static const char *task_device_str(char *buf, size_t size, json_object *t, protocol_field bdi_field,
                                   protocol_field name_field) {
        const char *bdi = proto_str(t, bdi_field), *name = proto_str(t, name_field);

        if (!*bdi)
                snprintf(buf, size, "-");
        else if (*name && strcmp(name, bdi) != 0)
                snprintf(buf, size, "%s (%s)", name, bdi);
        else
                snprintf(buf, size, "%s", bdi);
        return buf;
}

static const char *ms_per_s_str(char *buf, size_t size, json_object *o, protocol_field f) {
        if (!proto_has(o, f))
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%.0f", proto_double(o, f));
        return buf;
}

static int format_top_devices(json_object *devices, FILE *f) {
        static const char *const headers[] = {
                "DEVICE", "NAME", "DIRTY", "WB", "THRESH", "BW", "DIRTYING", "CLEAN IN", "PAUSE ms/s", "KNOBS",
        };
        static const bool right[] = { false, false, true, true, true, true, true, true, true, false };
        ctl_table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                json_object *d = json_object_array_get_idx(devices, i), *th = proto_get(d, PF_DEVICE_THROTTLE);
                char dirty[32], wb[32], thresh[32], bw[32], rate[32], backlog[32], pause[32], knobs[128], name[160];
                char *row[] = {
                        (char *) proto_str(d, PF_DEVICE_BDI),
                        (char *) name_str(name, sizeof name, d),
                        (char *) bytes_str(dirty, sizeof dirty, proto_u64(d, PF_DEVICE_DIRTY_BYTES)),
                        (char *) bytes_str(wb, sizeof wb, proto_u64(d, PF_DEVICE_WRITEBACK_BYTES)),
                        (char *) bytes_str(thresh, sizeof thresh, proto_u64(d, PF_DEVICE_THRESH_BYTES)),
                        (char *) rate_str(bw, sizeof bw, ctl_device_bw(d)),
                        (char *) rate_str(rate, sizeof rate, proto_u64(d, PF_DEVICE_DIRTY_RATE_BYTES_PER_S)),
                        (char *) clean_in_str(backlog, sizeof backlog, d),
                        (char *) (th ? ms_per_s_str(pause, sizeof pause, th, PF_THROTTLE_PAUSE_MS_PER_S) : "0"),
                        (char *) ctl_format_knobs(proto_get(d, PF_DEVICE_KNOBS), knobs, sizeof knobs),
                };
                r = ctl_table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        return ctl_table_finish(&t, r, "No device is holding or writing dirty data.\n", f);
}

static int format_top_dirtiers(json_object *list, size_t max_rows, const char *when, FILE *f) {
        static const char *const headers[] = { "PID", "COMM", "WRITE", "CANCELLED", "DEVICE", "PAUSE ms/s", "BLKIO ms/s" };
        static const bool right[] = { true, false, true, true, false, true, true };
        ctl_table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(list) && (max_rows == 0 || i < max_rows); i++) {
                json_object *d = json_object_array_get_idx(list, i);
                char pid[24], w[32], c[32], dev[160], pause[32], delay[32];
                char *row[] = {
                        (snprintf(pid, sizeof pid, "%" PRIu64, proto_u64(d, PF_DIRTIER_PID)), pid),
                        (char *) proto_str(d, PF_DIRTIER_COMM),
                        (char *) rate_str(w, sizeof w, proto_u64(d, PF_DIRTIER_WRITE_BYTES_PER_S)),
                        (char *) rate_str(c, sizeof c, proto_u64(d, PF_DIRTIER_CANCELLED_WRITE_BYTES_PER_S)),
                        (char *) task_device_str(dev, sizeof dev, d, PF_DIRTIER_BDI, PF_DIRTIER_NAME),
                        (char *) ms_per_s_str(pause, sizeof pause, d, PF_DIRTIER_PAUSE_MS_PER_S),
                        (char *) ms_per_s_str(delay, sizeof delay, d, PF_TASK_IO_BLKIO_DELAY_MS_PER_S),
                };
                r = ctl_table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        char empty[96];

        snprintf(empty, sizeof empty, "No task dirtied pages %s.\n", when);
        return ctl_table_finish(&t, r, empty, f);
}

static int format_top_paused(json_object *list, size_t max_rows, const char *when, FILE *f) {
        static const char *const headers[] = {
                "PID", "COMM", "DEVICE", "PAUSE ms/s", "PAUSES", "MAX ms", "RATELIMIT", "WRITE", "BLKIO ms/s",
        };
        static const bool right[] = { true, false, false, true, true, true, true, true, true };
        ctl_table t = { .headers = headers, .right = right, .n_columns = ELEMENTSOF(headers) };
        int r = 0;

        for (size_t i = 0; i < json_object_array_length(list) && (max_rows == 0 || i < max_rows); i++) {
                json_object *d = json_object_array_get_idx(list, i);
                char pid[24], dev[160], pause[32], pauses[24], maxp[24], lim[32], w[32], delay[32];
                char *row[] = {
                        (snprintf(pid, sizeof pid, "%" PRIu64, proto_u64(d, PF_PAUSED_PID)), pid),
                        (char *) proto_str(d, PF_PAUSED_COMM),
                        (char *) task_device_str(dev, sizeof dev, d, PF_PAUSED_BDI, PF_PAUSED_NAME),
                        (char *) ms_per_s_str(pause, sizeof pause, d, PF_PAUSED_PAUSE_MS_PER_S),
                        (snprintf(pauses, sizeof pauses, "%" PRIu64, proto_u64(d, PF_PAUSED_PAUSES)), pauses),
                        (snprintf(maxp, sizeof maxp, "%" PRIu64, proto_u64(d, PF_PAUSED_MAX_PAUSE_MS)), maxp),
                        (char *) rate_str(lim, sizeof lim, proto_u64(d, PF_PAUSED_TASK_RATELIMIT_BYTES_PER_S)),
                        (char *) (proto_has(d, PF_TASK_IO_TASK_WRITE_BYTES_PER_S) ?
                                  rate_str(w, sizeof w, proto_u64(d, PF_TASK_IO_TASK_WRITE_BYTES_PER_S)) : "-"),
                        (char *) ms_per_s_str(delay, sizeof delay, d, PF_TASK_IO_BLKIO_DELAY_MS_PER_S),
                };
                r = ctl_table_add_row(&t, row);
                if (r < 0)
                        break;
        }
        char empty[96];

        snprintf(empty, sizeof empty, "No task was throttled %s.\n", when);
        return ctl_table_finish(&t, r, empty, f);
}

int ctl_format_top(json_object *result, size_t max_rows, FILE *f) {
        json_object *g = proto_get(result, PF_TOP_GLOBAL), *devices = proto_get(result, PF_TOP_DEVICES);
        json_object *attr = proto_get(result, PF_TOP_ATTRIBUTION);
        json_object *dirtiers = proto_get(result, PF_TOP_DIRTIERS), *paused = proto_get(result, PF_TOP_PAUSED);
        char a[32], b[32], c[32], d[32], e[32], line[CTL_VALUE_MAX];
        _cleanup_free_ char *mode = NULL, *attribution = NULL;
        int r;

        if (!json_object_is_type(g, json_type_object) || !json_object_is_type(devices, json_type_array))
                return -EBADMSG;
        mode = escape_text_alloc(proto_str(result, PF_TOP_MODE));
        fprintf(f, "wbtuned top - tick %" PRIu64 " every %" PRIu64 " ms, mode %s\n",
                proto_u64(result, PF_TOP_TICKS), proto_u64(result, PF_TOP_TICK_MS), mode);
        fprintf(f, "Dirty %s  Writeback %s  Threshold %s  Background %s  Dirtying %s  Writing %s\n",
                bytes_str(a, sizeof a, proto_u64(g, PF_GLOBAL_DIRTY_BYTES)),
                bytes_str(b, sizeof b, proto_u64(g, PF_GLOBAL_WRITEBACK_BYTES)),
                bytes_str(c, sizeof c, proto_u64(g, PF_GLOBAL_DIRTY_THRESH_BYTES)),
                bytes_str(d, sizeof d, proto_u64(g, PF_GLOBAL_BACKGROUND_THRESH_BYTES)),
                rate_str(e, sizeof e, proto_u64(g, PF_GLOBAL_DIRTY_RATE_BYTES_PER_S)),
                rate_str(line, sizeof line, proto_u64(g, PF_GLOBAL_WRITE_RATE_BYTES_PER_S)));
        if (attr) {
                json_object *tick = proto_get(attr, PF_TOP_ATTRIBUTION_TICK);

                attribution = escape_text_alloc(ctl_format_attribution(attr, line, sizeof line));
                fprintf(f, "Attribution %s", attribution);
                if (proto_bool(attr, PF_ATTRIBUTION_ENABLED) &&
                    (proto_u64(tick, PF_COUNTERS_LOST_KERNEL) || proto_u64(tick, PF_COUNTERS_LOST_MARKERS) ||
                     proto_u64(tick, PF_COUNTERS_DROPPED_TASKS))) {
                        snprintf(line, sizeof line, "this tick lost %" PRIu64 " events, dropped %" PRIu64 " tasks",
                                 proto_u64(tick, PF_COUNTERS_LOST_KERNEL), proto_u64(tick, PF_COUNTERS_DROPPED_TASKS));
                        fputs("; ", f);
                        ctl_put_warn(f, line, true);
                }
                fputc('\n', f);
        }
        fputc('\n', f);
        r = format_top_devices(devices, f);
        if (r < 0)
                return r;
        /* the task lists are of the last seconds (a daemon before the window: of the last tick) */
        uint64_t window_usec = proto_u64(attr, PF_TOP_ATTRIBUTION_WINDOW_USEC);
        char when[48] = "this tick";
        if (window_usec > 0)
                snprintf(when, sizeof when, "in the last %s", duration_str(a, sizeof a, (double) window_usec / 1e6));
        if (json_object_is_type(dirtiers, json_type_array)) {
                fprintf(f, "\nDirtying most, %s\n", when);
                r = format_top_dirtiers(dirtiers, max_rows, when, f);
                if (r < 0)
                        return r;
        }
        if (json_object_is_type(paused, json_type_array)) {
                fprintf(f, "\nPaused most (balance_dirty_pages), %s\n", when);
                r = format_top_paused(paused, max_rows, when, f);
        }
        return r;
}

/* --- history ------------------------------------------------------------------------------- */

int ctl_format_history_csv(json_object *result, FILE *f) {
        json_object *csv = proto_get(result, PF_HISTORY_CSV_CSV);

        if (!json_object_is_type(csv, json_type_string))
                return -EBADMSG;
        return escape_lines_fputs(json_object_get_string(csv), f);
}
