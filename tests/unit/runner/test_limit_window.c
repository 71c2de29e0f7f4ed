/* Tests of a limited stage's task window (src/runner/runner_driver.c,
 * release_held): a stage whose rows past a limit are not needed (a preview,
 * a limit pushed into a scan) hands the backend at most slots() tasks past
 * the first one not yet ended, so a slow first task cannot let the others
 * run the stage to its end before its rows are counted. A backend that
 * records what it is handed, and never runs it, shows the order: the first
 * tasks only; no more while task 0 runs, however many later tasks end;
 * when task 0's rows reach the limit the rest end skipped, never handed
 * over (so a remote runner does not run them either); and on a failure,
 * everything is handed over at once (nothing waits forever). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner_int.h"

#define MAX_JOBS 256

struct fake {
    runner base;
    int slots;
    struct rjob *jobs[MAX_JOBS]; /* in the order handed over */
    int njobs;
};

static void fake_enqueue(runner *r, struct rjob *job)
{
    struct fake *f = (struct fake *)r;
    assert_true(f->njobs < MAX_JOBS);
    f->jobs[f->njobs++] = job;
}
static void fake_stop(runner *r)
{
    (void)r;
}
static void fake_destroy(runner *r)
{
    free(r);
}
static int fake_slots(runner *r)
{
    return ((struct fake *)r)->slots;
}
static const struct runner_backend fake_backend = {
    .kind = "fake",
    .enqueue = fake_enqueue,
    .stop = fake_stop,
    .destroy = fake_destroy,
    .slots = fake_slots,
};

static char dir[64];

/* A CSV of n rows in dir, named t.csv. */
static void write_csv(int n)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "a,b\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%d,%d\n", i, i * 3);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%.40s/framed-window-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    write_csv(200000); /* about 2.3 MB: 36 tasks of 64 KiB */
    return 0;
}
static int teardown(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/t.csv", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

/* A runner over the fake backend with `slots` slots and a query of the file
 * with `limit` rows (plan_build's limit: a stage of many tasks, limited). */
static runner_query *submit(struct fake **fp, int slots, int64_t limit, struct cfg *cfg)
{
    cfg_defaults(cfg);
    cfg->scan_tasks_min_size_bytes = 65536;
    cfg->scan_tasks_max_size_bytes = 65536;
    struct fake *f = calloc(1, sizeof(*f));
    runner__init(&f->base, &fake_backend, cfg_freeze(cfg));
    f->slots = slots;
    struct plan_env env = {.data_dir = dir};
    struct fr_error err;
    fr_error_init(&err);
    json_t *plan = json_loads("{\"source\": {\"dataset\": \"t\"}}", 0, NULL);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, cfg, &env, limit, &p, &err), FR_OK);
    json_decref(plan);
    struct plan_stage_view v;
    plan_stage_view(p, 0, &v);
    assert_true(v.ntasks >= 20);
    assert_int_equal(v.limit_rows, limit);
    runner_query *q = runner_query_new("q-window", p);
    assert_int_equal(runner_submit(&f->base, q, &err), FR_OK);
    *fp = f;
    return q;
}

/* The handed job of task t of the first stage, NULL when not handed yet. */
static struct rjob *handed(struct fake *f, int t)
{
    for (int i = 0; i < f->njobs; i++)
        if (f->jobs[i] && f->jobs[i]->stage == 0 && f->jobs[i]->task == t)
            return f->jobs[i];
    return NULL;
}

/* The handed job of task t, taken off the list (it ends now). */
static struct rjob *take(struct fake *f, int t)
{
    struct rjob *job = handed(f, t);
    assert_non_null(job);
    for (int i = 0; i < f->njobs; i++)
        if (f->jobs[i] == job)
            f->jobs[i] = NULL;
    return job;
}

/* Ends task t ok with an output of `rows` rows (no columns: only counted). */
static void end_task(struct fake *f, int t, int64_t rows)
{
    struct rjob *job = take(f, t);
    runner__task_begin(job, NULL, NULL, 0); /* it ran */
    struct df_table *table = df_table_new();
    table->nrows = rows;
    struct runner_part **outs = calloc(2, sizeof(*outs));
    outs[0] = runner__part_local(table);
    runner__task_done(job, FR_OK, outs, 1, NULL, 0, NULL);
}

