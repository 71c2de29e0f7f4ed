/* cli_serve: `framed serve`, the coordinator (context + HTTP server) until
 * SIGTERM/SIGINT, then a graceful stop. The state dir is locked before
 * anything in it is read or written: one server per state dir. */
#include "cli.h"

#include "common/common.h"
#include "context/context.h"
#include "http/http.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* serve: the exit code of a stop whose deadline passed (work was cut off). */
#define EXIT_SHUTDOWN_TIMEOUT 3
/* After the deadline, cancelled work gets this long to unwind before the
 * process exits without cleaning up. */
#define SHUTDOWN_GRACE_MS 5000

struct serve_options {
    const char *listen;
    int64_t port;
    const char *data_dir;
    const char *state_dir;
    const char *log_level;
    int64_t threads;
    int64_t memory_limit;
    const char *spill_dir;
    int64_t spill_limit;
    const char *admin_token_file;
    const char *runner;
    const char *store;
    int64_t store_lease_ms;
    const char *workers;
    const char *static_dir;
    int64_t max_body_bytes;
    int64_t max_upload_bytes;
    int64_t insecure;
    const char *data_token_file;
    const char *cluster_secret_file;
    int64_t shutdown_timeout;
    int64_t max_connections;
    int64_t max_connections_per_ip;
    int64_t max_slow_requests;
    int64_t max_waiting_requests;
    int64_t max_event_streams;
    int64_t idle_timeout;
    int64_t history_max_queries;
    int64_t history_max_age_days;
};

#define F(name, type, member, metavar, help)                                                       \
    {                                                                                              \
        name, type, offsetof(struct serve_options, member), metavar, help                          \
    }

/* One line per flag (easy to merge). */
/* clang-format off */
static const struct cli_flag serve_flags[] = {
    F("listen", CLI_STR, listen, "ADDR", "address to listen on (default 127.0.0.1)"),
    F("port", CLI_INT, port, "N", "TCP port (default 8080; 0 = any free port)"),
    F("data-dir", CLI_STR, data_dir, "DIR", "datasets (default ./data)"),
    F("state-dir", CLI_STR, state_dir, "DIR", "pending config and store, locked by one server (default ./state)"),
    F("log-level", CLI_STR, log_level, "LEVEL", "debug, info, warn or error (default info)"),
    F("threads", CLI_INT, threads, "N", "local runner threads (default: one per core)"),
    F("memory-limit", CLI_BYTES, memory_limit, "BYTES", "budget for kept results, dataframes and running queries' intermediate data, K/M/G suffixes (default: none)"),
    F("spill-dir", CLI_STR, spill_dir, "DIR", "where intermediate data and results go when they would take the memory budget short: files with no name, gone when the server stops (default: the state dir; none = never spill)"),
    F("spill-limit", CLI_BYTES, spill_limit, "BYTES", "the most the spill file may hold at once, K/M/G suffixes (default: 90% of the spill dir's free space at start)"),
    F("admin-token-file", CLI_STR, admin_token_file, "FILE", "file holding the admin token (none = no auth)"),
    F("runner", CLI_STR, runner, "KIND", "local or remote (default local)"),
    F("store", CLI_STR, store, "URL", "embedded (default) or redis://host:port/db"),
    F("store-lease-ms", CLI_INT, store_lease_ms, "MS", "lease of a Redis store hold, renewed every third of it (default 30000)"),
    F("workers", CLI_STR, workers, "URLS", "static worker URLs, comma-separated"),
    F("static-dir", CLI_STR, static_dir, "DIR", "the dashboard's files"),
    F("max-body-bytes", CLI_BYTES, max_body_bytes, "BYTES", "limit of JSON request bodies (default 64M)"),
    F("max-upload-bytes", CLI_BYTES, max_upload_bytes, "BYTES", "limit of a dataset upload (default 16G)"),
    F("insecure", CLI_BOOL, insecure, "", "without a cluster secret, take worker announces from any peer"),
    F("data-token-file", CLI_STR, data_token_file, "FILE", "file holding the data token (none = data endpoints open)"),
    F("cluster-secret-file", CLI_STR, cluster_secret_file, "FILE", "file holding the cluster secret (none = unsigned cluster calls)"),
    F("shutdown-timeout", CLI_INT, shutdown_timeout, "S", "seconds a stop waits for requests before cancelling them (default 30)"),
    F("max-connections", CLI_INT, max_connections, "N", "open connections served; past it requests get 503 (default 1000)"),
    F("max-slow-requests", CLI_INT, max_slow_requests, "N", "requests served on threads of their own at once; past it 503 (default 256)"),
    F("max-waiting-requests", CLI_INT, max_waiting_requests, "N", "?wait= requests waiting at once (no thread each); past it 503 (default 1024)"),
    F("max-event-streams", CLI_INT, max_event_streams, "N", "GET /v1/events streams open at once (no thread each); past it 503 (default 64)"),
    F("max-connections-per-ip", CLI_INT, max_connections_per_ip, "N", "open connections from one address (default 250)"),
    F("idle-timeout", CLI_INT, idle_timeout, "S", "seconds before an idle connection is closed (default 30)"),
    F("history-max-queries", CLI_INT, history_max_queries, "N", "queries kept in the history (state-dir/history.sqlite3), newest first (default 10000)"),
    F("history-max-age-days", CLI_INT, history_max_age_days, "N", "days a finished query (and a reset runner) stays in the history (default 30)"),
};
/* clang-format on */
#undef F
_Static_assert(sizeof(serve_flags) / sizeof(serve_flags[0]) <= CLI_MAX_FLAGS,
               "raise CLI_MAX_FLAGS");

