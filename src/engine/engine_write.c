/* engine_write: renders table rows as JSON arrays, CSV or NDJSON into an
 * fr_buf, chunk by chunk. Floats use the shortest of %.15g/%.16g/%.17g that
 * reads back exactly; strings are escaped so the output is always valid
 * JSON (invalid UTF-8 becomes U+FFFD). */
#include "engine_io_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t df__format_int64(int64_t v, char *out)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t k = 0;
    if (v < 0)
        out[k++] = '-';
    while (n)
        out[k++] = tmp[--n];
    out[k] = '\0';
    return k;
}

size_t df__format_float64(double v, char *out)
{
    return fr_format_double(v, out);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/* The length of the run of ASCII bytes s[0, n) starts with, read 32 bytes at
 * a time (most text columns are ASCII through and through). */
static size_t ascii_run(const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, s + i, 32);
        if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ULL)
            break;
    }
    while (i < n && s[i] < 0x80)
        i++;
    return i;
}

/* Every byte of s[0, n) is in a valid UTF-8 sequence. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i += ascii_run(s + i, n - i);
            continue;
        }
        size_t len = utf8_seq(s + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

/* Appends s with each byte of invalid UTF-8 as U+FFFD (as df__json_escape). */
static void append_repaired(struct df_column *out, const unsigned char *s, size_t n)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(s + i, n - i);
        if (len == 0) {
            fr_buf_append(&b, "\xEF\xBF\xBD", 3);
            i++;
        } else {
            fr_buf_append(&b, (const char *)s + i, len);
            i += len;
        }
    }
    df_column_append_string(out, b.data ? b.data : "", (int64_t)b.len);
    fr_buf_cleanup(&b);
}

struct df_column *df__utf8_repaired(const struct df_column *c, int64_t start, int64_t n)
{
    if (c->type != DF_TYPE_STRING || n <= 0)
        return NULL;
    /* the rows' bytes are one run: valid as a whole with no value starting
     * inside a sequence (on a continuation byte) means every value is valid */
    const unsigned char *d = (const unsigned char *)c->data;
    int64_t lo = c->offsets[start], hi = c->offsets[start + n];
    if (hi <= lo || ascii_run(d + lo, (size_t)(hi - lo)) == (size_t)(hi - lo))
        return NULL; /* all ASCII: no value can start inside a sequence */
    bool ok = utf8_valid(d + lo, (size_t)(hi - lo));
    for (int64_t r = start; ok && r < start + n; r++)
        ok = c->offsets[r] == c->offsets[r + 1] || (d[c->offsets[r]] & 0xC0) != 0x80;
    if (ok)
        return NULL;
    struct df_column *out = df_column_new(DF_TYPE_STRING, n);
    for (int64_t r = start; r < start + n; r++) {
        if (!df_column_is_valid(c, r))
            df_column_append_null(out);
        else
            append_repaired(out, d + c->offsets[r], (size_t)(c->offsets[r + 1] - c->offsets[r]));
    }
    return out;
}

void df__json_escape(struct fr_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the pending run of bytes that need no escape */
    fr_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0x80 ? utf8_seq(u + i, n - i) : 0;
        if (len) {
            i += len;
            continue;
        }
        fr_buf_append(b, s + run, i - run);
        char esc[8];
        switch (c) {
        case '"':
            fr_buf_puts(b, "\\\"");
            break;
        case '\\':
            fr_buf_puts(b, "\\\\");
            break;
        case '\n':
            fr_buf_puts(b, "\\n");
            break;
        case '\r':
            fr_buf_puts(b, "\\r");
            break;
        case '\t':
            fr_buf_puts(b, "\\t");
            break;
        case '\b':
            fr_buf_puts(b, "\\b");
            break;
        case '\f':
            fr_buf_puts(b, "\\f");
            break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof(esc), "\\u%04x", c);
                fr_buf_puts(b, esc);
            } else {
                fr_buf_puts(b, "\\ufffd"); /* a byte of invalid UTF-8 */
            }
        }
        run = ++i;
    }
    fr_buf_append(b, s + run, n - run);
    fr_buf_putc(b, '"');
}

/* ISO text of a date or timestamp into out (>= 64 bytes); false outside the
 * years 0001..9999, where the value is written as its plain number instead
 * (the calendar code does not take extreme values). */
static bool format_temporal(const struct df_column *c, int64_t i, char *out)
{
    if (c->type == DF_TYPE_DATE) {
        int32_t d = df_column_int32(c, i);
        if (d < -719162 || d > 2932896)
            return false;
        df_format_date(d, out, 64);
        return true;
    }
    int64_t us = df_column_int64(c, i);
    if (us < -62135596800000000LL || us > 253402300799999999LL)
        return false;
    df_format_timestamp(us, out, 64);
    return true;
}

