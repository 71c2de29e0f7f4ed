/* context_int: the context's state, shared by its files (not a face). */
#ifndef FRAMED_CONTEXT_INT_H
#define FRAMED_CONTEXT_INT_H

#include "context.h"

#include "../config/config.h"
#include "../engine/engine.h"
#include "../history/history.h"
#include "../plan/plan.h"
#include "../runner/runner.h"
#include "../store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

enum ctx_runner_state { CTX_RUNNER_NONE, CTX_RUNNER_ACTIVE, CTX_RUNNER_DRAINING };

/* A dataframe's preview runs its ops over the first this many rows of each
 * source (or num_preview_rows, if larger), never over the whole data. */
#define CTX_PREVIEW_SCAN_ROWS 65536

struct ctx_frame {
    char id[40];
    json_t *plan;
    struct df_schema schema;
    char config_id[80];
    int64_t created_ms;
    runner_query *last_run; /* the latest run of it, for materialization */
    char **part_ids;        /* materialized partitions kept in the runner */
    int nparts;
    int64_t part_rows;
    int64_t bytes;      /* its charge on the memory budget, taken over from its run */
    char run_qid[40];   /* the query record whose result this data is ("" = none) */
    json_t *preview;    /* the rows shown when it was created */
    bool preview_exact; /* they are the dataframe's first rows (else rows of its ops over
                           the first rows of each source) */
    json_t *formats;    /* {dataset: format} of the datasets its plan read when created */
    char *sql;          /* the SQL it was made from (new), or NULL */
    char name[72];      /* its SQL table name, "" if none */
};

/* A dataframe already has this name, ignoring case (context lock held). */
bool ctx__frame_name_taken(ctx *c, const char *name);
/* A planner's refusal (invalid-plan, invalid-expression) of the plan SQL
 * compiled into, as invalid-sql at the statement; other errors as they are.
 * Returns err's status. */
int ctx__sql_plan_error(const ctx_sql *s, struct ctx_error *err);

/* A dataframe's run must read its datasets as it was created: each in the
 * same format, and the plan giving the same schema (p, when not NULL):
 * else 409 dataset-changed naming the dataset and what changed. */
int ctx__frame_check(ctx *c, const char *frame_id, const plan_physical *p, struct ctx_error *err);

/* A query result's charge on the memory budget (context lock), shared by
 * the query's record until it lets go (DELETE of the result, the record
 * evicted or reset) and by each read of the result in progress (ctx_result):
 * the last of them takes the bytes off the budget and releases the result
 * (its tables here, its partitions on the workers when its runner is still
 * the context's; a reset's workers dropped them already). */
struct ctx__charge {
    int refs;
    int64_t bytes;   /* 0 until the query succeeds, and while a frame holds its data */
    runner_query *q; /* a reference */
    char runner[64]; /* the ID of the runner it ran on */
};

struct ctx_qrec {
    char id[40];
    runner_query *q;
    char frame_id[40]; /* "" when the query ran a plan */
    int64_t created_ms;
    struct ctx__charge *charge; /* new; NULL once the record let go of it (dropped) */
    bool released;              /* its result was a dataframe's data, released with it (410) */
    bool dropped; /* its result was released by DELETE /v1/queries/{id}/result (410) */
    json_t *sql;  /* {"sql", "plan"} of a query made from SQL (new), or NULL */
};

struct ctx {
    struct ctx_options opts; /* strings owned */
    char *state_path;
    int64_t started_ms;   /* fr_mono_ms: for uptime */
    pthread_mutex_t lock; /* "context lock": every field below */
    pthread_cond_t cond;  /* broadcast when inflight drops and when a runner's query ends */
    struct cfg pending;
    store *store;
    runner_registry *registry; /* the workers that announced themselves (own lock) */
    char sender[40];           /* this coordinator's id in signed requests */
    runner *runner;
    enum ctx_runner_state runner_state;
    char config_id[80];
    int64_t frozen_at_ms;
    char frozen_by[136]; /* a whole request ID: [A-Za-z0-9._-]{1,128} (http_request.c) */
    int inflight;        /* requests using the runner outside the lock */
    /* The freeze: the snapshot is taken under the lock, the runner (a store
     * hold: I/O) is created outside it with freezing set, so other requests
     * answer meanwhile; config changes get 409 and first requests wait on
     * cond for this one freeze. freeze_gen counts finished freezes; a failed
     * one leaves its error for the requests that waited on it. */
    bool freezing;
    uint64_t freeze_gen;
    uint64_t freeze_failed_gen; /* the freeze_gen of the last failed freeze */
    int freeze_fail_status;
    char freeze_fail_kind[48];
    char freeze_fail_msg[512];
    struct ctx_frame **frames;
    int nframes;
    char **name_holds; /* dataframe names being created (new copies): taken meanwhile */
    int nname_holds;
    struct ctx_qrec **queries;
    int nqueries;
    atomic_llong mem_used; /* under the lock; atomic for the runner's reads */
    atomic_llong checking; /* what the upload checks running now hold (df_exec): the budget's too */
    atomic_llong read_back; /* spilled result parts read back that readers hold: the budget's too */
    int64_t tasks_retired[RUNNER_TASK_OUTCOMES]; /* task counters of runners torn down */
    bool shutting_down;
    bool cancelling; /* ctx_cancel_all ran: waiting requests return at once */
    int64_t queries_by_state[5];
    struct ctx__datasets *datasets; /* schema cache and name locks (own locks) */
    history *history;               /* NULL when it could not be opened (own lock) */
    atomic_llong history_failures;  /* writes lost for want of a history, the open's failure */
    struct ctx__bus *events;        /* GET /v1/events (own lock) */
    struct ctx__live *live;         /* the live thread (context_live.c) */
};

