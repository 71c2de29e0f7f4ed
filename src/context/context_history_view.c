/* context_history_view: the history as the API reads it: the query list with
 * the live runner's queries overlaid with their live progress, past queries
 * and their released results (410 naming the reset), runners, archived
 * configs (verified, never from the store) and the diff of two configs. */
#include "context_int.h"

#include <stdlib.h>
#include <string.h>

static int no_history(struct ctx_error *err)
{
    return ctx__fail(err, FR_EUNAVAILABLE, "unavailable",
                     "the history could not be opened (see the server's log); it is not kept");
}

static int from_history(struct ctx_error *err, const struct fr_error *f)
{
    if (f->status == FR_EIO)
        return ctx__fail(err, FR_EUNAVAILABLE, "unavailable", "%s", f->message);
    return ctx__from_fr(err, f);
}

/* Live members over a history summary (lock held): rec is in memory. */
static void overlay_live(json_t *item, struct ctx_qrec *rec)
{
    json_t *live = runner_query_json(rec->q);
    json_t *progress = json_object_get(live, "progress");
    json_object_set(item, "state", json_object_get(live, "state"));
    json_object_set(item, "tasks_total", json_object_get(progress, "tasks_total"));
    json_object_set(item, "tasks_done", json_object_get(progress, "tasks_done"));
    json_object_set(item, "rows", json_object_get(live, "rows"));
    json_object_set(item, "elapsed_ms", json_object_get(live, "elapsed_ms"));
    json_object_set(item, "error", json_object_get(live, "error"));
    if (json_is_integer(json_object_get(live, "retries")))
        json_object_set(item, "retries", json_object_get(live, "retries"));
    json_object_set_new(item, "archived", json_false());
    json_decref(live);
}

static struct ctx_qrec *live_query(ctx *c, const char *id)
{
    for (int i = 0; id && i < c->nqueries; i++)
        if (strcmp(c->queries[i]->id, id) == 0)
            return c->queries[i];
    return NULL;
}

/* Overlays (and filters by live state) the page's queries of the live runner. */
static void overlay_page(ctx *c, json_t *queries, const char *state)
{
    pthread_mutex_lock(&c->lock);
    const char *live_runner = c->runner ? runner_id(c->runner) : "";
    for (size_t i = 0; i < json_array_size(queries); i++) {
        json_t *item = json_array_get(queries, i);
        struct ctx_qrec *rec = live_query(c, json_string_value(json_object_get(item, "id")));
        if (rec)
            overlay_live(item, rec);
        else if (strcmp(json_string_value(json_object_get(item, "runner_id")), live_runner) == 0)
            json_object_set_new(item, "archived", json_false());
        if (state && strcmp(json_string_value(json_object_get(item, "state")), state) != 0)
            json_array_remove(queries, i--);
    }
    pthread_mutex_unlock(&c->lock);
}

int ctx_queries_list(ctx *c, const struct ctx_query_filter *f, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    if (!c->history)
        return no_history(err);
    struct fr_error ferr;
    fr_error_init(&ferr);
    struct history_query_filter hf = {.state = f->state,
                                      .config_id = f->config_id,
                                      .runner_id = f->runner_id,
                                      .since_ms = f->since_ms,
                                      .until_ms = f->until_ms,
                                      .limit = f->limit};
    /* The history says queued until a query ends: running is live state. */
    if (f->state && (strcmp(f->state, "running") == 0 || strcmp(f->state, "queued") == 0)) {
        hf.state = "queued";
        hf.state_alt = "running";
    }
    if (f->cursor && history_cursor_parse(f->cursor, &hf.after_seq, &ferr) != FR_OK) {
        err->ext = json_pack("{ss}", "parameter", "cursor");
        return ctx__from_fr(err, &ferr);
    }
    if (history_query_list(c->history, &hf, out, &ferr) != FR_OK)
        return from_history(err, &ferr);
    overlay_page(c, json_object_get(*out, "queries"), f->state);
    return FR_OK;
}

