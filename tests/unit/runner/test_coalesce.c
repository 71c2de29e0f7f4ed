/* Tests of the coalescing of small shuffle partitions (src/runner/runner_driver.c,
 * shuffle_coalesce_bytes): adjacent buckets that together stay under the
 * target are read by one task, the others are counted skipped (in the stage's
 * tasks_skipped, with no task record), the stage says so in its decisions,
 * and every answer equals the uncoalesced one: a
 * groupby, a sort after it (range buckets and a one-to-one stage after a
 * coalesced one), a shuffle join and a broadcast join after a groupby. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"

static plan_physical *build(const char *text, const struct cfg *cfg)
{
    struct plan_env env = {.data_dir = "."};
    struct fr_error err;
    fr_error_init(&err);
    json_t *plan = json_loads(text, 0, NULL);
    assert_non_null(plan);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, cfg, &env, -1, &p, &err), FR_OK);
    json_decref(plan);
    return p;
}

/* {"k": (i * 7919) % n, "v": i} for i < n, as inline rows (a JSON array, new). */
static char *rows_json(int n)
{
    size_t cap = (size_t)n * 40 + 16;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s{\"k\": %d, \"v\": %d}", i ? "," : "",
                                (i * 7919) % n, i);
    snprintf(s + len, cap - len, "]");
    return s;
}

/* The plan over n rows; "@" in ops stands for the rows too (a join's right side). */
static char *plan_text(int n, const char *ops)
{
    char *rows = rows_json(n);
    size_t cap = strlen(rows) * 2 + strlen(ops) + 256, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s, cap, "{\"source\": {\"rows\": %s}, \"ops\": ", rows);
    for (const char *c = ops; *c; c++)
        len += (size_t)snprintf(s + len, cap - len, "%s", *c == '@' ? rows : (char[2]){*c, 0});
    snprintf(s + len, cap - len, "}");
    free(rows);
    return s;
}

static runner *new_runner(struct cfg *cfg, int64_t coalesce, int threads)
{
    cfg_defaults(cfg);
    cfg->maintain_order = false;
    cfg->shuffle_partitions = 8;
    cfg->broadcast_join_size_bytes_threshold = 0;
    cfg->shuffle_coalesce_bytes = coalesce;
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(cfg), NULL, threads, &r, NULL), FR_OK);
    return r;
}

static runner_query *run_plan(runner *r, const char *text, const struct cfg *cfg)
{
    runner_query *q = runner_query_new("q-coalesce", build(text, cfg));
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_submit(r, q, &err), FR_OK);
    assert_true(runner_query_wait(q, -1));
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    return q;
}

/* Stage s's integer member key. */
static int64_t stage_count(json_t *stages, int s, const char *key)
{
    json_t *st = json_array_get(json_object_get(stages, "stages"), s);
    assert_true(json_is_integer(json_object_get(st, key)));
    return json_integer_value(json_object_get(st, key));
}

/* Tasks of stage s in state (its records). */
static int count_state(json_t *stages, int s, const char *state)
{
    json_t *tasks = json_object_get(json_array_get(json_object_get(stages, "stages"), s), "tasks");
    int n = 0;
    for (size_t i = 0; i < json_array_size(tasks); i++)
        n += strcmp(json_string_value(json_object_get(json_array_get(tasks, i), "state")), state) ==
             0;
    return n;
}

static bool has_coalesce_decision(json_t *stages, int s)
{
    json_t *d = json_object_get(json_array_get(json_object_get(stages, "stages"), s), "decisions");
    for (size_t i = 0; i < json_array_size(d); i++) {
        const char *f = json_string_value(json_object_get(json_array_get(d, i), "field"));
        if (f && strcmp(f, "shuffle_coalesce_bytes") == 0)
            return true;
    }
    return false;
}

