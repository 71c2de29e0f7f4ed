/* worker_int: the worker handle's layout and the helpers its files share.
 * Each piece of mutable state names the lock that guards it. */
#ifndef FRAMED_WORKER_INT_H
#define FRAMED_WORKER_INT_H

#include "worker.h"
#include "../plan/plan.h"

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
};

/* The counters of a config ID: kept while the config is cached, and for a
 * bounded window of the WORKER__RECENT_MAX most recent others (a dropped
 * config, an ID that failed), so memory does not grow with the IDs asked
 * for. /metrics shows only cached configs' series. */
#define WORKER__RECENT_MAX WORKER_RECENT_WINDOW
struct worker__cstats {
    struct worker__cstats *next; /* newest first */
    char id[80];
    struct worker_config_stats stats;
};

/* IDs the store said it does not hold, refused without a fetch until
 * until_ms (PROTO_CONFIG_NEGATIVE_TTL_MS). A fixed table: an ID's hash picks
 * a bucket of WORKER__NEGATIVE_WAYS slots, the oldest of which is reused, so
 * memory is bounded and only a flood past it costs extra fetches. */
#define WORKER__NEGATIVE_WAYS 16
#define WORKER__NEGATIVE_MAX (512 * WORKER__NEGATIVE_WAYS)
struct worker__negative {
    char id[72];
    int64_t until_ms;
};

/* Latency of config resolution, per result: a Prometheus histogram (atomic
 * bucket counts, so a task never waits on a reader) and a ring of the last
 * WORKER__RESOLVE_RING samples for percentiles in /v1/info. Zeroed memory is
 * a valid empty state. Samples are nanoseconds, saturated at UINT32_MAX. */
enum { WORKER__RESOLVE_HIT, WORKER__RESOLVE_FETCH, WORKER__RESOLVE_INLINE, WORKER__RESOLVE_KINDS };
#define WORKER__RESOLVE_BUCKETS 22 /* the last one is +Inf */
#define WORKER__RESOLVE_RING 4096
struct worker__resolve_hist {
    atomic_llong buckets[WORKER__RESOLVE_BUCKETS]; /* not cumulative */
    atomic_llong count;
    atomic_llong sum_ns;
    atomic_uint next; /* ring write position (count mod ring) */
    _Atomic uint32_t ring_ns[WORKER__RESOLVE_RING];
};

#define WORKER__ROOMS 8
#define WORKER__ROOM_BYTES ((int64_t)256 << 20)

struct worker__part {
    struct worker__part *next;
    char id[40];
    char config_id[80];
    struct df_table *table;
    int64_t rows;
    int64_t bytes;
    /* result streams reading it (parts_lock): dropped while one is open, it
     * leaves the list and is freed by the last stream's close */
    int streams;
    bool dropped;
    int64_t seq; /* the order it was put in (w->part_seq) */
};

struct worker {
    char id[40];
    char *coordinator; /* NULL = no heartbeats */
    char *secret;      /* NULL = none */
    char *data_dir;    /* task file inputs resolve inside it */
    int threads;
    int64_t heartbeat_ms;
    bool unsigned_answers; /* the heartbeat thread's: answers unsigned now (logged once) */
    int64_t started_us;
    store *store; /* thread-safe by its own contract */

    pthread_mutex_t url_lock; /* url */
    char url[512];

    pthread_mutex_t cache_lock; /* centries and everything in them */
    pthread_cond_t cache_cond;
    struct worker__centry *centries;
    struct worker__cstats *cstats;
    struct worker__negative *negative; /* WORKER__NEGATIVE_MAX entries */

    struct worker__resolve_hist resolve[WORKER__RESOLVE_KINDS]; /* atomic, no lock */

    /* Where a task's time goes (atomic, no lock): inputs fetched from other
     * workers (GET, transfer, deserialize) or taken from memory, and the
     * execution itself; nanoseconds and bytes since start. */
    atomic_llong in_remote_n, in_remote_ns, in_remote_bytes;
    atomic_llong in_local_n, in_local_ns;
    atomic_llong exec_n, exec_ns;
    /* Partitions sent to fetches (GET /v1/partitions), by the coding they
     * went in (enum fr_codec), and their bytes on the wire. */
    atomic_llong sent_n[3], sent_bytes[3];
    /* Scan tasks by where they read their file (plan_read_source), the
     * bytes of their ranges, and the coordinator range reads behind the
     * remote ones (atomic, no lock). */
    int data_source; /* enum plan_data_mode */
    atomic_llong scan_local_n, scan_local_bytes, scan_remote_n, scan_remote_bytes;
    atomic_llong range_reads, range_bytes;

