/* http_routes_dataframes: creating a dataframe from a plan or SQL (the first one
 * creates the runner and freezes the config), reading it, its explained plan,
 * and deleting it. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>

typedef int (*dataframe_getter)(ctx *c, const char *id, json_t **out, struct ctx_error *err);

static void reply_get(struct http_request *req, dataframe_getter get)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (get(req->ctx, http__param(req, "id"), &out, &err) == 0)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

static void dataframe_create_job(struct http_request *req)
{
    json_t *plan = http__body_json(req);
    if (!plan)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    bool sql = json_object_get(plan, "sql") != NULL; /* {"sql", "name"}, else a plan */
    int rc = sql ? (http__sql_dataframe(req, plan, &out) ? FR_OK : FR_EINVAL)
                 : ctx_dataframe_create(req->ctx, plan, req->request_id, &out, &err);
    if (rc == FR_OK) {
        const char *id = json_string_value(json_object_get(out, "id"));
        char location[160];
        snprintf(location, sizeof(location), "/v1/dataframes/%s", id ? id : "");
        http__reply_json(req, MHD_HTTP_CREATED, out);
        if (id)
            http__add_header(req, MHD_HTTP_HEADER_LOCATION, location);
    } else if (!sql) { /* http__sql_dataframe set its own reply */
        http__reply_error(req, &err);
    }
    ctx_error_cleanup(&err);
    json_decref(plan);
}

static void dataframe_create(struct http_request *req)
{
    /* Planning (and the preview the freeze computes) can take a while. */
    http__defer(req, dataframe_create_job);
}

static void dataframe_get(struct http_request *req)
{
    reply_get(req, ctx_dataframe_get);
}

static void dataframe_explain(struct http_request *req)
{
    reply_get(req, ctx_dataframe_explain);
}

static void dataframe_delete(struct http_request *req)
{
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_dataframe_delete(req->ctx, http__param(req, "id"), &err) == 0)
        http__reply_empty(req, MHD_HTTP_NO_CONTENT);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

void http__routes_dataframes_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"POST", "/v1/dataframes", dataframe_create, false, HTTP_BODY_JSON, NULL},
        {"GET", "/v1/dataframes/{id}", dataframe_get, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/dataframes/{id}", dataframe_delete, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/dataframes/{id}/explain", dataframe_explain, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
