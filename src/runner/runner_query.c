/* runner_query: the query object: its state machine, waiting, status JSON
 * and result access. The driver (runner_driver.c) moves it along. */
#include "runner_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *runner_qstate_name(enum runner_qstate s)
{
    static const char *const names[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    return names[s];
}

runner_query *runner_query_new(const char *id, plan_physical *plan)
{
    runner_query *q = fr_xcalloc(1, sizeof(*q));
    atomic_init(&q->refcount, 1);
    atomic_init(&q->cancel, false);
    snprintf(q->id, sizeof(q->id), "%s", id);
    q->plan = plan;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    q->state = RQ_QUEUED;
    q->created_us = fr_mono_us();
    fr_error_init(&q->error);
    q->task_config_ids = json_array();
    q->released_rows = -1;
    return q;
}

void runner_query_set_request_id(runner_query *q, const char *request_id)
{
    snprintf(q->request_id, sizeof(q->request_id), "%s", request_id ? request_id : "");
}

runner_query *runner_query_ref(runner_query *q)
{
    atomic_fetch_add(&q->refcount, 1);
    return q;
}

void runner_query_unref(runner_query *q)
{
    if (!q || atomic_fetch_sub(&q->refcount, 1) != 1)
        return;
    for (int i = 0; i < q->nresult; i++)
        df_table_free(q->result[i]);
    free(q->result);
    plan_physical_free(q->plan);
    json_decref(q->task_config_ids);
    runner__tasks_free(q);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    free(q);
}

void runner_query_cancel(runner_query *q)
{
    atomic_store(&q->cancel, true);
    pthread_mutex_lock(&q->lock);
    if (q->state == RQ_QUEUED) {
        q->state = RQ_CANCELLED;
        q->settled = true;
        q->finished_us = fr_mono_us();
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
}

static bool final(enum runner_qstate s)
{
    return s == RQ_SUCCEEDED || s == RQ_FAILED || s == RQ_CANCELLED;
}

bool runner_query_wait(runner_query *q, int64_t timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    if (timeout_ms > 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (timeout_ms % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
    }
    pthread_mutex_lock(&q->lock);
    while (!q->settled && timeout_ms != 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->cond, &q->lock);
        else if (pthread_cond_timedwait(&q->cond, &q->lock, &deadline) == ETIMEDOUT)
            break;
    }
    bool done = q->settled;
    pthread_mutex_unlock(&q->lock);
    return done;
}

enum runner_qstate runner_query_state(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    enum runner_qstate s = q->state;
    pthread_mutex_unlock(&q->lock);
    return s;
}

static json_t *error_json(const struct fr_error *e)
{
    json_t *j = json_pack("{ss ss}", "kind", e->kind[0] ? e->kind : fr_status_name(e->status),
                          "message", e->message);
    if (e->file[0])
        json_object_set_new(j, "file", json_string(e->file));
    if (e->line >= 0)
        json_object_set_new(j, "line", json_integer(e->line));
    if (e->row_group >= 0)
        json_object_set_new(j, "row_group", json_integer(e->row_group));
    if (e->column >= 0)
        json_object_set_new(j, "column", json_integer(e->column));
    if (e->field[0])
        json_object_set_new(j, "field", json_string(e->field));
    return j;
}

json_t *runner_query_json(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t rows = -1;
    if (q->state == RQ_SUCCEEDED && q->settled) {
        rows = q->released_rows >= 0 ? q->released_rows : 0;
        for (int i = 0; i < q->nresult; i++)
            rows += q->result[i]->nrows;
    }
    int64_t end = final(q->state) ? q->finished_us : fr_mono_us();
    int64_t start = q->started_us ? q->started_us : q->created_us;
    /* final only once settled: a "succeeded" query's result can be fetched */
    enum runner_qstate shown = final(q->state) && !q->settled ? RQ_RUNNING : q->state;
    json_t *j = json_pack(
        "{ss ss s{sI sI} so? sO so? sI so sI}", "id", q->id, "state", runner_qstate_name(shown),
        "progress", "tasks_total", (json_int_t)q->tasks_total, "tasks_done",
        (json_int_t)q->tasks_done, "config_id", q->config_id[0] ? json_string(q->config_id) : NULL,
        "task_config_ids", q->task_config_ids, "rows", rows >= 0 ? json_integer(rows) : NULL,
        "elapsed_ms", (json_int_t)((end - start) / 1000), "error",
        shown == RQ_FAILED ? error_json(&q->error) : json_null(), "null_errors",
        (json_int_t)q->null_errors);
    pthread_mutex_unlock(&q->lock);
    return j;
}

const struct fr_error *runner_query_error(runner_query *q)
{
    return &q->error;
}

int runner_query_result(runner_query *q, struct df_table *const **parts, int *nparts)
{
    pthread_mutex_lock(&q->lock);
    int rc = q->state == RQ_SUCCEEDED ? FR_OK : FR_ECONFLICT;
    *parts = q->result;
    *nparts = q->nresult;
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int64_t runner_query_rows(runner_query *q)
{
    int64_t rows = 0;
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < q->nresult; i++)
        rows += q->result[i]->nrows;
    pthread_mutex_unlock(&q->lock);
    return rows;
}

void runner_query_release_result(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    if (final(q->state) && q->released_rows < 0) { /* the result is collected by then */
        q->released_rows = 0;
        for (int i = 0; i < q->nresult; i++) {
            q->released_rows += q->result[i]->nrows;
            df_table_free(q->result[i]);
        }
        q->nresult = 0;
    }
    pthread_mutex_unlock(&q->lock);
}

int64_t runner_query_bytes(runner_query *q)
{
    int64_t bytes = 0;
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < q->nresult; i++)
        bytes += df_table_bytes(q->result[i]);
    pthread_mutex_unlock(&q->lock);
    return bytes;
}

void runner_query_on_finish(runner_query *q, void (*fn)(runner_query *, void *), void *arg)
{
    q->on_finish = fn;
    q->on_finish_arg = arg;
}

void runner_query_on_settled(runner_query *q, void (*fn)(runner_query *, void *), void *arg)
{
    q->on_settled = fn;
    q->on_settled_arg = arg;
}

void runner_query_fail(runner_query *q, const struct fr_error *err)
{
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < q->nresult; i++)
        df_table_free(q->result[i]);
    q->nresult = 0;
    for (int i = 0; i < q->nresult_parts; i++) { /* not kept by anyone now */
        runner__part_free(q->r, q->result_parts[i]);
        q->result_parts[i] = NULL;
    }
    q->error = *err;
    q->state = RQ_FAILED;
    pthread_mutex_unlock(&q->lock);
}

