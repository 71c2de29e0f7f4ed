/* Tests of src/worker/worker_partition.c: a partition is kept with the config
 * it was made with, served (as a shared table or FRTB1 bytes) only under that
 * config, survives a reader's copy being freed, and goes on delete or with
 * its config; a result stream is counted while open, and a partition dropped
 * under it is charged to it (not to the partitions) until it closes; fetch
 * receive buffers are kept within their bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "worker/worker.h"
#include "worker/worker_int.h"

static const char CFG_A[] =
    "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char CFG_B[] =
    "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

static int setup(void **state)
{
    store *st = NULL;
    assert_int_equal(store_embedded_open(NULL, &st, NULL), FR_OK);
    struct worker_options o = {.threads = 1};
    worker *w = NULL;
    assert_int_equal(worker_new_with_store(&o, st, &w, NULL), FR_OK);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    worker_free(*state);
    return 0;
}

static struct df_table *table_of(int64_t n)
{
    struct df_column *c = df_column_new(DF_TYPE_INT64, n);
    for (int64_t i = 0; i < n; i++)
        df_column_append_int64(c, i * 10);
    struct df_table *t = df_table_new();
    df_table_add(t, "a", c);
    return t;
}

static void test_put_read_serialize(void **state)
{
    worker *w = *state;
    char id[40];
    int64_t bytes = 0;
    worker_partition_put(w, CFG_A, table_of(5), id, sizeof(id), &bytes);
    assert_int_equal(strncmp(id, "p-", 2), 0);
    assert_int_equal(strlen(id), 34);
    assert_true(bytes > 0);
    struct df_table *t = NULL;
    assert_int_equal(worker_partition_table(w, id, CFG_A, &t, NULL), FR_OK);
    assert_int_equal(t->nrows, 5);
    assert_int_equal(df_column_int64(t->cols[0], 4), 40);
    assert_int_equal(worker_partition_delete(w, id, CFG_A, NULL), FR_OK);
    assert_int_equal(df_column_int64(t->cols[0], 3), 30); /* the reader's copy lives on */
    df_table_free(t);
    worker_partition_put(w, CFG_A, table_of(3), id, sizeof(id), NULL);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(worker_partition_serialize(w, id, CFG_A, &data, &len, NULL), FR_OK);
    struct df_table *back = NULL;
    assert_int_equal(df_table_deserialize(data, len, &back, NULL), FR_OK);
    assert_int_equal(back->nrows, 3);
    assert_string_equal(back->names[0], "a");
    df_table_free(back);
    free(data);
}

static void test_config_mismatch_and_not_found(void **state)
{
    worker *w = *state;
    char id[40];
    worker_partition_put(w, CFG_A, table_of(2), id, sizeof(id), NULL);
    struct df_table *t = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_partition_table(w, id, CFG_B, &t, &err), FR_ECONFLICT);
    assert_null(t);
    assert_string_equal(err.kind, "config-mismatch");
    fr_error_init(&err);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(worker_partition_serialize(w, "p-none", CFG_A, &data, &len, &err),
                     FR_ENOTFOUND);
    assert_string_equal(err.kind, "partition-not-found");
    fr_error_init(&err);
    assert_int_equal(worker_partition_delete(w, "p-none", CFG_A, &err), FR_ENOTFOUND);
    assert_string_equal(err.kind, "partition-not-found");
    fr_error_init(&err);
    assert_int_equal(worker_partition_delete(w, id, CFG_B, &err), FR_ECONFLICT);
    assert_string_equal(err.kind, "config-mismatch");
    assert_int_equal(worker_partition_delete(w, id, CFG_A, NULL), FR_OK);
    assert_int_equal(worker_partition_delete(w, id, CFG_A, NULL), FR_ENOTFOUND);
}

