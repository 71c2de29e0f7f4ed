/* runner: executes physical plans with one frozen config for the runner's
 * whole life. A runner is created with a frozen config (the freeze), takes
 * queries (submit), cancels them, and is destroyed (teardown). The query
 * driver walks a plan's stages and hands each task, with its JSON spec and
 * its input partitions, to the backend: the local backend runs tasks on a
 * thread pool; a remote backend ships them to workers.
 *
 * The runner owns its config's store entry: a constructor puts the frozen
 * config into the store under the runner's own hold (its ID is the holder)
 * and runner_free releases it, so I4 is the runner's own invariant. With a
 * store whose holds are leases (Redis), a thread of the runner renews the
 * lease every lease/3 and puts the bytes back if the store lost them.
 *
 * Ownership: runner_*_new steal a reference to the frozen config (also when
 * they fail) and borrow the store, which must outlive the runner;
 * queries are reference counted (runner_query_ref/unref); tables returned by
 * getters are borrowed while the caller holds the query. */
#ifndef FRAMED_RUNNER_H
#define FRAMED_RUNNER_H

#include "../common/common.h"
#include "../config/config.h"
#include "../engine/engine.h"
#include "../plan/plan.h"
#include "../store/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct runner runner;
typedef struct runner_query runner_query;

enum runner_qstate { RQ_QUEUED, RQ_RUNNING, RQ_SUCCEEDED, RQ_FAILED, RQ_CANCELLED };
const char *runner_qstate_name(enum runner_qstate s);

/* The workers a coordinator knows: announced ones (with heartbeats) and a
 * static list. Thread-safe (one mutex, "registry lock"). It outlives
 * runners: workers announce themselves whether or not a runner exists. */
typedef struct runner_registry runner_registry;
/* new: static_urls is a comma-separated list or NULL. */
runner_registry *runner_registry_new(const char *static_urls, int64_t heartbeat_ms);
void runner_registry_free(runner_registry *g); /* accepts NULL */
/* An announce or heartbeat body; FR_EINVAL with a message for a bad one.
 * release (a JSON array, or NULL): the IDs of configs the worker must drop
 * now, released by runners while it hung, are appended (each told once). */
int runner_registry_announce(runner_registry *g, json_t *body, json_t *release,
                             struct fr_error *err);
/* Whether url may be a worker's announced URL: http(s)://host[:port], at most
 * a trailing '/', no path, query or user (calls append /v1/... to it). */
bool runner_worker_url_ok(const char *url);
/* new: [{"id","url","state","last_heartbeat","running_tasks","threads","config_ids","static"}] */
json_t *runner_registry_list(runner_registry *g);
int64_t runner_registry_heartbeat_ms(const runner_registry *g);
/* Appends the framed_workers{state="active|suspect|gone"} gauges to out. */
void runner_registry_metrics(runner_registry *g, struct fr_buf *out);

/* *out new: a remote runner dispatching tasks to the registry's workers over
 * HTTP (libcurl multi), signing requests when secret is set, holding its
 * frozen config in st (NULL: no store entry). Fails (nothing left behind)
 * when the store put, curl_multi_init or the thread fails: the store's
 * status (FR_EIO: unreachable), else FR_EINTERNAL. */
int runner_remote_new(struct cfg_frozen *frozen, store *st, runner_registry *g, const char *secret,
                      const char *sender, runner **out, struct fr_error *err);

/* *out new: a local runner with `threads` worker threads (0 = one per
 * core), holding its frozen config in st (NULL: no store entry). Fails like
 * runner_remote_new (the store put, a pthread_create). */
int runner_local_new(struct cfg_frozen *frozen, store *st, int threads, runner **out,
                     struct fr_error *err);
/* The runner's ID ("runner-<16 hex>"): its holder name in the store. */
const char *runner_id(const runner *r);
/* fn(arg) is called, with no runner or query lock held, each time a query
 * of the runner has finished (its running count dropped): waiters for an
 * idle runner wait on their own condition and are woken by it. Set it
 * before submitting. */
void runner_set_on_idle(runner *r, void (*fn)(void *), void *arg);
/* *bytes new: the frozen config's canonical bytes, served from memory, after
 * making the store hold exactly them again (missing: put back; other bytes:
 * a corruption, counted, logged at error and repaired). A store that cannot
 * be reached does not fail it (logged). */
void runner_config_serve(runner *r, char **bytes, size_t *len);
/* The memory budget (--memory-limit, bytes; 0 = none) that a query's fetched
 * result may take at most: a bigger one fails the query (FR_ENOSPACE
 * memory-budget-exceeded) before it is kept. Set it before submitting. */
