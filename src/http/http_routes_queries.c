/* http_routes_queries: submitting a query (a plan, a dataframe, or SQL through
 * http_routes_sql.c; optionally waiting for it), its status, cancelling it,
 * and its result: the rows (?offset=&limit=) streamed
 * in chunks as JSON, CSV, NDJSON, an Arrow IPC stream (a record batch per
 * morsel) or Parquet (a row group per morsel), with the result held by
 * reference until the response is done. */
#include "http_int.h"

#include "../engine/engine.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WAIT_MAX_S 300.0
#define CHUNK_ROWS 1024

enum result_format {
    FMT_JSON,
    FMT_CSV,
    FMT_NDJSON,
    FMT_ARROW,
    FMT_PARQUET,
    FMT_UNACCEPTABLE,
    FMT_MALFORMED,
    FMT_INVALID
};

/* ---- submit, status, cancel ---- */

/* The body's members are "dataframe", "plan" and "sql" (api/schemas/query-create.json):
 * anything else is a typo or a feature the server lacks, and running the query
 * as if it were absent would answer a question nobody asked. */
static bool query_members_known(struct http_request *req, json_t *body)
{
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        (void)value;
        if (strcmp(key, "dataframe") != 0 && strcmp(key, "plan") != 0 && strcmp(key, "sql") != 0) {
            json_t *ext = json_pack("{s:s}", "member", key);
            struct ctx_error e;
            ctx_error_init(&e);
            fr_error_setk(&e.base, FR_EINVAL, "invalid-plan",
                          "unknown query member '%.200s' (a query has "
                          "\"dataframe\", \"plan\" or \"sql\")",
                          key);
            e.ext = ext;
            http__reply_error(req, &e);
            ctx_error_cleanup(&e);
            return false;
        }
    }
    return true;
}

/* The query's status as the answer to its submit (out stolen): 200 once
 * finished (a ?wait= that saw it end), else 202 with the Location to poll.
 * Always from the submit's own query, never looked up again: a reset or an
 * eviction meanwhile must not turn an accepted query into a 404. */
static void reply_submitted(struct http_request *req, json_t *out, bool finished)
{
    char location[160];
    snprintf(location, sizeof(location), "/v1/queries/%s",
             json_string_value(json_object_get(out, "id")));
    http__reply_json(req, finished ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, out);
    http__add_header(req, MHD_HTTP_HEADER_LOCATION, location);
}

/* A ?wait= submit waiting on the server's waiter thread, no thread of its own. */
struct query_wait {
    ctx_query_watch *watch;
};

static bool query_wait_ready(void *arg)
{
    return ctx_query_watch_settled(((struct query_wait *)arg)->watch);
}

static void query_wait_finish(struct http_request *req, void *arg, bool ready)
{
    reply_submitted(req, ctx_query_watch_json(((struct query_wait *)arg)->watch), ready);
}

static void query_wait_free(void *arg)
{
    struct query_wait *qw = arg;
    ctx_query_watch_free(qw->watch);
    free(qw);
}

static const struct http__wait_ops query_wait_ops = {query_wait_ready, query_wait_finish,
                                                     query_wait_free};

static void query_submit_job(struct http_request *req)
{
    double wait_s = 0;
    if (http__query_decimal(req, "wait", WAIT_MAX_S, &wait_s) < 0) {
        http__reply_bad_parameter(req, "wait", "wait must be a number of seconds from 0 to %g",
                                  WAIT_MAX_S);
        return;
    }
    int64_t wait_ms = (int64_t)(wait_s * 1000);
    if (wait_ms > 0 && !http__wait_reserve(req)) /* before the query exists: a 503 ran nothing */
        return;
    json_t *body = http__body_json(req);
    if (!body)
        return;
    if (!query_members_known(req, body)) {
        json_decref(body);
        return;
    }
    json_t *out = NULL;
    ctx_query_watch *watch = NULL;
    enum http__sql_outcome sql = http__sql_query(req, body, &out, &watch);
    int rc = sql == HTTP_SQL_ANSWERED ? FR_EINVAL : FR_OK; /* its reply is set */
    if (sql == HTTP_SQL_NONE) {
        struct ctx_error err;
        ctx_error_init(&err);
        rc = ctx_query_submit_watched(req->ctx, body, req->request_id, &out, &watch, &err);
        if (rc != FR_OK)
            http__reply_error(req, &err);
        ctx_error_cleanup(&err);
    }
    json_decref(body);
    if (rc != FR_OK)
        return;
    if (wait_ms <= 0 || ctx_query_watch_settled(watch)) {
        bool settled = wait_ms > 0; /* without ?wait= always 202 */
        if (settled) {
            json_decref(out);
            out = ctx_query_watch_json(watch); /* the state it settled in */
        }
        reply_submitted(req, out, settled);
        ctx_query_watch_free(watch);
        return;
    }
    json_decref(out);
    struct query_wait *qw = fr_xcalloc(1, sizeof(*qw));
    qw->watch = watch;
    http__wait_hand_off(req, &query_wait_ops, qw, wait_ms);
}

