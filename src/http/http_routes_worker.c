/* http_routes_worker: the routes of `framed worker`: tasks, partitions, the
 * release of a config, and the operations endpoints. Every task and
 * partition call names its config in Framed-Config-Id, and every answer
 * echoes it. Tasks run on their own thread (deferred), never on the pool. */
#include "http_int.h"

#include "../engine/engine.h"
#include "../proto/proto.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The coordinator's tracing IDs, or false after a 400 invalid-parameter
 * reply: they are logged, so they are bounded and printable. */
static bool trace_of(struct http_request *req, struct worker_trace *trace)
{
    trace->request_id = http__header(req, FR_REQUEST_ID_HEADER);
    trace->query_id = http__header(req, FR_QUERY_ID_HEADER);
    if (worker_trace_ok(trace))
        return true;
    http__reply_problem(req, FR_EINVAL, "invalid-parameter",
                        FR_REQUEST_ID_HEADER " and " FR_QUERY_ID_HEADER
                                             " are 1-64 printable ASCII characters without spaces");
    return false;
}

/* The request's config ID, or NULL after a 400 reply: missing-config-id, or
 * invalid-parameter for a bad tracing ID (checked on every call that names a
 * config, logged at debug). */
static const char *config_id_of(struct http_request *req)
{
    struct worker_trace trace;
    if (!trace_of(req, &trace))
        return NULL;
    const char *id = http__header(req, FR_CONFIG_ID_HEADER);
    if (!id || !*id) {
        http__reply_problem(req, FR_EINVAL, "missing-config-id",
                            "worker calls need the header " FR_CONFIG_ID_HEADER ": sha256:<hex>");
        return NULL;
    }
    if (!fr_config_id_valid(id)) {
        http__reply_problem(req, FR_EINVAL, "missing-config-id",
                            FR_CONFIG_ID_HEADER " must be sha256:<64 lowercase hex>");
        return NULL;
    }
    FR_LOG(FR_LOG_DEBUG, "%s %s config %s request %s query %s", req->method, req->path, id,
           trace.request_id ? trace.request_id : "-", trace.query_id ? trace.query_id : "-");
    return id;
}

static void echo_config_id(struct http_request *req, const char *id)
{
    if (id)
        http__add_header(req, FR_CONFIG_ID_HEADER, id);
}

/* A worker's problem: the error's kind and location, with the members of
 * problem.json#/$defs/MalformedData as the coordinator sends them: the
 * field number of a data file as field_index (the member the protocol
 * names), the column's name as column. Steals ext. */
static void reply_fr_error(struct http_request *req, const struct fr_error *e, json_t *ext)
{
    struct ctx_error ce;
    ctx_error_init(&ce);
    ce.base = *e;
    ce.ext = ext ? ext : json_object();
    if (e->column >= 0)
        json_object_set_new(ce.ext, "field_index", json_integer(e->column));
    ce.base.column = -1;             /* not also as an integer "column" (http_problem.c) */
    if (e->field[0] && e->line >= 0) /* a data file's column, not a config field */
        json_object_set_new(ce.ext, "column", json_string(e->field));
    http__reply_error(req, &ce);
    ctx_error_cleanup(&ce);
}

/* On its own thread: the task may run for as long as task_timeout_ms. */
static void task_job(struct http_request *req)
{
    const char *id = http__header(req, FR_CONFIG_ID_HEADER);
    json_t *body = http__body_json(req);
    if (!body) {
        echo_config_id(req, id);
        return;
    }
    json_t *out = NULL, *ext = NULL;
    struct fr_error err;
    struct worker_trace trace;
    fr_error_init(&err);
    trace_of(req, &trace); /* checked by task_post */
    int rc = worker_task_run(req->worker, id, &trace, body, &out, &ext, &err);
    const char *qid =
        trace.query_id ? trace.query_id : json_string_value(json_object_get(body, "query_id"));
    FR_LOG(rc == FR_OK ? FR_LOG_INFO : FR_LOG_WARN,
           "task %lld of stage %lld of query %s (request %s) under %s: %s",
           (long long)json_integer_value(json_object_get(body, "task")),
           (long long)json_integer_value(json_object_get(body, "stage")), qid ? qid : "-",
           trace.request_id ? trace.request_id : "-", id, rc == FR_OK ? "done" : err.message);
    if (rc == FR_OK) /* signed: the coordinator takes its outputs only when it holds */
        http__reply_json_signed(req, MHD_HTTP_OK, out, worker_secret(req->worker));
    else
        reply_fr_error(req, &err, ext);
    echo_config_id(req, id);
    json_decref(body);
}

