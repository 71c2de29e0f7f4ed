/* engine_parquet_write_int: the pieces of the Parquet writer shared by its
 * files: a Thrift compact protocol writer into an fr_buf
 * (engine_parquet_thrift_write.c) and the encoder of one column chunk
 * (engine_parquet_write_chunk.c) that engine_parquet_write.c drives. */
#ifndef FRAMED_ENGINE_PARQUET_WRITE_INT_H
#define FRAMED_ENGINE_PARQUET_WRITE_INT_H

#include "engine_parquet_int.h"

#define DF__TW_MAX_DEPTH 16

/* A compact-protocol writer: appends to `out` (borrowed). Structs nest up
 * to DF__TW_MAX_DEPTH; each level remembers its last field id so that
 * field headers carry deltas. Nesting past the bound is a bug (it aborts). */
struct df__tw {
    struct fr_buf *out;
    int depth;
    int16_t last[DF__TW_MAX_DEPTH];
};
void df__tw_init(struct df__tw *w, struct fr_buf *out);
/* Raw values (list elements and the bodies of fields). */
void df__tw_varint(struct df__tw *w, uint64_t v);
void df__tw_i32(struct df__tw *w, int32_t v); /* zigzag varint (also i16) */
void df__tw_i64(struct df__tw *w, int64_t v);
void df__tw_binary(struct df__tw *w, const void *p, size_t n);
/* Fields of the current struct. */
void df__tw_field_i32(struct df__tw *w, int16_t id, int32_t v);
void df__tw_field_i16(struct df__tw *w, int16_t id, int16_t v);
void df__tw_field_i64(struct df__tw *w, int16_t id, int64_t v);
void df__tw_field_byte(struct df__tw *w, int16_t id, int8_t v);
void df__tw_field_bool(struct df__tw *w, int16_t id, bool v);
void df__tw_field_binary(struct df__tw *w, int16_t id, const void *p, size_t n);
void df__tw_field_string(struct df__tw *w, int16_t id, const char *s);
/* A list field's header; its `count` elements of elem_type follow (raw
 * values, or structs opened with df__tw_struct_begin). */
void df__tw_field_list(struct df__tw *w, int16_t id, int elem_type, int64_t count);
/* A struct field: opens it; its fields follow; df__tw_struct_end closes it. */
void df__tw_field_struct(struct df__tw *w, int16_t id);
/* A struct as a list element (or the top-level struct). */
void df__tw_struct_begin(struct df__tw *w);
void df__tw_struct_end(struct df__tw *w); /* writes the stop byte */

/* One encoded column chunk: the pages' bytes (headers and bodies) and what
 * the footer's ColumnMetaData says of them. Offsets are relative to the
 * start of `pages`; the writer adds the chunk's place in the file. */
struct df__pq_chunk {
    struct fr_buf pages;
    int64_t num_values;
    int64_t uncompressed_bytes; /* headers included */
    int64_t dict_page_offset;   /* -1 = no dictionary page */
    int64_t data_page_offset;
    bool dictionary; /* data pages are RLE_DICTIONARY */
    int64_t null_count;
    bool has_min_max;
    bool min_exact, max_exact;
    struct fr_buf min, max; /* PLAIN bytes of the value (strings without a length) */
};
void df__pq_chunk_init(struct df__pq_chunk *c);
void df__pq_chunk_cleanup(struct df__pq_chunk *c);
/* Encodes rows [start, start+n) of col into c (reset first): a dictionary
 * page and RLE_DICTIONARY data pages while the dictionary stays under its
 * bounds, else PLAIN data pages; pages of at most ~1 MiB before
 * compression with `codec` (enum df__pq_codec). FR_ENOSPACE when memory
 * sized by the data cannot be had; FR_ETOOLARGE for a page past 2 GiB. */
int df__pq_chunk_encode(struct df__pq_chunk *c, const struct df_column *col, int64_t start,
                        int64_t n, int codec, struct fr_error *err);

/* The physical type a column of engine type t is written as. */
int df__pq_physical_type(df_type t);

/* Bounds of the writer (tests use them to build overflowing columns). */
#define DF__PQW_PAGE_BYTES ((int64_t)1 << 20)
#define DF__PQW_DICT_MAX_VALUES 65536
#define DF__PQW_DICT_MAX_BYTES ((int64_t)1 << 20)
#define DF__PQW_STAT_MAX_BYTES 64

#endif