static void query_submit(struct http_request *req)
{
    /* The submit may freeze the config (a store put): not on one of the
     * server's threads. A ?wait= then waits with no thread (http_waits.c). */
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

/* What a result can be sent as, in the server's order of preference (the
 * first is the answer to no Accept, to * / * and to application/ *). */
static const struct http__offer result_offers[] = {
    {"application/json", NULL},
    {"text/csv", "charset=utf-8"},
    {"application/x-ndjson", NULL},
    {"application/ndjson", NULL},
    {"application/vnd.apache.arrow.stream", NULL},
    {"application/vnd.apache.parquet", NULL},
};
static const enum result_format offer_formats[] = {FMT_JSON,   FMT_CSV,   FMT_NDJSON,
                                                   FMT_NDJSON, FMT_ARROW, FMT_PARQUET};
#define NOFFERS ((int)(sizeof(result_offers) / sizeof(result_offers[0])))

/* ?format= wins; else Accept, negotiated (RFC 9110 section 12.5.1). */
static enum result_format pick_format(struct http_request *req)
{
    const char *f = http__query(req, "format");
    if (f) {
        return strcmp(f, "csv") == 0       ? FMT_CSV
               : strcmp(f, "ndjson") == 0  ? FMT_NDJSON
               : strcmp(f, "json") == 0    ? FMT_JSON
               : strcmp(f, "arrow") == 0   ? FMT_ARROW
               : strcmp(f, "parquet") == 0 ? FMT_PARQUET
                                           : FMT_INVALID;
    }
    bool too_long = false; /* every Accept line counts (RFC 9110 section 5.3) */
    char *accept =
        http__header_joined(req, MHD_HTTP_HEADER_ACCEPT, HTTP__MAX_HEADER_BYTES, &too_long);
    int i = too_long ? HTTP__ACCEPT_MALFORMED : http__accept_pick(accept, result_offers, NOFFERS);
    free(accept);
    if (i == HTTP__ACCEPT_MALFORMED)
        return FMT_MALFORMED;
    return i >= 0 ? offer_formats[i] : FMT_UNACCEPTABLE;
}

/* 406 not-acceptable, its "offered" member listing the media types. */
static void reply_not_acceptable(struct http_request *req, enum result_format fmt)
{
    struct ctx_error e;
    ctx_error_init(&e);
    fr_error_setk(&e.base, FR_EINVAL, "not-acceptable",
                  "%sresults are offered as application/json, text/csv (charset=utf-8), "
                  "application/x-ndjson (also application/ndjson), "
                  "application/vnd.apache.arrow.stream or application/vnd.apache.parquet, or "
                  "?format=json|csv|ndjson|arrow|parquet",
                  fmt == FMT_MALFORMED ? "the Accept header is malformed (RFC 9110 section "
                                         "12.5.1: type/subtype;param=value;q=0.5, q with at most "
                                         "3 decimals); "
                                       : "");
    e.ext = json_pack("{s:[s,s,s,s,s,s]}", "offered", "application/json", "text/csv",
                      "application/x-ndjson", "application/ndjson",
                      "application/vnd.apache.arrow.stream", "application/vnd.apache.parquet");
    http__reply_error(req, &e);
    ctx_error_cleanup(&e);
}

static json_t *columns_json(const struct df_table *t)
{
    json_t *columns = json_array();
    for (int i = 0; i < t->ncols; i++) {
        json_t *name = json_string(t->names[i]);
        json_array_append_new(columns,
                              json_pack("{s:o, s:s}", "name", name ? name : json_string("?"),
                                        "type", df_type_name(t->cols[i]->type)));
    }
    return columns;
}

/* A streamed result body. Owned by the request (body_state); MHD reads it
 * only while the response is being sent, which ends before the request's
 * completion frees it. JSON is {"columns":..,"total_rows":..,"offset":..,
 * "limit":..,"rows":[ then the rows in chunks, then ]}. Arrow and Parquet
 * chunks are one record batch or row group of batch_rows rows each. */
struct result_stream {
    ctx_result *result;
    const struct df_table *schema; /* borrowed from result: no rows, its columns */
    enum result_format format;
    enum df_parquet_codec codec;
    int64_t next_row, end_row, batch_rows;
    bool head_done, tail_done, failed;
    int64_t rows_written;
    struct ctx_error error; /* why a partition could not be read (kind "" = none) */
    char *json_head;        /* JSON only: the members before the rows */
    df_parquet_writer *parquet;
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
    ctx_error_cleanup(&st->error);
    df_parquet_writer_free(st->parquet);
    fr_buf_cleanup(&st->chunk);
    free(st->json_head);
    free(st);
}

/* The next row group (the first even when empty: a file has one) or the
 * footer. A writer error ends the stream broken (the status is sent). */
static void refill_parquet(struct result_stream *st, bool first, const struct df_table *t,
                           int64_t from, int64_t n)
{
    struct fr_error err;
    fr_error_init(&err);
    if (first) {
        struct df_schema schema;
        df_schema_init(&schema);
        df_schema_of_table(&schema, st->schema);
        st->parquet = df_parquet_writer_new(&schema, st->codec);
        df_schema_cleanup(&schema);
    }
    int rc = FR_OK;
    if (n > 0 || first) {
        rc = df_parquet_writer_write(st->parquet, t, from, n, &st->chunk, &err);
        st->next_row += n;
    } else if (!st->tail_done) {
        rc = df_parquet_writer_finish(st->parquet, &st->chunk, &err);
        st->tail_done = true;
    }
    if (rc != FR_OK) {
        FR_LOG(FR_LOG_ERROR, "parquet result: %s", err.message);
        st->failed = true;
        st->chunk.len = 0;
    }
}

static void refill_arrow(struct result_stream *st, bool first, const struct df_table *t,
                         int64_t from, int64_t n)
{
    if (first)
        df_arrow_write_schema(st->schema, &st->chunk);
    if (n > 0) {
        df_arrow_write_batch(t, from, n, &st->chunk);
        st->next_row += n;
    } else if (!st->tail_done) {
        df_arrow_write_eos(&st->chunk);
        st->tail_done = true;
    }
}

static void refill_text(struct result_stream *st, bool first, const struct df_table *t,
                        int64_t from, int64_t n)
{
    if (first && st->format == FMT_CSV)
        df_write_csv_header(st->schema, &st->chunk);
    if (first && st->format == FMT_JSON)
        fr_buf_puts(&st->chunk, st->json_head);
    if (n > 0) {
        if (st->format == FMT_CSV) {
            df_write_csv_rows(t, from, n, &st->chunk);
        } else if (st->format == FMT_NDJSON) {
            df_write_ndjson_rows(t, from, n, &st->chunk);
        } else {
            if (st->rows_written)
                fr_buf_putc(&st->chunk, ',');
            df_write_json_rows(t, from, n, &st->chunk);
        }
        st->next_row += n;
    } else if (st->format == FMT_JSON && !st->tail_done) {
        fr_buf_puts(&st->chunk, "]}");
        st->tail_done = true;
    }
}

static void result_stream_refill(struct result_stream *st)
{
    st->chunk.len = 0;
    st->chunk_pos = 0;
    if (st->failed)
        return;
    bool first = !st->head_done;
    st->head_done = true;
    int64_t left = st->end_row - st->next_row;
    int64_t n = left < st->batch_rows ? left : st->batch_rows, from = 0, avail = 0;
    const struct df_table *t = st->schema;
    if (n > 0) { /* the partition holding next_row (fetched from its worker when remote) */
        struct ctx_error err;
        ctx_error_init(&err);
        if (ctx_result_at(st->result, st->next_row, &t, &from, &avail, &err) != 0) {
            FR_LOG(FR_LOG_ERROR, "result stream cut at row %lld: %s", (long long)st->next_row,
                   err.base.message); /* the status is sent: the connection ends broken */
            ctx_error_cleanup(&st->error);
            st->error = err; /* moved: HEAD answers with it */
            st->failed = true;
            return;
        }
        ctx_error_cleanup(&err);
        if (n > avail)
            n = avail;
    }
    if (st->format == FMT_ARROW)
        refill_arrow(st, first, t, from, n);
    else if (st->format == FMT_PARQUET)
        refill_parquet(st, first, t, from, n);
    else
        refill_text(st, first, t, from, n);
    st->rows_written += n;
}

static ssize_t result_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct result_stream *st = cls;
    if (st->chunk_pos >= st->chunk.len)
        result_stream_refill(st);
    if (st->failed)
        return MHD_CONTENT_READER_END_WITH_ERROR;
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

/* The body's length, rendered and dropped, the stream rewound: HEAD says
 * the length a GET would stream. MHD 0.9.75 sends a chunked reply's
 * terminator after a HEAD's headers (the next response on the connection
 * then starts with "0\r\n\r\n"), so HEAD gets a reply of known size, whose
 * body MHD does not send. -1 when the rendering failed. */
static int64_t result_stream_length(struct result_stream *st)
{
    int64_t first_row = st->next_row, total = 0;
    for (result_stream_refill(st); st->chunk.len > 0; result_stream_refill(st))
        total += (int64_t)st->chunk.len;
    bool failed = st->failed;
    st->next_row = first_row;
    st->rows_written = 0;
    st->head_done = st->tail_done = st->failed = false;
    st->chunk.len = st->chunk_pos = 0;
    df_parquet_writer_free(st->parquet);
    st->parquet = NULL;
    return failed ? -1 : total;
}

/* The JSON members before the rows, ending in "rows":[ (new). */
static char *json_head(const struct df_table *schema, int64_t total_rows, int64_t offset,
                       int64_t limit)
{
    json_t *head = json_pack("{s:o, s:I, s:I, s:o}", "columns", columns_json(schema), "total_rows",
                             (json_int_t)total_rows, "offset", (json_int_t)offset, "limit",
                             limit >= 0 ? json_integer(limit) : json_null());
    char *text = head ? json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(head);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *out = fr_xasprintf("%.*s,\"rows\":[", (int)(n - 1), text); /* drop the '}' */
    free(text);
    return out;
}

/* ?download=1|true asks for Content-Disposition: attachment; 0|false or
 * absent for none; -1 for anything else. */
static int download_wanted(struct http_request *req)
{
    const char *d = http__query(req, "download");
    if (!d || strcmp(d, "0") == 0 || strcmp(d, "false") == 0)
        return 0;
    return strcmp(d, "1") == 0 || strcmp(d, "true") == 0 ? 1 : -1;
}

/* Content-Disposition: attachment; filename="<query id>.<ext>". The ID is
 * the one a query was found under; should it hold anything but
 * [A-Za-z0-9._-] (no quoting then needed), the name is "result". */
static void add_disposition(struct http_request *req, enum result_format fmt)
{
    static const char *const ext[] = {[FMT_JSON] = "json",
                                      [FMT_CSV] = "csv",
                                      [FMT_NDJSON] = "ndjson",
                                      [FMT_ARROW] = "arrow",
                                      [FMT_PARQUET] = "parquet"};
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
    const char *id = http__param(req, "id");
    if (!id || id[strspn(id, safe)] != '\0' || strlen(id) > 128)
        id = "result";
    char *value = fr_xasprintf("attachment; filename=\"%s.%s\"", id, ext[fmt]);
    http__add_header(req, "Content-Disposition", value);
    free(value);
}

/* Steals result in every case. limit -1 = every row from offset on. */
static void reply_stream(struct http_request *req, ctx_result *result, enum result_format fmt,
                         enum df_parquet_codec codec, int64_t offset, int64_t limit)
{
    static const char *const media[] = {[FMT_JSON] = "application/json",
                                        [FMT_CSV] = "text/csv; charset=utf-8",
                                        [FMT_NDJSON] = "application/x-ndjson",
                                        [FMT_ARROW] = "application/vnd.apache.arrow.stream",
                                        [FMT_PARQUET] = "application/vnd.apache.parquet"};
    struct result_stream *st = fr_xcalloc(1, sizeof(*st));
    st->result = result;
    st->schema = ctx_result_schema(result);
    st->format = fmt;
    st->codec = codec;
    bool binary = fmt == FMT_ARROW || fmt == FMT_PARQUET;
    st->batch_rows = binary ? ctx_result_morsel_rows(result) : CHUNK_ROWS;
    int64_t nrows = ctx_result_rows(result);
    st->next_row = offset < nrows ? offset : nrows;
    st->end_row = (limit < 0 || nrows - st->next_row < limit) ? nrows : st->next_row + limit;
    ctx_result_read_until(result, st->end_row);
    fr_buf_init(&st->chunk);
    ctx_error_init(&st->error);
    st->sent = &req->streamed_bytes;
    req->body_state = st;
    req->body_state_free = result_stream_free;
    if (st->next_row < st->end_row) { /* the first partition now: a worker that cannot give
                                         it is a problem answer, not a cut stream */
        const struct df_table *t;
        int64_t from, avail;
        struct ctx_error err;
        ctx_error_init(&err);
        int rc = ctx_result_at(result, st->next_row, &t, &from, &avail, &err);
        if (rc != 0)
            http__reply_error(req, &err);
        ctx_error_cleanup(&err);
        if (rc != 0)
            return;
    }
    if (fmt == FMT_JSON && !(st->json_head = json_head(st->schema, nrows, offset, limit))) {
        http__reply_problem(req, FR_EINTERNAL, "internal", "cannot encode the result's columns");
        return;
    }
    bool head = strcmp(req->method, "HEAD") == 0;
    int64_t length = head ? result_stream_length(st) : 0;
    if (length < 0 && st->error.base.kind[0]) { /* a partition on a worker could not be read */
        http__reply_error(req, &st->error);
        return;
    }
    if (length < 0) {
        http__reply_problem(req, FR_EINTERNAL, "internal", "cannot encode the result");
        return;
    }
    uint64_t size = head ? (uint64_t)length : MHD_SIZE_UNKNOWN;
    struct MHD_Response *r =
        MHD_create_response_from_callback(size, 64 * 1024, result_stream_read, st, NULL);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, media[fmt]);
    http__reply_response(req, MHD_HTTP_OK, r, -1);
    if (download_wanted(req) == 1)
        add_disposition(req, fmt);
}

