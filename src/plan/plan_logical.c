/* plan_logical: the JSON plan's ops parsed into logical ops, each bound
 * against the schema before it, so every unknown column, type error and
 * malformed op is a 400 at planning time. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PLAN_DEPTH 16

static int op_error(struct fr_error *err, int index, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int op_error(struct fr_error *err, int index, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fr_error_setk(err, FR_EINVAL, "invalid-plan", "ops[%d]: %s", index, msg);
    return FR_EINVAL;
}

static char **string_array(json_t *a, int *n)
{
    if (!json_is_array(a))
        return NULL;
    *n = (int)json_array_size(a);
    char **out = fr_xcalloc((size_t)*n + 1, sizeof(char *));
    for (int i = 0; i < *n; i++) {
        const char *s = json_string_value(json_array_get(a, (size_t)i));
        if (!s) {
            for (int k = 0; k < i; k++)
                free(out[k]);
            free(out);
            return NULL;
        }
        out[i] = fr_xstrdup(s);
    }
    return out;
}

/* Frees a NULL-terminated array from string_array (n is informative). */
static void free_strings(char **v, int n)
{
    (void)n;
    if (!v)
        return;
    for (int i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

/* new: names[0..n) mapped to their positions, for lookups in linear time. */
static df_name_map *name_set(char *const *names, int n)
{
    df_name_map *m = df_name_map_new();
    for (int k = 0; k < n; k++)
        df_name_map_put(m, names[k], k);
    return m;
}

static void add_item(struct lop *op, const char *expr, const char *col, const char *name)
{
    op->items = fr_xrealloc(op->items, sizeof(*op->items) * (size_t)(op->nitems + 1));
    struct lproj_item *it = &op->items[op->nitems++];
    it->expr = expr ? fr_xstrdup(expr) : NULL;
    it->col = col ? fr_xstrdup(col) : NULL;
    it->name = fr_xstrdup(name);
}

static int parse_filter(const char *text, const struct df_schema *in, struct lop *op,
                        struct fr_error *err)
{
    df_expr *e = NULL;
    int rc = plan__bind_expr(text, in, &e, err);
    if (rc != FR_OK)
        return rc;
    df_type t = df_expr_type(e);
    df_expr_free(e);
    if (t != DF_TYPE_BOOL && t != DF_TYPE_NULL) {
        fr_error_setk(err, FR_EINVAL, "invalid-expression",
                      "where: '%s' is %s, not a condition (bool)", text, df_type_name(t));
        return FR_EINVAL;
    }
    op->kind = LOP_FILTER;
    op->expr = fr_xstrdup(text);
    df_schema_copy(&op->schema, in);
    return FR_OK;
}

static int parse_select(json_t *list, const struct df_schema *in, int index, struct lop *op,
                        struct fr_error *err)
{
    op->kind = LOP_PROJECT;
    df_schema_init(&op->schema);
    if (!json_is_array(list) || json_array_size(list) == 0)
        return op_error(err, index, "select needs a non-empty list of expressions%s", "");
    size_t i;
    json_t *v;
    int rc = FR_OK;
    df_name_map *seen = df_name_map_new(); /* output names: duplicates in linear time */
    json_array_foreach(list, i, v)
    {
        const char *text = json_string_value(v);
        if (!text) {
            rc = op_error(err, index, "select items must be strings%s", "");
            break;
        }
        df_expr *e = NULL;
        if ((rc = plan__bind_expr(text, in, &e, err)) != FR_OK)
            break;
        const char *name = df_expr_name(e);
        if (df_name_map_get(seen, name) >= 0) {
            rc = op_error(err, index,
                          "select produces the column '%s' twice; add an alias "
                          "with 'as'",
                          name);
            df_expr_free(e);
            break;
        }
        df_name_map_put(seen, name, (int)i);
        int col = df_expr_column_index(e);
        if (col >= 0) /* a column, renamed or not, is passed by reference (no copy); a
                         rename keeps its text for explain */
            add_item(op, strcmp(in->fields[col].name, name) == 0 ? NULL : text,
                     in->fields[col].name, name);
        else
            add_item(op, text, NULL, name);
        df_schema_add(&op->schema, name, df_expr_type(e));
        df_expr_free(e);
    }
    df_name_map_free(seen);
    return rc;
}

static int parse_with_column(json_t *spec, const struct df_schema *in, int index, struct lop *op,
                             struct fr_error *err)
{
    static const char *const members[] = {"name", "expr", NULL};
    if (!json_is_object(spec))
        return op_error(err, index, "with_column needs {\"name\": ..., \"expr\": ...}%s", "");
    if (plan__check_members(spec, "with_column", members, err) != FR_OK)
        return op_error(err, index, "%s", err->message);
    const char *name = json_string_value(json_object_get(spec, "name"));
    const char *text = json_string_value(json_object_get(spec, "expr"));
    if (!name || !text || !name[0])
        return op_error(err, index, "with_column needs {\"name\": ..., \"expr\": ...}%s", "");
    df_expr *e = NULL;
    int rc = plan__bind_expr(text, in, &e, err);
    if (rc != FR_OK)
        return rc;
    df_type t = df_expr_type(e);
    df_expr_free(e);
    op->kind = LOP_PROJECT;
    df_schema_init(&op->schema);
    bool replaced = false;
    for (int i = 0; i < in->nfields; i++) {
        const char *col = in->fields[i].name;
        if (strcmp(col, name) == 0) {
            add_item(op, text, NULL, name);
            df_schema_add(&op->schema, name, t);
            replaced = true;
        } else {
            add_item(op, NULL, col, col);
            df_schema_add(&op->schema, col, in->fields[i].type);
        }
    }
    if (!replaced) {
        add_item(op, text, NULL, name);
        df_schema_add(&op->schema, name, t);
    }
    return FR_OK;
}

static int parse_drop(json_t *list, const struct df_schema *in, int index, struct lop *op,
                      struct fr_error *err)
{
    int n = 0;
    char **names = string_array(list, &n);
    if (!names)
        return op_error(err, index, "drop needs a list of column names%s", "");
    int rc = FR_OK;
    df_name_map *cols = df_schema_index(in), *gone = name_set(names, n);
    for (int k = 0; k < n && rc == FR_OK; k++) {
        if (df_name_map_get(cols, names[k]) < 0) {
            char *q = plan__quote_ident(names[k]);
            df_expr *e = NULL;
            rc = plan__bind_expr(q, in, &e, err); /* fails with a suggestion */
            df_expr_free(e);
            free(q);
            if (rc == FR_OK)
                rc = op_error(err, index, "drop: no column '%s'", names[k]);
        }
    }
    op->kind = LOP_PROJECT;
    df_schema_init(&op->schema);
    for (int i = 0; i < in->nfields && rc == FR_OK; i++) {
        if (df_name_map_get(gone, in->fields[i].name) < 0) {
            add_item(op, NULL, in->fields[i].name, in->fields[i].name);
            df_schema_add(&op->schema, in->fields[i].name, in->fields[i].type);
        }
    }
    df_name_map_free(cols);
    df_name_map_free(gone);
    free_strings(names, n);
    return rc;
}

static int parse_agg(json_t *keys, json_t *aggs, const struct df_schema *in, int index,
                     struct lop *op, struct fr_error *err)
{
    op->kind = LOP_AGG;
    df_schema_init(&op->schema);
    if (keys && !(op->keys = string_array(keys, &op->nkeys)))
        return op_error(err, index, "groupby needs a list of columns or expressions%s", "");
    if (aggs && !(op->aggs = string_array(aggs, &op->naggs)))
        return op_error(err, index, "agg needs a list of aggregate expressions%s", "");
    if (aggs && op->naggs == 0) /* distinct passes NULL: keys alone are its job */
        return op_error(err, index,
                        "agg needs at least one aggregate expression (distinct gives the keys "
                        "alone)%s",
                        "");
    if (op->nkeys == 0 && op->naggs == 0)
        return op_error(err, index, "an aggregation needs keys or aggregates%s", "");
    for (int i = 0; i < op->nkeys; i++) {
        df_expr *e = NULL;
        int rc = plan__bind_expr(op->keys[i], in, &e, err);
        if (rc != FR_OK)
            return rc;
        df_schema_add(&op->schema, df_expr_name(e), df_expr_type(e));
        df_expr_free(e);
    }
    for (int i = 0; i < op->naggs; i++) {
        struct df_agg_item it;
        memset(&it, 0, sizeof(it));
        int rc = df_agg_item_parse(op->aggs[i], in, &it, err);
        if (rc != FR_OK) {
            plan__kind_default(err, "invalid-expression");
            df_agg_item_cleanup(&it);
            return rc;
        }
        if (df_schema_find(&op->schema, it.name) >= 0) {
            df_agg_item_cleanup(&it);
            return op_error(err, index, "the aggregation produces '%s' twice; add an alias",
                            op->aggs[i]);
        }
        df_schema_add(&op->schema, it.name, df_expr_type(it.post));
        df_agg_item_cleanup(&it);
    }
    return FR_OK;
}

/* distinct [cols]: one row per distinct value of cols (all columns when the
 * list is empty), keeping the first row's other columns, in input order. */
static int parse_distinct(json_t *list, const struct df_schema *in, int index, struct lop *op,
                          struct fr_error *err)
{
    int n = 0;
    char **cols = json_is_true(list) ? fr_xcalloc(1, sizeof(char *)) : string_array(list, &n);
    if (!cols)
        return op_error(err, index, "distinct needs a list of column names (or [] for all)%s", "");
    json_t *keys = json_array(), *aggs = json_array();
    df_name_map *wanted = name_set(cols, n), *have = df_schema_index(in);
    for (int i = 0; i < in->nfields; i++) {
        bool key = n == 0 || df_name_map_get(wanted, in->fields[i].name) >= 0;
        char *q = plan__quote_ident(in->fields[i].name);
        if (key)
            json_array_append_new(keys, json_string(q));
        else
            json_array_append_new(aggs, json_sprintf("first(%s) as %s", q, q));
        free(q);
    }
    int rc = FR_OK;
    for (int k = 0; k < n && rc == FR_OK; k++)
        if (df_name_map_get(have, cols[k]) < 0)
            rc = op_error(err, index, "distinct: no column '%s'", cols[k]);
    df_name_map_free(wanted);
    df_name_map_free(have);
    if (rc == FR_OK)
        rc = parse_agg(keys, json_array_size(aggs) ? aggs : NULL, in, index, op, err);
    if (rc == FR_OK) { /* the aggregation puts keys first: restore the input's order */
        df_schema_cleanup(&op->schema);
        df_schema_copy(&op->schema, in);
        for (int i = 0; i < in->nfields; i++)
            add_item(op, NULL, in->fields[i].name, in->fields[i].name);
    }
    json_decref(keys);
    json_decref(aggs);
    free_strings(cols, n);
    return rc;
}

static int parse_sort(json_t *list, const struct df_schema *in, int index, struct lop *op,
                      struct fr_error *err)
{
    op->kind = LOP_SORT;
    df_schema_copy(&op->schema, in);
    if (!(op->keys = string_array(list, &op->nkeys)) || op->nkeys == 0)
        return op_error(err, index, "sort needs a list like [\"total desc\", \"vendor\"]%s", "");
    op->desc = fr_xcalloc((size_t)op->nkeys, sizeof(bool));
    op->nulls_first = fr_xcalloc((size_t)op->nkeys, sizeof(signed char));
    for (int i = 0; i < op->nkeys; i++) {
        char *s = op->keys[i];
        op->nulls_first[i] = -1; /* unset: the config's nulls_first decides */
        for (;;) {
            size_t len = strlen(s);
            while (len && s[len - 1] == ' ')
                s[--len] = '\0';
            if (len > 5 && strcasecmp(s + len - 5, " desc") == 0) {
                op->desc[i] = true;
                s[len - 5] = '\0';
            } else if (len > 4 && strcasecmp(s + len - 4, " asc") == 0) {
                s[len - 4] = '\0';
            } else if (len > 12 && strcasecmp(s + len - 12, " nulls first") == 0) {
                op->nulls_first[i] = 1;
                s[len - 12] = '\0';
            } else if (len > 11 && strcasecmp(s + len - 11, " nulls last") == 0) {
                op->nulls_first[i] = 0;
                s[len - 11] = '\0';
            } else {
                break;
            }
        }
        df_expr *e = NULL;
        int rc = plan__bind_expr(s, in, &e, err);
        if (rc != FR_OK)
            return rc;
        int col = df_expr_column_index(e);
        df_expr_free(e);
        if (col < 0)
            return op_error(err, index,
                            "sort by '%s': sort keys must be columns (derive it "
                            "with with_column first)",
                            s);
        free(op->keys[i]);
        op->keys[i] = fr_xstrdup(in->fields[col].name);
    }
    return FR_OK;
}

int plan__parse_sort_list(json_t *list, const struct df_schema *in, int index, struct lop *op,
                          struct fr_error *err)
{
    return parse_sort(list, in, index, op, err);
}

/* top_k: the k first rows of each group of `by` in `sort` order (the
 * db-benchmark's "largest two v3 per id6"). */
static int parse_topk(json_t *spec, const struct df_schema *in, int index, struct lop *op,
                      struct fr_error *err)
{
    static const char *const members[] = {"by", "sort", "k", NULL};
    json_t *k = json_object_get(spec, "k"), *sort = json_object_get(spec, "sort");
    if (json_is_object(spec) && plan__check_members(spec, "top_k", members, err) != FR_OK)
        return op_error(err, index, "%s", err->message);
    if (!json_is_object(spec) || !json_is_integer(k) || json_integer_value(k) < 0 || !sort)
        return op_error(err, index, "top_k needs {\"by\": [...], \"sort\": [...], \"k\": n}%s", "");
    int rc = parse_sort(sort, in, index, op, err);
    op->kind = LOP_TOPK;
    op->limit = json_integer_value(k);
    if (rc != FR_OK)
        return rc;
    json_t *by = json_object_get(spec, "by");
    if (by && !(op->by = string_array(by, &op->nby)))
        return op_error(err, index, "top_k.by must be a list of column names%s", "");
    for (int i = 0; i < op->nby; i++)
        if (df_schema_find(in, op->by[i]) < 0)
            return op_error(err, index, "top_k.by: no column '%s'", op->by[i]);
    return FR_OK;
}

static int parse_slice(json_t *v, bool is_limit, const struct df_schema *in, int index,
                       struct lop *op, struct fr_error *err)
{
    op->kind = LOP_SLICE;
    df_schema_copy(&op->schema, in);
    op->limit = -1;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return op_error(err, index, "%s needs a non-negative integer",
                        is_limit ? "limit" : "offset");
    if (is_limit)
        op->limit = json_integer_value(v);
    else
        op->offset = json_integer_value(v);
    return FR_OK;
}

/* how and suffix: strings when given; suffix not empty (an empty one could
 * never make a clashing name unique); on excludes left_on and right_on. */
static int join_members(json_t *spec, int index, struct lop *op, struct fr_error *err)
{
    json_t *h = json_object_get(spec, "how"), *sf = json_object_get(spec, "suffix");
    if (h && !json_is_string(h))
        return op_error(err, index, "join how must be a string (inner, left, right, ...)%s", "");
    const char *how = h ? json_string_value(h) : "inner";
    if (df_join_how_parse(how, &op->how) != FR_OK)
        return op_error(err, index, "join how '%s' is not inner, left, right, outer, semi or anti",
                        how);
    if (sf && (!json_is_string(sf) || json_string_length(sf) == 0 || json_string_length(sf) > 64 ||
               strlen(json_string_value(sf)) != json_string_length(sf)))
        return op_error(err, index, "join suffix must be a string of 1 to 64 characters%s", "");
    if (json_object_get(spec, "on") &&
        (json_object_get(spec, "left_on") || json_object_get(spec, "right_on")))
        return op_error(err, index, "join takes either \"on\" or \"left_on\" and \"right_on\"%s",
                        "");
    op->suffix = fr_xstrdup(sf ? json_string_value(sf) : "_right");
    return FR_OK;
}

static int parse_join(json_t *spec, const struct df_schema *in, const struct plan_env *env,
                      const struct df_options *opts, int depth, int index, struct lop *op,
                      struct fr_error *err)
{
    static const char *const members[] = {"right", "on",     "left_on", "right_on",
                                          "how",   "suffix", NULL};
    op->kind = LOP_JOIN;
    df_schema_init(&op->schema);
    if (!json_is_object(spec) || !json_object_get(spec, "right"))
        return op_error(err, index, "join needs {\"right\": <plan>, \"on\": [...]}%s", "");
    if (plan__check_members(spec, "join", members, err) != FR_OK)
        return op_error(err, index, "%s", err->message);
    int rc = join_members(spec, index, op, err);
    if (rc != FR_OK)
        return rc;
    int nl = 0, nr = 0;
    json_t *on = json_object_get(spec, "on");
    if (on) {
        op->merge_keys = true;
        op->left_on = string_array(on, &nl);
        op->right_on = string_array(on, &nr);
    } else {
        op->left_on = string_array(json_object_get(spec, "left_on"), &nl);
        op->right_on = string_array(json_object_get(spec, "right_on"), &nr);
    }
    if (!op->left_on || !op->right_on || nl == 0 || nl != nr)
        return op_error(err, index,
                        "join needs \"on\" or \"left_on\" and \"right_on\" lists of "
                        "the same length%s",
                        "");
    op->nkeys = nl;
    if ((rc = plan__check_columns(nl, "the join's key list", err)) != FR_OK)
        return rc;
    rc = plan__parse(json_object_get(spec, "right"), env, opts, depth + 1, &op->right, err);
    if (rc != FR_OK)
        return rc;
    return plan__join_schema(in, plan__lplan_schema(op->right), op->left_on, op->right_on, nl,
                             op->how, op->merge_keys, op->suffix, &op->schema, err);
}

static int parse_union(json_t *spec, const struct df_schema *in, const struct plan_env *env,
                       const struct df_options *opts, int depth, int index, struct lop *op,
                       struct fr_error *err)
{
    op->kind = LOP_UNION;
    df_schema_copy(&op->schema, in);
    int rc = plan__parse(spec, env, opts, depth + 1, &op->right, err);
    if (rc != FR_OK)
        return rc;
    const struct df_schema *o = plan__lplan_schema(op->right);
    if (o->nfields != in->nfields)
        return op_error(err, index,
                        "union: the other plan has a different number of "
                        "columns%s",
                        "");
    for (int i = 0; i < in->nfields; i++) {
        df_type a = in->fields[i].type, b = o->fields[i].type;
        bool numeric = (a == DF_TYPE_INT64 || a == DF_TYPE_FLOAT64) &&
                       (b == DF_TYPE_INT64 || b == DF_TYPE_FLOAT64);
        if (a != b && !numeric)
            return op_error(err, index,
                            "union: column '%s' differs in type between the two "
                            "plans",
                            in->fields[i].name);
        if (a != b) /* int64 with float64 widens to float64, as in SQL */
            op->schema.fields[i].type = DF_TYPE_FLOAT64;
    }
    return FR_OK;
}

static int parse_op(json_t *jop, const struct df_schema *in, const struct plan_env *env,
                    const struct df_options *opts, int depth, int index, struct lop *op,
                    struct fr_error *err)
{
    json_t *v;
    op->orig = json_incref(jop);
    if (!json_is_object(jop))
        return op_error(err, index, "each op must be an object like {\"where\": \"...\"}%s", "");
    int rc = plan__check_op_shape(jop, index, err);
    if (rc != FR_OK)
        return rc;
    if ((v = json_object_get(jop, "where"))) {
        if (!json_is_string(v))
            return op_error(err, index, "where needs an expression string%s", "");
        return parse_filter(json_string_value(v), in, op, err);
    }
    if ((v = json_object_get(jop, "select")))
        return parse_select(v, in, index, op, err);
    if ((v = json_object_get(jop, "with_column")))
        return parse_with_column(v, in, index, op, err);
    if ((v = json_object_get(jop, "drop")))
        return parse_drop(v, in, index, op, err);
    if ((v = json_object_get(jop, "groupby"))) {
        if (!json_object_get(jop, "agg"))
            return op_error(err, index,
                            "groupby needs agg: {\"groupby\": [...], \"agg\": [...]} (distinct "
                            "gives the keys alone)%s",
                            "");
        if (json_is_array(v) && json_array_size(v) == 0)
            return op_error(err, index, "groupby needs at least one key (agg alone gives totals)%s",
                            "");
        return parse_agg(v, json_object_get(jop, "agg"), in, index, op, err);
    }
    if ((v = json_object_get(jop, "agg")))
        return parse_agg(NULL, v, in, index, op, err);
    if ((v = json_object_get(jop, "distinct")))
        return parse_distinct(v, in, index, op, err);
    if ((v = json_object_get(jop, "sort")))
        return parse_sort(v, in, index, op, err);
    if ((v = json_object_get(jop, "top_k")))
        return parse_topk(v, in, index, op, err);
    if ((v = json_object_get(jop, "limit")))
        return parse_slice(v, true, in, index, op, err);
    if ((v = json_object_get(jop, "offset")))
        return parse_slice(v, false, in, index, op, err);
    if ((v = json_object_get(jop, "join")))
        return parse_join(v, in, env, opts, depth, index, op, err);
    if ((v = json_object_get(jop, "union")))
        return parse_union(v, in, env, opts, depth, index, op, err);
    if ((v = json_object_get(jop, "window")))
        return plan__parse_window(v, in, index, op, err);
    const char *key = json_object_iter_key(json_object_iter(jop));
    return op_error(err, index,
                    "unknown op '%s' (where, select, with_column, drop, groupby, agg, "
                    "distinct, sort, top_k, limit, offset, join, union, window)",
                    key ? key : "");
}

/* A with_column on 10000 columns, say, makes one too many. */
static int op_width(const struct lop *op, int index, struct fr_error *err)
{
    char what[48];
    snprintf(what, sizeof(what), "the output of ops[%d]", index);
    return plan__check_columns(op->schema.nfields, what, err);
}

int plan__parse(json_t *plan, const struct plan_env *env, const struct df_options *opts, int depth,
                struct lplan **out, struct fr_error *err)
{
    *out = NULL;
    if (depth > MAX_PLAN_DEPTH)
        return op_error(err, 0, "plans nest deeper than %s levels", "16");
    if (!json_is_object(plan))
        return op_error(err, 0, "a plan must be an object {\"source\": ..., \"ops\": [...]}%s", "");
    const char *key;
    json_t *val;
    json_object_foreach(plan, key, val)
    {
        if (strcmp(key, "source") != 0 && strcmp(key, "ops") != 0) {
            fr_error_setk(err, FR_EINVAL, "invalid-plan",
                          "unknown plan member '%s' (a plan has source and ops)", key);
            return FR_EINVAL;
        }
    }
    struct lplan *lp = fr_xcalloc(1, sizeof(*lp));
    lp->ops = fr_xcalloc(1, sizeof(struct lop));
    int rc = plan__source_parse(json_object_get(plan, "source"), env, opts, &lp->src, err);
    json_t *given = json_object_get(plan, "ops");
    if (rc == FR_OK && given && !json_is_array(given))
        rc = op_error(err, 0, "\"ops\" must be a list%s", "");
    json_t *ops = json_is_array(given) ? json_copy(given) : json_array();
    for (size_t i = 0; i < json_array_size(ops) && rc == FR_OK; i++) {
        lp->ops = fr_xrealloc(lp->ops, sizeof(struct lop) * (i + 2)); /* before taking `in` */
        memset(&lp->ops[i], 0, sizeof(struct lop));
        const struct df_schema *in = i == 0 ? &lp->src.schema : &lp->ops[i - 1].schema;
        json_t *expanded = plan__expand_sort(json_array_get(ops, i), in);
        if (!expanded)
            expanded = plan__expand_window(json_array_get(ops, i), in);
        if (expanded) {
            json_array_remove(ops, i);
            for (size_t k = 0; k < json_array_size(expanded); k++)
                json_array_insert(ops, i + k, json_array_get(expanded, k));
            json_decref(expanded);
        }
        lp->nops = (int)i + 1;
        rc = parse_op(json_array_get(ops, i), in, env, opts, depth, (int)i, &lp->ops[i], err);
        if (rc == FR_OK)
            rc = op_width(&lp->ops[i], (int)i, err);
    }
    json_decref(ops);
    if (rc != FR_OK) {
        plan__lplan_free(lp);
        return rc;
    }
    *out = lp;
    return FR_OK;
}

const struct df_schema *plan__lplan_schema(const struct lplan *lp)
{
    return lp->nops ? &lp->ops[lp->nops - 1].schema : &lp->src.schema;
}

void plan__lplan_free(struct lplan *lp)
{
    if (!lp)
        return;
    for (int i = 0; i < lp->nops; i++) {
        struct lop *op = &lp->ops[i];
        json_decref(op->orig);
        free(op->expr);
        for (int k = 0; k < op->nitems; k++) {
            free(op->items[k].expr);
            free(op->items[k].col);
            free(op->items[k].name);
        }
        free(op->items);
        free_strings(op->keys, op->nkeys);
        free_strings(op->aggs, op->naggs);
        free_strings(op->by, op->nby);
        free(op->desc);
        free(op->nulls_first);
        free_strings(op->left_on, op->nkeys);
        free_strings(op->right_on, op->nkeys);
        free(op->suffix);
        plan__lplan_free(op->right);
        df_schema_cleanup(&op->schema);
    }
    free(lp->ops);
    plan__source_cleanup(&lp->src);
    free(lp);
}
