/* Tests of src/engine/engine_ndjson.c and engine_rows.c: inference, reads in
 * one and many ranges, type errors, nested values, inline rows. */
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

static char *temp_file(const char *text)
{
    const char *dir = getenv("TMPDIR");
    char *path = fr_xasprintf("%s/framed_test_ndjson_XXXXXX", dir && *dir ? dir : P_tmpdir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

static char *render(const struct df_table *t)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < t->ncols; i++)
        fr_buf_printf(&b, "%s:%s ", t->names[i], df_type_name(t->cols[i]->type));
    fr_buf_putc(&b, '\n');
    df_write_ndjson_rows(t, 0, t->nrows, &b);
    return fr_buf_steal(&b, NULL);
}

/* Reads a whole file cut into ranges of target bytes (new table or NULL). */
static struct df_table *read_ndjson(const char *path, const struct df_csv_options *o,
                                    const struct df_schema *schema, int64_t target,
                                    struct df_exec *ex, struct fr_error *err)
{
    struct df_byte_range *ranges = NULL;
    int n = 0;
    if (df_ndjson_split(path, target, &ranges, &n, err) != FR_OK)
        return NULL;
    struct df_table **parts = calloc((size_t)n, sizeof(*parts)), *all = NULL;
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = df_ndjson_read(path, &ranges[i], o, schema, NULL, 0, ex, &parts[i], err) == FR_OK;
    if (ok)
        assert_int_equal(df_table_concat(parts, n, &all, err), FR_OK);
    for (int i = 0; i < n; i++)
        df_table_free(parts[i]);
    free(parts);
    free(ranges);
    return all;
}

static const char *sample =
    "{\"id\":1,\"x\":1.5,\"ok\":true,\"name\":\"a\",\"day\":\"2024-01-31\",\"obj\":{\"k\":[1,2]}}\n"
    "\n"
    "{\"x\":2,\"id\":2,\"name\":\"b\\nc\",\"day\":\"2024-02-01\",\"late\":\"2024-01-01T00:00:00Z\"}"
    "\r\n"
    "{\"id\":3,\"ok\":false,\"name\":null,\"obj\":[],\"mixed\":1}\n"
    "{\"id\":4,\"x\":-1e300,\"mixed\":\"one\",\"day\":null}";

static void test_infer_and_read(void **state)
{
    (void)state;
    char *path = temp_file(sample);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_ndjson_infer_schema(path, &o, &s, &err), FR_OK);
    struct df_options eo = {.morsel_size_rows = 2};
    struct df_exec ex;
    df_exec_init(&ex, &eo, NULL);
    struct df_table *whole = read_ndjson(path, &o, &s, 1 << 20, &ex, &err);
    assert_non_null(whole);
    char *got = render(whole);
    assert_string_equal(
        got, "id:int64 x:float64 ok:bool name:string day:date obj:string late:timestamp "
             "mixed:string \n"
             "{\"id\":1,\"x\":1.5,\"ok\":true,\"name\":\"a\",\"day\":\"2024-01-31\","
             "\"obj\":\"{\\\"k\\\":[1,2]}\",\"late\":null,\"mixed\":null}\n"
             "{\"id\":2,\"x\":2.0,\"ok\":null,\"name\":\"b\\nc\",\"day\":\"2024-02-01\","
             "\"obj\":null,\"late\":\"2024-01-01T00:00:00Z\",\"mixed\":null}\n"
             "{\"id\":3,\"x\":null,\"ok\":false,\"name\":null,\"day\":null,\"obj\":\"[]\","
             "\"late\":null,\"mixed\":\"1\"}\n"
             "{\"id\":4,\"x\":-1e+300,\"ok\":null,\"name\":null,\"day\":null,\"obj\":null,"
             "\"late\":null,\"mixed\":\"one\"}\n");
    for (int64_t target = 1; target < 40; target += 13) {
        struct df_table *pieces = read_ndjson(path, &o, &s, target, &ex, &err);
        assert_non_null(pieces);
        char *again = render(pieces);
        assert_string_equal(again, got);
        free(again);
        df_table_free(pieces);
    }
    free(got);
    df_table_free(whole);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

/* A memory source handing out at most 3 bytes per read, with no size. */
struct mem_source {
    struct df_source base;
    const char *data;
    size_t len;
};

static int mem_read(struct df_source *base, int64_t off, char *buf, size_t len, size_t *got,
                    struct fr_error *err)
{
    (void)err;
    struct mem_source *m = (struct mem_source *)base;
    size_t n = off >= (int64_t)m->len ? 0 : m->len - (size_t)off;
    n = n < len ? n : len;
    n = n < 3 ? n : 3;
    memcpy(buf, m->data + off, n);
    *got = n;
    return FR_OK;
}

