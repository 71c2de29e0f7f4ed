/* proto_range: a worker's range reads of a dataset file from the
 * coordinator (the workers that have no copy of the data): one block per
 * call, retried when no answer came, every answer checked against what was
 * asked (config echo, Content-Range, size, entity tag). */
#include "proto.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *range_url(const char *coordinator, const char *rel)
{
    char *esc = curl_easy_escape(NULL, rel, 0);
    char *url = fr_xasprintf("%s/v1/internal/datasets?path=%s", coordinator, esc ? esc : "");
    curl_free(esc);
    return url;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* An answer's bytes against the request: FR_OK, or FR_EDATA naming what is off. */
static int check_answer(const struct fr_range_resp *r, const char *rel, int64_t off, size_t len,
                        struct fr_error *err)
{
    if (r->base.status == 200) /* the whole file: only right when it starts at 0 */
        return off == 0 && r->got <= len
                   ? FR_OK
                   : fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                                   "the coordinator sent all of %.200s, not bytes from %lld", rel,
                                   (long long)off);
    if (r->first != off || r->last - r->first + 1 != (int64_t)r->got || r->total <= r->last)
        return fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                             "the coordinator's range of %.200s (bytes %lld-%lld/%lld, %zu "
                             "received) is not the one asked for (from %lld)",
                             rel, (long long)r->first, (long long)r->last, (long long)r->total,
                             r->got, (long long)off);
    if (r->got < len && r->last + 1 != r->total)
        return fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                             "a short read of %.200s: %zu bytes at %lld of %lld", rel, r->got,
                             (long long)off, (long long)r->total);
    return FR_OK;
}

/* One attempt: FR_OK with the bytes, or an error; *retry when trying again may help. */
static int attempt(const struct proto_peer *peer, const char *url, const char *coordinator,
                   const char *rel, int64_t off, size_t len, const char *if_match, char *buf,
                   size_t *got, void **handle, struct proto_range_info *info,
                   const struct proto_range_abort *ab, bool *retry, struct fr_error *err)
{
    struct fr_client_req req;
    struct fr_range_resp r;
    proto_req_init(&req, peer, "GET", url);
    req.timeout_ms = PROTO_RANGE_TIMEOUT_MS;
    if (ab) {
        req.abort = ab->abort;
        req.abort_arg = ab->arg;
    }
    *retry = false;
    int rc = fr_client_range_get(&req, off, len, if_match, buf, handle, &r, err);
    if (rc != FR_OK) {
        *retry = rc == FR_EIO || rc == FR_ETIMEOUT;
        goto out;
    }
    long st = r.base.status;
    if ((st == 200 || st == 206 || st == 416) && !proto_echo_ok(&r.base, peer->config_id)) {
        rc = fr_error_setk(err, FR_EDATA, "config-mismatch",
                           "the coordinator answered a range of %.200s for config '%.80s', not "
                           "'%.80s'",
                           rel, r.base.config_id, peer->config_id);
    } else if (st == 416 && r.total >= 0 && r.total <= off) {
        *got = 0; /* past the end */
        info->total = r.total;
        snprintf(info->etag, sizeof(info->etag), "%s", r.etag);
    } else if (st == 416) {
        rc = fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                           "the coordinator refused bytes from %lld of %.200s (416) though the "
                           "file has %lld bytes",
                           (long long)off, rel, (long long)r.total);
    } else if ((st == 200 || st == 206) && !r.etag[0]) {
        rc = fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                           "the coordinator's bytes of %.200s came without an ETag", rel);
    } else if (st == 200 && !if_match) {
        rc = fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                           "the coordinator sent all of %.200s (200), not a range, and its size "
                           "is not known to check it",
                           rel);
    } else if (st == 412) {
        rc = fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                           "%.200s changed on the coordinator while the task read it", rel);
    } else if (st == 200 || st == 206) {
        rc = check_answer(&r, rel, off, len, err);
        info->total = st == 200 ? (int64_t)r.got : r.total;
        snprintf(info->etag, sizeof(info->etag), "%s", r.etag);
        *got = r.got;
    } else {
        rc = proto_problem_to_error(&r.base.body, st, coordinator, err);
        *retry = st >= 500;
    }
out:
    fr_client_resp_cleanup(&r.base);
    return rc;
}

int proto_read_range(const struct proto_peer *peer, const char *coordinator, const char *rel,
                     int64_t off, size_t len, const char *if_match, char *buf, size_t *got,
                     void **handle, struct proto_range_info *info,
                     const struct proto_range_abort *ab, struct fr_error *err)
{
    *got = 0;
    if (len > PROTO_RANGE_BLOCK_MAX)
        len = PROTO_RANGE_BLOCK_MAX;
    char *url = range_url(coordinator, rel);
    int rc = FR_EIO;
    for (int i = 0; i < PROTO_RANGE_ATTEMPTS; i++) {
        bool retry = false;
        if (i > 0 && ab && ab->abort(ab->arg))
            break; /* err says why the last try failed */
        if (i > 0) {
            FR_LOG(FR_LOG_WARN, "range read of %s at %lld from %s failed (%s): retry %d", rel,
                   (long long)off, coordinator, err->message, i);
            sleep_ms(100 << i);
            fr_error_init(err);
        }
        rc = attempt(peer, url, coordinator, rel, off, len, if_match, buf, got, handle, info, ab,
                     &retry, err);
        if (rc == FR_OK || !retry)
            break;
    }
    free(url);
    return rc;
}
