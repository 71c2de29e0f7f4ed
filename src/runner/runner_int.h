/* runner_int: the runner module's shared structures (not a face). */
#ifndef FRAMED_RUNNER_INT_H
#define FRAMED_RUNNER_INT_H

#include "runner.h"

#include <stdatomic.h>

struct runner_query {
    atomic_int refcount;
    char id[64];
    char
        request_id[FR_TRACE_ID_MAX + 1]; /* the request that made it, "" if none: sent to workers */
    plan_physical *plan;
    pthread_mutex_t lock; /* "query lock": everything below */
    pthread_cond_t cond;  /* signalled on reaching a final state */
    enum runner_qstate state;
    atomic_bool cancel;
    atomic_bool spill_all; /* a task went over the budget: its outputs all spill from then on */
    int64_t tasks_total, tasks_done;
    int64_t created_us, started_us, finished_us;
    struct fr_error error;
    int64_t null_errors;
    /* bytes of the stage outputs in q->out now and at most (the result's
     * parts leave the count when the query finishes) */
    int64_t held_bytes, held_peak;
    int64_t spilled_bytes; /* of its stage outputs written to the spill file */
    char config_id[80];
    json_t *task_config_ids; /* the distinct config IDs tasks reported (I1) */
    /* driver state */
    runner *r;
    int stage;
    int pending;
    struct runner_part ****out;  /* out[stage][task][bucket], NULL = not made */
    int *last_consumer;          /* per stage: the last stage reading it */
    struct runner_part **stored; /* borrowed views of a dataframe source's partitions */
    int nstored;
    int restarts; /* whole-plan reruns after lost partitions */
    bool restart_pending;
    struct df_table *boundaries;
    int64_t *task_rows; /* rows of bucket 0 per task of the current stage, -1 = pending */
    bool limit_reached;
    /* a stage with a row limit runs its tasks in order, at most slots() runnable
     * ones from the first unfinished one on: the rest wait here (new jobs),
     * enqueued as earlier ones end (all of them once 2 x slots() ended short of
     * the limit), or ended as skipped once the limit is reached */
    struct rjob **held;
    int nheld, held_next;
    int *task_ord;   /* new: per task of the stage, runnable tasks before it */
    int first_open;  /* the first task of the stage not ended (a forward cursor) */
    int limit_ended; /* tasks of the stage ended ok */
    /* the last stage's outputs, in order: once succeeded, the result until
     * runner_query_release_result; a part is a table here, or (remote, not
     * collected) a partition left on its worker, fetched when read */
    struct runner_part **result_parts;
    int nresult_parts;
    bool collect;             /* fetch remote result parts here before finishing (previews) */
    struct df_table **result; /* runner_query_result's array: borrowed from result_parts */
    int64_t released_rows;    /* rows of a result runner_query_release_result dropped, else -1 */
    bool settled;             /* final and the on_finish hook has run: waiters wake on this */
    void (*on_finish)(runner_query *, void *);
    void *on_finish_arg;
    void (*on_settled)(runner_query *, void *); /* after settled: the final state shown */
    void *on_settled_arg;
    /* task records (runner_tasks.c): every attempt, at most RUNNER_MAX_TASK_RECORDS */
    struct runner_task_rec *recs;
    int nrecs;
    struct runner_stage_sum *sums; /* per stage, from the submit on */
    char *stages_final;            /* new: once settled, the stages JSON text; recs freed */
    int64_t retries;               /* attempts that failed and ran again */
};

struct rjob;
/* runner_tasks.c: what each attempt of each task did, for the stage view.
 * Everything here is under the query lock. */
#define RUNNER_MAX_TASK_RECORDS 4096
/* RTS_SKIPPED: ended ok without running (the query's row limit was
 * reached). A task planned not to run (its shuffle partitions coalesced into
 * an earlier task's) gets no record: its stage's sum counts it (skipped). */
