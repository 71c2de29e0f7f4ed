/* engine_partition: splitting a table into parts for a distributed shuffle:
 * by key hash (equal keys, int64 and float64 of equal value included, land
 * in the same part) or by key range against boundaries picked from samples,
 * so that the sorted parts concatenated in order are globally sorted. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

/* Partitions of one split: far above shuffle_partitions' maximum (4096), far
 * below what would make the per-partition arrays a memory hazard. */
#define DF_MAX_PARTITIONS 65536

/* Column c's rows scattered into outs[p] by part[] in one pass over them,
 * each part's rows in input order. (A take per part read the column once
 * per part, each read a stride through it.) false when out of memory. */
static bool scatter_column(const struct df_column *c, const int32_t *part, int64_t n,
                           const int64_t *len, int nparts, struct df_column **outs)
{
    df_type t = c->type;
    bool str = t == DF_TYPE_STRING, ok = true;
    int64_t *pos = fr_xcalloc((size_t)nparts, sizeof(int64_t));
    int64_t *bytes = fr_xcalloc((size_t)nparts, sizeof(int64_t));
    const int64_t *off = c->offsets;
    for (int64_t r = 0; str && r < n; r++)
        bytes[part[r]] += off[r + 1] - off[r];
    for (int p = 0; p < nparts; p++) {
        outs[p] = ok ? df__column_sized(t, len[p], bytes[p], c->validity != NULL) : NULL;
        ok = outs[p] != NULL;
    }
    if (!ok)
        goto out;
    if (str) {
        const int64_t safe_src = c->data_cap - DF_STRING_PAD;
        memset(bytes, 0, sizeof(int64_t) * (size_t)nparts);
        for (int64_t r = 0; r < n; r++) {
            struct df_column *o = outs[part[r]];
            int64_t a = off[r], l = off[r + 1] - a, *d = &bytes[part[r]];
            if (l <= 16 && a <= safe_src) { /* both buffers have room past it */
                uint64_t w0, w1;
                memcpy(&w0, c->data + a, 8);
                memcpy(&w1, c->data + a + 8, 8);
                memcpy(o->data + *d, &w0, 8);
                memcpy(o->data + *d + 8, &w1, 8);
            } else if (l) {
                memcpy(o->data + *d, c->data + a, (size_t)l);
            }
            *d += l;
            o->offsets[++pos[part[r]]] = *d;
        }
        for (int p = 0; p < nparts; p++)
            outs[p]->data_len = bytes[p];
    } else if (df_type_width(t) == 8) {
        const int64_t *src = c->values;
        for (int64_t r = 0; r < n; r++)
            ((int64_t *)outs[part[r]]->values)[pos[part[r]]++] = src[r];
    } else {
        size_t w = df_type_width(t);
        for (int64_t r = 0; r < n; r++)
            memcpy((char *)outs[part[r]]->values + w * (size_t)pos[part[r]]++,
                   (const char *)c->values + w * (size_t)r, w);
    }
    if (c->validity) {
        memset(pos, 0, sizeof(int64_t) * (size_t)nparts);
        for (int64_t r = 0; r < n; r++) {
            struct df_column *o = outs[part[r]];
            int64_t i = pos[part[r]]++;
            if (df_column_is_valid(c, r))
                o->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
            else
                o->null_count++;
        }
        for (int p = 0; p < nparts; p++)
            if (outs[p]->null_count == 0) { /* no validity bits without a null */
                free(outs[p]->validity);
                outs[p]->validity = NULL;
            }
    }
    for (int p = 0; p < nparts; p++)
        outs[p]->length = len[p];
out:
    if (!ok)
        for (int p = 0; p < nparts; p++) {
            df_column_unref(outs[p]);
            outs[p] = NULL;
        }
    free(pos);
    free(bytes);
    return ok;
}

/* Fills parts[0..nparts) (each new) with the rows of `in` whose part[] is
 * that index, keeping input order: each column in one pass. */
