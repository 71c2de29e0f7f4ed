/* engine_join: hash join of two tables for every `how`. The hash table is
 * built on the smaller input (distinct keys as groups, rows chained per
 * group in input order); the other input probes it morsel by morsel. The
 * result is a pair of row selections (left row, right row; -1 for none)
 * gathered into the output columns at the end. */
#include "engine_ops_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int df_join_how_parse(const char *s, enum df_join_how *out)
{
    static const struct {
        const char *name;
        enum df_join_how how;
    } hows[] = {{"inner", DF_JOIN_INNER}, {"left", DF_JOIN_LEFT},  {"right", DF_JOIN_RIGHT},
                {"outer", DF_JOIN_OUTER}, {"full", DF_JOIN_OUTER}, {"semi", DF_JOIN_SEMI},
                {"anti", DF_JOIN_ANTI}};
    if (!s) /* a spec without "how" */
        return FR_EINVAL;
    for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
        if (strcasecmp(s, hows[i].name) == 0) {
            *out = hows[i].how;
            return FR_OK;
        }
    }
    return FR_EINVAL;
}

/* Row pairs of the result; charged to ex as they grow. */
struct pairs {
    int64_t *l, *r;
    int64_t n, cap;
};

struct join {
    const struct df_table *build, *probe;
    bool build_left;
    enum df_join_how how;
    const struct df_column **bcols, **pcols;
    struct df__gtab gt;
    bool chained;                /* some key repeats: rows chained per group */
    int64_t *head, *tail, *next; /* chains of build rows per group (chained) */
    int64_t kept;                /* build rows in the table (no null key) */
    bool *matched;               /* per build row; NULL when `how` needs none */
    struct pairs out;            /* matched (and, built left, unmatched-left) pairs */
    struct pairs tail_pairs;     /* unmatched right rows, emitted last */
    struct df_exec *ex;
    int64_t charged;
};

static int charge(struct join *j, int64_t bytes, struct fr_error *err)
{
    j->charged += bytes;
    return j->ex ? df_exec_charge(j->ex, bytes, err) : FR_OK;
}

/* Grows p to hold cap pairs; big buffers come from huge pages (first touch
 * of 4 KiB pages dominates large joins otherwise). */
static int pairs_grow(struct join *j, struct pairs *p, int64_t cap, struct fr_error *err)
{
    int rc = charge(j, (cap - p->cap) * 16, err);
    if (rc != FR_OK)
        return rc;
    int64_t *nl = df__alloc_big(sizeof(int64_t) * (size_t)cap);
    int64_t *nr = df__alloc_big(sizeof(int64_t) * (size_t)cap);
    if (!nl || !nr) {
        free(nl);
        free(nr);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory: a join result of %lld rows",
                            (long long)cap);
    }
    if (p->n) {
        memcpy(nl, p->l, sizeof(int64_t) * (size_t)p->n);
        memcpy(nr, p->r, sizeof(int64_t) * (size_t)p->n);
    }
    fr_free_big(p->l); /* big ones kept for the next (common_mem.c) */
    fr_free_big(p->r);
    p->l = nl;
    p->r = nr;
    p->cap = cap;
    return FR_OK;
}

static inline int pairs_push(struct join *j, struct pairs *p, int64_t l, int64_t r,
                             struct fr_error *err)
{
    if (p->n == p->cap) {
        int rc = pairs_grow(j, p, p->cap ? p->cap * 2 : 1024, err);
        if (rc != FR_OK)
            return rc;
    }
    p->l[p->n] = l;
    p->r[p->n] = r;
    p->n++;
    return FR_OK;
}

static bool numeric_type(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64;
}

static int check_keys(const struct df_table *left, const struct df_table *right, const int *lk,
                      const int *rk, int nkeys, bool *same_types, struct fr_error *err)
{
    *same_types = true;
    if (nkeys < 1)
        return fr_error_set(err, FR_EINVAL, "a join needs at least one key column");
    for (int k = 0; k < nkeys; k++) {
        if (lk[k] < 0 || lk[k] >= left->ncols || rk[k] < 0 || rk[k] >= right->ncols)
            return fr_error_set(err, FR_EINVAL, "join key %d is not a column", k + 1);
        df_type lt = left->cols[lk[k]]->type, rt = right->cols[rk[k]]->type;
        if (lt != rt && !(numeric_type(lt) && numeric_type(rt))) {
            fr_error_set(err, FR_EINVAL,
                         "cannot join left column '%s' (%s) with right column '%s' (%s): key "
                         "types must match (int64 and float64 may be mixed)",
                         left->names[lk[k]], df_type_name(lt), right->names[rk[k]],
                         df_type_name(rt));
            if (err)
                snprintf(err->field, sizeof(err->field), "%s", left->names[lk[k]]);
            return FR_EINVAL;
        }
        *same_types &= lt == rt;
    }
    return FR_OK;
}

