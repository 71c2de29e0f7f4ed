/* main: the framed command line. `framed serve` runs the coordinator (context +
 * HTTP server) until SIGTERM/SIGINT and then stops gracefully; `framed worker`
 * is the cluster worker. Every flag of a subcommand is read from one table,
 * which also gives its FRAMED_<FLAG> environment variable and its help line. */
#include "common/common.h"
#include "context/context.h"
#include "http/http.h"
#include "runner/runner.h"
#include "worker/worker.h"

#include <jansson.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define DRAIN_MS 30000
/* serve: the exit code of a stop whose deadline passed (work was cut off). */
#define EXIT_SHUTDOWN_TIMEOUT 3
/* After the deadline, cancelled work gets this long to unwind before the
 * process exits without cleaning up. */
#define SHUTDOWN_GRACE_MS 5000

enum flag_type {
    FLAG_STR,
    FLAG_INT,
    FLAG_BYTES,
    FLAG_BOOL
}; /* FLAG_BOOL: no value, an int64_t 0/1 */

/* One flag: --name VALUE, or FRAMED_NAME in the environment (the flag wins). */
struct flag {
    const char *name;
    enum flag_type type;
    size_t offset; /* into the subcommand's options struct */
    const char *metavar;
    const char *help;
};

struct serve_options {
    const char *listen;
    int64_t port;
    const char *data_dir;
    const char *state_dir;
    const char *log_level;
    int64_t threads;
    int64_t memory_limit;
    const char *admin_token_file;
    const char *runner;
    const char *store;
    const char *workers;
    const char *static_dir;
    int64_t max_body_bytes;
    int64_t max_upload_bytes;
    int64_t insecure;
    const char *data_token_file;
    int64_t shutdown_timeout;
    int64_t max_connections;
    int64_t max_connections_per_ip;
    int64_t max_slow_requests;
    int64_t max_waiting_requests;
    int64_t idle_timeout;
};

/* clang-format off */
#define SERVE_FLAG(name, type, member, metavar, help) \
    {name, type, offsetof(struct serve_options, member), metavar, help}
/* clang-format on */

static const struct flag serve_flags[] = {
    SERVE_FLAG("listen", FLAG_STR, listen, "ADDR", "address to listen on (default 127.0.0.1)"),
    SERVE_FLAG("port", FLAG_INT, port, "N", "TCP port (default 8080; 0 = any free port)"),
    SERVE_FLAG("data-dir", FLAG_STR, data_dir, "DIR", "datasets (default ./data)"),
    SERVE_FLAG("state-dir", FLAG_STR, state_dir, "DIR",
               "pending config and store (default ./state)"),
    SERVE_FLAG("log-level", FLAG_STR, log_level, "LEVEL",
               "debug, info, warn or error (default info)"),
    SERVE_FLAG("threads", FLAG_INT, threads, "N", "local runner threads (default: one per core)"),
    SERVE_FLAG("memory-limit", FLAG_BYTES, memory_limit, "BYTES",
               "budget for materialized data, K/M/G suffixes (default: none)"),
    SERVE_FLAG("admin-token-file", FLAG_STR, admin_token_file, "FILE",
               "file holding the admin token (else FRAMED_ADMIN_TOKEN; none = no auth)"),
    SERVE_FLAG("runner", FLAG_STR, runner, "KIND", "local or remote (default local)"),
    SERVE_FLAG("store", FLAG_STR, store, "URL", "embedded (default) or redis://host:port/db"),
    SERVE_FLAG("workers", FLAG_STR, workers, "URLS", "static worker URLs, comma-separated"),
    SERVE_FLAG("static-dir", FLAG_STR, static_dir, "DIR", "the dashboard's files"),
    SERVE_FLAG("max-body-bytes", FLAG_BYTES, max_body_bytes, "BYTES",
               "limit of JSON request bodies (default 64M)"),
    SERVE_FLAG("max-upload-bytes", FLAG_BYTES, max_upload_bytes, "BYTES",
               "limit of a dataset upload (default 16G)"),
    SERVE_FLAG("insecure", FLAG_BOOL, insecure, "",
               "without a cluster secret, take worker announces from any peer"),
    SERVE_FLAG("data-token-file", FLAG_STR, data_token_file, "FILE",
               "file holding the data token (else FRAMED_DATA_TOKEN; none = data endpoints open)"),
    SERVE_FLAG("shutdown-timeout", FLAG_INT, shutdown_timeout, "S",
               "seconds a stop waits for requests before cancelling them (default 30)"),
    SERVE_FLAG("max-connections", FLAG_INT, max_connections, "N",
               "open connections served; past it requests get 503 (default 1000)"),
    SERVE_FLAG("max-slow-requests", FLAG_INT, max_slow_requests, "N",
               "requests served on threads of their own at once; past it 503 (default 256)"),
    SERVE_FLAG("max-waiting-requests", FLAG_INT, max_waiting_requests, "N",
               "?wait= requests waiting at once (no thread each); past it 503 (default 1024)"),
    SERVE_FLAG("max-connections-per-ip", FLAG_INT, max_connections_per_ip, "N",
               "open connections from one address (default 250)"),
    SERVE_FLAG("idle-timeout", FLAG_INT, idle_timeout, "S",
               "seconds before an idle connection is closed (default 30)"),
};
#define NSERVE_FLAGS ((int)(sizeof(serve_flags) / sizeof(serve_flags[0])))

