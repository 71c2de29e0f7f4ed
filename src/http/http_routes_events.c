/* http_routes_events: the live view of work. GET /v1/queries/{id}/stages
 * (every attempt of every task of a query) and GET /v1/events, a stream of
 * Server-Sent Events from the context's bus. A stream holds no thread: its
 * content reader suspends the connection when there is nothing to send and
 * the bus's wake (an event, a tick about every second, the close at
 * shutdown) resumes it; a ": ping" comment goes out after 15 s of silence,
 * and a client that went away is noticed at the next tick. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdlib.h>
#include <string.h>

#define SSE_PING_US (15 * 1000000LL)
#define SSE_READ_MAX (16 * 1024) /* bytes of events taken from the bus at once */

static void query_stages(struct http_request *req)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_query_stages(req->ctx, http__param(req, "id"), &out, &err) == FR_OK)
        http__reply_json(req, MHD_HTTP_OK, out);
    else
        http__reply_error(req, &err);
    ctx_error_cleanup(&err);
}

struct sse_stream {
    pthread_mutex_t lock; /* "stream lock": suspended */
    bool suspended;
    struct MHD_Connection *conn;
    struct http_server *srv;
    ctx_event_sub *sub;
    struct fr_buf out; /* text not yet handed to MHD */
    size_t out_pos;
    int64_t last_write_us;
    int64_t *sent; /* the request's streamed_bytes */
};

/* Called by the bus with its lock held: resumes the stream if it sleeps. */
static void stream_wake(void *arg)
{
    struct sse_stream *st = arg;
    pthread_mutex_lock(&st->lock);
    if (st->suspended) {
        st->suspended = false;
        MHD_resume_connection(st->conn);
    }
    pthread_mutex_unlock(&st->lock);
}

static bool client_gone(struct sse_stream *st)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return !ci || ci->connect_fd == MHD_INVALID_SOCKET || http__conns_peer_gone(ci->connect_fd);
}

/* Sleeps until woken (true), unless something arrived meanwhile (false). */
static bool stream_sleep(struct sse_stream *st)
{
    pthread_mutex_lock(&st->lock);
    bool idle = ctx_events_idle(st->sub);
    if (idle) {
        st->suspended = true;
        MHD_suspend_connection(st->conn);
    }
    pthread_mutex_unlock(&st->lock);
    return idle;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct sse_stream *st = cls;
    for (;;) {
        if (st->out_pos < st->out.len) {
            size_t n = st->out.len - st->out_pos;
            n = n < max ? n : max;
            memcpy(buf, st->out.data + st->out_pos, n);
            st->out_pos += n;
            *st->sent += (int64_t)n;
            st->last_write_us = fr_mono_us();
            return (ssize_t)n;
        }
        st->out.len = st->out_pos = 0;
        bool ended = ctx_events_read(st->sub, &st->out, SSE_READ_MAX) == 1;
        if (st->out.len > 0)
            continue;
        if (ended || http__shutting_down(st->srv))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (client_gone(st))
            return MHD_CONTENT_READER_END_WITH_ERROR; /* its slot is freed with it */
        if (fr_mono_us() - st->last_write_us >= SSE_PING_US) {
            fr_buf_puts(&st->out, ": ping\n\n");
            continue;
        }
        if (stream_sleep(st))
            return 0; /* suspended: MHD asks again once resumed */
    }
}

static void stream_free(void *cls)
{
    struct sse_stream *st = cls;
    ctx_events_unsubscribe(st->sub); /* no wake runs once this returns */
    fr_buf_cleanup(&st->out);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* Last-Event-ID: -1 when absent, -2 when not a decimal sequence number. */
static int64_t last_event_id(struct http_request *req)
{
    const char *v = http__header(req, "Last-Event-ID");
    if (!v)
        return -1;
    size_t n = strlen(v);
    if (n == 0 || n > 18 || strspn(v, "0123456789") != n)
        return -2;
    return strtoll(v, NULL, 10);
}

static void events_get(struct http_request *req)
{
    unsigned types = 0;
    struct fr_error perr;
    fr_error_init(&perr);
    if (ctx_events_parse_types(http__query(req, "types"), &types, &perr) != FR_OK) {
        http__reply_bad_parameter(req, "types", "%s", perr.message);
        return;
    }
    int64_t last = last_event_id(req);
    if (last == -2) {
        http__reply_bad_parameter(req, "Last-Event-ID",
                                  "Last-Event-ID must be an event's id (a decimal number)");
        return;
    }
    if (strcmp(req->method, "HEAD") == 0) { /* no stream: the headers a GET would send */
        http__reply_bytes(req, MHD_HTTP_OK, "text/event-stream", fr_xstrdup(""), 0);
        return;
    }
    struct sse_stream *st = fr_xcalloc(1, sizeof(*st));
    pthread_mutex_init(&st->lock, NULL);
    st->conn = req->conn;
    st->srv = req->srv;
    st->sent = &req->streamed_bytes;
    st->last_write_us = fr_mono_us();
    fr_buf_init(&st->out);
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_events_subscribe(req->ctx, types, last, stream_wake, st, &st->sub, &err) != FR_OK) {
        http__reply_error(req, &err); /* 503 with Retry-After past --max-event-streams */
        ctx_error_cleanup(&err);
        stream_free(st);
        return;
    }
    fr_buf_puts(&st->out, "retry: 2000\n\n");
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_READ_MAX,
                                                               stream_read, st, stream_free);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    http__reply_response(req, MHD_HTTP_OK, r, -1);
}

void http__routes_events_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/v1/queries/{id}/stages", query_stages, false, HTTP_BODY_NONE, NULL},
        {"GET", "/v1/events", events_get, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
