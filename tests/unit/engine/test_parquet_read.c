/* Tests of src/engine/engine_parquet_read.c (and the footer it stands on):
 * files written by DuckDB and Polars read cell by cell equal to DuckDB's
 * reading of them (tests/data/parquet, a .json beside each file), projections and single row
 * groups, refusals, and truncated or corrupted files failing cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "parquet_fixture.h"

static const struct df_options opts = {.morsel_size_rows = 1024,
                                       .task_memory_limit_bytes = 512 << 20};

/* One cell of column c, row i, against DuckDB's value. */
static void check_cell(const struct df_column *c, int64_t i, json_t *want, const char *what)
{
    if (json_is_null(want)) {
        if (df_column_is_valid(c, i))
            fail_msg("%s row %lld: want null", what, (long long)i);
        return;
    }
    if (!df_column_is_valid(c, i))
        fail_msg("%s row %lld: null, want a value", what, (long long)i);
    switch (c->type) {
    case DF_TYPE_INT64:
    case DF_TYPE_TIMESTAMP: {
        long long w = strtoll(json_string_value(want), NULL, 10);
        if (df_column_int64(c, i) != w)
            fail_msg("%s row %lld: %lld, want %lld", what, (long long)i,
                     (long long)df_column_int64(c, i), w);
        break;
    }
    case DF_TYPE_DATE:
        assert_int_equal(df_column_int32(c, i), json_integer_value(want));
        break;
    case DF_TYPE_FLOAT64: {
        double w = json_number_value(want), g = df_column_float64(c, i);
        if (!(fabs(g - w) <= 1e-15 * fmax(1.0, fabs(w))))
            fail_msg("%s row %lld: %.17g, want %.17g", what, (long long)i, g, w);
        break;
    }
    case DF_TYPE_BOOL:
        assert_int_equal(df_column_bool(c, i), json_is_true(want));
        break;
    case DF_TYPE_STRING: {
        int64_t n;
        const char *s = df_column_string(c, i, &n);
        const char *w = json_string_value(want);
        if ((size_t)n != strlen(w) || memcmp(s, w, (size_t)n) != 0)
            fail_msg("%s row %lld: '%.*s', want '%s'", what, (long long)i, (int)n, s, w);
        break;
    }
    default:
        fail_msg("%s: unexpected type", what);
    }
}

/* t (whose columns are `cols` of the expectation, from row `row0`) equals it. */
static void check_table(const struct df_table *t, json_t *exp, const int *cols, int ncols,
                        int64_t row0, const char *file)
{
    json_t *rows = json_object_get(exp, "rows");
    json_t *columns = json_object_get(exp, "columns");
    assert_int_equal(t->ncols, ncols);
    for (int j = 0; j < ncols; j++) {
        json_t *col = json_array_get(columns, (size_t)cols[j]);
        const char *name = json_string_value(json_object_get(col, "name"));
        char what[256];
        snprintf(what, sizeof(what), "%s column %s", file, name);
        assert_string_equal(t->names[j], name);
        assert_string_equal(df_type_name(t->cols[j]->type),
                            json_string_value(json_object_get(col, "type")));
        assert_int_equal(t->cols[j]->length, t->nrows);
        for (int64_t i = 0; i < t->nrows; i++)
            check_cell(t->cols[j], i,
                       json_array_get(json_array_get(rows, (size_t)(row0 + i)), (size_t)cols[j]),
                       what);
    }
}

static json_t *load_expect(const char *json)
{
    char *path = fixture_path(json);
    json_error_t jerr;
    json_t *exp = json_load_file(path, 0, &jerr);
    if (!exp)
        fail_msg("%s: %s", path, jerr.text);
    free(path);
    return exp;
}

/* Reads file whole, then row group by row group with the columns reversed,
 * and compares both with the expectation. */
