/* http: the HTTP edge of both roles. A libmicrohttpd daemon, a route table whose
 * handlers call the context (coordinator) or the worker, one table that maps
 * statuses to RFC 9457 problem bodies, request signatures for cluster calls,
 * Prometheus metrics and one JSON access-log line per request. This header is
 * the module's face (what main.c starts and stops); http_int.h is shared by
 * the http_*.c files only. */
#ifndef FRAMED_HTTP_H
#define FRAMED_HTTP_H

#include "../common/common.h"
#include "../context/context.h"
#include "../worker/worker.h"

#include <stdbool.h>
#include <stdint.h>

struct http_options {
    const char *listen_addr;         /* numeric address or host name; "127.0.0.1" if NULL */
    int port;                        /* 0 = ephemeral; see http_server_port */
    int threads;                     /* MHD thread pool; 0 = one per core */
    int64_t max_body_bytes;          /* JSON request bodies */
    int64_t max_upload_bytes;        /* dataset uploads (streamed, never held in memory) */
    const char *admin_token;         /* NULL or "" = no auth; copied */
    const char *data_token;          /* NULL or "" = data endpoints open; copied (README: auth) */
    const char *static_dir;          /* the dashboard; copied */
    unsigned connection_timeout_s;   /* idle connections are closed after this; 0 = 30 */
    unsigned max_connections;        /* open connections served; 0 = 1000 (README: limits) */
    unsigned max_connections_per_ip; /* 0 = 250 */
    unsigned max_slow_requests;      /* deferred jobs at once; 0 = 256 (README: limits) */
    unsigned max_waiting_requests;   /* ?wait= requests suspended at once; 0 = 1024 */
    const char *cluster_secret;      /* NULL or "" = none; else cluster routes need a valid
                                        signature (api/internal-protocol.md); copied */
    bool insecure; /* without a cluster secret, take worker announces from any peer, not only
                      loopback (serve --insecure) */
};

typedef struct http_server http_server;

/* Starts the daemon on its own threads. c is borrowed and must outlive the
 * server. *out is new; stop it with http_server_stop. */
int http_server_start(ctx *c, const struct http_options *opts, http_server **out,
                      struct fr_error *err);
/* The same for a worker: serves the worker routes (tasks, partitions,
 * configs, operations). w is borrowed and must outlive the server. */
int http_server_start_worker(worker *w, const struct http_options *opts, http_server **out,
                             struct fr_error *err);
/* The port actually bound (useful when opts->port was 0). */
int http_server_port(const http_server *s);
/* First half of a stop: waits up to drain_ms for the requests in flight.
 * The listener stays open until http_server_stop: /livez, /readyz (503) and
 * /metrics answer, any other new request gets 503 at once. Returns how many
 * are still in flight (0: all done). Call ctx_begin_shutdown first. */
int http_server_drain(http_server *s, int64_t drain_ms);
/* Graceful stop: http_server_drain, then waits for deferred handlers (they
 * hold suspended connections, which MHD cannot be stopped with: cancel
 * their work first to bound this), stops the daemon and frees s. Accepts
 * NULL. */
void http_server_stop(http_server *s, int64_t drain_ms);

#endif