static void task_post(struct http_request *req)
{
    const char *id = config_id_of(req);
    if (!id)
        return;
    http__defer(req, task_job);
}

/* A partition sent to a fetch: serialized as MHD sends it (straight from
 * the table's buffers, no encoded copy) and, when the fetch asked for a
 * codec we make (Accept-Encoding, from its config's partition_codecs),
 * compressed a piece at a time into one frame. Counted (by coding, the bytes
 * handed to MHD) when the reply is done. */
#define PARTITION_PIECE (256 * 1024)
struct sent_part {
    worker *w;
    enum fr_codec codec;
    int64_t sent; /* bytes handed to MHD */
    df_serde_reader *rd;
    struct fr_encoder *enc; /* NULL: as is */
    char *raw;              /* a piece before compression (coded only) */
    struct fr_buf out;      /* its compressed form */
    size_t pos;
    bool done;
};

static void sent_part_free(void *cls)
{
    struct sent_part *c = cls;
    if (c->sent > 0) /* a reply that never started sent nothing */
        worker_partition_sent(c->w, (int)c->codec, c->sent);
    df_serde_reader_free(c->rd);
    fr_encoder_free(c->enc);
    free(c->raw);
    fr_buf_cleanup(&c->out);
    free(c);
}

static ssize_t sent_part_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos; /* MHD reads in order */
    struct sent_part *c = cls;
    if (!c->enc) {
        size_t n = df_serde_reader_read(c->rd, buf, max);
        c->sent += (int64_t)n;
        return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
    }
    while (c->pos >= c->out.len) {
        if (c->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        c->out.len = c->pos = 0;
        size_t n = df_serde_reader_read(c->rd, c->raw, PARTITION_PIECE);
        int rc =
            n ? fr_encoder_write(c->enc, c->raw, n, &c->out) : fr_encoder_finish(c->enc, &c->out);
        if (rc != FR_OK) /* out of memory: the fetch sees a cut answer and fails */
            return MHD_CONTENT_READER_END_WITH_ERROR;
        c->done = n == 0;
    }
    size_t n = c->out.len - c->pos < max ? c->out.len - c->pos : max;
    memcpy(buf, c->out.data + c->pos, n);
    c->pos += n;
    c->sent += (int64_t)n;
    return (ssize_t)n;
}

/* The reply for rd (taken): compressed when the fetch asked for a codec we
 * make, else as is (*bytes: its length, -1 when compressed). NULL when out
 * of memory. */
static struct MHD_Response *partition_response(struct http_request *req, df_serde_reader *rd,
                                               int64_t *bytes)
{
    enum fr_codec codec = fr_codec_pick(http__header(req, "Accept-Encoding"));
    struct sent_part *c = fr_try_malloc(sizeof(*c));
    if (c) {
        *c = (struct sent_part){.w = req->worker, .codec = codec, .rd = rd};
        fr_buf_init(&c->out);
    }
    if (c && codec != FR_CODEC_NONE) {
        c->enc = fr_encoder_new(codec, (int64_t)df_serde_reader_size(rd));
        c->raw = fr_try_malloc(PARTITION_PIECE);
    }
    if (!c || (codec != FR_CODEC_NONE && (!c->enc || !c->raw))) {
        if (c)
            sent_part_free(c); /* frees rd */
        else
            df_serde_reader_free(rd);
        return NULL;
    }
    *bytes = codec == FR_CODEC_NONE ? (int64_t)df_serde_reader_size(rd) : -1;
    struct MHD_Response *r = MHD_create_response_from_callback(
        codec == FR_CODEC_NONE ? (uint64_t)*bytes : MHD_SIZE_UNKNOWN, PARTITION_PIECE,
        sent_part_read, c, sent_part_free);
    if (!r) { /* MHD calls no free callback when it fails */
        sent_part_free(c);
        return NULL;
    }
    if (codec != FR_CODEC_NONE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, fr_codec_name(codec));
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/vnd.framed.table");
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    return r;
}