/* ?compression= of a Parquet result: snappy (also when absent), zstd, none;
 * -1 for anything else. */
static int pick_codec(struct http_request *req, enum df_parquet_codec *out)
{
    const char *c = http__query(req, "compression");
    *out = DF_PARQUET_SNAPPY;
    if (!c || strcmp(c, "snappy") == 0)
        return 0;
    if (strcmp(c, "zstd") == 0)
        *out = DF_PARQUET_ZSTD;
    else if (strcmp(c, "none") == 0)
        *out = DF_PARQUET_UNCOMPRESSED;
    else
        return -1;
    return 0;
}

static void query_result(struct http_request *req)
{
    enum result_format fmt = pick_format(req);
    enum df_parquet_codec codec;
    bool bad_codec = pick_codec(req, &codec) < 0;
    int64_t offset = http__query_int(req, "offset", 0, INT64_MAX / 2);
    int64_t limit = http__query_int(req, "limit", -2, INT64_MAX / 2);
    if (fmt == FMT_UNACCEPTABLE || fmt == FMT_MALFORMED) {
        reply_not_acceptable(req, fmt);
        return;
    }
    if (offset < 0 || limit == -1 || fmt == FMT_INVALID || bad_codec || download_wanted(req) < 0) {
        const char *bad = offset < 0           ? "offset"
                          : limit == -1        ? "limit"
                          : fmt == FMT_INVALID ? "format"
                          : bad_codec          ? "compression"
                                               : "download";
        http__reply_bad_parameter(req, bad,
                                  "offset and limit must be non-negative integers; format one "
                                  "of json, csv, ndjson, arrow, parquet; compression snappy, "
                                  "zstd or none; download 1, 0, true or false");
        return;
    }
    ctx_result *result = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_query_result(req->ctx, http__param(req, "id"), &result, &err) == 0)
        reply_stream(req, result, fmt, codec, offset, limit < 0 ? -1 : limit);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