static void put_raw_temporal(struct fr_buf *b, const struct df_column *c, int64_t i)
{
    char tmp[24];
    int64_t v = c->type == DF_TYPE_DATE ? df_column_int32(c, i) : df_column_int64(c, i);
    fr_buf_append(b, tmp, df__format_int64(v, tmp));
}

static void put_json_value(struct fr_buf *b, const struct df_column *c, int64_t i)
{
    char tmp[80];
    size_t n;
    if (!df_column_is_valid(c, i)) {
        fr_buf_append(b, "null", 4);
        return;
    }
    switch (c->type) {
    case DF_TYPE_BOOL:
        fr_buf_puts(b, df_column_bool(c, i) ? "true" : "false");
        return;
    case DF_TYPE_FLOAT64:
        n = df__format_float64(df_column_float64(c, i), tmp);
        fr_buf_append(b, n ? tmp : "null", n ? n : 4);
        return;
    case DF_TYPE_STRING: {
        int64_t len;
        const char *s = df_column_string(c, i, &len);
        df__json_escape(b, s, (size_t)len);
        return;
    }
    case DF_TYPE_DATE:
    case DF_TYPE_TIMESTAMP:
        if (!format_temporal(c, i, tmp + 1)) {
            put_raw_temporal(b, c, i);
            return;
        }
        tmp[0] = '"';
        fr_buf_puts(b, tmp);
        fr_buf_putc(b, '"');
        return;
    default:
        n = df__format_int64(df_column_int64(c, i), tmp);
        fr_buf_append(b, tmp, n);
        return;
    }
}

void df_write_json_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b)
{
    for (int64_t r = start; r < start + n; r++) {
        if (r != start)
            fr_buf_putc(b, ',');
        fr_buf_putc(b, '[');
        for (int j = 0; j < t->ncols; j++) {
            if (j)
                fr_buf_putc(b, ',');
            put_json_value(b, t->cols[j], r);
        }
        fr_buf_putc(b, ']');
    }
}

void df_write_ndjson_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b)
{
    for (int64_t r = start; r < start + n; r++) {
        fr_buf_putc(b, '{');
        for (int j = 0; j < t->ncols; j++) {
            if (j)
                fr_buf_putc(b, ',');
            df__json_escape(b, t->names[j], strlen(t->names[j]));
            fr_buf_putc(b, ':');
            put_json_value(b, t->cols[j], r);
        }
        fr_buf_append(b, "}\n", 2);
    }
}

/* A CSV field, quoted when it holds the delimiter, a quote, CR or LF, has
 * leading or trailing spaces, or is empty (an empty unquoted field is null). */
static void put_csv_text(struct fr_buf *b, const char *s, size_t n)
{
    bool quote = n == 0 || s[0] == ' ' || s[n - 1] == ' ';
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) {
        fr_buf_append(b, s, n);
        return;
    }
    fr_buf_putc(b, '"');
    const char *run = s, *e = s + n, *q;
    while ((q = memchr(run, '"', (size_t)(e - run))) != NULL) {
        fr_buf_append(b, run, (size_t)(q - run + 1));
        fr_buf_putc(b, '"');
        run = q + 1;
    }
    fr_buf_append(b, run, (size_t)(e - run));
    fr_buf_putc(b, '"');
}

static void put_csv_value(struct fr_buf *b, const struct df_column *c, int64_t i)
{
    char tmp[64];
    size_t n;
    if (!df_column_is_valid(c, i))
        return;
    switch (c->type) {
    case DF_TYPE_BOOL:
        fr_buf_puts(b, df_column_bool(c, i) ? "true" : "false");
        return;
    case DF_TYPE_FLOAT64: {
        double v = df_column_float64(c, i);
        n = df__format_float64(v, tmp);
        if (n)
            fr_buf_append(b, tmp, n);
        else
            fr_buf_puts(b, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    case DF_TYPE_STRING: {
        int64_t len;
        const char *s = df_column_string(c, i, &len);
        put_csv_text(b, s, (size_t)len);
        return;
    }
    case DF_TYPE_DATE:
    case DF_TYPE_TIMESTAMP:
        if (format_temporal(c, i, tmp))
            fr_buf_puts(b, tmp);
        else
            put_raw_temporal(b, c, i);
        return;
    default:
        n = df__format_int64(df_column_int64(c, i), tmp);
        fr_buf_append(b, tmp, n);
        return;
    }
}

void df_write_csv_header(const struct df_table *t, struct fr_buf *b)
{
    for (int j = 0; j < t->ncols; j++) {
        if (j)
            fr_buf_putc(b, ',');
        put_csv_text(b, t->names[j], strlen(t->names[j]));
    }
    fr_buf_putc(b, '\n');
}

void df_write_csv_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b)
{
    for (int64_t r = start; r < start + n; r++) {
        for (int j = 0; j < t->ncols; j++) {
            if (j)
                fr_buf_putc(b, ',');
            put_csv_value(b, t->cols[j], r);
        }
        fr_buf_putc(b, '\n');
    }
}
