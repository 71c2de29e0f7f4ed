/* config_validate: applies a JSON patch to a config as a whole. Every field
 * of the patch is checked (name, type, bounds), then the cross-field rules on
 * the merged result; any problem rejects the whole patch and all of them are
 * listed, so a client fixes its request in one round trip. */
#include "config_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cross-field rules "lo <= hi", checked on the merged config. */
struct cfg_lte_rule {
    const char *lo;
    const char *hi;
};
static const struct cfg_lte_rule cfg_lte_rules[] = {
    {"scan_tasks_min_size_bytes", "scan_tasks_max_size_bytes"},
};

/* List fields whose entries come from a fixed set, each at most once. */
struct cfg_choice_rule {
    const char *field;
    const char *choices[4]; /* NULL-terminated */
};
static const struct cfg_choice_rule cfg_choice_rules[] = {
    {"partition_codecs", {"lz4", "zstd", NULL}},
};

static const struct cfg_choice_rule *choice_rule(const char *field)
{
    for (size_t i = 0; i < sizeof(cfg_choice_rules) / sizeof(cfg_choice_rules[0]); i++)
        if (strcmp(cfg_choice_rules[i].field, field) == 0)
            return &cfg_choice_rules[i];
    return NULL;
}

static bool is_choice(const struct cfg_choice_rule *r, const char *v)
{
    for (int i = 0; r->choices[i]; i++)
        if (strcmp(r->choices[i], v) == 0)
            return true;
    return false;
}

static const char *json_kind_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction or exponent";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "an unknown value";
}

