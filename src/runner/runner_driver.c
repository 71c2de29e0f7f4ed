/* runner_driver: walks a query's stages. When a stage's last task ends, the
 * next stage's tasks are built (inputs gathered from earlier outputs by the
 * plan's slot modes, sort boundaries computed) and handed to the backend.
 * Outputs no later stage reads are freed as soon as possible. */
#include "runner_int.h"

#include <stdlib.h>
#include <string.h>

static void compute_consumers(runner_query *q, int nstages)
{
    q->last_consumer = fr_xcalloc((size_t)nstages, sizeof(int));
    for (int s = 0; s < nstages; s++)
        q->last_consumer[s] = nstages; /* the result stage is read by nobody: kept */
    for (int s = 0; s < nstages; s++) {
        struct plan_stage_view v;
        plan_stage_view(q->plan, s, &v);
        for (int k = 0; k < v.nslots; k++)
            q->last_consumer[v.slots[k].stage] = s;
        if (v.needs_boundaries && s > 0)
            q->last_consumer[v.slots[0].stage] = s;
    }
}

/* A stage output leaves q->out (freed, or kept as a result part). */
static void unhold(runner_query *q, struct runner_part *p)
{
    if (!p)
        return;
    q->held_bytes -= p->held;
    atomic_fetch_sub(&q->r->held_local, p->held_here);
}

static void drop_output(runner_query *q, struct runner_part *p)
{
    unhold(q, p);
    runner__part_free(q->r, p);
}

static void free_stage_outputs(runner_query *q, int s)
{
    if (!q->out || !q->out[s])
        return;
    struct plan_stage_view v;
    plan_stage_view(q->plan, s, &v);
    for (int t = 0; t < v.ntasks; t++) {
        for (int b = 0; q->out[s][t] && b < v.nbuckets; b++)
            drop_output(q, q->out[s][t][b]);
        free(q->out[s][t]);
    }
    free(q->out[s]);
    q->out[s] = NULL;
}

/* The inputs of a job's slot; a BUCKET slot's are buckets task..hi of
 * every task of the slot's stage (bucket by bucket, each in task order). */
static void gather(runner_query *q, const struct plan_slot *slot, int task, int hi,
                   struct runner_part ***out, int *n)
{
    struct plan_stage_view v;
    plan_stage_view(q->plan, slot->stage, &v);
    struct runner_part ***o = q->out[slot->stage];
    int lo = slot->mode == PLAN_SLOT_BUCKET ? task : slot->bucket;
    if (slot->mode != PLAN_SLOT_BUCKET)
        hi = lo;
    *out = fr_xcalloc((size_t)v.ntasks * (size_t)(hi - lo + 1) + 1, sizeof(struct runner_part *));
    *n = 0;
    if (slot->mode == PLAN_SLOT_ONE) {
        if (o[task] && o[task][slot->bucket])
            (*out)[(*n)++] = o[task][slot->bucket];
        return;
    }
    for (int b = lo; b <= hi; b++)
        for (int t = 0; t < v.ntasks; t++)
            if (o[t] && o[t][b])
                (*out)[(*n)++] = o[t][b];
}

/* Bytes of a stage output as held (its table here, else what its worker said). */
/* Coalescing never aims under this much per task (unless the config's
 * shuffle_coalesce_bytes is smaller): a task of less costs more to send,
 * schedule and answer than it saves by running beside another. */
#define RUNNER_COALESCE_MIN_BYTES (1024 * 1024)
/* Nor does a coalesced task read more input partitions than this (a
 * shuffle's every partition is one reference in its task's body). */
#define RUNNER_COALESCE_MAX_INPUTS 4096

/* How many tasks the runner may run at once now (threads; live workers' slots), >= 1. */
static int backend_slots(runner *r)
{
    int n = r->be->slots ? r->be->slots(r) : 1;
    return n > 0 ? n : 1;
}

/* A stage reading a shuffle (BUCKET slots; ALL slots besides) whose
 * partitions are small: adjacent buckets are read by one task, the first of
 * them, while together they stay under the target (shuffle_coalesce_bytes,
 * or the stage's bytes over the runner's task slots when that is smaller,
 * but not under RUNNER_COALESCE_MIN_BYTES): hi[t] is the last bucket task t
 * reads, -1 for a task whose bucket an earlier one reads. Any union of
 * buckets is a valid input (a key's rows are in one bucket on every side;
 * a sort's ranges stay in order). False when the stage is not coalesced. */
