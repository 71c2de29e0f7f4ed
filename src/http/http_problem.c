/* http_problem: the one table that maps a status (and the error's kind, when
 * set) to an HTTP status code, a problem type URI and a title, and the writer
 * of RFC 9457 application/problem+json bodies. Any new kind of error gets a
 * row here and nowhere else. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>
#include <string.h>

#define PROBLEM_TYPE_BASE "https://framed.dev/problems/"

struct problem_row {
    int status;       /* the fr_status this row is the default for; FR_OK = only by kind */
    const char *kind; /* the type slug */
    unsigned http;
    const char *title;
    int retry_after_s; /* > 0: a Retry-After header */
};

static const struct problem_row problem_rows[] = {
    {FR_OK, "bad-request", 400, "Malformed HTTP request", 0},
    {FR_OK, "invalid-json", 400, "Malformed JSON body", 0},
    {FR_EINVAL, "invalid-parameter", 400, "Invalid parameter", 0},
    {FR_OK, "invalid-plan", 400, "Invalid plan", 0},
    {FR_OK, "invalid-sql", 400, "Invalid SQL", 0},
    {FR_OK, "invalid-expression", 400, "Invalid expression", 0},
    {FR_OK, "missing-config-id", 400, "Missing config ID", 0},
    {FR_OK, "invalid-task", 400, "Invalid task", 0},
    {FR_OK, "unauthorized", 401, "Unauthorized", 0},
    {FR_ENOTFOUND, "not-found", 404, "Not found", 0},
    {FR_OK, "dataset-not-found", 404, "Dataset not found", 0},
    {FR_OK, "dataframe-not-found", 404, "Dataframe not found", 0},
    {FR_OK, "query-not-found", 404, "Query not found", 0},
    {FR_OK, "config-not-found", 404, "Config not found", 0},
    {FR_OK, "partition-not-found", 404, "Partition not found", 0},
    {FR_OK, "no-runner", 404, "No runner", 0},
    {FR_OK, "runner-not-found", 404, "Runner not found", 0},
    {FR_OK, "method-not-allowed", 405, "Method not allowed", 0},
    {FR_OK, "not-acceptable", 406, "Not acceptable", 0},
    {FR_OK, "result-released", 410, "Result released", 0},
    {FR_OK, "precondition-failed", 412, "Precondition failed", 0},
    {FR_OK, "range-not-satisfiable", 416, "Range not satisfiable", 0},
    {FR_OK, "config-locked", 409, "Config is locked", 0},
    {FR_ECONFLICT, "conflict", 409, "Conflict", 0},
    {FR_OK, "query-not-finished", 409, "Query not finished", 1},
    {FR_OK, "query-failed", 409, "Query failed", 0},
    {FR_OK, "dataframe-not-materialized", 409, "Dataframe not materialized", 0},
    {FR_OK, "config-mismatch", 409, "Config mismatch", 0},
    {FR_OK, "dataset-changed", 409, "Dataset changed", 0},
    {FR_ECANCELLED, "query-cancelled", 409, "Query cancelled", 0},
    {FR_ETOOLARGE, "payload-too-large", 413, "Payload too large", 0},
    {FR_OK, "uri-too-long", 414, "URI too long", 0},
    {FR_OK, "unsupported-media-type", 415, "Unsupported media type", 0},
    {FR_EVALIDATION, "validation-failed", 422, "Validation failed", 0},
    {FR_EDATA, "malformed-data", 422, "Malformed data", 0},
    {FR_OK, "too-many-columns", 422, "Too many columns", 0},
    {FR_OK, "unsupported-parquet", 422, "Unsupported Parquet column", 0},
    {FR_OK, "unsupported-sql", 422, "Unsupported SQL", 0},
    {FR_OK, "cardinality-violation", 422, "Scalar subquery returned more than one row", 0},
    {FR_OK, "input-lost", 424, "Input partition lost", 0},
    {FR_OK, "worker-lost", 424, "Worker lost", 0}, /* a query's: its tasks' workers failed */
    {FR_OK, "headers-too-large", 431, "Request headers too large", 0},
    {FR_EINTERNAL, "internal", 500, "Internal error", 0},
    {FR_OK, "interrupted", 500, "Interrupted by a coordinator stop", 0}, /* a past query's */
    {FR_OK, "invalid-worker-answer", 502, "Invalid worker answer", 0},
    {FR_EIO, "internal", 500, "Internal error", 0},
    {FR_OK, "config-integrity", 500, "Config integrity check failed", 0},
    {FR_OK, "not-implemented", 501, "Not implemented", 0},
    {FR_OK, "runner-draining", 503, "Runner is draining", 5},
    {FR_EUNAVAILABLE, "unavailable", 503, "Service unavailable", 5},
    {FR_OK, "store-unavailable", 503, "Config store unavailable", 5},
    {FR_OK, "no-workers", 503, "No workers", 5},
    {FR_OK, "dataset-unavailable", 503, "Dataset bytes unavailable", 5},
    {FR_ETIMEOUT, "task-timeout", 504, "Task timed out", 0},
    {FR_ENOSPACE, "memory-budget-exceeded", 507, "Memory budget exceeded", 0},
    {FR_OK, "insufficient-storage", 507, "Insufficient storage", 0}, /* a full disk */
    {FR_EMEMLIMIT, "task-memory-limit", 507, "Task memory limit exceeded", 0},
};

