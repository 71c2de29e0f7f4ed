/* Fault injection for the history: a database that refuses writes (as a
 * full disk would) fails each write with FR_EIO and counts it, reads go on,
 * and the context's queries run regardless, the failures counted in
 * framed_history_errors_total and said by /readyz's detail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
    refuse_writes(h);
    struct history_runner_rec r = {"runner-1", "local", CFG_A, "{}", 2, 1, "req"};
    assert_int_equal(history_runner_add(h, &r, &err), FR_EIO);
    assert_int_equal(history_errors(h), 1);
    struct history_query_rec q = {.id = "q-1",
                                  .runner_id = "runner-1",
                                  .state = "queued",
                                  .created_ms = 1,
                                  .started_ms = -1,
                                  .finished_ms = -1,
                                  .rows = -1};
    assert_int_equal(history_query_add(h, &q, &err), FR_EIO);
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
        cmocka_unit_test(test_queries_run_without_a_writable_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
