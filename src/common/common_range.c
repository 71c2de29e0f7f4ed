/* common_range: the Range header of RFC 9110 section 14 as the internal
 * dataset endpoint takes it (one range of bytes; several are refused) and
 * the entity tag of a file, which a worker uses to notice that the file
 * changed between two of its range reads. */
#include "common.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define RANGE_VALUE_MAX 256
/* 18 digits always fit int64; a longer number saturates (a position past
 * any file). */
#define POS_DIGITS_MAX 18

static const char *skip_ows(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Digits at *p: 1 with *out (saturated at INT64_MAX), 0 when there are none. */
static int read_pos(const char **p, const char *e, int64_t *out)
{
    const char *q = *p;
    int64_t v = 0;
    int n = 0;
    while (q < e && *q >= '0' && *q <= '9') {
        if (n < POS_DIGITS_MAX)
            v = v * 10 + (*q - '0');
        else
            v = INT64_MAX;
        n++;
        q++;
    }
    *p = q;
    *out = v;
    return n > 0;
}

enum fr_range_kind fr_range_parse(const char *value, int64_t size, int64_t *start, int64_t *end)
{
    if (!value)
        return FR_RANGE_NONE;
    size_t n = strnlen(value, RANGE_VALUE_MAX + 1);
    if (n > RANGE_VALUE_MAX)
        return FR_RANGE_INVALID;
    const char *p = skip_ows(value, value + n), *e = value + n;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    const char *eq = memchr(p, '=', (size_t)(e - p));
    if (!eq || eq == p)
        return FR_RANGE_INVALID;
    if ((size_t)(eq - p) != 5 || strncasecmp(p, "bytes", 5) != 0)
        return FR_RANGE_NONE; /* RFC 9110 14.2: an unknown unit is ignored */
    p = skip_ows(eq + 1, e);
    for (const char *c = p; c < e; c++)
        if (*c == ',')
            return FR_RANGE_MULTIPLE;
    int64_t a = -1, b = -1;
    bool has_a = read_pos(&p, e, &a);
    p = skip_ows(p, e);
    if (p == e || *p != '-')
        return FR_RANGE_INVALID;
    p = skip_ows(p + 1, e);
    bool has_b = read_pos(&p, e, &b);
    if (p != e || (!has_a && !has_b))
        return FR_RANGE_INVALID;
    if (!has_a) { /* suffix: the last b bytes */
        if (b == 0 || size == 0)
            return FR_RANGE_UNSATISFIABLE;
        *start = b >= size ? 0 : size - b;
        *end = size;
        return FR_RANGE_ONE;
    }
    if (has_b && b < a)
        return FR_RANGE_INVALID;
    if (a >= size)
        return FR_RANGE_UNSATISFIABLE;
    *start = a;
    *end = !has_b || b >= size - 1 ? size : b + 1;
    return FR_RANGE_ONE;
}

void fr_etag_of(int64_t size, int64_t mtime_ns, char out[FR_ETAG_MAX])
{
    snprintf(out, FR_ETAG_MAX, "\"%llx-%llx\"", (unsigned long long)size,
             (unsigned long long)mtime_ns);
}