const struct cli_role cli__serve_role = {
    "serve", serve_flags, (int)(sizeof(serve_flags) / sizeof(serve_flags[0])),
    "usage: framed serve [flags]\n\nRuns the coordinator: the HTTP API, the config store and "
    "the local or remote runner.\n\n"};

/* The dashboard: next to the binary if installed so, else the source tree's. */
static const char *default_static_dir(char *buf, size_t bufsz)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int len = snprintf(buf, bufsz, "%.*s/static", (int)(bufsz - 16), exe);
            char index[PATH_MAX + 16];
            snprintf(index, sizeof(index), "%.*s/index.html", len, buf);
            if (len > 0 && access(index, R_OK) == 0)
                return buf;
        }
    }
    return FRAMED_SOURCE_DIR "/static";
}

static int serve_validate(struct serve_options *o)
{
    if (strcmp(o->runner, "local") != 0 && strcmp(o->runner, "remote") != 0) {
        fprintf(stderr, "framed: --runner must be local or remote, not '%s'\n", o->runner);
        return CLI_EXIT_USAGE;
    }
    /* Bounds keep the MHD arguments (unsigned) and the deadline arithmetic sane. */
    static const struct {
        const char *flag;
        size_t offset;
        int64_t min, max;
    } bounds[] = {
        {"shutdown-timeout", offsetof(struct serve_options, shutdown_timeout), 0, 86400},
        {"max-connections", offsetof(struct serve_options, max_connections), 1, 1000000},
        {"max-connections-per-ip", offsetof(struct serve_options, max_connections_per_ip), 1,
         1000000},
        {"idle-timeout", offsetof(struct serve_options, idle_timeout), 1, 86400},
        {"max-slow-requests", offsetof(struct serve_options, max_slow_requests), 1, 100000},
        {"max-waiting-requests", offsetof(struct serve_options, max_waiting_requests), 1, 100000},
        {"max-event-streams", offsetof(struct serve_options, max_event_streams), 1, 100000},
        {"store-lease-ms", offsetof(struct serve_options, store_lease_ms), 300, 3600000},
        {"history-max-queries", offsetof(struct serve_options, history_max_queries), 1, 100000000},
        {"history-max-age-days", offsetof(struct serve_options, history_max_age_days), 1, 36500},
    };
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        int64_t v = *(const int64_t *)((const char *)o + bounds[i].offset);
        if (v < bounds[i].min || v > bounds[i].max) {
            fprintf(stderr, "framed: --%s must be %lld..%lld\n", bounds[i].flag,
                    (long long)bounds[i].min, (long long)bounds[i].max);
            return CLI_EXIT_USAGE;
        }
    }
    return cli__check_shared(o->port, o->threads, o->log_level);
}

