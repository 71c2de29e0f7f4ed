/* Tests of the expression evaluator (src/engine/engine_expr_eval*.c and
 * engine_expr_filter.c): a golden table of expression -> type and values over
 * the fixture's six rows; every case is also run on an inner row range, and
 * bool cases through df_expr_filter, which must agree with the evaluation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "expr_fixture.h"

struct golden {
    const char *expr;
    const char *type;
    const char *want; /* six values joined by '|' */
};

#define MAXS "9223372036854775807"
static const struct golden cases[] = {
    /* arithmetic, overflow and division by zero */
    {"v + 1", "int64", "11|-2|null|1|8|null"},
    {"v - id", "int64",
     "9|-5|null|-4|2|"
     "9223372036854775801"},
    {"v * 2", "int64", "20|-6|null|0|14|null"},
    {"id / 2", "float64", "0.5|1|1.5|2|2.5|3"},
    {"v / 0", "float64", "null|null|null|null|null|null"},
    {"v % 0", "int64", "null|null|null|null|null|null"},
    {"f / 0", "float64", "null|null|null|null|null|null"},
    {"v % 4", "int64", "2|-3|null|0|3|3"},
    {"v % -1", "int64", "0|0|null|0|0|0"},
    {"-v", "int64", "-10|3|null|0|-7|-" MAXS},
    {"-(0 - v - 1)", "int64", "11|-2|null|1|8|null"},
    {"v + f", "float64", "11.5|-5.5|null|null|9|1e+300"},
    {"id * 1.5", "float64", "1.5|3|4.5|6|7.5|9"},
    {"f % 2", "float64", "1.5|-0.5|0|null|0|0"},
    {"9223372036854775807 + 1", "int64", "null|null|null|null|null|null"},
    {"9223372036854775808", "float64",
     "9.223372036854776e+18|9.223372036854776e+18|9.223372036854776e+18|"
     "9.223372036854776e+18|9.223372036854776e+18|9.223372036854776e+18"},
    {".5 + 1e3", "float64", "1000.5|1000.5|1000.5|1000.5|1000.5|1000.5"},
    {"null + 1", "int64", "null|null|null|null|null|null"},
    /* precedence */
    {"2 + 3 * 4", "int64", "14|14|14|14|14|14"},
    {"(2 + 3) * 4", "int64", "20|20|20|20|20|20"},
    {"10 - 4 - 3", "int64", "3|3|3|3|3|3"},
    {"2 * 3 % 4", "int64", "2|2|2|2|2|2"},
    {"- id + 1", "int64", "0|-1|-2|-3|-4|-5"},
    {"-2 * -id", "int64", "2|4|6|8|10|12"},
    {"true or false and false", "bool", "true|true|true|true|true|true"},
    {"(true or false) and false", "bool", "false|false|false|false|false|false"},
    {"not true = false", "bool", "true|true|true|true|true|true"},
    {"not v > 3", "bool", "false|true|null|true|false|false"},
    {"id + 1 > 2 * 2", "bool", "false|false|false|true|true|true"},
    {"id between 1 and 2 and b", "bool", "true|false|false|false|false|false"},
    /* comparisons */
    {"v > 3", "bool", "true|false|null|false|true|true"},
    {"3 < v", "bool", "true|false|null|false|true|true"},
    {"v = 0", "bool", "false|false|null|true|false|false"},
    {"v <> 10", "bool", "false|true|null|true|true|true"},
    {"v != 10", "bool", "false|true|null|true|true|true"},
    {"v == 10", "bool", "true|false|null|false|false|false"},
    {"v <= 0", "bool", "false|true|null|true|false|false"},
    {"v >= 7", "bool", "true|false|null|false|true|true"},
    {"f <= 1.5", "bool", "true|true|true|null|false|false"},
    {"v >= f", "bool", "true|false|null|null|true|false"},
    {"s < 'b'", "bool", "true|false|null|true|true|true"},
    {"s = 'abc'", "bool", "true|false|null|false|false|false"},
    {"s >= 'abc'", "bool", "true|true|null|false|false|false"},
    {"d > '2024-01-01'", "bool", "true|false|null|true|false|false"},
    {"'2024-01-01' < d", "bool", "true|false|null|true|false|false"},
    {"d = date '2024-02-29'", "bool", "false|false|null|true|false|false"},
    {"d < ts", "bool", "true|false|null|false|true|false"},
    {"ts >= timestamp '2000-01-01 00:00:00'", "bool", "true|false|null|true|true|true"},
    {"ts < '2000-01-01T00:00:01Z'", "bool", "false|true|null|true|false|true"},
    {"b = true", "bool", "true|false|null|true|false|true"},
    {"b < true", "bool", "false|true|null|false|true|false"},
    {"null = 1", "bool", "null|null|null|null|null|null"},
    /* three-valued logic */
    {"b and v > 0", "bool", "true|false|null|false|false|true"},
    {"b or v > 0", "bool", "true|false|null|true|true|true"},
    {"b and null", "bool", "null|false|null|null|false|null"},
    {"b or null", "bool", "true|null|null|true|null|true"},
    {"null and false", "bool", "false|false|false|false|false|false"},
    {"null or true", "bool", "true|true|true|true|true|true"},
    {"not b", "bool", "false|true|null|false|true|false"},
    {"not null", "bool", "null|null|null|null|null|null"},
    {"v IS NOT NULL AnD b", "bool", "true|false|false|true|false|true"},
    {"null", "bool", "null|null|null|null|null|null"},
    /* is null, in, between */
    {"v is null", "bool", "false|false|true|false|false|false"},
    {"s is not null", "bool", "true|true|false|true|true|true"},
    {"null is null", "bool", "true|true|true|true|true|true"},
    {"v in (10, 0)", "bool", "true|false|null|true|false|false"},
    {"v not in (10, 0)", "bool", "false|true|null|false|true|true"},
    {"v in (10, null)", "bool", "true|null|null|null|null|null"},
    {"s in ('abc', 'ABC')", "bool", "true|false|null|false|true|false"},
    {"v in (id * 10, 7)", "bool", "true|false|null|false|true|false"},
    {"id in (1.0, 3)", "bool", "true|false|true|false|false|false"},
    {"d in ('2024-01-31', '2000-01-01')", "bool", "true|false|null|false|false|true"},
    {"v between 0 and 10", "bool", "true|false|null|true|true|false"},
    {"v not between 0 and 10", "bool", "false|true|null|false|false|true"},
    {"id between 2 and 4", "bool", "false|true|true|true|false|false"},
    {"f between -3 and 1.5", "bool", "true|true|true|null|false|false"},
    {"d between '2000-01-01' and '2024-01-31'", "bool", "true|true|null|false|false|true"},
    /* like */
    {"s like 'a%'", "bool", "true|false|null|false|false|true"},
    {"s like '_bc'", "bool", "true|false|null|false|false|false"},
    {"s like 'h_llo'", "bool", "false|true|null|false|false|false"},
    {"s like '%'", "bool", "true|true|null|true|true|true"},
    {"s not like '%c'", "bool", "false|true|null|true|true|false"},
    {"s like 'a%b%c'", "bool", "true|false|null|false|false|true"},
    {"s like ''", "bool", "false|false|null|true|false|false"},
    {"s like 'abc'", "bool", "true|false|null|false|false|false"},
    {"s like '%l%o'", "bool", "false|true|null|false|false|false"},
    {"s like '__'", "bool", "false|false|null|false|false|false"},
    {"s like null", "bool", "null|null|null|null|null|null"},
    /* case */
    {"case when v > 5 then 'big' when v < 0 then 'neg' else 'small' end", "string",
     "big|neg|small|small|big|big"},
    {"case when v > 5 then 1 end", "int64", "1|null|null|null|1|1"},
    {"case when b then v else f end", "float64", "10|-2.5|0|0|2|9.223372036854776e+18"},
    {"case when id = 1 then null else id end", "int64", "null|2|3|4|5|6"},
    {"CASE WHEN TRUE THEN d END", "date",
     "2024-01-31|2023-12-01|null|2024-02-29|1969-12-31|2000-01-01"},
    {"case when id > 3 then ts else d end", "timestamp",
     "2024-01-31T00:00:00Z|2023-12-01T00:00:00Z|null|2000-01-01T00:00:00Z|"
     "2024-02-29T12:00:00.500000Z|2000-01-01T00:00:00Z"},
    /* casts */
    {"cast(num as int64)", "int64", "12|3|null|null|null|-7"},
    {"cast(num as double)", "float64", "12|3|null|null|1.5|-7"},
    {"cast(f as bigint)", "int64", "1|-2|0|null|2|null"},
    {"cast(-2.9 as integer)", "int64", "-2|-2|-2|-2|-2|-2"},
    {"cast(v as varchar)", "string", "10|-3|null|0|7|" MAXS},
    {"cast(f as string)", "string", "1.5|-2.5|0.0|null|2.0|1e+300"},
    {"cast(b as int64)", "int64", "1|0|null|1|0|1"},
    {"cast(b as string)", "string", "true|false|null|true|false|true"},
    {"cast(v as bool)", "bool", "true|true|null|false|true|true"},
    {"cast(v as float64)", "float64", "10|-3|null|0|7|9.223372036854776e+18"},
    {"cast(ts as date)", "date", "2024-01-31|1969-12-31|null|2000-01-01|2024-02-29|2000-01-01"},
    {"cast(d as string)", "string", "2024-01-31|2023-12-01|null|2024-02-29|1969-12-31|2000-01-01"},
    {"cast(s as date)", "date", "null|null|null|null|null|null"},
    {"cast('2024-03-01' as date)", "date",
     "2024-03-01|2024-03-01|2024-03-01|2024-03-01|2024-03-01|2024-03-01"},
    {"cast('yes' as bool)", "bool", "true|true|true|true|true|true"},
    {"cast(null as string)", "string", "null|null|null|null|null|null"},
    {"cast(1 as timestamp)", NULL, "cannot cast int64 to timestamp"},
    /* functions */
    {"abs(v)", "int64", "10|3|null|0|7|" MAXS},
    {"abs(0 - v - 1)", "int64", "11|2|null|1|8|null"},
    {"abs(f)", "float64", "1.5|2.5|0|null|2|1e+300"},
    {"round(f)", "float64", "2|-3|0|null|2|1e+300"},
    {"round(1.125, 2)", "float64", "1.13|1.13|1.13|1.13|1.13|1.13"},
    {"round(-1.125, 2)", "float64", "-1.13|-1.13|-1.13|-1.13|-1.13|-1.13"},
    {"round(v, -1)", "int64", "10|0|null|0|10|null"},
    {"round(-15, -1)", "int64", "-20|-20|-20|-20|-20|-20"},
    {"round(id)", "int64", "1|2|3|4|5|6"},
    {"floor(f)", "float64", "1|-3|0|null|2|1e+300"},
    {"ceil(f)", "float64", "2|-2|0|null|2|1e+300"},
    {"floor(v)", "int64", "10|-3|null|0|7|" MAXS},
    {"coalesce(v, id * 100)", "int64", "10|-3|300|0|7|" MAXS},
    {"coalesce(f, v, 0)", "float64", "1.5|-2.5|0|0|2|1e+300"},
    {"coalesce(s, 'none')", "string", "abc|h\xc3\xa9llo|none||ABC|a_b%c"},
    {"coalesce(null, d)", "date", "2024-01-31|2023-12-01|null|2024-02-29|1969-12-31|2000-01-01"},
    {"lower(s)", "string", "abc|h\xc3\xa9llo|null||abc|a_b%c"},
    {"UPPER(s)", "string", "ABC|H\xc3\xa9LLO|null||ABC|A_B%C"},
    {"length(s)", "int64", "3|5|null|0|3|5"},
    {"substr(s, 2)", "string", "bc|\xc3\xa9llo|null||BC|_b%c"},
    {"substr(s, 2, 2)", "string", "bc|\xc3\xa9l|null||BC|_b"},
    {"substr(s, 0, 2)", "string", "a|h|null||A|a"},
    {"substr(s, 10)", "string", "||null|||"},
    {"substr(s, 1, -1)", "string", "||null|||"},
    {"contains(s, 'b')", "bool", "true|false|null|false|false|true"},
    {"starts_with(s, 'a')", "bool", "true|false|null|false|false|true"},
    {"ends_with(s, 'llo')", "bool", "false|true|null|false|false|false"},
    {"contains(s, '')", "bool", "true|true|null|true|true|true"},
    {"year(d)", "int64", "2024|2023|null|2024|1969|2000"},
    {"month(d)", "int64", "1|12|null|2|12|1"},
    {"day(d)", "int64", "31|1|null|29|31|1"},
    {"year(ts)", "int64", "2024|1969|null|2000|2024|2000"},
    {"day(ts)", "int64", "31|31|null|1|29|1"},
    /* names */
    {"\"we\"\"ird\" + 1", "int64", "2|3|4|5|6|7"},
    {"id as \"x\"", "int64", "1|2|3|4|5|6"},
};