static bool coalesce(runner_query *q, int stage, const struct plan_stage_view *v, int *hi)
{
    int64_t limit = q->r->frozen->values.shuffle_coalesce_bytes;
    bool bucketed = false;
    for (int k = 0; k < v->nslots; k++) {
        if (v->slots[k].mode == PLAN_SLOT_ONE)
            return false;
        bucketed |= v->slots[k].mode == PLAN_SLOT_BUCKET;
    }
    if (limit <= 0 || !bucketed || v->stored_parts || v->ntasks < 2)
        return false;
    int64_t *bytes = fr_xcalloc((size_t)v->ntasks, sizeof(*bytes)), total = 0;
    int64_t per_bucket = 0; /* input partitions of one bucket, all slots */
    for (int k = 0; k < v->nslots; k++) {
        if (v->slots[k].mode != PLAN_SLOT_BUCKET)
            continue;
        struct plan_stage_view sv;
        plan_stage_view(q->plan, v->slots[k].stage, &sv);
        struct runner_part ***o = q->out[v->slots[k].stage];
        for (int t = 0; t < sv.ntasks; t++) {
            per_bucket += o[t] != NULL; /* a task that did not run sent nothing */
            for (int b = 0; o[t] && b < v->ntasks && b < sv.nbuckets; b++)
                if (o[t][b]) {
                    bytes[b] += o[t][b]->held;
                    total += o[t][b]->held;
                }
        }
    }
    int64_t target = total / backend_slots(q->r);
    if (target < RUNNER_COALESCE_MIN_BYTES)
        target = RUNNER_COALESCE_MIN_BYTES;
    if (target > limit)
        target = limit;
    int ntasks = 0;
    for (int b = 0; b < v->ntasks;) {
        int lead = b;
        int64_t sum = bytes[b++];
        while (b < v->ntasks && sum + bytes[b] <= target &&
               (b - lead + 1) * per_bucket <= RUNNER_COALESCE_MAX_INPUTS) {
            sum += bytes[b];
            hi[b++] = -1;
        }
        hi[lead] = b - 1;
        ntasks++;
    }
    free(bytes);
    if (ntasks == v->ntasks)
        return false;
    struct runner_stage_sum *sum = q->sums ? &q->sums[stage] : NULL;
    if (sum) {
        sum->coalesced_parts = v->ntasks;
        sum->coalesced_tasks = ntasks;
        sum->coalesced_bytes = total;
        sum->coalesce_target = target;
    }
    return true;
}

/* hi[t] for every task of q->stage: the last bucket it reads (t itself
 * when not coalesced), -1 when it has nothing to do and is not run: its
 * buckets are read by an earlier task, or it reads (ONE slot) the output of
 * a task that was not run (whose rows went with another task's). At least
 * one task runs. */
static void plan_tasks(runner_query *q, const struct plan_stage_view *v, int *hi)
{
    for (int t = 0; t < v->ntasks; t++)
        hi[t] = t;
    if (coalesce(q, q->stage, v, hi) || v->stored_parts)
        return;
    int run = 0;
    for (int t = 0; t < v->ntasks; t++) {
        for (int k = 0; k < v->nslots; k++)
            if (v->slots[k].mode == PLAN_SLOT_ONE && !q->out[v->slots[k].stage][t])
                hi[t] = -1;
        run += hi[t] >= 0;
    }
    if (!run && v->ntasks > 0)
        hi[0] = 0;
}

/* A task planned not to run (plan_tasks): ended at once with no outputs,
 * so that nothing waits for it; counted skipped (framed_tasks_total and its
 * stage's tasks_skipped) but given no task record, which a stage of
 * thousands of coalesced partitions would take from the tasks that run.
 * Called with q->lock held. */
static void skip_task(runner_query *q, struct rjob *job)
{
    atomic_fetch_add(&q->r->tasks_by_outcome[RT_SKIPPED], 1);
    runner__task_skipped_locked(job);
    q->task_rows[job->task] = 0;
    q->tasks_done++;
    runner__job_free(job);
}

/* The sample partitions (bucket 1 of each task of the stage `from`) that a
 * sort's boundaries are computed from; borrowed from q->out (new array). */