/* The NDJSON reader reads a caller's source as it reads the file. */
static void test_byte_source(void **state)
{
    (void)state;
    char *path = temp_file(sample);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_ndjson_infer_schema(path, &o, &s, &err), FR_OK);
    struct df_options eo = {.morsel_size_rows = 2};
    struct df_exec ex;
    df_exec_init(&ex, &eo, NULL);
    struct df_table *want = read_ndjson(path, &o, &s, 1 << 20, &ex, &err), *got = NULL;
    struct mem_source m = {{mem_read, -1, "mem.ndjson"}, sample, strlen(sample)};
    struct df_byte_range all = {0, (int64_t)strlen(sample), 1};
    assert_int_equal(df_ndjson_read_source(&m.base, &all, &o, &s, NULL, 0, &ex, &got, &err), FR_OK);
    char *a = render(want), *b = render(got);
    assert_string_equal(a, b);
    free(a);
    free(b);
    df_table_free(want);
    df_table_free(got);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

static void test_type_errors(void **state)
{
    (void)state;
    char *path = temp_file("{\"a\":1,\"b\":\"x\"}\n{\"a\":2}\n\n{\"a\":\"three\",\"b\":\"y\"}\n");
    struct df_csv_options o;
    df_csv_options_init(&o);
    o.sample_rows = 2;
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_ndjson_infer_schema(path, &o, &s, &err), FR_OK);
    assert_int_equal(s.fields[0].type, DF_TYPE_INT64);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    assert_null(read_ndjson(path, &o, &s, 1 << 20, &ex, &err));
    assert_int_equal(err.status, FR_EDATA);
    assert_int_equal(err.line, 4);
    assert_string_equal(err.field, "a");
    assert_non_null(strstr(err.message, "line 4, column 1 ('a'): \"three\" is not an int64"));
    o.on_error_null = true;
    struct df_table *t = read_ndjson(path, &o, &s, 1 << 20, &ex, &err);
    assert_non_null(t);
    assert_int_equal(t->nrows, 3);
    assert_int_equal(ex.null_errors, 1);
    assert_false(df_column_is_valid(t->cols[0], 2));
    df_table_free(t);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    /* a line that is not an object */
    path = temp_file("{\"a\":1}\n[1,2]\n");
    df_schema_init(&s);
    o.on_error_null = false;
    assert_int_equal(df_ndjson_infer_schema(path, &o, &s, &err), FR_EDATA);
    assert_int_equal(err.line, 2);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    assert_non_null(j);
    return j;
}

static void test_rows(void **state)
{
    (void)state;
    json_t *rows = parse("[{\"b\":1,\"a\":\"2024-01-31\"},{\"c\":true,\"b\":2.5},"
                         "{\"a\":null,\"d\":{\"x\":1}}]");
    struct df_table *t = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_rows_read(rows, NULL, &t, &err), FR_OK);
    char *got = render(t);
    assert_string_equal(got, "b:float64 a:string c:bool d:string \n"
                             "{\"b\":1.0,\"a\":\"2024-01-31\",\"c\":null,\"d\":null}\n"
                             "{\"b\":2.5,\"a\":null,\"c\":true,\"d\":null}\n"
                             "{\"b\":null,\"a\":null,\"c\":null,\"d\":\"{\\\"x\\\":1}\"}\n");
    free(got);
    df_table_free(t);
    struct df_schema hints;
    df_schema_init(&hints);
    df_schema_add(&hints, "a", DF_TYPE_DATE);
    assert_int_equal(df_rows_read(rows, &hints, &t, &err), FR_OK);
    assert_int_equal(t->cols[1]->type, DF_TYPE_DATE);
    assert_int_equal(df_column_int32(t->cols[1], 0), 19753);
    df_table_free(t);
    json_decref(rows);
    rows = parse("[{\"a\":\"2024-01-31\"},{\"a\":\"soon\"}]");
    assert_int_equal(df_rows_read(rows, &hints, &t, &err), FR_EINVAL);
    assert_null(t);
    assert_string_equal(err.field, "a");
    assert_int_equal(err.line, 2);
    json_decref(rows);
    rows = parse("[{\"a\":1}, 2]");
    assert_int_equal(df_rows_read(rows, NULL, &t, &err), FR_EINVAL);
    json_decref(rows);
    rows = parse("{\"a\":1}");
    assert_int_equal(df_rows_read(rows, NULL, &t, &err), FR_EINVAL);
    json_decref(rows);
    rows = parse("[]");
    assert_int_equal(df_rows_read(rows, NULL, &t, &err), FR_OK);
    assert_int_equal(t->ncols, 0);
    df_table_free(t);
    json_decref(rows);
    df_schema_cleanup(&hints);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infer_and_read),
        cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_byte_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
