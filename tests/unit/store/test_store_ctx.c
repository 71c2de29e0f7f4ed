/* Tests of the coordinator's side of the store (context_runner.c,
 * runner_store.c): GET /v1/configs/{id} never hands out bytes that do not
 * hash to the ID (the runner's config is served from memory and the store's
 * copy repaired; another ID's bad bytes are refused as config-integrity),
 * the corruption shows in /readyz detail and /metrics, the runner holds its
 * entry under its own ID (a failed put fails the constructor, leaving
 * nothing), puts it back when the store lost it (runner__config_reput), the
 * whole request ID that froze the config is kept, and a reset releases the
 * entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../context/ctx_fixture.h"
#include "runner/runner_int.h"

static const char OTHER[] = "{\"shuffle_partitions\":5}";
static const char TAMPERED[] = "{\"shuffle_partitions\":1000}";

static int setup(void **state)
{
    return ctx_fixture_setup(state, 0);
}

static int teardown(void **state)
{
    return ctx_fixture_teardown(state);
}

/* Freezes with request ID rid; returns the runner (held by the context). */
static runner *freeze(ctx *c, const char *rid)
{
    struct ctx_error err;
    ctx_error_init(&err);
    runner *r = NULL;
    assert_int_equal(ctx__runner_acquire(c, rid, &r, &err), FR_OK);
    ctx__runner_release(c);
    ctx_error_cleanup(&err);
    return r;
}

static char *metrics_text(ctx *c)
{
    struct fr_buf b;
    fr_buf_init(&b);
    ctx_metrics(c, &b);
    return fr_buf_steal(&b, NULL);
}

static void test_held_config_served_from_memory_and_repaired(void **state)
{
    struct fixture *f = *state;
    runner *r = freeze(f->c, "req-1");
    const struct cfg_frozen *fz = runner_config(r);
    int64_t n = 0;
    assert_int_equal(store_refcount(f->c->store, fz->id, &n, NULL), FR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(store_embedded_tamper(f->c->store, fz->id, TAMPERED, strlen(TAMPERED)), FR_OK);
    assert_null(ctx_ready_detail(f->c));

    char *bytes = NULL;
    size_t len = 0;
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_config_bytes(f->c, fz->id, &bytes, &len, &err), FR_OK);
    char actual[80];
    fr_sha256_id(bytes, len, actual, sizeof(actual));
    assert_string_equal(actual, fz->id); /* never other bytes under the ID */
    free(bytes);
    /* The store's copy was put right, and the corruption reported. */
    assert_int_equal(store_get(f->c->store, fz->id, &bytes, &len, NULL), FR_OK);
    assert_int_equal(len, fz->canonical_len);
    assert_memory_equal(bytes, fz->canonical, len);
    free(bytes);
    char *detail = ctx_ready_detail(f->c);
    assert_non_null(detail);
    assert_non_null(strstr(detail, "corrupt"));
    assert_non_null(strstr(detail, fz->id));
    free(detail);
    char *m = metrics_text(f->c);
    assert_non_null(strstr(m, "\nframed_store_corruptions_total 1\n"));
    assert_non_null(strstr(m, "\nframed_store_entries 1\n"));
    free(m);
    ctx_error_cleanup(&err);
}

static void test_unheld_corrupt_config_refused(void **state)
{
    struct fixture *f = *state;
    char id[80];
    assert_int_equal(store_put(f->c->store, OTHER, strlen(OTHER), id, sizeof(id), NULL), FR_OK);
    char *bytes = NULL;
    size_t len = 0;
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_config_bytes(f->c, id, &bytes, &len, &err), FR_OK); /* intact: served */
    assert_memory_equal(bytes, OTHER, len);
    free(bytes);
    bytes = NULL;
    assert_int_equal(store_embedded_tamper(f->c->store, id, TAMPERED, strlen(TAMPERED)), FR_OK);
    assert_int_equal(ctx_config_bytes(f->c, id, &bytes, &len, &err), FR_EINTERNAL);
    assert_string_equal(err.base.kind, "config-integrity");
    assert_null(bytes);
    struct store_health h;
    store_health_get(f->c->store, &h);
    assert_int_equal(h.corruptions, 1);
    ctx_error_cleanup(&err);
}

