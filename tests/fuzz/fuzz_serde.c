/* fuzz_serde: the partition wire format (FRTB1, engine_serde.c), the bytes a
 * worker gets from another worker or the coordinator from a worker. Whatever
 * deserializes must be a consistent table: every column as long as the table,
 * readable end to end (JSON rows), and serializing it again must give bytes
 * that read back to the same shape, and that the streamed reader gives too. */
#include "engine/engine.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct df_table *t = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (df_table_deserialize((const char *)data, size, &t, &err) != FR_OK) {
        FUZZ_CHECK(t == NULL);
        return 0;
    }
    FUZZ_CHECK(t != NULL && t->ncols >= 0 && t->nrows >= 0);
    for (int c = 0; c < t->ncols; c++)
        FUZZ_CHECK(t->cols[c]->length == t->nrows && t->names[c] != NULL);
    /* Touches every value, offset and validity bit. */
    struct fr_buf b;
    fr_buf_init(&b);
    df_write_json_rows(t, 0, t->nrows, &b);
    df_write_csv_rows(t, 0, t->nrows, &b);
    fr_buf_cleanup(&b);
    char *bytes = NULL;
    size_t len = 0;
    FUZZ_CHECK(df_table_serialize(t, &bytes, &len, &err) == FR_OK);
    struct df_table *back = NULL;
    FUZZ_CHECK(df_table_deserialize(bytes, len, &back, &err) == FR_OK);
    FUZZ_CHECK(back->ncols == t->ncols && back->nrows == t->nrows);
    for (int c = 0; c < t->ncols; c++)
        FUZZ_CHECK(back->cols[c]->type == t->cols[c]->type &&
                   strcmp(back->names[c], t->names[c]) == 0);
    /* the worker's streamed encoding is the same bytes, read in odd pieces */
    df_serde_reader *r = df_serde_reader_new(t);
    FUZZ_CHECK(r != NULL && df_serde_reader_size(r) == len);
    char piece[97];
    size_t at = 0, n;
    while ((n = df_serde_reader_read(r, piece, 1 + (at % sizeof(piece)))) > 0) {
        FUZZ_CHECK(at + n <= len && memcmp(piece, bytes + at, n) == 0);
        at += n;
    }
    FUZZ_CHECK(at == len);
    df_serde_reader_free(r);
    df_table_free(back);
    free(bytes);
    df_table_free(t);
    return 0;
}
