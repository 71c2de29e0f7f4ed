/* Tests of the JSON readers' bounds (src/engine/engine_ndjson.c,
 * engine_rows.c) and of NUL bytes in strings: NDJSON lines longer than the
 * read buffer, the column limit (FR_MAX_COLUMNS) in NDJSON records and inline
 * rows in time linear in the key count, and a NUL byte that comes out of
 * every writer as \u0000 (never a truncated or invalid document). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"

static char *temp_file(const char *text, size_t n)
{
    const char *dir = getenv("TMPDIR");
    char *path = fr_xasprintf("%s/framed_test_jsonlim_XXXXXX", dir && *dir ? dir : P_tmpdir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

static struct df_table *read_ndjson(const char *path, int64_t target, struct df_schema *schema,
                                    struct fr_error *err)
{
    struct df_options eo;
    memset(&eo, 0, sizeof(eo));
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_exec ex;
    df_exec_init(&ex, &eo, NULL);
    struct df_byte_range *ranges = NULL;
    int n = 0;
    struct df_table *all = NULL;
    if (df_ndjson_infer_schema(path, &o, schema, err) != FR_OK ||
        df_ndjson_split(path, target, &ranges, &n, err) != FR_OK)
        return NULL;
    struct df_table **parts = calloc((size_t)n + 1, sizeof(*parts));
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = df_ndjson_read(path, &ranges[i], &o, schema, NULL, 0, &ex, &parts[i], err) == FR_OK;
    if (ok)
        assert_int_equal(df_table_concat(parts, n, &all, err), FR_OK);
    for (int i = 0; i < n; i++)
        df_table_free(parts[i]);
    free(parts);
    free(ranges);
    return all;
}

/* Lines {"id": i, "s": "<len letters>"} longer than the 1 MiB buffer, read
 * whole and in ranges that cut inside them. */
static void test_ndjson_long_lines(void **state)
{
    (void)state;
    const size_t len = 3u << 20;
    struct fr_buf b;
    fr_buf_init(&b);
    char *field = malloc(len);
    for (int i = 0; i < 3; i++) {
        memset(field, 'a' + i, len);
        fr_buf_printf(&b, "{\"id\": %d, \"s\": \"", i);
        fr_buf_append(&b, field, len);
        fr_buf_puts(&b, "\"}\n");
    }
    char *path = temp_file(b.data, b.len);
    for (int64_t target = 1 << 30; target >= 1000; target /= 1 << 20) {
        struct df_schema s;
        df_schema_init(&s);
        struct fr_error err;
        fr_error_init(&err);
        struct df_table *t = read_ndjson(path, target, &s, &err);
        if (!t)
            fail_msg("%s", err.message);
        assert_int_equal(t->nrows, 3);
        for (int i = 0; i < 3; i++) {
            int64_t n;
            const char *got = df_column_string(t->cols[1], i, &n);
            memset(field, 'a' + i, len);
            assert_int_equal(n, (int64_t)len);
            assert_memory_equal(got, field, len);
        }
        df_table_free(t);
        df_schema_cleanup(&s);
    }
    free(field);
    unlink(path);
    free(path);
    fr_buf_cleanup(&b);
}

/* {"k0": 0, "k1": 1, ...} with n keys. */
static char *wide_object(int n)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '{');
    for (int i = 0; i < n; i++)
        fr_buf_printf(&b, i ? ",\"k%d\":%d" : "\"k%d\":%d", i, i);
    fr_buf_putc(&b, '}');
    return fr_buf_steal(&b, NULL);
}

static void expect_too_many(int rc, const struct fr_error *err)
{
    assert_int_equal(rc, FR_EVALIDATION);
    assert_string_equal(err->kind, "too-many-columns");
    assert_non_null(strstr(err->message, "10000"));
}

/* 1e5 keys in one record: the old inference took quadratic time (44 s for
 * inline rows); now a 422 past FR_MAX_COLUMNS, and the limit itself reads. */