static void partition_get(struct http_request *req)
{
    const char *id = config_id_of(req);
    if (!id)
        return;
    /* ?offset=&limit=: rows [offset, offset + limit) alone, as a table of
     * their own (a coordinator reads a large result in pieces) */
    int64_t offset = http__query_int(req, "offset", 0, INT64_MAX / 2);
    int64_t limit = http__query_int(req, "limit", -2, INT64_MAX / 2);
    if (offset < 0 || limit == -1) {
        http__reply_bad_parameter(req, offset < 0 ? "offset" : "limit",
                                  "offset and limit must be non-negative integers");
        echo_config_id(req, id);
        return;
    }
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *t = NULL;
    if (worker_partition_table(req->worker, http__param(req, "id"), id, &t, &err) != FR_OK) {
        reply_fr_error(req, &err, NULL);
        echo_config_id(req, id);
        return;
    }
    if (offset > t->nrows) {
        http__reply_bad_parameter(req, "offset", "offset is past the partition's rows");
        echo_config_id(req, id);
        df_table_free(t);
        return;
    }
    int64_t n = limit < 0 || limit > t->nrows - offset ? t->nrows - offset : limit;
    /* sent straight from the table's buffers (a share held until the reply
     * is done): no encoded copy of hundreds of MB in fresh memory */
    df_serde_reader *rd = df_serde_reader_new_range(t, offset, n);
    df_table_free(t);
    int64_t len = 0;
    struct MHD_Response *r = rd ? partition_response(req, rd, &len) : NULL;
    if (!r) {
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "no memory to send partition %s now; try again",
                            http__param(req, "id"));
        echo_config_id(req, id);
        return;
    }
    http__reply_response(req, MHD_HTTP_OK, r, len);
    echo_config_id(req, id);
}

/* A result piece as an Arrow IPC stream, made batch by batch as MHD sends
 * it: the schema, rows [next, end) in batches of about
 * RESULT_ARROW_BATCH_BYTES (by the partition's bytes a row; at least one
 * row, at most RESULT_ARROW_BATCH_ROWS), the end-of-stream marker. The
 * stream is charged to the worker's memory accounting while it is open
 * (worker_result_stream_*): its encode buffer, and its partition if that
 * is dropped meanwhile. */
#define RESULT_ARROW_BATCH_BYTES (4 << 20)
#define RESULT_ARROW_BATCH_ROWS 65536
/* A location's token is good for at most this long (a coordinator gives 1 h). */
#define RESULT_TOKEN_MAX_S (24 * 3600)

struct arrow_piece {
    struct df_table *t; /* a share: its buffers stay while the reply is sent */
    worker_result_stream *stream;
    int64_t next, end, batch_rows;
    bool head_done, tail_done;
    struct fr_buf chunk;
    size_t pos;
};

/* MHD's free callback: at the stream's end, the client's abort or an error. */
static void arrow_piece_free(void *cls)
{
    struct arrow_piece *a = cls;
    df_table_free(a->t);
    fr_buf_cleanup(&a->chunk);
    worker_result_stream_close(a->stream); /* after the table: a dropped partition goes now */
    free(a);
}

/* The rows of one record batch of t: about RESULT_ARROW_BATCH_BYTES by its
 * bytes a row, from 1 to RESULT_ARROW_BATCH_ROWS. */
static int64_t arrow_batch_rows(const struct df_table *t)
{
    int64_t bytes = df_table_bytes(t), rows = t->nrows;
    if (rows <= 0 || bytes <= 0)
        return RESULT_ARROW_BATCH_ROWS;
    int64_t per_row = (bytes + rows - 1) / rows;
    int64_t n = RESULT_ARROW_BATCH_BYTES / per_row;
    return n < 1 ? 1 : n > RESULT_ARROW_BATCH_ROWS ? RESULT_ARROW_BATCH_ROWS : n;
}

