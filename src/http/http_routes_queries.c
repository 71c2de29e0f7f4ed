/* http_routes_queries: submitting a query (optionally waiting for it), its
 * status, cancelling it, and its result: a JSON page (?offset=&limit=) or the
 * rows streamed as CSV or NDJSON in chunks, with the result held by reference
 * until the response is done. */
#include "http.h"

#include "../engine/engine.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WAIT_MAX_S 300.0
#define PAGE_DEFAULT_ROWS 1000
#define PAGE_MAX_ROWS 100000
#define CHUNK_ROWS 1024

enum result_format { FMT_JSON, FMT_CSV, FMT_NDJSON, FMT_UNACCEPTABLE };

/* ---- submit, status, cancel ---- */

static void query_submit_job(struct http_request *req)
{
    const char *wait = http__query(req, "wait");
    char *end = NULL;
    double wait_s = wait ? strtod(wait, &end) : 0;
    if (wait && (!*wait || *end || !(wait_s >= 0))) {
        http__reply_problem(req, FR_EINVAL, "invalid-parameter",
                            "wait must be a number of seconds, got '%s'", wait);
        return;
    }
    json_t *body = http__body_json(req);
    if (!body)
        return;
    if (wait_s > WAIT_MAX_S)
        wait_s = WAIT_MAX_S;
    json_t *out = NULL;
    bool finished = false;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_query_submit(req->ctx, body, req->request_id, (int64_t)(wait_s * 1000), &out,
                         &finished, &err) == 0) {
        const char *id = json_string_value(json_object_get(out, "id"));
        char location[160];
        snprintf(location, sizeof(location), "/v1/queries/%s", id ? id : "");
        http__reply_json(req, finished ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, out);
        if (id)
            http__add_header(req, MHD_HTTP_HEADER_LOCATION, location);
    } else {
        http__reply_error(req, &err);
    }
    ctx_error_cleanup(&err);
    json_decref(body);
}

static void query_submit(struct http_request *req)
{
    /* ?wait= blocks for up to minutes: never on one of the server's threads. */
    http__defer(req, query_submit_job);
}

typedef int (*query_op)(ctx *c, const char *id, json_t **out, struct ctx_error *err);

static void reply_op(struct http_request *req, query_op op)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (op(req->ctx, http__param(req, "id"), &out, &err) == 0)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

static void query_get(struct http_request *req)
{
    reply_op(req, ctx_query_get);
}

static void query_cancel(struct http_request *req)
{
    reply_op(req, ctx_query_cancel);
}

/* ---- result ---- */

static enum result_format format_of(const char *media, size_t n)
{
    static const struct {
        const char *media;
        enum result_format format;
    } known[] = {{"text/csv", FMT_CSV},          {"application/x-ndjson", FMT_NDJSON},
                 {"application/ndjson", FMT_NDJSON}, {"application/json", FMT_JSON},
                 {"application/*", FMT_JSON},    {"*/*", FMT_JSON}};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strlen(known[i].media) == n && strncasecmp(known[i].media, media, n) == 0)
            return known[i].format;
    }
    return FMT_UNACCEPTABLE;
}

/* ?format= wins; else the first media type of Accept that we can make. */
static enum result_format pick_format(struct http_request *req)
{
    const char *f = http__query(req, "format");
    if (f) {
        return strcmp(f, "csv") == 0      ? FMT_CSV
               : strcmp(f, "ndjson") == 0 ? FMT_NDJSON
               : strcmp(f, "json") == 0   ? FMT_JSON
                                          : FMT_UNACCEPTABLE;
    }
    const char *accept = http__header(req, MHD_HTTP_HEADER_ACCEPT);
    if (!accept || !*accept)
        return FMT_JSON;
    for (const char *p = accept; *p;) {
        p += strspn(p, " ,\t");
        size_t n = strcspn(p, ",;");
        size_t trimmed = n;
        while (trimmed > 0 && (p[trimmed - 1] == ' ' || p[trimmed - 1] == '\t'))
            trimmed--;
        enum result_format fmt = format_of(p, trimmed);
        if (fmt != FMT_UNACCEPTABLE)
            return fmt;
        p += n;
        p += strcspn(p, ","); /* skip parameters such as ;q=0.5 */
    }
    return FMT_UNACCEPTABLE;
}

static json_t *schema_json(const struct df_table *t)
{
    json_t *schema = json_array();
    for (int i = 0; i < t->ncols; i++) {
        json_array_append_new(schema, json_pack("{s:s, s:s}", "name", t->names[i], "type",
                                                df_type_name(t->cols[i]->type)));
    }
    return schema;
}

