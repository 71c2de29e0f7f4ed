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
    int busy;            /* jobs running now */
    bool alone_running;  /* the one running is a job that runs alone */
    pthread_t *threads;
    struct pool_thread *args;
    int nthreads;
};

static bool retryable(int rc)
{
    return rc == FR_EIO;
}

/* A task that took the server over its memory budget runs again alone:
 * nothing starts beside it (the pool waits for the running ones to end
 * first), and its query's stage outputs held in memory are spilled before
 * it starts. It goes to the head of the queue. Over the budget again, the
 * query fails. */
static void enqueue_alone(struct local_runner *l, struct rjob *job)
{
    job->alone = true;
    pthread_mutex_lock(&l->queue_lock);
    job->next = l->head;
    l->head = job;
    if (!l->tail)
        l->tail = job;
    pthread_cond_broadcast(&l->queue_cond);
    pthread_mutex_unlock(&l->queue_lock);
}

static bool over_budget(int rc, const struct fr_error *err)
{
    return rc == FR_ENOSPACE && strcmp(err->kind, "memory-budget-exceeded") == 0;
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
    struct df_table **read_back[3] = {NULL, NULL, NULL}; /* spilled inputs, this task's copies */
    int rc = FR_OK;
    for (int k = 0; k < job->nslots; k++) {
        inputs[k] = fr_xcalloc((size_t)job->ninputs[k] + 1, sizeof(struct df_table *));
        read_back[k] = fr_xcalloc((size_t)job->ninputs[k] + 1, sizeof(struct df_table *));
        for (int i = 0; i < job->ninputs[k] && rc == FR_OK; i++) {
            struct runner_part *p = job->inputs[k][i];
            if (p->spilled && !p->table) { /* charged as the task's own memory */
                rc = df_exec_charge(ex, p->bytes, err);
                if (rc == FR_OK)
                    rc = runner__spill_load(p, &read_back[k][i], err);
                inputs[k][i] = read_back[k][i];
                continue;
            }
            rc = runner__part_table(r, p, 0, err);
            inputs[k][i] = p->table;
        }
    }
    struct plan_io io = {.data_dir = plan_physical_data_dir(job->q->plan), .mode = PLAN_DATA_LOCAL};
    if (rc == FR_OK)
        rc = plan_task_execute_io(job->spec, &io, inputs, job->ninputs, ex, outs, nouts, err);
    if (rc == FR_OK) { /* what its source read, for the task records */
        job->scan_bytes = io.used != PLAN_READ_NONE ? io.scan_bytes : -1;
        job->scan_rows = io.rows_read;
    }
    for (int k = 0; k < 3; k++) {
        for (int i = 0; read_back[k] && i < job->ninputs[k]; i++)
            df_table_free(read_back[k][i]);
        free(read_back[k]);
        free(inputs[k]);
    }
    return rc;
}

/* Outputs go to disk when, held here with all else the budget counts, they
 * would leave less than a quarter of it for running tasks' working memory
 * (those tasks would fail the query): the largest first, none under 64 KiB.
 * Once a task of the query went over the budget (its tasks need more room
 * than a quarter), all of them go: the tasks after it then have the room
 * that running alone gave it, two or more at a time. A preview's are not
 * (its rows are read from memory at once). A failed spill leaves the rest
 * in memory, where the budget check judges them. */
#define SPILL_ROOM_DIV 4
#define SPILL_MIN_BYTES (64 << 10)

static void spill_outputs(runner *r, runner_query *q, struct runner_part **outs, int n)
{
    if (r->memory_budget <= 0 || q->collect || n <= 0 || !runner__spill_enabled(r))
        return;
    int64_t limit =
        atomic_load(&q->spill_all) ? 0 : r->memory_budget - r->memory_budget / SPILL_ROOM_DIV;
    int64_t used = runner__others_charged(r) + runner_memory_in_use(r), mine = 0;
    int64_t *bytes = fr_xcalloc((size_t)n, sizeof(*bytes)); /* measured once: 0 once spilled */
    for (int i = 0; i < n; i++) {
        bytes[i] = outs[i] && outs[i]->table ? df_table_bytes(outs[i]->table) : 0;
        mine += bytes[i];
    }
    while (used + mine > limit) {
        int big = -1;
        int64_t most = SPILL_MIN_BYTES - 1;
        for (int i = 0; i < n; i++) {
            if (bytes[i] > most) {
                most = bytes[i];
                big = i;
            }
        }
        if (big < 0)
            break;
        struct fr_error err;
        fr_error_init(&err);
        if (runner__spill(r, outs[big], &err) != FR_OK) {
            FR_LOG(FR_LOG_WARN, "query %s: a stage output stays in memory, the spill failed: %s",
                   q->id, err.message);
            atomic_store(&q->spill_all, false); /* the file is full: back to the quarter rule */
            break;
        }
        mine -= most;
        bytes[big] = 0;
    }
    free(bytes);
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
        if (job->alone && r->memory_budget > 0 && runner__spill_enabled(r))
            runner__spill_held(q, SPILL_MIN_BYTES); /* all the room there is */
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
        struct local_runner *l = (struct local_runner *)r;
        if (over_budget(rc, &err) && !job->alone) {
            FR_LOG(FR_LOG_INFO,
                   "query %s stage %d task %d went over the memory budget; it runs again alone, "
                   "with the query's stage outputs spilled",
                   q->id, job->stage, job->task);
            runner__task_retried(job, err.message);
            atomic_store(&q->spill_all, true);
            enqueue_alone(l, job);
            return;
        }
    }
    struct runner_part **outs = fr_xcalloc((size_t)ntables + 1, sizeof(*outs));
    for (int i = 0; i < ntables; i++)
        outs[i] = tables[i] ? runner__part_local(tables[i]) : NULL;
    free(tables);
    if (rc == FR_OK)
        spill_outputs(r, q, outs, ntables);
    runner__task_done(job, rc, outs, ntables, &err, ex.null_errors, r->frozen->id);
}

/* The process keeps the memory jobs free for the next ones (main.c); once
 * the pool has had nothing to do for this long (jemalloc's default decay of
 * freed pages), its first thread hands it back to the system, so an idle
 * server does not hold a query's peak. */
#define POOL_IDLE_TRIM_MS 10000

/* The head job may start now: none runs alone, and a job that runs alone
 * waits for the running ones (queue_lock held). */
static bool may_take(const struct local_runner *l)
{
    return l->head && !l->alone_running && !(l->head->alone && l->busy > 0);
}

/* Waits for a job to take or the stop (queue_lock held). */
static void pool_wait(struct local_runner *l, int index)
{
    while (!may_take(l) && !l->stopping) {
        if (l->head || index != 0 || !l->ran_since_trim) {
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
            l->busy++;
            l->alone_running = job->alone;
        }
        pthread_mutex_unlock(&l->queue_lock);
        if (!job)
            return NULL; /* stopping and drained */
        run_job(&l->base, job, self->index);
        pthread_mutex_lock(&l->queue_lock);
        l->busy--;
        if (l->busy == 0)
            l->alone_running = false;
        pthread_cond_broadcast(&l->queue_cond); /* a job waiting to run alone may go now */
        pthread_mutex_unlock(&l->queue_lock);
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
