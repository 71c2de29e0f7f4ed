/* engine_agg_state: the accumulators of hash aggregation: per-group arrays
 * for each aggregate, the row-wise updates of the partial phase and the
 * state merges of the final phase (Chan et al. for variance and co-moments,
 * so that any split of the input gives the same answer). */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

void df__agg_init(struct df__agg *a, const struct df_agg_spec *specs, int nspecs,
                  const df_type *types, struct df_exec *ex)
{
    memset(a, 0, sizeof(*a));
    a->nspecs = nspecs;
    a->acc = fr_xcalloc((size_t)(nspecs ? nspecs : 1), sizeof(*a->acc));
    for (int k = 0; k < nspecs; k++) {
        a->acc[k].func = specs[k].func;
        a->acc[k].type = specs[k].func == DF_AGG_COUNT_STAR ? DF_TYPE_INT64 : types[k];
    }
    a->ex = ex;
}

void df__agg_cleanup(struct df__agg *a)
{
    for (int k = 0; k < a->nspecs; k++) {
        struct df__agg_acc *c = &a->acc[k];
        fr_free_big(c->n);
        fr_free_big(c->i);
        fr_free_big(c->wide);
        fr_free_big(c->d);
        fr_free_big(c->mom);
        fr_free_big((void *)c->sp);
        fr_free_big(c->sn);
        fr_free_big(c->vl.g);
        fr_free_big(c->vl.v);
        fr_free_big((void *)c->vl.sp);
        fr_free_big(c->vl.sn);
        fr_free_big(c->seg.g);
        fr_free_big((void *)c->seg.sp);
        fr_free_big(c->seg.sn);
    }
    free(a->acc);
    free(a->scratch_i);
    free(a->scratch_d);
    if (a->ex && a->charged)
        df_exec_charge(a->ex, -a->charged, NULL);
    memset(a, 0, sizeof(*a));
}

int df__agg_charge(struct df__agg *a, int64_t bytes, struct fr_error *err)
{
    a->charged += bytes;
    return a->ex ? df_exec_charge(a->ex, bytes, err) : FR_OK;
}

static int grow_zeroed(void **p, size_t elem, int64_t old_n, int64_t new_n)
{
    return df__grow_big(p, elem, old_n, new_n, true);
}

/* The Welford states, on cache-line boundaries (corr's fill one line). */
static int grow_mom(struct df__agg_acc *c, int64_t old_n, int64_t n)
{
    size_t w = sizeof(double) * (size_t)df__mom_stride(c->func);
    size_t ob = w * (size_t)old_n, nb = w * (size_t)n;
    void *q = NULL;
    if (nb >= (4u << 20))
        q = df__alloc_big(nb);
    else if (posix_memalign(&q, 64, nb ? nb : 64) != 0)
        q = NULL;
    if (!q)
        return FR_ETOOLARGE;
    if (ob)
        memcpy(q, c->mom, ob);
    memset((char *)q + ob, 0, nb - ob);
    fr_free_big(c->mom);
    c->mom = q;
    return FR_OK;
}

/* Which arrays an accumulator uses: a Welford state alone for stddev and
 * corr; otherwise n and the rest by function/type. */
static int acc_grow(struct df__agg_acc *c, int64_t old_n, int64_t n)
{
    bool fl = c->type == DF_TYPE_FLOAT64, str = c->type == DF_TYPE_STRING;
    bool nd = false, ints = false, strs = false;
    switch (c->func) {
    case DF_AGG_SUM:
    case DF_AGG_MEAN:
        nd = fl;
        break;
    case DF_AGG_MIN:
    case DF_AGG_MAX:
    case DF_AGG_FIRST:
        nd = fl;
        strs = str;
        ints = !fl && !str;
        break;
    case DF_AGG_STDDEV:
    case DF_AGG_CORR:
        return grow_mom(c, old_n, n);
    default:
        break;
    }
    bool wide = (c->func == DF_AGG_SUM || c->func == DF_AGG_MEAN) && !fl;
    if (grow_zeroed((void **)&c->n, 8, old_n, n) ||
        (wide && grow_zeroed((void **)&c->wide, sizeof(__int128), old_n, n)) ||
        (ints && grow_zeroed((void **)&c->i, 8, old_n, n)) ||
        (strs &&
         (grow_zeroed((void **)&c->sp, 8, old_n, n) || grow_zeroed((void **)&c->sn, 8, old_n, n))))
        return FR_ETOOLARGE;
    return nd && grow_zeroed((void **)&c->d, 8, old_n, n) ? FR_ETOOLARGE : FR_OK;
}