static void test_ndjson_column_limit(void **state)
{
    (void)state;
    char *obj = wide_object(100000);
    char *line = fr_xasprintf("%s\n", obj);
    char *path = temp_file(line, strlen(line));
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_csv_options o;
    df_csv_options_init(&o);
    expect_too_many(df_ndjson_infer_schema(path, &o, &s, &err), &err);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    free(line);
    free(obj);

    obj = wide_object(FR_MAX_COLUMNS);
    line = fr_xasprintf("%s\n%s\n", obj, obj);
    path = temp_file(line, strlen(line));
    df_schema_init(&s);
    fr_error_init(&err);
    struct df_table *t = read_ndjson(path, 1 << 30, &s, &err);
    if (!t)
        fail_msg("%s", err.message);
    assert_int_equal(t->ncols, FR_MAX_COLUMNS);
    assert_int_equal(df_column_int64(t->cols[FR_MAX_COLUMNS - 1], 1), FR_MAX_COLUMNS - 1);
    df_table_free(t);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    free(line);
    free(obj);
}

static void test_rows_column_limit(void **state)
{
    (void)state;
    char *obj = wide_object(100000);
    char *text = fr_xasprintf("[%s]", obj);
    free(obj);
    json_t *rows = json_loads(text, 0, NULL);
    assert_non_null(rows);
    struct df_table *t = NULL;
    struct fr_error err;
    fr_error_init(&err);
    expect_too_many(df_rows_read(rows, NULL, &t, &err), &err);
    assert_null(t);
    json_decref(rows);
    free(text);

    /* keys spread over rows count too: the union of the keys is the schema */
    rows = json_array();
    for (int r = 0; r < 11; r++) {
        json_t *row = json_object();
        for (int i = 0; i < 1000; i++) {
            char key[32];
            snprintf(key, sizeof(key), "r%d_%d", r, i);
            json_object_set_new(row, key, json_integer(i));
        }
        json_array_append_new(rows, row);
    }
    fr_error_init(&err);
    expect_too_many(df_rows_read(rows, NULL, &t, &err), &err);
    json_decref(rows);
}

/* A string with a NUL byte is kept whole and written as \u0000 by the JSON
 * writers, so a jansson reader that allows NUL gets the same string back. */
static void test_nul_in_strings(void **state)
{
    (void)state;
    const char text[] = "s,n\n\"a\0b\",1\nc\0,2\n";
    char *path = temp_file(text, sizeof(text) - 1);
    struct df_schema s;
    df_schema_init(&s);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_csv_infer_schema(path, &o, NULL, &s, &err), FR_OK);
    struct df_byte_range *ranges = NULL;
    int n = 0;
    assert_int_equal(df_csv_split(path, &o, 1 << 30, &ranges, &n, &err), FR_OK);
    struct df_table *t = NULL;
    assert_int_equal(df_csv_read(path, &ranges[0], &o, &s, NULL, -1, &ex, &t, &err), FR_OK);
    assert_int_equal(t->nrows, 2);
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '[');
    df_write_json_rows(t, 0, t->nrows, &b);
    fr_buf_putc(&b, ']');
    assert_non_null(strstr(b.data, "[\"a\\u0000b\",1],[\"c\\u0000\",2]"));
    json_error_t jerr;
    json_t *back = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &jerr);
    assert_non_null(back);
    json_t *v = json_array_get(json_array_get(back, 0), 0);
    assert_int_equal(json_string_length(v), 3);
    assert_memory_equal(json_string_value(v), "a\0b", 3);
    json_decref(back);
    fr_buf_cleanup(&b);
    df_table_free(t);
    free(ranges);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

/* NDJSON with \u0000 in a string reads like the CSV one. */
static void test_nul_in_ndjson(void **state)
{
    (void)state;
    const char *text = "{\"s\": \"a\\u0000b\"}\n";
    char *path = temp_file(text, strlen(text));
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *t = read_ndjson(path, 1 << 30, &s, &err);
    if (!t)
        fail_msg("%s", err.message);
    int64_t n;
    const char *got = df_column_string(t->cols[0], 0, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(got, "a\0b", 3);
    df_table_free(t);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ndjson_long_lines), cmocka_unit_test(test_ndjson_column_limit),
        cmocka_unit_test(test_rows_column_limit), cmocka_unit_test(test_nul_in_strings),
        cmocka_unit_test(test_nul_in_ndjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
