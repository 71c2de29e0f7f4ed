/* context_queries: running dataframes and plans as queries on the runner,
 * their status, cancellation and results. Results count against the
 * memory budget (--memory-limit); a run of a dataframe keeps its partitions
 * in the runner so later plans can start from it. */
#include "context_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_QUERY_RECORDS 512

struct ctx_result {
    ctx *c;
    struct ctx__charge *charge; /* the reader's hold on the result's charge */
    runner_result *res;
    struct df_table *schema; /* no rows: the result's columns */
    int64_t *starts;         /* starts[i]: the result row part i begins at; [nparts] = rows */
    int nparts;
    int cur;                /* the part in table, -1 = none */
    struct df_table *table; /* part cur (one at a time: a fetched part goes when the next comes) */
    int64_t until;          /* ctx_result_read_until's end */
    /* the read-ahead: the next CTX_AHEAD parts with rows fetched on threads of
     * their own while cur is sent (two in flight keep the link busy while one
     * is deserialized) */
    struct ahead {
        ctx_result *r;
        pthread_t thread;
        bool running;
        int part, rc;
        struct df_table *table;
        struct fr_error err;
    } ahead[2];
    int64_t morsel_rows; /* the frozen config's morsel_size_rows */
};

static struct ctx_qrec *find_query(ctx *c, const char *id, int *index)
{
    for (int i = 0; i < c->nqueries; i++) {
        if (strcmp(c->queries[i]->id, id) == 0) {
            if (index)
                *index = i;
            return c->queries[i];
        }
    }
    return NULL;
}

static void charge_unref(ctx *c, struct ctx__charge *ch);

void ctx__frame_data_release(ctx *c, const char *qid, int64_t bytes)
{
    struct ctx_qrec *rec = qid[0] ? find_query(c, qid, NULL) : NULL;
    if (rec && !rec->released && rec->charge && rec->charge->refs > 1) {
        /* reads of that run's result are in progress and hold its tables:
         * the bytes go back to its charge, whose last reader gives them
         * back and releases the result; new reads get 410 at once */
        rec->released = true;
        rec->charge->bytes += bytes;
        charge_unref(c, rec->charge);
        rec->charge = NULL;
        return;
    }
    c->mem_used -= bytes;
    if (rec && !rec->released) { /* its result is the same data: it goes too */
        rec->released = true;
        runner_query_release_result(rec->q);
    }
}

/* new: the charge of query q's result (q ran on r), held once (by its record). */
static struct ctx__charge *charge_new(runner_query *q, runner *r)
{
    struct ctx__charge *ch = fr_xcalloc(1, sizeof(*ch));
    ch->refs = 1;
    ch->q = runner_query_ref(q);
    snprintf(ch->runner, sizeof(ch->runner), "%s", runner_id(r));
    return ch;
}

/* Lets go of a hold on ch (context lock held); the last one gives the bytes
 * back and releases the result. Accepts NULL. */
static void charge_unref(ctx *c, struct ctx__charge *ch)
{
    if (!ch || --ch->refs > 0)
        return;
    c->mem_used -= ch->bytes;
    /* a result on workers is dropped there while its runner lives; after a
     * reset its parts here go with the query's last reference */
    if (c->runner && strcmp(runner_id(c->runner), ch->runner) == 0)
        runner_query_release_result(ch->q);
    runner_query_unref(ch->q);
    free(ch);
}

static void qrec_free(ctx *c, struct ctx_qrec *rec)
{
    charge_unref(c, rec->charge); /* reads in progress keep it */
    runner_query_unref(rec->q);
    json_decref(rec->sql);
    free(rec);
}

/* Called once per runner, after its drain (the reset, the context's end):
 * the runner's task counters are folded into the context's, so /metrics'
 * framed_tasks_total never goes back when a runner is torn down. */
void ctx__queries_clear(ctx *c)
{
    if (c->runner) {
        int64_t n[RUNNER_TASK_OUTCOMES];
        runner_task_counts(c->runner, n);
        for (int i = 0; i < RUNNER_TASK_OUTCOMES; i++)
            c->tasks_retired[i] += n[i];
    }
    for (int i = 0; i < c->nqueries; i++)
        qrec_free(c, c->queries[i]);
    c->nqueries = 0;
}

