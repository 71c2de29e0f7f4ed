/* Tests of src/common/common_client.c against an in-process HTTP server:
 * the Framed-* headers arrive and the signature verifies on the server's
 * side, status, body and the config ID echo come back, and a silent peer or
 * a closed port give FR_ETIMEOUT or FR_EIO with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>

#include "mhd_fixture.h"

#include <curl/curl.h>

#define SECRET "cluster-secret"
#define CONFIG_ID "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* What the server saw last; guarded by lock (the server runs its own thread). */
struct seen {
    pthread_mutex_t lock;
    const char *secret; /* the server's; NULL: no verification */
    char method[16];
    char uri[256];
    char config_id[80];
    char request_id[80];
    char query_id[80];
    char content_type[64];
    size_t body_len;
    int verify_rc;
    char verify_message[512];
    int client_port; /* the calling socket's port: one per connection */
};

struct fixture {
    struct mhd_fixture server;
    struct seen seen;
};

static void copy_header(char *out, size_t outsz, const char *value)
{
    snprintf(out, outsz, "%s", value ? value : "");
}

/* Verifies a signature when the server has a secret: 401 on failure; else
 * echoes the body back with the config ID (201 for POST, 204 for DELETE). */
static enum MHD_Result handle(void *cls, struct mhd_request *rq)
{
    struct seen *seen = cls;
    struct fr_error err;
    fr_error_init(&err);
    int rc = FR_OK;
    if (seen->secret)
        rc = fr_verify_request_nonce(
            seen->secret, rq->method, rq->uri, rq->body.data, rq->body.len,
            mhd_fixture_header(rq, "Framed-Sender"), mhd_fixture_header(rq, "Framed-Timestamp"),
            mhd_fixture_header(rq, "Framed-Nonce"), mhd_fixture_header(rq, "Framed-Signature"),
            fr_now_ms() / 1000, NULL, &err);
    pthread_mutex_lock(&seen->lock);
    copy_header(seen->method, sizeof(seen->method), rq->method);
    copy_header(seen->uri, sizeof(seen->uri), rq->uri);
    copy_header(seen->config_id, sizeof(seen->config_id),
                mhd_fixture_header(rq, "Framed-Config-Id"));
    copy_header(seen->content_type, sizeof(seen->content_type),
                mhd_fixture_header(rq, "Content-Type"));
    copy_header(seen->request_id, sizeof(seen->request_id),
                mhd_fixture_header(rq, FR_REQUEST_ID_HEADER));
    copy_header(seen->query_id, sizeof(seen->query_id), mhd_fixture_header(rq, FR_QUERY_ID_HEADER));
    seen->body_len = rq->body.len;
    seen->verify_rc = rc;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    seen->client_port =
        ci && ci->client_addr ? ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port) : -1;
    copy_header(seen->verify_message, sizeof(seen->verify_message), err.message);
    pthread_mutex_unlock(&seen->lock);
    if (rc != FR_OK)
        return mhd_fixture_reply(rq->conn, 401, "text/plain", err.message, strlen(err.message),
                                 NULL);
    const char *echo = mhd_fixture_header(rq, "Framed-Config-Id");
    if (strcmp(rq->method, "DELETE") == 0)
        return mhd_fixture_reply(rq->conn, 204, NULL, "", 0, echo);
    return mhd_fixture_reply(rq->conn, strcmp(rq->method, "POST") == 0 ? 201 : 200,
                             "application/json", rq->body.data ? rq->body.data : "", rq->body.len,
                             echo);
}

