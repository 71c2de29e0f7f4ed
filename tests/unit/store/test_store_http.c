/* Tests of src/store/store_http.c against an in-process server that plays
 * the coordinator's GET /v1/configs/{id} (signed requests only): get, 404 as
 * FR_ENOTFOUND, other answers as FR_EIO, and writes refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../common/mhd_fixture.h"
#include "store/store.h"

#define SECRET "cluster-secret"
static const char CONFIG[] = "{\"shuffle_partitions\":8}";

struct fixture {
    struct mhd_fixture server;
    char config_id[80];  /* served with CONFIG */
    char failing_id[80]; /* answered with a 500 */
};

static enum MHD_Result handle(void *cls, struct mhd_request *rq)
{
    const struct fixture *f = cls;
    static const char prefix[] = "/v1/configs/";
    struct fr_error err;
    fr_error_init(&err);
    if (fr_verify_request_nonce(
            SECRET, rq->method, rq->uri, rq->body.data, rq->body.len,
            mhd_fixture_header(rq, "Framed-Sender"), mhd_fixture_header(rq, "Framed-Timestamp"),
            mhd_fixture_header(rq, "Framed-Nonce"), mhd_fixture_header(rq, "Framed-Signature"),
            fr_now_ms() / 1000, NULL, &err) != FR_OK)
        return mhd_fixture_reply(rq->conn, 401, "text/plain", err.message, strlen(err.message),
                                 NULL);
    const char *id = strncmp(rq->uri, prefix, strlen(prefix)) == 0 ? rq->uri + strlen(prefix) : "";
    if (strcmp(rq->method, "GET") == 0 && strcmp(id, f->config_id) == 0)
        return mhd_fixture_reply(rq->conn, 200, "application/json", CONFIG, strlen(CONFIG), id);
    if (strcmp(id, f->failing_id) == 0) {
        static const char problem[] = "{\"type\":\"internal\",\n\"title\":\"disk on fire\"}";
        return mhd_fixture_reply(rq->conn, 500, "application/problem+json", problem,
                                 strlen(problem), NULL);
    }
    return mhd_fixture_reply(rq->conn, 404, "application/problem+json", "{}", 2, NULL);
}

static int setup(void **state)
{
    struct fixture *f = fr_xcalloc(1, sizeof(*f));
    fr_sha256_id(CONFIG, strlen(CONFIG), f->config_id, sizeof(f->config_id));
    fr_sha256_id("other", 5, f->failing_id, sizeof(f->failing_id));
    if (mhd_fixture_start(&f->server, handle, f) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    mhd_fixture_stop(&f->server);
    free(f);
    return 0;
}

static store *open_http(const char *base, const char *secret)
{
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_http_open(base, secret, "w-1", &s, &err), FR_OK);
    assert_non_null(s);
    assert_string_equal(s->vt->name, "http");
    return s;
}

static void test_get(void **state)
{
    struct fixture *f = *state;
    /* A trailing slash on the base does not double in the path. */
    char *base = fr_xasprintf("%s/", f->server.base_url);
    store *s = open_http(base, SECRET);
    char *bytes = NULL;
    size_t len = 0;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_get(s, f->config_id, &bytes, &len, &err), FR_OK);
    assert_int_equal(len, strlen(CONFIG));
    assert_string_equal(bytes, CONFIG);
    free(bytes);
    store_free(s);
    free(base);
}

static void test_not_found_and_errors(void **state)
{
    struct fixture *f = *state;
    store *s = open_http(f->server.base_url, SECRET);
    char *bytes = NULL;
    size_t len = 0;
    struct fr_error err;
    char absent[80];
    fr_sha256_id("absent", 6, absent, sizeof(absent));
    fr_error_init(&err);
    assert_int_equal(store_get(s, absent, &bytes, &len, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.message, absent));
    assert_int_equal(store_get(s, f->failing_id, &bytes, &len, &err), FR_EIO);
    assert_non_null(strstr(err.message, "500"));
    assert_non_null(strstr(err.message, "disk on fire"));
    assert_int_equal(store_get(s, "sha256:nothex", &bytes, &len, &err), FR_EINVAL);
    assert_null(bytes);
    store_free(s);

    /* A wrong secret: the coordinator's 401 and its reason surface. */
    s = open_http(f->server.base_url, "not-the-secret");
    assert_int_equal(store_get(s, f->config_id, &bytes, &len, &err), FR_EIO);
    assert_non_null(strstr(err.message, "401"));
    assert_non_null(strstr(err.message, "Signature is wrong"));
    store_free(s);
}

static void test_writes_refused(void **state)
{
    struct fixture *f = *state;
    store *s = open_http(f->server.base_url, SECRET);
    char id[80];
    int64_t count = -1;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_put(s, CONFIG, strlen(CONFIG), id, sizeof(id), &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "read-only"));
    fr_error_init(&err);
    assert_int_equal(store_release(s, f->config_id, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "read-only"));
    assert_int_equal(store_refcount(s, f->config_id, &count, &err), FR_EINVAL);
    store_free(s);
}

static void test_coordinator_down(void **state)
{
    struct fixture *f = *state;
    uint16_t port = mhd_fixture_closed_port();
    char *base = fr_xasprintf("http://127.0.0.1:%u", (unsigned)port);
    store *s = open_http(base, SECRET);
    char *bytes = NULL;
    size_t len = 0;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_get(s, f->config_id, &bytes, &len, &err), FR_EIO);
    assert_non_null(strstr(err.message, base));
    store_free(s);
    free(base);
}

static void test_open_refuses(void **state)
{
    (void)state;
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_http_open("ftp://host", NULL, NULL, &s, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "ftp://host"));
    assert_null(s);
    assert_int_equal(store_http_open("http://host", SECRET, NULL, &s, &err), FR_EINVAL);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_not_found_and_errors),
        cmocka_unit_test(test_writes_refused),
        cmocka_unit_test(test_coordinator_down),
        cmocka_unit_test(test_open_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
