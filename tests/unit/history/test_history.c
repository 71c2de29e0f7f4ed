/* Tests of src/history/: open and create, a runner and its queries recorded,
 * lists with filters and paging, retention by count and by age, a reopen
 * that ends an active runner and fails its unfinished queries, and a corrupt
 * file moved aside for a fresh one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history/history.h"

#define CFG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CFG_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define T0 1796130000000LL /* 2026-12-01 */

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/framed-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void remove_dir(char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p = fr_xasprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
}

static history *open_h(const char *dir, int64_t max_queries, int64_t max_age_days)
{
    struct history_options o = {max_queries, max_age_days};
    history *h = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_open(dir, &o, &h, &err), FR_OK);
    assert_non_null(h);
    return h;
}

static void add_runner(history *h, const char *id, const char *config_id, const char *bytes)
{
    struct history_runner_rec r = {id, "local", config_id, bytes, strlen(bytes), T0, "req-1"};
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_runner_add(h, &r, &err), FR_OK);
}

static void add_query(history *h, const char *id, const char *runner_id, const char *config_id,
                      int64_t created, const char *end_state)
{
    struct history_query_rec q = {.id = id,
                                  .runner_id = runner_id,
                                  .config_id = config_id,
                                  .plan_json = "{\"source\":{\"rows\":[]}}",
                                  .state = "queued",
                                  .created_ms = created,
                                  .started_ms = -1,
                                  .finished_ms = -1,
                                  .rows = -1};
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_query_add(h, &q, &err), FR_OK);
    if (!end_state)
        return;
    q.state = end_state;
    q.started_ms = created + 1;
    q.finished_ms = created + 11;
    q.rows = strcmp(end_state, "succeeded") == 0 ? 7 : -1;
    q.tasks_total = q.tasks_done = 2;
    q.error_json = strcmp(end_state, "failed") == 0 ? "{\"kind\":\"malformed-data\"}" : NULL;
    assert_int_equal(history_query_end(h, &q, &err), FR_OK);
}

/* The ids of a list (a JSON array of objects with "id"), joined by commas. */
static char *ids_of(json_t *list)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (size_t i = 0; i < json_array_size(list); i++)
        fr_buf_printf(&b, "%s%s", i ? "," : "",
                      json_string_value(json_object_get(json_array_get(list, i), "id")));
    fr_buf_putc(&b, '\0');
    return fr_buf_steal(&b, NULL);
}

static char *list_ids(history *h, const struct history_query_filter *f, char **next)
{
    json_t *out = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_query_list(h, f, &out, &err), FR_OK);
    char *ids = ids_of(json_object_get(out, "queries"));
    json_t *n = json_object_get(out, "next_cursor");
    if (next)
        *next = json_is_string(n) ? strdup(json_string_value(n)) : NULL;
    json_decref(out);
    return ids;
}

static void test_record_and_read(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = open_h(dir, 0, 0);
    add_runner(h, "runner-1", CFG_A, "{\"x\":1}");
    add_query(h, "q-1", "runner-1", CFG_A, T0 + 1, "succeeded");
    add_query(h, "q-2", "runner-1", CFG_A, T0 + 2, "failed");
    json_t *q = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_query_get(h, "q-1", &q, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(q, "state")), "succeeded");
    assert_string_equal(json_string_value(json_object_get(q, "config_id")), CFG_A);
    assert_int_equal(json_integer_value(json_object_get(q, "rows")), 7);
    assert_int_equal(json_integer_value(json_object_get(q, "elapsed_ms")), 10);
    assert_true(json_is_object(json_object_get(q, "plan")));
    json_decref(q);
    assert_int_equal(history_query_get(h, "q-2", &q, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(json_object_get(q, "error"), "kind")),
                        "malformed-data");
    json_decref(q);
    assert_int_equal(history_query_get(h, "q-nope", &q, &err), FR_ENOTFOUND);
    assert_string_equal(err.kind, "query-not-found");
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(history_config_get(h, CFG_A, &bytes, &len, &err), FR_OK);
    assert_int_equal(len, 7);
    assert_memory_equal(bytes, "{\"x\":1}", 7);
    free(bytes);
    assert_int_equal(history_config_get(h, CFG_B, &bytes, &len, &err), FR_ENOTFOUND);
    assert_int_equal(history_runner_reset(h, "runner-1", T0 + 100, "req-reset", &err), FR_OK);
    json_t *r = NULL;
    assert_int_equal(history_runner_get(h, "runner-1", &r, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "reset");
    assert_string_equal(json_string_value(json_object_get(r, "reset_by")), "req-reset");
    assert_int_equal(json_integer_value(json_object_get(r, "queries")), 2);
    json_decref(r);
    assert_int_equal(history_errors(h), 0);
    history_free(h);
    remove_dir(dir);
}

