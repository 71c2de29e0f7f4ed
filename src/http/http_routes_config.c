/* http_routes_config: the pending config (GET/POST /v1/config), its schema,
 * and the config store's frozen configs by ID (GET /v1/configs/{id}): bytes
 * that never change, so they are served with ETag = ID and cached forever;
 * never bytes that do not hash to the ID (ctx_config_bytes checks). */
#include "http_int.h"

#include "../config/config.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void config_get(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, ctx_config_get(req->ctx));
}

static void config_post(struct http_request *req)
{
    json_t *patch = http__body_json(req);
    if (!patch)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_config_update(req->ctx, patch, &out, &err) == 0)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
    json_decref(patch);
}

static void config_schema(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, cfg_schema_json());
}

/* True when an If-None-Match list names the entity tag `id` (or is "*"). */
static bool etag_listed(const char *list, const char *id)
{
    size_t idn = strlen(id);
    const char *p = list;
    while (*p) {
        p += strspn(p, " ,\t");
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ",");
        const char *tag = p;
        size_t tn = n;
        while (tn > 0 && (tag[tn - 1] == ' ' || tag[tn - 1] == '\t'))
            tn--;
        if (tn >= 2 && tag[0] == '"' && tag[tn - 1] == '"') {
            tag++;
            tn -= 2;
        }
        if (tn == idn && memcmp(tag, id, idn) == 0)
            return true;
        p += n;
    }
    return false;
}

static void add_cache_headers(struct http_request *req, const char *etag)
{
    http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
    http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
}

static void configs_get(struct http_request *req)
{
    const char *id = http__param(req, "id");
    if (!fr_config_id_valid(id)) {
        http__reply_bad_parameter(req, "id", "a config ID is sha256: and 64 lowercase hex digits");
        return;
    }
    char *bytes = NULL;
    size_t len = 0;
    struct ctx_error err;
    ctx_error_init(&err);
    char etag[160];
    snprintf(etag, sizeof(etag), "\"%s\"", id);
    if (ctx_config_bytes(req->ctx, id, &bytes, &len, &err) != 0) {
        http__reply_error(req, &err); /* every failure has its kind (context_runner.c) */
    } else {
        const char *inm = http__header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
        if (inm && etag_listed(inm, id)) {
            free(bytes);
            http__reply_empty(req, MHD_HTTP_NOT_MODIFIED);
        } else {
            http__reply_bytes(req, MHD_HTTP_OK, "application/json", bytes, len);
        }
        add_cache_headers(req, etag);
    }
    ctx_error_cleanup(&err);
}

void http__routes_config_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/v1/config", config_get, false, HTTP_BODY_NONE, NULL},
        {"POST", "/v1/config", config_post, true, HTTP_BODY_JSON, NULL},
        {"GET", "/v1/config/schema", config_schema, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/configs/{id}", configs_get, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