static struct runner_part **sample_parts(runner_query *q, int from, int *n)
{
    struct plan_stage_view pv;
    plan_stage_view(q->plan, from, &pv);
    struct runner_part **parts = fr_xcalloc((size_t)pv.ntasks + 1, sizeof(*parts));
    *n = 0;
    for (int t = 0; t < pv.ntasks; t++)
        if (q->out[from][t] && q->out[from][t][1])
            parts[(*n)++] = q->out[from][t][1];
    return parts;
}

/* Called with q->lock held, every part of the stage before fetched. */
static int prepare_boundaries(runner_query *q, const struct plan_stage_view *v,
                              struct fr_error *err)
{
    int n = 0, rc = FR_OK;
    struct runner_part **parts = sample_parts(q, v->slots[0].stage, &n);
    struct df_table **samples = fr_xcalloc((size_t)n + 1, sizeof(*samples));
    for (int i = 0; i < n && rc == FR_OK; i++)
        if ((rc = runner__part_table(q->r, parts[i], 0, err)) == FR_OK)
            samples[i] = parts[i]->table;
    df_table_free(q->boundaries);
    q->boundaries = NULL;
    if (rc == FR_OK)
        rc = plan_sort_boundaries(q->plan, q->stage, samples, n, &q->r->opts, &q->boundaries, err);
    free(samples);
    free(parts);
    return rc;
}

/* Fetches parts (borrowed from q->out) with q->lock released: a fetch is
 * HTTP (up to its timeout) and status reads must not wait for it. Safe
 * because no task of q runs (pending is 0): nothing else touches q->out.
 * budget >= 0: the parts share it (a result; past it the fetching stops and
 * collect_result says so), else each has the runner's fetch cap. */
static int fetch_unlocked(runner_query *q, struct runner_part **parts, int n, int64_t budget,
                          struct fr_error *err)
{
    int rc = FR_OK;
    bool capped = budget >= 0;
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < n && rc == FR_OK && !atomic_load(&q->cancel); i++) {
        if (parts[i]->table)
            continue;
        if (capped && budget <= 0)
            break;
        rc = runner__part_table(q->r, parts[i], capped ? budget : 0, err);
        if (rc == FR_OK && capped)
            budget -= df_table_bytes(parts[i]->table);
    }
    pthread_mutex_lock(&q->lock);
    return rc;
}

/* A result left on the workers is lost when a worker holding it is gone
 * (it stopped beating, or does not answer now): the plan reruns, as when a
 * collect fails to fetch it. Each worker is asked once, with q->lock
 * released (a probe may take its timeout; as in fetch_unlocked no task of q
 * runs, so nothing else touches q->out). */
static int check_result_owners(runner_query *q, struct fr_error *err)
{
    if (!q->r->be->gone)
        return FR_OK;
    int last = plan_physical_nstages(q->plan) - 1;
    struct plan_stage_view v;
    plan_stage_view(q->plan, last, &v);
    const char **asked = fr_xcalloc((size_t)v.ntasks + 1, sizeof(*asked));
    int nasked = 0, rc = FR_OK;
    pthread_mutex_unlock(&q->lock);
    for (int t = 0; t < v.ntasks && rc == FR_OK; t++) {
        const struct runner_part *p = q->out[last][t] ? q->out[last][t][0] : NULL;
        if (!p || !p->url)
            continue;
        bool seen = false;
        for (int i = 0; i < nasked && !seen; i++)
            seen = strcmp(asked[i], p->url) == 0;
        if (seen && !p->lost)
            continue;
        if (!seen)
            asked[nasked++] = p->url;
        if (p->lost || q->r->be->gone(q->r, p->url))
            rc = fr_error_setk(err, FR_EUNAVAILABLE, "input-lost",
                               "result partition %.64s is on worker %.200s, which is gone", p->id,
                               p->url);
    }
    pthread_mutex_lock(&q->lock);
    free(asked);
    return rc;
}

/* Before q->stage starts, out of q->lock: the samples its boundaries need;
 * after the last stage, a collected result's partitions (a preview's: any
 * other result stays on the workers until it is read). An input-lost here
 * is a lost partition like a task's: the plan reruns. */