enum runner_task_state {
    RTS_QUEUED,
    RTS_RUNNING,
    RTS_OK,
    RTS_FAILED,
    RTS_RETRIED,
    RTS_CANCELLED,
    RTS_SKIPPED
};
struct runner_task_rec {
    int stage, task, attempt;
    char *worker;                    /* new: the worker's id, NULL = none (local, not known) */
    char *worker_url;                /* new, NULL when local */
    int thread;                      /* the local runner's thread index, -1 = remote */
    int64_t started_ms, finished_ms; /* wall clock; 0 = not yet */
    enum runner_task_state state;
    bool rerun; /* made again after a lost partition (a repair, a whole-plan rerun) */
    int64_t rows_in, bytes_in; /* -1: not counted (a source read from a file) */
    int64_t rows_out, bytes_out, bytes_shuffled;
    char *error; /* new, NULL when none */
};
struct runner_stage_sum {
    int64_t total, done, running;
    int64_t skipped;  /* of done: ended without running (planned so, or past the row limit) */
    int64_t promised; /* of total: a rerun's tasks counted before they are queued */
    /* of the attempts ok in the latest run of the plan, repairs left out */
    int64_t rows_in, rows_out, bytes_in, bytes_out, bytes_shuffled;
    int64_t first_start_ms, last_end_ms;
    bool truncated; /* a record of it was not kept (the query's records were full) */
    /* its shuffle partitions read by fewer tasks (runner_driver.c's coalesce):
     * how many partitions, by how many tasks, their bytes, the target (0 = none) */
    int coalesced_parts, coalesced_tasks;
    int64_t coalesced_bytes, coalesce_target;
};
/* At the submit (query lock held): the per-stage sums. */
void runner__tasks_init(runner_query *q);
void runner__tasks_free(runner_query *q);
/* At most this much of a settled query's stages JSON is kept; past it the
 * task lists go (tasks_truncated), the sums stay. */
#define RUNNER_STAGES_KEPT_MAX (256 * 1024) /* as the history keeps */
/* Once q is settled (query lock held): its stages JSON is kept as text, at
 * most RUNNER_STAGES_KEPT_MAX, and the task records are freed. */
void runner__tasks_settle_locked(runner_query *q);
/* A whole-plan rerun (query lock held): the stages' rows and bytes start
 * over, each stage's total grows by its tasks at once (so a stage not yet
 * rerun is not shown finished) and its end is cleared; the attempts stay
 * listed. */
void runner__tasks_restart_locked(runner_query *q);
/* job is waiting to run (query lock held / not held). */
void runner__task_queued_locked(struct rjob *job);
void runner__task_queued(struct rjob *job);
/* job's attempt starts on worker (id and URL; NULL, NULL and thread >= 0 when local). */
void runner__task_begin(struct rjob *job, const char *worker_id, const char *worker_url,
                        int thread);
/* job's attempt failed and it will run again (why: borrowed). */
void runner__task_retried(struct rjob *job, const char *why);
/* job was planned not to run (query lock held): its stage counts it ended
 * and skipped (tasks_skipped), with no task record. */
void runner__task_skipped_locked(struct rjob *job);
/* job ended with rc (query lock held): outs its outputs (borrowed). */
void runner__task_end_locked(struct rjob *job, int rc, struct runner_part *const *outs, int nouts,
                             const struct fr_error *err);
/* Fetches the result tables, calls the on_finish hook (no locks held), drops
 * what nobody kept, then drops the runner's reference. */
void runner__finished(runner_query *q);

/* A task output: the table itself (local backend, or once fetched) and,
 * with a remote backend, where it lives. */
struct runner_part {
    struct df_table *table;
    char *url; /* the worker holding it; NULL when local */
    char *id;  /* its partition id on that worker */
    int64_t rows, bytes;
    bool borrowed; /* a view of a kept partition: freeing it drops nothing remote */
    /* a result read's piece: rows [range_start, range_start + rows) of the
     * worker's partition id, fetched alone (ranged) */
    bool ranged;
    int64_t range_start, range_total; /* the whole partition's rows */
    char request_id[FR_TRACE_ID_MAX + 1],
        query_id[64]; /* remote: whose task made it, "" if unknown (a view) */
    /* lineage: the spec of the input-free task that made it (a reference,
     * NULL when its task read inputs) and its bucket there, so a partition
     * lost with its worker can be made again by that one task */
    json_t *lineage;
    int bucket;
    int made_stage, made_task; /* the task of this query that made it, -1 = not known */
    char *kept_id;             /* a view: the kept partition it shows (new), else NULL */
    bool lost;                 /* kept: its worker was told to drop it (made again when needed) */
    int64_t held;              /* what it adds to its query's held_bytes while in q->out */
    int64_t held_here;         /* and to its runner's held_local (0: on a worker or on disk) */
    /* on disk (runner_spill.c): table NULL, rows and bytes as it was; its
     * region of the spill file, shared with its views (the last one out
     * gives it back) */
    struct runner_spilled *spilled;
};
struct runner_spilled {
    atomic_int refs;
    struct runner_spill_file *file; /* held: a view may outlive its runner */
    int64_t off, len;
};
struct runner_part *runner__part_local(struct df_table *t); /* steals t */
struct runner_part *runner__part_remote(const char *url, const char *id, int64_t rows,
                                        int64_t bytes);
