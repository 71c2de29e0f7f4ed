/* runner_query: the query object: its state machine, waiting, status JSON
 * and result access. The driver (runner_driver.c) moves it along. */
#include "runner_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *runner_qstate_name(enum runner_qstate s)
{
    static const char *const names[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    return names[s];
}

runner_query *runner_query_new(const char *id, plan_physical *plan)
{
    runner_query *q = fr_xcalloc(1, sizeof(*q));
    atomic_init(&q->refcount, 1);
    atomic_init(&q->cancel, false);
    atomic_init(&q->spill_all, false);
    snprintf(q->id, sizeof(q->id), "%s", id);
    q->plan = plan;
    pthread_mutex_init(&q->lock, NULL);
    fr_cond_init_mono(&q->cond); /* runner_query_wait's deadline is monotonic */
    q->state = RQ_QUEUED;
    q->created_us = fr_mono_us();
    fr_error_init(&q->error);
    q->task_config_ids = json_array();
    q->released_rows = -1;
    return q;
}

void runner_query_set_request_id(runner_query *q, const char *request_id)
{
    snprintf(q->request_id, sizeof(q->request_id), "%s", request_id ? request_id : "");
}

void runner_query_bind_config(runner_query *q, const runner *r)
{
    pthread_mutex_lock(&q->lock);
    snprintf(q->config_id, sizeof(q->config_id), "%s", r->frozen->id);
    pthread_mutex_unlock(&q->lock);
}

runner_query *runner_query_ref(runner_query *q)
{
    atomic_fetch_add(&q->refcount, 1);
    return q;
}

void runner_query_unref(runner_query *q)
{
    if (!q || atomic_fetch_sub(&q->refcount, 1) != 1)
        return;
    /* what runner_query_release_result did not drop: the runner may be gone
     * by now, so remote parts are only forgotten here (a reset drops them) */
    for (int i = 0; i < q->nresult_parts; i++)
        if (q->result_parts[i]) {
            q->result_parts[i]->borrowed = true;
            runner__part_free(NULL, q->result_parts[i]);
        }
    free(q->result_parts);
    free(q->result);
    plan_physical_free(q->plan);
    json_decref(q->task_config_ids);
    runner__tasks_free(q);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    free(q);
}

void runner_query_cancel(runner_query *q)
{
    atomic_store(&q->cancel, true);
    pthread_mutex_lock(&q->lock);
    if (q->state == RQ_QUEUED) {
        q->state = RQ_CANCELLED;
        q->settled = true;
        q->finished_us = fr_mono_us();
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
}

static bool final(enum runner_qstate s)
{
    return s == RQ_SUCCEEDED || s == RQ_FAILED || s == RQ_CANCELLED;
}

bool runner_query_wait(runner_query *q, int64_t timeout_ms)
{
    struct timespec deadline;
    fr_mono_deadline(&deadline, timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&q->lock);
    while (!q->settled && timeout_ms != 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->cond, &q->lock);
        else if (pthread_cond_timedwait(&q->cond, &q->lock, &deadline) == ETIMEDOUT)
            break;
    }
    bool done = q->settled;
    pthread_mutex_unlock(&q->lock);
    return done;
}

enum runner_qstate runner_query_state(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    enum runner_qstate s = q->state;
    pthread_mutex_unlock(&q->lock);
    return s;
}

static json_t *error_json(const struct fr_error *e)
{
    json_t *j = json_pack("{ss ss}", "kind", e->kind[0] ? e->kind : fr_status_name(e->status),
                          "message", e->message);
    if (e->file[0])
        json_object_set_new(j, "file", json_string(e->file));
    if (e->line >= 0)
        json_object_set_new(j, "line", json_integer(e->line));
    if (e->row_group >= 0)
        json_object_set_new(j, "row_group", json_integer(e->row_group));
    if (e->column >= 0)
        json_object_set_new(j, "column", json_integer(e->column));
    if (e->field[0])
        json_object_set_new(j, "field", json_string(e->field));
    return j;
}

/* The rows of the result (its parts' reported rows). Under q->lock. */
static int64_t result_rows_locked(const runner_query *q)
{
    int64_t rows = 0;
    for (int i = 0; i < q->nresult_parts; i++)
        if (q->result_parts[i])
            rows += q->result_parts[i]->rows;
    return rows;
}

json_t *runner_query_json(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t rows = -1;
    if (q->state == RQ_SUCCEEDED && q->settled)
        rows = q->released_rows >= 0 ? q->released_rows : result_rows_locked(q);
    int64_t end = final(q->state) ? q->finished_us : fr_mono_us();
    int64_t start = q->started_us ? q->started_us : q->created_us;
    /* final only once settled: a "succeeded" query's result can be fetched */
    enum runner_qstate shown = final(q->state) && !q->settled ? RQ_RUNNING : q->state;
    json_t *j =
        json_pack("{ss ss s{sI sI sI sI sI} so? sO so? sI so sI}", "id", q->id, "state",
                  runner_qstate_name(shown), "progress", "tasks_total", (json_int_t)q->tasks_total,
                  "tasks_done", (json_int_t)q->tasks_done, "intermediate_bytes",
                  (json_int_t)q->held_bytes, "intermediate_peak_bytes", (json_int_t)q->held_peak,
                  "spilled_bytes", (json_int_t)q->spilled_bytes, "config_id",
                  q->config_id[0] ? json_string(q->config_id) : NULL, "task_config_ids",
                  q->task_config_ids, "rows", rows >= 0 ? json_integer(rows) : NULL, "elapsed_ms",
                  (json_int_t)((end - start) / 1000), "error",
                  shown == RQ_FAILED ? error_json(&q->error) : json_null(), "null_errors",
                  (json_int_t)q->null_errors);
    pthread_mutex_unlock(&q->lock);
    return j;
}

const struct fr_error *runner_query_error(runner_query *q)
{
    return &q->error;
}

int runner_query_result(runner_query *q, struct df_table *const **parts, int *nparts)
{
    pthread_mutex_lock(&q->lock);
    int rc = q->state == RQ_SUCCEEDED && q->settled ? FR_OK : FR_ECONFLICT;
    int n = 0;
    if (rc == FR_OK && !q->result) { /* borrowed: the parts' tables, all here once collected */
        q->result = fr_xcalloc((size_t)q->nresult_parts + 1, sizeof(*q->result));
        for (int i = 0; i < q->nresult_parts; i++)
            if (q->result_parts[i] && q->result_parts[i]->table)
                q->result[n++] = q->result_parts[i]->table;
    } else if (q->result) {
        while (q->result[n])
            n++;
    }
    *parts = q->result;
    *nparts = n;
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int64_t runner_query_rows(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t rows = result_rows_locked(q);
    pthread_mutex_unlock(&q->lock);
    return rows;
}

void runner_query_release_result(runner_query *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->settled && q->released_rows < 0) {
        q->released_rows = result_rows_locked(q);
        for (int i = 0; i < q->nresult_parts; i++) /* remote ones dropped on their workers */
            runner__part_free(q->r, q->result_parts[i]);
        free(q->result_parts);
        q->result_parts = NULL;
        q->nresult_parts = 0;
        free(q->result);
        q->result = NULL;
    }
    pthread_mutex_unlock(&q->lock);
}

int64_t runner_query_bytes(runner_query *q)
{
    int64_t bytes = 0;
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < q->nresult_parts; i++) { /* a part on a worker: the bytes it reported */
        const struct runner_part *p = q->result_parts[i];
        if (p && (p->table || !p->spilled)) /* on disk (and not read back): not in memory */
            bytes += p->table ? df_table_bytes(p->table) : p->bytes;
    }
    pthread_mutex_unlock(&q->lock);
    return bytes;
}