static void reply_json_page(struct http_request *req, const struct df_table *t, int64_t offset,
                            int64_t limit)
{
    int64_t start = offset < t->nrows ? offset : t->nrows;
    int64_t n = t->nrows - start < limit ? t->nrows - start : limit;
    json_t *head = json_pack("{s:s, s:o, s:I, s:I, s:I, s:o}", "query_id", http__param(req, "id"),
                             "schema", schema_json(t), "offset", (json_int_t)offset, "limit",
                             (json_int_t)limit, "total_rows", (json_int_t)t->nrows, "next_offset",
                             start + n < t->nrows ? json_integer(start + n) : json_null());
    char *text = head ? json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(head);
    if (!text) {
        http__reply_problem(req, FR_EINTERNAL, "internal", "cannot encode the result header");
        return;
    }
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_append(&b, text, strlen(text) - 1); /* drop the closing brace */
    free(text);
    fr_buf_puts(&b, ",\"rows\":[");
    df_write_json_rows(t, start, n, &b);
    fr_buf_puts(&b, "]}");
    size_t len = 0;
    char *data = fr_buf_steal(&b, &len);
    http__reply_bytes(req, MHD_HTTP_OK, "application/json", data, len);
}

/* A streamed CSV/NDJSON body. Owned by the request (body_state); MHD reads
 * it only while the response is being sent, which ends before the request's
 * completion frees it. */
struct result_stream {
    ctx_result *result;
    const struct df_table *table; /* borrowed from result */
    enum result_format format;
    int64_t next_row, end_row;
    bool header_done;
    struct fr_buf chunk;
    size_t chunk_pos;
    int64_t *sent; /* the request's streamed_bytes */
};

static void result_stream_free(void *p)
{
    struct result_stream *st = p;
    if (!st)
        return;
    ctx_result_release(st->result);
    fr_buf_cleanup(&st->chunk);
    free(st);
}

static void result_stream_refill(struct result_stream *st)
{
    st->chunk.len = 0;
    st->chunk_pos = 0;
    if (st->format == FMT_CSV && !st->header_done)
        df_write_csv_header(st->table, &st->chunk);
    st->header_done = true;
    int64_t n = st->end_row - st->next_row < CHUNK_ROWS ? st->end_row - st->next_row : CHUNK_ROWS;
    if (n <= 0)
        return;
    if (st->format == FMT_CSV)
        df_write_csv_rows(st->table, st->next_row, n, &st->chunk);
    else
        df_write_ndjson_rows(st->table, st->next_row, n, &st->chunk);
    st->next_row += n;
}

static ssize_t result_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct result_stream *st = cls;
    if (st->chunk_pos >= st->chunk.len)
        result_stream_refill(st);
    if (st->chunk_pos >= st->chunk.len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = st->chunk.len - st->chunk_pos;
    if (n > max)
        n = max;
    memcpy(buf, st->chunk.data + st->chunk_pos, n);
    st->chunk_pos += n;
    *st->sent += (int64_t)n;
    return (ssize_t)n;
}

static void reply_stream(struct http_request *req, ctx_result *result, enum result_format fmt,
                         int64_t offset, int64_t limit)
{
    struct result_stream *st = fr_xcalloc(1, sizeof(*st));
    st->result = result;
    st->table = ctx_result_table(result);
    st->format = fmt;
    st->next_row = offset < st->table->nrows ? offset : st->table->nrows;
    st->end_row = st->table->nrows - st->next_row < limit ? st->table->nrows : st->next_row + limit;
    fr_buf_init(&st->chunk);
    st->sent = &req->streamed_bytes;
    req->body_state = st;
    req->body_state_free = result_stream_free;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                               result_stream_read, st, NULL);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            fmt == FMT_CSV ? "text/csv; charset=utf-8" : "application/x-ndjson");
    http__reply_response(req, MHD_HTTP_OK, r, -1);
}

static void query_result(struct http_request *req)
{
    enum result_format fmt = pick_format(req);
    bool paged = http__query(req, "limit") != NULL;
    int64_t offset = http__query_int(req, "offset", 0);
    int64_t limit = http__query_int(req, "limit", fmt == FMT_JSON ? PAGE_DEFAULT_ROWS : INT64_MAX);
    if (fmt == FMT_UNACCEPTABLE) {
        http__reply_problem(req, FR_EINVAL, "not-acceptable",
                            "results are available as application/json, text/csv or "
                            "application/x-ndjson");
        return;
    }
    if (offset < 0 || limit < 0 || (fmt == FMT_JSON && paged && limit > PAGE_MAX_ROWS)) {
        http__reply_problem(req, FR_EINVAL, "invalid-parameter",
                            "offset and limit must be non-negative integers (limit at most %d "
                            "for JSON)",
                            PAGE_MAX_ROWS);
        return;
    }
    ctx_result *result = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_query_result(req->ctx, http__param(req, "id"), &result, &err) != 0) {
        http__reply_error(req, &err);
    } else if (fmt == FMT_JSON) {
        reply_json_page(req, ctx_result_table(result), offset, limit);
        ctx_result_release(result);
    } else {
        reply_stream(req, result, fmt, offset, limit); /* the stream now holds result */
    }
    ctx_error_cleanup(&err);
}

void http__routes_queries_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"POST", "/v1/queries", query_submit, false, HTTP_BODY_JSON, NULL},
        {"GET", "/v1/queries/{id}", query_get, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/queries/{id}", query_cancel, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/queries/{id}/result", query_result, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
