/* runner_remote: the remote backend. One thread drives libcurl's multi
 * interface: tasks go to workers as POST /v1/tasks with the runner's config
 * ID in Framed-Config-Id (connections reused, every call timed out), picked
 * by free slots and by where their inputs live. A worker that fails a call
 * is avoided and the task retried elsewhere up to task_max_retries (a 401
 * too: a worker fault); an input on a worker that stopped beating is made
 * again elsewhere (runner_lost.c) or the driver reruns the plan. Partitions
 * stay on the workers; results and sort samples are fetched when needed. */
#include "runner_int.h"
#include "../proto/proto.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The body of a worker's answer to POST /v1/tasks (PLAN_MAX_BUCKETS outputs
 * take well under 1 MiB). */
#define REMOTE_MAX_ANSWER_BYTES (4 * 1024 * 1024)

struct transfer {
    struct rjob *job; /* NULL for a fire-and-forget DELETE */
    struct fr_client_xfer *x;
    char *url;  /* the worker */
    char *body; /* borrowed by x */
    struct fr_client_resp resp;
    struct transfer *next;
};

struct pending_delete {
    char *url; /* full URL of the resource to delete */
    char *worker;
    char request_id[FR_TRACE_ID_MAX + 1], query_id[64]; /* of the query that made it, "" if none */
    struct pending_delete *next;
};

struct remote_runner {
    struct runner base; /* first: a runner * is a struct remote_runner * */
    runner_registry *reg;
    char *secret;
    char *sender;
    char codecs_buf[32];
    const char *codecs; /* partition_codecs as Accept-Encoding (in codecs_buf), NULL = none */
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t lock; /* "remote lock": head/tail, deletes, stopping, counters */
    struct rjob *head, *tail;
    struct pending_delete *deletes, **deletes_end; /* oldest first; the last one's next */
    struct transfer *transfers;                    /* in flight: the loop thread only */
    bool stopping;
    int64_t tasks_sent, tasks_retried;
};

static void push_job(struct remote_runner *rr, struct rjob *job, bool front)
{
    job->next = NULL;
    if (front) {
        job->next = rr->head;
        rr->head = job;
        if (!rr->tail)
            rr->tail = job;
    } else {
        if (rr->tail)
            rr->tail->next = job;
        else
            rr->head = job;
        rr->tail = job;
    }
}

static void remote_enqueue(runner *r, struct rjob *job)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    pthread_mutex_lock(&rr->lock);
    job->waiting_since_ms = fr_mono_ms();
    push_job(rr, job, false);
    pthread_mutex_unlock(&rr->lock);
    curl_multi_wakeup(rr->multi);
}

static void free_transfer(struct transfer *t)
{
    fr_client_xfer_free(t->x);
    fr_client_resp_cleanup(&t->resp);
    free(t->body);
    free(t->url);
    free(t);
}

/* The protocol's identity of this runner's calls: rr's config and secret, and the
 * tracing IDs of the query behind the call (all borrowed; "" or NULL = none). */
static struct proto_peer peer_of(struct remote_runner *rr, const char *request_id,
                                 const char *query_id)
{
    return (struct proto_peer){.config_id = rr->base.frozen->id,
                               .secret = rr->secret,
                               .sender = rr->sender,
                               .request_id = request_id && request_id[0] ? request_id : NULL,
                               .query_id = query_id && query_id[0] ? query_id : NULL,
                               .codecs = rr->codecs};
}

/* A call on the multi handle, or NULL (logged) when it cannot be made. A
 * task answer is a small JSON object: a longer one fails the call (and the
 * task is retried elsewhere) before it can grow the buffer. */
static struct transfer *new_transfer(struct remote_runner *rr, const struct proto_peer *peer,
                                     const char *worker, const char *method, const char *url,
                                     char *body /* steals */, int64_t timeout_ms)
{
    struct transfer *t = fr_xcalloc(1, sizeof(*t));
    struct fr_client_req req;
    struct fr_error err;
    fr_error_init(&err);
    proto_req_init(&req, peer, method, url);
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.content_type = body ? "application/json" : NULL;
    req.timeout_ms = timeout_ms;
    req.max_body_bytes = REMOTE_MAX_ANSWER_BYTES;
    t->url = fr_xstrdup(worker);
    t->body = body;
    if (fr_client_xfer_new(&req, &t->resp, &t->x, &err) != FR_OK) {
        FR_LOG(FR_LOG_ERROR, "%s %s cannot be sent: %s", method, url, err.message);
        free_transfer(t);
        return NULL;
    }
    CURL *easy = fr_client_xfer_easy(t->x);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
    t->next = rr->transfers;
    rr->transfers = t;
    curl_multi_add_handle(rr->multi, easy);
    return t;
}