static char *eval_range(const df_expr *e, const struct df_table *t, int64_t start, int64_t n)
{
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_column *col = NULL;
    int rc = df_expr_eval(e, t, start, n, &ex, &col, &err);
    if (rc != FR_OK)
        fail_msg("eval of '%s' failed: %s", df_expr_name(e), err.message);
    assert_int_equal(col->length, n);
    assert_int_equal(ex.mem_used, 0); /* temporaries released */
    char *s = fixture_render(col);
    df_column_unref(col);
    return s;
}

/* new: fields [from, from+count) of a '|'-separated list, for sub-range checks. */
static char *fields(const char *s, int from, int count)
{
    const char *p = s;
    for (int k = 0; k < from; k++)
        p = strchr(p, '|') + 1;
    const char *q = p;
    for (int k = 0; k < count; k++) {
        const char *bar = strchr(q, '|');
        if (!bar) {
            q += strlen(q);
            break;
        }
        q = k < count - 1 ? bar + 1 : bar;
    }
    return fr_xstrndup(p, (size_t)(q - p));
}

static void check_filter(const df_expr *e, const struct df_table *t, const char *full)
{
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int64_t sel[16] = {99};
    int64_t nsel = 1; /* filter appends after what is there */
    assert_int_equal(df_expr_filter(e, t, 1, 4, &ex, sel, &nsel, &err), FR_OK);
    assert_int_equal(sel[0], 99);
    int64_t want = 1;
    for (int i = 1; i < 5; i++) {
        char *f = fields(full, i, 1);
        if (strcmp(f, "true") == 0) {
            if (want >= nsel || sel[want] != i)
                fail_msg("filter '%s' missed row %d", df_expr_name(e), i);
            want++;
        }
        free(f);
    }
    if (want != nsel)
        fail_msg("filter '%s' selected %lld rows, want %lld", df_expr_name(e), (long long)nsel - 1,
                 (long long)want - 1);
}

