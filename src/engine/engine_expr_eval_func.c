/* engine_expr_eval_func: numeric and date functions: abs, round (half away
 * from zero, with optional digits), round_even (ties to even), floor, ceil, year,
 * month, day; fail_if. Integer results that overflow are null, like integer arithmetic. */
#include "engine_expr_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MICROS_PER_DAY INT64_C(86400000000)

static void abs_kernel(df_type t, const void *src, struct df_column *col, int64_t n)
{
    if (t == DF_TYPE_FLOAT64) {
        const double *x = src;
        for (int64_t i = 0; i < n; i++)
            ((double *)col->values)[i] = fabs(x[i]);
        return;
    }
    const int64_t *x = src;
    int64_t *r = col->values;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] == INT64_MIN)
            df__bit_clear(col->validity, i);
        else
            r[i] = x[i] < 0 ? -x[i] : x[i];
    }
}

static void floor_ceil_kernel(bool is_floor, const double *x, double *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        r[i] = is_floor ? floor(x[i]) : ceil(x[i]);
}

static double round_float(double x, int64_t digits)
{
    if (digits == 0)
        return round(x);
    if (digits > 308 || digits < -308)
        return digits > 0 ? x : 0.0;
    double m = pow(10.0, (double)digits);
    double r = round(x * m) / m;
    return isfinite(r) ? r : x;
}

/* Rounds x to a multiple of 10^-digits (digits < 0), half away from zero. */
static bool round_int(int64_t x, int64_t digits, int64_t *out)
{
    if (digits >= 0) {
        *out = x;
        return true;
    }
    if (digits < -18) {
        *out = 0;
        return true;
    }
    int64_t p = 1;
    for (int64_t k = 0; k < -digits; k++)
        p *= 10;
    int64_t q = x / p, rem = x % p;
    if (rem >= (p + 1) / 2)
        q++;
    else if (-rem >= (p + 1) / 2)
        q--;
    return !__builtin_mul_overflow(q, p, out);
}

static void round_kernel(df_type t, const struct df__vec *a, const struct df__vec *d,
                         struct df_column *col, int64_t n)
{
    const int64_t *digits = d ? df__vec_values(d) : NULL;
    if (t == DF_TYPE_FLOAT64) {
        const double *x = df__vec_values(a);
        double *r = col->values;
        for (int64_t i = 0; i < n; i++)
            r[i] = round_float(x[i], digits ? digits[i] : 0);
        return;
    }
    const int64_t *x = df__vec_values(a);
    int64_t *r = col->values;
    for (int64_t i = 0; i < n; i++)
        if (!round_int(x[i], digits ? digits[i] : 0, &r[i]))
            df__bit_clear(col->validity, i);
}

static void date_part_kernel(int func, const struct df__vec *a, int64_t *r, int64_t n)
{
    bool is_date = a->col->type == DF_TYPE_DATE;
    const int32_t *dd = is_date ? df__vec_values(a) : NULL;
    const int64_t *ts = is_date ? NULL : df__vec_values(a);
    for (int64_t i = 0; i < n; i++) {
        int32_t days;
        if (is_date)
            days = dd[i];
        else
            days = (int32_t)(ts[i] >= 0 ? ts[i] / MICROS_PER_DAY
                                        : -((-(ts[i] + 1)) / MICROS_PER_DAY) - 1);
        int y, m, d;
        df_days_to_ymd(days, &y, &m, &d);
        r[i] = func == DF__F_YEAR ? y : func == DF__F_MONTH ? m : d;
    }
}

int df__eval_func(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0}, b = {0};
    struct df_column *col = NULL;
    uint8_t *owned = NULL;
    int rc = df__eval(nd->args[0], c, &a);
    if (rc != FR_OK)
        return rc;
    df_type t = a.col->type;
    if ((t != DF_TYPE_FLOAT64 && nd->op == DF__F_ROUND_EVEN) ||
        (t == DF_TYPE_INT64 && (nd->op == DF__F_FLOOR || nd->op == DF__F_CEIL ||
                                (nd->op == DF__F_ROUND && nd->nargs == 1)))) {
        *out = a; /* integers are already whole */
        return FR_OK;
    }
    if (nd->nargs > 1 && (rc = df__eval(nd->args[1], c, &b)) != FR_OK)
        goto out;
    if ((rc = df__col_fixed(c, nd->type, true, &col)) != FR_OK)
        goto out;
    df__bits_and(col->validity, df__vec_bits(&a, c->n, &owned), c->n);
    free(owned);
    if (b.col) {
        df__bits_and(col->validity, df__vec_bits(&b, c->n, &owned), c->n);
        free(owned);
    }
    switch (nd->op) {
    case DF__F_ABS:
        abs_kernel(t, df__vec_values(&a), col, c->n);
        break;
    case DF__F_FLOOR:
    case DF__F_CEIL:
        floor_ceil_kernel(nd->op == DF__F_FLOOR, df__vec_values(&a), col->values, c->n);
        break;
    case DF__F_ROUND:
        round_kernel(t, &a, b.col ? &b : NULL, col, c->n);
        break;
    case DF__F_ROUND_EVEN: /* nearbyint: the default mode rounds ties to even */
        for (int64_t i = 0; i < c->n; i++)
            ((double *)col->values)[i] = nearbyint(((const double *)df__vec_values(&a))[i]);
        break;
    default:
        date_part_kernel(nd->op, &a, col->values, c->n);
        break;
    }
    rc = df__finish(c, col, out);
out:
    df__vec_release(c, &a);
    df__vec_release(c, &b);
    return rc;
}

/* Evaluated per task, never folded: the coordinator and each worker answer
 * with the frozen config they run the task with (df_options.config_id). */
int df__eval_config_id(struct df__ctx *c, struct df__vec *out)
{
    const char *id = c->ex && c->ex->opts ? c->ex->opts->config_id : NULL;
    int64_t len = id ? (int64_t)strlen(id) : 0;
    struct df_column *col = df_column_new(DF_TYPE_STRING, 0);
    if (df_column_reserve(col, c->n, len * c->n) == FR_OK)
        for (int64_t i = 0; i < c->n; i++)
            id ? df_column_append_string(col, id, len) : df_column_append_null(col);
    return df__finish(c, col, out);
}

int df__eval_fail_if(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0}, m = {0};
    struct df_column *col = NULL;
    int rc = df__eval(nd->args[0], c, &a);
    if (rc == FR_OK)
        rc = df__eval(nd->args[1], c, &m);
    if (rc == FR_OK)
        rc = df__col_fixed(c, DF_TYPE_BOOL, false, &col);
    const uint8_t *v = rc == FR_OK ? df__vec_values(&a) : NULL;
    for (int64_t i = 0; rc == FR_OK && i < c->n; i++) {
        if (v[i] && df__bit(a.col->validity, a.off + i)) {
            int64_t n = 0;
            const char *s = df_column_string(m.col, m.off, &n);
            rc = fr_error_setk(c->err, FR_EDATA, "cardinality-violation", "%.*s",
                               (int)(n > 400 ? 400 : n), s ? s : "");
        }
    }
    if (rc == FR_OK)
        rc = df__finish(c, col, out); /* all false */
    else
        df_column_unref(col);
    df__vec_release(c, &a);
    df__vec_release(c, &m);
    return rc;
}