#define NROWS ((int)(sizeof(problem_rows) / sizeof(problem_rows[0])))

/* Where a worker answers with another code than the coordinator (the
 * internal protocol's): bytes that do not hash to the ID are the store's
 * fault on the coordinator (500) but a refused request on a worker (409). */
static const struct {
    const char *kind;
    unsigned http;
} worker_codes[] = {
    {"config-integrity", 409},
};

static unsigned worker_code(const char *slug, unsigned code)
{
    for (size_t i = 0; i < sizeof(worker_codes) / sizeof(worker_codes[0]); i++) {
        if (strcmp(worker_codes[i].kind, slug) == 0)
            return worker_codes[i].http;
    }
    return code;
}

static const struct problem_row *row_for_status(int status)
{
    for (int i = 0; i < NROWS; i++) {
        if (problem_rows[i].status == status && status != FR_OK)
            return &problem_rows[i];
    }
    return NULL;
}

static const struct problem_row *row_for_kind(const char *kind)
{
    for (int i = 0; kind && *kind && i < NROWS; i++) {
        if (strcmp(problem_rows[i].kind, kind) == 0)
            return &problem_rows[i];
    }
    return NULL;
}

/* The row of a status/kind pair; a kind unknown to the table keeps its own
 * slug and takes the code and title of its status (else 500). */
static const struct problem_row *lookup(int status, const char *kind, const char **slug)
{
    static const struct problem_row fallback = {FR_EINTERNAL, "internal", 500, "Internal error", 0};
    const struct problem_row *row = row_for_kind(kind);
    if (!row)
        row = row_for_status(status);
    if (!row)
        row = &fallback;
    *slug = (kind && *kind) ? kind : (row == &fallback ? fr_status_name(status) : row->kind);
    return row;
}

unsigned http__problem_http_status(int status, const char *kind)
{
    const char *slug;
    return lookup(status, kind, &slug)->http;
}

/* Where the problem is, from the error's own fields, unless the context
 * already described it in ext. */
static void add_location_members(json_t *body, const struct fr_error *e)
{
    if (e->field[0] && !json_object_get(body, "field"))
        json_object_set_new(body, "field", json_string(e->field));
    if (e->position >= 0 && !json_object_get(body, "position"))
        json_object_set_new(body, "position", json_integer(e->position));
    if (e->line >= 0 && !json_object_get(body, "line"))
        json_object_set_new(body, "line", json_integer(e->line));
    if (e->column >= 0 && !json_object_get(body, "column"))
        json_object_set_new(body, "column", json_integer(e->column));
    if (e->row_group >= 0 && !json_object_get(body, "row_group"))
        json_object_set_new(body, "row_group", json_integer(e->row_group));
    if (e->file[0] && !json_object_get(body, "file")) {
        /* Only the file's name: the data dir's path is the server's business. */
        const char *base = strrchr(e->file, '/');
        json_object_set_new(body, "file", json_string(base ? base + 1 : e->file));
    }
}

void http__reply_error(struct http_request *req, const struct ctx_error *err)
{
    const struct fr_error *e = &err->base;
    const char *slug;
    const struct problem_row *row = lookup(e->status, e->kind, &slug);
    unsigned code = row->http;
    if (req->srv && http__is_worker(req->srv))
        code = worker_code(slug, code);
    char type[160];
    snprintf(type, sizeof(type), PROBLEM_TYPE_BASE "%s", slug);
    json_t *body = json_object();
    json_object_set_new(body, "type", json_string(type));
    json_object_set_new(body, "title", json_string(row->title));
    json_object_set_new(body, "status", json_integer(code));
    char *repaired = fr_utf8_repaired(e->message[0] ? e->message : row->title);
    json_object_set_new(body, "detail", json_string(repaired)); /* never a cut character */
    free(repaired);
    json_t *instance = json_string(req->path);
    json_object_set_new(body, "instance", instance ? instance : json_string("/"));
    json_object_set_new(body, "request_id", json_string(req->request_id));
    if (json_is_object(err->ext))
        json_object_update_missing(body, err->ext);
    add_location_members(body, e);
    char *text = fr_json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(body);
    if (!text)
        text = fr_xstrdup("{\"type\":\"" PROBLEM_TYPE_BASE "internal\",\"status\":500}");
    http__reply_bytes(req, code, "application/problem+json", text, strlen(text));
    if (row->retry_after_s > 0) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", row->retry_after_s);
        http__add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (code == 401)
        http__add_header(req, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

static void reply_problem_v(struct http_request *req, int status, const char *kind, json_t *ext,
                            const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static void reply_problem_v(struct http_request *req, int status, const char *kind, json_t *ext,
                            const char *fmt, va_list ap)
{
    struct ctx_error e;
    ctx_error_init(&e);
    fr_error_vsetk(&e.base, status, kind, fmt, ap);
    e.ext = ext;
    http__reply_error(req, &e);
    ctx_error_cleanup(&e);
}

void http__reply_problem(struct http_request *req, int status, const char *kind, const char *fmt,
                         ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_problem_v(req, status, kind, NULL, fmt, ap);
    va_end(ap);
}

void http__reply_bad_parameter(struct http_request *req, const char *parameter, const char *fmt,
                               ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_problem_v(req, FR_EINVAL, "invalid-parameter", json_pack("{s:s}", "parameter", parameter),
                    fmt, ap);
    va_end(ap);
}
