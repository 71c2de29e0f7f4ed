/* runner_local: the local backend: a pool of threads inside the server runs
 * tasks with the runner's frozen config passed down as the task's options.
 * Partitions are tables in this process. */
#include "runner_int.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct local_runner;
struct pool_thread {
    struct local_runner *l;
    int index; /* shown in the task records */
};

struct local_runner {
    struct runner base;         /* first: a runner * is a struct local_runner * */
    pthread_mutex_t queue_lock; /* jobs, stopping, ran_since_trim */
    pthread_cond_t queue_cond;  /* timed waits on CLOCK_MONOTONIC */
    struct rjob *head, *tail;
    bool stopping;
    bool ran_since_trim; /* a job ran since the pool last handed memory back */
    pthread_t *threads;
    struct pool_thread *args;
    int nthreads;
};

static bool retryable(int rc)
{
    return rc == FR_EIO;
}

static void local_enqueue(runner *r, struct rjob *job)
{
    struct local_runner *l = (struct local_runner *)r;
    job->next = NULL;
    pthread_mutex_lock(&l->queue_lock);
    if (l->tail)
        l->tail->next = job;
    else
        l->head = job;
    l->tail = job;
    pthread_cond_signal(&l->queue_cond);
    pthread_mutex_unlock(&l->queue_lock);
}

/* Runs the task on this thread with the inputs' tables. */
static int execute(runner *r, struct rjob *job, struct df_exec *ex, struct df_table ***outs,
                   int *nouts, struct fr_error *err)
{
    struct df_table **inputs[3] = {NULL, NULL, NULL};
    int rc = FR_OK;
    for (int k = 0; k < job->nslots; k++) {
        inputs[k] = fr_xcalloc((size_t)job->ninputs[k] + 1, sizeof(struct df_table *));
        for (int i = 0; i < job->ninputs[k] && rc == FR_OK; i++) {
            rc = runner__part_table(r, job->inputs[k][i], 0, err);
            inputs[k][i] = job->inputs[k][i]->table;
        }
    }
    struct plan_io io = {.data_dir = plan_physical_data_dir(job->q->plan), .mode = PLAN_DATA_LOCAL};
    if (rc == FR_OK)
        rc = plan_task_execute_io(job->spec, &io, inputs, job->ninputs, ex, outs, nouts, err);
    if (rc == FR_OK) { /* what its source read, for the task records */
        job->scan_bytes = io.used != PLAN_READ_NONE ? io.scan_bytes : -1;
        job->scan_rows = io.rows_read;
    }
    for (int k = 0; k < 3; k++)
        free(inputs[k]);
    return rc;
}

/* df_exec's shared_add with a memory budget: the running tasks' working
 * memory counts against it with what the budget holds already. */
static int64_t working_add(void *arg, int64_t bytes, int64_t *budget)
{
    runner *r = arg;
    int64_t now = atomic_fetch_add(&r->working, bytes) + bytes;
    *budget = r->memory_budget;
    if (bytes <= 0 || r->memory_budget <= 0)
        return 0;
    int64_t total = now + atomic_load(&r->held_local) + runner__others_charged(r);
    return total > r->memory_budget ? total - r->memory_budget : 0;
}

static void run_job(runner *r, struct rjob *job, int thread)
{
    runner_query *q = job->q;
    pthread_mutex_lock(&q->lock);
    bool cancelled = atomic_load(&q->cancel);
    bool skip = q->limit_reached && q->stage == job->stage;
    pthread_mutex_unlock(&q->lock);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table **tables = NULL;
    int ntables = 0, rc = FR_OK;
    struct df_exec ex;
    df_exec_init(&ex, &r->opts, &q->cancel);
    if (r->memory_budget > 0) {
        ex.shared_add = working_add;
        ex.shared_arg = r;
    }
    if (cancelled) {
        rc = fr_error_set(&err, FR_ECANCELLED, "the query was cancelled");
    } else if (!skip) {
        runner__task_begin(job, NULL, NULL, thread);
        ex.deadline_us = fr_mono_us() + r->frozen->values.task_timeout_ms * 1000;
        rc = execute(r, job, &ex, &tables, &ntables, &err);
        df_exec_release(&ex, ex.mem_used); /* its outputs are held from here on, if kept */
        if (rc != FR_OK && retryable(rc) && job->attempt < r->frozen->values.task_max_retries) {
            FR_LOG(FR_LOG_WARN, "query %s stage %d task %d failed (%s), retry %d of %lld", q->id,
                   job->stage, job->task, err.message, job->attempt + 1,
                   (long long)r->frozen->values.task_max_retries);
            runner__task_retried(job, err.message);
            job->attempt++;
            local_enqueue(r, job);
            return;
        }
    }
    struct runner_part **outs = fr_xcalloc((size_t)ntables + 1, sizeof(*outs));
    for (int i = 0; i < ntables; i++)
        outs[i] = tables[i] ? runner__part_local(tables[i]) : NULL;
    free(tables);
    runner__task_done(job, rc, outs, ntables, &err, ex.null_errors, r->frozen->id);
}

