/* Tests of src/runner/runner_tasks.c: every attempt of a task is an entry of
 * its own (a retry closes one as retried, with why, and the next start opens
 * another), the stage's counts and sums, and the bound: past
 * RUNNER_MAX_TASK_RECORDS entries a query keeps counting but lists no more,
 * and its stage says tasks_truncated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"

static runner_query *rows_query(void)
{
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = "."};
    struct fr_error err;
    fr_error_init(&err);
    json_t *plan = json_loads("{\"source\": {\"rows\": [{\"a\": 1}]}}", 0, NULL);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, &cfg, &env, -1, &p, &err), FR_OK);
    json_decref(plan);
    runner_query *q = runner_query_new("q-tasks", p);
    pthread_mutex_lock(&q->lock);
    runner__tasks_init(q);
    pthread_mutex_unlock(&q->lock);
    return q;
}

/* One task's life: queued, started on thread, maybe retried once, ended ok
 * with one output of 2 rows and 16 bytes. */
static void run_task(runner_query *q, int task, bool retry)
{
    struct rjob job;
    memset(&job, 0, sizeof(job));
    job.q = q;
    job.task = task;
    runner__task_queued(&job);
    runner__task_begin(&job, NULL, NULL, task % 3);
    if (retry) {
        runner__task_retried(&job, "disk hiccup");
        runner__task_begin(&job, NULL, NULL, 1);
    }
    struct runner_part part = {.rows = 2, .bytes = 16};
    struct runner_part *outs[1] = {&part};
    pthread_mutex_lock(&q->lock);
    runner__task_end_locked(&job, FR_OK, outs, 1, NULL);
    pthread_mutex_unlock(&q->lock);
}

static void test_attempts_and_sums(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    run_task(q, 0, false);
    run_task(q, 1, true);
    json_t *j = runner_query_stages_json(q);
    assert_int_equal(json_integer_value(json_object_get(j, "retries")), 1);
    json_t *stage = json_array_get(json_object_get(j, "stages"), 0);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_total")), 2);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), 2);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_running")), 0);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), 4);
    assert_int_equal(json_integer_value(json_object_get(stage, "bytes_out")), 32);
    assert_true(json_is_string(json_object_get(stage, "finished_at")));
    json_t *tasks = json_object_get(stage, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    json_t *retried = json_array_get(tasks, 1), *again = json_array_get(tasks, 2);
    assert_string_equal(json_string_value(json_object_get(retried, "state")), "retried");
    assert_string_equal(json_string_value(json_object_get(retried, "error")), "disk hiccup");
    assert_int_equal(json_integer_value(json_object_get(retried, "attempt")), 0);
    assert_int_equal(json_integer_value(json_object_get(retried, "rows_out")), 0);
    assert_string_equal(json_string_value(json_object_get(again, "state")), "ok");
    assert_int_equal(json_integer_value(json_object_get(again, "attempt")), 1);
    assert_int_equal(json_integer_value(json_object_get(again, "task")), 1);
    assert_int_equal(json_integer_value(json_object_get(again, "thread")), 1);
    assert_true(json_is_null(json_object_get(again, "worker")));
    assert_true(json_is_null(json_object_get(again, "rows_in"))); /* a source, count not said */
    json_decref(j);
    runner_query_unref(q);
}

static void test_records_are_bounded(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    int n = RUNNER_MAX_TASK_RECORDS + 50;
    for (int i = 0; i < n; i++)
        run_task(q, i, i == RUNNER_MAX_TASK_RECORDS + 10); /* a retry past the bound */
    json_t *j = runner_query_stages_json(q);
    assert_int_equal(json_integer_value(json_object_get(j, "retries")), 1);
    json_t *stage = json_array_get(json_object_get(j, "stages"), 0);
    assert_int_equal(json_array_size(json_object_get(stage, "tasks")), RUNNER_MAX_TASK_RECORDS);
    assert_true(json_is_true(json_object_get(stage, "tasks_truncated")));
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_total")), n);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), n);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_running")), 0);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), 2 * n);
    json_decref(j);
    runner_query_unref(q);
}

/* A whole-plan rerun starts the rows and bytes over (counts go on); a
 * repair's output replaces one counted already. */
static void test_rerun_and_repair_sums(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    run_task(q, 0, false);
    run_task(q, 1, false);
    pthread_mutex_lock(&q->lock);
    runner__tasks_restart_locked(q);
    pthread_mutex_unlock(&q->lock);
    run_task(q, 0, false);
    struct rjob parked, rep;
    memset(&parked, 0, sizeof(parked));
    memset(&rep, 0, sizeof(rep));
    rep.q = q;
    rep.rerun = true;
    rep.repair_for = &parked;
    runner__task_queued(&rep);
    runner__task_begin(&rep, "w-1", "http://127.0.0.1:9", -1);
    struct runner_part part = {.rows = 2, .bytes = 16};
    struct runner_part *outs[1] = {&part};
    pthread_mutex_lock(&q->lock);
    runner__task_end_locked(&rep, FR_OK, outs, 1, NULL);
    pthread_mutex_unlock(&q->lock);
    json_t *j = runner_query_stages_json(q);
    json_t *stage = json_array_get(json_object_get(j, "stages"), 0);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_total")), 4);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), 4);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), 2);
    json_t *last = json_array_get(json_object_get(stage, "tasks"), 3);
    assert_true(json_is_true(json_object_get(last, "rerun")));
    assert_string_equal(json_string_value(json_object_get(last, "worker")), "w-1");
    assert_true(json_is_null(json_object_get(last, "thread")));
    assert_int_equal(json_integer_value(json_object_get(last, "rows_out")), 2);
    json_decref(j);
    runner_query_unref(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attempts_and_sums),
        cmocka_unit_test(test_records_are_bounded),
        cmocka_unit_test(test_rerun_and_repair_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
