/* http_routes_ops: what operators and platforms ask of a running server:
 * liveness, readiness (503 once shutdown has begun, or while a coordinator
 * without a runner cannot reach its store), Prometheus metrics,
 * build and runtime info, and the dashboard page from the static dir. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reply_text(struct http_request *req, const char *text)
{
    http__reply_bytes(req, MHD_HTTP_OK, "text/plain; charset=utf-8", fr_xstrdup(text),
                      strlen(text));
}

static void livez(struct http_request *req)
{
    reply_text(req, "ok\n");
}

static bool runner_draining(ctx *c)
{
    json_t *runner = ctx_runner_info(c);
    const char *state = json_string_value(json_object_get(runner, "state"));
    bool draining = state && strcmp(state, "draining") == 0;
    json_decref(runner);
    return draining;
}

/* "ready\n" and, when the config store has something to report (corruption
 * found, unreachable), its lines. */
static void readyz_ok(struct http_request *req)
{
    char *detail = ctx_ready_detail(req->ctx);
    char *text = fr_xasprintf("ready\n%s", detail ? detail : "");
    reply_text(req, text);
    free(text);
    free(detail);
}

/* 503 while shutting down, while the runner drains (new work would be
 * refused) or, without a runner, while the store cannot be reached (no
 * config could be frozen); else 200. */
static void readyz(struct http_request *req)
{
    struct fr_error err;
    fr_error_init(&err);
    if (http__shutting_down(req->srv) || !ctx_ready(req->ctx))
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "the server is starting or shutting down");
    else if (runner_draining(req->ctx))
        http__reply_problem(req, FR_EUNAVAILABLE, "runner-draining",
                            "the runner is being torn down");
    else if (ctx_ready_store(req->ctx, &err) != FR_OK)
        http__reply_problem(req, err.status, err.kind, "%s", err.message);
    else
        readyz_ok(req);
}

static void metrics(struct http_request *req)
{
    struct fr_buf b;
    fr_buf_init(&b);
    ctx_metrics(req->ctx, &b);
    http__reply_metrics(req, &b);
}

static void info(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, ctx_info(req->ctx));
}

/* The dashboard's files, served as they are from the static dir. */
static const struct {
    const char *path;
    const char *file;
    const char *type;
} assets[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
};

static void dashboard(struct http_request *req)
{
    size_t i = 0;
    while (i + 1 < sizeof(assets) / sizeof(assets[0]) && strcmp(assets[i].path, req->path) != 0)
        i++;
    struct fr_error err;
    fr_error_init(&err);
    char *path = fr_xasprintf("%s/%s", http__static_dir(req->srv), assets[i].file);
    char *bytes = NULL;
    size_t len = 0;
    if (fr_file_read_all(path, &bytes, &len, &err) == 0) {
        http__reply_bytes(req, MHD_HTTP_OK, assets[i].type, bytes, len);
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
        {"GET", "/app.js", dashboard, false, HTTP_BODY_NONE, NULL},
        {"GET", "/style.css", dashboard, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