/* ---- value parsing ---- */

static int parse_int(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0)
        return FR_EINVAL;
    *out = v;
    return 0;
}

/* "1048576", "64K", "512M", "16G", "1T" (also "16GiB", "16GB"): powers of 1024. */
static int parse_bytes(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0)
        return FR_EINVAL;
    static const char units[] = "KMGT";
    const char *unit = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (*end && !unit)
        return FR_EINVAL;
    int shift = unit ? 10 * (int)(unit - units + 1) : 0;
    if (shift) {
        end++;
        if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0 || *end == '\0')
            end += strlen(end);
    }
    if (*end || v > (INT64_MAX >> shift))
        return FR_EINVAL;
    *out = (int64_t)v << shift;
    return 0;
}

static void env_name(const char *flag, char *out, size_t outsz)
{
    size_t n = (size_t)snprintf(out, outsz, "FRAMED_");
    for (const char *p = flag; *p && n + 1 < outsz; p++)
        out[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

static int flag_set(const struct flag *f, void *opts, const char *value, const char *source)
{
    char *slot = (char *)opts + f->offset;
    int rc = 0;
    if (f->type == FLAG_STR)
        *(const char **)slot = value;
    else if (f->type == FLAG_BOOL) { /* the flag itself (value NULL), or FRAMED_X=1/0 */
        bool on = !value || strcmp(value, "1") == 0 || strcasecmp(value, "true") == 0;
        rc = on || strcmp(value, "0") == 0 || strcasecmp(value, "false") == 0 ? 0 : FR_EINVAL;
        *(int64_t *)slot = on;
    } else if (f->type == FLAG_INT)
        rc = parse_int(value, (int64_t *)slot);
    else
        rc = parse_bytes(value, (int64_t *)slot);
    if (rc != 0)
        fprintf(stderr, "framed: invalid value '%s' for %s (expected %s)\n", value, source,
                f->type == FLAG_INT    ? "a non-negative integer"
                : f->type == FLAG_BOOL ? "1, 0, true or false"
                                       : "bytes, e.g. 512M");
    return rc;
}

/* ---- generic subcommand parsing ---- */

static void print_flags(FILE *out, const struct flag *flags, int n)
{
    for (int i = 0; i < n; i++) {
        char left[64], env[64];
        snprintf(left, sizeof(left), "--%s%s%s", flags[i].name, flags[i].metavar[0] ? " " : "",
                 flags[i].metavar);
        env_name(flags[i].name, env, sizeof(env));
        fprintf(out, "  %-28s %s [%s]\n", left, flags[i].help, env);
    }
}

/* Environment first, then the command line. 0 = go on, 1 = --help shown,
 * EXIT_USAGE on a bad flag or value. */
static int parse_flags(int argc, char **argv, const struct flag *flags, int n, void *opts,
                       void (*usage)(FILE *))
{
    for (int i = 0; i < n; i++) {
        char env[64];
        env_name(flags[i].name, env, sizeof(env));
        const char *v = getenv(env);
        if (v && *v && flag_set(&flags[i], opts, v, env) != 0)
            return EXIT_USAGE;
    }
    struct option *longopts = fr_xcalloc((size_t)n + 2, sizeof(*longopts));
    for (int i = 0; i < n; i++)
        longopts[i] = (struct option){flags[i].name,
                                      flags[i].type == FLAG_BOOL ? no_argument : required_argument,
                                      NULL, 1000 + i};
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    int rc = 0, c;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            rc = 1;
        } else if (c >= 1000 && c < 1000 + n) {
            char source[64];
            snprintf(source, sizeof(source), "--%s", flags[c - 1000].name);
            rc = flag_set(&flags[c - 1000], opts, optarg, source) ? EXIT_USAGE : 0;
        } else {
            usage(stderr);
            rc = EXIT_USAGE;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "framed: unexpected argument '%s'\n", argv[optind]);
        rc = EXIT_USAGE;
    }
    free(longopts);
    return rc;
}

