/* cli_worker: `framed worker`, a worker of a remote runner: it announces
 * itself to the coordinator and runs tasks until SIGTERM/SIGINT. Beyond
 * loopback it needs the cluster secret (or --insecure, said in the log). */
#include "cli.h"

#include "common/common.h"
#include "http/http.h"
#include "runner/runner.h"
#include "worker/worker.h"

#include <stdlib.h>
#include <string.h>

#define DRAIN_MS 30000

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
    const char *data_source;
    int64_t insecure;
};

#define F(name, type, member, metavar, help)                                                       \
    {                                                                                              \
        name, type, offsetof(struct worker_cli, member), metavar, help                             \
    }

/* One line per flag (easy to merge). */
/* clang-format off */
static const struct cli_flag worker_flags[] = {
    F("listen", CLI_STR, listen, "ADDR", "address to listen on (default 127.0.0.1; see the cluster secret)"),
    F("port", CLI_INT, port, "N", "TCP port (default 8081; 0 = any free port)"),
    F("coordinator", CLI_STR, coordinator, "URL", "the coordinator's base URL (required)"),
    F("store", CLI_STR, store, "URL", "config store: redis://host:port/db (default: the coordinator's)"),
    F("threads", CLI_INT, threads, "N", "tasks run at once (default: one per core)"),
    F("advertise-url", CLI_STR, advertise_url, "URL", "where others reach this worker (default http://<listen>:<port>)"),
    F("cluster-secret-file", CLI_STR, cluster_secret_file, "FILE", "file holding the cluster secret (none = unsigned, loopback only)"),
    F("log-level", CLI_STR, log_level, "LEVEL", "debug, info, warn or error (default info)"),
    F("data-dir", CLI_STR, data_dir, "DIR", "task file inputs are read only inside it (default ./data)"),
    F("data-source", CLI_STR, data_source, "MODE", "where scan tasks read files: auto (local copy if it is the coordinator's, else by range from it), local or remote (default auto)"),
    F("insecure", CLI_BOOL, insecure, "", "allow listening beyond loopback without a cluster secret"),
};
/* clang-format on */
#undef F
_Static_assert(sizeof(worker_flags) / sizeof(worker_flags[0]) <= CLI_MAX_FLAGS,
               "raise CLI_MAX_FLAGS");

const struct cli_role cli__worker_role = {
    "worker", worker_flags, (int)(sizeof(worker_flags) / sizeof(worker_flags[0])),
    "usage: framed worker --coordinator URL [flags]\n\nRuns a worker of a remote runner: it "
    "announces itself to the coordinator and runs tasks.\n\n"};

static int worker_validate(struct worker_cli *o)
{
    if (!o->coordinator || !*o->coordinator) {
        fprintf(stderr, "framed: worker needs --coordinator URL (or FRAMED_COORDINATOR)\n");
        return CLI_EXIT_USAGE;
    }
    return cli__check_shared(o->port, o->threads, o->log_level);
}

static bool is_any_address(const char *addr)
{
    return strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "::") == 0 || strcmp(addr, "[::]") == 0;
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
    int loopback = secret ? 1 : cli__is_loopback_address(o->listen, &why);
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
                    "reaches this port could run tasks; set --cluster-secret-file (or "
                    "FRAMED_CLUSTER_SECRET_FILE, FRAMED_CLUSTER_SECRET), or pass --insecure\n",
                    o->listen);
            return NULL;
        }
        FR_LOG(FR_LOG_WARN,
               "--insecure: listening on %s without a cluster secret: anyone who reaches this "
               "port can run tasks (POST /v1/tasks), read and delete partitions "
               "(/v1/partitions) and drop configs (DELETE /v1/configs)",
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

/* Starts the worker and its server; 0, or the exit code with the reason said. */
static int worker_start_all(const struct worker_cli *o, const char *listen, const char *secret,
                            worker **w, http_server **srv, char **url)
{
    struct fr_error err;
    fr_error_init(&err);
    struct worker_options wopts = {.coordinator = o->coordinator,
                                   .store_url = o->store,
                                   .threads = (int)o->threads,
                                   .secret = secret,
                                   .data_dir = o->data_dir,
                                   .data_source = o->data_source};
    struct http_options hopts = {
        .listen_addr = listen, .port = (int)o->port, .cluster_secret = secret};
    if (worker_new(&wopts, w, &err) != 0 || http_server_start_worker(*w, &hopts, srv, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        return 1;
    }
    *url = worker_advertise(o, listen, http_server_port(*srv));
    if (!runner_worker_url_ok(*url)) {
        fprintf(stderr,
                "framed: --advertise-url %s is not http(s)://host[:port] (no path, query or "
                "user): the coordinator would refuse every announce\n",
                *url);
        return CLI_EXIT_USAGE;
    }
    if (worker_start(*w, *url, &err) != 0) {
        fprintf(stderr, "framed: %s\n", err.message);
        return 1;
    }
    return 0;
}

static int worker_run(struct worker_cli *o, const struct cli_parsed *parsed)
{
    int result = 1;
    worker *w = NULL;
    http_server *srv = NULL;
    char *url = NULL;
    struct cli_secrets s = {{0}};
    sigset_t stop;
    /* secrets first: a stuck read stays killable by SIGTERM until the mask */
    if ((result = cli__secrets_load(&cli__worker_role, o, parsed, &s)) != 0)
        goto out;
    cli__block_stop_signals(&stop);
    const char *secret = s.value[CLI_CLUSTER_SECRET];
    const char *listen = worker_listen(o, secret);
    if (!listen) {
        result = CLI_EXIT_USAGE;
        goto out;
    }
    if ((result = worker_start_all(o, listen, secret, &w, &srv, &url)) != 0)
        goto out;
    cli__log_listening(listen, http_server_port(srv));
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
    fr_big_release(); /* the blocks kept for reuse (common_mem.c) */
    free(url);
    cli__secrets_cleanup(&s);
    return result;
}

int cli_worker(int argc, char **argv, char **envp)
{
    struct worker_cli o = {.port = 8081, .log_level = "info", .data_dir = "./data"};
    struct cli_parsed parsed;
    int rc = cli__parse(argc, argv, &cli__worker_role, &o, &parsed);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    rc = worker_validate(&o);
    if (rc != 0)
        return rc;
    cli__check_env(envp);
    cli__log_options(&cli__worker_role, &o);
    return worker_run(&o, &parsed);
}
