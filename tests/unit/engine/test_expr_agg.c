/* Tests of aggregate-item parsing (src/engine/engine_expr_agg.c): the calls
 * cut out of an item, their bound arguments, the post expression over the
 * __aggN results, names, result types and every error kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static struct df_schema input_schema(void)
{
    struct df_schema s;
    df_schema_init(&s);
    df_schema_add(&s, "id1", DF_TYPE_STRING);
    df_schema_add(&s, "v1", DF_TYPE_INT64);
    df_schema_add(&s, "v2", DF_TYPE_INT64);
    df_schema_add(&s, "v3", DF_TYPE_FLOAT64);
    df_schema_add(&s, "flag", DF_TYPE_BOOL);
    df_schema_add(&s, "d", DF_TYPE_DATE);
    return s;
}

struct good {
    const char *item;
    const char *name;
    df_type post_type;
    int ncalls;
    enum df_agg_func funcs[3];
    int arg_cols[3]; /* column index of a bare-column argument, -1 for none/other */
};

static const struct good good_cases[] = {
    {"max(v1) - min(v2) as range_v2",
     "range_v2",
     DF_TYPE_INT64,
     2,
     {DF_AGG_MAX, DF_AGG_MIN},
     {1, 2}},
    {"count(*)", "count(*)", DF_TYPE_INT64, 1, {DF_AGG_COUNT_STAR}, {-1}},
    {"COUNT( * )", "COUNT( * )", DF_TYPE_INT64, 1, {DF_AGG_COUNT_STAR}, {-1}},
    {"avg(v3)", "avg(v3)", DF_TYPE_FLOAT64, 1, {DF_AGG_MEAN}, {3}},
    {"mean(v1)", "mean(v1)", DF_TYPE_FLOAT64, 1, {DF_AGG_MEAN}, {1}},
    {"  sum(v1)  ", "sum(v1)", DF_TYPE_INT64, 1, {DF_AGG_SUM}, {1}},
    {"sum(v3) as total", "total", DF_TYPE_FLOAT64, 1, {DF_AGG_SUM}, {3}},
    {"sum(v1) as \"Total Sum\"", "Total Sum", DF_TYPE_INT64, 1, {DF_AGG_SUM}, {1}},
    {"count(v1)", "count(v1)", DF_TYPE_INT64, 1, {DF_AGG_COUNT}, {1}},
    {"count(distinct id1)", "count(distinct id1)", DF_TYPE_INT64, 1, {DF_AGG_COUNT_DISTINCT}, {0}},
    {"count_distinct(id1)", "count_distinct(id1)", DF_TYPE_INT64, 1, {DF_AGG_COUNT_DISTINCT}, {0}},
    {"min(id1)", "min(id1)", DF_TYPE_STRING, 1, {DF_AGG_MIN}, {0}},
    {"max(d)", "max(d)", DF_TYPE_DATE, 1, {DF_AGG_MAX}, {5}},
    {"max(flag)", "max(flag)", DF_TYPE_BOOL, 1, {DF_AGG_MAX}, {4}},
    {"first(id1)", "first(id1)", DF_TYPE_STRING, 1, {DF_AGG_FIRST}, {0}},
    {"median(v1)", "median(v1)", DF_TYPE_FLOAT64, 1, {DF_AGG_MEDIAN}, {1}},
    {"stddev(v3)", "stddev(v3)", DF_TYPE_FLOAT64, 1, {DF_AGG_STDDEV}, {3}},
    {"corr(v1, v3)", "corr(v1, v3)", DF_TYPE_FLOAT64, 1, {DF_AGG_CORR}, {1}},
    {"sum(v1 * 2) / count(*) as x",
     "x",
     DF_TYPE_FLOAT64,
     2,
     {DF_AGG_SUM, DF_AGG_COUNT_STAR},
     {-1, -1}},
    {"count(*) + 1 as n1", "n1", DF_TYPE_INT64, 1, {DF_AGG_COUNT_STAR}, {-1}},
    {"sum(v1) + sum(v2) + max(v3)",
     "sum(v1) + sum(v2) + max(v3)",
     DF_TYPE_FLOAT64,
     3,
     {DF_AGG_SUM, DF_AGG_SUM, DF_AGG_MAX},
     {1, 2, 3}},
    {"coalesce(max(v1), 0)", "coalesce(max(v1), 0)", DF_TYPE_INT64, 1, {DF_AGG_MAX}, {1}},
    {"case when count(*) > 10 then 'many' else 'few' end as size",
     "size",
     DF_TYPE_STRING,
     1,
     {DF_AGG_COUNT_STAR},
     {-1}},
    {"sum(case when flag then 1 else 0 end)",
     "sum(case when flag then 1 else 0 end)",
     DF_TYPE_INT64,
     1,
     {DF_AGG_SUM},
     {-1}},
};