static void test_drop_by_config_and_totals(void **state)
{
    worker *w = *state;
    char a1[40], a2[40], b1[40];
    int64_t ba1 = 0, ba2 = 0, bb1 = 0;
    worker_partition_put(w, CFG_A, table_of(10), a1, sizeof(a1), &ba1);
    worker_partition_put(w, CFG_B, table_of(20), b1, sizeof(b1), &bb1);
    worker_partition_put(w, CFG_A, table_of(30), a2, sizeof(a2), &ba2);
    assert_string_not_equal(a1, a2);
    int64_t n = 0, bytes = 0;
    worker_partition_totals(w, &n, &bytes);
    assert_int_equal(n, 3);
    assert_int_equal(bytes, ba1 + ba2 + bb1);
    bool was_cached = true;
    int64_t dropped = 0;
    worker_config_drop(w, CFG_A, &was_cached, &dropped);
    assert_false(was_cached);
    assert_int_equal(dropped, 2);
    worker_partition_totals(w, &n, &bytes);
    assert_int_equal(n, 1);
    assert_int_equal(bytes, bb1);
    struct df_table *t = NULL;
    assert_int_equal(worker_partition_table(w, a1, CFG_A, &t, NULL), FR_ENOTFOUND);
    assert_int_equal(worker_partition_table(w, b1, CFG_B, &t, NULL), FR_OK);
    assert_int_equal(t->nrows, 20);
    df_table_free(t);
}

/* A heartbeat answer's drop takes only the partitions put before the
 * heartbeat left: one a later runner of the same config put since stays. */
static void test_drop_before_mark(void **state)
{
    worker *w = *state;
    char a1[40], a2[40], b1[40];
    worker_partition_put(w, CFG_A, table_of(10), a1, sizeof(a1), NULL);
    worker_partition_put(w, CFG_B, table_of(10), b1, sizeof(b1), NULL);
    int64_t mark = worker__partitions_mark(w);
    worker_partition_put(w, CFG_A, table_of(30), a2, sizeof(a2), NULL);
    int64_t dropped = 0;
    worker__config_drop_before(w, CFG_A, mark, NULL, &dropped);
    assert_int_equal(dropped, 1);
    struct df_table *t = NULL;
    assert_int_equal(worker_partition_table(w, a1, CFG_A, &t, NULL), FR_ENOTFOUND);
    assert_int_equal(worker_partition_table(w, a2, CFG_A, &t, NULL), FR_OK);
    assert_int_equal(t->nrows, 30);
    df_table_free(t);
    assert_int_equal(worker_partition_table(w, b1, CFG_B, &t, NULL), FR_OK);
    df_table_free(t);
    worker_config_drop(w, CFG_A, NULL, &dropped);
    assert_int_equal(dropped, 1);
}

static void test_result_stream_charge(void **state)
{
    worker *w = *state;
    char id[40];
    int64_t bytes = 0, n = 0, held = 0, count = 0, charged = 0;
    worker_partition_put(w, CFG_A, table_of(1000), id, sizeof(id), &bytes);
    worker_result_stream *s = NULL, *s2 = NULL;
    struct df_table *t = NULL, *t2 = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_result_stream_open(w, id, CFG_B, &s, &t, &err), FR_ECONFLICT);
    assert_null(s);
    assert_int_equal(worker_result_stream_open(w, "p-00", CFG_A, &s, &t, &err), FR_ENOTFOUND);
    assert_int_equal(worker_result_stream_open(w, id, CFG_A, &s, &t, &err), FR_OK);
    assert_int_equal(worker_result_stream_open(w, id, CFG_A, &s2, &t2, &err), FR_OK);
    worker_result_stream_charge(s, 300);
    worker_result_stream_charge(s, 500); /* the buffer grew: the difference moves */
    worker_result_stream_charge(s2, 100);
    worker_result_stream_totals(w, &count, &charged);
    assert_int_equal(count, 2);
    assert_int_equal(charged, 600);
    /* dropped while read: it leaves the partitions and is charged to the streams */
    assert_int_equal(worker_partition_delete(w, id, CFG_A, &err), FR_OK);
    worker_partition_totals(w, &n, &held);
    assert_int_equal(n, 0);
    assert_int_equal(held, 0);
    worker_result_stream_totals(w, &count, &charged);
    assert_int_equal(charged, 600 + bytes);
    assert_int_equal(df_column_int64(t->cols[0], 999), 9990); /* its columns are still there */
    df_table_free(t);
    worker_result_stream_close(s);
    worker_result_stream_totals(w, &count, &charged);
    assert_int_equal(count, 1);
    assert_int_equal(charged, 100 + bytes); /* s2 still keeps the partition */
    df_table_free(t2);
    worker_result_stream_close(s2);
    worker_result_stream_totals(w, &count, &charged);
    assert_int_equal(count, 0);
    assert_int_equal(charged, 0);
    worker_result_stream_close(NULL);
}