static int setup(void **state)
{
    struct fixture *f = fr_xcalloc(1, sizeof(*f));
    pthread_mutex_init(&f->seen.lock, NULL);
    f->seen.secret = SECRET;
    if (mhd_fixture_start(&f->server, handle, &f->seen) != 0) {
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
    pthread_mutex_destroy(&f->seen.lock);
    free(f);
    return 0;
}

static void test_signed_post_round_trip(void **state)
{
    struct fixture *f = *state;
    static const char body[] = "{\"stage\":2,\"task\":0}";
    char *url = fr_xasprintf("%s/v1/tasks?x=1&y=two", f->server.base_url);
    struct fr_client_req req = {
        .method = "POST",
        .url = url,
        .config_id = CONFIG_ID,
        .content_type = "application/json",
        .body = body,
        .body_len = strlen(body),
        .secret = SECRET,
        .sender = "coordinator",
    };
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 201);
    assert_int_equal(resp.body.len, strlen(body));
    assert_memory_equal(resp.body.data, body, strlen(body));
    assert_string_equal(resp.config_id, CONFIG_ID);
    assert_string_equal(resp.content_type, "application/json");

    pthread_mutex_lock(&f->seen.lock);
    assert_string_equal(f->seen.method, "POST");
    assert_string_equal(f->seen.uri, "/v1/tasks?x=1&y=two");
    assert_string_equal(f->seen.config_id, CONFIG_ID);
    assert_string_equal(f->seen.content_type, "application/json");
    assert_int_equal(f->seen.verify_rc, FR_OK);
    pthread_mutex_unlock(&f->seen.lock);
    fr_client_resp_cleanup(&resp);
    free(url);
}

static void test_wrong_secret_gets_401(void **state)
{
    struct fixture *f = *state;
    char *url = fr_xasprintf("%s/v1/partitions/p-1", f->server.base_url);
    struct fr_client_req req = {
        .method = "GET", .url = url, .secret = "not-the-secret", .sender = "w-2"};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 401);
    assert_non_null(strstr(resp.body.data, "Signature is wrong"));
    assert_string_equal(resp.config_id, "");
    fr_client_resp_cleanup(&resp);

    /* Unsigned: the server names the missing header. */
    req.secret = NULL;
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 401);
    assert_non_null(strstr(resp.body.data, "Framed-Sender header is missing"));
    fr_client_resp_cleanup(&resp);
    free(url);
}

static void test_delete_and_large_body(void **state)
{
    struct fixture *f = *state;
    char *url = fr_xasprintf("%s/v1/configs/%s", f->server.base_url, CONFIG_ID);
    struct fr_client_req req = {.method = "DELETE",
                                .url = url,
                                .config_id = CONFIG_ID,
                                .secret = SECRET,
                                .sender = "coordinator"};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 204);
    assert_int_equal(resp.body.len, 0);
    assert_string_equal(resp.config_id, CONFIG_ID);
    pthread_mutex_lock(&f->seen.lock);
    assert_string_equal(f->seen.method, "DELETE");
    assert_int_equal(f->seen.verify_rc, FR_OK);
    pthread_mutex_unlock(&f->seen.lock);
    fr_client_resp_cleanup(&resp);

    /* A body larger than curl's Expect: 100-continue threshold, binary. */
    size_t n = 300 * 1024;
    unsigned char *big = fr_xmalloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 31 + 7);
    req.method = "PUT";
    req.body = big;
    req.body_len = n;
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.body.len, n);
    assert_memory_equal(resp.body.data, big, n);
    pthread_mutex_lock(&f->seen.lock);
    assert_string_equal(f->seen.content_type, "application/octet-stream");
    assert_int_equal(f->seen.verify_rc, FR_OK);
    pthread_mutex_unlock(&f->seen.lock);
    fr_client_resp_cleanup(&resp);
    free(big);
    free(url);
}

/* A GET on this thread; the port the server saw it come from. */
static int get_port(struct fixture *f)
{
    char *url = fr_xasprintf("%s/v1/livez", f->server.base_url);
    struct fr_client_req req = {
        .method = "GET", .url = url, .config_id = CONFIG_ID, .secret = SECRET, .sender = "w1"};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 200);
    fr_client_resp_cleanup(&resp);
    free(url);
    pthread_mutex_lock(&f->seen.lock);
    int port = f->seen.client_port;
    pthread_mutex_unlock(&f->seen.lock);
    assert_true(port > 0);
    return port;
}

