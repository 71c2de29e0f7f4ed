/* runner_tasks: a record of every attempt of every task of a query (who ran
 * it, when, its rows and bytes, retried or made again), bounded per query,
 * and the per-stage sums, for GET /v1/queries/{id}/stages. Records live
 * under the query lock; the backends mark an attempt's start, retry and end.
 * Once the query settles the records are freed and its stages JSON kept as
 * text, at most RUNNER_STAGES_KEPT_MAX (the task lists dropped past it). */
#include "runner_int.h"

#include <stdlib.h>
#include <string.h>

/* a + b for counts (both >= 0), INT64_MAX when it would overflow: sums of
 * what workers report never wrap */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static const char *const state_names[] = {"queued",  "running",   "ok",     "failed",
                                          "retried", "cancelled", "skipped"};

void runner__tasks_init(runner_query *q)
{
    int n = plan_physical_nstages(q->plan);
    q->sums = fr_xcalloc((size_t)n + 1, sizeof(*q->sums));
}

void runner__tasks_free(runner_query *q)
{
    for (int i = 0; i < q->nrecs; i++) {
        free(q->recs[i].worker);
        free(q->recs[i].worker_url);
        free(q->recs[i].error);
    }
    free(q->recs);
    free(q->sums);
    free(q->stages_final);
    q->recs = NULL;
    q->sums = NULL;
    q->stages_final = NULL;
    q->nrecs = 0;
}

/* A new record of job's stage and task (NULL when the records are full). */
static struct runner_task_rec *rec_new(runner_query *q, struct rjob *job)
{
    job->rec1 = 0;
    if (q->nrecs >= RUNNER_MAX_TASK_RECORDS) {
        q->sums[job->rec_stage].truncated = true;
        return NULL;
    }
    if (q->nrecs % 64 == 0)
        q->recs = fr_xrealloc(q->recs, sizeof(*q->recs) * (size_t)(q->nrecs + 64));
    struct runner_task_rec *rec = &q->recs[q->nrecs++];
    memset(rec, 0, sizeof(*rec));
    rec->stage = job->rec_stage;
    rec->task = job->task;
    rec->attempt = job->starts;
    rec->thread = -1;
    rec->rerun = job->rerun;
    rec->rows_in = rec->bytes_in = -1;
    job->rec1 = q->nrecs;
    return rec;
}

static struct runner_task_rec *rec_of(runner_query *q, const struct rjob *job)
{
    return job->rec1 > 0 && job->rec1 <= q->nrecs ? &q->recs[job->rec1 - 1] : NULL;
}

void runner__tasks_restart_locked(runner_query *q)
{
    for (int s = 0; q->sums && s < plan_physical_nstages(q->plan); s++) {
        struct runner_stage_sum *sum = &q->sums[s];
        struct plan_stage_view v;
        plan_stage_view(q->plan, s, &v);
        sum->rows_in = sum->rows_out = sum->bytes_in = sum->bytes_out = sum->bytes_shuffled = 0;
        sum->coalesced_parts = sum->coalesced_tasks = 0;
        sum->total += v.ntasks;
        sum->promised += v.ntasks;
        sum->last_end_ms = 0;
    }
}

void runner__task_queued_locked(struct rjob *job)
{
    runner_query *q = job->q;
    if (!q->sums)
        return;
    job->scan_bytes = job->scan_rows = -1;
    struct runner_stage_sum *sum = &q->sums[job->rec_stage];
    if (sum->promised > 0 && !job->repair_for) /* counted at the rerun's start */
        sum->promised--;
    else
        sum->total++;
    rec_new(q, job);
}

void runner__task_skipped_locked(struct rjob *job)
{
    runner_query *q = job->q;
    job->rec1 = 0;
    if (!q->sums)
        return;
    struct runner_stage_sum *sum = &q->sums[job->rec_stage];
    if (sum->promised > 0)
        sum->promised--;
    else
        sum->total++;
    sum->done++;
    sum->skipped++;
    sum->last_end_ms = fr_now_ms();
}

