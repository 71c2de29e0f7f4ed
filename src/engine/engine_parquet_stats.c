/* engine_parquet_stats: what the planner asks of an open Parquet file
 * without reading its data (row group spans, bytes of a projection, column
 * chunk statistics as engine values), the physical-to-engine value
 * conversions and the exact-length source read that the footer and the
 * chunk reader share. */
#include "engine_parquet_meta_int.h"

#include <math.h>
#include <string.h>

/* ---- value conversions ---------------------------------------------------- */

static double dec_bin(const uint8_t *p, int64_t n)
{
    if (n <= 0)
        return 0;
    if (n <= 16) {
        __int128 v = (p[0] & 0x80) ? -1 : 0;
        for (int64_t i = 0; i < n; i++)
            v = (__int128)(((unsigned __int128)v << 8) | p[i]);
        return (double)v;
    }
    double v = (p[0] & 0x80) ? -1 : 0;
    for (int64_t i = 0; i < n; i++)
        v = v * 256.0 + p[i];
    return v;
}

/* Loads through memcpy: page bytes are not aligned for the value type. */
static inline int32_t ld_i32(const char *f, int64_t i)
{
    int32_t v;
    memcpy(&v, f + i * 4, 4);
    return v;
}

static inline int64_t ld_i64(const char *f, int64_t i)
{
    int64_t v;
    memcpy(&v, f + i * 8, 8);
    return v;
}

static int convert_ts(int conv, const char *s, int64_t n, int64_t *d, struct fr_error *err)
{
    if (conv == DF__PQ_CONV_TS_US) {
        memcpy(d, s, (size_t)n * 8);
    } else if (conv == DF__PQ_CONV_TS_NS) {
        for (int64_t i = 0; i < n; i++) {
            int64_t x = ld_i64(s, i), q = x / 1000, m = x % 1000;
            d[i] = m < 0 ? q - 1 : q;
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            if (__builtin_mul_overflow(ld_i64(s, i), 1000, &d[i]))
                return fr_error_setk(err, FR_EDATA, "", "a timestamp out of range");
    }
    return FR_OK;
}

static void convert_ints(int conv, const char *f, int64_t first, int64_t n, void *dst, double div)
{
    int64_t *di = dst;
    double *dd = dst;
    switch (conv) {
    case DF__PQ_CONV_I32:
        for (int64_t i = 0; i < n; i++)
            di[i] = ld_i32(f, first + i);
        break;
    case DF__PQ_CONV_U32:
        for (int64_t i = 0; i < n; i++)
            di[i] = (uint32_t)ld_i32(f, first + i);
        break;
    case DF__PQ_CONV_F32:
        for (int64_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, f + (first + i) * 4, 4);
            dd[i] = x;
        }
        break;
    case DF__PQ_CONV_DEC_I32:
        for (int64_t i = 0; i < n; i++)
            dd[i] = ld_i32(f, first + i) / div;
        break;
    default: /* DF__PQ_CONV_DEC_I64 */
        for (int64_t i = 0; i < n; i++)
            dd[i] = (double)ld_i64(f, first + i) / div;
    }
}