/* Frees p; a remote partition that is not borrowed is dropped on its worker. */
void runner__part_free(runner *r, struct runner_part *p);
/* A kept partition (kept_id) was made again elsewhere: the kept entry
 * takes fresh (steals it) in place of the lost one, whose worker is not
 * asked to drop it (it is told to drop the whole config). False (fresh
 * freed) when the entry is gone (its dataframe was deleted). */
bool runner__kept_relocate(runner *r, const char *kept_id, struct runner_part *fresh);
/* The kept partitions on worker url are lost: it was told to drop the
 * config (after a hang); a query needing one makes it again. */
void runner__kept_mark_lost(runner *r, const char *url);
/* Makes sure p->table is there (fetching it from its worker, at most
 * max_bytes of it; 0 = the runner's default cap, runner__fetch_cap). */
int runner__part_table(runner *r, struct runner_part *p, int64_t max_bytes, struct fr_error *err);
/* What one fetched partition may weigh: the memory budget if set, else
 * twice task_memory_limit_bytes (a worker's task could not make more), else 0. */
int64_t runner__fetch_cap(const runner *r);

struct rjob {
    runner_query *q; /* a reference */
    int stage, task, attempt;
    int bucket_hi; /* a BUCKET slot's buckets task..bucket_hi (coalesced), else = task */
    json_t *spec;
    int nslots;
    struct runner_part **inputs[3];
    int ninputs[3];
    char *avoid_url;          /* a worker that failed this job */
    int64_t waiting_since_ms; /* remote: when it started waiting for a worker */
    bool config_reput;        /* remote: the config was put back once for it */
    int64_t not_before_ms;    /* remote: not sent again before then (0 = at once) */
    /* remote: a repair job makes again (by its lineage) the input
     * repair_part of repair_for, a job parked meanwhile; both borrowed */
    struct rjob *repair_for;
    struct runner_part *repair_part;
    bool owner_waited; /* remote: requeued once after an input's owner did not answer */
    int repairs;       /* remote: inputs made again for it so far */
    /* its record (runner_tasks.c): index + 1 of the current attempt's, 0 = none */
    int rec1;
    int rec_stage; /* the stage it is recorded under (a repair: the lost part's maker) */
    int starts;    /* attempts started so far */
    bool alone;    /* local: runs with no other task beside it (a retry over the budget) */
    bool running;  /* its current attempt started and has not ended */
    bool rerun;    /* made again after a lost partition */
    int64_t scan_bytes, scan_rows; /* what its source input held and gave, -1 = not known */
    uint64_t scan_file;            /* remote: its file input's key (path, size, mtime), 0 = none */
    int64_t local_wait_ms;         /* remote: when it began waiting for a worker with its file */
    struct rjob *next;
};

/* What a backend does; the driver and the kept partitions are shared. */
/* What fetching a remote partition needs, copied off its runner: a result
 * read after the runner was reset still has it (its fetches then fail, the
 * workers having dropped the config's partitions). */
struct runner_fetcher {
    char *config_id, *secret, *sender; /* new; secret NULL = unsigned */
    char *codecs;                      /* new; Accept-Encoding of fetches, NULL = none */
    int64_t timeout_ms, cap;           /* cap: the most bytes one partition may have */
};
/* Fetches remote p's table (p->table) with f, checked as a task input is
 * (rows as reported); runner_remote.c. */
int runner__fetcher_fetch(const struct runner_fetcher *f, struct runner_part *p,
                          struct fr_error *err);
void runner__fetcher_cleanup(struct runner_fetcher *f);
/* runner_remote_io.c: fetches remote p's table from its worker as peer,
 * checked as a task input is (its reported rows); errors name the worker. */
struct proto_peer;
int runner__fetch_as(const struct proto_peer *peer, int64_t timeout_ms, struct runner_part *p,
                     int64_t max_bytes, struct fr_error *err);
