/* engine_hash: key hashing, key equality and the grouping hash table shared
 * by aggregation and join. Strings hash with XXH3 (inlined); integers with a
 * 64-bit finalizer; an integral float64 hashes like the equal int64 so that
 * joins across the two types partition and match consistently. */
#include "engine_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

enum { GT_GENERIC = 0, GT_I64 = 1, GT_STR = 2 };

#define NULL_HASH 0x6a09e667f3bcc908ull
#define NAN_HASH 0xbb67ae8584caa73bull
#define PREFETCH_AHEAD 16

int64_t df__morsel_rows(const struct df_exec *ex)
{
    if (ex && ex->opts && ex->opts->morsel_size_rows > 0)
        return ex->opts->morsel_size_rows;
    return DF__MORSEL_DEFAULT;
}

void *df__alloc_big(size_t bytes)
{
    const size_t huge = 2u << 20;
    if (bytes < 2 * huge)
        return fr_try_malloc(bytes);
    void *p = NULL;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    if (posix_memalign(&p, huge, rounded) != 0)
        return NULL;
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
    return p;
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

static inline uint64_t load64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t load32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Equality of two n-byte strings without a libc call for short keys (the
 * common case in group-by): overlapping loads stay inside both strings. */
static inline bool bytes_equal(const char *a, const char *b, int64_t n)
{
    if (n >= 8 && n <= 16)
        return load64(a) == load64(b) && load64(a + n - 8) == load64(b + n - 8);
    if (n >= 4 && n < 8)
        return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    if (n < 4) {
        for (int64_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return false;
        return true;
    }
    return memcmp(a, b, (size_t)n) == 0;
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
        return na == nb && bytes_equal(pa, pb, na);
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
    free(gt->skeys);
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
            (gt->mode == GT_STR && grow_array((void **)&gt->skeys, 16, cap)))
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
        int64_t n;
        const char *p = df_column_string(gt->srcs[src][0], r, &n);
        struct df__skey *k = &gt->skeys[g];
        k->n = (uint32_t)n;
        if (n > 0 && n <= (int64_t)sizeof(k->b)) /* n == 0: p may be NULL */
            memcpy(k->b, p, (size_t)n);
        else
            memcpy(k->b + 4, &p, sizeof(p));
    }
    return g;
}

static inline const char *skey_bytes(const struct df__skey *k)
{
    const char *p;
    if (k->n <= sizeof(k->b))
        return k->b;
    memcpy(&p, k->b + 4, sizeof(p));
    return p;
}

/* Two-stage prefetch: the slot of a row far ahead, and for a row nearer
 * (whose slot should be cached by now) the key of the group it points at. */
static inline void prefetch_ahead(const struct df__gtab *gt, const uint64_t *hashes, int64_t i,
                                  int64_t n)
{
    if (i + PREFETCH_AHEAD < n)
        __builtin_prefetch(&gt->slots[hashes[i + PREFETCH_AHEAD] & gt->mask]);
    if (gt->mode != GT_GENERIC && i + PREFETCH_AHEAD / 2 < n) {
        uint64_t h = hashes[i + PREFETCH_AHEAD / 2], s = gt->slots[h & gt->mask];
        if (s && (s & 0xffffffff00000000ull) == (h & 0xffffffff00000000ull)) {
            int64_t g = (int64_t)(s & 0xffffffffull) - 1;
            if (gt->mode == GT_STR)
                __builtin_prefetch(&gt->skeys[g]);
            else
                __builtin_prefetch(&gt->kv[g]);
        }
    }
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
                const struct df__skey *k = &gt->skeys[g];
                if (n == (int64_t)k->n && bytes_equal(p, skey_bytes(k), n))
                    return g;
            } else if (df__keys_equal(gt->srcs[gt->rep_src[g]], gt->rep_row[g], gt->srcs[src], r,
                                      gt->nkeys)) {
                return g;
            }
        }
        i = (i + 1) & gt->mask;
    }
}

#define TAG_MASK 0xffffffff00000000ull

/* The hot loop for one string key without nulls over contiguous rows:
 * resolves rows from i while their keys are already in the table and
 * returns the first row that needs a new group (or n). */
