/* http_server: the libmicrohttpd daemon (internal polling threads, a pool of one
 * thread per core, epoll where available, connection limits that answer 503
 * before MHD's silent ones, the connection table of http_conns.c that keeps
 * idle and trickling clients from holding connections) and the life of a
 * request inside it: framing
 * checks, route match, token auth, media type and size checks, body
 * accumulation or streaming, the cluster signature, the handler, the reply,
 * deferral of slow handlers, the access log and a stop with a deadline. One
 * daemon serves either role (coordinator or worker): only the route table and
 * the handle differ. */
#include "http_int.h"

#include <microhttpd.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct http_server {
    ctx *ctx;       /* coordinator role */
    worker *worker; /* worker role */
    struct MHD_Daemon *daemon;
    struct http__router *router;
    struct http__metrics *metrics;
    int64_t max_body;
    int64_t max_upload;
    char *admin_token;    /* NULL when auth is off */
    char *data_token;     /* NULL when the data endpoints need no token of their own */
    char *cluster_secret; /* NULL when cluster calls are not signed */
    fr_replay *replay;    /* signatures seen (thread-safe); with cluster_secret */
    char *static_dir;
    int port;
    struct sockaddr_storage addr;
    atomic_int in_flight;        /* requests between their first callback and completion */
    atomic_int deferred;         /* handlers running on their own thread (suspended connections) */
    int max_deferred;            /* past this many, a deferred handler gets 503 */
    atomic_int deferred_threads; /* deferred threads not yet past their resume: stop waits */
    atomic_bool shutting_down;   /* draining: probes answer, new work gets 503 */
    bool insecure;               /* serve --insecure */
    atomic_int open_conns;       /* TCP connections open now */
    unsigned max_conns;          /* above this many, requests get 503 (MHD's own limit is higher) */
    unsigned max_per_ip;         /* the same for one client address */
    struct http__ip_counts *ip_counts;
    struct http__conns *conns; /* phases, eviction past the limits, the head deadline */
    struct http__waits *waits; /* ?wait= requests, suspended without a thread each */
    int64_t body_grace_us;     /* a body slower than HTTP__MIN_BODY_RATE after this closes */
    char keep_alive_hint[32];  /* "timeout=<idle timeout>": every reply's Keep-Alive header */
};

bool http__server_insecure(const struct http_server *s)
{
    return s->insecure;
}

const char *http__static_dir(const struct http_server *s)
{
    return s->static_dir;
}

struct http__metrics *http__server_metrics(struct http_server *s)
{
    return s->metrics;
}

bool http__shutting_down(const struct http_server *s)
{
    return atomic_load(&s->shutting_down);
}

struct http__waits *http__server_waits(struct http_server *s)
{
    return s->waits;
}

bool http__is_worker(const struct http_server *s)
{
    return s->worker != NULL;
}

int http_server_port(const http_server *s)
{
    return s->port;
}

/* ---- request state ---- */

/* MHD's URI callback: the request starts here, with the target as sent
 * (signatures cover it byte for byte, query string included). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_server *s = cls;
    struct http_request *req = fr_xcalloc(1, sizeof(*req));
    req->raw_uri = fr_xstrdup(uri ? uri : "/");
    size_t n = strlen(req->raw_uri);
    char *query = uri && n > HTTP__MAX_TARGET_BYTES ? memchr(uri, '?', n) : NULL;
    if (query) {
        /* It gets 414 and its query string is not worth parsing: MHD 0.9.75
         * parses it right after this callback and, when the arguments'
         * records do not fit in the connection's memory, neither answers nor
         * closes. The target lies in MHD's writable read buffer: a NUL after
         * the '?' leaves nothing to parse (raw_uri keeps the length). */
        query[1] = '\0';
    }
    http__conns_head_started(s->conns, conn);
    req->srv = s;
    req->ctx = s->ctx;
    req->worker = s->worker;
    req->conn = conn;
    req->route_index = -1;
    return req;
}

/* The rest of the request's state, on the access handler's first call. */
static void request_init(struct http_request *req, const char *url, const char *method)
{
    req->begun = true;
    snprintf(req->method, sizeof(req->method), "%s", method);
    req->path = fr_xstrdup(url);
    req->start_us = fr_mono_us();
    req->route_index = -1;
    req->bytes = 0;
    fr_buf_init(&req->body);
    http__request_id(req);
}

