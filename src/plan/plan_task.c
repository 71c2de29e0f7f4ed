/* plan_task: runs one task from its JSON spec: read the input (a byte range
 * of a file, inline rows, a stored partition or earlier outputs), apply the
 * core op, the fused pipeline and the sink. The same code runs on the local
 * runner's threads and on workers; the config arrives as ex->opts only. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

static int spec_error(struct fr_error *err, const char *what)
{
    return fr_error_set(err, FR_EINVAL, "malformed task spec: %s", what);
}

/* Evaluates e over the whole table, morsel by morsel. *out is new. */
static int eval_full(const df_expr *e, const struct df_table *t, struct df_exec *ex,
                     struct df_column **out, struct fr_error *err)
{
    int64_t m = ex->opts->morsel_size_rows > 0 ? ex->opts->morsel_size_rows : t->nrows;
    if (t->nrows <= m)
        return df_expr_eval(e, t, 0, t->nrows, ex, out, err);
    int n = (int)((t->nrows + m - 1) / m);
    struct df_table **parts = fr_xcalloc((size_t)n, sizeof(*parts));
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        int64_t start = (int64_t)i * m, len = t->nrows - start < m ? t->nrows - start : m;
        struct df_column *c = NULL;
        rc = df_expr_eval(e, t, start, len, ex, &c, err);
        if (rc == FR_OK) {
            parts[i] = df_table_new();
            df_table_add(parts[i], "v", c);
        }
    }
    struct df_table *all = NULL;
    if (rc == FR_OK)
        rc = df_table_concat(parts, n, &all, err);
    if (rc == FR_OK)
        *out = df_column_ref(all->cols[0]);
    df_table_free(all);
    for (int i = 0; i < n; i++)
        df_table_free(parts[i]);
    free(parts);
    return rc;
}

static int bind(const char *text, const struct df_table *t, df_expr **e, struct fr_error *err)
{
    struct df_schema s;
    df_schema_of_table(&s, t);
    int rc = df_expr_parse(text, &s, e, err);
    df_schema_cleanup(&s);
    return rc;
}

static int run_filter(const char *text, struct df_table **t, struct df_exec *ex,
                      struct fr_error *err)
{
    df_expr *e = NULL;
    int64_t *sel = NULL, nsel = 0, n = (*t)->nrows;
    int rc = bind(text, *t, &e, err);
    if (rc != FR_OK)
        goto out;
    int known = df_expr_filter_constant(e, *t);
    if (known >= 0) { /* settled by the columns' null counts: no row is looked at */
        if (known == 0) {
            int64_t no_row = 0;
            struct df_table *none = df_table_take(*t, &no_row, 0);
            df_table_free(*t);
            *t = none;
        }
        goto out;
    }
    sel = fr_try_malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!sel) {
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory filtering %lld rows", (long long)n);
        goto out;
    }
    if ((rc = df_exec_charge(ex, n * 8, err)) != FR_OK)
        goto out;
    int64_t m = ex->opts->morsel_size_rows > 0 ? ex->opts->morsel_size_rows : n;
    for (int64_t start = 0; start < n && rc == FR_OK; start += m)
        rc = df_expr_filter(e, *t, start, n - start < m ? n - start : m, ex, sel, &nsel, err);
    if (rc == FR_OK && nsel < n) {
        struct df_table *kept = df_table_take(*t, sel, nsel);
        df_table_free(*t);
        *t = kept;
    }
    df_exec_charge(ex, -n * 8, NULL);
out:
    free(sel);
    df_expr_free(e);
    return rc;
}