static void test_filters_and_paging(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = open_h(dir, 0, 0);
    add_runner(h, "runner-1", CFG_A, "{}");
    add_query(h, "q-1", "runner-1", CFG_A, T0 + 1000, "succeeded");
    add_query(h, "q-2", "runner-1", CFG_A, T0 + 2000, "failed");
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_runner_reset(h, "runner-1", T0 + 2500, "r", &err), FR_OK);
    add_runner(h, "runner-2", CFG_B, "{\"b\":2}");
    add_query(h, "q-3", "runner-2", CFG_B, T0 + 3000, "succeeded");
    add_query(h, "q-4", "runner-2", CFG_B, T0 + 4000, NULL);
    struct history_query_filter f = {.since_ms = -1, .until_ms = -1, .limit = 10};
    char *ids = list_ids(h, &f, NULL);
    assert_string_equal(ids, "q-4,q-3,q-2,q-1"); /* newest first */
    free(ids);
    f.config_id = CFG_A;
    assert_string_equal(ids = list_ids(h, &f, NULL), "q-2,q-1");
    free(ids);
    f.config_id = NULL;
    f.state = "succeeded";
    assert_string_equal(ids = list_ids(h, &f, NULL), "q-3,q-1");
    free(ids);
    f.state = NULL;
    f.runner_id = "runner-2";
    assert_string_equal(ids = list_ids(h, &f, NULL), "q-4,q-3");
    free(ids);
    f.runner_id = NULL;
    f.since_ms = T0 + 2000;
    f.until_ms = T0 + 3000;
    assert_string_equal(ids = list_ids(h, &f, NULL), "q-3,q-2");
    free(ids);
    /* paging: two at a time, the cursor carries on where the page ended */
    struct history_query_filter p = {.since_ms = -1, .until_ms = -1, .limit = 2};
    char *next = NULL;
    assert_string_equal(ids = list_ids(h, &p, &next), "q-4,q-3");
    free(ids);
    assert_non_null(next);
    assert_int_equal(history_cursor_parse(next, &p.after_seq, &err), FR_OK);
    free(next);
    assert_string_equal(ids = list_ids(h, &p, &next), "q-2,q-1");
    free(ids);
    assert_null(next);
    int64_t seq;
    assert_int_equal(history_cursor_parse("x12", &seq, &err), FR_EINVAL);
    assert_int_equal(history_cursor_parse("c-1", &seq, &err), FR_EINVAL);
    assert_int_equal(history_cursor_parse("c99999999999999999999", &seq, &err), FR_EINVAL);
    json_t *runners = NULL;
    assert_int_equal(history_runner_list(h, 1, 0, &runners, &err), FR_OK);
    ids = ids_of(json_object_get(runners, "runners"));
    assert_string_equal(ids, "runner-2");
    assert_true(json_is_string(json_object_get(runners, "next_cursor")));
    free(ids);
    json_decref(runners);
    history_free(h);
    remove_dir(dir);
}

static void test_retention(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = open_h(dir, 3, 1);
    add_runner(h, "runner-1", CFG_A, "{}");
    int64_t now = fr_now_ms();
    char id[16];
    for (int i = 1; i <= 5; i++) {
        snprintf(id, sizeof(id), "q-%d", i);
        add_query(h, id, "runner-1", CFG_A, now + i, "succeeded");
    }
    struct history_query_filter f = {.since_ms = -1, .until_ms = -1, .limit = 10};
    char *ids = list_ids(h, &f, NULL);
    assert_string_equal(ids, "q-5,q-4,q-3"); /* the count bound keeps the newest */
    free(ids);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_runner_reset(h, "runner-1", now, "r", &err), FR_OK);
    add_runner(h, "runner-2", CFG_B, "{}");
    add_query(h, "q-6", "runner-2", CFG_B, now + 10, NULL); /* unfinished: never pruned */
    /* two days on: every finished query is past the age, the reset runner and its
     * config go with them; the live runner and its running query stay */
    assert_int_equal(history_prune(h, now + 2 * 86400 * 1000LL, &err), FR_OK);
    assert_string_equal(ids = list_ids(h, &f, NULL), "q-6");
    free(ids);
    json_t *r = NULL;
    assert_int_equal(history_runner_get(h, "runner-1", &r, &err), FR_ENOTFOUND);
    assert_int_equal(history_runner_get(h, "runner-2", &r, &err), FR_OK);
    json_decref(r);
    char *bytes = NULL;
    size_t len;
    assert_int_equal(history_config_get(h, CFG_A, &bytes, &len, &err), FR_ENOTFOUND);
    assert_int_equal(history_config_get(h, CFG_B, &bytes, &len, &err), FR_OK);
    free(bytes);
    history_free(h);
    remove_dir(dir);
}