static void request_free(struct http_request *req)
{
    if (req->stream && req->route && req->route->stream && req->route->stream->abort)
        req->route->stream->abort(req);
    if (req->response)
        MHD_destroy_response(req->response);
    if (req->body_state_free)
        req->body_state_free(req->body_state);
    for (int i = 0; i < req->nparams; i++) {
        free(req->param_names[i]);
        free(req->param_values[i]);
    }
    fr_buf_cleanup(&req->body);
    free(req->path);
    free(req->raw_uri);
    free(req);
}

/* Declared Content-Length, or -1 when absent (chunked or no body). */
static int64_t content_length(struct http_request *req)
{
    const char *v = http__header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!v || !*v)
        return -1;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    return (end && *end == '\0' && n >= 0) ? (int64_t)n : -1;
}

static bool has_body(struct http_request *req)
{
    int64_t n = content_length(req);
    return n > 0 || (n < 0 && http__header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL);
}

static bool is_json_media_type(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strcspn(ct, "; ");
    return n == strlen("application/json") && strncasecmp(ct, "application/json", n) == 0;
}

/* The body limit of the matched route. */
const char *http__auth_missing_admin(struct http_request *req)
{
    static const struct http__route config_post = {"POST", "/v1/config",   NULL,
                                                   true,   HTTP_BODY_JSON, NULL};
    const struct http__route *route = req->route;
    bool signed_route = req->route_signed;
    req->route = &config_post;
    req->route_signed = false;
    const char *missing = http__auth_missing(req, req->srv->admin_token, req->srv->data_token);
    req->route = route;
    req->route_signed = signed_route;
    return missing;
}

static int64_t body_limit(const struct http_request *req)
{
    if (req->route->body == HTTP_BODY_STREAM)
        return req->srv->max_upload;
    if (req->route_max_body > 0 && req->route_max_body < req->srv->max_body)
        return req->route_max_body;
    return req->srv->max_body;
}

/* A signed route refuses before its body is read, so an unauthenticated
 * client cannot have bodies buffered: the signature's headers (when a cluster
 * secret is set; the MAC needs the body and waits for it) and the route's
 * own head check. */
static bool refused_before_body(struct http_request *req)
{
    if (req->route_signed && req->srv->cluster_secret && !http__check_signature_head(req))
        return true;
    if (req->route_head_check)
        req->route_head_check(req);
    return req->response != NULL;
}

/* Route match and the checks that need only the headers. An error becomes the
 * reply at once; the body, if any, is then drained and dropped. */