/* A result fetched from a worker must have the plan's columns and types: a
 * worker cannot make the query answer with a table of its own choosing. */
static int check_remote_result(const runner_query *q, const struct runner_part *p,
                               struct fr_error *err)
{
    const struct df_schema *s = plan_physical_schema(q->plan);
    const struct df_table *t = p->table;
    bool ok = t->ncols == s->nfields;
    for (int i = 0; ok && i < t->ncols; i++)
        ok = strcmp(t->names[i], s->fields[i].name) == 0 && t->cols[i]->type == s->fields[i].type;
    if (ok)
        return FR_OK;
    fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                  "worker %.200s sent result partition %.64s with columns that are not the "
                  "plan's (%d columns, the plan has %d); the result is refused",
                  p->url, p->id ? p->id : "?", t->ncols, s->nfields);
    return FR_EDATA;
}

/* Fetches remote result partition i, charging it to what is left of the
 * memory budget (*left, -1 = no budget) before it is kept. */
static int collect_one(runner_query *q, int i, int64_t *left, struct fr_error *err)
{
    struct runner_part *p = q->result_parts[i];
    if (p->table && !p->url) /* local: the context charges it when the query settles */
        return FR_OK;
    int64_t cap = *left >= 0 ? (*left > 0 ? *left : 1) : 0;
    int rc = runner__part_table(q->r, p, cap, err); /* a no-op once prefetched */
    if (rc == FR_ENOSPACE || (rc == FR_OK && *left >= 0 && df_table_bytes(p->table) > *left)) {
        fr_error_setk(err, FR_ENOSPACE, "memory-budget-exceeded",
                      "result partition %.64s from worker %.200s does not fit the memory budget "
                      "(--memory-limit %lld bytes); add a limit or a filter",
                      p->id ? p->id : "?", p->url, (long long)q->r->memory_budget);
        return FR_ENOSPACE;
    }
    if (rc == FR_OK)
        rc = check_remote_result(q, p, err);
    if (rc == FR_OK) /* one measure: what the context charges, not the worker's word */
        p->bytes = df_table_bytes(p->table);
    if (rc == FR_OK && *left >= 0)
        *left -= p->bytes;
    return rc;
}

/* Brings a succeeded query's result partitions here as tables (fetching
 * remote ones); a result that cannot be fetched, is not the plan's or does
 * not fit the memory budget fails the query. */
static void collect_result(runner_query *q)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = FR_OK;
    int64_t left = q->r->memory_budget > 0 ? q->r->memory_budget : -1;
    q->result = fr_xcalloc((size_t)q->nresult_parts + 1, sizeof(struct df_table *));
    for (int i = 0; i < q->nresult_parts && rc == FR_OK; i++) {
        rc = collect_one(q, i, &left, &err);
        if (rc == FR_OK)
            q->result[q->nresult++] = df_table_share(q->result_parts[i]->table);
    }
    pthread_mutex_lock(&q->lock);
    if (rc != FR_OK) {
        q->state = RQ_FAILED;
        q->error = err;
    }
    q->finished_us = fr_mono_us(); /* the elapsed time includes collecting the result */
    pthread_mutex_unlock(&q->lock);
}

void runner__finished(runner_query *q)
{
    runner *r = q->r;             /* outlives this call: runner_free joins its threads first */
    if (q->state == RQ_SUCCEEDED) /* final: only this thread touches the parts now */
        collect_result(q);
    if (q->on_finish)
        q->on_finish(q, q->on_finish_arg);
    pthread_mutex_lock(&q->lock);
    struct runner_part **parts = q->result_parts;
    int n = q->nresult_parts;
    q->result_parts = NULL;
    q->nresult_parts = 0;
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < n; i++) /* what runner_keep_result did not take */
        runner__part_free(q->r, parts[i]);
    free(parts);
    pthread_mutex_lock(&q->lock);
    q->settled = true;
    runner__tasks_settle_locked(q); /* the records go, their JSON stays */
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    if (q->on_settled)
        q->on_settled(q, q->on_settled_arg);
    runner_query_unref(q);
    runner__notify_idle(r);
}

const plan_physical *runner_query_plan(const runner_query *q)
{
    return q->plan;
}
