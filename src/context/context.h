/* context: the one object of a framed process that holds mutable state: the
 * pending config, the lazily created runner and its frozen config, datasets,
 * dataframes and queries. The HTTP layer calls only this face.
 *
 * Ownership: every json_t ** out-parameter receives a new reference; json_t *
 * arguments are borrowed. Strings are borrowed for the call. */
#ifndef FRAMED_CONTEXT_H
#define FRAMED_CONTEXT_H

#include "../common/common.h"

#include <jansson.h>

struct df_table;
typedef struct ctx ctx;

struct ctx_options {
    const char *data_dir;         /* datasets; created if missing */
    const char *state_dir;        /* pending config, embedded store */
    int threads;                  /* local runner threads; 0 = one per core */
    int64_t memory_limit;         /* bytes of materialized dataframes/results; 0 = no limit */
    const char *spill_dir;        /* where the local runner spills over the limit; NULL = never */
    int64_t spill_limit;          /* the most its spill file may hold, bytes */
    const char *runner_kind;      /* "local" (default) or "remote" */
    const char *store_url;        /* NULL/"embedded" or "redis://host:port/db" */
    const char *workers;          /* static worker URLs, comma-separated, or NULL */
    const char *cluster_secret;   /* NULL = none */
    int64_t store_lease_ms;       /* a Redis hold's lease; 0 = STORE_LEASE_DEFAULT_MS */
    int64_t history_max_queries;  /* 0 = HISTORY_DEFAULT_MAX_QUERIES */
    int64_t history_max_age_days; /* 0 = HISTORY_DEFAULT_MAX_AGE_DAYS */
    int max_event_streams;        /* GET /v1/events streams open at once; 0 = 64 */
};

/* An error with the extension members of its problem body. */
struct ctx_error {
    struct fr_error base;
    json_t *ext; /* new, owned: extra members of the problem (e.g. config_id, errors) */
};
void ctx_error_init(struct ctx_error *e);
void ctx_error_cleanup(struct ctx_error *e);

/* new: loads the pending config from the state dir (a corrupt file fails
 * with a message naming it), applies FRAMED_CONFIG_* variables from envp,
 * opens the store. */
int ctx_new(const struct ctx_options *opts, char *const *envp, ctx **out, struct fr_error *err);
/* Cancels running queries, destroys the runner (releasing its config). */
void ctx_free(ctx *c);

/* ---- config ---- */
/* {"locked","config_id","frozen_at","frozen_by","values"} */
json_t *ctx_config_get(ctx *c);
/* Partial update; FR_EVALIDATION (ext.errors), FR_ECONFLICT kind config-locked
 * (ext: config_id, frozen_at, frozen_by, unlock), FR_EINVAL not an object.
 * On success *out is like ctx_config_get. */
int ctx_config_update(ctx *c, json_t *patch, json_t **out, struct ctx_error *err);
/* The bytes of a frozen config by ID (*bytes new), never bytes that do not
 * hash to it. The runner's own config is served from memory (the store's
 * copy is checked and repaired on the way); another ID comes from the store:
 * FR_ENOTFOUND config-not-found once released, FR_EINTERNAL config-integrity
 * when the stored bytes do not hash to it (counted as a corruption),
 * FR_EUNAVAILABLE store-unavailable when the store cannot be reached. */
int ctx_config_bytes(ctx *c, const char *id, char **bytes, size_t *len, struct ctx_error *err);

/* ---- runner ---- */
/* {"state": "none"|"active"|"draining", "kind", "config_id", "created_at",
 *  "queries": {"running": n, "finished": n}} */
json_t *ctx_runner_info(ctx *c);
/* Drains (new dataframe requests get FR_EUNAVAILABLE kind runner-draining),
 * waits for running queries or cancels them when force, destroys the
 * runner, releases the config, unlocks. *out reports what was released.
 * request_id: the reset's request, kept in the history as reset_by (NULL:
 * the process ends, the runner is recorded as ended).
 * FR_ENOTFOUND kind no-runner when there is none. */
