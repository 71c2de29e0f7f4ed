/* engine_expr_eval: the public face of expressions (parse, free, name,
 * eval) and the core of the vectorized evaluator: vectors over a row range,
 * temporary columns charged to the task's memory account, validity bitmaps,
 * literals and column references. The kernels live in engine_expr_eval_*.c. */
#include "engine_expr_int.h"

#include <stdlib.h>
#include <string.h>

int df__oom(struct df__ctx *c)
{
    return fr_error_set(c->err, FR_ETOOLARGE,
                        "out of memory evaluating an expression over %lld rows", (long long)c->n);
}

int df__col_fixed(struct df__ctx *c, df_type t, bool with_validity, struct df_column **out)
{
    struct df_column *col = df_column_new(t, c->n > 0 ? c->n : 1);
    if (!df_column_ok(col))
        goto fail;
    col->length = c->n;
    if (with_validity) {
        size_t bytes = (size_t)(col->capacity + 7) / 8;
        col->validity = fr_try_malloc(bytes);
        if (!col->validity)
            goto fail;
        memset(col->validity, 0xff, bytes);
    }
    *out = col;
    return FR_OK;
fail:
    df_column_unref(col);
    return df__oom(c);
}

/* Counts the nulls among the first n bits, clearing bits past n. */
static int64_t count_nulls(uint8_t *bits, int64_t n, int64_t cap)
{
    int64_t valid = 0;
    int64_t full = n / 8;
    for (int64_t k = 0; k < full; k++)
        valid += __builtin_popcount(bits[k]);
    if (n & 7) {
        bits[full] &= (uint8_t)((1u << (n & 7)) - 1);
        valid += __builtin_popcount(bits[full]);
        full++;
    }
    if ((cap + 7) / 8 > full)
        memset(bits + full, 0, (size_t)((cap + 7) / 8 - full));
    return n - valid;
}

int df__finish(struct df__ctx *c, struct df_column *col, struct df__vec *v)
{
    if (!df_column_ok(col)) {
        df_column_unref(col);
        return df__oom(c);
    }
    if (col->validity && col->type != DF_TYPE_STRING) {
        col->null_count = count_nulls(col->validity, col->length, col->capacity);
        size_t w = df_type_width(col->type);
        for (int64_t i = 0; col->null_count && i < col->length; i++)
            if (!df__bit(col->validity, i))
                memset((char *)col->values + (size_t)i * w, 0, w);
    }
    if (col->validity && col->null_count == 0) {
        free(col->validity);
        col->validity = NULL;
    }
    int64_t bytes = df_column_bytes(col);
    int rc = df_exec_charge(c->ex, bytes, c->err);
    if (rc != FR_OK) {
        df_exec_charge(c->ex, -bytes, NULL);
        df_column_unref(col);
        return rc;
    }
    v->col = col;
    v->off = 0;
    v->charged = bytes;
    return FR_OK;
}

void df__vec_release(struct df__ctx *c, struct df__vec *v)
{
    if (!v->col)
        return;
    if (v->charged)
        df_exec_charge(c->ex, -v->charged, NULL);
    df_column_unref(v->col);
    v->col = NULL;
    v->charged = 0;
}

const uint8_t *df__vec_bits(const struct df__vec *v, int64_t n, uint8_t **owned)
{
    *owned = NULL;
    const uint8_t *src = v->col->validity;
    if (!src || v->col->null_count == 0)
        return NULL;
    if ((v->off & 7) == 0)
        return src + v->off / 8;
    uint8_t *dst = fr_xcalloc((size_t)(n + 7) / 8 + 1, 1);
    for (int64_t i = 0; i < n; i++)
        if (df__bit(src, v->off + i))
            dst[i >> 3] |= (uint8_t)(1u << (i & 7));
    *owned = dst;
    return dst;
}

void df__bits_and(uint8_t *dst, const uint8_t *bits, int64_t n)
{
    if (!bits)
        return;
    int64_t nb = (n + 7) / 8;
    for (int64_t k = 0; k < nb; k++)
        dst[k] &= bits[k];
}

static int eval_literal(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    const struct df__value *lv = &nd->lit;
    struct df_column *col = NULL;
    if (nd->type == DF_TYPE_STRING) {
        int64_t len = lv->null ? 0 : lv->slen;
        col = df_column_new(DF_TYPE_STRING, 0);
        if (df_column_reserve(col, c->n, len * c->n) == FR_OK)
            for (int64_t i = 0; i < c->n; i++)
                lv->null ? df_column_append_null(col) : df_column_append_string(col, lv->s, len);
        return df__finish(c, col, out);
    }
    int rc = df__col_fixed(c, nd->type, lv->null, &col);
    if (rc != FR_OK)
        return rc;
    if (lv->null) {
        memset(col->validity, 0, (size_t)(col->capacity + 7) / 8);
        return df__finish(c, col, out);
    }
    int64_t n = c->n;
    switch (nd->type) {
    case DF_TYPE_BOOL:
        memset(col->values, lv->b ? 1 : 0, (size_t)n);
        break;
    case DF_TYPE_DATE:
        for (int64_t i = 0; i < n; i++)
            ((int32_t *)col->values)[i] = lv->d;
        break;
    case DF_TYPE_FLOAT64:
        for (int64_t i = 0; i < n; i++)
            ((double *)col->values)[i] = lv->f;
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)col->values)[i] = lv->i;
        break;
    }
    return df__finish(c, col, out);
}

