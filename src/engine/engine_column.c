/* engine_column: Arrow-layout columns: building by appends with checked
 * allocation, reference counting, take and slice. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t df_type_width(df_type t)
{
    switch (t) {
    case DF_TYPE_BOOL:
        return 1;
    case DF_TYPE_DATE:
        return 4;
    case DF_TYPE_INT64:
    case DF_TYPE_FLOAT64:
    case DF_TYPE_TIMESTAMP:
        return 8;
    case DF_TYPE_NULL:
        return 1;
    case DF_TYPE_STRING:
        return 0;
    }
    return 8;
}

const char *df_type_name(df_type t)
{
    switch (t) {
    case DF_TYPE_NULL:
        return "null";
    case DF_TYPE_BOOL:
        return "bool";
    case DF_TYPE_INT64:
        return "int64";
    case DF_TYPE_FLOAT64:
        return "float64";
    case DF_TYPE_STRING:
        return "string";
    case DF_TYPE_DATE:
        return "date";
    case DF_TYPE_TIMESTAMP:
        return "timestamp";
    }
    return "unknown";
}

int df_type_parse(const char *s, df_type *out)
{
    static const struct {
        const char *name;
        df_type type;
    } names[] = {
        {"bool", DF_TYPE_BOOL},          {"boolean", DF_TYPE_BOOL},
        {"int64", DF_TYPE_INT64},        {"int", DF_TYPE_INT64},
        {"integer", DF_TYPE_INT64},      {"bigint", DF_TYPE_INT64},
        {"float64", DF_TYPE_FLOAT64},    {"double", DF_TYPE_FLOAT64},
        {"float", DF_TYPE_FLOAT64},      {"real", DF_TYPE_FLOAT64},
        {"string", DF_TYPE_STRING},      {"varchar", DF_TYPE_STRING},
        {"text", DF_TYPE_STRING},        {"utf8", DF_TYPE_STRING},
        {"date", DF_TYPE_DATE},          {"timestamp", DF_TYPE_TIMESTAMP},
        {"datetime", DF_TYPE_TIMESTAMP},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].type;
            return FR_OK;
        }
    }
    return FR_EINVAL;
}

struct df_column *df_column_new(df_type type, int64_t capacity)
{
    struct df_column *c = fr_xcalloc(1, sizeof(*c));
    atomic_init(&c->refcount, 1);
    c->type = type;
    /* Buffers are never NULL, even for no rows: readers compute values +
     * start and data + offset, and NULL + 0 is undefined behaviour in C. */
    if (type == DF_TYPE_STRING) {
        c->offsets = fr_xcalloc(1, sizeof(int64_t));
        c->data = fr_xcalloc(1, 16);
        c->data_cap = 16;
    } else {
        c->values = fr_xcalloc(1, 16);
    }
    if (capacity > 0)
        df_column_reserve(c, capacity, type == DF_TYPE_STRING ? capacity * 8 : 0);
    return c;
}

struct df_column *df_column_ref(struct df_column *c)
{
    atomic_fetch_add_explicit(&c->refcount, 1, memory_order_relaxed);
    return c;
}

void df_column_unref(struct df_column *c)
{
    if (!c)
        return;
    if (atomic_fetch_sub_explicit(&c->refcount, 1, memory_order_acq_rel) != 1)
        return;
    free(c->validity);
    fr_free_big(c->values); /* a big one is kept for the next (common_mem.c) */
    fr_free_big(c->offsets);
    fr_free_big(c->data);
    free(c);
}

bool df_column_ok(const struct df_column *c)
{
    return c && !c->oom;
}

static int grow(void **p, int64_t elem, int64_t old_n, int64_t new_n)
{
    void *q = fr_try_realloc(*p, (size_t)(elem * new_n));
    if (!q)
        return FR_ETOOLARGE;
    if (new_n > old_n)
        memset((char *)q + elem * old_n, 0, (size_t)(elem * (new_n - old_n)));
    *p = q;
    return FR_OK;
}