static void test_items(void **state)
{
    (void)state;
    struct df_schema s = input_schema();
    for (size_t k = 0; k < sizeof(good_cases) / sizeof(good_cases[0]); k++) {
        const struct good *g = &good_cases[k];
        struct fr_error err;
        fr_error_init(&err);
        struct df_agg_item it;
        if (df_agg_item_parse(g->item, &s, &it, &err) != FR_OK)
            fail_msg("'%s': %s", g->item, err.message);
        if (strcmp(it.name, g->name) != 0)
            fail_msg("'%s': name '%s', want '%s'", g->item, it.name, g->name);
        assert_int_equal(it.ncalls, g->ncalls);
        if (df_expr_type(it.post) != g->post_type)
            fail_msg("'%s': post type %s", g->item, df_type_name(df_expr_type(it.post)));
        for (int i = 0; i < it.ncalls; i++) {
            assert_int_equal(it.calls[i].func, g->funcs[i]);
            if (g->funcs[i] == DF_AGG_COUNT_STAR) {
                assert_null(it.calls[i].arg);
                continue;
            }
            assert_non_null(it.calls[i].arg);
            if (g->arg_cols[i] >= 0)
                assert_int_equal(df_expr_column_index(it.calls[i].arg), g->arg_cols[i]);
            assert_true((it.calls[i].arg2 != NULL) == (g->funcs[i] == DF_AGG_CORR));
        }
        df_agg_item_cleanup(&it);
    }
    df_schema_cleanup(&s);
}

/* The post expression evaluates over a table of the calls' results. */
static void test_post_evaluates(void **state)
{
    (void)state;
    struct df_schema s = input_schema();
    struct fr_error err;
    fr_error_init(&err);
    struct df_agg_item it;
    assert_int_equal(df_agg_item_parse("max(v1) - min(v2) as range_v2", &s, &it, &err), FR_OK);
    assert_string_equal(df_expr_name(it.calls[0].arg), "v1");
    struct df_table *t = df_table_new();
    struct df_column *a = df_column_new(DF_TYPE_INT64, 1), *b = df_column_new(DF_TYPE_INT64, 1);
    df_column_append_int64(a, 50);
    df_column_append_int64(b, 8);
    df_table_add(t, "__agg0", a);
    df_table_add(t, "__agg1", b);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct df_column *out = NULL;
    assert_int_equal(df_expr_eval(it.post, t, 0, 1, &ex, &out, &err), FR_OK);
    assert_int_equal(df_column_int64(out, 0), 42);
    df_column_unref(out);
    df_table_free(t);
    df_agg_item_cleanup(&it);
    /* an argument keeps its own text as its name */
    assert_int_equal(df_agg_item_parse("sum(v1 * 2)", &s, &it, &err), FR_OK);
    assert_string_equal(df_expr_name(it.calls[0].arg), "v1 * 2");
    assert_int_equal(df_expr_type(it.calls[0].arg), DF_TYPE_INT64);
    df_agg_item_cleanup(&it);
    df_schema_cleanup(&s);
}

struct bad {
    const char *item;
    int64_t position;
    const char *message;
};

