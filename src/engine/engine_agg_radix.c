/* engine_agg_radix: the partial phase of an aggregation whose output is
 * split into buckets, with the rows split first when they hold many groups.
 * A task of millions of rows over ~1e6 groups misses the cache on every
 * row: the hash table, the group keys and the states are tens of MB. Split
 * by the keys' hash into parts of about RADIX_GROUPS groups (one pass per
 * column), each part groups alone in a table that stays in the cache. A
 * part's rows fall in one bucket (parts are the buckets cut finer by the
 * same hash bits), so a bucket is its parts' partials one after another:
 * the split of the partial that followed the grouping is saved too. */
#include "engine_ops_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RADIX_SAMPLE 65536 /* rows whose distinct keys estimate the groups */
#define RADIX_GROUPS 16384 /* groups per part: its table ~1 MiB */
/* fewer expected groups: one table does. The split copies the task's rows
 * into fresh memory, and a first touch of fresh pages is slow (the kernel
 * zeroes them: half a first run's time in a profile at 1e7). At 1e5 groups
 * (1e7 rows) one table's misses cost less than that copy unless the
 * process already holds freed memory to reuse; at 1e6 groups (1e8 rows)
 * the split runs q3 in 2.9-3.2 s against 4.6 s once memory is warm. */
#define RADIX_MIN_GROUPS 524288
#define RADIX_MAX_PARTS 256 /* write streams of the split */

/* Distinct values among h[0..m) (64-bit key hashes: equal keys, equal
 * hashes; distinct keys collide about never). */
static int64_t distinct_hashes(const uint64_t *h, int64_t m)
{
    uint64_t cap = 1;
    while (cap < (uint64_t)m * 2)
        cap <<= 1;
    uint64_t *set = fr_xcalloc(cap, sizeof(uint64_t));
    int64_t d = 0;
    for (int64_t i = 0; i < m; i++) {
        uint64_t v = h[i] | 1, j = (h[i] >> 17) & (cap - 1); /* 0 marks a free slot */
        while (set[j] && set[j] != v)
            j = (j + 1) & (cap - 1);
        d += set[j] == 0;
        set[j] = v;
    }
    free(set);
    return d;
}

/* The groups expected among n rows whose first m hold d distinct keys: the
 * G of uniform keys that give d = G (1 - exp(-m / G)), then G (1 - exp(-n
 * / G)). Every sampled key distinct: n. */
static double expected_groups(int64_t d, int64_t m, int64_t n)
{
    if (d >= m)
        return (double)n;
    double lo = (double)d, hi = (double)d;
    while (hi * -expm1(-(double)m / hi) < (double)d && hi < 1e18)
        hi *= 2;
    for (int i = 0; i < 60; i++) {
        double g = (lo + hi) / 2;
        if (g * -expm1(-(double)m / g) < (double)d)
            lo = g;
        else
            hi = g;
    }
    return hi * -expm1(-(double)n / hi);
}

int df__agg_radix_parts(const struct df_table *in, const int *keys, int nkeys, int nbuckets,
                        double min_groups, struct df_exec *ex)
{
    int64_t n = in->nrows, m = n < RADIX_SAMPLE ? n : RADIX_SAMPLE;
    /* n rows hold at most n groups: fewer than min_groups rows need no sample */
    if (nkeys == 0 || nbuckets < 1 || n < 4 * RADIX_SAMPLE || (double)n < min_groups ||
        (ex && ex->opts && ex->opts->maintain_order))
        return 0;
    uint64_t *h = fr_try_malloc(sizeof(uint64_t) * (size_t)m);
    const struct df_column **cols = fr_xcalloc((size_t)nkeys, sizeof(*cols));
    if (!h) {
        free((void *)cols);
        return 0;
    }
    for (int k = 0; k < nkeys; k++)
        cols[k] = in->cols[keys[k]];
    df__hash_columns(cols, nkeys, 0, m, h);
    int64_t d = distinct_hashes(h, m);
    free(h);
    free((void *)cols);
    double g = expected_groups(d, m, n);
    if (df__agg_pass_pays(d, m, n) || g < min_groups)
        return 0;
    double k = ceil(g / RADIX_GROUPS / nbuckets);
    int most = RADIX_MAX_PARTS / nbuckets > 1 ? RADIX_MAX_PARTS / nbuckets : 1;
    return k < most ? (int)k : most;
}