static ssize_t arrow_piece_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct arrow_piece *a = cls;
    if (a->pos >= a->chunk.len) {
        a->chunk.len = a->pos = 0;
        if (!a->head_done) {
            df_arrow_write_schema(a->t, &a->chunk);
            a->head_done = true;
        } else if (a->next < a->end) {
            int64_t n = a->end - a->next < a->batch_rows ? a->end - a->next : a->batch_rows;
            df_arrow_write_batch(a->t, a->next, n, &a->chunk);
            a->next += n;
            worker_result_stream_charge(a->stream, (int64_t)a->chunk.cap);
        } else if (!a->tail_done) {
            df_arrow_write_eos(&a->chunk);
            a->tail_done = true;
        } else {
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
    }
    size_t n = a->chunk.len - a->pos < max ? a->chunk.len - a->pos : max;
    memcpy(buf, a->chunk.data + a->pos, n);
    a->pos += n;
    return (ssize_t)n;
}

/* GET /v1/results/{id}?config_id=&offset=&limit=&expires=&token=: rows
 * [offset, offset + limit) of a partition as an Arrow IPC stream, for a
 * client holding a location its coordinator gave (GET
 * /v1/queries/{id}/result/locations). Not a cluster call: the token
 * (fr_sign_result_token with the cluster secret; none when the worker has
 * no secret, as its cluster calls then need none) is the permission, for
 * that range of that partition of that config, until expires (unix s). */
static void result_get(struct http_request *req)
{
    const char *pid = http__param(req, "id"), *cid = http__query(req, "config_id");
    const char *token = http__query(req, "token");
    int64_t offset = http__query_int(req, "offset", -1, INT64_MAX / 2);
    int64_t limit = http__query_int(req, "limit", -1, INT64_MAX / 2);
    int64_t expires = http__query_int(req, "expires", -1, INT64_MAX / 2);
    int64_t now = fr_now_ms() / 1000;
    if (!proto_partition_id_ok(pid)) {
        http__reply_bad_parameter(req, "id", "a partition ID is p-<hex>");
        return;
    }
    if (!cid || !fr_config_id_valid(cid)) {
        http__reply_bad_parameter(req, "config_id", "config_id is sha256:<64 hex>");
        return;
    }
    if (offset < 0 || limit < 0 || expires < 0) {
        http__reply_bad_parameter(req,
                                  offset < 0  ? "offset"
                                  : limit < 0 ? "limit"
                                              : "expires",
                                  "offset, limit and expires are required non-negative "
                                  "integers");
        return;
    }
    const char *secret = worker_secret(req->worker);
    if (expires < now || expires > now + RESULT_TOKEN_MAX_S ||
        (secret && !fr_verify_result_token(secret, pid, cid, offset, limit, expires, token))) {
        http__reply_problem(req, FR_EINVAL, "unauthorized",
                            "the location of partition %s is expired or not signed by "
                            "this cluster; ask the coordinator for the result's locations "
                            "again",
                            pid);
        return;
    }
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *t = NULL;
    worker_result_stream *stream = NULL;
    if (worker_result_stream_open(req->worker, pid, cid, &stream, &t, &err) != FR_OK) {
        reply_fr_error(req, &err, NULL);
        return;
    }
    int64_t nrows = t->nrows;
    if (offset > nrows || limit > nrows - offset) {
        df_table_free(t);
        worker_result_stream_close(stream);
        http__reply_problem(req, FR_EINVAL, "range-not-satisfiable",
                            "rows %lld..%lld are past partition %s's %lld rows", (long long)offset,
                            (long long)(offset + limit), pid, (long long)nrows);
        return;
    }
    struct arrow_piece *a = fr_xcalloc(1, sizeof(*a));
    a->t = t;
    a->stream = stream;
    a->next = offset;
    a->end = offset + limit;
    a->batch_rows = arrow_batch_rows(t);
    fr_buf_init(&a->chunk);
    struct MHD_Response *r = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 256 * 1024, arrow_piece_read, a, arrow_piece_free);
    if (!r) { /* MHD calls no free callback for a response it did not make */
        arrow_piece_free(a);
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "no memory to send partition %s now; try again", pid);
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/vnd.apache.arrow.stream");
    http__reply_response(req, MHD_HTTP_OK, r, -1);
}

