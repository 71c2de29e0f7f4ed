/* context_history: the context's records in the history (history/): the
 * runner at its freeze and its reset, every query at its accept and its end,
 * and the history's views (queries with live progress overlaid, runners,
 * archived configs). A history failure never fails a query: it is logged,
 * counted (framed_history_errors_total) and shown in /readyz's detail. */
#include "context_int.h"

#include <stdlib.h>
#include <string.h>

void ctx__history_open(ctx *c)
{
    struct history_options o = {c->opts.history_max_queries, c->opts.history_max_age_days};
    struct fr_error err;
    fr_error_init(&err);
    if (history_open(c->opts.state_dir, &o, &c->history, &err) != FR_OK) {
        atomic_fetch_add(&c->history_failures, 1);
        FR_LOG(FR_LOG_ERROR, "history unavailable, queries run without it: %s", err.message);
        return;
    }
    int runners, queries;
    bool aside;
    history_recovered(c->history, &runners, &queries, &aside);
    if (runners || queries)
        FR_LOG(FR_LOG_WARN,
               "history: %d runner(s) of a previous process ended without a reset, %d of its "
               "queries marked failed (interrupted)",
               runners, queries);
}

void ctx__history_close(ctx *c)
{
    history_free(c->history);
    c->history = NULL;
}

/* A failed write: logged by the history; here counted when there is none. */
static void lost(ctx *c, const char *what)
{
    if (!c->history) {
        atomic_fetch_add(&c->history_failures, 1);
        FR_LOG(FR_LOG_DEBUG, "history unavailable: %s not recorded", what);
    }
}

void ctx__history_freeze(ctx *c, runner *r, const char *request_id, int64_t at_ms)
{
    if (!c->history)
        return lost(c, "a freeze");
    const struct cfg_frozen *f = runner_config(r);
    struct history_runner_rec rec = {runner_id(r), ctx__runner_kind(c), f->id,
                                     f->canonical, f->canonical_len,    at_ms,
                                     request_id};
    struct fr_error err;
    fr_error_init(&err);
    history_runner_add(c->history, &rec, &err);
}

/* A freeze whose record was lost (a full disk, a busy file) is recorded at
 * the next accept, before the query that refers to it. */
static void freeze_again(ctx *c, runner *r)
{
    if (history_runner_recorded(c->history, runner_id(r)))
        return;
    char by[sizeof(c->frozen_by)];
    pthread_mutex_lock(&c->lock);
    snprintf(by, sizeof(by), "%s", c->frozen_by);
    int64_t at = c->frozen_at_ms;
    pthread_mutex_unlock(&c->lock);
    FR_LOG(FR_LOG_WARN, "history: runner %s was not recorded at its freeze; recording it now",
           runner_id(r));
    ctx__history_freeze(c, r, by, at);
}

void ctx__history_runner_gone(ctx *c, const char *runner_id, const char *request_id)
{
    if (!c->history)
        return lost(c, "a reset");
    struct fr_error err;
    fr_error_init(&err);
    if (request_id)
        history_runner_reset(c->history, runner_id, fr_now_ms(), request_id, &err);
    else
        history_runner_end(c->history, runner_id, fr_now_ms(), &err);
}

/* One structured log line about a query (info). */
static void log_query(const char *msg, const char *id, const char *config_id,
                      const char *runner_name, const char *state, int64_t rows, int64_t elapsed_ms)
{
    if (FR_LOG_INFO < fr_log_threshold)
        return;
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    json_t *j = json_pack("{ss ss ss ss ss ss ss so so}", "ts", ts, "level", "info", "msg", msg,
                          "query_id", id, "config_id", config_id ? config_id : "", "runner_id",
                          runner_name ? runner_name : "", "state", state, "rows",
                          rows >= 0 ? json_integer(rows) : json_null(), "elapsed_ms",
                          elapsed_ms >= 0 ? json_integer(elapsed_ms) : json_null());
    char *text = j ? fr_json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        fr_log_json_line(text);
    free(text);
    json_decref(j);
}

/* The plan as the history keeps it (new text): the plan it ran, with its
 * dataframe ({"dataframe": id, "plan": plan}) when it ran one; past
 * PLAN_KEPT_MAX bytes only its sha256 and size ("plan_truncated": true),
 * so inline rows cannot swell the file. */
