/* Tests of src/worker/worker_config.c and worker_task.c: single-flight
 * resolution (many threads missing one ID cause one store fetch), the
 * counters, integrity and not-found failures that cache nothing, and a task
 * run with the config passed down. The store is a counting fake. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/worker.h"

#define NTHREADS 8

/* A store holding one config, slow to answer, that counts its gets. */
struct fake_store {
    store base;
    struct cfg_frozen *frozen; /* what it holds */
    bool tamper;               /* answer other bytes than the ID's */
    bool fast;                 /* answer at once */
    atomic_int gets;
};

static int fake_get(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err)
{
    struct fake_store *f = (struct fake_store *)s;
    atomic_fetch_add(&f->gets, 1);
    struct timespec ts = {0, 100 * 1000000L};
    if (!f->fast)
        nanosleep(&ts, NULL); /* long enough for the other threads to miss too */
    if (strcmp(id, f->frozen->id) != 0)
        return fr_error_set(err, FR_ENOTFOUND, "absent");
    *bytes = strdup(f->frozen->canonical);
    *len = f->frozen->canonical_len;
    if (f->tamper)
        (*bytes)[1] = 'X';
    return FR_OK;
}

static int fake_put(store *s, const char *h, const char *b, size_t l, char *id, size_t n,
                    struct fr_error *e)
{
    (void)s, (void)h, (void)b, (void)l, (void)id, (void)n;
    return fr_error_set(e, FR_EINVAL, "read-only");
}

static int fake_release(store *s, const char *id, const char *h, struct fr_error *e)
{
    (void)s, (void)id, (void)h;
    return fr_error_set(e, FR_EINVAL, "read-only");
}

static int fake_refcount(store *s, const char *id, int64_t *n, struct fr_error *e)
{
    (void)s, (void)id, (void)e;
    *n = 0;
    return FR_OK;
}

static void fake_free(store *s)
{
    struct fake_store *f = (struct fake_store *)s;
    cfg_frozen_unref(f->frozen);
    free(f);
}

static const struct store_vtable fake_vt = {"fake",        fake_put, fake_get, fake_release,
                                            fake_refcount, NULL,     fake_free};

struct fixture {
    worker *w;
    struct fake_store *store; /* owned by w */
    char id[80];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    fx->store = calloc(1, sizeof(*fx->store));
    fx->store->base.vt = &fake_vt;
    struct cfg c;
    cfg_defaults(&c);
    c.shuffle_partitions = 3;
    fx->store->frozen = cfg_freeze(&c);
    cfg_cleanup(&c);
    snprintf(fx->id, sizeof(fx->id), "%s", fx->store->frozen->id);
    struct worker_options o = {.threads = 2};
    assert_int_equal(worker_new_with_store(&o, &fx->store->base, &fx->w, NULL), FR_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    worker_free(fx->w);
    free(fx);
    return 0;
}

struct resolver {
    struct fixture *fx;
    pthread_barrier_t *start;
    int rc;
    char kind[48];
    struct cfg_frozen *got;
};

static void *resolve_main(void *arg)
{
    struct resolver *r = arg;
    struct fr_error err;
    fr_error_init(&err);
    pthread_barrier_wait(r->start);
    r->rc = worker_config_get(r->fx->w, r->fx->id, &r->got, &err);
    snprintf(r->kind, sizeof(r->kind), "%s", err.kind);
    return NULL;
}

static void test_single_flight(void **state)
{
    struct fixture *fx = *state;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    pthread_t tids[NTHREADS];
    struct resolver rs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        rs[i] = (struct resolver){.fx = fx, .start = &start};
        pthread_create(&tids[i], NULL, resolve_main, &rs[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&start);
    assert_int_equal(atomic_load(&fx->store->gets), 1);
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(rs[i].rc, FR_OK);
        assert_non_null(rs[i].got);
        assert_ptr_equal(rs[i].got, rs[0].got); /* one shared frozen config */
        assert_int_equal(rs[i].got->values.shuffle_partitions, 3);
        cfg_frozen_unref(rs[i].got);
    }
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->id, &st), FR_OK);
    assert_int_equal(st.fetches, 1);
    assert_int_equal(st.cache_hits, NTHREADS - 1);
    assert_int_equal(st.tasks, 0);
    json_t *ids = worker_config_ids(fx->w);
    assert_int_equal(json_array_size(ids), 1);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), fx->id);
    json_decref(ids);
}

