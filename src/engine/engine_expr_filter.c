/* engine_expr_filter: predicates to selection vectors. A comparison of a
 * column with a literal (v1 > 3, id1 = 'id042') runs a specialized loop that
 * appends matching row indices directly, without an intermediate bool
 * column; anything else is evaluated to a bool vector and then selected. */
#include "engine_expr_int.h"

#include <stdlib.h>
#include <string.h>

/* Branch-free append: the index is always written, the count only advances on a match. */
#define SEL_LOOP(T, OP)                                                                            \
    do {                                                                                           \
        const T *x = (const T *)col->values + start;                                               \
        const T lv = lit;                                                                          \
        if (!bits) {                                                                               \
            for (int64_t i = 0; i < n; i++) {                                                      \
                sel[k] = start + i;                                                                \
                k += x[i] OP lv;                                                                   \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                sel[k] = start + i;                                                                \
                k += (x[i] OP lv) & df__bit(bits, start + i);                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define SEL_OPS(T)                                                                                 \
    do {                                                                                           \
        switch (op) {                                                                              \
        case DF__EQ:                                                                               \
            SEL_LOOP(T, ==);                                                                       \
            break;                                                                                 \
        case DF__NE:                                                                               \
            SEL_LOOP(T, !=);                                                                       \
            break;                                                                                 \
        case DF__LT:                                                                               \
            SEL_LOOP(T, <);                                                                        \
            break;                                                                                 \
        case DF__LE:                                                                               \
            SEL_LOOP(T, <=);                                                                       \
            break;                                                                                 \
        case DF__GT:                                                                               \
            SEL_LOOP(T, >);                                                                        \
            break;                                                                                 \
        default:                                                                                   \
            SEL_LOOP(T, >=);                                                                       \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static int64_t sel_int64(const struct df_column *col, int op, int64_t lit, int64_t start, int64_t n,
                         int64_t *sel)
{
    const uint8_t *bits = col->null_count ? col->validity : NULL;
    int64_t k = 0;
    SEL_OPS(int64_t);
    return k;
}

static int64_t sel_float64(const struct df_column *col, int op, double lit, int64_t start,
                           int64_t n, int64_t *sel)
{
    const uint8_t *bits = col->null_count ? col->validity : NULL;
    int64_t k = 0;
    SEL_OPS(double);
    return k;
}

static int64_t sel_int32(const struct df_column *col, int op, int32_t lit, int64_t start, int64_t n,
                         int64_t *sel)
{
    const uint8_t *bits = col->null_count ? col->validity : NULL;
    int64_t k = 0;
    SEL_OPS(int32_t);
    return k;
}

static int64_t sel_string(const struct df_column *col, int op, const char *lit, int64_t m,
                          int64_t start, int64_t n, int64_t *sel)
{
    const uint8_t *bits = col->null_count ? col->validity : NULL;
    const int64_t *off = col->offsets;
    int64_t k = 0;
    for (int64_t i = start; i < start + n; i++) {
        int64_t len = off[i + 1] - off[i];
        const char *s = col->data + off[i];
        int r;
        if (op == DF__EQ || op == DF__NE) {
            r = !(len == m && (m == 0 || memcmp(s, lit, (size_t)m) == 0));
        } else {
            int64_t mn = len < m ? len : m;
            r = mn ? memcmp(s, lit, (size_t)mn) : 0;
            if (r == 0)
                r = len < m ? -1 : len > m;
        }
        bool hit = op == DF__EQ   ? r == 0
                   : op == DF__NE ? r != 0
                   : op == DF__LT ? r < 0
                   : op == DF__LE ? r <= 0
                   : op == DF__GT ? r > 0
                                  : r >= 0;
        sel[k] = i;
        k += hit && df__bit(bits, i);
    }
    return k;
}

static int flip(int op)
{
    switch (op) {
    case DF__LT:
        return DF__GT;
    case DF__LE:
        return DF__GE;
    case DF__GT:
        return DF__LT;
    case DF__GE:
        return DF__LE;
    default:
        return op;
    }
}

/* The column-op-literal fast path; false when the predicate has another shape. */
static bool filter_fast(const struct df__node *nd, const struct df_table *t, int64_t start,
                        int64_t n, int64_t *sel, int64_t *k)
{
    if (nd->kind != DF__CMP)
        return false;
    const struct df__node *cn = nd->args[0], *ln = nd->args[1];
    int op = nd->op;
    if (cn->kind == DF__LIT && ln->kind == DF__COL) {
        cn = nd->args[1];
        ln = nd->args[0];
        op = flip(op);
    }
    if (cn->kind != DF__COL || ln->kind != DF__LIT || cn->col < 0 || cn->col >= t->ncols)
        return false;
    const struct df_column *col = t->cols[cn->col];
    const struct df__value *v = &ln->lit;
    if (col->type != ln->type)
        return false;
    if (v->null) {
        *k = 0;
        return true;
    }
    switch (col->type) {
    case DF_TYPE_INT64:
    case DF_TYPE_TIMESTAMP:
        *k = sel_int64(col, op, v->i, start, n, sel);
        return true;
    case DF_TYPE_FLOAT64:
        *k = sel_float64(col, op, v->f, start, n, sel);
        return true;
    case DF_TYPE_DATE:
        *k = sel_int32(col, op, v->d, start, n, sel);
        return true;
    case DF_TYPE_STRING:
        *k = sel_string(col, op, v->s, v->slen, start, n, sel);
        return true;
    default:
        return false;
    }
}

static bool calls_fail_if(const struct df__node *nd)
{
    if (nd->kind == DF__FUNC && nd->op == DF__F_FAIL_IF)
        return true;
    for (int i = 0; i < nd->nargs; i++)
        if (calls_fail_if(nd->args[i]))
            return true;
    return false;
}

/* 1 when nd holds on every row of t, 0 when on none, -1 when that takes
 * evaluating it. Only what t's metadata settles: a column's IS [NOT] NULL
 * by its null count, a bool literal, and AND/OR of those. */
static int constant_over(const struct df__node *nd, const struct df_table *t)
{
    switch (nd->kind) {
    case DF__LIT:
        return nd->type == DF_TYPE_BOOL && !nd->lit.null ? nd->lit.b != 0 : nd->lit.null ? 0 : -1;
    case DF__ISNULL: {
        const struct df__node *cn = nd->args[0];
        if (cn->kind != DF__COL || cn->col < 0 || cn->col >= t->ncols ||
            t->cols[cn->col]->null_count != 0)
            return -1;
        return nd->negated ? 1 : 0; /* no nulls: IS NOT NULL everywhere, IS NULL nowhere */
    }
    case DF__AND:
    case DF__OR: {
        bool is_and = nd->kind == DF__AND;
        int known = is_and ? 1 : 0; /* the value when every argument is the neutral one */
        for (int i = 0; i < nd->nargs; i++) {
            int r = constant_over(nd->args[i], t);
            if (r == (is_and ? 0 : 1))
                return r; /* false AND anything, true OR anything (SQL's three values too) */
            if (r < 0)
                known = -1;
        }
        return known;
    }
    default:
        return -1;
    }
}

int df_expr_filter_constant(const df_expr *e, const struct df_table *t)
{
    /* evaluating runs every argument of AND/OR, so a fail_if anywhere must
     * still get to raise its error: only evaluating tells */
    if (e->root->type != DF_TYPE_BOOL || calls_fail_if(e->root))
        return -1;
    return constant_over(e->root, t);
}

int df_expr_filter(const df_expr *e, const struct df_table *t, int64_t start, int64_t n,
                   struct df_exec *ex, int64_t *sel, int64_t *nsel, struct fr_error *err)
{
    if (e->root->type != DF_TYPE_BOOL)
        return fr_error_set(err, FR_EINVAL, "a filter must be a bool expression, '%s' is %s",
                            e->name, df_type_name(e->root->type));
    if (start < 0 || n < 0 || start + n > t->nrows)
        return fr_error_set(err, FR_EINTERNAL, "row range [%lld, %lld) outside a table of %lld",
                            (long long)start, (long long)(start + n), (long long)t->nrows);
    int64_t k = 0;
    if (filter_fast(e->root, t, start, n, sel + *nsel, &k)) {
        *nsel += k;
        return FR_OK;
    }
    struct df__ctx c = {t, start, n, ex, err};
    struct df__vec v = {0};
    int rc = df__eval(e->root, &c, &v);
    if (rc != FR_OK)
        return rc;
    uint8_t *owned = NULL;
    const uint8_t *bits = df__vec_bits(&v, n, &owned);
    const uint8_t *x = df__vec_values(&v);
    int64_t *dst = sel + *nsel;
    for (int64_t i = 0; i < n; i++) {
        dst[k] = start + i;
        k += x[i] & df__bit(bits, i);
    }
    *nsel += k;
    free(owned);
    df__vec_release(&c, &v);
    return FR_OK;
}