/* The result's int64 column c, in order (new), and its row count. */
static int64_t *column(runner_query *q, int c, int64_t *n)
{
    struct df_table *const *parts = NULL;
    int nparts = 0;
    assert_int_equal(runner_query_result(q, &parts, &nparts), FR_OK);
    int64_t total = 0;
    for (int i = 0; i < nparts; i++)
        total += parts[i]->nrows;
    int64_t *out = calloc((size_t)total + 1, sizeof(*out)), k = 0;
    for (int i = 0; i < nparts; i++) {
        assert_int_equal(parts[i]->cols[c]->type, DF_TYPE_INT64);
        for (int64_t row = 0; row < parts[i]->nrows; row++)
            out[k++] = ((const int64_t *)parts[i]->cols[c]->values)[row];
    }
    *n = total;
    return out;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Runs text with coalescing off and with `coalesce`; the result's column c
 * must be equal (as a set, or in order when ordered); returns the stages of
 * the coalesced run (new). */
static json_t *same_answer(const char *text, int c, bool ordered, int64_t coalesce, int64_t rows)
{
    struct cfg off_cfg, on_cfg;
    runner *off = new_runner(&off_cfg, 0, 2), *on = new_runner(&on_cfg, coalesce, 2);
    runner_query *a = run_plan(off, text, &off_cfg), *b = run_plan(on, text, &on_cfg);
    int64_t na = 0, nb = 0;
    int64_t *ca = column(a, c, &na), *cb = column(b, c, &nb);
    assert_int_equal(na, rows);
    assert_int_equal(nb, rows);
    if (!ordered) {
        qsort(ca, (size_t)na, sizeof(*ca), cmp64);
        qsort(cb, (size_t)nb, sizeof(*cb), cmp64);
    }
    assert_memory_equal(ca, cb, (size_t)na * sizeof(*ca));
    json_t *stages = runner_query_stages_json(b), *plain = runner_query_stages_json(a);
    for (size_t s = 0; s < json_array_size(json_object_get(plain, "stages")); s++) {
        assert_int_equal(count_state(plain, (int)s, "skipped"), 0); /* off: every task ran */
        assert_int_equal(stage_count(plain, (int)s, "tasks_skipped"), 0);
        assert_false(has_coalesce_decision(plain, (int)s));
    }
    json_decref(plain);
    free(ca);
    free(cb);
    runner_query_unref(a);
    runner_query_unref(b);
    runner_free(off, NULL);
    runner_free(on, NULL);
    cfg_cleanup(&off_cfg);
    cfg_cleanup(&on_cfg);
    return stages;
}

/* A small groupby's 8 final partitions are read by one task. */
static void test_groupby_one_task(void **state)
{
    (void)state;
    char *text = plan_text(5000, "[{\"groupby\": [\"k\"], \"agg\": [\"sum(v) as s\"]}]");
    json_t *stages = same_answer(text, 1, false, 16 << 20, 5000);
    assert_int_equal(count_state(stages, 1, "ok"), 1);
    assert_int_equal(stage_count(stages, 1, "tasks_skipped"), 7);
    assert_int_equal(count_state(stages, 1, "skipped"), 0); /* no records of them */
    assert_true(has_coalesce_decision(stages, 1));
    json_t *st1 = json_array_get(json_object_get(stages, "stages"), 1);
    assert_int_equal(json_integer_value(json_object_get(st1, "tasks_done")), 8);
    assert_int_equal(json_integer_value(json_object_get(st1, "rows_out")), 5000);
    json_decref(stages);
    free(text);
}

/* Under a smaller target the buckets go in runs: more than one task, fewer
 * than eight, none reading more than the target unless alone. */
static void test_groupby_runs_under_target(void **state)
{
    (void)state;
    char *text = plan_text(60000, "[{\"groupby\": [\"k\"], \"agg\": [\"count(*) as n\"]}]");
    int64_t target = 300000; /* the shuffle is about 1 MB: ~120 KB a bucket */
    json_t *stages = same_answer(text, 0, false, target, 60000);
    int ok = count_state(stages, 1, "ok");
    assert_true(ok > 1 && ok < 8);
    assert_int_equal(ok + stage_count(stages, 1, "tasks_skipped"), 8);
    assert_int_equal(stage_count(stages, 1, "tasks_done"), 8);
    json_t *tasks = json_object_get(json_array_get(json_object_get(stages, "stages"), 1), "tasks");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *t = json_array_get(tasks, i);
        if (strcmp(json_string_value(json_object_get(t, "state")), "ok") == 0)
            assert_true(json_integer_value(json_object_get(t, "bytes_in")) <= target);
    }
    /* task 0 always runs (it leads the first run of buckets) */
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *t = json_array_get(tasks, i);
        if (json_integer_value(json_object_get(t, "task")) == 0)
            assert_string_equal(json_string_value(json_object_get(t, "state")), "ok");
    }
    json_decref(stages);
    free(text);
}