static void add_problem(json_t *problems, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_problem(json_t *problems, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *p = json_pack("{s:s, s:s}", "field", field, "message", msg);
    if (!p) /* a long name cut inside a UTF-8 sequence: still list the problem */
        p = json_pack("{s:s, s:s}", "field", field, "message", "invalid (name too long to show)");
    if (json_array_append_new(problems, p) != 0)
        abort(); /* bookkeeping allocation: out of memory */
}

static int apply_int(const struct cfg_field *f, json_t *v, struct cfg *out, json_t *problems)
{
    if (!json_is_integer(v)) {
        add_problem(problems, f->name, "must be an integer, got %s", json_kind_name(v));
        return -1;
    }
    int64_t x = (int64_t)json_integer_value(v);
    if (x < f->min || x > f->max) {
        add_problem(problems, f->name, "must be between %" PRId64 " and %" PRId64 ", got %" PRId64,
                    f->min, f->max, x);
        return -1;
    }
    *cfg__int_slot(out, f) = x;
    return 0;
}

static int apply_bool(const struct cfg_field *f, json_t *v, struct cfg *out, json_t *problems)
{
    if (!json_is_boolean(v)) {
        add_problem(problems, f->name, "must be true or false, got %s", json_kind_name(v));
        return -1;
    }
    *cfg__bool_slot(out, f) = json_is_true(v);
    return 0;
}

static int apply_list(const struct cfg_field *f, json_t *v, struct cfg *out, json_t *problems)
{
    if (!json_is_array(v)) {
        add_problem(problems, f->name, "must be an array of strings, got %s", json_kind_name(v));
        return -1;
    }
    size_t n = json_array_size(v);
    int bad = 0;
    if ((int64_t)n < f->min || (int64_t)n > f->max) {
        add_problem(problems, f->name,
                    "must have between %" PRId64 " and %" PRId64 " entries, got %zu", f->min,
                    f->max, n);
        bad = -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        if (!json_is_string(item)) {
            add_problem(problems, f->name, "entry %zu must be a string, got %s", i,
                        json_kind_name(item));
            bad = -1;
            continue;
        }
        const struct cfg_choice_rule *r = choice_rule(f->name);
        const char *sv = json_string_value(item);
        if (r && !is_choice(r, sv)) {
            char list[64] = "";
            for (int c = 0; r->choices[c]; c++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", c ? ", " : "",
                         r->choices[c]);
            add_problem(problems, f->name, "entry %zu must be one of %s, got '%.40s'", i, list, sv);
            bad = -1;
        }
        for (size_t j = 0; r && j < i; j++)
            if (json_is_string(json_array_get(v, j)) &&
                strcmp(json_string_value(json_array_get(v, j)), sv) == 0) {
                add_problem(problems, f->name, "entry %zu repeats '%.40s'", i, sv);
                bad = -1;
                break;
            }
    }
    if (bad)
        return bad;
    struct cfg_strlist *l = cfg__list_slot(out, f);
    cfg__strlist_cleanup(l);
    l->items = n ? fr_xcalloc(n, sizeof(char *)) : NULL;
    for (size_t i = 0; i < n; i++)
        l->items[l->n++] = fr_xstrdup(json_string_value(json_array_get(v, i)));
    return 0;
}

static int apply_field(const char *key, json_t *v, struct cfg *out, json_t *problems)
{
    int idx = cfg__field_index(key);
    if (idx < 0) {
        int near = cfg__suggest(key);
        if (near >= 0)
            add_problem(problems, key, "unknown field '%s'; did you mean '%s'?", key,
                        cfg_fields[near].name);
        else
            add_problem(problems, key, "unknown field '%s'", key);
        return -1;
    }
    const struct cfg_field *f = &cfg_fields[idx];
    switch (f->kind) {
    case CFG_INT:
        return apply_int(f, v, out, problems);
    case CFG_BOOL:
        return apply_bool(f, v, out, problems);
    case CFG_STRLIST:
        return apply_list(f, v, out, problems);
    }
    return -1;
}

/* True when the patch named field and its value was rejected: a cross rule
 * over such a field would only repeat the problem in other words. */
static bool field_failed(json_t *problems, const char *field)
{
    for (size_t i = 0; i < json_array_size(problems); i++) {
        json_t *p = json_array_get(problems, i);
        if (strcmp(json_string_value(json_object_get(p, "field")), field) == 0)
            return true;
    }
    return false;
}

static void check_cross_rules(const struct cfg *merged, json_t *patch, json_t *problems)
{
    for (size_t i = 0; i < sizeof(cfg_lte_rules) / sizeof(cfg_lte_rules[0]); i++) {
        const struct cfg_lte_rule *r = &cfg_lte_rules[i];
        if (field_failed(problems, r->lo) || field_failed(problems, r->hi))
            continue;
        const struct cfg_field *lo = &cfg_fields[cfg__field_index(r->lo)];
        const struct cfg_field *hi = &cfg_fields[cfg__field_index(r->hi)];
        int64_t a = *cfg__int_cslot(merged, lo), b = *cfg__int_cslot(merged, hi);
        if (a <= b)
            continue;
        /* Blame the field the patch named (the lower bound if both or neither). */
        const char *blame =
            json_object_get(patch, r->lo) || !json_object_get(patch, r->hi) ? r->lo : r->hi;
        add_problem(problems, blame, "%s (%" PRId64 ") must not be greater than %s (%" PRId64 ")",
                    r->lo, a, r->hi, b);
    }
}

int cfg_apply_json(const struct cfg *base, json_t *patch, struct cfg *out, json_t **errors)
{
    int result = FR_EVALIDATION;
    json_t *problems = json_array();
    cfg_copy(out, base);
    if (!json_is_object(patch)) {
        add_problem(problems, "", "the config must be a JSON object, got %s",
                    patch ? json_kind_name(patch) : "nothing");
        result = FR_EINVAL;
        goto out;
    }
    for (void *it = json_object_iter(patch); it; it = json_object_iter_next(patch, it)) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        apply_field(key, v, out, problems);
    }
    check_cross_rules(out, patch, problems);
    if (json_array_size(problems) == 0)
        result = FR_OK;
out:
    if (result != FR_OK) {
        cfg_cleanup(out);
        if (errors) {
            *errors = problems;
            problems = NULL;
        }
    } else if (errors) {
        *errors = NULL;
    }
    json_decref(problems);
    return result;
}