static json_t *inputs_json(const struct rjob *job)
{
    json_t *slots = json_array();
    for (int k = 0; k < job->nslots; k++) {
        json_t *refs = json_array();
        for (int i = 0; i < job->ninputs[k]; i++) {
            const struct runner_part *p = job->inputs[k][i];
            json_array_append_new(
                refs, json_pack("{ss ss}", "url", p->url ? p->url : "", "id", p->id ? p->id : ""));
        }
        json_array_append_new(slots, refs);
    }
    return slots;
}

static void start_task(struct remote_runner *rr, struct rjob *job, const char *worker)
{
    json_t *body = json_pack("{ss si si si sO so}", "query_id", job->q->id, "stage", job->stage,
                             "task", job->task, "attempt", job->attempt, "spec", job->spec,
                             "inputs", inputs_json(job));
    char *text = fr_json_dumps(body, JSON_COMPACT);
    json_decref(body);
    char *url = fr_xasprintf("%s/v1/tasks", worker);
    int64_t timeout = rr->base.frozen->values.task_timeout_ms + PROTO_TASK_GRACE_MS;
    struct proto_peer peer = peer_of(rr, job->q->request_id, job->q->id);
    struct transfer *t = new_transfer(rr, &peer, worker, "POST", url, text, timeout);
    free(url);
    if (!t) {
        runner__registry_done(rr->reg, worker, false);
        runner__fail_job(job, FR_EINTERNAL, "internal", "the task could not be sent to %s", worker);
        return;
    }
    t->job = job;
    char id[72];
    runner__registry_id_of(rr->reg, worker, id, sizeof(id));
    runner__task_begin(job, id[0] ? id : NULL, worker, -1);
    pthread_mutex_lock(&rr->lock);
    rr->tasks_sent++;
    pthread_mutex_unlock(&rr->lock);
}

/* Hands waiting jobs to workers with free slots, oldest first. */
static void dispatch(struct remote_runner *rr)
{
    pthread_mutex_lock(&rr->lock);
    struct rjob *list = rr->head;
    rr->head = rr->tail = NULL;
    bool stopping = rr->stopping;
    pthread_mutex_unlock(&rr->lock);
    int64_t patience = 10 * runner_registry_heartbeat_ms(rr->reg);
    if (patience > rr->base.frozen->values.task_timeout_ms)
        patience = rr->base.frozen->values.task_timeout_ms;
    while (list) {
        struct rjob *job = list;
        list = list->next;
        job->next = NULL;
        if (stopping || atomic_load(&job->q->cancel)) {
            runner__fail_job(job, FR_ECANCELLED, "query-cancelled", "the query was cancelled");
            continue;
        }
        if (job->not_before_ms > fr_mono_ms()) {
            pthread_mutex_lock(&rr->lock);
            push_job(rr, job, false);
            pthread_mutex_unlock(&rr->lock);
            continue;
        }
        struct runner_part *lost = runner__lapsed_input(rr->reg, job);
        const char *owner = lost ? lost->url : NULL;
        if (owner) /* what it holds of the runner is given up */
            runner__registry_owe_drop(rr->reg, owner, rr->base.frozen->id);
        if (owner && runner__repair_start(&rr->base, job, lost))
            continue;
        if (owner) { /* its inputs cannot be reached: rerun their producers */
            runner__fail_job(job, FR_EIO, "input-lost",
                             "an input partition of task %d of stage %d is on worker %s, whose "
                             "heartbeats stopped: it is treated as lost",
                             job->task, job->stage, owner);
            continue;
        }
        bool whole = false;
        const char *prefer = runner__input_owner(job, &whole);
        if (!job->scan_file)
            job->scan_file = runner__scan_key(job->spec);
        bool alive = false, held = false;
        /* RUNNER_LOCALITY_WAIT_MS: a task waits for a busy worker with its
         * file or inputs while that worker keeps finishing tasks */
        int64_t wait_since = (job->scan_file || whole) && !job->avoid_url ? job->local_wait_ms : -1;
        char *worker = runner__registry_pick(rr->reg, prefer, job->avoid_url, job->scan_file,
                                             wait_since, &held, &alive);
        if (held && !job->local_wait_ms)
            job->local_wait_ms = fr_mono_ms();
        if (alive)
            job->waiting_since_ms = fr_mono_ms(); /* patience counts from the last active worker */
        if (held) {                               /* it waits; the jobs behind it go on */
            pthread_mutex_lock(&rr->lock);
            push_job(rr, job, false);
            pthread_mutex_unlock(&rr->lock);
            continue;
        }
        if (worker) {
            start_task(rr, job, worker);
            free(worker);
        } else if (!alive && (fr_mono_ms() - job->waiting_since_ms > patience ||
                              runner__registry_live(rr->reg) == 0)) {
            runner__fail_job(job, FR_EUNAVAILABLE, "no-workers",
                             "no worker is available to run the task (start `framed worker "
                             "--coordinator ...` or check --workers)");
        } else {
            pthread_mutex_lock(&rr->lock); /* wait for a free slot, keeping the order */
            push_job(rr, job, false);
            while (list) {
                struct rjob *next = list->next;
                push_job(rr, list, false);
                list = next;
            }
            pthread_mutex_unlock(&rr->lock);
        }
    }
}