int ctx_runner_reset(ctx *c, bool force, const char *request_id, json_t **out,
                     struct ctx_error *err);

/* ---- datasets ---- */
/* Opens dataset file rel (relative to the data dir, as task specs name it)
 * for serving its bytes to the workers of the runner whose frozen config is
 * config_id: *fd new (read-only; the caller closes it), with the file's
 * size and mtime. FR_ECONFLICT config-mismatch (no runner, another config),
 * FR_EINVAL invalid-parameter (not a relative path inside the data dir, a
 * '.' segment), FR_ENOTFOUND dataset-not-found (missing, not a regular file). */
int ctx_dataset_bytes_open(ctx *c, const char *config_id, const char *rel, int *fd, int64_t *size,
                           int64_t *mtime_ns, struct ctx_error *err);
int ctx_dataset_list(ctx *c, json_t **out, struct ctx_error *err);
int ctx_dataset_get(ctx *c, const char *name, json_t **out, struct ctx_error *err);
int ctx_dataset_delete(ctx *c, const char *name, struct ctx_error *err);
/* A streamed upload into the data dir: written to a temp file, renamed into
 * place by commit; abort (or a failed write) leaves nothing behind.
 * content_type: text/csv or application/x-ndjson (else FR_EINVAL kind
 * unsupported-media-type). Names: [A-Za-z0-9_.-]{1,128}, not starting with '.'. */
typedef struct ctx_upload ctx_upload;
int ctx_upload_begin(ctx *c, const char *name, const char *content_type, ctx_upload **out,
                     struct ctx_error *err);
int ctx_upload_write(ctx_upload *u, const char *data, size_t n, struct ctx_error *err);
/* Frees u in every case. *out: the dataset's description; *created true if new. */
int ctx_upload_commit(ctx_upload *u, json_t **out, bool *created, struct ctx_error *err);
void ctx_upload_abort(ctx_upload *u); /* frees u; accepts NULL */

/* ---- dataframes ---- */
/* Validates and plans `plan` (400 kinds invalid-plan / invalid-expression
 * without creating the runner), then creates the runner if needed (the
 * freeze; request_id is recorded as frozen_by) and answers the 201 body
 * {"id","schema","config_id","preview","preview_exact"}. The preview is
 * lazy: its ops run over the first rows of each source (plan_env's
 * preview_scan_rows), never the whole data. */
int ctx_dataframe_create(ctx *c, json_t *plan, const char *request_id, json_t **out,
                         struct ctx_error *err);
int ctx_dataframe_get(ctx *c, const char *id, json_t **out, struct ctx_error *err);
int ctx_dataframe_delete(ctx *c, const char *id, struct ctx_error *err);
int ctx_dataframe_explain(ctx *c, const char *id, json_t **out, struct ctx_error *err);

/* Creates a dataframe from a compiled SQL query (ctx_sql_compile), as
 * ctx_dataframe_create does from a plan; its record keeps the SQL text.
 * name (NULL = none): 1-64 of [A-Za-z0-9_], a table name for later SQL,
 * unique among the runner's dataframes ignoring case (409 conflict);
 * FR_EINVAL invalid-parameter (ext parameter "name") when malformed. The
 * statement must be a query (else 400 invalid-sql). */
typedef struct ctx_sql ctx_sql;
typedef struct ctx_query_watch ctx_query_watch;
int ctx_dataframe_create_sql(ctx *c, const ctx_sql *s, const char *name, const char *request_id,
                             json_t **out, struct ctx_error *err);

/* ---- SQL (context_sql.c) ---- */
/* What a compiled statement is: a query (submitted like a plan), EXPLAIN
 * (answered at once), SET/RESET (a config change: the caller checks the
 * admin token as for POST /v1/config) or SHOW. */
