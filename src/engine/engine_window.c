/* engine_window: the window operator. Rows are sorted (stably) by the
 * partition keys and then the order keys; one pass finds where partitions
 * and peer groups (rows equal on every order key) begin; then each function
 * is computed in one pass over them: ranks from the group starts, lag/lead
 * by offset within the partition, aggregates as running values per peer
 * group (the whole partition when there is no order). */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

/* Where partitions and peer groups begin in the sorted rows. */
struct win_bounds {
    int64_t n;
    int64_t nparts, ngroups;
    int64_t *pstart; /* nparts + 1: first row of each partition, then n */
    int64_t *gstart; /* ngroups + 1: first row of each peer group, then n */
    int64_t *gpart;  /* ngroups: the partition of each group */
};

static void bounds_free(struct win_bounds *b)
{
    free(b->pstart);
    free(b->gstart);
    free(b->gpart);
}

static int bounds_find(const struct df_table *t, const int *part, int npart,
                       const struct df_sort_key *order, int norder, struct win_bounds *b,
                       struct fr_error *err)
{
    int64_t n = t->nrows;
    size_t sz = sizeof(int64_t) * (size_t)(n + 1);
    b->n = n;
    b->pstart = fr_try_malloc(sz);
    b->gstart = fr_try_malloc(sz);
    b->gpart = fr_try_malloc(sz);
    if (!b->pstart || !b->gstart || !b->gpart)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory in a window over %lld rows",
                            (long long)n);
    const struct df_column **pcols = fr_xcalloc((size_t)npart + 1, sizeof(*pcols));
    const struct df_column **ocols = fr_xcalloc((size_t)norder + 1, sizeof(*ocols));
    for (int k = 0; k < npart; k++)
        pcols[k] = t->cols[part[k]];
    for (int k = 0; k < norder; k++)
        ocols[k] = t->cols[order[k].col];
    int64_t np = 0, ng = 0;
    for (int64_t i = 0; i < n; i++) {
        bool newpart = i == 0 || !df__keys_equal(pcols, i - 1, pcols, i, npart);
        bool newpeer =
            newpart || (norder > 0 && df__row_cmp(ocols, i - 1, ocols, i, order, norder) != 0);
        if (newpart)
            b->pstart[np++] = i;
        if (newpeer) {
            b->gstart[ng] = i;
            b->gpart[ng++] = np - 1;
        }
    }
    b->pstart[np] = n;
    b->gstart[ng] = n;
    b->nparts = np;
    b->ngroups = ng;
    free((void *)pcols);
    free((void *)ocols);
    return FR_OK;
}

/* row_number, rank, dense_rank. */
static struct df_column *ranks(const struct df_window_call *c, const struct win_bounds *b)
{
    struct df_column *out = df_column_new(DF_TYPE_INT64, b->n);
    int64_t dense = 0;
    for (int64_t g = 0; g < b->ngroups; g++) {
        int64_t first = b->pstart[b->gpart[g]];
        dense = (g == 0 || b->gpart[g] != b->gpart[g - 1]) ? 1 : dense + 1;
        for (int64_t i = b->gstart[g]; i < b->gstart[g + 1]; i++) {
            int64_t v = c->func == DF_WIN_ROW_NUMBER ? i - first + 1
                        : c->func == DF_WIN_RANK     ? b->gstart[g] - first + 1
                                                     : dense;
            df_column_append_int64(out, v);
        }
    }
    return out;
}

/* lag and lead: the row offset rows back or ahead in the partition, else the default. */
static struct df_column *shifted(const struct df_window_call *c, const struct df_column *x,
                                 const struct win_bounds *b)
{
    struct df_column *out = df_column_new(x->type, b->n);
    int64_t d = c->func == DF_WIN_LAG ? -c->offset : c->offset;
    for (int64_t p = 0; p < b->nparts; p++) {
        int64_t lo = b->pstart[p], hi = b->pstart[p + 1];
        for (int64_t i = lo; i < hi; i++) {
            int64_t j = i + d;
            if (j >= lo && j < hi)
                df_column_append_from(out, x, j);
            else if (c->dflt)
                df_column_append_from(out, c->dflt, 0);
            else
                df_column_append_null(out);
        }
    }
    return out;
}

/* A running aggregate over the rows of a partition seen so far. */
struct run_acc {
    int64_t rows, nvalid;
    __int128 isum; /* exact: an int64 sum that leaves int64's range fails the task */
    double dsum;
    int64_t best; /* min/max: the row holding it, -1 before any */
};