int df__pq_convert(const struct df__pq_leaf *l, const struct df__pq_values *v, int64_t first,
                   int64_t n, void *dst, struct fr_error *err)
{
    const char *f = v->fixed;
    double *dd = dst;
    if (n <= 0)
        return FR_OK; /* v's buffers may be NULL */
    switch (l->conv) {
    case DF__PQ_CONV_BOOL:
        memcpy(dst, f + first, (size_t)n);
        break;
    case DF__PQ_CONV_DATE:
        memcpy(dst, f + first * 4, (size_t)n * 4);
        break;
    case DF__PQ_CONV_I64:
    case DF__PQ_CONV_F64:
        memcpy(dst, f + first * 8, (size_t)n * 8);
        break;
    case DF__PQ_CONV_I32:
    case DF__PQ_CONV_U32:
    case DF__PQ_CONV_F32:
    case DF__PQ_CONV_DEC_I32:
    case DF__PQ_CONV_DEC_I64:
        convert_ints(l->conv, f, first, n, dst, l->dec_divisor);
        break;
    case DF__PQ_CONV_DEC_BIN:
        for (int64_t i = 0; i < n; i++) {
            int64_t k = first + i;
            if (v->type == DF__PQ_FIXED_LEN_BYTE_ARRAY)
                dd[i] = dec_bin((const uint8_t *)f + k * v->type_length, v->type_length);
            else
                dd[i] = dec_bin((const uint8_t *)v->data + v->offsets[k],
                                v->offsets[k + 1] - v->offsets[k]);
            dd[i] /= l->dec_divisor;
        }
        break;
    case DF__PQ_CONV_TS_MS:
    case DF__PQ_CONV_TS_US:
    case DF__PQ_CONV_TS_NS:
        return convert_ts(l->conv, f + first * 8, n, dst, err);
    default:
        return fr_error_setk(err, FR_EDATA, "", "no conversion for this column");
    }
    return FR_OK;
}

int df__pq_read_full(struct df_source *src, int64_t off, uint8_t *buf, size_t len,
                     struct fr_error *err)
{
    size_t done = 0;
    while (done < len) {
        size_t got = 0;
        int rc = src->read(src, off + (int64_t)done, (char *)buf + done, len - done, &got, err);
        if (rc != FR_OK)
            return rc;
        if (got == 0)
            return fr_error_setk(err, FR_EDATA, "", "truncated");
        done += got;
    }
    return FR_OK;
}

/* ---- accessors ------------------------------------------------------------ */

const struct df_schema *df_parquet_schema(const df_parquet *pq)
{
    return &pq->schema;
}

int64_t df_parquet_num_rows(const df_parquet *pq)
{
    return pq->num_rows;
}

int df_parquet_num_row_groups(const df_parquet *pq)
{
    return pq->nrg;
}

void df_parquet_row_group_info(const df_parquet *pq, int rg, struct df_parquet_row_group *out)
{
    const struct df__pq_rg *g = &pq->rgs[rg];
    out->num_rows = g->num_rows;
    out->start = INT64_MAX;
    out->end = 0;
    out->compressed_bytes = 0;
    for (int c = 0; c < pq->schema.nfields; c++) {
        const struct df__pq_chunk *k = &g->chunks[c];
        if (k->start < out->start)
            out->start = k->start;
        if (k->start + k->compressed > out->end)
            out->end = k->start + k->compressed;
        out->compressed_bytes += k->compressed;
    }
}

int64_t df_parquet_row_group_bytes(const df_parquet *pq, int rg, const int *columns, int ncolumns)
{
    int64_t sum = 0;
    int n = ncolumns < 0 ? pq->schema.nfields : ncolumns;
    for (int i = 0; i < n; i++) {
        int c = ncolumns < 0 ? i : columns[i];
        if (c >= 0 && c < pq->schema.nfields)
            sum += pq->rgs[rg].chunks[c].compressed;
    }
    return sum;
}

static int64_t le_int(const uint8_t *p, size_t n)
{
    uint64_t u = 0;
    for (size_t i = n; i-- > 0;)
        u = (u << 8) | p[i];
    if (n == 4)
        return (int32_t)(uint32_t)u;
    return (int64_t)u;
}

