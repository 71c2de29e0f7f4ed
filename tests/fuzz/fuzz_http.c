/* fuzz_http: the request target (path, percent-decoding, route match, path
 * parameters such as dataset names and IDs) and the query string (format,
 * offset, limit, force, ...) of the coordinator, through the real server:
 * libmicrohttpd and framed's routes in this process, one request per input
 * over loopback. The first input byte picks the method; the rest is the
 * target. "{D}", "{Q}" and "{C}" in a GET target become the IDs of a real
 * dataframe, query and frozen config made at start, so the routes behind
 * them are reached. DELETE targets always sit under /v1/datasets/, and the
 * datasets are restored after each input, so inputs stay independent.
 * Findings: a crash (ASan/UBSan), a 5xx, no answer (-timeout), a deleted
 * file outside the data dir, or the bytes of a file outside the data and
 * static dirs in a reply. */
#include "fuzz_util.h"
#include "http/http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define CANARY "FRAMED-FUZZ-CANARY-7f3a"

static int port;
static char ids[3][128]; /* {D}, {Q}, {C} */
static const uint8_t trips[] = "id,name,fare\n1,a,2.5\n2,b,\n3,\"c,d\",7\n";

/* Waits for an interrupted connect to complete; aborts if it failed. */
static void connect_finish(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    while (poll(&p, 1, 10000) < 0 && errno == EINTR)
        ;
    int e = 0;
    socklen_t n = sizeof(e);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &n) != 0 || e != 0) {
        fprintf(stderr, "fuzz_http: connect: %s\n", strerror(e));
        abort();
    }
}

/* Sends a request and reads the reply into *resp (up to 1 MiB, or the
 * headers only for an event stream). Returns the status, or -1 on timeout. */
static int roundtrip(const char *req, size_t n, struct fr_buf *resp)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    FUZZ_CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Thousands of requests a second would fill one address's port range
     * with TIME_WAIT connections: close with a reset, and spread the
     * client side over 127.0.0.2-251 (all of 127/8 is loopback). */
    static unsigned next_src;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + next_src++ % 250);
    FUZZ_CHECK(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
    int tries = 0;
    while (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (errno == EINTR) { /* libFuzzer's SIGALRM: the connect goes on */
            connect_finish(fd);
            break;
        }
        if ((errno != EADDRNOTAVAIL && errno != EAGAIN) || ++tries == 100) {
            fprintf(stderr, "fuzz_http: connect: %s\n", strerror(errno));
            abort();
        }
        usleep(10000);
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* the server may close early on a malformed request */
        off += (size_t)w;
    }
    int status = -1;
    char buf[65536];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        /* Longer than libFuzzer's -timeout, which reports a hang first;
         * its SIGALRM interrupts the wait, so EINTR waits again. */
        int ready = poll(&p, 1, 60000);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready != 1)
            break; /* no answer: status stays -1 */
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            status = 0;
            break;
        }
        fr_buf_append(resp, buf, (size_t)r);
        if (resp->len > (1 << 20) || strstr(resp->data, "text/event-stream")) {
            status = 0;
            break;
        }
    }
    close(fd);
    if (status == 0 && resp->len > 12 && strncmp(resp->data, "HTTP/1.", 7) == 0)
        status = atoi(resp->data + 9);
    return status;
}

/* The JSON body of a reply (new), or NULL. */
static json_t *reply_json(const struct fr_buf *resp)
{
    const char *body = resp->data ? strstr(resp->data, "\r\n\r\n") : NULL;
    return body ? json_loads(body + 4, 0, NULL) : NULL;
}

