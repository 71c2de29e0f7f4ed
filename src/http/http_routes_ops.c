/* http_routes_ops: what operators and platforms ask of a running server:
 * liveness, readiness (503 once shutdown has begun), Prometheus metrics,
 * build and runtime info, and the dashboard page from the static dir. */
#include "http.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>

static void livez(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
}

static void readyz(struct http_request *req)
{
    if (ctx_ready(req->ctx) && !http__shutting_down(req->srv))
        http__reply_json(req, MHD_HTTP_OK, json_pack("{s:s}", "status", "ready"));
    else
        http__reply_problem(req, FR_EUNAVAILABLE, "not-ready",
                            "the server is starting or shutting down");
}

static void metrics(struct http_request *req)
{
    struct fr_buf b;
    fr_buf_init(&b);
    http__metrics_write(http__server_metrics(req->srv), &b);
    ctx_metrics(req->ctx, &b);
    size_t len = 0;
    char *text = fr_buf_steal(&b, &len);
    http__reply_bytes(req, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static void info(struct http_request *req)
{
    json_t *out = ctx_info(req->ctx);
    if (!json_is_object(out)) {
        json_decref(out);
        out = json_object();
    }
    json_object_set_new(out, "http", json_pack("{s:I, s:I, s:b}", "max_body_bytes",
                                               (json_int_t)http__max_body(req->srv),
                                               "max_upload_bytes",
                                               (json_int_t)http__max_upload(req->srv),
                                               "admin_auth", http__admin_auth(req->srv)));
    http__reply_json(req, MHD_HTTP_OK, out);
}

static void dashboard(struct http_request *req)
{
    struct fr_error err;
    fr_error_init(&err);
    char *path = fr_xasprintf("%s/index.html", http__static_dir(req->srv));
    char *html = NULL;
    size_t len = 0;
    if (fr_file_read_all(path, &html, &len, &err) == 0) {
        http__reply_bytes(req, MHD_HTTP_OK, "text/html; charset=utf-8", html, len);
        http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    } else {
        http__reply_problem(req, FR_ENOTFOUND, "not-found",
                            "the dashboard is not installed (see --static-dir)");
    }
    free(path);
}

void http__routes_ops_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/livez", livez, false, HTTP_BODY_NONE, NULL},
        {"GET", "/readyz", readyz, false, HTTP_BODY_NONE, NULL},
        {"GET", "/metrics", metrics, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/info", info, false, HTTP_BODY_NONE, NULL},
        {"GET", "/", dashboard, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