/* Beyond loopback, says what anyone who reaches the port can do. */
static void serve_warn_open(const struct serve_options *o, const struct cli_secrets *s, int port)
{
    const char *why = NULL;
    if (cli__is_loopback_address(o->listen, &why) == 1)
        return;
    if (!s->value[CLI_ADMIN_TOKEN] && !s->value[CLI_DATA_TOKEN])
        FR_LOG(FR_LOG_WARN,
               "listening on %s port %d without an admin or data token: anyone who reaches it "
               "can change the config, reset the runner, upload and delete datasets and run "
               "queries (set --admin-token-file)",
               o->listen, port);
    else if (!s->value[CLI_ADMIN_TOKEN])
        FR_LOG(FR_LOG_WARN,
               "listening on %s port %d without an admin token: reads (GET) are open to anyone "
               "who reaches it, and the data token also changes the config and the runner",
               o->listen, port);
    else if (!s->value[CLI_DATA_TOKEN])
        FR_LOG(FR_LOG_WARN,
               "listening on %s port %d without a data token: the data endpoints (dataframes, "
               "queries, results) are open to anyone who reaches it",
               o->listen, port);
    if (!s->value[CLI_CLUSTER_SECRET] && (strcmp(o->runner, "remote") == 0 || o->insecure))
        FR_LOG(FR_LOG_WARN,
               "listening on %s port %d without a cluster secret: cluster calls are unsigned "
               "and %s (set --cluster-secret-file)",
               o->listen, port,
               o->insecure ? "any peer can announce itself as a worker and receive tasks"
                           : "only workers on this machine may announce");
}