int ctx__history_query_get(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    if (!c->history)
        return ctx__fail(err, FR_ENOTFOUND, "query-not-found", "no query '%s'", id);
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (history_query_get(c->history, id, out, &ferr) != FR_OK)
        return from_history(err, &ferr);
    json_t *kept = json_object_get(*out, "plan"), *sql = json_object_get(kept, "sql");
    if (json_is_string(sql)) { /* made from SQL: its text beside the plan, as live */
        json_object_set(*out, "sql", sql);
        json_t *inner = json_object_get(kept, "plan");
        if (inner && !json_object_get(kept, "dataframe"))
            json_object_set(*out, "plan", inner); /* inner's ref is taken before kept goes */
    }
    json_object_set_new(*out, "progress",
                        json_pack("{sO sO}", "tasks_total", json_object_get(*out, "tasks_total"),
                                  "tasks_done", json_object_get(*out, "tasks_done")));
    pthread_mutex_lock(&c->lock);
    const char *rid = json_string_value(json_object_get(*out, "runner_id"));
    if (c->runner && rid && strcmp(rid, runner_id(c->runner)) == 0)
        json_object_set_new(*out, "archived", json_false()); /* evicted from memory, not reset */
    pthread_mutex_unlock(&c->lock);
    return FR_OK;
}

int ctx__history_query_stages_get(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    json_t *q = NULL;
    int rc = ctx__history_query_get(c, id, &q, err);
    if (rc != FR_OK)
        return rc;
    json_t *stages = json_object_get(q, "stages");
    *out = json_is_object(stages) ? json_deep_copy(stages)
                                  : json_pack("{si sO s[]}", "restarts", 0, "retries",
                                              json_object_get(q, "retries"), "stages");
    json_object_set_new(*out, "query_id", json_string(id));
    json_object_set(*out, "state", json_object_get(q, "state"));
    json_object_set(*out, "config_id", json_object_get(q, "config_id"));
    json_decref(q);
    return FR_OK;
}

/* The detail of a released result, from the runner's record. */
static int result_released(struct ctx_error *err, const char *id, json_t *rrec)
{
    const char *rid = json_string_value(json_object_get(rrec, "id"));
    const char *state = json_string_value(json_object_get(rrec, "state"));
    json_t *reset_at = json_object_get(rrec, "reset_at");
    err->ext = json_pack("{ss sO}", "runner_id", rid, "reset_at", reset_at);
    if (strcmp(state, "reset") == 0) {
        const char *by = json_string_value(json_object_get(rrec, "reset_by"));
        return ctx__fail(err, FR_ENOTFOUND, "result-released",
                         "the result of query %s is gone: runner %s was reset at %s (request %s)",
                         id, rid, json_string_value(reset_at), by ? by : "unknown");
    }
    if (strcmp(state, "ended") == 0)
        return ctx__fail(err, FR_ENOTFOUND, "result-released",
                         "the result of query %s is gone: runner %s ended at %s when the "
                         "coordinator stopped",
                         id, rid, json_string_value(json_object_get(rrec, "ended_at")));
    return ctx__fail(err, FR_ENOTFOUND, "result-released",
                     "the result of query %s is gone: runner %s keeps only its latest queries "
                     "in memory; run it again",
                     id, rid);
}

int ctx__history_result_gone(ctx *c, const char *id, struct ctx_error *err)
{
    json_t *q = NULL, *rrec = NULL;
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc;
    if (!c->history || history_query_get(c->history, id, &q, &ferr) != FR_OK)
        rc = ctx__fail(err, FR_ENOTFOUND, "query-not-found", "no query '%s'", id);
    else if (history_runner_get(c->history, json_string_value(json_object_get(q, "runner_id")),
                                &rrec, &ferr) != FR_OK)
        rc = ctx__fail(err, FR_ENOTFOUND, "result-released",
                       "the result of query %s is gone with its runner", id);
    else
        rc = result_released(err, id, rrec);
    json_decref(q);
    json_decref(rrec);
    return rc;
}

int ctx_runners_list(ctx *c, int limit, const char *cursor, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    if (!c->history)
        return no_history(err);
    struct fr_error ferr;
    fr_error_init(&ferr);
    int64_t after = 0;
    if (cursor && history_cursor_parse(cursor, &after, &ferr) != FR_OK) {
        err->ext = json_pack("{ss}", "parameter", "cursor");
        return ctx__from_fr(err, &ferr);
    }
    if (history_runner_list(c->history, limit, after, out, &ferr) != FR_OK)
        return from_history(err, &ferr);
    return FR_OK;
}

