/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One rule for untrusted text: strict UTF-8 checks, and escaping for terminals and log lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The length (1-4) of the well-formed UTF-8 character at s[0..n) and its code point, or 0 when the
 * bytes there are not one (overlong forms, surrogates and values past U+10FFFF are not). */
size_t utf8_char(const char *s, size_t n, uint32_t *ret_code_point);
/* Whether s[0..len) is well-formed UTF-8 (a NUL byte counts as a character). */
bool utf8_valid(const char *s, size_t len);
/* A malloc'd copy of s[0..len) with every byte that is not part of a well-formed character
 * replaced by U+FFFD, NUL-terminated, its length in *ret_len. NULL on out of memory. */
char *utf8_sanitize(const char *s, size_t len, size_t *ret_len);

/* s (NULL: "") for a terminal or a log line: "\" as "\\", C0 controls, DEL and bytes that are not UTF-8
 * as \xNN, C1 controls, line separators and format characters (bidi marks, overrides and isolates,
 * zero-width and other invisible characters: Unicode's Cf) as \uNNNN (\UNNNNNNNN past U+FFFF), everything
 * else as it is. Nothing in the result can move the cursor, change colours, start a line or change how the
 * text after it reads, and the result reads back one way: a literal "\x0a" shows as "\\x0a".
 * Returns buf, always NUL-terminated; a result longer than size is cut at a character boundary. */
const char *escape_text(const char *s, char *buf, size_t size);
/* The same, malloc'd (never NULL: aborts on out of memory, like xstrdup). */
char *escape_text_alloc(const char *s);
/* The same with "\\" left as it is, for a list another program reads back as names (wbtunectl --list=devices
 * for shell completion), where a backslash is a path's own character and "\\\\" would name another path. */
char *escape_text_keep_backslash_alloc(const char *s);
/* Text of several lines: each line escaped as escape_text() does, the "\n" between lines kept. */
int escape_lines_fputs(const char *s, FILE *f);
/* Lines whose maker escaped the untrusted parts with escape_text() already (the daemon's explain text):
 * the same, except that "\" stays as it is, so those escapes show once. */
int escape_made_lines_fputs(const char *s, FILE *f);
/* JSON text (json-c's, which writes C0 controls, '"' and '\' escaped) for a terminal: every DEL, C1
 * control, line separator and format character in it as \uNNNN (a surrogate pair past U+FFFF), bytes
 * that are not UTF-8 as \ufffd. Outside strings JSON is ASCII, so only strings change, and only in how
 * they are spelled. Malloc'd; aborts on out of memory. */
char *escape_json_alloc(const char *json);
