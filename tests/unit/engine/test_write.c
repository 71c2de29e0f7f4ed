/* Tests of src/engine/engine_write.c: JSON, CSV and NDJSON rendering, float
 * formatting (shortest round trip) and string escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_io_int.h"

static void test_float_format(void **state)
{
    (void)state;
    const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {1.0 / 3, "0.3333333333333333"},
        {1.0, "1.0"},
        {-0.0, "-0.0"},
        {1e308, "1e+308"},
        {5e-324, "5e-324"},
        {100.0, "100.0"},
        {1e21, "1e+21"},
        {123456.789, "123456.789"},
        {0.30000000000000004, "0.30000000000000004"},
        {-2.5, "-2.5"},
    };
    char out[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        df__format_float64(cases[i].v, out);
        assert_string_equal(out, cases[i].text);
    }
    assert_int_equal(df__format_float64(NAN, out), 0);
    assert_int_equal(df__format_float64(-INFINITY, out), 0);
    /* every double reads back: tests/unit/common/test_json.c (fr_format_double) */
}

static struct df_table *table_of_all_types(void)
{
    struct df_table *t = df_table_new();
    struct df_column *i = df_column_new(DF_TYPE_INT64, 0), *f = df_column_new(DF_TYPE_FLOAT64, 0),
                     *s = df_column_new(DF_TYPE_STRING, 0), *b = df_column_new(DF_TYPE_BOOL, 0),
                     *d = df_column_new(DF_TYPE_DATE, 0), *ts = df_column_new(DF_TYPE_TIMESTAMP, 0);
    df_column_append_int64(i, INT64_MIN);
    df_column_append_null(i);
    df_column_append_int64(i, 42);
    df_column_append_float64(f, 2.5);
    df_column_append_float64(f, NAN);
    df_column_append_null(f);
    df_column_append_string(s, "a,\"b\"", 5);
    df_column_append_string(s, "", 0);
    static const char odd[] = "tab\tnl\nbs\\ \x01 é \xff";
    df_column_append_string(s, odd, sizeof(odd) - 1);
    df_column_append_bool(b, true);
    df_column_append_null(b);
    df_column_append_bool(b, false);
    df_column_append_int32(d, 19753);
    df_column_append_null(d);
    df_column_append_int32(d, INT32_MAX);
    df_column_append_int64(ts, 1706704496000000LL);
    df_column_append_int64(ts, 1500000);
    df_column_append_null(ts);
    df_table_add(t, "i", i);
    df_table_add(t, "f", f);
    df_table_add(t, "s \"q\"", s);
    df_table_add(t, "b", b);
    df_table_add(t, "d", d);
    df_table_add(t, "ts", ts);
    return t;
}

static void test_json_rows(void **state)
{
    (void)state;
    struct df_table *t = table_of_all_types();
    struct fr_buf b;
    fr_buf_init(&b);
    df_write_json_rows(t, 0, 3, &b);
    assert_string_equal(b.data,
                        "[-9223372036854775808,2.5,\"a,\\\"b\\\"\",true,\"2024-01-31\","
                        "\"2024-01-31T12:34:56Z\"],"
                        "[null,null,\"\",null,null,\"1970-01-01T00:00:01.500000Z\"],"
                        "[42,null,\"tab\\tnl\\nbs\\\\ \\u0001 é \\ufffd\",false,2147483647,null]");
    /* every output parses as JSON */
    char *wrapped = fr_xasprintf("[%s]", b.data);
    json_error_t jerr;
    json_t *j = json_loads(wrapped, 0, &jerr);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), 3);
    json_decref(j);
    free(wrapped);
    fr_buf_cleanup(&b);
    df_write_json_rows(t, 1, 1, &b);
    assert_string_equal(b.data, "[null,null,\"\",null,null,\"1970-01-01T00:00:01.500000Z\"]");
    fr_buf_cleanup(&b);
    df_write_ndjson_rows(t, 2, 1, &b);
    assert_string_equal(b.data, "{\"i\":42,\"f\":null,\"s \\\"q\\\"\":\"tab\\tnl\\nbs\\\\ "
                                "\\u0001 é \\ufffd\",\"b\":false,\"d\":2147483647,\"ts\":null}\n");
    fr_buf_cleanup(&b);
    df_table_free(t);
}

static void test_csv_rows(void **state)
{
    (void)state;
    struct df_table *t = table_of_all_types();
    struct fr_buf b;
    fr_buf_init(&b);
    df_write_csv_header(t, &b);
    df_write_csv_rows(t, 0, 2, &b);
    assert_string_equal(b.data, "i,f,\"s \"\"q\"\"\",b,d,ts\n"
                                "-9223372036854775808,2.5,\"a,\"\"b\"\"\",true,2024-01-31,"
                                "2024-01-31T12:34:56Z\n"
                                ",nan,\"\",,,1970-01-01T00:00:01.500000Z\n");
    fr_buf_cleanup(&b);
    struct df_table *u = df_table_new();
    struct df_column *s = df_column_new(DF_TYPE_STRING, 0);
    const char *vals[] = {" lead", "trail ", "cr\rx", "plain", "in side"};
    for (int k = 0; k < 5; k++)
        df_column_append_string(s, vals[k], (int64_t)strlen(vals[k]));
    df_table_add(u, "v", s);
    df_write_csv_rows(u, 0, 5, &b);
    assert_string_equal(b.data, "\" lead\"\n\"trail \"\n\"cr\rx\"\nplain\nin side\n");
    fr_buf_cleanup(&b);
    df_table_free(u);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_format),
        cmocka_unit_test(test_json_rows),
        cmocka_unit_test(test_csv_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
