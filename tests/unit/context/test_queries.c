/* Tests of src/context/context_queries.c: a query's result is charged to the
 * memory budget until it is given back, and a read of it in progress keeps
 * the charge (and the data) until it ends: DELETE of the result (and a
 * reset) answer at once, later reads get result-released, the read in
 * progress reads on, and the charge leaves with the last reader; so does a
 * dataframe's, deleted while a read of its run's result is in progress. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx_fixture.h"

#define ROWS 5000

static int setup(void **state)
{
    return ctx_fixture_setup(state, 1 << 30);
}

static int teardown(void **state)
{
    return ctx_fixture_teardown(state);
}

/* The plan over ROWS inline rows {"v": i} (new). */
static json_t *rows_plan(void)
{
    json_t *rows = json_array();
    for (int i = 0; i < ROWS; i++)
        json_array_append_new(rows, json_pack("{si}", "v", i));
    return json_pack("{s{so}}", "source", "rows", rows);
}

/* Runs body (taken) to its end; the query's ID into id. */
static void run_body(ctx *c, json_t *body, char *id, size_t idsz)
{
    struct ctx_error err;
    ctx_error_init(&err);
    json_t *out = NULL;
    ctx_query_watch *w = NULL;
    assert_int_equal(ctx_query_submit_watched(c, body, NULL, &out, &w, &err), FR_OK);
    snprintf(id, idsz, "%s", json_string_value(json_object_get(out, "id")));
    while (!ctx_query_watch_settled(w))
        usleep(1000);
    json_t *status = ctx_query_watch_json(w);
    assert_string_equal(json_string_value(json_object_get(status, "state")), "succeeded");
    json_decref(status);
    ctx_query_watch_free(w);
    json_decref(out);
    json_decref(body);
    ctx_error_cleanup(&err);
}

/* Runs a plan over ROWS inline rows {"v": i} to its end; its ID into id. */
static void run_query(ctx *c, char *id, size_t idsz)
{
    run_body(c, json_pack("{so}", "plan", rows_plan()), id, idsz);
}

static int64_t mem_used(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    int64_t n = c->mem_used;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* Opens a read of query id's result (new). */
static ctx_result *open_read(ctx *c, const char *id)
{
    struct ctx_error err;
    ctx_error_init(&err);
    ctx_result *r = NULL;
    assert_int_equal(ctx_query_result(c, id, &r, &err), FR_OK);
    ctx_error_cleanup(&err);
    return r;
}

/* Reads every row of r: the values 0..ROWS-1 in order. */
static void read_all(ctx_result *r)
{
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_result_rows(r), ROWS);
    for (int64_t row = 0; row < ROWS;) {
        const struct df_table *t = NULL;
        int64_t first = 0, n = 0;
        assert_int_equal(ctx_result_at(r, row, &t, &first, &n, &err), FR_OK);
        for (int64_t i = 0; i < n; i++)
            assert_int_equal(df_column_int64(t->cols[0], first + i), row + i);
        row += n;
    }
    ctx_error_cleanup(&err);
}

/* The status and kind a new read of query id gets. */
static int read_refused(ctx *c, const char *id, const char *kind)
{
    struct ctx_error err;
    ctx_error_init(&err);
    ctx_result *r = NULL;
    int rc = ctx_query_result(c, id, &r, &err);
    assert_null(r);
    assert_string_equal(err.base.kind, kind);
    ctx_error_cleanup(&err);
    return rc;
}

/* DELETE of the result while a read is in progress: 204 at once, new reads
 * get 410, the read goes on, and the charge leaves when it ends. */
