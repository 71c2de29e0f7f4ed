/* engine_hash: key hashing, key equality and the grouping hash table shared
 * by aggregation and join. Strings hash with XXH3 (inlined); integers with a
 * 64-bit finalizer; an integral float64 hashes like the equal int64 so that
 * joins across the two types partition and match consistently. */
#include "engine_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

enum { GT_GENERIC = 0, GT_I64 = 1, GT_STR = 2 };

#define NULL_HASH 0x6a09e667f3bcc908ull
#define NAN_HASH 0xbb67ae8584caa73bull
#define PREFETCH_AHEAD 8

int64_t df__morsel_rows(const struct df_exec *ex)
{
    if (ex && ex->opts && ex->opts->morsel_size_rows > 0)
        return ex->opts->morsel_size_rows;
    return DF__MORSEL_DEFAULT;
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
    case DF_TYPE_FLOAT64: return hash_double(df_column_float64(c, r));
    case DF_TYPE_BOOL: return mix64(df_column_bool(c, r));
    case DF_TYPE_DATE: return mix64((uint64_t)(int64_t)df_column_int32(c, r));
    default: return mix64((uint64_t)df_column_int64(c, r));
    }
}

/* The first column's hash, with tight loops for the common types. */
static void hash_first(const struct df_column *c, int64_t start, int64_t n, uint64_t *out)
{
    if (c->validity == NULL && c->type == DF_TYPE_STRING) {
        const int64_t *off = c->offsets + start;
        for (int64_t i = 0; i < n; i++)
            out[i] = XXH3_64bits(c->data + off[i], (size_t)(off[i + 1] - off[i]));
    } else if (c->validity == NULL &&
               (c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP)) {
        const int64_t *v = (const int64_t *)c->values + start;
        for (int64_t i = 0; i < n; i++)
            out[i] = mix64((uint64_t)v[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            out[i] = hash_value(c, start + i);
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
        for (int64_t i = 0; i < n; i++)
            out[i] = mix64(out[i] * 0x9e3779b97f4a7c15ull + hash_value(cols[k], start + i));
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
        return na == nb && memcmp(pa, pb, (size_t)na) == 0;
    }
    case DF_TYPE_BOOL: return df_column_bool(a, ra) == df_column_bool(b, rb);
    case DF_TYPE_DATE: return df_column_int32(a, ra) == df_column_int32(b, rb);
    default: return df_column_int64(a, ra) == df_column_int64(b, rb);
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

/* ---- the grouping table ------------------------------------------------ */

void df__gtab_init(struct df__gtab *gt, const df_type *types, int nkeys, bool allow_fast,
                   struct df_exec *ex)
{
    memset(gt, 0, sizeof(*gt));
    gt->nkeys = nkeys;
    gt->mode = GT_GENERIC;
    if (allow_fast && nkeys == 1 && (types[0] == DF_TYPE_INT64 || types[0] == DF_TYPE_TIMESTAMP))
        gt->mode = GT_I64;
    if (allow_fast && nkeys == 1 && types[0] == DF_TYPE_STRING)
        gt->mode = GT_STR;
    gt->null_gid = -1;
    gt->ex = ex;
}

void df__gtab_cleanup(struct df__gtab *gt)
{
    free(gt->slots);
    free(gt->ghash);
    free(gt->rep_src);
    free(gt->rep_row);
    free(gt->kv);
    free(gt->sp);
    free(gt->sn);
    free((void *)gt->srcs);
    if (gt->ex && gt->charged)
        df_exec_charge(gt->ex, -gt->charged, NULL);
    memset(gt, 0, sizeof(*gt));
}

int df__gtab_add_source(struct df__gtab *gt, const struct df_column *const *cols)
{
    gt->srcs = fr_xrealloc((void *)gt->srcs, sizeof(*gt->srcs) * (size_t)(gt->nsrcs + 1));
    gt->srcs[gt->nsrcs] = cols;
    return gt->nsrcs++;
}

static int charge(struct df__gtab *gt, int64_t bytes, struct fr_error *err)
{
    gt->charged += bytes;
    return gt->ex ? df_exec_charge(gt->ex, bytes, err) : FR_OK;
}

static int grow_array(void **p, size_t elem, int64_t n)
{
    void *q = fr_try_realloc(*p, elem * (size_t)n);
    if (!q)
        return FR_ETOOLARGE;
    *p = q;
    return FR_OK;
}

/* Makes room for one more group: per-group arrays and, at half load, slots. */
static int gtab_grow(struct df__gtab *gt, struct fr_error *err)
{
    if (gt->ngroups >= gt->gcap) {
        int64_t cap = gt->gcap ? gt->gcap * 2 : 256;
        int rc = charge(gt, (cap - gt->gcap) * 44, err);
        if (rc != FR_OK)
            return rc;
        if (grow_array((void **)&gt->ghash, 8, cap) || grow_array((void **)&gt->rep_src, 4, cap) ||
            grow_array((void **)&gt->rep_row, 8, cap) ||
            (gt->mode == GT_I64 && grow_array((void **)&gt->kv, 8, cap)) ||
            (gt->mode == GT_STR &&
             (grow_array((void **)&gt->sp, 8, cap) || grow_array((void **)&gt->sn, 8, cap))))
            return fr_error_set(err, FR_ETOOLARGE, "out of memory growing a hash table to %lld "
                                "groups", (long long)cap);
        gt->gcap = cap;
    }
    uint64_t nslots = gt->slots ? gt->mask + 1 : 0;
    if ((uint64_t)(gt->ngroups + 1) * 2 <= nslots)
        return FR_OK;
    uint64_t ns = nslots ? nslots * 2 : 1024;
    int rc = charge(gt, (int64_t)((ns - nslots) * 8), err);
    if (rc != FR_OK)
        return rc;
    uint64_t *slots = calloc(ns, 8);
    if (!slots)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory growing a hash table");
    for (int64_t g = 0; g < gt->ngroups; g++) {
        if (g == gt->null_gid)
            continue;
        uint64_t h = gt->ghash[g], i = h & (ns - 1);
        while (slots[i])
            i = (i + 1) & (ns - 1);
        slots[i] = (h & 0xffffffff00000000ull) | (uint64_t)(g + 1);
    }
    free(gt->slots);
    gt->slots = slots;
    gt->mask = ns - 1;
    return FR_OK;
}

static int64_t gtab_new_group(struct df__gtab *gt, int src, int64_t r, uint64_t h)
{
    int64_t g = gt->ngroups++;
    gt->ghash[g] = h;
    gt->rep_src[g] = src;
    gt->rep_row[g] = r;
    if (gt->mode == GT_I64) {
        gt->kv[g] = df_column_int64(gt->srcs[src][0], r);
    } else if (gt->mode == GT_STR) {
        gt->sp[g] = df_column_string(gt->srcs[src][0], r, &gt->sn[g]);
    }
    return g;
}

/* Finds row r's slot: returns the group id, or -1 with *slot_out the empty
 * slot where it would go. */
static inline int64_t gtab_find(const struct df__gtab *gt, int src, int64_t r, uint64_t h,
                                uint64_t *slot_out)
{
    const struct df_column *c0 = gt->srcs[src][0];
    uint64_t tag = h & 0xffffffff00000000ull, i = h & gt->mask;
    for (;;) {
        uint64_t s = gt->slots[i];
        if (s == 0) {
            *slot_out = i;
            return -1;
        }
        if ((s & 0xffffffff00000000ull) == tag) {
            int64_t g = (int64_t)(s & 0xffffffffull) - 1;
            if (gt->mode == GT_I64) {
                if (gt->kv[g] == ((const int64_t *)c0->values)[r])
                    return g;
            } else if (gt->mode == GT_STR) {
                int64_t n;
                const char *p = df_column_string(c0, r, &n);
                if (n == gt->sn[g] && memcmp(p, gt->sp[g], (size_t)n) == 0)
                    return g;
            } else if (df__keys_equal(gt->srcs[gt->rep_src[g]], gt->rep_row[g], gt->srcs[src], r,
                                      gt->nkeys)) {
                return g;
            }
        }
        i = (i + 1) & gt->mask;
    }
}

int df__gtab_insert(struct df__gtab *gt, int src, const int64_t *rows, int64_t start, int64_t n,
                    const uint64_t *hashes, int64_t *gids, struct fr_error *err)
{
    const struct df_column *c0 = gt->nkeys ? gt->srcs[src][0] : NULL;
    bool fast_nulls = gt->mode != GT_GENERIC && c0->validity != NULL;
    if (!gt->slots) {
        int rc = gtab_grow(gt, err);
        if (rc != FR_OK)
            return rc;
    }
    for (int64_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(&gt->slots[hashes[i + PREFETCH_AHEAD] & gt->mask]);
        int64_t r = rows ? rows[i] : start + i;
        if (fast_nulls && !df_column_is_valid(c0, r)) {
            if (gt->null_gid < 0) {
                int rc = gtab_grow(gt, err);
                if (rc != FR_OK)
                    return rc;
                gt->null_gid = gtab_new_group(gt, src, r, 0);
            }
            gids[i] = gt->null_gid;
            continue;
        }
        uint64_t slot;
        int64_t g = gtab_find(gt, src, r, hashes[i], &slot);
        if (g < 0) {
            if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1 || gt->ngroups >= gt->gcap) {
                int rc = gtab_grow(gt, err);
                if (rc != FR_OK)
                    return rc;
                gtab_find(gt, src, r, hashes[i], &slot);
            }
            g = gtab_new_group(gt, src, r, hashes[i]);
            gt->slots[slot] = (hashes[i] & 0xffffffff00000000ull) | (uint64_t)(g + 1);
        }
        gids[i] = g;
    }
    return FR_OK;
}

void df__gtab_lookup(const struct df__gtab *gt, int src, const int64_t *rows, int64_t start,
                     int64_t n, const uint64_t *hashes, int64_t *gids)
{
    const struct df_column *c0 = gt->nkeys ? gt->srcs[src][0] : NULL;
    bool fast_nulls = gt->mode != GT_GENERIC && c0->validity != NULL;
    for (int64_t i = 0; i < n; i++) {
        if (!gt->slots) {
            gids[i] = -1;
            continue;
        }
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(&gt->slots[hashes[i + PREFETCH_AHEAD] & gt->mask]);
        int64_t r = rows ? rows[i] : start + i;
        if (fast_nulls && !df_column_is_valid(c0, r)) {
            gids[i] = gt->null_gid;
            continue;
        }
        uint64_t slot;
        gids[i] = gtab_find(gt, src, r, hashes[i], &slot);
    }
}