/* Keeps the record list bounded: the oldest finished queries go first. */
static void evict_locked(ctx *c)
{
    for (int i = 0; i < c->nqueries && c->nqueries >= MAX_QUERY_RECORDS; i++) {
        /* settled only: a result is released (dropped on its workers) once it is final */
        if (!runner_query_wait(c->queries[i]->q, 0))
            continue;
        qrec_free(c, c->queries[i]);
        memmove(&c->queries[i], &c->queries[i + 1],
                sizeof(*c->queries) * (size_t)(c->nqueries - i - 1));
        c->nqueries--;
        i--;
    }
}

struct finish_arg {
    ctx *c;
    char id[40];
    char runner_id[64]; /* copied at the submit: the runner may be reset by the hook's time */
    char frame_id[40];
};

static void query_finished(runner_query *q, void *arg)
{
    struct finish_arg *fa = arg;
    ctx *c = fa->c;
    pthread_mutex_lock(&c->lock);
    struct ctx_qrec *rec = find_query(c, fa->id, NULL);
    if (rec && runner_query_state(q) == RQ_SUCCEEDED) {
        int64_t bytes = runner_query_bytes(q);
        int64_t limit = c->opts.memory_limit;
        int64_t used = c->mem_used + atomic_load(&c->checking); /* upload checks too */
        if (limit > 0 && used + bytes > limit) {
            struct fr_error e;
            fr_error_init(&e);
            fr_error_setk(&e, FR_ENOSPACE, "memory-budget-exceeded",
                          "the result needs %lld bytes but only %lld of the memory budget "
                          "(--memory-limit %lld) are free; delete dataframes or query results",
                          (long long)bytes, (long long)(limit - used), (long long)limit);
            runner_query_fail(q, &e);
        } else {
            rec->charge->bytes = bytes;
            c->mem_used += bytes;
            if (rec->frame_id[0])
                ctx__frame_materialize(c, rec); /* the frame takes the charge over */
        }
    }
    pthread_mutex_unlock(&c->lock);
    ctx__history_query_finished(c, q, fa->id, fa->runner_id, true);
    ctx__runner_release(c); /* the submit's hold: a reset waits for this hook */
}

/* Once settled (after query_finished): the final event, even when the
 * record is gone already. Frees the hooks' shared argument. */
static void query_settled(runner_query *q, void *arg)
{
    struct finish_arg *fa = arg;
    pthread_mutex_lock(&fa->c->lock);
    ctx__live_query_final(fa->c, q, fa->frame_id);
    pthread_mutex_unlock(&fa->c->lock);
    free(fa);
}

/* *plan (new): s's compiled plan, else body's plan or its dataframe's. */
static int resolve_body(ctx *c, json_t *body, const ctx_sql *s, json_t **plan, char *frame_id,
                        size_t fsz, struct ctx_error *err)
{
    if (s) {
        *plan = json_incref(ctx_sql_plan(s));
        return FR_OK;
    }
    json_t *df = json_object_get(body, "dataframe"), *p = json_object_get(body, "plan");
    if (!json_is_object(body) || (!df == !p))
        return ctx__fail(err, FR_EINVAL, "invalid-plan",
                         "a query needs exactly one of {\"dataframe\": id}, {\"plan\": ...} or "
                         "{\"sql\": \"...\"}");
    if (p) {
        *plan = json_incref(p);
        return FR_OK;
    }
    if (!json_is_string(df))
        return ctx__fail(err, FR_EINVAL, "invalid-plan", "\"dataframe\" must be an id string");
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = NULL;
    for (int i = 0; i < c->nframes && !f; i++)
        if (strcmp(c->frames[i]->id, json_string_value(df)) == 0)
            f = c->frames[i];
    if (f) {
        *plan = json_incref(f->plan);
        snprintf(frame_id, fsz, "%s", f->id);
    }
    pthread_mutex_unlock(&c->lock);
    if (!f)
        return ctx__fail(err, FR_ENOTFOUND, "dataframe-not-found", "no dataframe '%s'",
                         json_string_value(df));
    return FR_OK;
}

