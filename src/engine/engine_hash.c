/* engine_hash: key hashing and key equality shared by aggregation and join
 * (the grouping table is in engine_gtab.c). Strings hash with XXH3 (inlined); integers with a
 * 64-bit finalizer; an integral float64 hashes like the equal int64 so that
 * joins across the two types partition and match consistently. */
#include "engine_ops_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define NULL_HASH 0x6a09e667f3bcc908ull
#define NAN_HASH 0xbb67ae8584caa73bull

int64_t df__morsel_rows(const struct df_exec *ex)
{
    if (ex && ex->opts && ex->opts->morsel_size_rows > 0)
        return ex->opts->morsel_size_rows;
    return DF__MORSEL_DEFAULT;
}

void *df__alloc_big(size_t bytes)
{
    return fr_try_malloc_big(bytes, NULL);
}

int df__grow_big(void **p, size_t elem, int64_t old_n, int64_t new_n, bool zero)
{
    size_t ob = elem * (size_t)old_n, nb = elem * (size_t)new_n;
    void *q;
    if (nb < (8u << 20)) {
        q = fr_try_realloc(*p, nb ? nb : 1);
    } else if (ob >= (32u << 20)) {
        /* already large (an mmap of its own past main.c's mmap threshold,
         * 32 MiB): realloc moves the pages
         * (mremap) instead of copying into fresh ones; the new tail is
         * advised onto huge pages too */
        q = fr_try_realloc(*p, nb);
        if (q) {
            uintptr_t lo = ((uintptr_t)q + ob + 4095) & ~(uintptr_t)4095;
            uintptr_t hi = ((uintptr_t)q + nb) & ~(uintptr_t)4095;
            if (hi > lo)
                madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
        }
    } else {
        q = df__alloc_big(nb);
        if (q && ob)
            memcpy(q, *p, ob < nb ? ob : nb);
        if (q)
            fr_free_big(*p);
    }
    if (!q)
        return FR_ETOOLARGE;
    if (zero && nb > ob)
        memset((char *)q + ob, 0, nb - ob);
    *p = q;
    return FR_OK;
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Integral values in int64 range hash as that int64; NaNs all alike. */
static inline uint64_t hash_double(double f)
{
    if (f != f)
        return NAN_HASH;
    if (f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
        int64_t i = (int64_t)f;
        if ((double)i == f)
            return mix64((uint64_t)i);
    }
    uint64_t bits;
    memcpy(&bits, &f, sizeof(bits));
    return mix64(bits);
}

static uint64_t hash_value(const struct df_column *c, int64_t r)
{
    if (!df_column_is_valid(c, r))
        return NULL_HASH;
    switch (c->type) {
    case DF_TYPE_STRING: {
        int64_t n;
        const char *p = df_column_string(c, r, &n);
        return XXH3_64bits(p, (size_t)n);
    }
    case DF_TYPE_FLOAT64:
        return hash_double(df_column_float64(c, r));
    case DF_TYPE_BOOL:
        return mix64(df_column_bool(c, r));
    case DF_TYPE_DATE:
        return mix64((uint64_t)(int64_t)df_column_int32(c, r));
    default:
        return mix64((uint64_t)df_column_int64(c, r));
    }
}

/* The first column's hash, with tight loops for the common types. */
static void hash_first(const struct df_column *c, int64_t start, int64_t n, uint64_t *out)
{
    if (c->validity == NULL && c->type == DF_TYPE_STRING) {
        const int64_t *off = c->offsets + start;
        for (int64_t i = 0; i < n; i++)
            out[i] = XXH3_64bits(c->data + off[i], (size_t)(off[i + 1] - off[i]));
    } else if (c->validity == NULL && (c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP)) {
        const int64_t *v = (const int64_t *)c->values + start;
        for (int64_t i = 0; i < n; i++)
            out[i] = mix64((uint64_t)v[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            out[i] = hash_value(c, start + i);
    }
}

/* Combines column c's hashes of rows [start, start+n) into out, with tight
 * loops for the common types (the values equal hash_value's). */
static void hash_combine(const struct df_column *c, int64_t start, int64_t n, uint64_t *out)
{
    const uint64_t m = 0x9e3779b97f4a7c15ull;
    if (c->validity == NULL && c->type == DF_TYPE_STRING) {
        const int64_t *off = c->offsets + start;
        for (int64_t i = 0; i < n; i++)
            out[i] =
                mix64(out[i] * m + XXH3_64bits(c->data + off[i], (size_t)(off[i + 1] - off[i])));
    } else if (c->validity == NULL && (c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP)) {
        const int64_t *v = (const int64_t *)c->values + start;
        for (int64_t i = 0; i < n; i++)
            out[i] = mix64(out[i] * m + mix64((uint64_t)v[i]));
    } else {
        for (int64_t i = 0; i < n; i++)
            out[i] = mix64(out[i] * m + hash_value(c, start + i));
    }
}

void df__hash_columns(const struct df_column *const *cols, int ncols, int64_t start, int64_t n,
                      uint64_t *out)
{
    if (ncols == 0) {
        memset(out, 0, sizeof(uint64_t) * (size_t)n);
        return;
    }
    hash_first(cols[0], start, n, out);
    for (int k = 1; k < ncols; k++)
        hash_combine(cols[k], start, n, out);
}

static bool numeric_equal(const struct df_column *a, int64_t ra, const struct df_column *b,
                          int64_t rb)
{
    if (a->type == DF_TYPE_FLOAT64 && b->type == DF_TYPE_FLOAT64) {
        double x = df_column_float64(a, ra), y = df_column_float64(b, rb);
        return x == y || (x != x && y != y);
    }
    if (a->type == DF_TYPE_FLOAT64)
        return numeric_equal(b, rb, a, ra);
    /* a is int64, b float64: equal only to an integral float in range */
    double f = df_column_float64(b, rb);
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
        return false;
    int64_t i = (int64_t)f;
    return (double)i == f && i == df_column_int64(a, ra);
}

static bool value_equal(const struct df_column *a, int64_t ra, const struct df_column *b,
                        int64_t rb)
{
    bool va = df_column_is_valid(a, ra), vb = df_column_is_valid(b, rb);
    if (!va || !vb)
        return va == vb;
    if (a->type != b->type || a->type == DF_TYPE_FLOAT64)
        return numeric_equal(a, ra, b, rb);
    switch (a->type) {
    case DF_TYPE_STRING: {
        int64_t na, nb;
        const char *pa = df_column_string(a, ra, &na);
        const char *pb = df_column_string(b, rb, &nb);
        return na == nb && df__bytes_equal(pa, pb, na);
    }
    case DF_TYPE_BOOL:
        return df_column_bool(a, ra) == df_column_bool(b, rb);
    case DF_TYPE_DATE:
        return df_column_int32(a, ra) == df_column_int32(b, rb);
    default:
        return df_column_int64(a, ra) == df_column_int64(b, rb);
    }
}

bool df__keys_equal(const struct df_column *const *a, int64_t ra, const struct df_column *const *b,
                    int64_t rb, int ncols)
{
    for (int k = 0; k < ncols; k++)
        if (!value_equal(a[k], ra, b[k], rb))
            return false;
    return true;
}

bool df__keys_have_null(const struct df_column *const *cols, int ncols, int64_t r)
{
    for (int k = 0; k < ncols; k++)
        if (!df_column_is_valid(cols[k], r))
            return true;
    return false;
}