void runner_query_collect_result(runner_query *q)
{
    q->collect = true;
}

void runner_query_on_finish(runner_query *q, void (*fn)(runner_query *, void *), void *arg)
{
    q->on_finish = fn;
    q->on_finish_arg = arg;
}

void runner_query_on_settled(runner_query *q, void (*fn)(runner_query *, void *), void *arg)
{
    q->on_settled = fn;
    q->on_settled_arg = arg;
}

void runner_query_fail(runner_query *q, const struct fr_error *err)
{
    pthread_mutex_lock(&q->lock);
    free(q->result);
    q->result = NULL;
    for (int i = 0; i < q->nresult_parts; i++) { /* not kept by anyone now */
        runner__part_free(q->r, q->result_parts[i]);
        q->result_parts[i] = NULL;
    }
    q->error = *err;
    q->state = RQ_FAILED;
    pthread_mutex_unlock(&q->lock);
}

/* A result fetched from a worker must have the plan's columns and types: a
 * worker cannot make the query answer with a table of its own choosing. */
static int check_remote_result(const runner_query *q, const struct runner_part *p,
                               struct fr_error *err)
{
    const struct df_schema *s = plan_physical_schema(q->plan);
    const struct df_table *t = p->table;
    bool ok = t->ncols == s->nfields;
    for (int i = 0; ok && i < t->ncols; i++)
        ok = strcmp(t->names[i], s->fields[i].name) == 0 && t->cols[i]->type == s->fields[i].type;
    if (ok)
        return FR_OK;
    fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                  "worker %.200s sent result partition %.64s with columns that are not the "
                  "plan's (%d columns, the plan has %d); the result is refused",
                  p->url, p->id ? p->id : "?", t->ncols, s->nfields);
    return FR_EDATA;
}