enum ctx_sql_kind { CTX_SQL_QUERY, CTX_SQL_EXPLAIN, CTX_SQL_CONFIG_CHANGE, CTX_SQL_SHOW };
/* Compiles text (borrowed) over the catalog: dataframes by ID or name, then
 * datasets by name. Creates and freezes nothing. *out new (ctx_sql_free).
 * Errors: 400 invalid-sql (also past SQL_MAX_TEXT_BYTES, ext max_bytes),
 * 422 unsupported-sql, 404 dataset-not-found: ext line, column, position
 * and excerpt (the line with a caret) where the text locates it. */
int ctx_sql_compile(ctx *c, const char *text, ctx_sql **out, struct ctx_error *err);
enum ctx_sql_kind ctx_sql_kind(const ctx_sql *s);
json_t *ctx_sql_plan(const ctx_sql *s);     /* borrowed: a query's or EXPLAIN's plan */
const char *ctx_sql_text(const ctx_sql *s); /* borrowed */
void ctx_sql_free(ctx_sql *s);              /* accepts NULL */
/* The 200 answer of EXPLAIN (plan_physical_explain's members, config_id,
 * plan), SET/RESET (ctx_config_update's, errors included: 409 config-locked
 * after the freeze) or SHOW ({"statement": "show", "locked", "config_id",
 * "values"} or, for one field, "field" and "value" instead of "values").
 * None of them creates a runner. */
int ctx_sql_answer(ctx *c, const ctx_sql *s, json_t **out, struct ctx_error *err);
/* Submits a compiled query as ctx_query_submit_watched does a plan; the
 * query's record and status keep "sql" and the compiled "plan". */
int ctx_query_submit_sql(ctx *c, const ctx_sql *s, const char *request_id, json_t **out,
                         ctx_query_watch **watch, struct ctx_error *err);

/* ---- queries ---- */
/* A live query's status plus "runner_id" and "archived": false; a query no
 * longer in memory from the history ("archived": true, its plan, task config
 * IDs, tasks and retries). FR_ENOTFOUND query-not-found. */
int ctx_query_get(ctx *c, const char *id, json_t **out, struct ctx_error *err);
int ctx_query_cancel(ctx *c, const char *id, json_t **out, struct ctx_error *err);
/* Releases a finished query's result (DELETE /v1/queries/{id}/result): new
 * reads get 410 result-released from now on; its tables here and its
 * partitions on the workers go, and its charge leaves the memory budget, at
 * once or, while reads of it are in progress, when the last of them ends
 * (ctx_result_release). The query's status stays. Idempotent. 409 query-not-finished while it runs,
 * conflict when the result is a dataframe's data (delete the dataframe), 404. */
int ctx_query_result_release(ctx *c, const char *id, struct ctx_error *err);
/* A watch on an accepted query, for a waiting request (ctx_query_submit_watched
 * makes it): ctx_query_watch_settled tells cheaply (no context lock, no JSON)
 * whether it reached a final state. */
bool ctx_query_watch_settled(ctx_query_watch *w);
json_t *ctx_query_watch_json(ctx_query_watch *w); /* new: its status, as GET answers it */
void ctx_query_watch_free(ctx_query_watch *w);    /* accepts NULL */
/* Submits a query (a plan, or {"dataframe": id}) on the runner, freezing the
 * config if needed; *out is its status (new) and *watch (new) the accepted
 * query held by reference: its answer never needs a second lookup a reset
 * may lose. The HTTP edge waits on the watch for ?wait=. */
int ctx_query_submit_watched(ctx *c, json_t *body, const char *request_id, json_t **out,
                             ctx_query_watch **watch, struct ctx_error *err);
/* A finished query's result, held by reference while it is being sent.
 * FR_ECONFLICT kind query-not-finished while running; FR_EDATA kind
 * query-failed when it failed; FR_ENOTFOUND result-released (410) for a past
 * query of the history, naming its runner's reset (ext runner_id, reset_at). */
typedef struct ctx_result ctx_result;
int ctx_query_result(ctx *c, const char *id, ctx_result **out, struct ctx_error *err);
/* The result's columns: an empty table of its schema (borrowed, valid until
 * ctx_result_release), and its rows. */
