/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control protocol's schema as data: field table, builders, total readers and the checker. */
#include <math.h>
#include <string.h>

#include "log.h"
#include "protocol.h"
#include "util.h"

const protocol_field_info protocol_fields[_PF_MAX] = {
#define PROTOCOL_FIELD_INFO(kind_, id, name_, type_, presence_, child_) \
        [PF_##kind_##_##id] = { .kind = PK_##kind_, .name = name_, .type = PROTO_##type_, \
                               .presence = PROTO_##presence_, .child = PK_##child_ },
        PROTOCOL_FIELDS(PROTOCOL_FIELD_INFO)
#undef PROTOCOL_FIELD_INFO
};

static const struct {
        const char *name;
        protocol_kind base;
} kinds[_PK_MAX] = {
#define PROTOCOL_KIND_INFO(id, name_, base_) [PK_##id] = { .name = name_, .base = PK_##base_ },
        PROTOCOL_KINDS(PROTOCOL_KIND_INFO)
#undef PROTOCOL_KIND_INFO
};

static const char *const csv_columns[_PC_MAX] = {
#define PROTOCOL_CSV_NAME(id, name) [PC_##id] = name,
        PROTOCOL_CSV_COLUMNS(PROTOCOL_CSV_NAME)
#undef PROTOCOL_CSV_NAME
};

int proto_field_named(protocol_kind kind, const char *name) {
        for (size_t f = 0; f < _PF_MAX; f++)
                if (protocol_fields[f].kind == kind && strcmp(protocol_fields[f].name, name) == 0)
                        return (int) f;
        log_error("The protocol has no field \"%s\" in %s: add it to protocol.h.", name, protocol_kind_name(kind));
        return -ENOENT;
}

const char *protocol_kind_name(protocol_kind k) {
        return k >= 0 && k < _PK_MAX ? kinds[k].name : "?";
}

protocol_kind protocol_kind_base(protocol_kind k) {
        return k >= 0 && k < _PK_MAX ? kinds[k].base : PK_NONE;
}

const char *protocol_type_name(protocol_type t) {
        static const char *const names[] = {
                [PROTO_U64] = "u64", [PROTO_DOUBLE] = "double", [PROTO_BOOL] = "bool", [PROTO_STRING] = "string",
                [PROTO_OBJECT] = "object", [PROTO_U64_ARRAY] = "u64[]", [PROTO_STRING_ARRAY] = "string[]",
                [PROTO_OBJECT_ARRAY] = "object[]", [PROTO_OBJECT_MAP] = "map",
        };
        return t < ELEMENTSOF(names) ? names[t] : "?";
}

const char *protocol_presence_name(protocol_presence p) {
        static const char *const names[] = {
                [PROTO_REQUIRED] = "required", [PROTO_NULLABLE] = "nullable", [PROTO_OPTIONAL] = "optional",
        };
        return p < ELEMENTSOF(names) ? names[p] : "?";
}

const char *protocol_csv_column_name(protocol_csv_column c) {
        return c < _PC_MAX ? csv_columns[c] : NULL;
}

/* --- building ------------------------------------------------------------------------------- */

/* A builder that passes a value of the wrong type is a bug the protocol tests catch (they check every
 * reply strictly); in the daemon it is logged, never fatal: an abort would leave knobs changed. */
static unsigned build_errors;

static bool type_ok(protocol_field f, protocol_type type, json_object *v) {
        if (f >= _PF_MAX)
                return false;
        if (v ? (type == PROTO_OBJECT ? protocol_fields[f].type >= PROTO_OBJECT : protocol_fields[f].type == type) :
                protocol_fields[f].presence == PROTO_NULLABLE)
                return true;
        build_errors++;
        log_error("Protocol field %s.%s (%s, %s) built as %s: a bug.", protocol_kind_name(protocol_fields[f].kind),
                  protocol_fields[f].name, protocol_type_name(protocol_fields[f].type),
                  protocol_presence_name(protocol_fields[f].presence), v ? protocol_type_name(type) : "null");
        return true;
}

static void add(json_object *o, protocol_field f, protocol_type type, json_object *v) {
        if (o && type_ok(f, type, v))
                oom_check_add(json_object_object_add(o, protocol_fields[f].name, v));
        else
                json_object_put(v);
}

void proto_add_u64(json_object *o, protocol_field f, uint64_t v) {
        add(o, f, PROTO_U64, oom_check(json_object_new_uint64(v)));
}

void proto_add_double(json_object *o, protocol_field f, double v) {
        /* JSON has no infinity or NaN */
        add(o, f, PROTO_DOUBLE, oom_check(json_object_new_double(isfinite(v) ? v : 0.0)));
}

void proto_add_bool(json_object *o, protocol_field f, bool v) {
        add(o, f, PROTO_BOOL, oom_check(json_object_new_boolean(v)));
}

void proto_add_string(json_object *o, protocol_field f, const char *s) {
        add(o, f, PROTO_STRING, s ? oom_check(json_object_new_string(s)) : NULL);
}

void proto_add_string_len(json_object *o, protocol_field f, const char *s, size_t len) {
        add(o, f, PROTO_STRING, oom_check(json_object_new_string_len(s, (int) MIN(len, (size_t) INT32_MAX))));
}

unsigned protocol_build_errors(void) {
        return build_errors;
}

void proto_add_null(json_object *o, protocol_field f) {
        add(o, f, f < _PF_MAX ? protocol_fields[f].type : PROTO_U64, NULL);
}

void proto_add(json_object *o, protocol_field f, json_object *v) {
        add(o, f, PROTO_OBJECT, v);
}

/* --- reading -------------------------------------------------------------------------------- */

json_object *proto_get(json_object *o, protocol_field f) {
        json_object *v;

        if (!o || !json_object_is_type(o, json_type_object) || f >= _PF_MAX)
                return NULL;
        if (!json_object_object_get_ex(o, protocol_fields[f].name, &v))
                return NULL;
        return v;   /* NULL for JSON null */
}

bool proto_has(json_object *o, protocol_field f) {
        return proto_get(o, f) != NULL;
}

static bool is_u64(json_object *v) {
        return v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0;
}

static bool is_number(json_object *v) {
        return v && (json_object_is_type(v, json_type_int) ||
                     (json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v))));
}

