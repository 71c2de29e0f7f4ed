/* http_routes_history: the history and provenance API: the query list
 * (filters, cursor paging), the runners, a past config's archived bytes
 * (from the history, never the store: I4), the diff of two configs and the
 * runner's dataframes. Every parameter is bounded; a bad one is 400
 * invalid-parameter naming it, and changes nothing. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIST_DEFAULT 50
#define LIST_MAX 500

static const char *const query_states[] = {"queued", "running", "succeeded", "failed", "cancelled"};

/* ?limit=1..500 (default 50): the limit, or 0 after a 400. */
static int list_limit(struct http_request *req)
{
    int64_t limit = http__query_int(req, "limit", LIST_DEFAULT, LIST_MAX);
    if (limit < 1) {
        http__reply_bad_parameter(req, "limit", "limit must be an integer from 1 to %d", LIST_MAX);
        return 0;
    }
    return (int)limit;
}

static bool digits(const char *s, int n, int *out)
{
    *out = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *out = *out * 10 + (s[i] - '0');
    }
    return true;
}

/* RFC 3339, strictly: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM) -> ms
 * since the epoch; -1 when malformed or out of range. */
static int64_t parse_rfc3339(const char *s)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    size_t n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
        !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
        !digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19;
    int64_t ms = 0;
    if (*p == '.') {
        int nd = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
        if (nd == 0 || nd > 9)
            return -1;
        for (; nd < 3; nd++)
            ms *= 10;
    }
    int sign = 0;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        sign = 0;
    else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':' && digits(p + 1, 2, &oh) &&
             digits(p + 4, 2, &om) && oh <= 23 && om <= 59)
        sign = *p == '+' ? 1 : -1;
    else
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec > 59 ? 59 : sec};
    int64_t t = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
    return t < 0 ? -1 : t * 1000 + ms;
}

/* ?name= as a time: *out ms or -1 when absent; false after a 400. */
static bool query_time(struct http_request *req, const char *name, int64_t *out)
{
    const char *v = http__query(req, name);
    *out = -1;
    if (!v)
        return true;
    if ((*out = parse_rfc3339(v)) < 0) {
        http__reply_bad_parameter(
            req, name, "%s must be an RFC 3339 time, e.g. 2026-12-01T13:00:00.123Z", name);
        return false;
    }
    return true;
}

/* An error object's HTTP status, from the problem table by its kind. */
static void add_error_status(json_t *query)
{
    json_t *e = json_object_get(query, "error");
    if (json_is_object(e) && !json_object_get(e, "status"))
        json_object_set_new(e, "status",
                            json_integer(http__problem_http_status(
                                FR_EINTERNAL, json_string_value(json_object_get(e, "kind")))));
}

static bool parse_query_filter(struct http_request *req, struct ctx_query_filter *f)
{
    memset(f, 0, sizeof(*f));
    if (!(f->limit = list_limit(req)))
        return false;
    f->state = http__query(req, "state");
    bool known = !f->state;
    for (size_t i = 0; f->state && i < sizeof(query_states) / sizeof(query_states[0]); i++)
        known = known || strcmp(f->state, query_states[i]) == 0;
    if (!known) {
        http__reply_bad_parameter(req, "state",
                                  "state must be one of queued, running, succeeded, failed, "
                                  "cancelled");
        return false;
    }
    f->config_id = http__query(req, "config_id");
    if (f->config_id && !fr_config_id_valid(f->config_id)) {
        http__reply_bad_parameter(req, "config_id",
                                  "config_id must be sha256: and 64 lowercase hex digits");
        return false;
    }
    f->runner_id = http__query(req, "runner_id");
    if (f->runner_id && (strlen(f->runner_id) > 64 || strncmp(f->runner_id, "runner-", 7) != 0)) {
        http__reply_bad_parameter(req, "runner_id", "runner_id must be a runner ID (runner-...)");
        return false;
    }
    f->cursor = http__query(req, "cursor");
    return query_time(req, "since", &f->since_ms) && query_time(req, "until", &f->until_ms);
}

static void reply_listed(struct http_request *req, int rc, json_t *out, struct ctx_error *err)
{
    if (rc == FR_OK)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, err);
    ctx_error_cleanup(err);
}

static void queries_list(struct http_request *req)
{
    struct ctx_query_filter f;
    if (!parse_query_filter(req, &f))
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_queries_list(req->ctx, &f, &out, &err);
    json_t *list = json_object_get(out, "queries");
    for (size_t i = 0; i < json_array_size(list); i++)
        add_error_status(json_array_get(list, i));
    reply_listed(req, rc, out, &err);
}

static void runners_list(struct http_request *req)
{
    int limit = list_limit(req);
    if (!limit)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_runners_list(req->ctx, limit, http__query(req, "cursor"), &out, &err);
    reply_listed(req, rc, out, &err);
}

static void runner_get(struct http_request *req)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_runner_get(req->ctx, http__param(req, "id"), &out, &err);
    reply_listed(req, rc, out, &err);
}

static void dataframes_list(struct http_request *req)
{
    int limit = list_limit(req);
    if (!limit)
        return;
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_dataframes_list(req->ctx, limit, http__query(req, "cursor"), &out, &err);
    reply_listed(req, rc, out, &err);
}

/* The archived bytes, marked as such: immutable (ETag = ID), verified. */
static void archived_config(struct http_request *req)
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
    if (ctx_history_config_bytes(req->ctx, id, &bytes, &len, &err) != FR_OK) {
        http__reply_error(req, &err);
    } else {
        char etag[160];
        snprintf(etag, sizeof(etag), "\"%s\"", id);
        http__reply_bytes(req, MHD_HTTP_OK, "application/json", bytes, len);
        http__add_header(req, "Framed-Config-Archived", "true");
        http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
        http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
    }
    ctx_error_cleanup(&err);
}

static void configs_diff(struct http_request *req)
{
    const char *from = http__query(req, "from"), *to = http__query(req, "to");
    if (!from || !to) {
        http__reply_bad_parameter(req, from ? "to" : "from",
                                  "from and to are both needed: a config ID, defaults or pending");
        return;
    }
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_config_diff(req->ctx, from, to, &out, &err);
    reply_listed(req, rc, out, &err);
}

void http__routes_history_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/v1/queries", queries_list, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/runners", runners_list, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/runners/{id}", runner_get, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/history/configs/{id}", archived_config, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/configs/diff", configs_diff, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/dataframes", dataframes_list, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
