/* common_json: JSON text as framed writes it. jansson encodes reals with
 * "%.17g" (one precision per dump), which prints 0.1 as 0.10000000000000001;
 * framed prints the shortest text that round-trips, the same as its result
 * writers, so every JSON it writes is re-lexed here and its reals rewritten. */
#include "common.h"

#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t fr_format_double(double v, char *out)
{
    if (!isfinite(v)) {
        out[0] = '\0';
        return 0;
    }
    /* For a normal double, 15 digits always read back when any text of 15
     * or fewer does (DBL_DIG), and %g drops the trailing zeros, so starting
     * at 15 finds the shortest; a subnormal has fewer bits and may need
     * fewer digits (5e-324), so it starts at 1. */
    int len = 0;
    for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        len = snprintf(out, 32, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    if (strspn(out, "-0123456789") == (size_t)len) { /* keep it a float when read back */
        memcpy(out + len, ".0", 3);
        len += 2;
    }
    return (size_t)len;
}

static int collect(const char *buffer, size_t size, void *data)
{
    fr_buf_append(data, buffer, size);
    return 0;
}

/* The end of the string whose opening quote is at s[i] (the index after its
 * closing quote). jansson's output is well-formed: every '"' inside a string
 * is escaped. */
static size_t skip_string(const char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

/* Copies text to out with each number token that holds '.', 'e' or 'E' (a
 * real: integers never do) printed again by fr_format_double. */
static void rewrite_reals(const char *s, size_t n, struct fr_buf *out)
{
    size_t i = 0, copied = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, i, n);
            continue;
        }
        if (c != '-' && (c < '0' || c > '9')) {
            i++;
            continue;
        }
        size_t end = i + strspn(s + i, "+-0123456789.eE");
        if (end > n)
            end = n;
        size_t tok = end - i;
        if (tok < 64 && memchr(s + i, '.', tok) == NULL && memchr(s + i, 'e', tok) == NULL &&
            memchr(s + i, 'E', tok) == NULL) {
            i = end;
            continue;
        }
        char num[64], text[32];
        if (tok < sizeof(num)) {
            memcpy(num, s + i, tok);
            num[tok] = '\0';
            size_t len = fr_format_double(strtod(num, NULL), text);
            if (len > 0) {
                fr_buf_append(out, s + copied, i - copied);
                fr_buf_append(out, text, len);
                copied = end;
            }
        }
        i = end;
    }
    fr_buf_append(out, s + copied, n - copied);
}

char *fr_json_dumps(const struct json_t *j, size_t flags)
{
    struct fr_buf raw, out;
    fr_buf_init(&raw);
    if (!j || json_dump_callback(j, collect, &raw, flags) != 0) {
        fr_buf_cleanup(&raw);
        return NULL;
    }
    if (!raw.data) /* an empty dump (JSON_ENCODE_ANY of nothing) */
        return fr_xstrdup("");
    fr_buf_init(&out);
    rewrite_reals(raw.data, raw.len, &out);
    fr_buf_cleanup(&raw);
    if (!out.data)
        return fr_xstrdup("");
    return fr_buf_steal(&out, NULL);
}
