/* http_routes_data: datasets in the data dir. PUT streams the body chunk by
 * chunk into a context upload (never held in memory); a request that ends
 * early (the client went away, a limit, an error) aborts the upload so
 * nothing is left behind. Listings and descriptions read files, so they run
 * off the pool threads. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dataset name of the URL, percent-decoded by MHD; an encoded NUL that
 * would cut it short ("trips%00evil" as "trips") never gets here:
 * http__check_target refuses it for every route. Borrowed from req. */
static const char *dataset_name(struct http_request *req)
{
    const char *name = http__param(req, "name");
    return name ? name : "";
}

static void reply_result(struct http_request *req, int rc, json_t *out, struct ctx_error *err)
{
    if (rc == 0)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, err);
}

static void datasets_list_job(struct http_request *req)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_dataset_list(req->ctx, &out, &err);
    reply_result(req, rc, out, &err);
    ctx_error_cleanup(&err);
}

/* Infers schemas of files not seen yet (or changed): slow for big files. */
static void datasets_list(struct http_request *req)
{
    http__defer(req, datasets_list_job);
}

static void dataset_get_job(struct http_request *req)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_dataset_get(req->ctx, dataset_name(req), &out, &err);
    reply_result(req, rc, out, &err);
    ctx_error_cleanup(&err);
}

static void dataset_get(struct http_request *req)
{
    http__defer(req, dataset_get_job);
}

static void dataset_delete(struct http_request *req)
{
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_dataset_delete(req->ctx, dataset_name(req), &err) == 0)
        http__reply_empty(req, MHD_HTTP_NO_CONTENT);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

/* ---- streamed upload ---- */

static int upload_begin(struct http_request *req)
{
    ctx_upload *u = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    const char *ct = http__header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    int rc = ctx_upload_begin(req->ctx, dataset_name(req), ct ? ct : "", &u, &err);
    if (rc == 0)
        req->stream = u;
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
    return rc;
}

static void upload_abort(struct http_request *req)
{
    ctx_upload_abort(req->stream);
    req->stream = NULL;
}

static int upload_write(struct http_request *req, const char *data, size_t n)
{
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_upload_write(req->stream, data, n, &err);
    if (rc != 0) {
        upload_abort(req);
        http__reply_error(req, &err);
    }
    ctx_error_cleanup(&err);
    return rc;
}

static const struct http__stream_ops upload_ops = {upload_begin, upload_write, upload_abort};

static void upload_commit_job(struct http_request *req)
{
    ctx_upload *u = req->stream;
    req->stream = NULL; /* commit frees it in every case */
    json_t *out = NULL;
    bool created = false;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_upload_commit(u, &out, &created, &err) == 0) {
        http__reply_json(req, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out);
        char location[256];
        snprintf(location, sizeof(location), "/v1/datasets/%s", http__param(req, "name"));
        http__add_header(req, MHD_HTTP_HEADER_LOCATION, location);
    } else {
        http__reply_error(req, &err);
    }
    ctx_error_cleanup(&err);
}

static void dataset_put(struct http_request *req)
{
    /* The commit renames and describes the file: slow enough to run deferred. */
    http__defer(req, upload_commit_job);
}

void http__routes_data_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/v1/datasets", datasets_list, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/datasets/{name}", dataset_get, false, HTTP_BODY_NONE, NULL},
        {"PUT", "/v1/datasets/{name}", dataset_put, true, HTTP_BODY_STREAM, &upload_ops},
        {"DELETE", "/v1/datasets/{name}", dataset_delete, true, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
