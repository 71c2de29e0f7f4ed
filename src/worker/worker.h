/* worker: the state of a `framed worker` process: the cache of frozen configs
 * resolved from the store by ID (single-flight, verified), the partitions its
 * tasks made, the task runner that passes a task's config down as an argument,
 * and the announce/heartbeat thread. No global state: everything hangs off
 * one `worker` handle. The HTTP edge (http_routes_worker.c) calls this face.
 *
 * Ownership: json_t * results are new references, json_t * arguments
 * borrowed; strings are borrowed for the call unless a comment says copied. */
#ifndef FRAMED_WORKER_H
#define FRAMED_WORKER_H

#include "../common/common.h"
#include "../config/config.h"
#include "../store/store.h"

#include <jansson.h>

struct df_table;
typedef struct worker worker;

struct worker_options {
    const char *coordinator; /* base URL of the coordinator; NULL = no heartbeats; copied */
    const char *store_url;   /* NULL = the coordinator's http store; copied */
    int threads;             /* tasks run at once; 0 = one per core */
    const char *secret;      /* cluster secret, NULL = none; copied */
    int64_t heartbeat_ms;    /* 0 = 1000 */
    const char *data_dir;    /* task file inputs are read only inside it; NULL = ./data; copied */
    /* Where scan tasks read their file: "auto" (the local copy when it has
     * the coordinator's size and mtime, else by range from the
     * coordinator), "local" or "remote"; NULL = auto. Another value fails
     * worker_new with FR_EINVAL. */
    const char *data_source;
};

/* new: opens the store named by o->store_url (else the coordinator's). */
int worker_new(const struct worker_options *o, worker **out, struct fr_error *err);
/* new: like worker_new with a store already open; steals st (also on error). */
int worker_new_with_store(const struct worker_options *o, store *st, worker **out,
                          struct fr_error *err);
/* Sets the URL the worker advertises (copied; needed to recognise its own
 * partitions among a task's inputs) and starts announcing itself to the
 * coordinator, if any, every heartbeat_ms. */
int worker_start(worker *w, const char *url, struct fr_error *err);
/* Stops the heartbeat thread (idempotent); running tasks are left to finish. */
void worker_stop(worker *w);
/* Stops and frees. No request may be in flight. Accepts NULL. */
void worker_free(worker *w);

/* Borrowed, valid as long as w. */
const char *worker_id(const worker *w);
const char *worker_secret(const worker *w); /* NULL when none */
/* The advertised URL ("" before worker_start) into out. */
void worker_url_copy(worker *w, char *out, size_t outsz);
int worker_threads(const worker *w);
int worker_running_tasks(worker *w);

/* ---- config cache (worker_config.c) ----
 * Resolves id from the cache or, on a miss, from the store, verifying that
 * the bytes hash to it. Concurrent misses of one ID cause one store fetch;
 * the others wait for it and share its outcome. *out is a new reference.
 * Errors (kind set): FR_EINVAL missing-config-id (not sha256:<64 hex>),
 * FR_ENOTFOUND config-not-found, FR_EDATA config-integrity (nothing cached),
 * FR_EUNAVAILABLE store-unavailable. Each successful call's latency is
 * recorded (framed_worker_config_resolve_seconds, /v1/info resolve_us) as a
 * "hit" when a ready entry served it, else as a "fetch" (the loader and the
 * threads that waited for its load). */
int worker_config_get(worker *w, const char *id, struct cfg_frozen **out, struct fr_error *err);
/* The config of one task sent in its body (POST /v1/tasks "config_inline"):
 * bytes must be the canonical encoding hashing to id (cfg_frozen_from_bytes),
 * else FR_EDATA config-integrity. The cache is neither read nor filled; the
 * latency is recorded as "inline". *out is a new reference. */
int worker_config_inline(worker *w, const char *id, const char *bytes, size_t len,
                         struct cfg_frozen **out, struct fr_error *err);
/* Drops id from the cache and every partition made with it; its counters
 * stay. *was_cached, *dropped_partitions may be NULL. */
void worker_config_drop(worker *w, const char *id, bool *was_cached, int64_t *dropped_partitions);
struct worker_config_stats {
    int64_t fetches;    /* store fetches (each miss that reached the store) */
    int64_t cache_hits; /* resolutions served by the cache or by another's fetch */
    int64_t tasks;      /* tasks run with this config */
};
/* Counters since the worker started; a drop of the config keeps them.
 * FR_ENOTFOUND when id was never asked for. */