/* Turns on chaining when the first key repeats: until then every group is
 * one build row, its representative (gt.rep_row), and no chain is kept. */
static int start_chains(struct join *j, struct fr_error *err)
{
    int64_t n = j->build->nrows;
    int rc = charge(j, n * 24, err);
    if (rc != FR_OK)
        return rc;
    j->head = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
    j->tail = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
    j->next = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
    if (!j->head || !j->tail || !j->next)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory building a join of %lld rows",
                            (long long)n);
    for (int64_t g = 0; g < j->gt.ngroups; g++) {
        int64_t r = j->gt.rep_row[g];
        j->head[g] = j->tail[g] = r;
        j->next[r] = -1;
    }
    j->chained = true;
    return FR_OK;
}

/* Hashes and groups the build rows that have no null key; with repeated
 * keys, chains rows per group in input order. */
static int build_side(struct join *j, int nkeys, int64_t morsel, bool need_matched,
                      struct fr_error *err)
{
    int64_t n = j->build->nrows;
    if (morsel > n) /* a morsel's buffers for the rows there are */
        morsel = n > 0 ? n : 1;
    uint64_t *h = fr_try_malloc(sizeof(uint64_t) * (size_t)morsel);
    int64_t *rows = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    int64_t *gids = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    int rc = charge(j, n + morsel * 24, err);
    if (rc != FR_OK)
        goto out;
    j->matched = need_matched ? calloc((size_t)n + 1, 1) : NULL;
    if ((need_matched && !j->matched) || !h || !rows || !gids) {
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory building a join of %lld rows",
                          (long long)n);
        goto out;
    }
    for (int64_t start = 0; rc == FR_OK && start < n; start += morsel) {
        int64_t m = n - start < morsel ? n - start : morsel, kept = 0;
        rc = df_exec_check_cancel(j->ex, err);
        df__hash_columns(j->bcols, nkeys, start, m, h);
        for (int64_t i = 0; i < m; i++)
            if (!df__keys_have_null(j->bcols, nkeys, start + i)) {
                rows[kept] = start + i;
                h[kept++] = h[i];
            }
        if (rc == FR_OK)
            rc = df__gtab_insert(&j->gt, 0, rows, 0, kept, h, gids, err);
        if (rc == FR_OK && start == 0 && m < n && j->gt.ngroups * 10 > kept * 9)
            rc = df__gtab_reserve(&j->gt, n, err); /* mostly distinct keys: no regrowth */
        j->kept += kept;
        if (rc == FR_OK && !j->chained && j->gt.ngroups < j->kept)
            rc = start_chains(j, err); /* this morsel's rows are chained below */
        for (int64_t i = 0; rc == FR_OK && j->chained && i < kept; i++) {
            int64_t g = gids[i], r = rows[i];
            j->next[r] = -1;
            if (j->gt.rep_row[g] == r) { /* its group's first row */
                j->head[g] = r;
            } else {
                j->next[j->tail[g]] = r;
            }
            j->tail[g] = r;
        }
    }
out:
    free(h);
    free(rows);
    free(gids);
    return rc;
}

