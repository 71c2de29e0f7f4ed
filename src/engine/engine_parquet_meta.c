/* engine_parquet_meta: df_parquet_open: the footer (magic, length,
 * FileMetaData in Thrift compact), its schema (mapped by
 * engine_parquet_schema.c) and the row groups' column chunks, every offset
 * and count checked against the file and the schema. */
#include "engine_parquet_meta_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROW_GROUPS 1000000
#define MAX_FOOTER_BYTES ((int64_t)256 << 20)

/* A column chunk as the footer holds it. */
struct pq_raw_chunk {
    int type, codec;
    bool has_meta, external;
    int64_t num_values, uncompressed, compressed, data_off, dict_off;
    int64_t path_n;
    const uint8_t *path0; /* the first path element */
    size_t path0_len;
    const uint8_t *min[2], *max[2]; /* [0] deprecated min/max, [1] min_value/max_value */
    size_t min_len[2], max_len[2];
    int64_t null_count;
};

static void parse_stats(struct df__tc *r, struct pq_raw_chunk *c)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (t == DF__TC_BINARY && (id == 1 || id == 5))
            df__tc_binary(r, &c->max[id == 5], &c->max_len[id == 5]);
        else if (t == DF__TC_BINARY && (id == 2 || id == 6))
            df__tc_binary(r, &c->min[id == 6], &c->min_len[id == 6]);
        else if (id == 3 && t == DF__TC_I64)
            c->null_count = df__tc_i64(r);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

static void parse_path(struct df__tc *r, struct pq_raw_chunk *c)
{
    int et;
    df__tc_list(r, &et, &c->path_n);
    if (!df__tc_enter(r))
        return;
    for (int64_t i = 0; i < c->path_n && !r->failed; i++) {
        if (et != DF__TC_BINARY) {
            df__tc_fail(r, "path_in_schema is not a list of strings");
            break;
        }
        const uint8_t *p;
        size_t n;
        df__tc_binary(r, &p, &n);
        if (i == 0) {
            c->path0 = p;
            c->path0_len = n;
        }
    }
    df__tc_leave(r);
}

