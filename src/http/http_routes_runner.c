/* http_routes_runner: the runner's state (GET /v1/runner) and its teardown
 * (DELETE /v1/runner[?force=true]), which waits for running queries and so
 * runs deferred, off the server's threads. */
#include "http_int.h"

#include <microhttpd.h>

static void runner_get(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, ctx_runner_info(req->ctx));
}

static void runner_reset_job(struct http_request *req)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_runner_reset(req->ctx, http__query_bool(req, "force") == 1, req->request_id, &out,
                         &err) == 0)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

static void runner_delete(struct http_request *req)
{
    if (http__query_bool(req, "force") < 0) {
        http__reply_bad_parameter(req, "force", "force must be true or false");
        return;
    }
    http__defer(req, runner_reset_job);
}

void http__routes_runner_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/v1/runner", runner_get, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/runner", runner_delete, true, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
