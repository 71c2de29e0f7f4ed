/* engine_expr_eval_special: the forms that choose among values rather than
 * compute one: is [not] null, [not] in, [not] between, case and coalesce.
 * in and between reuse the comparison and three-valued-logic kernels, so
 * they follow SQL's null rules (x in (1, null) is null when x is not 1). */
#include "engine_expr_int.h"

#include <stdlib.h>
#include <string.h>

static void release_all(struct df__ctx *c, struct df__vec *v, int n)
{
    for (int i = 0; i < n; i++)
        df__vec_release(c, &v[i]);
}

static int eval_all(const struct df__node *nd, struct df__ctx *c, struct df__vec *v)
{
    for (int i = 0; i < nd->nargs; i++) {
        int rc = df__eval(nd->args[i], c, &v[i]);
        if (rc != FR_OK) {
            release_all(c, v, i);
            return rc;
        }
    }
    return FR_OK;
}

/* A new column of type t whose row i is row i of v[pick[i]] (null for -1). */
static int gather(struct df__ctx *c, df_type t, const struct df__vec *v, const int *pick,
                  struct df__vec *out)
{
    struct df_column *col = NULL;
    if (t == DF_TYPE_STRING) {
        col = df_column_new(t, 0);
        df_column_reserve(col, c->n, 0);
        for (int64_t i = 0; i < c->n; i++) {
            if (pick[i] < 0)
                df_column_append_null(col);
            else
                df_column_append_from(col, v[pick[i]].col, v[pick[i]].off + i);
        }
        return df__finish(c, col, out);
    }
    int rc = df__col_fixed(c, t, true, &col);
    if (rc != FR_OK)
        return rc;
    size_t w = df_type_width(t);
    for (int64_t i = 0; i < c->n; i++) {
        const struct df__vec *s = pick[i] < 0 ? NULL : &v[pick[i]];
        if (!s || !df_column_is_valid(s->col, s->off + i))
            df__bit_clear(col->validity, i);
        else
            memcpy((char *)col->values + (size_t)i * w,
                   (const char *)s->col->values + (size_t)(s->off + i) * w, w);
    }
    return df__finish(c, col, out);
}

static int eval_case(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec *v = fr_xcalloc((size_t)nd->nargs, sizeof(*v));
    int *pick = fr_try_malloc(sizeof(int) * (size_t)(c->n ? c->n : 1));
    int npairs = (nd->nargs - (nd->has_else ? 1 : 0)) / 2;
    int rc = pick ? eval_all(nd, c, v) : df__oom(c);
    if (rc != FR_OK)
        goto out;
    for (int64_t i = 0; i < c->n; i++) {
        pick[i] = nd->has_else ? nd->nargs - 1 : -1;
        for (int k = 0; k < npairs; k++) {
            const struct df__vec *cond = &v[2 * k];
            if (df_column_is_valid(cond->col, cond->off + i) &&
                df_column_bool(cond->col, cond->off + i)) {
                pick[i] = 2 * k + 1;
                break;
            }
        }
    }
    rc = gather(c, nd->type, v, pick, out);
    release_all(c, v, nd->nargs);
out:
    free(pick);
    free(v);
    return rc;
}

static int eval_coalesce(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec *v = fr_xcalloc((size_t)nd->nargs, sizeof(*v));
    int *pick = fr_try_malloc(sizeof(int) * (size_t)(c->n ? c->n : 1));
    int rc = pick ? eval_all(nd, c, v) : df__oom(c);
    if (rc != FR_OK)
        goto out;
    for (int64_t i = 0; i < c->n; i++) {
        pick[i] = -1;
        for (int k = 0; k < nd->nargs; k++) {
            if (df_column_is_valid(v[k].col, v[k].off + i)) {
                pick[i] = k;
                break;
            }
        }
    }
    rc = gather(c, nd->type, v, pick, out);
    release_all(c, v, nd->nargs);
out:
    free(pick);
    free(v);
    return rc;
}

static int eval_isnull(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0};
    struct df_column *col = NULL;
    int rc = df__eval(nd->args[0], c, &a);
    if (rc != FR_OK)
        return rc;
    if ((rc = df__col_fixed(c, DF_TYPE_BOOL, false, &col)) == FR_OK) {
        uint8_t *owned = NULL;
        const uint8_t *bits = df__vec_bits(&a, c->n, &owned);
        uint8_t *r = col->values;
        for (int64_t i = 0; i < c->n; i++)
            r[i] = df__bit(bits, i) == nd->negated;
        free(owned);
        rc = df__finish(c, col, out);
    }
    df__vec_release(c, &a);
    return rc;
}

/* Replaces *acc by (*acc OR/AND next), releasing both inputs. */
static int combine(struct df__ctx *c, bool is_or, struct df__vec *acc, struct df__vec *next)
{
    struct df__vec r = {0};
    int rc = df__logic_vecs(c, is_or, acc, next, &r);
    df__vec_release(c, acc);
    df__vec_release(c, next);
    *acc = r;
    return rc;
}

static int negate(struct df__ctx *c, struct df__vec *acc)
{
    struct df__vec r = {0};
    int rc = df__not_vec(c, acc, &r);
    df__vec_release(c, acc);
    *acc = r;
    return rc;
}

/* in: x = a1 or x = a2 ...; between: x >= lo and x <= hi. */
static int eval_in_between(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec *v = fr_xcalloc((size_t)nd->nargs, sizeof(*v));
    struct df__vec acc = {0}, next = {0};
    bool in = nd->kind == DF__IN;
    int rc = eval_all(nd, c, v);
    if (rc != FR_OK)
        goto out;
    rc = df__cmp_vecs(c, in ? DF__EQ : DF__GE, &v[0], &v[1], &acc);
    for (int k = 2; rc == FR_OK && k < nd->nargs; k++) {
        if ((rc = df__cmp_vecs(c, in ? DF__EQ : DF__LE, &v[0], &v[k], &next)) == FR_OK)
            rc = combine(c, in, &acc, &next);
    }
    if (rc == FR_OK && nd->negated)
        rc = negate(c, &acc);
    release_all(c, v, nd->nargs);
    if (rc == FR_OK) {
        *out = acc;
        acc.col = NULL;
    }
    df__vec_release(c, &acc);
out:
    free(v);
    return rc;
}

int df__eval_special(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    switch (nd->kind) {
    case DF__ISNULL:
        return eval_isnull(nd, c, out);
    case DF__CASE:
        return eval_case(nd, c, out);
    case DF__FUNC:
        return eval_coalesce(nd, c, out);
    default:
        return eval_in_between(nd, c, out);
    }
}
