/* A tiny in-process HTTP server (libmicrohttpd on 127.0.0.1, an ephemeral
 * port) for tests of HTTP clients: the fixture collects each request (raw
 * URI with its query, method, body) and hands it to the test's handler. */
#ifndef FRAMED_TEST_MHD_FIXTURE_H
#define FRAMED_TEST_MHD_FIXTURE_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"

/* One request; owned by the fixture, valid during the handler call. */
struct mhd_request {
    char *uri; /* as sent, with the query string */
    const char *method;
    struct fr_buf body;
    struct MHD_Connection *conn;
    bool started;
};

typedef enum MHD_Result (*mhd_fixture_handler)(void *cls, struct mhd_request *rq);

struct mhd_fixture {
    struct MHD_Daemon *daemon;
    uint16_t port;
    char base_url[64]; /* http://127.0.0.1:<port> */
    mhd_fixture_handler handler;
    void *cls;
};

static inline void *mhd_fixture_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    struct mhd_request *rq = fr_xcalloc(1, sizeof(*rq));
    rq->uri = fr_xstrdup(uri);
    rq->conn = conn;
    fr_buf_init(&rq->body);
    return rq;
}

static inline enum MHD_Result mhd_fixture_on_access(void *cls, struct MHD_Connection *conn,
                                                    const char *url, const char *method,
                                                    const char *version, const char *upload,
                                                    size_t *upload_size, void **con_cls)
{
    (void)url;
    (void)version;
    (void)conn;
    struct mhd_fixture *f = cls;
    struct mhd_request *rq = *con_cls;
    if (!rq->started) {
        rq->started = true;
        rq->method = method;
        return MHD_YES;
    }
    if (*upload_size) {
        fr_buf_append(&rq->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return f->handler(f->cls, rq);
}

static inline void mhd_fixture_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                            enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct mhd_request *rq = *con_cls;
    if (!rq)
        return;
    free(rq->uri);
    fr_buf_cleanup(&rq->body);
    free(rq);
    *con_cls = NULL;
}

/* Returns 0, or -1 when the daemon did not start. */
static inline int mhd_fixture_start(struct mhd_fixture *f, mhd_fixture_handler handler, void *cls)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->handler = handler;
    f->cls = cls;
    f->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                         mhd_fixture_on_access, f, MHD_OPTION_URI_LOG_CALLBACK, mhd_fixture_on_uri,
                         f, MHD_OPTION_NOTIFY_COMPLETED, mhd_fixture_on_completed, f,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
    if (!f->daemon)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->daemon, MHD_DAEMON_INFO_BIND_PORT);
    f->port = info ? info->port : 0;
    snprintf(f->base_url, sizeof(f->base_url), "http://127.0.0.1:%u", (unsigned)f->port);
    return f->port ? 0 : -1;
}

static inline void mhd_fixture_stop(struct mhd_fixture *f)
{
    if (f->daemon)
        MHD_stop_daemon(f->daemon);
    f->daemon = NULL;
}

/* Queues a response with a copy of body; config_id/content_type may be NULL. */
static inline enum MHD_Result mhd_fixture_reply(struct MHD_Connection *conn, unsigned status,
                                                const char *content_type, const void *body,
                                                size_t len, const char *config_id)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (content_type)
        MHD_add_response_header(r, "Content-Type", content_type);
    if (config_id)
        MHD_add_response_header(r, "Framed-Config-Id", config_id);
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static inline const char *mhd_fixture_header(const struct mhd_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static inline uint16_t mhd_fixture_closed_port(void)
{
    struct sockaddr_in addr;
    socklen_t alen = sizeof(addr);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) != 0)
        addr.sin_port = 0;
    close(fd);
    return ntohs(addr.sin_port);
}

#endif
