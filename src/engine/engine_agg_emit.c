/* engine_agg_emit: turning accumulators into columns: the partial-state
 * columns (plain table columns, so partials can travel as tables) and the
 * final result columns; plus the value lists behind median and
 * count_distinct (engine_agg_values.c). Value blobs pack 8-byte host-order
 * values, or for strings a 4-byte length then the bytes; partials move
 * between like hosts. */
#include "engine_ops_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            ((double *)col->values)[g] = c->d[g];
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

/* new: field j of every group's Welford state (j 0, the count, as int64). */
static struct df_column *mom_column(const struct df__agg_acc *c, int j, int64_t ngroups)
{
    struct df_column *col = fixed_column(j ? DF_TYPE_FLOAT64 : DF_TYPE_INT64, ngroups);
    for (int64_t g = 0; g < ngroups && !col->oom; g++) {
        double v = df__mom_at(c, g)[j];
        if (j)
            ((double *)col->values)[g] = v;
        else
            ((int64_t *)col->values)[g] = (int64_t)v;
    }
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
    if (c->func == DF_AGG_MEDIAN)
        return df__median_blob(c, ngroups, out, err);
    bool strings = c->type == DF_TYPE_STRING;
    int rc = df__vlist_compact(a, &c->vl, strings, err);
    if (rc != FR_OK)
        return rc;
    int64_t *offs = fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1));
    int64_t *perm = offs ? df__vlist_order(&c->vl, ngroups, offs) : NULL;
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
    df__agg_settle(a, ngroups);
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
            for (int j = 0; j <= (c->func == DF_AGG_CORR ? 5 : 2); j++)
                add_state(t, k,
                          !j                       ? "n"
                          : c->func == DF_AGG_CORR ? moments[j - 1]
                          : j == 2                 ? "m2"
                                                   : "mean",
                          mom_column(c, j, ngroups));
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

/* count_distinct's results: each group's entries in the deduplicated list;
 * median's come from engine_agg_values.c. */
static int values_result(struct df__agg *a, struct df__agg_acc *c, int64_t ngroups,
                         struct df_column *col, struct fr_error *err)
{
    if (c->func == DF_AGG_MEDIAN)
        return df__median_result(a, c, ngroups, col, err);
    int rc = df__vlist_compact(a, &c->vl, c->type == DF_TYPE_STRING, err);
    int64_t *n = rc == FR_OK ? fr_try_malloc(sizeof(int64_t) * (size_t)(ngroups + 1)) : NULL;
    if (!n)
        return rc != FR_OK ? rc : fr_error_set(err, FR_ETOOLARGE, "out of memory counting values");
    memset(n, 0, sizeof(int64_t) * (size_t)(ngroups + 1));
    for (int64_t i = 0; i < c->vl.n; i++)
        n[c->vl.g[i]]++;
    for (int64_t g = 0; g < ngroups; g++)
        df_column_append_int64(col, n[g]);
    free(n);
    return FR_OK;
}

static void moments_result(const struct df__agg_acc *c, int64_t ngroups, struct df_column *col)
{
    for (int64_t g = 0; g < ngroups; g++) {
        const double *s = df__mom_at(c, g);
        if (s[0] < 2) {
            df_column_append_null(col);
        } else if (c->func == DF_AGG_STDDEV) {
            df_column_append_float64(col, sqrt(s[2] / (s[0] - 1)));
        } else {
            double den = sqrt(s[3] * s[4]);
            if (den > 0)
                df_column_append_float64(col, s[5] / den);
            else
                df_column_append_null(col);
        }
    }
}

int df__agg_emit_final(struct df__agg *a, int64_t ngroups, const char *const *names,
                       struct df_table *t, struct fr_error *err)
{
    df__agg_settle(a, ngroups);
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
                    ((double *)col->values)[g] = c->d[g] / (double)c->n[g];
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
