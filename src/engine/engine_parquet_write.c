/* engine_parquet_write: the Parquet writer: "PAR1", one row group per call
 * (its column chunks encoded by engine_parquet_write_chunk.c and streamed
 * out at once), and the footer: a Thrift compact FileMetaData of a flat
 * schema of OPTIONAL columns, the row groups' metadata and column orders. */
#include "engine_parquet_write_int.h"

#include <stdlib.h>
#include <string.h>

struct df_parquet_writer {
    struct df_schema schema;
    int codec;        /* enum df__pq_codec */
    int64_t offset;   /* bytes handed out so far: the next byte's place in the file */
    int64_t num_rows; /* over the row groups written */
    int nrow_groups;
    bool finished;
    struct fr_buf row_groups; /* the RowGroup structs, serialized one after another */
    struct df__pq_chunk chunk;
};

df_parquet_writer *df_parquet_writer_new(const struct df_schema *schema,
                                         enum df_parquet_codec codec)
{
    df_parquet_writer *w = fr_xcalloc(1, sizeof *w);
    df_schema_init(&w->schema);
    df_schema_copy(&w->schema, schema);
    w->codec = codec == DF_PARQUET_SNAPPY ? DF__PQ_SNAPPY
               : codec == DF_PARQUET_ZSTD ? DF__PQ_ZSTD
                                          : DF__PQ_UNCOMPRESSED;
    fr_buf_init(&w->row_groups);
    df__pq_chunk_init(&w->chunk);
    return w;
}

void df_parquet_writer_free(df_parquet_writer *w)
{
    if (!w)
        return;
    df_schema_cleanup(&w->schema);
    fr_buf_cleanup(&w->row_groups);
    df__pq_chunk_cleanup(&w->chunk);
    free(w);
}

static void put_magic(df_parquet_writer *w, struct fr_buf *out)
{
    if (w->offset == 0) {
        fr_buf_append(out, "PAR1", 4);
        w->offset = 4;
    }
}

static void write_statistics(struct df__tw *tw, const struct df__pq_chunk *c)
{
    df__tw_field_struct(tw, 12);
    df__tw_field_i64(tw, 3, c->null_count);
    if (c->has_min_max) {
        df__tw_field_binary(tw, 5, c->max.data, c->max.len);
        df__tw_field_binary(tw, 6, c->min.data, c->min.len);
        df__tw_field_bool(tw, 7, c->max_exact);
        df__tw_field_bool(tw, 8, c->min_exact);
    }
    df__tw_struct_end(tw);
}

/* The ColumnChunk (a list element) of the chunk that starts at `at`. */
static void write_column_chunk(struct df__tw *tw, const struct df_field *f,
                               const struct df__pq_chunk *c, int codec, int64_t at)
{
    df__tw_struct_begin(tw);
    df__tw_field_i64(tw, 2, at);
    df__tw_field_struct(tw, 3); /* ColumnMetaData */
    df__tw_field_i32(tw, 1, df__pq_physical_type(f->type));
    df__tw_field_list(tw, 2, DF__TC_I32, c->dictionary ? 3 : 2);
    df__tw_i32(tw, DF__PQ_PLAIN);
    df__tw_i32(tw, DF__PQ_RLE);
    if (c->dictionary)
        df__tw_i32(tw, DF__PQ_RLE_DICTIONARY);
    df__tw_field_list(tw, 3, DF__TC_BINARY, 1);
    df__tw_binary(tw, f->name, strlen(f->name));
    df__tw_field_i32(tw, 4, codec);
    df__tw_field_i64(tw, 5, c->num_values);
    df__tw_field_i64(tw, 6, c->uncompressed_bytes);
    df__tw_field_i64(tw, 7, (int64_t)c->pages.len);
    df__tw_field_i64(tw, 9, at + c->data_page_offset);
    if (c->dict_page_offset >= 0)
        df__tw_field_i64(tw, 11, at + c->dict_page_offset);
    write_statistics(tw, c);
    df__tw_struct_end(tw);
    df__tw_struct_end(tw);
}

static int check_table(const df_parquet_writer *w, const struct df_table *t, int64_t start,
                       int64_t n, struct fr_error *err)
{
    if (w->finished)
        return fr_error_set(err, FR_EINTERNAL, "parquet writer: rows after the footer");
    if (t->ncols != w->schema.nfields)
        return fr_error_set(err, FR_EINTERNAL, "parquet writer: %d columns for a schema of %d",
                            t->ncols, w->schema.nfields);
    for (int i = 0; i < t->ncols; i++)
        if (t->cols[i]->type != w->schema.fields[i].type)
            return fr_error_set(err, FR_EINTERNAL, "parquet writer: column '%s' is %s, not %s",
                                w->schema.fields[i].name, df_type_name(t->cols[i]->type),
                                df_type_name(w->schema.fields[i].type));
    if (start < 0 || n < 0 || start > t->nrows || n > t->nrows - start)
        return fr_error_set(err, FR_EINTERNAL, "parquet writer: rows outside the table");
    return 0;
}