/* A thread's calls share one connection (keep-alive) until
 * fr_client_thread_done closes it; the next call connects again. */
static void test_calls_reuse_the_connection(void **state)
{
    struct fixture *f = *state;
    fr_client_thread_done(); /* whatever earlier tests left on this thread */
    int first = get_port(f);
    assert_int_equal(get_port(f), first);
    assert_int_equal(get_port(f), first);
    fr_client_thread_done();
    int again = get_port(f);
    assert_int_not_equal(again, first);
    assert_int_equal(get_port(f), again);
    fr_client_thread_done();
}

static void *call_many(void *arg)
{
    struct fixture *f = arg;
    char *url = fr_xasprintf("%s/v1/workers", f->server.base_url);
    intptr_t ok = 0;
    for (int i = 0; i < 10; i++) {
        struct fr_client_req req = {.method = "POST",
                                    .url = url,
                                    .body = "{}",
                                    .body_len = 2,
                                    .content_type = "application/json",
                                    .secret = SECRET,
                                    .sender = "w-1"};
        struct fr_client_resp resp;
        if (fr_client_call(&req, &resp, NULL) == FR_OK && resp.status == 201)
            ok++;
        fr_client_resp_cleanup(&resp);
    }
    free(url);
    return (void *)ok;
}

static void test_concurrent_calls(void **state)
{
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, call_many, *state), 0);
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        pthread_join(threads[i], &ok);
        assert_int_equal((intptr_t)ok, 10);
    }
}

/* A socket that listens but never accepts: the handshake completes in the
 * kernel and the request is never answered. */
static void test_timeout(void **state)
{
    (void)state;
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
    char *url = fr_xasprintf("http://127.0.0.1:%u/v1/tasks", (unsigned)ntohs(addr.sin_port));
    struct fr_client_req req = {.method = "GET", .url = url, .timeout_ms = 200};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_ETIMEOUT);
    assert_int_equal(err.status, FR_ETIMEOUT);
    assert_non_null(strstr(err.message, url));
    assert_int_equal(resp.status, 0);
    assert_int_equal(resp.body.len, 0);
    fr_client_resp_cleanup(&resp);
    close(fd);
    free(url);
}

static void test_closed_port(void **state)
{
    (void)state;
    uint16_t port = mhd_fixture_closed_port();
    assert_int_not_equal(port, 0);
    char *url = fr_xasprintf("http://127.0.0.1:%u/v1/tasks", (unsigned)port);
    struct fr_client_req req = {.method = "GET", .url = url};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_EIO);
    assert_non_null(strstr(err.message, url));
    assert_int_equal(resp.status, 0);
    assert_string_equal(resp.config_id, "");
    fr_client_resp_cleanup(&resp);
    free(url);
}

static void test_refuses_bad_requests(void **state)
{
    struct fixture *f = *state;
    struct fr_client_resp resp;
    struct fr_error err;
    char *url = fr_xasprintf("%s/v1/tasks", f->server.base_url);
    struct fr_client_req req = {
        .method = "GET", .url = url, .config_id = "sha256:x\r\nX-Injected: 1"};
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "line break"));
    fr_client_resp_cleanup(&resp);

    req.config_id = NULL;
    req.secret = SECRET; /* and no sender */
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "sender"));
    fr_client_resp_cleanup(&resp);

    req.secret = NULL;
    req.url = "ftp://127.0.0.1/x";
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_EIO);
    assert_int_equal(resp.status, 0);
    fr_client_resp_cleanup(&resp);
    free(url);
}

/* The same call driven by a caller's multi handle (as the remote runner
 * does): signed (the path and query parsed from the URL), the tracing IDs
 * sent, the answer and its echo captured by finish. */