static void test_drop_then_fetch_again(void **state)
{
    struct fixture *fx = *state;
    struct cfg_frozen *f = NULL;
    assert_int_equal(worker_config_get(fx->w, fx->id, &f, NULL), FR_OK);
    cfg_frozen_unref(f);
    bool was_cached = false;
    int64_t dropped = -1;
    worker_config_drop(fx->w, fx->id, &was_cached, &dropped);
    assert_true(was_cached);
    assert_int_equal(dropped, 0);
    json_t *ids = worker_config_ids(fx->w);
    assert_int_equal(json_array_size(ids), 0);
    json_decref(ids);
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->id, &st), FR_OK); /* counters stay */
    assert_int_equal(st.fetches, 1);
    assert_int_equal(worker_config_get(fx->w, fx->id, &f, NULL), FR_OK);
    cfg_frozen_unref(f);
    assert_int_equal(atomic_load(&fx->store->gets), 2);
    assert_int_equal(worker_config_stats(fx->w, fx->id, &st), FR_OK);
    assert_int_equal(st.fetches, 2);
    assert_int_equal(st.cache_hits, 0);
    worker_config_drop(fx->w, fx->id, &was_cached, NULL);
    worker_config_drop(fx->w, fx->id, &was_cached, NULL);
    assert_false(was_cached);
}

static void test_integrity_failure_caches_nothing(void **state)
{
    struct fixture *fx = *state;
    fx->store->tamper = true;
    for (int round = 1; round <= 2; round++) {
        struct cfg_frozen *f = NULL;
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(worker_config_get(fx->w, fx->id, &f, &err), FR_EDATA);
        assert_null(f);
        assert_string_equal(err.kind, "config-integrity");
        assert_int_equal(atomic_load(&fx->store->gets), round); /* nothing was cached */
    }
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->id, &st), FR_OK);
    assert_int_equal(st.fetches, 2);
    assert_int_equal(st.cache_hits, 0);
    json_t *ids = worker_config_ids(fx->w);
    assert_int_equal(json_array_size(ids), 0);
    json_decref(ids);
}

static void test_unknown_and_malformed_ids(void **state)
{
    struct fixture *fx = *state;
    char other[80] = "sha256:";
    memset(other + 7, 'a', 64);
    other[71] = '\0';
    struct cfg_frozen *f = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_config_get(fx->w, other, &f, &err), FR_ENOTFOUND);
    assert_string_equal(err.kind, "config-not-found");
    fr_error_init(&err);
    assert_int_equal(worker_config_get(fx->w, "sha256:nothex", &f, &err), FR_EINVAL);
    assert_string_equal(err.kind, "missing-config-id");
    assert_int_equal(atomic_load(&fx->store->gets), 1);
}

/* Series of /metrics labelled by a config ID. */
static int config_series(worker *w)
{
    struct fr_buf b;
    fr_buf_init(&b);
    worker_metrics(w, &b);
    int n = 0;
    for (const char *p = b.data; p && (p = strstr(p, "{config_id=\"")); p++)
        n++;
    fr_buf_cleanup(&b);
    return n;
}

/* Defect 8: thousands of well-formed unknown IDs cost one store fetch each
 * (asked again at once: none), and neither counters nor /metrics series grow
 * with them; a dropped config's series go with it. */
static void test_unknown_ids_bounded(void **state)
{
    struct fixture *fx = *state;
    enum { NIDS = 2000 };
    fx->store->fast = true;
    struct cfg_frozen *f = NULL;
    assert_int_equal(worker_config_get(fx->w, fx->id, &f, NULL), FR_OK);
    cfg_frozen_unref(f);
    assert_int_equal(config_series(fx->w), 3); /* fetches, hits, tasks of the held one */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NIDS; i++) {
            char id[80];
            snprintf(id, sizeof(id), "sha256:%064x", i);
            struct fr_error err;
            fr_error_init(&err);
            assert_int_equal(worker_config_get(fx->w, id, &f, &err), FR_ENOTFOUND);
            assert_string_equal(err.kind, "config-not-found");
        }
        assert_int_equal(atomic_load(&fx->store->gets), 1 + NIDS); /* round 2: no fetch */
    }
    assert_int_equal(config_series(fx->w), 3);
    json_t *info = worker_info(fx->w);
    assert_true(json_object_size(json_object_get(info, "configs")) <= 1 + WORKER_RECENT_WINDOW);
    json_decref(info);
    worker_config_drop(fx->w, fx->id, NULL, NULL);
    assert_int_equal(config_series(fx->w), 0);
}

static json_t *rows_task(void)
{
    return json_pack("{s{si si s{ss s[{si}{si}{si}] s[]} sn s[{ss}] sn si} s[]}", "spec", "stage",
                     0, "task", 0, "input", "kind", "rows", "rows", "a", 1, "a", 2, "a", 3, "hints",
                     "core", "pipeline", "filter", "a > 1", "sink", "nbuckets", 1, "inputs");
}

