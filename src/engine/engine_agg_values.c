/* engine_agg_values: the value lists behind median and count_distinct:
 * (group, value) pairs the partial phase collects, runs of a peer's value
 * blob the final phase borrows (median), and the grouping, deduplication
 * and selection that turn them into state blobs and results. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

struct sref {
    const char *p;
    int64_t n;
};

int df__vlist_reserve(struct df__agg *a, struct df__vlist *vl, int64_t extra, bool strings,
                      struct fr_error *err)
{
    if (vl->compact_at == 0)
        vl->compact_at = 1 << 16;
    if (vl->cap - vl->n >= extra)
        return FR_OK;
    /* a first reserve sized from the input is taken as it is; growth doubles */
    int64_t cap = vl->cap ? vl->cap * 2 : extra > 1024 ? extra : 1024;
    while (cap - vl->n < extra)
        cap *= 2;
    int rc = df__agg_charge(a, (cap - vl->cap) * (strings ? 24 : 16), err);
    if (rc != FR_OK)
        return rc;
    if (!strings) { /* large lists go on huge pages (first touch of 4 KiB ones is slow) */
        if (df__grow_big((void **)&vl->g, 8, vl->cap, cap, false) != FR_OK ||
            df__grow_big((void **)&vl->v, 8, vl->cap, cap, false) != FR_OK)
            return fr_error_set(err, FR_ETOOLARGE, "out of memory collecting %lld values",
                                (long long)cap);
        vl->cap = cap;
        return FR_OK;
    }
    void *pg = fr_try_realloc(vl->g, 8 * (size_t)cap);
    if (pg)
        vl->g = pg;
    void *p1 = fr_try_realloc(strings ? (void *)vl->sp : (void *)vl->v, 8 * (size_t)cap);
    if (p1 && strings)
        vl->sp = p1;
    else if (p1)
        vl->v = p1;
    void *p2 = strings ? fr_try_realloc(vl->sn, 8 * (size_t)cap) : vl->g;
    if (p2 && strings)
        vl->sn = p2;
    if (!pg || !p1 || !p2)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory collecting %lld values",
                            (long long)cap);
    vl->cap = cap;
    return FR_OK;
}

int df__vlist_push(struct df__agg *a, struct df__vlist *vl, int64_t g, uint64_t v, const char *sp,
                   int64_t sn, bool strings, struct fr_error *err)
{
    int rc = df__vlist_reserve(a, vl, 1, strings, err);
    if (rc != FR_OK)
        return rc;
    vl->g[vl->n] = g;
    if (strings) {
        vl->sp[vl->n] = sp;
        vl->sn[vl->n] = sn;
    } else {
        vl->v[vl->n] = v;
    }
    vl->n++;
    return FR_OK;
}

/* new: a permutation of the list's entries ordered by group (stable), and
 * offs[0..ngroups] the start of each group's run. */
