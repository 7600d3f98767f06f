/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What wbtunectl shows that the daemon computes or says too (ctl-common.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-common.h"
#include "escape.h"
#include "protocol.h"
#include "util.h"

uint64_t counter_error_bytes(unsigned nr_cpu_ids, uint64_t page_size) {
        unsigned log2 = 0;

        nr_cpu_ids = MAX(nr_cpu_ids, 1u);
        while ((1u << (log2 + 1)) <= nr_cpu_ids)
                log2++;
        return (uint64_t) nr_cpu_ids * 8 * (1 + log2) * page_size;
}

uint64_t ctl_counter_error_bytes(unsigned nr_cpu_ids, uint64_t page_size) {
        if (nr_cpu_ids <= 1)
                return 2 * page_size;   /* no per-CPU parts: off by at most one page each */
        /* two counters: reclaimable and writeback */
        return 2 * counter_error_bytes(nr_cpu_ids, page_size);
}

int ctl_parse_possible_cpus(const char *s, unsigned *ret) {
        unsigned highest = 0;
        bool any = false;

        while (*s && *s != '\n') {
                char *end;
                unsigned long a, b;

                errno = 0;
                a = strtoul(s, &end, 10);
                if (errno || end == s || a >= 1u << 20)
                        return -EINVAL;
                b = a;
                if (*end == '-') {
                        s = end + 1;
                        b = strtoul(s, &end, 10);
                        if (errno || end == s || b < a || b >= 1u << 20)
                                return -EINVAL;
                }
                highest = MAX(highest, (unsigned) b);
                any = true;
                if (*end == ',')
                        end++;
                else if (*end && *end != '\n')
                        return -EINVAL;
                s = end;
        }
        if (!any)
                return -EINVAL;
        *ret = highest + 1;
        return 0;
}

const char *ctl_bw_source_text(const char *source, bool has_age, uint64_t age_s, char *buf, size_t size) {
        if (!source)
                snprintf(buf, size, "-");
        else if (strcmp(source, PROTOCOL_BW_MEASURED) == 0)
                snprintf(buf, size, "measured now");
        else if (strcmp(source, PROTOCOL_BW_REMEMBERED) == 0 && has_age) {
                if (age_s < 120)
                        snprintf(buf, size, "remembered (age %" PRIu64 " s)", age_s);
                else if (age_s < 120 * 60)
                        snprintf(buf, size, "remembered (age %" PRIu64 " min)", age_s / 60);
                else if (age_s < 48 * 3600)
                        snprintf(buf, size, "remembered (age %" PRIu64 " h)", age_s / 3600);
                else
                        snprintf(buf, size, "remembered (age %" PRIu64 " d)", age_s / 86400);
        } else if (strcmp(source, PROTOCOL_BW_REMEMBERED) == 0)
                snprintf(buf, size, "remembered");
        else if (strcmp(source, PROTOCOL_BW_PRESUMED) == 0)
                snprintf(buf, size, "presumed");
        else
                /* a newer daemon's word: shown, escaped, rather than taken for one we know */
                escape_text(source, buf, size);
        return buf;
}