static int check_budget(ctx *c, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    int64_t used = c->mem_used, limit = c->opts.memory_limit;
    pthread_mutex_unlock(&c->lock);
    if (limit > 0 && used >= limit)
        return ctx__fail(err, FR_ENOSPACE, "memory-budget-exceeded",
                         "the memory budget (--memory-limit %lld bytes) is used up by kept "
                         "results and dataframes; delete some first",
                         (long long)limit);
    return FR_OK;
}

/* Plans and submits the query (body's, or s's when s is not NULL); *q (a
 * new reference) is the accepted query. */
static int submit_query(ctx *c, json_t *body, const ctx_sql *s, const char *request_id,
                        runner_query **qout, char *frame_id, size_t fsz, struct ctx_error *err)
{
    json_t *plan = NULL;
    int rc = resolve_body(c, body, s, &plan, frame_id, fsz, err);
    if (rc == FR_OK)
        rc = check_budget(c, err);
    runner *r = NULL;
    plan_physical *p = NULL;
    if (rc == FR_OK && frame_id[0])
        rc = ctx__frame_check(c, frame_id, NULL, err);
    if (rc == FR_OK && (rc = ctx__plan_frozen(c, plan, request_id, -1, &r, &p, err)) != FR_OK)
        rc = s ? ctx__sql_plan_error(s, err) : rc;
    if (rc == FR_OK && frame_id[0] && (rc = ctx__frame_check(c, frame_id, p, err)) != FR_OK) {
        plan_physical_free(p);
        ctx__runner_release(c);
    }
    if (rc != FR_OK) {
        json_decref(plan);
        return rc;
    }
    struct ctx_qrec *rec = fr_xcalloc(1, sizeof(*rec));
    ctx__random_id("q", rec->id, sizeof(rec->id));
    snprintf(rec->frame_id, sizeof(rec->frame_id), "%s", frame_id);
    rec->created_ms = fr_now_ms();
    if (s)
        rec->sql = json_pack("{ss sO}", "sql", ctx_sql_text(s), "plan", plan);
    rec->q = runner_query_new(rec->id, p);
    rec->charge = charge_new(rec->q, r);
    runner_query_set_request_id(rec->q, request_id);
    runner_query_bind_config(rec->q, r); /* a reset may cancel it before the submit */
    struct finish_arg *fa = fr_xcalloc(1, sizeof(*fa));
    fa->c = c;
    snprintf(fa->id, sizeof(fa->id), "%s", rec->id);
    snprintf(fa->runner_id, sizeof(fa->runner_id), "%s", runner_id(r));
    snprintf(fa->frame_id, sizeof(fa->frame_id), "%s", rec->frame_id);
    runner_query_on_finish(rec->q, query_finished, fa);
    runner_query_on_settled(rec->q, query_settled, fa); /* frees fa */
    runner_query *q = runner_query_ref(rec->q);
    ctx__history_query_accepted(c, r, rec, plan);
    json_decref(plan);
    pthread_mutex_lock(&c->lock);
    c->inflight++; /* held for the query until its finish hook has run */
    evict_locked(c);
    c->queries = fr_xrealloc(c->queries, sizeof(*c->queries) * (size_t)(c->nqueries + 1));
    c->queries[c->nqueries++] = rec;
    ctx__live_query(c, rec->q, rec->frame_id);
    pthread_mutex_unlock(&c->lock);
    char qid[sizeof(rec->id)]; /* rec may be evicted and fa freed once it is submitted */
    snprintf(qid, sizeof(qid), "%s", rec->id);
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (runner_submit(r, q, &ferr) != FR_OK) { /* failed: the hook will not run */
        runner_query_on_finish(q, NULL, NULL);
        runner_query_on_settled(q, NULL, NULL);
        pthread_mutex_lock(&c->lock);
        ctx__live_query_final(c, q, fa->frame_id);
        pthread_mutex_unlock(&c->lock);
        ctx__history_query_finished(c, q, fa->id, fa->runner_id, false);
        free(fa);
        ctx__runner_release(c);
    } else {
        ctx__history_query_started(c, qid);
    }
    ctx__runner_release(c);
    *qout = q;
    return FR_OK;
}