void runner__task_queued(struct rjob *job)
{
    pthread_mutex_lock(&job->q->lock);
    runner__task_queued_locked(job);
    pthread_mutex_unlock(&job->q->lock);
}

void runner__task_begin(struct rjob *job, const char *worker_id, const char *worker_url, int thread)
{
    runner_query *q = job->q;
    pthread_mutex_lock(&q->lock);
    if (q->sums) {
        struct runner_task_rec *rec = rec_of(q, job);
        if (!rec || rec->state != RTS_QUEUED) /* a retry: an attempt of its own */
            rec = rec_new(q, job);
        struct runner_stage_sum *sum = &q->sums[job->rec_stage];
        int64_t now = fr_now_ms();
        sum->running++;
        if (!sum->first_start_ms)
            sum->first_start_ms = now;
        if (rec) {
            rec->state = RTS_RUNNING;
            rec->attempt = job->starts;
            rec->started_ms = now;
            rec->thread = thread;
            rec->worker = worker_id && worker_id[0] ? fr_xstrdup(worker_id) : NULL;
            rec->worker_url = worker_url ? fr_xstrdup(worker_url) : NULL;
        }
    }
    job->starts++;
    job->running = true;
    pthread_mutex_unlock(&q->lock);
}

/* Closes job's current attempt as state (query lock held). */
static struct runner_task_rec *close_attempt(runner_query *q, struct rjob *job,
                                             enum runner_task_state state, const char *why)
{
    struct runner_task_rec *rec = rec_of(q, job);
    struct runner_stage_sum *sum = &q->sums[job->rec_stage];
    int64_t now = fr_now_ms();
    if (job->running && sum->running > 0)
        sum->running--;
    job->running = false;
    sum->last_end_ms = now;
    job->rec1 = 0;
    if (!rec)
        return NULL;
    rec->state = state;
    rec->finished_ms = now;
    if (why && why[0] && !rec->error)
        rec->error = fr_xstrdup(why);
    return rec;
}

void runner__task_retried(struct rjob *job, const char *why)
{
    runner_query *q = job->q;
    pthread_mutex_lock(&q->lock);
    if (q->sums) {
        q->retries++;
        close_attempt(q, job, RTS_RETRIED, why);
        rec_new(q, job); /* the next attempt, listed queued while it waits */
    }
    pthread_mutex_unlock(&q->lock);
    if (q->r) /* framed_tasks_total{outcome="retried"}: one per retry, as the stages count */
        atomic_fetch_add(&q->r->tasks_by_outcome[RT_RETRIED], 1);
}

/* Rows and bytes job read: its input partitions (a source's: what its
 * file or rows gave, as the executor said, -1 when it did not), and the
 * bytes that crossed a shuffle. */
static void count_inputs(runner_query *q, const struct rjob *job, struct runner_task_rec *rec)
{
    struct plan_stage_view v;
    plan_stage_view(q->plan, job->stage, &v);
    int64_t rows = 0, bytes = 0, shuffled = 0, n = 0;
    for (int k = 0; k < job->nslots && !job->repair_for; k++) {
        bool shuffle = !v.stored_parts && k < v.nslots && v.slots[k].mode == PLAN_SLOT_BUCKET;
        for (int i = 0; i < job->ninputs[k]; i++, n++) {
            rows = sat_add(rows, job->inputs[k][i]->rows);
            bytes = sat_add(bytes, job->inputs[k][i]->bytes);
            if (shuffle)
                shuffled = sat_add(shuffled, job->inputs[k][i]->bytes);
        }
    }
    bool source = job->repair_for || (job->nslots == 0 && n == 0);
    rec->rows_in = source ? job->scan_rows : rows;
    rec->bytes_in = source ? job->scan_bytes : bytes;
    rec->bytes_shuffled = shuffled;
}