/* ---- serve ---- */

static void serve_usage(FILE *out)
{
    fprintf(out, "usage: framed serve [flags]\n\nRuns the coordinator: the HTTP API, the "
                 "config store and the local or remote runner.\n\n");
    print_flags(out, serve_flags, NSERVE_FLAGS);
    fprintf(out, "\nFlags win over environment variables. FRAMED_CONFIG_<FIELD> variables set "
                 "pending config values.\n");
}

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

/* The checks serve and worker share: port, threads and log level. */
static int check_shared(int64_t port, int64_t threads, const char *log_level)
{
    if (port > 65535) {
        fprintf(stderr, "framed: --port must be 0..65535\n");
        return EXIT_USAGE;
    }
    if (threads > 4096) {
        fprintf(stderr, "framed: --threads must be at most 4096\n");
        return EXIT_USAGE;
    }
    if (fr_log_level_parse(log_level, &fr_log_threshold) != 0) {
        fprintf(stderr, "framed: --log-level must be debug, info, warn or error\n");
        return EXIT_USAGE;
    }
    return 0;
}

/* A secret (new, or NULL for none): the file if named (a missing, unreadable
 * or empty file stops the start, naming it), else the environment variable. */
static int load_secret(const char *what, const char *file, const char *env_name, char **out)
{
    *out = NULL;
    if (!file) {
        const char *env = getenv(env_name);
        if (env && *env)
            *out = fr_xstrdup(env);
        return 0;
    }
    struct fr_error err;
    fr_error_init(&err);
    if (fr_secret_load(file, out, &err) != 0) {
        fprintf(stderr, "framed: cannot use the %s file %s: %s\n", what, file, err.message);
        return FR_EIO;
    }
    return 0;
}

static void log_listening(const char *addr, int port)
{
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "ts", ts, "level", "info", "msg",
                             "listening", "address", addr, "port", port, "version", FRAMED_VERSION);
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        fr_log_json_line(text);
    free(text);
    json_decref(line);
}

static int serve_validate(struct serve_options *o)
{
    if (strcmp(o->runner, "local") != 0 && strcmp(o->runner, "remote") != 0) {
        fprintf(stderr, "framed: --runner must be local or remote, not '%s'\n", o->runner);
        return EXIT_USAGE;
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
    };
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        int64_t v = *(const int64_t *)((const char *)o + bounds[i].offset);
        if (v < bounds[i].min || v > bounds[i].max) {
            fprintf(stderr, "framed: --%s must be %lld..%lld\n", bounds[i].flag,
                    (long long)bounds[i].min, (long long)bounds[i].max);
            return EXIT_USAGE;
        }
    }
    return check_shared(o->port, o->threads, o->log_level);
}

/* Blocks the stop signals in every thread (those started later inherit the
 * mask) so that only sigwait in the main thread sees them: no handler and
 * no global flag needed. */