/* Sends job again (task_max_retries), else fails it. kind NULL: the worker
 * failed it (worker-lost), and the retry avoids that worker; a kind (the
 * worker's dataset-unavailable: it is serving, but the coordinator's bytes
 * changed or were cut under a range read) blames nobody and is what the
 * query says in the end, with why. */
static void retry_or_fail(struct remote_runner *rr, struct rjob *job, const char *worker,
                          const char *why, const char *kind)
{
    if (job->attempt < rr->base.frozen->values.task_max_retries && !atomic_load(&job->q->cancel)) {
        FR_LOG(FR_LOG_WARN, "task %d of stage %d of query %s failed on %s (%s): retry %d",
               job->task, job->stage, job->q->id, worker, why, job->attempt + 1);
        runner__task_retried(job, why);
        job->attempt++;
        if (!kind) {
            free(job->avoid_url);
            job->avoid_url = fr_xstrdup(worker);
        }
        pthread_mutex_lock(&rr->lock);
        rr->tasks_retried++;
        pthread_mutex_unlock(&rr->lock);
        remote_enqueue(&rr->base, job);
        return;
    }
    if (kind)
        runner__fail_job(job, FR_EUNAVAILABLE, kind, "%s; retries exhausted (task_max_retries)",
                         why);
    else
        runner__fail_job(job, FR_EUNAVAILABLE, "worker-lost",
                         "worker %s failed: %s; retries exhausted (task_max_retries)", worker, why);
}

/* A worker that cannot find the config in the store (the store lost the key:
 * Redis restarted without persistence, say): the runner puts its canonical
 * bytes back and the task is sent once more. True when it was requeued. */
static bool reput_and_retry(struct remote_runner *rr, struct rjob *job, struct fr_error *err)
{
    if (job->config_reput || strcmp(err->kind, "config-not-found") != 0)
        return false;
    job->config_reput = true;
    struct fr_error perr;
    fr_error_init(&perr);
    if (runner__config_reput(&rr->base, &perr) != FR_OK) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, err->status, "config-not-found",
                      "%.240s; putting the config back failed: %.240s", why, perr.message);
        return false;
    }
    runner__task_retried(job, err->message);
    FR_LOG(FR_LOG_WARN,
           "the store lost config %s: put back, task %d of stage %d of query %s sent again",
           rr->base.frozen->id, job->task, job->stage, job->q->id);
    job->not_before_ms = fr_mono_ms() + PROTO_CONFIG_NEGATIVE_TTL_MS; /* workers forget the miss */
    remote_enqueue(&rr->base, job);
    return true;
}

/* A worker's problem answer becomes the task's error, kind and location kept. */
static void task_problem(struct remote_runner *rr, struct transfer *t)
{
    struct fr_error err;
    fr_error_init(&err);
    proto_problem_to_error(&t->resp.body, t->resp.status, t->url, &err);
    if (runner__wait_for_owner(&rr->base, rr->reg, t->job, t->url, &t->resp.body, &err) ||
        reput_and_retry(rr, t->job, &err))
        return;
    runner__job_failed(t->job, &err);
}

/* A worker refused the coordinator's signature (401): a fault of that
 * worker (another secret, its clock), not of the query. The task is retried
 * elsewhere, the worker is suspect until it beats again, and its detail is
 * logged. */
static void unauthorized(struct remote_runner *rr, struct transfer *t)
{
    struct fr_error err;
    fr_error_init(&err);
    proto_problem_to_error(&t->resp.body, t->resp.status, t->url, &err);
    FR_LOG(FR_LOG_WARN, "worker %s refused the coordinator's signature: %s", t->url, err.message);
    retry_or_fail(rr, t->job, t->url, err.message, NULL);
}