void runner__task_end_locked(struct rjob *job, int rc, struct runner_part *const *outs, int nouts,
                             const struct fr_error *err)
{
    runner_query *q = job->q;
    if (!q->sums)
        return;
    bool ran = job->running; /* an ok job that never started was skipped */
    enum runner_task_state state = rc == FR_OK && !ran                              ? RTS_SKIPPED
                                   : rc == FR_OK                                    ? RTS_OK
                                   : rc == FR_ECANCELLED || atomic_load(&q->cancel) ? RTS_CANCELLED
                                                                                    : RTS_FAILED;
    struct runner_stage_sum *sum = &q->sums[job->rec_stage];
    sum->done++;
    sum->skipped += state == RTS_SKIPPED;
    struct runner_task_rec scratch,
        *rec = close_attempt(q, job, state, rc != FR_OK && err ? err->message : NULL);
    if (!rec) { /* not kept, still summed */
        memset(&scratch, 0, sizeof(scratch));
        rec = &scratch;
    }
    rec->rows_out = rec->bytes_out = 0;
    for (int b = 0; b < nouts; b++)
        if (outs[b]) {
            rec->rows_out = sat_add(rec->rows_out, outs[b]->rows);
            rec->bytes_out = sat_add(rec->bytes_out, outs[b]->bytes);
        }
    count_inputs(q, job, rec);
    if (rc != FR_OK || job->repair_for) /* a repair replaces an output counted already */
        return;
    sum->rows_in = sat_add(sum->rows_in, rec->rows_in > 0 ? rec->rows_in : 0);
    sum->bytes_in = sat_add(sum->bytes_in, rec->bytes_in > 0 ? rec->bytes_in : 0);
    sum->rows_out = sat_add(sum->rows_out, rec->rows_out);
    sum->bytes_out = sat_add(sum->bytes_out, rec->bytes_out);
    sum->bytes_shuffled = sat_add(sum->bytes_shuffled, rec->bytes_shuffled);
}

static void set_time(json_t *j, const char *key, int64_t ms)
{
    char t[40];
    if (!ms) {
        json_object_set_new(j, key, json_null());
        return;
    }
    fr_iso8601_ms(ms, t, sizeof(t));
    json_object_set_new(j, key, json_string(t));
}

static json_t *count_or_null(int64_t n)
{
    return n >= 0 ? json_integer(n) : json_null();
}

static json_t *rec_json(const struct runner_task_rec *rec)
{
    json_t *j = json_pack(
        "{si si so so so ss sb so so sI sI sI so}", "task", rec->task, "attempt", rec->attempt,
        "worker", rec->worker ? json_string(rec->worker) : json_null(), "worker_url",
        rec->worker_url ? json_string(rec->worker_url) : json_null(), "thread",
        rec->thread >= 0 ? json_integer(rec->thread) : json_null(), "state",
        state_names[rec->state], "rerun", rec->rerun, "rows_in", count_or_null(rec->rows_in),
        "bytes_in", count_or_null(rec->bytes_in), "rows_out", (json_int_t)rec->rows_out,
        "bytes_out", (json_int_t)rec->bytes_out, "bytes_shuffled", (json_int_t)rec->bytes_shuffled,
        "error", rec->error ? json_string(rec->error) : json_null());
    set_time(j, "started_at", rec->started_ms);
    set_time(j, "finished_at", rec->finished_ms);
    return j;
}

/* The run-time decision of a coalesced stage (runner_driver.c), new. */
static json_t *coalesce_decision(const runner_query *q, const struct runner_stage_sum *sum)
{
    char text[320];
    snprintf(text, sizeof(text),
             "shuffle: %d partitions (%lld bytes in all) read by %d tasks: adjacent partitions "
             "merged while together under %lld bytes (shuffle_coalesce_bytes, or the bytes over "
             "the runner's task slots when fewer, at least 1 MiB)",
             sum->coalesced_parts, (long long)sum->coalesced_bytes, sum->coalesced_tasks,
             (long long)sum->coalesce_target);
    return json_pack("{ss ss sI}", "decision", text, "field", "shuffle_coalesce_bytes", "value",
                     (json_int_t)q->r->frozen->values.shuffle_coalesce_bytes);
}