static void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
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

static int serve_run(struct serve_options *o, char *const *envp)
{
    int result = 1;
    ctx *c = NULL;
    http_server *srv = NULL;
    char *token = NULL, *data_token = NULL;
    struct fr_error err;
    fr_error_init(&err);
    sigset_t stop;
    block_stop_signals(&stop);
    if (load_secret("admin token", o->admin_token_file, "FRAMED_ADMIN_TOKEN", &token) != 0 ||
        load_secret("data token", o->data_token_file, "FRAMED_DATA_TOKEN", &data_token) != 0)
        goto out;
    struct ctx_options copts = {.data_dir = o->data_dir,
                                .state_dir = o->state_dir,
                                .threads = (int)o->threads,
                                .memory_limit = o->memory_limit,
                                .runner_kind = o->runner,
                                .store_url = o->store,
                                .workers = o->workers,
                                .cluster_secret = getenv("FRAMED_CLUSTER_SECRET")};
    if (ctx_new(&copts, envp, &c, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    struct http_options hopts = {.listen_addr = o->listen,
                                 .port = (int)o->port,
                                 .max_body_bytes = o->max_body_bytes,
                                 .max_upload_bytes = o->max_upload_bytes,
                                 .admin_token = token,
                                 .data_token = data_token,
                                 .static_dir = o->static_dir,
                                 .connection_timeout_s = (unsigned)o->idle_timeout,
                                 .max_connections = (unsigned)o->max_connections,
                                 .max_connections_per_ip = (unsigned)o->max_connections_per_ip,
                                 .max_slow_requests = (unsigned)o->max_slow_requests,
                                 .max_waiting_requests = (unsigned)o->max_waiting_requests,
                                 .insecure = o->insecure != 0};
    if (http_server_start(c, &hopts, &srv, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    log_listening(o->listen, http_server_port(srv));
    int sig = 0;
    sigwait(&stop, &sig);
    FR_LOG(FR_LOG_INFO, "received %s: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    result = serve_stop(c, srv, o->shutdown_timeout);
    srv = NULL;
    FR_LOG(FR_LOG_INFO, "stopped");
out:
    http_server_stop(srv, 0);
    ctx_free(c);
    free(token);
    free(data_token);
    return result;
}

static int cmd_serve(int argc, char **argv, char **envp)
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
                              .max_connections = 1000,
                              .max_connections_per_ip = 250,
                              .max_slow_requests = 256,
                              .max_waiting_requests = 1024,
                              .idle_timeout = 30};
    o.static_dir = default_static_dir(static_buf, sizeof(static_buf));
    int rc = parse_flags(argc, argv, serve_flags, NSERVE_FLAGS, &o, serve_usage);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    rc = serve_validate(&o);
    if (rc != 0)
        return rc;
    return serve_run(&o, envp);
}

/* ---- worker ---- */

struct worker_cli {
    const char *listen; /* NULL = not given: loopback */
    int64_t port;
    const char *coordinator;
    const char *store;
    int64_t threads;
    const char *advertise_url;
    const char *cluster_secret_file;
    const char *log_level;
    const char *data_dir;
    int64_t insecure;
};

/* clang-format off */
#define WORKER_FLAG(name, type, member, metavar, help) \
    {name, type, offsetof(struct worker_cli, member), metavar, help}
/* clang-format on */

static const struct flag worker_flags[] = {
    WORKER_FLAG("listen", FLAG_STR, listen, "ADDR",
                "address to listen on (default 127.0.0.1; see the cluster secret)"),
    WORKER_FLAG("port", FLAG_INT, port, "N", "TCP port (default 8081; 0 = any free port)"),
    WORKER_FLAG("coordinator", FLAG_STR, coordinator, "URL",
                "the coordinator's base URL (required)"),
    WORKER_FLAG("store", FLAG_STR, store, "URL",
                "config store: redis://host:port/db (default: the coordinator's)"),
    WORKER_FLAG("threads", FLAG_INT, threads, "N", "tasks run at once (default: one per core)"),
    WORKER_FLAG("advertise-url", FLAG_STR, advertise_url, "URL",
                "where others reach this worker (default http://<listen>:<port>)"),
    WORKER_FLAG("cluster-secret-file", FLAG_STR, cluster_secret_file, "FILE",
                "file holding the cluster secret (else FRAMED_CLUSTER_SECRET)"),
    WORKER_FLAG("log-level", FLAG_STR, log_level, "LEVEL",
                "debug, info, warn or error (default info)"),
    WORKER_FLAG("data-dir", FLAG_STR, data_dir, "DIR",
                "task file inputs are read only inside it (default ./data)"),
    WORKER_FLAG("insecure", FLAG_BOOL, insecure, "",
                "allow listening beyond loopback without a cluster secret"),
};
#define NWORKER_FLAGS ((int)(sizeof(worker_flags) / sizeof(worker_flags[0])))

static void worker_usage(FILE *out)
{
    fprintf(out, "usage: framed worker --coordinator URL [flags]\n\nRuns a worker of a remote "
                 "runner: it announces itself to the coordinator and runs tasks.\n\n");
    print_flags(out, worker_flags, NWORKER_FLAGS);
    fprintf(out, "\nFlags win over environment variables. FRAMED_CLUSTER_SECRET holds the "
                 "cluster secret itself.\n");
}

static int worker_validate(struct worker_cli *o)
{
    if (!o->coordinator || !*o->coordinator) {
        fprintf(stderr, "framed: worker needs --coordinator URL (or FRAMED_COORDINATOR)\n");
        return EXIT_USAGE;
    }
    return check_shared(o->port, o->threads, o->log_level);
}

static bool is_any_address(const char *addr)
{
    return strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "::") == 0 || strcmp(addr, "[::]") == 0;
}

/* 1 when every address addr resolves to is loopback, 0 when one is not, -1
 * (with the resolver's reason in *why) when it does not resolve. The text
 * proves nothing: "127.example.com" may be any host. A numeric address is
 * taken as it is; "[::1]" loses its brackets first. */
static int is_loopback_address(const char *addr, const char **why)
{
    char host[256];
    size_t n = strlen(addr);
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
        addr++;
        n -= 2;
    }
    *why = "not a host name";
    if (n == 0 || n >= sizeof(host))
        return -1;
    memcpy(host, addr, n);
    host[n] = '\0';
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0) {
        hints.ai_flags = 0;
        ai = NULL;
        rc = getaddrinfo(host, NULL, &hints, &ai);
    }
    if (rc != 0 || !ai) {
        *why = rc != 0 ? gai_strerror(rc) : "no address";
        return -1;
    }
    int loopback = 1;
    for (const struct addrinfo *p = ai; p; p = p->ai_next)
        if (!fr_sockaddr_is_loopback(p->ai_addr))
            loopback = 0;
    freeaddrinfo(ai);
    return loopback;
}

