/* worker_int: the worker handle's layout and the helpers its files share.
 * Each piece of mutable state names the lock that guards it. */
#ifndef FRAMED_WORKER_INT_H
#define FRAMED_WORKER_INT_H

#include "worker.h"

#include <pthread.h>
#include <stdatomic.h>

/* A cache entry: loading (one fetch in flight, others wait on cache_cond),
 * then ready (frozen set) or failed (rc/err set, unlinked at once). An
 * unlinked entry lives until its last waiter has read it. */
struct worker__centry {
    struct worker__centry *next;
    char id[80];
    struct cfg_frozen *frozen; /* one reference; NULL while loading or failed */
    bool loading;
    bool linked; /* in the cache list */
    int waiters; /* threads waiting for this load */
    int rc;      /* the load's outcome, for waiters */
    struct fr_error err;
    struct worker_config_stats stats;
};

struct worker__part {
    struct worker__part *next;
    char id[40];
    char config_id[80];
    struct df_table *table;
    int64_t rows;
    int64_t bytes;
};

struct worker {
    char id[40];
    char *coordinator; /* NULL = no heartbeats */
    char *secret;      /* NULL = none */
    int threads;
    int64_t heartbeat_ms;
    int64_t started_us;
    store *store; /* thread-safe by its own contract */

    pthread_mutex_t url_lock; /* url */
    char url[512];

    pthread_mutex_t cache_lock; /* centries and everything in them */
    pthread_cond_t cache_cond;
    struct worker__centry *centries;

    pthread_mutex_t parts_lock; /* parts, nparts, part_bytes */
    struct worker__part *parts;
    int64_t nparts;
    int64_t part_bytes;

    pthread_mutex_t slots_lock; /* running */
    pthread_cond_t slots_cond;
    int running;

    pthread_mutex_t hb_lock; /* hb_stop, hb_started */
    pthread_cond_t hb_cond;
    bool hb_stop;
    bool hb_started;
    pthread_t hb_thread;
};

/* Writes nbytes random bytes as hex after prefix into out. */
void worker__random_id(const char *prefix, int nbytes, char *out, size_t outsz);
/* Counts a task run with config id (no-op if id is no longer cached). */
void worker__config_count_task(worker *w, const char *id);
/* Drops every partition of config_id; returns how many. */
int64_t worker__partitions_drop_config(worker *w, const char *config_id);
/* Starts/stops the heartbeat thread (worker_heartbeat.c). */
int worker__heartbeat_start(worker *w, struct fr_error *err);
void worker__heartbeat_stop(worker *w);
/* The heartbeat body {id, url, threads, running_tasks, config_ids}. New. */
json_t *worker__announce_body(worker *w);

#endif
