/* proto_call: the protocol's calls on top of common's client: a request made
 * for a peer (config, signature, tracing IDs), the echo check, the one
 * mapping of a worker's problem answer to an error, partition fetch and the
 * release of a config. */
#include "proto.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void proto_req_init(struct fr_client_req *req, const struct proto_peer *peer, const char *method,
                    const char *url)
{
    *req = (struct fr_client_req){.method = method,
                                  .url = url,
                                  .config_id = peer->config_id,
                                  .secret = peer->secret,
                                  .sender = peer->sender,
                                  .request_id = peer->request_id,
                                  .query_id = peer->query_id};
}

bool proto_echo_ok(const struct fr_client_resp *resp, const char *config_id)
{
    return config_id && strcmp(resp->config_id, config_id) == 0;
}

int proto_status_of_http(long http)
{
    static const struct {
        long http;
        int status;
    } map[] = {
        {400, FR_EINVAL},    {401, FR_EINVAL},    {404, FR_ENOTFOUND},    {409, FR_ECONFLICT},
        {413, FR_ETOOLARGE}, {422, FR_EDATA},     {424, FR_EUNAVAILABLE}, {503, FR_EUNAVAILABLE},
        {504, FR_ETIMEOUT},  {507, FR_EMEMLIMIT},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].http == http)
            return map[i].status;
    return http >= 400 && http < 500 ? FR_EINVAL : FR_EINTERNAL;
}

/* The slug of a problem type URI (".../problems/<slug>"), bounded, or
 * "internal" when there is none usable. */
static void kind_of_type(const char *type, char *out, size_t outsz)
{
    const char *slash = type ? strrchr(type, '/') : NULL;
    const char *kind = slash && slash[1] ? slash + 1 : "internal";
    if (strspn(kind, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(kind))
        kind = "internal";
    snprintf(out, outsz, "%s", kind);
}

int proto_problem_to_error(const struct fr_buf *body, long http, const char *worker,
                           struct fr_error *err)
{
    json_t *p = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
    const char *detail = json_string_value(json_object_get(p, "detail"));
    char kind[sizeof(err->kind)];
    kind_of_type(json_string_value(json_object_get(p, "type")), kind, sizeof(kind));
    fr_error_setk(err, proto_status_of_http(http), kind, "%.400s (worker %.200s answered %ld)",
                  detail ? detail : "no detail", worker, http);
    const char *file = json_string_value(json_object_get(p, "file"));
    if (file)
        snprintf(err->file, sizeof(err->file), "%s", file);
    if (json_is_integer(json_object_get(p, "line")))
        err->line = json_integer_value(json_object_get(p, "line"));
    if (json_is_integer(json_object_get(p, "row_group")))
        err->row_group = json_integer_value(json_object_get(p, "row_group"));
    if (json_is_integer(json_object_get(p, "field_index")))
        err->column = json_integer_value(json_object_get(p, "field_index"));
    json_decref(p);
    return err->status;
}

int proto_fetch_partition(const struct proto_peer *peer, const char *owner, const char *id,
                          int64_t max_bytes, int64_t timeout_ms, struct fr_buf *out,
                          struct fr_error *err)
{
    return proto_fetch_partition_rows(peer, owner, id, -1, 0, max_bytes, timeout_ms, out, err);
}

int proto_fetch_partition_rows(const struct proto_peer *peer, const char *owner, const char *id,
                               int64_t offset, int64_t limit, int64_t max_bytes, int64_t timeout_ms,
                               struct fr_buf *out, struct fr_error *err)
{
    char *url = offset < 0 ? fr_xasprintf("%s/v1/partitions/%s", owner, id)
                           : fr_xasprintf("%s/v1/partitions/%s?offset=%lld&limit=%lld", owner, id,
                                          (long long)offset, (long long)limit);
    struct fr_client_req req;
    struct fr_client_resp resp;
    proto_req_init(&req, peer, "GET", url);
    req.timeout_ms = timeout_ms > 0 ? timeout_ms : PROTO_FETCH_TIMEOUT_MS;
    req.max_body_bytes = max_bytes;
    req.accept_encoding = peer->codecs;
    struct fr_buf room = *out; /* the caller's memory for the body, if any */
    fr_buf_init(out);
    req.body_room = &room;
    int rc = fr_client_call(&req, &resp, err);
    if (rc == FR_OK && resp.status != 200)
        rc = proto_problem_to_error(&resp.body, resp.status, owner, err);
    else if (rc == FR_OK && !proto_echo_ok(&resp, peer->config_id))
        rc = fr_error_setk(err, FR_EDATA, "config-mismatch",
                           "worker %.200s sent partition %.64s for config '%.80s', not '%.80s'",
                           owner, id, resp.config_id, peer->config_id);
    int codec = resp.content_encoding[0]
                    ? fr_codec_parse(resp.content_encoding, strlen(resp.content_encoding))
                    : FR_CODEC_NONE;
    if (rc == FR_OK && codec > FR_CODEC_NONE && !fr_codec_accepts(peer->codecs, codec))
        codec = -1; /* a coding it was not asked for is as unknown as one it cannot read */
    if (rc == FR_OK && codec < 0)
        rc = fr_error_set(err, FR_EDATA,
                          "worker %.200s sent partition %.64s in a coding not asked for: '%.31s'",
                          owner, id, resp.content_encoding);
    else if (rc == FR_OK && codec > FR_CODEC_NONE)
        rc = fr_decode((enum fr_codec)codec, resp.body.data, resp.body.len, max_bytes, out, err);
    else if (rc == FR_OK) {
        *out = resp.body; /* moved */
        fr_buf_init(&resp.body);
    }
    fr_client_resp_cleanup(&resp);
    free(url);
    return rc;
}

int proto_release_config(const struct proto_peer *peer, const char *worker, struct fr_error *err)
{
    char *url = fr_xasprintf("%s/v1/configs/%s", worker, peer->config_id);
    struct fr_client_req req;
    struct fr_client_resp resp;
    proto_req_init(&req, peer, "DELETE", url);
    req.timeout_ms = PROTO_RELEASE_TIMEOUT_MS;
    int rc = fr_client_call(&req, &resp, err);
    if (rc == FR_OK && resp.status != 200)
        rc = proto_problem_to_error(&resp.body, resp.status, worker, err);
    fr_client_resp_cleanup(&resp);
    free(url);
    return rc;
}

bool proto_trace_id_ok(const char *id)
{
    if (!id)
        return true;
    size_t n = strlen(id);
    if (n == 0 || n > PROTO_TRACE_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (id[i] <= ' ' || id[i] > '~')
            return false;
    return true;
}

bool proto_partition_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    return n > 2 && n <= 66 && strncmp(id, "p-", 2) == 0 &&
           strspn(id + 2, "0123456789abcdef") == n - 2;
}
