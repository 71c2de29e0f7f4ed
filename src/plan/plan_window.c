/* plan_window: the window op {"window": {"partition_by", "order_by",
 * "functions"}}: keys and arguments that are expressions become hidden
 * columns, the logical op is bound and typed, and a task runs it with
 * df_window over the rows a stage gathered (one partition's rows meet in
 * one task). The plan-level checks of a task spec's window are here too. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

static int win_error(struct fr_error *err, int index, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int win_error(struct fr_error *err, int index, const char *member, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fr_error_setk(err, FR_EINVAL, "invalid-plan", "ops[%d]: window: %s", index, msg);
    snprintf(err->field, sizeof(err->field), "%s", member);
    return FR_EINVAL;
}

static bool strings_only(json_t *a, size_t max)
{
    if (!a)
        return true;
    if (!json_is_array(a) || json_array_size(a) > max)
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

/* ---- expansion of expression keys and arguments --------------------------- */

struct expansion {
    const struct df_schema *in;
    json_t *pre, *drop;
    json_t *aliases; /* the functions' output names: a hidden name avoids them too */
    int n;
};

static bool taken(const struct expansion *x, const char *name)
{
    if (df_schema_find(x->in, name) >= 0)
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(x->aliases, i, v) if (strcmp(json_string_value(v), name) == 0) return true;
    return false;
}

/* new: the output names of the functions fs (those that parse) */
static json_t *aliases_of(json_t *fs, const struct df_schema *in)
{
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(fs); i++) {
        struct df_window_call c;
        struct fr_error err;
        fr_error_init(&err);
        if (df_window_call_parse(json_string_value(json_array_get(fs, i)), in, &c, &err) == FR_OK)
            json_array_append_new(out, json_string(c.name));
        df_window_call_cleanup(&c);
    }
    return out;
}

/* The name of a hidden column for expr (a with_column is added for it). */
static const char *hide(struct expansion *x, const char *expr)
{
    char *name = fr_xasprintf("__win%d", x->n++);
    while (taken(x, name)) {
        char *longer = fr_xasprintf("%s_", name);
        free(name);
        name = longer;
    }
    json_array_append_new(x->pre,
                          json_pack("{s{ss ss}}", "with_column", "name", name, "expr", expr));
    json_array_append_new(x->drop, json_string(name));
    free(name);
    return json_string_value(json_array_get(x->drop, json_array_size(x->drop) - 1));
}

/* True when text binds to a bare column of in; false when it is an
 * expression; -1 when it does not bind (the parse reports it). */
static int is_column(const char *text, const struct df_schema *in)
{
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (df_expr_parse(text, in, &e, &err) != FR_OK)
        return -1;
    int col = df_expr_column_index(e);
    df_expr_free(e);
    return col >= 0;
}

static int expand_keys(struct expansion *x, json_t *keys, json_t *out, bool sort)
{
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        const char *key = json_string_value(k);
        size_t len = sort ? plan__sort_key_expr_len(key) : strlen(key);
        char *expr = fr_xstrndup(key, len);
        int col = is_column(expr, x->in);
        if (col < 0) {
            free(expr);
            return -1;
        }
        if (col)
            json_array_append(out, k);
        else
            json_array_append_new(out, json_sprintf("%s%s", hide(x, expr), key + len));
        free(expr);
    }
    return 0;
}

/* new: a function's text with its argument replaced by a hidden column and
 * its name made explicit; a borrowed copy of text when nothing changes. */
static json_t *expand_function(struct expansion *x, json_t *f)
{
    struct df_window_call c;
    struct fr_error err;
    fr_error_init(&err);
    json_t *out = NULL;
    if (df_window_call_parse(json_string_value(f), x->in, &c, &err) == FR_OK) {
        if (!c.arg_text || c.arg >= 0) {
            out = json_incref(f);
        } else {
            char *arg = plan__quote_ident(hide(x, c.arg_text)), *name = plan__quote_ident(c.name);
            char off[32] = "";
            if (c.func == DF_WIN_LAG || c.func == DF_WIN_LEAD)
                snprintf(off, sizeof(off), ", %lld", (long long)c.offset);
            out = json_sprintf("%s(%s%s%s%s) as %s", df_window_func_name(c.func), arg, off,
                               c.default_text ? ", " : "", c.default_text ? c.default_text : "",
                               name);
            free(arg);
            free(name);
        }
    }
    df_window_call_cleanup(&c);
    return out;
}