int df__agg_reserve(struct df__agg *a, int64_t ngroups, struct fr_error *err)
{
    if (ngroups <= a->cap)
        return FR_OK;
    int64_t cap = a->cap ? a->cap : 64;
    if (ngroups > cap * 2)
        cap = ngroups; /* a reservation up front: exactly that */
    while (cap < ngroups)
        cap *= 2;
    /* 24 bytes a group for the grouping, 24 for most states, a Welford
     * state's own width */
    int64_t width = 24;
    for (int k = 0; k < a->nspecs; k++) {
        enum df_agg_func f = a->acc[k].func;
        width += f == DF_AGG_STDDEV || f == DF_AGG_CORR ? 8 * df__mom_stride(f) : 24;
    }
    int rc = df__agg_charge(a, (cap - a->cap) * width, err);
    if (rc != FR_OK)
        return rc;
    for (int k = 0; k < a->nspecs; k++)
        if (acc_grow(&a->acc[k], a->cap, cap) != FR_OK)
            return fr_error_set(err, FR_ETOOLARGE, "out of memory for %lld groups", (long long)cap);
    a->cap = cap;
    return FR_OK;
}

/* ---- viewing a morsel of values as int64 or double --------------------- */

static int scratch(struct df__agg *a, int64_t m)
{
    if (m <= a->scratch_cap)
        return FR_OK;
    free(a->scratch_i);
    free(a->scratch_d);
    a->scratch_i = fr_try_malloc(sizeof(int64_t) * (size_t)m);
    a->scratch_d = fr_try_malloc(sizeof(double) * (size_t)m);
    a->scratch_cap = (a->scratch_i && a->scratch_d) ? m : 0;
    return a->scratch_cap ? FR_OK : FR_ETOOLARGE;
}

static const int64_t *ints_of(struct df__agg *a, const struct df_column *c, int64_t start,
                              int64_t m)
{
    int64_t *out = a->scratch_i;
    switch (c->type) {
    case DF_TYPE_BOOL:
        for (int64_t i = 0; i < m; i++)
            out[i] = ((const uint8_t *)c->values)[start + i];
        return out;
    case DF_TYPE_DATE:
        for (int64_t i = 0; i < m; i++)
            out[i] = ((const int32_t *)c->values)[start + i];
        return out;
    default:
        return (const int64_t *)c->values + start;
    }
}

static const double *doubles_of(struct df__agg *a, const struct df_column *c, int64_t start,
                                int64_t m)
{
    if (c->type == DF_TYPE_FLOAT64)
        return (const double *)c->values + start;
    const int64_t *iv = ints_of(a, c, start, m);
    for (int64_t i = 0; i < m; i++)
        a->scratch_d[i] = (double)iv[i];
    return a->scratch_d;
}

#define VALID(c, r) (!(c)->validity || df_column_is_valid((c), (r)))

/* ---- partial-phase updates ---------------------------------------------- */

/* Groups [0, upto) of a sum whose n was implied get n = 1 where it is 0. */
static void settle_sum(struct df__agg_acc *c, int64_t upto)
{
    for (int64_t g = 0; g < upto; g++)
        c->n[g] += c->n[g] == 0;
}

void df__agg_settle(struct df__agg *a, int64_t ngroups)
{
    for (int k = 0; k < a->nspecs; k++) {
        struct df__agg_acc *c = &a->acc[k];
        if (c->func == DF_AGG_SUM && c->implied > 0)
            settle_sum(c, c->implied < ngroups ? c->implied : ngroups);
    }
}