static int run_project(json_t *items, struct df_table **t, struct df_exec *ex, struct fr_error *err)
{
    struct df_table *out = df_table_new();
    int rc = FR_OK;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *name = json_string_value(json_object_get(it, "name"));
        const char *col = json_string_value(json_object_get(it, "col"));
        const char *text = json_string_value(json_object_get(it, "expr"));
        if (!name || (!col && !text)) {
            rc = spec_error(err, "project item");
            break;
        }
        if (col) {
            int idx = df_table_find(*t, col);
            if (idx < 0) {
                rc = fr_error_set(err, FR_EINVAL, "no column '%s' in the task's input", col);
                break;
            }
            df_table_add(out, name, df_column_ref((*t)->cols[idx]));
            continue;
        }
        df_expr *e = NULL;
        struct df_column *c = NULL;
        rc = bind(text, *t, &e, err);
        if (rc == FR_OK)
            rc = eval_full(e, *t, ex, &c, err);
        df_expr_free(e);
        if (rc != FR_OK)
            break;
        df_table_add(out, name, c);
    }
    if (rc != FR_OK) {
        df_table_free(out);
        return rc;
    }
    out->nrows = (*t)->nrows;
    df_table_free(*t);
    *t = out;
    return FR_OK;
}

int plan__sort_keys_json(json_t *keys, const struct df_table *t, bool default_nulls_first,
                         struct df_sort_key **out, int *n, struct fr_error *err)
{
    *n = (int)json_array_size(keys);
    *out = fr_xcalloc((size_t)*n + 1, sizeof(struct df_sort_key));
    for (int i = 0; i < *n; i++) {
        json_t *k = json_array_get(keys, (size_t)i);
        const char *col = json_string_value(json_object_get(k, "col"));
        int idx = col ? df_table_find(t, col) : -1;
        if (idx < 0) {
            free(*out);
            *out = NULL;
            return fr_error_set(err, FR_EINVAL, "sort: no column '%s'", col ? col : "?");
        }
        (*out)[i].col = idx;
        (*out)[i].desc = json_is_true(json_object_get(k, "desc"));
        json_int_t nf = json_integer_value(json_object_get(k, "nulls_first"));
        (*out)[i].nulls_first = nf < 0 ? default_nulls_first : nf == 1;
    }
    return FR_OK;
}

static int run_sort(json_t *keys, struct df_table **t, struct df_exec *ex, struct fr_error *err)
{
    struct df_sort_key *k = NULL;
    int n = 0;
    int rc = plan__sort_keys_json(keys, *t, ex->opts->nulls_first, &k, &n, err);
    if (rc != FR_OK)
        return rc;
    struct df_table *sorted = NULL;
    rc = df_sort(*t, k, n, ex, &sorted, err);
    free(k);
    if (rc == FR_OK) {
        df_table_free(*t);
        *t = sorted;
    }
    return rc;
}

static bool same_key(const struct df_table *t, const int *cols, int n, int64_t a, int64_t b)
{
    for (int k = 0; k < n; k++) {
        const struct df_column *c = t->cols[cols[k]];
        bool va = df_column_is_valid(c, a), vb = df_column_is_valid(c, b);
        if (va != vb)
            return false;
        if (!va)
            continue;
        if (c->type == DF_TYPE_STRING) {
            int64_t la, lb;
            const char *sa = df_column_string(c, a, &la), *sb = df_column_string(c, b, &lb);
            if (la != lb || memcmp(sa, sb, (size_t)la) != 0)
                return false;
        } else {
            size_t w = df_type_width(c->type);
            if (memcmp((const char *)c->values + (size_t)a * w,
                       (const char *)c->values + (size_t)b * w, w) != 0)
                return false;
        }
    }
    return true;
}

/* group_head: over rows sorted by the group keys, keeps the first k of each group. */
static int run_group_head(json_t *spec, struct df_table **t, struct fr_error *err)
{
    json_t *keys = json_object_get(spec, "keys");
    int n = (int)json_array_size(keys);
    int64_t k = json_integer_value(json_object_get(spec, "k"));
    int *cols = fr_xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(keys, (size_t)i));
        if ((cols[i] = name ? df_table_find(*t, name) : -1) < 0) {
            free(cols);
            return fr_error_set(err, FR_EINVAL, "top_k: no column '%s'", name ? name : "?");
        }
    }
    int64_t rows = (*t)->nrows, nsel = 0, run = 0;
    int64_t *sel = fr_try_malloc((size_t)(rows ? rows : 1) * sizeof(int64_t));
    if (!sel) {
        free(cols);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory in top_k");
    }
    for (int64_t r = 0; r < rows; r++) {
        run = r > 0 && same_key(*t, cols, n, r - 1, r) ? run + 1 : 0;
        if (run < k)
            sel[nsel++] = r;
    }
    struct df_table *kept = df_table_take(*t, sel, nsel);
    df_table_free(*t);
    *t = kept;
    free(sel);
    free(cols);
    return FR_OK;
}

