/* worker_heartbeat: the thread that announces the worker to its coordinator
 * (POST /v1/workers, signed when a secret is set) and repeats it as the
 * heartbeat. An unreachable coordinator is logged once, then retried quietly
 * until it answers again. Stops within one wait when asked. */
#include "worker_int.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEARTBEAT_TIMEOUT_MS 5000
/* The pace a coordinator's answer may set (heartbeat_ms): beyond it, kept. */
#define HEARTBEAT_MIN_MS 50
#define HEARTBEAT_MAX_MS 60000

/* Drops each config of a checked list (NULL: none) with its partitions put
 * up to mark (when the heartbeat left). */
static void release_all(worker *w, json_t *release, int64_t mark)
{
    size_t i;
    json_t *id;
    json_array_foreach(release, i, id)
    {
        int64_t dropped = 0;
        worker__config_drop_before(w, json_string_value(id), mark, NULL, &dropped);
        FR_LOG(FR_LOG_INFO,
               "the coordinator released config %s while this worker was away: dropped, with "
               "%lld partitions",
               json_string_value(id), (long long)dropped);
    }
}

/* Posts one heartbeat; true when the coordinator accepted it. A coordinator
 * may name configs to drop (a backstop for a missed DELETE /v1/configs). */
static bool beat(worker *w, const char *url, struct fr_error *err)
{
    json_t *body = worker__announce_body(w);
    /* after the body's running_tasks: a late task of a released config that
     * ended before it is below the mark, and a later runner is live already
     * when it put anything before it (so its config is not named) */
    int64_t mark = worker__partitions_mark(w);
    char *text = fr_json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct fr_client_req req = {.method = "POST",
                                .url = url,
                                .content_type = "application/json",
                                .body = text,
                                .body_len = text ? strlen(text) : 0,
                                .timeout_ms = HEARTBEAT_TIMEOUT_MS,
                                .secret = w->secret,
                                .sender = w->id};
    struct fr_client_resp resp;
    int rc = fr_client_call(&req, &resp, err);
    bool ok = rc == FR_OK && resp.status >= 200 && resp.status < 300;
    if (rc == FR_OK && !ok)
        fr_error_set(err, FR_EIO, "the coordinator answered %ld", resp.status);
    /* under a secret, only an answer signed for this request is acted on */
    bool trusted = !w->secret || fr_sign_answer_ok(w->secret, resp.nonce, resp.body.data,
                                                   resp.body.len, resp.answer_sig);
    if (ok && !trusted && !w->unsigned_answers) /* once, until a signed one comes */
        FR_LOG(FR_LOG_WARN, "the coordinator's heartbeat answer is not signed for this request "
                            "(Framed-Answer-Signature): the configs it names and its pace are "
                            "ignored");
    if (ok)
        w->unsigned_answers = !trusted;
    json_t *ack = ok && trusted ? json_loadb(resp.body.data, resp.body.len, 0, NULL) : NULL;
    json_t *release = json_object_get(ack, "release_config_ids");
    /* taken whole or not at all */
    if (release && !fr_config_id_list_ok(release, WORKER_ANNOUNCE_MAX_CONFIG_IDS))
        FR_LOG(FR_LOG_WARN,
               "the coordinator's heartbeat answer named configs to drop that are "
               "not a list of at most %d config IDs: nothing dropped",
               WORKER_ANNOUNCE_MAX_CONFIG_IDS);
    else
        release_all(w, release, mark);
    /* the coordinator's pace, within bounds (its states count its own beats) */
    json_int_t pace = json_integer_value(json_object_get(ack, "heartbeat_ms"));
    if (pace >= HEARTBEAT_MIN_MS && pace <= HEARTBEAT_MAX_MS)
        w->heartbeat_ms = pace;
    json_decref(ack);
    fr_client_resp_cleanup(&resp);
    free(text);
    return ok;
}

static void deadline_in(struct timespec *ts, int64_t ms)
{
    fr_mono_deadline(ts, ms); /* hb_cond counts on CLOCK_MONOTONIC */
}

/* The process keeps the memory tasks free for the next ones (main.c); once
 * no task has run or ended for WORKER_IDLE_TRIM_MS (jemalloc's default decay
 * of freed pages), it is handed back to the system, so an idle worker does
 * not hold a peak. Checked at each heartbeat. */
#define WORKER_IDLE_TRIM_MS 10000

struct idle_trim {
    int64_t seen;     /* tasks_ended at the last look */
    int64_t since_ms; /* when it last moved (monotonic) */
    int64_t trimmed;  /* tasks_ended at the last trim */
};

static void trim_when_idle(worker *w, struct idle_trim *it)
{
    fr_big_expire(); /* freed big blocks not reused for a while (a config drop's too) */
    pthread_mutex_lock(&w->slots_lock);
    int64_t ended = w->tasks_ended;
    bool quiet = w->running == 0;
    pthread_mutex_unlock(&w->slots_lock);
    int64_t now = fr_mono_ms();
    if (ended != it->seen || !quiet) {
        it->seen = ended;
        it->since_ms = now;
        return;
    }
    if (ended != it->trimmed && now - it->since_ms >= WORKER_IDLE_TRIM_MS) {
        worker__rooms_drop(w);
        fr_big_release(); /* the kept big blocks too */
        malloc_trim(0);
        it->trimmed = ended;
    }
}

static void *heartbeat_main(void *arg)
{
    worker *w = arg;
    char *url = fr_xasprintf("%s/v1/workers", w->coordinator);
    bool reachable = true;
    struct idle_trim it = {.since_ms = fr_mono_ms()};
    for (;;) {
        trim_when_idle(w, &it);
        struct fr_error err;
        fr_error_init(&err);
        bool ok = beat(w, url, &err);
        FR_LOG(FR_LOG_DEBUG, "heartbeat to %s: %s", w->coordinator, ok ? "ok" : err.message);
        if (!ok && reachable)
            FR_LOG(FR_LOG_WARN, "the coordinator at %s is unreachable (%s); retrying every %lld ms",
                   w->coordinator, err.message, (long long)w->heartbeat_ms);
        else if (ok && !reachable)
            FR_LOG(FR_LOG_INFO, "the coordinator at %s answers again", w->coordinator);
        reachable = ok;
        struct timespec ts;
        deadline_in(&ts, w->heartbeat_ms);
        pthread_mutex_lock(&w->hb_lock);
        int rc = 0;
        while (!w->hb_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w->hb_cond, &w->hb_lock, &ts);
        bool stop = w->hb_stop;
        pthread_mutex_unlock(&w->hb_lock);
        if (stop)
            break;
    }
    free(url);
    return NULL;
}

int worker__heartbeat_start(worker *w, struct fr_error *err)
{
    pthread_mutex_lock(&w->hb_lock);
    int rc = FR_OK;
    if (!w->hb_started) {
        w->hb_stop = false;
        if (pthread_create(&w->hb_thread, NULL, heartbeat_main, w) != 0)
            rc = fr_error_set(err, FR_EIO, "cannot start the heartbeat thread");
        else
            w->hb_started = true;
    }
    pthread_mutex_unlock(&w->hb_lock);
    return rc;
}

void worker__heartbeat_stop(worker *w)
{
    pthread_mutex_lock(&w->hb_lock);
    bool started = w->hb_started;
    w->hb_stop = true;
    w->hb_started = false;
    pthread_cond_broadcast(&w->hb_cond);
    pthread_mutex_unlock(&w->hb_lock);
    if (started)
        pthread_join(w->hb_thread, NULL);
}