static void parse_chunk_meta(struct df__tc *r, struct pq_raw_chunk *c)
{
    if (!df__tc_enter(r))
        return;
    c->has_meta = true;
    int last = 0, id, t;
    int64_t *i64s[] = {
        NULL,           NULL, NULL,         NULL, NULL,        &c->num_values, &c->uncompressed,
        &c->compressed, NULL, &c->data_off, NULL, &c->dict_off};
    while (df__tc_field(r, &last, &id, &t)) {
        if ((id == 1 || id == 4) && df__tc_is(t, DF__TC_I32))
            *(id == 1 ? &c->type : &c->codec) = df__tc_i32(r);
        else if (id == 3 && df__tc_is(t, DF__TC_LIST))
            parse_path(r, c);
        else if (id >= 5 && id <= 11 && i64s[id] && t == DF__TC_I64)
            *i64s[id] = df__tc_i64(r);
        else if (id == 12 && t == DF__TC_STRUCT)
            parse_stats(r, c);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

static void parse_chunk(struct df__tc *r, struct pq_raw_chunk *c)
{
    memset(c, 0, sizeof(*c));
    c->type = c->codec = -1;
    c->num_values = c->uncompressed = c->compressed = c->data_off = c->dict_off = -1;
    c->null_count = -1;
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (id == 1 && t == DF__TC_BINARY) {
            const uint8_t *p;
            size_t n;
            df__tc_binary(r, &p, &n);
            c->external = true;
        } else if (id == 3 && t == DF__TC_STRUCT)
            parse_chunk_meta(r, c);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

/* ---- row groups ----------------------------------------------------------- */

static int check_chunk(df_parquet *pq, int rg, int col, const struct pq_raw_chunk *c, int64_t rows,
                       int64_t data_end, struct fr_error *err)
{
    const struct df__pq_leaf *l = &pq->leaves[col];
    const char *why = NULL;
    char where[64];
    snprintf(where, sizeof(where), "row group %d", rg);
    if (c->external)
        return df__pq_meta_fail(err, pq->src, "unsupported-parquet", FR_EVALIDATION, l->name,
                                "%s: the column chunk is in another file", where);
    if (c->has_meta && c->codec >= 0 && !df__pq_codec_supported(c->codec))
        return df__pq_meta_fail(err, pq->src, "unsupported-parquet", FR_EVALIDATION, l->name,
                                "%s: codec %s is not supported", where,
                                df__pq_codec_name(c->codec));
    if (!c->has_meta || c->codec < 0 || c->num_values < 0 || c->compressed < 0 ||
        c->uncompressed < 0 || c->data_off < 0)
        why = "column chunk metadata incomplete";
    else if (c->type != l->ptype)
        why = "column chunk type differs from the schema's";
    else if (c->path_n != 1 || c->path0_len != strlen(l->name) ||
             memcmp(c->path0, l->name, c->path0_len) != 0)
        why = "column chunk path differs from the schema's";
    else if (c->num_values != rows)
        why = "column chunk value count differs from the row group's rows";
    if (why)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, l->name, "%s: %s", where, why);
    int64_t start = c->dict_off > 0 && c->dict_off < c->data_off ? c->dict_off : c->data_off;
    if (start < 4 || c->compressed > data_end - start || (rows > 0 && c->compressed == 0))
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, l->name,
                                "%s: column chunk span [%lld, +%lld) outside the file's data",
                                where, (long long)start, (long long)c->compressed);
    struct df__pq_chunk *k = &pq->rgs[rg].chunks[col];
    k->codec = c->codec;
    k->num_values = c->num_values;
    k->compressed = c->compressed;
    k->uncompressed = c->uncompressed;
    k->start = start;
    k->null_count = c->null_count;
    /* min_value/max_value always; the deprecated min/max only where their
     * (signed) order is the column's. */
    int s = c->min[1] && c->max[1] ? 1 : l->unsigned_order ? -1 : 0;
    if (s >= 0 && c->min[s] && c->max[s]) {
        k->has_min = k->has_max = true;
        k->min = c->min[s];
        k->max = c->max[s];
        k->min_len = c->min_len[s];
        k->max_len = c->max_len[s];
    }
    return FR_OK;
}

static int parse_row_group(df_parquet *pq, struct df__tc *r, int rg, int64_t data_end,
                           struct fr_error *err)
{
    int ncols = pq->schema.nfields;
    struct df__pq_rg *g = &pq->rgs[rg];
    g->num_rows = -1;
    g->chunks = fr_xcalloc((size_t)ncols, sizeof(*g->chunks));
    struct pq_raw_chunk *raw = NULL;
    int64_t nraw = -1;
    int rc = FR_OK;
    if (!df__tc_enter(r))
        goto out;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (id == 1 && df__tc_is(t, DF__TC_LIST) && nraw < 0) {
            int et;
            df__tc_list(r, &et, &nraw);
            if (r->failed || et != DF__TC_STRUCT || nraw != ncols) {
                rc = df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                                      "row group %d has %lld column chunks for %d columns", rg,
                                      (long long)nraw, ncols);
                goto out;
            }
            raw = fr_xcalloc((size_t)ncols, sizeof(*raw));
            for (int c = 0; c < ncols && !r->failed; c++)
                parse_chunk(r, &raw[c]);
        } else if (id == 3 && t == DF__TC_I64)
            g->num_rows = df__tc_i64(r);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
    if (r->failed)
        goto out;
    if (!raw || g->num_rows < 0) {
        rc = df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                              "row group %d lacks its columns or its row count", rg);
        goto out;
    }
    for (int c = 0; c < ncols && rc == FR_OK; c++)
        rc = check_chunk(pq, rg, c, &raw[c], g->num_rows, data_end, err);
out:
    if (rc != FR_OK && err)
        err->row_group = rg;
    free(raw);
    return rc;
}

static int parse_row_groups(df_parquet *pq, struct df__tc *r, int64_t data_end,
                            struct fr_error *err)
{
    int et;
    int64_t n;
    df__tc_list(r, &et, &n);
    if (r->failed)
        return FR_OK; /* reported by the caller */
    if ((n > 0 && et != DF__TC_STRUCT) || n > MAX_ROW_GROUPS)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                                "%lld row groups (at most %d are supported)", (long long)n,
                                MAX_ROW_GROUPS);
    pq->rgs = fr_xcalloc((size_t)(n ? n : 1), sizeof(*pq->rgs));
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        pq->nrg = (int)i + 1;
        int rc = parse_row_group(pq, r, (int)i, data_end, err);
        if (rc != FR_OK || r->failed)
            return rc;
        if (__builtin_add_overflow(sum, pq->rgs[i].num_rows, &sum))
            return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL, "row counts overflow");
    }
    if (sum != pq->num_rows)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                                "the row groups hold %lld rows, the footer says %lld",
                                (long long)sum, (long long)pq->num_rows);
    return FR_OK;
}

/* ---- FileMetaData --------------------------------------------------------- */

static int parse_schema(df_parquet *pq, struct df__tc *r, struct fr_error *err)
{
    int et;
    int64_t n;
    df__tc_list(r, &et, &n);
    if (r->failed)
        return FR_OK;
    if (et != DF__TC_STRUCT || n < 1)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL, "the schema is empty");
    if (n - 1 > FR_MAX_COLUMNS)
        return df__pq_meta_fail(err, pq->src, "too-many-columns", FR_EVALIDATION, NULL,
                                "%lld columns; at most %d are supported", (long long)(n - 1),
                                FR_MAX_COLUMNS);
    struct df__pq_elem *el = fr_xcalloc((size_t)n, sizeof(*el));
    for (int64_t i = 0; i < n && !r->failed; i++)
        df__pq_parse_elem(r, &el[i]);
    int rc = r->failed ? FR_OK : df__pq_build_schema(pq, el, n, err);
    free(el);
    return rc;
}

