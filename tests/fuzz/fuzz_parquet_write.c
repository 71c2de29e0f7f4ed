/* fuzz_parquet_write: the Parquet writer against our reader. The input
 * drives a table (column types, nulls, values: runs and repeats that the
 * RLE hybrid and the dictionary see, strings of any bytes), its codec and
 * its row groups; the written file must read back (df_parquet_open/read)
 * to the same table, value for value, bit for bit, but for the strings'
 * invalid UTF-8, written as U+FFFD (df__utf8_repaired), so what is read
 * back is valid UTF-8. */
#include "engine/engine.h"
#include "engine/engine_io_int.h"
#include "fuzz_util.h"

struct cursor {
    const uint8_t *p;
    size_t n, at;
};

static uint8_t next(struct cursor *c)
{
    return c->at < c->n ? c->p[c->at++] : 0;
}

static uint64_t next_n(struct cursor *c, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)next(c) << (8 * i);
    return v;
}

/* One value of type t: a tag byte says null, a small value (runs, a small
 * dictionary) or a full-width one. */
static void append_value(struct df_column *col, struct cursor *c)
{
    uint8_t tag = next(c);
    if (tag % 7 == 0) {
        df_column_append_null(col);
        return;
    }
    bool small = tag & 8;
    switch (col->type) {
    case DF_TYPE_BOOL:
        df_column_append_bool(col, tag & 16);
        break;
    case DF_TYPE_FLOAT64: {
        uint64_t bits = small ? (uint64_t)(tag >> 4) << 60 : next_n(c, 8);
        double v;
        memcpy(&v, &bits, 8);
        df_column_append_float64(col, v);
        break;
    }
    case DF_TYPE_STRING: {
        int len = small ? tag >> 6 : next(c) % 80;
        char buf[80];
        for (int i = 0; i < len; i++)
            buf[i] = (char)next(c);
        df_column_append_string(col, buf, len);
        break;
    }
    case DF_TYPE_DATE:
        df_column_append_int32(col, small ? tag >> 4 : (int32_t)next_n(c, 4));
        break;
    default:
        df_column_append_int64(col, small ? tag >> 4 : (int64_t)next_n(c, 8));
    }
}

struct mem_source {
    struct df_source base;
    const struct fr_buf *f;
};
static int mem_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                    struct fr_error *err)
{
    (void)err;
    const struct fr_buf *f = ((struct mem_source *)s)->f;
    size_t n = off >= (int64_t)f->len ? 0 : f->len - (size_t)off;
    *got = n < len ? n : len;
    memcpy(buf, f->data + off, *got);
    return 0;
}

static bool same(const struct df_column *a, const struct df_column *b, int64_t i)
{
    if (df_column_is_valid(a, i) != df_column_is_valid(b, i))
        return false;
    if (!df_column_is_valid(a, i))
        return true;
    if (a->type == DF_TYPE_STRING) {
        int64_t al, bl;
        const char *as = df_column_string(a, i, &al), *bs = df_column_string(b, i, &bl);
        return al == bl && memcmp(as, bs, (size_t)al) == 0;
    }
    size_t w = df_type_width(a->type);
    return memcmp((const char *)a->values + i * w, (const char *)b->values + i * w, w) == 0;
}

static struct df_table *table_of(struct cursor *c)
{
    static const df_type types[] = {DF_TYPE_INT64,  DF_TYPE_FLOAT64, DF_TYPE_BOOL,
                                    DF_TYPE_STRING, DF_TYPE_DATE,    DF_TYPE_TIMESTAMP};
    int ncols = 1 + next(c) % 4;
    int64_t repeat = 1 + next(c) % 64; /* each row repeated: long runs */
    struct df_table *t = df_table_new();
    struct df_column *cols[4];
    for (int i = 0; i < ncols; i++)
        cols[i] = df_column_new(types[next(c) % 6], 0);
    while (c->at < c->n)
        for (int i = 0; i < ncols; i++) {
            struct df_column *one = df_column_new(cols[i]->type, 1);
            append_value(one, c);
            for (int64_t r = 0; r < repeat; r++)
                df_column_append_from(cols[i], one, 0);
            df_column_unref(one);
        }
    for (int i = 0; i < ncols; i++) {
        char name[8];
        snprintf(name, sizeof name, "c%d", i);
        df_table_add(t, name, cols[i]);
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cursor c = {data, size, 0};
    enum df_parquet_codec codec = (enum df_parquet_codec)(next(&c) % 3);
    int64_t rg_rows = next(&c); /* 0 = one row group */
    struct df_table *t = table_of(&c);
    struct df_schema s;
    df_schema_init(&s);
    df_schema_of_table(&s, t);
    df_parquet_writer *w = df_parquet_writer_new(&s, codec);
    struct fr_error err;
    fr_error_init(&err);
    struct fr_buf f;
    fr_buf_init(&f);
    int64_t at = 0;
    do {
        int64_t n = rg_rows == 0 || t->nrows - at < rg_rows ? t->nrows - at : rg_rows;
        FUZZ_CHECK(df_parquet_writer_write(w, t, at, n, &f, &err) == FR_OK);
        at += n;
    } while (at < t->nrows);
    FUZZ_CHECK(df_parquet_writer_finish(w, &f, &err) == FR_OK);
    struct mem_source src = {{mem_read, (int64_t)f.len, "fuzz.parquet"}, &f};
    df_parquet *pq = NULL;
    FUZZ_CHECK(df_parquet_open(&src.base, &pq, &err) == FR_OK);
    struct df_options opts = {.morsel_size_rows = 65536};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table *back = NULL;
    FUZZ_CHECK(df_parquet_read(pq, 0, df_parquet_num_row_groups(pq), NULL, -1, &ex, &back, &err) ==
               FR_OK);
    FUZZ_CHECK(back->nrows == t->nrows && back->ncols == t->ncols);
    for (int i = 0; i < t->ncols; i++) { /* what the writer writes: valid UTF-8 */
        struct df_column *fixed = df__utf8_repaired(t->cols[i], 0, t->nrows);
        if (fixed) {
            df_column_unref(t->cols[i]);
            t->cols[i] = fixed;
        }
        FUZZ_CHECK(df__utf8_repaired(back->cols[i], 0, back->nrows) == NULL);
    }
    for (int i = 0; i < t->ncols; i++)
        for (int64_t r = 0; r < t->nrows; r++)
            FUZZ_CHECK(same(t->cols[i], back->cols[i], r));
    df_table_free(back);
    df_parquet_free(pq);
    fr_buf_cleanup(&f);
    df_parquet_writer_free(w);
    df_schema_cleanup(&s);
    df_table_free(t);
    return 0;
}
