/* engine_topk: the k first rows of each group in a sort order, in one pass:
 * rows get dense group ids from the grouping hash table, and each group
 * keeps its best k row numbers in a small sorted array. Ties keep input
 * order, so the answer equals a stable sort by (by, keys) cut to k: the
 * groups are then put in ascending order of their `by` values.
 * With one sort key of a fixed-width type (the common case: the largest
 * values per group) each row's place in the order is one 128-bit number
 * (null class, then an order-preserving code of the value) kept next to
 * the row number, so an offer compares integers in the group's own slots
 * and reads no column. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 rank_t;

struct topk {
    int64_t k;
    int64_t *best; /* per group: k row numbers, best first */
    rank_t *rank;  /* fast mode: per group, the ranks of best[] */
    bool fast;
    int32_t *count;                /* per group: how many of the k are filled */
    int64_t groups;                /* allocated groups */
    const struct df_column **cols; /* the sort keys' columns */
    const struct df_sort_key *keys;
    int nkeys;
};

static int grow(struct topk *t, int64_t groups, struct df_exec *ex, struct fr_error *err)
{
    if (groups <= t->groups)
        return FR_OK;
    int64_t cap = t->groups ? t->groups : 1024;
    while (cap < groups)
        cap *= 2;
    int64_t *best = fr_try_realloc(t->best, sizeof(int64_t) * (size_t)(cap * t->k));
    int32_t *count = fr_try_realloc(t->count, sizeof(int32_t) * (size_t)cap);
    rank_t *rank = t->fast ? fr_try_realloc(t->rank, sizeof(rank_t) * (size_t)(cap * t->k)) : NULL;
    if (best)
        t->best = best;
    if (count)
        t->count = count;
    if (rank)
        t->rank = rank;
    if (!best || !count || (t->fast && !rank))
        return fr_error_set(err, FR_ETOOLARGE, "out of memory keeping %lld rows per group",
                            (long long)t->k);
    memset(t->count + t->groups, 0, sizeof(int32_t) * (size_t)(cap - t->groups));
    int rc = df_exec_charge(ex, (cap - t->groups) * (int64_t)(t->k * 24 + 4), err);
    t->groups = cap;
    return rc;
}

/* Puts row r into group g's list if it is among the k best so far. */
static void offer(struct topk *t, int64_t g, int64_t r)
{
    int64_t *list = t->best + g * t->k;
    int32_t n = t->count[g];
    if (n == t->k && df__row_cmp(t->cols, r, t->cols, list[n - 1], t->keys, t->nkeys) >= 0)
        return; /* not better than the worst kept (ties: the earlier row stays) */
    int32_t pos = n < t->k ? n : n - 1;
    while (pos > 0 && df__row_cmp(t->cols, r, t->cols, list[pos - 1], t->keys, t->nkeys) < 0) {
        list[pos] = list[pos - 1];
        pos--;
    }
    list[pos] = r;
    if (n < t->k)
        t->count[g] = n + 1;
}

/* Fast mode: one key of a fixed-width type. */
static bool fast_key(const struct df_column *c)
{
    return c->type == DF_TYPE_FLOAT64 || c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP ||
           c->type == DF_TYPE_DATE || c->type == DF_TYPE_BOOL;
}

/* The ranks of rows [s, s+n) under the one key: smaller is better. The
 * high word orders nulls (0 first, 2 last) around the values (1); the low
 * word is the value's order code (floats: -0.0 as 0.0, NaN above all),
 * inverted for a descending key. Equal ranks are exactly df__row_cmp's
 * ties. */
