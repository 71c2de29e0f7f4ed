/* Tests of src/http/http_routes.c (matching, params, 405 Allow lists) and of
 * the status table in src/http/http_problem.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_int.h"

/* A request as the router sees it: method and path only. */
static struct http_request *request(const char *method, const char *path)
{
    struct http_request *req = calloc(1, sizeof(*req));
    snprintf(req->method, sizeof(req->method), "%s", method);
    req->path = strdup(path);
    return req;
}

static void request_free(struct http_request *req)
{
    for (int i = 0; i < req->nparams; i++) {
        free(req->param_names[i]);
        free(req->param_values[i]);
    }
    free(req->path);
    free(req);
}

static void test_match_with_params(void **state)
{
    struct http__router *r = *state;
    struct http_request *req = request("GET", "/v1/queries/q_1/result");
    char *allow = NULL;
    assert_int_equal(http__router_match(r, req, &allow), 0);
    assert_null(allow);
    assert_string_equal(req->route->pattern, "/v1/queries/{id}/result");
    assert_string_equal(http__param(req, "id"), "q_1");
    assert_null(http__param(req, "name"));
    assert_string_equal(http__router_pattern(r, req->route_index), "/v1/queries/{id}/result");
    request_free(req);
}

static void test_head_is_served_by_get(void **state)
{
    struct http__router *r = *state;
    struct http_request *req = request("HEAD", "/livez");
    char *allow = NULL;
    assert_int_equal(http__router_match(r, req, &allow), 0);
    assert_string_equal(req->route->method, "GET");
    request_free(req);
}

static void test_unknown_path_is_404(void **state)
{
    struct http__router *r = *state;
    const char *paths[] = {
        "/v1/nope", "/v1/config/", "/v1/queries//result", "/v1", "/v1/queries/a/b/result", ""};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct http_request *req = request("GET", paths[i]);
        char *allow = NULL;
        assert_int_equal(http__router_match(r, req, &allow), FR_ENOTFOUND);
        assert_null(req->route);
        assert_string_equal(http__router_pattern(r, req->route_index), "unmatched");
        request_free(req);
    }
}

static void test_wrong_method_lists_allowed(void **state)
{
    struct http__router *r = *state;
    struct http_request *req = request("PUT", "/v1/config");
    char *allow = NULL;
    assert_int_equal(http__router_match(r, req, &allow), FR_ECONFLICT);
    assert_string_equal(allow, "GET, HEAD, POST");
    free(allow);
    request_free(req);

    req = request("POST", "/v1/datasets/trips");
    assert_int_equal(http__router_match(r, req, &allow), FR_ECONFLICT);
    assert_string_equal(allow, "GET, HEAD, PUT, DELETE");
    assert_int_equal(req->nparams, 0);
    free(allow);
    request_free(req);
}

/* The dashboard's catch-all: any path naming a file, slashes included, once
 * no other route took it; other methods and paths without a file stay 404. */
static void test_catch_all_takes_files_last(void **state)
{
    struct http__router *r = *state;
    const char *files[] = {"/app.js", "/vendor/preact/preact.mjs", "/views/query.js",
                           "/a/b/c/d.css"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct http_request *req = request("GET", files[i]);
        char *allow = NULL;
        assert_int_equal(http__router_match(r, req, &allow), 0);
        assert_string_equal(req->route->pattern, "/{file}");
        assert_string_equal(http__param(req, "file"), files[i] + 1);
        request_free(req);
    }
    const char *not_files[][2] = {{"POST", "/app.js"},
                                  {"DELETE", "/vendor/x.js"},
                                  {"GET", "/vendor/"},
                                  {"GET", "/vendor"},
                                  {"GET", "/x."}};
    for (size_t i = 0; i < sizeof(not_files) / sizeof(not_files[0]); i++) {
        struct http_request *req = request(not_files[i][0], not_files[i][1]);
        char *allow = NULL;
        assert_int_equal(http__router_match(r, req, &allow), FR_ENOTFOUND);
        assert_null(allow);
        request_free(req);
    }
    /* an API route wins over the catch-all, and keeps its 405 */
    struct http_request *req = request("GET", "/v1/queries/q.1");
    char *allow = NULL;
    assert_int_equal(http__router_match(r, req, &allow), 0);
    assert_string_equal(req->route->pattern, "/v1/queries/{id}");
    request_free(req);
    req = request("PUT", "/v1/info");
    allow = NULL;
    assert_int_equal(http__router_match(r, req, &allow), FR_ECONFLICT);
    assert_string_equal(allow, "GET, HEAD");
    free(allow);
    request_free(req);
}

