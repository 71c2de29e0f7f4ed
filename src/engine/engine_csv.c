/* engine_csv: the CSV record tokenizer and the text value parsers shared by
 * the CSV reader, the schema inference and the NDJSON reader. The tokenizer
 * is one forward pass over a buffer ending in a '\n' sentinel, so the hot
 * loop for an unquoted field has no bounds check. */
#include "engine_io_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

void df_csv_options_init(struct df_csv_options *o)
{
    o->delimiter = ',';
    o->quote = '"';
    o->header = true;
    o->on_error_null = false;
    o->hints = NULL;
    o->sample_rows = 1000;
}

void df__csv_tok_init(struct df__csv_tok *t, char delim, char quote)
{
    t->delim = delim;
    t->quote = quote;
    t->nfields = 0;
    t->cap = 16;
    t->f = fr_xmalloc(sizeof(*t->f) * (size_t)t->cap);
    t->nlines = 0;
}

void df__csv_tok_cleanup(struct df__csv_tok *t)
{
    free(t->f);
    t->f = NULL;
    t->cap = 0;
}

const char *df__csv_field_text(const struct df__csv_field *f, char quote, struct fr_buf *scratch,
                               size_t *n)
{
    if (!(f->flags & DF__F_ESCAPED)) {
        *n = f->len;
        return f->p;
    }
    scratch->len = 0;
    fr_buf_append(scratch, f->p, f->len);
    char *w = scratch->data;
    const char *r = scratch->data, *e = scratch->data + scratch->len;
    while (r < e) {
        char c = *r++;
        *w++ = c;
        if (c == quote && r < e && *r == quote)
            r++;
    }
    *n = (size_t)(w - scratch->data);
    return scratch->data;
}

bool df__csv_is_null_value(const struct df_options *eo, const char *s, size_t n)
{
    if (!eo)
        return false;
    for (int i = 0; i < eo->n_csv_null_values; i++) {
        const char *v = eo->csv_null_values[i];
        if (strlen(v) == n && memcmp(v, s, n) == 0)
            return true;
    }
    return false;
}

int df__parse_int64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -1;
    uint64_t v = 0;
    bool over = false;
    for (; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return -1;
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (over || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return 1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Exact powers of ten as doubles (10^22 is the largest exact one). */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static bool is_special_float(const char *s, size_t n)
{
    if (n && (s[0] == '-' || s[0] == '+')) {
        s++;
        n--;
    }
    return (n == 3 && (!strncasecmp(s, "inf", 3) || !strncasecmp(s, "nan", 3))) ||
           (n == 8 && !strncasecmp(s, "infinity", 8));
}

static int parse_float_slow(const char *s, size_t n, double *out)
{
    char tmp[128];
    char *buf = n < sizeof(tmp) ? tmp : fr_xmalloc(n + 1);
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *endp;
    errno = 0;
    *out = strtod(buf, &endp);
    int rc = endp == buf + n ? 0 : -1;
    if (buf != tmp)
        free(buf);
    return rc;
}

/* Decimal syntax [+-]digits[.digits][(e|E)[+-]digits], at least one digit.
 * When the significand fits in 2^53 and the power of ten is exact, one
 * IEEE multiplication or division rounds correctly, so the result equals
 * strtod's (Clinger's fast path); other values go to strtod. */
int df__parse_float64(const char *s, size_t n, double *out)
{
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    uint64_t m = 0;
    int ndig = 0, nsig = 0, frac = 0;
    bool slow = false; /* more than 19 significant digits */
    for (; i < n && (unsigned)(s[i] - '0') <= 9; i++, ndig++) {
        if (m == 0 && s[i] == '0')
            continue;
        if (nsig++ < 19)
            m = m * 10 + (uint64_t)(s[i] - '0');
        else
            slow = true;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && (unsigned)(s[i] - '0') <= 9; i++, ndig++) {
            frac++;
            if (m == 0 && s[i] == '0')
                continue;
            if (nsig++ < 19)
                m = m * 10 + (uint64_t)(s[i] - '0');
            else
                slow = true;
        }
    }
    if (ndig == 0)
        return is_special_float(s, n) ? parse_float_slow(s, n, out) : -1;
    int exp10 = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        bool eneg = false;
        if (j < n && (s[j] == '-' || s[j] == '+'))
            eneg = s[j++] == '-';
        if (j == n)
            return -1;
        for (; j < n && (unsigned)(s[j] - '0') <= 9; j++)
            if (exp10 < 100000)
                exp10 = exp10 * 10 + (s[j] - '0');
        if (eneg)
            exp10 = -exp10;
        i = j;
    }
    if (i != n)
        return -1;
    int e = exp10 - frac;
    if (!slow && m <= (1ull << 53) && e >= -22 && e <= 22) {
        double d = (double)m;
        d = e < 0 ? d / pow10_exact[-e] : d * pow10_exact[e];
        *out = neg ? -d : d;
        return 0;
    }
    return parse_float_slow(s, n, out);
}

int df__parse_bool(const char *s, size_t n, bool *out)
{
    if (n == 4 && !strncasecmp(s, "true", 4)) {
        *out = true;
        return 0;
    }
    if (n == 5 && !strncasecmp(s, "false", 5)) {
        *out = false;
        return 0;
    }
    return -1;
}

void df__infer_init(struct df__infer *st)
{
    st->seen = false;
    st->can_int = st->can_float = st->can_bool = st->can_date = st->can_ts = true;
}

void df__infer_add(struct df__infer *st, const char *s, size_t n)
{
    st->seen = true;
    if (st->can_int || st->can_float) {
        int64_t iv;
        int rc = df__parse_int64(s, n, &iv);
        if (rc != 0)
            st->can_int = false;
        if (rc < 0 && st->can_float) {
            double d;
            st->can_float = df__parse_float64(s, n, &d) == 0;
        }
    }
    if (st->can_bool) {
        bool b;
        st->can_bool = df__parse_bool(s, n, &b) == 0;
    }
    if (st->can_date) {
        int32_t d;
        st->can_date = df_parse_date(s, n, &d) == 0;
    }
    if (st->can_ts) {
        int64_t ts;
        st->can_ts = df_parse_timestamp(s, n, &ts) == 0;
    }
}

df_type df__infer_result(const struct df__infer *st)
{
    if (!st->seen)
        return DF_TYPE_STRING;
    if (st->can_int)
        return DF_TYPE_INT64;
    if (st->can_float)
        return DF_TYPE_FLOAT64;
    if (st->can_bool)
        return DF_TYPE_BOOL;
    if (st->can_date)
        return DF_TYPE_DATE;
    if (st->can_ts)
        return DF_TYPE_TIMESTAMP;
    return DF_TYPE_STRING;
}

int df__too_many_columns(struct fr_error *err, const char *what, int64_t n, bool at_least)
{
    return fr_error_setk(err, FR_EVALIDATION, "too-many-columns",
                         "%s has %s%lld columns; at most %d are allowed", what,
                         at_least ? "more than " : "", (long long)(at_least ? FR_MAX_COLUMNS : n),
                         FR_MAX_COLUMNS);
}

const char *df__basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void *df__alloc_large(size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    void *p = fr_try_malloc(n ? n : 1);
    if (p && n >= 2 * huge) {
        uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
        uintptr_t b = ((uintptr_t)p + n) & ~(huge - 1);
        if (b > a)
            (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
    }
    return p;
}
