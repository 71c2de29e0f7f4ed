/* Tests of the config resolution's latency record (worker_config.c) and of a
 * task's config sent inline in its body (worker_task.c): a cache hit and a
 * fetch land in framed_worker_config_resolve_seconds and in /v1/info's
 * resolve_us; an inline config is verified against the ID (wrong bytes:
 * config-integrity, the task never runs) and never touches the cache or the
 * store. The store is the embedded one in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "worker/worker.h"

struct fixture {
    worker *w;
    struct cfg_frozen *frozen; /* the config the tasks name */
};

/* with_config: the store holds the frozen config; else it is empty. */
static struct fixture *make(bool with_config)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    struct cfg c;
    cfg_defaults(&c);
    c.shuffle_partitions = 5;
    fx->frozen = cfg_freeze(&c);
    cfg_cleanup(&c);
    store *st = NULL;
    assert_int_equal(store_embedded_open(NULL, &st, NULL), FR_OK);
    if (with_config) {
        char id[80];
        assert_int_equal(
            store_put(st, fx->frozen->canonical, fx->frozen->canonical_len, id, sizeof(id), NULL),
            FR_OK);
        assert_string_equal(id, fx->frozen->id);
    }
    struct worker_options o = {.threads = 2};
    assert_int_equal(worker_new_with_store(&o, st, &fx->w, NULL), FR_OK);
    return fx;
}

static int setup_full(void **state)
{
    *state = make(true);
    return 0;
}

static int setup_empty(void **state)
{
    *state = make(false);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    worker_free(fx->w);
    cfg_frozen_unref(fx->frozen);
    free(fx);
    return 0;
}

/* A one-row task; config_inline set when inl is not NULL. */
static json_t *tiny_task(const char *inl, size_t len)
{
    json_t *body = json_pack("{s{si si s{ss s[{si}] s[]} sn s[] sn si} s[]}", "spec", "stage", 0,
                             "task", 0, "input", "kind", "rows", "rows", "a", 1, "hints", "core",
                             "pipeline", "sink", "nbuckets", 1, "inputs");
    if (inl)
        json_object_set_new(body, "config_inline", json_stringn(inl, len));
    return body;
}

static char *metrics_text(worker *w)
{
    struct fr_buf b;
    fr_buf_init(&b);
    worker_metrics(w, &b);
    size_t len = 0;
    return fr_buf_steal(&b, &len);
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

static void test_hit_is_counted(void **state)
{
    struct fixture *fx = *state;
    json_t *body = tiny_task(NULL, 0);
    for (int i = 0; i < 3; i++) { /* one fetch, then two hits */
        json_t *out = NULL, *ext = NULL;
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(worker_task_run(fx->w, fx->frozen->id, NULL, body, &out, &ext, &err),
                         FR_OK);
        json_decref(out);
    }
    json_decref(body);
    char *m = metrics_text(fx->w);
    assert_contains(m, "# TYPE framed_worker_config_resolve_seconds histogram\n");
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"hit\"} 2\n");
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"fetch\"} 1\n");
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"inline\"} 0\n");
    assert_contains(m,
                    "framed_worker_config_resolve_seconds_bucket{result=\"hit\",le=\"+Inf\"} 2\n");
    assert_contains(m, "framed_worker_config_resolve_seconds_bucket{result=\"hit\",le=\"1e-06\"} ");
    assert_contains(m, "framed_worker_config_resolve_seconds_bucket{result=\"hit\",le=\"5e-05\"} ");
    /* the task time counters beside it: three executions, no inputs */
    assert_contains(m, "framed_worker_task_executions_total 3\n");
    assert_contains(m, "framed_worker_input_fetches_total{source=\"remote\"} 0\n");
    free(m);
    json_t *info = worker_info(fx->w);
    json_t *r = json_object_get(info, "resolve_us");
    assert_true(json_is_object(r));
    assert_int_equal(json_integer_value(json_object_get(r, "hits")), 2);
    assert_int_equal(json_integer_value(json_object_get(r, "fetches")), 1);
    assert_true(json_is_number(json_object_get(r, "hit_p50")));
    assert_true(json_is_number(json_object_get(r, "hit_p99")));
    assert_true(json_number_value(json_object_get(r, "hit_p99")) >=
                json_number_value(json_object_get(r, "hit_p50")));
    assert_true(json_is_number(json_object_get(r, "fetch_p99")));
    assert_true(json_is_null(json_object_get(r, "inline_p50")));
    json_decref(info);
}

