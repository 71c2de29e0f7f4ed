/* sql_compile_setop: UNION [ALL], INTERSECT and EXCEPT (column counts
 * checked, types unified, names from the left; NULLs equal as SQL's set
 * operations want), a SELECT without FROM (one row), and the ORDER BY /
 * LIMIT of a query that is not a plain block (VALUES: sql_compile_values.c). */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc__one_row(struct sc_ctx *c, struct sc_rel *out)
{
    (void)c;
    out->plan = json_pack("{s{s[{si}]} s[]}", "source", "rows", "#one", 0, "ops");
}

static bool numeric(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64;
}

/* The type both a and b fit in; false when there is none. */
bool sc__unify(df_type a, df_type b, df_type *out)
{
    if (a == b || b == DF_TYPE_NULL)
        *out = a;
    else if (a == DF_TYPE_NULL)
        *out = b;
    else if (numeric(a) && numeric(b))
        *out = DF_TYPE_FLOAT64;
    else
        return false;
    return true;
}

/* Casts r's column i to t with a select over every column. */
static void recast(struct sc_ctx *c, struct sc_rel *r, int i, df_type t)
{
    json_t *items = json_array();
    char *fresh = sc__new_internal(c, r->cols[i].name);
    for (int k = 0; k < r->ncols; k++) {
        char *q = sc__quote(r->cols[k].internal);
        if (k == i) {
            char *qf = sc__quote(fresh);
            /* a NULL column is bool to the engine, which casts no bool to a date */
            json_array_append_new(items, json_sprintf("cast(%s as %s) as %s",
                                                      r->cols[i].type == DF_TYPE_NULL ? "null" : q,
                                                      df_type_name(t), qf));
            free(qf);
        } else {
            json_array_append_new(items, json_string(q));
        }
        free(q);
    }
    sc__rel_op(r, json_pack("{so}", "select", items));
    free(r->cols[i].internal);
    r->cols[i].internal = fresh;
    r->cols[i].type = t;
}

static int unify_sides(struct sc_ctx *c, const struct sql_query *q, struct sc_rel *l,
                       struct sc_rel *r)
{
    if (l->ncols != r->ncols)
        return sc__invalid(c, q->right->pos,
                           "each side of a set operation needs the same number of columns (%d "
                           "and %d)",
                           l->ncols, r->ncols);
    for (int i = 0; i < l->ncols; i++) {
        df_type t, a = l->cols[i].type, b = r->cols[i].type;
        if (!sc__unify(a, b, &t))
            return sc__invalid(c, q->right->pos,
                               "column %d of the set operation is %s on the left and %s on the "
                               "right",
                               i + 1, df_type_name(a), df_type_name(b));
        if (a != t && !(numeric(a) && numeric(t)))
            recast(c, l, i, t);
        if (b != t && !(numeric(b) && numeric(t)))
            recast(c, r, i, t);
        l->cols[i].type = t;
    }
    return FR_OK;
}

/* Keys that match NULL with NULL: a null flag and the value or a zero. */
static void null_safe_keys(struct sc_ctx *c, struct sc_rel *r, json_t *keys)
{
    int n = r->ncols;
    for (int i = 0; i < n; i++) {
        char *q = sc__quote(r->cols[i].internal);
        const char *zero = r->cols[i].type == DF_TYPE_STRING    ? "''"
                           : r->cols[i].type == DF_TYPE_BOOL    ? "false"
                           : r->cols[i].type == DF_TYPE_DATE    ? "date '1970-01-01'"
                           : r->cols[i].type == DF_TYPE_FLOAT64 ? "0.0"
                           : r->cols[i].type == DF_TYPE_TIMESTAMP
                               ? "timestamp '1970-01-01 00:00:00'"
                               : "0";
        char *flag = fr_xasprintf("case when %s is null then 1 else 0 end", q);
        char *val = fr_xasprintf("coalesce(%s, %s)", q, zero);
        json_array_append_new(keys, json_string(sc__add_computed(c, r, flag, "null", 0)));
        json_array_append_new(keys, json_string(sc__add_computed(c, r, val, "value", 0)));
        free(flag);
        free(val);
        free(q);
    }
}