static void request_begin(struct http_request *req, const char *method, const char *url,
                          const char *version)
{
    char *allow = NULL;
    const char *missing = NULL;
    int rc = http__router_match(req->srv->router, req, &allow);
    if (!http__check_framing(req, method, url, version)) {
        req->answer_now = true;
    } else if (!http__check_target(req)) {
        /* before the route: a NUL cut short would match another path */
    } else if (http__shutting_down(req->srv) && !http__is_probe(req->path)) {
        /* The listener stays open while the server drains, so orchestrators
         * see /livez 200 and /readyz 503 until the process exits; new work
         * is turned away at once. */
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "the server is shutting down; send this request to another instance");
        req->answer_now = true;
    } else if ((unsigned)atomic_load(&req->srv->open_conns) > req->srv->max_conns &&
               strcmp(req->path, "/livez") != 0) {
        /* /livez still answers: a full server is alive, and a liveness probe
         * that failed here would get it restarted in the middle of a flood. */
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "the server has %u connections open, its limit; try again later",
                            req->srv->max_conns);
        http__add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        req->answer_now = true; /* answered at once: the connection closes */
    } else if ((unsigned)http__ip_counts_get(req->srv->ip_counts, req->conn) >
                   req->srv->max_per_ip &&
               strcmp(req->path, "/livez") != 0) {
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "your address has more than %u connections open, its limit; close "
                            "some or try again later",
                            req->srv->max_per_ip);
        http__add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
        req->answer_now = true;
    } else if (rc == FR_ENOTFOUND) {
        http__reply_problem(req, FR_ENOTFOUND, "not-found", "no route for %s", req->path);
    } else if (rc != 0) {
        http__reply_problem(req, FR_EINVAL, "method-not-allowed",
                            "%s is not allowed on %s; allowed: %s", req->method, req->path, allow);
        http__add_header(req, MHD_HTTP_HEADER_ALLOW, allow);
    } else if ((missing = http__auth_missing(req, req->srv->admin_token, req->srv->data_token)) !=
               NULL) {
        bool sent = http__header(req, MHD_HTTP_HEADER_AUTHORIZATION) != NULL;
        http__reply_problem(req, FR_EINVAL, "unauthorized", "%s%s", missing,
                            sent ? ": the token sent was not accepted"
                                 : " (Authorization: Bearer <token>)");
    } else if (refused_before_body(req)) {
        req->answer_early = true;
    } else {
        enum http__body kind = req->route->body;
        int64_t limit = body_limit(req);
        int64_t declared = content_length(req);
        if (kind == HTTP_BODY_JSON && has_body(req) &&
            !is_json_media_type(http__header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
            http__reply_problem(req, FR_EINVAL, "unsupported-media-type",
                                "the body must be application/json");
        } else if (declared > limit) {
            http__reply_problem(req, FR_ETOOLARGE, "payload-too-large",
                                "the body has %lld bytes; the limit is %lld", (long long)declared,
                                (long long)limit);
        } else if (kind == HTTP_BODY_STREAM) {
            req->route->stream->begin(req);
        }
    }
    free(allow);
    if (req->response)
        req->body_rejected = true;
}

/* Appends to the JSON body with a checked allocation: its size is the
 * client's choice (up to the limit), so running out of memory is an answer,
 * not an abort. The buffer grows with the bytes that came, never to the
 * declared length at once: a client declaring 64 MiB and trickling would
 * otherwise hold it all from its first byte. */