int df_column_reserve(struct df_column *c, int64_t n, int64_t data_bytes)
{
    if (c->oom)
        return FR_ETOOLARGE;
    int64_t need = c->length + n;
    if (need > c->capacity) {
        int64_t cap = c->capacity ? c->capacity : 16;
        while (cap < need)
            cap *= 2;
        int64_t w = (int64_t)df_type_width(c->type);
        if ((w && grow(&c->values, w, c->capacity, cap) != FR_OK) ||
            (c->validity && grow((void **)&c->validity, 1, (c->capacity + 7) / 8, (cap + 7) / 8)) ||
            (c->type == DF_TYPE_STRING &&
             grow((void **)&c->offsets, sizeof(int64_t), c->capacity + 1, cap + 1))) {
            c->oom = true;
            return FR_ETOOLARGE;
        }
        c->capacity = cap;
    }
    if (c->type == DF_TYPE_STRING && c->data_len + data_bytes > c->data_cap) {
        int64_t cap = c->data_cap ? c->data_cap : 64;
        while (cap < c->data_len + data_bytes)
            cap *= 2;
        char *q = fr_try_realloc(c->data, (size_t)cap);
        if (!q) {
            c->oom = true;
            return FR_ETOOLARGE;
        }
        c->data = q;
        c->data_cap = cap;
    }
    return FR_OK;
}

static inline bool room(struct df_column *c)
{
    return c->length < c->capacity || df_column_reserve(c, 1, 0) == FR_OK;
}

static void mark_valid_tail(struct df_column *c)
{
    /* called after length++ for a valid value when a bitmap exists */
    int64_t i = c->length - 1;
    c->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
}

void df_column_set_null(struct df_column *c, int64_t i)
{
    if (!c->validity) {
        int64_t bytes = (c->capacity + 7) / 8;
        c->validity = fr_try_malloc((size_t)(bytes ? bytes : 1));
        if (!c->validity) {
            c->oom = true;
            return;
        }
        memset(c->validity, 0xff, (size_t)(bytes ? bytes : 1));
    }
    if ((c->validity[i >> 3] >> (i & 7)) & 1) {
        c->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
        c->null_count++;
    }
}

void df_column_append_null(struct df_column *c)
{
    if (!room(c))
        return;
    if (c->type == DF_TYPE_STRING)
        c->offsets[c->length + 1] = c->data_len;
    else
        memset((char *)c->values + df_type_width(c->type) * (size_t)c->length, 0,
               df_type_width(c->type));
    c->length++;
    if (c->validity)
        mark_valid_tail(c); /* a grown bitmap's fresh bytes are zero */
    df_column_set_null(c, c->length - 1);
}

#define APPEND_FIXED(fn, ctype)                                                                    \
    void fn(struct df_column *c, ctype v)                                                          \
    {                                                                                              \
        if (!room(c))                                                                              \
            return;                                                                                \
        ((ctype *)c->values)[c->length++] = v;                                                     \
        if (c->validity)                                                                           \
            mark_valid_tail(c);                                                                    \
    }
APPEND_FIXED(df_column_append_int64, int64_t)
APPEND_FIXED(df_column_append_int32, int32_t)
APPEND_FIXED(df_column_append_float64, double)

void df_column_append_bool(struct df_column *c, bool v)
{
    if (!room(c))
        return;
    ((uint8_t *)c->values)[c->length++] = v ? 1 : 0;
    if (c->validity)
        mark_valid_tail(c);
}

void df_column_append_string(struct df_column *c, const char *s, int64_t n)
{
    if (c->length >= c->capacity || c->data_len + n > c->data_cap) {
        if (df_column_reserve(c, 1, n) != FR_OK)
            return;
    }
    if (n)
        memcpy(c->data + c->data_len, s, (size_t)n);
    c->data_len += n;
    c->offsets[++c->length] = c->data_len;
    if (c->validity)
        mark_valid_tail(c);
}

void df_column_append_from(struct df_column *dst, const struct df_column *src, int64_t row)
{
    if (row < 0 || !df_column_is_valid(src, row)) {
        df_column_append_null(dst);
        return;
    }
    switch (src->type) {
    case DF_TYPE_STRING: {
        int64_t n;
        const char *s = df_column_string(src, row, &n);
        df_column_append_string(dst, s, n);
        break;
    }
    case DF_TYPE_BOOL:
        df_column_append_bool(dst, df_column_bool(src, row));
        break;
    case DF_TYPE_DATE:
        df_column_append_int32(dst, df_column_int32(src, row));
        break;
    case DF_TYPE_FLOAT64:
        df_column_append_float64(dst, df_column_float64(src, row));
        break;
    default:
        df_column_append_int64(dst, df_column_int64(src, row));
        break;
    }
}

int64_t df_column_bytes(const struct df_column *c)
{
    int64_t b = (int64_t)sizeof(*c) + c->capacity * (int64_t)df_type_width(c->type);
    if (c->validity)
        b += (c->capacity + 7) / 8;
    if (c->type == DF_TYPE_STRING)
        b += (c->capacity + 1) * 8 + c->data_cap;
    return b;
}

/* Strings of up to 16 bytes move as two 8-byte words (no libc call) when
 * both buffers have room past them: out->data has 16 bytes of slack. */