int df_parquet_writer_write(df_parquet_writer *w, const struct df_table *t, int64_t start,
                            int64_t n, struct fr_buf *out, struct fr_error *err)
{
    int rc = check_table(w, t, start, n, err);
    if (rc != 0 || (n == 0 && w->nrow_groups > 0)) /* no second empty row group */
        return rc;
    put_magic(w, out);
    struct fr_buf cols;
    fr_buf_init(&cols);
    struct df__tw tw;
    df__tw_init(&tw, &cols);
    int64_t rg_start = w->offset, raw = 0;
    for (int i = 0; i < t->ncols; i++) {
        rc = df__pq_chunk_encode(&w->chunk, t->cols[i], start, n, w->codec, err);
        if (rc != 0)
            goto out;
        write_column_chunk(&tw, &w->schema.fields[i], &w->chunk, w->codec, w->offset);
        fr_buf_append(out, w->chunk.pages.data, w->chunk.pages.len);
        w->offset += (int64_t)w->chunk.pages.len;
        raw += w->chunk.uncompressed_bytes;
    }
    df__tw_init(&tw, &w->row_groups);
    df__tw_struct_begin(&tw);
    df__tw_field_list(&tw, 1, DF__TC_STRUCT, t->ncols);
    fr_buf_append(&w->row_groups, cols.data, cols.len);
    df__tw_field_i64(&tw, 2, raw);
    df__tw_field_i64(&tw, 3, n);
    df__tw_field_i64(&tw, 5, rg_start);
    df__tw_field_i64(&tw, 6, w->offset - rg_start);
    if (w->nrow_groups <= INT16_MAX)
        df__tw_field_i16(&tw, 7, (int16_t)w->nrow_groups); /* ordinal */
    df__tw_struct_end(&tw);
    w->nrow_groups++;
    w->num_rows += n;
out:
    if (rc != 0)
        w->finished = true; /* half a row group went out: the file is lost */
    fr_buf_cleanup(&cols);
    return rc;
}

/* The logicalType (a union) and converted_type of a leaf of type t. */
static void write_logical_type(struct df__tw *tw, df_type t)
{
    static const int converted[] = {
        [DF_TYPE_INT64] = 18,     /* INT_64 */
        [DF_TYPE_STRING] = 0,     /* UTF8 */
        [DF_TYPE_DATE] = 6,       /* DATE */
        [DF_TYPE_TIMESTAMP] = 10, /* TIMESTAMP_MICROS */
    };
    if (t == DF_TYPE_BOOL || t == DF_TYPE_FLOAT64)
        return;
    df__tw_field_i32(tw, 6, converted[t]);
    df__tw_field_struct(tw, 10);
    if (t == DF_TYPE_INT64) {
        df__tw_field_struct(tw, 10); /* INTEGER */
        df__tw_field_byte(tw, 1, 64);
        df__tw_field_bool(tw, 2, true);
    } else if (t == DF_TYPE_TIMESTAMP) {
        df__tw_field_struct(tw, 8); /* TIMESTAMP */
        df__tw_field_bool(tw, 1, true);
        df__tw_field_struct(tw, 2); /* unit */
        df__tw_field_struct(tw, 2); /* MICROS */
        df__tw_struct_end(tw);
        df__tw_struct_end(tw);
    } else {
        df__tw_field_struct(tw, t == DF_TYPE_STRING ? 1 : 6); /* STRING, DATE */
    }
    df__tw_struct_end(tw);
    df__tw_struct_end(tw);
}

static void write_schema(struct df__tw *tw, const struct df_schema *s)
{
    df__tw_field_list(tw, 2, DF__TC_STRUCT, s->nfields + 1);
    df__tw_struct_begin(tw);
    df__tw_field_string(tw, 4, "schema");
    df__tw_field_i32(tw, 5, s->nfields);
    df__tw_struct_end(tw);
    for (int i = 0; i < s->nfields; i++) {
        df__tw_struct_begin(tw);
        df__tw_field_i32(tw, 1, df__pq_physical_type(s->fields[i].type));
        df__tw_field_i32(tw, 3, 1); /* OPTIONAL */
        df__tw_field_string(tw, 4, s->fields[i].name);
        write_logical_type(tw, s->fields[i].type);
        df__tw_struct_end(tw);
    }
}

int df_parquet_writer_finish(df_parquet_writer *w, struct fr_buf *out, struct fr_error *err)
{
    if (w->finished)
        return fr_error_set(err, FR_EINTERNAL, "parquet writer: the footer was written");
    w->finished = true;
    put_magic(w, out);
    size_t at = out->len;
    struct df__tw tw;
    df__tw_init(&tw, out);
    df__tw_field_i32(&tw, 1, 2); /* version */
    write_schema(&tw, &w->schema);
    df__tw_field_i64(&tw, 3, w->num_rows);
    df__tw_field_list(&tw, 4, DF__TC_STRUCT, w->nrow_groups);
    fr_buf_append(out, w->row_groups.data, w->row_groups.len);
    df__tw_field_string(&tw, 6, "framed");
    df__tw_field_list(&tw, 7, DF__TC_STRUCT, w->schema.nfields); /* column_orders */
    for (int i = 0; i < w->schema.nfields; i++) {
        df__tw_struct_begin(&tw);
        df__tw_field_struct(&tw, 1); /* TYPE_ORDER */
        df__tw_struct_end(&tw);
        df__tw_struct_end(&tw);
    }
    df__tw_struct_end(&tw);
    size_t len = out->len - at;
    if (len > UINT32_MAX)
        return fr_error_set(err, FR_ETOOLARGE, "parquet writer: the footer is over 4 GiB");
    uint32_t len32 = (uint32_t)len;
    fr_buf_append(out, &len32, 4);
    fr_buf_append(out, "PAR1", 4);
    w->offset += (int64_t)(out->len - at);
    return 0;
}