/* A file input's key (its path, size and mtime; never 0), 0 for a job without one. */
uint64_t runner__scan_key(const json_t *spec);
struct rjob;
/* The worker holding most of job's input bytes (borrowed), NULL when none is
 * remote; *whole: it holds them all. */
const char *runner__input_owner(const struct rjob *job, bool *whole);

struct runner_backend {
    const char *kind;
    void (*enqueue)(runner *r, struct rjob *job);
    /* fills p->table; a partition over max_bytes (0 = no limit) fails it, before it is kept */
    int (*fetch)(runner *r, struct runner_part *p, int64_t max_bytes, struct fr_error *err);
    void (*drop)(runner *r, struct runner_part *p); /* forgets a remote partition */
    /* fills *f with copies of what fetching r's partitions needs (remote only) */
    void (*fetcher)(runner *r, struct runner_fetcher *f);
    /* the worker at url stopped beating or does not answer now (NULL: never) */
    bool (*gone)(runner *r, const char *url);
    void (*stop)(runner *r);    /* joins threads; queued jobs drained */
    void (*destroy)(runner *r); /* frees the backend's state */
    json_t *(*info)(runner *r);
    /* NULL or FR_OK: a query may start; else why not (runner_submit fails) */
    int (*admit)(runner *r, struct fr_error *err);
    /* how many tasks may run at once now (threads; live workers' slots), >= 1 */
    int (*slots)(runner *r);
};

/* What a result read holds of its runner: a reset frees the runner while a
 * stream of its result may go on (the reset does not wait for readers), so
 * a result reaches the runner only through this, under its lock, and finds
 * r NULL once the runner is gone. */
struct runner_life {
    atomic_int refs;
    pthread_mutex_t lock;
    runner *r;
};

struct runner {
    const struct runner_backend *be;
    char id[40];  /* runner-<16 hex>: the holder of its store entry */
    store *store; /* borrowed; NULL: no store entry */
    bool held;    /* the store holds the frozen config under id */
    void (*on_idle)(void *);
    void *on_idle_arg;
    /* the lease renewal (runner_store.c): a thread while the store's holds expire */
    pthread_mutex_t renew_lock; /* renew_stop */
    pthread_cond_t renew_cond;
    bool renew_stop;
    bool renewing; /* the thread was started */
    pthread_t renew_thread;
    void *remote; /* the remote backend's state */
    struct cfg_frozen *frozen;
    struct df_options opts;
    pthread_mutex_t lock; /* "runner lock": kept partitions, running count */
    struct kept_part *kept;
    int nkept;
    int running;
    int64_t kept_seq;
    int64_t memory_budget;        /* --memory-limit: results fetched are charged to it; 0 = none */
    const atomic_llong *charged;  /* the rest of the budget's charges (the context's), or NULL */
    const atomic_llong *checking; /* and the owner's upload checks running now, or NULL */
    atomic_llong held_local;      /* stage outputs of all its queries held here (not on workers) */
    atomic_llong working;         /* what its running tasks have charged here (df_exec), local */
    atomic_llong *read_back;      /* spilled result parts read back, held by readers now: the
                                     owner's (it outlives r, as its readers may), or NULL */
    struct runner_life *life;     /* shared with its results' readers */
    atomic_llong tasks_by_outcome[RUNNER_TASK_OUTCOMES]; /* runner_driver.c counts them */
    struct runner_spill_file *spill; /* runner_spill.c: opened on the first spill */
};

/* Spills every stage output of q held in memory (of at least min_bytes):
 * before a task that runs alone, so it has all the room there is. No task
 * of q may run meanwhile. */
void runner__spill_held(runner_query *q, int64_t min_bytes);
void runner__spill_init(runner *r);
bool runner__spill_enabled(runner *r);
void runner__spill_cleanup(runner *r);
/* Writes p's table to the spill file and frees it: p is on disk then
 * (spilled). A no-op for a part that is not a local table. */
int runner__spill(runner *r, struct runner_part *p, struct fr_error *err);
/* A new table read back from spilled part p (p stays on disk). */
int runner__spill_load(const struct runner_part *p, struct df_table **out, struct fr_error *err);
/* Drops p's hold on its region (the last hold gives the region back). */
void runner__spill_release(struct runner_part *p);
/* Another hold on s (returns s; accepts NULL). */
struct runner_spilled *runner__spill_ref(struct runner_spilled *s);

struct kept_part {
    char *id;
    struct runner_part *part;
};