/* The status of q (borrowed), with its dataframe when it ran one and its
 * SQL and compiled plan when made from SQL (sql may be NULL) (new). */
static json_t *status_json(runner_query *q, const char *frame_id, json_t *sql)
{
    json_t *j = runner_query_json(q);
    if (frame_id[0])
        json_object_set_new(j, "dataframe", json_string(frame_id));
    if (json_is_object(sql))
        json_object_update(j, sql);
    return j;
}

void ctx__tasks_metrics(ctx *c, struct fr_buf *out)
{
    int64_t n[RUNNER_TASK_OUTCOMES] = {0};
    if (c->runner)
        runner_task_counts(c->runner, n);
    fr_buf_puts(out, "# HELP framed_tasks_total Tasks the runners ended, by outcome (retried: "
                     "attempts that failed and ran again; skipped: ended without running).\n"
                     "# TYPE framed_tasks_total counter\n");
    for (int i = 0; i < RUNNER_TASK_OUTCOMES; i++)
        fr_buf_printf(out, "framed_tasks_total{outcome=\"%s\"} %lld\n", runner_task_outcome_name(i),
                      (long long)(c->tasks_retired[i] + n[i]));
}

static int query_missing(struct ctx_error *err, const char *id)
{
    return ctx__fail(err, FR_ENOTFOUND, "query-not-found", "no query '%s'", id);
}

int ctx_query_get(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_qrec *rec = find_query(c, id, NULL);
    if (rec) {
        *out = status_json(rec->q, rec->frame_id, rec->sql);
        json_object_set_new(*out, "runner_id",
                            c->runner ? json_string(runner_id(c->runner)) : json_null());
        json_object_set_new(*out, "archived", json_false());
    }
    pthread_mutex_unlock(&c->lock);
    return rec ? FR_OK : ctx__history_query_get(c, id, out, err); /* a past query */
}

int ctx_query_cancel(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_qrec *rec = find_query(c, id, NULL);
    runner_query *q = rec ? runner_query_ref(rec->q) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (!q)
        return query_missing(err, id);
    runner_query_cancel(q);
    runner_query_wait(q, 5000);
    *out = runner_query_json(q);
    runner_query_unref(q);
    return FR_OK;
}

