/* engine_gtab: the grouping hash table shared by aggregation, join and top_k:
 * open addressing on the 64-bit key hash, dense group ids in order of first
 * insertion, fast paths for one int64 or one string key and a row mode of
 * fixed-width key records for several keys (see engine_ops_int.h). */
#include "engine_ops_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GT_GENERIC = 0, GT_I64 = 1, GT_STR = 2, GT_ROW = 3 };

/* Rows encoded per chunk in row mode (their records stay in cache). */
#define ROW_CHUNK 1024
#define PREFETCH_AHEAD 16

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
    if (allow_fast && nkeys > 0 && nkeys <= 64 && gt->mode == GT_GENERIC) {
        gt->mode = GT_ROW;
        gt->koff = fr_xcalloc((size_t)nkeys, sizeof(*gt->koff));
        gt->ktype = fr_xcalloc((size_t)nkeys, sizeof(*gt->ktype));
        int off = 8; /* the null mask */
        for (int k = 0; k < nkeys; k++) {
            gt->koff[k] = off;
            gt->ktype[k] = types[k];
            off += types[k] == DF_TYPE_STRING ? (int)sizeof(struct df__skey) : 8;
            gt->has_str |= types[k] == DF_TYPE_STRING;
        }
        gt->recsize = off;
    }
    gt->null_gid = -1;
    gt->ex = ex;
}