/* A 200 answer: check its signature and the config echo, turn outputs into
 * partition refs. Under a cluster secret the answer must be signed for this
 * call (Framed-Answer-Signature): one that is not, or under another secret,
 * or for another call, is not the worker's (or not this cluster's), and the
 * task is retried elsewhere. */
static void task_succeeded(struct remote_runner *rr, struct transfer *t)
{
    if (rr->secret && rr->secret[0] &&
        !fr_sign_answer_ok(rr->secret, t->resp.nonce, t->resp.body.data, t->resp.body.len,
                           t->resp.answer_sig)) {
        FR_LOG(FR_LOG_WARN,
               "worker %s answered task %d of stage %d of query %s without a valid "
               "Framed-Answer-Signature: the answer is not taken",
               t->url, t->job->task, t->job->stage, t->job->q->id);
        retry_or_fail(rr, t->job, t->url,
                      "its answer was not signed under the cluster secret for this call", NULL);
        return;
    }
    json_t *body =
        json_loadb(t->resp.body.data ? t->resp.body.data : "", t->resp.body.len, 0, NULL);
    const char *cid = json_string_value(json_object_get(body, "config_id"));
    json_t *outs = json_object_get(body, "outputs");
    const char *want = rr->base.frozen->id;
    if (!body || !json_is_array(outs) || !cid || strcmp(cid, want) != 0 ||
        !proto_echo_ok(&t->resp, want)) {
        json_decref(body);
        runner__fail_job(
            t->job, FR_EINTERNAL, "config-mismatch",
            "worker %s answered for config '%s', not the runner's; the result is rejected", t->url,
            t->resp.config_id[0] ? t->resp.config_id : (cid ? cid : "(none)"));
        return;
    }
    const char *bad = runner__outputs_problem(outs);
    if (bad) {
        json_decref(body);
        retry_or_fail(rr, t->job, t->url, bad, NULL);
        return;
    }
    json_t *scan = json_object_get(body, "scan");
    t->job->scan_bytes = runner__answer_count(json_object_get(scan, "bytes"));
    const char *source = json_string_value(json_object_get(scan, "source"));
    if (source && t->job->scan_file && strcmp(source, "none") != 0)
        runner__registry_note_scan(rr->reg, t->url, t->job->scan_file,
                                   strcmp(source, "local") == 0);
    t->job->scan_rows = runner__answer_count(json_object_get(body, "source_rows"));
    size_t n = json_array_size(outs);
    struct runner_part **parts = fr_xcalloc(n + 1, sizeof(*parts));
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(outs, i);
        const char *id = json_string_value(json_object_get(o, "id"));
        if (!id)
            continue;
        parts[i] = runner__part_remote(t->url, id, json_integer_value(json_object_get(o, "rows")),
                                       json_integer_value(json_object_get(o, "bytes")));
        snprintf(parts[i]->request_id, sizeof(parts[i]->request_id), "%s", t->job->q->request_id);
        snprintf(parts[i]->query_id, sizeof(parts[i]->query_id), "%s", t->job->q->id);
    }
    if (t->job->repair_for)
        runner__repair_done(&rr->base, t->job, parts, (int)n);
    else
        runner__task_done(t->job, FR_OK, parts, (int)n, NULL,
                          json_integer_value(json_object_get(body, "null_errors")), cid);
    json_decref(body);
}