static void check_fixture(const char *file, const char *json)
{
    json_t *exp = load_expect(json);
    char *path = fixture_path(file);
    struct df_file_source fs;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_file_source_open(&fs, path, &err), FR_OK);
    df_parquet *pq = NULL;
    if (df_parquet_open(&fs.base, &pq, &err) != FR_OK)
        fail_msg("%s: %s", file, err.message);
    int64_t nrows = (int64_t)json_array_size(json_object_get(exp, "rows"));
    assert_int_equal(df_parquet_num_rows(pq), nrows);
    int ncols = (int)json_array_size(json_object_get(exp, "columns"));
    assert_int_equal(df_parquet_schema(pq)->nfields, ncols);
    int cols[64], rev[64];
    for (int j = 0; j < ncols; j++) {
        cols[j] = j;
        rev[j] = ncols - 1 - j;
    }
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table *t = NULL;
    if (df_parquet_read(pq, 0, df_parquet_num_row_groups(pq), NULL, -1, &ex, &t, &err) != FR_OK)
        fail_msg("%s: %s", file, err.message);
    assert_int_equal(t->nrows, nrows);
    check_table(t, exp, cols, ncols, 0, file);
    if (t->nrows > 0)
        assert_true(ex.mem_used >= t->nrows); /* the table stays charged */
    df_table_free(t);
    int64_t row0 = 0;
    for (int g = 0; g < df_parquet_num_row_groups(pq); g++) {
        struct df_parquet_row_group info;
        df_parquet_row_group_info(pq, g, &info);
        assert_true(info.start >= 4 && info.end > info.start && info.end <= fs.base.size);
        assert_int_equal(df_parquet_row_group_bytes(pq, g, NULL, -1), info.compressed_bytes);
        if (df_parquet_read(pq, g, 1, rev, ncols, &ex, &t, &err) != FR_OK)
            fail_msg("%s row group %d: %s", file, g, err.message);
        assert_int_equal(t->nrows, info.num_rows);
        check_table(t, exp, rev, ncols, row0, file);
        row0 += t->nrows;
        df_table_free(t);
    }
    assert_int_equal(row0, nrows);
    df_parquet_free(pq);
    df_file_source_close(&fs);
    free(path);
    json_decref(exp);
}

static void test_duckdb_types_every_codec_and_version(void **state)
{
    (void)state;
    static const char *const files[] = {"types_uncompressed_v1.parquet", "types_snappy_v1.parquet",
                                        "types_gzip_v1.parquet",         "types_zstd_v1.parquet",
                                        "types_lz4_v1.parquet",          "types_snappy_v2.parquet",
                                        "types_zstd_v2.parquet"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        check_fixture(files[i], "types.json");
}

static void test_row_groups_fallback_required_polars(void **state)
{
    (void)state;
    check_fixture("row_groups.parquet", "row_groups.json");
    check_fixture("dict_fallback.parquet", "dict_fallback.json");
    check_fixture("dict_fallback_v2.parquet", "dict_fallback.json");
    check_fixture("required.parquet", "required.json");
    check_fixture("polars_zstd.parquet", "polars_zstd.json");
    check_fixture("empty.parquet", "empty.json");
    check_fixture("nulls_v1.parquet", "nulls.json");
    check_fixture("nulls_v2.parquet", "nulls.json");
}

static void test_nested_refused_naming_the_column(void **state)
{
    (void)state;
    static const char *const files[][2] = {{"nested_struct.parquet", "st"},
                                           {"nested_list.parquet", "li"}};
    for (int i = 0; i < 2; i++) {
        char *path = fixture_path(files[i][0]);
        struct df_schema s;
        df_schema_init(&s);
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(df_parquet_file_schema(path, &s, NULL, &err), FR_EVALIDATION);
        assert_string_equal(err.kind, "unsupported-parquet");
        assert_string_equal(err.field, files[i][1]);
        assert_non_null(strstr(err.message, files[i][1]));
        df_schema_cleanup(&s);
        free(path);
    }
}

static void test_file_schema_and_validate(void **state)
{
    (void)state;
    char *path = fixture_path("row_groups.parquet");
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    int64_t rows = -1;
    assert_int_equal(df_parquet_file_schema(path, &s, &rows, &err), FR_OK);
    assert_int_equal(rows, 4500);
    assert_int_equal(s.nfields, 5);
    assert_string_equal(s.fields[3].name, "d");
    assert_int_equal(s.fields[3].type, DF_TYPE_DATE);
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    assert_int_equal(df_parquet_file_validate(path, &ex, &err), FR_OK);
    assert_int_equal(ex.mem_used, 0);
    df_schema_cleanup(&s);
    free(path);
}

static void test_statistics(void **state)
{
    (void)state;
    char *path = fixture_path("row_groups.parquet");
    struct df_file_source fs;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_file_source_open(&fs, path, &err), FR_OK);
    df_parquet *pq = NULL;
    assert_int_equal(df_parquet_open(&fs.base, &pq, &err), FR_OK);
    assert_int_equal(df_parquet_num_row_groups(pq), 3);
    struct df_parquet_stats st;
    /* i64 = i, null when i % 7 == 0: row group 1 holds 2048..4095. */
    df_parquet_column_stats(pq, 1, 0, &st);
    assert_true(st.has_min_max);
    assert_int_equal(st.min.i, 2048 + (2048 % 7 == 0));
    assert_int_equal(st.max.i, 4094); /* 4095 = 7 * 585 is null */
    assert_int_equal(st.null_count, 293);
    df_parquet_column_stats(pq, 0, 1, &st); /* f64 = (i % 100) / 4 */
    assert_true(st.has_min_max);
    assert_true(st.min.f == 0.0 && st.max.f == 24.75);
    df_parquet_column_stats(pq, 0, 3, &st); /* d: 2020-01-01 + i % 1000 */
    assert_true(st.has_min_max);
    assert_int_equal(st.min.i, df_ymd_to_days(2020, 1, 1));
    assert_int_equal(st.max.i, df_ymd_to_days(2020, 1, 1) + 999);
    df_parquet_column_stats(pq, 0, 2, &st); /* s: 'g' || (i % 37) */
    assert_true(st.has_min_max);
    assert_int_equal(st.min.len, 2);
    assert_memory_equal(st.min.s, "g0", 2);
    assert_memory_equal(st.max.s, "g9", 2);
    df_parquet_free(pq);
    df_file_source_close(&fs);
    free(path);
}