static void take_strings(struct df_column *out, const struct df_column *c, const int64_t *sel,
                         int64_t n)
{
    int64_t pos = 0;
    const int64_t *off = c->offsets;
    const int64_t safe_src = c->data_cap - DF_STRING_PAD;
    char *dst = out->data;
    out->offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        /* random gathers: the offsets far ahead, the bytes nearer */
        if (i + 32 < n && sel[i + 32] >= 0)
            __builtin_prefetch(&off[sel[i + 32]]);
        if (i + 16 < n && sel[i + 16] >= 0)
            __builtin_prefetch(c->data + off[sel[i + 16]]);
        if (sel[i] >= 0) {
            int64_t a = off[sel[i]], len = off[sel[i] + 1] - a;
            if (len <= 16 && a <= safe_src) {
                uint64_t w0, w1;
                memcpy(&w0, c->data + a, 8);
                memcpy(&w1, c->data + a + 8, 8);
                memcpy(dst + pos, &w0, 8);
                memcpy(dst + pos + 8, &w1, 8);
            } else if (len) {
                memcpy(dst + pos, c->data + a, (size_t)len);
            }
            pos += len;
        }
        out->offsets[i + 1] = pos;
    }
    out->data_len = pos;
}

/* The validity of a take: NULL when every taken row is valid. */
static uint8_t *take_validity(const struct df_column *c, const int64_t *sel, int64_t n,
                              int64_t *nulls, bool *oom)
{
    bool any = false;
    for (int64_t i = 0; i < n && !any; i++)
        any = sel[i] < 0 || (c->validity && !df_column_is_valid(c, sel[i]));
    *nulls = 0;
    *oom = false;
    if (!any)
        return NULL;
    int64_t bytes = (n + 7) / 8;
    uint8_t *v = fr_try_malloc((size_t)(bytes ? bytes : 1));
    if (!v) {
        *oom = true;
        return NULL;
    }
    memset(v, 0, (size_t)(bytes ? bytes : 1));
    int64_t nn = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok = sel[i] >= 0 && df_column_is_valid(c, sel[i]);
        v[i >> 3] |= (uint8_t)((unsigned)ok << (i & 7));
        nn += !ok;
    }
    *nulls = nn;
    return v;
}

/* Large outputs come from huge pages (first touch of 4 KiB pages is slow);
 * the buffers stay ordinary malloc-compatible memory. */
struct df_column *df_column_take(const struct df_column *c, const int64_t *sel, int64_t n)
{
    int64_t bytes = 0;
    if (c->type == DF_TYPE_STRING) {
        const int64_t *off = c->offsets;
        for (int64_t i = 0; i < n; i++)
            if (sel[i] >= 0)
                bytes += off[sel[i] + 1] - off[sel[i]];
    }
    struct df_column *out = df_column_new(c->type, 0);
    size_t w = df_type_width(c->type);
    bool oom = false;
    if (n > 0) {
        if (c->type == DF_TYPE_STRING) {
            free(out->offsets);
            free(out->data);
            out->offsets = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
            out->data = df__alloc_big((size_t)bytes + 16);
            oom = !out->offsets || !out->data;
            out->data_cap = bytes + 16;
        } else {
            free(out->values);
            out->values = df__alloc_big(w * (size_t)n);
            oom = !out->values;
        }
        if (!oom)
            out->validity = take_validity(c, sel, n, &out->null_count, &oom);
    }
    if (oom) {
        if (!out->offsets) /* keep the column a valid empty one */
            out->offsets = fr_xcalloc(1, sizeof(int64_t));
        out->data_cap = out->data ? out->data_cap : 0;
        out->oom = true;
        return out;
    }
    out->capacity = n;
    if (c->type == DF_TYPE_STRING) {
        if (n > 0)
            take_strings(out, c, sel, n);
    } else if (w == 8) {
        const int64_t *src = c->values;
        int64_t *dst = out->values;
        for (int64_t i = 0; i < n; i++) {
            if (i + 16 < n && sel[i + 16] >= 0)
                __builtin_prefetch(&src[sel[i + 16]]);
            int64_t r = sel[i];
            dst[i] = r >= 0 ? src[r] : 0;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            if (sel[i] >= 0)
                memcpy((char *)out->values + (size_t)i * w,
                       (const char *)c->values + (size_t)sel[i] * w, w);
            else
                memset((char *)out->values + (size_t)i * w, 0, w);
        }
    }
    out->length = n;
    return out;
}