static void *shutdown_watchdog(void *arg)
{
    (void)arg;
    struct timespec ts = {SHUTDOWN_GRACE_MS / 1000, (SHUTDOWN_GRACE_MS % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    FR_LOG(FR_LOG_ERROR, "cancelled work did not stop in %d ms: exiting now", SHUTDOWN_GRACE_MS);
    _exit(EXIT_SHUTDOWN_TIMEOUT);
    return NULL;
}

/* The stop after SIGTERM: /readyz fails, requests get until the deadline;
 * past it, running queries are cancelled and a watchdog bounds the rest.
 * Returns the exit code. */
static int serve_stop(ctx *c, http_server *srv, int64_t timeout_s)
{
    ctx_begin_shutdown(c);
    int left = http_server_drain(srv, timeout_s * 1000);
    if (left > 0) {
        FR_LOG(FR_LOG_WARN, "shutdown deadline of %lld s passed with %d requests in flight",
               (long long)timeout_s, left);
        pthread_t tid;
        if (pthread_create(&tid, NULL, shutdown_watchdog, NULL) == 0)
            pthread_detach(tid);
        ctx_cancel_all(c);
    }
    http_server_stop(srv, 0);
    return left > 0 ? EXIT_SHUTDOWN_TIMEOUT : 0;
}

/* Creates and locks the state dir: the lock is held (lock_fd open) for the
 * process's life. 0, or 1 with the reason on stderr. */
static int serve_lock(const struct serve_options *o, int *lock_fd)
{
    struct fr_error err;
    fr_error_init(&err);
    if (fr_mkdir_p(o->state_dir, &err) != FR_OK || fr_dir_lock(o->state_dir, lock_fd, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        return 1;
    }
    FR_LOG(FR_LOG_DEBUG, "state dir %s locked (pid %ld)", o->state_dir, (long)getpid());
    return 0;
}

static struct http_options serve_http_options(const struct serve_options *o,
                                              const struct cli_secrets *s)
{
    return (struct http_options){.listen_addr = o->listen,
                                 .port = (int)o->port,
                                 .max_body_bytes = o->max_body_bytes,
                                 .max_upload_bytes = o->max_upload_bytes,
                                 .admin_token = s->value[CLI_ADMIN_TOKEN],
                                 .data_token = s->value[CLI_DATA_TOKEN],
                                 .cluster_secret = s->value[CLI_CLUSTER_SECRET],
                                 .static_dir = o->static_dir,
                                 .connection_timeout_s = (unsigned)o->idle_timeout,
                                 .max_connections = (unsigned)o->max_connections,
                                 .max_connections_per_ip = (unsigned)o->max_connections_per_ip,
                                 .max_slow_requests = (unsigned)o->max_slow_requests,
                                 .max_waiting_requests = (unsigned)o->max_waiting_requests,
                                 .insecure = o->insecure != 0};
}

static int serve_run(struct serve_options *o, const struct cli_parsed *parsed, char *const *envp)
{
    int result = 1, lock_fd = -1;
    ctx *c = NULL;
    http_server *srv = NULL;
    struct cli_secrets s = {{0}};
    struct fr_error err;
    fr_error_init(&err);
    sigset_t stop;
    /* secrets first: a stuck read stays killable by SIGTERM until the mask */
    if ((result = cli__secrets_load(&cli__serve_role, o, parsed, &s)) != 0)
        goto out;
    cli__block_stop_signals(&stop);
    if ((result = serve_lock(o, &lock_fd)) != 0)
        goto out;
    result = 1;
    if (o->memory_limit > 0) /* freed blocks kept for reuse are outside the budget */
        fr_big_keep_limit((size_t)(o->memory_limit / 4));
    const char *spill_dir = o->spill_dir ? o->spill_dir : o->state_dir;
    if (strcmp(spill_dir, "none") == 0) {
        spill_dir = NULL;
    } else if (fr_mkdir_p(spill_dir, &err) != FR_OK) {
        fprintf(stderr, "framed: --spill-dir: %s\n", err.message);
        goto out;
    }
    int64_t spill_limit = o->spill_limit;
    struct statvfs fs;
    if (spill_dir && spill_limit <= 0 && statvfs(spill_dir, &fs) == 0)
        spill_limit = (int64_t)((double)fs.f_bavail * (double)fs.f_frsize * 0.9);
    if (spill_dir && spill_limit <= 0) { /* a full disk, or statvfs failed */
        FR_LOG(FR_LOG_WARN,
               "--spill-dir %s has no free space to give (or it cannot be read): "
               "nothing will spill; give --spill-limit to spill anyway",
               spill_dir);
        spill_dir = NULL;
    }
    struct ctx_options copts = {.data_dir = o->data_dir,
                                .state_dir = o->state_dir,
                                .threads = (int)o->threads,
                                .memory_limit = o->memory_limit,
                                .spill_dir = spill_dir,
                                .spill_limit = spill_limit,
                                .runner_kind = o->runner,
                                .store_url = o->store,
                                .store_lease_ms = o->store_lease_ms,
                                .workers = o->workers,
                                .max_event_streams = (int)o->max_event_streams,
                                .cluster_secret = s.value[CLI_CLUSTER_SECRET],
                                .history_max_queries = o->history_max_queries,
                                .history_max_age_days = o->history_max_age_days};
    if (ctx_new(&copts, envp, &c, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    struct http_options hopts = serve_http_options(o, &s);
    if (http_server_start(c, &hopts, &srv, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    serve_warn_open(o, &s, http_server_port(srv));
    cli__log_listening(o->listen, http_server_port(srv));
    int sig = 0;
    sigwait(&stop, &sig);
    FR_LOG(FR_LOG_INFO, "received %s: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    result = serve_stop(c, srv, o->shutdown_timeout);
    srv = NULL;
    FR_LOG(FR_LOG_INFO, "stopped");
out:
    http_server_stop(srv, 0);
    ctx_free(c);
    fr_big_release(); /* the blocks kept for reuse (common_mem.c) */
    cli__secrets_cleanup(&s);
    fr_dir_unlock(lock_fd); /* last: nothing touches the state dir after it */
    return result;
}

int cli_serve(int argc, char **argv, char **envp)
{
    char static_buf[PATH_MAX];
    struct serve_options o = {.listen = "127.0.0.1",
                              .port = 8080,
                              .data_dir = "./data",
                              .state_dir = "./state",
                              .log_level = "info",
                              .runner = "local",
                              .store = "embedded",
                              .max_body_bytes = 64LL << 20,
                              .max_upload_bytes = 16LL << 30,
                              .shutdown_timeout = 30,
                              .store_lease_ms = 30000,
                              .max_connections = 1000,
                              .max_connections_per_ip = 250,
                              .max_slow_requests = 256,
                              .max_waiting_requests = 1024,
                              .max_event_streams = 64,
                              .idle_timeout = 30,
                              .history_max_queries = 10000,
                              .history_max_age_days = 30};
    o.static_dir = default_static_dir(static_buf, sizeof(static_buf));
    struct cli_parsed parsed;
    int rc = cli__parse(argc, argv, &cli__serve_role, &o, &parsed);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    rc = serve_validate(&o);
    if (rc != 0)
        return rc;
    cli__check_env(envp);
    cli__log_options(&cli__serve_role, &o);
    return serve_run(&o, &parsed, envp);
}
