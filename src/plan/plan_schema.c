/* plan_schema: binding expressions at planning time (sorts on expressions
 * rewritten into hidden columns), the output schema of a join, named exactly
 * as the engine's df_join names its columns, and the checks of user plan
 * JSON that several parsers share (members, column limits). */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *plan__quote_ident(const char *name)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"')
            fr_buf_putc(&b, '"');
        fr_buf_putc(&b, *p);
    }
    fr_buf_putc(&b, '"');
    return fr_buf_steal(&b, NULL);
}

int plan__bind_expr(const char *text, const struct df_schema *s, df_expr **out,
                    struct fr_error *err)
{
    int rc = df_expr_parse(text, s, out, err);
    if (rc != FR_OK)
        plan__kind_default(err, "invalid-expression");
    return rc;
}

/* The length of a sort key's expression, without " desc", " asc",
 * " nulls first" or " nulls last" at its end. */
size_t plan__sort_key_expr_len(const char *key)
{
    static const char *const suffixes[] = {" desc", " asc", " nulls first", " nulls last"};
    size_t len = strlen(key);
    for (bool again = true; again;) {
        again = false;
        while (len && key[len - 1] == ' ')
            len--;
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
            size_t sl = strlen(suffixes[i]);
            if (len > sl && strncasecmp(key + len - sl, suffixes[i], sl) == 0) {
                len -= sl;
                again = true;
            }
        }
    }
    return len;
}

/* new: "__sort<i>", with '_' appended until no input column has the name
 * (the hidden column would replace it, and the drop remove it). Hidden names
 * of different keys differ in their digits, so they never meet. */
static char *hidden_sort_name(const struct df_schema *in, size_t i)
{
    char *name = fr_xasprintf("__sort%zu", i);
    while (df_schema_find(in, name) >= 0) {
        char *longer = fr_xasprintf("%s_", name);
        free(name);
        name = longer;
    }
    return name;
}

/* A sort on expressions ("length(name) desc") becomes with_column ops that
 * compute hidden key columns, the sort on them, and a drop. NULL when
 * every key is a plain column (or a key does not bind, or is not a string:
 * the sort reports it). */
json_t *plan__expand_sort(json_t *jop, const struct df_schema *in)
{
    json_t *keys = json_object_get(jop, "sort");
    if (!json_is_array(keys) || json_object_size(jop) != 1)
        return NULL;
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        if (!json_is_string(k))
            return NULL;
    }
    json_t *pre = json_array(), *sort = json_array(), *drop = json_array();
    json_array_foreach(keys, i, k)
    {
        const char *key = json_string_value(k);
        size_t len = plan__sort_key_expr_len(key);
        char *expr = fr_xstrndup(key, len);
        df_expr *e = NULL;
        struct fr_error err;
        fr_error_init(&err);
        bool column = df_expr_parse(expr, in, &e, &err) != FR_OK || df_expr_column_index(e) >= 0;
        df_expr_free(e);
        if (column) {
            json_array_append(sort, k);
        } else {
            char *name = hidden_sort_name(in, i);
            json_array_append_new(
                pre, json_pack("{s{ss ss}}", "with_column", "name", name, "expr", expr));
            json_array_append_new(sort, json_sprintf("%s%s", name, key + len));
            json_array_append_new(drop, json_string(name));
            free(name);
        }
        free(expr);
    }
    json_t *out = NULL;
    if (json_array_size(drop)) {
        out = pre;
        json_array_append_new(out, json_pack("{sO}", "sort", sort));
        json_array_append_new(out, json_pack("{sO}", "drop", drop));
    } else {
        json_decref(pre);
    }
    json_decref(sort);
    json_decref(drop);
    return out;
}

static int key_error(struct fr_error *err, const char *side, const char *name)
{
    fr_error_setk(err, FR_EINVAL, "invalid-plan", "join: the %s side has no column '%s'", side,
                  name);
    snprintf(err->field, sizeof(err->field), "%s", name);
    return FR_EINVAL;
}

static bool numeric(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64;
}

/* Right names that clash get the suffix appended again and again; past this
 * many tries the plan is refused rather than growing names without end. */
#define JOIN_SUFFIX_TRIES 64

/* new: name with suffix appended until it is not in used, or NULL after
 * JOIN_SUFFIX_TRIES (the same names as the engine's df_join gives). */
static char *join_name(const df_name_map *used, const char *name, const char *suffix)
{
    char *out = fr_xstrdup(name);
    for (int tries = 0; df_name_map_get(used, out) >= 0; tries++) {
        if (tries == JOIN_SUFFIX_TRIES) {
            free(out);
            return NULL;
        }
        char *longer = fr_xasprintf("%s%s", out, suffix);
        free(out);
        out = longer;
    }
    return out;
}

/* Output columns of the right side, deduplicated against used. */
static int add_right(const struct df_schema *r, const int *rkey, bool merge_keys,
                     const char *suffix, df_name_map *used, struct df_schema *out,
                     struct fr_error *err)
{
    for (int i = 0; i < r->nfields; i++) {
        if (merge_keys && rkey[i])
            continue;
        char *name = join_name(used, r->fields[i].name, suffix);
        if (!name) {
            fr_error_setk(err, FR_EINVAL, "invalid-plan",
                          "join: the right column '%s' still clashes after %d suffixes '%s'; "
                          "choose another suffix",
                          r->fields[i].name, JOIN_SUFFIX_TRIES, suffix);
            snprintf(err->field, sizeof(err->field), "suffix");
            return FR_EINVAL;
        }
        df_name_map_put(used, name, out->nfields);
        df_schema_add(out, name, r->fields[i].type);
        free(name);
    }
    return FR_OK;
}

