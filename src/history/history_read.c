/* history_read: the history as the API shows it: queries (filtered, newest
 * first, paged by an opaque cursor), one query in full, runners, and a
 * config's archived bytes. */
#include "history_int.h"

#include <stdlib.h>
#include <string.h>

#define QUERY_COLUMNS                                                                              \
    "seq, id, state, config_id, runner_id, dataframe, created_at, started_at, finished_at, rows, " \
    "tasks_total, tasks_done, retries, error"

int history_cursor_parse(const char *cursor, int64_t *seq, struct fr_error *err)
{
    size_t n = cursor ? strlen(cursor) : 0;
    bool ok = n >= 2 && n <= 19 && cursor[0] == 'c';
    int64_t v = 0;
    for (size_t i = 1; ok && i < n; i++) {
        ok = cursor[i] >= '0' && cursor[i] <= '9';
        v = v * 10 + (cursor[i] - '0');
    }
    if (!ok || v <= 0)
        return fr_error_setk(err, FR_EINVAL, "invalid-parameter",
                             "cursor: not a cursor this server handed out (pass next_cursor "
                             "as it came)");
    *seq = v;
    return FR_OK;
}

static json_t *cursor_json(int64_t seq)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "c%lld", (long long)seq);
    return json_string(buf);
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    return s ? json_string((const char *)s) : json_null();
}

static json_t *time_or_null(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    char at[40];
    fr_iso8601_ms(sqlite3_column_int64(st, col), at, sizeof(at));
    return json_string(at);
}

static json_t *int_or_null(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    return json_integer(sqlite3_column_int64(st, col));
}

static json_t *json_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    json_t *j = s ? json_loads((const char *)s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

/* A QuerySummary from a row of QUERY_COLUMNS. */
static json_t *summary_json(sqlite3_stmt *st)
{
    bool started = sqlite3_column_type(st, 7) != SQLITE_NULL;
    bool finished = sqlite3_column_type(st, 8) != SQLITE_NULL;
    /* null unless both ends are known: a query that never started, or one
     * interrupted (when it stopped is not known) */
    int64_t elapsed =
        started && finished ? sqlite3_column_int64(st, 8) - sqlite3_column_int64(st, 7) : -1;
    json_t *j = json_object();
    json_object_set_new(j, "id", text_or_null(st, 1));
    json_object_set_new(j, "state", text_or_null(st, 2));
    json_object_set_new(j, "config_id", text_or_null(st, 3));
    json_object_set_new(j, "runner_id", text_or_null(st, 4));
    json_object_set_new(j, "dataframe", text_or_null(st, 5));
    json_object_set_new(j, "created_at", time_or_null(st, 6));
    json_object_set_new(j, "started_at", time_or_null(st, 7));
    json_object_set_new(j, "finished_at", time_or_null(st, 8));
    json_object_set_new(j, "elapsed_ms",
                        started && finished ? json_integer(elapsed < 0 ? 0 : elapsed)
                                            : json_null());
    json_object_set_new(j, "rows", int_or_null(st, 9));
    json_object_set_new(j, "tasks_total", json_integer(sqlite3_column_int64(st, 10)));
    json_object_set_new(j, "tasks_done", json_integer(sqlite3_column_int64(st, 11)));
    json_object_set_new(j, "retries", json_integer(sqlite3_column_int64(st, 12)));
    json_object_set_new(j, "error", json_or_null(st, 13));
    json_object_set_new(j, "archived", json_true());
    return j;
}

static void bind_filter(sqlite3_stmt *st, const struct history_query_filter *f)
{
    history__bind_text(st, 1, f->state);
    history__bind_text(st, 2, f->state_alt);
    history__bind_text(st, 3, f->config_id);
    history__bind_text(st, 4, f->runner_id);
    history__bind_opt(st, 5, f->since_ms);
    history__bind_opt(st, 6, f->until_ms);
    history__bind_opt(st, 7, f->after_seq > 0 ? f->after_seq : -1);
    sqlite3_bind_int(st, 8, f->limit + 1); /* one more: is there a next page */
}

/* One page of a list: the rows of st (bound, LIMIT limit + 1; finalized
 * here; NULL: its prepare failed) made by row(), newest first, and the
 * cursor of the next page when there was one more row. *out new:
 * {"<key>": [...], "next_cursor"}. Called with the history lock held. */
static int page_locked(history *h, sqlite3_stmt *st, int limit, json_t *(*row)(sqlite3_stmt *),
                       const char *key, const char *what, json_t **out, struct fr_error *err)
{
    if (!st)
        return FR_EIO;
    int rc = FR_OK;
    json_t *list = json_array(), *next = json_null();
    int s, n = 0;
    int64_t last = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (n++ == limit) {
            json_decref(next);
            next = cursor_json(last);
            break;
        }
        last = sqlite3_column_int64(st, 0);
        json_array_append_new(list, row(st));
    }
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = history__fail(h, what, err);
    sqlite3_finalize(st);
    if (rc == FR_OK)
        *out = json_pack("{so so}", key, list, "next_cursor", next);
    else {
        json_decref(list);
        json_decref(next);
    }
    return rc;
}

