/* engine_expr_eval_arith: vectorized kernels for arithmetic (integer
 * overflow and division by zero give null), comparisons and SQL three-valued
 * logic. Each kernel runs a tight loop over plain arrays and combines the
 * inputs' validity bitmaps bytewise; rare nulls are patched in a second pass. */
#include "engine_expr_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Evaluates the node's children into a and b. */
static int eval2(const struct df__node *nd, struct df__ctx *c, struct df__vec *a, struct df__vec *b)
{
    int rc = df__eval(nd->args[0], c, a);
    if (rc == FR_OK && (rc = df__eval(nd->args[1], c, b)) != FR_OK)
        df__vec_release(c, a);
    return rc;
}

/* A new result column whose validity is the AND of a's and b's (b may be NULL). */
static int result_col(struct df__ctx *c, df_type t, const struct df__vec *a,
                      const struct df__vec *b, struct df_column **out)
{
    int rc = df__col_fixed(c, t, true, out);
    if (rc != FR_OK)
        return rc;
    uint8_t *owned = NULL;
    df__bits_and((*out)->validity, df__vec_bits(a, c->n, &owned), c->n);
    free(owned);
    if (b) {
        df__bits_and((*out)->validity, df__vec_bits(b, c->n, &owned), c->n);
        free(owned);
    }
    return FR_OK;
}

#define INT_OVF_LOOP(builtin)                                                                      \
    do {                                                                                           \
        bool any = false;                                                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            any |= builtin(x[i], y[i], &r[i]);                                                     \
        for (int64_t i = 0; any && i < n; i++) {                                                   \
            int64_t tmp;                                                                           \
            if (builtin(x[i], y[i], &tmp))                                                         \
                df__bit_clear(valid, i);                                                           \
        }                                                                                          \
    } while (0)

static void int_kernel(int op, const int64_t *x, const int64_t *y, int64_t *r, uint8_t *valid,
                       int64_t n)
{
    switch (op) {
    case DF__ADD:
        INT_OVF_LOOP(__builtin_add_overflow);
        break;
    case DF__SUB:
        INT_OVF_LOOP(__builtin_sub_overflow);
        break;
    case DF__MUL:
        INT_OVF_LOOP(__builtin_mul_overflow);
        break;
    default: /* DF__MOD; '/' is always float64 */
        for (int64_t i = 0; i < n; i++) {
            if (y[i] == 0)
                df__bit_clear(valid, i);
            else
                r[i] = y[i] == -1 ? 0 : x[i] % y[i];
        }
        break;
    }
}

static void float_kernel(int op, const double *x, const double *y, double *r, uint8_t *valid,
                         int64_t n)
{
    switch (op) {
    case DF__ADD:
        for (int64_t i = 0; i < n; i++)
            r[i] = x[i] + y[i];
        break;
    case DF__SUB:
        for (int64_t i = 0; i < n; i++)
            r[i] = x[i] - y[i];
        break;
    case DF__MUL:
        for (int64_t i = 0; i < n; i++)
            r[i] = x[i] * y[i];
        break;
    default: {
        bool any = false;
        for (int64_t i = 0; i < n; i++)
            any |= y[i] == 0.0;
        for (int64_t i = 0; i < n; i++)
            r[i] = op == DF__DIV ? x[i] / (y[i] == 0.0 ? 1.0 : y[i])
                                 : fmod(x[i], y[i] == 0.0 ? 1.0 : y[i]);
        for (int64_t i = 0; any && i < n; i++)
            if (y[i] == 0.0)
                df__bit_clear(valid, i);
        break;
    }
    }
}

static int eval_neg(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0};
    struct df_column *col = NULL;
    int rc = df__eval(nd->args[0], c, &a);
    if (rc != FR_OK)
        return rc;
    if ((rc = result_col(c, nd->type, &a, NULL, &col)) != FR_OK)
        goto out;
    int64_t n = c->n;
    if (nd->type == DF_TYPE_FLOAT64) {
        const double *x = df__vec_values(&a);
        for (int64_t i = 0; i < n; i++)
            ((double *)col->values)[i] = -x[i];
    } else {
        const int64_t *x = df__vec_values(&a);
        int64_t *r = col->values;
        for (int64_t i = 0; i < n; i++) {
            if (x[i] == INT64_MIN)
                df__bit_clear(col->validity, i);
            else
                r[i] = -x[i];
        }
    }
    rc = df__finish(c, col, out);
out:
    df__vec_release(c, &a);
    return rc;
}

int df__eval_arith(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    if (nd->kind == DF__NEG)
        return eval_neg(nd, c, out);
    struct df__vec a = {0}, b = {0};
    struct df_column *col = NULL;
    int rc = eval2(nd, c, &a, &b);
    if (rc != FR_OK)
        return rc;
    if ((rc = result_col(c, nd->type, &a, &b, &col)) != FR_OK)
        goto out;
    if (nd->type == DF_TYPE_FLOAT64)
        float_kernel(nd->op, df__vec_values(&a), df__vec_values(&b), col->values, col->validity,
                     c->n);
    else
        int_kernel(nd->op, df__vec_values(&a), df__vec_values(&b), col->values, col->validity,
                   c->n);
    rc = df__finish(c, col, out);
out:
    df__vec_release(c, &a);
    df__vec_release(c, &b);
    return rc;
}

/* ---- comparisons ---------------------------------------------------------- */