/* The validity of rows [start, start + n): NULL when all of them are valid. */
static uint8_t *slice_validity(const struct df_column *c, int64_t start, int64_t n, int64_t *nulls,
                               bool *oom)
{
    *nulls = 0;
    *oom = false;
    if (!c->validity || c->null_count == 0 || n == 0)
        return NULL;
    uint8_t *v = fr_try_malloc((size_t)(n + 7) / 8);
    if (!v) {
        *oom = true;
        return NULL;
    }
    if ((start & 7) == 0) {
        memcpy(v, c->validity + (start >> 3), (size_t)(n + 7) / 8);
        if (n & 7)
            v[n >> 3] &= (uint8_t)((1u << (n & 7)) - 1);
    } else {
        memset(v, 0, (size_t)(n + 7) / 8);
        for (int64_t i = 0; i < n; i++)
            v[i >> 3] |= (uint8_t)((unsigned)df_column_is_valid(c, start + i) << (i & 7));
    }
    int64_t valid = 0;
    for (int64_t b = 0; b < n / 8; b++)
        valid += __builtin_popcount(v[b]);
    if (n & 7)
        valid += __builtin_popcount(v[n >> 3]);
    *nulls = n - valid;
    if (*nulls == 0) {
        free(v);
        return NULL;
    }
    return v;
}

struct df_column *df__column_sized(df_type t, int64_t len, int64_t bytes, bool validity)
{
    struct df_column *c = df_column_new(t, 0);
    if (len == 0)
        return c;
    bool oom;
    if (t == DF_TYPE_STRING) {
        free(c->offsets);
        free(c->data);
        c->offsets = df__alloc_big(sizeof(int64_t) * (size_t)(len + 1));
        c->data = df__alloc_big((size_t)bytes + DF_STRING_PAD);
        c->data_cap = c->data ? bytes + DF_STRING_PAD : 0;
        oom = !c->offsets || !c->data;
        if (c->offsets)
            c->offsets[0] = 0;
        else /* keep the column a valid empty one */
            c->offsets = fr_xcalloc(1, sizeof(int64_t));
    } else {
        free(c->values);
        c->values = df__alloc_big(df_type_width(t) * (size_t)len);
        oom = !c->values;
    }
    if (!oom && validity) {
        c->validity = fr_try_malloc((size_t)(len + 7) / 8);
        oom = !c->validity;
        if (c->validity)
            memset(c->validity, 0, (size_t)(len + 7) / 8);
    }
    if (oom) {
        df_column_unref(c);
        return NULL;
    }
    c->capacity = len;
    return c;
}

/* A copy of rows [start, start + n), clamped to the column: contiguous
 * copies of the values (or of the string bytes, with the offsets rebased),
 * not a gather. */
struct df_column *df_column_slice(const struct df_column *c, int64_t start, int64_t n)
{
    if (start < 0)
        start = 0;
    if (start > c->length)
        start = c->length;
    if (n < 0 || n > c->length - start)
        n = c->length - start;
    size_t w = df_type_width(c->type);
    if (c->type != DF_TYPE_STRING && w == 0) { /* no value buffer: as a take */
        int64_t *sel = fr_try_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
        if (!sel) {
            struct df_column *out = df_column_new(c->type, 0);
            out->oom = true;
            return out;
        }
        for (int64_t i = 0; i < n; i++)
            sel[i] = start + i;
        struct df_column *out = df_column_take(c, sel, n);
        free(sel);
        return out;
    }
    const int64_t *off = c->offsets;
    bool str = c->type == DF_TYPE_STRING, oom = false;
    int64_t a = str ? off[start] : 0, bytes = str ? off[start + n] - a : 0;
    struct df_column *out = df__column_sized(c->type, n, bytes, false);
    if (!out || n == 0) {
        if (!out) {
            out = df_column_new(c->type, 0);
            out->oom = true;
        }
        return out;
    }
    if (str) {
        for (int64_t i = 0; i <= n; i++)
            out->offsets[i] = off[start + i] - a;
        if (bytes)
            memcpy(out->data, c->data + a, (size_t)bytes);
        out->data_len = bytes;
    } else {
        memcpy(out->values, (const char *)c->values + (size_t)start * w, w * (size_t)n);
    }
    out->validity = slice_validity(c, start, n, &out->null_count, &oom);
    if (oom) {
        df_column_unref(out);
        out = df_column_new(c->type, 0);
        out->oom = true;
        return out;
    }
    out->length = n;
    return out;
}

struct df_column *df_column_new_nulls(df_type type, int64_t n)
{
    struct df_column *c = df_column_new(type, n);
    for (int64_t i = 0; i < n; i++)
        df_column_append_null(c);
    return c;
}
