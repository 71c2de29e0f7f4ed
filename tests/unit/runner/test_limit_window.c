/* Tests of a limited stage's task window (src/runner/runner_driver.c,
 * release_held): a stage whose rows past a limit are not needed (a preview,
 * a limit pushed into a scan) hands the backend at most slots() tasks past
 * the first one not yet ended, so a slow first task cannot let the others
 * run the stage to its end before its rows are counted. A backend that
 * records what it is handed, and never runs it, shows the order: the first
 * tasks only; no more while task 0 runs, however many later tasks end;
 * when task 0's rows reach the limit the rest end skipped, never handed
 * over (so a remote runner does not run them either); once 2 x slots tasks
 * ended short of the limit, all of them at once (a far limit, a selective
 * filter: one slow task must not idle the rest); and on a failure,
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
static runner_query *submit_plan(struct fake **fp, int slots, int64_t limit, struct cfg *cfg,
                                 const char *text)
{
    cfg_defaults(cfg);
    cfg->scan_tasks_min_size_bytes = 65536;
    cfg->scan_tasks_max_size_bytes = 65536;
    cfg->maintain_order = false; /* a groupby's final phase in shuffle_partitions tasks */
    struct fake *f = calloc(1, sizeof(*f));
    runner__init(&f->base, &fake_backend, cfg_freeze(cfg));
    f->slots = slots;
    struct plan_env env = {.data_dir = dir};
    struct fr_error err;
    fr_error_init(&err);
    json_t *plan = json_loads(text, 0, NULL);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, cfg, &env, limit, &p, &err), FR_OK);
    json_decref(plan);
    struct plan_stage_view v;
    plan_stage_view(p, 0, &v);
    assert_true(v.ntasks >= 20);
    runner_query *q = runner_query_new("q-window", p);
    assert_int_equal(runner_submit(&f->base, q, &err), FR_OK);
    *fp = f;
    return q;
}

static runner_query *submit(struct fake **fp, int slots, int64_t limit, struct cfg *cfg)
{
    runner_query *q = submit_plan(fp, slots, limit, cfg, "{\"source\": {\"dataset\": \"t\"}}");
    struct plan_stage_view v;
    plan_stage_view(q->plan, 0, &v);
    assert_int_equal(v.limit_rows, limit);
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
    end_task(f, 3, 10);
    end_task(f, 4, 10); /* 5 ended short of the limit: one more */
    assert_non_null(handed(f, 7));
    assert_null(handed(f, 8));
    end_task(f, 5, 10); /* 6 = 2 x slots ended short of it: the limit is far, all go */
    struct plan_stage_view v;
    plan_stage_view(q->plan, 0, &v);
    assert_int_equal(f->njobs, v.ntasks);
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

/* A limited stage that reads a shuffle whose small buckets were coalesced:
 * runnable tasks stand apart (0, 3, 6 of 8), and the window counts those, not
 * task numbers (which would hand over task 0 alone, one at a time). */
/* A task that lost its input (a worker gone) makes the plan rerun from its
 * start: the held tasks of that run end skipped, never handed over; the rerun
 * hands over its own first tasks and finishes. */
static void test_a_rerun_skips_the_held_tasks(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit(&f, 2, 1000000, &cfg);
    struct fr_error err;
    fr_error_init(&err);
    fr_error_setk(&err, FR_EIO, "input-lost", "its worker is gone");
    runner__task_done(take(f, 1), FR_EIO, NULL, 0, &err, 0, NULL);
    assert_int_equal(f->njobs, 2); /* nothing more handed over */
    pthread_mutex_lock(&q->lock);
    assert_true(q->restart_pending);
    pthread_mutex_unlock(&q->lock);
    end_task(f, 0, 10); /* the first run's last task: the plan runs again */
    assert_int_equal(f->njobs, 4);
    assert_non_null(handed(f, 0));
    assert_non_null(handed(f, 1));
    assert_null(handed(f, 2));
    end_all(f);
    assert_true(runner_query_wait(q, 5000));
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    finish_free(f, q, &cfg);
}

static void test_the_window_counts_runnable_tasks(void **state)
{
    (void)state;
    struct cfg cfg;
    struct fake *f = NULL;
    runner_query *q = submit_plan(&f, 2, -1, &cfg,
                                  "{\"source\": {\"dataset\": \"t\"}, \"ops\": [{\"groupby\": "
                                  "[\"a\"], \"agg\": [\"count(*) as n\"]}, {\"limit\": 5}]}");
    struct plan_stage_view v0, v1;
    plan_stage_view(q->plan, 0, &v0);
    plan_stage_view(q->plan, 1, &v1);
    assert_true(v1.limit_rows >= 0);
    assert_int_equal(v1.ntasks, 8);
    assert_int_equal(f->njobs, v0.ntasks); /* the scan has no limit */
    for (int t = 0; t < v0.ntasks; t++) {  /* 8 KiB a bucket: 320 KiB a bucket in all */
        struct rjob *job = take(f, t);
        runner__task_begin(job, NULL, NULL, 0);
        struct runner_part **outs = calloc((size_t)v0.nbuckets + 1, sizeof(*outs));
        for (int b = 0; b < v0.nbuckets; b++) {
            struct df_column *c = df_column_new(DF_TYPE_INT64, 1024);
            for (int i = 0; i < 1024; i++)
                df_column_append_int64(c, i);
            struct df_table *table = df_table_new();
            df_table_add(table, "a", c);
            outs[b] = runner__part_local(table);
        }
        runner__task_done(job, FR_OK, outs, v0.nbuckets, NULL, 0, NULL);
    }
    int runnable = 0, handed1 = 0;
    pthread_mutex_lock(&q->lock);
    assert_int_equal(q->stage, 1);
    for (int t = 0; t < v1.ntasks; t++)
        runnable += q->task_rows[t] < 0; /* the coalesced-away ones ended at once (0 rows) */
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < f->njobs; i++)
        handed1 += f->jobs[i] && f->jobs[i]->stage == 1;
    assert_true(runnable >= 2 && runnable < 8); /* coalesced */
    assert_int_equal(handed1, 2);               /* two runnable tasks, not task 0 alone */
    end_all(f);
    assert_true(runner_query_wait(q, 5000));
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
        cmocka_unit_test(test_a_rerun_skips_the_held_tasks),
        cmocka_unit_test(test_the_window_counts_runnable_tasks),
        cmocka_unit_test(test_unlimited_stages_hand_everything_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