static void test_golden(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct golden *g = &cases[k];
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        int rc = df_expr_parse(g->expr, &s, &e, &err);
        if (!g->type) {
            if (rc == FR_OK || !strstr(err.message, g->want))
                fail_msg("'%s': want error '%s', got '%s'", g->expr, g->want, err.message);
            continue;
        }
        if (rc != FR_OK)
            fail_msg("'%s' failed to parse: %s", g->expr, err.message);
        if (strcmp(df_type_name(df_expr_type(e)), g->type) != 0)
            fail_msg("'%s': type %s, want %s", g->expr, df_type_name(df_expr_type(e)), g->type);
        char *got = eval_range(e, t, 0, FIX_ROWS);
        if (strcmp(got, g->want) != 0)
            fail_msg("'%s':\n  got  %s\n  want %s", g->expr, got, g->want);
        char *inner = eval_range(e, t, 1, 4), *want_inner = fields(g->want, 1, 4);
        if (strcmp(inner, want_inner) != 0)
            fail_msg("'%s' on rows 1..4:\n  got  %s\n  want %s", g->expr, inner, want_inner);
        if (df_expr_type(e) == DF_TYPE_BOOL)
            check_filter(e, t, g->want);
        free(got);
        free(inner);
        free(want_inner);
        df_expr_free(e);
    }
    df_schema_cleanup(&s);
    df_table_free(t);
}

