/* Tests of src/context/context_runner.c: the freeze happens exactly once when
 * threads race, config changes land before it or get 409 (I2), and a reset
 * releases the config from the store (I4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context/context_int.h"

#define NTHREADS 50

struct race {
    ctx *c;
    int index;
    pthread_barrier_t *start;
    runner *got;   /* acquirers: the runner they saw */
    int status;    /* updaters: the status of their config POST */
    int64_t value; /* updaters: the value they set */
};

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/framed-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static ctx *new_ctx(char **dir)
{
    *dir = temp_dir();
    struct ctx_options o = {0};
    char *data = fr_xasprintf("%s/data", *dir), *state = fr_xasprintf("%s/state", *dir);
    o.data_dir = data;
    o.state_dir = state;
    o.threads = 2;
    ctx *c = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(ctx_new(&o, NULL, &c, &err), FR_OK);
    free(data);
    free(state);
    return c;
}

static void remove_tree(const char *dir)
{
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void *acquirer(void *arg)
{
    struct race *r = arg;
    struct ctx_error err;
    ctx_error_init(&err);
    pthread_barrier_wait(r->start);
    char rid[32];
    snprintf(rid, sizeof(rid), "req-%d", r->index);
    if (ctx__runner_acquire(r->c, rid, &r->got, &err) == FR_OK)
        ctx__runner_release(r->c);
    ctx_error_cleanup(&err);
    return NULL;
}

static void *updater(void *arg)
{
    struct race *r = arg;
    struct ctx_error err;
    ctx_error_init(&err);
    json_t *patch = json_pack("{sI}", "num_preview_rows", (json_int_t)r->value);
    json_t *out = NULL;
    pthread_barrier_wait(r->start);
    r->status = ctx_config_update(r->c, patch, &out, &err);
    if (r->status == FR_ECONFLICT)
        assert_string_equal(err.base.kind, "config-locked");
    json_decref(out);
    json_decref(patch);
    ctx_error_cleanup(&err);
    return NULL;
}

static void test_one_runner_when_racing(void **state)
{
    (void)state;
    char *dir;
    ctx *c = new_ctx(&dir);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2 * NTHREADS);
    struct race races[2 * NTHREADS];
    pthread_t th[2 * NTHREADS];
    for (int i = 0; i < 2 * NTHREADS; i++) {
        races[i] = (struct race){.c = c, .index = i, .start = &start, .value = 100 + i};
        pthread_create(&th[i], NULL, i % 2 ? updater : acquirer, &races[i]);
    }
    for (int i = 0; i < 2 * NTHREADS; i++)
        pthread_join(th[i], NULL);
    runner *first = NULL;
    for (int i = 0; i < 2 * NTHREADS; i += 2) {
        assert_non_null(races[i].got);
        if (!first)
            first = races[i].got;
        assert_ptr_equal(races[i].got, first); /* one runner, seen by every racer */
    }
    /* Every update got 200 before the freeze or 409 after it; the frozen value
     * is one that got 200 (the last to land), never one that got 409. */
    int64_t frozen = runner_config(first)->values.num_preview_rows;
    bool frozen_value_was_accepted = frozen == 8; /* default, if no update landed */
    for (int i = 1; i < 2 * NTHREADS; i += 2) {
        assert_true(races[i].status == FR_OK || races[i].status == FR_ECONFLICT);
        if (races[i].value == frozen) {
            assert_int_equal(races[i].status, FR_OK);
            frozen_value_was_accepted = true;
        }
    }
    assert_true(frozen_value_was_accepted);
    /* The store holds the frozen config exactly once. */
    int64_t count = 0;
    struct fr_error ferr;
    fr_error_init(&ferr);
    assert_int_equal(store_refcount(c->store, runner_config(first)->id, &count, &ferr), FR_OK);
    assert_int_equal(count, 1);
    pthread_barrier_destroy(&start);
    ctx_free(c);
    remove_tree(dir);
    free(dir);
}

static void test_reset_releases_and_unlocks(void **state)
{
    (void)state;
    char *dir;
    ctx *c = new_ctx(&dir);
    struct ctx_error err;
    ctx_error_init(&err);
    runner *r = NULL;
    assert_int_equal(ctx__runner_acquire(c, "req-1", &r, &err), FR_OK);
    ctx__runner_release(c);
    char id[80];
    snprintf(id, sizeof(id), "%s", runner_config(r)->id);
    json_t *patch = json_pack("{si}", "shuffle_partitions", 3), *out = NULL;
    assert_int_equal(ctx_config_update(c, patch, &out, &err), FR_ECONFLICT);
    assert_string_equal(json_string_value(json_object_get(err.ext, "config_id")), id);
    assert_string_equal(json_string_value(json_object_get(err.ext, "frozen_by")), "req-1");
    ctx_error_cleanup(&err);
    ctx_error_init(&err);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(ctx_config_bytes(c, id, &bytes, &len, &err), FR_OK);
    char check[80];
    fr_sha256_id(bytes, len, check, sizeof(check));
    assert_string_equal(check, id);
    free(bytes);
    assert_int_equal(ctx_runner_reset(c, false, "test-reset", &out, &err), FR_OK);
    json_decref(out);
    assert_int_equal(ctx_config_bytes(c, id, &bytes, &len, &err), FR_ENOTFOUND);
    ctx_error_cleanup(&err);
    ctx_error_init(&err);
    assert_int_equal(ctx_config_update(c, patch, &out, &err), FR_OK);
    json_decref(out);
    /* A new runner with the changed config gets a new ID. */
    assert_int_equal(ctx__runner_acquire(c, "req-2", &r, &err), FR_OK);
    ctx__runner_release(c);
    assert_string_not_equal(runner_config(r)->id, id);
    assert_int_equal(runner_config(r)->values.shuffle_partitions, 3);
    json_decref(patch);
    ctx_error_cleanup(&err);
    ctx_free(c);
    remove_tree(dir);
    free(dir);
}

static void test_restart_keeps_pending(void **state)
{
    (void)state;
    char *dir;
    ctx *c = new_ctx(&dir);
    struct ctx_error err;
    ctx_error_init(&err);
    json_t *patch = json_pack("{s[ss]}", "csv_null_values", "NA", "-"), *out = NULL;
    assert_int_equal(ctx_config_update(c, patch, &out, &err), FR_OK);
    json_decref(out);
    json_decref(patch);
    ctx_free(c);
    struct ctx_options o = {0};
    o.data_dir = fr_xasprintf("%s/data", dir);
    o.state_dir = fr_xasprintf("%s/state", dir);
    struct fr_error ferr;
    fr_error_init(&ferr);
    assert_int_equal(ctx_new(&o, NULL, &c, &ferr), FR_OK);
    assert_int_equal(c->pending.csv_null_values.n, 2);
    assert_string_equal(c->pending.csv_null_values.items[1], "-");
    ctx_free(c);
    /* A corrupt state file stops the start with a message naming it. */
    char *path = fr_xasprintf("%s/config.json", o.state_dir);
    FILE *f = fopen(path, "w");
    fputs("{\"shuffle_partitions\": tru", f);
    fclose(f);
    fr_error_init(&ferr);
    assert_int_not_equal(ctx_new(&o, NULL, &c, &ferr), FR_OK);
    assert_non_null(strstr(ferr.message, path));
    free(path);
    free((char *)o.data_dir);
    free((char *)o.state_dir);
    ctx_error_cleanup(&err);
    remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_runner_when_racing),
        cmocka_unit_test(test_reset_releases_and_unlocks),
        cmocka_unit_test(test_restart_keeps_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