int ctx_query_result_release(ctx *c, const char *id, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_qrec *rec = find_query(c, id, NULL);
    int rc = FR_OK;
    if (!rec)
        rc = query_missing(err, id);
    else if (!runner_query_wait(rec->q, 0))
        rc = ctx__fail(err, FR_ECONFLICT, "query-not-finished",
                       "query %s is %s: cancel it (DELETE /v1/queries/%s) or wait for it", id,
                       runner_qstate_name(runner_query_state(rec->q)), id);
    else if (rec->frame_id[0] && !rec->released && ctx__frame_holds(c, rec->frame_id, id))
        rc = ctx__fail(err, FR_ECONFLICT, "conflict",
                       "the result of query %s is dataframe %s's data: delete the dataframe "
                       "(DELETE /v1/dataframes/%s) to release it",
                       id, rec->frame_id, rec->frame_id);
    else if (runner_query_state(rec->q) == RQ_SUCCEEDED && !rec->released && !rec->dropped) {
        /* a failed or cancelled query has no result: nothing to give back;
         * a read in progress keeps the bytes (charged) until it ends */
        rec->dropped = true;
        charge_unref(c, rec->charge);
        rec->charge = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* new: rec's result opened for reading, part by part. */
static int open_result(ctx *c, struct ctx_qrec *rec, ctx_result **out, struct ctx_error *err)
{
    struct fr_error ferr;
    fr_error_init(&ferr);
    runner_result *res = NULL;
    if (runner_result_open(rec->q, &res, &ferr) != FR_OK)
        return ctx__from_fr(err, &ferr);
    ctx_result *r = fr_xcalloc(1, sizeof(*r));
    r->c = c;
    r->charge = rec->charge; /* not dropped: ctx_query_result refused that */
    r->charge->refs++;
    r->res = res;
    r->schema = df_table_from_schema(plan_physical_schema(runner_query_plan(rec->q)));
    r->nparts = runner_result_nparts(res);
    r->starts = fr_xcalloc((size_t)r->nparts + 1, sizeof(*r->starts));
    for (int i = 0; i < r->nparts; i++)
        r->starts[i + 1] = r->starts[i] + runner_result_part_rows(res, i);
    r->cur = -1;
    r->morsel_rows = c->runner ? runner_config(c->runner)->values.morsel_size_rows : 0;
    if (r->morsel_rows <= 0)
        r->morsel_rows = 65536;
    *out = r;
    return FR_OK;
}

int ctx_query_result(ctx *c, const char *id, ctx_result **out, struct ctx_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    int rc = FR_OK;
    struct ctx_qrec *rec = find_query(c, id, NULL);
    if (!rec) {
        pthread_mutex_unlock(&c->lock);
        return ctx__history_result_gone(c, id, err); /* 410 naming the reset, or 404 */
    }
    bool settled = runner_query_wait(rec->q, 0);
    enum runner_qstate s = runner_query_state(rec->q);
    json_t *status = runner_query_json(rec->q);
    err->ext = json_pack("{ss sO sO}", "query_id", id, "state", json_object_get(status, "state"),
                         "progress", json_object_get(status, "progress"));
    json_decref(status);
    if (rec->dropped) {
        rc = ctx__fail(err, FR_ENOTFOUND, "result-released",
                       "the result of query %s was released (DELETE /v1/queries/%s/result); "
                       "run the query again",
                       id, id);
    } else if (rec->released) {
        rc = ctx__fail(err, FR_ENOTFOUND, "result-released",
                       "the result of query %s was the data of dataframe %s, released when the "
                       "dataframe was deleted, run again or reset; run the query again",
                       id, rec->frame_id);
    } else if (!settled) {
        rc = ctx__fail(err, FR_ECONFLICT, "query-not-finished",
                       "query %s is %s; poll GET /v1/queries/%s until it succeeded", id,
                       runner_qstate_name(s), id);
    } else if (s != RQ_SUCCEEDED) {
        json_t *cause = runner_query_json(rec->q);
        json_object_set(err->ext, "cause", json_object_get(cause, "error"));
        json_decref(cause);
        rc =
            ctx__fail(err, FR_ECONFLICT, s == RQ_CANCELLED ? "query-cancelled" : "query-failed",
                      "query %s %s: %s", id, runner_qstate_name(s),
                      s == RQ_CANCELLED ? "it was cancelled" : runner_query_error(rec->q)->message);
    } else if ((rc = open_result(c, rec, out, err)) == FR_OK) {
        json_decref(err->ext);
        err->ext = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

const struct df_table *ctx_result_schema(const ctx_result *r)
{
    return r->schema;
}

int64_t ctx_result_rows(const ctx_result *r)
{
    return r->starts[r->nparts];
}

void ctx_result_read_until(ctx_result *r, int64_t end)
{
    r->until = end;
}

#define CTX_AHEAD ((int)(sizeof(((ctx_result *)0)->ahead) / sizeof(((ctx_result *)0)->ahead[0])))

static void *ahead_main(void *arg)
{
    struct ahead *a = arg;
    a->rc = runner_result_part(a->r->res, a->part, &a->table, &a->err);
    return NULL;
}

/* Waits for read-ahead slot a; its table goes to *table when given, else
 * it is dropped. */
static void ahead_finish(struct ahead *a, struct df_table **table, int *rc, struct fr_error *err)
{
    if (!a->running)
        return;
    pthread_join(a->thread, NULL);
    a->running = false;
    if (table) {
        *table = a->table;
        *rc = a->rc;
        *err = a->err;
    } else {
        df_table_free(a->table);
    }
    a->table = NULL;
}

/* Takes part want from the read-ahead when it is being fetched there (rc
 * stays -1 when not); parts before want are not read any more: dropped. */
static void ahead_join(ctx_result *r, int want, struct df_table **table, int *rc,
                       struct fr_error *err)
{
    for (int k = 0; k < CTX_AHEAD; k++) {
        struct ahead *a = &r->ahead[k];
        if (a->running && a->part == want)
            ahead_finish(a, table, rc, err);
        else if (a->running && a->part < want)
            ahead_finish(a, NULL, NULL, NULL);
    }
}

/* The first part after `after` with rows, or nparts. */
static int next_with_rows(const ctx_result *r, int after)
{
    int next = after + 1;
    while (next < r->nparts && r->starts[next + 1] == r->starts[next])
        next++;
    return next;
}

/* Starts fetching the next CTX_AHEAD parts with rows after cur that are on
 * workers and that the reader will get to; a slot fetching a part outside
 * them (a page elsewhere) is dropped. */
static void ahead_start(ctx_result *r)
{
    int want[CTX_AHEAD], nwant = 0;
    for (int p = next_with_rows(r, r->cur);
         nwant < CTX_AHEAD && p < r->nparts && r->starts[p] < r->until &&
         !runner_result_part_here(r->res, p);
         p = next_with_rows(r, p))
        want[nwant++] = p;
    for (int k = 0; k < CTX_AHEAD; k++) { /* drop what is not wanted */
        bool keep = false;
        for (int w = 0; w < nwant && r->ahead[k].running; w++)
            keep |= r->ahead[k].part == want[w];
        if (!keep)
            ahead_finish(&r->ahead[k], NULL, NULL, NULL);
    }
    for (int w = 0; w < nwant; w++) {
        int free_slot = -1;
        bool started = false;
        for (int k = 0; k < CTX_AHEAD; k++) {
            started |= r->ahead[k].running && r->ahead[k].part == want[w];
            if (!r->ahead[k].running && free_slot < 0)
                free_slot = k;
        }
        if (started || free_slot < 0)
            continue;
        struct ahead *a = &r->ahead[free_slot];
        a->r = r;
        a->part = want[w];
        a->table = NULL;
        a->rc = -1;
        fr_error_init(&a->err);
        a->running = pthread_create(&a->thread, NULL, ahead_main, a) == 0;
    }
}

int ctx_result_at(ctx_result *r, int64_t row, const struct df_table **t, int64_t *first, int64_t *n,
                  struct ctx_error *err)
{
    int lo = 0, hi = r->nparts; /* the last part starting at or before row, with rows */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (r->starts[mid] <= row)
            lo = mid;
        else
            hi = mid;
    }
    while (lo < r->nparts && r->starts[lo + 1] <= row) /* empty parts before the next rows */
        lo++;
    if (row < 0 || lo >= r->nparts)
        return ctx__fail(err, FR_EINVAL, "internal", "row %lld is past the result's %lld rows",
                         (long long)row, (long long)r->starts[r->nparts]);
    if (lo != r->cur) {
        df_table_free(r->table); /* the read-ahead holds the next ones: three at most */
        r->table = NULL;
        runner_result_part_done(r->res, r->cur); /* a copy read back from disk: uncharged */
        r->cur = -1;
        struct fr_error ferr;
        fr_error_init(&ferr);
        int rc = -1;
        ahead_join(r, lo, &r->table, &rc, &ferr);
        if (rc < 0)
            rc = runner_result_part(r->res, lo, &r->table, &ferr);
        if (rc != FR_OK)
            return ctx__from_fr(err, &ferr);
        r->cur = lo;
        ahead_start(r);
    }
    *t = r->table;
    *first = row - r->starts[lo];
    *n = r->starts[lo + 1] - row;
    return FR_OK;
}

int64_t ctx_result_morsel_rows(const ctx_result *r)
{
    return r->morsel_rows;
}

void ctx_result_release(ctx_result *r)
{
    if (!r)
        return;
    for (int k = 0; k < CTX_AHEAD; k++)
        ahead_finish(&r->ahead[k], NULL, NULL, NULL);
    df_table_free(r->table);
    df_table_free(r->schema);
    free(r->starts);
    runner_result_close(r->res);
    pthread_mutex_lock(&r->c->lock);
    charge_unref(r->c, r->charge); /* the last reader of a released result frees it */
    pthread_mutex_unlock(&r->c->lock);
    free(r);
}

json_t *ctx_result_locations(ctx_result *r, const char *id, int64_t expires)
{
    json_t *list = json_array();
    for (int i = 0; i < r->nparts; i++) {
        int64_t rows = r->starts[i + 1] - r->starts[i], offset = 0;
        const char *worker, *part, *config, *secret;
        if (rows == 0)
            continue;
        char *url;
        if (runner_result_location(r->res, i, &worker, &part, &offset, &config, &secret)) {
            char token[FR_RESULT_TOKEN_LEN + 1] = "";
            if (secret)
                fr_sign_result_token(secret, part, config, offset, rows, expires, token,
                                     sizeof(token));
            url = fr_xasprintf("%s/v1/results/%s?config_id=%s&offset=%lld&limit=%lld&expires=%lld"
                               "%s%s",
                               worker, part, config, (long long)offset, (long long)rows,
                               (long long)expires, secret ? "&token=" : "", token);
        } else {
            url = fr_xasprintf("/v1/queries/%s/result?format=arrow&offset=%lld&limit=%lld", id,
                               (long long)r->starts[i], (long long)rows);
        }
        json_array_append_new(list, json_pack("{ss sI sI}", "url", url, "first_row",
                                              (json_int_t)r->starts[i], "rows", (json_int_t)rows));
        free(url);
    }
    char at[40];
    fr_iso8601_ms(expires * 1000, at, sizeof(at));
    return json_pack("{ss sI ss so}", "query_id", id, "total_rows",
                     (json_int_t)r->starts[r->nparts], "expires_at", at, "locations", list);
}

/* A watch is the query held by reference: its state is read without the
 * context lock or a lookup, so one waiter can check many often. */
struct ctx_query_watch {
    runner_query *q;
    char frame_id[40];
    json_t *sql; /* {"sql", "plan"} or NULL */
};

/* new: steals q and sql. */
static ctx_query_watch *watch_of(runner_query *q, const char *frame_id, json_t *sql)
{
    ctx_query_watch *w = fr_xmalloc(sizeof(*w));
    w->q = q;
    w->sql = sql;
    snprintf(w->frame_id, sizeof(w->frame_id), "%s", frame_id);
    return w;
}

static int submit_watched(ctx *c, json_t *body, const ctx_sql *s, const char *request_id,
                          json_t **out, ctx_query_watch **watch, struct ctx_error *err)
{
    *out = NULL;
    *watch = NULL;
    runner_query *q = NULL;
    char frame_id[40] = "";
    int rc = submit_query(c, body, s, request_id, &q, frame_id, sizeof(frame_id), err);
    if (rc != FR_OK)
        return rc;
    json_t *sql = s ? json_pack("{ss sO}", "sql", ctx_sql_text(s), "plan", ctx_sql_plan(s)) : NULL;
    *out = status_json(q, frame_id, sql);
    *watch = watch_of(q, frame_id, sql); /* steals the references */
    return FR_OK;
}

int ctx_query_submit_watched(ctx *c, json_t *body, const char *request_id, json_t **out,
                             ctx_query_watch **watch, struct ctx_error *err)
{
    return submit_watched(c, body, NULL, request_id, out, watch, err);
}

int ctx_query_submit_sql(ctx *c, const ctx_sql *s, const char *request_id, json_t **out,
                         ctx_query_watch **watch, struct ctx_error *err)
{
    if (ctx_sql_kind(s) != CTX_SQL_QUERY)
        return ctx__fail(err, FR_EINVAL, "invalid-sql", "only a query is submitted");
    return submit_watched(c, NULL, s, request_id, out, watch, err);
}

bool ctx_query_watch_settled(ctx_query_watch *w)
{
    return runner_query_wait(w->q, 0);
}

json_t *ctx_query_watch_json(ctx_query_watch *w)
{
    return status_json(w->q, w->frame_id, w->sql);
}

void ctx_query_watch_free(ctx_query_watch *w)
{
    if (!w)
        return;
    runner_query_unref(w->q);
    json_decref(w->sql);
    free(w);
}
