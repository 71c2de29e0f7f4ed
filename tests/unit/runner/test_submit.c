/* Tests of runner_submit (src/runner/runner_driver.c): a failed call never
 * fires the query's on_finish hook, and the query it refused ends failed and
 * settled; a good submit fires the hook and the settled hook exactly once
 * (the settled one seeing the final state); a task that never ran names no
 * config in task_config_ids; a query cancelled before its submit names the
 * config it was planned under. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"

/* A dataframe lookup that names kept partitions the runner never kept (a
 * dataframe deleted between planning and submit). */
static int stale_frame(void *arg, const char *id, struct plan_source_info *info,
                       struct fr_error *err)
{
    (void)arg;
    (void)id;
    (void)err;
    memset(info, 0, sizeof(*info));
    df_schema_add(&info->schema, "a", DF_TYPE_INT64);
    info->nparts = 1;
    info->part_ids = calloc(2, sizeof(char *));
    info->part_ids[0] = strdup("df-gone-p0");
    info->part_rows = calloc(2, sizeof(int64_t));
    info->part_rows[0] = 1;
    info->bytes = 8;
    return FR_OK;
}

static void count_finish(runner_query *q, void *arg)
{
    (void)q;
    (*(int *)arg)++;
}

static plan_physical *build(const char *text, const struct cfg *cfg)
{
    struct plan_env env = {.data_dir = ".", .lookup_dataframe = stale_frame, .arg = NULL};
    struct fr_error err;
    fr_error_init(&err);
    json_t *plan = json_loads(text, 0, NULL);
    assert_non_null(plan);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, cfg, &env, -1, &p, &err), FR_OK);
    json_decref(plan);
    return p;
}

static void test_failed_submit_never_fires_the_hook(void **state)
{
    (void)state;
    struct cfg cfg;
    cfg_defaults(&cfg);
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 1, &r, NULL), FR_OK);
    runner_query *q =
        runner_query_new("q-stale", build("{\"source\": {\"dataframe\": \"df-gone\"}}", &cfg));
    int calls = 0;
    runner_query_on_finish(q, count_finish, &calls);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_not_equal(runner_submit(r, q, &err), FR_OK);
    assert_int_equal(err.status, FR_ENOTFOUND);
    assert_true(runner_query_wait(q, 0)); /* settled: a waiter does not hang */
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    assert_int_equal(runner_running(r), 0);
    assert_int_equal(calls, 0);
    /* a second submit of the same query is refused, again without the hook */
    assert_int_equal(runner_submit(r, q, &err), FR_ECONFLICT);
    assert_int_equal(calls, 0);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

static void test_good_submit_fires_the_hook_once(void **state)
{
    (void)state;
    struct cfg cfg;
    cfg_defaults(&cfg);
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 1, &r, NULL), FR_OK);
    runner_query *q = runner_query_new(
        "q-rows", build("{\"source\": {\"rows\": [{\"a\": 1}, {\"a\": 2}]}}", &cfg));
    int calls = 0;
    runner_query_on_finish(q, count_finish, &calls);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_submit(r, q, &err), FR_OK);
    assert_true(runner_query_wait(q, -1));
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    assert_int_equal(calls, 1);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

static void settled_state(runner_query *q, void *arg)
{
    json_t *j = runner_query_json(q);
    snprintf(arg, 16, "%s", json_string_value(json_object_get(j, "state")));
    json_decref(j);
}

static void test_settled_hook_sees_the_final_state(void **state)
{
    (void)state;
    struct cfg cfg;
    cfg_defaults(&cfg);
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 1, &r, NULL), FR_OK);
    runner_query *q =
        runner_query_new("q-rows", build("{\"source\": {\"rows\": [{\"a\": 1}]}}", &cfg));
    char shown[16] = "";
    runner_query_on_settled(q, settled_state, shown);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_submit(r, q, &err), FR_OK);
    runner_free(r, NULL); /* joins the thread: the hooks have run */
    assert_string_equal(shown, "succeeded");
    runner_query_unref(q);
    cfg_cleanup(&cfg);
}

/* Cancelled before its task started: the task never ran, so it names no
 * config (task_config_ids lists the configs tasks ran with). */
static void test_unstarted_task_names_no_config(void **state)
{
    (void)state;
    struct cfg cfg;
    cfg_defaults(&cfg);
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 1, &r, NULL), FR_OK);
    runner_query *q =
        runner_query_new("q-rows", build("{\"source\": {\"rows\": [{\"a\": 1}]}}", &cfg));
    atomic_store(&q->cancel, true); /* its task sees the cancel before it starts */
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_submit(r, q, &err), FR_OK);
    assert_true(runner_query_wait(q, -1));
    assert_int_equal(runner_query_state(q), RQ_CANCELLED);
    json_t *j = runner_query_json(q);
    assert_int_equal(json_array_size(json_object_get(j, "task_config_ids")), 0);
    json_decref(j);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

/* A query a reset cancels before it is submitted still names the config it
 * was planned under (it was null: the status broke its schema). */
static void test_cancelled_before_submit_names_its_config(void **state)
{
    (void)state;
    struct cfg cfg;
    cfg_defaults(&cfg);
    runner *r = NULL;
    struct cfg_frozen *frozen = cfg_freeze(&cfg);
    char want[80];
    snprintf(want, sizeof(want), "%s", frozen->id);
    assert_int_equal(runner_local_new(frozen, NULL, 1, &r, NULL), FR_OK);
    runner_query *q =
        runner_query_new("q-rows", build("{\"source\": {\"rows\": [{\"a\": 1}]}}", &cfg));
    runner_query_bind_config(q, r);
    runner_query_cancel(q);
    json_t *j = runner_query_json(q);
    assert_string_equal(json_string_value(json_object_get(j, "config_id")), want);
    json_decref(j);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_submit_never_fires_the_hook),
        cmocka_unit_test(test_good_submit_fires_the_hook_once),
        cmocka_unit_test(test_settled_hook_sees_the_final_state),
        cmocka_unit_test(test_unstarted_task_names_no_config),
        cmocka_unit_test(test_cancelled_before_submit_names_its_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