static void acc_add(const struct df_window_call *c, const struct df_column *x, int64_t i,
                    struct run_acc *a)
{
    a->rows++;
    if (!x || !df_column_is_valid(x, i))
        return;
    a->nvalid++;
    switch (c->func) {
    case DF_WIN_SUM:
    case DF_WIN_AVG:
        if (x->type == DF_TYPE_FLOAT64)
            a->dsum += df_column_float64(x, i);
        else
            a->isum += df_column_int64(x, i);
        break;
    case DF_WIN_MIN:
    case DF_WIN_MAX: {
        int cmp = a->best < 0 ? 0 : df__value_cmp(x, i, x, a->best);
        if (a->best < 0 || (c->func == DF_WIN_MIN ? cmp < 0 : cmp > 0))
            a->best = i;
        break;
    }
    default:
        break;
    }
}

/* The mean of an exact integer sum: the quotient and the remainder's share
 * apart, so a sum past 2^64 keeps its low digits. */
static double exact_mean(__int128 sum, int64_t n)
{
    __int128 q = sum / n, r = sum % n;
    return (double)((long double)q + (long double)r / (long double)n);
}

static int acc_emit(const struct df_window_call *c, const struct df_column *x,
                    const struct run_acc *a, struct df_column *out, struct fr_error *err)
{
    bool ints = x && x->type != DF_TYPE_FLOAT64;
    switch (c->func) {
    case DF_WIN_COUNT_STAR:
        df_column_append_int64(out, a->rows);
        return FR_OK;
    case DF_WIN_COUNT:
        df_column_append_int64(out, a->nvalid);
        return FR_OK;
    case DF_WIN_SUM:
        if (ints && (a->isum > INT64_MAX || a->isum < INT64_MIN)) {
            const char *col = c->arg_text ? c->arg_text : "?";
            size_t n = strlen(col);
            bool quoted = n >= 2 && col[0] == '"' && col[n - 1] == '"';
            return fr_error_setk(err, FR_EDATA, "arithmetic-overflow",
                                 "window function sum: the sum of the int64 column '%.*s' "
                                 "leaves int64's range; cast to double to sum past int64",
                                 (int)(quoted ? n - 2 : n), quoted ? col + 1 : col);
        }
        if (a->nvalid == 0)
            df_column_append_null(out);
        else if (ints)
            df_column_append_int64(out, (int64_t)a->isum);
        else
            df_column_append_float64(out, a->dsum);
        return FR_OK;
    case DF_WIN_AVG:
        if (a->nvalid == 0)
            df_column_append_null(out);
        else
            df_column_append_float64(out, ints ? exact_mean(a->isum, a->nvalid)
                                               : a->dsum / (double)a->nvalid);
        return FR_OK;
    default: /* min, max */
        df_column_append_from(out, x, a->best);
        return FR_OK;
    }
}

/* sum, avg, min, max, count, count(*): running over peer groups. */
static struct df_column *running(const struct df_window_call *c, const struct df_column *x,
                                 const struct win_bounds *b, struct fr_error *err)
{
    struct df_column *out = df_column_new(c->type, b->n);
    struct run_acc a = {0, 0, 0, 0, -1};
    for (int64_t g = 0; g < b->ngroups; g++) {
        if (g == 0 || b->gpart[g] != b->gpart[g - 1])
            a = (struct run_acc){0, 0, 0, 0, -1};
        int64_t lo = b->gstart[g], hi = b->gstart[g + 1];
        for (int64_t i = lo; i < hi; i++)
            acc_add(c, x, i, &a);
        for (int64_t i = lo; i < hi; i++) {
            if (acc_emit(c, x, &a, out, err) != FR_OK) {
                df_column_unref(out);
                return NULL;
            }
        }
    }
    return out;
}

static bool needs_arg(enum df_window_func f)
{
    return f != DF_WIN_ROW_NUMBER && f != DF_WIN_RANK && f != DF_WIN_DENSE_RANK &&
           f != DF_WIN_COUNT_STAR;
}