/* The groups a morsel touches: top raised past its largest group id. */
static int64_t groups_upto(const int64_t *gids, int64_t m, int64_t top)
{
    for (int64_t i = 0; i < m; i++)
        top = gids[i] >= top ? gids[i] + 1 : top;
    return top;
}

/* Integer sums accumulate exactly (a 128-bit sum of int64 values cannot
 * overflow below 2^64 rows); the final phase refuses one past int64.
 * The implied count holds while every row of every group reaches every sum
 * (df_agg_partial: one column for all its morsels, group ids dense in the
 * order groups appear): a caller that fed a sum only some rows (a filtered
 * aggregate) would have to count. */
static void update_sum(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                       const struct df_column *x, int64_t start, int64_t m)
{
    bool no_nulls = !x->validity || x->null_count == 0;
    if (c->func == DF_AGG_SUM && !no_nulls && !c->counted) { /* nulls: count from here on */
        settle_sum(c, c->implied);
        c->counted = true;
    }
    bool implied = c->func == DF_AGG_SUM && no_nulls && !c->counted; /* one access a row */
    if (implied)
        c->implied = groups_upto(gids, m, c->implied);
    if (x->type == DF_TYPE_FLOAT64) {
        const double *v = doubles_of(a, x, start, m);
        double *s = c->d;
        if (implied) {
            for (int64_t i = 0; i < m; i++)
                s[gids[i]] += v[i];
            return;
        }
        for (int64_t i = 0; i < m; i++)
            if (VALID(x, start + i)) {
                s[gids[i]] += v[i];
                c->n[gids[i]]++;
            }
        return;
    }
    const int64_t *v = ints_of(a, x, start, m);
    __int128 *s = c->wide;
    if (implied) {
        for (int64_t i = 0; i < m; i++)
            s[gids[i]] += v[i];
        return;
    }
    for (int64_t i = 0; i < m; i++)
        if (VALID(x, start + i)) {
            s[gids[i]] += v[i];
            c->n[gids[i]]++;
        }
}

/* A partial's exact integer sum: its low 64 bits and its high 64 bits. */
static __int128 wide_of(const struct df_column *lo, const struct df_column *hi, int64_t r)
{
    uint64_t l = (uint64_t)df_column_int64(lo, r);
    return (__int128)((unsigned __int128)(uint64_t)df_column_int64(hi, r) << 64 | l);
}

/* Merges partial sum states: (sum, hi) for sum, (sum, n, hi) for mean. */
static void merge_sum(struct df__agg_acc *c, const int64_t *gids, struct df_column *const *cols,
                      int64_t start, int64_t m)
{
    bool mean = c->func == DF_AGG_MEAN, fl = c->type == DF_TYPE_FLOAT64;
    const struct df_column *hi = cols[mean ? 2 : 1];
    for (int64_t i = 0; i < m; i++) {
        int64_t r = start + i, g = gids[i];
        if (!VALID(cols[0], r))
            continue;
        if (fl)
            c->d[g] += df_column_float64(cols[0], r);
        else
            c->wide[g] += wide_of(cols[0], hi, r);
        c->n[g] += mean ? df_column_int64(cols[1], r) : 1;
    }
}

/* min, max and first: "better" means the new value replaces the old. */
static void update_pick(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                        const struct df_column *x, int64_t start, int64_t m)
{
    int sign = c->func == DF_AGG_MIN ? -1 : 1;
    bool first = c->func == DF_AGG_FIRST;
    if (x->type == DF_TYPE_STRING) {
        for (int64_t i = 0; i < m; i++) {
            int64_t g = gids[i], r = start + i, n;
            if (!VALID(x, r) || (first && c->n[g]))
                continue;
            const char *p = df_column_string(x, r, &n);
            int cmp = 0;
            if (c->n[g] && !first) {
                int64_t min = n < c->sn[g] ? n : c->sn[g];
                cmp = min ? memcmp(p, c->sp[g], (size_t)min) : 0;
                if (cmp == 0)
                    cmp = (n > c->sn[g]) - (n < c->sn[g]);
            }
            if (!c->n[g] || cmp * sign > 0) {
                c->sp[g] = p;
                c->sn[g] = n;
            }
            c->n[g]++;
        }
    } else if (x->type == DF_TYPE_FLOAT64) {
        const double *v = doubles_of(a, x, start, m);
        for (int64_t i = 0; i < m; i++) {
            int64_t g = gids[i];
            if (!VALID(x, start + i) || (first && c->n[g]))
                continue;
            uint64_t kn = df__double_key(v[i]), ko = df__double_key(c->d[g]);
            if (!c->n[g] || (sign > 0 ? kn > ko : kn < ko))
                c->d[g] = v[i];
            c->n[g]++;
        }
    } else {
        const int64_t *v = ints_of(a, x, start, m);
        for (int64_t i = 0; i < m; i++) {
            int64_t g = gids[i];
            if (!VALID(x, start + i) || (first && c->n[g]))
                continue;
            if (!c->n[g] || (sign > 0 ? v[i] > c->i[g] : v[i] < c->i[g]))
                c->i[g] = v[i];
            c->n[g]++;
        }
    }
}

