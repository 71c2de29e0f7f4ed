/* engine_topk: the k first rows of each group in a sort order, in one pass:
 * rows get dense group ids from the grouping hash table, and each group
 * keeps its best k row numbers in a small sorted array. Ties keep input
 * order, so the answer equals a stable sort by (group, keys) cut to k. */
#include "engine_ops.h"

#include <stdlib.h>
#include <string.h>

struct topk {
    int64_t k;
    int64_t *best;  /* per group: k row numbers, best first */
    int32_t *count; /* per group: how many of the k are filled */
    int64_t groups; /* allocated groups */
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
    if (best)
        t->best = best;
    if (count)
        t->count = count;
    if (!best || !count)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory keeping %lld rows per group",
                            (long long)t->k);
    memset(t->count + t->groups, 0, sizeof(int32_t) * (size_t)(cap - t->groups));
    int rc = df_exec_charge(ex, (cap - t->groups) * (int64_t)(t->k * 8 + 4), err);
    t->groups = cap;
    return rc;
}

/* Puts row r into group g's list if it is among the k best so far. */
static void offer(struct topk *t, int64_t g, int64_t r)
{
    int64_t *list = t->best + g * t->k;
    int32_t n = t->count[g];
    if (n == t->k &&
        df__row_cmp(t->cols, r, t->cols, list[n - 1], t->keys, t->nkeys) >= 0)
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

static int group_rows(const struct df_table *in, const int *by, int nby, struct df_exec *ex,
                      struct topk *t, int64_t *gids, int64_t *ngroups, struct fr_error *err)
{
    if (nby == 0) {
        memset(gids, 0, sizeof(int64_t) * (size_t)in->nrows);
        *ngroups = in->nrows ? 1 : 0;
        return grow(t, 1, ex, err);
    }
    const struct df_column **kc = fr_xcalloc((size_t)nby, sizeof(*kc));
    df_type *types = fr_xcalloc((size_t)nby, sizeof(df_type));
    for (int i = 0; i < nby; i++) {
        kc[i] = in->cols[by[i]];
        types[i] = kc[i]->type;
    }
    struct df__gtab gt;
    df__gtab_init(&gt, types, nby, true, ex);
    int src = df__gtab_add_source(&gt, kc);
    int64_t m = ex->opts && ex->opts->morsel_size_rows > 0 ? ex->opts->morsel_size_rows : 65536;
    uint64_t *hashes = fr_xmalloc(sizeof(uint64_t) * (size_t)(m + 1));
    int rc = FR_OK;
    for (int64_t s = 0; s < in->nrows && rc == FR_OK; s += m) {
        int64_t n = in->nrows - s < m ? in->nrows - s : m;
        df__hash_columns(kc, nby, s, n, hashes);
        rc = df__gtab_insert(&gt, src, NULL, s, n, hashes, gids + s, err);
        if (rc == FR_OK)
            rc = grow(t, gt.ngroups, ex, err);
        for (int64_t i = 0; i < n && rc == FR_OK; i++)
            offer(t, gids[s + i], s + i);
        if (rc == FR_OK)
            rc = df_exec_check_cancel(ex, err);
    }
    *ngroups = gt.ngroups;
    free(hashes);
    df__gtab_cleanup(&gt);
    free(types);
    free(kc);
    return rc;
}

int df_top_k(const struct df_table *in, const int *by, int nby, const struct df_sort_key *keys,
             int nkeys, int64_t k, struct df_exec *ex, struct df_table **out,
             struct fr_error *err)
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
    int64_t *gids = fr_try_malloc(sizeof(int64_t) * (size_t)(in->nrows + 1));
    int64_t ngroups = 0, *sel = NULL;
    int rc = gids ? FR_OK : fr_error_set(err, FR_ETOOLARGE, "out of memory in top_k");
    if (rc == FR_OK && nby == 0) {
        rc = group_rows(in, by, nby, ex, &t, gids, &ngroups, err);
        for (int64_t r = 0; r < in->nrows && rc == FR_OK; r++)
            offer(&t, 0, r);
    } else if (rc == FR_OK) {
        rc = group_rows(in, by, nby, ex, &t, gids, &ngroups, err);
    }
    if (rc == FR_OK) {
        sel = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups * k + 1));
        if (!sel)
            rc = fr_error_set(err, FR_ETOOLARGE, "out of memory in top_k");
    }
    if (rc == FR_OK) {
        int64_t n = 0;
        for (int64_t g = 0; g < ngroups; g++)
            for (int32_t j = 0; j < t.count[g]; j++)
                sel[n++] = t.best[g * k + j];
        *out = df_table_take(in, sel, n);
    }
    df_exec_charge(ex, -t.groups * (k * 8 + 4), NULL);
    free(sel);
    free(gids);
    free(t.best);
    free(t.count);
    free(t.cols);
    return rc;
}