/* Called by a backend when a task ended (outputs and the array stolen). */
void runner__task_done(struct rjob *job, int rc, struct runner_part **outs, int nouts,
                       const struct fr_error *err, int64_t null_errors, const char *config_id);
void runner__job_free(struct rjob *job);
/* A repair job (remote) is a task of its query's progress and of the task
 * counts: started, the total grows; ended (rc its outcome), done does. */
void runner__repair_started(runner_query *q);
void runner__repair_ended(struct rjob *rep, int rc, struct runner_part *const *outs, int nouts,
                          const struct fr_error *err);
/* What the budget holds beside this runner: the owner's charges (kept
 * results, dataframes) and its upload checks running now. */
int64_t runner__others_charged(const runner *r);
/* A reference to r's life (runner_life above); unref accepts NULL. */
struct runner_life *runner__life_ref(runner *r);
void runner__life_unref(struct runner_life *life);
/* Looks up a kept partition; returns a borrowed view (new) or NULL. */
struct runner_part *runner__kept_get(runner *r, const char *id);
/* runner_registry.c, for the remote backend */
/* How long a task may wait for a busy worker that holds its inputs, or has its
 * own copy of the file it scans, while that worker finishes no task: the wait
 * counts from the later of the task's first wait and the worker's last
 * finished task (delay scheduling), so a loaded worker that keeps going keeps
 * its tasks, and only a stalled one loses them to a worker that must fetch the
 * inputs (or read the coordinator's copy by range). */
#define RUNNER_LOCALITY_WAIT_MS 500
/* ... and at most this long in all since its first wait: a deep queue for
 * one holder is shared with the idle workers in the end. */
#define RUNNER_LOCALITY_WAIT_MAX_MS (6 * RUNNER_LOCALITY_WAIT_MS)
/* Takes a slot on a worker for a task (returns its URL, new) or NULL. prefer:
 * the worker with its inputs; file: its scan key (0: none). wait_since < 0:
 * the task does not wait for locality; 0: it has not waited yet; else the
 * fr_mono_ms it began waiting. *held: a free worker was passed over to wait
 * for a busy one with the inputs or the file. */
char *runner__registry_pick(runner_registry *g, const char *prefer, const char *avoid,
                            uint64_t file, int64_t wait_since, bool *held, bool *any_alive);
/* The worker at url ran a scan of file (a scan key) reading its own copy
 * (local) or the coordinator's by range: later scans of it prefer a worker
 * with its own copy. */
void runner__registry_note_scan(runner_registry *g, const char *url, uint64_t file, bool local);
void runner__registry_done(runner_registry *g, const char *url, bool failed);
/* url answered a task (200): it is making progress (the locality wait). */
void runner__registry_progress(runner_registry *g, const char *url);
/* url is suspect until it beats again (a peer could not reach it); its
 * tasks in flight are not counted down. */
void runner__registry_suspect(runner_registry *g, const char *url);
bool runner__registry_gone(runner_registry *g, const char *url);
/* The id of the worker at url into out ("" when not known). */
void runner__registry_id_of(runner_registry *g, const char *url, char *out, size_t outsz);
char **runner__registry_urls(runner_registry *g);
/* How many workers are known and not gone (announced or static). */
int runner__registry_live(runner_registry *g);
/* Task slots (threads) of the workers not gone, at least 1. */
int runner__registry_slots(runner_registry *g);
/* A call to url hung or its partitions were given up: when its heartbeats
 * lapsed (suspect by missed beats, or gone) it owes a drop of config_id (the
 * runner's config and its partitions) and is told it when it is back, even
 * if it was forgotten meanwhile. A worker that merely timed out a call while
 * beating owes nothing. True when the drop is owed. */
bool runner__registry_owe_drop(runner_registry *g, const char *url, const char *config_id);
/* The release of config_id at a runner's reset failed on url: it owes that
 * drop, told once it is back (announced workers; false for a static one,
 * which has no heartbeat to answer). */
bool runner__registry_owe_release(runner_registry *g, const char *url, const char *config_id);
/* Whom the reset of config_id's runner calls (new, NULL-terminated): every
 * worker not gone; in the same look each gone announced worker owes that
 * drop, told once it is back (*gone: how many). */
char **runner__registry_release_targets(runner_registry *g, const char *config_id, int *gone);
/* url confirmed dropping config_id (its release answered): no drop of it is
 * owed any more. */