int df__eval(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    out->col = NULL;
    out->charged = 0;
    out->off = 0;
    switch (nd->kind) {
    case DF__LIT:
        return eval_literal(nd, c, out);
    case DF__COL:
        if (nd->col < 0 || nd->col >= c->t->ncols || c->t->cols[nd->col]->type != nd->type)
            return fr_error_set(c->err, FR_EINTERNAL,
                                "column '%s' of the table does not match the bound schema",
                                nd->name);
        out->col = df_column_ref(c->t->cols[nd->col]);
        out->off = c->start;
        return FR_OK;
    case DF__NEG:
    case DF__ARITH:
        return df__eval_arith(nd, c, out);
    case DF__CMP:
        return df__eval_cmp(nd, c, out);
    case DF__NOT:
    case DF__AND:
    case DF__OR:
        return df__eval_logic(nd, c, out);
    case DF__CAST:
        return df__eval_cast(nd, c, out);
    case DF__LIKE:
        return df__eval_like(nd, c, out);
    case DF__FUNC:
        if (nd->op == DF__F_COALESCE)
            return df__eval_special(nd, c, out);
        if (nd->op == DF__F_CURRENT_CONFIG_ID)
            return df__eval_config_id(c, out);
        if (nd->op == DF__F_CONCAT)
            return df__eval_concat(nd, c, out);
        if (nd->op == DF__F_FAIL_IF)
            return df__eval_fail_if(nd, c, out);
        if (nd->op >= DF__F_LOWER && nd->op <= DF__F_ENDS_WITH)
            return df__eval_string_func(nd, c, out);
        return df__eval_func(nd, c, out);
    case DF__ISNULL:
    case DF__IN:
    case DF__BETWEEN:
    case DF__CASE:
        return df__eval_special(nd, c, out);
    case DF__AGG:
        break;
    }
    return fr_error_set(c->err, FR_EINTERNAL, "an aggregate cannot be evaluated per row");
}

/* ---- public API ---------------------------------------------------------- */

int df_expr_parse(const char *text, const struct df_schema *schema, df_expr **out,
                  struct fr_error *err)
{
    struct df__node *root = NULL;
    char *alias = NULL;
    *out = NULL;
    int result = df__parse(text, false, &root, &alias, err);
    if (result != FR_OK)
        goto out;
    if ((result = df__bind_root(&root, schema, err)) != FR_OK)
        goto out;
    *out = df__expr_wrap(root, text, 0, (int64_t)strlen(text), alias);
    root = NULL;
out:
    df__node_free(root);
    free(alias);
    return result;
}

void df_expr_free(df_expr *e)
{
    if (!e)
        return;
    df__node_free(e->root);
    free(e->name);
    free(e);
}

df_type df_expr_type(const df_expr *e)
{
    return e->root->type;
}

const char *df_expr_name(const df_expr *e)
{
    return e->name;
}

static void collect_columns(const struct df__node *n, int *out, int *nout, int cap)
{
    if (n->kind == DF__COL) {
        for (int i = 0; i < *nout; i++)
            if (out[i] == n->col)
                return;
        if (*nout < cap)
            out[(*nout)++] = n->col;
        return;
    }
    for (int i = 0; i < n->nargs; i++)
        collect_columns(n->args[i], out, nout, cap);
}

void df_expr_columns(const df_expr *e, int *out, int *nout, int cap)
{
    collect_columns(e->root, out, nout, cap);
}

int df_expr_column_index(const df_expr *e)
{
    return e->root->kind == DF__COL ? e->root->col : -1;
}

int df_expr_eval(const df_expr *e, const struct df_table *t, int64_t start, int64_t n,
                 struct df_exec *ex, struct df_column **out, struct fr_error *err)
{
    *out = NULL;
    if (start < 0 || n < 0 || start + n > t->nrows)
        return fr_error_set(err, FR_EINTERNAL, "row range [%lld, %lld) outside a table of %lld",
                            (long long)start, (long long)(start + n), (long long)t->nrows);
    struct df__ctx c = {t, start, n, ex, err};
    struct df__vec v = {0};
    int rc = df__eval(e->root, &c, &v);
    if (rc != FR_OK)
        return rc;
    if (v.charged == 0 || v.off != 0 || v.col->length != n) {
        /* a borrowed table column: hand out a copy of the range */
        struct df_column *copy = df_column_slice(v.col, v.off, n);
        df__vec_release(&c, &v);
        if (!df_column_ok(copy)) {
            df_column_unref(copy);
            return df__oom(&c);
        }
        *out = copy;
        return FR_OK;
    }
    /* the caller charges what it keeps */
    df_exec_charge(ex, -v.charged, NULL);
    *out = v.col;
    return FR_OK;
}