/* Dropping a config counts every partition it drops, those a result stream
 * still reads (freed when it ends) included: DELETE /v1/configs/{id}
 * answers dropped_partitions. */
static void test_drop_config_counts_streamed(void **state)
{
    worker *w = *state;
    char id[40], id2[40];
    int64_t bytes = 0, n = 0, held = 0;
    worker_partition_put(w, CFG_A, table_of(100), id, sizeof(id), &bytes);
    worker_partition_put(w, CFG_A, table_of(100), id2, sizeof(id2), &bytes);
    worker_result_stream *s = NULL;
    struct df_table *t = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_result_stream_open(w, id, CFG_A, &s, &t, &err), FR_OK);
    assert_int_equal(worker__partitions_drop_config(w, CFG_A, INT64_MAX), 2);
    worker_partition_totals(w, &n, &held);
    assert_int_equal(n, 0);
    df_table_free(t);
    worker_result_stream_close(s);
    assert_int_equal(worker__partitions_drop_config(w, CFG_A, INT64_MAX), 0);
}

static struct fr_buf room_of(size_t cap)
{
    struct fr_buf b = {.data = malloc(cap), .len = 3, .cap = cap};
    memcpy(b.data, "old", 4);
    return b;
}

/* Fetch receive buffers are kept for the next fetch within their bounds
 * (WORKER__ROOMS of them, WORKER__ROOM_BYTES in all), given back empty, and
 * all freed at once when the worker goes idle. */
static void test_fetch_rooms(void **state)
{
    worker *w = *state;
    struct fr_buf b;
    fr_buf_init(&b);
    worker__room_take(w, &b); /* none kept yet */
    assert_null(b.data);
    b = room_of(1 << 20);
    char *kept = b.data;
    worker__room_give(w, &b);
    assert_null(b.data); /* taken by the worker */
    assert_int_equal(worker__room_bytes(w), 1 << 20);
    worker__room_take(w, &b);
    assert_ptr_equal(b.data, kept);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, 1 << 20);
    assert_int_equal(worker__room_bytes(w), 0);
    worker__room_give(w, &b);
    /* past the count: freed, not kept */
    for (int i = 1; i <= WORKER__ROOMS; i++) {
        b = room_of(4096);
        worker__room_give(w, &b);
        assert_null(b.data);
    }
    assert_int_equal(w->nrooms, WORKER__ROOMS);
    assert_int_equal(worker__room_bytes(w), (1 << 20) + (WORKER__ROOMS - 1) * 4096);
    worker__rooms_drop(w);
    assert_int_equal(w->nrooms, 0);
    assert_int_equal(worker__room_bytes(w), 0);
    /* past the bytes: one that would take the total over is freed */
    b = room_of((size_t)WORKER__ROOM_BYTES - 4096);
    worker__room_give(w, &b);
    b = room_of(8192);
    worker__room_give(w, &b);
    assert_null(b.data);
    assert_int_equal(w->nrooms, 1);
    assert_int_equal(worker__room_bytes(w), WORKER__ROOM_BYTES - 4096);
    b = room_of(4096);
    worker__room_give(w, &b);
    assert_int_equal(worker__room_bytes(w), WORKER__ROOM_BYTES);
    /* empty buffers are not kept */
    fr_buf_init(&b);
    worker__room_give(w, &b);
    assert_int_equal(w->nrooms, 2);
    /* worker_free (teardown) frees what is kept: ASan reports a leak if not */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_read_serialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_mismatch_and_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_by_config_and_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_result_stream_charge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_config_counts_streamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_before_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_rooms, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