const struct df_table *ctx_result_schema(const ctx_result *r);
int64_t ctx_result_rows(const ctx_result *r);
/* The partition holding result row `row` (< ctx_result_rows): *t (borrowed
 * until the next call or the release), *first the row's index in it and *n
 * the rows from there to the partition's end. A partition left on a worker
 * is fetched now (the coordinator holds one at a time, never the whole
 * result); a worker that cannot give it fails with input-lost (424) or
 * invalid-worker-answer (502), naming it. */
int ctx_result_at(ctx_result *r, int64_t row, const struct df_table **t, int64_t *first, int64_t *n,
                  struct ctx_error *err);
/* The reader stops before row end: ctx_result_at fetches the next partition
 * on a thread of its own while the current one is sent (two held at most),
 * only while it begins before end. Default 0: no read-ahead. */
void ctx_result_read_until(ctx_result *r, int64_t end);
/* The morsel_size_rows of the config the query ran with: the rows of one
 * Arrow record batch or Parquet row group of the result. */
int64_t ctx_result_morsel_rows(const ctx_result *r);
/* Ends the read (accepts NULL): the last read of a released result gives its
 * charge back and frees it. Not with the context lock held. */
void ctx_result_release(ctx_result *r);
/* new: {"total_rows", "expires_at", "locations": [{"url", "first_row",
 * "rows"}]}: where a client reads the result of query id (r's) itself, in
 * order, as Arrow IPC streams: a part left on a worker at that worker's
 * GET /v1/results/{partition} with a token good until `expires` (unix s),
 * a part held here at this server's result route (a URL relative to it). */
json_t *ctx_result_locations(ctx_result *r, const char *id, int64_t expires);

/* ---- history (context_history.c) ---- */
struct ctx_query_filter {
    const char *state;                 /* NULL or queued|running|succeeded|failed|cancelled */
    const char *config_id, *runner_id; /* NULL = any */
    int64_t since_ms, until_ms;        /* created_at bounds; < 0 = open */
    const char *cursor;                /* NULL = from the newest */
    int limit;                         /* 1..500 */
};
/* {"queries": [QuerySummary], "next_cursor"}: the history, newest first, the
 * live runner's queries with live progress. FR_EINVAL invalid-parameter (a
 * bad cursor), FR_EUNAVAILABLE unavailable (no history). A page may hold fewer
 * than limit queries when a live query's state moved past the filter. */
int ctx_queries_list(ctx *c, const struct ctx_query_filter *f, json_t **out, struct ctx_error *err);
/* {"runners": [Runner], "next_cursor"}; cursor NULL = from the newest. */
int ctx_runners_list(ctx *c, int limit, const char *cursor, json_t **out, struct ctx_error *err);
/* FR_ENOTFOUND runner-not-found. */
int ctx_runner_get(ctx *c, const char *id, json_t **out, struct ctx_error *err);
/* The archived canonical bytes of a config (*bytes new), from the history,
 * never the store, verified to hash to id (FR_EINTERNAL config-integrity);
 * FR_ENOTFOUND config-not-found. */
int ctx_history_config_bytes(ctx *c, const char *id, char **bytes, size_t *len,
                             struct ctx_error *err);
/* {"from","to","equal","changes":[{"field","from","to"}]}; from and to are a
 * config ID (the history's or the live runner's), "defaults" or "pending".
 * FR_EINVAL invalid-parameter (ext.parameter), FR_ENOTFOUND config-not-found. */
int ctx_config_diff(ctx *c, const char *from, const char *to, json_t **out, struct ctx_error *err);
/* {"dataframes": [as ctx_dataframe_get], "next_cursor"}: the runner's
 * dataframes, newest first. FR_EINVAL invalid-parameter for a bad cursor. */
int ctx_dataframes_list(ctx *c, int limit, const char *cursor, json_t **out, struct ctx_error *err);

