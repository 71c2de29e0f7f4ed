/* http_routes_cluster: the coordinator's side of the cluster: workers announce
 * themselves and send heartbeats (POST /v1/workers, signed when a cluster
 * secret is set) and operators list them (GET /v1/workers). */
#include "http.h"

#include <microhttpd.h>

static void workers_post(struct http_request *req)
{
    json_t *body = http__body_json(req);
    if (!body)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_worker_announce(req->ctx, body, &out, &err) == FR_OK)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
    json_decref(body);
}

static void workers_get(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, ctx_workers_list(req->ctx));
}

void http__routes_cluster_register(struct http__router *r)
{
    static const struct http__route announce = {"POST", "/v1/workers",  workers_post,
                                                false,  HTTP_BODY_JSON, NULL};
    static const struct http__route list = {"GET", "/v1/workers",  workers_get,
                                            false, HTTP_BODY_NONE, NULL};
    http__router_add_signed(r, &announce);
    http__router_add(r, &list);
}
