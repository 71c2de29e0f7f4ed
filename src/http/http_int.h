/* http_int.h: the inside of the http module, shared by http_*.c only (and
 * their unit tests): the request struct, the route table, the reply and
 * parsing helpers, connection tables and metrics. main.c uses http.h.
 *
 * Ownership: json_t * arguments of the reply helpers are stolen; strings are
 * borrowed for the call unless a comment says otherwise. */
#ifndef FRAMED_HTTP_INT_H
#define FRAMED_HTTP_INT_H

#include "http.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

struct MHD_Connection;
struct MHD_Response;
struct http_request;

typedef void (*http__handler)(struct http_request *req);

/* What a route expects of the request body. */
enum http__body {
    HTTP_BODY_NONE = 0, /* ignored (drained) */
    HTTP_BODY_JSON,     /* application/json, accumulated up to max_body_bytes */
    HTTP_BODY_STREAM,   /* handed to the route's stream callbacks chunk by chunk */
};

/* Callbacks of a streamed-body route (dataset uploads). begin runs once the
 * headers are known and returns 0 or sets an error reply; write gets each
 * chunk; the route's handler runs at the end; abort runs if the request ends
 * without the handler having taken the stream state (req->stream); abort
 * and a failing write leave req->stream NULL. */
struct http__stream_ops {
    int (*begin)(struct http_request *req);
    int (*write)(struct http_request *req, const char *data, size_t n);
    void (*abort)(struct http_request *req);
};

struct http__route {
    const char *method;  /* "GET", "POST", ... (HEAD is served by GET routes) */
    const char *pattern; /* "/v1/queries/{id}/result"; also the metrics label */
    http__handler handler;
    bool needs_admin; /* state-changing: needs the admin token when configured */
    enum http__body body;
    const struct http__stream_ops *stream; /* HTTP_BODY_STREAM only */
};

#define HTTP__MAX_PARAMS 4
/* Request target and header limits (414 uri-too-long, 431 headers-too-large);
 * libmicrohttpd's connection memory (HTTP__CONNECTION_MEMORY) is larger, so
 * these answer before its HTML replies do. */
#define HTTP__MAX_TARGET_BYTES 8192
#define HTTP__MAX_HEADER_BYTES 16384
#define HTTP__CONNECTION_MEMORY (256 * 1024)
/* Bytes a second a request body must average once the idle timeout has
 * passed (a slower one is a slowloris and its connection closes). */
#define HTTP__MIN_BODY_RATE 1024

/* One request, from its first byte to the completion callback. */
struct http_request {
    struct http_server *srv;
    ctx *ctx;       /* coordinator role, else NULL */
    worker *worker; /* worker role, else NULL */
    struct MHD_Connection *conn;
    char *raw_uri;   /* owned: the request target as sent (path and query), for signatures */
    bool begun;      /* the access handler has seen the request */
    bool counted;    /* begun before the drain: counted in the server's in_flight */
    bool answer_now; /* the reply goes out at once and the connection closes */
    char method[16];
    char *path;                           /* owned copy of the URL path (no query string) */
    char request_id[FR_TRACE_ID_MAX + 4]; /* [A-Za-z0-9._-]{1,FR_TRACE_ID_MAX} */
    int64_t start_us;
    const struct http__route *route; /* NULL when none matched */
    bool route_signed;               /* a cluster call: needs the cluster signature */
    int64_t route_max_body;          /* the route's own body limit; 0 = the server's */
    http__handler route_head_check;  /* NULL or run before the body (_add_signed_limited) */
    bool answer_early;               /* the reply goes out before the body is read */
    int route_index;                 /* metrics slot; the last slot is "unmatched" */
    bool log_debug;                  /* routine traffic (heartbeats): access-logged at debug */
    int nparams;
    char *param_names[HTTP__MAX_PARAMS];  /* owned */
    char *param_values[HTTP__MAX_PARAMS]; /* owned (MHD has already percent-decoded the path) */
    struct fr_buf body;                   /* JSON bodies */
    int64_t body_seen;                    /* bytes received so far */
    bool body_rejected;                   /* an error reply is set; later chunks are dropped */
    void *stream;                         /* a route's stream state (an upload); see stream_ops */
    /* The reply, set by a handler through http__reply_*. */
    struct MHD_Response *response;
    unsigned status;
    int64_t bytes;    /* body bytes of the reply; -1 while streaming */
    void *body_state; /* a streamed reply's state, freed with the request */
    void (*body_state_free)(void *state);
    int64_t streamed_bytes; /* written by a streamed reply's reader */
    /* Deferral: a handler that may block for long runs on its own thread
     * while the connection is suspended. */
    atomic_bool deferred;
    atomic_bool deferred_done;
    bool wait_reserved;              /* holds a slot of --max-waiting-requests */
    struct http__wait *pending_wait; /* handed off by the job, registered after it */
};