int history_query_list(history *h, const struct history_query_filter *f, json_t **out,
                       struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h,
        "SELECT " QUERY_COLUMNS " FROM queries WHERE (?1 IS NULL OR state = ?1 OR state = ?2) "
        "AND (?3 IS NULL OR config_id = ?3) AND (?4 IS NULL OR runner_id = ?4) AND (?5 IS NULL "
        "OR created_at >= ?5) AND (?6 IS NULL OR created_at <= ?6) AND (?7 IS NULL OR seq < ?7) "
        "ORDER BY seq DESC LIMIT ?8",
        err);
    if (st)
        bind_filter(st, f);
    int rc = page_locked(h, st, f->limit, summary_json, "queries", "listing queries", out, err);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_query_get(history *h, const char *id, json_t **out, struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h, "SELECT " QUERY_COLUMNS ", plan, task_config_ids, stages FROM queries WHERE id = ?1",
        err);
    int rc = st ? FR_ENOTFOUND : FR_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            *out = summary_json(st);
            json_object_set_new(*out, "plan", json_or_null(st, 14));
            json_object_set_new(*out, "task_config_ids", json_or_null(st, 15));
            json_object_set_new(*out, "stages", json_or_null(st, 16));
            rc = FR_OK;
        } else if (s != SQLITE_DONE) {
            rc = history__fail(h, "reading a query", err);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&h->lock);
    if (rc == FR_ENOTFOUND)
        fr_error_setk(err, FR_ENOTFOUND, "query-not-found", "no query '%s'", id);
    return rc;
}

#define RUNNER_SQL                                                                                 \
    "SELECT seq, id, kind, config_id, frozen_at, frozen_by, reset_at, reset_by, ended_at, "        \
    "(SELECT COUNT(*) FROM queries WHERE queries.runner_id = runners.id) FROM runners "

static json_t *runner_json(sqlite3_stmt *st)
{
    bool reset = sqlite3_column_type(st, 6) != SQLITE_NULL;
    bool ended = sqlite3_column_type(st, 8) != SQLITE_NULL;
    json_t *j = json_object();
    json_object_set_new(j, "id", text_or_null(st, 1));
    json_object_set_new(j, "kind", text_or_null(st, 2));
    json_object_set_new(j, "config_id", text_or_null(st, 3));
    json_object_set_new(j, "frozen_at", time_or_null(st, 4));
    json_object_set_new(j, "frozen_by", text_or_null(st, 5));
    json_object_set_new(j, "reset_at", time_or_null(st, 6));
    json_object_set_new(j, "reset_by", text_or_null(st, 7));
    json_object_set_new(j, "ended_at", time_or_null(st, 8));
    json_object_set_new(j, "state", json_string(reset ? "reset" : ended ? "ended" : "active"));
    json_object_set_new(j, "queries", json_integer(sqlite3_column_int64(st, 9)));
    return j;
}

int history_runner_list(history *h, int limit, int64_t after_seq, json_t **out,
                        struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h, RUNNER_SQL "WHERE (?1 IS NULL OR seq < ?1) ORDER BY seq DESC LIMIT ?2", err);
    if (st) {
        history__bind_opt(st, 1, after_seq > 0 ? after_seq : -1);
        sqlite3_bind_int(st, 2, limit + 1); /* one more: is there a next page */
    }
    int rc = page_locked(h, st, limit, runner_json, "runners", "listing runners", out, err);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_runner_get(history *h, const char *id, json_t **out, struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(h, RUNNER_SQL "WHERE id = ?1", err);
    int rc = st ? FR_ENOTFOUND : FR_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            *out = runner_json(st);
            rc = FR_OK;
        } else if (s != SQLITE_DONE) {
            rc = history__fail(h, "reading a runner", err);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&h->lock);
    if (rc == FR_ENOTFOUND)
        fr_error_setk(err, FR_ENOTFOUND, "runner-not-found", "no runner '%s' in the history", id);
    return rc;
}

int history_config_get(history *h, const char *id, char **bytes, size_t *len, struct fr_error *err)
{
    *bytes = NULL;
    *len = 0;
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(h, "SELECT bytes FROM configs WHERE id = ?1", err);
    int rc = st ? FR_ENOTFOUND : FR_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            size_t n = (size_t)sqlite3_column_bytes(st, 0);
            const void *b = sqlite3_column_blob(st, 0);
            *bytes = fr_xmalloc(n + 1);
            if (n)
                memcpy(*bytes, b, n);
            (*bytes)[n] = '\0';
            *len = n;
            rc = FR_OK;
        } else if (s != SQLITE_DONE) {
            rc = history__fail(h, "reading a config", err);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&h->lock);
    if (rc == FR_ENOTFOUND)
        fr_error_setk(err, FR_ENOTFOUND, "config-not-found",
                      "no config %s in the history (never frozen here, or pruned)", id);
    return rc;
}