/* Opens and reads everything of bytes; returns the status; never crashes. */
static int read_all(struct mem_source *m, struct fr_error *err)
{
    df_parquet *pq = NULL;
    int rc = df_parquet_open(&m->base, &pq, err);
    if (rc != FR_OK)
        return rc;
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    for (int g = 0; rc == FR_OK && g < df_parquet_num_row_groups(pq); g++) {
        struct df_table *t = NULL;
        rc = df_parquet_read(pq, g, 1, NULL, -1, &ex, &t, err);
        if (rc == FR_OK)
            assert_int_equal(t->nrows, pq ? df_parquet_row_group_bytes(pq, g, NULL, 0) * 0 +
                                                t->cols[0]->length
                                          : 0);
        df_table_free(t);
    }
    df_parquet_free(pq);
    return rc;
}

static void test_truncated_files(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *b = fixture_bytes("types_snappy_v2.parquet", &len);
    assert_non_null(b);
    /* Cut short: the footer is gone, open fails. */
    for (size_t cut = 0; cut < len; cut += cut < 64 ? 1 : 97) {
        struct mem_source m;
        mem_source_init(&m, b, cut, "t.parquet");
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(read_all(&m, &err), FR_EDATA);
        assert_non_null(strstr(err.message, "t.parquet"));
    }
    /* Missing bytes behind a valid footer: the read fails naming where. */
    int64_t data_end =
        (int64_t)len - 8 -
        (int64_t)(b[len - 8] | b[len - 7] << 8 | b[len - 6] << 16 | b[len - 5] << 24);
    for (int64_t lo = 4; lo < data_end; lo += 211) {
        struct mem_source m;
        mem_source_init(&m, b, len, "t.parquet");
        m.hole_lo = lo;
        m.hole_hi = data_end;
        struct fr_error err;
        fr_error_init(&err);
        int rc = read_all(&m, &err);
        if (rc == FR_OK)
            continue; /* the hole fell between chunks that were all read before it */
        if (rc != FR_EDATA || !strstr(err.message, "row group 0, column '"))
            fail_msg("hole at %lld: %d %s", (long long)lo, rc, err.message);
        assert_string_equal(err.file, "t.parquet");
        assert_non_null(strstr(err.message, "row group 0, column '"));
        assert_true(err.field[0] != '\0');
    }
    free(b);
}

