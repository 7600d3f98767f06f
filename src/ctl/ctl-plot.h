/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl plot: the history CSV as gnuplot data, and the output name gnuplot may be given. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* history's CSV into gnuplot data, columns found by their names in the header row: seconds since the
 * first row, then in MiB dirty, writeback, threshold and, with device, bandwidth (MiB/s) and global
 * dirty, else the background threshold. Rows that do not parse are skipped. 0 with the rows written
 * in *ret_rows, -EBADMSG with error naming a missing column, -EIO on a write error. */
int ctl_plot_data(const char *csv, bool device, FILE *out, uint64_t *ret_rows, char *error, size_t size);
/* plot's -o NAME as gnuplot's "set output" gets it: gnuplot runs a name that starts with "|" as a command,
 * so that one is refused, and an empty one; a relative name becomes "./NAME", so nothing gnuplot reads
 * specially can lead it. 0 with a malloc'd path in *ret, or -EINVAL with *ret_why saying what is wrong. */
int ctl_plot_output(const char *name, char **ret, const char **ret_why);