static int prefetch(runner_query *q, bool result, struct fr_error *err)
{
    int n = 0, rc = FR_OK;
    struct runner_part **parts = NULL;
    int64_t budget = -1;
    if (result && !q->collect) /* the result stays where it was made until it is read */
        return check_result_owners(q, err);
    if (result) {
        struct plan_stage_view v;
        int last = plan_physical_nstages(q->plan) - 1;
        plan_stage_view(q->plan, last, &v);
        parts = fr_xcalloc((size_t)v.ntasks + 1, sizeof(*parts));
        for (int t = 0; t < v.ntasks; t++)
            if (q->out[last][t] && q->out[last][t][0])
                parts[n++] = q->out[last][t][0];
        budget = q->r->memory_budget > 0 ? q->r->memory_budget : -1;
    } else {
        struct plan_stage_view v;
        plan_stage_view(q->plan, q->stage, &v);
        if (!v.needs_boundaries)
            return FR_OK;
        parts = sample_parts(q, v.slots[0].stage, &n);
    }
    rc = fetch_unlocked(q, parts, n, budget, err);
    free(parts);
    return rc;
}

/* Builds and enqueues every task of q->stage. Called with q->lock held. */
static int start_stage(runner_query *q, struct fr_error *err)
{
    struct plan_stage_view v;
    plan_stage_view(q->plan, q->stage, &v);
    if (v.needs_boundaries) {
        int rc = prepare_boundaries(q, &v, err);
        if (rc != FR_OK)
            return rc;
    }
    q->out[q->stage] = fr_xcalloc((size_t)v.ntasks + 1, sizeof(struct runner_part **));
    free(q->task_rows);
    q->task_rows = fr_xmalloc(sizeof(int64_t) * (size_t)(v.ntasks + 1));
    for (int t = 0; t < v.ntasks; t++)
        q->task_rows[t] = -1;
    q->limit_reached = false;
    if (v.stored_parts) { /* this stage reads a dataframe's kept partitions */
        q->stored =
            fr_xrealloc(q->stored, sizeof(*q->stored) * (size_t)(q->nstored + v.ntasks + 1));
        for (int t = 0; t < v.ntasks; t++) {
            struct runner_part *view = runner__kept_get(q->r, v.stored_parts[t]);
            if (!view)
                return fr_error_set(err, FR_ENOTFOUND,
                                    "partition %s is gone (its dataframe was deleted)",
                                    v.stored_parts[t]);
            q->stored[q->nstored++] = view;
        }
    }
    int first_stored = q->nstored - (v.stored_parts ? v.ntasks : 0);
    int *hi = fr_xcalloc((size_t)v.ntasks + 1, sizeof(*hi));
    plan_tasks(q, &v, hi);
    q->pending = 0;
    for (int t = 0; t < v.ntasks; t++)
        q->pending += hi[t] >= 0;
    free(q->held);
    q->held = NULL;
    q->nheld = q->held_next = 0;
    free(q->task_ord);
    q->task_ord = fr_xcalloc((size_t)v.ntasks + 1, sizeof(*q->task_ord));
    for (int t = 0, n = 0; t < v.ntasks; n += hi[t] >= 0, t++)
        q->task_ord[t] = n;
    q->first_open = q->limit_ended = 0;
    int window = v.limit_rows >= 0 ? backend_slots(q->r) : INT32_MAX;
    for (int t = 0; t < v.ntasks; t++) {
        struct rjob *job = fr_xcalloc(1, sizeof(*job));
        job->q = runner_query_ref(q);
        job->stage = q->stage;
        job->task = t;
        job->bucket_hi = hi[t];
        job->rec_stage = q->stage;
        job->rerun = q->restarts > 0;
        if (hi[t] < 0) {
            skip_task(q, job);
            continue;
        }
        runner__task_queued_locked(job);
        job->spec = plan_task_spec(q->plan, q->stage, t, q->boundaries);
        if (v.stored_parts) {
            job->nslots = 1;
            job->inputs[0] = fr_xcalloc(2, sizeof(struct runner_part *));
            job->inputs[0][0] = q->stored[first_stored + t];
            job->ninputs[0] = 1;
        } else {
            job->nslots = v.nslots;
            for (int k = 0; k < v.nslots; k++)
                gather(q, &v.slots[k], t, hi[t], &job->inputs[k], &job->ninputs[k]);
        }
        if (q->task_ord[t] >= window) {
            if (!q->held)
                q->held = fr_xcalloc((size_t)v.ntasks + 1, sizeof(*q->held));
            q->held[q->nheld++] = job;
            continue;
        }
        q->r->be->enqueue(q->r, job);
    }
    free(hi);
    return FR_OK;
}

