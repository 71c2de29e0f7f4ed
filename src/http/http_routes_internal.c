/* http_routes_internal: the coordinator's internal endpoint that serves
 * dataset bytes by HTTP Range (RFC 9110 section 14) to the workers of its
 * runner that have no copy of the data: GET /v1/internal/datasets?path=REL.
 * Signed like every cluster call, under the runner's config, streamed from
 * the file (never loaded whole). api/internal-protocol.md has the rules. */
#include "http_int.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool peer_is_loopback(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return fr_sockaddr_is_loopback(info ? info->client_addr : NULL);
}

/* Without a cluster secret the bytes go only to processes on this machine
 * (as announces), unless serve --insecure. */
static void datasets_head(struct http_request *req)
{
    const char *secret = ctx_cluster_secret(req->ctx);
    if ((!secret || !secret[0]) && !http__server_insecure(req->srv) && !peer_is_loopback(req->conn))
        http__reply_problem(req, FR_EINVAL, "unauthorized",
                            "without a cluster secret only workers on this machine may read "
                            "dataset bytes; set FRAMED_CLUSTER_SECRET on every process (or start "
                            "the coordinator with --insecure)");
}

/* True when the comma-separated entity tags of value hold etag (or "*"). */
static bool etag_listed(const char *value, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = value; *p;) {
        p += strspn(p, " \t,");
        size_t k = strcspn(p, ",");
        size_t t = k;
        while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
            t--;
        if ((t == 1 && p[0] == '*') || (t == n && strncmp(p, etag, n) == 0))
            return true;
        p += k;
    }
    return false;
}

static void reply_unsatisfiable(struct http_request *req, enum fr_range_kind kind, int64_t size,
                                const char *etag)
{
    const char *why = kind == FR_RANGE_MULTIPLE ? "one range per request: bytes=a-b, a- or -n"
                      : kind == FR_RANGE_INVALID
                          ? "the Range header is not bytes=a-b, bytes=a- or bytes=-n (a <= b)"
                          : "the range lies outside the file";
    http__reply_problem(req, FR_EINVAL, "range-not-satisfiable", "%s (the file has %lld bytes)",
                        why, (long long)size);
    char cr[48];
    snprintf(cr, sizeof(cr), "bytes */%lld", (long long)size);
    http__add_header(req, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
}

/* A response's read of its file: pread at start + pos. A file cut shorter
 * than the bytes promised ends the response with an error (MHD closes the
 * connection at once: the worker sees the cut, not a stall). */
#define BYTES_READ_BLOCK (256 * 1024)
struct bytes_reader {
    int fd; /* owned */
    int64_t start, len;
};

static ssize_t bytes_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct bytes_reader *b = cls;
    if ((int64_t)pos >= b->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if ((uint64_t)max > (uint64_t)(b->len - (int64_t)pos))
        max = (size_t)(b->len - (int64_t)pos);
    ssize_t n;
    do
        n = pread(b->fd, buf, max, (off_t)(b->start + (int64_t)pos));
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        FR_LOG(FR_LOG_WARN, "a dataset file ended %lld bytes into a range of %lld: %s",
               (long long)pos, (long long)b->len, n < 0 ? strerror(errno) : "cut shorter");
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return n;
}

static void bytes_free(void *cls)
{
    struct bytes_reader *b = cls;
    close(b->fd);
    free(b);
}

/* The file's bytes [start, end) from fd (stolen) as status 200 or 206. */
static void reply_bytes(struct http_request *req, int fd, int64_t start, int64_t end, int64_t size,
                        bool partial, const char *etag)
{
    struct bytes_reader *b = fr_xcalloc(1, sizeof(*b));
    *b = (struct bytes_reader){.fd = fd, .start = start, .len = end - start};
    struct MHD_Response *r = MHD_create_response_from_callback(
        (uint64_t)(end - start), BYTES_READ_BLOCK, bytes_read, b, bytes_free);
    if (!r) {
        bytes_free(b);
        http__reply_problem(req, FR_EINTERNAL, "internal", "cannot stream the file");
        return;
    }
    http__reply_response(req, partial ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, r, end - start);
    http__add_header(req, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    http__add_header(req, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
    http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (partial) {
        char cr[80];
        snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld", (long long)start, (long long)(end - 1),
                 (long long)size);
        http__add_header(req, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
}

static const char *config_id_of(struct http_request *req)
{
    const char *id = http__header(req, FR_CONFIG_ID_HEADER);
    if (!id || !*id || !fr_config_id_valid(id)) {
        http__reply_problem(
            req, FR_EINVAL, "missing-config-id",
            "dataset bytes are read under the runner's config: send " FR_CONFIG_ID_HEADER
            ": sha256:<64 lowercase hex>");
        return NULL;
    }
    return id;
}

static void datasets_get(struct http_request *req)
{
    req->log_debug = true; /* one line per 8 MiB block of every scan */
    const char *id = config_id_of(req), *rel = http__query(req, "path");
    if (!id)
        return;
    if (!rel || !*rel) {
        http__reply_problem(req, FR_EINVAL, "invalid-parameter",
                            "path=<file relative to the data dir> is required");
        return;
    }
    int fd = -1;
    int64_t size = 0, mtime = 0, start = 0, end = 0;
    struct ctx_error err;
    ctx_error_init(&err);
    if (ctx_dataset_bytes_open(req->ctx, id, rel, &fd, &size, &mtime, &err) != FR_OK) {
        http__reply_error(req, &err);
        ctx_error_cleanup(&err);
        return;
    }
    ctx_error_cleanup(&err);
    char etag[FR_ETAG_MAX];
    fr_etag_of(size, mtime, etag);
    const char *if_match = http__header(req, MHD_HTTP_HEADER_IF_MATCH);
    const char *if_range = http__header(req, MHD_HTTP_HEADER_IF_RANGE);
    if (if_match && !etag_listed(if_match, etag)) {
        close(fd);
        http__reply_problem(req, FR_EINVAL, "precondition-failed",
                            "the file changed: it is %s now, not %.100s", etag, if_match);
        http__add_header(req, MHD_HTTP_HEADER_ETAG, etag);
        http__add_header(req, FR_CONFIG_ID_HEADER, id);
        return;
    }
    /* If-Range (RFC 9110 13.1.5): a range of another version is not asked
     * for; the whole file answers. Only entity tags are compared. */
    const char *range =
        if_range && strcmp(if_range, etag) != 0 ? NULL : http__header(req, MHD_HTTP_HEADER_RANGE);
    enum fr_range_kind kind = fr_range_parse(range, size, &start, &end);
    if (kind == FR_RANGE_NONE) {
        reply_bytes(req, fd, 0, size, size, false, etag);
    } else if (kind == FR_RANGE_ONE) {
        reply_bytes(req, fd, start, end, size, true, etag);
    } else {
        close(fd);
        reply_unsatisfiable(req, kind, size, etag);
    }
    http__add_header(req, FR_CONFIG_ID_HEADER, id);
}

void http__routes_internal_register(struct http__router *r)
{
    static const struct http__route datasets = {"GET", "/v1/internal/datasets", datasets_get,
                                                false, HTTP_BODY_NONE,          NULL};
    http__router_add_signed_limited(r, &datasets, 0, datasets_head);
}
