/* expr_fixture: the small table the expression tests evaluate against and a
 * way to print a column as "v0|v1|..." so golden cases read as text. */
#ifndef FRAMED_TEST_EXPR_FIXTURE_H
#define FRAMED_TEST_EXPR_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define FIX_ROWS 6

/* new: id, v, f, s, b, d, ts, num, "we""ird" (see the values below). */
static struct df_table *fixture_table(void)
{
    static const int64_t v[] = {10, -3, 0, 0, 7, INT64_MAX};
    static const double f[] = {1.5, -2.5, 0.0, 0.0, 2.0, 1e300};
    static const char *const s[] = {"abc", "h\xc3\xa9llo", NULL, "", "ABC", "a_b%c"};
    static const char *const num[] = {"12", " 3 ", "x", NULL, "1.5", "-7"};
    static const int b[] = {1, 0, -1, 1, 0, 1};
    static const char *const d[] = {"2024-01-31", "2023-12-01", NULL,
                                    "2024-02-29", "1969-12-31", "2000-01-01"};
    static const char *const ts[] = {
        "2024-01-31T10:30:00Z", "1969-12-31T23:59:59Z",   NULL,
        "2000-01-01T00:00:00Z", "2024-02-29T12:00:00.5Z", "2000-01-01T00:00:00Z"};
    struct df_column *c[9];
    c[0] = df_column_new(DF_TYPE_INT64, 0);
    c[1] = df_column_new(DF_TYPE_INT64, 0);
    c[2] = df_column_new(DF_TYPE_FLOAT64, 0);
    c[3] = df_column_new(DF_TYPE_STRING, 0);
    c[4] = df_column_new(DF_TYPE_BOOL, 0);
    c[5] = df_column_new(DF_TYPE_DATE, 0);
    c[6] = df_column_new(DF_TYPE_TIMESTAMP, 0);
    c[7] = df_column_new(DF_TYPE_STRING, 0);
    c[8] = df_column_new(DF_TYPE_INT64, 0);
    for (int i = 0; i < FIX_ROWS; i++) {
        df_column_append_int64(c[0], i + 1);
        if (i == 2)
            df_column_append_null(c[1]);
        else
            df_column_append_int64(c[1], v[i]);
        if (i == 3)
            df_column_append_null(c[2]);
        else
            df_column_append_float64(c[2], f[i]);
        if (s[i])
            df_column_append_string(c[3], s[i], (int64_t)strlen(s[i]));
        else
            df_column_append_null(c[3]);
        if (b[i] < 0)
            df_column_append_null(c[4]);
        else
            df_column_append_bool(c[4], b[i]);
        int32_t days;
        int64_t us;
        if (d[i] && df_parse_date(d[i], strlen(d[i]), &days) == 0)
            df_column_append_int32(c[5], days);
        else
            df_column_append_null(c[5]);
        if (ts[i] && df_parse_timestamp(ts[i], strlen(ts[i]), &us) == 0)
            df_column_append_int64(c[6], us);
        else
            df_column_append_null(c[6]);
        if (num[i])
            df_column_append_string(c[7], num[i], (int64_t)strlen(num[i]));
        else
            df_column_append_null(c[7]);
        df_column_append_int64(c[8], i + 1);
    }
    static const char *const names[] = {"id", "v", "f", "s", "b", "d", "ts", "num", "we\"ird"};
    struct df_table *t = df_table_new();
    for (int i = 0; i < 9; i++)
        df_table_add(t, names[i], c[i]);
    return t;
}

static void fixture_format_float(double x, char *buf, size_t sz)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sz, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
}

/* new: the column's values as text joined by '|', "null" for nulls. */
static char *fixture_render(const struct df_column *c)
{
    struct fr_buf b;
    fr_buf_init(&b);
    char tmp[64];
    for (int64_t i = 0; i < c->length; i++) {
        if (i)
            fr_buf_putc(&b, '|');
        if (!df_column_is_valid(c, i)) {
            fr_buf_puts(&b, "null");
            continue;
        }
        int64_t n;
        const char *s;
        switch (c->type) {
        case DF_TYPE_BOOL:
            fr_buf_puts(&b, df_column_bool(c, i) ? "true" : "false");
            break;
        case DF_TYPE_FLOAT64:
            fixture_format_float(df_column_float64(c, i), tmp, sizeof(tmp));
            fr_buf_puts(&b, tmp);
            break;
        case DF_TYPE_STRING:
            s = df_column_string(c, i, &n);
            fr_buf_append(&b, s, (size_t)n);
            break;
        case DF_TYPE_DATE:
            df_format_date(df_column_int32(c, i), tmp, sizeof(tmp));
            fr_buf_puts(&b, tmp);
            break;
        case DF_TYPE_TIMESTAMP:
            df_format_timestamp(df_column_int64(c, i), tmp, sizeof(tmp));
            fr_buf_puts(&b, tmp);
            break;
        default:
            fr_buf_printf(&b, "%lld", (long long)df_column_int64(c, i));
            break;
        }
    }
    return fr_buf_steal(&b, NULL);
}

#endif