    pthread_mutex_t parts_lock; /* parts, nparts, part_bytes, and each part's streams */
    struct worker__part *parts;
    int64_t nparts;
    int64_t part_bytes;
    int64_t part_seq; /* partitions put so far (parts_lock) */
    /* Open result streams (GET /v1/results) and the memory they hold beyond
     * the partitions held: their encode buffers, and the partitions dropped
     * while they read them (atomic, no lock). */
    atomic_int result_streams;
    atomic_llong result_stream_bytes;

    /* Receive buffers of fetches past (worker_task.c): a fetch writes its
     * partition into one the last fetch touched rather than into fresh
     * pages (dear on a VM). At most WORKER__ROOMS, WORKER__ROOM_BYTES in all;
     * freed when the worker goes idle (worker_heartbeat.c). */
    pthread_mutex_t rooms_lock; /* rooms, nrooms, room_bytes */
    struct fr_buf rooms[WORKER__ROOMS];
    int nrooms;
    int64_t room_bytes;

    pthread_mutex_t slots_lock; /* running, tasks_ended */
    pthread_cond_t slots_cond;
    int running;
    int64_t tasks_ended; /* the heartbeat thread hands freed memory back when it stops moving */

    pthread_mutex_t hb_lock; /* hb_stop, hb_started */
    pthread_cond_t hb_cond;
    bool hb_stop;
    bool hb_started;
    pthread_t hb_thread;
};

/* Writes nbytes random bytes as hex after prefix into out. */
void worker__random_id(const char *prefix, int nbytes, char *out, size_t outsz);
/* Counts a task run with config id. */
void worker__config_count_task(worker *w, const char *id);
/* True when id is cached and ready. Caller holds cache_lock. */
bool worker__config_held(worker *w, const char *id);
/* Records one resolution of kind WORKER__RESOLVE_* that took ns. */
void worker__resolve_record(worker *w, int kind, int64_t ns);
/* new: {"hit_p50", "hit_p99", "fetch_p50", "fetch_p99", "inline_p50",
 * "inline_p99" (microseconds over the last samples, null when none),
 * "hits", "fetches", "inlines" (counts since start), "window"}. */
json_t *worker__resolve_info(worker *w);
/* Appends framed_worker_config_resolve_seconds (histogram by result). */
void worker__resolve_metrics(worker *w, struct fr_buf *out);
/* A kept receive buffer (empty if none) into *room, which must be empty. */
void worker__room_take(worker *w, struct fr_buf *room);
/* Keeps *room's memory for a later fetch when it fits the bounds, else
 * frees it; *room is left empty. */
void worker__room_give(worker *w, struct fr_buf *room);
/* Frees every kept receive buffer. */
void worker__rooms_drop(worker *w);
/* The bytes of kept receive buffers. */
int64_t worker__room_bytes(worker *w);
/* Appends the task time counters (worker_task.c). */
void worker__task_metrics(worker *w, struct fr_buf *out);
/* Drops every partition of config_id put up to the mark max_seq
 * (INT64_MAX: all); returns how many. */
int64_t worker__partitions_drop_config(worker *w, const char *config_id, int64_t max_seq);
/* The mark of the partitions put so far (see above). */
int64_t worker__partitions_mark(worker *w);
/* worker_config_drop, of the partitions put up to max_seq only (the
 * heartbeat's: an answer names a config released while the worker was
 * away, and a partition a later runner of the same config put since the
 * heartbeat left is not the released runner's). */
void worker__config_drop_before(worker *w, const char *id, int64_t max_seq, bool *was_cached,
                                int64_t *dropped_partitions);
/* Starts/stops the heartbeat thread (worker_heartbeat.c). */
int worker__heartbeat_start(worker *w, struct fr_error *err);
void worker__heartbeat_stop(worker *w);
/* The heartbeat body {id, url, threads, running_tasks, config_ids (at most
 * WORKER_ANNOUNCE_MAX_CONFIG_IDS, what the coordinator takes)}. New. */
#define WORKER_ANNOUNCE_MAX_CONFIG_IDS 64
json_t *worker__announce_body(worker *w);

/* The remote byte source of scan tasks (worker_source.c): ctx is the
 * task's worker__remote_ctx; matches struct plan_io's open_remote and
 * close_remote. */
struct proto_peer;
struct worker__remote_ctx {
    worker *w;
    const struct proto_peer *peer; /* the task's config and tracing IDs */
    const char *coordinator;       /* borrowed: w->coordinator, or NULL */
    int64_t deadline_us;           /* the task's (fr_mono_us()); 0 = none */
};
int worker__remote_open(void *ctx, const char *rel, int64_t size, int64_t mtime_ns,
                        const struct df_byte_range *range, struct df_source **out,
                        struct fr_error *err);
void worker__remote_close(void *ctx, struct df_source *src);
/* "auto", "local", "remote" (NULL or "" = auto) into *mode (enum
 * plan_data_mode); FR_EINVAL for another name. */
int worker__data_source_parse(const char *name, int *mode);

#endif
