/* engine_expr_eval_cast: conversions between types, explicit (cast(x as t))
 * and implicit (int64 to float64, date to timestamp). Text that does not
 * parse and floats out of int64 range become null rather than failing. */
#include "engine_expr_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MICROS_PER_DAY INT64_C(86400000000)

bool df__cast_ok(df_type from, df_type to)
{
    if (from == to || from == DF_TYPE_NULL || from == DF_TYPE_STRING || to == DF_TYPE_STRING)
        return true;
    bool num_from = from == DF_TYPE_BOOL || from == DF_TYPE_INT64 || from == DF_TYPE_FLOAT64;
    bool num_to = to == DF_TYPE_BOOL || to == DF_TYPE_INT64 || to == DF_TYPE_FLOAT64;
    bool time_from = from == DF_TYPE_DATE || from == DF_TYPE_TIMESTAMP;
    bool time_to = to == DF_TYPE_DATE || to == DF_TYPE_TIMESTAMP;
    return (num_from && num_to) || (time_from && time_to);
}

static void float_text(double v, char *buf, size_t sz)
{
    if (isnan(v) || isinf(v)) {
        snprintf(buf, sz, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sz, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", sz - strlen(buf) - 1);
}

/* Formats row i of a (valid) as text into buf. */
static void value_text(const struct df__vec *a, int64_t i, char *buf, size_t sz)
{
    const struct df_column *col = a->col;
    int64_t r = a->off + i;
    switch (col->type) {
    case DF_TYPE_BOOL:
        snprintf(buf, sz, "%s", df_column_bool(col, r) ? "true" : "false");
        break;
    case DF_TYPE_FLOAT64:
        float_text(df_column_float64(col, r), buf, sz);
        break;
    case DF_TYPE_DATE:
        df_format_date(df_column_int32(col, r), buf, sz);
        break;
    case DF_TYPE_TIMESTAMP:
        df_format_timestamp(df_column_int64(col, r), buf, sz);
        break;
    default:
        snprintf(buf, sz, "%lld", (long long)df_column_int64(col, r));
        break;
    }
}

static int to_string(struct df__ctx *c, const struct df__vec *a, struct df__vec *out)
{
    struct df_column *col = df_column_new(DF_TYPE_STRING, 0);
    df_column_reserve(col, c->n, c->n * 8);
    char buf[64];
    for (int64_t i = 0; i < c->n; i++) {
        if (!df_column_is_valid(a->col, a->off + i)) {
            df_column_append_null(col);
            continue;
        }
        value_text(a, i, buf, sizeof(buf));
        df_column_append_string(col, buf, (int64_t)strlen(buf));
    }
    return df__finish(c, col, out);
}

/* Parses text (trimmed) as type t into the slot; false if it does not parse. */
static bool parse_text(const char *s, int64_t len, df_type t, void *slot)
{
    while (len > 0 && isspace((unsigned char)*s))
        s++, len--;
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        len--;
    char buf[128];
    if (len == 0 || len >= (int64_t)sizeof(buf))
        return false;
    memcpy(buf, s, (size_t)len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    switch (t) {
    case DF_TYPE_INT64:
        *(int64_t *)slot = strtoll(buf, &end, 10);
        break;
    case DF_TYPE_FLOAT64:
        *(double *)slot = strtod(buf, &end);
        break;
    case DF_TYPE_DATE:
        return df_parse_date(buf, (size_t)len, slot) == 0;
    case DF_TYPE_TIMESTAMP:
        return df_parse_timestamp(buf, (size_t)len, slot) == 0;
    default: {
        static const char *const yes[] = {"true", "t", "1", "yes", "y"};
        static const char *const no[] = {"false", "f", "0", "no", "n"};
        for (int k = 0; k < 5; k++) {
            if (strcasecmp(buf, yes[k]) == 0 || strcasecmp(buf, no[k]) == 0) {
                *(uint8_t *)slot = strcasecmp(buf, yes[k]) == 0;
                return true;
            }
        }
        return false;
    }
    }
    return errno == 0 && end && *end == '\0';
}

static int from_string(struct df__ctx *c, df_type t, const struct df__vec *a, struct df_column *col)
{
    size_t w = df_type_width(t);
    for (int64_t i = 0; i < c->n; i++) {
        int64_t len;
        const char *s = df_column_string(a->col, a->off + i, &len);
        if (!df__bit(col->validity, i) ||
            !parse_text(s, len, t, (char *)col->values + (size_t)i * w))
            df__bit_clear(col->validity, i);
    }
    return FR_OK;
}

static void float_to_int(const double *x, int64_t *r, uint8_t *valid, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
            r[i] = (int64_t)v; /* truncates toward zero */
        else
            df__bit_clear(valid, i);
    }
}

/* Fixed-width to fixed-width conversions into col (validity preset). */
static void convert_fixed(df_type from, df_type to, const void *src, struct df_column *col,
                          int64_t n)
{
    void *dst = col->values;
    if (from == DF_TYPE_FLOAT64 && to == DF_TYPE_INT64) {
        float_to_int(src, dst, col->validity, n);
        return;
    }
#define CONVERT(S, D, EXPR)                                                                        \
    do {                                                                                           \
        const S *x = src;                                                                          \
        D *r = dst;                                                                                \
        for (int64_t i = 0; i < n; i++)                                                            \
            r[i] = (EXPR);                                                                         \
    } while (0)
    if (from == DF_TYPE_INT64 && to == DF_TYPE_FLOAT64)
        CONVERT(int64_t, double, (double)x[i]);
    else if (from == DF_TYPE_BOOL && to == DF_TYPE_INT64)
        CONVERT(uint8_t, int64_t, x[i]);
    else if (from == DF_TYPE_BOOL && to == DF_TYPE_FLOAT64)
        CONVERT(uint8_t, double, x[i]);
    else if (from == DF_TYPE_INT64 && to == DF_TYPE_BOOL)
        CONVERT(int64_t, uint8_t, x[i] != 0);
    else if (from == DF_TYPE_FLOAT64 && to == DF_TYPE_BOOL)
        CONVERT(double, uint8_t, x[i] != 0.0);
    else if (from == DF_TYPE_DATE && to == DF_TYPE_TIMESTAMP)
        CONVERT(int32_t, int64_t, (int64_t)x[i] * MICROS_PER_DAY);
    else if (from == DF_TYPE_TIMESTAMP && to == DF_TYPE_DATE)
        CONVERT(
            int64_t, int32_t,
            (int32_t)(x[i] >= 0 ? x[i] / MICROS_PER_DAY : -((-(x[i] + 1)) / MICROS_PER_DAY) - 1));
#undef CONVERT
}

int df__eval_cast(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0};
    struct df_column *col = NULL;
    int rc = df__eval(nd->args[0], c, &a);
    if (rc != FR_OK)
        return rc;
    df_type from = a.col->type, to = nd->type;
    if (from == to) {
        *out = a;
        return FR_OK;
    }
    if (to == DF_TYPE_STRING) {
        rc = to_string(c, &a, out);
        goto out;
    }
    if ((rc = df__col_fixed(c, to, true, &col)) != FR_OK)
        goto out;
    uint8_t *owned = NULL;
    df__bits_and(col->validity, df__vec_bits(&a, c->n, &owned), c->n);
    free(owned);
    if (from == DF_TYPE_STRING)
        from_string(c, to, &a, col);
    else
        convert_fixed(from, to, df__vec_values(&a), col, c->n);
    rc = df__finish(c, col, out);
out:
    df__vec_release(c, &a);
    return rc;
}