/* One stage's object (query lock held), steals tasks. */
static json_t *stage_json(runner_query *q, int s, json_t *tasks)
{
    struct plan_stage_view v;
    plan_stage_view(q->plan, s, &v);
    struct runner_stage_sum none = {.total = v.ntasks};
    const struct runner_stage_sum *sum = q->sums ? &q->sums[s] : &none;
    bool source = v.nslots == 0 && !v.stored_parts; /* reads a file or inline rows */
    json_t *j = json_pack("{si}", "stage", s);
    json_object_update_new(j, plan_stage_describe(q->plan, s));
    if (sum->coalesced_parts > 0 && json_is_array(json_object_get(j, "decisions")))
        json_array_append_new(json_object_get(j, "decisions"), coalesce_decision(q, sum));
    json_object_update_new(
        j, json_pack("{sI sI sI sI so sI so sI sI sb}", "tasks_total", (json_int_t)sum->total,
                     "tasks_done", (json_int_t)sum->done, "tasks_skipped", (json_int_t)sum->skipped,
                     "tasks_running", (json_int_t)sum->running, "rows_in",
                     source && !sum->rows_in ? json_null() : json_integer(sum->rows_in), "rows_out",
                     (json_int_t)sum->rows_out, "bytes_in",
                     source && !sum->bytes_in ? json_null() : json_integer(sum->bytes_in),
                     "bytes_out", (json_int_t)sum->bytes_out, "bytes_shuffled",
                     (json_int_t)sum->bytes_shuffled, "tasks_truncated", sum->truncated));
    set_time(j, "started_at", sum->first_start_ms);
    set_time(j, "finished_at", sum->running == 0 && sum->done >= sum->total ? sum->last_end_ms : 0);
    json_object_set_new(j, "tasks", tasks);
    return j;
}

/* new (query lock held): the stages object from the records, one pass over
 * them for all stages. */
static json_t *stages_locked(runner_query *q)
{
    int n = plan_physical_nstages(q->plan);
    json_t **tasks = fr_xcalloc((size_t)n + 1, sizeof(*tasks));
    for (int s = 0; s < n; s++)
        tasks[s] = json_array();
    for (int i = 0; i < q->nrecs; i++)
        if (q->recs[i].stage >= 0 && q->recs[i].stage < n)
            json_array_append_new(tasks[q->recs[i].stage], rec_json(&q->recs[i]));
    json_t *stages = json_array();
    for (int s = 0; s < n; s++)
        json_array_append_new(stages, stage_json(q, s, tasks[s]));
    free(tasks);
    return json_pack("{ss ss si sI so}", "state", runner_qstate_name(q->state), "config_id",
                     q->config_id, "restarts", q->restarts, "retries", (json_int_t)q->retries,
                     "stages", stages);
}

void runner__tasks_settle_locked(runner_query *q)
{
    if (!q->sums || q->stages_final)
        return;
    json_t *j = stages_locked(q);
    char *text = fr_json_dumps(j, JSON_COMPACT);
    if (text && strlen(text) > RUNNER_STAGES_KEPT_MAX) {
        free(text);
        json_t *list = json_object_get(j, "stages");
        for (size_t i = 0; i < json_array_size(list); i++) {
            json_object_set_new(json_array_get(list, i), "tasks", json_array());
            json_object_set_new(json_array_get(list, i), "tasks_truncated", json_true());
        }
        text = fr_json_dumps(j, JSON_COMPACT);
    }
    json_decref(j);
    if (!text)
        return; /* out of memory: the records stay */
    for (int i = 0; i < q->nrecs; i++) {
        free(q->recs[i].worker);
        free(q->recs[i].worker_url);
        free(q->recs[i].error);
    }
    free(q->recs);
    q->recs = NULL;
    q->nrecs = 0;
    q->stages_final = text;
}

json_t *runner_query_stages_json(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    json_t *j = q->stages_final ? json_loads(q->stages_final, 0, NULL) : NULL;
    if (j) /* the state it has now (a succeeded query failed by its hook) */
        json_object_set_new(j, "state", json_string(runner_qstate_name(q->state)));
    else
        j = stages_locked(q);
    pthread_mutex_unlock(&q->lock);
    return j;
}
