/* http_routes_cluster: the coordinator's side of the cluster: workers announce
 * themselves and send heartbeats (POST /v1/workers, signed when a cluster
 * secret is set) and operators list them (GET /v1/workers). */
#include "http_int.h"

#include <microhttpd.h>

/* Whether the peer of conn is on this machine. */
static bool peer_is_loopback(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return fr_sockaddr_is_loopback(info ? info->client_addr : NULL);
}

/* An announce is a few hundred bytes: a larger body is refused (413) before
 * it is buffered. */
#define ANNOUNCE_MAX_BODY (64 * 1024)

/* Before the body: without a cluster secret an announce cannot be
 * authenticated, so only a process on this machine may join, unless serve
 * --insecure. */
static void workers_post_head(struct http_request *req)
{
    const char *secret = ctx_cluster_secret(req->ctx);
    if ((!secret || !secret[0]) && !http__server_insecure(req->srv) &&
        !peer_is_loopback(req->conn)) {
        http__reply_problem(req, FR_EINVAL, "unauthorized",
                            "without a cluster secret only workers on this machine may announce "
                            "themselves; set FRAMED_CLUSTER_SECRET on every process (or start "
                            "the coordinator with --insecure)");
    }
}

static void workers_post(struct http_request *req)
{
    req->log_debug = true; /* a heartbeat a second per worker: not for the info log */
    json_t *body = http__body_json(req);
    if (!body)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_worker_announce(req->ctx, body, &out, &err) == FR_OK)
        /* signed: the worker acts on what it names (configs to drop, its
         * pace) only when the signature holds */
        http__reply_json_signed(req, MHD_HTTP_OK, out, ctx_cluster_secret(req->ctx));
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
    http__router_add_signed_limited(r, &announce, ANNOUNCE_MAX_BODY, workers_post_head);
    http__router_add(r, &list);
}