static void complete(struct remote_runner *rr, struct transfer *t, CURLcode code)
{
    struct fr_error err;
    fr_error_init(&err);
    if (fr_client_xfer_finish(t->x, (int)code, &err) != FR_OK && code == CURLE_OK)
        code = CURLE_RECV_ERROR;
    long status = t->resp.status;
    struct fr_error perr; /* a 503 that is the worker's answer about the data, not its absence */
    fr_error_init(&perr);
    bool data_unavailable = t->job && code == CURLE_OK && status == 503 &&
                            proto_problem_to_error(&t->resp.body, status, t->url, &perr) != FR_OK &&
                            strcmp(perr.kind, "dataset-unavailable") == 0;
    bool transport =
        !data_unavailable && (code != CURLE_OK || status == 0 || status == 503 || status == 502);
    /* A task that timed out waiting on an input whose owner stopped beating:
     * the owner is at fault, not the worker that ran it. */
    const struct runner_part *lost =
        t->job && code == CURLE_OPERATION_TIMEDOUT ? runner__lapsed_input(rr->reg, t->job) : NULL;
    const char *owner = lost ? lost->url : NULL;
    if (t->job) /* a DELETE never took a slot */
        runner__registry_done(rr->reg, t->url, (transport && !owner) || status == 401);
    if (t->job && code == CURLE_OK && status == 200) /* it answers: a holder worth waiting for */
        runner__registry_progress(rr->reg, t->url);
    /* A task or a drop timed out: owed only if its beats lapsed too (so a
     * drop that never landed on a hung worker is made good when it is back) */
    bool owed = code == CURLE_OPERATION_TIMEDOUT &&
                runner__registry_owe_drop(rr->reg, owner ? owner : t->url, rr->base.frozen->id);
    if (!t->job) {
        if (transport && !owed) /* a live worker keeps the partition until the runner goes */
            FR_LOG(FR_LOG_WARN,
                   "a partition drop on worker %s failed (%s): the partition stays there until "
                   "the runner is reset",
                   t->url, code != CURLE_OK ? curl_easy_strerror(code) : "it is not serving");
        free_transfer(t);
        return;
    }
    if (owner) { /* dispatch makes the input again, or the driver reruns */
        FR_LOG(FR_LOG_WARN,
               "task %d of stage %d of query %s timed out on %s waiting for an input on worker "
               "%s, whose heartbeats stopped",
               t->job->task, t->job->stage, t->job->q->id, t->url, owner);
        runner__task_retried(t->job, "timed out waiting for an input on a worker whose heartbeats "
                                     "stopped");
        remote_enqueue(&rr->base, t->job);
    } else if (status == 401)
        unauthorized(rr, t);
    else if (data_unavailable)
        retry_or_fail(rr, t->job, t->url, perr.message, "dataset-unavailable");
    else if (transport)
        retry_or_fail(rr, t->job, t->url,
                      code != CURLE_OK ? curl_easy_strerror(code) : "it is not serving", NULL);
    else if (status == 200)
        task_succeeded(rr, t);
    else
        task_problem(rr, t);
    free_transfer(t);
}

static void unlink_transfer(struct remote_runner *rr, struct transfer *t)
{
    for (struct transfer **pp = &rr->transfers; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            return;
        }
    }
}

/* Calls to a worker whose heartbeats stopped are abandoned (and retried). */
static void abandon_gone(struct remote_runner *rr)
{
    struct transfer *t = rr->transfers;
    while (t) {
        struct transfer *next = t->next;
        if (t->job && runner__registry_gone(rr->reg, t->url)) {
            curl_multi_remove_handle(rr->multi, fr_client_xfer_easy(t->x));
            unlink_transfer(rr, t);
            complete(rr, t, CURLE_OPERATION_TIMEDOUT);
        }
        t = next;
    }
}

/* Drops in flight to one worker at once. A drop is one call a partition, and
 * a query's shuffle leaves thousands of them when its stage is read: sent
 * at once, they opened as many connections from this address, past the
 * worker's limit for one address (250), and the worker refused them (left
 * behind) and everything else from here, the result read included, until
 * they closed. The rest wait their turn in rr->deletes. */
#define REMOTE_DROPS_PER_WORKER 8

struct drop_count {
    char *worker; /* a copy: pending drops are freed while it is compared */
    int n;        /* drops and releases in flight to it */
    bool skip;    /* its drops are not sent (see start_deletes) */
};

/* The entry of worker, added (with what the registry says of it, asked once
 * a pass) when new. */
static struct drop_count *drop_count_of(struct remote_runner *rr, struct drop_count **counts,
                                        int *ncounts, int *cap, const char *worker)
{
    for (int i = 0; i < *ncounts; i++)
        if (strcmp((*counts)[i].worker, worker) == 0)
            return &(*counts)[i];
    if (*ncounts == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *counts = fr_xrealloc(*counts, sizeof(**counts) * (size_t)*cap);
    }
    bool skip = false;
    if (!runner__registry_known(rr->reg, worker))
        skip = true; /* forgotten: nobody to tell */
    else if (runner__registry_gone(rr->reg, worker))
        skip = runner__registry_owe_drop(rr->reg, worker,
                                         rr->base.frozen->id); /* told to drop all when back */
    (*counts)[*ncounts] = (struct drop_count){.worker = fr_xstrdup(worker), .skip = skip};
    return &(*counts)[(*ncounts)++];
}

static void free_pending_delete(struct pending_delete *d)
{
    free(d->url);
    free(d->worker);
    free(d);
}