/* Where to listen, with what the operator should know about it; NULL when
 * the worker must not start: beyond loopback without a cluster secret anyone
 * who reaches the port could run tasks, so that needs --insecure. */
static const char *worker_listen(const struct worker_cli *o, const char *secret)
{
    if (!o->listen) {
        if (!secret)
            FR_LOG(FR_LOG_INFO, "no cluster secret: listening on loopback only (127.0.0.1); "
                                "set one to listen elsewhere");
        return "127.0.0.1";
    }
    const char *why = NULL;
    int loopback = secret ? 1 : is_loopback_address(o->listen, &why);
    if (loopback < 0) {
        fprintf(stderr,
                "framed: cannot resolve --listen %s (%s), so it cannot be checked to be loopback; "
                "give a numeric address such as 127.0.0.1\n",
                o->listen, why);
        return NULL;
    }
    if (!loopback) {
        if (!o->insecure) {
            fprintf(stderr,
                    "framed: refusing to listen on %s without a cluster secret: anyone who "
                    "reaches this port could run tasks; set FRAMED_CLUSTER_SECRET (or "
                    "--cluster-secret-file), or pass --insecure\n",
                    o->listen);
            return NULL;
        }
        FR_LOG(FR_LOG_WARN,
               "--insecure: listening on %s without a cluster secret: anyone who reaches this "
               "port can run tasks",
               o->listen);
    }
    return o->listen;
}