/* Fetches remote result partition i, charging it to what is left of the
 * memory budget (*left, -1 = no budget) before it is kept. */
static int collect_one(runner_query *q, int i, int64_t *left, struct fr_error *err)
{
    struct runner_part *p = q->result_parts[i];
    if (p->table && !p->url) /* local: the context charges it when the query settles */
        return FR_OK;
    int64_t cap = *left >= 0 ? (*left > 0 ? *left : 1) : 0;
    int rc = runner__part_table(q->r, p, cap, err); /* a no-op once prefetched */
    if (rc == FR_ENOSPACE || (rc == FR_OK && *left >= 0 && df_table_bytes(p->table) > *left)) {
        fr_error_setk(err, FR_ENOSPACE, "memory-budget-exceeded",
                      "result partition %.64s from worker %.200s does not fit the memory budget "
                      "(--memory-limit %lld bytes); add a limit or a filter",
                      p->id ? p->id : "?", p->url, (long long)q->r->memory_budget);
        return FR_ENOSPACE;
    }
    if (rc == FR_OK)
        rc = check_remote_result(q, p, err);
    if (rc == FR_OK) /* one measure: what the context charges, not the worker's word */
        p->bytes = df_table_bytes(p->table);
    if (rc == FR_OK && *left >= 0)
        *left -= p->bytes;
    return rc;
}

/* A succeeded query's result: a previews' (q->collect) remote partitions are
 * fetched here (a result that cannot be fetched, is not the plan's or does
 * not fit the memory budget fails the query); any other query's stay on
 * their workers until the result is read (runner_result_open) or released. */
static void collect_result(runner_query *q)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = FR_OK;
    int64_t left = q->r->memory_budget > 0 ? q->r->memory_budget : -1;
    for (int i = 0; q->collect && i < q->nresult_parts && rc == FR_OK; i++)
        rc = collect_one(q, i, &left, &err);
    pthread_mutex_lock(&q->lock);
    if (rc != FR_OK) {
        q->state = RQ_FAILED;
        q->error = err;
    }
    q->finished_us = fr_mono_us(); /* the elapsed time includes collecting the result */
    pthread_mutex_unlock(&q->lock);
}

/* More tries of a result partition fetch a worker answered 503 (after 0.1,
 * 0.2, 0.4 s). */
#define RESULT_FETCH_TRIES 3
/* A remote result partition is read in pieces of about this many bytes (by
 * its rows and the bytes its worker reported), each a whole number of
 * morsels and at least one: the next piece is fetched while the one before
 * is sent, so a result of a few large partitions streams as it is fetched
 * instead of waiting for each whole partition, and a fetch holds a piece,
 * not a partition, in memory. */
#define RESULT_PIECE_BYTES (16 << 20)
/* The worker's word sizes the pieces, so their number is bounded: at most
 * this many per partition (wide rows make pieces larger than
 * RESULT_PIECE_BYTES, never more numerous), and a partition is read whole
 * once a read has RESULT_MAX_PIECES. */
#define RESULT_PIECES_PER_PART 1024
#define RESULT_MAX_PIECES (1 << 20)

struct runner_result {
    runner_query *q;          /* held: its plan is the schema a fetched part must have */
    struct runner_life *life; /* q->r, while it lives: the budget a read-back is checked by */
    atomic_llong *read_back;  /* where a read-back is charged (q->r's owner's), or NULL */
    struct runner_fetcher fetcher;
    struct runner_part **parts; /* views: a local part's table shared, a remote one's address */
    bool *charged;              /* parts whose read-back copy is charged to read_back now */
    int nparts;
};

/* Appends part v to res->parts (room for *cap, grown by doubling). */
static void result_push(runner_result *res, int *cap, struct runner_part *v)
{
    if (res->nparts + 1 >= *cap) {
        *cap *= 2;
        res->parts = fr_xrealloc(res->parts, (size_t)*cap * sizeof(*res->parts));
    }
    res->parts[res->nparts++] = v;
}