/* What one probe row contributes, given its group g (-1: no match). */
static int probe_row(struct join *j, int64_t p, int64_t g, struct fr_error *err)
{
    enum df_join_how how = j->how;
    int rc = FR_OK;
    if (!j->build_left) { /* probe = left: emit in left order */
        if (g < 0) {
            if (how == DF_JOIN_LEFT || how == DF_JOIN_OUTER || how == DF_JOIN_ANTI)
                rc = pairs_push(j, &j->out, p, -1, err);
            return rc;
        }
        if (how == DF_JOIN_SEMI)
            return pairs_push(j, &j->out, p, -1, err);
        if (how == DF_JOIN_ANTI)
            return FR_OK;
        if (!j->chained) {
            int64_t b = j->gt.rep_row[g];
            if (j->matched)
                j->matched[b] = true;
            return pairs_push(j, &j->out, p, b, err);
        }
        for (int64_t b = j->head[g]; rc == FR_OK && b >= 0; b = j->next[b]) {
            if (j->matched)
                j->matched[b] = true;
            rc = pairs_push(j, &j->out, p, b, err);
        }
        return rc;
    }
    /* probe = right */
    if (g < 0) {
        if (how == DF_JOIN_RIGHT || how == DF_JOIN_OUTER)
            rc = pairs_push(j, &j->tail_pairs, -1, p, err);
        return rc;
    }
    for (int64_t b = j->chained ? j->head[g] : j->gt.rep_row[g]; rc == FR_OK && b >= 0;
         b = j->chained ? j->next[b] : -1) {
        if (j->matched)
            j->matched[b] = true;
        if (how != DF_JOIN_SEMI && how != DF_JOIN_ANTI)
            rc = pairs_push(j, &j->out, b, p, err);
    }
    return rc;
}

static int probe_side(struct join *j, int nkeys, int64_t morsel, struct fr_error *err)
{
    int64_t n = j->probe->nrows;
    if (morsel > n)
        morsel = n > 0 ? n : 1;
    uint64_t *h = fr_try_malloc(sizeof(uint64_t) * (size_t)morsel);
    int64_t *gids = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    int rc = h && gids ? FR_OK : fr_error_set(err, FR_ETOOLARGE, "out of memory probing a join");
    for (int64_t start = 0; rc == FR_OK && start < n; start += morsel) {
        int64_t m = n - start < morsel ? n - start : morsel;
        rc = df_exec_check_cancel(j->ex, err);
        df__hash_columns(j->pcols, nkeys, start, m, h);
        df__gtab_lookup(&j->gt, 1, NULL, start, m, h, gids);
        /* a group's first build row (and its matched flag) is a random
         * load: fetched some rows ahead */
        const int64_t *first = j->chained ? j->head : j->gt.rep_row;
        for (int64_t i = 0; rc == FR_OK && i < m; i++) {
            if (i + 16 < m && gids[i + 16] >= 0)
                __builtin_prefetch(&first[gids[i + 16]]);
            if (j->matched && i + 8 < m && gids[i + 8] >= 0)
                __builtin_prefetch(&j->matched[first[gids[i + 8]]]);
            rc = probe_row(j, start + i, gids[i], err);
        }
    }
    free(h);
    free(gids);
    return rc;
}

/* Stable counting sort of the pairs by left row (built on the left, the
 * pairs come in right order; maintain_order wants left order). */
static int sort_pairs_by_left(struct join *j, struct fr_error *err)
{
    int64_t nl = j->build->nrows, n = j->out.n;
    int rc = charge(j, (nl + 1) * 8 + n * 16, err);
    if (rc != FR_OK)
        return rc;
    int64_t *count = calloc((size_t)nl + 1, sizeof(int64_t));
    int64_t *l = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *r = df__alloc_big(sizeof(int64_t) * (size_t)(n + 1));
    if (!count || !l || !r) {
        free(count);
        free(l);
        free(r);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory ordering a join result");
    }
    for (int64_t i = 0; i < n; i++)
        count[j->out.l[i] + 1]++;
    for (int64_t i = 0; i < nl; i++)
        count[i + 1] += count[i];
    for (int64_t i = 0; i < n; i++) {
        int64_t at = count[j->out.l[i]]++;
        l[at] = j->out.l[i];
        r[at] = j->out.r[i];
    }
    free(count);
    fr_free_big(j->out.l);
    fr_free_big(j->out.r);
    j->out.l = l;
    j->out.r = r;
    j->out.cap = n + 1;
    return FR_OK;
}