/* A bigger table with nulls, on a range starting mid-byte of the bitmap:
 * the column-op-literal fast path must agree with the generic path. */
static void test_filter_fast_path_agrees(void **state)
{
    (void)state;
    struct df_column *v = df_column_new(DF_TYPE_INT64, 0);
    struct df_column *s = df_column_new(DF_TYPE_STRING, 0);
    struct df_column *f = df_column_new(DF_TYPE_FLOAT64, 0);
    for (int i = 0; i < 1000; i++) {
        char buf[16];
        snprintf(buf, sizeof(buf), "id%03d", i % 100);
        if (i % 11 == 0) {
            df_column_append_null(v);
            df_column_append_null(s);
            df_column_append_null(f);
        } else {
            df_column_append_int64(v, (i * 37) % 10);
            df_column_append_string(s, buf, (int64_t)strlen(buf));
            df_column_append_float64(f, (i % 7) * 0.5);
        }
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "v1", v);
    df_table_add(t, "id1", s);
    df_table_add(t, "f1", f);
    struct df_schema sch;
    df_schema_of_table(&sch, t);
    static const char *const pairs[][2] = {
        {"v1 > 3", "v1 > 3 and true"},           {"3 >= v1", "3 >= v1 and true"},
        {"id1 = 'id042'", "not id1 <> 'id042'"}, {"id1 < 'id010'", "id1 < 'id010' or false"},
        {"f1 <= 1.5", "f1 <= 1.5 and true"},     {"v1 != 0", "v1 != 0 and true"},
    };
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int64_t *a = calloc(1000, sizeof(int64_t)), *b = calloc(1000, sizeof(int64_t));
    for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
        df_expr *fast = NULL, *slow = NULL;
        assert_int_equal(df_expr_parse(pairs[k][0], &sch, &fast, &err), FR_OK);
        assert_int_equal(df_expr_parse(pairs[k][1], &sch, &slow, &err), FR_OK);
        int64_t na = 0, nb = 0;
        assert_int_equal(df_expr_filter(fast, t, 13, 700, &ex, a, &na, &err), FR_OK);
        assert_int_equal(df_expr_filter(slow, t, 13, 700, &ex, b, &nb, &err), FR_OK);
        assert_true(na > 0 && na < 700);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, (size_t)na * sizeof(int64_t));
        assert_true(a[0] >= 13 && a[na - 1] < 713);
        df_expr_free(fast);
        df_expr_free(slow);
    }
    /* a direct count for one of them */
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("id1 = 'id042'", &sch, &e, &err), FR_OK);
    int64_t n = 0;
    assert_int_equal(df_expr_filter(e, t, 13, 700, &ex, a, &n, &err), FR_OK);
    int64_t want = 0;
    for (int i = 13; i < 713; i++)
        want += i % 100 == 42 && i % 11 != 0;
    assert_int_equal(n, want);
    df_expr_free(e);
    free(a);
    free(b);
    df_schema_cleanup(&sch);
    df_table_free(t);
}