int runner_result_open(runner_query *q, runner_result **out, struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->state != RQ_SUCCEEDED || !q->settled || q->released_rows >= 0) {
        pthread_mutex_unlock(&q->lock);
        return fr_error_setk(err, FR_ECONFLICT, "conflict", "query %s has no result to read",
                             q->id);
    }
    runner_result *res = fr_xcalloc(1, sizeof(*res));
    res->q = runner_query_ref(q);
    res->life = runner__life_ref(q->r);
    res->read_back = q->r->read_back;
    int64_t morsel =
        q->r->frozen->values.morsel_size_rows > 0 ? q->r->frozen->values.morsel_size_rows : 65536;
    int cap = q->nresult_parts + 1;
    res->parts = fr_xcalloc((size_t)cap, sizeof(*res->parts));
    bool remote = false;
    for (int i = 0; i < q->nresult_parts; i++) {
        const struct runner_part *p = q->result_parts[i];
        if (!p)
            continue;
        if (p->table) {
            result_push(res, &cap, runner__part_local(df_table_share(p->table)));
            continue;
        }
        if (p->spilled) { /* read back from disk when its rows are read */
            struct runner_part *v = runner__part_local(NULL);
            v->rows = p->rows;
            v->bytes = p->bytes;
            v->spilled = runner__spill_ref(p->spilled);
            result_push(res, &cap, v);
            continue;
        }
        /* the worker's word on its bytes only sizes the pieces: a whole
         * number of morsels each, so at most rows / morsel of them */
        int64_t piece = p->rows;
        if (p->bytes > RESULT_PIECE_BYTES && p->rows > morsel && res->nparts < RESULT_MAX_PIECES) {
            double per_row = (double)p->bytes / (double)p->rows;
            int64_t want = (int64_t)((double)RESULT_PIECE_BYTES / per_row);
            int64_t least = (p->rows + RESULT_PIECES_PER_PART - 1) / RESULT_PIECES_PER_PART;
            if (want < least)
                want = least;
            piece = (want / morsel + 1) * morsel;
        }
        for (int64_t at = 0;; at += piece) { /* an empty partition: one empty piece */
            int64_t n = p->rows - at < piece ? p->rows - at : piece;
            struct runner_part *v = runner__part_remote(
                p->url, p->id, n, p->rows > 0 ? (int64_t)((double)p->bytes * n / p->rows) : 0);
            v->borrowed = true; /* the query's part owns the worker's copy */
            v->ranged = piece < p->rows;
            v->range_start = at;
            v->range_total = p->rows;
            snprintf(v->request_id, sizeof(v->request_id), "%s", p->request_id);
            snprintf(v->query_id, sizeof(v->query_id), "%s", p->query_id);
            remote = true;
            result_push(res, &cap, v);
            if (at + n >= p->rows)
                break;
        }
    }
    pthread_mutex_unlock(&q->lock);
    res->charged = fr_xcalloc((size_t)res->nparts + 1, sizeof(*res->charged));
    if (remote && q->r->be->fetcher) /* q->r lives while the context holds q's record */
        q->r->be->fetcher(q->r, &res->fetcher);
    *out = res;
    return FR_OK;
}

int runner_result_nparts(const runner_result *res)
{
    return res->nparts;
}

int64_t runner_result_part_rows(const runner_result *res, int i)
{
    return res->parts[i]->rows;
}

bool runner_result_part_here(const runner_result *res, int i)
{
    /* a remote view's table is set for a moment by a fetch, maybe on a
     * read-ahead thread: only url and spilled, fixed at open, are read */
    const struct runner_part *p = res->parts[i];
    return p->spilled || (!p->url && p->table);
}

bool runner_result_location(const runner_result *res, int i, const char **worker,
                            const char **part_id, int64_t *offset, const char **config_id,
                            const char **secret)
{
    const struct runner_part *p = res->parts[i];
    if (p->table || !p->url || !p->id || !res->fetcher.config_id)
        return false;
    *worker = p->url;
    *part_id = p->id;
    *offset = p->ranged ? p->range_start : 0;
    *config_id = res->fetcher.config_id;
    *secret = res->fetcher.secret;
    return true;
}

/* Charges part i's read-back copy to the runner owner's read_back while its
 * reader holds it (runner_result_part_done gives it back), if the budget
 * has room for it with everything else held and running. Once a reset
 * freed the runner there is no budget to check it by, but it is charged
 * still: the next runner's budget counts it while the stream that outlived
 * the reset holds it. The life lock makes checks one at a time. */
