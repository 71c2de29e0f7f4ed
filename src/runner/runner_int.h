/* runner_int: the runner module's shared structures (not a face). */
#ifndef FRAMED_RUNNER_INT_H
#define FRAMED_RUNNER_INT_H

#include "runner.h"

#include <stdatomic.h>

struct runner_query {
    atomic_int refcount;
    char id[64];
    plan_physical *plan;
    pthread_mutex_t lock; /* "query lock": everything below */
    pthread_cond_t cond;  /* signalled on reaching a final state */
    enum runner_qstate state;
    atomic_bool cancel;
    int64_t tasks_total, tasks_done;
    int64_t created_us, started_us, finished_us;
    struct fr_error error;
    int64_t null_errors;
    char config_id[80];
    json_t *task_config_ids; /* the distinct config IDs tasks reported (I1) */
    /* driver state */
    runner *r;
    int stage;
    int pending;
    struct df_table ****out; /* out[stage][task][bucket], NULL = not made */
    int *last_consumer;      /* per stage: the last stage reading it */
    struct df_table **stored; /* shared copies of a dataframe source's partitions */
    int nstored;
    struct df_table *boundaries;
    int64_t *task_rows; /* rows of bucket 0 per task of the current stage, -1 = pending */
    bool limit_reached;
    struct df_table **result;
    int nresult;
    bool settled; /* final and the on_finish hook has run: waiters wake on this */
    void (*on_finish)(runner_query *, void *);
    void *on_finish_arg;
};
/* Calls the on_finish hook (no locks held) then drops the runner's reference. */
void runner__finished(runner_query *q);

struct rjob {
    runner_query *q; /* a reference */
    int stage, task, attempt;
    json_t *spec;
    int nslots;
    struct df_table **inputs[3];
    int ninputs[3];
    struct rjob *next;
};

struct runner {
    struct cfg_frozen *frozen;
    struct df_options opts;
    pthread_mutex_t lock; /* "runner lock": kept partitions, running count */
    struct kept_part *kept;
    int nkept;
    int running;
    int64_t kept_seq;
    /* the local backend's pool */
    pthread_mutex_t queue_lock; /* jobs, stopping */
    pthread_cond_t queue_cond;
    struct rjob *head, *tail;
    bool stopping;
    pthread_t *threads;
    int nthreads;
};

struct kept_part {
    char *id;
    struct df_table *table;
};

void runner__enqueue(runner *r, struct rjob *job);
/* Called by a backend when a task ended (outputs stolen). */
void runner__task_done(struct rjob *job, int rc, struct df_table **outs, int nouts,
                       const struct fr_error *err, int64_t null_errors, const char *config_id);
void runner__job_free(struct rjob *job);
/* Looks up a kept partition; returns a shared copy (new) or NULL. */
struct df_table *runner__kept_get(runner *r, const char *id);

#endif