void df__gtab_cleanup(struct df__gtab *gt)
{
    fr_free_big(gt->slots); /* big ones kept for the next table (common_mem.c) */
    fr_free_big(gt->ghash);
    fr_free_big(gt->rep_src);
    fr_free_big(gt->rep_row);
    fr_free_big(gt->kv);
    fr_free_big(gt->skeys);
    free(gt->koff);
    free(gt->ktype);
    fr_free_big(gt->recs);
    free(gt->rbuf);
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

static int grow_array(void **p, size_t elem, int64_t old_n, int64_t n)
{
    return df__grow_big(p, elem, old_n, n, false);
}

/* Per-group arrays for at least cap groups and at least ns slots (a power
 * of two), rehashing the groups into the new slots. */
static int gtab_resize(struct df__gtab *gt, int64_t cap, uint64_t ns, struct fr_error *err)
{
    if (cap > gt->gcap) {
        int rc = charge(gt, (cap - gt->gcap) * (44 + gt->recsize), err);
        if (rc != FR_OK)
            return rc;
        int64_t o = gt->ngroups;
        if (grow_array((void **)&gt->ghash, 8, o, cap) ||
            grow_array((void **)&gt->rep_src, 4, o, cap) ||
            grow_array((void **)&gt->rep_row, 8, o, cap) ||
            (gt->mode == GT_I64 && grow_array((void **)&gt->kv, 8, o, cap)) ||
            (gt->mode == GT_STR && grow_array((void **)&gt->skeys, 16, o, cap)) ||
            (gt->mode == GT_ROW && grow_array((void **)&gt->recs, (size_t)gt->recsize, o, cap)))
            return fr_error_set(err, FR_ETOOLARGE,
                                "out of memory growing a hash table to %lld "
                                "groups",
                                (long long)cap);
        gt->gcap = cap;
    }
    uint64_t nslots = gt->slots ? gt->mask + 1 : 0;
    if (ns <= nslots)
        return FR_OK;
    int rc = charge(gt, (int64_t)((ns - nslots) * 8), err);
    if (rc != FR_OK)
        return rc;
    uint64_t *slots = ns * 8 < (8u << 20) ? calloc(ns, 8) : df__alloc_big(ns * 8);
    if (slots && ns * 8 >= (8u << 20))
        memset(slots, 0, ns * 8);
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
    fr_free_big(gt->slots);
    gt->slots = slots;
    gt->mask = ns - 1;
    return FR_OK;
}

/* Makes room for one more group: per-group arrays and, at half load, slots. */
static int gtab_grow(struct df__gtab *gt, struct fr_error *err)
{
    int64_t cap = gt->gcap;
    if (gt->ngroups >= gt->gcap)
        cap = gt->gcap ? gt->gcap * 2 : 256;
    uint64_t nslots = gt->slots ? gt->mask + 1 : 0, ns = nslots;
    if ((uint64_t)(gt->ngroups + 1) * 2 > nslots)
        ns = nslots ? nslots * 2 : 1024;
    return gtab_resize(gt, cap, ns, err);
}

int df__gtab_reserve(struct df__gtab *gt, int64_t ngroups, struct fr_error *err)
{
    if (gt->nkeys == 0 || ngroups <= 0)
        return FR_OK;
    uint64_t ns = 1024;
    while (ns < (uint64_t)ngroups * 2 + 2)
        ns *= 2;
    return gtab_resize(gt, ngroups + 1 > gt->gcap ? ngroups + 1 : gt->gcap, ns, err);
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
            else if (gt->mode == GT_I64)
                __builtin_prefetch(&gt->kv[g]);
            else
                __builtin_prefetch(gt->recs + g * gt->recsize);
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
                if (n == (int64_t)k->n && df__bytes_equal(p, skey_bytes(k), n))
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
                if (len == (int64_t)sk[g].n && df__bytes_equal(p, skey_bytes(&sk[g]), len)) {
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

/* ---- row mode ------------------------------------------------------------ */

/* A string key as the record's 16 bytes (a df__skey): the length, then up
 * to 12 bytes inline, zero-padded; longer: a 4-byte prefix and a pointer.
 * Short keys are loaded 16 bytes at a time when the column's buffer has
 * room (bytes past the key are masked off). */
static inline void encode_str(const struct df_column *c, int64_t r, uint8_t *p)
{
    int64_t a = c->offsets[r], len = c->offsets[r + 1] - a;
    const char *s = c->data + a;
    uint64_t w0, w1;
    if (len > 12) {
        w0 = (uint64_t)len | ((uint64_t)df__load32(s) << 32);
        memcpy(&w1, &s, 8);
    } else if (a + 16 <= c->data_cap) {
        uint64_t x0 = df__load64(s), x1 = df__load64(s + 8);
        uint64_t m0 = len >= 4 ? ~0ull : ((1ull << (8 * len)) - 1) << 32 >> 32;
        int64_t k = len - 4 > 0 ? len - 4 : 0;
        uint64_t m1 = k >= 8 ? ~0ull : (1ull << (8 * k)) - 1;
        w0 = (uint64_t)len | ((x0 & m0) << 32);
        w1 = (((x0 >> 32) | (x1 << 32)) & m1);
    } else {
        char b[16] = {0};
        if (len > 0)
            memcpy(b + 4, s, (size_t)len);
        w0 = (uint64_t)len | ((uint64_t)df__load32(b + 4) << 32);
        w1 = df__load64(b + 8);
    }
    memcpy(p, &w0, 8);
    memcpy(p + 8, &w1, 8);
}

static inline uint64_t encode_fixed(const struct df_column *c, int64_t r)
{
    switch (c->type) {
    case DF_TYPE_FLOAT64: {
        double f = df_column_float64(c, r);
        uint64_t v;
        if (f != f)
            f = __builtin_nan("");
        else if (f == 0)
            f = 0.0;
        memcpy(&v, &f, 8);
        return v;
    }
    case DF_TYPE_BOOL:
        return df_column_bool(c, r);
    case DF_TYPE_DATE:
        return (uint64_t)(int64_t)df_column_int32(c, r);
    default:
        return (uint64_t)df_column_int64(c, r);
    }
}

/* Encodes the keys of rows (rows[i], or start + i) i < n into records at
 * buf, column by column. */
static void encode_rows(const struct df__gtab *gt, const struct df_column *const *cols,
                        const int64_t *rows, int64_t start, int64_t n, uint8_t *buf)
{
    const size_t rs = (size_t)gt->recsize;
    for (int64_t i = 0; i < n; i++)
        memset(buf + (size_t)i * rs, 0, 8); /* null masks */
    for (int k = 0; k < gt->nkeys; k++) {
        const struct df_column *c = cols[k];
        uint8_t *p = buf + gt->koff[k];
        bool str = c->type == DF_TYPE_STRING;
        if (!c->validity && !rows && str) {
            for (int64_t i = 0; i < n; i++, p += rs)
                encode_str(c, start + i, p);
            continue;
        }
        if (!c->validity && !rows && (c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP)) {
            const int64_t *v = (const int64_t *)c->values + start;
            for (int64_t i = 0; i < n; i++, p += rs)
                memcpy(p, &v[i], 8);
            continue;
        }
        const uint64_t bit = 1ull << k;
        for (int64_t i = 0; i < n; i++, p += rs) {
            int64_t r = rows ? rows[i] : start + i;
            if (c->validity && !df_column_is_valid(c, r)) {
                uint8_t *rec = p - gt->koff[k];
                uint64_t mask = df__load64((const char *)rec) | bit;
                memcpy(rec, &mask, 8);
                memset(p, 0, str ? 16 : 8);
            } else if (str) {
                encode_str(c, r, p);
            } else {
                uint64_t v = encode_fixed(c, r);
                memcpy(p, &v, 8);
            }
        }
    }
}

static inline bool rec_bytes_equal(const uint8_t *a, const uint8_t *b, int n)
{
    uint64_t diff = 0;
    for (int i = 0; i < n; i += 8)
        diff |= df__load64((const char *)a + i) ^ df__load64((const char *)b + i);
    return diff == 0;
}

/* Two records of equal keys are equal bytes except for long strings at
 * different addresses: those are compared through their pointers. */
static bool rec_equal(const struct df__gtab *gt, const uint8_t *a, const uint8_t *b)
{
    if (rec_bytes_equal(a, b, gt->recsize))
        return true;
    if (!gt->has_str || df__load64((const char *)a) != df__load64((const char *)b))
        return false;
    for (int k = 0; k < gt->nkeys; k++) {
        const uint8_t *x = a + gt->koff[k], *y = b + gt->koff[k];
        if (gt->ktype[k] != DF_TYPE_STRING) {
            if (df__load64((const char *)x) != df__load64((const char *)y))
                return false;
            continue;
        }
        struct df__skey sx, sy;
        memcpy(&sx, x, sizeof(sx));
        memcpy(&sy, y, sizeof(sy));
        if (memcmp(&sx, &sy, sizeof(sx)) == 0)
            continue;
        if (sx.n != sy.n || sx.n <= sizeof(sx.b) || memcmp(sx.b, sy.b, 4) != 0)
            return false;
        const char *px, *py;
        memcpy(&px, sx.b + 4, sizeof(px));
        memcpy(&py, sy.b + 4, sizeof(py));
        if (memcmp(px, py, sx.n) != 0)
            return false;
    }
    return true;
}

static inline void row_prefetch(const struct df__gtab *gt, const uint64_t *hashes, int64_t i,
                                int64_t n)
{
    if (i + PREFETCH_AHEAD < n)
        __builtin_prefetch(&gt->slots[hashes[i + PREFETCH_AHEAD] & gt->mask]);
    if (i + PREFETCH_AHEAD / 2 < n) {
        uint64_t h = hashes[i + PREFETCH_AHEAD / 2], s = gt->slots[h & gt->mask];
        if (s && (s & 0xffffffff00000000ull) == (h & 0xffffffff00000000ull)) {
            const uint8_t *r = gt->recs + ((int64_t)(s & 0xffffffffull) - 1) * gt->recsize;
            __builtin_prefetch(r);
            if (gt->recsize > 64)
                __builtin_prefetch(r + 64);
        }
    }
}

/* The group of record rec with hash h: its id, or -1 with *slot_out the
 * empty slot where it would go. */
static inline int64_t row_find(const struct df__gtab *gt, const uint8_t *rec, uint64_t h,
                               uint64_t *slot_out)
{
    uint64_t tag = h & 0xffffffff00000000ull, i = h & gt->mask;
    for (;;) {
        uint64_t s = gt->slots[i];
        if (s == 0) {
            *slot_out = i;
            return -1;
        }
        if ((s & 0xffffffff00000000ull) == tag) {
            int64_t g = (int64_t)(s & 0xffffffffull) - 1;
            if (rec_equal(gt, gt->recs + g * gt->recsize, rec))
                return g;
        }
        i = (i + 1) & gt->mask;
    }
}

static int row_scratch(struct df__gtab *gt, struct fr_error *err)
{
    if (gt->rbuf)
        return FR_OK;
    gt->rbuf = fr_try_malloc((size_t)gt->recsize * ROW_CHUNK);
    if (!gt->rbuf)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory for a hash table's scratch");
    return charge(gt, (int64_t)gt->recsize * ROW_CHUNK, err);
}

static int row_insert(struct df__gtab *gt, int src, const int64_t *rows, int64_t start, int64_t n,
                      const uint64_t *hashes, int64_t *gids, struct fr_error *err)
{
    int rc = row_scratch(gt, err);
    for (int64_t c0 = 0; rc == FR_OK && c0 < n; c0 += ROW_CHUNK) {
        int64_t m = n - c0 < ROW_CHUNK ? n - c0 : ROW_CHUNK;
        const uint64_t *h = hashes + c0;
        encode_rows(gt, gt->srcs[src], rows ? rows + c0 : NULL, start + c0, m, gt->rbuf);
        for (int64_t i = 0; i < m; i++) {
            row_prefetch(gt, h, i, m);
            const uint8_t *rec = gt->rbuf + i * gt->recsize;
            uint64_t slot = 0;
            int64_t g = row_find(gt, rec, h[i], &slot);
            if (g < 0) {
                if ((uint64_t)(gt->ngroups + 1) * 2 > gt->mask + 1 || gt->ngroups >= gt->gcap) {
                    if ((rc = gtab_grow(gt, err)) != FR_OK)
                        return rc;
                    row_find(gt, rec, h[i], &slot);
                }
                int64_t r = rows ? rows[c0 + i] : start + c0 + i;
                g = gtab_new_group(gt, src, r, h[i]);
                memcpy(gt->recs + g * gt->recsize, rec, (size_t)gt->recsize);
                gt->slots[slot] = (h[i] & TAG_MASK) | (uint64_t)(g + 1);
            }
            gids[c0 + i] = g;
        }
    }
    return rc;
}

static void row_lookup(const struct df__gtab *gt, int src, const int64_t *rows, int64_t start,
                       int64_t n, const uint64_t *hashes, int64_t *gids)
{
    uint8_t buf[ROW_CHUNK > 256 ? 256 * 8 : ROW_CHUNK * 8];
    int64_t chunk = (int64_t)sizeof(buf) / gt->recsize;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        int64_t m = n - c0 < chunk ? n - c0 : chunk;
        const uint64_t *h = hashes + c0;
        encode_rows(gt, gt->srcs[src], rows ? rows + c0 : NULL, start + c0, m, buf);
        for (int64_t i = 0; i < m; i++) {
            row_prefetch(gt, h, i, m);
            uint64_t slot = 0;
            gids[c0 + i] = row_find(gt, buf + i * gt->recsize, h[i], &slot);
        }
    }
}

int df__gtab_insert(struct df__gtab *gt, int src, const int64_t *rows, int64_t start, int64_t n,
                    const uint64_t *hashes, int64_t *gids, struct fr_error *err)
{
    if (gt->mode == GT_ROW) {
        if (!gt->slots) {
            int rc = gtab_grow(gt, err);
            if (rc != FR_OK)
                return rc;
        }
        return row_insert(gt, src, rows, start, n, hashes, gids, err);
    }
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
        int rc =
            insert_one(gt, src, rows ? rows[i] : start + i, hashes[i], fast_nulls, &gids[i], err);
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

void df__gtab_lookup(const struct df__gtab *gt, int src, const int64_t *rows, int64_t start,
                     int64_t n, const uint64_t *hashes, int64_t *gids)
{
    if (gt->mode == GT_ROW && gt->slots) {
        row_lookup(gt, src, rows, start, n, hashes, gids);
        return;
    }
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