static void test_filter_rejects_non_bool(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("v + 1", &s, &e, &err), FR_OK);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    int64_t sel[8], n = 0;
    assert_int_equal(df_expr_filter(e, t, 0, 6, &ex, sel, &n, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "bool"));
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

static void test_memory_is_charged(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("(v + 1) * 2 > id", &s, &e, &err), FR_OK);
    struct df_options opts = {0};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_column *out = NULL;
    assert_int_equal(df_expr_eval(e, t, 0, 6, &ex, &out, &err), FR_OK);
    assert_true(ex.mem_peak > 0);
    assert_int_equal(ex.mem_used, 0);
    df_column_unref(out);
    opts.task_memory_limit_bytes = 64; /* smaller than any temporary */
    df_exec_init(&ex, &opts, NULL);
    out = NULL;
    assert_int_equal(df_expr_eval(e, t, 0, 6, &ex, &out, &err), FR_EMEMLIMIT);
    assert_null(out);
    assert_int_equal(ex.mem_used, 0);
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

static void test_bare_column_eval_copies_range(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("s", &s, &e, &err), FR_OK);
    assert_int_equal(df_expr_column_index(e), 3);
    char *got = eval_range(e, t, 2, 3);
    assert_string_equal(got, "null||ABC");
    free(got);
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