void runner_set_memory_budget(runner *r, int64_t bytes);
/* What else the budget holds (the owner's kept results and dataframes, and
 * the upload checks it runs, bytes; read, never written; each may be NULL and
 * must outlive r). With a budget set, a query whose task would make the stage
 * outputs held on this process (all queries' together) pass what is left
 * fails memory-budget-exceeded and frees them, rather than the process
 * running out of memory. */
void runner_set_memory_charged(runner *r, const atomic_llong *charged,
                               const atomic_llong *checking);
/* Where a result read charges the copy of a spilled part it reads back
 * while it holds it (bytes; NULL = nowhere). Owned by the caller and
 * outliving r and every result read of r's (a read may outlive r: a reset
 * does not wait for it), so what a reader holds stays in the budget of the
 * runner after r. Counted with the other charges against the budget. */
void runner_set_read_back(runner *r, atomic_llong *read_back);
/* Where the local runner may spill stage outputs and results when they
 * would take the memory budget short (a file with no name is made there on
 * the first spill; nothing is left behind), and the most its live regions
 * may take there. NULL or max_bytes <= 0: it never spills. */
void runner_set_spill_dir(runner *r, const char *dir, int64_t max_bytes);
/* Every runner's spill files in this process: the bytes they hold on disk
 * now and the bytes ever written to them. */
void runner_spill_stats(int64_t *live, int64_t *written);
/* What the runner holds on this process now (bytes): its queries' stage
 * outputs held here and its running tasks' working memory (local runner). */
int64_t runner_memory_in_use(runner *r);
/* The same, each part apart (framed_runner_memory_bytes). */
void runner_memory_parts(runner *r, int64_t *held, int64_t *working);
/* Cancels what still runs, waits for the threads, drops every partition,
 * releases the store entry. Returns FR_OK, or the failed release's status
 * with err saying why (the runner is freed anyway). Accepts NULL. */
int runner_free(runner *r, struct fr_error *err);
/* Borrowed: the runner's frozen config, valid for the runner's life. */
const struct cfg_frozen *runner_config(const runner *r);
const char *runner_kind(const runner *r);
/* new: {"kind", "threads", "partitions", "partition_bytes", ...} */
json_t *runner_info(runner *r);

/* new (refcount 1): a query over plan (stolen). id is copied. */
runner_query *runner_query_new(const char *id, plan_physical *plan);
/* Names the request that made q (copied, cut to 63 bytes), for the workers' logs. */
void runner_query_set_request_id(runner_query *q, const char *request_id);
/* The config the query was planned under (r's frozen one): its status names
 * it from the start, even when a reset cancels it before it is submitted. */
void runner_query_bind_config(runner_query *q, const runner *r);
runner_query *runner_query_ref(runner_query *q);
void runner_query_unref(runner_query *q); /* accepts NULL */
/* fn(q, arg) is called once when q reaches a final state, on the thread
 * that finished it, with no runner lock held. Set it before submitting. */
void runner_query_on_finish(runner_query *q, void (*fn)(runner_query *, void *), void *arg);
/* fn(q, arg) is called once q is settled (after the on_finish hook, its
 * final state shown by runner_query_json), on the same thread, no lock held;
 * never when runner_submit fails. Set it before submitting. */
void runner_query_on_settled(runner_query *q, void (*fn)(runner_query *, void *), void *arg);
/* Turns a succeeded query into a failed one and drops its result (used when
 * keeping the result would go over the memory budget). */
void runner_query_fail(runner_query *q, const struct fr_error *err);
/* Starts it; the runner takes its own reference until it finishes. A failed
 * call never fires the on_finish hook: q ends failed, settled, hook unrun. */
int runner_submit(runner *r, runner_query *q, struct fr_error *err);
/* FR_OK when a query can start now; else why not (the remote runner with no
 * worker known: FR_EUNAVAILABLE no-workers). The freeze protocol (ctx__plan_frozen) asks it
 * before a submit; a worker gone in between fails the query at dispatch (no-workers). */
int runner_admit(runner *r, struct fr_error *err);
/* Asks it to stop; it ends as cancelled. */
void runner_query_cancel(runner_query *q);
/* Waits until it reaches a final state or timeout_ms passes (-1 = forever).
 * Returns true when final. */
bool runner_query_wait(runner_query *q, int64_t timeout_ms);
enum runner_qstate runner_query_state(runner_query *q);
/* new: {"id","state","progress":{"tasks_total","tasks_done"},"config_id",
 * "task_config_ids","rows","elapsed_ms","error","null_errors"}; the error is
 * {"status","kind","message",...} or null. */
json_t *runner_query_json(runner_query *q);
/* The error of a failed query (borrowed; valid while q is held). */
const struct fr_error *runner_query_error(runner_query *q);
/* A collected result's tables, in order (borrowed while q is held): every
 * part of a local runner's result, and of a remote one's when it was
 * collected (runner_query_collect_result); else only the parts held here. */
