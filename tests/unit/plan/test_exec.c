/* Tests of src/plan/plan_exec.c against malformed task specs (as a worker may
 * receive them): each is refused with FR_EINVAL, reads nothing out of
 * bounds and leaks nothing. Found by the fuzz_task target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static struct df_table *small_table(void)
{
    struct df_table *t = df_table_new();
    struct df_column *k = df_column_new(DF_TYPE_INT64, 2), *kf = df_column_new(DF_TYPE_FLOAT64, 2);
    for (int i = 0; i < 2; i++) {
        df_column_append_int64(k, i);
        df_column_append_float64(kf, i);
    }
    df_table_add(t, "k", k);
    df_table_add(t, "kf", kf);
    return t;
}

static int run(const char *text, struct fr_error *err)
{
    json_t *spec = json_loads(text, 0, NULL);
    assert_non_null(spec);
    struct df_table *t = small_table();
    struct df_table *slot[1] = {t};
    struct df_table **const inputs[2] = {slot, slot};
    const int counts[2] = {1, 1};
    struct df_options opts = {.morsel_size_rows = 4};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table **outs = NULL;
    int nouts = 0;
    int rc = plan_task_execute(spec, NULL, inputs, counts, &ex, &outs, &nouts, err);
    for (int i = 0; i < nouts; i++)
        df_table_free(outs[i]);
    free(outs);
    df_table_free(t);
    json_decref(spec);
    return rc;
}

/* left_on and right_on of different lengths (here left_on missing) sized
 * the key arrays by left_on and wrote right_on's keys past them. */
static void test_join_key_lists_must_match(void **state)
{
    (void)state;
    static const char *const specs[] = {
        "{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"join\",\"right_on\":[\"k\",\"kf\"],"
        "\"how\":\"inner\"}}",
        "{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"join\",\"left_on\":[\"k\"],"
        "\"right_on\":[\"k\",\"kf\"],\"how\":\"inner\"}}",
        "{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"join\",\"left_on\":\"k\","
        "\"right_on\":\"k\",\"how\":\"inner\"}}",
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(run(specs[i], &err), FR_EINVAL);
        /* refused by the spec check (keys of the wrong type) or by the
         * executor (lists of unequal length): either names the join */
        assert_non_null(strstr(err.message, "join"));
    }
    /* the well-formed spec still joins */
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(run("{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"join\",\"left_on\":"
                         "[\"k\"],\"right_on\":[\"k\"],\"how\":\"inner\",\"suffix\":\"_r\"}}",
                         &err),
                     FR_OK);
}

/* Runs a task spec over one slot of inputs; its one output table. */
static struct df_table *run_one(const char *text, struct df_table **const *inputs,
                                const int *counts)
{
    json_t *spec = json_loads(text, 0, NULL);
    assert_non_null(spec);
    struct df_options opts = {.morsel_size_rows = 4};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table **outs = NULL;
    int nouts = 0;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(plan_task_execute(spec, NULL, inputs, counts, &ex, &outs, &nouts, &err),
                     FR_OK);
    assert_int_equal(nouts, 1);
    struct df_table *out = outs[0];
    free(outs);
    json_decref(spec);
    return out;
}

/* A gather followed by a limit concatenates only the leading inputs that
 * hold the rows the limit keeps; its answer is the same as a concat of all
 * of them, with an offset, a limit inside the first input, one across
 * inputs, one past the end and a limit of 0. */
static void test_gather_before_a_limit(void **state)
{
    (void)state;
    struct df_table *parts[3];
    for (int p = 0; p < 3; p++) {
        parts[p] = df_table_new();
        struct df_column *v = df_column_new(DF_TYPE_INT64, 8);
        for (int i = 0; i < 8; i++)
            df_column_append_int64(v, p * 8 + i);
        df_table_add(parts[p], "v", v);
        parts[p]->nrows = 8;
    }
    struct df_table **const inputs[1] = {parts};
    const int counts[1] = {3};
    const int64_t cases[][3] = {{0, 3, 0}, {5, 10, 5}, {20, 10, 20}, {0, 0, 0}, {7, 1, 7}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"concat\"},"
                 "\"pipeline\":[{\"slice\":{\"offset\":%lld,\"limit\":%lld}}]}",
                 (long long)cases[c][0], (long long)cases[c][1]);
        struct df_table *out = run_one(text, inputs, counts);
        int64_t want = 24 - cases[c][0] < cases[c][1] ? 24 - cases[c][0] : cases[c][1];
        assert_int_equal(out->nrows, want);
        assert_int_equal(out->ncols, 1);
        for (int64_t i = 0; i < want; i++)
            assert_int_equal(((const int64_t *)out->cols[0]->values)[i], cases[c][2] + i);
        df_table_free(out);
    }
    /* an op that holds a slice beside another op runs as the other op (here
     * a projection): every input is concatenated */
    struct df_table *out = run_one("{\"input\":{\"kind\":\"slots\"},\"core\":{\"op\":\"concat\"},"
                                   "\"pipeline\":[{\"project\":[{\"col\":\"v\",\"name\":\"v\"}],"
                                   "\"slice\":{\"offset\":0,\"limit\":1}}]}",
                                   inputs, counts);
    assert_int_equal(out->nrows, 24);
    df_table_free(out);
    for (int p = 0; p < 3; p++)
        df_table_free(parts[p]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_key_lists_must_match),
        cmocka_unit_test(test_gather_before_a_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