static void test_empty_range_and_cancel(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("upper(s) = 'ABC' or v > 3", &s, &e, &err), FR_OK);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct df_column *out = NULL;
    assert_int_equal(df_expr_eval(e, t, 6, 0, &ex, &out, &err), FR_OK);
    assert_int_equal(out->length, 0);
    df_column_unref(out);
    int64_t sel[1];
    int64_t n = 0;
    assert_int_equal(df_expr_filter(e, t, 3, 0, &ex, sel, &n, &err), FR_OK);
    assert_int_equal(n, 0);
    /* a range past the table is refused */
    assert_int_equal(df_expr_eval(e, t, 4, 3, &ex, &out, &err), FR_EINTERNAL);
    atomic_bool cancel;
    atomic_init(&cancel, true);
    df_exec_init(&ex, NULL, &cancel);
    assert_int_equal(df_expr_eval(e, t, 0, 6, &ex, &out, &err), FR_ECANCELLED);
    assert_null(out);
    assert_int_equal(ex.mem_used, 0);
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

/* df_expr_filter_constant settles a predicate from null counts alone, and
 * never disagrees with evaluating it: 1 means every row selected, 0 none. */
static void test_filter_constant(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        int want;
    } known[] = {
        {"id is not null", 1},
        {"id is null", 0},
        {"v is not null", -1},
        {"v is null", -1},
        {"id is not null and v > 3", -1},
        {"id is null and v > 3", 0},
        {"v > 3 or id is not null", 1},
        {"v > 3 or id is null", -1},
        {"id is null or false", 0},
        {"true", 1},
        {"false", 0},
        {"id > 0", -1},
        {"not id is null", -1},
        {"id is null and fail_if(v > 3, 'big')", -1},
        {"id is not null or fail_if(v > 3, 'big')", -1},
        {"id is not null and f is not null", -1},
    };
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        if (df_expr_parse(known[k].expr, &s, &e, &err) != FR_OK)
            fail_msg("'%s' does not parse: %s", known[k].expr, err.message);
        int got = df_expr_filter_constant(e, t);
        if (got != known[k].want)
            fail_msg("'%s': constant %d, want %d", known[k].expr, got, known[k].want);
        int64_t sel[FIX_ROWS], n = 0;
        if (got >= 0) /* (the fail_if cases fail when evaluated, as they must) */
            assert_int_equal(df_expr_filter(e, t, 0, FIX_ROWS, &ex, sel, &n, &err), FR_OK);
        if (got >= 0 && n != (got ? FIX_ROWS : 0))
            fail_msg("'%s': constant %d but the filter selects %lld rows", known[k].expr, got,
                     (long long)n);
        df_expr_free(e);
    }
    df_schema_cleanup(&s);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_filter_fast_path_agrees),
        cmocka_unit_test(test_filter_rejects_non_bool),
        cmocka_unit_test(test_filter_constant),
        cmocka_unit_test(test_memory_is_charged),
        cmocka_unit_test(test_bare_column_eval_copies_range),
        cmocka_unit_test(test_empty_range_and_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