/* ---- server (http_server.c) ---- */
/* serve --insecure: announces without a cluster secret from any peer. */
bool http__server_insecure(const struct http_server *s);
const char *http__static_dir(const struct http_server *s);
struct http__metrics *http__server_metrics(struct http_server *s);
bool http__shutting_down(const struct http_server *s);
bool http__is_worker(const struct http_server *s);
/* /livez, /readyz and /metrics: answered during a drain, logged at debug. */
bool http__is_probe(const char *path);
/* Runs job(req) on a new thread with the connection suspended; the reply the
 * job sets is sent when it returns. Call from a handler, as its last act.
 * With --max-slow-requests jobs running already, job does not run: the reply
 * is 503 unavailable with Retry-After (README: limits). */
void http__defer(struct http_request *req, http__handler job);
struct http__waits *http__server_waits(struct http_server *s);

/* ---- waiting requests (http_waits.c) ---- */
/* What a waiting request waits for; arg is the route's. ready runs on the
 * waiter thread, often, with the waits' lock held: cheap, no locks that
 * finish or a handler could hold while calling in here. finish sets the
 * reply (ready: the awaited thing happened; else the wait timed out or the
 * server stops); free frees arg. */
struct http__wait_ops {
    bool (*ready)(void *arg);
    void (*finish)(struct http_request *req, void *arg, bool ready);
    void (*free)(void *arg);
};
struct http__wait;
struct http__waits;
/* The waiter thread of a server; max = --max-waiting-requests (0 = 1024).
 * NULL with err set when the thread cannot start. */
struct http__waits *http__waits_new(int max, struct fr_error *err);
/* Finishes every wait (not ready) and joins the thread. */
void http__waits_stop(struct http__waits *w);
void http__waits_free(struct http__waits *w); /* accepts NULL; stops first */
int http__waits_count(struct http__waits *w);
/* In a deferred job, before starting what it will wait for: takes a slot,
 * or sets a 503 unavailable reply (with Retry-After) and returns false. */
bool http__wait_reserve(struct http_request *req);
/* Gives a reserved slot back (the job answers at once); no-op without one. */
void http__wait_unreserve(struct http_request *req);
/* In a deferred job holding a slot, as its last act: the job returns and
 * the connection stays suspended, with no thread, until ops->ready(arg) or
 * wait_ms pass; arg is stolen. */
void http__wait_hand_off(struct http_request *req, const struct http__wait_ops *ops, void *arg,
                         int64_t wait_ms);
/* How long the waiter sleeps before it checks again, with the youngest
 * wait age_us old: a 64th of that age, from 1 ms up to 20 ms, so that a
 * query's ?wait= answers within about 1.6% (at least 1 ms) of its end. */
int64_t http__wait_tick_ms(int64_t age_us);
/* The server's side of a hand-off, once the job returned (http_server.c). */
void http__wait_register(struct http_request *req);

/* ---- request helpers (http_request.c) ---- */
const char *http__header(struct http_request *req, const char *name);
/* Every field line of header name joined with ", " (RFC 9110 section 5.3);
 * new, NULL when absent or (with *too_long) past max bytes. */
char *http__header_joined(struct http_request *req, const char *name, size_t max, bool *too_long);
const char *http__query(struct http_request *req, const char *name);
const char *http__param(struct http_request *req, const char *name);
/* Picks the client's X-Request-Id if sane, else generates one. */
void http__request_id(struct http_request *req);
/* Checks how the request is framed (Host, Content-Length, Transfer-Encoding,
 * NUL bytes in the request line, header names and values, folded lines)
 * where libmicrohttpd is lenient; method, url and version are the access
 * handler's (borrowed): false after setting a 400
 * bad-request or 501 not-implemented reply that closes the connection. */