/* Error helpers: set status, kind and message on a ctx_error. */
int ctx__fail(struct ctx_error *e, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ctx__random_id(const char *prefix, char *out, size_t outsz);

/* Creates the runner if there is none (the freeze), exactly once. On
 * success the caller holds an inflight reference: call ctx__runner_release.
 * FR_EUNAVAILABLE runner-draining while a reset drains. */
int ctx__runner_acquire(ctx *c, const char *request_id, runner **r, struct ctx_error *err);
void ctx__runner_release(ctx *c);
/* The effective config (frozen if a runner exists, else pending), copied. */
void ctx__effective_config(ctx *c, struct cfg *out);
/* The plan environment (data dir, dataframe lookup). */
void ctx__plan_env(ctx *c, struct plan_env *env);
/* Drops every frame (runner reset). Called with the lock held. */
void ctx__frames_clear(ctx *c);
void ctx__queries_clear(ctx *c);
/* Writes framed_tasks_total{outcome} (context lock held). */
void ctx__tasks_metrics(ctx *c, struct fr_buf *out);
/* The freeze protocol, the one copy: validates plan under a snapshot of the
 * config the request would run with (so a bad plan never freezes), acquires
 * the runner (freezing if needed) and plans again when the config changed
 * before the freeze. On FR_OK *out (new) is planned under runner_config(*r)
 * and the caller holds an inflight reference (ctx__runner_release); on an
 * error nothing is held. limit as plan_build's (-1 = none). */
int ctx__plan_frozen(ctx *c, json_t *plan, const char *request_id, int64_t limit, runner **r,
                     plan_physical **out, struct ctx_error *err);
/* "local" or "remote": the kind of runner a freeze creates. */
const char *ctx__runner_kind(const ctx *c);
/* context_frames.c: rows of t as a JSON array (new); a schema as
 * [{"name","type"}] (new); keeps a dataframe run's partitions (lock held). */
json_t *ctx__rows_json(const struct df_table *t, int64_t start, int64_t n);
json_t *ctx__schema_json(const struct df_schema *s);
void ctx__frame_materialize(ctx *c, struct ctx_qrec *rec);
/* Dataframe frame_id exists and its data is query qid's result (context lock held). */
bool ctx__frame_holds(ctx *c, const char *frame_id, const char *qid);
/* The memory budget (c->mem_used, context lock held): every charged byte has
 * one owner, a query result's charge (struct ctx__charge: its record and the
 * reads in progress) or a dataframe (the result of its latest run, handed
 * over by ctx__frame_materialize), and is released once.
 * ctx__frame_data_release releases a frame's charge and, with it, the
 * result of the run it came from (that query's result answers 410
 * result-released): a delete, a rerun or a reset frees the bytes. */
void ctx__frame_data_release(ctx *c, const char *qid, int64_t bytes);
/* Copies an fr_error into a ctx_error. */
int ctx__from_fr(struct ctx_error *e, const struct fr_error *f);

/* Dataset files (context_datasets.c). _new sweeps data_dir of what a killed
 * server left (interrupted uploads, a replaced format) and logs it. */
struct ctx__datasets *ctx__datasets_new(const char *data_dir);
void ctx__datasets_free(struct ctx__datasets *d);
/* The lock that serializes commits and deletes of one dataset name. */
pthread_mutex_t *ctx__dataset_lock(ctx *c, const char *name);
/* The cached schema of the file at key whose stat is st: true on a hit, with
 * *schema (new, or NULL) and *error (new, or NULL) copied out. */
bool ctx__schema_cache_get(ctx *c, const char *key, const struct stat *st, json_t **schema,
                           char **error);
/* Remembers a schema (copied) or an error for (key, st); evicts the least
 * recently used entry when full. */
void ctx__schema_cache_put(ctx *c, const char *key, const struct stat *st, const json_t *schema,
                           const char *error);
int ctx__schema_cache_count(ctx *c);

/* The history (context_history.c). A failed write never fails the caller:
 * it is logged at error and counted (framed_history_errors_total). None of
 * these is called with the context lock held. */
void ctx__history_open(ctx *c);
void ctx__history_close(ctx *c);
/* A freeze that made r (frozen by request_id at at_ms). */
void ctx__history_freeze(ctx *c, runner *r, const char *request_id, int64_t at_ms);
/* The runner id left: reset by request_id, or (request_id NULL) ended with the process. */
void ctx__history_runner_gone(ctx *c, const char *runner_id, const char *request_id);
/* rec accepted on r; plan (borrowed) is the plan it runs: its dataframe's
 * when rec->frame_id is set (kept as {"dataframe": id, "plan": plan}); a
 * query made from SQL (rec->sql) is kept as {"sql": text, "plan": plan}. */
void ctx__history_query_accepted(ctx *c, runner *r, const struct ctx_qrec *rec, json_t *plan);
/* The runner took the query id (runner_submit succeeded): its start. */
void ctx__history_query_started(ctx *c, const char *id);
/* q (its record's id, accepted on runner runner_id) reached its final state;
 * started: the runner started it (false after a failed submit). */
void ctx__history_query_finished(ctx *c, runner_query *q, const char *id, const char *runner_id,
                                 bool started);
/* Records a query's stages (JSON, borrowed; the live stages part fills it). */
void ctx__history_query_stages(ctx *c, const char *id, json_t *stages);
/* A query no longer in memory, from the history (context lock not held):
 * *out its past status ("archived"); FR_ENOTFOUND query-not-found. */
int ctx__history_query_get(ctx *c, const char *id, json_t **out, struct ctx_error *err);
/* The result of a query no longer in memory: 410 result-released naming
 * the reset (ext runner_id, reset_at) when the history knows it, else
 * query-not-found. Always returns an error status. */
int ctx__history_result_gone(ctx *c, const char *id, struct ctx_error *err);
/* GET /v1/queries/{id}/stages of a query no longer in memory: its recorded
 * stages (or none recorded: "stages": []), as they were at its end.
 * FR_ENOTFOUND query-not-found. */
int ctx__history_query_stages_get(ctx *c, const char *id, json_t **out, struct ctx_error *err);
/* framed_history_errors_total (no lock needed). */
void ctx__history_metrics(ctx *c, struct fr_buf *out);
/* "history: ..." lines for /readyz, appended to b. */
void ctx__history_ready_detail(ctx *c, struct fr_buf *b);
/* The event bus (context_events.c), on its own for its tests. */
/* new: a bus whose ids go on from its start time in ms x 1000, so an id
 * from an earlier run of the server is older than all of them (a resume
 * from it says reset). ctx__bus_new_at: from base (tests). */
struct ctx__bus *ctx__bus_new(int max_subs);
struct ctx__bus *ctx__bus_new_at(int max_subs, int64_t base);
void ctx__bus_free(struct ctx__bus *b); /* accepts NULL */
/* Appends an event of type (a CTX_EVENT_* bit) with data (stolen) and wakes
 * the subscribers; returns its sequence number. */
int64_t ctx__bus_publish(struct ctx__bus *b, unsigned type, json_t *data);
void ctx__bus_tick(struct ctx__bus *b);
void ctx__bus_close(struct ctx__bus *b);
int ctx__bus_subscribe(struct ctx__bus *b, unsigned types, int64_t last_id, void (*wake)(void *),
                       void *arg, ctx_event_sub **out, struct fr_error *err);
int ctx__bus_streams(struct ctx__bus *b);
/* context_live.c: the bus and its thread (~4 Hz: query progress, at most 4
 * events a second a query; every second stats, worker changes and a tick),
 * started by ctx_new, stopped first thing in ctx_free. */
int ctx__live_start(ctx *c, struct fr_error *err);
void ctx__live_stop(ctx *c);
/* One-line hooks: a query accepted (c->lock held, before its submit: the
 * event has the runner's config ID and the plan's task count it is about to
 * get; the live thread publishes its progress), the runner's state changed
 * (c->lock held). */
void ctx__live_query(ctx *c, runner_query *q, const char *frame_id);
/* The final event of q: from its end (the on_finish hook, or a failed
 * submit), with c->lock held. */
void ctx__live_query_final(ctx *c, runner_query *q, const char *frame_id);
void ctx__live_runner(ctx *c);

#endif