static void update_stddev(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                          const struct df_column *x, int64_t start, int64_t m)
{
    const double *v = doubles_of(a, x, start, m);
    double *restrict mom = c->mom;
    for (int64_t i = 0; i < m; i++) {
        if (!VALID(x, start + i))
            continue;
        double *s = mom + 4 * gids[i];
        double n = s[0] + 1, delta = v[i] - s[1], mean = s[1] + delta / n;
        s[0] = n;
        s[1] = mean;
        s[2] += delta * (v[i] - mean);
    }
}

/* A row's value of a numeric column as a double. */
static inline double num_at(const struct df_column *c, int64_t r)
{
    switch (c->type) {
    case DF_TYPE_FLOAT64:
        return ((const double *)c->values)[r];
    case DF_TYPE_BOOL:
        return ((const uint8_t *)c->values)[r];
    case DF_TYPE_DATE:
        return ((const int32_t *)c->values)[r];
    default:
        return (double)((const int64_t *)c->values)[r];
    }
}

/* One row's Welford step of corr on group state s (one division). */
static inline void corr_step(double *restrict s, double x, double y)
{
    double n = s[0] + 1, inv = 1.0 / n;
    double dx = x - s[1], dy = y - s[2];
    double mx = s[1] + dx * inv, my = s[2] + dy * inv;
    s[0] = n;
    s[1] = mx;
    s[2] = my;
    s[3] += dx * (x - mx);
    s[4] += dy * (y - my);
    s[5] += dx * (y - my);
}

static void update_corr(struct df__agg_acc *c, const int64_t *gids, const struct df_column *x,
                        const struct df_column *y, int64_t start, int64_t m)
{
    double *mom = c->mom;
    if (!x->validity && !y->validity && x->type == DF_TYPE_INT64 && y->type == DF_TYPE_INT64) {
        const int64_t *xv = (const int64_t *)x->values + start,
                      *yv = (const int64_t *)y->values + start;
        for (int64_t i = 0; i < m; i++)
            corr_step(mom + 8 * gids[i], (double)xv[i], (double)yv[i]);
    } else if (!x->validity && !y->validity && x->type == DF_TYPE_FLOAT64 &&
               y->type == DF_TYPE_FLOAT64) {
        const double *xv = (const double *)x->values + start,
                     *yv = (const double *)y->values + start;
        for (int64_t i = 0; i < m; i++)
            corr_step(mom + 8 * gids[i], xv[i], yv[i]);
    } else {
        for (int64_t i = 0; i < m; i++)
            if (VALID(x, start + i) && VALID(y, start + i))
                corr_step(mom + 8 * gids[i], num_at(x, start + i), num_at(y, start + i));
    }
}

