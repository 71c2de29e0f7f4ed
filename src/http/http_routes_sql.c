/* http_routes_sql: the "sql" member of POST /v1/queries and POST
 * /v1/dataframes. A body holds one of plan / dataframe / sql; the statement
 * is compiled first (a bad one is a 400 that creates and freezes nothing),
 * then a query goes the way of a plan and EXPLAIN, SET, RESET and SHOW are
 * answered at once (SET and RESET with POST /v1/config's token rule). */
#include "http_int.h"

#include <microhttpd.h>

#include <string.h>

/* 400 invalid-plan naming the body's members (ext "members"). */
static void reply_members(struct http_request *req, json_t *body, const char *fmt)
{
    json_t *members = json_array();
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        (void)value;
        json_array_append_new(members, json_string(key));
    }
    struct ctx_error e;
    ctx_error_init(&e);
    fr_error_setk(&e.base, FR_EINVAL, "invalid-plan", "%s", fmt);
    e.ext = json_pack("{so}", "members", members);
    http__reply_error(req, &e);
    ctx_error_cleanup(&e);
}

/* The compiled statement of body's "sql" (new), or NULL with the reply set. */
static ctx_sql *compile(struct http_request *req, json_t *body)
{
    json_t *sql = json_object_get(body, "sql");
    if (!json_is_string(sql)) {
        reply_members(req, body, "\"sql\" must be a string holding one SQL statement");
        return NULL;
    }
    if (strlen(json_string_value(sql)) != json_string_length(sql)) {
        http__reply_problem(req, FR_EINVAL, "invalid-sql", "the SQL text holds a NUL character");
        return NULL;
    }
    ctx_sql *s = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_sql_compile(req->ctx, json_string_value(sql), &s, &err) != FR_OK)
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
    return s;
}

/* EXPLAIN, SET, RESET, SHOW: 200 with the statement's answer. */
static void reply_answer(struct http_request *req, const ctx_sql *s)
{
    const char *missing;
    if (ctx_sql_kind(s) == CTX_SQL_CONFIG_CHANGE && (missing = http__auth_missing_admin(req))) {
        bool sent = http__header(req, MHD_HTTP_HEADER_AUTHORIZATION) != NULL;
        http__reply_problem(
            req, FR_EINVAL, "unauthorized", "SET and RESET change the config: %s%s", missing,
            sent ? ": the token sent was not accepted" : " (Authorization: Bearer <token>)");
        return;
    }
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_sql_answer(req->ctx, s, &out, &err) == FR_OK)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

enum http__sql_outcome http__sql_query(struct http_request *req, json_t *body, json_t **out,
                                       ctx_query_watch **watch)
{
    *out = NULL;
    *watch = NULL;
    if (!json_object_get(body, "sql"))
        return HTTP_SQL_NONE;
    if (json_object_get(body, "plan") || json_object_get(body, "dataframe")) {
        reply_members(req, body,
                      "a query has exactly one of \"plan\", \"dataframe\" or \"sql\"; this one "
                      "has more (see members)");
        return HTTP_SQL_ANSWERED;
    }
    ctx_sql *s = compile(req, body);
    if (!s)
        return HTTP_SQL_ANSWERED;
    enum http__sql_outcome outcome = HTTP_SQL_ANSWERED;
    if (ctx_sql_kind(s) != CTX_SQL_QUERY) {
        reply_answer(req, s);
    } else {
        struct ctx_error err;
        ctx_error_init(&err);
        if (ctx_query_submit_sql(req->ctx, s, req->request_id, out, watch, &err) == FR_OK)
            outcome = HTTP_SQL_SUBMITTED;
        else
            http__reply_error(req, &err);
        ctx_error_cleanup(&err);
    }
    ctx_sql_free(s);
    return outcome;
}

bool http__sql_dataframe(struct http_request *req, json_t *body, json_t **out)
{
    *out = NULL;
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        if (strcmp(key, "sql") != 0 && strcmp(key, "name") != 0) {
            reply_members(req, body,
                          "a dataframe is made from a plan ({\"source\", \"ops\"}) or from "
                          "{\"sql\", \"name\"}, never both (see members)");
            return false;
        }
    }
    json_t *name = json_object_get(body, "name");
    if (name && !json_is_string(name)) {
        http__reply_bad_parameter(req, "name", "name: a string of 1 to 64 of A-Z, a-z, 0-9, _");
        return false;
    }
    ctx_sql *s = compile(req, body);
    if (!s)
        return false;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc =
        ctx_dataframe_create_sql(req->ctx, s, json_string_value(name), req->request_id, out, &err);
    if (rc != FR_OK)
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
    ctx_sql_free(s);
    return rc == FR_OK;
}