static void test_corrupted_bytes(void **state)
{
    (void)state;
    static const char *const files[] = {"types_zstd_v2.parquet", "dict_fallback.parquet",
                                        "required.parquet"};
    for (int f = 0; f < 3; f++) {
        size_t len = 0;
        uint8_t *orig = fixture_bytes(files[f], &len);
        uint8_t *b = malloc(len);
        int failed = 0;
        for (size_t pos = 0; pos < len; pos += 1 + pos % 13) {
            static const uint8_t xors[] = {0xff, 0x01, 0x80, 0x7f};
            memcpy(b, orig, len);
            b[pos] ^= xors[pos % 4];
            struct mem_source m;
            mem_source_init(&m, b, len, files[f]);
            struct fr_error err;
            fr_error_init(&err);
            int rc = read_all(&m, &err);
            assert_true(rc == FR_OK || rc == FR_EDATA || rc == FR_EVALIDATION ||
                        rc == FR_ENOSPACE || rc == FR_EMEMLIMIT);
            if (rc != FR_OK) {
                failed++;
                assert_non_null(strstr(err.message, files[f]));
            }
        }
        assert_true(failed > 0);
        free(b);
        free(orig);
    }
}

/* A process-wide account (df_exec.shared_add) with a budget of 20000. */
static int64_t budget_used;
static int64_t budget_add(void *arg, int64_t bytes, int64_t *budget)
{
    (void)arg;
    budget_used += bytes;
    *budget = 20000;
    return budget_used > 20000 ? budget_used - 20000 : 0;
}

/* The memory limit, the process's budget and the cancel flag stop a read,
 * and leave nothing charged; the budget's error keeps its own words (no
 * file, row group and column in front: it is not the file's fault). */
static void test_memory_limit_and_cancel(void **state)
{
    (void)state;
    char *path = fixture_path("dict_fallback.parquet");
    struct df_file_source fs;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_file_source_open(&fs, path, &err), FR_OK);
    df_parquet *pq = NULL;
    assert_int_equal(df_parquet_open(&fs.base, &pq, &err), FR_OK);
    const struct df_options small = {.morsel_size_rows = 1024, .task_memory_limit_bytes = 20000};
    struct df_exec ex;
    df_exec_init(&ex, &small, NULL);
    struct df_table *t = NULL;
    assert_int_equal(df_parquet_read(pq, 0, 2, NULL, -1, &ex, &t, &err), FR_EMEMLIMIT);
    assert_null(t);
    assert_int_equal(ex.mem_used, 0);
    df_exec_init(&ex, &opts, NULL);
    ex.shared_add = budget_add;
    fr_error_init(&err);
    assert_int_equal(df_parquet_read(pq, 0, 2, NULL, -1, &ex, &t, &err), FR_ENOSPACE);
    assert_null(t);
    assert_string_equal(err.kind, "memory-budget-exceeded");
    assert_true(strncmp(err.message, "a task's working memory", 23) == 0);
    assert_string_equal(err.file, "");
    assert_int_equal(ex.mem_used, 0);
    assert_int_equal(budget_used, 0);
    atomic_bool cancel = true;
    df_exec_init(&ex, &opts, &cancel);
    assert_int_equal(df_parquet_read(pq, 0, 2, NULL, -1, &ex, &t, &err), FR_ECANCELLED);
    assert_null(t);
    assert_int_equal(ex.mem_used, 0);
    df_parquet_free(pq);
    df_file_source_close(&fs);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duckdb_types_every_codec_and_version),
        cmocka_unit_test(test_row_groups_fallback_required_polars),
        cmocka_unit_test(test_nested_refused_naming_the_column),
        cmocka_unit_test(test_file_schema_and_validate),
        cmocka_unit_test(test_statistics),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_corrupted_bytes),
        cmocka_unit_test(test_memory_limit_and_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