static int split_by_part(const struct df_table *in, const int32_t *part, int nparts,
                         struct df_table **parts, struct fr_error *err)
{
    int64_t n = in->nrows;
    int64_t *len = fr_xcalloc((size_t)nparts, sizeof(int64_t));
    struct df_column **outs = fr_xcalloc((size_t)nparts, sizeof(*outs));
    int rc = FR_OK;
    for (int64_t r = 0; r < n; r++)
        len[part[r]]++;
    for (int p = 0; p < nparts; p++) {
        parts[p] = df_table_new();
        parts[p]->nrows = len[p];
    }
    for (int i = 0; i < in->ncols; i++) {
        if (!scatter_column(in->cols[i], part, n, len, nparts, outs)) {
            rc = fr_error_set(err, FR_ETOOLARGE, "out of memory partitioning %lld rows",
                              (long long)n);
            break;
        }
        for (int p = 0; p < nparts; p++)
            df_table_add(parts[p], in->names[i], outs[p]);
    }
    if (rc != FR_OK)
        for (int p = 0; p < nparts; p++) {
            df_table_free(parts[p]);
            parts[p] = NULL;
        }
    free(len);
    free(outs);
    return rc;
}

void df_hash_rows(const struct df_table *in, const int *keys, int nkeys, uint64_t *out)
{
    const struct df_column **cols = fr_xcalloc((size_t)nkeys + 1, sizeof(*cols));
    for (int k = 0; k < nkeys; k++)
        cols[k] = in->cols[keys[k]];
    df__hash_columns(cols, nkeys, 0, in->nrows, out);
    free((void *)cols);
}

int df_hash_partition(const struct df_table *in, const int *keys, int nkeys, int nparts,
                      struct df_table **parts, struct fr_error *err)
{
    /* checked before parts is touched: its size is nparts only when nparts is sane */
    if (nparts < 1 || nparts > DF_MAX_PARTITIONS)
        return fr_error_set(err, FR_EINVAL, "cannot split into %d partitions (1 to %d)", nparts,
                            DF_MAX_PARTITIONS);
    for (int p = 0; p < nparts; p++)
        parts[p] = NULL;
    for (int k = 0; k < nkeys; k++)
        if (keys[k] < 0 || keys[k] >= in->ncols)
            return fr_error_set(err, FR_EINVAL, "partition key %d is not a column", k + 1);
    int64_t n = in->nrows;
    uint64_t *h = fr_try_malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    int32_t *part = fr_try_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    int rc = FR_ETOOLARGE;
    if (!h || !part) {
        fr_error_set(err, rc, "out of memory partitioning %lld rows", (long long)n);
        goto out;
    }
    df_hash_rows(in, keys, nkeys, h);
    /* the high bits pick the part: hash tables built on a part use the low ones */
    for (int64_t r = 0; r < n; r++)
        part[r] = (int32_t)(((h[r] >> 32) * (uint64_t)nparts) >> 32);
    rc = split_by_part(in, part, nparts, parts, err);
out:
    free(h);
    free(part);
    return rc;
}

/* ---- range partitioning -------------------------------------------------- */

struct df_table *df_sort_sample(const struct df_table *in, const struct df_sort_key *keys,
                                int nkeys, int64_t k)
{
    int64_t n = in->nrows, m = k < n ? k : n;
    int64_t *sel = fr_xmalloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1));
    for (int64_t i = 0; i < m; i++)
        sel[i] = (int64_t)((__int128)i * n / m);
    struct df_table *res = df_table_new();
    for (int j = 0; j < nkeys; j++)
        df_table_add(res, in->names[keys[j].col], df_column_take(in->cols[keys[j].col], sel, m));
    res->nrows = m;
    free(sel);
    return res;
}