static void call(const char *method, const char *target, const char *body, const char *member,
                 char *out, size_t outsz)
{
    struct fr_buf req, resp;
    fr_buf_init(&req);
    fr_buf_init(&resp);
    fr_buf_printf(&req,
                  "%s %s HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n"
                  "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                  method, target, strlen(body), body);
    int status = roundtrip(req.data, req.len, &resp);
    json_t *j = reply_json(&resp);
    const char *v = json_string_value(json_object_get(j, member));
    if (status < 200 || status > 299 || !v) {
        fprintf(stderr, "fuzz_http: setup %s %s failed: %s\n", method, target, resp.data);
        abort();
    }
    snprintf(out, outsz, "%s", v);
    json_decref(j);
    fr_buf_cleanup(&req);
    fr_buf_cleanup(&resp);
}

static void restore_datasets(void)
{
    fuzz_write_file("data/trips.csv", trips, sizeof(trips) - 1);
    static const uint8_t nd[] = "{\"v\":\"a\",\"n\":1}\n{\"v\":\"b\",\"n\":null}\n";
    fuzz_write_file("data/vendors.ndjson", nd, sizeof(nd) - 1);
}

static void setup(void)
{
    fr_log_threshold = FR_LOG_ERROR;
    char data[512], state[512], static_dir[512];
    snprintf(data, sizeof(data), "%s/data", fuzz_dir());
    snprintf(state, sizeof(state), "%s/state", fuzz_dir());
    snprintf(static_dir, sizeof(static_dir), "%s/static", FRAMED_SOURCE_DIR);
    FUZZ_CHECK(mkdir(data, 0700) == 0 && mkdir(state, 0700) == 0);
    restore_datasets();
    fuzz_write_file("outside.csv", (const uint8_t *)"x\n" CANARY "\n", strlen(CANARY) + 3);
    struct ctx_options co = {.data_dir = data, .state_dir = state, .threads = 1};
    ctx *c = NULL;
    struct fr_error err;
    fr_error_init(&err);
    FUZZ_CHECK(ctx_new(&co, NULL, &c, &err) == FR_OK);
    struct http_options ho = {.listen_addr = "127.0.0.1",
                              .threads = 1,
                              .max_body_bytes = 1 << 20,
                              .max_upload_bytes = 1 << 20,
                              .static_dir = static_dir};
    http_server *srv = NULL;
    FUZZ_CHECK(http_server_start(c, &ho, &srv, &err) == FR_OK);
    port = http_server_port(srv);
    /* The server lives until the process exits. */
    call("POST", "/v1/dataframes", "{\"source\":{\"dataset\":\"trips\"},\"ops\":[]}", "id", ids[0],
         sizeof(ids[0]));
    char body[256];
    snprintf(body, sizeof(body), "{\"dataframe\":\"%s\"}", ids[0]);
    call("POST", "/v1/queries?wait=60", body, "id", ids[1], sizeof(ids[1]));
    call("GET", "/v1/runner", "", "config_id", ids[2], sizeof(ids[2]));
}

/* Appends the target, with the placeholders replaced when allowed. */
static void put_target(struct fr_buf *req, const uint8_t *t, size_t n, bool substitute)
{
    static const char *const marks[] = {"{D}", "{Q}", "{C}"};
    for (size_t i = 0; i < n; i++) {
        int m = -1;
        for (int k = 0; substitute && k < 3 && m < 0; k++)
            if (n - i >= 3 && memcmp(t + i, marks[k], 3) == 0)
                m = k;
        if (m >= 0) {
            fr_buf_puts(req, ids[m]);
            i += 2;
        } else {
            fr_buf_putc(req, (char)t[i]);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!port)
        setup();
    if (size < 1)
        return 0;
    static const char *const methods[] = {"GET", "HEAD", "DELETE", "OPTIONS"};
    const char *method = methods[data[0] & 3];
    bool del = strcmp(method, "DELETE") == 0;
    struct fr_buf req, resp;
    fr_buf_init(&req);
    fr_buf_init(&resp);
    fr_buf_printf(&req, "%s %s", method, del ? "/v1/datasets/" : "");
    put_target(&req, data + 1, size - 1, !del);
    fr_buf_puts(&req, " HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n");
    int status = roundtrip(req.data, req.len, &resp);
    if (status < 0 || status >= 500) {
        fprintf(stderr, "fuzz_http: status %d for %s\nreply: %.2000s\n", status, req.data,
                resp.data ? resp.data : "");
        abort();
    }
    /* A 404 may echo the target, escaped: "%0fRAMED-FUZZ-CANARY" comes back
     * as "\u000FRAMED-FUZZ-CANARY". The canary counts only when no part of
     * its tail was sent. */
    FUZZ_CHECK(!resp.data || memmem(req.data, req.len, "FUZZ-CANARY", 11) ||
               !memmem(resp.data, resp.len, CANARY, strlen(CANARY)));
    char outside[600];
    snprintf(outside, sizeof(outside), "%s/outside.csv", fuzz_dir());
    struct stat st;
    FUZZ_CHECK(stat(outside, &st) == 0);
    if (del)
        restore_datasets();
    fr_buf_cleanup(&req);
    fr_buf_cleanup(&resp);
    return 0;
}