static int body_append(struct http_request *req, const char *data, size_t n)
{
    struct fr_buf *b = &req->body;
    if (b->len + n + 1 > b->cap) {
        size_t want = b->cap ? b->cap * 2 : 4096;
        size_t most = (size_t)body_limit(req) + 1;
        if (want > most)
            want = most;
        if (want < b->len + n + 1)
            want = b->len + n + 1;
        char *p = fr_try_realloc(b->data, want);
        if (!p)
            return FR_ENOSPACE;
        b->data = p;
        b->cap = want;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static void request_consume(struct http_request *req, const char *data, size_t n)
{
    req->body_seen += (int64_t)n;
    if (req->body_rejected)
        return;
    enum http__body kind = req->route->body;
    int64_t limit = body_limit(req);
    if (req->body_seen > limit) {
        http__reply_problem(req, FR_ETOOLARGE, "payload-too-large",
                            "the body is over the limit of %lld bytes", (long long)limit);
        req->body_rejected = true;
        fr_buf_cleanup(&req->body);
        if (req->stream && req->route->stream->abort)
            req->route->stream->abort(req);
        return;
    }
    if (kind == HTTP_BODY_STREAM) {
        if (req->route->stream->write(req, data, n) != 0)
            req->body_rejected = true;
    } else if (kind != HTTP_BODY_NONE && body_append(req, data, n) != 0) {
        http__reply_problem(req, FR_ENOSPACE, "memory-budget-exceeded",
                            "no memory for a request body of %lld bytes",
                            (long long)req->body_seen);
        req->body_rejected = true;
        fr_buf_cleanup(&req->body);
    }
}

/* Adds the headers every reply carries and queues it. */
static enum MHD_Result send_reply(struct http_request *req)
{
    if (!req->response)
        http__reply_problem(req, FR_EINTERNAL, "internal", "the handler produced no reply");
    MHD_add_response_header(req->response, "X-Request-Id", req->request_id);
    if (http__shutting_down(req->srv))
        MHD_add_response_header(req->response, MHD_HTTP_HEADER_CONNECTION, "close");
    else /* the idle timeout, so that a client closes a kept connection before we do
          * (Node's agent, undici): reusing one we close just then loses the request */
        MHD_add_response_header(req->response, "Keep-Alive", req->srv->keep_alive_hint);
    struct MHD_Response *r = req->response;
    req->response = NULL;
    enum MHD_Result rc = MHD_queue_response(req->conn, req->status, r);
    MHD_destroy_response(r);
    return rc;
}

/* A declared body far over the limit is not worth draining: answer now and
 * let MHD close the connection. Other early errors wait for the end of the
 * request (the body drained) so the client reads the reply instead of a
 * reset and the connection stays open. */
static bool reply_before_body(struct http_request *req)
{
    return content_length(req) > req->srv->max_body + 1024 * 1024;
}

/* A client that sent Expect: 100-continue waits for a go before its body:
 * an error is its answer instead (answered on the first call, MHD sends no
 * 100 Continue). */
static bool expects_continue(struct http_request *req)
{
    const char *e = http__header(req, MHD_HTTP_HEADER_EXPECT);
    return e && strcasecmp(e, "100-continue") == 0;
}

/* A body that trickles (a byte a second keeps MHD's per-byte idle timeout
 * from firing) holds its connection for ever: past the grace period it must
 * have averaged HTTP__MIN_BODY_RATE bytes a second. */
static bool body_too_slow(struct http_request *req)
{
    int64_t elapsed = fr_mono_us() - req->start_us;
    if (elapsed <= req->srv->body_grace_us)
        return false;
    return req->body_seen < elapsed / 1000000 * HTTP__MIN_BODY_RATE;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct http_server *s = cls;
    struct http_request *req = *con_cls;
    if (!req) /* no URI callback: cannot happen, but a request is still a request */
        *con_cls = req = on_uri(s, url, conn);
    if (!req->begun) {
        http__conns_head_done(s->conns, conn);
        request_init(req, url, method);
        /* The drain waits for the requests begun before it, not for the
         * probes and refusals it answers itself. */
        req->counted = !http__shutting_down(s);
        if (req->counted)
            atomic_fetch_add(&s->in_flight, 1);
        request_begin(req, method, url, version);
        if (req->response && (req->answer_now || req->answer_early || reply_before_body(req) ||
                              expects_continue(req)))
            return send_reply(req);
        return MHD_YES;
    }
    if (atomic_load(&req->deferred))
        return atomic_load(&req->deferred_done) ? send_reply(req) : MHD_YES;
    if (*upload_data_size > 0) {
        request_consume(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        http__conns_body_progress(s->conns, conn);
        return body_too_slow(req) ? MHD_NO : MHD_YES; /* MHD_NO: MHD closes */
    }
    http__conns_body_done(s->conns, conn);
    if (!req->response && req->route_signed && s->cluster_secret)
        http__check_signature(req, s->cluster_secret, s->replay);
    if (!req->response)
        req->route->handler(req);
    if (atomic_load(&req->deferred))
        return MHD_YES;
    return send_reply(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    struct http_request *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    http__conns_request_done(s->conns, conn);
    if (!req->begun) { /* the client went away before its headers were read */
        request_free(req);
        return;
    }
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && req->status == 0)
        req->status = 499; /* the client went away before a reply */
    if (req->bytes < 0)
        req->bytes = req->streamed_bytes;
    double seconds = (double)(fr_mono_us() - req->start_us) / 1e6;
    http__metrics_observe(s->metrics, req->route_index, req->method, req->status, seconds);
    http__log_request(req);
    bool counted = req->counted;
    request_free(req);
    if (counted)
        atomic_fetch_sub(&s->in_flight, 1);
}

/* ---- deferral ---- */

struct deferred_job {
    struct http_request *req;
    http__handler job;
};

static void *deferred_main(void *arg)
{
    struct deferred_job *d = arg;
    struct http_request *req = d->req;
    struct http_server *s = req->srv;
    d->job(req);
    free(d);
    if (req->pending_wait) {
        /* the waiter resumes the connection: this thread is done with it */
        atomic_fetch_sub(&s->deferred, 1);
        http__wait_register(req); /* req may be freed from here on */
        atomic_fetch_sub(&s->deferred_threads, 1);
        return NULL;
    }
    http__wait_unreserve(req); /* a slot the job did not hand off */
    atomic_store(&req->deferred_done, true);
    /* the limit's count before the resume (the client may send its next
     * request at once), stop's count after it (MHD must not stop meanwhile) */
    atomic_fetch_sub(&s->deferred, 1);
    MHD_resume_connection(req->conn); /* req may be freed by MHD from here on */
    atomic_fetch_sub(&s->deferred_threads, 1);
    return NULL;
}

void http__defer(struct http_request *req, http__handler job)
{
    /* One thread each: past the limit a flood would start threads without
     * end (listings, ?wait=, uploads). */
    if (atomic_fetch_add(&req->srv->deferred, 1) >= req->srv->max_deferred) {
        atomic_fetch_sub(&req->srv->deferred, 1);
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "the server is running %d slow requests, its limit; try again later",
                            req->srv->max_deferred); /* with Retry-After */
        return;
    }
    struct deferred_job *d = fr_xmalloc(sizeof(*d));
    d->req = req;
    d->job = job;
    atomic_store(&req->deferred, true);
    atomic_fetch_add(&req->srv->deferred_threads, 1);
    MHD_suspend_connection(req->conn);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    int rc = pthread_create(&tid, &attr, deferred_main, d);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        deferred_main(d); /* no thread to spare: run it here */
}

/* ---- daemon ---- */

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\r\n")] = '\0';
    FR_LOG(FR_LOG_WARN, "microhttpd: %s", msg);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_server *s = cls;
    int delta = code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1;
    int open = atomic_fetch_add(&s->open_conns, delta) + delta;
    http__ip_counts_add(s->ip_counts, conn, delta);
    /* Past the limit requests get 503, from the reserve's connections. Idle
     * ones must not fill the reserve up (then MHD refuses everyone, /livez
     * too): past half of it, the oldest idle connection makes room. */
    unsigned ip_open = (unsigned)http__ip_counts_get(s->ip_counts, conn);
    if (delta > 0)
        http__conns_opened(s->conns, conn, socket_context,
                           (unsigned)open > s->max_conns + http__conn_reserve(s->max_conns) / 2,
                           ip_open > s->max_per_ip + http__conn_reserve(s->max_per_ip) / 2);
    else
        http__conns_closed(s->conns, socket_context);
}

static int resolve_listen(struct http_server *s, const char *host, int port, struct fr_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc != 0 || !ai)
        return fr_error_set(err, FR_EINVAL, "cannot resolve listen address '%s': %s", host,
                            gai_strerror(rc));
    memcpy(&s->addr, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

static unsigned pool_size(int threads)
{
    if (threads > 0)
        return (unsigned)threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (unsigned)n : 1;
}

static void server_free(struct http_server *s)
{
    http__metrics_free(s->metrics);
    http__router_free(s->router);
    free(s->admin_token);
    free(s->data_token);
    http__ip_counts_free(s->ip_counts);
    http__conns_free(s->conns);
    http__waits_free(s->waits);
    free(s->cluster_secret);
    fr_replay_free(s->replay);
    free(s->static_dir);
    free(s);
}

/* The MHD daemon of s, with the limits of opts; NULL when it cannot listen. */
static struct MHD_Daemon *daemon_start(struct http_server *s, const struct http_options *opts)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (s->addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned timeout = opts->connection_timeout_s ? opts->connection_timeout_s : 30;
    s->max_conns = http__fit_fd_limit(opts->max_connections ? opts->max_connections : 1000);
    s->max_per_ip = opts->max_connections_per_ip ? opts->max_connections_per_ip : 250;
    s->max_deferred = opts->max_slow_requests ? (int)opts->max_slow_requests : 256;
    unsigned per_ip = s->max_per_ip + http__conn_reserve(s->max_per_ip);
    unsigned threads = pool_size(opts->threads);
    /* MHD splits its limit across the pool's threads: never below one each. */
    unsigned hard = s->max_conns + http__conn_reserve(s->max_conns);
    if (hard < threads * 2)
        hard = threads * 2;
    return MHD_start_daemon(
        flags, (uint16_t)opts->port, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER,
        on_mhd_log, s, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP__CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, hard, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&s->addr, MHD_OPTION_END);
}

/* Starts s (its handle and router set) with opts; frees s on failure. */
static int server_start(struct http_server *s, const struct http_options *opts, http_server **out,
                        struct fr_error *err)
{
    int result = FR_EIO;
    s->max_body = opts->max_body_bytes > 0 ? opts->max_body_bytes : 64 * 1024 * 1024;
    s->max_upload = opts->max_upload_bytes > 0 ? opts->max_upload_bytes : INT64_MAX;
    if (opts->admin_token && *opts->admin_token)
        s->admin_token = fr_xstrdup(opts->admin_token);
    if (opts->data_token && *opts->data_token)
        s->data_token = fr_xstrdup(opts->data_token);
    if (opts->cluster_secret && *opts->cluster_secret)
        s->cluster_secret = fr_xstrdup(opts->cluster_secret);
    if (s->cluster_secret)
        s->replay = fr_replay_new(FR_REPLAY_CAPACITY);
    s->insecure = opts->insecure;
    s->static_dir = fr_xstrdup(opts->static_dir ? opts->static_dir : "static");
    s->metrics = http__metrics_new(s->router);
    s->ip_counts = http__ip_counts_new();
    unsigned timeout = opts->connection_timeout_s ? opts->connection_timeout_s : 30;
    s->conns = http__conns_new(timeout);
    s->body_grace_us = (int64_t)timeout * 1000000;
    snprintf(s->keep_alive_hint, sizeof(s->keep_alive_hint), "timeout=%u", timeout);
    if (!(s->waits = http__waits_new((int)opts->max_waiting_requests, err)))
        goto out;
    result =
        resolve_listen(s, opts->listen_addr ? opts->listen_addr : "127.0.0.1", opts->port, err);
    if (result != 0)
        goto out;
    s->daemon = daemon_start(s, opts);
    if (!s->daemon) {
        result = fr_error_set(err, FR_EIO, "cannot listen on %s port %d: %s",
                              opts->listen_addr ? opts->listen_addr : "127.0.0.1", opts->port,
                              strerror(errno ? errno : EADDRINUSE));
        goto out;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : opts->port;
    *out = s;
    s = NULL;
    result = 0;
out:
    if (s)
        server_free(s);
    return result;
}

int http_server_start(ctx *c, const struct http_options *opts, http_server **out,
                      struct fr_error *err)
{
    struct http_server *s = fr_xcalloc(1, sizeof(*s));
    s->ctx = c;
    s->router = http__router_new();
    struct http_options o = *opts;
    if (!o.cluster_secret || !*o.cluster_secret)
        o.cluster_secret = ctx_cluster_secret(c); /* the context's, as the runner signs with it */
    return server_start(s, &o, out, err);
}

int http_server_start_worker(worker *w, const struct http_options *opts, http_server **out,
                             struct fr_error *err)
{
    struct http_server *s = fr_xcalloc(1, sizeof(*s));
    s->worker = w;
    s->router = http__router_new_worker();
    return server_start(s, opts, out, err);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int http_server_drain(http_server *s, int64_t drain_ms)
{
    /* No quiesce: the listening socket stays open until MHD_stop_daemon,
     * so the probes answer during the drain (request_begin refuses the rest). */
    atomic_store(&s->shutting_down, true);
    ctx_events_close(s->ctx); /* event streams end now, not at the deadline */
    int64_t deadline = fr_mono_us() + drain_ms * 1000;
    while (atomic_load(&s->in_flight) > 0 && fr_mono_us() < deadline)
        sleep_ms(5);
    return atomic_load(&s->in_flight);
}

void http_server_stop(http_server *s, int64_t drain_ms)
{
    if (!s)
        return;
    http_server_drain(s, drain_ms);
    /* MHD must not be stopped with a suspended connection: the jobs end
     * (handing their waits over), then the waiter answers what still waits. */
    while (atomic_load(&s->deferred_threads) > 0)
        sleep_ms(5);
    http__waits_stop(s->waits);
    if (atomic_load(&s->in_flight) > 0)
        FR_LOG(FR_LOG_WARN, "stopping with %d requests still in flight",
               atomic_load(&s->in_flight));
    MHD_stop_daemon(s->daemon);
    server_free(s);
}