/* Starts the pending drops that fit under REMOTE_DROPS_PER_WORKER, oldest
 * first. None is sent once the runner stops (each worker drops the config
 * and its partitions at teardown), to a worker whose heartbeats stopped (it
 * owes a drop: told to drop all it holds of this runner when it is back) or
 * to one the registry forgot. */
static void start_deletes(struct remote_runner *rr)
{
    pthread_mutex_lock(&rr->lock);
    struct pending_delete *d = rr->deletes;
    rr->deletes = NULL;
    rr->deletes_end = &rr->deletes;
    bool stopping = rr->stopping;
    pthread_mutex_unlock(&rr->lock);
    if (!d)
        return;
    struct drop_count *counts = NULL;
    int ncounts = 0, cap = 0;
    for (struct transfer *t = rr->transfers; t && !stopping; t = t->next)
        if (!t->job) /* a drop or a release: both hold a connection */
            drop_count_of(rr, &counts, &ncounts, &cap, t->url)->n++;
    struct pending_delete *wait = NULL, **wait_end = &wait;
    while (d) {
        struct pending_delete *next = d->next;
        struct drop_count *c =
            stopping ? NULL : drop_count_of(rr, &counts, &ncounts, &cap, d->worker);
        if (c && !c->skip && c->n >= REMOTE_DROPS_PER_WORKER) { /* waits, in order */
            d->next = NULL;
            *wait_end = d;
            wait_end = &d->next;
            d = next;
            continue;
        }
        if (c && !c->skip) {
            struct proto_peer peer = peer_of(rr, d->request_id, d->query_id);
            if (new_transfer(rr, &peer, d->worker, "DELETE", d->url, NULL, PROTO_DROP_TIMEOUT_MS))
                c->n++;
        }
        free_pending_delete(d);
        d = next;
    }
    for (int i = 0; i < ncounts; i++)
        free(counts[i].worker);
    free(counts);
    if (!wait)
        return;
    pthread_mutex_lock(&rr->lock); /* the waiting ones first, then any pushed meanwhile */
    *wait_end = rr->deletes;
    if (!rr->deletes)
        rr->deletes_end = wait_end;
    rr->deletes = wait;
    pthread_mutex_unlock(&rr->lock);
}

/* A worker that hung and came back holds partitions (and maybe a task's
 * late output) that this runner gave up on: it drops the config and them. */
static void release_returned(struct remote_runner *rr)
{
    char **urls = runner__registry_take_returned(rr->reg, rr->base.frozen->id);
    for (int i = 0; urls && urls[i]; i++) {
        FR_LOG(FR_LOG_INFO,
               "worker %s is back after hanging: it drops config %s and its partitions", urls[i],
               rr->base.frozen->id);
        char *url = fr_xasprintf("%s/v1/configs/%s", urls[i], rr->base.frozen->id);
        struct proto_peer peer = peer_of(rr, NULL, NULL);
        new_transfer(rr, &peer, urls[i], "DELETE", url, NULL, PROTO_RELEASE_TIMEOUT_MS);
        runner__kept_mark_lost(&rr->base, urls[i]); /* made again when a query needs them */
        free(url);
        free(urls[i]);
    }
    free(urls);
}

static bool idle_and_stopping(struct remote_runner *rr)
{
    pthread_mutex_lock(&rr->lock);
    bool done = rr->stopping && !rr->head && !rr->deletes && !rr->transfers;
    pthread_mutex_unlock(&rr->lock);
    return done;
}

static void *loop_main(void *arg)
{
    struct remote_runner *rr = arg;
    while (!idle_and_stopping(rr)) {
        int running = 0;
        curl_multi_perform(rr->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(rr->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            struct transfer *t = NULL;
            CURLcode code = m->data.result;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            curl_multi_remove_handle(rr->multi, m->easy_handle);
            unlink_transfer(rr, t);
            complete(rr, t, code);
        }
        abandon_gone(rr);
        release_returned(rr);
        /* after the completions: the slots and drop places they freed are
         * used now, not after the next wake (up to 100 ms later) */
        dispatch(rr);
        start_deletes(rr);
        curl_multi_poll(rr->multi, NULL, 0, 100, NULL);
    }
    return NULL;
}

/* No longer than a task may take: the worker that made a partition in that
 * time and stops answering does not stall the query for PROTO_FETCH_TIMEOUT_MS. */
static int64_t fetch_timeout(const struct remote_runner *rr)
{
    int64_t timeout = rr->base.frozen->values.task_timeout_ms;
    return timeout > PROTO_FETCH_TIMEOUT_MS ? PROTO_FETCH_TIMEOUT_MS : timeout;
}

static int remote_fetch(runner *r, struct runner_part *p, int64_t max_bytes, struct fr_error *err)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    struct proto_peer peer = peer_of(rr, p->request_id, p->query_id);
    return runner__fetch_as(&peer, fetch_timeout(rr), p, max_bytes, err);
}