#define CMP_LOOPS(T)                                                                               \
    do {                                                                                           \
        const T *x = df__vec_values(a), *y = df__vec_values(b);                                    \
        switch (op) {                                                                              \
        case DF__EQ:                                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] == y[i];                                                               \
            break;                                                                                 \
        case DF__NE:                                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] != y[i];                                                               \
            break;                                                                                 \
        case DF__LT:                                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] < y[i];                                                                \
            break;                                                                                 \
        case DF__LE:                                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] <= y[i];                                                               \
            break;                                                                                 \
        case DF__GT:                                                                               \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] > y[i];                                                                \
            break;                                                                                 \
        default:                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                r[i] = x[i] >= y[i];                                                               \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static int str_cmp(const char *a, int64_t la, const char *b, int64_t lb)
{
    int64_t m = la < lb ? la : lb;
    int r = m ? memcmp(a, b, (size_t)m) : 0;
    if (r)
        return r;
    return la < lb ? -1 : la > lb;
}

static bool cmp_result(int op, int r)
{
    switch (op) {
    case DF__EQ:
        return r == 0;
    case DF__NE:
        return r != 0;
    case DF__LT:
        return r < 0;
    case DF__LE:
        return r <= 0;
    case DF__GT:
        return r > 0;
    default:
        return r >= 0;
    }
}

static void string_cmp(int op, const struct df__vec *a, const struct df__vec *b, uint8_t *r,
                       int64_t n)
{
    const int64_t *oa = a->col->offsets + a->off, *ob = b->col->offsets + b->off;
    const char *da = a->col->data, *db = b->col->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t la = oa[i + 1] - oa[i], lb = ob[i + 1] - ob[i];
        if (op == DF__EQ || op == DF__NE)
            r[i] = (la == lb && (la == 0 || memcmp(da + oa[i], db + ob[i], (size_t)la) == 0)) ==
                   (op == DF__EQ);
        else
            r[i] = cmp_result(op, str_cmp(da + oa[i], la, db + ob[i], lb));
    }
}

int df__cmp_vecs(struct df__ctx *c, int op, const struct df__vec *a, const struct df__vec *b,
                 struct df__vec *out)
{
    struct df_column *col = NULL;
    int rc = result_col(c, DF_TYPE_BOOL, a, b, &col);
    if (rc != FR_OK)
        return rc;
    uint8_t *r = col->values;
    int64_t n = c->n;
    switch (a->col->type) {
    case DF_TYPE_FLOAT64:
        CMP_LOOPS(double);
        break;
    case DF_TYPE_DATE:
        CMP_LOOPS(int32_t);
        break;
    case DF_TYPE_BOOL:
        CMP_LOOPS(uint8_t);
        break;
    case DF_TYPE_STRING:
        string_cmp(op, a, b, r, n);
        break;
    default:
        CMP_LOOPS(int64_t);
        break;
    }
    return df__finish(c, col, out);
}

int df__eval_cmp(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0}, b = {0};
    int rc = eval2(nd, c, &a, &b);
    if (rc != FR_OK)
        return rc;
    rc = df__cmp_vecs(c, nd->op, &a, &b, out);
    df__vec_release(c, &a);
    df__vec_release(c, &b);
    return rc;
}

/* ---- three-valued logic ----------------------------------------------------- */

int df__logic_vecs(struct df__ctx *c, bool is_or, const struct df__vec *a, const struct df__vec *b,
                   struct df__vec *out)
{
    struct df_column *col = NULL;
    uint8_t *own_a = NULL, *own_b = NULL;
    const uint8_t *va = df__vec_bits(a, c->n, &own_a), *vb = df__vec_bits(b, c->n, &own_b);
    int rc = df__col_fixed(c, DF_TYPE_BOOL, va || vb, &col);
    if (rc != FR_OK)
        goto out;
    const uint8_t *x = df__vec_values(a), *y = df__vec_values(b);
    uint8_t *r = col->values;
    int64_t n = c->n;
    if (!va && !vb) {
        for (int64_t i = 0; i < n; i++)
            r[i] = is_or ? (x[i] | y[i]) : (x[i] & y[i]);
    } else {
        for (int64_t i = 0; i < n; i++) {
            bool ka = df__bit(va, i), kb = df__bit(vb, i);
            bool xa = ka && x[i], xb = kb && y[i];
            /* the deciding value: true for or, false for and */
            bool decided = is_or ? (xa || xb) : ((ka && !x[i]) || (kb && !y[i]));
            if (decided)
                r[i] = is_or;
            else if (ka && kb)
                r[i] = !is_or;
            else
                df__bit_clear(col->validity, i);
        }
    }
    rc = df__finish(c, col, out);
out:
    free(own_a);
    free(own_b);
    return rc;
}

int df__not_vec(struct df__ctx *c, const struct df__vec *a, struct df__vec *out)
{
    struct df_column *col = NULL;
    int rc = result_col(c, DF_TYPE_BOOL, a, NULL, &col);
    if (rc != FR_OK)
        return rc;
    const uint8_t *x = df__vec_values(a);
    uint8_t *r = col->values;
    for (int64_t i = 0; i < c->n; i++)
        r[i] = !x[i];
    return df__finish(c, col, out);
}

int df__eval_logic(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0}, b = {0};
    int rc;
    if (nd->kind == DF__NOT) {
        if ((rc = df__eval(nd->args[0], c, &a)) != FR_OK)
            return rc;
        rc = df__not_vec(c, &a, out);
        df__vec_release(c, &a);
        return rc;
    }
    if ((rc = eval2(nd, c, &a, &b)) != FR_OK)
        return rc;
    rc = df__logic_vecs(c, nd->kind == DF__OR, &a, &b, out);
    df__vec_release(c, &a);
    df__vec_release(c, &b);
    return rc;
}