/* A limited stage's held tasks (start_stage): enqueued while they are fewer
 * than slots() runnable tasks past the first task not yet ended, so that a
 * slow first task does not let the others run the stage to its end before
 * its rows are counted (tasks coalesced away do not count: ordinals). Once
 * 2 x slots() tasks ended short of the limit, the limit is likely far (a
 * selective filter): all are enqueued, so one slow task does not idle the
 * rest. Once the limit is reached, or the plan is to be rerun (a lost
 * partition), the rest are not needed: returned (new NULL-terminated array,
 * or NULL) for the caller to end as skipped once it let go of q->lock, on
 * any backend. On a failure or a cancel, all are enqueued (they end as the
 * query does). Called with q->lock held, when a task of the stage ended. */
static struct rjob **release_held(runner_query *q)
{
    if (q->held_next >= q->nheld)
        return NULL;
    bool cancel = atomic_load(&q->cancel); /* a task failed the query, or a cancel */
    if ((q->limit_reached || q->restart_pending) && !cancel) {
        struct rjob **skip = fr_xcalloc((size_t)(q->nheld - q->held_next) + 1, sizeof(*skip));
        for (int n = 0; q->held_next < q->nheld; n++) {
            skip[n] = q->held[q->held_next];
            q->held[q->held_next++] = NULL;
        }
        return skip;
    }
    struct plan_stage_view v;
    plan_stage_view(q->plan, q->stage, &v);
    while (q->first_open < v.ntasks && q->task_rows[q->first_open] >= 0)
        q->first_open++;
    int slots = backend_slots(q->r);
    bool all = cancel || q->limit_ended >= 2 * slots || q->first_open >= v.ntasks;
    int upto = all ? INT32_MAX : q->task_ord[q->first_open] + slots;
    while (q->held_next < q->nheld) {
        struct rjob *job = q->held[q->held_next];
        if (q->task_ord[job->task] >= upto)
            break;
        q->held[q->held_next++] = NULL;
        q->r->be->enqueue(q->r, job);
    }
    return NULL;
}

static void finish(runner_query *q, enum runner_qstate state)
{
    int nstages = plan_physical_nstages(q->plan);
    if (state == RQ_SUCCEEDED) {
        struct plan_stage_view v;
        plan_stage_view(q->plan, nstages - 1, &v);
        q->result_parts = fr_xcalloc((size_t)v.ntasks + 1, sizeof(struct runner_part *));
        for (int t = 0; t < v.ntasks; t++) {
            if (q->out[nstages - 1][t] && q->out[nstages - 1][t][0]) {
                unhold(q, q->out[nstages - 1][t][0]);
                q->result_parts[q->nresult_parts++] = q->out[nstages - 1][t][0];
                q->out[nstages - 1][t][0] = NULL;
            }
        }
    }
    for (int s = 0; s < nstages; s++)
        free_stage_outputs(q, s);
    free(q->out);
    q->out = NULL;
    for (int i = 0; i < q->nstored; i++)
        runner__part_free(q->r, q->stored[i]);
    free(q->stored);
    q->stored = NULL;
    q->nstored = 0;
    free(q->last_consumer);
    q->last_consumer = NULL;
    free(q->task_rows);
    q->task_rows = NULL;
    free(q->held); /* every held job was enqueued or ended: pending counted them */
    q->held = NULL;
    q->nheld = q->held_next = 0;
    free(q->task_ord);
    q->task_ord = NULL;
    df_table_free(q->boundaries);
    q->boundaries = NULL;
    q->state = state;
    q->finished_us = fr_mono_us();
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_lock(&q->r->lock);
    q->r->running--;
    pthread_mutex_unlock(&q->r->lock);
}

static void note_config(runner_query *q, const char *config_id)
{
    size_t i;
    json_t *v;
    json_array_foreach(q->task_config_ids, i,
                       v) if (strcmp(json_string_value(v), config_id) == 0) return;
    json_array_append_new(q->task_config_ids, json_string(config_id));
}

static void update_limit(runner_query *q, int64_t limit)
{
    if (limit < 0)
        return;
    int64_t rows = 0;
    struct plan_stage_view v;
    plan_stage_view(q->plan, q->stage, &v);
    for (int t = 0; t < v.ntasks && q->task_rows[t] >= 0; t++)
        rows += q->task_rows[t];
    if (rows >= limit)
        q->limit_reached = true;
}

static int64_t count_tasks(const plan_physical *p)
{
    int64_t n = 0;
    for (int s = 0; s < plan_physical_nstages(p); s++) {
        struct plan_stage_view v;
        plan_stage_view(p, s, &v);
        n += v.ntasks;
    }
    return n;
}

