/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl plot: the history CSV as gnuplot data, and the output name gnuplot may be given. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-plot.h"
#include "protocol.h"
#include "util.h"

/* Split a CSV line (without its newline) into at most max fields, in place; returns the count. */
static size_t csv_split(char *line, char **fields, size_t max) {
        size_t n = 0;

        for (char *p = line; n < max;) {
                fields[n++] = p;
                p = strchr(p, ',');
                if (!p)
                        break;
                *p++ = '\0';
        }
        return n;
}

int ctl_plot_output(const char *name, char **ret, const char **ret_why) {
        if (!name || !*name) {
                *ret_why = "an empty file name";
                return -EINVAL;
        }
        if (name[0] == '|') {
                *ret_why = "a name that starts with \"|\" is a command to gnuplot, not a file";
                return -EINVAL;
        }
        *ret = name[0] == '/' ? xstrdup(name) : xasprintf("./%s", name);
        return 0;
}

int ctl_plot_data(const char *csv, bool device, FILE *out, uint64_t *ret_rows, char *error, size_t size) {
        /* the gnuplot columns after the time, in order */
        static const protocol_csv_column device_columns[] = {
                PC_DIRTY_BYTES, PC_WRITEBACK_BYTES, PC_THRESH_BYTES, PC_WRITE_BW_BYTES_PER_S, PC_GLOBAL_DIRTY_BYTES,
        };
        static const protocol_csv_column global_columns[] = {
                PC_GLOBAL_DIRTY_BYTES, PC_GLOBAL_WRITEBACK_BYTES, PC_GLOBAL_DIRTY_THRESH_BYTES,
                PC_GLOBAL_BACKGROUND_THRESH_BYTES,
        };
        const protocol_csv_column *wanted = device ? device_columns : global_columns;
        size_t n_wanted = device ? ELEMENTSOF(device_columns) : ELEMENTSOF(global_columns);
        size_t index[_PC_MAX + 1], n_header;
        char *fields[64];
        const double mib = 1024.0 * 1024.0;
        double t0 = 0.0;
        uint64_t rows = 0;
        _cleanup_free_ char *copy = xstrdup(csv ? csv : "");
        char *line = copy, *next;

        *ret_rows = 0;
        next = strchr(line, '\n');
        if (next)
                *next++ = '\0';
        n_header = csv_split(line, fields, ELEMENTSOF(fields));
        /* index[0]: time; index[1..]: the wanted columns */
        for (size_t w = 0; w <= n_wanted; w++) {
                protocol_csv_column col = w == 0 ? PC_TIME_USEC : wanted[w - 1];
                const char *name = protocol_csv_column_name(col);
                size_t i;

                for (i = 0; i < n_header && strcmp(fields[i], name) != 0; i++)
                        ;
                if (i == n_header) {
                        snprintf(error, size, "the history CSV has no \"%s\" column", name);
                        return -EBADMSG;
                }
                index[w] = i;
        }

        for (line = next; line && *line; line = next) {
                double v[_PC_MAX + 1];
                size_t n;
                bool ok = true;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                n = csv_split(line, fields, ELEMENTSOF(fields));
                if (n != n_header)
                        continue;
                for (size_t w = 0; w <= n_wanted && ok; w++) {
                        uint64_t u = 0;

                        ok = parse_u64(fields[index[w]], &u) >= 0;
                        v[w] = (double) u;
                }
                if (!ok)
                        continue;
                if (rows++ == 0)
                        t0 = v[0];
                fprintf(out, "%.3f", (v[0] - t0) / 1e6);
                for (size_t w = 1; w <= n_wanted; w++)
                        fprintf(out, " %.3f", v[w] / mib);
                fputc('\n', out);
        }
        *ret_rows = rows;
        return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
