/* worker_task: runs one task of POST /v1/tasks. The config named by the
 * request is resolved (cache or store, verified; or verified from the body's
 * config_inline, bypassing the cache) and passed down to the
 * engine as this task's options only; inputs come from this worker's memory
 * or from their owner over HTTP; outputs stay here as partitions. */
#include "worker_int.h"
#include "../engine/engine.h"
#include "../plan/plan.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SLOTS 8

/* The task's input tables, per slot. Every slot has an array, named by the
 * request or not: the executor may read slot 0 of a "stored" input. */
struct task_inputs {
    struct df_table **tables[MAX_SLOTS]; /* new tables */
    int counts[MAX_SLOTS];
};

static void inputs_cleanup(struct task_inputs *in)
{
    for (int k = 0; k < MAX_SLOTS; k++) {
        for (int i = 0; i < in->counts[k]; i++)
            df_table_free(in->tables[k][i]);
        free(in->tables[k]);
    }
}

static int task_error(struct fr_error *err, int status, const char *kind, const char *msg)
{
    return fr_error_setk(err, status, kind, "%s", msg);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* GET {url}/v1/partitions/{id} under the same config, signed like every
 * internal call, carrying the task's tracing IDs. *out new. The fetch lasts
 * at most until deadline_us (fr_mono_us), the task's own deadline: an owner
 * that does not answer costs the task no more. */
static int fetch_remote(worker *w, const struct proto_peer *peer, const char *url, const char *id,
                        int64_t max_bytes, int64_t deadline_us, struct df_table **out,
                        struct fr_error *err)
{
    int64_t left_ms = (deadline_us - fr_mono_us()) / 1000;
    if (left_ms <= 0)
        return fr_error_setk(err, FR_ETIMEOUT, "task-timeout",
                             "the task's deadline (task_timeout_ms) passed before the fetch");
    struct fr_buf bytes;
    fr_buf_init(&bytes);
    worker__room_take(w, &bytes);
    int rc = proto_fetch_partition(peer, url, id, max_bytes, left_ms, &bytes, err);
    if (rc == FR_OK)
        rc = df_table_deserialize(bytes.data, bytes.len, out, err);
    worker__room_give(w, &bytes); /* the table holds copies */
    return rc;
}

void worker__room_take(worker *w, struct fr_buf *room)
{
    pthread_mutex_lock(&w->rooms_lock);
    if (w->nrooms > 0) { /* the largest: a big partition then needs no fresh pages */
        int best = 0;
        for (int i = 1; i < w->nrooms; i++)
            if (w->rooms[i].cap > w->rooms[best].cap)
                best = i;
        *room = w->rooms[best];
        w->rooms[best] = w->rooms[--w->nrooms];
        w->room_bytes -= (int64_t)room->cap;
    }
    pthread_mutex_unlock(&w->rooms_lock);
}

void worker__room_give(worker *w, struct fr_buf *room)
{
    room->len = 0;
    pthread_mutex_lock(&w->rooms_lock);
    if (room->cap > 0 && w->nrooms < WORKER__ROOMS &&
        (int64_t)room->cap <= WORKER__ROOM_BYTES - w->room_bytes) {
        w->rooms[w->nrooms++] = *room;
        w->room_bytes += (int64_t)room->cap;
        fr_buf_init(room);
    }
    pthread_mutex_unlock(&w->rooms_lock);
    fr_buf_cleanup(room); /* what did not fit */
}

void worker__rooms_drop(worker *w)
{
    pthread_mutex_lock(&w->rooms_lock);
    while (w->nrooms > 0)
        fr_buf_cleanup(&w->rooms[--w->nrooms]);
    w->room_bytes = 0;
    pthread_mutex_unlock(&w->rooms_lock);
}

int64_t worker__room_bytes(worker *w)
{
    pthread_mutex_lock(&w->rooms_lock);
    int64_t n = w->room_bytes;
    pthread_mutex_unlock(&w->rooms_lock);
    return n;
}

/* http(s)://, printable ASCII without spaces, at most 512 bytes. */
static bool peer_url_ok(const char *url)
{
    size_t n = strlen(url);
    if (n > 512 || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return false;
    for (size_t i = 0; i < n; i++)
        if (url[i] <= ' ' || url[i] > '~')
            return false;
    return true;
}

/* One input partition: from memory when this worker owns it, else over
 * HTTP. A failure is input-lost with ext {"lost": {url, id}}, but for the
 * task's own deadline passing before the fetch (task-timeout: not the
 * owner's fault). */
static int fetch_input(worker *w, json_t *ref, const struct proto_peer *peer, int64_t max_bytes,
                       int64_t deadline_us, const char *own_url, struct df_table **out,
                       json_t **ext, struct fr_error *err)
{
    const char *url = json_string_value(json_object_get(ref, "url"));
    const char *id = json_string_value(json_object_get(ref, "id"));
    if (!url || !id)
        return task_error(err, FR_EINVAL, "invalid-task", "every input needs a string url and id");
    if (!peer_url_ok(url) || !proto_partition_id_ok(id))
        return task_error(err, FR_EINVAL, "invalid-task",
                          "an input needs an http(s) url and a partition id p-<hex>");
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    bool own = strlen(own_url) == n && strncmp(url, own_url, n) == 0;
    int64_t t0 = now_ns();
    int rc = own ? worker_partition_table(w, id, peer->config_id, out, err)
                 : fetch_remote(w, peer, url, id, max_bytes, deadline_us, out, err);
    if (rc == FR_OK) {
        int64_t ns = now_ns() - t0;
        if (own) {
            atomic_fetch_add(&w->in_local_n, 1);
            atomic_fetch_add(&w->in_local_ns, ns);
        } else {
            atomic_fetch_add(&w->in_remote_n, 1);
            atomic_fetch_add(&w->in_remote_ns, ns);
            atomic_fetch_add(&w->in_remote_bytes, df_table_bytes(*out));
        }
        return FR_OK;
    }
    if (rc == FR_ETIMEOUT && strcmp(err->kind, "task-timeout") == 0)
        return rc;
    char why[sizeof(err->message)];
    snprintf(why, sizeof(why), "%s", err->message);
    fr_error_setk(err, FR_EIO, "input-lost",
                  "input partition %s at %s could not be fetched (its owner is at fault, not "
                  "this worker): %s",
                  id, url, why);
    *ext = json_pack("{s{ss ss}}", "lost", "url", url, "id", id);
    return FR_EIO;
}

/* Inputs come from peers: each is bounded by the task's memory limit
 * (twice it, as the encoding is not the in-memory size), before allocation. */
static int fetch_inputs(worker *w, json_t *inputs, const struct cfg_frozen *frozen,
                        const struct worker_trace *trace, int64_t deadline_us,
                        struct task_inputs *in, json_t **ext, struct fr_error *err)
{
    char codecs[32];
    const struct proto_peer peer = {.config_id = frozen->id,
                                    .secret = w->secret,
                                    .sender = w->id,
                                    .request_id = trace ? trace->request_id : NULL,
                                    .query_id = trace ? trace->query_id : NULL,
                                    .codecs =
                                        cfg_codecs_accept(&frozen->values, codecs, sizeof(codecs))};
    int64_t limit = frozen->values.task_memory_limit_bytes;
    int64_t max_bytes = limit > 0 && limit < INT64_MAX / 2 ? 2 * limit : 0;
    if (inputs && !json_is_array(inputs))
        return task_error(err, FR_EINVAL, "invalid-task", "inputs must be an array of arrays");
    if (json_array_size(inputs) > MAX_SLOTS)
        return task_error(err, FR_EINVAL, "invalid-task", "a task has at most 8 input slots");
    char own_url[512];
    worker_url_copy(w, own_url, sizeof(own_url));
    for (int k = 0; k < MAX_SLOTS; k++) {
        json_t *slot = json_array_get(inputs, (size_t)k);
        if (slot && !json_is_array(slot))
            return task_error(err, FR_EINVAL, "invalid-task", "inputs must be an array of arrays");
        in->tables[k] = fr_xcalloc(json_array_size(slot) + 1, sizeof(struct df_table *));
        for (size_t i = 0; i < json_array_size(slot); i++) {
            int rc = fetch_input(w, json_array_get(slot, i), &peer, max_bytes, deadline_us, own_url,
                                 &in->tables[k][i], ext, err);
            if (rc != FR_OK)
                return rc;
            in->counts[k]++;
        }
    }
    return FR_OK;
}

/* The counting semaphore of task slots: at most w->threads tasks at once. */
static void slot_acquire(worker *w)
{
    pthread_mutex_lock(&w->slots_lock);
    while (w->running >= w->threads)
        pthread_cond_wait(&w->slots_cond, &w->slots_lock);
    w->running++;
    pthread_mutex_unlock(&w->slots_lock);
}

static void slot_release(worker *w)
{
    pthread_mutex_lock(&w->slots_lock);
    w->running--;
    w->tasks_ended++;
    pthread_cond_signal(&w->slots_cond);
    pthread_mutex_unlock(&w->slots_lock);
}

static void count_scan(worker *w, const struct plan_io *io)
{
    if (io->used == PLAN_READ_LOCAL) {
        atomic_fetch_add(&w->scan_local_n, 1);
        atomic_fetch_add(&w->scan_local_bytes, io->scan_bytes);
    } else if (io->used == PLAN_READ_REMOTE) {
        atomic_fetch_add(&w->scan_remote_n, 1);
        atomic_fetch_add(&w->scan_remote_bytes, io->scan_bytes);
    }
}

/* Runs the spec with the frozen config as its options, until deadline_us
 * (the task's one deadline, which its input fetches used already); a file
 * input is read here or by range from the coordinator, as io says (io->used
 * tells which). *outs new. */
static int execute(worker *w, const struct cfg_frozen *frozen, const struct worker_trace *trace,
                   int64_t deadline_us, json_t *spec, struct task_inputs *in, struct df_exec *ex,
                   struct plan_io *io, struct df_table ***outs, int *nouts, struct fr_error *err)
{
    struct df_options opts;
    plan_options_from_cfg(&frozen->values, &opts);
    opts.config_id = frozen->id; /* the config resolved from Framed-Config-Id */
    df_exec_init(ex, &opts, NULL);
    ex->deadline_us = deadline_us;
    struct df_table **const *tables = (struct df_table * *const *)in->tables;
    char codecs[32];
    const struct proto_peer peer = {.config_id = frozen->id,
                                    .secret = w->secret,
                                    .sender = w->id,
                                    .request_id = trace ? trace->request_id : NULL,
                                    .query_id = trace ? trace->query_id : NULL,
                                    .codecs =
                                        cfg_codecs_accept(&frozen->values, codecs, sizeof(codecs))};
    struct worker__remote_ctx rctx = {
        .w = w, .peer = &peer, .coordinator = w->coordinator, .deadline_us = ex->deadline_us};
    *io = (struct plan_io){.data_dir = w->data_dir,
                           .mode = (enum plan_data_mode)w->data_source,
                           .open_remote = worker__remote_open,
                           .close_remote = worker__remote_close,
                           .ctx = &rctx};
    int64_t t0 = now_ns();
    int rc = plan_task_execute_io(spec, io, tables, in->counts, ex, outs, nouts, err);
    count_scan(w, io);
    atomic_fetch_add(&w->exec_n, 1);
    atomic_fetch_add(&w->exec_ns, now_ns() - t0);
    worker__config_count_task(w, frozen->id);
    ex->opts = NULL;                        /* opts dies with this frame */
    if (rc == FR_EINVAL && !err->kind[0]) { /* the message stays */
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, rc, "invalid-plan", "%s", why);
    }
    return rc;
}

/* Stores the outputs as partitions (stealing the tables) and makes the
 * reply's outputs array. */
static json_t *store_outputs(worker *w, const char *config_id, struct df_table **outs, int n)
{
    json_t *arr = json_array();
    for (int b = 0; b < n; b++) {
        if (!outs[b]) {
            json_array_append_new(arr, json_null());
            continue;
        }
        char id[40];
        int64_t bytes = 0, rows = outs[b]->nrows;
        worker_partition_put(w, config_id, outs[b], id, sizeof(id), &bytes);
        outs[b] = NULL;
        json_array_append_new(arr, json_pack("{ss sI sI}", "id", id, "rows", (json_int_t)rows,
                                             "bytes", (json_int_t)bytes));
    }
    return arr;
}

/* The body's own members (api/schemas/task.json, additionalProperties
 * false): query_id an ID, stage, task and attempt non-negative integers, and
 * nothing else; the spec and the inputs are checked where they are read. */
static int check_body(json_t *body, struct fr_error *err)
{
    static const char *const members[] = {"query_id", "stage",  "task",          "attempt",
                                          "spec",     "inputs", "config_inline", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        bool known = false;
        for (int i = 0; members[i] && !known; i++)
            known = strcmp(key, members[i]) == 0;
        if (!known)
            return task_error(err, FR_EINVAL, "invalid-task",
                              "a task has only query_id, stage, task, attempt, spec, inputs and "
                              "config_inline");
    }
    const char *qid = json_string_value(json_object_get(body, "query_id"));
    if (json_object_get(body, "query_id") &&
        (!qid || !*qid || strlen(qid) > 64 ||
         strspn(qid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
             strlen(qid)))
        return task_error(err, FR_EINVAL, "invalid-task",
                          "query_id must be 1-64 of [A-Za-z0-9_.-]");
    static const char *const counters[] = {"stage", "task", "attempt"};
    for (int i = 0; i < 3; i++) {
        v = json_object_get(body, counters[i]);
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
            return task_error(err, FR_EINVAL, "invalid-task",
                              "stage, task and attempt must be non-negative integers");
    }
    return FR_OK;
}

bool worker_trace_ok(const struct worker_trace *trace)
{
    return proto_trace_id_ok(trace->request_id) && proto_trace_id_ok(trace->query_id);
}

int worker_task_run(worker *w, const char *config_id, const struct worker_trace *trace,
                    json_t *body, json_t **out, json_t **ext, struct fr_error *err)
{
    int64_t start_us = fr_mono_us();
    struct cfg_frozen *frozen = NULL;
    struct task_inputs in;
    struct df_table **outs = NULL;
    int nouts = 0;
    struct df_exec ex;
    struct plan_io io = {.used = PLAN_READ_NONE};
    memset(&in, 0, sizeof(in));
    memset(&ex, 0, sizeof(ex));
    *out = NULL;
    *ext = NULL;
    /* The config comes from the cache (or the store), or, for the comparison
     * of propagation costs, verified from the body's "config_inline". */
    json_t *inline_cfg = json_object_get(body, "config_inline");
    int result = check_body(body, err);
    if (result != FR_OK)
        goto out;
    if (inline_cfg && !json_is_string(inline_cfg))
        result = task_error(err, FR_EINVAL, "invalid-task",
                            "config_inline must be the canonical config bytes as a string");
    else if (inline_cfg)
        result = worker_config_inline(w, config_id, json_string_value(inline_cfg),
                                      json_string_length(inline_cfg), &frozen, err);
    else
        result = worker_config_get(w, config_id, &frozen, err);
    if (result != FR_OK)
        goto out;
    json_t *spec = json_object_get(body, "spec");
    if (!json_is_object(spec)) {
        result = task_error(err, FR_EINVAL, "invalid-task", "the task needs a spec object");
        goto out;
    }
    slot_acquire(w);
    /* the task's deadline bounds its input fetches too */
    int64_t deadline_us = start_us + frozen->values.task_timeout_ms * 1000;
    result =
        fetch_inputs(w, json_object_get(body, "inputs"), frozen, trace, deadline_us, &in, ext, err);
    if (result == FR_OK)
        result = execute(w, frozen, trace, deadline_us, spec, &in, &ex, &io, &outs, &nouts, err);
    slot_release(w);
    if (result != FR_OK)
        goto out;
    json_t *outputs = store_outputs(w, frozen->id, outs, nouts);
    *out = json_pack("{ss ss so sI sI}", "config_id", frozen->id, "worker_id", w->id, "outputs",
                     outputs, "null_errors", (json_int_t)ex.null_errors, "elapsed_ms",
                     (json_int_t)((fr_mono_us() - start_us) / 1000));
    if (io.used != PLAN_READ_NONE) /* where this worker read the task's file */
        json_object_set_new(*out, "scan",
                            json_pack("{ss sI}", "source", plan_read_source_name(io.used), "bytes",
                                      (json_int_t)io.scan_bytes));
    if (io.rows_read >= 0) /* what its source gave, for the coordinator's task records */
        json_object_set_new(*out, "source_rows", json_integer(io.rows_read));
out:
    for (int b = 0; b < nouts; b++)
        df_table_free(outs[b]);
    free(outs);
    inputs_cleanup(&in);
    cfg_frozen_unref(frozen);
    return result;
}

void worker__task_metrics(worker *w, struct fr_buf *out)
{
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        {"framed_worker_input_fetches_total", "counter",
         "Task input partitions taken, by source: remote = GET from another worker (transfer "
         "and deserialize), local = from this worker's memory."},
        {"framed_worker_input_fetch_seconds_total", "counter",
         "Time tasks spent taking their input partitions, by source."},
        {"framed_worker_input_fetch_bytes_total", "counter",
         "In-memory bytes of the input partitions fetched from other workers."},
        {"framed_worker_task_execute_seconds_total", "counter",
         "Time tasks spent executing their spec (inputs already taken)."},
        {"framed_worker_task_executions_total", "counter", "Task specs executed."},
        {"framed_worker_scan_tasks_total", "counter",
         "Scan tasks by where they read their file: local = this worker's data dir, remote = "
         "by HTTP range from the coordinator."},
        {"framed_worker_scan_bytes_total", "counter",
         "Bytes of the file ranges scan tasks read, by source."},
        {"framed_worker_range_reads_total", "counter",
         "Range reads (blocks) fetched from the coordinator for remote scans."},
        {"framed_worker_range_read_bytes_total", "counter",
         "Bytes received by range reads from the coordinator."},
        {"framed_worker_partition_sends_total", "counter",
         "Partitions sent to fetches from other processes, by the coding they went in "
         "(partition_codecs): identity, lz4 or zstd."},
        {"framed_worker_partition_sent_bytes_total", "counter",
         "Bytes on the wire of the partitions sent to fetches, by coding."},
    };
    for (int i = 0; i < 11; i++)
        fr_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m[i].name, m[i].help, m[i].name,
                      m[i].type);
    fr_buf_printf(out, "%s{source=\"remote\"} %lld\n%s{source=\"local\"} %lld\n", m[0].name,
                  (long long)atomic_load(&w->in_remote_n), m[0].name,
                  (long long)atomic_load(&w->in_local_n));
    fr_buf_printf(out, "%s{source=\"remote\"} %.6f\n%s{source=\"local\"} %.6f\n", m[1].name,
                  (double)atomic_load(&w->in_remote_ns) / 1e9, m[1].name,
                  (double)atomic_load(&w->in_local_ns) / 1e9);
    fr_buf_printf(out, "%s %lld\n", m[2].name, (long long)atomic_load(&w->in_remote_bytes));
    fr_buf_printf(out, "%s %.6f\n", m[3].name, (double)atomic_load(&w->exec_ns) / 1e9);
    fr_buf_printf(out, "%s %lld\n", m[4].name, (long long)atomic_load(&w->exec_n));
    fr_buf_printf(out, "%s{source=\"remote\"} %lld\n%s{source=\"local\"} %lld\n", m[5].name,
                  (long long)atomic_load(&w->scan_remote_n), m[5].name,
                  (long long)atomic_load(&w->scan_local_n));
    fr_buf_printf(out, "%s{source=\"remote\"} %lld\n%s{source=\"local\"} %lld\n", m[6].name,
                  (long long)atomic_load(&w->scan_remote_bytes), m[6].name,
                  (long long)atomic_load(&w->scan_local_bytes));
    fr_buf_printf(out, "%s %lld\n", m[7].name, (long long)atomic_load(&w->range_reads));
    fr_buf_printf(out, "%s %lld\n", m[8].name, (long long)atomic_load(&w->range_bytes));
    for (int c = FR_CODEC_NONE; c <= FR_CODEC_ZSTD; c++)
        fr_buf_printf(out, "%s{encoding=\"%s\"} %lld\n", m[9].name, fr_codec_name(c),
                      (long long)atomic_load(&w->sent_n[c]));
    for (int c = FR_CODEC_NONE; c <= FR_CODEC_ZSTD; c++)
        fr_buf_printf(out, "%s{encoding=\"%s\"} %lld\n", m[10].name, fr_codec_name(c),
                      (long long)atomic_load(&w->sent_bytes[c]));
}
