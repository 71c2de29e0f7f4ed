/* Tests of src/proto/proto_call.c: the one mapping of a worker's problem
 * answer to a status and error, the tracing-ID bounds, and partition fetch
 * and config release against an in-process worker stand-in (the echo is
 * checked, a problem answer keeps its kind), and fetches that ask for a
 * codec: the answer decoded, a coding not asked for, corrupt or larger than
 * the bound refused; and a fetch into memory the caller keeps for it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

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
    if (strstr(rq->uri, "p-big")) { /* 6 MiB of 'x', its length declared */
        size_t n = (size_t)6 << 20;
        char *big = malloc(n);
        memset(big, 'x', n);
        struct MHD_Response *r = MHD_create_response_from_buffer(n, big, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(r, "Framed-Config-Id", cid);
        enum MHD_Result rc = MHD_queue_response(rq->conn, 200, r);
        MHD_destroy_response(r);
        return rc;
    }
    if (strstr(rq->uri, "p-good"))
        return mhd_fixture_reply(rq->conn, 200, "application/vnd.framed.table", "BYTES", 5, cid);
    if (strstr(rq->uri, "p-other"))
        return mhd_fixture_reply(rq->conn, 200, "application/vnd.framed.table", "BYTES", 5,
                                 OTHER_ID);
    return mhd_fixture_reply(rq->conn, 404, "application/problem+json", gone, strlen(gone), cid);
}

/* p-coded-<how>: "BYTES" x 1000 in the coding the request's
 * Accept-Encoding picks (lz4 when it picks none, to show the client refuses
 * what it did not ask for); how = good | cut | unasked | unknown. */
static const char *last_accept;
static char accept_seen[64];

static enum MHD_Result handle_coded(void *cls, struct mhd_request *rq)
{
    (void)cls;
    const char *cid = mhd_fixture_header(rq, FR_CONFIG_ID_HEADER);
    last_accept = mhd_fixture_header(rq, "Accept-Encoding");
    snprintf(accept_seen, sizeof(accept_seen), "%s", last_accept ? last_accept : "");
    enum fr_codec c = fr_codec_pick(last_accept);
    if (c == FR_CODEC_NONE || strstr(rq->uri, "unasked"))
        c = c == FR_CODEC_LZ4 ? FR_CODEC_ZSTD : FR_CODEC_LZ4;
    struct fr_buf raw, z;
    fr_buf_init(&raw);
    fr_buf_init(&z);
    for (int i = 0; i < 1000; i++)
        fr_buf_append(&raw, "BYTES", 5);
    struct fr_encoder *e = fr_encoder_new(c, (int64_t)raw.len);
    fr_encoder_write(e, raw.data, raw.len, &z);
    fr_encoder_finish(e, &z);
    fr_encoder_free(e);
    size_t len = strstr(rq->uri, "cut") ? z.len - 3 : z.len;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, z.data, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/vnd.framed.table");
    MHD_add_response_header(r, "Content-Encoding",
                            strstr(rq->uri, "unknown") ? "br" : fr_codec_name(c));
    MHD_add_response_header(r, "Framed-Config-Id", cid);
    enum MHD_Result rc = MHD_queue_response(rq->conn, 200, r);
    MHD_destroy_response(r);
    fr_buf_cleanup(&raw);
    fr_buf_cleanup(&z);
    return rc;
}

