/* http_routes_ops: what operators and platforms ask of a running server:
 * liveness, readiness (503 once shutdown has begun, or while a coordinator
 * without a runner cannot reach its store), Prometheus metrics,
 * build and runtime info, and the dashboard: any file of the static dir by its
 * path, resolved inside it (no "..", no symlink out, regular files only). */
#include "http_int.h"

#include <microhttpd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The dashboard's files, served as they are from the static dir: any
 * regular file inside it whose extension is known, by its path. */
#define STATIC_MAX_BYTES (16 * 1024 * 1024)

static const struct {
    const char *ext;
    const char *type;
} static_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

/* The content type of name by its extension, or NULL: not served. */
static const char *static_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (!dot || (slash && dot < slash))
        return NULL;
    for (size_t i = 0; i < sizeof(static_types) / sizeof(static_types[0]); i++) {
        if (strcmp(dot, static_types[i].ext) == 0)
            return static_types[i].type;
    }
    return NULL;
}

/* A relative path the static dir may serve: segments that are not empty, do
 * not start with '.' (no "..", no hidden files) and hold no backslash. */
static bool static_name_ok(const char *name)
{
    const char *seg = name;
    for (;;) {
        size_t n = strcspn(seg, "/");
        if (n == 0 || seg[0] == '.' || memchr(seg, '\\', n))
            return false;
        if (seg[n] == '\0')
            return true;
        seg += n + 1;
    }
}

/* Paths the API owns: never looked up on disk, even when no route took them. */
static bool static_reserved(const char *name)
{
    static const char *const prefixes[] = {"v1",    "api",    "openapi.yaml",
                                           "livez", "readyz", "metrics"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], n) == 0 && (name[n] == '\0' || name[n] == '/'))
            return true;
    }
    return false;
}

/* Reads the open regular file fd (at most STATIC_MAX_BYTES); *out is new. */
static int static_read(int fd, const struct stat *st, char **out, size_t *len)
{
    if (st->st_size < 0 || st->st_size > STATIC_MAX_BYTES)
        return FR_EINVAL;
    size_t want = (size_t)st->st_size, n = 0;
    char *buf = fr_xmalloc(want + 1);
    while (n < want) {
        ssize_t r = read(fd, buf + n, want - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n != want) {
        free(buf);
        return FR_EIO;
    }
    *out = buf;
    *len = n;
    return FR_OK;
}

/* 200 with the file's bytes, or 304 when the client's ETag is current. */
static void static_reply(struct http_request *req, int fd, const char *type)
{
    struct stat st;
    char *bytes = NULL;
    size_t len = 0;
    if (fstat(fd, &st) != 0 || static_read(fd, &st, &bytes, &len) != FR_OK) {
        http__reply_problem(req, FR_ENOTFOUND, "not-found", "%s cannot be read", req->path);
        return;
    }
    char etag[64];
    snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
                 (unsigned long long)st.st_mtim.tv_nsec);
    const char *inm = http__header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && strcmp(inm, etag) == 0) {
        free(bytes);
        http__reply_empty(req, MHD_HTTP_NOT_MODIFIED);
    } else {
        http__reply_bytes(req, MHD_HTTP_OK, type, bytes, len);
    }
    http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
    http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
}

/* Serves name (relative to the static dir, borrowed) or a 404 problem. */
static void static_serve(struct http_request *req, const char *name)
{
    const char *type = static_type(name);
    if (static_reserved(name)) {
        http__reply_problem(req, FR_ENOTFOUND, "not-found", "no route for %s", req->path);
        return;
    }
    struct fr_error err;
    fr_error_init(&err);
    const char *dir = http__static_dir(req->srv);
    char *path = fr_xasprintf("%s/%s", dir, name);
    char *real = NULL;
    int fd = -1;
    if (type && static_name_ok(name) && fr_path_resolve_inside(dir, path, &real, &err) == FR_OK)
        fd = fr_file_open_regular(real);
    if (fd >= 0) {
        static_reply(req, fd, type);
        close(fd);
    } else if (strcmp(name, "index.html") == 0) {
        http__reply_problem(req, FR_ENOTFOUND, "not-found",
                            "the dashboard is not installed (see --static-dir)");
    } else {
        http__reply_problem(req, FR_ENOTFOUND, "not-found", "no file %s in the dashboard",
                            req->path);
    }
    free(real);
    free(path);
}

static void dashboard(struct http_request *req)
{
    static_serve(req, "index.html");
}

static void static_file(struct http_request *req)
{
    static_serve(req, http__param(req, "file"));
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
    /* Any file of the static dir: tried after every other route (the API's
     * paths stay theirs), and a method other than GET is no 405 on it. */
    static const struct http__route files[] = {
        {"GET", "/{file}", static_file, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
    http__router_add_catch_all(r, &files[0]);
}