uint64_t proto_value_u64(json_object *v) {
        return is_u64(v) ? json_object_get_uint64(v) : 0;
}

const char *proto_value_str(json_object *v) {
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

uint64_t proto_u64(json_object *o, protocol_field f) {
        return proto_value_u64(proto_get(o, f));
}

double proto_double(json_object *o, protocol_field f) {
        json_object *v = proto_get(o, f);
        return is_number(v) ? json_object_get_double(v) : 0.0;
}

bool proto_bool(json_object *o, protocol_field f) {
        json_object *v = proto_get(o, f);
        return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

const char *proto_str(json_object *o, protocol_field f) {
        return proto_value_str(proto_get(o, f));
}

/* --- checking ------------------------------------------------------------------------------- */

static const char *json_type_word(json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_null: return "null";
        case json_type_boolean: return "a boolean";
        case json_type_double: return "a number";
        case json_type_int: return json_object_get_int64(v) < 0 ? "a negative number" : "a number";
        case json_type_object: return "an object";
        case json_type_array: return "an array";
        case json_type_string: return "a string";
        }
        return "something else";
}

/* The value, shortened, for a message. */
static const char *value_excerpt(json_object *v, char *buf, size_t size) {
        const char *s = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null";

        snprintf(buf, size, "%.40s%s", s ? s : "?", s && strlen(s) > 40 ? "..." : "");
        return buf;
}

static int fail(char *error, size_t size, const char *path, const char *what, json_object *v) {
        char excerpt[64];

        if (v)
                snprintf(error, size, "%s: %s expected, got %s (%s)", path, what, json_type_word(v),
                         value_excerpt(v, excerpt, sizeof excerpt));
        else
                snprintf(error, size, "%s: %s", path, what);
        return -EBADMSG;
}

static int check_kind(json_object *o, protocol_kind kind, bool strict, const char *path, int depth,
                      char *error, size_t size);

static bool kind_has(protocol_kind kind, protocol_field f) {
        for (protocol_kind k = kind; k != PK_NONE; k = protocol_kind_base(k))
                if (protocol_fields[f].kind == k)
                        return true;
        return false;
}

static int check_value(json_object *v, const protocol_field_info *fi, bool strict, const char *path, int depth,
                       char *error, size_t size) {
        char sub[272];   /* a path of at most 180, an index or key of at most 64, and brackets */
        int r;

        switch (fi->type) {
        case PROTO_U64:
                return is_u64(v) ? 0 : fail(error, size, path, "an integer >= 0", v);
        case PROTO_DOUBLE:
                return is_number(v) ? 0 : fail(error, size, path, "a number", v);
        case PROTO_BOOL:
                return json_object_is_type(v, json_type_boolean) ? 0 : fail(error, size, path, "true or false", v);
        case PROTO_STRING:
                return json_object_is_type(v, json_type_string) ? 0 : fail(error, size, path, "a string", v);
        case PROTO_OBJECT:
                if (!json_object_is_type(v, json_type_object))
                        return fail(error, size, path, "an object", v);
                return fi->child == PK_NONE ? 0 : check_kind(v, fi->child, strict, path, depth + 1, error, size);
        case PROTO_U64_ARRAY:
        case PROTO_STRING_ARRAY:
        case PROTO_OBJECT_ARRAY:
                if (!json_object_is_type(v, json_type_array))
                        return fail(error, size, path, "an array", v);
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *e = json_object_array_get_idx(v, i);

                        snprintf(sub, sizeof sub, "%.180s[%zu]", path, i);
                        if (fi->type == PROTO_U64_ARRAY && !is_u64(e))
                                return fail(error, size, sub, "an integer >= 0", e);
                        if (fi->type == PROTO_STRING_ARRAY && !json_object_is_type(e, json_type_string))
                                return fail(error, size, sub, "a string", e);
                        if (fi->type == PROTO_OBJECT_ARRAY) {
                                if (!json_object_is_type(e, json_type_object))
                                        return fail(error, size, sub, "an object", e);
                                r = check_kind(e, fi->child, strict, sub, depth + 1, error, size);
                                if (r < 0)
                                        return r;
                        }
                }
                return 0;
        case PROTO_OBJECT_MAP: {
                if (!json_object_is_type(v, json_type_object))
                        return fail(error, size, path, "an object", v);
                json_object_object_foreach(v, key, e) {
                        snprintf(sub, sizeof sub, "%.180s[\"%.64s\"]", path, key);
                        if (!json_object_is_type(e, json_type_object))
                                return fail(error, size, sub, "an object", e);
                        r = check_kind(e, fi->child, strict, sub, depth + 1, error, size);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        }
        return fail(error, size, path, "a known type", v);
}

static int check_kind(json_object *o, protocol_kind kind, bool strict, const char *path, int depth,
                      char *error, size_t size) {
        char sub[272];
        int r;

        /* the schema is 5 levels deep; anything deeper than this is not a reply of ours */
        if (depth > 16)
                return fail(error, size, path, "nested too deeply", NULL);
        for (protocol_field f = 0; f < _PF_MAX; f++) {
                const protocol_field_info *fi = &protocol_fields[f];
                json_object *v;

                if (!kind_has(kind, f))
                        continue;
                snprintf(sub, sizeof sub, "%.180s%s%.64s", path, *path ? "." : "", fi->name);
                if (!json_object_object_get_ex(o, fi->name, &v)) {
                        if (fi->presence == PROTO_OPTIONAL)
                                continue;
                        return fail(error, size, sub, "missing", NULL);
                }
                if (!v) {
                        if (fi->presence == PROTO_NULLABLE)
                                continue;
                        return fail(error, size, sub, "is null", NULL);
                }
                r = check_value(v, fi, strict, sub, depth, error, size);
                if (r < 0)
                        return r;
        }
        if (strict) {
                json_object_object_foreach(o, key, v) {
                        bool known = false;

                        (void) v;
                        for (protocol_field f = 0; f < _PF_MAX && !known; f++)
                                known = kind_has(kind, f) && strcmp(protocol_fields[f].name, key) == 0;
                        if (!known) {
                                snprintf(sub, sizeof sub, "%.180s%s%.64s", path, *path ? "." : "", key);
                                return fail(error, size, sub, "not in the protocol (src/shared/protocol.h)", NULL);
                        }
                }
        }
        return 0;
}

int protocol_check(json_object *o, protocol_kind kind, bool strict, char *error, size_t size) {
        if (!o || !json_object_is_type(o, json_type_object))
                return fail(error, size, protocol_kind_name(kind), "an object", o);
        return check_kind(o, kind, strict, "", 0, error, size);
}

protocol_kind protocol_result_kind(const char *verb, bool csv) {
        static const struct {
                const char *verb;
                protocol_kind kind;
        } verbs[] = {
                { PROTOCOL_VERB_STATUS,  PK_STATUS },
                { PROTOCOL_VERB_DEVICES, PK_DEVICES },
                { PROTOCOL_VERB_SHOW,    PK_SHOW },
                { PROTOCOL_VERB_EXPLAIN, PK_EXPLAIN },
                { PROTOCOL_VERB_TOP,     PK_TOP },
                { PROTOCOL_VERB_HISTORY, PK_HISTORY },
                { PROTOCOL_VERB_RELOAD,  PK_RELOAD },
                { PROTOCOL_VERB_RESTORE, PK_RESTORE },
                { PROTOCOL_VERB_METRICS, PK_METRICS },
        };

        if (!verb)
                return PK_NONE;
        if (csv && strcmp(verb, PROTOCOL_VERB_HISTORY) == 0)
                return PK_HISTORY_CSV;
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].verb, verb) == 0)
                        return verbs[i].kind;
        return PK_NONE;
}

int protocol_dump(FILE *f) {
        for (protocol_field i = 0; i < _PF_MAX; i++) {
                const protocol_field_info *fi = &protocol_fields[i];

                fprintf(f, "%s.%s %s %s", protocol_kind_name(fi->kind), fi->name, protocol_type_name(fi->type),
                        protocol_presence_name(fi->presence));
                if (fi->child != PK_NONE)
                        fprintf(f, " %s", protocol_kind_name(fi->child));
                fputc('\n', f);
        }
        for (protocol_kind k = 0; k < _PK_MAX; k++)
                if (kinds[k].base != PK_NONE)
                        fprintf(f, "%s : %s\n", kinds[k].name, kinds[kinds[k].base].name);
        for (protocol_csv_column c = 0; c < _PC_MAX; c++)
                fprintf(f, "csv %s\n", csv_columns[c]);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