int runner_query_result(runner_query *q, struct df_table *const **parts, int *nparts);
/* The result is fetched to the coordinator when the query ends (previews).
 * Without it a remote runner's result stays on the workers that made it,
 * streamed from there when read (runner_result_open). Set before submitting. */
void runner_query_collect_result(runner_query *q);

/* A succeeded query's result opened for reading: its partitions in order,
 * each a table here or a partition on a worker that is fetched when read.
 * It holds q and a copy of what a fetch needs, so it may outlive q's record
 * and the runner (whose reset drops the workers' partitions: a fetch then
 * fails with input-lost). FR_ECONFLICT when q has no result (not succeeded,
 * or released). */
typedef struct runner_result runner_result;
int runner_result_open(runner_query *q, runner_result **out, struct fr_error *err);
int runner_result_nparts(const runner_result *res);
int64_t runner_result_part_rows(const runner_result *res, int i);
/* Part i is a table here (no fetch needed). */
bool runner_result_part_here(const runner_result *res, int i);
/* Part i's table (new reference): shared when here; else fetched from its
 * worker (at most the runner's fetch cap) and checked: the rows it reported
 * and the plan's columns, else invalid-worker-answer; a worker that cannot
 * give it: input-lost naming it. Not kept: each call fetches again. */
int runner_result_part(runner_result *res, int i, struct df_table **out, struct fr_error *err);
void runner_result_close(runner_result *res); /* accepts NULL */
/* The reader let go of part i's table: a spilled part's read-back copy is
 * no longer charged to the memory budget (runner_result_close does it for
 * the parts still charged). */
void runner_result_part_done(runner_result *res, int i);
/* Where a client may read part i itself (GET /v1/queries/{id}/result/locations):
 * true for a part left on a worker, with its worker's URL, partition ID, the
 * part's first row in that partition and the config and cluster secret
 * (NULL = none) a location is signed for (all borrowed from res); false for
 * a part held here. */
bool runner_result_location(const runner_result *res, int i, const char **worker,
                            const char **part_id, int64_t *offset, const char **config_id,
                            const char **secret);
int64_t runner_query_rows(runner_query *q);
/* Drops a finished query's result tables (their memory goes once no reader
 * shares them); its status keeps the row count. A dataframe's older run,
 * whose data the dataframe released. */
void runner_query_release_result(runner_query *q);
/* Borrowed: the query's plan (its output schema, explain). */
const plan_physical *runner_query_plan(const runner_query *q);
/* The result's bytes, which the memory budget charges: a table here by its
 * size, a part left on a worker by the bytes the worker reported. */
int64_t runner_query_bytes(runner_query *q);
/* new: {"state","config_id","restarts","retries","stages":[{"stage","label",
 * "inputs","exchange","decisions","tasks_total","tasks_done","tasks_skipped",
 * "tasks_running","rows_in","rows_out","bytes_in","bytes_out","bytes_shuffled",
 * "started_at","finished_at","tasks_truncated","tasks":[{"task","attempt",
 * "worker","worker_url","thread","state","rerun","started_at","finished_at",
 * "rows_in","rows_out","bytes_in","bytes_out","bytes_shuffled","error"}]}]}:
 * every attempt of every task that started or waits to (at most
 * RUNNER_MAX_TASK_RECORDS, 4096, per query; past them a stage says
 * tasks_truncated); a task planned not to run is only counted in its stage's
 * tasks_skipped. The body of GET /v1/queries/{id}/stages less query_id. */
json_t *runner_query_stages_json(runner_query *q);

/* Materialized partitions kept by the runner for a dataframe (so plans can
 * start from {"dataframe": id}): registers a finished query's result under
 * ids "<prefix>-<n>" and returns them (new array of new strings). */
int runner_keep_result(runner *r, runner_query *q, const char *prefix, char ***ids, int *n);
/* Drops kept partitions whose id starts with prefix. */
void runner_drop_kept(runner *r, const char *prefix);
/* Number of queries running now. */
int runner_running(runner *r);
/* Tasks this runner ended, by outcome (counters: they only grow): ok, failed
 * (an error ended it), cancelled (its query was cancelled), retried (attempts
 * that failed and ran again), skipped (ended without running: planned not to
 * run, its shuffle partitions read by another task, or past the query's row
 * limit). */
enum runner_task_outcome {
    RT_OK,
    RT_FAILED,
    RT_CANCELLED,
    RT_RETRIED,
    RT_SKIPPED,
    RUNNER_TASK_OUTCOMES
};
const char *runner_task_outcome_name(enum runner_task_outcome o);
void runner_task_counts(runner *r, int64_t out[RUNNER_TASK_OUTCOMES]);

#endif