static void test_reopen_ends_active_runner(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = open_h(dir, 0, 0);
    add_runner(h, "runner-1", CFG_A, "{}");
    add_query(h, "q-1", "runner-1", CFG_A, fr_now_ms(), "succeeded");
    add_query(h, "q-2", "runner-1", CFG_A, fr_now_ms(), NULL);
    history_free(h); /* as if the process died: no reset, no end */
    h = open_h(dir, 0, 0);
    int runners, queries;
    bool aside;
    history_recovered(h, &runners, &queries, &aside);
    assert_int_equal(runners, 1);
    assert_int_equal(queries, 1);
    assert_false(aside);
    json_t *r = NULL, *q = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_runner_get(h, "runner-1", &r, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "ended");
    assert_true(json_is_string(json_object_get(r, "ended_at")));
    json_decref(r);
    assert_int_equal(history_query_get(h, "q-2", &q, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(q, "state")), "failed");
    json_t *e = json_object_get(q, "error");
    assert_string_equal(json_string_value(json_object_get(e, "kind")), "interrupted");
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "the coordinator stopped while it ran");
    json_decref(q);
    assert_int_equal(history_query_get(h, "q-1", &q, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(q, "state")), "succeeded");
    json_decref(q);
    history_free(h);
    remove_dir(dir);
}

static void test_corrupt_file_moved_aside(void **state)
{
    (void)state;
    char *dir = temp_dir();
    char *path = fr_xasprintf("%s/%s", dir, HISTORY_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 512; i++)
        fputs("this is not a SQLite database, ", f);
    fclose(f);
    history *h = open_h(dir, 0, 0);
    int runners, queries;
    bool aside;
    history_recovered(h, &runners, &queries, &aside);
    assert_true(aside);
    assert_int_equal(history_errors(h), 1);
    add_runner(h, "runner-1", CFG_A, "{}"); /* the fresh file works */
    history_free(h);
    int found = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        found += strncmp(e->d_name, HISTORY_FILE ".corrupt-", strlen(HISTORY_FILE) + 9) == 0;
    closedir(d);
    assert_int_equal(found, 1);
    free(path);
    remove_dir(dir);
}

/* A file whose schema reads (page 1) but whose tables are damaged: the
 * open's first table read says SQLITE_CORRUPT, the full check confirms it,
 * the file is moved aside and a fresh one opened. */
static void test_damaged_tables_moved_aside(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = open_h(dir, 0, 0);
    add_runner(h, "runner-1", CFG_A, "{}");
    char id[16];
    for (int i = 0; i < 50; i++) {
        snprintf(id, sizeof(id), "q-%d", i);
        add_query(h, id, "runner-1", CFG_A, T0 + i, NULL);
    }
    history_free(h);
    char *path = fr_xasprintf("%s/%s", dir, HISTORY_FILE);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    assert_true(size >= 4 * 4096);
    fseek(f, 2 * 4096, SEEK_SET); /* every page after the schema and the pointer map */
    for (long i = 2 * 4096; i < size; i++)
        fputc(0xA5, f);
    fclose(f);
    h = open_h(dir, 0, 0);
    int runners, queries;
    bool aside;
    history_recovered(h, &runners, &queries, &aside);
    assert_true(aside);
    add_runner(h, "runner-2", CFG_A, "{}"); /* the fresh file works */
    history_free(h);
    int found = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        found += strncmp(e->d_name, HISTORY_FILE ".corrupt-", strlen(HISTORY_FILE) + 9) == 0;
    closedir(d);
    assert_int_equal(found, 1);
    free(path);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_read),
        cmocka_unit_test(test_filters_and_paging),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_reopen_ends_active_runner),
        cmocka_unit_test(test_corrupt_file_moved_aside),
        cmocka_unit_test(test_damaged_tables_moved_aside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