static int read_back_charge(runner_result *res, int i, struct fr_error *err)
{
    int64_t bytes = res->parts[i]->bytes;
    if (!res->read_back || res->charged[i])
        return FR_OK;
    int rc = FR_OK;
    pthread_mutex_lock(&res->life->lock);
    runner *r = res->life->r;
    if (r && r->memory_budget > 0) {
        int64_t used = runner__others_charged(r) + runner_memory_in_use(r);
        if (used + bytes > r->memory_budget) {
            int64_t left = r->memory_budget - used;
            rc = fr_error_setk(err, FR_ENOSPACE, "memory-budget-exceeded",
                               "result partition %d is on disk (%lld bytes in memory) and the "
                               "memory budget has %lld bytes left now; read it when running "
                               "queries are done, or delete other results",
                               i + 1, (long long)bytes, (long long)(left > 0 ? left : 0));
        }
    }
    if (rc == FR_OK) {
        atomic_fetch_add(res->read_back, bytes);
        res->charged[i] = true;
    }
    pthread_mutex_unlock(&res->life->lock);
    return rc;
}

void runner_result_part_done(runner_result *res, int i)
{
    if (!res || i < 0 || i >= res->nparts || !res->charged[i])
        return;
    atomic_fetch_sub(res->read_back, res->parts[i]->bytes);
    res->charged[i] = false;
}

int runner_result_part(runner_result *res, int i, struct df_table **out, struct fr_error *err)
{
    *out = NULL;
    struct runner_part *p = res->parts[i];
    if (p->table) {
        *out = df_table_share(p->table);
        return FR_OK;
    }
    if (p->spilled) { /* the copy read back goes with the caller, if the budget has room */
        int rc = read_back_charge(res, i, err);
        if (rc == FR_OK && (rc = runner__spill_load(p, out, err)) != FR_OK)
            runner_result_part_done(res, i);
        return rc;
    }
    int rc = runner__fetcher_fetch(&res->fetcher, p, err);
    /* a worker's 503 (busy: its connection limits) is worth a few more tries */
    for (int k = 0; k < RESULT_FETCH_TRIES && rc == FR_EUNAVAILABLE; k++) {
        struct timespec pause = {0, (100L << k) * 1000000L};
        nanosleep(&pause, NULL);
        fr_error_init(err);
        rc = runner__fetcher_fetch(&res->fetcher, p, err);
    }
    if (rc == FR_ENOSPACE)
        fr_error_setk(err, FR_ENOSPACE, "memory-budget-exceeded",
                      "result partition %.64s on worker %.200s is larger than the most one fetch "
                      "may take (%lld bytes, --memory-limit); add a limit to the query",
                      p->id, p->url, (long long)res->fetcher.cap);
    else if (rc == FR_EUNAVAILABLE) { /* busy (503) after the tries: the data is there */
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, rc, "unavailable",
                      "worker %.200s holding result partition %.64s is busy (%.400s); try again",
                      p->url, p->id, why);
    } else if (rc != FR_OK && (!err->kind[0] || strcmp(err->kind, "input-lost") == 0)) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, rc, "input-lost",
                      "result partition %.64s stays on worker %.200s, which cannot give it "
                      "(%.400s); run the query again",
                      p->id, p->url, why);
    }
    if (rc == FR_OK && (rc = check_remote_result(res->q, p, err)) == FR_OK)
        *out = p->table; /* the fetched copy goes with the caller */
    else
        df_table_free(p->table);
    p->table = NULL;
    return rc;
}

void runner_result_close(runner_result *res)
{
    if (!res)
        return;
    for (int i = 0; i < res->nparts; i++) {
        runner_result_part_done(res, i);        /* the reader dropped its copy before closing */
        runner__part_free(NULL, res->parts[i]); /* views: nothing remote is dropped */
    }
    free(res->parts);
    free(res->charged);
    runner__life_unref(res->life);
    runner__fetcher_cleanup(&res->fetcher);
    runner_query_unref(res->q);
    free(res);
}

void runner__finished(runner_query *q)
{
    runner *r = q->r;             /* outlives this call: runner_free joins its threads first */
    if (q->state == RQ_SUCCEEDED) /* final: only this thread touches the parts now */
        collect_result(q);
    if (q->on_finish)
        q->on_finish(q, q->on_finish_arg);
    pthread_mutex_lock(&q->lock);
    struct runner_part **parts = NULL;
    int n = 0;
    if (q->state != RQ_SUCCEEDED) { /* a result only a succeeded query keeps */
        parts = q->result_parts;
        n = q->nresult_parts;
        q->result_parts = NULL;
        q->nresult_parts = 0;
    }
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < n; i++)
        runner__part_free(q->r, parts[i]);
    free(parts);
    pthread_mutex_lock(&q->lock);
    q->settled = true;
    runner__tasks_settle_locked(q); /* the records go, their JSON stays */
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    if (q->on_settled)
        q->on_settled(q, q->on_settled_arg);
    runner_query_unref(q);
    runner__notify_idle(r);
}

const plan_physical *runner_query_plan(const runner_query *q)
{
    return q->plan;
}