static void test_xfer_on_a_multi_handle(void **state)
{
    struct fixture *f = *state;
    static const char body[] = "{\"task\":1}";
    char *url = fr_xasprintf("%s/v1/tasks?attempt=2", f->server.base_url);
    struct fr_client_req req = {.method = "POST",
                                .url = url,
                                .config_id = CONFIG_ID,
                                .content_type = "application/json",
                                .body = body,
                                .body_len = strlen(body),
                                .secret = SECRET,
                                .sender = "coordinator",
                                .request_id = "req-123",
                                .query_id = "q-456"};
    struct fr_client_resp resp;
    struct fr_client_xfer *x = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_xfer_new(&req, &resp, &x, &err), FR_OK);
    CURLM *m = curl_multi_init();
    curl_multi_add_handle(m, fr_client_xfer_easy(x));
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    int left = 0;
    CURLMsg *msg = curl_multi_info_read(m, &left);
    assert_non_null(msg);
    assert_int_equal(fr_client_xfer_finish(x, (int)msg->data.result, &err), FR_OK);
    assert_int_equal(resp.status, 201);
    assert_string_equal(resp.config_id, CONFIG_ID);
    assert_memory_equal(resp.body.data, body, strlen(body));
    pthread_mutex_lock(&f->seen.lock);
    assert_int_equal(f->seen.verify_rc, FR_OK);
    assert_string_equal(f->seen.uri, "/v1/tasks?attempt=2");
    assert_string_equal(f->seen.request_id, "req-123");
    assert_string_equal(f->seen.query_id, "q-456");
    pthread_mutex_unlock(&f->seen.lock);
    curl_multi_remove_handle(m, fr_client_xfer_easy(x));
    fr_client_xfer_free(x);
    curl_multi_cleanup(m);
    fr_client_resp_cleanup(&resp);

    req.query_id = "q\r\nX-Injected: 1"; /* a tracing ID is a header value too */
    assert_int_equal(fr_client_xfer_new(&req, &resp, &x, &err), FR_EINVAL);
    assert_null(x);
    free(url);
}

/* A peer that answers 100 Continue with an echo, then a final answer
 * without one: the echo of the interim response must not count. */
static void *continue_peer(void *arg)
{
    int lfd = *(int *)arg;
    int c = accept(lfd, NULL, NULL);
    char buf[4096];
    ssize_t n = recv(c, buf, sizeof(buf), 0);
    (void)n;
    static const char answer[] = "HTTP/1.1 100 Continue\r\nFramed-Config-Id: " CONFIG_ID
                                 "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                 "Connection: close\r\n\r\nok";
    ssize_t w = send(c, answer, sizeof(answer) - 1, 0);
    (void)w;
    close(c);
    return NULL;
}

static void test_echo_forgotten_after_100_continue(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(addr);
    assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    pthread_t t;
    pthread_create(&t, NULL, continue_peer, &lfd);
    char *url = fr_xasprintf("http://127.0.0.1:%u/v1/tasks", (unsigned)ntohs(addr.sin_port));
    struct fr_client_req req = {.method = "GET", .url = url, .config_id = CONFIG_ID};
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(fr_client_call(&req, &resp, &err), FR_OK);
    assert_int_equal(resp.status, 200);
    assert_string_equal(resp.config_id, "");
    fr_client_resp_cleanup(&resp);
    pthread_join(t, NULL);
    close(lfd);
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signed_post_round_trip),
        cmocka_unit_test(test_wrong_secret_gets_401),
        cmocka_unit_test(test_delete_and_large_body),
        cmocka_unit_test(test_concurrent_calls),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_closed_port),
        cmocka_unit_test(test_refuses_bad_requests),
        cmocka_unit_test(test_xfer_on_a_multi_handle),
        cmocka_unit_test(test_echo_forgotten_after_100_continue),
        cmocka_unit_test(test_calls_reuse_the_connection),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
