/* context_live: what the context shows of work while it runs: a query's
 * stages and tasks, and the events of GET /v1/events: the hooks that publish
 * query and runner changes, and the live thread that, about 4 times a
 * second, publishes query progress (at most one event per query per tick)
 * and, every second, stats, worker state changes and a tick for streams. */
#include "context_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIVE_TICK_MS 250
#define LIVE_STATS_TICKS 4 /* stats, workers and the streams' tick: every 4th tick */

struct live_seen {
    char id[40];
    char state[16];
    int64_t tasks_done;
};

struct ctx__live {
    pthread_mutex_t lock; /* "live lock": stop */
    pthread_cond_t cond;
    bool stop;
    pthread_t thread;
    /* "live publish lock": query events go out in the order their state was
     * read, so a progress event never follows the final one */
    pthread_mutex_t publish_lock;
    pthread_mutex_t accepted_lock; /* "accepted lock": accepted, naccepted */
    struct live_seen *accepted;    /* announced by the accept hook, not yet followed */
    int naccepted;
    /* the live thread's own */
    struct live_seen *seen;
    int nseen;
    json_t *workers; /* id -> the state last published */
    int64_t tasks_done_total;
    int64_t last_stats_ms;
};

int ctx_query_stages(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    runner_query *q = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nqueries && !q; i++)
        if (strcmp(c->queries[i]->id, id) == 0)
            q = runner_query_ref(c->queries[i]->q);
    pthread_mutex_unlock(&c->lock);
    if (!q) /* the seam: a past query's stages come from the history */
        return ctx__history_query_stages_get(c, id, out, err);
    json_t *j = json_pack("{ss}", "query_id", id);
    json_object_update_new(j, runner_query_stages_json(q));
    runner_query_unref(q);
    *out = j;
    return FR_OK;
}

/* new: the query event's data, from its status. */
static json_t *query_event(runner_query *q, const char *frame_id)
{
    json_t *st = runner_query_json(q), *progress = json_object_get(st, "progress");
    json_t *j = json_pack(
        "{sO sO sO sO sO sO sO so}", "id", json_object_get(st, "id"), "state",
        json_object_get(st, "state"), "tasks_total", json_object_get(progress, "tasks_total"),
        "tasks_done", json_object_get(progress, "tasks_done"), "rows", json_object_get(st, "rows"),
        "elapsed_ms", json_object_get(st, "elapsed_ms"), "config_id",
        json_object_get(st, "config_id"), "dataframe",
        frame_id && frame_id[0] ? json_string(frame_id) : json_null());
    json_decref(st);
    return j;
}

/* The tasks plan p will run, as runner_submit counts them. */
static int64_t plan_tasks(const plan_physical *p)
{
    int64_t n = 0;
    for (int s = 0; s < plan_physical_nstages(p); s++) {
        struct plan_stage_view v;
        plan_stage_view(p, s, &v);
        n += v.ntasks;
    }
    return n;
}

void ctx__live_query(ctx *c, runner_query *q, const char *frame_id)
{
    if (!c->events || !c->live)
        return;
    pthread_mutex_lock(&c->live->publish_lock);
    json_t *j = query_event(q, frame_id);
    /* not submitted yet: what the submit will give it */
    if (json_is_null(json_object_get(j, "config_id")) && c->config_id[0])
        json_object_set_new(j, "config_id", json_string(c->config_id));
    if (json_integer_value(json_object_get(j, "tasks_total")) == 0)
        json_object_set_new(j, "tasks_total", json_integer(plan_tasks(runner_query_plan(q))));
    struct ctx__live *lv = c->live;
    pthread_mutex_lock(&lv->accepted_lock); /* followed from the next tick on */
    lv->accepted = fr_xrealloc(lv->accepted, sizeof(*lv->accepted) * (size_t)(lv->naccepted + 1));
    struct live_seen *s = &lv->accepted[lv->naccepted++];
    snprintf(s->id, sizeof(s->id), "%s", json_string_value(json_object_get(j, "id")));
    snprintf(s->state, sizeof(s->state), "%s", json_string_value(json_object_get(j, "state")));
    s->tasks_done = json_integer_value(json_object_get(j, "tasks_done"));
    pthread_mutex_unlock(&lv->accepted_lock);
    ctx__bus_publish(c->events, CTX_EVENT_QUERY, j);
    pthread_mutex_unlock(&c->live->publish_lock);
}

void ctx__live_query_final(ctx *c, runner_query *q, const char *frame_id)
{
    if (!c->events || !c->live)
        return;
    pthread_mutex_lock(&c->live->publish_lock);
    ctx__bus_publish(c->events, CTX_EVENT_QUERY, query_event(q, frame_id));
    pthread_mutex_unlock(&c->live->publish_lock);
}