/* After probing: unmatched build rows and the final order of the pairs. */
static int finish_pairs(struct join *j, bool maintain_order, struct fr_error *err)
{
    enum df_join_how how = j->how;
    int64_t nb = j->build->nrows;
    int rc = FR_OK;
    if (!j->build_left) {
        if (how == DF_JOIN_RIGHT || how == DF_JOIN_OUTER)
            for (int64_t b = 0; rc == FR_OK && b < nb; b++)
                if (!j->matched[b])
                    rc = pairs_push(j, &j->tail_pairs, -1, b, err);
        return rc;
    }
    if (how == DF_JOIN_SEMI || how == DF_JOIN_ANTI) {
        for (int64_t b = 0; rc == FR_OK && b < nb; b++)
            if (j->matched[b] == (how == DF_JOIN_SEMI))
                rc = pairs_push(j, &j->out, b, -1, err);
        return rc;
    }
    if (how == DF_JOIN_LEFT || how == DF_JOIN_OUTER)
        for (int64_t b = 0; rc == FR_OK && b < nb; b++)
            if (!j->matched[b])
                rc = pairs_push(j, &j->out, b, -1, err);
    if (rc == FR_OK && maintain_order)
        rc = sort_pairs_by_left(j, err);
    return rc;
}

/* A key column of the output under merge_keys: the left key, or the right
 * one where the row has no left side (int64 with float64 gives float64). */
static struct df_column *coalesce_key(const struct df_column *lc, const struct df_column *rc,
                                      const int64_t *li, const int64_t *ri, int64_t n)
{
    bool any_right = false;
    for (int64_t i = 0; i < n && !any_right; i++)
        any_right = li[i] < 0;
    if (!any_right)
        return df_column_take(lc, li, n);
    df_type t = lc->type == rc->type ? lc->type : DF_TYPE_FLOAT64;
    struct df_column *c = df_column_new(t, n);
    for (int64_t i = 0; i < n; i++) {
        const struct df_column *src = li[i] >= 0 ? lc : rc;
        int64_t row = li[i] >= 0 ? li[i] : ri[i];
        if (row < 0 || !df_column_is_valid(src, row))
            df_column_append_null(c);
        else if (src->type != t)
            df_column_append_float64(c, (double)df_column_int64(src, row));
        else
            df_column_append_from(c, src, row);
    }
    return c;
}

/* new: name, with suffix appended until it clashes with no column of t. */
static char *unique_name(const struct df_table *t, const char *name, const char *suffix)
{
    char *s = fr_xstrdup(name);
    while (df_table_find(t, s) >= 0) {
        char *longer = fr_xasprintf("%s%s", s, suffix);
        free(s);
        s = longer;
    }
    return s;
}

static bool is_key(const int *keys, int nkeys, int col)
{
    for (int k = 0; k < nkeys; k++)
        if (keys[k] == col)
            return true;
    return false;
}

/* li is every left row once, in order (a left join on unique right keys,
 * or one where every row matched once): the left columns are the output's
 * as they are. */
static bool left_identity(const int64_t *li, int64_t n, int64_t nleft)
{
    if (n != nleft)
        return false;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) /* no early exit: the loop vectorizes */
        bad |= li[i] ^ i;
    return bad == 0;
}

/* Gathers the output columns from the pair selections li/ri; the left
 * columns are shared, not copied, when li is the identity. */
static int assemble(const struct df_table *left, const struct df_table *right, const int *lk,
                    const int *rk, int nkeys, bool semi_like, bool merge_keys, const char *suffix,
                    const int64_t *li, const int64_t *ri, int64_t n, struct df_table **out,
                    struct fr_error *err)
{
    struct df_table *res = df_table_new();
    bool same_left = left_identity(li, n, left->nrows);
    for (int c = 0; c < left->ncols; c++) {
        int k = 0;
        while (k < nkeys && lk[k] != c)
            k++;
        struct df_column *col = same_left ? df_column_ref(left->cols[c])
                                : (!semi_like && merge_keys && k < nkeys)
                                    ? coalesce_key(left->cols[c], right->cols[rk[k]], li, ri, n)
                                    : df_column_take(left->cols[c], li, n);
        df_table_add(res, left->names[c], col);
    }
    for (int c = 0; !semi_like && c < right->ncols; c++) {
        if (merge_keys && is_key(rk, nkeys, c))
            continue;
        char *name = unique_name(res, right->names[c], suffix);
        df_table_add(res, name, df_column_take(right->cols[c], ri, n));
        free(name);
    }
    res->nrows = n;
    for (int c = 0; c < res->ncols; c++) {
        if (!df_column_ok(res->cols[c])) {
            df_table_free(res);
            return fr_error_set(err, FR_ETOOLARGE,
                                "out of memory building a join result of "
                                "%lld rows",
                                (long long)n);
        }
    }
    *out = res;
    return FR_OK;
}