/* DELETE /v1/queries/{id}/result: the result's memory given back. */
static void query_result_release(struct http_request *req)
{
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_query_result_release(req->ctx, http__param(req, "id"), &err) == 0)
        http__reply_empty(req, MHD_HTTP_NO_CONTENT);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

/* How long the locations of a result stay good (their tokens' expiry). */
#define RESULT_LOCATIONS_TTL_S 3600

/* GET /v1/queries/{id}/result/locations: where the client reads the result
 * itself, part by part (in parallel if it likes): the parts left on workers
 * at the workers, on a signed token, the rest here; see
 * api/schemas/result-locations.json. */
static void query_result_locations(struct http_request *req)
{
    ctx_result *result = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    const char *id = http__param(req, "id");
    if (ctx_query_result(req->ctx, id, &result, &err) == 0)
        http__reply_json(
            req, MHD_HTTP_OK,
            ctx_result_locations(result, id, fr_now_ms() / 1000 + RESULT_LOCATIONS_TTL_S));
    else
        http__reply_error(req, &err);
    ctx_result_release(result);
    ctx_error_cleanup(&err);
}

void http__routes_queries_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"POST", "/v1/queries", query_submit, false, HTTP_BODY_JSON, NULL},
        {"GET", "/v1/queries/{id}", query_get, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/queries/{id}", query_cancel, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/queries/{id}/result", query_result, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/queries/{id}/result", query_result_release, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/queries/{id}/result/locations", query_result_locations, false, HTTP_BODY_NONE,
         NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
