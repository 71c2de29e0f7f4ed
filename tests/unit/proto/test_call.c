/* Tests of src/proto/proto_call.c: the one mapping of a worker's problem
 * answer to a status and error, the tracing-ID bounds, and partition fetch
 * and config release against an in-process worker stand-in (the echo is
 * checked, a problem answer keeps its kind). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../common/mhd_fixture.h"
#include "proto/proto.h"

#define CONFIG_ID "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER_ID "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* p-good: the bytes, echoing the config; p-other: echoes another config;
 * p-gone: a 404 problem; DELETE of a config: 200 when the header names it. */
static enum MHD_Result handle(void *cls, struct mhd_request *rq)
{
    (void)cls;
    const char *cid = mhd_fixture_header(rq, FR_CONFIG_ID_HEADER);
    static const char gone[] = "{\"type\":\"https://framed.dev/problems/partition-not-found\","
                               "\"status\":404,\"detail\":\"no partition p-gone\"}";
    if (strcmp(rq->method, "DELETE") == 0)
        return mhd_fixture_reply(rq->conn, cid ? 200 : 400, "application/json", "{}", 2, cid);
    if (strstr(rq->uri, "p-good"))
        return mhd_fixture_reply(rq->conn, 200, "application/vnd.framed.table", "BYTES", 5, cid);
    if (strstr(rq->uri, "p-other"))
        return mhd_fixture_reply(rq->conn, 200, "application/vnd.framed.table", "BYTES", 5,
                                 OTHER_ID);
    return mhd_fixture_reply(rq->conn, 404, "application/problem+json", gone, strlen(gone), cid);
}

static void test_status_of_http(void **state)
{
    (void)state;
    assert_int_equal(proto_status_of_http(404), FR_ENOTFOUND);
    assert_int_equal(proto_status_of_http(422), FR_EDATA);
    assert_int_equal(proto_status_of_http(424), FR_EUNAVAILABLE);
    assert_int_equal(proto_status_of_http(504), FR_ETIMEOUT);
    assert_int_equal(proto_status_of_http(507), FR_EMEMLIMIT);
    assert_int_equal(proto_status_of_http(418), FR_EINVAL);
    assert_int_equal(proto_status_of_http(500), FR_EINTERNAL);
}

static void test_problem_to_error(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"type\":\"https://framed.dev/problems/malformed-data\",\"detail\":\"bad "
                    "row\",\"file\":\"x.csv\",\"line\":3,\"field_index\":2}");
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(proto_problem_to_error(&b, 422, "http://w1", &err), FR_EDATA);
    assert_string_equal(err.kind, "malformed-data");
    assert_non_null(strstr(err.message, "bad row (worker http://w1 answered 422)"));
    assert_string_equal(err.file, "x.csv");
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 2);
    fr_buf_cleanup(&b);
    /* Not a problem body, or a slug that is not one: "internal", by the code. */
    fr_buf_puts(&b, "{\"type\":\"https://x/problems/Evil Slug\"}");
    fr_error_init(&err);
    assert_int_equal(proto_problem_to_error(&b, 404, "http://w1", &err), FR_ENOTFOUND);
    assert_string_equal(err.kind, "internal");
    fr_buf_cleanup(&b);
}

static void test_trace_ids(void **state)
{
    (void)state;
    char long_id[PROTO_TRACE_ID_MAX + 2];
    memset(long_id, 'a', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    assert_true(proto_trace_id_ok(NULL));
    assert_true(proto_trace_id_ok("q-1234abcd"));
    assert_false(proto_trace_id_ok(""));
    assert_false(proto_trace_id_ok("a b"));
    assert_false(proto_trace_id_ok("a\x7f"));
    assert_false(proto_trace_id_ok(long_id));
    long_id[PROTO_TRACE_ID_MAX] = '\0';
    assert_true(proto_trace_id_ok(long_id));
}

static void test_fetch_and_release(void **state)
{
    (void)state;
    struct mhd_fixture srv;
    assert_int_equal(mhd_fixture_start(&srv, handle, NULL), 0);
    struct proto_peer peer = {.config_id = CONFIG_ID, .query_id = "q-1"};
    struct fr_buf out;
    fr_buf_init(&out);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-good", 0, 0, &out, &err), FR_OK);
    assert_int_equal(out.len, 5);
    assert_memory_equal(out.data, "BYTES", 5);
    fr_buf_cleanup(&out);
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-other", 0, 0, &out, &err),
                     FR_EDATA);
    assert_string_equal(err.kind, "config-mismatch");
    assert_null(out.data);
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-gone", 0, 0, &out, &err),
                     FR_ENOTFOUND);
    assert_string_equal(err.kind, "partition-not-found");
    assert_int_equal(proto_release_config(&peer, srv.base_url, &err), FR_OK);
    mhd_fixture_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_of_http),
        cmocka_unit_test(test_problem_to_error),
        cmocka_unit_test(test_trace_ids),
        cmocka_unit_test(test_fetch_and_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