void ctx__live_runner(ctx *c)
{
    static const char *const states[] = {"none", "active", "draining"};
    if (!c->events)
        return;
    json_t *j = json_pack("{ss so so}", "state", states[c->runner_state], "runner_id",
                          c->runner ? json_string(runner_id(c->runner)) : json_null(), "config_id",
                          c->config_id[0] ? json_string(c->config_id) : json_null());
    ctx__bus_publish(c->events, CTX_EVENT_RUNNER, j);
}

int ctx_events_subscribe(ctx *c, unsigned types, int64_t last_id, void (*wake)(void *), void *arg,
                         ctx_event_sub **out, struct ctx_error *err)
{
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (!c->events)
        return ctx__fail(err, FR_EUNAVAILABLE, "unavailable", "the server is stopping");
    if (ctx__bus_subscribe(c->events, types, last_id, wake, arg, out, &ferr) != FR_OK)
        return ctx__from_fr(err, &ferr);
    return FR_OK;
}

void ctx_events_close(ctx *c)
{
    if (c && c->events)
        ctx__bus_close(c->events);
}

static const struct live_seen *seen_find(const struct ctx__live *lv, const char *id)
{
    for (int i = 0; i < lv->nseen; i++)
        if (strcmp(lv->seen[i].id, id) == 0)
            return &lv->seen[i];
    return NULL;
}

/* The queries not yet final, and those seen before (dropped once they
 * settle), referenced, with their dataframes (new). */