static const struct bad bad_cases[] = {
    {"sum(max(v1))", 4, "aggregate 'max' at position 4 is nested inside another aggregate"},
    {"v1 + sum(v2)", 0, "column 'v1' at position 0 must be inside an aggregate function"},
    {"sum(v2) + v1 * 2", 10, "column 'v1' at position 10 must be inside an aggregate"},
    {"v1 + 1", 0, "has no aggregate function"},
    {"1", 0, "has no aggregate function"},
    {"sum(id1)", 4, "sum needs a numeric argument, got string at position 4"},
    {"sum(flag)", 4, "needs a numeric argument, got bool"},
    {"avg(d)", 4, "mean needs a numeric argument, got date at position 4"},
    {"sum(vx)", 4, "unknown column 'vx' at position 4; did you mean 'v1'?"},
    {"corr(v1)", 0, "corr at position 0 takes 2 arguments, got 1"},
    {"max(v1, v2)", 0, "max at position 0 takes 1 argument, got 2"},
    {"summ(v1)", 0, "unknown function 'summ' at position 0; did you mean 'sum'?"},
    {"sum(*)", 4, "expected an expression at position 4"},
    {"sum(v1) +", 9, "expected an expression at position 9"},
    {"max(id1) + 1", 9, "'+' cannot combine string and int64 at position 9"},
    {"sum(v1) as", 10, "expected an alias at position 10"},
};

static void test_errors(void **state)
{
    (void)state;
    struct df_schema s = input_schema();
    for (size_t k = 0; k < sizeof(bad_cases) / sizeof(bad_cases[0]); k++) {
        const struct bad *b = &bad_cases[k];
        struct fr_error err;
        fr_error_init(&err);
        struct df_agg_item it;
        int rc = df_agg_item_parse(b->item, &s, &it, &err);
        if (rc != FR_EINVAL)
            fail_msg("'%s': status %d", b->item, rc);
        assert_null(it.calls);
        assert_null(it.post);
        assert_null(it.name);
        if (!strstr(err.message, b->message))
            fail_msg("'%s':\n  got  %s\n  want %s", b->item, err.message, b->message);
        if (err.position != b->position)
            fail_msg("'%s': position %lld, want %lld", b->item, (long long)err.position,
                     (long long)b->position);
    }
    df_schema_cleanup(&s);
}

static void test_result_types_and_names(void **state)
{
    (void)state;
    assert_int_equal(df_agg_result_type(DF_AGG_COUNT_STAR, DF_TYPE_NULL), DF_TYPE_INT64);
    assert_int_equal(df_agg_result_type(DF_AGG_COUNT, DF_TYPE_STRING), DF_TYPE_INT64);
    assert_int_equal(df_agg_result_type(DF_AGG_COUNT_DISTINCT, DF_TYPE_DATE), DF_TYPE_INT64);
    assert_int_equal(df_agg_result_type(DF_AGG_SUM, DF_TYPE_INT64), DF_TYPE_INT64);
    assert_int_equal(df_agg_result_type(DF_AGG_SUM, DF_TYPE_FLOAT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_MEAN, DF_TYPE_INT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_STDDEV, DF_TYPE_INT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_MEDIAN, DF_TYPE_INT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_CORR, DF_TYPE_INT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_MIN, DF_TYPE_STRING), DF_TYPE_STRING);
    assert_int_equal(df_agg_result_type(DF_AGG_MAX, DF_TYPE_TIMESTAMP), DF_TYPE_TIMESTAMP);
    assert_int_equal(df_agg_result_type(DF_AGG_FIRST, DF_TYPE_BOOL), DF_TYPE_BOOL);
    assert_string_equal(df_agg_func_name(DF_AGG_COUNT_STAR), "count");
    assert_string_equal(df_agg_func_name(DF_AGG_COUNT_DISTINCT), "count_distinct");
    assert_string_equal(df_agg_func_name(DF_AGG_MEAN), "mean");
    assert_string_equal(df_agg_func_name(DF_AGG_CORR), "corr");
    df_agg_item_cleanup(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items),
        cmocka_unit_test(test_post_evaluates),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_result_types_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