/* Ends every job handed over and not ended, of any stage, until none is left. */
static void end_all(struct fake *f)
{
    for (int i = 0; i < f->njobs; i++) {
        struct rjob *job = f->jobs[i];
        if (!job)
            continue;
        f->jobs[i] = NULL;
        struct df_table *table = df_table_new();
        struct runner_part **outs = calloc(2, sizeof(*outs));
        outs[0] = runner__part_local(table);
        runner__task_done(job, FR_OK, outs, 1, NULL, 0, NULL);
    }
}

static void finish_free(struct fake *f, runner_query *q, struct cfg *cfg)
{
    assert_true(runner_query_wait(q, 5000));
    runner_query_unref(q);
    runner_free(&f->base, NULL);
    cfg_cleanup(cfg);
}

static void test_a_slow_first_task_holds_the_rest(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit(&f, 2, 100, &cfg);
    assert_int_equal(f->njobs, 2); /* tasks 0 and 1 */
    assert_non_null(handed(f, 0));
    assert_non_null(handed(f, 1));
    end_task(f, 1, 5000); /* task 0 still runs: its rows come first */
    assert_int_equal(f->njobs, 2);
    assert_null(handed(f, 2));
    struct plan_stage_view v;
    plan_stage_view(q->plan, 0, &v);
    int ntasks = v.ntasks;
    end_task(f, 0, 5000); /* the limit is reached: the rest end skipped, never handed over */
    for (int i = 0; i < f->njobs; i++)
        assert_true(!f->jobs[i] || f->jobs[i]->stage > 0); /* the next stage's, if any */
    assert_int_equal(f->njobs, 2 + (plan_physical_nstages(q->plan) > 1));
    end_all(f);
    assert_true(runner_query_wait(q, 5000));
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    pthread_mutex_lock(&q->lock);
    assert_int_equal(q->sums[0].skipped, ntasks - 2);
    assert_int_equal(q->sums[0].done, ntasks);
    pthread_mutex_unlock(&q->lock);
    finish_free(f, q, &cfg);
}

static void test_short_tasks_move_the_window(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit(&f, 3, 1000000, &cfg);
    assert_int_equal(f->njobs, 3);
    end_task(f, 0, 10); /* not enough rows: the window moves one on */
    assert_int_equal(f->njobs, 4);
    assert_non_null(handed(f, 3));
    end_task(f, 2, 10); /* task 1 still runs: nothing more */
    assert_int_equal(f->njobs, 4);
    end_task(f, 1, 10); /* tasks 0-2 ended: up to task 5 */
    assert_int_equal(f->njobs, 6);
    assert_non_null(handed(f, 5));
    assert_null(handed(f, 6));
    end_all(f);
    finish_free(f, q, &cfg);
}

static void test_a_failure_hands_everything_over(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit(&f, 2, 100, &cfg);
    struct rjob *job = take(f, 1);
    struct fr_error err;
    fr_error_init(&err);
    fr_error_set(&err, FR_EDATA, "bad bytes");
    runner__task_done(job, FR_EDATA, NULL, 0, &err, 0, NULL);
    struct plan_stage_view v;
    plan_stage_view(q->plan, 0, &v);
    assert_int_equal(f->njobs, v.ntasks); /* all handed over: they end as the query does */
    end_all(f);
    assert_true(runner_query_wait(q, 5000));
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    finish_free(f, q, &cfg);
}

static void test_unlimited_stages_hand_everything_at_once(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit(&f, 2, -1, &cfg);
    struct plan_stage_view v;
    plan_stage_view(q->plan, 0, &v);
    assert_int_equal(f->njobs, v.ntasks);
    end_all(f);
    assert_true(runner_query_wait(q, 5000));
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    finish_free(f, q, &cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_slow_first_task_holds_the_rest),
        cmocka_unit_test(test_short_tasks_move_the_window),
        cmocka_unit_test(test_a_failure_hands_everything_over),
        cmocka_unit_test(test_unlimited_stages_hand_everything_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