/* The keys re-aimed at columns 0..nkeys-1 (a sample or boundary table). */
static struct df_sort_key *keys_by_position(const struct df_sort_key *keys, int nkeys)
{
    struct df_sort_key *k = fr_xcalloc((size_t)nkeys + 1, sizeof(*k));
    for (int i = 0; i < nkeys; i++) {
        k[i] = keys[i];
        k[i].col = i;
    }
    return k;
}

int df_sort_boundaries(const struct df_table *samples, const struct df_sort_key *keys, int nkeys,
                       int nparts, struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_sort_key *pk = keys_by_position(keys, nkeys);
    struct df_table *sorted = NULL;
    int64_t *sel = NULL;
    *out = NULL;
    int rc = FR_EINVAL;
    if (nparts < 1 || nparts > DF_MAX_PARTITIONS || samples->ncols < nkeys) {
        fr_error_set(err, rc, "boundaries for %d partitions need %d key columns", nparts, nkeys);
        goto out;
    }
    rc = df_sort(samples, pk, nkeys, ex, &sorted, err);
    if (rc != FR_OK)
        goto out;
    int64_t m = sorted->nrows, nb = m > 0 ? nparts - 1 : 0;
    sel = fr_xmalloc(sizeof(int64_t) * (size_t)(nb + 1));
    for (int64_t j = 1; j <= nb; j++)
        sel[j - 1] = (int64_t)((__int128)j * m / nparts);
    *out = df_table_take(sorted, sel, nb);
out:
    df_table_free(sorted);
    free(sel);
    free(pk);
    return rc;
}

/* The part of row r: how many boundaries are <= it (upper bound), so rows
 * equal to a boundary always go to the part after it. */
static int32_t range_part(const struct df_column *const *acols, int64_t r,
                          const struct df_column *const *bcols, int64_t nb,
                          const struct df_sort_key *keys, int nkeys)
{
    int64_t lo = 0, hi = nb;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (df__row_cmp(bcols, mid, acols, r, keys, nkeys) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int32_t)lo;
}

int df_range_partition(const struct df_table *in, const struct df_sort_key *keys, int nkeys,
                       const struct df_table *boundaries, int nparts, struct df_table **parts,
                       struct fr_error *err)
{
    if (nparts < 1 || nparts > DF_MAX_PARTITIONS)
        return fr_error_set(err, FR_EINVAL, "cannot split into %d partitions (1 to %d)", nparts,
                            DF_MAX_PARTITIONS);
    for (int p = 0; p < nparts; p++)
        parts[p] = NULL;
    if (boundaries->ncols < nkeys || boundaries->nrows > nparts - 1)
        return fr_error_set(err, FR_EINVAL, "%lld boundaries do not fit %d partitions",
                            (long long)boundaries->nrows, nparts);
    const struct df_column **acols = fr_xcalloc((size_t)nkeys + 1, sizeof(*acols));
    int32_t *part = fr_try_malloc(sizeof(int32_t) * (size_t)(in->nrows ? in->nrows : 1));
    int rc = FR_EINVAL;
    for (int k = 0; k < nkeys; k++) {
        if (keys[k].col < 0 || keys[k].col >= in->ncols ||
            in->cols[keys[k].col]->type != boundaries->cols[k]->type) {
            fr_error_set(err, rc, "sort key %d does not match the boundaries' column", k + 1);
            goto out;
        }
        acols[k] = in->cols[keys[k].col];
    }
    rc = FR_ETOOLARGE;
    if (!part) {
        fr_error_set(err, rc, "out of memory partitioning %lld rows", (long long)in->nrows);
        goto out;
    }
    const struct df_column *const *bcols = (const struct df_column *const *)boundaries->cols;
    for (int64_t r = 0; r < in->nrows; r++)
        part[r] = range_part(acols, r, bcols, boundaries->nrows, keys, nkeys);
    rc = split_by_part(in, part, nparts, parts, err);
out:
    free((void *)acols);
    free(part);
    return rc;
}
