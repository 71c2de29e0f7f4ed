/* fuzz_reader: the body of the CSV and NDJSON reader targets. The input is
 * written as a data file and read the way framed reads data: first as an
 * upload's structure check does (infer the schema, split into ranges, read
 * every range with all columns as strings), then as a query's scan does
 * (the inferred types, a projection, byte ranges cut small). The first byte
 * picks the options (delimiter, quoting, header, on_error null, range size).
 * Invariant: however the file is cut into ranges, the same rows come out. */
#ifndef FRAMED_FUZZ_READER_H
#define FRAMED_FUZZ_READER_H

#include "engine/engine.h"
#include "fuzz_util.h"

struct fuzz_reader {
    bool csv;
    const char *file; /* name in the scratch dir */
};

static int fuzz__read_ranges(const struct fuzz_reader *r, const char *path,
                             const struct df_csv_options *o, const struct df_options *eo,
                             const struct df_schema *schema, const int *cols, int ncols,
                             int64_t target, int64_t *rows)
{
    struct df_byte_range *ranges = NULL;
    int n = 0;
    struct fr_error err;
    fr_error_init(&err);
    int rc = r->csv ? df_csv_split(path, o, target, &ranges, &n, &err)
                    : df_ndjson_split(path, target, &ranges, &n, &err);
    *rows = 0;
    for (int i = 0; rc == FR_OK && i < n; i++) {
        FUZZ_CHECK(ranges[i].start <= ranges[i].end);
        FUZZ_CHECK(i == 0 || ranges[i].start == ranges[i - 1].end);
        struct df_exec ex;
        df_exec_init(&ex, eo, NULL);
        struct df_table *t = NULL;
        rc = r->csv ? df_csv_read(path, &ranges[i], o, schema, cols, ncols, &ex, &t, &err)
                    : df_ndjson_read(path, &ranges[i], o, schema, cols, ncols, &ex, &t, &err);
        if (rc == FR_OK) {
            FUZZ_CHECK(t->ncols == (ncols < 0 ? schema->nfields : ncols));
            for (int c = 0; c < t->ncols; c++)
                FUZZ_CHECK(t->cols[c]->length == t->nrows);
            *rows += t->nrows;
        }
        df_table_free(t);
    }
    free(ranges);
    return rc;
}

static void fuzz_reader_run(const struct fuzz_reader *r, const uint8_t *data, size_t size)
{
    if (size < 1)
        return;
    const uint8_t flags = data[0];
    const char *path = fuzz_write_file(r->file, data + 1, size - 1);
    static const char delims[] = {',', ';', '\t', '|'};
    static const char *const nulls[] = {"NA", "null"};
    struct df_csv_options o;
    df_csv_options_init(&o);
    o.delimiter = delims[flags & 3];
    if (flags & 4)
        o.quote = '\0';
    o.header = !(flags & 8);
    o.on_error_null = flags & 16;
    o.sample_rows = (flags & 32) ? 2 : 1000;
    struct df_options eo = {.morsel_size_rows = 7,
                            .csv_null_values = nulls,
                            .n_csv_null_values = 2,
                            .task_memory_limit_bytes = 256 << 20};
    struct df_schema inferred, strings;
    df_schema_init(&inferred);
    df_schema_init(&strings);
    struct fr_error err;
    fr_error_init(&err);
    int rc = r->csv ? df_csv_infer_schema(path, &o, &eo, &inferred, &err)
                    : df_ndjson_infer_schema(path, &o, &inferred, &err);
    if (rc == FR_OK) {
        FUZZ_CHECK(inferred.nfields <= FR_MAX_COLUMNS);
        for (int i = 0; i < inferred.nfields; i++)
            df_schema_add(&strings, inferred.fields[i].name, DF_TYPE_STRING);
        /* The upload's structure check: one big range, all strings. */
        int64_t whole = 0, pieces = 0;
        int rc_whole = fuzz__read_ranges(r, path, &o, &eo, &strings, NULL, -1, 32 << 20, &whole);
        int64_t small = 512 + (flags >> 6) * 1024;
        int rc_pieces = fuzz__read_ranges(r, path, &o, &eo, &strings, NULL, -1, small, &pieces);
        if (rc_whole == FR_OK && rc_pieces == FR_OK)
            FUZZ_CHECK(whole == pieces);
        /* A query's scan: inferred types, the last column then the first. */
        int cols[2] = {inferred.nfields - 1, 0};
        int ncols = inferred.nfields > 1 ? 2 : inferred.nfields == 1 ? 1 : -1;
        fuzz__read_ranges(r, path, &o, &eo, &inferred, cols, ncols, small, &pieces);
    }
    df_schema_cleanup(&inferred);
    df_schema_cleanup(&strings);
}

#endif