static void test_admin_routes(void **state)
{
    struct http__router *r = *state;
    const struct {
        const char *method, *path;
        bool admin;
    } cases[] = {
        {"POST", "/v1/config", true},     {"GET", "/v1/config", false},
        {"DELETE", "/v1/runner", true},   {"GET", "/v1/runner", false},
        {"PUT", "/v1/datasets/x", true},  {"DELETE", "/v1/datasets/x", true},
        {"GET", "/v1/datasets/x", false}, {"POST", "/v1/dataframes", false},
        {"POST", "/v1/queries", false},   {"DELETE", "/v1/queries/q", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http_request *req = request(cases[i].method, cases[i].path);
        char *allow = NULL;
        assert_int_equal(http__router_match(r, req, &allow), 0);
        assert_int_equal(req->route->needs_admin, cases[i].admin);
        request_free(req);
    }
}

/* Which token each route needs (README: auth): the data endpoints are
 * reading datasets, dataframes and queries; the probes, the dashboard's files
 * and signed cluster calls need none. */
static void test_route_access(void **state)
{
    struct http__router *r = *state;
    const struct {
        const char *method, *path;
        enum http__access access;
    } cases[] = {
        {"GET", "/livez", HTTP_ACCESS_OPEN},
        {"GET", "/readyz", HTTP_ACCESS_OPEN},
        {"GET", "/", HTTP_ACCESS_OPEN},
        {"GET", "/app.js", HTTP_ACCESS_OPEN},
        {"POST", "/v1/workers", HTTP_ACCESS_OPEN},
        {"GET", "/v1/workers", HTTP_ACCESS_READ},
        {"GET", "/metrics", HTTP_ACCESS_READ},
        {"GET", "/v1/info", HTTP_ACCESS_READ},
        {"GET", "/v1/config", HTTP_ACCESS_READ},
        {"GET", "/v1/runner", HTTP_ACCESS_READ},
        {"GET", "/v1/datasets", HTTP_ACCESS_DATA},
        {"GET", "/v1/datasets/t", HTTP_ACCESS_DATA},
        {"POST", "/v1/dataframes", HTTP_ACCESS_DATA},
        {"GET", "/v1/dataframes/d/explain", HTTP_ACCESS_DATA},
        {"POST", "/v1/queries", HTTP_ACCESS_DATA},
        {"GET", "/v1/queries/q/result", HTTP_ACCESS_DATA},
        {"POST", "/v1/config", HTTP_ACCESS_ADMIN},
        {"PUT", "/v1/datasets/t", HTTP_ACCESS_ADMIN},
        {"DELETE", "/v1/runner", HTTP_ACCESS_ADMIN},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http_request *req = request(cases[i].method, cases[i].path);
        char *allow = NULL;
        assert_int_equal(http__router_match(r, req, &allow), 0);
        assert_int_equal(http__route_access(req->route, req->route_signed), cases[i].access);
        request_free(req);
    }
}

static void test_problem_statuses(void **state)
{
    (void)state;
    assert_int_equal(http__problem_http_status(FR_EINVAL, "invalid-json"), 400);
    assert_int_equal(http__problem_http_status(FR_ECONFLICT, "config-locked"), 409);
    assert_int_equal(http__problem_http_status(FR_EUNAVAILABLE, "runner-draining"), 503);
    assert_int_equal(http__problem_http_status(FR_ENOTFOUND, "no-runner"), 404);
    assert_int_equal(http__problem_http_status(FR_EDATA, "query-failed"), 409);
    assert_int_equal(http__problem_http_status(FR_EVALIDATION, ""), 422);
    assert_int_equal(http__problem_http_status(FR_ETOOLARGE, NULL), 413);
    assert_int_equal(http__problem_http_status(FR_ENOSPACE, ""), 507);
    assert_int_equal(http__problem_http_status(FR_EMEMLIMIT, ""), 507);
    assert_int_equal(http__problem_http_status(FR_EIO, ""), 500);
    assert_int_equal(http__problem_http_status(FR_EINVAL, "bad-request"), 400);
    assert_int_equal(http__problem_http_status(FR_EINVAL, "not-implemented"), 501);
    assert_int_equal(http__problem_http_status(FR_EINVAL, "uri-too-long"), 414);
    assert_int_equal(http__problem_http_status(FR_EINVAL, "headers-too-large"), 431);
    /* A kind the table does not know keeps its status's code. */
    assert_int_equal(http__problem_http_status(FR_ENOTFOUND, "no-such-kind"), 404);
    assert_int_equal(http__problem_http_status(-999, ""), 500);
}

static int setup(void **state)
{
    *state = http__router_new();
    return 0;
}

static int teardown(void **state)
{
    http__router_free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_with_params),
        cmocka_unit_test(test_head_is_served_by_get),
        cmocka_unit_test(test_unknown_path_is_404),
        cmocka_unit_test(test_wrong_method_lists_allowed),
        cmocka_unit_test(test_catch_all_takes_files_last),
        cmocka_unit_test(test_admin_routes),
        cmocka_unit_test(test_route_access),
        cmocka_unit_test(test_problem_statuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