int worker_config_stats(worker *w, const char *id, struct worker_config_stats *out);
/* new: the IDs in the cache, as a JSON array of strings. */
json_t *worker_config_ids(worker *w);

/* ---- partitions (worker_partition.c) ----
 * Tables a task produced, kept under "p-<hex>" IDs with the config they were
 * made with. */
/* Steals t. id_out (>= 40 bytes) gets the new ID; *bytes (may be NULL) the
 * table's size in memory. */
void worker_partition_put(worker *w, const char *config_id, struct df_table *t, char *id_out,
                          size_t id_outsz, int64_t *bytes);
/* *out new: the table (its columns shared with the partition, which may be
 * dropped meanwhile). FR_ENOTFOUND partition-not-found, FR_ECONFLICT
 * config-mismatch when config_id is not the partition's. */
int worker_partition_table(worker *w, const char *id, const char *config_id, struct df_table **out,
                           struct fr_error *err);
/* *bytes new: the table in the FRTB1 layout (df_table_serialize). Errors as
 * worker_partition_table. */
int worker_partition_serialize(worker *w, const char *id, const char *config_id, char **bytes,
                               size_t *len, struct fr_error *err);
/* Drops the partition made with config_id. FR_ENOTFOUND partition-not-found,
 * FR_ECONFLICT config-mismatch (nothing dropped), as worker_partition_table. */
int worker_partition_delete(worker *w, const char *id, const char *config_id, struct fr_error *err);
/* How many partitions and bytes the worker holds. */
void worker_partition_totals(worker *w, int64_t *count, int64_t *bytes);
/* Counts a partition sent to a fetch in coding codec (enum fr_codec), bytes
 * on the wire (framed_worker_partition_sent_bytes_total). */
void worker_partition_sent(worker *w, int codec, int64_t bytes);

/* A result stream (GET /v1/results/{id}): a read of a partition that the
 * worker's memory accounting charges while it is open. *out (new, closed by
 * worker_result_stream_close) pins the partition: dropped meanwhile (a
 * release, a config drop), it leaves the partitions' count and bytes and is
 * charged to the stream until it closes, as the stream keeps its columns.
 * *t (new) shares the partition's table. Errors as worker_partition_table. */
typedef struct worker_result_stream worker_result_stream;
int worker_result_stream_open(worker *w, const char *id, const char *config_id,
                              worker_result_stream **out, struct df_table **t,
                              struct fr_error *err);
/* What the stream holds besides the partition (its encode buffer) is now
 * bytes: the charge moves by the difference. */
void worker_result_stream_charge(worker_result_stream *s, int64_t bytes);
/* Ends the stream's charge (call it after freeing its table: the columns of
 * a dropped partition go now). Accepts NULL. */
void worker_result_stream_close(worker_result_stream *s);
/* Open result streams and the bytes they hold beyond the partitions held. */
void worker_result_stream_totals(worker *w, int64_t *count, int64_t *bytes);

/* ---- tasks (worker_task.c) ----
 * Runs one POST /v1/tasks body with the config named config_id: resolves the
 * config, fetches the inputs, runs the task with at most `threads` tasks at
 * once, stores the outputs as partitions. *out is the 200 body
 * {config_id, outputs, null_errors, elapsed_ms}. On error, err says why
 * (kind set, or derived from the status by the HTTP edge) and *ext may get
 * new extension members of the problem (input-lost: {"lost": {url, id}}). */
/* The coordinator's tracing IDs of a call (borrowed; either may be NULL):
 * logged with the task and passed on to the peers it fetches inputs from. */
struct worker_trace {
    const char *request_id;
    const char *query_id;
};
/* True when both IDs are absent or bounded and printable (they get logged). */
bool worker_trace_ok(const struct worker_trace *trace);
int worker_task_run(worker *w, const char *config_id, const struct worker_trace *trace,
                    json_t *body, json_t **out, json_t **ext, struct fr_error *err);

/* Counters (and /v1/info "configs") are kept for the cached configs plus this
 * many recent others: dropped ones, IDs that failed. */
#define WORKER_RECENT_WINDOW 16

/* ---- operations (worker_info.c) ---- */
/* new: {version, role:"worker", id, url, config_ids, uptime_s, running_tasks,
 * partitions, configs: {<id>: {fetches, cache_hits, tasks}},
 * resolve_us: {hit_p50, hit_p99, fetch_p50, fetch_p99, inline_p50, inline_p99,
 * hits, fetches, inlines, window}} */
json_t *worker_info(worker *w);
/* Appends the worker's Prometheus text. */
void worker_metrics(worker *w, struct fr_buf *out);

#endif
