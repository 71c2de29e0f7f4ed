/* Tests of the stage outputs a query holds (src/runner/runner_driver.c,
 * progress.intermediate_bytes and intermediate_peak_bytes): a shuffle's
 * bucket is freed as soon as the one task that reads it has succeeded, not
 * when its whole stage ends. An aggregation into as many groups as rows
 * passes its rows through the partial phase, so the shuffle (P) is about
 * as large as the result (F): held until the stage ends, the peak is P + F;
 * freed bucket by bucket (one final task at a time here), about
 * P + F / shuffle_partitions (with no coalescing of the buckets: with it, the
 * one task reading them all frees them when it ends). With a memory budget, outputs held past what
 * the budget's other charges leave fail the query (memory-budget-exceeded)
 * and are freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_int.h"

#define NROWS 60000

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

/* {"source": {"rows": [{"k": 0, "v": 0}, ...]}, "ops": [...]}: every k once. */
static char *distinct_keys_plan(int n, const char *ops)
{
    size_t cap = (size_t)n * 40 + 256;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "{\"source\": {\"rows\": [");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s{\"k\": %d, \"v\": %d}", i ? "," : "",
                                (i * 7919) % n, i);
    snprintf(s + len, cap - len, "]}, \"ops\": %s}", ops);
    return s;
}

static int64_t progress(runner_query *q, const char *key)
{
    json_t *j = runner_query_json(q);
    json_t *v = json_object_get(json_object_get(j, "progress"), key);
    assert_true(json_is_integer(v));
    int64_t x = json_integer_value(v);
    json_decref(j);
    return x;
}

static runner_query *run_plan(runner *r, const char *text, const struct cfg *cfg)
{
    runner_query *q = runner_query_new("q-held", build(text, cfg));
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_submit(r, q, &err), FR_OK);
    assert_true(runner_query_wait(q, -1));
    return q;
}

/* A local runner on `threads` threads over cfg: maintain_order off, the
 * given shuffle partitions and morsel size. */
static runner *wide_runner(struct cfg *cfg, int parts, int64_t morsel, int threads)
{
    cfg_defaults(cfg);
    cfg->maintain_order = false;
    cfg->shuffle_partitions = parts;
    cfg->morsel_size_rows = morsel;
    cfg->shuffle_coalesce_bytes = 0; /* every bucket its own task: freed one by one */
    runner *r = NULL;
    assert_int_equal(runner_local_new(cfg_freeze(cfg), NULL, threads, &r, NULL), FR_OK);
    return r;
}