static void partition_delete(struct http_request *req)
{
    const char *id = config_id_of(req);
    if (!id)
        return;
    struct fr_error err;
    fr_error_init(&err);
    if (worker_partition_delete(req->worker, http__param(req, "id"), id, &err) == FR_OK)
        http__reply_empty(req, MHD_HTTP_NO_CONTENT);
    else
        reply_fr_error(req, &err, NULL);
    echo_config_id(req, id);
}

static void config_delete(struct http_request *req)
{
    const char *id = http__param(req, "id");
    /* an encoded NUL never gets here: http__check_target refuses it */
    if (!fr_config_id_valid(id)) {
        http__reply_bad_parameter(req, "id", "a config ID is sha256:<64 lowercase hex>");
        return;
    }
    /* like every worker call, the release names its config in the header */
    const char *named = config_id_of(req);
    if (!named)
        return;
    if (strcmp(named, id) != 0) {
        http__reply_problem(req, FR_EINVAL, "missing-config-id",
                            FR_CONFIG_ID_HEADER " names another config than the path");
        echo_config_id(req, named);
        return;
    }
    bool was_cached = false;
    int64_t dropped = 0;
    worker_config_drop(req->worker, id, &was_cached, &dropped);
    http__reply_json(req, MHD_HTTP_OK,
                     json_pack("{ss sb sI}", "config_id", id, "was_cached", was_cached,
                               "dropped_partitions", (json_int_t)dropped));
    echo_config_id(req, id);
}

static void reply_text(struct http_request *req, const char *text)
{
    http__reply_bytes(req, MHD_HTTP_OK, "text/plain; charset=utf-8", fr_xstrdup(text),
                      strlen(text));
}

static void livez(struct http_request *req)
{
    reply_text(req, "ok\n");
}

static void readyz(struct http_request *req)
{
    if (http__shutting_down(req->srv))
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable", "the worker is shutting down");
    else
        reply_text(req, "ready\n");
}

static void metrics(struct http_request *req)
{
    struct fr_buf b;
    fr_buf_init(&b);
    worker_metrics(req->worker, &b);
    http__reply_metrics(req, &b);
}

static void info(struct http_request *req)
{
    http__reply_json(req, MHD_HTTP_OK, worker_info(req->worker));
}

/* Probes and metrics stay open for platforms; everything else is a cluster
 * call and needs the signature when a secret is set. */
void http__routes_worker_register(struct http__router *r)
{
    static const struct http__route open_routes[] = {
        {"GET", "/livez", livez, false, HTTP_BODY_NONE, NULL},
        {"GET", "/readyz", readyz, false, HTTP_BODY_NONE, NULL},
        {"GET", "/metrics", metrics, false, HTTP_BODY_NONE, NULL},
        /* a client's, on a coordinator's token (result_get) */
        {"GET", "/v1/results/{id}", result_get, false, HTTP_BODY_NONE, NULL},
    };
    static const struct http__route cluster_routes[] = {
        {"GET", "/v1/info", info, false, HTTP_BODY_NONE, NULL},
        {"POST", "/v1/tasks", task_post, false, HTTP_BODY_JSON, NULL},
        {"GET", "/v1/partitions/{id}", partition_get, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/partitions/{id}", partition_delete, false, HTTP_BODY_NONE, NULL},
        {"DELETE", "/v1/configs/{id}", config_delete, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(open_routes) / sizeof(open_routes[0]); i++)
        http__router_add(r, &open_routes[i]);
    for (size_t i = 0; i < sizeof(cluster_routes) / sizeof(cluster_routes[0]); i++)
        http__router_add_signed(r, &cluster_routes[i]);
}
