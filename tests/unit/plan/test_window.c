/* Tests of src/plan/plan_window.c: a task spec's window step is checked
 * before it runs (a worker runs specs from the network), and runs through
 * plan_task_execute over inline rows: one partition's rows come out
 * together in window order, with the functions' columns after the input's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static json_t *spec_with(const char *window)
{
    char *text = fr_xasprintf(
        "{\"stage\":0,\"task\":0,\"input\":{\"kind\":\"rows\",\"rows\":[{\"k\":\"a\",\"t\":2},"
        "{\"k\":\"b\",\"t\":1},{\"k\":\"a\",\"t\":1},{\"k\":null,\"t\":5},{\"k\":\"a\",\"t\":2}],"
        "\"hints\":[]},\"core\":null,\"pipeline\":[{\"window\":%s}],\"sink\":null,\"nbuckets\":1}",
        window);
    json_error_t jerr;
    json_t *spec = json_loads(text, 0, &jerr);
    if (!spec)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    free(text);
    return spec;
}

static void expect_invalid(const char *window)
{
    json_t *spec = spec_with(window);
    struct fr_error err;
    fr_error_init(&err);
    if (plan_task_check(spec, &err) != FR_EINVAL || strcmp(err.kind, "invalid-task") != 0)
        fail_msg("accepted: %s", window);
    json_decref(spec);
}

static void test_check(void **state)
{
    (void)state;
    expect_invalid("7");
    expect_invalid("{\"functions\":[]}");
    expect_invalid("{\"partition_by\":\"k\",\"functions\":[\"rank() as r\"]}");
    expect_invalid("{\"partition_by\":[1],\"functions\":[\"rank() as r\"]}");
    expect_invalid("{\"order_by\":[\"t\"],\"functions\":[\"rank() as r\"]}");
    expect_invalid("{\"order_by\":{},\"functions\":[\"rank() as r\"]}");
    expect_invalid("{\"partition_by\":[\"k\"]}");
    expect_invalid("{\"functions\":[3]}");
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"functions\":[");
    for (int i = 0; i <= 256; i++)
        fr_buf_printf(&b, "%s\"count(*) as c%d\"", i ? "," : "", i);
    fr_buf_puts(&b, "]}");
    expect_invalid(b.data);
    fr_buf_cleanup(&b);
}

static void test_execute(void **state)
{
    (void)state;
    json_t *spec = spec_with("{\"partition_by\":[\"k\"],\"order_by\":[{\"col\":\"t\",\"desc\":"
                             "true,\"nulls_first\":-1}],\"functions\":[\"rank() as r\","
                             "\"sum(t) as s\",\"lag(t, 1, 0) as p\"]}");
    struct df_options o = {0};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table **outs = NULL;
    int nouts = 0;
    assert_int_equal(plan_task_execute(spec, NULL, NULL, NULL, &ex, &outs, &nouts, &err), FR_OK);
    assert_int_equal(nouts, 1);
    struct df_table *t = outs[0];
    assert_int_equal(t->ncols, 5);
    assert_string_equal(t->names[2], "r");
    assert_string_equal(t->names[4], "p");
    /* partitions a, b, then the null key (nulls last); t descending within */
    static const char *const k[] = {"a", "a", "a", "b", NULL};
    static const int64_t tv[] = {2, 2, 1, 1, 5}, r[] = {1, 1, 3, 1, 1}, sum[] = {4, 4, 5, 1, 5},
                         p[] = {0, 2, 2, 0, 0};
    assert_int_equal(t->nrows, 5);
    for (int i = 0; i < 5; i++) {
        int64_t n = 0;
        assert_int_equal(df_column_is_valid(t->cols[0], i), k[i] != NULL);
        if (k[i])
            assert_memory_equal(df_column_string(t->cols[0], i, &n), k[i], 1);
        assert_int_equal(df_column_int64(t->cols[1], i), tv[i]);
        assert_int_equal(df_column_int64(t->cols[2], i), r[i]);
        assert_int_equal(df_column_int64(t->cols[3], i), sum[i]);
        assert_int_equal(df_column_int64(t->cols[4], i), p[i]);
    }
    df_table_free(t);
    free(outs);
    json_decref(spec);
    /* a function that does not parse fails the task, it does not crash it */
    spec = spec_with("{\"functions\":[\"nope(t)\"]}");
    fr_error_init(&err);
    assert_int_equal(plan_task_execute(spec, NULL, NULL, NULL, &ex, &outs, &nouts, &err),
                     FR_EINVAL);
    json_decref(spec);
    assert_int_equal(ex.mem_used, 0);
}

/* A worker's window step whose outputs would repeat a name (the input's or
 * another function's) is refused before it makes a table: invalid-task. */
static void test_name_clash(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"partition_by\":[\"k\"],\"functions\":[\"rank() as k\",\"count(*) as b\"]}",
        "{\"functions\":[\"count(*) as c\",\"rank() as c\"]}",
        "{\"functions\":[\"sum(t) as t\"]}",
    };
    struct df_options o = {0};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *spec = spec_with(bad[i]);
        struct fr_error err;
        fr_error_init(&err);
        struct df_table **outs = NULL;
        int nouts = 0;
        int rc = plan_task_execute(spec, NULL, NULL, NULL, &ex, &outs, &nouts, &err);
        if (rc != FR_EINVAL || strcmp(err.kind, "invalid-task") != 0)
            fail_msg("%s: got %d %s: %s", bad[i], rc, err.kind, err.message);
        json_decref(spec);
    }
    assert_int_equal(ex.mem_used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_execute),
        cmocka_unit_test(test_name_clash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
