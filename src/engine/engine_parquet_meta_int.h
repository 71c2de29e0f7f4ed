/* engine_parquet_meta_int: the Thrift compact protocol reader over a
 * bounded buffer, and the parsed footer (schema leaves, row groups, column
 * chunks) and page headers that engine_parquet_meta.c fills and
 * engine_parquet_read.c walks. Internal to the engine (df__ names). */
#ifndef FRAMED_ENGINE_PARQUET_META_INT_H
#define FRAMED_ENGINE_PARQUET_META_INT_H

#include "engine_parquet_int.h"

/* ---- Thrift compact protocol --------------------------------------------
 * A reader with a sticky failure: after the first malformed byte every call
 * returns zeros and `failed` stays set, so parsers check once per struct.
 * Nothing reads outside [p, end); element counts are bounded by the bytes
 * left (every element takes at least one byte); nesting is limited. */
#define DF__TC_MAX_DEPTH 64

struct df__tc {
    const uint8_t *p, *end;
    int depth;
    bool failed;
    const char *why; /* static text: what was malformed */
};
void df__tc_init(struct df__tc *r, const uint8_t *p, size_t n);
bool df__tc_fail(struct df__tc *r, const char *why); /* returns false */
/* The next field header of a struct: false at its STOP (or on failure).
 * *last is the previous field id (0 at the struct's start). */
bool df__tc_field(struct df__tc *r, int *last, int *id, int *type);
int df__tc_byte(struct df__tc *r);       /* one raw byte (-1 on failure) */
int64_t df__tc_varint(struct df__tc *r); /* unsigned, at most 10 bytes */
int64_t df__tc_i64(struct df__tc *r);    /* zigzag */
int32_t df__tc_i32(struct df__tc *r);    /* zigzag, checked to fit */
double df__tc_double(struct df__tc *r);
/* A field's bool: its value is in the field type; in a list, one byte. */
bool df__tc_bool(struct df__tc *r, int type);
/* Binary/string: *p borrowed from the buffer, *n its length. */
void df__tc_binary(struct df__tc *r, const uint8_t **p, size_t *n);
/* List or set header: element type and count (bounded by bytes left). */
void df__tc_list(struct df__tc *r, int *elem_type, int64_t *count);
/* Skips one value of `type` (any type, nested up to DF__TC_MAX_DEPTH). */
void df__tc_skip(struct df__tc *r, int type);
/* Struct nesting: enter (fails past the depth limit) and leave. */
bool df__tc_enter(struct df__tc *r);
void df__tc_leave(struct df__tc *r);
/* True when a field's wire type is `want` (bools: either bool type). */
bool df__tc_is(int type, int want);

/* ---- the footer ----------------------------------------------------------- */
/* How a leaf's physical values become the engine's. */
enum df__pq_conv {
    DF__PQ_CONV_BOOL,    /* BOOLEAN -> bool */
    DF__PQ_CONV_I32,     /* INT32 (INT_8/16/32) -> int64 */
    DF__PQ_CONV_U32,     /* INT32 UINT_8/16/32 -> int64 */
    DF__PQ_CONV_I64,     /* INT64 -> int64 */
    DF__PQ_CONV_F32,     /* FLOAT -> float64 */
    DF__PQ_CONV_F64,     /* DOUBLE -> float64 */
    DF__PQ_CONV_STRING,  /* BYTE_ARRAY -> string */
    DF__PQ_CONV_DATE,    /* INT32 DATE -> date */
    DF__PQ_CONV_TS_MS,   /* INT64 TIMESTAMP(MILLIS) -> timestamp (micros) */
    DF__PQ_CONV_TS_US,   /* INT64 TIMESTAMP(MICROS) */
    DF__PQ_CONV_TS_NS,   /* INT64 TIMESTAMP(NANOS): floor division */
    DF__PQ_CONV_DEC_I32, /* DECIMAL in INT32 -> float64 value / 10^scale */
    DF__PQ_CONV_DEC_I64, /* DECIMAL in INT64 */
    DF__PQ_CONV_DEC_BIN, /* DECIMAL in (FIXED_LEN_)BYTE_ARRAY, big-endian two's complement */
};

