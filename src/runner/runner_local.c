/* runner_local: the local backend: a pool of threads inside the server runs
 * tasks with the runner's frozen config passed down as the task's options;
 * and the runner's kept partitions (materialized dataframes). */
#include "runner_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool retryable(int rc)
{
    return rc == FR_EIO;
}

static void run_job(runner *r, struct rjob *job)
{
    runner_query *q = job->q;
    pthread_mutex_lock(&q->lock);
    bool skip = atomic_load(&q->cancel) || (q->limit_reached && q->stage == job->stage);
    pthread_mutex_unlock(&q->lock);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table **outs = NULL;
    int nouts = 0, rc = FR_OK;
    struct df_exec ex;
    df_exec_init(&ex, &r->opts, &q->cancel);
    if (skip && atomic_load(&q->cancel)) {
        rc = fr_error_set(&err, FR_ECANCELLED, "the query was cancelled");
    } else if (!skip) {
        ex.deadline_us = fr_mono_us() + r->frozen->values.task_timeout_ms * 1000;
        rc = plan_task_execute(job->spec, job->inputs, job->ninputs, &ex, &outs, &nouts, &err);
        if (rc != FR_OK && retryable(rc) && job->attempt < r->frozen->values.task_max_retries) {
            FR_LOG(FR_LOG_WARN, "query %s stage %d task %d failed (%s), retry %d of %lld", q->id,
                   job->stage, job->task, err.message, job->attempt + 1,
                   (long long)r->frozen->values.task_max_retries);
            job->attempt++;
            runner__enqueue(r, job);
            return;
        }
    }
    runner__task_done(job, rc, outs, nouts, &err, ex.null_errors, r->frozen->id);
}

static void *pool_main(void *arg)
{
    runner *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->queue_lock);
        while (!r->head && !r->stopping)
            pthread_cond_wait(&r->queue_cond, &r->queue_lock);
        struct rjob *job = r->head;
        if (job) {
            r->head = job->next;
            if (!r->head)
                r->tail = NULL;
        }
        pthread_mutex_unlock(&r->queue_lock);
        if (!job)
            return NULL; /* stopping and drained */
        run_job(r, job);
    }
}

void runner__enqueue(runner *r, struct rjob *job)
{
    job->next = NULL;
    pthread_mutex_lock(&r->queue_lock);
    if (r->tail)
        r->tail->next = job;
    else
        r->head = job;
    r->tail = job;
    pthread_cond_signal(&r->queue_cond);
    pthread_mutex_unlock(&r->queue_lock);
}

runner *runner_local_new(struct cfg_frozen *frozen, int threads)
{
    runner *r = fr_xcalloc(1, sizeof(*r));
    r->frozen = frozen;
    plan_options_from_cfg(&frozen->values, &r->opts);
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->queue_lock, NULL);
    pthread_cond_init(&r->queue_cond, NULL);
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    r->nthreads = threads;
    r->threads = fr_xcalloc((size_t)threads, sizeof(pthread_t));
    for (int i = 0; i < threads; i++)
        pthread_create(&r->threads[i], NULL, pool_main, r);
    return r;
}

void runner_free(runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->queue_lock);
    r->stopping = true;
    pthread_cond_broadcast(&r->queue_cond);
    pthread_mutex_unlock(&r->queue_lock);
    for (int i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    free(r->threads);
    for (int i = 0; i < r->nkept; i++) {
        free(r->kept[i].id);
        df_table_free(r->kept[i].table);
    }
    free(r->kept);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->queue_lock);
    pthread_cond_destroy(&r->queue_cond);
    cfg_frozen_unref(r->frozen);
    free(r);
}

const struct cfg_frozen *runner_config(const runner *r)
{
    return r->frozen;
}

const char *runner_kind(const runner *r)
{
    (void)r;
    return "local";
}

int runner_running(runner *r)
{
    pthread_mutex_lock(&r->lock);
    int n = r->running;
    pthread_mutex_unlock(&r->lock);
    return n;
}

json_t *runner_info(runner *r)
{
    pthread_mutex_lock(&r->lock);
    int64_t bytes = 0;
    for (int i = 0; i < r->nkept; i++)
        bytes += df_table_bytes(r->kept[i].table);
    json_t *j = json_pack("{ss si si sI si}", "kind", "local", "threads", r->nthreads,
                          "partitions", r->nkept, "partition_bytes", (json_int_t)bytes, "running",
                          r->running);
    pthread_mutex_unlock(&r->lock);
    return j;
}

static struct df_table *shared_copy(const struct df_table *t)
{
    int *idx = fr_xmalloc(sizeof(int) * (size_t)(t->ncols + 1));
    for (int i = 0; i < t->ncols; i++)
        idx[i] = i;
    struct df_table *c = df_table_project(t, idx, t->ncols);
    free(idx);
    return c;
}

int runner_keep_result(runner *r, runner_query *q, const char *prefix, char ***ids, int *n)
{
    struct df_table *const *parts;
    int nparts;
    if (runner_query_result(q, &parts, &nparts) != FR_OK)
        return FR_ECONFLICT;
    *ids = fr_xcalloc((size_t)nparts + 1, sizeof(char *));
    *n = nparts;
    pthread_mutex_lock(&r->lock);
    r->kept = fr_xrealloc(r->kept, sizeof(*r->kept) * (size_t)(r->nkept + nparts + 1));
    for (int i = 0; i < nparts; i++) {
        struct kept_part *k = &r->kept[r->nkept++];
        k->id = fr_xasprintf("%s-p%lld", prefix, (long long)r->kept_seq++);
        k->table = shared_copy(parts[i]);
        (*ids)[i] = fr_xstrdup(k->id);
    }
    pthread_mutex_unlock(&r->lock);
    return FR_OK;
}

void runner_drop_kept(runner *r, const char *prefix)
{
    size_t pl = strlen(prefix);
    pthread_mutex_lock(&r->lock);
    int w = 0;
    for (int i = 0; i < r->nkept; i++) {
        if (strncmp(r->kept[i].id, prefix, pl) == 0 && r->kept[i].id[pl] == '-') {
            free(r->kept[i].id);
            df_table_free(r->kept[i].table);
        } else {
            r->kept[w++] = r->kept[i];
        }
    }
    r->nkept = w;
    pthread_mutex_unlock(&r->lock);
}

struct df_table *runner__kept_get(runner *r, const char *id)
{
    struct df_table *t = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->nkept && !t; i++)
        if (strcmp(r->kept[i].id, id) == 0)
            t = shared_copy(r->kept[i].table);
    pthread_mutex_unlock(&r->lock);
    return t;
}
