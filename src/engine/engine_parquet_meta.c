/* engine_parquet_meta: df_parquet_open: the footer (magic, length,
 * FileMetaData in Thrift compact), the flat schema mapped to engine types,
 * and the row groups' column chunks, every offset checked against the file;
 * plus the accessors the planner uses (row group spans, statistics). */
#include "engine_parquet_meta_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROW_GROUPS 1000000
#define MAX_FOOTER_BYTES ((int64_t)256 << 20)

/* A schema element as the footer holds it. */
struct pq_elem {
    int type, type_length, repetition, num_children, converted, scale, precision;
    const uint8_t *name;
    size_t name_len;
    int logical;     /* LogicalType union field id; 0 = none */
    int ts_unit;     /* TimeUnit field id: 1 MILLIS, 2 MICROS, 3 NANOS */
    int int_bits;    /* INTEGER bitWidth */
    bool int_signed; /* INTEGER isSigned */
    int dec_scale;   /* DECIMAL in the logical type */
};

static int meta_fail(struct fr_error *err, const struct df_source *src, const char *kind,
                     int status, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static int meta_fail(struct fr_error *err, const struct df_source *src, const char *kind,
                     int status, const char *col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *name = src->name ? src->name : "parquet";
    if (col)
        fr_error_setk(err, status, kind, "%s: column '%s': %s", name, col, msg);
    else
        fr_error_setk(err, status, kind, "%s: %s", name, msg);
    if (err) {
        snprintf(err->file, sizeof(err->file), "%s", name);
        snprintf(err->field, sizeof(err->field), "%s", col ? col : "");
    }
    return status;
}

/* ---- Thrift structs ------------------------------------------------------- */

static void parse_time_unit(struct df__tc *r, int *unit)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (t == DF__TC_STRUCT && id >= 1 && id <= 3)
            *unit = id;
        df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

/* The logical type's variant (TIMESTAMP, INTEGER, DECIMAL have members). */
static void parse_logical_member(struct df__tc *r, int variant, struct pq_elem *e)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (variant == 8 && id == 2 && t == DF__TC_STRUCT)
            parse_time_unit(r, &e->ts_unit);
        else if (variant == 10 && id == 1 && t == DF__TC_BYTE)
            e->int_bits = (int8_t)df__tc_byte(r);
        else if (variant == 10 && id == 2 && df__tc_is(t, DF__TC_TRUE))
            e->int_signed = df__tc_bool(r, t);
        else if (variant == 5 && id == 1 && df__tc_is(t, DF__TC_I32))
            e->dec_scale = df__tc_i32(r);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

static void parse_logical(struct df__tc *r, struct pq_elem *e)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        if (t == DF__TC_STRUCT) {
            e->logical = id;
            parse_logical_member(r, id, e);
        } else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

static void parse_elem(struct df__tc *r, struct pq_elem *e)
{
    memset(e, 0, sizeof(*e));
    e->type = e->repetition = e->converted = -1;
    e->int_signed = true;
    e->dec_scale = -1;
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    int *ints[] = {NULL,           &e->type,  &e->type_length,
                   &e->repetition, NULL,      &e->num_children,
                   &e->converted,  &e->scale, &e->precision};
    while (df__tc_field(r, &last, &id, &t)) {
        if (id >= 1 && id <= 8 && id != 4 && df__tc_is(t, DF__TC_I32))
            *ints[id] = df__tc_i32(r);
        else if (id == 4 && t == DF__TC_BINARY)
            df__tc_binary(r, &e->name, &e->name_len);
        else if (id == 10 && t == DF__TC_STRUCT)
            parse_logical(r, e);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

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

/* ---- the schema ----------------------------------------------------------- */

static const char *map_int(const struct pq_elem *e, struct df__pq_leaf *l)
{
    int bits = 0;
    bool sgn = true;
    if (e->logical == 10) {
        bits = e->int_bits;
        sgn = e->int_signed;
    } else if (e->converted >= 11 && e->converted <= 18) {
        static const int cbits[] = {8, 16, 32, 64, 8, 16, 32, 64};
        bits = cbits[e->converted - 11];
        sgn = e->converted >= 15;
    }
    if (bits && bits != 8 && bits != 16 && bits != 32 && bits != 64)
        return "an INTEGER annotation of a width other than 8, 16, 32 or 64 bits";
    if (!sgn && e->type == DF__PQ_INT64)
        return "unsigned 64-bit integers are not supported (values above 2^63 do not fit int64)";
    l->type = DF_TYPE_INT64;
    l->conv = e->type == DF__PQ_INT64 ? DF__PQ_CONV_I64 : sgn ? DF__PQ_CONV_I32 : DF__PQ_CONV_U32;
    l->unsigned_order = !sgn;
    return NULL;
}

static const char *map_decimal(const struct pq_elem *e, struct df__pq_leaf *l)
{
    int scale = e->dec_scale >= 0 ? e->dec_scale : e->scale;
    if (scale < 0 || scale > 76)
        return "a DECIMAL scale outside 0..76";
    if (e->type == DF__PQ_FIXED_LEN_BYTE_ARRAY && (e->type_length < 1 || e->type_length > 64))
        return "a DECIMAL of a fixed length outside 1..64 bytes";
    l->type = DF_TYPE_FLOAT64;
    l->dec_divisor = pow(10.0, scale);
    l->unsigned_order = true;
    switch (e->type) {
    case DF__PQ_INT32:
        l->conv = DF__PQ_CONV_DEC_I32;
        return NULL;
    case DF__PQ_INT64:
        l->conv = DF__PQ_CONV_DEC_I64;
        return NULL;
    case DF__PQ_BYTE_ARRAY:
    case DF__PQ_FIXED_LEN_BYTE_ARRAY:
        l->conv = DF__PQ_CONV_DEC_BIN;
        return NULL;
    default:
        return "a DECIMAL of a physical type that cannot hold one";
    }
}

static const char *map_timestamp(const struct pq_elem *e, struct df__pq_leaf *l)
{
    int unit = e->logical == 8 ? e->ts_unit : e->converted == 9 ? 1 : 2;
    if (e->type != DF__PQ_INT64 || unit < 1 || unit > 3)
        return "a TIMESTAMP that is not INT64 milli, micro or nanoseconds";
    l->type = DF_TYPE_TIMESTAMP;
    l->conv = unit == 1 ? DF__PQ_CONV_TS_MS : unit == 2 ? DF__PQ_CONV_TS_US : DF__PQ_CONV_TS_NS;
    return NULL;
}

/* Maps a leaf element to an engine type; NULL or why it cannot. */
static const char *map_leaf(const struct pq_elem *e, struct df__pq_leaf *l)
{
    l->ptype = e->type;
    l->type_length = e->type_length;
    l->optional = e->repetition == 1;
    if (e->repetition == 2)
        return "a repeated field (lists are not supported)";
    int lg = e->logical, cv = e->converted;
    if (lg == 5 || (lg == 0 && cv == 5))
        return map_decimal(e, l);
    if (lg == 8 || (lg == 0 && (cv == 9 || cv == 10)))
        return map_timestamp(e, l);
    bool other = (lg != 0 && lg != 1 && lg != 4 && lg != 6 && lg != 10 && lg != 12) ||
                 (lg == 0 && (cv == 7 || cv == 8 || cv == 20 || cv == 21));
    if (other)
        return "a logical type the reader does not support (TIME, UUID, BSON, INTERVAL, ...)";
    switch (e->type) {
    case DF__PQ_BOOLEAN:
        l->type = DF_TYPE_BOOL;
        l->conv = DF__PQ_CONV_BOOL;
        return NULL;
    case DF__PQ_INT32:
        if (lg == 6 || (lg == 0 && cv == 6)) {
            l->type = DF_TYPE_DATE;
            l->conv = DF__PQ_CONV_DATE;
            return NULL;
        }
        return map_int(e, l);
    case DF__PQ_INT64:
        return map_int(e, l);
    case DF__PQ_FLOAT:
        l->type = DF_TYPE_FLOAT64;
        l->conv = DF__PQ_CONV_F32;
        return NULL;
    case DF__PQ_DOUBLE:
        l->type = DF_TYPE_FLOAT64;
        l->conv = DF__PQ_CONV_F64;
        return NULL;
    case DF__PQ_BYTE_ARRAY:
        l->type = DF_TYPE_STRING;
        l->conv = DF__PQ_CONV_STRING;
        l->unsigned_order = true;
        return NULL;
    case DF__PQ_INT96:
        return "INT96 timestamps are not supported";
    case DF__PQ_FIXED_LEN_BYTE_ARRAY:
        return "FIXED_LEN_BYTE_ARRAY other than DECIMAL";
    default:
        return "an unknown physical type";
    }
}

static int elem_name(const struct pq_elem *e, char *buf, size_t cap)
{
    size_t n = e->name_len < cap - 1 ? e->name_len : cap - 1;
    memcpy(buf, e->name ? (const char *)e->name : "", n);
    buf[n] = '\0';
    return memchr(buf, '\0', n) == NULL ? 0 : -1;
}

/* The root and its leaves (elems[1..n)): flat only. */
static int build_schema(df_parquet *pq, const struct pq_elem *el, int64_t n, struct fr_error *err)
{
    const struct df_source *src = pq->src;
    if (n < 1 || el[0].num_children < 1 || el[0].num_children > n - 1)
        return meta_fail(err, src, "", FR_EDATA, NULL, "schema is not a root and its columns");
    if (n - 1 > FR_MAX_COLUMNS)
        return meta_fail(err, src, "too-many-columns", FR_EVALIDATION, NULL,
                         "%lld columns; at most %d are supported", (long long)(n - 1),
                         FR_MAX_COLUMNS);
    pq->leaves = fr_xcalloc((size_t)(n - 1), sizeof(*pq->leaves));
    df_name_map *seen = df_name_map_new();
    int rc = FR_OK;
    char name[1024];
    for (int64_t i = 1; i < n && rc == FR_OK; i++) {
        const struct pq_elem *e = &el[i];
        if (elem_name(e, name, sizeof(name)) != 0 || e->name_len >= sizeof(name)) {
            rc = meta_fail(err, src, "", FR_EDATA, NULL, "column %lld has a malformed name",
                           (long long)i);
            break;
        }
        const char *why = e->num_children > 0 || e->type < 0
                              ? "a nested column (struct, list or map) is not supported"
                              : map_leaf(e, &pq->leaves[i - 1]);
        if (!why && df_name_map_get(seen, name) >= 0)
            why = "the name is used by two columns";
        if (why) {
            rc = meta_fail(err, src, "unsupported-parquet", FR_EVALIDATION, name, "%s", why);
            break;
        }
        df_name_map_put(seen, name, (int)i);
        df_schema_add(&pq->schema, name, pq->leaves[i - 1].type);
        pq->leaves[i - 1].name = pq->schema.fields[i - 1].name;
    }
    df_name_map_free(seen);
    if (rc == FR_OK && el[0].num_children != n - 1)
        rc = meta_fail(err, src, "", FR_EDATA, NULL, "schema is not a root and its columns");
    return rc;
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
        return meta_fail(err, pq->src, "unsupported-parquet", FR_EVALIDATION, l->name,
                         "%s: the column chunk is in another file", where);
    if (c->has_meta && c->codec >= 0 && !df__pq_codec_supported(c->codec))
        return meta_fail(err, pq->src, "unsupported-parquet", FR_EVALIDATION, l->name,
                         "%s: codec %s is not supported", where, df__pq_codec_name(c->codec));
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
        return meta_fail(err, pq->src, "", FR_EDATA, l->name, "%s: %s", where, why);
    int64_t start = c->dict_off > 0 && c->dict_off < c->data_off ? c->dict_off : c->data_off;
    if (start < 4 || c->compressed > data_end - start || (rows > 0 && c->compressed == 0))
        return meta_fail(err, pq->src, "", FR_EDATA, l->name,
                         "%s: column chunk span [%lld, +%lld) outside the file's data", where,
                         (long long)start, (long long)c->compressed);
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
                rc = meta_fail(err, pq->src, "", FR_EDATA, NULL,
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
        rc = meta_fail(err, pq->src, "", FR_EDATA, NULL,
                       "row group %d lacks its columns or its row count", rg);
        goto out;
    }
    for (int c = 0; c < ncols && rc == FR_OK; c++)
        rc = check_chunk(pq, rg, c, &raw[c], g->num_rows, data_end, err);
out:
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
        return meta_fail(err, pq->src, "", FR_EDATA, NULL,
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
            return meta_fail(err, pq->src, "", FR_EDATA, NULL, "row counts overflow");
    }
    if (sum != pq->num_rows)
        return meta_fail(err, pq->src, "", FR_EDATA, NULL,
                         "the row groups hold %lld rows, the footer says %lld", (long long)sum,
                         (long long)pq->num_rows);
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
        return meta_fail(err, pq->src, "", FR_EDATA, NULL, "the schema is empty");
    if (n - 1 > FR_MAX_COLUMNS)
        return meta_fail(err, pq->src, "too-many-columns", FR_EVALIDATION, NULL,
                         "%lld columns; at most %d are supported", (long long)(n - 1),
                         FR_MAX_COLUMNS);
    struct pq_elem *el = fr_xcalloc((size_t)n, sizeof(*el));
    for (int64_t i = 0; i < n && !r->failed; i++)
        parse_elem(r, &el[i]);
    int rc = r->failed ? FR_OK : build_schema(pq, el, n, err);
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
        return meta_fail(err, pq->src, "", FR_EDATA, NULL, "footer malformed (%s)", r.why);
    if (!has_schema || !has_rgs || pq->num_rows < 0)
        return meta_fail(err, pq->src, "", FR_EDATA, NULL,
                         "footer lacks its schema, row groups or row count");
    int rc = parse_schema(pq, &at_schema, err);
    if (rc == FR_OK && !at_schema.failed)
        rc = parse_row_groups(pq, &at_rgs, data_end, err);
    struct df__tc *bad = at_schema.failed ? &at_schema : at_rgs.failed ? &at_rgs : NULL;
    if (rc == FR_OK && bad)
        rc = meta_fail(err, pq->src, "", FR_EDATA, NULL, "footer malformed (%s)", bad->why);
    return rc;
}

static int read_footer(df_parquet *pq, int64_t *data_end, struct fr_error *err)
{
    struct df_source *src = pq->src;
    int64_t size = src->size;
    uint8_t head[4], tail[8];
    if (size < 12)
        return meta_fail(err, src, "", FR_EDATA, NULL, "not a Parquet file (too short)");
    int rc = df__pq_read_full(src, 0, head, 4, err);
    if (rc == FR_OK)
        rc = df__pq_read_full(src, size - 8, tail, 8, err);
    if (rc != FR_OK)
        return meta_fail(err, src, "", rc, NULL, "%s", err ? err->message : "read failed");
    if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0)
        return meta_fail(err, src, "", FR_EDATA, NULL,
                         "not a Parquet file (no PAR1 magic at both ends)");
    int64_t flen =
        (int64_t)tail[0] | (int64_t)tail[1] << 8 | (int64_t)tail[2] << 16 | (int64_t)tail[3] << 24;
    if (flen < 1 || flen > size - 12 || flen > MAX_FOOTER_BYTES)
        return meta_fail(err, src, "", FR_EDATA, NULL, "footer length %lld outside the file",
                         (long long)flen);
    pq->footer = fr_try_malloc((size_t)flen);
    if (!pq->footer)
        return meta_fail(err, src, "", FR_ENOSPACE, NULL, "no memory for the footer");
    pq->footer_len = (size_t)flen;
    *data_end = size - 8 - flen;
    rc = df__pq_read_full(src, *data_end, pq->footer, (size_t)flen, err);
    if (rc != FR_OK)
        return meta_fail(err, src, "", rc, NULL, "%s", err ? err->message : "read failed");
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
