/* fuzz_parquet_footer: the Parquet reader (footer, schema, column chunks,
 * page headers, and through them the codecs and page decoders) on arbitrary
 * bytes as a whole file behind a memory source: df_parquet_open, the
 * planner's accessors, then every row group read (skipped when its chunks
 * claim more than a few MB; a footer's row count, true or not, allocates
 * nothing: columns grow from the pages, under the task's memory limit).
 * Invariants: spans inside the file, tables of the row group's rows. */
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"
#include "fuzz_util.h"

struct mem_source {
    struct df_source base;
    const uint8_t *data;
    size_t len;
};

static int mem_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                    struct fr_error *err)
{
    struct mem_source *m = (struct mem_source *)s;
    FUZZ_CHECK(off >= 0 && (uint64_t)off <= m->len); /* the reader stays inside the file */
    (void)err;
    size_t n = m->len - (size_t)off < len ? m->len - (size_t)off : len;
    memcpy(buf, m->data + off, n);
    *got = n;
    return FR_OK;
}

static void read_group(df_parquet *pq, int g, const struct df_parquet_row_group *info)
{
    const struct df_options eo = {.morsel_size_rows = 1024, .task_memory_limit_bytes = 64 << 20};
    struct df_exec ex;
    df_exec_init(&ex, &eo, NULL);
    struct fr_error err;
    fr_error_init(&err);
    const struct df_schema *s = df_parquet_schema(pq);
    /* All columns, then the last one alone (a projection). */
    int last = s->nfields - 1;
    for (int pass = 0; pass < 2; pass++) {
        struct df_table *t = NULL;
        int rc = df_parquet_read(pq, g, 1, pass ? &last : NULL, pass ? 1 : -1, &ex, &t, &err);
        if (rc == FR_OK) {
            FUZZ_CHECK(t->nrows == info->num_rows);
            FUZZ_CHECK(t->ncols == (pass ? 1 : s->nfields));
            for (int c = 0; c < t->ncols; c++)
                FUZZ_CHECK(t->cols[c]->length == t->nrows);
        } else {
            FUZZ_CHECK(err.message[0] != '\0');
        }
        df_table_free(t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mem_source m = {.base = {.read = mem_read, .size = (int64_t)size, .name = "f.parquet"},
                           .data = data,
                           .len = size};
    df_parquet *pq = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (df_parquet_open(&m.base, &pq, &err) != FR_OK) {
        FUZZ_CHECK(err.message[0] != '\0');
        return 0;
    }
    const struct df_schema *s = df_parquet_schema(pq);
    FUZZ_CHECK(s->nfields > 0 && s->nfields <= FR_MAX_COLUMNS);
    int64_t rows = 0;
    for (int g = 0; g < df_parquet_num_row_groups(pq); g++) {
        struct df_parquet_row_group info;
        df_parquet_row_group_info(pq, g, &info);
        FUZZ_CHECK(info.start >= 4 && info.end <= (int64_t)size && info.num_rows >= 0);
        rows += info.num_rows;
        for (int c = 0; c < s->nfields; c++) {
            struct df_parquet_stats st;
            df_parquet_column_stats(pq, g, c, &st);
        }
        if (info.compressed_bytes <= (4 << 20))
            read_group(pq, g, &info);
    }
    FUZZ_CHECK(rows == df_parquet_num_rows(pq));
    df_parquet_free(pq);
    return 0;
}