/* median and count_distinct collect values; count_distinct dedupes as it goes. */
static int update_values(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                         const struct df_column *x, int64_t start, int64_t m, struct fr_error *err)
{
    bool strings = x->type == DF_TYPE_STRING;
    if (c->func == DF_AGG_MEDIAN) { /* room for the morsel, then no call per value */
        const double *dv = doubles_of(a, x, start, m);
        /* the first morsel sizes the list for the whole input's values (its
         * rows less the column's nulls): growing it by doubling copied it
         * and faulted in fresh pages each time */
        int64_t rest = a->rows_hint - start - x->null_count;
        int64_t want = c->vl.cap == 0 && rest > m ? rest : m;
        int rc = df__vlist_reserve(a, &c->vl, want, false, err);
        if (rc != FR_OK)
            return rc;
        int64_t n = c->vl.n, *g = c->vl.g;
        uint64_t *v = c->vl.v;
        for (int64_t i = 0; i < m; i++) {
            g[n] = gids[i];
            v[n] = df__double_key(dv[i]);
            n += VALID(x, start + i);
        }
        c->vl.n = n;
        return FR_OK;
    }
    bool as_double = x->type == DF_TYPE_FLOAT64;
    const double *dv = (!strings && as_double) ? doubles_of(a, x, start, m) : NULL;
    const int64_t *iv = (!strings && !as_double) ? ints_of(a, x, start, m) : NULL;
    for (int64_t i = 0; i < m; i++) {
        if (!VALID(x, start + i))
            continue;
        int64_t sn = 0;
        const char *sp = strings ? df_column_string(x, start + i, &sn) : NULL;
        uint64_t v = strings ? 0 : dv ? df__double_key(dv[i]) : (uint64_t)iv[i];
        int rc = df__vlist_push(a, &c->vl, gids[i], v, sp, sn, strings, err);
        if (rc != FR_OK)
            return rc;
    }
    if (c->func == DF_AGG_COUNT_DISTINCT && c->vl.n >= c->vl.compact_at)
        return df__vlist_compact(a, &c->vl, strings, err);
    return FR_OK;
}

int df__agg_update(struct df__agg *a, int k, const int64_t *gids, const struct df_column *x,
                   const struct df_column *y, int64_t start, int64_t m, struct fr_error *err)
{
    struct df__agg_acc *c = &a->acc[k];
    if (scratch(a, m) != FR_OK)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory for a morsel of %lld rows",
                            (long long)m);
    switch (c->func) {
    case DF_AGG_COUNT_STAR:
        for (int64_t i = 0; i < m; i++)
            c->n[gids[i]]++;
        break;
    case DF_AGG_COUNT:
        for (int64_t i = 0; i < m; i++)
            c->n[gids[i]] += VALID(x, start + i);
        break;
    case DF_AGG_SUM:
    case DF_AGG_MEAN:
        update_sum(a, c, gids, x, start, m);
        break;
    case DF_AGG_MIN:
    case DF_AGG_MAX:
    case DF_AGG_FIRST:
        update_pick(a, c, gids, x, start, m);
        break;
    case DF_AGG_STDDEV:
        update_stddev(a, c, gids, x, start, m);
        break;
    case DF_AGG_CORR:
        update_corr(c, gids, x, y, start, m);
        break;
    case DF_AGG_MEDIAN:
    case DF_AGG_COUNT_DISTINCT:
        return update_values(a, c, gids, x, start, m, err);
    }
    return FR_OK;
}

/* ---- final-phase merges ------------------------------------------------- */

int df__agg_state_ncols(enum df_agg_func f)
{
    switch (f) {
    case DF_AGG_SUM:
        return 2; /* sum (an integer's low 64 bits), an integer's high 64 bits */
    case DF_AGG_MEAN:
        return 3; /* sum, n, high bits */
    case DF_AGG_STDDEV:
        return 3;
    case DF_AGG_CORR:
        return 6;
    default:
        return 1;
    }
}

/* Chan et al.: merges (nb, mean_b, m2_b, c_b) into group g's state. */
static void merge_moments(struct df__agg_acc *c, int64_t g, int64_t nb, const double *mb,
                          const double *m2b, const double *cb)
{
    double *s = df__mom_at(c, g), na = s[0], n = na + (double)nb;
    if (nb == 0)
        return;
    double f = na * (double)nb / n;
    int dims = c->func == DF_AGG_CORR ? 2 : 1;
    double delta[2];
    for (int j = 0; j < dims; j++) {
        delta[j] = mb[j] - s[1 + j];
        s[1 + j] += delta[j] * (double)nb / n;
        s[1 + dims + j] += m2b[j] + delta[j] * delta[j] * f;
    }
    if (dims == 2)
        s[5] += *cb + delta[0] * delta[1] * f;
    s[0] = n;
}