static int64_t str_run(struct df__gtab *gt, const struct df_column *c0, int64_t start, int64_t i,
                       int64_t n, const uint64_t *hashes, int64_t *gids)
{
    const uint64_t *slots = gt->slots, mask = gt->mask;
    const struct df__skey *sk = gt->skeys;
    const int64_t *off = c0->offsets + start;
    const char *data = c0->data;
    for (; i < n; i++) {
        prefetch_ahead(gt, hashes, i, n);
        uint64_t h = hashes[i], j = h & mask;
        const char *p = data + off[i];
        int64_t len = off[i + 1] - off[i];
        for (;;) {
            uint64_t sl = slots[j];
            if (sl == 0)
                return i;
            if ((sl & TAG_MASK) == (h & TAG_MASK)) {
                int64_t g = (int64_t)(sl & 0xffffffffull) - 1;
                if (len == (int64_t)sk[g].n && bytes_equal(p, skey_bytes(&sk[g]), len)) {
                    gids[i] = g;
                    break;
                }
            }
            j = (j + 1) & mask;
        }
    }
    return n;
}

/* The same for one int64 key. */
static int64_t i64_run(struct df__gtab *gt, const struct df_column *c0, int64_t start, int64_t i,
                       int64_t n, const uint64_t *hashes, int64_t *gids)
{
    const uint64_t *slots = gt->slots, mask = gt->mask;
    const int64_t *kv = gt->kv, *v = (const int64_t *)c0->values + start;
    for (; i < n; i++) {
        prefetch_ahead(gt, hashes, i, n);
        uint64_t h = hashes[i], j = h & mask;
        for (;;) {
            uint64_t sl = slots[j];
            if (sl == 0)
                return i;
            if ((sl & TAG_MASK) == (h & TAG_MASK) && kv[(sl & 0xffffffffull) - 1] == v[i]) {
                gids[i] = (int64_t)(sl & 0xffffffffull) - 1;
                break;
            }
            j = (j + 1) & mask;
        }
    }
    return n;
}

/* One row the slow way: a null key in a fast mode, a new group, or any row
 * of the generic mode. */
static int insert_one(struct df__gtab *gt, int src, int64_t r, uint64_t h, bool fast_nulls,
                      int64_t *gid, struct fr_error *err)
{
    int rc = FR_OK;
    if (fast_nulls && !df_column_is_valid(gt->srcs[src][0], r)) {
        if (gt->null_gid < 0 && (rc = gtab_grow(gt, err)) == FR_OK)
            gt->null_gid = gtab_new_group(gt, src, r, 0);
        *gid = gt->null_gid;
        return rc;
    }
    uint64_t slot = 0;
    int64_t g = gtab_find(gt, src, r, h, &slot);
    if (g < 0) {
        if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1 || gt->ngroups >= gt->gcap) {
            rc = gtab_grow(gt, err);
            if (rc != FR_OK)
                return rc;
            gtab_find(gt, src, r, h, &slot);
        }
        g = gtab_new_group(gt, src, r, h);
        gt->slots[slot] = (h & TAG_MASK) | (uint64_t)(g + 1);
    }
    *gid = g;
    return FR_OK;
}

int df__gtab_insert(struct df__gtab *gt, int src, const int64_t *rows, int64_t start, int64_t n,
                    const uint64_t *hashes, int64_t *gids, struct fr_error *err)
{
    const struct df_column *c0 = gt->nkeys ? gt->srcs[src][0] : NULL;
    bool fast_nulls = gt->mode != GT_GENERIC && c0->validity != NULL;
    bool run = gt->mode != GT_GENERIC && !fast_nulls && !rows;
    if (!gt->slots) {
        int rc = gtab_grow(gt, err);
        if (rc != FR_OK)
            return rc;
    }
    for (int64_t i = 0; i < n; i++) {
        if (run) {
            i = gt->mode == GT_STR ? str_run(gt, c0, start, i, n, hashes, gids)
                                   : i64_run(gt, c0, start, i, n, hashes, gids);
            if (i >= n)
                break;
        } else {
            prefetch_ahead(gt, hashes, i, n);
        }
        int rc = insert_one(gt, src, rows ? rows[i] : start + i, hashes[i], fast_nulls, &gids[i],
                            err);
        if (rc != FR_OK)
            return rc;
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
        prefetch_ahead(gt, hashes, i, n);
        int64_t r = rows ? rows[i] : start + i;
        if (fast_nulls && !df_column_is_valid(c0, r)) {
            gids[i] = gt->null_gid;
            continue;
        }
        uint64_t slot = 0;
        gids[i] = gtab_find(gt, src, r, hashes[i], &slot);
    }
}