/* The advertised URL (new): the flag, else http://<listen>:<port>. */
static char *worker_advertise(const struct worker_cli *o, const char *listen, int port)
{
    if (o->advertise_url && *o->advertise_url)
        return fr_xstrdup(o->advertise_url);
    if (is_any_address(listen)) {
        FR_LOG(FR_LOG_WARN,
               "listening on %s: advertising 127.0.0.1; set --advertise-url so "
               "other machines reach this worker",
               listen);
        listen = "127.0.0.1";
    }
    bool v6 = strchr(listen, ':') != NULL && listen[0] != '[';
    return fr_xasprintf(v6 ? "http://[%s]:%d" : "http://%s:%d", listen, port);
}

static int worker_run(struct worker_cli *o)
{
    int result = 1;
    worker *w = NULL;
    http_server *srv = NULL;
    char *secret = NULL, *url = NULL;
    struct fr_error err;
    fr_error_init(&err);
    sigset_t stop;
    block_stop_signals(&stop);
    if (load_secret("cluster secret", o->cluster_secret_file, "FRAMED_CLUSTER_SECRET", &secret) !=
        0)
        goto out;
    const char *listen = worker_listen(o, secret);
    if (!listen) {
        result = EXIT_USAGE;
        goto out;
    }
    struct worker_options wopts = {.coordinator = o->coordinator,
                                   .store_url = o->store,
                                   .threads = (int)o->threads,
                                   .secret = secret,
                                   .data_dir = o->data_dir};
    if (worker_new(&wopts, &w, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    struct http_options hopts = {
        .listen_addr = listen, .port = (int)o->port, .cluster_secret = secret};
    if (http_server_start_worker(w, &hopts, &srv, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    url = worker_advertise(o, listen, http_server_port(srv));
    if (!runner_worker_url_ok(url)) {
        fprintf(stderr,
                "framed: --advertise-url %s is not http(s)://host[:port] (no path, query or "
                "user): the coordinator would refuse every announce\n",
                url);
        result = EXIT_USAGE;
        goto out;
    }
    if (worker_start(w, url, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        goto out;
    }
    log_listening(listen, http_server_port(srv));
    FR_LOG(FR_LOG_INFO, "worker %s at %s, coordinator %s, data dir %s", worker_id(w), url,
           o->coordinator, o->data_dir);
    int sig = 0;
    sigwait(&stop, &sig);
    FR_LOG(FR_LOG_INFO, "received %s: finishing running tasks",
           sig == SIGTERM ? "SIGTERM" : "SIGINT");
    worker_stop(w);
    http_server_stop(srv, DRAIN_MS);
    srv = NULL;
    FR_LOG(FR_LOG_INFO, "stopped");
    result = 0;
out:
    http_server_stop(srv, 0);
    worker_free(w);
    free(url);
    free(secret);
    return result;
}

static int cmd_worker(int argc, char **argv, char **envp)
{
    (void)envp;
    struct worker_cli o = {.port = 8081, .log_level = "info", .data_dir = "./data"};
    int rc = parse_flags(argc, argv, worker_flags, NWORKER_FLAGS, &o, worker_usage);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    rc = worker_validate(&o);
    if (rc != 0)
        return rc;
    return worker_run(&o);
}

/* ---- entry ---- */

struct command {
    const char *name;
    int (*run)(int argc, char **argv, char **envp);
    const char *summary;
};

static const struct command commands[] = {
    {"serve", cmd_serve, "run the coordinator (HTTP API, config store, runner)"},
    {"worker", cmd_worker, "run a worker of a remote runner"},
};
#define NCOMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static void usage(FILE *out)
{
    fprintf(out, "usage: framed <command> [flags]\n       framed --help | --version\n\n"
                 "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`framed <command> --help` lists a command's flags.\n");
}

int main(int argc, char **argv, char **envp)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("framed %s\n", FRAMED_VERSION);
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1, envp);
    }
    fprintf(stderr, "framed: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