static void test_fetch_coded(void **state)
{
    (void)state;
    struct mhd_fixture srv;
    assert_int_equal(mhd_fixture_start(&srv, handle_coded, NULL), 0);
    struct fr_buf out;
    fr_buf_init(&out);
    struct fr_error err;
    const char *lists[] = {"lz4", "zstd", "zstd, lz4"};
    for (int i = 0; i < 3; i++) {
        struct proto_peer peer = {.config_id = CONFIG_ID, .codecs = lists[i]};
        fr_error_init(&err);
        assert_int_equal(
            proto_fetch_partition(&peer, srv.base_url, "p-coded-good", 0, 0, &out, &err), FR_OK);
        assert_string_equal(accept_seen, lists[i]); /* asked for in the config's order */
        assert_int_equal(out.len, 5000);
        assert_memory_equal(out.data + 4995, "BYTES", 5);
        fr_buf_cleanup(&out);
        /* the bound holds for what it decodes to, not only for the bytes sent */
        assert_int_equal(
            proto_fetch_partition(&peer, srv.base_url, "p-coded-good", 4999, 0, &out, &err),
            FR_ENOSPACE);
        assert_null(out.data);
        assert_int_equal(
            proto_fetch_partition(&peer, srv.base_url, "p-coded-cut", 0, 0, &out, &err), FR_EDATA);
        assert_null(out.data);
        if (i < 2) { /* a list of one: the stand-in answers in the other */
            assert_int_equal(
                proto_fetch_partition(&peer, srv.base_url, "p-coded-unasked", 0, 0, &out, &err),
                FR_EDATA);
            assert_non_null(strstr(err.message, "not asked for"));
        }
        assert_int_equal(
            proto_fetch_partition(&peer, srv.base_url, "p-coded-unknown", 0, 0, &out, &err),
            FR_EDATA);
    }
    /* a fetch that asked for none takes no coding */
    struct proto_peer plain = {.config_id = CONFIG_ID};
    assert_int_equal(proto_fetch_partition(&plain, srv.base_url, "p-coded-good", 0, 0, &out, &err),
                     FR_EDATA);
    assert_string_equal(accept_seen, "");
    assert_null(out.data);
    mhd_fixture_stop(&srv);
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

/* Memory given in *out is written into (a worker keeps it from fetch to
 * fetch); its old bytes are not part of the answer, a body larger than it
 * gets new room, and a failed fetch leaves nothing behind. */
static void test_fetch_into_room(void **state)
{
    (void)state;
    struct mhd_fixture srv;
    assert_int_equal(mhd_fixture_start(&srv, handle, NULL), 0);
    struct proto_peer peer = {.config_id = CONFIG_ID};
    struct fr_error err;
    fr_error_init(&err);
    struct fr_buf out;
    fr_buf_init(&out);
    char *room = malloc(4096);
    memcpy(room, "STALE STALE STALE", 18);
    out = (struct fr_buf){.data = room, .len = 17, .cap = 4096};
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-good", 0, 0, &out, &err), FR_OK);
    assert_ptr_equal(out.data, room); /* written where it was given */
    assert_int_equal(out.len, 5);
    assert_string_equal(out.data, "BYTES");
    /* a body past the room's size: new room, all of it there */
    out.len = 0;
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-big", 0, 0, &out, &err), FR_OK);
    assert_int_equal(out.len, (size_t)6 << 20);
    assert_true(out.cap > out.len);
    assert_int_equal(out.data[0], 'x');
    assert_int_equal(out.data[out.len - 1], 'x');
    assert_int_equal(out.data[out.len], '\0');
    /* the same room taken again by a smaller answer */
    room = out.data;
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-good", 0, 0, &out, &err), FR_OK);
    assert_ptr_equal(out.data, room);
    assert_int_equal(out.len, 5);
    /* failures free the room (ASan would report a leak) and leave *out empty */
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-gone", 0, 0, &out, &err),
                     FR_ENOTFOUND);
    assert_null(out.data);
    assert_int_equal(out.cap, 0);
    fr_buf_append(&out, "STALE", 5);
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-other", 0, 0, &out, &err),
                     FR_EDATA);
    assert_null(out.data);
    /* a room smaller than the bound's answer, the bound still holds */
    fr_buf_append(&out, "STALE", 5);
    assert_int_equal(proto_fetch_partition(&peer, srv.base_url, "p-big", 1 << 20, 0, &out, &err),
                     FR_ENOSPACE);
    assert_null(out.data);
    mhd_fixture_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_of_http), cmocka_unit_test(test_problem_to_error),
        cmocka_unit_test(test_trace_ids),      cmocka_unit_test(test_fetch_and_release),
        cmocka_unit_test(test_fetch_coded),    cmocka_unit_test(test_fetch_into_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
