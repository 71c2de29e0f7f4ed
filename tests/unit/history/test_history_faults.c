/* Fault injection for the history: a database that refuses writes (as a
 * full disk would) fails each write with FR_EIO and counts it, reads go on,
 * and the context's queries run regardless, the failures counted in
 * framed_history_errors_total and said by /readyz's detail; a file locked by
 * another process is left alone; a journal mode other than WAL is counted. */
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

#include "context/context_int.h"
#include "history/history_int.h"

#define CFG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/framed-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static char *read_all(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = fr_xmalloc((size_t)*len + 1);
    assert_int_equal(fread(b, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return b;
}

static int count_aside(const char *dir)
{
    int found = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        found += strstr(e->d_name, ".corrupt-") != NULL;
    closedir(d);
    return found;
}

/* A sound history another process holds an exclusive lock on: the open
 * waits, then fails (FR_EIO, no history); the file is not moved aside and
 * not changed. Then, the lock gone, it opens with its records. */
static void test_locked_file_is_left_alone(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_open(dir, NULL, &h, &err), FR_OK);
    struct history_runner_rec r = {"runner-1", "local", CFG_A, "{}", 2, 1, "req"};
    assert_int_equal(history_runner_add(h, &r, &err), FR_OK);
    history_free(h);
    char *path = fr_xasprintf("%s/%s", dir, HISTORY_FILE);
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(other, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL),
        SQLITE_OK);
    long before_len, after_len;
    char *before = read_all(path, &before_len);
    h = NULL;
    assert_int_equal(history_open(dir, NULL, &h, &err), FR_EIO);
    assert_null(h);
    assert_int_equal(count_aside(dir), 0);
    char *after = read_all(path, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, (size_t)before_len);
    assert_int_equal(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    fr_error_init(&err);
    assert_int_equal(history_open(dir, NULL, &h, &err), FR_OK);
    json_t *out = NULL;
    assert_int_equal(history_runner_get(h, "runner-1", &out, &err), FR_OK);
    json_decref(out);
    history_free(h);
    free(before);
    free(after);
    free(path);
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

/* journal_mode=WAL answers the mode in force: an in-memory database stays
 * "memory", which the configure logs and counts. */
static void test_journal_mode_not_wal_is_counted(void **state)
{
    (void)state;
    history h = {.path = "(memory)"};
    pthread_mutex_init(&h.lock, NULL);
    assert_int_equal(sqlite3_open(":memory:", &h.db), SQLITE_OK);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history__configure(&h, &err), FR_OK);
    assert_int_equal(history_errors(&h), 1);
    sqlite3_close(h.db);
    pthread_mutex_destroy(&h.lock);
}

static void refuse_writes(history *h)
{
    assert_int_equal(sqlite3_exec(h->db, "PRAGMA query_only=ON", NULL, NULL, NULL), SQLITE_OK);
}

static void test_refused_writes_are_counted(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_open(dir, NULL, &h, &err), FR_OK);
    /* the runner is recorded first: the query's insert below can fail only
     * for the refused write, not for a missing runner */
    struct history_runner_rec r = {"runner-1", "local", CFG_A, "{}", 2, 1, "req"};
    assert_int_equal(history_runner_add(h, &r, &err), FR_OK);
    refuse_writes(h);
    struct history_runner_rec r2 = {"runner-2", "local", CFG_A, "{}", 2, 1, "req"};
    assert_int_equal(history_runner_add(h, &r2, &err), FR_EIO);
    assert_int_equal(history_errors(h), 1);
    struct history_query_rec q = {.id = "q-1",
                                  .runner_id = "runner-1",
                                  .state = "queued",
                                  .created_ms = 1,
                                  .started_ms = -1,
                                  .finished_ms = -1,
                                  .rows = -1};
    assert_int_equal(history_query_add(h, &q, &err), FR_EIO);
    assert_non_null(strstr(err.message, "readonly"));
    assert_int_equal(history_errors(h), 2);
    json_t *out = NULL;
    struct history_query_filter f = {.since_ms = -1, .until_ms = -1, .limit = 5};
    assert_int_equal(history_query_list(h, &f, &out, &err), FR_OK); /* reads go on */
    assert_int_equal(json_array_size(json_object_get(out, "queries")), 0);
    json_decref(out);
    history_free(h);
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

/* An update of a row whose insert was lost changes nothing: an error,
 * counted, never a silent FR_OK. */
