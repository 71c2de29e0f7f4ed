/* cli_common: what serve and worker share once their flags are read: the
 * shared checks, the "listening" line the tests and operators read, the
 * signal set-up, and the loopback test of a listen address. */
#include "cli.h"

#include "common/common.h"

#include <jansson.h>

#include <netdb.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

int cli__check_shared(int64_t port, int64_t threads, const char *log_level)
{
    if (port > 65535) {
        fprintf(stderr, "framed: --port must be 0..65535\n");
        return CLI_EXIT_USAGE;
    }
    if (threads > 4096) {
        fprintf(stderr, "framed: --threads must be at most 4096\n");
        return CLI_EXIT_USAGE;
    }
    if (fr_log_level_parse(log_level, &fr_log_threshold) != 0) {
        fprintf(stderr, "framed: --log-level must be debug, info, warn or error\n");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

void cli__log_listening(const char *addr, int port)
{
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "ts", ts, "level", "info", "msg",
                             "listening", "address", addr, "port", port, "version", FRAMED_VERSION);
    char *text = line ? fr_json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        fr_log_json_line(text);
    free(text);
    json_decref(line);
}

/* Blocks the stop signals in every thread (those started later inherit the
 * mask) so that only sigwait in the main thread sees them: no handler and
 * no global flag needed. */
void cli__block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a full file-size limit: write fails with EFBIG (507) */
}

/* The text proves nothing: "127.example.com" may be any host. A numeric
 * address is taken as it is; "[::1]" loses its brackets first. */
int cli__is_loopback_address(const char *addr, const char **why)
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