static int parse_file_meta(df_parquet *pq, int64_t data_end, struct fr_error *err)
{
    struct df__tc r, at_schema, at_rgs;
    df__tc_init(&r, pq->footer, pq->footer_len);
    at_schema = at_rgs = r;
    bool has_schema = false, has_rgs = false;
    pq->num_rows = -1;
    int last = 0, id, t;
    df__tc_enter(&r);
    while (df__tc_field(&r, &last, &id, &t)) {
        if (id == 2 && df__tc_is(t, DF__TC_LIST) && !has_schema) {
            at_schema = r;
            has_schema = true;
        } else if (id == 4 && df__tc_is(t, DF__TC_LIST) && !has_rgs) {
            at_rgs = r;
            has_rgs = true;
        } else if (id == 3 && t == DF__TC_I64) {
            pq->num_rows = df__tc_i64(&r);
            continue;
        }
        df__tc_skip(&r, t);
    }
    if (r.failed)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL, "footer malformed (%s)", r.why);
    if (!has_schema || !has_rgs || pq->num_rows < 0)
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                                "footer lacks its schema, row groups or row count");
    int rc = parse_schema(pq, &at_schema, err);
    if (rc == FR_OK && !at_schema.failed)
        rc = parse_row_groups(pq, &at_rgs, data_end, err);
    struct df__tc *bad = at_schema.failed ? &at_schema : at_rgs.failed ? &at_rgs : NULL;
    if (rc == FR_OK && bad)
        rc = df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL, "footer malformed (%s)", bad->why);
    return rc;
}

/* A failed read of the footer: the source's words and kind (a worker's
 * dataset-unavailable or dataset-changed stays what it is). */
static int read_failed(struct fr_error *err, const struct df_source *src, int rc)
{
    if (!err)
        return rc;
    char kind[sizeof(err->kind)];
    snprintf(kind, sizeof(kind), "%s", err->kind);
    return df__pq_meta_fail(err, src, kind, rc, NULL, "%s", err->message);
}

static int read_footer(df_parquet *pq, int64_t *data_end, struct fr_error *err)
{
    struct df_source *src = pq->src;
    int64_t size = src->size;
    uint8_t head[4], tail[8];
    if (size < 12)
        return df__pq_meta_fail(err, src, "", FR_EDATA, NULL, "not a Parquet file (too short)");
    int rc = df__pq_read_full(src, 0, head, 4, err);
    if (rc == FR_OK)
        rc = df__pq_read_full(src, size - 8, tail, 8, err);
    if (rc != FR_OK)
        return read_failed(err, src, rc);
    if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0)
        return df__pq_meta_fail(err, src, "", FR_EDATA, NULL,
                                "not a Parquet file (no PAR1 magic at both ends)");
    int64_t flen =
        (int64_t)tail[0] | (int64_t)tail[1] << 8 | (int64_t)tail[2] << 16 | (int64_t)tail[3] << 24;
    if (flen < 1 || flen > size - 12 || flen > MAX_FOOTER_BYTES)
        return df__pq_meta_fail(err, src, "", FR_EDATA, NULL, "footer length %lld outside the file",
                                (long long)flen);
    pq->footer = fr_try_malloc((size_t)flen);
    if (!pq->footer)
        return df__pq_meta_fail(err, src, "", FR_ENOSPACE, NULL, "no memory for the footer");
    pq->footer_len = (size_t)flen;
    *data_end = size - 8 - flen;
    rc = df__pq_read_full(src, *data_end, pq->footer, (size_t)flen, err);
    if (rc != FR_OK)
        return read_failed(err, src, rc);
    return FR_OK;
}

int df_parquet_open(struct df_source *src, df_parquet **out, struct fr_error *err)
{
    *out = NULL;
    df_parquet *pq = fr_xcalloc(1, sizeof(*pq));
    pq->src = src;
    df_schema_init(&pq->schema);
    int64_t data_end = 0;
    int rc = read_footer(pq, &data_end, err);
    if (rc == FR_OK)
        rc = parse_file_meta(pq, data_end, err);
    if (rc != FR_OK) {
        df_parquet_free(pq);
        return rc;
    }
    *out = pq;
    return FR_OK;
}

void df_parquet_free(df_parquet *pq)
{
    if (!pq)
        return;
    for (int i = 0; i < pq->nrg; i++)
        free(pq->rgs[i].chunks);
    free(pq->rgs);
    free(pq->leaves);
    free(pq->footer);
    df_schema_cleanup(&pq->schema);
    free(pq);
}