/* ---- cluster ---- */
/* A worker's announce or heartbeat: {"id", "url", "threads", "running_tasks",
 * "config_ids"}. *out is {"heartbeat_ms": n}. FR_EVALIDATION kind validation-failed
 * for a malformed body. */
int ctx_worker_announce(ctx *c, json_t *body, json_t **out, struct ctx_error *err);
/* {"workers": [{"id", "url", "state" (active|suspect|gone), "last_heartbeat",
 * "running_tasks", "threads", "config_ids", "static"}]} */
json_t *ctx_workers_list(ctx *c);
/* Borrowed: the cluster secret (NULL when none), for checking signatures. */
const char *ctx_cluster_secret(const ctx *c);

/* ---- operations ---- */
/* {"version","role":"coordinator","config_id","uptime_s","runner"} */
json_t *ctx_info(ctx *c);
/* Appends Prometheus text for runner state, config lock, queries by state. */
void ctx_metrics(ctx *c, struct fr_buf *out);
bool ctx_ready(ctx *c);
/* FR_OK when a runner holds its config in memory or the config store
 * answers (one round trip, bounded by the store's timeouts); else
 * FR_EUNAVAILABLE store-unavailable: no config could be frozen. */
int ctx_ready_store(ctx *c, struct fr_error *err);
/* new: lines about the store for /readyz ("store: ...\n": corruptions found,
 * unavailable), or NULL when there is nothing to say. */
char *ctx_ready_detail(ctx *c);
void ctx_begin_shutdown(ctx *c); /* readyz fails from now on */
/* ---- live: stages and events (context_live.c, context_events.c) ---- */
/* *out (new): {"query_id", then runner_query_stages_json's members} of a
 * query the context holds; FR_ENOTFOUND query-not-found for any other (a
 * past query's stages come from the history: its fallback goes there). */
int ctx_query_stages(ctx *c, const char *id, json_t **out, struct ctx_error *err);
/* Event types, as a mask for a subscriber's filter. */
enum { CTX_EVENT_QUERY = 1, CTX_EVENT_RUNNER = 2, CTX_EVENT_WORKER = 4, CTX_EVENT_STATS = 8 };
#define CTX_EVENT_ALL 15u
#define CTX_EVENTS_RING 1024          /* events held for Last-Event-ID */
#define CTX_EVENTS_DEFAULT_STREAMS 64 /* --max-event-streams */
/* "query,runner,..." (NULL: every type) into *mask; FR_EINVAL kind
 * invalid-parameter naming an unknown type, an empty list or item. */
int ctx_events_parse_types(const char *list, unsigned *mask, struct fr_error *err);
/* A reader of the event stream. wake(arg) is called with the events lock
 * held (it must only signal: no call back in here) when an event is
 * published, on every tick (about 1 s) and at close. last_id < 0: from the
 * next event on; else the events after last_id, or, when the ring no longer
 * holds them (or last_id is from before a restart), every event held,
 * after a "reset" event that says so. *out new; FR_EUNAVAILABLE kind
 * unavailable past --max-event-streams or once closed. */
typedef struct ctx_event_sub ctx_event_sub;
int ctx_events_subscribe(ctx *c, unsigned types, int64_t last_id, void (*wake)(void *), void *arg,
                         ctx_event_sub **out, struct ctx_error *err);
/* Appends the subscriber's next events (text/event-stream) to out while
 * out->len < max; returns 1 when the bus is closed and everything was read
 * (the stream ends), else 0. */
int ctx_events_read(ctx_event_sub *s, struct fr_buf *out, size_t max);
/* True when nothing is there for it to read (it may sleep until woken);
 * takes no lock. */
bool ctx_events_idle(ctx_event_sub *s);
void ctx_events_unsubscribe(ctx_event_sub *s); /* frees s; accepts NULL */
/* Shutdown: every stream reads what is left and ends; no new one opens. */
void ctx_events_close(ctx *c);
/* A shutdown past its deadline: cancels every running query, so the
 * requests waiting on them return. The runner stays (ctx_free frees it). */
void ctx_cancel_all(ctx *c);

#endif
