/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's text layout: the style (legend, colour), "Key: value" lists and tables with widths from content.
 * Everything put in a list or a table is escaped there: any of it may come from the daemon. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest value of a "Key: value" line. */
#define CTL_VALUE_MAX 512

/* How the renderers print: legend false leaves out the tables' header rows and the sentence saying a
 * table is empty (--no-legend); color puts warnings in colour (only on a terminal). Default: legend, no colour. */
void ctl_format_set_style(bool legend, bool color);

/* A warning: in colour when colours are on, else as it is. Escaped text in, so widths stay the text's. */
void ctl_put_warn(FILE *f, const char *escaped, bool warn);

/* "Key: value" lines, keys right-aligned. */
typedef struct ctl_kv_list {
        char keys[64][48];
        char values[64][CTL_VALUE_MAX];
        bool warn[64];
        size_t n;
} ctl_kv_list;

/* Both key and value are escaped; a list full drops the line. */
void ctl_kv_add(ctl_kv_list *l, const char *key, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* The last line added is a warning. */
void ctl_kv_warn(ctl_kv_list *l);
void ctl_kv_print(const ctl_kv_list *l, FILE *f);

/* A table: headers and alignment given, rows added, printed with column widths from content. */
typedef struct ctl_table {
        const char *const *headers;
        const bool *right;
        size_t n_columns;
        char **cells;        /* n_rows * n_columns, malloc'd, escaped */
        uint32_t *warn;      /* per row: a bit per column shown as a warning */
        size_t n_rows;
} ctl_table;

/* A row of n_columns cells (NULL or "" shown as "-"); the columns whose bit is set in warn are warnings.
 * 0 or -ENOMEM. */
int ctl_table_add_row_warn(ctl_table *t, char **row, uint32_t warn);
int ctl_table_add_row(ctl_table *t, char **row);
/* Print the table (or say why it is empty, a legend too) unless building it failed, free it, pass r on. */
int ctl_table_finish(ctl_table *t, int r, const char *empty, FILE *f);