/* The final selections: the pairs then the unmatched right rows. */
static int output(struct join *j, const struct df_table *left, const struct df_table *right,
                  const int *lk, const int *rk, int nkeys, bool merge_keys, const char *suffix,
                  struct df_table **out, struct fr_error *err)
{
    int rc = FR_OK;
    if (j->tail_pairs.n) {
        int64_t n = j->out.n + j->tail_pairs.n;
        if (n > j->out.cap)
            rc = pairs_grow(j, &j->out, n, err);
        if (rc != FR_OK)
            return rc;
        memcpy(j->out.l + j->out.n, j->tail_pairs.l, sizeof(int64_t) * (size_t)j->tail_pairs.n);
        memcpy(j->out.r + j->out.n, j->tail_pairs.r, sizeof(int64_t) * (size_t)j->tail_pairs.n);
        j->out.n = n;
    }
    bool semi_like = j->how == DF_JOIN_SEMI || j->how == DF_JOIN_ANTI;
    int64_t none = 0;
    return assemble(left, right, lk, rk, nkeys, semi_like, merge_keys, suffix,
                    j->out.n ? j->out.l : &none, j->out.n ? j->out.r : &none, j->out.n, out, err);
}

static void join_cleanup(struct join *j)
{
    df__gtab_cleanup(&j->gt);
    free((void *)j->bcols);
    free((void *)j->pcols);
    fr_free_big(j->head); /* big ones kept for the next join (common_mem.c) */
    fr_free_big(j->tail);
    fr_free_big(j->next);
    free(j->matched);
    fr_free_big(j->out.l);
    fr_free_big(j->out.r);
    fr_free_big(j->tail_pairs.l);
    fr_free_big(j->tail_pairs.r);
    if (j->ex && j->charged)
        df_exec_charge(j->ex, -j->charged, NULL);
}

int df_join(const struct df_table *left, const struct df_table *right, const int *left_keys,
            const int *right_keys, int nkeys, enum df_join_how how, bool merge_keys,
            const char *suffix, struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct join j;
    bool same_types = true;
    memset(&j, 0, sizeof(j));
    *out = NULL;
    j.ex = ex;
    j.how = how;
    int rc = check_keys(left, right, left_keys, right_keys, nkeys, &same_types, err);
    if (rc != FR_OK)
        goto out;
    /* build on the smaller side (the right one on a tie) */
    j.build_left = left->nrows < right->nrows;
    j.build = j.build_left ? left : right;
    j.probe = j.build_left ? right : left;
    const int *bk = j.build_left ? left_keys : right_keys;
    const int *pk = j.build_left ? right_keys : left_keys;
    df_type *types = fr_xcalloc((size_t)nkeys, sizeof(df_type));
    j.bcols = fr_xcalloc((size_t)nkeys, sizeof(*j.bcols));
    j.pcols = fr_xcalloc((size_t)nkeys, sizeof(*j.pcols));
    for (int k = 0; k < nkeys; k++) {
        j.bcols[k] = j.build->cols[bk[k]];
        j.pcols[k] = j.probe->cols[pk[k]];
        types[k] = j.bcols[k]->type;
    }
    df__gtab_init(&j.gt, types, nkeys, same_types, ex);
    free(types);
    df__gtab_add_source(&j.gt, j.bcols);
    df__gtab_add_source(&j.gt, j.pcols);
    int64_t morsel = df__morsel_rows(ex);
    if (j.probe->nrows > 1024 && how != DF_JOIN_SEMI && how != DF_JOIN_ANTI)
        rc = pairs_grow(&j, &j.out, j.probe->nrows, err);
    bool maintain_order = ex && ex->opts && ex->opts->maintain_order;
    /* unmatched build rows matter to all but an inner join */
    bool need_matched = how != DF_JOIN_INNER;
    if (rc == FR_OK)
        rc = build_side(&j, nkeys, morsel, need_matched, err);
    if (rc == FR_OK)
        rc = probe_side(&j, nkeys, morsel, err);
    if (rc == FR_OK)
        rc = finish_pairs(&j, maintain_order, err);
    if (rc == FR_OK)
        rc = output(&j, left, right, left_keys, right_keys, nkeys, merge_keys,
                    suffix && *suffix ? suffix : "_right", out, err);
out:
    join_cleanup(&j);
    return rc;
}
