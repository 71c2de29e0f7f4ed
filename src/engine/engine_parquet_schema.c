/* engine_parquet_schema: the footer's SchemaElements (with their logical
 * and legacy converted types) mapped to the engine's types: a flat schema of
 * required and optional columns; what the reader cannot represent is refused
 * naming the column. */
#include "engine_parquet_meta_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int df__pq_meta_fail(struct fr_error *err, const struct df_source *src, const char *kind,
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
static void parse_logical_member(struct df__tc *r, int variant, struct df__pq_elem *e)
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

static void parse_logical(struct df__tc *r, struct df__pq_elem *e)
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

void df__pq_parse_elem(struct df__tc *r, struct df__pq_elem *e)
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

/* ---- the schema ----------------------------------------------------------- */

static const char *map_int(const struct df__pq_elem *e, struct df__pq_leaf *l)
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

static const char *map_decimal(const struct df__pq_elem *e, struct df__pq_leaf *l)
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

static const char *map_timestamp(const struct df__pq_elem *e, struct df__pq_leaf *l)
{
    int unit = e->logical == 8 ? e->ts_unit : e->converted == 9 ? 1 : 2;
    if (e->type != DF__PQ_INT64 || unit < 1 || unit > 3)
        return "a TIMESTAMP that is not INT64 milli, micro or nanoseconds";
    l->type = DF_TYPE_TIMESTAMP;
    l->conv = unit == 1 ? DF__PQ_CONV_TS_MS : unit == 2 ? DF__PQ_CONV_TS_US : DF__PQ_CONV_TS_NS;
    return NULL;
}

/* Maps a leaf element to an engine type; NULL or why it cannot. */
static const char *map_leaf(const struct df__pq_elem *e, struct df__pq_leaf *l)
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

static int elem_name(const struct df__pq_elem *e, char *buf, size_t cap)
{
    size_t n = e->name_len < cap - 1 ? e->name_len : cap - 1;
    memcpy(buf, e->name ? (const char *)e->name : "", n);
    buf[n] = '\0';
    return memchr(buf, '\0', n) == NULL ? 0 : -1;
}

/* The root and its leaves (elems[1..n)): flat only. */
int df__pq_build_schema(df_parquet *pq, const struct df__pq_elem *el, int64_t n,
                        struct fr_error *err)
{
    const struct df_source *src = pq->src;
    if (n < 1 || el[0].num_children < 1 || el[0].num_children > n - 1)
        return df__pq_meta_fail(err, src, "", FR_EDATA, NULL,
                                "schema is not a root and its columns");
    if (n - 1 > FR_MAX_COLUMNS)
        return df__pq_meta_fail(err, src, "too-many-columns", FR_EVALIDATION, NULL,
                                "%lld columns; at most %d are supported", (long long)(n - 1),
                                FR_MAX_COLUMNS);
    pq->leaves = fr_xcalloc((size_t)(n - 1), sizeof(*pq->leaves));
    df_name_map *seen = df_name_map_new();
    int rc = FR_OK;
    char name[1024];
    for (int64_t i = 1; i < n && rc == FR_OK; i++) {
        const struct df__pq_elem *e = &el[i];
        if (elem_name(e, name, sizeof(name)) != 0 || e->name_len >= sizeof(name)) {
            rc = df__pq_meta_fail(err, src, "", FR_EDATA, NULL, "column %lld has a malformed name",
                                  (long long)i);
            break;
        }
        const char *why = e->num_children > 0 || e->type < 0
                              ? "a nested column (struct, list or map) is not supported"
                              : map_leaf(e, &pq->leaves[i - 1]);
        if (!why && df_name_map_get(seen, name) >= 0)
            why = "the name is used by two columns";
        if (why) {
            rc = df__pq_meta_fail(err, src, "unsupported-parquet", FR_EVALIDATION, name, "%s", why);
            break;
        }
        df_name_map_put(seen, name, (int)i);
        df_schema_add(&pq->schema, name, pq->leaves[i - 1].type);
        pq->leaves[i - 1].name = pq->schema.fields[i - 1].name;
    }
    df_name_map_free(seen);
    if (rc == FR_OK && el[0].num_children != n - 1)
        rc = df__pq_meta_fail(err, src, "", FR_EDATA, NULL, "schema is not a root and its columns");
    return rc;
}