int plan__join_schema(const struct df_schema *l, const struct df_schema *r, char **left_on,
                      char **right_on, int nkeys, enum df_join_how how, bool merge_keys,
                      const char *suffix, struct df_schema *out, struct fr_error *err)
{
    df_schema_init(out);
    int *rkey = fr_xcalloc((size_t)r->nfields + 1, sizeof(int));
    bool *widen = fr_xcalloc((size_t)l->nfields + 1, sizeof(bool));
    df_name_map *lidx = df_schema_index(l), *ridx = df_schema_index(r), *used = NULL;
    int result = FR_EINVAL;
    if (!suffix || !suffix[0]) {
        result = plan__check_error(err, "suffix", "join: suffix must be a non-empty string%s", "");
        goto out;
    }
    for (int k = 0; k < nkeys; k++) {
        int li = df_name_map_get(lidx, left_on[k]), ri = df_name_map_get(ridx, right_on[k]);
        if (li < 0) {
            key_error(err, "left", left_on[k]);
            goto out;
        }
        if (ri < 0) {
            key_error(err, "right", right_on[k]);
            goto out;
        }
        df_type lt = l->fields[li].type, rt = r->fields[ri].type;
        if (lt != rt && !(numeric(lt) && numeric(rt))) {
            fr_error_setk(err, FR_EINVAL, "invalid-plan",
                          "join key '%s' is %s on the left and %s on the right", left_on[k],
                          df_type_name(lt), df_type_name(rt));
            goto out;
        }
        rkey[ri] = 1;
        /* a merged int64/float64 key of a right or outer join holds right-side
         * values too: the engine widens it to float64 */
        if (merge_keys && lt != rt && (how == DF_JOIN_RIGHT || how == DF_JOIN_OUTER))
            widen[li] = true;
    }
    used = df_name_map_new();
    for (int i = 0; i < l->nfields; i++) {
        df_name_map_put(used, l->fields[i].name, i);
        df_schema_add(out, l->fields[i].name, widen[i] ? DF_TYPE_FLOAT64 : l->fields[i].type);
    }
    if (how != DF_JOIN_SEMI && how != DF_JOIN_ANTI &&
        (result = add_right(r, rkey, merge_keys, suffix, used, out, err)) != FR_OK)
        goto out;
    result = plan__check_columns(out->nfields, "the join's output", err);
out:
    free(rkey);
    free(widen);
    df_name_map_free(lidx);
    df_name_map_free(ridx);
    df_name_map_free(used);
    if (result != FR_OK)
        df_schema_cleanup(out);
    return result;
}

void plan__kind_default(struct fr_error *err, const char *kind)
{
    if (err && !err->kind[0])
        snprintf(err->kind, sizeof(err->kind), "%s", kind);
}

int plan__check_error(struct fr_error *err, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, FR_EINVAL, "invalid-plan", fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof(err->field), "%s", member);
    return FR_EINVAL;
}

int plan__check_columns(int64_t n, const char *what, struct fr_error *err)
{
    if (n <= FR_MAX_COLUMNS)
        return FR_OK;
    fr_error_setk(err, FR_EVALIDATION, "too-many-columns",
                  "%s has %lld columns; at most %d are allowed", what, (long long)n,
                  FR_MAX_COLUMNS);
    return FR_EVALIDATION;
}

int plan__check_members(json_t *obj, const char *what, const char *const *allowed,
                        struct fr_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        int k = 0;
        while (allowed[k] && strcmp(allowed[k], key) != 0)
            k++;
        if (allowed[k])
            continue;
        struct fr_buf list;
        fr_buf_init(&list);
        for (k = 0; allowed[k]; k++)
            fr_buf_printf(&list, "%s%s", k ? ", " : "", allowed[k]);
        fr_error_setk(err, FR_EINVAL, "invalid-plan", "%s: unknown member '%s' (%s)", what, key,
                      list.data);
        fr_buf_cleanup(&list);
        snprintf(err->field, sizeof(err->field), "%s", key);
        return FR_EINVAL;
    }
    return FR_OK;
}

/* One key per op (groupby may come with agg), naming the keys otherwise;
 * lists longer than FR_MAX_COLUMNS are refused before any is bound. */
int plan__check_op_shape(json_t *jop, int index, struct fr_error *err)
{
    size_t nkeys = json_object_size(jop);
    bool grouped = nkeys == 2 && json_object_get(jop, "groupby") && json_object_get(jop, "agg");
    const char *key;
    json_t *v;
    if (nkeys != 1 && !grouped) {
        struct fr_buf names;
        fr_buf_init(&names);
        json_object_foreach(jop, key, v)
            fr_buf_printf(&names, "%s%s", names.len ? " and " : "", key);
        fr_error_setk(
            err, FR_EINVAL, "invalid-plan",
            "ops[%d]: an op is an object with one key (groupby may come with agg), not %s", index,
            nkeys ? names.data : "none");
        fr_buf_cleanup(&names);
        return FR_EINVAL;
    }
    json_object_foreach(jop, key, v)
    {
        char what[80];
        snprintf(what, sizeof(what), "ops[%d].%.40s", index, key);
        if (json_is_array(v) && plan__check_columns((int64_t)json_array_size(v), what, err))
            return err->status;
    }
    return FR_OK;
}
