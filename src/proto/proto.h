/* proto: the client side of the coordinator<->worker protocol, shared by the
 * remote runner (its tasks, partition fetches and releases) and the worker
 * (inputs from its peers). It builds on common's HTTP client (signing, the
 * config-ID header and its echo) and adds what the protocol means: who calls
 * under which config, the echo check, partition fetch, timeouts, and the one
 * mapping of a worker's problem answer to a status. proto -> common only. */
#ifndef FRAMED_PROTO_H
#define FRAMED_PROTO_H

#include "../common/common.h"

/* Timeouts of the protocol's calls (a task's is its task_timeout_ms plus
 * PROTO_TASK_GRACE_MS, so the worker's own timeout answers first). */
#define PROTO_FETCH_TIMEOUT_MS 120000
#define PROTO_DROP_TIMEOUT_MS 5000
#define PROTO_RELEASE_TIMEOUT_MS 3000
#define PROTO_TASK_GRACE_MS 5000
/* How long a worker remembers that the store does not hold a config ID (it
 * answers config-not-found without a fetch meanwhile); a coordinator that put
 * the config back waits this long before it sends the task again. */
#define PROTO_CONFIG_NEGATIVE_TTL_MS 1000
/* Bounds of the tracing IDs a worker accepts (printable ASCII, no spaces). */
#define PROTO_TRACE_ID_MAX FR_TRACE_ID_MAX

/* Who calls, under which config: every string borrowed for the call. */
struct proto_peer {
    const char *config_id;  /* required: sent and checked in the echo */
    const char *secret;     /* NULL = unsigned */
    const char *sender;     /* Framed-Sender when signing */
    const char *request_id; /* the coordinator request behind the call, or NULL */
    const char *query_id;   /* the query behind the call, or NULL */
    /* partition fetches: the codecs the config's partition_codecs name, as
     * an Accept-Encoding value ("lz4, zstd"), or NULL for none */
    const char *codecs;
};

/* Fills *req for a call of peer to url (all borrowed). */
void proto_req_init(struct fr_client_req *req, const struct proto_peer *peer, const char *method,
                    const char *url);

/* True when the answer echoes config_id (an answer for another config, or
 * none, must not be used). */
bool proto_echo_ok(const struct fr_client_resp *resp, const char *config_id);

/* The status a worker's HTTP answer code stands for, by the rule of the HTTP
 * edge's problem table read backwards (404 -> FR_ENOTFOUND, 507 ->
 * FR_EMEMLIMIT, ...); 5xx without a better match -> FR_EINTERNAL. */
int proto_status_of_http(long http);

/* A worker's problem answer (body of HTTP code http from worker) into err:
 * its kind, detail and location kept; the status by proto_status_of_http.
 * Returns err->status. */
int proto_problem_to_error(const struct fr_buf *body, long http, const char *worker,
                           struct fr_error *err);

/* GET {owner}/v1/partitions/{id} under peer's config: *out (the serialized
 * table) on FR_OK. On entry *out is empty or memory to write the answer into
 * (its bytes dropped), as a worker keeps for its next fetch; on an error it
 * is left empty. A non-200 answer becomes its problem's error;
 * an answer for another config is refused (FR_EDATA config-mismatch). The
 * call lasts at most timeout_ms (0 = PROTO_FETCH_TIMEOUT_MS): a worker
 * passes what is left of its task's deadline, so an owner that does not
 * answer costs the task its own timeout, not more. */
int proto_fetch_partition(const struct proto_peer *peer, const char *owner, const char *id,
                          int64_t max_bytes, int64_t timeout_ms, struct fr_buf *out,
                          struct fr_error *err);
/* The same for rows [offset, offset + limit) of the partition alone
 * (?offset=&limit=: a table of those rows); offset < 0: the whole of it. */
int proto_fetch_partition_rows(const struct proto_peer *peer, const char *owner, const char *id,
                               int64_t offset, int64_t limit, int64_t max_bytes, int64_t timeout_ms,
                               struct fr_buf *out, struct fr_error *err);

/* DELETE {worker}/v1/configs/{config_id}: the worker drops the config and the
 * partitions made under it. FR_OK when it confirmed. */
int proto_release_config(const struct proto_peer *peer, const char *worker, struct fr_error *err);

/* Range reads of a dataset file from the coordinator (GET
 * {coordinator}/v1/internal/datasets?path=<rel>, api/internal-protocol.md).
 * A block is at most PROTO_RANGE_BLOCK_MAX bytes; each call has
 * PROTO_RANGE_TIMEOUT_MS (and fails sooner when less than 1 KiB/s arrives
 * for 5 s) and is tried PROTO_RANGE_ATTEMPTS times when no answer came or
 * the coordinator answered 5xx. */
#define PROTO_RANGE_BLOCK (8 << 20)
#define PROTO_RANGE_BLOCK_MAX (64 << 20)
#define PROTO_RANGE_TIMEOUT_MS 60000
#define PROTO_RANGE_ATTEMPTS 3
/* What a range read learned of the file. */
struct proto_range_info {
    int64_t total;              /* the file's size now */
    char etag[FR_ETAG_MAX + 8]; /* its entity tag now */
};
/* Reads up to len bytes at off of rel into buf under peer's config;
 * *got < len only at the end of the file. if_match (NULL = none) is the
 * file's expected ETag: a file that changed is FR_ECONFLICT kind
 * dataset-changed. Checked: the config echo, the 206's Content-Range (it
 * starts at off, holds exactly the bytes received), the total. Past the end:
 * FR_OK with *got 0. Other answers become their problem's error. */
/* handle: as fr_client_range_get's (a connection kept by the caller's
 * thread; NULL for none). ab (NULL = none): the read gives up, without
 * retrying, as soon as ab->abort(ab->arg) is true (the task's deadline, a
 * worker that stops): FR_ECANCELLED. */
struct proto_range_abort {
    bool (*abort)(void *arg);
    void *arg;
};
int proto_read_range(const struct proto_peer *peer, const char *coordinator, const char *rel,
                     int64_t off, size_t len, const char *if_match, char *buf, size_t *got,
                     void **handle, struct proto_range_info *info,
                     const struct proto_range_abort *ab, struct fr_error *err);

/* True when id is a partition ID: "p-" and 1-64 lower-case hex digits (it
 * goes into a URL path). NULL is not one. */
bool proto_partition_id_ok(const char *id);

/* True when a tracing ID from a header is acceptable: NULL (absent), or
 * 1..PROTO_TRACE_ID_MAX printable ASCII characters without spaces. */
bool proto_trace_id_ok(const char *id);

#endif