static int merge_values(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                        const struct df_column *blob, int64_t start, int64_t m,
                        struct fr_error *err)
{
    bool strings = c->func == DF_AGG_COUNT_DISTINCT && c->type == DF_TYPE_STRING;
    for (int64_t i = 0; i < m; i++) {
        int64_t len, pos = 0;
        const char *p = df_column_string(blob, start + i, &len);
        /* a state comes from a peer: its framing is checked, not trusted */
        if (!strings && len % (int64_t)sizeof(uint64_t) != 0)
            return fr_error_set(err, FR_EDATA,
                                "a partial %s state is %lld bytes, not a multiple of 8",
                                df_agg_func_name(c->func), (long long)len);
        while (pos < len) {
            uint64_t v = 0;
            uint32_t sn = 0;
            if (strings) {
                if (len - pos < (int64_t)sizeof(sn))
                    return fr_error_set(err, FR_EDATA,
                                        "a partial count_distinct state ends inside a length");
                memcpy(&sn, p + pos, sizeof(sn));
                pos += (int64_t)sizeof(sn);
                if ((int64_t)sn > len - pos)
                    return fr_error_set(err, FR_EDATA,
                                        "a partial count_distinct state holds a string of %lu "
                                        "bytes past its end",
                                        (unsigned long)sn);
            } else {
                memcpy(&v, p + pos, sizeof(v));
            }
            int rc =
                df__vlist_push(a, &c->vl, gids[i], v, strings ? p + pos : NULL, sn, strings, err);
            if (rc != FR_OK)
                return rc;
            pos += strings ? (int64_t)sn : (int64_t)sizeof(v);
        }
    }
    if (c->func == DF_AGG_COUNT_DISTINCT && c->vl.n >= c->vl.compact_at)
        return df__vlist_compact(a, &c->vl, strings, err);
    return FR_OK;
}

int df__agg_merge(struct df__agg *a, int k, const int64_t *gids, struct df_column *const *cols,
                  int64_t start, int64_t m, struct fr_error *err)
{
    struct df__agg_acc *c = &a->acc[k];
    switch (c->func) {
    case DF_AGG_COUNT_STAR:
    case DF_AGG_COUNT:
        for (int64_t i = 0; i < m; i++)
            c->n[gids[i]] += df_column_int64(cols[0], start + i);
        return FR_OK;
    case DF_AGG_SUM:
    case DF_AGG_MEAN:
        merge_sum(c, gids, cols, start, m);
        return FR_OK;
    case DF_AGG_STDDEV:
    case DF_AGG_CORR: {
        bool corr = c->func == DF_AGG_CORR;
        for (int64_t i = 0; i < m; i++) {
            int64_t r = start + i;
            double mb[2], m2b[2], cb = 0;
            for (int j = 0; j < (corr ? 2 : 1); j++) {
                mb[j] = df_column_float64(cols[1 + j], r);
                m2b[j] = df_column_float64(cols[(corr ? 3 : 2) + j], r);
            }
            if (corr)
                cb = df_column_float64(cols[5], r);
            /* a count comes from a peer: a negative one, or one whose sum
             * leaves a double's exact integers, is refused */
            int64_t nb = df_column_int64(cols[0], r);
            if (nb < 0 || nb > DF__MOM_MAX_N - (int64_t)df__mom_at(c, gids[i])[0])
                return fr_error_set(err, FR_EDATA, "a partial %s state counts %lld rows",
                                    df_agg_func_name(c->func), (long long)nb);
            merge_moments(c, gids[i], nb, mb, m2b, &cb);
        }
        return FR_OK;
    }
    case DF_AGG_MEDIAN:
        return df__median_merge(a, c, gids, cols[0], start, m, err);
    case DF_AGG_COUNT_DISTINCT:
        return merge_values(a, c, gids, cols[0], start, m, err);
    default:
        return df__agg_update(a, k, gids, cols[0], NULL, start, m, err);
    }
}