static void ranks_of(const struct df_column *c, const struct df_sort_key *key, int64_t s, int64_t n,
                     rank_t *out)
{
    const uint64_t flip = key->desc ? ~0ull : 0, sign = 1ull << 63;
    switch (c->type) {
    case DF_TYPE_FLOAT64: {
        const double *v = (const double *)c->values + s;
        for (int64_t i = 0; i < n; i++)
            out[i] = ((rank_t)1 << 64) | (df__double_key(v[i]) ^ flip);
        break;
    }
    case DF_TYPE_DATE: {
        const int32_t *v = (const int32_t *)c->values + s;
        for (int64_t i = 0; i < n; i++)
            out[i] = ((rank_t)1 << 64) | (((uint64_t)(int64_t)v[i] ^ sign) ^ flip);
        break;
    }
    case DF_TYPE_BOOL: {
        const uint8_t *v = (const uint8_t *)c->values + s;
        for (int64_t i = 0; i < n; i++)
            out[i] = ((rank_t)1 << 64) | ((uint64_t)(v[i] != 0) ^ flip);
        break;
    }
    default: {
        const int64_t *v = (const int64_t *)c->values + s;
        for (int64_t i = 0; i < n; i++)
            out[i] = ((rank_t)1 << 64) | (((uint64_t)v[i] ^ sign) ^ flip);
        break;
    }
    }
    if (c->validity) {
        const rank_t null_rank = (rank_t)(key->nulls_first ? 0 : 2) << 64;
        for (int64_t i = 0; i < n; i++)
            if (!df_column_is_valid(c, s + i))
                out[i] = null_rank;
    }
}

/* offer() on ranks: row r of rank x into group g's list. */
static inline void offer_fast(struct topk *t, int64_t g, rank_t x, int64_t r)
{
    const int64_t k = t->k;
    int64_t *list = t->best + g * k;
    rank_t *rk = t->rank + g * k;
    int32_t n = t->count[g];
    if (n == k && x >= rk[n - 1])
        return;
    int32_t pos = n < k ? n : n - 1;
    while (pos > 0 && x < rk[pos - 1]) {
        list[pos] = list[pos - 1];
        rk[pos] = rk[pos - 1];
        pos--;
    }
    list[pos] = r;
    rk[pos] = x;
    if (n < k)
        t->count[g] = n + 1;
}

/* Offers rows [s, s+n) of group ids gids[0..n). */
static void offer_morsel(struct topk *t, const int64_t *gids, int64_t s, int64_t n, rank_t *ranks)
{
    if (!t->fast) {
        for (int64_t i = 0; i < n; i++)
            offer(t, gids[i], s + i);
        return;
    }
    ranks_of(t->cols[0], &t->keys[0], s, n, ranks);
    for (int64_t i = 0; i < n; i++) {
        if (i + 8 < n) {
            __builtin_prefetch(&t->rank[gids[i + 8] * t->k]);
            __builtin_prefetch(&t->count[gids[i + 8]]);
        }
        offer_fast(t, gids[i], ranks[i], s + i);
    }
}

static int group_rows(const struct df_table *in, const int *by, int nby, struct df_exec *ex,
                      struct topk *t, int64_t *ngroups, struct fr_error *err)
{
    const struct df_column **kc = fr_xcalloc((size_t)nby + 1, sizeof(*kc));
    df_type *types = fr_xcalloc((size_t)nby + 1, sizeof(df_type));
    for (int i = 0; i < nby; i++) {
        kc[i] = in->cols[by[i]];
        types[i] = kc[i]->type;
    }
    struct df__gtab gt;
    df__gtab_init(&gt, types, nby, true, ex);
    int src = df__gtab_add_source(&gt, kc);
    int64_t m = df__morsel_rows(ex);
    if (m > in->nrows)
        m = in->nrows > 0 ? in->nrows : 1;
    /* per morsel: hashes, group ids and ranks (no per-row array of the
     * whole input) */
    uint64_t *hashes = fr_try_malloc(sizeof(uint64_t) * (size_t)m);
    int64_t *gids = fr_try_malloc(sizeof(int64_t) * (size_t)m);
    rank_t *ranks = t->fast ? fr_try_malloc(sizeof(rank_t) * (size_t)m) : NULL;
    int rc = FR_OK;
    if (!hashes || !gids || (t->fast && !ranks))
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory in top_k");
    if (rc == FR_OK && nby == 0) {
        memset(gids, 0, sizeof(int64_t) * (size_t)m);
        rc = in->nrows ? grow(t, 1, ex, err) : FR_OK;
    }
    for (int64_t s = 0; s < in->nrows && rc == FR_OK; s += m) {
        int64_t n = in->nrows - s < m ? in->nrows - s : m;
        if (nby > 0) {
            df__hash_columns(kc, nby, s, n, hashes);
            rc = df__gtab_insert(&gt, src, NULL, s, n, hashes, gids, err);
            if (rc == FR_OK)
                rc = grow(t, gt.ngroups, ex, err);
        }
        if (rc == FR_OK)
            offer_morsel(t, gids, s, n, ranks);
        if (rc == FR_OK)
            rc = df_exec_check_cancel(ex, err);
    }
    *ngroups = nby > 0 ? gt.ngroups : in->nrows ? 1 : 0;
    free(hashes);
    free(gids);
    free(ranks);
    df__gtab_cleanup(&gt);
    free(types);
    free((void *)kc);
    return rc;
}

