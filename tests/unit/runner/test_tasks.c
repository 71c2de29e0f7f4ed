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
    /* settled: the records are freed; past RUNNER_STAGES_KEPT_MAX of JSON the
     * task lists go, the sums stay */
    pthread_mutex_lock(&q->lock);
    runner__tasks_settle_locked(q);
    assert_int_equal(q->nrecs, 0);
    assert_null(q->recs);
    assert_true(strlen(q->stages_final) <= RUNNER_STAGES_KEPT_MAX);
    pthread_mutex_unlock(&q->lock);
    j = runner_query_stages_json(q);
    stage = json_array_get(json_object_get(j, "stages"), 0);
    assert_int_equal(json_array_size(json_object_get(stage, "tasks")), 0);
    assert_true(json_is_true(json_object_get(stage, "tasks_truncated")));
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), n);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), 2 * n);
    json_decref(j);
    runner_query_unref(q);
}

/* A small query settled: the records are freed and its stages read the same. */
static void test_settle_keeps_the_json(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    run_task(q, 0, false);
    run_task(q, 1, true);
    json_t *before = runner_query_stages_json(q);
    pthread_mutex_lock(&q->lock);
    runner__tasks_settle_locked(q);
    assert_int_equal(q->nrecs, 0);
    pthread_mutex_unlock(&q->lock);
    json_t *after = runner_query_stages_json(q);
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);
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

/* Counts near the top of int64 saturate in the sums, never wrap negative
 * (a hostile worker's answer is refused past RUNNER_MAX_ANSWER_COUNT, but
 * many outputs of a task or many tasks could still add up past INT64_MAX). */
static void test_sums_saturate(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    for (int t = 0; t < 2; t++) {
        struct rjob job;
        memset(&job, 0, sizeof(job));
        job.q = q;
        job.task = t;
        runner__task_queued(&job);
        runner__task_begin(&job, NULL, NULL, 0);
        struct runner_part a = {.rows = INT64_MAX, .bytes = INT64_MAX}, b = a;
        struct runner_part *outs[2] = {&a, &b};
        pthread_mutex_lock(&q->lock);
        runner__task_end_locked(&job, FR_OK, outs, 2, NULL);
        pthread_mutex_unlock(&q->lock);
    }
    json_t *j = runner_query_stages_json(q);
    json_t *stage = json_array_get(json_object_get(j, "stages"), 0);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), INT64_MAX);
    assert_int_equal(json_integer_value(json_object_get(stage, "bytes_out")), INT64_MAX);
    json_t *task = json_array_get(json_object_get(stage, "tasks"), 0);
    assert_int_equal(json_integer_value(json_object_get(task, "rows_out")), INT64_MAX);
    json_decref(j);
    runner_query_unref(q);
}

static json_t *stage0(runner_query *q, json_t **j)
{
    *j = runner_query_stages_json(q);
    return json_array_get(json_object_get(*j, "stages"), 0);
}

/* A retried job that ends before it starts again (cancelled while it
 * waits): the next attempt is listed queued at once and then cancelled, and
 * the stage's running count is not taken from another task. */
static void test_retry_then_end_unstarted(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    struct rjob a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.q = b.q = q;
    a.task = 0;
    b.task = 1;
    runner__task_queued(&a);
    runner__task_begin(&a, NULL, NULL, 0);
    runner__task_queued(&b);
    runner__task_begin(&b, NULL, NULL, 1);
    runner__task_retried(&b, "worker lost");
    json_t *j;
    json_t *stage = stage0(q, &j);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_running")), 1);
    json_t *tasks = json_object_get(stage, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    json_t *waiting = json_array_get(tasks, 2);
    assert_string_equal(json_string_value(json_object_get(waiting, "state")), "queued");
    assert_int_equal(json_integer_value(json_object_get(waiting, "attempt")), 1);
    assert_int_equal(json_integer_value(json_object_get(waiting, "task")), 1);
    json_decref(j);
    pthread_mutex_lock(&q->lock);
    runner__task_end_locked(&b, FR_ECANCELLED, NULL, 0, NULL);
    pthread_mutex_unlock(&q->lock);
    stage = stage0(q, &j);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_running")), 1); /* a's */
    tasks = json_object_get(stage, "tasks");
    assert_int_equal(json_array_size(tasks), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 2), "state")),
                        "cancelled");
    json_decref(j);
    pthread_mutex_lock(&q->lock);
    runner__task_end_locked(&a, FR_OK, NULL, 0, NULL);
    pthread_mutex_unlock(&q->lock);
    stage = stage0(q, &j);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_running")), 0);
    json_decref(j);
    runner_query_unref(q);
}

/* A whole-plan rerun: a stage not rerun yet is not finished, and its total
 * counts the rerun's tasks at once (they are not counted twice when queued). */
static void test_restart_unfinishes_stages(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    run_task(q, 0, false);
    json_t *j;
    json_t *stage = stage0(q, &j);
    assert_true(json_is_string(json_object_get(stage, "finished_at")));
    json_decref(j);
    pthread_mutex_lock(&q->lock);
    runner__tasks_restart_locked(q);
    pthread_mutex_unlock(&q->lock);
    stage = stage0(q, &j);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_total")), 2);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), 1);
    assert_true(json_is_null(json_object_get(stage, "finished_at")));
    json_decref(j);
    run_task(q, 0, false);
    stage = stage0(q, &j);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_total")), 2);
    assert_int_equal(json_integer_value(json_object_get(stage, "tasks_done")), 2);
    assert_int_equal(json_integer_value(json_object_get(stage, "rows_out")), 2);
    assert_true(json_is_string(json_object_get(stage, "finished_at")));
    json_decref(j);
    runner_query_unref(q);
}

/* A task ended ok without starting (the row limit was reached) is listed
 * skipped; a worker id longer than 71 bytes (a static worker's URL) is kept
 * whole. */
static void test_skipped_and_long_worker_id(void **state)
{
    (void)state;
    runner_query *q = rows_query();
    struct rjob a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.q = b.q = q;
    b.task = 1;
    char id[200];
    snprintf(id, sizeof(id), "http://%0150d.example:9", 7);
    runner__task_queued(&a);
    runner__task_begin(&a, id, id, -1);
    runner__task_queued(&b);
    pthread_mutex_lock(&q->lock);
    runner__task_end_locked(&a, FR_OK, NULL, 0, NULL);
    runner__task_end_locked(&b, FR_OK, NULL, 0, NULL);
    pthread_mutex_unlock(&q->lock);
    json_t *j;
    json_t *tasks = json_object_get(stage0(q, &j), "tasks");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "worker")), id);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "state")),
                        "ok");
    json_t *skipped = json_array_get(tasks, 1);
    assert_string_equal(json_string_value(json_object_get(skipped, "state")), "skipped");
    assert_true(json_is_null(json_object_get(skipped, "started_at")));
    json_decref(j);
    runner_query_unref(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attempts_and_sums),
        cmocka_unit_test(test_records_are_bounded),
        cmocka_unit_test(test_rerun_and_repair_sums),
        cmocka_unit_test(test_sums_saturate),
        cmocka_unit_test(test_retry_then_end_unstarted),
        cmocka_unit_test(test_restart_unfinishes_stages),
        cmocka_unit_test(test_skipped_and_long_worker_id),
        cmocka_unit_test(test_settle_keeps_the_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