static int combine(struct sc_ctx *c, const struct sql_query *q, struct sc_rel *l, struct sc_rel *r)
{
    if (q->all && q->setop != SQL_SET_UNION)
        return sc__unsupported(c, q->pos, "%s ALL is not supported",
                               q->setop == SQL_SET_INTERSECT ? "INTERSECT" : "EXCEPT");
    int rc = unify_sides(c, q, l, r);
    if (rc != FR_OK)
        return rc;
    int width = l->ncols;
    if (q->setop == SQL_SET_UNION) {
        sc__rel_op(l, json_pack("{sO}", "union", r->plan));
        if (!q->all)
            sc__rel_op(l, json_pack("{s[]}", "distinct"));
        return FR_OK;
    }
    sc__rel_op(l, json_pack("{s[]}", "distinct"));
    json_t *lk = json_array(), *rk = json_array();
    null_safe_keys(c, l, lk);
    null_safe_keys(c, r, rk);
    sc__join(c, l, r, q->setop == SQL_SET_INTERSECT ? "semi" : "anti", lk, rk);
    json_t *items = json_array(); /* the key columns go */
    for (int i = 0; i < width; i++) {
        char *qi = sc__quote(l->cols[i].internal);
        json_array_append_new(items, json_string(qi));
        free(qi);
    }
    sc__rel_op(l, json_pack("{so}", "select", items));
    sc__rel_truncate(l, width);
    return FR_OK;
}

/* ORDER BY over a query's output columns (names, positions, expressions). */
static int order_outputs(struct sc_ctx *c, const struct sql_query *q, struct sc_rel *r)
{
    int width = r->ncols, rc = FR_OK;
    char **keys = fr_xcalloc((size_t)q->norder + 1, sizeof(char *));
    json_t *hidden = json_array();
    struct sc_scope s = {r, NULL, NULL, 0, false};
    for (int i = 0; rc == FR_OK && i < q->norder; i++) {
        const struct sql_order_item *it = &q->order_by[i];
        const struct sql_expr *e = it->expr;
        if (e->kind == SQL_E_INT) {
            if (e->ival < 1 || e->ival > width)
                rc = sc__invalid(c, e->pos, "ORDER BY position %lld is not in the select list",
                                 (long long)e->ival);
            else
                keys[i] = sc__order_key(r->cols[e->ival - 1].internal, it);
            continue;
        }
        struct sc_ex x = {0};
        x.c = c;
        x.scope = &s;
        x.leaf_names = -1;
        x.clause = "ORDER BY";
        char *text = NULL;
        rc = sc__expr_text(&x, e, &text);
        const char *col = rc == FR_OK ? sc__add_computed(c, r, text, "order", e->pos) : NULL;
        if (rc == FR_OK && !col)
            rc = FR_EINVAL;
        if (col) {
            keys[i] = sc__order_key(col, it);
            json_array_append_new(hidden, json_string(col));
        }
        free(text);
    }
    if (rc == FR_OK)
        rc = sc__order_limit(c, q, r, keys, q->norder);
    if (rc == FR_OK && json_array_size(hidden))
        sc__rel_op(r, json_pack("{sO}", "drop", hidden));
    for (int i = 0; i < q->norder; i++)
        free(keys[i]);
    free(keys);
    json_decref(hidden);
    return rc;
}

int sc__setop(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *outer,
              struct sc_rel *out)
{
    int rc;
    if (q->select) {
        rc = sc__values(c, q->select, out);
    } else if (q->setop == SQL_SET_NONE) {
        rc = sc__query(c, q->left, outer, out);
    } else {
        struct sc_rel r;
        sc__rel_init(&r);
        rc = sc__query(c, q->left, outer, out);
        if (rc == FR_OK)
            rc = sc__query(c, q->right, outer, &r);
        if (rc == FR_OK)
            rc = combine(c, q, out, &r);
        sc__rel_cleanup(&r);
    }
    /* the output: visible columns only, unqualified */
    for (int i = 0; rc == FR_OK && i < out->ncols; i++) {
        free(out->cols[i].qual);
        out->cols[i].qual = NULL;
    }
    if (rc == FR_OK && (q->norder || q->limit || q->offset))
        rc = order_outputs(c, q, out);
    return rc;
}