int64_t *df__vlist_order(const struct df__vlist *vl, int64_t ngroups, int64_t *offs)
{
    memset(offs, 0, sizeof(int64_t) * (size_t)(ngroups + 1));
    for (int64_t i = 0; i < vl->n; i++)
        offs[vl->g[i] + 1]++;
    for (int64_t g = 0; g < ngroups; g++)
        offs[g + 1] += offs[g];
    int64_t *perm = fr_try_malloc(sizeof(int64_t) * (size_t)(vl->n ? vl->n : 1));
    int64_t *pos = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    if (perm && pos) {
        memcpy(pos, offs, sizeof(int64_t) * (size_t)(ngroups + 1));
        for (int64_t i = 0; i < vl->n; i++)
            perm[pos[vl->g[i]]++] = i;
    } else {
        free(perm);
        perm = NULL;
    }
    free(pos);
    return perm;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static int cmp_sref(const void *x, const void *y)
{
    const struct sref *a = x, *b = y;
    int64_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->p, b->p, (size_t)n) : 0;
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static int64_t max_group(const struct df__vlist *vl)
{
    int64_t m = -1;
    for (int64_t i = 0; i < vl->n; i++)
        if (vl->g[i] > m)
            m = vl->g[i];
    return m + 1;
}

/* Appends group g's distinct values (entries ent[0..n)) to the new arrays
 * at out; returns the new end. tmp holds n values. */
static int64_t dedupe_group(const struct df__vlist *vl, int64_t g, const int64_t *ent, int64_t n,
                            bool strings, void *tmp, int64_t *ng, void *nv, int64_t *nsn,
                            int64_t out)
{
    struct sref *s = tmp;
    uint64_t *u = tmp;
    for (int64_t j = 0; j < n; j++) {
        if (strings)
            s[j] = (struct sref){vl->sp[ent[j]], vl->sn[ent[j]]};
        else
            u[j] = vl->v[ent[j]];
    }
    qsort(tmp, (size_t)n, strings ? sizeof(*s) : sizeof(*u), strings ? cmp_sref : cmp_u64);
    for (int64_t j = 0; j < n; j++) {
        if (j && (strings ? cmp_sref(&s[j], &s[j - 1]) == 0 : u[j] == u[j - 1]))
            continue;
        ng[out] = g;
        if (strings) {
            ((const char **)nv)[out] = s[j].p;
            nsn[out] = s[j].n;
        } else {
            ((uint64_t *)nv)[out] = u[j];
        }
        out++;
    }
    return out;
}

/* Sorts each group's values and drops duplicates into fresh arrays; the
 * list ends up ordered by group. */
int df__vlist_compact(struct df__agg *a, struct df__vlist *vl, bool strings, struct fr_error *err)
{
    int64_t ngroups = max_group(vl), out = 0, cap = vl->cap ? vl->cap : 1;
    int64_t *offs = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    int64_t *perm = offs ? df__vlist_order(vl, ngroups, offs) : NULL;
    void *tmp = fr_try_malloc(sizeof(struct sref) * (size_t)cap);
    int64_t *ng = fr_try_malloc(8 * (size_t)cap);
    void *nv = fr_try_malloc(8 * (size_t)cap);
    int64_t *nsn = strings ? fr_try_malloc(8 * (size_t)cap) : NULL;
    int rc = FR_ETOOLARGE;
    if (!perm || !tmp || !ng || !nv || (strings && !nsn)) {
        fr_error_set(err, rc, "out of memory deduplicating %lld values", (long long)vl->n);
        goto out;
    }
    for (int64_t g = 0; g < ngroups; g++)
        out = dedupe_group(vl, g, perm + offs[g], offs[g + 1] - offs[g], strings, tmp, ng, nv, nsn,
                           out);
    free(vl->g);
    vl->g = ng;
    ng = NULL;
    if (strings) {
        free((void *)vl->sp);
        free(vl->sn);
        vl->sp = nv;
        vl->sn = nsn;
        nsn = NULL;
    } else {
        free(vl->v);
        vl->v = nv;
    }
    nv = NULL;
    vl->n = out;
    vl->compact_at = out * 2 > (1 << 16) ? out * 2 : (1 << 16);
    rc = FR_OK;
    (void)a;
out:
    free(offs);
    free(perm);
    free(tmp);
    free(ng);
    free(nv);
    free(nsn);
    return rc;
}

/* ---- median ------------------------------------------------------------ */

/* Sets offs[g + 1] to where group g's values start in a grouped array of
 * the pairs' and the borrowed runs' values (offs[0] = 0); returns their
 * number. */
static int64_t median_starts(const struct df__agg_acc *c, int64_t ngroups, int64_t *offs)
{
    memset(offs, 0, sizeof(int64_t) * (size_t)(ngroups + 1));
    for (int64_t i = 0; i < c->vl.n; i++)
        offs[c->vl.g[i] + 1]++;
    for (int64_t i = 0; i < c->seg.n; i++)
        offs[c->seg.g[i] + 1] += c->seg.sn[i];
    int64_t total = 0;
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t n = offs[g + 1];
        offs[g + 1] = total;
        total += n;
    }
    return total;
}

/* Writes every value to dst grouped, advancing offs[g + 1] past group g's:
 * afterwards group g's values are dst[offs[g] .. offs[g + 1]). */