void runner__registry_forgive(runner_registry *g, const char *url, const char *config_id);
/* The live remote runner's config (NULL: none): drops owed of it are told by
 * that runner (runner__registry_take_returned), which also marks what the
 * worker held lost; drops owed of any other config (released runners) are
 * told in the registry's answer to the worker's heartbeat. */
void runner__registry_set_live(runner_registry *g, const char *config_id);
/* True when url is a worker of the registry (announced or static, gone or
 * not; a forgotten one is not). */
bool runner__registry_known(runner_registry *g, const char *url);
/* True when url's heartbeats lapsed (see above) or url is not known (a
 * forgotten worker): what it holds cannot be reached. */
bool runner__registry_lapsed(runner_registry *g, const char *url);
/* new (NULL when none): the announced workers that owe a drop of config_id
 * and are now active again (two heartbeats since) with no task running,
 * NULL-terminated; each debt is taken once. */
char **runner__registry_take_returned(runner_registry *g, const char *config_id);

/* runner_check.c: what is accepted from a worker (a partition ID by
 * proto_partition_id_ok). */
/* NULL when a task answer's outputs are an array of at most PLAN_MAX_BUCKETS
 * null or {"id": p-<hex>, "rows" >= 0, "bytes" >= 0}; else what is wrong
 * (static text). */
const char *runner__outputs_problem(json_t *outs);
/* FR_OK when the fetched p->table has the rows the worker reported, else
 * FR_EDATA invalid-worker-answer naming the worker. */
int runner__check_fetched(const struct runner_part *p, struct fr_error *err);
/* A count a worker's answer gives for the task records (scan.bytes,
 * source_rows): v when it is an integer from 0 to RUNNER_MAX_ANSWER_COUNT
 * (2^50; a larger claim is ignored), else -1. */
#define RUNNER_MAX_ANSWER_COUNT ((int64_t)1 << 50)
int64_t runner__answer_count(json_t *v);

/* Puts the runner's frozen canonical bytes back into the config store under
 * its own hold (a worker answered config-not-found: the store lost the key).
 * FR_OK when the store holds the bytes again; the caller then retries the
 * task. Implemented by runner_core.c (the runner owns its store entry). */
int runner__config_reput(runner *r, struct fr_error *err);

/* runner_lost.c, for the remote backend: a worker that stopped beating.
 * A job ended without outputs (a repair job's failure is its parked job's). */
void runner__job_failed(struct rjob *job, const struct fr_error *err);
void runner__fail_job(struct rjob *job, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* One of job's inputs (borrowed) whose worker's heartbeats lapsed (or that
 * its worker was told to drop: lost), or NULL: sent, the task would only
 * wait on it or fail. */
struct runner_part *runner__lapsed_input(runner_registry *g, const struct rjob *job);
/* Makes job's input lost again by the task that made it (its lineage) on
 * another worker; job is parked in the repair job until then. False when
 * lost has no lineage (its task read inputs): the driver reruns. */
bool runner__repair_start(runner *r, struct rjob *job, struct runner_part *lost);
/* A repair job's outputs (parts and the array stolen): the one its parked
 * job needs takes the lost partition's place (in the kept dataframe too),
 * and the parked job is sent. */
void runner__repair_done(runner *r, struct rjob *rep, struct runner_part **parts, int n);
/* The executor could not fetch an input from its owner (input-lost naming
 * it in body's "lost"): the owner is at fault. It is suspect until it beats
 * again, and job is sent again after three beats, when an owner that hung
 * has lapsed (dispatch then makes the input again, or the driver reruns);
 * once per job. True when job was requeued. */
bool runner__wait_for_owner(runner *r, runner_registry *g, struct rjob *job, const char *executor,
                            const struct fr_buf *body, const struct fr_error *err);

/* Shared by both backends: the runner's common fields. */
void runner__init(runner *r, const struct runner_backend *be, struct cfg_frozen *frozen);
void runner__cleanup(runner *r);
/* runner_store.c: puts the frozen config into st under the runner's hold
 * (st NULL: nothing) and starts the lease renewal when holds expire. */
int runner__store_hold(runner *r, store *st, struct fr_error *err);
/* Stops the renewal and releases the hold (FR_OK when there was none). */
int runner__store_unhold(runner *r, struct fr_error *err);
/* Calls the on_idle hook (runner_query.c, once a query has finished). */
void runner__notify_idle(runner *r);

#endif