json_t *plan__expand_window(json_t *jop, const struct df_schema *in)
{
    json_t *w = json_object_get(jop, "window");
    if (!json_is_object(w) || json_object_size(jop) != 1)
        return NULL;
    json_t *pb = json_object_get(w, "partition_by"), *ob = json_object_get(w, "order_by");
    json_t *fs = json_object_get(w, "functions");
    if (!strings_only(pb, FR_MAX_COLUMNS) || !strings_only(ob, FR_MAX_COLUMNS) ||
        !strings_only(fs, DF_WINDOW_MAX_FUNCS) || !fs)
        return NULL;
    struct expansion x = {in, json_array(), json_array(), aliases_of(fs, in), 0};
    json_t *npb = json_array(), *nob = json_array(), *nfs = json_array(), *out = NULL;
    bool ok = (!pb || expand_keys(&x, pb, npb, false) == 0) &&
              (!ob || expand_keys(&x, ob, nob, true) == 0);
    for (size_t i = 0; ok && i < json_array_size(fs); i++) {
        json_t *f = expand_function(&x, json_array_get(fs, i));
        ok = f != NULL;
        if (f)
            json_array_append_new(nfs, f);
    }
    if (ok && json_array_size(x.drop)) {
        json_t *nw = json_pack("{so}", "functions", nfs);
        nfs = NULL;
        if (pb)
            json_object_set(nw, "partition_by", npb);
        if (ob)
            json_object_set(nw, "order_by", nob);
        out = x.pre;
        x.pre = NULL;
        json_array_append_new(out, json_pack("{so}", "window", nw));
        json_array_append_new(out, json_pack("{sO}", "drop", x.drop));
    }
    json_decref(npb);
    json_decref(nob);
    json_decref(nfs);
    json_decref(x.pre);
    json_decref(x.drop);
    json_decref(x.aliases);
    return out;
}

/* ---- the logical op ------------------------------------------------------- */

static int parse_partition(json_t *pb, const struct df_schema *in, int index, struct lop *op,
                           struct fr_error *err)
{
    op->nby = (int)json_array_size(pb);
    op->by = fr_xcalloc((size_t)op->nby + 1, sizeof(char *));
    for (int i = 0; i < op->nby; i++) {
        const char *text = json_string_value(json_array_get(pb, (size_t)i));
        df_expr *e = NULL;
        int rc = plan__bind_expr(text, in, &e, err);
        if (rc != FR_OK)
            return rc;
        int col = df_expr_column_index(e);
        df_expr_free(e);
        if (col < 0)
            return win_error(err, index, "partition_by", "partition key '%s' is not a column",
                             text);
        op->by[i] = fr_xstrdup(in->fields[col].name);
    }
    return FR_OK;
}

/* Each function bound against in; its column added to op->schema. */
static int parse_functions(json_t *fs, const struct df_schema *in, int index, struct lop *op,
                           struct fr_error *err)
{
    op->naggs = (int)json_array_size(fs);
    op->aggs = fr_xcalloc((size_t)op->naggs + 1, sizeof(char *));
    df_name_map *seen = df_schema_index(&op->schema);
    int rc = FR_OK;
    for (int i = 0; i < op->naggs && rc == FR_OK; i++) {
        const char *text = json_string_value(json_array_get(fs, (size_t)i));
        op->aggs[i] = fr_xstrdup(text);
        struct df_window_call c;
        rc = df_window_call_parse(text, in, &c, err);
        if (rc == FR_OK && c.arg_text && c.arg < 0)
            rc = win_error(err, index, "functions", "the argument of '%s' is not a column", text);
        if (rc == FR_OK && df_name_map_get(seen, c.name) >= 0)
            rc = win_error(err, index, "functions",
                           "'%s' makes the column '%s', which the input or another function "
                           "already has; add an alias with 'as'",
                           text, c.name);
        if (rc == FR_OK) {
            df_name_map_put(seen, c.name, op->schema.nfields);
            df_schema_add(&op->schema, c.name, c.type);
        }
        df_window_call_cleanup(&c);
    }
    df_name_map_free(seen);
    return rc;
}

int plan__parse_window(json_t *spec, const struct df_schema *in, int index, struct lop *op,
                       struct fr_error *err)
{
    static const char *const members[] = {"partition_by", "order_by", "functions", NULL};
    op->kind = LOP_WINDOW;
    df_schema_init(&op->schema);
    if (!json_is_object(spec))
        return win_error(err, index, "window",
                         "needs {\"partition_by\": [...], \"order_by\": [...], \"functions\": "
                         "[...]}%s",
                         "");
    if (plan__check_members(spec, "window", members, err) != FR_OK)
        return win_error(err, index, err->field, "%s", err->message);
    json_t *pb = json_object_get(spec, "partition_by"), *ob = json_object_get(spec, "order_by");
    json_t *fs = json_object_get(spec, "functions");
    if (!strings_only(pb, FR_MAX_COLUMNS) || !strings_only(ob, FR_MAX_COLUMNS))
        return win_error(
            err, index, pb && !strings_only(pb, FR_MAX_COLUMNS) ? "partition_by" : "order_by",
            "partition_by and order_by must be lists of at most %d strings", FR_MAX_COLUMNS);
    if (!fs || !strings_only(fs, DF_WINDOW_MAX_FUNCS) || json_array_size(fs) == 0)
        return win_error(err, index, "functions",
                         "functions must be a list of 1 to %d strings like \"rank() as r\"",
                         DF_WINDOW_MAX_FUNCS);
    int rc = parse_partition(pb, in, index, op, err);
    if (rc == FR_OK && json_array_size(ob))
        rc = plan__parse_sort_list(ob, in, index, op, err);
    op->kind = LOP_WINDOW;
    df_schema_cleanup(&op->schema);
    df_schema_copy(&op->schema, in);
    if (rc == FR_OK)
        rc = parse_functions(fs, in, index, op, err);
    return rc;
}