/* Orders groups by their `by` values: ascending, nulls as the options'
 * nulls_first (after the values by default); groups whose values compare
 * equal (NaN) keep first appearance. */
struct group_order {
    const struct df_column **cols;
    const struct df_sort_key *keys;
    int nby;
    const struct topk *t;
};

static int cmp_groups(const void *a, const void *b, void *arg)
{
    const struct group_order *o = arg;
    int64_t ga = *(const int64_t *)a, gb = *(const int64_t *)b;
    int c = df__row_cmp(o->cols, o->t->best[ga * o->t->k], o->cols, o->t->best[gb * o->t->k],
                        o->keys, o->nby);
    return c ? c : (ga > gb) - (ga < gb);
}

/* new: the group ids 0..ngroups-1 in `by` order. */
static int64_t *sorted_groups(const struct df_table *in, const int *by, int nby,
                              const struct topk *t, int64_t ngroups, const struct df_exec *ex)
{
    int64_t *order = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    if (!order)
        return NULL;
    for (int64_t g = 0; g < ngroups; g++)
        order[g] = g;
    if (nby == 0 || ngroups < 2)
        return order;
    const struct df_column **cols = fr_xcalloc((size_t)nby, sizeof(*cols));
    struct df_sort_key *keys = fr_xcalloc((size_t)nby, sizeof(*keys));
    bool nulls_first = ex && ex->opts ? ex->opts->nulls_first : false;
    for (int i = 0; i < nby; i++) {
        cols[i] = in->cols[by[i]];
        keys[i] = (struct df_sort_key){.col = by[i], .desc = false, .nulls_first = nulls_first};
    }
    struct group_order o = {.cols = cols, .keys = keys, .nby = nby, .t = t};
    qsort_r(order, (size_t)ngroups, sizeof(int64_t), cmp_groups, &o);
    free((void *)cols);
    free(keys);
    return order;
}

int df_top_k(const struct df_table *in, const int *by, int nby, const struct df_sort_key *keys,
             int nkeys, int64_t k, struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    return df_top_k_groups(in, by, nby, keys, nkeys, k, true, ex, out, err);
}

int df_top_k_groups(const struct df_table *in, const int *by, int nby,
                    const struct df_sort_key *keys, int nkeys, int64_t k, bool order_groups,
                    struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    *out = NULL;
    if (k <= 0) {
        *out = df_table_slice(in, 0, 0);
        return FR_OK;
    }
    struct topk t = {.k = k, .keys = keys, .nkeys = nkeys};
    t.cols = fr_xcalloc((size_t)nkeys + 1, sizeof(*t.cols));
    for (int i = 0; i < nkeys; i++)
        t.cols[i] = in->cols[keys[i].col];
    t.fast = nkeys == 1 && fast_key(t.cols[0]);
    int64_t ngroups = 0, *sel = NULL, *order = NULL;
    int rc = group_rows(in, by, nby, ex, &t, &ngroups, err);
    if (rc == FR_OK) {
        sel = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups * k + 1));
        order = sel ? sorted_groups(in, by, order_groups ? nby : 0, &t, ngroups, ex) : NULL;
        if (!sel || !order)
            rc = fr_error_set(err, FR_ETOOLARGE, "out of memory in top_k");
    }
    if (rc == FR_OK) {
        int64_t n = 0;
        for (int64_t i = 0; i < ngroups; i++) {
            int64_t g = order[i];
            for (int32_t j = 0; j < t.count[g]; j++)
                sel[n++] = t.best[g * k + j];
        }
        *out = df_table_take(in, sel, n);
    }
    free(order);
    df_exec_charge(ex, -t.groups * (k * 24 + 4), NULL);
    free(sel);
    free(t.best);
    free(t.rank);
    free(t.count);
    free(t.cols);
    return rc;
}