bool http__check_framing(struct http_request *req, const char *method, const char *url,
                         const char *version);
/* Parses the JSON body: NULL after setting a 400 invalid-json reply. New. */
json_t *http__body_json(struct http_request *req);
/* Replies; each replaces any earlier reply of the request. Steal body. */
void http__reply_json(struct http_request *req, unsigned status, json_t *body);
/* As http__reply_json, and with a secret (NULL = none) and a request that
 * carried a Framed-Nonce, signed: Framed-Answer-Signature over the bytes
 * sent, for that request (fr_sign_answer; api/internal-protocol.md). */
void http__reply_json_signed(struct http_request *req, unsigned status, json_t *body,
                             const char *secret);
void http__reply_bytes(struct http_request *req, unsigned status, const char *content_type,
                       char *data, size_t len); /* steals data (malloc'd) */
/* Replies the server's own request metrics followed by role (the bytes of
 * role are taken; the buffer is left empty) in Prometheus text format. */
void http__reply_metrics(struct http_request *req, struct fr_buf *role);
void http__reply_empty(struct http_request *req, unsigned status);
/* Sets a ready MHD response (steals it); bytes = -1 when streamed. */
void http__reply_response(struct http_request *req, unsigned status, struct MHD_Response *r,
                          int64_t bytes);
void http__add_header(struct http_request *req, const char *name, const char *value);
/* Which token the matched route lacks under the configured tokens (NULL or
 * "" = none; README: auth): NULL when the request may go on, else a static
 * text for the 401. Compares in constant time. */
const char *http__auth_missing(struct http_request *req, const char *admin_token,
                               const char *data_token);
/* What http__auth_missing says of req as if it were POST /v1/config, the
 * state change an SQL SET or RESET is (NULL: allowed). */
const char *http__auth_missing_admin(struct http_request *req);
/* Checks the request's cluster signature (Framed-Sender, -Timestamp, -Nonce
 * and -Signature over method, target, body; api/internal-protocol.md) against
 * secret, and that seen (may be NULL) has not seen it; on failure sets a 401
 * unauthorized reply. */
void http__check_signature(struct http_request *req, const char *secret, fr_replay *seen);
/* The part of http__check_signature that needs no body (the headers there,
 * well-formed, the timestamp within the skew window), for a refusal before
 * the body is read: false after setting the same 401 reply. */
bool http__check_signature_head(struct http_request *req);
/* Writes the access-log line of a finished request. */
void http__log_request(struct http_request *req);
/* Query parameters are parsed strictly, here only. http__check_target has
 * already refused an encoded NUL and a repeated parameter (400). */
/* Numbers in query strings are decimal only, read by one parser: no sign,
 * space, hex, exponent, NaN or inf, at most 18 integer digits. */
/* A non-negative integer query parameter from 0 to max: def when absent, -1
 * when bad. */
int64_t http__query_int(struct http_request *req, const char *name, int64_t def, int64_t max);
/* A decimal number query parameter from 0 to max ("1", "0.5"; no sign, hex,
 * exponent, NaN or inf): 0 when absent (*out untouched), 1 with *out set, -1
 * when bad. */
int http__query_decimal(struct http_request *req, const char *name, double max, double *out);
/* A boolean query parameter, "true" or "false" only: 0 false (or absent), 1
 * true, -1 anything else (a bare ?force included). */
int http__query_bool(struct http_request *req, const char *name);
/* Checks the raw request target for every route: an encoded NUL (%00) in the
 * path or the query string (MHD's decoded C strings would silently cut it
 * there) or a repeated query parameter gets 400 invalid-parameter; false
 * then, with the reply set. */
bool http__check_target(struct http_request *req);

/* ---- content negotiation (http_accept.c) ---- */
/* A media type the server can send: "type/subtype" and its parameters
 * ("charset=utf-8", NULL = none); in the server's order of preference. */