static bool input_lost(int rc, const struct fr_error *err)
{
    return rc != FR_OK && strcmp(err->kind, "input-lost") == 0;
}

/* A partition died with its worker: the plan may rerun from its start. */
static bool may_rerun(runner_query *q, int rc, const struct fr_error *err)
{
    return input_lost(rc, err) && q->restarts < q->r->frozen->values.task_max_retries &&
           !atomic_load(&q->cancel);
}

static void restart(runner_query *q)
{
    q->restart_pending = false;
    q->restarts++;
    FR_LOG(FR_LOG_WARN, "query %s lost a partition with its worker: rerunning it (%d of %lld)",
           q->id, q->restarts, (long long)q->r->frozen->values.task_max_retries);
    for (int s = 0; s < plan_physical_nstages(q->plan); s++)
        free_stage_outputs(q, s);
    q->stage = -1;
    runner__tasks_restart_locked(q);
    /* the rerun's tasks are more work: the total grows with them, so
     * tasks_done (which counts every ended task) never passes it */
    q->tasks_total += count_tasks(q->plan);
}

/* Returns true when the runner's reference to q must be dropped. Called with
 * q->lock held; a prefetch releases it meanwhile. */
static bool advance(runner_query *q)
{
    for (;;) {
        if (q->error.status != FR_OK) {
            finish(q, q->error.status == FR_ECANCELLED ? RQ_CANCELLED : RQ_FAILED);
            return true;
        }
        if (atomic_load(&q->cancel)) {
            finish(q, RQ_CANCELLED);
            return true;
        }
        if (q->restart_pending) /* rerun the plan from its first stage */
            restart(q);
        int done = q->stage;
        for (int s = 0; s <= done; s++)
            if (q->last_consumer[s] == done)
                free_stage_outputs(q, s);
        bool last = q->stage + 1 >= plan_physical_nstages(q->plan);
        if (!last)
            q->stage++;
        struct fr_error err;
        fr_error_init(&err);
        int rc = prefetch(q, last, &err);
        if (rc == FR_OK && atomic_load(&q->cancel))
            continue; /* cancelled while fetching */
        if (rc == FR_OK && last) {
            finish(q, RQ_SUCCEEDED);
            return true;
        }
        if (rc == FR_OK && (rc = start_stage(q, &err)) == FR_OK)
            return false;
        if (may_rerun(q, rc, &err)) {
            q->restart_pending = true;
            continue;
        }
        if (last && q->collect) { /* not lost: collect_result fails it with its own words */
            finish(q, RQ_SUCCEEDED);
            return true;
        }
        q->error = err;
        finish(q, RQ_FAILED);
        return true;
    }
}

/* Counts job's end by its outcome, as its record's state says (query lock
 * held, before runner__task_end_locked: an ok job that never started, past
 * the row limit, was skipped). */
static void count_task(runner *r, const struct rjob *job, int rc)
{
    enum runner_task_outcome o = rc == FR_OK && !job->running ? RT_SKIPPED
                                 : rc == FR_OK                ? RT_OK
                                 : rc == FR_ECANCELLED || atomic_load(&job->q->cancel)
                                     ? RT_CANCELLED
                                     : RT_FAILED;
    atomic_fetch_add(&r->tasks_by_outcome[o], 1); /* retries: counted by runner__task_retried */
}

const char *runner_task_outcome_name(enum runner_task_outcome o)
{
    static const char *const names[] = {"ok", "failed", "cancelled", "retried", "skipped"};
    return names[o];
}

void runner_task_counts(runner *r, int64_t out[RUNNER_TASK_OUTCOMES])
{
    for (int i = 0; i < RUNNER_TASK_OUTCOMES; i++)
        out[i] = atomic_load(&r->tasks_by_outcome[i]);
}

static void hold(runner_query *q, struct runner_part *p)
{
    if (!p)
        return;
    p->held = p->table ? df_table_bytes(p->table) : p->bytes;
    p->held_here = p->url || p->spilled ? 0 : p->held; /* here, not on a worker or on disk */
    if (p->spilled)
        q->spilled_bytes += p->spilled->len;
    q->held_bytes += p->held;
    if (q->held_bytes > q->held_peak)
        q->held_peak = q->held_bytes;
    atomic_fetch_add(&q->r->held_local, p->held_here);
}