static void remote_fetcher(runner *r, struct runner_fetcher *f)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    f->config_id = fr_xstrdup(rr->base.frozen->id);
    f->secret = rr->secret ? fr_xstrdup(rr->secret) : NULL;
    f->sender = rr->sender ? fr_xstrdup(rr->sender) : NULL;
    f->codecs = rr->codecs ? fr_xstrdup(rr->codecs) : NULL;
    f->timeout_ms = fetch_timeout(rr);
    f->cap = runner__fetch_cap(r);
}

/* A result left on a worker is only as safe as that worker: one that
 * stopped beating, or does not answer its /livez within this, is gone. */
#define REMOTE_PROBE_TIMEOUT_MS 2000

static bool remote_gone(runner *r, const char *url)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    if (runner__registry_lapsed(rr->reg, url))
        return true;
    char *target = fr_xasprintf("%s/livez", url);
    struct proto_peer peer = peer_of(rr, NULL, NULL);
    struct fr_client_req req;
    struct fr_client_resp resp;
    struct fr_error err;
    fr_error_init(&err);
    proto_req_init(&req, &peer, "GET", target);
    req.timeout_ms = REMOTE_PROBE_TIMEOUT_MS;
    req.max_body_bytes = 4096;
    bool gone = fr_client_call(&req, &resp, &err) != FR_OK || resp.status != 200;
    fr_client_resp_cleanup(&resp);
    free(target);
    if (gone) {
        FR_LOG(FR_LOG_WARN, "worker %s holds result partitions but does not answer: %s", url,
               err.message[0] ? err.message : "not live");
        runner__registry_suspect(rr->reg, url);
    }
    return gone;
}

static void remote_drop(runner *r, struct runner_part *p)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    pthread_mutex_lock(&rr->lock);
    if (!rr->stopping) {
        struct pending_delete *d = fr_xcalloc(1, sizeof(*d));
        d->url = fr_xasprintf("%s/v1/partitions/%s", p->url, p->id);
        d->worker = fr_xstrdup(p->url);
        snprintf(d->request_id, sizeof(d->request_id), "%s", p->request_id);
        snprintf(d->query_id, sizeof(d->query_id), "%s", p->query_id);
        *rr->deletes_end = d; /* the oldest are sent first */
        rr->deletes_end = &d->next;
    }
    pthread_mutex_unlock(&rr->lock);
    curl_multi_wakeup(rr->multi);
}

/* One worker's release at teardown, on its own thread. */
struct release_call {
    struct proto_peer peer; /* borrowed */
    const char *url;        /* borrowed */
    pthread_t thread;
    bool started;
    int rc;
    struct fr_error err;
};

static void *release_main(void *arg)
{
    struct release_call *c = arg;
    fr_error_init(&c->err);
    c->rc = proto_release_config(&c->peer, c->url, &c->err);
    return NULL;
}

/* Teardown: every worker drops the config and the partitions made with it,
 * all at once: a hung worker adds one PROTO_RELEASE_TIMEOUT_MS to the reset,
 * not one per worker. */
static void release_on_workers(struct remote_runner *rr)
{
    const char *id = rr->base.frozen->id;
    int gone = 0;
    char **urls = runner__registry_release_targets(rr->reg, id, &gone);
    if (gone) /* nothing reaches them now */
        FR_LOG(FR_LOG_WARN,
               "%d gone workers are not told to drop config %s now: each is told in the answer "
               "to its heartbeat once it is back",
               gone, id);
    int n = 0;
    while (urls[n])
        n++;
    struct release_call *calls = fr_xcalloc((size_t)n + 1, sizeof(*calls));
    for (int i = 0; i < n; i++) {
        calls[i].peer = peer_of(rr, NULL, NULL);
        calls[i].url = urls[i];
        calls[i].started = pthread_create(&calls[i].thread, NULL, release_main, &calls[i]) == 0;
        if (!calls[i].started) /* no thread: this one is released here */
            release_main(&calls[i]);
    }
    for (int i = 0; i < n; i++) {
        if (calls[i].started)
            pthread_join(calls[i].thread, NULL);
        if (calls[i].rc == FR_OK) /* an earlier debt of it is settled */
            runner__registry_forgive(rr->reg, urls[i], id);
        else /* told again once it beats (a static one cannot be) */
            FR_LOG(FR_LOG_WARN, "worker %s did not confirm dropping config %s: %s%s", urls[i], id,
                   calls[i].err.message,
                   runner__registry_owe_release(rr->reg, urls[i], id)
                       ? "; it is told again in the answer to its heartbeats"
                       : "");
        free(urls[i]);
    }
    free(calls);
    free(urls);
}