/* The process keeps the memory jobs free for the next ones (main.c); once
 * the pool has had nothing to do for this long (jemalloc's default decay of
 * freed pages), its first thread hands it back to the system, so an idle
 * server does not hold a query's peak. */
#define POOL_IDLE_TRIM_MS 10000

/* Waits for a job or the stop (queue_lock held). */
static void pool_wait(struct local_runner *l, int index)
{
    while (!l->head && !l->stopping) {
        if (index != 0 || !l->ran_since_trim) {
            pthread_cond_wait(&l->queue_cond, &l->queue_lock);
            continue;
        }
        struct timespec until;
        fr_mono_deadline(&until, POOL_IDLE_TRIM_MS);
        int rc = 0;
        while (!l->head && !l->stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&l->queue_cond, &l->queue_lock, &until);
        if (rc == ETIMEDOUT && !l->head && !l->stopping) {
            l->ran_since_trim = false;
            pthread_mutex_unlock(&l->queue_lock);
            fr_big_release(); /* the kept big blocks too */
            malloc_trim(0);
            pthread_mutex_lock(&l->queue_lock);
        }
    }
}

static void *pool_main(void *arg)
{
    struct pool_thread *self = arg;
    struct local_runner *l = self->l;
    for (;;) {
        pthread_mutex_lock(&l->queue_lock);
        pool_wait(l, self->index);
        struct rjob *job = l->head;
        if (job) {
            l->head = job->next;
            if (!l->head)
                l->tail = NULL;
            l->ran_since_trim = true;
        }
        pthread_mutex_unlock(&l->queue_lock);
        if (!job)
            return NULL; /* stopping and drained */
        run_job(&l->base, job, self->index);
    }
}

static void local_stop(runner *r)
{
    struct local_runner *l = (struct local_runner *)r;
    pthread_mutex_lock(&l->queue_lock);
    l->stopping = true;
    pthread_cond_broadcast(&l->queue_cond);
    pthread_mutex_unlock(&l->queue_lock);
    for (int i = 0; i < l->nthreads; i++)
        pthread_join(l->threads[i], NULL);
    l->nthreads = 0;
}

static void local_destroy(runner *r)
{
    struct local_runner *l = (struct local_runner *)r;
    free(l->threads);
    free(l->args);
    pthread_mutex_destroy(&l->queue_lock);
    pthread_cond_destroy(&l->queue_cond);
    free(l);
}

static json_t *local_info(runner *r)
{
    struct local_runner *l = (struct local_runner *)r;
    return json_pack("{si}", "threads", l->nthreads);
}

static int local_slots(runner *r)
{
    int n = ((struct local_runner *)r)->nthreads;
    return n > 0 ? n : 1;
}

static const struct runner_backend local_backend = {
    .kind = "local",
    .enqueue = local_enqueue,
    .fetch = NULL,
    .drop = NULL,
    .stop = local_stop,
    .destroy = local_destroy,
    .info = local_info,
    .slots = local_slots,
};

int runner_local_new(struct cfg_frozen *frozen, store *st, int threads, runner **out,
                     struct fr_error *err)
{
    *out = NULL;
    struct local_runner *l = fr_xcalloc(1, sizeof(*l));
    runner__init(&l->base, &local_backend, frozen);
    pthread_mutex_init(&l->queue_lock, NULL);
    fr_cond_init_mono(&l->queue_cond);
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    l->threads = fr_xcalloc((size_t)threads, sizeof(pthread_t));
    l->args = fr_xcalloc((size_t)threads, sizeof(*l->args));
    int rc = runner__store_hold(&l->base, st, err);
    for (int i = 0; i < threads && rc == FR_OK; i++) {
        l->args[i] = (struct pool_thread){.l = l, .index = i};
        if (pthread_create(&l->threads[i], NULL, pool_main, &l->args[i]) != 0)
            rc = fr_error_setk(err, FR_EINTERNAL, "internal",
                               "cannot start local runner thread %d of %d", i + 1, threads);
        else
            l->nthreads++;
    }
    if (rc != FR_OK) {
        runner_free(&l->base, NULL); /* joins what started, releases the hold */
        return rc;
    }
    *out = &l->base;
    return FR_OK;
}