static int charge(struct df_exec *ex, int64_t bytes, struct fr_error *err)
{
    return ex ? df_exec_charge(ex, bytes, err) : FR_OK;
}

/* Splits `in` into nbuckets * k parts by the keys' hash and groups each; a
 * bucket's parts are concatenated into outs[bucket]. The split copies the
 * rows: when the copy does not fit (the task's memory limit, or out of
 * memory) *declined is set, nothing is left charged and the caller groups
 * in one table, whose partial is far smaller. */
static int radix_partial(const struct df_table *in, const int *keys, int nkeys,
                         const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                         int nbuckets, int k, struct df_table **outs, bool *declined,
                         struct fr_error *err)
{
    int np = nbuckets * k;
    struct df_table **sub = fr_xcalloc((size_t)np, sizeof(*sub));
    struct df_table **part = fr_xcalloc((size_t)np, sizeof(*part));
    int64_t held = df_table_bytes(in); /* the copy, charged before it is made */
    struct fr_error quiet;
    fr_error_init(&quiet);
    *declined = charge(ex, held, &quiet) != FR_OK ||
                df_hash_partition(in, keys, nkeys, np, sub, &quiet) != FR_OK;
    int rc = FR_OK;
    bool passed = false;
    for (int p = 0; !*declined && rc == FR_OK && p < np; p++) {
        rc = df_agg_partial(sub[p], keys, nkeys, specs, nspecs, ex, &part[p], err);
        bool refs = rc == FR_OK && df__agg_passed(part[p], nkeys);
        int64_t b = df_table_bytes(sub[p]);
        df_table_free(sub[p]); /* its rows are in its partial now */
        sub[p] = NULL;
        if (!refs && b <= held) { /* a passed-through partial holds the part's columns */
            charge(ex, -b, NULL);
            held -= b;
        }
        passed |= refs;
    }
    for (int p = 0; !*declined && rc == FR_OK && passed && p < np; p++)
        df__agg_mark_passed(part[p], nkeys); /* one schema for the concatenation */
    for (int b = 0; !*declined && rc == FR_OK && b < nbuckets; b++) {
        if (k == 1) {
            outs[b] = part[b];
            part[b] = NULL;
        } else {
            rc = df_table_concat(part + (size_t)b * (size_t)k, k, &outs[b], err);
        }
    }
    if (rc != FR_OK)
        for (int b = 0; b < nbuckets; b++) {
            df_table_free(outs[b]);
            outs[b] = NULL;
        }
    charge(ex, -held, NULL); /* a failed charge was counted too */
    for (int p = 0; p < np; p++) {
        df_table_free(sub[p]);
        df_table_free(part[p]);
    }
    free(sub);
    free(part);
    return rc;
}

int df__agg_partial_split_at(const struct df_table *in, const int *keys, int nkeys,
                             const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                             int nbuckets, double min_groups, struct df_table **outs,
                             struct fr_error *err)
{
    for (int b = 0; b < nbuckets; b++)
        outs[b] = NULL;
    int k = df__agg_radix_parts(in, keys, nkeys, nbuckets, min_groups, ex);
    bool declined = true;
    if (k > 0) {
        int rc =
            radix_partial(in, keys, nkeys, specs, nspecs, ex, nbuckets, k, outs, &declined, err);
        if (!declined)
            return rc;
    }
    struct df_table *partial = NULL;
    int rc = df_agg_partial(in, keys, nkeys, specs, nspecs, ex, &partial, err);
    if (rc != FR_OK || nbuckets == 1) {
        outs[0] = partial;
        return rc;
    }
    int *pk = fr_xcalloc((size_t)nkeys + 1, sizeof(int)); /* the partial's keys come first */
    for (int j = 0; j < nkeys; j++)
        pk[j] = j;
    rc = df_hash_partition(partial, pk, nkeys, nbuckets, outs, err);
    free(pk);
    df_table_free(partial);
    return rc;
}

int df_agg_partial_split(const struct df_table *in, const int *keys, int nkeys,
                         const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                         int nbuckets, struct df_table **outs, struct fr_error *err)
{
    return df__agg_partial_split_at(in, keys, nkeys, specs, nspecs, ex, nbuckets, RADIX_MIN_GROUPS,
                                    outs, err);
}