struct http__offer {
    const char *type;
    const char *params;
};
#define HTTP__ACCEPT_NONE (-1)      /* nothing offered is acceptable: 406 */
#define HTTP__ACCEPT_MALFORMED (-2) /* the header breaks RFC 9110's grammar: 400 */
#define HTTP__ACCEPT_MAX_BYTES 4096 /* a longer Accept is malformed */
#define HTTP__ACCEPT_MAX_RANGES 64
#define HTTP__ACCEPT_MAX_PARAMS 8 /* per media range, the weight included */
#define HTTP__ACCEPT_MAX_VALUE 256
/* The media ranges of accept (borrowed; NULL = absent): how many (0 for an
 * absent or empty header), or -1 when malformed or past the limits above. */
int http__accept_check(const char *accept);
/* The index of the offer to send under accept (RFC 9110 section 12.5.1): the
 * highest weight, the most specific range of those matching deciding each
 * offer's (type/subtype;params > type/subtype > type/ * > * / *), q=0 and no
 * match = not acceptable, ties to the earlier offer. An absent or empty
 * header accepts the first offer. Else HTTP__ACCEPT_NONE or _MALFORMED. */
int http__accept_pick(const char *accept, const struct http__offer *offers, int noffers);

/* ---- problems (http_problem.c) ---- */
/* A problem reply from a context error (its ext members are merged in). */
void http__reply_error(struct http_request *req, const struct ctx_error *err);
/* A problem reply from a kind and a formatted detail. */
void http__reply_problem(struct http_request *req, int status, const char *kind, const char *fmt,
                         ...) __attribute__((format(printf, 4, 5)));
/* 400 invalid-parameter naming the path or query parameter. */
void http__reply_bad_parameter(struct http_request *req, const char *parameter, const char *fmt,
                               ...) __attribute__((format(printf, 3, 4)));
/* The HTTP status code of a status/kind pair (for callers that need it first). */
unsigned http__problem_http_status(int status, const char *kind);

/* ---- routes (http_routes.c and the per-area files) ---- */
struct http__router;
struct http__router *http__router_new(void);        /* the coordinator's routes */
struct http__router *http__router_new_worker(void); /* the worker's routes */
void http__router_free(struct http__router *r);
void http__router_add(struct http__router *r, const struct http__route *route);
/* Adds a cluster route: with a cluster secret set, it needs a valid signature
 * (its headers are checked before the body is read, the MAC after). */
void http__router_add_signed(struct http__router *r, const struct http__route *route);
/* The same with a body limit of its own (0 = the server's) and head_check
 * (NULL = none), run once the headers are in, before any body byte is
 * buffered: a reply it sets goes out at once. */
void http__router_add_signed_limited(struct http__router *r, const struct http__route *route,
                                     int64_t max_body, http__handler head_check);
/* Adds a catch-all route: its last {param} takes the rest of the path when
 * that names a file (its last segment has an extension), and it is tried only
 * when no other route matches the path. */
void http__router_add_catch_all(struct http__router *r, const struct http__route *route);
/* Which token a route needs, when tokens are configured (README: auth). */
enum http__access {
    HTTP_ACCESS_OPEN,  /* probes, the dashboard's files, signed cluster calls */
    HTTP_ACCESS_READ,  /* everything else: any token once both tokens are set */
    HTTP_ACCESS_DATA,  /* datasets (reading), dataframes, queries: the data or admin token */
    HTTP_ACCESS_ADMIN, /* state changes: the admin token (the data token without one) */
};
enum http__access http__route_access(const struct http__route *route, bool signed_route);
int http__router_count(const struct http__router *r);
const char *http__router_pattern(const struct http__router *r, int index);
/* Matches method and path. On success sets req->route, route_index and the
 * params and returns 0; else FR_ENOTFOUND (no path matched) or FR_ECONFLICT
 * (path matched, method did not: *allow gets a new "GET, HEAD, ..." list). */
int http__router_match(const struct http__router *r, struct http_request *req, char **allow);

/* http_routes_sql.c: a body's "sql" member. http__sql_query: HTTP_SQL_NONE
 * when body has none (nothing done); HTTP_SQL_ANSWERED when the reply is
 * set (an error, or EXPLAIN/SET/RESET/SHOW's answer); HTTP_SQL_SUBMITTED
 * when a query was submitted: *out and *watch (new) as
 * ctx_query_submit_watched's. http__sql_dataframe: a dataframe from
 * {"sql", "name"}: true with *out (new) the 201 body, else the reply is set. */