static int check_args(const struct df_table *in, const int *part, int npart,
                      const struct df_sort_key *order, int norder,
                      const struct df_window_call *calls, int ncalls, struct fr_error *err)
{
    if (ncalls < 0 || ncalls > DF_WINDOW_MAX_FUNCS)
        return fr_error_set(err, FR_EINVAL, "a window has at most %d functions, not %d",
                            DF_WINDOW_MAX_FUNCS, ncalls);
    for (int k = 0; k < npart; k++)
        if (part[k] < 0 || part[k] >= in->ncols)
            return fr_error_set(err, FR_EINVAL, "window partition key %d is not a column", k + 1);
    for (int k = 0; k < norder; k++)
        if (order[k].col < 0 || order[k].col >= in->ncols)
            return fr_error_set(err, FR_EINVAL, "window order key %d is not a column", k + 1);
    for (int k = 0; k < ncalls; k++) {
        const struct df_window_call *c = &calls[k];
        if (needs_arg(c->func) && (c->arg < 0 || c->arg >= in->ncols))
            return fr_error_set(err, FR_EINVAL,
                                "window function '%s': its argument must be a column of the "
                                "input",
                                c->name ? c->name : "?");
        if (needs_arg(c->func) && (c->func == DF_WIN_SUM || c->func == DF_WIN_AVG) &&
            in->cols[c->arg]->type != DF_TYPE_INT64 && in->cols[c->arg]->type != DF_TYPE_FLOAT64)
            return fr_error_set(err, FR_EINVAL, "window function '%s' needs a numeric argument",
                                c->name ? c->name : "?");
    }
    return FR_OK;
}

/* new: c's column, or NULL with err set (an int64 sum past int64) */
static struct df_column *compute(const struct df_window_call *c, const struct df_table *t,
                                 const struct win_bounds *b, struct fr_error *err)
{
    const struct df_column *x = needs_arg(c->func) ? t->cols[c->arg] : NULL;
    switch (c->func) {
    case DF_WIN_ROW_NUMBER:
    case DF_WIN_RANK:
    case DF_WIN_DENSE_RANK:
        return ranks(c, b);
    case DF_WIN_LAG:
    case DF_WIN_LEAD:
        return shifted(c, x, b);
    default:
        return running(c, x, b, err);
    }
}

/* Sorts in by (part, order) into *sorted (new). */
static int sort_input(const struct df_table *in, const int *part, int npart,
                      const struct df_sort_key *order, int norder, struct df_exec *ex,
                      struct df_table **sorted, struct fr_error *err)
{
    struct df_sort_key *keys = fr_xcalloc((size_t)(npart + norder) + 1, sizeof(*keys));
    for (int k = 0; k < npart; k++)
        keys[k] = (struct df_sort_key){part[k], false, ex && ex->opts && ex->opts->nulls_first};
    for (int k = 0; k < norder; k++)
        keys[npart + k] = order[k];
    int rc = df_sort(in, keys, npart + norder, ex, sorted, err);
    free(keys);
    return rc;
}

int df_window(const struct df_table *in, const int *part, int npart,
              const struct df_sort_key *order, int norder, const struct df_window_call *calls,
              int ncalls, struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_table *sorted = NULL, *res = NULL;
    struct win_bounds b;
    memset(&b, 0, sizeof(b));
    int64_t charged = 0;
    *out = NULL;
    int rc = check_args(in, part, npart, order, norder, calls, ncalls, err);
    if (rc == FR_OK)
        rc = sort_input(in, part, npart, order, norder, ex, &sorted, err);
    if (rc == FR_OK && ex) {
        charged = sorted->nrows * 24 + df_table_bytes(sorted); /* bounds, the sorted copy */
        rc = df_exec_charge(ex, charged, err);
    }
    if (rc == FR_OK)
        rc = bounds_find(sorted, part, npart, order, norder, &b, err);
    if (rc != FR_OK)
        goto out;
    res = df_table_share(sorted);
    for (int k = 0; k < ncalls && rc == FR_OK; k++) {
        struct df_column *col = compute(&calls[k], sorted, &b, err);
        if (!col) {
            rc = err->status ? err->status : FR_EDATA;
            break;
        }
        int64_t bytes = df_column_bytes(col);
        if (!df_column_ok(col))
            rc = fr_error_set(err, FR_ETOOLARGE, "out of memory computing window function '%s'",
                              calls[k].name ? calls[k].name : "?");
        else if (ex && (rc = df_exec_charge(ex, bytes, err)) == FR_OK)
            charged += bytes;
        if (rc == FR_OK)
            rc = ex ? df_exec_check_cancel(ex, err) : FR_OK;
        df_table_add(res, calls[k].name ? calls[k].name : "?", col);
    }
    res->nrows = sorted->nrows;
out:
    if (ex && charged)
        df_exec_charge(ex, -charged, NULL);
    bounds_free(&b);
    df_table_free(sorted);
    if (rc == FR_OK)
        *out = res;
    else
        df_table_free(res);
    return rc;
}