/* top_k: the first k rows of each `by` group in `sort` order. Small k runs
 * in one hash pass (df_top_k); a large k sorts by (by, sort) and cuts. */
static int run_top_k(json_t *spec, struct df_table **t, struct df_exec *ex, struct fr_error *err)
{
    json_t *by = json_object_get(spec, "by");
    int64_t k = json_integer_value(json_object_get(spec, "k"));
    int nby = (int)json_array_size(by), nkeys = 0;
    int *cols = fr_xcalloc((size_t)nby + 1, sizeof(int));
    struct df_sort_key *keys = NULL;
    int rc = FR_OK;
    for (int i = 0; i < nby && rc == FR_OK; i++) {
        const char *name = json_string_value(json_array_get(by, (size_t)i));
        if ((cols[i] = name ? df_table_find(*t, name) : -1) < 0)
            rc = fr_error_set(err, FR_EINVAL, "top_k: no column '%s'", name ? name : "?");
    }
    if (rc == FR_OK)
        rc = plan__sort_keys_json(json_object_get(spec, "sort"), *t, ex->opts->nulls_first, &keys,
                                  &nkeys, err);
    if (rc == FR_OK && k <= 64) {
        struct df_table *kept = NULL;
        /* "order_groups": false on a partial top_k: a later one orders them */
        bool order = !json_is_false(json_object_get(spec, "order_groups"));
        rc = df_top_k_groups(*t, cols, nby, keys, nkeys, k, order, ex, &kept, err);
        if (rc == FR_OK) {
            df_table_free(*t);
            *t = kept;
        }
    } else if (rc == FR_OK) {
        json_t *all = json_array();
        for (int i = 0; i < nby; i++)
            json_array_append_new(all, json_pack("{sO sb si}", "col", json_array_get(by, (size_t)i),
                                                 "desc", 0, "nulls_first", -1));
        json_array_extend(all, json_object_get(spec, "sort"));
        rc = run_sort(all, t, ex, err);
        json_t *head = json_pack("{sO sI}", "keys", by, "k", (json_int_t)k);
        if (rc == FR_OK)
            rc = run_group_head(head, t, err);
        json_decref(head);
        json_decref(all);
    }
    free(keys);
    free(cols);
    return rc;
}

int plan__run_pipeline(json_t *pipeline, struct df_table **t, struct df_exec *ex,
                       struct fr_error *err)
{
    size_t i;
    json_t *op, *v;
    json_array_foreach(pipeline, i, op)
    {
        int rc;
        if ((v = json_object_get(op, "filter")))
            rc = run_filter(json_string_value(v), t, ex, err);
        else if ((v = json_object_get(op, "project")))
            rc = run_project(v, t, ex, err);
        else if ((v = json_object_get(op, "sort")))
            rc = run_sort(v, t, ex, err);
        else if ((v = json_object_get(op, "top_k")))
            rc = run_top_k(v, t, ex, err);
        else if ((v = json_object_get(op, "window")))
            rc = plan__run_window(v, t, ex, err);
        else if ((v = json_object_get(op, "slice"))) {
            int64_t off = json_integer_value(json_object_get(v, "offset"));
            int64_t lim = json_integer_value(json_object_get(v, "limit"));
            struct df_table *s = df_table_slice(*t, off, lim);
            df_table_free(*t);
            *t = s;
            rc = FR_OK;
        } else
            rc = spec_error(err, "unknown pipeline op");
        if (rc != FR_OK)
            return rc;
        if ((rc = df_exec_check_cancel(ex, err)) != FR_OK)
            return rc;
    }
    return FR_OK;
}