static void test_shuffle_buckets_are_freed_as_read(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = wide_runner(&cfg, 8, 4096, 1); /* a morsel says: as many groups as rows */
    char *text =
        distinct_keys_plan(NROWS, "[{\"groupby\": [\"k\"], \"agg\": [\"count(*) as n\"]}]");
    runner_query *q = run_plan(r, text, &cfg);
    free(text);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    int64_t result = runner_query_bytes(q), peak = progress(q, "intermediate_peak_bytes");
    /* 60000 groups of (k, n): int64 each */
    assert_true(result >= (int64_t)NROWS * 16);
    /* the whole shuffle and the result were each held at some time */
    assert_true(peak >= result);
    /* but never both in full: at most the shuffle and a few buckets */
    if (peak >= result + result / 2)
        fail_msg("held %lld bytes at the peak for a %lld-byte result: the shuffle was not freed "
                 "as it was read",
                 (long long)peak, (long long)result);
    assert_int_equal(progress(q, "intermediate_bytes"), 0); /* nothing left once finished */
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

/* Buckets freed as they are read leave the answer whole: a shuffled
 * groupby, then a global aggregate over its groups, on 2 threads. */
static void test_answers_stay_right(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = wide_runner(&cfg, 4, 512, 2);
    char *text = distinct_keys_plan(
        5000, "[{\"groupby\": [\"k\"], \"agg\": [\"sum(v) as s\"]}, {\"agg\": [\"sum(s) as t\", "
              "\"count(*) as n\"]}]");
    runner_query *q = run_plan(r, text, &cfg);
    free(text);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    struct df_table *const *parts = NULL;
    int nparts = 0;
    assert_int_equal(runner_query_result(q, &parts, &nparts), FR_OK);
    int64_t t = 0, n = 0;
    for (int i = 0; i < nparts; i++)
        for (int64_t row = 0; row < parts[i]->nrows; row++) {
            t += ((const int64_t *)parts[i]->cols[0]->values)[row];
            n += ((const int64_t *)parts[i]->cols[1]->values)[row];
        }
    assert_int_equal(n, 5000);
    assert_int_equal(t, (int64_t)4999 * 5000 / 2);
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

static void test_budget_fails_a_query_that_holds_too_much(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = wide_runner(&cfg, 8, 4096, 1);
    atomic_llong charged = 0;
    runner_set_memory_budget(r, 400000); /* the wide query holds over 1 MB */
    runner_set_memory_charged(r, &charged, NULL);
    const char *ops = "[{\"groupby\": [\"k\"], \"agg\": [\"count(*) as n\"]}]";
    char *wide = distinct_keys_plan(NROWS, ops), *narrow = distinct_keys_plan(100, ops);
    runner_query *q = run_plan(r, wide, &cfg);
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    assert_string_equal(runner_query_error(q)->kind, "memory-budget-exceeded");
    assert_non_null(strstr(runner_query_error(q)->message, "--memory-limit 400000"));
    assert_int_equal(progress(q, "intermediate_bytes"), 0);
    runner_query_unref(q);
    /* its outputs were given back: a small query fits */
    q = run_plan(r, narrow, &cfg);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    runner_query_unref(q);
    /* the budget's other charges count: with all but 100 bytes taken, the small one does not */
    atomic_store(&charged, 400000 - 100);
    q = run_plan(r, narrow, &cfg);
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    assert_string_equal(runner_query_error(q)->kind, "memory-budget-exceeded");
    runner_query_unref(q);
    /* no budget, no limit */
    runner_set_memory_budget(r, 0);
    q = run_plan(r, wide, &cfg);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    runner_query_unref(q);
    free(wide);
    free(narrow);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

/* A task's working memory counts against the budget with what is held (and
 * what the owner's upload checks hold): an
 * aggregate over a wide computed string column holds one row a task, but
 * each morsel's 60000 strings of 300 bytes live while they are counted. */
static void test_budget_counts_running_tasks(void **state)
{
    (void)state;
    struct cfg cfg;
    runner *r = wide_runner(&cfg, 8, NROWS, 1);
    atomic_llong charged = 0;
    runner_set_memory_budget(r, 400000);
    runner_set_memory_charged(r, &charged, NULL);
    char ops[1024], pad[301];
    memset(pad, 'x', 300);
    pad[300] = '\0';
    snprintf(ops, sizeof(ops),
             "[{\"agg\": [\"sum(length(concat(k, '%s'))) as n\", \"count(*) as c\"]}]", pad);
    char *text = distinct_keys_plan(NROWS, ops);
    runner_query *q = run_plan(r, text, &cfg);
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    assert_string_equal(runner_query_error(q)->kind, "memory-budget-exceeded");
    assert_non_null(strstr(runner_query_error(q)->message, "working memory"));
    runner_query_unref(q);
    assert_int_equal(atomic_load(&r->working), 0); /* every charge given back */
    /* without a budget it runs, and gives its working memory back too */
    runner_set_memory_budget(r, 0);
    q = run_plan(r, text, &cfg);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    assert_int_equal(runner_query_rows(q), 1);
    runner_query_unref(q);
    /* a budget it fits in */
    runner_set_memory_budget(r, (int64_t)1 << 30);
    q = run_plan(r, text, &cfg);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    runner_query_unref(q);
    assert_int_equal(atomic_load(&r->working), 0);
    /* unless the owner's upload checks hold most of it now */
    atomic_llong checking = ((int64_t)1 << 30) - 100000;
    runner_set_memory_charged(r, &charged, &checking);
    q = run_plan(r, text, &cfg);
    assert_int_equal(runner_query_state(q), RQ_FAILED);
    assert_string_equal(runner_query_error(q)->kind, "memory-budget-exceeded");
    runner_query_unref(q);
    atomic_store(&checking, 0);
    q = run_plan(r, text, &cfg);
    assert_int_equal(runner_query_state(q), RQ_SUCCEEDED);
    runner_query_unref(q);
    free(text);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_buckets_are_freed_as_read),
        cmocka_unit_test(test_answers_stay_right),
        cmocka_unit_test(test_budget_fails_a_query_that_holds_too_much),
        cmocka_unit_test(test_budget_counts_running_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