static int running_queries(ctx *c, struct ctx__live *lv, runner_query ***qs, char (**frames)[40])
{
    pthread_mutex_lock(&c->lock);
    int n = 0;
    *qs = fr_xcalloc((size_t)c->nqueries + 1, sizeof(**qs));
    *frames = fr_xcalloc((size_t)c->nqueries + 1, sizeof(**frames));
    for (int i = 0; i < c->nqueries; i++) {
        enum runner_qstate s = runner_query_state(c->queries[i]->q);
        if (s != RQ_QUEUED && s != RQ_RUNNING && !seen_find(lv, c->queries[i]->id))
            continue;
        (*qs)[n] = runner_query_ref(c->queries[i]->q);
        snprintf((*frames)[n++], 40, "%s", c->queries[i]->frame_id);
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* An event for each live query whose state or tasks_done moved since the
 * last tick: progress, at most one per tick. The final state is not this
 * thread's: the query's end publishes it (ctx__live_query_final), so it is
 * not lost when the record goes before the next tick. */
static void poll_queries(ctx *c, struct ctx__live *lv)
{
    runner_query **qs = NULL;
    char(*frames)[40] = NULL;
    pthread_mutex_lock(&lv->accepted_lock);
    if (lv->naccepted > 0) {
        lv->seen =
            fr_xrealloc(lv->seen, sizeof(*lv->seen) * (size_t)(lv->nseen + lv->naccepted + 1));
        memcpy(lv->seen + lv->nseen, lv->accepted, sizeof(*lv->seen) * (size_t)lv->naccepted);
        lv->nseen += lv->naccepted;
        lv->naccepted = 0;
    }
    pthread_mutex_unlock(&lv->accepted_lock);
    int n = running_queries(c, lv, &qs, &frames), kept = 0;
    struct live_seen *now = fr_xcalloc((size_t)n + 1, sizeof(*now));
    pthread_mutex_lock(&lv->publish_lock);
    for (int i = 0; i < n; i++) {
        json_t *j = query_event(qs[i], frames[i]);
        const char *state = json_string_value(json_object_get(j, "state"));
        struct live_seen *s = &now[kept];
        snprintf(s->id, sizeof(s->id), "%s", json_string_value(json_object_get(j, "id")));
        snprintf(s->state, sizeof(s->state), "%s", state ? state : "");
        s->tasks_done = json_integer_value(json_object_get(j, "tasks_done"));
        const struct live_seen *was = seen_find(lv, s->id);
        bool live = state && (strcmp(state, "queued") == 0 || strcmp(state, "running") == 0);
        bool moved = !was || strcmp(was->state, s->state) != 0 || was->tasks_done != s->tasks_done;
        if (live && moved)
            ctx__bus_publish(c->events, CTX_EVENT_QUERY, json_incref(j));
        kept += live; /* a final one is followed no more */
        json_decref(j);
        runner_query_unref(qs[i]);
    }
    pthread_mutex_unlock(&lv->publish_lock);
    free(lv->seen);
    lv->seen = now;
    lv->nseen = kept;
    free(qs);
    free(frames);
}

/* A worker event for each worker that appeared or changed state; returns
 * how many are active. */
static int poll_workers(ctx *c, struct ctx__live *lv)
{
    json_t *list = runner_registry_list(c->registry), *w;
    json_t *now = json_object();
    int active = 0;
    size_t i;
    json_array_foreach(list, i, w)
    {
        const char *id = json_string_value(json_object_get(w, "id"));
        const char *state = json_string_value(json_object_get(w, "state"));
        if (!id || !state)
            continue;
        active += strcmp(state, "active") == 0;
        const char *was = json_string_value(json_object_get(lv->workers, id));
        json_object_set_new(now, id, json_string(state));
        if (was && strcmp(was, state) == 0)
            continue;
        json_t *ev = json_deep_copy(w);
        json_object_del(ev, "static");
        json_object_del(ev, "inflight");
        ctx__bus_publish(c->events, CTX_EVENT_WORKER, ev);
    }
    json_decref(list);
    json_decref(lv->workers);
    lv->workers = now;
    return active;
}

static void publish_stats(ctx *c, struct ctx__live *lv)
{
    int64_t n[RUNNER_TASK_OUTCOMES] = {0};
    pthread_mutex_lock(&c->lock);
    if (c->runner)
        runner_task_counts(c->runner, n);
    int64_t total = 0;
    for (int i = 0; i < RUNNER_TASK_OUTCOMES; i++)
        if (i != RT_RETRIED)
            total += n[i] + c->tasks_retired[i];
    int running = c->runner ? runner_running(c->runner) : 0;
    pthread_mutex_unlock(&c->lock);
    int active = poll_workers(c, lv);
    int64_t now_ms = fr_now_ms(), mono_ms = fr_mono_ms(); /* the rate's interval: monotonic */
    double secs = lv->last_stats_ms ? (double)(mono_ms - lv->last_stats_ms) / 1000.0 : 0;
    double rate = secs > 0 ? (double)(total - lv->tasks_done_total) / secs : 0;
    char t[40];
    fr_iso8601_ms(now_ms, t, sizeof(t));
    ctx__bus_publish(c->events, CTX_EVENT_STATS,
                     json_pack("{ss sI sf si si}", "time", t, "tasks_done_total", (json_int_t)total,
                               "tasks_per_s", rate < 0 ? 0 : rate, "queries_running", running,
                               "workers_active", active));
    lv->tasks_done_total = total;
    lv->last_stats_ms = mono_ms;
}

/* Waits up to ms on the live lock; true when asked to stop. */
static bool live_wait(struct ctx__live *lv, int64_t ms)
{
    struct timespec ts;
    fr_mono_deadline(&ts, ms);
    pthread_mutex_lock(&lv->lock);
    if (!lv->stop)
        pthread_cond_timedwait(&lv->cond, &lv->lock, &ts);
    bool stop = lv->stop;
    pthread_mutex_unlock(&lv->lock);
    return stop;
}

static void *live_main(void *arg)
{
    ctx *c = arg;
    struct ctx__live *lv = c->live;
    for (unsigned tick = 0; !live_wait(lv, LIVE_TICK_MS); tick++) {
        poll_queries(c, lv);
        if (tick % 4 == 0) /* freed big blocks not reused for a while go back */
            fr_big_expire();
        if (tick % LIVE_STATS_TICKS == 0) {
            publish_stats(c, lv);
            ctx__bus_tick(c->events);
        }
    }
    return NULL;
}

int ctx__live_start(ctx *c, struct fr_error *err)
{
    c->events = ctx__bus_new(c->opts.max_event_streams);
    struct ctx__live *lv = fr_xcalloc(1, sizeof(*lv));
    pthread_mutex_init(&lv->lock, NULL);
    pthread_mutex_init(&lv->publish_lock, NULL);
    pthread_mutex_init(&lv->accepted_lock, NULL);
    fr_cond_init_mono(&lv->cond);
    lv->workers = json_object();
    c->live = lv;
    if (pthread_create(&lv->thread, NULL, live_main, c) != 0) {
        c->live = NULL;
        json_decref(lv->workers);
        free(lv);
        return fr_error_set(err, FR_EINTERNAL, "cannot start the live events thread");
    }
    return FR_OK;
}

void ctx__live_stop(ctx *c)
{
    struct ctx__live *lv = c->live;
    if (lv) {
        pthread_mutex_lock(&lv->lock);
        lv->stop = true;
        pthread_cond_signal(&lv->cond);
        pthread_mutex_unlock(&lv->lock);
        pthread_join(lv->thread, NULL);
    }
    pthread_mutex_lock(&c->lock);
    struct ctx__bus *b = c->events;
    c->events = NULL;
    c->live = NULL;
    pthread_mutex_unlock(&c->lock);
    ctx__bus_free(b);
    if (lv) {
        free(lv->seen);
        free(lv->accepted);
        json_decref(lv->workers);
        pthread_mutex_destroy(&lv->lock);
        pthread_mutex_destroy(&lv->accepted_lock);
        pthread_mutex_destroy(&lv->publish_lock);
        pthread_cond_destroy(&lv->cond);
        free(lv);
    }
}