/* After a task's outputs were held: over the memory budget (the context's
 * charges and every query's outputs held here), q fails and stops. (Running
 * tasks' working memory is checked as they charge it, failing their own
 * query: df_exec's shared account, runner_local.c.) Called
 * with q->lock held. */
static void check_budget(runner_query *q)
{
    runner *r = q->r;
    if (r->memory_budget <= 0 || q->error.status != FR_OK)
        return;
    int64_t charged = runner__others_charged(r), held = atomic_load(&r->held_local);
    if (charged + held <= r->memory_budget)
        return;
    fr_error_setk(&q->error, FR_ENOSPACE, "memory-budget-exceeded",
                  "the query's intermediate results (%lld bytes held by all queries, with %lld "
                  "of kept results, dataframes, upload checks and results read back from disk) "
                  "went over the memory budget "
                  "(--memory-limit "
                  "%lld); delete dataframes or query results, or raise the limit",
                  (long long)held, (long long)charged, (long long)r->memory_budget);
    atomic_store(&q->cancel, true);
}

void runner__spill_held(runner_query *q, int64_t min_bytes)
{
    /* the parts are picked under the lock and written without it (status
     * reads must not wait for the disk): no other task of q runs, so only
     * this task's end could touch q->out meanwhile, and it has not begun */
    pthread_mutex_lock(&q->lock);
    int nstages = q->out && !q->collect ? plan_physical_nstages(q->plan) : 0, n = 0, cap = 0;
    struct runner_part **pick = NULL;
    for (int s = 0; s < nstages; s++) {
        if (!q->out[s])
            continue;
        struct plan_stage_view v;
        plan_stage_view(q->plan, s, &v);
        for (int t = 0; t < v.ntasks; t++)
            for (int b = 0; q->out[s][t] && b < v.nbuckets; b++) {
                struct runner_part *p = q->out[s][t][b];
                if (!p || !p->table || p->url || p->spilled || p->held_here < min_bytes)
                    continue;
                if (n == cap) {
                    cap = cap ? 2 * cap : 64;
                    pick = fr_xrealloc(pick, sizeof(*pick) * (size_t)cap);
                }
                pick[n++] = p;
            }
    }
    pthread_mutex_unlock(&q->lock);
    int done = 0;
    for (; done < n; done++) {
        struct fr_error err;
        fr_error_init(&err);
        if (runner__spill(q->r, pick[done], &err) != FR_OK) {
            FR_LOG(FR_LOG_WARN, "query %s: a stage output stays in memory: %s", q->id, err.message);
            break;
        }
    }
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < done; i++) {
        atomic_fetch_sub(&q->r->held_local, pick[i]->held_here);
        pick[i]->held_here = 0;
        q->spilled_bytes += pick[i]->spilled->len;
    }
    pthread_mutex_unlock(&q->lock);
    free(pick);
}

/* After job's success: the buckets it alone read (its own bucket of each
 * task of an earlier stage no later stage reads) are freed now rather than
 * when its whole stage ends, so a wide shuffle (an aggregation into as many
 * groups as rows) is not held twice, as input and output, in full. A task
 * that fails keeps its inputs for its retry. */
static void free_consumed(runner_query *q, const struct rjob *job, const struct plan_stage_view *v)
{
    if (v->stored_parts)
        return;
    for (int k = 0; k < v->nslots; k++) {
        int src = v->slots[k].stage;
        if (v->slots[k].mode != PLAN_SLOT_BUCKET || q->last_consumer[src] != job->stage ||
            !q->out[src])
            continue;
        struct plan_stage_view sv;
        plan_stage_view(q->plan, src, &sv);
        for (int b = job->task; b <= job->bucket_hi && b < sv.nbuckets; b++)
            for (int t = 0; t < sv.ntasks; t++)
                if (q->out[src][t] && q->out[src][t][b]) {
                    drop_output(q, q->out[src][t][b]);
                    q->out[src][t][b] = NULL;
                }
    }
}