static void median_scatter(const struct df__agg_acc *c, int64_t *offs, uint64_t *dst)
{
    const int64_t *g = c->vl.g;
    const uint64_t *v = c->vl.v;
    for (int64_t i = 0; i < c->vl.n; i++)
        dst[offs[g[i] + 1]++] = v[i];
    for (int64_t i = 0; i < c->seg.n; i++) {
        int64_t n = c->seg.sn[i];
        memcpy(dst + offs[c->seg.g[i] + 1], c->seg.sp[i], sizeof(uint64_t) * (size_t)n);
        offs[c->seg.g[i] + 1] += n;
    }
}

int df__median_blob(struct df__agg_acc *c, int64_t ngroups, struct df_column **out,
                    struct fr_error *err)
{
    struct df_column *col = df_column_new(DF_TYPE_STRING, 0);
    free(col->offsets);
    free(col->data);
    col->offsets = df__alloc_big(sizeof(int64_t) * (size_t)(ngroups + 1));
    int64_t total = col->offsets ? median_starts(c, ngroups, col->offsets) : 0;
    col->data = df__alloc_big(sizeof(uint64_t) * (size_t)(total ? total : 1));
    if (!col->offsets || !col->data) {
        if (!col->offsets)
            col->offsets = fr_xcalloc(1, sizeof(int64_t));
        df_column_unref(col);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory packing %lld values",
                            (long long)total);
    }
    median_scatter(c, col->offsets, (uint64_t *)col->data);
    for (int64_t g = 0; g <= ngroups; g++)
        col->offsets[g] *= (int64_t)sizeof(uint64_t);
    col->capacity = ngroups;
    col->data_cap = sizeof(uint64_t) * (size_t)(total ? total : 1);
    col->data_len = (int64_t)sizeof(uint64_t) * total;
    col->length = ngroups;
    *out = col;
    return FR_OK;
}

int df__median_merge(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                     const struct df_column *blob, int64_t start, int64_t m, struct fr_error *err)
{
    int rc = df__vlist_reserve(a, &c->seg, m, true, err);
    for (int64_t i = 0; rc == FR_OK && i < m; i++) {
        int64_t len;
        const char *p = df_column_string(blob, start + i, &len);
        /* a state comes from a peer: its framing is checked, not trusted */
        if (len < 0 || len % (int64_t)sizeof(uint64_t) != 0)
            return fr_error_set(err, FR_EDATA,
                                "a partial median state is %lld bytes, not a multiple of 8",
                                (long long)len);
        if (len == 0)
            continue;
        c->seg.g[c->seg.n] = gids[i];
        c->seg.sp[c->seg.n] = p; /* the partials outlive the final phase */
        c->seg.sn[c->seg.n++] = len / (int64_t)sizeof(uint64_t);
    }
    return rc;
}

/* Selects the k-th smallest of v[0..n) into v[k] (quickselect). */
static void select_kth(uint64_t *v, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint64_t pivot = v[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                uint64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

int df__median_result(struct df__agg *a, struct df__agg_acc *c, int64_t ngroups,
                      struct df_column *col, struct fr_error *err)
{
    int64_t *offs = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    if (!offs)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory grouping values");
    int64_t total = median_starts(c, ngroups, offs);
    int rc = df__agg_charge(a, (int64_t)sizeof(uint64_t) * total, err);
    uint64_t *v =
        rc == FR_OK ? df__alloc_big(sizeof(uint64_t) * (size_t)(total ? total : 1)) : NULL;
    if (!v) {
        free(offs);
        return rc != FR_OK ? rc
                           : fr_error_set(err, FR_ETOOLARGE, "out of memory for %lld values",
                                          (long long)total);
    }
    median_scatter(c, offs, v);
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t n = offs[g + 1] - offs[g];
        uint64_t *gv = v + offs[g];
        if (n == 0) {
            df_column_append_null(col);
            continue;
        }
        int64_t k = (n - 1) / 2;
        select_kth(gv, n, k);
        double med = df__double_of_key(gv[k]);
        if (n % 2 == 0) {
            uint64_t up = gv[k + 1];
            for (int64_t j = k + 2; j < n; j++)
                up = gv[j] < up ? gv[j] : up;
            med = (med + df__double_of_key(up)) / 2;
        }
        df_column_append_float64(col, med);
    }
    free(v);
    free(offs);
    return FR_OK;
}