static void test_task_runs_with_its_config(void **state)
{
    struct fixture *fx = *state;
    json_t *body = rows_task(), *out = NULL, *ext = NULL;
    struct fr_error err;
    fr_error_init(&err);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(worker_task_run(fx->w, fx->id, NULL, body, &out, &ext, &err), FR_OK);
        assert_null(ext);
        assert_string_equal(json_string_value(json_object_get(out, "config_id")), fx->id);
        json_t *o = json_array_get(json_object_get(out, "outputs"), 0);
        assert_int_equal(json_integer_value(json_object_get(o, "rows")), 2);
        const char *pid = json_string_value(json_object_get(o, "id"));
        assert_non_null(pid);
        assert_int_equal(strncmp(pid, "p-", 2), 0);
        json_decref(out);
    }
    struct worker_config_stats st;
    assert_int_equal(worker_config_stats(fx->w, fx->id, &st), FR_OK);
    assert_int_equal(st.fetches, 1);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.tasks, 2);
    int64_t n = 0, bytes = 0;
    worker_partition_totals(fx->w, &n, &bytes);
    assert_int_equal(n, 2);
    int64_t dropped = 0;
    worker_config_drop(fx->w, fx->id, NULL, &dropped);
    assert_int_equal(dropped, 2);
    worker_partition_totals(fx->w, &n, &bytes);
    assert_int_equal(n, 0);
    assert_int_equal(bytes, 0);
    json_decref(body);
}

static void test_task_input_lost(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(worker_start(fx->w, "http://127.0.0.1:1/", NULL), FR_OK);
    json_t *body = json_pack("{s{si s{ss} sn s[] sn si} s[[{ss ss}]]}", "spec", "stage", 0, "input",
                             "kind", "stored", "core", "pipeline", "sink", "nbuckets", 1, "inputs",
                             "url", "http://127.0.0.1:1", "id", "p-0dd");
    json_t *out = NULL, *ext = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_task_run(fx->w, fx->id, NULL, body, &out, &ext, &err), FR_EIO);
    assert_null(out);
    assert_string_equal(err.kind, "input-lost");
    json_t *lost = json_object_get(ext, "lost");
    assert_string_equal(json_string_value(json_object_get(lost, "id")), "p-0dd");
    assert_string_equal(json_string_value(json_object_get(lost, "url")), "http://127.0.0.1:1");
    json_decref(ext);
    json_decref(body);
}

/* A fixture whose config has a short task_timeout_ms (300 ms). */
static int setup_short(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    fx->store = calloc(1, sizeof(*fx->store));
    fx->store->base.vt = &fake_vt;
    struct cfg c;
    cfg_defaults(&c);
    c.task_timeout_ms = 300;
    fx->store->frozen = cfg_freeze(&c);
    cfg_cleanup(&c);
    snprintf(fx->id, sizeof(fx->id), "%s", fx->store->frozen->id);
    struct worker_options o = {.threads = 2};
    assert_int_equal(worker_new_with_store(&o, &fx->store->base, &fx->w, NULL), FR_OK);
    *state = fx;
    return 0;
}

/* An input's owner that accepts the connection and never answers (a hung,
 * SIGSTOPped worker: the kernel accepts for it): the fetch is bounded by
 * the task's own deadline (task_timeout_ms, 300 ms here; curl reports the
 * bound it was given), not by the protocol's 120 s, and the task answers
 * input-lost naming the owner. */
static void test_task_input_fetch_bounded_by_task_deadline(void **state)
{
    struct fixture *fx = *state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    char owner[64];
    snprintf(owner, sizeof(owner), "http://127.0.0.1:%d", ntohs(a.sin_port));
    assert_int_equal(worker_start(fx->w, "http://127.0.0.1:1/", NULL), FR_OK);
    json_t *body = json_pack("{s{si s{ss} sn s[] sn si} s[[{ss ss}]]}", "spec", "stage", 0, "input",
                             "kind", "stored", "core", "pipeline", "sink", "nbuckets", 1, "inputs",
                             "url", owner, "id", "p-0dd");
    json_t *out = NULL, *ext = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_task_run(fx->w, fx->id, NULL, body, &out, &ext, &err), FR_EIO);
    assert_string_equal(err.kind, "input-lost");
    assert_non_null(strstr(err.message, owner));
    const char *after = strstr(err.message, "after ");
    assert_non_null(after);
    long ms = strtol(after + 6, NULL, 10);
    assert_true(ms > 0 && ms < 1000); /* not PROTO_FETCH_TIMEOUT_MS */
    json_t *lost = json_object_get(ext, "lost");
    assert_string_equal(json_string_value(json_object_get(lost, "url")), owner);
    json_decref(ext);
    json_decref(body);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_then_fetch_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integrity_failure_caches_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_and_malformed_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_ids_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_runs_with_its_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_input_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_input_fetch_bounded_by_task_deadline, setup_short,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
