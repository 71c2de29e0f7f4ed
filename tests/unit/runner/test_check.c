/* Tests of src/runner/runner_check.c: the shape and bounds of a worker's task
 * answer, and a fetched partition against the rows the worker reported. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"

static void test_outputs_checked(void **state)
{
    (void)state;
    const char *good[] = {"[]", "[null]",
                          "[{\"id\": \"p-1\", \"rows\": 1125899906842624, \"bytes\": 1}]",
                          "[{\"id\": \"p-0af\", \"rows\": 3, \"bytes\": 10}, null, "
                          "{\"id\": \"p-1\", \"rows\": 0, \"bytes\": 0}]"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        json_t *o = json_loads(good[i], 0, NULL);
        assert_null(runner__outputs_problem(o));
        json_decref(o);
    }
    const char *bad[] = {
        "{}",
        "[1]",
        "[{\"id\": \"../../etc/passwd\", \"rows\": 1, \"bytes\": 1}]",
        "[{\"id\": \"p-\", \"rows\": 1, \"bytes\": 1}]",
        "[{\"id\": \"p-ABC\", \"rows\": 1, \"bytes\": 1}]",
        "[{\"id\": \"p-1\", \"rows\": -1, \"bytes\": 1}]",
        "[{\"id\": \"p-1\", \"rows\": \"many\", \"bytes\": 1}]",
        "[{\"id\": \"p-1\", \"rows\": 1}]",
        "[{\"id\": 7, \"rows\": 1, \"bytes\": 1}]",
        /* a hostile worker's counts that would overflow the sums */
        "[{\"id\": \"p-1\", \"rows\": 9223372036854775807, \"bytes\": 1}]",
        "[{\"id\": \"p-1\", \"rows\": 1, \"bytes\": 9223372036854775807}]",
        "[{\"id\": \"p-1\", \"rows\": 1125899906842625, \"bytes\": 1}]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *o = json_loads(bad[i], 0, NULL);
        assert_non_null(o);
        assert_non_null(runner__outputs_problem(o));
        json_decref(o);
    }
    json_t *many = json_array();
    for (int i = 0; i <= PLAN_MAX_BUCKETS; i++)
        json_array_append_new(many, json_null());
    assert_non_null(runner__outputs_problem(many));
    json_decref(many);
}

static void test_fetched_rows_match_report(void **state)
{
    (void)state;
    struct runner_part p = {.url = "http://127.0.0.1:9", .id = "p-1", .rows = 5};
    p.table = df_table_new();
    p.table->nrows = 5;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner__check_fetched(&p, &err), FR_OK);
    p.rows = 4;
    assert_int_equal(runner__check_fetched(&p, &err), FR_EDATA);
    assert_string_equal(err.kind, "invalid-worker-answer");
    assert_non_null(strstr(err.message, "http://127.0.0.1:9"));
    df_table_free(p.table);
}

/* The counts a worker's answer gives for the task records: taken within
 * bounds, else not known (-1). */
static void test_answer_counts_bounded(void **state)
{
    (void)state;
    json_t *ok = json_integer(12), *zero = json_integer(0), *max = json_integer(1LL << 50);
    json_t *over = json_integer((1LL << 50) + 1), *neg = json_integer(-5), *real = json_real(1.5);
    json_t *text = json_string("many");
    assert_int_equal(runner__answer_count(ok), 12);
    assert_int_equal(runner__answer_count(zero), 0);
    assert_int_equal(runner__answer_count(max), 1LL << 50);
    assert_int_equal(runner__answer_count(over), -1);
    assert_int_equal(runner__answer_count(neg), -1);
    assert_int_equal(runner__answer_count(real), -1);
    assert_int_equal(runner__answer_count(text), -1);
    assert_int_equal(runner__answer_count(NULL), -1);
    json_t *all[] = {ok, zero, max, over, neg, real, text};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        json_decref(all[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outputs_checked),
        cmocka_unit_test(test_fetched_rows_match_report),
        cmocka_unit_test(test_answer_counts_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