static void test_whole_request_id_and_reset_release(void **state)
{
    struct fixture *f = *state;
    char rid[129];
    memset(rid, 'r', 128); /* the longest request ID http_request.c accepts */
    rid[128] = '\0';
    runner *r = freeze(f->c, rid);
    assert_non_null(strstr(runner_id(r), "runner-"));
    json_t *cfg = ctx_config_get(f->c);
    assert_string_equal(json_string_value(json_object_get(cfg, "frozen_by")), rid);
    json_decref(cfg);
    char id[80];
    snprintf(id, sizeof(id), "%s", runner_config(r)->id);
    /* The runner's hold is its own: another holder's release does not free it. */
    assert_int_equal(store_unhold(f->c->store, id, "someone-else", NULL), FR_ENOTFOUND);
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_runner_reset(f->c, false, "test-reset", &out, &err), FR_OK);
    assert_true(json_is_true(json_object_get(out, "config_released")));
    json_decref(out);
    int64_t n = -1;
    assert_int_equal(store_refcount(f->c->store, id, &n, NULL), FR_OK);
    assert_int_equal(n, 0);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(ctx_config_bytes(f->c, id, &bytes, &len, &err), FR_ENOTFOUND);
    ctx_error_cleanup(&err);
}

static void test_runner_owns_its_entry(void **state)
{
    (void)state;
    store *st = NULL;
    assert_int_equal(store_embedded_open(NULL, &st, NULL), FR_OK);
    struct cfg c;
    cfg_defaults(&c);
    struct cfg_frozen *fz = cfg_freeze(&c);
    char id[80];
    snprintf(id, sizeof(id), "%s", fz->id);
    runner *r = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_local_new(cfg_frozen_ref(fz), st, 1, &r, &err), FR_OK);
    int64_t n = 0;
    assert_int_equal(store_refcount(st, id, &n, NULL), FR_OK);
    assert_int_equal(n, 1);
    /* The store loses it: the runner puts it back under its own hold. */
    assert_int_equal(store_unhold(st, id, runner_id(r), NULL), FR_OK);
    assert_int_equal(store_refcount(st, id, &n, NULL), FR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(runner__config_reput(r, &err), FR_OK);
    assert_int_equal(store_refcount(st, id, &n, NULL), FR_OK);
    assert_int_equal(n, 1);
    struct store_health h;
    store_health_get(st, &h);
    assert_int_equal(h.restores, 1);
    assert_int_equal(runner_free(r, &err), FR_OK);
    assert_int_equal(store_refcount(st, id, &n, NULL), FR_OK);
    assert_int_equal(n, 0);

    /* A put that fails (other bytes under the ID) fails the constructor. */
    char other[80];
    assert_int_equal(store_put(st, fz->canonical, fz->canonical_len, other, 80, NULL), FR_OK);
    assert_int_equal(store_embedded_tamper(st, id, OTHER, strlen(OTHER)), FR_OK);
    r = (runner *)&err; /* must be reset to NULL */
    assert_int_equal(runner_local_new(cfg_frozen_ref(fz), st, 1, &r, &err), FR_ECONFLICT);
    assert_null(r);
    assert_int_equal(store_refcount(st, id, &n, NULL), FR_OK);
    assert_int_equal(n, 1); /* the anonymous hold only */
    /* Without a store: no entry, nothing to put back. */
    assert_int_equal(runner_local_new(cfg_frozen_ref(fz), NULL, 1, &r, &err), FR_OK);
    assert_int_equal(runner__config_reput(r, &err), FR_ENOTFOUND);
    assert_int_equal(runner_free(r, NULL), FR_OK);
    cfg_frozen_unref(fz);
    cfg_cleanup(&c);
    store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_config_served_from_memory_and_repaired, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unheld_corrupt_config_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_request_id_and_reset_release, setup, teardown),
        cmocka_unit_test(test_runner_owns_its_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