static void remote_stop(runner *r)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    pthread_mutex_lock(&rr->lock);
    bool was = rr->stopping;
    rr->stopping = true;
    pthread_mutex_unlock(&rr->lock);
    if (was)
        return;
    curl_multi_wakeup(rr->multi);
    pthread_join(rr->thread, NULL);
    release_on_workers(rr);
    runner__registry_set_live(rr->reg, NULL); /* its debts are the registry's to tell now */
}

static void remote_destroy(runner *r)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    curl_multi_cleanup(rr->multi);
    pthread_mutex_destroy(&rr->lock);
    free(rr->secret);
    free(rr->sender);
    free(rr);
}

static json_t *remote_info(runner *r)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    pthread_mutex_lock(&rr->lock);
    json_t *j = json_pack("{sI sI}", "tasks_sent", (json_int_t)rr->tasks_sent, "tasks_retried",
                          (json_int_t)rr->tasks_retried);
    pthread_mutex_unlock(&rr->lock);
    json_object_set_new(j, "workers", runner_registry_list(rr->reg));
    return j;
}

/* A query starts only when some worker is known and not gone: with none,
 * waiting cannot help soon, so the caller hears it at once (503, Retry-After). */
static int remote_admit(runner *r, struct fr_error *err)
{
    struct remote_runner *rr = (struct remote_runner *)r;
    if (runner__registry_live(rr->reg) > 0)
        return FR_OK;
    return fr_error_setk(err, FR_EUNAVAILABLE, "no-workers",
                         "no worker has announced itself to this coordinator: start `framed "
                         "worker --coordinator URL` (or give serve --workers)");
}

static int remote_slots(runner *r)
{
    return runner__registry_slots(((struct remote_runner *)r)->reg);
}

static const struct runner_backend remote_backend = {
    .kind = "remote",
    .enqueue = remote_enqueue,
    .fetch = remote_fetch,
    .drop = remote_drop,
    .fetcher = remote_fetcher,
    .gone = remote_gone,
    .stop = remote_stop,
    .destroy = remote_destroy,
    .info = remote_info,
    .admit = remote_admit,
    .slots = remote_slots,
};

int runner_remote_new(struct cfg_frozen *frozen, store *st, runner_registry *g, const char *secret,
                      const char *sender, runner **out, struct fr_error *err)
{
    *out = NULL;
    struct remote_runner *rr = fr_xcalloc(1, sizeof(*rr));
    runner__init(&rr->base, &remote_backend, frozen);
    rr->reg = g;
    rr->secret = secret ? fr_xstrdup(secret) : NULL;
    rr->sender = fr_xstrdup(sender ? sender : "coordinator");
    rr->codecs = cfg_codecs_accept(&frozen->values, rr->codecs_buf, sizeof(rr->codecs_buf));
    pthread_mutex_init(&rr->lock, NULL);
    rr->deletes_end = &rr->deletes;
    rr->multi = curl_multi_init();
    int rc = rr->multi ? runner__store_hold(&rr->base, st, err)
                       : fr_error_setk(err, FR_EINTERNAL, "internal", "curl_multi_init failed");
    if (rc == FR_OK) {
        runner__registry_set_live(g, frozen->id); /* before any task: its debts are its own */
        curl_multi_setopt(rr->multi, CURLMOPT_MAXCONNECTS, 64L);
        if (pthread_create(&rr->thread, NULL, loop_main, rr) != 0)
            rc = fr_error_setk(err, FR_EINTERNAL, "internal",
                               "cannot start the remote runner's thread");
    }
    if (rc != FR_OK) { /* no thread: nothing to stop */
        runner__registry_set_live(g, NULL);
        runner__store_unhold(&rr->base, NULL);
        runner__cleanup(&rr->base);
        if (rr->multi)
            curl_multi_cleanup(rr->multi);
        rr->multi = NULL;
        pthread_mutex_destroy(&rr->lock);
        free(rr->secret);
        free(rr->sender);
        free(rr);
        return rc;
    }
    *out = &rr->base;
    return FR_OK;
}