static void test_update_of_a_missing_row_fails(void **state)
{
    (void)state;
    char *dir = temp_dir();
    history *h = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(history_open(dir, NULL, &h, &err), FR_OK);
    assert_int_equal(history_runner_reset(h, "runner-x", 5, "req", &err), FR_EIO);
    assert_int_equal(history_errors(h), 1);
    assert_int_equal(history_runner_end(h, "runner-x", 5, &err), FR_EIO);
    struct history_query_rec q = {
        .id = "q-x", .state = "succeeded", .started_ms = 1, .finished_ms = 2, .rows = 1};
    assert_int_equal(history_query_end(h, &q, &err), FR_EIO);
    assert_int_equal(history_query_set_stages(h, "q-x", "{}", &err), FR_EIO);
    assert_int_equal(history_errors(h), 4);
    /* a runner recorded twice (a retry of a lost freeze record) is no error */
    struct history_runner_rec r = {"runner-1", "local", CFG_A, "{}", 2, 1, "req"};
    assert_int_equal(history_runner_add(h, &r, &err), FR_OK);
    assert_int_equal(history_runner_add(h, &r, &err), FR_OK);
    assert_true(history_runner_recorded(h, "runner-1"));
    assert_int_equal(history_errors(h), 4);
    history_free(h);
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

/* Submits a plan and waits for it to settle; returns its id (new). */
static char *run_query(ctx *c, const char *plan)
{
    json_t *body = json_loads(plan, 0, NULL);
    json_t *out = NULL;
    ctx_query_watch *w = NULL;
    struct ctx_error e;
    ctx_error_init(&e);
    assert_int_equal(ctx_query_submit_watched(c, body, "req-1", &out, &w, &e), FR_OK);
    for (int i = 0; i < 2000 && !ctx_query_watch_settled(w); i++)
        usleep(5000);
    char *id = strdup(json_string_value(json_object_get(out, "id")));
    ctx_query_watch_free(w);
    json_decref(out);
    json_decref(body);
    ctx_error_cleanup(&e);
    return id;
}

/* The freeze's record is lost (writes refused); once writes work again, the
 * next accept records the runner first, so that query and its end land. */
static void test_lost_freeze_is_recorded_at_the_next_accept(void **state)
{
    (void)state;
    char *dir = temp_dir();
    char *data = fr_xasprintf("%s/data", dir), *st = fr_xasprintf("%s/state", dir);
    struct ctx_options o = {.data_dir = data, .state_dir = st, .threads = 1};
    ctx *c = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(ctx_new(&o, NULL, &c, &err), FR_OK);
    refuse_writes(c->history);
    free(run_query(c, "{\"plan\": {\"source\": {\"rows\": [{\"a\": 1}]}}}"));
    assert_int_equal(sqlite3_exec(c->history->db, "PRAGMA query_only=OFF", NULL, NULL, NULL),
                     SQLITE_OK);
    char *id = run_query(c, "{\"plan\": {\"source\": {\"rows\": [{\"a\": 2}]}}}");
    json_t *q = NULL;
    assert_int_equal(history_query_get(c->history, id, &q, &err), FR_OK);
    assert_string_equal(json_string_value(json_object_get(q, "state")), "succeeded");
    json_t *r = NULL;
    assert_int_equal(history_runner_get(
                         c->history, json_string_value(json_object_get(q, "runner_id")), &r, &err),
                     FR_OK);
    assert_string_equal(json_string_value(json_object_get(r, "frozen_by")), "req-1");
    json_decref(r);
    json_decref(q);
    free(id);
    ctx_free(c);
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(data);
    free(st);
    free(dir);
}

static void test_queries_run_without_a_writable_history(void **state)
{
    (void)state;
    char *dir = temp_dir();
    char *data = fr_xasprintf("%s/data", dir), *st = fr_xasprintf("%s/state", dir);
    struct ctx_options o = {.data_dir = data, .state_dir = st, .threads = 1};
    ctx *c = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(ctx_new(&o, NULL, &c, &err), FR_OK);
    assert_non_null(c->history);
    refuse_writes(c->history);
    json_t *body = json_loads("{\"plan\": {\"source\": {\"rows\": [{\"a\": 1}]}}}", 0, NULL);
    json_t *out = NULL;
    ctx_query_watch *w = NULL;
    struct ctx_error e;
    ctx_error_init(&e);
    assert_int_equal(ctx_query_submit_watched(c, body, "req-1", &out, &w, &e), FR_OK);
    for (int i = 0; i < 2000 && !ctx_query_watch_settled(w); i++)
        usleep(5000);
    json_t *status = ctx_query_watch_json(w);
    assert_string_equal(json_string_value(json_object_get(status, "state")), "succeeded");
    json_decref(status);
    struct fr_buf m;
    fr_buf_init(&m);
    ctx_metrics(c, &m);
    fr_buf_putc(&m, '\0');
    const char *line = strstr(m.data, "\nframed_history_errors_total ");
    assert_non_null(line);
    assert_true(atoll(line + strlen("\nframed_history_errors_total ")) >= 2); /* freeze, accept */
    fr_buf_cleanup(&m);
    char *detail = ctx_ready_detail(c);
    assert_non_null(detail);
    assert_non_null(strstr(detail, "history: "));
    free(detail);
    ctx_query_watch_free(w);
    json_decref(out);
    json_decref(body);
    ctx_error_cleanup(&e);
    ctx_free(c);
    char *cmd = fr_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(data);
    free(st);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_writes_are_counted),
        cmocka_unit_test(test_update_of_a_missing_row_fails),
        cmocka_unit_test(test_lost_freeze_is_recorded_at_the_next_accept),
        cmocka_unit_test(test_queries_run_without_a_writable_history),
        cmocka_unit_test(test_locked_file_is_left_alone),
        cmocka_unit_test(test_journal_mode_not_wal_is_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
