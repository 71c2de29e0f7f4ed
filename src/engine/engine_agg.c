/* engine_agg: two-phase hash aggregation. The partial phase groups input
 * rows morsel by morsel (hash the keys of a morsel in a batch, then probe
 * with prefetch, then update each aggregate column-wise); the final phase
 * merges partial-state tables the same way. Group ids follow first
 * appearance, so output order is input order at no extra cost. */
#include "engine_ops_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool numeric(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64 || t == DF_TYPE_BOOL;
}

static int check_spec(const struct df_agg_spec *s, int k, df_type t, df_type t2,
                      struct fr_error *err)
{
    bool ok = true;
    switch (s->func) {
    case DF_AGG_SUM:
    case DF_AGG_MEAN:
    case DF_AGG_STDDEV:
    case DF_AGG_MEDIAN:
        ok = numeric(t);
        break;
    case DF_AGG_CORR:
        ok = numeric(t) && numeric(t2);
        break;
    default:
        break;
    }
    if (!ok)
        return fr_error_set(err, FR_EINVAL, "%s() of a %s value (aggregate %d) is not supported",
                            df_agg_func_name(s->func), df_type_name(t), k + 1);
    return FR_OK;
}

/* Checks column indices and argument types; fills types[k] per spec. */
static int check_specs(const struct df_table *in, const int *keys, int nkeys,
                       const struct df_agg_spec *specs, int nspecs, df_type *types,
                       struct fr_error *err)
{
    for (int j = 0; j < nkeys; j++)
        if (keys[j] < 0 || keys[j] >= in->ncols)
            return fr_error_set(err, FR_EINVAL, "group key %d is not a column", j + 1);
    for (int k = 0; k < nspecs; k++) {
        const struct df_agg_spec *s = &specs[k];
        bool star = s->func == DF_AGG_COUNT_STAR, corr = s->func == DF_AGG_CORR;
        if ((!star && (s->arg < 0 || s->arg >= in->ncols)) ||
            (corr && (s->arg2 < 0 || s->arg2 >= in->ncols)))
            return fr_error_set(err, FR_EINVAL, "aggregate %d reads no valid column", k + 1);
        types[k] = star ? DF_TYPE_INT64 : in->cols[s->arg]->type;
        int rc = check_spec(s, k, types[k], corr ? in->cols[s->arg2]->type : DF_TYPE_INT64, err);
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

/* A partial whose rows passed through ungrouped (and so may repeat a
 * group) names its first state column "_r..." instead of "__s..."; such
 * partials only come with at least one aggregate (a distinct passes no
 * rows through). */
#define PASS_MARK 'r'

bool df__agg_passed(const struct df_table *part, int nkeys)
{
    return part->ncols > nkeys && part->names[nkeys][0] == '_' &&
           part->names[nkeys][1] == PASS_MARK;
}

void df__agg_mark_passed(struct df_table *part, int nkeys)
{
    if (part->ncols > nkeys && part->names[nkeys][0] == '_')
        part->names[nkeys][1] = PASS_MARK;
}

/* Per-morsel scratch: key hashes and group ids. */
struct morsel_buf {
    uint64_t *hashes;
    int64_t *gids;
    int64_t rows;
};

static int morsel_buf_init(struct morsel_buf *mb, struct df_exec *ex, int64_t total,
                           struct fr_error *err)
{
    mb->rows = df__morsel_rows(ex);
    if (mb->rows > total)
        mb->rows = total > 0 ? total : 1;
    mb->hashes = fr_try_malloc(sizeof(uint64_t) * (size_t)mb->rows);
    mb->gids = fr_try_malloc(sizeof(int64_t) * (size_t)mb->rows);
    if (!mb->hashes || !mb->gids)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory for a morsel of %lld rows",
                            (long long)mb->rows);
    return ex ? df_exec_charge(ex, mb->rows * 16, err) : FR_OK;
}

static void morsel_buf_cleanup(struct morsel_buf *mb, struct df_exec *ex)
{
    if (ex && (mb->hashes || mb->gids))
        df_exec_charge(ex, -mb->rows * 16, NULL);
    free(mb->hashes);
    free(mb->gids);
}

/* Group ids of rows [start, start+m) of source src into mb->gids. */
static int group_morsel(struct df__gtab *gt, int src, const struct df_column *const *keys,
                        int nkeys, struct morsel_buf *mb, int64_t start, int64_t m,
                        struct fr_error *err)
{
    if (nkeys == 0) {
        memset(mb->gids, 0, sizeof(int64_t) * (size_t)m);
        return FR_OK;
    }
    df__hash_columns(keys, nkeys, start, m, mb->hashes);
    return df__gtab_insert(gt, src, NULL, start, m, mb->hashes, mb->gids, err);
}

/* Whether the first morsel's m rows, of which ngroups distinct keys, say
 * that grouping all n rows would shrink them less than PASS_SHRINK-fold.
 * Uniform keys drawn from G groups give G * (1 - exp(-m / G)) distinct
 * ones in m rows: pass when the morsel has more than n / PASS_SHRINK
 * groups would. (A morsel of 122880 rows from 1e5 groups has about 71e3
 * distinct keys, more than half its rows, yet 5e6 such rows shrink 50-fold
 * to 1e5 groups: passing them through would hash, copy and shuffle them all
 * again in the final phase.) */
#define PASS_SHRINK 4

bool df__agg_pass_pays(int64_t ngroups, int64_t m, int64_t n)
{
    double g = (double)n / PASS_SHRINK;
    if (g <= (double)m)
        return ngroups * 2 > m;
    return (double)ngroups > g * -expm1(-(double)m / g);
}

/* One partial's grouping: one table over every key, or (two or three keys)
 * one per key with the ids packed (engine_agg_mkey.c). */
struct grouping {
    struct df__gtab gt;
    struct df__mkey mk;
    struct df__imap im; /* one int64 key of a narrow range: a direct map before gt */
    bool multi;
    bool single_int; /* one int64 key without nulls: the map is tried on the first morsel */
};

static struct df__gtab *groups_of(struct grouping *gr)
{
    return gr->multi ? &gr->mk.packed : &gr->gt;
}

static void grouping_cleanup(struct grouping *gr)
{
    df__gtab_cleanup(&gr->gt);
    df__mkey_cleanup(&gr->mk);
    df__imap_cleanup(&gr->im);
}

/* Runs every morsel of `in` through the grouping and the aggregates. Sets
 * *pass when the rows pass through as their own groups. */
static int accumulate(const struct df_table *in, const struct df_column *const *kcols, int nkeys,
                      const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                      struct grouping *gr, struct df__agg *agg, struct morsel_buf *mb, bool *pass,
                      struct fr_error *err)
{
    int rc = df__agg_reserve(agg, 1, err);
    *pass = false;
    for (int64_t start = 0; rc == FR_OK && start < in->nrows; start += mb->rows) {
        int64_t m = in->nrows - start < mb->rows ? in->nrows - start : mb->rows;
        rc = df_exec_check_cancel(ex, err);
        if (rc == FR_OK && *pass) {
            for (int64_t i = 0; i < m; i++)
                mb->gids[i] = start + i;
        } else if (rc == FR_OK) {
            bool outgrown = false;
            if (gr->multi)
                rc = df__mkey_group(&gr->mk, start, m, mb->hashes, mb->gids, &outgrown, err);
            if (rc == FR_OK && outgrown) { /* a key of many values: one table from here on */
                rc = df__mkey_to_table(&gr->mk, &gr->gt, err);
                df__mkey_cleanup(&gr->mk);
                gr->multi = false;
            }
            if (rc == FR_OK && !gr->multi && gr->single_int && start == 0)
                rc = df__imap_init(&gr->im, kcols[0], 0, m, mb->rows, ex, err);
            if (rc == FR_OK && !gr->multi && gr->im.map)
                rc =
                    df__imap_group(&gr->im, &gr->gt, kcols[0], start, m, mb->hashes, mb->gids, err);
            else if (rc == FR_OK && !gr->multi)
                rc = group_morsel(&gr->gt, 0, kcols, nkeys, mb, start, m, err);
        }
        if (rc == FR_OK && start == 0 && nkeys > 0 && nspecs > 0 && m < in->nrows) {
            /* the first morsel tells how much grouping will shrink the
             * data: hardly at all (most rows their own group), and the
             * rows pass through as their own partial states (the final
             * phase groups them; no hashing here, and no copy of the
             * keys). (No estimate from one morsel sizes the table: keys
             * that saturate, say 1e4 groups seen in every morsel, would
             * get a table far beyond the cache.) */
            if (df__agg_pass_pays(groups_of(gr)->ngroups, m, in->nrows)) {
                *pass = true;
                grouping_cleanup(gr);
                rc = df__agg_reserve(agg, in->nrows, err);
                for (int64_t i = 0; i < m; i++)
                    mb->gids[i] = i;
            }
        }
        if (rc == FR_OK)
            rc = df__agg_reserve(agg, *pass ? in->nrows : nkeys ? groups_of(gr)->ngroups : 1, err);
        for (int k = 0; rc == FR_OK && k < nspecs; k++) {
            const struct df_agg_spec *s = &specs[k];
            rc = df__agg_update(agg, k, mb->gids, s->arg >= 0 ? in->cols[s->arg] : NULL,
                                s->arg2 >= 0 ? in->cols[s->arg2] : NULL, start, m, err);
        }
    }
    return rc;
}

int df_agg_partial(const struct df_table *in, const int *keys, int nkeys,
                   const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                   struct df_table **out, struct fr_error *err)
{
    int rc = FR_EINVAL;
    df_type *types = fr_xcalloc((size_t)(nspecs + nkeys + 1), sizeof(df_type));
    const struct df_column **kcols = fr_xcalloc((size_t)(nkeys + 1), sizeof(*kcols));
    struct grouping gr;
    struct df__agg agg;
    struct morsel_buf mb = {0};
    struct df_table *res = NULL;
    *out = NULL;
    memset(&agg, 0, sizeof(agg)); /* safe to clean up before init */
    memset(&gr, 0, sizeof(gr));
    rc = check_specs(in, keys, nkeys, specs, nspecs, types, err);
    if (rc != FR_OK)
        goto out;
    df__agg_init(&agg, specs, nspecs, types, ex);
    agg.rows_hint = in->nrows;
    for (int j = 0; j < nkeys; j++) {
        kcols[j] = in->cols[keys[j]];
        types[nspecs + j] = kcols[j]->type;
    }
    df__gtab_init(&gr.gt, types + nspecs, nkeys, true, ex);
    df__gtab_add_source(&gr.gt, kcols);
    rc = morsel_buf_init(&mb, ex, in->nrows, err);
    gr.multi = rc == FR_OK && df__mkey_suits(nkeys, in->nrows);
    if (gr.multi)
        rc = df__mkey_init(&gr.mk, kcols, nkeys, mb.rows, ex, err);
    gr.single_int = nkeys == 1 && df__imap_suits(kcols[0]);
    bool pass = false;
    if (rc == FR_OK)
        rc = accumulate(in, kcols, nkeys, specs, nspecs, ex, &gr, &agg, &mb, &pass, err);
    if (rc != FR_OK)
        goto out;
    struct df__gtab *gt = groups_of(&gr);
    int64_t ngroups = pass ? in->nrows : nkeys ? gt->ngroups : 1;
    res = df_table_new();
    for (int j = 0; j < nkeys; j++)
        df_table_add(res, in->names[keys[j]],
                     pass ? (kcols[j]->length == in->nrows
                                 ? df_column_ref((struct df_column *)kcols[j])
                                 : df_column_slice(kcols[j], 0, in->nrows))
                          : df_column_take(kcols[j], gt->rep_row, ngroups));
    rc = df__agg_emit_partial(&agg, ngroups, res, err);
    if (rc != FR_OK)
        goto out;
    if (pass) /* the mark of rows that may repeat a group (see df_agg_final) */
        df__agg_mark_passed(res, nkeys);
    res->nrows = ngroups;
    *out = res;
    res = NULL;
out:
    df_table_free(res);
    morsel_buf_cleanup(&mb, ex);
    df__agg_cleanup(&agg);
    grouping_cleanup(&gr);
    free(types);
    free((void *)kcols);
    return rc;
}

/* Checks that every partial has the keys then the state columns expected. */
/* The type of state column j of an aggregate over `arg`, as
 * df__agg_emit_partial makes it. */
static df_type state_type(enum df_agg_func f, df_type arg, int j)
{
    switch (f) {
    case DF_AGG_SUM:
    case DF_AGG_MEAN:
        return j == 0 && arg == DF_TYPE_FLOAT64 ? DF_TYPE_FLOAT64 : DF_TYPE_INT64;
    case DF_AGG_MIN:
    case DF_AGG_MAX:
    case DF_AGG_FIRST:
        return arg;
    case DF_AGG_STDDEV:
    case DF_AGG_CORR:
        return j == 0 ? DF_TYPE_INT64 : DF_TYPE_FLOAT64;
    case DF_AGG_MEDIAN:
    case DF_AGG_COUNT_DISTINCT:
        return DF_TYPE_STRING; /* packed values */
    default:
        return DF_TYPE_INT64; /* counts */
    }
}

/* Partials may come from elsewhere (a task spec names its inputs): their
 * state columns must have the types the merge reads them as. */
static int check_states(const struct df_table *p, int nkeys, const struct df_agg_spec *specs,
                        int nspecs, const df_type *arg_types, struct fr_error *err)
{
    int col = nkeys;
    for (int k = 0; k < nspecs; k++) {
        for (int j = 0; j < df__agg_state_ncols(specs[k].func); j++, col++) {
            df_type want = state_type(specs[k].func, arg_types[k], j);
            if (p->cols[col]->type != want)
                return fr_error_set(
                    err, FR_EINVAL, "partial aggregate column '%s' is %s where %s was expected",
                    p->names[col], df_type_name(p->cols[col]->type), df_type_name(want));
        }
    }
    return FR_OK;
}

static int check_partials(struct df_table *const *partials, int nparts, int nkeys,
                          const struct df_agg_spec *specs, int nspecs, const df_type *arg_types,
                          struct fr_error *err)
{
    int ncols = nkeys;
    for (int k = 0; k < nspecs; k++)
        ncols += df__agg_state_ncols(specs[k].func);
    if (nparts == 0 && nkeys > 0)
        return fr_error_set(err, FR_EINVAL, "no partial results to merge");
    for (int p = 0; p < nparts; p++) {
        if (partials[p]->ncols != ncols)
            return fr_error_set(err, FR_EINVAL,
                                "partial aggregate %d has %d columns where %d were expected", p + 1,
                                partials[p]->ncols, ncols);
        for (int j = 0; j < ncols; j++)
            if (partials[p]->cols[j]->type != partials[0]->cols[j]->type)
                return fr_error_set(err, FR_EINVAL,
                                    "partial aggregates disagree on the type of column '%s'",
                                    partials[0]->names[j]);
    }
    return nparts > 0 ? check_states(partials[0], nkeys, specs, nspecs, arg_types, err) : FR_OK;
}

/* Gathers row rows[g] of column j of partial src[g] (g < n) into one new
 * column; the sources come in at most 64 runs (see final_keys). */
static struct df_column *take_runs(struct df_table *const *partials, int j, const int32_t *src,
                                   const int64_t *rows, int64_t n)
{
    struct df_column *parts[64];
    int np = 0;
    for (int64_t g = 0; g < n && np < 64;) {
        int64_t e = g;
        while (e < n && src[e] == src[g])
            e++;
        parts[np++] = df_column_take(partials[src[g]]->cols[j], rows + g, e - g);
        g = e;
    }
    if (np == 1)
        return parts[0];
    df_type type = partials[0]->cols[j]->type;
    size_t w = df_type_width(type);
    int64_t bytes = 0, nulls = 0;
    bool oom = false;
    for (int i = 0; i < np; i++) {
        oom |= !df_column_ok(parts[i]);
        nulls += parts[i]->null_count;
        if (type == DF_TYPE_STRING)
            bytes += parts[i]->data_len;
    }
    struct df_column *out = oom ? NULL : df__column_sized(type, n, bytes, nulls > 0);
    if (!out) {
        out = df_column_new(type, 0);
        oom = true;
    }
    if (oom) {
        out->oom = true;
    } else if (n > 0) {
        int64_t at = 0, pos = 0;
        if (type == DF_TYPE_STRING)
            out->offsets[0] = 0;
        for (int i = 0; i < np; i++) {
            const struct df_column *c = parts[i];
            int64_t len = c->length;
            if (type == DF_TYPE_STRING) {
                if (c->data_len)
                    memcpy(out->data + pos, c->data, (size_t)c->data_len);
                for (int64_t r = 0; r < len; r++)
                    out->offsets[at + r + 1] = pos + c->offsets[r + 1];
                pos += c->data_len;
            } else if (len) {
                memcpy((char *)out->values + w * (size_t)at, c->values, w * (size_t)len);
            }
            for (int64_t r = 0; nulls && r < len; r++)
                if (df_column_is_valid(c, r))
                    out->validity[(at + r) >> 3] |= (uint8_t)(1u << ((at + r) & 7));
            at += len;
        }
        if (type == DF_TYPE_STRING)
            out->data_len = pos;
        out->null_count = nulls;
        out->capacity = n;
        out->length = n;
    }
    for (int i = 0; i < np; i++)
        df_column_unref(parts[i]);
    return out;
}

/* Key columns of the final result: each group's representative row.
 * Partials merge one after the other, so a group's source (the partial
 * that first had it) never decreases with its id: the sources form runs
 * of ids, each gathered from its partial in one take. */
static void final_keys(const struct df__gtab *gt, struct df_table *const *partials, int nkeys,
                       struct df_table *res)
{
    int runs = 1;
    for (int64_t g = 1; g < gt->ngroups; g++)
        runs += gt->rep_src[g] != gt->rep_src[g - 1];
    for (int j = 0; j < nkeys; j++) {
        if (runs <= 64) {
            df_table_add(res, partials[0]->names[j],
                         gt->ngroups ? take_runs(partials, j, gt->rep_src, gt->rep_row, gt->ngroups)
                                     : df_column_take(partials[0]->cols[j], gt->rep_row, 0));
            continue;
        }
        struct df_column *c = df_column_new(partials[0]->cols[j]->type, gt->ngroups);
        for (int64_t g = 0; g < gt->ngroups; g++)
            df_column_append_from(c, partials[gt->rep_src[g]]->cols[j], gt->rep_row[g]);
        df_table_add(res, partials[0]->names[j], c);
    }
}

/* distinct: part is the only partial, so its rows are its groups (a
 * partial holds one row per group) and row i is group i. */
static int merge_partial(struct df__gtab *gt, struct df__agg *agg, const struct df_table *part,
                         int nkeys, const struct df_agg_spec *specs, int nspecs, bool distinct,
                         struct morsel_buf *mb, struct df_exec *ex, struct fr_error *err)
{
    int src = nkeys && !distinct
                  ? df__gtab_add_source(gt, (const struct df_column *const *)part->cols)
                  : 0;
    int rc = FR_OK;
    for (int64_t start = 0; rc == FR_OK && start < part->nrows; start += mb->rows) {
        int64_t m = part->nrows - start < mb->rows ? part->nrows - start : mb->rows;
        rc = df_exec_check_cancel(ex, err);
        if (rc == FR_OK && distinct) {
            for (int64_t i = 0; i < m; i++)
                mb->gids[i] = start + i;
            rc = df__agg_reserve(agg, start + m, err);
        } else if (rc == FR_OK) {
            rc = group_morsel(gt, src, (const struct df_column *const *)part->cols, nkeys, mb,
                              start, m, err);
        }
        if (rc == FR_OK && !distinct)
            rc = df__agg_reserve(agg, nkeys ? gt->ngroups : 1, err);
        int col = nkeys;
        for (int k = 0; rc == FR_OK && k < nspecs; k++) {
            rc = df__agg_merge(agg, k, mb->gids, part->cols + col, start, m, err);
            col += df__agg_state_ncols(specs[k].func);
        }
    }
    return rc;
}

int df_agg_final(struct df_table *const *partials, int nparts, int nkeys,
                 const struct df_agg_spec *specs, int nspecs, const df_type *arg_types,
                 const char *const *names, struct df_exec *ex, struct df_table **out,
                 struct fr_error *err)
{
    int rc = FR_EINVAL;
    df_type *ktypes = fr_xcalloc((size_t)(nkeys + 1), sizeof(df_type));
    struct df__gtab gt;
    struct df__agg agg;
    struct morsel_buf mb = {0};
    struct df_table *res = NULL;
    int64_t maxrows = 1;
    *out = NULL;
    df__agg_init(&agg, specs, nspecs, arg_types, ex);
    df__gtab_init(&gt, ktypes, 0, false, ex);
    rc = check_partials(partials, nparts, nkeys, specs, nspecs, arg_types, err);
    if (rc != FR_OK)
        goto out;
    for (int j = 0; j < nkeys; j++)
        ktypes[j] = partials[0]->cols[j]->type;
    df__gtab_init(&gt, ktypes, nkeys, true, ex);
    for (int p = 0; p < nparts; p++)
        maxrows = partials[p]->nrows > maxrows ? partials[p]->nrows : maxrows;
    rc = morsel_buf_init(&mb, ex, maxrows, err);
    if (rc == FR_OK)
        rc = df__agg_reserve(&agg, 1, err);
    bool distinct = nparts == 1 && nkeys > 0 && !df__agg_passed(partials[0], nkeys);
    if (rc == FR_OK && nkeys > 0 && !distinct) {
        /* the groups are at most the partials' rows (and at least the
         * largest one's, unless it passed through): room for them up
         * front, so no large array grows while other tasks run */
        int64_t rows = 0;
        bool passed = false;
        for (int p = 0; p < nparts; p++) {
            rows += partials[p]->nrows;
            passed |= df__agg_passed(partials[p], nkeys);
        }
        /* many partials likely share groups, unless their rows passed
         * through (grouping shrank them less than PASS_SHRINK-fold, so
         * the groups are near their rows): room for all of them then, or
         * the table and states would grow, rehash and copy log2(rows /
         * maxrows) times on fresh pages */
        if (!passed && rows > 2 * maxrows)
            rows = 2 * maxrows;
        rc = df__gtab_reserve(&gt, rows, err);
        if (rc == FR_OK)
            rc = df__agg_reserve(&agg, rows, err);
    }
    for (int p = 0; rc == FR_OK && p < nparts; p++)
        rc = merge_partial(&gt, &agg, partials[p], nkeys, specs, nspecs, distinct, &mb, ex, err);
    if (rc != FR_OK)
        goto out;
    int64_t ngroups = distinct ? partials[0]->nrows : nkeys ? gt.ngroups : 1;
    res = df_table_new();
    if (distinct) { /* the partial's keys, shared */
        for (int j = 0; j < nkeys; j++)
            df_table_add(res, partials[0]->names[j], df_column_ref(partials[0]->cols[j]));
    } else {
        final_keys(&gt, partials, nkeys, res);
    }
    rc = df__agg_emit_final(&agg, ngroups, names, res, err);
    if (rc != FR_OK)
        goto out;
    res->nrows = ngroups;
    *out = res;
    res = NULL;
out:
    df_table_free(res);
    morsel_buf_cleanup(&mb, ex);
    df__agg_cleanup(&agg);
    df__gtab_cleanup(&gt);
    free(ktypes);
    return rc;
}
