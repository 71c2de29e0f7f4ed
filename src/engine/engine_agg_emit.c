/* engine_agg_emit: turning accumulators into columns: the partial-state
 * columns (plain table columns, so partials can travel as tables) and the
 * final result columns; plus the value lists behind median and
 * count_distinct. Value blobs pack 8-byte host-order values, or for strings
 * a 4-byte length then the bytes; partials move between like hosts. */
#include "engine_ops_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sref {
    const char *p;
    int64_t n;
};

int df__vlist_push(struct df__agg *a, struct df__vlist *vl, int64_t g, uint64_t v, const char *sp,
                   int64_t sn, bool strings, struct fr_error *err)
{
    if (vl->n == vl->cap) {
        int64_t cap = vl->cap ? vl->cap * 2 : 1024;
        int rc = df__agg_charge(a, (cap - vl->cap) * (strings ? 24 : 16), err);
        if (rc != FR_OK)
            return rc;
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
    }
    if (vl->compact_at == 0)
        vl->compact_at = 1 << 16;
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
static int64_t *bucket_order(const struct df__vlist *vl, int64_t ngroups, int64_t *offs)
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
    int64_t *perm = offs ? bucket_order(vl, ngroups, offs) : NULL;
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

/* ---- result and state columns ------------------------------------------- */

/* new: a fixed-width column of n values to be written in place (large ones
 * on huge pages); a failed allocation leaves it empty and marked oom. */
static struct df_column *fixed_column(df_type type, int64_t n)
{
    struct df_column *col = df_column_new(type, 0);
    if (n <= 0)
        return col;
    free(col->values);
    col->values = df__alloc_big(df_type_width(type) * (size_t)n);
    if (!col->values) {
        col->oom = true;
        return col;
    }
    col->capacity = n;
    col->length = n;
    return col;
}

/* Marks row g null (its value bytes zero, as nulls must be). */
static void put_null(struct df_column *col, int64_t g)
{
    memset((char *)col->values + df_type_width(col->type) * (size_t)g, 0, df_type_width(col->type));
    df_column_set_null(col, g);
}

static struct df_column *value_column(const struct df__agg_acc *c, df_type type, int64_t ngroups)
{
    if (type == DF_TYPE_STRING) {
        struct df_column *col = df_column_new(type, ngroups);
        for (int64_t g = 0; g < ngroups; g++) {
            if (c->n[g] == 0)
                df_column_append_null(col);
            else
                df_column_append_string(col, c->sp[g], c->sn[g]);
        }
        return col;
    }
    struct df_column *col = fixed_column(type, ngroups);
    if (col->oom)
        return col;
    for (int64_t g = 0; g < ngroups; g++) {
        switch (type) {
        case DF_TYPE_FLOAT64:
            ((double *)col->values)[g] = c->d[0][g];
            break;
        case DF_TYPE_BOOL:
            ((uint8_t *)col->values)[g] = c->i[g] != 0;
            break;
        case DF_TYPE_DATE:
            ((int32_t *)col->values)[g] = (int32_t)c->i[g];
            break;
        default:
            ((int64_t *)col->values)[g] = c->i[g];
            break;
        }
    }
    for (int64_t g = 0; g < ngroups; g++)
        if (c->n[g] == 0)
            put_null(col, g);
    return col;
}

/* new: an exact integer sum's state as two int64 columns, its low and its
 * high 64 bits (lo null for a group without values when nulls is set); a
 * float sum has no high bits (zeros). */
static struct df_column *wide_half(const struct df__agg_acc *c, bool high, bool nulls,
                                   int64_t ngroups)
{
    struct df_column *col = fixed_column(DF_TYPE_INT64, ngroups);
    for (int64_t g = 0; g < ngroups && !col->oom; g++) {
        __int128 v = c->wide ? c->wide[g] : 0;
        ((int64_t *)col->values)[g] =
            high ? (int64_t)(v >> 64) : (int64_t)(uint64_t)(unsigned __int128)v;
        if (nulls && c->n[g] == 0)
            put_null(col, g);
    }
    return col;
}

/* new: the exact sums as int64 results, or NULL with err set when one
 * leaves int64's range (SQL's sum of bigint is exact; a wrapped number or
 * a silent null would be a wrong answer). */
static struct df_column *sums_result(const struct df__agg_acc *c, const char *name, int64_t ngroups,
                                     struct fr_error *err)
{
    for (int64_t g = 0; g < ngroups; g++)
        if (c->wide[g] > INT64_MAX || c->wide[g] < INT64_MIN) {
            fr_error_setk(err, FR_EDATA, "arithmetic-overflow",
                          "the sum '%s' of an int64 column leaves int64's range; cast to "
                          "double to sum past int64",
                          name);
            return NULL;
        }
    return wide_half(c, false, true, ngroups);
}

/* The mean of an exact integer sum: quotient and remainder apart. */
static double exact_mean(__int128 sum, int64_t n)
{
    __int128 q = sum / n, r = sum % n;
    return (double)((long double)q + (long double)r / (long double)n);
}

static struct df_column *doubles_column(const double *d, int64_t ngroups)
{
    struct df_column *col = fixed_column(DF_TYPE_FLOAT64, ngroups);
    if (ngroups > 0 && !col->oom)
        memcpy(col->values, d, sizeof(double) * (size_t)ngroups);
    return col;
}

static struct df_column *ints_column(const int64_t *v, int64_t ngroups)
{
    struct df_column *col = fixed_column(DF_TYPE_INT64, ngroups);
    if (ngroups > 0 && !col->oom)
        memcpy(col->values, v, sizeof(int64_t) * (size_t)ngroups);
    return col;
}

/* One blob per group: its values packed (strings length-prefixed). */
static int blob_column(struct df__agg *a, struct df__agg_acc *c, int64_t ngroups,
                       struct df_column **out, struct fr_error *err)
{
    bool strings = c->func == DF_AGG_COUNT_DISTINCT && c->type == DF_TYPE_STRING;
    if (c->func == DF_AGG_COUNT_DISTINCT) {
        int rc = df__vlist_compact(a, &c->vl, strings, err);
        if (rc != FR_OK)
            return rc;
    }
    int64_t *offs = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    int64_t *perm = offs ? bucket_order(&c->vl, ngroups, offs) : NULL;
    if (!perm) {
        free(offs);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory packing values");
    }
    /* one pass to size the data, one to write it: no per-value appends */
    int64_t total = 0;
    for (int64_t e = 0; e < c->vl.n; e++)
        total += strings ? (int64_t)sizeof(uint32_t) + c->vl.sn[e] : (int64_t)sizeof(uint64_t);
    struct df_column *col = df_column_new(DF_TYPE_STRING, 0);
    free(col->offsets);
    free(col->data);
    col->offsets = df__alloc_big(sizeof(int64_t) * (size_t)(ngroups + 1));
    col->data = df__alloc_big((size_t)(total ? total : 1));
    if (!col->offsets || !col->data) {
        if (!col->offsets)
            col->offsets = fr_xcalloc(1, sizeof(int64_t));
        df_column_unref(col);
        free(offs);
        free(perm);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory packing values");
    }
    col->capacity = ngroups;
    col->data_cap = total ? total : 1;
    char *d = col->data;
    int64_t pos = 0;
    col->offsets[0] = 0;
    for (int64_t g = 0; g < ngroups; g++) {
        for (int64_t j = offs[g]; j < offs[g + 1]; j++) {
            int64_t e = perm[j];
            if (strings) {
                uint32_t n = (uint32_t)c->vl.sn[e];
                memcpy(d + pos, &n, sizeof(n));
                if (n)
                    memcpy(d + pos + sizeof(n), c->vl.sp[e], n);
                pos += (int64_t)sizeof(n) + n;
            } else {
                memcpy(d + pos, &c->vl.v[e], sizeof(uint64_t));
                pos += (int64_t)sizeof(uint64_t);
            }
        }
        col->offsets[g + 1] = pos;
    }
    col->data_len = pos;
    col->length = ngroups;
    free(offs);
    free(perm);
    *out = col;
    return FR_OK;
}

static void add_state(struct df_table *t, int k, const char *field, struct df_column *col)
{
    char name[64];
    snprintf(name, sizeof(name), "__s%d_%s", k, field);
    df_table_add(t, name, col);
}

int df__agg_emit_partial(struct df__agg *a, int64_t ngroups, struct df_table *t,
                         struct fr_error *err)
{
    static const char *const moments[] = {"mean_x", "mean_y", "m2_x", "m2_y", "c_xy"};
    for (int k = 0; k < a->nspecs; k++) {
        struct df__agg_acc *c = &a->acc[k];
        struct df_column *col = NULL;
        switch (c->func) {
        case DF_AGG_COUNT_STAR:
        case DF_AGG_COUNT:
            add_state(t, k, "n", ints_column(c->n, ngroups));
            break;
        case DF_AGG_SUM:
        case DF_AGG_MEAN:
            /* an integer sum travels exactly, as its two halves */
            add_state(t, k, "sum",
                      c->type == DF_TYPE_FLOAT64 ? value_column(c, DF_TYPE_FLOAT64, ngroups)
                                                 : wide_half(c, false, true, ngroups));
            if (c->func == DF_AGG_MEAN)
                add_state(t, k, "n", ints_column(c->n, ngroups));
            add_state(t, k, "hi", wide_half(c, true, false, ngroups));
            break;
        case DF_AGG_MIN:
        case DF_AGG_MAX:
        case DF_AGG_FIRST:
            add_state(t, k, "value", value_column(c, c->type, ngroups));
            break;
        case DF_AGG_STDDEV:
        case DF_AGG_CORR:
            add_state(t, k, "n", ints_column(c->n, ngroups));
            for (int j = 0; j < (c->func == DF_AGG_CORR ? 5 : 2); j++)
                add_state(t, k,
                          c->func == DF_AGG_CORR ? moments[j]
                          : j                    ? "m2"
                                                 : "mean",
                          doubles_column(c->d[j], ngroups));
            break;
        case DF_AGG_MEDIAN:
        case DF_AGG_COUNT_DISTINCT: {
            int rc = blob_column(a, c, ngroups, &col, err);
            if (rc != FR_OK)
                return rc;
            add_state(t, k, "values", col);
            break;
        }
        }
    }
    return FR_OK;
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

/* median and count_distinct results from the value lists. */
static int values_result(struct df__agg *a, struct df__agg_acc *c, int64_t ngroups,
                         struct df_column *col, struct fr_error *err)
{
    bool strings = c->func == DF_AGG_COUNT_DISTINCT && c->type == DF_TYPE_STRING;
    if (c->func == DF_AGG_COUNT_DISTINCT) {
        int rc = df__vlist_compact(a, &c->vl, strings, err);
        if (rc != FR_OK)
            return rc;
    }
    int64_t *offs = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    int64_t *perm = offs ? bucket_order(&c->vl, ngroups, offs) : NULL;
    uint64_t *tmp = fr_try_malloc(sizeof(uint64_t) * (size_t)(c->vl.n ? c->vl.n : 1));
    int rc = FR_ETOOLARGE;
    if (!perm || !tmp) {
        fr_error_set(err, rc, "out of memory for %lld values", (long long)c->vl.n);
        goto out;
    }
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t n = offs[g + 1] - offs[g];
        if (c->func == DF_AGG_COUNT_DISTINCT) {
            df_column_append_int64(col, n);
            continue;
        }
        if (n == 0) {
            df_column_append_null(col);
            continue;
        }
        for (int64_t j = 0; j < n; j++)
            tmp[j] = c->vl.v[perm[offs[g] + j]];
        int64_t k = (n - 1) / 2;
        select_kth(tmp, n, k);
        double med = df__double_of_key(tmp[k]);
        if (n % 2 == 0) {
            uint64_t up = tmp[k + 1];
            for (int64_t j = k + 2; j < n; j++)
                up = tmp[j] < up ? tmp[j] : up;
            med = (med + df__double_of_key(up)) / 2;
        }
        df_column_append_float64(col, med);
    }
    rc = FR_OK;
out:
    free(offs);
    free(perm);
    free(tmp);
    return rc;
}

static void moments_result(const struct df__agg_acc *c, int64_t ngroups, struct df_column *col)
{
    for (int64_t g = 0; g < ngroups; g++) {
        if (c->n[g] < 2) {
            df_column_append_null(col);
        } else if (c->func == DF_AGG_STDDEV) {
            df_column_append_float64(col, sqrt(c->d[1][g] / (double)(c->n[g] - 1)));
        } else {
            double den = sqrt(c->d[2][g] * c->d[3][g]);
            if (den > 0)
                df_column_append_float64(col, c->d[4][g] / den);
            else
                df_column_append_null(col);
        }
    }
}

int df__agg_emit_final(struct df__agg *a, int64_t ngroups, const char *const *names,
                       struct df_table *t, struct fr_error *err)
{
    for (int k = 0; k < a->nspecs; k++) {
        struct df__agg_acc *c = &a->acc[k];
        df_type rt = df_agg_result_type(c->func, c->type);
        struct df_column *col = NULL;
        switch (c->func) {
        case DF_AGG_COUNT_STAR:
        case DF_AGG_COUNT:
            col = ints_column(c->n, ngroups);
            break;
        case DF_AGG_SUM:
            if (c->type != DF_TYPE_FLOAT64 && !(col = sums_result(c, names[k], ngroups, err)))
                return err->status;
            if (!col)
                col = value_column(c, rt, ngroups);
            break;
        case DF_AGG_MIN:
        case DF_AGG_MAX:
        case DF_AGG_FIRST:
            col = value_column(c, rt, ngroups);
            break;
        case DF_AGG_MEAN:
            col = fixed_column(DF_TYPE_FLOAT64, ngroups);
            for (int64_t g = 0; g < ngroups && !col->oom; g++) {
                if (!c->n[g])
                    put_null(col, g);
                else if (c->type == DF_TYPE_FLOAT64)
                    ((double *)col->values)[g] = c->d[0][g] / (double)c->n[g];
                else
                    ((double *)col->values)[g] = exact_mean(c->wide[g], c->n[g]);
            }
            break;
        case DF_AGG_STDDEV:
        case DF_AGG_CORR:
            col = df_column_new(DF_TYPE_FLOAT64, ngroups);
            moments_result(c, ngroups, col);
            break;
        case DF_AGG_MEDIAN:
        case DF_AGG_COUNT_DISTINCT: {
            col = df_column_new(rt, ngroups);
            int rc = values_result(a, c, ngroups, col, err);
            if (rc != FR_OK) {
                df_column_unref(col);
                return rc;
            }
            break;
        }
        }
        df_table_add(t, names[k], col);
    }
    return FR_OK;
}