/* One statistic's bytes as the engine's value; false when it cannot be. */
static bool stat_value(const struct df__pq_leaf *l, const uint8_t *p, size_t n,
                       struct df_parquet_value *v)
{
    memset(v, 0, sizeof(*v));
    size_t want = l->ptype == DF__PQ_INT32 || l->ptype == DF__PQ_FLOAT                       ? 4
                  : l->ptype == DF__PQ_BOOLEAN                                               ? 1
                  : l->ptype == DF__PQ_BYTE_ARRAY || l->ptype == DF__PQ_FIXED_LEN_BYTE_ARRAY ? n
                                                                                             : 8;
    if (n != want || (n == 0 && l->conv != DF__PQ_CONV_STRING))
        return false;
    struct df__pq_values raw = {.type = l->ptype, .type_length = (int)n, .count = 1};
    int64_t offs[2] = {0, (int64_t)n};
    uint64_t aligned = 0; /* the footer's bytes are not aligned for int64 loads */
    if (n <= 8)
        memcpy(&aligned, p, n);
    raw.fixed = n <= 8 ? (void *)&aligned : (void *)p;
    raw.offsets = offs;
    raw.data = (char *)p;
    switch (l->conv) {
    case DF__PQ_CONV_STRING:
        v->s = (const char *)p;
        v->len = (int64_t)n;
        return true;
    case DF__PQ_CONV_BOOL:
        v->b = p[0] != 0;
        return true;
    case DF__PQ_CONV_F32: {
        float f;
        memcpy(&f, p, 4);
        v->f = f;
        return !isnan(v->f);
    }
    case DF__PQ_CONV_F64:
        memcpy(&v->f, p, 8);
        return !isnan(v->f);
    case DF__PQ_CONV_DEC_I32:
    case DF__PQ_CONV_DEC_I64:
    case DF__PQ_CONV_DEC_BIN:
        return df__pq_convert(l, &raw, 0, 1, &v->f, NULL) == FR_OK;
    case DF__PQ_CONV_DATE:
        v->i = le_int(p, 4);
        return true;
    default:
        return df__pq_convert(l, &raw, 0, 1, &v->i, NULL) == FR_OK;
    }
}

void df_parquet_column_stats(const df_parquet *pq, int rg, int col, struct df_parquet_stats *out)
{
    const struct df__pq_chunk *k = &pq->rgs[rg].chunks[col];
    const struct df__pq_leaf *l = &pq->leaves[col];
    memset(out, 0, sizeof(*out));
    out->null_count = k->null_count;
    out->has_min_max = k->has_min && k->has_max && stat_value(l, k->min, k->min_len, &out->min) &&
                       stat_value(l, k->max, k->max_len, &out->max);
    if (!out->has_min_max) {
        memset(&out->min, 0, sizeof(out->min));
        memset(&out->max, 0, sizeof(out->max));
    }
}

/* ---- the decoded size of a row group (scan task sizing) ------------------- */

#define DECODED_CAP (INT64_MAX / 4)

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > DECODED_CAP - b ? DECODED_CAP : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    return b != 0 && a > DECODED_CAP / b ? DECODED_CAP : a * b;
}

/* A string chunk's value bytes: its uncompressed size (PLAIN pages hold the
 * values), or more when a dictionary makes it small: rows x the mean of its
 * min and max statistics' lengths. */
static int64_t string_bytes(const struct df__pq_chunk *k, int64_t rows)
{
    int64_t raw = k->uncompressed > 0 ? k->uncompressed : 0;
    if (!k->has_min || !k->has_max)
        return raw;
    int64_t by_stats = sat_mul(rows, (int64_t)(k->min_len + k->max_len) / 2);
    return by_stats > raw ? by_stats : raw;
}

int64_t df_parquet_row_group_decoded_bytes(const df_parquet *pq, int rg, const int *columns,
                                           int ncolumns)
{
    const struct df__pq_rg *g = &pq->rgs[rg];
    int64_t rows = g->num_rows > 0 ? g->num_rows : 0, sum = 0;
    int n = ncolumns < 0 ? pq->schema.nfields : ncolumns;
    for (int i = 0; i < n; i++) {
        int c = ncolumns < 0 ? i : columns[i];
        if (c < 0 || c >= pq->schema.nfields)
            continue;
        df_type t = pq->schema.fields[c].type;
        int64_t est = t == DF_TYPE_STRING
                          ? sat_add(sat_mul(rows, 8), string_bytes(&g->chunks[c], rows))
                          : sat_mul(rows, (int64_t)df_type_width(t));
        sum = sat_add(sum, sat_add(est, rows / 8 + 1));
    }
    return sum;
}