void runner__task_done(struct rjob *job, int rc, struct runner_part **outs, int nouts,
                       const struct fr_error *err, int64_t null_errors, const char *config_id)
{
    runner_query *q = job->q;
    pthread_mutex_lock(&q->lock);
    count_task(q->r, job, rc);
    struct plan_stage_view v;
    plan_stage_view(q->plan, job->stage, &v);
    runner__task_end_locked(job, rc, outs, nouts, err);
    if (rc == FR_OK) {
        bool no_inputs = true; /* its outputs can be made again by it alone */
        for (int k = 0; k < job->nslots; k++)
            no_inputs = no_inputs && job->ninputs[k] == 0;
        for (int b = 0; b < nouts && no_inputs; b++)
            if (outs[b]) {
                outs[b]->lineage = json_incref(job->spec);
                outs[b]->bucket = b;
                outs[b]->made_stage = job->stage;
                outs[b]->made_task = job->task;
            }
        q->out[job->stage][job->task] =
            fr_xcalloc((size_t)v.nbuckets + 1, sizeof(struct runner_part *));
        for (int b = 0; b < nouts && b < v.nbuckets; b++) {
            q->out[job->stage][job->task][b] = outs[b];
            hold(q, outs[b]);
        }
        free_consumed(q, job, &v);
        check_budget(q);
        for (int b = v.nbuckets; b < nouts; b++)
            runner__part_free(q->r, outs[b]);
        q->task_rows[job->task] = nouts && outs[0] ? outs[0]->rows : 0;
        q->limit_ended += job->stage == q->stage;
        update_limit(q, v.limit_rows);
    } else if (may_rerun(q, rc, err)) {
        q->restart_pending = true; /* a partition died with its worker: recompute */
    } else if (q->error.status == FR_OK) {
        q->error = *err;
        atomic_store(&q->cancel, true);
    }
    struct rjob **skip = job->stage == q->stage ? release_held(q) : NULL;
    free(outs);
    q->null_errors += null_errors;
    if (config_id && job->starts > 0) /* only the configs tasks ran with */
        note_config(q, config_id);
    q->tasks_done++;
    bool drop = --q->pending == 0 ? advance(q) : false;
    pthread_mutex_unlock(&q->lock);
    runner__job_free(job);
    for (int i = 0; skip && skip[i]; i++) /* past the limit: ended unrun, as a skip */
        runner__task_done(skip[i], FR_OK, NULL, 0, NULL, 0, NULL);
    free(skip);
    if (drop)
        runner__finished(q);
}

void runner__repair_started(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    q->tasks_total++;
    pthread_mutex_unlock(&q->lock);
}

void runner__repair_ended(struct rjob *rep, int rc, struct runner_part *const *outs, int nouts,
                          const struct fr_error *err)
{
    pthread_mutex_lock(&rep->q->lock);
    count_task(rep->q->r, rep, rc);
    runner__task_end_locked(rep, rc, outs, nouts, err);
    rep->q->tasks_done++;
    pthread_mutex_unlock(&rep->q->lock);
}

void runner__job_free(struct rjob *job)
{
    runner_query *q = job->q;
    json_decref(job->spec);
    for (int k = 0; k < 3; k++)
        free(job->inputs[k]);
    free(job->avoid_url);
    free(job);
    runner_query_unref(q);
}

int runner_admit(runner *r, struct fr_error *err)
{
    return r->be->admit ? r->be->admit(r, err) : FR_OK;
}

/* A failed call never fires its callback: when the first stage cannot be
 * started (nothing was enqueued yet), the start is undone, q ends failed
 * (settled, so waiters wake) and on_finish does not run. */
int runner_submit(runner *r, runner_query *q, struct fr_error *err)
{
    int nstages = plan_physical_nstages(q->plan);
    pthread_mutex_lock(&q->lock);
    int rc = FR_OK;
    if (q->state != RQ_QUEUED) {
        pthread_mutex_unlock(&q->lock);
        return fr_error_set(err, FR_ECONFLICT, "the query was already started or cancelled");
    }
    q->r = r;
    snprintf(q->config_id, sizeof(q->config_id), "%s", r->frozen->id);
    compute_consumers(q, nstages);
    q->out = fr_xcalloc((size_t)nstages + 1, sizeof(*q->out));
    q->tasks_total = count_tasks(q->plan);
    runner__tasks_init(q);
    q->state = RQ_RUNNING;
    q->started_us = fr_mono_us();
    runner_query_ref(q); /* the runner's reference, dropped when it finishes */
    pthread_mutex_lock(&r->lock);
    r->running++;
    pthread_mutex_unlock(&r->lock);
    rc = start_stage(q, err);
    if (rc != FR_OK) { /* start_stage fails before it enqueues anything */
        q->error = *err;
        finish(q, RQ_FAILED); /* frees the stage state, the running count */
        q->settled = true;
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    if (rc != FR_OK)
        runner_query_unref(q); /* the runner's reference; the hook never runs */
    return rc;
}