struct df__pq_leaf {
    const char *name; /* borrowed from the schema */
    int ptype;        /* enum df__pq_type */
    int type_length;
    bool optional;
    df_type type;
    int conv;            /* enum df__pq_conv */
    double dec_divisor;  /* 10^scale for decimals */
    bool unsigned_order; /* deprecated min/max do not apply (unsigned, strings, decimals) */
};

struct df__pq_chunk {
    int codec;
    int64_t num_values;
    int64_t compressed, uncompressed; /* total sizes */
    int64_t start;                    /* first page: min(dictionary, data) offset */
    bool has_min, has_max;
    const uint8_t *min, *max; /* borrowed from the footer */
    size_t min_len, max_len;
    int64_t null_count; /* -1 unknown */
};

struct df__pq_rg {
    int64_t num_rows;
    struct df__pq_chunk *chunks; /* one per leaf */
};

struct df_parquet {
    struct df_source *src; /* borrowed */
    uint8_t *footer;       /* owned: the FileMetaData bytes */
    size_t footer_len;
    struct df_schema schema;
    struct df__pq_leaf *leaves; /* schema.nfields */
    struct df__pq_rg *rgs;
    int nrg;
    int64_t num_rows;
};

/* ---- the schema (engine_parquet_schema.c) --------------------------------- */
/* A schema element as the footer holds it. */
struct df__pq_elem {
    int type, type_length, repetition, num_children, converted, scale, precision;
    const uint8_t *name;
    size_t name_len;
    int logical;     /* LogicalType union field id; 0 = none */
    int ts_unit;     /* TimeUnit field id: 1 MILLIS, 2 MICROS, 3 NANOS */
    int int_bits;    /* INTEGER bitWidth */
    bool int_signed; /* INTEGER isSigned */
    int dec_scale;   /* DECIMAL in the logical type */
};

/* Parses one SchemaElement. */
void df__pq_parse_elem(struct df__tc *r, struct df__pq_elem *e);
/* Fills pq->schema and pq->leaves from the root el[0] and its leaves
 * el[1..n): FR_EVALIDATION (unsupported-parquet, too-many-columns) naming
 * the column, FR_EDATA for a malformed schema. */
int df__pq_build_schema(df_parquet *pq, const struct df__pq_elem *el, int64_t n,
                        struct fr_error *err);
/* Sets err (status, kind, file, field = col or "") with the message
 * "<file>: column '<col>': <fmt>" (or "<file>: <fmt>"); returns status. */
int df__pq_meta_fail(struct fr_error *err, const struct df_source *src, const char *kind,
                     int status, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Reads exactly len bytes at off from src; a short source is FR_EDATA
 * "truncated" (the caller adds where). */
int df__pq_read_full(struct df_source *src, int64_t off, uint8_t *buf, size_t len,
                     struct fr_error *err);

/* Converts n raw values (v's physical layout, at index `first` of v) of
 * leaf into the engine's layout at dst (8, 4 or 1 bytes each; strings are
 * not converted here). FR_EDATA for a value out of range. */
int df__pq_convert(const struct df__pq_leaf *leaf, const struct df__pq_values *v, int64_t first,
                   int64_t n, void *dst, struct fr_error *err);

/* ---- page headers --------------------------------------------------------- */
struct df__pq_page_header {
    int type; /* enum df__pq_page_type */
    int64_t uncompressed_size, compressed_size;
    int64_t num_values;
    int encoding;
    int def_encoding;         /* v1 */
    int64_t num_nulls;        /* v2 */
    int64_t def_len, rep_len; /* v2: level bytes at the page's start */
    bool is_compressed;       /* v2 */
};
/* Parses the header at p[0, n): *used gets its length. FR_EDATA "page
 * header truncated" or "page header malformed" otherwise. */
int df__pq_page_header_parse(const uint8_t *p, size_t n, struct df__pq_page_header *h, size_t *used,
                             struct fr_error *err);

#endif