static void test_inline_wrong_bytes_refused(void **state)
{
    struct fixture *fx = *state;
    char *bad = strdup(fx->frozen->canonical);
    char *digit = strpbrk(bad, "0123456789"); /* still JSON, other values */
    assert_non_null(digit);
    *digit = *digit == '9' ? '8' : (char)(*digit + 1);
    json_t *body = tiny_task(bad, fx->frozen->canonical_len);
    json_t *out = NULL, *ext = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_task_run(fx->w, fx->frozen->id, NULL, body, &out, &ext, &err),
                     FR_EDATA);
    assert_string_equal(err.kind, "config-integrity");
    assert_null(out);
    json_decref(body);
    free(bad);
    /* A config_inline that is not a string is a bad task, not a fallback to the cache. */
    body = json_pack("{s{si s{ss s[] s[]} sn s[] sn si} si}", "spec", "stage", 0, "input", "kind",
                     "rows", "rows", "hints", "core", "pipeline", "sink", "nbuckets", 1,
                     "config_inline", 7);
    fr_error_init(&err);
    assert_int_equal(worker_task_run(fx->w, fx->frozen->id, NULL, body, &out, &ext, &err),
                     FR_EINVAL);
    assert_string_equal(err.kind, "invalid-task");
    json_decref(body);
    /* The task never ran: no task counted, no partition, nothing cached. */
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->frozen->id, &st), FR_ENOTFOUND);
    int64_t n = -1, bytes = -1;
    worker_partition_totals(fx->w, &n, &bytes);
    assert_int_equal(n, 0);
    json_t *ids = worker_config_ids(fx->w);
    assert_int_equal(json_array_size(ids), 0);
    json_decref(ids);
    char *m = metrics_text(fx->w);
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"inline\"} 0\n");
    free(m);
}

/* The store is empty: only the inline bytes can make the task run. */
static void test_inline_runs_without_cache(void **state)
{
    struct fixture *fx = *state;
    json_t *body = tiny_task(fx->frozen->canonical, fx->frozen->canonical_len);
    for (int i = 0; i < 2; i++) {
        json_t *out = NULL, *ext = NULL;
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(worker_task_run(fx->w, fx->frozen->id, NULL, body, &out, &ext, &err),
                         FR_OK);
        assert_string_equal(json_string_value(json_object_get(out, "config_id")), fx->frozen->id);
        json_decref(out);
    }
    json_decref(body);
    json_t *ids = worker_config_ids(fx->w);
    assert_int_equal(json_array_size(ids), 0); /* the cache was not filled */
    json_decref(ids);
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->frozen->id, &st), FR_OK);
    assert_int_equal(st.tasks, 2);
    assert_int_equal(st.fetches, 0);
    assert_int_equal(st.cache_hits, 0);
    char *m = metrics_text(fx->w);
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"inline\"} 2\n");
    assert_contains(m, "framed_worker_config_resolve_seconds_count{result=\"hit\"} 0\n");
    free(m);
    json_t *info = worker_info(fx->w);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(info, "resolve_us"), "inlines")), 2);
    json_decref(info);
    /* Without the inline bytes the same task needs the store, which lacks the ID. */
    body = tiny_task(NULL, 0);
    json_t *out = NULL, *ext = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_task_run(fx->w, fx->frozen->id, NULL, body, &out, &ext, &err),
                     FR_ENOTFOUND);
    assert_string_equal(err.kind, "config-not-found");
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit_is_counted, setup_full, teardown),
        cmocka_unit_test_setup_teardown(test_inline_wrong_bytes_refused, setup_full, teardown),
        cmocka_unit_test_setup_teardown(test_inline_runs_without_cache, setup_empty, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