/* A sort after a coalesced groupby: the one-to-one stage skips what had no
 * task, the range buckets merge in order, and the answer is sorted. */
static void test_sort_after_groupby(void **state)
{
    (void)state;
    char *text = plan_text(
        3000, "[{\"groupby\": [\"k\"], \"agg\": [\"sum(v) as s\"]}, {\"sort\": [\"k desc\"]}]");
    json_t *stages = same_answer(text, 0, true, 16 << 20, 3000);
    int n = (int)json_array_size(json_object_get(stages, "stages"));
    assert_true(n >= 3);
    for (int s = 1; s < n; s++) /* every stage after the scan ran one task */
        assert_int_equal(count_state(stages, s, "ok"), 1);
    json_decref(stages);
    free(text);
}

/* A shuffle join (both sides bucketed) of small inputs: one task. */
static void test_shuffle_join(void **state)
{
    (void)state;
    char *text = plan_text(4000, "[{\"join\": {\"right\": {\"source\": {\"rows\": @}, \"ops\": "
                                 "[{\"select\": [\"k\", \"v as w\"]}]}, \"on\": [\"k\"]}}]");
    json_t *stages = same_answer(text, 2, false, 16 << 20, 4000);
    int n = (int)json_array_size(json_object_get(stages, "stages"));
    assert_int_equal(count_state(stages, n - 1, "ok"), 1);
    assert_true(has_coalesce_decision(stages, n - 1));
    json_decref(stages);
    free(text);
}

/* Runs a groupby of rows rows shuffled into partitions partitions (coalesced
 * under 16 MiB) and a broadcast join of it with two rows after it, on *r
 * (new, with its *cfg); checks the answer (keys 5 and 7) and returns the
 * query (new). */
static runner_query *broadcast_after_groupby(int rows, int64_t partitions, struct cfg *cfg,
                                             runner **r)
{
    char *text = plan_text(
        rows, "[{\"groupby\": [\"k\"], \"agg\": [\"sum(v) as s\"]}, {\"join\": {\"right\": "
              "{\"source\": {\"rows\": [{\"k\": 5, \"z\": 1}, {\"k\": 7, \"z\": 2}]}}, "
              "\"on\": [\"k\"]}}]");
    *r = new_runner(cfg, 16 << 20, 2);
    runner_free(*r, NULL);
    cfg->shuffle_partitions = partitions;
    cfg->broadcast_join_size_bytes_threshold = 10 << 20;
    *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(cfg), NULL, 2, r, NULL), FR_OK);
    runner_query *q = run_plan(*r, text, cfg);
    int64_t n = 0;
    int64_t *k = column(q, 0, &n);
    assert_int_equal(n, 2);
    qsort(k, 2, sizeof(*k), cmp64);
    assert_int_equal(k[0], 5);
    assert_int_equal(k[1], 7);
    free(k);
    free(text);
    return q;
}

/* A broadcast join after a coalesced groupby: its one-to-one left side had
 * one task, so one join task runs. */
