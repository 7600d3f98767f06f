/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wbtunectl's text layout: the style (legend, colour), "Key: value" lists and tables with widths from content. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-table.h"
#include "escape.h"
#include "util.h"

#define TABLE_COLUMNS_MAX 16

/* Our own SGR codes, around text already escaped: the only colour wbtunectl prints, for warnings. */
#define COLOR_WARN "\033[1;33m"
#define COLOR_RESET "\033[0m"

static bool style_legend = true, style_color = false;

void ctl_format_set_style(bool legend, bool color) {
        style_legend = legend;
        style_color = color;
}

void ctl_put_warn(FILE *f, const char *escaped, bool warn) {
        if (warn && style_color)
                fprintf(f, COLOR_WARN "%s" COLOR_RESET, escaped);
        else
                fputs(escaped, f);
}

/* Columns on a terminal: UTF-8 continuation bytes take none (wide characters are not measured). */
static size_t text_width(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += ((unsigned char) *s & 0xc0) != 0x80;
        return n;
}

static void pad(FILE *f, size_t n) {
        for (; n > 0; n--)
                fputc(' ', f);
}

/* --- "Key: value" lists ------------------------------------------------------------------- */

void ctl_kv_add(ctl_kv_list *l, const char *key, const char *format, ...) {
        char value[CTL_VALUE_MAX];
        va_list ap;

        if (l->n >= ELEMENTSOF(l->keys))
                return;
        escape_text(key, l->keys[l->n], sizeof l->keys[0]);
        va_start(ap, format);
        vsnprintf(value, sizeof value, format, ap);
        va_end(ap);
        escape_text(value, l->values[l->n], sizeof l->values[0]);
        l->warn[l->n] = false;
        l->n++;
}

void ctl_kv_warn(ctl_kv_list *l) {
        if (l->n > 0)
                l->warn[l->n - 1] = true;
}

void ctl_kv_print(const ctl_kv_list *l, FILE *f) {
        size_t width = 0;
        for (size_t i = 0; i < l->n; i++)
                width = MAX(width, text_width(l->keys[i]));
        for (size_t i = 0; i < l->n; i++) {
                pad(f, width - text_width(l->keys[i]));
                fprintf(f, "%s: ", l->keys[i]);
                ctl_put_warn(f, l->values[i], l->warn[i]);
                fputc('\n', f);
        }
}

/* --- tables -------------------------------------------------------------------------------- */

int ctl_table_add_row_warn(ctl_table *t, char **row, uint32_t warn) {
        char **p = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof(char *));
        uint32_t *w;

        if (!p)
                return -ENOMEM;
        t->cells = p;
        w = realloc(t->warn, (t->n_rows + 1) * sizeof(uint32_t));
        if (!w)
                return -ENOMEM;
        t->warn = w;
        w[t->n_rows] = warn;
        for (size_t i = 0; i < t->n_columns; i++)
                p[t->n_rows * t->n_columns + i] = escape_text_alloc(row[i] && *row[i] ? row[i] : "-");
        t->n_rows++;
        return 0;
}

int ctl_table_add_row(ctl_table *t, char **row) {
        return ctl_table_add_row_warn(t, row, 0);
}

static void ctl_table_print(const ctl_table *t, FILE *f) {
        size_t width[TABLE_COLUMNS_MAX];

        for (size_t c = 0; c < t->n_columns; c++) {
                width[c] = style_legend ? text_width(t->headers[c]) : 0;
                for (size_t r = 0; r < t->n_rows; r++)
                        width[c] = MAX(width[c], text_width(t->cells[r * t->n_columns + c]));
        }
        /* row 0 is the header: the legend */
        for (size_t r = style_legend ? 0 : 1; r <= t->n_rows; r++)
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *s = r == 0 ? t->headers[c] : t->cells[(r - 1) * t->n_columns + c];
                        bool last = c + 1 == t->n_columns;
                        size_t w = text_width(s);

                        if (t->right[c])
                                pad(f, width[c] - w);
                        ctl_put_warn(f, s, r > 0 && c < 32 && (t->warn[r - 1] & (UINT32_C(1) << c)));
                        if (!t->right[c] && !last)
                                pad(f, width[c] - w);
                        fputs(last ? "\n" : "  ", f);
                }
}

static void ctl_table_done(ctl_table *t) {
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->warn);
}

int ctl_table_finish(ctl_table *t, int r, const char *empty, FILE *f) {
        if (r == 0) {
                if (t->n_rows == 0 && empty) {
                        if (style_legend)
                                fputs(empty, f);
                } else
                        ctl_table_print(t, f);
        }
        ctl_table_done(t);
        return r;
}