static void test_release_waits_for_the_reader(void **state)
{
    struct fixture *f = *state;
    char id[40];
    run_query(f->c, id, sizeof(id));
    int64_t charged = mem_used(f->c);
    assert_true(charged > 0);
    ctx_result *r = open_read(f->c, id), *r2 = open_read(f->c, id);
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_query_result_release(f->c, id, &err), FR_OK);
    assert_int_equal(read_refused(f->c, id, "result-released"), FR_ENOTFOUND);
    assert_int_equal(mem_used(f->c), charged); /* the readers still hold it */
    assert_int_equal(ctx_query_result_release(f->c, id, &err), FR_OK); /* idempotent */
    assert_int_equal(mem_used(f->c), charged);
    read_all(r);
    ctx_result_release(r);
    assert_int_equal(mem_used(f->c), charged); /* one reader left */
    read_all(r2);
    ctx_result_release(r2);
    assert_int_equal(mem_used(f->c), 0);
    assert_int_equal(read_refused(f->c, id, "result-released"), FR_ENOTFOUND);
    ctx_error_cleanup(&err);
}

/* Without a reader the release is at once; a read that ends before it
 * changes nothing. */
static void test_release_without_reader(void **state)
{
    struct fixture *f = *state;
    char id[40];
    run_query(f->c, id, sizeof(id));
    int64_t charged = mem_used(f->c);
    assert_true(charged > 0);
    ctx_result *r = open_read(f->c, id);
    read_all(r);
    ctx_result_release(r);
    assert_int_equal(mem_used(f->c), charged);
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_query_result_release(f->c, id, &err), FR_OK);
    assert_int_equal(mem_used(f->c), 0);
    ctx_error_cleanup(&err);
}

/* A reset (its query records go) while a read is in progress: the read
 * goes on and the charge leaves when it ends. */
static void test_reset_waits_for_the_reader(void **state)
{
    struct fixture *f = *state;
    char id[40];
    run_query(f->c, id, sizeof(id));
    int64_t charged = mem_used(f->c);
    ctx_result *r = open_read(f->c, id);
    struct ctx_error err;
    ctx_error_init(&err);
    json_t *out = NULL;
    assert_int_equal(ctx_runner_reset(f->c, false, NULL, &out, &err), FR_OK);
    json_decref(out);
    assert_int_equal(mem_used(f->c), charged);
    read_all(r);
    ctx_result_release(r);
    assert_int_equal(mem_used(f->c), 0);
    ctx_error_cleanup(&err);
}

/* A dataframe deleted while a read of its run's result is in progress: the
 * delete answers at once, new reads of that result get result-released, the
 * read goes on, and the dataframe's bytes leave the budget when it ends
 * (they left at the delete, under the reader's feet). */
static void test_frame_delete_waits_for_the_reader(void **state)
{
    struct fixture *f = *state;
    struct ctx_error err;
    ctx_error_init(&err);
    json_t *plan = rows_plan(), *out = NULL;
    assert_int_equal(ctx_dataframe_create(f->c, plan, NULL, &out, &err), FR_OK);
    char frame[40], id[40];
    snprintf(frame, sizeof(frame), "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
    json_decref(plan);
    run_body(f->c, json_pack("{ss}", "dataframe", frame), id, sizeof(id));
    int64_t charged = mem_used(f->c);
    assert_true(charged > 0);
    ctx_result *r = open_read(f->c, id);
    assert_int_equal(ctx_dataframe_delete(f->c, frame, &err), FR_OK);
    assert_int_equal(read_refused(f->c, id, "result-released"), FR_ENOTFOUND);
    assert_int_equal(mem_used(f->c), charged); /* the reader holds the data */
    read_all(r);
    ctx_result_release(r);
    assert_int_equal(mem_used(f->c), 0);
    /* without a reader the delete gives the bytes back at once */
    plan = rows_plan();
    assert_int_equal(ctx_dataframe_create(f->c, plan, NULL, &out, &err), FR_OK);
    snprintf(frame, sizeof(frame), "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
    json_decref(plan);
    run_body(f->c, json_pack("{ss}", "dataframe", frame), id, sizeof(id));
    assert_true(mem_used(f->c) > 0);
    assert_int_equal(ctx_dataframe_delete(f->c, frame, &err), FR_OK);
    assert_int_equal(mem_used(f->c), 0);
    ctx_error_cleanup(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_release_waits_for_the_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_without_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_waits_for_the_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frame_delete_waits_for_the_reader, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