enum http__sql_outcome { HTTP_SQL_NONE, HTTP_SQL_ANSWERED, HTTP_SQL_SUBMITTED };
enum http__sql_outcome http__sql_query(struct http_request *req, json_t *body, json_t **out,
                                       ctx_query_watch **watch);
bool http__sql_dataframe(struct http_request *req, json_t *body, json_t **out);

void http__routes_config_register(struct http__router *r);
void http__routes_runner_register(struct http__router *r);
void http__routes_data_register(struct http__router *r);
void http__routes_dataframes_register(struct http__router *r);
void http__routes_queries_register(struct http__router *r);
void http__routes_ops_register(struct http__router *r);
void http__routes_worker_register(struct http__router *r);
void http__routes_cluster_register(struct http__router *r);
void http__routes_internal_register(struct http__router *r);
void http__routes_history_register(struct http__router *r);
void http__routes_events_register(struct http__router *r);

/* ---- connection counts per client address (http_limits.c) ---- */
/* The open connections and the phase of each (http_conns.c): a new one
 * opened over_total or over_ip (the caller's limits) closes the oldest idle
 * one (of its address when over_ip); a
 * connection whose request head (line and headers) is not in within
 * head_timeout_s of its start or its last request's end is closed, and so
 * is one whose client shut its side down in the middle of the body. Thread-
 * safe; socket_context is MHD's per-connection pointer (the entry, owned). */
struct http__conns;
/* Connections past max_conns still get an answer (503), up to this many
 * more; past those, MHD closes new connections without a word. */
unsigned http__conn_reserve(unsigned max_conns);
/* want connections, or fewer (with a warning) when the open-file limit
 * cannot be raised to fit them and their reserve. */
unsigned http__fit_fd_limit(unsigned want);
struct http__conns *http__conns_new(unsigned head_timeout_s);
void http__conns_free(struct http__conns *t); /* accepts NULL; after MHD stopped */
void http__conns_opened(struct http__conns *t, struct MHD_Connection *conn, void **socket_context,
                        bool over_total, bool over_ip);
void http__conns_closed(struct http__conns *t, void **socket_context);
void http__conns_head_started(struct http__conns *t, struct MHD_Connection *conn);
void http__conns_head_done(struct http__conns *t, struct MHD_Connection *conn);
void http__conns_body_progress(struct http__conns *t, struct MHD_Connection *conn);
void http__conns_body_done(struct http__conns *t, struct MHD_Connection *conn);
void http__conns_request_done(struct http__conns *t, struct MHD_Connection *conn);
/* Whether the peer of socket fd has shut its side down with nothing left
 * unread (or the connection failed): half-closed after a complete body is
 * not gone until that body is read. */
bool http__conns_peer_gone(int fd);

struct http__ip_counts;
struct http__ip_counts *http__ip_counts_new(void);
void http__ip_counts_free(struct http__ip_counts *t); /* accepts NULL */
/* Counts conn's peer address up (delta 1) or down (-1). */
void http__ip_counts_add(struct http__ip_counts *t, struct MHD_Connection *conn, int delta);
/* Open connections from conn's peer address, conn included. */
int http__ip_counts_get(struct http__ip_counts *t, struct MHD_Connection *conn);

/* ---- metrics (http_metrics.c) ---- */
struct http__metrics;
struct http__metrics *http__metrics_new(const struct http__router *r);
void http__metrics_free(struct http__metrics *m);
void http__metrics_observe(struct http__metrics *m, int route_index, const char *method,
                           unsigned status, double seconds);
/* Appends the Prometheus text of the HTTP counters and histograms. */
void http__metrics_write(struct http__metrics *m, struct fr_buf *out);
/* Appends framed_build_info{version,role} 1 and the process_* families of
 * the Prometheus client conventions, read from /proc/self (http_process.c);
 * a figure that cannot be read is left out. */
void http__metrics_write_process(struct fr_buf *out, const char *role);

#endif