/* ---- the task's op -------------------------------------------------------- */

json_t *plan__window_step(const struct lop *op)
{
    json_t *pb = json_array(), *ob = json_array(), *fs = json_array();
    for (int i = 0; i < op->nby; i++)
        json_array_append_new(pb, json_string(op->by[i]));
    for (int i = 0; i < op->nkeys; i++)
        json_array_append_new(ob, json_pack("{ss sb si}", "col", op->keys[i], "desc", op->desc[i],
                                            "nulls_first", op->nulls_first[i]));
    for (int i = 0; i < op->naggs; i++)
        json_array_append_new(fs, json_string(op->aggs[i]));
    return json_pack("{s{so so so}}", "window", "partition_by", pb, "order_by", ob, "functions",
                     fs);
}

int plan__check_window(json_t *spec, struct fr_error *err)
{
    json_t *ob = json_object_get(spec, "order_by"), *fs = json_object_get(spec, "functions");
    bool ok =
        json_is_object(spec) && strings_only(json_object_get(spec, "partition_by"), FR_MAX_COLUMNS);
    ok = ok && (!ob || (json_is_array(ob) && json_array_size(ob) <= FR_MAX_COLUMNS));
    for (size_t i = 0; ok && i < json_array_size(ob); i++)
        ok = json_is_object(json_array_get(ob, i));
    ok = ok && fs && json_array_size(fs) > 0 && strings_only(fs, DF_WINDOW_MAX_FUNCS);
    if (!ok)
        return fr_error_setk(err, FR_EINVAL, "invalid-task",
                             "a window needs partition_by (names), order_by "
                             "(key objects) and functions (1 to %d texts)",
                             DF_WINDOW_MAX_FUNCS);
    return FR_OK;
}

static int bind_calls(json_t *fs, const struct df_table *t, struct df_window_call *calls, int n,
                      struct fr_error *err)
{
    struct df_schema s;
    df_schema_of_table(&s, t);
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        rc = df_window_call_parse(json_string_value(json_array_get(fs, (size_t)i)), &s, &calls[i],
                                  err);
        if (rc == FR_OK && calls[i].arg_text && calls[i].arg < 0)
            rc = fr_error_set(err, FR_EINVAL, "window: the argument of '%s' is not a column",
                              calls[i].name);
        /* the result table appends the calls' columns: a name the table or
         * an earlier call has would make a table with two columns of it */
        bool again = rc == FR_OK && df_schema_find(&s, calls[i].name) >= 0;
        for (int k = 0; rc == FR_OK && !again && k < i; k++)
            again = strcmp(calls[k].name, calls[i].name) == 0;
        if (again)
            rc = fr_error_setk(err, FR_EINVAL, "invalid-task",
                               "window: the function '%s' makes the column '%s', which the "
                               "input or another function already has",
                               json_string_value(json_array_get(fs, (size_t)i)), calls[i].name);
    }
    df_schema_cleanup(&s);
    return rc;
}

int plan__run_window(json_t *spec, struct df_table **t, struct df_exec *ex, struct fr_error *err)
{
    json_t *pb = json_object_get(spec, "partition_by"), *fs = json_object_get(spec, "functions");
    int npart = (int)json_array_size(pb), nkeys = 0, ncalls = (int)json_array_size(fs);
    int *part = fr_xcalloc((size_t)npart + 1, sizeof(int));
    struct df_window_call *calls = fr_xcalloc((size_t)ncalls + 1, sizeof(*calls));
    struct df_sort_key *keys = NULL;
    int rc = FR_OK;
    for (int i = 0; i < npart && rc == FR_OK; i++) {
        const char *name = json_string_value(json_array_get(pb, (size_t)i));
        if ((part[i] = name ? df_table_find(*t, name) : -1) < 0)
            rc = fr_error_set(err, FR_EINVAL, "window: no column '%s'", name ? name : "?");
    }
    if (rc == FR_OK)
        rc = plan__sort_keys_json(json_object_get(spec, "order_by"), *t, ex->opts->nulls_first,
                                  &keys, &nkeys, err);
    if (rc == FR_OK)
        rc = bind_calls(fs, *t, calls, ncalls, err);
    struct df_table *res = NULL;
    if (rc == FR_OK)
        rc = df_window(*t, part, npart, keys, nkeys, calls, ncalls, ex, &res, err);
    if (rc == FR_OK) {
        df_table_free(*t);
        *t = res;
    }
    for (int i = 0; i < ncalls; i++)
        df_window_call_cleanup(&calls[i]);
    free(calls);
    free(keys);
    free(part);
    return rc;
}