int ctx_runner_get(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    if (!c->history)
        return no_history(err);
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (history_runner_get(c->history, id, out, &ferr) != FR_OK)
        return from_history(err, &ferr);
    return FR_OK;
}

int ctx_history_config_bytes(ctx *c, const char *id, char **bytes, size_t *len,
                             struct ctx_error *err)
{
    *bytes = NULL;
    if (!c->history)
        return no_history(err);
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (history_config_get(c->history, id, bytes, len, &ferr) != FR_OK)
        return from_history(err, &ferr);
    char actual[80];
    fr_sha256_id(*bytes, *len, actual, sizeof(actual));
    if (strcmp(actual, id) == 0)
        return FR_OK;
    free(*bytes);
    *bytes = NULL;
    FR_LOG(FR_LOG_ERROR, "history: the archived bytes of %s hash to %s: not served", id, actual);
    return ctx__fail(err, FR_EINTERNAL, "config-integrity",
                     "the history's bytes for %s hash to %s: they are corrupt and not served", id,
                     actual);
}

/* The values of a config named by which (new): defaults, pending, the live
 * runner's (from the runner, so it diffs with no history) or an archived
 * one (verified by cfg_frozen_from_bytes). */
static int config_values(ctx *c, const char *which, const char *param, json_t **out,
                         struct ctx_error *err)
{
    struct cfg tmp;
    if (strcmp(which, "defaults") == 0) {
        cfg_defaults(&tmp);
        *out = cfg_to_json(&tmp);
        cfg_cleanup(&tmp);
        return FR_OK;
    }
    if (strcmp(which, "pending") == 0) {
        pthread_mutex_lock(&c->lock);
        *out = cfg_to_json(&c->pending);
        pthread_mutex_unlock(&c->lock);
        return FR_OK;
    }
    if (!fr_config_id_valid(which)) {
        err->ext = json_pack("{ss}", "parameter", param);
        return ctx__fail(err, FR_EINVAL, "invalid-parameter",
                         "%s: a config ID (sha256:<64 hex>), defaults or pending", param);
    }
    pthread_mutex_lock(&c->lock); /* the live runner's own config: no history needed */
    const struct cfg_frozen *live = c->runner ? runner_config(c->runner) : NULL;
    *out = live && strcmp(live->id, which) == 0 ? cfg_to_json(&live->values) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (*out)
        return FR_OK;
    char *bytes = NULL;
    size_t len = 0;
    int rc = ctx_history_config_bytes(c, which, &bytes, &len, err);
    if (rc != FR_OK)
        return rc;
    struct cfg_frozen *f = NULL;
    struct fr_error ferr;
    fr_error_init(&ferr);
    rc = cfg_frozen_from_bytes(bytes, len, which, &f, &ferr);
    free(bytes);
    if (rc != FR_OK)
        return ctx__fail(err, FR_EINTERNAL, "config-integrity", "config %s: %s", which,
                         ferr.message);
    *out = cfg_to_json(&f->values);
    cfg_frozen_unref(f);
    return FR_OK;
}

static json_t *diff_changes(json_t *from, json_t *to)
{
    json_t *changes = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(from, key, v)
    {
        json_t *w = json_object_get(to, key);
        if (!w || !json_equal(v, w))
            json_array_append_new(changes, json_pack("{ss sO sO}", "field", key, "from", v, "to",
                                                     w ? w : json_null()));
    }
    json_object_foreach(to, key, v)
    {
        if (!json_object_get(from, key))
            json_array_append_new(
                changes, json_pack("{ss so sO}", "field", key, "from", json_null(), "to", v));
    }
    return changes;
}

int ctx_config_diff(ctx *c, const char *from, const char *to, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    json_t *a = NULL, *b = NULL;
    int rc = config_values(c, from, "from", &a, err);
    if (rc == FR_OK)
        rc = config_values(c, to, "to", &b, err);
    if (rc == FR_OK) {
        json_t *changes = diff_changes(a, b);
        *out = json_pack("{ss ss sb so}", "from", from, "to", to, "equal",
                         json_array_size(changes) == 0, "changes", changes);
    }
    json_decref(a);
    json_decref(b);
    return rc;
}