#define PLAN_KEPT_MAX (256 * 1024)
static char *plan_text(json_t *plan, const char *frame_id, const json_t *sql)
{
    char *text = plan ? fr_json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    json_t *kept = json_object();
    if (frame_id[0])
        json_object_set_new(kept, "dataframe", json_string(frame_id));
    if (json_object_get(sql, "sql")) /* the SQL it was compiled from */
        json_object_set(kept, "sql", json_object_get(sql, "sql"));
    if (text && strlen(text) > PLAN_KEPT_MAX) {
        char id[80];
        fr_sha256_id(text, strlen(text), id, sizeof(id));
        json_object_set_new(kept, "plan_truncated", json_true());
        json_object_set_new(kept, "plan_sha256", json_string(id));
        json_object_set_new(kept, "plan_bytes", json_integer((json_int_t)strlen(text)));
    } else if ((frame_id[0] || sql) && plan) {
        json_object_set(kept, "plan", plan);
    } else if (plan) { /* an inline plan is kept as it came */
        json_decref(kept);
        return text;
    }
    free(text);
    text = fr_json_dumps(kept, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(kept);
    return text;
}

void ctx__history_query_accepted(ctx *c, runner *r, const struct ctx_qrec *rec, json_t *plan)
{
    const char *config_id = runner_config(r)->id, *rid = runner_id(r);
    log_query("query accepted", rec->id, config_id, rid, "queued", -1, -1);
    if (!c->history)
        return lost(c, "a query");
    freeze_again(c, r);
    char *plan_json = plan_text(plan, rec->frame_id, rec->sql);
    struct history_query_rec q = {.id = rec->id,
                                  .runner_id = rid,
                                  .config_id = config_id,
                                  .dataframe = rec->frame_id[0] ? rec->frame_id : NULL,
                                  .plan_json = plan_json,
                                  .state = "queued",
                                  .created_ms = rec->created_ms,
                                  .started_ms = -1,
                                  .finished_ms = -1,
                                  .rows = -1};
    struct fr_error err;
    fr_error_init(&err);
    history_query_add(c->history, &q, &err);
    free(plan_json);
}

void ctx__history_query_started(ctx *c, const char *id)
{
    if (!c->history)
        return lost(c, "a query's start");
    struct fr_error err;
    fr_error_init(&err);
    history_query_started(c->history, id, fr_now_ms(), &err);
}

/* The error of a failed query as the history keeps it (new, or NULL). */
static char *error_text(runner_query *q)
{
    const struct fr_error *e = runner_query_error(q);
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
    char *text = fr_json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

static int64_t member_int(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* Its stages as the history keeps them (new text): at most STAGES_KEPT_MAX
 * bytes, past which the task lists are dropped (the stage sums stay). */
#define STAGES_KEPT_MAX (256 * 1024)
static char *stages_text(json_t *stages, const char *state)
{
    json_object_set_new(stages, "state", json_string(state)); /* final, settled or not */
    char *text = fr_json_dumps(stages, JSON_COMPACT);
    if (text && strlen(text) > STAGES_KEPT_MAX) {
        free(text);
        json_t *list = json_object_get(stages, "stages");
        for (size_t i = 0; i < json_array_size(list); i++) {
            json_object_set_new(json_array_get(list, i), "tasks", json_array());
            json_object_set_new(json_array_get(list, i), "tasks_truncated", json_true());
        }
        text = fr_json_dumps(stages, JSON_COMPACT);
    }
    if (text && strlen(text) > STAGES_KEPT_MAX) { /* the sums alone are too big: none kept */
        free(text);
        text = NULL;
        FR_LOG(FR_LOG_WARN,
               "history: a query's stages exceed %d bytes without their tasks: "
               "not kept",
               STAGES_KEPT_MAX);
    }
    return text;
}

void ctx__history_query_finished(ctx *c, runner_query *q, const char *id, const char *runner_id,
                                 bool started)
{
    enum runner_qstate s = runner_query_state(q);
    json_t *st = runner_query_json(q); /* its "state" may still say running: not settled */
    json_t *progress = json_object_get(st, "progress");
    int64_t now = fr_now_ms(), elapsed = member_int(st, "elapsed_ms");
    int64_t rows = s == RQ_SUCCEEDED ? runner_query_rows(q) : -1;
    json_t *cfg = json_object_get(st, "config_id");
    log_query("query finished", id, json_string_value(cfg), runner_id, runner_qstate_name(s), rows,
              started ? elapsed : -1);
    if (c->history) {
        char *err_json = s == RQ_FAILED ? error_text(q) : NULL;
        json_t *stages = runner_query_stages_json(q);
        char *stages_json = stages_text(stages, runner_qstate_name(s));
        char *tci = json_object_get(st, "task_config_ids")
                        ? fr_json_dumps(json_object_get(st, "task_config_ids"), JSON_COMPACT)
                        : NULL;
        struct history_query_rec h = {.id = id,
                                      .config_id = json_string_value(cfg),
                                      .state = runner_qstate_name(s),
                                      .started_ms = started ? now - elapsed : -1,
                                      .finished_ms = now,
                                      .rows = rows,
                                      .tasks_total = member_int(progress, "tasks_total"),
                                      .tasks_done = member_int(progress, "tasks_done"),
                                      .retries = member_int(stages, "retries"),
                                      .error_json = err_json,
                                      .task_config_ids_json = tci,
                                      .stages_json = stages_json};
        struct fr_error err;
        fr_error_init(&err);
        history_query_end(c->history, &h, &err);
        free(err_json);
        free(tci);
        free(stages_json);
        json_decref(stages);
    } else {
        lost(c, "a query's end");
    }
    json_decref(st);
}

void ctx__history_query_stages(ctx *c, const char *id, json_t *stages)
{
    if (!c->history)
        return lost(c, "a query's stages");
    char *text = stages ? fr_json_dumps(stages, JSON_COMPACT) : NULL;
    struct fr_error err;
    fr_error_init(&err);
    history_query_set_stages(c->history, id, text, &err);
    free(text);
}

void ctx__history_metrics(ctx *c, struct fr_buf *out)
{
    fr_buf_printf(out,
                  "# HELP framed_history_errors_total History writes and reads that failed (the "
                  "queries ran regardless).\n# TYPE framed_history_errors_total counter\n"
                  "framed_history_errors_total %lld\n",
                  (long long)(history_errors(c->history) + atomic_load(&c->history_failures)));
}

void ctx__history_ready_detail(ctx *c, struct fr_buf *b)
{
    int64_t n = history_errors(c->history) + atomic_load(&c->history_failures);
    if (!c->history)
        fr_buf_printf(b, "history: unavailable (queries run unrecorded)\n");
    else if (n > 0)
        fr_buf_printf(b, "history: %lld error(s) since the start (see the log)\n", (long long)n);
}