static void test_broadcast_after_groupby(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = NULL;
    runner_query *q = broadcast_after_groupby(2000, 8, &cfg, &r);
    json_t *stages = runner_query_stages_json(q);
    int ns = (int)json_array_size(json_object_get(stages, "stages"));
    assert_int_equal(count_state(stages, ns - 1, "ok"), 1);
    assert_int_equal(stage_count(stages, ns - 1, "tasks_skipped"), 7);
    assert_int_equal(count_state(stages, ns - 1, "skipped"), 0);
    json_decref(stages);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

/* A groupby shuffled into PLAN_MAX_BUCKETS (4096) partitions, coalesced, and
 * a broadcast join after it (its one-to-one side skips the tasks whose input
 * had no task): the tasks planned not to run take no task record, so the
 * records of the tasks that ran (in every later stage) are all kept; they
 * are counted in their stage's tasks_skipped, and framed_tasks_total counts
 * them skipped, not ok. */
static void test_many_partitions_keep_records(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = NULL;
    runner_query *q = broadcast_after_groupby(3000, PLAN_MAX_BUCKETS, &cfg, &r);
    json_t *stages = runner_query_stages_json(q);
    json_t *list = json_object_get(stages, "stages");
    int ns = (int)json_array_size(list), ok = 0;
    int64_t skipped = 0;
    assert_true(ns >= 3);
    for (int s = 0; s < ns; s++) {
        json_t *st = json_array_get(list, s);
        assert_false(json_is_true(json_object_get(st, "tasks_truncated")));
        int ran = count_state(stages, s, "ok");
        assert_true(ran >= 1); /* every stage's task that ran has its record */
        ok += ran;
        skipped += stage_count(stages, s, "tasks_skipped");
        /* the stage's totals add up: the tasks that ran and those skipped */
        assert_int_equal(stage_count(stages, s, "tasks_done"),
                         ran + stage_count(stages, s, "tasks_skipped"));
        assert_int_equal(stage_count(stages, s, "tasks_total"),
                         stage_count(stages, s, "tasks_done"));
    }
    assert_int_equal(stage_count(stages, ns - 1, "tasks_total"), PLAN_MAX_BUCKETS);
    assert_true(stage_count(stages, ns - 1, "tasks_skipped") >= PLAN_MAX_BUCKETS - 2);
    int64_t counts[RUNNER_TASK_OUTCOMES];
    runner_task_counts(r, counts);
    assert_int_equal(counts[RT_OK], ok); /* skipped tasks are not counted ok */
    assert_int_equal(counts[RT_SKIPPED], skipped);
    assert_string_equal(runner_task_outcome_name(RT_SKIPPED), "skipped");
    json_decref(stages);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

/* Two shuffles in a row at PLAN_MAX_BUCKETS partitions: the second's
 * producer stage ran one task (the rest skipped, with no output), so the
 * stage reading it counts one input partition a bucket, not 4096, and is
 * coalesced too (it ran 4096 tasks when the skipped producers counted). */
static void test_shuffle_after_coalesced_shuffle(void **state)
{
    (void)state;
    int rows = 3000;
    char *text = plan_text(rows, "[{\"groupby\": [\"k\"], \"agg\": [\"sum(v) as s\"]}, "
                                 "{\"select\": [\"k\", \"k % 7 as g\"]}, "
                                 "{\"groupby\": [\"g\"], \"agg\": [\"count(*) as n\"]}]");
    struct cfg cfg;
    runner *r = new_runner(&cfg, 16 << 20, 2);
    runner_free(r, NULL);
    cfg.shuffle_partitions = PLAN_MAX_BUCKETS;
    r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 2, &r, NULL), FR_OK);
    runner_query *q = run_plan(r, text, &cfg);
    int64_t n = 0;
    int64_t *counts = column(q, 1, &n);
    assert_int_equal(n, 7);
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++)
        total += counts[i];
    assert_int_equal(total, rows);
    json_t *stages = runner_query_stages_json(q);
    int ns = (int)json_array_size(json_object_get(stages, "stages"));
    assert_true(ns >= 3);
    for (int s = 1; s < ns; s++) { /* both shuffle-reading stages: a task or two */
        int ok = count_state(stages, s, "ok");
        assert_true(ok >= 1 && ok <= 2);
        assert_int_equal(ok + stage_count(stages, s, "tasks_skipped"), PLAN_MAX_BUCKETS);
        assert_true(has_coalesce_decision(stages, s));
    }
    json_decref(stages);
    free(counts);
    free(text);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groupby_one_task),
        cmocka_unit_test(test_groupby_runs_under_target),
        cmocka_unit_test(test_sort_after_groupby),
        cmocka_unit_test(test_shuffle_join),
        cmocka_unit_test(test_broadcast_after_groupby),
        cmocka_unit_test(test_many_partitions_keep_records),
        cmocka_unit_test(test_shuffle_after_coalesced_shuffle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
