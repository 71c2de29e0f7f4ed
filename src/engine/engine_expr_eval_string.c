/* engine_expr_eval_string: string functions and like. Lengths and substr
 * positions count UTF-8 characters; lower/upper change ASCII letters only and
 * leave other bytes alone; like knows % (any run) and _ (one character);
 * concat joins its arguments' strings, skipping NULLs. */
#include "engine_expr_int.h"

#include <stdlib.h>
#include <string.h>

static int64_t utf8_step(const char *s, int64_t i, int64_t n)
{
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static int64_t utf8_length(const char *s, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* The byte offset of character index ch (0-based) in s, or n past the end. */
static int64_t utf8_offset(const char *s, int64_t n, int64_t ch)
{
    int64_t i = 0;
    while (ch-- > 0 && i < n)
        i = utf8_step(s, i, n);
    return i;
}

static bool like_match(const char *s, int64_t n, const char *p, int64_t m)
{
    int64_t si = 0, pi = 0, star_p = -1, star_s = 0;
    while (si < n) {
        if (pi < m && p[pi] == '%') {
            star_p = pi++;
            star_s = si;
        } else if (pi < m && p[pi] == '_') {
            si = utf8_step(s, si, n);
            pi++;
        } else if (pi < m && p[pi] == s[si]) {
            si++;
            pi++;
        } else if (star_p >= 0) {
            pi = star_p + 1;
            star_s = utf8_step(s, star_s, n);
            si = star_s;
        } else {
            return false;
        }
    }
    while (pi < m && p[pi] == '%')
        pi++;
    return pi == m;
}

static bool str_test(int op, const char *s, int64_t n, const char *t, int64_t m)
{
    switch (op) {
    case DF__F_STARTS_WITH:
        return m <= n && (m == 0 || memcmp(s, t, (size_t)m) == 0);
    case DF__F_ENDS_WITH:
        return m <= n && (m == 0 || memcmp(s + n - m, t, (size_t)m) == 0);
    default:
        return m == 0 || (m <= n && memmem(s, (size_t)n, t, (size_t)m) != NULL);
    }
}

/* Bool results of a two-string test (like, contains, starts_with, ends_with). */
static int string_pred(int op, bool negated, const struct df__vec *a, const struct df__vec *b,
                       struct df__ctx *c, struct df__vec *out)
{
    struct df_column *col = NULL;
    uint8_t *owned = NULL;
    int rc = df__col_fixed(c, DF_TYPE_BOOL, true, &col);
    if (rc != FR_OK)
        return rc;
    df__bits_and(col->validity, df__vec_bits(a, c->n, &owned), c->n);
    free(owned);
    df__bits_and(col->validity, df__vec_bits(b, c->n, &owned), c->n);
    free(owned);
    uint8_t *r = col->values;
    for (int64_t i = 0; i < c->n; i++) {
        int64_t n, m;
        const char *s = df_column_string(a->col, a->off + i, &n);
        const char *t = df_column_string(b->col, b->off + i, &m);
        bool v = op < 0 ? like_match(s, n, t, m) : str_test(op, s, n, t, m);
        r[i] = v != negated;
    }
    return df__finish(c, col, out);
}

int df__eval_like(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec a = {0}, b = {0};
    int rc = df__eval(nd->args[0], c, &a);
    if (rc != FR_OK)
        return rc;
    if ((rc = df__eval(nd->args[1], c, &b)) == FR_OK)
        rc = string_pred(-1, nd->negated, &a, &b, c, out);
    df__vec_release(c, &a);
    df__vec_release(c, &b);
    return rc;
}

static void append_case(struct df_column *col, const char *s, int64_t n, bool upper)
{
    int64_t start = col->data_len;
    df_column_append_string(col, s, n);
    if (!df_column_ok(col))
        return;
    char *d = col->data + start;
    for (int64_t i = 0; i < n; i++) {
        char ch = d[i];
        if (upper && ch >= 'a' && ch <= 'z')
            d[i] = (char)(ch - 'a' + 'A');
        else if (!upper && ch >= 'A' && ch <= 'Z')
            d[i] = (char)(ch - 'A' + 'a');
    }
}

/* substr(s, start[, len]): characters [start, start+len) of s, 1-based,
 * clipped to the string (SQL semantics: start 0 with len 2 gives one char). */
static void append_substr(struct df_column *col, const char *s, int64_t n, int64_t start,
                          const int64_t *len)
{
    int64_t first = start < 1 ? 1 : start, last = INT64_MAX;
    if (len && (*len < 0 || __builtin_add_overflow(start, *len, &last)))
        last = *len < 0 ? first : INT64_MAX;
    if (last <= first) {
        df_column_append_string(col, "", 0);
        return;
    }
    int64_t b0 = utf8_offset(s, n, first - 1);
    int64_t b1 = last == INT64_MAX ? n : b0 + utf8_offset(s + b0, n - b0, last - first);
    df_column_append_string(col, s + b0, b1 - b0);
}

static int string_map(const struct df__node *nd, struct df__ctx *c, const struct df__vec *v,
                      struct df__vec *out)
{
    bool is_len = nd->op == DF__F_LENGTH;
    struct df_column *col = NULL;
    int rc = FR_OK;
    if (is_len)
        rc = df__col_fixed(c, DF_TYPE_INT64, false, &col);
    else
        df_column_reserve(col = df_column_new(DF_TYPE_STRING, 0), c->n,
                          v[0].col->offsets[v[0].off + c->n] - v[0].col->offsets[v[0].off]);
    if (rc != FR_OK)
        return rc;
    for (int64_t i = 0; i < c->n; i++) {
        bool valid = true;
        for (int k = 0; k < nd->nargs; k++)
            valid = valid && df_column_is_valid(v[k].col, v[k].off + i);
        int64_t n;
        const char *s = df_column_string(v[0].col, v[0].off + i, &n);
        if (is_len) {
            ((int64_t *)col->values)[i] = valid ? utf8_length(s, n) : 0;
            if (!valid)
                df_column_set_null(col, i);
        } else if (!valid) {
            df_column_append_null(col);
        } else if (nd->op == DF__F_SUBSTR) {
            const int64_t *len = nd->nargs > 2 ? (const int64_t *)df__vec_values(&v[2]) + i : NULL;
            append_substr(col, s, n, ((const int64_t *)df__vec_values(&v[1]))[i], len);
        } else {
            append_case(col, s, n, nd->op == DF__F_UPPER);
        }
    }
    return df__finish(c, col, out);
}

int df__eval_string_func(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec v[3] = {{0}, {0}, {0}};
    int rc = FR_OK, k;
    for (k = 0; k < nd->nargs && rc == FR_OK; k++)
        rc = df__eval(nd->args[k], c, &v[k]);
    if (rc == FR_OK) {
        if (nd->op == DF__F_CONTAINS || nd->op == DF__F_STARTS_WITH || nd->op == DF__F_ENDS_WITH)
            rc = string_pred(nd->op, false, &v[0], &v[1], c, out);
        else
            rc = string_map(nd, c, v, out);
    }
    for (k = 0; k < 3; k++)
        df__vec_release(c, &v[k]);
    return rc;
}

int df__eval_concat(const struct df__node *nd, struct df__ctx *c, struct df__vec *out)
{
    struct df__vec *v = fr_xcalloc((size_t)nd->nargs + 1, sizeof(*v));
    int rc = FR_OK, k;
    for (k = 0; k < nd->nargs && rc == FR_OK; k++)
        rc = df__eval(nd->args[k], c, &v[k]);
    struct df_column *col = NULL;
    if (rc == FR_OK) {
        int64_t bytes = 0;
        for (k = 0; k < nd->nargs; k++)
            bytes += v[k].col->offsets[v[k].off + c->n] - v[k].col->offsets[v[k].off];
        df_column_reserve(col = df_column_new(DF_TYPE_STRING, 0), c->n, bytes);
    }
    struct fr_buf b;
    fr_buf_init(&b);
    for (int64_t i = 0; rc == FR_OK && i < c->n; i++) {
        b.len = 0;
        for (k = 0; k < nd->nargs; k++) {
            int64_t n;
            if (!df_column_is_valid(v[k].col, v[k].off + i))
                continue;
            const char *s = df_column_string(v[k].col, v[k].off + i, &n);
            fr_buf_append(&b, s, (size_t)n);
        }
        df_column_append_string(col, b.data ? b.data : "", (int64_t)b.len);
    }
    fr_buf_cleanup(&b);
    for (k = 0; k < nd->nargs; k++)
        df__vec_release(c, &v[k]);
    free(v);
    return rc == FR_OK ? df__finish(c, col, out) : rc;
}
